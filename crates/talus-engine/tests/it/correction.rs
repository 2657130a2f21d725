//! Position post-stabilisation on the gaps detected after the motion
//! (`separation.method = "position_after_motion"`) against the correction on the gaps
//! predicted before it (`"position"`): closed forms of one step.

use nalgebra::{UnitQuaternion, Vector3};
use talus_engine::body::Block;
use talus_engine::config::{
    Config, Kappa, MorePasses, PlaneConfig, SeparationConfig, SeparationMethod,
};
use talus_engine::driver::statics;
use talus_engine::sim::Simulation;

const DT: f64 = 0.02;
const G: f64 = 9.81;

fn config(method: SeparationMethod, gravity: f64) -> Config {
    Config {
        dt: DT,
        steps: Some(10),
        gravity,
        kappa: Kappa::Thesis { factor: 0.5 },
        tolerance: 1e-3,
        separation: SeparationConfig { method, beta: 0.8, ..SeparationConfig::default() },
        planes: vec![PlaneConfig { point: [0.0, 0.0, 0.0], normal: [0.0, 0.0, 1.0] }],
        allow_initial_overlap: true,
        ..Config::default()
    }
}

/// A 1 m cube whose bottom face is `gap` above the plane z = 0, falling at `speed`.
fn cube(gap: f64, speed: f64) -> Block {
    let mut b = Block::new(
        1,
        1.0,
        1.0,
        1.0,
        2500.0,
        Vector3::new(0.0, 0.0, 0.5 + gap),
        UnitQuaternion::identity(),
    );
    b.vel = Vector3::new(0.0, 0.0, -speed);
    b
}

fn one_step(method: SeparationMethod, gravity: f64, blocks: Vec<Block>) -> (Vec<Block>, f64) {
    let config = config(method, gravity);
    let st = statics(&config, None);
    let mut sim = Simulation::new(config, blocks, st).expect("simulation");
    let (e, _) = sim.advance();
    (sim.blocks.clone(), e.separation_work)
}

/// A cube 10 cm above the plane falling at 20 m/s meets it within the step (no contact at
/// the start). Free fall takes its bottom to z₁ = 0.1 − Δt(20 + gΔt/2) = −0.30196 m. The
/// predicted correction has nothing to correct; the correction after the motion removes
/// β = 0.8 of the penetration it finds, and neither changes the velocity.
#[test]
fn a_penetration_that_no_contact_foresaw_is_corrected_after_the_motion() {
    let z1 = 0.1 - DT * (20.0 + G * DT / 2.0);
    let v1 = -20.0 - G * DT;
    let (predicted, w_predicted) = one_step(SeparationMethod::Position, G, vec![cube(0.1, 20.0)]);
    let bottom = predicted[0].pos.z - 0.5;
    assert!((bottom - z1).abs() < 1e-12, "free fall: bottom at {bottom} m, expected {z1} m");
    assert_eq!(w_predicted, 0.0);

    let (after, work) = one_step(SeparationMethod::PositionAfterMotion, G, vec![cube(0.1, 20.0)]);
    let b = &after[0];
    let bottom = b.pos.z - 0.5;
    let expected = 0.2 * z1;
    assert!((bottom - expected).abs() < 1e-9, "bottom at {bottom} m, expected {expected} m");
    assert!((b.vel.z - v1).abs() < 1e-12, "velocity {} m/s, expected {v1} m/s", b.vel.z);
    assert!(b.omega.norm() < 1e-12 && b.pos.xy().norm() < 1e-12, "the lift is straight up");
    // The work of the correction is the potential energy it adds.
    let lift = b.mass * G * (-0.8 * z1);
    assert!((work - lift).abs() < 1e-9 * lift, "correction work {work} J, expected {lift} J");
}

