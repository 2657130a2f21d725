//! Where blocks touch: the static colliders (planes, the terrain TIN), the broad phase
//! (grid of bounding boxes), the narrow phase (box–box, box–plane, box–triangle points)
//! and the contacts they produce for the jump.

pub mod broad;
pub mod colliders;
pub mod contact;
pub mod detect;
pub mod narrow;
