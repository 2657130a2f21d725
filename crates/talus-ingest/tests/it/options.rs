//! Options: class filter, bounding box, thinning (every n-th, grid with each choice),
//! merging several inputs; each compared with a brute-force reference computed from the
//! points as written.

use crate::common::{Spec, UTM20_WKT, write};
use las::Point;
use std::collections::BTreeMap;
use std::path::PathBuf;
use talus_ingest::{BBox, Config, GridKeep, Thin, run};
use talus_io::{NoProgress, read_table};
use talus_schema::points::core_schema;

/// Ingest with `config`, return (x, y, z) of the output rows in order.
fn ingest(
    config: &Config,
    inputs: &[PathBuf],
) -> (Vec<[f64; 3]>, talus_io::Table, talus_ingest::Summary) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    let s = run(config, inputs, &out, &NoProgress).unwrap();
    let t = read_table(&out, &core_schema()).unwrap();
    let (x, y, z) = (t.f64s("x").unwrap(), t.f64s("y").unwrap(), t.f64s("z").unwrap());
    ((0..x.len()).map(|i| [x[i], y[i], z[i]]).collect(), t, s)
}

fn xyz(p: &[Point]) -> Vec<[f64; 3]> {
    p.iter().map(|p| [p.x, p.y, p.z]).collect()
}

fn one_file(n: usize) -> (tempfile::TempDir, PathBuf, Vec<Point>) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("survey.laz");
    let pts = write(&p, &Spec { wkt: Some(UTM20_WKT.into()), ..Spec::new((1, 4), 6, n) });
    (dir, p, pts)
}

#[test]
fn class_filter_keeps_only_the_listed_classes() {
    let (_d, p, pts) = one_file(3000);
    let config = Config { classes: vec![2, 6], chunk_points: 700, ..Config::default() };
    let (got, t, s) = ingest(&config, &[p]);
    let want: Vec<Point> =
        pts.iter().filter(|p| matches!(u8::from(p.classification), 2 | 6)).cloned().collect();
    assert_eq!(got, xyz(&want));
    assert!(t.u8s("classification").unwrap().iter().all(|c| *c == 2 || *c == 6));
    assert_eq!(s.points_read, 3000);
    assert_eq!(s.class_counts.keys().copied().collect::<Vec<_>>(), vec![2, 6]);
}

#[test]
fn bbox_crops_bounds_included() {
    let (_d, p, pts) = one_file(3000);
    // A bound exactly on a point's coordinate keeps that point.
    let b = BBox {
        xmin: pts[10].x,
        ymin: 1_630_000.0,
        xmax: 700_080.0,
        ymax: pts[20].y,
        zmin: Some(-10.0),
        zmax: None,
    };
    let (got, _, s) = ingest(&Config { bbox: Some(b), ..Config::default() }, &[p]);
    let want: Vec<Point> = pts.iter().filter(|p| b.contains(p.x, p.y, p.z)).cloned().collect();
    assert!(!want.is_empty() && want.len() < pts.len());
    assert!(
        got.contains(&[pts[10].x, pts[10].y, pts[10].z])
            == b.contains(pts[10].x, pts[10].y, pts[10].z)
    );
    assert_eq!(got, xyz(&want));
    assert!(s.bounds[0] >= b.xmin && s.bounds[3] <= b.xmax && s.bounds[2] >= -10.0);
}

#[test]
fn every_nth_counts_after_filters_and_across_chunks() {
    let (_d, p, pts) = one_file(3000);
    let config = Config {
        classes: vec![2],
        thin: Thin::Every { n: 7 },
        chunk_points: 333,
        ..Config::default()
    };
    let (got, _, _) = ingest(&config, &[p]);
    let ground: Vec<Point> =
        pts.iter().filter(|p| u8::from(p.classification) == 2).cloned().collect();
    let want: Vec<Point> = ground.iter().step_by(7).cloned().collect();
    assert_eq!(got, xyz(&want));
}

/// Brute-force grid thinning: the rank (in input order) kept per cell.
fn grid_reference(pts: &[[f64; 3]], s: f64, keep: GridKeep) -> Vec<[f64; 3]> {
    let mut best: BTreeMap<(i64, i64), (f64, usize)> = BTreeMap::new();
    for (i, p) in pts.iter().enumerate() {
        let (cx, cy) = ((p[0] / s).floor(), (p[1] / s).floor());
        let key = match keep {
            GridKeep::First => 0.0,
            GridKeep::Lowest => p[2],
            GridKeep::ClosestToCentre => {
                (p[0] - (cx + 0.5) * s).powi(2) + (p[1] - (cy + 0.5) * s).powi(2)
            }
        };
        let e = best.entry((cx as i64, cy as i64)).or_insert((key, i));
        if key < e.0 {
            *e = (key, i);
        }
    }
    let mut idx: Vec<usize> = best.values().map(|v| v.1).collect();
    idx.sort();
    idx.iter().map(|&i| pts[i]).collect()
}

