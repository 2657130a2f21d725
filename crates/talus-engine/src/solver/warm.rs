//! The warm-started solver of the jump QP `min ½xᵀHx − pᵀx s.t. Cx ≥ r`.
//!
//! Three stages, each exact on the active set it ends with, all using one regularised
//! matrix K_A = H + Σ_{k∈A} ρ_k c_k c_kᵀ factorised by faer's sparse Cholesky:
//!
//! 1. **Primal-dual active sets** (semismooth Newton on min(λ, m(Cx − r)) = 0, Hintermüller,
//!    Ito and Kunisch), from the previous step's active set: solve the equality-constrained
//!    QP on A, then A ← {k : λ_k − m_k(C_k x − r_k) > 0} (drop the negative multipliers, add
//!    the violated constraints). After a few sets the violated constraints are added before
//!    any is dropped, which stops most cycling among degenerate sets (a contact dropped for
//!    a slightly negative multiplier is violated once dropped). On the thesis heap N = 3000
//!    54 of the 71 QPs of the 2700-body island over steps 640–720 ended here, after 6–17
//!    sets.
//! 2. **Augmented Lagrangian** with a semismooth Newton inner solve (the scheme of QPALM,
//!    specialised), when the active sets cycle, started from their last iterate. For
//!    multipliers λ ≥ 0 and per-constraint penalties ρ_k,
//!
//!    ```text
//!    x(λ) = argmin ½xᵀHx − pᵀx + Σ_k (1/2ρ_k) max(0, λ_k − ρ_k(C_k x − r_k))²
//!    λ ← max(0, λ − ρ(C x(λ) − r))
//!    ```
//!
//!    Newton steps use the generalised Hessian K_A (A = constraints whose shifted multiplier
//!    is positive) and an exact line search on the piecewise linear derivative; a full step
//!    that keeps its active set lands on the exact minimiser, which ends the inner loop.
//!    σ grows ×10 per outer iteration from 10² to 10⁷: Newton needs few steps for small σ
//!    far from the solution, the multipliers converge fast for large σ.
//! 3. **Polishing** after each outer iteration: the active-set solve of stage 1 on
//!    A = {λ_k > 0}.
//!
//! * The active-set solve: H x − C_Aᵀλ_A = p, C_A x = r_A by iterative refinement with the
//!   factor of K_A (the regularised KKT system's Schur complement; redundant rows, e.g. four
//!   corners of a face on a plane, are harmless). Residuals are measured without the
//!   penalty, so the result meets the KKT conditions to roundoff; it is accepted only when
//!   every multiplier is ≥ 0, every constraint holds and the KKT residuals are below the
//!   tolerance (relative to max |p| and max |r|). Interior-point solutions at a 1e-9
//!   tolerance are less accurate than this (their complementarity gap leaves x off by up to
//!   ~1e-6 relative on degenerate QPs).
//! * Penalties: ρ_k = σ m_k with m_k = 1/Σ_j C_kj²/H_jj an effective mass of constraint k,
//!   so that ρ C_Aᵀ C_A is σ times H's own scale whatever the masses, sizes and lever arms
//!   (a single ρ tied to H's largest entry made K so stiff, for 10 m blocks, that the
//!   penalty term's roundoff alone exceeded the stopping tolerance). Active-set solves use
//!   σ = 10⁶.
//! * The factorisation: K's pattern (H ∪ CᵀC) is one of dense 6 × 6 blocks, one per pair of
//!   bodies in contact, ordered once per QP by AMD on the bodies' contact graph and stored
//!   already permuted, so each numeric factorisation runs without permuting K and reuses its
//!   buffers. On the N = 3000 island (16,300 unknowns, 6000 constraints) the factor has
//!   1.2 × 10⁶ entries; a numeric factorisation takes about 12 ms, a solve about 1.4 ms.
//!   Islands of at most [`DENSE_FACTOR_MAX`] unknowns are factorised dense instead.
//! * Warm start: λ of the previous step's contacts with the same [`ContactKey`].
//!
//! The iteration limit counts linear solves. A solve that does not converge within it is
//! handed to Clarabel and recorded as a fallback (diagnostics column `fallback`).

use crate::solver::assembly::Qp;
use crate::solver::clarabel::{QpOutcome, QpStatus, SolverUsed, kkt_residuals, solve_clarabel};
use crate::solver::nlgs::ContactImpulse;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::solvers::{Llt, Solve};
use faer::sparse::linalg::amd;
use faer::sparse::linalg::cholesky::{
    LltRef, SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, Mat, MatMut, Par, Side};
use nalgebra::Vector3;
use std::collections::HashMap;

/// Identity of a contact across steps: block id, other body (kind, id), and the contact
/// point's cell in the block's frame.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ContactKey {
    pub id: u32,
    pub other: (u8, u64),
    pub cell: [i64; 3],
}

