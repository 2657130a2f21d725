//! Reprojection of survey coordinates between coordinate reference systems, in pure Rust
//! (no PROJ), for the systems surveys of rock slopes come in:
//!
//! * geographic longitude/latitude (e.g. EPSG:4326; LAS stores `x` = longitude, `y` =
//!   latitude, in degrees);
//! * Transverse Mercator (EPSG method 9807: UTM, and the national TM grids), by the
//!   Krüger series in n to sixth order (Karney 2011, "Transverse Mercator with an accuracy
//!   of a few nanometers", J. Geodesy 85:475–485): better than 1 mm within 4000 km of the
//!   central meridian;
//! * Lambert Conic Conformal, one or two standard parallels (EPSG methods 9801 and 9802:
//!   Lambert-93, the French CC zones, US state planes), by the closed forms of the EPSG
//!   Guidance Note 7-2 §3.2.1 with an iterated inverse (converged to 1e-12 rad).
//!
//! A CRS is read from its EPSG code (the definitions embedded by `epsg-utils`) or from
//! its WKT2. A change of geodetic datum goes through geocentric coordinates with the
//! ellipsoids of both datums and **no datum shift** (PROJ's "ballpark" transformation
//! when no Helmert or grid is known), exact between realisations of one datum; PROJ
//! 9.5.1 itself takes RGF93 v1, RGAF09 and ETRS89 to WGS 84 by null transformations in
//! 2-D (docs/surveys.md). [`Transform::datum_note`] says when it happens, so the user knows
//! an offset may remain for co-registration to remove. Heights are kept as they are
//! (the vertical reference does not change) except for a change of length unit.

use epsg_utils::crs::{
    BaseGeodeticCrs, Datum, Ellipsoid as EpsgEllipsoid, MapProjectionParameter, Unit,
};
use std::f64::consts::FRAC_PI_2;

use crate::Crs;

/// Why a CRS cannot be used for reprojection.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReprojectError {
    #[error("the CRS is unknown (no EPSG code and no WKT): cannot reproject from or to it")]
    Unknown,
    #[error("EPSG:{0} is not in the embedded EPSG dataset")]
    UnknownEpsg(u32),
    #[error("the CRS's WKT cannot be read as WKT2 ({0}) and carries no EPSG code")]
    Wkt(String),
    #[error(
        "{name}: {what} is not supported for reprojection (supported: geographic \
             lon/lat, Transverse Mercator incl. UTM, Lambert Conic Conformal 1SP/2SP)"
    )]
    Unsupported { name: String, what: String },
    #[error("{name}: the projection parameter `{parameter}` is missing")]
    MissingParameter { name: String, parameter: &'static str },
}

/// A reference ellipsoid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ellipsoid {
    /// Semi-major axis, m.
    pub a: f64,
    /// Flattening.
    pub f: f64,
}

impl Ellipsoid {
    fn e2(&self) -> f64 {
        self.f * (2.0 - self.f)
    }

    /// Geodetic (rad, rad, m) to geocentric Cartesian (m).
    fn geodetic_to_geocentric(self, lon: f64, lat: f64, h: f64) -> [f64; 3] {
        let e2 = self.e2();
        let (s, c) = lat.sin_cos();
        let n = self.a / (1.0 - e2 * s * s).sqrt();
        [(n + h) * c * lon.cos(), (n + h) * c * lon.sin(), (n * (1.0 - e2) + h) * s]
    }

    /// Geocentric Cartesian (m) to geodetic (rad, rad, m), Bowring's start and two
    /// Newton refinements (sub-micrometre at terrestrial heights).
    fn geocentric_to_geodetic(self, p: [f64; 3]) -> (f64, f64, f64) {
        let e2 = self.e2();
        let lon = p[1].atan2(p[0]);
        let r = p[0].hypot(p[1]);
        let mut lat = p[2].atan2(r * (1.0 - e2));
        let mut h = 0.0;
        for _ in 0..5 {
            let s = lat.sin();
            let n = self.a / (1.0 - e2 * s * s).sqrt();
            h = if lat.cos().abs() > 1e-9 {
                r / lat.cos() - n
            } else {
                p[2].abs() - n * (1.0 - e2)
            };
            lat = p[2].atan2(r * (1.0 - e2 * n / (n + h)));
        }
        (lon, lat, h)
    }
}

