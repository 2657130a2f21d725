//! ADMM on the jump's conic program, with one cached factorisation, warm-started from the
//! previous step's contact percussions, and certified.
//!
//! # The splitting
//!
//! The program of [`crate::solver::friction`] is `min ½xᵀHx − pᵀx s.t. s = Cx − r ∈ K`
//! (K: non-negative rows and 3-D second-order cones, self-dual). With the dual z ∈ K
//! (Hx = p + Cᵀz at the solution) and a diagonal penalty P = diag(ρ), constant within each
//! cone, the iteration (Boyd et al. 2011, §3; as OSQP and Chrono's ADMM solver use it) is
//!
//! ```text
//! x ← (H + CᵀPC)⁻¹ (p + Cᵀ(z + P(s + r)))
//! ŵ ← α(Cx − r) + (1 − α)s                       (over-relaxation, α = 1.6)
//! s ← Π_K(ŵ − P⁻¹z),   z ← P(s − (ŵ − P⁻¹z))
//! ```
//!
//! By Moreau's decomposition z = P Π_K(P⁻¹z − ŵ) ∈ K and zᵀs = 0 after every iteration: only
//! the primal residual Cx − r − s and the stationarity Hx − p − Cᵀz remain, and both go to
//! zero. H + CᵀPC has the block pattern of the contact graph, so it is factorised once (by
//! 6 × 6 blocks on the bodies' AMD order, [`crate::solver::block_cholesky`] through
//! [`crate::solver::warm`]) and each iteration costs two block-triangular solves and two
//! products with C.
//!
//! # Scaling and warm start
//!
//! ρ of a cone is σ times the effective mass of its normal row (1 / Σ_j C_kj²/H_jj), so
//! CᵀPC is σ times H's scale whatever the masses, sizes and lever arms; σ starts at 3 and is
//! adapted (with a new factorisation) when the square root of the ratio of the primal and
//! stationarity residuals leaves [½, 2], as OSQP does. (On 150 steps of the default site's
//! resting deposit, where the primal residual lags, the solves took 15.7-16.8 s against
//! 25.1 s with σ = 1 and a factor 5, both without Anderson acceleration.) At the same
//! cadence, while the certificate misses the tolerance, the cones that hold it back
//! ([`lagging_cones`]) get a penalty 4 times stiffer, whether σ moved or not (the packed
//! heap of 1000 blocks: 7.0–8.6 s a step against 8.8–10.2 s without, session 23; boosting
//! them only when σ stays put, the thesis heap N = 1000, μ = 0.5 took 21.0–21.5 s against
//! 18.3–18.5 s, and the packed heap's first step 0.86 s against 0.57 s, session 29). Below a
//! tolerance of 1e-4 only, Anderson acceleration ([`Anderson`]) extrapolates the variable
//! v = ŵ − P⁻¹z that s and z are made from, from the 10th iteration of a solve on islands
//! with friction and 30 rows or more, and the 100th on the others; while it runs, s and z
//! themselves are made only where they are read (at the checks and in the stationarity
//! tail). The iteration starts from the previous step's percussions matched by contact
//! identity (z), with s = Π_K(Cx₀ − r) at x₀ = (2M)⁻¹(p + Cᵀz): when they are the answer,
//! the first iteration returns it.
//!
//! # Certificate
//!
//! After 1, 2, 4, 8 iterations and every 10 after, (x, z) is checked by
//! [`crate::solver::certificate::certify`] on the program's own data; the solve stops when
//! it holds to the tolerance. Below a tolerance of 1e-4, once a check after the 8th
//! iteration finds that only stationarity misses (the tail of most large solves at 1e-6,
//! about 20 iterations), the iterations up to the next check are tested too, when the
//! stationarity predicted from the x-update's residual (`x_update_residual`) is within
//! half the tolerance and the primal residual holds; the stop is still the certificate's.

use crate::solver::assembly::{JumpBody, JumpContact, PARALLEL_MIN_ROWS};
use crate::solver::certificate::{Certificate, Certifier, for_each_cone};
use crate::solver::friction::ConeQp;
use crate::solver::nlgs::{ContactImpulse, ContactSolution};
use crate::solver::pair::Pair;
use crate::solver::warm::{DENSE_FACTOR_MAX, Factor};
use crate::solver::wide::wide_fn;
use clarabel::solver::SupportedConeT;
use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use std::collections::VecDeque;
use std::sync::Mutex;

/// Over-relaxation α.
const ALPHA: f64 = 1.6;
/// σ at the start of a solve, by default (`[run] solver.admm_sigma`).
pub const SIGMA_START: f64 = 3.0;
/// Bounds of σ (and of `admm_sigma`).
pub const SIGMA_RANGE: (f64, f64) = (1e-6, 1e6);
/// Bound on √(primal / stationarity residual) beyond which σ is re-balanced (either way),
/// and iterations between two adaptations.
const ADAPT_RATIO: f64 = 2.0;
const ADAPT_EVERY: u32 = 20;
/// [`ADAPT_EVERY`] on islands whose factor goes to faer's scalar Cholesky (large dense
/// fronts, [`Factor::is_scalar`]), where a factorisation costs about as much as 15-20
/// iterations (the packed heap of 1000 blocks: about 0.1 s against 5-7 ms an iteration;
/// 6-8 on the block factors of the thesis heaps N = 1000 and 3000, μ = 0.5). Measured in
/// session 61 on the packed heap's first three steps: 14 factorisations and 518 iterations
/// against 24 and 534 with 20; 30 and 60 did worse (18 and 529, 13 and 664).
const ADAPT_EVERY_SCALAR: u32 = 40;
/// While the certificate does not hold, at each adaptation the cones whose
/// own primal distance or complementarity exceeds this share of the tolerance (in the
/// certificate's scales) get their penalty multiplied by [`LOCAL_BOOST`], up to
/// [`LOCAL_BOOST_MAX`] over σ's. Measured in session 23 (docs/benchmarks.md): 0.1 and
/// 0.25 alike, 0.5 slower; a factor 10 slower than 4; adapting every 10 iterations instead
/// of 20 made the packed heap 5 times slower.
const LOCAL_SHARE: f64 = 0.25;
const LOCAL_BOOST: f64 = 4.0;
const LOCAL_BOOST_MAX: f64 = 1024.0;
/// In the stationarity tail, the certificate is computed between the checks when the
/// predicted stationarity is within this share of the tolerance. Measured in session 54
/// (docs/benchmarks.md; one thread, 1e-6): the heap N = 1000, μ = 0.5 in 11.63 and
/// 11.96 s against 12.29 and 12.28 s for the checks alone; with a share of 1, 11.94 and
/// 12.32 s; with 0.3 and 0.15, fallback steps to Clarabel.
const TAIL_MARGIN: f64 = 0.5;
/// Iterates remembered by the Anderson acceleration.
const ANDERSON_MEMORY: usize = 5;
/// Anderson acceleration is used only for tolerances below this. At 1e-3 it did not pay
/// (session 16, on (s, z): the default site took 165 s with it against 114 s without; the
/// heap at 1e-3 and 1e-4 the same either way).
const ANDERSON_BELOW: f64 = 1e-4;
/// ... from this iteration of a solve on, on islands with friction and at least
/// [`ANDERSON_EARLY_ROWS`] rows. The same programs solved both ways (each of the thesis
/// heap N = 1000, μ = 0.5 at 1e-6 solved again from the same start, session 60,
/// docs/benchmarks.md): from the 10th instead of the 100th, the islands of 3000 rows or more
/// took 13 % fewer iterations and 7 % less time, those of 30–3000 rows 16–26 % fewer; from
/// the 40th 9 % and from the first 12 % fewer on the big ones.
const ANDERSON_AFTER: u32 = 10;
/// Islands under this many rows start the acceleration late: from the 10th iteration, 2 of
/// the heap's 25,683 solves under 30 rows ran out of iterations and the rest took as long.
const ANDERSON_EARLY_ROWS: usize = 30;
/// ... and the others (no friction, or few rows) from this one. Without friction, from the
/// 10th, the frictionless heap N = 1000's big islands took 2 % more iterations than with
/// session 59's acceleration from the 100th (25,801 against 25,280), and from the 100th as
/// many (25,270; session 60). Until session 59 every island started it at the
/// 100th (session 21: from the start, on (s, z), the heap took 43.2 s against 37.4 s; the
/// packed heap of 1000 blocks needs it, 9.9 s a step against 24–26 s without it).
const ANDERSON_AFTER_LATE: u32 = 100;
/// A step whose fixed-point residual exceeds this multiple of the least one since the last
/// reset drops the history (a plain step). 10 until session 59; 3 and 1.5 took 0.6 % and
/// 0.7 % fewer iterations on the heap's big islands than 10 (session 60).
const ANDERSON_SAFEGUARD: f64 = 3.0;