/// The 26 cells around a cell, nearest first (faces, edges, corners).
const NEIGHBOURS: [[i64; 3]; 26] = {
    let mut out = [[0i64; 3]; 26];
    let mut n = 0;
    let mut ring = 1;
    while ring <= 3 {
        let mut i = 0;
        while i < 27 {
            let d = [i as i64 / 9 - 1, (i as i64 / 3) % 3 - 1, i as i64 % 3 - 1];
            if d[0].abs() + d[1].abs() + d[2].abs() == ring {
                out[n] = d;
                n += 1;
            }
            i += 1;
        }
        ring += 1;
    }
    out
};

/// Multipliers of the previous step, by contact key: the normal percussion λ_N of every
/// contact, and the friction percussion λ_T (world) of frictional ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmStart {
    lambda: HashMap<ContactKey, f64>,
    tangential: HashMap<ContactKey, Vector3<f64>>,
}

impl WarmStart {
    /// The key under which a contact's previous multiplier is stored: the same key, else
    /// the same pair in a neighbouring cell (a contact point that crossed a cell boundary).
    fn find(&self, k: &ContactKey) -> Option<ContactKey> {
        if self.lambda.contains_key(k) {
            return Some(*k);
        }
        NEIGHBOURS.iter().find_map(|d| {
            let cell = [k.cell[0] + d[0], k.cell[1] + d[1], k.cell[2] + d[2]];
            let n = ContactKey { cell, ..*k };
            self.lambda.contains_key(&n).then_some(n)
        })
    }
    /// Initial multipliers for these contacts: the previous step's multiplier of the same
    /// key, else of the same pair in a neighbouring cell, else 0.
    pub fn initial_lambda(&self, keys: &[ContactKey]) -> Vec<f64> {
        keys.iter().map(|k| self.find(k).map_or(0.0, |f| self.lambda[&f])).collect()
    }
    /// Initial percussions (normal and friction) for these contacts, looked up as
    /// [`WarmStart::initial_lambda`].
    pub fn initial_impulses(&self, keys: &[ContactKey]) -> Vec<ContactImpulse> {
        keys.iter()
            .map(|k| match self.find(k) {
                Some(f) => ContactImpulse {
                    normal: self.lambda[&f],
                    tangential: self.tangential.get(&f).copied().unwrap_or_else(Vector3::zeros),
                },
                None => ContactImpulse::default(),
            })
            .collect()
    }
    /// Remember the multipliers of a solved island.
    pub fn record(&mut self, keys: &[ContactKey], lambda: &[f64]) {
        for (k, l) in keys.iter().zip(lambda) {
            self.lambda.insert(*k, *l);
        }
    }
    /// Remember the friction percussions of a solved island (zero ones are not stored).
    pub fn record_tangential(&mut self, keys: &[ContactKey], tangential: &[Vector3<f64>]) {
        for (k, t) in keys.iter().zip(tangential) {
            if *t != Vector3::zeros() {
                self.tangential.insert(*k, *t);
            }
        }
    }
    /// Friction entries sorted by key (for checkpoints).
    pub fn tangential_entries(&self) -> Vec<(ContactKey, [f64; 3])> {
        let mut v: Vec<_> = self.tangential.iter().map(|(k, t)| (*k, [t.x, t.y, t.z])).collect();
        v.sort_by_key(|a| a.0);
        v
    }
    /// Add checkpointed friction entries.
    pub fn with_tangential(mut self, entries: &[(ContactKey, [f64; 3])]) -> Self {
        self.tangential = entries.iter().map(|(k, t)| (*k, Vector3::from(*t))).collect();
        self
    }
    /// Entries sorted by key (for checkpoints).
    pub fn entries(&self) -> Vec<(ContactKey, f64)> {
        let mut v: Vec<_> = self.lambda.iter().map(|(k, l)| (*k, *l)).collect();
        v.sort_by_key(|a| a.0);
        v
    }
    /// From checkpointed entries.
    pub fn from_entries(entries: &[(ContactKey, f64)]) -> Self {
        WarmStart { lambda: entries.iter().copied().collect(), tangential: HashMap::new() }
    }
}

/// K = H + Σ_{k∈A} ρ_k c_k c_kᵀ on a fixed upper-triangular pattern, in a fill-reducing
/// order.
///
/// The unknowns come in blocks of six (one body's velocity and angular velocity) and H and
/// CᵀC couple bodies, not single unknowns, so the pattern is one of dense 6 × 6 blocks and
/// the ordering is computed on the bodies' contact graph (AMD, 36 times fewer entries
/// than the scalar graph). The pattern is stored already permuted, so the numeric
/// factorisation runs in the identity order and only the right-hand sides are permuted.
struct KPattern {
    /// Position of each unknown in the factor's order.
    perm: Vec<usize>,
    colptr: Vec<usize>,
    rowval: Vec<usize>,
    /// Slot of each H entry (in h_upper's order).
    h_slot: Vec<usize>,
    /// Per constraint k, `c_slots[c_start[k]..c_start[k + 1]]`: (slot, a, b) of the c_a c_b
    /// products (a, b index the row entries).
    c_slots: Vec<(usize, u8, u8)>,
    c_start: Vec<usize>,
}

