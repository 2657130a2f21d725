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

pub mod allocator;
pub mod body;
pub mod config;
mod counting_sort;
pub mod driver;
pub mod error;
pub mod geometry;
pub mod paraview;
pub mod rotation;
pub mod sim;
pub mod solver;
pub mod step;

pub use config::Config;
pub use driver::{Summary, run};
pub use error::Error;
