//! Non-linear Gauss–Seidel on the contact percussions: the jump of an island (with or
//! without friction) solved in contact space, warm-started, and certified.
//!
//! # Contact space
//!
//! H = 2M + Σ_k J_kᵀ K_k J_k with 2M block-diagonal, J_k the 3 × 6n map from x to the
//! relative velocity of contact k's point in its frame (N_k, t₁, t₂), K_k = diag(κ_N, κ_T,
//! κ_T). With y_k = J_k x, the conic program of [`crate::solver::friction`] is
//!
//! ```text
//! minimise ½xᵀ2Mx − pᵀx + Σ_k ½ y_kᵀK_k y_k   s.t.  s_k = D_k y_k − r_k ∈ K_k
//! ```
//!
//! with D_k = diag(1, μ, μ) and K_k the 3-D second-order cone (or, frictionless, the
//! normal row alone and the half-line). Its optimality conditions say that the total
//! percussion of contact k (on body i, in the contact frame)
//!
//! ```text
//! Λ_k = D_k z_k − K_k y_k,   z_k ∈ K_k,   s_k ∈ K_k,   z_kᵀ s_k = 0,
//! 2M x = p + Σ_k J_kᵀ Λ_k
//! ```
//!
//! (z is Clarabel's dual: λ_N = z₀ and the friction percussion μ(z₁, z₂), inside the
//! Coulomb cone ‖λ_T‖ ≤ μ λ_N.) Only the Delassus blocks W_k = J_k (2M)⁻¹ J_kᵀ (3 × 3) and
//! the per-contact laws appear.
//!
//! # One contact's law, exactly
//!
//! With the others fixed, y_k = q + W Λ_k (q: the velocity without contact k). Eliminating
//! the κ term, y = B(q + W D z) with B = (I + W K)⁻¹, and s = A z + a with the symmetric
//! A = D B W D and a = D B q − r. So z solves the 3-D cone complementarity problem
//! z ∈ K, Az + a ∈ K, zᵀ(Az + a) = 0, i.e. z = argmin_{z ∈ K} ½zᵀAz + aᵀz, solved in closed
//! cases: z = 0 when a ∈ K (the contact opens or stays open); z = −A⁻¹a when it is in K
//! (sticking: s = 0); otherwise z = σ(1, cos φ, sin φ) on the boundary (sliding), with
//! σ(φ) = −aᵀd/dᵀAd and φ the minimiser of −(aᵀd)²/(2dᵀAd) (sampled at 64 points, then
//! safeguarded Newton on its derivative).
//!
//! # The sweep and the certificate
//!
//! Sweeps alternate forward and backward over the contacts, each updating x in place by
//! (2M)⁻¹J_kᵀΔΛ_k. The percussions start from the previous step's, matched by contact
//! identity ([`crate::solver::warm::WarmStart`]): for a heap at rest they are already the answer.
//! After 1, 2, 4, 8 sweeps and every 10 after (1, 4, 8, ... with [`Finish::GiveUp`]), x is
//! recomputed from the percussions and the pair (x, z) is checked by
//! [`crate::solver::certificate::certify`] on the program's own data; the solve stops when
//! the certificate holds to the tolerance.

use crate::solver::assembly::{JumpBody, JumpContact};
use crate::solver::certificate::{Certificate, Certifier, certify};
use crate::solver::friction::ConeQp;
use crate::solver::islands::{BIG_ISLAND_CONTACTS, Halves};
use crate::solver::pair::{Pair, both};
use nalgebra::{Matrix3, SMatrix, Vector3};
use rayon::prelude::*;
use std::borrow::Cow;

type M63 = SMatrix<f64, 6, 3>;

/// Sweeps before the first polish, and between polishes.
const POLISH_AFTER: u32 = 18;
const POLISH_EVERY: u32 = 40;
/// State updates per polish.
const POLISH_ROUNDS: usize = 6;
/// Relative slack below which a contact counts as closed when the polish reads the states.
const POLISH_EPS: f64 = 1e-3;

/// The total percussion Λ of one contact on body i (reaction and κ damping): its normal
/// component and its tangential part in world coordinates, N s. What the next step starts
/// from: with the same contacts and motion, x = (2M)⁻¹(p + Σ J_kᵀΛ_k) is the answer at once.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ContactImpulse {
    /// Λ_N, N s.
    pub normal: f64,
    /// Λ_T (world), N s.
    pub tangential: Vector3<f64>,
}

/// A solution of the jump's conic program in contact space, as NLGS and ADMM
/// ([`crate::solver::admm`]) return it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactSolution {
    /// x = (u⁺ + u⁻)/2.
    pub x: Vec<f64>,
    /// Dual z in the rows of the conic program.
    pub z: Vec<f64>,
    /// Total percussion Λ of each contact (for the next step's warm start).
    pub impulses: Vec<ContactImpulse>,
    /// Normal reaction z₀ = λ_N of each contact, N s.
    pub normal: Vec<f64>,
    /// Friction percussion μ(z₁t₁ + z₂t₂) of each contact (world), N s.
    pub friction: Vec<Vector3<f64>>,
    /// Certificate of (x, z).
    pub certificate: Certificate,
    /// Whether the certificate holds to the tolerance.
    pub solved: bool,
}

/// The outcome of a solve.
#[derive(Debug, Clone, PartialEq)]
pub struct NlgsOutcome {
    pub solution: ContactSolution,
    /// Sweeps done.
    pub sweeps: u32,
    /// Equality-constrained QPs solved by the polish.
    pub polishes: u32,
}

