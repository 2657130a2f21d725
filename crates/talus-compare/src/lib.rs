//! Simulated deposit vs surveyed deposit: metrics, figures and a self-contained report.
//!
//! Inputs: the final state, trajectories, energies and diagnostics of a `talus run`, and
//! (when the site has surveys) the DEM of difference grid and the scar/deposit zones of
//! `talus diff`.
//!
//! 1. **Simulated thickness map** ([`deposit`]). Each block `i` still in the domain is a
//!    box of edges `(a, b, c)` rotated by its quaternion `q`. Its horizontal footprint
//!    `F_i` is the convex hull of the eight projected corners; its volume, times the
//!    bulking factor `β`, is spread uniformly over `F_i`, so grid cell `k` (square of side
//!    `s`) receives
//!    `h_k = Σ_i β a_i b_i c_i · |F_i ∩ cell_k| / (|F_i| s²)` (exact polygon clipping).
//!    The map conserves volume: `Σ_k h_k s² = β Σ_i V_i` for the blocks over the grid.
//! 2. **Metrics** ([`metrics`]), with `S` the simulated deposit cells (`h > h_min`) and
//!    `O` the cells of the surveyed deposit zones (thickness `d_k = max(dz_k, 0)`):
//!    IoU `|S∩O|/|S∪O|`; volume-weighted overlap `Σ min(h,d) / Σ max(h,d)` (weighted
//!    Jaccard); RMSE and bias of `h − d` over `S∪O`; offset and azimuth of the
//!    thickness-weighted centroids; runout `L = max (p − C)·f` along the flow direction
//!    `f` (scar centroid → surveyed deposit centroid) from the crown `C` (highest
//!    pre-event scar cell); travel angle `atan(H/L)` (Fahrböschung) with `H` the drop
//!    from the crown to the distal toe; lateral spread across `f`; fractions of the
//!    seeded volume that left the domain or stayed in the scar; and run metrics from the
//!    energies and diagnostics. Without a survey the deposit metrics are listed as not
//!    applicable. Grid joins and aggregates are done with polars.
//! 3. **Figures** ([`figures`], PNG): DoD with zone outlines, simulated thickness over the
//!    surveyed outline (thesis Fig. 6.33, made quantitative), energies (thesis Fig.
//!    6.29/6.30) and a plan view of the trajectories.
//! 4. **Report** ([`report`]): one HTML file with the figures embedded (base64).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use talus_schema::file_names::compare as names;

pub mod deposit;
pub mod figures;
pub mod inputs;
pub mod metrics;
pub mod report;

pub use inputs::{Grid, Inputs};
pub use metrics::Metric;

/// Options of `talus compare`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Bulking factor applied to the block volumes when they are spread into a deposit
    /// thickness (1 = solid rock; rock-avalanche deposits are typically 1.1-1.3), dimensionless.
    pub bulking_factor: f64,
    /// Simulated thickness above which a grid cell counts in the simulated deposit area, m.
    pub min_thickness: f64,
    /// Width of each figure, pixels.
    pub figure_width: u32,
    /// Height of each figure, pixels.
    pub figure_height: u32,
    /// Most block trajectories drawn in the plan view (ids evenly spaced), count.
    pub max_trajectories: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bulking_factor: 1.0,
            min_thickness: 0.1,
            figure_width: 1200,
            figure_height: 900,
            max_trajectories: 300,
        }
    }
}

impl Config {
    /// Check the options before any work.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if !(self.bulking_factor.is_finite() && self.bulking_factor > 0.0) {
            return bad(format!("bulking_factor must be > 0, got {}", self.bulking_factor));
        }
        if !(self.min_thickness.is_finite() && self.min_thickness >= 0.0) {
            return bad(format!("min_thickness must be >= 0 m, got {}", self.min_thickness));
        }
        if !(400..=8000).contains(&self.figure_width) || !(300..=8000).contains(&self.figure_height)
        {
            return bad(format!(
                "figure size must be within 400x300 and 8000x8000 pixels, got {}x{}",
                self.figure_width, self.figure_height
            ));
        }
        Ok(())
    }
}

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
    #[error("{path}: drawing failed: {message}")]
    Plot { path: PathBuf, message: String },
}

