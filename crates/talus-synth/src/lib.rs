//! Synthetic rock-slope collapse site with a known answer: a pair of airborne LiDAR
//! surveys (LAS 1.4 / LAZ) of a steep volcanic cliff above a valley, before and after a
//! collapse, and the truth they were drawn from.
//!
//! Built to the figures of the Piton Marcel collapse (Martinique, 2010; thesis §6.2):
//! a ~130 m cliff above a valley floor that slopes down to a river, a scar
//! of ~8 × 10⁵ m³ cut into the whole cliff height, and a deposit of that volume times a
//! bulking factor, an arrowhead pointing downslope at the break in slope, in WGS 84 /
//! UTM 20N.
//!
//! The algorithm:
//! 1. [`site`]: the surfaces are exact 2.5D functions z = f(x, y): a smooth profile
//!    (valley, cliff, plateau, river) plus seeded summed-noise relief ([`noise`]); the scar
//!    retreats the cliff top with the foot fixed, its maximum retreat solved so that
//!    Σ (z_pre - z_post) · cell² over the truth grid equals the requested volume; the
//!    deposit's length follows a travel-angle runout rule and its height is solved for
//!    V_deposit = bulking · V_scar.
//! 2. [`survey`]: Poisson sampling of pulses per flight line (density per 3D surface area
//!    so the cliff face is covered), vegetation returns, measurement noise, GPS time.
//! 3. [`lasout`]: LAS 1.4 point format 6 with the CRS as a WKT VLR, compressed to LAZ.
//! 4. [`truth`]: the surfaces on the grid (`truth.parquet`) and the scar and deposit
//!    figures with all parameters (`truth.json`).
//!
//! Everything derives from the config's seed: the same config gives byte-identical files.

pub mod config;
pub mod crs;
pub mod error;
pub mod lasout;
pub mod noise;
pub mod site;
pub mod survey;
pub mod truth;

pub use config::{Config, ScarShape, SteepSampling};
pub use error::Error;
pub use site::Site;
pub use survey::Epoch;

use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use talus_io::{AtomicFile, Crs, Progress, Provenance};
use talus_schema::file_names::synth as names;

/// What `talus synth` produced.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Pre-event survey counts.
    pub pre: lasout::SurveyStats,
    /// Post-event survey counts.
    pub post: lasout::SurveyStats,
    /// Scar volume on the truth grid, m³.
    pub scar_volume: f64,
    /// Deposit volume on the truth grid, m³.
    pub deposit_volume: f64,
    /// Σ (z_pre - z_post) · cell² over the grid, m³ (= scar - deposit).
    pub net_volume: f64,
    /// Largest vertical deficit in the scar, m.
    pub max_deficit: f64,
    /// Largest deposit thickness, m.
    pub max_thickness: f64,
    /// Largest retreat of the cliff top, m.
    pub retreat_max: f64,
    /// Runout length of the deposit from the cliff foot, m.
    pub runout: f64,
    /// Travel angle used, degrees.
    pub travel_angle: f64,
    /// Truth grid cells.
    pub truth_cells: usize,
}

/// `truth.json`: the known answer and everything needed to regenerate it.
#[derive(Debug, Clone, Serialize)]
pub struct TruthDoc {
    pub generator: String,
    pub crs: Crs,
    /// Truth grid geometry (`talus:grid` convention: lower-left corner, cell, shape).
    pub grid: serde_json::Value,
    pub scar: truth::Region,
    pub deposit: truth::Region,
    /// Σ (z_pre - z_post) · cell² over the grid, m³.
    pub net_volume: f64,
    /// Solved and derived parameters.
    pub derived: serde_json::Value,
    pub surveys: serde_json::Value,
    /// The effective configuration (deserialises back into [`Config`]).
    pub config: Config,
}

/// Everything generated, in memory.
pub struct Generated {
    pub site: Site,
    pub truth: truth::TruthGrid,
    pub pre: Vec<u8>,
    pub post: Vec<u8>,
    pub summary: Summary,
    pub doc: TruthDoc,
}

