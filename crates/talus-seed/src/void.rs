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

/// Largest height of the TIN over every cell of the void's grid (NaN where the TIN does
/// not reach the cell): the maximum of a piecewise-linear surface over a square is
/// attained at a vertex of the square ∩ triangle polygons, so each triangle is clipped
/// to each cell it overlaps (Sutherland-Hodgman) and its plane evaluated at the clipped
/// polygon's vertices.
pub fn tin_max_per_cell(grid: &GridGeometry, tin: &talus_terrain::Tin) -> Vec<f64> {
    let g = grid;
    let mut top = vec![f64::NAN; g.nx * g.ny];
    for t in 0..tin.triangles.len() {
        let tri: Vec<[f64; 2]> =
            (0..3).map(|k| [tin.vertex(t, k)[0], tin.vertex(t, k)[1]]).collect();
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for p in &tri {
            lo = [lo[0].min(p[0]), lo[1].min(p[1])];
            hi = [hi[0].max(p[0]), hi[1].max(p[1])];
        }
        let c0 = ((lo[0] - g.x0) / g.cell).floor().max(0.0);
        let c1 = ((hi[0] - g.x0) / g.cell).floor().min(g.nx as f64 - 1.0);
        let r0 = ((lo[1] - g.y0) / g.cell).floor().max(0.0);
        let r1 = ((hi[1] - g.y0) / g.cell).floor().min(g.ny as f64 - 1.0);
        if c1 < c0 || r1 < r0 {
            continue;
        }
        for r in r0 as usize..=r1 as usize {
            for c in c0 as usize..=c1 as usize {
                let (x0, y0) = (g.x0 + c as f64 * g.cell, g.y0 + r as f64 * g.cell);
                let poly = clip_to_box(&tri, [x0, y0], [x0 + g.cell, y0 + g.cell]);
                for p in &poly {
                    let z = tin.plane_z(t, p[0], p[1]);
                    let m = &mut top[r * g.nx + c];
                    if m.is_nan() || z > *m {
                        *m = z;
                    }
                }
            }
        }
    }
    top
}

/// Sutherland-Hodgman clipping of a convex polygon to the box [lo, hi].
fn clip_to_box(poly: &[[f64; 2]], lo: [f64; 2], hi: [f64; 2]) -> Vec<[f64; 2]> {
    let mut out = poly.to_vec();
    // (axis, bound, keep the side where coordinate >= bound?)
    for (axis, bound, above) in
        [(0, lo[0], true), (0, hi[0], false), (1, lo[1], true), (1, hi[1], false)]
    {
        if out.is_empty() {
            break;
        }
        let inside = |p: &[f64; 2]| if above { p[axis] >= bound } else { p[axis] <= bound };
        let input = std::mem::take(&mut out);
        for k in 0..input.len() {
            let (a, b) = (input[k], input[(k + 1) % input.len()]);
            let (ia, ib) = (inside(&a), inside(&b));
            if ia {
                out.push(a);
            }
            if ia != ib {
                let t = (bound - a[axis]) / (b[axis] - a[axis]);
                let mut p = [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])];
                p[axis] = bound;
                out.push(p);
            }
        }
    }
    out
}

impl Void {
    /// Raise the post-event surface of every fillable cell to the largest height of `tin`
    /// over the cell, so that a block standing on the column floor cannot reach into the
    /// terrain the simulation uses. Returns the number of cells raised.
    pub fn raise_to_tin(&mut self, tin: &talus_terrain::Tin) -> usize {
        let top = tin_max_per_cell(&self.grid, tin);
        let mut raised = 0;
        for (i, t) in top.into_iter().enumerate() {
            if self.fillable[i] && t > self.z_post[i] {
                self.z_post[i] = t;
                raised += 1;
            }
        }
        raised
    }
}
