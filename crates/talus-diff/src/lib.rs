//! Point-cloud differencing of a pre- and a post-event survey.
//!
//! * **DEM of difference** ([`dod`]): both surveys gridded at a cell size,
//!   `dz = z_post - z_pre`, per-cell error `sigma_dz = sqrt(sigma_pre^2 + sigma_post^2)`
//!   with `sigma^2 = s^2/n + accuracy^2` (point spread and stated survey accuracy), level
//!   of detection `LoD = z_c sigma_dz` at the configured confidence, significant cells
//!   `|dz| > LoD`.
//! * **Volumes and zones** ([`zones`]): loss and gain `V = sum |dz| A` over significant
//!   cells with their error; connected regions of significant loss (`scar`) and gain
//!   (`deposit`) traced into polygons (GeoParquet), each with the unthresholded volume
//!   of its footprint (zone, holes and a margin) and an error that includes horizontal
//!   registration through the surface slope.
//! * **M3C2** ([`m3c2`], Lague et al. 2013, py4dgeo's definitions): distance along a PCA
//!   normal between the mean (or median) positions of both surveys in a projection
//!   cylinder, `LoD95 = 1.96 (sqrt(s1^2/n1 + s2^2/n2) + registration error)`.
//! * **C2C** ([`c2c`]): nearest-neighbour distance of each post point to the pre cloud.
//!
//! [`run`] reads two points tables and writes `dod.parquet`, `zones.parquet`,
//! `m3c2.parquet`, `c2c.parquet` and `summary.json`; [`diff_clouds`] does the same work on
//! in-memory points.

pub mod c2c;
pub mod config;
pub mod dod;
pub mod error;
pub mod m3c2;
mod output;
pub mod register;
pub mod zones;

pub use config::Config;
pub use dod::{Dod, Grid};
pub use error::Error;
pub use talus_io::registration::{Registration, RegistrationStatus};
pub use zones::{Volume, Zone, ZoneKind};

use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};
use talus_io::{Crs, Progress};

/// What `talus diff` reports (also written as `summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// CRS of the outputs.
    pub crs: String,
    /// Pre-event points used (after class filtering).
    pub points_pre: usize,
    /// Post-event points used.
    pub points_post: usize,
    /// DoD grid geometry.
    pub grid: Grid,
    /// Cells with both elevations.
    pub cells_compared: usize,
    /// Cells with |dz| > LoD.
    pub cells_significant: usize,
    /// z-score of the LoD.
    pub lod_z_score: f64,
    /// Median LoD over the compared cells, m.
    pub lod_median: f64,
    /// Significant loss (all significant cells with dz < 0).
    pub loss: Volume,
    /// Significant gain.
    pub gain: Volume,
    /// Gain - loss over significant cells, m^3.
    pub net_volume: f64,
    /// Loss over every compared cell, without the LoD threshold, m^3.
    pub loss_unthresholded: f64,
    /// Gain over every compared cell, without the LoD threshold, m^3.
    pub gain_unthresholded: f64,
    /// Change zones (scar, deposit, ...).
    pub zones: Vec<Zone>,
    /// M3C2 figures.
    pub m3c2: M3c2Summary,
    /// C2C figures.
    pub c2c: C2cSummary,
    /// The co-registration applied to the post-event survey (absent when off).
    pub registration: Option<Registration>,
}

/// M3C2 figures of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct M3c2Summary {
    pub core_points: usize,
    /// Core points with a distance.
    pub valid: usize,
    /// Core points flagged (no normal or too few points).
    pub flagged: usize,
    /// Valid core points with |distance| > LoD95.
    pub significant: usize,
    /// Mean distance over valid core points, m.
    pub mean_distance: f64,
    /// Median LoD95 over valid core points, m.
    pub median_uncertainty: f64,
}

/// C2C figures of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct C2cSummary {
    pub points: usize,
    /// Mean nearest-neighbour distance, m.
    pub mean_distance: f64,
    /// Median nearest-neighbour distance, m.
    pub median_distance: f64,
    /// Largest nearest-neighbour distance, m.
    pub max_distance: f64,
}

