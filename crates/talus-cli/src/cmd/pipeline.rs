//! `talus pipeline SITE.toml --out runs/NAME`: every stage of a site, as subprocesses of
//! this executable, with a manifest and hash-based skipping.
//!
//! * The site file is checked first: unknown tables or keys (including each stage's
//!   table, deserialised into the stage's `Config`), missing input files and an unknown
//!   `--from` stage are errors that name the culprit before any stage runs. Paths in the
//!   site file are relative to the current directory, which is meant to be the
//!   repository root (`make pipeline` runs from there).
//! * Stages: `synth` (if `[inputs] synth = true`) → `ingest_pre` → `ingest_post` → `diff`
//!   → `terrain` → `seed` → `run` → `compare`; a thesis-heap site (`[inputs] thesis_dir`,
//!   `thesis_n`) runs `seed` (thesis import) → `run` → `compare`. Each stage is
//!   `talus <stage> ... --config SITE.toml` per the command-line contract.
//! * `OUT/manifest.json` records per stage the command, its config table, the SHA-256 of
//!   its inputs and outputs, the talus version and executable hash, wall time and status.
//!   A stage whose command, config, inputs, version and executable are unchanged and whose
//!   outputs still have their recorded hashes is skipped (`--force` re-runs everything,
//!   `--from STAGE` re-runs that stage and the following ones).
//! * A failing stage stops the pipeline; earlier outputs stay; the error names the stage
//!   and repeats the end of its error output.

use super::{CmdError, Ctx};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

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
    pub from: Option<String>,
}

/// `[site]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SiteTable {
    /// Site name.
    pub name: String,
    /// One-paragraph description.
    #[serde(default)]
    pub description: String,
    /// EPSG code of the site's horizontal CRS (informative; the data carry their CRS).
    #[serde(default)]
    pub epsg: Option<u32>,
    /// CRS as WKT or `EPSG:n` (informative).
    #[serde(default)]
    pub crs: Option<String>,
}

/// `[inputs]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InputsTable {
    /// Pre-event LAS/LAZ files.
    #[serde(default)]
    pub pre: Vec<PathBuf>,
    /// Post-event LAS/LAZ files.
    #[serde(default)]
    pub post: Vec<PathBuf>,
    /// Generate the surveys with `talus synth` from the `[synth]` table.
    #[serde(default)]
    pub synth: bool,
    /// Directory of the thesis's granular-layer files (`size_N.data`, `position_N.data`).
    #[serde(default)]
    pub thesis_dir: Option<PathBuf>,
    /// N of the thesis case.
    #[serde(default)]
    pub thesis_n: Option<u32>,
}

/// A site file, strictly.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteFile {
    pub site: SiteTable,
    #[serde(default)]
    pub inputs: InputsTable,
    #[serde(default)]
    pub synth: Option<toml::Table>,
    #[serde(default)]
    pub ingest: Option<toml::Table>,
    #[serde(default)]
    pub diff: Option<toml::Table>,
    #[serde(default)]
    pub terrain: Option<toml::Table>,
    #[serde(default)]
    pub seed: Option<toml::Table>,
    #[serde(default)]
    pub run: Option<toml::Table>,
    #[serde(default)]
    pub compare: Option<toml::Table>,
    /// Options of `talus calibrate` (not a stage of the pipeline).
    #[serde(default)]
    pub calibrate: Option<toml::Table>,
}

/// One stage to run.
#[derive(Debug, Clone)]
pub struct Stage {
    /// Unique name (`ingest_pre`, ...).
    pub name: &'static str,
    /// Site table holding its options.
    pub table: &'static str,
    /// Arguments after the executable.
    pub args: Vec<String>,
    /// Files it reads.
    pub inputs: Vec<PathBuf>,
    /// Files it must write.
    pub outputs: Vec<PathBuf>,
    /// Directories whose files are also recorded as outputs (e.g. figures).
    pub output_dirs: Vec<PathBuf>,
}

/// Every stage name, in order.
pub const STAGES: &[&str] =
    &["synth", "ingest_pre", "ingest_post", "diff", "terrain", "seed", "run", "compare"];

