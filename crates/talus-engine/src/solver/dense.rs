//! Exact dense solver of the jump QP of a small island (a few bodies: 6 unknowns per body,
//! a handful of contacts), `min ½xᵀHx − pᵀx s.t. Cx ≥ r`, H symmetric positive definite.
//!
//! An island of one or two blocks has 6 or 12 unknowns and typically the four redundant
//! corner contacts of one face; an interior-point solver pays ~10² µs of setup for it, a
//! sparse factorisation is pointless. Here, with H = L Lᵀ (dense Cholesky) and y = Lᵀx,
//! the QP is the projection of y₀ = L⁻¹p onto the polyhedron {y : v_kᵀy ≥ r_k},
//! v_k = L⁻¹c_k:
//!
//! ```text
//! minimise ½‖y − y₀‖²   s.t.  Vᵀy ≥ r,    x = L⁻ᵀ y,   λ = multipliers of Vᵀy ≥ r
//! ```
//!
//! solved by the dual active-set method of Goldfarb & Idnani (1983; the method of
//! QuadProg) in this metric (H = I). It starts at the unconstrained minimiser (λ = 0, dual
//! feasible) and adds the most violated constraint p, moving along z = (I − Q₁Q₁ᵀ)v_p
//! (Q₁R = V_A, the active normals) while the active multipliers change by −t R⁻¹Q₁ᵀv_p
//! and λ_p by +t. A multiplier reaching 0 first is dropped (partial step). When v_p depends
//! linearly on the active normals (z = 0: e.g. the fourth corner of a face on a plane) the
//! step is purely dual and drops an active constraint; if none can be dropped, the QP is
//! infeasible. The dual objective increases at every step, so the method is finite; the
//! active set stays linearly independent (at most n rows), so R is invertible and the
//! multipliers unique on it, whatever the redundancy of the contacts.
//!
//! The answer is then recomputed on the final active set A (R ᵀR λ_A = r_A − V_Aᵀy₀,
//! y = y₀ + V_A λ_A) and certified: it is accepted only when every multiplier is ≥ 0 and
//! the primal feasibility, stationarity and complementarity residuals, measured on the
//! original sparse data, are below the tolerance relative to the data's scales (the same
//! test as the warm solver's). Otherwise the outcome is not `solved` (status
//! `PrimalInfeasible`, `NotPositiveDefinite`, `MaxIterations` or `NotCertified`) and the
//! caller falls back to the configured solver.
//!
//! Everything is sequential dense arithmetic in a fixed order: deterministic.

use crate::solver::assembly::Qp;
use crate::solver::clarabel::{QpOutcome, QpStatus, SolverUsed, kkt_residuals};
use crate::solver::warm::{accept, scales};
use nalgebra::{DMatrix, DVector};

/// Two normals (in the metric of H⁻¹) are taken as linearly dependent when the part of v_p
/// orthogonal to the active normals is below this fraction of ‖v_p‖.
const DEPENDENT: f64 = 1e-10;
/// A constraint is violated when v_kᵀy − r_k < −VIOLATED (|v_k|·|y|_max + |r_k|), |y|_max
/// the largest |y| met so far (y's roundoff): a few hundred roundoffs of the expression,
/// far below any tolerance the certificate accepts.
const VIOLATED: f64 = 1e-13;
/// A violated constraint whose normal depends on the active ones with no multiplier able
/// to make room proves the QP infeasible when its violation exceeds this (same scale as
/// `VIOLATED`); a smaller one is roundoff, and the constraint is left to the certificate.
const INFEASIBLE: f64 = 1e-9;

/// Cᵀ as a dense n × m matrix (column k is c_k).
fn dense_ct(qp: &Qp) -> DMatrix<f64> {
    let c = qp.c();
    let mut d = DMatrix::zeros(c.n, c.m);
    for col in 0..c.n {
        for k in c.colptr[col]..c.colptr[col + 1] {
            d[(col, c.rowval[k])] = c.nzval[k];
        }
    }
    d
}

fn refused(qp: &Qp, status: QpStatus, iterations: u32) -> QpOutcome {
    QpOutcome {
        x: vec![0.0; qp.n()],
        lambda: vec![0.0; qp.m()],
        status,
        solved: false,
        iterations,
        r_prim: f64::NAN,
        r_dual: f64::NAN,
        solver: SolverUsed::Dense,
        fallback: false,
    }
}

/// Q₁ (n × q) and R (q × q) of V_A = Q₁R, the active normals' thin QR.
fn active_qr(v: &DMatrix<f64>, active: &[usize]) -> (DMatrix<f64>, DMatrix<f64>) {
    let n = v.nrows();
    let q = active.len();
    if q == 0 {
        return (DMatrix::zeros(n, 0), DMatrix::zeros(0, 0));
    }
    let mut va = DMatrix::zeros(n, q);
    for (a, &k) in active.iter().enumerate() {
        va.set_column(a, &v.column(k));
    }
    let qr = va.qr();
    (qr.q(), qr.r())
}

/// R⁻¹ b for the upper-triangular R (`None` when R is singular).
fn r_solve(r: &DMatrix<f64>, b: &DVector<f64>) -> Option<DVector<f64>> {
    if r.nrows() == 0 {
        return Some(DVector::zeros(0));
    }
    r.solve_upper_triangular(b)
}

