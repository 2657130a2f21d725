//! Contact detection benchmark: `detect()` on heap-like configurations of up to 10⁵ blocks,
//! against an O(N²) brute force (all pairs, AABB test, same narrow phase, one thread) up
//! to N = 10⁴.
//!
//! Run with `cargo bench -p talus-engine --bench contacts`.

use std::time::Instant;

use nalgebra::{UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use talus_engine::body::Block;
use talus_engine::geometry::broad;
use talus_engine::geometry::colliders::{Plane, Statics};
use talus_engine::geometry::detect::{DetectParams, DetectTimings, detect};
use talus_engine::geometry::narrow::{self, Obb};

/// A conical heap of n blocks (edges 0.7–1.1 m, small random tilts) on a jittered lattice
/// of pitch 0.9 m: neighbours touch or overlap slightly, as in a settled heap.
fn heap(n: usize, seed: u64) -> Vec<Block> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pitch: f64 = 0.9;
    // Cone of height H and base radius 2H holding n cells: n ≈ (π/3)(2H)²H / pitch³.
    let h = (n as f64 * pitch.powi(3) * 3.0 / (4.0 * std::f64::consts::PI)).cbrt() + pitch;
    let r = 2.0 * h;
    let m = (r / pitch).ceil() as i64;
    let mut out = Vec::with_capacity(n);
    'fill: for l in 0.. {
        let z = 0.45 + l as f64 * pitch;
        for j in -m..=m {
            for i in -m..=m {
                let (x, y) = (i as f64 * pitch, j as f64 * pitch);
                if (x * x + y * y).sqrt() > r * (1.0 - z / h).max(0.02) {
                    continue;
                }
                let pos =
                    Vector3::new(x, y, z) + Vector3::from_fn(|_, _| rng.random_range(-0.05..0.05));
                let rot = UnitQuaternion::from_euler_angles(
                    rng.random_range(-0.2..0.2),
                    rng.random_range(-0.2..0.2),
                    rng.random_range(-3.2..3.2),
                );
                let (a, b, c) = (
                    rng.random_range(0.7..1.1),
                    rng.random_range(0.7..1.1),
                    rng.random_range(0.7..1.1),
                );
                out.push(Block::new(out.len() as u32, a, b, c, 2650.0, pos, rot));
                if out.len() == n {
                    break 'fill;
                }
            }
        }
    }
    out
}

/// O(N²) reference: every pair's AABBs, the same narrow phase on overlapping ones.
fn brute(blocks: &[Block], tol: f64) -> usize {
    let aabbs: Vec<_> = blocks.iter().map(|b| broad::block_aabb(b, tol / 2.0)).collect();
    let obbs: Vec<Obb> = blocks.iter().map(Obb::of).collect();
    let mut touches = Vec::new();
    let mut count = 0;
    for i in 0..blocks.len() {
        for j in i + 1..blocks.len() {
            if aabbs[i].overlaps(&aabbs[j]) {
                touches.clear();
                narrow::box_box(&obbs[i], &obbs[j], tol, &mut touches);
                count += touches.len();
            }
        }
        touches.clear();
        narrow::box_plane(&blocks[i], &Plane::ground(0.0), tol, &mut touches);
        count += touches.len();
    }
    count
}

fn main() {
    let tol = 1e-3;
    let params = DetectParams { tolerance: tol };
    let statics = Statics { tin: None, planes: vec![Plane::ground(0.0)] };
    println!("threads: {}", rayon::current_num_threads());
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>8}",
        "N", "contacts", "broad ms", "narrow ms", "total ms", "brute ms", "µs/block", "speedup"
    );
    for &n in &[1_000usize, 3_000, 10_000, 30_000, 100_000] {
        let blocks = heap(n, 1);
        let reps = if n <= 10_000 { 5 } else { 2 };
        let mut best = (f64::INFINITY, DetectTimings::default(), 0usize);
        for _ in 0..reps {
            let mut t = DetectTimings::default();
            let t0 = Instant::now();
            let cs = detect(&blocks, &statics, &params, &mut t);
            let total = t0.elapsed().as_secs_f64();
            if total < best.0 {
                best = (total, t, cs.len());
            }
        }
        let (brute_ms, speedup) = if n <= 10_000 {
            let t0 = Instant::now();
            let c = brute(&blocks, tol);
            let tb = t0.elapsed().as_secs_f64();
            assert_eq!(c, best.2, "brute force and detect disagree on the contact count");
            (format!("{:.1}", tb * 1e3), format!("{:.1}", tb / best.0))
        } else {
            ("-".into(), "-".into())
        };
        println!(
            "{:>8} {:>10} {:>10.2} {:>10.2} {:>10.2} {:>12} {:>12.2} {:>8}",
            n,
            best.2,
            best.1.broad * 1e3,
            best.1.narrow * 1e3,
            best.0 * 1e3,
            brute_ms,
            best.0 * 1e6 / n as f64,
            speedup
        );
    }
}
