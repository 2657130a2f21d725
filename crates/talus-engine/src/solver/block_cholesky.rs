//! Sparse Cholesky factorisation K = L Lᵀ of a symmetric positive definite matrix made of
//! dense 6 × 6 blocks, one per body and one per pair of bodies the jump couples (H and
//! CᵀPC of an island, [`crate::solver::warm`]).
//!
//! The unknowns of a body are never split, so the factor is computed on the bodies'
//! graph: the elimination tree and the columns' structures are those of the body graph
//! (36 times fewer entries than the scalar one), and every operation is a product of
//! fixed-size 6 × 6 matrices. Columns are computed left-looking: column j of L is K's
//! column j less the products L_ik L_jkᵀ of the earlier columns k that reach row j, then
//! scaled by L_jj⁻ᵀ. L_jj⁻¹ is kept, so a solve is one matrix-vector product per block.
//!
//! The blocks must come in a fill-reducing order (the caller orders the bodies by AMD).
//!
//! # On two threads
//!
//! Column j of L is updated only by columns that descend from j in the elimination tree,
//! and row j of L has blocks only in those columns, so the columns of disjoint subtrees
//! are factorised and solved independently. A large factor is split once into two sets of
//! subtrees of about equal work and the rest of the tree (the top), each set's blocks
//! stored together: the factorisation and the forward solve do the two sets at once, then
//! the top; the backward solve the top, then the two sets ([`crate::solver::pair`]). Each
//! column is computed by the same operations in the same order as on one thread (the
//! forward solve gathers its row's products by ascending column, as the column-by-column
//! updates subtracted them), so the factor and the answer are the same, bit for bit.
//!
//! The column kernel and the triangular solves run through copies compiled for AVX2 where
//! the processor has it ([`crate::solver::wide`]), with the same bits.

use crate::solver::pair::Pair;
use crate::solver::wide::wide_fn;
use nalgebra::{Matrix6, Vector6};
use std::sync::Mutex;

/// Factors with fewer block columns stay on one thread.
const SPLIT_MIN_BLOCKS: usize = 64;
/// Subtrees split while looking for the best pair of sets.
const SPLIT_MAX_STEPS: usize = 256;
/// A split is used only if the work on the longer path (top and the larger set) is at most
/// this share of the whole.
const SPLIT_MAX_SHARE: f64 = 0.8;

/// Two sets of disjoint subtrees of the elimination tree, and the rest of it (the top).
#[derive(Debug, Clone)]
struct Split {
    /// Per block column: its set (0 or 1), or 2 for the top.
    owner: Vec<u8>,
    /// Per block column of a set: its place in the set's list.
    local: Vec<usize>,
    /// The columns of each set, ascending.
    sets: [Vec<usize>; 2],
    /// The columns of the top, ascending.
    top: Vec<usize>,
    /// Where each set's blocks begin in storage, and the top's.
    bases: [usize; 3],
}

/// Two sets of subtrees of the factor of structure `cols` (each column's rows below the
/// diagonal; `row_count`: each row's blocks left of it), for solves and factorisations on
/// two threads. Subtrees are split
/// at their root (which joins the top), heaviest first; the split kept is the one whose
/// bound on the longer path (the top, and the larger of half the subtrees' work and the
/// heaviest subtree) is least, if it is at most [`SPLIT_MAX_SHARE`] of the whole. Its
/// subtrees are then shared out, largest first, to the lighter set.
fn find_split(cols: &Columns, row_count: &[usize]) -> Option<Split> {
    let nb = cols.len();
    let parent = |j: usize| cols.col(j).first().copied();
    // A column's work in a solve: its diagonal block, its column and its row.
    let work: Vec<u64> = (0..nb).map(|j| (1 + cols.col(j).len() + row_count[j]) as u64).collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nb];
    let mut subtree = work.clone();
    let mut heap = std::collections::BinaryHeap::new();
    for j in 0..nb {
        // A parent comes after its children.
        match parent(j) {
            Some(p) => {
                children[p].push(j);
                subtree[p] += subtree[j];
            }
            None => heap.push((subtree[j], std::cmp::Reverse(j))),
        }
    }
    let total: u64 = work.iter().sum();
    // Work in the subtrees and in the top; the columns moved to the top, in order.
    let (mut below, mut top_work) = (total, 0u64);
    let mut moved = Vec::new();
    let mut best = (u64::MAX, 0usize);
    while let Some(&(heaviest, std::cmp::Reverse(h))) = heap.peek() {
        let bound = top_work + heaviest.max(below.div_ceil(2));
        if bound < best.0 {
            best = (bound, moved.len());
        }
        if children[h].is_empty() || moved.len() == SPLIT_MAX_STEPS {
            break;
        }
        heap.pop();
        for &c in &children[h] {
            heap.push((subtree[c], std::cmp::Reverse(c)));
        }
        below -= work[h];
        top_work += work[h];
        moved.push(h);
    }
    if best.0 as f64 > SPLIT_MAX_SHARE * total as f64 {
        return None;
    }
    // The owner of every column: 2 for the top, then the subtrees' roots (the columns
    // not in the top whose parent is, or that have none), largest first, to the
    // lighter set; the rest as their parent (parents come after their children).
    let mut owner = vec![u8::MAX; nb];
    for &j in &moved[..best.1] {
        owner[j] = 2;
    }
    let mut roots: Vec<usize> =
        (0..nb).filter(|&j| owner[j] != 2 && parent(j).is_none_or(|p| owner[p] == 2)).collect();
    roots.sort_by(|a, b| subtree[*b].cmp(&subtree[*a]).then(a.cmp(b)));
    let mut bins = [0u64; 2];
    for r in roots {
        let s = usize::from(bins[1] < bins[0]);
        bins[s] += subtree[r];
        owner[r] = s as u8;
    }
    for j in (0..nb).rev() {
        if owner[j] == u8::MAX {
            owner[j] = owner[parent(j).expect("a column below a root has a parent")];
        }
    }
    let mut sets = [Vec::new(), Vec::new()];
    let mut local = vec![0usize; nb];
    let mut top = Vec::new();
    for j in 0..nb {
        match owner[j] {
            2 => top.push(j),
            s => {
                local[j] = sets[s as usize].len();
                sets[s as usize].push(j);
            }
        }
    }
    Some(Split { owner, local, sets, top, bases: [0; 3] })
}

