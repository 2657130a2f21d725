//! The errors of `talus synth`.

use std::path::PathBuf;

/// Errors of `talus synth`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid synth configuration: {0}")]
    Config(String),
    #[error(
        "unknown CRS code EPSG:{0}: talus synth writes WGS 84 / UTM only (EPSG:32601-32660 north, 32701-32760 south)"
    )]
    UnknownCrs(u32),
    #[error("{what}: LAS error: {source}")]
    Las {
        what: String,
        #[source]
        source: las::Error,
    },
    #[error("{path}: {message}")]
    Output { path: PathBuf, message: String },
    #[error(transparent)]
    Io(#[from] talus_io::IoError),
}
