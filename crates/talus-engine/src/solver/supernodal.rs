//! Triangular solves with faer's supernodal Cholesky factor L (K = L Lᵀ), shared between
//! the two threads of a [`Pair`] by subtrees of the supernodes' elimination tree.
//!
//! faer's own solve runs on one thread. Here the supernodes are cut in three: two sets of
//! whole subtrees (balanced by the entries of L they read) and the top of the tree above
//! them. In the forward solve (L y = b) a supernode updates only rows of its ancestors, so
//! each set is solved on its own copy of the right-hand side, in which the rows of the top
//! start at zero and collect the set's updates; the top's rows are then b + (set 0's
//! updates) + (set 1's), and the top is solved after them. The backward solve (Lᵀ x = y)
//! does the top first, then each set on its own copy. The top's supernodes of
//! 2 × [`BLOCK`] columns or more are solved by blocks of [`BLOCK`] columns, each block's
//! triangle on the solving thread and the work below or after it in two halves. Every
//! entry is computed by the same operations in the same order whichever thread does it,
//! so the answer is the same, bit for bit, on one thread or two.
//!
//! Measured on the packed heap of 1000 blocks (session 61): L has 3.5 million entries in
//! 212 supernodes, the top's root alone 1104 columns and 35 % of them; the two sets and
//! the top balance at 74 % of the entries on the longer path, before the top's blocks.

use crate::solver::pair::{Pair, both};
use crate::solver::wide::wide_fn;
use faer::sparse::linalg::cholesky::supernodal::SymbolicSupernodalCholesky;

/// A supernode: its first column, its columns, its rows below the diagonal block
/// (`row_idx[pat..pat + plen]`), and its values (column-major, (ncols + plen) × ncols,
/// from `val` in L's values).
#[derive(Clone, Copy)]
struct Node {
    begin: usize,
    ncols: usize,
    pat: usize,
    plen: usize,
    val: usize,
}

impl Node {
    /// The supernode's rows below and values, from the factor's row indices and L's values.
    fn view<'a>(self, row_idx: &'a [usize], l: &'a [f64]) -> View<'a> {
        let ld = self.ncols + self.plen;
        View {
            begin: self.begin,
            nc: self.ncols,
            ld,
            pat: &row_idx[self.pat..self.pat + self.plen],
            v: &l[self.val..self.val + ld * self.ncols],
        }
    }
}

/// A supernode as its solves read it: its first column, its `nc` columns, its rows below
/// the diagonal block (`pat`), and its values `v`, column-major with leading dimension
/// `ld` = nc + |pat|.
#[derive(Clone, Copy)]
struct View<'a> {
    begin: usize,
    nc: usize,
    ld: usize,
    pat: &'a [usize],
    v: &'a [f64],
}

/// The split of a supernodal factor's solves (see the module's documentation).
pub(crate) struct SplitSolve {
    nodes: Vec<Node>,
    row_idx: Vec<usize>,
    /// The supernodes of each set, ascending.
    sets: [Vec<usize>; 2],
    /// The supernodes of the top, ascending.
    top: Vec<usize>,
    /// The columns of the top, ascending, and of each set.
    top_cols: Vec<usize>,
    set_cols: [Vec<usize>; 2],
    /// Each set's copy of the right-hand side, and a buffer of a supernode's rows.
    bufs: [Vec<f64>; 2],
    rows: [Vec<f64>; 2],
    /// A wide top supernode's columns and rows, and a block of its solved columns.
    panel: Vec<f64>,
    block: Vec<f64>,
}

/// Columns of a block of a wide top supernode ([`top_forward`], [`top_backward`]); top
/// supernodes of fewer than 2 × `BLOCK` columns are solved on one thread.
const BLOCK: usize = 64;

/// The entries of L a supernode's solves read (its lower triangle and its rows below).
fn work(n: &Node) -> f64 {
    (n.ncols * (n.ncols + 1) / 2 + n.ncols * n.plen) as f64
}