/// Write block i of `b`.
#[inline(always)]
fn set6(b: &mut [f64], i: usize, v: Vector6<f64>) {
    b[6 * i..6 * i + 6].copy_from_slice(v.as_slice());
}

#[inline(always)]
fn get6(b: &[f64], i: usize) -> Vector6<f64> {
    Vector6::from_column_slice(&b[6 * i..6 * i + 6])
}

/// Lists of block indices by column, stored flat: column j is `rows[ptr[j]..ptr[j + 1]]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Columns {
    pub(crate) ptr: Vec<usize>,
    pub(crate) rows: Vec<usize>,
}

impl Columns {
    /// The columns of these lists.
    #[cfg(test)]
    pub(crate) fn from_lists(lists: &[Vec<usize>]) -> Self {
        let mut ptr = Vec::with_capacity(lists.len() + 1);
        ptr.push(0);
        let mut rows = Vec::new();
        for l in lists {
            rows.extend_from_slice(l);
            ptr.push(rows.len());
        }
        Columns { ptr, rows }
    }

    /// Number of columns.
    pub(crate) fn len(&self) -> usize {
        self.ptr.len() - 1
    }

    /// Column j.
    pub(crate) fn col(&self, j: usize) -> &[usize] {
        &self.rows[self.ptr[j]..self.ptr[j + 1]]
    }
}

/// The symbolic structure and the values of a block Cholesky factor.
#[derive(Debug, Clone)]
pub(crate) struct BlockCholesky {
    /// Block rows below the diagonal of column j: `rows[start[j]..end[j]]`, ascending.
    /// The columns are stored in order, or, for a split factor, the columns of each set and
    /// then those of the top (each part contiguous, so that two threads can write them).
    start: Vec<usize>,
    end: Vec<usize>,
    rows: Vec<usize>,
    /// Column of each position of `rows`.
    col: Vec<usize>,
    /// Positions (into `rows`) of the blocks of row i left of the diagonal, by ascending
    /// column: `row_pos[row_ptr[i]..row_ptr[i + 1]]`.
    row_ptr: Vec<usize>,
    row_pos: Vec<usize>,
    /// L_jj⁻¹ per column.
    diag_inv: Vec<Matrix6<f64>>,
    /// L_ij per position of `rows`.
    blocks: Vec<Matrix6<f64>>,
    /// Workspace: position of row i in the column being computed.
    map: Vec<usize>,
    /// How the solves are shared between two threads (large factors only).
    split: Option<Split>,
}

