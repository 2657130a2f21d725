//! A site file naming surveys as they come (issue 22): the pre-event survey unclassified
//! and in the neighbouring UTM zone (EPSG:32619), the post-event survey unclassified,
//! moved by a rigid transform (0.5, 0.3, 0.2 m; 0.1° about each axis) and cut into
//! 3 × 3 overlapping tiles named by a glob pattern. With `[ingest] reproject` and
//! `ground`, and `[diff] registration`, the pipeline's ingest and diff stages give the
//! zone volumes of the shipped, classified, co-registered pair within their error, and
//! the terrain stage builds its TIN from the post-event points as registered.

use las::{Builder, Point, Transform, Vector, Vlr, Writer};
use nalgebra::{Rotation3, Vector3};
use std::path::{Path, PathBuf};
use talus_io::NoProgress;

fn site_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/piton-marcel").join(name)
}

fn read_points(path: &Path) -> Vec<Point> {
    let mut r = las::Reader::from_path(path).unwrap();
    r.read_all().unwrap().points().collect::<Result<Vec<_>, _>>().unwrap()
}

fn write_las(path: &Path, pts: &[Point], epsg: u16, offset: [f64; 2]) {
    let mut b = Builder::from((1, 2));
    b.point_format = las::point::Format::new(1).unwrap();
    b.transforms = Vector {
        x: Transform { scale: 1e-4, offset: offset[0] },
        y: Transform { scale: 1e-4, offset: offset[1] },
        z: Transform { scale: 1e-3, offset: 0.0 },
    };
    // GeoTIFF keys: ProjectedCSTypeGeoKey (3072) = epsg.
    let keys: [u16; 8] = [1, 1, 0, 1, 3072, 0, 1, epsg];
    b.vlrs.push(Vlr {
        user_id: "LASF_Projection".into(),
        record_id: 34735,
        description: "GeoKeyDirectoryTag".into(),
        data: keys.iter().flat_map(|k| k.to_le_bytes()).collect(),
    });
    let mut w = Writer::from_path(path, b.into_header().unwrap()).unwrap();
    for p in pts {
        w.write_point(p.clone()).unwrap();
    }
    w.close().unwrap();
}

fn unclassified(p: &Point) -> Point {
    Point { classification: las::point::Classification::Unclassified, ..p.clone() }
}

#[test]
fn an_unclassified_shifted_reprojected_tiled_pair_gives_the_same_volumes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Pre: unclassified, in UTM zone 19N.
    let to19 = talus_io::reproject::Transform::new(
        &talus_io::Crs::from_epsg(32620),
        &talus_io::Crs::from_epsg(32619),
    )
    .unwrap();
    let pre: Vec<Point> = read_points(&site_file("pre.laz"))
        .iter()
        .map(|p| {
            let (x, y, z) = to19.apply(p.x, p.y, p.z);
            Point { x, y, z, ..unclassified(p) }
        })
        .collect();
    let pre_path = d.join("pre_utm19.las");
    write_las(&pre_path, &pre, 32619, [1_345_000.0, 1_650_000.0]);
    // Post: unclassified, moved, in 3 x 3 tiles overlapping by 30 m.
    let rot =
        Rotation3::from_euler_angles(0.1f64.to_radians(), 0.1f64.to_radians(), 0.1f64.to_radians());
    let centre = Vector3::new(697_280.0, 1_636_240.0, 100.0);
    let post: Vec<Point> = read_points(&site_file("post.laz"))
        .iter()
        .map(|p| {
            let q =
                rot * (Vector3::new(p.x, p.y, p.z) - centre) + centre + Vector3::new(0.5, 0.3, 0.2);
            Point { x: q[0], y: q[1], z: q[2], ..unclassified(p) }
        })
        .collect();
    let tiles = d.join("tiles");
    std::fs::create_dir(&tiles).unwrap();
    for i in 0..3 {
        for j in 0..3 {
            let (xa, ya) =
                (697_000.0 + 560.0 * i as f64 / 3.0, 1_636_000.0 + 480.0 * j as f64 / 3.0);
            // The outer tiles take everything beyond the site's edges.
            let lo = |k: usize, a: f64| if k == 0 { f64::NEG_INFINITY } else { a - 15.0 };
            let hi = |k: usize, a: f64, w: f64| if k == 2 { f64::INFINITY } else { a + w + 15.0 };
            let (x0, x1) = (lo(i, xa), hi(i, xa, 560.0 / 3.0));
            let (y0, y1) = (lo(j, ya), hi(j, ya, 160.0));
            let inside: Vec<Point> = post
                .iter()
                .filter(|p| p.x >= x0 && p.x < x1 && p.y >= y0 && p.y < y1)
                .cloned()
                .collect();
            write_las(
                &tiles.join(format!("post_{i}{j}.las")),
                &inside,
                32620,
                [697_000.0, 1_636_000.0],
            );
        }
    }
    let site_text = format!(
        r#"[site]
name = "as-they-come"
epsg = 32620

[inputs]
pre = ["{pre}"]
post = ["{tiles}/post_*.las"]

[ingest]
reproject = true
ground = {{ method = "smrf" }}

[diff]
classes = [2]
dod = {{ cell_size = 5.0 }}
zones = {{ min_area = 200.0 }}
m3c2 = {{ enabled = false }}
c2c = {{ enabled = false }}
registration = {{ method = "point_to_plane" }}
"#,
        pre = pre_path.display(),
        tiles = tiles.display()
    );
    let site_path = d.join("site.toml");
    std::fs::write(&site_path, &site_text).unwrap();
    let site = talus_pipeline::Site::load(&site_path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(site.file.ingest.target_epsg, Some(32620));
    let out = d.join("runs");
    let layout = talus_pipeline::Layout::under(&out);
    let mut summaries = Vec::new();
    for stage in talus_pipeline::plan(&site, &layout).iter().take(4) {
        let done = talus_pipeline::runner::execute(&stage.job, &site, &NoProgress)
            .unwrap_or_else(|e| panic!("{}: {e}", stage.name.as_str()));
        println!("{}", done.summary);
        summaries.push(done.summary);
    }
    // The terrain is built from the post-event points as registered.
    assert!(summaries[3].contains("moved by the diff's co-registration"), "{}", summaries[3]);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("diff/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["registration"]["status"], "converged");

    // Reference: the shipped classified pair, as it is.
    let ground = |p: &Path| -> Vec<[f64; 3]> {
        read_points(p)
            .iter()
            .filter(|q| u8::from(q.classification) == 2)
            .map(|q| [q.x, q.y, q.z])
            .collect()
    };
    let mut cfg = site.file.diff.clone();
    cfg.registration.method = talus_diff::config::RegistrationMethod::None;
    let (a, b) = (site_file("pre.laz"), site_file("post.laz"));
    let r = talus_diff::diff_clouds(&cfg, ground(&a), ground(&b), (&a, &b), &NoProgress).unwrap();
    for kind in ["scar", "deposit"] {
        let zone = r.zones.iter().find(|z| z.kind.name() == kind).unwrap();
        let got = summary["zones"]
            .as_array()
            .unwrap()
            .iter()
            .find(|z| z["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {summary}"));
        let v = got["volume"]["volume"].as_f64().unwrap();
        println!(
            "{kind}: as they come {v:.0} m³, shipped pair {:.0} ± {:.0} m³",
            zone.volume.volume, zone.volume.error
        );
        assert!((v - zone.volume.volume).abs() <= zone.volume.error, "{kind}");
    }
}
