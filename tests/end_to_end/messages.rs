//! End to end: the messages of issue 19 ("Messages to fix"), as a user sees them.
//!
//! * a LAZ given where a Parquet table is expected says so and names `talus ingest`;
//! * an `--out-dir` that is a file says so, naming it;
//! * no cause is printed twice;
//! * `talus run` without `--terrain` or planes warns that the blocks fall freely;
//! * a run too short for the blocks to leave the scar gives the real reason why the
//!   simulated runout is not applicable, and calibration names that metric.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn talus(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_talus")).args(args).current_dir(dir).output().expect("talus")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/las").join(name)
}

/// No line of the message is repeated as a cause of itself.
fn no_repeated_cause(err: &str) {
    let lines: Vec<&str> = err.lines().map(str::trim).collect();
    for l in &lines {
        if let Some(cause) = l.strip_prefix("caused by: ") {
            let others = lines.iter().filter(|o| !o.starts_with("caused by: "));
            assert!(!others.clone().any(|o| o.contains(cause)), "cause repeated:\n{err}");
        }
    }
}

#[test]
fn messages_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(data("autzen.laz"), d.join("autzen.laz")).unwrap();

    // A LAZ where a Parquet table is expected.
    let o = talus(d, &["diff", "--pre", "autzen.laz", "--post", "autzen.laz", "--out-dir", "o"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("autzen.laz") && err.contains("LAS/LAZ"), "{err}");
    assert!(err.contains("talus ingest"), "{err}");
    assert!(!err.contains("Corrupt footer"), "{err}");
    no_repeated_cause(&err);
    assert!(!d.join("o").exists(), "a refused stage created its directory");

    // Not Parquet at all.
    std::fs::write(d.join("notes.parquet"), "hello").unwrap();
    let o =
        talus(d, &["diff", "--pre", "notes.parquet", "--post", "notes.parquet", "--out-dir", "o"]);
    let err = stderr(&o);
    assert!(err.contains("notes.parquet") && err.contains("not a Parquet table"), "{err}");

    // An output directory that is a file.
    std::fs::write(d.join("afile"), "mine").unwrap();
    let o = talus(d, &["ingest", "autzen.laz", "--out", "afile/points.parquet", "-q"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("afile") && err.contains("is a file, not a directory"), "{err}");
    assert!(!err.contains("os error 17"), "{err}");
    no_repeated_cause(&err);
    assert_eq!(std::fs::read_to_string(d.join("afile")).unwrap(), "mine");
}

#[test]
fn run_without_ground_warns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let blocks = d.join("blocks.parquet");
    let rows = vec![talus_io::blocks::BlockRow {
        id: 1,
        size: [1.0, 1.0, 1.0],
        density: 2600.0,
        mass: 2600.0,
        class: 0,
        centre: [0.0, 0.0, 10.0],
        orientation: [1.0, 0.0, 0.0, 0.0],
        velocity: [0.0; 3],
        angular_velocity: [0.0; 3],
        active: true,
    }];
    let prov = talus_io::Provenance::new("seed", "test", &serde_json::json!({}));
    talus_io::blocks::write(&blocks, &rows, &prov).unwrap();
    let o = talus(
        d,
        &["run", "--blocks", "blocks.parquet", "--out-dir", "r", "--set", "steps=3", "-q"],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("warning:") && err.contains("nothing for the blocks to land on"), "{err}");
    // With a plane, no warning.
    let o = talus(
        d,
        &[
            "run",
            "--blocks",
            "blocks.parquet",
            "--out-dir",
            "r2",
            "--set",
            "steps=3",
            "--set",
            "planes=[{point=[0.0,0.0,0.0],normal=[0.0,0.0,1.0]}]",
            "-q",
        ],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("warning:"), "{err}");
}

/// One step: the blocks are still in the scar. The simulated runout is not applicable
/// because no block lies beyond the crown, not because the survey lacks zones (the
/// surveyed runout is applicable).
#[test]
fn short_run_says_why_runout_is_not_applicable() {
    let dir = tempfile::tempdir().unwrap();
    // The small synthetic site, one step of 0.05 s.
    let site = crate::common::SMALL_SITE.replace("steps = 20", "steps = 1");
    std::fs::write(dir.path().join("site.toml"), site).unwrap();
    let o = talus(dir.path(), &["pipeline", "site.toml", "--out", "r", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("r/compare/metrics.json")).unwrap(),
    )
    .unwrap();
    let get = |name: &str| {
        m["metrics"].as_array().unwrap().iter().find(|x| x["metric"] == name).unwrap().clone()
    };
    let sim = get("runout_simulated");
    assert_eq!(sim["applicable"], false);
    let why = sim["description"].as_str().unwrap();
    assert!(
        why.contains("beyond the scar's crown") && !why.contains("no scar or no deposit"),
        "{why}"
    );
    assert_eq!(get("runout_surveyed")["applicable"], true);
}
