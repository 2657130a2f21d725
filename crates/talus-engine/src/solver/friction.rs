//! Coulomb friction as a convex cone (issue 8): Anitescu's cone-complementarity relaxation,
//! as Project Chrono's NSC uses it, added to the A-CD² jump as second-order cones.
//!
//! # The constraint
//!
//! For a contact k with friction coefficient μ > 0, the relative velocity of the contact
//! point after the jump, u⁺ = 2x − u⁻, is split into its normal part v_N⁺ = c_kᵀu⁺ (positive
//! when the bodies separate, [`crate::geometry::contact`]) and its tangential part
//! v_T⁺ = (t₁, t₂)ᵀ R_k u⁺ (R_k u = velocity of i's material point minus j's, t₁, t₂ an
//! orthonormal basis of the tangent plane). The A-CD² normal constraint c_kᵀu⁺ ≥ v_k
//! (v_k ≥ 0 the bounded separation velocity of a penetrating contact) is replaced by
//!
//! ```text
//! (c_kᵀu⁺ − v_k + γ_k,  μ v_T⁺) ∈ SOC₃ = {(s₀, s₁, s₂) : s₀ ≥ ‖(s₁, s₂)‖}
//! ⇔  v_N⁺ ≥ v_k − γ_k + μ ‖v_T⁺‖
//! ```
//!
//! i.e. the shifted relative velocity lies in the dual friction cone. In the unknown x, with
//! r_k = (c_kᵀu⁻ + v_k)/2 as in [`crate::solver::assembly`], the cone row block (halved) is
//! `s = (c_kᵀx − r_k + γ_k/2, μ t₁ᵀR_k(x − u⁻/2), μ t₂ᵀR_k(x − u⁻/2)) ∈ SOC₃`.
//! Frictionless contacts keep their linear row (non-negative cone). κ_N and κ_T stay in H
//! exactly as in A-CD². Clarabel's dual of the block, z = (λ_N, z₁, z₂) ∈ SOC₃, gives the
//! contact percussion on body i: normal λ_N N_k, tangential λ_T = μ (z₁ t₁ + z₂ t₂), so
//! ‖λ_T‖ ≤ μ λ_N (the friction cone). Complementarity zᵀs = 0 gives Coulomb's law with
//! maximum dissipation: when the contact slides and pushes (λ_N > 0, v_T⁺ ≠ 0),
//! λ_T = −μ λ_N v_T⁺/‖v_T⁺‖ and v_N⁺ = v_k − γ_k + μ‖v_T⁺‖; when it sticks, v_T⁺ = 0 and
//! ‖λ_T‖ ≤ μ λ_N.
//!
//! # The relaxation's known error, and the slip credit γ_k
//!
//! Coulomb's law proper has v_N⁺ = v_k on a sliding, pushing contact; the relaxation makes it
//! separate at μ‖v_T⁺‖ more (a spurious lift-off, the "hop"). With γ_k = 0 (the pure
//! relaxation, `slip_credit = false`) a block sliding at V leaves the plane at μV: it flies
//! off the contact band and hops ≈ (μV)²/(2 g cos θ) high, without friction in the air: an
//! O(1) error, whatever Δt.
//!
//! With `slip_credit = true` (default) the cone of each frictional contact is shifted by
//! the slip speed the jump is expected to leave, γ_k = μ s_k (a constant of the program),
//! so the spurious normal velocity becomes μ(‖v_T⁺‖ − s_k). The expected slip is the slip
//! before the jump plus its growth in the previous step's jump (the contact's history,
//! carried by its key as the warm start's percussions are):
//! s_k = ‖v_T,k⁻‖ + min(max(Δs_k, 0), g Δt). In a steady slide, where the slip grows by
//! a Δt every step (a < g), this is exact: the contact neither lifts nor sinks, and a
//! block slides down a plane at g(sin θ − μ cos θ) to 1e-8 at any Δt. Only growth is
//! extrapolated (Δs_k < 0 counts as 0), so γ_k ≥ μ‖v_T⁻‖ and the friction term of the
//! dissipation stays non-negative (below). Growth beyond g Δt is an impact's, not a
//! slide's, and does not recur: credited, it would let the contact sink (on the default
//! site the correction's work rose from 0.92 % to 1.01 % of the potential-energy drop
//! without the bound). A new contact, or one
//! whose slip starts growing, has s_k = ‖v_T⁻‖ for one step: it may lift at μ(‖v_T⁺‖ −
//! ‖v_T⁻‖), O(Δt). A sliding contact with a positive gap Φ_k may moreover close it at the
//! rate of the separation velocity, + min(β Φ_k/Δt, μ s_k), so a hover gap left by such a
//! step does not persist (steady state v_N = 0, so κ_N, which acts on x_N, does not load
//! the contact). A block that starts sliding or lands at speed may sink up to ≈ μ Δt ΔV,
//! which the separation velocity then removes (its work is in the energy balance). A
//! contact at rest (v_T⁻ = 0, no growth) gets γ_k = 0, the exact cone and the A-CD² normal
//! law: a block at rest on a slope with tan θ < μ stays exactly at rest (u⁺ = 0 is then the
//! jump's unique solution).
//!
//! (With the shift μ‖v_T⁻‖ alone, as until session 41, an accelerating contact lifted at
//! μ a Δt every step, and κ_N, acting on that, loaded it. The gap-closing term took the
//! lift back once the block had risen above the surface, so a block on a plane slid 2 %
//! slow at Δt = 0.04 s under the restitution κ law; but a block held within a position
//! correction's slop, below the surface, never got there: 19 % slow at 0.04 s and 28 % at
//! 0.005 s. Extrapolating the slip removes both.)
//!
//! Where the relaxation differs from maximum dissipation (Preclik et al., §4): on an impact
//! problem (κ = 0, no credit) the relaxation minimises the same kinetic energy over the whole
//! cone of impulses, not over its intersection with the plane of maximum compression, so it
//! dissipates at least as much, and its sliding solutions separate at μ‖v_T⁺‖ instead of
//! v_N⁺ = 0 (Table 1: objective −0.763 against −0.634, v_N⁺ = 0.128). When the maximally
//! dissipative solution sticks (v_T⁺ = 0, e.g. the Painlevé rod with μ ≥ μ*(θ₀)), the two
//! coincide. With the slip credit the jump admits the unchanged slide (v_N⁺ = 0 ≥
//! μ(v₀ − v₀)): for the Painlevé rod with μ < μ* this gives maximum dissipation's Λ = 0
//! (where the pure relaxation pushes and lifts the tip), but with μ ≥ μ* it gives Λ = 0 too
//! instead of the sticking impulse Λ₀: the slide goes on into the next steps.
//!
//! # Energy
//!
//! The step's bookkeeping ([`crate::step`]) is unchanged: D = W_s − P·x with P the total
//! internal percussion. From complementarity (zᵀs = 0),
//!
//! ```text
//! D = xᵀK x − ½ Σ_k [ λ_N,k v_N,k⁻ + λ_T,k·v_T,k⁻ − λ_N,k γ_k ]
//! ```
//!
//! (K = Σ κ_N c cᵀ + κ_T TᵀT). The normal term is ≥ 0 for approaching contacts; the friction
//! term is ≥ ½ λ_N (γ_k − μ‖v_T⁻‖) (‖λ_T‖ ≤ μ λ_N), so ≥ 0 with the slip credit
//! (γ_k ≥ μ‖v_T⁻‖); without
//! it, ≥ 0 when friction opposes the slip before the jump. Without
//! κ the jump is the M-projection of u⁻ onto a convex set containing u⁺ = 0, so the kinetic
//! energy never increases without external percussion; the tests check D ≥ 0 and
//! KE⁺ ≤ KE⁻ on random jumps with κ too.

