//! The simulation loop on in-memory data: detection, the step, deactivation of bodies
//! that leave the terrain, energies and diagnostics per step.

use crate::body::Block;
use crate::config::{Config, ConfigError, SeparationMethod};
use crate::geometry::broad::BroadCache;
use crate::geometry::colliders::Statics;
use crate::geometry::contact::{Contact, Other};
use crate::geometry::detect::{DetectParams, DetectTimings, detect, detect_cached};
use crate::solver::assembly::{JumpBody, JumpContact};
use crate::solver::warm::ContactKey;
use crate::solver::warm::WarmStart;
use crate::step::{
    Correction, FailedQp, JumpReport, KappaLaw, StepParams, contact_key, correction_order, move_by,
    position_correction, step_with_friction,
};
use std::collections::BTreeMap;
use std::time::Instant;

/// Errors of the engine on in-memory data.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("block {id}: {message}")]
    InvalidBlock { id: u32, message: String },
    #[error("duplicate block id {0}")]
    DuplicateId(u32),
    #[error(
        "{count} pairs of bodies overlap at the start (deepest first: {pairs}); move them apart or set allow_initial_overlap = true to let the separation velocity resolve them"
    )]
    InitialOverlap { count: usize, pairs: String },
}

/// Energies after a step, J.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Energies {
    pub step: u64,
    pub time: f64,
    pub kinetic_translational: f64,
    pub kinetic_rotational: f64,
    pub potential: f64,
    pub dissipated: f64,
    pub dissipated_cumulative: f64,
    pub gravity_work: f64,
    pub separation_work: f64,
    pub separation_work_cumulative: f64,
    /// Kinetic + potential energy of bodies deactivated so far (left the terrain).
    pub removed_cumulative: f64,
    /// (KE + PE + D_cum − W_s,cum + removed) − (KE₀ + PE₀): zero up to round-off for the
    /// torque-free model; the constant-ω model changes rotational KE between jumps.
    pub balance_error: f64,
}

impl Energies {
    /// Total kinetic energy, translational and rotational, J.
    pub fn kinetic(&self) -> f64 {
        self.kinetic_translational + self.kinetic_rotational
    }
}

/// Diagnostics of a step.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    pub step: u64,
    pub time: f64,
    pub jump: JumpReport,
    pub t_broad: f64,
    pub t_narrow: f64,
    /// Ids of the blocks deactivated at this step.
    pub deactivated: Vec<u32>,
}

/// Cumulative sums carried from step to step (part of a checkpoint).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    pub dissipated: f64,
    pub gravity_work: f64,
    pub separation_work: f64,
    pub removed: f64,
    pub initial_energy: f64,
}

/// A simulation in memory.
pub struct Simulation {
    pub config: Config,
    pub params: StepParams,
    pub blocks: Vec<Block>,
    pub statics: Statics,
    pub step: u64,
    pub warm: WarmStart,
    pub totals: Totals,
    /// The last detection's contacts, the blocks' poses and the tolerance it saw: the next
    /// detection computes again only the contacts of blocks that moved since
    /// ([`detect_again`]).
    last_detection: Option<(Vec<Contact>, Vec<Pose>, f64)>,
    /// The broad phase's pairs and TIN triangles kept between detections (the same
    /// contacts either way; like `last_detection`, it takes `statics` as never changing).
    broad: BroadCache,
}

/// A block's position, orientation and activity, by their bits (what a contact depends on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pose([u64; 7], bool);

impl Pose {
    fn of(b: &Block) -> Self {
        let q = b.rot.coords;
        let bits = [b.pos.x, b.pos.y, b.pos.z, q.x, q.y, q.z, q.w].map(f64::to_bits);
        Pose(bits, b.active)
    }
}

