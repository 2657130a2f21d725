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
//! 5. **Hazard maps** ([`hazard`], GeoTIFF): per cell, the maximum kinetic energy,
//!    velocity and passing height of the blocks, and how many passed, from the
//!    trajectories.
//! 6. **Trajectory lines** ([`trajectory_lines`], GeoParquet `LineString Z`): each
//!    block's recorded path, for QGIS.

use serde::Serialize;
use std::path::{Path, PathBuf};
use talus_schema::file_names::compare as names;

pub mod config;
pub mod deposit;
pub mod error;
pub mod figures;
pub mod hazard;
pub mod inputs;
pub mod metrics;
pub mod report;
pub mod sizes;
pub mod trajectory_lines;

pub use config::Config;
pub use error::Error;
pub use inputs::{Grid, Inputs};
pub use metrics::Metric;

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
    /// Every file this run wrote (metrics, thickness map when there is a survey, hazard
    /// maps, trajectory lines, figures, report), in that order; other files of the directory are the user's.
    pub written: Vec<PathBuf>,
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

/// The grid of the hazard maps: the survey's when there is one, else a grid of
/// `hazard_cell_size` over the trajectories (refused when it would have more than
/// [`hazard::MAX_CELLS`] cells). `None` without trajectories.
fn hazard_grid(config: &Config, data: &inputs::Data) -> Result<Option<inputs::Grid>, Error> {
    if data.trajectories.x.is_empty() {
        return Ok(None);
    }
    let Some(survey) = &data.survey else {
        return hazard::grid_over(&data.trajectories, config.hazard_cell_size).map_err(|[nx, ny]| {
            Error::Config(format!(
                "hazard_cell_size = {} m: the hazard maps over the trajectories would have {nx} × {ny} cells, more than {}: raise hazard_cell_size",
                config.hazard_cell_size,
                hazard::MAX_CELLS
            ))
        });
    };
    Ok(Some(survey.grid))
}

/// The hazard maps of the run's trajectories on `grid` (see [`hazard_grid`]), the ground
/// from the run's TIN if any, else the post-event survey.
fn hazard_maps(grid: &inputs::Grid, data: &inputs::Data) -> hazard::HazardMap {
    let ground = match (&data.terrain, &data.survey) {
        (Some(t), _) => hazard::ground_from_tin(grid, t),
        (None, Some(s)) => s.z_post.clone(),
        (None, None) => vec![f64::NAN; grid.nx * grid.ny],
    };
    let mut mass = std::collections::HashMap::new();
    for b in [&data.initial_blocks, &data.final_blocks] {
        mass.extend(b.id.iter().copied().zip(b.mass.iter().copied()));
    }
    hazard::hazard_map(grid, &ground, &data.trajectories, &mass)
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
    // One writer per output directory (held until the stage returns).
    let _lock = talus_io::OutputLock::directory(out_dir)?;
    progress.start("read", 0);
    let data = inputs::load(inputs)?;
    let hazard_grid = hazard_grid(config, &data)?;
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
    let hazard = hazard_grid.as_ref().map(|g| hazard_maps(g, &data));
    // The along-flow axis of the section figure and of the block-size table.
    let section = figures::Section::of(&data, map.as_ref());
    let figs =
        figures::draw_all(config, &data, map.as_ref(), hazard.as_ref(), &section, &out.figures)?;
    progress.finish();
    let size_table = sizes::table(&data, &section);
    report::write(&out.report, site, config, &data, &metrics, &figs, &size_table)?;
    let mut written = vec![out.metrics_parquet.clone(), out.metrics_json.clone()];
    if let (Some(m), Some(s)) = (&map, &data.survey) {
        written.push(out.thickness.clone());
        written.extend(deposit::write_thickness_rasters(out_dir, m, s, data.crs.as_ref())?);
    }
    if let Some(h) = &hazard {
        written.extend(hazard::write_hazard_rasters(out_dir, h, data.crs.as_ref())?);
    }
    if !data.trajectories.id.is_empty() {
        let path = out_dir.join(names::TRAJECTORY_LINES);
        trajectory_lines::write(&path, &trajectory_lines::lines(&data.trajectories), &prov)?;
        written.push(path);
    }
    written.extend(figs.iter().map(|f| f.path.clone()));
    written.push(out.report.clone());

    Ok(Summary {
        blocks: data.final_blocks.len(),
        metrics_applicable: metrics.iter().filter(|m| m.applicable).count(),
        metrics_total: metrics.len(),
        deposit_iou: metrics
            .iter()
            .find(|m| m.metric == "deposit_iou" && m.applicable)
            .map(|m| m.value),
        figures: figs.iter().map(|f| f.file.clone()).collect(),
        written,
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
