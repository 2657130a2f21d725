//! Contact detection: exact geometry, comparison with an independent separating-axis test,
//! TIN versus plane, order and thread independence, broad phase versus brute force.

use nalgebra::{UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use talus_engine::body::Block;
use talus_engine::geometry::broad::{self, Aabb};
use talus_engine::geometry::colliders::{ColliderError, Plane, Statics, TinCollider};
use talus_engine::geometry::contact::{Contact, Other};
use talus_engine::geometry::detect::{
    DetectParams, DetectTimings, detect, detect_again, detect_cached,
};

type V3 = Vector3<f64>;

const TOL: f64 = 1e-3;

fn v(x: f64, y: f64, z: f64) -> V3 {
    V3::new(x, y, z)
}

fn block(id: u32, size: [f64; 3], pos: V3, rot: UnitQuaternion<f64>) -> Block {
    Block::new(id, size[0], size[1], size[2], 2650.0, pos, rot)
}

fn run(blocks: &[Block], statics: &Statics) -> Vec<Contact> {
    let mut t = DetectTimings::default();
    detect(blocks, statics, &DetectParams { tolerance: TOL }, &mut t)
}

fn ground() -> Statics {
    Statics { tin: None, planes: vec![Plane::ground(0.0)] }
}

fn assert_close(a: &V3, b: &V3, eps: f64) {
    assert!((a - b).norm() <= eps, "{a:?} != {b:?}");
}

/// The contacts' points, sorted lexicographically.
fn points(cs: &[Contact]) -> Vec<V3> {
    let mut p: Vec<V3> = cs.iter().map(|c| c.point).collect();
    p.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)).then(a.z.total_cmp(&b.z)));
    p
}

fn same_points(a: &[V3], b: &[V3], eps: f64) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for p in a {
        assert!(b.iter().any(|q| (p - q).norm() <= eps), "{p:?} not in {b:?}");
    }
}

// ---------------------------------------------------------------- planes

#[test]
fn box_resting_flat_on_plane_has_its_four_bottom_corners() {
    let b = block(0, [2.0, 1.0, 0.5], v(3.0, -1.0, 0.25), UnitQuaternion::identity());
    let cs = run(std::slice::from_ref(&b), &ground());
    assert_eq!(cs.len(), 4);
    for c in &cs {
        assert_eq!(c.i, 0);
        assert_eq!(c.other, Other::Plane(0));
        assert!(c.gap.abs() < 1e-14);
        assert_close(&c.normal, &V3::z(), 0.0);
    }
    let expect: Vec<V3> = b.corners().into_iter().filter(|p| p.z < 0.1).collect();
    same_points(&points(&cs), &expect, 1e-14);
}

#[test]
fn penetrating_box_reports_minus_depth_and_hovering_box_none() {
    let d = 0.0123;
    let b = block(0, [2.0, 1.0, 0.5], v(0.0, 0.0, 0.25 - d), UnitQuaternion::identity());
    let cs = run(&[b], &ground());
    assert_eq!(cs.len(), 4);
    for c in &cs {
        assert!((c.gap + d).abs() < 1e-14, "gap {}", c.gap);
    }
    // Just above, beyond the tolerance: nothing.
    let b = block(0, [2.0, 1.0, 0.5], v(0.0, 0.0, 0.25 + 1.5 * TOL), UnitQuaternion::identity());
    assert!(run(&[b], &ground()).is_empty());
    // Above but within the tolerance: four contacts with positive gap.
    let b = block(0, [2.0, 1.0, 0.5], v(0.0, 0.0, 0.25 + 0.5 * TOL), UnitQuaternion::identity());
    let cs = run(&[b], &ground());
    assert_eq!(cs.len(), 4);
    assert!(cs.iter().all(|c| (c.gap - 0.5 * TOL).abs() < 1e-14));
}

#[test]
fn tilted_box_on_inclined_plane_touches_by_its_lowest_corner() {
    let n = v(0.2, -0.1, 1.0).normalize();
    let plane = Plane::new(v(1.0, 2.0, 3.0), n);
    let rot = UnitQuaternion::from_euler_angles(0.3, -0.5, 1.1);
    let mut b = block(0, [1.0, 2.0, 3.0], V3::zeros(), rot);
    // Put the lowest corner (along n) at depth d.
    let d = 0.004;
    let lowest = b.corners().into_iter().map(|p| plane.distance(&p)).fold(f64::INFINITY, f64::min);
    b.pos += n * (-lowest - d);
    let cs = run(&[b.clone()], &Statics { tin: None, planes: vec![plane] });
    assert_eq!(cs.len(), 1);
    assert!((cs[0].gap + d).abs() < 1e-12);
    assert_close(&cs[0].normal, &n, 1e-15);
}

// ---------------------------------------------------------------- box-box

#[test]
fn stacked_boxes_give_four_corners_with_normal_from_upper_into_lower() {
    let d = 0.002;
    let lower = block(7, [2.0, 2.0, 1.0], v(0.0, 0.0, 0.5), UnitQuaternion::identity());
    let upper = block(3, [1.0, 1.0, 1.0], v(0.2, -0.1, 1.5 - d), UnitQuaternion::identity());
    // Lower first: i = 0 is the lower block; the normal points from the upper into it (−z).
    let cs = run(&[lower.clone(), upper.clone()], &Statics::default());
    assert_eq!(cs.len(), 4, "{cs:?}");
    for c in &cs {
        assert_eq!((c.i, c.other), (0, Other::Block(1)));
        assert_close(&c.normal, &-V3::z(), 1e-15);
        assert!((c.gap + d).abs() < 1e-12);
    }
    // Midway between the upper block's bottom corners and the lower block's top face.
    let bottom: Vec<V3> = upper
        .corners()
        .into_iter()
        .filter(|p| p.z < 1.2)
        .map(|p| p + V3::z() * (d / 2.0))
        .collect();
    same_points(&points(&cs), &bottom, 1e-12);
    // Upper first: i = 0 is the upper block, normal from the lower into it (+z).
    let cs2 = run(&[upper, lower], &Statics::default());
    assert_eq!(cs2.len(), 4);
    for c in &cs2 {
        assert_eq!((c.i, c.other), (0, Other::Block(1)));
        assert_close(&c.normal, &V3::z(), 1e-15);
        assert!((c.gap + d).abs() < 1e-12);
    }
    same_points(&points(&cs2), &points(&cs), 0.0);
}

