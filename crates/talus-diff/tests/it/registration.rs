//! Co-registration on the committed synthetic Piton Marcel site: the post-event survey is
//! moved by a known rigid transform (0.5, 0.3, 0.2 m; 0.1° about each axis, about the
//! site's centre); point-to-plane ICP on stable ground takes it back within 2 cm and
//! 0.005°, and the zone volumes come back within their error bars of the unmoved run,
//! while without registration the moved survey's volumes are off by more than that.
#![allow(clippy::field_reassign_with_default)] // test configs read best as edits of the default

use nalgebra::{Matrix3, Rotation3, Vector3};
use std::path::{Path, PathBuf};
use talus_diff::config::RegistrationMethod;
use talus_diff::{Config, RegistrationStatus, ZoneKind};
use talus_io::NoProgress;

fn site_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/piton-marcel")
}

fn ground(path: &Path) -> Vec<[f64; 3]> {
    let (x, y, z, c) = crate::synth_site::read_las(path);
    (0..x.len()).filter(|&i| c[i] == 2).map(|i| [x[i], y[i], z[i]]).collect()
}

/// The `[diff]` of pipelines/piton-marcel.toml, without M3C2 and C2C.
fn site_config() -> Config {
    let mut c = Config::default();
    c.dod.cell_size = 5.0;
    c.zones.min_area = 200.0;
    c.m3c2.enabled = false;
    c.c2c.enabled = false;
    c
}

fn volumes(r: &talus_diff::DiffResult) -> [(f64, f64); 2] {
    [ZoneKind::Scar, ZoneKind::Deposit].map(|k| {
        let z = r.zones.iter().find(|z| z.kind == k).expect("zone");
        (z.volume.volume, z.volume.error)
    })
}

#[test]
fn registration_undoes_a_known_rigid_motion() {
    let dir = site_dir();
    let (pre_p, post_p) = (dir.join("pre.laz"), dir.join("post.laz"));
    let (pre, post) = (ground(&pre_p), ground(&post_p));
    let centre = Vector3::new(697_280.0, 1_636_240.0, 100.0);
    let rot =
        Rotation3::from_euler_angles(0.1f64.to_radians(), 0.1f64.to_radians(), 0.1f64.to_radians())
            .into_inner();
    let shift = Vector3::new(0.5, 0.3, 0.2);
    let motion = |p: &[f64; 3]| -> [f64; 3] {
        let q = rot * (Vector3::from(*p) - centre) + centre + shift;
        [q[0], q[1], q[2]]
    };
    let moved: Vec<[f64; 3]> = post.iter().map(motion).collect();

    let plain = site_config();
    let mut reg = site_config();
    reg.registration.method = RegistrationMethod::PointToPlane;
    if let Ok(v) = std::env::var("SP") {
        reg.registration.sample_spacing = v.parse().unwrap();
    }
    if let Ok(v) = std::env::var("RO") {
        reg.registration.stable_rounds = v.parse().unwrap();
    }
    if let Ok(v) = std::env::var("MD") {
        reg.registration.max_distance = v.parse().unwrap();
    }
    let names = (pre_p.as_path(), post_p.as_path());
    let run = |cfg: &Config, post: Vec<[f64; 3]>| {
        talus_diff::diff_clouds(cfg, pre.clone(), post, names, &NoProgress).unwrap()
    };
    let unmoved_plain = run(&plain, post.clone());
    let unmoved_reg = run(&reg, post.clone());
    let moved_reg = run(&reg, moved.clone());
    let moved_plain = run(&plain, moved);

    let (ru, rm) = (
        unmoved_reg.summary.registration.clone().unwrap(),
        moved_reg.summary.registration.clone().unwrap(),
    );
    println!("unmoved: {ru:?}\nmoved: {rm:?}");
    assert_eq!(ru.status, RegistrationStatus::Converged);
    assert_eq!(rm.status, RegistrationStatus::Converged);
    // The shipped post survey is itself shifted by (0.10, -0.10, 0.02) m (its synth
    // misregistration): registration finds the opposite shift.
    let tu = Vector3::from(ru.translation);
    println!("shipped misregistration recovered as {:.3?}", tu);
    assert!((tu - Vector3::new(-0.10, 0.10, -0.02)).norm() < 0.02, "{tu:?}");

    // The registered moved survey lands where the registered unmoved one does: compare
    // the two transforms on a grid of points over the site (cliff foot to top).
    let mut worst: f64 = 0.0;
    for i in 0..=10 {
        for j in 0..=10 {
            for z in [20.0, 100.0, 180.0] {
                let p = [697_000.0 + 56.0 * i as f64, 1_636_000.0 + 48.0 * j as f64, z];
                let a = Vector3::from(rm.apply(&motion(&p)));
                let b = Vector3::from(ru.apply(&p));
                worst = worst.max((a - b).norm());
                if i == 5 && j == 5 {
                    println!("centre diff {:.4?}", a - b);
                }
            }
        }
    }
    // The rotation left over: R_m R_motion R_u^T.
    let rmat = |r: &talus_diff::Registration| Matrix3::from_fn(|i, j| r.rotation[i][j]);
    let left = rmat(&rm) * rot * rmat(&ru).transpose();
    let angle = Rotation3::from_matrix_unchecked(left).angle().to_degrees();
    println!(
        "after registration: worst displacement difference {worst:.4} m over the site, residual rotation {angle:.5}°"
    );
    assert!(worst <= 0.02, "{worst} m");
    assert!(angle <= 0.005, "{angle}°");

    let (vu, vr, vp) = (volumes(&unmoved_plain), volumes(&moved_reg), volumes(&moved_plain));
    for (k, name) in ["scar", "deposit"].iter().enumerate() {
        println!(
            "{name}: unmoved {:.0} ± {:.0} m³; moved and registered {:.0} ± {:.0} m³; moved, not registered {:.0} ± {:.0} m³",
            vu[k].0, vu[k].1, vr[k].0, vr[k].1, vp[k].0, vp[k].1
        );
        assert!(
            (vr[k].0 - vu[k].0).abs() <= vu[k].1,
            "{name}: registered {:?} vs {:?}",
            vr[k],
            vu[k]
        );
    }
    // What registration prevents: the moved survey, differenced as it is, puts the scar
    // outside the unmoved run's error bar.
    let off = (0..2).map(|k| (vp[k].0 - vu[k].0).abs() / vu[k].1).fold(0.0, f64::max);
    println!("without registration the worst zone is off by {off:.1} sigma");
    assert!(off > 1.0, "{off}");
}

