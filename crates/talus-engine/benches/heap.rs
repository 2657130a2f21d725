//! Thesis heaps N = 100, 500, 1000, 3000 and a generated heap of 10⁵ blocks: wall time
//! per step split by phase (broad, narrow, assembly, solve), contacts, and the ratio to the
//! thesis code's reference times (2.1 / 43 / 93 / 968 s for 1000 steps, CPLEX replaced by
//! an exact QP, same machine class).
//!
//! `cargo bench -p talus-engine --bench heap`: every thesis case runs 1000 steps (as the
//! reference), the generated heap 3 steps. Peak memory is the process's VmHWM
//! (/proc/self/status), reset before each case (`echo 5 > /proc/self/clear_refs`), so each
//! row shows the peak resident set of that case alone.
//! Environment:
//! * TALUS_THESIS_DIR (default data/thesis-granular in the repository);
//! * TALUS_BENCH_SOLVER = warm | nlgs | clarabel (default warm); `nlgs` at 1e-6 with
//!   `admm_iterations` = TALUS_BENCH_ADMM (default 1000, the engine's) and `max_contacts`
//!   = TALUS_BENCH_MAX_CONTACTS (default 1000, the engine's);
//! * TALUS_BENCH_WARM_ITERATIONS = linear solves of the warm solver per QP before it
//!   falls back to Clarabel (default 200);
//! * TALUS_BENCH_TRACE = 1 prints a line per step on stderr: contacts, largest island,
//!   solver iterations, fallback, solve time, and how the warm start's contacts changed
//!   from the previous step (contact keys, new keys, contacts that became active or
//!   inactive). Its bookkeeping runs inside the timed loop: read counts from it, not times;
//! * TALUS_BENCH_DENSE = comma-separated `dense_max_bodies` values, each case is run once
//!   per value (default: the method's default, 4 for warm, 0 for clarabel), e.g. `0,2` for
//!   before/after the dense solver of small islands in the same run;
//! * TALUS_BENCH_N = comma-separated thesis sizes to run (default 100,500,1000,3000);
//! * TALUS_BENCH_STEPS = steps of each thesis case (default 1000);
//! * TALUS_BENCH_BIG = number of blocks of the generated heap (default 100000; 0 skips it),
//!   TALUS_BENCH_BIG_STEPS (default 3); TALUS_BENCH_SKIP_BIG = 1 also skips it;
//!   TALUS_BENCH_BIG_LAYOUT = comma-separated layouts (default `spaced,stacked`): `spaced`,
//!   layers 1 cm apart, so only the bottom layer touches the plane and every block is its
//!   own island; `stacked`, layers touching, so every column of 10 blocks is an island with
//!   face contacts between its blocks; `packed`, columns touching too, so the whole heap
//!   is one island (not in the default: see the README for its figures).
//!
//! The `state` column is a hash of the final state's bits: equal hashes mean byte-identical
//! results (used to check that an optimisation changes nothing).

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;
use talus_engine::body::Block;
use talus_engine::config::{Config, Kappa, PlaneConfig, SolverConfig};
use talus_engine::driver::statics;
use talus_engine::sim::Simulation;
use talus_engine::solver::warm::ContactKey;

/// Layout of the generated heap.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Layers 1 cm apart: only the bottom layer touches (the plane); every block is its own
    /// island.
    Spaced,
    /// Layers touching: columns of 10 blocks standing on the plane, 2 cm apart laterally;
    /// every column is an island of 10 blocks with face contacts between them.
    Stacked,
    /// Layers and columns touching: the whole heap is one island.
    Packed,
}

/// Generated heap of n blocks in 10 layers ([`common::layered_blocks`]): pitch 0.52 m,
/// blocks turned about z by up to ±1.4° (packed: pitch 0.5 m, not turned, faces touching).
fn generated_heap(n: usize, layout: Layout) -> Vec<Block> {
    let side = (n as f64 / 10.0).sqrt().ceil() as usize;
    match layout {
        Layout::Spaced => common::layered_blocks(n, side, 0.52, 0.41, true),
        Layout::Stacked => common::layered_blocks(n, side, 0.52, 0.4, true),
        Layout::Packed => common::layered_blocks(n, side, 0.5, 0.4, false),
    }
}

struct Row {
    name: String,
    steps: u64,
    wall: f64,
    broad: f64,
    narrow: f64,
    assembly: f64,
    solve: f64,
    contacts: f64,
    fallbacks: u64,
    dense: f64,
    max_island: u32,
    reference: Option<f64>,
    peak_mb: f64,
    state: u64,
}