#[test]
fn identical_aligned_boxes_touching_face_to_face_use_the_shared_face() {
    // Corners coincide: every corner lies on three faces at once; the contact must still
    // be the four shared corners with the vertical normal, for a stack and a row.
    let s = [1.0, 1.0, 1.0];
    for (offset, normal) in [
        (v(0.0, 0.0, 1.0), V3::z()),
        (v(1.0, 0.0, 0.0), V3::x()),
        (v(0.0, 1.0 - 1e-4, 0.0), V3::y()),
    ] {
        let a = block(0, s, V3::zeros(), UnitQuaternion::identity());
        let b = block(1, s, offset, UnitQuaternion::identity());
        let cs = run(&[b, a], &Statics::default());
        assert_eq!(cs.len(), 4, "{offset:?}: {cs:?}");
        for c in &cs {
            assert_close(&c.normal, &normal, 1e-15);
            assert!(c.gap <= 0.0 && c.gap > -2e-4);
        }
    }
}

#[test]
fn crossing_edges_give_one_contact_at_the_crossing_midpoint() {
    let d = 0.003;
    let s = std::f64::consts::FRAC_1_SQRT_2;
    // Lower box: long along y, rotated 45° about y so that its top edge runs along y.
    let lower = block(
        0,
        [1.0, 4.0, 1.0],
        v(0.0, 0.0, 0.0),
        UnitQuaternion::from_euler_angles(0.0, std::f64::consts::FRAC_PI_4, 0.0),
    );
    // Upper box: long along x, rotated 45° about x so that its bottom edge runs along x.
    let upper = block(
        1,
        [4.0, 1.0, 1.0],
        v(0.0, 0.0, 2.0 * s - d),
        UnitQuaternion::from_euler_angles(std::f64::consts::FRAC_PI_4, 0.0, 0.0),
    );
    let cs = run(&[upper.clone(), lower.clone()], &Statics::default());
    assert_eq!(cs.len(), 1, "{cs:?}");
    let c = &cs[0];
    assert_eq!((c.i, c.other), (0, Other::Block(1)));
    assert!((c.gap + d).abs() < 1e-12, "gap {}", c.gap);
    // Edge cross product (x × y = z), pointing from the lower box into the upper one.
    assert_close(&c.normal, &V3::z(), 1e-12);
    assert_close(&c.point, &v(0.0, 0.0, s - d / 2.0), 1e-12);
    // And the other way round.
    let cs = run(&[lower, upper], &Statics::default());
    assert_eq!(cs.len(), 1);
    assert_close(&cs[0].normal, &-V3::z(), 1e-12);
    assert_close(&cs[0].point, &v(0.0, 0.0, s - d / 2.0), 1e-12);
}

