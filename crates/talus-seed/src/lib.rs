//! `talus seed`: fill the collapsed volume with rigid parallelepipeds.
//!
//! The void is the rock between the post-event surface (below) and the pre-event surface
//! (above) inside the scar zone, read from the DEM of difference as cell-constant columns
//! ([`void`]): its volume is $V = \sum_{cells} (z_{pre} - z_{post})^+ \, \Delta^2$.
//! With `orientation = "scar_floor"` the blocks lie in the frame of the scar's floor
//! plane instead, on the void resampled in that frame ([`tilted`]); otherwise they stand
//! upright. Blocks of edges (a, b, c) stand with c vertical and edge a along the azimuth the
//! remaining cliff faces (mean horizontal normal of the post-event surface in the scar),
//! as in the thesis (§6.2); when that direction is within `axis_snap` of a grid axis the
//! paving along the axis is also tried and the fuller one kept. They are placed by an
//! exact dynamic programme over a lattice of strip and column positions that maximises
//! the number of blocks whose every point lies in the void ([`pack`]) — or, with
//! `min_inside` = f < 1, at least the fraction f of whose volume lies below the
//! pre-event surface (a block of height c with top T over cells of pre-event heights
//! z_i: $\frac{1}{n}\sum_i \mathrm{clamp}(z_i - T + c, 0, c)/c \ge f$); further size
//! classes fill what is left. With the post-event TIN the simulation uses
//! (`--terrain`), a column's floor is also at least the TIN's
//! largest height over the column's footprint ([`void::TinFloor`], exact), so no block
//! starts inside the terrain; the volume to fill stays the DoD's. Reported: seeded volume
//! $N a b c$, volume to fill $V$ and fill fraction $N a b c / V$.
//!
//! The thesis's `size_N.data`/`position_N.data` files are read and written by [`thesis`].

pub mod boxes;
pub mod config;
pub mod error;
pub mod pack;
pub mod thesis;
pub mod tilted;
pub mod void;

pub use config::Config;
pub use error::Error;

use boxes::Block;
use nalgebra::UnitQuaternion;
use serde::Serialize;
use std::path::Path;
use talus_io::{Progress, Provenance};
use void::{GridGeometry, Outline, Void};

pub(crate) fn positive(v: f64) -> bool {
    v > 0.0 && v.is_finite()
}

/// Blocks of one size class.
#[derive(Debug, Clone, Serialize)]
pub struct ClassCount {
    /// Edges (a, b, c), m (c nominal with `thickness = "fit"`).
    pub size: [f64; 3],
    /// Blocks placed.
    pub blocks: usize,
    /// Their volume, m³.
    pub volume: f64,
    /// Least and largest edge c of the blocks placed, m (c and c with one thickness).
    pub thickness: [f64; 2],
    /// The share of the volume to fill the class was allowed (none: no cap).
    pub volume_fraction_target: Option<f64>,
}

/// The exponent b of N(≥ V) ∝ V^(−b) fitted (least squares in log-log) to the classes'
/// cumulative counts against their mean block volume, largest first; none with fewer than
/// two classes holding blocks. Consecutive classes of one nominal volume (a power law's
/// shapes) count as one.
pub fn fitted_exponent(classes: &[ClassCount]) -> Option<f64> {
    let nominal = |c: &ClassCount| c.size.iter().product::<f64>();
    let mut pts = Vec::new();
    let mut cumulative = 0usize;
    let same_volume =
        |a: &ClassCount, b: &ClassCount| (nominal(a) - nominal(b)).abs() <= 1e-9 * nominal(a);
    for group in classes.chunk_by(same_volume) {
        let blocks: usize = group.iter().map(|c| c.blocks).sum();
        let volume: f64 = group.iter().map(|c| c.volume).sum();
        cumulative += blocks;
        if blocks > 0 {
            pts.push(((volume / blocks as f64).ln(), (cumulative as f64).ln()));
        }
    }
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) =
        (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (sxx > 0.0).then(|| -sxy / sxx)
}