/// Build the site and both surveys in memory (`compress`: LAZ rather than LAS).
pub fn generate(
    config: &Config,
    compress: bool,
    progress: &dyn Progress,
) -> Result<Generated, Error> {
    let site = Site::new(config)?;
    progress.start("truth grid", 0);
    let truth = truth::TruthGrid::compute(&site);
    progress.finish();
    let (pre, pre_stats) = lasout::survey_bytes(&site, Epoch::Pre, compress, progress)?;
    let (post, post_stats) = lasout::survey_bytes(&site, Epoch::Post, compress, progress)?;
    let scar = truth.scar();
    let deposit = truth.deposit();
    let summary = Summary {
        pre: pre_stats.clone(),
        post: post_stats.clone(),
        scar_volume: scar.volume,
        deposit_volume: deposit.volume,
        net_volume: truth.net_volume(),
        max_deficit: scar.max_dz,
        max_thickness: deposit.max_dz,
        retreat_max: site.retreat_max,
        runout: site.runout,
        travel_angle: site.travel_angle,
        truth_cells: truth.z_pre.len(),
    };
    let wkt = crs::utm_wkt(config.crs_epsg)?;
    let mut derived = serde_json::json!({
        "retreat_max_m": site.retreat_max,
        "cliff_width_m": site.cliff_width,
        "deposit_height_m": site.deposit_height,
        "runout_m": site.runout,
        "travel_angle_deg": site.travel_angle,
        "scar_center": [config.origin[0] + site.scar_x, config.origin[1] + site.foot_y(site.scar_x)],
        "deposit_to_scar_volume": deposit.volume / scar.volume,
    });
    if let Some(p) = site.pillar {
        // The void's box in CRS coordinates and its elevations.
        derived["pillar"] = serde_json::json!({
            "x": [config.origin[0] + p.x0, config.origin[0] + p.x1],
            "y": [config.origin[1] + p.y0, config.origin[1] + p.y1],
            "top_m": p.top,
            "bench_m": p.bench,
            "height_m": p.height(),
        });
    }
    let doc = TruthDoc {
        generator: format!("talus-synth {}", env!("CARGO_PKG_VERSION")),
        crs: Crs::from_wkt(&wkt),
        grid: truth.grid_json(),
        net_volume: summary.net_volume,
        derived,
        surveys: serde_json::json!({ "pre": pre_stats, "post": post_stats }),
        scar,
        deposit,
        config: config.clone(),
    };
    Ok(Generated { site, truth, pre, post, summary, doc })
}

/// Generate the site and write `pre.laz`, `post.laz`, `truth.parquet` and `truth.json`
/// into `out_dir`. The configuration is checked (and the site solved) before anything is
/// written; each file is written atomically.
pub fn run(config: &Config, out_dir: &Path, progress: &dyn Progress) -> Result<Summary, Error> {
    let g = generate(config, true, progress)?;
    // One writer per output directory, from the first file written to the last.
    let _lock = talus_io::OutputLock::directory(out_dir)?;
    write_outputs(&g, out_dir)?;
    Ok(g.summary)
}

/// Write generated outputs into `out_dir`.
pub fn write_outputs(g: &Generated, out_dir: &Path) -> Result<(), Error> {
    let crs = g.doc.crs.clone();
    let prov = Provenance::new("synth", env!("CARGO_PKG_VERSION"), &g.doc.config)
        .with_crs(Some(crs))
        .with_extra(talus_schema::diff::GRID_KEY, g.truth.grid_json().to_string());
    let batches = g.truth.batches().map_err(|e| Error::Output {
        path: out_dir.join(names::TRUTH_PARQUET),
        message: e.to_string(),
    })?;
    talus_io::write_parquet(
        &out_dir.join(names::TRUTH_PARQUET),
        Arc::new(truth::schema()),
        &batches,
        &prov,
    )?;
    let json = serde_json::to_vec_pretty(&g.doc).map_err(|e| Error::Output {
        path: out_dir.join(names::TRUTH_JSON),
        message: e.to_string(),
    })?;
    AtomicFile::write_all(&out_dir.join(names::TRUTH_JSON), &json)?;
    AtomicFile::write_all(&out_dir.join(names::PRE), &g.pre)?;
    AtomicFile::write_all(&out_dir.join(names::POST), &g.post)?;
    Ok(())
}

/// The surveys and the truth, as `talus synth` reports them.
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        write!(
            f,
            "synth: {} pre-event points, {} post-event points\n\
             synth: scar {:.0} m³ (max deficit {:.1} m, cliff top retreat {:.1} m), deposit {:.0} m³ \
             (max thickness {:.1} m, runout {:.0} m at travel angle {:.1}°), net {:.0} m³",
            s.pre.points,
            s.post.points,
            s.scar_volume,
            s.max_deficit,
            s.retreat_max,
            s.deposit_volume,
            s.max_thickness,
            s.runout,
            s.travel_angle,
            s.net_volume
        )
    }
}
