//! Resolution control.
//!
//! * Greedy error-driven insertion (Garland & Heckbert's "greedy insertion", batched):
//!   start from the convex hull of the points, thinned by Douglas-Peucker with tolerance
//!   `hull_tolerance` (so every point lies inside the mesh or within that distance of it),
//!   triangulate, measure the vertical error `e_i = |z_i - z_TIN(x_i, y_i)|` of every
//!   point left out, and insert, in every triangle whose worst point has
//!   `e > max_error` and `e >= ½ E` (E = the largest error over the whole mesh), that worst
//!   point; largest first, up to the vertex budget. Points outside the thinned hull are
//!   measured against the plane of the nearest hull triangle, so the thin triangles along
//!   the hull fit the data beside them. Repeat until `E <= max_error` or the
//!   budget is spent. The ½ E rule keeps each batch to the points a one-at-a-time greedy
//!   would insert next (it always inserts the current worst point), while re-triangulating
//!   only once per batch; the stopping rule is the sequential algorithm's.
//! * Grid thinning: one point per square cell (the one nearest the cell centre); with a
//!   vertex budget the cell size is bisected to the smallest size meeting it.

use crate::tin::{NONE, Tin, TinError};
use robust::{Coord, orient2d};
use std::collections::HashMap;

/// Vertical misfit of the points left out of a TIN.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Misfit {
    /// Largest |z - z_TIN| over the points inside the TIN that are not vertices, m.
    pub max_error: f64,
    /// Root mean square of the same, m.
    pub rms_error: f64,
    /// Points measured.
    pub measured: usize,
    /// Points outside the TIN's hull (not measured).
    pub outside: usize,
}

/// Vertical misfit of `points[i]` for every `i` with `!skip[i]`.
pub fn misfit(tin: &Tin, points: &[[f64; 3]], skip: &[bool]) -> Misfit {
    let mut m = Misfit::default();
    let mut sum2 = 0.0;
    let mut hint = 0;
    for i in spatial_order(points) {
        let (p, s) = (&points[i as usize], skip[i as usize]);
        if s {
            continue;
        }
        match tin.locate(p[0], p[1], hint) {
            Ok(t) => {
                hint = t;
                let e = (p[2] - tin.plane_z(t, p[0], p[1])).abs();
                m.max_error = m.max_error.max(e);
                sum2 += e * e;
                m.measured += 1;
            }
            Err(t) => {
                hint = t;
                m.outside += 1;
            }
        }
    }
    m.rms_error = if m.measured > 0 { (sum2 / m.measured as f64).sqrt() } else { 0.0 };
    m
}

/// How far (x, y) `p` lies outside the hull edges of triangle `t`, m (0 if on their
/// inner side).
fn outside_distance(tin: &Tin, t: usize, p: &[f64; 3]) -> f64 {
    let mut dist: f64 = 0.0;
    for k in 0..3 {
        if tin.neighbours[t][k] != NONE {
            continue;
        }
        let (a, b) = (tin.vertex(t, k), tin.vertex(t, (k + 1) % 3));
        let o = orient2d(
            Coord { x: a[0], y: a[1] },
            Coord { x: b[0], y: b[1] },
            Coord { x: p[0], y: p[1] },
        );
        if o < 0.0 {
            dist = dist.max(-o / ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2)).sqrt());
        }
    }
    dist
}

/// Convex hull of the points (counter-clockwise indices, collinear points dropped),
/// Andrew's monotone chain with exact orientation.
fn convex_hull(points: &[[f64; 3]]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..points.len()).collect();
    idx.sort_by(|&i, &j| {
        points[i][0].total_cmp(&points[j][0]).then(points[i][1].total_cmp(&points[j][1]))
    });
    let turn = |o: usize, a: usize, b: usize| {
        orient2d(
            Coord { x: points[o][0], y: points[o][1] },
            Coord { x: points[a][0], y: points[a][1] },
            Coord { x: points[b][0], y: points[b][1] },
        )
    };
    let mut hull: Vec<usize> = Vec::new();
    for pass in 0..2 {
        let start = hull.len();
        let order: Box<dyn Iterator<Item = &usize>> =
            if pass == 0 { Box::new(idx.iter()) } else { Box::new(idx.iter().rev()) };
        for &i in order {
            while hull.len() >= start + 2
                && turn(hull[hull.len() - 2], hull[hull.len() - 1], i) <= 0.0
            {
                hull.pop();
            }
            hull.push(i);
        }
        hull.pop();
    }
    hull
}

