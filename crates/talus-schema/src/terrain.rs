//! Terrain TIN tables written by `talus terrain` and read by `seed`, `run`, `compare`.
//!
//! Two files: vertices and triangles. Triangles are counter-clockwise seen from above
//! (normal with nz > 0); `v0, v1, v2` index `id` in the vertices table.

use crate::field;
use arrow::datatypes::{DataType, Schema};

/// Vertices of the TIN.
pub fn vertices_schema() -> Schema {
    Schema::new(vec![
        field("id", DataType::UInt32, false, "1", "vertex index (0-based, dense)"),
        field("x", DataType::Float64, false, "m", "easting"),
        field("y", DataType::Float64, false, "m", "northing"),
        field("z", DataType::Float64, false, "m", "elevation"),
    ])
}

/// Triangles of the TIN.
pub fn triangles_schema() -> Schema {
    Schema::new(vec![
        field("id", DataType::UInt32, false, "1", "triangle index (0-based, dense)"),
        field("v0", DataType::UInt32, false, "1", "first vertex id"),
        field(
            "v1",
            DataType::UInt32,
            false,
            "1",
            "second vertex id (counter-clockwise from above)",
        ),
        field("v2", DataType::UInt32, false, "1", "third vertex id"),
        field("nx", DataType::Float64, false, "1", "unit upward normal, x"),
        field("ny", DataType::Float64, false, "1", "unit upward normal, y"),
        field("nz", DataType::Float64, false, "1", "unit upward normal, z (> 0)"),
        field("area", DataType::Float64, false, "m^2", "area of the triangle (3D)"),
        field("slope", DataType::Float64, false, "deg", "slope angle from horizontal"),
    ])
}
