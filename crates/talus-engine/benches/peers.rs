//! Talus against the game engines a rockfall modeller would otherwise pick (issue 16): the
//! thesis heaps (`data/thesis-granular/`, N blocks thrown onto the plane z = 0, Δt = 1 ms)
//! stepped by Talus and, in the same run, by pybullet (50 sequential-impulse iterations on
//! rigid bodies, `useMaximalCoordinates`) and rapier3d (its default 4 TGS iterations)
//! through `benches/peers.py`, frictionless and
//! with Coulomb μ = 0.5. Only the stepping loop is timed, on one thread (Talus in a rayon
//! pool of TALUS_BENCH_THREADS threads, default 1; the peers single-threaded). For every engine
//! the table gives s/step, the total, the ratio Talus / peer, and the final heap's median
//! centre height and r95 (95th percentile of the horizontal distance of the centres from
//! their mean), so that the heaps can be compared, not only the clocks.
//!
//! `cargo bench -p talus-engine --bench peers`. Environment:
//! * TALUS_BENCH_N = comma-separated thesis sizes (default 100,1000,3000);
//! * TALUS_BENCH_MU = comma-separated μ (default 0,0.5);
//! * TALUS_BENCH_STEPS (default 1000);
//! * TALUS_BENCH_SOLVER = nlgs | clarabel | warm (default nlgs); for nlgs
//!   TALUS_BENCH_TOL (comma-separated tolerances, one Talus run each, default 1e-6; the
//!   peers' ratio column then lists Talus / peer for each, in that order),
//!   TALUS_BENCH_SWEEPS (100), TALUS_BENCH_FRICTIONAL_CONTACTS (the engine's default, 0) and
//!   TALUS_BENCH_MAX_CONTACTS (1000) set its options;
//! * TALUS_BENCH_SEPARATION = velocity: separation velocities (β = 0.2) instead of the
//!   default position correction, to compare with the previous code in the same run;
//! * TALUS_BENCH_TRACE = 1 prints a line per step with contacts (stderr), with its time;
//! * TALUS_BENCH_PHASES = 1 prints each Talus run's seconds by phase (stderr): broad and
//!   narrow phase, assembly, the islands' solves (with their position correction), and the
//!   rest of the step (integration, energies, the warm start's store);
//! * TALUS_BENCH_THREADS = Talus's threads (default 1: as the peers run);
//! * TALUS_BENCH_PEERS = comma-separated peers (default pybullet,rapier; empty: none;
//!   `pybullet-multibody` is pybullet with `createMultiBody`'s default, a Featherstone
//!   multibody per block, about twice as slow: the peer of this bench until
//!   2026-11-28). A peer whose Python module is missing is reported as skipped.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;
use talus_engine::config::SolverConfig;
use talus_engine::driver::statics;
use talus_engine::sim::Simulation;
use talus_engine::solver::friction::{FrictionConfig, FrictionLaw};

#[path = "../tests/it/common/mod.rs"]
mod common;

/// Median centre height and r95 of a heap, m.
fn heap_stats(centres: &[[f64; 3]]) -> (f64, f64) {
    let n = centres.len() as f64;
    let (mx, my) = centres.iter().fold((0.0, 0.0), |a, c| (a.0 + c[0] / n, a.1 + c[1] / n));
    let mut z: Vec<f64> = centres.iter().map(|c| c[2]).collect();
    let mut r: Vec<f64> = centres.iter().map(|c| (c[0] - mx).hypot(c[1] - my)).collect();
    z.sort_by(f64::total_cmp);
    r.sort_by(f64::total_cmp);
    let q = |v: &[f64], p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (q(&z, 0.5), q(&r, 0.95))
}

struct Outcome {
    seconds: f64,
    median_z: f64,
    r95: f64,
    note: String,
}

