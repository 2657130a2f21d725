//! The options of `talus run`: one typed struct, deserialised from the `[run]` table of a
//! site file (unknown keys are errors), validated before any work.

use crate::rotation::RotationModel;
use crate::solver::friction::FrictionConfig;
use serde::{Deserialize, Serialize};

/// How the dissipation coefficients κ_N, κ_T (kg, percussion per unit relative velocity)
/// are chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum Kappa {
    /// Global κ_N and κ_T in kg, as the thesis's `parameter.data` gives them after scaling.
    Raw {
        /// κ_N, kg.
        normal: f64,
        /// κ_T, kg.
        tangential: f64,
    },
    /// κ derived per contact from a target normal restitution e ∈ [0, 1): for one contact
    /// of effective mass m along its normal, e = (κ − 2m)/(κ + 2m) (docs/physics.md §3 with
    /// n = 1), so κ_N = 2m(1 + e)/(1 − e); κ_T = tangential_ratio × κ_N. Blocks of any mass
    /// then bounce alike. m = 1/(c_kᵀ M⁻¹ c_k) at the start of the step.
    Restitution {
        /// Target normal restitution e, 1 (0 = perfectly plastic single contact).
        e: f64,
        /// κ_T / κ_N, 1.
        tangential_ratio: f64,
    },
    /// The thesis code's choice: κ_N = κ_T = factor × (total mass) / N (its
    /// `parameter.data` holds factor = 0.5 for both).
    Thesis {
        /// Multiplier of the mean block mass, 1.
        factor: f64,
    },
}

