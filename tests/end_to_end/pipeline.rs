//! End to end: `talus pipeline` on a reduced synthetic site in a temporary directory.
//!
//! * every stage's outputs exist and validate against their schemas;
//! * the report lists every metric and embeds every figure;
//! * a second run skips every stage (manifest);
//! * a run in another directory, with the default `wall_times = true`, gives byte-identical
//!   Parquet files but `run/timings.parquet`, and leaves the user's files there alone;
//! * a bad option of any stage is refused before the first stage runs;
//! * a stage failure stops the pipeline, names the stage, keeps earlier outputs;
//! * bad site files (unknown key, missing input) are refused before any stage runs;
//! * every site file shipped in `pipelines/` is valid and prints a site file that prints the same.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use talus_io::read_table;
use talus_schema::{blocks, compare, diff, points, run, terrain};

const TALUS: &str = env!("CARGO_BIN_EXE_talus");

/// The small synthetic site (tests/end_to_end/common.rs).
const SITE: &str = crate::common::SMALL_SITE;

fn talus(dir: &Path, args: &[&str]) -> Output {
    Command::new(TALUS).args(args).current_dir(dir).output().expect("talus runs")
}

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn pipeline(dir: &Path) -> Output {
    talus(dir, &["pipeline", "site.toml", "--out", "runs/small"])
}

fn site_dir(site: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("site.toml"), site).unwrap();
    dir
}

fn parquet_files(root: &Path) -> Vec<PathBuf> {
    let mut v = crate::common::files_under(root);
    v.retain(|p| p.extension().is_some_and(|x| x == "parquet"));
    v
}