struct Row {
    /// Local body indices (i, and j when a block).
    i: usize,
    j: Option<usize>,
    /// J_k on i's and j's slots (3 × 6, rows N, t₁, t₂).
    ji: SMatrix<f64, 3, 6>,
    jj: SMatrix<f64, 3, 6>,
    /// (2M)⁻¹ J_kᵀ on i's and j's slots.
    gi: M63,
    gj: M63,
    w: Matrix3<f64>,
    b: Matrix3<f64>,
    bw: Matrix3<f64>,
    kappa: Vector3<f64>,
    mu: f64,
    /// Right-hand side of the cone rows (r₀, and r₁, r₂ when μ > 0).
    r: Vector3<f64>,
    /// First row of the contact in the conic program.
    row: usize,
    tangents: (Vector3<f64>, Vector3<f64>),
}

impl Row {
    /// y = J_k x, the contact's relative velocity at x in its frame; `x` holds the bodies
    /// from number `first` on.
    fn velocity(&self, x: &[f64], first: usize) -> Vector3<f64> {
        let o = 6 * (self.i - first);
        let xi = SMatrix::<f64, 6, 1>::from_column_slice(&x[o..o + 6]);
        let mut y = self.ji * xi;
        if let Some(j) = self.j {
            let o = 6 * (j - first);
            let xj = SMatrix::<f64, 6, 1>::from_column_slice(&x[o..o + 6]);
            y += self.jj * xj;
        }
        y
    }

    /// x += (2M)⁻¹ J_kᵀ Λ; `x` holds the bodies from number `first` on.
    fn apply(&self, x: &mut [f64], first: usize, l: &Vector3<f64>) {
        let di = self.gi * l;
        let o = 6 * (self.i - first);
        for a in 0..6 {
            x[o + a] += di[a];
        }
        if let Some(j) = self.j {
            let dj = self.gj * l;
            let o = 6 * (j - first);
            for a in 0..6 {
                x[o + a] += dj[a];
            }
        }
    }

    /// D z = (z₀, μ z₁, μ z₂): the reaction part of the percussion of dual z.
    fn dz(&self, z: &Vector3<f64>) -> Vector3<f64> {
        Vector3::new(z.x, self.mu * z.y, self.mu * z.z)
    }

    /// One Gauss–Seidel update of this contact: its percussion Λ and dual z from the
    /// velocity at x (bodies from `first` on), x moved by the change of Λ.
    fn update(&self, x: &mut [f64], first: usize, lambda: &mut Vector3<f64>, z: &mut Vector3<f64>) {
        let y = self.velocity(x, first);
        let q = y - self.w * *lambda;
        let y0 = self.b * q;
        let zk = if self.mu > 0.0 {
            let dm = Matrix3::from_diagonal(&Vector3::new(1.0, self.mu, self.mu));
            let a_mat = dm * self.bw * dm;
            let a = dm * y0 - self.r;
            solve_cone3(&a_mat, &a)
        } else {
            let a00 = self.bw[(0, 0)];
            let a0 = y0.x - self.r.x;
            let z0 = if a0 >= 0.0 || a00 <= 0.0 { 0.0 } else { -a0 / a00 };
            Vector3::new(z0, 0.0, 0.0)
        };
        let dzk = self.dz(&zk);
        let y_new = y0 + self.bw * dzk;
        let l_new = dzk - self.kappa.component_mul(&y_new);
        let dl = l_new - *lambda;
        *lambda = l_new;
        *z = zk;
        self.apply(x, first, &dl);
    }
}

/// A sweep over `rows` (forward or backward), their percussions and duals alongside, on x
/// holding the bodies from number `first` on.
fn sweep(
    rows: &[Row],
    lambda: &mut [Vector3<f64>],
    z: &mut [Vector3<f64>],
    x: &mut [f64],
    first: usize,
    forward: bool,
) {
    let n = rows.len();
    for t in 0..n {
        let k = if forward { t } else { n - 1 - t };
        rows[k].update(x, first, &mut lambda[k], &mut z[k]);
    }
}

fn jacobian(r: &Vector3<f64>, basis: [Vector3<f64>; 3], sign: f64) -> SMatrix<f64, 3, 6> {
    let mut j = SMatrix::<f64, 3, 6>::zeros();
    for (a, d) in basis.iter().enumerate() {
        let t = r.cross(d);
        for c in 0..3 {
            j[(a, c)] = sign * d[c];
            j[(a, 3 + c)] = sign * t[c];
        }
    }
    j
}