impl KPattern {
    fn new(qp: &Qp, rows: &[Vec<(usize, f64)>]) -> Option<Self> {
        let n = qp.n();
        let h = &qp.h_upper;
        // Bodies (blocks of `bs` unknowns) and the pairs H or a constraint couples.
        let bs = if n.is_multiple_of(6) { 6 } else { 1 };
        let nb = n / bs;
        let mut adj: Vec<Vec<usize>> = vec![Vec::new(); nb];
        for col in 0..n {
            for k in h.colptr[col]..h.colptr[col + 1] {
                let (i, j) = (h.rowval[k] / bs, col / bs);
                if i != j {
                    adj[i].push(j);
                    adj[j].push(i);
                }
            }
        }
        let mut touched: Vec<usize> = Vec::new();
        for row in rows {
            touched.clear();
            touched.extend(row.iter().map(|&(c, _)| c / bs));
            touched.sort_unstable();
            touched.dedup();
            for (x, &i) in touched.iter().enumerate() {
                for &j in &touched[x + 1..] {
                    adj[i].push(j);
                    adj[j].push(i);
                }
            }
        }
        for a in adj.iter_mut() {
            a.sort_unstable();
            a.dedup();
        }
        // Fill-reducing order of the bodies: order[new] = old.
        let order = body_order(&adj)?;
        let mut pos = vec![0usize; nb];
        for (new, &old) in order.iter().enumerate() {
            pos[old] = new;
        }
        let perm: Vec<usize> = (0..n).map(|i| bs * pos[i / bs] + i % bs).collect();
        // Permuted body pattern, upper: for body column J the body rows I ≤ J, sorted.
        let brows: Vec<Vec<usize>> = order
            .iter()
            .enumerate()
            .map(|(jn, &jo)| {
                let mut v: Vec<usize> =
                    adj[jo].iter().map(|&io| pos[io]).filter(|&i| i < jn).collect();
                v.sort_unstable();
                v.push(jn);
                v
            })
            .collect();
        let mut colptr = vec![0usize; n + 1];
        for (j, br) in brows.iter().enumerate() {
            for a in 0..bs {
                colptr[j * bs + a + 1] = bs * (br.len() - 1) + a + 1;
            }
        }
        for c in 0..n {
            colptr[c + 1] += colptr[c];
        }
        let mut rowval = Vec::with_capacity(colptr[n]);
        for (j, br) in brows.iter().enumerate() {
            for a in 0..bs {
                for &i in &br[..br.len() - 1] {
                    rowval.extend(i * bs..i * bs + bs);
                }
                rowval.extend(j * bs..j * bs + a + 1);
            }
        }
        // Slot of the permuted entry (row, col), row ≤ col.
        let slot = |row: usize, col: usize| -> usize {
            let (i, j) = (row / bs, col / bs);
            let br = &brows[j];
            let k =
                if i == j { br.len() - 1 } else { br.binary_search(&i).expect("pattern entry") };
            colptr[col] + bs * k + row % bs
        };
        let upper = |a: usize, b: usize| -> usize {
            let (pa, pb) = (perm[a], perm[b]);
            if pa <= pb { slot(pa, pb) } else { slot(pb, pa) }
        };
        let mut h_slot = Vec::with_capacity(h.nzval.len());
        for col in 0..n {
            for k in h.colptr[col]..h.colptr[col + 1] {
                h_slot.push(upper(h.rowval[k], col));
            }
        }
        // The rows of one friction cone have the same columns: their slots are copied.
        let mut c_start = Vec::with_capacity(rows.len() + 1);
        c_start.push(0);
        let mut c_slots: Vec<(usize, u8, u8)> = Vec::new();
        for (k, row) in rows.iter().enumerate() {
            let same_columns = k > 0
                && rows[k - 1].len() == row.len()
                && rows[k - 1].iter().zip(row).all(|(a, b)| a.0 == b.0);
            if same_columns {
                c_slots.extend_from_within(c_start[k - 1]..c_start[k]);
            } else {
                for (a, &(ca, _)) in row.iter().enumerate() {
                    for (b, &(cb, _)) in row.iter().enumerate().skip(a) {
                        c_slots.push((upper(ca, cb), a as u8, b as u8));
                    }
                }
            }
            c_start.push(c_slots.len());
        }
        Some(KPattern { perm, colptr, rowval, h_slot, c_slots, c_start })
    }

    fn values(
        &self,
        qp: &Qp,
        rows: &[Vec<(usize, f64)>],
        rho: &[f64],
        active: &[bool],
        v: &mut Vec<f64>,
    ) {
        v.clear();
        v.resize(self.rowval.len(), 0.0);
        for (k, &s) in self.h_slot.iter().enumerate() {
            v[s] += qp.h_upper.nzval[k];
        }
        for (k, row) in rows.iter().enumerate() {
            if !active[k] {
                continue;
            }
            for &(s, a, b) in &self.c_slots[self.c_start[k]..self.c_start[k + 1]] {
                v[s] += rho[k] * row[a as usize].1 * row[b as usize].1;
            }
        }
    }
}

