//! End to end: `talus calibrate` on the reduced synthetic site of `tests/pipeline.rs`.
//!
//! * a full calibration writes the runs table, `best.toml`, the report and the hazard
//!   reach fraction (recomputed here from the members' rasters); its best row is the one
//!   with the lowest weighted score recomputed from the table's columns;
//! * the same members run one per process (`--member`, out of order) and collected give
//!   a byte-identical runs table;
//! * `--collect` with missing rows names them (`--allow-missing` leaves them out); a bad `[calibrate]` table names the key
//!   before any stage runs.

use std::path::Path;
use std::process::{Command, Output};
use talus_io::read_table;

const TALUS: &str = env!("CARGO_BIN_EXE_talus");

/// The pipeline test's reduced site (few steps) with a 2 x 2 grid that also re-seeds.
const SITE: &str = include_str!("../../data/fixtures/small-calibration-site.toml");

fn talus(dir: &Path, args: &[&str]) -> Output {
    Command::new(TALUS).args(args).current_dir(dir).output().expect("talus runs")
}

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn site_dir(site: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("site.toml"), site).unwrap();
    dir
}

const OUT: &str = "runs/cal";

#[test]
fn calibration_full_and_by_member_agree() {
    let a = site_dir(SITE);
    let o = talus(a.path(), &["calibrate", "site.toml", "--out", OUT]);
    assert!(o.status.success(), "calibrate failed:\n{}", text(&o));
    let r = a.path().join(OUT);
    for f in ["runs.parquet", "best.toml", "report.html", "figures/sensitivity.png"] {
        assert!(r.join(f).is_file(), "{f} missing");
    }

    // The table: 4 members of the grid in order, then the reference, every column; the
    // best row has the lowest score of the grid's, recomputed from the table's own
    // columns with the configured weights.
    let t = read_table(&r.join("runs.parquet"), &arrow::datatypes::Schema::empty()).unwrap();
    assert_eq!(t.num_rows(), 5);
    assert_eq!(t.u32s("member").unwrap(), vec![0, 1, 2, 3, 4]);
    assert_eq!(t.f64s("restitution").unwrap(), vec![0.1, 0.1, 0.5, 0.5, 0.3]);
    assert_eq!(t.f64s("block_scale").unwrap(), vec![1.0, 1.3, 1.0, 1.3, 1.0]);
    assert_eq!(t.bools("reference").unwrap(), vec![false, false, false, false, true]);
    // Each member's travel angle is atan of its H/L; every member shares the survey's and
    // Scheidegger's (the same scar).
    let (angle, angle_obs, hl_sch) = (
        t.f64s("travel_angle_simulated").unwrap(),
        t.f64s("travel_angle_surveyed").unwrap(),
        t.f64s("h_over_l_scheidegger").unwrap(),
    );
    assert!(angle_obs.iter().all(|a| a == &angle_obs[0]) && hl_sch.iter().all(|h| h == &hl_sch[0]));
    assert!(hl_sch[0] > 0.0 && hl_sch[0] < 1.5, "{hl_sch:?}");
    // A member's travel angle is applicable exactly when its runout is (after a few steps
    // no block has left the scar, so neither is); the survey's always is.
    let runout = t.f64s("runout_simulated").unwrap();
    for (a, l) in angle.iter().zip(&runout) {
        assert_eq!(a.is_nan(), l.is_nan(), "travel angle {a} with runout {l}");
    }
    assert!(angle_obs[0] > 0.0 && angle_obs[0] < 90.0, "{angle_obs:?}");
    assert!(t.strings("status").unwrap().iter().all(|s| s == "ok"), "{:?}", t.strings("error"));
    let (iou, rmse, hbar, score) = (
        t.f64s("deposit_iou").unwrap(),
        t.f64s("thickness_rmse").unwrap(),
        t.f64s("mean_thickness_surveyed").unwrap(),
        t.f64s("score").unwrap(),
    );
    let mut best = 0;
    for i in 0..5 {
        let s = ((1.0 - iou[i]) + 0.25 * rmse[i] / hbar[i]) / 1.25;
        assert!((s - score[i]).abs() < 1e-12, "member {i}: {s} vs {}", score[i]);
        if i < 4 && score[i] < score[best] {
            best = i;
        }
    }
    let best_toml = std::fs::read_to_string(r.join("best.toml")).unwrap();
    assert!(best_toml.contains(&format!("(member {best},")), "{best_toml}");
    let parsed: toml::Table = best_toml.parse().unwrap();
    let e = parsed["run"]["kappa"]["e"].as_float().unwrap();
    assert_eq!(e, t.f64s("restitution").unwrap()[best]);
    let size = parsed["seed"]["size"][0].as_float().unwrap();
    assert!((size - 1.5 * t.f64s("block_scale").unwrap()[best]).abs() < 1e-12);
    // Block size varies: each member seeded its own blocks, other stages are shared.
    assert!(r.join("members/0001/seed/blocks.parquet").is_file());
    assert!(r.join("shared/terrain/vertices.parquet").is_file());
    assert!(!r.join("shared/seed").exists());
    let html = std::fs::read_to_string(r.join("report.html")).unwrap();
    assert!(html.contains("id=\"fig-sensitivity\"") && html.contains("id=\"member-3\""));
    assert!(html.contains("<tr id=\"member-4\" class=\"reference\">"), "{html}");
    assert!(html.contains("id=\"travel-angle\"") && html.contains("uncalibrated reference (4)"));
    // The ensemble's reach fraction is the share of the grid's members (not the
    // reference) whose hazard_passes.tif is non-zero in each cell.
    let (grid, fraction) = talus_io::geotiff::read(&r.join("hazard_reach_fraction.tif")).unwrap();
    let mut expected = vec![0.0; fraction.len()];
    for i in 0..4 {
        let path = r.join(format!("members/{i:04}/compare/hazard_passes.tif"));
        let (g, passes) = talus_io::geotiff::read(&path).unwrap();
        assert_eq!(g, grid);
        expected.iter_mut().zip(&passes).for_each(|(e, p)| *e += f64::from(*p > 0.0) / 4.0);
    }
    assert_eq!(fraction, expected.iter().map(|v| f64::from(*v as f32)).collect::<Vec<_>>());
    assert!(fraction.contains(&1.0) && fraction.iter().all(|f| (0.0..=1.0).contains(f)));

    // One member per process, out of order, then collect: the same table, byte for byte.
    let b = site_dir(SITE);
    let o = talus(b.path(), &["calibrate", "site.toml", "--out", OUT, "--count"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "5");
    let o = talus(b.path(), &["calibrate", "site.toml", "--out", OUT, "--member", "2"]);
    assert!(!o.status.success() && text(&o).contains("--prepare"), "{}", text(&o));
    let o = talus(b.path(), &["calibrate", "site.toml", "--out", OUT, "--prepare"]);
    assert!(o.status.success(), "{}", text(&o));
    for i in ["4", "3", "1", "0"] {
        let o = talus(b.path(), &["calibrate", "site.toml", "--out", OUT, "--member", i]);
        assert!(o.status.success(), "member {i}: {}", text(&o));
    }
    let o = talus(b.path(), &["calibrate", "site.toml", "--out", OUT, "--collect"]);
    assert!(
        !o.status.success() && text(&o).contains("1 of 5 members have no row (2)"),
        "{}",
        text(&o)
    );
    let o =
        talus(b.path(), &["calibrate", "site.toml", "--out", OUT, "--collect", "--allow-missing"]);
    assert!(o.status.success(), "{}", text(&o));
    let partial =
        read_table(&b.path().join(OUT).join("runs.parquet"), &arrow::datatypes::Schema::empty())
            .unwrap();
    assert_eq!(partial.u32s("member").unwrap(), vec![0, 1, 3, 4]);
    let o = talus(b.path(), &["calibrate", "site.toml", "--out", OUT, "--member", "2"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = talus(b.path(), &["calibrate", "site.toml", "--out", OUT, "--collect"]);
    assert!(o.status.success(), "{}", text(&o));
    let rb = b.path().join(OUT);
    assert!(
        std::fs::read(r.join("runs.parquet")).unwrap()
            == std::fs::read(rb.join("runs.parquet")).unwrap(),
        "runs.parquet differs between a full run and members collected"
    );
    assert_eq!(best_toml, std::fs::read_to_string(rb.join("best.toml")).unwrap());
    assert!(
        std::fs::read(r.join("hazard_reach_fraction.tif")).unwrap()
            == std::fs::read(rb.join("hazard_reach_fraction.tif")).unwrap(),
        "the reach fraction differs between a full run and members collected"
    );
}

/// `replicates = 2`: each point of the grid (and the reference) runs twice, replicate 0
/// as the unreplicated calibration's member (same metrics, bit for bit) and replicate 1
/// with `[run] perturbation` (another final state); the best row is replicate 0 of the
/// point with the lowest mean score, recomputed from the table.
#[test]
fn replicates_rank_the_points_by_their_mean_score() {
    let d = site_dir(SITE);
    let o = talus(d.path(), &["calibrate", "site.toml", "--out", OUT]);
    assert!(o.status.success(), "calibrate failed:\n{}", text(&o));
    let rep = "runs/rep";
    let args = ["calibrate", "site.toml", "--out", rep, "--set", "calibrate.replicates=2"];
    let o = talus(d.path(), &args);
    assert!(o.status.success(), "calibrate with replicates failed:\n{}", text(&o));
    assert!(text(&o).contains("over 2 replicates"), "{}", text(&o));
    let schema = arrow::datatypes::Schema::empty();
    let single = read_table(&d.path().join(OUT).join("runs.parquet"), &schema).unwrap();
    let t = read_table(&d.path().join(rep).join("runs.parquet"), &schema).unwrap();
    assert_eq!(t.num_rows(), 10);
    assert_eq!(t.u32s("point").unwrap(), vec![0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
    assert_eq!(t.u32s("replicate").unwrap(), vec![0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(t.bools("reference").unwrap()[8..], [true, true]);
    let (score, score1) = (t.f64s("score").unwrap(), single.f64s("score").unwrap());
    for col in ["deposit_iou", "thickness_rmse", "score", "restitution", "block_scale"] {
        let (a, b) = (t.f64s(col).unwrap(), single.f64s(col).unwrap());
        for p in 0..5 {
            assert_eq!(a[2 * p].to_bits(), b[p].to_bits(), "{col} of point {p}, replicate 0");
        }
    }
    assert_eq!(score1.len(), 5);
    let members = d.path().join(rep).join("members");
    let site1 = std::fs::read_to_string(members.join("0003/site.toml")).unwrap();
    assert!(site1.contains("point 1, replicate 1"), "{site1}");
    let parsed: toml::Table = site1
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .parse()
        .unwrap();
    assert_eq!(parsed["run"]["perturbation"]["seed"].as_integer(), Some(1));
    let site0 = std::fs::read_to_string(members.join("0002/site.toml")).unwrap();
    assert!(!site0.contains("perturbation"), "{site0}");
    let fin = |m: &str| std::fs::read(members.join(m).join("run/final.parquet")).unwrap();
    assert!(fin("0002") != fin("0003"), "the perturbation changed nothing");
    // The best: replicate 0 of the grid point with the lowest mean score.
    let mean = |p: usize| (score[2 * p] + score[2 * p + 1]) / 2.0;
    let best = (0..4).min_by(|&a, &b| mean(a).total_cmp(&mean(b)).then(a.cmp(&b))).unwrap();
    let best_toml = std::fs::read_to_string(d.path().join(rep).join("best.toml")).unwrap();
    assert!(best_toml.contains(&format!("(member {},", 2 * best)), "{best_toml}");
    assert!(best_toml.contains(&format!("Its point ({best}) over 2 replicates")), "{best_toml}");
    assert!(!best_toml.contains("perturbation"), "{best_toml}");
    let html = std::fs::read_to_string(d.path().join(rep).join("report.html")).unwrap();
    assert!(html.contains("id=\"replicates\""), "{html}");
    // The best point's reach probability: the share of its two replicates whose blocks
    // passed over each cell; no such file without replicates.
    let (grid, fraction) =
        talus_io::geotiff::read(&d.path().join(rep).join("hazard_reach_fraction_best.tif"))
            .unwrap();
    let mut expected = vec![0.0; fraction.len()];
    for m in [2 * best, 2 * best + 1] {
        let path = members.join(format!("{m:04}/compare/hazard_passes.tif"));
        let (g, passes) = talus_io::geotiff::read(&path).unwrap();
        assert_eq!(g, grid);
        expected.iter_mut().zip(&passes).for_each(|(e, p)| *e += f64::from(*p > 0.0) / 2.0);
    }
    assert_eq!(fraction, expected);
    assert!(fraction.contains(&1.0));
    assert!(!d.path().join(OUT).join("hazard_reach_fraction_best.tif").exists());
}

#[test]
fn bad_calibrate_tables_are_refused_before_any_stage() {
    for (site, needle) in [
        (SITE.replace("search = \"grid\"", "serach = \"grid\""), "serach"),
        (SITE.replace("restitution = {", "restitutoin = {"), "restitutoin"),
        (SITE.replace("values = [0.1, 0.5]", "values = [0.1, 1.5]"), "member 2"),
        (
            SITE.replace(
                "block_scale = { values = [1.0, 1.3] }",
                "keys = { \"compare.min_thickness\" = { values = [0.1] } }",
            ),
            "compare.min_thickness",
        ),
        (SITE.replace("[calibrate.parameters]\n", "[calibrate.parameters]\nfoo = 1\n"), "foo"),
        (
            SITE.replace("[calibrate.parameters]\n", "replicates = 0\n[calibrate.parameters]\n"),
            "replicates",
        ),
        (
            SITE.replace("block_scale = 1.0 }", "block_scale = 1.0, beta = 0.5 }"),
            "reference.\"beta\"",
        ),
    ] {
        let d = site_dir(&site);
        let o = talus(d.path(), &["calibrate", "site.toml", "--out", OUT]);
        assert!(!o.status.success());
        let msg = text(&o);
        assert!(msg.contains(needle), "expected `{needle}` in:\n{msg}");
        assert!(!d.path().join(OUT).exists(), "a stage ran for {needle}");
    }
    let d = site_dir(SITE);
    let o = talus(d.path(), &["calibrate", "site.toml", "--out", OUT, "--member", "5"]);
    assert!(!o.status.success() && text(&o).contains("5 members"), "{}", text(&o));
}
