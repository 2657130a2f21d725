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
    /// Thinning, applied after the class and box filters.
    pub thin: Thin,
    /// Require the inputs to share a CRS (same EPSG code, else identical WKT; an unknown
    /// CRS matches only an unknown one). When false, differing CRS are accepted and the
    /// first input's is kept: only for files known to share coordinates.
    pub require_same_crs: bool,
    /// EPSG code given to inputs that carry no CRS (none leaves their CRS unknown).
    pub assign_epsg: Option<u32>,
    /// How extra-bytes attributes are written.
    pub extra_bytes: ExtraBytesMode,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            chunk_points: 1_000_000,
            classes: Vec::new(),
            bbox: None,
            thin: Thin::None,
            require_same_crs: true,
            assign_epsg: None,
            extra_bytes: ExtraBytesMode::Decode,
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
        match self.thin {
            Thin::Every { n: 0 } => return bad("thin.n must be at least 1".into()),
            Thin::Grid { spacing, .. } if !(spacing.is_finite() && spacing > 0.0) => {
                return bad(format!("thin.spacing must be a positive length, got {spacing}"));
            }
            _ => {}
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
        match &self.thin {
            Thin::None => {}
            Thin::Every { n } => parts.push(format!("every {n}-th point")),
            Thin::Grid { spacing, .. } => parts.push(format!("grid of {spacing}")),
        }
        if parts.is_empty() { "none".into() } else { parts.join(", ") }
    }
}
