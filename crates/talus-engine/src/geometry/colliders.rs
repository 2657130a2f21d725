//! Static colliders: planes and the terrain TIN with its spatial index.
//!
//! The TIN is a 2.5-D surface z = f(x, y) made of non-vertical triangles. Every triangle's
//! normal is stored pointing **up** (n_z > 0, the free side), whatever the vertex order.
//! A uniform grid over the TIN's xy extent lists, for each cell, the triangles whose xy
//! bounding box meets the cell; queries with an xy box return each triangle once, sorted.
//!
//! For the narrow phase the TIN also classifies its edges: an edge is *sharp* when it is a
//! ridge (the neighbouring triangle bends down across it) or lies on the TIN's border; a
//! vertex is sharp when it ends a sharp edge. Only sharp features can touch a block face
//! without a block vertex also touching the terrain, so only they are tested against boxes
//! (a flat or concave edge under a block would only add redundant points).

use std::cell::RefCell;

use nalgebra::Vector3;

/// Marks over indices (triangles, vertices, edges) that tell the first visit of an index
/// in a pass from the next ones, so that a query's duplicates are dropped as they come
/// instead of sorted away. One per thread ([`with_marks`]); a pass is one epoch.
pub(crate) struct Marks {
    epoch: u32,
    mark: Vec<u32>,
}

impl Marks {
    /// Start a pass over indices below `n`.
    pub(crate) fn begin(&mut self, n: usize) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.fill(0);
            self.epoch = 1;
        }
        if self.mark.len() < n {
            self.mark.resize(n, 0);
        }
    }

    /// Whether this is the pass's first visit of `i` (and mark it).
    pub(crate) fn first(&mut self, i: u32) -> bool {
        let m = &mut self.mark[i as usize];
        let first = *m != self.epoch;
        *m = self.epoch;
        first
    }
}

thread_local! {
    static MARKS: RefCell<Marks> = const { RefCell::new(Marks { epoch: 0, mark: Vec::new() }) };
}

/// Run `f` with this thread's [`Marks`] (not re-entrant).
pub(crate) fn with_marks<R>(f: impl FnOnce(&mut Marks) -> R) -> R {
    MARKS.with(|m| f(&mut m.borrow_mut()))
}

/// A static plane (the thesis's ground z = 0, an inclined plane, a wall).
#[derive(Debug, Clone, PartialEq)]
pub struct Plane {
    /// A point of the plane (world), m.
    pub point: Vector3<f64>,
    /// Unit normal pointing toward the free side (blocks live where n·(x − point) > 0).
    pub normal: Vector3<f64>,
}

impl Plane {
    /// A plane through `point` with normal `normal` (normalised here; must not be zero).
    pub fn new(point: Vector3<f64>, normal: Vector3<f64>) -> Plane {
        Plane { point, normal: normal.normalize() }
    }

    /// The horizontal ground z = `z`, free side up.
    pub fn ground(z: f64) -> Plane {
        Plane { point: Vector3::new(0.0, 0.0, z), normal: Vector3::z() }
    }

    /// Signed distance of `p` to the plane (positive on the free side), m.
    pub fn distance(&self, p: &Vector3<f64>) -> f64 {
        self.normal.dot(&(p - self.point))
    }
}

/// Invalid terrain TIN.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ColliderError {
    #[error("terrain TIN has no triangles")]
    NoTriangles,
    #[error("terrain vertex {vertex} is not finite")]
    NonFiniteVertex { vertex: usize },
    #[error(
        "terrain triangle {triangle} refers to vertex {index} but there are only {n_vertices} vertices"
    )]
    BadIndex { triangle: usize, index: u32, n_vertices: usize },
    #[error("terrain triangle {triangle} is degenerate (zero area)")]
    Degenerate { triangle: usize },
    #[error(
        "terrain triangle {triangle} is vertical (unit normal z = {nz:e}); the terrain must be a surface z = f(x, y)"
    )]
    Vertical { triangle: usize, nz: f64 },
}

/// An edge of the TIN with the triangles on each side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TinEdge {
    /// End vertices (smaller index first).
    pub v: [u32; 2],
    /// The lowest-numbered triangle using this edge (the contact is reported against it).
    pub triangle: u32,
    /// True for a ridge or a border edge (see the module documentation).
    pub sharp: bool,
}

