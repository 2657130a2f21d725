//! Narrow phase: contact points between a box and a box, a plane or terrain triangles.
//!
//! Every function reports [`Touch`]es: a point, a unit normal and a signed gap (negative =
//! penetration), for all features closer than the tolerance `tol` (gap ≤ tol), so resting
//! contacts are kept whatever the velocities. Conventions per pair:
//!
//! * **box–box** ([`box_box`]): normals point **from box B into box A**. The pair is first
//!   tested on the 15 separating axes (3 + 3 face normals, 9 edge×edge directions); if it
//!   is separated by more than `tol` there is no contact. Otherwise the axis of least
//!   penetration (largest separation) decides the kind of contact:
//!   - a face axis ("face of least penetration"): the face of the other box most opposed to
//!     it (the incident face) is clipped against the side planes of the reference face; each
//!     clipped corner within `tol` of the reference face is a contact, with the reference
//!     face normal and the corner's signed distance to the reference face as gap. The point is
//!     midway between the corner and its projection on the reference face (so it does not
//!     depend on which box is the reference when both faces tie). A corner of one box inside
//!     the other gives a contact at that vertex (moved by gap/2); a face resting on a face
//!     gives the 4 corners of the overlap polygon (at most 4 points are kept: the deepest,
//!     then those spanning the largest area);
//!   - an edge×edge axis (chosen only when clearly better than every face axis, and
//!     more than about 10° from the best of them: nearer, it is that face seen past a
//!     slight tilt of a long box, and its one point would let the box pivot): one
//!     contact at the midpoint of the shortest segment between the two supporting edges
//!     (the midpoint of their crossing), normal = the edges' cross product, gap = the
//!     separation along it.
//! * **box–plane** ([`box_plane`]): every corner within `tol` of the plane, at the corner,
//!   normal = the plane normal (from the plane into the box), gap = signed distance.
//! * **box–terrain** ([`box_tin`]): normals point **from the terrain into the box**.
//!   - a box corner whose xy lies in a triangle (its vertical prism) and within `tol` of
//!     the triangle's plane (and not deeper than the box diagonal): contact at the corner
//!     with the triangle normal (up); one contact per corner, against the triangle giving the
//!     least penetration (so a corner on a shared edge of a flat TIN is counted once and a
//!     box on a flat TIN gets exactly the contacts it would get on the plane);
//!   - a sharp terrain vertex (end of a ridge or border edge) inside or within `tol` of the
//!     box: contact at the vertex, normal = minus the outward normal of the box face of
//!     least penetration (or from the vertex to the closest box point when outside);
//!   - a sharp terrain edge crossing the box (clipped against the box grown by `tol`): the
//!     clipped segment is tested against the box on the 3 face axes and the 3 box edge ×
//!     segment axes, each turned from the box's centre towards the segment; the axis of
//!     least penetration decides (an edge axis only when clearly better, as for two boxes):
//!     - a face: contacts at the ends of the segment where the edge leaves the box through
//!       the sides of that face (not where the edge merely rises out of the tolerance
//!       layer), gap = each end's signed distance to that face. A ridge under a box face
//!       thus gives a line contact by its two ends. An end at a terrain vertex is a contact
//!       too, once per vertex and face, unless the vertex's own contact is already against
//!       that face: a ridge that ends inside the box close to one face and dives out
//!       through a side at the level of another is deep along the latter at its vertex,
//!       which its vertex contact (against the near face) does not say;
//!     - an edge (a ridge crossing a box edge, as under a block resting on its edge): one
//!       contact at the midpoint of the closest points of the ridge and that box edge,
//!       normal = their cross product, gap = minus the penetration along it. A face's
//!       normal there would let the box sink across the ridge unopposed.

use nalgebra::{Matrix3, Vector3};

use crate::body::Block;
use crate::geometry::colliders::{Plane, TinCollider, with_marks};

type V3 = Vector3<f64>;

/// One contact point found by the narrow phase (see the module documentation for the
/// direction of `normal`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Touch {
    /// Contact point (world), m.
    pub point: V3,
    /// Unit normal.
    pub normal: V3,
    /// Signed gap, m (negative = penetration).
    pub gap: f64,
}

/// An oriented box: centre, axes (columns of the rotation), half extents.
#[derive(Debug, Clone, Copy)]
pub struct Obb {
    pub c: V3,
    pub r: Matrix3<f64>,
    pub h: V3,
}

