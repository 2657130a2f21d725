//! The options of `talus seed` ([`Config`]) and their validation.

use crate::{Error, pack, positive};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Options of `talus seed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Block edges [a, b, c], m: upright, a horizontal across the cliff (along the
    /// azimuth), b horizontal along the cliff, c vertical (the long edge); on the scar's
    /// floor (`orientation`), a along its strike, b up its dip, c along its normal.
    /// Default: the thesis's 435-block case.
    pub size: [f64; 3],
    /// Further size classes [a, b, c] (m), placed after `size` in the space it leaves,
    /// in the order given (a block-size distribution).
    pub extra_sizes: Vec<[f64; 3]>,
    /// A block-size distribution instead of `size` and `extra_sizes` (which must then be
    /// left out): size classes, or a truncated power law of block volume. Classes are
    /// placed from the largest volume down, each in the space the larger ones leave, each
    /// up to its share of the volume to fill.
    pub sizes: Option<Sizes>,
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
    /// How blocks lie: `upright` (edge c vertical, edge a along `azimuth`; the thesis's
    /// seeding) or `scar_floor` (edges in the frame of the plane fitted to the post-event
    /// surface in the scar: a along its strike, b up its dip, c along its normal; every
    /// block wholly inside the void between the surfaces interpolated linearly between
    /// the DoD's cell centres, on cells of the DoD's cell / `subdivide`). `scar_floor`
    /// needs `min_inside = 1` and no `azimuth`.
    pub orientation: Orientation,
    /// Stacking: `columns` (one footprint layout, each column stacked from its own
    /// floor), `levels` (a layout per horizontal level of height c; also searches the
    /// levels' vertical offset) or `best` (both, keeping the one with more blocks).
    pub stacking: pack::Stacking,
    /// Edge c of the blocks: `fixed` (every block of a class is c thick) or `fit` (the
    /// blocks of a column share its height, each within `thickness_range`).
    pub thickness: pack::Thickness,
    /// With `thickness = "fit"`: the least and largest edge c of a block, as multiples of
    /// its class's c (default [1, 2]: never thinner than c). With the largest at least
    /// twice the least, every column at least the least high gets blocks.
    pub thickness_range: [f64; 2],
    /// Lattice positions per block edge searched for strips and columns (finer = fuller
    /// paving, slower).
    pub lattice: usize,
    /// Pave on DoD cells cut into this many parts per side (the surfaces unchanged): a
    /// column then takes only the sub-cells it covers, and smaller classes use the rest
    /// of the cells; 1 = the DoD's cells.
    pub subdivide: usize,
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
    /// Most blocks the sizes may place. Before any paving the stage bounds the count
    /// (each class's share of the volume to fill, or all of it, over the class's block
    /// volume, summed over the classes) and refuses sizes whose bound is larger: edges
    /// given in millimetres instead of metres would otherwise pave for hours or run out of
    /// memory. Raise it to seed more blocks on purpose.
    pub max_blocks: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            size: [10.935, 9.636, 15.775],
            extra_sizes: Vec::new(),
            sizes: None,
            target_count: None,
            density: 2700.0,
            azimuth: None,
            axis_snap: 10.0,
            orientation: Orientation::Upright,
            stacking: pack::Stacking::Best,
            thickness: pack::Thickness::Fixed,
            thickness_range: [1.0, 2.0],
            lattice: 12,
            subdivide: 1,
            gap: 0.0,
            clearance: 0.0,
            min_inside: 1.0,
            zone_ids: Vec::new(),
            max_crossing_fraction: 0.05,
            max_blocks: 200_000,
        }
    }
}

/// How seeded blocks lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Orientation {
    /// Edge c vertical, edge a along the azimuth.
    Upright,
    /// Edges along the strike, the dip and the normal of the scar's floor plane.
    ScarFloor,
}

/// A block-size distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "distribution", rename_all = "snake_case", deny_unknown_fields)]
pub enum Sizes {
    /// Size classes, each with the share of the volume to fill it may take.
    Classes {
        /// The classes (any order: they are placed from the largest volume down).
        classes: Vec<SizeClass>,
    },
    /// A truncated power law of block volume, N(> V) ∝ V^(−exponent) for
    /// `min_volume` ≤ V ≤ `max_volume` (the form fitted to rockfall inventories and
    /// deposits, e.g. Ruiz-Carulla, Corominas & Mavrouli 2015), cut into `classes`
    /// classes of equal log-width. A class holds the share of the volume
    /// ∫ V n(V) dV over its range, and its blocks have the class's geometric-mean
    /// volume and the shape `shape` (or, with `shapes`, each shape its fraction of that
    /// share).
    PowerLaw {
        /// Exponent b of the cumulative number N(> V) ∝ V^(−b), > 0 (b < 1: the volume
        /// is in the large blocks).
        exponent: f64,
        /// Smallest block volume, m³.
        min_volume: f64,
        /// Largest block volume, m³.
        max_volume: f64,
        /// Edge ratios a : b : c of every block (c vertical, or along the floor's normal
        /// with `orientation = "scar_floor"`), scaled to each class's volume. Give this
        /// or `shapes`.
        #[serde(default)]
        shape: Option<[f64; 3]>,
        /// A distribution of shapes instead of one `shape`: each volume class is split
        /// into one class per shape, holding `fraction` of the volume class's share
        /// (the fractions add up to 1), placed in the order given. At most 12 classes in
        /// all (`classes` × shapes).
        #[serde(default)]
        shapes: Vec<ShapeShare>,
        /// Number of volume classes, 1-12.
        classes: usize,
    },
}

/// One shape of [`Sizes::PowerLaw`]'s `shapes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShapeShare {
    /// Edge ratios a : b : c (as `shape`).
    pub ratio: [f64; 3],
    /// Share of each volume class's volume, 0-1.
    pub fraction: f64,
}

