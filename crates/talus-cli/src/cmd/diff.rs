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
    ctx.say(format!(
        "diff: {} + {} points ({}), {} x {} cells of {} m, {} compared, {} significant (LoD median {:.3} m)",
        s.points_pre, s.points_post, s.crs, s.grid.nx, s.grid.ny, s.grid.cell, s.cells_compared, s.cells_significant, s.lod_median
    ));
    ctx.say(format!(
        "  loss {:.1} ± {:.1} m³, gain {:.1} ± {:.1} m³, net {:+.1} m³",
        s.loss.volume, s.loss.error, s.gain.volume, s.gain.error, s.net_volume
    ));
    for z in &s.zones {
        ctx.say(format!(
            "  zone {} {}: {:.0} m², {:.1} ± {:.1} m³",
            z.zone_id,
            z.kind.name(),
            z.area,
            z.volume.volume,
            z.volume.error
        ));
    }
    if s.m3c2.core_points > 0 {
        ctx.say(format!(
            "  M3C2: {} core points, {} valid, {} significant, {} flagged",
            s.m3c2.core_points, s.m3c2.valid, s.m3c2.significant, s.m3c2.flagged
        ));
    }
    if s.c2c.points > 0 {
        ctx.say(format!(
            "  C2C: {} points, median distance {:.3} m",
            s.c2c.points, s.c2c.median_distance
        ));
    }
    ctx.say(format!("  wrote {}", args.out_dir.display()));
    Ok(())
}