/// Minimise ½zᵀAz + aᵀz over the 3-D second-order cone {z₀ ≥ ‖(z₁, z₂)‖} (A symmetric
/// positive definite).
pub fn solve_cone3(a_mat: &Matrix3<f64>, a: &Vector3<f64>) -> Vector3<f64> {
    let at = (a.y * a.y + a.z * a.z).sqrt();
    if a.x >= at {
        return Vector3::zeros();
    }
    if let Some(inv) = a_mat.try_inverse() {
        let z = -(inv * a);
        if z.x >= (z.y * z.y + z.z * z.z).sqrt() {
            return z;
        }
    }
    // Boundary: z = σ d(φ), d = (1, cos φ, sin φ), σ = −N/Q with N = aᵀd < 0, Q = dᵀAd;
    // φ minimises f = −N²/(2Q), whose derivative −N h/Q² has the sign of h = N'Q − N Q'/2.
    // With d' = (0, −sin φ, cos φ) and d'' = −(d − e₀):
    // h' = N''Q + N'Q'/2 − N Q''/2, Q' = 2d'ᵀAd, Q'' = 2(d''ᵀAd + d'ᵀAd').
    // −2f = N²/Q on the arc (N < 0), 0 off it, as the pair (N², Q) (Q > 0), from the
    // scalar coefficients of N and Q: samples are compared without a division.
    let (q0, q1, q2) = (a_mat[(0, 0)], 2.0 * a_mat[(0, 1)], 2.0 * a_mat[(0, 2)]);
    let (q11, q12, q22) = (a_mat[(1, 1)], 2.0 * a_mat[(1, 2)], a_mat[(2, 2)]);
    let f = |c: f64, s: f64| {
        let n = a.x + a.y * c + a.z * s;
        let q = q0 + q1 * c + q2 * s + q11 * c * c + q12 * c * s + q22 * s * s;
        if n >= 0.0 { (0.0, 1.0) } else { (n * n, q) }
    };
    let lower = |u: (f64, f64), v: (f64, f64)| u.0 * v.1 > v.0 * u.1;
    let h_and_slope = |phi: f64| {
        let (s, c) = phi.sin_cos();
        let d = Vector3::new(1.0, c, s);
        let dp = Vector3::new(0.0, -s, c);
        let dpp = Vector3::new(0.0, -c, -s);
        let (ad, adp) = (a_mat * d, a_mat * dp);
        let (n, n1, n2) = (a.dot(&d), a.dot(&dp), a.dot(&dpp));
        let (q, q1, q2) = (d.dot(&ad), 2.0 * dp.dot(&ad), 2.0 * (dpp.dot(&ad) + dp.dot(&adp)));
        (n1 * q - 0.5 * n * q1, n2 * q + 0.5 * n1 * q1 - 0.5 * n * q2)
    };
    // f < 0 only on the arc where N < 0: φ* ± α, φ* opposite to (a₁, a₂), cos α = a₀/‖a_T‖
    // (the whole circle when a₀ < −‖a_T‖, i.e. −a in the cone), where h ≤ 0 at the left
    // end and ≥ 0 at the right one. Sample it (each direction the previous one rotated by
    // the step: sines and cosines of the start and the step only), then Newton on h, kept
    // inside the bracket of the best sample by bisection.
    const SAMPLES: usize = 64;
    let centre = (-a.z).atan2(-a.y);
    let alpha = (a.x / at).clamp(-1.0, 1.0).acos();
    let step = 2.0 * alpha / SAMPLES as f64;
    let (rs, rc) = step.sin_cos();
    let (mut s, mut c) = (centre - alpha).sin_cos();
    let mut best = (centre, f(centre.cos(), centre.sin()));
    for k in 1..SAMPLES {
        (c, s) = (c * rc - s * rs, s * rc + c * rs);
        let v = f(c, s);
        if lower(v, best.1) {
            best = (centre - alpha + k as f64 * step, v);
        }
    }
    // On a partial arc the bracket stops at its ends; on the whole circle it wraps.
    let (mut lo, mut hi) = if a.x > -at {
        ((best.0 - step).max(centre - alpha), (best.0 + step).min(centre + alpha))
    } else {
        (best.0 - step, best.0 + step)
    };
    let mut phi = best.0;
    if h_and_slope(lo).0 <= 0.0 && h_and_slope(hi).0 >= 0.0 {
        for _ in 0..100 {
            let (h, slope) = h_and_slope(phi);
            if h <= 0.0 {
                lo = phi;
            } else {
                hi = phi;
            }
            let newton = phi - h / slope;
            // A Newton step of δ leaves an error of order δ².
            let scale = phi.abs().max(1.0);
            if slope > 0.0 && (newton - phi).abs() <= 1e-10 * scale {
                phi = newton;
                break;
            }
            phi = if slope > 0.0 && newton > lo && newton < hi { newton } else { 0.5 * (lo + hi) };
            if hi - lo <= 4.0 * f64::EPSILON * scale {
                break;
            }
        }
    }
    let d = Vector3::new(1.0, phi.cos(), phi.sin());
    let sigma = (-a.dot(&d) / d.dot(&(a_mat * d))).max(0.0);
    d * sigma
}

/// State of a contact at a candidate solution, for the polish.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// No percussion.
    Open,
    /// Frictionless (or normal-only) and pushing: c_kᵀx = r_k.
    Normal,
    /// Frictional, sticking: the three cone rows hold with equality (s_k = 0).
    Stick,
    /// Frictional, sliding with the friction percussion along e (unit, in (t₁, t₂)):
    /// (1, e)ᵀs_k = 0 and z_k = σ(1, e).
    Slide(f64, f64),
}

/// The contact states of a candidate, read from its cone slacks s (x is unique, the
/// percussions z of redundant contacts are not): s ≈ 0 sticks (or, frictionless, pushes),
/// s on the cone's boundary with a slip slides against it, s inside the cone opens.
/// "≈" is `eps` times the velocity scale `v`.
fn states(s: &[Vector3<f64>], mu: &[f64], eps: f64, v: f64) -> Vec<State> {
    let tol = eps * v;
    s.iter()
        .zip(mu)
        .map(|(s, &mu)| {
            if mu <= 0.0 {
                return if s.x <= tol { State::Normal } else { State::Open };
            }
            let st = (s.y * s.y + s.z * s.z).sqrt();
            if s.x.abs().max(st) <= tol {
                State::Stick
            } else if s.x - st <= tol && st > tol {
                // The friction percussion opposes the slip: e = −s_T/‖s_T‖.
                State::Slide(-s.y / st, -s.z / st)
            } else {
                State::Open
            }
        })
        .collect()
}

