//! The ParaView time series of a run (`run/paraview/`): the blocks as oriented boxes at
//! every output step (`blocks_NNNNNNNNNN.vtu`, one hexahedron per block with its id,
//! velocity, speed, angular speed and translational kinetic energy as cell data), the
//! collection that plays them back (`blocks.pvd`, times in simulated seconds), and the
//! terrain TIN (`terrain.vtu`, triangles with their elevation). Coordinates are the CRS's
//! (Float64). Open `blocks.pvd` and `terrain.vtu` in ParaView and press play.
//!
//! Built from the run's own `trajectories.parquet` after it is written, so a resumed run
//! gives the same files; written into a temporary directory renamed into place, so an
//! interrupted run leaves no partial series.

use crate::error::Error;
use nalgebra::{Quaternion, UnitQuaternion};
use std::collections::HashMap;
use std::path::Path;
use talus_io::vtk::{
    Array, Grid, VTK_HEXAHEDRON, VTK_TRIANGLE, Values, box_corners, write_pvd, write_vtu,
};
use talus_schema::file_names as names;

/// What the series holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Series {
    /// Time steps written (one `.vtu` each).
    pub frames: usize,
    /// Whether `terrain.vtu` was written.
    pub terrain: bool,
}

/// A block's shape and mass, by id.
pub type Shapes = HashMap<u32, ([f64; 3], f64)>;

/// Write `out_dir/paraview/` from `out_dir/trajectories.parquet`, the blocks' half
/// extents and masses, and the terrain directory (if any).
pub fn write_series(
    out_dir: &Path,
    shapes: &Shapes,
    terrain_dir: Option<&Path>,
) -> Result<Series, Error> {
    let t = talus_io::read_table(
        &out_dir.join(names::run::TRAJECTORIES),
        &talus_schema::run::trajectories_schema(),
    )?;
    let step = t.u64s("step")?;
    let time = t.f64s("time")?;
    let id = t.u32s("id")?;
    let col = |n: &str| t.f64s(n);
    let (x, y, z) = (col("x")?, col("y")?, col("z")?);
    let (qw, qx, qy, qz) = (col("qw")?, col("qx")?, col("qy")?, col("qz")?);
    let (vx, vy, vz) = (col("vx")?, col("vy")?, col("vz")?);
    let (wx, wy, wz) = (col("wx")?, col("wy")?, col("wz")?);

    let final_dir = out_dir.join(names::run::PARAVIEW);
    let tmp = out_dir.join(format!(".{}.partial", names::run::PARAVIEW));
    let _ = std::fs::remove_dir_all(&tmp);
    talus_io::create_dir(&tmp)?;
    let mut datasets = Vec::new();
    let mut start = 0usize;
    while start < step.len() {
        let mut end = start;
        while end < step.len() && step[end] == step[start] {
            end += 1;
        }
        let mut grid = Grid { vertices_per_cell: 8, cell_type: VTK_HEXAHEDRON, ..Grid::default() };
        let (mut ids, mut vel, mut speed, mut spin, mut energy) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for i in start..end {
            let (half, mass) = shapes.get(&id[i]).copied().unwrap_or(([0.0; 3], 0.0));
            let q = UnitQuaternion::from_quaternion(Quaternion::new(qw[i], qx[i], qy[i], qz[i]));
            let m = q.to_rotation_matrix();
            let r = [0, 1, 2].map(|a| [0, 1, 2].map(|b| m[(a, b)]));
            let base = grid.points.len() as u32;
            grid.points.extend(box_corners([x[i], y[i], z[i]], r, half));
            grid.connectivity.extend(base..base + 8);
            let v = [vx[i], vy[i], vz[i]];
            let s = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            ids.push(id[i]);
            vel.extend(v);
            speed.push(s);
            spin.push((wx[i] * wx[i] + wy[i] * wy[i] + wz[i] * wz[i]).sqrt());
            energy.push(0.5 * mass * s * s / 1e3);
        }
        grid.cell_data = vec![
            Array { name: "id".into(), values: Values::U32(ids) },
            Array {
                name: "velocity_m_s".into(),
                values: Values::F64 { components: 3, values: vel },
            },
            Array {
                name: "speed_m_s".into(),
                values: Values::F64 { components: 1, values: speed },
            },
            Array {
                name: "angular_speed_rad_s".into(),
                values: Values::F64 { components: 1, values: spin },
            },
            Array {
                name: "kinetic_energy_kJ".into(),
                values: Values::F64 { components: 1, values: energy },
            },
        ];
        let file = format!("blocks_{:010}.vtu", step[start]);
        write_vtu(&tmp.join(&file), &grid)?;
        datasets.push((time[start], file));
        start = end;
    }
    write_pvd(&tmp.join(names::run::PARAVIEW_BLOCKS), &datasets)?;
    let mut series = Series { frames: datasets.len(), terrain: false };
    if let Some(dir) = terrain_dir {
        let tin = talus_io::tin::read(dir)?;
        let grid = Grid {
            connectivity: tin.triangles.iter().flatten().copied().collect(),
            vertices_per_cell: 3,
            cell_type: VTK_TRIANGLE,
            point_data: vec![Array {
                name: "elevation_m".into(),
                values: Values::F64 {
                    components: 1,
                    values: tin.vertices.iter().map(|p| p[2]).collect(),
                },
            }],
            cell_data: vec![],
            points: tin.vertices,
        };
        write_vtu(&tmp.join(names::run::PARAVIEW_TERRAIN), &grid)?;
        series.terrain = true;
    }
    let _ = std::fs::remove_dir_all(&final_dir);
    std::fs::rename(&tmp, &final_dir)
        .map_err(|source| Error::from(talus_io::IoError::Os { path: final_dir.clone(), source }))?;
    Ok(series)
}