fn p(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Parse and check a site file: every key known, every stage table valid for its stage,
/// every input file present. Nothing is run.
pub fn check_site(path: &Path) -> Result<SiteFile, CmdError> {
    let table = crate::config::read_toml(path)?;
    let site: SiteFile = SiteFile::deserialize(toml::Value::Table(table.clone()))
        .map_err(|e| format!("{}: {}", path.display(), e.to_string().trim()))?;
    let origin = format!(" ({})", path.display());
    let t = |o: &Option<toml::Table>| o.clone().unwrap_or_default();
    use crate::config::from_table;
    from_table::<talus_synth::Config>(t(&site.synth), "synth", &origin)?;
    from_table::<talus_ingest::Config>(t(&site.ingest), "ingest", &origin)?;
    from_table::<talus_diff::Config>(t(&site.diff), "diff", &origin)?;
    from_table::<talus_terrain::Config>(t(&site.terrain), "terrain", &origin)?;
    from_table::<talus_seed::Config>(t(&site.seed), "seed", &origin)?;
    from_table::<talus_engine::config::Config>(t(&site.run), "run", &origin)?;
    from_table::<talus_compare::Config>(t(&site.compare), "compare", &origin)?;
    from_table::<talus_calibrate::Config>(t(&site.calibrate), "calibrate", &origin)?;

    let i = &site.inputs;
    let surveys = !i.pre.is_empty() || !i.post.is_empty();
    let thesis = i.thesis_dir.is_some() || i.thesis_n.is_some();
    let kinds = [surveys, i.synth, thesis].iter().filter(|k| **k).count();
    if kinds != 1 {
        return Err(format!(
            "{}: [inputs] needs exactly one of `pre`/`post` (LAS/LAZ files), `synth = true`, or `thesis_dir`/`thesis_n`",
            path.display()
        )
        .into());
    }
    if surveys && (i.pre.is_empty() || i.post.is_empty()) {
        return Err(format!(
            "{}: [inputs] needs both `pre` and `post` survey files",
            path.display()
        )
        .into());
    }
    if i.synth && site.synth.is_none() {
        return Err(
            format!("{}: [inputs] synth = true needs a [synth] table", path.display()).into()
        );
    }
    for f in i.pre.iter().chain(&i.post) {
        if !f.is_file() {
            return Err(format!(
                "{}: input file `{}` not found (paths are relative to {})",
                path.display(),
                f.display(),
                cwd()
            )
            .into());
        }
    }
    if thesis {
        let (Some(dir), Some(n)) = (&i.thesis_dir, i.thesis_n) else {
            return Err(format!(
                "{}: [inputs] needs both `thesis_dir` and `thesis_n`",
                path.display()
            )
            .into());
        };
        for f in thesis_files(dir, n) {
            if !f.is_file() {
                return Err(format!(
                    "{}: input file `{}` not found (paths are relative to {})",
                    path.display(),
                    f.display(),
                    cwd()
                )
                .into());
            }
        }
    }
    Ok(site)
}

fn cwd() -> String {
    std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| ".".into())
}

fn thesis_files(dir: &Path, n: u32) -> Vec<PathBuf> {
    vec![dir.join(format!("size_{n}.data")), dir.join(format!("position_{n}.data"))]
}

/// Where each stage writes: by default `OUT/<stage>` (`OUT/points` for both ingests);
/// `talus calibrate` points the shared stages at one directory and the varied ones at a
/// member's.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub synth: PathBuf,
    pub points: PathBuf,
    pub diff: PathBuf,
    pub terrain: PathBuf,
    pub seed: PathBuf,
    pub run: PathBuf,
    pub compare: PathBuf,
}

impl Layout {
    /// Every stage under `out`.
    pub fn under(out: &Path) -> Self {
        Layout {
            synth: out.join("synth"),
            points: out.join("points"),
            diff: out.join("diff"),
            terrain: out.join("terrain"),
            seed: out.join("seed"),
            run: out.join("run"),
            compare: out.join("compare"),
        }
    }
}

/// The stages of a site, with their command lines, in order.
pub fn plan(site: &SiteFile, site_path: &Path, out: &Path) -> Vec<Stage> {
    plan_in(site, site_path, &Layout::under(out))
}

