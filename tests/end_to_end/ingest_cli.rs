//! End to end: the `talus` binary ingests shipped LAZ files from `data/las/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn talus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_talus")).args(args).output().expect("run talus")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/las").join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn ingest_shipped_laz() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("points.parquet");
    let o = talus(&["ingest", s(&data("autzen.laz")), "--out", s(&out)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("106 of 106 points written"), "{err}");
    assert!(err.contains("EPSG:2994"), "{err}");
    let t = talus_io::read_table(&out, &talus_schema::points::core_schema()).unwrap();
    assert_eq!(t.num_rows(), 106);
    let prov = t.provenance();
    assert_eq!(prov.stage, "ingest");
    assert_eq!(prov.crs.unwrap().epsg, Some(2994));

    // Options from a config file and --set; classes filter.
    let cfg = dir.path().join("site.toml");
    std::fs::write(&cfg, "[site]\nname = \"t\"\n[ingest]\nchunk_points = 50\nclasses = [2]\n")
        .unwrap();
    let out2 = dir.path().join("ground.parquet");
    let o = talus(&[
        "ingest",
        s(&data("autzen.laz")),
        "--out",
        s(&out2),
        "--config",
        s(&cfg),
        "--set",
        "thin.method=every",
        "--set",
        "thin.n=2",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = talus_io::read_table(&out2, &talus_schema::points::core_schema()).unwrap();
    assert!(t.num_rows() > 0 && t.num_rows() < 106);
    assert!(t.u8s("classification").unwrap().iter().all(|c| *c == 2));
    assert_eq!(t.provenance().config["chunk_points"], 50);
}

#[test]
fn print_config_and_help() {
    let o = talus(&["ingest", "--print-config", "--set", "classes=[2]"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("chunk_points = 1000000"), "{text}");
    assert!(text.contains("classes = [2]"), "{text}");
    let o = talus(&["ingest", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(
        help.contains("chunk_points") && help.contains("thin") && help.contains("require_same_crs"),
        "{help}"
    );
}

/// Every stage prints its effective options without its inputs or outputs (as `pdal
/// --options`), with `--set` applied; without `--print-config` those stay required.
#[test]
fn every_stage_prints_its_options_without_its_files() {
    for (stage, set, expect) in [
        ("ingest", "chunk_points=5", "chunk_points = 5"),
        ("diff", "dod.cell_size=2.5", "cell_size = 2.5"),
        ("terrain", "max_vertices=100", "max_vertices = 100"),
        ("seed", "density=2600.0", "density = 2600.0"),
        ("run", "dt=0.02", "dt = 0.02"),
        ("compare", "bulking_factor=1.2", "bulking_factor = 1.2"),
        ("synth", "scale=0.5", "scale = 0.5"),
    ] {
        let o = talus(&[stage, "--print-config", "--set", set]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{stage}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(text.contains(expect), "{stage}: {text}");
        let o = talus(&[stage]);
        assert!(!o.status.success(), "{stage} ran without its files");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("required arguments were not provided"), "{stage}: {err}");
    }
    // The whole site's, without a run directory (from the repository root, as the site's
    // paths are).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let at_root = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_talus"))
            .args(args)
            .current_dir(&root)
            .output()
            .expect("run talus")
    };
    for cmd in ["pipeline", "calibrate"] {
        let site = "pipelines/piton-marcel.toml";
        let o = at_root(&[cmd, site, "--print-config", "--set", "run.dt=0.01"]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{cmd}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(text.contains("[run]") && text.contains("dt = 0.01"), "{cmd}: {text}");
        assert!(!at_root(&[cmd, site]).status.success(), "{cmd} ran without --out");
    }
}

#[test]
fn bad_input_fails_with_named_file_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.laz");
    std::fs::write(&bad, b"PK\x03\x04 this is a zip").unwrap();
    let out = dir.path().join("out.parquet");
    let o = talus(&["ingest", s(&bad), "--out", s(&out)]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.laz") && err.contains("not a LAS/LAZ file"), "{err}");
    assert!(!out.exists());

    // Two surveys in different CRS.
    let o = talus(&[
        "ingest",
        s(&data("autzen.laz")),
        s(&data("32-1-472-150-76.laz")),
        "--out",
        s(&out),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("EPSG:2994")
            && err.contains("EPSG:25832")
            && err.contains("32-1-472-150-76.laz"),
        "{err}"
    );
    assert!(!out.exists());

    // Unknown option.
    let o = talus(&["ingest", s(&data("autzen.laz")), "--out", s(&out), "--set", "clases=[2]"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("clases"));
    assert!(!out.exists());
}
