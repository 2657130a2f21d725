//! Points with per-point scalar fields as LAS 1.4 / LAZ (point format 6), each field an
//! extra-bytes dimension of 64-bit floats described by the LAS 1.4 Extra Bytes VLR
//! (`LASF_Spec`, record 4), so that CloudCompare shows them as scalar fields and laspy or
//! PDAL read them by name. Millimetre quantisation, the CRS as an OGC WKT VLR when known,
//! no creation date (the same points give byte-identical files). The file is written
//! atomically.

use crate::error::{IoError, Result};
use crate::{AtomicFile, Crs};
use las::point::Format;
use las::{Builder, Point, Transform, Vector, Version, Vlr, Writer};
use std::io::Cursor;
use std::path::Path;

/// One scalar field: a name (at most 32 bytes), a description (at most 32 bytes) and one
/// value per point.
pub struct Field<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub values: &'a [f64],
}

/// The 192-byte Extra Bytes descriptor of a `double` field (data type 10, no options).
fn descriptor(name: &str, description: &str) -> [u8; 192] {
    let mut d = [0u8; 192];
    d[2] = 10;
    let n = name.as_bytes();
    d[4..4 + n.len().min(32)].copy_from_slice(&n[..n.len().min(32)]);
    let t = description.as_bytes();
    d[160..160 + t.len().min(32)].copy_from_slice(&t[..t.len().min(32)]);
    d
}

/// Write `points` with `fields` as LAS (`.las`) or LAZ (any other extension) at `path`.
pub fn write(path: &Path, points: &[[f64; 3]], fields: &[Field], crs: Option<&Crs>) -> Result<()> {
    let invalid = |message: String| IoError::Invalid { path: path.to_path_buf(), message };
    for f in fields {
        if f.values.len() != points.len() || f.name.is_empty() || f.name.len() > 32 {
            return Err(invalid(format!(
                "field `{}`: {} values for {} points (name of 1-32 bytes)",
                f.name,
                f.values.len(),
                points.len()
            )));
        }
    }
    let las_err = |e: las::Error| invalid(format!("writing LAS: {e}"));
    let mut builder = Builder::from(Version::new(1, 4));
    let mut format = Format::new(6).map_err(las_err)?;
    format.is_compressed = path.extension().is_none_or(|e| !e.eq_ignore_ascii_case("las"));
    format.extra_bytes = u16::try_from(8 * fields.len())
        .map_err(|_| invalid(format!("{} fields is too many", fields.len())))?;
    builder.point_format = format;
    builder.generating_software = format!("talus {}", env!("CARGO_PKG_VERSION"));
    let min = |a: usize| points.iter().map(|p| p[a]).fold(f64::INFINITY, f64::min);
    let off = |v: f64| if v.is_finite() { (v / 1000.0).floor() * 1000.0 } else { 0.0 };
    builder.transforms = Vector {
        x: Transform { scale: 0.001, offset: off(min(0)) },
        y: Transform { scale: 0.001, offset: off(min(1)) },
        z: Transform { scale: 0.001, offset: 0.0 },
    };
    let mut data = Vec::with_capacity(192 * fields.len());
    for f in fields {
        data.extend_from_slice(&descriptor(f.name, f.description));
    }
    builder.vlrs.push(Vlr {
        user_id: "LASF_Spec".into(),
        record_id: 4,
        description: "extra bytes".into(),
        data,
    });
    let mut header = builder.into_header().map_err(las_err)?;
    if let Some(wkt) = crs.and_then(|c| c.wkt.as_ref()) {
        let mut w = wkt.clone().into_bytes();
        w.push(0);
        header.set_wkt_crs(w).map_err(las_err)?;
    }
    let mut writer = Writer::new(Cursor::new(Vec::new()), header).map_err(las_err)?;
    for (i, p) in points.iter().enumerate() {
        let mut extra = Vec::with_capacity(8 * fields.len());
        for f in fields {
            extra.extend_from_slice(&f.values[i].to_le_bytes());
        }
        let point = Point {
            x: p[0],
            y: p[1],
            z: p[2],
            gps_time: Some(0.0),
            extra_bytes: extra,
            ..Default::default()
        };
        writer.write_point(point).map_err(las_err)?;
    }
    writer.close().map_err(las_err)?;
    let bytes = writer.into_inner().map_err(las_err)?.into_inner();
    AtomicFile::write_all(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use las::Reader;

    /// Points and two fields through LAZ and LAS: the las crate reads the same points (to
    /// the millimetre), the descriptors name the fields, and the extra bytes hold the
    /// values (NaN included).
    #[test]
    fn fields_round_trip_through_las_and_laz() {
        let dir = tempfile::tempdir().unwrap();
        let points = [[697000.1234, 1636000.5, 300.25], [697010.0, 1636020.0, 290.0]];
        let (a, b) = ([1.5, f64::NAN], [-0.25, 3.0]);
        let fields = [
            Field { name: "m3c2_distance", description: "M3C2 distance (m)", values: &a },
            Field { name: "m3c2_uncertainty", description: "level of detection (m)", values: &b },
        ];
        for name in ["f.laz", "f.las"] {
            let path = dir.path().join(name);
            write(&path, &points, &fields, Some(&Crs::from_epsg(32620))).unwrap();
            let mut r = Reader::from_path(&path).unwrap();
            let vlr = r.header().all_vlrs().find(|v| v.record_id == 4).unwrap().clone();
            assert_eq!(vlr.data.len(), 384);
            assert_eq!(&vlr.data[4..17], b"m3c2_distance");
            assert_eq!(&vlr.data[192 + 4..192 + 20], b"m3c2_uncertainty");
            let pts: Vec<Point> = r.read_all().unwrap().points().map(|p| p.unwrap()).collect();
            assert_eq!(pts.len(), 2);
            for (p, q) in pts.iter().zip(&points) {
                assert!((p.x - q[0]).abs() <= 5e-4 && (p.y - q[1]).abs() <= 5e-4);
                assert!((p.z - q[2]).abs() <= 5e-4);
            }
            let val = |p: &Point, k: usize| {
                f64::from_le_bytes(p.extra_bytes[8 * k..8 * k + 8].try_into().unwrap())
            };
            assert_eq!((val(&pts[0], 0), val(&pts[0], 1)), (1.5, -0.25));
            assert!(val(&pts[1], 0).is_nan());
            assert_eq!(val(&pts[1], 1), 3.0);
        }
        let short = [Field { name: "x", description: "", values: &a[..1] }];
        let e = write(&dir.path().join("g.laz"), &points, &short, None).unwrap_err();
        assert!(e.to_string().contains("g.laz"), "{e}");
        assert!(!dir.path().join("g.laz").exists());
    }
}
