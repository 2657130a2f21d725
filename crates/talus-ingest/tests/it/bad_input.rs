//! Bad input: each case gives a typed error naming the file and the problem, leaves no
//! output behind and leaves the input byte-for-byte as it was.

use crate::common::{Spec, UTM20_WKT, write};
use std::path::{Path, PathBuf};
use talus_ingest::{Config, Error, Thin, run};
use talus_io::NoProgress;

/// Run ingest on `inputs`, expecting an error; check that nothing was written (the
/// directory holds only the inputs) and the inputs are unchanged.
fn fails(config: &Config, inputs: &[PathBuf]) -> Error {
    let dir = inputs[0].parent().unwrap();
    let before: Vec<Vec<u8>> = inputs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let listing = |d: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
        v.sort();
        v
    };
    let files_before = listing(dir);
    let out = dir.join("out.parquet");
    let err = run(config, inputs, &out, &NoProgress).expect_err("ingest should fail");
    assert!(!out.exists(), "no output after: {err}");
    assert_eq!(listing(dir), files_before, "no temporary file left after: {err}");
    for (p, b) in inputs.iter().zip(before) {
        assert_eq!(std::fs::read(p).unwrap(), b, "input untouched");
    }
    err
}

fn contains(err: &Error, parts: &[&str]) {
    let msg = err.to_string();
    for p in parts {
        assert!(msg.contains(p), "`{msg}` should contain `{p}`");
    }
}

fn patch(path: &Path, at: usize, bytes: &[u8]) {
    let mut b = std::fs::read(path).unwrap();
    b[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, b).unwrap();
}

fn truncate(path: &Path, keep: f64) {
    let b = std::fs::read(path).unwrap();
    let n = (b.len() as f64 * keep) as usize;
    std::fs::write(path, &b[..n]).unwrap();
}

#[test]
fn not_a_las_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.las");
    std::fs::write(&p, "x,y,z\n1,2,3\n").unwrap();
    let e = fails(&Config::default(), &[p]);
    assert!(matches!(e, Error::NotLas { .. }), "{e:?}");
    contains(&e, &["notes.las", "not a LAS/LAZ file", "x,y,"]);
    let empty = dir.path().join("empty.laz");
    std::fs::write(&empty, b"").unwrap();
    contains(&fails(&Config::default(), &[empty]), &["empty.laz", "not a LAS/LAZ file"]);
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("present.las"), b"").unwrap();
    let e = run(
        &Config::default(),
        &[dir.path().join("absent.las")],
        &dir.path().join("o.parquet"),
        &NoProgress,
    )
    .unwrap_err();
    contains(&e, &["absent.las", "cannot read"]);
}

#[test]
fn truncated_las() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.las");
    write(&p, &Spec::new((1, 2), 3, 400));
    truncate(&p, 0.6);
    let e = fails(&Config::default(), std::slice::from_ref(&p));
    assert!(matches!(e, Error::Truncated { kind: "LAS", .. }), "{e:?}");
    contains(&e, &["cut.las", "truncated LAS file", "declares 400 points"]);
    // Cut inside the header.
    truncate(&p, 0.02);
    contains(&fails(&Config::default(), &[p]), &["cut.las", "truncated LAS file", "header"]);
}

#[test]
fn truncated_laz() {
    for keep in [0.9, 0.5] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cut.laz");
        write(&p, &Spec::new((1, 4), 7, 3000));
        truncate(&p, keep);
        let e = fails(&Config::default(), std::slice::from_ref(&p));
        assert!(matches!(e, Error::Truncated { kind: "LAZ", .. }), "{e:?}");
        contains(&e, &["cut.laz", "truncated LAZ file"]);
    }
}

/// Offsets of the legacy point count (all versions) and, in LAS 1.4, the 64-bit one.
const LEGACY_COUNT: usize = 107;
const COUNT_14: usize = 247;