/// Lanes of the acceleration's dot products: each sum is kept in this many partial sums
/// (row j in lane j mod LANES), added at the end as ((0 + 1) + (2 + 3)), so that the loops
/// vectorise and the AVX2 copy and the baseline copy give the same bits.
const LANES: usize = 4;

/// Partial sums of [`aa_pass_kernel`]: ‖f‖², a·a, a·f, then Δfᵢ·a and Δfᵢ·f of the older
/// differences.
type LaneSums = [[f64; LANES]; 3 + 2 * ANDERSON_MEMORY];

fn reduce(l: &[f64; LANES]) -> f64 {
    (l[0] + l[1]) + (l[2] + l[3])
}

/// Type-II Anderson acceleration (Walker & Ni 2011) of ADMM's Douglas–Rachford variable
/// v = ŵ − P⁻¹z (s = Π_K(v) and z = P(s − v) after each iteration), in the coordinates
/// √ρ v: the next input is the combination of the last images g whose residuals'
/// combination is least, from the differences of the last `ANDERSON_MEMORY` + 1 iterates.
/// Any v is a point of the iteration, so every input it proposes gives an (s, z) with
/// s ∈ K, z ∈ K and zᵀs = 0; until session 59 it extrapolated the pair (s, z), twice the
/// rows, whose combinations are not (session 60, docs/benchmarks.md).
///
/// A step is two passes over the rows: the new image, residual and differences with the
/// dot products of the least-squares problem ([`aa_pass_kernel`]), then the combination
/// ([`aa_combine_kernel`]).
struct Anderson {
    /// Whether `f`, `g` hold the last step's residual and image.
    has_last: bool,
    f: Vec<f64>,
    g: Vec<f64>,
    /// Differences Δf, Δg of consecutive iterates, oldest first.
    df: VecDeque<Vec<f64>>,
    dg: VecDeque<Vec<f64>>,
    /// Gram matrix of the Δf's.
    gram: [[f64; ANDERSON_MEMORY]; ANDERSON_MEMORY],
    /// The least residual since the last reset (the safeguard's reference).
    best: f64,
    /// Buffers of dropped differences, for reuse.
    spare: Vec<Vec<f64>>,
}

impl Anderson {
    fn new(m: usize) -> Self {
        Anderson {
            has_last: false,
            f: vec![0.0; m],
            g: vec![0.0; m],
            df: VecDeque::new(),
            dg: VecDeque::new(),
            gram: [[0.0; ANDERSON_MEMORY]; ANDERSON_MEMORY],
            best: f64::INFINITY,
            spare: Vec::new(),
        }
    }

    /// Forget everything (the coordinates changed with ρ).
    fn clear(&mut self) {
        self.has_last = false;
        self.best = f64::INFINITY;
        self.drop_history();
    }

    /// Two buffers of m rows for new differences, reused where there are some.
    fn buffers(&mut self, m: usize) -> (Vec<f64>, Vec<f64>) {
        let mut new = || self.spare.pop().unwrap_or_else(|| vec![0.0; m]);
        (new(), new())
    }

    fn drop_history(&mut self) {
        self.spare.extend(self.df.drain(..));
        self.spare.extend(self.dg.drain(..));
    }

    /// From v, the map's image (unscaled) of the last input `u` (scaled): the next input,
    /// written into `u`, and its unscaled v into `s` (to be projected) and `w`.
    fn step(&mut self, v: &[f64], sqrt_rho: &[f64], u: &mut [f64], s: &mut [f64], w: &mut [f64]) {
        let m = v.len();
        if !self.has_last {
            // The image and residual only (the differences with the stale f, g are dropped).
            let (mut a, mut b) = self.buffers(m);
            let mut sums: LaneSums = [[0.0; LANES]; 3 + 2 * ANDERSON_MEMORY];
            let (f, g) = (&mut self.f, &mut self.g);
            aa_pass_wide(Pass { v, sr: sqrt_rho, u, f, g, a: &mut a, b: &mut b }, &[], &mut sums);
            self.spare.extend([a, b]);
            self.best = self.best.min(reduce(&sums[0]).sqrt());
            aa_combine_wide(&[], &[], &self.g, sqrt_rho, u, s, w);
            self.has_last = true;
            return;
        }
        let (mut a, mut b) = if self.df.len() == ANDERSON_MEMORY {
            for i in 0..ANDERSON_MEMORY - 1 {
                for j in 0..ANDERSON_MEMORY - 1 {
                    self.gram[i][j] = self.gram[i + 1][j + 1];
                }
            }
            (self.df.pop_front().expect("a full history"), self.dg.pop_front().expect("Δg"))
        } else {
            self.buffers(m)
        };
        let older: Vec<&[f64]> = self.df.iter().map(|d| &d[..]).collect();
        let k = older.len();
        let mut sums: LaneSums = [[0.0; LANES]; 3 + 2 * ANDERSON_MEMORY];
        let (f, g) = (&mut self.f, &mut self.g);
        aa_pass_wide(Pass { v, sr: sqrt_rho, u, f, g, a: &mut a, b: &mut b }, &older, &mut sums);
        let fnorm = reduce(&sums[0]).sqrt();
        if fnorm > ANDERSON_SAFEGUARD * self.best {
            // A plain step, from this image, without the history.
            self.drop_history();
            self.spare.extend([a, b]);
            self.best = self.best.min(fnorm);
            aa_combine_wide(&[], &[], &self.g, sqrt_rho, u, s, w);
            return;
        }
        self.best = self.best.min(fnorm);
        self.df.push_back(a);
        self.dg.push_back(b);
        let n = k + 1;
        for i in 0..k {
            let d = reduce(&sums[3 + i]);
            self.gram[i][k] = d;
            self.gram[k][i] = d;
        }
        self.gram[k][k] = reduce(&sums[1]);
        let mut rhs = [0.0; ANDERSON_MEMORY];
        for (i, r) in rhs.iter_mut().enumerate().take(k) {
            *r = reduce(&sums[3 + ANDERSON_MEMORY + i]);
        }
        rhs[k] = reduce(&sums[2]);
        let mut mat = DMatrix::<f64>::from_fn(n, n, |i, j| self.gram[i][j]);
        let reg = 1e-10 * (0..n).map(|i| mat[(i, i)]).fold(0.0, f64::max) + f64::MIN_POSITIVE;
        for i in 0..n {
            mat[(i, i)] += reg;
        }
        let rhs = DVector::<f64>::from_fn(n, |i, _| rhs[i]);
        let gamma =
            mat.cholesky().map(|ch| ch.solve(&rhs)).filter(|g| g.iter().all(|v| v.is_finite()));
        match gamma {
            Some(gamma) => {
                let dg: Vec<&[f64]> = self.dg.iter().map(|d| &d[..]).collect();
                aa_combine_wide(&dg, gamma.as_slice(), &self.g, sqrt_rho, u, s, w);
            }
            None => aa_combine_wide(&[], &[], &self.g, sqrt_rho, u, s, w),
        }
    }
}