impl SplitSolve {
    pub(crate) fn new(symbolic: &SymbolicSupernodalCholesky<usize>) -> Self {
        let ns = symbolic.n_supernodes();
        let begin = symbolic.supernode_begin();
        let end = symbolic.supernode_end();
        let col_ptr_row = symbolic.col_ptr_for_row_idx();
        let col_ptr_val = symbolic.col_ptr_for_val();
        let row_idx = symbolic.row_idx().to_vec();
        let nodes: Vec<Node> = (0..ns)
            .map(|s| Node {
                begin: begin[s],
                ncols: end[s] - begin[s],
                pat: col_ptr_row[s],
                plen: col_ptr_row[s + 1] - col_ptr_row[s],
                val: col_ptr_val[s],
            })
            .collect();
        let n = end.last().copied().unwrap_or(0);
        let mut owner = vec![0usize; n];
        for (s, nd) in nodes.iter().enumerate() {
            owner[nd.begin..nd.begin + nd.ncols].fill(s);
        }
        // The parent of a supernode holds the first row below its diagonal block.
        let parent: Vec<Option<usize>> =
            nodes.iter().map(|nd| (nd.plen > 0).then(|| owner[row_idx[nd.pat]])).collect();
        let mut subtree: Vec<f64> = nodes.iter().map(work).collect();
        let mut children = vec![Vec::new(); ns];
        for s in 0..ns {
            if let Some(p) = parent[s] {
                debug_assert!(p > s, "a parent comes after its children");
                subtree[p] += subtree[s];
                children[p].push(s);
            }
        }
        // Grow the top from the roots, each time by the largest subtree of the frontier,
        // the frontier's subtrees shared between the sets largest first (each to the lighter
        // set); keep the split whose longer path (top and heavier set) is least.
        let split = |top_work: f64, frontier: &[usize]| {
            let mut f = frontier.to_vec();
            f.sort_by(|&a, &b| subtree[b].total_cmp(&subtree[a]).then(a.cmp(&b)));
            let (mut roots, mut load) = ([Vec::new(), Vec::new()], [0.0, 0.0]);
            for s in f {
                let k = usize::from(load[1] < load[0]);
                load[k] += subtree[s];
                roots[k].push(s);
            }
            (top_work + load[0].max(load[1]), roots)
        };
        let (mut top, mut top_work) = (Vec::new(), 0.0);
        let mut frontier: Vec<usize> = (0..ns).filter(|&s| parent[s].is_none()).collect();
        let (mut best, mut best_top, mut best_roots) =
            (f64::INFINITY, Vec::new(), Default::default());
        for _ in 0..64 {
            let (path, roots) = split(top_work, &frontier);
            if path < best {
                (best, best_top, best_roots) = (path, top.clone(), roots);
            }
            let Some(&big) = frontier.iter().max_by(|&&a, &&b| subtree[a].total_cmp(&subtree[b]))
            else {
                break;
            };
            top.push(big);
            top_work += work(&nodes[big]);
            frontier.retain(|&s| s != big);
            frontier.extend(&children[big]);
        }
        // Each set: the supernodes of its subtrees, ascending.
        let mut in_set = vec![2u8; ns];
        let [r0, r1]: [Vec<usize>; 2] = best_roots;
        for (k, roots) in [r0, r1].iter().enumerate() {
            let mut stack = roots.clone();
            while let Some(s) = stack.pop() {
                in_set[s] = k as u8;
                stack.extend(&children[s]);
            }
        }
        let members = |k: u8| (0..ns).filter(|&s| in_set[s] == k).collect::<Vec<_>>();
        let cols = |set: &[usize]| {
            let mut c: Vec<usize> =
                set.iter().flat_map(|&s| nodes[s].begin..nodes[s].begin + nodes[s].ncols).collect();
            c.sort_unstable();
            c
        };
        best_top.sort_unstable();
        let sets = [members(0), members(1)];
        let set_cols = [cols(&sets[0]), cols(&sets[1])];
        let top_cols = cols(&best_top);
        let widest = nodes.iter().map(|nd| nd.plen).max().unwrap_or(0);
        let panel = best_top.iter().map(|&s| nodes[s].ncols + nodes[s].plen).max().unwrap_or(0);
        SplitSolve {
            nodes,
            row_idx,
            sets,
            top: best_top,
            top_cols,
            set_cols,
            bufs: [vec![0.0; n], vec![0.0; n]],
            rows: [vec![0.0; widest], vec![0.0; widest]],
            panel: vec![0.0; panel],
            block: vec![0.0; BLOCK],
        }
    }

