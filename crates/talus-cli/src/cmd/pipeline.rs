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
    #[arg(long, value_name = "DIR", required_unless_present = "print_config")]
    pub out: Option<PathBuf>,
    /// Re-run every stage even if its inputs did not change.
    #[arg(long)]
    pub force: bool,
    /// Re-run this stage and every later one (synth, ingest_pre, ingest_post, diff,
    /// terrain, seed, run, compare).
    #[arg(long, value_name = "STAGE")]
    pub from: Option<StageName>,
    /// Override one option of the site file, VALUE in TOML syntax, the key prefixed by
    /// its table (e.g. `--set run.dt=0.01`, `--set 'seed.size=[2.0, 2.0, 3.0]'`).
    #[arg(long = "set", value_name = "TABLE.KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the effective site (every stage's options, defaults filled in) as TOML and
    /// exit.
    #[arg(long)]
    pub print_config: bool,
}

/// Load a site file; its `[calibrate]` table too is checked, so that a site is refused
/// whole before anything runs.
pub fn load_site(path: &std::path::Path, sets: &[String]) -> Result<Site, CmdError> {
    let site = Site::load_with_sets(path, sets)?;
    talus_calibrate::Config::from_site(&site)?;
    Ok(site)
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let t = Instant::now();
    let site = load_site(&args.site, &args.set)?;
    if args.print_config {
        crate::config::print_toml(&site.file)?;
        return Ok(());
    }
    let out = args.out.ok_or("talus pipeline needs --out")?;
    let bars = crate::progress::Bars::new(ctx.quiet);
    let log = |line: &str| ctx.say(line);
    let pctx = talus_pipeline::Context { progress: &bars, log: &log };
    let options = RunOptions { force: args.force, from: args.from };
    let manifest = talus_pipeline::run(&site, &out, &options, &pctx)?;
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
