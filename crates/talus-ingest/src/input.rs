//! Opening one LAS/LAZ input: the checks made before any point is read (signature,
//! version, point format, the header's point count against the size of the point data,
//! the LAZ chunk table), its CRS, its extra-bytes attributes and the header record that
//! goes into the output's metadata.

use crate::Error;
use crate::extra::{self, ExtraField};
use las::raw;
use serde_json::json;
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use talus_io::Crs;
use talus_schema::points::OptionalColumns;

/// Names of the standard columns (extra-bytes attributes may not reuse them).
pub const STANDARD_COLUMNS: [&str; 14] = [
    "x",
    "y",
    "z",
    "intensity",
    "return_number",
    "number_of_returns",
    "classification",
    "scan_angle",
    "point_source_id",
    "gps_time",
    "red",
    "green",
    "blue",
    "nir",
];

/// A checked input file.
#[derive(Debug, Clone)]
pub struct Input {
    pub path: PathBuf,
    /// The header as the `las` crate reads it (VLRs included).
    pub header: las::Header,
    /// Version as written in the file (the `las` crate may report a higher one).
    pub version: (u8, u8),
    /// Point format number (0-10).
    pub point_format: u8,
    /// Whether the points are LAZ-compressed.
    pub compressed: bool,
    /// Points the header declares.
    pub points: u64,
    /// Records after the declared points, before the end of the point data (LAS): not
    /// read, as laspy and PDAL do, and reported as a warning.
    pub ignored_records: u64,
    /// Bytes per point record (extra bytes included).
    pub record_len: usize,
    /// Offset of the extra bytes within a record.
    pub extra_start: usize,
    /// The optional columns of the point format.
    pub optional: OptionalColumns,
    /// The extra-bytes attributes.
    pub extras: Vec<ExtraField>,
    /// The CRS from the WKT or GeoTIFF VLRs (or assigned by the configuration).
    pub crs: Option<Crs>,
    /// Byte offset of the point data.
    pub data_start: u64,
    /// The reprojection of this input's coordinates to the output CRS, when they differ.
    pub transform: Option<talus_io::reproject::Transform>,
}

/// The first LAZ chunk that does not decode on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CorruptChunk {
    /// Chunk index (0-based) and the number of chunks.
    pub chunk: usize,
    pub chunks: usize,
    /// Byte offset of the chunk in the file.
    pub offset: u64,
    /// Its first point and its number of points.
    pub first_point: u64,
    pub points: u64,
}

fn eof(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::UnexpectedEof
}

fn las_eof(e: &las::Error) -> bool {
    match e {
        las::Error::Io(io) => eof(io),
        las::Error::LasZipError(laz::LasZipError::IoError(io)) => eof(io),
        _ => false,
    }
}

