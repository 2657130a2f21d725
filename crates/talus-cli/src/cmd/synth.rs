//! `talus synth --config F --out-dir D [--scale S]`: generate a synthetic pre/post survey
//! pair of a cliff collapse (`D/pre.laz`, `D/post.laz`) with its truth
//! (`D/truth.parquet`, `D/truth.json`).

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output directory (created if needed): pre.laz, post.laz, truth.parquet, truth.json.
    #[arg(long, value_name = "DIR", required_unless_present = "print_config")]
    pub out_dir: Option<PathBuf>,
    /// Multiply both surveys' point densities (overrides `scale` of the configuration);
    /// e.g. 10 gives ~52 M points for the default site, for benchmarks.
    #[arg(long, value_name = "S")]
    pub scale: Option<f64>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn options_help() -> String {
    crate::config::options_help::<talus_synth::Config>("synth")
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let Some(mut config) = crate::config::load::<talus_synth::Config>(&args.config, "synth")?
    else {
        return Ok(());
    };
    if let Some(s) = args.scale {
        config.scale = s;
    }
    config.validate()?;
    let out_dir = args.out_dir.ok_or("talus synth needs --out-dir")?;
    let progress = crate::progress::Bars::new(ctx.quiet);
    let s = talus_synth::run(&config, &out_dir, &progress)?;
    ctx.say(format!("{s} -> {}", out_dir.display()));
    Ok(())
}