impl Obb {
    pub fn of(b: &Block) -> Obb {
        Obb { c: b.pos, r: *b.rot.to_rotation_matrix().matrix(), h: b.half }
    }

    fn axis(&self, k: usize) -> V3 {
        self.r.column(k).into_owned()
    }

    /// Half length of the box's projection on the unit direction `l`.
    fn radius(&self, l: &V3) -> f64 {
        (0..3).map(|k| self.h[k] * self.axis(k).dot(l).abs()).sum()
    }

    fn local(&self, p: &V3) -> V3 {
        self.r.tr_mul(&(p - self.c))
    }

    fn world(&self, q: &V3) -> V3 {
        self.c + self.r * q
    }

    /// Largest half extent (scale for relative epsilons).
    fn scale(&self) -> f64 {
        self.h.max()
    }
}

/// Face axes must beat edge axes by this relative margin to be replaced by them.
const EDGE_BIAS_REL: f64 = 0.05;
/// An edge axis is used only when it is farther than about 10° (cos 10° = 0.985) from the
/// best face axis.
const EDGE_FACE_COS: f64 = 0.985;
/// Edge×edge directions shorter than this (near-parallel edges) are not tested; the face
/// axes cover those configurations.
const MIN_CROSS: f64 = 1e-6;

/// Separation of the two boxes along unit axis `l` (SAT; negative = overlap).
fn separation(a: &Obb, b: &Obb, l: &V3) -> f64 {
    (b.c - a.c).dot(l).abs() - a.radius(l) - b.radius(l)
}

/// The largest separation of two boxes over the 15 SAT axes: positive means disjoint,
/// negative is minus the smallest overlap depth.
pub fn sat_separation(a: &Obb, b: &Obb) -> f64 {
    let mut best = f64::NEG_INFINITY;
    for k in 0..3 {
        best = best.max(separation(a, b, &a.axis(k))).max(separation(a, b, &b.axis(k)));
        for l in 0..3 {
            let c = a.axis(k).cross(&b.axis(l));
            let n = c.norm();
            if n > MIN_CROSS {
                best = best.max(separation(a, b, &(c / n)));
            }
        }
    }
    best
}

/// Contacts between boxes `a` and `b`; normals from `b` into `a` (see module docs).
pub fn box_box(a: &Obb, b: &Obb, tol: f64, out: &mut Vec<Touch>) {
    // SAT with the axes' mutual cosines r[i][j] = a_i·b_j computed once (Gottschalk).
    let ax = [a.axis(0), a.axis(1), a.axis(2)];
    let bx = [b.axis(0), b.axis(1), b.axis(2)];
    let r: [[f64; 3]; 3] = std::array::from_fn(|i| std::array::from_fn(|j| ax[i].dot(&bx[j])));
    let t = b.c - a.c;
    let ta = [t.dot(&ax[0]), t.dot(&ax[1]), t.dot(&ax[2])];
    let tb = [t.dot(&bx[0]), t.dot(&bx[1]), t.dot(&bx[2])];
    // Best face axis: (separation, reference box is `a`?, axis index).
    let mut face = (f64::NEG_INFINITY, true, 0usize);
    for i in 0..3 {
        let rb: f64 = (0..3).map(|j| b.h[j] * r[i][j].abs()).sum();
        let s = ta[i].abs() - a.h[i] - rb;
        if s > face.0 {
            face = (s, true, i);
        }
    }
    for j in 0..3 {
        let ra: f64 = (0..3).map(|i| a.h[i] * r[i][j].abs()).sum();
        let s = tb[j].abs() - ra - b.h[j];
        if s > face.0 {
            face = (s, false, j);
        }
    }
    if face.0 > tol {
        return;
    }
    let mut edge = (f64::NEG_INFINITY, 0usize, 0usize, V3::zeros());
    for i in 0..3 {
        let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
        for j in 0..3 {
            let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
            let c = ax[i].cross(&bx[j]);
            let n = c.norm();
            if n > MIN_CROSS {
                // |a_k·(a_i×b_j)| and |b_k·(a_i×b_j)| from the cosines.
                let ra = a.h[i1] * r[i2][j].abs() + a.h[i2] * r[i1][j].abs();
                let rb = b.h[j1] * r[i][j2].abs() + b.h[j2] * r[i][j1].abs();
                let s = (t.dot(&c).abs() - ra - rb) / n;
                if s > edge.0 {
                    edge = (s, i, j, c / n);
                }
            }
        }
    }
    if edge.0 > tol {
        return;
    }
    let eps = 1e-9 * a.scale().max(b.scale());
    let start = out.len();
    // An edge axis within a few degrees of the best face axis is that face seen past a
    // slight tilt of one box: its smaller depth comes from the tilt times a long box's
    // length, and its one contact point would let the box pivot about it. The face's
    // clipped polygon holds the contact by its corners instead.
    if edge.0 > face.0 + EDGE_BIAS_REL * face.0.abs() + eps
        && edge.3.dot(if face.1 { &ax[face.2] } else { &bx[face.2] }).abs() < EDGE_FACE_COS
    {
        edge_contact(a, b, edge.1, edge.2, edge.3, edge.0, out);
    } else {
        let (reference, incident) = if face.1 { (a, b) } else { (b, a) };
        face_contacts(reference, incident, face.2, tol, out);
        if face.1 {
            // Normals point from the reference box `a` toward `b`: turn them from b into a.
            for t in &mut out[start..] {
                t.normal = -t.normal;
            }
        }
    }
}