/// The QP solver of each island.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum SolverConfig {
    /// Clarabel's interior-point method (the reference; cannot be warm-started).
    Clarabel {
        /// Clarabel's gap and feasibility tolerance, 1.
        tolerance: f64,
        /// Iteration limit.
        max_iterations: u32,
        /// Islands of at most this many bodies (and no friction) are solved by the exact
        /// dense active-set solver ([`crate::solver::dense`]), certified to `tolerance`; when it
        /// cannot certify its answer the island goes to Clarabel, recorded as a fallback.
        /// Default 0: Clarabel solves every QP.
        #[serde(default)]
        dense_max_bodies: u32,
    },
    /// Primal-dual active-set iterations from the previous step's active set (multipliers
    /// matched by contact identity), then, if they cycle, semismooth Newton on the
    /// augmented Lagrangian of the QP; Cholesky of H + ρ C_Aᵀ C_A by 6 × 6 blocks, or dense
    /// (faer) for islands of at most 20 bodies ([`crate::solver::warm`]). Falls back to Clarabel
    /// (recorded) when it does not converge.
    Warm {
        /// KKT residual tolerance (relative to the data's scale), 1.
        tolerance: f64,
        /// Limit of linear solves (active-set, Newton and refinement steps) per QP before
        /// falling back to Clarabel.
        max_iterations: u32,
        /// Tolerance of the Clarabel fallback, 1.
        fallback_tolerance: f64,
        /// Islands of at most this many bodies (and no friction) are solved by the exact
        /// dense active-set solver ([`crate::solver::dense`]), certified to `tolerance`; when it
        /// cannot certify its answer the island goes to the warm solver, recorded as a
        /// fallback. Default 4 ([`DENSE_MAX_BODIES`]); 0: never.
        #[serde(default = "default_dense_max_bodies")]
        dense_max_bodies: u32,
    },
    /// Non-linear Gauss–Seidel on the contact percussions ([`crate::solver::nlgs`]), with and
    /// without friction: each contact's 3-D law (normal bound, Coulomb cone, κ damping)
    /// solved exactly in turn against the others, started from the previous step's
    /// percussions matched by contact identity. Every answer carries a certificate
    /// computed from the QP's data alone ([`crate::solver::certificate`]); an island whose
    /// certificate misses `tolerance` after `max_sweeps` is solved by Clarabel (recorded
    /// as a fallback).
    Nlgs {
        /// Relative KKT residual the certificate must meet (stationarity, feasibility,
        /// complementarity, each non-dimensionalised by the step's scales), 1.
        #[serde(default = "default_nlgs_tolerance")]
        tolerance: f64,
        /// Sweeps over the island's contacts before falling back to Clarabel.
        #[serde(default = "default_nlgs_sweeps")]
        max_sweeps: u32,
        /// Tolerance of the Clarabel fallback, 1.
        #[serde(default = "default_fallback_tolerance")]
        fallback_tolerance: f64,
        /// Islands with friction and more contacts than this skip NLGS (to ADMM, then
        /// Clarabel). The default 0 sends every frictional island to ADMM: at the default
        /// tolerance (1e-6) the sweeps, which certified most islands under 20 contacts,
        /// cost more than they saved (thesis heap, μ = 0.5, one thread, session 42: N = 100
        /// 0.58 s against 1.33-1.43 s with 16, N = 1000 11.1-11.7 s against 12.3-12.6 s,
        /// N = 3000 62.8 s against 69.7 s). At 1e-3 the two were alike on the default
        /// site (12.7-12.8 s against 12.0-13.0 s), which sets 16, its value when it was
        /// calibrated.
        #[serde(default = "default_nlgs_frictional_contacts")]
        frictional_max_contacts: u32,
        /// Islands with more contacts than this, with or without friction, go to ADMM
        /// directly. Measured in session 28 (docs/benchmarks.md): on the thesis heap
        /// N = 1000, frictionless, NLGS's sweeps and polishes on the pile's island (1000-2000
        /// contacts), which they seldom certified, made the run 27.2 s against 10.1-10.8 s
        /// with any limit of 64-1000; on a packed heap of 1000 blocks (24,000-34,000
        /// contacts, certified in none of the 3 steps measured) they took 2 s of its first
        /// step's 2.9 s.
        #[serde(default = "default_nlgs_max_contacts")]
        max_contacts: u32,
        /// At a loose tolerance ([`LOOSE_TOLERANCE`] or above), islands without friction
        /// over `max_contacts` first get up to this many sweeps, without the polish; they
        /// stop once the certificate after s sweeps exceeds 16 × tolerance / √s
        /// ([`crate::solver::nlgs::GIVE_UP`]), and ADMM starts from the percussions they
        /// leave. Where the sweeps certify such an island, the step needs no factorisation
        /// of it: on the thesis heap N = 3000, frictionless, one thread, at 1e-1 the run
        /// took 0.81-0.90 times as long as with 0 (session 50, docs/solver.md).
        /// 0: such islands go to ADMM directly.
        #[serde(default = "default_nlgs_loose_sweeps")]
        loose_sweeps: u32,
        /// Islands that NLGS does not certify (or that it skips) are solved by ADMM with one
        /// cached factorisation ([`crate::solver::admm`]), certified to `tolerance`, with at
        /// most this many iterations before falling back to Clarabel. 0: straight to
        /// Clarabel.
        #[serde(default = "default_admm_iterations")]
        admm_iterations: u32,
        /// ADMM's penalty σ at the start of each solve, 1: each cone's penalty is σ times
        /// the effective mass of its normal row, and σ adapts during the solve
        /// ([`crate::solver::admm`], docs/solver.md). The default 3 suits the thesis heaps
        /// and the default site; a packed stack that stays at rest (the prow site) is
        /// certified in about half the iterations from 0.3. In [1e-6, 1e6].
        #[serde(default = "default_admm_sigma")]
        admm_sigma: f64,
    },
}

/// Default of `frictional_max_contacts`: every frictional island to ADMM.
pub const DEFAULT_NLGS_FRICTIONAL_CONTACTS: u32 = 0;
fn default_nlgs_frictional_contacts() -> u32 {
    DEFAULT_NLGS_FRICTIONAL_CONTACTS
}

/// Contacts of the largest island NLGS is tried on, by default (the benches use it too).
pub const DEFAULT_NLGS_MAX_CONTACTS: u32 = 1000;

fn default_nlgs_max_contacts() -> u32 {
    DEFAULT_NLGS_MAX_CONTACTS
}

/// The tolerances at and above which `loose_sweeps` applies: at 3e-2 the sweeps made the
/// frictionless thesis heap N = 3000 0.80-0.86 times as long and N = 1000 1.02-1.05 times,
/// at 1e-2 0.98 and 1.07 times (one thread, twice each; session 50, docs/solver.md).
pub const LOOSE_TOLERANCE: f64 = 2e-2;

