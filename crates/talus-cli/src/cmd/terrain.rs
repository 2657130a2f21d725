//! `talus terrain`: triangulate the ground points into a TIN.

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Points table (output of `talus ingest`), usually the post-event survey.
    #[arg(long, value_name = "POINTS.parquet")]
    pub points: PathBuf,
    /// Pre-event points table (needed when `surface = "bed"`: it replaces the post-event
    /// ground inside the deposit zones).
    #[arg(long, value_name = "PRE.parquet")]
    pub pre: Option<PathBuf>,
    /// Zones of `talus diff` (needed when `region = "zones"` or `surface = "bed"`).
    #[arg(long, value_name = "ZONES.parquet")]
    pub zones: Option<PathBuf>,
    /// Output directory: vertices.parquet, triangles.parquet, terrain.ply (terrain.obj).
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
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
    let progress = crate::progress::Bars::new(ctx.quiet);
    let s = talus_terrain::run(
        &config,
        &args.points,
        args.pre.as_deref(),
        args.zones.as_deref(),
        &args.out_dir,
        &progress,
    )?;
    if let Some(b) = s.bed {
        ctx.say(format!(
            "terrain: bed surface: {} post-event points inside the deposit zones ({} polygons) replaced by {} pre-event points",
            b.post_points_dropped, b.deposit_polygons, b.pre_points_used
        ));
    }
    ctx.say(format!(
        "terrain: {} vertices, {} triangles from {} of {} points ({} duplicates merged); {:.0} m² planimetric, {:.0} m² surface; misfit of left-out points max {:.3} m, rms {:.3} m -> {}",
        s.vertices,
        s.triangles,
        s.points_kept,
        s.points_read,
        s.duplicates_merged,
        s.area_2d,
        s.area_3d,
        s.misfit.max_error,
        s.misfit.rms_error,
        args.out_dir.display()
    ));
    Ok(())
}
