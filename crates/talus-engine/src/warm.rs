//! The warm-started solver of the jump QP `min ½xᵀHx − pᵀx s.t. Cx ≥ r`.
//!
//! Augmented Lagrangian with a semismooth Newton inner solve (the scheme of QPALM,
//! specialised), and an exact solve on the identified active set ("polishing"). For
//! multipliers λ ≥ 0 and per-constraint penalties ρ_k,
//!
//! ```text
//! x(λ) = argmin ½xᵀHx − pᵀx + Σ_k (1/2ρ_k) max(0, λ_k − ρ_k(C_k x − r_k))²
//! λ ← max(0, λ − ρ(C x(λ) − r))
//! ```
//!
//! * Penalties: ρ_k = σ m_k with m_k = 1/Σ_j C_kj²/H_jj an effective mass of constraint k,
//!   so that ρ C_Aᵀ C_A is σ times H's own scale whatever the masses, sizes and lever arms
//!   (a single ρ tied to H's largest entry made K so stiff, for 10 m blocks, that the
//!   penalty term's roundoff alone exceeded the stopping tolerance: every QP of the default
//!   site fell back). σ grows ×10 per outer iteration from 10² to 10⁷: Newton needs few
//!   steps for small σ far from the solution, the multipliers converge fast for large σ.
//! * Inner problem: a strongly convex piecewise quadratic. Newton steps with the
//!   generalised Hessian K = H + Σ_{k∈A} ρ_k c_k c_kᵀ (A = constraints whose shifted
//!   multiplier is positive), factorised by faer's sparse Cholesky on a pattern fixed for
//!   the whole QP (H ∪ CᵀC, symbolic factorisation once), exact line search on the piecewise
//!   linear derivative. A full step that keeps the active set it was computed with lands on
//!   the exact minimiser, which ends the inner loop.
//! * Polishing: with A = {λ_k > 0}, the equalities H x − C_Aᵀλ_A = p, C_A x = r_A are
//!   solved by iterative refinement with the factor of K (the regularised KKT system's
//!   Schur complement; redundant rows, e.g. four corners of a face on a plane, are
//!   harmless). Residuals are measured without the penalty, so the result meets the KKT
//!   conditions to roundoff; it is accepted only when every multiplier is ≥ 0, every
//!   constraint holds and the KKT residuals are below the tolerance (relative to max |p|
//!   and max |r|). Interior-point solutions at a 1e-9 tolerance are less accurate than this
//!   (their complementarity gap leaves x off by up to ~1e-6 relative on degenerate QPs).
//! * Warm start: λ of the previous step's contacts with the same [`ContactKey`]. The first
//!   thing tried is polishing on the previous active set: when the contacts persist this is
//!   the whole solve (one factorisation, two or three triangular solves).
//!
//! The iteration limit counts linear solves. A solve that does not converge within it is
//! handed to Clarabel and recorded as a fallback (diagnostics column `fallback`).

use crate::assembly::Qp;
use crate::solvers::{QpOutcome, SolverUsed, kkt_residuals, solve_clarabel};
use faer::linalg::solvers::SolveCore;
use faer::sparse::linalg::solvers::{Llt, SymbolicLlt};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, MatMut, Side};
use std::collections::HashMap;

/// Identity of a contact across steps: block id, other body (kind, id), and the contact
/// point's cell in the block's frame.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ContactKey {
    pub id: u32,
    pub other: (u8, u64),
    pub cell: [i64; 3],
}

/// Multipliers of the previous step, by contact key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmStart {
    lambda: HashMap<ContactKey, f64>,
}

impl WarmStart {
    /// Initial multipliers for these contacts (0 for new ones).
    pub fn initial_lambda(&self, keys: &[ContactKey]) -> Vec<f64> {
        keys.iter().map(|k| self.lambda.get(k).copied().unwrap_or(0.0)).collect()
    }
    /// Remember the multipliers of a solved island.
    pub fn record(&mut self, keys: &[ContactKey], lambda: &[f64]) {
        for (k, l) in keys.iter().zip(lambda) {
            self.lambda.insert(*k, *l);
        }
    }
    /// Entries sorted by key (for checkpoints).
    pub fn entries(&self) -> Vec<(ContactKey, f64)> {
        let mut v: Vec<_> = self.lambda.iter().map(|(k, l)| (*k, *l)).collect();
        v.sort_by_key(|a| a.0);
        v
    }
    /// From checkpointed entries.
    pub fn from_entries(entries: &[(ContactKey, f64)]) -> Self {
        WarmStart { lambda: entries.iter().copied().collect() }
    }
}

