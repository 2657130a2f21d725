//! Rotation between jumps (docs/physics.md §5): the closed-form torque-free motion against the
//! reference values, its invariants, every sign case and degenerate branch, and an
//! independent RK4 integration of Euler's equations and of the attitude.

use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use talus_engine::rotation::{RotationModel, TorqueFree, advance};

fn v(x: f64, y: f64, z: f64) -> Vector3<f64> {
    Vector3::new(x, y, z)
}

/// Euler's equations I ω̇ = (I ω) × ω and the attitude q̇ = ½ q ⊗ (0, ω), body frame.
fn derivative(
    inertia: &Vector3<f64>,
    w: &Vector3<f64>,
    q: &Quaternion<f64>,
) -> (Vector3<f64>, Quaternion<f64>) {
    let h = inertia.component_mul(w);
    let dw = h.cross(w).component_div(inertia);
    let dq = q * Quaternion::from_imag(*w) * 0.5;
    (dw, dq)
}

/// Classical RK4 on (ω, q) with `n` equal steps over [0, t]: the independent reference.
fn rk4(
    inertia: &Vector3<f64>,
    w0: Vector3<f64>,
    q0: UnitQuaternion<f64>,
    t: f64,
    n: usize,
) -> (Vector3<f64>, UnitQuaternion<f64>) {
    let h = t / n as f64;
    let (mut w, mut q) = (w0, q0.into_inner());
    for _ in 0..n {
        let (k1w, k1q) = derivative(inertia, &w, &q);
        let (k2w, k2q) = derivative(inertia, &(w + k1w * (h / 2.0)), &(q + k1q * (h / 2.0)));
        let (k3w, k3q) = derivative(inertia, &(w + k2w * (h / 2.0)), &(q + k2q * (h / 2.0)));
        let (k4w, k4q) = derivative(inertia, &(w + k3w * h), &(q + k3q * h));
        w += (k1w + k2w * 2.0 + k3w * 2.0 + k4w) * (h / 6.0);
        q += (k1q + k2q * 2.0 + k3q * 2.0 + k4q) * (h / 6.0);
    }
    (w, UnitQuaternion::from_quaternion(q))
}

fn energy(inertia: &Vector3<f64>, w: &Vector3<f64>) -> f64 {
    0.5 * inertia.component_mul(w).dot(w)
}

fn momentum(inertia: &Vector3<f64>, w: &Vector3<f64>) -> f64 {
    inertia.component_mul(w).norm()
}

fn assert_vec_close(got: &Vector3<f64>, want: &Vector3<f64>, tol: f64, what: &str) {
    let err = (got - want).amax();
    assert!(err <= tol * want.amax().max(1.0), "{what}: got {got:?}, want {want:?}, error {err:e}");
}

/// Angle of the rotation between two orientations, rad.
fn angle_between(a: &UnitQuaternion<f64>, b: &UnitQuaternion<f64>) -> f64 {
    a.angle_to(b)
}

/// Check ω(t) and the attitude against RK4, and the invariants E, |H| along ω(t).
fn check_against_rk4(inertia: Vector3<f64>, w0: Vector3<f64>, t: f64, tol: f64) {
    let tf = TorqueFree::new(inertia, w0);
    let (e0, h0) = (energy(&inertia, &w0), momentum(&inertia, &w0));
    assert!((tf.energy() - e0).abs() <= 1e-14 * e0);
    assert!((tf.momentum_norm() - h0).abs() <= 1e-14 * h0);
    // ω(0) reproduces the initial state.
    assert_vec_close(&tf.omega(0.0), &w0, 1e-13, "ω(0)");
    let n = ((t * w0.norm() / 2e-3).ceil() as usize).max(1000);
    let (w_ref, q_ref) = rk4(&inertia, w0, UnitQuaternion::identity(), t, n);
    let w = tf.omega(t);
    assert_vec_close(&w, &w_ref, tol, &format!("ω({t}) for I = {inertia:?}, ω₀ = {w0:?}"));
    let q = tf.rotation(t);
    let ang = angle_between(&q, &q_ref);
    assert!(ang <= tol, "attitude at {t} for I = {inertia:?}, ω₀ = {w0:?}: {ang:e} rad off");
    for k in 0..=50 {
        let w = tf.omega(t * k as f64 / 50.0);
        let e = energy(&inertia, &w);
        let h = momentum(&inertia, &w);
        assert!((e - e0).abs() <= 1e-12 * e0, "E drift {:e} at step {k}", (e - e0) / e0);
        assert!((h - h0).abs() <= 1e-12 * h0, "|H| drift {:e} at step {k}", (h - h0) / h0);
    }
}