/// Default of `loose_sweeps`.
pub const DEFAULT_NLGS_LOOSE_SWEEPS: u32 = 64;

fn default_nlgs_loose_sweeps() -> u32 {
    DEFAULT_NLGS_LOOSE_SWEEPS
}

/// ADMM iterations of the `nlgs` method before Clarabel, by default (the benches use it too).
pub const DEFAULT_ADMM_ITERATIONS: u32 = 1000;

fn default_admm_iterations() -> u32 {
    DEFAULT_ADMM_ITERATIONS
}

/// ADMM's σ at the start of a solve, by default.
pub const DEFAULT_ADMM_SIGMA: f64 = crate::solver::admm::SIGMA_START;

fn default_admm_sigma() -> f64 {
    DEFAULT_ADMM_SIGMA
}

/// The default solver: `nlgs` with every option at its default (a relative tolerance of
/// 1e-6, certified; Clarabel as the fallback).
impl Default for SolverConfig {
    fn default() -> Self {
        SolverConfig::Nlgs {
            tolerance: default_nlgs_tolerance(),
            max_sweeps: default_nlgs_sweeps(),
            fallback_tolerance: default_fallback_tolerance(),
            frictional_max_contacts: default_nlgs_frictional_contacts(),
            max_contacts: default_nlgs_max_contacts(),
            loose_sweeps: default_nlgs_loose_sweeps(),
            admm_iterations: default_admm_iterations(),
            admm_sigma: default_admm_sigma(),
        }
    }
}

fn default_nlgs_tolerance() -> f64 {
    1e-6
}

fn default_nlgs_sweeps() -> u32 {
    100
}

fn default_fallback_tolerance() -> f64 {
    1e-9
}

/// Default `dense_max_bodies` of the warm method (chosen by measurement: see
/// `benches/small_islands.rs`).
pub const DENSE_MAX_BODIES: u32 = 4;

fn default_dense_max_bodies() -> u32 {
    DENSE_MAX_BODIES
}

impl SolverConfig {
    /// Largest island (bodies) solved by the dense solver (0: none).
    pub fn dense_max_bodies(&self) -> usize {
        match *self {
            SolverConfig::Clarabel { dense_max_bodies, .. }
            | SolverConfig::Warm { dense_max_bodies, .. } => dense_max_bodies as usize,
            SolverConfig::Nlgs { .. } => 0,
        }
    }

    /// Tolerance of the dense solver's certificate, 1.
    pub fn dense_tolerance(&self) -> f64 {
        match *self {
            SolverConfig::Clarabel { tolerance, .. }
            | SolverConfig::Warm { tolerance, .. }
            | SolverConfig::Nlgs { tolerance, .. } => tolerance,
        }
    }

    /// Tolerance and iteration limit of Clarabel when it is called (as the method, as the
    /// fallback, for friction cones and for the retry without separation).
    pub fn clarabel_settings(&self) -> (f64, u32) {
        match *self {
            SolverConfig::Clarabel { tolerance, max_iterations, .. } => (tolerance, max_iterations),
            SolverConfig::Warm { fallback_tolerance, .. }
            | SolverConfig::Nlgs { fallback_tolerance, .. } => (fallback_tolerance, 200),
        }
    }
}

/// What to do when a QP is not solved (its data is dumped as Clarabel JSON either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnSolverFailure {
    /// Stop the run with an error (outputs written so far are kept, finals are not).
    Stop,
    /// Keep the solver's last iterate and go on (recorded in the diagnostics).
    Continue,
}

/// A static plane, given by a point and a normal pointing out of the solid half-space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaneConfig {
    /// A point of the plane, m.
    pub point: [f64; 3],
    /// Normal (need not be unit), pointing to the free side.
    pub normal: [f64; 3],
}

