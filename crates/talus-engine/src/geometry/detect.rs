//! Contact detection for one configuration: broad phase, then narrow phase in parallel.
//!
//! Output conventions (see also [`crate::geometry::contact`] and [`crate::geometry::narrow`]):
//! * block–block: one set of contacts per pair, stored once with `i` = the smaller block
//!   index and `other = Other::Block(j)`, j > i; the normal points from j into i. The
//!   geometry is computed with the two blocks in a canonical order (by `id`, then index),
//!   so permuting the blocks only permutes the contacts (and flips a normal when the
//!   order of a pair's indices changes);
//! * block–terrain: `other = Other::Terrain(t)`, normal from the terrain into the block;
//! * block–plane: `other = Other::Plane(k)`, normal = the plane normal;
//! * every contact has gap ≤ `tolerance` (gap < 0: penetration);
//! * sorted by `i`, then `other`, then the point's x, y, z: the result does not depend on
//!   the number of threads.
//!
//! Inactive blocks and blocks whose state is not finite take no part.

use std::cmp::Ordering;
use std::time::Instant;

use rayon::prelude::*;

use crate::body::Block;
use crate::geometry::broad;
use crate::geometry::colliders::Statics;
use crate::geometry::contact::{Contact, Other};
use crate::geometry::narrow::{self, Obb, Touch};

/// Parameters of the contact detection.
#[derive(Debug, Clone, Copy)]
pub struct DetectParams {
    /// Contacts with gap ≤ tolerance are reported, m.
    pub tolerance: f64,
}

/// Wall time spent in each phase of the last [`detect`] call, s.
#[derive(Debug, Default, Clone, Copy)]
pub struct DetectTimings {
    /// Bounding boxes, grid pairs and terrain index queries, s.
    pub broad: f64,
    /// Contact points, s.
    pub narrow: f64,
}

/// All contacts of the configuration (see the module documentation for conventions).
/// `timings` is overwritten with this call's phase times.
pub fn detect(
    blocks: &[Block],
    statics: &Statics,
    params: &DetectParams,
    timings: &mut DetectTimings,
) -> Vec<Contact> {
    detect_with(blocks, statics, params, timings, None, None)
}

/// [`detect`] of a configuration that differs from an earlier one only in the blocks with
/// `moved[i]`: `previous` is [`detect`]'s answer for the earlier one. The contacts of a
/// block with the terrain or a plane, and of a pair of blocks, are computed again only
/// when one of its blocks moved, and taken from `previous` otherwise; the answer is
/// [`detect`]'s, in the same order (each contact depends on its blocks alone).
pub fn detect_again(
    blocks: &[Block],
    statics: &Statics,
    params: &DetectParams,
    timings: &mut DetectTimings,
    previous: &[Contact],
    moved: &[bool],
) -> Vec<Contact> {
    assert_eq!(moved.len(), blocks.len());
    detect_with(blocks, statics, params, timings, Some((previous, moved)), None)
}

/// [`detect`] (`reuse` = None) or [`detect_again`] (`reuse` = the earlier contacts and
/// the moved blocks), with the broad phase's pairs kept in `cache` from one call to the
/// next ([`broad::BroadCache`]): the same contacts, in the same order.
pub fn detect_cached(
    blocks: &[Block],
    statics: &Statics,
    params: &DetectParams,
    timings: &mut DetectTimings,
    reuse: Option<(&[Contact], &[bool])>,
    cache: &mut broad::BroadCache,
) -> Vec<Contact> {
    if let Some((_, moved)) = reuse {
        assert_eq!(moved.len(), blocks.len());
    }
    detect_with(blocks, statics, params, timings, reuse, Some(cache))
}

