//! Rockfall hazard maps from the trajectories, as RAMMS::ROCKFALL and Rockyfor3D users
//! read them: per grid cell, the maximum kinetic energy, the maximum velocity, the
//! maximum passing height above the ground and the number of blocks that passed.
//!
//! The trajectories hold each block's centre and speed every `output_every` steps of the
//! run. Between two samples the centre is taken to move on the straight segment with its
//! speed interpolated linearly; the segment is walked at a quarter of a cell, so no cell it
//! crosses is missed however long the output interval. At each point, in the cell below
//! it:
//!
//! * energy `½ m v²` (translational; the trajectories do not hold the spin), kJ;
//! * velocity `v`, m/s;
//! * passing height `z − g`, the centre's height above the ground `g` at the cell centre
//!   (the run's TIN, or the post-event survey without one), m, at least 0;
//! * a block counts once per cell it visits.
//!
//! Peaks between two samples are not seen: a finer output interval gives higher maxima.
//! Cells no block reached hold NaN (no data) in the three maxima and 0 passes.

use crate::inputs::{Grid, Terrain, Trajectories};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The hazard maps on a grid, indexed by [`Grid::index`].
#[derive(Debug, Clone, PartialEq)]
pub struct HazardMap {
    pub grid: Grid,
    /// Maximum translational kinetic energy, kJ (NaN: no block).
    pub max_energy: Vec<f64>,
    /// Maximum speed of a block centre, m/s (NaN: no block).
    pub max_velocity: Vec<f64>,
    /// Maximum height of a block centre above the ground, m (NaN: no block or no ground).
    pub max_height: Vec<f64>,
    /// Blocks that passed over the cell.
    pub passes: Vec<u32>,
}

/// Ground elevation at the cell centres from a TIN (NaN outside it): each triangle sets
/// the centres inside it by barycentric interpolation.
pub fn ground_from_tin(grid: &Grid, tin: &Terrain) -> Vec<f64> {
    let mut ground = vec![f64::NAN; grid.nx * grid.ny];
    for t in &tin.triangles {
        let [a, b, c] = t.map(|i| i as usize);
        let (xa, ya, xb, yb, xc, yc) = (tin.x[a], tin.y[a], tin.x[b], tin.y[b], tin.x[c], tin.y[c]);
        let det = (yb - yc) * (xa - xc) + (xc - xb) * (ya - yc);
        if det.abs() < 1e-12 {
            continue;
        }
        let (xmin, xmax) = (xa.min(xb).min(xc), xa.max(xb).max(xc));
        let (ymin, ymax) = (ya.min(yb).min(yc), ya.max(yb).max(yc));
        let col = |x: f64| ((x - grid.x0) / grid.cell - 0.5).ceil().max(0.0) as usize;
        let row = |y: f64| ((y - grid.y0) / grid.cell - 0.5).ceil().max(0.0) as usize;
        let col_end = (((xmax - grid.x0) / grid.cell - 0.5).floor() + 1.0).max(0.0) as usize;
        let row_end = (((ymax - grid.y0) / grid.cell - 0.5).floor() + 1.0).max(0.0) as usize;
        for r in row(ymin)..row_end.min(grid.ny) {
            for cl in col(xmin)..col_end.min(grid.nx) {
                let (x, y) = grid.centre(r, cl);
                let l1 = ((yb - yc) * (x - xc) + (xc - xb) * (y - yc)) / det;
                let l2 = ((yc - ya) * (x - xc) + (xa - xc) * (y - yc)) / det;
                let l3 = 1.0 - l1 - l2;
                let eps = -1e-12;
                if l1 >= eps && l2 >= eps && l3 >= eps {
                    ground[grid.index(r, cl)] = l1 * tin.z[a] + l2 * tin.z[b] + l3 * tin.z[c];
                }
            }
        }
    }
    ground
}

