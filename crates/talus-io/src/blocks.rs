//! The blocks table (`talus_schema::blocks`): its one reader and one writer. `talus seed`
//! writes it, `talus run` reads it and writes its final state and its checkpoints with it,
//! `talus compare` reads it. Stages convert the rows to their own block types.

use crate::error::{IoError, Result};
use crate::{Provenance, geo, read_table, write_parquet};
use arrow::array::{ArrayRef, BinaryArray, BooleanArray, Float64Array, RecordBatch, UInt32Array};
use std::path::Path;
use std::sync::Arc;

/// One row of the blocks table (units as in `talus_schema::blocks`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlockRow {
    /// Block identifier, stable across stages.
    pub id: u32,
    /// Edge lengths (a, b, c) along body axes 1, 2, 3, m.
    pub size: [f64; 3],
    /// Rock density, kg/m³.
    pub density: f64,
    /// Mass, kg (the writer stores what it is given: density · a · b · c as its stage
    /// computes it).
    pub mass: f64,
    /// Size class as seeded (0 = the largest; 0 for a single size).
    pub class: u32,
    /// Centre of mass, m.
    pub centre: [f64; 3],
    /// Orientation quaternion (w, x, y, z), body to world, stored bit for bit.
    pub orientation: [f64; 4],
    /// Velocity of the centre, m/s.
    pub velocity: [f64; 3],
    /// Angular velocity (world frame), rad/s.
    pub angular_velocity: [f64; 3],
    /// Still simulated.
    pub active: bool,
}

/// The rows as a record batch of `talus_schema::blocks::schema()`.
pub fn batch(rows: &[BlockRow]) -> RecordBatch {
    let f = |g: &dyn Fn(&BlockRow) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(rows.iter().map(g)))
    };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.id))),
        f(&|r| r.size[0]),
        f(&|r| r.size[1]),
        f(&|r| r.size[2]),
        f(&|r| r.density),
        f(&|r| r.mass),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.class))),
        f(&|r| r.centre[0]),
        f(&|r| r.centre[1]),
        f(&|r| r.centre[2]),
        f(&|r| r.orientation[0]),
        f(&|r| r.orientation[1]),
        f(&|r| r.orientation[2]),
        f(&|r| r.orientation[3]),
        f(&|r| r.velocity[0]),
        f(&|r| r.velocity[1]),
        f(&|r| r.velocity[2]),
        f(&|r| r.angular_velocity[0]),
        f(&|r| r.angular_velocity[1]),
        f(&|r| r.angular_velocity[2]),
        Arc::new(BooleanArray::from(rows.iter().map(|r| r.active).collect::<Vec<_>>())),
        Arc::new(BinaryArray::from_iter_values(
            rows.iter().map(|r| geo::wkb_point_z(r.centre[0], r.centre[1], r.centre[2])),
        )),
    ];
    RecordBatch::try_new(Arc::new(talus_schema::blocks::schema()), cols).expect("blocks schema")
}

/// Write a blocks table atomically, as GeoParquet (the centres' points, their bounding box
/// and the CRS of `prov`).
pub fn write(path: &Path, rows: &[BlockRow], prov: &Provenance) -> Result<()> {
    let mut bbox = [f64::INFINITY; 3].into_iter().chain([f64::NEG_INFINITY; 3]).collect::<Vec<_>>();
    for r in rows {
        for k in 0..3 {
            bbox[k] = bbox[k].min(r.centre[k]);
            bbox[k + 3] = bbox[k + 3].max(r.centre[k]);
        }
    }
    let meta = geo::geo_metadata("geometry", &["Point Z"], prov.crs.as_ref(), Some(&bbox));
    let prov = prov.clone().with_extra(geo::GEO_KEY, meta);
    let batch = batch(rows);
    write_parquet(path, batch.schema(), &[batch], &prov)
}

