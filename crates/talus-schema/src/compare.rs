//! Tables written by `talus compare` (declared by the compare stage).
//!
//! * `metrics.parquet` ([`metrics_schema`]): one row per metric, long format, so a run
//!   without survey can say which metrics do not apply (`applicable = false`, value NaN).
//! * `thickness.parquet` ([`thickness_schema`]): the simulated and surveyed deposit
//!   thickness on the DoD grid, one row per cell where either is non-zero or the cell is
//!   in the scar (GeoParquet 1.1: `geometry` is the cell centre as a WKB point).
//! * `trajectory_lines.parquet` ([`trajectory_lines_schema`]): one row per block, its
//!   recorded centre positions as a 3-D line (GeoParquet 1.1, `LineString Z`), for QGIS.

use crate::field;
use arrow::datatypes::{DataType, Schema};

/// Metrics: one row per metric.
pub fn metrics_schema() -> Schema {
    Schema::new(vec![
        field(
            "metric",
            DataType::Utf8,
            false,
            "1",
            "metric identifier (snake_case, `_simulated`/`_surveyed` suffix for paired values)",
        ),
        field(
            "value",
            DataType::Float64,
            false,
            "see `unit`",
            "value of the metric (NaN when not applicable)",
        ),
        field("unit", DataType::Utf8, false, "1", "physical unit of `value`"),
        field(
            "applicable",
            DataType::Boolean,
            false,
            "1",
            "false when the inputs do not allow the metric (e.g. no survey)",
        ),
        field(
            "description",
            DataType::Utf8,
            false,
            "1",
            "what the metric measures, and why it is not applicable when it is not",
        ),
    ])
}

/// Deposit thickness on the DoD grid.
pub fn thickness_schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        field("row", DataType::UInt32, false, "1", "grid row (0 = southernmost)"),
        field("col", DataType::UInt32, false, "1", "grid column (0 = westernmost)"),
        f("x", "m", "cell centre, easting"),
        f("y", "m", "cell centre, northing"),
        f(
            "thickness_simulated",
            "m",
            "simulated deposit thickness: block volumes (times bulking) spread over their footprints",
        ),
        f(
            "thickness_surveyed",
            "m",
            "surveyed deposit thickness: dz of the cells in deposit zones, 0 elsewhere",
        ),
        field(
            "in_simulated",
            DataType::Boolean,
            false,
            "1",
            "simulated thickness above the configured minimum",
        ),
        field(
            "in_surveyed",
            DataType::Boolean,
            false,
            "1",
            "cell belongs to a surveyed deposit zone",
        ),
        field("in_scar", DataType::Boolean, false, "1", "cell belongs to a scar zone"),
        field(
            "geometry",
            DataType::Binary,
            false,
            "WKB",
            "cell centre as a 2D WKB point (GeoParquet)",
        ),
    ])
}

/// Block trajectories as lines, one row per block.
pub fn trajectory_lines_schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        field("id", DataType::UInt32, false, "1", "block id"),
        field("samples", DataType::UInt32, false, "1", "recorded positions on the line"),
        f("length", "m", "3-D length of the line through the recorded centre positions"),
        f("drop", "m", "elevation of the first recorded centre minus that of the last"),
        f("max_speed", "m/s", "largest recorded speed of the centre"),
        field(
            "geometry",
            DataType::Binary,
            false,
            "WKB",
            "the recorded centre positions, in time order, as an ISO WKB LineString Z (GeoParquet)",
        ),
    ])
}
