//! Sparse assembly of one island's QP (design.md §3):
//!
//! ```text
//! minimise ½ xᵀ H x − pᵀ x   s.t.  C x ≥ r
//! H = 2M + Σ_k (κ_N,k c_k c_kᵀ + κ_T,k T_kᵀ T_k),  p = 2M u⁻ + b,  r_k = (c_kᵀu⁻ + v_k)/2
//! ```
//!
//! with x ordered (u_1, ω_1, …, u_n, ω_n) over the island's bodies, `c_k` the normal row
//! (N, r_i × N | −N, −r_j × N), `T_k = (I − N Nᵀ) R_k` the tangential part of the relative
//! velocity R_k x = (u_i + ω_i × r_i) − (u_j + ω_j × r_j), and v_k ≥ 0 the separation
//! velocity demanded of a penetrating contact. Only the block structure of the contact graph
//! is stored: H's upper triangle and C in compressed sparse columns.

use clarabel::algebra::CscMatrix;
use nalgebra::{Matrix3, SMatrix, SVector, Vector3};

/// The state of one body at the instant of the jump.
#[derive(Debug, Clone, PartialEq)]
pub struct JumpBody {
    /// Mass, kg.
    pub mass: f64,
    /// World inertia tensor at the jump, kg m².
    pub inertia: Matrix3<f64>,
    /// Centre of mass at which the contacts were detected, m.
    pub pos: Vector3<f64>,
    /// Velocity before the jump u⁻, m/s.
    pub vel: Vector3<f64>,
    /// Angular velocity before the jump ω⁻ (world), rad/s.
    pub omega: Vector3<f64>,
}

/// A contact of an island, with body indices local to the island.
#[derive(Debug, Clone, PartialEq)]
pub struct JumpContact {
    /// Local index of the body the normal points into.
    pub i: usize,
    /// Local index of the other body (`None`: static collider).
    pub j: Option<usize>,
    /// Contact point, m.
    pub point: Vector3<f64>,
    /// Unit normal from j into i.
    pub normal: Vector3<f64>,
    /// κ_N of this contact, kg.
    pub kappa_n: f64,
    /// κ_T of this contact, kg.
    pub kappa_t: f64,
    /// Separation velocity demanded after the jump, m/s (0 unless penetrating).
    pub separation: f64,
}

/// A convex QP `min ½ xᵀHx − pᵀx s.t. Cx ≥ r` (H symmetric positive definite).
#[derive(Debug, Clone, PartialEq)]
pub struct Qp {
    /// Upper triangle of H, n × n.
    pub h_upper: CscMatrix<f64>,
    /// Linear term p (the objective has −pᵀx).
    pub p: Vec<f64>,
    /// Constraint matrix C, m × n.
    pub c: CscMatrix<f64>,
    /// Right-hand side r.
    pub r: Vec<f64>,
}

impl Qp {
    /// Number of unknowns.
    pub fn n(&self) -> usize {
        self.p.len()
    }
    /// Number of constraints.
    pub fn m(&self) -> usize {
        self.r.len()
    }
    /// H x (from the upper triangle).
    pub fn h_mul(&self, x: &[f64]) -> Vec<f64> {
        let h = &self.h_upper;
        let mut y = vec![0.0; h.n];
        for col in 0..h.n {
            for k in h.colptr[col]..h.colptr[col + 1] {
                let row = h.rowval[k];
                let v = h.nzval[k];
                y[row] += v * x[col];
                if row != col {
                    y[col] += v * x[row];
                }
            }
        }
        y
    }
    /// C x.
    pub fn c_mul(&self, x: &[f64]) -> Vec<f64> {
        let c = &self.c;
        let mut y = vec![0.0; c.m];
        for (col, xc) in x.iter().enumerate().take(c.n) {
            for k in c.colptr[col]..c.colptr[col + 1] {
                y[c.rowval[k]] += c.nzval[k] * xc;
            }
        }
        y
    }
    /// Cᵀ λ.
    pub fn ct_mul(&self, lambda: &[f64]) -> Vec<f64> {
        let c = &self.c;
        let mut y = vec![0.0; c.n];
        for (col, yc) in y.iter_mut().enumerate() {
            for k in c.colptr[col]..c.colptr[col + 1] {
                *yc += c.nzval[k] * lambda[c.rowval[k]];
            }
        }
        y
    }
}

/// The 6-vector c on body i's slots for a contact at lever arm `r` with normal `n`.
fn normal_row(r: &Vector3<f64>, n: &Vector3<f64>) -> SVector<f64, 6> {
    let t = r.cross(n);
    SVector::<f64, 6>::from_column_slice(&[n.x, n.y, n.z, t.x, t.y, t.z])
}

