//! `talus calibrate SITE.toml --out DIR`: an ensemble of runs over the parameters of the
//! site's `[calibrate]` table, each scored by `talus compare` (talus-calibrate).
//!
//! * `--prepare`: only the stages no varied parameter touches (synth, ingest, diff,
//!   terrain, and seed unless a `seed.` option varies), once, into `DIR/shared/` (with a
//!   manifest: unchanged stages are skipped).
//! * `--member I`: member I only (its site file `DIR/members/NNNN/site.toml`, then seed if
//!   varied, run and compare into that directory, then `row.parquet`). A stage that fails
//!   is an outcome (status `failed` in the row), not an error. Needs the shared stages.
//! * `--collect`: every member's row into `DIR/runs.parquet`, `best.toml`,
//!   `figures/sensitivity.png` and `report.html`.
//! * No option: prepare, every member (as `talus calibrate --member I` subprocesses,
//!   `jobs` at once), collect. `--count` prints the number of members (to size a job array).

use super::pipeline::{self, Layout, Outcome, SiteFile, Stage};
use super::{CmdError, Ctx};
use crate::config::{from_table, read_toml};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use talus_calibrate::{Config, Member, Parameter};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Site file with a `[calibrate]` table (paths inside are relative to the current
    /// directory, as for `talus pipeline`).
    #[arg(value_name = "SITE.toml")]
    pub site: PathBuf,
    /// Calibration directory (e.g. `runs/NAME-calibration`).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Run only member I (0-based; e.g. `--member $SLURM_ARRAY_TASK_ID`) and write its row.
    #[arg(long, value_name = "I", conflicts_with_all = ["collect", "prepare", "count"])]
    pub member: Option<usize>,
    /// Only run the shared stages (before the members of a job array).
    #[arg(long, conflicts_with_all = ["collect", "count"])]
    pub prepare: bool,
    /// Only gather the members' rows into the runs table, best configuration and report.
    #[arg(long, conflicts_with = "count")]
    pub collect: bool,
    /// Print the number of members and exit.
    #[arg(long)]
    pub count: bool,
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

/// Everything checked before any stage runs.
struct Plan {
    site_path: PathBuf,
    site: SiteFile,
    raw: toml::Table,
    config: Config,
    params: Vec<Parameter>,
    base: talus_calibrate::BaseBlocks,
    out: PathBuf,
    /// Names of the stages each member runs.
    member_stages: Vec<&'static str>,
}

fn p(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

impl Plan {
    fn new(site_path: &Path, out: &Path) -> Result<Self, CmdError> {
        let site = pipeline::check_site(site_path)?;
        if site.inputs.thesis_dir.is_some() {
            return Err(format!(
                "{}: calibration needs surveys to compare with; this is a thesis-heap site",
                site_path.display()
            )
            .into());
        }
        let raw = read_toml(site_path)?;
        let origin = format!(" ({})", site_path.display());
        let Some(table) = site.calibrate.clone() else {
            return Err(format!("{}: no [calibrate] table", site_path.display()).into());
        };
        let config: Config = from_table(table, "calibrate", &origin)?;
        config.validate().map_err(|e| format!("{}: {e}", site_path.display()))?;
        let seed_cfg: talus_seed::Config = from_table(table_of(&raw, "seed"), "seed", &origin)?;
        let base = talus_calibrate::BaseBlocks {
            size: seed_cfg.size,
            extra_sizes: seed_cfg.extra_sizes.clone(),
        };
        let params = talus_calibrate::parameters(&config);
        let mut member_stages = vec!["run", "compare"];
        if config.varies_seed() {
            member_stages.insert(0, "seed");
        }
        let plan = Plan {
            site_path: site_path.to_path_buf(),
            site,
            raw,
            config,
            params,
            base,
            out: out.to_path_buf(),
            member_stages,
        };
        // Every member's options must be valid before anything runs.
        for m in talus_calibrate::members(&plan.config) {
            let t = plan.member_site(&m)?;
            let which = format!(" ({}, member {} of [calibrate])", site_path.display(), m.index);
            let run: talus_engine::Config = from_table(table_of(&t, "run"), "run", &which)?;
            run.validate().map_err(|e| format!("member {}: {e}", m.index))?;
            let seed: talus_seed::Config = from_table(table_of(&t, "seed"), "seed", &which)?;
            seed.validate().map_err(|e| format!("member {}: {e}", m.index))?;
        }
        Ok(plan)
    }

    fn n(&self) -> usize {
        talus_calibrate::member_count(&self.config)
    }

    fn shared_layout(&self) -> Layout {
        Layout::under(&self.out.join("shared"))
    }

    fn member_dir(&self, i: usize) -> PathBuf {
        self.out.join("members").join(format!("{i:04}"))
    }

    fn member_site(&self, m: &Member) -> Result<toml::Table, CmdError> {
        Ok(talus_calibrate::sample::apply(&self.raw, &self.params, m, &self.base)?)
    }

    /// Stages run once for all members.
    fn shared_stages(&self) -> Vec<Stage> {
        pipeline::plan_in(&self.site, &self.site_path, &self.shared_layout())
            .into_iter()
            .filter(|s| !self.member_stages.contains(&s.name))
            .collect()
    }

    /// Stages of member i, reading the shared outputs.
    fn member_stages(&self, i: usize, site: &SiteFile, site_path: &Path) -> Vec<Stage> {
        let dir = self.member_dir(i);
        let mut layout = self.shared_layout();
        if self.member_stages.contains(&"seed") {
            layout.seed = dir.join("seed");
        }
        layout.run = dir.join("run");
        layout.compare = dir.join("compare");
        pipeline::plan_in(site, site_path, &layout)
            .into_iter()
            .filter(|s| self.member_stages.contains(&s.name))
            .collect()
    }

    fn row_path(&self, i: usize) -> PathBuf {
        self.member_dir(i).join("row.parquet")
    }

    fn provenance(&self) -> talus_io::Provenance {
        talus_io::Provenance::new("calibrate", env!("CARGO_PKG_VERSION"), &self.config)
    }
}

fn table_of(t: &toml::Table, key: &str) -> toml::Table {
    t.get(key).and_then(|v| v.as_table()).cloned().unwrap_or_default()
}

/// The shared stages.
fn prepare(plan: &Plan, force: bool, ctx: &Ctx) -> Result<(), CmdError> {
    let stages = plan.shared_stages();
    ctx.say(format!(
        "calibrate `{}`: {} shared stages into {}",
        plan.site.site.name,
        stages.len(),
        plan.out.join("shared").display()
    ));
    let header = pipeline::manifest_header(&plan.site, &plan.site_path)?;
    let manifest = plan.out.join("shared").join("manifest.json");
    match pipeline::run_stages(&stages, &plan.raw, header, &manifest, force, None, ctx)? {
        Outcome::Done(_) => Ok(()),
        Outcome::Failed { stage, error, .. } => Err(format!(
            "calibrate `{}`: shared stage `{stage}` failed: {error}",
            plan.site.site.name
        )
        .into()),
    }
}

/// Member i: its stages, then its row.
fn run_member(
    plan: &Plan,
    i: usize,
    force: bool,
    ctx: &Ctx,
) -> Result<talus_calibrate::Row, CmdError> {
    let n = plan.n();
    if i >= n {
        return Err(format!("--member {i}: the search has {n} members (0 to {})", n - 1).into());
    }
    for s in plan.shared_stages() {
        if let Some(missing) = s.outputs.iter().find(|o| !o.is_file()) {
            return Err(format!(
                "member {i}: the shared stage `{}` has not run ({} is missing): run `talus calibrate {} --out {} --prepare` first",
                s.name,
                missing.display(),
                plan.site_path.display(),
                plan.out.display()
            )
            .into());
        }
    }
    let member = talus_calibrate::member(&plan.config, i);
    let dir = plan.member_dir(i);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let table = plan.member_site(&member)?;
    let site_path = dir.join("site.toml");
    let text = format!(
        "# Member {i} of the calibration of {} (talus calibrate): {}\n{}",
        plan.site_path.display(),
        plan.params
            .iter()
            .zip(&member.values)
            .map(|(p, v)| format!("{} = {v}", p.name))
            .collect::<Vec<_>>()
            .join(", "),
        toml::to_string(&table)?
    );
    talus_io::AtomicFile::write_all(&site_path, text.as_bytes())?;
    let site: SiteFile = pipeline::check_site(&site_path)?;
    let stages = plan.member_stages(i, &site, &site_path);
    let header = pipeline::manifest_header(&site, &site_path)?;
    let t = Instant::now();
    let outcome = match pipeline::run_stages(
        &stages,
        &table,
        header,
        &dir.join("manifest.json"),
        force,
        None,
        ctx,
    )? {
        Outcome::Done(m) => {
            let wall: f64 = m.stages.iter().map(|s| s.wall_time_s).sum();
            talus_calibrate::Metrics::read(&dir.join("compare").join("metrics.parquet"))
                .map(|x| (x, wall))
                .map_err(|e| e.to_string())
        }
        Outcome::Failed { stage, error, .. } => Err(format!("stage `{stage}` failed: {error}")),
    };
    let wall = match &outcome {
        Ok((_, w)) => *w,
        Err(_) => t.elapsed().as_secs_f64(),
    };
    let wall = if plan.config.wall_times { wall } else { 0.0 };
    let row =
        talus_calibrate::Row::new(&member, outcome.map(|(m, _)| m), &plan.config.weights, wall);
    let prov = plan.provenance().with_extra("talus:calibrate_member", i.to_string());
    talus_calibrate::table::write(
        &plan.row_path(i),
        &plan.params,
        std::slice::from_ref(&row),
        &prov,
    )?;
    Ok(row)
}

fn describe(row: &talus_calibrate::Row) -> String {
    if row.status == talus_calibrate::Status::Ok {
        format!(
            "score {:.4}, deposit IoU {:.3}, runout error {:.3}, thickness RMSE {:.2} m",
            row.score,
            row.metrics.deposit_iou,
            row.metrics.runout_error(),
            row.metrics.thickness_rmse
        )
    } else {
        format!("failed: {}", row.error)
    }
}

/// Every member's row into the table, best configuration and report.
fn collect(plan: &Plan, ctx: &Ctx) -> Result<(), CmdError> {
    let n = plan.n();
    let missing: Vec<usize> = (0..n).filter(|&i| !plan.row_path(i).is_file()).collect();
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().take(20).map(|i| i.to_string()).collect();
        return Err(format!(
            "{} of {n} members have no row ({}{}): run them with `talus calibrate {} --out {} --member I`",
            missing.len(),
            list.join(", "),
            if missing.len() > 20 { ", ..." } else { "" },
            plan.site_path.display(),
            plan.out.display()
        )
        .into());
    }
    let mut rows = Vec::with_capacity(n);
    let mut paths = Vec::with_capacity(n);
    for i in 0..n {
        let path = plan.row_path(i);
        let mut r = talus_calibrate::table::read(&path, &plan.params)?;
        let expected = talus_calibrate::member(&plan.config, i);
        if r.len() != 1 || r[0].member as usize != i || r[0].values != expected.values {
            return Err(format!(
                "{}: this row is not member {i} of the current [calibrate] table (the table changed?): re-run it with --member {i}",
                path.display()
            )
            .into());
        }
        rows.push(r.remove(0));
        paths.push(path);
    }
    let best = talus_calibrate::table::best(&rows);
    let best_site = match best {
        Some(b) => {
            let m = talus_calibrate::member(&plan.config, rows[b].member as usize);
            Some(plan.member_site(&m)?)
        }
        None => None,
    };
    let best_report = best.map(|b| format!("members/{:04}/compare/report.html", rows[b].member));
    let collection = talus_calibrate::report::Collection {
        site: &plan.site.site.name,
        config: &plan.config,
        params: &plan.params,
        rows: &rows,
        best_site: best_site.as_ref(),
        best_report,
    };
    let prov = plan.provenance().with_inputs(&paths)?;
    let s = talus_calibrate::report::write(&plan.out, &collection, &prov, (1200, 900))?;
    ctx.say(format!("calibrate: {} members, {} ok", s.members, s.ok));
    match s.best {
        Some(b) => {
            println!(
                "calibration `{}`: best of {} members ({} ok) is member {}: {}. Table: {}; best configuration: {}; report: {}",
                plan.site.site.name,
                s.members,
                s.ok,
                rows[b].member,
                describe(&rows[b]),
                s.runs.display(),
                s.best_toml.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                s.report.display()
            );
            Ok(())
        }
        None => Err(format!(
            "calibration `{}`: none of the {} members succeeded (see {})",
            plan.site.site.name,
            s.members,
            s.report.display()
        )
        .into()),
    }
}

/// Every member as a subprocess, `jobs` at once.
fn run_all(plan: &Plan, args: &Args, ctx: &Ctx) -> Result<(), CmdError> {
    let n = plan.n();
    let cores = std::thread::available_parallelism().map(|c| c.get()).unwrap_or(1);
    let jobs = match args.jobs.unwrap_or(plan.config.jobs) {
        0 => cores,
        j => j,
    }
    .min(n)
    .max(1);
    let threads_each = (cores / jobs).max(1);
    ctx.say(format!(
        "calibrate `{}`: {n} members, {jobs} at once ({threads_each} threads each)",
        plan.site.site.name
    ));
    let exe = std::env::current_exe()?;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= n {
                        break;
                    }
                    let mut cmd = Command::new(&exe);
                    cmd.arg("--quiet")
                        .arg("calibrate")
                        .arg(&plan.site_path)
                        .arg("--out")
                        .arg(&plan.out)
                        .arg("--member")
                        .arg(i.to_string())
                        .env("RAYON_NUM_THREADS", threads_each.to_string())
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped());
                    if args.force {
                        cmd.arg("--force");
                    }
                    let result = cmd.spawn().map_err(|e| e.to_string()).and_then(|mut child| {
                        let mut tail = Vec::new();
                        if let Some(err) = child.stderr.take() {
                            for line in BufReader::new(err).lines().map_while(Result::ok) {
                                tail.push(line);
                            }
                        }
                        let status = child.wait().map_err(|e| e.to_string())?;
                        if status.success() { Ok(()) } else { Err(tail.join("\n")) }
                    });
                    let k = done.fetch_add(1, Ordering::SeqCst) + 1;
                    match result {
                        Ok(()) => {
                            let what =
                                talus_calibrate::table::read(&plan.row_path(i), &plan.params)
                                    .ok()
                                    .and_then(|r| r.first().map(describe))
                                    .unwrap_or_default();
                            ctx.say(format!("  [{k}/{n}] member {i}: {what}"));
                        }
                        Err(e) => {
                            ctx.say(format!("  [{k}/{n}] member {i}: error: {e}"));
                            failures
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(format!("member {i}: {e}"));
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    if !failures.is_empty() {
        return Err(format!(
            "{} of {n} members could not run:\n{}",
            failures.len(),
            failures.join("\n")
        )
        .into());
    }
    Ok(())
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let t = Instant::now();
    let plan = Plan::new(&args.site, &args.out)?;
    if args.count {
        println!("{}", plan.n());
        return Ok(());
    }
    if let Some(i) = args.member {
        let row = run_member(&plan, i, args.force, ctx)?;
        ctx.say(format!("member {i}: {}; row {}", describe(&row), p(&plan.row_path(i))));
        return Ok(());
    }
    if args.collect {
        return collect(&plan, ctx);
    }
    prepare(&plan, args.force, ctx)?;
    if args.prepare {
        println!(
            "calibrate `{}`: shared stages done; now run members 0 to {} with --member I, then --collect",
            plan.site.site.name,
            plan.n() - 1
        );
        return Ok(());
    }
    run_all(&plan, &args, ctx)?;
    collect(&plan, ctx)?;
    ctx.say(format!("calibrate: done in {:.1} s", t.elapsed().as_secs_f64()));
    Ok(())
}
