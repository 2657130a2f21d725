//! The options of `talus ingest` ([`Config`]) and their validation.

use crate::Error;
use serde::{Deserialize, Serialize};

/// Options of the ingest stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Points decoded, converted and written at a time (count). Memory in use is a few
    /// chunks, about 100 bytes per point each, whatever the size of the inputs.
    pub chunk_points: usize,
    /// ASPRS classes to keep (e.g. [2] for ground only); empty keeps every class.
    pub classes: Vec<u8>,
    /// Keep only the points inside this box (CRS units, bounds included); none keeps all.
    pub bbox: Option<BBox>,
    /// Keep only the points inside this polygon, the site's area of interest: its
    /// vertices `[[x, y], ...]` in the output CRS (CRS units; closed implicitly; even-odd
    /// rule); none keeps all. Applied with `bbox`, to the coordinates after reprojection.
    pub polygon: Option<Vec<[f64; 2]>>,
    /// Thinning, applied after the class and box filters.
    pub thin: Thin,
    /// Require the inputs to share a CRS (same EPSG code, else identical WKT; an unknown
    /// CRS matches only an unknown one). When false, differing CRS are accepted and the
    /// first input's is kept: only for files known to share coordinates.
    pub require_same_crs: bool,
    /// EPSG code given to inputs that carry no CRS (none leaves their CRS unknown).
    pub assign_epsg: Option<u32>,
    /// Reproject inputs whose CRS differs from the output's (`target_epsg`) instead of
    /// refusing them, in pure Rust (`talus_io::reproject`: geographic, Transverse
    /// Mercator/UTM, Lambert Conic Conformal; no datum shift between datums, which the
    /// summary notes). Heights are kept.
    pub reproject: bool,
    /// EPSG code of the output CRS when reprojecting; none: the first input's CRS (in a
    /// pipeline: `[site] epsg`, else the pre-event survey's CRS).
    pub target_epsg: Option<u32>,
    /// Drop a point of an input that repeats a point of an earlier input (same x, y, z
    /// to 1 mm and same GPS time to 1 µs when the inputs have it): the duplicated points
    /// of overlapping tiles. Only points inside the header boxes of two inputs are
    /// remembered, so memory grows with the overlaps, not the survey.
    pub drop_duplicates: bool,
    /// How extra-bytes attributes are written.
    pub extra_bytes: ExtraBytesMode,
    /// Ground classification for clouds that arrive without it (`method = "none"`, the
    /// default, keeps the input's classes). With a filter, `classification` holds the
    /// computed class (2 = ground, 1 = not ground) and the input's class moves to the
    /// `classification_original` column; `classes` and thinning then see the computed
    /// class. See docs/ground.md.
    pub ground: Ground,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            chunk_points: 1_000_000,
            classes: Vec::new(),
            bbox: None,
            polygon: None,
            thin: Thin::None,
            require_same_crs: true,
            assign_epsg: None,
            reproject: false,
            target_epsg: None,
            drop_duplicates: true,
            extra_bytes: ExtraBytesMode::Decode,
            ground: Ground::None,
        }
    }
}

/// An axis-aligned box in CRS units; the z bounds are optional.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BBox {
    /// Minimum easting (CRS unit).
    pub xmin: f64,
    /// Minimum northing (CRS unit).
    pub ymin: f64,
    /// Maximum easting (CRS unit).
    pub xmax: f64,
    /// Maximum northing (CRS unit).
    pub ymax: f64,
    /// Minimum elevation (CRS unit); none for no lower bound.
    #[serde(default)]
    pub zmin: Option<f64>,
    /// Maximum elevation (CRS unit); none for no upper bound.
    #[serde(default)]
    pub zmax: Option<f64>,
}

impl BBox {
    /// Whether the point is inside (bounds included).
    #[inline]
    pub fn contains(&self, x: f64, y: f64, z: f64) -> bool {
        x >= self.xmin
            && x <= self.xmax
            && y >= self.ymin
            && y <= self.ymax
            && self.zmin.is_none_or(|m| z >= m)
            && self.zmax.is_none_or(|m| z <= m)
    }
}

