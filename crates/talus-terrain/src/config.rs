//! The options of `talus terrain` ([`Config`]) and their validation.

use crate::Error;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Region of interest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Region {
    /// Every point of the input.
    Extent,
    /// The box `bbox = [xmin, ymin, xmax, ymax]`.
    Bbox,
    /// The convex hull of the zone outlines of the kinds `zone_kinds` (from `--zones`),
    /// grown by `buffer` metres.
    Zones,
}

/// Which zones of the diff stage shape the region (`scar`, `deposit`).
pub use talus_io::zones::ZoneKind;

/// What to keep of points sharing the same (x, y) within `duplicate_tolerance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Duplicates {
    /// The lowest point (ground under low vegetation or noise above).
    Lowest,
    /// The highest point.
    Highest,
    /// The mean of x, y and z.
    Mean,
}

/// How the TIN's vertices are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Simplify {
    /// Every (merged) point is a vertex.
    None,
    /// Greedy error-driven insertion, stopped by `max_vertices` and/or `max_error`.
    Greedy,
    /// One point per `grid_cell` square, or the smallest cell giving `max_vertices`.
    Grid,
}

/// Which ground surface the TIN carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// The post-event ground as surveyed (the thesis's terrain, §6.2). The deposit is part
    /// of it: blocks released from the scar meet the surveyed deposit as a mound.
    Post,
    /// The bed the collapse ran on: the post-event ground outside the diff's deposit zones
    /// and the pre-event ground inside them (deposit removed, scar kept), as rockfall and
    /// rock-avalanche back-analyses use. Needs the pre-event points (`--pre`) and the zones
    /// (`--zones`).
    Bed,
}

/// Options of `talus terrain`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// ASPRS classes triangulated (2 = ground); an empty list keeps every point.
    pub classes: Vec<u8>,
    /// Ground surface: `post` (as surveyed) or `bed` (deposit zones replaced by the
    /// pre-event ground).
    pub surface: Surface,
    /// Region of interest: `extent`, `bbox` or `zones`.
    pub region: Region,
    /// Bounding box `[xmin, ymin, xmax, ymax]`, m (required when `region = "bbox"`).
    pub bbox: Option<[f64; 4]>,
    /// Buffer around the convex hull of the zones, m (`region = "zones"`).
    pub buffer: f64,
    /// Zone kinds whose outlines shape the region (`region = "zones"`).
    pub zone_kinds: Vec<ZoneKind>,
    /// Policy for points with the same (x, y): `lowest`, `highest` or `mean`.
    pub duplicates: Duplicates,
    /// Points whose x and y round to the same multiple of this tolerance are duplicates, m.
    pub duplicate_tolerance: f64,
    /// Vertex selection: `none` (all points), `greedy` or `grid`.
    pub simplify: Simplify,
    /// Largest number of vertices (`greedy`, `grid`); none = no limit.
    pub max_vertices: Option<usize>,
    /// Largest vertical error of a left-out point, m (`greedy`); none = no limit.
    pub max_error: Option<f64>,
    /// Cell size of grid thinning, m (`grid`; if none, chosen from `max_vertices`).
    pub grid_cell: Option<f64>,
    /// Greedy insertion starts from the data's convex hull thinned by Douglas-Peucker
    /// with this tolerance, m: every point lies inside the mesh or within this distance
    /// of its edge.
    pub hull_tolerance: f64,
    /// Also write `terrain.obj` (Wavefront) beside `terrain.ply`.
    pub obj: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            classes: vec![2],
            surface: Surface::Post,
            region: Region::Extent,
            bbox: None,
            buffer: 150.0,
            zone_kinds: vec![ZoneKind::Scar, ZoneKind::Deposit],
            duplicates: Duplicates::Lowest,
            duplicate_tolerance: 0.001,
            simplify: Simplify::None,
            max_vertices: None,
            max_error: None,
            grid_cell: None,
            hull_tolerance: 1.0,
            obj: false,
        }
    }
}

impl Config {
    /// Check the options before any work.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if !(self.duplicate_tolerance > 0.0 && self.duplicate_tolerance.is_finite()) {
            return bad("duplicate_tolerance must be a positive length (m)");
        }
        if !(self.buffer >= 0.0 && self.buffer.is_finite()) {
            return bad("buffer must be >= 0 m");
        }
        if self.hull_tolerance.is_nan() || self.hull_tolerance < 0.0 {
            return bad("hull_tolerance must be >= 0 m");
        }
        match (self.region, self.bbox) {
            (Region::Bbox, None) => {
                return bad("region = \"bbox\" needs bbox = [xmin, ymin, xmax, ymax]");
            }
            (Region::Bbox, Some(b)) if !(b[0] < b[2] && b[1] < b[3]) => {
                return bad(
                    "bbox must be [xmin, ymin, xmax, ymax] with xmin < xmax and ymin < ymax",
                );
            }
            (Region::Zones, _) if self.zone_kinds.is_empty() => {
                return bad("region = \"zones\" needs zone_kinds");
            }
            _ => {}
        }
        if self.max_vertices.is_some_and(|n| n < 3) {
            return bad("max_vertices must be >= 3");
        }
        if self.max_error.is_some_and(|e| !(e >= 0.0 && e.is_finite())) {
            return bad("max_error must be >= 0 m");
        }
        if self.grid_cell.is_some_and(|c| !(c > 0.0 && c.is_finite())) {
            return bad("grid_cell must be > 0 m");
        }
        match self.simplify {
            Simplify::Greedy if self.max_vertices.is_none() && self.max_error.is_none() => {
                bad("simplify = \"greedy\" needs max_vertices and/or max_error")
            }
            Simplify::Grid if self.grid_cell.is_none() && self.max_vertices.is_none() => {
                bad("simplify = \"grid\" needs grid_cell or max_vertices")
            }
            _ => Ok(()),
        }
    }
}