/// Everything computed by a differencing run, in memory.
pub struct DiffResult {
    pub dod: Dod,
    pub zones: Vec<Zone>,
    pub m3c2: Vec<m3c2::M3c2Row>,
    pub c2c: Vec<c2c::C2cRow>,
    pub summary: Summary,
}

fn bbox(p: &[[f64; 3]]) -> [f64; 4] {
    p.iter().fold([f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY], |b, q| {
        [b[0].min(q[0]), b[1].min(q[1]), b[2].max(q[0]), b[3].max(q[1])]
    })
}

/// Most cells of a DoD grid (about 140 bytes a cell while differencing: 7 GB at the
/// limit).
pub const MAX_CELLS: usize = 50_000_000;

/// Difference two in-memory surveys (already filtered). `names` label them in errors.
pub fn diff_clouds(
    config: &Config,
    pre: Vec<[f64; 3]>,
    post: Vec<[f64; 3]>,
    names: (&Path, &Path),
    progress: &dyn Progress,
) -> Result<DiffResult, Error> {
    config.validate()?;
    let (bp, bq) = (bbox(&pre), bbox(&post));
    let (xmin, ymin, xmax, ymax) =
        (bp[0].max(bq[0]), bp[1].max(bq[1]), bp[2].min(bq[2]), bp[3].min(bq[3]));
    if !(xmin <= xmax && ymin <= ymax) {
        return Err(Error::NoOverlap {
            pre: names.0.to_path_buf(),
            pre_box: bp,
            post: names.1.to_path_buf(),
            post_box: bq,
        });
    }
    let grid = Grid::covering(xmin, ymin, xmax, ymax, config.dod.cell_size);
    if grid.exceeds(MAX_CELLS) {
        return Err(Error::GridTooLarge {
            cell: config.dod.cell_size,
            nx: grid.nx,
            ny: grid.ny,
            extent: [xmax - xmin, ymax - ymin],
            max: MAX_CELLS,
        });
    }
    // M3C2, C2C and the registration share the pre-event k-d tree.
    let registering = config.registration.method != config::RegistrationMethod::None;
    let need_tree = config.m3c2.enabled || config.c2c.enabled || registering;
    let (pre_cloud, pre_plain) =
        if need_tree { (Some(m3c2::Cloud::new(pre)), Vec::new()) } else { (None, pre) };
    let pre_points: &[[f64; 3]] = pre_cloud.as_ref().map_or(&pre_plain, |c| &c.points);
    let mut post = post;
    let registration = registering.then(|| {
        progress.start("registration", 0);
        let cloud = pre_cloud.as_ref().expect("tree built");
        let r = register::register(cloud, &post, grid, &config.dod, &config.registration);
        progress.finish();
        r
    });
    let registration_rms = match &registration {
        Some(r) if r.status != RegistrationStatus::Degenerate => {
            post = post.par_iter().map(|p| r.apply(p)).collect();
            r.rms
        }
        _ => 0.0,
    };
    progress.start("dod", 0);
    let dod = dod::difference_registered(grid, pre_points, &post, &config.dod, registration_rms);
    let compared: Vec<usize> = (0..grid.len()).filter(|&i| dod.dz[i].is_finite()).collect();
    if compared.is_empty() {
        return Err(Error::EmptyOverlap {
            cell: config.dod.cell_size,
            pre: names.0.to_path_buf(),
            post: names.1.to_path_buf(),
        });
    }
    let zones = zones::find_zones(&dod, &config.zones, config.dod.volume_error);
    progress.finish();

    let ve = config.dod.volume_error;
    let loss_cells: Vec<usize> =
        compared.iter().copied().filter(|&i| dod.significant[i] && dod.dz[i] < 0.0).collect();
    let gain_cells: Vec<usize> =
        compared.iter().copied().filter(|&i| dod.significant[i] && dod.dz[i] > 0.0).collect();
    let loss = zones::volume_of(&dod, loss_cells.iter().copied(), -1.0, ve);
    let gain = zones::volume_of(&dod, gain_cells.iter().copied(), 1.0, ve);
    let a = grid.cell_area();
    let loss_unthresholded = compared.iter().map(|&i| (-dod.dz[i]).max(0.0) * a).sum();
    let gain_unthresholded = compared.iter().map(|&i| dod.dz[i].max(0.0) * a).sum();
    let mut lods: Vec<f64> = compared.iter().map(|&i| dod.lod[i]).collect();
    let lod_median = median(&mut lods);

    let (pre_n, post_n) = (pre_points.len(), post.len());
    let mut m3c2_rows = Vec::new();
    let mut m3c2_summary = M3c2Summary::default();
    let mut post_points = Some(post);
    if config.m3c2.enabled {
        let pre_cloud = pre_cloud.as_ref().expect("tree built");
        let cores: Vec<[f64; 3]> = match config.m3c2.core_points {
            config::CorePoints::All => pre_cloud.points.clone(),
            config::CorePoints::Spacing => {
                m3c2::subsample(&pre_cloud.points, config.m3c2.core_spacing)
            }
            config::CorePoints::DodCells => (0..grid.len())
                .filter(|&i| dod.pre.z[i].is_finite())
                .map(|i| {
                    let (x, y) = grid.centre(i);
                    [x, y, dod.pre.z[i]]
                })
                .collect(),
        };
        progress.start("m3c2", cores.len() as u64);
        let post_cloud = m3c2::Cloud::new(post_points.take().expect("post points"));
        // A registration's measured residual replaces the stated registration error.
        let mut m3c2_config = config.m3c2.clone();
        if registration.as_ref().is_some_and(|r| r.status != RegistrationStatus::Degenerate) {
            m3c2_config.registration_error = registration_rms;
        }
        m3c2_rows = m3c2::m3c2(pre_cloud, &post_cloud, &cores, &m3c2_config);
        progress.inc(cores.len() as u64);
        progress.finish();
        post_points = Some(post_cloud.points);
        m3c2_summary = summarize_m3c2(&m3c2_rows);
    }
    let mut c2c_rows = Vec::new();
    let mut c2c_summary = C2cSummary::default();
    if config.c2c.enabled {
        let post = post_points.as_ref().expect("post points");
        progress.start("c2c", post.len() as u64);
        c2c_rows =
            c2c::c2c(pre_cloud.as_ref().expect("tree built"), post, config.c2c.plane_neighbours);
        progress.inc(post.len() as u64);
        progress.finish();
        let mut d: Vec<f64> = c2c_rows.iter().map(|r| r.distance).collect();
        c2c_summary = C2cSummary {
            points: d.len(),
            mean_distance: d.iter().sum::<f64>() / d.len().max(1) as f64,
            max_distance: d.iter().copied().fold(0.0, f64::max),
            median_distance: median(&mut d),
        };
    }

    let summary = Summary {
        crs: String::new(),
        points_pre: pre_n,
        points_post: post_n,
        grid,
        cells_compared: compared.len(),
        cells_significant: loss.cells + gain.cells,
        lod_z_score: dod.z_score,
        lod_median,
        loss,
        gain,
        net_volume: gain.volume - loss.volume,
        loss_unthresholded,
        gain_unthresholded,
        zones: zones.clone(),
        m3c2: m3c2_summary,
        c2c: c2c_summary,
        registration,
    };
    Ok(DiffResult { dod, zones, m3c2: m3c2_rows, c2c: c2c_rows, summary })
}

