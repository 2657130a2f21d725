//! A-CD² rigid-block multiple-collision engine (León 2016, corrected in docs/physics.md §1–5).
//!
//! Each step of length Δt solves, for x = (u⁺ + u⁻)/2 ∈ R^{6N},
//!
//! ```text
//! minimise ½ xᵀ H x − pᵀ x   s.t.  c_kᵀ x ≥ c_kᵀ u⁻ / 2   for every contact k
//! H = 2M + Σ_k (κ_N c_k c_kᵀ + κ_T T_kᵀ T_k),   p = 2M u⁻ + b
//! ```
//!
//! then u⁺ = 2x − u⁻ and positions advance with (u⁻ + u⁺)/2.

pub mod assembly;
pub mod body;
pub mod broad;
pub mod certificate;
pub mod config;
pub mod contact;
pub mod dense;
pub mod detect;
pub mod files;
pub mod friction;
pub mod islands;
pub mod narrow;
pub mod nlgs;
pub mod rotation;
pub mod sim;
pub mod solvers;
pub mod statics;
pub mod step;
pub mod warm;

pub use config::Config;
pub use files::{Error, Summary, run};
