//! The volume to fill: the DEM-of-difference grid read as cell-constant columns.
//!
//! Cell (row, col) covers `[x0 + col·cell, x0 + (col+1)·cell] × [y0 + row·cell, ...]`;
//! inside it the post-event surface is the constant `z_post` and the pre-event surface the
//! constant `z_pre` (the values the diff stage computed for the cell). With this
//! interpretation the void is a union of vertical prisms, its volume is exactly
//! `Σ (z_pre − z_post)⁺ · cell²` over the scar's cells (the diff's own loss volume), and
//! "a block lies in the void" is checked exactly: every cell its footprint touches is a
//! scar cell, the block's bottom is above the highest `z_post` and its top below the
//! lowest `z_pre` of those cells.

use serde::{Deserialize, Serialize};

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
    /// Lowest pre-event surface over the footprint, m.
    pub ceiling: f64,
}

impl Void {
    /// Centre of cell (row, col).
    pub fn centre(&self, row: usize, col: usize) -> [f64; 2] {
        let g = &self.grid;
        [g.x0 + (col as f64 + 0.5) * g.cell, g.y0 + (row as f64 + 0.5) * g.cell]
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
    /// the neighbouring cell. `None` when it touches a cell that is not fillable or lies
    /// off the grid.
    pub fn column(
        &self,
        c: [f64; 2],
        e1: [f64; 2],
        e2: [f64; 2],
        h: [f64; 2],
        tol: f64,
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
        let mut col = Column { floor: f64::NEG_INFINITY, ceiling: f64::INFINITY };
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
                col.floor = col.floor.max(self.z_post[i]);
                col.ceiling = col.ceiling.min(self.z_pre[i]);
            }
        }
        Some(col)
    }
}

/// Scar outlines with a row-banded edge index for fast point-in-polygon queries.
#[derive(Debug, Clone)]
pub struct Outline {
    edges: Vec<[f64; 4]>,
    y0: f64,
    band: f64,
    bands: Vec<Vec<u32>>,
}

impl Outline {
    /// Index the rings of `polygons` (every ring of every polygon; even-odd rule, so holes
    /// are holes) in bands of height `band` (m).
    pub fn new(polygons: &[Vec<Vec<[f64; 2]>>], band: f64) -> Self {
        let mut edges = Vec::new();
        for ring in polygons.iter().flatten() {
            for w in ring.windows(2) {
                edges.push([w[0][0], w[0][1], w[1][0], w[1][1]]);
            }
            if let (Some(f), Some(l)) = (ring.first(), ring.last())
                && f != l
            {
                edges.push([l[0], l[1], f[0], f[1]]);
            }
        }
        let y0 = edges.iter().map(|e| e[1].min(e[3])).fold(f64::INFINITY, f64::min);
        let y1 = edges.iter().map(|e| e[1].max(e[3])).fold(f64::NEG_INFINITY, f64::max);
        let n = if edges.is_empty() { 0 } else { ((y1 - y0) / band).floor() as usize + 1 };
        let mut bands = vec![Vec::new(); n];
        for (i, e) in edges.iter().enumerate() {
            let b0 = ((e[1].min(e[3]) - y0) / band).floor() as usize;
            let b1 = (((e[1].max(e[3]) - y0) / band).floor() as usize).min(n - 1);
            for b in bands.iter_mut().take(b1 + 1).skip(b0) {
                b.push(i as u32);
            }
        }
        Outline { edges, y0, band, bands }
    }

    fn band_of(&self, y: f64) -> Option<usize> {
        let b = ((y - self.y0) / self.band).floor();
        (b >= 0.0 && (b as usize) < self.bands.len()).then_some(b as usize)
    }

