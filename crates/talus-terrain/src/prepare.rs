//! Input preparation: class filter, region of interest, duplicate-xy merging.

use crate::Duplicates;
use robust::{Coord, orient2d};

/// A convex region: the convex hull of a set of outline vertices, grown by a buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvexRegion {
    /// Hull vertices, counter-clockwise.
    pub hull: Vec<[f64; 2]>,
    /// Buffer distance, m.
    pub buffer: f64,
}

impl ConvexRegion {
    /// The convex hull of `points` (Andrew's monotone chain, exact orientation), grown by
    /// `buffer` metres.
    pub fn new(points: &[[f64; 2]], buffer: f64) -> Self {
        ConvexRegion { hull: convex_hull(points), buffer }
    }

    /// Whether (x, y) is inside the hull or within `buffer` of it.
    pub fn contains(&self, x: f64, y: f64) -> bool {
        let n = self.hull.len();
        let p = Coord { x, y };
        let mut inside = n >= 3;
        for i in 0..n {
            let (a, b) = (self.hull[i], self.hull[(i + 1) % n]);
            if n >= 3 && orient2d(Coord { x: a[0], y: a[1] }, Coord { x: b[0], y: b[1] }, p) < 0.0 {
                inside = false;
            }
        }
        if inside {
            return true;
        }
        let b2 = self.buffer * self.buffer;
        (0..n.max(1)).any(|i| {
            let (a, b) = (self.hull[i], self.hull[(i + 1) % n]);
            segment_distance2([x, y], a, b) <= b2
        })
    }
}

fn segment_distance2(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (qx, qy) = (a[0] + t * dx - p[0], a[1] + t * dy - p[1]);
    qx * qx + qy * qy
}

/// Convex hull, counter-clockwise, without collinear points.
pub fn convex_hull(points: &[[f64; 2]]) -> Vec<[f64; 2]> {
    let mut p: Vec<[f64; 2]> = points.to_vec();
    p.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    p.dedup();
    if p.len() < 3 {
        return p;
    }
    let turn = |o: [f64; 2], a: [f64; 2], b: [f64; 2]| {
        orient2d(Coord { x: o[0], y: o[1] }, Coord { x: a[0], y: a[1] }, Coord { x: b[0], y: b[1] })
    };
    let mut hull: Vec<[f64; 2]> = Vec::with_capacity(2 * p.len());
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &[f64; 2]>> =
            if pass == 0 { Box::new(p.iter()) } else { Box::new(p.iter().rev()) };
        for &q in iter {
            while hull.len() >= start + 2
                && turn(hull[hull.len() - 2], hull[hull.len() - 1], q) <= 0.0
            {
                hull.pop();
            }
            hull.push(q);
        }
        hull.pop();
    }
    hull
}

/// Merge points whose (x, y) fall in the same `tolerance`-sized cell, keeping the lowest,
/// the highest or the mean. Output order: sorted by cell (row-major on the snapped keys),
/// which also gives the later point-location walks good locality.
pub fn merge_duplicates(
    points: &[[f64; 3]],
    tolerance: f64,
    policy: Duplicates,
) -> (Vec<[f64; 3]>, usize) {
    let key = |p: &[f64; 3]| ((p[1] / tolerance).round() as i64, (p[0] / tolerance).round() as i64);
    let mut idx: Vec<u32> = (0..points.len() as u32).collect();
    idx.sort_by(|&a, &b| {
        let (pa, pb) = (&points[a as usize], &points[b as usize]);
        key(pa).cmp(&key(pb)).then(a.cmp(&b))
    });
    let mut out = Vec::with_capacity(points.len());
    let mut i = 0;
    while i < idx.len() {
        let k = key(&points[idx[i] as usize]);
        let mut j = i + 1;
        while j < idx.len() && key(&points[idx[j] as usize]) == k {
            j += 1;
        }
        let group = idx[i..j].iter().map(|&g| points[g as usize]);
        let merged = match policy {
            Duplicates::Lowest => group.reduce(|a, b| if b[2] < a[2] { b } else { a }),
            Duplicates::Highest => group.reduce(|a, b| if b[2] > a[2] { b } else { a }),
            Duplicates::Mean => {
                let n = (j - i) as f64;
                let s = group.fold([0.0; 3], |s, p| [s[0] + p[0], s[1] + p[1], s[2] + p[2]]);
                Some([s[0] / n, s[1] / n, s[2] / n])
            }
        };
        out.extend(merged);
        i = j;
    }
    let merged = points.len() - out.len();
    (out, merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_policies() {
        let p = vec![[0.0, 0.0, 1.0], [0.0, 0.0, 3.0], [1.0, 0.0, 5.0], [0.0002, 0.0, 2.0]];
        let (low, n) = merge_duplicates(&p, 0.001, Duplicates::Lowest);
        assert_eq!(n, 2);
        assert_eq!(low, vec![[0.0, 0.0, 1.0], [1.0, 0.0, 5.0]]);
        let (high, _) = merge_duplicates(&p, 0.001, Duplicates::Highest);
        assert_eq!(high[0], [0.0, 0.0, 3.0]);
        let (mean, _) = merge_duplicates(&p, 0.001, Duplicates::Mean);
        assert!((mean[0][2] - 2.0).abs() < 1e-15 && (mean[0][0] - 0.0002 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn hull_and_buffer() {
        let pts = [[0.0, 0.0], [2.0, 0.0], [1.0, 0.5], [2.0, 2.0], [0.0, 2.0], [1.0, 0.0]];
        let h = convex_hull(&pts);
        assert_eq!(h.len(), 4);
        let r = ConvexRegion { hull: h, buffer: 1.0 };
        assert!(r.contains(1.0, 1.0));
        assert!(r.contains(2.9, 1.0));
        assert!(!r.contains(3.1, 1.0));
        assert!(r.contains(2.7, 2.7));
        assert!(!r.contains(2.8, 2.8));
    }
}