impl Input {
    /// Open and check `path`.
    pub fn open(path: &Path) -> Result<Input, Error> {
        let open_err = |source| Error::Open { path: path.to_path_buf(), source };
        let mut file = File::open(path).map_err(open_err)?;
        let file_len = file.metadata().map_err(open_err)?.len();
        let mut head = [0u8; 26];
        let n = read_up_to(&mut file, &mut head).map_err(open_err)?;
        if n < 4 || &head[..4] != b"LASF" {
            return Err(Error::NotLas {
                path: path.to_path_buf(),
                found: String::from_utf8_lossy(&head[..n.min(4)]).into_owned(),
            });
        }
        let truncated =
            |detail: String| Error::Truncated { path: path.to_path_buf(), kind: "LAS", detail };
        if n < 26 {
            return Err(truncated(format!("the file ends inside its header ({file_len} bytes)")));
        }
        let (major, minor) = (head[24], head[25]);
        if major != 1 || minor > 4 {
            return Err(Error::UnsupportedVersion { path: path.to_path_buf(), major, minor });
        }
        file.seek(SeekFrom::Start(0)).map_err(open_err)?;
        let raw_header = raw::Header::read_from(BufReader::new(&mut file)).map_err(|e| {
            if las_eof(&e) {
                truncated(format!("the file ends inside its header ({file_len} bytes)"))
            } else {
                Error::Header { path: path.to_path_buf(), source: e }
            }
        })?;
        let format_byte = raw_header.point_data_record_format;
        let compressed = format_byte & 0xC0 != 0;
        let point_format = format_byte & 0x3F;
        let optional = OptionalColumns::for_point_format(point_format)
            .ok_or(Error::UnsupportedFormat { path: path.to_path_buf(), format: point_format })?;
        let kind = if compressed { "LAZ" } else { "LAS" };
        let truncated =
            |detail: String| Error::Truncated { path: path.to_path_buf(), kind, detail };
        let offset_to_points = u64::from(raw_header.offset_to_point_data);
        if offset_to_points > file_len {
            return Err(truncated(format!(
                "the point data should start at byte {offset_to_points} but the file has {file_len} bytes"
            )));
        }

        file.seek(SeekFrom::Start(0)).map_err(open_err)?;
        let header = las::Header::new(BufReader::new(&mut file)).map_err(|e| {
            if las_eof(&e) {
                truncated(format!(
                    "the file ends inside its variable-length records ({file_len} bytes)"
                ))
            } else {
                Error::Header { path: path.to_path_buf(), source: e }
            }
        })?;
        let t = header.transforms();
        for (axis, tr) in [('x', t.x), ('y', t.y), ('z', t.z)] {
            if !(tr.scale.is_finite() && tr.offset.is_finite() && tr.scale != 0.0) {
                return Err(Error::BadTransform {
                    path: path.to_path_buf(),
                    axis,
                    scale: tr.scale,
                    offset: tr.offset,
                });
            }
        }
        let points = header.number_of_points();
        let record_len = usize::from(header.point_format().len());
        let extra_len = usize::from(header.point_format().extra_bytes);

        let mut ignored_records = 0;
        if compressed {
            check_laz(&mut file, path, &header, offset_to_points, file_len)?;
        } else {
            let r = record_len as u64;
            let expected_end = offset_to_points + points * r;
            let data_end = match raw_header.evlr {
                Some(e) => e.start_of_first_evlr.min(file_len),
                None => file_len,
            };
            let held = data_end.saturating_sub(offset_to_points) / r;
            if data_end < expected_end {
                return Err(truncated(format!(
                    "the header declares {points} points of {r} bytes (up to byte {expected_end}) but the file holds only {held}"
                )));
            }
            // More records than declared: the declared ones are read (as laspy and PDAL
            // do), the others reported. Fewer is a truncated file (above).
            ignored_records = held - points;
        }

        let eb_vlr = header
            .all_vlrs()
            .find(|v| v.user_id.eq_ignore_ascii_case("LASF_Spec") && v.record_id == 4);
        let extras = if extra_len > 0 {
            extra::parse(eb_vlr.map(|v| v.data.as_slice()), extra_len, &STANDARD_COLUMNS)
                .map_err(|detail| Error::ExtraBytes { path: path.to_path_buf(), detail })?
        } else {
            Vec::new()
        };

        Ok(Input {
            path: path.to_path_buf(),
            crs: crs_of(&header),
            version: (major, minor),
            point_format,
            compressed,
            points,
            ignored_records,
            record_len,
            extra_start: record_len - extra_len,
            optional,
            extras,
            header,
            data_start: offset_to_points,
            transform: None,
        })
    }

    /// Decode a LAZ file chunk by chunk (with the chunk table) to find the first chunk
    /// that cannot be decoded: what a decoding error reports. `None` for LAS, without a
    /// chunk table, or when every chunk decodes on its own.
    pub fn locate_corrupt_chunk(&self) -> Option<CorruptChunk> {
        let vlr = self.header.laz_vlr().ok()?;
        let mut file = BufReader::new(File::open(&self.path).ok()?);
        file.seek(SeekFrom::Start(self.data_start)).ok()?;
        let table = laz::laszip::ChunkTable::read_from(&mut file, &vlr).ok()?;
        let item = vlr.items_size() as usize;
        file.seek(SeekFrom::Start(self.data_start)).ok()?;
        let mut dec = laz::LasZipDecompressor::new(file, vlr.clone()).ok()?;
        let (mut first, mut offset) = (0u64, self.data_start + 8);
        let chunks = table.as_ref().len();
        for (chunk, e) in table.as_ref().iter().enumerate() {
            let points = e.point_count.min(self.points.saturating_sub(first));
            let mut buf = vec![0u8; points as usize * item];
            let ok = dec.seek(first).is_ok() && dec.decompress_many(&mut buf).is_ok();
            if !ok {
                return Some(CorruptChunk { chunk, chunks, offset, first_point: first, points });
            }
            first += points;
            offset += e.byte_count;
        }
        None
    }

