//! Reading the stage's inputs: the run directory, the diff directory (DoD grid and
//! zones), the terrain and the seeded blocks, each validated against its schema.

use crate::Error;
use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use talus_io::{Crs, read_table};
use talus_schema::file_names as names;
use talus_schema::{diff, run};

/// Where the inputs are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inputs {
    /// `talus run` output directory (`final.parquet`, `trajectories.parquet`,
    /// `energies.parquet`, `diagnostics.parquet`).
    pub run_dir: PathBuf,
    /// `talus diff` output directory (`dod.parquet`, `zones.parquet`), if surveyed.
    pub diff_dir: Option<PathBuf>,
    /// `talus terrain` output directory (`vertices.parquet`, `triangles.parquet`).
    pub terrain_dir: Option<PathBuf>,
    /// Seeded blocks (initial state); default: the first step of the trajectories.
    pub blocks: Option<PathBuf>,
}

impl Inputs {
    /// Every file read, in a fixed order (for provenance).
    pub fn files(&self) -> Vec<PathBuf> {
        let run = [
            names::run::FINAL,
            names::run::TRAJECTORIES,
            names::run::ENERGIES,
            names::run::DIAGNOSTICS,
        ];
        let mut v: Vec<PathBuf> = run.iter().map(|n| self.run_dir.join(n)).collect();
        if let Some(d) = &self.diff_dir {
            v.push(d.join(names::diff::DOD));
            v.push(d.join(names::diff::ZONES));
        }
        if let Some(d) = &self.terrain_dir {
            v.push(d.join(names::terrain::VERTICES));
            v.push(d.join(names::terrain::TRIANGLES));
        }
        if let Some(b) = &self.blocks {
            v.push(b.clone());
        }
        v
    }
}

/// Regular grid geometry of the DoD (`talus_schema::diff::GRID_KEY`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Grid {
    /// Easting of the lower-left corner of cell (0, 0), m.
    pub x0: f64,
    /// Northing of the lower-left corner of cell (0, 0), m.
    pub y0: f64,
    /// Cell side, m.
    pub cell: f64,
    /// Columns.
    pub nx: usize,
    /// Rows (row 0 southernmost).
    pub ny: usize,
}

impl Grid {
    /// Linear index of a cell.
    pub fn index(&self, row: usize, col: usize) -> usize {
        row * self.nx + col
    }
    /// Cell centre.
    pub fn centre(&self, row: usize, col: usize) -> (f64, f64) {
        (self.x0 + (col as f64 + 0.5) * self.cell, self.y0 + (row as f64 + 0.5) * self.cell)
    }
    /// Cell containing a point, if inside the grid.
    pub fn cell_of(&self, x: f64, y: f64) -> Option<(usize, usize)> {
        let c = ((x - self.x0) / self.cell).floor();
        let r = ((y - self.y0) / self.cell).floor();
        (c >= 0.0 && r >= 0.0 && (c as usize) < self.nx && (r as usize) < self.ny)
            .then_some((r as usize, c as usize))
    }
    /// `[xmin, ymin, xmax, ymax]`.
    pub fn extent(&self) -> [f64; 4] {
        [
            self.x0,
            self.y0,
            self.x0 + self.nx as f64 * self.cell,
            self.y0 + self.ny as f64 * self.cell,
        ]
    }
    /// Cell area, m².
    pub fn cell_area(&self) -> f64 {
        self.cell * self.cell
    }
}

/// A set of blocks (final or initial state), struct of arrays.
#[derive(Debug, Clone, Default)]
pub struct Blocks {
    pub id: Vec<u32>,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub c: Vec<f64>,
    pub mass: Vec<f64>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub z: Vec<f64>,
    /// Orientation quaternions (w, x, y, z), body to world.
    pub q: Vec<[f64; 4]>,
    pub active: Vec<bool>,
    /// Size class as seeded (0 = the largest).
    pub class: Vec<u32>,
}

impl Blocks {
    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.id.len()
    }
    /// No blocks.
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }
    /// Volume of block `i`, m³.
    pub fn volume(&self, i: usize) -> f64 {
        self.a[i] * self.b[i] * self.c[i]
    }
    /// Read a blocks table ([`talus_io::blocks::read`]).
    pub fn read(path: &Path) -> Result<Self, Error> {
        let (rows, _) = talus_io::blocks::read(path)?;
        Ok(Blocks {
            id: rows.iter().map(|r| r.id).collect(),
            a: rows.iter().map(|r| r.size[0]).collect(),
            b: rows.iter().map(|r| r.size[1]).collect(),
            c: rows.iter().map(|r| r.size[2]).collect(),
            mass: rows.iter().map(|r| r.mass).collect(),
            x: rows.iter().map(|r| r.centre[0]).collect(),
            y: rows.iter().map(|r| r.centre[1]).collect(),
            z: rows.iter().map(|r| r.centre[2]).collect(),
            q: rows.iter().map(|r| r.orientation).collect(),
            active: rows.iter().map(|r| r.active).collect(),
            class: rows.iter().map(|r| r.class).collect(),
        })
    }
}

