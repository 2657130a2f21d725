//! Point selection, applied in this order: classification, area of interest (bounding
//! box, polygon), thinning; then duplicates of earlier inputs ([`Duplicates`]).
//! With a ground filter the classification tested is the computed one (2 = ground, 1 =
//! not), so `classes = [2]` keeps the ground the filter found.
//!
//! Thinning counts only the points that passed the first two filters, in input order
//! across all inputs, so the result depends on the inputs and the configuration only:
//! * every n-th: keep the points whose rank r (0-based) satisfies r mod n = 0;
//! * grid: square cells of side s anchored at the CRS origin, cell (⌊x/s⌋, ⌊y/s⌋); one
//!   point per occupied cell, the one minimising the chosen key (first rank; lowest z;
//!   horizontal distance to the cell centre), ties going to the lower rank. This needs a
//!   first pass over the data that keeps one (key, rank) pair per occupied cell.

use crate::{BBox, Config, GridKeep, Thin};
use arrow::array::BooleanArray;
use std::collections::HashMap;
use talus_io::geo::Outline;

/// The area of interest: `bbox` and `polygon` (indexed once, `talus_io::geo::Outline`,
/// even-odd rule).
#[derive(Debug, Clone)]
pub struct Area {
    bbox: Option<BBox>,
    polygon: Option<Outline>,
}

impl Area {
    pub fn new(config: &Config) -> Self {
        let polygon = config.polygon.as_ref().map(|p| {
            let (lo, hi) = p.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v[1]), hi.max(v[1]))
            });
            // About 64 bands over the polygon's height.
            Outline::new(&[vec![p.clone()]], ((hi - lo) / 64.0).max(1e-3))
        });
        Area { bbox: config.bbox, polygon }
    }

    /// Whether every point is inside.
    pub fn is_everything(&self) -> bool {
        self.bbox.is_none() && self.polygon.is_none()
    }

    /// Whether a point is inside.
    #[inline]
    pub fn contains(&self, x: f64, y: f64, z: f64) -> bool {
        self.bbox.is_none_or(|b| b.contains(x, y, z))
            && self.polygon.as_ref().is_none_or(|o| o.contains(x, y, 0.0))
    }
}

/// Classification and area-of-interest test.
#[derive(Debug, Clone)]
pub struct Prefilter {
    classes: Option<Box<[bool; 256]>>,
    area: Area,
}

impl Prefilter {
    pub fn new(config: &Config) -> Self {
        let classes = (!config.classes.is_empty()).then(|| {
            let mut t = Box::new([false; 256]);
            for &c in &config.classes {
                t[usize::from(c)] = true;
            }
            t
        });
        Prefilter { classes, area: Area::new(config) }
    }

    /// Whether every point passes.
    pub fn is_trivial(&self) -> bool {
        self.classes.is_none() && self.area.is_everything()
    }

    #[inline]
    pub fn passes(&self, x: f64, y: f64, z: f64, class: u8) -> bool {
        if let Some(t) = &self.classes
            && !t[usize::from(class)]
        {
            return false;
        }
        self.area.contains(x, y, z)
    }
}

/// First pass of grid thinning: the winning rank of every occupied cell.
#[derive(Debug)]
pub struct GridPass {
    spacing: f64,
    keep: GridKeep,
    cells: HashMap<(i64, i64), (f64, u64)>,
}

impl GridPass {
    pub fn new(spacing: f64, keep: GridKeep) -> Self {
        GridPass { spacing, keep, cells: HashMap::new() }
    }

    /// Offer the point of the given rank (rank among points that passed the prefilter).
    pub fn offer(&mut self, rank: u64, x: f64, y: f64, z: f64) {
        let (cx, cy) = ((x / self.spacing).floor(), (y / self.spacing).floor());
        let key = match self.keep {
            GridKeep::First => 0.0,
            GridKeep::Lowest => z,
            GridKeep::ClosestToCentre => {
                let (dx, dy) = (x - (cx + 0.5) * self.spacing, y - (cy + 0.5) * self.spacing);
                dx * dx + dy * dy
            }
        };
        self.cells
            .entry((cx as i64, cy as i64))
            .and_modify(|best| {
                if key.total_cmp(&best.0).then(rank.cmp(&best.1)).is_lt() {
                    *best = (key, rank);
                }
            })
            .or_insert((key, rank));
    }

    /// The winning ranks, sorted.
    pub fn winners(self) -> Vec<u64> {
        let mut w: Vec<u64> = self.cells.into_values().map(|(_, r)| r).collect();
        w.sort_unstable();
        w
    }
}