/// The rows of one pass of the acceleration: the image v (unscaled), √ρ, the last input u,
/// the last f and g (overwritten with the new ones), and the new differences a = Δf, b = Δg.
struct Pass<'a> {
    v: &'a [f64],
    sr: &'a [f64],
    u: &'a [f64],
    f: &'a mut [f64],
    g: &'a mut [f64],
    a: &'a mut [f64],
    b: &'a mut [f64],
}

wide_fn! {
    fn aa_pass_wide(p: Pass<'_>, older: &[&[f64]], sums: &mut LaneSums) = aa_pass_kernel;
}

/// One pass: the new g = √ρ v and f = g − u (over the last ones in `f`, `g`), the
/// differences a = Δf, b = Δg, and the partial sums of [`LaneSums`].
#[inline(always)]
fn aa_pass_kernel(p: Pass<'_>, older: &[&[f64]], sums: &mut LaneSums) {
    // At most ANDERSON_MEMORY − 1 older differences: the oldest leaves before a new one.
    debug_assert!(older.len() < ANDERSON_MEMORY);
    match older.len() {
        0 => aa_pass_k::<0>(p, older, sums),
        1 => aa_pass_k::<1>(p, older, sums),
        2 => aa_pass_k::<2>(p, older, sums),
        3 => aa_pass_k::<3>(p, older, sums),
        _ => aa_pass_k::<4>(p, older, sums),
    }
}

#[inline(always)]
fn aa_pass_k<const K: usize>(p: Pass<'_>, older: &[&[f64]], sums: &mut LaneSums) {
    let Pass { v, sr, u, f, g, a, b } = p;
    type Lane = [f64; LANES];
    let n = v.len();
    let full = n / LANES * LANES;
    let older: [&[f64]; K] = std::array::from_fn(|i| &older[i][..n]);
    let (mut ff, mut dd, mut df) = (sums[0], sums[1], sums[2]);
    let mut od: [Lane; K] = std::array::from_fn(|i| sums[3 + i]);
    let mut of: [Lane; K] = std::array::from_fn(|i| sums[3 + ANDERSON_MEMORY + i]);
    let lane = |x: &[f64], c: usize| -> Lane { x[c..c + LANES].try_into().expect("a lane") };
    let mut c = 0;
    while c < full {
        let (vc, sc, uc) = (lane(v, c), lane(sr, c), lane(u, c));
        let (f0, g0) = (lane(f, c), lane(g, c));
        let mut d: Lane = [0.0; LANES];
        let mut fl: Lane = [0.0; LANES];
        let mut gl: Lane = [0.0; LANES];
        let mut bl: Lane = [0.0; LANES];
        for l in 0..LANES {
            gl[l] = sc[l] * vc[l];
            fl[l] = gl[l] - uc[l];
            d[l] = fl[l] - f0[l];
            bl[l] = gl[l] - g0[l];
        }
        a[c..c + LANES].copy_from_slice(&d);
        b[c..c + LANES].copy_from_slice(&bl);
        f[c..c + LANES].copy_from_slice(&fl);
        g[c..c + LANES].copy_from_slice(&gl);
        for l in 0..LANES {
            ff[l] += fl[l] * fl[l];
            dd[l] += d[l] * d[l];
            df[l] += d[l] * fl[l];
        }
        for i in 0..K {
            let o = lane(older[i], c);
            for l in 0..LANES {
                od[i][l] += o[l] * d[l];
                of[i][l] += o[l] * fl[l];
            }
        }
        c += LANES;
    }
    // The last rows, each in its own lane.
    for j in full..n {
        let l = j - full;
        let gn = sr[j] * v[j];
        let fnw = gn - u[j];
        let d = fnw - f[j];
        a[j] = d;
        b[j] = gn - g[j];
        f[j] = fnw;
        g[j] = gn;
        ff[l] += fnw * fnw;
        dd[l] += d * d;
        df[l] += d * fnw;
        for i in 0..K {
            od[i][l] += older[i][j] * d;
            of[i][l] += older[i][j] * fnw;
        }
    }
    sums[0] = ff;
    sums[1] = dd;
    sums[2] = df;
    for i in 0..K {
        sums[3 + i] = od[i];
        sums[3 + ANDERSON_MEMORY + i] = of[i];
    }
}

wide_fn! {
    #[allow(clippy::too_many_arguments)]
    fn aa_combine_wide(
        dg: &[&[f64]],
        gamma: &[f64],
        g: &[f64],
        sr: &[f64],
        out: &mut [f64],
        s: &mut [f64],
        w: &mut [f64],
    ) = aa_combine_kernel;
}

/// out = g − Σᵢ γᵢ Δgᵢ, subtracted in order, and its unscaled v = out / √ρ into `w` and
/// `s` (to be projected).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn aa_combine_kernel(
    dg: &[&[f64]],
    gamma: &[f64],
    g: &[f64],
    sr: &[f64],
    out: &mut [f64],
    s: &mut [f64],
    w: &mut [f64],
) {
    match dg.len() {
        0 => aa_combine_k::<0>(dg, gamma, g, sr, out, s, w),
        1 => aa_combine_k::<1>(dg, gamma, g, sr, out, s, w),
        2 => aa_combine_k::<2>(dg, gamma, g, sr, out, s, w),
        3 => aa_combine_k::<3>(dg, gamma, g, sr, out, s, w),
        4 => aa_combine_k::<4>(dg, gamma, g, sr, out, s, w),
        _ => aa_combine_k::<5>(dg, gamma, g, sr, out, s, w),
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn aa_combine_k<const K: usize>(
    dg: &[&[f64]],
    gamma: &[f64],
    g: &[f64],
    sr: &[f64],
    out: &mut [f64],
    s: &mut [f64],
    w: &mut [f64],
) {
    let n = g.len();
    let (sr, out, s, w) = (&sr[..n], &mut out[..n], &mut s[..n], &mut w[..n]);
    let dg: [&[f64]; K] = std::array::from_fn(|i| &dg[i][..n]);
    let gamma: [f64; K] = std::array::from_fn(|i| gamma[i]);
    for j in 0..n {
        let mut o = g[j];
        for i in 0..K {
            o -= gamma[i] * dg[i][j];
        }
        out[j] = o;
        let x = o / sr[j];
        w[j] = x;
        s[j] = x;
    }
}

/// The outcome of a solve.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmmOutcome {
    pub solution: ContactSolution,
    /// Iterations done.
    pub iterations: u32,
    /// Numeric factorisations of H + CᵀPC.
    pub factorisations: u32,
}

/// The first cone that starts in the second half of `m` rows, and its first row (the
/// cones' count and `m` when there is none): where [`solve`] splits the rows between two
/// threads.
fn half_of_the_cones(cones: &[SupportedConeT<f64>], m: usize) -> (usize, usize) {
    let mut row = 0;
    for (i, cone) in cones.iter().enumerate() {
        if row >= m / 2 {
            return (i, row);
        }
        row += match *cone {
            SupportedConeT::NonnegativeConeT(n) | SupportedConeT::SecondOrderConeT(n) => n,
            _ => panic!("admm: only non-negative and second-order cones occur in a jump"),
        };
    }
    (cones.len(), m)
}

/// The s- and z-updates of the rows `r0..r0 + cx.len()`, those of `cones`, from their C x
/// and the previous s and z (`acc`: Anderson's whole vectors, else the buffers' own):
/// v = ŵ − P⁻¹z with ŵ = α(Cx − r) + (1 − α)s, then, if `project_too`, s = Π_K(v) and
/// z = P(s − v).
#[allow(clippy::too_many_arguments)]
fn update_s_z(
    r0: usize,
    cones: &[SupportedConeT<f64>],
    r: &[f64],
    rho: &[f64],
    acc: Option<(&[f64], &[f64])>,
    cx: &[f64],
    v: &mut [f64],
    s: &mut [f64],
    z: &mut [f64],
    project_too: bool,
) {
    let rows = r0..r0 + cx.len();
    match acc {
        Some((sa, za)) => relaxed_wide(
            cx,
            &r[rows.clone()],
            &rho[rows.clone()],
            &sa[rows.clone()],
            &za[rows.clone()],
            v,
        ),
        None => relaxed_wide(cx, &r[rows.clone()], &rho[rows.clone()], s, z, v),
    }
    if !project_too {
        return;
    }
    s.copy_from_slice(v);
    project(cones, s);
    multiplier_wide(&rho[rows], s, v, z);
}

wide_fn! {
    /// v = ŵ − P⁻¹z ([`relaxed_kernel`]).
    fn relaxed_wide(cx: &[f64], r: &[f64], rho: &[f64], s: &[f64], z: &[f64], v: &mut [f64]) =
        relaxed_kernel;
}

/// v = ŵ − P⁻¹z with ŵ = α(Cx − r) + (1 − α)s, row by row.
#[inline(always)]
fn relaxed_kernel(cx: &[f64], r: &[f64], rho: &[f64], s: &[f64], z: &[f64], v: &mut [f64]) {
    let n = v.len();
    let (cx, r, rho, s, z) = (&cx[..n], &r[..n], &rho[..n], &s[..n], &z[..n]);
    for k in 0..n {
        let w = ALPHA * (cx[k] - r[k]) + (1.0 - ALPHA) * s[k];
        v[k] = w - z[k] / rho[k];
    }
}

wide_fn! {
    /// z = P(s − v) ([`multiplier_kernel`]).
    fn multiplier_wide(rho: &[f64], s: &[f64], v: &[f64], z: &mut [f64]) = multiplier_kernel;
}

/// z = P(s − v), row by row.
#[inline(always)]
fn multiplier_kernel(rho: &[f64], s: &[f64], v: &[f64], z: &mut [f64]) {
    let n = z.len();
    let (rho, s, v) = (&rho[..n], &s[..n], &v[..n]);
    for k in 0..n {
        z[k] = rho[k] * (s[k] - v[k]);
    }
}

/// Project `v` onto the cones, in place. Runs of second-order cones of 3 rows (frictional
/// contacts) go through [`project_soc3_wide`].
fn project(cones: &[SupportedConeT<f64>], v: &mut [f64]) {
    let mut row = 0;
    let mut c = 0;
    while c < cones.len() {
        match cones[c] {
            SupportedConeT::NonnegativeConeT(n) => {
                for a in &mut v[row..row + n] {
                    *a = a.max(0.0);
                }
                row += n;
                c += 1;
            }
            SupportedConeT::SecondOrderConeT(3) => {
                let run = cones[c..]
                    .iter()
                    .take_while(|k| matches!(k, SupportedConeT::SecondOrderConeT(3)))
                    .count();
                project_soc3_wide(&mut v[row..row + 3 * run]);
                row += 3 * run;
                c += run;
            }
            SupportedConeT::SecondOrderConeT(n) => {
                project_soc(&mut v[row..row + n]);
                row += n;
                c += 1;
            }
            _ => panic!("admm: only non-negative and second-order cones occur in a jump"),
        }
    }
}

/// Project `c` onto the second-order cone {c₀ ≥ ‖c₁..‖}, in place.
#[inline(always)]
fn project_soc(c: &mut [f64]) {
    let t = c[1..].iter().map(|a| a * a).sum::<f64>().sqrt();
    if c[0] >= t {
    } else if c[0] <= -t {
        c.iter_mut().for_each(|a| *a = 0.0);
    } else {
        let h = 0.5 * (c[0] + t);
        let f = h / t;
        c[0] = h;
        c[1..].iter_mut().for_each(|a| *a *= f);
    }
}

wide_fn! {
    /// Project consecutive 3-row second-order cones ([`project_soc3_kernel`]).
    fn project_soc3_wide(v: &mut [f64]) = project_soc3_kernel;
}

/// Project each 3 entries of `v` onto the second-order cone, as [`project_soc`] does, bit
/// for bit, without branches (the three cases computed and one chosen), so that the loop
/// runs over several cones per instruction.
#[inline(always)]
fn project_soc3_kernel(v: &mut [f64]) {
    for c in v.chunks_exact_mut(3) {
        let (c0, c1, c2) = (c[0], c[1], c[2]);
        let t = [c1, c2].iter().map(|a| a * a).sum::<f64>().sqrt();
        let h = 0.5 * (c0 + t);
        let f = h / t;
        let inside = c0 >= t;
        let polar = !inside && c0 <= -t;
        let pick = |same: f64, boundary: f64| {
            if inside {
                same
            } else if polar {
                0.0
            } else {
                boundary
            }
        };
        c[0] = pick(c0, h);
        c[1] = pick(c1, c1 * f);
        c[2] = pick(c2, c2 * f);
    }
}

/// The cones (first row, rows) that hold the certificate back: those whose distance of
/// s_k = C_k x − r_k to the cone, or whose |z_kᵀ s_k|, exceeds [`LOCAL_SHARE`] of the
/// tolerance in `certificate`'s scales (its primal residual is the largest distance over V,
/// its complementarity the largest |z_kᵀ s_k| over Z V). `cx` is C x.
fn lagging_cones(
    cones: &[SupportedConeT<f64>],
    cx: &[f64],
    r: &[f64],
    z: &[f64],
    certificate: &Certificate,
    tolerance: f64,
) -> Vec<(usize, usize)> {
    let s: Vec<f64> = cx.iter().zip(r).map(|(a, b)| a - b).collect();
    let mut cone_residuals = Vec::with_capacity(cones.len());
    for_each_cone(cones, &s, z, |c| cone_residuals.push(c));
    let worst_d = cone_residuals.iter().fold(0.0f64, |a, c| a.max(c.primal));
    let worst_c = cone_residuals.iter().fold(0.0f64, |a, c| a.max(c.complementarity));
    // The certificate's scales, from its largest residuals: V = worst_d / primal and
    // Z V = worst_c / complementarity.
    let limit = LOCAL_SHARE * tolerance;
    let lags = |value: f64, worst: f64, relative: f64| {
        worst > 0.0 && relative > 0.0 && value / worst * relative > limit
    };
    cone_residuals
        .into_iter()
        .filter(|c| {
            lags(c.primal, worst_d, certificate.primal)
                || lags(c.complementarity, worst_c, certificate.complementarity)
        })
        .map(|c| (c.row, c.rows))
        .collect()
}

/// ‖w‖∞ with w = t − P C x − z, where t = z̃ + P(s̃ + r) is the x-update's right-hand
/// side (before Cᵀ), `cx` = C x of its answer and `z` the z-update's: since
/// (H + CᵀPC) x = Cᵀt + p, the stationarity residual H x − p − Cᵀz is Cᵀw. Its change
/// between iterations predicts the stationarity's at the price of one pass over the rows.
fn x_update_residual(t: &[f64], rho: &[f64], cx: &[f64], z: &[f64]) -> f64 {
    t.iter()
        .zip(rho)
        .zip(cx)
        .zip(z)
        .fold(0.0f64, |a, (((t, r), c), z)| a.max((t - r * c - z).abs()))
}

/// ρ of every row: σ times the effective mass of its cone's first row.
fn penalties(cones: &[SupportedConeT<f64>], inv_mass: &[f64], sigma: f64) -> Vec<f64> {
    let mut rho = Vec::with_capacity(inv_mass.len());
    let mut row = 0;
    for cone in cones {
        match *cone {
            SupportedConeT::NonnegativeConeT(n) => {
                rho.extend(inv_mass[row..row + n].iter().map(|s| sigma / s));
                row += n;
            }
            SupportedConeT::SecondOrderConeT(n) => {
                rho.extend(std::iter::repeat_n(sigma / inv_mass[row], n));
                row += n;
            }
            _ => panic!("admm: only non-negative and second-order cones occur in a jump"),
        }
    }
    rho
}

/// Relative velocity (contact frame N, t₁, t₂) of contact `c` at x.
fn contact_velocity(
    bodies: &[JumpBody],
    c: &JumpContact,
    basis: (Vector3<f64>, Vector3<f64>),
    x: &[f64],
) -> Vector3<f64> {
    let point = |b: usize| {
        let o = 6 * b;
        let v = Vector3::new(x[o], x[o + 1], x[o + 2]);
        let w = Vector3::new(x[o + 3], x[o + 4], x[o + 5]);
        v + w.cross(&(c.point - bodies[b].pos))
    };
    let mut rel = point(c.i);
    if let Some(j) = c.j {
        rel -= point(j);
    }
    Vector3::new(rel.dot(&c.normal), rel.dot(&basis.0), rel.dot(&basis.1))
}

/// How [`solve`] adapts its penalties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Penalties {
    /// σ alone (one scale for every cone), as before session 23.
    Global,
    /// σ, and a stiffer penalty on the cones that hold the certificate back
    /// ([`lagging_cones`]); what the step uses.
    PerCone,
}

