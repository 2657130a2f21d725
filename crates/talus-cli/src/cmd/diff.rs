//! `talus diff`: DEM of difference, M3C2, C2C, volumes and change zones of two points
//! tables (see the `talus-diff` crate).

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Pre-event points table (Parquet, from `talus ingest`).
    #[arg(long, value_name = "PRE.parquet")]
    pub pre: PathBuf,
    /// Post-event points table (Parquet, from `talus ingest`).
    #[arg(long, value_name = "POST.parquet")]
    pub post: PathBuf,
    /// Output directory: dod.parquet, zones.parquet, m3c2.parquet, c2c.parquet, summary.json.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn options_help() -> String {
    crate::config::options_help::<talus_diff::Config>("diff")
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let Some(config) = crate::config::load::<talus_diff::Config>(&args.config, "diff")? else {
        return Ok(());
    };
    config.validate()?;
    let bars = crate::progress::Bars::new(ctx.quiet);
    let s = talus_diff::run(&config, &args.pre, &args.post, &args.out_dir, &bars)?;
    ctx.say(format!("{s}\n  wrote {}", args.out_dir.display()));
    Ok(())
}
