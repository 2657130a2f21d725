//! Paving in the frame of the scar's floor (`orientation = "scar_floor"`).
//!
//! On a steep scar, upright blocks waste most of the void: a column's floor is the
//! highest point of the post-event surface under its footprint, which on a 48° slope is
//! 11 m above the lowest point for a 10 m footprint. Rock that failed along a plane lies
//! in slabs parallel to it, so here the blocks lie in the frame of the plane fitted (least
//! squares, z = αx + βy + γ) to the post-event surface in the scar:
//!
//! * e₃ is the plane's upward unit normal, e₁ its horizontal strike (e₃ × e₁ points up the
//!   dip), e₂ = e₃ × e₁; edge a lies along e₁, b along e₂, c along e₃;
//! * local coordinates are (u, v, w) = (e₁, e₂, e₃) · (p − o), o a point of the plane.
//!
//! Both surfaces are taken as piecewise-linear between the DoD's cell centres (two
//! triangles per square of four centres with both surfaces known), which on a slope is
//! what the survey's points describe (cell-constant columns are a staircase whose steps
//! are as tall as a cell's drop). The void is then resampled on a grid of square cells in
//! (u, v), each a column [floor, ceiling] in w:
//!
//! * floor: the largest w of the post-event surface (and of the terrain TIN, when given)
//!   over the cell, exact (each triangle is clipped to the cell and its plane evaluated
//!   at the clipped polygon's vertices);
//! * ceiling: the smallest w of the pre-event surface over the cell, exact likewise;
//! * a cell is fillable when both surfaces cover it wholly, floor < ceiling, and the four
//!   corners of its column at the floor and at the ceiling lie inside the scar outline
//!   (within [`crate::pack::TOL`], as the upright paving's corners).
//!
//! A block over cells with w from the largest floor to the smallest ceiling meets neither
//! surface: within its prism (its rectangle × all w) every post-event point lies below it
//! and every pre-event point above it, so it is wholly inside the void (the argument needs
//! both surfaces to be graphs over (u, v) only where they meet the prism; their points
//! are bounded in w, and e₃ points up). The paving of [`crate::pack`] is run unchanged on
//! this grid (azimuth 0, so a block's edges follow u, v, w) and the blocks are turned
//! back to the world frame.

use crate::boxes::Block;
use crate::void::{GridGeometry, Outline, TinFloor, TriangleBuckets, Void, clip_convex, xy_bounds};
use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};
use rayon::prelude::*;

/// The frame of the scar's floor plane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// Rows e₁, e₂, e₃ (local from world).
    pub axes: Matrix3<f64>,
    /// A point of the plane (world), m.
    pub origin: Vector3<f64>,
}

impl Frame {
    /// The least-squares plane z = αx + βy + γ through the post-event surface at the
    /// centres of the fillable cells; `None` with fewer than three cells or a singular fit.
    pub fn fit(void: &Void) -> Option<Frame> {
        let g = void.grid;
        let mut pts = Vec::new();
        for r in 0..g.ny {
            for c in 0..g.nx {
                let i = r * g.nx + c;
                if void.fillable[i] && void.z_post[i].is_finite() {
                    let m = void.centre(r, c);
                    pts.push([m[0], m[1], void.z_post[i]]);
                }
            }
        }
        if pts.len() < 3 {
            return None;
        }
        let n = pts.len() as f64;
        let mean = |k: usize| pts.iter().map(|p| p[k]).sum::<f64>() / n;
        let (mx, my, mz) = (mean(0), mean(1), mean(2));
        let (mut a11, mut a12, mut a22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for p in &pts {
            let (dx, dy, dz) = (p[0] - mx, p[1] - my, p[2] - mz);
            a11 += dx * dx;
            a12 += dx * dy;
            a22 += dy * dy;
            b1 += dx * dz;
            b2 += dy * dz;
        }
        let det = a11 * a22 - a12 * a12;
        if det.is_nan() || det.abs() <= 1e-12 * (a11 * a22).max(f64::MIN_POSITIVE) {
            return None;
        }
        let alpha = (a22 * b1 - a12 * b2) / det;
        let beta = (a11 * b2 - a12 * b1) / det;
        Some(Frame::from_normal(Vector3::new(-alpha, -beta, 1.0), Vector3::new(mx, my, mz)))
    }

    /// The frame of a plane of upward normal `normal` through `origin`.
    pub fn from_normal(normal: Vector3<f64>, origin: Vector3<f64>) -> Frame {
        let e3 = normal.normalize();
        let strike = Vector3::z().cross(&e3);
        let e1 = if strike.norm() < 1e-9 { Vector3::x() } else { strike.normalize() };
        let e2 = e3.cross(&e1);
        Frame {
            axes: Matrix3::from_rows(&[e1.transpose(), e2.transpose(), e3.transpose()]),
            origin,
        }
    }

    /// Local (u, v, w) of a world point.
    pub fn local(&self, p: [f64; 3]) -> [f64; 3] {
        (self.axes * (Vector3::from(p) - self.origin)).into()
    }

    /// World point of local (u, v, w).
    pub fn world(&self, q: [f64; 3]) -> [f64; 3] {
        (self.axes.transpose() * Vector3::from(q) + self.origin).into()
    }

    /// The plane's dip (degrees from horizontal) and dip direction (degrees clockwise
    /// from north, the direction the plane faces downhill).
    pub fn dip(&self) -> (f64, f64) {
        let e3: Vector3<f64> = self.axes.row(2).transpose();
        let dip = e3.z.clamp(-1.0, 1.0).acos().to_degrees();
        let dir = e3.x.atan2(e3.y).to_degrees().rem_euclid(360.0);
        (dip, dir)
    }

    /// Direction of e₁ (edge a), radians counter-clockwise from east.
    pub fn strike_azimuth(&self) -> f64 {
        self.axes[(0, 1)].atan2(self.axes[(0, 0)])
    }

    /// Body-to-world rotation of a block whose edges follow (u, v, w).
    pub fn rotation(&self) -> UnitQuaternion<f64> {
        UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(
            self.axes.transpose(),
        ))
    }
}