/// The selection applied while writing.
#[derive(Debug)]
pub struct Selector {
    pre: Prefilter,
    thin: ThinState,
    /// Points that passed the prefilter so far (the rank of the next one).
    rank: u64,
}

#[derive(Debug)]
enum ThinState {
    None,
    Every(u64),
    Grid { winners: Vec<u64>, next: usize },
}

impl Selector {
    /// A selector; `winners` must be given (from a [`GridPass`]) for grid thinning.
    pub fn new(config: &Config, winners: Option<Vec<u64>>) -> Self {
        let thin = match (&config.thin, winners) {
            (Thin::Every { n }, _) if *n > 1 => ThinState::Every(*n),
            (Thin::Grid { .. }, Some(winners)) => ThinState::Grid { winners, next: 0 },
            _ => ThinState::None,
        };
        Selector { pre: Prefilter::new(config), thin, rank: 0 }
    }

    /// The mask of points to keep in a chunk (`None` when all are kept).
    pub fn mask(&mut self, x: &[f64], y: &[f64], z: &[f64], class: &[u8]) -> Option<BooleanArray> {
        if self.pre.is_trivial() && matches!(self.thin, ThinState::None) {
            self.rank += x.len() as u64;
            return None;
        }
        let mut keep = Vec::with_capacity(x.len());
        for i in 0..x.len() {
            if !self.pre.passes(x[i], y[i], z[i], class[i]) {
                keep.push(false);
                continue;
            }
            let r = self.rank;
            self.rank += 1;
            keep.push(match &mut self.thin {
                ThinState::None => true,
                ThinState::Every(n) => r.is_multiple_of(*n),
                ThinState::Grid { winners, next } => {
                    if winners.get(*next) == Some(&r) {
                        *next += 1;
                        true
                    } else {
                        false
                    }
                }
            });
        }
        Some(BooleanArray::from(keep))
    }
}

/// Drops the points of an input that repeat a point of an earlier input (overlapping
/// tiles). A point is remembered only if it lies inside the box of a later input, and
/// looked up only if it lies inside the box of an earlier one, so memory grows with the
/// overlaps. Points are equal when x, y, z agree to 1 mm and the GPS time to 1 µs.
#[derive(Debug, Default)]
pub struct Duplicates {
    /// Per input, its box `[xmin, ymin, xmax, ymax]` in output coordinates (grown by
    /// 1 mm).
    boxes: Vec<[f64; 4]>,
    seen: std::collections::HashSet<(i64, i64, i64, i64)>,
    /// Points dropped so far.
    pub dropped: u64,
}

impl Duplicates {
    pub fn new(boxes: Vec<[f64; 4]>) -> Self {
        Duplicates { boxes, ..Default::default() }
    }

    fn inside(b: &[f64; 4], x: f64, y: f64) -> bool {
        x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3]
    }

    /// Clear the entries of `keep` (all true when `None`) that repeat an earlier input's
    /// points, for a chunk of input `k`; returns the new mask (or `None`: nothing to do).
    pub fn mask(
        &mut self,
        k: usize,
        x: &[f64],
        y: &[f64],
        z: &[f64],
        time: Option<&[f64]>,
        keep: Option<BooleanArray>,
    ) -> Option<BooleanArray> {
        let earlier = &self.boxes[..k.min(self.boxes.len())];
        let later = self.boxes.get(k + 1..).unwrap_or(&[]);
        let (mine, earlier_overlap) = match self.boxes.get(k) {
            Some(b) => (*b, earlier.iter().any(|e| overlap(e, b))),
            None => return keep,
        };
        let later_overlap = later.iter().any(|l| overlap(l, &mine));
        if !earlier_overlap && !later_overlap {
            return keep;
        }
        let mut out: Vec<bool> = match &keep {
            Some(m) => m.iter().map(|v| v.unwrap_or(false)).collect(),
            None => vec![true; x.len()],
        };
        let q = |v: f64, s: f64| (v * s).round() as i64;
        for i in 0..x.len() {
            if !out[i] {
                continue;
            }
            let key = (q(x[i], 1e3), q(y[i], 1e3), q(z[i], 1e3), time.map_or(0, |t| q(t[i], 1e6)));
            if earlier_overlap
                && earlier.iter().any(|b| Self::inside(b, x[i], y[i]))
                && self.seen.contains(&key)
            {
                out[i] = false;
                self.dropped += 1;
                continue;
            }
            if later_overlap && later.iter().any(|b| Self::inside(b, x[i], y[i])) {
                self.seen.insert(key);
            }
        }
        Some(BooleanArray::from(out))
    }
}

fn overlap(a: &[f64; 4], b: &[f64; 4]) -> bool {
    a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3]
}