/// The same fall with `passes` = 1, 2, 3: each pass detects the cube where the previous
/// one left it and removes β = 0.8 of what remains, so the bottom ends at 0.2^passes of
/// the free-fall penetration, the velocity untouched, and the work is the potential energy
/// of the whole lift. More than one pass is refused with the other methods, and none at all.
#[test]
fn each_pass_after_the_motion_removes_beta_of_what_the_last_one_left() {
    let z1 = 0.1 - DT * (20.0 + G * DT / 2.0);
    for passes in 1..=3 {
        let mut config = config(SeparationMethod::PositionAfterMotion, G);
        config.separation.passes = passes;
        let st = statics(&config, None);
        let mut sim = Simulation::new(config, vec![cube(0.1, 20.0)], st).expect("simulation");
        let (e, _) = sim.advance();
        let b = &sim.blocks[0];
        let left = 0.2f64.powi(passes as i32);
        let (bottom, expected) = (b.pos.z - 0.5, left * z1);
        assert!(
            (bottom - expected).abs() < 1e-9,
            "{passes} passes: bottom {bottom} m, expected {expected} m"
        );
        assert!((b.vel.z + 20.0 + G * DT).abs() < 1e-12, "{passes} passes: velocity {}", b.vel.z);
        let lift = b.mass * G * (1.0 - left) * -z1;
        let work = e.separation_work;
        assert!(
            (work - lift).abs() < 1e-9 * lift,
            "{passes} passes: work {work} J, expected {lift} J"
        );
    }
    for (method, passes) in [
        (SeparationMethod::Position, 2),
        (SeparationMethod::Velocity, 2),
        (SeparationMethod::PositionAfterMotion, 0),
    ] {
        let mut config = config(method, G);
        config.separation.passes = passes;
        let st = statics(&config, None);
        let err = Simulation::new(config, vec![cube(0.1, 20.0)], st).err().expect("refused");
        assert!(err.to_string().contains("passes"), "{method:?}, {passes} passes: {err}");
    }
}

/// The same fall with one pass and `more_passes`: further passes run while the cube is
/// deeper than `deeper_than`, and stop at the first that finds it within it, or at
/// `max_passes`. With `deeper_than` between 0.2³ and 0.2² of the free-fall penetration
/// the cube ends at 0.2³ of it (three passes), with `max_passes` = 2 at 0.2², and with a
/// `deeper_than` above the whole penetration at 0.2 (the first pass alone). `more_passes`
/// is refused with the other methods, a negative depth, or `max_passes` ≤ `passes`.
#[test]
fn more_passes_run_while_a_contact_is_deeper_than_asked() {
    let z1 = 0.1 - DT * (20.0 + G * DT / 2.0);
    let depth = -z1;
    for (deeper_than, max_passes, passes_run) in
        [(2.0 * 0.008 * depth, 8, 3), (2.0 * 0.008 * depth, 2, 2), (1.5 * depth, 8, 1)]
    {
        let mut config = config(SeparationMethod::PositionAfterMotion, G);
        config.separation.more_passes = Some(MorePasses { deeper_than, max_passes });
        let st = statics(&config, None);
        let mut sim = Simulation::new(config, vec![cube(0.1, 20.0)], st).expect("simulation");
        sim.advance();
        let b = &sim.blocks[0];
        let (bottom, expected) = (b.pos.z - 0.5, 0.2f64.powi(passes_run) * z1);
        assert!(
            (bottom - expected).abs() < 1e-9,
            "deeper_than {deeper_than} m, max_passes {max_passes}: bottom {bottom} m, \
             expected {expected} m ({passes_run} passes)"
        );
    }
    for (method, more) in [
        (SeparationMethod::Position, MorePasses { deeper_than: 0.01, max_passes: 4 }),
        (SeparationMethod::PositionAfterMotion, MorePasses { deeper_than: -0.01, max_passes: 4 }),
        (SeparationMethod::PositionAfterMotion, MorePasses { deeper_than: 0.01, max_passes: 1 }),
    ] {
        let mut config = config(method, G);
        config.separation.more_passes = Some(more);
        let st = statics(&config, None);
        let err = Simulation::new(config, vec![cube(0.1, 20.0)], st).err().expect("refused");
        assert!(err.to_string().contains("more_passes"), "{method:?}, {more:?}: {err}");
    }
}