/// R (3 × 6): velocity of the material point at lever arm r, u + ω × r = u − [r]× ω.
fn point_velocity(r: &Vector3<f64>) -> SMatrix<f64, 3, 6> {
    let mut m = SMatrix::<f64, 3, 6>::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&Matrix3::identity());
    m.fixed_view_mut::<3, 3>(0, 3).copy_from(&(-r.cross_matrix()));
    m
}

/// Effective mass of a contact along its normal, 1/(c_kᵀ M⁻¹ c_k), kg.
pub fn effective_mass(bodies: &[JumpBody], c: &JumpContact) -> f64 {
    let part = |b: &JumpBody| {
        let r = c.point - b.pos;
        let t = r.cross(&c.normal);
        let inv = b.inertia.try_inverse().unwrap_or_else(Matrix3::zeros);
        c.normal.norm_squared() / b.mass + t.dot(&(inv * t))
    };
    let mut w = part(&bodies[c.i]);
    if let Some(j) = c.j {
        w += part(&bodies[j]);
    }
    if w > 0.0 { 1.0 / w } else { f64::INFINITY }
}

/// Accumulates a symmetric matrix's upper triangle as (row, col) → value, then compresses.
struct UpperTriplets {
    rows: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f64>,
}

impl UpperTriplets {
    fn push(&mut self, row: usize, col: usize, v: f64) {
        if row <= col && v != 0.0 {
            self.rows.push(row);
            self.cols.push(col);
            self.vals.push(v);
        }
    }
}

