//! The contact-space solvers (`nlgs.rs`, `admm.rs`), their certificate (`certificate.rs`) and the
//! position correction (`step::position_correction`): agreement with Clarabel on random
//! islands within the certified bound, closed forms through the solver, feasibility by
//! construction, energy balance.

use nalgebra::{Matrix3, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use talus_engine::body::Block;
use talus_engine::config::SolverConfig;
use talus_engine::geometry::contact::{Contact, Other};
use talus_engine::rotation::RotationModel;
use talus_engine::solver::admm;
use talus_engine::solver::assembly::{JumpBody, JumpContact, assemble};
use talus_engine::solver::certificate::{Certifier, certify};
use talus_engine::solver::clarabel::QpStatus;
use talus_engine::solver::friction::{self, ContactFriction, FrictionConfig, FrictionLaw};
use talus_engine::solver::nlgs::{self, ContactImpulse};
use talus_engine::solver::warm::WarmStart;
use talus_engine::step::{Correction, JumpReport, KappaLaw, StepParams, step_with_friction};

use crate::friction::{block_on_slope, plane_contacts};

const G: f64 = 9.81;
const DT: f64 = 1e-3;

fn nlgs_solver(tolerance: f64) -> SolverConfig {
    SolverConfig::Nlgs {
        tolerance,
        max_sweeps: 5000,
        fallback_tolerance: 1e-10,
        frictional_max_contacts: u32::MAX,
        max_contacts: u32::MAX,
        loose_sweeps: talus_engine::config::DEFAULT_NLGS_LOOSE_SWEEPS,
        admm_iterations: 0,
        admm_sigma: talus_engine::config::DEFAULT_ADMM_SIGMA,
    }
}

fn params(kn: f64, kt: f64, solver: SolverConfig) -> StepParams {
    StepParams {
        dt: DT,
        gravity: G,
        kappa: KappaLaw::Global { normal: kn, tangential: kt },
        beta: 0.8,
        max_separation: 1.0,
        correction: Correction::Position { slop: 0.0, iterations: 20, tolerance: 0.0 },
        rotation: RotationModel::ConstantOmega,
        gaps: talus_engine::config::ContactGaps::Touching,
        solver,
    }
}

fn coulomb(mu: f64) -> FrictionConfig {
    FrictionConfig {
        block_block: Some(FrictionLaw::Coulomb(mu)),
        block_terrain: Some(FrictionLaw::Coulomb(mu)),
        slip_credit: true,
    }
}

/// A random island: `n` bodies in a column, each touching the next at 4 points and the
/// bottom one touching the ground at 4 points, random velocities, normals tilted up to
/// ~20°, random κ and μ (some contacts frictionless).
fn random_island(
    rng: &mut ChaCha8Rng,
    n: usize,
    mass_ratio: f64,
) -> (Vec<JumpBody>, Vec<JumpContact>, Vec<f64>) {
    let mut bodies = Vec::new();
    for k in 0..n {
        let mass = 100.0 * rng.random_range(1.0..mass_ratio);
        let d = Vector3::new(
            rng.random_range(0.5..2.0),
            rng.random_range(0.5..2.0),
            rng.random_range(0.5..2.0),
        );
        let rot = UnitQuaternion::from_scaled_axis(Vector3::new(
            rng.random_range(-0.5..0.5),
            rng.random_range(-0.5..0.5),
            rng.random_range(-0.5..0.5),
        ));
        let r = rot.to_rotation_matrix();
        bodies.push(JumpBody {
            mass,
            inertia: r.matrix() * Matrix3::from_diagonal(&(d * mass)) * r.matrix().transpose(),
            pos: Vector3::new(0.0, 0.0, k as f64 + 0.5),
            vel: Vector3::new(
                rng.random_range(-2.0..2.0),
                rng.random_range(-2.0..2.0),
                rng.random_range(-3.0..1.0),
            ),
            omega: Vector3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            ),
        });
    }
    let mut contacts = Vec::new();
    let mut mu = Vec::new();
    for (k, body) in bodies.iter().enumerate() {
        for c in 0..4 {
            let (sx, sy) = ([-0.4, 0.4, 0.4, -0.4][c], [-0.3, -0.3, 0.3, 0.3][c]);
            let normal =
                Vector3::new(rng.random_range(-0.3..0.3), rng.random_range(-0.3..0.3), 1.0)
                    .normalize();
            let kappa_n = rng.random_range(0.0..2.0) * body.mass;
            contacts.push(JumpContact {
                i: k,
                j: k.checked_sub(1),
                point: Vector3::new(sx, sy, k as f64),
                normal,
                kappa_n,
                kappa_t: rng.random_range(0.0..1.0) * kappa_n,
                separation: 0.0,
            });
            mu.push(if rng.random_bool(0.2) { 0.0 } else { rng.random_range(0.1..1.2) });
        }
    }
    (bodies, contacts, mu)
}