fn summarize_m3c2(rows: &[m3c2::M3c2Row]) -> M3c2Summary {
    let valid: Vec<&m3c2::M3c2Row> = rows.iter().filter(|r| r.flag == 0).collect();
    let mut lods: Vec<f64> = valid.iter().map(|r| r.uncertainty).collect();
    M3c2Summary {
        core_points: rows.len(),
        valid: valid.len(),
        flagged: rows.len() - valid.len(),
        significant: valid.iter().filter(|r| r.significant).count(),
        mean_distance: valid.iter().map(|r| r.distance).sum::<f64>() / valid.len().max(1) as f64,
        median_uncertainty: median(&mut lods),
    }
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) }
}

/// The output files of a run in `out_dir`.
pub fn output_paths(out_dir: &Path) -> [PathBuf; 10] {
    talus_schema::file_names::in_dir(out_dir, talus_schema::file_names::diff::ALL)
}

/// Read two points tables, difference them, write every output into `out_dir`.
pub fn run(
    config: &Config,
    pre_path: &Path,
    post_path: &Path,
    out_dir: &Path,
    progress: &dyn Progress,
) -> Result<Summary, Error> {
    config.validate()?;
    progress.start("read", 0);
    let mut crs_of = Vec::new();
    let mut clouds = Vec::new();
    for path in [pre_path, post_path] {
        let points = talus_io::points::read(path, &config.classes)?;
        if points.xyz.is_empty() {
            return Err(Error::EmptyAfterFilter {
                path: path.to_path_buf(),
                classes: config.classes.clone(),
                total: points.total,
            });
        }
        crs_of.push(points.crs);
        clouds.push(points.xyz);
    }
    progress.finish();
    let crs = check_crs(config, pre_path, &crs_of[0], post_path, &crs_of[1])?;
    let post = clouds.pop().expect("two clouds");
    let pre = clouds.pop().expect("two clouds");
    let mut result = diff_clouds(config, pre, post, (pre_path, post_path), progress)?;
    result.summary.crs = crs.as_ref().map_or_else(|| "unknown".to_string(), Crs::label);
    // One writer per output directory, from the first file written to the last.
    let _lock = talus_io::OutputLock::directory(out_dir)?;
    progress.start("write", 0);
    output::write_all(config, &result, crs.as_ref(), &[pre_path, post_path], out_dir)?;
    progress.finish();
    Ok(result.summary)
}

