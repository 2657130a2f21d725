//! Blocks as oriented boxes: corners, and the exact separating-axis overlap test.

use nalgebra::{Matrix3, UnitQuaternion, Vector3};

/// One rigid parallelepiped.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Edge lengths (a, b, c) along body axes 1, 2, 3, m.
    pub size: [f64; 3],
    /// Centre of mass, m.
    pub centre: [f64; 3],
    /// Orientation, body to world.
    pub orientation: UnitQuaternion<f64>,
    /// Velocity of the centre, m/s.
    pub velocity: [f64; 3],
    /// Angular velocity (world frame), rad/s.
    pub angular_velocity: [f64; 3],
    /// Size class (0 = the largest seeded; 0 for a single size).
    pub class: u32,
}

impl Block {
    /// A block at rest.
    pub fn at_rest(size: [f64; 3], centre: [f64; 3], orientation: UnitQuaternion<f64>) -> Self {
        Block {
            size,
            centre,
            orientation,
            velocity: [0.0; 3],
            angular_velocity: [0.0; 3],
            class: 0,
        }
    }

    /// Volume, m³.
    pub fn volume(&self) -> f64 {
        self.size[0] * self.size[1] * self.size[2]
    }

    /// Rotation matrix: column k is body axis k in world coordinates.
    pub fn axes(&self) -> Matrix3<f64> {
        *self.orientation.to_rotation_matrix().matrix()
    }

    /// The eight corners in world coordinates.
    pub fn corners(&self) -> [[f64; 3]; 8] {
        let r = self.axes();
        let g = Vector3::from(self.centre);
        let mut out = [[0.0; 3]; 8];
        for (i, o) in out.iter_mut().enumerate() {
            let s = Vector3::new(
                if i & 1 == 0 { -0.5 } else { 0.5 } * self.size[0],
                if i & 2 == 0 { -0.5 } else { 0.5 } * self.size[1],
                if i & 4 == 0 { -0.5 } else { 0.5 } * self.size[2],
            );
            *o = (g + r * s).into();
        }
        out
    }
}

/// Whether two blocks overlap by more than `tol` (m) along every one of the 15 candidate
/// separating axes (3 face normals of each box, 9 edge cross products): the exact
/// separating-axis test for boxes. Boxes touching along a face (penetration <= tol) do
/// not overlap.
pub fn boxes_overlap(p: &Block, q: &Block, tol: f64) -> bool {
    let (ra, rb) = (p.axes(), q.axes());
    let d = Vector3::from(q.centre) - Vector3::from(p.centre);
    let (ha, hb) = (Vector3::from(p.size) * 0.5, Vector3::from(q.size) * 0.5);
    let mut axes: Vec<Vector3<f64>> = Vec::with_capacity(15);
    for i in 0..3 {
        axes.push(ra.column(i).into_owned());
        axes.push(rb.column(i).into_owned());
    }
    for i in 0..3 {
        for j in 0..3 {
            let n = ra.column(i).cross(&rb.column(j));
            // Parallel edges give no new axis (a face axis already covers it).
            if n.norm() > 1e-9 {
                axes.push(n.normalize());
            }
        }
    }
    for l in axes {
        let rp: f64 = (0..3).map(|i| ha[i] * ra.column(i).dot(&l).abs()).sum();
        let rq: f64 = (0..3).map(|i| hb[i] * rb.column(i).dot(&l).abs()).sum();
        if d.dot(&l).abs() >= rp + rq - tol {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sat_cases() {
        let id = UnitQuaternion::identity();
        let a = Block::at_rest([2.0, 2.0, 2.0], [0.0; 3], id);
        let touching = Block::at_rest([2.0, 2.0, 2.0], [2.0, 0.0, 0.0], id);
        let over = Block::at_rest([2.0, 2.0, 2.0], [1.9, 0.5, 0.0], id);
        assert!(!boxes_overlap(&a, &touching, 1e-9));
        assert!(boxes_overlap(&a, &over, 1e-9));
        // A 45-degree box whose corner enters the face of the other: its centre is at
        // 1 + sqrt(2) - 0.1 along x.
        let r = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), std::f64::consts::FRAC_PI_4);
        let near = Block::at_rest([2.0, 2.0, 2.0], [1.0 + 2f64.sqrt() - 0.1, 0.0, 0.0], r);
        let far = Block::at_rest([2.0, 2.0, 2.0], [1.0 + 2f64.sqrt() + 0.1, 0.0, 0.0], r);
        assert!(boxes_overlap(&a, &near, 1e-9));
        assert!(!boxes_overlap(&a, &far, 1e-9));
        // Edge-edge case: only a cross-product axis separates these two.
        let rx = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::FRAC_PI_4);
        let ry = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), std::f64::consts::FRAC_PI_4);
        let e1 = Block::at_rest([2.0, 2.0, 2.0], [0.0, 0.0, 0.0], rx);
        let s = 2f64.sqrt();
        let e2 = Block::at_rest([2.0, 2.0, 2.0], [0.0, 0.0, 2.0 * s + 0.05], ry);
        assert!(!boxes_overlap(&e1, &e2, 1e-9));
        let e3 = Block::at_rest([2.0, 2.0, 2.0], [0.0, 0.0, 2.0 * s - 0.05], ry);
        assert!(boxes_overlap(&e1, &e3, 1e-9));
    }
}