/// Unit normal z below which a triangle is refused as vertical.
const MIN_NZ: f64 = 1e-9;
/// A shared edge is a ridge when the far vertex of the neighbour lies below the triangle's
/// plane by more than this fraction of its distance (sine of the bend angle, ≈ 0.006°).
const RIDGE_SINE: f64 = 1e-4;

/// A static triangulated terrain with a uniform-grid spatial index.
#[derive(Debug, Clone)]
pub struct TinCollider {
    vertices: Vec<Vector3<f64>>,
    triangles: Vec<[u32; 3]>,
    normals: Vec<Vector3<f64>>,
    /// Edges, sorted by vertex pair.
    edges: Vec<TinEdge>,
    /// For each triangle, the indices of its three edges in `edges`.
    tri_edges: Vec<[u32; 3]>,
    /// For each vertex, whether it ends a sharp edge.
    sharp_vertex: Vec<bool>,
    /// xy bounding box of each triangle.
    boxes: Vec<([f64; 2], [f64; 2])>,
    /// Highest z of each triangle, m.
    tops: Vec<f64>,
    /// Margin of the bounding boxes in [`TinCollider::triangle_contains_xy`]'s quick
    /// rejection, m: 1e-9 of the largest coordinate (and at least 1e-9 m), far above the
    /// barycentric coordinates' slack and rounding there.
    box_margin: f64,
    grid: Grid2,
}