/// Random case `case` of the agreement tests: an island of 1 + case % 6 bodies, with
/// friction when `case` is odd, its conic program, and Clarabel's answer at 1e-10.
fn random_case(
    rng: &mut ChaCha8Rng,
    case: usize,
) -> (Vec<JumpBody>, Vec<JumpContact>, friction::ConeQp, friction::ConeOutcome) {
    let (bodies, contacts, mut mu) = random_island(rng, 1 + case % 6, 10.0);
    if case.is_multiple_of(2) {
        mu.iter_mut().for_each(|m| *m = 0.0);
    }
    let base = assemble(&bodies, &contacts, G * 0.01);
    let fr: Vec<ContactFriction> = mu
        .iter()
        .map(|&mu| ContactFriction { mu, credit: rng.random_range(0.0..0.05) * mu })
        .collect();
    let cq = friction::assemble_cones(&base, &bodies, &contacts, &fr);
    let reference = friction::solve(&cq, 1e-10, 200);
    assert_eq!(reference.outcome.status, QpStatus::Solved, "case {case}: Clarabel");
    (bodies, contacts, cq, reference)
}

/// ‖x − x_ref‖∞ / ‖x_ref‖∞.
fn relative_x_error(x: &[f64], reference: &[f64]) -> f64 {
    let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    x.iter().zip(reference).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / scale
}

/// On random islands of 1-6 bodies (masses within a factor 10): without friction NLGS (with
/// its polish) certifies every island at 1e-11 and agrees with Clarabel at 1e-10 to 1e-5 in
/// x; with friction, every island it certifies agrees likewise (the others fall back to
/// Clarabel in a run, which the step tests cover), and its certificate is the one
/// `certify` computes from the program's data.
#[test]
fn nlgs_agrees_with_clarabel_on_random_islands() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let mut worst: f64 = 0.0;
    let (mut certified, mut frictional) = (0, 0);
    for case in 0..120 {
        let with_friction = case % 2 == 1;
        let (bodies, contacts, cq, reference) = random_case(&mut rng, case);
        let cold = vec![ContactImpulse::default(); contacts.len()];
        let o =
            nlgs::solve(&cq, &bodies, &contacts, &cold, 1e-11, 2000, nlgs::Finish::Polish).solution;
        assert_eq!(certify(&cq.qp, &cq.cones, &o.x, &o.z), o.certificate);
        if with_friction {
            frictional += 1;
        } else {
            assert!(o.solved, "case {case}: not certified: {:?}", o.certificate);
        }
        if !o.solved {
            continue;
        }
        certified += 1;
        let err = relative_x_error(&o.x, &reference.outcome.x);
        worst = worst.max(err);
        let mut zr = vec![0.0; cq.qp.m()];
        for (k, &row) in cq.normal_rows.iter().enumerate() {
            zr[row] = reference.outcome.lambda[k];
            if cq.mu[k] > 0.0 {
                let (t1, t2) = cq.tangents[k];
                zr[row + 1] = reference.tangential[k].dot(&t1) / cq.mu[k];
                zr[row + 2] = reference.tangential[k].dot(&t2) / cq.mu[k];
            }
        }
        let rc = certify(&cq.qp, &cq.cones, &reference.outcome.x, &zr);
        assert!(
            err < 1e-5,
            "case {case}: ‖Δx‖∞/‖x‖∞ = {err}; NLGS {:?}, Clarabel {rc:?}",
            o.certificate
        );
    }
    eprintln!(
        "random islands: {certified} of 120 certified at 1e-11 ({} of {frictional} with friction); worst relative x difference to Clarabel {worst:.2e}",
        certified - (120 - frictional)
    );
}

/// The primal residual alone (`Certifier::primal_with`, what ADMM checks first) is the
/// certificate's, bit for bit, at Clarabel's answer and at random points around it (open
/// and violated contacts, frictionless and frictional cones), and NaN where the
/// certificate's is.
#[test]
fn the_primal_residual_alone_is_the_certificates() {
    let mut rng = ChaCha8Rng::seed_from_u64(25);
    let mut violated = 0;
    for case in 0..40 {
        let (_, _, cq, reference) = random_case(&mut rng, case);
        let (n, m) = (cq.qp.n(), cq.qp.m());
        let certifier = Certifier::new(&cq.qp, &cq.cones);
        let scale = reference.outcome.x.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for trial in 0..4 {
            let mut x = reference.outcome.x.clone();
            if trial > 0 {
                x.iter_mut().for_each(|v| *v += scale * rng.random_range(-0.5..0.5));
            }
            if trial == 3 {
                x[rng.random_range(0..n)] = f64::NAN;
            }
            let z: Vec<f64> = (0..m).map(|_| rng.random_range(-1.0..1.0)).collect();
            let cx = cq.qp.c_mul(&x);
            let full = certify(&cq.qp, &cq.cones, &x, &z).primal;
            let alone = certifier.primal_with(&cx);
            assert_eq!(alone.to_bits(), full.to_bits(), "case {case}, trial {trial}");
            violated += (alone > 1e-3) as usize;
        }
    }
    // The perturbed points violate constraints: the comparison covers non-zero distances
    // to both kinds of cone.
    assert!(violated > 40, "{violated} of 160 points with a primal residual over 1e-3");
}

/// A warm start at the answer is certified after one sweep.
#[test]
fn warm_start_at_the_answer_needs_one_sweep() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let (bodies, contacts, mu) = random_island(&mut rng, 4, 10.0);
    let base = assemble(&bodies, &contacts, G * 0.01);
    let fr: Vec<ContactFriction> =
        mu.iter().map(|&mu| ContactFriction { mu, credit: 0.0 }).collect();
    let cq = friction::assemble_cones(&base, &bodies, &contacts, &fr);
    let cold = vec![ContactImpulse::default(); contacts.len()];
    let first =
        nlgs::solve(&cq, &bodies, &contacts, &cold, 1e-11, 50_000, nlgs::Finish::Polish).solution;
    assert!(first.solved);
    let again =
        nlgs::solve(&cq, &bodies, &contacts, &first.impulses, 1e-9, 50_000, nlgs::Finish::Polish);
    assert!(again.solution.solved && again.sweeps == 1, "{} sweeps", again.sweeps);
}