/// Distance from `p` to the segment `a b` in (x, y), m.
fn segment_distance(p: &[f64; 3], a: &[f64; 3], b: &[f64; 3]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let l2 = dx * dx + dy * dy;
    let t = if l2 > 0.0 {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    ((a[0] + t * dx - p[0]).powi(2) + (a[1] + t * dy - p[1]).powi(2)).sqrt()
}

/// How badly `p` fits the chord `a b` of the boundary: its (x, y) distance outside the
/// chord (on the right of a → b) over `tol`, or its height misfit against the chord's
/// linear interpolation over `ztol`, whichever is larger (> 1: the chord does not do).
fn chord_misfit(p: &[f64; 3], a: &[f64; 3], b: &[f64; 3], tol: f64, ztol: f64) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let l2 = dx * dx + dy * dy;
    if l2 <= 0.0 {
        return f64::INFINITY;
    }
    let t = (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l2).clamp(0.0, 1.0);
    let cross = dx * (p[1] - a[1]) - dy * (p[0] - a[0]);
    let out = (-cross).max(0.0) / l2.sqrt();
    let z = (p[2] - (a[2] + t * (b[2] - a[2]))).abs();
    let zterm = if ztol.is_finite() { z / ztol.max(f64::MIN_POSITIVE) } else { 0.0 };
    let xyterm = if tol > 0.0 {
        out / tol
    } else if out > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    xyterm.max(zterm)
}

/// Douglas-Peucker on the chain `ring[i..=j]` with [`chord_misfit`]: marks the vertices
/// to keep.
fn douglas_peucker(
    points: &[[f64; 3]],
    ring: &[usize],
    (i, j): (usize, usize),
    (tol, ztol): (f64, f64),
    keep: &mut [bool],
) {
    if j <= i + 1 {
        return;
    }
    let (a, b) = (&points[ring[i]], &points[ring[j]]);
    let (mut far, mut worst) = (i, 0.0);
    for (k, &r) in ring.iter().enumerate().take(j).skip(i + 1) {
        let m = chord_misfit(&points[r], a, b, tol, ztol);
        if m > worst {
            (far, worst) = (k, m);
        }
    }
    if worst > 1.0 {
        keep[far] = true;
        douglas_peucker(points, ring, (i, far), (tol, ztol), keep);
        douglas_peucker(points, ring, (far, j), (tol, ztol), keep);
    }
}

/// Starting set of the greedy insertion: a boundary polygon through the points within
/// `tol` (m) of the convex hull, ordered along it and thinned by Douglas-Peucker so that
/// every point lies inside the polygon or within `tol` of it, and (when `ztol` is finite)
/// every boundary-band point is within `ztol` (m) in height of the boundary edge beside it
/// (so the long thin triangles along the boundary fit the data). Every convex-hull vertex
/// is in the band, so a chord that passes the test cuts off no point deeper than `tol`.
fn initial_set(points: &[[f64; 3]], tol: f64, ztol: f64) -> Result<Vec<usize>, TinError> {
    let hull = convex_hull(points);
    if hull.len() < 3 {
        return Err(TinError::Collinear(points.len()));
    }
    let h = hull.len();
    let edges: Vec<(&[f64; 3], &[f64; 3])> =
        (0..h).map(|k| (&points[hull[k]], &points[hull[(k + 1) % h]])).collect();
    let mut start = vec![0.0; h + 1];
    for k in 0..h {
        let (a, b) = edges[k];
        start[k + 1] = start[k] + ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2)).sqrt();
    }
    // Band points with their position along the hull perimeter (nearest edge).
    let mut band: Vec<(f64, usize)> = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let (mut best, mut at) = (f64::INFINITY, 0.0);
        for (k, (a, b)) in edges.iter().enumerate() {
            let d = segment_distance(p, a, b);
            if d < best {
                let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
                let l = (dx * dx + dy * dy).sqrt();
                let t = if l > 0.0 { ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l } else { 0.0 };
                (best, at) = (d, start[k] + t.clamp(0.0, l));
            }
        }
        if best <= tol {
            band.push((at, i));
        }
    }
    band.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    // Start the ring at the first hull vertex, split it at the band point farthest from it.
    let first = band.iter().position(|b| b.1 == hull[0]).unwrap_or(0);
    band.rotate_left(first);
    let mut ring: Vec<usize> = band.iter().map(|b| b.1).collect();
    let p0 = points[ring[0]];
    let d0 = |i: usize| (points[i][0] - p0[0]).powi(2) + (points[i][1] - p0[1]).powi(2);
    let far = (1..ring.len()).max_by(|&a, &b| d0(ring[a]).total_cmp(&d0(ring[b]))).unwrap_or(1);
    ring.push(ring[0]);
    let mut keep = vec![false; ring.len()];
    keep[0] = true;
    keep[far] = true;
    douglas_peucker(points, &ring, (0, far), (tol, ztol), &mut keep);
    douglas_peucker(points, &ring, (far, ring.len() - 1), (tol, ztol), &mut keep);
    let mut set: Vec<usize> = (0..ring.len() - 1).filter(|&k| keep[k]).map(|k| ring[k]).collect();
    if set.len() < 3 {
        // A thin input: add the hull vertex farthest from the chord.
        let (a, b) = (&points[set[0]], &points[set[set.len() - 1]]);
        let third = hull
            .iter()
            .copied()
            .filter(|i| !set.contains(i))
            .max_by(|&i, &j| {
                segment_distance(&points[i], a, b).total_cmp(&segment_distance(&points[j], a, b))
            })
            .ok_or(TinError::Collinear(points.len()))?;
        set.push(third);
    }
    set.sort_unstable();
    set.dedup();
    Ok(set)
}

