//! Cost of `rotation::advance` per free body and step, by model and branch, against the
//! constant-ω baseline measured in the same run. Also the attitude accuracy of the Magnus
//! sub-stepping for a few step lengths (against RK4 with tiny steps).
//!
//! Run with `cargo bench -p talus-engine --bench rotation`.

use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use std::time::Instant;
use talus_engine::rotation::{RotationModel, advance};

const N: usize = 100_000;
const DT: f64 = 1e-3;

struct State {
    rot: UnitQuaternion<f64>,
    omega: Vector3<f64>,
    inertia: Vector3<f64>,
}

/// Blocks with edges in [0.5, 3] m (density 2600 kg/m³) tumbling at up to 10 rad/s.
fn states(rng: &mut ChaCha8Rng, shape: &str) -> Vec<State> {
    (0..N)
        .map(|_| {
            let (a, b, c) = match shape {
                "cube" => (1.0, 1.0, 1.0),
                "square" => {
                    let a = rng.random_range(0.5..3.0);
                    (a, a, rng.random_range(0.5..3.0))
                }
                _ => (
                    rng.random_range(0.5..3.0),
                    rng.random_range(0.5..3.0),
                    rng.random_range(0.5..3.0),
                ),
            };
            let mass = 2600.0 * a * b * c;
            let inertia = Vector3::new(b * b + c * c, a * a + c * c, a * a + b * b) * (mass / 12.0);
            let rot = UnitQuaternion::from_euler_angles(
                rng.random_range(-3.0..3.0),
                rng.random_range(-1.5..1.5),
                rng.random_range(-3.0..3.0),
            );
            let omega = Vector3::new(
                rng.random_range(-10.0..10.0),
                rng.random_range(-10.0..10.0),
                rng.random_range(-10.0..10.0),
            );
            State { rot, omega, inertia }
        })
        .collect()
}

/// Mean wall time of one `advance` call, ns (best of 3 passes over N bodies).
fn time_advance(model: RotationModel, states: &[State]) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = Instant::now();
        for s in states {
            black_box(advance(model, black_box(s.rot), black_box(s.omega), &s.inertia, DT));
        }
        best = best.min(start.elapsed().as_secs_f64() * 1e9 / states.len() as f64);
    }
    best
}

fn rk4_attitude(
    inertia: &Vector3<f64>,
    w0: Vector3<f64>,
    q0: UnitQuaternion<f64>,
    t: f64,
    n: usize,
) -> UnitQuaternion<f64> {
    let f = |w: &Vector3<f64>, q: &Quaternion<f64>| {
        let dw = inertia.component_mul(w).cross(w).component_div(inertia);
        (dw, q * Quaternion::from_imag(*w) * 0.5)
    };
    let h = t / n as f64;
    let (mut w, mut q) = (w0, q0.into_inner());
    for _ in 0..n {
        let (k1w, k1q) = f(&w, &q);
        let (k2w, k2q) = f(&(w + k1w * (h / 2.0)), &(q + k1q * (h / 2.0)));
        let (k3w, k3q) = f(&(w + k2w * (h / 2.0)), &(q + k2q * (h / 2.0)));
        let (k4w, k4q) = f(&(w + k3w * h), &(q + k3q * h));
        w += (k1w + k2w * 2.0 + k3w * 2.0 + k4w) * (h / 6.0);
        q += (k1q + k2q * 2.0 + k3q * 2.0 + k4q) * (h / 6.0);
    }
    UnitQuaternion::from_quaternion(q)
}

fn main() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    println!("rotation::advance, {N} free blocks, dt = {DT} s, |ω| ≤ 17 rad/s");
    println!("{:<34} {:>10} {:>12}", "model / shapes", "ns/call", "vs const ω");
    let general = states(&mut rng, "general");
    let base = time_advance(RotationModel::ConstantOmega, &general);
    println!("{:<34} {:>10.1} {:>12.2}", "constant_omega (baseline)", base, 1.0);
    for (label, shape) in [
        ("torque_free, a ≠ b ≠ c (elliptic)", "general"),
        ("torque_free, a = b (precession)", "square"),
        ("torque_free, cube (steady)", "cube"),
    ] {
        let s = if shape == "general" { &general } else { &states(&mut rng, shape) };
        let ns = time_advance(RotationModel::TorqueFree, s);
        println!("{label:<34} {ns:>10.1} {:>12.2}", ns / base);
    }

    println!();
    println!(
        "attitude error of one advance() vs RK4 (2e5 steps), I = (5, 10, 12), ω₀ = (1, 10, 2)"
    );
    println!("{:>8} {:>14}", "dt [s]", "error [rad]");
    let inertia = Vector3::new(5.0, 10.0, 12.0);
    let w0 = Vector3::new(1.0, 10.0, 2.0);
    for dt in [1e-3, 1e-2, 0.1, 1.0] {
        let (q, _) =
            advance(RotationModel::TorqueFree, UnitQuaternion::identity(), w0, &inertia, dt);
        let q_ref = rk4_attitude(&inertia, w0, UnitQuaternion::identity(), dt, 200_000);
        println!("{dt:>8} {:>14.2e}", q.angle_to(&q_ref));
    }
}