/// Closed forms through the contact-space solver: rest on a slope under the friction
/// angle; sliding at g(sin θ − μ cos θ) above it. Every step is solved by NLGS itself (no
/// fallback) with its certificate under the tolerance.
#[test]
fn slope_closed_forms_through_nlgs() {
    // Rest: tan 20° = 0.364 < μ = 0.45.
    let (b, n, _) = block_on_slope(20f64.to_radians());
    let (x0, m) = (b.pos, b.mass);
    let p = params(0.5 * m, 0.5 * m, nlgs_solver(1e-8));
    let mut blocks = vec![b];
    let mut warm = WarmStart::default();
    for _ in 0..2000 {
        let contacts = plane_contacts(&blocks, n, 1e-3);
        let rep = step_with_friction(&p, &coulomb(0.45), &mut blocks, &contacts, &mut warm);
        assert_eq!(rep.solver, "nlgs");
        assert!(!rep.fallback && rep.status == QpStatus::Solved && rep.accuracy <= 1e-8);
    }
    let disp = (blocks[0].pos - x0).norm();
    eprintln!("rest on 20°, μ = 0.45, NLGS: displacement after 2000 steps {disp:.3e} m");
    assert!(disp < 1e-6, "displacement {disp} m");

    // Slide: θ = 30°, μ = 0.3.
    let theta = 30f64.to_radians();
    let mu = 0.3;
    let a = G * (theta.sin() - mu * theta.cos());
    let (b, n, d) = block_on_slope(theta);
    let (x0, m) = (b.pos, b.mass);
    let p = params(0.1 * m, 0.0, nlgs_solver(1e-8));
    let mut blocks = vec![b];
    let mut warm = WarmStart::default();
    let steps = 800;
    let mut sweeps = 0;
    for _ in 0..steps {
        let contacts = plane_contacts(&blocks, n, 1e-3);
        let rep = step_with_friction(&p, &coulomb(mu), &mut blocks, &contacts, &mut warm);
        assert!(!rep.fallback && rep.status == QpStatus::Solved && rep.accuracy <= 1e-8);
        sweeps += rep.sweeps;
    }
    let t = steps as f64 * DT;
    let a_v = blocks[0].vel.dot(&d) / t;
    let a_s = 2.0 * (blocks[0].pos - x0).dot(&d) / (t * t);
    eprintln!(
        "slide 30°, μ = 0.3, NLGS: a = {a:.6}, from velocity {a_v:.6}, from distance {a_s:.6}; {:.1} sweeps per step",
        sweeps as f64 / steps as f64
    );
    assert!((a_v / a - 1.0).abs() < 2e-3, "a from velocity {a_v} vs {a}");
    assert!((a_s / a - 1.0).abs() < 5e-3, "a from distance {a_s} vs {a}");
}

/// One step of a block landing flat on a plane at 2 m/s (4 corner contacts, no friction,
/// no gravity) with `solver`: the step's report, u_N⁺, and the closed form −e u_N⁻ with
/// e = (4κ − 2m)/(4κ + 2m).
fn landing_on_a_plane(solver: SolverConfig) -> (JumpReport, f64, f64) {
    let mut b = Block::new(
        1,
        1.0,
        0.8,
        0.5,
        2000.0,
        Vector3::new(0.0, 0.0, 0.25),
        UnitQuaternion::identity(),
    );
    b.vel = Vector3::new(0.0, 0.0, -2.0);
    let m = b.mass;
    let kappa = 2.0 * m;
    let e = (4.0 * kappa - 2.0 * m) / (4.0 * kappa + 2.0 * m);
    let p = StepParams { gravity: 0.0, ..params(kappa, 0.0, solver) };
    let mut blocks = vec![b];
    let contacts = plane_contacts(&blocks, Vector3::z(), 1e-3);
    assert_eq!(contacts.len(), 4);
    let rep = step_with_friction(
        &p,
        &FrictionConfig::default(),
        &mut blocks,
        &contacts,
        &mut WarmStart::default(),
    );
    (rep, blocks[0].vel.z, 2.0 * e)
}

/// Normal restitution of a block landing flat on a plane (4 corner contacts, no friction):
/// u_N⁺ = −e u_N⁻ with e = (4κ − 2m)/(4κ + 2m), through NLGS.
#[test]
fn restitution_through_nlgs() {
    let (rep, v, expected) = landing_on_a_plane(nlgs_solver(1e-10));
    assert_eq!(rep.solver, "nlgs");
    eprintln!("restitution through NLGS: u⁺ = {v:.12} m/s, expected {expected:.12}");
    assert!((v - expected).abs() < 1e-8, "u⁺ = {v}, expected {expected}");
}

