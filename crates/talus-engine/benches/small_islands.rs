//! Which islands the dense solver should take: the island QPs of the thesis heap (N = 100
//! and 500 by default, the first steps of the run) grouped by number of bodies, each
//! solved by the dense solver, the warm solver (started from the previous step's
//! multipliers, as in a run) and Clarabel (1e-9); mean µs per QP and the ratio to Clarabel
//! measured in the same run, and how many QPs the dense solver certified.
//!
//! `cargo bench -p talus-engine --bench small_islands`. Environment: TALUS_THESIS_DIR,
//! TALUS_BENCH_N (default 100,500), TALUS_BENCH_STEPS (steps collected, default 300),
//! TALUS_BENCH_REPS (timing repetitions, default 3).

use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};
use std::path::{Path, PathBuf};
use std::time::Instant;
use talus_engine::assembly::Qp;
use talus_engine::body::Block;
use talus_engine::config::{Config, Kappa, PlaneConfig, SolverConfig};
use talus_engine::dense::solve_dense;
use talus_engine::detect::{DetectParams, DetectTimings, detect};
use talus_engine::files::statics;
use talus_engine::sim::Simulation;
use talus_engine::solvers::solve_clarabel;
use talus_engine::step::{prepare, step_with_contacts};
use talus_engine::warm::solve_warm;

fn numbers(path: &Path) -> Option<Vec<Vec<f64>>> {
    Some(
        std::fs::read_to_string(path)
            .ok()?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split_whitespace().filter_map(|t| t.parse::<f64>().ok()).collect())
            .collect(),
    )
}

fn thesis_blocks(dir: &Path, n: usize) -> Option<Vec<Block>> {
    let sizes = numbers(&dir.join(format!("size_{n}.data")))?;
    let pos = numbers(&dir.join(format!("position_{n}.data")))?;
    Some(
        (0..n)
            .map(|k| {
                let v = |r: usize| {
                    Vector3::new(pos[6 * k + r][0], pos[6 * k + r][1], pos[6 * k + r][2])
                };
                let m = Matrix3::from_columns(&[v(3), v(4), v(5)]);
                let rot = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix(&m));
                let s = &sizes[k];
                let mut b = Block::new(k as u32, s[0], s[1], s[2], 5000.0, v(0), rot);
                b.vel = v(1);
                b.omega = v(2);
                b
            })
            .collect(),
    )
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// Groups by number of bodies: 1, 2, 3, 4, 5–8, 9–16, 17–32.
const GROUPS: [(usize, usize); 7] = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 8), (9, 16), (17, 32)];

fn main() {
    let dir = PathBuf::from(std::env::var("TALUS_THESIS_DIR").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/thesis-granular").into()
    }));
    let sizes: Vec<usize> = std::env::var("TALUS_BENCH_N")
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .unwrap_or_else(|_| vec![100, 500]);
    let steps: u64 = env_or("TALUS_BENCH_STEPS", 300);
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
        let Some(blocks) = thesis_blocks(&dir, n) else {
            eprintln!("skipped thesis N={n}: files not found in {}", dir.display());
            continue;
        };
        let config = Config {
            dt: 1e-3,
            steps: Some(steps),
            gravity: 9.80665,
            kappa: Kappa::Thesis { factor: 0.5 },
            tolerance: 1e-3,
            solver: solver.clone(),
            planes: vec![PlaneConfig { point: [0.0, 0.0, 0.0], normal: [0.0, 0.0, 1.0] }],
            allow_initial_overlap: true,
            ..Config::default()
        };
        let st = statics(&config, None);
        let mut sim = Simulation::new(config.clone(), blocks, st).expect("simulation");
        for _ in 0..steps {
            let mut t = DetectTimings::default();
            let contacts = detect(
                &sim.blocks,
                &sim.statics,
                &DetectParams { tolerance: config.tolerance },
                &mut t,
            );
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