#[test]
fn header_count_does_not_match_las_data() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("count.las");
    write(&p, &Spec::new((1, 2), 1, 300));
    // More records than declared: the declared ones are read and the rest reported, as
    // laspy and PDAL do.
    patch(&p, LEGACY_COUNT, &250u32.to_le_bytes());
    let out = dir.path().join("count.parquet");
    let s = run(&Config::default(), std::slice::from_ref(&p), &out, &NoProgress).unwrap();
    assert_eq!((s.points_read, s.points_written), (250, 250));
    assert_eq!(s.inputs[0].ignored_records, 50);
    let text = s.to_string();
    assert!(
        text.contains("warning: count.las") && text.contains("50 records after the 250"),
        "{text}"
    );
    let t = talus_io::read_table(&out, &talus_schema::points::core_schema()).unwrap();
    assert_eq!(t.num_rows(), 250);
    std::fs::remove_file(&out).unwrap();
    // A count above the data is indistinguishable from a cut file: named as such.
    patch(&p, LEGACY_COUNT, &301u32.to_le_bytes());
    contains(
        &fails(&Config::default(), &[p]),
        &["count.las", "declares 301 points", "holds only 300"],
    );
}

#[test]
fn header_count_does_not_match_laz_data() {
    // Fixed-size chunks (the las writer's): the chunk table bounds the count to one chunk.
    let (declared, found) = (150_000u64, "1 chunks of up to 50000 points");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("count.laz");
    write(&p, &Spec::new((1, 4), 6, 300));
    patch(&p, LEGACY_COUNT, &(declared as u32).to_le_bytes());
    patch(&p, COUNT_14, &declared.to_le_bytes());
    let e = fails(&Config::default(), std::slice::from_ref(&p));
    assert!(matches!(e, Error::PointCountMismatch { .. }), "{e:?}");
    contains(&e, &["count.laz", &format!("declares {declared} points"), found]);
}

#[test]
fn unsupported_version() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v15.las");
    write(&p, &Spec::new((1, 4), 6, 10));
    patch(&p, 25, &[5]);
    let e = fails(&Config::default(), std::slice::from_ref(&p));
    assert!(matches!(e, Error::UnsupportedVersion { major: 1, minor: 5, .. }), "{e:?}");
    contains(&e, &["v15.las", "LAS version 1.5 is not supported"]);
    patch(&p, 24, &[2, 0]);
    contains(&fails(&Config::default(), &[p]), &["v15.las", "LAS version 2.0"]);
}

#[test]
fn unsupported_point_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f11.las");
    write(&p, &Spec::new((1, 4), 6, 10));
    patch(&p, 104, &[11]);
    contains(&fails(&Config::default(), &[p]), &["f11.las", "point format 11 is not supported"]);
}

#[test]
fn empty_after_filtering() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("veg.las");
    write(&p, &Spec::new((1, 2), 1, 200)); // classes 1, 2, 3, 5, 6, 9 only
    let e = fails(&Config { classes: vec![7], ..Config::default() }, std::slice::from_ref(&p));
    assert!(matches!(e, Error::Empty { read: 200, .. }), "{e:?}");
    contains(&e, &["no point left", "200 points read from veg.las", "classes = [7]"]);
    let far =
        talus_ingest::BBox { xmin: 0.0, ymin: 0.0, xmax: 1.0, ymax: 1.0, zmin: None, zmax: None };
    let e =
        fails(&Config { bbox: Some(far), thin: Thin::Every { n: 2 }, ..Config::default() }, &[p]);
    contains(&e, &["no point left", "bbox", "every 2-th point"]);
}

#[test]
fn inputs_with_different_crs() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.laz");
    let b = dir.path().join("b.las");
    let c = dir.path().join("c.las");
    write(&a, &Spec { wkt: Some(UTM20_WKT.into()), ..Spec::new((1, 4), 6, 50) });
    write(&b, &Spec { geotiff_epsg: Some(2154), ..Spec::new((1, 2), 1, 50) });
    // Another seed: the same points would be dropped as repeats of a's (drop_duplicates).
    write(&c, &Spec { seed: 2, ..Spec::new((1, 2), 1, 50) });
    let e = fails(&Config::default(), &[a.clone(), b.clone()]);
    assert!(matches!(e, Error::CrsMismatch { .. }), "{e:?}");
    contains(&e, &["a.laz", "EPSG:32620", "b.las", "EPSG:2154", "must share a CRS"]);
    // A file without CRS does not silently join a survey that has one.
    contains(&fails(&Config::default(), &[a.clone(), c.clone()]), &["a.laz", "c.las", "unknown"]);
    // Unless it is given the survey's CRS.
    let out = dir.path().join("ok.parquet");
    let s =
        run(&Config { assign_epsg: Some(32620), ..Config::default() }, &[a, c], &out, &NoProgress)
            .unwrap();
    assert_eq!(s.crs, "EPSG:32620");
    assert_eq!(s.points_written, 100);
}

