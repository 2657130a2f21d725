//! The warm-started solver of the jump QP `min ½xᵀHx − pᵀx s.t. Cx ≥ r`.
//!
//! Three stages, each exact on the active set it ends with, all using one regularised
//! matrix K_A = H + Σ_{k∈A} ρ_k c_k c_kᵀ, factorised by 6 × 6 blocks in the bodies' AMD
//! order ([`crate::solver::block_cholesky`]; faer's dense Cholesky for small islands):
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

use crate::counting_sort::by_key;
use crate::solver::assembly::{NO_BODY, Qp, RowBlocks};
use crate::solver::block_cholesky::{BlockCholesky, Columns, add_outer};
use crate::solver::clarabel::{QpOutcome, QpStatus, SolverUsed, kkt_residuals, solve_clarabel};
use crate::solver::dissection::dissection_order;
use crate::solver::nlgs::ContactImpulse;
use crate::solver::pair::{Pair, with_rayon};
use crate::solver::supernodal::SplitSolve;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::solvers::{Llt, Solve};
use faer::sparse::linalg::amd;
use faer::sparse::linalg::cholesky::{
    LltRef, SymbolicCholesky, SymbolicCholeskyRaw, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, Mat, MatMut, Par, Side};
use nalgebra::{Matrix6, Vector3, Vector6};
use std::cell::OnceCell;
use std::collections::HashMap;

/// The warm-start maps' hasher: keys are local data, so a fixed, fast hash will do (SipHash
/// was 3.5 % of a default-site profile).
type KeyMap<V> = HashMap<ContactKey, V, foldhash::fast::FixedState>;

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

/// What a step recorded for one contact key: its normal percussion λ_N, its friction
/// percussion λ_T (world; frictional contacts with a nonzero one) and the change of its
/// slip speed in the jump (nonzero ones).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recorded {
    lambda: Option<f64>,
    tangential: Option<Vector3<f64>>,
    slip_change: Option<f64>,
}

/// Multipliers of the previous step, by contact key: the normal percussion λ_N of every
/// contact, and the friction percussion λ_T (world) of frictional ones; and, for the slip
/// credit, how much each frictional contact's slip speed grew in the previous jump. One
/// map holds the three, so that a contact is found, and recorded, with one look-up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmStart {
    recorded: KeyMap<Recorded>,
}

impl WarmStart {
    /// What is stored for key `k` when it has a multiplier.
    fn with_lambda(&self, k: &ContactKey) -> Option<Recorded> {
        self.recorded.get(k).filter(|r| r.lambda.is_some()).copied()
    }
    /// A contact's previous values: the same key's, else those of the same pair in a
    /// neighbouring cell (a contact point that crossed a cell boundary), when they hold a
    /// multiplier.
    fn find(&self, k: &ContactKey) -> Option<Recorded> {
        self.with_lambda(k).or_else(|| {
            NEIGHBOURS.iter().find_map(|d| {
                let cell = [k.cell[0] + d[0], k.cell[1] + d[1], k.cell[2] + d[2]];
                self.with_lambda(&ContactKey { cell, ..*k })
            })
        })
    }
    /// Each of these contacts' previous values ([`Self::find`]), looked up once for every
    /// use in a step.
    pub fn resolve(&self, keys: &[ContactKey]) -> Vec<Option<Recorded>> {
        keys.iter().map(|k| self.find(k)).collect()
    }
    /// Initial multipliers for these contacts: the previous step's multiplier of the same
    /// key, else of the same pair in a neighbouring cell, else 0.
    pub fn initial_lambda(&self, keys: &[ContactKey]) -> Vec<f64> {
        self.lambda_at(&self.resolve(keys))
    }
    /// [`Self::initial_lambda`] of contacts already [resolved](Self::resolve).
    pub fn lambda_at(&self, found: &[Option<Recorded>]) -> Vec<f64> {
        found.iter().map(|f| f.and_then(|f| f.lambda).unwrap_or(0.0)).collect()
    }
    /// Initial percussions (normal and friction) of contacts already
    /// [resolved](Self::resolve); 0 for those not found.
    pub fn impulses_at(&self, found: &[Option<Recorded>]) -> Vec<ContactImpulse> {
        found
            .iter()
            .map(|f| match f {
                Some(f) => ContactImpulse {
                    normal: f.lambda.unwrap_or(0.0),
                    tangential: f.tangential.unwrap_or_else(Vector3::zeros),
                },
                None => ContactImpulse::default(),
            })
            .collect()
    }
    /// The change of slip speed ‖v_T⁺‖ − ‖v_T⁻‖ of a [resolved](Self::resolve) contact in
    /// the previous step's jump (m/s); 0 when not recorded.
    pub fn slip_change_at(&self, found: Option<Recorded>) -> f64 {
        found.and_then(|f| f.slip_change).unwrap_or(0.0)
    }
    /// Remember a solved island's contacts in one pass: each one's normal multiplier, its
    /// friction percussion when given and nonzero, and its change of slip speed when
    /// nonzero (`slip_changes` may be empty: none). A key met twice keeps the last of each.
    pub fn record_island(
        &mut self,
        keys: &[ContactKey],
        lambda: impl Iterator<Item = f64>,
        tangential: Option<&[Vector3<f64>]>,
        slip_changes: &[f64],
    ) {
        for (k, (key, l)) in keys.iter().zip(lambda).enumerate() {
            let r = self.recorded.entry(*key).or_default();
            r.lambda = Some(l);
            if let Some(t) = tangential.and_then(|t| t.get(k).copied())
                && t != Vector3::zeros()
            {
                r.tangential = Some(t);
            }
            if let Some(&d) = slip_changes.get(k)
                && d != 0.0
            {
                r.slip_change = Some(d);
            }
        }
    }
    /// Slip-change entries sorted by key (for checkpoints).
    pub fn slip_change_entries(&self) -> Vec<(ContactKey, f64)> {
        self.sorted(|r| r.slip_change)
    }
    /// Add checkpointed slip-change entries.
    pub fn with_slip_changes(mut self, entries: &[(ContactKey, f64)]) -> Self {
        for (k, d) in entries {
            self.recorded.entry(*k).or_default().slip_change = Some(*d);
        }
        self
    }
    /// Friction entries sorted by key (for checkpoints).
    pub fn tangential_entries(&self) -> Vec<(ContactKey, [f64; 3])> {
        self.sorted(|r| r.tangential.map(|t| [t.x, t.y, t.z]))
    }
    /// Add checkpointed friction entries.
    pub fn with_tangential(mut self, entries: &[(ContactKey, [f64; 3])]) -> Self {
        for (k, t) in entries {
            self.recorded.entry(*k).or_default().tangential = Some(Vector3::from(*t));
        }
        self
    }
    /// Entries sorted by key (for checkpoints).
    pub fn entries(&self) -> Vec<(ContactKey, f64)> {
        self.sorted(|r| r.lambda)
    }
    /// From checkpointed entries.
    pub fn from_entries(entries: &[(ContactKey, f64)]) -> Self {
        let mut w = WarmStart::default();
        for (k, l) in entries {
            w.recorded.entry(*k).or_default().lambda = Some(*l);
        }
        w
    }
    /// The keys holding a value, with it, sorted by key.
    fn sorted<T>(&self, value: impl Fn(&Recorded) -> Option<T>) -> Vec<(ContactKey, T)> {
        let mut v: Vec<_> =
            self.recorded.iter().filter_map(|(k, r)| Some((*k, value(r)?))).collect();
        v.sort_by_key(|a| a.0);
        v
    }
}

