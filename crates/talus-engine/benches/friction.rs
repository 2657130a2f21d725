//! Cost of Coulomb friction (issue 8): the thesis heap N = 1000 (`size_1000.data`,
//! `position_1000.data`), the same steps run three times from the same initial state:
//! the frictionless QP with Clarabel, the frictionless QP with the warm solver (the fast
//! path), and with friction (μ = 0.6 block–block, 0.7 block–ground), whose islands are
//! second-order-cone programs solved by Clarabel. Prints wall time per step split by phase,
//! contacts per step and the ratios SOCP / QP (per step and per contact).
//!
//! `cargo bench -p talus-engine --bench friction [-- STEPS [WARMUP]]` (default 300 steps
//! timed after 700 frictionless steps that bring the thrown blocks down into a heap).
//! Environment: TALUS_THESIS_DIR (default data/thesis-granular in the repository).

use std::time::Instant;
use talus_engine::body::Block;
use talus_engine::config::{Config, Kappa, PlaneConfig, SolverConfig};
use talus_engine::driver::statics;
use talus_engine::sim::Simulation;
use talus_engine::solver::friction::{FrictionConfig, FrictionLaw};

#[path = "../tests/it/common/mod.rs"]
mod common;

#[derive(Default)]
struct Row {
    wall: f64,
    detect: f64,
    assembly: f64,
    solve: f64,
    contacts: f64,
    iterations: f64,
    socp_steps: u64,
}

fn bench(blocks: Vec<Block>, steps: u64, solver: SolverConfig, friction: FrictionConfig) -> Row {
    let config = Config {
        dt: 1e-3,
        steps: Some(steps),
        gravity: 9.80665,
        kappa: Kappa::Thesis { factor: 0.5 },
        tolerance: 1e-3,
        solver,
        planes: vec![PlaneConfig { point: [0.0, 0.0, 0.0], normal: [0.0, 0.0, 1.0] }],
        allow_initial_overlap: true,
        friction,
        ..Config::default()
    };
    let st = statics(&config, None);
    let mut sim = Simulation::new(config, blocks, st).expect("simulation");
    let mut r = Row::default();
    let t0 = Instant::now();
    for _ in 0..steps {
        let (_, d) = sim.advance();
        r.detect += d.t_broad + d.t_narrow;
        r.assembly += d.jump.t_assembly;
        r.solve += d.jump.t_solve;
        r.iterations += d.jump.iterations as f64;
        r.contacts += (d.jump.contacts_block_block
            + d.jump.contacts_block_plane
            + d.jump.contacts_block_terrain) as f64;
        r.socp_steps += (d.jump.solver == "clarabel_socp") as u64;
        assert!(d.jump.failed.is_empty(), "step {} not solved: {}", d.step, d.jump.status);
    }
    r.wall = t0.elapsed().as_secs_f64();
    r
}

fn main() {
    // As the talus binary does (the runs measured are the users').
    talus_engine::allocator::keep_freed_memory();
    let dir = match std::env::var("TALUS_THESIS_DIR") {
        Ok(d) => std::path::PathBuf::from(d),
        Err(_) => common::thesis_dir(),
    };
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| a.parse().ok())
        .collect();
    let steps = args.first().copied().unwrap_or(300);
    let warmup = args.get(1).copied().unwrap_or(700);
    let clarabel =
        SolverConfig::Clarabel { tolerance: 1e-9, max_iterations: 200, dense_max_bodies: 0 };
    let warm = SolverConfig::Warm {
        tolerance: 1e-9,
        max_iterations: 50,
        fallback_tolerance: 1e-9,
        dense_max_bodies: talus_engine::config::DENSE_MAX_BODIES,
    };
    // The blocks start 2–10 m up: run the frictionless heap until it has formed, then time
    // every case from that same state.
    let mut blocks = common::thesis_blocks(&dir, 1000);
    if warmup > 0 {
        let config = Config {
            dt: 1e-3,
            steps: Some(warmup),
            gravity: 9.80665,
            kappa: Kappa::Thesis { factor: 0.5 },
            solver: warm.clone(),
            planes: vec![PlaneConfig { point: [0.0, 0.0, 0.0], normal: [0.0, 0.0, 1.0] }],
            allow_initial_overlap: true,
            ..Config::default()
        };
        let st = statics(&config, None);
        let mut sim = Simulation::new(config, blocks, st).expect("simulation");
        for _ in 0..warmup {
            sim.advance();
        }
        blocks = sim.blocks;
    }
    let friction = FrictionConfig {
        block_block: Some(FrictionLaw::Coulomb(0.6)),
        block_terrain: Some(FrictionLaw::Coulomb(0.7)),
        slip_credit: true,
    };
    let rows = [
        ("QP, clarabel", bench(blocks.clone(), steps, clarabel.clone(), FrictionConfig::default())),
        ("QP, warm", bench(blocks.clone(), steps, warm, FrictionConfig::default())),
        ("SOCP, clarabel", bench(blocks, steps, clarabel, friction)),
    ];
    println!(
        "thesis heap N = 1000, {steps} steps after {warmup} frictionless ones, Δt = 1 ms, κ thesis (0.5 × mean mass)"
    );
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "case", "s/step", "detect", "assembly", "solve", "contacts", "ip iters", "socp steps"
    );
    let s = steps as f64;
    for (name, r) in &rows {
        println!(
            "{:<16} {:>10.3e} {:>10.2e} {:>10.2e} {:>10.2e} {:>10.0} {:>10.0} {:>10}",
            name,
            r.wall / s,
            r.detect / s,
            r.assembly / s,
            r.solve / s,
            r.contacts / s,
            r.iterations / s,
            r.socp_steps
        );
    }
    let socp = &rows[2].1;
    for (name, r) in &rows[..2] {
        println!(
            "SOCP / {name}: {:.2}x per step, {:.2}x solve per step, {:.2}x solve per contact",
            socp.wall / r.wall,
            socp.solve / r.solve,
            (socp.solve / socp.contacts.max(1.0)) / (r.solve / r.contacts.max(1.0))
        );
    }
}
