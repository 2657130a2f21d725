//! `talus ingest IN.las [IN2.laz ...] --out P.parquet`: LAS/LAZ surveys to a points table.

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// LAS/LAZ files of one survey, directories of tiles or quoted glob patterns
    /// ('tiles/*.laz'), merged into one table; they must share a CRS unless
    /// `--set reproject=true`. Repeats of an earlier file's points are dropped.
    #[arg(value_name = "IN", required_unless_present = "print_config")]
    pub inputs: Vec<PathBuf>,
    /// Output points Parquet file.
    #[arg(long, short, value_name = "OUT.parquet", required_unless_present = "print_config")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn options_help() -> String {
    crate::config::options_help::<talus_ingest::Config>("ingest")
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let Some(config) = crate::config::load::<talus_ingest::Config>(&args.config, "ingest")? else {
        return Ok(());
    };
    config.validate()?;
    let out = args.out.ok_or("--out OUT.parquet is required")?;
    let bars = crate::progress::Bars::new(ctx.quiet);
    let s = talus_ingest::run(&config, &args.inputs, &out, &bars)?;
    ctx.say(format!("{s} -> {}", out.display()));
    Ok(())
}
