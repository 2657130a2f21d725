//! Sparse assembly of one island's QP (docs/physics.md §3):
//!
//! ```text
//! minimise ½ xᵀ H x − pᵀ x   s.t.  C x ≥ r
//! H = 2M + Σ_k (κ_N,k c_k c_kᵀ + κ_T,k T_kᵀ T_k),  p = 2M u⁻ + b,  r_k = (c_kᵀu⁻ + v_k)/2
//! ```
//!
//! with x ordered (u_1, ω_1, …, u_n, ω_n) over the island's bodies, `c_k` the normal row
//! (N, r_i × N | −N, −r_j × N), `T_k = (I − N Nᵀ) R_k` the tangential part of the relative
//! velocity R_k x = (u_i + ω_i × r_i) − (u_j + ω_j × r_j), and v_k ≥ 0 the separation
//! velocity demanded of a penetrating contact. Only the block structure of the contact graph
//! is stored: H's upper triangle and C in compressed sparse columns.

use crate::counting_sort::by_key;
use crate::solver::islands::BIG_ISLAND_CONTACTS;
use crate::solver::wide::wide_fn;
use clarabel::algebra::CscMatrix;
use nalgebra::{Matrix3, SMatrix, SVector, Vector3};
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};

/// The state of one body at the instant of the jump.
#[derive(Debug, Clone, PartialEq)]
pub struct JumpBody {
    /// Mass, kg.
    pub mass: f64,
    /// World inertia tensor at the jump, kg m².
    pub inertia: Matrix3<f64>,
    /// Centre of mass at which the contacts were detected, m.
    pub pos: Vector3<f64>,
    /// Velocity before the jump u⁻, m/s.
    pub vel: Vector3<f64>,
    /// Angular velocity before the jump ω⁻ (world), rad/s.
    pub omega: Vector3<f64>,
}

/// A contact of an island, with body indices local to the island.
#[derive(Debug, Clone, PartialEq)]
pub struct JumpContact {
    /// Local index of the body the normal points into.
    pub i: usize,
    /// Local index of the other body (`None`: static collider).
    pub j: Option<usize>,
    /// Contact point, m.
    pub point: Vector3<f64>,
    /// Unit normal from j into i.
    pub normal: Vector3<f64>,
    /// κ_N of this contact, kg.
    pub kappa_n: f64,
    /// κ_T of this contact, kg.
    pub kappa_t: f64,
    /// Separation velocity demanded after the jump, m/s (0 unless penetrating).
    pub separation: f64,
}

/// A convex QP `min ½ xᵀHx − pᵀx s.t. Cx ≥ r` (H symmetric positive definite).
///
/// H and C are held as compressed columns, or, for a QP assembled from bodies and contacts,
/// as blocks of bodies (H's 6 × 6 blocks, C's rows on two bodies): the iterative solvers
/// run on the blocks, and the compressed columns ([`Qp::h_upper`], [`Qp::c`]) are made
/// from them the first time they are asked for (Clarabel, the exact active-set solver).
#[derive(Debug, Clone)]
pub struct Qp {
    /// Upper triangle of H, n × n (made from `h_blocks` on demand when those are given).
    h_upper: OnceLock<CscMatrix<f64>>,
    /// Linear term p (the objective has −pᵀx).
    pub p: Vec<f64>,
    /// Constraint matrix C, m × n (made from `rows` on demand when those are given).
    c: OnceLock<CscMatrix<f64>>,
    /// Right-hand side r.
    pub r: Vec<f64>,
    /// C by rows of two bodies' 6 columns, built on the first product (see [`RowBlocks`]).
    rows: OnceLock<Option<RowBlocks>>,
    /// H by 6 × 6 blocks of bodies, as [`assemble`] summed it (`None` for a QP given as
    /// matrices): the block factor reads its blocks from here instead of from `h_upper`.
    h_blocks: Option<Arc<BlockUpper>>,
}

/// Two QPs are equal when their data are (H, p, C, r), however they are held.
impl PartialEq for Qp {
    fn eq(&self, other: &Self) -> bool {
        self.p == other.p
            && self.r == other.r
            && self.h_upper() == other.h_upper()
            && self.c() == other.c()
    }
}

/// Marks the second body slot of a row that touches one body only.
pub(crate) const NO_BODY: u32 = u32::MAX;

/// C stored by rows, each row's nonzeros on the 6 columns of at most two bodies (a contact
/// row touches body i and body j, or body i alone against a static collider): the layout
/// the iterative solvers' products with C and Cᵀ run on. Per row it keeps the two bodies
/// (the smaller index first) and the 12 values, explicit zeros included, so that the
/// products add the same terms in the same order as the compressed columns do and give the
/// same result, bit for bit, without an index per entry and with six contiguous entries of
/// x per body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowBlocks {
    bodies: Vec<[u32; 2]>,
    vals: Vec<[f64; 12]>,
}

impl RowBlocks {
    /// The layout of `c`, or `None` when a row has nonzeros on more than two bodies or `c`
    /// does not have 6 columns per body.
    pub(crate) fn new(c: &CscMatrix<f64>) -> Option<Self> {
        if !c.n.is_multiple_of(6) || c.n / 6 >= NO_BODY as usize {
            return None;
        }
        let mut bodies = vec![[NO_BODY; 2]; c.m];
        let mut vals = vec![[0.0; 12]; c.m];
        for col in 0..c.n {
            let (b, a) = ((col / 6) as u32, col % 6);
            for k in c.colptr[col]..c.colptr[col + 1] {
                let row = c.rowval[k];
                let slots = &mut bodies[row];
                // Columns come in ascending order, so slot 0 gets the smaller body.
                let s = if slots[0] == NO_BODY || slots[0] == b {
                    0
                } else if slots[1] == NO_BODY || slots[1] == b {
                    1
                } else {
                    return None;
                };
                slots[s] = b;
                vals[row][6 * s + a] = c.nzval[k];
            }
        }
        Some(RowBlocks { bodies, vals })
    }

    /// The layout with these rows' bodies and values (as [`RowBlocks::new`] makes them).
    pub(crate) fn from_rows(bodies: Vec<[u32; 2]>, vals: Vec<[f64; 12]>) -> Self {
        assert_eq!(bodies.len(), vals.len());
        RowBlocks { bodies, vals }
    }

    /// C in compressed columns (n = 6 × bodies): column 6 b + a holds entry a of every row
    /// on body b, rows ascending, explicit zeros included: the matrix [`csc_from_rows`]
    /// makes from the rows' entries, bit for bit, sorting one key per row and body instead
    /// of one per entry.
    pub(crate) fn to_csc(&self, n: usize) -> CscMatrix<f64> {
        let nb = n / 6;
        // (row, slot) of every row's side on a body, and that body.
        let slots: Vec<(usize, usize)> = (0..self.bodies.len())
            .flat_map(|k| {
                (0..2).filter(move |&s| self.bodies[k][s] != NO_BODY).map(move |s| (k, s))
            })
            .collect();
        let keys: Vec<usize> = slots.iter().map(|&(k, s)| self.bodies[k][s] as usize).collect();
        let (start, order) = by_key(nb, &keys);
        let mut colptr = Vec::with_capacity(n + 1);
        let mut rowval = Vec::with_capacity(6 * keys.len());
        let mut nzval = Vec::with_capacity(6 * keys.len());
        colptr.push(0);
        for b in 0..nb {
            let mine = &order[start[b]..start[b + 1]];
            for a in 0..6 {
                for &e in mine {
                    let (k, s) = slots[e];
                    rowval.push(k);
                    nzval.push(self.vals[k][6 * s + a]);
                }
                colptr.push(rowval.len());
            }
        }
        CscMatrix { m: self.bodies.len(), n, colptr, rowval, nzval }
    }

    /// Row k: its bodies (the smaller first, [`NO_BODY`] in the second slot for a row on one
    /// body) and its 6 values on each.
    pub(crate) fn row(&self, k: usize) -> ([u32; 2], &[f64; 12]) {
        (self.bodies[k], &self.vals[k])
    }

    /// y = C x.
    fn mul(&self, x: &[f64], y: &mut [f64]) {
        self.mul_rows(0, x, y);
    }

    /// Rows `first..first + y.len()` of C x into y. Three consecutive rows on the same
    /// bodies (a frictional contact's normal and tangents) are taken together, reading
    /// their bodies' entries of x once; each row still sums its 12 terms in order.
    pub(crate) fn mul_rows(&self, first: usize, x: &[f64], y: &mut [f64]) {
        let end = first + y.len();
        mul_rows_wide(&self.bodies[first..end], &self.vals[first..end], x, y);
    }

    /// y = Cᵀ λ.
    fn mul_transpose(&self, lambda: &[f64], y: &mut [f64]) {
        transpose_all_wide(&self.bodies, &self.vals, lambda, y);
    }