impl BlockCholesky {
    /// The structure of L from the blocks of K strictly below the diagonal: column j of
    /// `lower` holds the block rows i > j with K_ij ≠ 0. With `two_threads`, a large factor is
    /// split for two threads (its blocks stored by set); else the columns are stored in
    /// order, as a single thread reads them best.
    pub(crate) fn new(lower: &Columns, two_threads: bool) -> Self {
        let nb = lower.len();
        // L's columns, flat; each column's children (the columns whose first row it is) as
        // a linked list: `child[j]`, then `sibling[c]` (no list: usize::MAX).
        let mut cols = Columns { ptr: Vec::with_capacity(nb + 1), rows: Vec::new() };
        cols.ptr.push(0);
        let (mut child, mut sibling) = (vec![usize::MAX; nb], vec![usize::MAX; nb]);
        let mut mark = vec![usize::MAX; nb];
        for j in 0..nb {
            // struct(L_*j) = struct(K_*j) ∪ struct(L_*c) of the children c, less j.
            let first = cols.rows.len();
            mark[j] = j;
            let mut add = |i: usize, rows: &mut Vec<usize>| {
                // A child's column holds its parent j itself, which `mark` skips.
                debug_assert!(i >= j, "block ({i}, {j}) is above the diagonal");
                if mark[i] != j {
                    mark[i] = j;
                    rows.push(i);
                }
            };
            for &i in lower.col(j) {
                add(i, &mut cols.rows);
            }
            let mut c = child[j];
            while c != usize::MAX {
                for t in cols.ptr[c]..cols.ptr[c + 1] {
                    let i = cols.rows[t];
                    add(i, &mut cols.rows);
                }
                c = sibling[c];
            }
            cols.rows[first..].sort_unstable();
            if let Some(&parent) = cols.rows.get(first) {
                sibling[j] = child[parent];
                child[parent] = j;
            }
            cols.ptr.push(cols.rows.len());
        }
        let mut row_count = vec![0usize; nb];
        cols.rows.iter().for_each(|&i| row_count[i] += 1);
        let mut split = (two_threads && nb >= SPLIT_MIN_BLOCKS)
            .then(|| find_split(&cols, &row_count))
            .flatten();
        let order: Vec<usize> = match &split {
            Some(sp) => sp.sets[0].iter().chain(&sp.sets[1]).chain(&sp.top).copied().collect(),
            None => (0..nb).collect(),
        };
        let (mut start, mut end) = (vec![0; nb], vec![0; nb]);
        let (mut rows, mut col) =
            (Vec::with_capacity(cols.rows.len()), Vec::with_capacity(cols.rows.len()));
        for &j in &order {
            start[j] = rows.len();
            rows.extend_from_slice(cols.col(j));
            col.extend(std::iter::repeat_n(j, cols.col(j).len()));
            end[j] = rows.len();
        }
        if let Some(sp) = &mut split {
            let first = |set: &[usize]| set.first().map_or(rows.len(), |&j| start[j]);
            sp.bases = [0, first(&sp.sets[1]), first(&sp.top)];
        }
        // Each row's blocks by ascending column (a counting sort by row).
        let mut row_ptr = vec![0usize; nb + 1];
        for i in 0..nb {
            row_ptr[i + 1] = row_ptr[i] + row_count[i];
        }
        let mut fill = row_ptr[..nb].to_vec();
        let mut row_pos = vec![0usize; rows.len()];
        for (j, &first) in start.iter().enumerate() {
            for (o, &i) in cols.col(j).iter().enumerate() {
                row_pos[fill[i]] = first + o;
                fill[i] += 1;
            }
        }
        BlockCholesky {
            start,
            end,
            rows,
            col,
            row_ptr,
            row_pos,
            diag_inv: vec![Matrix6::zeros(); nb],
            // Written by each factorisation.
            blocks: Vec::new(),
            map: vec![usize::MAX; nb],
            split,
        }
    }

    /// Number of block columns.
    pub(crate) fn n_blocks(&self) -> usize {
        self.diag_inv.len()
    }

    /// Block products of the numeric factorisation per block column: Σ_j |L_*j|² / columns
    /// (the average squared count of blocks below the diagonal of a column).
    pub(crate) fn work_per_column(&self) -> f64 {
        let w: usize = self.start.iter().zip(&self.end).map(|(a, b)| (b - a) * (b - a)).sum();
        w as f64 / self.n_blocks().max(1) as f64
    }

    /// Number of blocks of L below the diagonal (K's and the fill's).
    pub(crate) fn n_lower(&self) -> usize {
        self.rows.len()
    }

    /// Position of the block (i, j), i > j, of L; `None` when it is not in the structure.
    pub(crate) fn position(&self, i: usize, j: usize) -> Option<usize> {
        let r = &self.rows[self.start[j]..self.end[j]];
        r.binary_search(&i).ok().map(|p| self.start[j] + p)
    }