#[test]
fn reference_values_of_design_note() {
    let tf = TorqueFree::new(v(5.0, 10.0, 12.0), v(1.0, 10.0, 2.0));
    let m = tf.parameter_m().unwrap();
    assert!((m - 0.9534295352).abs() < 1e-9, "m = {m}");
    let period = tf.period().unwrap();
    assert!((period - 2.790889).abs() < 1e-6, "period = {period}");
    // The more precise value from mpmath: 4 K(m) / λ = 2.79088912835139.
    assert!((period - 2.790_889_128_351_39).abs() < 1e-12, "period = {period}");
    let w1 = tf.omega(1.0);
    assert_vec_close(&w1, &v(-6.077236573, -6.092420895, 6.436614370), 1e-9, "ω(1)");
    let w5 = tf.omega(5.0);
    assert_vec_close(&w5, &v(7.594804567, -0.898972351, 7.939947550), 1e-9, "ω(5)");
    // Periodicity.
    assert_vec_close(&tf.omega(1.0 + period), &w1, 1e-12, "ω(1 + T)");

    let tf = TorqueFree::new(v(10.0, 20.0, 26.0), v(1.0, 15.0, 1.0));
    let w1 = tf.omega(1.0);
    assert_vec_close(&w1, &v(-3.828166746, -14.380317074, 3.122997885), 1e-9, "ω(1), second case");
}

#[test]
fn reference_values_under_axis_permutations() {
    // Relabelling the body axes relabels the solution, for all six permutations (three of
    // them odd, which exercises the handedness flip of the sorted frame).
    let inertia = [5.0, 10.0, 12.0];
    let w0 = [1.0, 10.0, 2.0];
    let w1 = [-6.077236573, -6.092420895, 6.436614370];
    let perms = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    let original = TorqueFree::new(v(5.0, 10.0, 12.0), v(1.0, 10.0, 2.0));
    let w_back = original.omega(-1.0);
    for p in perms {
        let pi = v(inertia[p[0]], inertia[p[1]], inertia[p[2]]);
        let pw = v(w0[p[0]], w0[p[1]], w0[p[2]]);
        let tf = TorqueFree::new(pi, pw);
        // An odd relabelling reverses handedness, which Euler's equations feel as time
        // reversal: ν(t) = P ω(−t).
        let even = matches!(p, [0, 1, 2] | [1, 2, 0] | [2, 0, 1]);
        let want = if even {
            v(w1[p[0]], w1[p[1]], w1[p[2]])
        } else {
            v(w_back[p[0]], w_back[p[1]], w_back[p[2]])
        };
        assert_vec_close(&tf.omega(1.0), &want, 1e-9, &format!("permutation {p:?}"));
        assert!((tf.parameter_m().unwrap() - 0.9534295352).abs() < 1e-9);
    }
}

#[test]
fn invariants_along_the_motion() {
    let cases = [
        (v(5.0, 10.0, 12.0), v(1.0, 10.0, 2.0)),
        (v(10.0, 20.0, 26.0), v(1.0, 15.0, 1.0)),
        (v(5.0, 10.0, 12.0), v(10.0, 1.0, 2.0)),
        (v(0.3, 7.0, 2.5), v(-4.0, 0.5, 9.0)),
    ];
    for (inertia, w0) in cases {
        let tf = TorqueFree::new(inertia, w0);
        let (e0, h0) = (tf.energy(), tf.momentum_norm());
        for k in 0..2000 {
            let t = k as f64 * 0.0173 - 3.0;
            let w = tf.omega(t);
            let (e, h) = (energy(&inertia, &w), momentum(&inertia, &w));
            assert!((e - e0).abs() <= 1e-12 * e0, "E drift {:e} at t = {t}", (e - e0) / e0);
            assert!((h - h0).abs() <= 1e-12 * h0, "|H| drift {:e} at t = {t}", (h - h0) / h0);
        }
    }
}

#[test]
fn every_sign_case_both_elliptic_cases() {
    // Thesis Table 3.4 (cases A–H) for H² > 2E I₂, and the same eight for H² < 2E I₂.
    let inertia = v(5.0, 10.0, 12.0);
    for base in [v(1.0, 10.0, 2.0), v(10.0, 1.0, 2.0)] {
        for signs in 0..8 {
            let s = |bit: usize| if signs & (1 << bit) != 0 { -1.0 } else { 1.0 };
            let w0 = v(s(0) * base.x, s(1) * base.y, s(2) * base.z);
            let tf = TorqueFree::new(inertia, w0);
            assert!(tf.parameter_m().unwrap() < 1.0);
            check_against_rk4(inertia, w0, 1.3, 1e-10);
        }
    }
    // Flipping all signs is time reversal: ω(t; −ω₀) = −ω(−t; ω₀).
    let tf = TorqueFree::new(inertia, v(1.0, 10.0, 2.0));
    let tr = TorqueFree::new(inertia, v(-1.0, -10.0, -2.0));
    assert_vec_close(&tr.omega(0.7), &(-tf.omega(-0.7)), 1e-13, "time reversal");
}