    /// The rows with a nonzero on a body of `first..end`, ascending: the only rows that
    /// [`RowBlocks::mul_transpose_rows`] needs for those bodies.
    pub(crate) fn rows_of_bodies(&self, first: usize, end: usize) -> Vec<u32> {
        let bodies = first as u32..end as u32;
        (0..self.bodies.len() as u32)
            .filter(|&k| self.bodies[k as usize].iter().any(|b| bodies.contains(b)))
            .collect()
    }

    /// The entries of Cᵀ λ of bodies `first..first + y.len() / 6` into y, from `rows` only
    /// (ascending, every row with a nonzero on one of those bodies, as
    /// [`RowBlocks::rows_of_bodies`] gives them): each entry sums its rows' terms in the
    /// rows' order, as [`RowBlocks::mul_transpose`] does, so it is the same, bit for bit.
    pub(crate) fn mul_transpose_rows(
        &self,
        rows: &[u32],
        lambda: &[f64],
        first: usize,
        y: &mut [f64],
    ) {
        transpose_rows_wide(&self.bodies, &self.vals, rows, lambda, first, y);
    }
}

wide_fn! {
    /// Rows of C x ([`mul_rows_kernel`]).
    fn mul_rows_wide(bodies: &[[u32; 2]], vals: &[[f64; 12]], x: &[f64], y: &mut [f64]) =
        mul_rows_kernel;
}

wide_fn! {
    /// Cᵀ λ over every row ([`transpose_all_kernel`]).
    fn transpose_all_wide(bodies: &[[u32; 2]], vals: &[[f64; 12]], lambda: &[f64], y: &mut [f64]) =
        transpose_all_kernel;
}

wide_fn! {
    /// Cᵀ λ over a list of rows ([`transpose_rows_kernel`]).
    fn transpose_rows_wide(
        bodies: &[[u32; 2]],
        vals: &[[f64; 12]],
        rows: &[u32],
        lambda: &[f64],
        first: usize,
        y: &mut [f64],
    ) = transpose_rows_kernel;
}

/// y = the rows (`bodies`, `vals`) times x. Three consecutive rows on the same bodies (a
/// frictional contact's normal and tangents) are taken together, reading their bodies'
/// entries of x once; each row still sums its 12 terms in order.
#[inline(always)]
fn mul_rows_kernel(bodies: &[[u32; 2]], vals: &[[f64; 12]], x: &[f64], y: &mut [f64]) {
    let mut k = 0;
    while k < y.len() {
        let pair = bodies[k];
        if k + 3 <= y.len() && bodies[k + 1] == pair && bodies[k + 2] == pair {
            y[k..k + 3].copy_from_slice(&row_products::<3>(&vals[k..k + 3], pair, x));
            k += 3;
        } else {
            y[k] = row_products::<1>(&vals[k..k + 1], pair, x)[0];
            k += 1;
        }
    }
}

/// The `R` rows `v`, all on the bodies `pair`, times x: each row sums its 12 terms in
/// order, and the bodies' entries of x are read once for all of them.
#[inline(always)]
fn row_products<const R: usize>(v: &[[f64; 12]], pair: [u32; 2], x: &[f64]) -> [f64; R] {
    let v: &[[f64; 12]; R] = v.try_into().expect("R rows");
    let mut acc = [0.0; R];
    for (s, &b) in pair.iter().enumerate() {
        if b != NO_BODY {
            let xb = &x[6 * b as usize..6 * b as usize + 6];
            for a in 0..6 {
                for r in 0..R {
                    acc[r] += v[r][6 * s + a] * xb[a];
                }
            }
        }
    }
    acc
}

/// y = Cᵀ λ over every row ([`transpose_kernel`] on rows 0, 1, 2, ...).
#[inline(always)]
fn transpose_all_kernel(bodies: &[[u32; 2]], vals: &[[f64; 12]], lambda: &[f64], y: &mut [f64]) {
    transpose_kernel(bodies, vals, bodies.len(), |i| i, lambda, 0, y);
}

/// The entries of Cᵀ λ of bodies `first..first + y.len() / 6` into y, summed over `rows`
/// (ascending).
#[inline(always)]
fn transpose_rows_kernel(
    bodies: &[[u32; 2]],
    vals: &[[f64; 12]],
    rows: &[u32],
    lambda: &[f64],
    first: usize,
    y: &mut [f64],
) {
    transpose_kernel(bodies, vals, rows.len(), |i| rows[i] as usize, lambda, first, y);
}

/// The entries of Cᵀ λ of bodies `first..first + y.len() / 6` into y, summed over the
/// `count` rows `row(0)`, `row(1)`, ... (ascending). Runs of three consecutive rows on one
/// pair of bodies are added together ([`add_rows`]).
#[inline(always)]
fn transpose_kernel(
    bodies: &[[u32; 2]],
    vals: &[[f64; 12]],
    count: usize,
    row: impl Fn(usize) -> usize,
    lambda: &[f64],
    first: usize,
    y: &mut [f64],
) {
    y.iter_mut().for_each(|a| *a = 0.0);
    // The bodies numbered from `first` (y's first body): the others wrap to numbers past
    // `mine`'s end, as does `NO_BODY`.
    let first = first as u32;
    let mine = 0..(y.len() / 6) as u32;
    let shifted = |[a, b]: [u32; 2]| [a.wrapping_sub(first), b.wrapping_sub(first)];
    let mut i = 0;
    while i < count {
        let k = row(i);
        let pair = bodies[k];
        if i + 3 <= count && row(i + 2) == k + 2 && bodies[k + 1] == pair && bodies[k + 2] == pair {
            add_rows::<3>(&vals[k..k + 3], shifted(pair), &lambda[k..k + 3], mine.clone(), y);
            i += 3;
        } else {
            add_rows::<1>(&vals[k..k + 1], shifted(pair), &lambda[k..k + 1], mine.clone(), y);
            i += 1;
        }
    }
}

/// The `R` rows `v` on the bodies `pair` (numbered as y's bodies), times their λ `l`,
/// added to y on those of the bodies that lie in `bodies`: each entry of y gets the rows'
/// terms in the rows' order, loaded and stored once.
#[inline(always)]
fn add_rows<const R: usize>(
    v: &[[f64; 12]],
    pair: [u32; 2],
    l: &[f64],
    bodies: std::ops::Range<u32>,
    y: &mut [f64],
) {
    let (v, l): (&[[f64; 12]; R], &[f64; R]) =
        (v.try_into().expect("R rows"), l.try_into().expect("R multipliers"));
    for (s, &b) in pair.iter().enumerate() {
        if bodies.contains(&b) {
            let o = 6 * b as usize;
            let yb = &mut y[o..o + 6];
            for a in 0..6 {
                let mut t = yb[a];
                for r in 0..R {
                    t += v[r][6 * s + a] * l[r];
                }
                yb[a] = t;
            }
        }
    }
}

/// Programs with at least this many rows are solved by ADMM on two threads when a rayon
/// worker is idle ([`crate::solver::pair`]).
pub(crate) const PARALLEL_MIN_ROWS: usize = 2048;

impl Qp {
    /// The QP with these data.
    pub fn new(h_upper: CscMatrix<f64>, p: Vec<f64>, c: CscMatrix<f64>, r: Vec<f64>) -> Self {
        Qp {
            h_upper: OnceLock::from(h_upper),
            p,
            c: OnceLock::from(c),
            r,
            rows: OnceLock::new(),
            h_blocks: None,
        }
    }

    /// The QP with `base`'s H and p, and constraints `r` on C given by its rows (its
    /// compressed columns then made on demand), by its compressed columns, or both.
    /// When both are given they must be the same matrix.
    pub(crate) fn with_h_of(
        base: &Qp,
        c: Option<CscMatrix<f64>>,
        rows: Option<RowBlocks>,
        r: Vec<f64>,
    ) -> Self {
        assert!(c.is_some() || rows.is_some(), "C given by rows or as compressed columns");
        debug_assert!(
            c.as_ref()
                .zip(rows.as_ref())
                .is_none_or(|(c, rows)| { RowBlocks::new(c).is_some_and(|made| made == *rows) })
        );
        let c = c.map_or_else(OnceLock::new, OnceLock::from);
        let rows = rows.map_or_else(OnceLock::new, |rows| OnceLock::from(Some(rows)));
        let h_upper = match &base.h_blocks {
            Some(_) => OnceLock::new(),
            None => OnceLock::from(base.h_upper().clone()),
        };
        Qp { h_upper, p: base.p.clone(), c, r, rows, h_blocks: base.h_blocks.clone() }
    }

    /// H's upper triangle in compressed columns.
    pub fn h_upper(&self) -> &CscMatrix<f64> {
        self.h_upper.get_or_init(|| {
            self.h_blocks.as_ref().expect("H given as blocks or as compressed columns").to_csc()
        })
    }