/// Block trajectories (rows sorted by block id, then step).
#[derive(Debug, Clone, Default)]
pub struct Trajectories {
    pub step: Vec<u64>,
    pub time: Vec<f64>,
    pub id: Vec<u32>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub z: Vec<f64>,
    /// Speed of the centre, m/s.
    pub speed: Vec<f64>,
}

impl Trajectories {
    /// Row ranges of each block id, in id order.
    pub fn per_block(&self) -> Vec<(u32, std::ops::Range<usize>)> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in 1..=self.id.len() {
            if i == self.id.len() || self.id[i] != self.id[start] {
                out.push((self.id[start], start..i));
                start = i;
            }
        }
        out
    }
}

/// Energies per step (see `talus_schema::run::energies_schema`).
#[derive(Debug, Clone, Default)]
pub struct Energies {
    pub step: Vec<u64>,
    pub time: Vec<f64>,
    pub kinetic_translational: Vec<f64>,
    pub kinetic_rotational: Vec<f64>,
    pub kinetic: Vec<f64>,
    pub potential: Vec<f64>,
    pub dissipated: Vec<f64>,
    pub dissipated_cumulative: Vec<f64>,
    /// Energy balance error recorded by the run (`balance_error`, J), when present.
    pub balance_error: Option<Vec<f64>>,
}

/// Per-step diagnostics, summarised.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    pub steps: usize,
    pub steps_with_fallback: usize,
    pub max_penetration: f64,
    pub max_contacts: u32,
    /// Steps per solver status.
    pub status_counts: BTreeMap<String, usize>,
}

/// A scar or deposit zone (a row of the zones table).
pub use talus_io::zones::{ZoneKind, ZoneRow as Zone};

/// Cell classes on the grid.
pub const CELL_NONE: u8 = 0;
/// Cell in a scar zone.
pub const CELL_SCAR: u8 = 1;
/// Cell in a deposit zone.
pub const CELL_DEPOSIT: u8 = 2;

/// The surveyed change: DoD grid and zones.
#[derive(Debug, Clone)]
pub struct Survey {
    pub grid: Grid,
    /// One row per DoD cell: `cell` (i64 linear index), `x`, `y`, `z_pre`, `z_post`, `dz`,
    /// `kind` (`scar`, `deposit` or empty).
    pub cells: DataFrame,
    /// Dense `dz` (NaN where unknown), indexed by [`Grid::index`].
    pub dz: Vec<f64>,
    /// Dense pre-event elevation.
    pub z_pre: Vec<f64>,
    /// Dense post-event elevation.
    pub z_post: Vec<f64>,
    /// Dense cell class ([`CELL_NONE`], [`CELL_SCAR`], [`CELL_DEPOSIT`]).
    pub class: Vec<u8>,
    pub zones: Vec<Zone>,
}

/// The TIN terrain, for the figures.
#[derive(Debug, Clone, Default)]
pub struct Terrain {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub z: Vec<f64>,
    pub triangles: Vec<[u32; 3]>,
}

/// Everything the stage reads.
#[derive(Debug, Clone)]
pub struct Data {
    pub crs: Option<Crs>,
    pub final_blocks: Blocks,
    pub initial_blocks: Blocks,
    /// Where the initial state came from (for the report).
    pub initial_source: String,
    pub trajectories: Trajectories,
    pub energies: Energies,
    pub diagnostics: Diagnostics,
    pub survey: Option<Survey>,
    pub terrain: Option<Terrain>,
    /// The run's configuration as recorded in `final.parquet`'s provenance.
    pub run_config: serde_json::Value,
}

fn require(path: PathBuf) -> Result<PathBuf, Error> {
    if path.is_file() { Ok(path) } else { Err(Error::input(&path, "input file not found")) }
}

