//! Blocks table: the rigid parallelepipeds of a simulation, written by `talus seed`
//! (initial state) and by `talus run` (final state, so it can start a new run).
//!
//! Orientation is the unit quaternion (w, x, y, z) rotating body axes to world axes;
//! body axis 1 carries edge `a`, axis 2 edge `b`, axis 3 edge `c`. Angular velocity is in
//! the world frame. `geometry` is the WKB point (with Z) of the centre (GeoParquet 1.1).

use crate::field;
use arrow::datatypes::{DataType, Schema};

/// The blocks schema.
pub fn schema() -> Schema {
    let f64m = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        field("id", DataType::UInt32, false, "1", "block identifier, stable across stages"),
        f64m("a", "m", "edge length along body axis 1"),
        f64m("b", "m", "edge length along body axis 2"),
        f64m("c", "m", "edge length along body axis 3"),
        f64m("density", "kg/m^3", "rock density"),
        f64m("mass", "kg", "mass = density * a * b * c"),
        field(
            "class",
            DataType::UInt32,
            false,
            "1",
            "size class as seeded (0 = the largest; 0 for every block of a single size); tables written before the column existed read as 0",
        ),
        f64m("x", "m", "centre of mass, easting"),
        f64m("y", "m", "centre of mass, northing"),
        f64m("z", "m", "centre of mass, elevation"),
        f64m("qw", "1", "orientation quaternion, scalar part (body to world)"),
        f64m("qx", "1", "orientation quaternion, i part"),
        f64m("qy", "1", "orientation quaternion, j part"),
        f64m("qz", "1", "orientation quaternion, k part"),
        f64m("vx", "m/s", "velocity of the centre, x"),
        f64m("vy", "m/s", "velocity of the centre, y"),
        f64m("vz", "m/s", "velocity of the centre, z"),
        f64m("wx", "rad/s", "angular velocity (world frame), x"),
        f64m("wy", "rad/s", "angular velocity (world frame), y"),
        f64m("wz", "rad/s", "angular velocity (world frame), z"),
        field(
            "active",
            DataType::Boolean,
            false,
            "1",
            "false once the block left the terrain and is no longer simulated",
        ),
        field(
            "geometry",
            DataType::Binary,
            false,
            "WKB",
            "centre as a 3D WKB point, Point Z (GeoParquet)",
        ),
    ])
}
