//! The errors of `talus terrain`.

use crate::TinError;
use std::path::PathBuf;
use talus_io::IoError;

/// Errors of the terrain stage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("terrain configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("{path}: {message}")]
    Input { path: PathBuf, message: String },
    #[error("{path}: cannot triangulate: {source}")]
    Tin {
        path: PathBuf,
        #[source]
        source: TinError,
    },
}
