//! Points table (`talus ingest` output; read by `diff` and `terrain`).
//!
//! One row per LiDAR return. The columns below are always present; the ingest stage
//! adds the optional per-format columns (GPS time, RGB, NIR, extra bytes) to its own
//! output schema.

use crate::field;
use arrow::datatypes::{DataType, Field, Schema};

/// Columns every points table has, and the only ones later stages rely on.
pub fn core_schema() -> Schema {
    Schema::new(vec![
        field("x", DataType::Float64, false, "CRS unit (m)", "easting, scale and offset applied"),
        field("y", DataType::Float64, false, "CRS unit (m)", "northing, scale and offset applied"),
        field("z", DataType::Float64, false, "CRS unit (m)", "elevation, scale and offset applied"),
        field(
            "classification",
            DataType::UInt8,
            false,
            "1",
            "ASPRS class (2 = ground, 3-5 = vegetation)",
        ),
    ])
}

/// Which optional per-format columns a points table has (LAS point formats 0-10).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OptionalColumns {
    /// `gps_time` (formats 1, 3-10).
    pub gps_time: bool,
    /// `red`, `green`, `blue` (formats 2, 3, 5, 7, 8, 10).
    pub rgb: bool,
    /// `nir` (formats 8, 10).
    pub nir: bool,
}

impl OptionalColumns {
    /// The optional columns of a LAS point format number (0-10); `None` for another number.
    pub fn for_point_format(format: u8) -> Option<Self> {
        let (gps_time, rgb, nir) = match format {
            0 => (false, false, false),
            1 | 4 => (true, false, false),
            2 => (false, true, false),
            3 | 5 => (true, true, false),
            6 | 9 => (true, false, false),
            7 => (true, true, false),
            8 | 10 => (true, true, true),
            _ => return None,
        };
        Some(OptionalColumns { gps_time, rgb, nir })
    }

    /// The columns two inputs both have (what a merged table keeps).
    pub fn intersect(self, other: Self) -> Self {
        OptionalColumns {
            gps_time: self.gps_time && other.gps_time,
            rgb: self.rgb && other.rgb,
            nir: self.nir && other.nir,
        }
    }
}

/// The full points table written by `talus ingest`: the [`core_schema`] columns, the
/// attributes every LAS point format has, the optional per-format columns, then
/// `extra` (the LAS extra-bytes attributes, built by the ingest stage).
///
/// Column order: `x, y, z, intensity, return_number, number_of_returns, classification,
/// scan_angle, point_source_id, [gps_time], [red, green, blue], [nir], [extra...]`.
pub fn full_schema(optional: OptionalColumns, extra: Vec<Field>) -> Schema {
    let core = core_schema();
    let core_field = |name: &str| {
        core.field_with_name(name)
            .cloned()
            .unwrap_or_else(|_| Field::new(name, DataType::Null, true))
    };
    let mut fields = vec![
        core_field("x"),
        core_field("y"),
        core_field("z"),
        field(
            "intensity",
            DataType::UInt16,
            false,
            "1",
            "return pulse strength, sensor-specific scale",
        ),
        field(
            "return_number",
            DataType::UInt8,
            false,
            "1",
            "return number of this point within its pulse (1 = first)",
        ),
        field("number_of_returns", DataType::UInt8, false, "1", "number of returns of the pulse"),
        core_field("classification"),
        field(
            "scan_angle",
            DataType::Float32,
            false,
            "deg",
            "scan angle, 0 = nadir, negative to the left of the track",
        ),
        field("point_source_id", DataType::UInt16, false, "1", "flight line (source) identifier"),
    ];
    if optional.gps_time {
        fields.push(field(
            "gps_time",
            DataType::Float64,
            false,
            "s",
            "GPS time (week time or adjusted standard GPS time, see las:header)",
        ));
    }
    if optional.rgb {
        fields.push(field("red", DataType::UInt16, false, "1", "red channel (16-bit scale)"));
        fields.push(field("green", DataType::UInt16, false, "1", "green channel (16-bit scale)"));
        fields.push(field("blue", DataType::UInt16, false, "1", "blue channel (16-bit scale)"));
    }
    if optional.nir {
        fields.push(field(
            "nir",
            DataType::UInt16,
            false,
            "1",
            "near-infrared channel (16-bit scale)",
        ));
    }
    fields.extend(extra);
    Schema::new(fields)
}

/// Name of the column holding the class as read from the input when `talus ingest`
/// classifies ground (`classification` then holds the computed class).
pub const CLASSIFICATION_ORIGINAL: &str = "classification_original";

/// The column `talus ingest` inserts right after `classification` when its ground filter
/// runs: the ASPRS class as read from the input.
pub fn ground_schema() -> Schema {
    Schema::new(vec![field(
        CLASSIFICATION_ORIGINAL,
        DataType::UInt8,
        false,
        "1",
        "ASPRS class as read from the input; `classification` holds the ground filter's (2 = ground, 1 = not ground)",
    )])
}

/// `schema` with the [`ground_schema`] column inserted right after `classification` (at
/// the end if there is no `classification`).
pub fn with_original_classification(schema: &Schema) -> Schema {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let at = schema.index_of("classification").map_or(fields.len(), |i| i + 1);
    fields.insert(at, ground_schema().field(0).clone());
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_schema_contains_core_and_optional_columns() {
        let opt = OptionalColumns::for_point_format(8).unwrap();
        let s = full_schema(opt, vec![Field::new("amplitude", DataType::Float64, false)]);
        for f in core_schema().fields() {
            assert_eq!(s.field_with_name(f.name()).unwrap(), f.as_ref());
        }
        for name in ["gps_time", "red", "green", "blue", "nir", "amplitude"] {
            assert!(s.field_with_name(name).is_ok(), "{name}");
        }
        let s0 = full_schema(OptionalColumns::for_point_format(0).unwrap(), vec![]);
        assert_eq!(s0.fields().len(), 9);
        assert!(OptionalColumns::for_point_format(11).is_none());
    }

    #[test]
    fn original_classification_follows_classification() {
        let s = with_original_classification(&full_schema(OptionalColumns::default(), vec![]));
        let c = s.index_of("classification").unwrap();
        assert_eq!(s.field(c + 1).name(), CLASSIFICATION_ORIGINAL);
        assert_eq!(s.fields().len(), 10);
    }
}