/// Reset the peak resident set size of this process (Linux; ignored elsewhere).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set size since the last reset, MB (NaN when unknown).
fn peak_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// How the warm start's multipliers changed over a step: keys, active ones, new keys (and
/// how many of them are active), persisting keys that became active or inactive, active
/// keys that disappeared.
fn warm_drift(prev: &HashMap<ContactKey, f64>, cur: &HashMap<ContactKey, f64>) -> String {
    let active = |l: &f64| *l > 0.0;
    let new: Vec<_> = cur.iter().filter(|(k, _)| !prev.contains_key(k)).collect();
    let gained =
        cur.iter().filter(|(k, l)| active(l) && prev.get(k).is_some_and(|p| !active(p))).count();
    let lost =
        prev.iter().filter(|(k, l)| active(l) && cur.get(k).is_some_and(|c| !active(c))).count();
    let gone = prev.iter().filter(|(k, l)| active(l) && !cur.contains_key(k)).count();
    format!(
        "keys {} active {} new {} (active {}) gained {gained} lost {lost} gone {gone}",
        cur.len(),
        cur.values().filter(|l| active(l)).count(),
        new.len(),
        new.iter().filter(|(_, l)| active(l)).count()
    )
}

fn bench(
    name: &str,
    blocks: Vec<Block>,
    steps: u64,
    solver: &SolverConfig,
    reference: Option<f64>,
) -> Row {
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
    reset_peak();
    let st = statics(&config, None);
    let mut sim = Simulation::new(config, blocks, st).expect("simulation");
    let mut r = Row {
        name: name.into(),
        steps,
        wall: 0.0,
        broad: 0.0,
        narrow: 0.0,
        assembly: 0.0,
        solve: 0.0,
        contacts: 0.0,
        fallbacks: 0,
        dense: 0.0,
        max_island: 0,
        reference,
        peak_mb: 0.0,
        state: 0,
    };
    let trace = std::env::var("TALUS_BENCH_TRACE").is_ok();
    let t0 = Instant::now();
    let mut prev: HashMap<ContactKey, f64> = HashMap::new();
    for _ in 0..steps {
        let (_, d) = sim.advance();
        r.broad += d.t_broad;
        r.narrow += d.t_narrow;
        r.assembly += d.jump.t_assembly;
        r.solve += d.jump.t_solve;
        r.contacts += (d.jump.contacts_block_block
            + d.jump.contacts_block_plane
            + d.jump.contacts_block_terrain) as f64;
        r.fallbacks += d.jump.fallback as u64;
        r.dense += d.jump.islands_dense as f64;
        r.max_island = r.max_island.max(d.jump.qp_variables / 6);
        assert!(d.jump.failed.is_empty(), "{name}: step {} not solved", d.step);
        if trace {
            let cur: HashMap<ContactKey, f64> = sim.warm.entries().into_iter().collect();
            eprintln!(
                "trace {name} step {} contacts {} island {} iterations {} fallback {} solve {:.3e} status {} warm {}",
                d.step,
                d.jump.contacts_block_block
                    + d.jump.contacts_block_plane
                    + d.jump.contacts_block_terrain,
                d.jump.qp_variables / 6,
                d.jump.iterations,
                d.jump.fallback,
                d.jump.t_solve,
                d.jump.status,
                warm_drift(&prev, &cur)
            );
            prev = cur;
        }
    }
    r.wall = t0.elapsed().as_secs_f64();
    r.peak_mb = peak_mb();
    r.state = common::state_hash(&sim.blocks);
    r
}

fn print_header() {
    println!(
        "{:<28} {:>6} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7} {:>9} {:>10} {:>9} {:>18}",
        "case",
        "steps",
        "s/step",
        "broad",
        "narrow",
        "assembly",
        "solve",
        "contacts",
        "dense",
        "island",
        "fallback",
        "vs thesis",
        "peak MB",
        "state"
    );
}

