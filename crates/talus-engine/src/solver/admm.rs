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
//! 18.3–18.5 s, and the packed heap's first step 0.86 s against 0.57 s, session 29). Anderson
//! acceleration of the (s, z) map is used below a tolerance of 1e-4 only, from the 100th
//! iteration of a solve. The iteration starts from the previous step's percussions matched
//! by contact identity (z), with s = Π_K(Cx₀ − r) at x₀ = (2M)⁻¹(p + Cᵀz): when they are
//! the answer, the first iteration returns it.
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
/// Iterates remembered by the Anderson acceleration (0: none).
const ANDERSON_MEMORY: usize = 5;
/// Anderson acceleration is used only for tolerances below this: each accelerated
/// iteration costs about twice a plain one, which pays at 1e-6 (thesis heap N = 1000,
/// μ = 0.5: 86 s with it, 99 s without) and not at 1e-3 (default site: 165 s with it, 114 s
/// without; the heap at 1e-3 and 1e-4 is the same either way).
const ANDERSON_BELOW: f64 = 1e-4;
/// ... and only once a solve has done this many plain iterations: most islands are
/// certified before, where an accelerated iteration costs more than it saves, while the
/// packed heap's one island needs it (session 21, docs/benchmarks.md: thesis heap
/// N = 1000, μ = 0.5 at 1e-6 37.4 s against 43.2 s with it from the start, 36.9 s without
/// it; packed heap of 1000 blocks 9.9 s a step either way, against 24–26 s without it, its
/// solves missing their budget).
const ANDERSON_AFTER: u32 = 100;

/// Type-II Anderson acceleration of a fixed-point map u → g(u) (Walker & Ni 2011): the
/// next input is the combination of the last g's whose residuals' combination is least,
/// from the differences of the last `ANDERSON_MEMORY` + 1 iterates, kept with their Gram
/// matrix so that an update costs O((3 × memory + 2) × len).
struct Anderson {
    /// Last (f, g).
    last: Option<(Vec<f64>, Vec<f64>)>,
    /// Differences Δf, Δg of consecutive iterates, oldest first.
    df: VecDeque<Vec<f64>>,
    dg: VecDeque<Vec<f64>>,
    /// Gram matrix of the Δf's (row-major, ANDERSON_MEMORY²).
    gram: Vec<f64>,
}

impl Anderson {
    fn new() -> Self {
        Anderson {
            last: None,
            df: VecDeque::new(),
            dg: VecDeque::new(),
            gram: vec![0.0; ANDERSON_MEMORY * ANDERSON_MEMORY],
        }
    }

    fn clear(&mut self) {
        self.last = None;
        self.df.clear();
        self.dg.clear();
    }

