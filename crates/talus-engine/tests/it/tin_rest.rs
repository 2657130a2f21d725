//! A block resting on a triangulated terrain (several triangles, a TIN vertex under the
//! block's face, triangle edges crossing it) through the real detection path does not sink
//! over 10⁴ steps, with the warm solver (every QP solved without fallback).

use nalgebra::{UnitQuaternion, Vector3};
use talus_engine::body::Block;
use talus_engine::config::{Config, Kappa, SolverConfig};
use talus_engine::geometry::colliders::{Statics, TinCollider};
use talus_engine::sim::Simulation;
use talus_engine::solver::clarabel::QpStatus;

#[test]
fn resting_block_on_tin_does_not_sink() {
    // 3 × 3 vertices on [−2, 2]², z = 0, 8 triangles; the block's face covers the
    // centre vertex and parts of four triangles.
    let mut verts = Vec::new();
    for j in 0..3 {
        for i in 0..3 {
            verts.push(Vector3::new(-2.0 + 2.0 * i as f64, -2.0 + 2.0 * j as f64, 0.0));
        }
    }
    let mut tris = Vec::new();
    for j in 0..2u32 {
        for i in 0..2u32 {
            let v = j * 3 + i;
            tris.push([v, v + 1, v + 4]);
            tris.push([v, v + 4, v + 3]);
        }
    }
    let tin = TinCollider::new(verts, tris).expect("tin");
    let block = Block::new(
        1,
        1.0,
        0.8,
        0.5,
        2500.0,
        Vector3::new(0.1, -0.05, 0.25),
        UnitQuaternion::from_euler_angles(0.0, 0.0, 0.3),
    );
    let m = block.mass;
    let config = Config {
        dt: 1e-3,
        steps: Some(10_000),
        kappa: Kappa::Raw { normal: 0.5 * m, tangential: 0.5 * m },
        tolerance: 1e-3,
        solver: SolverConfig::Warm {
            tolerance: 1e-9,
            max_iterations: 50,
            fallback_tolerance: 1e-9,
            dense_max_bodies: talus_engine::config::DENSE_MAX_BODIES,
        },
        ..Config::default()
    };
    let statics = Statics { tin: Some(tin), planes: Vec::new() };
    let mut sim = Simulation::new(config, vec![block], statics).expect("simulation");
    let (mut zmin, mut fallbacks) = (f64::INFINITY, 0);
    for _ in 0..10_000 {
        let (e, d) = sim.advance();
        assert_eq!(d.jump.status, QpStatus::Solved);
        assert!(d.jump.contacts_block_terrain >= 3, "{} contacts", d.jump.contacts_block_terrain);
        fallbacks += d.jump.fallback as usize;
        assert!(e.dissipated >= -1e-9 * m, "dissipation {}", e.dissipated);
        zmin = zmin.min(sim.blocks[0].pos.z);
    }
    let b = &sim.blocks[0];
    assert_eq!(fallbacks, 0);
    assert!(zmin > 0.25 - 1e-6, "sank to z = {zmin}");
    assert!((b.pos.z - 0.25).abs() < 1e-6, "z = {}", b.pos.z);
    assert!(b.vel.norm() < 1e-6 && b.omega.norm() < 1e-6, "v = {}, ω = {}", b.vel, b.omega);
}
