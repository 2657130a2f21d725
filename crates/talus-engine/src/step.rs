//! One A-CD² step of length Δt, given the contacts detected at the start of the step.
//!
//! Timing of a step [t_n, t_n + Δt] (the percussions are atomised at θ_n = t_n + Δt/2):
//! 1. contacts (points, normals, gaps, lever arms A_k − g_i) at the configuration of t_n;
//! 2. each body's orientation and angular velocity are carried to θ_n by
//!    [`crate::rotation::advance`] over Δt/2 (constant ω: ω unchanged; torque-free: the
//!    Euler motion), giving ω⁻ and the world inertia of the jump;
//! 3. the jump: islands of the contact graph solve the QP (docs/physics.md §3) with M at θ_n,
//!    u⁻ = (u_n, ω⁻); free bodies get u⁺ = u⁻ − g Δt e_z, ω⁺ = ω⁻;
//! 4. g_{n+1} = g_n + (Δt/2)(u⁻ + u⁺); orientation and ω carried from θ_n to t_{n+1} by
//!    `advance` over Δt/2 with ω⁺.
//!
//! Energy bookkeeping of the jump (exact for the QP's solution): with x = (u⁺ + u⁻)/2 and
//! the internal percussion P = M(u⁺ − u⁻) − b, ΔKE = b·x + P·x. Gravity's work b·x =
//! −Σ m g Δz is the drop of potential energy over the step. The separation velocities v_k
//! of penetrating contacts inject W_s = Σ λ_k v_k / 2; the rest, D = W_s − P·x ≥ 0, is
//! the dissipation (Clausius–Duhem).

use crate::body::Block;
use crate::config::{ContactGaps, Kappa, LOOSE_TOLERANCE, MorePasses, SolverConfig};
use crate::geometry::contact::{Contact, ContactKind, Other};
use crate::rotation::{self, RotationModel};
use crate::solver::admm;
use crate::solver::assembly::{JumpBody, JumpContact, Qp, assemble, effective_mass};
use crate::solver::certificate::{Certificate, certify};
use crate::solver::clarabel::{QpOutcome, QpStatus, SolverUsed, solve_clarabel};
use crate::solver::dense::solve_dense;
use crate::solver::friction::{self, ConeQp, ContactFriction, FrictionConfig};
use crate::solver::islands::{BIG_ISLAND_CONTACTS, Halves, Island, islands};
use crate::solver::nlgs;
use crate::solver::pair::{Pair, both};
use crate::solver::warm::{ContactKey, WarmStart, solve_warm};
use clarabel::solver::SupportedConeT;
use nalgebra::{Matrix3, UnitQuaternion, Vector3};
use rayon::prelude::*;
use std::time::Instant;

/// κ as used by the step (the thesis mode resolved to raw values at the start of a run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KappaLaw {
    /// Same κ_N, κ_T for every contact, kg.
    Global { normal: f64, tangential: f64 },
    /// κ_N = 2 m_eff (1 + e)/(1 − e), κ_T = ratio κ_N per contact.
    Restitution { e: f64, tangential_ratio: f64 },
}

impl KappaLaw {
    /// Resolve the configured κ for a set of blocks (thesis: factor × total mass / N).
    pub fn from_config(kappa: &Kappa, blocks: &[Block]) -> Self {
        match *kappa {
            Kappa::Raw { normal, tangential } => KappaLaw::Global { normal, tangential },
            Kappa::Restitution { e, tangential_ratio } => {
                KappaLaw::Restitution { e, tangential_ratio }
            }
            Kappa::Thesis { factor } => {
                let total: f64 = blocks.iter().map(|b| b.mass).sum();
                let k = if blocks.is_empty() { 0.0 } else { factor * total / blocks.len() as f64 };
                KappaLaw::Global { normal: k, tangential: k }
            }
        }
    }
}

/// Parameters of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepParams {
    /// Δt, s.
    pub dt: f64,
    /// g, m/s².
    pub gravity: f64,
    /// κ law.
    pub kappa: KappaLaw,
    /// β of the separation velocity, 1.
    pub beta: f64,
    /// Cap of the separation velocity, m/s.
    pub max_separation: f64,
    /// How residual penetration is removed.
    pub correction: Correction,
    /// Rotation model between jumps.
    pub rotation: RotationModel,
    /// QP solver.
    pub solver: SolverConfig,
    /// How a contact with a positive gap enters the jump.
    pub gaps: ContactGaps,
}

/// How a step removes residual penetration (see [`crate::config::SeparationMethod`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Correction {
    /// Separation velocities min(β(−δ)/Δt, `max_separation`) in the jump's constraints.
    Velocity,
    /// Position post-stabilisation after the jump: penetration beyond `slop` (m) of the
    /// gaps predicted at the end of the step, times β, removed by the mass-weighted
    /// smallest displacement (`iterations` projected Gauss–Seidel sweeps).
    Position { slop: f64, iterations: u32, tolerance: f64 },
    /// The same on the gaps detected after the motion: done by the caller once the blocks
    /// have moved ([`crate::sim::Simulation::advance`]); the step itself corrects nothing.
    /// `passes` of detection and correction, then up to `more` further ones while a
    /// contact is deeper than `slop` + its `deeper_than`.
    AfterMotion {
        slop: f64,
        iterations: u32,
        tolerance: f64,
        passes: u32,
        more: Option<MorePasses>,
    },
}

/// A QP that was not solved, kept for the dump.
#[derive(Debug, Clone)]
pub struct FailedQp {
    /// Index of the island in the step.
    pub island: usize,
    /// Block ids of the island.
    pub block_ids: Vec<u32>,
    /// The QP.
    pub qp: Qp,
    /// Solver status.
    pub status: QpStatus,
    /// The conic program when the island had friction (`qp` then holds its rows too);
    /// dump it with [`crate::solver::friction::clarabel_json`].
    pub conic: Option<ConeQp>,
}