/// How a contact found with a positive gap Φ (at most `tolerance`) enters the jump.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ContactGaps {
    /// As if touching (the thesis's rule): its constraint c_kᵀu⁺ ≥ 0 and its κ terms
    /// apply. A block within the tolerance of another is held apart from it, and damped by
    /// κ, for as many steps as it stays there: a block released 1 cm above the ground with
    /// a tolerance of 5 cm hovers there.
    #[default]
    Touching,
    /// Speculative: the contact may close its gap within the step, as far as the step's
    /// motion Δt (v_N⁻ + v_N⁺)/2 allows, v_N⁺ ≥ min(0, −2Φ/Δt − v_N⁻), and its κ terms do
    /// not act while that bound is below 0. A block released 1 cm above the ground falls
    /// onto it. A contact approaching faster than it can close its gap is taken as
    /// touching (κ and all, so it bounces); a slower one closes without a bounce.
    Speculative,
}

/// How residual penetration (a contact with gap δ < 0) is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SeparationMethod {
    /// Position post-stabilisation (split impulse): after the jump the blocks are moved, not
    /// accelerated, out of the penetration predicted at the end of the step, by the
    /// mass-weighted smallest displacement (projected Gauss–Seidel on the linearised gaps,
    /// `iterations` sweeps). The velocity problem keeps u⁺ = 0 feasible, so every step's
    /// problem is feasible by construction, and no kinetic energy is injected; the
    /// potential energy the correction adds is the step's `separation_work`.
    Position,
    /// The correction of `position` on the gaps detected after the motion instead of
    /// those predicted before it (post-stabilisation as Cline & Pai 2003 pose it): each
    /// step detects the contacts again on the moved blocks and moves the blocks out of
    /// every penetration found, including those no contact of the step foresaw (pairs
    /// that met within the step, a face's points beyond `tolerance` that closed fast).
    /// Costs a second contact detection a step; injects no kinetic energy either.
    PositionAfterMotion,
    /// Separation velocities inside the jump's constraints (the thesis code's choice):
    /// c_kᵀu⁺ ≥ min(β (−δ)/Δt, max_velocity). Can make the jump infeasible for a block
    /// wedged between opposing faces (then solved again without them, status
    /// `SolvedWithoutSeparation`) and injects kinetic energy.
    Velocity,
}

/// Removal of residual penetration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SeparationConfig {
    /// Method (default `position`).
    pub method: SeparationMethod,
    /// β, fraction of the penetration removed per step, 1.
    pub beta: f64,
    /// Cap of the separation velocity (`velocity` method), m/s.
    pub max_velocity: f64,
    /// Penetration left uncorrected (`position` methods), m.
    pub slop: f64,
    /// Gauss–Seidel sweeps of the position correction (`position` methods), 1.
    pub iterations: u32,
    /// Convergence of the position correction (`position` methods), m: when positive, a
    /// contact's update that changes its corrected gap by at most this much is not
    /// applied, a contact is solved again only once one of its blocks has moved, and the
    /// sweeps stop early once one applies no update. 0: every sweep visits every contact.
    pub tolerance: f64,
    /// Passes of detection and correction after the motion (`position_after_motion`), 1:
    /// each detects the contacts on the blocks as the previous one left them and corrects
    /// them; the passes stop at one that finds no penetration beyond `slop`.
    pub passes: u32,
    /// Further passes after `passes` while a contact is deeper than `slop` + `deeper_than`
    /// (m), up to `max_passes` passes in all (`position_after_motion`), e.g.
    /// `{ deeper_than = 0.01, max_passes = 8 }`; none by default.
    pub more_passes: Option<MorePasses>,
}

/// Passes of detection and correction after the first `passes`, while a contact is deeper
/// than `slop + deeper_than`: they bound the penetration a step leaves. Correcting one
/// contact turns its block, and the turn can press a corner the last pass did not see
/// into a neighbour or the terrain; a further pass finds it. The test costs nothing when
/// nothing is that deep: no block moves after it, so the next step's detection returns
/// its contacts as they are.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MorePasses {
    /// Penetration beyond `slop` that asks for another pass, m (≥ 0).
    pub deeper_than: f64,
    /// Passes in all, at most (more than `passes`).
    pub max_passes: u32,
}

