//! The errors of `talus compare`.

use std::path::{Path, PathBuf};

/// Errors of the compare stage; each names the file or option at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Io(#[from] talus_io::IoError),
    #[error("{path}: {message}")]
    Input { path: PathBuf, message: String },
    #[error("compare configuration: {0}")]
    Config(String),
    #[error("table computation failed: {0}")]
    Polars(#[from] polars::error::PolarsError),
    #[error(transparent)]
    Plot(#[from] talus_report::PlotError),
}

impl Error {
    pub(crate) fn input(path: &Path, message: impl Into<String>) -> Self {
        Error::Input { path: path.to_path_buf(), message: message.into() }
    }
}
