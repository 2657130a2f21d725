//! M3C2 throughput: Talus against py4dgeo on the same input, in the same run.
//!
//! Two synthetic surveys of a rough 1 km x 1 km slope (`TALUS_BENCH_POINTS` points each,
//! default 10 M, ~10 points/m^2), the post survey with a 1.5 m deep scar; 1 M core points
//! (every 10th pre point); normal radius 1 m, cylinder radius 0.5 m, half-length 2 m.
//! Both implementations use every core (rayon / OpenMP). Timed: normals + distances,
//! and the search structures apart (talus: z-sorted columns of both clouds; py4dgeo:
//! its k-d trees). py4dgeo runs when importable, on the same points passed through
//! `.npy` files, and its distances are compared with ours.
//!
//! `cargo bench -p talus-diff --bench m3c2`

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;
use talus_diff::config::M3c2Config;
use talus_diff::m3c2::{Cloud, m3c2};

fn survey(n: usize, seed: u64, scar: bool) -> Vec<[f64; 3]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let noise = Normal::new(0.0, 0.03).unwrap();
    (0..n)
        .map(|_| {
            let (x, y) = (rng.random::<f64>() * 1000.0, rng.random::<f64>() * 1000.0);
            let mut z = 200.0
                + 0.3 * x
                + 0.05 * y
                + 4.0 * (x / 37.0).sin() * (y / 53.0).cos()
                + noise.sample(&mut rng);
            if scar && (300.0..600.0).contains(&x) && (200.0..500.0).contains(&y) {
                z -= 1.5;
            }
            [x + OFFSET[0], y + OFFSET[1], z]
        })
        .collect()
}

/// The surveys' offset (UTM-like eastings and northings), taken off before py4dgeo reads
/// them ([`write_npy`]).
const OFFSET: [f64; 3] = [650_000.0, 1_620_000.0, 0.0];

/// `pts` less [`OFFSET`], as a NumPy array of shape (n, 3).
fn write_npy(path: &Path, pts: &[[f64; 3]]) {
    let mut header =
        format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, 3), }}", pts.len());
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(b"\x93NUMPY\x01\x00").unwrap();
    f.write_all(&(header.len() as u16).to_le_bytes()).unwrap();
    f.write_all(header.as_bytes()).unwrap();
    for p in pts {
        for (v, o) in p.iter().zip(OFFSET) {
            f.write_all(&(v - o).to_le_bytes()).unwrap();
        }
    }
}

fn read_npy_f64(path: &Path) -> Vec<f64> {
    let b = std::fs::read(path).unwrap();
    let hl = u16::from_le_bytes([b[8], b[9]]) as usize;
    b[10 + hl..].chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
}

const PY: &str = r#"
import sys, time, numpy as np, py4dgeo
d = sys.argv[1]
pre, post, cores = (np.load(f"{d}/{n}.npy") for n in ("pre", "post", "cores"))
t0 = time.perf_counter()
e1, e2 = py4dgeo.Epoch(pre), py4dgeo.Epoch(post)
e1.build_kdtree(); e2.build_kdtree()
t1 = time.perf_counter()
m = py4dgeo.M3C2(epochs=(e1, e2), corepoints=cores, normal_radii=(1.0,), cyl_radius=0.5,
                 max_distance=2.0, registration_error=0.0, orientation_vector=np.array([0., 0., 1.]))
dist, unc = m.run()
t2 = time.perf_counter()
np.save(f"{d}/py_dist.npy", dist)
print(f"VERSION {py4dgeo.__version__}")
print(f"RESULT {t1 - t0} {t2 - t1}")
"#;

