//! Parquet input and output shared by every Talus stage.
//!
//! * [`ParquetSink`] streams record batches into a temporary file beside the target and
//!   renames it into place on [`ParquetSink::finish`]: a failed or interrupted stage
//!   leaves no half-written output, and an input is never opened for writing.
//! * Every file carries its [`Provenance`] in the Parquet key-value metadata: the stage,
//!   the crate version, the effective configuration (JSON), the SHA-256 of each input
//!   file and the coordinate reference system (WKT and/or a PROJJSON `id`).
//! * [`read_table`] validates a file against the schema a stage expects and names the
//!   missing or mistyped column.
//! * [`AtomicFile`] gives the same write-then-rename guarantee to non-Parquet outputs
//!   (PNG, HTML, JSON, LAS, PLY).
//! * [`geo`] writes the GeoParquet 1.1 `geo` metadata and WKB geometries.
//!
//! Modules: [`error`] ([`IoError`]), [`crs`], [`provenance`] (and SHA-256), [`atomic`],
//! [`parquet_io`] (sink, writer properties, schema-checked reading), [`progress`], [`geo`],
//! and the shared interchange tables with their one reader and one writer: [`blocks`],
//! [`tin`], [`zones`], and the reader of [`points`] (whose writer is `talus ingest`).

pub mod atomic;
pub mod blocks;
pub mod crs;
pub mod error;
pub mod geo;
pub mod geotiff;
pub mod las_fields;
pub mod lock;
pub mod parquet_io;
pub mod points;
pub mod progress;
pub mod provenance;
pub mod registration;
pub mod reproject;
pub mod survey_files;
pub mod tin;
pub mod vtk;
pub mod zones;