/// Solve the QP exactly (see the module documentation). Outcomes that are not `solved`
/// must be handed to another solver.
pub fn solve_dense(qp: &Qp, tolerance: f64) -> QpOutcome {
    let (n, m) = (qp.n(), qp.m());
    let (pscale, rscale) = scales(qp);
    let Some(chol) = qp.h_dense().cholesky() else {
        return refused(qp, QpStatus::NotPositiveDefinite, 0);
    };
    let l = chol.l();
    let p = DVector::from_column_slice(&qp.p);
    let Some(y0) = l.solve_lower_triangular(&p) else {
        return refused(qp, QpStatus::NotPositiveDefinite, 0);
    };
    let Some(v) = l.solve_lower_triangular(&dense_ct(qp)) else {
        return refused(qp, QpStatus::NotPositiveDefinite, 0);
    };
    let vnorm: Vec<f64> = (0..m).map(|k| v.column(k).norm()).collect();
    let mut y = y0.clone();
    let mut active: Vec<usize> = Vec::new();
    let mut u: Vec<f64> = Vec::new();
    let mut is_active = vec![false; m];
    // Dependent constraints violated by roundoff only, left out of the active set.
    let mut skipped = vec![false; m];
    let mut ymax = y0.norm();
    let mut iterations = 0u32;
    let limit = 10 * (n + m) as u32 + 20;
    loop {
        // Step 1: the most violated inactive constraint (lowest index on ties).
        ymax = ymax.max(y.norm());
        let scale = |k: usize| vnorm[k] * ymax + qp.r[k].abs();
        let mut pick: Option<(usize, f64)> = None;
        for (k, (&act, &skip)) in is_active.iter().zip(&skipped).enumerate() {
            if act || skip {
                continue;
            }
            let s = v.column(k).dot(&y) - qp.r[k];
            if s < -VIOLATED * scale(k) && pick.is_none_or(|(_, best)| s < best) {
                pick = Some((k, s));
            }
        }
        let Some((pk, _)) = pick else { break };
        let vp = v.column(pk).into_owned();
        let mut up = 0.0;
        // Step 2: move until p is active (full step), dropping blocking constraints.
        loop {
            iterations += 1;
            if iterations > limit {
                return refused(qp, QpStatus::MaxIterations, iterations);
            }
            let (q1, r) = active_qr(&v, &active);
            let q1v = q1.transpose() * &vp;
            let z = &vp - &q1 * &q1v;
            let Some(rr) = r_solve(&r, &q1v) else {
                return refused(qp, QpStatus::NotCertified, iterations);
            };
            let dependent = z.norm() <= DEPENDENT * vnorm[pk];
            // Partial step: the first active multiplier to reach 0 (lowest index on ties).
            let mut t1 = f64::INFINITY;
            let mut drop = None;
            for (a, (&ua, &ra)) in u.iter().zip(rr.iter()).enumerate() {
                if ra > 0.0 {
                    let t = ua / ra;
                    if t < t1 {
                        t1 = t;
                        drop = Some(a);
                    }
                }
            }
            // Full step: p becomes active.
            let t2 = if dependent {
                f64::INFINITY
            } else {
                let s = vp.dot(&y) - qp.r[pk];
                (-s / z.norm_squared()).max(0.0)
            };
            let t = t1.min(t2);
            if t == f64::INFINITY {
                // v_p is a non-negative combination of the active normals: they cannot all
                // hold with constraint p, unless its violation is roundoff.
                if vp.dot(&y) - qp.r[pk] < -INFEASIBLE * scale(pk) {
                    return refused(qp, QpStatus::PrimalInfeasible, iterations);
                }
                // v_p = V_A r: its multiplier goes back to the active constraints.
                for (ua, ra) in u.iter_mut().zip(rr.iter()) {
                    *ua += up * ra;
                }
                skipped[pk] = true;
                break;
            }
            if !dependent {
                y.axpy(t, &z, 1.0);
            }
            for (ua, ra) in u.iter_mut().zip(rr.iter()) {
                *ua -= t * ra;
            }
            up += t;
            if t2 <= t1 {
                active.push(pk);
                u.push(up);
                is_active[pk] = true;
                break;
            }
            let a = drop.expect("a blocking constraint");
            is_active[active[a]] = false;
            active.remove(a);
            u.remove(a);
        }
    }
    // Exact solution on the final active set: RᵀR λ_A = r_A − V_Aᵀy₀, y = y₀ + V_A λ_A.
    let (q1, r) = active_qr(&v, &active);
    let rhs = DVector::from_iterator(
        active.len(),
        active.iter().map(|&k| qp.r[k] - v.column(k).dot(&y0)),
    );
    let polished = (if active.is_empty() {
        Some(DVector::zeros(0))
    } else {
        r.transpose().solve_lower_triangular(&rhs).and_then(|w| r_solve(&r, &w))
    })
    .map(|la| (la.clone(), &y0 + &q1 * (&r * &la)));
    let candidates = polished.into_iter().chain(std::iter::once((DVector::from_vec(u), y)));
    for (la, yc) in candidates {
        let Some(x) = l.transpose().solve_upper_triangular(&yc) else { continue };
        let x: Vec<f64> = x.iter().copied().collect();
        let mut lambda = vec![0.0; m];
        for (&k, &lk) in active.iter().zip(la.iter()) {
            lambda[k] = lk;
        }
        // A multiplier negative beyond roundoff means the active set is wrong; tiny ones are 0.
        let (ok, lambda) = accept(qp, &x, &lambda, tolerance, (pscale, rscale));
        if ok {
            let (prim, dual, _, _) = kkt_residuals(qp, &x, &lambda);
            return QpOutcome {
                x,
                lambda,
                status: QpStatus::Solved,
                solved: true,
                iterations,
                r_prim: prim / rscale,
                r_dual: dual / pscale,
                solver: SolverUsed::Dense,
                fallback: false,
            };
        }
    }
    refused(qp, QpStatus::NotCertified, iterations)
}