fn talus(n: usize, mu: f64, steps: u64, solver: &SolverConfig) -> Outcome {
    let blocks = common::thesis_blocks(&common::thesis_dir(), n);
    let mut config = common::heap_config(steps, solver.clone());
    if std::env::var("TALUS_BENCH_SEPARATION").as_deref() == Ok("velocity") {
        config.separation.method = talus_engine::config::SeparationMethod::Velocity;
        config.separation.beta = 0.2;
    }
    if mu > 0.0 {
        config.friction = FrictionConfig {
            block_block: Some(FrictionLaw::Coulomb(mu)),
            block_terrain: Some(FrictionLaw::Coulomb(mu)),
            slip_credit: true,
        };
    }
    let st = statics(&config, None);
    let mut sim = Simulation::new(config, blocks, st).expect("simulation");
    let (mut fallbacks, mut sweeps, mut worst, mut not_solved, mut pen) =
        (0, 0u64, 0.0f64, 0, 0.0f64);
    let mut phases = [0.0f64; 5];
    let t0 = Instant::now();
    for _ in 0..steps {
        let t_step = Instant::now();
        let (_, d) = sim.advance();
        let t = t_step.elapsed().as_secs_f64();
        let times = [d.t_broad, d.t_narrow, d.jump.t_assembly, d.jump.t_solve, t];
        for (sum, x) in phases.iter_mut().zip(times) {
            *sum += x;
        }
        if std::env::var("TALUS_BENCH_TRACE").is_ok() && d.jump.islands > 0 {
            let j = &d.jump;
            eprintln!(
                "step {} ms {:.2} islands {} vars {} solver {} status {} it {} sweeps {} acc {:.2e} rp {:.1e} rd {:.1e} fb {}",
                d.step,
                t * 1e3,
                j.islands,
                j.qp_variables,
                j.solver,
                j.status,
                j.iterations,
                j.sweeps,
                j.accuracy,
                j.r_prim,
                j.r_dual,
                j.fallback
            );
        }
        fallbacks += d.jump.fallback as u32;
        sweeps += d.jump.sweeps as u64;
        worst = worst.max(d.jump.accuracy);
        not_solved += (!d.jump.failed.is_empty()) as u32;
        pen = pen.max(d.jump.max_penetration);
    }
    let seconds = t0.elapsed().as_secs_f64();
    if std::env::var("TALUS_BENCH_PHASES").is_ok() {
        let [broad, narrow, assembly, solve, total] = phases;
        let rest = total - broad - narrow - assembly - solve;
        eprintln!(
            "N {n}, mu {mu}: broad {broad:.2} s, narrow {narrow:.2} s, assembly {assembly:.2} s, \
             solve {solve:.2} s, rest {rest:.2} s, total {total:.2} s"
        );
    }
    let centres: Vec<[f64; 3]> = sim.blocks.iter().map(|b| [b.pos.x, b.pos.y, b.pos.z]).collect();
    let (median_z, r95) = heap_stats(&centres);
    Outcome {
        seconds,
        median_z,
        r95,
        note: format!(
            "fallback steps {fallbacks}, not solved {not_solved}, sweeps/step {:.1}, worst certificate {worst:.1e}, max penetration {pen:.2e} m",
            sweeps as f64 / steps as f64
        ),
    }
}

fn peer(engine: &str, n: usize, mu: f64, steps: u64) -> Result<Outcome, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/peers.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(["--engine", engine, "--n", &n.to_string(), "--mu", &mu.to_string()])
        .args(["--steps", &steps.to_string(), "--data"])
        .arg(common::thesis_dir())
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("failed").to_string());
    }
    let v: serde_json::Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("{e}: {text}"))?;
    if let Some(s) = v.get("skipped").and_then(|s| s.as_str()) {
        return Err(format!("skipped: {s}"));
    }
    let f = |k: &str| v[k].as_f64().ok_or_else(|| format!("no {k} in {text}"));
    Ok(Outcome {
        seconds: f("seconds")?,
        median_z: f("median_z")?,
        r95: f("r95")?,
        note: v["note"].as_str().unwrap_or("").to_string(),
    })
}

fn env_f64(var: &str, default: f64) -> f64 {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn list<T: std::str::FromStr>(var: &str, default: &str) -> Vec<T> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap_or_else(|_| panic!("{var}: bad value {s:?}")))
        .collect()
}

