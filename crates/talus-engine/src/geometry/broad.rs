//! Broad phase: axis-aligned bounding boxes and a uniform grid, rebuilt at every call.
//!
//! Each active block is put in the grid cell of its centre. The cell edge is the longest
//! extent of the largest inflated box, so two blocks whose inflated boxes overlap have
//! centres in the same or adjacent cells: each block is tested against the later blocks of
//! its own cell and the blocks of 13 of its 26 neighbouring cells (one of every two
//! opposite ones), so that each two neighbouring blocks are tested once. For compact
//! scenes (heaps: at most 8 cells per block over the centres' extent) the grid is a dense
//! array of cells filled by a counting sort, O(N); for sparse scenes the packed cell keys
//! are sorted instead, O(N log N) with a tiny constant (no hash map, no order-dependent
//! iteration either way). Pairs come out as (i, j), i < j, each once, ascending, whatever
//! the layout and the number of threads.

use std::ops::Range;

use nalgebra::Vector3;
use rayon::prelude::*;

use crate::body::Block;
use crate::counting_sort::by_key;
use crate::geometry::colliders::TinCollider;

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

    /// Whether `o` lies inside this box (closed).
    pub fn contains(&self, o: &Aabb) -> bool {
        self.min.x <= o.min.x
            && self.min.y <= o.min.y
            && self.min.z <= o.min.z
            && o.max.x <= self.max.x
            && o.max.y <= self.max.y
            && o.max.z <= self.max.z
    }

    /// The lowest and highest corners as arrays.
    pub fn corners(&self) -> ([f64; 3], [f64; 3]) {
        (self.min.into(), self.max.into())
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
    pairs_from_aabbs(&live_aabbs(blocks, margin))
}

/// The bounding boxes of [`candidate_pairs`]: `None` for inactive blocks and blocks with a
/// non-finite state.
pub fn live_aabbs(blocks: &[Block], margin: f64) -> Vec<Option<Aabb>> {
    blocks
        .par_iter()
        .map(|b| {
            let a = block_aabb(b, margin);
            (b.active && a.is_finite()).then_some(a)
        })
        .collect()
}

/// The skin of a [`BroadCache`]'s boxes as a fraction of the smallest extent: of the
/// smallest live box for the pairs, of each block's box for its triangles.
const SKIN_FRACTION: f64 = 0.5;

/// What the broad phase keeps from one detection to the next: the candidate pairs (below)
/// and each block's candidate triangles of the TIN (used by the contact detection, kept
/// for the block's box grown by a skin, and valid while the block's box stays inside it).
///
/// The candidate pairs are a Verlet list: the pairs of the boxes
/// grown by a skin when the list was made. While every box stays inside its grown box, two
/// boxes that overlap have grown boxes that overlap, so the pairs that overlap now are
/// those of the list that overlap: [`candidate_pairs`]'s answer, in its order, with no
/// grid. A box that leaves its grown box (or a box that appears) makes the list again.
/// The answer never depends on when the list was made.
#[derive(Debug, Clone, Default)]
pub struct BroadCache {
    /// Each box grown by the skin when the list was made (`None`: not live then).
    grown: Vec<Option<Aabb>>,
    /// The overlapping pairs of `grown`, ascending.
    pairs: Vec<(usize, usize)>,
    /// How many calls made the list (for tests and benches).
    pub builds: u64,
    /// Each block's box grown by the skin and the TIN's triangles near it
    /// ([`TinCollider::query_near`]).
    tris: Vec<Option<(Aabb, Vec<u32>)>>,
}

impl BroadCache {
    /// [`candidate_pairs`]`(blocks, margin)`, from the kept list when it still holds.
    pub fn candidate_pairs(&mut self, blocks: &[Block], margin: f64) -> Vec<(usize, usize)> {
        let aabbs = live_aabbs(blocks, margin);
        let holds = self.grown.len() == aabbs.len()
            && aabbs.par_iter().zip(&self.grown).with_min_len(CHUNK).all(|(a, g)| match (a, g) {
                (None, _) => true,
                (Some(a), Some(g)) => g.contains(a),
                (Some(_), None) => false,
            });
        if !holds {
            let smallest =
                aabbs.iter().flatten().map(|a| (a.max - a.min).min()).fold(f64::INFINITY, f64::min);
            let skin = if smallest.is_finite() { SKIN_FRACTION * smallest } else { 0.0 };
            self.grown = aabbs.iter().map(|a| a.map(|a| a.inflated(skin))).collect();
            self.pairs = pairs_from_aabbs(&self.grown);
            self.builds += 1;
        }
        // In parallel, in the list's order.
        self.pairs
            .par_iter()
            .with_min_len(8 * CHUNK)
            .copied()
            .filter(|&(i, j)| match (&aabbs[i], &aabbs[j]) {
                (Some(a), Some(b)) => a.overlaps(b),
                _ => false,
            })
            .collect()
    }

