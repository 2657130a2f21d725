//! M3C2 (Lague, Brodu & Leroux 2013), with py4dgeo's definitions.
//!
//! For each core point `c`:
//! 1. Normal: the eigenvector of the smallest eigenvalue of the covariance of the
//!    pre-event points within each normal radius of `c`; with several radii, the one
//!    whose fit is the most planar, `(l2 - l1) / l3` with `l1 <= l2 <= l3`. The sign makes
//!    `n . orientation >= 0`.
//! 2. Projection cylinder: axis `c + t n`, radius `r`, `|t| < L` (`L` = `max_depth`).
//!    Points are found with `N = ceil(L / r)` ball searches (kiddo k-d tree) around the
//!    slab centres `c + (-L + (2i + 1) L / N) n`, radius `sqrt(r^2 + (L/N)^2)`; a point
//!    belongs to the slab its `t` falls in, so none is counted twice.
//! 3. Each survey's points in the cylinder are reduced to their position along the axis,
//!    `t = n . (p - c)`: mean and sample standard deviation (or median and interquartile
//!    range), count `n_k`.
//! 4. `distance = t2 - t1` (post minus pre, along `n`);
//!    `LoD95 = 1.96 (sqrt(s1^2 / n1 + s2^2 / n2) + registration_error)`;
//!    significant when `|distance| > LoD95`.
//!
//! A core point whose normal is undefined (fewer than 3 points, or no planar fit at any
//! radius) or whose cylinder holds fewer than `min_points` points of a survey is a row
//! with a NaN distance and a flag, never an error. Core points are processed in
//! parallel (rayon); the output keeps their order.

use crate::config::{M3c2Config, M3c2Statistic};
use kiddo::{ImmutableKdTree, SquaredEuclidean};
use nalgebra::{Matrix3, Vector3};
use rayon::prelude::*;

/// The k-d tree used for every search.
pub type Tree = ImmutableKdTree<f64, 3>;

/// Flag bit: the normal could not be computed.
pub const FLAG_NO_NORMAL: u8 = 1;
/// Flag bit: too few pre-event points in the cylinder.
pub const FLAG_FEW_PRE: u8 = 2;
/// Flag bit: too few post-event points in the cylinder.
pub const FLAG_FEW_POST: u8 = 4;

/// A point cloud with its k-d tree.
pub struct Cloud {
    pub points: Vec<[f64; 3]>,
    pub tree: Tree,
}

impl Cloud {
    /// Build the k-d tree of `points` (at least one point).
    pub fn new(points: Vec<[f64; 3]>) -> Cloud {
        let tree = Tree::new_from_slice(&points).expect("k-d tree construction from finite points");
        Cloud { points, tree }
    }

    /// Visit every point within `radius` of `q` (boundary included).
    #[inline]
    pub fn within(&self, q: &[f64; 3], radius: f64, mut f: impl FnMut(&[f64; 3])) {
        self.tree
            .query(q)
            .within::<SquaredEuclidean<f64>>(radius * radius)
            .unsorted()
            .with_points()
            .visit(|r| f(&r.point));
    }
}

/// One M3C2 result row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct M3c2Row {
    pub core: [f64; 3],
    pub normal: [f64; 3],
    pub distance: f64,
    pub uncertainty: f64,
    pub significant: bool,
    pub std_dev1: f64,
    pub std_dev2: f64,
    pub count1: u32,
    pub count2: u32,
    pub flag: u8,
}

