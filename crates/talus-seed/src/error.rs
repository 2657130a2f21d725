//! The errors of `talus seed`.

use std::path::PathBuf;
use talus_io::IoError;

/// Errors of the seed stage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("seed configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("{path}: {message}")]
    Input { path: PathBuf, message: String },
    #[error("{path}: the scar is empty: {message}")]
    EmptyScar { path: PathBuf, message: String },
    #[error(
        "no block of {size:?} m fits in the void ({volume:.1} m³ over {cells} scar cells): use smaller blocks"
    )]
    NothingFits { size: [f64; 3], volume: f64, cells: usize },
    #[error(
        "{path}: the post-event surface is above the pre-event one in {crossing} of {cells} scar cells (more than max_crossing_fraction = {max})"
    )]
    Crossing { path: PathBuf, crossing: usize, cells: usize, max: f64 },
}