/// AMD order of a graph given by sorted adjacency lists (no self loops): order[new] = old.
fn body_order(adj: &[Vec<usize>]) -> Option<Vec<usize>> {
    let nb = adj.len();
    let mut colptr = Vec::with_capacity(nb + 1);
    colptr.push(0usize);
    let mut rowval = Vec::new();
    for a in adj {
        rowval.extend_from_slice(a);
        colptr.push(rowval.len());
    }
    let sym = SymbolicSparseColMatRef::new_checked(nb, nb, &colptr, None, &rowval);
    let (mut fwd, mut inv) = (vec![0usize; nb], vec![0usize; nb]);
    let mut mem = MemBuffer::try_new(amd::order_scratch::<usize>(nb, rowval.len())).ok()?;
    amd::order(&mut fwd, &mut inv, sym, amd::Control::default(), MemStack::new(&mut mem)).ok()?;
    Some(fwd)
}

/// Solve warm-started from `lambda0`; falls back to Clarabel (tolerance
/// `fallback_tolerance`) when the KKT conditions are not met within `max_iterations`
/// linear solves.
pub fn solve_warm(
    qp: &Qp,
    lambda0: &[f64],
    tolerance: f64,
    max_iterations: u32,
    fallback_tolerance: f64,
) -> QpOutcome {
    match try_solve(qp, lambda0, tolerance, max_iterations) {
        Some(o) => o,
        None => {
            let mut o = solve_clarabel(qp, fallback_tolerance, 200);
            o.fallback = true;
            o
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_abs(a: &[f64]) -> f64 {
    a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// Penalty of the augmented Lagrangian relative to each constraint's effective mass
/// (1/ρ_k is the regularisation of the KKT system the Newton steps solve).
const SIGMA_POLISH: f64 = 1e6;
/// σ of the first ALM iteration; multiplied by 10 at each outer iteration up to
/// `SIGMA_MAX` (small σ: few Newton steps far from the solution; large σ: fast multiplier
/// convergence near it).
const SIGMA_START: f64 = 1e2;
const SIGMA_MAX: f64 = 1e7;
/// Refinement steps of one polishing attempt.
const POLISH_STEPS: u32 = 8;
/// Active sets tried by the primal-dual active-set iterations before the ALM takes over.
const PDAS_STEPS: usize = 20;
/// Active sets of the free exchange (drops and adds at once); after them the adds come
/// first.
const PDAS_FREE_STEPS: usize = 4;

/// Islands of at most this many unknowns (20 bodies) are factorised dense (faer's dense
/// Cholesky of the n × n matrix K): for a column of 10 stacked blocks (60 unknowns) the
/// sparse path's ordering and symbolic analysis cost more than the whole dense
/// factorisation (generated heap of 10⁵ blocks in columns: solve 0.40 s per step against
/// 0.55 s). At 240 the thesis heap N = 100 was slower.
pub const DENSE_FACTOR_MAX: usize = 120;

/// Rows of C: per constraint, its (column, value) entries.
fn constraint_rows(qp: &Qp) -> Vec<Vec<(usize, f64)>> {
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); qp.m()];
    for col in 0..qp.c.n {
        for k in qp.c.colptr[col]..qp.c.colptr[col + 1] {
            rows[qp.c.rowval[k]].push((col, qp.c.nzval[k]));
        }
    }
    rows
}

/// Sparse Cholesky of K on the body-blocked pattern, with its buffers.
struct SparseK {
    pat: KPattern,
    symbolic: SymbolicCholesky<usize>,
    /// Values of K (pattern order) and of its factor.
    k_values: Vec<f64>,
    l_values: Vec<f64>,
    /// Workspace of the factorisation and the solves; a permuted right-hand side.
    scratch: MemBuffer,
    permuted: Vec<f64>,
}

/// Dense Cholesky of K (small islands).
struct DenseK {
    /// H (both triangles; K's lower triangle is built on a copy).
    h: Mat<f64>,
    llt: Option<Llt<f64>>,
}

enum Backend {
    Sparse(Box<SparseK>),
    Dense(DenseK),
}

/// The factorisation of K = H + Σ_{k∈A} ρ_k c_k c_kᵀ for one active set A.
pub(crate) struct Factor<'a> {
    qp: &'a Qp,
    /// Rows of C: (column, value).
    rows: Vec<Vec<(usize, f64)>>,
    backend: Backend,
    /// Σ_j c_kj² / H_jj per constraint (an inverse effective mass).
    inv_mass: Vec<f64>,
    /// ρ_k = σ / inv_mass_k.
    rho: Vec<f64>,
    /// The active set the factor holds, if any.
    cache: Option<Vec<bool>>,
    /// [`scales`] of the QP.
    scales: (f64, f64),
}

impl<'a> Factor<'a> {
    pub(crate) fn new(qp: &'a Qp, dense_factor_max: usize) -> Option<Self> {
        let n = qp.n();
        let rows = constraint_rows(qp);
        let h = &qp.h_upper;
        let backend = if n <= dense_factor_max {
            let hd = qp.h_dense();
            Backend::Dense(DenseK { h: Mat::from_fn(n, n, |i, j| hd[(i, j)]), llt: None })
        } else {
            let pat = KPattern::new(qp, &rows)?;
            let sym = SymbolicSparseColMatRef::new_checked(n, n, &pat.colptr, None, &pat.rowval);
            let symbolic = factorize_symbolic_cholesky(
                sym,
                Side::Upper,
                SymmetricOrdering::Identity,
                Default::default(),
            )
            .ok()?;
            let scratch = MemBuffer::try_new(StackReq::any_of(&[
                symbolic.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()),
                symbolic.solve_in_place_scratch::<f64>(1, Par::Seq),
            ]))
            .ok()?;
            let l_values = vec![0.0; symbolic.len_val()];
            Backend::Sparse(Box::new(SparseK {
                pat,
                symbolic,
                k_values: Vec::new(),
                l_values,
                scratch,
                permuted: vec![0.0; n],
            }))
        };
        // diag(H), for ρ_k = σ / Σ_j c_kj² / H_jj (σ times an effective mass of contact k):
        // K − H is then σ times H's scale whatever the masses, sizes and lever arms.
        let mut hdiag = vec![0.0f64; n];
        for (col, d) in hdiag.iter_mut().enumerate() {
            for k in h.colptr[col]..h.colptr[col + 1] {
                if h.rowval[k] == col {
                    *d += h.nzval[k];
                }
            }
        }
        let inv_mass: Vec<f64> = rows
            .iter()
            .map(|row| {
                let s: f64 = row.iter().map(|&(c, v)| v * v / hdiag[c].max(1e-300)).sum();
                if s > 0.0 { s } else { 1.0 }
            })
            .collect();
        let rho = vec![0.0; inv_mass.len()];
        let mut f = Factor { qp, rows, backend, inv_mass, rho, cache: None, scales: scales(qp) };
        f.set_sigma(SIGMA_POLISH);
        Some(f)
    }

    /// Σ_j c_kj² / H_jj of each constraint row (an inverse effective mass).
    pub(crate) fn inv_mass(&self) -> &[f64] {
        &self.inv_mass
    }

    /// Set the penalties ρ_k of the rows (the factorisation is redone on the next solve).
    pub(crate) fn set_rho(&mut self, rho: Vec<f64>) {
        assert_eq!(rho.len(), self.inv_mass.len());
        self.rho = rho;
        self.cache = None;
    }

    /// Set σ (the factorisation is redone on the next solve).
    fn set_sigma(&mut self, sigma: f64) {
        self.rho = self.inv_mass.iter().map(|s| sigma / s).collect();
        self.cache = None;
    }

    /// Factorise K_A; `false` when the factorisation fails.
    fn factorise(&mut self, active: &[bool]) -> bool {
        let n = self.qp.n();
        match &mut self.backend {
            Backend::Dense(d) => {
                let mut k = d.h.clone();
                for (kk, row) in self.rows.iter().enumerate() {
                    if !active[kk] {
                        continue;
                    }
                    let rho = self.rho[kk];
                    // The lower triangle: the one the factorisation reads.
                    for &(a, va) in row {
                        for &(b, vb) in row.iter().filter(|(b, _)| *b <= a) {
                            k[(a, b)] += rho * va * vb;
                        }
                    }
                }
                d.llt = Llt::new(k.as_ref(), Side::Lower).ok();
                d.llt.is_some()
            }
            Backend::Sparse(sp) => {
                sp.pat.values(self.qp, &self.rows, &self.rho, active, &mut sp.k_values);
                let sym = SymbolicSparseColMatRef::new_checked(
                    n,
                    n,
                    &sp.pat.colptr,
                    None,
                    &sp.pat.rowval,
                );
                let mat = SparseColMatRef::new(sym, &sp.k_values);
                sp.symbolic
                    .factorize_numeric_llt(
                        &mut sp.l_values,
                        mat,
                        Side::Upper,
                        Default::default(),
                        Par::Seq,
                        MemStack::new(&mut sp.scratch),
                        Default::default(),
                    )
                    .is_ok()
            }
        }
    }

    /// Solve K_A d = rhs in place; `false` when the factorisation fails.
    pub(crate) fn solve(&mut self, active: &[bool], rhs: &mut [f64]) -> bool {
        let n = self.qp.n();
        if self.cache.as_deref() != Some(active) {
            self.cache = None;
            if !self.factorise(active) {
                return false;
            }
            self.cache = Some(active.to_vec());
        }
        match &mut self.backend {
            Backend::Dense(d) => {
                let Some(llt) = &d.llt else { return false };
                llt.solve_in_place(MatMut::from_column_major_slice_mut(rhs, n, 1));
            }
            Backend::Sparse(sp) => {
                for (i, &p) in sp.pat.perm.iter().enumerate() {
                    sp.permuted[p] = rhs[i];
                }
                LltRef::new(&sp.symbolic, &sp.l_values).solve_in_place_with_conj(
                    Conj::No,
                    MatMut::from_column_major_slice_mut(&mut sp.permuted, n, 1),
                    Par::Seq,
                    MemStack::new(&mut sp.scratch),
                );
                for (i, &p) in sp.pat.perm.iter().enumerate() {
                    rhs[i] = sp.permuted[p];
                }
            }
        }
        true
    }
}