#[test]
fn synthetic_site_end_to_end() {
    let a = site_dir(SITE);
    let o = pipeline(a.path());
    assert!(o.status.success(), "pipeline failed:\n{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("runs/small/compare/report.html"),
        "{}",
        text(&o)
    );
    let r = a.path().join("runs/small");

    // Every output exists and validates against its schema.
    for f in [
        "synth/pre.laz",
        "synth/post.laz",
        "synth/truth.json",
        "diff/summary.json",
        "terrain/terrain.ply",
        "compare/metrics.json",
        "manifest.json",
    ] {
        assert!(r.join(f).is_file(), "{f} missing");
    }
    macro_rules! check {
        ($f:expr, $schema:expr) => {{
            let t = read_table(&r.join($f), &$schema).unwrap_or_else(|e| panic!("{}: {e}", $f));
            assert!(t.num_rows() > 0, "{} is empty", $f);
        }};
    }
    check!("points/pre.parquet", points::core_schema());
    check!("points/post.parquet", points::core_schema());
    check!("diff/dod.parquet", diff::dod_schema());
    check!("diff/zones.parquet", diff::zones_schema());
    check!("terrain/vertices.parquet", terrain::vertices_schema());
    check!("terrain/triangles.parquet", terrain::triangles_schema());
    check!("seed/blocks.parquet", blocks::schema());
    check!("run/final.parquet", blocks::schema());
    check!("run/trajectories.parquet", run::trajectories_schema());
    check!("run/energies.parquet", run::energies_schema());
    check!("run/diagnostics.parquet", run::diagnostics_schema());
    check!("compare/metrics.parquet", compare::metrics_schema());
    check!("compare/thickness.parquet", compare::thickness_schema());
    assert!(
        read_table(&r.join("diff/dod.parquet"), &diff::dod_schema())
            .unwrap()
            .metadata
            .contains_key(diff::GRID_KEY)
    );

    // The report lists every metric and embeds every figure.
    let html = std::fs::read_to_string(r.join("compare/report.html")).unwrap();
    let metrics =
        read_table(&r.join("compare/metrics.parquet"), &compare::metrics_schema()).unwrap();
    let names = metrics.strings("metric").unwrap();
    for m in [
        "deposit_iou",
        "volume_overlap",
        "thickness_rmse",
        "runout_simulated",
        "travel_angle_surveyed",
        "volume_fraction_left_domain",
    ] {
        assert!(names.iter().any(|n| n == m), "metric {m} missing");
    }
    for n in &names {
        assert!(html.contains(&format!("id=\"metric-{n}\"")), "report lacks metric {n}");
    }
    for f in ["dod", "deposit", "energy_kinetic", "energy_dissipation", "trajectories"] {
        assert!(r.join(format!("compare/figures/{f}.png")).is_file(), "figure {f} missing");
        assert!(html.contains(&format!("id=\"fig-{f}\"")), "report lacks figure {f}");
    }

    // Manifest: every stage ran, with hashes.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    let stages = manifest["stages"].as_array().unwrap();
    let names: Vec<&str> = stages.iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["synth", "ingest_pre", "ingest_post", "diff", "terrain", "seed", "run", "compare"]
    );
    for s in stages {
        assert_eq!(s["status"], "ran", "{s}");
        assert!(!s["outputs"].as_array().unwrap().is_empty());
        assert_eq!(s["outputs"][0]["sha256"].as_str().unwrap().len(), 64);
    }

    // A second run skips every stage.
    let o = pipeline(a.path());
    assert!(o.status.success(), "{}", text(&o));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.join("manifest.json")).unwrap()).unwrap();
    for s in manifest["stages"].as_array().unwrap() {
        assert_eq!(s["status"], "skipped", "{}", s["stage"]);
    }

    // Another directory, holding files of the user's where Talus writes: byte-identical
    // Parquet but the wall times, and the user's files untouched and not listed as outputs.
    let b = site_dir(SITE);
    let rb = b.path().join("runs/small");
    let mine = ["compare/figures/my-sketch.png", "run/checkpoints/notes.txt"];
    for f in mine {
        std::fs::create_dir_all(rb.join(f).parent().unwrap()).unwrap();
        std::fs::write(rb.join(f), "the user's").unwrap();
    }
    let o = pipeline(b.path());
    assert!(o.status.success(), "{}", text(&o));
    let listed = std::fs::read_to_string(rb.join("manifest.json")).unwrap();
    for f in mine {
        assert_eq!(std::fs::read_to_string(rb.join(f)).unwrap(), "the user's", "{f} touched");
        let name = Path::new(f).file_name().unwrap().to_string_lossy().into_owned();
        assert!(!listed.contains(&name), "{f} recorded as an output");
    }
    assert!(listed.contains("figures/dod.png"), "figures are recorded");
    let t = read_table(&r.join("run/timings.parquet"), &run::timings_schema()).unwrap();
    assert!(t.f64s("t_step").unwrap()[1..].iter().all(|t| *t > 0.0), "wall times measured");
    let files = parquet_files(&r);
    assert_eq!(files, parquet_files(&rb));
    assert!(files.len() >= 15, "{files:?}");
    for f in files.iter().filter(|f| !f.ends_with("run/timings.parquet")) {
        assert!(
            std::fs::read(r.join(f)).unwrap() == std::fs::read(rb.join(f)).unwrap(),
            "{} differs between runs",
            f.display()
        );
    }

    // A bad option of a later stage is refused before the first stage runs: the error
    // names the stage and the option, and the manifest is not touched.
    let manifest_before = std::fs::read(rb.join("manifest.json")).unwrap();
    std::fs::write(b.path().join("site.toml"), SITE.replace("dt = 0.05", "dt = -1.0")).unwrap();
    let o = pipeline(b.path());
    assert!(!o.status.success());
    let msg = text(&o);
    assert!(msg.contains("[run]") && msg.contains("dt"), "{msg}");
    assert!(!msg.contains("running:"), "a stage ran before the check:\n{msg}");
    assert_eq!(std::fs::read(rb.join("manifest.json")).unwrap(), manifest_before);

    // A stage that fails while it runs (a QP solver allowed one iteration): the pipeline
    // stops and names the stage; earlier stages are skipped and their outputs stay.
    let failing = SITE.replace(
        "output_every = 5\n",
        "output_every = 5\nsolver = { method = \"clarabel\", tolerance = 1e-9, max_iterations = 1 }\n",
    );
    std::fs::write(b.path().join("site.toml"), failing).unwrap();
    let before = std::fs::read(rb.join("seed/blocks.parquet")).unwrap();
    let o = pipeline(b.path());
    assert!(!o.status.success());
    let msg = text(&o);
    assert!(msg.contains("stage `run` failed") && msg.contains("not solved"), "{msg}");
    assert_eq!(std::fs::read(rb.join("seed/blocks.parquet")).unwrap(), before);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rb.join("manifest.json")).unwrap()).unwrap();
    let stages = manifest["stages"].as_array().unwrap();
    let last = stages.last().unwrap().clone();
    assert_eq!((last["stage"].as_str(), last["status"].as_str()), (Some("run"), Some("failed")));
    assert!(stages[..stages.len() - 1].iter().all(|s| s["status"] == "skipped"), "{manifest}");
}

