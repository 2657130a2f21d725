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

/// Create `dir` and its parents. When a component exists as a file, the error names that
/// component and says so (instead of the OS's "File exists").
pub fn create_dir(dir: &Path) -> Result<()> {
    match std::fs::create_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) => {
            let file = dir.ancestors().find(|a| a.exists() && !a.is_dir());
            Err(match file {
                Some(f) => IoError::Invalid {
                    path: f.to_path_buf(),
                    message: "exists and is a file, not a directory".into(),
                },
                None => IoError::Os { path: dir.to_path_buf(), source: e },
            })
        }
    }
}

/// The OS error of an error that `tempfile` wrapped with the temporary file's name, which
/// means nothing to the user (the destination is named instead).
pub(crate) fn without_temporary_name(e: std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(e.kind(), e.kind().to_string()),
    }
}

pub(crate) fn os(path: &Path) -> impl FnOnce(std::io::Error) -> IoError + '_ {
    move |source| IoError::Os { path: path.to_path_buf(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write whose temporary file cannot be created names the destination and the OS
    /// error, never tempfile's temporary name.
    #[test]
    fn write_errors_name_the_destination_not_the_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        let e = tempfile::Builder::new().prefix(".out.parquet.").tempfile_in(&missing).unwrap_err();
        assert!(e.to_string().contains("gone"), "tempfile's own message names the path: {e}");
        let e = without_temporary_name(e);
        assert!(!e.to_string().contains("gone") && !e.to_string().contains(".out"), "{e}");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        // Through AtomicFile: the destination is named, no temporary file is left.
        let file = dir.path().join("afile");
        std::fs::write(&file, "mine").unwrap();
        let e =
            crate::AtomicFile::write_all(&file.join("out.parquet"), b"x").unwrap_err().to_string();
        assert!(e.contains("afile") && e.contains("is a file, not a directory"), "{e}");
        assert!(!e.contains(".out.parquet."), "{e}");
    }
}