#[test]
fn grid_thinning_matches_brute_force() {
    let (_d, p, pts) = one_file(4000);
    let all = xyz(&pts);
    for keep in [GridKeep::First, GridKeep::Lowest, GridKeep::ClosestToCentre] {
        let config = Config {
            thin: Thin::Grid { spacing: 20.0, keep },
            chunk_points: 1000,
            ..Config::default()
        };
        let (got, _, _) = ingest(&config, std::slice::from_ref(&p));
        let want = grid_reference(&all, 20.0, keep);
        assert!(
            want.len() < all.len() / 2,
            "{keep:?}: the grid should thin ({} of {})",
            want.len(),
            all.len()
        );
        assert_eq!(got, want, "{keep:?}");
        // One point per cell.
        let mut cells: Vec<(i64, i64)> = got
            .iter()
            .map(|p| ((p[0] / 20.0).floor() as i64, (p[1] / 20.0).floor() as i64))
            .collect();
        cells.sort();
        cells.dedup();
        assert_eq!(cells.len(), got.len());
    }
}

#[test]
fn merging_inputs_concatenates_in_order_and_keeps_common_columns() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.las");
    let b = dir.path().join("b.laz");
    // a: format 3 (GPS + RGB), b: format 1 (GPS only), same CRS, different offsets.
    let pa = write(&a, &Spec { geotiff_epsg: Some(32620), ..Spec::new((1, 2), 3, 500) });
    let pb = write(
        &b,
        &Spec {
            geotiff_epsg: Some(32620),
            origin: [701_000.0, 1_631_000.0, 5.0],
            seed: 9,
            ..Spec::new((1, 1), 1, 700)
        },
    );
    let (got, t, s) = ingest(&Config::default(), &[a, b]);
    let mut want = xyz(&pa);
    want.extend(xyz(&pb));
    assert_eq!(got, want);
    let gps: Vec<f64> = pa.iter().chain(&pb).map(|p| p.gps_time.unwrap()).collect();
    assert_eq!(t.f64s("gps_time").unwrap(), gps);
    assert!(!t.has_column("red"));
    assert_eq!(s.dropped_columns, vec!["red", "green", "blue"]);
    assert_eq!(s.crs, "EPSG:32620");
    let prov = t.provenance();
    assert_eq!(
        prov.inputs.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        vec!["a.las", "b.laz"]
    );
    let headers: serde_json::Value = serde_json::from_str(&prov.extra["las:header"]).unwrap();
    assert_eq!(headers[0]["file"], "a.las");
    assert_eq!(headers[1]["file"], "b.laz");
    assert_eq!(headers[1]["offset"][2], 5.0);
    assert_eq!(s.points_read, 1200);
}

#[test]
fn differing_crs_accepted_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.las");
    let b = dir.path().join("b.las");
    write(&a, &Spec { geotiff_epsg: Some(32620), ..Spec::new((1, 2), 1, 50) });
    write(&b, &Spec { geotiff_epsg: Some(4559), seed: 2, ..Spec::new((1, 2), 1, 50) });
    let (got, t, s) = ingest(&Config { require_same_crs: false, ..Config::default() }, &[a, b]);
    assert_eq!(got.len(), 100);
    assert_eq!(s.crs, "EPSG:32620");
    assert_eq!(t.provenance().crs.unwrap().epsg, Some(32620));
}

#[test]
fn config_deserializes_from_toml_and_rejects_unknown_keys() {
    let c: Config = toml_like(r#"{"classes": [2], "thin": {"method": "grid", "spacing": 0.5}, "bbox": {"xmin": 0, "ymin": 0, "xmax": 1, "ymax": 1}}"#).unwrap();
    assert_eq!(c.classes, vec![2]);
    assert_eq!(c.thin, Thin::Grid { spacing: 0.5, keep: GridKeep::ClosestToCentre });
    assert_eq!(c.chunk_points, Config::default().chunk_points);
    let e = toml_like(r#"{"clases": [2]}"#).unwrap_err().to_string();
    assert!(e.contains("clases"), "{e}");
    let e = toml_like(r#"{"thin": {"method": "grid", "spacing": 1, "spaceing": 2}}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("spaceing"), "{e}");
}

fn toml_like(json: &str) -> Result<Config, serde_json::Error> {
    serde_json::from_str(json)
}