fn finite3(v: &nalgebra::Vector3<f64>) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// Check the blocks' values (sizes, masses, finiteness, unique ids).
pub fn validate_blocks(blocks: &[Block]) -> Result<(), SimError> {
    let mut seen = std::collections::BTreeSet::new();
    for b in blocks {
        let bad = |m: &str| Err(SimError::InvalidBlock { id: b.id, message: m.to_string() });
        if !seen.insert(b.id) {
            return Err(SimError::DuplicateId(b.id));
        }
        if !(finite3(&b.half) && b.half.min() > 0.0) {
            return bad(&format!(
                "edge lengths must be finite and > 0, got {:?}",
                (b.half * 2.0).as_slice()
            ));
        }
        if !(b.mass.is_finite() && b.mass > 0.0) {
            return bad(&format!("mass must be finite and > 0, got {}", b.mass));
        }
        if !(finite3(&b.pos)
            && finite3(&b.vel)
            && finite3(&b.omega)
            && b.rot.coords.iter().all(|x| x.is_finite()))
        {
            return bad(
                "position, orientation, velocity and angular velocity must be finite (NaN or infinite value)",
            );
        }
    }
    Ok(())
}

/// Add `p.speed` to every active block's velocity, in the block's direction of `p`
/// ([`crate::config::Perturbation::direction`]).
pub fn perturb(blocks: &mut [Block], p: &crate::config::Perturbation) {
    for b in blocks.iter_mut().filter(|b| b.active) {
        let [x, y, z] = p.direction(b.id);
        b.vel += nalgebra::Vector3::new(x, y, z) * p.speed;
    }
}

impl Simulation {
    /// A simulation of `blocks` among `statics`; refuses bad input and initial overlaps.
    /// With `config.perturbation`, the blocks' velocities are perturbed first.
    pub fn new(config: Config, blocks: Vec<Block>, statics: Statics) -> Result<Self, SimError> {
        config.validate()?;
        validate_blocks(&blocks)?;
        let params = StepParams {
            dt: config.dt,
            gravity: config.gravity,
            kappa: KappaLaw::from_config(&config.kappa, &blocks),
            beta: config.separation.beta,
            max_separation: config.separation.max_velocity,
            correction: match config.separation.method {
                SeparationMethod::Position => Correction::Position {
                    slop: config.separation.slop,
                    iterations: config.separation.iterations,
                    tolerance: config.separation.tolerance,
                },
                SeparationMethod::PositionAfterMotion => Correction::AfterMotion {
                    slop: config.separation.slop,
                    iterations: config.separation.iterations,
                    tolerance: config.separation.tolerance,
                    passes: config.separation.passes,
                    more: config.separation.more_passes,
                },
                SeparationMethod::Velocity => Correction::Velocity,
            },
            rotation: config.rotation,
            solver: config.solver.clone(),
            gaps: config.gaps,
        };
        let mut blocks = blocks;
        if let Some(p) = config.perturbation {
            perturb(&mut blocks, &p);
        }
        let mut sim = Simulation {
            config,
            params,
            blocks,
            statics,
            step: 0,
            warm: WarmStart::default(),
            totals: Totals::default(),
            last_detection: None,
            broad: BroadCache::default(),
        };
        if !sim.config.allow_initial_overlap {
            sim.check_overlap()?;
        }
        let e = sim.energies(0.0, 0.0);
        sim.totals.initial_energy = e.kinetic() + e.potential;
        Ok(sim)
    }

    /// Contacts of the current configuration at the run's gap tolerance (what
    /// [`Simulation::advance`] solves for; tests and benches replay the QPs from it).
    pub fn detect(&self, timings: &mut DetectTimings) -> Vec<Contact> {
        let params = DetectParams { tolerance: self.config.tolerance };
        detect(&self.blocks, &self.statics, &params, timings)
    }