impl Default for SeparationConfig {
    fn default() -> Self {
        SeparationConfig {
            method: SeparationMethod::Position,
            beta: 0.8,
            max_velocity: 1.0,
            slop: 0.0,
            iterations: 20,
            tolerance: 0.0,
            passes: 1,
            more_passes: None,
        }
    }
}

/// Ending the run before its duration once the blocks are at rest, as rockfall and
/// avalanche codes do (RAMMS ends a run when the flow's momentum falls below a share of its
/// maximum): here, when the kinetic energy of the blocks on the terrain has stayed at or
/// below `kinetic_fraction` of its largest value so far for `hold` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopAtRest {
    /// Share of the largest kinetic energy so far, in (0, 1).
    pub kinetic_fraction: f64,
    /// How long the kinetic energy must stay below it, s (at least one step).
    pub hold: f64,
}

impl StopAtRest {
    /// Steps the kinetic energy must stay below the threshold, at time step `dt`.
    pub fn hold_steps(&self, dt: f64) -> u64 {
        (self.hold / dt).round().max(1.0) as u64
    }
}

/// Options of `talus run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Time step Δt, s.
    pub dt: f64,
    /// Simulated duration, s (ignored when `steps` is set).
    pub duration: f64,
    /// Number of steps (overrides `duration` when set).
    pub steps: Option<u64>,
    /// End the run earlier once the blocks are at rest (default: run the whole duration).
    /// E.g. `stop_at_rest = { kinetic_fraction = 1e-4, hold = 1.0 }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_at_rest: Option<StopAtRest>,
    /// Gravity, m/s², along −z.
    pub gravity: f64,
    /// Dissipation coefficients κ_N, κ_T.
    pub kappa: Kappa,
    /// Contacts are kept when their gap is at most this, m.
    pub tolerance: f64,
    /// How a contact with a positive gap enters the jump: `touching` (the thesis's rule,
    /// default) or `speculative` (it may close within the step; κ once it touches).
    pub gaps: ContactGaps,
    /// Removal of residual penetration.
    pub separation: SeparationConfig,
    /// Rotation between jumps: constant ω (pure A-CD²) or torque-free Euler motion.
    pub rotation: RotationModel,
    /// QP solver of each island. Default: `nlgs` at a certified relative tolerance of 1e-6,
    /// with Clarabel as its fallback; `clarabel` (the reference) and `warm` are selectable.
    pub solver: SolverConfig,
    /// Static planes (the thesis heap uses the ground z = 0:
    /// `planes = [{ point = [0, 0, 0], normal = [0, 0, 1] }]`).
    pub planes: Vec<PlaneConfig>,
    /// Write trajectories every this many steps (and always the first and last), 1.
    pub output_every: u64,
    /// Write the ParaView time series of the run (`paraview/blocks.pvd`, one `.vtu` of
    /// oriented boxes per output step, and `paraview/terrain.vtu`).
    pub paraview: bool,
    /// Write a checkpoint every this many steps (0: never), 1.
    pub checkpoint_every: u64,
    /// What to do when a QP is not solved.
    pub on_solver_failure: OnSolverFailure,
    /// Accept blocks that overlap at the start (the separation velocity pushes them
    /// apart); otherwise the run is refused and the overlapping pairs are listed.
    pub allow_initial_overlap: bool,
    /// Measure wall times per step and phase into `timings.parquet`. With `false` its
    /// times are written as 0, so that it too is byte-identical between two runs (every
    /// other output is byte-identical either way: no other table holds wall times).
    pub wall_times: bool,
    /// Overlap depth tolerated at the start without refusing, m.
    pub initial_overlap_tolerance: f64,
    /// Friction per material pair, as second-order cones in each step's program (default:
    /// none). Each pair's law is `{ coulomb = μ }` or `{ velocity_weakening = { mu_static =
    /// μ_s, mu_weakened = μ_w, weakening_speed = v_w } }`: μ(v) = μ_w + (μ_s − μ_w)/(1 +
    /// v/v_w), or `{ voellmy = { mu = μ, xi = ξ, depth = h } }`: μ(v) = μ + v²/(ξ h), v the
    /// contact's slip speed before the step, m/s (docs/physics.md §4). E.g.
    /// `friction = { block_block = { coulomb = 0.6 }, block_terrain = { coulomb = 0.7 } }`;
    /// see [`crate::solver::friction`].
    #[serde(skip_serializing_if = "FrictionConfig::is_default")]
    pub friction: FrictionConfig,
    /// A seeded perturbation of the initial state (default: none), for replicates of a
    /// run: the deposit of many blocks is chaotic, and replicates sample its spread. E.g.
    /// `perturbation = { speed = 0.001, seed = 1 }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perturbation: Option<Perturbation>,
}