#[test]
fn registration_is_deterministic_and_recorded() {
    let dir = site_dir();
    let (pre_p, post_p) = (dir.join("pre.laz"), dir.join("post.laz"));
    let mut cfg = site_config();
    cfg.registration.method = RegistrationMethod::PointToPlane;
    let out = tempfile::tempdir().unwrap();
    let (pre_pq, post_pq) = (out.path().join("pre.parquet"), out.path().join("post.parquet"));
    for (las_path, pq) in [(&pre_p, &pre_pq), (&post_p, &post_pq)] {
        let crs = Some(talus_io::Crs::from_epsg(32620));
        crate::dod::write_points(pq, &ground(las_path), 2, crs);
    }
    let (a, b) = (out.path().join("a"), out.path().join("b"));
    let s1 = talus_diff::run(&cfg, &pre_pq, &post_pq, &a, &NoProgress).unwrap();
    let s2 = talus_diff::run(&cfg, &pre_pq, &post_pq, &b, &NoProgress).unwrap();
    assert_eq!(
        serde_json::to_string(&s1.registration).unwrap(),
        serde_json::to_string(&s2.registration).unwrap()
    );
    for f in ["dod.parquet", "zones.parquet", "summary.json"] {
        assert_eq!(std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap(), "{f}");
    }
    let meta = talus_io::read_metadata(&a.join("dod.parquet")).unwrap();
    let reg = meta.get(talus_schema::diff::REGISTRATION_KEY).expect("registration recorded");
    let v: serde_json::Value = serde_json::from_str(reg).unwrap();
    assert_eq!(v["status"], "converged");
    assert_eq!(v["matrix"].as_array().unwrap().len(), 4);
    assert!(s1.to_string().contains("registration (Converged)"), "{s1}");
}