/// AMD order of a graph given by sorted adjacency lists (no self loops): order[new] = old.
pub(crate) fn body_order(adj: &Columns) -> Option<Vec<usize>> {
    let nb = adj.len();
    let sym = SymbolicSparseColMatRef::new_checked(nb, nb, &adj.ptr, None, &adj.rows);
    let (mut fwd, mut inv) = (vec![0usize; nb], vec![0usize; nb]);
    let mut mem = MemBuffer::try_new(amd::order_scratch::<usize>(nb, adj.rows.len())).ok()?;
    amd::order(&mut fwd, &mut inv, sym, amd::Control::default(), MemStack::new(&mut mem)).ok()?;
    Some(fwd)
}

/// Each body's place in `order` (order[new] = old; pos[old] = new) and the blocks of the
/// graph `adj` below the diagonal in that order, by block column: the structure of K's
/// lower triangle that [`BlockCholesky::new`] reads.
pub(crate) fn lower_in_order(adj: &Columns, order: &[usize]) -> (Vec<usize>, Columns) {
    let mut pos = vec![0usize; order.len()];
    for (new, &old) in order.iter().enumerate() {
        pos[old] = new;
    }
    let mut lower = Columns { ptr: Vec::with_capacity(order.len() + 1), rows: Vec::new() };
    lower.ptr.push(0);
    for &i in order {
        lower.rows.extend(adj.col(i).iter().map(|&j| pos[j]).filter(|&pj| pj > pos[i]));
        lower.ptr.push(lower.rows.len());
    }
    (pos, lower)
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

/// Where a row of C adds to K: its first body (permuted) and, for a row on two bodies, the
/// second and the index of their coupling block among K's.
type RowTarget = (usize, Option<(usize, usize)>);

/// K = H + Σ_{k∈A} ρ_k c_k c_kᵀ by blocks of 6 × 6 (one per body and per pair of coupled
/// bodies), factorised by [`BlockCholesky`] in the bodies' AMD order.
///
/// H and CᵀC couple bodies, not single unknowns, so the ordering is computed on the bodies'
/// contact graph (36 times fewer entries than the scalar graph), and K's blocks are summed
/// from H's blocks (as the assembly summed them, [`Qp::h_blocks`], else from H's entries)
/// and from C's rows of two bodies ([`RowBlocks`]).
struct BlockK {
    /// Position of each body in the factor's order.
    pos: Vec<usize>,
    chol: BlockCholesky,
    /// Per row of C: its first body (permuted) and, for a row on two bodies, the second
    /// and the index of their coupling block among K's (later body, earlier body).
    row_target: Vec<RowTarget>,
    /// H's diagonal blocks and its blocks below the diagonal (by K's blocks, in the order
    /// of `k_positions`), summed once per program.
    h_diag: Vec<Matrix6<f64>>,
    h_lower: Vec<Matrix6<f64>>,
    /// The position in L of each of K's blocks below the diagonal, ascending.
    k_positions: Vec<usize>,
    /// K's blocks being summed (as `h_diag` and `h_lower`).
    diag: Vec<Matrix6<f64>>,
    lower: Vec<Matrix6<f64>>,
    permuted: Vec<f64>,
    /// faer's scalar Cholesky on the same order, for factors with large dense fronts.
    scalar: Option<Box<ScalarK>>,
}

/// Above this many block products per column ([`BlockCholesky::work_per_column`]), K is
/// factorised by faer's scalar sparse Cholesky (which picks its supernodal method for such
/// factors, with dense kernels) instead of by blocks. Measured: the default site's largest
/// islands are at 18-421 (the blocks took its solves from 3.2-4.1 s to 2.4-3.0 s on 100
/// steps), a packed heap of 1000 blocks at 8584 (the blocks took 7.4-14.4 s a step against
/// faer's 6.1-11.9 s).
const BLOCK_WORK_MAX: f64 = 2000.0;

/// faer's threads for a scalar factorisation that has a [`Pair`] (its helper takes rayon's
/// jobs meanwhile, [`with_rayon`]). The packed heap of 1000 blocks (3.5 million entries in
/// L, about 0.1 s a factorisation): 0.6-0.8 of one thread's time (session 61).
const SCALAR_PAR: Par = Par::Rayon(std::num::NonZeroUsize::new(2).expect("2 > 0"));

/// K in faer's compressed columns (upper triangle, the bodies' order, each body's six
/// unknowns together) and its factor.
struct ScalarK {
    colptr: Vec<usize>,
    rowval: Vec<usize>,
    /// Per entry: a diagonal block (`true`, body) or a block of K below the diagonal
    /// (`false`, its index among K's blocks), and the row and column within it.
    source: Vec<(bool, usize, u8, u8)>,
    values: Vec<f64>,
    symbolic: SymbolicCholesky<usize>,
    l_values: Vec<f64>,
    scratch: MemBuffer,
    /// The two-thread solves of a supernodal L.
    split: Option<SplitSolve>,
}

impl ScalarK {
    /// The pattern of K from the blocks strictly below its diagonal (column i of `lower`:
    /// block rows j > i), their positions in `chol` and (`k_index`) their index among K's
    /// blocks at each position.
    fn new(lower: &Columns, chol: &BlockCholesky, k_index: &[usize]) -> Option<Self> {
        let nb = lower.len();
        let mut upper: Vec<Vec<usize>> = vec![Vec::new(); nb];
        for i in 0..nb {
            for &j in lower.col(i) {
                upper[j].push(i);
            }
        }
        let (mut colptr, mut rowval, mut source) = (vec![0usize], Vec::new(), Vec::new());
        for (j, u) in upper.iter_mut().enumerate() {
            u.sort_unstable();
            let blocks: Vec<(usize, usize)> = u
                .iter()
                .map(|&i| (i, k_index[chol.position(j, i).expect("K's block is in L's structure")]))
                .collect();
            for a in 0..6u8 {
                for &(i, p) in &blocks {
                    for r in 0..6u8 {
                        rowval.push(6 * i + r as usize);
                        source.push((false, p, a, r));
                    }
                }
                for r in 0..=a {
                    rowval.push(6 * j + r as usize);
                    source.push((true, j, r, a));
                }
                colptr.push(rowval.len());
            }
        }
        let n = 6 * nb;
        let sym = SymbolicSparseColMatRef::new_checked(n, n, &colptr, None, &rowval);
        let symbolic = factorize_symbolic_cholesky(
            sym,
            Side::Upper,
            SymmetricOrdering::Identity,
            Default::default(),
        )
        .ok()?;
        let scratch = MemBuffer::try_new(StackReq::any_of(&[
            symbolic.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()),
            symbolic.factorize_numeric_llt_scratch::<f64>(SCALAR_PAR, Default::default()),
            symbolic.solve_in_place_scratch::<f64>(1, Par::Seq),
        ]))
        .ok()?;
        let split = match symbolic.raw() {
            SymbolicCholeskyRaw::Supernodal(sn) => Some(SplitSolve::new(sn)),
            SymbolicCholeskyRaw::Simplicial(_) => None,
        };
        let l_values = vec![0.0; symbolic.len_val()];
        let values = vec![0.0; rowval.len()];
        Some(ScalarK { colptr, rowval, source, values, symbolic, l_values, scratch, split })
    }

    /// Factorise K (from its blocks), with faer's kernels on `par`'s threads.
    fn factorise(&mut self, diag: &[Matrix6<f64>], lower: &[Matrix6<f64>], par: Par) -> bool {
        for (v, &(d, k, a, b)) in self.values.iter_mut().zip(&self.source) {
            let m = if d { &diag[k] } else { &lower[k] };
            *v = m[(a as usize, b as usize)];
        }
        let n = self.colptr.len() - 1;
        let sym = SymbolicSparseColMatRef::new_checked(n, n, &self.colptr, None, &self.rowval);
        self.symbolic
            .factorize_numeric_llt(
                &mut self.l_values,
                SparseColMatRef::new(sym, &self.values),
                Side::Upper,
                Default::default(),
                par,
                MemStack::new(&mut self.scratch),
                Default::default(),
            )
            .is_ok()
    }

    /// Solve K d = rhs in place: by the split solve when L is supernodal (its sets on
    /// `pair`'s two threads), else by faer's.
    fn solve(&mut self, rhs: &mut [f64], pair: Option<&Pair>) {
        if let Some(split) = &mut self.split {
            split.solve(rhs, &self.l_values, pair);
            return;
        }
        let n = rhs.len();
        LltRef::new(&self.symbolic, &self.l_values).solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(rhs, n, 1),
            Par::Seq,
            MemStack::new(&mut self.scratch),
        );
    }
}

