//! TIN validity, interpolation error, exact planes, degenerate input, and the stage's
//! files read back.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use talus_io::NoProgress;
use talus_terrain::{
    Config, Duplicates, Region, Simplify, Surface, Tin, TinError, build, simplify,
};

fn random_points(n: usize, seed: u64, f: impl Fn(f64, f64) -> f64) -> Vec<[f64; 3]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let (x, y) = (rng.random_range(0.0..500.0), rng.random_range(0.0..400.0));
            [x, y, f(x, y)]
        })
        .collect()
}

fn hills(x: f64, y: f64) -> f64 {
    300.0 + 40.0 * (x / 80.0).sin() * (y / 60.0).cos() + 0.2 * x
}

#[test]
fn full_delaunay_of_random_points_is_valid() {
    let pts = random_points(20_000, 1, hills);
    let tin = Tin::delaunay(pts).unwrap();
    assert!(tin.is_valid(), "{:?}", &tin.check()[..tin.check().len().min(5)]);
    for t in 0..tin.triangles.len() {
        let (n, area, slope) = tin.facet(t);
        assert!(n[2] > 0.0 && area > 0.0 && (0.0..90.0).contains(&slope));
        assert!(((n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt() - 1.0).abs() < 1e-12);
    }
}

#[test]
fn cocircular_grid_is_valid_and_covers_the_box() {
    // A regular grid: every square's four corners are cocircular (in-circle = 0).
    let pts: Vec<[f64; 3]> = (0..=30)
        .flat_map(|i| (0..=20).map(move |j| [i as f64 * 2.0, j as f64 * 3.0, 0.0]))
        .collect();
    let tin = Tin::delaunay(pts).unwrap();
    assert!(tin.is_valid(), "{:?}", tin.check());
    assert_eq!(tin.triangles.len(), 2 * 30 * 20);
    assert!((tin.area_2d() - 60.0 * 60.0).abs() < 1e-9);
}

#[test]
fn plane_is_meshed_exactly() {
    let plane = |x: f64, y: f64| 12.5 + 0.3 * x - 0.7 * y;
    let pts = random_points(5_000, 2, plane);
    let config = Config { simplify: Simplify::Greedy, max_error: Some(1e-9), ..Config::default() };
    let (s, _, _) = build(&config, pts, None, &NoProgress).unwrap();
    assert!(s.tin.is_valid());
    // Only the hull is needed for a plane.
    assert!(s.tin.vertices.len() < 200, "{} vertices", s.tin.vertices.len());
    assert!(s.misfit.max_error < 1e-9, "{:?}", s.misfit);
    let probe = random_points(2_000, 3, plane);
    let mut inside = 0;
    for p in probe {
        if let Some(z) = s.tin.interpolate(p[0], p[1]) {
            assert!((z - p[2]).abs() < 1e-9);
            inside += 1;
        }
    }
    assert!(inside > 1_900);
}

#[test]
fn held_out_points_are_within_the_stated_error() {
    let all = random_points(60_000, 4, hills);
    let (held, kept): (Vec<_>, Vec<_>) =
        all.into_iter().enumerate().partition(|(i, _)| i % 10 == 0);
    let kept: Vec<[f64; 3]> = kept.into_iter().map(|(_, p)| p).collect();
    let stated = 0.25;
    let config =
        Config { simplify: Simplify::Greedy, max_error: Some(stated), ..Config::default() };
    let (s, _, _) = build(&config, kept, None, &NoProgress).unwrap();
    assert!(s.tin.is_valid());
    assert!(s.misfit.max_error <= stated, "{:?}", s.misfit);
    let mut worst: f64 = 0.0;
    let mut sum2 = 0.0;
    let mut n = 0;
    // Held-out points within 2 m of the sampled rectangle's edge are left out: there the
    // TIN's hull edges join hull vertices tens of metres apart, with no data beside them
    // (an extrapolation, not an interpolation).
    let interior = |p: &[f64; 3]| (2.0..498.0).contains(&p[0]) && (2.0..398.0).contains(&p[1]);
    for (_, p) in held.iter().filter(|(_, p)| interior(p)) {
        if let Some(z) = s.tin.interpolate(p[0], p[1]) {
            worst = worst.max((z - p[2]).abs());
            sum2 += (z - p[2]).powi(2);
            n += 1;
        }
    }
    let rms = (sum2 / n as f64).sqrt();
    println!(
        "{} vertices; held-out points: max {worst:.3} m, rms {rms:.3} m (stated {stated} m)",
        s.tin.vertices.len()
    );
    // The held-out points were not available to the insertion; they lie between input
    // points a fraction of a metre apart, so their error can exceed the stated bound only
    // by the curvature over that distance.
    assert!(worst <= 1.2 * stated, "held-out max error {worst}");
    assert!(rms <= stated / 2.0);
}

#[test]
fn thesis_sized_and_fine_meshes_on_request() {
    let pts = random_points(30_000, 5, hills);
    let config =
        Config { simplify: Simplify::Greedy, max_vertices: Some(2371), ..Config::default() };
    let (s, _, _) = build(&config, pts.clone(), None, &NoProgress).unwrap();
    assert_eq!(s.tin.vertices.len(), 2371);
    assert!(s.tin.is_valid());
    let hull =
        s.tin.neighbours.iter().flatten().filter(|n| **n == talus_terrain::tin::NONE).count();
    // Euler: triangles = 2 V - 2 - hull vertices.
    assert_eq!(s.tin.triangles.len(), 2 * 2371 - 2 - hull);
    println!("thesis-sized: {} triangles, misfit {:?}", s.tin.triangles.len(), s.misfit);
    let grid = Config { simplify: Simplify::Grid, max_vertices: Some(2371), ..Config::default() };
    let (g, _, _) = build(&grid, pts.clone(), None, &NoProgress).unwrap();
    assert!(
        g.tin.vertices.len() <= 2371 && g.tin.vertices.len() > 2000,
        "{}",
        g.tin.vertices.len()
    );
    assert!(g.tin.is_valid());
    // Greedy is better than grid thinning for the same budget.
    println!("greedy {:?} vs grid {:?}", s.misfit, g.misfit);
    assert!(s.misfit.rms_error < g.misfit.rms_error, "{:?} vs {:?}", s.misfit, g.misfit);
    assert!(s.misfit.max_error < g.misfit.max_error, "{:?} vs {:?}", s.misfit, g.misfit);
    // A fine mesh by error: every left-out point within 2 cm, far more vertices.
    let fine = Config { simplify: Simplify::Greedy, max_error: Some(0.02), ..Config::default() };
    let (e, _, _) = build(&fine, pts.clone(), None, &NoProgress).unwrap();
    println!("fine: {} vertices, misfit {:?}", e.tin.vertices.len(), e.misfit);
    assert!(e.tin.is_valid());
    assert!(e.misfit.max_error <= 0.02 && e.tin.vertices.len() > 4 * 2371, "{:?}", e.misfit);
    let all = Config::default();
    let (f, _, _) = build(&all, pts, None, &NoProgress).unwrap();
    assert_eq!(f.tin.vertices.len(), 30_000);
}

#[test]
fn duplicates_and_degenerate_input() {
    let mut pts = vec![[0.0, 0.0, 1.0], [10.0, 0.0, 1.0], [0.0, 10.0, 1.0], [0.0, 0.0, 5.0]];
    let config = Config { duplicates: Duplicates::Highest, ..Config::default() };
    let (s, kept, merged) = build(&config, pts.clone(), None, &NoProgress).unwrap();
    assert_eq!((kept, merged, s.tin.vertices.len()), (4, 1, 3));
    assert!(s.tin.vertices.contains(&[0.0, 0.0, 5.0]));
    pts.truncate(2);
    assert_eq!(build(&config, pts, None, &NoProgress).err(), Some(TinError::TooFewPoints(2)));
    let line: Vec<[f64; 3]> = (0..10).map(|i| [i as f64, 3.0 * i as f64, 0.0]).collect();
    assert!(matches!(build(&config, line.clone(), None, &NoProgress), Err(TinError::Collinear(_))));
    let greedy = Config { simplify: Simplify::Greedy, max_vertices: Some(5), ..Config::default() };
    assert!(matches!(build(&greedy, line, None, &NoProgress), Err(TinError::Collinear(_))));
}

fn write_points(path: &std::path::Path, pts: &[[f64; 3]], class: impl Fn(usize) -> u8) {
    write_points_in(path, pts, class, 32620);
}

/// Ground points (classes from `class`) in EPSG:`epsg`.
fn write_points_in(
    path: &std::path::Path,
    pts: &[[f64; 3]],
    class: impl Fn(usize) -> u8,
    epsg: u32,
) {
    use arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt8Array};
    let schema = Arc::new(talus_schema::points::core_schema());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Float64Array::from_iter_values(pts.iter().map(|p| p[0]))),
        Arc::new(Float64Array::from_iter_values(pts.iter().map(|p| p[1]))),
        Arc::new(Float64Array::from_iter_values(pts.iter().map(|p| p[2]))),
        Arc::new(UInt8Array::from_iter_values((0..pts.len()).map(class))),
    ];
    let b = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let prov =
        talus_io::Provenance::new("ingest", "0", &0).with_crs(Some(talus_io::Crs::from_epsg(epsg)));
    talus_io::write_parquet(path, schema, &[b], &prov).unwrap();
}

