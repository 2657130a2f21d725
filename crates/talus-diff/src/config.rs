//! The options of `talus diff`, one typed struct (the `[diff]` table of a site file).

use crate::Error;
use serde::{Deserialize, Serialize};

/// Options of the differencing stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// ASPRS classes kept from both surveys (2 = ground); an empty list keeps every point.
    pub classes: Vec<u8>,
    /// Treat the two surveys as being in the same CRS even when their recorded CRS differ
    /// or one is unknown (the user vouches for it).
    pub same_crs: bool,
    /// DEM of difference.
    pub dod: DodConfig,
    /// Change zones (scar, deposit) from the significant DoD cells.
    pub zones: ZonesConfig,
    /// M3C2 distances (Lague et al. 2013).
    pub m3c2: M3c2Config,
    /// Cloud-to-cloud nearest-neighbour distances.
    pub c2c: C2cConfig,
    /// Co-registration of the post-event survey onto the pre-event one before any
    /// differencing (off by default: surveys that arrive co-registered stay as they are).
    pub registration: RegistrationConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            classes: vec![2],
            same_crs: false,
            dod: DodConfig::default(),
            zones: ZonesConfig::default(),
            m3c2: M3c2Config::default(),
            c2c: C2cConfig::default(),
            registration: RegistrationConfig::default(),
        }
    }
}

/// Elevation of a grid cell from the points that fall in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CellStatistic {
    /// Mean elevation.
    Mean,
    /// Median elevation.
    Median,
    /// Lowest elevation.
    Min,
}

/// How the per-cell errors combine into the error of a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VolumeError {
    /// Point-spread part independent between cells (added in quadrature), survey-accuracy
    /// parts fully correlated: a survey-wide vertical bias (`N A sigma_v`) and a
    /// survey-wide horizontal shift (`sigma_h A |sum grad z|` per survey), the three
    /// added in quadrature.
    Split,
    /// Every cell's error independent: sqrt(sum A^2 (sigma_i^2 + sigma_h^2 |grad z_i|^2)).
    Independent,
    /// Every cell's error fully correlated: sum A (sigma_i + sigma_h |grad z_i|) (the
    /// conservative GCD choice).
    Correlated,
}

/// DEM-of-difference options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DodConfig {
    /// Grid cell size, m (square cells, origin snapped to a multiple of it).
    pub cell_size: f64,
    /// Per-cell elevation statistic.
    pub statistic: CellStatistic,
    /// Fewest points a cell needs to get an elevation (fewer: NaN), per survey.
    pub min_points: u32,
    /// Stated vertical accuracy (1 sigma) of the pre-event survey, m.
    pub pre_accuracy: f64,
    /// Stated vertical accuracy (1 sigma) of the post-event survey, m.
    pub post_accuracy: f64,
    /// Stated horizontal registration accuracy of the pre-event survey (1 sigma of a
    /// survey-wide shift, per horizontal axis), m. Enters volume errors through the
    /// surface slope (`sigma_h |sum grad z| A`); not the per-cell LoD.
    pub pre_horizontal_accuracy: f64,
    /// Stated horizontal registration accuracy of the post-event survey (1 sigma per
    /// horizontal axis), m; as `pre_horizontal_accuracy`.
    pub post_horizontal_accuracy: f64,
    /// Confidence of the level of detection (two-sided), e.g. 0.95 gives LoD = 1.96 sigma.
    pub confidence: f64,
    /// How per-cell errors combine into volume errors.
    pub volume_error: VolumeError,
}

impl Default for DodConfig {
    fn default() -> Self {
        DodConfig {
            cell_size: 1.0,
            statistic: CellStatistic::Mean,
            min_points: 1,
            pre_accuracy: 0.05,
            post_accuracy: 0.05,
            pre_horizontal_accuracy: 0.1,
            post_horizontal_accuracy: 0.1,
            confidence: 0.95,
            volume_error: VolumeError::Split,
        }
    }
}

/// Grid connectivity of a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Connectivity {
    /// Cells sharing an edge.
    Four,
    /// Cells sharing an edge or a corner.
    Eight,
}