/// The map projection of a CRS.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Longitude, latitude in the unit of the CRS's angles.
    Geographic {
        unit: f64,
    },
    TransverseMercator(Tm),
    LambertConic(Lcc),
}

/// A CRS as reprojection needs it: the projection, its ellipsoid, its datum.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// The CRS's name.
    pub name: String,
    /// The geodetic datum's name.
    pub datum: String,
    pub ellipsoid: Ellipsoid,
    /// Metres per unit of the projected coordinates (1 for geographic CRSs: heights in m).
    pub unit: f64,
    kind: Kind,
}

impl Projection {
    /// The projection of a recorded CRS: from its EPSG code when known, else its WKT2.
    pub fn of(crs: &Crs) -> Result<Projection, ReprojectError> {
        let parsed = match (crs.epsg, crs.wkt.as_deref()) {
            (Some(code), _) => {
                let wkt = i32::try_from(code)
                    .ok()
                    .and_then(|c| epsg_utils::epsg_to_wkt2(c).ok())
                    .ok_or(ReprojectError::UnknownEpsg(code))?;
                epsg_utils::parse_wkt2(wkt).map_err(|e| ReprojectError::Wkt(e.to_string()))?
            }
            (None, Some(wkt)) => {
                epsg_utils::parse_wkt2(wkt).map_err(|e| ReprojectError::Wkt(e.to_string()))?
            }
            (None, None) => return Err(ReprojectError::Unknown),
        };
        Projection::from_parsed(&parsed)
    }

    fn from_parsed(crs: &epsg_utils::Crs) -> Result<Projection, ReprojectError> {
        use epsg_utils::Crs as C;
        match crs {
            C::ProjectedCrs(p) => projected(p),
            C::GeogCrs(g) => {
                let (datum, ellipsoid) = datum_of(&g.name, &g.datum)?;
                let unit = g
                    .coordinate_system
                    .cs_unit
                    .as_ref()
                    .or_else(|| g.coordinate_system.axes.first().and_then(|a| a.unit.as_ref()))
                    .map_or(1f64.to_radians(), |u| factor(Some(u), 1f64.to_radians()));
                Ok(Projection {
                    name: g.name.clone(),
                    datum,
                    ellipsoid,
                    unit: 1.0,
                    kind: Kind::Geographic { unit },
                })
            }
            C::CompoundCrs(c) => {
                // The horizontal component decides; heights are kept as they are.
                for s in &c.components {
                    let single = match s {
                        epsg_utils::crs::SingleCrs::ProjectedCrs(p) => {
                            epsg_utils::Crs::ProjectedCrs(p.clone())
                        }
                        epsg_utils::crs::SingleCrs::GeogCrs(g) => {
                            epsg_utils::Crs::GeogCrs(g.clone())
                        }
                        _ => continue,
                    };
                    return Projection::from_parsed(&single);
                }
                Err(ReprojectError::Unsupported {
                    name: c.name.clone(),
                    what: "a compound CRS without a horizontal component".into(),
                })
            }
            C::GeodCrs(g) => Err(ReprojectError::Unsupported {
                name: g.name.clone(),
                what: "a geocentric CRS".into(),
            }),
            C::VertCrs(v) => Err(ReprojectError::Unsupported {
                name: v.name.clone(),
                what: "a vertical CRS".into(),
            }),
        }
    }

    /// Whether coordinates are longitude/latitude.
    pub fn is_geographic(&self) -> bool {
        matches!(self.kind, Kind::Geographic { .. })
    }

