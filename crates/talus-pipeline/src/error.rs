//! The errors of the pipeline.

use crate::{OptionsError, StageName};
use std::path::PathBuf;

/// Errors of the pipeline; a stage's own failure is [`Error::StageFailed`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The site file is unreadable or invalid.
    #[error("{path}: {message}")]
    Site { path: PathBuf, message: String },
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// `--from` names a stage this site does not have.
    #[error("--from {stage}: this site has no such stage (its stages: {stages})")]
    NoSuchStage { stage: StageName, stages: String },
    /// A stage's input cannot be hashed (missing or unreadable).
    #[error("stage `{stage}`: input: {message}")]
    Input { stage: StageName, message: String },
    /// A stage failed; earlier outputs stay and the manifest records the failure.
    #[error("pipeline `{site}`: stage `{stage}` failed: {error}")]
    StageFailed { site: String, stage: StageName, error: String },
    #[error("{path}: {message}")]
    Output { path: PathBuf, message: String },
    #[error(transparent)]
    Io(#[from] talus_io::IoError),
}