/// A visiting order of the points in which neighbours follow each other (serpentine rows),
/// so that the point-location walks from one point to the next are short.
fn spatial_order(points: &[[f64; 3]]) -> Vec<u32> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for p in points {
        lo = lo.min(p[1]);
        hi = hi.max(p[1]);
    }
    let rows = ((points.len() as f64).sqrt() / 4.0).ceil().max(1.0);
    let h = ((hi - lo) / rows).max(f64::MIN_POSITIVE);
    let row = |p: &[f64; 3]| ((p[1] - lo) / h).floor() as i64;
    let mut order: Vec<u32> = (0..points.len() as u32).collect();
    order.sort_by(|&i, &j| {
        let (p, q) = (&points[i as usize], &points[j as usize]);
        let (rp, rq) = (row(p), row(q));
        rp.cmp(&rq).then_with(|| {
            let c = p[0].total_cmp(&q[0]);
            if rp % 2 == 0 { c } else { c.reverse() }
        })
    });
    order
}

/// Outcome of a simplification.
pub struct Simplified {
    pub tin: Tin,
    pub misfit: Misfit,
    /// Insertion rounds (greedy) or bisection steps (grid).
    pub rounds: usize,
}

fn tin_of(points: &[[f64; 3]], chosen: &[bool]) -> Result<Tin, TinError> {
    Tin::delaunay(points.iter().zip(chosen).filter(|(_, c)| **c).map(|(p, _)| *p).collect())
}

