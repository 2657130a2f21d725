//! The triangulated irregular network: Delaunay triangulation of (x, y) with z carried,
//! triangle adjacency, point location by visibility walk, linear interpolation, and the
//! validity checks ([`Tin::is_valid`]) built on Shewchuk's exact predicates.

use robust::{Coord, incircle, orient2d};

/// No neighbour across this edge (the edge is on the hull).
pub const NONE: u32 = u32::MAX;

/// A TIN: vertices and counter-clockwise triangles with their neighbours.
#[derive(Debug, Clone, PartialEq)]
pub struct Tin {
    /// Vertex coordinates (x, y, z), m.
    pub vertices: Vec<[f64; 3]>,
    /// Triangles as vertex indices, counter-clockwise seen from above.
    pub triangles: Vec<[u32; 3]>,
    /// `neighbours[t][k]`: the triangle across edge `(v[k], v[(k+1)%3])`, or [`NONE`].
    pub neighbours: Vec<[u32; 3]>,
}

/// Why a point set cannot be triangulated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TinError {
    #[error("{0} distinct point(s): a TIN needs at least 3")]
    TooFewPoints(usize),
    #[error("all {0} points are collinear: no triangle can be formed")]
    Collinear(usize),
    #[error("the triangulation dropped {0} vertex(es) as near-duplicates; merge duplicates first")]
    DroppedVertices(usize),
}

fn c(p: &[f64; 3]) -> Coord<f64> {
    Coord { x: p[0], y: p[1] }
}

/// Which property of a TIN failed [`Tin::is_valid`].
#[derive(Debug, Clone, PartialEq)]
pub enum Invalid {
    /// A triangle is not strictly counter-clockwise (zero area or flipped).
    NotCcw(usize),
    /// The neighbour relation is not symmetric or does not share the edge.
    BadAdjacency(usize),
    /// The vertex opposite triangle `t`'s edge `k` lies strictly inside its circumcircle.
    NotDelaunay { triangle: usize, edge: usize },
    /// A vertex is used by no triangle.
    Unused(usize),
    /// A vertex index is out of range.
    BadIndex(usize),
}

impl Tin {
    /// Delaunay triangulation of `vertices` on (x, y). Every vertex ends up in the TIN
    /// (duplicates must have been merged: a dropped vertex is an error).
    pub fn delaunay(vertices: Vec<[f64; 3]>) -> Result<Tin, TinError> {
        if vertices.len() < 3 {
            return Err(TinError::TooFewPoints(vertices.len()));
        }
        let pts: Vec<delaunator::Point> =
            vertices.iter().map(|p| delaunator::Point { x: p[0], y: p[1] }).collect();
        let d = delaunator::triangulate(&pts);
        if d.triangles.is_empty() {
            return Err(TinError::Collinear(vertices.len()));
        }
        let nt = d.triangles.len() / 3;
        let mut triangles = Vec::with_capacity(nt);
        let mut neighbours = Vec::with_capacity(nt);
        let nb = |h: usize| {
            if d.halfedges[h] == delaunator::EMPTY { NONE } else { (d.halfedges[h] / 3) as u32 }
        };
        for t in 0..nt {
            let v = [d.triangles[3 * t], d.triangles[3 * t + 1], d.triangles[3 * t + 2]];
            let n = [nb(3 * t), nb(3 * t + 1), nb(3 * t + 2)];
            let o = orient2d(c(&vertices[v[0]]), c(&vertices[v[1]]), c(&vertices[v[2]]));
            if o > 0.0 {
                triangles.push([v[0] as u32, v[1] as u32, v[2] as u32]);
                neighbours.push(n);
            } else {
                // Reverse to counter-clockwise: edges (v0,v2), (v2,v1), (v1,v0) are the old
                // edges 2, 1, 0.
                triangles.push([v[0] as u32, v[2] as u32, v[1] as u32]);
                neighbours.push([n[2], n[1], n[0]]);
            }
        }
        let tin = Tin { vertices, triangles, neighbours };
        let used = tin.used_vertices();
        let dropped = used.iter().filter(|u| !**u).count();
        if dropped > 0 {
            return Err(TinError::DroppedVertices(dropped));
        }
        Ok(tin)
    }