/// Face contact: reference box `rf` with face axis `k`; normals from `rf` toward `inc`.
fn face_contacts(rf: &Obb, inc: &Obb, k: usize, tol: f64, out: &mut Vec<Touch>) {
    let t = inc.c - rf.c;
    let axis = rf.axis(k);
    let sign = if t.dot(&axis) >= 0.0 { 1.0 } else { -1.0 };
    let n = axis * sign;
    // Incident face: the face of `inc` whose outward normal is most opposed to n.
    let l = (0..3)
        .max_by(|&p, &q| inc.axis(p).dot(&n).abs().total_cmp(&inc.axis(q).dot(&n).abs()))
        .unwrap_or(0);
    let m = inc.axis(l) * -(inc.axis(l).dot(&n)).signum();
    let fc = inc.c + m * inc.h[l];
    let (u, v) =
        (inc.axis((l + 1) % 3) * inc.h[(l + 1) % 3], inc.axis((l + 2) % 3) * inc.h[(l + 2) % 3]);
    let mut poly: Vec<V3> =
        [fc + u + v, fc - u + v, fc - u - v, fc + u - v].iter().map(|p| rf.local(p)).collect();
    let eps = 1e-9 * rf.scale().max(inc.scale());
    for axis_i in [(k + 1) % 3, (k + 2) % 3] {
        for side in [1.0, -1.0] {
            poly = clip(&poly, axis_i, side, rf.h[axis_i]);
            if poly.is_empty() {
                return;
            }
        }
    }
    let mut pts: Vec<(V3, f64)> = Vec::with_capacity(poly.len());
    for q in poly {
        let gap = sign * q[k] - rf.h[k];
        if gap <= tol && !pts.iter().any(|(p, _): &(V3, f64)| (p - q).norm() <= eps) {
            pts.push((q, gap));
        }
    }
    for (q, gap) in reduce(pts, &V3::ith(k, 1.0)) {
        // Midway between the incident point and its projection on the reference face.
        out.push(Touch { point: rf.world(&q) - n * (gap / 2.0), normal: n, gap });
    }
}

/// Sutherland–Hodgman: keeps the part of `poly` with side · q[axis] ≤ limit.
fn clip(poly: &[V3], axis: usize, side: f64, limit: f64) -> Vec<V3> {
    let mut out = Vec::with_capacity(poly.len() + 2);
    for (idx, p) in poly.iter().enumerate() {
        let q = &poly[(idx + 1) % poly.len()];
        let (dp, dq) = (side * p[axis] - limit, side * q[axis] - limit);
        if dp <= 0.0 {
            out.push(*p);
        }
        if (dp < 0.0 && dq > 0.0) || (dp > 0.0 && dq < 0.0) {
            out.push(p + (q - p) * (dp / (dp - dq)));
        }
    }
    out
}

