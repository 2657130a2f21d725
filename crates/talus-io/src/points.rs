//! Reading a points table (`talus ingest`'s output, schema
//! `talus_schema::points::full_schema`) as the later stages need it: the (x, y, z) of the
//! points of some classes, checked finite. Its one writer is `talus ingest`, which streams
//! LAS/LAZ records straight into Arrow columns (`talus_ingest::convert`).

use crate::error::{IoError, Result};
use crate::{Crs, read_table};
use std::path::Path;

/// The points of the kept classes of a points table.
#[derive(Debug, Clone, PartialEq)]
pub struct Points {
    /// (x, y, z), m, in file order.
    pub xyz: Vec<[f64; 3]>,
    /// Rows in the file, before the class filter.
    pub total: usize,
    /// The table's coordinate reference system, if recorded.
    pub crs: Option<Crs>,
}

/// Read the points of `classes` (all points if empty) from a points table. Every kept
/// point must be finite: the error names the file and the row. The result may be empty;
/// the caller decides whether that is an error.
pub fn read(path: &Path, classes: &[u8]) -> Result<Points> {
    let t = read_table(path, &talus_schema::points::core_schema())?;
    let (x, y, z, class) = (t.f64s("x")?, t.f64s("y")?, t.f64s("z")?, t.u8s("classification")?);
    let mut xyz = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        if !classes.is_empty() && !classes.contains(&class[i]) {
            continue;
        }
        let p = [x[i], y[i], z[i]];
        if !p.iter().all(|v| v.is_finite()) {
            return Err(IoError::Invalid {
                path: path.to_path_buf(),
                message: format!("point {i} has a non-finite coordinate"),
            });
        }
        xyz.push(p);
    }
    Ok(Points { xyz, total: x.len(), crs: t.provenance().crs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Provenance, write_parquet};
    use arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt8Array};
    use std::sync::Arc;

    fn write(path: &Path, pts: &[[f64; 3]], class: &[u8]) {
        let schema = Arc::new(talus_schema::points::core_schema());
        let mut cols: Vec<ArrayRef> = (0..3)
            .map(|k| Arc::new(Float64Array::from_iter_values(pts.iter().map(|p| p[k]))) as _)
            .collect();
        cols.push(Arc::new(UInt8Array::from_iter_values(class.iter().copied())));
        let b = RecordBatch::try_new(schema.clone(), cols).unwrap();
        let prov = Provenance::new("ingest", "test", &0).with_crs(Some(Crs::from_epsg(2154)));
        write_parquet(path, schema, &[b], &prov).unwrap();
    }

    #[test]
    fn classes_filter_and_crs_travel() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pre.parquet");
        let pts = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.5]];
        write(&path, &pts, &[2, 6, 2]);
        let all = read(&path, &[]).unwrap();
        assert_eq!((all.xyz, all.total), (pts.to_vec(), 3));
        assert_eq!(all.crs.and_then(|c| c.epsg), Some(2154));
        let ground = read(&path, &[2]).unwrap();
        assert_eq!(ground.xyz, vec![pts[0], pts[2]]);
        assert!(read(&path, &[9]).unwrap().xyz.is_empty());
    }

    #[test]
    fn a_non_finite_kept_point_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("post.parquet");
        write(&path, &[[1.0, 2.0, 3.0], [f64::NAN, 5.0, 6.0]], &[2, 6]);
        let e = read(&path, &[]).unwrap_err().to_string();
        assert!(e.contains("post.parquet") && e.contains("point 1 has a non-finite"), "{e}");
        // A non-finite point of a dropped class does not matter.
        assert_eq!(read(&path, &[2]).unwrap().xyz.len(), 1);
    }
}
