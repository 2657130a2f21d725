//! The shipped site `data/piton-marcel/` is exactly what the generator gives for the
//! configuration recorded in its `truth.json`, and its truth is self-consistent.

use std::path::PathBuf;
use talus_io::NoProgress;
use talus_synth::{Config, generate, truth};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/piton-marcel")
}

#[test]
fn shipped_site_regenerates_byte_identically() {
    let dir = data_dir();
    let Ok(json) = std::fs::read(dir.join("truth.json")) else {
        panic!(
            "{}: missing; run `talus synth --config pipelines/piton-marcel.toml --out-dir data/piton-marcel`",
            dir.display()
        );
    };
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let config: Config = serde_json::from_value(doc["config"].clone()).unwrap();
    let g = generate(&config, true, &NoProgress).unwrap();
    assert!(
        g.pre == std::fs::read(dir.join("pre.laz")).unwrap(),
        "pre.laz differs from the generator's output"
    );
    assert!(
        g.post == std::fs::read(dir.join("post.laz")).unwrap(),
        "post.laz differs from the generator's output"
    );
    let regenerated = serde_json::to_vec_pretty(&g.doc).unwrap();
    assert!(regenerated == json, "truth.json differs from the generator's output");

    // The truth table holds the same surfaces and volumes.
    let t = talus_io::read_table(&dir.join("truth.parquet"), &truth::schema()).unwrap();
    let (pre, post) = (t.f64s("z_pre").unwrap(), t.f64s("z_post").unwrap());
    assert_eq!(pre, g.truth.z_pre);
    let cell = doc["grid"]["cell"].as_f64().unwrap();
    let net: f64 = pre.iter().zip(&post).map(|(a, b)| a - b).sum::<f64>() * cell * cell;
    let expected =
        doc["scar"]["volume"].as_f64().unwrap() - doc["deposit"]["volume"].as_f64().unwrap();
    assert!((net - expected).abs() < 1e-3 * expected.abs().max(1.0), "{net} vs {expected}");
    assert_eq!(t.provenance().crs.and_then(|c| c.epsg), Some(32620));
    let scar = doc["scar"]["volume"].as_f64().unwrap();
    assert!((scar - 8.0e5).abs() < 8.0, "{scar}");
}

#[test]
fn site_file_synth_table_is_the_shipped_config() {
    // Every key of `[synth]` in pipelines/piton-marcel.toml equals the configuration
    // recorded in truth.json (TOML read by Python's tomllib; Rust-side, the CLI's loader
    // deserialises the same table into `Config`).
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = r#"
import sys, json, tomllib
t = tomllib.load(open(sys.argv[1], 'rb'))['synth']
c = json.load(open(sys.argv[2]))['config']
def chk(a, b, p=''):
    for k, v in a.items():
        if isinstance(v, dict):
            chk(v, b[k], p + k + '.')
        elif b[k] != v:
            sys.exit(f'{p}{k}: site file {v!r} != truth.json {b[k]!r}')
chk(t, c)
"#;
    let site = root.join("pipelines/piton-marcel.toml");
    let truth = data_dir().join("truth.json");
    let out = match std::process::Command::new("python3")
        .args(["-c", script, site.to_str().unwrap(), truth.to_str().unwrap()])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skipped: python3 not available ({e})");
            return;
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("No module named 'tomllib'") {
        eprintln!("skipped: python3 has no tomllib (needs Python 3.11)");
        return;
    }
    assert!(out.status.success(), "{err}");
}