    /// The share of L's entries (as the solves read them) on the longer path: the top and
    /// the heavier set.
    #[cfg(test)]
    pub(crate) fn path_share(&self) -> f64 {
        let w = |set: &[usize]| set.iter().map(|&s| work(&self.nodes[s])).sum::<f64>();
        let total = w(&self.sets[0]) + w(&self.sets[1]) + w(&self.top);
        (w(&self.top) + w(&self.sets[0]).max(w(&self.sets[1]))) / total
    }

    /// The columns of the widest supernode of the top.
    #[cfg(test)]
    pub(crate) fn widest_top(&self) -> usize {
        self.top.iter().map(|&s| self.nodes[s].ncols).max().unwrap_or(0)
    }

    /// Solve L Lᵀ x = b in place (`l`: L's values), the sets on `pair`'s two threads.
    pub(crate) fn solve(&mut self, x: &mut [f64], l: &[f64], pair: Option<&Pair>) {
        let SplitSolve { nodes, row_idx, sets, top, top_cols, set_cols, bufs, rows, panel, block } =
            self;
        let (nodes, row_idx) = (&nodes[..], &row_idx[..]);
        let [b0, b1] = bufs;
        let [w0, w1] = rows;
        // Forward: each set on its copy, the top's rows collecting its updates from 0.
        {
            let b: &[f64] = x;
            both(pair, [(&sets[0], &mut *b0, &mut *w0), (&sets[1], &mut *b1, &mut *w1)], |part| {
                let (set, buf, w) = part;
                buf.copy_from_slice(b);
                top_cols.iter().for_each(|&c| buf[c] = 0.0);
                for &s in set.iter() {
                    forward_wide(nodes[s].view(row_idx, l), buf, w);
                }
            });
        }
        for (k, buf) in [&*b0, &*b1].into_iter().enumerate() {
            set_cols[k].iter().for_each(|&c| x[c] = buf[c]);
        }
        top_cols.iter().for_each(|&c| x[c] = (x[c] + b0[c]) + b1[c]);
        for &s in top.iter() {
            if nodes[s].ncols >= 2 * BLOCK {
                top_forward(nodes[s].view(row_idx, l), x, panel, block, pair);
            } else {
                forward_wide(nodes[s].view(row_idx, l), x, w0);
            }
        }
        // Backward: the top, then each set on its copy.
        for &s in top.iter().rev() {
            if nodes[s].ncols >= 2 * BLOCK {
                top_backward(nodes[s].view(row_idx, l), x, panel, w0, pair);
            } else {
                backward_wide(nodes[s].view(row_idx, l), x, w0);
            }
        }
        {
            let y: &[f64] = x;
            both(pair, [(&sets[0], &mut *b0, &mut *w0), (&sets[1], &mut *b1, &mut *w1)], |part| {
                let (set, buf, w) = part;
                buf.copy_from_slice(y);
                for &s in set.iter().rev() {
                    backward_wide(nodes[s].view(row_idx, l), buf, w);
                }
            });
        }
        for (k, buf) in [&*b0, &*b1].into_iter().enumerate() {
            set_cols[k].iter().for_each(|&c| x[c] = buf[c]);
        }
    }
}

/// A wide top supernode's forward solve, by blocks of [`BLOCK`] columns: each block's
/// triangle on this thread, then the rows below it (its own and those of `pat`) in two
/// halves on `pair`'s threads. `t` holds the supernode's columns, then the updates of its
/// rows below (from zero); each entry's updates come in column order whoever makes them.
fn top_forward(sn: View<'_>, x: &mut [f64], t: &mut [f64], block: &mut [f64], pair: Option<&Pair>) {
    let View { begin, nc, ld, pat, v } = sn;
    let t = &mut t[..ld];
    t[..nc].copy_from_slice(&x[begin..begin + nc]);
    t[nc..].fill(0.0);
    for j0 in (0..nc).step_by(BLOCK) {
        let j1 = (j0 + BLOCK).min(nc);
        triangle_forward(v, ld, j0, j1, t);
        let xb = &mut block[..j1 - j0];
        xb.copy_from_slice(&t[j0..j1]);
        let xb: &[f64] = xb;
        let below = &mut t[j1..];
        let half = below.len() / 2;
        let (h0, h1) = below.split_at_mut(half);
        both(pair, [(h0, j1), (h1, j1 + half)], |(h, r0)| {
            panel_forward_wide(v, ld, j0, *r0, xb, h);
        });
    }
    x[begin..begin + nc].copy_from_slice(&t[..nc]);
    for (&r, &ti) in pat.iter().zip(&t[nc..]) {
        x[r] += ti;
    }
}

