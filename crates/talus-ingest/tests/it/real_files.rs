//! The real files shipped in `data/las/` (from the las crate's test data): every column
//! compared with the `las` crate's row-by-row decoding of the same file, CRS and header.

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Int8Type, UInt16Type, UInt32Type, UInt64Type};
use std::path::PathBuf;
use talus_ingest::{Config, run};
use talus_io::{NoProgress, read_table};
use talus_schema::points::core_schema;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/las").join(name)
}

fn check(name: &str, epsg: Option<u32>, points: usize) -> talus_io::Table {
    let dir = tempfile::tempdir().unwrap();
    let input = data(name);
    let out = dir.path().join("out.parquet");
    let s = run(&Config::default(), std::slice::from_ref(&input), &out, &NoProgress).unwrap();
    assert_eq!(s.points_written as usize, points, "{name}");
    let t = read_table(&out, &core_schema()).unwrap();
    let mut reader = las::Reader::from_path(&input).unwrap();
    let rows: Vec<las::Point> = reader.read_all().unwrap().points().map(|p| p.unwrap()).collect();
    assert_eq!(rows.len(), points);
    assert_eq!(t.f64s("x").unwrap(), rows.iter().map(|p| p.x).collect::<Vec<_>>(), "{name}");
    assert_eq!(t.f64s("y").unwrap(), rows.iter().map(|p| p.y).collect::<Vec<_>>(), "{name}");
    assert_eq!(t.f64s("z").unwrap(), rows.iter().map(|p| p.z).collect::<Vec<_>>(), "{name}");
    assert_eq!(t.u16s("intensity").unwrap(), rows.iter().map(|p| p.intensity).collect::<Vec<_>>());
    assert_eq!(
        t.u8s("classification").unwrap(),
        rows.iter().map(|p| u8::from(p.classification)).collect::<Vec<_>>()
    );
    assert_eq!(
        t.u8s("return_number").unwrap(),
        rows.iter().map(|p| p.return_number).collect::<Vec<_>>()
    );
    assert_eq!(
        t.u8s("number_of_returns").unwrap(),
        rows.iter().map(|p| p.number_of_returns).collect::<Vec<_>>()
    );
    assert_eq!(
        t.f32s("scan_angle").unwrap(),
        rows.iter().map(|p| p.scan_angle).collect::<Vec<_>>()
    );
    assert_eq!(
        t.u16s("point_source_id").unwrap(),
        rows.iter().map(|p| p.point_source_id).collect::<Vec<_>>()
    );
    if rows[0].gps_time.is_some() {
        assert_eq!(
            t.f64s("gps_time").unwrap(),
            rows.iter().map(|p| p.gps_time.unwrap()).collect::<Vec<_>>()
        );
    }
    if rows[0].color.is_some() {
        assert_eq!(
            t.u16s("green").unwrap(),
            rows.iter().map(|p| p.color.unwrap().green).collect::<Vec<_>>()
        );
    }
    let prov = t.provenance();
    assert_eq!(prov.crs.as_ref().and_then(|c| c.epsg), epsg, "{name}");
    let h: serde_json::Value = serde_json::from_str(&prov.extra["las:header"]).unwrap();
    let header = reader.header();
    assert_eq!(h[0]["point_count"], points);
    assert_eq!(h[0]["generating_software"], header.generating_software());
    assert_eq!(h[0]["system_identifier"], header.system_identifier());
    t
}

#[test]
fn autzen_las_and_laz() {
    check("autzen.las", Some(2994), 106);
    let t = check("autzen.laz", Some(2994), 106);
    assert!(t.has_column("red"));
}

#[test]
fn copc_file_with_wkt() {
    let t = check("autzen.copc.laz", None, 107);
    let crs = t.provenance().crs.expect("WKT kept");
    assert!(crs.wkt.unwrap().contains("NAD83"), "WKT from the VLR");
}

#[test]
fn norwegian_tile_with_geotiff_keys() {
    check("32-1-472-150-76.laz", Some(25832), 5658);
}

#[test]
fn extra_bytes_are_decoded() {
    let t = check("extrabytes.laz", None, 1065);
    let mut reader = las::Reader::from_path(data("extrabytes.laz")).unwrap();
    let eb: Vec<Vec<u8>> =
        reader.read_all().unwrap().points().map(|p| p.unwrap().extra_bytes).collect();
    assert!(eb.iter().all(|e| e.len() == 27));
    let col = |name: &str| {
        t.batches[0].column_by_name(name).unwrap_or_else(|| panic!("column {name}")).clone()
    };
    // Colors: 3 x u16 (type 23).
    let colors = col("Colors");
    let colors = colors.as_fixed_size_list();
    assert_eq!(colors.value_length(), 3);
    let v = colors.values().as_primitive::<UInt16Type>();
    assert_eq!(v.value(0), u16::from_le_bytes([eb[0][0], eb[0][1]]));
    assert_eq!(v.value(3 * 5 + 2), u16::from_le_bytes([eb[5][4], eb[5][5]]));
    // Reserved: 7 undocumented bytes, raw.
    let reserved = col("Reserved");
    assert_eq!(reserved.data_type(), &DataType::FixedSizeBinary(7));
    assert_eq!(reserved.as_fixed_size_binary().value(9), &eb[9][6..13]);
    // Flags: 2 x i8.
    let flags = col("Flags");
    let f = flags.as_fixed_size_list().values().as_primitive::<Int8Type>().clone();
    assert_eq!(f.value(2 * 7 + 1), eb[7][14] as i8);
    // `Intensity` would clash with the standard column: prefixed.
    let inten = col("extra_Intensity");
    assert_eq!(
        inten.as_primitive::<UInt32Type>().value(4),
        u32::from_le_bytes(eb[4][15..19].try_into().unwrap())
    );
    let time = col("Time");
    assert_eq!(
        time.as_primitive::<UInt64Type>().value(1),
        u64::from_le_bytes(eb[1][19..27].try_into().unwrap())
    );
    assert_eq!(time.len(), 1065);
}
