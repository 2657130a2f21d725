//! The result does not depend on the order of the bodies (and hence of the contacts the
//! real detection path produces): the thesis heap run with its blocks reversed and
//! shuffled gives the same trajectories, block by block, with the penetration corrected on
//! the predicted gaps (the default) and on the gaps detected after the motion.

use crate::common as heap;
use talus_engine::solver::clarabel::QpStatus;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use talus_engine::body::Block;
use talus_engine::config::{SeparationMethod, SolverConfig};
use talus_engine::driver::statics;
use talus_engine::sim::Simulation;

fn run(blocks: Vec<Block>, steps: u64, method: SeparationMethod) -> (Vec<Block>, u64) {
    let solver = SolverConfig::Warm {
        tolerance: 1e-10,
        max_iterations: 50,
        fallback_tolerance: 1e-10,
        dense_max_bodies: talus_engine::config::DENSE_MAX_BODIES,
    };
    let mut config = heap::heap_config(steps, solver);
    config.separation.method = method;
    let st = statics(&config, None);
    let mut sim = Simulation::new(config, blocks, st).expect("simulation");
    let mut contacts = 0u64;
    for _ in 0..steps {
        let (_, d) = sim.advance();
        assert_eq!(d.jump.status, QpStatus::Solved);
        contacts += (d.jump.contacts_block_block + d.jump.contacts_block_plane) as u64;
    }
    let mut out = sim.blocks.clone();
    out.sort_by_key(|b| b.id);
    (out, contacts)
}

#[test]
fn heap_is_independent_of_body_order() {
    independent_of_body_order(700, SeparationMethod::Position);
}

#[test]
fn heap_is_independent_of_body_order_with_the_correction_after_the_motion() {
    independent_of_body_order(700, SeparationMethod::PositionAfterMotion);
}

fn independent_of_body_order(steps: u64, method: SeparationMethod) {
    let blocks = heap::thesis_blocks(&heap::thesis_dir(), 100);
    let (reference, contacts) = run(blocks.clone(), steps, method);
    assert!(contacts > 1000, "{contacts} contacts");
    let mut reversed = blocks.clone();
    reversed.reverse();
    let mut shuffled = blocks;
    shuffled.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(7));
    for (name, order) in [("reversed", reversed), ("shuffled", shuffled)] {
        let (other, _) = run(order, steps, method);
        let mut worst = 0f64;
        for (a, b) in reference.iter().zip(&other) {
            assert_eq!(a.id, b.id);
            let d = (a.pos - b.pos).norm().max((a.vel - b.vel).norm());
            let d = d.max((a.omega - b.omega).norm()).max(a.rot.angle_to(&b.rot));
            worst = worst.max(d);
        }
        eprintln!(
            "{name}: {contacts} contacts, largest difference after {steps} steps {worst:.2e}"
        );
        assert!(worst < 1e-7, "{name}: trajectories differ by {worst:e}");
    }
}
