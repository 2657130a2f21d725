//! Running stages in this process, in order, with hash-based skipping against the
//! manifest, which is written after every stage.

use crate::manifest::{Manifest, StageRecord, StageStatus, hash_files};
use crate::site::Site;
use crate::stage::{Job, Stage, StageName};
use crate::{Context, Error};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;
use talus_io::Progress;

/// What makes stages run again although nothing changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Re-run every stage.
    pub force: bool,
    /// Re-run this stage and every later one.
    pub from: Option<StageName>,
}

/// How [`run_stages`] ended.
#[derive(Debug)]
pub enum Outcome {
    /// Every stage ran or was skipped.
    Done(Manifest),
    /// A stage failed (recorded in the manifest, which is written).
    Failed { stage: StageName, error: String },
}

/// The error of a stage's library, boxed.
pub type StageError = Box<dyn std::error::Error + Send + Sync>;

/// An error with its causes, one per line (`caused by: ...`); a cause whose text the
/// lines above already hold is not repeated.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(&format!("\n  caused by: {text}"));
        }
        source = c.source();
    }
    s
}

/// What a stage's library reports: its summary, and the files it wrote besides the
/// stage's fixed outputs (compare's figures).
pub struct Executed {
    pub summary: String,
    pub written: Vec<PathBuf>,
}

/// Run one stage's library on the site's typed options.
pub fn execute(job: &Job, site: &Site, progress: &dyn Progress) -> Result<Executed, StageError> {
    let f = &site.file;
    let out = |path: &Path| format!(" -> {}", path.display());
    let summary = match job {
        Job::Synth { out_dir } => {
            let cfg = f.synth.as_ref().ok_or("[inputs] synth = true needs a [synth] table")?;
            format!("{}{}", talus_synth::run(cfg, out_dir, progress)?, out(out_dir))
        }
        Job::Ingest { inputs, out: o } => {
            format!("{}{}", talus_ingest::run(&f.ingest, inputs, o, progress)?, out(o))
        }
        Job::Diff { pre, post, out_dir } => {
            format!("{}{}", talus_diff::run(&f.diff, pre, post, out_dir, progress)?, out(out_dir))
        }
        Job::Terrain { points, pre, zones, out_dir } => {
            let s =
                talus_terrain::run(&f.terrain, points, Some(pre), Some(zones), out_dir, progress)?;
            format!("{s}{}", out(out_dir))
        }
        Job::Seed { dod, zones, terrain, out: o } => {
            let s = talus_seed::run(&f.seed, dod, zones, Some(terrain), o, None, progress)?;
            format!("{s}{}", out(o))
        }
        Job::ThesisImport { dir, n, out: o } => {
            let s = talus_seed::import_thesis(&f.seed, dir, *n as usize, o, None)?;
            format!("{s}{}", out(o))
        }
        Job::Run { blocks, terrain, out_dir } => {
            // An interrupted run of the same configuration and inputs continues from its
            // last checkpoint (byte-identical to an uninterrupted run).
            let t = terrain.as_deref();
            let resume = talus_engine::driver::resumable(&f.run, blocks, t, out_dir)?.is_some();
            let s = talus_engine::run(&f.run, blocks, t, out_dir, resume, progress)?;
            format!("{s}{}", out(out_dir))
        }
        Job::Compare { inputs, out_dir } => {
            let s = talus_compare::run(&f.compare, inputs, &site.info(), out_dir, progress)?;
            return Ok(Executed { summary: s.to_string(), written: s.written });
        }
    };
    Ok(Executed { summary, written: Vec::new() })
}

/// The effective configuration a stage runs with, as recorded in the manifest.
pub fn stage_config(site: &Site, stage: StageName) -> serde_json::Value {
    let f = &site.file;
    let v = match stage {
        StageName::Synth => serde_json::to_value(&f.synth),
        StageName::IngestPre | StageName::IngestPost => serde_json::to_value(&f.ingest),
        StageName::Diff => serde_json::to_value(&f.diff),
        StageName::Terrain => serde_json::to_value(&f.terrain),
        StageName::Seed => serde_json::to_value(&f.seed),
        StageName::Run => serde_json::to_value(&f.run),
        StageName::Compare => serde_json::to_value(&f.compare),
    };
    v.unwrap_or(serde_json::Value::Null)
}

