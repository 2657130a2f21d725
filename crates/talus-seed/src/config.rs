//! The options of `talus seed` ([`Config`]) and their validation.

use crate::{Error, pack, positive};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Options of `talus seed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Block edges [a, b, c], m: a horizontal across the cliff (along the azimuth), b
    /// horizontal along the cliff, c vertical (the long edge). Default: the thesis's
    /// 435-block case.
    pub size: [f64; 3],
    /// Further size classes [a, b, c] (m), placed after `size` in the space it leaves,
    /// in the order given (a block-size distribution).
    pub extra_sizes: Vec<[f64; 3]>,
    /// Target number of blocks: when set, every size is scaled by one factor (shapes
    /// kept) chosen so the count is as close as possible to the target.
    pub target_count: Option<usize>,
    /// Rock density, kg/m³.
    pub density: f64,
    /// Direction of edge a, degrees counter-clockwise from east; none = the direction
    /// the post-event surface faces inside the scar.
    pub azimuth: Option<f64>,
    /// With `azimuth` none: when the facing direction is within this many degrees of a
    /// grid axis, the paving along that axis is also tried and the one seeding more
    /// volume is kept (a void's walls on cell-constant columns are cell edges, so a
    /// paving rotated by a fraction of a degree loses a row along each of them); 0 = never.
    pub axis_snap: f64,
    /// Stacking: `columns` (one footprint layout, each column stacked from its own
    /// floor), `levels` (a layout per horizontal level of height c; also searches the
    /// levels' vertical offset) or `best` (both, keeping the one with more blocks).
    pub stacking: pack::Stacking,
    /// Lattice positions per block edge searched for strips and columns (finer = fuller
    /// paving, slower).
    pub lattice: usize,
    /// Free space between neighbouring blocks, m.
    pub gap: f64,
    /// Free space between the post-event surface (the DoD's, and the terrain TIN's when
    /// one is given) and the lowest block of a column, m.
    pub clearance: f64,
    /// Least fraction of each block's volume that must lie below the pre-event surface
    /// (over the grid cells its footprint touches, each weighted equally), 0-1. 1 (the
    /// default): every block wholly inside the void. Below 1, a block may rise above the
    /// pre-event surface by the rest, so a thin or steep void holds more of its volume as
    /// blocks; blocks never reach below the post-event surface or into the terrain TIN.
    pub min_inside: f64,
    /// Scar zones to fill (zone_id); empty = every zone of kind `scar`.
    pub zone_ids: Vec<i32>,
    /// Largest fraction of scar cells where the post-event surface may lie above the
    /// pre-event one (those cells are counted as empty and reported); above it the
    /// surfaces are taken as inconsistent and the stage fails.
    pub max_crossing_fraction: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            size: [10.935, 9.636, 15.775],
            extra_sizes: Vec::new(),
            target_count: None,
            density: 2700.0,
            azimuth: None,
            axis_snap: 10.0,
            stacking: pack::Stacking::Best,
            lattice: 12,
            gap: 0.0,
            clearance: 0.0,
            min_inside: 1.0,
            zone_ids: Vec::new(),
            max_crossing_fraction: 0.05,
        }
    }
}

impl Config {
    /// Check the options before any work.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        for s in std::iter::once(&self.size).chain(&self.extra_sizes) {
            if !s.iter().all(|&e| positive(e)) {
                return bad(format!("block size {s:?} m: every edge must be > 0"));
            }
        }
        if !positive(self.density) {
            return bad(format!("density {} kg/m³ must be > 0", self.density));
        }
        if self.target_count == Some(0) {
            return bad("target_count must be >= 1".into());
        }
        if self.lattice == 0 || self.lattice > 256 {
            return bad("lattice must be in 1..=256".into());
        }
        if !(self.gap >= 0.0
            && self.gap.is_finite()
            && self.clearance >= 0.0
            && self.clearance.is_finite())
        {
            return bad("gap and clearance must be >= 0 m".into());
        }
        if self.azimuth.is_some_and(|a| !a.is_finite()) {
            return bad("azimuth must be finite".into());
        }
        if !(0.0..=45.0).contains(&self.axis_snap) {
            return bad(format!("axis_snap = {}° must be in [0, 45]", self.axis_snap));
        }
        if !(self.min_inside > 0.0 && self.min_inside <= 1.0) {
            return bad(format!("min_inside = {} must be in (0, 1]", self.min_inside));
        }
        if !(0.0..=1.0).contains(&self.max_crossing_fraction) {
            return bad("max_crossing_fraction must be in [0, 1]".into());
        }
        Ok(())
    }
}
