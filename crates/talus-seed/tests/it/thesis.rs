//! The thesis's size_N/position_N files: import, export, round trip.

use std::path::PathBuf;
use talus_seed::thesis;

/// The thesis's input files shipped in the repository (`data/thesis-granular/`).
fn thesis_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/thesis-granular");
    let probe = dir.join("size_100.data");
    assert!(
        probe.exists(),
        "{} is missing: the thesis inputs ship in the repository",
        probe.display()
    );
    dir
}

fn parse(text: &str) -> Vec<[f64; 3]> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<f64> = l.split_whitespace().map(|t| t.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

#[test]
fn thesis_files_round_trip() {
    let dir = thesis_dir();
    let blocks = thesis::read(&dir, 100).unwrap();
    assert_eq!(blocks.len(), 100);
    // Through a blocks Parquet file and back.
    let tmp = tempfile::tempdir().unwrap();
    let pq = tmp.path().join("blocks.parquet");
    talus_seed::write_blocks(&pq, &blocks, 2700.0, talus_io::Provenance::new("seed", "0", &0))
        .unwrap();
    let (back, rho) = talus_seed::read_blocks(&pq).unwrap();
    assert!(rho.iter().all(|r| *r == 2700.0));
    let (sp, pp) = thesis::write(tmp.path(), &back).unwrap();
    let (os, op) = thesis::paths(&dir, 100);
    let (orig_s, orig_p) = (
        parse(&std::fs::read_to_string(os).unwrap()),
        parse(&std::fs::read_to_string(op).unwrap()),
    );
    let (new_s, new_p) = (
        parse(&std::fs::read_to_string(sp).unwrap()),
        parse(&std::fs::read_to_string(pp).unwrap()),
    );
    // Sizes, positions, velocities, angular velocities: bit for bit.
    assert_eq!(orig_s, new_s);
    let mut worst_axis: f64 = 0.0;
    for (k, (o, n)) in orig_p.iter().zip(&new_p).enumerate() {
        if k % 6 < 3 {
            assert_eq!(o, n, "line {}", k + 1);
        } else {
            for c in 0..3 {
                worst_axis = worst_axis.max((o[c] - n[c]).abs());
            }
        }
    }
    println!("axes: largest difference {worst_axis:.2e} (file printed to 12 digits)");
    assert!(worst_axis < 2e-12, "{worst_axis}");
    // A second cycle reproduces the first one's quaternion to rounding.
    let again = thesis::read(tmp.path(), 100).unwrap();
    for (a, b) in again.iter().zip(&back) {
        assert!(a.orientation.angle_to(&b.orientation) < 1e-11);
        assert_eq!(
            (a.centre, a.size, a.velocity, a.angular_velocity),
            (b.centre, b.size, b.velocity, b.angular_velocity)
        );
    }
}

#[test]
fn malformed_thesis_files_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("size_1.data"), "1 2 3\n").unwrap();
    std::fs::write(
        tmp.path().join("position_1.data"),
        "0 0 0\n0 0 0\n0 0 0\n1 0 0\n0 1 0\n0 0 x\n",
    )
    .unwrap();
    let e = thesis::read(tmp.path(), 1).unwrap_err().to_string();
    assert!(e.contains("position_1.data") && e.contains("line 6"), "{e}");
    std::fs::write(
        tmp.path().join("position_1.data"),
        "0 0 0\n0 0 0\n0 0 0\n1 0 0\n0 1 0\n0 0 -1\n",
    )
    .unwrap();
    let e = thesis::read(tmp.path(), 1).unwrap_err().to_string();
    assert!(e.contains("right-handed"), "{e}");
    let e = thesis::read(tmp.path(), 2).unwrap_err().to_string();
    assert!(e.contains("size_2.data"), "{e}");
}
