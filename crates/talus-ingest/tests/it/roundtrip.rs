//! Round trip: LAS/LAZ files written with the `las` crate (versions 1.0-1.4, point formats
//! 0-10, with and without GPS time, RGB, NIR, extra bytes, WKT and GeoTIFF CRS) are
//! ingested, the Parquet is read back and every field and the metadata compared with
//! what was written.

use crate::common::{Spec, UTM20_WKT, write};
use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float64Type, Int16Type};
use std::path::{Path, PathBuf};
use talus_ingest::extra::descriptor;
use talus_ingest::{Config, run};
use talus_io::{NoProgress, read_table};
use talus_schema::points::{OptionalColumns, core_schema, full_schema};

fn ingest(config: &Config, inputs: &[PathBuf], out: &Path) -> talus_io::Table {
    let s = run(config, inputs, out, &NoProgress).unwrap();
    assert_eq!(s.points_written as usize, read_table(out, &core_schema()).unwrap().num_rows());
    read_table(out, &core_schema()).unwrap()
}

/// Extra bytes: scaled u16 (scale 0.5, offset 1), i16 pair, 3 undocumented bytes.
fn extras_a() -> (Vec<u8>, u16) {
    let mut v =
        descriptor("Amplitude", 3, 0b1_1000, [0.5, 0.0, 0.0], [1.0, 0.0, 0.0], "echo amplitude");
    v.extend(descriptor("pair", 14, 0, [0.0; 3], [0.0; 3], "two i16"));
    v.extend(descriptor("opaque", 0, 3, [0.0; 3], [0.0; 3], ""));
    (v, 9)
}

/// Extra bytes: an f64 and 2 bytes no descriptor covers.
fn extras_b() -> (Vec<u8>, u16) {
    (descriptor("range", 10, 0, [0.0; 3], [0.0; 3], "range to sensor"), 10)
}