/// The stages of a site writing into `layout`, in order.
pub fn plan_in(site: &SiteFile, site_path: &Path, layout: &Layout) -> Vec<Stage> {
    let cfg = ["--config".to_string(), p(site_path)];
    let d = |s: &str| match s {
        "synth" => layout.synth.clone(),
        "points" => layout.points.clone(),
        "diff" => layout.diff.clone(),
        "terrain" => layout.terrain.clone(),
        "seed" => layout.seed.clone(),
        "run" => layout.run.clone(),
        _ => layout.compare.clone(),
    };
    let with_cfg = |mut a: Vec<String>| {
        a.extend(cfg.iter().cloned());
        a
    };
    let mut stages = Vec::new();
    let files = |dir: &Path, names: &[&str]| names.iter().map(|n| dir.join(n)).collect::<Vec<_>>();
    let i = &site.inputs;
    let (seed_blocks, run_dir, compare_dir) =
        (d("seed").join("blocks.parquet"), d("run"), d("compare"));
    let run_outputs = files(
        &run_dir,
        &["final.parquet", "trajectories.parquet", "energies.parquet", "diagnostics.parquet"],
    );
    let compare_outputs = files(&compare_dir, &["metrics.parquet", "metrics.json", "report.html"]);
    if let (Some(dir), Some(n)) = (&i.thesis_dir, i.thesis_n) {
        stages.push(Stage {
            name: "seed",
            table: "seed",
            args: with_cfg(vec![
                "seed".into(),
                "--thesis-dir".into(),
                p(dir),
                "--thesis-n".into(),
                n.to_string(),
                "--out".into(),
                p(&seed_blocks),
            ]),
            inputs: thesis_files(dir, n),
            outputs: vec![seed_blocks.clone()],
            output_dirs: vec![],
        });
        stages.push(Stage {
            name: "run",
            table: "run",
            args: with_cfg(vec![
                "run".into(),
                "--blocks".into(),
                p(&seed_blocks),
                "--out-dir".into(),
                p(&run_dir),
            ]),
            inputs: vec![seed_blocks.clone()],
            outputs: run_outputs.clone(),
            output_dirs: vec![],
        });
        let mut inputs = run_outputs.clone();
        inputs.push(seed_blocks.clone());
        stages.push(Stage {
            name: "compare",
            table: "compare",
            args: with_cfg(vec![
                "compare".into(),
                "--run".into(),
                p(&run_dir),
                "--blocks".into(),
                p(&seed_blocks),
                "--out-dir".into(),
                p(&compare_dir),
            ]),
            inputs,
            outputs: compare_outputs,
            output_dirs: vec![compare_dir.join("figures")],
        });
        return stages;
    }
    let (pre, post) = if i.synth {
        let sd = d("synth");
        let outputs = files(&sd, &["pre.laz", "post.laz", "truth.parquet", "truth.json"]);
        stages.push(Stage {
            name: "synth",
            table: "synth",
            args: with_cfg(vec!["synth".into(), "--out-dir".into(), p(&sd)]),
            inputs: vec![],
            outputs,
            output_dirs: vec![],
        });
        (vec![sd.join("pre.laz")], vec![sd.join("post.laz")])
    } else {
        (i.pre.clone(), i.post.clone())
    };
    let points = d("points");
    let (pre_pq, post_pq) = (points.join("pre.parquet"), points.join("post.parquet"));
    for (name, ins, outp) in [("ingest_pre", &pre, &pre_pq), ("ingest_post", &post, &post_pq)] {
        let mut args = vec!["ingest".to_string()];
        args.extend(ins.iter().map(|f| p(f)));
        args.extend(["--out".to_string(), p(outp)]);
        stages.push(Stage {
            name,
            table: "ingest",
            args: with_cfg(args),
            inputs: ins.clone(),
            outputs: vec![outp.clone()],
            output_dirs: vec![],
        });
    }
    let diff = d("diff");
    let (dod, zones) = (diff.join("dod.parquet"), diff.join("zones.parquet"));
    stages.push(Stage {
        name: "diff",
        table: "diff",
        args: with_cfg(vec![
            "diff".into(),
            "--pre".into(),
            p(&pre_pq),
            "--post".into(),
            p(&post_pq),
            "--out-dir".into(),
            p(&diff),
        ]),
        inputs: vec![pre_pq.clone(), post_pq.clone()],
        outputs: files(
            &diff,
            &["dod.parquet", "zones.parquet", "m3c2.parquet", "c2c.parquet", "summary.json"],
        ),
        output_dirs: vec![],
    });
    let terrain = d("terrain");
    let terrain_outputs =
        files(&terrain, &["vertices.parquet", "triangles.parquet", "terrain.ply"]);
    stages.push(Stage {
        name: "terrain",
        table: "terrain",
        args: with_cfg(vec![
            "terrain".into(),
            "--points".into(),
            p(&post_pq),
            "--pre".into(),
            p(&pre_pq),
            "--zones".into(),
            p(&zones),
            "--out-dir".into(),
            p(&terrain),
        ]),
        inputs: vec![post_pq.clone(), pre_pq.clone(), zones.clone()],
        outputs: terrain_outputs.clone(),
        output_dirs: vec![],
    });
    stages.push(Stage {
        name: "seed",
        table: "seed",
        args: with_cfg(vec![
            "seed".into(),
            "--dod".into(),
            p(&dod),
            "--zones".into(),
            p(&zones),
            "--terrain".into(),
            p(&terrain),
            "--out".into(),
            p(&seed_blocks),
        ]),
        inputs: {
            let mut v = vec![dod.clone(), zones.clone()];
            v.extend(files(&terrain, &["vertices.parquet", "triangles.parquet"]));
            v
        },
        outputs: vec![seed_blocks.clone()],
        output_dirs: vec![],
    });
    let tin = files(&terrain, &["vertices.parquet", "triangles.parquet"]);
    let mut run_inputs = vec![seed_blocks.clone()];
    run_inputs.extend(tin.iter().cloned());
    stages.push(Stage {
        name: "run",
        table: "run",
        args: with_cfg(vec![
            "run".into(),
            "--blocks".into(),
            p(&seed_blocks),
            "--terrain".into(),
            p(&terrain),
            "--out-dir".into(),
            p(&run_dir),
        ]),
        inputs: run_inputs,
        outputs: run_outputs.clone(),
        output_dirs: vec![],
    });
    let mut inputs = run_outputs;
    inputs.extend([dod, zones, seed_blocks.clone()]);
    inputs.extend(tin);
    let mut outputs = compare_outputs;
    outputs.push(compare_dir.join("thickness.parquet"));
    stages.push(Stage {
        name: "compare",
        table: "compare",
        args: with_cfg(vec![
            "compare".into(),
            "--run".into(),
            p(&run_dir),
            "--diff".into(),
            p(&diff),
            "--terrain".into(),
            p(&terrain),
            "--blocks".into(),
            p(&seed_blocks),
            "--out-dir".into(),
            p(&compare_dir),
        ]),
        inputs,
        outputs,
        output_dirs: vec![compare_dir.join("figures")],
    });
    stages
}

