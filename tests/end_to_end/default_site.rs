//! The shipped default site end to end, as `make pipeline` runs it (issues 8 and 16):
//! `talus pipeline pipelines/piton-marcel.toml` with the site file's calibrated `[run]`
//! and `[seed]` reproduces the synthetic survey's deposit (area IoU ≥ 0.5; on the
//! post-event ground instead of the bed every setting gave 0.17-0.20), the fallen mass
//! leaves the scar, the runout is within a quarter of the survey's, the energy balance
//! closes, and every step's jump was solved to the site's certified tolerance without a
//! retry (the position correction keeps every jump feasible), and no penetration deeper
//! than 1 % of the smallest block edge is left (issue 16's goal). Measured (session 43,
//! release, Δt = 0.02 s, contact tolerance 2 mm, correction slop 0 and further passes
//! while a contact is deeper than 1 cm): 452 blocks, IoU 0.585, runout 320 m against
//! 316 m, 17.0 % of the volume in the scar, largest penetration 0.0097 m (0.2 %), every
//! step solved, run stage 12.9 s on 2 cores. Session 41's (the same parameters, four
//! passes alone): IoU 0.595, runout 317 m, 19.1 % in the scar, largest penetration
//! 0.061 m (1.3 %: this test's penetration assertion fails on it), run stage 18.5 s (12.2 s
//! in session 42, same outputs). Session 40's: IoU 0.593, runout 318 m, 19.7 % in the scar,
//! run stage 13.7 s. Session 29's (Δt = 0.04 s, tolerance 5 cm, slop 1 cm): IoU 0.600,
//! runout 332 m, 18.3 % in the scar, run stage 17.6 s. Session 28's (the same parameters, other roundoff in the solver) had given IoU 0.615, a runout
//! of 323 m and 20.9 % in the scar. Session 21's (Δt = 0.02 s) had given IoU 0.602, a runout of 345 m, 15.4 % in the scar and a run
//! stage of 46.5 s. Session 20's (correction on the predicted gaps) had given IoU 0.603 and a
//! runout of 325 m; session 19's contacts and parameters had given IoU 0.600, a runout of 315 m and
//! 27.2 % in the scar; upright blocks (session 17) IoU 0.518 and a runout of 360 m. The
//! run is deterministic, so the figures do not depend on the
//! build profile; the deposit is chaotic in the parameters and in the solver's details
//! (±0.04 of IoU), hence the margins below.

use std::path::Path;
use std::process::Command;
use talus_io::read_table;
use talus_schema::compare;

const TALUS: &str = env!("CARGO_BIN_EXE_talus");

fn metric(dir: &Path, name: &str) -> f64 {
    let t = read_table(&dir.join("metrics.parquet"), &compare::metrics_schema()).unwrap();
    let names = t.strings("metric").unwrap();
    let i = names.iter().position(|n| n == name).unwrap_or_else(|| panic!("metric {name} missing"));
    t.f64s("value").unwrap()[i]
}