/// `max_contacts`: a frictionless island with more contacts than it goes straight to ADMM
/// (no sweep), one with as many to NLGS; both give the closed-form restitution of a block
/// landing flat on a plane (4 corner contacts), u_N⁺ = −e u_N⁻.
#[test]
fn islands_over_max_contacts_skip_nlgs() {
    for (max_contacts, solver) in [(3, "admm"), (4, "nlgs")] {
        let (rep, v, expected) = landing_on_a_plane(SolverConfig::Nlgs {
            tolerance: 1e-10,
            max_sweeps: 5000,
            fallback_tolerance: 1e-10,
            frictional_max_contacts: u32::MAX,
            max_contacts,
            loose_sweeps: talus_engine::config::DEFAULT_NLGS_LOOSE_SWEEPS,
            admm_iterations: 20_000,
            admm_sigma: talus_engine::config::DEFAULT_ADMM_SIGMA,
        });
        assert_eq!(rep.solver, solver, "max_contacts {max_contacts}");
        assert_eq!(rep.sweeps == 0, solver == "admm", "{} sweeps", rep.sweeps);
        assert!(!rep.fallback && rep.status == QpStatus::Solved && rep.accuracy <= 1e-10);
        assert!((v - expected).abs() < 1e-8, "{solver}: u⁺ = {v}, expected {expected}");
    }
}

/// `loose_sweeps`: at a tolerance of `LOOSE_TOLERANCE` or looser, a frictionless island
/// over `max_contacts` is first swept (and here certified by the sweeps); below it, or
/// with `loose_sweeps = 0`, it goes straight to ADMM. Every answer gives the closed-form
/// restitution of a block landing flat on a plane to within the tolerance.
#[test]
fn loose_tolerances_sweep_big_frictionless_islands_first() {
    use talus_engine::config::{DEFAULT_NLGS_LOOSE_SWEEPS, LOOSE_TOLERANCE};
    let loose = 2.5 * LOOSE_TOLERANCE;
    for (tolerance, loose_sweeps, solver) in [
        (loose, DEFAULT_NLGS_LOOSE_SWEEPS, "nlgs"),
        (loose, 0, "admm"),
        (LOOSE_TOLERANCE / 2.0, DEFAULT_NLGS_LOOSE_SWEEPS, "admm"),
    ] {
        let (rep, v, expected) = landing_on_a_plane(SolverConfig::Nlgs {
            tolerance,
            max_sweeps: 5000,
            fallback_tolerance: 1e-10,
            frictional_max_contacts: u32::MAX,
            max_contacts: 3,
            loose_sweeps,
            admm_iterations: 20_000,
            admm_sigma: talus_engine::config::DEFAULT_ADMM_SIGMA,
        });
        let case = format!("tolerance {tolerance}, loose_sweeps {loose_sweeps}");
        eprintln!(
            "{case}: {} after {} sweeps, u⁺ = {v:.6}, expected {expected:.6}",
            rep.solver, rep.sweeps
        );
        assert_eq!(rep.solver, solver, "{case}");
        assert_eq!(rep.sweeps == 0, solver == "admm", "{case}: {} sweeps", rep.sweeps);
        assert!(!rep.fallback && rep.status == QpStatus::Solved && rep.accuracy <= tolerance);
        // Within the tolerance relative to the landing speed, 2 m/s.
        assert!((v - expected).abs() <= tolerance * 2.0, "{case}: u⁺ = {v}, expected {expected}");
    }
}

/// `Finish::GiveUp`: the sweeps stop, without the polish, at the first check where the
/// certificate exceeds `GIVE_UP` × tolerance / √sweeps; cold on random frictionless islands
/// at 1e-11, most stop after one sweep (the polished method certifies them all:
/// `nlgs_agrees_with_clarabel_on_random_islands`).
#[test]
fn giving_up_stops_the_sweeps_far_from_the_tolerance() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let tolerance = 1e-11;
    let (mut after_one, mut frictionless) = (0, 0);
    for case in 0..120 {
        let (bodies, contacts, cq, _) = random_case(&mut rng, case);
        if case % 2 == 1 {
            continue;
        }
        frictionless += 1;
        let cold = vec![ContactImpulse::default(); contacts.len()];
        let o = nlgs::solve(&cq, &bodies, &contacts, &cold, tolerance, 2000, nlgs::Finish::GiveUp);
        assert_eq!(o.polishes, 0, "case {case}");
        assert_eq!(
            certify(&cq.qp, &cq.cones, &o.solution.x, &o.solution.z),
            o.solution.certificate
        );
        if o.solution.solved {
            assert!(o.solution.certificate.holds(tolerance));
            continue;
        }
        let bound = nlgs::GIVE_UP * tolerance / f64::from(o.sweeps).sqrt();
        assert!(o.sweeps < 2000, "case {case}: the give-up never fired");
        assert!(o.solution.certificate.worst() > bound, "case {case}: stopped below the bound");
        after_one += usize::from(o.sweeps == 1);
    }
    eprintln!("{after_one} of {frictionless} frictionless islands given up after one sweep");
    assert!(2 * after_one > frictionless, "{after_one} of {frictionless} after one sweep");
}

