#![allow(dead_code)]
//! Shared test helpers (also compiled into `benches/heap.rs`): generated layered heaps, and
//! the thesis's granular-heap inputs (`data/thesis-granular/` in the repository): N blocks
//! thrown toward the origin over the ground z = 0, Δt = 0.001 s, κ = 0.5 × total mass / N
//! (the thesis code's choice), density 5000 kg/m³, g = 9.80665 m/s² (its constants).
//! Reader: `talus_seed::thesis::read`, the one `talus seed --thesis-dir` uses (3 edge
//! lengths per line, and 6 lines per block: position, velocity, angular velocity, axes
//! i, j, k).

use nalgebra::{UnitQuaternion, Vector3};
use std::path::{Path, PathBuf};
use talus_engine::body::Block;
use talus_engine::config::{Config, Kappa, PlaneConfig, SolverConfig};

/// The thesis's input files, shipped in the repository (`data/thesis-granular/`); a test
/// that needs them fails, naming the file, when one is missing.
pub fn thesis_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/thesis-granular");
    let probe = dir.join("parameter.data");
    assert!(
        probe.exists(),
        "{} is missing: the thesis inputs ship in the repository",
        probe.display()
    );
    dir
}

/// The thesis heap of `n` blocks (density 5000 kg/m³, ids 0..n), read by seed's reader.
pub fn thesis_blocks(dir: &Path, n: usize) -> Vec<Block> {
    let read = talus_seed::thesis::read(dir, n).unwrap_or_else(|e| panic!("{e}"));
    read.iter()
        .enumerate()
        .map(|(k, s)| {
            let [a, b, c] = s.size;
            let mut blk =
                Block::new(k as u32, a, b, c, 5000.0, Vector3::from(s.centre), s.orientation);
            blk.vel = Vector3::from(s.velocity);
            blk.omega = Vector3::from(s.angular_velocity);
            blk
        })
        .collect()
}

pub fn heap_config(steps: u64, solver: SolverConfig) -> Config {
    Config {
        dt: 1e-3,
        steps: Some(steps),
        gravity: 9.80665,
        kappa: Kappa::Thesis { factor: 0.5 },
        tolerance: 1e-3,
        solver,
        planes: vec![PlaneConfig { point: [0.0, 0.0, 0.0], normal: [0.0, 0.0, 1.0] }],
        allow_initial_overlap: true,
        ..Config::default()
    }
}

/// `n` blocks of 0.5 × 0.5 × 0.4 m (density 2500 kg/m³) in layers of `side` × `side` on a
/// square grid of pitch `lateral`, layers `pitch` apart from z = 0.2 (0.4: touching), filled
/// layer by layer; each block turned about z by up to ±1.4° when `turned`; all falling at
/// 5 cm/s onto the plane z = 0. The heap bench's generated heaps and the tests' stacks.
pub fn layered_blocks(n: usize, side: usize, lateral: f64, pitch: f64, turned: bool) -> Vec<Block> {
    (0..n)
        .map(|k| {
            let (layer, i, j) = (k / (side * side), (k / side) % side, k % side);
            let jit = ((k * 7919) % 97) as f64 / 97.0 - 0.5;
            let pos =
                Vector3::new(i as f64 * lateral, j as f64 * lateral, 0.2 + layer as f64 * pitch);
            let turn = if turned { 0.05 * jit } else { 0.0 };
            let rot = UnitQuaternion::from_euler_angles(0.0, 0.0, turn);
            let mut b = Block::new(k as u32, 0.5, 0.5, 0.4, 2500.0, pos, rot);
            b.vel = Vector3::new(0.0, 0.0, -0.05);
            b
        })
        .collect()
}

/// FNV-1a hash of the bits of every block's state (position, velocity, angular velocity,
/// quaternion, in block order): equal hashes mean byte-identical states.
pub fn state_hash(blocks: &[Block]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in blocks {
        for v in b.pos.iter().chain(b.vel.iter()).chain(b.omega.iter()).chain(b.rot.coords.iter()) {
            for byte in v.to_bits().to_le_bytes() {
                h = (h ^ byte as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    h
}
