//! `talus seed`: fill the collapsed volume with blocks, or import the thesis's files.

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// DEM of difference of `talus diff` (pre/post surfaces and grid geometry).
    #[arg(
        long,
        value_name = "DOD.parquet",
        required_unless_present_any = ["thesis_dir", "print_config"],
        requires = "zones"
    )]
    pub dod: Option<PathBuf>,
    /// Zones of `talus diff` (the `scar` zones are filled).
    #[arg(long, value_name = "ZONES.parquet")]
    pub zones: Option<PathBuf>,
    /// Terrain directory of `talus terrain` (vertices/triangles.parquet): every block is
    /// placed above this post-event TIN (plus `clearance`), so the run starts without
    /// block-terrain overlap.
    #[arg(long, value_name = "DIR", conflicts_with = "thesis_dir")]
    pub terrain: Option<PathBuf>,
    /// Output blocks table.
    #[arg(long, value_name = "BLOCKS.parquet", required_unless_present = "print_config")]
    pub out: Option<PathBuf>,
    /// Import the thesis's size_N.data / position_N.data from this directory instead of seeding.
    #[arg(long, value_name = "DIR", conflicts_with = "dod", requires = "thesis_n")]
    pub thesis_dir: Option<PathBuf>,
    /// N of the thesis files to import.
    #[arg(long, value_name = "N")]
    pub thesis_n: Option<usize>,
    /// Also write the blocks as size_N.data / position_N.data into this directory.
    #[arg(long, value_name = "DIR")]
    pub export_thesis: Option<PathBuf>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn options_help() -> String {
    crate::config::options_help::<talus_seed::Config>("seed")
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let Some(config) = crate::config::load::<talus_seed::Config>(&args.config, "seed")? else {
        return Ok(());
    };
    config.validate()?;
    let out = args.out.ok_or("talus seed needs --out")?;
    if let (Some(dir), Some(n)) = (&args.thesis_dir, args.thesis_n) {
        let s = talus_seed::import_thesis(&config, dir, n, &out, args.export_thesis.as_deref())?;
        ctx.say(format!("{s} from {} -> {}", dir.display(), out.display()));
        return Ok(());
    }
    let (Some(dod), Some(zones)) = (&args.dod, &args.zones) else {
        return Err("talus seed needs --dod and --zones (or --thesis-dir and --thesis-n)".into());
    };
    let progress = crate::progress::Bars::new(ctx.quiet);
    let s = talus_seed::run(
        &config,
        dod,
        zones,
        args.terrain.as_deref(),
        &out,
        args.export_thesis.as_deref(),
        &progress,
    )?;
    ctx.say(format!("{s} -> {}", out.display()));
    Ok(())
}