use crate::geometry::contact::ContactKind;
use crate::solver::assembly::{JumpBody, JumpContact, NO_BODY, Qp, RowBlocks, csc_from_rows};
use crate::solver::clarabel::{QpOutcome, QpStatus, SolverUsed};
use clarabel::solver::{
    DefaultSolver, IPSolver, NonnegativeConeT, SecondOrderConeT, SolverStatus, SupportedConeT,
};
use nalgebra::{SVector, Vector3};
use serde::{Deserialize, Serialize};

/// The friction law of a material pair.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FrictionLaw {
    /// Coulomb friction with coefficient μ ≥ 0 (1), as the cone-complementarity
    /// relaxation: the relative velocity after the jump in the dual cone v_N ≥ μ‖v_T‖.
    Coulomb(f64),
    /// Velocity-weakening friction (Lucas, Mangeney & Ampuero 2014, Nature Communications;
    /// the law they fit to landslides' runout): a contact sliding at speed v has
    /// μ(v) = μ_w + (μ_s − μ_w)/(1 + v/v_w), from μ_s at rest to μ_w at speeds well above
    /// v_w. v is the contact's slip speed before the jump, ‖v_T⁻‖, so each step's μ is a
    /// constant of its program and the jump stays the same convex cone program as with
    /// Coulomb friction (feasible by construction; μ lags the slip speed by one step, an
    /// O(Δt) error). A contact at rest has μ_s: the rest on a slope under the static
    /// friction angle is exact. Site file:
    /// `block_terrain = { velocity_weakening = { mu_static = 0.6, mu_weakened = 0.2,
    /// weakening_speed = 4.0 } }`.
    VelocityWeakening {
        /// μ_s, μ at rest, 1 (≥ μ_w).
        mu_static: f64,
        /// μ_w, the limit at high slip speed, 1 (≥ 0).
        mu_weakened: f64,
        /// v_w, the slip speed at which μ is halfway from μ_s to μ_w, m/s (> 0).
        weakening_speed: f64,
    },
    /// Voellmy's law (Voellmy 1955; the rheology of RAMMS and DAN3D for rock avalanches)
    /// as a friction coefficient: a contact sliding at speed v has μ(v) = μ + v²/(ξ h),
    /// Coulomb's μ plus the turbulent term g v²/(ξ h) of a flow of depth h divided by the
    /// normal pull g of a block on a gentle bed. v is the contact's slip speed before the
    /// jump, as for [`FrictionLaw::VelocityWeakening`]; a contact at rest has μ.
    /// Site file: `block_terrain = { voellmy = { mu = 0.3, xi = 500.0, depth = 10.0 } }`.
    Voellmy {
        /// μ, Coulomb's coefficient (at rest), 1 (> 0).
        mu: f64,
        /// ξ, the turbulence coefficient, m/s² (> 0).
        xi: f64,
        /// h, the flow depth the turbulent term is scaled by, m (> 0).
        depth: f64,
    },
}