/// What a step did (energies in J, times in s).
#[derive(Debug, Clone, Default)]
pub struct JumpReport {
    pub contacts_block_block: u32,
    pub contacts_block_terrain: u32,
    pub contacts_block_plane: u32,
    pub islands: u32,
    /// Islands solved by the dense solver.
    pub islands_dense: u32,
    pub qp_variables: u32,
    pub qp_constraints: u32,
    /// Solver of the accepted solutions ("none", "clarabel", "warm", "clarabel_socp",
    /// "nlgs", "admm", "nlgs+admm"; "mixed" when several others), followed by "+dense" when the dense solver solved
    /// some islands ("dense" alone when it solved all of them).
    pub solver: String,
    /// Worst status over the islands: `Solved` when all are; `SolvedWithoutSeparation`
    /// when an island was solved only by the retry without separation velocities (with
    /// the first attempt's status); else the status of an island not solved.
    pub status: QpStatus,
    pub iterations: u32,
    pub r_prim: f64,
    pub r_dual: f64,
    pub fallback: bool,
    /// Largest penetration depth among the contacts, m (≥ 0).
    pub max_penetration: f64,
    /// Dissipation D of the jump, J.
    pub dissipated: f64,
    /// Work of the separation velocities, J.
    pub separation_work: f64,
    /// Work of gravity over the step, J.
    pub gravity_work: f64,
    /// Worst certificate residual (relative, [`crate::solver::certificate`]) of the step's accepted
    /// solutions; 0 without islands.
    pub accuracy: f64,
    /// Sweeps of the contact-space solver summed over islands.
    pub sweeps: u32,
    pub t_assembly: f64,
    pub t_solve: f64,
    /// QPs that were not solved.
    pub failed: Vec<FailedQp>,
}

struct IslandResult {
    u_plus: Vec<f64>,
    /// Percussion per contact for the next step's warm start (NLGS: the total Λ; other
    /// solvers: λ_N and the friction percussion).
    warm_start: Vec<nlgs::ContactImpulse>,
    /// Certificate of the accepted solution.
    certificate: Certificate,
    /// Position correction per body of the island (translation, rotation vector); empty
    /// with separation velocities.
    correction: Vec<(Vector3<f64>, Vector3<f64>)>,
    /// Sweeps of the contact-space solver.
    sweeps: u32,
    outcome: QpOutcome,
    dissipated: f64,
    separation_work: f64,
    keys: Vec<ContactKey>,
    /// The conic program, when the island had friction.
    cones: Option<ConeQp>,
    /// Change of each contact's slip speed in the jump, ‖v_T⁺‖ − ‖v_T⁻‖ (m/s; 0 for
    /// frictionless contacts; empty without the slip credit or when the island was not
    /// solved).
    slip_change: Vec<f64>,
}

/// The key identifying a contact across steps, for warm starts.
pub fn contact_key(blocks: &[Block], c: &Contact) -> ContactKey {
    let b = &blocks[c.i];
    // Contact point in i's body frame, quantised to 1/8 of the smallest half edge:
    // the same corner or edge on consecutive steps gets the same key.
    let local = b.rot.inverse() * (c.point - b.pos);
    let q = b.half.min().max(1e-9) / 8.0;
    let cell =
        [(local.x / q).round() as i64, (local.y / q).round() as i64, (local.z / q).round() as i64];
    let other = match c.other {
        Other::Block(j) => (0u8, blocks[j].id as u64),
        Other::Terrain(t) => (1u8, t as u64),
        Other::Plane(p) => (2u8, p as u64),
    };
    ContactKey { id: b.id, other, cell }
}

/// An island's assembled QP with what the step needs to apply its solution.
pub struct AssembledIsland {
    /// The island (global indices).
    pub island: Island,
    /// The QP.
    pub qp: Qp,
    /// Bodies at the jump.
    pub bodies: Vec<JumpBody>,
    /// Contacts with their κ and separation velocity.
    pub contacts: Vec<JumpContact>,
    /// Contact identities (warm start).
    pub keys: Vec<ContactKey>,
}

/// The first part of a step: contacts filtered to active blocks, the half-step rotation
/// (orientation and ω⁻ at θ_n) and every island's QP.
pub struct Prepared {
    pub contacts: Vec<Contact>,
    pub half: Vec<(UnitQuaternion<f64>, Vector3<f64>)>,
    pub islands: Vec<AssembledIsland>,
}