#[test]
fn general_bodies_and_permuted_axes_against_rk4() {
    let cases = [
        (v(12.0, 5.0, 10.0), v(2.0, -1.0, 10.0)),
        (v(26.0, 10.0, 20.0), v(-1.0, 1.0, 15.0)),
        (v(0.3, 7.0, 2.5), v(-4.0, 0.5, 9.0)),
        (v(1.0, 1.0 + 1e-6, 3.0), v(2.0, 1.0, 0.5)),
        (v(1.0, 3.0 - 1e-6, 3.0), v(0.5, 2.0, 1.0)),
        // A block 1 × 2 × 3 m of density 2600 kg/m³ (the engine's typical inertia).
        (v(13.0, 10.0, 5.0) * (2600.0 * 6.0 / 12.0), v(0.4, -2.0, 1.1)),
    ];
    for (inertia, w0) in cases {
        check_against_rk4(inertia, w0, 2.0, 1e-10);
    }
}

#[test]
fn near_separatrix_on_both_sides_and_on_it() {
    // I = (3, 4, 6): D = H² − 2E I₂ = 12 ω₃² − 3 ω₁², zero for ω₁ = 2 ω₃.
    let inertia = v(3.0, 4.0, 6.0);
    for delta in [1e-2, 1e-6, 1e-10, 1e-14] {
        for side in [1.0, -1.0] {
            let w0 = v(2.0, 3.0, 1.0 + side * delta);
            let tf = TorqueFree::new(inertia, w0);
            let m = tf.parameter_m().unwrap();
            assert!(m < 1.0 && m > 0.0, "m = {m} for δ = {delta}");
            // Near the separatrix, an initial error grows like e^{λt}: compare over a time
            // where that growth stays moderate.
            check_against_rk4(inertia, w0, 1.0, 1e-9);
        }
    }
    // On the separatrix (exactly representable): tanh/sech branch.
    for w0 in [v(2.0, 3.0, 1.0), v(-2.0, 3.0, 1.0), v(2.0, -3.0, -1.0), v(-2.0, -3.0, -1.0)] {
        let tf = TorqueFree::new(inertia, w0);
        assert_eq!(tf.parameter_m(), Some(1.0));
        assert_eq!(tf.period(), None);
        check_against_rk4(inertia, w0, 1.5, 1e-10);
        // The body tends to spin about the middle axis: ω → (0, ±√(2E/I₂), 0).
        let w = tf.omega(60.0);
        let target = (2.0 * tf.energy() / 4.0).sqrt();
        assert!(w.x.abs() < 1e-6 && w.z.abs() < 1e-6 && (w.y.abs() - target).abs() < 1e-6);
    }
}

#[test]
fn axisymmetric_bodies_precess_exactly() {
    // Two equal moments: ω₃ constant (symmetry axis), the transverse part turns at
    // Ω = (I₃ − I₁) ω₃ / I₁ (here axis z), or the same about x when I₂ = I₃.
    let cases = [
        (v(4.0, 4.0, 7.0), v(1.0, -2.0, 3.0), 2),
        (v(2.0, 5.0, 5.0), v(3.0, 1.0, -2.0), 0),
        (v(5.0, 2.0, 5.0), v(1.0, 3.0, -2.0), 1),
        (v(7.0, 4.0, 4.0), v(3.0, 1.0, -2.0), 0),
    ];
    for (inertia, w0, axis) in cases {
        let tf = TorqueFree::new(inertia, w0);
        assert_eq!(tf.parameter_m(), Some(0.0));
        let (i_s, i_t) = (inertia[axis], inertia[(axis + 1) % 3]);
        let rate = (i_s - i_t) * w0[axis] / i_t;
        let period = tf.period().unwrap();
        assert!((period - 2.0 * std::f64::consts::PI / rate.abs()).abs() < 1e-12 * period);
        let e = Vector3::ith(axis, 1.0);
        for t in [0.3, 1.0, 4.0] {
            let want = UnitQuaternion::from_scaled_axis(e * (rate * t)).transform_vector(&w0);
            assert_vec_close(&tf.omega(t), &want, 1e-13, "precession");
        }
        check_against_rk4(inertia, w0, 2.0, 1e-10);
    }
}