impl FrictionLaw {
    /// μ at rest, 1: Coulomb's μ, or velocity weakening's μ_s.
    pub fn mu(self) -> f64 {
        match self {
            FrictionLaw::Coulomb(mu) => mu,
            FrictionLaw::VelocityWeakening { mu_static, .. } => mu_static,
            FrictionLaw::Voellmy { mu, .. } => mu,
        }
    }

    /// μ of a contact slipping at `slip` m/s (its tangential relative speed before the
    /// jump), 1.
    pub fn mu_at(self, slip: f64) -> f64 {
        match self {
            FrictionLaw::Coulomb(mu) => mu,
            FrictionLaw::VelocityWeakening { mu_static, mu_weakened, weakening_speed } => {
                mu_weakened + (mu_static - mu_weakened) / (1.0 + slip / weakening_speed)
            }
            FrictionLaw::Voellmy { mu, xi, depth } => mu + slip * slip / (xi * depth),
        }
    }

    /// Whether μ depends on the slip speed (then each contact's μ needs its slip speed).
    pub fn depends_on_slip(self) -> bool {
        match self {
            FrictionLaw::Coulomb(_) => false,
            FrictionLaw::VelocityWeakening { mu_static, mu_weakened, .. } => {
                mu_static != mu_weakened
            }
            FrictionLaw::Voellmy { .. } => true,
        }
    }

    /// Check the law's parameters; `Err` names the offending one.
    fn validate(self) -> Result<(), String> {
        match self {
            FrictionLaw::Coulomb(mu) => {
                if !(mu.is_finite() && mu >= 0.0) {
                    return Err(format!("coulomb = {mu} must be finite and >= 0"));
                }
            }
            FrictionLaw::VelocityWeakening { mu_static, mu_weakened, weakening_speed } => {
                if !(mu_weakened.is_finite() && mu_weakened >= 0.0) {
                    return Err(format!(
                        "velocity_weakening.mu_weakened = {mu_weakened} must be finite and >= 0"
                    ));
                }
                if !(mu_static.is_finite() && mu_static >= mu_weakened) {
                    return Err(format!(
                        "velocity_weakening.mu_static = {mu_static} must be finite and >= \
                         mu_weakened ({mu_weakened})"
                    ));
                }
                if !(weakening_speed.is_finite() && weakening_speed > 0.0) {
                    return Err(format!(
                        "velocity_weakening.weakening_speed = {weakening_speed} m/s must be \
                         finite and > 0"
                    ));
                }
            }
            FrictionLaw::Voellmy { mu, xi, depth } => {
                // A contact whose μ at rest is 0 is frictionless (a linear row), so the
                // turbulent term needs μ > 0.
                if !(mu.is_finite() && mu > 0.0) {
                    return Err(format!("voellmy.mu = {mu} must be finite and > 0"));
                }
                if !(xi.is_finite() && xi > 0.0) {
                    return Err(format!("voellmy.xi = {xi} m/s² must be finite and > 0"));
                }
                if !(depth.is_finite() && depth > 0.0) {
                    return Err(format!("voellmy.depth = {depth} m must be finite and > 0"));
                }
            }
        }
        Ok(())
    }
}

/// Friction per material pair (default: none, the thesis's A-CD² unchanged): Coulomb,
/// velocity-weakening or Voellmy's ([`FrictionLaw`]).
/// Site file: `friction = { block_block = { coulomb = 0.6 }, block_terrain = { coulomb = 0.7 } }`.
/// Islands with frictional contacts are second-order-cone programs, solved by `nlgs` (its
/// sweeps and ADMM) or Clarabel; the warm solver cannot take cones and sends them to
/// Clarabel (the diagnostics' `solver` then says `clarabel_socp`, or `mixed` when other
/// islands used the configured solver). κ_N and κ_T act as without friction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FrictionConfig {
    /// Law of block–block contacts (absent: frictionless).
    pub block_block: Option<FrictionLaw>,
    /// Law of block–terrain and block–plane contacts (absent: frictionless).
    pub block_terrain: Option<FrictionLaw>,
    /// Shift each frictional cone by the slip speed the jump is expected to leave,
    /// γ = μ s with s = ‖v_T⁻‖ + min(max(Δs, 0), g Δt) (m/s; Δs the contact's growth of
    /// slip in the previous jump), plus min(β Φ/Δt, μ s) for a gap Φ > 0, so the relaxation's spurious
    /// lift-off is μ(‖v_T⁺‖ − s) (0 in a steady slide, O(Δt) when a contact starts
    /// sliding) instead of μ‖v_T⁺‖ (the "hop"), and a sliding block stays on its support.
    /// Contacts at rest are unaffected. `false`: Anitescu's relaxation as it stands.
    pub slip_credit: bool,
}