#[test]
fn invalid_configuration_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.las");
    write(&p, &Spec::new((1, 2), 1, 10));
    for (config, msg) in [
        (Config { chunk_points: 0, ..Config::default() }, "chunk_points"),
        (Config { thin: Thin::Every { n: 0 }, ..Config::default() }, "thin.n"),
        (
            Config {
                thin: Thin::Grid { spacing: -1.0, keep: Default::default() },
                ..Config::default()
            },
            "thin.spacing",
        ),
        (
            Config {
                bbox: Some(talus_ingest::BBox {
                    xmin: 2.0,
                    ymin: 0.0,
                    xmax: 1.0,
                    ymax: 1.0,
                    zmin: None,
                    zmax: None,
                }),
                ..Config::default()
            },
            "bbox",
        ),
    ] {
        let e = fails(&config, std::slice::from_ref(&p));
        assert!(matches!(e, Error::Config(_)), "{e:?}");
        contains(&e, &[msg]);
    }
}

#[test]
fn output_over_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.las");
    write(&p, &Spec::new((1, 2), 1, 10));
    let before = std::fs::read(&p).unwrap();
    let e = run(&Config::default(), std::slice::from_ref(&p), &p, &NoProgress).unwrap_err();
    contains(&e, &["a.las", "overwrite an input"]);
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

/// Offset of the header's x scale factor (then y, z scales, then x, y, z offsets).
const X_SCALE: usize = 131;

#[test]
fn non_finite_transform_or_coordinates_are_refused() {
    for (ext, minor) in [("las", 2), ("laz", 4)] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(format!("scale.{ext}"));
        write(&p, &Spec::new((1, minor), 1, 500));
        // A NaN scale: refused from the header, before any point is read.
        patch(&p, X_SCALE, &f64::NAN.to_le_bytes());
        let e = fails(&Config::default(), std::slice::from_ref(&p));
        assert!(matches!(e, Error::BadTransform { axis: 'x', .. }), "{e:?}");
        contains(&e, &[&format!("scale.{ext}"), "x scale NaN"]);
        // A NaN z offset.
        write(&p, &Spec::new((1, minor), 1, 500));
        patch(&p, X_SCALE + 5 * 8, &f64::NAN.to_le_bytes());
        let e = fails(&Config::default(), std::slice::from_ref(&p));
        assert!(matches!(e, Error::BadTransform { axis: 'z', .. }), "{e:?}");
        // A finite scale so large that raw * scale overflows: the first bad point is named.
        write(&p, &Spec::new((1, minor), 1, 500));
        patch(&p, X_SCALE, &1e308f64.to_le_bytes());
        let e = fails(&Config::default(), std::slice::from_ref(&p));
        assert!(matches!(e, Error::NonFinite { .. }), "{e:?}");
        contains(&e, &[&format!("scale.{ext}"), "non-finite coordinates", "scale and offset"]);
    }
}

#[test]
fn corrupt_laz_names_the_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("noisy.laz");
    // 120 000 points: three chunks of at most 50 000.
    write(&p, &Spec::new((1, 4), 7, 120_000));
    let len = std::fs::metadata(&p).unwrap().len() as usize;
    // 2000 pseudo-random bytes in the middle of the compressed data (the second chunk).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..2000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    patch(&p, len / 2, &noise);
    let e = fails(&Config::default(), std::slice::from_ref(&p));
    assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
    contains(&e, &["noisy.laz", "corrupt LAZ data", "chunk 1 of 3", "points 50000..100000"]);
    assert!(!e.to_string().contains("truncated"), "{e}");
}