/// What the stage did.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Blocks written.
    pub blocks: usize,
    /// Blocks per size class, largest first (after scaling to the target count).
    pub classes: Vec<ClassCount>,
    /// Exponent b of N(≥ V) ∝ V^(−b) of the blocks placed ([`fitted_exponent`]).
    pub fitted_exponent: Option<f64>,
    /// Σ a b c over blocks, m³.
    pub seeded_volume: f64,
    /// Volume between the surfaces inside the scar, m³.
    pub volume_to_fill: f64,
    /// seeded_volume / volume_to_fill.
    pub fill_fraction: f64,
    /// Part of the seeded volume below the pre-event surface (each footprint sampled on
    /// an 8 × 8 grid), m³; `seeded_volume` (to rounding) with `min_inside = 1`.
    pub volume_in_void: f64,
    /// Total mass, kg.
    pub mass: f64,
    /// Direction of edge a, degrees counter-clockwise from east.
    pub azimuth_deg: f64,
    /// With `orientation = "scar_floor"`: the floor plane's dip (degrees from
    /// horizontal) and dip direction (degrees clockwise from north).
    pub floor_dip_deg: Option<[f64; 2]>,
    /// With `orientation = "scar_floor"`: the volume of the void resampled on the
    /// floor's grid (the most its blocks could fill), m³.
    pub floor_void_volume: Option<f64>,
    /// Scar cells with both surfaces known.
    pub scar_cells: usize,
    /// Scar cells where the post-event surface is above the pre-event one (warning).
    pub crossing_cells: usize,
    /// The `min_inside` in force (below 1, blocks may stick out of the void); not in
    /// the recorded summary, which the configuration already holds.
    #[serde(skip)]
    pub min_inside: f64,
}

/// Read the void: the DoD grid restricted to the scar polygons. Returns the void, the
/// scar outline index and the DoD's CRS.
pub fn read_void(
    config: &Config,
    dod: &Path,
    zones: &Path,
) -> Result<(Void, Outline, Option<talus_io::Crs>), Error> {
    let (table, _) = talus_io::zones::read(zones)?;
    let wanted = |id: i32| config.zone_ids.is_empty() || config.zone_ids.contains(&id);
    let polygons: Vec<_> = table
        .into_iter()
        .filter(|z| z.kind == talus_io::zones::ZoneKind::Scar && wanted(z.zone_id))
        .flat_map(|z| z.polygons)
        .collect();
    if polygons.is_empty() {
        return Err(Error::EmptyScar {
            path: zones.to_path_buf(),
            message: if config.zone_ids.is_empty() {
                "no zone of kind `scar`".into()
            } else {
                format!("no scar zone among {:?}", config.zone_ids)
            },
        });
    }
    let dt = talus_io::read_table(dod, &talus_schema::diff::dod_schema())?;
    let grid: GridGeometry = dt
        .metadata
        .get(talus_schema::diff::GRID_KEY)
        .and_then(|g| serde_json::from_str(g).ok())
        .ok_or_else(|| Error::Input {
            path: dod.to_path_buf(),
            message: format!(
                "no valid grid geometry under the `{}` metadata key",
                talus_schema::diff::GRID_KEY
            ),
        })?;
    if !(positive(grid.cell) && grid.nx > 0 && grid.ny > 0) {
        return Err(Error::Input {
            path: dod.to_path_buf(),
            message: format!("bad grid geometry {grid:?}"),
        });
    }
    let (rows, cols, zp, zq) =
        (dt.u32s("row")?, dt.u32s("col")?, dt.f64s("z_pre")?, dt.f64s("z_post")?);
    let n = grid.nx * grid.ny;
    let (mut z_pre, mut z_post) = (vec![f64::NAN; n], vec![f64::NAN; n]);
    for i in 0..rows.len() {
        let (r, c) = (rows[i] as usize, cols[i] as usize);
        if r >= grid.ny || c >= grid.nx {
            return Err(Error::Input {
                path: dod.to_path_buf(),
                message: format!("cell ({r}, {c}) outside the {} x {} grid", grid.ny, grid.nx),
            });
        }
        z_pre[r * grid.nx + c] = zp[i];
        z_post[r * grid.nx + c] = zq[i];
    }
    let outline = Outline::new(&polygons, grid.cell);
    let mut v = Void { grid, z_pre, z_post, fillable: vec![false; n] };
    for r in 0..grid.ny {
        for c in 0..grid.nx {
            let i = r * grid.nx + c;
            let m = v.centre(r, c);
            v.fillable[i] = v.z_pre[i].is_finite()
                && v.z_post[i].is_finite()
                && outline.contains(m[0], m[1], 0.0);
        }
    }
    Ok((v, outline, dt.provenance().crs))
}