    /// Factorise K given its diagonal blocks `diag` (both triangles) and its blocks below
    /// the diagonal, `values`, at their `positions` in L (ascending; the rest of L is fill,
    /// zero in K), sharing the work with `pair`'s helper when the factor was split. `false`
    /// when K is not positive definite.
    pub(crate) fn factorize(
        &mut self,
        diag: &[Matrix6<f64>],
        positions: &[usize],
        values: &[Matrix6<f64>],
        pair: Option<&Pair>,
    ) -> bool {
        assert_eq!(diag.len(), self.n_blocks());
        assert_eq!(positions.len(), values.len());
        // L's storage in one pass: K's blocks at their positions, zero fill elsewhere.
        let mut blocks = std::mem::take(&mut self.blocks);
        let mut map = std::mem::take(&mut self.map);
        blocks.clear();
        let mut next = positions.iter().zip(values).peekable();
        blocks.extend((0..self.rows.len()).map(|p| match next.peek() {
            Some(&(&q, v)) if q == p => {
                next.next();
                *v
            }
            _ => Matrix6::zeros(),
        }));
        assert!(next.next().is_none(), "the positions are ascending and within L");
        let mut inverses = Vec::with_capacity(self.n_blocks());
        let ok = match (&self.split, pair) {
            (Some(split), Some(pair)) => {
                // The two sets at once (a column's updates come from its own set), each on
                // its own part of the storage, then the top on all of it.
                let (sets, _) = blocks.split_at_mut(split.bases[2]);
                let (b0, b1) = sets.split_at_mut(split.bases[1]);
                let parts =
                    [Mutex::new((b0, Vec::new(), true)), Mutex::new((b1, Vec::new(), true))];
                pair.run(&|s| {
                    let mut part = parts[s].lock().expect("a set's blocks");
                    let (part_blocks, inv, ok) = &mut *part;
                    let mut map = vec![usize::MAX; self.n_blocks()];
                    for &j in &split.sets[s] {
                        match self.factor_column(j, &diag[j], part_blocks, split.bases[s], &mut map)
                        {
                            Some(i) => inv.push(i),
                            None => {
                                *ok = false;
                                break;
                            }
                        }
                    }
                });
                let mut ok = true;
                for (s, part) in parts.into_iter().enumerate() {
                    let (_, inv, part_ok) = part.into_inner().expect("a set's blocks");
                    ok &= part_ok;
                    if ok {
                        for (&j, i) in split.sets[s].iter().zip(inv) {
                            self.diag_inv[j] = i;
                        }
                    }
                }
                ok && split.top.iter().all(|&j| {
                    self.factor_column(j, &diag[j], &mut blocks, 0, &mut map)
                        .map(|i| inverses.push((j, i)))
                        .is_some()
                })
            }
            _ => (0..self.n_blocks()).all(|j| {
                self.factor_column(j, &diag[j], &mut blocks, 0, &mut map)
                    .map(|i| inverses.push((j, i)))
                    .is_some()
            }),
        };
        for (j, i) in inverses {
            self.diag_inv[j] = i;
        }
        self.blocks = blocks;
        self.map = map;
        ok
    }

    /// Column j of L, left-looking: K's column j (`dj` on the diagonal, the column's blocks
    /// in `blocks`, which hold the storage from position `base` on) less the products
    /// L_ik L_jkᵀ of the earlier columns k that reach row j, then scaled by L_jj⁻ᵀ. Returns
    /// L_jj⁻¹, or `None` when the diagonal block is not positive definite. `map` is a
    /// workspace of one entry per column.
    fn factor_column(
        &self,
        j: usize,
        dj: &Matrix6<f64>,
        blocks: &mut [Matrix6<f64>],
        base: usize,
        map: &mut [usize],
    ) -> Option<Matrix6<f64>> {
        factor_column_wide(self, j, dj, blocks, base, map)
    }

    /// [`Self::factor_column`], for [`wide_fn`].
    #[inline(always)]
    fn factor_column_any(
        &self,
        j: usize,
        dj: &Matrix6<f64>,
        blocks: &mut [Matrix6<f64>],
        base: usize,
        map: &mut [usize],
    ) -> Option<Matrix6<f64>> {
        for p in self.start[j]..self.end[j] {
            map[self.rows[p]] = p - base;
        }
        let mut d = *dj;
        for &q in &self.row_pos[self.row_ptr[j]..self.row_ptr[j + 1]] {
            // L_jk (column k < j is final); the rows of column k below j update column j.
            let ljk = blocks[q - base];
            let ljk_t = ljk.transpose();
            d -= mul6(&ljk, &ljk_t);
            let k = self.col[q];
            for p in q + 1..self.end[k] {
                let t = mul6(&blocks[p - base], &ljk_t);
                blocks[map[self.rows[p]]] -= t;
            }
        }
        let chol = d.cholesky()?;
        let inv = chol.l().solve_lower_triangular(&Matrix6::identity())?;
        if !inv.iter().all(|v| v.is_finite()) {
            return None;
        }
        let inv_t = inv.transpose();
        for p in self.start[j]..self.end[j] {
            blocks[p - base] = mul6(&blocks[p - base], &inv_t);
        }
        Some(inv)
    }

    /// Column j of the forward solve L y = b: y_j from b_j and the y of its row's columns.
    #[inline(always)]
    fn forward(
        &self,
        j: usize,
        bj: Vector6<f64>,
        y: impl Fn(usize) -> Vector6<f64>,
    ) -> Vector6<f64> {
        let mut t = bj;
        for &q in &self.row_pos[self.row_ptr[j]..self.row_ptr[j + 1]] {
            t -= self.blocks[q] * y(self.col[q]);
        }
        lower_mul(&self.diag_inv[j], &t)
    }

    /// Column j of the backward solve Lᵀ x = y: x_j from y_j and the x of its column's rows.
    #[inline(always)]
    fn backward(
        &self,
        j: usize,
        yj: Vector6<f64>,
        x: impl Fn(usize) -> Vector6<f64>,
    ) -> Vector6<f64> {
        let mut t = yj;
        for p in self.start[j]..self.end[j] {
            t -= self.blocks[p].tr_mul(&x(self.rows[p]));
        }
        lower_tr_mul(&self.diag_inv[j], &t)
    }