/// Most classes [`Sizes::PowerLaw`] may give (volume classes × shapes).
pub const MAX_CLASSES: usize = 12;

/// One size class of [`Sizes::Classes`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SizeClass {
    /// Edges [a, b, c], m (as `Config::size`).
    pub size: [f64; 3],
    /// Largest share of the volume to fill the class takes, 0-1; none: as many blocks as
    /// fit.
    #[serde(default)]
    pub volume_fraction: Option<f64>,
}

/// A class as seeded: its edges and its share of the volume to fill (none: no cap).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Class {
    pub size: [f64; 3],
    pub volume_fraction: Option<f64>,
}

impl Config {
    /// The size classes in placing order: `size` then `extra_sizes` as given, or the
    /// distribution's classes from the largest volume down.
    pub fn classes(&self) -> Vec<Class> {
        let vol = |s: &[f64; 3]| s[0] * s[1] * s[2];
        match &self.sizes {
            None => std::iter::once(self.size)
                .chain(self.extra_sizes.iter().copied())
                .map(|size| Class { size, volume_fraction: None })
                .collect(),
            Some(Sizes::Classes { classes }) => {
                let mut c: Vec<Class> = classes
                    .iter()
                    .map(|k| Class { size: k.size, volume_fraction: k.volume_fraction })
                    .collect();
                c.sort_by(|a, b| vol(&b.size).total_cmp(&vol(&a.size)));
                c
            }
            Some(Sizes::PowerLaw { exponent, min_volume, max_volume, shape, shapes, classes }) => {
                let k = (*classes).max(1);
                let b = *exponent;
                let ratio = (max_volume / min_volume).powf(1.0 / k as f64);
                // Share of the volume in [v0, v1]: ∫ V^(−b) dV (V n(V) ∝ V^(−b)).
                let mass = |v0: f64, v1: f64| {
                    if (b - 1.0).abs() < 1e-12 {
                        (v1 / v0).ln()
                    } else {
                        (v1.powf(1.0 - b) - v0.powf(1.0 - b)) / (1.0 - b)
                    }
                };
                let total = mass(*min_volume, *max_volume);
                let mix: Vec<([f64; 3], f64)> = match shape {
                    Some(shape) => vec![(*shape, 1.0)],
                    None => shapes.iter().map(|s| (s.ratio, s.fraction)).collect(),
                };
                (0..k)
                    .rev()
                    .flat_map(|i| {
                        let v0 = min_volume * ratio.powi(i as i32);
                        let v1 = v0 * ratio;
                        let v = (v0 * v1).sqrt();
                        let share = mass(v0, v1) / total;
                        mix.iter().map(move |(shape, fraction)| {
                            let s = (v / shape.iter().product::<f64>()).cbrt();
                            Class {
                                size: [shape[0] * s, shape[1] * s, shape[2] * s],
                                volume_fraction: Some(share * fraction),
                            }
                        })
                    })
                    .collect()
            }
        }
    }

    /// An upper bound on the number of blocks the classes can place in `volume` m³ to
    /// fill. A block holds at least its class's volume v (times the least thickness
    /// multiple with `thickness = "fit"`), at least `min_inside` of it inside the volume
    /// (as the paving measures it, over the cells under the block) and disjoint from the
    /// others; a class with a share stops within half a block of
    /// it (one block is allowed here). So a class with a share places at most
    /// (share × volume + v) / v_least blocks, one without volume / (min_inside × v_least).
    /// Infinite when a block's volume underflows to 0.
    pub fn block_bound(&self, volume: f64) -> f64 {
        let thinnest = match self.thickness {
            pack::Thickness::Fixed => 1.0,
            pack::Thickness::Fit => self.thickness_range[0],
        };
        self.classes()
            .iter()
            .map(|c| {
                let v = c.size.iter().product::<f64>();
                match c.volume_fraction {
                    Some(f) => ((f * volume + v) / (thinnest * v)).floor(),
                    None => (volume / (self.min_inside * thinnest * v)).floor(),
                }
            })
            .sum()
    }