    /// Projected or geographic coordinates (CRS units) to longitude, latitude (rad).
    pub fn inverse(&self, x: f64, y: f64) -> (f64, f64) {
        match &self.kind {
            Kind::Geographic { unit } => (x * unit, y * unit),
            Kind::TransverseMercator(t) => t.inverse(x * self.unit, y * self.unit),
            Kind::LambertConic(l) => l.inverse(x * self.unit, y * self.unit),
        }
    }

    /// Longitude, latitude (rad) to coordinates in CRS units.
    pub fn forward(&self, lon: f64, lat: f64) -> (f64, f64) {
        let (x, y) = match &self.kind {
            Kind::Geographic { unit } => return (lon / unit, lat / unit),
            Kind::TransverseMercator(t) => t.forward(lon, lat),
            Kind::LambertConic(l) => l.forward(lon, lat),
        };
        (x / self.unit, y / self.unit)
    }
}

fn factor(u: Option<&Unit>, default: f64) -> f64 {
    u.and_then(|u| u.conversion_factor).unwrap_or(default)
}

fn datum_of(name: &str, d: &Datum) -> Result<(String, Ellipsoid), ReprojectError> {
    let (datum, e): (&str, Option<&EpsgEllipsoid>) = match d {
        Datum::ReferenceFrame(f) => (&f.name, Some(&f.ellipsoid)),
        Datum::Ensemble(e) => (&e.name, e.ellipsoid.as_ref()),
    };
    let e = e.ok_or_else(|| ReprojectError::Unsupported {
        name: name.to_string(),
        what: "a datum without an ellipsoid".into(),
    })?;
    let a = e.semi_major_axis * factor(e.unit.as_ref(), 1.0);
    let f = if e.inverse_flattening == 0.0 { 0.0 } else { 1.0 / e.inverse_flattening };
    Ok((datum.to_string(), Ellipsoid { a, f }))
}

fn projected(p: &epsg_utils::ProjectedCrs) -> Result<Projection, ReprojectError> {
    let base: &BaseGeodeticCrs = &p.base_geodetic_crs;
    let (datum, ellipsoid) = datum_of(&p.name, &base.datum)?;
    let angle = factor(base.ellipsoidal_cs_unit.as_ref(), 1f64.to_radians());
    let unit = p
        .coordinate_system
        .cs_unit
        .as_ref()
        .or_else(|| p.coordinate_system.axes.first().and_then(|a| a.unit.as_ref()))
        .map_or(1.0, |u| factor(Some(u), 1.0));
    let m = &p.map_projection;
    let method_id = m.method.identifiers.iter().find_map(|i| match i.authority_unique_id {
        epsg_utils::crs::AuthorityId::Number(n) if i.authority_name == "EPSG" => Some(n as u32),
        _ => None,
    });
    let method = m.method.name.to_ascii_lowercase();
    let param = |code: u32, names: &[&str], what: &'static str, kind: ParamKind| {
        let found = m.parameters.iter().find(|q| {
            param_id(q) == Some(code) || names.iter().any(|n| q.name.eq_ignore_ascii_case(n))
        });
        match found {
            Some(q) => Ok(match kind {
                ParamKind::Angle => q.value * factor(q.unit.as_ref(), angle),
                ParamKind::Length => q.value * factor(q.unit.as_ref(), unit),
                ParamKind::Scale => q.value * factor(q.unit.as_ref(), 1.0),
            }),
            None => Err(ReprojectError::MissingParameter { name: p.name.clone(), parameter: what }),
        }
    };
    use ParamKind::*;
    // (latitude, longitude, scale factor, false easting, false northing) of the natural
    // origin: Transverse Mercator and LCC 1SP.
    let natural_origin = || -> Result<[f64; 5], ReprojectError> {
        Ok([
            param(8801, &["Latitude of natural origin"], "latitude of natural origin", Angle)?,
            param(8802, &["Longitude of natural origin"], "longitude of natural origin", Angle)?,
            param(8805, &["Scale factor at natural origin"], "scale factor", Scale)?,
            param(8806, &["False easting"], "false easting", Length)?,
            param(8807, &["False northing"], "false northing", Length)?,
        ])
    };
    let kind = if method_id == Some(9807) || method == "transverse mercator" {
        let [lat0, lon0, k0, fe, fn_] = natural_origin()?;
        Kind::TransverseMercator(Tm::new(ellipsoid, lat0, lon0, k0, fe, fn_))
    } else if method_id == Some(9802) || method.starts_with("lambert conic conformal (2sp") {
        let lat1 = param(8823, &["Latitude of 1st standard parallel"], "1st parallel", Angle)?;
        let lat2 = param(8824, &["Latitude of 2nd standard parallel"], "2nd parallel", Angle)?;
        Kind::LambertConic(Lcc::two_parallels(
            ellipsoid,
            param(8821, &["Latitude of false origin"], "latitude of false origin", Angle)?,
            param(8822, &["Longitude of false origin"], "longitude of false origin", Angle)?,
            lat1,
            lat2,
            param(8826, &["Easting at false origin"], "easting at false origin", Length)?,
            param(8827, &["Northing at false origin"], "northing at false origin", Length)?,
        ))
    } else if method_id == Some(9801) || method.starts_with("lambert conic conformal (1sp") {
        let [lat0, lon0, k0, fe, fn_] = natural_origin()?;
        Kind::LambertConic(Lcc::one_parallel(ellipsoid, lat0, lon0, k0, fe, fn_))
    } else {
        return Err(ReprojectError::Unsupported {
            name: p.name.clone(),
            what: format!("the projection method `{}`", m.method.name),
        });
    };
    Ok(Projection { name: p.name.clone(), datum, ellipsoid, unit, kind })
}

