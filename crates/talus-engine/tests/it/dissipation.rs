//! Clausius–Duhem on every step of the thesis heap: the dissipation of each jump,
//! D = W_s − P·x (step.rs), is non-negative up to roundoff of the energy scale.

use crate::common as heap;
use talus_engine::solver::clarabel::QpStatus;

use talus_engine::config::SolverConfig;
use talus_engine::driver::statics;
use talus_engine::sim::Simulation;

#[test]
fn dissipation_is_non_negative_on_every_step() {
    let blocks = heap::thesis_blocks(&heap::thesis_dir(), 100);
    let steps = 1000;
    let solver = SolverConfig::Warm {
        tolerance: 1e-9,
        max_iterations: 50,
        fallback_tolerance: 1e-9,
        dense_max_bodies: talus_engine::config::DENSE_MAX_BODIES,
    };
    let config = heap::heap_config(steps, solver);
    let st = statics(&config, None);
    let mut sim = Simulation::new(config, blocks, st).expect("simulation");
    let (mut worst, mut total) = (0f64, 0f64);
    for _ in 0..steps {
        let (e, d) = sim.advance();
        assert_eq!(d.jump.status, QpStatus::Solved);
        // Energy scale of the step: kinetic energy after it plus the work done on it.
        let scale = e.kinetic_translational
            + e.kinetic_rotational
            + d.jump.gravity_work.abs()
            + d.jump.separation_work;
        worst = worst.min(e.dissipated / scale.max(1e-300));
        total += e.dissipated;
    }
    eprintln!(
        "most negative dissipation / energy scale: {worst:.2e}; total dissipated {total:.3e} J"
    );
    assert!(total > 0.0);
    assert!(worst >= -1e-10, "dissipation {worst:e} of the step's energy scale");
}
