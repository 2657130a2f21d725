//! The block trajectories as 3-D lines (`trajectory_lines.parquet`, GeoParquet 1.1 with
//! `LineString Z` geometries), so that QGIS draws each block's path from the run's
//! recorded centre positions, with its length, drop and peak speed as attributes.

use crate::Error;
use crate::inputs::Trajectories;
use arrow::array::{ArrayRef, BinaryArray, Float64Array, RecordBatch, UInt32Array};
use std::path::Path;
use std::sync::Arc;
use talus_io::Provenance;

/// One block's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub id: u32,
    /// Recorded centre positions, in time order.
    pub points: Vec<[f64; 3]>,
    /// 3-D length through the points, m.
    pub length: f64,
    /// First elevation minus last, m.
    pub drop: f64,
    /// Largest recorded speed, m/s.
    pub max_speed: f64,
}

/// The lines of every block in `traj` (rows sorted by id, then step), in id order. A
/// block recorded once gets a degenerate line of its point twice (a line needs two).
pub fn lines(traj: &Trajectories) -> Vec<Line> {
    traj.per_block()
        .into_iter()
        .map(|(id, rows)| {
            let mut points: Vec<[f64; 3]> =
                rows.clone().map(|i| [traj.x[i], traj.y[i], traj.z[i]]).collect();
            let length = points
                .windows(2)
                .map(|w| {
                    ((w[1][0] - w[0][0]).powi(2)
                        + (w[1][1] - w[0][1]).powi(2)
                        + (w[1][2] - w[0][2]).powi(2))
                    .sqrt()
                })
                .sum();
            let drop = points[0][2] - points[points.len() - 1][2];
            let max_speed = rows.map(|i| traj.speed[i]).fold(0.0, f64::max);
            if points.len() == 1 {
                points.push(points[0]);
            }
            Line { id, points, length, drop, max_speed }
        })
        .collect()
}

/// Write `lines` as `trajectory_lines.parquet` at `path` with the CRS of `prov`.
pub fn write(path: &Path, lines: &[Line], prov: &Provenance) -> Result<(), Error> {
    let schema = Arc::new(talus_schema::compare::trajectory_lines_schema());
    let geometry: Vec<Vec<u8>> =
        lines.iter().map(|l| talus_io::geo::wkb_linestring_z(&l.points)).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from(lines.iter().map(|l| l.id).collect::<Vec<_>>())),
        Arc::new(UInt32Array::from(
            lines.iter().map(|l| l.points.len() as u32).collect::<Vec<_>>(),
        )),
        Arc::new(Float64Array::from(lines.iter().map(|l| l.length).collect::<Vec<_>>())),
        Arc::new(Float64Array::from(lines.iter().map(|l| l.drop).collect::<Vec<_>>())),
        Arc::new(Float64Array::from(lines.iter().map(|l| l.max_speed).collect::<Vec<_>>())),
        Arc::new(BinaryArray::from_iter_values(geometry.iter())),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| Error::input(path, format!("building the trajectory lines: {e}")))?;
    let mut bbox = [f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
    for p in lines.iter().flat_map(|l| &l.points) {
        bbox = [bbox[0].min(p[0]), bbox[1].min(p[1]), bbox[2].max(p[0]), bbox[3].max(p[1])];
    }
    let geo = talus_io::geo::geo_metadata(
        "geometry",
        &["LineString Z"],
        prov.crs.as_ref(),
        (!lines.is_empty()).then_some(&bbox[..]),
    );
    let prov = prov.clone().with_extra(talus_io::geo::GEO_KEY, geo);
    talus_io::write_parquet(path, schema, &[batch], &prov)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two blocks: a 3-4-12 segment pair gives length 13 + 5, drop and peak speed; a block
    /// recorded once gets a two-point line; the WKB holds the points in order.
    #[test]
    fn lines_hold_the_recorded_points_and_their_measures() {
        let traj = Trajectories {
            step: vec![0, 10, 20, 0],
            time: vec![0.0, 1.0, 2.0, 0.0],
            id: vec![3, 3, 3, 9],
            x: vec![0.0, 3.0, 3.0, 7.0],
            y: vec![0.0, 4.0, 4.0, 8.0],
            z: vec![100.0, 88.0, 83.0, 50.0],
            speed: vec![0.0, 12.5, 4.0, 0.0],
        };
        let l = lines(&traj);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].id, 3);
        assert_eq!(l[0].length, 18.0);
        assert_eq!(l[0].drop, 17.0);
        assert_eq!(l[0].max_speed, 12.5);
        assert_eq!(l[1].points, vec![[7.0, 8.0, 50.0]; 2]);
        assert_eq!(l[1].length, 0.0);
        let wkb = talus_io::geo::wkb_linestring_z(&l[0].points);
        assert_eq!(wkb.len(), 9 + 3 * 24);
        assert_eq!(&wkb[..9], &[1, 0xea, 3, 0, 0, 3, 0, 0, 0]);
        assert_eq!(f64::from_le_bytes(wkb[9 + 24 + 16..9 + 48].try_into().unwrap()), 88.0);
    }
}
