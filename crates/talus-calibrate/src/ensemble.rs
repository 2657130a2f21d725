//! The ensemble on top of `talus-pipeline`: the stages no varied parameter touches run
//! once into `OUT/shared/`; each member runs `seed` (if a `seed.` option varies), `run`
//! and `compare` into `OUT/members/NNNN/` on its own typed site (the site's tables with
//! the member's values, also written as that directory's `site.toml` for the record),
//! then writes its `row.parquet`; the collection gathers the rows.
//!
//! Members run in this process, `jobs` at once, each in its own rayon pool of
//! `cores / jobs` threads (outputs do not depend on the thread count); `--member I`
//! runs one member alone (one process per member, e.g. a Slurm array).

use crate::table::{self, Metrics, Row, Status};
use crate::{BaseBlocks, Config, Error, Member, Parameter};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use talus_pipeline::{Context, Layout, Manifest, Outcome, RunOptions, Site, Stage, StageName};
use talus_schema::file_names::calibrate as names;

impl Config {
    /// The `[calibrate]` table of a site, typed and validated (`None` without one).
    pub fn from_site(site: &Site) -> Result<Option<Config>, Error> {
        let Some(table) = site.file.calibrate.clone() else { return Ok(None) };
        let origin = format!(" ({})", site.path.display());
        let config: Config = talus_pipeline::options::from_table(table, "calibrate", &origin)
            .map_err(|e| Error::Ensemble(e.to_string()))?;
        config.validate().map_err(|e| Error::Ensemble(format!("{}: {e}", site.path.display())))?;
        Ok(Some(config))
    }
}

/// A calibration, checked whole before any stage runs: the site, its `[calibrate]`
/// options, and every member's site.
pub struct Ensemble {
    pub site: Site,
    pub config: Config,
    pub params: Vec<Parameter>,
    base: BaseBlocks,
    /// The calibration directory.
    pub out: PathBuf,
    /// The stages each member runs.
    member_stages: Vec<StageName>,
}

/// The order in which [`Ensemble::run_members`] starts the members: the uncalibrated
/// reference (the last member, or the last `replicates` members, when there is one) first,
/// then the search's members in their order. The reference's textbook values lie outside the search's ranges, and on the
/// default site it was the slowest member in each of three calibrations (98–195 s against
/// 51–98 s for the others), so starting it last left a core idle for most of its run
/// (session 23: 286 s against 330 s for the same members).
pub fn execution_order(config: &Config) -> Vec<usize> {
    let n = crate::member_count(config);
    // The reference's runs are the last point's.
    let search = if config.reference.is_empty() {
        n
    } else {
        crate::sample::search_count(config).saturating_mul(config.replicates).min(n)
    };
    (search..n).chain(0..search).collect()
}

