//! The integration tests of this crate, as one test binary (each file a module).

mod shipped;
mod synth;