    fn used_vertices(&self) -> Vec<bool> {
        let mut used = vec![false; self.vertices.len()];
        for t in &self.triangles {
            for &v in t {
                used[v as usize] = true;
            }
        }
        used
    }

    /// Vertex `k` of triangle `t`.
    #[inline]
    pub fn vertex(&self, t: usize, k: usize) -> &[f64; 3] {
        &self.vertices[self.triangles[t][k] as usize]
    }

    /// Find the triangle containing (x, y) (on its boundary counts) by a visibility walk
    /// from triangle `hint`. `Err(t)` when the point is outside the TIN: `t` is the hull
    /// triangle the walk left through.
    pub fn locate(&self, x: f64, y: f64, hint: usize) -> Result<usize, usize> {
        let p = Coord { x, y };
        let mut t = hint.min(self.triangles.len() - 1);
        // A visibility walk terminates on a Delaunay triangulation; the bound is a guard.
        for _ in 0..self.triangles.len() + 3 {
            let mut moved = false;
            for k in 0..3 {
                let a = c(self.vertex(t, k));
                let b = c(self.vertex(t, (k + 1) % 3));
                if orient2d(a, b, p) < 0.0 {
                    let n = self.neighbours[t][k];
                    if n == NONE {
                        return Err(t);
                    }
                    t = n as usize;
                    moved = true;
                    break;
                }
            }
            if !moved {
                return Ok(t);
            }
        }
        Err(t)
    }

    /// Height at (x, y) of the plane through triangle `t` (linear interpolation inside it,
    /// extrapolation outside).
    pub fn plane_z(&self, t: usize, x: f64, y: f64) -> f64 {
        let [a, b, cc] = [self.vertex(t, 0), self.vertex(t, 1), self.vertex(t, 2)];
        let det = (b[0] - a[0]) * (cc[1] - a[1]) - (cc[0] - a[0]) * (b[1] - a[1]);
        let l1 = ((x - a[0]) * (cc[1] - a[1]) - (cc[0] - a[0]) * (y - a[1])) / det;
        let l2 = ((b[0] - a[0]) * (y - a[1]) - (x - a[0]) * (b[1] - a[1])) / det;
        a[2] + l1 * (b[2] - a[2]) + l2 * (cc[2] - a[2])
    }

    /// Interpolated height at (x, y), `None` outside the TIN.
    pub fn interpolate(&self, x: f64, y: f64) -> Option<f64> {
        self.locate(x, y, 0).ok().map(|t| self.plane_z(t, x, y))
    }

    /// Unit upward normal, 3D area (m²) and slope (degrees) of triangle `t`.
    pub fn facet(&self, t: usize) -> ([f64; 3], f64, f64) {
        let [a, b, cc] = [self.vertex(t, 0), self.vertex(t, 1), self.vertex(t, 2)];
        let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let v = [cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]];
        let n = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]];
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        let unit = [n[0] / len, n[1] / len, n[2] / len];
        let slope = unit[2].clamp(-1.0, 1.0).acos().to_degrees();
        (unit, 0.5 * len, slope)
    }

    /// Planimetric (2D) area of the TIN, m².
    pub fn area_2d(&self) -> f64 {
        (0..self.triangles.len())
            .map(|t| {
                let [a, b, cc] = [self.vertex(t, 0), self.vertex(t, 1), self.vertex(t, 2)];
                0.5 * ((b[0] - a[0]) * (cc[1] - a[1]) - (cc[0] - a[0]) * (b[1] - a[1]))
            })
            .sum()
    }

    /// Check the TIN's invariants with exact predicates: indices in range, every triangle
    /// strictly counter-clockwise (no zero-area or flipped triangle), symmetric adjacency
    /// sharing the edge, every vertex used, and the empty-circumcircle (Delaunay) property
    /// across every interior edge. Returns every violation found.
    pub fn check(&self) -> Vec<Invalid> {
        let mut bad = Vec::new();
        let nv = self.vertices.len() as u32;
        for (t, tri) in self.triangles.iter().enumerate() {
            if tri.iter().any(|&v| v >= nv) {
                bad.push(Invalid::BadIndex(t));
                continue;
            }
            if orient2d(c(self.vertex(t, 0)), c(self.vertex(t, 1)), c(self.vertex(t, 2))) <= 0.0 {
                bad.push(Invalid::NotCcw(t));
            }
            for k in 0..3 {
                let n = self.neighbours[t][k];
                if n == NONE {
                    continue;
                }
                let n = n as usize;
                let (a, b) = (tri[k], tri[(k + 1) % 3]);
                // The neighbour must hold the edge reversed and point back at t.
                let Some(j) = (0..3)
                    .find(|&j| self.triangles[n][j] == b && self.triangles[n][(j + 1) % 3] == a)
                else {
                    bad.push(Invalid::BadAdjacency(t));
                    continue;
                };
                if self.neighbours[n][j] as usize != t {
                    bad.push(Invalid::BadAdjacency(t));
                    continue;
                }
                let opposite = &self.vertices[self.triangles[n][(j + 2) % 3] as usize];
                let inc = incircle(
                    c(self.vertex(t, 0)),
                    c(self.vertex(t, 1)),
                    c(self.vertex(t, 2)),
                    c(opposite),
                );
                if inc > 0.0 {
                    bad.push(Invalid::NotDelaunay { triangle: t, edge: k });
                }
            }
        }
        for (v, u) in self.used_vertices().into_iter().enumerate() {
            if !u {
                bad.push(Invalid::Unused(v));
            }
        }
        bad
    }

    /// True when [`Tin::check`] finds nothing.
    pub fn is_valid(&self) -> bool {
        self.check().is_empty()
    }
}