#[test]
fn stage_writes_valid_files_for_a_bbox_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("post.parquet");
    let ground: Vec<[f64; 3]> = (0..=100)
        .flat_map(|i| {
            (0..=80).map(move |j| {
                [i as f64 * 5.0, j as f64 * 5.0, hills(i as f64 * 5.0, j as f64 * 5.0)]
            })
        })
        .collect();
    // Vegetation returns (class 4), 10 m above the ground beside every third point.
    let mut pts = ground.clone();
    pts.extend(ground.iter().step_by(3).map(|p| [p[0] + 1.0, p[1] + 1.0, p[2] + 10.0]));
    let n_ground = ground.len();
    let veg = move |i: usize| if i < n_ground { 2u8 } else { 4u8 };
    write_points(&input, &pts, veg);
    let out = dir.path().join("terrain");
    let config = Config {
        region: Region::Bbox,
        bbox: Some([100.0, 50.0, 300.0, 250.0]),
        obj: true,
        ..Config::default()
    };
    let s = talus_terrain::run(&config, &input, None, None, &out, &NoProgress).unwrap();
    assert!((s.area_2d - 200.0 * 200.0).abs() < 1e-6, "{}", s.area_2d);
    let tin = talus_terrain::export::read_tin(&out).unwrap();
    assert!(tin.is_valid());
    assert_eq!(tin.vertices.len(), s.vertices);
    // Only ground points: every vertex is on the hills surface.
    assert!(tin.vertices.iter().all(|v| (v[2] - hills(v[0], v[1])).abs() < 1e-9));
    let t = talus_io::read_table(
        &out.join("triangles.parquet"),
        &talus_schema::terrain::triangles_schema(),
    )
    .unwrap();
    assert!(t.f64s("nz").unwrap().iter().all(|&nz| nz > 0.0));
    assert_eq!(t.provenance().crs.unwrap().epsg, Some(32620));
    let ply = std::fs::read(out.join("terrain.ply")).unwrap();
    assert!(ply.starts_with(b"ply\nformat binary_little_endian 1.0\n"));
    assert!(out.join("terrain.obj").exists());
    // Same input, same bytes.
    let out2 = dir.path().join("terrain2");
    talus_terrain::run(&config, &input, None, None, &out2, &NoProgress).unwrap();
    for f in ["vertices.parquet", "triangles.parquet", "terrain.ply"] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(out2.join(f)).unwrap(),
            "{f}"
        );
    }
    // A box holding no point: clear error, nothing written.
    let empty = Config {
        region: Region::Bbox,
        bbox: Some([1000.0, 1000.0, 1001.0, 1001.0]),
        ..Config::default()
    };
    let out3 = dir.path().join("terrain3");
    let e =
        talus_terrain::run(&empty, &input, None, None, &out3, &NoProgress).unwrap_err().to_string();
    assert!(e.contains("post.parquet") && e.contains("0 distinct point"), "{e}");
    assert!(!out3.exists());
    // region = zones without a zones file.
    let zones = Config { region: Region::Zones, ..Config::default() };
    let e =
        talus_terrain::run(&zones, &input, None, None, &out3, &NoProgress).unwrap_err().to_string();
    assert!(e.contains("--zones"), "{e}");
    let greedy_no_stop = Config { simplify: Simplify::Greedy, ..Config::default() };
    assert!(greedy_no_stop.validate().is_err());
    let _ = simplify::Misfit::default();
}