/// A perturbation of the initial state: every active block's initial velocity gets
/// `speed` added in a direction uniform on the sphere, drawn from (`seed`, the block's
/// id) alone, so it does not depend on the blocks' order. The kinetic energy it adds is
/// part of the run's initial energy (the balance closes); a resumed run keeps the
/// velocities of its checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Perturbation {
    /// Speed added to each block, m/s (> 0; 0.001 is far below anything the run resolves,
    /// and enough to decorrelate a chaotic deposit).
    pub speed: f64,
    /// Seed of the directions.
    pub seed: u64,
}

impl Perturbation {
    /// The unit direction of block `id`.
    pub fn direction(&self, id: u32) -> [f64; 3] {
        let mix = |x: u64| {
            let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let a = mix(self.seed ^ mix(u64::from(id)));
        let b = mix(a);
        // 53-bit uniforms in [0, 1).
        let u = (a >> 11) as f64 / (1u64 << 53) as f64;
        let v = (b >> 11) as f64 / (1u64 << 53) as f64;
        // Archimedes: z uniform in [-1, 1] and the azimuth uniform give a uniform direction.
        let z = 2.0 * u - 1.0;
        let r = (1.0 - z * z).max(0.0).sqrt();
        let phi = std::f64::consts::TAU * v;
        [r * phi.cos(), r * phi.sin(), z]
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dt: 1e-3,
            duration: 1.0,
            steps: None,
            stop_at_rest: None,
            gravity: 9.81,
            kappa: Kappa::Thesis { factor: 0.5 },
            tolerance: 1e-3,
            gaps: ContactGaps::Touching,
            separation: SeparationConfig::default(),
            rotation: RotationModel::default(),
            solver: SolverConfig::default(),
            planes: Vec::new(),
            output_every: 10,
            paraview: true,
            checkpoint_every: 1000,
            on_solver_failure: OnSolverFailure::Stop,
            allow_initial_overlap: false,
            wall_times: true,
            initial_overlap_tolerance: 1e-3,
            friction: FrictionConfig::default(),
            perturbation: None,
        }
    }
}

/// A configuration value out of its domain.
#[derive(Debug, thiserror::Error)]
#[error("run configuration: {0}")]
pub struct ConfigError(pub String);

impl Config {
    /// Number of steps of the run.
    pub fn n_steps(&self) -> u64 {
        self.steps.unwrap_or_else(|| (self.duration / self.dt).round().max(0.0) as u64)
    }