    /// For each block, the TIN's triangles that [`TinCollider::query_near`] gives for its
    /// box grown by `tol` (empty where `wanted` is false), from the triangles kept for the
    /// block's box grown by a skin while its box stays inside that one.
    pub fn near_triangles(
        &mut self,
        blocks: &[Block],
        tin: &TinCollider,
        tol: f64,
        wanted: impl Fn(usize, &Block) -> bool + Sync,
    ) -> Vec<Vec<u32>> {
        self.tris.resize(blocks.len(), None);
        blocks
            .par_iter()
            .zip(self.tris.par_iter_mut())
            .enumerate()
            .map(|(i, (b, kept))| {
                let mut out = Vec::new();
                if wanted(i, b) {
                    let a = block_aabb(b, tol);
                    if !kept.as_ref().is_some_and(|(grown, _)| grown.contains(&a)) {
                        let grown = a.inflated(SKIN_FRACTION * (a.max - a.min).min());
                        let (lo, hi) = grown.corners();
                        let mut near = Vec::new();
                        tin.query_near(lo, hi, tol, &mut near);
                        *kept = Some((grown, near));
                    }
                    let (lo, hi) = a.corners();
                    let near = &kept.as_ref().expect("kept above").1;
                    tin.query_near_within(near, lo, hi, tol, &mut out);
                }
                out
            })
            .collect()
    }
}

/// The occupied cells: box indices grouped by cell, ascending within a cell, with their
/// boxes' bounds in the same order (one array per bound, so that the overlap tests of a run
/// of cells read contiguous memory).
struct Grid {
    cells: Cells,
    /// Box index of every entry.
    index: Vec<u32>,
    /// Cell of every entry.
    cell: Vec<[u64; 3]>,
    /// min x, min y, min z, max x, max y, max z of every entry's box.
    bounds: [Vec<f64>; 6],
}

/// How the entries are grouped by cell.
enum Cells {
    /// Every cell of the grid: the entries of cell k are `start[k]..start[k + 1]`.
    Dense { dims: [u64; 3], start: Vec<u32> },
    /// The entries' packed cell keys, ascending.
    Sorted { keys: Vec<u64> },
}

fn pack(c: [u64; 3]) -> u64 {
    (c[0] << (2 * BITS)) | (c[1] << BITS) | c[2]
}

impl Grid {
    fn new(live: &[usize], q: &[[u64; 3]], aabbs: &[Option<Aabb>]) -> Grid {
        assert!(live.len() < u32::MAX as usize, "broad phase: too many boxes");
        // Grid dimensions with a free layer of cells on each side.
        let mut dims = [0u64; 3];
        for c in q {
            for d in 0..3 {
                dims[d] = dims[d].max(c[d] + 2);
            }
        }
        let cells = dims.iter().fold(1u128, |a, &d| a * d as u128);
        let (cells, index, cell) = if cells <= (DENSE_CELLS_PER_BOX * live.len()) as u128 {
            // Counting sort by cell; boxes stay ascending within a cell.
            let ncell = cells as usize;
            let at = |c: &[u64; 3]| ((c[0] * dims[1] + c[1]) * dims[2] + c[2]) as usize;
            let mut start = vec![0u32; ncell + 1];
            for c in q {
                start[at(c) + 1] += 1;
            }
            for k in 0..ncell {
                start[k + 1] += start[k];
            }
            let mut fill: Vec<u32> = start[..ncell].to_vec();
            let mut index = vec![0u32; live.len()];
            let mut cell = vec![[0u64; 3]; live.len()];
            for (&b, c) in live.iter().zip(q) {
                let s = &mut fill[at(c)];
                index[*s as usize] = b as u32;
                cell[*s as usize] = *c;
                *s += 1;
            }
            (Cells::Dense { dims, start }, index, cell)
        } else {
            let mut keyed: Vec<(u64, u32, [u64; 3])> =
                live.iter().zip(q).map(|(&b, c)| (pack(*c), b as u32, *c)).collect();
            keyed.sort_unstable();
            let keys = keyed.iter().map(|e| e.0).collect();
            let index = keyed.iter().map(|e| e.1).collect();
            (Cells::Sorted { keys }, index, keyed.iter().map(|e| e.2).collect())
        };
        let bounds = std::array::from_fn(|d| {
            index
                .iter()
                .map(|&b| {
                    let a = aabbs[b as usize].as_ref().expect("broad phase: a live box");
                    if d < 3 { a.min[d] } else { a.max[d - 3] }
                })
                .collect()
        });
        Grid { cells, index, cell, bounds }
    }