/// The result of seeding in memory.
#[derive(Debug, Clone)]
pub struct Seeding {
    pub blocks: Vec<Block>,
    pub summary: Summary,
}

/// Seed blocks into `void` (in memory). `path` names the DoD in errors.
pub fn seed(
    config: &Config,
    void: &Void,
    outline: Option<&Outline>,
    path: &Path,
    progress: &dyn Progress,
) -> Result<Seeding, Error> {
    seed_above(config, void, outline, None, path, progress)
}

/// Seed blocks into `void`, every block also above `terrain` (the post-event TIN the
/// simulation will use) by at least `clearance`: a column's floor is at least the TIN's
/// largest height over its footprint. The volume to fill stays the void's.
pub fn seed_above(
    config: &Config,
    void: &Void,
    outline: Option<&Outline>,
    terrain: Option<&void::TinFloor>,
    path: &Path,
    progress: &dyn Progress,
) -> Result<Seeding, Error> {
    config.validate()?;
    let cells = void.fillable.iter().filter(|f| **f).count();
    if cells == 0 {
        return Err(Error::EmptyScar {
            path: path.to_path_buf(),
            message: "no grid cell with both surfaces inside the scar".into(),
        });
    }
    let crossing = void.crossing_cells();
    if crossing as f64 > config.max_crossing_fraction * cells as f64 {
        return Err(Error::Crossing {
            path: path.to_path_buf(),
            crossing,
            cells,
            max: config.max_crossing_fraction,
        });
    }
    let volume = void.volume();
    let sizes = config.classes();
    // With a target count the sizes are scaled to it (at most max_blocks, checked above).
    let bound = config.block_bound(volume);
    if config.target_count.is_none() && (bound.is_nan() || bound > config.max_blocks as f64) {
        let smallest = sizes
            .iter()
            .map(|c| c.size)
            .min_by(|a, b| a.iter().product::<f64>().total_cmp(&b.iter().product::<f64>()))
            .expect("validate: at least one class");
        return Err(Error::TooManyBlocks {
            path: path.to_path_buf(),
            bound,
            volume,
            smallest,
            max: config.max_blocks,
        });
    }
    let tilted = match config.orientation {
        config::Orientation::Upright => None,
        config::Orientation::ScarFloor => {
            let cell = void.grid.cell / config.subdivide as f64;
            Some(tilted::TiltedVoid::new(void, outline, terrain, cell).ok_or_else(|| {
                Error::EmptyScar {
                    path: path.to_path_buf(),
                    message: "no plane can be fitted to the post-event surface in the scar".into(),
                }
            })?)
        }
    };
    let facing = match (&tilted, config.azimuth) {
        (Some(_), _) => 0.0,
        (None, Some(a)) => a.to_radians(),
        (None, None) => void::facing_azimuth(void).0,
    };
    let subdivided = (tilted.is_none() && config.subdivide > 1)
        .then(|| void.subdivided(config.subdivide, outline));
    // The void the classes are paved on, a fresh copy per paving.
    let paved: &Void = tilted.as_ref().map(|t| &t.void).or(subdivided.as_ref()).unwrap_or(void);
    // In the floor's frame the resampled void already holds the outline and the terrain.
    let (outline_p, terrain_p) = if tilted.is_some() { (None, None) } else { (outline, terrain) };
    let run_at = |scale: f64, azimuth: f64| {
        let mut v = paved.clone();
        let mut blocks = Vec::new();
        let mut classes = Vec::new();
        for (k, s) in sizes.iter().enumerate() {
            let size = s.size.map(|e| e * scale);
            let p = pack::Paving {
                size,
                azimuth,
                lattice: config.lattice,
                gap: config.gap,
                clearance: config.clearance,
                min_inside: config.min_inside,
                thickness: config.thickness,
                thickness_range: config.thickness_range,
                max_volume: s.volume_fraction.map(|f| f * volume),
            };
            let mut b = pack::pave(&mut v, outline_p, terrain_p, &p, config.stacking, progress);
            for blk in &mut b {
                blk.class = k as u32;
                if let Some(t) = &tilted {
                    *blk = t.to_world(blk);
                }
            }
            let thickness = b.iter().fold([f64::INFINITY, f64::NEG_INFINITY], |t, blk| {
                [t[0].min(blk.size[2]), t[1].max(blk.size[2])]
            });
            classes.push(ClassCount {
                size,
                blocks: b.len(),
                // From +0 (`Iterator::sum` starts at −0: an empty class printed "-0 m³").
                volume: b.iter().map(Block::volume).fold(0.0, |a, v| a + v),
                thickness: if b.is_empty() { [size[2]; 2] } else { thickness },
                volume_fraction_target: s.volume_fraction,
            });
            blocks.extend(b);
        }
        (blocks, classes)
    };
    // The first paving is at scale 1, or at the first guess of the target-count search.
    let scale0 = match config.target_count {
        None => 1.0,
        Some(target) => target_scale(config, volume, target),
    };
    // The grid axis nearest the facing direction, when close enough, competes with it;
    // the winner's paving is kept as the first result (on the floor, facing is 0, an
    // axis).
    let quarter = std::f64::consts::FRAC_PI_2;
    let axis = (facing / quarter).round() * quarter;
    let (azimuth, first) = if config.azimuth.is_none()
        && axis != facing
        && (axis - facing).abs() <= config.axis_snap.to_radians()
    {
        let seeded = |r: &(Vec<Block>, Vec<ClassCount>)| r.0.iter().map(Block::volume).sum::<f64>();
        let (on_axis, on_facing) = (run_at(scale0, axis), run_at(scale0, facing));
        if seeded(&on_axis) > seeded(&on_facing) { (axis, on_axis) } else { (facing, on_facing) }
    } else {
        (facing, run_at(scale0, facing))
    };
    let run_at = |scale: f64| run_at(scale, azimuth);
    let (blocks, classes) = match config.target_count {
        None => first,
        Some(target) => {
            // Initial scale from the volume, then bisection on log(scale): the count
            // falls as the blocks grow.
            let (mut lo, mut hi) = (scale0 / 4.0, scale0 * 4.0);
            let mut best = first;
            for _ in 0..24 {
                let mid = (lo * hi).sqrt();
                let r = run_at(mid);
                let n = r.0.len();
                if n.abs_diff(target) < best.0.len().abs_diff(target) {
                    best = r;
                }
                if n == target {
                    break;
                }
                if n > target { lo = mid } else { hi = mid }
            }
            best
        }
    };
    if blocks.is_empty() {
        return Err(Error::NothingFits { size: sizes[0].size, volume, cells });
    }
    let seeded: f64 = blocks.iter().map(Block::volume).sum();
    let volume_in_void = match tilted {
        // Wholly inside by construction (min_inside = 1 is required).
        Some(_) => seeded,
        None => blocks.iter().map(|b| b.volume() * fraction_below(b, void)).sum(),
    };
    let summary = Summary {
        blocks: blocks.len(),
        fitted_exponent: fitted_exponent(&classes),
        classes,
        seeded_volume: seeded,
        volume_to_fill: volume,
        fill_fraction: if volume > 0.0 { seeded / volume } else { 0.0 },
        volume_in_void,
        mass: seeded * config.density,
        azimuth_deg: match &tilted {
            Some(t) => t.frame.strike_azimuth().to_degrees(),
            None => azimuth.to_degrees(),
        },
        floor_dip_deg: tilted.as_ref().map(|t| {
            let (dip, dir) = t.frame.dip();
            [dip, dir]
        }),
        floor_void_volume: tilted.as_ref().map(|t| t.void.volume()),
        scar_cells: cells,
        crossing_cells: crossing,
        min_inside: config.min_inside,
    };
    Ok(Seeding { blocks, summary })
}