pub use atomic::AtomicFile;
pub use crs::Crs;
pub use error::{IoError, Result, create_dir};
pub use lock::OutputLock;
pub use parquet_io::{
    PARALLEL_MIN_ROWS, ParquetSink, ROW_GROUP_ROWS, Table, read_batches, read_metadata,
    read_schema, read_table, validate_schema, write_parquet, writer_properties,
};
pub use progress::{NoProgress, Progress};
pub use provenance::{
    InputFile, KEY_CONFIG, KEY_CRS_PROJJSON, KEY_CRS_WKT, KEY_INPUTS, KEY_STAGE, KEY_VERSION,
    Provenance, sha256_bytes, sha256_file,
};

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::RecordBatch;
    use arrow::array::{Float64Array, UInt8Array};
    use arrow::datatypes::Field;
    use arrow::datatypes::{DataType, Schema, SchemaRef};
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::fs::File;
    use std::sync::Arc;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("x", DataType::Float64, false),
            Field::new("c", DataType::UInt8, false),
        ]))
    }

    fn batch() -> RecordBatch {
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Float64Array::from(vec![1.5, -2.0, 3.25])),
                Arc::new(UInt8Array::from(vec![2, 5, 2])),
            ],
        )
        .unwrap()
    }

    #[test]
    fn round_trip_with_provenance() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.txt");
        std::fs::write(&input, b"abc").unwrap();
        let path = dir.path().join("out.parquet");
        let prov = Provenance::new("test", "0.1.0", &serde_json::json!({"k": 1}))
            .with_inputs(&[&input])
            .unwrap()
            .with_crs(Some(Crs::from_epsg(32620)))
            .with_extra("las:version", "1.4");
        write_parquet(&path, schema(), &[batch()], &prov).unwrap();
        let t = read_table(&path, &schema()).unwrap();
        assert_eq!(t.f64s("x").unwrap(), vec![1.5, -2.0, 3.25]);
        assert_eq!(t.u8s("c").unwrap(), vec![2, 5, 2]);
        let back = t.provenance();
        assert_eq!(back.stage, "test");
        assert_eq!(back.config["k"], 1);
        // SHA-256("abc")
        assert_eq!(
            back.inputs[0].sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(back.crs.unwrap().epsg, Some(32620));
        assert_eq!(back.extra["las:version"], "1.4");
        // Only the output remains in the directory.
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn same_content_gives_identical_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let prov = Provenance::new("test", "0.1.0", &1);
        let (a, b) = (dir.path().join("a.parquet"), dir.path().join("b.parquet"));
        write_parquet(&a, schema(), &[batch()], &prov).unwrap();
        write_parquet(&b, schema(), &[batch()], &prov).unwrap();
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    }

    /// Columns of several types over more than one row group, in batches of uneven size
    /// (small ones encoded on the calling thread, large ones on the pool).
    fn big_batches() -> (SchemaRef, Vec<RecordBatch>) {
        use arrow::array::{Float32Array, UInt16Array};
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Float64, false),
            Field::new("c", DataType::UInt8, false),
            Field::new("i", DataType::UInt16, false),
            Field::new("a", DataType::Float32, false),
        ]));
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut batches = Vec::new();
        let mut k = 0usize;
        for n in [1usize, 700_000, 3, 40_000, 600_001, 12_345, 1 << 20] {
            let x: Vec<f64> = (k..k + n).map(|i| i as f64 * 0.25 + (rnd() % 7) as f64).collect();
            let c: Vec<u8> = (0..n).map(|_| (rnd() % 3) as u8).collect();
            let i: Vec<u16> = (0..n).map(|_| (rnd() % 500) as u16).collect();
            let a: Vec<f32> = (0..n).map(|j| (j % 2000) as f32 * 0.015).collect();
            k += n;
            batches.push(
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Float64Array::from(x)),
                        Arc::new(UInt8Array::from(c)),
                        Arc::new(UInt16Array::from(i)),
                        Arc::new(Float32Array::from(a)),
                    ],
                )
                .unwrap(),
            );
        }
        (schema, batches)
    }

    #[test]
    fn sink_writes_the_bytes_of_the_arrow_writer() {
        // Reference: parquet's own single-threaded ArrowWriter with the same properties.
        let (schema, batches) = big_batches();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert!(rows > 2 * ROW_GROUP_ROWS);
        let prov = Provenance::new("test", "0.1.0", &serde_json::json!({"k": 2}));
        let mut reference = Vec::new();
        let mut w = ArrowWriter::try_new(
            &mut reference,
            schema.clone(),
            Some(writer_properties(&schema, &prov)),
        )
        .unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.close().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.parquet");
        let mut sink = ParquetSink::create(&path, schema.clone(), &prov).unwrap();
        for b in &batches {
            sink.write(b).unwrap();
        }
        assert_eq!(sink.rows(), rows);
        sink.finish().unwrap();
        let ours = std::fs::read(&path).unwrap();
        assert_eq!(ours.len(), reference.len());
        assert!(ours == reference, "the sink's bytes differ from ArrowWriter's");
        let meta = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let groups: Vec<i64> = meta.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(groups, [1 << 20, 1 << 20, rows as i64 - (2 << 20)]);
    }

    #[test]
    fn batch_of_another_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let other = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
        let mut s = ParquetSink::create(&path, other, &Provenance::default()).unwrap();
        let e = s.write(&batch()).unwrap_err().to_string();
        assert!(e.contains("t.parquet") && e.contains("schema"), "{e}");
    }

    #[test]
    fn missing_and_mistyped_columns_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        write_parquet(&path, schema(), &[batch()], &Provenance::default()).unwrap();
        let want = Schema::new(vec![Field::new("y", DataType::Float64, false)]);
        let e = read_table(&path, &want).unwrap_err().to_string();
        assert!(e.contains("missing column `y`"), "{e}");
        let want = Schema::new(vec![Field::new("c", DataType::Float64, false)]);
        let e = read_table(&path, &want).unwrap_err().to_string();
        assert!(e.contains("column `c` has type UInt8"), "{e}");
        assert!(e.contains("t.parquet"), "{e}");
    }

    #[test]
    fn abandoned_sink_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        {
            let mut s = ParquetSink::create(&path, schema(), &Provenance::default()).unwrap();
            s.write(&batch()).unwrap();
            // dropped without finish
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn not_parquet_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.parquet");
        std::fs::write(&path, b"hello, world").unwrap();
        let e = read_table(&path, &schema()).unwrap_err().to_string();
        assert!(e.contains("bad.parquet") && e.contains("not a Parquet table"), "{e}");
        // Parquet magic but a broken file: the Parquet reader's own diagnosis.
        std::fs::write(&path, b"PAR1 and then nothing useful").unwrap();
        let e = read_table(&path, &schema()).unwrap_err().to_string();
        assert!(e.contains("bad.parquet") && e.contains("not a readable Parquet"), "{e}");
        // A LAS file: say what it is and how to convert it.
        std::fs::write(&path, b"LASF\0\0\0\0").unwrap();
        let e = read_table(&path, &schema()).unwrap_err().to_string();
        assert!(e.contains("LAS/LAZ") && e.contains("talus ingest"), "{e}");
    }

    #[test]
    fn epsg_is_found_in_wkt() {
        let wkt = r#"PROJCS["WGS 84 / UTM zone 20N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],AUTHORITY["EPSG","4326"]],PROJECTION["Transverse_Mercator"],AUTHORITY["EPSG","32620"]]"#;
        let crs = Crs::from_wkt(wkt);
        assert_eq!(crs.epsg, Some(32620));
        assert_eq!(crs.label(), "EPSG:32620");
        assert!(crs.same_as(&Crs::from_epsg(32620)));
        assert!(!crs.same_as(&Crs::from_epsg(2154)));
    }
}
