//! `talus terrain`: the post-event ground surface as a triangulated irregular network.
//!
//! Given ground returns $p_i = (x_i, y_i, z_i)$, the TIN is the Delaunay triangulation of
//! the $(x_i, y_i)$ with $z$ carried, i.e. the piecewise-linear surface
//! $z_{TIN}(x, y) = \sum_k \lambda_k(x, y)\, z_{v_k}$ over the triangle containing $(x, y)$
//! ($\lambda$ barycentric). Steps:
//!
//! 1. keep the configured classes (ground, 2) inside the region of interest (whole extent,
//!    a bounding box, or the convex hull of the diff's scar/deposit zones grown by a
//!    buffer, so the runout path between them is covered); with `surface = "bed"` the
//!    points inside the diff's deposit zones come from the pre-event survey instead, so
//!    the TIN is the bed the collapse ran on (scar surface kept, deposit removed):
//!    $z_{bed} = z_{pre}$ in the deposit zones, $z_{post}$ elsewhere;
//! 2. merge duplicate (x, y) within a tolerance (keep lowest / highest / mean);
//! 3. choose the vertices ([`simplify`]): every point, greedy error-driven insertion
//!    (target vertex count and/or maximum vertical error), or grid thinning;
//! 4. triangulate ([`tin::Tin`], delaunator; triangles counter-clockwise from above,
//!    checked by [`tin::Tin::is_valid`] with exact predicates) and write vertices and
//!    triangles (unit upward normal, 3D area, slope) to Parquet, plus PLY (and OBJ).

pub mod config;
pub mod error;
pub mod export;
pub mod prepare;
pub mod simplify;
pub mod tin;

pub use config::{Config, Duplicates, Region, Simplify, Surface, ZoneKind};
pub use error::Error;

use serde::Serialize;
use std::path::Path;
use talus_io::Progress;
pub use tin::{Tin, TinError};

/// What the stage did.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Points in the input file.
    pub points_read: usize,
    /// Points of the kept classes inside the region.
    pub points_kept: usize,
    /// Points merged away as duplicates.
    pub duplicates_merged: usize,
    /// TIN vertices.
    pub vertices: usize,
    /// TIN triangles.
    pub triangles: usize,
    /// Planimetric area covered, m².
    pub area_2d: f64,
    /// Surface area, m².
    pub area_3d: f64,
    /// Vertical misfit of the points left out.
    pub misfit: simplify::Misfit,
    /// Simplification rounds.
    pub rounds: usize,
    /// With `surface = "bed"`: what was replaced.
    pub bed: Option<BedSummary>,
    /// Whether the diff's co-registration of the post-event survey was applied to the
    /// points (the zones record it, and `points` is the survey it registered).
    pub registered: bool,
}

/// The co-registration the diff that wrote `zones` applied to its post-event survey
/// (`talus_io::registration`), if that survey is the file `points` (same SHA-256 as the
/// diff's second input) and the registration moved it (not degenerate).
pub fn diff_registration(
    zones: &Path,
    points: &Path,
) -> Result<Option<talus_io::registration::Registration>, Error> {
    let Some((reg, prov)) = talus_io::registration::read(zones)? else {
        return Ok(None);
    };
    let Some(post) = prov.inputs.get(1) else {
        return Ok(None);
    };
    if reg.status == talus_io::registration::RegistrationStatus::Degenerate
        || talus_io::provenance::sha256_file(points)? != post.sha256
    {
        return Ok(None);
    }
    Ok(Some(reg))
}

/// Points of the kept classes, the number of points read and the input's CRS.
pub type ReadPoints = (Vec<[f64; 3]>, usize, Option<talus_io::Crs>);

/// Points of the kept classes (as (x, y, z)) and the input's CRS.
pub fn read_points(config: &Config, points: &Path) -> Result<ReadPoints, Error> {
    let p = talus_io::points::read(points, &config.classes)?;
    Ok((p.xyz, p.total, p.crs))
}

