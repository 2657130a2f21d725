//! The change-zones table (`zones.parquet`, GeoParquet 1.1, schema
//! `talus_schema::diff::zones_schema`): its one writer and one reader. `talus diff` writes
//! it; `talus terrain` (region of interest, bed surface), `talus seed` (the scar) and
//! `talus compare` (zone outlines and cell classes) read it.

use crate::error::{IoError, Result};
use crate::{Provenance, geo, read_table, write_parquet};
use arrow::array::RecordBatch;
use arrow::array::{ArrayRef, BinaryArray, Float64Array, Int32Array, StringArray, UInt32Array};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// A polygon: its exterior ring (counter-clockwise) then its holes, each a list of (x, y)
/// vertices in world coordinates, m.
pub type Polygon = Vec<Vec<[f64; 2]>>;

/// Kind of change zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ZoneKind {
    /// Significant loss.
    Scar,
    /// Significant gain.
    Deposit,
}

impl ZoneKind {
    /// The name written in the `kind` column.
    pub fn name(self) -> &'static str {
        match self {
            ZoneKind::Scar => "scar",
            ZoneKind::Deposit => "deposit",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        [ZoneKind::Scar, ZoneKind::Deposit].into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for ZoneKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One row of the zones table.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneRow {
    pub zone_id: i32,
    pub kind: ZoneKind,
    /// Planimetric area, m².
    pub area: f64,
    /// Volume of change, m³ (positive for loss and gain alike).
    pub volume: f64,
    /// 1-sigma error of the volume, m³.
    pub volume_error: f64,
    /// Significant cells in the zone.
    pub cells: u32,
    /// Area centroid (x, y), m.
    pub centroid: [f64; 2],
    /// Highest pre-event elevation in the zone, m.
    pub z_max: f64,
    /// Lowest post-event elevation in the zone, m.
    pub z_min: f64,
    /// Outline: one polygon (written as WKB Polygon) or several (MultiPolygon).
    pub polygons: Vec<Polygon>,
}

/// Write a zones table with its GeoParquet metadata (geometry types, bounding box, the
/// CRS of `prov`).
pub fn write(path: &Path, rows: &[ZoneRow], prov: &Provenance) -> Result<()> {
    let mut bbox = [f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
    let mut wkb = Vec::with_capacity(rows.len());
    let mut types: Vec<&str> = Vec::new();
    for z in rows {
        for p in z.polygons.iter().flatten().flatten() {
            bbox = [bbox[0].min(p[0]), bbox[1].min(p[1]), bbox[2].max(p[0]), bbox[3].max(p[1])];
        }
        let (w, t) = if z.polygons.len() == 1 {
            (geo::wkb_polygon(&z.polygons[0]), "Polygon")
        } else {
            (geo::wkb_multipolygon(&z.polygons), "MultiPolygon")
        };
        wkb.push(w);
        if !types.contains(&t) {
            types.push(t);
        }
    }
    types.sort_unstable();
    let meta = geo::geo_metadata(
        "geometry",
        &types,
        prov.crs.as_ref(),
        (!rows.is_empty()).then_some(&bbox[..]),
    );
    let prov = prov.clone().with_extra(geo::GEO_KEY, meta);
    let f = |g: &dyn Fn(&ZoneRow) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(rows.iter().map(g)))
    };
    let schema = Arc::new(talus_schema::diff::zones_schema());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(rows.iter().map(|z| z.zone_id))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|z| z.kind.name()))),
        f(&|z| z.area),
        f(&|z| z.volume),
        f(&|z| z.volume_error),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|z| z.cells))),
        f(&|z| z.centroid[0]),
        f(&|z| z.centroid[1]),
        f(&|z| z.z_max),
        f(&|z| z.z_min),
        Arc::new(BinaryArray::from_iter_values(wkb.iter())),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols)
        .map_err(|source| IoError::Arrow { path: path.to_path_buf(), source })?;
    write_parquet(path, schema, &[batch], &prov)
}