    /// C in compressed columns.
    pub fn c(&self) -> &CscMatrix<f64> {
        self.c.get_or_init(|| {
            let rows = self.rows.get().and_then(Option::as_ref);
            rows.expect("C given by rows or as compressed columns").to_csc(self.n())
        })
    }

    pub(crate) fn row_blocks(&self) -> Option<&RowBlocks> {
        self.rows.get_or_init(|| RowBlocks::new(self.c())).as_ref()
    }

    /// H by blocks of bodies, when the QP was assembled from bodies and contacts.
    pub(crate) fn h_blocks(&self) -> Option<&BlockUpper> {
        self.h_blocks.as_deref()
    }

    /// Number of unknowns.
    pub fn n(&self) -> usize {
        self.p.len()
    }
    /// Number of constraints.
    pub fn m(&self) -> usize {
        self.r.len()
    }
    /// H as a dense symmetric matrix (both triangles, from the upper one).
    pub fn h_dense(&self) -> nalgebra::DMatrix<f64> {
        let n = self.n();
        let mut d = nalgebra::DMatrix::zeros(n, n);
        self.h_upper_entries(|row, col, v| {
            d[(row, col)] = v;
            d[(col, row)] = v;
        });
        d
    }

    /// Every stored entry (row ≤ col, value) of H's upper triangle, each once: from the
    /// compressed columns when they exist, else from the assembly's blocks (the entries
    /// those columns would hold, without building them).
    pub(crate) fn h_upper_entries(&self, mut entry: impl FnMut(usize, usize, f64)) {
        match (self.h_upper.get(), &self.h_blocks) {
            (None, Some(blocks)) => blocks.for_each_stored(entry),
            _ => {
                let h = self.h_upper();
                for col in 0..h.n {
                    for k in h.colptr[col]..h.colptr[col + 1] {
                        entry(h.rowval[k], col, h.nzval[k]);
                    }
                }
            }
        }
    }

    /// C's rows as (column, value) lists, flat: row k's entries are
    /// `entries[ptr[k]..ptr[k + 1]]`, ascending columns, explicit zeros as C's compressed
    /// columns hold them. From C's rows of two bodies when the compressed columns have not
    /// been made (they would be made from those rows, with the same entries), else from the
    /// compressed columns.
    pub(crate) fn c_row_entries(&self) -> (Vec<usize>, Vec<(usize, f64)>) {
        let m = self.m();
        let mut ptr = Vec::with_capacity(m + 1);
        ptr.push(0);
        let given_rows =
            if self.c.get().is_some() { None } else { self.rows.get().and_then(Option::as_ref) };
        let entries = match given_rows {
            Some(rows) => {
                let mut entries = Vec::with_capacity(12 * m);
                for k in 0..m {
                    let (bodies, vals) = rows.row(k);
                    for (s, &b) in bodies.iter().enumerate() {
                        if b != NO_BODY {
                            let b = b as usize;
                            entries.extend((0..6).map(|a| (6 * b + a, vals[6 * s + a])));
                        }
                    }
                    ptr.push(entries.len());
                }
                entries
            }
            None => {
                // The stored entries grouped by row, each row's in column order.
                let c = self.c();
                let (start, order) = by_key(m, &c.rowval);
                let col: Vec<usize> = (0..c.n)
                    .flat_map(|j| std::iter::repeat_n(j, c.colptr[j + 1] - c.colptr[j]))
                    .collect();
                ptr = start;
                order.iter().map(|&k| (col[k], c.nzval[k])).collect()
            }
        };
        (ptr, entries)
    }
    /// The diagonal of H.
    pub fn h_diagonal(&self) -> Vec<f64> {
        if let Some(blocks) = &self.h_blocks {
            // The stored diagonal entries; +0 where `to_csc` stores none.
            return (0..self.n()).map(|i| blocks.vals[i / 6][7 * (i % 6)]).collect();
        }
        let h = self.h_upper();
        let mut d = vec![0.0; h.n];
        for (col, dc) in d.iter_mut().enumerate() {
            for k in h.colptr[col]..h.colptr[col + 1] {
                if h.rowval[k] == col {
                    *dc += h.nzval[k];
                }
            }
        }
        d
    }
    /// The largest |entry| of H's upper triangle as stored (0 when none is).
    pub fn h_max_abs(&self) -> f64 {
        let max_abs = |m: f64, v: &f64| m.max(v.abs());
        match &self.h_blocks {
            Some(blocks) => blocks.max_abs_stored(),
            None => self.h_upper().nzval.iter().fold(0.0f64, max_abs),
        }
    }

    /// Σ_j c_kj² / d_j of each row k of C (`d` floored at 1e-300), each sum over the row's
    /// stored entries in ascending column order: with d = diag(H), an inverse effective
    /// mass of each constraint. By C's rows when it has them, with the same bits (their
    /// explicit zeros add +0).
    pub fn inv_mass(&self, d: &[f64]) -> Vec<f64> {
        if let Some(rows) = self.row_blocks() {
            return (0..self.m())
                .map(|k| {
                    let (pair, vals) = rows.row(k);
                    let mut s = 0.0;
                    for (slot, &b) in pair.iter().enumerate().filter(|(_, b)| **b != NO_BODY) {
                        for a in 0..6 {
                            let v = vals[6 * slot + a];
                            s += v * v / d[6 * b as usize + a].max(1e-300);
                        }
                    }
                    s
                })
                .collect();
        }
        let c = self.c();
        let mut s = vec![0.0f64; self.m()];
        for (col, &dc) in d.iter().enumerate() {
            for k in c.colptr[col]..c.colptr[col + 1] {
                s[c.rowval[k]] += c.nzval[k] * c.nzval[k] / dc.max(1e-300);
            }
        }
        s
    }

    /// H x (from the upper triangle; by H's blocks when it has them, with the same bits).
    pub fn h_mul(&self, x: &[f64]) -> Vec<f64> {
        if let Some(blocks) = &self.h_blocks {
            return blocks.mul(x);
        }
        let h = self.h_upper();
        let mut y = vec![0.0; h.n];
        for col in 0..h.n {
            for k in h.colptr[col]..h.colptr[col + 1] {
                let row = h.rowval[k];
                let v = h.nzval[k];
                y[row] += v * x[col];
                if row != col {
                    y[col] += v * x[row];
                }
            }
        }
        y
    }
    /// C x.
    pub fn c_mul(&self, x: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.m()];
        self.c_mul_into(x, &mut y);
        y
    }
    /// y = C x into a buffer of m entries (overwritten).
    pub fn c_mul_into(&self, x: &[f64], y: &mut [f64]) {
        match self.row_blocks() {
            Some(rows) => rows.mul(&x[..self.n()], y),
            None => {
                y.fill(0.0);
                csc_mul(self.c(), x, y)
            }
        }
    }
    /// Cᵀ λ.
    pub fn ct_mul(&self, lambda: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.n()];
        self.ct_mul_into(lambda, &mut y);
        y
    }
    /// y = Cᵀ λ into a buffer of n entries (overwritten).
    pub fn ct_mul_into(&self, lambda: &[f64], y: &mut [f64]) {
        match self.row_blocks() {
            Some(rows) => rows.mul_transpose(&lambda[..self.m()], y),
            None => {
                y.fill(0.0);
                csc_mul_transpose(self.c(), lambda, y)
            }
        }
    }
}

/// y = C x by compressed columns (y zero on entry).
fn csc_mul(c: &CscMatrix<f64>, x: &[f64], y: &mut [f64]) {
    for (col, xc) in x.iter().enumerate().take(c.n) {
        let range = c.colptr[col]..c.colptr[col + 1];
        for (&row, v) in c.rowval[range.clone()].iter().zip(&c.nzval[range]) {
            y[row] += v * xc;
        }
    }
}

/// y = Cᵀ λ by compressed columns.
fn csc_mul_transpose(c: &CscMatrix<f64>, lambda: &[f64], y: &mut [f64]) {
    for (col, yc) in y.iter_mut().enumerate() {
        let mut acc = 0.0;
        for k in c.colptr[col]..c.colptr[col + 1] {
            acc += c.nzval[k] * lambda[c.rowval[k]];
        }
        *yc = acc;
    }
}

/// The compressed columns of the m × n matrix with entries (rows[k], cols[k], vals[k]),
/// given in ascending row order with no (row, column) twice: the same matrix, explicit
/// zeros included, as [`CscMatrix::new_from_triplets`] makes of them, by a counting sort
/// on the columns instead of a comparison sort.
pub fn csc_from_rows(
    m: usize,
    n: usize,
    rows: &[usize],
    cols: &[usize],
    vals: &[f64],
) -> CscMatrix<f64> {
    assert!(rows.len() == cols.len() && rows.len() == vals.len());
    debug_assert!(rows.windows(2).all(|w| w[0] <= w[1]), "csc_from_rows: rows not ascending");
    // The rows ascend, so each column's entries, in the order given, ascend too.
    let (colptr, order) = by_key(n, cols);
    let rowval = order.iter().map(|&k| rows[k]).collect();
    let nzval = order.iter().map(|&k| vals[k]).collect();
    CscMatrix { m, n, colptr, rowval, nzval }
}