fn print_row(r: &Row) {
    let s = r.steps as f64;
    let per = r.wall / s;
    let ratio = r.reference.map(|t| format!("{:.2}x", t / per)).unwrap_or_else(|| "-".into());
    println!(
        "{:<28} {:>6} {:>11.3e} {:>10.2e} {:>10.2e} {:>10.2e} {:>10.2e} {:>10.0} {:>8.1} {:>7} {:>9} {:>10} {:>9.0} {:>18x}",
        r.name,
        r.steps,
        per,
        r.broad / s,
        r.narrow / s,
        r.assembly / s,
        r.solve / s,
        r.contacts / s,
        r.dense / s,
        r.max_island,
        r.fallbacks,
        ratio,
        r.peak_mb,
        r.state
    );
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

fn main() {
    // As the talus binary does (the runs measured are the users').
    talus_engine::allocator::keep_freed_memory();
    let dir = PathBuf::from(std::env::var("TALUS_THESIS_DIR").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/thesis-granular").into()
    }));
    let solver = match std::env::var("TALUS_BENCH_SOLVER").as_deref() {
        Ok("clarabel") => {
            SolverConfig::Clarabel { tolerance: 1e-9, max_iterations: 200, dense_max_bodies: 0 }
        }
        Ok("nlgs") => SolverConfig::Nlgs {
            tolerance: 1e-6,
            max_sweeps: 100,
            fallback_tolerance: 1e-9,
            // The heaps here are frictionless: the engine's default, for the record.
            frictional_max_contacts: talus_engine::config::DEFAULT_NLGS_FRICTIONAL_CONTACTS,
            max_contacts: env_or(
                "TALUS_BENCH_MAX_CONTACTS",
                talus_engine::config::DEFAULT_NLGS_MAX_CONTACTS,
            ),
            loose_sweeps: talus_engine::config::DEFAULT_NLGS_LOOSE_SWEEPS,
            admm_iterations: env_or(
                "TALUS_BENCH_ADMM",
                talus_engine::config::DEFAULT_ADMM_ITERATIONS,
            ),
            admm_sigma: env_or("TALUS_BENCH_ADMM_SIGMA", talus_engine::config::DEFAULT_ADMM_SIGMA),
        },
        _ => SolverConfig::Warm {
            tolerance: 1e-9,
            max_iterations: env_or("TALUS_BENCH_WARM_ITERATIONS", 200),
            fallback_tolerance: 1e-9,
            dense_max_bodies: talus_engine::config::DENSE_MAX_BODIES,
        },
    };
    let skip_big = std::env::var("TALUS_BENCH_SKIP_BIG").is_ok();
    let sizes: Vec<usize> = std::env::var("TALUS_BENCH_N")
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .unwrap_or_else(|_| vec![100, 500, 1000, 3000]);
    let steps: u64 = env_or("TALUS_BENCH_STEPS", 1000);
    let big: usize = if skip_big { 0 } else { env_or("TALUS_BENCH_BIG", 100_000) };
    let big_steps: u64 = env_or("TALUS_BENCH_BIG_STEPS", 3);
    let dense: Vec<u32> = std::env::var("TALUS_BENCH_DENSE")
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .unwrap_or_else(|_| vec![solver.dense_max_bodies() as u32]);
    let with_dense = |d: u32| match solver.clone() {
        SolverConfig::Clarabel { tolerance, max_iterations, .. } => {
            SolverConfig::Clarabel { tolerance, max_iterations, dense_max_bodies: d }
        }
        SolverConfig::Warm { tolerance, max_iterations, fallback_tolerance, .. } => {
            SolverConfig::Warm {
                tolerance,
                max_iterations,
                fallback_tolerance,
                dense_max_bodies: d,
            }
        }
        nlgs @ SolverConfig::Nlgs { .. } => nlgs,
    };
    println!(
        "solver: {solver:?}, dense_max_bodies: {dense:?}, {} kernels",
        talus_engine::solver::wide::kernels()
    );
    println!(
        "(this bench's solver is `warm` unless TALUS_BENCH_SOLVER says otherwise; the engine's \
         default, `nlgs` at 1e-6, is the peers bench's)"
    );
    print_header();
    for (n, reference) in [(100usize, 2.1), (500, 43.0), (1000, 93.0), (3000, 968.0)] {
        if !sizes.contains(&n) {
            continue;
        }
        for &d in &dense {
            match talus_seed::thesis::paths(&dir, n)
                .0
                .exists()
                .then(|| common::thesis_blocks(&dir, n))
            {
                Some(b) => print_row(&bench(
                    &format!("thesis N={n} dense<={d}"),
                    b,
                    steps,
                    &with_dense(d),
                    Some(reference / 1000.0),
                )),
                None => eprintln!("skipped thesis N={n}: files not found in {}", dir.display()),
            }
        }
    }
    if big > 0 {
        let layouts =
            std::env::var("TALUS_BENCH_BIG_LAYOUT").unwrap_or_else(|_| "spaced,stacked".into());
        for name in layouts.split(',').map(str::trim) {
            let layout = match name {
                "spaced" => Layout::Spaced,
                "stacked" => Layout::Stacked,
                "packed" => Layout::Packed,
                other => {
                    panic!(
                        "TALUS_BENCH_BIG_LAYOUT: unknown layout {other:?} (spaced, stacked, packed)"
                    )
                }
            };
            for &d in &dense {
                let blocks = generated_heap(big, layout);
                print_row(&bench(
                    &format!("gen N={big} {name} dense<={d}"),
                    blocks,
                    big_steps,
                    &with_dense(d),
                    None,
                ));
            }
        }
    }
    println!(
        "(s/step = wall / steps; broad, narrow, assembly, solve in s/step; contacts per step; dense = islands solved by the dense solver per step; island = largest island, bodies; fallback = steps with a fallback; peak MB = VmHWM of the case)"
    );
    println!(
        "(thesis reference: 2.1 / 43 / 93 / 968 s per 1000 steps for N = 100 / 500 / 1000 / 3000; goal >= 200x at 3000, <= 1 s/step at 1e5)"
    );
}