/// Scales of the KKT residuals: (stationarity, constraints).
pub(crate) fn scales(qp: &Qp) -> (f64, f64) {
    let h = &qp.h_upper;
    let hmax = max_abs(&h.nzval).max(1e-300);
    (max_abs(&qp.p).max(hmax * 1e-3), max_abs(&qp.r).max(1e-3))
}

/// Whether (x, λ) meets the KKT conditions to `tolerance` relative to the data's
/// [`scales`] (passed in: computing them reads all of H).
fn kkt_ok(
    qp: &Qp,
    x: &[f64],
    lambda: &[f64],
    tolerance: f64,
    (pscale, rscale): (f64, f64),
) -> Option<(f64, f64)> {
    let (prim, dual, comp, lmin) = kkt_residuals(qp, x, lambda);
    let ok = prim <= tolerance * rscale
        && dual <= tolerance * pscale
        && comp <= tolerance * rscale * pscale
        && lmin >= 0.0;
    ok.then_some((prim / rscale, dual / pscale))
}

/// A candidate (x, λ).
type Primal = (Vec<f64>, Vec<f64>);

/// The equality-constrained QP on an active set A (H x − C_Aᵀ λ_A = p, C_A x = r_A,
/// λ_k = 0 off A) by iterative refinement with the regularised factor
/// K_A = H + C_Aᵀ diag(ρ) C_A, started from (x0, λ0). The residuals are evaluated without
/// the penalty, so on a consistent A the result is exact to roundoff in the data's units.
/// Returns x and the multipliers, not clipped; `None` when the factorisation fails.
fn solve_on(
    f: &mut Factor,
    active: &[bool],
    lambda0: &[f64],
    x0: &[f64],
    iterations: &mut u32,
) -> Option<Primal> {
    let qp = f.qp;
    let (n, m) = (qp.n(), qp.m());
    let (pscale, rscale) = f.scales;
    let mut x = x0.to_vec();
    let mut lambda: Vec<f64> =
        lambda0.iter().zip(active).map(|(l, a)| if *a { *l } else { 0.0 }).collect();
    let mut previous = f64::INFINITY;
    for _ in 0..POLISH_STEPS {
        let hx = qp.h_mul(&x);
        let ctl = qp.ct_mul(&lambda);
        let res_d: Vec<f64> = (0..n).map(|i| qp.p[i] - hx[i] + ctl[i]).collect();
        let cx = qp.c_mul(&x);
        let res_p: Vec<f64> =
            (0..m).map(|k| if active[k] { qp.r[k] - cx[k] } else { 0.0 }).collect();
        let res = (max_abs(&res_d) / pscale).max(max_abs(&res_p) / rscale);
        // Refine down to roundoff: KKT residuals of 1e-10 still leave x up to ~1e-7 off on
        // ill-conditioned QPs (the error goes like √(complementarity / smallest mass)).
        // Refinement converges fast on a consistent active set; a stall above the tolerance
        // means the equalities contradict each other (A too large).
        if res <= 1e-15 || res > 0.25 * previous {
            break;
        }
        previous = res;
        // (H + C_Aᵀ R C_A) dx = res_d + C_Aᵀ R res_p ;  dλ_A = R (res_p − C_A dx).
        let rg: Vec<f64> = (0..m).map(|k| f.rho[k] * res_p[k]).collect();
        let crg = qp.ct_mul(&rg);
        let mut dx: Vec<f64> = (0..n).map(|i| res_d[i] + crg[i]).collect();
        *iterations += 1;
        if !f.solve(active, &mut dx) {
            return None;
        }
        let cdx = qp.c_mul(&dx);
        for i in 0..n {
            x[i] += dx[i];
        }
        for k in (0..m).filter(|&k| active[k]) {
            lambda[k] += f.rho[k] * (res_p[k] - cdx[k]);
        }
    }
    Some((x, lambda))
}