impl Default for FrictionConfig {
    fn default() -> Self {
        FrictionConfig { block_block: None, block_terrain: None, slip_credit: true }
    }
}

impl FrictionConfig {
    /// No friction anywhere (then the step is exactly the frictionless A-CD² step).
    pub fn is_off(&self) -> bool {
        self.mu(ContactKind::BlockBlock) == 0.0 && self.mu(ContactKind::BlockTerrain) == 0.0
    }

    /// Whether this is the default (omitted from serialised configs, so that a run without
    /// friction records the same effective config as before the option existed).
    pub fn is_default(&self) -> bool {
        *self == FrictionConfig::default()
    }

    /// The law of a contact kind (`None`: frictionless).
    fn law(&self, kind: ContactKind) -> Option<FrictionLaw> {
        match kind {
            ContactKind::BlockBlock => self.block_block,
            ContactKind::BlockTerrain | ContactKind::BlockPlane => self.block_terrain,
        }
    }

    /// μ at rest of a contact kind, 1 (0 when frictionless).
    pub fn mu(&self, kind: ContactKind) -> f64 {
        self.law(kind).map(FrictionLaw::mu).unwrap_or(0.0)
    }

    /// Whether some contact's μ depends on its slip speed ([`FrictionLaw::depends_on_slip`]).
    pub fn depends_on_slip(&self) -> bool {
        [self.block_block, self.block_terrain]
            .into_iter()
            .flatten()
            .any(FrictionLaw::depends_on_slip)
    }

    /// μ of a contact of `kind` slipping at `slip` m/s before the jump, 1 (0 when
    /// frictionless).
    pub fn mu_at(&self, kind: ContactKind, slip: f64) -> f64 {
        self.law(kind).map(|l| l.mu_at(slip)).unwrap_or(0.0)
    }

    /// Check the laws' parameters: coefficients finite and ≥ 0 (velocity weakening:
    /// μ_s ≥ μ_w ≥ 0, v_w > 0; Voellmy: μ > 0, ξ > 0, h > 0).
    pub fn validate(&self) -> Result<(), String> {
        for (name, law) in
            [("block_block", self.block_block), ("block_terrain", self.block_terrain)]
        {
            if let Some(l) = law {
                l.validate().map_err(|e| format!("friction.{name}: {e}"))?;
            }
        }
        Ok(())
    }
}

/// Friction data of one contact of an island.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactFriction {
    /// μ, 1 (0: frictionless, linear row).
    pub mu: f64,
    /// Slip credit γ ≥ 0 (shift of the cone), m/s (see the module doc).
    pub credit: f64,
}

/// An island's jump as a conic program: `min ½xᵀHx − pᵀx s.t. Cx − r ∈ K`, with K the
/// product of `cones` (in row order). `qp.c`/`qp.r` hold all rows; `normal_rows[k]` is the
/// row of contact k's normal part; `mu[k]` its μ.
#[derive(Debug, Clone, PartialEq)]
pub struct ConeQp {
    /// H, p and the rows of C, r.
    pub qp: Qp,
    /// Cones of the rows, in order.
    pub cones: Vec<SupportedConeT<f64>>,
    /// Row of each contact's normal part.
    pub normal_rows: Vec<usize>,
    /// μ of each contact.
    pub mu: Vec<f64>,
    /// Tangent basis (t₁, t₂) of each contact.
    pub tangents: Vec<(Vector3<f64>, Vector3<f64>)>,
}

/// An orthonormal basis (t₁, t₂) of the plane orthogonal to the unit vector n, chosen
/// deterministically (t₁ ⟂ the axis least aligned with n).
pub fn tangent_basis(n: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let a = n.abs();
    let e = if a.x <= a.y && a.x <= a.z {
        Vector3::x()
    } else if a.y <= a.z {
        Vector3::y()
    } else {
        Vector3::z()
    };
    let t1 = n.cross(&e).normalize();
    (t1, n.cross(&t1))
}

/// 6-vector of `d·(u + ω × r)` on one body's slots: (d, r × d).
fn row6(r: &Vector3<f64>, d: &Vector3<f64>) -> SVector<f64, 6> {
    let t = r.cross(d);
    SVector::<f64, 6>::from_column_slice(&[d.x, d.y, d.z, t.x, t.y, t.z])
}

fn u6(b: &JumpBody) -> SVector<f64, 6> {
    SVector::<f64, 6>::from_column_slice(&[
        b.vel.x, b.vel.y, b.vel.z, b.omega.x, b.omega.y, b.omega.z,
    ])
}