/// K = H + ρ Σ_{k∈A} c_k c_kᵀ on a fixed upper-triangular pattern.
struct KPattern {
    colptr: Vec<usize>,
    rowval: Vec<usize>,
    /// Slot of each H entry (in h_upper's order).
    h_slot: Vec<usize>,
    /// Per constraint: (slot, a, b) of c_a c_b products (a, b index the row entries).
    c_slots: Vec<Vec<(usize, u8, u8)>>,
    /// Rows of C: (column, value).
    rows: Vec<Vec<(usize, f64)>>,
}

impl KPattern {
    fn new(qp: &Qp) -> Self {
        let n = qp.n();
        let h = &qp.h_upper;
        let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); qp.m()];
        for col in 0..qp.c.n {
            for k in qp.c.colptr[col]..qp.c.colptr[col + 1] {
                rows[qp.c.rowval[k]].push((col, qp.c.nzval[k]));
            }
        }
        // Entries (col, row) of the pattern.
        let mut entries: Vec<(usize, usize)> = Vec::new();
        for col in 0..n {
            for k in h.colptr[col]..h.colptr[col + 1] {
                entries.push((col, h.rowval[k]));
            }
            entries.push((col, col));
        }
        for row in &rows {
            for &(ca, _) in row {
                for &(cb, _) in row {
                    if ca <= cb {
                        entries.push((cb, ca));
                    }
                }
            }
        }
        entries.sort_unstable();
        entries.dedup();
        let mut colptr = vec![0usize; n + 1];
        let mut rowval = Vec::with_capacity(entries.len());
        for &(c, r) in &entries {
            colptr[c + 1] += 1;
            rowval.push(r);
        }
        for c in 0..n {
            colptr[c + 1] += colptr[c];
        }
        let slot = |col: usize, row: usize| -> usize {
            let s = &rowval[colptr[col]..colptr[col + 1]];
            colptr[col] + s.binary_search(&row).expect("pattern entry")
        };
        let mut h_slot = Vec::with_capacity(h.nzval.len());
        for col in 0..n {
            for k in h.colptr[col]..h.colptr[col + 1] {
                h_slot.push(slot(col, h.rowval[k]));
            }
        }
        let c_slots = rows
            .iter()
            .map(|row| {
                let mut v = Vec::new();
                for (a, &(ca, _)) in row.iter().enumerate() {
                    for (b, &(cb, _)) in row.iter().enumerate() {
                        if ca <= cb {
                            v.push((slot(cb, ca), a as u8, b as u8));
                        }
                    }
                }
                v
            })
            .collect();
        KPattern { colptr, rowval, h_slot, c_slots, rows }
    }

    fn values(&self, qp: &Qp, rho: &[f64], active: &[bool]) -> Vec<f64> {
        let mut v = vec![0.0; self.rowval.len()];
        for (k, &s) in self.h_slot.iter().enumerate() {
            v[s] += qp.h_upper.nzval[k];
        }
        for (k, slots) in self.c_slots.iter().enumerate() {
            if !active[k] {
                continue;
            }
            let row = &self.rows[k];
            for &(s, a, b) in slots {
                v[s] += rho[k] * row[a as usize].1 * row[b as usize].1;
            }
        }
        v
    }
}