/// Read a zones table, checked: every kind is `scar` or `deposit`, every geometry a WKB
/// Polygon or MultiPolygon. Errors name the file, the zone and its row. Returns the rows
/// and the file's provenance (its CRS).
pub fn read(path: &Path) -> Result<(Vec<ZoneRow>, Provenance)> {
    let t = read_table(path, &talus_schema::diff::zones_schema())?;
    let (id, kind, geom) = (t.i32s("zone_id")?, t.strings("kind")?, t.binaries("geometry")?);
    let g = |c: &str| t.f64s(c);
    let (area, volume, error) = (g("area")?, g("volume")?, g("volume_error")?);
    let (cx, cy, z_max, z_min) = (g("centroid_x")?, g("centroid_y")?, g("z_max")?, g("z_min")?);
    let cells = t.u32s("cells")?;
    let invalid = |k: usize, message: String| IoError::Invalid {
        path: path.to_path_buf(),
        message: format!("zone {} (row {k}): {message}", id[k]),
    };
    let mut rows = Vec::with_capacity(id.len());
    for k in 0..id.len() {
        let kind = ZoneKind::from_name(&kind[k]).ok_or_else(|| {
            invalid(k, format!("unknown kind `{}` (expected `scar` or `deposit`)", kind[k]))
        })?;
        let polygons = geo::parse_wkb_polygons(&geom[k])
            .ok_or_else(|| invalid(k, "geometry is not a WKB Polygon/MultiPolygon".into()))?;
        rows.push(ZoneRow {
            zone_id: id[k],
            kind,
            area: area[k],
            volume: volume[k],
            volume_error: error[k],
            cells: cells[k],
            centroid: [cx[k], cy[k]],
            z_max: z_max[k],
            z_min: z_min[k],
            polygons,
        });
    }
    Ok((rows, t.provenance()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(x0: f64, side: f64) -> Polygon {
        vec![vec![[x0, 0.0], [x0 + side, 0.0], [x0 + side, side], [x0, side], [x0, 0.0]]]
    }

    fn rows() -> Vec<ZoneRow> {
        let row = |zone_id, kind, polygons: Vec<Polygon>| ZoneRow {
            zone_id,
            kind,
            area: 4.0,
            volume: 12.5,
            volume_error: 0.25,
            cells: 16,
            centroid: [1.0, 1.0],
            z_max: 120.0,
            z_min: 80.5,
            polygons,
        };
        vec![
            row(0, ZoneKind::Scar, vec![square(0.0, 2.0)]),
            row(1, ZoneKind::Deposit, vec![square(10.0, 1.0), square(20.0, 3.0)]),
        ]
    }

    #[test]
    fn round_trip_is_exact_and_geoparquet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zones.parquet");
        let prov = Provenance::new("diff", "test", &0).with_crs(Some(crate::Crs::from_epsg(5490)));
        write(&path, &rows(), &prov).unwrap();
        let (back, p) = read(&path).unwrap();
        assert_eq!(back, rows());
        assert_eq!(p.crs.and_then(|c| c.epsg), Some(5490));
        let geo: serde_json::Value = serde_json::from_str(&p.extra[geo::GEO_KEY]).unwrap();
        let column = &geo["columns"]["geometry"];
        assert_eq!(column["bbox"], serde_json::json!([0.0, 0.0, 23.0, 3.0]));
        assert_eq!(column["geometry_types"], serde_json::json!(["MultiPolygon", "Polygon"]));
    }

    #[test]
    fn a_bad_geometry_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zones.parquet");
        write(&path, &rows(), &Provenance::new("diff", "test", &0)).unwrap();
        // Rewrite the table with a point where zone 1's outline should be.
        let t = read_table(&path, &talus_schema::diff::zones_schema()).unwrap();
        let mut cols: Vec<ArrayRef> = t.batches[0].columns().to_vec();
        cols[10] = Arc::new(BinaryArray::from_iter_values([
            geo::wkb_polygon(&square(0.0, 2.0)),
            geo::wkb_point(1.0, 2.0),
        ]));
        let schema = Arc::new(talus_schema::diff::zones_schema());
        let b = RecordBatch::try_new(schema.clone(), cols).unwrap();
        write_parquet(&path, schema, &[b], &Provenance::new("diff", "test", &0)).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("zones.parquet") && e.contains("zone 1 (row 1)"), "{e}");
        assert!(e.contains("not a WKB Polygon"), "{e}");
    }
}
