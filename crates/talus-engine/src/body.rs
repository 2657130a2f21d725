//! Rigid rectangular blocks.

use nalgebra::{UnitQuaternion, Vector3};

/// A rectangular block: geometry, inertia and state.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Identifier carried from the blocks table.
    pub id: u32,
    /// Half edge lengths along body axes 1, 2, 3 (a/2, b/2, c/2), m.
    pub half: Vector3<f64>,
    /// Mass, kg.
    pub mass: f64,
    /// Principal moments of inertia in the body frame, kg m²: m/12 (b²+c², a²+c², a²+b²).
    pub inertia: Vector3<f64>,
    /// Centre of mass (world), m.
    pub pos: Vector3<f64>,
    /// Orientation: rotation from body to world axes.
    pub rot: UnitQuaternion<f64>,
    /// Velocity of the centre (world), m/s.
    pub vel: Vector3<f64>,
    /// Angular velocity (world frame), rad/s.
    pub omega: Vector3<f64>,
    /// False once the block has left the terrain and is no longer simulated.
    pub active: bool,
}

impl Block {
    /// A block at rest with edges (a, b, c) in m and density in kg/m³.
    pub fn new(
        id: u32,
        a: f64,
        b: f64,
        c: f64,
        density: f64,
        pos: Vector3<f64>,
        rot: UnitQuaternion<f64>,
    ) -> Self {
        let mass = density * a * b * c;
        let inertia = Vector3::new(b * b + c * c, a * a + c * c, a * a + b * b) * (mass / 12.0);
        Block {
            id,
            half: Vector3::new(a, b, c) / 2.0,
            mass,
            inertia,
            pos,
            rot,
            vel: Vector3::zeros(),
            omega: Vector3::zeros(),
            active: true,
        }
    }

    /// The 8 corners in world coordinates (index bits: x, y, z sign; bit set = +).
    pub fn corners(&self) -> [Vector3<f64>; 8] {
        let r = self.rot.to_rotation_matrix();
        std::array::from_fn(|k| {
            let s = |bit: usize, h: f64| if k & (1 << bit) != 0 { h } else { -h };
            self.pos + r * Vector3::new(s(0, self.half.x), s(1, self.half.y), s(2, self.half.z))
        })
    }

    /// World inertia tensor R I Rᵀ.
    pub fn world_inertia(&self) -> nalgebra::Matrix3<f64> {
        let r = self.rot.to_rotation_matrix();
        r.matrix() * nalgebra::Matrix3::from_diagonal(&self.inertia) * r.matrix().transpose()
    }

    /// Kinetic energy (translational, rotational), J.
    pub fn kinetic_energy(&self) -> (f64, f64) {
        let t = 0.5 * self.mass * self.vel.norm_squared();
        let r = 0.5 * self.omega.dot(&(self.world_inertia() * self.omega));
        (t, r)
    }
}
