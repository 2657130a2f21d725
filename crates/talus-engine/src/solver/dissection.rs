//! Geometric nested dissection of an island's bodies: a fill-reducing order for the
//! factor of K when the bodies fill a volume (a packed heap), where AMD's order leaves large
//! dense fronts.
//!
//! The bodies are cut in two halves at the median of their centres along the longest side
//! of their bounding box; the bodies of one half that touch the other (the smaller of the
//! two halves' borders) are the cut. Each half is ordered the same way, first, and the cut
//! last, so that no half's column of L reaches the other half (George 1973; the geometric
//! version of Miller, Teng, Thurston and Vavasis 1998). Pieces of [`LEAF`] bodies or fewer,
//! and every cut, are ordered by AMD on their own bodies.
//!
//! Measured on the packed heap of 1000 blocks (session 62, docs/benchmarks.md): L has
//! 64,748 blocks below the diagonal and 5464 block products per column, against 73,648 and
//! 8584 in AMD's order; its first three steps took 0.88 of AMD's solve time on one thread
//! and 0.83 on two (six interleaved rounds each), and the first step of a packed heap of
//! 3000 blocks 6.5 s against 8.3 s. On the thesis heap N = 3000 (one to a few blocks deep,
//! a nearly planar contact graph) it is the other way, 43,000–45,000 blocks against AMD's
//! 19,500–20,200: [`crate::solver::warm`] tries it only where AMD's factor would go to
//! faer's supernodal Cholesky, and keeps whichever order needs less work.

use crate::solver::block_cholesky::Columns;
use crate::solver::warm::body_order;
use nalgebra::Vector3;

/// Pieces of at most this many bodies are ordered by AMD (16, 32 and 64 gave factors within
/// 1 % of each other on the packed heap, 128 2 % larger).
const LEAF: usize = 64;

/// The nested-dissection order of the bodies whose contact graph is `adj` (sorted
/// adjacency lists, no self loops) and whose centres are `centres`: order[new] = old;
/// `None` when AMD fails on a piece.
pub(crate) fn dissection_order(adj: &Columns, centres: &[Vector3<f64>]) -> Option<Vec<usize>> {
    let nb = adj.len();
    assert_eq!(centres.len(), nb, "a centre per body");
    let mut d = Dissection {
        adj,
        centres,
        mark: vec![0; nb],
        stamp: 0,
        local: vec![usize::MAX; nb],
        order: Vec::with_capacity(nb),
    };
    d.piece((0..nb).collect())?;
    debug_assert_eq!(d.order.len(), nb);
    Some(d.order)
}

/// The state of [`dissection_order`].
struct Dissection<'a> {
    adj: &'a Columns,
    centres: &'a [Vector3<f64>],
    /// The bodies of the set last [`Self::enter`]ed: mark == stamp.
    mark: Vec<u32>,
    stamp: u32,
    /// A body's place in the piece being ordered by AMD (usize::MAX elsewhere).
    local: Vec<usize>,
    /// The order so far.
    order: Vec<usize>,
}

