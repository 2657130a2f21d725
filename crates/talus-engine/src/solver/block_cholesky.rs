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

use nalgebra::{Matrix6, Vector6};

/// The symbolic structure and the values of a block Cholesky factor.
#[derive(Debug, Clone)]
pub(crate) struct BlockCholesky {
    /// Block rows below the diagonal of column j: `rows[ptr[j]..ptr[j + 1]]`, ascending.
    ptr: Vec<usize>,
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
}

impl BlockCholesky {
    /// The structure of L from the blocks of K strictly below the diagonal: `lower[j]`
    /// holds the block rows i > j with K_ij ≠ 0.
    pub(crate) fn new(lower: &[Vec<usize>]) -> Self {
        let nb = lower.len();
        let mut cols: Vec<Vec<usize>> = Vec::with_capacity(nb);
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); nb];
        let mut mark = vec![usize::MAX; nb];
        for (j, kj) in lower.iter().enumerate() {
            // struct(L_*j) = struct(K_*j) ∪ struct(L_*c) of the children c, less j.
            let mut s: Vec<usize> = Vec::new();
            mark[j] = j;
            for &i in kj.iter().chain(children[j].iter().flat_map(|&c| cols[c].iter())) {
                debug_assert!(i > j, "block ({i}, {j}) is not below the diagonal");
                if mark[i] != j {
                    mark[i] = j;
                    s.push(i);
                }
            }
            s.sort_unstable();
            if let Some(&parent) = s.first() {
                children[parent].push(j);
            }
            cols.push(s);
        }
        let mut ptr = Vec::with_capacity(nb + 1);
        ptr.push(0);
        let (mut rows, mut col) = (Vec::new(), Vec::new());
        let mut row_lists: Vec<Vec<usize>> = vec![Vec::new(); nb];
        for (j, s) in cols.iter().enumerate() {
            for &i in s {
                row_lists[i].push(rows.len());
                rows.push(i);
                col.push(j);
            }
            ptr.push(rows.len());
        }
        let mut row_ptr = Vec::with_capacity(nb + 1);
        row_ptr.push(0);
        let mut row_pos = Vec::with_capacity(rows.len());
        for r in &row_lists {
            row_pos.extend_from_slice(r);
            row_ptr.push(row_pos.len());
        }
        let n_blocks = rows.len();
        BlockCholesky {
            ptr,
            rows,
            col,
            row_ptr,
            row_pos,
            diag_inv: vec![Matrix6::zeros(); nb],
            blocks: vec![Matrix6::zeros(); n_blocks],
            map: vec![usize::MAX; nb],
        }
    }

    /// Number of block columns.
    pub(crate) fn n_blocks(&self) -> usize {
        self.diag_inv.len()
    }

    /// Block products of the numeric factorisation per block column: Σ_j |L_*j|² / columns
    /// (the average squared count of blocks below the diagonal of a column).
    pub(crate) fn work_per_column(&self) -> f64 {
        let w: usize = self.ptr.windows(2).map(|p| (p[1] - p[0]) * (p[1] - p[0])).sum();
        w as f64 / self.n_blocks().max(1) as f64
    }

    /// Number of blocks of L below the diagonal (K's and the fill's).
    pub(crate) fn n_lower(&self) -> usize {
        self.rows.len()
    }

    /// Position of the block (i, j), i > j, of L; `None` when it is not in the structure.
    pub(crate) fn position(&self, i: usize, j: usize) -> Option<usize> {
        let r = &self.rows[self.ptr[j]..self.ptr[j + 1]];
        r.binary_search(&i).ok().map(|p| self.ptr[j] + p)
    }

    /// Factorise K given its diagonal blocks `diag` (both triangles) and its blocks below
    /// the diagonal at their positions in L (`lower`, zero where L has fill). `false`
    /// when K is not positive definite.
    pub(crate) fn factorize(&mut self, diag: &[Matrix6<f64>], lower: &[Matrix6<f64>]) -> bool {
        assert_eq!(diag.len(), self.n_blocks());
        assert_eq!(lower.len(), self.n_lower());
        self.blocks.copy_from_slice(lower);
        for (j, &dj) in diag.iter().enumerate() {
            for p in self.ptr[j]..self.ptr[j + 1] {
                self.map[self.rows[p]] = p;
            }
            let mut d = dj;
            for &q in &self.row_pos[self.row_ptr[j]..self.row_ptr[j + 1]] {
                // L_jk (column k < j is final); the rows of column k below j update
                // column j.
                let ljk_t = self.blocks[q].transpose();
                d -= self.blocks[q] * ljk_t;
                let k = self.col[q];
                for p in q + 1..self.ptr[k + 1] {
                    let t = self.blocks[p] * ljk_t;
                    let m = self.map[self.rows[p]];
                    self.blocks[m] -= t;
                }
            }
            let Some(chol) = d.cholesky() else { return false };
            let Some(inv) = chol.l().solve_lower_triangular(&Matrix6::identity()) else {
                return false;
            };
            if !inv.iter().all(|v| v.is_finite()) {
                return false;
            }
            let inv_t = inv.transpose();
            for p in self.ptr[j]..self.ptr[j + 1] {
                self.blocks[p] *= inv_t;
            }
            self.diag_inv[j] = inv;
        }
        true
    }

    /// Solve K x = b in place (b in the blocks' order, 6 unknowns per block).
    pub(crate) fn solve_in_place(&self, b: &mut [f64]) {
        assert_eq!(b.len(), 6 * self.n_blocks());
        let get = |b: &[f64], i: usize| Vector6::from_column_slice(&b[6 * i..6 * i + 6]);
        // L y = b.
        for j in 0..self.n_blocks() {
            let y = lower_mul(&self.diag_inv[j], &get(b, j));
            b[6 * j..6 * j + 6].copy_from_slice(y.as_slice());
            for p in self.ptr[j]..self.ptr[j + 1] {
                let i = self.rows[p];
                let t = self.blocks[p] * y;
                for (v, d) in b[6 * i..6 * i + 6].iter_mut().zip(t.iter()) {
                    *v -= d;
                }
            }
        }
        // Lᵀ x = y.
        for j in (0..self.n_blocks()).rev() {
            let mut t = get(b, j);
            for p in self.ptr[j]..self.ptr[j + 1] {
                t -= self.blocks[p].tr_mul(&get(b, self.rows[p]));
            }
            let x = lower_tr_mul(&self.diag_inv[j], &t);
            b[6 * j..6 * j + 6].copy_from_slice(x.as_slice());
        }
    }
}