/// Neighbours of each triangle edge, from shared (reversed) edges.
pub fn adjacency(triangles: &[[u32; 3]]) -> Vec<[u32; 3]> {
    let mut edges: Vec<(u32, u32, u32, u8)> = Vec::with_capacity(3 * triangles.len());
    for (t, tri) in triangles.iter().enumerate() {
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            edges.push((a.min(b), a.max(b), t as u32, k as u8));
        }
    }
    edges.sort_unstable();
    let mut nb = vec![[NONE; 3]; triangles.len()];
    for w in edges.windows(2) {
        if w[0].0 == w[1].0 && w[0].1 == w[1].1 {
            nb[w[0].2 as usize][w[0].3 as usize] = w[1].2;
            nb[w[1].2 as usize][w[1].3 as usize] = w[0].2;
        }
    }
    nb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_is_two_ccw_triangles() {
        let v = vec![[0.0, 0.0, 0.0], [1.0, 0.0, 1.0], [1.0, 1.0, 2.0], [0.0, 1.0, 1.0]];
        let tin = Tin::delaunay(v).unwrap();
        assert_eq!(tin.triangles.len(), 2);
        assert!(tin.is_valid(), "{:?}", tin.check());
        assert!((tin.area_2d() - 1.0).abs() < 1e-15);
        // z = x + y is a plane: interpolation is exact.
        assert!((tin.interpolate(0.3, 0.6).unwrap() - 0.9).abs() < 1e-14);
        assert!(tin.interpolate(2.0, 0.5).is_none());
    }

    #[test]
    fn degenerate_inputs_are_errors() {
        assert_eq!(Tin::delaunay(vec![[0.0; 3], [1.0, 0.0, 0.0]]), Err(TinError::TooFewPoints(2)));
        let line: Vec<_> = (0..5).map(|i| [i as f64, 2.0 * i as f64, 0.0]).collect();
        assert_eq!(Tin::delaunay(line), Err(TinError::Collinear(5)));
    }

    #[test]
    fn check_catches_a_flipped_triangle_and_a_non_delaunay_edge() {
        let v = vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]];
        let mut tin = Tin::delaunay(v).unwrap();
        tin.triangles[0].swap(1, 2);
        assert!(tin.check().iter().any(|e| matches!(e, Invalid::NotCcw(0))));
        // A kite whose short diagonal is the shared edge is not Delaunay.
        let v = vec![[0.0, 0.0, 0.0], [2.0, -0.2, 0.0], [4.0, 0.0, 0.0], [2.0, 0.2, 0.0]];
        let tin = Tin {
            vertices: v,
            triangles: vec![[0, 1, 2], [0, 2, 3]],
            neighbours: vec![[NONE, NONE, 1], [0, NONE, NONE]],
        };
        assert!(
            tin.check().iter().any(|e| matches!(e, Invalid::NotDelaunay { .. })),
            "{:?}",
            tin.check()
        );
    }
}