    /// Solve K x = b in place (b in the blocks' order, 6 unknowns per block), sharing the
    /// work with `pair`'s helper when the factor was split.
    pub(crate) fn solve_in_place(&self, b: &mut [f64], pair: Option<&Pair>) {
        solve_in_place_wide(self, b, pair)
    }

    /// [`Self::solve_in_place`], for [`wide_fn`].
    #[inline(always)]
    fn solve_in_place_any(&self, b: &mut [f64], pair: Option<&Pair>) {
        assert_eq!(b.len(), 6 * self.n_blocks());
        let (Some(split), Some(pair)) = (&self.split, pair) else {
            // L y = b column by column (each y_j subtracted from the rows below it: the same
            // terms, in the same order, as the gathered rows of the split solve).
            for j in 0..self.n_blocks() {
                let y = lower_mul(&self.diag_inv[j], &get6(b, j));
                set6(b, j, y);
                for p in self.start[j]..self.end[j] {
                    let i = self.rows[p];
                    let t = self.blocks[p] * y;
                    for (v, d) in b[6 * i..6 * i + 6].iter_mut().zip(t.iter()) {
                        *v -= d;
                    }
                }
            }
            for j in (0..self.n_blocks()).rev() {
                let x = self.backward(j, get6(b, j), |k| get6(b, k));
                set6(b, j, x);
            }
            return;
        };
        let out: [Mutex<Vec<f64>>; 2] =
            std::array::from_fn(|s| Mutex::new(vec![0.0; 6 * split.sets[s].len()]));
        let write_back = |b: &mut [f64]| {
            for (s, o) in out.iter().enumerate() {
                let o = o.lock().expect("a set's buffer");
                for (l, &j) in split.sets[s].iter().enumerate() {
                    b[6 * j..6 * j + 6].copy_from_slice(&o[6 * l..6 * l + 6]);
                }
            }
        };
        // L y = b: the two sets at once (a column's row lies in its own set), then the top.
        {
            let b: &[f64] = b;
            pair.run(&|s| {
                let mut o = out[s].lock().expect("a set's buffer");
                forward_set_wide(self, split, s, b, &mut o);
            });
        }
        write_back(b);
        for &j in &split.top {
            let y = self.forward(j, get6(b, j), |k| get6(b, k));
            set6(b, j, y);
        }
        // Lᵀ x = y: the top, then the two sets at once (a column's rows are in its set or in
        // the top).
        for &j in split.top.iter().rev() {
            let x = self.backward(j, get6(b, j), |k| get6(b, k));
            set6(b, j, x);
        }
        {
            let b: &[f64] = b;
            pair.run(&|s| {
                let mut o = out[s].lock().expect("a set's buffer");
                backward_set_wide(self, split, s, b, &mut o);
            });
        }
        write_back(b);
    }

    /// The forward solve of set `s` of the split factor, from `b` into the set's buffer
    /// `o`, for [`wide_fn`].
    #[inline(always)]
    fn forward_set(&self, split: &Split, s: usize, b: &[f64], o: &mut [f64]) {
        for (l, &j) in split.sets[s].iter().enumerate() {
            let y = self.forward(j, get6(b, j), |k| get6(o, split.local[k]));
            set6(o, l, y);
        }
    }

    /// The backward solve of set `s` of the split factor (the top's x in `b`), into the
    /// set's buffer `o`, for [`wide_fn`].
    #[inline(always)]
    fn backward_set(&self, split: &Split, s: usize, b: &[f64], o: &mut [f64]) {
        for (l, &j) in split.sets[s].iter().enumerate().rev() {
            let x = self.backward(j, get6(b, j), |k| {
                if split.owner[k] as usize == s { get6(o, split.local[k]) } else { get6(b, k) }
            });
            set6(o, l, x);
        }
    }
}

wide_fn! {
    fn factor_column_wide(
        chol: &BlockCholesky,
        j: usize,
        dj: &Matrix6<f64>,
        blocks: &mut [Matrix6<f64>],
        base: usize,
        map: &mut [usize],
    ) -> Option<Matrix6<f64>> = BlockCholesky::factor_column_any;
}
wide_fn! {
    fn solve_in_place_wide(chol: &BlockCholesky, b: &mut [f64], pair: Option<&Pair>) =
        BlockCholesky::solve_in_place_any;
}
wide_fn! {
    fn forward_set_wide(chol: &BlockCholesky, split: &Split, s: usize, b: &[f64], o: &mut [f64]) =
        BlockCholesky::forward_set;
}
wide_fn! {
    fn backward_set_wide(chol: &BlockCholesky, split: &Split, s: usize, b: &[f64], o: &mut [f64]) =
        BlockCholesky::backward_set;
}

/// `a b` for 6 × 6 matrices, bit for bit nalgebra's product (column j of the product is
/// the sum of a's columns k times b_kj, added in the order of k from the first product),
/// inlined where nalgebra's is a call.
#[inline(always)]
fn mul6(a: &Matrix6<f64>, b: &Matrix6<f64>) -> Matrix6<f64> {
    let mut c = Matrix6::zeros();
    for j in 0..6 {
        for i in 0..6 {
            c[(i, j)] = a[(i, 0)] * b[(0, j)];
        }
        for k in 1..6 {
            for i in 0..6 {
                c[(i, j)] += a[(i, k)] * b[(k, j)];
            }
        }
    }
    c
}