/// The equality-constrained QP `min ½xᵀHx − pᵀx s.t. Cx = r` on every row of `qp`, by the
/// warm solver's regularised factorisation and iterative refinement, from (x0, λ0)
/// (used to polish the contact-space solver's answer, [`crate::solver::nlgs`]). `None` when the
/// factorisation fails.
pub(crate) fn solve_equality(
    qp: &Qp,
    x0: &[f64],
    lambda0: &[f64],
    iterations: &mut u32,
) -> Option<Primal> {
    let mut f = Factor::new(qp, DENSE_FACTOR_MAX)?;
    let active = vec![true; qp.m()];
    solve_on(&mut f, &active, lambda0, x0, iterations)
}

/// Accept (x, λ) from [`solve_on`] as the QP's solution: no multiplier negative beyond
/// roundoff (which would mean the active set is wrong; tiny ones are set to 0), every
/// constraint holds and the KKT residuals are below the tolerance, relative to the QP's
/// [`scales`]. Returns λ clipped at 0 either way. The dense solver accepts its candidates
/// by the same rule.
pub(crate) fn accept(
    qp: &Qp,
    x: &[f64],
    lambda: &[f64],
    tolerance: f64,
    scales: (f64, f64),
) -> (bool, Vec<f64>) {
    let lscale = max_abs(lambda).max(tolerance * scales.0);
    let negative = lambda.iter().any(|l| *l < -tolerance * lscale);
    let clipped: Vec<f64> = lambda.iter().map(|l| l.max(0.0)).collect();
    let ok = !negative && kkt_ok(qp, x, &clipped, tolerance, scales).is_some();
    (ok, clipped)
}