/// Independent separating-axis computation: largest separation over the 15 axes.
fn sat(a: &Block, b: &Block) -> f64 {
    let ra = a.rot.to_rotation_matrix();
    let rb = b.rot.to_rotation_matrix();
    let ax: Vec<V3> = (0..3).map(|k| ra.matrix().column(k).into_owned()).collect();
    let bx: Vec<V3> = (0..3).map(|k| rb.matrix().column(k).into_owned()).collect();
    let mut axes: Vec<V3> = ax.iter().chain(bx.iter()).cloned().collect();
    for p in &ax {
        for q in &bx {
            let c = p.cross(q);
            if c.norm() > 1e-9 {
                axes.push(c.normalize());
            }
        }
    }
    // Project the corners.
    let (ca, cb) = (a.corners(), b.corners());
    axes.iter()
        .map(|l| {
            let pa: Vec<f64> = ca.iter().map(|p| p.dot(l)).collect();
            let pb: Vec<f64> = cb.iter().map(|p| p.dot(l)).collect();
            let (a0, a1) = (
                pa.iter().cloned().fold(f64::INFINITY, f64::min),
                pa.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            );
            let (b0, b1) = (
                pb.iter().cloned().fold(f64::INFINITY, f64::min),
                pb.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            );
            (b0 - a1).max(a0 - b1)
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

fn random_rot(rng: &mut ChaCha8Rng) -> UnitQuaternion<f64> {
    // Uniform on SO(3) (Shoemake).
    let (u1, u2, u3): (f64, f64, f64) = (rng.random(), rng.random(), rng.random());
    let tau = std::f64::consts::TAU;
    let q = nalgebra::Quaternion::new(
        (1.0 - u1).sqrt() * (tau * u2).sin(),
        (1.0 - u1).sqrt() * (tau * u2).cos(),
        u1.sqrt() * (tau * u3).sin(),
        u1.sqrt() * (tau * u3).cos(),
    );
    UnitQuaternion::from_quaternion(q)
}

#[test]
fn random_rotated_pairs_agree_with_the_separating_axis_theorem() {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let (mut overlapping, mut separate, mut near) = (0, 0, 0);
    for case in 0..4000 {
        let size =
            [rng.random_range(0.3..2.0), rng.random_range(0.3..2.0), rng.random_range(0.3..2.0)];
        let size2 =
            [rng.random_range(0.3..2.0), rng.random_range(0.3..2.0), rng.random_range(0.3..2.0)];
        let a = block(0, size, V3::zeros(), random_rot(&mut rng));
        let dir = v(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        )
        .normalize();
        let mut b = block(1, size2, dir * 1.5, random_rot(&mut rng));
        // Slide b along dir until the SAT separation is a chosen value around zero.
        let target = match case % 4 {
            0 => rng.random_range(-0.05..-1e-6),
            1 => rng.random_range(1e-6..TOL),
            2 => rng.random_range(TOL * 1.01..0.05),
            _ => rng.random_range(-0.3..-0.05),
        };
        let (mut lo, mut hi) = (0.0, 5.0);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            b.pos = dir * mid;
            if sat(&a, &b) < target { lo = mid } else { hi = mid }
        }
        b.pos = dir * hi;
        let s = sat(&a, &b);
        let cs = run(&[a.clone(), b.clone()], &Statics::default());
        let min_gap = cs.iter().map(|c| c.gap).fold(f64::INFINITY, f64::min);
        for c in &cs {
            assert!((c.normal.norm() - 1.0).abs() < 1e-12);
            assert!(c.gap <= TOL + 1e-12);
            assert_eq!((c.i, c.other), (0, Other::Block(1)));
        }
        if s < -1e-9 {
            overlapping += 1;
            assert!(min_gap < 0.0, "case {case}: SAT overlap {s} but contacts {cs:?}");
            // The normal pushes a away from b on average.
            let n: V3 = cs.iter().map(|c| c.normal).sum();
            assert!(n.dot(&(a.pos - b.pos)) > 0.0, "case {case}: normals {cs:?}");
        } else if s > 1e-9 {
            separate += 1;
            assert!(
                cs.iter().all(|c| c.gap >= -1e-9),
                "case {case}: SAT separation {s} but {cs:?}"
            );
            if s > TOL {
                assert!(cs.is_empty());
            } else {
                near += usize::from(!cs.is_empty());
            }
        }
    }
    assert!(overlapping > 1500 && separate > 1500 && near > 500, "{overlapping} {separate} {near}");
}

// ---------------------------------------------------------------- terrain

/// The triangles of an (n + 1) × (n + 1) grid of vertices numbered row by row, two per
/// square.
fn grid_triangles(n: usize) -> Vec<[u32; 3]> {
    let m = (n + 1) as u32;
    let mut tris = Vec::with_capacity(2 * n * n);
    for j in 0..n {
        for i in 0..n {
            let k = (j * (n + 1) + i) as u32;
            tris.push([k, k + 1, k + m + 1]);
            tris.push([k, k + m + 1, k + m]);
        }
    }
    tris
}

fn flat_tin(z: impl Fn(f64, f64) -> f64) -> TinCollider {
    let vs = vec![
        v(-10.0, -10.0, z(-10.0, -10.0)),
        v(10.0, -10.0, z(10.0, -10.0)),
        v(10.0, 10.0, z(10.0, 10.0)),
        v(-10.0, 10.0, z(-10.0, 10.0)),
    ];
    TinCollider::new(vs, vec![[0, 1, 2], [0, 2, 3]]).unwrap()
}

fn contact_set(cs: &[Contact]) -> Vec<(V3, V3, f64)> {
    let mut s: Vec<(V3, V3, f64)> = cs.iter().map(|c| (c.point, c.normal, c.gap)).collect();
    s.sort_by(|a, b| {
        a.0.x.total_cmp(&b.0.x).then(a.0.y.total_cmp(&b.0.y)).then(a.0.z.total_cmp(&b.0.z))
    });
    s
}

#[test]
fn box_on_a_two_triangle_tin_matches_the_plane() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let slope = |x: f64, y: f64| 0.3 * x - 0.2 * y + 1.0;
    let tin = flat_tin(slope);
    let plane = Plane::new(v(0.0, 0.0, 1.0), v(-0.3, 0.2, 1.0));
    let mut compared = 0;
    for _ in 0..200 {
        // Near the diagonal x = y so that corners fall on both triangles.
        let t = rng.random_range(-3.0..3.0);
        let mut b = block(
            0,
            [1.5, 1.0, 0.7],
            v(t, t + rng.random_range(-0.5..0.5), 0.0),
            random_rot(&mut rng),
        );
        let lowest =
            b.corners().into_iter().map(|p| plane.distance(&p)).fold(f64::INFINITY, f64::min);
        b.pos += plane.normal * (-lowest + rng.random_range(-0.01..0.002));
        let on_plane = run(&[b.clone()], &Statics { tin: None, planes: vec![plane.clone()] });
        let on_tin = run(&[b], &Statics { tin: Some(tin.clone()), planes: vec![] });
        assert!(on_tin.iter().all(|c| matches!(c.other, Other::Terrain(0 | 1))));
        let (p, q) = (contact_set(&on_plane), contact_set(&on_tin));
        assert_eq!(p.len(), q.len(), "{p:?}\n{q:?}");
        for (x, y) in p.iter().zip(&q) {
            assert_close(&x.0, &y.0, 0.0);
            assert_close(&x.1, &y.1, 1e-14);
            assert!((x.2 - y.2).abs() < 1e-12);
        }
        compared += p.len();
    }
    assert!(compared > 100, "{compared}");
    // And a box lying flat: its 4 bottom corners, exactly as on the plane z = 0.
    let tin = flat_tin(|_, _| 0.0);
    let b = block(
        0,
        [2.0, 1.0, 0.5],
        v(0.1, 0.2, 0.25),
        UnitQuaternion::from_euler_angles(0.0, 0.0, 0.4),
    );
    let cs = run(std::slice::from_ref(&b), &Statics { tin: Some(tin), planes: vec![] });
    let cp = run(&[b], &ground());
    assert_eq!(cs.len(), 4);
    assert_eq!(contact_set(&cs), contact_set(&cp));
}

/// A roof: a ridge along y at x = 0, z = 0, slopes of 1/2 on each side.
fn ridge() -> TinCollider {
    let vs = vec![
        v(-5.0, -5.0, -2.5),
        v(0.0, -5.0, 0.0),
        v(5.0, -5.0, -2.5),
        v(-5.0, 5.0, -2.5),
        v(0.0, 5.0, 0.0),
        v(5.0, 5.0, -2.5),
    ];
    TinCollider::new(vs, vec![[0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4]]).unwrap()
}

#[test]
fn box_lying_on_a_ridge_touches_along_the_ridge() {
    let tin = ridge();
    let d = 0.002;
    let b = block(0, [2.0, 2.0, 1.0], v(0.0, 0.3, 0.5 - d), UnitQuaternion::identity());
    let cs = run(&[b], &Statics { tin: Some(tin.clone()), planes: vec![] });
    assert_eq!(cs.len(), 2, "{cs:?}");
    same_points(&points(&cs), &[v(0.0, -0.7, 0.0), v(0.0, 1.3, 0.0)], 1e-12);
    for c in &cs {
        assert_eq!(c.other, Other::Terrain(0));
        assert_close(&c.normal, &V3::z(), 1e-12);
        assert!((c.gap + d).abs() < 1e-12);
    }
    // Turned about z: still two points on the ridge line where it leaves the box.
    let b = block(
        0,
        [2.0, 2.0, 1.0],
        v(0.0, 0.0, 0.5 - d),
        UnitQuaternion::from_euler_angles(0.0, 0.0, 0.5),
    );
    let cs = run(&[b], &Statics { tin: Some(tin.clone()), planes: vec![] });
    assert_eq!(cs.len(), 2, "{cs:?}");
    for c in &cs {
        assert!(c.point.x.abs() < 1e-12 && c.point.z.abs() < 1e-12);
        assert_close(&c.normal, &V3::z(), 1e-12);
        assert!((c.gap + d).abs() < 1e-12);
    }
    // Above the ridge beyond the tolerance: nothing.
    let b = block(0, [2.0, 2.0, 1.0], v(0.0, 0.0, 0.5 + 2.0 * TOL), UnitQuaternion::identity());
    assert!(run(&[b], &Statics { tin: Some(tin), planes: vec![] }).is_empty());
}

#[test]
fn box_edge_across_a_ridge_is_an_edge_contact() {
    // A box turned 45° about x rests on its lowest edge (along x), d below the ridge of
    // the roof (along y at x = 0, z = 0): the two edges cross at (0, 0.3, 0). The one
    // contact is there, normal up (the cross product of the two edges), gap −d: the
    // penetration along it. (The face of least penetration would give the 45° normal of
    // one of the box's lower faces and a gap of −√2 d at the far end of the chord.)
    let tin = ridge();
    let d = 0.004;
    let h = std::f64::consts::FRAC_1_SQRT_2;
    for turn in [0.0, 0.4] {
        let rot = UnitQuaternion::from_euler_angles(0.0, 0.0, turn)
            * UnitQuaternion::from_euler_angles(std::f64::consts::FRAC_PI_4, 0.0, 0.0);
        let b = block(0, [2.0, 1.0, 1.0], v(0.0, 0.3, h - d), rot);
        let cs = run(&[b], &Statics { tin: Some(tin.clone()), planes: vec![] });
        assert_eq!(cs.len(), 1, "{cs:?}");
        let c = &cs[0];
        assert_close(&c.normal, &V3::z(), 1e-12);
        assert!((c.gap + d).abs() < 1e-12, "{}", c.gap);
        assert_close(&c.point, &v(0.0, 0.3, -0.5 * d), 1e-12);
    }
}

#[test]
fn terrain_peak_poking_a_face_is_a_vertex_contact() {
    // A pyramid whose apex (0, 0, 1) pokes into the bottom face of a wide box.
    let vs = vec![
        v(0.0, 0.0, 1.0),
        v(-4.0, -4.0, 0.0),
        v(4.0, -4.0, 0.0),
        v(4.0, 4.0, 0.0),
        v(-4.0, 4.0, 0.0),
    ];
    let tin = TinCollider::new(vs, vec![[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1]]).unwrap();
    let d = 0.01;
    let b = block(0, [3.0, 3.0, 0.2], v(0.2, -0.3, 1.1 - d), UnitQuaternion::identity());
    let cs = run(&[b], &Statics { tin: Some(tin), planes: vec![] });
    assert_eq!(cs.len(), 1, "{cs:?}");
    assert_close(&cs[0].point, &v(0.0, 0.0, 1.0), 0.0);
    assert_close(&cs[0].normal, &V3::z(), 1e-15);
    assert!((cs[0].gap + d).abs() < 1e-12);
}

#[test]
fn tin_checks_input_and_answers_heights() {
    assert_eq!(
        TinCollider::new(vec![v(0.0, 0.0, 0.0)], vec![]).unwrap_err(),
        ColliderError::NoTriangles
    );
    let vs = vec![v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
    assert!(matches!(
        TinCollider::new(vs.clone(), vec![[0, 1, 3]]),
        Err(ColliderError::BadIndex { triangle: 0, index: 3, .. })
    ));
    assert!(matches!(
        TinCollider::new(vs.clone(), vec![[0, 1, 1]]),
        Err(ColliderError::Degenerate { triangle: 0 })
    ));
    let wall = vec![v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.5, 0.0, 1.0)];
    assert!(matches!(
        TinCollider::new(wall, vec![[0, 1, 2]]),
        Err(ColliderError::Vertical { triangle: 0, .. })
    ));
    let nan = vec![v(0.0, 0.0, f64::NAN), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
    assert!(matches!(
        TinCollider::new(nan, vec![[0, 1, 2]]),
        Err(ColliderError::NonFiniteVertex { vertex: 0 })
    ));
    // Clockwise triangle: normal still up.
    let t = TinCollider::new(vs, vec![[0, 2, 1]]).unwrap();
    assert_close(&t.normal(0), &V3::z(), 0.0);

    // A random height field: index queries and heights against brute force.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let n = 30;
    let f = |x: f64, y: f64| (0.3 * x).sin() + 0.1 * y;
    let mut verts = Vec::new();
    for j in 0..=n {
        for i in 0..=n {
            let (x, y) =
                (i as f64 + rng.random_range(-0.3..0.3), j as f64 + rng.random_range(-0.3..0.3));
            verts.push(v(x, y, f(x, y)));
        }
    }
    let tris = grid_triangles(n);
    let tin = TinCollider::new(verts, tris).unwrap();
    assert_eq!(tin.len(), 2 * n * n);
    let mut out = Vec::new();
    for _ in 0..300 {
        let (x, y) = (rng.random_range(-2.0..32.0), rng.random_range(-2.0..32.0));
        let brute: Vec<u32> =
            (0..tin.len() as u32).filter(|&t| tin.triangle_contains_xy(t, x, y)).collect();
        match tin.height_at(x, y) {
            None => assert!(brute.is_empty()),
            Some(z) => {
                assert!(!brute.is_empty());
                let t = brute[0];
                let [a, ..] = tin.triangle(t);
                let nn = tin.normal(t);
                assert!((z - (a.z - (nn.x * (x - a.x) + nn.y * (y - a.y)) / nn.z)).abs() < 1e-9);
            }
        }
        let (w, h) = (rng.random_range(0.0..3.0), rng.random_range(0.0..3.0));
        tin.query_xy([x, y], [x + w, y + h], &mut out);
        let brute: Vec<u32> = (0..tin.len() as u32)
            .filter(|&t| {
                let tr = tin.triangle(t);
                let (x0, x1) = (
                    tr.iter().map(|p| p.x).fold(f64::INFINITY, f64::min),
                    tr.iter().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max),
                );
                let (y0, y1) = (
                    tr.iter().map(|p| p.y).fold(f64::INFINITY, f64::min),
                    tr.iter().map(|p| p.y).fold(f64::NEG_INFINITY, f64::max),
                );
                x0 <= x + w && x1 >= x && y0 <= y + h && y1 >= y
            })
            .collect();
        assert_eq!(out, brute);
    }
}

/// The triangles `query_near` leaves out of a box's `query_xy` list are those the box cannot
/// touch: on a steep, rough TIN, with boxes from just above it to far above, `box_tin` finds
/// the same touches, bit for bit, from either list, and the shorter list is shorter.
#[test]
fn triangles_left_out_under_a_box_are_ones_it_cannot_touch() {
    use talus_engine::geometry::narrow::box_tin;
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let n = 16;
    let mut verts = Vec::new();
    for j in 0..=n {
        for i in 0..=n {
            let (x, y) = (i as f64, j as f64);
            // A 72° mean slope with bumps: steep facets, where n_z is small.
            let z = 3.0 * x + 0.4 * (y * 1.9).sin() + rng.random_range(-0.3..0.3);
            verts.push(v(x, y, z));
        }
    }
    let tris = grid_triangles(n);
    let tin = TinCollider::new(verts, tris).unwrap();
    let tol = 0.05;
    let (mut all, mut near) = (Vec::new(), Vec::new());
    let (mut touches_all, mut touches_near) = (Vec::new(), Vec::new());
    let (mut total, mut kept, mut touching) = (0usize, 0usize, 0usize);
    for k in 0..2000 {
        let (x, y) = (rng.random_range(2.0..14.0), rng.random_range(2.0..14.0));
        let size =
            [rng.random_range(0.3..2.0), rng.random_range(0.3..2.0), rng.random_range(0.3..2.0)];
        let rot = random_rot(&mut rng);
        let mut b = block(k, size, v(x, y, 0.0), rot);
        if k % 3 == 0 {
            // The box's lowest corner just inside a triangle near its highest vertex, a
            // little less than `tol` from its plane: a contact on a triangle whose top is
            // more than `tol` under the box (h = 0.8 tol / n_z above the plane).
            let t = rng.random_range(0..tin.len() as u32);
            let tri = tin.triangle(t);
            let top = *tri.iter().max_by(|p, q| p.z.total_cmp(&q.z)).unwrap();
            let centroid = (tri[0] + tri[1] + tri[2]) / 3.0;
            let q = top + (centroid - top) * 0.02;
            let nn = tin.normal(t);
            let plane = tri[0].z - (nn.x * (q.x - tri[0].x) + nn.y * (q.y - tri[0].y)) / nn.z;
            let corner = b.corners().into_iter().min_by(|p, q| p.z.total_cmp(&q.z)).unwrap();
            let target = v(q.x, q.y, plane + 0.8 * tol / nn.z);
            b.pos += target - corner;
        } else {
            // Lowest point of the box on the terrain under its centre, then lifted by up to
            // 3 m (half of these boxes by at most 5 tolerances).
            let ground = tin.height_at(x, y).unwrap();
            let low = broad::block_aabb(&b, 0.0).min.z - b.pos.z;
            let lift = if k % 2 == 0 {
                rng.random_range(-0.1..5.0 * tol)
            } else {
                rng.random_range(-0.5..3.0)
            };
            b.pos.z = ground - low + lift;
        }
        let a = broad::block_aabb(&b, tol);
        tin.query_xy([a.min.x, a.min.y], [a.max.x, a.max.y], &mut all);
        tin.query_near([a.min.x, a.min.y, a.min.z], [a.max.x, a.max.y, a.max.z], tol, &mut near);
        assert!(near.iter().all(|t| all.contains(t)), "a subset of the xy query");
        touches_all.clear();
        touches_near.clear();
        box_tin(&b, &tin, &all, tol, &mut touches_all);
        box_tin(&b, &tin, &near, tol, &mut touches_near);
        let bits = |ts: &[(u32, talus_engine::geometry::narrow::Touch)]| -> Vec<(u32, [u64; 7])> {
            ts.iter()
                .map(|(t, c)| {
                    let (p, nn) = (c.point, c.normal);
                    (*t, [p.x, p.y, p.z, nn.x, nn.y, nn.z, c.gap].map(f64::to_bits))
                })
                .collect()
        };
        assert_eq!(bits(&touches_all), bits(&touches_near), "box {k}");
        total += all.len();
        kept += near.len();
        touching += !touches_all.is_empty() as usize;
    }
    // The test means something: many boxes touch, and many triangles are left out.
    assert!(touching > 300, "{touching} boxes touching");
    assert!((kept as f64) < 0.7 * total as f64, "{kept} of {total} triangles kept");
}

// ---------------------------------------------------------------- many blocks

/// A jumble of touching and overlapping blocks above a ground plane and a wavy TIN.
fn jumble(n: usize, seed: u64) -> Vec<Block> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let side = (n as f64).cbrt().ceil() as usize;
    (0..n)
        .map(|k| {
            let (i, j, l) = (k % side, (k / side) % side, k / (side * side));
            let pos = v(i as f64 * 0.9, j as f64 * 0.9, 0.45 + l as f64 * 0.9)
                + v(
                    rng.random_range(-0.1..0.1),
                    rng.random_range(-0.1..0.1),
                    rng.random_range(-0.1..0.1),
                );
            let rot = if k % 3 == 0 { UnitQuaternion::identity() } else { random_rot(&mut rng) };
            let mut b = block(
                1000 + k as u32,
                [
                    rng.random_range(0.5..1.0),
                    rng.random_range(0.5..1.0),
                    rng.random_range(0.5..1.0),
                ],
                pos,
                rot,
            );
            b.active = k % 17 != 5;
            b
        })
        .collect()
}