/// Greedy error-driven insertion until every left-out point inside the mesh is within
/// `max_error` (m) of the TIN, or the TIN has `max_vertices` vertices. The mesh starts
/// from the convex hull thinned to `hull_tolerance` (m); if that hull alone exceeds the
/// budget it is the result. `points` must be free of duplicates.
pub fn greedy(
    points: &[[f64; 3]],
    max_vertices: Option<usize>,
    max_error: Option<f64>,
    hull_tolerance: f64,
    progress: &dyn talus_io::Progress,
) -> Result<Simplified, TinError> {
    if points.len() < 3 {
        return Err(TinError::TooFewPoints(points.len()));
    }
    let budget = max_vertices.unwrap_or(usize::MAX).min(points.len());
    let threshold = max_error.unwrap_or(0.0);
    let mut chosen = vec![false; points.len()];
    let mut count = 0;
    for i in initial_set(points, hull_tolerance, max_error.unwrap_or(f64::INFINITY))? {
        chosen[i] = true;
        count += 1;
    }
    let order = spatial_order(points);
    progress.start("greedy TIN", budget as u64);
    progress.inc(count as u64);
    let mut rounds = 0;
    loop {
        rounds += 1;
        let tin = tin_of(points, &chosen)?;
        // Per triangle, the worst left-out point inside it: (error, index); ties -> lower
        // index. Points outside the thinned hull (within hull_tolerance) are not measured.
        let mut worst: Vec<(f64, u32)> = vec![(-1.0, u32::MAX); tin.triangles.len()];
        let mut hint = 0;
        for &i in &order {
            if chosen[i as usize] {
                continue;
            }
            let p = &points[i as usize];
            match tin.locate(p[0], p[1], hint) {
                Ok(t) => {
                    hint = t;
                    let e = (p[2] - tin.plane_z(t, p[0], p[1])).abs();
                    let w = &mut worst[t];
                    if e > w.0 || (e == w.0 && i < w.1) {
                        *w = (e, i);
                    }
                }
                Err(t) => {
                    // Outside the thinned hull (by at most hull_tolerance): measured against
                    // the plane of the hull triangle the walk left through, so that the
                    // long thin triangles along the hull fit the data beside them.
                    hint = t;
                    let e = if outside_distance(&tin, t, p) > hull_tolerance + 1e-9 {
                        f64::INFINITY
                    } else {
                        (p[2] - tin.plane_z(t, p[0], p[1])).abs()
                    };
                    let w = &mut worst[t];
                    if e > w.0 || (e == w.0 && i < w.1) {
                        *w = (e, i);
                    }
                }
            }
        }
        let top = worst.iter().map(|w| w.0).fold(0.0, f64::max);
        if top <= threshold || count >= budget {
            progress.finish();
            let misfit = misfit(&tin, points, &chosen);
            return Ok(Simplified { tin, misfit, rounds });
        }
        let cut = 0.5 * top;
        let mut picks: Vec<(f64, u32)> = worst
            .into_iter()
            .filter(|w| w.1 != u32::MAX && w.0 > threshold && w.0 >= cut)
            .collect();
        picks.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        picks.truncate(budget - count);
        for &(_, i) in &picks {
            chosen[i as usize] = true;
        }
        count += picks.len();
        progress.inc(picks.len() as u64);
    }
}

/// Cells of size `cell` over the points' extent: the point nearest each cell's centre.
fn grid_pick(points: &[[f64; 3]], cell: f64, origin: [f64; 2]) -> Vec<bool> {
    let mut best: HashMap<(i64, i64), (f64, usize)> = HashMap::new();
    for (i, p) in points.iter().enumerate() {
        let (cx, cy) = (((p[0] - origin[0]) / cell).floor(), ((p[1] - origin[1]) / cell).floor());
        let (mx, my) = (origin[0] + (cx + 0.5) * cell, origin[1] + (cy + 0.5) * cell);
        let d = (p[0] - mx).powi(2) + (p[1] - my).powi(2);
        let e = best.entry((cx as i64, cy as i64)).or_insert((d, i));
        if (d, i) < *e {
            *e = (d, i);
        }
    }
    let mut chosen = vec![false; points.len()];
    for (_, i) in best.into_values() {
        chosen[i] = true;
    }
    chosen
}

/// Grid thinning with cell size `cell` (m), or with the smallest cell giving at most
/// `max_vertices` vertices.
pub fn grid(
    points: &[[f64; 3]],
    cell: Option<f64>,
    max_vertices: Option<usize>,
    progress: &dyn talus_io::Progress,
) -> Result<Simplified, TinError> {
    if points.len() < 3 {
        return Err(TinError::TooFewPoints(points.len()));
    }
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for p in points {
        for k in 0..2 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let mut rounds = 0;
    let chosen = match (cell, max_vertices) {
        (Some(c), _) => grid_pick(points, c, lo),
        (None, Some(n)) => {
            progress.start("grid thinning", 40);
            let count = |c: f64| grid_pick(points, c, lo).iter().filter(|v| **v).count();
            let (mut small, mut large) = (0.0, (hi[0] - lo[0]).max(hi[1] - lo[1]).max(1e-9) * 2.0);
            for _ in 0..40 {
                rounds += 1;
                progress.inc(1);
                let mid = 0.5 * (small + large);
                if count(mid) <= n {
                    large = mid;
                } else {
                    small = mid;
                }
            }
            progress.finish();
            grid_pick(points, large, lo)
        }
        (None, None) => vec![true; points.len()],
    };
    let tin = tin_of(points, &chosen)?;
    let misfit = misfit(&tin, points, &chosen);
    Ok(Simplified { tin, misfit, rounds })
}