impl Dissection<'_> {
    /// Mark `set` (and only it) as the current set; returns its stamp.
    fn enter(&mut self, set: &[usize]) -> u32 {
        self.stamp += 1;
        for &v in set {
            self.mark[v] = self.stamp;
        }
        self.stamp
    }

    /// The bodies of `side` with a neighbour in `other`.
    fn border(&mut self, side: &[usize], other: &[usize]) -> Vec<bool> {
        let stamp = self.enter(other);
        side.iter().map(|&v| self.adj.col(v).iter().any(|&w| self.mark[w] == stamp)).collect()
    }

    /// Append `set` in AMD's order on the graph it induces.
    fn by_amd(&mut self, set: &[usize]) -> Option<()> {
        if set.len() <= 1 {
            self.order.extend_from_slice(set);
            return Some(());
        }
        for (i, &v) in set.iter().enumerate() {
            self.local[v] = i;
        }
        let mut sub = Columns { ptr: Vec::with_capacity(set.len() + 1), rows: Vec::new() };
        sub.ptr.push(0);
        for &v in set {
            // Ascending old indices need not be ascending local ones.
            let first = sub.rows.len();
            sub.rows.extend(
                self.adj.col(v).iter().map(|&w| self.local[w]).filter(|&l| l != usize::MAX),
            );
            sub.rows[first..].sort_unstable();
            sub.ptr.push(sub.rows.len());
        }
        let order = body_order(&sub);
        for &v in set {
            self.local[v] = usize::MAX;
        }
        self.order.extend(order?.iter().map(|&i| set[i]));
        Some(())
    }

    /// Append `set` in nested-dissection order.
    fn piece(&mut self, mut set: Vec<usize>) -> Option<()> {
        if set.len() <= LEAF {
            return self.by_amd(&set);
        }
        let c = self.centres;
        let (mut lo, mut hi) = (c[set[0]], c[set[0]]);
        for &v in &set {
            lo = lo.inf(&c[v]);
            hi = hi.sup(&c[v]);
        }
        let axis = (hi - lo).imax();
        set.sort_unstable_by(|&u, &v| c[u][axis].total_cmp(&c[v][axis]).then(u.cmp(&v)));
        let (a, b) = set.split_at(set.len() / 2);
        let (border_a, border_b) = (self.border(a, b), self.border(b, a));
        let count = |border: &[bool]| border.iter().filter(|&&x| x).count();
        let (mut left, mut right, mut cut) = (Vec::new(), Vec::new(), Vec::new());
        if count(&border_a) <= count(&border_b) {
            for (&v, &x) in a.iter().zip(&border_a) {
                if x { cut.push(v) } else { left.push(v) }
            }
            right.extend_from_slice(b);
        } else {
            left.extend_from_slice(a);
            for (&v, &x) in b.iter().zip(&border_b) {
                if x { cut.push(v) } else { right.push(v) }
            }
        }
        self.piece(left)?;
        self.piece(right)?;
        self.by_amd(&cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::block_cholesky::BlockCholesky;
    use crate::solver::warm::lower_in_order;

    /// The bodies of a k × k × k lattice touching their 26 neighbours (a packed heap's
    /// contact graph), and their centres.
    fn lattice(k: usize) -> (Columns, Vec<Vector3<f64>>) {
        let id = |x: usize, y: usize, z: usize| (z * k + y) * k + x;
        let mut adj = Columns { ptr: vec![0], rows: Vec::new() };
        let mut centres = Vec::new();
        for z in 0..k {
            for y in 0..k {
                for x in 0..k {
                    let mut list = Vec::new();
                    for dz in -1i64..=1 {
                        for dy in -1i64..=1 {
                            for dx in -1i64..=1 {
                                let (nx, ny, nz) = (x as i64 + dx, y as i64 + dy, z as i64 + dz);
                                let inside = |t: i64| (0..k as i64).contains(&t);
                                if (dx, dy, dz) != (0, 0, 0)
                                    && inside(nx)
                                    && inside(ny)
                                    && inside(nz)
                                {
                                    list.push(id(nx as usize, ny as usize, nz as usize));
                                }
                            }
                        }
                    }
                    list.sort_unstable();
                    adj.rows.extend(list);
                    adj.ptr.push(adj.rows.len());
                    // Slightly uneven, as a heap's centres are, and longest along x.
                    let jitter = 0.01 * ((x * 7 + y * 13 + z * 29) % 11) as f64;
                    centres.push(Vector3::new(
                        1.2 * x as f64 + jitter,
                        y as f64,
                        z as f64 - jitter,
                    ));
                }
            }
        }
        (adj, centres)
    }

    /// L's structure in the order `order` (order[new] = old).
    fn factor_in(adj: &Columns, order: &[usize]) -> BlockCholesky {
        BlockCholesky::new(&lower_in_order(adj, order).1, false)
    }

    /// Every body once; on a 12³ lattice of bodies touching their 26 neighbours the
    /// factor in this order has fewer blocks and less work than in AMD's, and its last
    /// bodies (the top cut) are a plane of the lattice, which leaves the rest in two parts.
    #[test]
    fn a_packed_lattice_is_cut_by_planes_and_fills_less_than_amd() {
        let k = 12;
        let (adj, centres) = lattice(k);
        let order = dissection_order(&adj, &centres).expect("an order");
        let mut seen = vec![false; order.len()];
        order.iter().for_each(|&v| seen[v] = true);
        assert!(seen.iter().all(|&s| s), "a permutation");
        let by_amd = body_order(&adj).expect("AMD");
        let (nd, am) = (factor_in(&adj, &order), factor_in(&adj, &by_amd));
        assert!(
            nd.work_per_column() < 0.8 * am.work_per_column() && nd.n_lower() < am.n_lower(),
            "dissection {} blocks, {} a column; AMD {} and {}",
            nd.n_lower(),
            nd.work_per_column(),
            am.n_lower(),
            am.work_per_column()
        );
        // The top cut: the k² bodies of one x (the longest side), which touch the bodies on
        // one side of it; no other body touches the other side.
        let x = |v: usize| v % k;
        let top = &order[order.len() - k * k..];
        let x0 = x(top[0]);
        assert!(top.iter().all(|&v| x(v) == x0), "the top cut is a plane");
        for v in (0..order.len()).filter(|&v| x(v) != x0) {
            assert!(adj.col(v).iter().all(|&w| x(w) == x0 || (x(w) < x0) == (x(v) < x0)));
        }
    }

    /// Disconnected and tiny graphs are ordered too (a piece under the leaf size goes to
    /// AMD whole).
    #[test]
    fn small_and_disconnected_graphs_are_permuted() {
        let (adj, centres) = lattice(2);
        let order = dissection_order(&adj, &centres).expect("order");
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        // Two lattices side by side, not touching.
        let (a, ca) = lattice(5);
        let n = a.len();
        let mut adj = Columns { ptr: a.ptr.clone(), rows: a.rows.clone() };
        for j in 0..n {
            adj.rows.extend(a.col(j).iter().map(|&i| i + n));
            adj.ptr.push(adj.rows.len());
        }
        let centres: Vec<_> =
            ca.iter().copied().chain(ca.iter().map(|c| c + Vector3::new(10.0, 0.0, 0.0))).collect();
        let order = dissection_order(&adj, &centres).expect("order");
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..2 * n).collect::<Vec<_>>());
    }
}