impl BlockK {
    /// `None` when the AMD ordering fails. Factors with more than `block_work_max` block
    /// products per column go to faer ([`BLOCK_WORK_MAX`]); for those, given the bodies'
    /// `centres`, a nested dissection is tried against AMD's order ([`dissection_order`]).
    /// With `two_threads` the block factor is split for a solve that has a second thread
    /// ([`BlockCholesky::new`]).
    fn new(
        qp: &Qp,
        rows: &RowBlocks,
        block_work_max: f64,
        two_threads: bool,
        centres: Option<&[Vector3<f64>]>,
    ) -> Option<Self> {
        let n = qp.n();
        let nb = n / 6;
        // The bodies' coupled pairs, both ways (`from[k]` → `to[k]`): H's upper triangle by
        // block columns (each pair once, `seen[i] == j`) and the rows of two bodies.
        let (mut from, mut to) = (Vec::new(), Vec::new());
        let mut couple = |a: usize, b: usize| {
            from.extend([a, b]);
            to.extend([b, a]);
        };
        let blocks = qp.h_blocks().filter(|b| b.n_bodies() == nb);
        match blocks {
            // Every pair with a block of H (a superset of those with a nonzero entry; all
            // of them pairs of a contact, so of C's rows below too).
            Some(hb) => hb.pairs().iter().for_each(|&(a, b)| couple(a, b)),
            None => {
                let h = qp.h_upper();
                let mut seen = vec![usize::MAX; nb];
                for col in 0..n {
                    let j = col / 6;
                    for &row in &h.rowval[h.colptr[col]..h.colptr[col + 1]] {
                        let i = row / 6;
                        if i != j && seen[i] != j {
                            seen[i] = j;
                            couple(i, j);
                        }
                    }
                }
            }
        }
        // The assembly's blocks of H hold a block for the pair of every contact, so C's rows
        // (one to three per contact) couple no other pair; from H's columns, a pair whose
        // contacts have κ = 0 has no entry, and its rows add it.
        if blocks.is_none() {
            for k in 0..qp.m() {
                if let ([a, b], _) = rows.row(k)
                    && b != NO_BODY
                    && a != b
                {
                    couple(a as usize, b as usize);
                }
            }
        }
        // The adjacency lists, sorted and without repeats.
        let (start, order) = by_key(nb, &from);
        let mut adj = Columns { ptr: Vec::with_capacity(nb + 1), rows: Vec::new() };
        adj.ptr.push(0);
        let mut list = Vec::new();
        for b in 0..nb {
            list.clear();
            list.extend(order[start[b]..start[b + 1]].iter().map(|&k| to[k]));
            list.sort_unstable();
            for (t, &j) in list.iter().enumerate() {
                if t == 0 || list[t - 1] != j {
                    adj.rows.push(j);
                }
            }
            adj.ptr.push(adj.rows.len());
        }
        debug_assert!((0..qp.m()).all(|k| match rows.row(k).0 {
            [a, b] if b != NO_BODY && a != b =>
                adj.col(a as usize).binary_search(&(b as usize)).is_ok(),
            _ => true,
        }));
        // Fill-reducing order of the bodies (order[new] = old), each body's place, K's
        // blocks below the diagonal by block column (in the new order) and L's structure.
        let structure = |order: Vec<usize>| {
            let (pos, lower) = lower_in_order(&adj, &order);
            let chol = BlockCholesky::new(&lower, two_threads);
            (pos, lower, chol)
        };
        let (mut pos, mut lower, mut chol) = structure(body_order(&adj)?);
        // AMD's order leaves large dense fronts when the bodies fill a volume: a nested
        // dissection by the bodies' centres is tried then, and kept if its factor needs less
        // work ([`dissection_order`]).
        if let Some(centres) = centres.filter(|c| c.len() == nb)
            && chol.work_per_column() > block_work_max
        {
            // AMD's order stands if the dissection's fails.
            if let Some(order) = dissection_order(&adj, centres) {
                let nd = structure(order);
                if nd.2.work_per_column() < chol.work_per_column() {
                    (pos, lower, chol) = nd;
                }
            }
        }
        // K's blocks below the diagonal, by their position in L (the rest of L is fill).
        let mut k_positions: Vec<usize> = (0..nb)
            .flat_map(|j| lower.col(j).iter().map(move |&i| (i, j)))
            .map(|(i, j)| chol.position(i, j).expect("K's block is in L's structure"))
            .collect();
        k_positions.sort_unstable();
        let mut k_index = vec![usize::MAX; chol.n_lower()];
        for (c, &p) in k_positions.iter().enumerate() {
            k_index[p] = c;
        }
        let coupling = |i: usize, j: usize| {
            let (hi, lo) = if i > j { (i, j) } else { (j, i) };
            k_index[chol.position(hi, lo).expect("K's block is in L's structure")]
        };
        // H's blocks, summed once (each factorisation starts from them): copied from the
        // assembly's blocks, or summed entry by entry in H's compressed order (the same
        // values: each entry of a block is one entry of H or +0).
        let mut h_diag = vec![Matrix6::<f64>::zeros(); nb];
        let mut h_lower = vec![Matrix6::<f64>::zeros(); k_positions.len()];
        if let Some(hb) = blocks {
            for (b, &p) in pos.iter().enumerate() {
                h_diag[p] = hb.diagonal(b);
            }
            for (k, &(ba, bb)) in hb.pairs().iter().enumerate() {
                let (i, j) = (pos[ba], pos[bb]);
                let block = hb.off_diagonal(k);
                // K's block (later body, earlier body): H's as is or transposed.
                h_lower[coupling(i, j)] = if i > j { block } else { block.transpose() };
            }
        } else {
            // A column's entries of one body come together: look their block up once.
            let h = qp.h_upper();
            let mut last: Option<(usize, usize, usize)> = None;
            for col in 0..n {
                for k in h.colptr[col]..h.colptr[col + 1] {
                    let (row, v) = (h.rowval[k], h.nzval[k]);
                    let (i, j) = (pos[row / 6], pos[col / 6]);
                    let (a, b) = (row % 6, col % 6);
                    let mut lower = || match last {
                        Some((li, lj, p)) if (li, lj) == (i, j) => p,
                        _ => {
                            let p = coupling(i, j);
                            last = Some((i, j, p));
                            p
                        }
                    };
                    match i.cmp(&j) {
                        std::cmp::Ordering::Equal => {
                            h_diag[i][(a, b)] += v;
                            if a != b {
                                h_diag[i][(b, a)] += v;
                            }
                        }
                        std::cmp::Ordering::Greater => h_lower[lower()][(a, b)] += v,
                        std::cmp::Ordering::Less => h_lower[lower()][(b, a)] += v,
                    }
                }
            }
        }
        // A contact's rows come together on the same bodies: their coupling block is
        // looked up once.
        let mut last: Option<([u32; 2], RowTarget)> = None;
        let row_target = (0..qp.m())
            .map(|k| {
                let ([a, b], _) = rows.row(k);
                if let Some((bodies, target)) = last
                    && bodies == [a, b]
                {
                    return target;
                }
                let pa = pos[a as usize];
                let second = (b != NO_BODY).then(|| {
                    let pb = pos[b as usize];
                    (pb, coupling(pa, pb))
                });
                last = Some(([a, b], (pa, second)));
                (pa, second)
            })
            .collect();
        let scalar = if chol.work_per_column() > block_work_max {
            Some(Box::new(ScalarK::new(&lower, &chol, &k_index)?))
        } else {
            None
        };
        Some(BlockK {
            scalar,
            pos,
            chol,
            row_target,
            // Written by each factorisation.
            diag: Vec::new(),
            lower: Vec::new(),
            h_diag,
            h_lower,
            k_positions,
            permuted: vec![0.0; n],
        })
    }

