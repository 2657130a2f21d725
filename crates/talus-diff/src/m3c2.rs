//! M3C2 (Lague, Brodu & Leroux 2013), with py4dgeo's definitions.
//!
//! For each core point `c`:
//! 1. Normal: the eigenvector of the smallest eigenvalue of the covariance of the
//!    pre-event points within each normal radius of `c`; with several radii, the one
//!    whose fit is the most planar, `(l2 - l1) / l3` with `l1 <= l2 <= l3`. The sign makes
//!    `n . orientation >= 0`.
//! 2. Projection cylinder: axis `c + t n`, radius `r`, `|t| < L` (`L` = `max_depth`).
//!    Points are found in vertical columns (a grid of about four points per column, each
//!    column sorted by z): for each column the cylinder's bounding box covers, the
//!    z-interval where the cylinder widened by the column's half-diagonal meets the
//!    column's centre line (a quadratic for the radius, a linear bound for `t`), found
//!    by binary search, then the exact test `|t| < L`, `|p - c - t n| <= r`. The normal's
//!    ball search works alike. Every point is tested once; the order of the sums is
//!    column by column, by z within a column.
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
use kiddo::ImmutableKdTree;
use nalgebra::{Matrix3, Vector3};
use rayon::prelude::*;
use std::sync::OnceLock;

/// The k-d tree used for every search.
pub type Tree = ImmutableKdTree<f64, 3>;

/// Flag bit: the normal could not be computed.
pub const FLAG_NO_NORMAL: u8 = 1;
/// Flag bit: too few pre-event points in the cylinder.
pub const FLAG_FEW_PRE: u8 = 2;
/// Flag bit: too few post-event points in the cylinder.
pub const FLAG_FEW_POST: u8 = 4;

/// A point cloud with its search structures: vertical columns for the ball and cylinder
/// searches of M3C2, and a k-d tree (built on first use) for nearest neighbours.
pub struct Cloud {
    pub points: Vec<[f64; 3]>,
    columns: Columns,
    tree: OnceLock<Tree>,
}

impl Cloud {
    /// Index `points` (at least one point, finite coordinates).
    pub fn new(points: Vec<[f64; 3]>) -> Cloud {
        let columns = Columns::new(&points);
        Cloud { points, columns, tree: OnceLock::new() }
    }

    /// The k-d tree of the points (item = index in `points`), built on first use.
    pub fn tree(&self) -> &Tree {
        self.tree.get_or_init(|| {
            Tree::new_from_slice(&self.points).expect("k-d tree construction from finite points")
        })
    }

    /// Visit every point within `radius` of `q` (boundary included).
    #[inline]
    pub fn within(&self, q: &[f64; 3], radius: f64, f: impl FnMut(&[f64; 3])) {
        self.columns.within(q, radius, f);
    }

    /// Visit every point `p` of the cylinder of axis `c + t n` (`n` a unit vector),
    /// radius `radius` and half-length `half_length`: `|t| < half_length` and distance to
    /// the axis `<= radius`, with `t = n . (p - c)`; `f` gets the point and its `t`.
    #[inline]
    pub fn within_cylinder(
        &self,
        c: &[f64; 3],
        n: &[f64; 3],
        radius: f64,
        half_length: f64,
        f: impl FnMut(&[f64; 3], f64),
    ) {
        self.columns.cylinder(c, n, radius, half_length, f);
    }
}

/// The points binned into the vertical columns of a square grid, each column sorted by
/// z: a search visits the columns its shape's bounding box covers, and in each only the
/// z-range where the shape can meet the column (two binary searches), then tests the
/// points exactly. The cell side aims at about four points per column.
struct Columns {
    x0: f64,
    y0: f64,
    cell: f64,
    nx: usize,
    ny: usize,
    /// Start of each column in `pts` (`nx * ny + 1` entries).
    start: Vec<u32>,
    /// The points, column by column (row-major), by increasing z within a column.
    pts: Vec<[f64; 3]>,
}