/// Uniform grid over xy in CSR form.
#[derive(Debug, Clone)]
struct Grid2 {
    min: [f64; 2],
    max: [f64; 2],
    cell: f64,
    nx: usize,
    ny: usize,
    /// `start[c]..start[c + 1]` indexes `items` for cell c = iy * nx + ix.
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Grid2 {
    fn build(min: [f64; 2], max: [f64; 2], boxes: &[([f64; 2], [f64; 2])]) -> Grid2 {
        let (w, h) = ((max[0] - min[0]).max(0.0), (max[1] - min[1]).max(0.0));
        let n = boxes.len().max(1) as f64;
        // About one triangle per cell; cap the number of cells at 4 n + 1.
        let mut cell = ((w * h) / n).sqrt();
        let longest = w.max(h).max(f64::MIN_POSITIVE);
        if cell.is_nan() || cell <= 0.0 {
            cell = longest / n;
        }
        cell = cell.max(longest / (4.0 * n + 1.0)).max(f64::MIN_POSITIVE);
        let nx = ((w / cell).floor() as usize + 1).min(1 << 20);
        let ny = ((h / cell).floor() as usize + 1).min(1 << 20);
        let mut g =
            Grid2 { min, max, cell, nx, ny, start: vec![0; nx * ny + 1], items: Vec::new() };
        for (lo, hi) in boxes {
            let (x0, y0, x1, y1) = g.range(lo, hi);
            for iy in y0..=y1 {
                for ix in x0..=x1 {
                    g.start[iy * nx + ix + 1] += 1;
                }
            }
        }
        for c in 0..nx * ny {
            g.start[c + 1] += g.start[c];
        }
        let mut fill = g.start.clone();
        g.items = vec![0; g.start[nx * ny] as usize];
        for (t, (lo, hi)) in boxes.iter().enumerate() {
            let (x0, y0, x1, y1) = g.range(lo, hi);
            for iy in y0..=y1 {
                for ix in x0..=x1 {
                    let c = iy * nx + ix;
                    g.items[fill[c] as usize] = t as u32;
                    fill[c] += 1;
                }
            }
        }
        g
    }

    fn coord(&self, v: f64, axis: usize) -> usize {
        let n = if axis == 0 { self.nx } else { self.ny };
        let k = ((v - self.min[axis]) / self.cell).floor();
        if k.is_nan() || k < 0.0 { 0 } else { (k as usize).min(n - 1) }
    }

    /// Cell index range covered by an xy box (clamped to the grid).
    fn range(&self, lo: &[f64; 2], hi: &[f64; 2]) -> (usize, usize, usize, usize) {
        (self.coord(lo[0], 0), self.coord(lo[1], 1), self.coord(hi[0], 0), self.coord(hi[1], 1))
    }

    fn overlaps(&self, lo: &[f64; 2], hi: &[f64; 2]) -> bool {
        lo[0] <= self.max[0] && hi[0] >= self.min[0] && lo[1] <= self.max[1] && hi[1] >= self.min[1]
    }

    fn cell_items(&self, ix: usize, iy: usize) -> &[u32] {
        let c = iy * self.nx + ix;
        &self.items[self.start[c] as usize..self.start[c + 1] as usize]
    }
}

impl TinCollider {
    /// Builds the TIN, checks it (finite vertices, valid indices, non-degenerate and
    /// non-vertical triangles), orients normals up and builds the spatial index.
    pub fn new(
        vertices: Vec<Vector3<f64>>,
        triangles: Vec<[u32; 3]>,
    ) -> Result<TinCollider, ColliderError> {
        if triangles.is_empty() {
            return Err(ColliderError::NoTriangles);
        }
        if let Some(v) = vertices.iter().position(|v| !v.iter().all(|c| c.is_finite())) {
            return Err(ColliderError::NonFiniteVertex { vertex: v });
        }
        let mut normals = Vec::with_capacity(triangles.len());
        let mut boxes = Vec::with_capacity(triangles.len());
        let mut tops = Vec::with_capacity(triangles.len());
        for (t, tri) in triangles.iter().enumerate() {
            for &index in tri {
                if index as usize >= vertices.len() {
                    return Err(ColliderError::BadIndex {
                        triangle: t,
                        index,
                        n_vertices: vertices.len(),
                    });
                }
            }
            let [a, b, c] = tri.map(|k| vertices[k as usize]);
            let cr = (b - a).cross(&(c - a));
            let scale = (b - a).norm().max((c - a).norm()).max((c - b).norm());
            let len = cr.norm();
            if len <= 1e-12 * scale * scale
                || tri[0] == tri[1]
                || tri[1] == tri[2]
                || tri[0] == tri[2]
            {
                return Err(ColliderError::Degenerate { triangle: t });
            }
            let mut n = cr / len;
            if n.z < 0.0 {
                n = -n;
            }
            if n.z < MIN_NZ {
                return Err(ColliderError::Vertical { triangle: t, nz: n.z });
            }
            normals.push(n);
            tops.push(a.z.max(b.z).max(c.z));
            boxes.push((
                [a.x.min(b.x).min(c.x), a.y.min(b.y).min(c.y)],
                [a.x.max(b.x).max(c.x), a.y.max(b.y).max(c.y)],
            ));
        }
        let mut min = [f64::INFINITY; 2];
        let mut max = [f64::NEG_INFINITY; 2];
        for (lo, hi) in &boxes {
            for k in 0..2 {
                min[k] = min[k].min(lo[k]);
                max[k] = max[k].max(hi[k]);
            }
        }
        let grid = Grid2::build(min, max, &boxes);
        let box_margin = 1e-9 * min.iter().chain(&max).fold(1.0f64, |m, c| m.max(c.abs()));

        // Edges: (v0, v1, triangle, opposite vertex), sorted so that the two sides of a
        // shared edge are adjacent.
        let mut half: Vec<(u32, u32, u32, u32)> = Vec::with_capacity(3 * triangles.len());
        for (t, tri) in triangles.iter().enumerate() {
            for k in 0..3 {
                let (a, b, o) = (tri[k], tri[(k + 1) % 3], tri[(k + 2) % 3]);
                half.push((a.min(b), a.max(b), t as u32, o));
            }
        }
        half.sort_unstable();
        let mut edges: Vec<TinEdge> = Vec::new();
        let mut tri_edges = vec![[u32::MAX; 3]; triangles.len()];
        let mut sharp_vertex = vec![false; vertices.len()];
        let mut k = 0;
        while k < half.len() {
            let mut m = k + 1;
            while m < half.len() && half[m].0 == half[k].0 && half[m].1 == half[k].1 {
                m += 1;
            }
            let group = &half[k..m];
            let (v0, v1) = (group[0].0, group[0].1);
            let sharp = if group.len() != 2 {
                true // border (or non-manifold) edge
            } else {
                // Ridge if either side's far vertex lies below the other side's plane.
                let p = vertices[v0 as usize];
                group.iter().zip(group.iter().rev()).any(|(s, o)| {
                    let w = vertices[o.3 as usize] - p;
                    normals[s.2 as usize].dot(&w) < -RIDGE_SINE * w.norm()
                })
            };
            let e = edges.len() as u32;
            edges.push(TinEdge { v: [v0, v1], triangle: group[0].2, sharp });
            for s in group {
                let tri = &triangles[s.2 as usize];
                let slot = (0..3).find(|&q| {
                    let (a, b) = (tri[q], tri[(q + 1) % 3]);
                    a.min(b) == v0 && a.max(b) == v1
                });
                if let Some(q) = slot {
                    tri_edges[s.2 as usize][q] = e;
                }
            }
            if sharp {
                sharp_vertex[v0 as usize] = true;
                sharp_vertex[v1 as usize] = true;
            }
            k = m;
        }
        Ok(TinCollider {
            vertices,
            triangles,
            normals,
            edges,
            tri_edges,
            sharp_vertex,
            boxes,
            tops,
            box_margin,
            grid,
        })
    }