fn detect_with(
    blocks: &[Block],
    statics: &Statics,
    params: &DetectParams,
    timings: &mut DetectTimings,
    reuse: Option<(&[Contact], &[bool])>,
    cache: Option<&mut broad::BroadCache>,
) -> Vec<Contact> {
    let tol = params.tolerance;
    let moved = |k: usize| reuse.is_none_or(|(_, m)| m[k]);
    // The earlier contacts of each block: previous[before[i]..before[i + 1]] (they come
    // sorted by block).
    let mut before = vec![0usize; blocks.len() + 1];
    if let Some((previous, _)) = reuse {
        for c in previous {
            before[c.i + 1] += 1;
        }
        for k in 0..blocks.len() {
            before[k + 1] += before[k];
        }
    }
    let earlier = |i: usize| reuse.map_or(&[][..], |(p, _)| &p[before[i]..before[i + 1]]);
    let t0 = Instant::now();
    let live = |b: &Block| {
        b.active
            && b.pos.iter().chain(b.half.iter()).all(|c| c.is_finite())
            && b.rot.coords.iter().all(|c| c.is_finite())
    };
    let want_tris = |i: usize, b: &Block| live(b) && moved(i);
    let (pairs, tris) = match cache {
        Some(c) => {
            let pairs = c.candidate_pairs(blocks, tol / 2.0);
            let tris = match &statics.tin {
                Some(tin) => c.near_triangles(blocks, tin, tol, want_tris),
                None => Vec::new(),
            };
            (pairs, tris)
        }
        None => {
            let tris = match &statics.tin {
                // One scratch buffer per rayon job, and one allocation of the right size
                // per block.
                Some(tin) => blocks
                    .par_iter()
                    .enumerate()
                    .map_init(Vec::new, |scratch, (i, b)| {
                        scratch.clear();
                        if want_tris(i, b) {
                            let (lo, hi) = broad::block_aabb(b, tol).corners();
                            tin.query_near(lo, hi, tol, scratch);
                        }
                        scratch.to_vec()
                    })
                    .collect(),
                None => Vec::new(),
            };
            (broad::candidate_pairs(blocks, tol / 2.0), tris)
        }
    };
    // pairs are sorted by i: first pair index of every block.
    let mut first = vec![0usize; blocks.len() + 1];
    for &(i, _) in &pairs {
        first[i + 1] += 1;
    }
    for k in 0..blocks.len() {
        first[k + 1] += first[k];
    }
    let t1 = Instant::now();

    // Each block's oriented box once (the rotation matrix of its quaternion).
    let obbs: Vec<Obb> = blocks.par_iter().map(Obb::of).collect();
    let per_block: Vec<Vec<Contact>> = (0..blocks.len())
        .into_par_iter()
        .map_init(
            || (Vec::<Touch>::new(), Vec::<(u32, Touch)>::new()),
            |(touches, tt), i| {
                let b = &blocks[i];
                let mut out = Vec::new();
                if !live(b) {
                    return out;
                }
                let kept = earlier(i);
                if !moved(i) {
                    // The same block against the same statics: the same contacts.
                    out.extend(kept.iter().filter(|c| matches!(c.other, Other::Plane(_))).cloned());
                    out.extend(
                        kept.iter().filter(|c| matches!(c.other, Other::Terrain(_))).cloned(),
                    );
                } else {
                    for (k, plane) in statics.planes.iter().enumerate() {
                        touches.clear();
                        narrow::box_plane(b, plane, tol, touches);
                        out.extend(touches.iter().map(|t| contact(i, Other::Plane(k), t)));
                    }
                    if let Some(tin) = &statics.tin {
                        tt.clear();
                        narrow::box_tin(b, tin, &tris[i], tol, tt);
                        out.extend(
                            tt.iter().map(|(t, touch)| contact(i, Other::Terrain(*t), touch)),
                        );
                    }
                }
                let oi = &obbs[i];
                for &(_, j) in &pairs[first[i]..first[i + 1]] {
                    if !moved(i) && !moved(j) {
                        out.extend(kept.iter().filter(|c| c.other == Other::Block(j)).cloned());
                        continue;
                    }
                    let c = &blocks[j];
                    let oj = &obbs[j];
                    touches.clear();
                    // Canonical order: the block with the smaller (id, index) is box A.
                    if (b.id, i) <= (c.id, j) {
                        narrow::box_box(oi, oj, tol, touches);
                        out.extend(touches.iter().map(|t| contact(i, Other::Block(j), t)));
                    } else {
                        narrow::box_box(oj, oi, tol, touches);
                        out.extend(touches.iter().map(|t| Contact {
                            normal: -t.normal,
                            ..contact(i, Other::Block(j), t)
                        }));
                    }
                }
                out.sort_by(order);
                out
            },
        )
        .collect();
    // One allocation for all, each block's contacts copied in as one slice.
    let mut contacts: Vec<Contact> = Vec::with_capacity(per_block.iter().map(Vec::len).sum());
    for block in &per_block {
        contacts.extend_from_slice(block);
    }
    let t2 = Instant::now();
    timings.broad = (t1 - t0).as_secs_f64();
    timings.narrow = (t2 - t1).as_secs_f64();
    contacts
}

fn contact(i: usize, other: Other, t: &Touch) -> Contact {
    Contact { i, other, point: t.point, normal: t.normal, gap: t.gap }
}

/// The output order: i, other, then the point's coordinates.
pub fn order(a: &Contact, b: &Contact) -> Ordering {
    a.i.cmp(&b.i)
        .then(a.other.cmp(&b.other))
        .then(a.point.x.total_cmp(&b.point.x))
        .then(a.point.y.total_cmp(&b.point.y))
        .then(a.point.z.total_cmp(&b.point.z))
}