#[test]
fn bad_site_files_are_refused_before_any_stage() {
    for (site, needle) in [
        (SITE.replace("[site]\n", "[site]\nnmae = \"x\"\n"), "nmae"),
        (SITE.replace("[diff]\n", "[diff]\nbogus_option = 1\n"), "bogus_option"),
        (SITE.replace("[compare]\n", "[compare]\nbulking = 1.2\n"), "bulking"),
        (
            SITE.replace(
                "[inputs]\nsynth = true",
                "[inputs]\npre = [\"data/pre.laz\"]\npost = [\"data/post.laz\"]",
            ),
            "data/pre.laz",
        ),
        (format!("{SITE}\n[extra]\nx = 1\n"), "extra"),
    ] {
        let d = site_dir(&site);
        let o = pipeline(d.path());
        assert!(!o.status.success());
        let msg = text(&o);
        assert!(msg.contains(needle), "expected `{needle}` in:\n{msg}");
        assert!(!d.path().join("runs/small/manifest.json").exists(), "a stage ran for {needle}");
    }
    let d = site_dir(SITE);
    let o =
        talus(d.path(), &["pipeline", "site.toml", "--out", "runs/small", "--from", "simulate"]);
    assert!(!o.status.success() && text(&o).contains("simulate"));
}

/// `talus pipeline --set TABLE.KEY=VALUE` and `--print-config`, as for the stages.
#[test]
fn pipeline_takes_set_and_print_config() {
    let a = site_dir(SITE);
    let o = talus(
        a.path(),
        &[
            "pipeline",
            "site.toml",
            "--out",
            "runs/small",
            "--set",
            "run.dt=0.02",
            "--set",
            "run.solver={method=\"clarabel\",tolerance=1e-9,max_iterations=50}",
            "--print-config",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let printed: toml::Table = String::from_utf8_lossy(&o.stdout).parse().unwrap();
    assert_eq!(printed["run"]["dt"].as_float(), Some(0.02));
    assert_eq!(printed["run"]["steps"].as_integer(), Some(20), "the file's options stay");
    assert_eq!(printed["diff"]["dod"]["cell_size"].as_float(), Some(1.0), "defaults are filled in");
    assert!(String::from_utf8_lossy(&o.stdout).contains("tolerance = 1e-9"), "{}", text(&o));
    assert!(!a.path().join("runs/small").exists(), "--print-config ran something");
    // Overrides are checked like the file: an unknown key or a bad value is refused
    // before any stage runs.
    for (set, expect) in [("run.bogus=1", "bogus"), ("run.dt=-1", "dt")] {
        let o = talus(a.path(), &["pipeline", "site.toml", "--out", "runs/small", "--set", set]);
        assert!(!o.status.success());
        assert!(text(&o).contains(expect), "{}", text(&o));
        assert!(!a.path().join("runs/small").exists());
    }
}

/// Every site file shipped in `pipelines/` is valid as it stands: `make pipeline SITE=NAME`
/// would not stop on its configuration. Each is read and every stage's options checked
/// (`--print-config` validates as a run does), its `[site] name` is its file's name (the
/// run directory `make pipeline` writes), and the effective site it prints is itself a
/// site file that prints the same again.
#[test]
fn every_shipped_site_file_is_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut sites: Vec<PathBuf> = std::fs::read_dir(root.join("pipelines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    sites.sort();
    assert!(sites.len() >= 3, "{sites:?}");
    let out = tempfile::tempdir().unwrap();
    for site in &sites {
        let rel = site.strip_prefix(&root).unwrap().to_str().unwrap().to_string();
        let print = |file: &str| {
            let o = talus(&root, &["pipeline", file, "--out", "runs/unused", "--print-config"]);
            assert!(o.status.success(), "{file}: {}", text(&o));
            String::from_utf8(o.stdout).unwrap()
        };
        let printed = print(&rel);
        let table: toml::Table = printed.parse().unwrap();
        let stem = site.file_stem().unwrap().to_str().unwrap();
        assert_eq!(table["site"]["name"].as_str(), Some(stem), "{rel}");
        let again = out.path().join(format!("{stem}.toml"));
        std::fs::write(&again, &printed).unwrap();
        assert_eq!(print(again.to_str().unwrap()), printed, "{rel}: the printed site differs");
    }
    assert!(!root.join("runs/unused").exists(), "--print-config ran something");
}
