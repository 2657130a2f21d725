//! The dense solver of small islands ([`talus_engine::solver::dense`]): agreement with Clarabel (at
//! a tight tolerance) on every small-island QP of real scenarios, unit cases with closed
//! forms, redundant and duplicate contacts, and the cases that must fall back.

use crate::common;
use nalgebra::{DMatrix, DVector, Matrix3, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use talus_engine::body::Block;
use talus_engine::config::{Config, Kappa, SolverConfig};
use talus_engine::driver::statics;
use talus_engine::geometry::colliders::{Statics, TinCollider};
use talus_engine::geometry::contact::{Contact, Other};
use talus_engine::geometry::detect::DetectTimings;
use talus_engine::rotation::RotationModel;
use talus_engine::sim::Simulation;
use talus_engine::solver::assembly::{JumpBody, JumpContact, Qp, assemble};
use talus_engine::solver::clarabel::QpStatus;
use talus_engine::solver::clarabel::{QpOutcome, SolverUsed, kkt_residuals, solve_clarabel};
use talus_engine::solver::dense::solve_dense;
use talus_engine::solver::warm::WarmStart;
use talus_engine::step::{Correction, KappaLaw, StepParams, prepare, solve_qp, step_with_contacts};

/// Clarabel's solution at the tightest tolerance it reaches (`Solved`) among 1e-12, 1e-11,
/// 1e-10 (at 1e-12 it sometimes stops early with `AlmostSolved`).
fn reference(qp: &Qp) -> QpOutcome {
    let mut last = None;
    for tol in [1e-12, 1e-11, 1e-10] {
        let o = solve_clarabel(qp, tol, 400);
        if o.solved {
            return o;
        }
        last = Some(o.status);
    }
    panic!("clarabel: {last:?}");
}

/// A rigorous bound on ‖x̂ − x*‖₂ for a candidate (x̂, λ̂ ≥ 0) of the strongly convex QP
/// (as in tests/warm.rs): with e = Hx̂ − p − Cᵀλ̂ and G = Σ λ̂_k |C_k x̂ − r_k|,
/// ‖x̂ − x*‖_H ≤ ‖e‖/√μ + √G and ‖x̂ − x*‖₂ ≤ ‖x̂ − x*‖_H/√μ, μ ≤ λ_min(H).
fn error_bound(qp: &Qp, mu: f64, x: &[f64], lambda: &[f64]) -> f64 {
    let hx = qp.h_mul(x);
    let ctl = qp.ct_mul(lambda);
    let e2 = (0..qp.n()).map(|i| (hx[i] - qp.p[i] - ctl[i]).powi(2)).sum::<f64>().sqrt();
    let cx = qp.c_mul(x);
    let g: f64 = (0..qp.m()).map(|k| lambda[k].max(0.0) * (cx[k] - qp.r[k]).abs()).sum();
    (e2 / mu.sqrt() + g.sqrt()) / mu.sqrt()
}

fn smallest_eigenvalue(bodies: &[JumpBody]) -> f64 {
    bodies
        .iter()
        .map(|b| 2.0 * b.mass.min(b.inertia.symmetric_eigen().eigenvalues.min()))
        .fold(f64::INFINITY, f64::min)
}

/// Largest difference |x_dense − x_ref| relative to max(1, max |x_ref|).
fn rel_diff(x: &[f64], reference: &[f64]) -> f64 {
    let scale = reference.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    x.iter().zip(reference).fold(0.0f64, |a, (p, q)| a.max((p - q).abs())) / scale
}

/// The dense solution meets the KKT conditions to 1e-11 relative to the data's scales
/// (roundoff: 100 times tighter than the engine's 1e-9).
fn assert_kkt(qp: &Qp, o: &QpOutcome, what: &str) {
    let (prim, dual, comp, lmin) = kkt_residuals(qp, &o.x, &o.lambda);
    let ps = qp.p.iter().fold(1e-3f64, |a, v| a.max(v.abs()));
    let rs = qp.r.iter().fold(1e-3f64, |a, v| a.max(v.abs()));
    assert!(
        prim <= 1e-11 * rs && dual <= 1e-11 * ps && comp <= 1e-11 * rs * ps && lmin >= 0.0,
        "{what}: dense KKT residuals {prim:e}, {dual:e}, {comp:e}, min λ {lmin:e}"
    );
}

/// Statistics of a comparison over many QPs.
#[derive(Default, Debug)]
struct Agreement {
    checked: usize,
    worst: f64,
    /// QPs where the difference exceeds 1e-8 but is within the two solutions' certified
    /// error bounds (Clarabel's interior point stops short of a degenerate vertex).
    explained: usize,
    worst_explained: f64,
    by_bodies: [usize; 5],
}

impl Agreement {
    /// Compare the dense solver with the reference on one QP; panics on disagreement.
    fn check(&mut self, qp: &Qp, bodies: &[JumpBody], what: &str) {
        let d = solve_dense(qp, 1e-9);
        assert!(
            d.solved,
            "{what}: dense solver refused ({}) a QP of {} bodies",
            d.status,
            bodies.len()
        );
        assert_eq!(d.solver, SolverUsed::Dense);
        assert_kkt(qp, &d, what);
        let r = reference(qp);
        let diff = rel_diff(&d.x, &r.x);
        self.checked += 1;
        self.by_bodies[bodies.len().min(4)] += 1;
        let scale = r.x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
        let mu = smallest_eigenvalue(bodies);
        if diff >= 1e-8 {
            let bound = (error_bound(qp, mu, &d.x, &d.lambda)
                + error_bound(qp, mu, &r.x, &r.lambda))
                / scale;
            assert!(
                diff <= bound,
                "{what}: QP of {} bodies, {} constraints: dense and clarabel differ by {diff:e} (bound {bound:e}); x {:?} vs {:?}",
                bodies.len(),
                qp.m(),
                d.x,
                r.x
            );
            self.explained += 1;
            self.worst_explained = self.worst_explained.max(diff);
        } else {
            self.worst = self.worst.max(diff);
        }
    }
}

// ---------------------------------------------------------------- unit cases

fn body(mass: f64, pos: Vector3<f64>, vel: Vector3<f64>, omega: Vector3<f64>) -> JumpBody {
    JumpBody {
        mass,
        inertia: Matrix3::from_diagonal(&Vector3::new(0.3, 0.5, 0.6)) * mass,
        pos,
        vel,
        omega,
    }
}

fn contact(i: usize, j: Option<usize>, point: Vector3<f64>, normal: Vector3<f64>) -> JumpContact {
    JumpContact { i, j, point, normal, kappa_n: 40.0, kappa_t: 25.0, separation: 0.0 }
}

fn dense_of(qp: &Qp) -> (DMatrix<f64>, DMatrix<f64>) {
    let n = qp.n();
    let h = DMatrix::from_fn(n, n, |i, j| {
        let mut e = vec![0.0; n];
        e[j] = 1.0;
        qp.h_mul(&e)[i]
    });
    let c = DMatrix::from_fn(qp.m(), n, |k, j| {
        let mut e = vec![0.0; n];
        e[j] = 1.0;
        qp.c_mul(&e)[k]
    });
    (h, c)
}

/// One contact: x = H⁻¹(p + c λ) with λ = (r − cᵀH⁻¹p)/(cᵀH⁻¹c) when the contact is
/// pushed (λ > 0), else the unconstrained minimiser H⁻¹p.
#[test]
fn one_contact_matches_closed_form() {
    for (vz, pushed) in [(-2.0, true), (3.0, false)] {
        let b = body(
            5.0,
            Vector3::new(0.0, 0.0, 0.5),
            Vector3::new(0.3, -0.1, vz),
            Vector3::new(0.2, 0.4, -0.3),
        );
        // κ_N below twice the effective mass: the constraint, not κ, stops the approach.
        let ct = JumpContact {
            kappa_n: 2.0,
            kappa_t: 1.0,
            ..contact(
                0,
                None,
                Vector3::new(0.2, -0.1, 0.0),
                Vector3::new(0.1, 0.0, 1.0).normalize(),
            )
        };
        let qp = assemble(&[b], &[ct], 0.00981);
        let (h, c) = dense_of(&qp);
        let hinv = h.clone().try_inverse().expect("H invertible");
        let p = DVector::from_column_slice(&qp.p);
        let x0 = &hinv * &p;
        let cr = c.row(0).transpose();
        let lambda = (qp.r[0] - cr.dot(&x0)) / cr.dot(&(&hinv * &cr));
        assert_eq!(lambda > 0.0, pushed);
        let x = if pushed { &x0 + &hinv * &cr * lambda } else { x0 };
        let o = solve_dense(&qp, 1e-9);
        assert!(o.solved, "{}", o.status);
        assert_kkt(&qp, &o, "one contact");
        assert!(rel_diff(&o.x, x.as_slice()) < 1e-13, "{:?} vs {:?}", o.x, x);
        assert!((o.lambda[0] - lambda.max(0.0)).abs() <= 1e-12 * lambda.abs().max(1.0));
    }
}

/// Four coplanar corners of a face on a plane (rank 3: one is redundant) and the same four
/// listed twice (duplicates): the block falling flat bounces back with u⁺ = e·|u⁻|,
/// e = max(0, (4κ − 2m)/(4κ + 2m)), without spin or sliding, and the multipliers sum to the
/// percussion.
#[test]
fn four_redundant_coplanar_contacts() {
    let m = 8.0;
    let corners = [(-0.5, -0.4), (0.5, -0.4), (0.5, 0.4), (-0.5, 0.4)];
    for duplicate in [false, true] {
        for ratio in [0.1, 0.5, 1.0, 3.0] {
            let mut b = body(
                m,
                Vector3::new(0.0, 0.0, 0.25),
                Vector3::new(0.0, 0.0, -2.0),
                Vector3::zeros(),
            );
            b.inertia = Matrix3::from_diagonal(&Vector3::new(0.6, 1.1, 1.3));
            let kn = ratio * 2.0 * m / 4.0;
            let mut cs: Vec<JumpContact> = corners
                .iter()
                .map(|&(x, y)| JumpContact {
                    kappa_n: kn,
                    kappa_t: 0.3 * kn,
                    ..contact(0, None, Vector3::new(x, y, 0.0), Vector3::z())
                })
                .collect();
            if duplicate {
                cs.extend(cs.clone());
            }
            let qp = assemble(&[b], &cs, 0.0);
            let o = solve_dense(&qp, 1e-9);
            assert!(o.solved, "{}", o.status);
            assert_kkt(&qp, &o, "four corners");
            // Duplicates double the κ acting on the face: n_c = 8.
            let nc = cs.len() as f64;
            let e = ((nc * kn - 2.0 * m) / (nc * kn + 2.0 * m)).max(0.0);
            // x = (u⁺ + u⁻)/2.
            let uz = 2.0 * o.x[2] + 2.0;
            assert!((uz - 2.0 * e).abs() < 1e-12, "ratio {ratio}: u⁺ = {uz}, e = {e}");
            for a in [0, 1, 3, 4, 5] {
                assert!(o.x[a].abs() < 1e-12, "component {a}: {}", o.x[a]);
            }
            // Σλ = m (u⁺ − u⁻) − κ-part: the total normal percussion equals H x − p along z.
            let total: f64 = o.lambda.iter().sum();
            let hx = qp.h_mul(&o.x);
            assert!((total - (hx[2] - qp.p[2])).abs() < 1e-10 * total.abs().max(1.0));
            assert!(o.lambda.iter().filter(|l| **l > 0.0).count() <= 3, "{:?}", o.lambda);
        }
    }
}

/// Two blocks stacked on a plane (8 contacts, 12 unknowns): dense and Clarabel agree; the
/// upper block pushes the lower one down (it does not pull).
#[test]
fn two_block_stack_agrees_with_clarabel() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut agree = Agreement::default();
    for case in 0..200 {
        let mut jitter = || {
            Vector3::new(
                rng.random_range(-0.2..0.2),
                rng.random_range(-0.2..0.2),
                rng.random_range(-0.2..0.2),
            )
        };
        let lower = body(
            10.0,
            Vector3::new(0.0, 0.0, 0.25),
            Vector3::new(0.0, 0.0, -0.5) + jitter(),
            jitter(),
        );
        let upper = body(
            4.0,
            Vector3::new(0.05, 0.0, 0.75),
            Vector3::new(0.0, 0.0, -1.5) + jitter(),
            jitter(),
        );
        let mut cs = Vec::new();
        for &(x, y) in &[(-0.5, -0.4), (0.5, -0.4), (0.5, 0.4), (-0.5, 0.4)] {
            cs.push(contact(0, None, Vector3::new(x, y, 0.0), Vector3::z()));
            cs.push(contact(1, Some(0), Vector3::new(0.05 + 0.8 * x, 0.8 * y, 0.5), Vector3::z()));
        }
        if case % 3 == 0 {
            // Slightly tilted normals: nearly, but not exactly, redundant.
            for c in cs.iter_mut().step_by(3) {
                c.normal = Vector3::new(1e-7, -2e-7, 1.0).normalize();
            }
        }
        let bodies = vec![lower, upper];
        let qp = assemble(&bodies, &cs, 0.00981);
        agree.check(&qp, &bodies, &format!("stack case {case}"));
        let o = solve_dense(&qp, 1e-9);
        // The block–block multipliers push (λ ≥ 0) and the upper block does not sink into the lower.
        let cx = qp.c_mul(&o.x);
        assert!(cx.iter().zip(&qp.r).all(|(a, b)| a - b >= -1e-12 * b.abs().max(1.0)));
    }
    eprintln!("{agree:?}");
}