/// A file and its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hashed {
    pub path: String,
    pub sha256: String,
}

/// A stage's record in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageRecord {
    pub stage: String,
    /// Full command line (executable first).
    pub command: Vec<String>,
    /// The stage's table of the site file.
    pub config: serde_json::Value,
    pub inputs: Vec<Hashed>,
    pub outputs: Vec<Hashed>,
    pub talus_version: String,
    /// SHA-256 of the talus executable that ran the stage.
    pub executable_sha256: String,
    /// Wall time of the stage's last actual run, s.
    pub wall_time_s: f64,
    /// `ran`, `skipped` (unchanged inputs) or `failed`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `OUT/manifest.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub site: String,
    pub site_file: String,
    pub site_sha256: String,
    pub talus_version: String,
    pub stages: Vec<StageRecord>,
    /// The report, when the pipeline completed.
    #[serde(default)]
    pub report: Option<String>,
}

fn hash_files(files: &[PathBuf]) -> Result<Vec<Hashed>, CmdError> {
    files.iter().map(|f| Ok(Hashed { path: p(f), sha256: talus_io::sha256_file(f)? })).collect()
}

fn dir_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in dirs {
        if let Ok(rd) = std::fs::read_dir(d) {
            let mut v: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.is_file()
                        && !f.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect();
            v.sort();
            out.extend(v);
        }
    }
    out
}