/// The region of interest as a convex region (`None` = everything).
pub fn region(
    config: &Config,
    zones: Option<&Path>,
) -> Result<Option<prepare::ConvexRegion>, Error> {
    match config.region {
        Region::Extent => Ok(None),
        Region::Bbox => {
            let b = config.bbox.unwrap_or_default();
            let corners = [[b[0], b[1]], [b[2], b[1]], [b[2], b[3]], [b[0], b[3]]];
            Ok(Some(prepare::ConvexRegion::new(&corners, 0.0)))
        }
        Region::Zones => {
            let path = zones.ok_or_else(|| {
                Error::Config("region = \"zones\" needs the diff's zones file (--zones)".into())
            })?;
            let polygons = zone_polygons(path, &config.zone_kinds)?;
            let outline: Vec<[f64; 2]> =
                polygons.iter().filter_map(|p| p.first()).flatten().copied().collect();
            if outline.is_empty() {
                let names: Vec<_> = config.zone_kinds.iter().map(|k| k.name()).collect();
                return Err(Error::Input {
                    path: path.to_path_buf(),
                    message: format!("no zone of kind {names:?}: the region of interest is empty"),
                });
            }
            Ok(Some(prepare::ConvexRegion::new(&outline, config.buffer)))
        }
    }
}

/// A polygon: its outer ring then its holes, each a list of (x, y) vertices.
pub use talus_io::zones::Polygon;

/// The polygons (holes included) of the zones of the given kinds in a zones table.
pub fn zone_polygons(path: &Path, kinds: &[ZoneKind]) -> Result<Vec<Polygon>, Error> {
    let (zones, _) = talus_io::zones::read(path)?;
    Ok(zones.into_iter().filter(|z| kinds.contains(&z.kind)).flat_map(|z| z.polygons).collect())
}

/// How the bed surface was put together (`surface = "bed"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BedSummary {
    /// Polygons of the deposit zones (a zone may have several), inside which the
    /// post-event points were replaced.
    pub deposit_polygons: usize,
    /// Post-event points dropped inside the deposit zones.
    pub post_points_dropped: usize,
    /// Pre-event points taken inside the deposit zones.
    pub pre_points_used: usize,
}

/// The bed the collapse ran on: `post` outside the deposit `polygons`, `pre` inside them.
pub fn bed_points(
    post: Vec<[f64; 3]>,
    pre: Vec<[f64; 3]>,
    polygons: &[Polygon],
) -> (Vec<[f64; 3]>, BedSummary) {
    let mut summary = BedSummary { deposit_polygons: polygons.len(), ..BedSummary::default() };
    if polygons.is_empty() {
        return (post, summary);
    }
    let outline = talus_io::geo::Outline::new(polygons, BED_BAND);
    let n_post = post.len();
    let mut out: Vec<[f64; 3]> =
        post.into_iter().filter(|p| !outline.contains(p[0], p[1], 0.0)).collect();
    summary.post_points_dropped = n_post - out.len();
    let kept_post = out.len();
    out.extend(pre.into_iter().filter(|p| outline.contains(p[0], p[1], 0.0)));
    summary.pre_points_used = out.len() - kept_post;
    (out, summary)
}

/// Height of the bands of the deposit outline's edge index, m.
const BED_BAND: f64 = 5.0;

/// Build the TIN from points already read: region, duplicates, simplification.
pub fn build(
    config: &Config,
    points: Vec<[f64; 3]>,
    region: Option<&prepare::ConvexRegion>,
    progress: &dyn Progress,
) -> Result<(simplify::Simplified, usize, usize), TinError> {
    let inside: Vec<[f64; 3]> = match region {
        Some(r) => points.into_iter().filter(|p| r.contains(p[0], p[1])).collect(),
        None => points,
    };
    let kept = inside.len();
    let (pts, merged) =
        prepare::merge_duplicates(&inside, config.duplicate_tolerance, config.duplicates);
    drop(inside);
    let s = match config.simplify {
        Simplify::None => simplify::grid(&pts, None, None, progress)?,
        Simplify::Greedy => simplify::greedy(
            &pts,
            config.max_vertices,
            config.max_error,
            config.hull_tolerance,
            progress,
        )?,
        Simplify::Grid => simplify::grid(&pts, config.grid_cell, config.max_vertices, progress)?,
    };
    Ok((s, kept, merged))
}

