//! End to end: crash safety of `talus pipeline` on the thesis heap N = 1000 (600 steps,
//! checkpoints every 100, `wall_times = false`).
//!
//! * killed (SIGKILL) during its run stage, the pipeline run again continues the run from
//!   its last checkpoint and ends with every Parquet file byte-identical to an
//!   uninterrupted pipeline's, and no temporary file left;
//! * a second process on the same output directory fails at once, naming the holder's pid;
//! * stopped by SIGTERM during its run stage, the pipeline removes the temporary files it
//!   was writing and ends by the signal.
//!
//! Each signal is sent once the run stage has published a checkpoint. The rest of the run
//! takes about half a second, so on a loaded machine it can end first; the attempt is then
//! made again in a fresh directory, and one of [`ATTEMPTS`] must land during the run stage.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const TALUS: &str = env!("CARGO_BIN_EXE_talus");

fn site(repo: &Path) -> String {
    format!(
        r#"
[site]
name = "heap-crash"

[inputs]
thesis_dir = "{}"
thesis_n = 1000

[run]
dt = 0.001
steps = 600
kappa = {{ mode = "thesis", factor = 0.5 }}
planes = [{{ point = [0.0, 0.0, 0.0], normal = [0.0, 0.0, 1.0] }}]
output_every = 10
gravity = 9.80665
solver = {{ method = "warm", tolerance = 1e-9, max_iterations = 200, fallback_tolerance = 1e-9 }}
checkpoint_every = 100
allow_initial_overlap = true
wall_times = false
"#,
        repo.join("data/thesis-granular").display()
    )
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn pipeline(dir: &Path, out: &str) -> Output {
    Command::new(TALUS)
        .args(["pipeline", "site.toml", "--out", out])
        .current_dir(dir)
        .output()
        .expect("talus runs")
}

/// `talus pipeline site.toml --out OUT` in `dir`, in the background, silent.
fn spawn_pipeline(dir: &Path, out: &str) -> Child {
    Command::new(TALUS)
        .args(["pipeline", "site.toml", "--out", out])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

use crate::common::files_under as files;

/// Attempts at signalling a pipeline during its run stage (see the tests).
const ATTEMPTS: usize = 5;

/// Wait (at most 120 s) until `cond` holds, polling, while `child` runs: false when it
/// ended (successfully) before `cond` was seen to hold.
fn wait_while_running(child: &mut Child, what: &str, cond: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "the pipeline ended with {status:?} before {what}");
            return false;
        }
        assert!(t.elapsed() < Duration::from_secs(120), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn killed_pipeline_resumes_its_run_exactly_and_one_writer_per_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("site.toml"), site(&repo())).unwrap();

    let a = pipeline(d, "a");
    assert!(a.status.success(), "{}", text(&a));

    // Killed once the run stage has written its checkpoint of step 200. The rest of the run
    // takes about half a second: on a loaded machine (the suite's other tests) it can end
    // between the checkpoint and the kill, and then the kill missed the run stage; the
    // attempt is made again in a fresh directory, and one of them must land mid-run.
    let out = (0..ATTEMPTS)
        .map(|k| format!("b{k}"))
        .find(|out| {
            let mut child = spawn_pipeline(d, out);
            let lock = d.join(out).join(".talus.lock");
            if !wait_while_running(&mut child, "the pipeline's lock", || {
                std::fs::read_to_string(&lock).is_ok_and(|s| !s.trim().is_empty())
            }) {
                return false;
            }
            // A second writer on the same directory is refused at once, naming the holder.
            let second = pipeline(d, out);
            let msg = text(&second);
            if second.status.success() {
                // The holder had ended before the second one started, which then found every
                // stage done: this attempt shows nothing.
                let status = child.wait().unwrap();
                assert!(status.success(), "the holder ended with {status:?}; {msg}");
                return false;
            }
            assert!(
                msg.contains("in use by another talus process")
                    && msg.contains(&child.id().to_string()),
                "{msg}"
            );
            if !wait_while_running(&mut child, "the checkpoint of step 200", || {
                d.join(out).join("run/checkpoints/step_0000000200/state.json").exists()
            }) {
                return false;
            }
            child.kill().unwrap();
            child.wait().unwrap();
            !d.join(out).join("run/final.parquet").exists()
        })
        .unwrap_or_else(|| panic!("no kill in {ATTEMPTS} attempts landed before the run ended"));
    let out = out.as_str();

    let b = pipeline(d, out);
    assert!(b.status.success(), "{}", text(&b));
    assert!(text(&b).contains("resumed from the checkpoint of step"), "{}", text(&b));
    let (fa, fb) = (files(&d.join("a")), files(&d.join(out)));
    assert_eq!(fa, fb, "the same files");
    let parquet: Vec<_> =
        fa.iter().filter(|f| f.extension().is_some_and(|x| x == "parquet")).collect();
    assert!(parquet.len() >= 6, "{parquet:?}");
    for f in parquet {
        assert!(
            std::fs::read(d.join("a").join(f)).unwrap()
                == std::fs::read(d.join(out).join(f)).unwrap(),
            "{} differs after the resumed pipeline",
            f.display()
        );
    }
    assert!(
        !fb.iter().any(|f| talus_io::lock::is_temporary(&f.file_name().unwrap().to_string_lossy())),
        "temporary files left: {fb:?}"
    );
}

/// The temporary files under `root` (hidden directories included).
fn temporaries(root: &Path) -> Vec<PathBuf> {
    files(root)
        .into_iter()
        .filter(|f| talus_io::lock::is_temporary(&f.file_name().unwrap().to_string_lossy()))
        .collect()
}

#[test]
fn a_pipeline_stopped_by_sigterm_removes_its_temporary_files() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("site.toml"), site(&repo())).unwrap();
    // Mid-run: the run's tables are being written to temporary files. As above, on a
    // loaded machine the run can end before the signal lands; then again, in a fresh
    // directory.
    let stopped = (0..ATTEMPTS).map(|k| format!("stopped{k}")).find_map(|out| {
        let mut child = spawn_pipeline(d, &out);
        if !wait_while_running(&mut child, "the checkpoint of step 100", || {
            d.join(&out).join("run/checkpoints/step_0000000100/state.json").exists()
        }) {
            return None;
        }
        let before = temporaries(&d.join(&out));
        let mut kill = Command::new("kill");
        kill.args(["-TERM", &child.id().to_string()]);
        assert!(kill.status().unwrap().success());
        let t = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if t.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("still running 60 s after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if d.join(&out).join("run/final.parquet").exists() {
            // The run stage had ended before the signal.
            return None;
        }
        assert!(!before.is_empty(), "no temporary file while the run is written");
        assert_eq!(status.signal(), Some(15), "ended by SIGTERM: {status:?}");
        Some((out, before))
    });
    let (stopped, before) = stopped
        .unwrap_or_else(|| panic!("no SIGTERM in {ATTEMPTS} attempts landed before the run ended"));
    let stopped = d.join(stopped);
    let left = temporaries(&stopped);
    assert!(left.is_empty(), "temporary files left: {left:?} (were {before:?})");
    // Nor the checkpoint segment in progress; the published checkpoints stay.
    let checkpoints = stopped.join("run/checkpoints");
    let names: Vec<String> = std::fs::read_dir(&checkpoints)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with(".segment_")), "segment left: {names:?}");
    assert!(names.iter().any(|n| n == "step_0000000100"), "checkpoints kept: {names:?}");
}
