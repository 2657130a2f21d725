//! `talus compare`: simulated deposit vs surveyed deposit, metrics, figures, report.

use super::{CmdError, Ctx};
use crate::config::ConfigArgs;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `talus run` output directory (final.parquet, trajectories.parquet, energies.parquet,
    /// diagnostics.parquet).
    #[arg(long, value_name = "RUN_DIR", required_unless_present = "print_config")]
    pub run: Option<PathBuf>,
    /// `talus diff` output directory (dod.parquet, zones.parquet); without it only the run
    /// metrics, energy and trajectory figures are produced.
    #[arg(long, value_name = "DIFF_DIR")]
    pub diff: Option<PathBuf>,
    /// `talus terrain` output directory (vertices.parquet, triangles.parquet).
    #[arg(long, value_name = "TERRAIN_DIR")]
    pub terrain: Option<PathBuf>,
    /// Seeded blocks (initial state); default: the first step of the trajectories.
    #[arg(long, value_name = "SEED.parquet")]
    pub blocks: Option<PathBuf>,
    /// Output directory: metrics.parquet, metrics.json, thickness.parquet, figures/, report.html.
    #[arg(long, value_name = "DIR", required_unless_present = "print_config")]
    pub out_dir: Option<PathBuf>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn options_help() -> String {
    crate::config::options_help::<talus_compare::Config>("compare")
}

/// Site name, description and text when `--config` is a site file.
fn site_info(path: Option<&PathBuf>) -> Result<talus_compare::SiteInfo, CmdError> {
    let Some(path) = path else { return Ok(Default::default()) };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let table = talus_pipeline::options::read_toml(path)?;
    let site = table.get("site").and_then(|s| s.as_table());
    let get = |k: &str| {
        site.and_then(|s| s.get(k)).and_then(|v| v.as_str()).unwrap_or_default().to_string()
    };
    Ok(talus_compare::SiteInfo {
        name: get("name"),
        description: get("description"),
        config_text: text,
    })
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let Some(config) = crate::config::load::<talus_compare::Config>(&args.config, "compare")?
    else {
        return Ok(());
    };
    config.validate()?;
    let (Some(run_dir), Some(out_dir)) = (args.run, args.out_dir) else {
        return Err("talus compare needs --run and --out-dir".into());
    };
    let site = site_info(args.config.config.as_ref())?;
    let inputs = talus_compare::Inputs {
        run_dir,
        diff_dir: args.diff,
        terrain_dir: args.terrain,
        blocks: args.blocks,
    };
    let bars = crate::progress::Bars::new(ctx.quiet);
    let s = talus_compare::run(&config, &inputs, &site, &out_dir, &bars)?;
    ctx.say(s.to_string());
    Ok(())
}
