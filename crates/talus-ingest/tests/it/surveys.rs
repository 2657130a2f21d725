//! Surveys as they come (issue 22), on the shipped synthetic Piton Marcel surveys:
//! * the pre-event survey reprojected to the neighbouring UTM zone (EPSG:32619) and to
//!   geographic coordinates (EPSG:4326) comes back to EPSG:32620 within 1 mm, and the
//!   zone volumes differenced from it equal those of the original within their error;
//! * the post-event survey cut into 3 × 3 overlapping tiles, ingested as a directory and
//!   as a glob pattern, gives the same points (up to order) as the single file, with the
//!   overlaps' repeats dropped, and the same volumes;
//! * a polygon keeps exactly the points inside it.
#![allow(clippy::field_reassign_with_default)] // test configs read best as edits of the default

use crate::common::geotiff_vlr;
use las::{Builder, Point, Transform, Vector, Writer};
use std::path::{Path, PathBuf};
use talus_ingest::Config;
use talus_io::NoProgress;
use talus_io::reproject::Transform as Reprojection;

fn site_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/piton-marcel").join(name)
}

fn read_points(path: &Path) -> Vec<Point> {
    let mut r = las::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.read_all().unwrap().points().collect::<Result<Vec<_>, _>>().unwrap()
}

/// Write `pts` as LAS 1.2 format 1 (GPS time) with the CRS `epsg` (GeoTIFF keys).
fn write_las(path: &Path, pts: &[Point], epsg: u16, scale: [f64; 3], offset: [f64; 3]) {
    let mut b = Builder::from((1, 2));
    b.point_format = las::point::Format::new(1).unwrap();
    b.transforms = Vector {
        x: Transform { scale: scale[0], offset: offset[0] },
        y: Transform { scale: scale[1], offset: offset[1] },
        z: Transform { scale: scale[2], offset: offset[2] },
    };
    b.vlrs.push(geotiff_vlr(epsg));
    let mut w = Writer::from_path(path, b.into_header().unwrap()).unwrap();
    for p in pts {
        w.write_point(p.clone()).unwrap();
    }
    w.close().unwrap();
}

fn ingest(cfg: &Config, inputs: &[PathBuf], out: &Path) -> talus_ingest::Summary {
    talus_ingest::run(cfg, inputs, out, &NoProgress).unwrap_or_else(|e| panic!("{e}"))
}

fn xyz(path: &Path) -> Vec<[f64; 3]> {
    talus_io::points::read(path, &[]).unwrap().xyz
}

fn zone_volumes(pre: &Path, post: &Path, out: &Path) -> Vec<(String, f64, f64)> {
    let mut cfg = talus_diff::Config::default();
    cfg.dod.cell_size = 5.0;
    cfg.zones.min_area = 200.0;
    cfg.m3c2.enabled = false;
    cfg.c2c.enabled = false;
    let s = talus_diff::run(&cfg, pre, post, out, &NoProgress).unwrap();
    s.zones.iter().map(|z| (z.kind.name().to_string(), z.volume.volume, z.volume.error)).collect()
}