/// Fraction of block `b` below the pre-event surface of `void`, its footprint sampled on
/// an 8 × 8 grid of cell-constant heights (cells off the grid count as empty).
fn fraction_below(b: &Block, void: &Void) -> f64 {
    const M: usize = 8;
    let g = void.grid;
    let r = b.axes();
    let (bottom, c) = (b.centre[2] - 0.5 * b.size[2], b.size[2]);
    let mut sum = 0.0;
    for i in 0..M {
        for j in 0..M {
            let u = (i as f64 + 0.5) / M as f64 - 0.5;
            let w = (j as f64 + 0.5) / M as f64 - 0.5;
            let x = b.centre[0] + u * b.size[0] * r[(0, 0)] + w * b.size[1] * r[(0, 1)];
            let y = b.centre[1] + u * b.size[0] * r[(1, 0)] + w * b.size[1] * r[(1, 1)];
            let (col, row) = (((x - g.x0) / g.cell).floor(), ((y - g.y0) / g.cell).floor());
            if col >= 0.0 && row >= 0.0 && (col as usize) < g.nx && (row as usize) < g.ny {
                let k = row as usize * g.nx + col as usize;
                sum += ((void.z_pre[k] - bottom) / c).clamp(0.0, 1.0);
            }
        }
    }
    sum / (M * M) as f64
}