/// Contacts, half rotation, islands and their QPs for the current configuration.
pub fn prepare(params: &StepParams, blocks: &[Block], contacts: &[Contact]) -> Prepared {
    let dt = params.dt;
    let contacts: Vec<Contact> = contacts
        .iter()
        .filter(|c| blocks[c.i].active && !matches!(c.other, Other::Block(j) if !blocks[j].active))
        .cloned()
        .collect();
    // First half of the free rotation.
    let half: Vec<(UnitQuaternion<f64>, Vector3<f64>)> = blocks
        .par_iter()
        .map(|b| {
            if b.active {
                rotation::advance(params.rotation, b.rot, b.omega, &b.inertia, 0.5 * dt)
            } else {
                (b.rot, b.omega)
            }
        })
        .collect();
    let world_inertia = |k: usize| {
        let r = half[k].0.to_rotation_matrix();
        r.matrix() * Matrix3::from_diagonal(&blocks[k].inertia) * r.matrix().transpose()
    };
    let isl: Vec<Island> = islands(blocks.len(), &contacts);
    // Index of every body within its island (each body is in at most one island).
    let mut local = vec![usize::MAX; blocks.len()];
    for island in &isl {
        for (l, &b) in island.bodies.iter().enumerate() {
            local[b] = l;
        }
    }
    let local = &local;
    let assembled: Vec<AssembledIsland> = isl
        .into_par_iter()
        .map(|island| {
            let bodies: Vec<JumpBody> = island
                .bodies
                .iter()
                .map(|&b| JumpBody {
                    mass: blocks[b].mass,
                    inertia: world_inertia(b),
                    pos: blocks[b].pos,
                    vel: blocks[b].vel,
                    omega: half[b].1,
                })
                .collect();
            let mut jc: Vec<JumpContact> = island
                .contacts
                .iter()
                .map(|&k| {
                    let c = &contacts[k];
                    let velocity = matches!(params.correction, Correction::Velocity);
                    let separation = if velocity && c.gap < 0.0 {
                        (params.beta * (-c.gap) / dt).min(params.max_separation)
                    } else {
                        0.0
                    };
                    JumpContact {
                        i: local[c.i],
                        j: match c.other {
                            Other::Block(j) => Some(local[j]),
                            _ => None,
                        },
                        point: c.point,
                        normal: c.normal,
                        kappa_n: 0.0,
                        kappa_t: 0.0,
                        separation,
                    }
                })
                .collect();
            for (c, &k) in jc.iter_mut().zip(&island.contacts) {
                // A speculative contact may close its gap Φ within the step: the step moves
                // the contact by Δt (v_N⁻ + v_N⁺)/2, so v_N⁺ ≥ −2Φ/Δt − v_N⁻ keeps it from
                // penetrating. It is relaxed only as far as that allows approach (never a
                // demand to separate): a contact approaching faster than it can close its
                // gap stays as touching, κ and all. The only negative "separation".
                let gap = contacts[k].gap;
                if params.gaps == ContactGaps::Speculative && gap > 0.0 {
                    let vn = c.normal.dot(&friction::relative_velocity(&bodies, c));
                    c.separation = (-2.0 * gap / dt - vn).min(0.0);
                }
                let (kn, kt) = match params.kappa {
                    KappaLaw::Global { normal, tangential } => (normal, tangential),
                    KappaLaw::Restitution { e, tangential_ratio } => {
                        let m = effective_mass(&bodies, c);
                        let kn = 2.0 * m * (1.0 + e) / (1.0 - e);
                        (kn, tangential_ratio * kn)
                    }
                };
                // κ does not act on a contact relaxed as speculative.
                let apart = c.separation < 0.0;
                c.kappa_n = if apart { 0.0 } else { kn };
                c.kappa_t = if apart { 0.0 } else { kt };
            }
            let keys: Vec<ContactKey> =
                island.contacts.iter().map(|&k| contact_key(blocks, &contacts[k])).collect();
            let qp = assemble(&bodies, &jc, params.gravity * dt);
            AssembledIsland { island, qp, bodies, contacts: jc, keys }
        })
        .collect();
    Prepared { contacts, half, islands: assembled }
}

/// Solve one island's QP (without friction) with the configured solver: the dense solver
/// for islands of at most `dense_max_bodies` bodies (falling back to the method's own
/// solver, recorded, when it cannot certify its answer), else Clarabel or the warm solver
/// (started from `lambda0()`).
pub fn solve_qp(
    solver: &SolverConfig,
    qp: &Qp,
    n_bodies: usize,
    lambda0: impl FnOnce() -> Vec<f64>,
) -> QpOutcome {
    let mut dense_iterations = None;
    if n_bodies <= solver.dense_max_bodies() {
        let o = solve_dense(qp, solver.dense_tolerance());
        if o.solved {
            return o;
        }
        dense_iterations = Some(o.iterations);
    }
    let mut o = match *solver {
        SolverConfig::Clarabel { tolerance, max_iterations, .. } => {
            solve_clarabel(qp, tolerance, max_iterations)
        }
        SolverConfig::Warm { tolerance, max_iterations, fallback_tolerance, .. } => {
            solve_warm(qp, &lambda0(), tolerance, max_iterations, fallback_tolerance)
        }
        // The contact-space solver needs the island's bodies and contacts (it runs in
        // `step_with_friction`); given a bare QP, Clarabel solves it.
        SolverConfig::Nlgs { fallback_tolerance, .. } => {
            solve_clarabel(qp, fallback_tolerance, 200)
        }
    };
    if let Some(it) = dense_iterations {
        o.fallback = true;
        o.iterations += it;
    }
    o
}

/// Advance every active block by one step given the contacts detected at the start of the
/// step (contacts touching an inactive block are ignored).
pub fn step_with_contacts(
    params: &StepParams,
    blocks: &mut [Block],
    contacts: &[Contact],
    warm: &mut WarmStart,
) -> JumpReport {
    step_with_friction(params, &FrictionConfig::default(), blocks, contacts, warm)
}