#[test]
fn a_survey_in_another_crs_is_reprojected_back() {
    let dir = tempfile::tempdir().unwrap();
    let pre = read_points(&site_file("pre.laz"));
    let plain = dir.path().join("pre.parquet");
    ingest(&Config::default(), &[site_file("pre.laz")], &plain);
    let post = dir.path().join("post.parquet");
    ingest(&Config::default(), &[site_file("post.laz")], &post);
    let reference = xyz(&plain);
    let base = zone_volumes(&plain, &post, &dir.path().join("diff_plain"));

    for (epsg, scale, offset) in [
        (32619u16, [1e-4, 1e-4, 1e-3], [1_345_000.0, 1_650_000.0, 0.0]),
        (4326u16, [1e-9, 1e-9, 1e-3], [-61.2, 14.7, 0.0]),
    ] {
        let t = Reprojection::new(
            &talus_io::Crs::from_epsg(32620),
            &talus_io::Crs::from_epsg(u32::from(epsg)),
        )
        .unwrap();
        let moved: Vec<Point> = pre
            .iter()
            .map(|p| {
                let (x, y, z) = t.apply(p.x, p.y, p.z);
                Point { x, y, z, ..p.clone() }
            })
            .collect();
        let las_path = dir.path().join(format!("pre_{epsg}.las"));
        write_las(&las_path, &moved, epsg, scale, offset);

        // Without reprojection the two surveys' CRS differ: diff refuses them.
        let as_is = dir.path().join(format!("pre_{epsg}_as_is.parquet"));
        ingest(&Config::default(), std::slice::from_ref(&las_path), &as_is);
        let mut dcfg = talus_diff::Config::default();
        dcfg.m3c2.enabled = false;
        let e = talus_diff::run(&dcfg, &as_is, &post, &dir.path().join("refused"), &NoProgress)
            .unwrap_err();
        assert!(e.to_string().contains("different coordinate reference systems"), "{e}");

        let mut cfg = Config::default();
        cfg.reproject = true;
        cfg.target_epsg = Some(32620);
        let back = dir.path().join(format!("pre_from_{epsg}.parquet"));
        let s = ingest(&cfg, &[las_path], &back);
        assert_eq!(s.crs, "EPSG:32620");
        let note = s.inputs[0].reprojected.as_deref().unwrap();
        assert!(note.starts_with(&format!("EPSG:{epsg} -> EPSG:32620")), "{note}");
        assert!(s.to_string().contains("reprojected EPSG:"), "{s}");
        let got = xyz(&back);
        assert_eq!(got.len(), reference.len());
        let worst = got
            .iter()
            .zip(&reference)
            .map(|(a, b)| (0..3).map(|k| (a[k] - b[k]).abs()).fold(0.0, f64::max))
            .fold(0.0, f64::max);
        println!("EPSG:{epsg} -> EPSG:32620: worst coordinate difference {worst:.2e} m");
        assert!(worst < 1e-3, "{worst}");
        let vols = zone_volumes(&back, &post, &dir.path().join(format!("diff_{epsg}")));
        assert_eq!(vols.len(), base.len());
        for (a, b) in vols.iter().zip(&base) {
            println!("  {}: {:.0} m³ vs {:.0} ± {:.0} m³", a.0, a.1, b.1, b.2);
            assert!(a.0 == b.0 && (a.1 - b.1).abs() <= b.2, "{a:?} vs {b:?}");
        }
    }
}

#[test]
fn reprojection_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pts = read_points(&site_file("pre.laz"));
    let p = dir.path().join("mercator.las");
    write_las(&p, &pts[..10], 3857, [1e-3; 3], [697_000.0, 1_636_000.0, 0.0]);
    let mut cfg = Config::default();
    cfg.reproject = true;
    cfg.target_epsg = Some(32620);
    let e = talus_ingest::run(&cfg, &[p], &dir.path().join("o.parquet"), &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mercator.las") && e.contains("not supported"), "{e}");
    assert!(!dir.path().join("o.parquet").exists());
    cfg.reproject = false;
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("reproject = true"), "{e}");
}

/// Key of a point for comparing tables up to order.
fn keyed(path: &Path) -> Vec<[i64; 4]> {
    let t = talus_io::read_table(path, &arrow::datatypes::Schema::empty()).unwrap();
    let (x, y, z, g) = (
        t.f64s("x").unwrap(),
        t.f64s("y").unwrap(),
        t.f64s("z").unwrap(),
        t.f64s("gps_time").unwrap(),
    );
    let q = |v: f64, s: f64| (v * s).round() as i64;
    let mut k: Vec<[i64; 4]> =
        (0..x.len()).map(|i| [q(x[i], 1e3), q(y[i], 1e3), q(z[i], 1e3), q(g[i], 1e6)]).collect();
    k.sort_unstable();
    k
}