/// A wide top supernode's backward solve: its columns less L_bsᵀ x[pat] in two halves,
/// then by blocks of [`BLOCK`] columns from the last: each block's columns less the rows
/// after the block (in two halves), then its triangle on this thread.
fn top_backward(sn: View<'_>, x: &mut [f64], t: &mut [f64], w: &mut [f64], pair: Option<&Pair>) {
    let View { begin, nc, ld, pat, v } = sn;
    let w = &mut w[..pat.len()];
    for (wi, &r) in w.iter_mut().zip(pat) {
        *wi = x[r];
    }
    let w: &[f64] = w;
    let t = &mut t[..nc];
    t.copy_from_slice(&x[begin..begin + nc]);
    if !pat.is_empty() {
        let (h0, h1) = t.split_at_mut(nc / 2);
        both(pair, [(h0, 0), (h1, nc / 2)], |(h, c0)| {
            columns_less_wide(v, ld, *c0, nc, w, h);
        });
    }
    let starts: Vec<usize> = (0..nc).step_by(BLOCK).collect();
    for &j0 in starts.iter().rev() {
        let j1 = (j0 + BLOCK).min(nc);
        if j1 < nc {
            let (left, right) = t.split_at_mut(j1);
            let right: &[f64] = right;
            let (h0, h1) = left[j0..].split_at_mut((j1 - j0) / 2);
            let mid = j0 + (j1 - j0) / 2;
            both(pair, [(h0, j0), (h1, mid)], |(h, c0)| {
                columns_less_wide(v, ld, *c0, j1, right, h);
            });
        }
        triangle_backward(v, ld, j0, j1, t);
    }
    x[begin..begin + nc].copy_from_slice(t);
}

wide_fn! {
    /// [`panel_forward_kernel`].
    fn panel_forward_wide(v: &[f64], ld: usize, j0: usize, r0: usize, xb: &[f64], h: &mut [f64]) = panel_forward_kernel;
}

wide_fn! {
    /// [`columns_less_kernel`].
    fn columns_less_wide(v: &[f64], ld: usize, c0: usize, r0: usize, y: &[f64], h: &mut [f64]) = columns_less_kernel;
}

/// h_i −= Σ_k L[r0 + i, j0 + k] xb_k, column after column (L column-major, leading
/// dimension `ld`).
#[inline(always)]
fn panel_forward_kernel(v: &[f64], ld: usize, j0: usize, r0: usize, xb: &[f64], h: &mut [f64]) {
    let n = h.len();
    less_columns(h, |k| &v[(j0 + k) * ld + r0..(j0 + k) * ld + r0 + n], xb, 1.0);
}

/// h_i −= Σ_k col(k)_i (sign x_k), column after column, four columns at a time
/// ([`sub4`]) with the bits of one at a time. `sign` is ±1 (exact: h − c (−x) is h + c x
/// to the bit).
#[inline(always)]
fn less_columns<'a>(h: &mut [f64], col: impl Fn(usize) -> &'a [f64], x: &[f64], sign: f64) {
    let mut k = 0;
    while k + 4 <= x.len() {
        let xs = [x[k] * sign, x[k + 1] * sign, x[k + 2] * sign, x[k + 3] * sign];
        sub4(h, [col(k), col(k + 1), col(k + 2), col(k + 3)], xs);
        k += 4;
    }
    for (k, &xk) in x.iter().enumerate().skip(k) {
        let xk = xk * sign;
        for (hi, &lik) in h.iter_mut().zip(col(k)) {
            *hi -= lik * xk;
        }
    }
}