    /// Check every value before any work.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError(m));
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return bad(format!("dt = {} s must be finite and > 0", self.dt));
        }
        if self.steps.is_none() && !(self.duration.is_finite() && self.duration >= 0.0) {
            return bad(format!("duration = {} s must be finite and >= 0", self.duration));
        }
        if let Some(r) = self.stop_at_rest
            && !(r.kinetic_fraction > 0.0
                && r.kinetic_fraction < 1.0
                && r.hold.is_finite()
                && r.hold >= 0.0)
        {
            return bad(format!(
                "stop_at_rest: kinetic_fraction = {} must be in (0, 1) and hold = {} s finite and >= 0",
                r.kinetic_fraction, r.hold
            ));
        }
        if let Some(p) = self.perturbation
            && !(p.speed.is_finite() && p.speed > 0.0)
        {
            return bad(format!("perturbation: speed = {} m/s must be finite and > 0", p.speed));
        }
        if !(self.gravity.is_finite() && self.gravity >= 0.0) {
            return bad(format!("gravity = {} m/s² must be finite and >= 0", self.gravity));
        }
        match self.kappa {
            Kappa::Raw { normal, tangential } => {
                if !(normal.is_finite()
                    && normal >= 0.0
                    && tangential.is_finite()
                    && tangential >= 0.0)
                {
                    return bad(format!(
                        "kappa: normal = {normal}, tangential = {tangential} must be finite and >= 0"
                    ));
                }
            }
            Kappa::Restitution { e, tangential_ratio } => {
                if !((0.0..1.0).contains(&e)
                    && tangential_ratio.is_finite()
                    && tangential_ratio >= 0.0)
                {
                    return bad(format!(
                        "kappa: e = {e} must be in [0, 1), tangential_ratio = {tangential_ratio} >= 0"
                    ));
                }
            }
            Kappa::Thesis { factor } => {
                if !(factor.is_finite() && factor >= 0.0) {
                    return bad(format!("kappa: factor = {factor} must be finite and >= 0"));
                }
            }
        }
        if !(self.tolerance.is_finite() && self.tolerance >= 0.0) {
            return bad(format!("tolerance = {} m must be finite and >= 0", self.tolerance));
        }
        let s = &self.separation;
        if !(s.beta.is_finite()
            && (0.0..=1.0).contains(&s.beta)
            && s.max_velocity.is_finite()
            && s.max_velocity >= 0.0
            && s.slop.is_finite()
            && s.slop >= 0.0
            && s.tolerance.is_finite()
            && s.tolerance >= 0.0)
        {
            return bad(format!(
                "separation: beta = {} must be in [0, 1], max_velocity = {} m/s, slop = {} m and tolerance = {} m >= 0",
                s.beta, s.max_velocity, s.slop, s.tolerance
            ));
        }
        if s.passes == 0 || s.passes > 1 && s.method != SeparationMethod::PositionAfterMotion {
            return bad(format!(
                "separation: passes = {} must be at least 1, and more than 1 only with method = \"position_after_motion\"",
                s.passes
            ));
        }
        if let Some(m) = s.more_passes
            && !(s.method == SeparationMethod::PositionAfterMotion
                && m.deeper_than.is_finite()
                && m.deeper_than >= 0.0
                && m.max_passes > s.passes)
        {
            return bad(format!(
                "separation: more_passes = {{ deeper_than = {}, max_passes = {} }} needs method = \"position_after_motion\", deeper_than >= 0 m and max_passes > passes = {}",
                m.deeper_than, m.max_passes, s.passes
            ));
        }
        match self.solver {
            SolverConfig::Clarabel { tolerance, max_iterations, .. } => {
                if !(tolerance > 0.0 && tolerance < 1.0) || max_iterations == 0 {
                    return bad(format!(
                        "solver: tolerance = {tolerance} must be in (0, 1), max_iterations > 0"
                    ));
                }
            }
            SolverConfig::Warm { tolerance, max_iterations, fallback_tolerance, .. } => {
                if !(tolerance > 0.0
                    && tolerance < 1.0
                    && fallback_tolerance > 0.0
                    && fallback_tolerance < 1.0)
                    || max_iterations == 0
                {
                    return bad(format!(
                        "solver: tolerance = {tolerance} and fallback_tolerance = {fallback_tolerance} must be in (0, 1), max_iterations > 0"
                    ));
                }
            }
            SolverConfig::Nlgs {
                tolerance, max_sweeps, fallback_tolerance, admm_sigma, ..
            } => {
                if !(tolerance > 0.0
                    && tolerance < 1.0
                    && fallback_tolerance > 0.0
                    && fallback_tolerance < 1.0)
                    || max_sweeps == 0
                {
                    return bad(format!(
                        "solver: tolerance = {tolerance} and fallback_tolerance = {fallback_tolerance} must be in (0, 1), max_sweeps > 0"
                    ));
                }
                let (lo, hi) = crate::solver::admm::SIGMA_RANGE;
                if !(lo..=hi).contains(&admm_sigma) {
                    return bad(format!(
                        "solver: admm_sigma = {admm_sigma} must be in [{lo}, {hi}]"
                    ));
                }
            }
        }
        for (k, p) in self.planes.iter().enumerate() {
            let n = nalgebra::Vector3::from(p.normal);
            if !(p.point.iter().all(|v| v.is_finite())
                && n.iter().all(|v| v.is_finite())
                && n.norm() > 0.0)
            {
                return bad(format!("planes[{k}]: point must be finite and normal non-zero"));
            }
        }
        if self.output_every == 0 {
            return bad("output_every must be >= 1".into());
        }
        if !(self.initial_overlap_tolerance.is_finite() && self.initial_overlap_tolerance >= 0.0) {
            return bad("initial_overlap_tolerance must be finite and >= 0".into());
        }
        self.friction.validate().map_err(ConfigError)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The perturbation's directions are unit vectors, uniform on the sphere: over 6000 ids
    /// each component's mean is 0 and each square's mean 1/3, within five standard errors
    /// (1/√(3n) and √(4/45n)); another seed gives other directions.
    #[test]
    fn perturbation_directions_are_uniform_unit_vectors() {
        let p = Perturbation { speed: 1.0, seed: 7 };
        let n = 6000;
        let (mut mean, mut sq) = ([0.0f64; 3], [0.0f64; 3]);
        for id in 0..n {
            let d = p.direction(id);
            let norm = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            assert!((norm - 1.0).abs() < 1e-15, "id {id}: |d| = {norm}");
            for k in 0..3 {
                mean[k] += d[k] / n as f64;
                sq[k] += d[k] * d[k] / n as f64;
            }
        }
        let (se_mean, se_sq) = ((1.0 / (3.0 * n as f64)).sqrt(), (4.0 / (45.0 * n as f64)).sqrt());
        for k in 0..3 {
            assert!(mean[k].abs() < 5.0 * se_mean, "component {k}: mean {}", mean[k]);
            assert!(
                (sq[k] - 1.0 / 3.0).abs() < 5.0 * se_sq,
                "component {k}: mean square {}",
                sq[k]
            );
        }
        // Another seed, other directions.
        let q = Perturbation { seed: 8, ..p };
        assert!((0..100).all(|id| p.direction(id) != q.direction(id)));
        // A perturbation needs a positive speed.
        let bad = Config {
            perturbation: Some(Perturbation { speed: 0.0, seed: 1 }),
            ..Config::default()
        };
        assert!(bad.validate().unwrap_err().to_string().contains("perturbation"));
        let c: Config =
            serde_json::from_str(r#"{"perturbation": {"speed": 0.001, "seed": 3}}"#).unwrap();
        assert_eq!(c.perturbation, Some(Perturbation { speed: 0.001, seed: 3 }));
        assert!(
            serde_json::from_str::<Config>(r#"{"perturbation": {"sped": 0.001, "seed": 3}}"#)
                .is_err()
        );
    }

    /// The site-file spellings of the enums deserialise (JSON has the same data model as TOML).
    #[test]
    fn tagged_options_deserialise_and_unknown_keys_are_refused() {
        let c: Config = serde_json::from_str(
            r#"{"dt": 0.001, "steps": 1000, "kappa": {"mode": "thesis", "factor": 0.5},
                "solver": {"method": "warm", "tolerance": 1e-9, "max_iterations": 50, "fallback_tolerance": 1e-9},
                "separation": {"beta": 0.2, "max_velocity": 2.0}, "rotation": "torque_free",
                "on_solver_failure": "continue", "planes": [{"point": [0, 0, 0], "normal": [0, 0, 1]}]}"#,
        )
        .unwrap();
        assert_eq!(c.kappa, Kappa::Thesis { factor: 0.5 });
        assert_eq!(c.rotation, RotationModel::TorqueFree);
        assert_eq!(c.n_steps(), 1000);
        c.validate().unwrap();
        let r: Config = serde_json::from_str(
            r#"{"kappa": {"mode": "restitution", "e": 0.1, "tangential_ratio": 1.0}}"#,
        )
        .unwrap();
        assert!(matches!(r.kappa, Kappa::Restitution { .. }));
        assert!(serde_json::from_str::<Config>(r#"{"dtt": 0.1}"#).is_err());
        assert!(
            serde_json::from_str::<Config>(
                r#"{"kappa": {"mode": "raw", "normal": 1, "tangential": 1, "x": 2}}"#
            )
            .is_err()
        );
        let bad = Config { dt: -1.0, ..Config::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("dt"));
    }
}