/// One polish: a Newton (SQP) step on the contact states, i.e. the equality-constrained QP
/// whose rows are the sticking contacts' three cone rows, the pushing frictionless
/// contacts' normal row, and each sliding contact's linearised boundary
/// g(s) = s₀ − ‖s_T‖ = 0, (1, −ŝ)ᵀs = 0 with ŝ = s_T/‖s_T‖ = −e, whose curvature
/// σ (I − ŝŝᵀ)/‖s_T‖ on the tangential rows is added to H (σ the sliding percussion); solved
/// by the warm solver's factorisation. Returns x and the contacts' z.
fn polish_once(
    cq: &ConeQp,
    st: &[State],
    x0: &[f64],
    z0: &[Vector3<f64>],
    s0: &[Vector3<f64>],
    min_slip: f64,
    iterations: &mut u32,
) -> Option<(Vec<f64>, Vec<Vector3<f64>>)> {
    let n = cq.qp.n();
    let c = cq.qp.c();
    // Rows of C by row index: (column, value).
    let mut crow: Vec<Vec<(usize, f64)>> = vec![Vec::new(); cq.qp.m()];
    for col in 0..c.n {
        for k in c.colptr[col]..c.colptr[col + 1] {
            crow[c.rowval[k]].push((col, c.nzval[k]));
        }
    }
    let (mut rows, mut cols, mut vals, mut r, mut l0) = (vec![], vec![], vec![], vec![], vec![]);
    let mut push = |combo: &[(usize, f64)], lambda: f64, r: &mut Vec<f64>| {
        let row = r.len();
        let mut rhs = 0.0;
        for &(i, w) in combo {
            for &(col, v) in &crow[i] {
                rows.push(row);
                cols.push(col);
                vals.push(w * v);
            }
            rhs += w * cq.qp.r[i];
        }
        r.push(rhs);
        l0.push(lambda);
    };
    for (k, state) in st.iter().enumerate() {
        let row = cq.normal_rows[k];
        match *state {
            State::Open => {}
            State::Normal => push(&[(row, 1.0)], z0[k].x, &mut r),
            State::Stick => {
                push(&[(row, 1.0)], z0[k].x, &mut r);
                push(&[(row + 1, 1.0)], z0[k].y, &mut r);
                push(&[(row + 2, 1.0)], z0[k].z, &mut r);
            }
            State::Slide(e1, e2) => {
                push(&[(row, 1.0), (row + 1, e1), (row + 2, e2)], z0[k].x, &mut r)
            }
        }
    }
    let m = r.len();
    // Curvature of the sliding contacts' boundaries.
    let h = cq.qp.h_upper();
    let (mut hi, mut hj, mut hv) = (vec![], vec![], vec![]);
    for col in 0..h.n {
        for k in h.colptr[col]..h.colptr[col + 1] {
            hi.push(h.rowval[k]);
            hj.push(col);
            hv.push(h.nzval[k]);
        }
    }
    let mut p = cq.qp.p.clone();
    for (k, state) in st.iter().enumerate() {
        let State::Slide(e1, e2) = *state else { continue };
        let st_norm = (s0[k].y * s0[k].y + s0[k].z * s0[k].z).sqrt();
        let sigma = z0[k].x;
        // A contact that just started to slide (s_T ~ 0) keeps its direction fixed for
        // this step: the curvature σ/‖s_T‖ would be unbounded.
        if sigma <= 0.0 || st_norm <= min_slip {
            continue;
        }
        let row = cq.normal_rows[k];
        let pm = [[1.0 - e1 * e1, -e1 * e2], [-e1 * e2, 1.0 - e2 * e2]];
        let w = sigma / st_norm;
        for a in 0..2 {
            for b in 0..2 {
                let f = w * pm[a][b];
                if f == 0.0 {
                    continue;
                }
                for &(ci, vi) in &crow[row + 1 + a] {
                    for &(cj, vj) in &crow[row + 1 + b] {
                        // W x0 for the right-hand side, and the upper triangle of W.
                        p[ci] += f * vi * vj * x0[cj];
                        if ci <= cj {
                            hi.push(ci);
                            hj.push(cj);
                            hv.push(f * vi * vj);
                        }
                    }
                }
            }
        }
    }
    let qp = crate::solver::assembly::Qp::new(
        crate::solver::assembly::csc_from_triplets(n, n, &hi, &hj, &hv),
        p,
        crate::solver::assembly::csc_from_triplets(m, n, &rows, &cols, &vals),
        r,
    );
    let (x, lambda) = crate::solver::warm::solve_equality(&qp, x0, &l0, iterations)?;
    let mut z = vec![Vector3::zeros(); st.len()];
    let mut j = 0;
    for (k, state) in st.iter().enumerate() {
        match *state {
            State::Open => {}
            State::Normal => {
                z[k] = Vector3::new(lambda[j], 0.0, 0.0);
                j += 1;
            }
            State::Stick => {
                z[k] = Vector3::new(lambda[j], lambda[j + 1], lambda[j + 2]);
                j += 3;
            }
            State::Slide(e1, e2) => {
                z[k] = Vector3::new(1.0, e1, e2) * lambda[j];
                j += 1;
            }
        }
    }
    Some((x, z))
}

/// How [`solve`]'s sweeps end when they do not certify the island.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Finish {
    /// Polish with the Newton step of the states the sweeps settled (after
    /// 18 sweeps, every 40 after, and at `max_sweeps`), then sweep on from the best
    /// polished point.
    Polish,
    /// No polish: stop as soon as the certificate after s sweeps exceeds
    /// [`GIVE_UP`] × tolerance / √s (checked after 1, 4, 8 sweeps, then every 10), so
    /// that an island the sweeps will not certify soon goes on to ADMM after one sweep.
    GiveUp,
}