/// h_k −= Σ_i L[r0 + i, c0 + k] y_i: each column c0 + k less its rows from r0 times y.
#[inline(always)]
fn columns_less_kernel(v: &[f64], ld: usize, c0: usize, r0: usize, y: &[f64], h: &mut [f64]) {
    let col = |k: usize| &v[(c0 + k) * ld + r0..(c0 + k) * ld + r0 + y.len()];
    let mut k = 0;
    while k + 4 <= h.len() {
        let d = dot4([col(k), col(k + 1), col(k + 2), col(k + 3)], y);
        for q in 0..4 {
            h[k + q] -= d[q];
        }
        k += 4;
    }
    for (k, hk) in h.iter_mut().enumerate().skip(k) {
        *hk -= dot(col(k), y);
    }
}

/// h_i ← (((h_i − c0_i x0) − c1_i x1) − c2_i x2) − c3_i x3: four columns' updates of
/// `h` in their order, as four passes of `h_i −= c_i x` would make them.
#[inline(always)]
fn sub4(h: &mut [f64], c: [&[f64]; 4], x: [f64; 4]) {
    let n = h.len();
    let (c0, c1, c2, c3) = (&c[0][..n], &c[1][..n], &c[2][..n], &c[3][..n]);
    for i in 0..n {
        h[i] = (((h[i] - c0[i] * x[0]) - c1[i] * x[1]) - c2[i] * x[2]) - c3[i] * x[3];
    }
}

/// [`dot`] of four columns with the same `b` (read once for the four), each with
/// [`dot`]'s bits.
#[inline(always)]
fn dot4(a: [&[f64]; 4], b: &[f64]) -> [f64; 4] {
    let n = b.len();
    let a = [&a[0][..n], &a[1][..n], &a[2][..n], &a[3][..n]];
    let mut lanes = [[0.0f64; 8]; 4];
    let full = n - n % 8;
    for c in (0..full).step_by(8) {
        for k in 0..8 {
            let bk = b[c + k];
            for q in 0..4 {
                lanes[q][k] += a[q][c + k] * bk;
            }
        }
    }
    for k in 0..n - full {
        for q in 0..4 {
            lanes[q][k] += a[q][full + k] * b[full + k];
        }
    }
    lanes.map(|l| sum_lanes(&l))
}

