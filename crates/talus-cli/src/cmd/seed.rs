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
        required_unless_present = "thesis_dir",
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
    #[arg(long, value_name = "BLOCKS.parquet")]
    pub out: PathBuf,
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
    if let (Some(dir), Some(n)) = (&args.thesis_dir, args.thesis_n) {
        let s =
            talus_seed::import_thesis(&config, dir, n, &args.out, args.export_thesis.as_deref())?;
        ctx.say(format!(
            "seed: imported {} blocks ({:.3} m³, {:.4e} kg) from {} -> {}",
            s.blocks,
            s.volume,
            s.mass,
            dir.display(),
            args.out.display()
        ));
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
        &args.out,
        args.export_thesis.as_deref(),
        &progress,
    )?;
    if s.crossing_cells > 0 {
        ctx.say(format!(
            "warning: the post-event surface is above the pre-event one in {} of {} scar cells (counted as empty)",
            s.crossing_cells, s.scar_cells
        ));
    }
    let classes: Vec<String> = s
        .classes
        .iter()
        .map(|c| format!("{} x [{:.3}, {:.3}, {:.3}] m", c.blocks, c.size[0], c.size[1], c.size[2]))
        .collect();
    ctx.say(format!(
        "seed: {} blocks ({}), azimuth {:.1}°; seeded {:.0} m³ of {:.0} m³ to fill = {:.1} % -> {}",
        s.blocks,
        classes.join(", "),
        s.azimuth_deg,
        s.seeded_volume,
        s.volume_to_fill,
        100.0 * s.fill_fraction,
        args.out.display()
    ));
    if config.min_inside < 1.0 {
        ctx.say(format!(
            "seed: {:.0} m³ of the blocks lie below the pre-event surface ({:.1} % of the volume to fill; min_inside = {})",
            s.volume_in_void,
            100.0 * s.volume_in_void / s.volume_to_fill.max(f64::MIN_POSITIVE),
            config.min_inside
        ));
    }
    Ok(())
}