#[test]
fn spherical_bodies_and_steady_spins_keep_omega() {
    // Three equal moments: any ω is steady.
    let w0 = v(0.3, -1.2, 2.0);
    let tf = TorqueFree::new(v(3.0, 3.0, 3.0), w0);
    assert_eq!(tf.parameter_m(), None);
    assert_eq!(tf.period(), None);
    assert_eq!(tf.omega(5.0), w0);
    let q = tf.rotation(0.7);
    assert!(angle_between(&q, &UnitQuaternion::from_scaled_axis(w0 * 0.7)) < 1e-15);
    // Steady spin about each principal axis (minor, middle = unstable, major), in any
    // order of the moments and with either sign.
    for inertia in [v(5.0, 10.0, 12.0), v(12.0, 5.0, 10.0), v(10.0, 12.0, 5.0)] {
        for axis in 0..3 {
            for s in [1.0, -1.0] {
                let w0 = Vector3::ith(axis, 4.0 * s);
                let tf = TorqueFree::new(inertia, w0);
                assert_eq!(tf.parameter_m(), None);
                assert_eq!(tf.omega(3.0), w0);
                check_against_rk4(inertia, w0, 1.0, 1e-12);
            }
        }
    }
    // At rest.
    let tf = TorqueFree::new(v(5.0, 10.0, 12.0), Vector3::zeros());
    assert_eq!(tf.omega(1.0), Vector3::zeros());
    assert_eq!(tf.rotation(1.0), UnitQuaternion::identity());
}

#[test]
fn small_wobble_about_the_middle_axis_follows_the_separatrix_family() {
    // A tiny perturbation of the unstable spin grows like e^{λt} and must not be frozen.
    let inertia = v(5.0, 10.0, 12.0);
    let w0 = v(1e-8, 10.0, 1e-8);
    let tf = TorqueFree::new(inertia, w0);
    // m = 1 − 7e-20 rounds to 1, but the branch is elliptic (finite period, ~23 s).
    let m = tf.parameter_m().unwrap();
    assert!(m > 0.99 && m <= 1.0, "m = {m}");
    check_against_rk4(inertia, w0, 1.0, 1e-9);
    let t_flip = tf.period().unwrap() / 2.0;
    // Half a period later the spin about the middle axis has reversed.
    assert!(tf.omega(t_flip).y < -9.0, "ω(T/2) = {:?}", tf.omega(t_flip));
}

#[test]
fn advance_constant_omega_is_the_exact_rotation() {
    let rot = UnitQuaternion::from_euler_angles(0.3, -0.2, 1.1);
    let w = v(1.0, -2.0, 0.5);
    let (q, w1) = advance(RotationModel::ConstantOmega, rot, w, &v(5.0, 10.0, 12.0), 0.01);
    assert_eq!(w1, w);
    let want =
        UnitQuaternion::from_axis_angle(&nalgebra::Unit::new_normalize(w), w.norm() * 0.01) * rot;
    assert!(angle_between(&q, &want) < 1e-15);
    assert!((q.norm() - 1.0).abs() < 1e-15);
    assert_eq!(RotationModel::default(), RotationModel::ConstantOmega);
}

#[test]
fn advance_torque_free_matches_rk4_and_conserves_world_momentum() {
    let cases = [
        (v(5.0, 10.0, 12.0), v(1.0, 10.0, 2.0)),
        (v(12.0, 5.0, 10.0), v(-3.0, 2.0, 7.0)),
        (v(3.0, 4.0, 6.0), v(2.0, 3.0, 1.0)),
        (v(4.0, 4.0, 7.0), v(1.0, -2.0, 3.0)),
        (v(2.0, 2.0, 2.0), v(1.0, -2.0, 3.0)),
    ];
    let rot0 = UnitQuaternion::from_euler_angles(0.4, 1.0, -2.2);
    for (inertia, w_body0) in cases {
        let w_world0 = rot0 * w_body0;
        let h_world = |q: &UnitQuaternion<f64>, w: &Vector3<f64>| {
            *q * inertia.component_mul(&q.inverse_transform_vector(w))
        };
        let h0 = h_world(&rot0, &w_world0);
        let (w_ref, q_ref) = rk4(&inertia, w_body0, rot0, 1.0, 200_000);
        // Many small steps (the engine's use) and one long step.
        for (dt, steps) in [(1e-3, 1000), (0.05, 20), (1.0, 1)] {
            let (mut q, mut w) = (rot0, w_world0);
            for _ in 0..steps {
                (q, w) = advance(RotationModel::TorqueFree, q, w, &inertia, dt);
                assert!((q.norm() - 1.0).abs() < 1e-14);
            }
            let h = h_world(&q, &w);
            assert!(
                (h - h0).norm() <= 1e-10 * h0.norm(),
                "world H drift {:e}",
                (h - h0).norm() / h0.norm()
            );
            let ang = angle_between(&q, &q_ref);
            assert!(ang < 1e-10, "attitude off by {ang:e} rad (dt = {dt}, I = {inertia:?})");
            assert_vec_close(&w, &(q_ref * w_ref), 1e-10, "world ω");
        }
    }
}