#[derive(Clone, Copy)]
enum ParamKind {
    Angle,
    Length,
    Scale,
}

fn param_id(q: &MapProjectionParameter) -> Option<u32> {
    q.identifiers.iter().find_map(|i| match i.authority_unique_id {
        epsg_utils::crs::AuthorityId::Number(n) if i.authority_name == "EPSG" => Some(n as u32),
        _ => None,
    })
}

/// Transverse Mercator by Krüger's series (projection lengths in m).
#[derive(Debug, Clone, PartialEq)]
struct Tm {
    e: f64,
    /// Rectifying radius times the scale factor.
    ka: f64,
    alpha: [f64; 6],
    beta: [f64; 6],
    lon0: f64,
    /// k0 A ξ at the latitude of origin.
    m0: f64,
    fe: f64,
    fn_: f64,
}

/// Conformal latitude's tangent τ' from the geodetic latitude's tangent τ (Karney eq. 7).
fn taup(tau: f64, e: f64) -> f64 {
    let tau1 = tau.hypot(1.0);
    let sig = (e * (e * tau / tau1).atanh()).sinh();
    tau * sig.hypot(1.0) - sig * tau1
}

/// Inverse of [`taup`] by Newton's method (Karney eqs. 19–21).
fn tau_of_taup(taup_: f64, e: f64) -> f64 {
    let e2m = 1.0 - e * e;
    let mut tau = taup_;
    for _ in 0..8 {
        let tp = taup(tau, e);
        let d = (taup_ - tp) * (1.0 + e2m * tau * tau) / (e2m * tau.hypot(1.0) * tp.hypot(1.0));
        tau += d;
        if d.abs() <= 1e-15 * tau.abs().max(1.0) {
            break;
        }
    }
    tau
}