fn executable_sha256() -> Result<String, Error> {
    static HASH: OnceLock<Result<String, String>> = OnceLock::new();
    HASH.get_or_init(|| {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        talus_io::sha256_file(&exe).map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|message| Error::Output { path: "(talus executable)".into(), message })
}

/// Run `stages` of `site` in order, skipping those whose record in the manifest at
/// `manifest_path` still holds (`manifest` gives the header; its stages are filled in),
/// writing the manifest after every stage. A stage's failure is an [`Outcome`]; errors
/// are for what is not (hashing, writing the manifest).
pub fn run_stages(
    stages: &[Stage],
    site: &Site,
    mut manifest: Manifest,
    manifest_path: &Path,
    options: &RunOptions,
    ctx: &Context,
) -> Result<Outcome, Error> {
    let exe_hash = executable_sha256()?;
    let version = env!("CARGO_PKG_VERSION").to_string();
    // One writer per output directory: the pipeline holds its directory for its whole
    // life (its stages lock their own directories inside it).
    let dir = manifest_path.parent().unwrap_or(Path::new("."));
    let _lock = talus_io::OutputLock::directory(dir)?;
    let previous = Manifest::read_or_default(manifest_path);
    let mut forced = options.force;
    for stage in stages {
        if options.from == Some(stage.name) {
            forced = true;
        }
        let mut command = stage.job.command();
        command.extend(["--config".to_string(), site.path.to_string_lossy().into_owned()]);
        let mut record = StageRecord {
            stage: stage.name.to_string(),
            command,
            config: stage_config(site, stage.name),
            inputs: hash_files(&stage.inputs)
                .map_err(|e| Error::Input { stage: stage.name, message: e.to_string() })?,
            outputs: vec![],
            talus_version: version.clone(),
            executable_sha256: exe_hash.clone(),
            wall_time_s: 0.0,
            status: StageStatus::Ran,
            error: None,
        };
        let prev = previous.record(stage.name);
        if !forced && let Some(prev) = prev.filter(|pr| pr.allows_skipping(&record)) {
            (ctx.log)(&format!("  {:<12} unchanged, skipped", stage.name));
            record.outputs = prev.outputs.clone();
            record.wall_time_s = prev.wall_time_s;
            record.status = StageStatus::Skipped;
            manifest.stages.push(record);
            manifest.write(manifest_path)?;
            continue;
        }
        // Once a stage re-runs, later stages' inputs change and they re-run too (by hash).
        (ctx.log)(&format!("  {:<12} running: {}", stage.name, record.command.join(" ")));
        let t = Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            execute(&stage.job, site, ctx.progress)
        }));
        ctx.progress.finish();
        record.wall_time_s = t.elapsed().as_secs_f64();
        let result = match result {
            Ok(Ok(summary)) => match stage.outputs.iter().find(|o| !o.is_file()) {
                None => Ok(summary),
                Some(o) => Err(format!("finished but did not write {}", o.display())),
            },
            Ok(Err(e)) => Err(error_chain(e.as_ref())),
            Err(panic) => Err(format!(
                "panicked: {}",
                panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)")
            )),
        };
        let mut outs = stage.outputs.clone();
        match result {
            Ok(done) => {
                for line in done.summary.lines() {
                    (ctx.log)(&format!("  [{}] {line}", stage.name));
                }
                for w in done.written {
                    if !outs.contains(&w) {
                        outs.push(w);
                    }
                }
            }
            Err(e) => {
                record.status = StageStatus::Failed;
                record.error = Some(e.clone());
                manifest.stages.push(record);
                manifest.write(manifest_path)?;
                return Ok(Outcome::Failed { stage: stage.name, error: e });
            }
        }
        record.outputs = hash_files(&outs)?;
        (ctx.log)(&format!("  {:<12} done in {:.1} s", stage.name, record.wall_time_s));
        manifest.stages.push(record);
        manifest.write(manifest_path)?;
    }
    Ok(Outcome::Done(manifest))
}