/// The compressed columns of the m × n matrix with entries (rows[k], cols[k], vals[k]) in
/// any order, repeated entries summed: the same matrix as
/// [`CscMatrix::new_from_triplets`] makes, bit for bit (its stable sort by column then
/// row, and its sums of repeated entries in the order given), by a counting sort on the
/// columns and an insertion sort of each column's rows instead of one comparison sort.
pub fn csc_from_triplets(
    m: usize,
    n: usize,
    rows: &[usize],
    cols: &[usize],
    vals: &[f64],
) -> CscMatrix<f64> {
    assert!(rows.len() == cols.len() && rows.len() == vals.len());
    let (start, mut order) = by_key(n, cols);
    let mut colptr = vec![0usize; n + 1];
    let mut rowval = Vec::with_capacity(rows.len());
    let mut nzval = Vec::with_capacity(rows.len());
    for c in 0..n {
        let col = &mut order[start[c]..start[c + 1]];
        // Stable insertion sort by row.
        for a in 1..col.len() {
            let mut b = a;
            while b > 0 && rows[col[b - 1]] > rows[col[b]] {
                col.swap(b - 1, b);
                b -= 1;
            }
        }
        let first = rowval.len();
        for &k in col.iter() {
            if rowval.len() > first && *rowval.last().expect("an entry") == rows[k] {
                let last = nzval.len() - 1;
                nzval[last] += vals[k];
            } else {
                rowval.push(rows[k]);
                nzval.push(vals[k]);
            }
        }
        colptr[c + 1] = rowval.len();
    }
    CscMatrix { m, n, colptr, rowval, nzval }
}

/// The 6-vector c on body i's slots for a contact at lever arm `r` with normal `n`.
fn normal_row(r: &Vector3<f64>, n: &Vector3<f64>) -> SVector<f64, 6> {
    let t = r.cross(n);
    SVector::<f64, 6>::from_column_slice(&[n.x, n.y, n.z, t.x, t.y, t.z])
}

/// R (3 × 6): velocity of the material point at lever arm r, u + ω × r = u − [r]× ω.
fn point_velocity(r: &Vector3<f64>) -> SMatrix<f64, 3, 6> {
    let mut m = SMatrix::<f64, 3, 6>::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&Matrix3::identity());
    m.fixed_view_mut::<3, 3>(0, 3).copy_from(&(-r.cross_matrix()));
    m
}

/// Effective mass of a contact along its normal, 1/(c_kᵀ M⁻¹ c_k), kg.
pub fn effective_mass(bodies: &[JumpBody], c: &JumpContact) -> f64 {
    let part = |b: &JumpBody| {
        let r = c.point - b.pos;
        let t = r.cross(&c.normal);
        let inv = b.inertia.try_inverse().unwrap_or_else(Matrix3::zeros);
        c.normal.norm_squared() / b.mass + t.dot(&(inv * t))
    };
    let mut w = part(&bodies[c.i]);
    if let Some(j) = c.j {
        w += part(&bodies[j]);
    }
    if w > 0.0 { 1.0 / w } else { f64::INFINITY }
}

/// The bits 6 a + b, a ≤ b, of a 6 × 6 block's upper triangle.
const UPPER_TRIANGLE: u64 = {
    let mut m = 0u64;
    let mut a = 0;
    while a < 6 {
        let mut b = a;
        while b < 6 {
            m |= 1 << (6 * a + b);
            b += 1;
        }
        a += 1;
    }
    m
};

/// H's upper triangle by 6 × 6 blocks of bodies (ba, bb), ba ≤ bb: the diagonal blocks
/// and one block per pair of bodies sharing a contact. An entry is part of the sparsity
/// pattern when a nonzero value was added to it; values are summed in the order they are
/// added (the first one stored as is), so the result is the same, bit for bit, as a
/// triplet list compressed with duplicates summed in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BlockUpper {
    /// Off-diagonal blocks (ba, bb), ba < bb, sorted by (bb, ba).
    offdiag: Vec<(usize, usize)>,
    /// First off-diagonal block of each block column bb (index into `offdiag`), length n + 1.
    first: Vec<usize>,
    /// Values of the blocks, row-major: the diagonal ones (body order), then `offdiag`.
    vals: Vec<[f64; 36]>,
    /// Which entries received a nonzero value (bit 6 a + b).
    mask: Vec<u64>,
    /// The off-diagonal blocks by block row: `offdiag`'s indices of the blocks (ba, bb)
    /// with ba = b are `right[right_first[b]..right_first[b + 1]]`, ascending bb.
    right: Vec<usize>,
    right_first: Vec<usize>,
}

impl BlockUpper {
    fn new(n_bodies: usize, contacts: &[JumpContact]) -> Self {
        let mut offdiag: Vec<(usize, usize)> = contacts
            .iter()
            .filter_map(|c| c.j.filter(|&j| j != c.i).map(|j| (c.i.min(j), c.i.max(j))))
            .collect();
        offdiag.sort_unstable_by_key(|&(a, b)| (b, a));
        offdiag.dedup();
        let mut first = vec![0usize; n_bodies + 1];
        for &(_, b) in &offdiag {
            first[b + 1] += 1;
        }
        for k in 0..n_bodies {
            first[k + 1] += first[k];
        }
        // By block row: `offdiag` is sorted by (bb, ba), so a stable bucketing by ba keeps
        // each row's blocks in ascending bb.
        let mut right_first = vec![0usize; n_bodies + 1];
        for &(a, _) in &offdiag {
            right_first[a + 1] += 1;
        }
        for k in 0..n_bodies {
            right_first[k + 1] += right_first[k];
        }
        let mut fill = right_first.clone();
        let mut right = vec![0usize; offdiag.len()];
        for (k, &(a, _)) in offdiag.iter().enumerate() {
            right[fill[a]] = k;
            fill[a] += 1;
        }
        let blocks = n_bodies + offdiag.len();
        BlockUpper {
            offdiag,
            first,
            vals: vec![[0.0; 36]; blocks],
            mask: vec![0; blocks],
            right,
            right_first,
        }
    }

    /// The largest |entry| of those `to_csc` stores (those that received a nonzero value):
    /// each block's entries read by the set bits of its mask (a filtered iterator over all
    /// 36 was 1.6 % of the heap N = 1000, μ = 0.5 at 1e-3).
    fn max_abs_stored(&self) -> f64 {
        let mut m = 0.0f64;
        for (v, &mask) in self.vals.iter().zip(&self.mask) {
            let mut bits = mask;
            while bits != 0 {
                m = m.max(v[bits.trailing_zeros() as usize].abs());
                bits &= bits - 1;
            }
        }
        m
    }

    /// H x, bit for bit as [`Qp::h_mul`] computes it from the compressed upper triangle:
    /// there, entry i of the product is the sum, from +0 and in ascending column order, of
    /// H's stored entries of row i times x (the entries below the diagonal read as the
    /// transposed ones above it). Here each row's blocks are taken in ascending body order
    /// (those left of the diagonal transposed, the diagonal block mirrored from its upper
    /// triangle), so the same terms are added in the same order. The entries `to_csc`
    /// leaves out hold +0: a term +0 × x (x finite) is ±0, and adding ±0 to a sum that
    /// started at +0 and is never −0 leaves it unchanged.
    fn mul(&self, x: &[f64]) -> Vec<f64> {
        let nb = self.n_bodies();
        let mut y = vec![0.0; 6 * nb];
        for b in 0..nb {
            // The six rows of body b together, each still summed in ascending column order.
            let mut s = [0.0f64; 6];
            for k in self.first[b]..self.first[b + 1] {
                let (v, o) = (&self.vals[nb + k], 6 * self.offdiag[k].0);
                for col in 0..6 {
                    for a in 0..6 {
                        s[a] += v[6 * col + a] * x[o + col];
                    }
                }
            }
            let (v, o) = (&self.vals[b], 6 * b);
            for col in 0..6 {
                for a in 0..6 {
                    let e = if col < a { v[6 * col + a] } else { v[6 * a + col] };
                    s[a] += e * x[o + col];
                }
            }
            for &k in &self.right[self.right_first[b]..self.right_first[b + 1]] {
                let (v, o) = (&self.vals[nb + k], 6 * self.offdiag[k].1);
                for col in 0..6 {
                    for a in 0..6 {
                        s[a] += v[6 * a + col] * x[o + col];
                    }
                }
            }
            y[6 * b..6 * b + 6].copy_from_slice(&s);
        }
        y
    }

