//! The Arrow schemas of every table Talus writes, declared once.
//!
//! Each column carries its physical unit and a one-line description in the Arrow field
//! metadata (keys [`UNIT_KEY`] and [`DESCRIPTION_KEY`]), so a reader in pandas, polars,
//! DuckDB or QGIS sees what a number means without reading this code. One module per
//! pipeline stage; a stage's library builds its record batches against these schemas and
//! `talus-io` validates every file against them before a later stage reads it.

use arrow::datatypes::{DataType, Field};
use std::collections::HashMap;

pub mod blocks;
pub mod compare;
pub mod diff;
pub mod file_names;
pub mod formats;
pub mod points;
pub mod run;
pub mod terrain;

/// Field-metadata key holding a column's physical unit (e.g. `"m"`, `"kg"`, `"1"`).
pub const UNIT_KEY: &str = "unit";
/// Field-metadata key holding a column's one-line description.
pub const DESCRIPTION_KEY: &str = "description";

/// A column with its unit and description in the field metadata.
pub fn field(
    name: &str,
    data_type: DataType,
    nullable: bool,
    unit: &str,
    description: &str,
) -> Field {
    Field::new(name, data_type, nullable).with_metadata(HashMap::from([
        (UNIT_KEY.to_string(), unit.to_string()),
        (DESCRIPTION_KEY.to_string(), description.to_string()),
    ]))
}

/// Unit of a field as declared in its metadata (`None` when the field has none).
pub fn unit_of(field: &Field) -> Option<&str> {
    field.metadata().get(UNIT_KEY).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_carries_unit_and_description() {
        let f = field("z", DataType::Float64, false, "m", "elevation");
        assert_eq!(unit_of(&f), Some("m"));
        assert_eq!(f.metadata()[DESCRIPTION_KEY], "elevation");
    }
}
