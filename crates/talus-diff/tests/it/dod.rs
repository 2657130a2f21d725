//! DoD, volumes, zones and the file-level contract of `talus_diff::run`.
#![allow(clippy::field_reassign_with_default)] // test configs read best as edits of the default

use arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt8Array};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use std::path::Path;
use std::sync::Arc;
use talus_diff::{Config, ZoneKind};
use talus_io::{Crs, NoProgress, Provenance};

/// A tilted plane z = 100 + 0.1 x + 0.05 y sampled uniformly on [0, 100) x [0, 60).
fn plane(n: usize, seed: u64, noise: f64) -> Vec<[f64; 3]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let nd = Normal::new(0.0, noise.max(1e-300)).unwrap();
    (0..n)
        .map(|_| {
            let (x, y) = (rng.random::<f64>() * 100.0, rng.random::<f64>() * 60.0);
            let e = if noise > 0.0 { nd.sample(&mut rng) } else { 0.0 };
            [x, y, 100.0 + 0.1 * x + 0.05 * y + e]
        })
        .collect()
}

/// Pit 5 m deep on [20, 40) x [10, 20) (1000 m^3), mound 2 m high on [60, 90) x [30, 45)
/// (900 m^3).
fn collapse(p: &[[f64; 3]]) -> Vec<[f64; 3]> {
    p.iter()
        .map(|&[x, y, z]| {
            let mut z = z;
            if (20.0..40.0).contains(&x) && (10.0..20.0).contains(&y) {
                z -= 5.0;
            }
            if (60.0..90.0).contains(&x) && (30.0..45.0).contains(&y) {
                z += 2.0;
            }
            [x, y, z]
        })
        .collect()
}

fn config() -> Config {
    let mut c = Config::default();
    c.classes = vec![];
    c.dod.cell_size = 1.0;
    c.m3c2.normal_radii = vec![2.0];
    c.m3c2.cylinder_radius = 1.0;
    c.m3c2.max_depth = 8.0;
    c
}

#[test]
fn survey_against_itself_has_no_change() {
    let p = plane(30_000, 1, 0.02);
    let r = talus_diff::diff_clouds(
        &config(),
        p.clone(),
        p,
        (Path::new("a"), Path::new("b")),
        &NoProgress,
    )
    .unwrap();
    assert!(r.dod.dz.iter().filter(|v| v.is_finite()).all(|v| *v == 0.0));
    assert_eq!(r.summary.cells_significant, 0);
    assert!(r.zones.is_empty());
    assert_eq!(r.summary.loss.volume, 0.0);
    let valid: Vec<_> = r.m3c2.iter().filter(|m| m.flag == 0).collect();
    assert!(valid.len() > r.m3c2.len() * 9 / 10, "{} of {}", valid.len(), r.m3c2.len());
    assert!(valid.iter().all(|m| m.distance.abs() < 1e-9 && !m.significant));
    assert!(r.c2c.iter().all(|c| c.distance == 0.0));
}

#[test]
fn pit_and_mound_volumes_and_outlines() {
    let pre = plane(60_000, 2, 0.02);
    let post = collapse(&plane(60_000, 3, 0.02));
    let r = talus_diff::diff_clouds(
        &config(),
        pre,
        post,
        (Path::new("a"), Path::new("b")),
        &NoProgress,
    )
    .unwrap();
    let s = &r.summary;
    // The plane is tilted: cell means carry a slope term but it cancels in dz on average.
    assert!((s.loss.volume - 1000.0).abs() < 3.0 * s.loss.error + 5.0, "{:?}", s.loss);
    assert!((s.gain.volume - 900.0).abs() < 3.0 * s.gain.error + 5.0, "{:?}", s.gain);
    assert_eq!(r.zones.len(), 2);
    let scar = &r.zones[0];
    assert_eq!((scar.zone_id, scar.kind), (0, ZoneKind::Scar));
    assert_eq!(scar.area, 200.0);
    assert_eq!(scar.polygons.len(), 1);
    let ring = &scar.polygons[0][0];
    assert_eq!(ring.len(), 5);
    for v in [[20.0, 10.0], [40.0, 10.0], [40.0, 20.0], [20.0, 20.0]] {
        assert!(ring.contains(&v), "{ring:?}");
    }
    let dep = &r.zones[1];
    // 450 m² of cells, less any cell left without points by the random sampling.
    assert!(dep.kind == ZoneKind::Deposit && (440.0..=450.0).contains(&dep.area), "{}", dep.area);
    assert!((scar.centroid[0] - 30.0).abs() < 1e-9 && (scar.centroid[1] - 15.0).abs() < 1e-9);
    // M3C2 with vertical-ish normals sees the pit (-5 m) in its middle.
    let mid = r
        .m3c2
        .iter()
        .find(|m| (m.core[0] - 30.5).abs() < 1e-9 && (m.core[1] - 15.5).abs() < 1e-9)
        .unwrap();
    let nz = mid.normal[2];
    assert!((mid.distance - (-5.0 * nz)).abs() < 0.05, "{mid:?}");
    assert!(mid.significant);
}