/// `l * v` for a lower-triangular `l` (a diagonal block's L_jj⁻¹), bit for bit, without
/// the products above the diagonal. nalgebra sums the columns' products in column order; the
/// ones above the diagonal are zeros, added last, which leave a nonzero sum as it is (they
/// are added when the sum is zero, for its sign).
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
    use nalgebra::DMatrix;

    /// A random SPD matrix on a block pattern (a path with chords, so that the factor has
    /// fill), solved by the block factor and by a dense Cholesky.
    #[test]
    fn agrees_with_a_dense_cholesky_and_has_fill() {
        let nb = 12;
        let mut s = 12345u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let mut pairs: Vec<(usize, usize)> = (1..nb).map(|i| (i, i - 1)).collect();
        pairs.extend([(5, 0), (9, 2), (11, 4), (7, 3)]);
        let n = 6 * nb;
        let mut k = DMatrix::<f64>::zeros(n, n);
        for &(i, j) in &pairs {
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
                    let v = if a == b { 40.0 + rnd() } else { rnd() };
                    k[(6 * i + a, 6 * i + b)] = v;
                    k[(6 * i + b, 6 * i + a)] = v;
                }
            }
        }
        let mut lower: Vec<Vec<usize>> = vec![Vec::new(); nb];
        for &(i, j) in &pairs {
            lower[j].push(i);
        }
        let mut f = BlockCholesky::new(&lower);
        assert!(f.n_lower() > pairs.len(), "the chords should cause fill");
        let block = |i: usize, j: usize| Matrix6::from_fn(|a, b| k[(6 * i + a, 6 * j + b)]);
        let diag: Vec<Matrix6<f64>> = (0..nb).map(|i| block(i, i)).collect();
        let mut low = vec![Matrix6::zeros(); f.n_lower()];
        for &(i, j) in &pairs {
            low[f.position(i, j).unwrap()] = block(i, j);
        }
        assert!(f.factorize(&diag, &low));
        let b: Vec<f64> = (0..n).map(|_| rnd()).collect();
        let mut x = b.clone();
        f.solve_in_place(&mut x);
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
        let mut s = 99u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let bits = |v: &Vector6<f64>| v.iter().map(|a| a.to_bits()).collect::<Vec<u64>>();
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

    /// An indefinite matrix is refused.
    #[test]
    fn refuses_an_indefinite_matrix() {
        let mut f = BlockCholesky::new(&[vec![1], vec![]]);
        let diag = [Matrix6::identity(), Matrix6::identity()];
        let low = [Matrix6::identity() * 2.0];
        assert!(!f.factorize(&diag, &low));
    }
}