    /// Number of triangles.
    pub fn len(&self) -> usize {
        self.triangles.len()
    }

    /// True if there are no triangles (never, for a TIN built by [`TinCollider::new`]).
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// The xy bounding box of the triangles: ([xmin, ymin], [xmax, ymax]), m.
    pub fn bounds_xy(&self) -> ([f64; 2], [f64; 2]) {
        (self.grid.min, self.grid.max)
    }

    /// The vertices (world), m.
    pub fn vertices(&self) -> &[Vector3<f64>] {
        &self.vertices
    }

    /// The vertex indices of triangle `t`, as given.
    pub fn indices(&self, t: u32) -> [u32; 3] {
        self.triangles[t as usize]
    }

    /// The three corners of triangle `t` (world), m.
    pub fn triangle(&self, t: u32) -> [Vector3<f64>; 3] {
        self.triangles[t as usize].map(|k| self.vertices[k as usize])
    }

    /// The unit normal of triangle `t`, pointing up (n_z > 0).
    pub fn normal(&self, t: u32) -> Vector3<f64> {
        self.normals[t as usize]
    }

    /// Number of vertices.
    pub fn n_vertices(&self) -> usize {
        self.vertices.len()
    }

    /// Number of edges.
    pub fn n_edges(&self) -> usize {
        self.edges.len()
    }

    /// The edges of triangle `t` (indices into [`TinCollider::edge`]).
    pub fn triangle_edges(&self, t: u32) -> [u32; 3] {
        self.tri_edges[t as usize]
    }

    /// Edge `e`.
    pub fn edge(&self, e: u32) -> TinEdge {
        self.edges[e as usize]
    }

    /// Whether vertex `v` ends a sharp (ridge or border) edge.
    pub fn is_sharp_vertex(&self, v: u32) -> bool {
        self.sharp_vertex[v as usize]
    }

    /// Triangles whose xy bounding box meets the xy box [lo, hi], each once, ascending.
    pub fn query_xy(&self, lo: [f64; 2], hi: [f64; 2], out: &mut Vec<u32>) {
        out.clear();
        if !self.grid.overlaps(&lo, &hi) {
            return;
        }
        let (x0, y0, x1, y1) = self.grid.range(&lo, &hi);
        with_marks(|marks| {
            marks.begin(self.triangles.len());
            for iy in y0..=y1 {
                for ix in x0..=x1 {
                    for &t in self.grid.cell_items(ix, iy) {
                        if marks.first(t) {
                            let (a, b) = &self.boxes[t as usize];
                            if a[0] <= hi[0] && b[0] >= lo[0] && a[1] <= hi[1] && b[1] >= lo[1] {
                                out.push(t);
                            }
                        }
                    }
                }
            }
        });
        out.sort_unstable();
    }

    /// [`TinCollider::query_xy`] for a box of lowest point `lo[2]`, less the triangles it
    /// cannot come within `tol` of: those under it by more than `tol / n_z`. Every point of
    /// such a triangle is more than `tol` below the box, and a point of the box over it is
    /// more than `tol` from its plane (its height h above the plane gives a distance
    /// h n_z).
    pub fn query_near(&self, lo: [f64; 3], hi: [f64; 3], tol: f64, out: &mut Vec<u32>) {
        self.query_xy([lo[0], lo[1]], [hi[0], hi[1]], out);
        out.retain(|&t| {
            let below = lo[2] - self.tops[t as usize];
            below <= 0.0 || below * self.normals[t as usize].z <= tol
        });
    }