    /// Sum K's blocks, H's (summed once, by [`BlockK::new`]) and the active rows' with
    /// penalties `rho`, and factorise it. Only K's blocks are summed; L's fill is zeroed
    /// in the factor's own storage. The entries are summed in the same order as when every
    /// block of L was zeroed and H's entries added one by one at each factorisation, so the
    /// factor is the same, bit for bit (session 31: the thesis heap N = 3000, μ = 0.5 at
    /// 1e-6 in 86.3 and 88.0 s against 92.7 and 91.0 s).
    fn factorise(
        &mut self,
        rows: &RowBlocks,
        rho: &[f64],
        active: &[bool],
        pair: Option<&Pair>,
    ) -> bool {
        self.diag.clear();
        self.diag.extend_from_slice(&self.h_diag);
        self.lower.clear();
        self.lower.extend_from_slice(&self.h_lower);
        for (k, &(pa, second)) in self.row_target.iter().enumerate() {
            if !active[k] {
                continue;
            }
            let (_, vals) = rows.row(k);
            let r = rho[k].sqrt();
            let va = Vector6::from_column_slice(&vals[..6]) * r;
            add_outer(&mut self.diag[pa], &va, &va);
            if let Some((pb, p)) = second {
                let vb = Vector6::from_column_slice(&vals[6..]) * r;
                add_outer(&mut self.diag[pb], &vb, &vb);
                if pa > pb {
                    add_outer(&mut self.lower[p], &va, &vb);
                } else {
                    add_outer(&mut self.lower[p], &vb, &va);
                }
            }
        }
        match &mut self.scalar {
            // With a pair, faer's kernels run on its two threads (the same bits as on one:
            // `a_scalar_factor_on_two_threads_has_the_one_thread_bits`).
            Some(sk) => {
                let (diag, lower) = (&self.diag, &self.lower);
                let par = if pair.is_some() { SCALAR_PAR } else { Par::Seq };
                with_rayon(pair, || sk.factorise(diag, lower, par))
            }
            None => self.chol.factorize(&self.diag, &self.k_positions, &self.lower, pair),
        }
    }