    /// The entries of the cells `x, y, z0..=z1` (contiguous in both layouts).
    fn run(&self, x: u64, y: u64, z0: u64, z1: u64) -> Range<usize> {
        match &self.cells {
            Cells::Dense { dims, start } => {
                let k0 = ((x * dims[1] + y) * dims[2] + z0) as usize;
                let k1 = ((x * dims[1] + y) * dims[2] + z1) as usize;
                start[k0] as usize..start[k1 + 1] as usize
            }
            Cells::Sorted { keys } => {
                let (k0, k1) = (pack([x, y, z0]), pack([x, y, z1]));
                keys.partition_point(|&k| k < k0)..keys.partition_point(|&k| k <= k1)
            }
        }
    }

    /// Calls `f` on the runs of entries that entry `t` (in cell `c`) is paired with: those
    /// after it in its own cell and those of 13 of its 26 neighbouring cells, the half
    /// {dx = +1} ∪ {dx = 0, dy = +1} ∪ {dx = dy = 0, dz = +1}, which holds exactly one of
    /// every two opposite offsets. Over all entries, every two entries in the same or in
    /// adjacent cells meet once.
    fn forward(&self, t: usize, c: &[u64; 3], mut f: impl FnMut(Range<usize>)) {
        let [x, y, z] = *c;
        let own = self.run(x, y, z, z);
        f(t + 1..own.end);
        f(self.run(x, y, z + 1, z + 1));
        f(self.run(x, y + 1, z - 1, z + 1));
        for dy in 0..3 {
            f(self.run(x + 1, y + dy - 1, z - 1, z + 1));
        }
    }
}

/// Overlapping pairs (i, j), i < j, among the boxes that are `Some`, by a uniform grid
/// with the cell edge = the largest box's longest extent: two overlapping boxes have
/// their centres in the same or adjacent cells, so each box is tested against the boxes
/// after it in its own cell and those of half its 26 neighbouring cells ([`Grid::forward`]):
/// every two boxes in the same or adjacent cells are tested once. The tests read the
/// boxes' bounds in the grid's order, and the pairs are put in order by a counting sort.
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
    let grid = Grid::new(&live, &q, aabbs);
    let [lx, ly, lz, hx, hy, hz] = &grid.bounds;
    // Each chunk of entries finds its pairs (unordered); a counting sort by the smaller
    // index then puts them in order.
    let found: Vec<Vec<(u32, u32)>> = (0..live.len().div_ceil(CHUNK))
        .into_par_iter()
        .map(|chunk| {
            let mut out = Vec::new();
            for t in chunk * CHUNK..(chunk * CHUNK + CHUNK).min(live.len()) {
                let (i, c) = (grid.index[t], &grid.cell[t]);
                let (ax0, ay0, az0) = (lx[t], ly[t], lz[t]);
                let (ax1, ay1, az1) = (hx[t], hy[t], hz[t]);
                grid.forward(t, c, |run| {
                    let index = &grid.index[run.clone()];
                    let (lx, ly, lz) = (&lx[run.clone()], &ly[run.clone()], &lz[run.clone()]);
                    let (hx, hy, hz) = (&hx[run.clone()], &hy[run.clone()], &hz[run]);
                    for u in 0..index.len() {
                        // [`Aabb::overlaps`] on the bounds in grid order (closed on every
                        // axis), without a branch per axis.
                        if (ax0 <= hx[u])
                            & (lx[u] <= ax1)
                            & (ay0 <= hy[u])
                            & (ly[u] <= ay1)
                            & (az0 <= hz[u])
                            & (lz[u] <= az1)
                        {
                            let j = index[u];
                            out.push((i.min(j), i.max(j)));
                        }
                    }
                });
            }
            out
        })
        .collect();
    let found = found.concat();
    let smaller: Vec<usize> = found.iter().map(|&(i, _)| i as usize).collect();
    let (first, order) = by_key(aabbs.len(), &smaller);
    let mut pairs: Vec<(usize, usize)> =
        order.iter().map(|&t| (found[t].0 as usize, found[t].1 as usize)).collect();
    for k in 0..aabbs.len() {
        pairs[first[k]..first[k + 1]].sort_unstable();
    }
    pairs
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
        let (live, q) = (vec![1usize, 2], vec![[1u64, 1, 1], [1 << 20, 1, 1]]);
        assert!(matches!(Grid::new(&live, &q, &boxes).cells, Cells::Sorted { .. }));
        let sparse = pairs_from_aabbs(&boxes);
        assert_eq!(sparse, pairs);
        assert_eq!(sparse, pairs_brute_force(&boxes));
    }
}
