//! The typed errors of `talus ingest`. Every variant that concerns one input names it.

use std::path::PathBuf;

/// Errors of the ingest stage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is inconsistent (checked before any file is opened).
    #[error("configuration of `ingest`: {0}")]
    Config(String),
    /// The ground filter cannot build its surface (no point, or too large a grid).
    #[error("ingest: ground filter: {0}")]
    Ground(String),
    /// No input file was given.
    #[error("ingest: no input file given")]
    NoInput,
    /// The output path is one of the inputs.
    #[error("{path}: the output would overwrite an input")]
    OutputIsInput { path: PathBuf },
    /// An input cannot be opened or read.
    #[error("{path}: cannot read: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An input does not start with the LAS signature.
    #[error("{path}: not a LAS/LAZ file (the first bytes are {found:?}, expected \"LASF\")")]
    NotLas { path: PathBuf, found: String },
    /// An input's LAS version is not 1.0 to 1.4.
    #[error("{path}: LAS version {major}.{minor} is not supported (1.0 to 1.4 are)")]
    UnsupportedVersion { path: PathBuf, major: u8, minor: u8 },
    /// An input's point format is not 0 to 10.
    #[error("{path}: point format {format} is not supported (0 to 10 are)")]
    UnsupportedFormat { path: PathBuf, format: u8 },
    /// An input ends before the data its header announces.
    #[error("{path}: truncated {kind} file: {detail}")]
    Truncated { path: PathBuf, kind: &'static str, detail: String },
    /// The header's point count does not match the point data.
    #[error("{path}: the header declares {declared} points but the point data holds {found}")]
    PointCountMismatch { path: PathBuf, declared: u64, found: String },
    /// The header or a VLR is malformed.
    #[error("{path}: invalid LAS header: {source}")]
    Header {
        path: PathBuf,
        #[source]
        source: las::Error,
    },
    /// A header's scale or offset is not finite, or a scale is zero.
    #[error(
        "{path}: invalid LAS header: the {axis} scale {scale:e} and offset {offset:e} must be finite and the scale non-zero"
    )]
    BadTransform { path: PathBuf, axis: char, scale: f64, offset: f64 },
    /// A point's coordinates (`raw * scale + offset`) are not finite.
    #[error(
        "{path}: point {index} has non-finite coordinates ({x}, {y}, {z}): check the header's scale and offset"
    )]
    NonFinite { path: PathBuf, index: u64, x: f64, y: f64, z: f64 },
    /// The extra-bytes VLR does not describe the extra bytes of the point records.
    #[error("{path}: invalid extra-bytes VLR: {detail}")]
    ExtraBytes { path: PathBuf, detail: String },
    /// The compressed point data of a LAZ file (whose sizes and chunk table are consistent)
    /// cannot be decoded.
    #[error("{path}: corrupt LAZ data: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    /// Decoding the point records failed (corrupt or truncated compressed data).
    #[error("{path}: cannot decode the points after point {at}: {source}")]
    Decode {
        path: PathBuf,
        at: u64,
        #[source]
        source: las::Error,
    },
    /// Two inputs of one survey have different coordinate reference systems.
    #[error(
        "{first} has CRS {first_crs} but {second} has CRS {second_crs}: the inputs of one survey must share a CRS \
         (set require_same_crs = false to keep the first file's, or assign_epsg for files without one)"
    )]
    CrsMismatch { first: PathBuf, first_crs: String, second: PathBuf, second_crs: String },
    /// An input cannot be reprojected to the output CRS.
    #[error("{path}: cannot reproject to {target}: {source}")]
    Reproject {
        path: PathBuf,
        target: String,
        #[source]
        source: talus_io::reproject::ReprojectError,
    },
    /// The survey's files (directories, patterns) cannot be listed.
    #[error(transparent)]
    Inputs(#[from] talus_io::survey_files::SurveyFilesError),
    /// Nothing is left to write.
    #[error(
        "no point left to write: {read} points read from {inputs}, none kept by the filters ({filters})"
    )]
    Empty { read: u64, inputs: String, filters: String },
    /// Building a record batch failed.
    #[error("{path}: building the Arrow batch: {source}")]
    Arrow {
        path: PathBuf,
        #[source]
        source: arrow::error::ArrowError,
    },
    /// Writing the output failed.
    #[error(transparent)]
    Io(#[from] talus_io::IoError),
}
