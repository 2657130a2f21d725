//! `talus run --blocks B.parquet [--terrain DIR] --out-dir D [--resume]`: the A-CD²
//! simulation of the blocks among the terrain and the configured planes.

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Blocks table (talus seed's output, or a previous run's final.parquet).
    #[arg(long, value_name = "B.parquet", required_unless_present = "print_config")]
    pub blocks: Option<PathBuf>,
    /// Terrain directory with vertices.parquet and triangles.parquet (talus terrain's output).
    #[arg(long, value_name = "DIR")]
    pub terrain: Option<PathBuf>,
    /// Output directory: final.parquet, trajectories.parquet, energies.parquet,
    /// diagnostics.parquet, checkpoints/.
    #[arg(long, value_name = "D", required_unless_present = "print_config")]
    pub out_dir: Option<PathBuf>,
    /// Continue from the last checkpoint in D/checkpoints (same inputs and configuration).
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn options_help() -> String {
    crate::config::options_help::<talus_engine::Config>("run")
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let Some(config) = crate::config::load::<talus_engine::Config>(&args.config, "run")? else {
        return Ok(());
    };
    config.validate()?;
    let blocks = args.blocks.ok_or("--blocks B.parquet is required")?;
    let out = args.out_dir.ok_or("--out-dir D is required")?;
    if let Some(w) = talus_engine::driver::no_ground_warning(&config, args.terrain.as_deref()) {
        eprintln!("warning: {w}");
    }
    let bars = crate::progress::Bars::new(ctx.quiet);
    let s = talus_engine::run(&config, &blocks, args.terrain.as_deref(), &out, args.resume, &bars)?;
    ctx.say(format!("{s}; outputs in {}", out.display()));
    Ok(())
}