/// Change-zone options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ZonesConfig {
    /// Connectivity of the significant cells forming a zone.
    pub connectivity: Connectivity,
    /// Smallest zone kept, m^2.
    pub min_area: f64,
    /// Keep every zone above `min_area`, not only the largest loss (`scar`) and the
    /// largest gain (`deposit`).
    pub keep_all: bool,
    /// Margin of a zone's volume, cells: the volume sums the signed dz, without the LoD
    /// threshold, over the zone, the cells it encloses and this many rings of cells
    /// around it (cells significant the other way excepted), so real change below the
    /// LoD at the zone's edge is not dropped. 0 sums the zone and its holes only.
    pub volume_margin: u32,
}

impl Default for ZonesConfig {
    fn default() -> Self {
        ZonesConfig {
            connectivity: Connectivity::Eight,
            min_area: 10.0,
            keep_all: false,
            volume_margin: 1,
        }
    }
}

/// Where M3C2 core points come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CorePoints {
    /// Every point of the pre-event survey.
    All,
    /// The pre-event points thinned to one per cube of `core_spacing` (the first point,
    /// in file order, of each cube).
    Spacing,
    /// The DoD cell centres at their pre-event elevation.
    DodCells,
}

/// Aggregation of the points of a cylinder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum M3c2Statistic {
    /// Mean position, spread = standard deviation (py4dgeo `robust_aggr = False`).
    Mean,
    /// Median position, spread = interquartile range (py4dgeo `robust_aggr = True`).
    Median,
}

/// M3C2 options. py4dgeo equivalents: `normal_radii`, `orientation_vector`,
/// `cyl_radius`, `max_distance` (= `max_depth` when `max_depth >= cylinder_radius`;
/// py4dgeo silently uses `cyl_radius` below that), `registration_error`, `robust_aggr`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct M3c2Config {
    /// Compute M3C2 (an empty table is written otherwise).
    pub enabled: bool,
    /// Core points.
    pub core_points: CorePoints,
    /// Core point spacing for `core_points = "spacing"`, m.
    pub core_spacing: f64,
    /// Radii of the neighbourhood used to fit the normal (PCA of the pre-event points), m;
    /// with several, the most planar fit ((l2 - l1) / l3) wins per core point.
    pub normal_radii: Vec<f64>,
    /// Normals are oriented so that their dot product with this vector is >= 0
    /// ([0, 0, 1] = up).
    pub orientation: [f64; 3],
    /// Radius of the projection cylinder, m.
    pub cylinder_radius: f64,
    /// Half-length of the projection cylinder along the normal, m.
    pub max_depth: f64,
    /// Position statistic of the points in the cylinder.
    pub statistic: M3c2Statistic,
    /// Registration error added to the level of detection, m; replaced by the
    /// co-registration's RMS residual when `registration` runs.
    pub registration_error: f64,
    /// Fewest points of each survey in a cylinder (fewer: NaN distance, flagged), >= 2.
    pub min_points: u32,
}

impl Default for M3c2Config {
    fn default() -> Self {
        M3c2Config {
            enabled: true,
            core_points: CorePoints::DodCells,
            core_spacing: 1.0,
            normal_radii: vec![2.0],
            orientation: [0.0, 0.0, 1.0],
            cylinder_radius: 1.0,
            max_depth: 10.0,
            statistic: M3c2Statistic::Mean,
            registration_error: 0.0,
            min_points: 3,
        }
    }
}

/// Cloud-to-cloud options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct C2cConfig {
    /// Compute C2C distances (an empty table is written otherwise).
    pub enabled: bool,
    /// Pre-event neighbours of each post point through which a local plane is fitted for
    /// `c2c_plane_distance`; 0 disables it (NaN), otherwise >= 3.
    pub plane_neighbours: u32,
}

impl Default for C2cConfig {
    fn default() -> Self {
        C2cConfig { enabled: true, plane_neighbours: 0 }
    }
}

/// Co-registration method.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RegistrationMethod {
    /// The surveys are used as they are.
    #[default]
    None,
    /// Robust point-to-plane ICP on stable ground ([`crate::register`]): the rigid
    /// transform is applied to the post-event points, reported in the summary and the
    /// outputs' provenance, and its RMS residual enters the level of detection.
    PointToPlane,
}