fn main() {
    // As the talus binary does (the runs measured are the users').
    talus_engine::allocator::keep_freed_memory();
    let sizes: Vec<usize> = list("TALUS_BENCH_N", "100,1000,3000");
    let mus: Vec<f64> = list("TALUS_BENCH_MU", "0,0.5");
    let steps: u64 = list("TALUS_BENCH_STEPS", "1000")[0];
    let peers: Vec<String> = list("TALUS_BENCH_PEERS", "pybullet,rapier");
    // One Talus run per tolerance (the NLGS solver's; the others have one).
    let tolerances: Vec<f64> = list("TALUS_BENCH_TOL", "1e-6");
    let solvers: Vec<SolverConfig> = match std::env::var("TALUS_BENCH_SOLVER").as_deref() {
        Ok("clarabel") => {
            vec![SolverConfig::Clarabel {
                tolerance: 1e-9,
                max_iterations: 200,
                dense_max_bodies: 0,
            }]
        }
        Ok("warm") => vec![SolverConfig::Warm {
            tolerance: 1e-9,
            max_iterations: 200,
            fallback_tolerance: 1e-9,
            dense_max_bodies: talus_engine::config::DENSE_MAX_BODIES,
        }],
        Ok("nlgs") | Err(_) => tolerances
            .iter()
            .map(|&tolerance| SolverConfig::Nlgs {
                tolerance,
                max_sweeps: env_f64("TALUS_BENCH_SWEEPS", 100.0) as u32,
                fallback_tolerance: 1e-9,
                frictional_max_contacts: env_f64(
                    "TALUS_BENCH_FRICTIONAL_CONTACTS",
                    talus_engine::config::DEFAULT_NLGS_FRICTIONAL_CONTACTS.into(),
                ) as u32,
                max_contacts: env_f64(
                    "TALUS_BENCH_MAX_CONTACTS",
                    talus_engine::config::DEFAULT_NLGS_MAX_CONTACTS.into(),
                ) as u32,
                loose_sweeps: env_f64(
                    "TALUS_BENCH_LOOSE_SWEEPS",
                    talus_engine::config::DEFAULT_NLGS_LOOSE_SWEEPS.into(),
                ) as u32,
                admm_iterations: env_f64(
                    "TALUS_BENCH_ADMM",
                    talus_engine::config::DEFAULT_ADMM_ITERATIONS.into(),
                ) as u32,
                admm_sigma: env_f64(
                    "TALUS_BENCH_ADMM_SIGMA",
                    talus_engine::config::DEFAULT_ADMM_SIGMA,
                ),
            })
            .collect(),
        Ok(other) => panic!("TALUS_BENCH_SOLVER: unknown solver {other:?}"),
    };
    let threads: usize = std::env::var("TALUS_BENCH_THREADS")
        .ok()
        .map(|v| v.parse().expect("TALUS_BENCH_THREADS: a number of threads"))
        .unwrap_or(1);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // The processor's model: the ratios to the peers move with it (docs/benchmarks.md).
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':'])))
        .unwrap_or("unknown");
    println!(
        "thesis heaps, {steps} steps of 1 ms, Talus solver {:?}{}, {threads} thread(s), {} kernels; cpu {cpu}; cores {}; load {}",
        solvers[0],
        if solvers.len() > 1 { " (the tolerance of each run in its row)" } else { "" },
        talus_engine::solver::wide::kernels(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!("| N | μ | engine | s/step | total s | Talus / engine | median z m | r95 m | notes |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &n in &sizes {
        for &mu in &mus {
            let runs: Vec<(String, Outcome)> = solvers
                .iter()
                .map(|solver| {
                    let name = match solver {
                        SolverConfig::Nlgs { tolerance, .. } => {
                            format!("talus (tol {tolerance:e})")
                        }
                        _ => "talus".to_string(),
                    };
                    (name, pool.install(|| talus(n, mu, steps, solver)))
                })
                .collect();
            for (name, t) in &runs {
                println!(
                    "| {n} | {mu} | {name} | {:.3e} | {:.2} | 1 | {:.3} | {:.3} | {} |",
                    t.seconds / steps as f64,
                    t.seconds,
                    t.median_z,
                    t.r95,
                    t.note
                );
            }
            // Talus / peer for each Talus run, in the order of the tolerances.
            let ratios = |peer: f64| {
                runs.iter()
                    .map(|(_, t)| format!("{:.2}", t.seconds / peer))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            for p in &peers {
                match peer(p, n, mu, steps) {
                    Ok(o) => println!(
                        "| {n} | {mu} | {p} | {:.3e} | {:.2} | {} | {:.3} | {:.3} | {} |",
                        o.seconds / steps as f64,
                        o.seconds,
                        ratios(o.seconds),
                        o.median_z,
                        o.r95,
                        o.note
                    ),
                    Err(e) => println!("| {n} | {mu} | {p} | — | — | — | — | — | {e} |"),
                }
            }
        }
    }
}