/// A block pressed between two opposite planes that both demand a separation velocity
/// cannot satisfy them: the dense solver says `PrimalInfeasible`, the configured solver
/// takes over (recorded as a fallback), and the step solves the island again without
/// separation.
#[test]
fn infeasible_island_falls_back() {
    let b = body(3.0, Vector3::zeros(), Vector3::zeros(), Vector3::zeros());
    let cs = vec![
        JumpContact {
            separation: 0.5,
            ..contact(0, None, Vector3::new(0.0, 0.0, -0.2), Vector3::z())
        },
        JumpContact {
            separation: 0.5,
            ..contact(0, None, Vector3::new(0.0, 0.0, 0.2), -Vector3::z())
        },
    ];
    let qp = assemble(&[b], &cs, 0.0);
    let o = solve_dense(&qp, 1e-9);
    assert!(!o.solved);
    assert_eq!(o.status, QpStatus::PrimalInfeasible);
    let solver =
        SolverConfig::Clarabel { tolerance: 1e-9, max_iterations: 200, dense_max_bodies: 2 };
    let f = solve_qp(&solver, &qp, 1, Vec::new);
    assert!(f.fallback, "{f:?}");
    assert_eq!(f.solver, SolverUsed::Clarabel);
    assert!(!f.solved);

    // Through a step: the block wedged between two planes, penetrating both.
    let mut blocks =
        vec![Block::new(1, 1.0, 1.0, 1.0, 1000.0, Vector3::zeros(), UnitQuaternion::identity())];
    let contacts: Vec<Contact> = [(1.0, 0), (-1.0, 1)]
        .iter()
        .flat_map(|&(s, plane)| {
            [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)].map(move |(x, y)| Contact {
                i: 0,
                other: Other::Plane(plane),
                point: Vector3::new(x, y, -0.5 * s),
                normal: Vector3::z() * s,
                gap: -0.01,
            })
        })
        .collect();
    let params = StepParams {
        dt: 1e-3,
        gravity: 9.81,
        kappa: KappaLaw::Global { normal: 100.0, tangential: 100.0 },
        beta: 0.2,
        max_separation: 1.0,
        correction: Correction::Velocity,
        rotation: RotationModel::ConstantOmega,
        gaps: talus_engine::config::ContactGaps::Touching,
        solver,
    };
    let rep = step_with_contacts(&params, &mut blocks, &contacts, &mut WarmStart::default());
    assert!(rep.fallback && rep.failed.is_empty(), "{rep:?}");
    // The retry without separation (always feasible) is solved by the dense solver; the
    // separation velocities did no work.
    assert_eq!(rep.solver, "dense");
    assert_eq!(rep.separation_work, 0.0);
    assert!(blocks[0].vel.norm() < 1e-9, "v = {}", blocks[0].vel);
}

