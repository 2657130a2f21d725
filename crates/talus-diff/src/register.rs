//! Co-registration of the post-event survey onto the pre-event one on stable ground:
//! robust point-to-plane ICP (Chen & Medioni 1992; the linearised least squares of Low
//! 2004), restricted to ground that did not change.
//!
//! The rigid transform acts about a fixed centre `c` (the mean of the sampled post-event
//! points, so the normal equations are well conditioned in CRS coordinates):
//! `p' = R (p − c) + c + t`. Each ICP iteration:
//!
//! 1. takes the post-event sample (one point per cube of `sample_spacing`), moved by the
//!    current transform, and for each point `q` the least-squares plane (normal `n`,
//!    centroid `m`) of its `plane_neighbours` nearest pre-event points; a point farther
//!    than `max_distance` from its nearest pre-event point has no correspondence;
//! 2. minimises `Σ w (n·(q − m) + ω·((q − c) × n) + n·δt)²` over the small rotation `ω`
//!    and translation `δt` (6 × 6 normal equations), with Tukey biweights `w` on the
//!    residuals `n·(q − m)` scaled by 1.4826 × their median absolute value (points on
//!    vegetation or on unmodelled change get no weight);
//! 3. applies the update (`R ← exp([ω]×) R`, `t ← exp([ω]×) t + δt`) and stops when it
//!    moves no sampled point by more than `tolerance`.
//!
//! Stable ground: after each round of ICP the DoD is computed with the transform applied,
//! and the sample points in cells with significant change (and `change_margin` cells
//! around them) are left out of the next round; the rounds stop when that mask no longer
//! changes or after `stable_rounds`. The RMS of the final round's point-to-plane
//! residuals (over the points with weight) is the registration error that enters the
//! DoD's level of detection and M3C2's `registration_error`.

use crate::c2c::plane_fit;
use crate::config::{DodConfig, RegistrationConfig};
use crate::dod::{self, Grid};
use crate::m3c2::Cloud;
use kiddo::SquaredEuclidean;
use nalgebra::{Matrix3, Matrix6, Rotation3, Vector3, Vector6};
use rayon::prelude::*;
use std::num::NonZero;
use talus_io::registration::{Registration, RegistrationStatus};

/// A rigid transform about a centre.
#[derive(Debug, Clone, Copy)]
struct Rigid {
    r: Matrix3<f64>,
    t: Vector3<f64>,
    c: Vector3<f64>,
}

impl Rigid {
    fn apply(&self, p: &[f64; 3]) -> [f64; 3] {
        let q = self.r * (Vector3::from(*p) - self.c) + self.c + self.t;
        [q[0], q[1], q[2]]
    }
}

/// One point-to-plane correspondence: residual and Jacobian row `[(q − c) × n, n]`.
struct Pair {
    r: f64,
    a: Vector6<f64>,
}

fn pairs(pre: &Cloud, sample: &[[f64; 3]], x: &Rigid, cfg: &RegistrationConfig) -> Vec<Pair> {
    let k = NonZero::new(cfg.plane_neighbours.max(3) as usize).expect("k >= 3");
    let max2 = cfg.max_distance * cfg.max_distance;
    sample
        .par_iter()
        .filter_map(|p| {
            let q = x.apply(p);
            let nn = pre.tree().query(&q).nearest_one::<SquaredEuclidean<f64>>().execute();
            if nn.distance > max2 {
                return None;
            }
            let (n, m) = plane_fit(pre, &q, k)?;
            let qv = Vector3::from(q);
            let rot = (qv - x.c).cross(&n);
            Some(Pair {
                r: n.dot(&(qv - m)),
                a: Vector6::new(rot[0], rot[1], rot[2], n[0], n[1], n[2]),
            })
        })
        .collect()
}

/// Tukey biweights of residuals, scale 1.4826 × median |r| (floored at 1 mm).
fn weights(pairs: &[Pair]) -> Vec<f64> {
    let mut abs: Vec<f64> = pairs.iter().map(|p| p.r.abs()).collect();
    abs.sort_unstable_by(f64::total_cmp);
    let mad = if abs.is_empty() { 0.0 } else { abs[abs.len() / 2] };
    let c = 4.685 * (1.4826 * mad).max(1e-3);
    pairs
        .iter()
        .map(|p| {
            let u = p.r / c;
            if u.abs() < 1.0 { (1.0 - u * u).powi(2) } else { 0.0 }
        })
        .collect()
}