/// The hazard maps of `traj` on `grid`, with the ground elevation `ground` at the cell
/// centres and each block's mass from `mass` (by id; blocks without one count in the
/// passes, velocity and height, not in the energy).
pub fn hazard_map(
    grid: &Grid,
    ground: &[f64],
    traj: &Trajectories,
    mass: &HashMap<u32, f64>,
) -> HazardMap {
    let cells = grid.nx * grid.ny;
    assert_eq!(ground.len(), cells);
    let mut map = HazardMap {
        grid: *grid,
        max_energy: vec![f64::NAN; cells],
        max_velocity: vec![f64::NAN; cells],
        max_height: vec![f64::NAN; cells],
        passes: vec![0; cells],
    };
    // The last block counted in each cell (a block counts once per cell).
    let mut last: Vec<Option<u32>> = vec![None; cells];
    let max_nan = |slot: &mut f64, v: f64| {
        if v.is_finite() && (slot.is_nan() || *slot < v) {
            *slot = v;
        }
    };
    let step = 0.25 * grid.cell;
    for (id, rows) in traj.per_block() {
        let m = mass.get(&id).copied().unwrap_or(f64::NAN);
        let mut visit = |x: f64, y: f64, z: f64, v: f64| {
            let Some((r, c)) = grid.cell_of(x, y) else { return };
            let k = grid.index(r, c);
            max_nan(&mut map.max_velocity[k], v);
            max_nan(&mut map.max_energy[k], 0.5 * m * v * v / 1000.0);
            if ground[k].is_finite() {
                max_nan(&mut map.max_height[k], (z - ground[k]).max(0.0));
            }
            if last[k] != Some(id) {
                last[k] = Some(id);
                map.passes[k] += 1;
            }
        };
        let p = |i: usize| (traj.x[i], traj.y[i], traj.z[i], traj.speed[i]);
        let first = rows.start;
        let (x, y, z, v) = p(first);
        visit(x, y, z, v);
        for i in first + 1..rows.end {
            let (x0, y0, z0, v0) = p(i - 1);
            let (x1, y1, z1, v1) = p(i);
            let length = (x1 - x0).hypot(y1 - y0);
            let n = ((length / step).ceil() as usize).max(1);
            for j in 1..=n {
                let t = j as f64 / n as f64;
                visit(
                    x0 + t * (x1 - x0),
                    y0 + t * (y1 - y0),
                    z0 + t * (z1 - z0),
                    v0 + t * (v1 - v0),
                );
            }
        }
    }
    map
}

/// The hazard maps as GeoTIFF rasters (`hazard_max_energy.tif`, kJ;
/// `hazard_max_velocity.tif`, m/s; `hazard_max_height.tif`, m; `hazard_passes.tif`,
/// blocks; NaN no data). Returns the files written.
pub fn write_hazard_rasters(
    dir: &Path,
    map: &HazardMap,
    crs: Option<&talus_io::Crs>,
) -> Result<Vec<PathBuf>, crate::Error> {
    use talus_schema::file_names::compare as names;
    let g = map.grid;
    let spec = talus_io::geotiff::GridSpec { x0: g.x0, y0: g.y0, cell: g.cell, nx: g.nx, ny: g.ny };
    let passes: Vec<f64> = map.passes.iter().map(|&p| f64::from(p)).collect();
    let mut written = Vec::new();
    for (name, values) in [
        (names::HAZARD_MAX_ENERGY_TIF, &map.max_energy),
        (names::HAZARD_MAX_VELOCITY_TIF, &map.max_velocity),
        (names::HAZARD_MAX_HEIGHT_TIF, &map.max_height),
        (names::HAZARD_PASSES_TIF, &passes),
    ] {
        let path = dir.join(name);
        talus_io::geotiff::write(&path, &spec, values, crs)?;
        written.push(path);
    }
    Ok(written)
}

/// Most cells [`grid_over`] makes (the hazard maps hold several values per cell).
pub const MAX_CELLS: usize = 50_000_000;

