//! Parquet writing (the streaming [`ParquetSink`], [`write_parquet`]) and reading
//! validated against an expected schema ([`read_table`], [`read_batches`]).

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
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{IoError, Result, os};
use crate::{AtomicFile, Provenance};

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
    let mut file = File::open(path).map_err(os(path))?;
    refuse_non_parquet(path, &mut file)?;
    ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|source| IoError::Parquet { path: path.to_path_buf(), source })
}

/// A file that is not Parquet at all gets a message that says what it is instead of the
/// Parquet reader's "Corrupt footer": a LAS/LAZ point cloud (convert it with `talus
/// ingest`), or a file that does not start with Parquet's magic bytes.
fn refuse_non_parquet(path: &Path, file: &mut File) -> Result<()> {
    use std::io::{Read, Seek};
    let mut magic = [0u8; 4];
    let n = file.read(&mut magic).map_err(os(path))?;
    file.rewind().map_err(os(path))?;
    let invalid = |message: String| Err(IoError::Invalid { path: path.to_path_buf(), message });
    match &magic[..n] {
        b"PAR1" => Ok(()),
        b"LASF" => invalid(
            "is a LAS/LAZ point cloud, not a Parquet table; convert it first with `talus ingest FILE --out FILE.parquet`".into(),
        ),
        [] => invalid("is empty, not a Parquet table".into()),
        m => invalid(format!(
            "is not a Parquet table (it starts with {m:02x?}, not the Parquet magic bytes PAR1)"
        )),
    }
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
