//! `talus calibrate SITE.toml --out DIR`: an ensemble of runs over the parameters of the
//! site's `[calibrate]` table, each scored by `talus compare` (talus-calibrate).
//!
//! * `--prepare`: only the stages no varied parameter touches (synth, ingest, diff,
//!   terrain, and seed unless a `seed.` option varies), once, into `DIR/shared/` (with a
//!   manifest: unchanged stages are skipped).
//! * `--member I`: member I only (seed if varied, run and compare into
//!   `DIR/members/NNNN/`, beside the member's `site.toml`, then `row.parquet`). A stage
//!   that fails is an outcome (status `failed` in the row), not an error. Needs the
//!   shared stages.
//! * `--collect`: every member's row into `DIR/runs.parquet`, `best.toml`,
//!   `figures/sensitivity.png` and `report.html`.
//! * No option: prepare, every member (in this process, `jobs` at once), collect.
//!   `--count` prints the number of members (to size a job array).
//!
//! The work is `talus_calibrate::Ensemble`'s.

use super::{CmdError, Ctx};
use std::path::PathBuf;
use std::time::Instant;
use talus_calibrate::{Ensemble, describe};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Site file with a `[calibrate]` table (paths inside are relative to the current
    /// directory, as for `talus pipeline`).
    #[arg(value_name = "SITE.toml")]
    pub site: PathBuf,
    /// Calibration directory (e.g. `runs/NAME-calibration`).
    #[arg(long, value_name = "DIR", required_unless_present = "print_config")]
    pub out: Option<PathBuf>,
    /// Run only member I (0-based; e.g. `--member $SLURM_ARRAY_TASK_ID`) and write its row.
    #[arg(long, value_name = "I", conflicts_with_all = ["collect", "prepare", "count"])]
    pub member: Option<usize>,
    /// Only run the shared stages (before the members of a job array).
    #[arg(long, conflicts_with_all = ["collect", "count"])]
    pub prepare: bool,
    /// Only gather the members' rows into the runs table, best configuration and report.
    #[arg(long, conflicts_with = "count")]
    pub collect: bool,
    /// With `--collect`: collect the rows present and leave the missing members out of
    /// the table (listed on stderr) instead of failing.
    #[arg(long, requires = "collect")]
    pub allow_missing: bool,
    /// Print the number of members and exit.
    #[arg(long)]
    pub count: bool,
    /// Override one option of the site file, VALUE in TOML syntax, the key prefixed by
    /// its table (e.g. `--set run.dt=0.01`, `--set 'seed.size=[2.0, 2.0, 3.0]'`).
    #[arg(long = "set", value_name = "TABLE.KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the effective site (every stage's options, defaults filled in) as TOML and
    /// exit.
    #[arg(long)]
    pub print_config: bool,

    /// Members run at once (overrides `[calibrate] jobs`; 0 = the available cores).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Re-run every stage even if its inputs did not change.
    #[arg(long)]
    pub force: bool,
}

pub fn options_help() -> String {
    crate::config::options_help::<talus_calibrate::Config>("calibrate")
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let t = Instant::now();
    let site = super::pipeline::load_site(&args.site, &args.set)?;
    if args.print_config {
        crate::config::print_toml(&site.file)?;
        return Ok(());
    }
    let out = args.out.ok_or("talus calibrate needs --out")?;
    let ensemble = Ensemble::new(site, &out)?;
    let n = ensemble.len();
    if args.count {
        println!("{n}");
        return Ok(());
    }
    let bars = crate::progress::Bars::new(ctx.quiet);
    let log = |line: &str| ctx.say(line);
    let pctx = talus_pipeline::Context { progress: &bars, log: &log };
    if let Some(i) = args.member {
        let row = ensemble.run_member(i, args.force, &pctx)?;
        ctx.say(format!("member {i}: {}; row {}", describe(&row), ensemble.row_path(i).display()));
        return Ok(());
    }
    if !args.collect {
        ensemble.prepare(args.force, &pctx)?;
        if args.prepare {
            println!(
                "calibrate `{}`: shared stages done; now run members 0 to {} with --member I, then --collect",
                ensemble.site.name(),
                n - 1
            );
            return Ok(());
        }
        ensemble.run_members(args.jobs.unwrap_or(ensemble.config.jobs), args.force, &pctx)?;
    }
    // Warnings (missing rows left out) are printed even when quiet.
    let warn = |line: &str| eprintln!("{line}");
    let wctx = talus_pipeline::Context { progress: &bars, log: &warn };
    let c = ensemble.collect(args.allow_missing && args.collect, &wctx)?;
    let s = &c.summary;
    ctx.say(format!("calibrate: {} members, {} ok", s.members, s.ok));
    let Some(b) = c.best else {
        return Err(format!(
            "calibration `{}`: none of the {} members succeeded (see {})",
            ensemble.site.name(),
            s.members,
            s.report.display()
        )
        .into());
    };
    let replicated = match &c.best_point {
        Some(p) if ensemble.config.replicates > 1 => format!(
            " (point {} over {} replicates: mean score {:.4}, deposit IoU {:.3} ± {:.3}, runout {:.0} ± {:.0} m)",
            p.point,
            p.rows.len(),
            p.score.mean,
            p.deposit_iou.mean,
            p.deposit_iou.sd,
            p.runout_simulated.mean,
            p.runout_simulated.sd
        ),
        _ => String::new(),
    };
    println!(
        "calibration `{}`: best of {} members ({} ok) is member {}{replicated}: {}. Table: {}; best configuration: {}; report: {}",
        ensemble.site.name(),
        s.members,
        s.ok,
        c.rows[b].member,
        describe(&c.rows[b]),
        s.runs.display(),
        s.best_toml.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
        s.report.display()
    );
    if !args.collect {
        ctx.say(format!("calibrate: done in {:.1} s", t.elapsed().as_secs_f64()));
    }
    Ok(())
}
