//! Islands: connected components of the contact graph (bodies = nodes, block–block
//! contacts = edges; a contact with a static collider touches one body only). Each island
//! is an independent QP; bodies outside every island are in free flight and get the
//! closed-form jump u⁺ = u⁻ − g Δt e_z, ω⁺ = ω⁻.

use crate::counting_sort::by_key;
use crate::geometry::contact::{Contact, Other};
use crate::solver::assembly::{JumpBody, JumpContact};
use std::borrow::Cow;

/// One island: its bodies and contacts, both in ascending index order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Island {
    /// Global body indices, ascending.
    pub bodies: Vec<usize>,
    /// Indices into the step's contact list, ascending.
    pub contacts: Vec<usize>,
}

fn find(parent: &mut [usize], mut a: usize) -> usize {
    while parent[a] != a {
        parent[a] = parent[parent[a]];
        a = parent[a];
    }
    a
}

/// Split the contacts of `n_bodies` bodies into islands, ordered by their smallest body
/// index (deterministic whatever the order of `contacts`).
pub fn islands(n_bodies: usize, contacts: &[Contact]) -> Vec<Island> {
    let mut parent: Vec<usize> = (0..n_bodies).collect();
    for c in contacts {
        if let Other::Block(j) = c.other {
            let (a, b) = (find(&mut parent, c.i), find(&mut parent, j));
            if a != b {
                // Smaller index is the root: roots are then each component's minimum.
                let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                parent[hi] = lo;
            }
        }
    }
    let mut slot = vec![usize::MAX; n_bodies];
    let mut out: Vec<Island> = Vec::new();
    let mut in_contact = vec![false; n_bodies];
    for c in contacts {
        in_contact[c.i] = true;
        if let Other::Block(j) = c.other {
            in_contact[j] = true;
        }
    }
    for (b, _) in in_contact.iter().enumerate().filter(|(_, c)| **c) {
        let root = find(&mut parent, b);
        if slot[root] == usize::MAX {
            slot[root] = out.len();
            out.push(Island { bodies: Vec::new(), contacts: Vec::new() });
        }
        out[slot[root]].bodies.push(b);
    }
    for (k, c) in contacts.iter().enumerate() {
        let root = find(&mut parent, c.i);
        out[slot[root]].contacts.push(k);
    }
    out
}

/// Islands with at least this many contacts are big: their assembly's blocks are split
/// between two threads ([`crate::solver::assembly::assemble`]), their loose sweeps
/// ([`crate::solver::nlgs`]) and their position correction without a tolerance
/// ([`crate::step::position_correction_in_halves`]) done in two halves ([`Halves`]), and
/// their position correction's order sorted on rayon's threads.
pub const BIG_ISLAND_CONTACTS: usize = 1024;

/// An island's bodies cut in two by a plane, and its contacts grouped for sweeps in two
/// halves: first the contacts on bodies of the first half only, then those on the second
/// half only, then those across the cut. The first two groups touch disjoint bodies, so
/// their sweeps commute, whether by the contact-space solver ([`crate::solver::nlgs`]) or
/// by the position correction ([`crate::step::position_correction_in_halves`]). Done one
/// after the other or on two threads at once, each body sees the same updates in the same
/// order, so the answer is the same, bit for bit. The cut is vertical, across the wider
/// horizontal extent of the bodies' centres, at their median, so that few contacts cross
/// it.
#[derive(Clone)]
pub(crate) struct Halves {
    /// The bodies renumbered: the first half's, ascending, then the second's.
    pub(crate) bodies: Vec<usize>,
    /// The new number of each body.
    pub(crate) number: Vec<usize>,
    /// Bodies in the first half.
    pub(crate) first_bodies: usize,
    /// The contacts in sweep order (first half, second half, across), each group ascending.
    pub(crate) contacts: Vec<usize>,
    /// Contacts in the first group, and in the first two.
    pub(crate) ends: [usize; 2],
}

impl Halves {
    pub(crate) fn of(bodies: &[JumpBody], contacts: &[JumpContact]) -> Self {
        let n = bodies.len();
        let extent = |a: usize| {
            let (lo, hi) = bodies.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), b| {
                (lo.min(b.pos[a]), hi.max(b.pos[a]))
            });
            hi - lo
        };
        let axis = if extent(1) > extent(0) { 1 } else { 0 };
        let mut coords: Vec<f64> = bodies.iter().map(|b| b.pos[axis]).collect();
        let median =
            if n == 0 { 0.0 } else { *coords.select_nth_unstable_by(n / 2, f64::total_cmp).1 };
        // 0 for the first half, 1 for the second; a contact's group is its bodies' half, or
        // 2 across the cut. Counting sorts keep each group ascending.
        let half: Vec<usize> = bodies.iter().map(|b| usize::from(b.pos[axis] >= median)).collect();
        let (body_start, order) = by_key(2, &half);
        let group: Vec<usize> = contacts
            .iter()
            .map(|c| match c.j {
                Some(j) if half[j] != half[c.i] => 2,
                _ => half[c.i],
            })
            .collect();
        let (start, sorted) = by_key(3, &group);
        let mut number = vec![0; n];
        for (new, &old) in order.iter().enumerate() {
            number[old] = new;
        }
        Halves {
            first_bodies: body_start[1],
            bodies: order,
            number,
            contacts: sorted,
            ends: [start[1], start[2]],
        }
    }

    /// `made`, or the halves of this island made now.
    pub(crate) fn made_or_of<'a>(
        made: Option<&'a Halves>,
        bodies: &[JumpBody],
        contacts: &[JumpContact],
    ) -> Cow<'a, Halves> {
        made.map_or_else(|| Cow::Owned(Halves::of(bodies, contacts)), Cow::Borrowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Vector3;

    fn c(i: usize, other: Other) -> Contact {
        Contact { i, other, point: Vector3::zeros(), normal: Vector3::z(), gap: 0.0 }
    }

    #[test]
    fn components_of_the_contact_graph() {
        let contacts = vec![
            c(3, Other::Block(1)),
            c(0, Other::Plane(0)),
            c(4, Other::Terrain(7)),
            c(1, Other::Plane(0)),
            c(5, Other::Block(4)),
        ];
        let isl = islands(7, &contacts);
        assert_eq!(
            isl,
            vec![
                Island { bodies: vec![0], contacts: vec![1] },
                Island { bodies: vec![1, 3], contacts: vec![0, 3] },
                Island { bodies: vec![4, 5], contacts: vec![2, 4] },
            ]
        );
    }
}