/// Polishing: [`solve_on`] the active set A = {λ_k > 0}, then [`accept`].
fn polish(
    f: &mut Factor,
    lambda_alm: &[f64],
    x0: &[f64],
    tolerance: f64,
    iterations: &mut u32,
) -> Result<Primal, Option<Primal>> {
    let active: Vec<bool> = lambda_alm.iter().map(|l| *l > 0.0).collect();
    let (x, lambda) = solve_on(f, &active, lambda_alm, x0, iterations).ok_or(None)?;
    match accept(f.qp, &x, &lambda, tolerance, f.scales) {
        (true, l) => Ok((x, l)),
        (false, l) => Err(Some((x, l))),
    }
}

/// Primal-dual active-set iterations (semismooth Newton on min(λ, m(Cx − r)) = 0, the
/// scheme of Hintermüller, Ito and Kunisch) from the active set {λ0_k > 0}: solve on A,
/// then A ← {k : λ_k − m_k (C_k x − r_k) > 0} with m_k the constraint's effective mass,
/// i.e. drop the constraints whose multiplier came out negative and add the violated
/// ones. Warm-started from the previous step it needs 5–19 sets on the big island of the
/// thesis heap N = 3000, whose previous active set is off by a few hundred constraints
/// while the heap forms. It can cycle on degenerate QPs: after
/// `PDAS_FREE_STEPS` sets the violated constraints are added before any is dropped, and it
/// stops on a repeated active set, after `PDAS_STEPS` sets or at the iteration limit,
/// returning its last iterate (for the ALM to start from) as `Err`.
fn pdas(
    f: &mut Factor,
    lambda0: &[f64],
    tolerance: f64,
    max_iterations: u32,
    iterations: &mut u32,
) -> Result<Primal, Option<Primal>> {
    let qp = f.qp;
    let (n, m) = (qp.n(), qp.m());
    let mut active: Vec<bool> = lambda0.iter().map(|l| *l > 0.0).collect();
    let mut seen: Vec<Vec<bool>> = Vec::new();
    let (mut x, mut lambda) = (vec![0.0; n], lambda0.to_vec());
    // λ clipped at 0: the iterate handed on when the iterations stop.
    let mut clipped = lambda0.to_vec();
    for _ in 0..PDAS_STEPS {
        if *iterations >= max_iterations {
            break;
        }
        (x, lambda) = solve_on(f, &active, &lambda, &x, iterations).ok_or(None)?;
        let ok;
        (ok, clipped) = accept(qp, &x, &lambda, tolerance, f.scales);
        if ok {
            return Ok((x, clipped));
        }
        let cx = qp.c_mul(&x);
        let mut next: Vec<bool> =
            (0..m).map(|k| lambda[k] - (cx[k] - qp.r[k]) / f.inv_mass[k] > 0.0).collect();
        if seen.len() >= PDAS_FREE_STEPS {
            // Near the solution the full exchange can cycle among degenerate sets (a
            // contact dropped for a negative multiplier is violated once dropped): add the
            // violated constraints first, and drop only when none is violated.
            let adds = (0..m).any(|k| next[k] && !active[k]);
            if adds {
                for k in 0..m {
                    next[k] |= active[k];
                }
            }
        }
        seen.push(active);
        if seen.contains(&next) {
            break;
        }
        active = next;
    }
    Err(Some((x, clipped)))
}

/// The warm solver (active sets, then the semismooth-Newton ALM with active-set
/// polishing); `None` when it does not converge within `max_iterations` linear solves.
pub fn try_solve(
    qp: &Qp,
    lambda0: &[f64],
    tolerance: f64,
    max_iterations: u32,
) -> Option<QpOutcome> {
    try_solve_with(qp, lambda0, tolerance, max_iterations, DENSE_FACTOR_MAX)
}