/// Read every input.
pub fn load(inputs: &Inputs) -> Result<Data, Error> {
    let final_path = require(inputs.run_dir.join(names::run::FINAL))?;
    let final_table_meta = talus_io::read_metadata(&final_path)?;
    let prov = talus_io::Provenance::from_metadata(&final_table_meta);
    let final_blocks = Blocks::read(&final_path)?;
    let trajectories = read_trajectories(&require(inputs.run_dir.join(names::run::TRAJECTORIES))?)?;
    let energies = read_energies(&require(inputs.run_dir.join(names::run::ENERGIES))?)?;
    let diagnostics = read_diagnostics(&require(inputs.run_dir.join(names::run::DIAGNOSTICS))?)?;
    let (initial_blocks, initial_source) = match &inputs.blocks {
        Some(p) => (
            Blocks::read(&require(p.clone())?)?,
            p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        ),
        None => (
            initial_from_trajectories(&final_blocks, &trajectories),
            "first step of the trajectories".to_string(),
        ),
    };
    let survey = match &inputs.diff_dir {
        Some(d) => Some(read_survey(
            &require(d.join(names::diff::DOD))?,
            &require(d.join(names::diff::ZONES))?,
        )?),
        None => None,
    };
    let terrain = match &inputs.terrain_dir {
        Some(d) => {
            require(d.join(names::terrain::VERTICES))?;
            require(d.join(names::terrain::TRIANGLES))?;
            Some(read_terrain(d)?)
        }
        None => None,
    };
    Ok(Data {
        crs: prov.crs.clone(),
        final_blocks,
        initial_blocks,
        initial_source,
        trajectories,
        energies,
        diagnostics,
        survey,
        terrain,
        run_config: prov.config,
    })
}

fn read_trajectories(path: &Path) -> Result<Trajectories, Error> {
    let t = read_table(path, &run::trajectories_schema())?;
    let (step, time, id) = (t.u64s("step")?, t.f64s("time")?, t.u32s("id")?);
    let (x, y, z) = (t.f64s("x")?, t.f64s("y")?, t.f64s("z")?);
    let (vx, vy, vz) = (t.f64s("vx")?, t.f64s("vy")?, t.f64s("vz")?);
    let mut order: Vec<usize> = (0..id.len()).collect();
    order.sort_by_key(|&i| (id[i], step[i]));
    let pick = |v: &Vec<f64>| order.iter().map(|&i| v[i]).collect::<Vec<f64>>();
    Ok(Trajectories {
        step: order.iter().map(|&i| step[i]).collect(),
        time: pick(&time),
        id: order.iter().map(|&i| id[i]).collect(),
        x: pick(&x),
        y: pick(&y),
        z: pick(&z),
        speed: order
            .iter()
            .map(|&i| (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i]).sqrt())
            .collect(),
    })
}

fn read_energies(path: &Path) -> Result<Energies, Error> {
    let t = read_table(path, &run::energies_schema())?;
    let step = t.u64s("step")?;
    let mut order: Vec<usize> = (0..step.len()).collect();
    order.sort_by_key(|&i| step[i]);
    let col = |n: &str| -> Result<Vec<f64>, Error> {
        let v = t.f64s(n)?;
        Ok(order.iter().map(|&i| v[i]).collect())
    };
    Ok(Energies {
        step: order.iter().map(|&i| step[i]).collect(),
        time: col("time")?,
        kinetic_translational: col("kinetic_translational")?,
        kinetic_rotational: col("kinetic_rotational")?,
        kinetic: col("kinetic")?,
        potential: col("potential")?,
        dissipated: col("dissipated")?,
        dissipated_cumulative: col("dissipated_cumulative")?,
        balance_error: if t.has_column("balance_error") {
            Some(col("balance_error")?)
        } else {
            None
        },
    })
}

fn read_diagnostics(path: &Path) -> Result<Diagnostics, Error> {
    let t = read_table(path, &run::diagnostics_schema())?;
    let fallback = t.bools("fallback")?;
    let pen = t.f64s("max_penetration")?;
    let (bb, bt, bp) = (
        t.u32s("contacts_block_block")?,
        t.u32s("contacts_block_terrain")?,
        t.u32s("contacts_block_plane")?,
    );
    let mut status_counts = BTreeMap::new();
    for s in t.strings("status")? {
        *status_counts.entry(s).or_insert(0) += 1;
    }
    Ok(Diagnostics {
        steps: fallback.len(),
        steps_with_fallback: fallback.iter().filter(|f| **f).count(),
        max_penetration: pen.iter().copied().filter(|p| p.is_finite()).fold(0.0, f64::max),
        max_contacts: (0..bb.len()).map(|i| bb[i] + bt[i] + bp[i]).max().unwrap_or(0),
        status_counts,
    })
}

/// The initial state from the first recorded step of each block, with sizes and masses
/// from the final state (same ids).
fn initial_from_trajectories(final_blocks: &Blocks, tr: &Trajectories) -> Blocks {
    let by_id: BTreeMap<u32, usize> =
        final_blocks.id.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut b = Blocks::default();
    for (id, range) in tr.per_block() {
        let Some(&k) = by_id.get(&id) else { continue };
        let r = range.start;
        b.id.push(id);
        b.a.push(final_blocks.a[k]);
        b.b.push(final_blocks.b[k]);
        b.c.push(final_blocks.c[k]);
        b.mass.push(final_blocks.mass[k]);
        b.x.push(tr.x[r]);
        b.y.push(tr.y[r]);
        b.z.push(tr.z[r]);
        b.q.push(final_blocks.q[k]);
        b.active.push(true);
        b.class.push(final_blocks.class[k]);
    }
    if b.is_empty() {
        return final_blocks.clone();
    }
    b
}