fn wavy_statics() -> Statics {
    let mut verts = Vec::new();
    let n = 12;
    for j in 0..=n {
        for i in 0..=n {
            let (x, y) = (i as f64 - 1.0, j as f64 - 1.0);
            verts.push(v(x, y, 0.2 * (x * 1.3).sin() * (y * 0.7).cos()));
        }
    }
    let tris = grid_triangles(n);
    Statics {
        tin: Some(TinCollider::new(verts, tris).unwrap()),
        planes: vec![Plane::ground(0.0), Plane::new(v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.2))],
    }
}

/// Contacts keyed by block ids, block–block normals oriented from the larger id into the
/// smaller one, sorted: comparable across permutations of the blocks.
/// (id, other key, point bits, normal bits, gap bits).
type Key = (u32, i64, [u64; 3], [u64; 3], u64);

fn canonical(blocks: &[Block], cs: &[Contact]) -> Vec<Key> {
    let bits = |p: &V3| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()];
    let mut out: Vec<_> = cs
        .iter()
        .map(|c| {
            let id = blocks[c.i].id;
            match c.other {
                Other::Block(j) => {
                    let jd = blocks[j].id;
                    if id < jd {
                        (id, jd as i64, bits(&c.point), bits(&c.normal), c.gap.to_bits())
                    } else {
                        (jd, id as i64, bits(&c.point), bits(&-c.normal), c.gap.to_bits())
                    }
                }
                Other::Terrain(t) => {
                    (id, -1 - t as i64, bits(&c.point), bits(&c.normal), c.gap.to_bits())
                }
                Other::Plane(k) => {
                    (id, -1_000_000 - k as i64, bits(&c.point), bits(&c.normal), c.gap.to_bits())
                }
            }
        })
        .collect();
    out.sort();
    out
}

