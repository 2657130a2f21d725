//! LAS 1.4 / LAZ output: point format 6 (GPS time, up to 15 returns), millimetre
//! quantisation, the CRS as an OGC WKT VLR (with its EPSG authority), adjusted standard
//! GPS time, no creation date (so the same seed gives byte-identical files).

use crate::survey::{Epoch, Return, flight_line, line_count};
use crate::{Error, site::Site};
use las::point::{Classification, Format};
use las::{Builder, GpsTimeType, Point, Transform, Vector, Version, Writer};
use serde::Serialize;
use std::io::Cursor;
use talus_io::Progress;

/// What was written for one survey.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SurveyStats {
    /// Points (returns) written.
    pub points: u64,
    /// Pulses (last returns).
    pub pulses: u64,
    /// Ground returns (class 2).
    pub ground: u64,
    /// Vegetation returns (classes 3-5).
    pub vegetation: u64,
    /// Flight lines.
    pub lines: usize,
}

fn las_err(what: &str) -> impl FnOnce(las::Error) -> Error + '_ {
    move |source| Error::Las { what: what.to_string(), source }
}

/// Generate one survey and encode it as LAS (`compress = false`) or LAZ bytes.
pub fn survey_bytes(
    site: &Site,
    epoch: Epoch,
    compress: bool,
    progress: &dyn Progress,
) -> Result<(Vec<u8>, SurveyStats), Error> {
    let c = &site.config;
    let (survey, name, source_id) = match epoch {
        Epoch::Pre => (&c.pre, "pre", 1u16),
        Epoch::Post => (&c.post, "post", 2u16),
    };
    let what = format!("{name}-event survey");
    let mut builder = Builder::from(Version::new(1, 4));
    let mut format = Format::new(6).map_err(las_err(&what))?;
    format.is_compressed = compress;
    builder.point_format = format;
    builder.gps_time_type = GpsTimeType::Standard;
    builder.file_source_id = source_id;
    builder.system_identifier = format!("talus synth ({name}-event)");
    builder.generating_software = format!("talus-synth {}", env!("CARGO_PKG_VERSION"));
    let off = |v: f64| (v / 1000.0).floor() * 1000.0;
    builder.transforms = Vector {
        x: Transform { scale: 0.001, offset: off(c.origin[0]) },
        y: Transform { scale: 0.001, offset: off(c.origin[1]) },
        z: Transform { scale: 0.001, offset: 0.0 },
    };
    let mut header = builder.into_header().map_err(las_err(&what))?;
    let mut wkt = crate::crs::utm_wkt(c.crs_epsg)?.into_bytes();
    wkt.push(0);
    header.set_wkt_crs(wkt).map_err(las_err(&what))?;
    let mut writer = Writer::new(Cursor::new(Vec::new()), header).map_err(las_err(&what))?;

    let lines = line_count(site, survey);
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 8);
    let mut stats = SurveyStats { lines, ..Default::default() };
    progress.start(&format!("{name} survey"), lines as u64);
    let mut next = 0;
    while next < lines {
        let batch: Vec<usize> = (next..(next + threads).min(lines)).collect();
        next += batch.len();
        let results: Vec<Vec<Return>> = std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .iter()
                .map(|&l| s.spawn(move || flight_line(site, survey, epoch, l)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("flight line generation panicked"))
                .collect()
        });
        for pts in results {
            for r in pts {
                stats.points += 1;
                if r.return_number == r.number_of_returns {
                    stats.pulses += 1;
                }
                if r.classification == 2 {
                    stats.ground += 1;
                } else {
                    stats.vegetation += 1;
                }
                let p = Point {
                    x: r.x,
                    y: r.y,
                    z: r.z,
                    intensity: r.intensity,
                    return_number: r.return_number,
                    number_of_returns: r.number_of_returns,
                    classification: Classification::new(r.classification)
                        .map_err(las_err(&what))?,
                    scan_angle: r.scan_angle,
                    point_source_id: r.flight_line,
                    gps_time: Some(r.gps_time),
                    ..Default::default()
                };
                writer.write_point(p).map_err(las_err(&what))?;
            }
            progress.inc(1);
        }
    }
    writer.close().map_err(las_err(&what))?;
    let bytes = writer.into_inner().map_err(las_err(&what))?.into_inner();
    progress.finish();
    Ok((bytes, stats))
}