    /// Solve K d = rhs in place (with `pair`'s helper, see [`BlockCholesky::solve_in_place`]).
    fn solve(&mut self, rhs: &mut [f64], pair: Option<&Pair>) {
        for (b, &p) in self.pos.iter().enumerate() {
            self.permuted[6 * p..6 * p + 6].copy_from_slice(&rhs[6 * b..6 * b + 6]);
        }
        match &mut self.scalar {
            Some(sk) => sk.solve(&mut self.permuted, pair),
            None => self.chol.solve_in_place(&mut self.permuted, pair),
        }
        for (b, &p) in self.pos.iter().enumerate() {
            rhs[6 * b..6 * b + 6].copy_from_slice(&self.permuted[6 * p..6 * p + 6]);
        }
    }
}

/// Dense Cholesky of K (small islands).
struct DenseK {
    /// H (both triangles; K's lower triangle is built on a copy).
    h: Mat<f64>,
    /// Rows of C, (column, value): row k is `rows[row_ptr[k]..row_ptr[k + 1]]`.
    row_ptr: Vec<usize>,
    rows: Vec<(usize, f64)>,
    llt: Option<Llt<f64>>,
}

enum Backend {
    Block(Box<BlockK>),
    Dense(DenseK),
}

/// The factorisation of K = H + Σ_{k∈A} ρ_k c_k c_kᵀ for one active set A.
pub(crate) struct Factor<'a> {
    qp: &'a Qp,
    backend: Backend,
    /// Σ_j c_kj² / H_jj per constraint (an inverse effective mass).
    inv_mass: Vec<f64>,
    /// ρ_k = σ / inv_mass_k.
    rho: Vec<f64>,
    /// The active set the factor holds, if any.
    cache: Option<Vec<bool>>,
    /// [`scales`] of the QP, computed when the active-set solver first asks (they read all
    /// of H; ADMM, which shares this factor, never needs them).
    scales: OnceCell<(f64, f64)>,
}

impl<'a> Factor<'a> {
    /// Islands of at most `dense_factor_max` unknowns, and programs whose unknowns do not
    /// come in bodies of six, are factorised dense; the others by blocks, split for two
    /// threads with `two_threads` (a solve that has a [`Pair`]), in a fill-reducing order of
    /// the bodies (AMD's, or a nested dissection by their `centres` when they are given and
    /// fill a volume, [`BlockK::new`]).
    pub(crate) fn new(
        qp: &'a Qp,
        dense_factor_max: usize,
        two_threads: bool,
        centres: Option<&[Vector3<f64>]>,
    ) -> Option<Self> {
        let n = qp.n();
        let backend = match qp.row_blocks() {
            Some(rows) if n > dense_factor_max => Backend::Block(Box::new(BlockK::new(
                qp,
                rows,
                BLOCK_WORK_MAX,
                two_threads,
                centres,
            )?)),
            _ => {
                let mut h = Mat::zeros(n, n);
                qp.h_upper_entries(|row, col, v| {
                    h[(row, col)] = v;
                    h[(col, row)] = v;
                });
                let (row_ptr, rows) = qp.c_row_entries();
                Backend::Dense(DenseK { h, row_ptr, rows, llt: None })
            }
        };
        // diag(H), for ρ_k = σ / Σ_j c_kj² / H_jj (σ times an effective mass of contact k):
        // K − H is then σ times H's scale whatever the masses, sizes and lever arms.
        let hdiag = qp.h_diagonal();
        let mut inv_mass = qp.inv_mass(&hdiag);
        for s in inv_mass.iter_mut().filter(|s| **s <= 0.0) {
            *s = 1.0;
        }
        let rho = vec![0.0; inv_mass.len()];
        let mut f = Factor { qp, backend, inv_mass, rho, cache: None, scales: OnceCell::new() };
        f.set_sigma(SIGMA_POLISH);
        Some(f)
    }

    /// Whether K goes to faer's scalar Cholesky ([`BLOCK_WORK_MAX`]): a factor with large
    /// dense fronts, whose factorisation costs many of its solves.
    pub(crate) fn is_scalar(&self) -> bool {
        matches!(&self.backend, Backend::Block(bk) if bk.scalar.is_some())
    }

