//! The warm-started solver of the jump QP `min ½xᵀHx − pᵀx s.t. Cx ≥ r`.
//!
//! Proximal-free augmented Lagrangian with a semismooth Newton inner solve (the scheme of
//! QPALM, specialised): for multipliers λ ≥ 0 and penalty ρ,
//!
//! ```text
//! x(λ) = argmin ½xᵀHx − pᵀx + (1/2ρ) Σ_k max(0, λ_k − ρ(C_k x − r_k))²
//! λ ← max(0, λ − ρ(C x(λ) − r))
//! ```
//!
//! The inner problem is a strongly convex piecewise quadratic: Newton steps with the
//! generalised Hessian K = H + ρ C_Aᵀ C_A (A = constraints whose shifted multiplier is
//! positive), factorised by faer's sparse Cholesky on a pattern fixed for the whole QP
//! (H ∪ CᵀC, symbolic factorisation once), and an exact line search on the piecewise
//! linear derivative. Redundant constraints (four corners of a face on a plane) are
//! harmless: K stays positive definite. Consecutive steps' QPs differ little, so λ is
//! warm-started from the previous step's multipliers of the same contacts
//! ([`ContactKey`]); typically one or two outer iterations with one Newton step each.
//! A solve that does not meet the KKT tolerance within the iteration limit is handed to
//! Clarabel, and recorded as a fallback.

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

    fn values(&self, qp: &Qp, rho: f64, active: &[bool]) -> Vec<f64> {
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
                v[s] += rho * row[a as usize].1 * row[b as usize].1;
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

/// The semismooth-Newton ALM; `None` when it does not converge.
pub fn try_solve(
    qp: &Qp,
    lambda0: &[f64],
    tolerance: f64,
    max_iterations: u32,
) -> Option<QpOutcome> {
    let (n, m) = (qp.n(), qp.m());
    let pat = KPattern::new(qp);
    let sym = SymbolicSparseColMatRef::new_checked(n, n, &pat.colptr, None, &pat.rowval);
    let symbolic = SymbolicLlt::try_new(sym, Side::Upper).ok()?;
    let hmax = (0..n)
        .map(|c| {
            let h = &qp.h_upper;
            (h.colptr[c]..h.colptr[c + 1])
                .filter(|&k| h.rowval[k] == c)
                .map(|k| h.nzval[k])
                .sum::<f64>()
        })
        .fold(0.0, f64::max)
        .max(1e-300);
    let rho = 1e6 * hmax;
    // Scales of the KKT residuals.
    let pscale = qp.p.iter().fold(0.0f64, |a, v| a.max(v.abs())).max(hmax * 1e-3);
    let rscale = qp.r.iter().fold(0.0f64, |a, v| a.max(v.abs())).max(1e-3);
    let mut lambda: Vec<f64> = lambda0.iter().map(|l| l.max(0.0)).collect();
    let mut x = vec![0.0; n];
    let mut iterations = 0u32;
    let mut factor_cache: Option<(Vec<bool>, Llt<usize, f64>)> = None;
    for _outer in 0..50 {
        // Inner: minimise the augmented Lagrangian in x by semismooth Newton.
        loop {
            let cx = qp.c_mul(&x);
            let shifted: Vec<f64> = (0..m).map(|k| lambda[k] - rho * (cx[k] - qp.r[k])).collect();
            let active: Vec<bool> = shifted.iter().map(|s| *s > 0.0).collect();
            let mu: Vec<f64> = shifted.iter().map(|s| s.max(0.0)).collect();
            let hx = qp.h_mul(&x);
            let ctmu = qp.ct_mul(&mu);
            let grad: Vec<f64> = (0..n).map(|i| hx[i] - qp.p[i] - ctmu[i]).collect();
            let gnorm = grad.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            if gnorm <= 0.5 * tolerance * pscale {
                break;
            }
            if iterations >= max_iterations {
                return None;
            }
            iterations += 1;
            let reuse = matches!(&factor_cache, Some((a, _)) if *a == active);
            if !reuse {
                let vals = pat.values(qp, rho, &active);
                let mat = SparseColMatRef::new(sym, &vals);
                let llt = Llt::try_new_with_symbolic(symbolic.clone(), mat, Side::Upper).ok()?;
                factor_cache = Some((active.clone(), llt));
            }
            let (_, llt) = factor_cache.as_ref()?;
            let mut d: Vec<f64> = grad.iter().map(|g| -g).collect();
            llt.solve_in_place_with_conj(
                Conj::No,
                MatMut::from_column_major_slice_mut(&mut d, n, 1),
            );
            // Exact line search: φ'(t) = dᵀ(H(x + t d) − p) − Σ (C_k d) max(0, s_k − ρ t C_k d).
            let hd = qp.h_mul(&d);
            let cd = qp.c_mul(&d);
            let a0 = dot(&d, &grad) + dot(&cd, &mu); // dᵀ(Hx − p)
            let a1 = dot(&d, &hd);
            let dphi = |t: f64| -> f64 {
                let mut v = a0 + t * a1;
                for k in 0..m {
                    let s = shifted[k] - rho * t * cd[k];
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
                    .map(|k| shifted[k] / (rho * cd[k]))
                    .filter(|b| *b > 0.0 && *b < 1.0)
                    .collect();
                bps.sort_by(f64::total_cmp);
                let mut lo = 0.0;
                let mut dlo = dphi(0.0);
                t = 1.0;
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
            if !(t > 0.0) {
                return None;
            }
            for i in 0..n {
                x[i] += t * d[i];
            }
        }
        // Outer: multiplier update.
        let cx = qp.c_mul(&x);
        for k in 0..m {
            lambda[k] = (lambda[k] - rho * (cx[k] - qp.r[k])).max(0.0);
        }
        let (prim, dual, comp, _) = kkt_residuals(qp, &x, &lambda);
        if prim <= tolerance * rscale
            && dual <= tolerance * pscale
            && comp <= tolerance * rscale * pscale
        {
            return Some(QpOutcome {
                x,
                lambda,
                status: "Solved".into(),
                solved: true,
                iterations,
                r_prim: prim / rscale,
                r_dual: dual / pscale,
                solver: SolverUsed::Warm,
                fallback: false,
            });
        }
        if x.iter().any(|v| !v.is_finite()) {
            return None;
        }
    }
    None
}
