//! The volume to fill: the DEM-of-difference grid read as cell-constant columns.
//!
//! Cell (row, col) covers `[x0 + col·cell, x0 + (col+1)·cell] × [y0 + row·cell, ...]`;
//! inside it the post-event surface is the constant `z_post` and the pre-event surface the
//! constant `z_pre` (the values the diff stage computed for the cell). With this
//! interpretation the void is a union of vertical prisms, its volume is exactly
//! `Σ (z_pre − z_post)⁺ · cell²` over the scar's cells (the diff's own loss volume), and
//! "a block lies in the void" is checked exactly: every cell its footprint touches is a
//! scar cell, the block's bottom is above the highest `z_post` and its top below the
//! lowest `z_pre` of those cells. With `min_inside` = f < 1 the top may rise to the
//! [`effective_ceiling`] instead: the block keeps at least the fraction f of its height
//! below `z_pre` on average over those cells.

use serde::{Deserialize, Serialize};
pub use talus_io::geo::Outline;

/// Grid geometry as stored under `talus_schema::diff::GRID_KEY`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GridGeometry {
    pub x0: f64,
    pub y0: f64,
    pub cell: f64,
    pub nx: usize,
    pub ny: usize,
}

/// The void between the surfaces, restricted to the scar.
#[derive(Debug, Clone, PartialEq)]
pub struct Void {
    pub grid: GridGeometry,
    /// Pre-event (upper) surface per cell, row-major (`row * nx + col`), m.
    pub z_pre: Vec<f64>,
    /// Post-event (lower) surface per cell, m.
    pub z_post: Vec<f64>,
    /// Cells that may hold rock: inside the scar with both surfaces known.
    pub fillable: Vec<bool>,
}

/// Footprint statistics over the cells a footprint touches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    /// Highest post-event surface under the footprint, m.
    pub floor: f64,
    /// Highest top of a block of height c over the footprint that keeps at least the
    /// fraction `min_inside` of its volume below the pre-event surface (see
    /// [`effective_ceiling`]); with `min_inside = 1`, the lowest pre-event surface over
    /// the footprint, m.
    pub ceiling: f64,
}

/// The highest top T of a block of height `c` over cells of pre-event heights `z_pre`
/// (each cell weighted equally) such that the fraction of the block below the pre-event
/// surface, `φ(T) = (1/n) Σ_i clamp(z_i − (T − c), 0, c) / c`, is at least `min_inside`.
/// φ is continuous and non-increasing, φ(min z) = 1 and φ(max z + c) = 0, so T is found
/// by bisection; `min_inside = 1` gives `min z` exactly.
pub fn effective_ceiling(z_pre: &[f64], c: f64, min_inside: f64) -> f64 {
    let lo_z = z_pre.iter().copied().fold(f64::INFINITY, f64::min);
    if min_inside >= 1.0 || z_pre.is_empty() {
        return lo_z;
    }
    let hi_z = z_pre.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let phi = |t: f64| {
        z_pre.iter().map(|z| (z - (t - c)).clamp(0.0, c)).sum::<f64>() / (z_pre.len() as f64 * c)
    };
    let (mut lo, mut hi) = (lo_z, hi_z + c);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if phi(mid) >= min_inside { lo = mid } else { hi = mid }
    }
    lo
}

impl Void {
    /// Centre of cell (row, col).
    pub fn centre(&self, row: usize, col: usize) -> [f64; 2] {
        let g = &self.grid;
        [g.x0 + (col as f64 + 0.5) * g.cell, g.y0 + (row as f64 + 0.5) * g.cell]
    }

    /// A void on `grid` with no surface known and no cell fillable.
    pub fn empty(grid: GridGeometry) -> Void {
        let n = grid.nx * grid.ny;
        Void { grid, z_pre: vec![f64::NAN; n], z_post: vec![f64::NAN; n], fillable: vec![false; n] }
    }