    /// Adds `v` to entry (a, b) of block (ba, bb); upper triangle only, zeros skipped.
    fn add(&mut self, slot: usize, diagonal: bool, a: usize, b: usize, v: f64) {
        if (diagonal && a > b) || v == 0.0 {
            return;
        }
        let bit = 1u64 << (6 * a + b);
        let e = &mut self.vals[slot][6 * a + b];
        if self.mask[slot] & bit != 0 {
            *e += v;
        } else {
            *e = v;
            self.mask[slot] |= bit;
        }
    }

    /// The κ terms of `contacts` (their sides as [`contact_sides`] gives them), κ_N c cᵀ +
    /// κ_T Rᵀ P R block by block (upper triangle only), added contact after contact. With
    /// `two`, on two threads: one adds to the blocks whose column body is in the first half
    /// of the bodies, the other to the rest, so that each block still gets its terms in
    /// contact order: the same bits.
    fn add_contacts(&mut self, contacts: &[JumpContact], sides: &[ContactSides], two: bool) {
        let nb = self.n_bodies();
        let half = if two { nb / 2 } else { nb };
        let (offdiag, first) = (&self.offdiag, &self.first);
        let (diag, off) = self.vals.split_at_mut(nb);
        let (diag_mask, off_mask) = self.mask.split_at_mut(nb);
        let (d0, d1) = diag.split_at_mut(half);
        let (dm0, dm1) = diag_mask.split_at_mut(half);
        let (o0, o1) = off.split_at_mut(first[half]);
        let (om0, om1) = off_mask.split_at_mut(first[half]);
        // The bodies `lo..hi`'s blocks: their diagonal ones, and those off the diagonal in
        // their columns.
        let part = |lo: usize,
                    hi: usize,
                    diag: &mut [[f64; 36]],
                    diag_mask: &mut [u64],
                    off: &mut [[f64; 36]],
                    off_mask: &mut [u64]| {
            let off_first = first[lo];
            for (ct, cs) in contacts.iter().zip(sides) {
                let sides = &cs.sides[..cs.count];
                if !sides.iter().any(|s| (lo..hi).contains(&s.0)) {
                    continue;
                }
                let pt = Matrix3::identity() - ct.normal * ct.normal.transpose();
                for (ba, ca, ra) in sides {
                    for (bb, cb, rb) in sides {
                        if ba > bb || !(lo..hi).contains(bb) {
                            continue;
                        }
                        let mut block: SMatrix<f64, 6, 6> = ca * cb.transpose() * ct.kappa_n;
                        // Without κ_T the tangential term is zeros, which adding skips anyway.
                        if ct.kappa_t != 0.0 {
                            block += ra.transpose() * pt * rb * ct.kappa_t;
                        }
                        if ba == bb {
                            add_block(&mut diag[ba - lo], &mut diag_mask[ba - lo], true, &block);
                        } else {
                            let column = &offdiag[first[*bb]..first[*bb + 1]];
                            let k = column
                                .binary_search_by_key(ba, |e| e.0)
                                .expect("block of a contact");
                            let at = first[*bb] + k - off_first;
                            add_block(&mut off[at], &mut off_mask[at], false, &block);
                        }
                    }
                }
            }
        };
        if two {
            rayon::join(|| part(0, half, d0, dm0, o0, om0), || part(half, nb, d1, dm1, o1, om1));
        } else {
            part(0, nb, d0, dm0, o0, om0);
        }
    }

    /// Number of bodies.
    pub(crate) fn n_bodies(&self) -> usize {
        self.first.len() - 1
    }

    /// The pairs of bodies (ba, bb), ba < bb, that have a block off the diagonal.
    pub(crate) fn pairs(&self) -> &[(usize, usize)] {
        &self.offdiag
    }

    /// Body `b`'s diagonal block, both triangles: the upper one's entries mirrored, +0
    /// where nothing was added (the values `to_csc` holds, and nothing where it holds none).
    pub(crate) fn diagonal(&self, b: usize) -> SMatrix<f64, 6, 6> {
        let (vals, mask) = (&self.vals[b], self.mask[b]);
        SMatrix::from_fn(|a, c| {
            let (a, c) = (a.min(c), a.max(c));
            if mask & (1u64 << (6 * a + c)) != 0 { vals[6 * a + c] } else { 0.0 }
        })
    }

    /// The block of pair `k` of [`BlockUpper::pairs`] (rows of body ba, columns of body
    /// bb), +0 where nothing was added.
    pub(crate) fn off_diagonal(&self, k: usize) -> SMatrix<f64, 6, 6> {
        let slot = self.n_bodies() + k;
        let (vals, mask) = (&self.vals[slot], self.mask[slot]);
        // An entry whose bit is clear received only zeros, so it holds +0 ([`add_block`]):
        // the values are the block as they stand.
        debug_assert!(
            (0..36).all(|e| mask & (1u64 << e) != 0 || vals[e].to_bits() == 0),
            "an entry without its bit holds {:?}",
            vals
        );
        SMatrix::from_row_slice(vals)
    }

    /// Every stored entry (row ≤ col, value) of the upper triangle, each once: the
    /// entries [`BlockUpper::to_csc`] holds.
    fn for_each_stored(&self, mut entry: impl FnMut(usize, usize, f64)) {
        let nb = self.first.len() - 1;
        for bb in 0..nb {
            let blocks = (self.first[bb]..self.first[bb + 1])
                .map(|k| (self.offdiag[k].0, nb + k))
                .chain(std::iter::once((bb, bb)));
            for (ba, slot) in blocks {
                let (mask, vals) = (self.mask[slot], &self.vals[slot]);
                for a in 0..6 {
                    for col in 0..6 {
                        if mask & (1u64 << (6 * a + col)) != 0 {
                            entry(6 * ba + a, 6 * bb + col, vals[6 * a + col]);
                        }
                    }
                }
            }
        }
    }

    fn to_csc(&self) -> CscMatrix<f64> {
        let nb = self.first.len() - 1;
        let n = 6 * nb;
        let mut colptr = Vec::with_capacity(n + 1);
        let nnz: usize = self.mask.iter().map(|m| m.count_ones() as usize).sum();
        let mut rowval = Vec::with_capacity(nnz);
        let mut nzval = Vec::with_capacity(nnz);
        colptr.push(0);
        for bb in 0..nb {
            for col in 0..6 {
                // Off-diagonal blocks of this block column (ascending ba), then the diagonal.
                let blocks = (self.first[bb]..self.first[bb + 1])
                    .map(|k| (self.offdiag[k].0, nb + k))
                    .chain(std::iter::once((bb, bb)));
                for (ba, slot) in blocks {
                    for a in 0..6 {
                        if self.mask[slot] & (1u64 << (6 * a + col)) != 0 {
                            rowval.push(6 * ba + a);
                            nzval.push(self.vals[slot][6 * a + col]);
                        }
                    }
                }
                colptr.push(rowval.len());
            }
        }
        CscMatrix { m: n, n, colptr, rowval, nzval }
    }
}

/// Adds every entry of `block` (its upper triangle on a diagonal block) to a block's
/// values, setting the mask's bit of each nonzero: [`BlockUpper::add`] entry by entry,
/// without a branch per entry and with the same bits (an entry starts at +0 and only
/// nonzero values are added to it, so it is never −0, and adding a zero (±0) to it leaves
/// it unchanged, as skipping the zero does).
fn add_block(vals: &mut [f64; 36], mask: &mut u64, diagonal: bool, block: &SMatrix<f64, 6, 6>) {
    let keep = if diagonal { UPPER_TRIANGLE } else { u64::MAX };
    let mut set = 0u64;
    for a in 0..6 {
        for b in 0..6 {
            let v = block[(a, b)];
            vals[6 * a + b] += v;
            set |= ((v != 0.0) as u64) << (6 * a + b);
        }
    }
    // Below a diagonal block's diagonal the entries are never read (their bits stay
    // clear): `into_csc` reads the entries whose bit is set.
    *mask |= set & keep;
}

/// A contact's sides (body, c-row, R: the velocity of the material point), i's and then
/// j's (`count` of them), and its right-hand side r.
struct ContactSides {
    sides: [(usize, SVector<f64, 6>, SMatrix<f64, 3, 6>); 2],
    count: usize,
    r: f64,
}

/// [`ContactSides`] of a contact of an island of `bodies`.
fn contact_sides(bodies: &[JumpBody], ct: &JumpContact) -> ContactSides {
    let nrm = ct.normal;
    let ri = ct.point - bodies[ct.i].pos;
    let side_i = (ct.i, normal_row(&ri, &nrm), point_velocity(&ri));
    let side_j = ct.j.map(|j| {
        let rj = ct.point - bodies[j].pos;
        (j, -normal_row(&rj, &nrm), -point_velocity(&rj))
    });
    let mut cu = 0.0;
    for (b, row, _) in std::iter::once(&side_i).chain(side_j.as_ref()) {
        let body = &bodies[*b];
        let u = SVector::<f64, 6>::from_column_slice(&[
            body.vel.x,
            body.vel.y,
            body.vel.z,
            body.omega.x,
            body.omega.y,
            body.omega.z,
        ]);
        cu += row.dot(&u);
    }
    ContactSides {
        sides: [side_i, side_j.unwrap_or(side_i)],
        count: 1 + usize::from(side_j.is_some()),
        r: 0.5 * (cu + ct.separation),
    }
}

