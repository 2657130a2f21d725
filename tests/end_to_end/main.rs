//! End-to-end tests of the `talus` binary (CARGO_BIN_EXE_talus), as one test binary: the
//! pipeline, calibration, the shipped default site and the ingest subcommand.

mod calibrate;
mod common;
mod crash_safety;
mod default_site;
mod ingest_cli;
mod messages;
mod pipeline;
