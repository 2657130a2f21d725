//! `talus ingest`: LAS 1.0–1.4 / LAZ surveys (point formats 0–10) to one points Parquet
//! table.
//!
//! For every point record the stage writes the world coordinates
//!
//! ```text
//! x = X · s_x + o_x,   y = Y · s_y + o_y,   z = Z · s_z + o_z
//! ```
//!
//! (`X, Y, Z` the stored integers, `s` and `o` the header's scale and offset), the
//! attributes every format has (intensity, return number and count, classification,
//! scan angle in degrees, point source id), those the format adds (GPS time, RGB, NIR)
//! and the extra-bytes attributes described by the Extra Bytes VLR
//! ([`talus_schema::points::full_schema`]).
//!
//! The algorithm:
//! 1. **Check every input first** ([`input::Input::open`]): the `LASF` signature, the
//!    version (1.0–1.4), the point format (0–10), the header's point count against the
//!    point data (file size for LAS, chunk table for LAZ), the CRS (WKT VLR, else the EPSG
//!    code of the GeoTIFF keys). Inputs of one survey must share a CRS.
//! 2. **Plan the output**: the optional columns all inputs have, and their extra bytes
//!    if all inputs describe them alike; the LAS headers go into the file's key-value
//!    metadata (`las:header`, a JSON array with one object per input), the CRS into the
//!    provenance.
//! 3. **Stream**: a reader thread decodes `chunk_points` records at a time (LAZ with the
//!    `las` crate's parallel decompressor, which spreads the chunks of the LAZ file over
//!    the rayon pool) while the calling thread converts the previous chunk to Arrow,
//!    filters it ([`filter`]) and appends it to the Parquet file, whose sink encodes the
//!    columns in parallel on the same pool (`talus_io::ParquetSink`). Memory holds a few
//!    chunks whatever the file size (grid thinning adds one entry per occupied cell).
//!    With a ground filter (`ground`, [`ground`]: SMRF) a first pass builds the grid of
//!    per-cell minimum elevations (memory ∝ area / cell², not the point count) and the
//!    ground surface; the later passes replace each point's class by the computed one
//!    (2 ground, 1 not) before the class filter, the original going to the
//!    `classification_original` column.
//! 4. The output is renamed into place only when complete (`talus_io::ParquetSink`), so
//!    an error leaves no file behind; inputs are only ever opened for reading.

pub mod config;
pub mod convert;
pub mod error;
pub mod extra;
pub mod filter;
pub mod ground;
pub mod input;

pub use config::{
    BBox, Config, ExtraBytesMode, GridKeep, Ground, GroundApplyTo, GroundReturns, Smrf, Thin,
};
pub use error::Error;
pub use ground::GroundSummary;
pub use input::Input;

use arrow::array::RecordBatch;
use convert::{Coords, Plan};
use filter::{GridPass, Prefilter, Selector};
use las::{PointData, PointDataBuilder, Reader};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use talus_io::{Crs, ParquetSink, Progress, Provenance};
use talus_schema::points::{OptionalColumns, full_schema, with_original_classification};

/// Metadata key of the LAS headers (JSON array, one object per input, in input order).
pub const LAS_HEADER_KEY: &str = "las:header";

/// One input as reported in the summary.
#[derive(Debug, Clone, Serialize)]
pub struct InputSummary {
    pub file: String,
    pub version: String,
    pub point_format: u8,
    pub compressed: bool,
    pub points: u64,
    pub crs: String,
    /// Records after the declared points, not read (LAS files whose data holds more
    /// records than their header declares).
    pub ignored_records: u64,
    /// The reprojection applied to this input (`EPSG:a -> EPSG:b`, with a note when the
    /// datums differ and no datum shift was applied); none when it is in the output CRS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reprojected: Option<String>,
}