fn write_zones(path: &std::path::Path, zones: &[(&str, Vec<Vec<[f64; 2]>>)]) {
    use arrow::array::{ArrayRef, BinaryArray, Float64Array, Int32Array, RecordBatch};
    use arrow::array::{StringArray, UInt32Array};
    let n = zones.len();
    let f = |v: f64| Arc::new(Float64Array::from(vec![v; n])) as ArrayRef;
    let schema = Arc::new(talus_schema::diff::zones_schema());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(0..n as i32)),
        Arc::new(StringArray::from_iter_values(zones.iter().map(|z| z.0))),
        f(1.0),
        f(1.0),
        f(0.1),
        Arc::new(UInt32Array::from(vec![1; n])),
        f(0.0),
        f(0.0),
        f(0.0),
        f(0.0),
        Arc::new(BinaryArray::from_iter_values(
            zones.iter().map(|z| talus_io::geo::wkb_polygon(&z.1)),
        )),
    ];
    let b = RecordBatch::try_new(schema.clone(), cols).unwrap();
    talus_io::write_parquet(path, schema, &[b], &talus_io::Provenance::new("diff", "0", &0))
        .unwrap();
}

/// `surface = "bed"`: inside the deposit zones (holes excepted) the TIN is the pre-event
/// ground, elsewhere (scar included) the post-event ground; bad calls are refused.
#[test]
fn bed_surface_takes_the_pre_event_ground_inside_the_deposit() {
    let dir = tempfile::tempdir().unwrap();
    let plane = |x: f64, y: f64| 300.0 + 0.1 * x + 0.05 * y;
    let rect = |x0: f64, y0: f64, x1: f64, y1: f64| vec![[x0, y0], [x1, y0], [x1, y1], [x0, y1]];
    let in_rect =
        |p: [f64; 2], r: [f64; 4]| p[0] > r[0] && p[0] < r[2] && p[1] > r[1] && p[1] < r[3];
    let (deposit, hole, scar) =
        ([100.0, 100.0, 300.0, 200.0], [180.0, 140.0, 220.0, 160.0], [0.0, 250.0, 50.0, 300.0]);
    let grid: Vec<[f64; 2]> = (0..=80)
        .flat_map(|i| (0..=60).map(move |j| [i as f64 * 5.0 + 2.5, j as f64 * 5.0 + 2.5]))
        .collect();
    // The post-event ground: a 30 m mound on the deposit (its hole too), a 10 m scar.
    let post_z = |p: [f64; 2]| {
        plane(p[0], p[1]) + if in_rect(p, deposit) { 30.0 } else { 0.0 }
            - if in_rect(p, scar) { 10.0 } else { 0.0 }
    };
    let pre: Vec<[f64; 3]> = grid.iter().map(|p| [p[0], p[1], plane(p[0], p[1])]).collect();
    let post: Vec<[f64; 3]> = grid.iter().map(|p| [p[0], p[1], post_z(*p)]).collect();
    let (pre_path, post_path, zones) =
        (dir.path().join("pre.parquet"), dir.path().join("post.parquet"), dir.path().join("z.pq"));
    write_points(&pre_path, &pre, |_| 2);
    write_points(&post_path, &post, |_| 2);
    let d = deposit;
    let h = hole;
    write_zones(
        &zones,
        &[
            ("deposit", vec![rect(d[0], d[1], d[2], d[3]), rect(h[0], h[1], h[2], h[3])]),
            ("scar", vec![rect(scar[0], scar[1], scar[2], scar[3])]),
        ],
    );
    let config = Config { surface: Surface::Bed, ..Config::default() };
    let out = dir.path().join("bed");
    let s =
        talus_terrain::run(&config, &post_path, Some(&pre_path), Some(&zones), &out, &NoProgress)
            .unwrap();
    let replaced = grid.iter().filter(|p| in_rect(**p, deposit) && !in_rect(**p, hole)).count();
    let b = s.bed.unwrap();
    assert_eq!(
        (b.deposit_polygons, b.post_points_dropped, b.pre_points_used),
        (1, replaced, replaced)
    );
    assert_eq!(s.vertices, grid.len());
    let tin = talus_terrain::export::read_tin(&out).unwrap();
    // At the data points (vertices) the TIN is exact; between them, away from the zone
    // edges, it is the plane (pre) or plane + constant (post).
    for p in &grid {
        let z = tin.interpolate(p[0], p[1]).unwrap();
        let want =
            if in_rect(*p, deposit) && !in_rect(*p, hole) { plane(p[0], p[1]) } else { post_z(*p) };
        assert!((z - want).abs() < 1e-9, "{p:?}: {z} vs {want}");
    }
    // The default surface keeps the mound.
    let out_post = dir.path().join("post");
    let s = talus_terrain::run(
        &Config::default(),
        &post_path,
        Some(&pre_path),
        Some(&zones),
        &out_post,
        &NoProgress,
    )
    .unwrap();
    assert!(s.bed.is_none());
    let tin = talus_terrain::export::read_tin(&out_post).unwrap();
    assert!((tin.interpolate(150.0, 120.0).unwrap() - plane(150.0, 120.0) - 30.0).abs() < 1e-9);

    // Refused: no pre-event points; pre-event points in another CRS (named).
    let e = talus_terrain::run(&config, &post_path, None, Some(&zones), &out, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--pre"), "{e}");
    let other = dir.path().join("pre_utm21.parquet");
    write_points_in(&other, &pre, |_| 2, 32621);
    let e = talus_terrain::run(&config, &post_path, Some(&other), Some(&zones), &out, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("pre_utm21.parquet") && e.contains("CRS"), "{e}");
}
