//! The one configuration of `talus synth` (the `[synth]` table of a site file).

use crate::Error;
use serde::{Deserialize, Serialize};

/// Options of the synthetic site generator. Lengths in metres, angles in degrees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Seed of every random draw (relief, vegetation, survey sampling, measurement noise).
    pub seed: u64,
    /// EPSG code of the output CRS; WGS 84 / UTM only: 32601-32660 (north), 32701-32760 (south).
    pub crs_epsg: u32,
    /// Easting and northing of the site's south-west corner, m (CRS units).
    pub origin: [f64; 2],
    /// Site extent east-west (along the cliff) and south-north (across it), m.
    pub extent: [f64; 2],
    /// Multiplier of both surveys' point densities (`--scale`): 1 = the densities of `pre`/`post`.
    pub scale: f64,
    /// Cell size of the truth grid (`truth.parquet`; volumes are integrated on it), m.
    pub truth_cell: f64,
    /// The intact slope: valley, cliff, plateau, river, relief.
    pub terrain: Terrain,
    /// The collapse scar cut into the cliff.
    pub scar: Scar,
    /// The deposit at the cliff foot.
    pub deposit: Deposit,
    /// Vegetation (trees and shrubs seen by multiple returns).
    pub vegetation: Vegetation,
    /// Pre-event survey (airborne, IGN/Litto3D-like).
    pub pre: Survey,
    /// Post-event survey (helicopter, Helimap-like).
    pub post: Survey,
}

/// The intact terrain. Local frame: x east (along the cliff), y north (uphill, across it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Terrain {
    /// Height of the cliff above its foot, m.
    pub cliff_height: f64,
    /// Mean slope of the cliff face, degrees from horizontal.
    pub cliff_slope: f64,
    /// Slope of the valley floor below the cliff foot (down to the river, southward), degrees.
    pub valley_slope: f64,
    /// Slope of the plateau above the cliff top (rising northward), degrees.
    pub plateau_slope: f64,
    /// Slope of the far river bank (rising southward beyond the river), degrees.
    pub bank_slope: f64,
    /// Mean distance of the cliff foot from the site's south edge, m.
    pub foot_y: f64,
    /// Amplitude of the cliff foot line's wander (seeded), m.
    pub foot_wander: f64,
    /// Distance of the river axis from the site's south edge, m.
    pub river_y: f64,
    /// Depth of the river channel, m.
    pub river_depth: f64,
    /// Width of the river channel, m.
    pub river_width: f64,
    /// Elevation of the cliff foot at the site's west edge, m.
    pub foot_elevation: f64,
    /// Drop of the whole valley eastward (downstream), m per m.
    pub downstream_gradient: f64,
    /// Radius over which slope breaks (foot, top, river banks) are rounded, m.
    pub corner_radius: f64,
    /// Amplitude of the largest relief octave (wavelength `relief_wavelength`), m.
    pub relief_amplitude: f64,
    /// Longest wavelength of the summed-noise relief, m (octaves halve down to 2 m).
    pub relief_wavelength: f64,
    /// Hurst exponent of the relief: amplitude ∝ wavelength^H (0.5-1).
    pub relief_hurst: f64,
    /// Roughness multiplier on the cliff face relative to the gentle slopes (1 = same).
    pub cliff_roughness: f64,
}

/// Shape of the collapse scar (see [`crate::site`] for the equations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScarShape {
    /// The cliff top retreats, the foot stays, so the face is flatter: a wedge whose
    /// deficit is 0 at the foot and largest near the old cliff top.
    Wedge,
    /// A flat-topped prow with a vertical front at the upper cliff falls away, leaving a
    /// flat bench and a vertical back wall: the void is a box of `width` × `depth` (whole
    /// truth cells) × a height solved for `volume`.
    Pillar,
}

/// The collapse scar cut into the cliff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Scar {
    /// Shape: `wedge` (default) or `pillar`.
    pub shape: ScarShape,
    /// Volume removed (integral of z_pre - z_post over the scar), m³.
    pub volume: f64,
    /// Width of the scar along the cliff, m (`pillar`: rounded to whole truth cells).
    pub width: f64,
    /// `pillar` only: horizontal depth across the cliff from the pillar's front face to the
    /// new back wall, m (rounded to whole truth cells).
    pub depth: f64,
    /// East coordinate of the scar's centre from the site's west edge, m (negative: middle).
    pub center_x: f64,
    /// `wedge` only: amplitude of the fresh scar surface's roughness relative to the
    /// terrain relief (1 = same). The pillar's top and bench are planes.
    pub roughness: f64,
}

