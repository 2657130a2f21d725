//! Throughput of `talus synth`: sampling alone, then sampling + LAS, then + LAZ
//! (ratios against sampling alone, measured in the same run). `TALUS_SYNTH_BENCH_SCALE`
//! sets the density scale (default 0.5; 10 gives the ~52 M point benchmark site).

use std::time::Instant;
use talus_io::NoProgress;
use talus_synth::survey::{flight_line, line_count};
use talus_synth::{Config, Epoch, Site, lasout};

fn main() {
    let scale: f64 =
        std::env::var("TALUS_SYNTH_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(0.5);
    let config = Config { scale, ..Config::default() };
    let t = Instant::now();
    let site = Site::new(&config).expect("default site");
    let solve = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut n = 0usize;
    for line in 0..line_count(&site, &config.post) {
        n += flight_line(&site, &config.post, Epoch::Post, line).len();
    }
    let sample = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let (las, _) = lasout::survey_bytes(&site, Epoch::Post, false, &NoProgress).expect("las");
    let las_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (laz, stats) = lasout::survey_bytes(&site, Epoch::Post, true, &NoProgress).expect("laz");
    let laz_s = t.elapsed().as_secs_f64();
    assert_eq!(stats.points as usize, n);

    println!(
        "talus-synth, post-event survey at scale {scale}: {n} points (site solved in {solve:.2} s)"
    );
    println!(
        "{:<34} {:>10} {:>14} {:>10} {:>12}",
        "stage", "time (s)", "points/s", "ratio", "bytes/point"
    );
    let row = |name: &str, s: f64, bytes: Option<usize>| {
        println!(
            "{name:<34} {s:>10.3} {:>14.0} {:>10.2} {:>12}",
            n as f64 / s,
            s / sample,
            bytes.map(|b| format!("{:.2}", b as f64 / n as f64)).unwrap_or_else(|| "-".into())
        );
    };
    row("sampling, single thread (baseline)", sample, None);
    row("sampling (threads) + LAS 1.4", las_s, Some(las.len()));
    row("sampling (threads) + LAZ", laz_s, Some(laz.len()));
}