    /// The same void on cells `k` times smaller: each sub-cell keeps its cell's surfaces
    /// (so what fits is unchanged) and is fillable when its centre is inside `outline`
    /// (or its cell was, without an outline). A column of blocks then raises only the
    /// sub-cells it covers, leaving the rest of a cell to smaller classes.
    pub fn subdivided(&self, k: usize, outline: Option<&Outline>) -> Void {
        let k = k.max(1);
        let g = self.grid;
        let grid = GridGeometry {
            x0: g.x0,
            y0: g.y0,
            cell: g.cell / k as f64,
            nx: g.nx * k,
            ny: g.ny * k,
        };
        let mut v = Void::empty(grid);
        for r in 0..grid.ny {
            for c in 0..grid.nx {
                let (i, p) = (r * grid.nx + c, (r / k) * g.nx + c / k);
                v.z_pre[i] = self.z_pre[p];
                v.z_post[i] = self.z_post[p];
                let m = v.centre(r, c);
                v.fillable[i] = self.z_pre[p].is_finite()
                    && self.z_post[p].is_finite()
                    && outline.map_or(self.fillable[p], |o| o.contains(m[0], m[1], 0.0));
            }
        }
        v
    }

    /// Thickness of cell `i` (negative when the surfaces cross).
    pub fn thickness(&self, i: usize) -> f64 {
        self.z_pre[i] - self.z_post[i]
    }

    /// Volume to fill: `Σ (z_pre − z_post)⁺ · cell²` over fillable cells, m³.
    pub fn volume(&self) -> f64 {
        let a = self.grid.cell * self.grid.cell;
        (0..self.fillable.len())
            .filter(|&i| self.fillable[i])
            .map(|i| self.thickness(i).max(0.0) * a)
            .sum()
    }

    /// Fillable cells where the post-event surface is above the pre-event one.
    pub fn crossing_cells(&self) -> usize {
        (0..self.fillable.len()).filter(|&i| self.fillable[i] && self.thickness(i) < 0.0).count()
    }

    /// The column under a rectangle of centre `c` (x, y), unit axes `e1`, `e2` and half
    /// sizes `h` (m), shrunk by `tol` so that rectangles sharing a cell edge do not touch
    /// the neighbouring cell, for blocks of height `height` that keep at least the
    /// fraction `min_inside` of their volume in the void. `None` when it touches a cell
    /// that is not fillable or lies off the grid.
    #[allow(clippy::too_many_arguments)]
    pub fn column(
        &self,
        c: [f64; 2],
        e1: [f64; 2],
        e2: [f64; 2],
        h: [f64; 2],
        tol: f64,
        height: f64,
        min_inside: f64,
    ) -> Option<Column> {
        let g = &self.grid;
        let (h1, h2) = (h[0] - tol, h[1] - tol);
        let ex = h1 * e1[0].abs() + h2 * e2[0].abs();
        let ey = h1 * e1[1].abs() + h2 * e2[1].abs();
        let c0 = ((c[0] - ex - g.x0) / g.cell).floor();
        let c1 = ((c[0] + ex - g.x0) / g.cell).floor();
        let r0 = ((c[1] - ey - g.y0) / g.cell).floor();
        let r1 = ((c[1] + ey - g.y0) / g.cell).floor();
        if c0 < 0.0 || r0 < 0.0 || c1 >= g.nx as f64 || r1 >= g.ny as f64 {
            return None;
        }
        let half = 0.5 * g.cell;
        // Half-extent of a cell along e1 and e2 (for the separating-axis test).
        let s1 = half * (e1[0].abs() + e1[1].abs());
        let s2 = half * (e2[0].abs() + e2[1].abs());
        let mut floor = f64::NEG_INFINITY;
        let mut tops = Vec::new();
        let axis_aligned = e1[0].abs() == 1.0 || e1[1].abs() == 1.0;
        for row in r0 as usize..=r1 as usize {
            for cc in c0 as usize..=c1 as usize {
                let m = self.centre(row, cc);
                if !axis_aligned {
                    // Separating axes of a square and a rectangle: x, y (covered by the
                    // bounding box), e1, e2.
                    let d = [m[0] - c[0], m[1] - c[1]];
                    if (d[0] * e1[0] + d[1] * e1[1]).abs() >= h1 + s1
                        || (d[0] * e2[0] + d[1] * e2[1]).abs() >= h2 + s2
                    {
                        continue;
                    }
                }
                let i = row * g.nx + cc;
                if !self.fillable[i] {
                    return None;
                }
                floor = floor.max(self.z_post[i]);
                tops.push(self.z_pre[i]);
            }
        }
        Some(Column { floor, ceiling: effective_ceiling(&tops, height, min_inside) })
    }
}