/// H that is not positive definite (a body of zero inertia about one axis) is refused
/// (`NotPositiveDefinite`) and goes to the configured solver.
#[test]
fn singular_h_falls_back() {
    let mut b = body(2.0, Vector3::zeros(), Vector3::new(0.0, 0.0, -1.0), Vector3::zeros());
    b.inertia = Matrix3::from_diagonal(&Vector3::new(1.0, 1.0, 0.0));
    let mut ct = contact(0, None, Vector3::new(0.0, 0.0, -0.5), Vector3::z());
    ct.kappa_t = 0.0;
    let qp = assemble(&[b], &[ct], 0.0);
    let o = solve_dense(&qp, 1e-9);
    assert_eq!(o.status, QpStatus::NotPositiveDefinite);
    let solver = SolverConfig::Warm {
        tolerance: 1e-9,
        max_iterations: 50,
        fallback_tolerance: 1e-9,
        dense_max_bodies: 1,
    };
    let f = solve_qp(&solver, &qp, 1, || vec![0.0]);
    assert!(f.fallback);
    assert_ne!(f.solver, SolverUsed::Dense);
}

/// `dense_max_bodies` bounds the islands the dense solver takes; 0 leaves every QP to the
/// method (`clarabel`'s default: Clarabel solves every QP). The engine's default method is
/// `nlgs` at 1e-6.
#[test]
fn threshold_selects_the_solver() {
    let b = body(5.0, Vector3::new(0.0, 0.0, 0.5), Vector3::new(0.0, 0.0, -1.0), Vector3::zeros());
    let ct = contact(0, None, Vector3::new(0.0, 0.0, 0.0), Vector3::z());
    let qp = assemble(&[b], &[ct], 0.0);
    let with = |d: u32| SolverConfig::Clarabel {
        tolerance: 1e-9,
        max_iterations: 200,
        dense_max_bodies: d,
    };
    assert_eq!(solve_qp(&with(0), &qp, 1, Vec::new).solver, SolverUsed::Clarabel);
    assert_eq!(solve_qp(&with(1), &qp, 1, Vec::new).solver, SolverUsed::Dense);
    assert_eq!(solve_qp(&with(1), &qp, 2, Vec::new).solver, SolverUsed::Clarabel);
    match Config::default().solver {
        SolverConfig::Nlgs { tolerance, fallback_tolerance, .. } => {
            assert_eq!((tolerance, fallback_tolerance), (1e-6, 1e-9))
        }
        s => panic!("default solver {s:?}"),
    }
    // A site file without `solver`, and `solver = { method = "nlgs" }`, give that default.
    let c: Config = serde_json::from_str("{}").unwrap();
    assert_eq!(c.solver, SolverConfig::default());
    let c: SolverConfig = serde_json::from_str(r#"{"method": "nlgs"}"#).unwrap();
    assert_eq!(c, SolverConfig::default());
    let c: SolverConfig =
        serde_json::from_str(r#"{"method": "clarabel", "tolerance": 1e-9, "max_iterations": 200}"#)
            .unwrap();
    assert_eq!(c, with(0));
    // Site-file spelling: the option is optional (clarabel: 0; warm: the default).
    let c: SolverConfig =
        serde_json::from_str(r#"{"method": "warm", "tolerance": 1e-9, "max_iterations": 50, "fallback_tolerance": 1e-9}"#)
            .unwrap();
    assert_eq!(c.dense_max_bodies(), talus_engine::config::DENSE_MAX_BODIES as usize);
    let c: SolverConfig = serde_json::from_str(
        r#"{"method": "clarabel", "tolerance": 1e-9, "max_iterations": 50, "dense_max_bodies": 3}"#,
    )
    .unwrap();
    assert_eq!(c.dense_max_bodies(), 3);
}

// ---------------------------------------------------------------- real scenarios

/// Every island of at most 4 bodies over 1000 steps of the thesis heap N = 100 (driven by
/// Clarabel): the dense solution agrees with Clarabel's to 1e-8 relative (or within the
/// certified error bounds when Clarabel stops short of a degenerate vertex).
/// Runs `sim` for `steps` steps (the method's own solver advances it) and checks every
/// island of at most 4 bodies against Clarabel on the way.
fn replay_small_islands(mut sim: Simulation, steps: u64) -> Agreement {
    let mut agree = Agreement::default();
    for step in 0..steps {
        let contacts = sim.detect(&mut DetectTimings::default());
        let prep = prepare(&sim.params, &sim.blocks, &contacts);
        for isl in prep.islands.iter().filter(|i| i.bodies.len() <= 4) {
            agree.check(&isl.qp, &isl.bodies, &format!("step {step}"));
        }
        let rep = step_with_contacts(&sim.params, &mut sim.blocks, &contacts, &mut sim.warm);
        assert!(rep.failed.is_empty(), "step {step}: {:?}", rep.failed);
    }
    agree
}

#[test]
fn dense_agrees_with_clarabel_on_the_heap() {
    let blocks = common::thesis_blocks(&common::thesis_dir(), 100);
    let steps = 1000;
    let config = common::heap_config(
        steps,
        SolverConfig::Clarabel { tolerance: 1e-9, max_iterations: 200, dense_max_bodies: 0 },
    );
    let st = statics(&config, None);
    let sim = Simulation::new(config, blocks, st).expect("simulation");
    let agree = replay_small_islands(sim, steps);
    eprintln!("heap N=100, {steps} steps: {agree:?}");
    assert!(agree.by_bodies[1] > 100 && agree.by_bodies[2] > 20, "{agree:?}");
}

/// Blocks of random sizes and orientations dropped on a bumpy TIN in a loose cluster
/// (islands of one block on up to three triangles, and pairs): same agreement.
#[test]
fn dense_agrees_with_clarabel_on_blocks_dropped_on_a_tin() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut verts = Vec::new();
    let k = 9;
    for j in 0..k {
        for i in 0..k {
            let z = rng.random_range(-0.15..0.15);
            verts.push(Vector3::new(-4.0 + i as f64, -4.0 + j as f64, z));
        }
    }
    let mut tris = Vec::new();
    for j in 0..(k - 1) as u32 {
        for i in 0..(k - 1) as u32 {
            let v = j * k as u32 + i;
            tris.push([v, v + 1, v + k as u32 + 1]);
            tris.push([v, v + k as u32 + 1, v + k as u32]);
        }
    }
    let tin = TinCollider::new(verts, tris).expect("tin");
    let blocks: Vec<Block> = (0..24)
        .map(|id| {
            let pos = Vector3::new(
                rng.random_range(-2.5..2.5),
                rng.random_range(-2.5..2.5),
                0.6 + rng.random_range(0.0..1.5),
            );
            let rot = UnitQuaternion::from_euler_angles(
                rng.random_range(-0.6..0.6),
                rng.random_range(-0.6..0.6),
                rng.random_range(-3.0..3.0),
            );
            let mut b = Block::new(
                id,
                rng.random_range(0.3..0.7),
                rng.random_range(0.3..0.7),
                rng.random_range(0.2..0.5),
                2600.0,
                pos,
                rot,
            );
            b.vel = Vector3::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0), -1.0);
            b.omega = Vector3::new(rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0), 0.0);
            b
        })
        .collect();
    let config = Config {
        dt: 2e-3,
        steps: Some(600),
        kappa: Kappa::Restitution { e: 0.2, tangential_ratio: 0.5 },
        tolerance: 2e-3,
        solver: SolverConfig::Clarabel {
            tolerance: 1e-9,
            max_iterations: 200,
            dense_max_bodies: 0,
        },
        allow_initial_overlap: true,
        ..Config::default()
    };
    let statics = Statics { tin: Some(tin), planes: Vec::new() };
    let sim = Simulation::new(config, blocks, statics).expect("simulation");
    let agree = replay_small_islands(sim, 600);
    eprintln!("blocks on a TIN, 600 steps: {agree:?}");
    assert!(agree.checked > 1000, "{agree:?}");
}