/// The deposit: the scar's volume times a bulking factor, spread downslope of the cliff
/// foot as an arrowhead whose length follows a travel-angle (Fahrböschung) runout rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Deposit {
    /// Deposit volume / scar volume (rock bulking), ≥ 1.
    pub bulking: f64,
    /// Travel angle from the scar crown to the deposit tip, degrees; none = Scheidegger
    /// (1973): log10(tan α) = 0.62419 - 0.15666 log10(V / m³).
    pub travel_angle: Option<f64>,
    /// Half-width of the deposit at the cliff foot / half-width of the scar.
    pub spread: f64,
    /// Exponent of the arrowhead's narrowing: half-width ∝ (1 - s/L)^p.
    pub taper: f64,
    /// Amplitude of the deposit's bouldery surface noise, m.
    pub roughness: f64,
}

/// Vegetation cover of the gentle slopes (none on faces steeper than `max_slope`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Vegetation {
    /// Fraction of the gentle slopes covered (0-1).
    pub cover: f64,
    /// Tallest canopy, m.
    pub max_height: f64,
    /// No vegetation where the ground is steeper than this, degrees.
    pub max_slope: f64,
    /// Probability that a pulse hitting vegetation also returns from the ground (0-1).
    pub ground_penetration: f64,
}

/// How points are spread over steep ground.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SteepSampling {
    /// Density per unit of 3D surface area (an oblique scanner that sees the face), capped
    /// at `max_area_factor` times the horizontal density.
    SurfaceArea,
    /// Density per unit of horizontal area (a nadir scanner: steep faces get few points).
    Horizontal,
}

/// One LiDAR survey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Survey {
    /// Pulses per m² of horizontal ground (before `scale`); vegetation adds returns.
    pub density: f64,
    /// Vertical measurement noise (1 sigma), m.
    pub sigma_z: f64,
    /// Planimetric measurement noise (1 sigma per axis), m.
    pub sigma_xy: f64,
    /// Rigid shift (east, north, up) added to every point: registration error, m.
    pub misregistration: [f64; 3],
    /// Steep-face sampling rule.
    pub steep_sampling: SteepSampling,
    /// Largest density multiplier on steep faces (`surface_area` sampling).
    pub max_area_factor: f64,
    /// Ground speed along the flight lines (east-west), m/s.
    pub speed: f64,
    /// Width of a flight line's swath, m.
    pub swath: f64,
    /// Flying height above the site, m (scan angles).
    pub flying_height: f64,
    /// GPS time of the first pulse, adjusted standard GPS time (GPS seconds - 1e9), s.
    pub gps_time_start: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 20100511,
            crs_epsg: 32620,
            origin: [697_000.0, 1_636_000.0],
            extent: [560.0, 480.0],
            scale: 1.0,
            truth_cell: 1.0,
            terrain: Terrain::default(),
            scar: Scar::default(),
            deposit: Deposit::default(),
            vegetation: Vegetation::default(),
            pre: Survey::default(),
            post: Survey {
                density: 10.0,
                sigma_xy: 0.2,
                speed: 30.0,
                swath: 100.0,
                flying_height: 300.0,
                // 2010-07-22 14:00 UTC (Helimap survey)
                gps_time_start: -36_157_585.0,
                ..Survey::default()
            },
        }
    }
}

impl Default for Terrain {
    fn default() -> Self {
        Terrain {
            cliff_height: 130.0,
            cliff_slope: 65.0,
            valley_slope: 8.0,
            plateau_slope: 5.0,
            bank_slope: 15.0,
            foot_y: 300.0,
            foot_wander: 10.0,
            river_y: 40.0,
            river_depth: 4.0,
            river_width: 14.0,
            foot_elevation: 300.0,
            downstream_gradient: 0.02,
            corner_radius: 4.0,
            relief_amplitude: 4.0,
            relief_wavelength: 256.0,
            relief_hurst: 0.8,
            cliff_roughness: 2.5,
        }
    }
}

impl Default for Scar {
    fn default() -> Self {
        Scar {
            shape: ScarShape::Wedge,
            volume: 8.0e5,
            width: 360.0,
            depth: 80.0,
            center_x: -1.0,
            roughness: 1.0,
        }
    }
}

impl Default for Deposit {
    fn default() -> Self {
        Deposit { bulking: 1.2, travel_angle: None, spread: 1.0, taper: 0.8, roughness: 0.5 }
    }
}

