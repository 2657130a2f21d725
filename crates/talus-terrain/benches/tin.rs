//! TIN construction at two resolutions: a thesis-sized mesh (2371 vertices) by greedy
//! insertion and grid thinning, and a fine mesh (10⁶+ triangles) of every point.
//! Prints wall times, misfits and ratios against the full Delaunay triangulation of the
//! same points measured in the same run.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;
use talus_io::NoProgress;
use talus_terrain::{Config, Simplify, build};

fn main() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let n = 600_000;
    let pts: Vec<[f64; 3]> = (0..n)
        .map(|_| {
            let (x, y) = (rng.random_range(0.0f64..1000.0), rng.random_range(0.0f64..800.0));
            [x, y, 300.0 + 40.0 * (x / 80.0).sin() * (y / 60.0).cos() + 0.2 * x]
        })
        .collect();
    let cases = [
        ("full (every point)", Config::default()),
        (
            "greedy, 2371 vertices",
            Config { simplify: Simplify::Greedy, max_vertices: Some(2371), ..Config::default() },
        ),
        (
            "greedy, max error 0.1 m",
            Config { simplify: Simplify::Greedy, max_error: Some(0.1), ..Config::default() },
        ),
        (
            "grid, 2371 vertices",
            Config { simplify: Simplify::Grid, max_vertices: Some(2371), ..Config::default() },
        ),
    ];
    println!(
        "{n} points\n{:<26} {:>9} {:>10} {:>9} {:>10} {:>10} {:>8}",
        "case", "vertices", "triangles", "time s", "max err m", "rms err m", "ratio"
    );
    let mut base = None;
    for (name, config) in cases {
        let t = Instant::now();
        let (s, _, _) = build(&config, pts.clone(), None, &NoProgress).expect("tin");
        let dt = t.elapsed().as_secs_f64();
        let b = *base.get_or_insert(dt);
        assert!(s.tin.is_valid());
        println!(
            "{name:<26} {:>9} {:>10} {:>9.3} {:>10.3} {:>10.4} {:>8.2}",
            s.tin.vertices.len(),
            s.tin.triangles.len(),
            dt,
            s.misfit.max_error,
            s.misfit.rms_error,
            dt / b
        );
    }
}
