//! The jump's convex program and the methods that solve it: assembly of an island's QP,
//! Clarabel (the interior-point reference), the warm-started and dense active-set
//! solvers of frictionless islands, Coulomb friction as second-order cones, non-linear
//! Gauss–Seidel in contact space, and the accuracy certificate every method is held to.

pub mod admm;
pub mod assembly;
pub(crate) mod block_cholesky;
pub mod certificate;
pub mod clarabel;
pub mod dense;
pub(crate) mod dissection;
pub mod friction;
pub mod islands;
pub mod nlgs;
pub(crate) mod pair;
pub(crate) mod supernodal;
#[cfg(test)]
pub(crate) mod testing;
pub mod warm;
pub mod wide;