    /// File name for messages and metadata.
    pub fn name(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// The header record written into the output's `las:header` metadata.
    pub fn header_json(&self) -> serde_json::Value {
        let h = &self.header;
        let t = h.transforms();
        let b = h.bounds();
        json!({
            "file": self.name(),
            "version": format!("{}.{}", self.version.0, self.version.1),
            "point_format": self.point_format,
            "compressed": self.compressed,
            "point_record_length": self.record_len,
            "point_count": self.points,
            "scale": [t.x.scale, t.y.scale, t.z.scale],
            "offset": [t.x.offset, t.y.offset, t.z.offset],
            "bounds": {"min": [b.min.x, b.min.y, b.min.z], "max": [b.max.x, b.max.y, b.max.z]},
            "system_identifier": h.system_identifier(),
            "generating_software": h.generating_software(),
            "file_source_id": h.file_source_id(),
            "guid": h.guid().to_string(),
            "creation_date": h.date().map(|d| d.to_string()),
            "gps_time_type": if h.gps_time_type().is_standard() { "adjusted_standard" } else { "week" },
            "crs": self.crs.as_ref().map(Crs::label),
            "extra_bytes": self.extras,
        })
    }
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// LAZ: the chunk table (written after the points) must be there, and its chunks must
/// hold the number of points the header declares.
fn check_laz(
    file: &mut File,
    path: &Path,
    header: &las::Header,
    offset_to_points: u64,
    file_len: u64,
) -> Result<(), Error> {
    let truncated =
        |detail: String| Error::Truncated { path: path.to_path_buf(), kind: "LAZ", detail };
    let vlr =
        header.laz_vlr().map_err(|e| Error::Header { path: path.to_path_buf(), source: e })?;
    let mut word = [0u8; 8];
    file.seek(SeekFrom::Start(offset_to_points))
        .map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
    if read_up_to(file, &mut word)
        .map_err(|source| Error::Open { path: path.to_path_buf(), source })?
        < 8
    {
        return Err(truncated(format!(
            "the file ends at byte {file_len}, before its compressed points"
        )));
    }
    let table_at = i64::from_le_bytes(word);
    if table_at > offset_to_points as i64 && table_at as u64 >= file_len {
        return Err(truncated(format!(
            "its chunk table should start at byte {table_at} but the file has only {file_len} bytes"
        )));
    }
    file.seek(SeekFrom::Start(offset_to_points))
        .map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
    let table = laz::laszip::ChunkTable::read_from(BufReader::new(&mut *file), &vlr).map_err(
        |e| match e {
            laz::LasZipError::IoError(io) if eof(&io) => {
                truncated(format!("its chunk table is cut short ({file_len} bytes)"))
            }
            laz::LasZipError::MissingChunkTable => truncated("it has no chunk table".to_string()),
            other => Error::Header { path: path.to_path_buf(), source: las::Error::from(other) },
        },
    )?;
    let points = header.number_of_points();
    let chunks = table.as_ref().len() as u64;
    let compressed_bytes: u64 = table.as_ref().iter().map(|c| c.byte_count).sum();
    if table_at > 0 && offset_to_points + 8 + compressed_bytes > table_at as u64 {
        return Err(truncated(format!(
            "its chunks hold {compressed_bytes} bytes but only {} lie before the chunk table",
            (table_at as u64).saturating_sub(offset_to_points + 8)
        )));
    }
    if vlr.uses_variable_size_chunks() {
        let held: u64 = table.as_ref().iter().map(|c| c.point_count).sum();
        if held != points {
            return Err(Error::PointCountMismatch {
                path: path.to_path_buf(),
                declared: points,
                found: format!("{held} in {chunks} chunks"),
            });
        }
    } else {
        let size = u64::from(vlr.chunk_size());
        let (lo, hi) = (chunks.saturating_sub(1) * size + u64::from(chunks > 0), chunks * size);
        if points < lo || points > hi {
            return Err(Error::PointCountMismatch {
                path: path.to_path_buf(),
                declared: points,
                found: format!("{chunks} chunks of up to {size} points ({lo} to {hi})"),
            });
        }
        // The points of the last fixed-size chunk are not in the table: a count off by
        // less than one chunk is caught only if decoding fails (see the report).
    }
    Ok(())
}

/// The CRS of a header: the WKT VLR when present (its EPSG code completed from the GeoTIFF
/// keys if the WKT has none), otherwise the EPSG code of the GeoTIFF ProjectedCSTypeGeoKey
/// (3072) or GeographicTypeGeoKey (2048).
pub fn crs_of(header: &las::Header) -> Option<Crs> {
    let geotiff_epsg = header.get_geotiff_crs().ok().flatten().and_then(|g| {
        let user = |k: Option<u16>| k.filter(|c| (1024..=32766).contains(c));
        user(g.get_projected_crs_geo_key_value())
            .or_else(|| user(g.get_geodetic_crs_geo_key_value()))
            .map(u32::from)
    });
    let wkt = header
        .get_wkt_crs_bytes()
        .map(|b| String::from_utf8_lossy(b).trim_end_matches('\0').trim().to_string())
        .filter(|w| !w.is_empty());
    match (wkt, geotiff_epsg) {
        (Some(w), code) => {
            let mut crs = Crs::from_wkt(&w);
            if crs.epsg.is_none() {
                crs.epsg = code;
            }
            Some(crs)
        }
        (None, Some(code)) => Some(Crs::from_epsg(code)),
        (None, None) => None,
    }
}