/// m += a bᵀ, entry by entry: the bits of nalgebra's `m += a * b.transpose()` (whose
/// product is (1 · aᵢ) · bⱼ, then added), inlined and without the product's temporary
/// (the rows' penalties summed into K's blocks, [`crate::solver::warm`]).
#[inline(always)]
pub(crate) fn add_outer(m: &mut Matrix6<f64>, a: &Vector6<f64>, b: &Vector6<f64>) {
    for j in 0..6 {
        for i in 0..6 {
            m[(i, j)] += a[i] * b[j];
        }
    }
}

/// `l * v` for a lower-triangular `l` (a diagonal block's L_jj⁻¹), bit for bit, without
/// the products above the diagonal. nalgebra sums the columns' products in column order; the
/// ones above the diagonal are zeros, added last, which leave a nonzero sum as it is (they
/// are added when the sum is zero, for its sign).
#[inline(always)]
fn lower_mul(l: &Matrix6<f64>, v: &Vector6<f64>) -> Vector6<f64> {
    let mut y = Vector6::zeros();
    for r in 0..6 {
        let mut s = v[0] * l[(r, 0)];
        for c in 1..=r {
            s += v[c] * l[(r, c)];
        }
        if s == 0.0 {
            for c in r + 1..6 {
                s += v[c] * l[(r, c)];
            }
        }
        y[r] = s;
    }
    y
}