fn rms(pairs: &[Pair], w: &[f64]) -> (f64, usize) {
    let (mut s, mut n) = (0.0, 0usize);
    for (p, &wi) in pairs.iter().zip(w) {
        if wi > 0.0 {
            s += p.r * p.r;
            n += 1;
        }
    }
    ((s / n.max(1) as f64).sqrt(), n)
}

/// ICP from `x` on `sample`; returns the transform, iterations, whether it converged,
/// and the final residuals' RMS and count (None when degenerate).
fn icp(
    pre: &Cloud,
    sample: &[[f64; 3]],
    mut x: Rigid,
    cfg: &RegistrationConfig,
) -> Option<(Rigid, u32, bool)> {
    let radius = sample.iter().map(|p| (Vector3::from(*p) - x.c).norm()).fold(0.0, f64::max);
    for it in 1..=cfg.max_iterations {
        let ps = pairs(pre, sample, &x, cfg);
        let w = weights(&ps);
        let (mut h, mut g) = (Matrix6::<f64>::zeros(), Vector6::<f64>::zeros());
        let mut used = 0usize;
        for (p, &wi) in ps.iter().zip(&w) {
            if wi > 0.0 {
                h += wi * p.a * p.a.transpose();
                g += wi * p.r * p.a;
                used += 1;
            }
        }
        if used < 6 {
            return None;
        }
        let d = h.cholesky()?.solve(&(-g));
        let omega = Vector3::new(d[0], d[1], d[2]);
        let dt = Vector3::new(d[3], d[4], d[5]);
        let dr = Rotation3::new(omega).into_inner();
        x.r = dr * x.r;
        x.t = dr * x.t + dt;
        if dt.norm() + omega.norm() * radius < cfg.tolerance {
            return Some((x, it, true));
        }
    }
    Some((x, cfg.max_iterations, false))
}

/// Register `post` onto `pre` on stable ground (see the module documentation). `grid` and
/// `dod_cfg` are those of the DoD that detects change.
pub fn register(
    pre: &Cloud,
    post: &[[f64; 3]],
    grid: Grid,
    dod_cfg: &DodConfig,
    cfg: &RegistrationConfig,
) -> Registration {
    let all = crate::m3c2::subsample(post, cfg.sample_spacing);
    let n = all.len().max(1) as f64;
    let c = all.iter().fold(Vector3::zeros(), |s, p| s + Vector3::from(*p)) / n;
    let identity = Rigid { r: Matrix3::identity(), t: Vector3::zeros(), c };
    let mut x = identity;
    let mut sample = all.clone();
    let (mut iterations, mut rounds, mut converged, mut excluded) = (0u32, 0u32, false, 0usize);
    let mut mask: Option<Vec<bool>> = None;
    let mut degenerate = false;
    for round in 0..cfg.stable_rounds.max(1) {
        rounds = round + 1;
        match icp(pre, &sample, x, cfg) {
            Some((next, it, conv)) => {
                x = next;
                iterations += it;
                converged = conv;
            }
            None => {
                degenerate = true;
                x = identity;
                break;
            }
        }
        if round + 1 == cfg.stable_rounds {
            break;
        }
        // Detect change with the transform applied; leave changed cells out.
        let moved: Vec<[f64; 3]> = post.par_iter().map(|p| x.apply(p)).collect();
        let d = dod::difference(grid, &pre.points, &moved, dod_cfg);
        let changed = dilate(&grid, &d.significant, cfg.change_margin);
        if mask.as_ref() == Some(&changed) {
            break;
        }
        excluded = changed.iter().filter(|&&b| b).count();
        sample = all
            .iter()
            .filter(|p| {
                let q = x.apply(p);
                grid.index_of(q[0], q[1]).is_none_or(|i| !changed[i])
            })
            .copied()
            .collect();
        mask = Some(changed);
    }
    let before = pairs(pre, &sample, &identity, cfg);
    let after = pairs(pre, &sample, &x, cfg);
    let w_after = weights(&after);
    let (rms_after, used) = rms(&after, &w_after);
    let (rms_before, _) = rms(&before, &weights(&before));
    let status = if degenerate {
        RegistrationStatus::Degenerate
    } else if converged {
        RegistrationStatus::Converged
    } else {
        RegistrationStatus::MaxIterations
    };
    report(&x, status, rms_before, rms_after, all.len(), used, iterations, rounds, excluded)
}

