//! The errors of `talus diff`.

use std::path::PathBuf;

/// Errors of the differencing stage. Messages name the file and the problem.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("diff configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Io(#[from] talus_io::IoError),
    #[error(
        "the surveys are in different coordinate reference systems: {pre} is in {pre_crs}, {post} is in {post_crs}; reproject one of them, or set `same_crs = true` if they are in fact the same"
    )]
    CrsMismatch { pre: PathBuf, pre_crs: String, post: PathBuf, post_crs: String },
    #[error("{path}: no points left after keeping classes {classes:?} (of {total} points)")]
    EmptyAfterFilter { path: PathBuf, classes: Vec<u8>, total: usize },
    #[error(
        "the surveys do not overlap: {pre} covers {pre_box:?}, {post} covers {post_box:?} (boxes are [xmin, ymin, xmax, ymax])"
    )]
    NoOverlap { pre: PathBuf, pre_box: [f64; 4], post: PathBuf, post_box: [f64; 4] },
    #[error(
        "no {cell} m grid cell holds points of both surveys ({pre} and {post}) after filtering: the overlap is empty"
    )]
    EmptyOverlap { cell: f64, pre: PathBuf, post: PathBuf },
    #[error(
        "diff configuration: dod.cell_size = {cell} m over the surveys' overlap ({:.1} × {:.1} m) makes a grid of {nx} × {ny} cells, more than {max}: raise dod.cell_size, or crop the surveys to the site (talus ingest with bbox or polygon)",
        extent[0], extent[1]
    )]
    GridTooLarge { cell: f64, nx: usize, ny: usize, extent: [f64; 2], max: usize },
    #[error("{path}: cannot build the output table: {source}")]
    Arrow {
        path: PathBuf,
        #[source]
        source: arrow::error::ArrowError,
    },
}
