//! Large mass ratios through the contact solvers (issue 21): a 10 m cube (2.7 × 10⁶ kg)
//! on a bed of nine 1 m cubes (2,700 kg each), a mass ratio of 1000, through the full
//! step (detection, Clarabel or NLGS → ADMM → Clarabel, position correction), with every
//! island's answer certified:
//! * on flat ground the stack stays at rest (no sinking, no creep);
//! * on a 20° slope with μ = 0.6 it stays at rest (below the friction angle);
//! * on a 30° slope with μ = 0.2 on the ground and 0.9 between blocks, the whole stack
//!   slides together at g (sin θ − μ cos θ).
//!
//! Figures are printed (`--nocapture`).

use nalgebra::{UnitQuaternion, Vector3};
use talus_engine::body::Block;
use talus_engine::config::{Config, Kappa, PlaneConfig, SolverConfig};
use talus_engine::sim::Simulation;
use talus_engine::solver::clarabel::QpStatus;
use talus_engine::solver::friction::{FrictionConfig, FrictionLaw};

const G: f64 = 9.81;

fn solvers() -> [(&'static str, SolverConfig); 2] {
    let nlgs: SolverConfig =
        serde_json::from_str(r#"{"method": "nlgs"}"#).expect("nlgs with its defaults");
    [
        (
            "clarabel",
            SolverConfig::Clarabel { tolerance: 1e-9, max_iterations: 200, dense_max_bodies: 0 },
        ),
        ("nlgs", nlgs),
    ]
}

/// Nine 1 m cubes at a pitch of 4 m and a 10 m cube on them, on the plane through the
/// origin inclined at θ about y (θ = 0: flat). Returns the blocks and the down-slope
/// direction.
fn stack(theta: f64) -> (Vec<Block>, Vector3<f64>, Vector3<f64>) {
    let e1 = Vector3::new(theta.cos(), 0.0, theta.sin());
    let e2 = Vector3::y();
    let n = Vector3::new(-theta.sin(), 0.0, theta.cos());
    let rot = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), -theta);
    let mut blocks = Vec::new();
    let mut id = 0;
    for i in -1..=1 {
        for j in -1..=1 {
            let p = e1 * (4.0 * i as f64) + e2 * (4.0 * j as f64) + n * 0.5;
            blocks.push(Block::new(id, 1.0, 1.0, 1.0, 2700.0, p, rot));
            id += 1;
        }
    }
    blocks.push(Block::new(id, 10.0, 10.0, 10.0, 2700.0, n * 6.0, rot));
    (blocks, -e1, n)
}

fn simulation(theta: f64, mu: (f64, f64), solver: SolverConfig) -> (Simulation, Vector3<f64>) {
    let (blocks, down, n) = stack(theta);
    let config = Config {
        dt: 1e-3,
        steps: Some(1),
        kappa: Kappa::Restitution { e: 0.0, tangential_ratio: 0.0 },
        planes: vec![PlaneConfig { point: [0.0; 3], normal: [n.x, n.y, n.z] }],
        friction: FrictionConfig {
            block_terrain: Some(FrictionLaw::Coulomb(mu.0)),
            block_block: Some(FrictionLaw::Coulomb(mu.1)),
            slip_credit: true,
        },
        solver,
        ..Config::default()
    };
    let statics = talus_engine::driver::statics(&config, None);
    let sim: Simulation = Simulation::new(config, blocks, statics).expect("simulation");
    (sim, down)
}

/// Advance `steps`, asserting every island's answer certified; returns the fallbacks.
fn advance(sim: &mut Simulation, steps: usize, what: &str) -> usize {
    let mut fallbacks = 0;
    for k in 0..steps {
        let (_, d) = sim.advance();
        assert_eq!(d.jump.status, QpStatus::Solved, "{what}: step {k}: {:?}", d.jump.status);
        fallbacks += usize::from(d.jump.fallback);
    }
    fallbacks
}

#[test]
fn a_heavy_block_rests_on_a_bed_of_light_ones() {
    for (name, solver) in solvers() {
        let (mut sim, _) = simulation(0.0, (0.6, 0.6), solver);
        let start: Vec<Vector3<f64>> = sim.blocks.iter().map(|b| b.pos).collect();
        let fallbacks = advance(&mut sim, 2000, name);
        let big = sim.blocks.last().unwrap();
        let sink = start.last().unwrap().z - big.pos.z;
        let drift =
            sim.blocks.iter().zip(&start).map(|(b, p)| (b.pos - p).xy().norm()).fold(0.0, f64::max);
        let speed = sim.blocks.iter().map(|b| b.vel.norm()).fold(0.0, f64::max);
        let tilt = big.rot.angle();
        println!(
            "{name}: after 2 s the 10 m cube sank {sink:.2e} m, largest horizontal drift {drift:.2e} m, speed {speed:.2e} m/s, tilt {tilt:.2e} rad; {fallbacks} fallback steps"
        );
        assert!(sink.abs() < 2e-3, "{name}: sank {sink} m");
        assert!(drift < 1e-4 && speed < 1e-3 && tilt < 1e-5, "{name}: {drift} {speed} {tilt}");
    }
}

#[test]
fn a_heavy_stack_rests_on_a_slope_below_the_friction_angle() {
    let theta = 20f64.to_radians();
    for (name, solver) in solvers() {
        let (mut sim, down) = simulation(theta, (0.6, 0.6), solver);
        let start: Vec<Vector3<f64>> = sim.blocks.iter().map(|b| b.pos).collect();
        let fallbacks = advance(&mut sim, 2000, name);
        let slid =
            sim.blocks.iter().zip(&start).map(|(b, p)| (b.pos - p).dot(&down)).fold(0.0, f64::max);
        let speed = sim.blocks.iter().map(|b| b.vel.norm()).fold(0.0, f64::max);
        println!(
            "{name}: on 20° with μ = 0.6, after 2 s the stack slid {slid:.2e} m down-slope at most, speed {speed:.2e} m/s; {fallbacks} fallback steps"
        );
        assert!(slid < 1e-3 && speed < 1e-3, "{name}: slid {slid} m, speed {speed} m/s");
    }
}

#[test]
fn a_heavy_stack_slides_together_at_the_closed_form_rate() {
    let theta = 30f64.to_radians();
    let (mu_ground, mu_blocks) = (0.2, 0.9);
    let a = G * (theta.sin() - mu_ground * theta.cos());
    for (name, solver) in solvers() {
        let (mut sim, down) = simulation(theta, (mu_ground, mu_blocks), solver);
        let steps = 500;
        let fallbacks = advance(&mut sim, steps, name);
        let t = steps as f64 * 1e-3;
        let v: Vec<f64> = sim.blocks.iter().map(|b| b.vel.dot(&down)).collect();
        let big = *v.last().unwrap();
        let spread = v.iter().map(|x| (x - big).abs()).fold(0.0, f64::max);
        println!(
            "{name}: on 30° (μ ground 0.2, blocks 0.9) after {t} s the 10 m cube slides at {big:.4} m/s, closed form {:.4} m/s ({:+.2} %); blocks differ by {spread:.2e} m/s; {fallbacks} fallback steps",
            a * t,
            100.0 * (big / (a * t) - 1.0)
        );
        assert!((big / (a * t) - 1.0).abs() < 0.01, "{name}: {big} vs {}", a * t);
        assert!(spread < 0.01 * a * t, "{name}: the stack does not slide as one ({spread} m/s)");
    }
}
