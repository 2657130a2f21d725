//! `talus diff`: DEM of difference, M3C2, C2C, volumes and change zones of two points
//! tables (see the `talus-diff` crate).

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Pre-event points table (Parquet, from `talus ingest`).
    #[arg(long, value_name = "PRE.parquet", required_unless_present = "print_config")]
    pub pre: Option<PathBuf>,
    /// Post-event points table (Parquet, from `talus ingest`).
    #[arg(long, value_name = "POST.parquet", required_unless_present = "print_config")]
    pub post: Option<PathBuf>,
    /// Output directory: dod.parquet, zones.parquet, m3c2.parquet, c2c.parquet, summary.json.
    #[arg(long, value_name = "DIR", required_unless_present = "print_config")]
    pub out_dir: Option<PathBuf>,
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
    let (Some(pre), Some(post), Some(out_dir)) = (args.pre, args.post, args.out_dir) else {
        return Err("talus diff needs --pre, --post and --out-dir".into());
    };
    let bars = crate::progress::Bars::new(ctx.quiet);
    let s = talus_diff::run(&config, &pre, &post, &out_dir, &bars)?;
    ctx.say(format!("{s}\n  wrote {}", out_dir.display()));
    Ok(())
}