/// A frictionless island of `nx` × `ny` unit cubes side by side on the ground: each
/// touches the ground at its 4 bottom corners and its +x and +y neighbours at 2 points each,
/// with random velocities and κ.
fn grid_island(rng: &mut ChaCha8Rng, nx: usize, ny: usize) -> (Vec<JumpBody>, Vec<JumpContact>) {
    let mut bodies = Vec::new();
    for a in 0..nx {
        for b in 0..ny {
            let mass = 1000.0 * rng.random_range(1.0..3.0);
            bodies.push(JumpBody {
                mass,
                inertia: Matrix3::identity() * (mass / 6.0),
                pos: Vector3::new(a as f64, b as f64, 0.5),
                vel: Vector3::new(
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-2.0..0.5),
                ),
                omega: Vector3::new(
                    rng.random_range(-0.5..0.5),
                    rng.random_range(-0.5..0.5),
                    rng.random_range(-0.5..0.5),
                ),
            });
        }
    }
    let mut contacts = Vec::new();
    let mut touch = |i: usize, j: Option<usize>, point: Vector3<f64>, normal: Vector3<f64>| {
        let kappa_n = rng.random_range(0.0..1.0) * bodies[i].mass;
        contacts.push(JumpContact {
            i,
            j,
            point,
            normal,
            kappa_n,
            kappa_t: rng.random_range(0.0..1.0) * kappa_n,
            separation: 0.0,
        });
    };
    for a in 0..nx {
        for b in 0..ny {
            let (i, c) = (a * ny + b, Vector3::new(a as f64, b as f64, 0.5));
            for (sx, sy) in [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)] {
                touch(i, None, c + Vector3::new(sx, sy, -0.5), Vector3::z());
            }
            // The neighbour at −x (−y) pushes along +x (+y) on this body.
            for s in [-0.3, 0.3] {
                if a > 0 {
                    touch(i, Some(i - ny), c + Vector3::new(-0.5, s, 0.0), Vector3::x());
                }
                if b > 0 {
                    touch(i, Some(i - 1), c + Vector3::new(s, -0.5, 0.0), Vector3::y());
                }
            }
        }
    }
    (bodies, contacts)
}

/// `Finish::GiveUp` on an island of `HALVES_MIN_CONTACTS` contacts or more sweeps it in two
/// halves of bodies: the same answer, bit for bit, on one thread and on two; its
/// certificate is the one `certify` computes from the program's data; and started from an
/// accurate answer (ADMM's at 1e-10) it certifies after one sweep, which fails if the
/// halves' numbering of bodies or contacts is mixed up anywhere.
#[test]
fn big_islands_are_swept_in_halves_with_the_same_answer_on_one_thread_or_two() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let (bodies, contacts) = grid_island(&mut rng, 24, 30);
    assert!(contacts.len() >= nlgs::HALVES_MIN_CONTACTS, "{} contacts", contacts.len());
    let base = assemble(&bodies, &contacts, G * DT);
    let fr = vec![ContactFriction { mu: 0.0, credit: 0.0 }; contacts.len()];
    let cq = friction::assemble_cones(&base, &bodies, &contacts, &fr);
    let cold = vec![ContactImpulse::default(); contacts.len()];
    let solve = |threads: usize, initial: &[ContactImpulse], tolerance: f64| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
        pool.install(|| {
            nlgs::solve(&cq, &bodies, &contacts, initial, tolerance, 64, nlgs::Finish::GiveUp)
        })
    };
    for tolerance in [1e-1, 5e-2] {
        let one = solve(1, &cold, tolerance);
        let two = solve(2, &cold, tolerance);
        eprintln!(
            "tolerance {tolerance}: {} sweeps, solved {}, certificate {:.2e}",
            one.sweeps,
            one.solution.solved,
            one.solution.certificate.worst()
        );
        assert!(one.sweeps > 1, "tolerance {tolerance}: the halves swept only once");
        assert_eq!(one, two, "tolerance {tolerance}: one thread against two");
        let s = &one.solution;
        assert_eq!(certify(&cq.qp, &cq.cones, &s.x, &s.z), s.certificate);
    }
    let accurate = admm::solve(&cq, &bodies, &contacts, &cold, admm::Settings::new(1e-10, 20_000));
    assert!(accurate.solution.solved, "ADMM: {:?}", accurate.solution.certificate);
    let again = solve(2, &accurate.solution.impulses, 1e-7);
    assert!(again.solution.solved && again.sweeps == 1, "{} sweeps", again.sweeps);
    let dx = relative_x_error(&again.solution.x, &accurate.solution.x);
    assert!(dx < 1e-6, "x moved by {dx:e} from the accurate answer");
}

