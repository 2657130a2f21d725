//! Ingest throughput on a generated LAS and LAZ of >= 10 M points (LAS 1.4, point format
//! 6), against laspy + lazrs reading the same files into numpy in the same run.
//!
//! Figures (million points per second, best of 3; in brackets the CPU cores the run kept
//! busy on average, user + system CPU time over wall time):
//! * `raw decode`: the `las` reader alone fills point records chunk by chunk (LAZ: laz-rs's
//!   parallel decompressor, the one laspy's LazrsParallel backend runs), no conversion —
//!   the floor for any reader built on laz-rs;
//! * `talus decode`: the library decodes, converts to Arrow record batches and drops them
//!   (what laspy does: file to columnar arrays in memory);
//! * `talus ingest`: the full stage, file to Parquet (SHA-256 of the input, Snappy
//!   Parquet written atomically);
//! * `laspy`: `laspy.read` with the LazrsParallel backend, then x, y, z scaled to float64
//!   arrays (its CPU time from `resource.getrusage`).
//!
//! The last column is the peak RSS of a fresh process that only runs the ingest of the
//! file (default chunk of 1 M points, so the 10 M-point file is ten chunks).
//!
//! `TALUS_BENCH_POINTS` sets the point count (default 10 000 000); `TALUS_BENCH_KEEP=DIR`
//! writes the generated files there and keeps them (e.g. to measure memory with the CLI).

use las::point::{Classification, Format};
use las::{Builder, Point, PointDataBuilder, Transform, Vector, Version, Writer};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use talus_ingest::{Config, Survey, run};
use talus_io::NoProgress;

fn generate(path: &Path, n: usize) {
    let mut b = Builder::from(Version::new(1, 4));
    b.point_format = Format::new(6).unwrap();
    let t = |offset| Transform { scale: 0.001, offset };
    b.transforms = Vector { x: t(700_000.0), y: t(1_630_000.0), z: t(0.0) };
    let header = b.into_header().unwrap();
    let mut w = Writer::from_path(path, header).unwrap();
    // Scan lines over a rough slope: x along the line, y across, z a smooth surface with
    // centimetric noise; intensity and GPS time like an airborne sensor's.
    let per_line = 2_000usize;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let chunk = 1_000_000;
    let mut done = 0;
    while done < n {
        let m = chunk.min(n - done);
        let pts: Vec<Point> = (done..done + m)
            .map(|i| {
                let (line, k) = (i / per_line, i % per_line);
                let x = 700_000.0 + k as f64 * 0.25 + (rnd() % 100) as f64 * 0.001;
                let y = 1_630_000.0 + line as f64 * 0.25 + (rnd() % 100) as f64 * 0.001;
                let z = 50.0
                    + 0.3 * (x - 700_000.0)
                    + 5.0 * ((y - 1_630_000.0) / 40.0).sin()
                    + (rnd() % 50) as f64 * 0.001;
                Point {
                    x,
                    y,
                    z,
                    intensity: 200 + (rnd() % 400) as u16,
                    return_number: 1,
                    number_of_returns: 1,
                    classification: Classification::new(if rnd() % 3 == 0 { 2 } else { 1 })
                        .unwrap(),
                    scan_angle: ((k as f32 / per_line as f32) - 0.5) * 30.0,
                    point_source_id: 7,
                    gps_time: Some(3.0e8 + i as f64 * 1.0e-5),
                    ..Default::default()
                }
            })
            .collect();
        let pd = PointDataBuilder::new().for_header(w.header()).build_from_points(pts).unwrap();
        w.write_points(&pd).unwrap();
        done += m;
    }
    w.close().unwrap();
}

/// User + system CPU time of this process (all threads), seconds; /proc/self/stat counts
/// in clock ticks of 1/100 s (Linux's USER_HZ).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    // After the command name: state, then fields 4.. ; utime and stime are fields 14, 15.
    match (f.get(10), f.get(11)) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

/// A timed figure: best wall time of the runs and the cores kept busy in that run.
struct Timing {
    secs: f64,
    cores: f64,
}

fn best_of<F: FnMut() -> u64>(runs: usize, mut f: F) -> (Timing, u64) {
    let mut best = Timing { secs: f64::INFINITY, cores: f64::NAN };
    let mut n = 0;
    for _ in 0..runs {
        let (t, c) = (Instant::now(), cpu_seconds());
        n = f();
        let secs = t.elapsed().as_secs_f64();
        if secs < best.secs {
            best = Timing { secs, cores: (cpu_seconds() - c) / secs };
        }
    }
    (best, n)
}

/// The `las` reader alone: every record of `path` into a reused buffer, `chunk` at a time.
fn raw_decode(path: &Path, chunk: u64) -> u64 {
    let mut reader = las::Reader::from_path(path).unwrap();
    let mut pd = PointDataBuilder::new().for_header(reader.header()).build();
    let mut n = 0;
    loop {
        let got = reader.fill_points(chunk, &mut pd).unwrap();
        if got == 0 {
            return n;
        }
        n += got;
    }
}

const LASPY: &str = r#"
import sys, time
import numpy as np
import laspy
path = sys.argv[1]
import resource
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
best, cores = float("inf"), float("nan")
for _ in range(3):
    t, c0 = time.perf_counter(), cpu()
    las = laspy.read(path, laz_backend=laspy.LazBackend.LazrsParallel)
    x = np.asarray(las.x); y = np.asarray(las.y); z = np.asarray(las.z)
    c = np.asarray(las.classification); i = np.asarray(las.intensity); g = np.asarray(las.gps_time)
    wall = time.perf_counter() - t
    if wall < best:
        best, cores = wall, (cpu() - c0) / wall
    n = len(x)
    del las, x, y, z, c, i, g