/// Run the stage: `points` (a points table) -> `out_dir/{vertices,triangles}.parquet`,
/// `out_dir/terrain.ply` (and `terrain.obj`).
///
/// With `surface = "bed"`, `pre` (the pre-event points table, in the same CRS) and `zones`
/// are required: inside the deposit zones the pre-event points replace the post-event ones.
pub fn run(
    config: &Config,
    points: &Path,
    pre: Option<&Path>,
    zones: Option<&Path>,
    out_dir: &Path,
    progress: &dyn Progress,
) -> Result<Summary, Error> {
    config.validate()?;
    let region = region(config, zones)?;
    let (mut pts, read, crs) = read_points(config, points)?;
    if pts.is_empty() {
        return Err(Error::Input {
            path: points.to_path_buf(),
            message: format!("no point of classes {:?}", config.classes),
        });
    }
    // The post-event points the diff co-registered lie where the zones are only with the
    // same transform.
    let registration = match zones {
        Some(z) => diff_registration(z, points)?,
        None => None,
    };
    if let Some(reg) = &registration {
        for p in pts.iter_mut() {
            *p = reg.apply(p);
        }
    }
    let mut bed = None;
    let mut inputs = vec![points.to_path_buf()];
    if config.surface == Surface::Bed {
        let (Some(pre), Some(zones)) = (pre, zones) else {
            return Err(Error::Config(
                "surface = \"bed\" needs the pre-event points (--pre) and the diff's zones (--zones)"
                    .into(),
            ));
        };
        let (pre_pts, _, pre_crs) = read_points(config, pre)?;
        if !talus_io::Crs::same_recorded(&crs, &pre_crs) {
            return Err(Error::Input {
                path: pre.to_path_buf(),
                message: format!(
                    "is in {}, but the post-event points {} are in {}: the bed surface needs both surveys in one CRS",
                    talus_io::Crs::label_recorded(&pre_crs),
                    points.display(),
                    talus_io::Crs::label_recorded(&crs)
                ),
            });
        }
        let polygons = zone_polygons(zones, &[ZoneKind::Deposit])?;
        let (merged, s) = bed_points(pts, pre_pts, &polygons);
        pts = merged;
        bed = Some(s);
        inputs.push(pre.to_path_buf());
    }
    let (s, kept, merged) = build(config, pts, region.as_ref(), progress)
        .map_err(|source| Error::Tin { path: points.to_path_buf(), source })?;
    let tin = &s.tin;
    // The zones are an input when they shape the region or the bed.
    let zones_used =
        config.region == Region::Zones || config.surface == Surface::Bed || registration.is_some();
    inputs.extend(zones.filter(|_| zones_used).map(Path::to_path_buf));
    let prov = talus_io::Provenance::new("terrain", env!("CARGO_PKG_VERSION"), config)
        .with_inputs(&inputs)?
        .with_crs(crs);
    // One writer per output directory, from the first file written to the last.
    let _lock = talus_io::OutputLock::directory(out_dir)?;
    let area_3d = export::write_all(tin, out_dir, &prov, config.obj)?;
    Ok(Summary {
        points_read: read,
        points_kept: kept,
        duplicates_merged: merged,
        vertices: tin.vertices.len(),
        triangles: tin.triangles.len(),
        area_2d: tin.area_2d(),
        area_3d,
        misfit: s.misfit,
        rounds: s.rounds,
        bed,
        registered: registration.is_some(),
    })
}

/// The TIN and its misfit, as `talus terrain` reports them.
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        if s.registered {
            writeln!(
                f,
                "terrain: the post-event points moved by the diff's co-registration (talus:registration of the zones)"
            )?;
        }
        if let Some(b) = &s.bed {
            writeln!(
                f,
                "terrain: bed surface: {} post-event points inside the deposit zones ({} polygons) replaced by {} pre-event points",
                b.post_points_dropped, b.deposit_polygons, b.pre_points_used
            )?;
        }
        write!(
            f,
            "terrain: {} vertices, {} triangles from {} of {} points ({} duplicates merged); {:.0} m² planimetric, {:.0} m² surface; misfit of left-out points max {:.3} m, rms {:.3} m",
            s.vertices,
            s.triangles,
            s.points_kept,
            s.points_read,
            s.duplicates_merged,
            s.area_2d,
            s.area_3d,
            s.misfit.max_error,
            s.misfit.rms_error
        )
    }
}
