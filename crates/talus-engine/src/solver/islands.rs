//! Islands: connected components of the contact graph (bodies = nodes, block–block
//! contacts = edges; a contact with a static collider touches one body only). Each island
//! is an independent QP; bodies outside every island are in free flight and get the
//! closed-form jump u⁺ = u⁻ − g Δt e_z, ω⁺ = ω⁻.

use crate::geometry::contact::{Contact, Other};

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
