//! The thesis heap N = 100 (see `common`): 1000 steps with Clarabel, every QP solved,
//! penetration bounded, a heap forms.

use crate::common::{heap_config, state_hash, thesis_blocks, thesis_dir};
use nalgebra::Vector3;
use talus_engine::config::SolverConfig;
use talus_engine::driver::statics;
use talus_engine::sim::Simulation;

#[test]
fn thesis_heap_100_forms_a_heap() {
    let dir = thesis_dir();
    let blocks = thesis_blocks(&dir, 100);
    let config = heap_config(
        1000,
        SolverConfig::Clarabel { tolerance: 1e-9, max_iterations: 200, dense_max_bodies: 0 },
    );
    let st = statics(&config, None);
    let mut sim = Simulation::new(config, blocks, st).expect("simulation");
    let overlaps = sim.overlaps();
    eprintln!("initial overlaps deeper than 1 mm: {}", overlaps.len());
    let mut max_pen: f64 = 0.0;
    let mut max_contacts = 0;
    let mut min_d = f64::INFINITY;
    let mut max_balance: f64 = 0.0;
    for _ in 0..1000 {
        let (e, d) = sim.advance();
        assert!(d.jump.failed.is_empty(), "step {}: QP not solved ({})", d.step, d.jump.status);
        if d.step > 50 {
            max_pen = max_pen.max(d.jump.max_penetration);
        }
        min_d = min_d.min(e.dissipated);
        max_balance = max_balance.max(e.balance_error.abs());
        max_contacts = max_contacts.max(d.jump.contacts_block_block + d.jump.contacts_block_plane);
    }
    let mut z: Vec<f64> = sim.blocks.iter().map(|b| b.pos.z).collect();
    z.sort_by(f64::total_cmp);
    let c: Vector3<f64> =
        sim.blocks.iter().map(|b| b.pos).sum::<Vector3<f64>>() / sim.blocks.len() as f64;
    let mut r: Vec<f64> = sim.blocks.iter().map(|b| (b.pos - c).xy().norm()).collect();
    r.sort_by(f64::total_cmp);
    let e = sim.energies(0.0, 0.0);
    eprintln!(
        "N = 100 after 1 s: median centre height {:.3} m, heap radius (90th pct) {:.3} m, max penetration after step 50 {:.4} m, \
         max contacts {max_contacts}, min step dissipation {min_d:.3e} J, kinetic {:.3} J, max |balance error| {max_balance:.3e} J",
        z[50],
        r[90],
        max_pen,
        e.kinetic_translational + e.kinetic_rotational
    );
    assert!(sim.blocks.iter().all(|b| b.pos.z > 0.0), "a block fell through the ground");
    assert!(max_pen < 0.05, "max penetration {max_pen} m");
    assert!(z[50] < 1.5, "median height {} m: no heap", z[50]);
    assert!(r[90] < 4.0, "heap radius {} m", r[90]);
}

/// The final state of a short deterministic run, pinned: the thesis heap N = 100, 700 steps
/// (the blocks land from step ~400, so contacts, the solvers and the position correction
/// are all exercised) with the warm solver (the thesis-heap site's). An accidental change
/// in the engine's arithmetic changes this hash at once.
#[test]
fn golden_run_is_pinned() {
    const GOLDEN: u64 = 0xd9c8_35f5_15f3_60aa;
    let blocks = thesis_blocks(&thesis_dir(), 100);
    const STEPS: u64 = 700;
    let config = heap_config(
        STEPS,
        SolverConfig::Warm {
            tolerance: 1e-9,
            max_iterations: 200,
            fallback_tolerance: 1e-9,
            dense_max_bodies: talus_engine::config::DENSE_MAX_BODIES,
        },
    );
    let st = statics(&config, None);
    let mut sim = Simulation::new(config, blocks, st).expect("simulation");
    let mut contacts = 0;
    for _ in 0..STEPS {
        let (_, d) = sim.advance();
        contacts += d.jump.contacts_block_block + d.jump.contacts_block_plane;
    }
    assert!(contacts > 1000, "{contacts} contacts: the run must exercise the jump");
    let h = state_hash(&sim.blocks);
    assert_eq!(
        h, GOLDEN,
        "the engine's arithmetic changed: final-state hash {h:#x} instead of {GOLDEN:#x}. If the change is intended, set GOLDEN to {h:#x} and say why in the commit message"
    );
}
