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
        "seed configuration: the sizes could place up to {bound:.0} blocks in the {volume:.0} m³ to fill of {path} (the smallest block, [{:.3}, {:.3}, {:.3}] m, holds {:.3e} m³), more than max_blocks = {max}: are the edges in metres? (raise max_blocks to seed that many)",
        smallest[0], smallest[1], smallest[2], smallest.iter().product::<f64>()
    )]
    TooManyBlocks { path: PathBuf, bound: f64, volume: f64, smallest: [f64; 3], max: usize },
    #[error(
        "{path}: the post-event surface is above the pre-event one in {crossing} of {cells} scar cells (more than max_crossing_fraction = {max})"
    )]
    Crossing { path: PathBuf, crossing: usize, cells: usize, max: f64 },
}
