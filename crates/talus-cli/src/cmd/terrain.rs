//! `talus terrain`: triangulate the ground points into a TIN.

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Points table (output of `talus ingest`), usually the post-event survey.
    #[arg(long, value_name = "POINTS.parquet", required_unless_present = "print_config")]
    pub points: Option<PathBuf>,
    /// Pre-event points table (needed when `surface = "bed"`: it replaces the post-event
    /// ground inside the deposit zones).
    #[arg(long, value_name = "PRE.parquet")]
    pub pre: Option<PathBuf>,
    /// Zones of `talus diff` (needed when `region = "zones"` or `surface = "bed"`).
    #[arg(long, value_name = "ZONES.parquet")]
    pub zones: Option<PathBuf>,
    /// Output directory: vertices.parquet, triangles.parquet, terrain.ply (terrain.obj).
    #[arg(long, value_name = "DIR", required_unless_present = "print_config")]
    pub out_dir: Option<PathBuf>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn options_help() -> String {
    crate::config::options_help::<talus_terrain::Config>("terrain")
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let Some(config) = crate::config::load::<talus_terrain::Config>(&args.config, "terrain")?
    else {
        return Ok(());
    };
    config.validate()?;
    let (Some(points), Some(out_dir)) = (args.points, args.out_dir) else {
        return Err("talus terrain needs --points and --out-dir".into());
    };
    let progress = crate::progress::Bars::new(ctx.quiet);
    let s = talus_terrain::run(
        &config,
        &points,
        args.pre.as_deref(),
        args.zones.as_deref(),
        &out_dir,
        &progress,
    )?;
    ctx.say(format!("{s} -> {}", out_dir.display()));
    Ok(())
}
