//! The integration tests of this crate, as one test binary (each file a module).

mod common;
mod contacts;
mod correction;
mod dense;
mod dissipation;
mod driver;
mod friction;
mod heap;
mod jump;
mod mass_ratio;
mod nlgs;
mod ordering;
mod rotation;
mod tin_rest;
mod warm;