/// The bound of [`Finish::GiveUp`]: on the frictionless thesis heap N = 3000 at a tolerance
/// of 1e-1, the certificate after s = 1, 2, 4, 8 sweeps of the 368 big islands that the
/// sweeps certified was at most 9.9, 8.7, 6.0 and 3.8 times the tolerance; the islands that
/// 64 sweeps did not certify were 17-90 times it after one sweep at 1e-2 and 60-1300 times
/// at 1e-3 (session 50, docs/benchmarks.md).
pub const GIVE_UP: f64 = 16.0;

/// Islands swept with [`Finish::GiveUp`] that have at least this many contacts are swept
/// in two halves ([`Halves`]), on two threads when a rayon worker is idle.
pub const HALVES_MIN_CONTACTS: usize = BIG_ISLAND_CONTACTS;

/// Solve the conic program `cq` of an island (assembled by [`crate::solver::friction::assemble_cones`]
/// from `bodies`, `contacts`) by non-linear Gauss–Seidel, started from `initial` (one per
/// contact), until the certificate holds to `tolerance`, `max_sweeps` sweeps are done, or
/// `finish` gives up. With [`Finish::GiveUp`] an island of [`HALVES_MIN_CONTACTS`] or more
/// is swept in two halves ([`Halves`]; the same answer on one thread or two).
pub fn solve(
    cq: &ConeQp,
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    initial: &[ContactImpulse],
    tolerance: f64,
    max_sweeps: u32,
    finish: Finish,
) -> NlgsOutcome {
    solve_halved(cq, bodies, contacts, initial, tolerance, max_sweeps, finish, None)
}

/// [`solve`], with the island's [`Halves`] when the caller has made them already.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_halved(
    cq: &ConeQp,
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    initial: &[ContactImpulse],
    tolerance: f64,
    max_sweeps: u32,
    finish: Finish,
    made: Option<&Halves>,
) -> NlgsOutcome {
    let polish = finish == Finish::Polish;
    let n = bodies.len();
    assert_eq!(cq.qp.n(), 6 * n);
    assert_eq!(contacts.len(), cq.normal_rows.len());
    assert_eq!(initial.len(), contacts.len());
    let cut = (!polish && contacts.len() >= HALVES_MIN_CONTACTS)
        .then(|| Halves::made_or_of(made, bodies, contacts));
    let halves: Option<&Halves> = cut.as_deref();
    // The sweeps' numbering of bodies and contacts (the given one without halves).
    let body_number = |b: usize| halves.map_or(b, |h| h.number[b]);
    let body_at = |b: usize| halves.map_or(b, |h| h.bodies[b]);
    let contact_at = |t: usize| halves.map_or(t, |h| h.contacts[t]);
    // (2M)⁻¹ per body.
    let inv_mass: Vec<f64> = bodies.iter().map(|b| 0.5 / b.mass).collect();
    let inv_inertia: Vec<Matrix3<f64>> = bodies
        .iter()
        .map(|b| (b.inertia * 2.0).try_inverse().unwrap_or_else(Matrix3::zeros))
        .collect();
    let apply_inv = |b: usize, jt: &M63| -> M63 {
        let mut g = M63::zeros();
        for a in 0..3 {
            for c in 0..3 {
                g[(c, a)] = inv_mass[b] * jt[(c, a)];
            }
            let ang = inv_inertia[b] * Vector3::new(jt[(3, a)], jt[(4, a)], jt[(5, a)]);
            for c in 0..3 {
                g[(3 + c, a)] = ang[c];
            }
        }
        g
    };
    let make_row = |t: usize| {
        let k = contact_at(t);
        let c = &contacts[k];
        let (t1, t2) = cq.tangents[k];
        let basis = [c.normal, t1, t2];
        let ji = jacobian(&(c.point - bodies[c.i].pos), basis, 1.0);
        let gi = apply_inv(c.i, &ji.transpose());
        let (jj, gj) = match c.j {
            Some(j) => {
                let jj = jacobian(&(c.point - bodies[j].pos), basis, -1.0);
                (jj, apply_inv(j, &jj.transpose()))
            }
            None => (SMatrix::zeros(), M63::zeros()),
        };
        let w = ji * gi + jj * gj;
        let w = 0.5 * (w + w.transpose());
        let kappa = Vector3::new(c.kappa_n, c.kappa_t, c.kappa_t);
        let b = (Matrix3::identity() + w * Matrix3::from_diagonal(&kappa))
            .try_inverse()
            .unwrap_or_else(Matrix3::identity);
        let bw = b * w;
        let bw = 0.5 * (bw + bw.transpose());
        let row = cq.normal_rows[k];
        let mu = cq.mu[k];
        let r = if mu > 0.0 {
            Vector3::new(cq.qp.r[row], cq.qp.r[row + 1], cq.qp.r[row + 2])
        } else {
            Vector3::new(cq.qp.r[row], 0.0, 0.0)
        };
        let (i, j) = (body_number(c.i), c.j.map(body_number));
        Row { i, j, ji, jj, gi, gj, w, b, bw, kappa, mu, r, row, tangents: (t1, t2) }
    };
    // Rows in sweep order, made by rayon's threads when the island is swept in halves.
    let rows: Vec<Row> = if halves.is_some() {
        let mut rows = Vec::new();
        (0..contacts.len())
            .into_par_iter()
            .with_min_len(256)
            .map(make_row)
            .collect_into_vec(&mut rows);
        rows
    } else {
        (0..contacts.len()).map(make_row).collect()
    };
    // x_free = (2M)⁻¹ p, in the sweeps' numbering.
    let mut x_free = vec![0.0; 6 * n];
    for nb in 0..n {
        let (b, o, ob) = (body_at(nb), 6 * nb, 6 * body_at(nb));
        for a in 0..3 {
            x_free[o + a] = inv_mass[b] * cq.qp.p[ob + a];
        }
        let ang = inv_inertia[b] * Vector3::new(cq.qp.p[ob + 3], cq.qp.p[ob + 4], cq.qp.p[ob + 5]);
        for a in 0..3 {
            x_free[o + 3 + a] = ang[a];
        }
    }
    // Percussions Λ_k (contact frame) from the warm start; duals z_k from the sweeps.
    let lambda: Vec<Vector3<f64>> = rows
        .iter()
        .enumerate()
        .map(|(t, r)| {
            let w = &initial[contact_at(t)];
            Vector3::new(w.normal, w.tangential.dot(&r.tangents.0), w.tangential.dot(&r.tangents.1))
        })
        .collect();
    let problem =
        Sweeps { cq, rows: &rows, halves, x_free: &x_free, tolerance, max_sweeps, polish };
    let (x, lambda, z, certificate, solved, sweeps, polishes) = match halves {
        Some(_) => Pair::solve(|pair| problem.run(lambda, pair)),
        None => problem.run(lambda, None),
    };
    // Back to the given numbering.
    let mut impulses = vec![ContactImpulse::default(); rows.len()];
    let mut normal = vec![0.0; rows.len()];
    let mut friction = vec![Vector3::zeros(); rows.len()];
    for (t, r) in rows.iter().enumerate() {
        let (k, l, zk) = (contact_at(t), &lambda[t], &z[t]);
        impulses[k] =
            ContactImpulse { normal: l.x, tangential: r.tangents.0 * l.y + r.tangents.1 * l.z };
        normal[k] = zk.x;
        friction[k] = (r.tangents.0 * zk.y + r.tangents.1 * zk.z) * r.mu;
    }
    NlgsOutcome {
        solution: ContactSolution {
            z: problem.z_rows(&z),
            x,
            impulses,
            normal,
            friction,
            certificate,
            solved,
        },
        sweeps,
        polishes,
    }
}