/// [`step_with_contacts`] with Coulomb friction ([`crate::solver::friction`]): islands with a
/// frictional contact are solved by Clarabel as second-order-cone programs (whatever the
/// configured solver); the report's `solver` is then `clarabel_socp` (or `mixed`).
pub fn step_with_friction(
    params: &StepParams,
    friction: &FrictionConfig,
    blocks: &mut [Block],
    contacts: &[Contact],
    warm: &mut WarmStart,
) -> JumpReport {
    let dt = params.dt;
    let t0 = Instant::now();
    let Prepared { contacts, half, islands: assembled } = prepare(params, blocks, contacts);
    let mut rep =
        JumpReport { solver: "none".into(), status: QpStatus::Solved, ..Default::default() };
    rep.t_assembly = t0.elapsed().as_secs_f64();
    for c in &contacts {
        match c.kind() {
            ContactKind::BlockBlock => rep.contacts_block_block += 1,
            ContactKind::BlockTerrain => rep.contacts_block_terrain += 1,
            ContactKind::BlockPlane => rep.contacts_block_plane += 1,
        }
        rep.max_penetration = rep.max_penetration.max(-c.gap);
    }
    let mut u_plus: Vec<(Vector3<f64>, Vector3<f64>)> = blocks
        .iter()
        .enumerate()
        .map(|(k, b)| (b.vel - Vector3::z() * (params.gravity * dt), half[k].1))
        .collect();
    rep.islands = assembled.len() as u32;
    let keys_prev = &*warm;
    // Whether a contact's μ needs its slip speed (velocity-weakening friction).
    let slip_dependent = friction.depends_on_slip();
    let t1 = Instant::now();
    let results: Vec<IslandResult> = assembled
        .par_iter()
        .map(|AssembledIsland { island, qp, bodies, contacts: jc, keys }| {
            // Where the previous step stored each contact's values (the warm start's and
            // the slip credit's), looked up once.
            let found = keys_prev.resolve(keys);
            // A big island's halves, made once for its sweeps and its position correction.
            let cut = std::cell::OnceCell::new();
            let halves = || cut.get_or_init(|| Halves::of(bodies, jc));
            // Coulomb friction: islands with a frictional contact are conic programs.
            // Each frictional contact's μ and slip credit, and its slip speed before the jump
            // (computed once: μ, the credit and the next step's growth of slip use it).
            let (fr, slip_before): (Vec<ContactFriction>, Vec<f64>) = island
                .contacts
                .iter()
                .zip(jc.iter())
                .zip(&found)
                .map(|((&k, c), &at)| {
                    let kind = contacts[k].kind();
                    let mu_rest = friction.mu(kind);
                    if mu_rest <= 0.0 {
                        return (ContactFriction { mu: 0.0, credit: 0.0 }, 0.0);
                    }
                    let slip = friction::slip_speed(friction::relative_velocity(bodies, c), c);
                    let mu = if slip_dependent { friction.mu_at(kind, slip) } else { mu_rest };
                    let credit = if friction.slip_credit {
                        // A speculative contact's gap is closed by its constraint already.
                        let gap = if c.separation < 0.0 { 0.0 } else { contacts[k].gap };
                        let (beta, g) = (params.beta, params.gravity);
                        let slip_change = keys_prev.slip_change_at(at);
                        friction::slip_credit(mu, slip, gap, beta, dt, g, slip_change)
                    } else {
                        0.0
                    };
                    (ContactFriction { mu, credit }, slip)
                })
                .unzip();
            let mut cones: Option<ConeQp> = None;
            let mut relaxed = false;
            let mut relaxed_qp: Option<Qp> = None;
            let mut tangential = vec![Vector3::zeros(); jc.len()];
            let mut sweeps = 0;
            let mut impulses: Option<Vec<nlgs::ContactImpulse>> = None;
            let mut nlgs_certificate: Option<Certificate> = None;
            let frictional = fr.iter().any(|f| f.mu > 0.0);
            let (clarabel_tolerance, clarabel_iterations) = params.solver.clarabel_settings();
            let solve_socp = |tangential: &mut Vec<Vector3<f64>>| {
                let (co, retried, cq) = friction::solve_island(
                    qp,
                    bodies,
                    jc,
                    &fr,
                    clarabel_tolerance,
                    clarabel_iterations,
                );
                *tangential = co.tangential;
                (co.outcome, retried, cq)
            };
            let mut outcome = if let SolverConfig::Nlgs {
                tolerance,
                max_sweeps,
                frictional_max_contacts,
                max_contacts,
                loose_sweeps,
                admm_iterations,
                admm_sigma,
                ..
            } = params.solver
            {
                let cq = friction::assemble_cones(qp, bodies, jc, &fr);
                let mut initial = keys_prev.impulses_at(&found);
                // Work spent before the accepted method (sweeps and ADMM iterations).
                let mut spent = 0;
                let mut accepted = None;
                let limit = if frictional {
                    frictional_max_contacts.min(max_contacts)
                } else {
                    max_contacts
                };
                // The sweeps: the full method on the islands within the limit; at a loose
                // tolerance, sweeps that give up early on big frictionless ones, ADMM then
                // starting from where they stop.
                let sweeping = if jc.len() <= limit as usize {
                    Some((max_sweeps, nlgs::Finish::Polish))
                } else if !frictional && loose_sweeps > 0 && tolerance >= LOOSE_TOLERANCE {
                    Some((loose_sweeps, nlgs::Finish::GiveUp))
                } else {
                    None
                };
                if let Some((budget, finish)) = sweeping {
                    let give_up = finish == nlgs::Finish::GiveUp;
                    let h = (give_up && jc.len() >= BIG_ISLAND_CONTACTS).then(halves);
                    let nl =
                        nlgs::solve_halved(&cq, bodies, jc, &initial, tolerance, budget, finish, h);
                    sweeps = nl.sweeps;
                    spent += nl.sweeps;
                    if nl.solution.solved {
                        accepted = Some((SolverUsed::Nlgs, nl.solution));
                    } else if finish == nlgs::Finish::GiveUp {
                        initial = nl.solution.impulses;
                    }
                }
                if accepted.is_none() && admm_iterations > 0 && !jc.is_empty() {
                    let ad = admm::solve(
                        &cq,
                        bodies,
                        jc,
                        &initial,
                        admm::Settings {
                            sigma: admm_sigma,
                            ..admm::Settings::new(tolerance, admm_iterations)
                        },
                    );
                    spent += ad.iterations;
                    if ad.solution.solved {
                        accepted = Some((SolverUsed::Admm, ad.solution));
                    }
                }
                match accepted {
                    Some((solver, sol)) => {
                        let cert = sol.certificate;
                        tangential = sol.friction;
                        impulses = Some(sol.impulses);
                        nlgs_certificate = Some(cert);
                        if frictional {
                            cones = Some(cq);
                        }
                        QpOutcome {
                            lambda: sol.normal,
                            x: sol.x,
                            status: QpStatus::Solved,
                            solved: true,
                            iterations: spent,
                            r_prim: cert.primal,
                            r_dual: cert.stationarity,
                            solver,
                            fallback: false,
                        }
                    }
                    None if frictional => {
                        let (o, retried, cq) = solve_socp(&mut tangential);
                        (relaxed, cones) = (retried, Some(cq));
                        QpOutcome { fallback: true, iterations: o.iterations + spent, ..o }
                    }
                    None => {
                        let o = solve_clarabel(qp, clarabel_tolerance, clarabel_iterations);
                        QpOutcome { fallback: true, iterations: o.iterations + spent, ..o }
                    }
                }
            } else if frictional {
                let (o, retried, cq) = solve_socp(&mut tangential);
                (relaxed, cones) = (retried, Some(cq));
                o
            } else {
                solve_qp(&params.solver, qp, bodies.len(), || keys_prev.lambda_at(&found))
            };
            // Separation velocities demanded of a block wedged between opposing faces can
            // contradict each other (PrimalInfeasible). Without them the QP is always
            // feasible (u⁺ = 0 satisfies every c_kᵀu⁺ ≥ 0), so the island is solved again
            // with Clarabel and no separation; the status records it.
            if cones.is_none() && !outcome.solved && jc.iter().any(|c| c.separation > 0.0) {
                let mut q = qp.clone();
                for (r, c) in q.r.iter_mut().zip(jc.iter()) {
                    *r -= 0.5 * c.separation.max(0.0);
                }
                let dense = (bodies.len() <= params.solver.dense_max_bodies())
                    .then(|| solve_dense(&q, params.solver.dense_tolerance()))
                    .filter(|o| o.solved);
                let retry = dense
                    .unwrap_or_else(|| solve_clarabel(&q, clarabel_tolerance, clarabel_iterations));
                if retry.solved {
                    outcome = QpOutcome {
                        status: QpStatus::SolvedWithoutSeparation(Box::new(outcome.status.clone())),
                        fallback: true,
                        iterations: outcome.iterations + retry.iterations,
                        ..retry
                    };
                    relaxed = true;
                    relaxed_qp = Some(q);
                }
            }
            // The certificate of the accepted solution, on the program it solved.
            let certificate = match (&cones, nlgs_certificate) {
                (_, Some(c)) => c,
                (Some(cq), None) => {
                    let mut z = vec![0.0; cq.qp.m()];
                    for (k, &row) in cq.normal_rows.iter().enumerate() {
                        z[row] = outcome.lambda[k];
                        if cq.mu[k] > 0.0 {
                            let (t1, t2) = cq.tangents[k];
                            z[row + 1] = tangential[k].dot(&t1) / cq.mu[k];
                            z[row + 2] = tangential[k].dot(&t2) / cq.mu[k];
                        }
                    }
                    certify(&cq.qp, &cq.cones, &outcome.x, &z)
                }
                (None, None) => {
                    let q = relaxed_qp.as_ref().unwrap_or(qp);
                    certify(
                        q,
                        &[SupportedConeT::NonnegativeConeT(q.m())],
                        &outcome.x,
                        &outcome.lambda,
                    )
                }
            };
            let correction = match params.correction {
                Correction::Position { slop, iterations, tolerance } => {
                    let gaps: Vec<f64> = island.contacts.iter().map(|&k| contacts[k].gap).collect();
                    let cx = qp.c_mul(&outcome.x);
                    let target: Vec<f64> = gaps
                        .iter()
                        .zip(&cx)
                        .map(|(g, v)| params.beta * (-(g + dt * v) - slop))
                        .collect();
                    if tolerance == 0.0 && jc.len() >= BIG_ISLAND_CONTACTS {
                        let h = Some(halves());
                        correction_in_halves(bodies, jc, &target, keys, iterations, h)
                    } else {
                        let order = correction_order(keys, |k| jc[k].point);
                        position_correction(bodies, jc, &target, &order, iterations, tolerance)
                    }
                }
                Correction::Velocity | Correction::AfterMotion { .. } => Vec::new(),
            };
            let x = &outcome.x;
            let mut u = vec![0.0; x.len()];
            let mut work_internal = 0.0;
            for (l, b) in bodies.iter().enumerate() {
                let o = 6 * l;
                let um = [b.vel.x, b.vel.y, b.vel.z, b.omega.x, b.omega.y, b.omega.z];
                for a in 0..6 {
                    u[o + a] = 2.0 * x[o + a] - um[a];
                }
                let du = Vector3::new(u[o] - um[0], u[o + 1] - um[1], u[o + 2] - um[2]);
                let dw = Vector3::new(u[o + 3] - um[3], u[o + 4] - um[4], u[o + 5] - um[5]);
                let mut pl = du * b.mass;
                pl.z += b.mass * params.gravity * dt; // P = M Δu − b
                let pa = b.inertia * dw;
                work_internal += pl.dot(&Vector3::new(x[o], x[o + 1], x[o + 2]))
                    + pa.dot(&Vector3::new(x[o + 3], x[o + 4], x[o + 5]));
            }
            let separation_work: f64 = if relaxed {
                0.0
            } else {
                // Only the correction's separation velocities do work; a speculative contact's
                // closing is the jump's own (its energy is in the dissipation).
                jc.iter().zip(&outcome.lambda).map(|(c, l)| 0.5 * l * c.separation.max(0.0)).sum()
            };
            // How much each frictional contact's slip speed grew in this jump, for the next
            // step's slip credit.
            let slip_change: Vec<f64> = if friction.slip_credit && outcome.solved {
                jc.iter()
                    .zip(fr.iter().zip(&slip_before))
                    .map(|(c, (f, &before))| {
                        if f.mu > 0.0 {
                            let after = friction::relative_velocity_of(bodies, c, &u);
                            friction::slip_speed(after, c) - before
                        } else {
                            0.0
                        }
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let warm_start = impulses.unwrap_or_else(|| {
                outcome
                    .lambda
                    .iter()
                    .zip(&tangential)
                    .map(|(&normal, &tangential)| nlgs::ContactImpulse { normal, tangential })
                    .collect()
            });
            IslandResult {
                u_plus: u,
                warm_start,
                certificate,
                correction,
                sweeps,
                dissipated: separation_work - work_internal,
                separation_work,
                outcome,
                keys: keys.clone(),
                cones,
                slip_change,
            }
        })
        .collect();
    rep.t_solve = t1.elapsed().as_secs_f64();

    let mut used_clarabel = false;
    let mut used_warm = false;
    let mut used_socp = false;
    let mut used_dense = false;
    let mut used_nlgs = false;
    let mut used_admm = false;
    let mut next_warm = WarmStart::default();
    let mut corrections: Vec<Option<(Vector3<f64>, Vector3<f64>)>> = vec![None; blocks.len()];
    for (k, (res, AssembledIsland { island, qp, .. })) in results.iter().zip(assembled).enumerate()
    {
        let o = &res.outcome;
        rep.qp_variables = rep.qp_variables.max(qp.n() as u32);
        rep.qp_constraints = rep.qp_constraints.max(qp.m() as u32);
        rep.iterations += o.iterations;
        rep.r_prim = rep.r_prim.max(o.r_prim);
        rep.r_dual = rep.r_dual.max(o.r_dual);
        rep.fallback |= o.fallback;
        rep.sweeps += res.sweeps;
        if o.solved {
            let w = res.certificate.worst();
            rep.accuracy = if w.is_nan() { f64::NAN } else { rep.accuracy.max(w) };
        }
        match o.solver {
            SolverUsed::Clarabel if res.cones.is_some() => used_socp = true,
            SolverUsed::Clarabel => used_clarabel = true,
            SolverUsed::Warm => used_warm = true,
            SolverUsed::Nlgs => used_nlgs = true,
            SolverUsed::Admm => used_admm = true,
            SolverUsed::Dense => {
                used_dense = true;
                rep.islands_dense += 1;
            }
            SolverUsed::None => {}
        }
        if o.solved && o.fallback && matches!(o.status, QpStatus::SolvedWithoutSeparation(_)) {
            // Solved, but only after dropping the separation velocities: say so unless
            // the step already has a worse status.
            if rep.status == QpStatus::Solved {
                rep.status = o.status.clone();
            }
        }
        if !o.solved {
            rep.status = o.status.clone();
            rep.failed.push(FailedQp {
                island: k,
                block_ids: island.bodies.iter().map(|&b| blocks[b].id).collect(),
                qp: res.cones.as_ref().map(|c| c.qp.clone()).unwrap_or(qp),
                status: o.status.clone(),
                conic: res.cones.clone(),
            });
        }
        rep.dissipated += res.dissipated;
        rep.separation_work += res.separation_work;
        for (l, &b) in island.bodies.iter().enumerate() {
            let u = &res.u_plus[6 * l..6 * l + 6];
            u_plus[b] = (Vector3::new(u[0], u[1], u[2]), Vector3::new(u[3], u[4], u[5]));
            if let Some(c) = res.correction.get(l) {
                corrections[b] = Some(*c);
            }
        }
        if matches!(o.solver, SolverUsed::Nlgs | SolverUsed::Admm) || res.cones.is_some() {
            let tangential: Vec<Vector3<f64>> =
                res.warm_start.iter().map(|w| w.tangential).collect();
            next_warm.record_island(
                &res.keys,
                res.warm_start.iter().map(|w| w.normal),
                Some(&tangential),
                &res.slip_change,
            );
        } else {
            next_warm.record_island(&res.keys, o.lambda.iter().copied(), None, &res.slip_change);
        }
    }
    *warm = next_warm;
    let others = match (used_clarabel, used_warm, used_socp, used_nlgs, used_admm) {
        (false, false, false, false, false) => None,
        (true, false, false, false, false) => Some("clarabel"),
        (false, true, false, false, false) => Some("warm"),
        (false, false, true, false, false) => Some("clarabel_socp"),
        (false, false, false, true, false) => Some("nlgs"),
        (false, false, false, false, true) => Some("admm"),
        (false, false, false, true, true) => Some("nlgs+admm"),
        _ => Some("mixed"),
    };
    rep.solver = match (others, used_dense) {
        (None, false) => "none".into(),
        (None, true) => "dense".into(),
        (Some(o), false) => o.into(),
        (Some(o), true) => format!("{o}+dense"),
    };

    // 4. Positions and the second half of the rotation, then the position correction (in
    // parallel; gravity's and the correction's work are summed afterwards in block order).
    let work: Vec<Option<(f64, f64)>> = blocks
        .par_iter_mut()
        .zip(u_plus.par_iter().zip(half.par_iter().zip(corrections.par_iter())))
        .map(|(b, (&(up, wp), ((half_rot, _), corr)))| {
            if !b.active {
                return None;
            }
            let dz = 0.5 * dt * (b.vel.z + up.z);
            b.pos += (b.vel + up) * (0.5 * dt);
            b.vel = up;
            let (rot, omega) =
                rotation::advance(params.rotation, *half_rot, wp, &b.inertia, 0.5 * dt);
            b.rot = rot;
            b.omega = omega;
            let lift = corr.map_or(0.0, |(dp, dtheta)| move_by(b, &dp, &dtheta, params.gravity));
            Some((b.mass * params.gravity * dz, lift))
        })
        .collect();
    for (w, lift) in work.into_iter().flatten() {
        rep.gravity_work -= w;
        rep.separation_work += lift;
    }
    rep
}

/// The order in which the position correction sweeps contacts: by the identity of their
/// pair (a block–block pair is the same whichever block the detection made i), then by
/// point, so that the correction does not depend on the order of the blocks.
pub fn correction_order(keys: &[ContactKey], point: impl Fn(usize) -> Vector3<f64>) -> Vec<usize> {
    correction_order_of(keys, &point, 0..keys.len())
}

/// `which` (contact indices, ascending) in [`correction_order`]: each contact's sort key
/// made once, (pair, point) with the point's coordinates as integers ordered as
/// `f64::total_cmp` orders them, then its index (ties keep the ascending order, as a
/// stable sort does); sorted on rayon's threads for a big island.
fn correction_order_of(
    keys: &[ContactKey],
    point: &impl Fn(usize) -> Vector3<f64>,
    which: impl IntoIterator<Item = usize>,
) -> Vec<usize> {
    let total = |v: f64| {
        let b = v.to_bits();
        if b >> 63 == 1 { !b } else { b | 1 << 63 }
    };
    let key = |k: usize| {
        let pair = match keys[k].other {
            (0, o) => (0u8, (keys[k].id as u64).min(o), (keys[k].id as u64).max(o)),
            (kind, o) => (kind, keys[k].id as u64, o),
        };
        let p = point(k);
        (pair, [total(p.x), total(p.y), total(p.z)], k)
    };
    let mut sorted: Vec<_> = which.into_iter().map(key).collect();
    if sorted.len() >= BIG_ISLAND_CONTACTS {
        sorted.par_sort_unstable();
    } else {
        sorted.sort_unstable();
    }
    sorted.into_iter().map(|(_, _, k)| k).collect()
}

/// Move block `b` by a position correction (translation `dp`, rotation vector `dtheta`);
/// returns the work done against gravity `gravity`, J. Its angular velocity turns with it:
/// the body-frame angular velocity, hence the kinetic energy, is unchanged.
pub(crate) fn move_by(
    b: &mut Block,
    dp: &Vector3<f64>,
    dtheta: &Vector3<f64>,
    gravity: f64,
) -> f64 {
    b.pos += dp;
    if *dtheta != Vector3::zeros() {
        let turn = UnitQuaternion::from_scaled_axis(*dtheta);
        b.rot = turn * b.rot;
        b.omega = turn * b.omega;
    }
    b.mass * gravity * dp.z
}

/// Position post-stabilisation of an island (split impulse): the mass-weighted smallest
/// displacement Δq (translation and rotation vector per body) with c_kᵀΔq ≥ `target[k]`
/// for every contact, by `iterations` sweeps of projected Gauss–Seidel on the multipliers
/// λ_k ≥ 0 of Δq = M⁻¹ Σ c_k λ_k, visiting the contacts in `order`. `target[k]` = β(−δ'_k − slop) for the gap δ'_k predicted
/// at the end of the step (negative for a gap that stays open: the correction may not push
/// a block into another beyond it). Velocities are untouched, so no kinetic energy is
/// injected; when the targets contradict each other (a block wedged between opposing
/// faces) the sweeps settle on a compromise instead of failing. With `tolerance` > 0 (m)
/// an update that changes its contact's corrected gap by at most `tolerance` is skipped,
/// only the contacts of blocks moved since their last update are solved again, and the
/// sweeps stop at the first that applies nothing (`iterations` is then a cap). Zero when
/// no target is positive.
pub fn position_correction(
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    target: &[f64],
    order: &[usize],
    iterations: u32,
    tolerance: f64,
) -> Vec<(Vector3<f64>, Vector3<f64>)> {
    let mut dq = vec![(Vector3::zeros(), Vector3::zeros()); bodies.len()];
    if !target.iter().any(|t| *t > 0.0) {
        return dq;
    }
    let all: Vec<usize> = (0..contacts.len()).collect();
    let rows = correction_rows(bodies, contacts, &all, |b| b);
    let mut lambda = vec![0.0; contacts.len()];
    // With a tolerance, updates at or below it are not applied, and a contact is solved
    // again only when one of its blocks has moved since it was last solved (an update
    // counter, the count at each block's last move and at each contact's last solve).
    let converging = tolerance > 0.0;
    let mut count = 1u64;
    let mut moved_at = vec![1u64; bodies.len()];
    let mut solved_at = vec![0u64; contacts.len()];
    for _ in 0..iterations {
        let mut applied = false;
        for &k in order {
            let row = &rows[k];
            let sides = &row.sides[..row.count];
            if row.w <= 0.0 || converging && sides.iter().all(|s| moved_at[s.0] <= solved_at[k]) {
                continue;
            }
            let new = row.update(&dq, 0, lambda[k], target[k]);
            let d = new - lambda[k];
            if if converging { (d * row.w).abs() > tolerance } else { d != 0.0 } {
                lambda[k] = new;
                row.apply(&mut dq, 0, d);
                applied = true;
                if converging {
                    count += 1;
                    sides.iter().for_each(|s| moved_at[s.0] = count);
                }
            }
            if converging {
                solved_at[k] = count;
            }
        }
        if converging && !applied {
            break;
        }
    }
    dq
}

/// One side of a contact in the position correction: (body, linear row, angular row,
/// M⁻¹ linear, M⁻¹ angular).
type CorrectionSide = (usize, Vector3<f64>, Vector3<f64>, Vector3<f64>, Vector3<f64>);

/// A contact of the position correction: its sides (the first `count` of them) and
/// w = cᵀM⁻¹c.
struct CorrectionRow {
    sides: [CorrectionSide; 2],
    count: usize,
    w: f64,
}

impl CorrectionRow {
    /// The contact's multiplier after its projected Gauss–Seidel update from `lambda`, at
    /// the displacements `dq` (of the bodies from number `first` on).
    fn update(
        &self,
        dq: &[(Vector3<f64>, Vector3<f64>)],
        first: usize,
        lambda: f64,
        target: f64,
    ) -> f64 {
        let sides = &self.sides[..self.count];
        let cq: f64 =
            sides.iter().map(|s| s.1.dot(&dq[s.0 - first].0) + s.2.dot(&dq[s.0 - first].1)).sum();
        (lambda + (target - cq) / self.w).max(0.0)
    }

    /// dq += M⁻¹ c d.
    fn apply(&self, dq: &mut [(Vector3<f64>, Vector3<f64>)], first: usize, d: f64) {
        for s in &self.sides[..self.count] {
            dq[s.0 - first].0 += s.3 * d;
            dq[s.0 - first].1 += s.4 * d;
        }
    }
}

/// The position correction's rows of `contacts` taken in `which` order, their bodies
/// numbered by `number`.
fn correction_rows(
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    which: &[usize],
    number: impl Fn(usize) -> usize + Sync,
) -> Vec<CorrectionRow> {
    let inv_i: Vec<Matrix3<f64>> =
        bodies.iter().map(|b| b.inertia.try_inverse().unwrap_or_else(Matrix3::zeros)).collect();
    let side = |c: &JumpContact, b: usize, sign: f64| -> CorrectionSide {
        let lin = c.normal * sign;
        let ang = (c.point - bodies[b].pos).cross(&c.normal) * sign;
        (number(b), lin, ang, lin / bodies[b].mass, inv_i[b] * ang)
    };
    let row = |k: usize| {
        let c = &contacts[k];
        let first = side(c, c.i, 1.0);
        let (sides, count) = match c.j {
            Some(j) => ([first, side(c, j, -1.0)], 2),
            None => ([first, first], 1),
        };
        let w: f64 = sides[..count].iter().map(|s| s.1.dot(&s.3) + s.2.dot(&s.4)).sum();
        CorrectionRow { sides, count, w }
    };
    if which.len() >= BIG_ISLAND_CONTACTS {
        which.par_iter().with_min_len(256).map(|&k| row(k)).collect()
    } else {
        which.iter().map(|&k| row(k)).collect()
    }
}

/// [`position_correction`] without a tolerance (every update applied, `iterations` sweeps)
/// on a big island, swept in two halves ([`Halves`]): in each sweep the contacts of each
/// half (on two threads when a rayon worker is idle), then those across the cut, each
/// group in [`correction_order`]. The answer is the same on one thread or two; it differs
/// from [`position_correction`]'s only by the order of the sweep.
pub fn position_correction_in_halves(
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    target: &[f64],
    keys: &[ContactKey],
    iterations: u32,
) -> Vec<(Vector3<f64>, Vector3<f64>)> {
    correction_in_halves(bodies, contacts, target, keys, iterations, None)
}

/// [`position_correction_in_halves`], with the island's [`Halves`] when the caller has made
/// them already.
fn correction_in_halves(
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    target: &[f64],
    keys: &[ContactKey],
    iterations: u32,
    made: Option<&Halves>,
) -> Vec<(Vector3<f64>, Vector3<f64>)> {
    let mut out = vec![(Vector3::zeros(), Vector3::zeros()); bodies.len()];
    if !target.iter().any(|t| *t > 0.0) {
        return out;
    }
    let h = Halves::made_or_of(made, bodies, contacts);
    let [e0, e1] = h.ends;
    // Each group in the correction order (that of its contacts within the island's).
    let groups = [&h.contacts[..e0], &h.contacts[e0..e1], &h.contacts[e1..]];
    let point = |k: usize| contacts[k].point;
    let order: Vec<usize> =
        groups.iter().flat_map(|g| correction_order_of(keys, &point, g.iter().copied())).collect();
    let rows = correction_rows(bodies, contacts, &order, |b| h.number[b]);
    let target: Vec<f64> = order.iter().map(|&k| target[k]).collect();
    let mut lambda = vec![0.0; rows.len()];
    let mut dq = vec![(Vector3::zeros(), Vector3::zeros()); bodies.len()];
    let sweep = |rows: &[CorrectionRow],
                 target: &[f64],
                 lambda: &mut [f64],
                 dq: &mut [(Vector3<f64>, Vector3<f64>)],
                 first: usize| {
        for ((row, &t), l) in rows.iter().zip(target).zip(lambda.iter_mut()) {
            if row.w <= 0.0 {
                continue;
            }
            let new = row.update(dq, first, *l, t);
            let d = new - *l;
            if d != 0.0 {
                *l = new;
                row.apply(dq, first, d);
            }
        }
    };
    Pair::solve(|pair| {
        for _ in 0..iterations {
            {
                let (l0, l1) = lambda[..e1].split_at_mut(e0);
                let (d0, d1) = dq.split_at_mut(h.first_bodies);
                let parts = [
                    (&rows[..e0], &target[..e0], l0, d0, 0),
                    (&rows[e0..e1], &target[e0..e1], l1, d1, h.first_bodies),
                ];
                both(pair, parts, |(rows, target, l, dq, first)| {
                    sweep(rows, target, l, dq, *first)
                });
            }
            sweep(&rows[e1..], &target[e1..], &mut lambda[e1..], &mut dq, 0);
        }
    });
    for (new, &b) in h.bodies.iter().enumerate() {
        out[b] = dq[new];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keyed sort of `correction_order` is the stable sort by (pair, point) with
    /// `f64::total_cmp`: on 3000 contacts (over `BIG_ISLAND_CONTACTS`, so sorted on rayon's
    /// threads) and on 300, with repeated pairs and points, both pair orientations, ±0,
    /// negative coordinates and infinities.
    #[test]
    fn the_keyed_correction_order_is_the_stable_comparison_sort() {
        let mut rnd = crate::solver::testing::uniform(5);
        for n in [300, 3000] {
            let values = [-1.5, -0.0, 0.0, 0.25, 2.0, f64::INFINITY, f64::NEG_INFINITY];
            let mut pick = |k: usize| -> f64 {
                let r = rnd() + 0.5;
                if k.is_multiple_of(3) {
                    values[(r * values.len() as f64) as usize % values.len()]
                } else {
                    r - 0.5
                }
            };
            let keys: Vec<ContactKey> = (0..n)
                .map(|k| ContactKey {
                    id: (k % 17) as u32,
                    other: [(0, (k % 5) as u64), (1, 3), (2, (k % 2) as u64)][k % 3],
                    cell: [0; 3],
                })
                .collect();
            let points: Vec<Vector3<f64>> =
                (0..n).map(|k| Vector3::new(pick(k), pick(k + 1), pick(k))).collect();
            let pair = |k: &ContactKey| match k.other {
                (0, o) => (0u8, (k.id as u64).min(o), (k.id as u64).max(o)),
                (kind, o) => (kind, k.id as u64, o),
            };
            let mut expected: Vec<usize> = (0..n).collect();
            expected.sort_by(|&a, &b| {
                pair(&keys[a]).cmp(&pair(&keys[b])).then_with(|| {
                    let (p, q) = (points[a], points[b]);
                    p.x.total_cmp(&q.x).then(p.y.total_cmp(&q.y)).then(p.z.total_cmp(&q.z))
                })
            });
            assert_eq!(correction_order(&keys, |k| points[k]), expected, "{n} contacts");
        }
    }
}