impl Tm {
    fn new(ell: Ellipsoid, lat0: f64, lon0: f64, k0: f64, fe: f64, fn_: f64) -> Tm {
        let n = ell.f / (2.0 - ell.f);
        let (n2, n3) = (n * n, n * n * n);
        let (n4, n5, n6) = (n3 * n, n3 * n2, n3 * n3);
        let a = ell.a / (1.0 + n) * (1.0 + n2 / 4.0 + n4 / 64.0 + n6 / 256.0);
        let alpha = [
            n / 2.0 - 2.0 * n2 / 3.0 + 5.0 * n3 / 16.0 + 41.0 * n4 / 180.0 - 127.0 * n5 / 288.0
                + 7891.0 * n6 / 37800.0,
            13.0 * n2 / 48.0 - 3.0 * n3 / 5.0 + 557.0 * n4 / 1440.0 + 281.0 * n5 / 630.0
                - 1983433.0 * n6 / 1935360.0,
            61.0 * n3 / 240.0 - 103.0 * n4 / 140.0
                + 15061.0 * n5 / 26880.0
                + 167603.0 * n6 / 181440.0,
            49561.0 * n4 / 161280.0 - 179.0 * n5 / 168.0 + 6601661.0 * n6 / 7257600.0,
            34729.0 * n5 / 80640.0 - 3418889.0 * n6 / 1995840.0,
            212378941.0 * n6 / 319334400.0,
        ];
        let beta = [
            n / 2.0 - 2.0 * n2 / 3.0 + 37.0 * n3 / 96.0 - n4 / 360.0 - 81.0 * n5 / 512.0
                + 96199.0 * n6 / 604800.0,
            n2 / 48.0 + n3 / 15.0 - 437.0 * n4 / 1440.0 + 46.0 * n5 / 105.0
                - 1118711.0 * n6 / 3870720.0,
            17.0 * n3 / 480.0 - 37.0 * n4 / 840.0 - 209.0 * n5 / 4480.0 + 5569.0 * n6 / 90720.0,
            4397.0 * n4 / 161280.0 - 11.0 * n5 / 504.0 - 830251.0 * n6 / 7257600.0,
            4583.0 * n5 / 161280.0 - 108847.0 * n6 / 3991680.0,
            20648693.0 * n6 / 638668800.0,
        ];
        let mut t = Tm { e: ell.e2().sqrt(), ka: k0 * a, alpha, beta, lon0, m0: 0.0, fe, fn_ };
        t.m0 = t.xi_eta(0.0, lat0).0 * t.ka;
        t
    }

    /// Krüger's (ξ, η) of a longitude difference and a latitude.
    fn xi_eta(&self, dlon: f64, lat: f64) -> (f64, f64) {
        let tp = taup(lat.tan(), self.e);
        let (s, c) = dlon.sin_cos();
        let xip = tp.atan2(c);
        let etap = (s / tp.hypot(c)).asinh();
        let (mut xi, mut eta) = (xip, etap);
        for (j, a) in self.alpha.iter().enumerate() {
            let k = 2.0 * (j + 1) as f64;
            xi += a * (k * xip).sin() * (k * etap).cosh();
            eta += a * (k * xip).cos() * (k * etap).sinh();
        }
        (xi, eta)
    }