/// Every contact, in order, by its bits (block, other, point, normal, gap).
fn bits(cs: &[Contact]) -> Vec<(usize, Other, [u64; 7])> {
    cs.iter()
        .map(|c| {
            let (p, n) = (c.point, c.normal);
            (c.i, c.other, [p.x, p.y, p.z, n.x, n.y, n.z, c.gap].map(f64::to_bits))
        })
        .collect()
}

/// Detecting again after some blocks moved (by translations, rotations, or leaving the
/// run) gives the contacts of a full detection, bit for bit and in the same order, over
/// blocks, the terrain and planes; taking every earlier contact as it was would not.
#[test]
fn detecting_again_after_some_blocks_moved_is_a_full_detection() {
    let statics = wavy_statics();
    let mut blocks = jumble(300, 11);
    let mut rng = ChaCha8Rng::seed_from_u64(25);
    let mut previous = run(&blocks, &statics);
    for round in 0..4 {
        let mut moved = vec![false; blocks.len()];
        for (k, b) in blocks.iter_mut().enumerate() {
            if rng.random_bool(0.2) {
                moved[k] = true;
                b.pos += v(
                    rng.random_range(-0.05..0.05),
                    rng.random_range(-0.05..0.05),
                    rng.random_range(-0.05..0.05),
                );
                if rng.random_bool(0.5) {
                    let w = v(rng.random_range(-0.1..0.1), rng.random_range(-0.1..0.1), 0.0);
                    b.rot = UnitQuaternion::from_scaled_axis(w) * b.rot;
                }
                if rng.random_bool(0.02) {
                    b.active = false;
                }
            }
        }
        let full = run(&blocks, &statics);
        let mut t = DetectTimings::default();
        let params = DetectParams { tolerance: TOL };
        let again = detect_again(&blocks, &statics, &params, &mut t, &previous, &moved);
        assert_eq!(bits(&again), bits(&full), "round {round}");
        let stale =
            detect_again(&blocks, &statics, &params, &mut t, &previous, &vec![false; blocks.len()]);
        assert_ne!(bits(&stale), bits(&full), "round {round}: the moves must change contacts");
        // Nothing moved since: the contacts as they were (what `Simulation` returns without
        // detecting when no block's pose or activity changed).
        let unchanged =
            detect_again(&blocks, &statics, &params, &mut t, &full, &vec![false; blocks.len()]);
        assert_eq!(bits(&unchanged), bits(&full), "round {round}: nothing moved");
        previous = full;
    }
}