/// Solve warm-started from `lambda0`; falls back to Clarabel (tolerance
/// `fallback_tolerance`) when the KKT conditions are not met within `max_iterations`
/// Newton steps.
pub fn solve_warm(
    qp: &Qp,
    lambda0: &[f64],
    tolerance: f64,
    max_iterations: u32,
    fallback_tolerance: f64,
) -> QpOutcome {
    match try_solve(qp, lambda0, tolerance, max_iterations) {
        Some(o) => o,
        None => {
            let mut o = solve_clarabel(qp, fallback_tolerance, 200);
            o.fallback = true;
            o
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_abs(a: &[f64]) -> f64 {
    a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// Penalty of the augmented Lagrangian relative to each constraint's effective mass
/// (1/ρ_k is the regularisation of the KKT system the Newton steps solve).
const SIGMA_POLISH: f64 = 1e6;
/// σ of the first ALM iteration; multiplied by 10 at each outer iteration up to
/// `SIGMA_MAX` (small σ: few Newton steps far from the solution; large σ: fast multiplier
/// convergence near it).
const SIGMA_START: f64 = 1e2;
const SIGMA_MAX: f64 = 1e7;
/// Refinement steps of one polishing attempt.
const POLISH_STEPS: u32 = 8;

/// The factorisation of K = H + Σ_{k∈A} ρ_k c_k c_kᵀ for one active set A.
struct Factor<'a> {
    qp: &'a Qp,
    pat: KPattern,
    symbolic: SymbolicLlt<usize>,
    /// Σ_j c_kj² / H_jj per constraint (an inverse effective mass).
    inv_mass: Vec<f64>,
    /// ρ_k = σ / inv_mass_k.
    rho: Vec<f64>,
    cache: Option<(Vec<bool>, Llt<usize, f64>)>,
}

impl<'a> Factor<'a> {
    fn new(qp: &'a Qp) -> Option<Self> {
        let n = qp.n();
        let pat = KPattern::new(qp);
        let sym = SymbolicSparseColMatRef::new_checked(n, n, &pat.colptr, None, &pat.rowval);
        let symbolic = SymbolicLlt::try_new(sym, Side::Upper).ok()?;
        // diag(H), for ρ_k = σ / Σ_j c_kj² / H_jj (σ times an effective mass of contact k):
        // K − H is then σ times H's scale whatever the masses, sizes and lever arms.
        let h = &qp.h_upper;
        let mut hdiag = vec![0.0f64; n];
        for (col, d) in hdiag.iter_mut().enumerate() {
            for k in h.colptr[col]..h.colptr[col + 1] {
                if h.rowval[k] == col {
                    *d += h.nzval[k];
                }
            }
        }
        let inv_mass: Vec<f64> = pat
            .rows
            .iter()
            .map(|row| {
                let s: f64 = row.iter().map(|&(c, v)| v * v / hdiag[c].max(1e-300)).sum();
                if s > 0.0 { s } else { 1.0 }
            })
            .collect();
        let rho = vec![0.0; inv_mass.len()];
        let mut f = Factor { qp, pat, symbolic, inv_mass, rho, cache: None };
        f.set_sigma(SIGMA_POLISH);
        Some(f)
    }

    /// Set σ (the factorisation is redone on the next solve).
    fn set_sigma(&mut self, sigma: f64) {
        self.rho = self.inv_mass.iter().map(|s| sigma / s).collect();
        self.cache = None;
    }

    /// Solve K_A d = rhs in place; `false` when the factorisation fails.
    fn solve(&mut self, active: &[bool], rhs: &mut [f64]) -> bool {
        let n = self.qp.n();
        let reuse = matches!(&self.cache, Some((a, _)) if a == active);
        if !reuse {
            let sym = SymbolicSparseColMatRef::new_checked(
                n,
                n,
                &self.pat.colptr,
                None,
                &self.pat.rowval,
            );
            let vals = self.pat.values(self.qp, &self.rho, active);
            let mat = SparseColMatRef::new(sym, &vals);
            match Llt::try_new_with_symbolic(self.symbolic.clone(), mat, Side::Upper) {
                Ok(llt) => self.cache = Some((active.to_vec(), llt)),
                Err(_) => return false,
            }
        }
        let Some((_, llt)) = self.cache.as_ref() else { return false };
        llt.solve_in_place_with_conj(Conj::No, MatMut::from_column_major_slice_mut(rhs, n, 1));
        true
    }
}

/// Scales of the KKT residuals: (stationarity, constraints).
pub(crate) fn scales(qp: &Qp) -> (f64, f64) {
    let h = &qp.h_upper;
    let hmax = max_abs(&h.nzval).max(1e-300);
    (max_abs(&qp.p).max(hmax * 1e-3), max_abs(&qp.r).max(1e-3))
}

/// Whether (x, λ) meets the KKT conditions to `tolerance` relative to the data's scales.
pub(crate) fn kkt_ok(qp: &Qp, x: &[f64], lambda: &[f64], tolerance: f64) -> Option<(f64, f64)> {
    let (pscale, rscale) = scales(qp);
    let (prim, dual, comp, lmin) = kkt_residuals(qp, x, lambda);
    let ok = prim <= tolerance * rscale
        && dual <= tolerance * pscale
        && comp <= tolerance * rscale * pscale
        && lmin >= 0.0;
    ok.then_some((prim / rscale, dual / pscale))
}

/// A candidate (x, λ).
type Primal = (Vec<f64>, Vec<f64>);

/// Polishing: the equality-constrained QP on the active set A = {λ_k > 0}
/// (H x − C_Aᵀ λ_A = p, C_A x = r_A) by iterative refinement with the regularised
/// factor K_A = H + C_Aᵀ diag(ρ) C_A. The residuals are evaluated without the penalty, so
/// the result is exact to roundoff in the data's units; a wrong active set shows up as a
/// negative multiplier or a violated inactive constraint and the result is refused.
fn polish(
    f: &mut Factor,
    lambda_alm: &[f64],
    x0: &[f64],
    tolerance: f64,
    iterations: &mut u32,
) -> Result<Primal, Option<Primal>> {
    let qp = f.qp;
    let (n, m) = (qp.n(), qp.m());
    let (pscale, rscale) = scales(qp);
    let active: Vec<bool> = lambda_alm.iter().map(|l| *l > 0.0).collect();
    let mut x = x0.to_vec();
    let mut lambda: Vec<f64> =
        lambda_alm.iter().zip(&active).map(|(l, a)| if *a { *l } else { 0.0 }).collect();
    let mut previous = f64::INFINITY;
    for _ in 0..POLISH_STEPS {
        let hx = qp.h_mul(&x);
        let ctl = qp.ct_mul(&lambda);
        let res_d: Vec<f64> = (0..n).map(|i| qp.p[i] - hx[i] + ctl[i]).collect();
        let cx = qp.c_mul(&x);
        let res_p: Vec<f64> =
            (0..m).map(|k| if active[k] { qp.r[k] - cx[k] } else { 0.0 }).collect();
        let res = (max_abs(&res_d) / pscale).max(max_abs(&res_p) / rscale);
        // Refine down to roundoff: KKT residuals of 1e-10 still leave x up to ~1e-7 off on
        // ill-conditioned QPs (the error goes like √(complementarity / smallest mass)).
        // Refinement converges fast on a consistent active set; a stall above the tolerance
        // means the equalities contradict each other (A too large).
        if res <= 1e-15 || res > 0.25 * previous {
            break;
        }
        previous = res;
        // (H + C_Aᵀ R C_A) dx = res_d + C_Aᵀ R res_p ;  dλ_A = R (res_p − C_A dx).
        let rg: Vec<f64> = (0..m).map(|k| f.rho[k] * res_p[k]).collect();
        let crg = qp.ct_mul(&rg);
        let mut dx: Vec<f64> = (0..n).map(|i| res_d[i] + crg[i]).collect();
        *iterations += 1;
        if !f.solve(&active, &mut dx) {
            return Err(None);
        }
        let cdx = qp.c_mul(&dx);
        for i in 0..n {
            x[i] += dx[i];
        }
        for k in (0..m).filter(|&k| active[k]) {
            lambda[k] += f.rho[k] * (res_p[k] - cdx[k]);
        }
    }
    // A multiplier that is negative beyond roundoff means A is wrong; tiny ones are 0.
    let lscale = max_abs(&lambda).max(tolerance * pscale);
    let negative = lambda.iter().any(|l| *l < -tolerance * lscale);
    lambda.iter_mut().for_each(|l| *l = l.max(0.0));
    if !negative && kkt_ok(qp, &x, &lambda, tolerance).is_some() {
        Ok((x, lambda))
    } else {
        Err(Some((x, lambda)))
    }
}

/// The semismooth-Newton ALM with active-set polishing; `None` when it does not converge
/// within `max_iterations` linear solves.
pub fn try_solve(
    qp: &Qp,
    lambda0: &[f64],
    tolerance: f64,
    max_iterations: u32,
) -> Option<QpOutcome> {
    let (n, m) = (qp.n(), qp.m());
    let mut f = Factor::new(qp)?;
    let (pscale, _) = scales(qp);
    let mut lambda: Vec<f64> = lambda0.iter().map(|l| l.max(0.0)).collect();
    let mut x = vec![0.0; n];
    let mut iterations = 0u32;
    // Warm start: the previous step's active set is usually still right; polishing on it
    // is then the whole solve. Otherwise its iterate starts the ALM.
    match polish(&mut f, &lambda, &x, tolerance, &mut iterations) {
        Ok((xp, lp)) => {
            let (prim, dual, _, _) = kkt_residuals(qp, &xp, &lp);
            let (ps, rs) = scales(qp);
            return Some(QpOutcome {
                x: xp,
                lambda: lp,
                status: "Solved".into(),
                solved: true,
                iterations,
                r_prim: prim / rs,
                r_dual: dual / ps,
                solver: SolverUsed::Warm,
                fallback: false,
            });
        }
        Err(None) => return None,
        Err(Some((xp, lp))) => {
            x = xp;
            lambda = lp;
        }
    }
    let mut sigma = SIGMA_START / 10.0;
    let done = |x: Vec<f64>, lambda: Vec<f64>, iterations: u32| {
        let (prim, dual, _, _) = kkt_residuals(qp, &x, &lambda);
        let (ps, rs) = scales(qp);
        QpOutcome {
            x,
            lambda,
            status: "Solved".into(),
            solved: true,
            iterations,
            r_prim: prim / rs,
            r_dual: dual / ps,
            solver: SolverUsed::Warm,
            fallback: false,
        }
    };
    for _outer in 0..1000 {
        // Inner: minimise the augmented Lagrangian in x by semismooth Newton. It is a
        // piecewise quadratic: once a full step keeps the active set it was computed with,
        // x is its exact minimiser (to roundoff).
        sigma = (sigma * 10.0).min(SIGMA_MAX);
        f.set_sigma(sigma);
        let rho = f.rho.clone();
        let mut last: Option<Vec<bool>> = None;
        loop {
            let cx = qp.c_mul(&x);
            let shifted: Vec<f64> =
                (0..m).map(|k| lambda[k] - rho[k] * (cx[k] - qp.r[k])).collect();
            let active: Vec<bool> = shifted.iter().map(|s| *s > 0.0).collect();
            if last.as_ref() == Some(&active) {
                break;
            }
            let mu: Vec<f64> = shifted.iter().map(|s| s.max(0.0)).collect();
            let hx = qp.h_mul(&x);
            let ctmu = qp.ct_mul(&mu);
            let grad: Vec<f64> = (0..n).map(|i| hx[i] - qp.p[i] - ctmu[i]).collect();
            if max_abs(&grad) <= 0.1 * tolerance * pscale {
                break;
            }
            if iterations >= max_iterations {
                return None;
            }
            iterations += 1;
            let mut d: Vec<f64> = grad.iter().map(|g| -g).collect();
            if !f.solve(&active, &mut d) {
                return None;
            }
            // Exact line search: φ'(t) = dᵀ(H(x + t d) − p) − Σ (C_k d) max(0, s_k − ρ_k t C_k d).
            let hd = qp.h_mul(&d);
            let cd = qp.c_mul(&d);
            let a0 = dot(&d, &grad) + dot(&cd, &mu); // dᵀ(Hx − p)
            let a1 = dot(&d, &hd);
            let dphi = |t: f64| -> f64 {
                let mut v = a0 + t * a1;
                for k in 0..m {
                    let s = shifted[k] - rho[k] * t * cd[k];
                    if s > 0.0 {
                        v -= cd[k] * s;
                    }
                }
                v
            };
            let mut t = 1.0;
            if dphi(1.0) > 1e-14 * a1.max(1e-300) {
                // Breakpoints in (0, 1): φ' is increasing and piecewise linear.
                let mut bps: Vec<f64> = (0..m)
                    .filter(|&k| cd[k] != 0.0)
                    .map(|k| shifted[k] / (rho[k] * cd[k]))
                    .filter(|b| *b > 0.0 && *b < 1.0)
                    .collect();
                bps.sort_by(f64::total_cmp);
                let mut lo = 0.0;
                let mut dlo = dphi(0.0);
                for &b in bps.iter().chain(std::iter::once(&1.0)) {
                    let db = dphi(b);
                    if db >= 0.0 {
                        t = if db > dlo { lo + (b - lo) * (-dlo) / (db - dlo) } else { b };
                        break;
                    }
                    lo = b;
                    dlo = db;
                }
            }
            if t.is_nan() || t <= 0.0 {
                return None;
            }
            for i in 0..n {
                x[i] += t * d[i];
            }
            last = (t == 1.0).then_some(active);
        }
        if x.iter().any(|v| !v.is_finite()) {
            return None;
        }
        // Outer: multiplier update, then an exact solve on the identified active set.
        let cx = qp.c_mul(&x);
        for k in 0..m {
            lambda[k] = (lambda[k] - rho[k] * (cx[k] - qp.r[k])).max(0.0);
        }
        match polish(&mut f, &lambda, &x, tolerance, &mut iterations) {
            Ok((xp, lp)) => return Some(done(xp, lp, iterations)),
            Err(None) => return None,
            Err(Some(_)) => {}
        }
        if iterations >= max_iterations {
            return None;
        }
    }
    None
}