/// Mean horizontal direction the post-event surface faces inside the fillable cells:
/// the mean of the horizontal parts of the unit upward normals
/// `n = (−∂z/∂x, −∂z/∂y, 1)/‖·‖` (central differences of `z_post`). Returns the azimuth
/// (radians, counter-clockwise from east) and the length of the mean horizontal normal
/// (0 for a flat floor, → 1 for a vertical face).
pub fn facing_azimuth(v: &Void) -> (f64, f64) {
    let g = &v.grid;
    let (mut sx, mut sy, mut n) = (0.0, 0.0, 0usize);
    let at = |r: usize, c: usize| v.z_post[r * g.nx + c];
    for r in 1..g.ny.saturating_sub(1) {
        for c in 1..g.nx.saturating_sub(1) {
            if !v.fillable[r * g.nx + c] {
                continue;
            }
            let zx = (at(r, c + 1) - at(r, c - 1)) / (2.0 * g.cell);
            let zy = (at(r + 1, c) - at(r - 1, c)) / (2.0 * g.cell);
            if !(zx.is_finite() && zy.is_finite()) {
                continue;
            }
            let norm = (1.0 + zx * zx + zy * zy).sqrt();
            sx -= zx / norm;
            sy -= zy / norm;
            n += 1;
        }
    }
    if n == 0 {
        return (0.0, 0.0);
    }
    let (mx, my) = (sx / n as f64, sy / n as f64);
    (my.atan2(mx), (mx * mx + my * my).sqrt())
}

/// The post-event TIN as a floor: the largest height of the TIN over a block's footprint.
/// The maximum of a piecewise-linear surface over a convex polygon is attained at a
/// vertex of one of the (triangle ∩ polygon) polygons, so each triangle near the
/// footprint is clipped to it (Sutherland-Hodgman) and its plane evaluated at the clipped
/// polygon's vertices: exact, not sampled.
#[derive(Debug, Clone)]
pub struct TinFloor {
    tin: talus_terrain::Tin,
    index: TriangleBuckets,
}

impl TinFloor {
    /// Index the triangles of `tin` in square buckets of about `bucket` m.
    pub fn new(tin: talus_terrain::Tin, bucket: f64) -> Self {
        let boxes: Vec<_> =
            (0..tin.triangles.len()).map(|t| xy_bounds((0..3).map(|k| tin.vertex(t, k)))).collect();
        let index = TriangleBuckets::new(&boxes, bucket);
        TinFloor { tin, index }
    }

    /// The TIN's triangles (world coordinates).
    pub(crate) fn triangles(&self) -> impl Iterator<Item = [[f64; 3]; 3]> + '_ {
        (0..self.tin.triangles.len())
            .map(|t| [*self.tin.vertex(t, 0), *self.tin.vertex(t, 1), *self.tin.vertex(t, 2)])
    }

    /// Largest TIN height over the rectangle of centre `c`, unit axes `e1`, `e2` and half
    /// sizes `h` (m); `None` where the TIN does not reach the rectangle.
    pub fn max_over(&self, c: [f64; 2], e1: [f64; 2], e2: [f64; 2], h: [f64; 2]) -> Option<f64> {
        let corner = |s1: f64, s2: f64| {
            [
                c[0] + s1 * h[0] * e1[0] + s2 * h[1] * e2[0],
                c[1] + s1 * h[0] * e1[1] + s2 * h[1] * e2[1],
            ]
        };
        let rect = [corner(-1.0, -1.0), corner(1.0, -1.0), corner(1.0, 1.0), corner(-1.0, 1.0)];
        let ex = h[0] * e1[0].abs() + h[1] * e2[0].abs();
        let ey = h[0] * e1[1].abs() + h[1] * e2[1].abs();
        let mut top: Option<f64> = None;
        for t in self.index.near([c[0] - ex, c[1] - ey], [c[0] + ex, c[1] + ey]) {
            let t = t as usize;
            let tri: Vec<[f64; 2]> =
                (0..3).map(|k| [self.tin.vertex(t, k)[0], self.tin.vertex(t, k)[1]]).collect();
            for p in clip_convex(&tri, &rect) {
                let z = self.tin.plane_z(t, p[0], p[1]);
                top = Some(top.map_or(z, |m: f64| m.max(z)));
            }
        }
        top
    }
}