    /// [`TinCollider::query_near`] for a box inside a larger one whose answer is
    /// `candidates`: those of them that the box's own query keeps, in the same order. Both
    /// tests of a triangle (its xy box meets the box's; it is not more than `tol / n_z`
    /// under the box's lowest point) can only fail more for a smaller box, so the box's
    /// answer is within the larger one's.
    pub fn query_near_within(
        &self,
        candidates: &[u32],
        lo: [f64; 3],
        hi: [f64; 3],
        tol: f64,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        if !self.grid.overlaps(&[lo[0], lo[1]], &[hi[0], hi[1]]) {
            return;
        }
        out.extend(candidates.iter().copied().filter(|&t| {
            let (a, b) = &self.boxes[t as usize];
            let below = lo[2] - self.tops[t as usize];
            a[0] <= hi[0]
                && b[0] >= lo[0]
                && a[1] <= hi[1]
                && b[1] >= lo[1]
                && (below <= 0.0 || below * self.normals[t as usize].z <= tol)
        }));
    }

    /// Barycentric xy coordinates of (x, y) in triangle `t` (None if its xy area is zero).
    pub fn barycentric_xy(&self, t: u32, x: f64, y: f64) -> Option<[f64; 3]> {
        let [a, b, c] = self.triangle(t);
        let det = (b.x - a.x) * (c.y - a.y) - (c.x - a.x) * (b.y - a.y);
        if det == 0.0 {
            return None;
        }
        let l1 = ((x - a.x) * (c.y - a.y) - (c.x - a.x) * (y - a.y)) / det;
        let l2 = ((b.x - a.x) * (y - a.y) - (x - a.x) * (b.y - a.y)) / det;
        Some([1.0 - l1 - l2, l1, l2])
    }

    /// Whether the xy point lies in triangle `t` (closed, with a relative slack of 1e-12).
    pub fn triangle_contains_xy(&self, t: u32, x: f64, y: f64) -> bool {
        const SLACK: f64 = 1e-12;
        // Quick rejection by the bounding box (most calls: a box corner against the
        // triangles near the box), the same answer as the barycentric test's.
        let (lo, hi) = &self.boxes[t as usize];
        let m = self.box_margin;
        if x < lo[0] - m || x > hi[0] + m || y < lo[1] - m || y > hi[1] + m {
            return false;
        }
        self.barycentric_xy(t, x, y).is_some_and(|l| l.iter().all(|&c| c >= -SLACK))
    }

    /// Height of the terrain at (x, y) (the highest triangle containing it), or None
    /// outside the TIN.
    pub fn height_at(&self, x: f64, y: f64) -> Option<f64> {
        if !(self.grid.overlaps(&[x, y], &[x, y])) {
            return None;
        }
        let (ix, iy) = (self.grid.coord(x, 0), self.grid.coord(y, 1));
        let mut best: Option<f64> = None;
        for &t in self.grid.cell_items(ix, iy) {
            if self.triangle_contains_xy(t, x, y) {
                let [a, _, _] = self.triangle(t);
                let n = self.normals[t as usize];
                let z = a.z - (n.x * (x - a.x) + n.y * (y - a.y)) / n.z;
                best = Some(best.map_or(z, |b: f64| b.max(z)));
            }
        }
        best
    }

    /// Whether (x, y) lies over the TIN.
    pub fn contains_xy(&self, x: f64, y: f64) -> bool {
        self.height_at(x, y).is_some()
    }
}

/// Everything static the blocks can hit.
#[derive(Debug, Clone, Default)]
pub struct Statics {
    /// The terrain, if any.
    pub tin: Option<TinCollider>,
    /// Planes (ground, slopes, walls).
    pub planes: Vec<Plane>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// First visits are told apart within a pass, every pass starts afresh, and a mark
    /// left 2³² passes ago does not pass for one of the new pass when the epoch wraps.
    #[test]
    fn marks_tell_first_visits_in_each_pass_and_across_the_epochs_wrap() {
        let mut m = Marks { epoch: 0, mark: Vec::new() };
        m.begin(3);
        assert!(m.first(2) && !m.first(2) && m.first(0) && !m.first(0));
        m.begin(5);
        assert!(m.first(2) && m.first(4) && !m.first(4));
        // Index 0 marked in pass 1, long ago; the epoch about to wrap back to 1.
        let mut m = Marks { epoch: u32::MAX, mark: vec![1, u32::MAX, 0] };
        m.begin(3);
        assert!(m.first(0), "a mark of the epoch before the wrap");
        assert!(m.first(1) && m.first(2) && !m.first(0));
    }
}
