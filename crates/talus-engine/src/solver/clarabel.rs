//! QP solvers of the jump: Clarabel (interior point, the reference) and a warm-started
//! solver specialised to `min ½xᵀHx − pᵀx s.t. Cx ≥ r` (see [`crate::solver::warm`]).
//!
//! Clarabel's standard form is `min ½xᵀPx + qᵀx s.t. Ax + s = b, s ∈ K`; here P = H
//! (upper triangle), q = −p, A = −C, b = −r, K the non-negative orthant, and Clarabel's
//! dual z is the vector λ ≥ 0 of reactive percussions (H x − p = Cᵀλ).

use crate::solver::assembly::Qp;
use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverJSONReadWrite, SolverStatus,
};

/// Which solver produced an accepted solution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolverUsed {
    /// No QP this step (every body in free flight).
    None,
    Clarabel,
    Warm,
    /// The exact dense active-set solver of small islands ([`crate::solver::dense`]).
    Dense,
    /// Non-linear Gauss–Seidel in contact space ([`crate::solver::nlgs`]).
    Nlgs,
    /// ADMM with a cached factorisation ([`crate::solver::admm`]).
    Admm,
}

impl SolverUsed {
    /// Name written in the diagnostics.
    pub fn name(self) -> &'static str {
        match self {
            SolverUsed::None => "none",
            SolverUsed::Clarabel => "clarabel",
            SolverUsed::Warm => "warm",
            SolverUsed::Dense => "dense",
            SolverUsed::Nlgs => "nlgs",
            SolverUsed::Admm => "admm",
        }
    }
}

/// How a QP ended, as data (Clarabel's `SolverStatus` and the statuses of Talus's own
/// solvers). `Display` gives the names written into `diagnostics.parquet`'s `status`
/// column (Clarabel's variant names; `SolvedWithoutSeparation (<first attempt>)`).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum QpStatus {
    /// Solved to the requested accuracy.
    #[default]
    Solved,
    /// Solved only by the retry without separation velocities; the first attempt's status.
    SolvedWithoutSeparation(Box<QpStatus>),
    /// Clarabel ended with this status (never `Solved`, which is [`QpStatus::Solved`]).
    Clarabel(SolverStatus),
    /// Clarabel refused the problem at setup (its message).
    SetupError(String),
    /// The dense solver: the Delassus matrix is not positive definite.
    NotPositiveDefinite,
    /// The dense solver: no active set found within its iterations.
    MaxIterations,
    /// The dense solver: its constraints cannot all hold.
    PrimalInfeasible,
    /// The dense solver's (or the warm solver's) result failed the KKT certificate.
    NotCertified,
}

impl QpStatus {
    /// Whether the solution is accepted (solved, with or without separation velocities).
    pub fn is_solved(&self) -> bool {
        matches!(self, QpStatus::Solved | QpStatus::SolvedWithoutSeparation(_))
    }
}

impl From<SolverStatus> for QpStatus {
    fn from(s: SolverStatus) -> Self {
        match s {
            SolverStatus::Solved => QpStatus::Solved,
            other => QpStatus::Clarabel(other),
        }
    }
}

impl std::fmt::Display for QpStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QpStatus::Solved => f.write_str("Solved"),
            QpStatus::SolvedWithoutSeparation(first) => {
                write!(f, "SolvedWithoutSeparation ({first})")
            }
            QpStatus::Clarabel(s) => write!(f, "{s:?}"),
            QpStatus::SetupError(e) => write!(f, "SetupError({e})"),
            QpStatus::NotPositiveDefinite => f.write_str("NotPositiveDefinite"),
            QpStatus::MaxIterations => f.write_str("MaxIterations"),
            QpStatus::PrimalInfeasible => f.write_str("PrimalInfeasible"),
            QpStatus::NotCertified => f.write_str("NotCertified"),
        }
    }
}

/// The outcome of one QP: data, never an error (style.md 5).
#[derive(Debug, Clone, PartialEq)]
pub struct QpOutcome {
    /// Primal solution x = (u⁺ + u⁻)/2.
    pub x: Vec<f64>,
    /// Multipliers λ ≥ 0 (reactive percussions, N s).
    pub lambda: Vec<f64>,
    /// Solver status.
    pub status: QpStatus,
    /// Whether the solution is accepted.
    pub solved: bool,
    /// Iterations.
    pub iterations: u32,
    /// Primal residual (Clarabel's, or max violation of Cx ≥ r for the warm solver).
    pub r_prim: f64,
    /// Dual residual (Clarabel's, or ‖Hx − p − Cᵀλ‖∞ for the warm solver).
    pub r_dual: f64,
    /// Which solver produced it.
    pub solver: SolverUsed,
    /// The warm solver failed and Clarabel was used.
    pub fallback: bool,
}

pub(crate) fn clarabel_data(qp: &Qp) -> (Vec<f64>, CscMatrix<f64>, Vec<f64>) {
    let q: Vec<f64> = qp.p.iter().map(|v| -v).collect();
    let mut a = qp.c().clone();
    a.nzval.iter_mut().for_each(|v| *v = -*v);
    let b: Vec<f64> = qp.r.iter().map(|v| -v).collect();
    (q, a, b)
}

pub(crate) fn settings(tolerance: f64, max_iterations: u32) -> DefaultSettings<f64> {
    DefaultSettings {
        verbose: false,
        max_iter: max_iterations,
        tol_gap_abs: tolerance,
        tol_gap_rel: tolerance,
        tol_feas: tolerance,
        tol_ktratio: tolerance.sqrt().min(1e-6),
        max_threads: 1,
        presolve_enable: false,
        ..DefaultSettings::default()
    }
}