impl Default for Vegetation {
    fn default() -> Self {
        Vegetation { cover: 0.45, max_height: 15.0, max_slope: 45.0, ground_penetration: 0.7 }
    }
}

impl Default for Survey {
    fn default() -> Self {
        Survey {
            density: 3.0,
            sigma_z: 0.05,
            sigma_xy: 0.4,
            misregistration: [0.0, 0.0, 0.0],
            steep_sampling: SteepSampling::SurfaceArea,
            max_area_factor: 4.0,
            speed: 60.0,
            swath: 160.0,
            flying_height: 1000.0,
            // 2010-03-15 14:00 UTC (IGN Litto3D survey)
            gps_time_start: -47_303_185.0,
        }
    }
}

fn check(ok: bool, msg: impl FnOnce() -> String) -> Result<(), Error> {
    if ok { Ok(()) } else { Err(Error::Config(msg())) }
}

fn finite_pos(name: &str, v: f64) -> Result<(), Error> {
    check(v.is_finite() && v > 0.0, || format!("{name} = {v} must be a positive number"))
}

fn finite_nonneg(name: &str, v: f64) -> Result<(), Error> {
    check(v.is_finite() && v >= 0.0, || format!("{name} = {v} must be ≥ 0"))
}

impl Config {
    /// The scar centre's x in the local frame (the middle of the site when negative).
    pub fn scar_center_x(&self) -> f64 {
        if self.scar.center_x < 0.0 { 0.5 * self.extent[0] } else { self.scar.center_x }
    }