pub(crate) fn write_points(path: &Path, pts: &[[f64; 3]], class: u8, crs: Option<Crs>) {
    let schema = Arc::new(talus_schema::points::core_schema());
    let col = |k: usize| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(pts.iter().map(|p| p[k])))
    };
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![col(0), col(1), col(2), Arc::new(UInt8Array::from(vec![class; pts.len()]))],
    )
    .unwrap();
    let prov = Provenance::new("ingest", "test", &0).with_crs(crs);
    talus_io::write_parquet(path, schema, &[b], &prov).unwrap();
}

#[test]
fn run_writes_every_output_with_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("pre.parquet"), dir.path().join("post.parquet"));
    let pre = plane(60_000, 4, 0.02);
    write_points(&a, &pre, 2, Some(Crs::from_epsg(32620)));
    write_points(&b, &collapse(&pre), 2, Some(Crs::from_epsg(32620)));
    let out = dir.path().join("out");
    let mut cfg = config();
    cfg.classes = vec![2];
    let s = talus_diff::run(&cfg, &a, &b, &out, &NoProgress).unwrap();
    assert_eq!(s.crs, "EPSG:32620");
    let dod =
        talus_io::read_table(&out.join("dod.parquet"), &talus_schema::diff::dod_schema()).unwrap();
    assert_eq!(dod.num_rows(), s.grid.nx * s.grid.ny);
    let grid: serde_json::Value =
        serde_json::from_str(&dod.metadata[talus_schema::diff::GRID_KEY]).unwrap();
    assert_eq!(grid["cell"], 1.0);
    assert_eq!(grid["nx"], s.grid.nx);
    let zone_id = dod.i32s("zone_id").unwrap();
    assert_eq!(zone_id.iter().filter(|&&z| z == 0).count(), 200);
    let zones =
        talus_io::read_table(&out.join("zones.parquet"), &talus_schema::diff::zones_schema())
            .unwrap();
    assert_eq!(zones.strings("kind").unwrap(), vec!["scar", "deposit"]);
    let geo: serde_json::Value = serde_json::from_str(&zones.metadata["geo"]).unwrap();
    assert_eq!(geo["columns"]["geometry"]["crs"]["id"]["code"], 32620);
    let polys = talus_io::geo::parse_wkb_polygons(&zones.binaries("geometry").unwrap()[0]).unwrap();
    assert_eq!(polys.len(), 1);
    talus_io::read_table(&out.join("m3c2.parquet"), &talus_schema::diff::m3c2_schema()).unwrap();
    let c2c =
        talus_io::read_table(&out.join("c2c.parquet"), &talus_schema::diff::c2c_schema()).unwrap();
    assert_eq!(c2c.num_rows(), 60_000);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["zones"][0]["kind"], "scar");
    // Determinism: a second run gives byte-identical tables.
    let out2 = dir.path().join("out2");
    talus_diff::run(&cfg, &a, &b, &out2, &NoProgress).unwrap();
    for f in ["dod.parquet", "zones.parquet", "m3c2.parquet", "c2c.parquet", "summary.json"] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(out2.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn bad_inputs_are_clear_errors_without_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let pre = plane(2_000, 5, 0.0);
    write_points(&p("a.parquet"), &pre, 2, Some(Crs::from_epsg(32620)));
    write_points(&p("b.parquet"), &pre, 2, Some(Crs::from_epsg(2154)));
    write_points(&p("c.parquet"), &pre, 1, Some(Crs::from_epsg(32620)));
    let far: Vec<[f64; 3]> = pre.iter().map(|q| [q[0] + 1000.0, q[1], q[2]]).collect();
    write_points(&p("d.parquet"), &far, 2, Some(Crs::from_epsg(32620)));
    let cfg = Config::default();
    let out = p("out");
    let err = |a: &str, b: &str, c: &Config| {
        talus_diff::run(c, &p(a), &p(b), &out, &NoProgress).unwrap_err().to_string()
    };
    let e = err("a.parquet", "b.parquet", &cfg);
    assert!(e.contains("EPSG:32620") && e.contains("EPSG:2154") && e.contains("same_crs"), "{e}");
    let e = err("a.parquet", "c.parquet", &cfg);
    assert!(e.contains("c.parquet") && e.contains("no points left"), "{e}");
    let e = err("a.parquet", "d.parquet", &cfg);
    assert!(e.contains("do not overlap"), "{e}");
    assert!(!out.exists());
    // Same CRS asserted by the user: works.
    let mut same = cfg.clone();
    same.same_crs = true;
    same.m3c2.enabled = false;
    talus_diff::run(&same, &p("a.parquet"), &p("b.parquet"), &out, &NoProgress).unwrap();
    // Overlapping boxes but no cell with both surveys: two interleaved stripes.
    let stripes = |odd: bool| -> Vec<[f64; 3]> {
        pre.iter().copied().filter(|q| ((q[0] / 10.0).floor() as i64 % 2 == 1) == odd).collect()
    };
    write_points(&p("e.parquet"), &stripes(false), 2, None);
    write_points(&p("f.parquet"), &stripes(true), 2, None);
    let out3 = p("out3");
    let e = talus_diff::run(&cfg, &p("e.parquet"), &p("f.parquet"), &out3, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("overlap is empty"), "{e}");
    assert!(!out3.exists());
    let mut bad = cfg.clone();
    bad.dod.cell_size = -1.0;
    assert!(bad.validate().unwrap_err().to_string().contains("cell_size"));
}