/// Triangles in local coordinates, bucketed on (u, v) for queries over rectangles.
#[derive(Debug, Clone)]
pub struct Surface {
    triangles: Vec<[[f64; 3]; 3]>,
    index: TriangleBuckets,
}

impl Surface {
    /// Index `triangles` (local coordinates) in square buckets of about `bucket` m.
    pub fn new(triangles: Vec<[[f64; 3]; 3]>, bucket: f64) -> Surface {
        let boxes: Vec<_> = triangles.iter().map(xy_bounds).collect();
        let index = TriangleBuckets::new(&boxes, bucket);
        Surface { triangles, index }
    }

    /// The surface between the centres of the cells of `grid` where `z` is finite, in
    /// the frame: two triangles per square of four such centres.
    pub fn from_grid(grid: GridGeometry, z: &[f64], frame: &Frame) -> Surface {
        let mut tris = Vec::new();
        let at = |r: usize, c: usize| {
            let z = z[r * grid.nx + c];
            z.is_finite().then(|| {
                frame.local([
                    grid.x0 + (c as f64 + 0.5) * grid.cell,
                    grid.y0 + (r as f64 + 0.5) * grid.cell,
                    z,
                ])
            })
        };
        for r in 0..grid.ny.saturating_sub(1) {
            for c in 0..grid.nx.saturating_sub(1) {
                if let (Some(p00), Some(p10), Some(p01), Some(p11)) =
                    (at(r, c), at(r, c + 1), at(r + 1, c), at(r + 1, c + 1))
                {
                    tris.push([p00, p10, p11]);
                    tris.push([p00, p11, p01]);
                }
            }
        }
        Surface::new(tris, 2.0 * grid.cell)
    }

    /// The largest (`max`) or smallest w of the surface over the rectangle
    /// [lo, hi] in (u, v), and the area of the rectangle the triangles cover (a sum over
    /// triangles: a surface folded over itself counts twice). `None` where no triangle
    /// meets the rectangle.
    pub fn extreme_over(&self, lo: [f64; 2], hi: [f64; 2], max: bool) -> Option<(f64, f64)> {
        let mut best: Option<f64> = None;
        let mut area = 0.0;
        let better = |a: f64, b: f64| if max { a.max(b) } else { a.min(b) };
        let rect = [lo, [hi[0], lo[1]], hi, [lo[0], hi[1]]];
        for k in self.index.near(lo, hi) {
            let t = &self.triangles[k as usize];
            let (a, b) = xy_bounds(t);
            if a[0] > hi[0] || b[0] < lo[0] || a[1] > hi[1] || b[1] < lo[1] {
                continue;
            }
            let det = (t[1][0] - t[0][0]) * (t[2][1] - t[0][1])
                - (t[2][0] - t[0][0]) * (t[1][1] - t[0][1]);
            let tri = [[t[0][0], t[0][1]], [t[1][0], t[1][1]], [t[2][0], t[2][1]]];
            let poly = clip_convex(&tri, &rect);
            if poly.len() < 3 {
                continue;
            }
            let scale = (b[0] - a[0]).max(b[1] - a[1]).max(1e-12);
            if det.abs() <= 1e-9 * scale * scale {
                // Seen edge-on: its plane is not a function of (u, v); take its
                // vertices' extreme (conservative).
                for p in t {
                    best = Some(best.map_or(p[2], |m| better(m, p[2])));
                }
                continue;
            }
            area += polygon_area(&poly);
            for p in &poly {
                let w = plane_w(t, det, p[0], p[1]);
                best = Some(best.map_or(w, |m| better(m, w)));
            }
        }
        best.map(|b| (b, area))
    }
}