    /// [`Simulation::detect`], computing again only the contacts of the blocks that moved
    /// since the last call (the same contacts, in the same order); when none moved (nor
    /// was deactivated), the last call's contacts as they are.
    fn detect_moved(&mut self, timings: &mut DetectTimings) -> Vec<Contact> {
        let params = DetectParams { tolerance: self.config.tolerance };
        let poses: Vec<Pose> = self.blocks.iter().map(Pose::of).collect();
        let contacts = match self.last_detection.take() {
            Some((previous, before, tolerance))
                if before.len() == poses.len() && tolerance == params.tolerance =>
            {
                let moved: Vec<bool> = before.iter().zip(&poses).map(|(a, b)| a != b).collect();
                if moved.contains(&true) {
                    let reuse = Some((&previous[..], &moved[..]));
                    detect_cached(
                        &self.blocks,
                        &self.statics,
                        &params,
                        timings,
                        reuse,
                        &mut self.broad,
                    )
                } else {
                    *timings = DetectTimings::default();
                    previous
                }
            }
            _ => {
                detect_cached(&self.blocks, &self.statics, &params, timings, None, &mut self.broad)
            }
        };
        self.last_detection = Some((contacts.clone(), poses, params.tolerance));
        contacts
    }

    /// Contacts overlapping deeper than `initial_overlap_tolerance`, by pair, deepest first.
    pub fn overlaps(&self) -> Vec<(String, String, f64)> {
        let mut t = DetectTimings::default();
        let mut pairs: BTreeMap<(u32, String), f64> = BTreeMap::new();
        for c in self.detect(&mut t) {
            if !self.blocks[c.i].active || -c.gap <= self.config.initial_overlap_tolerance {
                continue;
            }
            let other = match c.other {
                Other::Block(j) => format!("block {}", self.blocks[j].id),
                Other::Terrain(k) => format!("terrain triangle {k}"),
                Other::Plane(k) => format!("plane {k}"),
            };
            let e = pairs.entry((self.blocks[c.i].id, other)).or_insert(0.0);
            *e = e.max(-c.gap);
        }
        let mut v: Vec<(String, String, f64)> =
            pairs.into_iter().map(|((i, o), d)| (format!("block {i}"), o, d)).collect();
        v.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        v
    }

