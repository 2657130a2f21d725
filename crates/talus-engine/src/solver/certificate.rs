//! Accuracy certificate of a jump's solution, computed from the program's data alone,
//! whatever method produced it.
//!
//! The jump of an island is `min ½xᵀHx − pᵀx s.t. s = Cx − r ∈ K` with K a product of
//! non-negative cones and 3-D second-order cones ([`crate::solver::friction`]). A pair (x, z) solves
//! it exactly when
//!
//! ```text
//! stationarity   Hx − p − Cᵀz = 0
//! primal         s = Cx − r ∈ K
//! dual           z ∈ K            (K is self-dual)
//! complementary  z_kᵀ s_k = 0 for every cone k
//! ```
//!
//! Each residual is non-dimensionalised by the step's own scales, so that one relative
//! tolerance means the same for a 1 kg block and a 10⁷ kg one, at Δt = 1 ms or 0.1 s:
//! stationarity (a percussion) by max(‖Hx‖∞, ‖p‖∞, ‖Cᵀz‖∞); the primal residual (a
//! velocity) by the velocity scale V = max(‖Cx‖∞, ‖r‖∞, ‖C(p ⊘ diag H)‖∞) (the last term
//! is the free motion the contacts stop, g Δt for a block at rest, where x and r vanish);
//! the dual residual by the percussion scale Z = max(‖z‖∞, the stationarity scale) (the
//! second term for islands whose contacts all open, where z ~ 0); complementarity (a
//! power) by Z V. The distance to a cone is Euclidean.

use crate::solver::assembly::Qp;
use clarabel::solver::SupportedConeT;

/// Relative residuals of a solution (each ≥ 0; 0 is exact).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Certificate {
    /// ‖Hx − p − Cᵀz‖∞ / max(‖Hx‖∞, ‖p‖∞, ‖Cᵀz‖∞).
    pub stationarity: f64,
    /// Largest distance of s = Cx − r to its cone, / V.
    pub primal: f64,
    /// Largest distance of z to its cone, / Z.
    pub dual: f64,
    /// Largest |z_kᵀ s_k| over the cones, / (Z V).
    pub complementarity: f64,
}

impl Certificate {
    /// The largest of the four residuals.
    pub fn worst(&self) -> f64 {
        self.stationarity.max(self.primal).max(self.dual).max(self.complementarity)
    }

    /// Whether every residual is at most `tolerance` (false when one is NaN).
    pub fn holds(&self, tolerance: f64) -> bool {
        [self.stationarity, self.primal, self.dual, self.complementarity]
            .iter()
            .all(|r| *r <= tolerance)
    }
}

fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, a| m.max(a.abs()))
}

/// The larger of two residuals, NaN when either is.
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// Euclidean distance of `v` to the second-order cone {v₀ ≥ ‖v₁..‖}.
pub fn soc_distance(v: &[f64]) -> f64 {
    soc_distance_of(v[0], v[1..].iter().map(|a| a * a).sum::<f64>().sqrt())
}

/// [`soc_distance`] of (v₀, v₁..) with t = ‖v₁..‖.
fn soc_distance_of(v0: f64, t: f64) -> f64 {
    if v0 >= t {
        0.0
    } else if v0 <= -t {
        (v0 * v0 + t * t).sqrt()
    } else {
        (t - v0) / std::f64::consts::SQRT_2
    }
}

/// One cone's residuals at (s, z), absolute (a non-negative row is a cone of its own).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConeResidual {
    /// Its first row and its number of rows.
    pub row: usize,
    pub rows: usize,
    /// Distance of s to the cone.
    pub primal: f64,
    /// Distance of z to the cone.
    pub dual: f64,
    /// |sᵀz| over the cone's rows.
    pub complementarity: f64,
}

/// Call `f` with the residuals of every cone of `cones` (rows in cone order) at (s, z).
pub fn for_each_cone(
    cones: &[SupportedConeT<f64>],
    s: &[f64],
    z: &[f64],
    mut f: impl FnMut(ConeResidual),
) {
    let mut row = 0;
    for cone in cones {
        match *cone {
            SupportedConeT::NonnegativeConeT(n) => {
                for k in row..row + n {
                    f(ConeResidual {
                        row: k,
                        rows: 1,
                        primal: (-s[k]).max(0.0),
                        dual: (-z[k]).max(0.0),
                        complementarity: (z[k] * s[k]).abs(),
                    });
                }
                row += n;
            }
            SupportedConeT::SecondOrderConeT(n) => {
                let (sk, zk) = (&s[row..row + n], &z[row..row + n]);
                f(ConeResidual {
                    row,
                    rows: n,
                    primal: soc_distance(sk),
                    dual: soc_distance(zk),
                    complementarity: sk.iter().zip(zk).map(|(a, b)| a * b).sum::<f64>().abs(),
                });
                row += n;
            }
            _ => panic!("certify: only non-negative and second-order cones occur in a jump"),
        }
    }
    assert_eq!(row, s.len(), "cones must cover every row");
}

/// The certificate of (x, z) for `min ½xᵀHx − pᵀx s.t. Cx − r ∈ cones` (rows of C in cone
/// order). A NaN anywhere gives NaN residuals, which never hold.
pub fn certify(qp: &Qp, cones: &[SupportedConeT<f64>], x: &[f64], z: &[f64]) -> Certificate {
    Certifier::new(qp, cones).certify(x, z)
}