/// PCA normal at `c` from `cloud` over `radii` (most planar fit), oriented along
/// `orientation`; `None` when no radius gives a planar fit.
pub fn normal_at(
    cloud: &Cloud,
    c: &[f64; 3],
    radii: &[f64],
    orientation: &[f64; 3],
) -> Option<[f64; 3]> {
    let mut best = 0.0;
    let mut normal = None;
    for &r in radii {
        let (mut n, mut s, mut ss) = (0usize, Vector3::<f64>::zeros(), Matrix3::<f64>::zeros());
        cloud.within(c, r, |p| {
            let d = Vector3::new(p[0] - c[0], p[1] - c[1], p[2] - c[2]);
            n += 1;
            s += d;
            ss += d * d.transpose();
        });
        if n < 3 {
            continue;
        }
        let m = s / n as f64;
        let cov = (ss - m * s.transpose()) / (n - 1) as f64;
        let eig = cov.symmetric_eigen();
        let mut order = [0usize, 1, 2];
        order.sort_by(|&a, &b| eig.eigenvalues[a].total_cmp(&eig.eigenvalues[b]));
        let l = order.map(|k| eig.eigenvalues[k]);
        let planarity = (l[1] - l[0]) / l[2];
        if planarity > best {
            best = planarity;
            let v = eig.eigenvectors.column(order[0]);
            let dot = v[0] * orientation[0] + v[1] * orientation[1] + v[2] * orientation[2];
            let sign = if dot < 0.0 { -1.0 } else { 1.0 };
            normal = Some([sign * v[0], sign * v[1], sign * v[2]]);
        }
    }
    normal
}

/// Position and spread of one survey's points along the axis.
#[derive(Debug, Clone, Copy)]
struct AxisStats {
    n: u32,
    centre: f64,
    spread: f64,
}

/// Scratch buffers reused per thread.
#[derive(Default)]
struct Scratch {
    ts: Vec<f64>,
}

fn cylinder_stats(
    cloud: &Cloud,
    c: &[f64; 3],
    n: &[f64; 3],
    radius: f64,
    half_length: f64,
    stat: M3c2Statistic,
    scratch: &mut Scratch,
) -> AxisStats {
    let slabs = (half_length / radius).ceil().max(1.0);
    let ns = slabs as usize;
    let h = half_length / slabs; // half-length of a slab
    let ball = (radius * radius + h * h).sqrt();
    let r2 = radius * radius;
    let (mut k, mut shift, mut s1, mut s2) = (0u32, 0.0f64, 0.0f64, 0.0f64);
    scratch.ts.clear();
    for i in 0..ns {
        let off = -half_length + (2 * i + 1) as f64 * h;
        let q = [c[0] + off * n[0], c[1] + off * n[1], c[2] + off * n[2]];
        cloud.within(&q, ball, |p| {
            let d = [p[0] - c[0], p[1] - c[1], p[2] - c[2]];
            let t = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
            if t.abs() >= half_length {
                return;
            }
            let slab = (((t + half_length) / (2.0 * h)).floor() as usize).min(ns - 1);
            if slab != i {
                return;
            }
            let e = [d[0] - t * n[0], d[1] - t * n[1], d[2] - t * n[2]];
            if e[0] * e[0] + e[1] * e[1] + e[2] * e[2] > r2 {
                return;
            }
            match stat {
                M3c2Statistic::Mean => {
                    if k == 0 {
                        shift = t;
                    }
                    let u = t - shift;
                    s1 += u;
                    s2 += u * u;
                }
                M3c2Statistic::Median => scratch.ts.push(t),
            }
            k += 1;
        });
    }
    match stat {
        M3c2Statistic::Mean => {
            let kf = k as f64;
            let mean = s1 / kf;
            let var = if k > 1 { ((s2 - s1 * mean) / (kf - 1.0)).max(0.0) } else { f64::NAN };
            AxisStats { n: k, centre: shift + mean, spread: var.sqrt() }
        }
        M3c2Statistic::Median => {
            let (med, iqr) = median_iqr(&mut scratch.ts);
            AxisStats { n: k, centre: med, spread: iqr }
        }
    }
}

/// Median and interquartile range with py4dgeo's quantile rule: the element at position
/// `n/4`, `n/2`, `3n/4` of the sorted values, averaged with its predecessor when `n` is
/// divisible by 4 (quartiles) or 2 (median).
pub fn median_iqr(v: &mut [f64]) -> (f64, f64) {
    let n = v.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    v.sort_unstable_by(f64::total_cmp);
    let at = |pos: usize, avg: bool| if avg { 0.5 * (v[pos] + v[pos - 1]) } else { v[pos] };
    let q1 = at(n / 4, n.is_multiple_of(4));
    let q2 = at(n / 2, n.is_multiple_of(2));
    let q3 = at(3 * n / 4, n.is_multiple_of(4));
    (q2, q3 - q1)
}

