//! The integration tests of this crate, as one test binary (each file a module).

mod seed;
mod site;
mod thesis;
mod tilted;