/// `l.tr_mul(v)` (lᵀ v) for a lower-triangular `l`, bit for bit, without the products of
/// its zeros: nalgebra's dot products start from +0 and add the products in row order, and
/// the zeros come first there, so the sum is +0 until the first product of the triangle.
#[inline(always)]
fn lower_tr_mul(l: &Matrix6<f64>, v: &Vector6<f64>) -> Vector6<f64> {
    let mut y = Vector6::zeros();
    for r in 0..6 {
        let mut s = 0.0;
        for c in r..6 {
            s += l[(c, r)] * v[c];
        }
        y[r] = s;
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::testing::{bits, uniform};
    use nalgebra::DMatrix;

    /// Every position of L's blocks below the diagonal (for `factorize` with all of them).
    fn every(low: &[Matrix6<f64>]) -> Vec<usize> {
        (0..low.len()).collect()
    }

    /// A random symmetric matrix on the block pattern `pairs` (i > j) of `nb` blocks, each
    /// diagonal entry shifted by `diagonal` (positive definite when it dominates), and the
    /// blocks below its diagonal by column.
    fn random_spd(
        nb: usize,
        pairs: &[(usize, usize)],
        diagonal: f64,
        rnd: &mut impl FnMut() -> f64,
    ) -> (DMatrix<f64>, Vec<Vec<usize>>) {
        let n = 6 * nb;
        let mut k = DMatrix::<f64>::zeros(n, n);
        for &(i, j) in pairs {
            for a in 0..6 {
                for b in 0..6 {
                    let v = rnd();
                    k[(6 * i + a, 6 * j + b)] = v;
                    k[(6 * j + b, 6 * i + a)] = v;
                }
            }
        }
        for i in 0..nb {
            for a in 0..6 {
                for b in 0..=a {
                    let v = if a == b { diagonal + rnd() } else { rnd() };
                    k[(6 * i + a, 6 * i + b)] = v;
                    k[(6 * i + b, 6 * i + a)] = v;
                }
            }
        }
        let mut lower: Vec<Vec<usize>> = vec![Vec::new(); nb];
        for &(i, j) in pairs {
            lower[j].push(i);
        }
        (k, lower)
    }

    /// K's diagonal blocks and its blocks below the diagonal at their positions in `f`.
    fn blocks_of(
        k: &DMatrix<f64>,
        f: &BlockCholesky,
        pairs: &[(usize, usize)],
    ) -> (Vec<Matrix6<f64>>, Vec<Matrix6<f64>>) {
        let block = |i: usize, j: usize| Matrix6::from_fn(|a, b| k[(6 * i + a, 6 * j + b)]);
        let diag = (0..f.n_blocks()).map(|i| block(i, i)).collect();
        let mut low = vec![Matrix6::zeros(); f.n_lower()];
        for &(i, j) in pairs {
            low[f.position(i, j).unwrap()] = block(i, j);
        }
        (diag, low)
    }

    /// A random SPD matrix on a block pattern (a path with chords, so that the factor has
    /// fill), solved by the block factor and by a dense Cholesky.
    #[test]
    fn agrees_with_a_dense_cholesky_and_has_fill() {
        let nb = 12;
        let mut rnd = uniform(12345);
        let mut pairs: Vec<(usize, usize)> = (1..nb).map(|i| (i, i - 1)).collect();
        pairs.extend([(5, 0), (9, 2), (11, 4), (7, 3)]);
        let n = 6 * nb;
        let (k, lower) = random_spd(nb, &pairs, 40.0, &mut rnd);
        let mut f = BlockCholesky::new(&Columns::from_lists(&lower), false);
        assert!(f.n_lower() > pairs.len(), "the chords should cause fill");
        let (diag, low) = blocks_of(&k, &f, &pairs);
        assert!(f.factorize(&diag, &every(&low), &low, None));
        let b: Vec<f64> = (0..n).map(|_| rnd()).collect();
        let mut x = b.clone();
        f.solve_in_place(&mut x, None);
        let expected = k.clone().cholesky().unwrap().solve(&DMatrix::from_column_slice(n, 1, &b));
        let err = (0..n).map(|i| (x[i] - expected[i]).abs()).fold(0.0, f64::max);
        assert!(err < 1e-12, "largest difference {err}");
        // The residual, independently of the dense factor.
        let r = &k * DMatrix::from_column_slice(n, 1, &x) - DMatrix::from_column_slice(n, 1, &b);
        assert!(r.amax() < 1e-12, "residual {}", r.amax());
    }

    /// The triangular products give nalgebra's bits, signed zeros included.
    #[test]
    fn triangular_products_are_nalgebras_bit_for_bit() {
        let mut rnd = uniform(99);
        let mut zero_results = 0;
        for case in 0..4000 {
            let l = Matrix6::from_fn(|r, c| if c <= r { rnd() } else { 0.0 });
            // Vectors with zeros of both signs in many places, and cancelling entries.
            let mut v = Vector6::from_fn(|_, _| rnd());
            for k in 0..6 {
                match (case >> (2 * k)) & 3 {
                    0 => v[k] = 0.0,
                    1 => v[k] = -0.0,
                    _ => {}
                }
            }
            let (a, b) = (lower_mul(&l, &v), l * v);
            assert_eq!(bits(&a), bits(&b), "L v, case {case}: {a:?} against {b:?}");
            let (a, b) = (lower_tr_mul(&l, &v), l.tr_mul(&v));
            assert_eq!(bits(&a), bits(&b), "Lᵀ v, case {case}: {a:?} against {b:?}");
            zero_results += b.iter().filter(|x| **x == 0.0).count();
        }
        assert!(zero_results > 1000, "the cases must include zero sums ({zero_results})");
    }

    /// `mul6` gives nalgebra's product, and `add_outer` nalgebra's `m += a * b.transpose()`
    /// (on a's and b's columns), bit for bit, signed zeros included.
    #[test]
    fn the_block_product_is_nalgebras_bit_for_bit() {
        let mut rnd = uniform(7);
        let (mut zeros, mut outer_zeros) = (0, 0);
        for case in 0..2000u64 {
            let mut a = Matrix6::from_fn(|_, _| rnd());
            let mut b = Matrix6::from_fn(|_, _| rnd());
            // Half the entries +0, −0 or ½: zero sums of both signs, and repeated values.
            for (k, v) in a.iter_mut().chain(b.iter_mut()).enumerate() {
                match (case.wrapping_mul(31) + k as u64 * 7) % 6 {
                    0 => *v = 0.0,
                    1 => *v = -0.0,
                    2 => *v = 0.5,
                    _ => {}
                }
            }
            let (ours, theirs) = (mul6(&a, &b), a * b);
            assert_eq!(bits(&ours), bits(&theirs), "case {case}: {ours} against {theirs}");
            zeros += theirs.iter().filter(|x| **x == 0.0).count();
            let (u, v) = (a.column(case as usize % 6).into_owned(), b.column(1).into_owned());
            let (mut ours, mut theirs) = (b, b);
            add_outer(&mut ours, &u, &v);
            theirs += u * v.transpose();
            assert_eq!(bits(&ours), bits(&theirs), "outer, case {case}: {ours} against {theirs}");
            outer_zeros += theirs.iter().filter(|x| **x == 0.0).count();
        }
        assert!(zeros > 100, "the cases must include zero sums ({zeros})");
        assert!(outer_zeros > 100, "the cases must include zero sums ({outer_zeros})");
    }

    /// The factorisation and the solves through [`wide_fn`] (on a processor with AVX2, its
    /// AVX2 copies) give the kernels' own answers (compiled here for the baseline), bit for
    /// bit, on one thread and split on two.
    #[test]
    fn the_wide_kernels_give_the_baseline_bits() {
        let mut rnd = uniform(4242);
        // Two chains joined by a separator, with chords: fill, and a split on two threads.
        let nb = 150;
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for i in 1..70 {
            pairs.push((i, i - 1));
            pairs.push((70 + i, 70 + i - 1));
        }
        for i in 141..nb {
            pairs.push((i, i - 1));
        }
        pairs.extend([(140, 69), (141, 139), (145, 30), (147, 100), (20, 5), (90, 75)]);
        let (k, lower) = random_spd(nb, &pairs, 40.0, &mut rnd);
        let b: Vec<f64> = (0..6 * nb).map(|_| rnd()).collect();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        for two in [false, true] {
            let mut f = BlockCholesky::new(&Columns::from_lists(&lower), two);
            assert_eq!(f.split.is_some(), two, "the factor should split only for two threads");
            let (diag, low) = blocks_of(&k, &f, &pairs);
            // The baseline copy: factorize's one-thread loop on the kernel itself.
            let mut base = f.clone();
            let mut blocks = low.clone();
            let mut map = vec![usize::MAX; nb];
            for (j, dj) in diag.iter().enumerate() {
                let inv = base.factor_column_any(j, dj, &mut blocks, 0, &mut map);
                base.diag_inv[j] = inv.expect("K is positive definite");
            }
            base.blocks = blocks;
            let mut x_base = b.clone();
            base.solve_in_place_any(&mut x_base, None);
            // Through the dispatch, on one thread, and (split) on two.
            let factor_bits =
                |f: &BlockCholesky| bits(f.blocks.iter().chain(&f.diag_inv).flatten());
            assert!(f.factorize(&diag, &every(&low), &low, None));
            assert_eq!(factor_bits(&f), factor_bits(&base), "two: {two}");
            let mut x = b.clone();
            if two {
                pool.install(|| {
                    Pair::solve(|pair| {
                        let pair = pair.expect("two threads");
                        assert!(f.factorize(&diag, &every(&low), &low, Some(pair)));
                        f.solve_in_place(&mut x, Some(pair))
                    })
                });
                assert_eq!(factor_bits(&f), factor_bits(&base));
            } else {
                f.solve_in_place(&mut x, None);
            }
            assert_eq!(bits(&x), bits(&x_base), "two threads: {two}");
        }
    }

    /// Two chains of 60 blocks and a separator of 8 joined to both (with chords, for fill):
    /// the factor is split into the chains' subtrees and the separator, and its
    /// factorisation and solve on two threads are the one-thread ones, bit for bit, and the
    /// solve a dense solve's to 1e-12.
    #[test]
    fn a_split_solve_is_the_one_thread_solve_bit_for_bit() {
        let (chain, sep) = (60, 8);
        let nb = 2 * chain + sep;
        let mut rnd = uniform(777);
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for c in 0..2 {
            let o = c * chain;
            pairs.extend((1..chain).map(|i| (o + i, o + i - 1)));
            pairs.extend((3..chain).step_by(7).map(|i| (o + i, o + i - 3)));
            // The chain's ends and middle touch the separator.
            for (k, i) in [0, chain / 2, chain - 1].into_iter().enumerate() {
                pairs.push((2 * chain + (k + 3 * c) % sep, o + i));
            }
        }
        pairs.extend((1..sep).map(|i| (2 * chain + i, 2 * chain + i - 1)));
        let n = 6 * nb;
        let (k, lower) = random_spd(nb, &pairs, 60.0, &mut rnd);
        let mut f = BlockCholesky::new(&Columns::from_lists(&lower), true);
        let split = f.split.clone().expect("the two chains are split apart");
        assert!(split.sets.iter().all(|s| s.len() >= chain / 2), "sets {:?}", split.sets);
        assert!(!split.top.is_empty() && split.top.len() <= sep, "top {:?}", split.top);
        let (diag, low) = blocks_of(&k, &f, &pairs);
        assert!(f.factorize(&diag, &every(&low), &low, None));
        let b: Vec<f64> = (0..n).map(|_| rnd()).collect();
        let mut one = b.clone();
        f.solve_in_place(&mut one, None);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        let factor_bits = |f: &BlockCholesky| bits(f.blocks.iter().chain(&f.diag_inv).flatten());
        let factor_one = factor_bits(&f);
        for _ in 0..20 {
            let mut g = f.clone();
            g.blocks.iter_mut().chain(g.diag_inv.iter_mut()).for_each(|m| m.fill(f64::NAN));
            let mut two = b.clone();
            pool.install(|| {
                Pair::solve(|pair| {
                    let pair = pair.expect("two threads");
                    assert!(g.factorize(&diag, &every(&low), &low, Some(pair)));
                    g.solve_in_place(&mut two, Some(pair))
                })
            });
            assert_eq!(factor_bits(&g), factor_one);
            assert_eq!(bits(&one), bits(&two));
        }
        let expected = k.clone().cholesky().unwrap().solve(&DMatrix::from_column_slice(n, 1, &b));
        let err = (0..n).map(|i| (one[i] - expected[i]).abs()).fold(0.0, f64::max);
        assert!(err < 1e-12, "largest difference {err}");
    }

    /// An indefinite matrix is refused.
    #[test]
    fn refuses_an_indefinite_matrix() {
        let mut f = BlockCholesky::new(&Columns::from_lists(&[vec![1], vec![]]), false);
        let diag = [Matrix6::identity(), Matrix6::identity()];
        let low = [Matrix6::identity() * 2.0];
        assert!(!f.factorize(&diag, &every(&low), &low, None));
    }
}
