//! Broad phase: axis-aligned bounding boxes and a uniform grid, rebuilt at every call.
//!
//! Each active block is put in the grid cell of its centre. The cell edge is the diameter
//! of the largest block's bounding sphere plus the margin, so two blocks whose inflated
//! boxes overlap have centres in the same or adjacent cells: each block only looks at
//! its 27 neighbouring cells. For compact scenes (heaps: at most 8 cells per block over
//! the centres' extent) the grid is a dense array of cells filled by a counting sort, O(N);
//! for sparse scenes the packed cell keys are sorted instead, O(N log N) with a tiny
//! constant (no hash map, no order-dependent iteration either way). Pairs come out as
//! (i, j), i < j, each once, ascending, whatever the layout and the number of threads.

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

/// The dense grid is used when it has at most this many cells per box.
const DENSE_CELLS_PER_BOX: usize = 8;

/// Boxes handled by one parallel task (one output buffer per task).
const CHUNK: usize = 512;

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

/// The occupied cells: box indices grouped by cell, ascending within a cell.
enum Grid {
    /// Every cell of the grid: boxes of cell k are `order[start[k]..start[k + 1]]`.
    Dense { dims: [u64; 3], start: Vec<u32>, order: Vec<u32> },
    /// (packed cell key, box) sorted.
    Sorted { keyed: Vec<(u64, usize)>, keys: Vec<u64> },
}

fn pack(c: [u64; 3]) -> u64 {
    (c[0] << (2 * BITS)) | (c[1] << BITS) | c[2]
}

impl Grid {
    fn new(live: &[usize], q: &[[u64; 3]]) -> Grid {
        // Grid dimensions with a free layer of cells on each side.
        let mut dims = [0u64; 3];
        for c in q {
            for d in 0..3 {
                dims[d] = dims[d].max(c[d] + 2);
            }
        }
        let cells = dims.iter().fold(1u128, |a, &d| a * d as u128);
        if cells <= (DENSE_CELLS_PER_BOX * live.len()) as u128 && live.len() < u32::MAX as usize {
            // Counting sort by cell; boxes stay ascending within a cell.
            let ncell = cells as usize;
            let index = |c: &[u64; 3]| ((c[0] * dims[1] + c[1]) * dims[2] + c[2]) as usize;
            let mut start = vec![0u32; ncell + 1];
            for c in q {
                start[index(c) + 1] += 1;
            }
            for k in 0..ncell {
                start[k + 1] += start[k];
            }
            let mut fill: Vec<u32> = start[..ncell].to_vec();
            let mut order = vec![0u32; live.len()];
            for (&b, c) in live.iter().zip(q) {
                let s = &mut fill[index(c)];
                order[*s as usize] = b as u32;
                *s += 1;
            }
            Grid::Dense { dims, start, order }
        } else {
            let mut keyed: Vec<(u64, usize)> =
                live.iter().zip(q).map(|(&b, c)| (pack(*c), b)).collect();
            keyed.sort_unstable();
            let keys = keyed.iter().map(|e| e.0).collect();
            Grid::Sorted { keyed, keys }
        }
    }

    /// Calls `f` on every box in the 27 cells around cell `c`.
    fn neighbours(&self, c: &[u64; 3], mut f: impl FnMut(usize)) {
        for dx in 0..3u64 {
            for dy in 0..3u64 {
                let (x, y) = (c[0] + dx - 1, c[1] + dy - 1);
                // Cells (x, y, z−1..=z+1) are contiguous in both layouts.
                match self {
                    Grid::Dense { dims, start, order } => {
                        let k0 = ((x * dims[1] + y) * dims[2] + c[2] - 1) as usize;
                        for &j in &order[start[k0] as usize..start[k0 + 3] as usize] {
                            f(j as usize);
                        }
                    }
                    Grid::Sorted { keyed, keys } => {
                        let (k0, k1) = (pack([x, y, c[2] - 1]), pack([x, y, c[2] + 1]));
                        let s = keys.partition_point(|&k| k < k0);
                        let e = keys.partition_point(|&k| k <= k1);
                        for &(_, j) in &keyed[s..e] {
                            f(j);
                        }
                    }
                }
            }
        }
    }
}

/// Overlapping pairs (i, j), i < j, among the boxes that are `Some`, by a uniform grid
/// with the cell edge = the largest box's longest extent: two overlapping boxes have
/// their centres in the same or adjacent cells, so each box only looks at 27 cells.
///
/// When the grid over the centres' extent has at most [`DENSE_CELLS_PER_BOX`] cells per box
/// (heaps, piles) the cells are a dense array filled by a counting sort: O(N + cells).
/// Otherwise (sparse scenes) the packed cell keys are sorted and the runs of cells found by
/// binary search. Either way the output is the same: ascending (i, j), each pair once.
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
    let q: Vec<[u64; 3]> = live
        .iter()
        .map(|&k| {
            let a = aabbs[k].as_ref().unwrap();
            let c = (a.min + a.max) / 2.0;
            // +1 so that the neighbours −1 of the lowest cell stay representable.
            std::array::from_fn(|d| (((c[d] - lo[d]) / cell).floor().clamp(0.0, limit) as u64) + 1)
        })
        .collect();
    let grid = Grid::new(&live, &q);
    let chunks: Vec<Vec<(usize, usize)>> = live
        .par_chunks(CHUNK)
        .zip(q.par_chunks(CHUNK))
        .map(|(ls, qs)| {
            let mut out = Vec::new();
            for (&i, c) in ls.iter().zip(qs) {
                let a = aabbs[i].as_ref().unwrap();
                let first = out.len();
                grid.neighbours(c, |j| {
                    if j > i && a.overlaps(aabbs[j].as_ref().unwrap()) {
                        out.push((i, j));
                    }
                });
                out[first..].sort_unstable();
            }
            out
        })
        .collect();
    chunks.concat()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Boxes of a jittered lattice (neighbours overlap), with a few missing.
    fn lattice(n: usize) -> Vec<Option<Aabb>> {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|k| {
                let c = Vector3::new((k % 12) as f64, ((k / 12) % 12) as f64, (k / 144) as f64)
                    * 0.9
                    + Vector3::new(rnd(), rnd(), rnd()) * 0.1;
                let h = Vector3::new(0.3 + 0.2 * rnd(), 0.3 + 0.2 * rnd(), 0.3 + 0.2 * rnd());
                (k % 17 != 0).then_some(Aabb { min: c - h, max: c + h })
            })
            .collect()
    }

    /// The dense grid (compact pile) and the sorted keys (the same pile with one box far
    /// away, which makes the dense grid too large) both give exactly the brute-force pairs.
    #[test]
    fn dense_and_sorted_grids_find_the_brute_force_pairs() {
        let mut boxes = lattice(1000);
        let pairs = pairs_from_aabbs(&boxes);
        assert!(pairs.len() > 300, "{}", pairs.len());
        assert_eq!(pairs, pairs_brute_force(&boxes));
        let far = Vector3::new(1e4, -3e3, 50.0);
        boxes.push(Some(Aabb { min: far, max: far + Vector3::repeat(0.4) }));
        let (live, q) = (vec![0usize, 1], vec![[1u64, 1, 1], [1 << 20, 1, 1]]);
        assert!(matches!(Grid::new(&live, &q), Grid::Sorted { .. }));
        let sparse = pairs_from_aabbs(&boxes);
        assert_eq!(sparse, pairs);
        assert_eq!(sparse, pairs_brute_force(&boxes));
    }
}