    fn check_overlap(&self) -> Result<(), SimError> {
        let v = self.overlaps();
        if v.is_empty() {
            return Ok(());
        }
        let pairs = v
            .iter()
            .take(10)
            .map(|(a, b, d)| format!("{a} / {b}: {d:.4} m"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(SimError::InitialOverlap { count: v.len(), pairs })
    }

    /// Simulated time after the current step, s.
    pub fn time(&self) -> f64 {
        self.step as f64 * self.config.dt
    }

    /// Energies of the current state.
    pub fn energies(&self, dissipated: f64, separation: f64) -> Energies {
        let mut e = Energies {
            step: self.step,
            time: self.time(),
            dissipated,
            separation_work: separation,
            ..Default::default()
        };
        for b in self.blocks.iter().filter(|b| b.active) {
            let (t, r) = b.kinetic_energy();
            e.kinetic_translational += t;
            e.kinetic_rotational += r;
            e.potential += b.mass * self.config.gravity * b.pos.z;
        }
        e.dissipated_cumulative = self.totals.dissipated;
        e.gravity_work = self.totals.gravity_work;
        e.separation_work_cumulative = self.totals.separation_work;
        e.removed_cumulative = self.totals.removed;
        if self.step > 0 {
            e.balance_error = e.kinetic_translational
                + e.kinetic_rotational
                + e.potential
                + e.dissipated_cumulative
                - e.separation_work_cumulative
                + e.removed_cumulative
                - self.totals.initial_energy;
        }
        e
    }

    /// One step: detection, jump, motion, deactivation.
    pub fn advance(&mut self) -> (Energies, Diagnostics) {
        let mut timings = DetectTimings::default();
        let contacts = self.detect_moved(&mut timings);
        let mut jump = step_with_friction(
            &self.params,
            &self.config.friction,
            &mut self.blocks,
            &contacts,
            &mut self.warm,
        );
        if let Correction::AfterMotion { slop, iterations, tolerance, passes, more } =
            self.params.correction
        {
            let (deep, most) =
                more.map_or((f64::INFINITY, passes), |m| (slop + m.deeper_than, m.max_passes));
            for pass in 0..most {
                let mut after = DetectTimings::default();
                let contacts = self.detect_moved(&mut after);
                timings.broad += after.broad;
                timings.narrow += after.narrow;
                // Past the first `passes`, only a contact deeper than `deep` asks for more.
                if pass >= passes && contacts.iter().all(|c| -c.gap <= deep) {
                    break;
                }
                match correct_after_motion(
                    &mut self.blocks,
                    &contacts,
                    self.params.beta,
                    slop,
                    iterations,
                    tolerance,
                    self.params.gravity,
                ) {
                    Some(work) => jump.separation_work += work,
                    None => break,
                }
            }
        }
        self.step += 1;
        self.totals.dissipated += jump.dissipated;
        self.totals.gravity_work += jump.gravity_work;
        self.totals.separation_work += jump.separation_work;
        let mut deactivated = Vec::new();
        if let Some(tin) = &self.statics.tin {
            for b in self.blocks.iter_mut().filter(|b| b.active) {
                if !tin.contains_xy(b.pos.x, b.pos.y) {
                    let (t, r) = b.kinetic_energy();
                    self.totals.removed += t + r + b.mass * self.config.gravity * b.pos.z;
                    b.active = false;
                    deactivated.push(b.id);
                }
            }
        }
        let e = self.energies(jump.dissipated, jump.separation_work);
        let d = Diagnostics {
            step: self.step,
            time: self.time(),
            t_broad: timings.broad,
            t_narrow: timings.narrow,
            jump,
            deactivated,
        };
        (e, d)
    }

    /// Failed QPs of a step, for the dump.
    pub fn failed(d: &Diagnostics) -> &[FailedQp] {
        &d.jump.failed
    }
}

/// Position post-stabilisation on the contacts detected after the motion
/// ([`SeparationMethod::PositionAfterMotion`]): the blocks are moved out of β(−δ − slop) of
/// every penetration δ < −slop by [`position_correction`] on all contacts at once, swept in
/// [`correction_order`]. Velocities are unchanged, angular velocities turned with their
/// blocks.
/// Returns the work done against gravity (the step's `separation_work`), J, or `None`
/// when no contact is deeper than `slop` (nothing moved).
fn correct_after_motion(
    blocks: &mut [Block],
    contacts: &[Contact],
    beta: f64,
    slop: f64,
    iterations: u32,
    tolerance: f64,
    gravity: f64,
) -> Option<f64> {
    if !contacts.iter().any(|c| c.gap < -slop) {
        return None;
    }
    let bodies: Vec<JumpBody> = blocks
        .iter()
        .map(|b| JumpBody {
            mass: b.mass,
            inertia: b.world_inertia(),
            pos: b.pos,
            vel: b.vel,
            omega: b.omega,
        })
        .collect();
    let jc: Vec<JumpContact> = contacts
        .iter()
        .map(|c| JumpContact {
            i: c.i,
            j: match c.other {
                Other::Block(j) => Some(j),
                _ => None,
            },
            point: c.point,
            normal: c.normal,
            kappa_n: 0.0,
            kappa_t: 0.0,
            separation: 0.0,
        })
        .collect();
    let target: Vec<f64> = contacts.iter().map(|c| beta * (-c.gap - slop)).collect();
    let keys: Vec<ContactKey> = contacts.iter().map(|c| contact_key(blocks, c)).collect();
    let order = correction_order(&keys, |k| contacts[k].point);
    let dq = position_correction(&bodies, &jc, &target, &order, iterations, tolerance);
    blocks
        .iter_mut()
        .zip(dq)
        .filter(|(b, _)| b.active)
        .map(|(b, (dp, dtheta))| move_by(b, &dp, &dtheta, gravity))
        .sum::<f64>()
        .into()
}

/// Wall-clock helper for the phases measured outside the step.
pub fn seconds_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}
