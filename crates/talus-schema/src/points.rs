//! Points table (`talus ingest` output; read by `diff` and `terrain`).
//!
//! One row per LiDAR return. The columns below are always present; the ingest stage
//! adds the optional per-format columns (GPS time, RGB, NIR, extra bytes) to its own
//! output schema.

use crate::field;
use arrow::datatypes::{DataType, Schema};

/// Columns every points table has, and the only ones later stages rely on.
pub fn core_schema() -> Schema {
    Schema::new(vec![
        field("x", DataType::Float64, false, "CRS unit (m)", "easting, scale and offset applied"),
        field("y", DataType::Float64, false, "CRS unit (m)", "northing, scale and offset applied"),
        field("z", DataType::Float64, false, "CRS unit (m)", "elevation, scale and offset applied"),
        field("classification", DataType::UInt8, false, "1", "ASPRS class (2 = ground, 3-5 = vegetation)"),
    ])
}