/// The position correction of a big island swept in two halves
/// (`step::position_correction_in_halves`): the same bits on one thread and on two, and,
/// swept to convergence, the displacements of the sweep in one piece
/// (`step::position_correction`: the mass-weighted smallest displacement is unique), which
/// fails if the halves' numbering of bodies or contacts is mixed up.
#[test]
fn the_position_correction_in_halves_agrees_with_the_whole_sweep() {
    use talus_engine::solver::warm::ContactKey;
    use talus_engine::step::{
        correction_order, position_correction, position_correction_in_halves,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    let (bodies, contacts) = grid_island(&mut rng, 24, 30);
    assert!(contacts.len() >= nlgs::HALVES_MIN_CONTACTS);
    // A third of the ground contacts and a tenth of the others penetrate by up to 2 cm
    // (pushing neighbours apart couples the bodies); the other gaps are open.
    let target: Vec<f64> = contacts
        .iter()
        .map(|c| {
            if rng.random_bool(if c.j.is_none() { 0.3 } else { 0.1 }) {
                rng.random_range(0.0..0.02)
            } else {
                -rng.random_range(0.0..0.01)
            }
        })
        .collect();
    let keys: Vec<ContactKey> = contacts
        .iter()
        .map(|c| ContactKey {
            id: c.i as u32,
            other: c.j.map_or((2, 0), |j| (0, j as u64)),
            cell: [0; 3],
        })
        .collect();
    let halves = |threads: usize, iterations: u32| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
        pool.install(|| {
            position_correction_in_halves(&bodies, &contacts, &target, &keys, iterations)
        })
    };
    let bits = |dq: &[(Vector3<f64>, Vector3<f64>)]| -> Vec<u64> {
        dq.iter().flat_map(|(p, t)| p.iter().chain(t.iter()).map(|v| v.to_bits())).collect()
    };
    assert_eq!(bits(&halves(1, 20)), bits(&halves(2, 20)), "one thread against two");
    let order = correction_order(&keys, |k| contacts[k].point);
    let whole = position_correction(&bodies, &contacts, &target, &order, 3000, 0.0);
    let split = halves(2, 3000);
    let largest = whole.iter().fold(0.0f64, |m, (p, t)| m.max(p.amax()).max(t.amax()));
    let diff = whole
        .iter()
        .zip(&split)
        .fold(0.0f64, |m, (a, b)| m.max((a.0 - b.0).amax()).max((a.1 - b.1).amax()));
    eprintln!("largest displacement {largest:.3e} m, largest difference {diff:.3e}");
    assert!(largest > 1e-3, "nothing moved");
    assert!(diff <= 1e-9 * largest, "the halves differ by {diff:e} (largest {largest:e})");
}

/// A block wedged between two planes that each penetrate it 2 cm, falling into the wedge:
/// the jump is feasible by construction (no retry, status Solved), the position correction
/// removes the penetration over a few steps without touching velocities (kinetic energy
/// never increases), and the energy balance KE + PE + D − W_c closes.
#[test]
fn wedged_block_is_feasible_and_corrected_in_position() {
    let half = 0.5;
    let a = 30f64.to_radians();
    let n1 = Vector3::new(a.sin(), 0.0, a.cos());
    let n2 = Vector3::new(-a.sin(), 0.0, a.cos());
    let mut b = Block::new(1, 1.0, 1.0, 1.0, 2000.0, Vector3::zeros(), UnitQuaternion::identity());
    // Place the cube so that it penetrates each plane (through the origin) by ~2 cm.
    let lowest = |b: &Block, n: &Vector3<f64>| {
        b.corners().iter().map(|c| n.dot(c)).fold(f64::INFINITY, f64::min)
    };
    b.pos.z = half;
    let shift = lowest(&b, &n1);
    b.pos.z -= (shift + 0.02) / n1.z;
    b.vel = Vector3::new(0.0, 0.0, -0.5);
    let m = b.mass;
    let mut blocks = vec![b];
    let contacts_of = |blocks: &[Block]| {
        let mut c = Vec::new();
        for (k, n) in [n1, n2].iter().enumerate() {
            for p in blocks[0].corners() {
                let gap = n.dot(&p);
                if gap <= 1e-3 {
                    c.push(Contact {
                        i: 0,
                        other: Other::Plane(k),
                        point: p - n * gap,
                        normal: *n,
                        gap,
                    });
                }
            }
        }
        c
    };
    let p = params(
        0.5 * m,
        0.0,
        SolverConfig::Clarabel { tolerance: 1e-10, max_iterations: 200, dense_max_bodies: 0 },
    );
    let f = coulomb(0.3);
    let mut warm = WarmStart::default();
    let energy = |b: &Block| {
        let (t, r) = b.kinetic_energy();
        (t + r, b.mass * G * b.pos.z)
    };
    let (k0, p0) = energy(&blocks[0]);
    let (mut dissipated, mut correction) = (0.0, 0.0);
    let mut pen = Vec::new();
    for _ in 0..50 {
        let contacts = contacts_of(&blocks);
        pen.push(contacts.iter().map(|c| -c.gap).fold(0.0, f64::max));
        let (k_before, _) = energy(&blocks[0]);
        let rep = step_with_friction(&p, &f, &mut blocks, &contacts, &mut warm);
        assert_eq!(rep.status, QpStatus::Solved);
        assert!(!rep.fallback && rep.failed.is_empty());
        let (k_after, _) = energy(&blocks[0]);
        // Gravity may add at most m g Δt × speed; the correction adds none.
        assert!(k_after <= k_before + m * G * DT * (blocks[0].vel.norm() + 1e-12) + 1e-9);
        dissipated += rep.dissipated;
        correction += rep.separation_work;
    }
    let (k1, p1) = energy(&blocks[0]);
    let balance = k1 + p1 + dissipated - correction - (k0 + p0);
    eprintln!(
        "wedge: penetration {:.4} m -> {:.2e} m; correction work {correction:.3e} J; balance error {balance:.2e} J of {:.3e}",
        pen[0],
        pen.last().unwrap(),
        k0 + p0
    );
    assert!(pen[0] > 0.015 && *pen.last().unwrap() < 1e-3, "penetration {pen:?}");
    assert!(balance.abs() < 1e-6 * (k0 + p0.abs() + correction.abs()));
}