/// Detecting with the broad phase's pairs and triangles kept from one detection to the
/// next gives the contacts of a full detection, bit for bit and in the same order, after
/// moves within the kept boxes' skin (the pairs are not made again), beyond it (they are),
/// rotations, blocks leaving the run and coming back; with and without the earlier
/// contacts.
#[test]
fn detecting_with_the_kept_broad_phase_is_a_full_detection() {
    let statics = wavy_statics();
    let mut blocks = jumble(300, 12);
    let mut rng = ChaCha8Rng::seed_from_u64(26);
    let params = DetectParams { tolerance: TOL };
    let mut t = DetectTimings::default();
    let mut cache = broad::BroadCache::default();
    let mut previous = detect_cached(&blocks, &statics, &params, &mut t, None, &mut cache);
    assert_eq!(bits(&previous), bits(&run(&blocks, &statics)));
    assert_eq!(cache.builds, 1);
    for round in 0..12 {
        // Rounds 0-3 and 8-9 move blocks by at most 1 mm (within the skin: half of
        // the smallest box's extent, at least 0.25 m); the others by up to 0.3 m, some rotated,
        // some by up to 2 m across the TIN, some leaving the run and some coming back.
        let small = round < 4 || (8..10).contains(&round);
        let step = if small { 1e-3 } else { 0.3 };
        let mut moved = vec![false; blocks.len()];
        for (k, b) in blocks.iter_mut().enumerate() {
            if rng.random_bool(0.3) {
                moved[k] = true;
                b.pos += v(
                    rng.random_range(-step..step),
                    rng.random_range(-step..step),
                    rng.random_range(-step..step),
                );
                if !small && rng.random_bool(0.3) {
                    let w = v(rng.random_range(-0.3..0.3), rng.random_range(-0.3..0.3), 0.0);
                    b.rot = UnitQuaternion::from_scaled_axis(w) * b.rot;
                }
                if !small && rng.random_bool(0.05) {
                    b.active = !b.active;
                }
                // Jumps across the TIN's 1 m triangles.
                if !small && rng.random_bool(0.2) {
                    b.pos += v(rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0), 0.0);
                }
            }
        }
        let builds = cache.builds;
        let full = run(&blocks, &statics);
        let again = detect_cached(
            &blocks,
            &statics,
            &params,
            &mut t,
            Some((&previous, &moved)),
            &mut cache,
        );
        assert_eq!(bits(&again), bits(&full), "round {round}");
        assert_eq!(cache.builds == builds, small, "round {round}: pairs made again");
        let fresh = detect_cached(&blocks, &statics, &params, &mut t, None, &mut cache);
        assert_eq!(bits(&fresh), bits(&full), "round {round}, without the earlier contacts");
        assert!(full.iter().any(|c| matches!(c.other, Other::Terrain(_))));
        previous = full;
    }
}