/// `talus pipeline pipelines/piton-marcel.toml` with `extra` arguments (e.g. `--set`), into
/// a fresh directory; panics with the output when it fails.
fn run_default_site(extra: &[&str]) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(TALUS)
        .args(["--quiet", "pipeline", "pipelines/piton-marcel.toml"])
        .args(extra)
        .arg("--out")
        .arg(out.path())
        .current_dir(&root)
        .output()
        .expect("talus runs");
    assert!(
        o.status.success(),
        "pipeline failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// The margins every run of the site keeps: area IoU ≥ 0.5, under 30 % of the volume in
/// the scar, the runout within a quarter of the survey's, the energy balance closed; the
/// figures are printed under the name `run`.
fn assert_reproduces_the_deposit(run: &str, m: &dyn Fn(&str) -> f64) {
    println!(
        "{run}: blocks {}, deposit IoU {:.3}, in scar {:.3}, runout {:.1} m (survey {:.1} m), thickness RMSE {:.2} m, max penetration {:.3} m, fallback steps {}",
        m("blocks"),
        m("deposit_iou"),
        m("volume_fraction_in_scar"),
        m("runout_simulated"),
        m("runout_surveyed"),
        m("thickness_rmse"),
        m("max_penetration"),
        m("steps_with_fallback")
    );
    assert!(m("deposit_iou") >= 0.5, "deposit IoU {}", m("deposit_iou"));
    assert!(m("volume_fraction_in_scar") < 0.3, "{}", m("volume_fraction_in_scar"));
    let runout = m("runout_simulated") / m("runout_surveyed");
    assert!((0.75..=1.25).contains(&runout), "runout ratio {runout}");
    assert!(m("energy_balance_residual").abs() < 1e-9, "{}", m("energy_balance_residual"));
    // The correction's further passes keep every penetration within 1 cm (0.2 % of the
    // 4.818 m smallest edge) unless their 8 passes run out.
    let share = m("max_penetration_share");
    assert!(share <= 0.01, "largest penetration {share} of the smallest edge");
}

#[test]
fn default_site_reproduces_the_surveyed_deposit() {
    let out = run_default_site(&[]);
    let c = out.path().join("compare");
    let m = |n: &str| metric(&c, n);
    assert_reproduces_the_deposit("shipped", &m);
    // A few blocks may roll off the TIN's extent (upright blocks: 6 of 357, 1.7 %; on the
    // floor: 3 and 5 of 452, measured).
    assert!(m("volume_fraction_left_domain") < 0.025, "{}", m("volume_fraction_left_domain"));
    // The report's size table gives each class's edges (the site's two classes).
    let html = std::fs::read_to_string(c.join("report.html")).unwrap();
    let sizes = &html[html.find("<h2>Block sizes</h2>").expect("a size table")..];
    for edges in ["15.78 × 10.93 × 9.64", "15.78 × 5.47 × 4.82"] {
        assert!(sizes.contains(&format!("<td class=\"num\">{edges}</td>")), "{edges}: {sizes}");
    }
    // No block leaves the TIN on the shipped site (2026-11-28): the tables held −0 until
    // the sum started at +0.
    let left = m("volume_fraction_left_domain");
    assert!(left.is_sign_positive(), "{left}");
    // Feasible by construction: no island was solved again without separation velocities,
    // every step's islands were solved, and the accepted solutions' certificates hold to
    // the site's tolerance (nlgs at 1e-3; Clarabel as the fallback at 1e-9).
    let d = read_table(
        &out.path().join("run/diagnostics.parquet"),
        &talus_schema::run::diagnostics_schema(),
    )
    .unwrap();
    // A step is solved when its certificate holds the site's tolerance: Clarabel's
    // `AlmostSolved` (it missed its own 1e-9) counts when the certificate says so, and
    // such steps stay rare (none in the shipped run; 1 of 1750 with a seeding tried the
    // same day).
    let statuses = d.strings("status").unwrap();
    let accuracy = d.f64s("accuracy").unwrap();
    let almost = statuses.iter().filter(|s| s.as_str() == "AlmostSolved").count();
    let unsolved: Vec<&String> = statuses
        .iter()
        .filter(|s| s.as_str() != "Solved" && s.as_str() != "AlmostSolved")
        .collect();
    assert!(
        unsolved.is_empty(),
        "{} steps not solved, e.g. {:?}",
        unsolved.len(),
        unsolved.first()
    );
    assert!(almost <= 3, "{almost} steps AlmostSolved");
    // Every step's certificate, the AlmostSolved ones included, holds 1e-3.
    let worst = accuracy.iter().copied().fold(0.0, f64::max);
    assert!(worst <= 1e-3, "worst certificate {worst:e}");
}

/// The site's calibration holds at half its Δt. Every contact within `[run] tolerance`
/// enters the jump as if touching, and a sliding block that sits within the correction's
/// slop is lifted and loaded at every step (docs/physics.md §2), so both made the deposit
/// depend on Δt. With the site's tolerance of 2 mm and slop of 0, Δt = 0.01 s gives
/// about the deposit of the shipped 0.02 s. Measured (session 43): IoU 0.576, runout
/// 305 m, 26 % of the volume in the scar (0.585, 320 m and 17 % at 0.02 s; session 41,
/// before the further passes: 0.576, 291 m and 24 %). With the same
/// friction and the site's earlier tolerance of 5 cm and slop of 1 cm (`--set
/// run.tolerance=0.05 --set run.separation.slop=0.01`), Δt = 0.01 s gave IoU 0.200, a
/// runout of 179 m and 88 % in the scar: every assertion below fails (session 40: 0.303,
/// 182 m, 80 %).
#[test]
fn default_site_holds_at_half_its_time_step() {
    let out = run_default_site(&["--set", "run.dt=0.01"]);
    let c = out.path().join("compare");
    let m = |n: &str| metric(&c, n);
    assert_reproduces_the_deposit("Δt = 0.01 s", &m);
}