/// [`certify`] for one program checked many times (an iterative solve): the parts of the
/// scales that depend on the data alone (‖p‖∞, ‖r‖∞ and the free motion's velocity) are
/// computed once, and a caller that has C x at hand passes it in. The residuals are those
/// of computing every scale at each check, bit for bit (the same operations in the same
/// order: the maxima of the scales only regroup).
pub struct Certifier<'a> {
    qp: &'a Qp,
    cones: &'a [SupportedConeT<f64>],
    /// ‖p‖∞.
    p_norm: f64,
    /// max(‖r‖∞, ‖C(p ⊘ diag H)‖∞).
    velocity_floor: f64,
}

impl<'a> Certifier<'a> {
    /// The data-only scales of `qp`.
    pub fn new(qp: &'a Qp, cones: &'a [SupportedConeT<f64>]) -> Self {
        // Velocity scale: the constraint rows of x (per call), of r, and of the free
        // motion p ⊘ diag(H) (what the contacts have to stop: gravity's g Δt for a block at
        // rest, whose x and r are ~0).
        let diag = qp.h_diagonal();
        let free: Vec<f64> =
            qp.p.iter().zip(&diag).map(|(p, d)| if *d > 0.0 { p / d } else { 0.0 }).collect();
        let velocity_floor = norm_inf(&qp.r).max(norm_inf(&qp.c_mul(&free)));
        Certifier { qp, cones, p_norm: norm_inf(&qp.p), velocity_floor }
    }

    /// The certificate of (x, z).
    pub fn certify(&self, x: &[f64], z: &[f64]) -> Certificate {
        self.certify_with(x, &self.qp.c_mul(x), z)
    }

    /// The primal residual of [`Certifier::certify_with`] alone, bit for bit, given `cx` =
    /// C x: no product with H or Cᵀ. When it is over a tolerance (or NaN), so is the
    /// certificate, and an iterative solve can skip the rest of a check.
    pub fn primal_with(&self, cx: &[f64]) -> f64 {
        let qp = self.qp;
        assert_eq!(cx.len(), qp.m());
        let mut primal: f64 = 0.0;
        let mut row = 0;
        for cone in self.cones {
            match *cone {
                SupportedConeT::NonnegativeConeT(n) => {
                    for (c, r) in cx[row..row + n].iter().zip(&qp.r[row..row + n]) {
                        primal = nan_max(primal, (-(c - r)).max(0.0));
                    }
                    row += n;
                }
                SupportedConeT::SecondOrderConeT(n) => {
                    let s = |k: usize| cx[k] - qp.r[k];
                    let t = (row + 1..row + n).map(|k| s(k) * s(k)).sum::<f64>().sqrt();
                    primal = nan_max(primal, soc_distance_of(s(row), t));
                    row += n;
                }
                _ => panic!("certify: only non-negative and second-order cones occur in a jump"),
            }
        }
        assert_eq!(row, cx.len(), "cones must cover every row");
        primal / self.velocity(cx)
    }

    /// The velocity scale V at C x = `cx`.
    fn velocity(&self, cx: &[f64]) -> f64 {
        norm_inf(cx).max(self.velocity_floor).max(f64::MIN_POSITIVE)
    }

    /// The certificate of (x, z) given `cx` = C x.
    pub fn certify_with(&self, x: &[f64], cx: &[f64], z: &[f64]) -> Certificate {
        let qp = self.qp;
        assert_eq!(x.len(), qp.n());
        assert_eq!(z.len(), qp.m());
        assert_eq!(cx.len(), qp.m());
        let hx = qp.h_mul(x);
        let ctz = qp.ct_mul(z);
        let stat = (0..x.len()).fold(0.0f64, |m, k| m.max((hx[k] - qp.p[k] - ctz[k]).abs()));
        let force = norm_inf(&hx).max(self.p_norm).max(norm_inf(&ctz)).max(f64::MIN_POSITIVE);
        let velocity = self.velocity(cx);
        // Percussion scale: z's own, or the step's momentum scale when every contact is
        // (nearly) open (z ~ 0 then, and z's own scale would make roundoff look like a
        // residual).
        let zs = norm_inf(z).max(force);
        let s: Vec<f64> = cx.iter().zip(&qp.r).map(|(a, b)| a - b).collect();
        let mut primal: f64 = 0.0;
        let mut dual: f64 = 0.0;
        let mut comp: f64 = 0.0;
        for_each_cone(self.cones, &s, z, |r| {
            primal = nan_max(primal, r.primal);
            dual = nan_max(dual, r.dual);
            comp = nan_max(comp, r.complementarity);
        });
        Certificate {
            stationarity: stat / force,
            primal: primal / velocity,
            dual: dual / zs,
            complementarity: comp / (zs * velocity),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nan_residual_never_holds() {
        let ok = Certificate { stationarity: 1e-9, primal: 1e-9, dual: 0.0, complementarity: 0.0 };
        assert!(ok.holds(1e-6));
        for k in 0..4 {
            let mut c = ok;
            *[&mut c.stationarity, &mut c.primal, &mut c.dual, &mut c.complementarity][k] =
                f64::NAN;
            assert!(!c.holds(1e-6), "residual {k} NaN: {c:?}");
        }
    }

    #[test]
    fn soc_distance_matches_the_projection() {
        assert_eq!(soc_distance(&[2.0, 1.0, 1.0]), 0.0);
        // Polar cone: the distance is the norm.
        assert!((soc_distance(&[-2.0, 1.0, 0.0]) - 5f64.sqrt()).abs() < 1e-15);
        // (0, 1, 0): projection (½, ½, 0), distance √2/2.
        assert!((soc_distance(&[0.0, 1.0, 0.0]) - 0.5f64.sqrt()).abs() < 1e-15);
    }
}