print(best, n, cores)
"#;

/// Why laspy cannot run here, if it cannot.
fn laspy_missing() -> Option<String> {
    match Command::new("python3").args(["-c", "import laspy, lazrs, numpy"]).output() {
        Err(e) => Some(format!("python3 is not runnable ({e})")),
        Ok(o) if !o.status.success() => Some(format!(
            "laspy, lazrs or numpy is not importable ({}); `pip install laspy lazrs` to compare",
            String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("").trim()
        )),
        Ok(_) => None,
    }
}

fn laspy(path: &Path) -> Result<(Timing, u64), String> {
    let o = Command::new("python3")
        .args(["-c", LASPY, path.to_str().unwrap()])
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    let s = String::from_utf8_lossy(&o.stdout);
    let mut it = s.split_whitespace();
    let secs: f64 = it.next().and_then(|v| v.parse().ok()).ok_or("no timing")?;
    let n: u64 = it.next().and_then(|v| v.parse().ok()).ok_or("no count")?;
    let cores: f64 = it.next().and_then(|v| v.parse().ok()).ok_or("no CPU time")?;
    Ok((Timing { secs, cores }, n))
}

/// Peak resident memory of this process (VmHWM), MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Peak RSS of a fresh process that only ingests `path` (this binary re-run with
/// `TALUS_BENCH_RSS_CHILD`), MB.
fn child_peak_rss(path: &Path, out: &Path) -> Option<f64> {
    let o = Command::new(std::env::current_exe().ok()?)
        .env("TALUS_BENCH_RSS_CHILD", path)
        .env("TALUS_BENCH_RSS_OUT", out)
        .output()
        .ok()?;
    String::from_utf8_lossy(&o.stdout).lines().find_map(|l| l.strip_prefix("RSS ")?.parse().ok())
}

fn main() {
    if let Some(input) = std::env::var_os("TALUS_BENCH_RSS_CHILD") {
        let out = PathBuf::from(std::env::var_os("TALUS_BENCH_RSS_OUT").unwrap());
        run(&Config::default(), &[PathBuf::from(input)], &out, &NoProgress).unwrap();
        println!("RSS {}", peak_rss_mb());
        return;
    }
    let n: usize =
        std::env::var("TALUS_BENCH_POINTS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000_000);
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = std::env::var_os("TALUS_BENCH_KEEP")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "ingest benchmark: {n} points, LAS 1.4 point format 6, {} rayon threads",
        rayon::current_num_threads()
    );
    let config = Config::default();
    let missing = laspy_missing();
    if let Some(reason) = &missing {
        println!("laspy skipped: {reason}");
    }
    println!(
        "| file | size MB | raw decode Mpts/s | talus decode Mpts/s | talus ingest (to Parquet) Mpts/s | laspy+lazrs Mpts/s | raw decode / laspy | decode / laspy | ingest / laspy | ingest peak RSS MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for ext in ["las", "laz"] {
        let path = dir.join(format!("bench.{ext}"));
        let t = Instant::now();
        generate(&path, n);
        let mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
        eprintln!(
            "generated {} ({mb:.0} MB) in {:.1} s",
            path.display(),
            t.elapsed().as_secs_f64()
        );
        let paths = [path.clone()];
        let (raw, got) = best_of(3, || raw_decode(&path, config.chunk_points as u64));
        assert_eq!(got as usize, n);
        let (decode, got) = best_of(3, || {
            let survey = Survey::open(&config, &paths).unwrap();
            let mut rows = 0u64;
            survey
                .batches(&config, &NoProgress, |b| {
                    rows += b.num_rows() as u64;
                    Ok(())
                })
                .unwrap();
            rows
        });
        assert_eq!(got as usize, n);
        let out = dir.join(format!("bench-{ext}.parquet"));
        let (ingest, got) =
            best_of(3, || run(&config, &paths, &out, &NoProgress).unwrap().points_written);
        assert_eq!(got as usize, n);
        let parquet_mb = std::fs::metadata(&out).unwrap().len() as f64 / 1e6;
        let fig = |t: &Timing| format!("{:.1} ({:.2} cores)", n as f64 / t.secs / 1e6, t.cores);
        let ratio = |base: &Timing, t: &Timing| format!("{:.2}x", base.secs / t.secs);
        let (lp, ratios) = match missing.as_ref().map_or_else(|| laspy(&path), |r| Err(r.clone())) {
            Ok((base, m)) if m as usize == n => {
                (fig(&base), [ratio(&base, &raw), ratio(&base, &decode), ratio(&base, &ingest)])
            }
            Ok((_, m)) => (format!("read {m} points?"), ["-".into(), "-".into(), "-".into()]),
            Err(reason) => {
                if missing.is_none() {
                    println!("laspy failed on {}: {reason}", path.display());
                }
                ("skipped".into(), ["-".into(), "-".into(), "-".into()])
            }
        };
        let rss = child_peak_rss(&path, &out).map_or("-".into(), |m| format!("{m:.0}"));
        println!(
            "| {ext} | {mb:.0} | {} | {} | {} | {lp} | {} | {} | {} | {rss} |",
            fig(&raw),
            fig(&decode),
            fig(&ingest),
            ratios[0],
            ratios[1],
            ratios[2]
        );
        eprintln!("{ext}: Parquet output {parquet_mb:.1} MB");
    }
}