wide_fn! {
    /// A supernode's part of the forward solve ([`forward_kernel`]).
    fn forward_wide(sn: View<'_>, x: &mut [f64], w: &mut [f64]) = forward_kernel;
}

wide_fn! {
    /// A supernode's part of the backward solve ([`backward_kernel`]).
    fn backward_wide(sn: View<'_>, x: &mut [f64], w: &mut [f64]) = backward_kernel;
}

/// x_s ← L_ss⁻¹ x_s, then x[pat] −= L_bs x_s, for the supernode `sn`. Columns are taken
/// four at a time ([`triangle_forward`], [`less_columns`]) with the bits of one at a time.
#[inline(always)]
fn forward_kernel(sn: View<'_>, x: &mut [f64], w: &mut [f64]) {
    let View { begin, nc, ld, pat, v } = sn;
    let plen = pat.len();
    let xs = &mut x[begin..begin + nc];
    triangle_forward(v, ld, 0, nc, xs);
    if plen == 0 {
        return;
    }
    let w = &mut w[..plen];
    // w = Σ_j L_bs,j x_j, as 0 − Σ_j L_bs,j (−x_j) (the same bits).
    w.fill(0.0);
    less_columns(w, |j| &v[j * ld + nc..(j + 1) * ld], xs, -1.0);
    for (&r, &wi) in pat.iter().zip(w.iter()) {
        x[r] -= wi;
    }
}

/// x_s ← x_s − L_bsᵀ x[pat], then x_s ← L_ssᵀ⁻¹ x_s, for the supernode `sn`.
#[inline(always)]
fn backward_kernel(sn: View<'_>, x: &mut [f64], w: &mut [f64]) {
    let View { begin, nc, ld, pat, v } = sn;
    let plen = pat.len();
    let w = &mut w[..plen];
    for (wi, &r) in w.iter_mut().zip(pat) {
        *wi = x[r];
    }
    let xs = &mut x[begin..begin + nc];
    columns_less_kernel(v, ld, 0, nc, w, xs);
    triangle_backward(v, ld, 0, nc, xs);
}

/// t_j ← (t_j − Σ_{j0≤i<j} L_ji t_i) / L_jj for the columns j0..j1 of a supernode's triangle
/// (L column-major, leading dimension `ld`; `t` indexed by the supernode's columns), each
/// column's rows down to j1. Four columns at a time below their own 4 × 4 triangle
/// ([`sub4`]), with the bits of one column at a time.
#[inline(always)]
fn triangle_forward(v: &[f64], ld: usize, j0: usize, j1: usize, t: &mut [f64]) {
    let mut j = j0;
    while j < j1 {
        let width = if j + 4 <= j1 { 4 } else { 1 };
        // The columns' own rows down to the group's end, one column at a time.
        let end = if width == 4 { j + 4 } else { j1 };
        for jj in j..j + width {
            let col = &v[jj * ld..jj * ld + end];
            let xj = t[jj] / col[jj];
            t[jj] = xj;
            for (ti, &lij) in t[jj + 1..end].iter_mut().zip(&col[jj + 1..]) {
                *ti -= lij * xj;
            }
        }
        if width == 4 {
            let (head, tail) = t[..j1].split_at_mut(j + 4);
            let col = |q: usize| &v[(j + q) * ld + j + 4..(j + q) * ld + j1];
            sub4(
                tail,
                [col(0), col(1), col(2), col(3)],
                [head[j], head[j + 1], head[j + 2], head[j + 3]],
            );
        }
        j += width;
    }
}

/// t_j ← (t_j − Σ_{j<i<j1} L_ij t_i) / L_jj for the columns j1 − 1 down to j0 of a
/// supernode's triangle (the transposed solve of [`triangle_forward`]).
#[inline(always)]
fn triangle_backward(v: &[f64], ld: usize, j0: usize, j1: usize, t: &mut [f64]) {
    for j in (j0..j1).rev() {
        let col = &v[j * ld..j * ld + j1];
        let s = dot(&col[j + 1..], &t[j + 1..j1]);
        t[j] = (t[j] - s) / col[j];
    }
}

/// Σ a_i b_i in eight lanes (i mod 8), summed pairwise at the end: the order is fixed, so
/// the AVX2 and baseline copies agree bit for bit.
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            lanes[k] += x[k] * y[k];
        }
    }
    for (k, (x, y)) in ra.iter().zip(rb).enumerate() {
        lanes[k] += x * y;
    }
    sum_lanes(&lanes)
}