/// What the stage did.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub inputs: Vec<InputSummary>,
    /// Points read from all inputs.
    pub points_read: u64,
    /// Points written.
    pub points_written: u64,
    /// The output's CRS (`EPSG:code`, a WKT name, or `unknown`).
    pub crs: String,
    /// Bounds of the written points `[xmin, ymin, zmin, xmax, ymax, zmax]` (CRS units).
    pub bounds: [f64; 6],
    /// Written points per ASPRS class.
    pub class_counts: BTreeMap<u8, u64>,
    /// Columns of the output.
    pub columns: Vec<String>,
    /// Columns some inputs have but the output leaves out (not in every input, or
    /// extra bytes described differently).
    pub dropped_columns: Vec<String>,
    /// What the ground filter did (none when `ground.method = "none"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ground: Option<GroundSummary>,
    /// Points dropped as repeats of an earlier input's (overlapping tiles).
    pub duplicates_dropped: u64,
}

/// The checked inputs of one survey and the output they make.
#[derive(Debug, Clone)]
pub struct Survey {
    pub inputs: Vec<Input>,
    pub crs: Option<Crs>,
    pub plan: Plan,
    pub dropped_columns: Vec<String>,
}

impl Survey {
    /// Open and check every input, then plan the output.
    pub fn open(config: &Config, paths: &[PathBuf]) -> Result<Survey, Error> {
        if paths.is_empty() {
            return Err(Error::NoInput);
        }
        let mut inputs = paths.iter().map(|p| Input::open(p)).collect::<Result<Vec<_>, _>>()?;
        if let Some(code) = config.assign_epsg {
            for i in inputs.iter_mut().filter(|i| i.crs.is_none()) {
                i.crs = Some(Crs::from_epsg(code));
            }
        }
        let crs = if config.reproject {
            let target = match config.target_epsg {
                Some(code) => Crs::from_epsg(code),
                None => inputs[0].crs.clone().ok_or_else(|| Error::Reproject {
                    path: inputs[0].path.clone(),
                    target: "the first input's CRS".into(),
                    source: talus_io::reproject::ReprojectError::Unknown,
                })?,
            };
            for i in inputs.iter_mut() {
                let reproject_error = |source| Error::Reproject {
                    path: i.path.clone(),
                    target: target.label(),
                    source,
                };
                let Some(from) = i.crs.clone() else {
                    return Err(reproject_error(talus_io::reproject::ReprojectError::Unknown));
                };
                if !from.same_as(&target) {
                    let t = talus_io::reproject::Transform::new(&from, &target)
                        .map_err(reproject_error)?;
                    i.transform = Some(t);
                }
            }
            Some(target)
        } else {
            let first = &inputs[0];
            let unknown = Crs::default();
            if config.require_same_crs {
                for other in &inputs[1..] {
                    let (a, b) = (
                        first.crs.as_ref().unwrap_or(&unknown),
                        other.crs.as_ref().unwrap_or(&unknown),
                    );
                    if !a.same_as(b) {
                        return Err(Error::CrsMismatch {
                            first: first.path.clone(),
                            first_crs: a.label(),
                            second: other.path.clone(),
                            second_crs: b.label(),
                        });
                    }
                }
            }
            first.crs.clone()
        };
        let first = &inputs[0];

        let optional = inputs.iter().fold(first.optional, |acc, i| acc.intersect(i.optional));
        let mut dropped = Vec::new();
        let all_optional = inputs.iter().fold(OptionalColumns::default(), |a, i| OptionalColumns {
            gps_time: a.gps_time || i.optional.gps_time,
            rgb: a.rgb || i.optional.rgb,
            nir: a.nir || i.optional.nir,
        });
        if all_optional.gps_time && !optional.gps_time {
            dropped.push("gps_time".to_string());
        }
        if all_optional.rgb && !optional.rgb {
            dropped.extend(["red", "green", "blue"].map(String::from));
        }
        if all_optional.nir && !optional.nir {
            dropped.push("nir".to_string());
        }
        let same_extras = inputs.iter().all(|i| {
            i.extras.len() == first.extras.len()
                && i.extras.iter().zip(&first.extras).all(|(a, b)| a.same_layout(b))
        });
        let extras = if same_extras && config.extra_bytes != ExtraBytesMode::Drop {
            first.extras.clone()
        } else {
            for i in &inputs {
                for e in &i.extras {
                    if !dropped.contains(&e.column) {
                        dropped.push(e.column.clone());
                    }
                }
            }
            Vec::new()
        };
        let fields = extras.iter().filter_map(|e| e.arrow_field(config.extra_bytes)).collect();
        let mut schema = full_schema(optional, fields);
        let original_class = !config.ground.is_none();
        if original_class {
            schema = with_original_classification(&schema);
        }
        Ok(Survey {
            inputs,
            crs,
            plan: Plan {
                optional,
                extras,
                mode: config.extra_bytes,
                original_class,
                schema: Arc::new(schema),
            },
            dropped_columns: dropped,
        })
    }

