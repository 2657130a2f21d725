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

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, Schema,
    SchemaRef, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_writer::{
    ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory, compute_leaves,
};
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod geo;

/// Metadata key: the stage that wrote the file (`ingest`, `diff`, ...).
pub const KEY_STAGE: &str = "talus:stage";
/// Metadata key: the version of the crate that wrote the file.
pub const KEY_VERSION: &str = "talus:version";
/// Metadata key: the effective configuration of the stage, as JSON.
pub const KEY_CONFIG: &str = "talus:config";
/// Metadata key: the input files, as a JSON array of `{name, sha256}`.
pub const KEY_INPUTS: &str = "talus:inputs";
/// Metadata key: the CRS as OGC WKT (when known).
pub const KEY_CRS_WKT: &str = "talus:crs_wkt";
/// Metadata key: the CRS as PROJJSON (when known).
pub const KEY_CRS_PROJJSON: &str = "talus:crs_projjson";

/// Errors of Talus file input/output. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{path}: {source}")]
    Os {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a readable Parquet file: {source}")]
    Parquet {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("{path}: Arrow error: {source}")]
    Arrow {
        path: PathBuf,
        #[source]
        source: arrow::error::ArrowError,
    },
    #[error("{path}: missing column `{column}` (expected {expected})")]
    MissingColumn { path: PathBuf, column: String, expected: String },
    #[error("{path}: column `{column}` has type {found}, expected {expected}")]
    WrongType { path: PathBuf, column: String, expected: String, found: String },
    #[error("{path}: column `{column}` holds null values where none are allowed")]
    UnexpectedNull { path: PathBuf, column: String },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// Result alias for this crate.
pub type Result<T, E = IoError> = std::result::Result<T, E>;

fn os(path: &Path) -> impl FnOnce(std::io::Error) -> IoError + '_ {
    move |source| IoError::Os { path: path.to_path_buf(), source }
}

/// A coordinate reference system as it travels with the data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crs {
    /// OGC WKT (1 or 2), verbatim from the source (e.g. a LAS WKT VLR).
    pub wkt: Option<String>,
    /// EPSG code of the horizontal CRS, when known.
    pub epsg: Option<u32>,
}

impl Crs {
    /// A CRS known by its EPSG code only.
    pub fn from_epsg(code: u32) -> Self {
        Crs { wkt: None, epsg: Some(code) }
    }

    /// A CRS from WKT; the EPSG code is taken from the last top-level `AUTHORITY["EPSG",..]`
    /// or `ID["EPSG",..]` when present.
    pub fn from_wkt(wkt: &str) -> Self {
        let wkt = wkt.trim_end_matches('\0').trim().to_string();
        Crs { epsg: epsg_from_wkt(&wkt), wkt: Some(wkt) }
    }

    /// True when neither WKT nor EPSG code is known.
    pub fn is_unknown(&self) -> bool {
        self.wkt.is_none() && self.epsg.is_none()
    }

    /// Whether two CRS are the same as far as can be told: same EPSG code when both have
    /// one, otherwise identical WKT; an unknown CRS matches only an unknown CRS.
    pub fn same_as(&self, other: &Crs) -> bool {
        match (self.epsg, other.epsg) {
            (Some(a), Some(b)) => a == b,
            _ => self.wkt == other.wkt && self.epsg == other.epsg,
        }
    }

    /// Whether two recorded CRS, either possibly absent, are the same: both absent, or
    /// both present and [`Crs::same_as`].
    pub fn same_recorded(a: &Option<Crs>, b: &Option<Crs>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => a.same_as(b),
            (None, None) => true,
            _ => false,
        }
    }

    /// [`Crs::label`] of a recorded CRS, `an unknown CRS` when absent.
    pub fn label_recorded(c: &Option<Crs>) -> String {
        c.as_ref().map_or_else(|| "an unknown CRS".to_string(), Crs::label)
    }

    /// A short human description (`EPSG:32620`, the WKT's name, or `unknown`).
    pub fn label(&self) -> String {
        if let Some(code) = self.epsg {
            return format!("EPSG:{code}");
        }
        match &self.wkt {
            Some(w) => w.split('"').nth(1).unwrap_or("custom WKT").to_string(),
            None => "unknown".to_string(),
        }
    }

    /// PROJJSON for GeoParquet's `crs` member. Without PROJ at hand Talus writes the
    /// identifying part of PROJJSON (`type`, `name`, `id`), which GDAL and GeoPandas
    /// resolve through the EPSG registry; `None` when no EPSG code is known.
    pub fn projjson(&self) -> Option<serde_json::Value> {
        let code = self.epsg?;
        let name = self
            .wkt
            .as_deref()
            .and_then(|w| w.split('"').nth(1))
            .map(str::to_string)
            .unwrap_or_else(|| format!("EPSG:{code}"));
        let kind = match &self.wkt {
            Some(w) if w.starts_with("GEOGCS") || w.starts_with("GEOGCRS") => "GeographicCRS",
            _ => "ProjectedCRS",
        };
        Some(serde_json::json!({
            "$schema": "https://proj.org/schemas/v0.7/projjson.schema.json",
            "type": kind,
            "name": name,
            "id": {"authority": "EPSG", "code": code}
        }))
    }
}