/// What [`solve`]'s sweeps run on: the rows in sweep order and x_free in the sweeps'
/// numbering of bodies (see [`Halves`]).
struct Sweeps<'a> {
    cq: &'a ConeQp,
    rows: &'a [Row],
    halves: Option<&'a Halves>,
    x_free: &'a [f64],
    tolerance: f64,
    max_sweeps: u32,
    polish: bool,
}

/// x, Λ, z (in sweep order), the certificate, whether it holds, sweeps and polishes.
type SweepsOutcome = (Vec<f64>, Vec<Vector3<f64>>, Vec<Vector3<f64>>, Certificate, bool, u32, u32);

impl Sweeps<'_> {
    /// z in the rows of the conic program.
    fn z_rows(&self, z: &[Vector3<f64>]) -> Vec<f64> {
        let mut v = vec![0.0; self.cq.qp.m()];
        for (r, zk) in self.rows.iter().zip(z) {
            v[r.row] = zk.x;
            if r.mu > 0.0 {
                v[r.row + 1] = zk.y;
                v[r.row + 2] = zk.z;
            }
        }
        v
    }

    /// x in the given numbering of bodies from x in the sweeps' numbering.
    fn given<'x>(&self, xs: &'x [f64]) -> Cow<'x, [f64]> {
        let Some(h) = self.halves else { return Cow::Borrowed(xs) };
        let mut x = vec![0.0; xs.len()];
        for (nb, &b) in h.bodies.iter().enumerate() {
            x[6 * b..6 * b + 6].copy_from_slice(&xs[6 * nb..6 * nb + 6]);
        }
        Cow::Owned(x)
    }

    /// x from the percussions, in the sweeps' numbering: x_free plus each row's
    /// (2M)⁻¹J_kᵀΛ_k, in sweep order (the halves' rows on `pair` when there is one).
    fn rebuild(&self, lambda: &[Vector3<f64>], pair: Option<&Pair>) -> Vec<f64> {
        let mut x = self.x_free.to_vec();
        let mut start = 0;
        if let Some(h) = self.halves {
            let [e0, e1] = h.ends;
            let (x0, x1) = x.split_at_mut(6 * h.first_bodies);
            let parts = [
                (&self.rows[..e0], &lambda[..e0], x0, 0),
                (&self.rows[e0..e1], &lambda[e0..e1], x1, h.first_bodies),
            ];
            both(pair, parts, |(rows, l, x, first)| {
                for (r, l) in rows.iter().zip(l.iter()) {
                    r.apply(x, *first, l);
                }
            });
            start = e1;
        }
        for (r, l) in self.rows[start..].iter().zip(&lambda[start..]) {
            r.apply(&mut x, 0, l);
        }
        x
    }

    /// One sweep, forward or backward, in sweep order: with halves, the halves' rows (on
    /// `pair` when there is one) and then the rows across the cut, or the reverse.
    fn sweep(
        &self,
        lambda: &mut [Vector3<f64>],
        z: &mut [Vector3<f64>],
        x: &mut [f64],
        forward: bool,
        pair: Option<&Pair>,
    ) {
        let Some(h) = self.halves else {
            sweep(self.rows, lambda, z, x, 0, forward);
            return;
        };
        let [e0, e1] = h.ends;
        if !forward {
            sweep(&self.rows[e1..], &mut lambda[e1..], &mut z[e1..], x, 0, forward);
        }
        {
            let (l0, l1) = lambda[..e1].split_at_mut(e0);
            let (z0, z1) = z[..e1].split_at_mut(e0);
            let (x0, x1) = x.split_at_mut(6 * h.first_bodies);
            let parts = [
                (&self.rows[..e0], l0, z0, x0, 0),
                (&self.rows[e0..e1], l1, z1, x1, h.first_bodies),
            ];
            both(pair, parts, |(rows, l, z, x, first)| sweep(rows, l, z, x, *first, forward));
        }
        if forward {
            sweep(&self.rows[e1..], &mut lambda[e1..], &mut z[e1..], x, 0, forward);
        }
    }

    /// Sweep from the percussions `lambda` (in sweep order) until the certificate holds,
    /// the sweeps are done or the finish gives up.
    fn run(&self, mut lambda: Vec<Vector3<f64>>, pair: Option<&Pair>) -> SweepsOutcome {
        let (cq, rows, tolerance, max_sweeps, polish) =
            (self.cq, self.rows, self.tolerance, self.max_sweeps, self.polish);
        let mut z: Vec<Vector3<f64>> = vec![Vector3::zeros(); rows.len()];
        let mut x = self.rebuild(&lambda, pair);
        let mut certificate = Certificate {
            stationarity: f64::INFINITY,
            primal: f64::INFINITY,
            dual: f64::INFINITY,
            complementarity: f64::INFINITY,
        };
        let mut sweeps = 0;
        let mut polishes = 0;
        let mut solved = false;
        let mut next_check = 1;
        let nr = rows.len();
        let certifier = Certifier::new(&cq.qp, &cq.cones);
        while sweeps < max_sweeps {
            self.sweep(&mut lambda, &mut z, &mut x, sweeps % 2 == 0, pair);
            sweeps += 1;
            if sweeps == next_check || sweeps == max_sweeps {
                // Giving up, the check after two sweeps is skipped (a check costs about
                // three sweeps of a big island on two threads, as estimated in
                // docs/benchmarks.md, Session 51).
                next_check = match sweeps {
                    1 if !polish => 4,
                    s if s < 8 => 2 * s,
                    s => s + 10,
                };
                x = self.rebuild(&lambda, pair);
                certificate = certifier.certify(&self.given(&x), &self.z_rows(&z));
                if certificate.holds(tolerance) {
                    solved = true;
                    break;
                }
                if !polish && certificate.worst() > GIVE_UP * tolerance / f64::from(sweeps).sqrt() {
                    break;
                }
                // Polish: once the sweeps have settled the contact states, solve the
                // equality-constrained QP of those states (a Newton step), updating the states
                // from its answer a few times.
                // (Only without halves: the polish reads x and the contacts in the given
                // numbering.)
                if polish
                    && (sweeps >= POLISH_AFTER
                        && (sweeps - POLISH_AFTER).is_multiple_of(POLISH_EVERY)
                        || sweeps == max_sweeps)
                {
                    let s_of = |x: &[f64]| -> Vec<Vector3<f64>> {
                        rows.iter()
                            .map(|r| {
                                let y = r.velocity(x, 0);
                                if r.mu > 0.0 {
                                    Vector3::new(y.x, r.mu * y.y, r.mu * y.z) - r.r
                                } else {
                                    Vector3::new(y.x - r.r.x, 0.0, 0.0)
                                }
                            })
                            .collect()
                    };
                    let mu: Vec<f64> = rows.iter().map(|r| r.mu).collect();
                    let s0 = s_of(&x);
                    let v = s0
                        .iter()
                        .chain(rows.iter().map(|r| &r.r))
                        .fold(0.0f64, |m, s| m.max(s.amax()));
                    let mut st = states(&s0, &mu, POLISH_EPS, v);
                    let (mut xc, mut zc, mut sc) = (x.clone(), z.clone(), s0);
                    let mut best = None;
                    for _ in 0..POLISH_ROUNDS {
                        let mut it = 0;
                        let Some((xp, zp)) = polish_once(cq, &st, &xc, &zc, &sc, 1e-6 * v, &mut it)
                        else {
                            break;
                        };
                        polishes += 1;
                        let c = certifier.certify(&xp, &self.z_rows(&zp));
                        let sp = s_of(&xp);
                        if c.holds(tolerance) {
                            for (k, r) in rows.iter().enumerate() {
                                lambda[k] =
                                    r.dz(&zp[k]) - r.kappa.component_mul(&r.velocity(&xp, 0));
                            }
                            (x, z, certificate, solved) = (xp, zp, c, true);
                            break;
                        }
                        // Keep the best polished point: the sweeps go on from it (they spread the
                        // reactions of redundant contacts into their cones while x stays put).
                        if best.as_ref().is_none_or(
                            |b: &(Certificate, Vec<f64>, Vec<Vector3<f64>>)| {
                                c.worst() < b.0.worst()
                            },
                        ) {
                            best = Some((c, xp.clone(), zp.clone()));
                        }
                        let next: Vec<State> = st
                            .iter()
                            .zip(zp.iter().zip(&sp))
                            .zip(&mu)
                            .map(|((state, (zk, sk)), &mu)| {
                                let zt = (zk.y * zk.y + zk.z * zk.z).sqrt();
                                let stt = (sk.y * sk.y + sk.z * sk.z).sqrt();
                                match *state {
                                    State::Normal | State::Slide(..) | State::Stick
                                        if zk.x < 0.0 =>
                                    {
                                        State::Open
                                    }
                                    State::Stick if zt > zk.x => State::Slide(zk.y / zt, zk.z / zt),
                                    State::Slide(..) if stt > 1e-6 * v => {
                                        State::Slide(-sk.y / stt, -sk.z / stt)
                                    }
                                    State::Open if sk.x < -stt && mu <= 0.0 => State::Normal,
                                    State::Open if sk.x < stt => State::Stick,
                                    s => s,
                                }
                            })
                            .collect();
                        if next == st {
                            break;
                        }
                        st = next;
                        (xc, zc, sc) = (xp, zp, sp);
                    }
                    if solved {
                        break;
                    }
                    if let Some((cb, xb, zb)) = best.filter(|b| b.0.worst() < certificate.worst()) {
                        for (k, r) in rows.iter().enumerate() {
                            lambda[k] = r.dz(&zb[k]) - r.kappa.component_mul(&r.velocity(&xb, 0));
                        }
                        (x, z) = (xb, zb);
                        certificate = cb;
                        next_check = sweeps + 2;
                    }
                }
            }
        }
        if nr == 0 {
            x = self.rebuild(&lambda, pair);
            certificate = certify(&cq.qp, &cq.cones, &x, &[]);
            solved = certificate.holds(tolerance);
        }
        let x = self.given(&x).into_owned();
        (x, lambda, z, certificate, solved, sweeps, polishes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cone solve satisfies the 3-D complementarity conditions in each of its cases.
    #[test]
    fn cone3_solution_is_complementary() {
        let a_mat = Matrix3::new(2.0, 0.3, -0.2, 0.3, 1.5, 0.1, -0.2, 0.1, 1.0);
        for a in [
            Vector3::new(1.0, 0.2, 0.3),   // open
            Vector3::new(-1.0, 0.1, 0.05), // stick
            Vector3::new(-0.2, 2.0, -1.0), // slide
            Vector3::new(0.1, -3.0, 0.5),  // slide
        ] {
            let z = solve_cone3(&a_mat, &a);
            let s = a_mat * z + a;
            let soc = |v: &Vector3<f64>| v.x + 1e-12 >= (v.y * v.y + v.z * v.z).sqrt();
            assert!(soc(&z) && soc(&s), "a = {a:?}: z = {z:?}, s = {s:?}");
            assert!(z.dot(&s).abs() < 1e-9 * (1.0 + z.norm() * s.norm()), "zᵀs = {}", z.dot(&s));
        }
    }

    /// −a inside the cone (the sliding arc is the whole circle) with an ill-conditioned A:
    /// f(φ) has two local minima, at φ ≈ −2.10 (the lower) and φ ≈ 1.34, and 16 samples
    /// found the upper one. The solve agrees with a brute-force minimum over 10⁵ angles.
    #[test]
    fn cone3_finds_the_lower_of_two_sliding_minima() {
        let a_mat = Matrix3::new(
            0.0029642344579096282,
            0.001301322122299846,
            0.0012705829927573036,
            0.001301322122299846,
            0.0022348485276012043,
            -0.00026061382116822785,
            0.0012705829927573036,
            -0.00026061382116822785,
            0.0010180853216611517,
        );
        let a = Vector3::new(-0.00996302479185258, -0.003221090402908069, -0.00430259561483997);
        let objective = |z: &Vector3<f64>| 0.5 * z.dot(&(a_mat * z)) + a.dot(z);
        let brute = (0..100_000)
            .map(|k| {
                let phi = -std::f64::consts::PI + k as f64 * 2.0 * std::f64::consts::PI / 1e5;
                let d = Vector3::new(1.0, phi.cos(), phi.sin());
                let sigma = (-a.dot(&d) / d.dot(&(a_mat * d))).max(0.0);
                objective(&(d * sigma))
            })
            .fold(f64::INFINITY, f64::min);
        let z = solve_cone3(&a_mat, &a);
        let phi = z.z.atan2(z.y);
        assert!((phi + 2.10).abs() < 0.01, "φ = {phi}");
        assert!(objective(&z) <= brute + 1e-12 * brute.abs(), "{} > {brute}", objective(&z));
    }

    /// The local cone solve is exact to roundoff on 2·10⁵ random problems, including a
    /// nearly in the cone (the sliding arc is then narrow) and −a nearly on its boundary.
    #[test]
    fn cone3_is_exact_on_random_problems() {
        let mut seed = 12345u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let mut worst: f64 = 0.0;
        for it in 0..200_000 {
            let l = Matrix3::new(
                1.0 + rnd().abs(),
                0.0,
                0.0,
                rnd(),
                0.3 + rnd().abs(),
                0.0,
                rnd(),
                rnd(),
                0.1 + rnd().abs(),
            );
            let mut a_mat = l * l.transpose() * 1e-3;
            if it % 2 == 0 {
                let d = Matrix3::from_diagonal(&Vector3::new(1.0, 0.5, 0.5));
                a_mat = d * a_mat * d;
            }
            let mut a = Vector3::new(rnd(), rnd(), rnd()) * 1e-2;
            let at = (a.y * a.y + a.z * a.z).sqrt();
            if it % 3 == 0 {
                a.x = -at * (1.0 - 1e-3 * rnd().abs());
            }
            if it % 5 == 0 {
                a.x = at * (1.0 - 1e-3 * rnd().abs());
            }
            let z = solve_cone3(&a_mat, &a);
            let s = a_mat * z + a;
            let out = |v: &Vector3<f64>| ((v.y * v.y + v.z * v.z).sqrt() - v.x).max(0.0);
            let scale = a.norm();
            let r = (out(&s) / scale)
                .max(out(&z) / z.norm().max(1e-300))
                .max(z.dot(&s).abs() / (z.norm() * scale).max(1e-300));
            worst = worst.max(r);
        }
        assert!(worst < 1e-11, "worst relative residual {worst:e}");
    }
}