    /// Record f = g − u and g; write the next input into `out` (g itself when there is no
    /// history or the least-squares problem is singular). Returns the previous step's
    /// (f, g), whose buffers the caller may reuse.
    ///
    /// Two passes over the vectors: the new differences with their Gram entries and the
    /// right-hand side Δfᵢ·f, then the combination. Each dot product sums its terms in
    /// order from −0 (as `Iterator::sum`), and the combination subtracts γᵢ Δgᵢ in order,
    /// so the answer is that of the dot products and updates done one by one, bit for bit
    /// (`the_fused_anderson_step_gives_the_reference_bits`; session 31, docs/benchmarks.md).
    fn step(&mut self, f: Vec<f64>, g: Vec<f64>, out: &mut [f64]) -> Option<(Vec<f64>, Vec<f64>)> {
        let mem = ANDERSON_MEMORY;
        let Some((f0, g0)) = self.last.take() else {
            // No history (the differences are cleared with it).
            out.copy_from_slice(&g);
            self.last = Some((f, g));
            return None;
        };
        let (mut a, mut b) = if self.df.len() == mem {
            // Shift the Gram matrix up-left by one.
            for i in 0..mem - 1 {
                for j in 0..mem - 1 {
                    self.gram[i * mem + j] = self.gram[(i + 1) * mem + j + 1];
                }
            }
            (self.df.pop_front().unwrap(), self.dg.pop_front().unwrap())
        } else {
            (vec![0.0; f.len()], vec![0.0; f.len()])
        };
        // The new differences; their products with the older ones and themselves (the
        // Gram matrix's new column) and every Δfᵢ·f.
        let old: Vec<&[f64]> = self.df.iter().map(|d| &d[..]).collect();
        let (gram_new, rhs) = DIFFERENCES[old.len()](&old, [&f, &f0, &g, &g0], &mut a, &mut b);
        self.df.push_back(a);
        self.dg.push_back(b);
        let k = self.df.len();
        for (i, &d) in gram_new.iter().enumerate().take(k) {
            self.gram[i * mem + k - 1] = d;
            self.gram[(k - 1) * mem + i] = d;
        }
        let mut a = DMatrix::<f64>::from_fn(k, k, |i, j| self.gram[i * mem + j]);
        let b = DVector::<f64>::from_fn(k, |i, _| rhs[i]);
        let reg = 1e-10 * (0..k).map(|i| a[(i, i)]).fold(0.0, f64::max) + f64::MIN_POSITIVE;
        for i in 0..k {
            a[(i, i)] += reg;
        }
        let gamma = a.cholesky().map(|ch| ch.solve(&b)).filter(|g| g.iter().all(|v| v.is_finite()));
        match gamma {
            Some(gamma) => {
                let dg: Vec<&[f64]> = self.dg.iter().map(|d| &d[..]).collect();
                COMBINE[k - 1](&dg, gamma.as_slice(), &g, out);
            }
            None => out.copy_from_slice(&g),
        }
        self.last = Some((f, g));
        Some((f0, g0))
    }
}

/// [`differences`] for one count of older differences.
type Differences = fn(
    &[&[f64]],
    [&[f64]; 4],
    &mut [f64],
    &mut [f64],
) -> ([f64; ANDERSON_MEMORY], [f64; ANDERSON_MEMORY]);
/// [`combine`] for one count of differences.
type Combine = fn(&[&[f64]], &[f64], &[f64], &mut [f64]);

/// [`differences`] by the count of older differences, 0 to `ANDERSON_MEMORY` − 1 (the
/// array's length is checked against `ANDERSON_MEMORY` when compiled).
const DIFFERENCES: [Differences; ANDERSON_MEMORY] =
    [differences::<0>, differences::<1>, differences::<2>, differences::<3>, differences::<4>];
/// [`combine`] by the count of differences less one.
const COMBINE: [Combine; ANDERSON_MEMORY] =
    [combine::<1>, combine::<2>, combine::<3>, combine::<4>, combine::<5>];

/// One pass of [`Anderson::step`] with `K` older differences `older`: from
/// `[f, f₀, g, g₀]`, the differences a = f − f₀ and b = g − g₀; returns the products of
/// the older Δf's with a, then a·a (the Gram matrix's new column), and those of the older
/// Δf's with f, then a·f (the right-hand side). Each sum is added to in order, from −0, as
/// a dot product of its own.
fn differences<const K: usize>(
    older: &[&[f64]],
    [f, f0, g, g0]: [&[f64]; 4],
    a: &mut [f64],
    b: &mut [f64],
) -> ([f64; ANDERSON_MEMORY], [f64; ANDERSON_MEMORY]) {
    let len = f.len();
    let (f0, g, g0, a, b) = (&f0[..len], &g[..len], &g0[..len], &mut a[..len], &mut b[..len]);
    let older: [&[f64]; K] = std::array::from_fn(|i| &older[i][..len]);
    let (mut gram, mut rhs) = ([-0.0f64; ANDERSON_MEMORY], [-0.0f64; ANDERSON_MEMORY]);
    for j in 0..len {
        let d = f[j] - f0[j];
        a[j] = d;
        b[j] = g[j] - g0[j];
        for i in 0..K {
            gram[i] += older[i][j] * d;
            rhs[i] += older[i][j] * f[j];
        }
        gram[K] += d * d;
        rhs[K] += d * f[j];
    }
    (gram, rhs)
}