#[test]
fn permuting_blocks_permutes_contacts_and_threads_do_not_matter() {
    let blocks = jumble(300, 11);
    let statics = wavy_statics();
    let cs = run(&blocks, &statics);
    assert!(cs.len() > 500, "{}", cs.len());
    let kinds = |k: fn(&Other) -> bool| cs.iter().filter(|c| k(&c.other)).count();
    assert!(kinds(|o| matches!(o, Other::Block(_))) > 100);
    assert!(kinds(|o| matches!(o, Other::Terrain(_))) > 10);
    assert!(kinds(|o| matches!(o, Other::Plane(_))) > 10);
    // Sorted, i < j for pairs, inactive blocks absent, each pair's normals consistent.
    for w in cs.windows(2) {
        assert!(talus_engine::geometry::detect::order(&w[0], &w[1]).is_le());
    }
    for c in &cs {
        assert!(blocks[c.i].active);
        if let Other::Block(j) = c.other {
            assert!(c.i < j && blocks[j].active);
        }
    }

    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut perm: Vec<usize> = (0..blocks.len()).collect();
    for k in (1..perm.len()).rev() {
        perm.swap(k, rng.random_range(0..=k));
    }
    let permuted: Vec<Block> = perm.iter().map(|&k| blocks[k].clone()).collect();
    let cp = run(&permuted, &statics);
    assert_eq!(canonical(&blocks, &cs), canonical(&permuted, &cp));

    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let c1 = one.install(|| run(&blocks, &statics));
    assert_eq!(c1, cs);
}