fn epsg_from_wkt(wkt: &str) -> Option<u32> {
    // The CRS's own authority is the last AUTHORITY/ID at nesting depth 1.
    let mut depth = 0i32;
    let mut found = None;
    for (i, ch) in wkt.char_indices() {
        match ch {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            _ if depth == 1 => {
                for key in ["AUTHORITY[\"EPSG\",", "ID[\"EPSG\","] {
                    if let Some(rest) = wkt[i..].strip_prefix(key) {
                        let digits: String = rest
                            .chars()
                            .skip_while(|c| *c == '"' || c.is_whitespace())
                            .take_while(|c| c.is_ascii_digit())
                            .collect();
                        if let Ok(code) = digits.parse() {
                            found = Some(code);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// One input of a stage, as recorded in provenance: file name and content hash (the
/// directory is left out so that the same inputs give byte-identical outputs wherever
/// they live).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    pub name: String,
    pub sha256: String,
}

impl InputFile {
    /// Hash a file's content.
    pub fn hash(path: &Path) -> Result<Self> {
        Ok(InputFile {
            name: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            sha256: sha256_file(path)?,
        })
    }
}

/// Where a file came from: written into every Parquet file's key-value metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Stage name (`ingest`, `diff`, `terrain`, `seed`, `run`, `compare`, `synth`).
    pub stage: String,
    /// Version of the crate that wrote the file.
    pub version: String,
    /// The stage's effective configuration.
    pub config: serde_json::Value,
    /// Input files with their SHA-256.
    pub inputs: Vec<InputFile>,
    /// Coordinate reference system of the coordinates in the file.
    pub crs: Option<Crs>,
    /// Further stage-specific entries (e.g. the LAS header), written verbatim.
    pub extra: BTreeMap<String, String>,
}

impl Provenance {
    /// Provenance for `stage` written by a crate of `version` with `config`.
    pub fn new(stage: &str, version: &str, config: &impl Serialize) -> Self {
        Provenance {
            stage: stage.to_string(),
            version: version.to_string(),
            config: serde_json::to_value(config).unwrap_or(serde_json::Value::Null),
            ..Default::default()
        }
    }

    /// Add input files, hashing each.
    pub fn with_inputs<P: AsRef<Path>>(mut self, paths: &[P]) -> Result<Self> {
        for p in paths {
            self.inputs.push(InputFile::hash(p.as_ref())?);
        }
        Ok(self)
    }

    /// Set the CRS.
    pub fn with_crs(mut self, crs: Option<Crs>) -> Self {
        self.crs = crs;
        self
    }

    /// Add a verbatim metadata entry.
    pub fn with_extra(mut self, key: &str, value: impl Into<String>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// The key-value pairs to write, in a fixed order.
    pub fn key_values(&self) -> Vec<KeyValue> {
        let mut kv = vec![
            KeyValue::new(KEY_STAGE.to_string(), self.stage.clone()),
            KeyValue::new(KEY_VERSION.to_string(), self.version.clone()),
            KeyValue::new(KEY_CONFIG.to_string(), self.config.to_string()),
            KeyValue::new(
                KEY_INPUTS.to_string(),
                serde_json::to_string(&self.inputs).unwrap_or_default(),
            ),
        ];
        if let Some(crs) = &self.crs {
            if let Some(w) = &crs.wkt {
                kv.push(KeyValue::new(KEY_CRS_WKT.to_string(), w.clone()));
            }
            if let Some(p) = crs.projjson() {
                kv.push(KeyValue::new(KEY_CRS_PROJJSON.to_string(), p.to_string()));
            }
        }
        for (k, v) in &self.extra {
            kv.push(KeyValue::new(k.clone(), v.clone()));
        }
        kv
    }

    /// Read provenance back from a file's key-value metadata.
    pub fn from_metadata(meta: &BTreeMap<String, String>) -> Self {
        let crs_wkt = meta.get(KEY_CRS_WKT).cloned();
        let crs_epsg = meta
            .get(KEY_CRS_PROJJSON)
            .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
            .and_then(|v| v["id"]["code"].as_u64())
            .map(|c| c as u32);
        let crs = (crs_wkt.is_some() || crs_epsg.is_some())
            .then_some(Crs { wkt: crs_wkt, epsg: crs_epsg });
        let known = [KEY_STAGE, KEY_VERSION, KEY_CONFIG, KEY_INPUTS, KEY_CRS_WKT, KEY_CRS_PROJJSON];
        Provenance {
            stage: meta.get(KEY_STAGE).cloned().unwrap_or_default(),
            version: meta.get(KEY_VERSION).cloned().unwrap_or_default(),
            config: meta
                .get(KEY_CONFIG)
                .and_then(|c| serde_json::from_str(c).ok())
                .unwrap_or(serde_json::Value::Null),
            inputs: meta
                .get(KEY_INPUTS)
                .and_then(|c| serde_json::from_str(c).ok())
                .unwrap_or_default(),
            crs,
            extra: meta
                .iter()
                .filter(|(k, _)| !known.contains(&k.as_str()) && k.as_str() != "ARROW:schema")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

/// SHA-256 of a file's content, lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = BufReader::new(File::open(path).map_err(os(path))?);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(os(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// SHA-256 of bytes, lowercase hex (equal to [`sha256_file`] of a file holding them).
pub fn sha256_bytes(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// A file written beside its destination and renamed into place on [`AtomicFile::commit`].
/// Dropped without commit, the temporary file is removed and the destination is untouched.
pub struct AtomicFile {
    path: PathBuf,
    tmp: BufWriter<tempfile::NamedTempFile>,
}

impl AtomicFile {
    /// Start writing `path` (its directory is created if needed).
    pub fn create(path: &Path) -> Result<Self> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(os(&dir))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(os(path))?;
        Ok(AtomicFile { path: path.to_path_buf(), tmp: BufWriter::with_capacity(1 << 20, tmp) })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush, sync and rename into place.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let tmp = self
            .tmp
            .into_inner()
            .map_err(|e| IoError::Os { path: path.clone(), source: e.into_error() })?;
        // A temporary file is created 0600; an output is an ordinary file (0644 less umask).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(os(&path))?;
        }
        tmp.as_file().sync_all().map_err(os(&path))?;
        tmp.persist(&path).map_err(|e| IoError::Os { path: path.clone(), source: e.error })?;
        Ok(())
    }

    /// Write a whole byte buffer to `path` atomically.
    pub fn write_all(path: &Path, bytes: &[u8]) -> Result<()> {
        let mut f = AtomicFile::create(path)?;
        f.write_all(bytes).map_err(os(path))?;
        f.commit()
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.flush()
    }
}

/// Streaming Parquet writer with provenance and atomic placement.
///
/// Row groups hold up to [`ROW_GROUP_ROWS`] rows, cut exactly where [`ArrowWriter`] cuts
/// them. Within a row group each column has its own encoder; a batch of at least
/// [`PARALLEL_MIN_ROWS`] rows is encoded column by column on the rayon pool. Each column
/// sees the same sequence of values whatever the thread timing, and the finished column
/// chunks are appended in schema order, so the bytes are those [`ArrowWriter`] writes.
pub struct ParquetSink {
    path: PathBuf,
    writer: SerializedFileWriter<AtomicFile>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Encoders of the row group being filled (one per leaf column), and its row count.
    group: Option<(Vec<ArrowColumnWriter>, usize)>,
    rows: usize,
}

/// The writer properties of every Talus Parquet file: Snappy, row groups of
/// [`ROW_GROUP_ROWS`], no dictionary for floating-point columns, `provenance` in the
/// key-value metadata.
pub fn writer_properties(schema: &Schema, provenance: &Provenance) -> WriterProperties {
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_key_value_metadata(Some(provenance.key_values()));
    // Measured coordinates and times are almost all distinct: a dictionary page would be
    // built and then abandoned for every float column.
    for field in schema.fields() {
        if matches!(field.data_type(), DataType::Float64 | DataType::Float32) {
            props = props.set_column_dictionary_enabled(
                parquet::schema::types::ColumnPath::from(field.name().as_str()),
                false,
            );
        }
    }
    props.build()
}

/// Rows per row group of a [`ParquetSink`].
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// Batches of fewer rows are encoded on the calling thread (the pool's overhead would
/// exceed the work).
pub const PARALLEL_MIN_ROWS: usize = 1 << 14;

impl ParquetSink {
    /// Open a sink for `schema` at `path` (written on [`ParquetSink::finish`]).
    /// `extra` holds further key-value metadata (e.g. GeoParquet's `geo`).
    pub fn create(path: &Path, schema: SchemaRef, provenance: &Provenance) -> Result<Self> {
        let file = AtomicFile::create(path)?;
        let props = writer_properties(&schema, provenance);
        let parquet = |source| IoError::Parquet { path: path.to_path_buf(), source };
        // The Arrow writer converts the schema and embeds it (`ARROW:schema`); its file
        // writer and column-writer factory then do the work.
        let (writer, factory) = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(parquet)?;
        Ok(ParquetSink { path: path.to_path_buf(), writer, factory, schema, group: None, rows: 0 })
    }

    /// Append one record batch (its column types must be the sink's).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let schema = self.schema.clone();
        let fields = schema.fields();
        if batch.num_columns() != fields.len()
            || fields
                .iter()
                .zip(batch.columns())
                .any(|(f, c)| !f.data_type().equals_datatype(c.data_type()))
        {
            return Err(IoError::Invalid {
                path: self.path.clone(),
                message: format!(
                    "record batch of schema {} written to a file of schema {}",
                    batch.schema(),
                    self.schema
                ),
            });
        }
        let mut rest = batch.clone();
        while rest.num_rows() > 0 {
            let group = match &mut self.group {
                Some(g) => g,
                slot => {
                    let index = self.writer.flushed_row_groups().len();
                    let writers = self
                        .factory
                        .create_column_writers(index)
                        .map_err(|source| IoError::Parquet { path: self.path.clone(), source })?;
                    slot.insert((writers, 0))
                }
            };
            let take = rest.num_rows().min(ROW_GROUP_ROWS - group.1);
            let piece = rest.slice(0, take);
            rest = rest.slice(take, rest.num_rows() - take);
            let mut leaves = Vec::with_capacity(group.0.len());
            for (field, column) in fields.iter().zip(piece.columns()) {
                leaves.extend(
                    compute_leaves(field, column)
                        .map_err(|source| IoError::Parquet { path: self.path.clone(), source })?,
                );
            }
            let encode = |(w, leaf): (&mut ArrowColumnWriter, &ArrowLeafColumn)| w.write(leaf);
            if take >= PARALLEL_MIN_ROWS {
                group.0.par_iter_mut().zip(&leaves).try_for_each(encode)
            } else {
                group.0.iter_mut().zip(&leaves).try_for_each(encode)
            }
            .map_err(|source| IoError::Parquet { path: self.path.clone(), source })?;
            group.1 += take;
            self.rows += take;
            if group.1 >= ROW_GROUP_ROWS {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Close the row group being filled (its columns in parallel) and append it to the file.
    fn flush(&mut self) -> Result<()> {
        let Some((writers, rows)) = self.group.take() else {
            return Ok(());
        };
        let chunks = if rows >= PARALLEL_MIN_ROWS {
            writers.into_par_iter().map(ArrowColumnWriter::close).collect::<Vec<_>>()
        } else {
            writers.into_iter().map(ArrowColumnWriter::close).collect()
        };
        let path = &self.path;
        let parquet = |source| IoError::Parquet { path: path.clone(), source };
        let mut group = self.writer.next_row_group().map_err(parquet)?;
        for chunk in chunks {
            chunk.and_then(|c| c.append_to_row_group(&mut group)).map_err(parquet)?;
        }
        group.close().map_err(parquet)?;
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Close the file and move it into place.
    pub fn finish(mut self) -> Result<()> {
        self.flush()?;
        let path = self.path;
        let file = self
            .writer
            .into_inner()
            .map_err(|source| IoError::Parquet { path: path.clone(), source })?;
        file.commit()
    }
}

/// Write whole batches to `path` atomically.
pub fn write_parquet(
    path: &Path,
    schema: SchemaRef,
    batches: &[RecordBatch],
    provenance: &Provenance,
) -> Result<()> {
    let mut sink = ParquetSink::create(path, schema, provenance)?;
    for b in batches {
        sink.write(b)?;
    }
    sink.finish()
}

/// A Parquet file read whole, validated against an expected schema.
#[derive(Debug, Clone)]
pub struct Table {
    pub path: PathBuf,
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    /// The file's key-value metadata.
    pub metadata: BTreeMap<String, String>,
}

macro_rules! column_getter {
    ($name:ident, $t:ty, $arrow:ty) => {
        /// The named column, concatenated over batches (nulls are an error).
        pub fn $name(&self, column: &str) -> Result<Vec<$t>> {
            let mut out = Vec::with_capacity(self.num_rows());
            for b in &self.batches {
                let a = self.column_in(b, column)?;
                let a = a.as_primitive_opt::<$arrow>().ok_or_else(|| IoError::WrongType {
                    path: self.path.clone(),
                    column: column.to_string(),
                    expected: stringify!($t).to_string(),
                    found: a.data_type().to_string(),
                })?;
                if a.null_count() > 0 {
                    return Err(IoError::UnexpectedNull {
                        path: self.path.clone(),
                        column: column.to_string(),
                    });
                }
                out.extend_from_slice(a.values());
            }
            Ok(out)
        }
    };
}

impl Table {
    /// Total number of rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// Whether the file has a column of that name.
    pub fn has_column(&self, column: &str) -> bool {
        self.schema.index_of(column).is_ok()
    }

    fn column_in<'a>(&self, b: &'a RecordBatch, column: &str) -> Result<&'a Arc<dyn Array>> {
        b.column_by_name(column).ok_or_else(|| IoError::MissingColumn {
            path: self.path.clone(),
            column: column.to_string(),
            expected: "a column".into(),
        })
    }

    column_getter!(f64s, f64, Float64Type);
    column_getter!(f32s, f32, Float32Type);
    column_getter!(u8s, u8, UInt8Type);
    column_getter!(u16s, u16, UInt16Type);
    column_getter!(u32s, u32, UInt32Type);
    column_getter!(u64s, u64, UInt64Type);
    column_getter!(i8s, i8, Int8Type);
    column_getter!(i16s, i16, Int16Type);
    column_getter!(i32s, i32, Int32Type);
    column_getter!(i64s, i64, Int64Type);

    /// A boolean column (nulls are an error).
    pub fn bools(&self, column: &str) -> Result<Vec<bool>> {
        let mut out = Vec::with_capacity(self.num_rows());
        for b in &self.batches {
            let a = self.column_in(b, column)?;
            let a = a.as_boolean_opt().ok_or_else(|| IoError::WrongType {
                path: self.path.clone(),
                column: column.to_string(),
                expected: "bool".into(),
                found: a.data_type().to_string(),
            })?;
            out.extend(a.iter().map(|v| v.unwrap_or(false)));
        }
        Ok(out)
    }

    /// A UTF-8 string column (nulls become empty strings).
    pub fn strings(&self, column: &str) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(self.num_rows());
        for b in &self.batches {
            let a = self.column_in(b, column)?;
            let a = a.as_string_opt::<i32>().ok_or_else(|| IoError::WrongType {
                path: self.path.clone(),
                column: column.to_string(),
                expected: "utf8".into(),
                found: a.data_type().to_string(),
            })?;
            out.extend(a.iter().map(|v| v.unwrap_or_default().to_string()));
        }
        Ok(out)
    }

    /// A binary column (e.g. WKB geometry; nulls become empty).
    pub fn binaries(&self, column: &str) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity(self.num_rows());
        for b in &self.batches {
            let a = self.column_in(b, column)?;
            let a = a.as_binary_opt::<i32>().ok_or_else(|| IoError::WrongType {
                path: self.path.clone(),
                column: column.to_string(),
                expected: "binary".into(),
                found: a.data_type().to_string(),
            })?;
            out.extend(a.iter().map(|v| v.unwrap_or_default().to_vec()));
        }
        Ok(out)
    }

    /// The file's provenance.
    pub fn provenance(&self) -> Provenance {
        Provenance::from_metadata(&self.metadata)
    }
}

/// Check that `found` has every field of `expected` with the same type; name the first
/// column that is missing or mistyped. Extra columns are allowed.
pub fn validate_schema(path: &Path, expected: &Schema, found: &Schema) -> Result<()> {
    for f in expected.fields() {
        match found.field_with_name(f.name()) {
            Err(_) => {
                return Err(IoError::MissingColumn {
                    path: path.to_path_buf(),
                    column: f.name().clone(),
                    expected: f.data_type().to_string(),
                });
            }
            Ok(g) if !same_type(g.data_type(), f.data_type()) => {
                return Err(IoError::WrongType {
                    path: path.to_path_buf(),
                    column: f.name().clone(),
                    expected: f.data_type().to_string(),
                    found: g.data_type().to_string(),
                });
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

fn same_type(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        // Field metadata and nullability inside nested types do not matter here.
        (DataType::FixedSizeList(fa, na), DataType::FixedSizeList(fb, nb)) => {
            na == nb && same_type(fa.data_type(), fb.data_type())
        }
        (DataType::List(fa), DataType::List(fb)) => same_type(fa.data_type(), fb.data_type()),
        (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View, DataType::Utf8) => true,
        (DataType::Binary | DataType::LargeBinary | DataType::BinaryView, DataType::Binary) => true,
        _ => a == b,
    }
}

fn open_builder(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let file = File::open(path).map_err(os(path))?;
    ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|source| IoError::Parquet { path: path.to_path_buf(), source })
}

fn kv_of(builder: &ParquetRecordBatchReaderBuilder<File>) -> BTreeMap<String, String> {
    builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter().filter_map(|e| e.value.as_ref().map(|v| (e.key.clone(), v.clone()))).collect()
        })
        .unwrap_or_default()
}

/// Read a Parquet file's key-value metadata only.
pub fn read_metadata(path: &Path) -> Result<BTreeMap<String, String>> {
    Ok(kv_of(&open_builder(path)?))
}

/// Read a Parquet file's schema and key-value metadata, checked against `expected`.
pub fn read_schema(
    path: &Path,
    expected: &Schema,
) -> Result<(SchemaRef, BTreeMap<String, String>)> {
    let builder = open_builder(path)?;
    let schema = builder.schema().clone();
    validate_schema(path, expected, &schema)?;
    Ok((schema, kv_of(&builder)))
}

/// Read a whole Parquet file, checked against `expected`.
pub fn read_table(path: &Path, expected: &Schema) -> Result<Table> {
    let builder = open_builder(path)?;
    let schema = builder.schema().clone();
    validate_schema(path, expected, &schema)?;
    let metadata = kv_of(&builder);
    let reader = builder
        .with_batch_size(1 << 16)
        .build()
        .map_err(|source| IoError::Parquet { path: path.to_path_buf(), source })?;
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|source| IoError::Arrow { path: path.to_path_buf(), source })?;
    Ok(Table { path: path.to_path_buf(), schema, batches, metadata })
}

/// Stream a Parquet file batch by batch (bounded memory), checked against `expected`.
pub fn read_batches(
    path: &Path,
    expected: &Schema,
    batch_size: usize,
) -> Result<(SchemaRef, BTreeMap<String, String>, impl Iterator<Item = Result<RecordBatch>>)> {
    let builder = open_builder(path)?;
    let schema = builder.schema().clone();
    validate_schema(path, expected, &schema)?;
    let metadata = kv_of(&builder);
    let reader = builder
        .with_batch_size(batch_size.max(1))
        .build()
        .map_err(|source| IoError::Parquet { path: path.to_path_buf(), source })?;
    let p = path.to_path_buf();
    Ok((
        schema,
        metadata,
        reader.map(move |r| r.map_err(|source| IoError::Arrow { path: p.clone(), source })),
    ))
}

/// Progress reporting from a stage's library to whatever front end runs it (the CLI
/// shows indicatif bars on a terminal; tests and pipelines pass [`NoProgress`]).
pub trait Progress: Sync {
    /// Start a phase of `len` units (0 when unknown).
    fn start(&self, _phase: &str, _len: u64) {}
    /// `n` more units of the current phase are done.
    fn inc(&self, _n: u64) {}
    /// The current phase is done.
    fn finish(&self) {}
}

/// Progress that reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, UInt8Array};
    use arrow::datatypes::Field;

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
        assert!(e.contains("bad.parquet") && e.contains("not a readable Parquet"), "{e}");
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
