//! `docs/formats.md`, rendered from the schemas themselves so that the document cannot
//! drift from the code: every table Talus writes, its file, and each column's type, unit
//! and description as the field metadata declares them. A test compares the committed file
//! with [`markdown`] (`TALUS_UPDATE_DOCS=1 cargo test -p talus-schema` rewrites it).

use crate::{DESCRIPTION_KEY, UNIT_KEY};
use arrow::datatypes::{DataType, Schema};

/// Every table: (file as written by the pipeline, stage, what it holds, schema).
pub fn tables() -> Vec<(&'static str, &'static str, &'static str, Schema)> {
    use crate::{blocks, compare, diff, points, run, terrain};
    vec![
        (
            "points/{pre,post}.parquet",
            "ingest",
            "the LAS/LAZ points (core columns; `talus ingest` adds the LAS attributes, the optional per-format columns and the extra bytes, see below)",
            points::core_schema(),
        ),
        (
            "points/{pre,post}.parquet (all columns)",
            "ingest",
            "the full points table of a LAS point format with GPS time, RGB and NIR (format 8 or 10)",
            points::full_schema(
                points::OptionalColumns { gps_time: true, rgb: true, nir: true },
                Vec::new(),
            ),
        ),
        (
            "points/{pre,post}.parquet (ground filtering)",
            "ingest",
            "the column `talus ingest` inserts after `classification` when its ground filter runs (`[ingest] ground`, docs/ground.md)",
            points::ground_schema(),
        ),
        (
            "diff/dod.parquet",
            "diff",
            "DEM of difference on the grid, with level of detection",
            diff::dod_schema(),
        ),
        (
            "diff/zones.parquet",
            "diff",
            "scar and deposit zones (GeoParquet polygons)",
            diff::zones_schema(),
        ),
        ("diff/c2c.parquet", "diff", "cloud-to-cloud nearest distances", diff::c2c_schema()),
        ("diff/m3c2.parquet", "diff", "M3C2 distances at the core points", diff::m3c2_schema()),
        ("terrain/vertices.parquet", "terrain", "TIN vertices", terrain::vertices_schema()),
        ("terrain/triangles.parquet", "terrain", "TIN triangles", terrain::triangles_schema()),
        (
            "seed/blocks.parquet, run/final.parquet",
            "seed, run",
            "rigid blocks (initial state from seed, final state from run; GeoParquet points)",
            blocks::schema(),
        ),
        (
            "run/trajectories.parquet",
            "run",
            "block states every `output_every` steps",
            run::trajectories_schema(),
        ),
        ("run/energies.parquet", "run", "energy balance per step", run::energies_schema()),
        (
            "run/diagnostics.parquet",
            "run",
            "contacts, islands and solver outcome per step",
            run::diagnostics_schema(),
        ),
        (
            "run/timings.parquet",
            "run",
            "wall-clock times per step (the one run table that differs between two runs)",
            run::timings_schema(),
        ),
        ("compare/metrics.parquet", "compare", "one row per metric", compare::metrics_schema()),
        (
            "compare/thickness.parquet",
            "compare",
            "simulated and surveyed deposit thickness per cell",
            compare::thickness_schema(),
        ),
        (
            "compare/trajectory_lines.parquet",
            "compare",
            "each block's recorded centre positions as a 3-D line",
            compare::trajectory_lines_schema(),
        ),
    ]
}

fn type_name(t: &DataType) -> String {
    match t {
        DataType::Float64 => "f64".into(),
        DataType::Float32 => "f32".into(),
        DataType::UInt8 => "u8".into(),
        DataType::UInt16 => "u16".into(),
        DataType::UInt32 => "u32".into(),
        DataType::UInt64 => "u64".into(),
        DataType::Int8 => "i8".into(),
        DataType::Int16 => "i16".into(),
        DataType::Int32 => "i32".into(),
        DataType::Int64 => "i64".into(),
        DataType::Boolean => "bool".into(),
        DataType::Utf8 => "string".into(),
        DataType::Binary => "binary (WKB)".into(),
        other => format!("{other}"),
    }
}

/// The Markdown of `docs/formats.md`.
pub fn markdown() -> String {
    let mut s = String::from(
        "# File formats\n\n\
         Generated from `crates/talus-schema` (`TALUS_UPDATE_DOCS=1 cargo test -p talus-schema`\n\
         rewrites this file; a test fails when it is stale). Every table is Parquet; each\n\
         column carries its unit (`unit`) and description (`description`) in the Arrow field\n\
         metadata, and each file its provenance (stage, version, configuration, input hashes,\n\
         CRS) in the file's key-value metadata. Paths are relative to the pipeline's output\n\
         directory (`runs/SITE/`).\n",
    );
    for (file, stage, what, schema) in tables() {
        s.push_str(&format!("\n## `{file}`\n\nWritten by `{stage}`: {what}.\n\n"));
        s.push_str("| column | type | unit | nullable | description |\n|---|---|---|---|---|\n");
        for f in schema.fields() {
            let meta = f.metadata();
            let get = |k: &str| meta.get(k).map(String::as_str).unwrap_or("");
            s.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                f.name(),
                type_name(f.data_type()),
                get(UNIT_KEY),
                if f.is_nullable() { "yes" } else { "no" },
                get(DESCRIPTION_KEY).replace('|', "\\|")
            ));
        }
        if file == "run/diagnostics.parquet" {
            s.push_str(
                "
Values of `status` (a detail may follow in parentheses):

",
            );
            s.push_str("| status | meaning |\n|---|---|\n");
            for (name, meaning) in crate::run::STATUS_MEANINGS {
                s.push_str(&format!("| `{name}` | {meaning} |\n"));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/formats.md` is the rendering of the schemas.
    #[test]
    fn docs_formats_is_up_to_date() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/formats.md");
        let want = markdown();
        if std::env::var_os("TALUS_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            have == want,
            "docs/formats.md is stale: run `TALUS_UPDATE_DOCS=1 cargo test -p talus-schema`"
        );
    }
}