/// How [`solve`] runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Relative residual the certificate must meet, 1.
    pub tolerance: f64,
    /// Iterations before the solve gives up (unsolved).
    pub max_iterations: u32,
    /// How the penalties adapt.
    pub penalties: Penalties,
    /// σ at the start (each cone's ρ is σ times the effective mass of its normal row).
    pub sigma: f64,
    /// Below a tolerance of 1e-4 (`ANDERSON_BELOW`), test the certificate between the checks
    /// once only stationarity misses (the module's "Certificate"); false: at the checks
    /// only.
    pub tail_test: bool,
}

impl Settings {
    /// `tolerance` and `max_iterations`, with what the step uses by default: per-cone
    /// penalties from σ = [`SIGMA_START`], the certificate tested in the stationarity tail.
    pub fn new(tolerance: f64, max_iterations: u32) -> Self {
        Settings {
            tolerance,
            max_iterations,
            penalties: Penalties::PerCone,
            sigma: SIGMA_START,
            tail_test: true,
        }
    }
}

/// Solve the conic program `cq` of an island (assembled by
/// [`crate::solver::friction::assemble_cones`] from `bodies`, `contacts`) by ADMM, started
/// from `initial` (one per contact), until the certificate holds to the tolerance or the
/// iterations are done, as `settings` say.
pub fn solve(
    cq: &ConeQp,
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    initial: &[ContactImpulse],
    settings: Settings,
) -> AdmmOutcome {
    let problem = Problem { cq, bodies, contacts, initial, settings };
    let on = |pair: Option<&Pair>| solve_on(&problem, pair);
    if cq.qp.m() >= PARALLEL_MIN_ROWS && cq.qp.row_blocks().is_some() {
        Pair::solve(on)
    } else {
        on(None)
    }
}

