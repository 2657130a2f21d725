//! Broad phase: axis-aligned bounding boxes and a uniform grid, rebuilt at every call.
//!
//! Each active block is put in the grid cell of its centre. The cell edge is the diameter
//! of the largest block's bounding sphere plus the margin, so two blocks whose inflated
//! boxes overlap have centres in the same or adjacent cells: each block only looks at
//! its 27 neighbouring cells. Cells are found by sorting the packed cell keys (no hash
//! map, no order-dependent iteration), so the cost is O(N log N) with a tiny constant
//! for the sort and O(N) for the rest. Pairs come out as (i, j), i < j, each once,
//! ascending.

use nalgebra::Vector3;
use rayon::prelude::*;

use crate::body::Block;

/// An axis-aligned box (world), m.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aabb {
    pub min: Vector3<f64>,
    pub max: Vector3<f64>,
}

impl Aabb {
    /// Whether the two boxes meet (closed).
    pub fn overlaps(&self, o: &Aabb) -> bool {
        self.min.x <= o.max.x
            && o.min.x <= self.max.x
            && self.min.y <= o.max.y
            && o.min.y <= self.max.y
            && self.min.z <= o.max.z
            && o.min.z <= self.max.z
    }

    /// The box grown by `d` on every side.
    pub fn inflated(&self, d: f64) -> Aabb {
        let v = Vector3::repeat(d);
        Aabb { min: self.min - v, max: self.max + v }
    }

    /// Whether every coordinate is finite.
    pub fn is_finite(&self) -> bool {
        self.min.iter().chain(self.max.iter()).all(|c| c.is_finite())
    }
}

/// The exact bounding box of a block: centre ± |R| h, grown by `margin` on every side.
pub fn block_aabb(b: &Block, margin: f64) -> Aabb {
    let r = b.rot.to_rotation_matrix();
    let ext = r.matrix().abs() * b.half + Vector3::repeat(margin);
    Aabb { min: b.pos - ext, max: b.pos + ext }
}

/// Bits per axis in a packed cell key.
const BITS: u32 = 21;

/// Candidate pairs (i, j), i < j, of active blocks whose bounding boxes, each grown by
/// `margin`, overlap. With `margin` = tolerance / 2 these are all the pairs that can be
/// closer than the tolerance. Blocks with a non-finite state are skipped.
pub fn candidate_pairs(blocks: &[Block], margin: f64) -> Vec<(usize, usize)> {
    let aabbs: Vec<Option<Aabb>> = blocks
        .par_iter()
        .map(|b| {
            let a = block_aabb(b, margin);
            (b.active && a.is_finite()).then_some(a)
        })
        .collect();
    pairs_from_aabbs(&aabbs)
}

/// Overlapping pairs (i, j), i < j, among the boxes that are `Some`, by a uniform grid
/// with the cell edge = the largest box's longest extent.
pub fn pairs_from_aabbs(aabbs: &[Option<Aabb>]) -> Vec<(usize, usize)> {
    let live: Vec<usize> = (0..aabbs.len()).filter(|&k| aabbs[k].is_some()).collect();
    if live.len() < 2 {
        return Vec::new();
    }
    let mut lo = Vector3::repeat(f64::INFINITY);
    let mut hi = Vector3::repeat(f64::NEG_INFINITY);
    let mut size: f64 = 0.0;
    for &k in &live {
        let a = aabbs[k].as_ref().unwrap();
        let c = (a.min + a.max) / 2.0;
        lo = lo.inf(&c);
        hi = hi.sup(&c);
        size = size.max((a.max - a.min).max());
    }
    // Centres of overlapping boxes differ by at most `size` on each axis.
    let span = (hi - lo).max();
    let limit = ((1u64 << BITS) - 3) as f64;
    let cell = (size * (1.0 + 1e-9)).max(span / limit).max(f64::MIN_POSITIVE);
    let coords = |a: &Aabb| -> [u64; 3] {
        let c = (a.min + a.max) / 2.0;
        // +1 so that the neighbours −1 of the lowest cell stay representable.
        std::array::from_fn(|d| (((c[d] - lo[d]) / cell).floor().clamp(0.0, limit) as u64) + 1)
    };
    let pack = |q: [u64; 3]| (q[0] << (2 * BITS)) | (q[1] << BITS) | q[2];
    let mut keyed: Vec<(u64, usize)> =
        live.iter().map(|&k| (pack(coords(aabbs[k].as_ref().unwrap())), k)).collect();
    keyed.sort_unstable();
    let keys: Vec<u64> = keyed.iter().map(|e| e.0).collect();

    let per_block: Vec<Vec<(usize, usize)>> = live
        .par_iter()
        .map(|&i| {
            let a = aabbs[i].as_ref().unwrap();
            let q = coords(a);
            let mut out = Vec::new();
            for dx in 0..3u64 {
                for dy in 0..3u64 {
                    let base = [q[0] + dx - 1, q[1] + dy - 1];
                    // Cells (x, y, z−1..=z+1) are contiguous in key order.
                    let k0 = pack([base[0], base[1], q[2] - 1]);
                    let k1 = pack([base[0], base[1], q[2] + 1]);
                    let s = keys.partition_point(|&k| k < k0);
                    let e = keys.partition_point(|&k| k <= k1);
                    for &(_, j) in &keyed[s..e] {
                        if j > i && a.overlaps(aabbs[j].as_ref().unwrap()) {
                            out.push((i, j));
                        }
                    }
                }
            }
            out.sort_unstable();
            out
        })
        .collect();
    per_block.into_iter().flatten().collect()
}

/// Reference O(N²) version of [`pairs_from_aabbs`] (tests and benchmarks).
pub fn pairs_brute_force(aabbs: &[Option<Aabb>]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for i in 0..aabbs.len() {
        let Some(a) = &aabbs[i] else { continue };
        for (j, b) in aabbs.iter().enumerate().skip(i + 1) {
            if let Some(b) = b
                && a.overlaps(b)
            {
                out.push((i, j));
            }
        }
    }
    out
}
