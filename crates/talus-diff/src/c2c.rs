//! Cloud-to-cloud distances: for each post-event point, the nearest pre-event point
//! (kiddo k-d tree, exact), the components of the vector between them, and optionally
//! the signed distance to the least-squares plane through its `k` nearest pre-event
//! points (normal oriented up), which removes most of the sampling-density bias of the
//! raw nearest-neighbour distance on a surface.

use crate::m3c2::Cloud;
use kiddo::SquaredEuclidean;
use nalgebra::{Matrix3, Vector3};
use rayon::prelude::*;
use std::num::NonZero;

/// One C2C row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct C2cRow {
    pub point: [f64; 3],
    pub distance: f64,
    pub delta: [f64; 3],
    pub plane_distance: f64,
}

/// C2C distance of every `post` point to `pre`; `plane_neighbours` = 0 skips the plane.
pub fn c2c(pre: &Cloud, post: &[[f64; 3]], plane_neighbours: u32) -> Vec<C2cRow> {
    post.par_iter()
        .map(|p| {
            let nn = pre.tree().query(p).nearest_one::<SquaredEuclidean<f64>>().execute();
            let q = pre.points[nn.item as usize];
            let delta = [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
            let plane_distance = match NonZero::new(plane_neighbours as usize) {
                Some(k) if plane_neighbours >= 3 => plane_distance(pre, p, k),
                _ => f64::NAN,
            };
            C2cRow { point: *p, distance: nn.distance.sqrt(), delta, plane_distance }
        })
        .collect()
}

fn plane_distance(pre: &Cloud, p: &[f64; 3], k: NonZero<usize>) -> f64 {
    match plane_fit(pre, p, k) {
        Some((nv, centroid)) => nv.dot(&(Vector3::from(*p) - centroid)),
        None => f64::NAN,
    }
}

/// Least-squares plane through the `k` nearest `pre` points of `p`: its unit normal
/// (oriented up) and the neighbours' centroid; `None` with fewer than 3 neighbours.
pub fn plane_fit(
    pre: &Cloud,
    p: &[f64; 3],
    k: NonZero<usize>,
) -> Option<(Vector3<f64>, Vector3<f64>)> {
    let nbrs = pre.tree().query(p).nearest_n::<SquaredEuclidean<f64>>(k).execute();
    let n = nbrs.len();
    if n < 3 {
        return None;
    }
    let (mut s, mut ss) = (Vector3::<f64>::zeros(), Matrix3::<f64>::zeros());
    for r in &nbrs {
        let q = pre.points[r.item as usize];
        let d = Vector3::new(q[0] - p[0], q[1] - p[1], q[2] - p[2]);
        s += d;
        ss += d * d.transpose();
    }
    let m = s / n as f64;
    let cov = ss / n as f64 - m * m.transpose();
    let eig = cov.symmetric_eigen();
    let k = eig.eigenvalues.imin();
    let mut nv = eig.eigenvectors.column(k).into_owned();
    if nv[2] < 0.0 {
        nv = -nv;
    }
    Some((nv, Vector3::from(*p) + m))
}