/// The solver configuration that sends every frictional island to ADMM (NLGS skips
/// islands of more than 0 frictional contacts).
fn admm_solver(tolerance: f64) -> SolverConfig {
    SolverConfig::Nlgs {
        tolerance,
        max_sweeps: 5000,
        fallback_tolerance: 1e-10,
        frictional_max_contacts: 0,
        max_contacts: u32::MAX,
        loose_sweeps: talus_engine::config::DEFAULT_NLGS_LOOSE_SWEEPS,
        admm_iterations: 20_000,
        admm_sigma: talus_engine::config::DEFAULT_ADMM_SIGMA,
    }
}

/// On the same random islands (with and without friction, masses within a factor 10),
/// ADMM certifies every island at 1e-9 from a cold start, its certificate is the one
/// `certify` computes from the program's data, and x agrees with Clarabel's (1e-10) to
/// 1e-5 relative. Started from its own answer's percussions it is certified at 1e-8 within
/// four iterations. With one penalty scale for every cone (`Penalties::Global`) it agrees
/// as well but takes more iterations over the set: the per-cone penalties are asserted to
/// take fewer than 0.9 of them. Started from σ = 0.3 or 30 instead of 3 (`admm_sigma`)
/// it agrees too. Tested at the scheduled checks only (no test in the stationarity tail)
/// it is certified as well, after as many iterations or more, and more over the set.
#[test]
fn admm_agrees_with_clarabel_on_random_islands() {
    use admm::Penalties::Global;
    use admm::Settings;
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let mut worst: f64 = 0.0;
    let mut iterations = Vec::new();
    let mut at_once = 0;
    let mut global_iterations = 0;
    let mut other_sigma = [0u32; 2];
    let mut checks_only = 0;
    for case in 0..120 {
        let (bodies, contacts, cq, reference) = random_case(&mut rng, case);
        let cold = vec![ContactImpulse::default(); contacts.len()];
        let ad = admm::solve(&cq, &bodies, &contacts, &cold, Settings::new(1e-9, 20_000));
        iterations.push(ad.iterations);
        // The same solve with one penalty scale for every cone (no per-cone boost).
        let global = admm::solve(
            &cq,
            &bodies,
            &contacts,
            &cold,
            Settings { penalties: Global, ..Settings::new(1e-9, 20_000) },
        );
        assert!(
            global.solution.solved,
            "case {case}: global penalties: {:?}",
            global.solution.certificate
        );
        assert!(relative_x_error(&global.solution.x, &reference.outcome.x) < 1e-5);
        global_iterations += global.iterations;
        let o = ad.solution;
        assert!(o.solved, "case {case}: not certified: {:?}", o.certificate);
        assert_eq!(certify(&cq.qp, &cq.cones, &o.x, &o.z), o.certificate);
        let err = relative_x_error(&o.x, &reference.outcome.x);
        worst = worst.max(err);
        assert!(err < 1e-5, "case {case}: ‖Δx‖∞/‖x‖∞ = {err}; ADMM {:?}", o.certificate);
        // The percussions it returns are the answer (to 1e-9): a warm start there is
        // certified at 1e-8 by one of the first three checks (after 1, 2 and 4
        // iterations; a cold start needs hundreds).
        // Tested at the checks only (no tail test), it is certified too, never sooner.
        let checks = admm::solve(
            &cq,
            &bodies,
            &contacts,
            &cold,
            Settings { tail_test: false, ..Settings::new(1e-9, 20_000) },
        );
        assert!(checks.solution.solved, "case {case}: checks only");
        assert!(
            checks.iterations >= ad.iterations,
            "case {case}: {} iterations with the checks only, {} with the tail test",
            checks.iterations,
            ad.iterations
        );
        checks_only += checks.iterations;
        let again = admm::solve(&cq, &bodies, &contacts, &o.impulses, Settings::new(1e-8, 20_000));
        assert!(
            again.solution.solved && again.iterations <= 4,
            "case {case}: {} iterations from the answer",
            again.iterations
        );
        at_once += (again.iterations == 1) as usize;
        // Another starting σ (`admm_sigma`) changes the path, not the answer.
        for sigma in [0.3, 30.0] {
            let other = admm::solve(
                &cq,
                &bodies,
                &contacts,
                &cold,
                Settings { sigma, ..Settings::new(1e-9, 20_000) },
            );
            assert!(other.solution.solved, "case {case}: σ₀ = {sigma}");
            assert!(relative_x_error(&other.solution.x, &reference.outcome.x) < 1e-5);
            other_sigma[(sigma > 1.0) as usize] += other.iterations;
        }
    }
    let total: u32 = iterations.iter().sum();
    // The tail test stops some solves between the checks.
    assert!(total < checks_only, "{total} iterations with the tail test, {checks_only} without");
    // The starting σ is used: the iterations over the set differ with it.
    assert!(other_sigma.iter().all(|&t| t != total), "{other_sigma:?} against {total}");
    iterations.sort_unstable();
    eprintln!(
        "random islands through ADMM: all 120 certified at 1e-9; iterations median {} max {} total {total} (at the checks only: {checks_only}; one penalty scale: {global_iterations}; from σ 0.3 and 30: {other_sigma:?}); worst relative x difference to Clarabel {worst:.2e}; from the answer {at_once} of 120 certified after one iteration",
        iterations[60], iterations[119]
    );
    // The per-cone penalties take fewer iterations over the set (measured: 0.68 of them).
    assert!(
        (total as f64) < 0.9 * global_iterations as f64,
        "per-cone penalties: {total} iterations, one scale: {global_iterations}"
    );
}