/// Keeps at most 4 points: the deepest, the farthest from it, then the points adding the
/// most area to the hull (areas measured in the plane normal to `n`).
fn reduce(mut pts: Vec<(V3, f64)>, n: &V3) -> Vec<(V3, f64)> {
    if pts.len() <= 4 {
        return pts;
    }
    let mut keep = Vec::with_capacity(4);
    let take = |pts: &mut Vec<(V3, f64)>, score: &dyn Fn(&(V3, f64)) -> f64| {
        let best = (0..pts.len())
            .max_by(|&x, &y| score(&pts[x]).total_cmp(&score(&pts[y])).then(y.cmp(&x)))
            .unwrap();
        pts.remove(best)
    };
    let p0 = take(&mut pts, &|p| -p.1);
    keep.push(p0);
    let p1 = take(&mut pts, &|p| (p.0 - p0.0).norm_squared());
    keep.push(p1);
    let p2 = take(&mut pts, &|p| (p1.0 - p0.0).cross(&(p.0 - p0.0)).dot(n).abs());
    keep.push(p2);
    // Orient the triangle counter-clockwise about n, then add the point farthest outside it.
    let tri = if (p1.0 - p0.0).cross(&(p2.0 - p0.0)).dot(n) >= 0.0 {
        [p0.0, p1.0, p2.0]
    } else {
        [p0.0, p2.0, p1.0]
    };
    let p3 = take(&mut pts, &|p| {
        (0..3)
            .map(|e| {
                let (s, t) = (tri[e], tri[(e + 1) % 3]);
                -(t - s).cross(&(p.0 - s)).dot(n)
            })
            .fold(f64::NEG_INFINITY, f64::max)
    });
    keep.push(p3);
    keep
}

/// Edge×edge contact along unit axis `ax` = a_k × b_l, separation `sep`; normal from b into a.
fn edge_contact(a: &Obb, b: &Obb, k: usize, l: usize, ax: V3, sep: f64, out: &mut Vec<Touch>) {
    let n = if (a.c - b.c).dot(&ax) >= 0.0 { ax } else { -ax };
    // Supporting edge of a (parallel to a_k, extreme toward b = along −n).
    let mut pa = a.c;
    for m in 0..3 {
        if m != k {
            pa -= a.axis(m) * (a.h[m] * a.axis(m).dot(&n).signum());
        }
    }
    let mut pb = b.c;
    for m in 0..3 {
        if m != l {
            pb += b.axis(m) * (b.h[m] * b.axis(m).dot(&n).signum());
        }
    }
    let (da, db) = (a.axis(k), b.axis(l));
    // Closest points of the lines pa + s da, pb + t db, clamped to the edges.
    let r = pa - pb;
    let c = da.dot(&db);
    let denom = 1.0 - c * c;
    let (e, f) = (da.dot(&r), db.dot(&r));
    let (mut s, mut t) =
        if denom > 1e-12 { ((c * f - e) / denom, (f - c * e) / denom) } else { (0.0, f) };
    s = s.clamp(-a.h[k], a.h[k]);
    t = t.clamp(-b.h[l], b.h[l]);
    let point = (pa + da * s + pb + db * t) / 2.0;
    out.push(Touch { point, normal: n, gap: sep });
}

/// Contacts of a box with a plane: every corner with signed distance ≤ tol.
pub fn box_plane(b: &Block, plane: &Plane, tol: f64, out: &mut Vec<Touch>) {
    for p in b.corners() {
        let gap = plane.distance(&p);
        if gap <= tol {
            out.push(Touch { point: p, normal: plane.normal, gap });
        }
    }
}

/// Signed distance of a point given in box-local coordinates to the box, with the box
/// face (axis, side) of least penetration or the outward direction (local) when outside.
fn point_box(q: &V3, h: &V3) -> (f64, V3) {
    let d = q.abs() - h;
    if d.max() <= 0.0 {
        let k = d.imax();
        (d[k], V3::ith(k, q[k].signum_or_one()))
    } else {
        let outside = d.map(|x| x.max(0.0));
        let dir = outside.component_mul(&q.map(|x| x.signum_or_one()));
        let dist = dir.norm();
        (dist, dir / dist)
    }
}

trait SignumOrOne {
    fn signum_or_one(self) -> f64;
}
impl SignumOrOne for f64 {
    fn signum_or_one(self) -> f64 {
        if self < 0.0 { -1.0 } else { 1.0 }
    }
}