    /// Check the options before any work.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        for s in std::iter::once(&self.size).chain(&self.extra_sizes) {
            if !s.iter().all(|&e| positive(e)) {
                return bad(format!("block size {s:?} m: every edge must be > 0"));
            }
        }
        if let Some(sizes) = &self.sizes {
            if !self.extra_sizes.is_empty() || self.size != Config::default().size {
                return bad("set either `size`/`extra_sizes` or `sizes`, not both".into());
            }
            match sizes {
                Sizes::Classes { classes } => {
                    if classes.is_empty() {
                        return bad("sizes.classes needs at least one class".into());
                    }
                    let mut sum = 0.0;
                    for c in classes {
                        if !c.size.iter().all(|&e| positive(e)) {
                            return bad(format!(
                                "sizes.classes: size {:?} m: every edge must be > 0",
                                c.size
                            ));
                        }
                        if let Some(f) = c.volume_fraction {
                            if !(f > 0.0 && f <= 1.0) {
                                return bad(format!(
                                    "sizes.classes: volume_fraction {f} must be in (0, 1]"
                                ));
                            }
                            sum += f;
                        }
                    }
                    if sum > 1.0 + 1e-9 {
                        return bad(format!(
                            "sizes.classes: the volume fractions add up to {sum}, more than 1"
                        ));
                    }
                }
                Sizes::PowerLaw { exponent, min_volume, max_volume, shape, shapes, classes } => {
                    if !positive(*exponent) {
                        return bad(format!("sizes.exponent = {exponent} must be > 0"));
                    }
                    if !(positive(*min_volume) && max_volume.is_finite() && max_volume > min_volume)
                    {
                        return bad(format!(
                            "sizes: need 0 < min_volume < max_volume, got {min_volume} and {max_volume} m³"
                        ));
                    }
                    match (shape, shapes.is_empty()) {
                        (Some(_), false) => {
                            return bad("sizes: give shape or shapes, not both".into());
                        }
                        (None, true) => {
                            return bad("sizes: power_law needs shape = [a, b, c] or shapes = [{ ratio = [a, b, c], fraction = f }, ...]".into());
                        }
                        _ => {}
                    }
                    let ratios = shape.iter().chain(shapes.iter().map(|s| &s.ratio));
                    for r in ratios {
                        if !r.iter().all(|&e| positive(e)) {
                            return bad(format!("sizes.shape {r:?}: every ratio must be > 0"));
                        }
                    }
                    if !shapes.is_empty() {
                        let sum: f64 = shapes.iter().map(|s| s.fraction).sum();
                        if !shapes.iter().all(|s| s.fraction > 0.0 && s.fraction <= 1.0)
                            || (sum - 1.0).abs() > 1e-9
                        {
                            return bad(format!(
                                "sizes.shapes: each fraction must be in (0, 1] and they must add up to 1 (they add up to {sum})"
                            ));
                        }
                    }
                    if !(1..=MAX_CLASSES).contains(classes) {
                        return bad(format!(
                            "sizes.classes = {classes} must be in 1..={MAX_CLASSES}"
                        ));
                    }
                    let all = classes * shapes.len().max(1);
                    if all > MAX_CLASSES {
                        return bad(format!(
                            "sizes: {classes} volume classes × {} shapes = {all} classes, more than {MAX_CLASSES}",
                            shapes.len()
                        ));
                    }
                }
            }
        }
        let [lo, hi] = self.thickness_range;
        if !(positive(lo) && hi.is_finite() && hi >= lo) {
            return bad(format!(
                "thickness_range = [{lo}, {hi}]: need 0 < least <= largest (multiples of c)"
            ));
        }
        if self.thickness == pack::Thickness::Fit && self.min_inside < 1.0 {
            return bad(format!(
                "thickness = \"fit\" fills each column to the pre-event surface: min_inside = {} must be 1",
                self.min_inside
            ));
        }
        if !positive(self.density) {
            return bad(format!("density {} kg/m³ must be > 0", self.density));
        }
        if self.target_count == Some(0) {
            return bad("target_count must be >= 1".into());
        }
        if self.max_blocks == 0 {
            return bad("max_blocks must be >= 1".into());
        }
        if let Some(t) = self.target_count.filter(|&t| t > self.max_blocks) {
            return bad(format!(
                "target_count = {t} is more than max_blocks = {} (raise max_blocks to seed that many)",
                self.max_blocks
            ));
        }
        if !(1..=16).contains(&self.subdivide) {
            return bad(format!("subdivide = {} must be in 1..=16", self.subdivide));
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
        if self.orientation == Orientation::ScarFloor {
            if self.min_inside < 1.0 {
                return bad(format!(
                    "orientation = \"scar_floor\" seeds every block wholly inside the void: min_inside = {} must be 1",
                    self.min_inside
                ));
            }
            if self.azimuth.is_some() {
                return bad(
                    "orientation = \"scar_floor\" lays edge a along the floor's strike: leave `azimuth` out"
                        .into(),
                );
            }
        }
        if !(0.0..=1.0).contains(&self.max_crossing_fraction) {
            return bad("max_crossing_fraction must be in [0, 1]".into());
        }
        Ok(())
    }
}