/// The CRS of the outputs, or an error when the surveys disagree.
fn check_crs(
    config: &Config,
    pre: &Path,
    a: &Option<Crs>,
    post: &Path,
    b: &Option<Crs>,
) -> Result<Option<Crs>, Error> {
    if !Crs::same_recorded(a, b) && !config.same_crs {
        return Err(Error::CrsMismatch {
            pre: pre.to_path_buf(),
            pre_crs: Crs::label_recorded(a),
            post: post.to_path_buf(),
            post_crs: Crs::label_recorded(b),
        });
    }
    Ok(a.clone().or_else(|| b.clone()))
}

/// The grid, volumes and zones, as `talus diff` reports them.
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        write!(
            f,
            "diff: {} + {} points ({}), {} x {} cells of {} m, {} compared, {} significant (LoD median {:.3} m)",
            s.points_pre,
            s.points_post,
            s.crs,
            s.grid.nx,
            s.grid.ny,
            s.grid.cell,
            s.cells_compared,
            s.cells_significant,
            s.lod_median
        )?;
        write!(
            f,
            "\n  loss {:.1} ± {:.1} m³, gain {:.1} ± {:.1} m³, net {:+.1} m³",
            s.loss.volume, s.loss.error, s.gain.volume, s.gain.error, s.net_volume
        )?;
        for z in &s.zones {
            write!(
                f,
                "\n  zone {} {}: {:.0} m², {:.1} ± {:.1} m³",
                z.zone_id,
                z.kind.name(),
                z.area,
                z.volume.volume,
                z.volume.error
            )?;
        }
        if let Some(r) = &s.registration {
            let t = r.translation;
            let a = r.rotation_deg;
            write!(
                f,
                "\n  registration ({:?}): shift [{:.3}, {:.3}, {:.3}] m, rotation [{:.4}, {:.4}, {:.4}]°, RMS {:.3} m (before {:.3} m) on {} of {} sampled points, {} changed cells left out",
                r.status,
                t[0],
                t[1],
                t[2],
                a[0],
                a[1],
                a[2],
                r.rms,
                r.rms_before,
                r.points_used,
                r.points_sampled,
                r.cells_excluded
            )?;
        }
        if s.m3c2.core_points > 0 {
            write!(
                f,
                "\n  M3C2: {} core points, {} valid, {} significant, {} flagged",
                s.m3c2.core_points, s.m3c2.valid, s.m3c2.significant, s.m3c2.flagged
            )?;
        }
        if s.c2c.points > 0 {
            write!(
                f,
                "\n  C2C: {} points, median distance {:.3} m",
                s.c2c.points, s.c2c.median_distance
            )?;
        }
        Ok(())
    }
}