/// Assemble the QP of one island. `gravity_dt` is g Δt (m/s): the gravity percussion
/// (0, 0, −m g Δt) is added to p ONCE per body.
pub fn assemble(bodies: &[JumpBody], contacts: &[JumpContact], gravity_dt: f64) -> Qp {
    let n = 6 * bodies.len();
    let mut h = UpperTriplets { rows: Vec::new(), cols: Vec::new(), vals: Vec::new() };
    let mut p = vec![0.0; n];
    for (b, body) in bodies.iter().enumerate() {
        let o = 6 * b;
        for a in 0..3 {
            h.push(o + a, o + a, 2.0 * body.mass);
        }
        for a in 0..3 {
            for bb in a..3 {
                h.push(o + 3 + a, o + 3 + bb, 2.0 * body.inertia[(a, bb)]);
            }
        }
        let lw = body.inertia * body.omega;
        for a in 0..3 {
            p[o + a] = 2.0 * body.mass * body.vel[a];
            p[o + 3 + a] = 2.0 * lw[a];
        }
        p[o + 2] -= body.mass * gravity_dt;
    }

    let mut c_rows = Vec::with_capacity(12 * contacts.len());
    let mut c_cols = Vec::with_capacity(12 * contacts.len());
    let mut c_vals = Vec::with_capacity(12 * contacts.len());
    let mut r = Vec::with_capacity(contacts.len());
    let proj = |nrm: &Vector3<f64>| Matrix3::identity() - nrm * nrm.transpose();
    for (k, ct) in contacts.iter().enumerate() {
        let nrm = ct.normal;
        let pt = proj(&nrm);
        // (body, sign, c-row, R) for each side.
        let mut sides: Vec<(usize, f64, SVector<f64, 6>, SMatrix<f64, 3, 6>)> =
            Vec::with_capacity(2);
        let ri = ct.point - bodies[ct.i].pos;
        sides.push((ct.i, 1.0, normal_row(&ri, &nrm), point_velocity(&ri)));
        if let Some(j) = ct.j {
            let rj = ct.point - bodies[j].pos;
            sides.push((j, -1.0, -normal_row(&rj, &nrm), -point_velocity(&rj)));
        }
        let mut cu = 0.0;
        for (b, _, row, _) in &sides {
            let body = &bodies[*b];
            let u = SVector::<f64, 6>::from_column_slice(&[
                body.vel.x,
                body.vel.y,
                body.vel.z,
                body.omega.x,
                body.omega.y,
                body.omega.z,
            ]);
            cu += row.dot(&u);
            for a in 0..6 {
                c_rows.push(k);
                c_cols.push(6 * b + a);
                c_vals.push(row[a]);
            }
        }
        r.push(0.5 * (cu + ct.separation));
        // κ_N c cᵀ + κ_T Rᵀ P R, block by block (upper triangle only).
        for (ba, _, ca, ra) in &sides {
            for (bb, _, cb, rb) in &sides {
                if 6 * ba > 6 * bb {
                    continue;
                }
                let block: SMatrix<f64, 6, 6> =
                    ca * cb.transpose() * ct.kappa_n + ra.transpose() * pt * rb * ct.kappa_t;
                for a in 0..6 {
                    for bcol in 0..6 {
                        h.push(6 * ba + a, 6 * bb + bcol, block[(a, bcol)]);
                    }
                }
            }
        }
    }
    let h_upper = CscMatrix::new_from_triplets(n, n, h.rows, h.cols, h.vals);
    let c = CscMatrix::new_from_triplets(contacts.len(), n, c_rows, c_cols, c_vals);
    Qp { h_upper, p, c, r }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(pos: Vector3<f64>) -> JumpBody {
        JumpBody {
            mass: 2.0,
            inertia: Matrix3::from_diagonal(&Vector3::new(1.0, 2.0, 3.0)),
            pos,
            vel: Vector3::new(0.1, -0.2, -1.0),
            omega: Vector3::new(0.3, 0.1, -0.2),
        }
    }

    /// H from the sparse assembly equals the dense definition; C x is c_kᵀx.
    #[test]
    fn sparse_assembly_matches_dense_definition() {
        let bodies = vec![body(Vector3::zeros()), body(Vector3::new(0.0, 0.0, 1.0))];
        let nrm = Vector3::new(0.1, 0.2, 1.0).normalize();
        let contacts = vec![
            JumpContact {
                i: 1,
                j: Some(0),
                point: Vector3::new(0.2, 0.1, 0.5),
                normal: nrm,
                kappa_n: 3.0,
                kappa_t: 0.7,
                separation: 0.0,
            },
            JumpContact {
                i: 0,
                j: None,
                point: Vector3::new(-0.3, 0.2, -0.5),
                normal: Vector3::z(),
                kappa_n: 5.0,
                kappa_t: 1.1,
                separation: 0.4,
            },
        ];
        let qp = assemble(&bodies, &contacts, 0.0981);
        // Dense reference.
        let n = 12;
        let mut hd = nalgebra::DMatrix::<f64>::zeros(n, n);
        for (b, bd) in bodies.iter().enumerate() {
            for a in 0..3 {
                hd[(6 * b + a, 6 * b + a)] = 2.0 * bd.mass;
            }
            hd.view_mut((6 * b + 3, 6 * b + 3), (3, 3)).copy_from(&(bd.inertia * 2.0));
        }
        for ct in &contacts {
            let mut c = nalgebra::DVector::<f64>::zeros(n);
            let mut rr = nalgebra::DMatrix::<f64>::zeros(3, n);
            let ri = ct.point - bodies[ct.i].pos;
            c.rows_mut(6 * ct.i, 6).copy_from(&normal_row(&ri, &ct.normal));
            rr.view_mut((0, 6 * ct.i), (3, 6)).copy_from(&point_velocity(&ri));
            if let Some(j) = ct.j {
                let rj = ct.point - bodies[j].pos;
                c.rows_mut(6 * j, 6).copy_from(&(-normal_row(&rj, &ct.normal)));
                rr.view_mut((0, 6 * j), (3, 6)).copy_from(&(-point_velocity(&rj)));
            }
            let t = (Matrix3::identity() - ct.normal * ct.normal.transpose()) * &rr;
            hd += &c * c.transpose() * ct.kappa_n + t.transpose() * t * ct.kappa_t;
        }
        let x: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin()).collect();
        let hx = qp.h_mul(&x);
        let hxd = &hd * nalgebra::DVector::from_vec(x.clone());
        for k in 0..n {
            assert!((hx[k] - hxd[k]).abs() < 1e-12, "row {k}: {} vs {}", hx[k], hxd[k]);
        }
        // The relative normal velocity of the first contact: N·(v_1(A) − v_0(A)).
        let vpt = |b: &JumpBody, a: Vector3<f64>, u: &[f64]| {
            Vector3::new(u[0], u[1], u[2]) + Vector3::new(u[3], u[4], u[5]).cross(&(a - b.pos))
        };
        let cx = qp.c_mul(&x);
        let rel = vpt(&bodies[1], contacts[0].point, &x[6..12])
            - vpt(&bodies[0], contacts[0].point, &x[0..6]);
        assert!((cx[0] - rel.dot(&nrm)).abs() < 1e-12);
        // p: 2 M u⁻ with gravity once per body.
        assert!((qp.p[2] - (-(2.0 * 2.0) - 2.0 * 0.0981)).abs() < 1e-12);
        assert!((qp.p[8] - (-(2.0 * 2.0) - 2.0 * 0.0981)).abs() < 1e-12);
        // r: (c u⁻ + v)/2.
        let u: Vec<f64> = bodies
            .iter()
            .flat_map(|b| [b.vel.x, b.vel.y, b.vel.z, b.omega.x, b.omega.y, b.omega.z])
            .collect();
        let cu = qp.c_mul(&u);
        assert!((qp.r[1] - 0.5 * (cu[1] + 0.4)).abs() < 1e-12);
    }
}