    /// [`scales`] of the QP (computed on the first call).
    fn scales(&self) -> (f64, f64) {
        *self.scales.get_or_init(|| scales(self.qp))
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

    /// Factorise K_A (with `pair`'s helper, see [`BlockCholesky::factorize`]); `false` when
    /// the factorisation fails.
    fn factorise(&mut self, active: &[bool], pair: Option<&Pair>) -> bool {
        match &mut self.backend {
            Backend::Dense(d) => {
                let mut k = d.h.clone();
                for (kk, w) in d.row_ptr.windows(2).enumerate() {
                    let row = &d.rows[w[0]..w[1]];
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
            Backend::Block(bk) => {
                let rows = self.qp.row_blocks().expect("the block backend has C by rows");
                bk.factorise(rows, &self.rho, active, pair)
            }
        }
    }

    /// Solve K_A d = rhs in place; `false` when the factorisation fails.
    pub(crate) fn solve(&mut self, active: &[bool], rhs: &mut [f64]) -> bool {
        self.solve_with(active, rhs, None)
    }

    /// [`Self::solve`], the factorisation and the triangular solves shared with `pair`'s
    /// helper (block factors large enough to split).
    pub(crate) fn solve_with(
        &mut self,
        active: &[bool],
        rhs: &mut [f64],
        pair: Option<&Pair>,
    ) -> bool {
        let n = self.qp.n();
        if self.cache.as_deref() != Some(active) {
            self.cache = None;
            if !self.factorise(active, pair) {
                return false;
            }
            self.cache = Some(active.to_vec());
        }
        match &mut self.backend {
            Backend::Dense(d) => {
                let Some(llt) = &d.llt else { return false };
                llt.solve_in_place(MatMut::from_column_major_slice_mut(rhs, n, 1));
            }
            Backend::Block(bk) => bk.solve(rhs, pair),
        }
        true
    }
}

/// Scales of the KKT residuals: (stationarity, constraints).
pub(crate) fn scales(qp: &Qp) -> (f64, f64) {
    let hmax = qp.h_max_abs().max(1e-300);
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
    let (pscale, rscale) = f.scales();
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
    let mut f = Factor::new(qp, DENSE_FACTOR_MAX, false, None)?;
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
    match accept(f.qp, &x, &lambda, tolerance, f.scales()) {
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
        (ok, clipped) = accept(qp, &x, &lambda, tolerance, f.scales());
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
    let mut f = Factor::new(qp, dense_factor_max, false, None)?;
    let (pscale, rscale) = f.scales();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::assembly::{JumpBody, JumpContact, assemble};
    use crate::solver::testing::bits;
    use nalgebra::{DVector, Matrix3};

    /// A random island of `nb` bodies and 4 `nb` contacts between random pairs (so that
    /// its factor has fill), one in five with the ground, and with `no_kappa = Some(k)`
    /// one in k with κ = 0 (a pair of bodies with no entry of H off the diagonal); and the
    /// random number source, to draw more from.
    fn random_island(
        nb: usize,
        no_kappa: Option<usize>,
    ) -> (Vec<JumpBody>, Vec<JumpContact>, impl FnMut() -> f64) {
        let mut s = 99u64;
        let mut rnd = move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let bodies: Vec<JumpBody> = (0..nb)
            .map(|k| JumpBody {
                mass: 10.0 + 100.0 * rnd(),
                inertia: Matrix3::from_diagonal(&nalgebra::Vector3::new(
                    1.0 + rnd(),
                    1.0 + rnd(),
                    1.0 + rnd(),
                )) * 10.0,
                pos: nalgebra::Vector3::new(rnd() * 10.0, rnd() * 10.0, k as f64),
                vel: nalgebra::Vector3::new(rnd(), rnd(), rnd()),
                omega: nalgebra::Vector3::zeros(),
            })
            .collect();
        let contacts: Vec<JumpContact> = (0..4 * nb)
            .map(|c| {
                let i = (rnd() * nb as f64) as usize;
                let j = (c % 5 != 0).then(|| (i + 1 + (rnd() * (nb - 1) as f64) as usize) % nb);
                let kappa = if no_kappa.is_some_and(|k| c % k == 1) { 0.0 } else { 1.0 };
                JumpContact {
                    i,
                    j,
                    point: bodies[i].pos + nalgebra::Vector3::new(rnd(), rnd(), rnd())
                        - 0.5 * nalgebra::Vector3::repeat(1.0),
                    normal: nalgebra::Vector3::new(rnd() - 0.5, rnd() - 0.5, rnd() + 0.2)
                        .normalize(),
                    kappa_n: 10.0 * rnd() * kappa,
                    kappa_t: 5.0 * rnd() * kappa,
                    separation: 0.0,
                }
            })
            .collect();
        (bodies, contacts, rnd)
    }

    /// One island recorded in one pass keeps, per key, the last multiplier and the last
    /// nonzero friction percussion and slip change (also for a key met twice); a contact
    /// is found under its key or a neighbouring cell's when it holds a multiplier; and the
    /// checkpoint's three lists rebuild the same warm start.
    #[test]
    fn an_island_recorded_in_one_pass_is_found_and_checkpointed() {
        let key = |id: u32, cell: [i64; 3]| ContactKey { id, other: (0, 7), cell };
        let keys = [key(1, [0, 0, 0]), key(1, [4, 0, 0]), key(2, [0, 0, 0]), key(1, [0, 0, 0])];
        let lambda = [1.0, 2.0, 0.0, 3.0];
        let t = Vector3::new(0.5, -0.25, 0.0);
        let tangential = [t, Vector3::zeros(), 2.0 * t, Vector3::zeros()];
        let slip = [0.0, -1.5, 0.25, 0.0];
        let mut one = WarmStart::default();
        one.record_island(&keys, lambda.iter().copied(), Some(&tangential), &slip);
        let expected = WarmStart::from_entries(&[(keys[0], 3.0), (keys[1], 2.0), (keys[2], 0.0)])
            .with_tangential(&[(keys[0], [0.5, -0.25, 0.0]), (keys[2], [1.0, -0.5, 0.0])])
            .with_slip_changes(&[(keys[1], -1.5), (keys[2], 0.25)]);
        assert_eq!(one, expected);
        // The duplicate key: its last multiplier, the first one's (nonzero) percussion.
        assert_eq!(one.entries()[0], (keys[0], 3.0));
        assert_eq!(one.tangential_entries()[0], (keys[0], [0.5, -0.25, 0.0]));
        let found = one.resolve(&[key(1, [1, 0, 0]), key(1, [4, 1, 1]), key(1, [9, 9, 9])]);
        let impulses = one.impulses_at(&found);
        assert_eq!((impulses[0].normal, impulses[0].tangential), (3.0, t));
        assert_eq!((impulses[1].normal, impulses[1].tangential), (2.0, Vector3::zeros()));
        assert_eq!(impulses[2], ContactImpulse::default());
        assert_eq!(one.slip_change_at(found[1]), -1.5);
        assert_eq!(one.lambda_at(&found), vec![3.0, 2.0, 0.0]);
        // A key with only a slip change (from a checkpoint) is not a warm start.
        let lone = WarmStart::default().with_slip_changes(&[(key(3, [0, 0, 0]), 1.0)]);
        assert_eq!(lone.resolve(&[key(3, [0, 0, 0])]), vec![None]);
        let back = WarmStart::from_entries(&one.entries())
            .with_tangential(&one.tangential_entries())
            .with_slip_changes(&one.slip_change_entries());
        assert_eq!(back, one);
    }

    /// K = H + Σ ρ_k c_k c_kᵀ of a random island of 40 bodies (contacts between random
    /// pairs, so the factor has fill, and with the ground), factorised by blocks and by
    /// faer's scalar Cholesky on the same order: both solve K d = b as a dense Cholesky
    /// of K does.
    #[test]
    fn block_and_scalar_factors_agree_with_a_dense_solve() {
        let (bodies, contacts, mut rnd) = random_island(40, None);
        let qp = assemble(&bodies, &contacts, 0.1);
        let rows = qp.row_blocks().expect("rows of two bodies");
        let rho: Vec<f64> = (0..qp.m()).map(|_| 0.1 + 10.0 * rnd()).collect();
        let active: Vec<bool> = (0..qp.m()).map(|k| k % 7 != 3).collect();
        let n = qp.n();
        let k = dense_k(&qp, &rho, &active);
        let b: Vec<f64> = (0..n).map(|_| rnd() - 0.5).collect();
        let expected = k.clone().cholesky().expect("K is SPD").solve(&DVector::from_vec(b.clone()));
        let scale = expected.amax();
        let mut fill = 0.0;
        for work_max in [f64::INFINITY, 0.0] {
            let mut bk = BlockK::new(&qp, rows, work_max, false, None).expect("ordering");
            assert_eq!(bk.scalar.is_some(), work_max == 0.0);
            fill = bk.chol.work_per_column();
            assert!(bk.factorise(rows, &rho, &active, None), "not factorised");
            let mut x = b.clone();
            bk.solve(&mut x, None);
            let err = (0..n).map(|i| (x[i] - expected[i]).abs()).fold(0.0, f64::max);
            assert!(err < 1e-9 * scale, "work_max {work_max}: difference {err} (scale {scale})");
            let r = &k * DVector::from_vec(x) - DVector::from_vec(b.clone());
            assert!(r.amax() < 1e-9 * k.amax() * scale, "residual {}", r.amax());
        }
        assert!(fill > 4.0, "{fill} block products per column: the island should have fill");
    }

    /// K = H + Σ_k ρ_k c_k c_kᵀ over the active rows, dense (from its definition).
    fn dense_k(qp: &Qp, rho: &[f64], active: &[bool]) -> nalgebra::DMatrix<f64> {
        let mut k = qp.h_dense();
        let c = qp.c();
        let mut crow = vec![Vec::new(); qp.m()];
        for col in 0..qp.n() {
            for a in c.colptr[col]..c.colptr[col + 1] {
                crow[c.rowval[a]].push((col, c.nzval[a]));
            }
        }
        for (r, entries) in crow.iter().enumerate().filter(|(r, _)| active[*r]) {
            for &(i, vi) in entries {
                for &(j, vj) in entries {
                    k[(i, j)] += rho[r] * vi * vj;
                }
            }
        }
        k
    }

    /// K d = b solved by the scalar factor (`check`ed once made) on one thread, after
    /// asserting that three solves on a pool of two threads (factorisation and solve on a
    /// [`Pair`]) give its bits.
    fn scalar_solve_on_one_and_two_threads(
        qp: &Qp,
        rho: &[f64],
        b: &[f64],
        centres: Option<&[Vector3<f64>]>,
        check: impl Fn(&BlockK) + Sync,
    ) -> Vec<f64> {
        let rows = qp.row_blocks().expect("rows of two bodies");
        let active = vec![true; qp.m()];
        let solve = |pair: Option<&Pair>| {
            let mut bk = BlockK::new(qp, rows, 0.0, false, centres).expect("ordering");
            assert!(bk.scalar.is_some());
            check(&bk);
            assert!(bk.factorise(rows, rho, &active, pair), "not factorised");
            let mut x = b.to_vec();
            bk.solve(&mut x, pair);
            x
        };
        let one = solve(None);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        for _ in 0..3 {
            let two = pool.install(|| Pair::solve(|pair| solve(Some(pair.expect("two threads")))));
            assert_eq!(bits(&two), bits(&one));
        }
        one
    }

    /// A scalar factor made on two threads (faer's kernels on a [`Pair`]'s threads) solves
    /// with the bits of the one made on one thread. The island's random pairs give L dense
    /// fronts of hundreds of columns, which faer's kernels share between the threads.
    #[test]
    fn a_scalar_factor_on_two_threads_has_the_one_thread_bits() {
        let (bodies, contacts, mut rnd) = random_island(200, None);
        let qp = assemble(&bodies, &contacts, 0.1);
        let rho: Vec<f64> = (0..qp.m()).map(|_| 0.1 + 10.0 * rnd()).collect();
        let b: Vec<f64> = (0..qp.n()).map(|_| rnd() - 0.5).collect();
        scalar_solve_on_one_and_two_threads(&qp, &rho, &b, None, |_| {});
    }

    /// The bodies of a `side`³ lattice one apart, with four contacts between face
    /// neighbours and, with `diagonals`, one at the midpoint between neighbours across an
    /// edge or a corner (as packed boxes touch), and the random numbers that made them.
    fn lattice_island(
        side: usize,
        diagonals: bool,
        seed: u64,
    ) -> (Vec<JumpBody>, Vec<JumpContact>, impl FnMut() -> f64) {
        let mut rnd = crate::solver::testing::uniform(seed);
        let index = |a: usize, b: usize, c: usize| (a * side + b) * side + c;
        let bodies: Vec<JumpBody> = (0..side * side * side)
            .map(|k| JumpBody {
                mass: 50.0 + 40.0 * rnd(),
                inertia: Matrix3::from_diagonal(&Vector3::new(
                    5.0 + rnd(),
                    5.0 + rnd(),
                    5.0 + rnd(),
                )),
                pos: Vector3::new(
                    (k / (side * side)) as f64,
                    (k / side % side) as f64,
                    (k % side) as f64,
                ),
                vel: Vector3::new(rnd(), rnd(), rnd()),
                omega: Vector3::zeros(),
            })
            .collect();
        let mut contacts = Vec::new();
        for a in 0..side {
            for b in 0..side {
                for c in 0..side {
                    let i = index(a, b, c);
                    for (d, j) in [(0, a + 1 < side), (1, b + 1 < side), (2, c + 1 < side)]
                        .into_iter()
                        .filter(|(_, inside)| *inside)
                        .map(|(d, _)| {
                            (d, [index(a + 1, b, c), index(a, b + 1, c), index(a, b, c + 1)][d])
                        })
                    {
                        let normal = -Vector3::ith(d, 1.0);
                        for corner in 0..4 {
                            let mut offset = Vector3::repeat(0.0);
                            offset[d] = 0.5;
                            offset[(d + 1) % 3] = if corner & 1 == 0 { -0.4 } else { 0.4 };
                            offset[(d + 2) % 3] = if corner & 2 == 0 { -0.4 } else { 0.4 };
                            contacts.push(JumpContact {
                                i,
                                j: Some(j),
                                point: bodies[i].pos + offset,
                                normal,
                                kappa_n: 1.0 + rnd(),
                                kappa_t: 0.5,
                                separation: 0.0,
                            });
                        }
                    }
                    // The later neighbours across an edge or a corner.
                    let steps = [-1i64, 0, 1];
                    for (da, db, dc) in steps
                        .iter()
                        .flat_map(|&x| steps.iter().flat_map(move |&y| steps.map(|z| (x, y, z))))
                        .filter(|&(x, y, z)| {
                            diagonals && [x, y, z].iter().filter(|&&t| t != 0).count() > 1
                        })
                    {
                        let at = [a as i64 + da, b as i64 + db, c as i64 + dc];
                        if at.iter().any(|&t| !(0..side as i64).contains(&t)) {
                            continue;
                        }
                        let j = index(at[0] as usize, at[1] as usize, at[2] as usize);
                        if j < i {
                            continue;
                        }
                        let step = Vector3::new(da as f64, db as f64, dc as f64);
                        contacts.push(JumpContact {
                            i,
                            j: Some(j),
                            point: bodies[i].pos + 0.5 * step,
                            normal: -step.normalize(),
                            kappa_n: 1.0 + rnd(),
                            kappa_t: 0.5,
                            separation: 0.0,
                        });
                    }
                }
            }
        }
        (bodies, contacts, rnd)
    }

    /// On a lattice of 6 × 6 × 6 bodies with four contacts between neighbours (a factor
    /// with dense fronts: faer's supernodal Cholesky), the split solve's two sets each
    /// hold part of L, its answer is a dense solve's, and it has the same bits on one
    /// thread or two.
    #[test]
    fn the_split_solve_agrees_with_a_dense_solve_on_one_thread_or_two() {
        let (bodies, contacts, mut rnd) = lattice_island(6, false, 7);
        let qp = assemble(&bodies, &contacts, 0.1);
        let rho: Vec<f64> = (0..qp.m()).map(|_| 1.0 + rnd()).collect();
        let b: Vec<f64> = (0..qp.n()).map(|_| rnd()).collect();
        let one = scalar_solve_on_one_and_two_threads(&qp, &rho, &b, None, |bk| {
            let split = bk.scalar.as_ref().and_then(|sk| sk.split.as_ref()).expect("supernodal");
            let share = split.path_share();
            assert!(share < 0.9, "the longer path holds {share} of L");
            // A top supernode wide enough to be solved by blocks on both threads.
            let widest = split.widest_top();
            assert!(widest >= 128, "the widest top supernode has {widest} columns");
        });
        let k = dense_k(&qp, &rho, &vec![true; qp.m()]);
        let expected = k.cholesky().expect("K is SPD").solve(&DVector::from_vec(b));
        let err = (0..qp.n()).map(|i| (one[i] - expected[i]).abs()).fold(0.0, f64::max);
        assert!(err < 1e-10 * expected.amax(), "difference {err} (scale {})", expected.amax());
    }

    /// On a lattice of 8 × 8 × 8 bodies touching their 26 neighbours (a packed heap), the
    /// factor given the bodies' centres is in the nested dissection's order, which needs
    /// less work than AMD's, and it solves K x = b (residual from K's definition), with
    /// the same bits on one thread or two.
    #[test]
    fn a_packed_island_is_factorised_in_the_dissection_order() {
        let (bodies, contacts, mut rnd) = lattice_island(8, true, 11);
        let qp = assemble(&bodies, &contacts, 0.1);
        let rows = qp.row_blocks().expect("rows of two bodies");
        let rho: Vec<f64> = (0..qp.m()).map(|_| 1.0 + rnd()).collect();
        let b: Vec<f64> = (0..qp.n()).map(|_| rnd()).collect();
        let amd =
            BlockK::new(&qp, rows, 0.0, false, None).expect("ordering").chol.work_per_column();
        let centres: Vec<Vector3<f64>> = bodies.iter().map(|b| b.pos).collect();
        let x = scalar_solve_on_one_and_two_threads(&qp, &rho, &b, Some(&centres), |bk| {
            let work = bk.chol.work_per_column();
            assert!(work < 0.9 * amd, "dissection {work} block products a column, AMD {amd}");
        });
        // K x = H x + Σ_k ρ_k c_k (c_kᵀ x).
        let mut kx = qp.h_mul(&x);
        let cx = qp.c_mul(&x);
        let weighted: Vec<f64> = cx.iter().zip(&rho).map(|(c, r)| c * r).collect();
        let mut ct = vec![0.0; qp.n()];
        qp.ct_mul_into(&weighted, &mut ct);
        kx.iter_mut().zip(&ct).for_each(|(a, c)| *a += c);
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let residual = kx.iter().zip(&b).map(|(a, c)| (a - c).abs()).fold(0.0, f64::max);
        assert!(residual < 1e-9 * scale, "residual {residual} (scale {scale})");
    }

    /// The block factor's H, read from the blocks the assembly summed, is H's compressed
    /// columns summed by blocks, bit for bit (order, diagonal and coupling blocks), also
    /// where a contact's κ is 0 and its pair has no entry of H off the diagonal.
    #[test]
    fn blocks_of_h_from_the_assembly_are_those_of_its_columns() {
        for no_kappa in [None, Some(3)] {
            let (bodies, contacts, _) = random_island(60, no_kappa);
            let qp = assemble(&bodies, &contacts, 0.1);
            assert!(qp.h_blocks().is_some());
            let columns = Qp::new(qp.h_upper().clone(), qp.p.clone(), qp.c().clone(), qp.r.clone());
            assert!(columns.h_blocks().is_none());
            let rows = qp.row_blocks().expect("rows of two bodies");
            let a = BlockK::new(&qp, rows, f64::INFINITY, false, None).expect("ordering");
            let b = BlockK::new(&columns, rows, f64::INFINITY, false, None).expect("ordering");
            assert_eq!(a.pos, b.pos, "κ = 0 on one in {no_kappa:?}: order");
            assert_eq!(a.k_positions, b.k_positions);
            let bits = |m: &[Matrix6<f64>]| -> Vec<u64> {
                m.iter().flat_map(|b| b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()).collect()
            };
            assert_eq!(bits(&a.h_diag), bits(&b.h_diag), "κ = 0 on one in {no_kappa:?}");
            assert_eq!(bits(&a.h_lower), bits(&b.h_lower), "κ = 0 on one in {no_kappa:?}");
            let zero_blocks = b.h_lower.iter().filter(|m| m.iter().all(|v| *v == 0.0)).count();
            assert_eq!(zero_blocks > 0, no_kappa.is_some(), "{zero_blocks} blocks of K without H");
        }
    }
}