    fn forward(&self, lon: f64, lat: f64) -> (f64, f64) {
        let dlon = (lon - self.lon0 + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
            - std::f64::consts::PI;
        let (xi, eta) = self.xi_eta(dlon, lat);
        (self.fe + self.ka * eta, self.fn_ + self.ka * xi - self.m0)
    }

    fn inverse(&self, x: f64, y: f64) -> (f64, f64) {
        let xi = (y - self.fn_ + self.m0) / self.ka;
        let eta = (x - self.fe) / self.ka;
        let (mut xip, mut etap) = (xi, eta);
        for (j, b) in self.beta.iter().enumerate() {
            let k = 2.0 * (j + 1) as f64;
            xip -= b * (k * xi).sin() * (k * eta).cosh();
            etap -= b * (k * xi).cos() * (k * eta).sinh();
        }
        let tp = xip.sin() / etap.sinh().hypot(xip.cos());
        let dlon = etap.sinh().atan2(xip.cos());
        (self.lon0 + dlon, tau_of_taup(tp, self.e).atan())
    }
}

/// Lambert Conic Conformal (projection lengths in m).
#[derive(Debug, Clone, PartialEq)]
struct Lcc {
    e: f64,
    n: f64,
    /// a F (times k0 for the one-parallel form).
    af: f64,
    /// Radius at the origin's latitude.
    r0: f64,
    lon0: f64,
    fe: f64,
    fn_: f64,
}

fn lcc_m(e: f64, lat: f64) -> f64 {
    let s = lat.sin();
    lat.cos() / (1.0 - e * e * s * s).sqrt()
}

fn lcc_t(e: f64, lat: f64) -> f64 {
    let s = lat.sin();
    (std::f64::consts::FRAC_PI_4 - lat / 2.0).tan() / ((1.0 - e * s) / (1.0 + e * s)).powf(e / 2.0)
}

impl Lcc {
    #[allow(clippy::too_many_arguments)]
    fn two_parallels(
        ell: Ellipsoid,
        lat_f: f64,
        lon_f: f64,
        lat1: f64,
        lat2: f64,
        ef: f64,
        nf: f64,
    ) -> Lcc {
        let e = ell.e2().sqrt();
        let (m1, m2) = (lcc_m(e, lat1), lcc_m(e, lat2));
        let (t1, t2) = (lcc_t(e, lat1), lcc_t(e, lat2));
        let n = if (lat1 - lat2).abs() < 1e-12 {
            lat1.sin()
        } else {
            (m1.ln() - m2.ln()) / (t1.ln() - t2.ln())
        };
        let af = ell.a * m1 / (n * t1.powf(n));
        let r0 = af * lcc_t(e, lat_f).powf(n);
        Lcc { e, n, af, r0, lon0: lon_f, fe: ef, fn_: nf }
    }

    fn one_parallel(ell: Ellipsoid, lat0: f64, lon0: f64, k0: f64, fe: f64, fn_: f64) -> Lcc {
        let e = ell.e2().sqrt();
        let n = lat0.sin();
        let t0 = lcc_t(e, lat0);
        let af = ell.a * lcc_m(e, lat0) / (n * t0.powf(n)) * k0;
        Lcc { e, n, af, r0: af * t0.powf(n), lon0, fe, fn_ }
    }

    fn forward(&self, lon: f64, lat: f64) -> (f64, f64) {
        let r = self.af * lcc_t(self.e, lat).powf(self.n);
        let theta = self.n * (lon - self.lon0);
        (self.fe + r * theta.sin(), self.fn_ + self.r0 - r * theta.cos())
    }

    fn inverse(&self, x: f64, y: f64) -> (f64, f64) {
        let (dx, dy) = (x - self.fe, self.r0 - (y - self.fn_));
        let sign = self.n.signum();
        let r = sign * dx.hypot(dy);
        let t = (r / self.af).powf(1.0 / self.n);
        let theta = (sign * dx).atan2(sign * dy);
        let mut lat = FRAC_PI_2 - 2.0 * t.atan();
        for _ in 0..30 {
            let s = lat.sin();
            let next = FRAC_PI_2
                - 2.0 * (t * ((1.0 - self.e * s) / (1.0 + self.e * s)).powf(self.e / 2.0)).atan();
            let done = (next - lat).abs() < 1e-13;
            lat = next;
            if done {
                break;
            }
        }
        (theta / self.n + self.lon0, lat)
    }
}

/// A transformation of points from one CRS to another.
#[derive(Debug, Clone, PartialEq)]
pub struct Transform {
    pub from: Projection,
    pub to: Projection,
    /// Whether the ellipsoids differ (coordinates go through geocentric space).
    ellipsoid_change: bool,
    /// Factor applied to heights (change of length unit between projected CRSs).
    z_factor: f64,
}

impl Transform {
    /// The transformation from `from` to `to`.
    pub fn new(from: &Crs, to: &Crs) -> Result<Transform, ReprojectError> {
        let (from, to) = (Projection::of(from)?, Projection::of(to)?);
        let ellipsoid_change = (from.ellipsoid.a - to.ellipsoid.a).abs() > 1e-6
            || (from.ellipsoid.f - to.ellipsoid.f).abs() > 1e-15;
        let z_factor = from.unit / to.unit;
        Ok(Transform { from, to, ellipsoid_change, z_factor })
    }