/// The (x, y) bounding box of some points.
pub(crate) fn xy_bounds<'a>(
    points: impl IntoIterator<Item = &'a [f64; 3]>,
) -> ([f64; 2], [f64; 2]) {
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for p in points {
        lo = [lo[0].min(p[0]), lo[1].min(p[1])];
        hi = [hi[0].max(p[0]), hi[1].max(p[1])];
    }
    (lo, hi)
}

/// Triangles indexed by the square buckets of (x, y) that their bounding boxes meet.
#[derive(Debug, Clone)]
pub(crate) struct TriangleBuckets {
    origin: [f64; 2],
    bucket: f64,
    nx: usize,
    ny: usize,
    /// Triangles whose bounding box meets each bucket (row-major).
    lists: Vec<Vec<u32>>,
}

impl TriangleBuckets {
    /// Index triangles by their bounding boxes `boxes` (lower, upper corner) in square
    /// buckets of about `bucket` m.
    pub(crate) fn new(boxes: &[([f64; 2], [f64; 2])], bucket: f64) -> Self {
        let bucket = bucket.max(1e-3);
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for (a, b) in boxes {
            lo = [lo[0].min(a[0]), lo[1].min(a[1])];
            hi = [hi[0].max(b[0]), hi[1].max(b[1])];
        }
        if boxes.is_empty() {
            return TriangleBuckets { origin: [0.0; 2], bucket, nx: 0, ny: 0, lists: Vec::new() };
        }
        let nx = (((hi[0] - lo[0]) / bucket).floor() as usize + 1).max(1);
        let ny = (((hi[1] - lo[1]) / bucket).floor() as usize + 1).max(1);
        let mut lists = vec![Vec::new(); nx * ny];
        for (t, (a, b)) in boxes.iter().enumerate() {
            let (c0, c1) = (((a[0] - lo[0]) / bucket) as usize, ((b[0] - lo[0]) / bucket) as usize);
            let (r0, r1) = (((a[1] - lo[1]) / bucket) as usize, ((b[1] - lo[1]) / bucket) as usize);
            for r in r0..=r1.min(ny - 1) {
                for c in c0..=c1.min(nx - 1) {
                    lists[r * nx + c].push(t as u32);
                }
            }
        }
        TriangleBuckets { origin: lo, bucket, nx, ny, lists }
    }

    /// The triangles in the buckets that the box [lo, hi] meets, each once, ascending
    /// (a superset of those whose bounding box meets it).
    pub(crate) fn near(&self, lo: [f64; 2], hi: [f64; 2]) -> Vec<u32> {
        if self.nx == 0 || hi[0] < self.origin[0] || hi[1] < self.origin[1] {
            return Vec::new();
        }
        let cell = |v: f64, o: f64, n: usize| {
            ((v - o) / self.bucket).floor().clamp(0.0, n as f64 - 1.0) as usize
        };
        let (c0, c1) = (cell(lo[0], self.origin[0], self.nx), cell(hi[0], self.origin[0], self.nx));
        let (r0, r1) = (cell(lo[1], self.origin[1], self.ny), cell(hi[1], self.origin[1], self.ny));
        let mut out = Vec::new();
        for r in r0..=r1 {
            for c in c0..=c1 {
                out.extend_from_slice(&self.lists[r * self.nx + c]);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Sutherland-Hodgman clipping of a convex polygon by a counter-clockwise convex polygon.
pub(crate) fn clip_convex(poly: &[[f64; 2]], clip: &[[f64; 2]; 4]) -> Vec<[f64; 2]> {
    let mut out = poly.to_vec();
    for k in 0..clip.len() {
        if out.is_empty() {
            break;
        }
        let (a, b) = (clip[k], clip[(k + 1) % clip.len()]);
        // Signed distance (scaled) to the left of a → b: inside when >= 0.
        let side = |p: &[f64; 2]| (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]);
        let input = std::mem::take(&mut out);
        for i in 0..input.len() {
            let (p, q) = (input[i], input[(i + 1) % input.len()]);
            let (sp, sq) = (side(&p), side(&q));
            if sp >= 0.0 {
                out.push(p);
            }
            if (sp >= 0.0) != (sq >= 0.0) {
                let t = sp / (sp - sq);
                out.push([p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])]);
            }
        }
    }
    out
}