/// Assemble the QP of one island. `gravity_dt` is g Δt (m/s): the gravity percussion
/// (0, 0, −m g Δt) is added to p ONCE per body. H is kept in its 6 × 6 blocks of bodies and
/// C in rows on two bodies, their compressed columns made on demand ([`Qp::h_upper`],
/// [`Qp::c`]); with a contact that has the same body on both sides, C is built in
/// compressed columns directly from its block structure (no triplet sort).
pub fn assemble(bodies: &[JumpBody], contacts: &[JumpContact], gravity_dt: f64) -> Qp {
    let n = 6 * bodies.len();
    let mut h = BlockUpper::new(bodies.len(), contacts);
    let mut p = vec![0.0; n];
    for (b, body) in bodies.iter().enumerate() {
        let o = 6 * b;
        for a in 0..3 {
            h.add(b, true, a, a, 2.0 * body.mass);
        }
        for a in 0..3 {
            for bb in a..3 {
                h.add(b, true, 3 + a, 3 + bb, 2.0 * body.inertia[(a, bb)]);
            }
        }
        let lw = body.inertia * body.omega;
        for a in 0..3 {
            p[o + a] = 2.0 * body.mass * body.vel[a];
            p[o + 3 + a] = 2.0 * lw[a];
        }
        p[o + 2] -= body.mass * gravity_dt;
    }

    // Each contact's sides and r, then the κ terms of H, on two threads for a big island.
    let two = contacts.len() >= BIG_ISLAND_CONTACTS && rayon::current_num_threads() > 1;
    let mut sides: Vec<ContactSides> = Vec::with_capacity(contacts.len());
    if two {
        contacts
            .par_iter()
            .with_min_len(256)
            .map(|ct| contact_sides(bodies, ct))
            .collect_into_vec(&mut sides);
    } else {
        sides.extend(contacts.iter().map(|ct| contact_sides(bodies, ct)));
    }
    h.add_contacts(contacts, &sides, two);
    let r: Vec<f64> = sides.iter().map(|s| s.r).collect();
    // C by rows on two bodies, its compressed columns made on demand, unless a contact has
    // the same body on both sides (its two sides' entries would share columns).
    if bodies.len() < NO_BODY as usize && contacts.iter().all(|c| c.j != Some(c.i)) {
        // A contact's row: its bodies, the smaller first, and its values on each.
        let row_of = |(ct, s): (&JumpContact, &ContactSides)| {
            let (mut pair, mut vals) = ([NO_BODY; 2], [0.0; 12]);
            for (b, row, _) in &s.sides[..s.count] {
                let slot = match ct.j {
                    Some(j) if j < ct.i => usize::from(*b == ct.i),
                    Some(_) => usize::from(*b != ct.i),
                    None => 0,
                };
                pair[slot] = *b as u32;
                vals[6 * slot..6 * slot + 6].copy_from_slice(row.as_slice());
            }
            (pair, vals)
        };
        let (row_bodies, row_vals): (Vec<[u32; 2]>, Vec<[f64; 12]>) = if two {
            contacts.par_iter().zip(&sides).with_min_len(256).map(row_of).unzip()
        } else {
            contacts.iter().zip(&sides).map(row_of).unzip()
        };
        return Qp {
            h_upper: OnceLock::new(),
            p,
            c: OnceLock::new(),
            r,
            rows: OnceLock::from(Some(RowBlocks::from_rows(row_bodies, row_vals))),
            h_blocks: Some(Arc::new(h)),
        };
    }
    // C by rows: (body, c-row) of each side of each contact.
    let c_sides: Vec<(usize, SVector<f64, 6>)> =
        sides.iter().flat_map(|s| s.sides[..s.count].iter().map(|&(b, row, _)| (b, row))).collect();
    // C in compressed columns: column 6 b + a holds the contacts of body b, ascending.
    let mut count = vec![0usize; bodies.len() + 1];
    for (b, _) in &c_sides {
        count[b + 1] += 1;
    }
    for b in 0..bodies.len() {
        count[b + 1] += count[b];
    }
    let mut rows_of = vec![(0usize, 0usize); c_sides.len()];
    let mut fill = count.clone();
    let mut k = 0;
    for (idx, ct) in contacts.iter().enumerate() {
        for _ in 0..1 + ct.j.is_some() as usize {
            let b = c_sides[k].0;
            rows_of[fill[b]] = (idx, k);
            fill[b] += 1;
            k += 1;
        }
    }
    let mut colptr = Vec::with_capacity(n + 1);
    let mut rowval = Vec::with_capacity(6 * c_sides.len());
    let mut nzval = Vec::with_capacity(6 * c_sides.len());
    colptr.push(0);
    for b in 0..bodies.len() {
        for a in 0..6 {
            for &(row, side) in &rows_of[count[b]..count[b + 1]] {
                rowval.push(row);
                nzval.push(c_sides[side].1[a]);
            }
            colptr.push(rowval.len());
        }
    }
    let c = CscMatrix { m: contacts.len(), n, colptr, rowval, nzval };
    Qp {
        h_upper: OnceLock::new(),
        p,
        c: OnceLock::from(c),
        r,
        rows: OnceLock::new(),
        h_blocks: Some(Arc::new(h)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(pos: Vector3<f64>) -> JumpBody {
        JumpBody {
            mass: 2.0,
            inertia: Matrix3::from_diagonal(&Vector3::new(1.0, 2.0, 3.0)),
            pos,
            vel: Vector3::new(0.1, -0.2, -1.0),
            omega: Vector3::new(0.3, 0.1, -0.2),
        }
    }

    /// The previous assembly: triplets compressed by Clarabel (sorted, duplicates summed in
    /// order). The block assembly must give the same matrices bit for bit.
    fn assemble_triplets(bodies: &[JumpBody], contacts: &[JumpContact]) -> (CscMatrix, CscMatrix) {
        let n = 6 * bodies.len();
        let (mut hr, mut hc, mut hv) = (Vec::new(), Vec::new(), Vec::new());
        let mut push = |r: usize, c: usize, v: f64| {
            if r <= c && v != 0.0 {
                hr.push(r);
                hc.push(c);
                hv.push(v);
            }
        };
        for (b, body) in bodies.iter().enumerate() {
            for a in 0..3 {
                push(6 * b + a, 6 * b + a, 2.0 * body.mass);
            }
            for a in 0..3 {
                for bb in a..3 {
                    push(6 * b + 3 + a, 6 * b + 3 + bb, 2.0 * body.inertia[(a, bb)]);
                }
            }
        }
        let (mut cr, mut cc, mut cv) = (Vec::new(), Vec::new(), Vec::new());
        for (k, ct) in contacts.iter().enumerate() {
            let nrm = ct.normal;
            let pt = Matrix3::identity() - nrm * nrm.transpose();
            let ri = ct.point - bodies[ct.i].pos;
            let mut sides = vec![(ct.i, normal_row(&ri, &nrm), point_velocity(&ri))];
            if let Some(j) = ct.j {
                let rj = ct.point - bodies[j].pos;
                sides.push((j, -normal_row(&rj, &nrm), -point_velocity(&rj)));
            }
            for (b, row, _) in &sides {
                for a in 0..6 {
                    cr.push(k);
                    cc.push(6 * b + a);
                    cv.push(row[a]);
                }
            }
            for (ba, ca, ra) in &sides {
                for (bb, cb, rb) in &sides {
                    if ba > bb {
                        continue;
                    }
                    let block: SMatrix<f64, 6, 6> =
                        ca * cb.transpose() * ct.kappa_n + ra.transpose() * pt * rb * ct.kappa_t;
                    for a in 0..6 {
                        for bcol in 0..6 {
                            push(6 * ba + a, 6 * bb + bcol, block[(a, bcol)]);
                        }
                    }
                }
            }
        }
        (
            CscMatrix::new_from_triplets(n, n, hr, hc, hv),
            CscMatrix::new_from_triplets(contacts.len(), n, cr, cc, cv),
        )
    }

    /// Random triplets with repeated entries, in random order: the counting-sort
    /// assembly is Clarabel's, bit for bit (structure, values and the order of the sums).
    #[test]
    fn csc_from_triplets_is_clarabels() {
        let mut seed = 7u64;
        let mut rnd = |k: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % k
        };
        for (m, n, len) in [(1, 1, 0), (5, 7, 40), (30, 12, 400), (3, 50, 60)] {
            let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..len {
                r.push(rnd(m));
                c.push(rnd(n));
                // Values of mixed magnitudes, so that the order of a sum shows in its bits.
                v.push((rnd(2001) as f64 - 1000.0) * 10f64.powi(rnd(17) as i32 - 8));
            }
            let reference = CscMatrix::new_from_triplets(m, n, r.clone(), c.clone(), v.clone());
            let ours = csc_from_triplets(m, n, &r, &c, &v);
            assert!(same_bits(&ours, &reference), "m {m} n {n} len {len}");
        }
    }

    fn same_bits(a: &CscMatrix, b: &CscMatrix) -> bool {
        a.m == b.m
            && a.n == b.n
            && a.colptr == b.colptr
            && a.rowval == b.rowval
            && a.nzval.iter().map(|v| v.to_bits()).eq(b.nzval.iter().map(|v| v.to_bits()))
    }

    /// An island of 400 bodies and 1600 contacts (over `BIG_ISLAND_CONTACTS`, random
    /// block–block and static ones, runs on one pair) is assembled on two threads with the
    /// bits of the triplet assembly and of one thread.
    #[test]
    fn a_big_island_assembled_on_two_threads_has_the_same_bits() {
        let mut rnd = crate::solver::testing::uniform(77);
        let nb = 400;
        let bodies: Vec<JumpBody> = (0..nb)
            .map(|k| {
                let a = Matrix3::from_fn(|_, _| rnd());
                JumpBody {
                    mass: 1.5 + rnd(),
                    inertia: a * a.transpose() + Matrix3::identity(),
                    pos: Vector3::new(k as f64, rnd(), rnd()),
                    vel: Vector3::new(rnd(), rnd(), rnd()),
                    omega: Vector3::new(rnd(), rnd(), rnd()),
                }
            })
            .collect();
        let contacts: Vec<JumpContact> = (0..1600)
            .map(|k| {
                let i = (k / 4 + (k % 4) * 97) % nb;
                let near = ((rnd() + 0.5) * 20.0) as usize;
                let j = (k % 5 != 0).then_some((i + 1 + near) % nb);
                JumpContact {
                    i,
                    j,
                    point: bodies[i].pos + Vector3::new(rnd(), rnd(), rnd()),
                    normal: Vector3::new(rnd(), rnd(), rnd() + 1.0).normalize(),
                    kappa_n: 1.0 + rnd(),
                    kappa_t: if k % 3 == 0 { 0.0 } else { rnd() + 0.5 },
                    separation: 0.0,
                }
            })
            .collect();
        assert!(contacts.len() >= BIG_ISLAND_CONTACTS);
        let on = |threads: usize| {
            let pool =
                rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
            pool.install(|| assemble(&bodies, &contacts, 0.01))
        };
        let (one, two) = (on(1), on(2));
        let (h, c) = assemble_triplets(&bodies, &contacts);
        assert!(same_bits(two.h_upper(), &h), "H differs from the triplets'");
        assert!(same_bits(two.h_upper(), one.h_upper()), "H differs from one thread's");
        assert!(same_bits(two.c(), &c) && same_bits(two.c(), one.c()), "C differs");
        assert!(bits_eq(&two.r, &one.r) && bits_eq(&two.p, &one.p), "r or p differs");
    }

    /// Islands of up to 7 bodies with random block–block and static contacts (some with
    /// axis-aligned normals and lever arms, which give exact zeros): the block assembly
    /// equals the triplet assembly bit for bit.
    #[test]
    fn block_assembly_equals_triplet_assembly_bit_for_bit() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        // Runs of three rows on one pair of bodies met (the products' three-row path).
        let mut threes = 0;
        for case in 0..200 {
            let nb = 1 + case % 7;
            let bodies: Vec<JumpBody> = (0..nb)
                .map(|_| {
                    let a = Matrix3::from_fn(|_, _| rnd() - 0.5);
                    JumpBody {
                        mass: 1.0 + rnd(),
                        inertia: if rnd() < 0.3 {
                            Matrix3::from_diagonal(&Vector3::new(1.0, 2.0, 3.0))
                        } else {
                            a * a.transpose() + Matrix3::identity()
                        },
                        pos: Vector3::new(rnd(), rnd(), rnd()),
                        vel: Vector3::new(rnd(), rnd(), rnd()),
                        omega: Vector3::new(rnd(), rnd(), rnd()),
                    }
                })
                .collect();
            let nc = (rnd() * 12.0) as usize;
            // Half the contacts repeat the previous one's bodies: runs of rows on one pair,
            // which the row layout's products take three at a time.
            let mut prev: Option<(usize, Option<usize>)> = None;
            let contacts: Vec<JumpContact> = (0..nc)
                .map(|_| {
                    let (i, j) = match prev {
                        Some(pair) if rnd() < 0.5 => pair,
                        _ => {
                            let i = (rnd() * nb as f64) as usize;
                            let j = (nb > 1 && rnd() < 0.7)
                                .then(|| (i + 1 + (rnd() * (nb - 1) as f64) as usize) % nb);
                            (i, j)
                        }
                    };
                    prev = Some((i, j));
                    let axis = rnd() < 0.4;
                    JumpContact {
                        i,
                        j,
                        point: if axis {
                            bodies[i].pos + Vector3::new(0.0, 0.0, -0.5)
                        } else {
                            Vector3::new(rnd(), rnd(), rnd())
                        },
                        normal: if axis {
                            Vector3::z()
                        } else {
                            Vector3::new(rnd() - 0.5, rnd() - 0.5, rnd() + 0.1).normalize()
                        },
                        kappa_n: 1.0 + rnd(),
                        kappa_t: rnd(),
                        separation: 0.0,
                    }
                })
                .collect();
            let qp = assemble(&bodies, &contacts, 0.01);
            let (h, c) = assemble_triplets(&bodies, &contacts);
            assert!(same_bits(qp.h_upper(), &h), "case {case}: H differs");
            assert!(same_bits(qp.c(), &c), "case {case}: C differs");
            // The row layout's products are the compressed columns' products, bit for bit.
            let rows = RowBlocks::new(qp.c()).expect("contact rows touch at most two bodies");
            assert_eq!(qp.row_blocks(), Some(&rows), "case {case}: the assembly's row layout");
            let x: Vec<f64> = (0..qp.n()).map(|_| rnd() - 0.5).collect();
            let l: Vec<f64> = (0..qp.m()).map(|_| rnd() - 0.5).collect();
            // H x and H's diagonal by H's blocks are the compressed columns', bit for bit,
            // also where x holds +0 and −0; so are C x and C x from the second row on
            // (which regroups the runs of three rows on one pair that it takes together).
            let columns = Qp::new(h.clone(), qp.p.clone(), c.clone(), qp.r.clone());
            let signed: Vec<f64> = x
                .iter()
                .enumerate()
                .map(|(i, &v)| match i % 5 {
                    1 => 0.0,
                    3 => -0.0,
                    _ => v,
                })
                .collect();
            let mut y_csc = vec![0.0; qp.m()];
            for v in [&signed, &x] {
                assert!(bits_eq(&qp.h_mul(v), &columns.h_mul(v)), "case {case}: H x differs");
                let mut y_rows = vec![0.0; qp.m()];
                rows.mul(v, &mut y_rows);
                // Left holding C x of x, for the checks below (csc_mul adds to y).
                y_csc.fill(0.0);
                csc_mul(qp.c(), v, &mut y_csc);
                assert!(bits_eq(&y_rows, &y_csc), "case {case}: C x differs");
                if qp.m() > 1 {
                    rows.mul_rows(1, v, &mut y_rows[1..]);
                    assert!(bits_eq(&y_rows, &y_csc), "case {case}: C x from row 1 differs");
                }
            }
            assert!(bits_eq(&qp.h_diagonal(), &columns.h_diagonal()), "case {case}: diagonal");
            // H's stored entries and C's rows read from a fresh assembly's blocks and rows
            // (no compressed columns made) are the compressed columns', bit for bit.
            let fresh = assemble(&bodies, &contacts, 0.01);
            let entries = |q: &Qp| {
                let mut e = Vec::new();
                q.h_upper_entries(|r, c, v| e.push((c, r, v.to_bits())));
                e.sort_unstable();
                e
            };
            assert!(fresh.h_upper.get().is_none() && fresh.c.get().is_none());
            assert_eq!(entries(&fresh), entries(&columns), "case {case}: H's entries");
            assert_eq!(fresh.h_dense(), columns.h_dense(), "case {case}: dense H");
            let (ptr, row_entries) = fresh.c_row_entries();
            let (ptr_c, row_entries_c) = columns.c_row_entries();
            assert!(fresh.c.get().is_none(), "case {case}: C's columns made for its rows");
            assert_eq!(ptr, ptr_c, "case {case}: C's rows' lengths");
            let bits = |e: &[(usize, f64)]| e.iter().map(|&(c, v)| (c, v.to_bits())).collect();
            let (a, b): (Vec<_>, Vec<_>) = (bits(&row_entries), bits(&row_entries_c));
            assert_eq!(a, b, "case {case}: C's rows");
            // H's largest entry and C's inverse effective masses by the blocks and rows are
            // those of the compressed columns, bit for bit.
            let hmax = h.nzval.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert_eq!(qp.h_max_abs().to_bits(), hmax.to_bits(), "case {case}: max |H|");
            let d = columns.h_diagonal();
            let mut by_columns = vec![0.0f64; qp.m()];
            for (col, &dc) in d.iter().enumerate() {
                for k in c.colptr[col]..c.colptr[col + 1] {
                    by_columns[c.rowval[k]] += c.nzval[k] * c.nzval[k] / dc.max(1e-300);
                }
            }
            assert!(bits_eq(&qp.inv_mass(&d), &by_columns), "case {case}: inverse masses");
            let (mut t_rows, mut t_csc) = (vec![1.0; qp.n()], vec![0.0; qp.n()]);
            rows.mul_transpose(&l, &mut t_rows);
            csc_mul_transpose(qp.c(), &l, &mut t_csc);
            assert!(bits_eq(&t_rows, &t_csc), "case {case}: Cᵀ λ differs");
            // Halved by bodies, each half from its own rows only: the same entries.
            let split = nb / 2;
            let mut halves = vec![f64::NAN; qp.n()];
            let (lo, hi) = halves.split_at_mut(6 * split);
            let (rows_lo, rows_hi) =
                (rows.rows_of_bodies(0, split), rows.rows_of_bodies(split, nb));
            rows.mul_transpose_rows(&rows_lo, &l, 0, lo);
            rows.mul_transpose_rows(&rows_hi, &l, split, hi);
            assert!(bits_eq(&halves, &t_csc), "case {case}: halves of Cᵀ λ differ");
            let on = |k: u32, r: std::ops::Range<u32>| {
                rows.row(k as usize).0.iter().any(|b| r.contains(b))
            };
            let all = 0..qp.m() as u32;
            assert!(all.clone().filter(|&k| on(k, 0..split as u32)).eq(rows_lo.iter().copied()));
            assert!(all.filter(|&k| on(k, split as u32..nb as u32)).eq(rows_hi.iter().copied()));
            assert!(bits_eq(&qp.c_mul(&x), &y_csc) && bits_eq(&qp.ct_mul(&l), &t_csc));
            threes +=
                (2..qp.m()).filter(|&k| (k - 2..k).all(|r| rows.row(r).0 == rows.row(k).0)).count();
            // A list of rows with gaps (every fourth row left out, so that some runs of
            // three are broken): the same as λ with those rows at 0.
            let gappy: Vec<u32> = (0..qp.m() as u32).filter(|k| k % 4 != 2).collect();
            let mut part = vec![f64::NAN; qp.n()];
            rows.mul_transpose_rows(&gappy, &l, 0, &mut part);
            let mut l_gappy = l.clone();
            (0..qp.m()).filter(|k| k % 4 == 2).for_each(|k| l_gappy[k] = 0.0);
            let mut t_gappy = vec![0.0; qp.n()];
            csc_mul_transpose(qp.c(), &l_gappy, &mut t_gappy);
            assert!(
                part.iter().zip(&t_gappy).all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())),
                "case {case}: Cᵀ λ over a list of rows with gaps differs"
            );
        }
        assert!(threes > 100, "only {threes} runs of three rows on one pair");
    }

    fn bits_eq(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// A row on three bodies has no row layout; the products fall back to the compressed
    /// columns. `csc_from_rows` equals Clarabel's triplet compression on row-ordered
    /// triplets, explicit zeros included.
    #[test]
    fn row_layout_fallback_and_row_ordered_compression() {
        let (rows, cols, vals) =
            (vec![0, 0, 0, 1, 1, 2], vec![0, 7, 13, 2, 5, 9], vec![1.0, 0.0, -2.0, 3.0, 4.0, 5.0]);
        let c = csc_from_rows(3, 18, &rows, &cols, &vals);
        let reference = CscMatrix::new_from_triplets(3, 18, rows, cols, vals);
        assert!(same_bits(&c, &reference));
        assert!(RowBlocks::new(&c).is_none(), "row 0 touches bodies 0, 1 and 2");
        let qp = Qp::new(CscMatrix::identity(18), vec![0.0; 18], c, vec![0.0; 3]);
        let x: Vec<f64> = (0..18).map(|k| k as f64).collect();
        assert_eq!(qp.c_mul(&x), vec![-26.0, 26.0, 45.0]);
        let ct = qp.ct_mul(&[1.0, 2.0, 3.0]);
        let mut expected = vec![0.0; 18];
        for (k, v) in [(0, 1.0), (13, -2.0), (2, 6.0), (5, 8.0), (9, 15.0)] {
            expected[k] = v;
        }
        assert_eq!(ct, expected);
    }

    /// H from the sparse assembly equals the dense definition; C x is c_kᵀx.
    #[test]
    fn sparse_assembly_matches_dense_definition() {
        let bodies = vec![body(Vector3::zeros()), body(Vector3::new(0.0, 0.0, 1.0))];
        let nrm = Vector3::new(0.1, 0.2, 1.0).normalize();
        let contacts = vec![
            JumpContact {
                i: 1,
                j: Some(0),
                point: Vector3::new(0.2, 0.1, 0.5),
                normal: nrm,
                kappa_n: 3.0,
                kappa_t: 0.7,
                separation: 0.0,
            },
            JumpContact {
                i: 0,
                j: None,
                point: Vector3::new(-0.3, 0.2, -0.5),
                normal: Vector3::z(),
                kappa_n: 5.0,
                kappa_t: 1.1,
                separation: 0.4,
            },
        ];
        let qp = assemble(&bodies, &contacts, 0.0981);
        // Dense reference.
        let n = 12;
        let mut hd = nalgebra::DMatrix::<f64>::zeros(n, n);
        for (b, bd) in bodies.iter().enumerate() {
            for a in 0..3 {
                hd[(6 * b + a, 6 * b + a)] = 2.0 * bd.mass;
            }
            hd.view_mut((6 * b + 3, 6 * b + 3), (3, 3)).copy_from(&(bd.inertia * 2.0));
        }
        for ct in &contacts {
            let mut c = nalgebra::DVector::<f64>::zeros(n);
            let mut rr = nalgebra::DMatrix::<f64>::zeros(3, n);
            let ri = ct.point - bodies[ct.i].pos;
            c.rows_mut(6 * ct.i, 6).copy_from(&normal_row(&ri, &ct.normal));
            rr.view_mut((0, 6 * ct.i), (3, 6)).copy_from(&point_velocity(&ri));
            if let Some(j) = ct.j {
                let rj = ct.point - bodies[j].pos;
                c.rows_mut(6 * j, 6).copy_from(&(-normal_row(&rj, &ct.normal)));
                rr.view_mut((0, 6 * j), (3, 6)).copy_from(&(-point_velocity(&rj)));
            }
            let t = (Matrix3::identity() - ct.normal * ct.normal.transpose()) * &rr;
            hd += &c * c.transpose() * ct.kappa_n + t.transpose() * t * ct.kappa_t;
        }
        let x: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin()).collect();
        let hx = qp.h_mul(&x);
        let hxd = &hd * nalgebra::DVector::from_vec(x.clone());
        for k in 0..n {
            assert!((hx[k] - hxd[k]).abs() < 1e-12, "row {k}: {} vs {}", hx[k], hxd[k]);
        }
        // The relative normal velocity of the first contact: N·(v_1(A) − v_0(A)).
        let vpt = |b: &JumpBody, a: Vector3<f64>, u: &[f64]| {
            Vector3::new(u[0], u[1], u[2]) + Vector3::new(u[3], u[4], u[5]).cross(&(a - b.pos))
        };
        let cx = qp.c_mul(&x);
        let rel = vpt(&bodies[1], contacts[0].point, &x[6..12])
            - vpt(&bodies[0], contacts[0].point, &x[0..6]);
        assert!((cx[0] - rel.dot(&nrm)).abs() < 1e-12);
        // p: 2 M u⁻ with gravity once per body.
        assert!((qp.p[2] - (-(2.0 * 2.0) - 2.0 * 0.0981)).abs() < 1e-12);
        assert!((qp.p[8] - (-(2.0 * 2.0) - 2.0 * 0.0981)).abs() < 1e-12);
        // r: (c u⁻ + v)/2.
        let u: Vec<f64> = bodies
            .iter()
            .flat_map(|b| [b.vel.x, b.vel.y, b.vel.z, b.omega.x, b.omega.y, b.omega.z])
            .collect();
        let cu = qp.c_mul(&u);
        assert!((qp.r[1] - 0.5 * (cu[1] + 0.4)).abs() < 1e-12);
    }
}
