//! The integration tests of this crate, as one test binary (each file a module).

mod dod;
mod m3c2_py4dgeo;
mod registration;
mod synth_site;
