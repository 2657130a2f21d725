//! Contacts between a block and another block, the terrain or a plane.
//!
//! Conventions (docs/physics.md §2): a contact k involves block `i` and an `other` body j.
//! `normal` N_k is a unit vector pointing **from j into i**, `point` A_k is the contact
//! point in world coordinates, and `gap` is the signed distance along N_k between the
//! two surfaces (negative = penetration of depth −gap). Each contact is stored once.
//! The normal relative velocity c_kᵀu = N_k·(u_i + ω_i×(A_k−g_i)) − N_k·(u_j + ω_j×(A_k−g_j))
//! is positive when the bodies separate.

use nalgebra::Vector3;

/// The second body of a contact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Other {
    /// Another block, by index in the block slice.
    Block(usize),
    /// A triangle of the terrain TIN (static), by triangle index.
    Terrain(u32),
    /// A static plane, by index in the plane list.
    Plane(usize),
}

/// One contact between block `i` and `other`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contact {
    /// Index of the block the normal points into.
    pub i: usize,
    /// The other body.
    pub other: Other,
    /// Contact point A_k (world), m.
    pub point: Vector3<f64>,
    /// Unit normal N_k, from `other` into `i`.
    pub normal: Vector3<f64>,
    /// Signed gap, m (negative: penetration).
    pub gap: f64,
}

/// Kinds of contact, for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContactKind {
    BlockBlock,
    BlockTerrain,
    BlockPlane,
}

impl Contact {
    /// The kind of this contact.
    pub fn kind(&self) -> ContactKind {
        match self.other {
            Other::Block(_) => ContactKind::BlockBlock,
            Other::Terrain(_) => ContactKind::BlockTerrain,
            Other::Plane(_) => ContactKind::BlockPlane,
        }
    }
}