/// Contacts of a box with terrain triangles `tris` (ascending indices), as
/// (triangle, touch) with normals from the terrain into the box (see module docs).
pub fn box_tin(b: &Block, tin: &TinCollider, tris: &[u32], tol: f64, out: &mut Vec<(u32, Touch)>) {
    let o = Obb::of(b);
    let diag = 2.0 * b.half.norm();
    // (a) Box corners over a triangle.
    for p in b.corners() {
        let mut best: Option<(u32, f64)> = None;
        for &t in tris {
            if !tin.triangle_contains_xy(t, p.x, p.y) {
                continue;
            }
            let [v0, _, _] = tin.triangle(t);
            let s = tin.normal(t).dot(&(p - v0));
            if best.is_none_or(|(_, bs)| s > bs) {
                best = Some((t, s));
            }
        }
        if let Some((t, s)) = best
            && s <= tol
            && s >= -diag
        {
            out.push((t, Touch { point: p, normal: tin.normal(t), gap: s }));
        }
    }
    // (b) Sharp terrain vertices and (c) sharp edges, each once (lowest triangle).
    // `tris` ascends, so a vertex's first triangle is its lowest.
    debug_assert!(tris.windows(2).all(|w| w[0] < w[1]), "box_tin: triangles must ascend");
    let mut verts: Vec<(u32, u32)> = Vec::with_capacity(tris.len());
    let mut edges: Vec<u32> = Vec::with_capacity(tris.len());
    with_marks(|marks| {
        marks.begin(tin.n_vertices());
        for &t in tris {
            for v in tin.indices(t) {
                if tin.is_sharp_vertex(v) && marks.first(v) {
                    verts.push((v, t));
                }
            }
        }
        marks.begin(tin.n_edges());
        for &t in tris {
            for e in tin.triangle_edges(t) {
                if e != u32::MAX && tin.edge(e).sharp && marks.first(e) {
                    edges.push(e);
                }
            }
        }
    });
    verts.sort_unstable();
    edges.sort_unstable();
    for (v, t) in verts {
        let p = tin.vertices()[v as usize];
        let (gap, dir) = point_box(&o.local(&p), &o.h);
        if gap <= tol {
            out.push((t, Touch { point: p, normal: -(o.r * dir), gap }));
        }
    }
    let eps = 1e-9 * o.scale();
    let mut vertex_ends: Vec<(u32, usize, bool)> = Vec::new();
    for e in edges {
        let edge = tin.edge(e);
        let (p0, p1) = (tin.vertices()[edge.v[0] as usize], tin.vertices()[edge.v[1] as usize]);
        let (q0, q1) = (o.local(&p0), o.local(&p1));
        let Some((s0, s1, _, _)) = clip_segment(&q0, &q1, &o.h.add_scalar(tol)) else { continue };
        let at = |s: f64| q0 + (q1 - q0) * s;
        let (c0, c1) = (at(s0), at(s1));
        let mid = (c0 + c1) / 2.0;
        // SAT of the clipped segment against the box, each axis turned from the box's
        // centre towards the segment: the depth is how far the box must move against the
        // axis to clear the segment. Face axes first, then the three edge × segment axes.
        let depth =
            |n: &V3| (0..3).map(|m| o.h[m] * n[m].abs()).sum::<f64>() - c0.dot(n).min(c1.dot(n));
        let face_axis = |k: usize| {
            let mut n = V3::zeros();
            n[k] = mid[k].signum_or_one();
            n
        };
        let (k, face_depth) = (0..3)
            .map(|k| (k, depth(&face_axis(k))))
            .fold((0, f64::INFINITY), |b, x| if x.1 < b.1 { x } else { b });
        let d = q1 - q0;
        let mut edge_axis: Option<(usize, V3, f64)> = None;
        for i in 0..3 {
            let mut e_i = V3::zeros();
            e_i[i] = 1.0;
            let c = d.cross(&e_i);
            let len = c.norm();
            if len <= MIN_CROSS * d.norm() {
                continue;
            }
            let n = if mid.dot(&c) < 0.0 { -c / len } else { c / len };
            let dn = depth(&n);
            if edge_axis.is_none_or(|b| dn < b.2) {
                edge_axis = Some((i, n, dn));
            }
        }
        // As for two boxes, an edge axis must beat the faces by a margin.
        if let Some((i, n, dn)) = edge_axis
            && -dn > -face_depth + EDGE_BIAS_REL * face_depth.abs() + eps
        {
            if -dn <= tol {
                out.push((edge.triangle, segment_box_edge(&o, &c0, &c1, i, &n, dn)));
            }
            continue;
        }
        let side = mid[k].signum_or_one();
        let normal = -(o.axis(k) * side);
        // Ends where the edge leaves through a side of face k (not through the tolerance
        // layer over face k itself), and ends at a terrain vertex unless that vertex's own
        // contact is already against face k: a ridge that ends inside the box near another
        // face, and dives out through a side at face k's level, is deep along face k at its
        // vertex, and only there.
        let mut hk = o.h;
        hk[k] += tol;
        let Some((s0, s1, a0, a1)) = clip_segment(&q0, &q1, &hk) else { continue };
        let len = d.norm();
        // (Each vertex once per face: the ridge's other edges end there too.)
        let mut vertex_end = |v: u32, q: &V3| {
            let new = point_box(q, &o.h).1 != V3::ith(k, side)
                && !vertex_ends.contains(&(v, k, side > 0.0));
            if new {
                vertex_ends.push((v, k, side > 0.0));
            }
            new
        };
        let mut ends = vec![];
        if a0.map_or_else(|| vertex_end(edge.v[0], &at(s0)), |a| a != k) {
            ends.push(at(s0));
        }
        if a1.map_or_else(|| vertex_end(edge.v[1], &at(s1)), |a| a != k)
            && (ends.is_empty() || (s1 - s0) * len > eps)
        {
            ends.push(at(s1));
        }
        for q in ends {
            let gap = side * q[k] - o.h[k];
            if gap <= tol {
                out.push((edge.triangle, Touch { point: o.world(&q), normal, gap }));
            }
        }
    }
}

