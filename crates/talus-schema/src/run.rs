//! Tables written by `talus run`: trajectories, energies and per-step diagnostics
//! (read by `compare`). The final state uses [`crate::blocks::schema`].

use crate::field;
use arrow::datatypes::{DataType, Schema};

/// Trajectories: the state of every active block every k steps.
pub fn trajectories_schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        field("step", DataType::UInt64, false, "1", "time step index (0 = initial state)"),
        f("time", "s", "simulated time"),
        field("id", DataType::UInt32, false, "1", "block id"),
        f("x", "m", "centre, easting"),
        f("y", "m", "centre, northing"),
        f("z", "m", "centre, elevation"),
        f("qw", "1", "orientation quaternion, scalar part"),
        f("qx", "1", "orientation quaternion, i"),
        f("qy", "1", "orientation quaternion, j"),
        f("qz", "1", "orientation quaternion, k"),
        f("vx", "m/s", "velocity, x"),
        f("vy", "m/s", "velocity, y"),
        f("vz", "m/s", "velocity, z"),
        f("wx", "rad/s", "angular velocity (world), x"),
        f("wy", "rad/s", "angular velocity (world), y"),
        f("wz", "rad/s", "angular velocity (world), z"),
    ])
}

/// Energies per step (all blocks summed). Balance: kinetic + potential + dissipated_cumulative
/// = initial kinetic + initial potential, up to the discretisation of gravity's work.
pub fn energies_schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        field("step", DataType::UInt64, false, "1", "time step index"),
        f("time", "s", "simulated time at the end of the step"),
        f("kinetic_translational", "J", "sum of m |v|^2 / 2"),
        f("kinetic_rotational", "J", "sum of w . I w / 2"),
        f("kinetic", "J", "total kinetic energy"),
        f("potential", "J", "sum of m g z (z from the CRS datum)"),
        f("dissipated", "J", "energy dissipated by the percussions of this step's jump (>= 0)"),
        f("dissipated_cumulative", "J", "dissipated energy since the start"),
        f("gravity_work", "J", "cumulative work of gravity since the start"),
        f(
            "separation_work",
            "J",
            "work of the penetration correction this step: the separation velocities' work, or the potential energy the position correction adds (m g dz of the moves)",
        ),
        f("separation_work_cumulative", "J", "penetration-correction work since the start"),
        f(
            "removed_cumulative",
            "J",
            "kinetic + potential energy of the blocks deactivated so far (left the terrain)",
        ),
        f(
            "balance_error",
            "J",
            "kinetic + potential + dissipated_cumulative - separation_work_cumulative + removed_cumulative - initial total",
        ),
    ])
}

/// Diagnostics per step: contacts, islands, QP size, solver outcome. Wall-clock times are
/// kept out of it (see [`timings_schema`]) so that it is byte-identical between two runs.
pub fn diagnostics_schema() -> Schema {
    let u = |n: &str, d: &str| field(n, DataType::UInt32, false, "1", d);
    let f = |n: &str, un: &str, d: &str| field(n, DataType::Float64, false, un, d);
    Schema::new(vec![
        field("step", DataType::UInt64, false, "1", "time step index"),
        f("time", "s", "simulated time at the end of the step"),
        u("contacts_block_block", "block-block contacts"),
        u("contacts_block_terrain", "block-terrain (TIN) contacts"),
        u("contacts_block_plane", "block-plane contacts"),
        u("islands", "connected components of the contact graph with at least one contact"),
        u("qp_variables", "unknowns of the largest island's QP"),
        u("qp_constraints", "constraints of the largest island's QP"),
        field("solver", DataType::Utf8, false, "1", "solver that produced the accepted solution"),
        field("status", DataType::Utf8, false, "1", "worst solver status over the step's islands"),
        u("iterations", "solver iterations summed over islands"),
        f("primal_residual", "1", "largest primal residual over islands"),
        f("dual_residual", "1", "largest dual residual over islands"),
        f(
            "accuracy",
            "1",
            "worst relative KKT residual (stationarity, feasibility, complementarity) of the accepted solutions, computed from each island's program whatever the solver (0: no island)",
        ),
        field(
            "fallback",
            DataType::Boolean,
            false,
            "1",
            "an island was not certified by its first solver and was solved by the next (Clarabel after NLGS and ADMM or after the warm solver; the method's own solver after the dense solver)",
        ),
        f("max_penetration", "m", "largest penetration depth at the start of the step"),
        u("deactivated", "blocks deactivated at this step (left the terrain's xy extent)"),
        u("failed_qps", "islands whose QP did not reach Solved (dumped as Clarabel JSON)"),
        u("active_blocks", "blocks still simulated after this step"),
    ])
}

/// Wall-clock times per step: the one run table that differs between two runs of the same
/// inputs (all zero with `wall_times = false`). A resumed run keeps the times measured by
/// the process that ran each step.
pub fn timings_schema() -> Schema {
    let f = |n: &str, d: &str| field(n, DataType::Float64, false, "s", d);
    Schema::new(vec![
        field("step", DataType::UInt64, false, "1", "time step index"),
        f("t_broad", "wall time, broad phase"),
        f("t_narrow", "wall time, narrow phase"),
        f("t_assembly", "wall time, QP assembly"),
        f("t_solve", "wall time, QP solves"),
        f("t_step", "wall time of the whole step"),
    ])
}

/// What each value of the diagnostics' `status` column means, for readers of the table
/// and of the report. A status may carry a detail in parentheses (e.g.
/// `SolvedWithoutSeparation (PrimalInfeasible)`: the status of the first attempt).
pub const STATUS_MEANINGS: [(&str, &str); 16] = [
    ("Solved", "every island's problem was solved to the requested accuracy"),
    (
        "SolvedWithoutSeparation",
        "the problem with the penetration-correction (separation) velocities could not be solved (the first attempt's status in parentheses, usually PrimalInfeasible: the correction asked for more than the contacts allow); the step was solved again without them, so contacts are resolved and the penetration is corrected on later steps",
    ),
    ("AlmostSolved", "Clarabel stopped at a reduced accuracy; the solution was accepted"),
    ("MaxIterations", "the iteration limit was reached before the requested accuracy"),
    ("MaxTime", "the solver's time limit was reached"),
    ("PrimalInfeasible", "no velocities satisfy every contact constraint"),
    ("AlmostPrimalInfeasible", "as PrimalInfeasible, at reduced accuracy"),
    (
        "DualInfeasible",
        "the problem is unbounded (should not happen: the mass matrix is positive definite)",
    ),
    ("AlmostDualInfeasible", "as DualInfeasible, at reduced accuracy"),
    ("NumericalError", "Clarabel stopped on a numerical error (ill-conditioned contact set)"),
    ("InsufficientProgress", "Clarabel stopped for lack of progress"),
    ("Unsolved", "the solver did not run"),
    ("CallbackTerminated", "stopped by a callback (not used by Talus)"),
    ("SetupError", "the problem could not be set up for the solver (detail in parentheses)"),
    (
        "NotPositiveDefinite",
        "the dense solver's matrix lost positive definiteness; the island went to the fallback solver",
    ),
    (
        "NotCertified",
        "the dense solver's answer missed its accuracy certificate; the island went to the fallback solver",
    ),
];

/// The meaning of a diagnostics `status` value ([`STATUS_MEANINGS`]), by its name before
/// any detail in parentheses; `None` for an unknown status.
pub fn status_meaning(status: &str) -> Option<&'static str> {
    let name = status.split(['(', ' ']).next().unwrap_or(status);
    STATUS_MEANINGS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}