fn main() {
    let n: usize =
        std::env::var("TALUS_BENCH_POINTS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000_000);
    let threads = rayon::current_num_threads();
    println!("M3C2 benchmark: {n} points per survey, {threads} threads");
    let t = Instant::now();
    let pre = survey(n, 1, false);
    let post = survey(n, 2, true);
    let cores: Vec<[f64; 3]> = pre.iter().step_by(10).copied().collect();
    println!("  generated in {:.1} s; {} core points", t.elapsed().as_secs_f64(), cores.len());

    let t = Instant::now();
    let (c1, c2) = rayon::join(|| Cloud::new(pre.clone()), || Cloud::new(post.clone()));
    let build = t.elapsed().as_secs_f64();
    let cfg = M3c2Config {
        normal_radii: vec![1.0],
        cylinder_radius: 0.5,
        max_depth: 2.0,
        registration_error: 0.0,
        min_points: 2,
        ..M3c2Config::default()
    };
    let t = Instant::now();
    let rows = m3c2(&c1, &c2, &cores, &cfg);
    let ours = t.elapsed().as_secs_f64();
    let valid = rows.iter().filter(|r| r.flag == 0).count();
    let sig = rows.iter().filter(|r| r.significant).count();
    println!("  talus: {valid} valid, {sig} significant");

    println!();
    println!(
        "| implementation | index (s) | M3C2 (s) | core points/s | index + M3C2 (s) | speed-up of talus, M3C2 | speed-up of talus, index + M3C2 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    println!(
        "| talus-diff (column index, rayon) | {build:.2} | {ours:.2} | {:.0} | {:.2} | - | - |",
        cores.len() as f64 / ours,
        build + ours
    );

    let probe = Command::new("python3").args(["-c", "import py4dgeo, numpy"]).output();
    if !matches!(&probe, Ok(o) if o.status.success()) {
        println!("| py4dgeo | - | - | - | - | skipped: py4dgeo not importable | - |");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_npy(&dir.path().join("pre.npy"), &pre);
    write_npy(&dir.path().join("post.npy"), &post);
    write_npy(&dir.path().join("cores.npy"), &cores);
    drop((pre, post));
    let out = Command::new("python3")
        .current_dir(dir.path())
        .args(["-c", PY])
        .arg(dir.path())
        .output()
        .unwrap();
    if !out.status.success() {
        println!(
            "| py4dgeo | - | - | - | - | failed: {} | - |",
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        );
        return;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // py4dgeo logs to stdout too: take the marked line.
    let line = text.lines().find(|l| l.starts_with("RESULT ")).unwrap_or("RESULT NaN NaN");
    let v: Vec<f64> = line.split_whitespace().skip(1).filter_map(|s| s.parse().ok()).collect();
    let (py_build, py_run) = (v[0], v[1]);
    println!(
        "| py4dgeo {} (C++, OpenMP) | {py_build:.2} | {py_run:.2} | {:.0} | {:.2} | {:.2}x | {:.2}x |",
        text.lines().find(|l| l.starts_with("VERSION ")).map_or("", |l| &l[8..]),
        cores.len() as f64 / py_run,
        py_build + py_run,
        py_run / ours,
        (py_build + py_run) / (build + ours)
    );
    let theirs = read_npy_f64(&dir.path().join("py_dist.npy"));
    // Agreement where both define a distance. Not a correctness check. py4dgeo is given the
    // clouds less OFFSET: at the UTM-like coordinates themselves its own distances move
    // (py4dgeo 1.2.0, 400,000 points a survey of this kind, shifted by OFFSET against not:
    // half of the core points' distances differ by more than 1e-6 relative, by up to 6 cm,
    // median 3e-5 m). Even so its distances differ from ours by millimetres at most core
    // points, as they differ from a brute-force numpy evaluation of the M3C2 definition
    // (checked on a 2 M-point version: same normals); the cause is not known. Our searches
    // equal a brute-force scan (unit test `column_searches_match_brute_force`) and the
    // py4dgeo fixture test agrees to 1e-6.
    let (mut both, mut agree) = (0usize, 0usize);
    let mut diffs = Vec::new();
    for (r, d) in rows.iter().zip(&theirs) {
        if r.flag == 0 && d.is_finite() {
            both += 1;
            diffs.push((r.distance - d).abs());
            agree +=
                usize::from((r.distance - d).abs() <= 1e-6 * r.distance.abs().max(d.abs()) + 1e-9);
        }
    }
    println!();
    diffs.sort_by(f64::total_cmp);
    let at =
        |q: f64| diffs.get(((diffs.len() as f64 - 1.0) * q) as usize).copied().unwrap_or(f64::NAN);
    println!(
        "agreement: {agree} of {both} core points defined in both agree within 1e-6 relative; \
         |difference| median {:.2e} m, 99th percentile {:.2e} m, largest {:.2e} m (not a \
         correctness check: on such input py4dgeo's distances also differ from a brute-force \
         evaluation of M3C2; see this bench's source)",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