/// w of the triangle's plane at (u, v); `det` is twice its signed projected area.
fn plane_w(t: &[[f64; 3]; 3], det: f64, u: f64, v: f64) -> f64 {
    let [a, b, c] = t;
    let l1 = ((u - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (v - a[1])) / det;
    let l2 = ((b[0] - a[0]) * (v - a[1]) - (u - a[0]) * (b[1] - a[1])) / det;
    a[2] + l1 * (b[2] - a[2]) + l2 * (c[2] - a[2])
}

fn polygon_area(p: &[[f64; 2]]) -> f64 {
    let mut s = 0.0;
    for i in 0..p.len() {
        let (a, b) = (p[i], p[(i + 1) % p.len()]);
        s += a[0] * b[1] - b[0] * a[1];
    }
    0.5 * s.abs()
}

/// The void resampled in the frame, ready for [`crate::pack::pave`] (azimuth 0).
#[derive(Debug, Clone)]
pub struct TiltedVoid {
    pub frame: Frame,
    /// Columns on square cells in (u, v): `z_post` is the floor and `z_pre` the ceiling,
    /// both in w.
    pub void: Void,
}

impl TiltedVoid {
    /// Resample `void` (the DoD's surfaces; its fillable cells say where the scar is) on
    /// cells of `cell` m in the frame of its floor plane, every column also above the
    /// terrain TIN `terrain` and inside `outline`. `None` when no plane can be fitted.
    pub fn new(
        void: &Void,
        outline: Option<&Outline>,
        terrain: Option<&TinFloor>,
        cell: f64,
    ) -> Option<TiltedVoid> {
        let frame = Frame::fit(void)?;
        let g = void.grid;
        let post = Surface::from_grid(g, &void.z_post, &frame);
        let pre = Surface::from_grid(g, &void.z_pre, &frame);
        let tin = terrain.map(|floor| {
            let local: Vec<[[f64; 3]; 3]> = floor
                .triangles()
                .map(|t| [frame.local(t[0]), frame.local(t[1]), frame.local(t[2])])
                .collect();
            Surface::new(local, 10.0)
        });
        // Extent in (u, v) of the scar's columns.
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for r in 0..g.ny {
            for c in 0..g.nx {
                let i = r * g.nx + c;
                if !void.fillable[i] {
                    continue;
                }
                for (dx, dy) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)] {
                    let (x, y) = (g.x0 + (c as f64 + dx) * g.cell, g.y0 + (r as f64 + dy) * g.cell);
                    for z in [void.z_pre[i], void.z_post[i]] {
                        let q = frame.local([x, y, z]);
                        lo = [lo[0].min(q[0]), lo[1].min(q[1])];
                        hi = [hi[0].max(q[0]), hi[1].max(q[1])];
                    }
                }
            }
        }
        if !(lo[0].is_finite() && hi[0].is_finite()) {
            return None;
        }
        let nx = ((hi[0] - lo[0]) / cell).ceil() as usize + 1;
        let ny = ((hi[1] - lo[1]) / cell).ceil() as usize + 1;
        let grid = GridGeometry { x0: lo[0], y0: lo[1], cell, nx, ny };
        let cells: Vec<(f64, f64, bool)> = (0..nx * ny)
            .into_par_iter()
            .map(|i| {
                let (r, c) = (i / nx, i % nx);
                let a = [grid.x0 + c as f64 * cell, grid.y0 + r as f64 * cell];
                let b = [a[0] + cell, a[1] + cell];
                let full = cell * cell * (1.0 - 1e-9);
                let Some((mut floor, cover_post)) = post.extreme_over(a, b, true) else {
                    return (f64::NAN, f64::NAN, false);
                };
                let Some((ceiling, cover_pre)) = pre.extreme_over(a, b, false) else {
                    return (f64::NAN, f64::NAN, false);
                };
                if let Some((top, _)) = tin.as_ref().and_then(|t| t.extreme_over(a, b, true)) {
                    floor = floor.max(top);
                }
                let mut ok = cover_post >= full && cover_pre >= full && floor < ceiling;
                if ok && let Some(o) = outline {
                    ok = [floor, ceiling].iter().all(|&w| {
                        [(a[0], a[1]), (b[0], a[1]), (a[0], b[1]), (b[0], b[1])].iter().all(
                            |&(u, v)| {
                                let p = frame.world([u, v, w]);
                                o.contains(p[0], p[1], crate::pack::TOL)
                            },
                        )
                    });
                }
                (ceiling, floor, ok)
            })
            .collect();
        let mut tv = Void::empty(grid);
        for (i, (ceiling, floor, ok)) in cells.into_iter().enumerate() {
            tv.z_pre[i] = ceiling;
            tv.z_post[i] = floor;
            tv.fillable[i] = ok;
        }
        Some(TiltedVoid { frame, void: tv })
    }

    /// A block paved in the frame, turned to the world frame.
    pub fn to_world(&self, b: &Block) -> Block {
        let mut out = b.clone();
        out.centre = self.frame.world(b.centre);
        out.orientation = self.frame.rotation() * b.orientation;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane_void(slope: f64, thickness: f64) -> Void {
        // z_post = slope · y, z_pre = z_post + thickness / cos θ (a slab of normal
        // thickness `thickness`), on 40 × 40 cells of 2 m, all fillable.
        let grid = GridGeometry { x0: 0.0, y0: 0.0, cell: 2.0, nx: 40, ny: 40 };
        let mut v = Void::empty(grid);
        let cos = 1.0 / (1.0 + slope * slope).sqrt();
        for r in 0..grid.ny {
            for c in 0..grid.nx {
                let i = r * grid.nx + c;
                let y = v.centre(r, c)[1];
                v.z_post[i] = slope * y;
                v.z_pre[i] = slope * y + thickness / cos;
                v.fillable[i] = true;
            }
        }
        v
    }

    #[test]
    fn the_frame_of_a_plane_has_its_dip_and_strike() {
        let v = plane_void(1.0, 5.0);
        let f = Frame::fit(&v).unwrap();
        let (dip, dir) = f.dip();
        assert!((dip - 45.0).abs() < 1e-9, "{dip}");
        // The surface rises to the north, so it faces (dips towards) the south.
        assert!((dir - 180.0).abs() < 1e-9, "{dir}");
        // Orthonormal and right-handed.
        let r = f.axes;
        assert!((r * r.transpose() - Matrix3::identity()).norm() < 1e-12);
        assert!((r.determinant() - 1.0).abs() < 1e-12);
        // Round trip.
        let p = [3.0, -4.0, 7.5];
        let q = f.world(f.local(p));
        assert!((0..3).all(|k| (p[k] - q[k]).abs() < 1e-12));
    }

    #[test]
    fn a_slab_on_a_slope_resamples_to_its_normal_thickness() {
        // A slab 6 m thick on a 45° slope: in the frame every inner column is 6 m tall.
        let v = plane_void(1.0, 6.0);
        let t = TiltedVoid::new(&v, None, None, 1.0).unwrap();
        let inner: Vec<usize> =
            (0..t.void.fillable.len()).filter(|&i| t.void.fillable[i]).collect();
        assert!(inner.len() > 1000, "{}", inner.len());
        for &i in &inner {
            let h = t.void.z_pre[i] - t.void.z_post[i];
            assert!((h - 6.0).abs() < 1e-9, "column {i}: {h}");
        }
    }

    #[test]
    fn clipped_extremes_are_exact_on_a_tilted_triangle() {
        // w = u + 2v over the triangle (0,0), (4,0), (0,4); over [1,2] × [1,2] the max is
        // at (2, 2) (inside the triangle: 2 + 2 ≤ 4): 6; the min at (1, 1): 3.
        let tri = [[0.0, 0.0, 0.0], [4.0, 0.0, 4.0], [0.0, 4.0, 8.0]];
        let s = Surface::new(vec![tri], 1.0);
        let (mx, area) = s.extreme_over([1.0, 1.0], [2.0, 2.0], true).unwrap();
        assert!((mx - 6.0).abs() < 1e-12 && (area - 1.0).abs() < 1e-12);
        let (mn, _) = s.extreme_over([1.0, 1.0], [2.0, 2.0], false).unwrap();
        assert!((mn - 3.0).abs() < 1e-12);
        // [1,3] × [1,3] is half outside (u + v ≤ 4): covered area 2, the max at (1, 3).
        let (mx, area) = s.extreme_over([1.0, 1.0], [3.0, 3.0], true).unwrap();
        assert!((area - 2.0).abs() < 1e-12, "{area}");
        assert!((mx - 7.0).abs() < 1e-12, "{mx}");
    }
}