/// First guess of the scale factor on every size that seeds `target` blocks in `volume`.
fn target_scale(config: &Config, volume: f64, target: usize) -> f64 {
    let v0: f64 = config.classes()[0].size.iter().product();
    (0.8 * volume / (target as f64 * v0)).cbrt()
}

/// Blocks as rows of the blocks table (ids 0..n, at rest unless given velocities).
pub fn block_rows(blocks: &[Block], density: f64) -> Vec<talus_io::blocks::BlockRow> {
    blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let q = b.orientation.quaternion();
            talus_io::blocks::BlockRow {
                id: i as u32,
                size: b.size,
                density,
                mass: density * b.volume(),
                class: b.class,
                centre: b.centre,
                orientation: [q.w, q.i, q.j, q.k],
                velocity: b.velocity,
                angular_velocity: b.angular_velocity,
                active: true,
            }
        })
        .collect()
}

/// Write blocks to a GeoParquet blocks file (atomic).
pub fn write_blocks(
    path: &Path,
    blocks: &[Block],
    density: f64,
    prov: Provenance,
) -> Result<(), Error> {
    Ok(talus_io::blocks::write(path, &block_rows(blocks, density), &prov)?)
}

/// Read a blocks file (any stage's) back into blocks, with the densities.
pub fn read_blocks(path: &Path) -> Result<(Vec<Block>, Vec<f64>), Error> {
    let (rows, _) = talus_io::blocks::read(path)?;
    let blocks = rows
        .iter()
        .map(|r| Block {
            size: r.size,
            centre: r.centre,
            orientation: UnitQuaternion::new_unchecked(nalgebra::Quaternion::new(
                r.orientation[0],
                r.orientation[1],
                r.orientation[2],
                r.orientation[3],
            )),
            velocity: r.velocity,
            angular_velocity: r.angular_velocity,
            class: r.class,
        })
        .collect();
    Ok((blocks, rows.iter().map(|r| r.density).collect()))
}

/// Run the stage: DoD + zones (+ the post-event TIN directory of `talus terrain`, which
/// every block then clears) -> blocks file. With `export_thesis`, also write the blocks
/// in the thesis's format into that directory.
pub fn run(
    config: &Config,
    dod: &Path,
    zones: &Path,
    terrain: Option<&Path>,
    out: &Path,
    export_thesis: Option<&Path>,
    progress: &dyn Progress,
) -> Result<Summary, Error> {
    config.validate()?;
    let (void, outline, crs) = read_void(config, dod, zones)?;
    let tin = match terrain {
        Some(dir) => {
            // The reader refuses a terrain without triangles.
            let tin = talus_terrain::export::read_tin(dir)?;
            Some(void::TinFloor::new(tin, 10.0))
        }
        None => None,
    };
    let s = seed_above(config, &void, Some(&outline), tin.as_ref(), dod, progress)?;
    let mut inputs = vec![dod.to_path_buf(), zones.to_path_buf()];
    if let Some(dir) = terrain {
        inputs
            .extend(talus_schema::file_names::in_dir(dir, talus_schema::file_names::terrain::TIN));
    }
    let prov = Provenance::new("seed", env!("CARGO_PKG_VERSION"), config)
        .with_inputs(&inputs)?
        .with_crs(crs)
        .with_extra("talus:seed_summary", serde_json::to_string(&s.summary).unwrap_or_default());
    write_blocks(out, &s.blocks, config.density, prov)?;
    if let Some(dir) = export_thesis {
        thesis::write(dir, &s.blocks)?;
    }
    Ok(s.summary)
}