/// Thinning of the points that passed the class and box filters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum Thin {
    /// Keep every point.
    None,
    /// Keep every n-th point (the 1st, the (n+1)-th, ...), counted across the inputs in order.
    Every {
        /// Keep one point in n (count, >= 1).
        n: u64,
    },
    /// Keep one point per square cell of a grid anchored at the CRS origin.
    Grid {
        /// Cell side (CRS unit, > 0).
        spacing: f64,
        /// Which point of a cell is kept (ties go to the first in input order).
        #[serde(default)]
        keep: GridKeep,
    },
}

/// The point a grid cell keeps.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum GridKeep {
    /// The point closest (horizontally) to the cell centre.
    #[default]
    ClosestToCentre,
    /// The lowest point (ground-like surfaces).
    Lowest,
    /// The first point in input order.
    First,
}

/// Ground classification of the points (a first pass builds a grid of per-cell minimum
/// elevations, the writing pass classifies each point against the ground surface).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum Ground {
    /// Keep the input's classification (no extra pass, no extra column).
    #[default]
    None,
    /// Simple Morphological Filter (Pingel, Clarke & McBride 2013; PDAL's `filters.smrf`).
    Smrf(Smrf),
}

impl Ground {
    /// Whether no ground filter runs.
    pub fn is_none(&self) -> bool {
        matches!(self, Ground::None)
    }
}

/// Parameters of SMRF (Pingel et al. 2013). The defaults are PDAL's `filters.smrf`
/// defaults except `scalar`, raised from 1.25 to 2.0 so that steep rock faces stay ground
/// (docs/ground.md: on the default site's 65° cliff PDAL's 1.25 leaves 0.13 % of the face's
/// ground points out, 2.0 leaves 0.01 %).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Smrf {
    /// Side of the square cells of the minimum-elevation grid (CRS unit, m; default 1.0,
    /// PDAL's). Memory is about 40 bytes per cell of the surveyed box (area / cell²),
    /// whatever the point count.
    pub cell: f64,
    /// Slope tolerance of the progressive opening, rise over run (default 0.15, PDAL's):
    /// at window radius r (m) a cell is an object if the opening lowers it by more than
    /// slope × r. Openings do not lower a face that rises monotonically across the window
    /// (a cliff), only bumps narrower than the window (trees, buildings).
    pub slope: f64,
    /// Largest window radius of the progressive opening (m, default 18.0, PDAL's): about
    /// the half-width of the largest object to remove.
    pub window: f64,
    /// Height from the ground surface up to which a point is ground on flat ground (m,
    /// default 0.5, PDAL's).
    pub threshold: f64,
    /// Extra height tolerance per unit of ground-surface slope (m per rise/run, default
    /// 2.0; PDAL 1.25): a point is ground if |z - DEM| <= threshold + scalar × |∇DEM|. It
    /// absorbs the planimetric noise of the points (σ_xy × slope) and the minimum
    /// surface's offset on steep ground (up to slope × cell / 2).
    pub scalar: f64,
    /// Which returns enter the ground surface and can be ground (default `last_and_only`,
    /// PDAL's `returns = "last, only"`); the other returns are classified 1.
    pub returns: GroundReturns,
    /// Which points are classified (default `all`, as PDAL's `filters.smrf` does).
    pub apply_to: GroundApplyTo,
}

impl Default for Smrf {
    fn default() -> Self {
        Smrf {
            cell: 1.0,
            slope: 0.15,
            window: 18.0,
            threshold: 0.5,
            scalar: 2.0,
            returns: GroundReturns::LastAndOnly,
            apply_to: GroundApplyTo::All,
        }
    }
}

/// Which returns the ground filter considers.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum GroundReturns {
    /// Last returns of multi-return pulses and single returns (return number ≥ number of
    /// returns): the ones that can reach the ground.
    #[default]
    LastAndOnly,
    /// Every return (clouds without meaningful return numbers).
    All,
}

/// Which points the ground filter classifies.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum GroundApplyTo {
    /// Every point: its class becomes 2 or 1 whatever it was (PDAL's behaviour).
    #[default]
    All,
    /// Only points of class 0 (never classified) or 1 (unclassified); the others keep
    /// their class and stay out of the ground surface (PDAL's `ignore` of every other
    /// class).
    Unclassified,
}