/// M3C2 at every core point. `pre` is cloud 1 (also the cloud the normals come from),
/// `post` cloud 2.
pub fn m3c2(pre: &Cloud, post: &Cloud, cores: &[[f64; 3]], cfg: &M3c2Config) -> Vec<M3c2Row> {
    cores
        .par_iter()
        .map_init(Scratch::default, |scratch, c| m3c2_one(pre, post, c, cfg, scratch))
        .collect()
}

fn m3c2_one(
    pre: &Cloud,
    post: &Cloud,
    c: &[f64; 3],
    cfg: &M3c2Config,
    scratch: &mut Scratch,
) -> M3c2Row {
    let mut row = M3c2Row {
        core: *c,
        normal: [f64::NAN; 3],
        distance: f64::NAN,
        uncertainty: f64::NAN,
        significant: false,
        std_dev1: f64::NAN,
        std_dev2: f64::NAN,
        count1: 0,
        count2: 0,
        flag: 0,
    };
    let Some(n) = normal_at(pre, c, &cfg.normal_radii, &cfg.orientation) else {
        row.flag = FLAG_NO_NORMAL;
        return row;
    };
    row.normal = n;
    let a = cylinder_stats(pre, c, &n, cfg.cylinder_radius, cfg.max_depth, cfg.statistic, scratch);
    let b = cylinder_stats(post, c, &n, cfg.cylinder_radius, cfg.max_depth, cfg.statistic, scratch);
    row.count1 = a.n;
    row.count2 = b.n;
    if a.n < cfg.min_points {
        row.flag |= FLAG_FEW_PRE;
    }
    if b.n < cfg.min_points {
        row.flag |= FLAG_FEW_POST;
    }
    if a.n > 1 {
        row.std_dev1 = a.spread;
    }
    if b.n > 1 {
        row.std_dev2 = b.spread;
    }
    if row.flag != 0 {
        return row;
    }
    row.distance = b.centre - a.centre;
    row.uncertainty = 1.96
        * ((a.spread * a.spread / a.n as f64 + b.spread * b.spread / b.n as f64).sqrt()
            + cfg.registration_error);
    row.significant = row.distance.abs() > row.uncertainty;
    row
}

/// Thin points to one per cube of side `spacing`: the first point (in input order) of
/// each occupied cube, returned in input order.
pub fn subsample(points: &[[f64; 3]], spacing: f64) -> Vec<[f64; 3]> {
    let mut keyed: Vec<([i64; 3], usize)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| ([0, 1, 2].map(|k| (p[k] / spacing).floor() as i64), i))
        .collect();
    keyed.sort_unstable();
    let mut keep: Vec<usize> = Vec::new();
    let mut last: Option<[i64; 3]> = None;
    for (k, i) in keyed {
        if last != Some(k) {
            keep.push(i);
            last = Some(k);
        }
    }
    keep.sort_unstable();
    keep.into_iter().map(|i| points[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_follow_py4dgeo() {
        // n = 8: q1 = (v1+v2)/2, q2 = (v3+v4)/2, q3 = (v5+v6)/2
        let mut v = vec![7.0, 1.0, 3.0, 2.0, 6.0, 4.0, 5.0, 0.0];
        assert_eq!(median_iqr(&mut v), (3.5, 4.0));
        // n = 5: q1 = v1, q2 = v2, q3 = v3
        let mut v = vec![4.0, 3.0, 2.0, 1.0, 0.0];
        assert_eq!(median_iqr(&mut v), (2.0, 2.0));
        let mut e: Vec<f64> = vec![];
        assert!(median_iqr(&mut e).0.is_nan());
    }

    #[test]
    fn subsample_keeps_first_per_cube() {
        let p = [[0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [1.5, 0.1, 0.1], [0.3, 0.1, 0.1]];
        assert_eq!(subsample(&p, 1.0), vec![[0.1, 0.1, 0.1], [1.5, 0.1, 0.1]]);
    }
}