impl Error {
    pub(crate) fn input(path: &Path, message: impl Into<String>) -> Self {
        Error::Input { path: path.to_path_buf(), message: message.into() }
    }
}

/// Site description shown at the top of the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SiteInfo {
    /// Site name (`[site] name`).
    pub name: String,
    /// One-paragraph description (`[site] description`).
    pub description: String,
    /// The configuration file's text, shown verbatim.
    pub config_text: String,
}

/// What `talus compare` did.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Blocks in the run.
    pub blocks: usize,
    /// Metrics computed (applicable ones).
    pub metrics_applicable: usize,
    /// Metrics listed in total.
    pub metrics_total: usize,
    /// Deposit IoU (when a survey is available).
    pub deposit_iou: Option<f64>,
    /// Figures written (file names under `figures/`).
    pub figures: Vec<String>,
    /// The report.
    pub report: PathBuf,
}

/// Output paths of the stage under `out_dir`.
pub struct Outputs {
    pub metrics_parquet: PathBuf,
    pub metrics_json: PathBuf,
    pub thickness: PathBuf,
    pub figures: PathBuf,
    pub report: PathBuf,
}

impl Outputs {
    /// The standard layout under `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Outputs {
            metrics_parquet: dir.join(names::METRICS_PARQUET),
            metrics_json: dir.join(names::METRICS_JSON),
            thickness: dir.join(names::THICKNESS),
            figures: dir.join(names::FIGURES),
            report: dir.join(names::REPORT),
        }
    }
}

/// Compare a run with its survey (if any) and write metrics, thickness map, figures and
/// report under `out_dir`.
pub fn run(
    config: &Config,
    inputs: &Inputs,
    site: &SiteInfo,
    out_dir: &Path,
    progress: &dyn talus_io::Progress,
) -> Result<Summary, Error> {
    config.validate()?;
    progress.start("read", 0);
    let data = inputs::load(inputs)?;
    progress.finish();
    let out = Outputs::in_dir(out_dir);
    let prov = talus_io::Provenance::new("compare", env!("CARGO_PKG_VERSION"), config)
        .with_inputs(&inputs.files())?
        .with_crs(data.crs.clone());

    progress.start("deposit", 0);
    let map = match &data.survey {
        Some(s) => Some(deposit::thickness_map(config, &data.final_blocks, s)?),
        None => None,
    };
    progress.finish();
    progress.start("metrics", 0);
    let metrics = metrics::compute(config, &data, map.as_ref())?;
    if let Some(m) = &map {
        deposit::write_thickness(&out.thickness, m, &prov)?;
    }
    metrics::write(&out.metrics_parquet, &out.metrics_json, &metrics, &prov)?;
    progress.finish();

    progress.start("figures", 0);
    let figs = figures::draw_all(config, &data, map.as_ref(), &out.figures)?;
    progress.finish();
    report::write(&out.report, site, config, &data, &metrics, &figs)?;

    Ok(Summary {
        blocks: data.final_blocks.len(),
        metrics_applicable: metrics.iter().filter(|m| m.applicable).count(),
        metrics_total: metrics.len(),
        deposit_iou: metrics
            .iter()
            .find(|m| m.metric == "deposit_iou" && m.applicable)
            .map(|m| m.value),
        figures: figs.iter().map(|f| f.file.clone()).collect(),
        report: out.report,
    })
}

/// The metrics and figures, as `talus compare` reports them.
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        write!(
            f,
            "compare: {} blocks, {} of {} metrics applicable{}, {} figures; report {}",
            s.blocks,
            s.metrics_applicable,
            s.metrics_total,
            s.deposit_iou.map(|v| format!(", deposit IoU {v:.3}")).unwrap_or_default(),
            s.figures.len(),
            s.report.display()
        )
    }
}