#[test]
fn overlapping_tiles_give_the_single_file() {
    let dir = tempfile::tempdir().unwrap();
    let post_las = site_file("post.laz");
    let pts = read_points(&post_las);
    let (x0, y0, w, h) = (697_000.0, 1_636_000.0, 560.0, 480.0);
    let tiles = dir.path().join("tiles");
    std::fs::create_dir(&tiles).unwrap();
    let mut written = 0usize;
    for i in 0..3 {
        for j in 0..3 {
            // Tiles of a third of the site, grown by 15 m on every side: the points of the
            // margins are in two or four tiles.
            let (xa, xb) = (x0 + w * i as f64 / 3.0 - 15.0, x0 + w * (i + 1) as f64 / 3.0 + 15.0);
            let (ya, yb) = (y0 + h * j as f64 / 3.0 - 15.0, y0 + h * (j + 1) as f64 / 3.0 + 15.0);
            let inside: Vec<Point> = pts
                .iter()
                .filter(|p| p.x >= xa && p.x < xb && p.y >= ya && p.y < yb)
                .cloned()
                .collect();
            written += inside.len();
            write_las(
                &tiles.join(format!("post_{i}_{j}.las")),
                &inside,
                32620,
                [0.001; 3],
                [697_000.0, 1_636_000.0, 0.0],
            );
        }
    }
    let single = dir.path().join("single.parquet");
    ingest(&Config::default(), std::slice::from_ref(&post_las), &single);
    let from_dir = dir.path().join("dir.parquet");
    let s = ingest(&Config::default(), std::slice::from_ref(&tiles), &from_dir);
    assert_eq!(s.inputs.len(), 9);
    assert_eq!(s.duplicates_dropped as usize, written - pts.len(), "{s}");
    assert_eq!(s.points_written as usize, pts.len());
    println!(
        "9 tiles, {written} records, {} repeats dropped, {} points written",
        s.duplicates_dropped, s.points_written
    );
    assert!(s.to_string().contains("repeats of an earlier input"), "{s}");
    assert_eq!(keyed(&single), keyed(&from_dir));
    let from_glob = dir.path().join("glob.parquet");
    ingest(&Config::default(), &[tiles.join("post_*.las")], &from_glob);
    assert_eq!(keyed(&from_glob), keyed(&from_dir));
    // Keeping the repeats writes every record.
    let mut keep = Config::default();
    keep.drop_duplicates = false;
    let all = ingest(&keep, std::slice::from_ref(&tiles), &dir.path().join("all.parquet"));
    assert_eq!(all.points_written as usize, written);

    // The same volumes as the single file.
    let pre = dir.path().join("pre.parquet");
    ingest(&Config::default(), &[site_file("pre.laz")], &pre);
    let a = zone_volumes(&pre, &single, &dir.path().join("d1"));
    let b = zone_volumes(&pre, &from_dir, &dir.path().join("d2"));
    assert_eq!(a.len(), b.len());
    for (a, b) in a.iter().zip(&b) {
        assert!(a.0 == b.0 && (a.1 - b.1).abs() <= 1e-6 * a.1.abs().max(1.0), "{a:?} {b:?}");
    }
}

#[test]
fn a_polygon_keeps_the_points_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let pts = read_points(&site_file("post.laz"));
    let poly = vec![[697_100.0, 1_636_050.0], [697_450.0, 1_636_120.0], [697_200.0, 1_636_400.0]];
    let mut cfg = Config::default();
    cfg.polygon = Some(poly.clone());
    let out = dir.path().join("crop.parquet");
    let s = ingest(&cfg, &[site_file("post.laz")], &out);
    // Brute force: barycentric test of the triangle.
    let inside = |x: f64, y: f64| {
        let [a, b, c] = [poly[0], poly[1], poly[2]];
        let d = (b[1] - c[1]) * (a[0] - c[0]) + (c[0] - b[0]) * (a[1] - c[1]);
        let l1 = ((b[1] - c[1]) * (x - c[0]) + (c[0] - b[0]) * (y - c[1])) / d;
        let l2 = ((c[1] - a[1]) * (x - c[0]) + (a[0] - c[0]) * (y - c[1])) / d;
        l1 > 0.0 && l2 > 0.0 && l1 + l2 < 1.0
    };
    let expected = pts.iter().filter(|p| inside(p.x, p.y)).count();
    assert!(expected > 1000);
    assert_eq!(s.points_written as usize, expected);
    assert!(xyz(&out).iter().all(|p| inside(p[0], p[1])));
    cfg.polygon = Some(vec![[0.0, 0.0], [1.0, 1.0]]);
    assert!(cfg.validate().unwrap_err().to_string().contains("at least 3 vertices"));
}
