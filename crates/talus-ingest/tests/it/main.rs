//! The integration tests of this crate, as one test binary (each file a module).

mod bad_input;
mod common;
mod ground;
mod options;
mod real_files;
mod roundtrip;
mod surveys;