/// Relative velocity R_k u⁻ of contact `c` before the jump (i's point minus j's), m/s.
pub fn relative_velocity(bodies: &[JumpBody], c: &JumpContact) -> Vector3<f64> {
    relative_velocity_with(bodies, c, |b| (bodies[b].vel, bodies[b].omega))
}

/// Relative velocity of contact `c` (i's point minus j's) when body b moves with
/// `motion(b)` = (velocity, angular velocity), m/s.
fn relative_velocity_with(
    bodies: &[JumpBody],
    c: &JumpContact,
    motion: impl Fn(usize) -> (Vector3<f64>, Vector3<f64>),
) -> Vector3<f64> {
    let v = |b: usize| {
        let (vel, omega) = motion(b);
        vel + omega.cross(&(c.point - bodies[b].pos))
    };
    let mut w = v(c.i);
    if let Some(j) = c.j {
        w -= v(j);
    }
    w
}

/// Slip credit of a contact with friction coefficient `mu`, slip speed `slip` = ‖v_T⁻‖
/// before the jump (m/s) and gap Φ (see the module doc), m/s:
/// γ = μ s + min(β Φ⁺/Δt, μ s) with s = ‖v_T⁻‖ + min(max(Δs, 0), g Δt), where Δs is the
/// change of the contact's slip speed in the previous step's jump (0 for a new contact):
/// the slip speed the jump will leave, extrapolated, when the contact is speeding up as
/// a slide under gravity can (an impact's jump is not extrapolated beyond g Δt). The
/// second term closes (at the rate of the separation velocity, and only while sliding) a
/// hover gap left by earlier slip.
pub fn slip_credit(
    mu: f64,
    slip: f64,
    gap: f64,
    beta: f64,
    dt: f64,
    gravity: f64,
    slip_change: f64,
) -> f64 {
    if mu <= 0.0 {
        return 0.0;
    }
    let growth = if slip_change.is_finite() { slip_change.clamp(0.0, gravity * dt) } else { 0.0 };
    let credit = mu * (slip + growth);
    credit + (beta * gap.max(0.0) / dt).min(credit)
}

/// The tangential part's length of a relative velocity `v` at contact `c`, m/s.
pub fn slip_speed(v: Vector3<f64>, c: &JumpContact) -> f64 {
    (v - c.normal * c.normal.dot(&v)).norm()
}

/// Relative velocity of contact `c` (i's point minus j's) with the bodies' velocities
/// `u` (6 per body, the island's order: v then ω), m/s.
pub fn relative_velocity_of(bodies: &[JumpBody], c: &JumpContact, u: &[f64]) -> Vector3<f64> {
    relative_velocity_with(bodies, c, |b| {
        let o = 6 * b;
        (Vector3::new(u[o], u[o + 1], u[o + 2]), Vector3::new(u[o + 3], u[o + 4], u[o + 5]))
    })
}

/// Build the conic program of an island from its frictionless QP `base` (whose H and p are
/// reused) and the contacts' friction. Contact order is kept; runs of frictionless contacts
/// share one non-negative cone.
pub fn assemble_cones(
    base: &Qp,
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    friction: &[ContactFriction],
) -> ConeQp {
    cones_of(base, bodies, contacts, friction, true)
}