fn parse_grid(path: &Path, meta: &BTreeMap<String, String>) -> Result<Grid, Error> {
    let text = meta.get(diff::GRID_KEY).ok_or_else(|| {
        Error::input(path, format!("no grid geometry under metadata key `{}`", diff::GRID_KEY))
    })?;
    let g: Grid = serde_json::from_str(text)
        .map_err(|e| Error::input(path, format!("bad grid geometry `{text}`: {e}")))?;
    if !(g.cell > 0.0
        && g.cell.is_finite()
        && g.nx > 0
        && g.ny > 0
        && g.x0.is_finite()
        && g.y0.is_finite())
    {
        return Err(Error::input(path, format!("degenerate grid geometry `{text}`")));
    }
    Ok(g)
}

/// Read the DoD and zones; classify each cell with a polars join of cells and zones.
pub fn read_survey(dod_path: &Path, zones_path: &Path) -> Result<Survey, Error> {
    let dod = read_table(dod_path, &diff::dod_schema())?;
    let grid = parse_grid(dod_path, &dod.metadata)?;
    let (zones, _) = talus_io::zones::read(zones_path)?;
    let (rows, cols) = (dod.u32s("row")?, dod.u32s("col")?);
    for i in 0..rows.len() {
        if rows[i] as usize >= grid.ny || cols[i] as usize >= grid.nx {
            return Err(Error::input(
                dod_path,
                format!("cell ({}, {}) outside the {}x{} grid", rows[i], cols[i], grid.ny, grid.nx),
            ));
        }
    }
    let cell: Vec<i64> =
        (0..rows.len()).map(|i| grid.index(rows[i] as usize, cols[i] as usize) as i64).collect();
    let cells = DataFrame::new_infer_height(vec![
        Column::new("cell".into(), cell),
        Column::new("x".into(), dod.f64s("x")?),
        Column::new("y".into(), dod.f64s("y")?),
        Column::new("z_pre".into(), dod.f64s("z_pre")?),
        Column::new("z_post".into(), dod.f64s("z_post")?),
        Column::new("dz".into(), dod.f64s("dz")?),
        Column::new("zone_id".into(), dod.i32s("zone_id")?),
    ])?;
    let zone_df = DataFrame::new_infer_height(vec![
        Column::new("zone_id".into(), zones.iter().map(|z| z.zone_id).collect::<Vec<_>>()),
        Column::new("kind".into(), zones.iter().map(|z| z.kind.name()).collect::<Vec<_>>()),
    ])?;
    let cells = cells
        .lazy()
        .left_join(zone_df.lazy(), col("zone_id"), col("zone_id"))
        .with_column(col("kind").fill_null(lit("")))
        .sort(["cell"], Default::default())
        .collect()?;
    let n = grid.nx * grid.ny;
    let (mut dz, mut z_pre, mut z_post, mut class) =
        (vec![f64::NAN; n], vec![f64::NAN; n], vec![f64::NAN; n], vec![CELL_NONE; n]);
    let c_cell = cells.column("cell")?.i64()?;
    let c_dz = cells.column("dz")?.f64()?;
    let c_pre = cells.column("z_pre")?.f64()?;
    let c_post = cells.column("z_post")?.f64()?;
    let c_kind = cells.column("kind")?.str()?;
    for i in 0..cells.height() {
        let k = c_cell.get(i).unwrap_or(0) as usize;
        dz[k] = c_dz.get(i).unwrap_or(f64::NAN);
        z_pre[k] = c_pre.get(i).unwrap_or(f64::NAN);
        z_post[k] = c_post.get(i).unwrap_or(f64::NAN);
        class[k] = match c_kind.get(i) {
            Some("scar") => CELL_SCAR,
            Some("deposit") => CELL_DEPOSIT,
            _ => CELL_NONE,
        };
    }
    Ok(Survey { grid, cells, dz, z_pre, z_post, class, zones })
}

fn read_terrain(dir: &Path) -> Result<Terrain, Error> {
    let t = talus_io::tin::read(dir)?;
    Ok(Terrain {
        x: t.vertices.iter().map(|p| p[0]).collect(),
        y: t.vertices.iter().map(|p| p[1]).collect(),
        z: t.vertices.iter().map(|p| p[2]).collect(),
        triangles: t.triangles,
    })
}