/// A member's summary line.
pub fn describe(row: &Row) -> String {
    if row.status == Status::Ok {
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

/// What the collection found and wrote.
#[derive(Debug)]
pub struct Collected {
    pub rows: Vec<Row>,
    /// Index into `rows` of the best member.
    pub best: Option<usize>,
    /// Its point over its replicates.
    pub best_point: Option<table::Point>,
    pub summary: crate::report::Summary,
}

impl Ensemble {
    /// Check the site and its `[calibrate]` table, and every member's options.
    pub fn new(site: Site, out: &Path) -> Result<Self, Error> {
        if matches!(site.inputs, talus_pipeline::Inputs::Thesis { .. }) {
            return Err(Error::Ensemble(format!(
                "{}: calibration needs surveys to compare with; this is a thesis-heap site",
                site.path.display()
            )));
        }
        let config = Config::from_site(&site)?.ok_or_else(|| {
            Error::Ensemble(format!("{}: no [calibrate] table", site.path.display()))
        })?;
        let base = BaseBlocks {
            size: site.file.seed.size,
            extra_sizes: site.file.seed.extra_sizes.clone(),
        };
        let params = crate::parameters(&config);
        let mut member_stages = vec![StageName::Run, StageName::Compare];
        if config.varies_seed() {
            member_stages.insert(0, StageName::Seed);
        }
        let e = Ensemble { site, config, params, base, out: out.to_path_buf(), member_stages };
        for m in crate::members(&e.config) {
            e.member_site(&m)?;
        }
        Ok(e)
    }

    /// Members of the search.
    pub fn len(&self) -> usize {
        crate::member_count(&self.config)
    }

    /// Whether the search has no member (refused by validation).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shared_layout(&self) -> Layout {
        Layout::under(&self.out.join(names::SHARED))
    }

    fn member_dir(&self, i: usize) -> PathBuf {
        self.out.join(names::MEMBERS).join(format!("{i:04}"))
    }

    /// Member i's row.
    pub fn row_path(&self, i: usize) -> PathBuf {
        self.member_dir(i).join(names::ROW)
    }

    /// Member m's site: the site's tables with the member's values, typed and checked.
    fn member_site(&self, m: &Member) -> Result<Site, Error> {
        let mut table = crate::sample::apply(&self.site.raw, &self.params, m, &self.base)?;
        crate::sample::perturb(&mut table, m, self.config.replicate_speed)?;
        let replicate = if self.config.replicates > 1 {
            format!(" (point {}, replicate {})", m.point, m.replicate)
        } else {
            String::new()
        };
        let text = format!(
            "# Member {}{replicate} of the calibration of {} (talus calibrate): {}\n{}",
            m.index,
            self.site.path.display(),
            self.params
                .iter()
                .zip(&m.values)
                .map(|(p, v)| format!("{} = {v}", p.name))
                .collect::<Vec<_>>()
                .join(", "),
            toml::to_string(&table).map_err(|e| Error::Ensemble(e.to_string()))?
        );
        let path = self.member_dir(m.index).join(names::MEMBER_SITE);
        Site::from_text(&path, text).map_err(|e| {
            let notes = crate::sample::keys_added_beside(&self.site.raw, &self.params);
            let hint = if notes.is_empty() {
                String::new()
            } else {
                format!(" ([calibrate.parameters]: {})", notes.join("; "))
            };
            Error::Ensemble(format!(
                "member {} of [calibrate] in {}: {e}{hint}",
                m.index,
                self.site.path.display()
            ))
        })
    }

    /// Stages run once for all members.
    pub fn shared_stages(&self) -> Vec<Stage> {
        talus_pipeline::plan(&self.site, &self.shared_layout())
            .into_iter()
            .filter(|s| !self.member_stages.contains(&s.name))
            .collect()
    }

    /// Stages of member i (on its site), reading the shared outputs.
    fn member_stages(&self, i: usize, site: &Site) -> Vec<Stage> {
        let dir = self.member_dir(i);
        let mut layout = self.shared_layout();
        if self.member_stages.contains(&StageName::Seed) {
            layout.seed = dir.join("seed");
        }
        layout.run = dir.join("run");
        layout.compare = dir.join("compare");
        talus_pipeline::plan(site, &layout)
            .into_iter()
            .filter(|s| self.member_stages.contains(&s.name))
            .collect()
    }

    fn provenance(&self) -> talus_io::Provenance {
        talus_io::Provenance::new("calibrate", env!("CARGO_PKG_VERSION"), &self.config)
    }

    /// The shared stages (unchanged ones are skipped, by their manifest).
    pub fn prepare(&self, force: bool, ctx: &Context) -> Result<(), Error> {
        let stages = self.shared_stages();
        (ctx.log)(&format!(
            "calibrate `{}`: {} shared stages into {}",
            self.site.name(),
            stages.len(),
            self.out.join(names::SHARED).display()
        ));
        let manifest = self.out.join(names::SHARED).join(talus_schema::file_names::MANIFEST);
        let options = RunOptions { force, from: None };
        match talus_pipeline::run_stages(
            &stages,
            &self.site,
            Manifest::new(&self.site),
            &manifest,
            &options,
            ctx,
        )? {
            Outcome::Done(_) => Ok(()),
            Outcome::Failed { stage, error } => Err(Error::Ensemble(format!(
                "calibrate `{}`: shared stage `{stage}` failed: {error}",
                self.site.name()
            ))),
        }
    }

    /// Member i: its stages, then its row. A failing stage is the row's status, not an
    /// error.
    pub fn run_member(&self, i: usize, force: bool, ctx: &Context) -> Result<Row, Error> {
        let n = self.len();
        if i >= n {
            return Err(Error::Ensemble(format!(
                "--member {i}: the search has {n} members (0 to {})",
                n - 1
            )));
        }
        for s in self.shared_stages() {
            if let Some(missing) = s.outputs.iter().find(|o| !o.is_file()) {
                return Err(Error::Ensemble(format!(
                    "member {i}: the shared stage `{}` has not run ({} is missing): run `talus calibrate {} --out {} --prepare` first",
                    s.name,
                    missing.display(),
                    self.site.path.display(),
                    self.out.display()
                )));
            }
        }
        let member = crate::member(&self.config, i);
        let site = self.member_site(&member)?;
        let dir = self.member_dir(i);
        talus_io::create_dir(&dir)
            .map_err(|e| Error::Output { path: dir.clone(), message: e.to_string() })?;
        talus_io::AtomicFile::write_all(&site.path, site.text.as_bytes())?;
        let stages = self.member_stages(i, &site);
        let t = Instant::now();
        let options = RunOptions { force, from: None };
        let manifest_path = dir.join(talus_schema::file_names::MANIFEST);
        let outcome = match talus_pipeline::run_stages(
            &stages,
            &site,
            Manifest::new(&site),
            &manifest_path,
            &options,
            ctx,
        )? {
            Outcome::Done(m) => {
                let wall: f64 = m.stages.iter().map(|s| s.wall_time_s).sum();
                let metrics =
                    dir.join("compare").join(talus_schema::file_names::compare::METRICS_PARQUET);
                Metrics::read(&metrics).map(|x| (x, wall)).map_err(|e| e.to_string())
            }
            Outcome::Failed { stage, error } => Err(format!("stage `{stage}` failed: {error}")),
        };
        let wall = match &outcome {
            Ok((_, w)) => *w,
            Err(_) => t.elapsed().as_secs_f64(),
        };
        let wall = if self.config.wall_times { wall } else { 0.0 };
        let row = Row::new(&member, outcome.map(|(m, _)| m), &self.config.weights, wall);
        let prov = self.provenance().with_extra("talus:calibrate_member", i.to_string());
        table::write(&self.row_path(i), &self.params, std::slice::from_ref(&row), &prov)?;
        Ok(row)
    }

    /// Every member, `jobs` at once (0 = the available cores), each in its own thread
    /// pool; `ctx.log` gets one line per member when it ends, and the stages of each
    /// member report their progress to `ctx.progress.child("member I")`. Errors (not failed members) are
    /// collected and returned together.
    pub fn run_members(&self, jobs: usize, force: bool, ctx: &Context) -> Result<(), Error> {
        // One writer per calibration directory (members lock their own directories).
        let _lock = talus_io::OutputLock::directory(&self.out)?;
        let n = self.len();
        let cores = std::thread::available_parallelism().map(|c| c.get()).unwrap_or(1);
        let jobs = if jobs == 0 { cores } else { jobs }.min(n).max(1);
        let threads_each = (cores / jobs).max(1);
        (ctx.log)(&format!(
            "calibrate `{}`: {n} members, {jobs} at once ({threads_each} threads each)",
            self.site.name()
        ));
        let order = execution_order(&self.config);
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let quiet = talus_pipeline::silent();
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(|| {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads_each).build();
                    while let Some(&i) = order.get(next.fetch_add(1, Ordering::SeqCst)) {
                        // The member's stages report on a line of their own.
                        let line = ctx.progress.child(&format!("member {i}"));
                        let member_ctx = Context { progress: &*line, log: quiet.log };
                        let result = match &pool {
                            Ok(pool) => pool.install(|| self.run_member(i, force, &member_ctx)),
                            Err(e) => Err(Error::Ensemble(format!("thread pool: {e}"))),
                        };
                        let k = done.fetch_add(1, Ordering::SeqCst) + 1;
                        match result {
                            Ok(row) => {
                                (ctx.log)(&format!("  [{k}/{n}] member {i}: {}", describe(&row)))
                            }
                            Err(e) => {
                                (ctx.log)(&format!("  [{k}/{n}] member {i}: error: {e}"));
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
            return Err(Error::Ensemble(format!(
                "{} of {n} members could not run:\n{}",
                failures.len(),
                failures.join("\n")
            )));
        }
        Ok(())
    }

    /// Every member's row into `runs.parquet`, `best.toml`, the figures and the report.
    /// With `allow_missing`, members without a row are left out (listed by `ctx.log`)
    /// instead of failing.
    pub fn collect(&self, allow_missing: bool, ctx: &Context) -> Result<Collected, Error> {
        let _lock = talus_io::OutputLock::directory(&self.out)?;
        let n = self.len();
        let missing: Vec<usize> = (0..n).filter(|&i| !self.row_path(i).is_file()).collect();
        if allow_missing && missing.len() < n {
            if !missing.is_empty() {
                (ctx.log)(&format!(
                    "warning: {} of {n} members have no row and are left out: {}",
                    missing.len(),
                    missing.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
        } else if !missing.is_empty() {
            let list: Vec<String> = missing.iter().take(20).map(|i| i.to_string()).collect();
            return Err(Error::Ensemble(format!(
                "{} of {n} members have no row ({}{}): run them with `talus calibrate {} --out {} --member I`",
                missing.len(),
                list.join(", "),
                if missing.len() > 20 { ", ..." } else { "" },
                self.site.path.display(),
                self.out.display()
            )));
        }
        let mut rows = Vec::with_capacity(n);
        let mut paths = Vec::with_capacity(n);
        let expected_members = crate::members(&self.config);
        let missing: std::collections::BTreeSet<usize> = missing.into_iter().collect();
        for i in (0..n).filter(|i| !missing.contains(i)) {
            let path = self.row_path(i);
            let mut r = table::read(&path, &self.params)?;
            let expected = &expected_members[i];
            if r.len() != 1
                || r[0].member as usize != i
                || r[0].point as usize != expected.point
                || r[0].replicate as usize != expected.replicate
                || r[0].values != expected.values
                || r[0].reference != expected.reference
            {
                return Err(Error::Ensemble(format!(
                    "{}: this row is not member {i} of the current [calibrate] table (the table changed?): re-run it with --member {i}",
                    path.display()
                )));
            }
            rows.push(r.remove(0));
            paths.push(path);
        }
        let points = table::points(&rows);
        let best_point = table::best_point(&points);
        let best = best_point.map(|p| p.rows[0]);
        let best_site = match best {
            Some(b) => {
                let m = &expected_members[rows[b].member as usize];
                Some(crate::sample::apply(&self.site.raw, &self.params, m, &self.base)?)
            }
            None => None,
        };
        let best_report = best
            .map(|b| format!("{}/{:04}/compare/{}", names::MEMBERS, rows[b].member, names::REPORT));
        let collection = crate::report::Collection {
            site: self.site.name(),
            config: &self.config,
            params: &self.params,
            rows: &rows,
            points: &points,
            best_point,
            best_site: best_site.as_ref(),
            best_report,
        };
        let prov = self.provenance().with_inputs(&paths)?;
        let summary = crate::report::write(&self.out, &collection, &prov, (1200, 900))?;
        // The reach fraction is the search's; the reference is not one of its samples.
        let members: Vec<usize> =
            rows.iter().filter(|r| !r.reference).map(|r| r.member as usize).collect();
        let all = self.out.join(names::REACH_FRACTION_TIF);
        if let Some(k) = self.reach_fraction(&members, &all)? {
            (ctx.log)(&format!("hazard reach fraction of {k} members: {}", all.display()));
        }
        // The calibrated configuration's reach probability, over its replicates.
        let best_runs = self.out.join(names::REACH_FRACTION_BEST_TIF);
        match best_point {
            Some(p) if self.config.replicates > 1 => {
                let runs: Vec<usize> = p.rows.iter().map(|&i| rows[i].member as usize).collect();
                if let Some(k) = self.reach_fraction(&runs, &best_runs)? {
                    (ctx.log)(&format!(
                        "hazard reach fraction of the best point's {k} replicates: {}",
                        best_runs.display()
                    ));
                }
            }
            // A file of an earlier collection with replicates is not this one's.
            _ => {
                if best_runs.is_file() {
                    std::fs::remove_file(&best_runs).map_err(|e| Error::Output {
                        path: best_runs.clone(),
                        message: e.to_string(),
                    })?;
                }
            }
        }
        let best_point = best_point.cloned();
        Ok(Collected { rows, best, best_point, summary })
    }

    /// The fraction of `members` whose blocks passed over each cell, from their
    /// `compare/hazard_passes.tif` (members without one, e.g. failed runs, are left out),
    /// written to `path`; `None` when no member has one. Returns the number of members
    /// counted.
    fn reach_fraction(&self, members: &[usize], path: &Path) -> Result<Option<usize>, Error> {
        use talus_schema::file_names::compare::HAZARD_PASSES_TIF;
        let mut sum: Option<(talus_io::geotiff::GridSpec, Vec<f64>)> = None;
        let mut counted = 0;
        let mut crs = None;
        for &i in members {
            let compare = self.member_dir(i).join("compare");
            let path = compare.join(HAZARD_PASSES_TIF);
            if !path.is_file() {
                continue;
            }
            let (grid, passes) = talus_io::geotiff::read(&path)?;
            match &mut sum {
                None => sum = Some((grid, passes.iter().map(|p| f64::from(*p > 0.0)).collect())),
                Some((g, s)) => {
                    if *g != grid {
                        return Err(Error::Ensemble(format!(
                            "{}: grid {grid:?} differs from the other members' {g:?}",
                            path.display()
                        )));
                    }
                    s.iter_mut().zip(&passes).for_each(|(a, p)| *a += f64::from(*p > 0.0));
                }
            }
            if crs.is_none() {
                let metrics = compare.join(talus_schema::file_names::compare::METRICS_PARQUET);
                crs = talus_io::read_metadata(&metrics)
                    .ok()
                    .and_then(|m| talus_io::Provenance::from_metadata(&m).crs);
            }
            counted += 1;
        }
        let Some((grid, mut fraction)) = sum else { return Ok(None) };
        fraction.iter_mut().for_each(|f| *f /= counted as f64);
        talus_io::geotiff::write(path, &grid, &fraction, crs.as_ref())?;
        Ok(Some(counted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        let c: Config = toml::from_str(text).unwrap();
        c.validate().unwrap();
        c
    }

    #[test]
    fn the_reference_member_starts_first() {
        let with = config(
            "samples = 4\nreference = { restitution = 0.0 }\n[parameters]\nrestitution = { min = 0.1, max = 0.2 }\n",
        );
        assert!(crate::member(&with, 4).reference);
        assert_eq!(execution_order(&with), vec![4, 0, 1, 2, 3]);
        let without = config("samples = 3\n[parameters]\nrestitution = { min = 0.1, max = 0.2 }\n");
        assert_eq!(execution_order(&without), vec![0, 1, 2]);
        // With replicates the reference's runs (the last point's) start first.
        let replicated = config(
            "samples = 2\nreplicates = 2\nreference = { restitution = 0.0 }\n[parameters]\nrestitution = { min = 0.1, max = 0.2 }\n",
        );
        assert_eq!(execution_order(&replicated), vec![4, 5, 0, 1, 2, 3]);
    }
}