fn write_manifest(path: &Path, m: &Manifest) -> Result<(), CmdError> {
    let text = serde_json::to_string_pretty(m)?;
    talus_io::AtomicFile::write_all(path, text.as_bytes())?;
    Ok(())
}

/// Whether a previous record lets the stage be skipped.
fn unchanged(prev: &StageRecord, now: &StageRecord) -> bool {
    (prev.status == "ran" || prev.status == "skipped")
        && prev.command == now.command
        && prev.config == now.config
        && prev.inputs == now.inputs
        && prev.talus_version == now.talus_version
        && prev.executable_sha256 == now.executable_sha256
        && !prev.outputs.is_empty()
        && prev
            .outputs
            .iter()
            .all(|o| talus_io::sha256_file(Path::new(&o.path)).is_ok_and(|h| h == o.sha256))
}

/// Run one stage as a subprocess, echoing its stderr prefixed with its name; the error
/// carries the last lines of its stderr.
fn execute(exe: &Path, stage: &Stage, quiet: bool) -> Result<(), String> {
    let mut cmd = Command::new(exe);
    cmd.args(&stage.args).stdout(Stdio::inherit()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let mut tail: Vec<String> = Vec::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if !quiet || line.starts_with("error") || line.starts_with("  caused by") {
                eprintln!("  [{}] {line}", stage.name);
            }
            tail.push(line);
            if tail.len() > 20 {
                tail.remove(0);
            }
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        let why: Vec<&String> = tail
            .iter()
            .filter(|l| l.starts_with("error") || l.starts_with("  caused by"))
            .collect();
        let why = if why.is_empty() {
            tail.join("\n")
        } else {
            why.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
        };
        return Err(format!("{status}: {}", why.trim()));
    }
    for o in &stage.outputs {
        if !o.is_file() {
            return Err(format!("exited successfully but did not write {}", o.display()));
        }
    }
    Ok(())
}

/// How [`run_stages`] ended.
pub enum Outcome {
    /// Every stage ran or was skipped.
    Done(Manifest),
    /// A stage failed (recorded in the manifest, which is written).
    Failed { stage: String, error: String },
}