/// Read a blocks table, checked: every size and density finite and > 0, every centre,
/// velocity and quaternion finite, no zero quaternion. Errors name the file, the block id
/// and its row. Returns the rows and the file's provenance (its CRS).
pub fn read(path: &Path) -> Result<(Vec<BlockRow>, Provenance)> {
    // `class` is optional on reading (tables written before it existed hold one class).
    let full = talus_schema::blocks::schema();
    let required = arrow::datatypes::Schema::new(
        full.fields().iter().filter(|f| f.name() != "class").cloned().collect::<Vec<_>>(),
    );
    let t = read_table(path, &required)?;
    let class = if t.has_column("class") { t.u32s("class")? } else { vec![0; t.num_rows()] };
    let g = |c: &str| t.f64s(c);
    let (id, a, b, c, rho, mass) =
        (t.u32s("id")?, g("a")?, g("b")?, g("c")?, g("density")?, g("mass")?);
    let (x, y, z) = (g("x")?, g("y")?, g("z")?);
    let (qw, qx, qy, qz) = (g("qw")?, g("qx")?, g("qy")?, g("qz")?);
    let (vx, vy, vz, wx, wy, wz) = (g("vx")?, g("vy")?, g("vz")?, g("wx")?, g("wy")?, g("wz")?);
    let active = t.bools("active")?;
    let invalid = |k: usize, message: String| IoError::Invalid {
        path: path.to_path_buf(),
        message: format!("block {} (row {k}): {message}", id[k]),
    };
    let mut rows = Vec::with_capacity(id.len());
    for k in 0..id.len() {
        for (name, v) in [("a", a[k]), ("b", b[k]), ("c", c[k]), ("density", rho[k])] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(k, format!("{name} = {v} must be finite and > 0")));
            }
        }
        let q = [qw[k], qx[k], qy[k], qz[k]];
        if !q.iter().all(|v| v.is_finite()) || q.iter().map(|v| v * v).sum::<f64>() <= 1e-24 {
            return Err(invalid(k, "orientation quaternion is zero or not finite".into()));
        }
        let vectors = [
            ("centre", [x[k], y[k], z[k]]),
            ("velocity", [vx[k], vy[k], vz[k]]),
            ("angular velocity", [wx[k], wy[k], wz[k]]),
        ];
        for (name, v) in vectors {
            if !v.iter().all(|c| c.is_finite()) {
                return Err(invalid(k, format!("{name} {v:?} is not finite")));
            }
        }
        rows.push(BlockRow {
            id: id[k],
            size: [a[k], b[k], c[k]],
            density: rho[k],
            mass: mass[k],
            class: class[k],
            centre: vectors[0].1,
            orientation: q,
            velocity: vectors[1].1,
            angular_velocity: vectors[2].1,
            active: active[k],
        });
    }
    Ok((rows, t.provenance()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u32) -> BlockRow {
        BlockRow {
            id,
            size: [1.0, 2.0, 0.5],
            density: 2600.0,
            mass: 2600.0,
            class: id % 3,
            centre: [700_000.5 + id as f64, 1_620_000.25, 412.0],
            orientation: [0.5f64.sqrt(), 0.0, 0.0, 0.5f64.sqrt()],
            velocity: [1.0, -2.0, 0.25],
            angular_velocity: [0.0, 0.125, -3.0],
            active: id.is_multiple_of(2),
        }
    }

    #[test]
    fn round_trip_is_exact_and_geoparquet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blocks.parquet");
        let rows: Vec<BlockRow> = (0..5).map(row).collect();
        let prov = Provenance::new("seed", "test", &0).with_crs(Some(crate::Crs::from_epsg(5490)));
        write(&path, &rows, &prov).unwrap();
        let (back, p) = read(&path).unwrap();
        assert_eq!(back, rows);
        assert_eq!(p.crs.and_then(|c| c.epsg), Some(5490));
        let geo: serde_json::Value =
            serde_json::from_str(&p.extra[geo::GEO_KEY]).expect("geo metadata");
        assert_eq!(
            geo["columns"]["geometry"]["bbox"],
            serde_json::json!([700000.5, 1620000.25, 412.0, 700004.5, 1620000.25, 412.0])
        );
        assert_eq!(geo["columns"]["geometry"]["geometry_types"], serde_json::json!(["Point Z"]));
        assert_eq!(geo["columns"]["geometry"]["crs"]["base_crs"]["name"], "RGAF09");
    }

    #[test]
    fn bad_rows_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blocks.parquet");
        let prov = Provenance::new("seed", "test", &0);
        type Spoil = fn(&mut BlockRow);
        let cases: [(Spoil, &str); 4] = [
            (|r| r.size[1] = 0.0, "block 3 (row 3): b = 0 must be finite and > 0"),
            (|r| r.density = f64::NAN, "block 3 (row 3): density = NaN must be finite and > 0"),
            (|r| r.orientation = [0.0; 4], "block 3 (row 3): orientation quaternion is zero"),
            (
                |r| r.velocity[2] = f64::INFINITY,
                "block 3 (row 3): velocity [1.0, -2.0, inf] is not finite",
            ),
        ];
        for (spoil, message) in cases {
            let mut rows: Vec<BlockRow> = (0..5).map(row).collect();
            spoil(&mut rows[3]);
            write(&path, &rows, &prov).unwrap();
            let e = read(&path).unwrap_err().to_string();
            assert!(e.contains(message) && e.contains("blocks.parquet"), "{e}");
        }
    }
}