/// What an import did.
#[derive(Debug, Clone, Serialize)]
pub struct ImportSummary {
    pub blocks: usize,
    pub volume: f64,
    pub mass: f64,
}

/// Import the thesis's `size_N.data`/`position_N.data` from `dir` into a blocks file.
pub fn import_thesis(
    config: &Config,
    dir: &Path,
    n: usize,
    out: &Path,
    export_thesis: Option<&Path>,
) -> Result<ImportSummary, Error> {
    config.validate()?;
    if n == 0 {
        return Err(Error::Config("--thesis-n must be >= 1".into()));
    }
    let blocks = thesis::read(dir, n)?;
    let (sp, pp) = thesis::paths(dir, n);
    let prov = Provenance::new("seed", env!("CARGO_PKG_VERSION"), config).with_inputs(&[sp, pp])?;
    write_blocks(out, &blocks, config.density, prov)?;
    if let Some(d) = export_thesis {
        thesis::write(d, &blocks)?;
    }
    let volume: f64 = blocks.iter().map(Block::volume).sum();
    Ok(ImportSummary { blocks: blocks.len(), volume, mass: volume * config.density })
}

/// The blocks placed and the fill, as `talus seed` reports them (warnings first).
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        if s.crossing_cells > 0 {
            writeln!(
                f,
                "warning: the post-event surface is above the pre-event one in {} of {} scar cells (counted as empty)",
                s.crossing_cells, s.scar_cells
            )?;
        }
        let classes: Vec<String> = s
            .classes
            .iter()
            .map(|c| {
                format!("{} x [{:.3}, {:.3}, {:.3}] m", c.blocks, c.size[0], c.size[1], c.size[2])
            })
            .collect();
        write!(
            f,
            "seed: {} blocks ({}), {}; seeded {:.0} m³ of {:.0} m³ to fill = {:.1} %",
            s.blocks,
            classes.join(", "),
            match s.floor_dip_deg {
                Some([dip, dir]) => format!(
                    "on the scar floor (dip {dip:.1}° towards {dir:.1}°, edge a along the strike)"
                ),
                None => format!("azimuth {:.1}°", s.azimuth_deg),
            },
            s.seeded_volume,
            s.volume_to_fill,
            100.0 * s.fill_fraction
        )?;
        if s.classes.len() > 1 {
            for (k, c) in s.classes.iter().enumerate() {
                let share = 100.0 * c.volume / s.volume_to_fill.max(f64::MIN_POSITIVE);
                let target = c
                    .volume_fraction_target
                    .map_or(String::new(), |t| format!(" (share allowed {:.1} %)", 100.0 * t));
                let each = if c.thickness[1] - c.thickness[0] > 1e-9 {
                    format!(
                        "{:.1} m³ on average, {:.2}-{:.2} m thick",
                        c.volume / c.blocks as f64,
                        c.thickness[0],
                        c.thickness[1]
                    )
                } else {
                    format!("{:.1} m³", c.size.iter().product::<f64>())
                };
                write!(
                    f,
                    "\n  class {k}: {} blocks of {each}, {:.0} m³ = {share:.1} % of the volume to fill{target}",
                    c.blocks, c.volume
                )?;
            }
            if let Some(b) = s.fitted_exponent {
                write!(f, "\n  fitted N(≥V) ∝ V^-b: b = {b:.3}")?;
            }
        }
        if let Some(v) = s.floor_void_volume {
            write!(
                f,
                "\n  the void on the floor's grid holds {v:.0} m³ ({:.1} % of the volume to fill)",
                100.0 * v / s.volume_to_fill.max(f64::MIN_POSITIVE)
            )?;
        }
        if s.min_inside < 1.0 {
            write!(
                f,
                "\nseed: {:.0} m³ of the blocks lie below the pre-event surface ({:.1} % of the volume to fill; min_inside = {})",
                s.volume_in_void,
                100.0 * s.volume_in_void / s.volume_to_fill.max(f64::MIN_POSITIVE),
                s.min_inside
            )?;
        }
        Ok(())
    }
}

/// The imported blocks, as `talus seed --thesis-dir` reports them.
impl std::fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed: imported {} blocks ({:.3} m³, {:.4e} kg)",
            self.blocks, self.volume, self.mass
        )
    }
}