/// [`assemble_cones`]; C's compressed columns from its row layout when `by_rows` and the
/// layout can be made, else from its entries (the reference the layout's columns are
/// tested against).
fn cones_of(
    base: &Qp,
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    friction: &[ContactFriction],
    by_rows: bool,
) -> ConeQp {
    assert_eq!(contacts.len(), friction.len());
    let n = base.n();
    let mut r = Vec::with_capacity(3 * contacts.len());
    let mut cones: Vec<SupportedConeT<f64>> = Vec::with_capacity(contacts.len());
    let mut normal_rows = Vec::with_capacity(contacts.len());
    let mut tangents = Vec::with_capacity(contacts.len());
    let mut run = 0usize; // frictionless rows not yet given a cone
    // The row layout of C ([`RowBlocks`]), made with the rows: each row's two bodies (the
    // smaller first) and its 12 values, as `RowBlocks::new` reads them from the compressed
    // columns. Not made when a contact has the same body on both sides (its two sides' entries
    // would share columns) or too many bodies.
    let mut layout = (bodies.len() < NO_BODY as usize && contacts.iter().all(|c| c.j != Some(c.i)))
        .then(|| (Vec::with_capacity(3 * contacts.len()), Vec::with_capacity(3 * contacts.len())));
    // The entries are listed only when C's columns are made from them.
    let entries = !(by_rows && layout.is_some() && n.is_multiple_of(6));
    // At most three rows of two bodies' six columns per contact.
    let room = if entries { 36 * contacts.len() } else { 0 };
    let (mut rows, mut cols, mut vals) =
        (Vec::with_capacity(room), Vec::with_capacity(room), Vec::with_capacity(room));
    // Push one row d·(R_k x) (with sign per side) scaled by `scale`; returns d·R_k u⁻.
    let mut push_row = |row: usize, ct: &JumpContact, d: &Vector3<f64>, scale: f64| -> f64 {
        let mut du = 0.0;
        let mut row_bodies = [NO_BODY; 2];
        let mut row_vals = [0.0; 12];
        let sides = [(ct.i, 1.0)].into_iter().chain(ct.j.map(|j| (j, -1.0)));
        for (b, sign) in sides {
            let rr = row6(&(ct.point - bodies[b].pos), d) * sign;
            du += rr.dot(&u6(&bodies[b]));
            let slot = match ct.j {
                Some(j) if j < ct.i => usize::from(b == ct.i),
                Some(_) => usize::from(b != ct.i),
                None => 0,
            };
            row_bodies[slot] = b as u32;
            for a in 0..6 {
                let v = scale * rr[a];
                if entries {
                    rows.push(row);
                    cols.push(6 * b + a);
                    vals.push(v);
                }
                row_vals[6 * slot + a] = v;
            }
        }
        if let Some((b, v)) = layout.as_mut() {
            b.push(row_bodies);
            v.push(row_vals);
        }
        du
    };
    for (ct, f) in contacts.iter().zip(friction) {
        let k = r.len();
        normal_rows.push(k);
        let basis = tangent_basis(&ct.normal);
        tangents.push(basis);
        let cu = push_row(k, ct, &ct.normal, 1.0);
        if f.mu > 0.0 {
            if run > 0 {
                cones.push(NonnegativeConeT(run));
                run = 0;
            }
            r.push(0.5 * (cu + ct.separation - f.credit));
            let t1u = push_row(k + 1, ct, &basis.0, f.mu);
            r.push(0.5 * f.mu * t1u);
            let t2u = push_row(k + 2, ct, &basis.1, f.mu);
            r.push(0.5 * f.mu * t2u);
            cones.push(SecondOrderConeT(3));
        } else {
            r.push(0.5 * (cu + ct.separation));
            run += 1;
        }
    }
    if run > 0 {
        cones.push(NonnegativeConeT(run));
    }
    let m = r.len();
    let qp = match layout {
        Some((b, v)) if n.is_multiple_of(6) => {
            let layout = RowBlocks::from_rows(b, v);
            let c = (!by_rows).then(|| csc_from_rows(m, n, &rows, &cols, &vals));
            Qp::with_h_of(base, c, Some(layout), r)
        }
        _ => Qp::with_h_of(base, Some(csc_from_rows(m, n, &rows, &cols, &vals)), None, r),
    };
    ConeQp { qp, cones, normal_rows, mu: friction.iter().map(|f| f.mu).collect(), tangents }
}

/// The outcome of a conic jump: the per-contact normal percussions λ_N in
/// `outcome.lambda` (as for the QP), and the tangential percussions on body i.
#[derive(Debug, Clone, PartialEq)]
pub struct ConeOutcome {
    /// Solution, status, residuals; `lambda` = λ_N per contact, N s.
    pub outcome: QpOutcome,
    /// Tangential percussion λ_T on body i per contact (zero when frictionless), N s.
    pub tangential: Vec<Vector3<f64>>,
}

fn new_solver(
    cq: &ConeQp,
    tolerance: f64,
    max_iterations: u32,
) -> Result<DefaultSolver<f64>, String> {
    let (q, a, b) = crate::solver::clarabel::clarabel_data(&cq.qp);
    DefaultSolver::new(
        cq.qp.h_upper(),
        &q,
        &a,
        &b,
        &cq.cones,
        crate::solver::clarabel::settings(tolerance, max_iterations),
    )
    .map_err(|e| e.to_string())
}

/// Solve the conic program with Clarabel.
pub fn solve(cq: &ConeQp, tolerance: f64, max_iterations: u32) -> ConeOutcome {
    let nc = cq.normal_rows.len();
    let failed = |status: QpStatus| ConeOutcome {
        outcome: QpOutcome {
            x: vec![0.0; cq.qp.n()],
            lambda: vec![0.0; nc],
            status,
            solved: false,
            iterations: 0,
            r_prim: f64::NAN,
            r_dual: f64::NAN,
            solver: SolverUsed::Clarabel,
            fallback: false,
        },
        tangential: vec![Vector3::zeros(); nc],
    };
    let mut solver = match new_solver(cq, tolerance, max_iterations) {
        Ok(s) => s,
        Err(e) => return failed(QpStatus::SetupError(e.to_string())),
    };
    solver.solve();
    let s = &solver.solution;
    let lambda: Vec<f64> = cq.normal_rows.iter().map(|&k| s.z[k]).collect();
    let tangential = cq
        .normal_rows
        .iter()
        .zip(&cq.mu)
        .zip(&cq.tangents)
        .map(
            |((&k, &mu), (t1, t2))| {
                if mu > 0.0 { (t1 * s.z[k + 1] + t2 * s.z[k + 2]) * mu } else { Vector3::zeros() }
            },
        )
        .collect();
    ConeOutcome {
        outcome: QpOutcome {
            x: s.x.clone(),
            lambda,
            status: s.status.into(),
            solved: s.status == SolverStatus::Solved,
            iterations: s.iterations,
            r_prim: s.r_prim,
            r_dual: s.r_dual,
            solver: SolverUsed::Clarabel,
            fallback: false,
        },
        tangential,
    }
}