/// A grid of cells of side `cell` covering the trajectories (plus one cell), for runs
/// without a survey grid. `Ok(None)` without trajectories; `Err([nx, ny])` when it would
/// have more than [`MAX_CELLS`] cells (the counts saturate).
pub fn grid_over(traj: &Trajectories, cell: f64) -> Result<Option<Grid>, [usize; 2]> {
    if traj.x.is_empty() {
        return Ok(None);
    }
    let fold = |v: &[f64], f: fn(f64, f64) -> f64, init: f64| v.iter().copied().fold(init, f);
    let (xmin, xmax) = (fold(&traj.x, f64::min, f64::INFINITY), fold(&traj.x, f64::max, f64::MIN));
    let (ymin, ymax) = (fold(&traj.y, f64::min, f64::INFINITY), fold(&traj.y, f64::max, f64::MIN));
    let x0 = (xmin / cell).floor() * cell - cell;
    let y0 = (ymin / cell).floor() * cell - cell;
    // `as usize` saturates (and takes NaN to 0).
    let nx = (((xmax - x0) / cell).ceil() as usize).saturating_add(1);
    let ny = (((ymax - y0) / cell).ceil() as usize).saturating_add(1);
    if nx.saturating_mul(ny) > MAX_CELLS {
        return Err([nx, ny]);
    }
    Ok(Some(Grid { x0, y0, cell, nx, ny }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(
        id: u32,
        from: (f64, f64, f64),
        to: (f64, f64, f64),
        v: f64,
        samples: usize,
    ) -> Trajectories {
        let mut t = Trajectories::default();
        for k in 0..samples {
            let s = k as f64 / (samples - 1) as f64;
            t.step.push(k as u64);
            t.time.push(k as f64);
            t.id.push(id);
            t.x.push(from.0 + s * (to.0 - from.0));
            t.y.push(from.1 + s * (to.1 - from.1));
            t.z.push(from.2 + s * (to.2 - from.2));
            t.speed.push(v);
        }
        t
    }

    fn append(a: &mut Trajectories, b: Trajectories) {
        a.step.extend(b.step);
        a.time.extend(b.time);
        a.id.extend(b.id);
        a.x.extend(b.x);
        a.y.extend(b.y);
        a.z.extend(b.z);
        a.speed.extend(b.speed);
    }

    /// A block flying east along row 2 at constant speed and height over flat ground,
    /// sampled only at its two ends (40 m apart on 5 m cells): every cell of the row is
    /// crossed once with ½mv², v and the height; a second block flying north along
    /// column 3 adds a second pass only where they cross; no other cell is touched.
    #[test]
    fn straight_flights_give_the_closed_forms() {
        let grid = Grid { x0: 0.0, y0: 0.0, cell: 5.0, nx: 10, ny: 10 };
        let ground = vec![100.0; 100];
        let mut traj = line(1, (1.0, 12.5, 103.0), (49.0, 12.5, 103.0), 20.0, 2);
        append(&mut traj, line(2, (17.5, 1.0, 107.0), (17.5, 49.0, 107.0), 10.0, 2));
        let mass = HashMap::from([(1, 2000.0), (2, 8000.0)]);
        let map = hazard_map(&grid, &ground, &traj, &mass);
        for r in 0..10 {
            for c in 0..10 {
                let k = grid.index(r, c);
                match (r == 2, c == 3) {
                    (true, true) => {
                        assert_eq!(map.passes[k], 2);
                        assert_eq!(map.max_velocity[k], 20.0);
                        assert_eq!(map.max_energy[k], 400.0);
                        assert_eq!(map.max_height[k], 7.0);
                    }
                    (true, false) => {
                        assert_eq!(map.passes[k], 1, "cell {r} {c}");
                        assert_eq!(map.max_energy[k], 0.5 * 2000.0 * 400.0 / 1000.0);
                        assert_eq!(map.max_velocity[k], 20.0);
                        assert_eq!(map.max_height[k], 3.0);
                    }
                    (false, true) => {
                        assert_eq!(map.passes[k], 1, "cell {r} {c}");
                        assert_eq!(map.max_energy[k], 0.5 * 8000.0 * 100.0 / 1000.0);
                        assert_eq!(map.max_height[k], 7.0);
                    }
                    (false, false) => {
                        assert_eq!(map.passes[k], 0);
                        assert!(map.max_energy[k].is_nan() && map.max_height[k].is_nan());
                    }
                }
            }
        }
    }

    /// The grid over the trajectories covers them with a cell to spare on each side;
    /// one of more than MAX_CELLS cells is refused with its dimensions, before any
    /// allocation, whatever the cell (saturating, not overflowing).
    #[test]
    fn the_grid_over_the_trajectories_covers_them_and_is_bounded() {
        let traj = line(1, (12.0, 3.0, 0.0), (48.0, 21.0, 0.0), 1.0, 5);
        let g = grid_over(&traj, 5.0).unwrap().unwrap();
        assert_eq!((g.x0, g.y0, g.nx, g.ny), (5.0, -5.0, 10, 7));
        assert!(g.x0 + 5.0 <= 12.0 && g.x0 + 5.0 * g.nx as f64 >= 48.0 + 5.0);
        assert!(g.y0 + 5.0 <= 3.0 && g.y0 + 5.0 * g.ny as f64 >= 21.0 + 5.0);
        assert_eq!(grid_over(&Trajectories::default(), 5.0), Ok(None));
        let [nx, ny] = grid_over(&traj, 1e-3).unwrap_err();
        assert!((36_001..=36_003).contains(&nx) && (18_001..=18_003).contains(&ny), "{nx} {ny}");
        assert_eq!(grid_over(&traj, 1e-300).unwrap_err(), [usize::MAX, usize::MAX]);
    }

    /// A block that stops in a cell and stays there for many samples counts once; the
    /// speed interpolates linearly between samples.
    #[test]
    fn a_block_counts_once_and_speed_interpolates() {
        let grid = Grid { x0: 0.0, y0: 0.0, cell: 1.0, nx: 10, ny: 1 };
        let mut traj = line(7, (0.5, 0.5, 1.0), (9.5, 0.5, 1.0), 0.0, 2);
        traj.speed = vec![9.0, 0.0];
        append(&mut traj, line(7, (9.5, 0.5, 1.0), (9.5, 0.5, 1.0), 0.0, 5));
        let map = hazard_map(&grid, &[0.0; 10], &traj, &HashMap::new());
        assert!(map.passes.iter().all(|&p| p == 1), "{:?}", map.passes);
        for c in 0..10 {
            // The highest speed in cell c is at its entry (x = c, or the start).
            let x = (c as f64).max(0.5);
            let expected = 9.0 * (1.0 - (x - 0.5) / 9.0);
            assert!((map.max_velocity[c] - expected).abs() < 0.25 * 9.0 / 9.0 + 1e-12);
            assert!(map.max_energy[c].is_nan(), "no mass, no energy");
        }
    }

    /// A planar TIN gives the plane at every cell centre inside it and NaN outside.
    #[test]
    fn tin_ground_is_exact_on_a_plane() {
        let plane = |x: f64, y: f64| 200.0 - 0.3 * x + 0.1 * y;
        let (xs, ys) = ([0.0, 40.0, 40.0, 0.0], [0.0, 0.0, 30.0, 30.0]);
        let tin = Terrain {
            x: xs.to_vec(),
            y: ys.to_vec(),
            z: xs.iter().zip(&ys).map(|(x, y)| plane(*x, *y)).collect(),
            triangles: vec![[0, 1, 2], [0, 2, 3]],
        };
        let grid = Grid { x0: -10.0, y0: 0.0, cell: 5.0, nx: 12, ny: 6 };
        let g = ground_from_tin(&grid, &tin);
        for r in 0..grid.ny {
            for c in 0..grid.nx {
                let (x, y) = grid.centre(r, c);
                let v = g[grid.index(r, c)];
                if (0.0..=40.0).contains(&x) {
                    assert!((v - plane(x, y)).abs() < 1e-9, "({x}, {y}): {v}");
                } else {
                    assert!(v.is_nan(), "({x}, {y}) outside: {v}");
                }
            }
        }
    }
}
