//! Which islands the dense solver should take: the island QPs of the thesis heap (N = 100
//! and 500 by default, the whole run of 1000 steps) grouped by number of bodies, each
//! solved by the dense solver, the warm solver (started from the previous step's
//! multipliers, as in a run) and Clarabel (1e-9); mean µs per QP and the ratio to Clarabel
//! measured in the same run, and how many QPs the dense solver certified.
//!
//! `cargo bench -p talus-engine --bench small_islands`. Environment:
//! TALUS_BENCH_N (default 100,500), TALUS_BENCH_STEPS (steps collected, default 1000: the
//! blocks fall for about the first 300 steps and touch nothing), TALUS_BENCH_REPS (timing
//! repetitions, default 3).

// The thesis-file reader and heap configuration the engine's tests use.
#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::Instant;
use talus_engine::config::SolverConfig;
use talus_engine::driver::statics;
use talus_engine::geometry::detect::DetectTimings;
use talus_engine::sim::Simulation;
use talus_engine::solver::assembly::Qp;
use talus_engine::solver::clarabel::solve_clarabel;
use talus_engine::solver::dense::solve_dense;
use talus_engine::solver::warm::solve_warm;
use talus_engine::step::{prepare, step_with_contacts};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// Groups by number of bodies: 1, 2, 3, 4, 5–8, 9–16, 17–32.
const GROUPS: [(usize, usize); 7] = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 8), (9, 16), (17, 32)];

fn main() {
    // As the talus binary does (the runs measured are the users').
    talus_engine::allocator::keep_freed_memory();
    let dir = common::thesis_dir();
    let sizes: Vec<usize> = std::env::var("TALUS_BENCH_N")
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .unwrap_or_else(|_| vec![100, 500]);
    let steps: u64 = env_or("TALUS_BENCH_STEPS", 1000);
    let reps: usize = env_or("TALUS_BENCH_REPS", 3);
    let solver = SolverConfig::Warm {
        tolerance: 1e-9,
        max_iterations: 50,
        fallback_tolerance: 1e-9,
        dense_max_bodies: 0,
    };
    // (bodies, QP, warm start).
    let mut qps: Vec<(usize, Qp, Vec<f64>)> = Vec::new();
    for &n in &sizes {
        if !dir.join(format!("size_{n}.data")).exists() {
            eprintln!("skipped thesis N={n}: files not found in {}", dir.display());
            continue;
        }
        let blocks = common::thesis_blocks(&dir, n);
        let config = common::heap_config(steps, solver.clone());
        let st = statics(&config, None);
        let mut sim = Simulation::new(config.clone(), blocks, st).expect("simulation");
        for _ in 0..steps {
            let contacts = sim.detect(&mut DetectTimings::default());
            let prep = prepare(&sim.params, &sim.blocks, &contacts);
            for isl in prep.islands {
                if isl.bodies.len() <= GROUPS[GROUPS.len() - 1].1 {
                    let l0 = sim.warm.initial_lambda(&isl.keys);
                    qps.push((isl.bodies.len(), isl.qp, l0));
                }
            }
            step_with_contacts(&sim.params, &mut sim.blocks, &contacts, &mut sim.warm);
        }
    }
    println!("thesis heap N = {sizes:?}, first {steps} steps; µs per QP (best of {reps})");
    if qps.is_empty() {
        println!(
            "no island of at most {} bodies in these steps: nothing to time",
            GROUPS[GROUPS.len() - 1].1
        );
        return;
    }
    println!(
        "{:<8} {:>7} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "bodies",
        "QPs",
        "max rows",
        "dense ok",
        "dense",
        "warm",
        "clarabel",
        "clar/dense",
        "warm/dense"
    );
    for (lo, hi) in GROUPS {
        let group: Vec<&(usize, Qp, Vec<f64>)> =
            qps.iter().filter(|(b, _, _)| (lo..=hi).contains(b)).collect();
        if group.is_empty() {
            continue;
        }
        let rows = group.iter().map(|(_, q, _)| q.m()).max().unwrap_or(0);
        let ok = group.iter().filter(|(_, q, _)| solve_dense(q, 1e-9).solved).count();
        let time = |f: &dyn Fn(&Qp, &[f64]) -> bool| {
            (0..reps)
                .map(|_| {
                    let t0 = Instant::now();
                    let mut solved = 0usize;
                    for (_, q, l0) in &group {
                        solved += f(q, l0) as usize;
                    }
                    std::hint::black_box(solved);
                    t0.elapsed().as_secs_f64() / group.len() as f64 * 1e6
                })
                .fold(f64::INFINITY, f64::min)
        };
        let td = time(&|q, _| solve_dense(q, 1e-9).solved);
        let tw = time(&|q, l0| solve_warm(q, l0, 1e-9, 50, 1e-9).solved);
        let tc = time(&|q, _| solve_clarabel(q, 1e-9, 200).solved);
        let name = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
        println!(
            "{:<8} {:>7} {:>9} {:>9} {:>10.1} {:>10.1} {:>10.1} {:>9.1}x {:>9.1}x",
            name,
            group.len(),
            rows,
            ok,
            td,
            tw,
            tc,
            tc / td,
            tw / td
        );
    }
}