/// The conic program in Clarabel's JSON format (replay with `DefaultSolver::load_from_file`).
pub fn clarabel_json(cq: &ConeQp, tolerance: f64, max_iterations: u32) -> Result<Vec<u8>, String> {
    crate::solver::clarabel::solver_json(&new_solver(cq, tolerance, max_iterations)?)
}

/// Solve an island's jump with friction; when it is not solved and some contact demands a
/// separation velocity, solve again without them (always feasible: u⁺ = 0 satisfies every
/// cone), as the frictionless step does. Returns the outcome (status
/// `SolvedWithoutSeparation (…)` and `fallback` then), whether the retry was used, and the
/// conic program of the accepted (or last) attempt.
pub fn solve_island(
    base: &Qp,
    bodies: &[JumpBody],
    contacts: &[JumpContact],
    friction: &[ContactFriction],
    tolerance: f64,
    max_iterations: u32,
) -> (ConeOutcome, bool, ConeQp) {
    let cq = assemble_cones(base, bodies, contacts, friction);
    let first = solve(&cq, tolerance, max_iterations);
    if first.outcome.solved || !contacts.iter().any(|c| c.separation > 0.0) {
        return (first, false, cq);
    }
    let relaxed: Vec<JumpContact> = contacts
        .iter()
        .map(|c| JumpContact { separation: c.separation.min(0.0), ..c.clone() })
        .collect();
    let cq2 = assemble_cones(base, bodies, &relaxed, friction);
    let retry = solve(&cq2, tolerance, max_iterations);
    if retry.outcome.solved {
        let outcome = QpOutcome {
            status: QpStatus::SolvedWithoutSeparation(Box::new(first.outcome.status.clone())),
            fallback: true,
            iterations: first.outcome.iterations + retry.outcome.iterations,
            ..retry.outcome
        };
        (ConeOutcome { outcome, tangential: retry.tangential }, true, cq2)
    } else {
        (first, false, cq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::assembly::assemble;
    use nalgebra::Matrix3;

    #[test]
    fn tangent_basis_is_orthonormal() {
        for n in [Vector3::z(), Vector3::new(0.3, -0.2, 0.9).normalize(), -Vector3::x()] {
            let (a, b) = tangent_basis(&n);
            assert!(a.dot(&n).abs() < 1e-15 && b.dot(&n).abs() < 1e-15 && a.dot(&b).abs() < 1e-15);
            assert!((a.norm() - 1.0).abs() < 1e-15 && (b.norm() - 1.0).abs() < 1e-15);
        }
    }

    /// The row layout made with the cone rows, and C's compressed columns made from it, are
    /// the layout read from the columns made from C's entries and those columns, bit for
    /// bit: contacts with the second body before and after the first, static ones, and
    /// axis-aligned normals and lever arms (exact and signed zeros).
    #[test]
    fn the_row_layout_and_its_columns_are_those_of_the_entries() {
        let mut rnd = crate::solver::testing::uniform(7);
        for case in 0..100 {
            let nb = 1 + case % 6;
            let bodies: Vec<JumpBody> = (0..nb)
                .map(|b| JumpBody {
                    mass: 1.5 + rnd(),
                    inertia: Matrix3::from_diagonal(&Vector3::new(1.0, 2.0, 3.0)),
                    pos: if b % 2 == 0 {
                        Vector3::new(rnd(), rnd(), rnd())
                    } else {
                        Vector3::new(0.0, 0.0, b as f64)
                    },
                    vel: Vector3::new(rnd(), rnd(), rnd()),
                    omega: Vector3::new(rnd(), rnd(), rnd()),
                })
                .collect();
            let contacts: Vec<JumpContact> = (0..1 + case % 9)
                .map(|k| {
                    let i = (k * 7 + case) % nb;
                    let j = (nb > 1 && k % 3 != 0).then(|| (i + 1 + k % (nb - 1)) % nb);
                    let axis = k % 4 == 1;
                    JumpContact {
                        i,
                        j,
                        point: if axis {
                            bodies[i].pos - Vector3::z()
                        } else {
                            Vector3::new(rnd(), rnd(), rnd())
                        },
                        normal: if axis {
                            Vector3::z()
                        } else {
                            Vector3::new(rnd(), rnd(), rnd() + 1.0).normalize()
                        },
                        kappa_n: 1.0,
                        kappa_t: 0.5,
                        separation: 0.0,
                    }
                })
                .collect();
            let fr: Vec<ContactFriction> = (0..contacts.len())
                .map(|k| ContactFriction { mu: if k % 2 == 0 { 0.6 } else { 0.0 }, credit: 0.0 })
                .collect();
            let base = assemble(&bodies, &contacts, 0.01);
            let cq = assemble_cones(&base, &bodies, &contacts, &fr);
            // C's columns made from the layout are those made from its entries.
            let reference = cones_of(&base, &bodies, &contacts, &fr, false);
            let (c, e) = (cq.qp.c(), reference.qp.c());
            assert_eq!((c.m, c.n, &c.colptr, &c.rowval), (e.m, e.n, &e.colptr, &e.rowval));
            let bits = crate::solver::testing::bits;
            assert_eq!(bits(c.nzval.iter()), bits(e.nzval.iter()), "case {case}: C's values");
            let made = cq.qp.row_blocks().expect("rows of at most two bodies");
            let read = RowBlocks::new(reference.qp.c()).expect("rows of at most two bodies");
            for k in 0..cq.qp.m() {
                let ((bm, vm), (br, vr)) = (made.row(k), read.row(k));
                assert_eq!(bm, br, "case {case}, row {k}: bodies");
                assert_eq!(bits(vm.iter()), bits(vr.iter()), "case {case}, row {k}: values");
            }
        }
    }

    /// The cone rows are (c x − r + γ/2, μ T(x − u⁻/2)) and frictionless contacts keep the
    /// linear row; runs of frictionless rows share a cone.
    #[test]
    fn cone_rows_match_their_definition() {
        let body = |pos: Vector3<f64>, vel: Vector3<f64>| JumpBody {
            mass: 2.0,
            inertia: Matrix3::from_diagonal(&Vector3::new(1.0, 2.0, 3.0)),
            pos,
            vel,
            omega: Vector3::new(0.3, 0.1, -0.2),
        };
        let bodies = vec![
            body(Vector3::zeros(), Vector3::new(0.1, -0.2, -1.0)),
            body(Vector3::new(0.0, 0.0, 1.0), Vector3::new(0.5, 0.2, -0.3)),
        ];
        let nrm = Vector3::new(0.1, 0.2, 1.0).normalize();
        let ct = |i, j, point, normal, separation| JumpContact {
            i,
            j,
            point,
            normal,
            kappa_n: 1.0,
            kappa_t: 0.5,
            separation,
        };
        let contacts = vec![
            ct(0, None, Vector3::new(-0.3, 0.2, -0.5), Vector3::z(), 0.1),
            ct(1, Some(0), Vector3::new(0.2, 0.1, 0.5), nrm, 0.0),
            ct(0, None, Vector3::new(0.3, 0.2, -0.5), Vector3::z(), 0.0),
        ];
        let fr = [
            ContactFriction { mu: 0.0, credit: 0.0 },
            ContactFriction { mu: 0.7, credit: 0.2 },
            ContactFriction { mu: 0.0, credit: 0.0 },
        ];
        let base = assemble(&bodies, &contacts, 0.01);
        let cq = assemble_cones(&base, &bodies, &contacts, &fr);
        assert_eq!(cq.cones, vec![NonnegativeConeT(1), SecondOrderConeT(3), NonnegativeConeT(1)]);
        assert_eq!(cq.normal_rows, vec![0, 1, 4]);
        let x: Vec<f64> = (0..12).map(|k| (k as f64 * 0.37).sin()).collect();
        let cx = cq.qp.c_mul(&x);
        let bx = base.c_mul(&x);
        assert!((cx[0] - bx[0]).abs() < 1e-14 && (cq.qp.r[0] - base.r[0]).abs() < 1e-14);
        assert!((cx[4] - bx[2]).abs() < 1e-14 && (cq.qp.r[4] - base.r[2]).abs() < 1e-14);
        assert!((cx[1] - bx[1]).abs() < 1e-14);
        assert!((cq.qp.r[1] - (base.r[1] - 0.1)).abs() < 1e-14);
        // Tangential rows: μ t·(v_1(A) − v_0(A)) at x, and μ t·(R u⁻)/2 on the right.
        let vpt = |b: &JumpBody, a: Vector3<f64>, u: &[f64]| {
            Vector3::new(u[0], u[1], u[2]) + Vector3::new(u[3], u[4], u[5]).cross(&(a - b.pos))
        };
        let a = contacts[1].point;
        let rel = vpt(&bodies[1], a, &x[6..12]) - vpt(&bodies[0], a, &x[0..6]);
        let (t1, t2) = cq.tangents[1];
        assert!((cx[2] - 0.7 * rel.dot(&t1)).abs() < 1e-14);
        assert!((cx[3] - 0.7 * rel.dot(&t2)).abs() < 1e-14);
        let rum = relative_velocity(&bodies, &contacts[1]);
        assert!((cq.qp.r[2] - 0.35 * rum.dot(&t1)).abs() < 1e-14);
        assert!((cq.qp.r[3] - 0.35 * rum.dot(&t2)).abs() < 1e-14);
    }
}
