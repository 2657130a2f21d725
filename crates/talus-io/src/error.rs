//! The error of Talus file input/output: every variant names the file.

use std::path::{Path, PathBuf};

/// Errors of Talus file input/output. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{path}: {source}")]
    Os {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a readable Parquet file: {source}")]
    Parquet {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("{path}: Arrow error: {source}")]
    Arrow {
        path: PathBuf,
        #[source]
        source: arrow::error::ArrowError,
    },
    #[error("{path}: missing column `{column}` (expected {expected})")]
    MissingColumn { path: PathBuf, column: String, expected: String },
    #[error("{path}: column `{column}` has type {found}, expected {expected}")]
    WrongType { path: PathBuf, column: String, expected: String, found: String },
    #[error("{path}: column `{column}` holds null values where none are allowed")]
    UnexpectedNull { path: PathBuf, column: String },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// Result alias for this crate.
pub type Result<T, E = IoError> = std::result::Result<T, E>;

pub(crate) fn os(path: &Path) -> impl FnOnce(std::io::Error) -> IoError + '_ {
    move |source| IoError::Os { path: path.to_path_buf(), source }
}