impl Columns {
    fn new(points: &[[f64; 3]]) -> Columns {
        assert!(points.len() < u32::MAX as usize, "at most 2^32 - 1 points per cloud");
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for p in points {
            for k in 0..2 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        let n = points.len().max(1) as f64;
        let (w, h) = ((hi[0] - lo[0]).max(0.0), (hi[1] - lo[1]).max(0.0));
        // ~4 points per column over the bounding box, at most ~n columns.
        let mut cell = (4.0 * (w * h).max(f64::MIN_POSITIVE) / n).sqrt();
        if !(cell.is_finite() && cell > 0.0) {
            cell = 1.0;
        }
        let cell = cell.max((w.max(h) / 65_536.0).max(1e-6));
        let nx = (w / cell).floor() as usize + 1;
        let ny = (h / cell).floor() as usize + 1;
        let col = |p: &[f64; 3]| {
            let c = (((p[0] - lo[0]) / cell) as usize).min(nx - 1);
            let r = (((p[1] - lo[1]) / cell) as usize).min(ny - 1);
            r * nx + c
        };
        let keys: Vec<u32> = points.par_iter().map(|p| col(p) as u32).collect();
        let mut start = vec![0u32; nx * ny + 1];
        for &k in &keys {
            start[k as usize + 1] += 1;
        }
        for i in 0..nx * ny {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut pts = vec![[0.0; 3]; points.len()];
        for (p, &k) in points.iter().zip(&keys) {
            pts[fill[k as usize] as usize] = *p;
            fill[k as usize] += 1;
        }
        // Sort each column by z (stable: ties keep input order).
        let mut slices: Vec<&mut [[f64; 3]]> = Vec::with_capacity(nx * ny);
        let mut rest = pts.as_mut_slice();
        for i in 0..nx * ny {
            let (head, tail) = rest.split_at_mut((start[i + 1] - start[i]) as usize);
            if head.len() > 1 {
                slices.push(head);
            }
            rest = tail;
        }
        slices.par_iter_mut().for_each(|s| s.sort_by(|a, b| a[2].total_cmp(&b[2])));
        drop(slices);
        Columns { x0: lo[0], y0: lo[1], cell, nx, ny, start, pts }
    }

    /// Row-major index of the column holding `p` (clamped to the grid).
    fn key(&self, p: &[f64; 3]) -> usize {
        let c = ((p[0] - self.x0) / self.cell).floor().clamp(0.0, (self.nx - 1) as f64) as usize;
        let r = ((p[1] - self.y0) / self.cell).floor().clamp(0.0, (self.ny - 1) as f64) as usize;
        r * self.nx + c
    }

    /// Column index range `[a, b]` (inclusive, clamped) covering `[v - e, v + e]` on an
    /// axis with origin `o` and `n` columns; `None` when outside.
    #[inline]
    fn span(&self, v: f64, e: f64, o: f64, n: usize) -> Option<(usize, usize)> {
        let a = ((v - e - o) / self.cell).floor();
        let b = ((v + e - o) / self.cell).floor();
        if b < 0.0 || a >= n as f64 || a.is_nan() || b.is_nan() {
            return None;
        }
        Some((a.max(0.0) as usize, (b as usize).min(n - 1)))
    }

    /// The points of column `(r, c)` with `zlo <= z <= zhi`.
    #[inline]
    fn z_range(&self, r: usize, c: usize, zlo: f64, zhi: f64) -> &[[f64; 3]] {
        let i = r * self.nx + c;
        let col = &self.pts[self.start[i] as usize..self.start[i + 1] as usize];
        let a = col.partition_point(|p| p[2] < zlo);
        let b = a + col[a..].partition_point(|p| p[2] <= zhi);
        &col[a..b]
    }

    fn within(&self, q: &[f64; 3], radius: f64, mut f: impl FnMut(&[f64; 3])) {
        let r2 = radius * radius;
        let Some((c0, c1)) = self.span(q[0], radius, self.x0, self.nx) else { return };
        let Some((r0, r1)) = self.span(q[1], radius, self.y0, self.ny) else { return };
        for r in r0..=r1 {
            let ya = self.y0 + r as f64 * self.cell;
            let dy = (ya - q[1]).max(q[1] - (ya + self.cell)).max(0.0);
            for c in c0..=c1 {
                let xa = self.x0 + c as f64 * self.cell;
                let dx = (xa - q[0]).max(q[0] - (xa + self.cell)).max(0.0);
                let rest = r2 - dx * dx - dy * dy;
                if rest < 0.0 {
                    continue;
                }
                // A margin so that rounding never drops a boundary point; the exact test
                // below decides.
                let hz = rest.sqrt() * (1.0 + 1e-12) + 1e-12 * radius;
                for p in self.z_range(r, c, q[2] - hz, q[2] + hz) {
                    let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
                    if d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= r2 {
                        f(p);
                    }
                }
            }
        }
    }

    fn cylinder(
        &self,
        c: &[f64; 3],
        n: &[f64; 3],
        radius: f64,
        half_length: f64,
        mut f: impl FnMut(&[f64; 3], f64),
    ) {
        let r2 = radius * radius;
        // Bounding box of the cylinder.
        let ext =
            |k: usize| half_length * n[k].abs() + radius * (1.0 - n[k] * n[k]).max(0.0).sqrt();
        let margin = 1e-9 * (radius + half_length);
        let Some((c0, c1)) = self.span(c[0], ext(0) + margin, self.x0, self.nx) else { return };
        let Some((r0, r1)) = self.span(c[1], ext(1) + margin, self.y0, self.ny) else { return };
        // For the vertical line through a column's centre, the z-interval within
        // `radius + delta` of the axis and with |t| < half_length + delta, delta the
        // column's half-diagonal: every point of the column in the cylinder lies in it
        // (distance to the axis and t are 1-Lipschitz in the horizontal offset).
        let delta = self.cell * std::f64::consts::FRAC_1_SQRT_2;
        let big_r = radius + delta + margin;
        let big_l = half_length + delta + margin;
        let qa = 1.0 - n[2] * n[2];
        for r in r0..=r1 {
            let b = self.y0 + (r as f64 + 0.5) * self.cell - c[1];
            for col in c0..=c1 {
                let a = self.x0 + (col as f64 + 0.5) * self.cell - c[0];
                let k = n[0] * a + n[1] * b;
                // Radius: qa w^2 - 2 n_z k w + (a^2 + b^2 - k^2 - R^2) <= 0, w = z - c_z.
                let qc = a * a + b * b - k * k - big_r * big_r;
                let (mut wlo, mut whi) = if qa > 1e-12 {
                    let qb = n[2] * k;
                    let disc = qb * qb - qa * qc;
                    if disc < 0.0 {
                        continue;
                    }
                    let sq = disc.sqrt();
                    ((qb - sq) / qa, (qb + sq) / qa)
                } else if qc <= 0.0 {
                    (f64::NEG_INFINITY, f64::INFINITY)
                } else {
                    continue;
                };
                // Length: |k + n_z w| < L'.
                if n[2].abs() > 1e-12 {
                    let (u, v) = ((-big_l - k) / n[2], (big_l - k) / n[2]);
                    wlo = wlo.max(u.min(v));
                    whi = whi.min(u.max(v));
                } else if k.abs() >= big_l {
                    continue;
                }
                if wlo > whi {
                    continue;
                }
                let pad = margin + 1e-12 * (wlo.abs().max(whi.abs()));
                for p in self.z_range(r, col, c[2] + wlo - pad, c[2] + whi + pad) {
                    let d = [p[0] - c[0], p[1] - c[1], p[2] - c[2]];
                    let t = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
                    if t.abs() >= half_length {
                        continue;
                    }
                    let e = [d[0] - t * n[0], d[1] - t * n[1], d[2] - t * n[2]];
                    if e[0] * e[0] + e[1] * e[1] + e[2] * e[2] <= r2 {
                        f(p, t);
                    }
                }
            }
        }
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
        // Sums of d and of the six distinct products d_i d_j, d = p - c.
        let (mut n, mut s, mut m) = (0usize, [0.0f64; 3], [0.0f64; 6]);
        cloud.within(c, r, |p| {
            let d = [p[0] - c[0], p[1] - c[1], p[2] - c[2]];
            n += 1;
            s[0] += d[0];
            s[1] += d[1];
            s[2] += d[2];
            m[0] += d[0] * d[0];
            m[1] += d[0] * d[1];
            m[2] += d[0] * d[2];
            m[3] += d[1] * d[1];
            m[4] += d[1] * d[2];
            m[5] += d[2] * d[2];
        });
        if n < 3 {
            continue;
        }
        let s = Vector3::from(s);
        let ss = Matrix3::new(m[0], m[1], m[2], m[1], m[3], m[4], m[2], m[4], m[5]);
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
    let (mut k, mut shift, mut s1, mut s2) = (0u32, 0.0f64, 0.0f64, 0.0f64);
    scratch.ts.clear();
    cloud.within_cylinder(c, n, radius, half_length, |_, t| {
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
    // Visit the core points in the order of the pre-event cloud's columns (row-major),
    // so that consecutive searches touch the same memory; rows are put back in input
    // order (each row depends on its core point only).
    let mut order: Vec<(usize, u32)> =
        cores.par_iter().enumerate().map(|(i, c)| (pre.columns.key(c), i as u32)).collect();
    order.par_sort_unstable();
    let rows: Vec<M3c2Row> = order
        .par_iter()
        .map_init(Scratch::default, |scratch, &(_, i)| {
            m3c2_one(pre, post, &cores[i as usize], cfg, scratch)
        })
        .collect();
    let mut out = rows.clone();
    for (row, &(_, i)) in rows.into_iter().zip(&order) {
        out[i as usize] = row;
    }
    out
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

    /// The column searches find exactly the points a brute-force scan finds, for balls and
    /// for cylinders of every orientation, on a cloud with a cliff and an overhang.
    #[test]
    fn column_searches_match_brute_force() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut pts = Vec::new();
        for _ in 0..6000 {
            let (x, y) = (rnd() * 40.0, rnd() * 30.0);
            let z = if x < 20.0 { 0.1 * y } else { 8.0 + 0.1 * y } + 0.3 * rnd();
            pts.push([x + 1000.0, y - 500.0, z]);
        }
        for _ in 0..1500 {
            // a vertical wall at x = 20 and points stacked in z
            pts.push([1020.0 + 0.01 * rnd(), rnd() * 30.0 - 500.0, rnd() * 8.0]);
        }
        let cloud = Cloud::new(pts.clone());
        for q in 0..300 {
            let c = pts[(q * 25) % pts.len()];
            let mut n = [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5];
            if q % 5 == 0 {
                n = [1.0, 0.0, 0.0];
            } else if q % 5 == 1 {
                n = [0.0, 0.0, 1.0];
            }
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            let n = n.map(|v| v / len);
            let (radius, half) = (0.3 + 2.0 * rnd(), 0.5 + 6.0 * rnd());
            let mut got = Vec::new();
            cloud.within_cylinder(&c, &n, radius, half, |p, _| got.push(*p));
            let mut want: Vec<[f64; 3]> = pts
                .iter()
                .filter(|p| {
                    let d = [p[0] - c[0], p[1] - c[1], p[2] - c[2]];
                    let t = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
                    let e = [d[0] - t * n[0], d[1] - t * n[1], d[2] - t * n[2]];
                    t.abs() < half && e[0] * e[0] + e[1] * e[1] + e[2] * e[2] <= radius * radius
                })
                .copied()
                .collect();
            let key = |a: &[f64; 3], b: &[f64; 3]| {
                a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])).then(a[2].total_cmp(&b[2]))
            };
            got.sort_by(key);
            want.sort_by(key);
            assert_eq!(got, want, "cylinder {q}");
            let mut got = Vec::new();
            cloud.within(&c, radius, |p| got.push(*p));
            let mut want: Vec<[f64; 3]> = pts
                .iter()
                .filter(|p| {
                    let d = [c[0] - p[0], c[1] - p[1], c[2] - p[2]];
                    d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= radius * radius
                })
                .copied()
                .collect();
            got.sort_by(key);
            want.sort_by(key);
            assert!(!want.is_empty());
            assert_eq!(got, want, "ball {q}");
        }
    }
}
