//! Writing small LAS/LAZ files with the `las` crate for the tests.
#![allow(dead_code)]

use las::point::{Classification, Format};
use las::{Builder, Color, Point, Transform, Vector, Version, Vlr, Writer};
use std::path::Path;

/// What a test file holds.
#[derive(Debug, Clone)]
pub struct Spec {
    pub version: (u8, u8),
    pub format: u8,
    pub n: usize,
    /// Extra-bytes VLR data and the number of extra bytes per point.
    pub extra: Option<(Vec<u8>, u16)>,
    pub wkt: Option<String>,
    pub geotiff_epsg: Option<u16>,
    /// Offset of the coordinates (lets two files differ).
    pub origin: [f64; 3],
    pub seed: u64,
}

impl Spec {
    pub fn new(version: (u8, u8), format: u8, n: usize) -> Self {
        Spec {
            version,
            format,
            n,
            extra: None,
            wkt: None,
            geotiff_epsg: None,
            origin: [700_000.0, 1_630_000.0, 0.0],
            seed: 1,
        }
    }
}

pub const SCALE: f64 = 0.001;

/// A tiny deterministic generator (SplitMix64).
pub struct Gen(pub u64);
impl Gen {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// GeoTIFF key directory with ProjectedCSTypeGeoKey (3072) = `epsg`.
pub fn geotiff_vlr(epsg: u16) -> Vlr {
    let keys: [u16; 8] = [1, 1, 0, 1, 3072, 0, 1, epsg];
    Vlr {
        user_id: "LASF_Projection".into(),
        record_id: 34735,
        description: "GeoKeyDirectoryTag".into(),
        data: keys.iter().flat_map(|k| k.to_le_bytes()).collect(),
    }
}

/// The points of a spec (coordinates exactly on the scale grid).
pub fn points(spec: &Spec) -> Vec<Point> {
    let format = Format::new(spec.format).unwrap();
    let mut g = Gen(spec.seed);
    let t = transforms(spec);
    (0..spec.n)
        .map(|i| {
            let raw = |g: &mut Gen| g.below(200_000) as i32 - 50_000;
            let (rx, ry, rz) = (raw(&mut g), raw(&mut g), raw(&mut g));
            let nr = 1 + g.below(if format.is_extended { 15 } else { 5 }) as u8;
            let class = [1u8, 2, 2, 3, 5, 6, 9][g.below(7) as usize];
            let scan_angle = if format.is_extended {
                (g.below(4000) as f32 - 2000.0) * 0.006
            } else {
                g.below(61) as f32 - 30.0
            };
            Point {
                x: t.x.direct(rx),
                y: t.y.direct(ry),
                z: t.z.direct(rz),
                intensity: g.below(65536) as u16,
                return_number: 1 + g.below(u64::from(nr)) as u8,
                number_of_returns: nr,
                classification: Classification::new(class).unwrap(),
                scan_angle,
                point_source_id: g.below(65536) as u16,
                gps_time: format
                    .has_gps_time
                    .then(|| 1.0e8 + i as f64 * 1.0e-5 + g.below(1000) as f64 * 0.25),
                color: format.has_color.then(|| Color {
                    red: g.below(65536) as u16,
                    green: g.below(65536) as u16,
                    blue: g.below(65536) as u16,
                }),
                nir: format.has_nir.then(|| g.below(65536) as u16),
                waveform: format.has_waveform.then(Default::default),
                extra_bytes: match &spec.extra {
                    Some((_, k)) => (0..*k).map(|_| g.below(256) as u8).collect(),
                    None => vec![],
                },
                ..Default::default()
            }
        })
        .collect()
}

pub fn transforms(spec: &Spec) -> Vector<Transform> {
    Vector {
        x: Transform { scale: SCALE, offset: spec.origin[0] },
        y: Transform { scale: SCALE, offset: spec.origin[1] },
        z: Transform { scale: SCALE, offset: spec.origin[2] },
    }
}

/// Write the spec to `path` (LAZ when the extension is `.laz`); returns the points.
pub fn write(path: &Path, spec: &Spec) -> Vec<Point> {
    let mut b = Builder::from(Version::new(spec.version.0, spec.version.1));
    b.point_format = Format::new(spec.format).unwrap();
    b.transforms = transforms(spec);
    b.system_identifier = "talus test".into();
    b.generating_software = "las-rs via talus tests".into();
    if let Some((vlr, k)) = &spec.extra {
        b.point_format.extra_bytes = *k;
        if !vlr.is_empty() {
            b.vlrs.push(Vlr {
                user_id: "LASF_Spec".into(),
                record_id: 4,
                description: "extra bytes".into(),
                data: vlr.clone(),
            });
        }
    }
    if let Some(code) = spec.geotiff_epsg {
        b.vlrs.push(geotiff_vlr(code));
    }
    let mut header = b.into_header().unwrap();
    if let Some(wkt) = &spec.wkt {
        header.set_wkt_crs(wkt.as_bytes().to_vec()).unwrap();
    }
    let pts = points(spec);
    let mut w = Writer::from_path(path, header).unwrap();
    for p in &pts {
        w.write_point(p.clone()).unwrap();
    }
    w.close().unwrap();
    pts
}

pub const UTM20_WKT: &str = r#"PROJCS["WGS 84 / UTM zone 20N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AUTHORITY["EPSG","4326"]],PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",-63],PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1],AUTHORITY["EPSG","32620"]]"#;