    /// Each input's header box `[xmin, ymin, xmax, ymax]` in output coordinates (a
    /// reprojected box is the box of its reprojected outline, grown by 1 m).
    pub fn boxes(&self) -> Vec<[f64; 4]> {
        self.inputs
            .iter()
            .map(|i| {
                let b = i.header.bounds();
                let Some(t) = &i.transform else {
                    return [b.min.x - 1e-3, b.min.y - 1e-3, b.max.x + 1e-3, b.max.y + 1e-3];
                };
                let mut out = [f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
                for k in 0..=16 {
                    let f = k as f64 / 16.0;
                    let (x, y) =
                        (b.min.x + f * (b.max.x - b.min.x), b.min.y + f * (b.max.y - b.min.y));
                    for (px, py) in [(x, b.min.y), (x, b.max.y), (b.min.x, y), (b.max.x, y)] {
                        let (qx, qy, _) = t.apply(px, py, 0.0);
                        out = [out[0].min(qx), out[1].min(qy), out[2].max(qx), out[3].max(qy)];
                    }
                }
                [out[0] - 1.0, out[1] - 1.0, out[2] + 1.0, out[3] + 1.0]
            })
            .collect()
    }

    /// Points declared by all inputs.
    pub fn points(&self) -> u64 {
        self.inputs.iter().map(|i| i.points).sum()
    }

    /// The LAS headers as written into the output metadata.
    pub fn headers_json(&self) -> String {
        serde_json::Value::Array(self.inputs.iter().map(Input::header_json).collect()).to_string()
    }

    /// Decode every input chunk by chunk, in order, calling `f` with each chunk and the
    /// index of its first point in its input.
    /// A reader thread decodes the next chunk while `f` runs on the current one; at most
    /// three chunks exist at a time.
    pub fn scan(
        &self,
        chunk_points: usize,
        progress: &dyn Progress,
        mut f: impl FnMut(&Input, u64, &PointData) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let chunk = chunk_points.max(1) as u64;
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::sync_channel::<Result<(usize, PointData), Error>>(1);
            let (recycle_tx, recycle_rx) = mpsc::channel::<PointData>();
            let inputs = &self.inputs;
            scope.spawn(move || {
                for (k, input) in inputs.iter().enumerate() {
                    if let Err(e) = read_input(k, input, chunk, &tx, &recycle_rx) {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            });
            let mut first = vec![0u64; inputs.len()];
            for msg in rx {
                let (k, pd) = msg?;
                f(&self.inputs[k], first[k], &pd)?;
                first[k] += pd.len() as u64;
                progress.inc(pd.len() as u64);
                let _ = recycle_tx.send(pd);
            }
            Ok(())
        })
    }

    /// Decode, filter and convert every input, calling `sink` with each non-empty batch.
    /// Returns the number of points read.
    pub fn batches(
        &self,
        config: &Config,
        progress: &dyn Progress,
        sink: impl FnMut(RecordBatch) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        Ok(self.scan_all(config, progress, sink)?.read)
    }

    /// [`Survey::batches`], also reporting what the ground filter did.
    pub fn scan_all(
        &self,
        config: &Config,
        progress: &dyn Progress,
        mut sink: impl FnMut(RecordBatch) -> Result<(), Error>,
    ) -> Result<Scanned, Error> {
        let area = filter::Area::new(config);
        let in_box = |x: f64, y: f64, z: f64| area.contains(x, y, z);
        let classifier = match &config.ground {
            Ground::None => None,
            Ground::Smrf(params) => {
                progress.start("ground pass", self.points());
                let mut grid = ground::MinGrid::new(params.cell);
                self.scan(config.chunk_points, progress, |input, first, pd| {
                    let c = Coords::checked(input, first, pd)?;
                    let (rn, nr) = returns_of(pd);
                    for i in 0..c.x.len() {
                        if in_box(c.x[i], c.y[i], c.z[i])
                            && ground::considered(params, rn[i], nr[i], c.class[i])
                        {
                            grid.offer(c.x[i], c.y[i], c.z[i]);
                        }
                    }
                    Ok(())
                })?;
                progress.finish();
                Some(ground::Classifier::new(params.clone(), grid)?)
            }
        };
        // The chunk's coordinates, with the computed classes when the ground filter runs.
        let coords_of = |input: &Input,
                         first: u64,
                         pd: &PointData,
                         counts: Option<&mut ground::GroundCounts>|
         -> Result<Coords, Error> {
            let mut c = Coords::checked(input, first, pd)?;
            if let Some(g) = &classifier {
                let mut scratch = ground::GroundCounts::default();
                let (rn, nr) = returns_of(pd);
                g.apply((&rn, &nr), &mut c, in_box, counts.unwrap_or(&mut scratch));
            }
            Ok(c)
        };
        let winners = match &config.thin {
            Thin::Grid { spacing, keep } => {
                progress.start("grid pass", self.points());
                let pre = Prefilter::new(config);
                let mut grid = GridPass::new(*spacing, *keep);
                let mut rank = 0u64;
                self.scan(config.chunk_points, progress, |input, first, pd| {
                    let c = coords_of(input, first, pd, None)?;
                    for i in 0..c.x.len() {
                        if pre.passes(c.x[i], c.y[i], c.z[i], c.class[i]) {
                            grid.offer(rank, c.x[i], c.y[i], c.z[i]);
                            rank += 1;
                        }
                    }
                    Ok(())
                })?;
                progress.finish();
                Some(grid.winners())
            }
            _ => None,
        };
        let mut selector = Selector::new(config, winners);
        let mut duplicates = (config.drop_duplicates && self.inputs.len() > 1)
            .then(|| filter::Duplicates::new(self.boxes()));
        let mut read = 0u64;
        let mut counts = ground::GroundCounts::default();
        progress.start("ingest", self.points());
        self.scan(config.chunk_points, progress, |input, first, pd| {
            read += pd.len() as u64;
            let coords = coords_of(input, first, pd, Some(&mut counts))?;
            let mut mask = selector.mask(&coords.x, &coords.y, &coords.z, &coords.class);
            if let Some(d) = duplicates.as_mut() {
                let k = self.inputs.iter().position(|i| std::ptr::eq(i, input)).unwrap_or(0);
                let time: Option<Vec<f64>> = if self.plan.optional.gps_time {
                    pd.gps_time().map(|t| t.collect())
                } else {
                    None
                };
                mask = d.mask(k, &coords.x, &coords.y, &coords.z, time.as_deref(), mask);
            }
            if mask.as_ref().is_some_and(|m| m.true_count() == 0) {
                return Ok(());
            }
            let batch = convert::batch(&self.plan, input, pd, coords, mask.as_ref())
                .map_err(|source| Error::Arrow { path: input.path.clone(), source })?;
            sink(batch)
        })?;
        progress.finish();
        let ground = classifier.map(|g| GroundSummary {
            method: "smrf",
            parameters: g.params.clone(),
            grid: g.surface.stats,
            points: counts,
        });
        Ok(Scanned { read, ground, duplicates: duplicates.map_or(0, |d| d.dropped) })
    }
}

/// What [`Survey::scan_all`] reports.
#[derive(Debug, Clone)]
pub struct Scanned {
    /// Points read from all inputs.
    pub read: u64,
    /// What the ground filter did (none without one).
    pub ground: Option<GroundSummary>,
    /// Points dropped as duplicates of an earlier input's.
    pub duplicates: u64,
}

/// Return numbers and numbers of returns of a chunk.
fn returns_of(pd: &PointData) -> (Vec<u8>, Vec<u8>) {
    (pd.return_number().collect(), pd.number_of_returns().collect())
}

fn read_input(
    k: usize,
    input: &Input,
    chunk: u64,
    tx: &mpsc::SyncSender<Result<(usize, PointData), Error>>,
    recycle: &mpsc::Receiver<PointData>,
) -> Result<(), Error> {
    let path = &input.path;
    let file = File::open(path).map_err(|source| Error::Open { path: path.clone(), source })?;
    // The default reader options use the parallel LAZ decompressor (feature laz-parallel).
    let mut reader = Reader::new(BufReader::with_capacity(1 << 20, file))
        .map_err(|e| decode_error(input, 0, e))?;
    let mut done = 0u64;
    while done < input.points {
        let mut pd = recycle
            .try_recv()
            .unwrap_or_else(|_| PointDataBuilder::new().for_header(reader.header()).build());
        let n = reader.fill_points(chunk, &mut pd).map_err(|e| decode_error(input, done, e))?;
        if n == 0 {
            return Err(Error::Truncated {
                path: path.clone(),
                kind: if input.compressed { "LAZ" } else { "LAS" },
                detail: format!(
                    "the data ends after {done} of the {} points the header declares",
                    input.points
                ),
            });
        }
        done += n;
        if tx.send(Ok((k, pd))).is_err() {
            break; // the consumer stopped (it reports its own error)
        }
    }
    Ok(())
}

fn decode_error(input: &Input, at: u64, e: las::Error) -> Error {
    let eof = match &e {
        las::Error::Io(io) => io.kind() == std::io::ErrorKind::UnexpectedEof,
        las::Error::LasZipError(laz::LasZipError::IoError(io)) => {
            io.kind() == std::io::ErrorKind::UnexpectedEof
        }
        _ => false,
    };
    if input.compressed {
        // The file's length and chunk table were checked when it was opened, so a LAZ that
        // cannot be decoded is corrupt, not short: name the chunk.
        let detail = match input.locate_corrupt_chunk() {
            Some(c) => format!(
                "chunk {} of {} (points {}..{}, from byte {}) cannot be decoded: {e}",
                c.chunk,
                c.chunks,
                c.first_point,
                c.first_point + c.points,
                c.offset
            ),
            None => format!("the compressed points cannot be decoded after point {at}: {e}"),
        };
        return Error::Corrupt { path: input.path.clone(), detail };
    }
    if eof {
        Error::Truncated {
            path: input.path.clone(),
            kind: "LAS",
            detail: format!(
                "the data ends after point {at} of the {} the header declares",
                input.points
            ),
        }
    } else {
        Error::Decode { path: input.path.clone(), at, source: e }
    }
}

/// Ingest `inputs` (one survey) into the points Parquet file `output`.
pub fn run(
    config: &Config,
    inputs: &[PathBuf],
    output: &Path,
    progress: &dyn Progress,
) -> Result<Summary, Error> {
    config.validate()?;
    // Files, directories of tiles or glob patterns, in a fixed order.
    let inputs = &talus_io::survey_files::expand(inputs)?;
    for p in inputs {
        if same_file(p, output) {
            return Err(Error::OutputIsInput { path: output.to_path_buf() });
        }
    }
    let survey = Survey::open(config, inputs)?;
    let provenance = Provenance::new("ingest", env!("CARGO_PKG_VERSION"), config)
        .with_inputs(inputs)?
        .with_crs(survey.crs.clone())
        .with_extra(LAS_HEADER_KEY, survey.headers_json());
    let mut sink = ParquetSink::create(output, survey.plan.schema.clone(), &provenance)?;
    let mut stats = Stats::default();
    let Scanned { read, ground, duplicates } = survey.scan_all(config, progress, |batch| {
        stats.add(&batch);
        sink.write(&batch)?;
        Ok(())
    })?;
    if stats.written == 0 {
        // The sink is dropped unfinished: nothing is left on disk.
        return Err(Error::Empty {
            read,
            inputs: survey.inputs.iter().map(Input::name).collect::<Vec<_>>().join(", "),
            filters: config.describe_filters(),
        });
    }
    sink.finish()?;
    Ok(Summary {
        inputs: survey
            .inputs
            .iter()
            .map(|i| InputSummary {
                file: i.name(),
                version: format!("{}.{}", i.version.0, i.version.1),
                point_format: i.point_format,
                compressed: i.compressed,
                points: i.points,
                crs: i.crs.as_ref().map(Crs::label).unwrap_or_else(|| "unknown".into()),
                ignored_records: i.ignored_records,
                reprojected: i.transform.as_ref().map(|t| {
                    let from = i.crs.as_ref().map(Crs::label).unwrap_or_default();
                    let to = survey.crs.as_ref().map(Crs::label).unwrap_or_default();
                    match t.datum_note() {
                        Some(note) => format!("{from} -> {to}; {note}"),
                        None => format!("{from} -> {to}"),
                    }
                }),
            })
            .collect(),
        points_read: read,
        points_written: stats.written,
        crs: survey.crs.as_ref().map(Crs::label).unwrap_or_else(|| "unknown".into()),
        bounds: [
            stats.min[0],
            stats.min[1],
            stats.min[2],
            stats.max[0],
            stats.max[1],
            stats.max[2],
        ],
        class_counts: stats.classes,
        columns: survey.plan.schema.fields().iter().map(|f| f.name().clone()).collect(),
        dropped_columns: survey.dropped_columns,
        ground,
        duplicates_dropped: duplicates,
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[derive(Debug)]
struct Stats {
    written: u64,
    min: [f64; 3],
    max: [f64; 3],
    classes: BTreeMap<u8, u64>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            written: 0,
            min: [f64::INFINITY; 3],
            max: [f64::NEG_INFINITY; 3],
            classes: BTreeMap::new(),
        }
    }
}

impl Stats {
    fn add(&mut self, batch: &RecordBatch) {
        use arrow::array::AsArray;
        use arrow::datatypes::{Float64Type, UInt8Type};
        self.written += batch.num_rows() as u64;
        for (k, name) in ["x", "y", "z"].iter().enumerate() {
            if let Some(c) = batch.column_by_name(name) {
                for &v in c.as_primitive::<Float64Type>().values() {
                    self.min[k] = self.min[k].min(v);
                    self.max[k] = self.max[k].max(v);
                }
            }
        }
        if let Some(c) = batch.column_by_name("classification") {
            let mut counts = [0u64; 256];
            for &v in c.as_primitive::<UInt8Type>().values() {
                counts[usize::from(v)] += 1;
            }
            for (c, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
                *self.classes.entry(c as u8).or_default() += n;
            }
        }
    }
}

/// What was read and written, as `talus ingest` reports it (one line per input file,
/// then the totals).
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for i in &self.inputs {
            writeln!(
                f,
                "  {}: LAS {} format {}{}, {} points, CRS {}",
                i.file,
                i.version,
                i.point_format,
                if i.compressed { " (LAZ)" } else { "" },
                i.points,
                i.crs
            )?;
            if let Some(r) = &i.reprojected {
                writeln!(f, "  {}: reprojected {r}", i.file)?;
            }
            if i.ignored_records > 0 {
                writeln!(
                    f,
                    "  warning: {}: the point data holds {} records after the {} the header declares; they were not read",
                    i.file, i.ignored_records, i.points
                )?;
            }
        }
        if self.duplicates_dropped > 0 {
            writeln!(
                f,
                "  {} points dropped as repeats of an earlier input's (overlapping tiles)",
                self.duplicates_dropped
            )?;
        }
        if !self.dropped_columns.is_empty() {
            writeln!(
                f,
                "  columns not in every input, left out: {}",
                self.dropped_columns.join(", ")
            )?;
        }
        if let Some(g) = &self.ground {
            let p = &g.parameters;
            writeln!(
                f,
                "  ground (SMRF, cell {} m, slope {}, window {} m, threshold {} m, scalar {}; {} x {} cells, {} occupied, {} objects, {} low): {} ground, {} not ground, {} other returns set to 1, {} kept their class",
                p.cell,
                p.slope,
                p.window,
                p.threshold,
                p.scalar,
                g.grid.nx,
                g.grid.ny,
                g.grid.occupied,
                g.grid.object,
                g.grid.low,
                g.points.ground,
                g.points.non_ground,
                g.points.other_returns,
                g.points.kept
            )?;
        }
        let classes: Vec<String> =
            self.class_counts.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        let b = &self.bounds;
        write!(
            f,
            "ingest: {} of {} points written (CRS {}; classes {{{}}}; x [{:.3}, {:.3}], y [{:.3}, {:.3}], z [{:.3}, {:.3}])",
            self.points_written,
            self.points_read,
            self.crs,
            classes.join(", "),
            b[0],
            b[3],
            b[1],
            b[4],
            b[2],
            b[5]
        )
    }
}