fn new_solver(qp: &Qp, tolerance: f64, max_iterations: u32) -> Result<DefaultSolver<f64>, String> {
    let (q, a, b) = clarabel_data(qp);
    let cones = [NonnegativeConeT(qp.m())];
    DefaultSolver::new(qp.h_upper(), &q, &a, &b, &cones, settings(tolerance, max_iterations))
        .map_err(|e| e.to_string())
}

/// Solve with Clarabel.
pub fn solve_clarabel(qp: &Qp, tolerance: f64, max_iterations: u32) -> QpOutcome {
    let mut solver = match new_solver(qp, tolerance, max_iterations) {
        Ok(s) => s,
        Err(e) => {
            return QpOutcome {
                x: vec![0.0; qp.n()],
                lambda: vec![0.0; qp.m()],
                status: QpStatus::SetupError(e),
                solved: false,
                iterations: 0,
                r_prim: f64::NAN,
                r_dual: f64::NAN,
                solver: SolverUsed::Clarabel,
                fallback: false,
            };
        }
    };
    solver.solve();
    let s = &solver.solution;
    QpOutcome {
        x: s.x.clone(),
        lambda: s.z.clone(),
        status: s.status.into(),
        solved: s.status == SolverStatus::Solved,
        iterations: s.iterations,
        r_prim: s.r_prim,
        r_dual: s.r_dual,
        solver: SolverUsed::Clarabel,
        fallback: false,
    }
}

/// The QP in Clarabel's JSON format (`DefaultSolver::load_from_file` replays it).
pub fn clarabel_json(qp: &Qp, tolerance: f64, max_iterations: u32) -> Result<Vec<u8>, String> {
    solver_json(&new_solver(qp, tolerance, max_iterations)?)
}

/// A Clarabel problem's JSON (Clarabel only writes it to a `File`, so through a temporary one).
pub(crate) fn solver_json(solver: &DefaultSolver<f64>) -> Result<Vec<u8>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("problem.json");
    let mut f = std::fs::File::create(&path).map_err(|e| e.to_string())?;
    solver.save_to_file(&mut f).map_err(|e| e.to_string())?;
    drop(f);
    std::fs::read(&path).map_err(|e| e.to_string())
}

/// KKT residuals of a candidate (x, λ): (primal infeasibility max(r − Cx)⁺,
/// stationarity ‖Hx − p − Cᵀλ‖∞, complementarity max |λ_k (C_k x − r_k)|, min λ).
pub fn kkt_residuals(qp: &Qp, x: &[f64], lambda: &[f64]) -> (f64, f64, f64, f64) {
    let cx = qp.c_mul(x);
    let hx = qp.h_mul(x);
    let ctl = qp.ct_mul(lambda);
    let prim = cx.iter().zip(&qp.r).map(|(a, b)| (b - a).max(0.0)).fold(0.0, f64::max);
    let dual =
        hx.iter().zip(&qp.p).zip(&ctl).map(|((h, p), c)| (h - p - c).abs()).fold(0.0, f64::max);
    let comp = lambda
        .iter()
        .zip(cx.iter().zip(&qp.r))
        .map(|(l, (a, b))| (l * (a - b)).abs())
        .fold(0.0, f64::max);
    let lmin = lambda.iter().copied().fold(f64::INFINITY, f64::min);
    (prim, dual, comp, if lambda.is_empty() { 0.0 } else { lmin })
}

#[cfg(test)]
mod status_tests {
    use super::*;

    /// The names in `diagnostics.parquet` stay those of the string statuses they replace.
    #[test]
    fn status_names_are_the_diagnostics_strings() {
        let first = QpStatus::from(SolverStatus::PrimalInfeasible);
        assert_eq!(first.to_string(), "PrimalInfeasible");
        assert_eq!(QpStatus::from(SolverStatus::Solved), QpStatus::Solved);
        assert_eq!(QpStatus::from(SolverStatus::AlmostSolved).to_string(), "AlmostSolved");
        let retried = QpStatus::SolvedWithoutSeparation(Box::new(first));
        assert_eq!(retried.to_string(), "SolvedWithoutSeparation (PrimalInfeasible)");
        assert!(retried.is_solved() && QpStatus::Solved.is_solved());
        assert!(!QpStatus::Clarabel(SolverStatus::AlmostSolved).is_solved());
        assert_eq!(QpStatus::SetupError("bad".into()).to_string(), "SetupError(bad)");
    }

    /// Every status the engine can write has a meaning in the diagnostics' documentation
    /// (`talus_schema::run::STATUS_MEANINGS`), shown in the report.
    #[test]
    fn every_status_has_a_documented_meaning() {
        use SolverStatus as S;
        let clarabel = [
            S::Unsolved,
            S::Solved,
            S::PrimalInfeasible,
            S::DualInfeasible,
            S::AlmostSolved,
            S::AlmostPrimalInfeasible,
            S::AlmostDualInfeasible,
            S::MaxIterations,
            S::MaxTime,
            S::NumericalError,
            S::InsufficientProgress,
            S::CallbackTerminated,
        ];
        let mut all: Vec<QpStatus> = clarabel.into_iter().map(QpStatus::from).collect();
        all.extend([
            QpStatus::SolvedWithoutSeparation(Box::new(QpStatus::PrimalInfeasible)),
            QpStatus::SetupError("x".into()),
            QpStatus::NotPositiveDefinite,
            QpStatus::MaxIterations,
            QpStatus::PrimalInfeasible,
            QpStatus::NotCertified,
        ]);
        for s in all {
            let text = s.to_string();
            assert!(talus_schema::run::status_meaning(&text).is_some(), "{text} has no meaning");
        }
        assert!(talus_schema::run::status_meaning("Bogus").is_none());
    }
}