    /// Check everything that can be checked without building the site (the site's own
    /// checks, e.g. that the scar fits behind the cliff, run in [`crate::Site::new`]).
    pub fn validate(&self) -> Result<(), Error> {
        crate::crs::utm_wkt(self.crs_epsg)?;
        check(self.origin.iter().all(|v| v.is_finite()), || "origin must be finite".into())?;
        check((100_000.0..=900_000.0).contains(&self.origin[0]), || {
            format!("origin easting {} is outside the UTM range 100000-900000 m", self.origin[0])
        })?;
        check((0.0..=10_000_000.0).contains(&self.origin[1]), || {
            format!("origin northing {} is outside the UTM range 0-10000000 m", self.origin[1])
        })?;
        finite_pos("extent[0]", self.extent[0])?;
        finite_pos("extent[1]", self.extent[1])?;
        check(self.extent[0] <= 20_000.0 && self.extent[1] <= 20_000.0, || {
            format!("extent {:?} m is larger than 20 km", self.extent)
        })?;
        finite_pos("scale", self.scale)?;
        finite_pos("truth_cell", self.truth_cell)?;
        let cells = (self.extent[0] / self.truth_cell) * (self.extent[1] / self.truth_cell);
        check(cells <= 5.0e7, || {
            format!("truth grid of {cells:.0} cells is too large; raise truth_cell")
        })?;
        check(
            self.extent[0] / self.truth_cell >= 8.0 && self.extent[1] / self.truth_cell >= 8.0,
            || "truth_cell must be at most 1/8 of the site extent".into(),
        )?;

        let t = &self.terrain;
        finite_pos("terrain.cliff_height", t.cliff_height)?;
        for (n, v) in [
            ("terrain.valley_slope", t.valley_slope),
            ("terrain.plateau_slope", t.plateau_slope),
            ("terrain.bank_slope", t.bank_slope),
        ] {
            check(v.is_finite() && (0.0..45.0).contains(&v), || {
                format!("{n} = {v}° must be in [0, 45)")
            })?;
        }
        check(
            t.cliff_slope.is_finite()
                && t.cliff_slope > t.valley_slope.max(t.plateau_slope) + 10.0
                && t.cliff_slope < 85.0,
            || {
                format!(
                    "terrain.cliff_slope = {}° must be below 85° and at least 10° steeper than the valley and plateau",
                    t.cliff_slope
                )
            },
        )?;
        finite_nonneg("terrain.foot_wander", t.foot_wander)?;
        finite_nonneg("terrain.river_depth", t.river_depth)?;
        finite_pos("terrain.river_width", t.river_width)?;
        finite_pos("terrain.corner_radius", t.corner_radius)?;
        finite_nonneg("terrain.relief_amplitude", t.relief_amplitude)?;
        check(t.relief_wavelength.is_finite() && t.relief_wavelength >= 4.0, || {
            "terrain.relief_wavelength must be ≥ 4 m".into()
        })?;
        check((0.0..=1.5).contains(&t.relief_hurst), || {
            "terrain.relief_hurst must be in [0, 1.5]".into()
        })?;
        finite_nonneg("terrain.cliff_roughness", t.cliff_roughness)?;
        check(t.foot_elevation.is_finite() && t.downstream_gradient.is_finite(), || {
            "terrain.foot_elevation and downstream_gradient must be finite".into()
        })?;
        check(t.river_y >= 0.0 && t.river_y + t.river_width < t.foot_y - t.foot_wander, || {
            format!(
                "terrain.river_y = {} m must lie south of the cliff foot ({} ± {} m) by more than the river width",
                t.river_y, t.foot_y, t.foot_wander
            )
        })?;
        let w_c = t.cliff_height / t.cliff_slope.to_radians().tan();
        check(t.foot_y + t.foot_wander + w_c + 10.0 < self.extent[1], || {
            format!(
                "the cliff (foot at y = {} m, {w_c:.0} m wide) does not fit in the site's {} m south-north extent",
                t.foot_y, self.extent[1]
            )
        })?;

        let s = &self.scar;
        finite_pos("scar.volume", s.volume)?;
        finite_pos("scar.width", s.width)?;
        finite_nonneg("scar.roughness", s.roughness)?;
        finite_pos("scar.depth", s.depth)?;
        if s.shape == ScarShape::Pillar {
            check(s.width >= self.truth_cell && s.depth >= self.truth_cell, || {
                format!(
                    "scar.width = {} m and scar.depth = {} m must each span at least one truth cell ({} m)",
                    s.width, s.depth, self.truth_cell
                )
            })?;
        }
        let xc = self.scar_center_x();
        check(xc - 0.5 * s.width >= 10.0 && xc + 0.5 * s.width <= self.extent[0] - 10.0, || {
            format!(
                "scar {} m wide centred at x = {xc} m is larger than the cliff: it must stay 10 m inside the site's {} m along the cliff",
                s.width, self.extent[0]
            )
        })?;

        let d = &self.deposit;
        check(d.bulking.is_finite() && (1.0..=2.0).contains(&d.bulking), || {
            format!("deposit.bulking = {} must be in [1, 2]", d.bulking)
        })?;
        if let Some(a) = d.travel_angle {
            check(a.is_finite() && a > t.valley_slope && a < 60.0, || {
                format!(
                    "deposit.travel_angle = {a}° must exceed the valley slope ({}°) and be below 60°",
                    t.valley_slope
                )
            })?;
        }
        finite_pos("deposit.spread", d.spread)?;
        check(d.taper.is_finite() && (0.0..=3.0).contains(&d.taper), || {
            "deposit.taper must be in [0, 3]".into()
        })?;
        finite_nonneg("deposit.roughness", d.roughness)?;

        let v = &self.vegetation;
        check((0.0..=1.0).contains(&v.cover), || {
            format!("vegetation.cover = {} must be in [0, 1]", v.cover)
        })?;
        finite_nonneg("vegetation.max_height", v.max_height)?;
        check((0.0..=90.0).contains(&v.max_slope), || {
            "vegetation.max_slope must be in [0, 90]".into()
        })?;
        check((0.0..=1.0).contains(&v.ground_penetration), || {
            "vegetation.ground_penetration must be in [0, 1]".into()
        })?;

        for (name, s) in [("pre", &self.pre), ("post", &self.post)] {
            finite_pos(&format!("{name}.density"), s.density)?;
            let pulses = s.density * self.scale * self.extent[0] * self.extent[1];
            check(pulses <= 2.0e9, || {
                format!("{name}: {pulses:.0} pulses is more than a LAS file should hold here")
            })?;
            finite_nonneg(&format!("{name}.sigma_z"), s.sigma_z)?;
            finite_nonneg(&format!("{name}.sigma_xy"), s.sigma_xy)?;
            check(s.misregistration.iter().all(|v| v.is_finite() && v.abs() <= 100.0), || {
                format!("{name}.misregistration must be finite and below 100 m")
            })?;
            check(s.max_area_factor.is_finite() && s.max_area_factor >= 1.0, || {
                format!("{name}.max_area_factor must be ≥ 1")
            })?;
            finite_pos(&format!("{name}.speed"), s.speed)?;
            finite_pos(&format!("{name}.swath"), s.swath)?;
            finite_pos(&format!("{name}.flying_height"), s.flying_height)?;
            check(s.gps_time_start.is_finite(), || {
                format!("{name}.gps_time_start must be finite")
            })?;
        }
        Ok(())
    }
}