/// How extra-bytes attributes become columns.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ExtraBytesMode {
    /// Typed columns (scale and offset applied); undocumented bytes stay raw.
    #[default]
    Decode,
    /// One fixed-size binary column per attribute, bytes as stored.
    Raw,
    /// No extra-bytes columns.
    Drop,
}

impl Config {
    /// Check the options before any work.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if self.chunk_points == 0 {
            return bad("chunk_points must be at least 1".into());
        }
        if let Some(b) = &self.bbox {
            let all = [Some(b.xmin), Some(b.ymin), Some(b.xmax), Some(b.ymax), b.zmin, b.zmax];
            if all.iter().flatten().any(|v| !v.is_finite()) {
                return bad(format!("bbox bounds must be finite numbers, got {b:?}"));
            }
            if b.xmin > b.xmax
                || b.ymin > b.ymax
                || matches!((b.zmin, b.zmax), (Some(lo), Some(hi)) if lo > hi)
            {
                return bad(format!("bbox minimum above maximum: {b:?}"));
            }
        }
        if let Some(poly) = &self.polygon {
            if poly.len() < 3 {
                return bad(format!("polygon needs at least 3 vertices, got {}", poly.len()));
            }
            if poly.iter().flatten().any(|v| !v.is_finite()) {
                return bad("polygon vertices must be finite numbers".into());
            }
        }
        if self.target_epsg == Some(0) {
            return bad("target_epsg must be an EPSG code, not 0".into());
        }
        if self.target_epsg.is_some() && !self.reproject {
            return bad("target_epsg is set but reproject = false: set reproject = true".into());
        }
        match self.thin {
            Thin::Every { n: 0 } => return bad("thin.n must be at least 1".into()),
            Thin::Grid { spacing, .. } if !(spacing.is_finite() && spacing > 0.0) => {
                return bad(format!("thin.spacing must be a positive length, got {spacing}"));
            }
            _ => {}
        }
        if let Ground::Smrf(p) = &self.ground {
            p.validate()?;
        }
        if self.assign_epsg == Some(0) {
            return bad("assign_epsg must be an EPSG code, not 0".into());
        }
        Ok(())
    }

    pub(crate) fn describe_filters(&self) -> String {
        let mut parts = Vec::new();
        if !self.classes.is_empty() {
            parts.push(format!("classes = {:?}", self.classes));
        }
        if let Some(b) = &self.bbox {
            parts.push(format!("bbox = [{}, {}] x [{}, {}]", b.xmin, b.xmax, b.ymin, b.ymax));
        }
        if let Some(p) = &self.polygon {
            parts.push(format!("polygon of {} vertices", p.len()));
        }
        match &self.thin {
            Thin::None => {}
            Thin::Every { n } => parts.push(format!("every {n}-th point")),
            Thin::Grid { spacing, .. } => parts.push(format!("grid of {spacing}")),
        }
        if parts.is_empty() { "none".into() } else { parts.join(", ") }
    }
}

impl Smrf {
    /// Check the parameters (each error names the field).
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        let positive = |name: &str, v: f64| -> Result<(), Error> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                bad(format!("ground.{name} must be a positive number, got {v}"))
            }
        };
        positive("cell", self.cell)?;
        positive("slope", self.slope)?;
        positive("window", self.window)?;
        if !(self.threshold.is_finite() && self.threshold >= 0.0) {
            return bad(format!(
                "ground.threshold must be a height >= 0 m, got {}",
                self.threshold
            ));
        }
        if !(self.scalar.is_finite() && self.scalar >= 0.0) {
            return bad(format!("ground.scalar must be >= 0, got {}", self.scalar));
        }
        if self.window < self.cell {
            return bad(format!(
                "ground.window ({} m) must be at least ground.cell ({} m)",
                self.window, self.cell
            ));
        }
        if self.window / self.cell > 1000.0 {
            return bad(format!(
                "ground.window / ground.cell = {} cells: at most 1000 (raise ground.cell)",
                self.window / self.cell
            ));
        }
        Ok(())
    }
}