    /// When the geodetic datums differ: a sentence saying no datum shift was applied.
    pub fn datum_note(&self) -> Option<String> {
        (self.from.datum != self.to.datum).then(|| {
            format!(
                "datum {} taken as {} without a datum shift (ballpark, as PROJ without a \
                 known transformation; co-registration removes the remaining offset)",
                self.from.datum, self.to.datum
            )
        })
    }

    /// Transform one point (CRS units; heights kept, or scaled with the length unit).
    pub fn apply(&self, x: f64, y: f64, z: f64) -> (f64, f64, f64) {
        let (mut lon, mut lat) = self.from.inverse(x, y);
        let mut z = z * self.z_factor;
        if self.ellipsoid_change {
            let g = self.from.ellipsoid.geodetic_to_geocentric(lon, lat, z);
            let (lo, la, h) = self.to.ellipsoid.geocentric_to_geodetic(g);
            (lon, lat, z) = (lo, la, h);
        }
        let (x, y) = self.to.forward(lon, lat);
        (x, y, z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(a: u32, b: u32) -> Transform {
        Transform::new(&Crs::from_epsg(a), &Crs::from_epsg(b)).unwrap()
    }

    /// Reference values from PROJ 9.5.1 (pyproj 3.7.2, `always_xy`).
    #[test]
    fn utm_matches_proj() {
        let to_geo = t(32620, 4326);
        for (e, n, lon, lat) in [
            (697100.0, 1636200.0, -61.1686648740, 14.7926787572),
            (697560.0, 1636480.0, -61.1643711118, 14.7951750649),
            (500000.0, 0.0, -63.0, 0.0),
            (833978.56, 1600000.0, -59.9025161839, 14.4522634182),
        ] {
            let (x, y, _) = to_geo.apply(e, n, 0.0);
            assert!((x - lon).abs() < 2e-10 && (y - lat).abs() < 2e-10, "{x} {y} vs {lon} {lat}");
        }
        let to_19 = t(32620, 32619);
        for (e, n, e19, n19) in [
            (697100.0, 1636200.0, 1345038.262461, 1650207.899732),
            (697560.0, 1636480.0, 1345494.336153, 1650502.637234),
            (500000.0, 0.0, 1168881.688527, 0.0),
            (833978.56, 1600000.0, 1484141.484083, 1617365.370737),
        ] {
            let (x, y, z) = to_19.apply(e, n, 123.4);
            assert!((x - e19).abs() < 1e-3 && (y - n19).abs() < 1e-3, "{x} {y}");
            assert_eq!(z, 123.4);
        }
        let from_geo = t(4326, 32620);
        for (lon, lat, e, n) in [
            (-61.0, 14.8, 715251.751731, 1637165.254985),
            (-63.0, 15.0, 500000.0, 1658325.993565),
            (-57.5, 0.5, 1112937.430881, 55522.364756),
            (-61.2, -5.0, 699570.373920, -552937.584689),
        ] {
            let (x, y, _) = from_geo.apply(lon, lat, 0.0);
            assert!((x - e).abs() < 1e-4 && (y - n).abs() < 1e-4, "{x} {y} vs {e} {n}");
        }
        let (x, y, _) = t(4326, 32720).apply(-61.2, -5.0, 0.0);
        assert!((x - 699570.373920).abs() < 1e-4 && (y - 9447062.415311).abs() < 1e-4);
        // Another zone, the southern false northing.
        let (x, y, _) = t(32620, 32720).apply(697100.0, 1636200.0, 0.0);
        assert!((x - 697100.0).abs() < 1e-6 && (y - 11636200.0).abs() < 1e-6, "{x} {y}");
    }

    #[test]
    fn lambert_93_matches_proj() {
        let l93 = t(4326, 2154);
        for (lon, lat, e, n) in [
            (2.35, 48.85, 652301.564831, 6861302.725900),
            (-4.5, 48.4, 145709.788950, 6837422.082614),
            (7.7, 43.7, 1078729.648196, 6300271.150692),
            (3.0, 46.5, 700000.0, 6600000.0),
        ] {
            let (x, y, _) = l93.apply(lon, lat, 0.0);
            // WGS 84 and RGF93 differ only by their ellipsoids' flattening (~0.1 mm).
            assert!((x - e).abs() < 1e-3 && (y - n).abs() < 1e-3, "{x} {y} vs {e} {n}");
            let (lo, la, _) = t(2154, 4326).apply(e, n, 0.0);
            assert!((lo - lon).abs() < 1e-9 && (la - lat).abs() < 1e-9, "{lo} {la}");
        }
        assert!(l93.datum_note().is_some());
        assert!(t(32620, 32619).datum_note().is_none());
    }

    /// EPSG Guidance Note 7-2 worked example for method 9801 (JAD69 / Jamaica National
    /// Grid): 17°55'55.80"N, 76°56'37.26"W → E 255966.58 m, N 142493.51 m.
    #[test]
    fn lambert_one_parallel_guidance_note() {
        let clarke1866 = Ellipsoid { a: 6378206.4, f: 1.0 / 294.9786982 };
        let l = Lcc::one_parallel(
            clarke1866,
            18f64.to_radians(),
            (-77f64).to_radians(),
            1.0,
            250000.0,
            150000.0,
        );
        let lat = (17.0 + 55.0 / 60.0 + 55.80 / 3600.0f64).to_radians();
        let lon = -(76.0 + 56.0 / 60.0 + 37.26 / 3600.0f64).to_radians();
        let (x, y) = l.forward(lon, lat);
        assert!((x - 255966.58).abs() < 0.01 && (y - 142493.51).abs() < 0.01, "{x} {y}");
        let (lo, la) = l.inverse(x, y);
        assert!((lo - lon).abs() < 1e-12 && (la - lat).abs() < 1e-12);
    }

    #[test]
    fn round_trips_are_exact() {
        for (a, b) in [(32620, 32619), (32620, 4326), (32620, 5490), (2154, 32631)] {
            let (f, g) = (t(a, b), t(b, a));
            let p = Projection::of(&Crs::from_epsg(a)).unwrap();
            let (x0, y0) = if p.is_geographic() {
                (-61.0, 14.8)
            } else if a == 2154 {
                (652301.5, 6861302.7)
            } else {
                (697100.0, 1636200.0)
            };
            let (x, y, z) = f.apply(x0, y0, 250.0);
            let (x1, y1, z1) = g.apply(x, y, z);
            assert!((x1 - x0).abs() < 1e-6 && (y1 - y0).abs() < 1e-6, "{a}->{b}: {x1} {y1}");
            assert!((z1 - 250.0).abs() < 1e-6, "{z1}");
        }
    }

    #[test]
    fn unsupported_and_unknown_are_refused() {
        assert_eq!(Projection::of(&Crs::default()), Err(ReprojectError::Unknown));
        assert!(matches!(
            Projection::of(&Crs::from_epsg(999_999)),
            Err(ReprojectError::UnknownEpsg(999_999))
        ));
        // EPSG:3857, Popular Visualisation Pseudo-Mercator: not a method surveys use.
        let e = Projection::of(&Crs::from_epsg(3857)).unwrap_err();
        assert!(e.to_string().contains("not supported"), "{e}");
    }
}
