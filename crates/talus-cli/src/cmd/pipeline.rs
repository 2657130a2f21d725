//! `talus pipeline SITE.toml --out runs/NAME`: every stage of a site, in this process,
//! with a manifest and hash-based skipping (talus-pipeline does the work).

use super::{CmdError, Ctx};
use std::path::PathBuf;
use std::time::Instant;
use talus_pipeline::{RunOptions, Site, StageName};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Site file (`pipelines/NAME.toml`). Paths inside it are relative to the current
    /// directory (the repository root).
    #[arg(value_name = "SITE.toml")]
    pub site: PathBuf,
    /// Run directory (e.g. `runs/NAME`); each stage writes into a subdirectory.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Re-run every stage even if its inputs did not change.
    #[arg(long)]
    pub force: bool,
    /// Re-run this stage and every later one (synth, ingest_pre, ingest_post, diff,
    /// terrain, seed, run, compare).
    #[arg(long, value_name = "STAGE")]
    pub from: Option<StageName>,
}

/// Load a site file; its `[calibrate]` table too is checked, so that a site is refused
/// whole before anything runs.
pub fn load_site(path: &std::path::Path) -> Result<Site, CmdError> {
    let site = Site::load(path)?;
    talus_calibrate::Config::from_site(&site)?;
    Ok(site)
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let t = Instant::now();
    let site = load_site(&args.site)?;
    let bars = crate::progress::Bars::new(ctx.quiet);
    let log = |line: &str| ctx.say(line);
    let pctx = talus_pipeline::Context { progress: &bars, log: &log };
    let options = RunOptions { force: args.force, from: args.from };
    let manifest = talus_pipeline::run(&site, &args.out, &options, &pctx)?;
    let ran = manifest.ran();
    println!(
        "pipeline `{}` done in {:.1} s ({} stages run, {} skipped). Report: {}",
        site.name(),
        t.elapsed().as_secs_f64(),
        ran,
        manifest.stages.len() - ran,
        manifest.report.unwrap_or_default()
    );
    Ok(())
}
