//! The errors of `talus run`.

use crate::sim::SimError;
use crate::solver::clarabel::QpStatus;
use std::path::PathBuf;
use talus_io::IoError;

/// Errors of `talus run`; messages name the file and the problem.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("{path}: {message}")]
    Input { path: PathBuf, message: String },
    #[error(
        "step {step}: the QP of {count} island(s) was not solved (status {status}); data dumped to {dump} (replay with clarabel's DefaultSolver::load_from_file); set on_solver_failure = \"continue\" to go on"
    )]
    SolverFailure { step: u64, count: usize, status: QpStatus, dump: PathBuf },
    #[error("cannot resume from {path}: {message}")]
    Resume { path: PathBuf, message: String },
    /// `--resume` of a run whose final state is already written, with the same
    /// configuration and inputs.
    #[error(
        "{path}: this run is already finished (same configuration and inputs); nothing to resume. Run without --resume to redo it"
    )]
    Finished { path: PathBuf },
    /// The blocks to run are one of the files the run would write or remove.
    #[error(
        "{path}: this input is an output of the run in {out_dir} (its final state or a checkpoint), which the run would overwrite; copy it elsewhere or choose another --out-dir"
    )]
    OutputIsInput { path: PathBuf, out_dir: PathBuf },
}