fn check(spec: &Spec, ext: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(format!("in.{ext}"));
    let pts = write(&input, spec);
    let out = dir.path().join("out.parquet");
    let t = ingest(&Config::default(), std::slice::from_ref(&input), &out);
    let label = format!("LAS {:?} format {} .{ext}", spec.version, spec.format);
    let n = pts.len();
    assert_eq!(t.num_rows(), n, "{label}");

    // Schema: the full schema of this format (types checked by read_table).
    let opt = OptionalColumns::for_point_format(spec.format).unwrap();
    let t = read_table(&out, &full_schema(opt, vec![])).unwrap();
    assert_eq!(t.has_column("gps_time"), opt.gps_time, "{label}");
    assert_eq!(t.has_column("red"), opt.rgb, "{label}");
    assert_eq!(t.has_column("nir"), opt.nir, "{label}");

    let eq = |name: &str, got: Vec<f64>, want: Vec<f64>| assert_eq!(got, want, "{label}: {name}");
    eq("x", t.f64s("x").unwrap(), pts.iter().map(|p| p.x).collect());
    eq("y", t.f64s("y").unwrap(), pts.iter().map(|p| p.y).collect());
    eq("z", t.f64s("z").unwrap(), pts.iter().map(|p| p.z).collect());
    assert_eq!(
        t.u16s("intensity").unwrap(),
        pts.iter().map(|p| p.intensity).collect::<Vec<_>>(),
        "{label}"
    );
    assert_eq!(
        t.u8s("return_number").unwrap(),
        pts.iter().map(|p| p.return_number).collect::<Vec<_>>(),
        "{label}"
    );
    assert_eq!(
        t.u8s("number_of_returns").unwrap(),
        pts.iter().map(|p| p.number_of_returns).collect::<Vec<_>>(),
        "{label}"
    );
    assert_eq!(
        t.u8s("classification").unwrap(),
        pts.iter().map(|p| u8::from(p.classification)).collect::<Vec<_>>(),
        "{label}"
    );
    assert_eq!(
        t.u16s("point_source_id").unwrap(),
        pts.iter().map(|p| p.point_source_id).collect::<Vec<_>>(),
        "{label}"
    );
    // Scan angle: degrees; legacy formats store whole degrees, extended ones 0.006° steps.
    let sa = t.f32s("scan_angle").unwrap();
    for (got, p) in sa.iter().zip(&pts) {
        assert!(
            (got - p.scan_angle).abs() <= 0.0061,
            "{label}: scan angle {got} vs {}",
            p.scan_angle
        );
    }
    // ... and exactly what the las crate's own row decoding gives.
    let mut reader = las::Reader::from_path(&input).unwrap();
    let rows: Vec<f32> =
        reader.read_all().unwrap().points().map(|p| p.unwrap().scan_angle).collect();
    assert_eq!(sa, rows, "{label}");
    if opt.gps_time {
        eq(
            "gps_time",
            t.f64s("gps_time").unwrap(),
            pts.iter().map(|p| p.gps_time.unwrap()).collect(),
        );
    }
    if opt.rgb {
        assert_eq!(
            t.u16s("red").unwrap(),
            pts.iter().map(|p| p.color.unwrap().red).collect::<Vec<_>>()
        );
        assert_eq!(
            t.u16s("green").unwrap(),
            pts.iter().map(|p| p.color.unwrap().green).collect::<Vec<_>>()
        );
        assert_eq!(
            t.u16s("blue").unwrap(),
            pts.iter().map(|p| p.color.unwrap().blue).collect::<Vec<_>>()
        );
    }
    if opt.nir {
        assert_eq!(t.u16s("nir").unwrap(), pts.iter().map(|p| p.nir.unwrap()).collect::<Vec<_>>());
    }

    // Units and descriptions travel in the field metadata.
    assert_eq!(talus_schema::unit_of(t.schema.field_with_name("scan_angle").unwrap()), Some("deg"));
    assert_eq!(talus_schema::unit_of(t.schema.field_with_name("x").unwrap()), Some("CRS unit (m)"));

    // Metadata: provenance, CRS, LAS header.
    let prov = t.provenance();
    assert_eq!(prov.stage, "ingest");
    assert_eq!(prov.inputs.len(), 1);
    assert_eq!(prov.inputs[0].name, format!("in.{ext}"));
    assert_eq!(prov.inputs[0].sha256, talus_io::sha256_file(&input).unwrap());
    assert_eq!(prov.config["chunk_points"], 1_000_000);
    match (&spec.wkt, spec.geotiff_epsg) {
        (Some(w), _) => {
            let crs = prov.crs.clone().expect("CRS kept");
            assert_eq!(crs.wkt.as_deref(), Some(w.as_str()), "{label}");
            assert_eq!(crs.epsg, Some(32620), "{label}");
        }
        (None, Some(code)) => {
            assert_eq!(prov.crs.clone().unwrap().epsg, Some(u32::from(code)), "{label}")
        }
        (None, None) => assert!(prov.crs.is_none(), "{label}"),
    }
    let headers: serde_json::Value = serde_json::from_str(&prov.extra["las:header"]).unwrap();
    let h = &headers[0];
    assert_eq!(h["version"], format!("{}.{}", spec.version.0, spec.version.1), "{label}");
    assert_eq!(h["point_format"], spec.format);
    assert_eq!(h["compressed"], ext == "laz");
    assert_eq!(h["point_count"], n);
    assert_eq!(h["scale"], serde_json::json!([0.001, 0.001, 0.001]));
    assert_eq!(h["offset"], serde_json::json!(spec.origin));
    assert_eq!(h["system_identifier"], "talus test");
    assert_eq!(h["generating_software"], "las-rs via talus tests");
    // Bounds as the file's header states them (the las crate's reading).
    let hb = las::Reader::from_path(&input).unwrap().header().bounds();
    // (serde_json's default float parsing may differ in the last bit: compare to 1e-9.)
    let near = |v: &serde_json::Value, w: [f64; 3]| {
        (0..3).all(|k| (v[k].as_f64().unwrap() - w[k]).abs() < 1e-9)
    };
    assert!(near(&h["bounds"]["min"], [hb.min.x, hb.min.y, hb.min.z]), "{label}");
    assert!(near(&h["bounds"]["max"], [hb.max.x, hb.max.y, hb.max.z]), "{label}");

    // Extra bytes.
    if let Some((vlr, _)) = &spec.extra {
        let fixed = |name: &str| -> Vec<Vec<u8>> {
            let mut out = vec![];
            for b in &t.batches {
                let a = b.column_by_name(name).unwrap_or_else(|| panic!("{label}: column {name}"));
                let a = a.as_fixed_size_binary();
                out.extend((0..a.len()).map(|i| a.value(i).to_vec()));
            }
            out
        };
        if vlr.is_empty() {
            assert_eq!(
                fixed("extra_bytes"),
                pts.iter().map(|p| p.extra_bytes.clone()).collect::<Vec<_>>(),
                "{label}"
            );
        } else if vlr.len() == 3 * 192 {
            let amp = t.f64s("Amplitude").unwrap();
            let want: Vec<f64> = pts
                .iter()
                .map(|p| {
                    f64::from(u16::from_le_bytes([p.extra_bytes[0], p.extra_bytes[1]])) * 0.5 + 1.0
                })
                .collect();
            assert_eq!(amp, want, "{label}");
            let mut pairs = vec![];
            for b in &t.batches {
                let a = b.column_by_name("pair").unwrap().as_fixed_size_list();
                assert_eq!(a.value_length(), 2);
                pairs.extend(a.values().as_primitive::<Int16Type>().values().iter().copied());
            }
            let want: Vec<i16> = pts
                .iter()
                .flat_map(|p| {
                    [
                        i16::from_le_bytes([p.extra_bytes[2], p.extra_bytes[3]]),
                        i16::from_le_bytes([p.extra_bytes[4], p.extra_bytes[5]]),
                    ]
                })
                .collect();
            assert_eq!(pairs, want, "{label}");
            assert_eq!(
                fixed("opaque"),
                pts.iter().map(|p| p.extra_bytes[6..9].to_vec()).collect::<Vec<_>>()
            );
            let f = t.schema.field_with_name("Amplitude").unwrap();
            assert!(
                f.metadata()["description"].starts_with("echo amplitude"),
                "{:?}",
                f.metadata()
            );
            assert_eq!(headers[0]["extra_bytes"][0]["name"], "Amplitude");
        } else {
            let range: Vec<f64> = {
                let mut v = vec![];
                for b in &t.batches {
                    let a = b.column_by_name("range").unwrap();
                    assert_eq!(a.data_type(), &DataType::Float64);
                    v.extend(a.as_primitive::<Float64Type>().values().iter().copied());
                }
                v
            };
            let want: Vec<f64> = pts
                .iter()
                .map(|p| f64::from_le_bytes(p.extra_bytes[..8].try_into().unwrap()))
                .collect();
            assert_eq!(
                range.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
            assert_eq!(
                fixed("extra_bytes"),
                pts.iter().map(|p| p.extra_bytes[8..].to_vec()).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn legacy_formats_round_trip() {
    check(&Spec::new((1, 0), 0, 300), "las");
    check(&Spec::new((1, 1), 1, 300), "laz");
    check(&Spec { geotiff_epsg: Some(32620), ..Spec::new((1, 2), 2, 300) }, "las");
    check(
        &Spec { extra: Some(extras_a()), geotiff_epsg: Some(2994), ..Spec::new((1, 2), 3, 300) },
        "laz",
    );
    check(&Spec { extra: Some(extras_a()), ..Spec::new((1, 2), 3, 300) }, "las");
}

#[test]
fn waveform_formats_round_trip() {
    check(&Spec::new((1, 3), 4, 200), "las");
    check(&Spec { extra: Some((vec![], 4)), ..Spec::new((1, 3), 5, 200) }, "las");
    check(&Spec::new((1, 4), 9, 200), "las");
    check(&Spec::new((1, 4), 10, 200), "las");
}

#[test]
fn extended_formats_round_trip() {
    check(&Spec { wkt: Some(UTM20_WKT.into()), ..Spec::new((1, 4), 6, 300) }, "laz");
    check(
        &Spec { wkt: Some(UTM20_WKT.into()), extra: Some(extras_b()), ..Spec::new((1, 4), 7, 300) },
        "las",
    );
    check(&Spec { extra: Some(extras_b()), ..Spec::new((1, 4), 7, 300) }, "laz");
    check(&Spec { wkt: Some(UTM20_WKT.into()), ..Spec::new((1, 4), 8, 300) }, "laz");
    check(&Spec { extra: Some(extras_a()), ..Spec::new((1, 4), 8, 300) }, "las");
    check(&Spec::new((1, 4), 0, 300), "laz");
}

#[test]
fn chunking_does_not_change_the_output() {
    // Many LAZ chunks and many Arrow batches: identical bytes whatever chunk_points is.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.laz");
    write(&input, &Spec::new((1, 4), 6, 5000));
    let a = dir.path().join("a.parquet");
    let b = dir.path().join("b.parquet");
    let ta = ingest(&Config::default(), std::slice::from_ref(&input), &a);
    let tb = ingest(
        &Config { chunk_points: 777, ..Config::default() },
        std::slice::from_ref(&input),
        &b,
    );
    for c in ["x", "y", "z", "gps_time"] {
        assert_eq!(ta.f64s(c).unwrap(), tb.f64s(c).unwrap());
    }
    assert_eq!(ta.u16s("intensity").unwrap(), tb.u16s("intensity").unwrap());
    // Same inputs and config: byte-identical output.
    let c = dir.path().join("c.parquet");
    ingest(&Config { chunk_points: 777, ..Config::default() }, std::slice::from_ref(&input), &c);
    assert_eq!(std::fs::read(&b).unwrap(), std::fs::read(&c).unwrap());
}