/// Run `stages` in order with hash-based skipping against the manifest at
/// `manifest_path` (`manifest` gives its header; its stages are filled in), writing the
/// manifest after every stage. `raw` is the site file whose tables are recorded as each
/// stage's config. `force` re-runs every stage; `from` re-runs that stage and the later
/// ones. Errors are for what is not a stage failure (hashing, writing the manifest).
pub fn run_stages(
    stages: &[Stage],
    raw: &toml::Table,
    mut manifest: Manifest,
    manifest_path: &Path,
    force: bool,
    from: Option<&str>,
    ctx: &Ctx,
) -> Result<Outcome, CmdError> {
    let exe = std::env::current_exe()?;
    let exe_hash = talus_io::sha256_file(&exe)?;
    let version = env!("CARGO_PKG_VERSION").to_string();
    if let Some(dir) = manifest_path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let previous: Manifest = std::fs::read_to_string(manifest_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let mut forced = force;
    for stage in stages {
        if from == Some(stage.name) {
            forced = true;
        }
        let config = raw
            .get(stage.table)
            .map(serde_json::to_value)
            .transpose()?
            .unwrap_or(serde_json::json!({}));
        let mut command = vec![p(&exe)];
        command.extend(stage.args.iter().cloned());
        let mut record = StageRecord {
            stage: stage.name.to_string(),
            command,
            config,
            inputs: hash_files(&stage.inputs)
                .map_err(|e| format!("stage `{}`: input: {e}", stage.name))?,
            outputs: vec![],
            talus_version: version.clone(),
            executable_sha256: exe_hash.clone(),
            wall_time_s: 0.0,
            status: "ran".into(),
            error: None,
        };
        // The executable path may differ between checkouts; compare the rest.
        let prev = previous.stages.iter().find(|r| r.stage == stage.name).map(|r| {
            let mut r = r.clone();
            r.command[0] = record.command[0].clone();
            r
        });
        if !forced && let Some(prev) = prev.filter(|pr| unchanged(pr, &record)) {
            ctx.say(format!("  {:<12} unchanged, skipped", stage.name));
            record.outputs = prev.outputs.clone();
            record.wall_time_s = prev.wall_time_s;
            record.status = "skipped".into();
            manifest.stages.push(record);
            write_manifest(manifest_path, &manifest)?;
            continue;
        }
        // Once a stage re-runs, later stages' inputs change and they re-run too (by hash).
        ctx.say(format!("  {:<12} running: talus {}", stage.name, stage.args.join(" ")));
        let t = Instant::now();
        let result = execute(&exe, stage, ctx.quiet);
        record.wall_time_s = t.elapsed().as_secs_f64();
        if let Err(e) = result {
            record.status = "failed".into();
            record.error = Some(e.clone());
            manifest.stages.push(record);
            write_manifest(manifest_path, &manifest)?;
            return Ok(Outcome::Failed { stage: stage.name.to_string(), error: e });
        }
        let mut outs = stage.outputs.clone();
        outs.extend(dir_files(&stage.output_dirs));
        record.outputs = hash_files(&outs)?;
        ctx.say(format!("  {:<12} done in {:.1} s", stage.name, record.wall_time_s));
        manifest.stages.push(record);
        write_manifest(manifest_path, &manifest)?;
    }
    Ok(Outcome::Done(manifest))
}

/// A manifest's header for a site file (no stages yet).
pub fn manifest_header(site: &SiteFile, site_path: &Path) -> Result<Manifest, CmdError> {
    Ok(Manifest {
        site: site.site.name.clone(),
        site_file: p(site_path),
        site_sha256: talus_io::sha256_file(site_path)?,
        talus_version: env!("CARGO_PKG_VERSION").to_string(),
        stages: Vec::new(),
        report: None,
    })
}

pub fn run(args: Args, ctx: &Ctx) -> Result<(), CmdError> {
    let t_start = Instant::now();
    let site = check_site(&args.site)?;
    let from =
        match &args.from {
            Some(f) => Some(STAGES.iter().position(|s| s == f).ok_or_else(|| {
                format!("--from {f}: unknown stage (one of {})", STAGES.join(", "))
            })?),
            None => None,
        };
    let stages = plan(&site, &args.site, &args.out);
    if let (Some(_), Some(name)) = (from, args.from.as_deref())
        && !stages.iter().any(|s| s.name == name)
    {
        let names: Vec<&str> = stages.iter().map(|s| s.name).collect();
        return Err(format!(
            "--from {name}: this site has no such stage (its stages: {})",
            names.join(", ")
        )
        .into());
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let manifest_path = args.out.join("manifest.json");
    let raw = crate::config::read_toml(&args.site)?;
    ctx.say(format!(
        "pipeline `{}`: {} stages into {}",
        site.site.name,
        stages.len(),
        args.out.display()
    ));
    let header = manifest_header(&site, &args.site)?;
    let mut manifest = match run_stages(
        &stages,
        &raw,
        header,
        &manifest_path,
        args.force,
        args.from.as_deref(),
        ctx,
    )? {
        Outcome::Done(m) => m,
        Outcome::Failed { stage, error, .. } => {
            return Err(
                format!("pipeline `{}`: stage `{stage}` failed: {error}", site.site.name).into()
            );
        }
    };
    let report = args.out.join("compare").join("report.html");
    manifest.report = Some(p(&report));
    write_manifest(&manifest_path, &manifest)?;
    let ran = manifest.stages.iter().filter(|s| s.status == "ran").count();
    println!(
        "pipeline `{}` done in {:.1} s ({} stages run, {} skipped). Report: {}",
        site.site.name,
        t_start.elapsed().as_secs_f64(),
        ran,
        manifest.stages.len() - ran,
        report.display()
    );
    Ok(())
}