/// The contact of a terrain segment [c0, c1] (box frame) crossing the box edge parallel to
/// axis `i` on the side of the unit axis `n` (from the box's centre towards the segment),
/// `depth` deep along it: at the midpoint of the closest points of the segment and that
/// edge, normal −n (from the terrain into the box) in the world frame.
fn segment_box_edge(o: &Obb, c0: &V3, c1: &V3, i: usize, n: &V3, depth: f64) -> Touch {
    let mut pe = V3::zeros();
    for m in 0..3 {
        if m != i {
            pe[m] = o.h[m] * n[m].signum_or_one();
        }
    }
    let mut de = V3::zeros();
    de[i] = 1.0;
    // Closest points of c0 + s (c1 − c0), s ∈ [0, 1], and pe + t de, t ∈ [−h_i, h_i].
    let ds = c1 - c0;
    let r = c0 - pe;
    let (a, b, c) = (ds.dot(&ds), ds.dot(&de), ds.dot(&r));
    let f = de.dot(&r);
    let denom = a - b * b;
    let mut s = if denom > 1e-12 * a { ((b * f - c) / denom).clamp(0.0, 1.0) } else { 0.0 };
    let t = (b * s + f).clamp(-o.h[i], o.h[i]);
    if a > 0.0 {
        s = ((t * b - c) / a).clamp(0.0, 1.0);
    }
    let point = (c0 + ds * s + pe + de * t) / 2.0;
    Touch { point: o.world(&point), normal: -(o.r * n), gap: -depth }
}

/// Parameter interval [s0, s1] ⊂ [0, 1] of the segment q0→q1 inside the box |q| ≤ h,
/// with the axis whose slab sets each end (None: the end is the segment's own end).
fn clip_segment(q0: &V3, q1: &V3, h: &V3) -> Option<(f64, f64, Option<usize>, Option<usize>)> {
    let (mut s0, mut s1) = (0.0f64, 1.0f64);
    let (mut a0, mut a1) = (None, None);
    let d = q1 - q0;
    for k in 0..3 {
        if d[k] == 0.0 {
            if q0[k].abs() > h[k] {
                return None;
            }
            continue;
        }
        let (mut a, mut b) = ((-h[k] - q0[k]) / d[k], (h[k] - q0[k]) / d[k]);
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        if a > s0 {
            s0 = a;
            a0 = Some(k);
        }
        if b < s1 {
            s1 = b;
            a1 = Some(k);
        }
        if s0 > s1 {
            return None;
        }
    }
    Some((s0, s1, a0, a1))
}