/// Options of the co-registration (PDAL's filters.icp, CloudCompare's fine registration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RegistrationConfig {
    /// Method (`none` or `point_to_plane`).
    pub method: RegistrationMethod,
    /// Post-event points used: the first of each cube of this side, m. About the post
    /// survey's point spacing uses nearly every point; coarser is faster but less precise
    /// (on the shipped site, 1 pt/m²: 1 m recovers a known motion to 5 mm, 2 m to 5 cm).
    pub sample_spacing: f64,
    /// Pre-event neighbours through which each correspondence's plane is fitted (>= 3).
    pub plane_neighbours: u32,
    /// A post-event point farther than this from every pre-event point has no
    /// correspondence, m (the largest misregistration expected, with a margin).
    pub max_distance: f64,
    /// ICP iterations per round, at most.
    pub max_iterations: u32,
    /// An update that moves no sampled point by more than this ends a round, m.
    pub tolerance: f64,
    /// Rounds of register → detect change (significant DoD cells) → re-register on the
    /// cells that did not change (>= 1; 1 registers on everything).
    pub stable_rounds: u32,
    /// Cells around a significant one also left out of the next round (cells).
    pub change_margin: u32,
}

impl Default for RegistrationConfig {
    fn default() -> Self {
        RegistrationConfig {
            method: RegistrationMethod::None,
            sample_spacing: 1.0,
            plane_neighbours: 10,
            max_distance: 5.0,
            max_iterations: 50,
            tolerance: 1e-4,
            stable_rounds: 4,
            change_margin: 1,
        }
    }
}

fn positive(name: &str, v: f64) -> Result<(), Error> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(Error::Config(format!("`{name}` must be a positive number of metres, got {v}")))
    }
}

fn non_negative(name: &str, v: f64) -> Result<(), Error> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(Error::Config(format!("`{name}` must be >= 0, got {v}")))
    }
}

impl Config {
    /// Check every option before any work.
    pub fn validate(&self) -> Result<(), Error> {
        let d = &self.dod;
        positive("dod.cell_size", d.cell_size)?;
        non_negative("dod.pre_accuracy", d.pre_accuracy)?;
        non_negative("dod.post_accuracy", d.post_accuracy)?;
        non_negative("dod.pre_horizontal_accuracy", d.pre_horizontal_accuracy)?;
        non_negative("dod.post_horizontal_accuracy", d.post_horizontal_accuracy)?;
        if !(d.confidence > 0.0 && d.confidence < 1.0) {
            return Err(Error::Config(format!(
                "`dod.confidence` must be in (0, 1), got {}",
                d.confidence
            )));
        }
        if d.min_points < 1 {
            return Err(Error::Config("`dod.min_points` must be >= 1".into()));
        }
        non_negative("zones.min_area", self.zones.min_area)?;
        let m = &self.m3c2;
        if m.enabled {
            if m.core_points == CorePoints::Spacing {
                positive("m3c2.core_spacing", m.core_spacing)?;
            }
            if m.normal_radii.is_empty() {
                return Err(Error::Config("`m3c2.normal_radii` needs at least one radius".into()));
            }
            for r in &m.normal_radii {
                positive("m3c2.normal_radii", *r)?;
            }
            let o = m.orientation;
            if !o.iter().all(|v| v.is_finite()) || o.iter().all(|v| *v == 0.0) {
                return Err(Error::Config(format!(
                    "`m3c2.orientation` must be a non-zero vector, got {o:?}"
                )));
            }
            positive("m3c2.cylinder_radius", m.cylinder_radius)?;
            positive("m3c2.max_depth", m.max_depth)?;
            non_negative("m3c2.registration_error", m.registration_error)?;
            if m.min_points < 2 {
                return Err(Error::Config(format!(
                    "`m3c2.min_points` must be >= 2 (a spread needs two points), got {}",
                    m.min_points
                )));
            }
        }
        let g = &self.registration;
        if g.method != RegistrationMethod::None {
            positive("registration.sample_spacing", g.sample_spacing)?;
            positive("registration.max_distance", g.max_distance)?;
            positive("registration.tolerance", g.tolerance)?;
            if g.plane_neighbours < 3 {
                return Err(Error::Config(format!(
                    "`registration.plane_neighbours` must be >= 3 (a plane needs three points), got {}",
                    g.plane_neighbours
                )));
            }
            if g.max_iterations < 1 || g.stable_rounds < 1 {
                return Err(Error::Config(
                    "`registration.max_iterations` and `registration.stable_rounds` must be >= 1"
                        .into(),
                ));
            }
        }
        let k = self.c2c.plane_neighbours;
        if self.c2c.enabled && (k == 1 || k == 2) {
            return Err(Error::Config(format!(
                "`c2c.plane_neighbours` must be 0 or >= 3, got {k}"
            )));
        }
        Ok(())
    }
}