#[test]
fn sparse_cylinders_are_flagged_not_fatal() {
    // Post survey covers only half of the pre survey's area: the other half's cylinders
    // hold no post point.
    let pre = plane(6_000, 6, 0.01);
    let post: Vec<[f64; 3]> = plane(6_000, 7, 0.01).into_iter().filter(|q| q[0] < 50.0).collect();
    let mut cfg = config();
    cfg.m3c2.core_points = talus_diff::config::CorePoints::Spacing;
    cfg.m3c2.core_spacing = 5.0;
    let r = talus_diff::diff_clouds(&cfg, pre, post, (Path::new("a"), Path::new("b")), &NoProgress)
        .unwrap();
    let flagged: Vec<_> =
        r.m3c2.iter().filter(|m| m.flag & talus_diff::m3c2::FLAG_FEW_POST != 0).collect();
    assert!(!flagged.is_empty());
    assert!(flagged.iter().all(|m| m.distance.is_nan() && !m.significant));
    assert!(r.m3c2.iter().any(|m| m.flag == 0));
}

/// A cell size in the wrong unit (1 mm over 100 × 60 m: 6e9 cells) is refused with the
/// grid's dimensions before any cell is allocated; the same surveys on the limit's side
/// are differenced.
#[test]
fn a_grid_of_too_many_cells_is_refused_before_differencing() {
    let p = plane(2_000, 4, 0.0);
    let mut cfg = config();
    cfg.dod.cell_size = 1e-3;
    cfg.m3c2.enabled = false;
    cfg.c2c.enabled = false;
    let names = (Path::new("a"), Path::new("b"));
    let Err(e) = talus_diff::diff_clouds(&cfg, p.clone(), p.clone(), names, &NoProgress) else {
        panic!("a grid of 6e9 cells was accepted");
    };
    match &e {
        talus_diff::Error::GridTooLarge { nx, ny, max, .. } => {
            assert!(nx * ny > *max && *max == talus_diff::MAX_CELLS, "{e}");
            assert!((99_000..=100_001).contains(nx) && (59_000..=60_001).contains(ny), "{e}");
        }
        _ => panic!("{e}"),
    }
    assert!(e.to_string().contains("dod.cell_size = 0.001 m"), "{e}");
    // 10 cm: 1000 × 600 cells, within the limit.
    cfg.dod.cell_size = 0.1;
    let r = talus_diff::diff_clouds(&cfg, p.clone(), p, names, &NoProgress).unwrap();
    assert!(r.dod.grid.len() <= talus_diff::MAX_CELLS);
}