#[test]
fn broad_phase_finds_exactly_the_brute_force_pairs() {
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let n = 2000;
    let blocks: Vec<Block> = (0..n)
        .map(|k| {
            // Mostly small blocks and a few big ones, in a 30 m cube.
            let s = if k % 100 == 0 { 3.0 } else { 1.0 };
            let mut b = block(
                k as u32,
                [
                    s * rng.random_range(0.2..1.0),
                    s * rng.random_range(0.2..1.0),
                    s * rng.random_range(0.2..1.0),
                ],
                v(
                    rng.random_range(0.0..30.0),
                    rng.random_range(0.0..30.0),
                    rng.random_range(0.0..30.0),
                ),
                random_rot(&mut rng),
            );
            b.active = k % 13 != 0;
            b
        })
        .collect();
    // The AABB is the hull of the corners.
    for b in &blocks[..50] {
        let a = broad::block_aabb(b, 0.0);
        let cs = b.corners();
        for d in 0..3 {
            let lo = cs.iter().map(|p| p[d]).fold(f64::INFINITY, f64::min);
            let hi = cs.iter().map(|p| p[d]).fold(f64::NEG_INFINITY, f64::max);
            assert!((a.min[d] - lo).abs() < 1e-12 && (a.max[d] - hi).abs() < 1e-12);
        }
    }
    let margin = TOL / 2.0;
    let pairs = broad::candidate_pairs(&blocks, margin);
    let aabbs: Vec<Option<Aabb>> =
        blocks.iter().map(|b| b.active.then(|| broad::block_aabb(b, margin))).collect();
    let brute = broad::pairs_brute_force(&aabbs);
    // Independent brute force on the corners' hulls.
    let hull = |b: &Block| {
        let cs = b.corners();
        let lo = V3::from_fn(|d, _| cs.iter().map(|p| p[d]).fold(f64::INFINITY, f64::min) - margin);
        let hi =
            V3::from_fn(|d, _| cs.iter().map(|p| p[d]).fold(f64::NEG_INFINITY, f64::max) + margin);
        (lo, hi)
    };
    let hulls: Vec<(V3, V3)> = blocks.iter().map(hull).collect();
    let mut independent = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if blocks[i].active
                && blocks[j].active
                && (0..3).all(|d| hulls[i].0[d] <= hulls[j].1[d] && hulls[j].0[d] <= hulls[i].1[d])
            {
                independent.push((i, j));
            }
        }
    }
    assert!(pairs.len() > 200, "{}", pairs.len());
    assert_eq!(pairs, brute);
    assert_eq!(pairs, independent);
}

#[test]
fn ridge_ending_inside_a_box_is_deep_along_the_face_it_dives_under() {
    // A roof whose ridge (x = 0) climbs with y (z = 0.2 y) and ends at (0, 5, 1), 0.01 m
    // inside the +y face of a box whose bottom face (z = 0.2) it leaves through the −y face
    // 0.002 m above. The vertex's own contact is against the +y face, 0.01 deep; but the
    // ridge is 0.8 m inside the box above its bottom face, and the box must rise 0.8 m to
    // clear it: a contact at the vertex, normal up, gap −0.8.
    let vs = vec![
        v(-5.0, -5.0, -3.5),
        v(0.0, -5.0, -1.0),
        v(5.0, -5.0, -3.5),
        v(-5.0, 5.0, -1.5),
        v(0.0, 5.0, 1.0),
        v(5.0, 5.0, -1.5),
    ];
    let tin = TinCollider::new(vs, vec![[0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4]]).unwrap();
    let b = block(0, [4.0, 4.0, 2.0], v(0.0, 3.01, 1.2), UnitQuaternion::identity());
    let cs = run(&[b], &Statics { tin: Some(tin), planes: vec![] });
    let deepest = cs.iter().min_by(|a, b| a.gap.total_cmp(&b.gap)).unwrap();
    assert!((deepest.gap + 0.8).abs() < 1e-12, "{cs:?}");
    assert_close(&deepest.normal, &V3::z(), 1e-15);
    assert_close(&deepest.point, &v(0.0, 5.0, 1.0), 1e-12);
    // Besides: the vertex against the +y face, the ridge leaving through −y, and the
    // TIN's border (y = 5) crossing the +y face.
    assert!(cs.iter().any(|c| (c.gap + 0.01).abs() < 1e-12 && (c.normal + V3::y()).norm() < 1e-15));
    assert!(cs.iter().any(|c| (c.gap + 0.002).abs() < 1e-9 && (c.normal - V3::z()).norm() < 1e-15));
}

#[test]
fn nearly_parallel_faces_of_long_slabs_touch_by_the_face_not_one_edge_point() {
    // Two 15.8 × 5.5 × 4.8 m slabs side by side, 0.29 m into each other, their facing
    // sides 4° apart (poses from the default site). The edge axis a_x × b_z is 4° from
    // the best face axis and 11 % shallower (the tilt times the slabs' length), so the
    // separating axis test prefers it, and its one contact point let each correction turn
    // the slab about it, the far end 0.5 m deep next. The face's clipped polygon holds the
    // contact by its corners: several points, all on the face's normal.
    let q = |i: f64, j: f64, k: f64, w: f64| {
        UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(w, i, j, k))
    };
    let size = [15.775, 5.4675, 4.818];
    let a = block(
        0,
        size,
        V3::zeros(),
        q(0.026309665853819008, -0.018419955784764755, -0.08669134119102395, 0.9957173886570673),
    );
    let b = block(
        1,
        size,
        v(4.337, 4.819, 0.514),
        q(0.0612762956179926, 0.015997429233379202, -0.07390548195376262, 0.9952523687941875),
    );
    let s = sat(&a, &b);
    let cs = run(&[a, b], &Statics::default());
    let deepest = cs.iter().map(|c| c.gap).fold(f64::INFINITY, f64::min);
    assert!(s > 1.05 * deepest, "the edge axis wins the SAT by 5 %: {s} against {deepest}");
    assert!(cs.len() >= 2, "{cs:?}");
    for c in &cs {
        assert!((c.normal - cs[0].normal).norm() < 1e-12, "{cs:?}");
    }
}