/// [`try_solve`] with K factorised dense when the QP has at most `dense_factor_max`
/// unknowns (else sparse); [`try_solve`] uses [`DENSE_FACTOR_MAX`]. Both factorisations
/// give the same solution to roundoff (`tests/warm.rs`).
pub fn try_solve_with(
    qp: &Qp,
    lambda0: &[f64],
    tolerance: f64,
    max_iterations: u32,
    dense_factor_max: usize,
) -> Option<QpOutcome> {
    let (n, m) = (qp.n(), qp.m());
    let mut f = Factor::new(qp, dense_factor_max)?;
    let (pscale, rscale) = f.scales;
    let done = |x: Vec<f64>, lambda: Vec<f64>, iterations: u32| {
        let (prim, dual, _, _) = kkt_residuals(qp, &x, &lambda);
        QpOutcome {
            x,
            lambda,
            status: QpStatus::Solved,
            solved: true,
            iterations,
            r_prim: prim / rscale,
            r_dual: dual / pscale,
            solver: SolverUsed::Warm,
            fallback: false,
        }
    };
    let mut lambda: Vec<f64> = lambda0.iter().map(|l| l.max(0.0)).collect();
    let mut iterations = 0u32;
    // Warm start: the previous step's active set is usually nearly right; the active-set
    // iterations from it are then the whole solve. Otherwise their iterate starts the ALM.
    let mut x = match pdas(&mut f, &lambda, tolerance, max_iterations, &mut iterations) {
        Ok((xp, lp)) => return Some(done(xp, lp, iterations)),
        Err(None) => return None,
        Err(Some((xp, lp))) => {
            lambda = lp;
            xp
        }
    };
    let mut sigma = SIGMA_START / 10.0;
    for _outer in 0..1000 {
        // Inner: minimise the augmented Lagrangian in x by semismooth Newton. It is a
        // piecewise quadratic: once a full step keeps the active set it was computed with,
        // x is its exact minimiser (to roundoff).
        sigma = (sigma * 10.0).min(SIGMA_MAX);
        f.set_sigma(sigma);
        let rho = f.rho.clone();
        let mut last: Option<Vec<bool>> = None;
        loop {
            let cx = qp.c_mul(&x);
            let shifted: Vec<f64> =
                (0..m).map(|k| lambda[k] - rho[k] * (cx[k] - qp.r[k])).collect();
            let active: Vec<bool> = shifted.iter().map(|s| *s > 0.0).collect();
            if last.as_ref() == Some(&active) {
                break;
            }
            let mu: Vec<f64> = shifted.iter().map(|s| s.max(0.0)).collect();
            let hx = qp.h_mul(&x);
            let ctmu = qp.ct_mul(&mu);
            let grad: Vec<f64> = (0..n).map(|i| hx[i] - qp.p[i] - ctmu[i]).collect();
            if max_abs(&grad) <= 0.1 * tolerance * pscale {
                break;
            }
            if iterations >= max_iterations {
                return None;
            }
            iterations += 1;
            let mut d: Vec<f64> = grad.iter().map(|g| -g).collect();
            if !f.solve(&active, &mut d) {
                return None;
            }
            // Exact line search: φ'(t) = dᵀ(H(x + t d) − p) − Σ (C_k d) max(0, s_k − ρ_k t C_k d).
            let hd = qp.h_mul(&d);
            let cd = qp.c_mul(&d);
            let a0 = dot(&d, &grad) + dot(&cd, &mu); // dᵀ(Hx − p)
            let a1 = dot(&d, &hd);
            let dphi = |t: f64| -> f64 {
                let mut v = a0 + t * a1;
                for k in 0..m {
                    let s = shifted[k] - rho[k] * t * cd[k];
                    if s > 0.0 {
                        v -= cd[k] * s;
                    }
                }
                v
            };
            let mut t = 1.0;
            if dphi(1.0) > 1e-14 * a1.max(1e-300) {
                // Breakpoints in (0, 1): φ' is increasing and piecewise linear.
                let mut bps: Vec<f64> = (0..m)
                    .filter(|&k| cd[k] != 0.0)
                    .map(|k| shifted[k] / (rho[k] * cd[k]))
                    .filter(|b| *b > 0.0 && *b < 1.0)
                    .collect();
                bps.sort_by(f64::total_cmp);
                let mut lo = 0.0;
                let mut dlo = dphi(0.0);
                for &b in bps.iter().chain(std::iter::once(&1.0)) {
                    let db = dphi(b);
                    if db >= 0.0 {
                        t = if db > dlo { lo + (b - lo) * (-dlo) / (db - dlo) } else { b };
                        break;
                    }
                    lo = b;
                    dlo = db;
                }
            }
            if t.is_nan() || t <= 0.0 {
                return None;
            }
            for i in 0..n {
                x[i] += t * d[i];
            }
            last = (t == 1.0).then_some(active);
        }
        if x.iter().any(|v| !v.is_finite()) {
            return None;
        }
        // Outer: multiplier update, then an exact solve on the identified active set.
        let cx = qp.c_mul(&x);
        for k in 0..m {
            lambda[k] = (lambda[k] - rho[k] * (cx[k] - qp.r[k])).max(0.0);
        }
        match polish(&mut f, &lambda, &x, tolerance, &mut iterations) {
            Ok((xp, lp)) => return Some(done(xp, lp, iterations)),
            Err(None) => return None,
            Err(Some(_)) => {}
        }
        if iterations >= max_iterations {
            return None;
        }
    }
    None
}