#[allow(clippy::too_many_arguments)]
fn report(
    x: &Rigid,
    status: RegistrationStatus,
    rms_before: f64,
    rms: f64,
    points_sampled: usize,
    points_used: usize,
    iterations: u32,
    rounds: u32,
    cells_excluded: usize,
) -> Registration {
    let (rx, ry, rz) = Rotation3::from_matrix_unchecked(x.r).euler_angles();
    let rotation = [0, 1, 2].map(|i| [0, 1, 2].map(|j| x.r[(i, j)]));
    // p' = R p + (c + t − R c)
    let off = x.c + x.t - x.r * x.c;
    let matrix = [
        [x.r[(0, 0)], x.r[(0, 1)], x.r[(0, 2)], off[0]],
        [x.r[(1, 0)], x.r[(1, 1)], x.r[(1, 2)], off[1]],
        [x.r[(2, 0)], x.r[(2, 1)], x.r[(2, 2)], off[2]],
        [0.0, 0.0, 0.0, 1.0],
    ];
    Registration {
        status,
        centre: [x.c[0], x.c[1], x.c[2]],
        translation: [x.t[0], x.t[1], x.t[2]],
        rotation_deg: [rx.to_degrees(), ry.to_degrees(), rz.to_degrees()],
        rotation,
        matrix,
        rms_before,
        rms,
        points_sampled,
        points_used,
        iterations,
        rounds,
        cells_excluded,
    }
}

/// Cells within `margin` cells (Chebyshev) of a set cell.
fn dilate(grid: &Grid, set: &[bool], margin: u32) -> Vec<bool> {
    let m = margin as isize;
    let (nx, ny) = (grid.nx as isize, grid.ny as isize);
    let mut out = vec![false; set.len()];
    for (i, _) in set.iter().enumerate().filter(|(_, s)| **s) {
        let (r, c) = ((i / grid.nx) as isize, (i % grid.nx) as isize);
        for rr in (r - m).max(0)..=(r + m).min(ny - 1) {
            for cc in (c - m).max(0)..=(c + m).min(nx - 1) {
                out[(rr * nx + cc) as usize] = true;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A rough surface (sum of sines) sampled at random, 200 × 200 m.
    fn surface(n: usize, seed: u64) -> Vec<[f64; 3]> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (x, y) = (rng.random_range(0.0..200.0), rng.random_range(0.0..200.0));
                let (x, y): (f64, f64) = (x, y);
                let z = 5.0 * (x / 17.0).sin()
                    + 4.0 * (y / 23.0).cos()
                    + 0.02 * x * y / 20.0
                    + 3.0 * ((x + y) / 11.0).sin();
                [500_000.0 + x, 1_600_000.0 + y, 100.0 + z]
            })
            .collect()
    }

    #[test]
    fn recovers_a_known_rigid_motion() {
        let pre = surface(60_000, 1);
        let truth = Rigid {
            r: Rotation3::from_euler_angles(
                0.1f64.to_radians(),
                -0.08f64.to_radians(),
                0.1f64.to_radians(),
            )
            .into_inner(),
            t: Vector3::new(0.5, 0.3, 0.2),
            c: Vector3::new(500_100.0, 1_600_100.0, 100.0),
        };
        let post: Vec<[f64; 3]> = surface(40_000, 2).iter().map(|p| truth.apply(p)).collect();
        let cloud = Cloud::new(pre);
        let cfg = RegistrationConfig { sample_spacing: 1.0, ..RegistrationConfig::default() };
        let grid = Grid::covering(500_000.0, 1_600_000.0, 500_200.0, 1_600_200.0, 5.0);
        let reg = register(&cloud, &post, grid, &DodConfig::default(), &cfg);
        assert_eq!(reg.status, RegistrationStatus::Converged, "{reg:?}");
        // The registered points return to the surface they were drawn from.
        let mut worst: f64 = 0.0;
        for p in surface(200, 3) {
            let back = reg.apply(&truth.apply(&p));
            worst = worst.max((Vector3::from(back) - Vector3::from(p)).norm());
        }
        println!(
            "worst displacement error {worst:.4} m, RMS {:.4} m (before {:.3} m)",
            reg.rms, reg.rms_before
        );
        assert!(worst < 0.01, "worst displacement error {worst} m: {reg:?}");
        // Noise-free points: what remains is the planes' fit to a curved surface
        // sampled at 1.5 points/m².
        assert!(reg.rms < 0.02 && reg.rms_before > 0.2, "{reg:?}");
    }

    #[test]
    fn dilation_marks_the_margin() {
        let g = Grid { x0: 0.0, y0: 0.0, cell: 1.0, nx: 5, ny: 5 };
        let mut s = vec![false; 25];
        s[12] = true;
        let d = dilate(&g, &s, 1);
        assert_eq!(d.iter().filter(|&&b| b).count(), 9);
        assert!(d[6] && d[18] && !d[0]);
    }
}