    /// Even-odd point-in-polygon; points within `tol` (m) of an edge count as inside.
    pub fn contains(&self, x: f64, y: f64, tol: f64) -> bool {
        let mut inside = false;
        if let Some(b) = self.band_of(y) {
            for &i in &self.bands[b] {
                let [ax, ay, bx, by] = self.edges[i as usize];
                if (ay > y) != (by > y) && x < ax + (y - ay) * (bx - ax) / (by - ay) {
                    inside = !inside;
                }
            }
        }
        if inside || tol <= 0.0 {
            return inside;
        }
        let lo = self.band_of(y - tol).unwrap_or(0);
        let hi = self.band_of(y + tol).unwrap_or(self.bands.len().saturating_sub(1));
        (lo..=hi.min(self.bands.len().saturating_sub(1))).flat_map(|b| &self.bands[b]).any(|&i| {
            let [ax, ay, bx, by] = self.edges[i as usize];
            let (dx, dy) = (bx - ax, by - ay);
            let l2 = dx * dx + dy * dy;
            let t =
                if l2 > 0.0 { (((x - ax) * dx + (y - ay) * dy) / l2).clamp(0.0, 1.0) } else { 0.0 };
            (ax + t * dx - x).powi(2) + (ay + t * dy - y).powi(2) <= tol * tol
        })
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
    origin: [f64; 2],
    bucket: f64,
    nx: usize,
    ny: usize,
    /// Triangles whose bounding box meets each bucket (row-major).
    buckets: Vec<Vec<u32>>,
}

impl TinFloor {
    /// Index the triangles of `tin` in square buckets of about `bucket` m.
    pub fn new(tin: talus_terrain::Tin, bucket: f64) -> Self {
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for v in &tin.vertices {
            lo = [lo[0].min(v[0]), lo[1].min(v[1])];
            hi = [hi[0].max(v[0]), hi[1].max(v[1])];
        }
        let bucket = bucket.max(1e-3);
        let nx = (((hi[0] - lo[0]) / bucket).floor() as usize + 1).max(1);
        let ny = (((hi[1] - lo[1]) / bucket).floor() as usize + 1).max(1);
        let mut buckets = vec![Vec::new(); nx * ny];
        for t in 0..tin.triangles.len() {
            let (mut a, mut b) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
            for k in 0..3 {
                let v = tin.vertex(t, k);
                a = [a[0].min(v[0]), a[1].min(v[1])];
                b = [b[0].max(v[0]), b[1].max(v[1])];
            }
            let (c0, c1) = (((a[0] - lo[0]) / bucket) as usize, ((b[0] - lo[0]) / bucket) as usize);
            let (r0, r1) = (((a[1] - lo[1]) / bucket) as usize, ((b[1] - lo[1]) / bucket) as usize);
            for r in r0..=r1.min(ny - 1) {
                for c in c0..=c1.min(nx - 1) {
                    buckets[r * nx + c].push(t as u32);
                }
            }
        }
        TinFloor { tin, origin: lo, bucket, nx, ny, buckets }
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
        let cell = |v: f64, o: f64, n: usize| {
            ((v - o) / self.bucket).floor().clamp(0.0, n as f64 - 1.0) as usize
        };
        if c[0] + ex < self.origin[0] || c[1] + ey < self.origin[1] {
            return None;
        }
        let (c0, c1) =
            (cell(c[0] - ex, self.origin[0], self.nx), cell(c[0] + ex, self.origin[0], self.nx));
        let (r0, r1) =
            (cell(c[1] - ey, self.origin[1], self.ny), cell(c[1] + ey, self.origin[1], self.ny));
        let mut seen = std::collections::HashSet::new();
        let mut top: Option<f64> = None;
        for r in r0..=r1 {
            for cc in c0..=c1 {
                for &t in &self.buckets[r * self.nx + cc] {
                    if !seen.insert(t) {
                        continue;
                    }
                    let t = t as usize;
                    let tri: Vec<[f64; 2]> = (0..3)
                        .map(|k| [self.tin.vertex(t, k)[0], self.tin.vertex(t, k)[1]])
                        .collect();
                    for p in clip_convex(&tri, &rect) {
                        let z = self.tin.plane_z(t, p[0], p[1]);
                        top = Some(top.map_or(z, |m: f64| m.max(z)));
                    }
                }
            }
        }
        top
    }
}

/// Sutherland-Hodgman clipping of a convex polygon by a counter-clockwise convex polygon.
fn clip_convex(poly: &[[f64; 2]], clip: &[[f64; 2]; 4]) -> Vec<[f64; 2]> {
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