/// The arguments of [`solve`].
#[derive(Clone, Copy)]
struct Problem<'a> {
    cq: &'a ConeQp,
    bodies: &'a [JumpBody],
    contacts: &'a [JumpContact],
    initial: &'a [ContactImpulse],
    settings: Settings,
}

/// [`solve`], its iterations' products, projections and triangular solves shared with
/// `pair`'s helper (half the rows, bodies or subtrees each; the same answer, bit for bit).
fn solve_on(problem: &Problem, pair: Option<&Pair>) -> AdmmOutcome {
    let Problem { cq, bodies, contacts, initial, settings } = *problem;
    let Settings { tolerance, max_iterations, penalties: rule, sigma: sigma_start, tail_test } =
        settings;
    let per_cone = rule == Penalties::PerCone;
    let qp = &cq.qp;
    let (n, m) = (qp.n(), qp.m());
    assert_eq!(n, 6 * bodies.len());
    assert_eq!(contacts.len(), cq.normal_rows.len());
    assert_eq!(initial.len(), contacts.len());
    let unsolved = Certificate {
        stationarity: f64::INFINITY,
        primal: f64::INFINITY,
        dual: f64::INFINITY,
        complementarity: f64::INFINITY,
    };
    let mut out = AdmmOutcome {
        solution: ContactSolution {
            x: vec![0.0; n],
            z: vec![0.0; m],
            impulses: vec![ContactImpulse::default(); contacts.len()],
            normal: vec![0.0; contacts.len()],
            friction: vec![Vector3::zeros(); contacts.len()],
            certificate: unsolved,
            solved: false,
        },
        iterations: 0,
        factorisations: 0,
    };
    // The bodies' centres, for the order of a large factor (a packed island's, by nested
    // dissection); small islands are factorised dense.
    let centres: Option<Vec<Vector3<f64>>> =
        (n > DENSE_FACTOR_MAX).then(|| bodies.iter().map(|b| b.pos).collect());
    let Some(mut factor) = Factor::new(qp, DENSE_FACTOR_MAX, pair.is_some(), centres.as_deref())
    else {
        return out;
    };
    let inv_mass = factor.inv_mass().to_vec();
    let adapt_every = if factor.is_scalar() { ADAPT_EVERY_SCALAR } else { ADAPT_EVERY };
    let mut sigma = sigma_start.clamp(SIGMA_RANGE.0, SIGMA_RANGE.1);
    let accelerate = tolerance < ANDERSON_BELOW;
    let mut anderson = false;
    let tail_test = tail_test && tolerance < ANDERSON_BELOW;
    // In the stationarity tail: the last full check's stationarity and ‖w‖∞ then.
    let mut tail: Option<(f64, f64)> = None;
    let mut rho = penalties(&cq.cones, &inv_mass, sigma);
    factor.set_rho(rho.clone());
    let active = vec![true; m];

    // x₀ = (2M)⁻¹(p + Σ_k J_kᵀΛ_k) from the previous percussions Λ (reaction and κ damping),
    // then z₀ = D⁻¹(Λ + K J x₀) (the reaction part), projected onto K, and
    // s₀ = Π_K(Cx₀ − r): when Λ is this step's answer, so is (x₀, z₀, s₀).
    let mut total = qp.p.clone();
    for (c, w) in contacts.iter().zip(initial) {
        let f = c.normal * w.normal + w.tangential;
        let mut push = |b: usize, sign: f64| {
            let o = 6 * b;
            let t = (c.point - bodies[b].pos).cross(&f);
            for a in 0..3 {
                total[o + a] += sign * f[a];
                total[o + 3 + a] += sign * t[a];
            }
        };
        push(c.i, 1.0);
        if let Some(j) = c.j {
            push(j, -1.0);
        }
    }
    let mut x = vec![0.0; n];
    for (b, body) in bodies.iter().enumerate() {
        let o = 6 * b;
        for a in 0..3 {
            x[o + a] = total[o + a] / (2.0 * body.mass);
        }
        let inv = (body.inertia * 2.0).try_inverse().unwrap_or_else(Matrix3::zeros);
        let ang = inv * Vector3::new(total[o + 3], total[o + 4], total[o + 5]);
        x[o + 3..o + 6].copy_from_slice(ang.as_slice());
    }
    let mut z = vec![0.0; m];
    for (k, ((c, &row), w)) in contacts.iter().zip(&cq.normal_rows).zip(initial).enumerate() {
        let basis = cq.tangents[k];
        let y = contact_velocity(bodies, c, basis, &x);
        z[row] = w.normal + c.kappa_n * y.x;
        if cq.mu[k] > 0.0 {
            z[row + 1] = (w.tangential.dot(&basis.0) + c.kappa_t * y.y) / cq.mu[k];
            z[row + 2] = (w.tangential.dot(&basis.1) + c.kappa_t * y.z) / cq.mu[k];
        }
    }
    project(&cq.cones, &mut z);
    let mut s: Vec<f64> = qp.c_mul(&x).iter().zip(&qp.r).map(|(a, b)| a - b).collect();
    project(&cq.cones, &mut s);

    // Anderson acceleration's input u = √ρ v, and the (s, z) it gives.
    let mut aa = Anderson::new(if accelerate { m } else { 0 });
    let frictional = cq.cones.iter().any(|c| matches!(c, SupportedConeT::SecondOrderConeT(_)));
    let accelerate_after =
        if frictional && m >= ANDERSON_EARLY_ROWS { ANDERSON_AFTER } else { ANDERSON_AFTER_LATE };
    let mut s_acc = s.clone();
    let mut z_acc = z.clone();
    let mut v_acc = vec![0.0; if accelerate { m } else { 0 }];
    let encode = |s: &[f64], z: &[f64], rho: &[f64], sqrt_rho: &[f64], u: &mut Vec<f64>| {
        u.clear();
        u.extend((0..m).map(|k| sqrt_rho[k] * (s[k] - z[k] / rho[k])));
    };
    let mut sqrt_rho: Vec<f64> = rho.iter().map(|r| r.sqrt()).collect();
    let mut u = Vec::new();
    let mut certificate = unsolved;
    let mut next_check = 1;
    let mut last_adapt = 0;
    let mut rhs_z = vec![0.0; m];
    let mut v = vec![0.0; m];
    // Buffers reused by every iteration: Cᵀ(...) + p and its solve, and C x.
    let mut rhs = vec![0.0; n];
    let mut cx = vec![0.0; m];
    let mut it = 0;
    let mut factorisations = 0u32;
    let mut failed = false;
    // Per-row factor on σ's penalty, raised on the cones that lag.
    let mut boost = vec![1.0f64; m];
    let certifier = Certifier::new(qp, &cq.cones);
    // Two threads: the helper and C by rows, and where the rows and bodies are halved.
    let two = pair.zip(qp.row_blocks());
    let (split_cone, split_row) = half_of_the_cones(&cq.cones, m);
    let split_body = bodies.len() / 2;
    // Each half of Cᵀz reads only the rows on its bodies.
    let half_rows = two.map(|(_, rows)| {
        [rows.rows_of_bodies(0, split_body), rows.rows_of_bodies(split_body, bodies.len())]
    });
    while it < max_iterations {
        // x-update.
        if accelerate && !anderson && it >= accelerate_after {
            // Switch the acceleration on, from the current iterate.
            anderson = true;
            s_acc.copy_from_slice(&s);
            z_acc.copy_from_slice(&z);
            encode(&s, &z, &rho, &sqrt_rho, &mut u);
        }
        let (zi, si) = if anderson { (&z_acc, &s_acc) } else { (&z, &s) };
        match two {
            Some((pair, rows)) => {
                // By rows, then by bodies (half of each per thread).
                let (a, b) = rhs_z.split_at_mut(split_row);
                let parts = [Mutex::new(a), Mutex::new(b)];
                pair.run(&|h| {
                    let mut t = parts[h].lock().expect("a half's buffer");
                    let r0 = if h == 0 { 0 } else { split_row };
                    for (k, tk) in t.iter_mut().enumerate() {
                        let g = r0 + k;
                        *tk = zi[g] + rho[g] * (si[g] + qp.r[g]);
                    }
                });
                let (a, b) = rhs.split_at_mut(6 * split_body);
                let parts = [Mutex::new(a), Mutex::new(b)];
                let rhs_z = &rhs_z;
                pair.run(&|h| {
                    let mut y = parts[h].lock().expect("a half's buffer");
                    let first = if h == 0 { 0 } else { split_body };
                    let mine = &half_rows.as_ref().expect("row lists with a pair")[h];
                    rows.mul_transpose_rows(mine, rhs_z, first, &mut y);
                    for (a, p) in y.iter_mut().zip(&qp.p[6 * first..]) {
                        *a += p;
                    }
                });
            }
            None => {
                for ((t, zk), ((rk, sk), pk)) in
                    rhs_z.iter_mut().zip(zi).zip(rho.iter().zip(si).zip(&qp.r))
                {
                    *t = zk + rk * (sk + pk);
                }
                qp.ct_mul_into(&rhs_z, &mut rhs);
                for (a, p) in rhs.iter_mut().zip(&qp.p) {
                    *a += p;
                }
            }
        }
        if it == 0 || it == last_adapt {
            factorisations += 1;
        }
        if !factor.solve_with(&active, &mut rhs, two.map(|(pair, _)| pair)) {
            failed = true;
            break;
        }
        std::mem::swap(&mut x, &mut rhs);
        // s- and z-updates.
        let acc = anderson.then_some((&s_acc[..], &z_acc[..]));
        // With the acceleration on v, s and z are made from v only where they are read: at
        // the checks, in the stationarity tail and at the last iteration.
        let project_too =
            !anderson || tail.is_some() || it + 1 == next_check || it + 1 >= max_iterations;
        match two {
            Some((pair, rows)) => {
                let (cx0, cx1) = cx.split_at_mut(split_row);
                let (v0, v1) = v.split_at_mut(split_row);
                let (s0, s1) = s.split_at_mut(split_row);
                let (z0, z1) = z.split_at_mut(split_row);
                let parts = [Mutex::new((cx0, v0, s0, z0)), Mutex::new((cx1, v1, s1, z1))];
                let x = &x;
                pair.run(&|h| {
                    let mut part = parts[h].lock().expect("a half's buffers");
                    let (cx, v, s, z) = &mut *part;
                    let (r0, cones) = if h == 0 {
                        (0, &cq.cones[..split_cone])
                    } else {
                        (split_row, &cq.cones[split_cone..])
                    };
                    rows.mul_rows(r0, x, cx);
                    update_s_z(r0, cones, &qp.r, &rho, acc, cx, v, s, z, project_too);
                });
            }
            None => {
                qp.c_mul_into(&x, &mut cx);
                update_s_z(
                    0,
                    &cq.cones,
                    &qp.r,
                    &rho,
                    acc,
                    &cx,
                    &mut v,
                    &mut s,
                    &mut z,
                    project_too,
                );
            }
        }
        // Anderson acceleration of v → v⁺ (v is in `v`): the next input's s and z.
        if anderson {
            aa.step(&v, &sqrt_rho, &mut u, &mut s_acc, &mut v_acc);
            project(&cq.cones, &mut s_acc);
            multiplier_wide(&rho, &s_acc, &v_acc, &mut z_acc);
        }
        it += 1;
        // The stationarity tail: between the checks, the certificate is computed when the
        // stationarity predicted from w (the last check's, scaled by ‖w‖∞) is within
        // TAIL_MARGIN of the tolerance and the primal residual holds.
        if let Some((stationarity, w_then)) = tail
            && it != next_check
            && it < max_iterations
        {
            let w = x_update_residual(&rhs_z, &rho, &cx, &z);
            if stationarity * w <= TAIL_MARGIN * tolerance * w_then
                && certifier.primal_with(&cx) <= tolerance
            {
                let c = certifier.certify_with(&x, &cx, &z);
                if c.holds(tolerance) {
                    certificate = c;
                    break;
                }
            }
            continue;
        }
        if it == next_check || it == max_iterations {
            next_check = if it < 8 { 2 * it } else { it + 10 };
            // Without an adaptation due, the check only decides whether to stop, and a
            // primal residual over the tolerance decides it without the products of the
            // rest (the certificate is computed in full before it is used or returned).
            let adapt = it >= last_adapt + adapt_every;
            // cx holds C x of this iterate (the s-update's).
            let fails = !adapt && it < max_iterations && {
                let primal = certifier.primal_with(&cx);
                primal > tolerance || primal.is_nan()
            };
            if fails {
                continue;
            }
            certificate = certifier.certify_with(&x, &cx, &z);
            if certificate.holds(tolerance) {
                break;
            }
            // Only stationarity misses, at a check 10 iterations before the next: the tail
            // starts (until an adaptation, below).
            tail = (tail_test
                && it > 8
                && certificate.primal <= tolerance
                && certificate.complementarity <= tolerance
                && certificate.dual <= tolerance)
                .then(|| (certificate.stationarity, x_update_residual(&rhs_z, &rho, &cx, &z)));
            // Balance the residuals: a large primal residual asks for a stiffer penalty,
            // everywhere when the residuals are out of balance, and on the cones that hold
            // the certificate back.
            if adapt {
                let ratio = (certificate.primal.max(certificate.complementarity)
                    / certificate.stationarity.max(1e-300))
                .sqrt();
                let mut changed = false;
                if !(1.0 / ADAPT_RATIO..=ADAPT_RATIO).contains(&ratio) && ratio.is_finite() {
                    let new = (sigma * ratio).clamp(SIGMA_RANGE.0, SIGMA_RANGE.1);
                    if new != sigma {
                        sigma = new;
                        changed = true;
                    }
                }
                // Whether σ moved or not, the cones that hold the certificate back get a
                // stiffer penalty.
                if per_cone && certificate.primal.max(certificate.complementarity) > tolerance {
                    for (row, rows) in
                        lagging_cones(&cq.cones, &cx, &qp.r, &z, &certificate, tolerance)
                    {
                        if boost[row] * LOCAL_BOOST <= LOCAL_BOOST_MAX {
                            boost[row..row + rows].iter_mut().for_each(|b| *b *= LOCAL_BOOST);
                            changed = true;
                        }
                    }
                }
                if changed {
                    rho = penalties(&cq.cones, &inv_mass, sigma);
                    rho.iter_mut().zip(&boost).for_each(|(r, b)| *r *= b);
                    factor.set_rho(rho.clone());
                    sqrt_rho = rho.iter().map(|r| r.sqrt()).collect();
                    last_adapt = it;
                    tail = None;
                    aa.clear();
                    s_acc.copy_from_slice(&s);
                    z_acc.copy_from_slice(&z);
                    encode(&s, &z, &rho, &sqrt_rho, &mut u);
                }
            }
        }
    }
    out.iterations = it;
    out.factorisations = factorisations;
    if failed {
        return out;
    }
    out.solution.solved = certificate.holds(tolerance);
    out.solution.certificate = certificate;
    for (k, (c, &row)) in contacts.iter().zip(&cq.normal_rows).enumerate() {
        let mu = cq.mu[k];
        let basis = cq.tangents[k];
        let zk = if mu > 0.0 {
            Vector3::new(z[row], z[row + 1], z[row + 2])
        } else {
            Vector3::new(z[row], 0.0, 0.0)
        };
        let y = contact_velocity(bodies, c, basis, &x);
        let dz = Vector3::new(zk.x, mu * zk.y, mu * zk.z);
        let l = dz - Vector3::new(c.kappa_n, c.kappa_t, c.kappa_t).component_mul(&y);
        out.solution.impulses[k] =
            ContactImpulse { normal: l.x, tangential: basis.0 * l.y + basis.1 * l.z };
        out.solution.normal[k] = zk.x;
        out.solution.friction[k] = (basis.0 * zk.y + basis.1 * zk.z) * mu;
    }
    out.solution.x = x;
    out.solution.z = z;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::testing::{bits, uniform};

    /// The branch-free projection of runs of 3-row cones gives [`project_soc`]'s answer,
    /// bit for bit: inside, polar and boundary cases, zeros of either sign, t = 0.
    #[test]
    fn soc3_runs_project_as_one_cone_at_a_time() {
        let mut rnd = uniform(0x9e37_79b9_7f4a_7c15);
        let mut v = vec![
            1.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0, 0.0, -0.0, 0.0, 3.0, 4.0, 5.0, 3.0,
            -4.0, -5.0, 3.0, 4.0, 1.0, 1e-300, 1e-300,
        ];
        v.extend((0..3 * 20_000).map(|k| rnd() * if k % 7 == 0 { 1e-8 } else { 1.0 }));
        // Inside, polar and on-the-boundary inputs all occur.
        let mut cases = [0usize; 3];
        for c in v.chunks_exact(3) {
            let t = (c[1] * c[1] + c[2] * c[2]).sqrt();
            cases[usize::from(c[0] < t) + usize::from(c[0] <= -t)] += 1;
        }
        assert!(cases.iter().all(|&n| n > 1000), "cases {cases:?}");
        let mut one = v.clone();
        for c in one.chunks_exact_mut(3) {
            project_soc(c);
        }
        let mut baseline = v.clone();
        project_soc3_kernel(&mut baseline);
        project_soc3_wide(&mut v);
        for (w, name) in [(&v, "the AVX2 copy"), (&baseline, "the baseline copy")] {
            assert!(bits(w) == bits(&one), "{name} differs from one cone at a time");
        }
    }

    /// Three cones: the first outside its cone by a distance of 2e-3 (in the scale V = 1),
    /// the second inside it with |zᵀs| = 2e-3 (in the scale Z V = 1), the third near both
    /// limits; a non-negative row violated by 1e-3. At a tolerance of 1e-3 the share 0.25
    /// sets both limits at 2.5e-4.
    #[test]
    fn the_cones_that_hold_the_certificate_back_are_the_lagging_ones() {
        let cones = [
            SupportedConeT::SecondOrderConeT(3),
            SupportedConeT::SecondOrderConeT(3),
            SupportedConeT::SecondOrderConeT(3),
            SupportedConeT::NonnegativeConeT(1),
        ];
        let r = [0.0; 10];
        let d = 2e-3 * std::f64::consts::SQRT_2;
        // s₁ = (0, d, 0): distance d/√2 = 2e-3. s₂ = (1, 0, 0) inside with z₂ = (2e-3, 0, 0).
        // s₃ = (0, 2e-4·√2, 0): distance 2e-4, under the limit. Row 9: s = −1e-3.
        let cx = [0.0, d, 0.0, 1.0, 0.0, 0.0, 0.0, 2e-4 * std::f64::consts::SQRT_2, 0.0, -1e-3];
        let z = [1.0, 0.0, 0.0, 2e-3, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        let certificate =
            Certificate { stationarity: 1e-4, primal: 2e-3, dual: 0.0, complementarity: 2e-3 };
        assert_eq!(
            lagging_cones(&cones, &cx, &r, &z, &certificate, 1e-3),
            vec![(0, 3), (3, 3), (9, 1)]
        );
        // At a tolerance of 1e-2 (limit 2.5e-3) none lags.
        assert!(lagging_cones(&cones, &cx, &r, &z, &certificate, 1e-2).is_empty());
        // Twice the scales (the same residuals are half as large relatively): the cone at
        // 2e-4 stays under, the others (1e-3 relative) still lag at 1e-3.
        let halved =
            Certificate { stationarity: 1e-4, primal: 1e-3, dual: 0.0, complementarity: 1e-3 };
        assert_eq!(lagging_cones(&cones, &cx, &r, &z, &halved, 1e-3), vec![(0, 3), (3, 3), (9, 1)]);
        assert_eq!(lagging_cones(&cones, &cx, &r, &z, &halved, 3e-3), vec![(0, 3), (3, 3)]);
    }

    /// A linear map u → M u + c whose M has a minimal polynomial of degree 5 (two
    /// rotations scaled by 0.99, and zeros): the plain iteration closes 1 % of the distance
    /// to the fixed point u* = (I − M)⁻¹c a step, while Anderson acceleration with a memory
    /// of 5 (GMRES on I − M, for a linear map) lands on it within a few steps. A step whose
    /// residual has grown past the safeguard drops the history and returns the plain image.
    #[test]
    fn anderson_acceleration_finds_a_linear_maps_fixed_point_in_a_few_steps() {
        let n = 11; // two lanes of 4 and a tail of 3
        let mut mat = DMatrix::<f64>::zeros(n, n);
        for (o, angle) in [(0, 0.3f64), (5, 1.1)] {
            let (s, c) = angle.sin_cos();
            mat[(o, o)] = 0.99 * c;
            mat[(o, o + 1)] = -0.99 * s;
            mat[(o + 1, o)] = 0.99 * s;
            mat[(o + 1, o + 1)] = 0.99 * c;
        }
        let c = DVector::<f64>::from_fn(n, |i, _| 1.0 + i as f64);
        let fixed = (DMatrix::<f64>::identity(n, n) - &mat).lu().solve(&c).unwrap();
        let error = |u: &[f64]| (DVector::from_column_slice(u) - &fixed).norm() / fixed.norm();
        let ones = vec![1.0; n];
        let mut aa = Anderson::new(n);
        let mut u = vec![0.0; n];
        let (mut s, mut w) = (vec![0.0; n], vec![0.0; n]);
        let mut plain = DVector::<f64>::zeros(n);
        let mut steps = 0;
        while error(&u) > 1e-10 {
            let image = &mat * DVector::from_column_slice(&u) + &c;
            aa.step(image.as_slice(), &ones, &mut u, &mut s, &mut w);
            assert_eq!(bits(&s), bits(&u), "s = u / √ρ with ρ = 1");
            assert_eq!(bits(&w), bits(&u));
            plain = &mat * plain + &c;
            steps += 1;
            assert!(steps <= 10, "not at the fixed point after 10 steps: {}", error(&u));
        }
        assert!(error(plain.as_slice()) > 0.3, "the plain iteration: {}", error(plain.as_slice()));
        // A residual over the safeguard: the plain image back, the history dropped.
        let image: Vec<f64> = fixed.iter().map(|x| x + 1.0).collect();
        aa.step(&image, &ones, &mut u, &mut s, &mut w);
        assert_eq!(bits(&u), bits(&image));
        assert!(aa.df.is_empty() && aa.dg.is_empty());
    }

    /// The acceleration's kernels: the AVX2 copies give the baseline's bits, the differences
    /// and images are the definitions', and the lanes' sums are the dot products to
    /// rounding, for lengths with and without a tail.
    #[test]
    fn the_acceleration_kernels_are_exact_and_give_the_baseline_bits() {
        let mut next = uniform(0x2545_f491_4f6c_dd1d);
        for n in [1usize, 4, 103] {
            let mut vec_of = || (0..n).map(|_| next()).collect::<Vec<f64>>();
            let (v, sr, u, f0, g0) = (vec_of(), vec_of(), vec_of(), vec_of(), vec_of());
            let older: Vec<Vec<f64>> = (0..ANDERSON_MEMORY - 1).map(|_| vec_of()).collect();
            for k in 0..ANDERSON_MEMORY {
                let older: Vec<&[f64]> = older[..k].iter().map(|o| &o[..]).collect();
                let run = |wide: bool| {
                    let (mut f, mut g) = (f0.clone(), g0.clone());
                    let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
                    let mut sums: LaneSums = [[0.0; LANES]; 3 + 2 * ANDERSON_MEMORY];
                    let p =
                        Pass { v: &v, sr: &sr, u: &u, f: &mut f, g: &mut g, a: &mut a, b: &mut b };
                    if wide {
                        aa_pass_wide(p, &older, &mut sums);
                    } else {
                        aa_pass_kernel(p, &older, &mut sums);
                    }
                    (f, g, a, b, sums)
                };
                let (f, g, a, b, sums) = run(true);
                let base = run(false);
                assert_eq!(bits(&f), bits(&base.0));
                assert_eq!(bits(&g), bits(&base.1));
                assert_eq!(bits(&a), bits(&base.2));
                assert_eq!(bits(&b), bits(&base.3));
                let flat = |s: &LaneSums| s.iter().flatten().copied().collect::<Vec<f64>>();
                assert_eq!(bits(&flat(&sums)), bits(&flat(&base.4)));
                for j in 0..n {
                    assert_eq!(g[j], sr[j] * v[j]);
                    assert_eq!(f[j], g[j] - u[j]);
                    assert_eq!(a[j], f[j] - f0[j]);
                    assert_eq!(b[j], g[j] - g0[j]);
                }
                let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f64>();
                let close = |got: f64, want: f64, x: &[f64], y: &[f64]| {
                    let scale = x.iter().zip(y).map(|(p, q)| (p * q).abs()).sum::<f64>();
                    assert!((got - want).abs() <= 1e-14 * scale, "{got} against {want}");
                };
                close(reduce(&sums[0]), dot(&f, &f), &f, &f);
                close(reduce(&sums[1]), dot(&a, &a), &a, &a);
                close(reduce(&sums[2]), dot(&a, &f), &a, &f);
                for (i, o) in older.iter().enumerate() {
                    close(reduce(&sums[3 + i]), dot(o, &a), o, &a);
                    close(reduce(&sums[3 + ANDERSON_MEMORY + i]), dot(o, &f), o, &f);
                }
            }
            // The combination: g − Σ γᵢ Δgᵢ in order, and its unscaled copies.
            let dg: Vec<Vec<f64>> = (0..ANDERSON_MEMORY).map(|_| vec_of()).collect();
            let gamma: Vec<f64> = vec_of()[..ANDERSON_MEMORY.min(n)]
                .iter()
                .chain(&[0.5, -0.25, 2.0, 0.125, -3.0])
                .take(ANDERSON_MEMORY)
                .copied()
                .collect();
            let (g, sr) = (vec_of(), vec_of());
            for k in 0..=ANDERSON_MEMORY {
                let dg: Vec<&[f64]> = dg[..k].iter().map(|d| &d[..]).collect();
                let run = |wide: bool| {
                    let (mut out, mut s, mut w) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                    if wide {
                        aa_combine_wide(&dg, &gamma[..k], &g, &sr, &mut out, &mut s, &mut w);
                    } else {
                        aa_combine_kernel(&dg, &gamma[..k], &g, &sr, &mut out, &mut s, &mut w);
                    }
                    (out, s, w)
                };
                let (out, s, w) = run(true);
                let base = run(false);
                assert_eq!(bits(&out), bits(&base.0));
                assert_eq!(bits(&s), bits(&base.1));
                assert_eq!(bits(&w), bits(&base.2));
                for j in 0..n {
                    let mut o = g[j];
                    for i in 0..k {
                        o -= gamma[i] * dg[i][j];
                    }
                    assert_eq!(out[j], o);
                    assert_eq!(s[j], o / sr[j]);
                    assert_eq!(w[j], s[j]);
                }
            }
        }
    }
}
