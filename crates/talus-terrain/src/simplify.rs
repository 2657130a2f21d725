//! Resolution control.
//!
//! * Greedy error-driven insertion (Garland & Heckbert's "greedy insertion", in rounds):
//!   start from the extreme points, triangulate, measure the vertical error
//!   `e_i = |z_i - z_TIN(x_i, y_i)|` of every point left out, insert in each triangle the
//!   point of largest error (largest first, up to the vertex budget) and repeat until
//!   `max_i e_i <= max_error` or the budget is spent. Points outside the current hull by
//!   more than `hull_tolerance` count as infinitely wrong, so the mesh grows to the hull.
//!   Inserting one point per triangle per round (rather than one per iteration) keeps the
//!   cost at O(n log n) with a batch Delaunay triangulator; the stopping rule is the same.
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

/// Where a left-out point stands with respect to a TIN.
enum Place {
    Inside(usize, f64),
    /// Outside: the hull triangle the walk left through, the distance outside, the error
    /// against that triangle's plane.
    Outside(usize, f64, f64),
}

fn place(tin: &Tin, p: &[f64; 3], hint: usize) -> Place {
    match tin.locate(p[0], p[1], hint) {
        Ok(t) => Place::Inside(t, (p[2] - tin.plane_z(t, p[0], p[1])).abs()),
        Err(t) => {
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
                let len = ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2)).sqrt();
                if o < 0.0 {
                    dist = dist.max(-o / len);
                }
            }
            Place::Outside(t, dist, (p[2] - tin.plane_z(t, p[0], p[1])).abs())
        }
    }
}

/// Vertical misfit of `points[i]` for every `i` with `!skip[i]`.
pub fn misfit(tin: &Tin, points: &[[f64; 3]], skip: &[bool]) -> Misfit {
    let mut m = Misfit::default();
    let mut sum2 = 0.0;
    let mut hint = 0;
    for (p, _) in points.iter().zip(skip).filter(|(_, s)| !**s) {
        match place(tin, p, hint) {
            Place::Inside(t, e) => {
                hint = t;
                m.max_error = m.max_error.max(e);
                sum2 += e * e;
                m.measured += 1;
            }
            Place::Outside(t, _, _) => {
                hint = t;
                m.outside += 1;
            }
        }
    }
    m.rms_error = if m.measured > 0 { (sum2 / m.measured as f64).sqrt() } else { 0.0 };
    m
}

/// Indices of a non-degenerate starting set: the extreme points along x ± y, plus the
/// point farthest from their line if they are collinear.
fn initial_set(points: &[[f64; 3]]) -> Result<Vec<usize>, TinError> {
    let arg = |f: &dyn Fn(&[f64; 3]) -> f64, max: bool| {
        let mut best = 0;
        for (i, p) in points.iter().enumerate() {
            let (v, b) = (f(p), f(&points[best]));
            if (max && v > b) || (!max && v < b) {
                best = i;
            }
        }
        best
    };
    let mut set = vec![
        arg(&|p| p[0] + p[1], false),
        arg(&|p| p[0] + p[1], true),
        arg(&|p| p[0] - p[1], false),
        arg(&|p| p[0] - p[1], true),
    ];
    set.sort_unstable();
    set.dedup();
    let (a, b) = (points[set[0]], points[*set.last().unwrap_or(&0)]);
    let off = |p: &[f64; 3]| {
        orient2d(Coord { x: a[0], y: a[1] }, Coord { x: b[0], y: b[1] }, Coord { x: p[0], y: p[1] })
            .abs()
    };
    if set.len() < 3 || set.iter().all(|&i| off(&points[i]) == 0.0) {
        let far = arg(&|p| off(p), true);
        if off(&points[far]) == 0.0 {
            return Err(TinError::Collinear(points.len()));
        }
        set.push(far);
        set.sort_unstable();
        set.dedup();
    }
    Ok(set)
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

/// Greedy error-driven insertion until every left-out point is within `max_error` (m) of
/// the TIN, or the TIN has `max_vertices` vertices. `points` must be free of duplicates.
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
    for i in initial_set(points)? {
        chosen[i] = true;
        count += 1;
    }
    progress.start("greedy TIN", budget.min(points.len()) as u64);
    progress.inc(count as u64);
    let mut rounds = 0;
    loop {
        rounds += 1;
        let tin = tin_of(points, &chosen)?;
        // Per triangle, the worst point: (outside-far?, error, index); ties -> lower index.
        let mut worst: Vec<(bool, f64, u32)> = vec![(false, -1.0, u32::MAX); tin.triangles.len()];
        let mut hint = 0;
        for (i, p) in points.iter().enumerate() {
            if chosen[i] {
                continue;
            }
            let (t, key) = match place(&tin, p, hint) {
                Place::Inside(t, e) => (t, (false, e)),
                Place::Outside(t, d, e) => {
                    (t, if d > hull_tolerance { (true, d) } else { (false, e) })
                }
            };
            hint = t;
            let w = &mut worst[t];
            if (key.0, key.1) > (w.0, w.1) {
                *w = (key.0, key.1, i as u32);
            }
        }
        let mut picks: Vec<(bool, f64, u32)> =
            worst.into_iter().filter(|w| w.2 != u32::MAX && (w.0 || w.1 > threshold)).collect();
        if picks.is_empty() || count >= budget {
            progress.finish();
            let misfit = misfit(&tin, points, &chosen);
            return Ok(Simplified { tin, misfit, rounds });
        }
        picks.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
        picks.truncate(budget - count);
        for &(_, _, i) in &picks {
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
