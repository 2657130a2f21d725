//! `talus synth` (to be wired to its library crate).

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn options_help() -> String {
    String::new()
}

pub fn run(_args: Args, _ctx: &Ctx) -> Result<(), CmdError> {
    Err("`talus synth` is not available in this build yet".into())
}