/// Two equal cubes overlapping by 0.2 m, at rest, without gravity: the correction after
/// the motion moves each by half of β × 0.2 m along the pair's normal, and leaves them at
/// rest (it injects no kinetic energy; the jump leaves them at rest to the solver's
/// tolerance).
#[test]
fn two_overlapping_blocks_are_moved_apart_by_beta_of_the_overlap() {
    let mut a = cube(5.0, 0.0);
    let mut b = cube(5.0, 0.0);
    a.id = 1;
    b.id = 2;
    b.pos.x += 1.0 - 0.2;
    let (x0a, x0b) = (a.pos.x, b.pos.x);
    let (after, _) = one_step(SeparationMethod::PositionAfterMotion, 0.0, vec![a, b]);
    let (da, db) = (after[0].pos.x - x0a, after[1].pos.x - x0b);
    assert!((da + 0.08).abs() < 1e-9 && (db - 0.08).abs() < 1e-9, "moved by {da} m and {db} m");
    for blk in &after {
        assert!(blk.vel.norm() < 1e-5 && blk.omega.norm() < 1e-5, "{:?} {:?}", blk.vel, blk.omega);
        assert!((blk.pos.z - 5.5).abs() < 1e-12 && blk.pos.y.abs() < 1e-12);
    }
}

/// A column of ten 1 m cubes at rest without gravity, the lowest 0.1 m into the plane and
/// each 0.1 m into the one below it. With β = 1 the mass-weighted smallest displacement
/// clearing every overlap lifts the k-th cube by exactly 0.1 k m (each constraint tight).
/// Gauss–Seidel carries the lift up the chain one cube at a time, so 20 sweeps leave
/// overlap behind; 2000 reach the closed form, and so does the `tolerance` mode (updates
/// below it skipped, contacts of unmoved blocks not solved again, early stop) to within
/// the chain's ten contacts times its tolerance.
#[test]
fn a_column_of_overlapping_cubes_is_lifted_by_its_cumulative_overlap() {
    const N: usize = 10;
    let lifts = |iterations: u32, tolerance: f64| -> Vec<f64> {
        let blocks: Vec<Block> = (0..N)
            .map(|k| {
                let mut b = cube(-0.1 + 0.9 * k as f64, 0.0);
                b.id = k as u32 + 1;
                b
            })
            .collect();
        let z0: Vec<f64> = blocks.iter().map(|b| b.pos.z).collect();
        let config = Config {
            separation: SeparationConfig {
                method: SeparationMethod::PositionAfterMotion,
                beta: 1.0,
                iterations,
                tolerance,
                ..SeparationConfig::default()
            },
            ..config(SeparationMethod::PositionAfterMotion, 0.0)
        };
        let st = statics(&config, None);
        let mut sim = Simulation::new(config, blocks, st).expect("simulation");
        sim.advance();
        sim.blocks.iter().zip(z0).map(|(b, z)| b.pos.z - z).collect()
    };
    let worst = |lift: &[f64]| {
        lift.iter().enumerate().map(|(k, d)| (d - 0.1 * (k + 1) as f64).abs()).fold(0.0, f64::max)
    };
    let few = lifts(20, 0.0);
    assert!(worst(&few) > 0.01, "20 sweeps should not reach the top: {few:?}");
    let full = lifts(2000, 0.0);
    assert!(worst(&full) < 1e-9, "lifts {full:?}");
    let tolerant = lifts(2000, 1e-7);
    assert!(worst(&tolerant) < N as f64 * 1e-7, "lifts {tolerant:?}");
}
