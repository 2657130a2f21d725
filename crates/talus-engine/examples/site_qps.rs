//! Replays a site run and compares, on every island QP, the warm solver with Clarabel:
//! fallback count, wall time of each solver, largest relative difference.
//!
//! `cargo run -p talus-engine --example site_qps -- <blocks.parquet> <terrain dir> [steps] [warm|clarabel]`
//! The configuration is fixed below, frictionless: Δt = 0.02 s, restitution 0.1 and the
//! velocity separation of the early sessions, not the shipped site's `[run]` table
//! (`pipelines/piton-marcel.toml`: Δt = 0.02 s, Coulomb friction, position correction),
//! whose frictional islands the warm solver does not take.

use std::time::Instant;
use talus_engine::config::{Config, Kappa, SeparationConfig, SeparationMethod, SolverConfig};
use talus_engine::driver::{read_blocks, read_terrain, statics};
use talus_engine::geometry::detect::DetectTimings;
use talus_engine::rotation::RotationModel;
use talus_engine::sim::Simulation;
use talus_engine::solver::clarabel::solve_clarabel;
use talus_engine::solver::warm::try_solve;
use talus_engine::step::prepare;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let blocks = read_blocks(std::path::Path::new(&args[1])).expect("blocks").blocks;
    let tin = read_terrain(std::path::Path::new(&args[2])).expect("terrain");
    let steps: u64 = args.get(3).map(|s| s.parse().expect("steps")).unwrap_or(1750);
    let drive_warm = args.get(4).map(|s| s == "warm").unwrap_or(true);
    let solver = if drive_warm {
        SolverConfig::Warm {
            tolerance: 1e-9,
            max_iterations: std::env::var("WARM_CAP")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(50),
            fallback_tolerance: 1e-9,
            dense_max_bodies: talus_engine::config::DENSE_MAX_BODIES,
        }
    } else {
        SolverConfig::Clarabel { tolerance: 1e-9, max_iterations: 200, dense_max_bodies: 0 }
    };
    let config = Config {
        dt: 0.02,
        steps: Some(steps),
        kappa: Kappa::Restitution { e: 0.1, tangential_ratio: 1.0 },
        tolerance: 0.05,
        separation: SeparationConfig {
            method: SeparationMethod::Velocity,
            beta: 0.2,
            max_velocity: 2.0,
            ..SeparationConfig::default()
        },
        rotation: RotationModel::ConstantOmega,
        solver,
        on_solver_failure: talus_engine::config::OnSolverFailure::Continue,
        allow_initial_overlap: true,
        ..Config::default()
    };
    let st = statics(&config, Some(tin));
    let mut sim = Simulation::new(config.clone(), blocks, st).expect("simulation");
    let (mut qps, mut fails, mut t_warm, mut t_clar, mut worst, mut iters, mut max_m) =
        (0usize, 0usize, 0f64, 0f64, 0f64, 0u64, 0usize);
    let (mut steps_fb, mut max_pen, mut min_diss) = (0usize, 0f64, f64::INFINITY);
    for s in 0..steps {
        let contacts = sim.detect(&mut DetectTimings::default());
        let prep = prepare(&sim.params, &sim.blocks, &contacts);
        for isl in &prep.islands {
            let lambda0 = sim.warm.initial_lambda(&isl.keys);
            let t0 = Instant::now();
            let cap: u32 =
                std::env::var("WARM_CAP").ok().and_then(|s| s.parse().ok()).unwrap_or(50);
            let w = try_solve(&isl.qp, &lambda0, 1e-9, cap);
            t_warm += t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            let c = solve_clarabel(&isl.qp, 1e-9, 200);
            t_clar += t1.elapsed().as_secs_f64();
            qps += 1;
            max_m = max_m.max(isl.qp.m());
            match w {
                Some(w) => {
                    iters += w.iterations as u64;
                    if c.solved {
                        let scale = c.x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
                        let d = w.x.iter().zip(&c.x).fold(0f64, |a, (p, q)| a.max((p - q).abs()));
                        worst = worst.max(d / scale);
                        if d / scale > 1e-8 && std::env::var("SITE_QPS_VERBOSE").is_ok() {
                            let kw = talus_engine::solver::clarabel::kkt_residuals(
                                &isl.qp, &w.x, &w.lambda,
                            );
                            let kc = talus_engine::solver::clarabel::kkt_residuals(
                                &isl.qp, &c.x, &c.lambda,
                            );
                            let tight = solve_clarabel(&isl.qp, 1e-12, 400);
                            let dt =
                                w.x.iter()
                                    .zip(&tight.x)
                                    .fold(0f64, |a, (p, q)| a.max((p - q).abs()));
                            let kt = talus_engine::solver::clarabel::kkt_residuals(
                                &isl.qp,
                                &tight.x,
                                &tight.lambda,
                            );
                            eprintln!(
                                "step {s} n={} m={}: diff {:.2e}; kkt warm {kw:?} clarabel {kc:?}; tight clarabel {} diff {:.2e} kkt {kt:?}",
                                isl.qp.n(),
                                isl.qp.m(),
                                d / scale,
                                tight.status,
                                dt / scale
                            );
                        }
                    }
                }
                None => {
                    fails += 1;
                    if std::env::var("SITE_QPS_VERBOSE").is_ok() {
                        eprintln!(
                            "step {s}: warm failed on n={} m={} (clarabel {})",
                            isl.qp.n(),
                            isl.qp.m(),
                            c.status
                        );
                    }
                }
            }
        }
        let (e, d) = sim.advance();
        steps_fb += d.jump.fallback as usize;
        max_pen = max_pen.max(d.jump.max_penetration);
        min_diss = min_diss.min(e.dissipated);
    }
    println!(
        "{steps} steps, {qps} QPs (largest m = {max_m}): warm failed on {fails}, {iters} Newton iterations in all; \
         warm {t_warm:.3} s, clarabel {t_clar:.3} s; worst relative difference {worst:.2e}; \
         steps with fallback {steps_fb}; max penetration {max_pen:.3} m; min dissipation {min_diss:.3e} J"
    );
}