/// The other pass of [`Anderson::step`], with `K` differences: out = g − Σᵢ γᵢ Δgᵢ,
/// subtracted in order.
fn combine<const K: usize>(dg: &[&[f64]], gamma: &[f64], g: &[f64], out: &mut [f64]) {
    let len = g.len();
    let out = &mut out[..len];
    let dg: [&[f64]; K] = std::array::from_fn(|i| &dg[i][..len]);
    let gamma: [f64; K] = std::array::from_fn(|i| gamma[i]);
    for j in 0..len {
        let mut o = g[j];
        for i in 0..K {
            o -= gamma[i] * dg[i][j];
        }
        out[j] = o;
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
/// s = Π_K(ŵ − P⁻¹z) and z = P(s − (ŵ − P⁻¹z)) with ŵ = α(Cx − r) + (1 − α)s.
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
    let Some(mut factor) = Factor::new(qp, DENSE_FACTOR_MAX, pair.is_some()) else {
        return out;
    };
    let inv_mass = factor.inv_mass().to_vec();
    let mut sigma = sigma_start.clamp(SIGMA_RANGE.0, SIGMA_RANGE.1);
    let accelerate = ANDERSON_MEMORY > 0 && tolerance < ANDERSON_BELOW;
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

    let mut s_acc = s.clone();
    let mut z_acc = z.clone();
    let encode = |s: &[f64], z: &[f64], rho: &[f64]| -> Vec<f64> {
        let mut u = vec![0.0; 2 * m];
        for k in 0..m {
            let r = rho[k].sqrt();
            u[k] = r * s[k];
            u[m + k] = z[k] / r;
        }
        u
    };
    let mut sqrt_rho: Vec<f64> = rho.iter().map(|r| r.sqrt()).collect();
    let mut input = encode(&s, &z, &rho);
    let mut aa = Anderson::new();
    let mut best_f = f64::INFINITY;
    let mut certificate = unsolved;
    let mut next_check = 1;
    let mut last_adapt = 0;
    let mut rhs_z = vec![0.0; m];
    let mut v = vec![0.0; m];
    // Buffers reused by every iteration: Cᵀ(...) + p and its solve, C x, and Anderson's
    // (f, g) of two steps back.
    let mut rhs = vec![0.0; n];
    let mut cx = vec![0.0; m];
    let mut spare: Option<(Vec<f64>, Vec<f64>)> = None;
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
        if accelerate && !anderson && it >= ANDERSON_AFTER {
            // Switch the acceleration on, from the current iterate.
            anderson = true;
            s_acc.copy_from_slice(&s);
            z_acc.copy_from_slice(&z);
            input = encode(&s, &z, &rho);
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
                    update_s_z(r0, cones, &qp.r, &rho, acc, cx, v, s, z);
                });
            }
            None => {
                qp.c_mul_into(&x, &mut cx);
                update_s_z(0, &cq.cones, &qp.r, &rho, acc, &cx, &mut v, &mut s, &mut z);
            }
        }
        // Anderson acceleration of the map (s, z) → (s⁺, z⁺), in the coordinates
        // (√ρ s, z/√ρ) where both parts have one scale.
        if anderson {
            // Every entry is written below.
            let (mut f, mut g) =
                spare.take().unwrap_or_else(|| (vec![0.0; 2 * m], vec![0.0; 2 * m]));
            for k in 0..m {
                let r = sqrt_rho[k];
                g[k] = r * s[k];
                g[m + k] = z[k] / r;
                f[k] = g[k] - input[k];
                f[m + k] = g[m + k] - input[m + k];
            }
            let fnorm = f.iter().map(|a| a * a).sum::<f64>().sqrt();
            if fnorm > 10.0 * best_f {
                aa.clear();
            }
            best_f = best_f.min(fnorm);
            spare = aa.step(f, g, &mut input);
            for k in 0..m {
                let r = sqrt_rho[k];
                s_acc[k] = input[k] / r;
                z_acc[k] = input[m + k] * r;
            }
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
            let adapt = it >= last_adapt + ADAPT_EVERY;
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
                    best_f = f64::INFINITY;
                    s_acc.copy_from_slice(&s);
                    z_acc.copy_from_slice(&z);
                    input = encode(&s, &z, &rho);
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

    /// [`Anderson::step`] as it was before its passes were fused (session 30): each dot
    /// product and each update of `out` a loop of its own.
    struct ReferenceAnderson {
        last: Option<(Vec<f64>, Vec<f64>)>,
        df: VecDeque<Vec<f64>>,
        dg: VecDeque<Vec<f64>>,
        gram: Vec<f64>,
    }

    impl ReferenceAnderson {
        fn step(&mut self, f: Vec<f64>, g: Vec<f64>, out: &mut [f64]) {
            let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
            let mem = ANDERSON_MEMORY;
            if let Some((f0, g0)) = self.last.take() {
                if self.df.len() == mem {
                    self.df.pop_front();
                    self.dg.pop_front();
                    for i in 0..mem - 1 {
                        for j in 0..mem - 1 {
                            self.gram[i * mem + j] = self.gram[(i + 1) * mem + j + 1];
                        }
                    }
                }
                self.df.push_back(f.iter().zip(&f0).map(|(x, y)| x - y).collect());
                self.dg.push_back(g.iter().zip(&g0).map(|(x, y)| x - y).collect());
                let k = self.df.len();
                let new = &self.df[k - 1];
                for i in 0..k {
                    let d = dot(&self.df[i], new);
                    self.gram[i * mem + k - 1] = d;
                    self.gram[(k - 1) * mem + i] = d;
                }
            }
            let k = self.df.len();
            out.copy_from_slice(&g);
            if k > 0 {
                let mut a = DMatrix::<f64>::from_fn(k, k, |i, j| self.gram[i * mem + j]);
                let b = DVector::<f64>::from_fn(k, |i, _| dot(&self.df[i], &f));
                let reg = 1e-10 * (0..k).map(|i| a[(i, i)]).fold(0.0, f64::max) + f64::MIN_POSITIVE;
                for i in 0..k {
                    a[(i, i)] += reg;
                }
                if let Some(ch) = a.cholesky() {
                    let gamma = ch.solve(&b);
                    if gamma.iter().all(|v| v.is_finite()) {
                        for (i, dg) in self.dg.iter().enumerate() {
                            let gi = gamma[i];
                            out.iter_mut().zip(dg).for_each(|(o, d)| *o -= gi * d);
                        }
                    }
                }
            }
            self.last = Some((f, g));
        }
    }

    /// The fused passes give the one-by-one step's answer bit for bit: a sequence of 14
    /// steps that fills the memory, runs past it and is cleared once, on vectors with
    /// repeated entries (zero differences) and entries of very different sizes.
    #[test]
    fn the_fused_anderson_step_gives_the_reference_bits() {
        let mut next = uniform(0x2545_f491_4f6c_dd1d);
        let len = 103;
        let mut fused = Anderson::new();
        let mut reference = ReferenceAnderson {
            last: None,
            df: VecDeque::new(),
            dg: VecDeque::new(),
            gram: vec![0.0; ANDERSON_MEMORY * ANDERSON_MEMORY],
        };
        let mut u = vec![0.0; len];
        let (mut out, mut out_ref) = (vec![0.0; len], vec![0.0; len]);
        let mut combined = 0;
        for step in 0..14 {
            if step == 9 {
                fused.clear();
                reference.last = None;
                reference.df.clear();
                reference.dg.clear();
            }
            // g(u): a contraction plus noise; every fifth entry held at its last value.
            let g: Vec<f64> = (0..len)
                .map(|j| {
                    let scale = if j % 7 == 0 { 1e6 } else { 1.0 };
                    if j % 5 == 0 && step > 0 { u[j] } else { 0.5 * u[j] + scale * next() }
                })
                .collect();
            let f: Vec<f64> = g.iter().zip(&u).map(|(a, b)| a - b).collect();
            reference.step(f.clone(), g.clone(), &mut out_ref);
            fused.step(f, g.clone(), &mut out);
            assert_eq!(bits(&out), bits(&out_ref), "step {step}");
            combined += usize::from(out != g);
            u.copy_from_slice(&out);
        }
        // The steps with a history combined their differences (not just g).
        assert_eq!(combined, 12);
    }
}