/// `admm_sigma`'s site-file spelling: optional (3 by default), and refused outside
/// [1e-6, 1e6] or when not a number, naming the option.
#[test]
fn admm_sigma_is_optional_and_checked() {
    use talus_engine::config::Config;
    let sigma = |c: &Config| match c.solver {
        SolverConfig::Nlgs { admm_sigma, .. } => admm_sigma,
        ref s => panic!("{s:?}"),
    };
    let c: Config = serde_json::from_str(r#"{"solver": {"method": "nlgs"}}"#).unwrap();
    assert_eq!(sigma(&c), 3.0);
    c.validate().unwrap();
    let c: Config =
        serde_json::from_str(r#"{"solver": {"method": "nlgs", "admm_sigma": 0.3}}"#).unwrap();
    assert_eq!(sigma(&c), 0.3);
    c.validate().unwrap();
    for bad in [0.0, -1.0, 1e7, f64::NAN] {
        let mut c = c.clone();
        if let SolverConfig::Nlgs { ref mut admm_sigma, .. } = c.solver {
            *admm_sigma = bad;
        }
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("admm_sigma"), "{bad}: {e}");
    }
}

/// Closed forms through ADMM (every frictional island sent to it): rest on a slope under
/// the friction angle, sliding at g(sin θ − μ cos θ) above it, restitution
/// u_N⁺ = −e u_N⁻ of a block landing flat with friction on; every step accepted from ADMM
/// (no fallback) with its certificate under the tolerance.
#[test]
fn closed_forms_through_admm() {
    // Rest: tan 20° = 0.364 < μ = 0.45.
    let (b, n, _) = block_on_slope(20f64.to_radians());
    let (x0, m) = (b.pos, b.mass);
    let p = params(0.5 * m, 0.5 * m, admm_solver(1e-8));
    let mut blocks = vec![b];
    let mut warm = WarmStart::default();
    let mut iterations = 0;
    for _ in 0..2000 {
        let contacts = plane_contacts(&blocks, n, 1e-3);
        let rep = step_with_friction(&p, &coulomb(0.45), &mut blocks, &contacts, &mut warm);
        assert_eq!(rep.solver, "admm");
        assert!(!rep.fallback && rep.status == QpStatus::Solved && rep.accuracy <= 1e-8);
        iterations += rep.iterations;
    }
    let disp = (blocks[0].pos - x0).norm();
    eprintln!(
        "rest on 20°, μ = 0.45, ADMM: displacement after 2000 steps {disp:.3e} m; {:.1} iterations per step",
        iterations as f64 / 2000.0
    );
    assert!(disp < 1e-6, "displacement {disp} m");

    // Slide: θ = 30°, μ = 0.3.
    let theta = 30f64.to_radians();
    let mu = 0.3;
    let a = G * (theta.sin() - mu * theta.cos());
    let (b, n, d) = block_on_slope(theta);
    let (x0, m) = (b.pos, b.mass);
    let p = params(0.1 * m, 0.0, admm_solver(1e-8));
    let mut blocks = vec![b];
    let mut warm = WarmStart::default();
    let steps = 800;
    for _ in 0..steps {
        let contacts = plane_contacts(&blocks, n, 1e-3);
        let rep = step_with_friction(&p, &coulomb(mu), &mut blocks, &contacts, &mut warm);
        assert_eq!(rep.solver, "admm");
        assert!(!rep.fallback && rep.status == QpStatus::Solved && rep.accuracy <= 1e-8);
    }
    let t = steps as f64 * DT;
    let a_v = blocks[0].vel.dot(&d) / t;
    let a_s = 2.0 * (blocks[0].pos - x0).dot(&d) / (t * t);
    eprintln!(
        "slide 30°, μ = 0.3, ADMM: a = {a:.6}, from velocity {a_v:.6}, from distance {a_s:.6}"
    );
    assert!((a_v / a - 1.0).abs() < 2e-3, "a from velocity {a_v} vs {a}");
    assert!((a_s / a - 1.0).abs() < 5e-3, "a from distance {a_s} vs {a}");

    // Restitution: a vertical landing has no tangential percussion, so friction leaves
    // e = (4κ − 2m)/(4κ + 2m) as it is.
    let mut b = Block::new(
        1,
        1.0,
        0.8,
        0.5,
        2000.0,
        Vector3::new(0.0, 0.0, 0.25),
        UnitQuaternion::identity(),
    );
    b.vel = Vector3::new(0.0, 0.0, -2.0);
    let m = b.mass;
    let kappa = 2.0 * m;
    let e = (4.0 * kappa - 2.0 * m) / (4.0 * kappa + 2.0 * m);
    let p = StepParams { gravity: 0.0, ..params(kappa, 0.0, admm_solver(1e-10)) };
    let mut blocks = vec![b];
    let contacts = plane_contacts(&blocks, Vector3::z(), 1e-3);
    let rep =
        step_with_friction(&p, &coulomb(0.5), &mut blocks, &contacts, &mut WarmStart::default());
    assert_eq!(rep.solver, "admm");
    let v = blocks[0].vel.z;
    eprintln!("restitution through ADMM: u⁺ = {v:.12} m/s, expected {:.12}", 2.0 * e);
    assert!((v - 2.0 * e).abs() < 1e-7, "u⁺ = {v}, e = {e}");
}