/// The eight lanes of [`dot`] and [`dot4`] summed, in one order for both.
#[inline(always)]
fn sum_lanes(l: &[f64; 8]) -> f64 {
    ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::testing::{bits, uniform};

    /// The kernels one column at a time (before they took four): the blocked ones must
    /// give their bits.
    fn forward_by_columns(sn: View<'_>, x: &mut [f64], w: &mut [f64]) {
        let View { begin, nc, ld, pat, v } = sn;
        let xs = &mut x[begin..begin + nc];
        for j in 0..nc {
            let col = &v[j * ld..j * ld + nc];
            let xj = xs[j] / col[j];
            xs[j] = xj;
            for (xi, &lij) in xs[j + 1..].iter_mut().zip(&col[j + 1..]) {
                *xi -= lij * xj;
            }
        }
        let w = &mut w[..pat.len()];
        w.fill(0.0);
        for j in 0..nc {
            for (wi, &lij) in w.iter_mut().zip(&v[j * ld + nc..(j + 1) * ld]) {
                *wi += lij * xs[j];
            }
        }
        for (&r, &wi) in pat.iter().zip(w.iter()) {
            x[r] -= wi;
        }
    }

    fn backward_by_columns(sn: View<'_>, x: &mut [f64], w: &mut [f64]) {
        let View { begin, nc, ld, pat, v } = sn;
        let w = &mut w[..pat.len()];
        for (wi, &r) in w.iter_mut().zip(pat) {
            *wi = x[r];
        }
        let xs = &mut x[begin..begin + nc];
        for j in 0..nc {
            xs[j] -= dot(&v[j * ld + nc..(j + 1) * ld], w);
        }
        for j in (0..nc).rev() {
            let col = &v[j * ld..j * ld + nc];
            let s = dot(&col[j + 1..], &xs[j + 1..]);
            xs[j] = (xs[j] - s) / col[j];
        }
    }

    /// A supernode's kernels, in their AVX2 copies and their baseline ones, agree bit for
    /// bit, and with the kernels by columns; the forward then backward kernel solve the
    /// supernode's own block: with no rows below, L_ss L_ssᵀ x = b.
    #[test]
    fn the_kernels_solve_a_dense_block_and_their_copies_agree() {
        let mut rnd = uniform(3);
        for (nc, plen) in [(1, 0), (7, 0), (13, 5), (40, 33), (9, 70)] {
            let ld = nc + plen;
            let n = nc + plen + 3;
            // A well-conditioned lower triangle and rows below.
            let l: Vec<f64> = (0..ld * nc)
                .map(|k| {
                    let (i, j) = (k % ld, k / ld);
                    if i == j { 2.0 + rnd() } else { 0.3 * rnd() }
                })
                .collect();
            let pat: Vec<usize> = (0..plen).map(|i| nc + 2 + i).collect();
            let b: Vec<f64> = (0..n).map(|_| rnd()).collect();
            let mut w = vec![0.0; plen.max(1)];
            let (mut x1, mut x2, mut x3) = (b.clone(), b.clone(), b.clone());
            let sn = View { begin: 1, nc, ld, pat: &pat, v: &l };
            forward_wide(sn, &mut x1, &mut w);
            forward_kernel(sn, &mut x2, &mut w);
            forward_by_columns(sn, &mut x3, &mut w);
            assert_eq!(bits(&x1), bits(&x2));
            assert_eq!(bits(&x1), bits(&x3));
            backward_wide(sn, &mut x1, &mut w);
            backward_kernel(sn, &mut x2, &mut w);
            backward_by_columns(sn, &mut x3, &mut w);
            assert_eq!(bits(&x1), bits(&x2));
            assert_eq!(bits(&x1), bits(&x3));
            // The blocks' kernels: rows from 3 and columns from 1 (a panel of nc - 1).
            if nc > 1 {
                let xb: Vec<f64> = (0..nc - 1).map(|_| rnd()).collect();
                let (mut h1, mut h2) = (b[..ld - 3].to_vec(), b[..ld - 3].to_vec());
                panel_forward_wide(&l, ld, 1, 3, &xb, &mut h1);
                panel_forward_kernel(&l, ld, 1, 3, &xb, &mut h2);
                assert_eq!(bits(&h1), bits(&h2));
                // One column at a time.
                let mut h3 = b[..ld - 3].to_vec();
                for (k, &xk) in xb.iter().enumerate() {
                    for (hi, &lik) in h3.iter_mut().zip(&l[(1 + k) * ld + 3..]) {
                        *hi -= lik * xk;
                    }
                }
                assert_eq!(bits(&h1), bits(&h3));
                let y = &b[..ld - 3];
                let (mut c1, mut c2) = (xb.clone(), xb.clone());
                columns_less_wide(&l, ld, 1, 3, y, &mut c1);
                columns_less_kernel(&l, ld, 1, 3, y, &mut c2);
                assert_eq!(bits(&c1), bits(&c2));
                let c3: Vec<f64> = (0..nc - 1)
                    .map(|k| xb[k] - dot(&l[(1 + k) * ld + 3..(1 + k) * ld + ld], y))
                    .collect();
                assert_eq!(bits(&c1), bits(&c3));
            }
            if plen == 0 {
                let lm =
                    nalgebra::DMatrix::from_fn(
                        nc,
                        nc,
                        |i, j| if i >= j { l[j * ld + i] } else { 0.0 },
                    );
                let r = &lm * lm.transpose() * nalgebra::DVector::from_column_slice(&x1[1..1 + nc])
                    - nalgebra::DVector::from_column_slice(&b[1..1 + nc]);
                assert!(r.amax() < 1e-12, "nc {nc}: residual {}", r.amax());
            }
        }
    }
}
