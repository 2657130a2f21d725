//! The errors of `talus calibrate`.

use std::path::PathBuf;

/// Errors of the calibration; each names the option or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("[calibrate] {0}")]
    Config(String),
    #[error(transparent)]
    Io(#[from] talus_io::IoError),
    #[error("{0}")]
    Table(String),
    #[error("{path}: {message}")]
    Output { path: PathBuf, message: String },
    #[error(transparent)]
    Figure(#[from] talus_report::PlotError),
    /// The ensemble cannot go on (site, members, rows); the message says why.
    #[error("{0}")]
    Ensemble(String),
    #[error(transparent)]
    Pipeline(#[from] talus_pipeline::Error),
}
