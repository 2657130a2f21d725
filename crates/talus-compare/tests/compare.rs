//! `talus_compare::run` on small constructed inputs whose metrics are known in closed form.
//!
//! Grid: 40 x 40 cells of 1 m. Scar: rows 30..35, cols 10..20, pre-event elevation
//! 100 + row. Surveyed deposit: rows 5..10, cols 10..20, dz = 2 m, post-event surface 10 m.
//! Deposited blocks: ten 1 x 5 x 2 m boxes, axis-aligned, each covering one column of 5
//! cells with a thickness of exactly 2 m, shifted east by `shift` columns. One block
//! stays in the scar, one left the domain.

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Float64Array, Int32Array, RecordBatch, StringArray,
    UInt32Array, UInt64Array,
};
use std::path::Path;
use std::sync::Arc;
use talus_compare::{Config, Inputs, SiteInfo};
use talus_io::{Provenance, read_table, write_parquet};
use talus_schema::{blocks, compare, diff, run};

const NX: usize = 40;
const NY: usize = 40;
const BLOCK_VOLUME: f64 = 10.0; // 1 x 5 x 2

fn f64a(v: Vec<f64>) -> ArrayRef {
    Arc::new(Float64Array::from(v))
}

/// Write `cols` as the first fields of `schema`; later fields (added by their stage since)
/// are filled with zeros.
fn write(
    path: &Path,
    schema: arrow::datatypes::Schema,
    mut cols: Vec<ArrayRef>,
    prov: &Provenance,
) {
    use arrow::datatypes::DataType;
    let n = cols[0].len();
    for f in schema.fields().iter().skip(cols.len()) {
        let a: ArrayRef = match f.data_type() {
            DataType::Float64 => f64a(vec![0.0; n]),
            DataType::UInt32 => Arc::new(UInt32Array::from(vec![0u32; n])),
            DataType::UInt64 => Arc::new(UInt64Array::from(vec![0u64; n])),
            DataType::Int32 => Arc::new(Int32Array::from(vec![0i32; n])),
            DataType::Boolean => Arc::new(BooleanArray::from(vec![false; n])),
            DataType::Utf8 => Arc::new(StringArray::from(vec![""; n])),
            other => panic!("no default for {other}"),
        };
        cols.push(a);
    }
    let schema = Arc::new(schema);
    let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    write_parquet(path, schema, &[batch], prov).unwrap();
}

struct BlockRow {
    id: u32,
    dims: [f64; 3],
    pos: [f64; 3],
    active: bool,
}

fn write_blocks(path: &Path, rows: &[BlockRow]) {
    let n = rows.len();
    let col = |f: &dyn Fn(&BlockRow) -> f64| f64a(rows.iter().map(f).collect());
    write(
        path,
        blocks::schema(),
        vec![
            Arc::new(UInt32Array::from(rows.iter().map(|r| r.id).collect::<Vec<_>>())),
            col(&|r| r.dims[0]),
            col(&|r| r.dims[1]),
            col(&|r| r.dims[2]),
            f64a(vec![2500.0; n]),
            col(&|r| 2500.0 * r.dims[0] * r.dims[1] * r.dims[2]),
            Arc::new(UInt32Array::from(vec![0u32; n])),
            col(&|r| r.pos[0]),
            col(&|r| r.pos[1]),
            col(&|r| r.pos[2]),
            f64a(vec![1.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            Arc::new(BooleanArray::from(rows.iter().map(|r| r.active).collect::<Vec<_>>())),
            Arc::new(BinaryArray::from_iter_values(
                rows.iter().map(|r| talus_io::geo::wkb_point(r.pos[0], r.pos[1])),
            )),
        ],
        &Provenance::new("run", "0.1.0", &serde_json::json!({"dt": 0.1})),
    );
}

/// Initial (in the scar) and final blocks; trajectories with two records per block.
fn write_run(dir: &Path, shift: f64) {
    std::fs::create_dir_all(dir).unwrap();
    let mut fin = Vec::new();
    let mut init = Vec::new();
    for i in 0..10u32 {
        fin.push(BlockRow {
            id: i,
            dims: [1.0, 5.0, 2.0],
            pos: [10.5 + i as f64 + shift, 7.5, 11.0],
            active: true,
        });
        init.push(BlockRow {
            id: i,
            dims: [1.0, 5.0, 2.0],
            pos: [10.5 + i as f64, 32.5, 140.0],
            active: true,
        });
    }
    // Block 10 stays in the scar, block 11 leaves the domain.
    fin.push(BlockRow { id: 10, dims: [1.0, 5.0, 2.0], pos: [12.5, 32.5, 135.0], active: true });
    init.push(BlockRow { id: 10, dims: [1.0, 5.0, 2.0], pos: [12.5, 32.5, 140.0], active: true });
    fin.push(BlockRow { id: 11, dims: [1.0, 5.0, 2.0], pos: [15.0, -50.0, 0.0], active: false });
    init.push(BlockRow { id: 11, dims: [1.0, 5.0, 2.0], pos: [15.5, 32.5, 140.0], active: true });
    write_blocks(&dir.join("final.parquet"), &fin);
    write_blocks(&dir.join("seed.parquet"), &init);

    // Trajectories: steps 0 and 100, in reverse order to check the sorting.
    let mut rows: Vec<(u64, f64, u32, [f64; 3])> = Vec::new();
    for (a, b) in init.iter().zip(&fin).rev() {
        rows.push((100, 10.0, b.id, b.pos));
        rows.push((0, 0.0, a.id, a.pos));
    }
    let n = rows.len();
    write(
        &dir.join("trajectories.parquet"),
        run::trajectories_schema(),
        vec![
            Arc::new(UInt64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>())),
            f64a(rows.iter().map(|r| r.1).collect()),
            Arc::new(UInt32Array::from(rows.iter().map(|r| r.2).collect::<Vec<_>>())),
            f64a(rows.iter().map(|r| r.3[0]).collect()),
            f64a(rows.iter().map(|r| r.3[1]).collect()),
            f64a(rows.iter().map(|r| r.3[2]).collect()),
            f64a(vec![1.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![3.0; n]),
            f64a(vec![4.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
            f64a(vec![0.0; n]),
        ],
        &Provenance::new("run", "0.1.0", &0),
    );

    // Energies: a block falling and stopping; K + P + D constant.
    let steps: Vec<u64> = (0..=100).collect();
    let time: Vec<f64> = steps.iter().map(|s| *s as f64 * 0.1).collect();
    let p: Vec<f64> = time.iter().map(|t| 1000.0 - 100.0 * t.min(5.0)).collect();
    let k: Vec<f64> = time
        .iter()
        .map(|t| if *t < 5.0 { 50.0 * t } else { (250.0 - 100.0 * (t - 5.0)).max(0.0) })
        .collect();
    let d_cum: Vec<f64> = (0..=100).map(|i| 1000.0 - p[i] - k[i]).collect();
    let d: Vec<f64> =
        (0..=100).map(|i| if i == 0 { 0.0 } else { d_cum[i] - d_cum[i - 1] }).collect();
    write(
        &dir.join("energies.parquet"),
        run::energies_schema(),
        vec![
            Arc::new(UInt64Array::from(steps.clone())),
            f64a(time.clone()),
            f64a(k.iter().map(|v| 0.8 * v).collect()),
            f64a(k.iter().map(|v| 0.2 * v).collect()),
            f64a(k.clone()),
            f64a(p.clone()),
            f64a(d),
            f64a(d_cum),
            f64a(p.iter().map(|v| 1000.0 - v).collect()),
        ],
        &Provenance::new("run", "0.1.0", &0),
    );
    let u = |v: u32| -> ArrayRef { Arc::new(UInt32Array::from(vec![v; 101])) };
    write(
        &dir.join("diagnostics.parquet"),
        run::diagnostics_schema(),
        vec![
            Arc::new(UInt64Array::from(steps)),
            f64a(time),
            u(3),
            u(0),
            u(4),
            u(1),
            u(12),
            u(7),
            Arc::new(StringArray::from(vec!["warm"; 101])),
            Arc::new(StringArray::from(
                (0..101)
                    .map(|i| if i == 7 { "MaxIterations" } else { "Solved" })
                    .collect::<Vec<_>>(),
            )),
            u(5),
            f64a(vec![1e-9; 101]),
            f64a(vec![1e-9; 101]),
            f64a(vec![1e-9; 101]),
            Arc::new(BooleanArray::from((0..101).map(|i| i == 7).collect::<Vec<_>>())),
            f64a((0..101).map(|i| if i == 50 { 0.02 } else { 0.001 }).collect()),
        ],
        &Provenance::new("run", "0.1.0", &0),
    );
}

fn write_diff(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let grid =
        serde_json::json!({"x0": 0.0, "y0": 0.0, "cell": 1.0, "nx": NX, "ny": NY}).to_string();
    let prov = Provenance::new("diff", "0.1.0", &0).with_extra(diff::GRID_KEY, grid);
    let (mut row, mut col, mut x, mut y, mut pre, mut post, mut dz, mut zone) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for r in 0..NY {
        for c in 0..NX {
            let scar = (30..35).contains(&r) && (10..20).contains(&c);
            let dep = (5..10).contains(&r) && (10..20).contains(&c);
            row.push(r as u32);
            col.push(c as u32);
            x.push(c as f64 + 0.5);
            y.push(r as f64 + 0.5);
            let zp = if scar { 100.0 + r as f64 } else { 10.0 };
            let d = if scar {
                -5.0
            } else if dep {
                2.0
            } else {
                0.0
            };
            pre.push(zp);
            post.push(if dep { 10.0 } else { zp + d });
            dz.push(if r == 0 && c == 0 { f64::NAN } else { d });
            zone.push(if scar {
                1
            } else if dep {
                2
            } else {
                -1
            });
        }
    }
    let n = row.len();
    write(
        &dir.join("dod.parquet"),
        diff::dod_schema(),
        vec![
            Arc::new(UInt32Array::from(row)),
            Arc::new(UInt32Array::from(col)),
            f64a(x),
            f64a(y),
            f64a(pre),
            f64a(post),
            f64a(dz.clone()),
            f64a(vec![0.07; n]),
            f64a(vec![0.14; n]),
            Arc::new(BooleanArray::from(dz.iter().map(|d| d.abs() > 0.14).collect::<Vec<_>>())),
            Arc::new(UInt32Array::from(vec![10; n])),
            Arc::new(UInt32Array::from(vec![10; n])),
            Arc::new(Int32Array::from(zone)),
        ],
        &prov,
    );
    let rect = |x0: f64, y0: f64, x1: f64, y1: f64| {
        talus_io::geo::wkb_polygon(&[vec![[x0, y0], [x1, y0], [x1, y1], [x0, y1]]])
    };
    write(
        &dir.join("zones.parquet"),
        diff::zones_schema(),
        vec![
            Arc::new(Int32Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec!["scar", "deposit"])),
            f64a(vec![50.0, 50.0]),
            f64a(vec![250.0, 100.0]),
            f64a(vec![5.0, 5.0]),
            Arc::new(UInt32Array::from(vec![50, 50])),
            f64a(vec![15.0, 15.0]),
            f64a(vec![32.5, 7.5]),
            f64a(vec![134.0, 10.0]),
            f64a(vec![95.0, 10.0]),
            Arc::new(BinaryArray::from_iter_values([
                rect(10.0, 30.0, 20.0, 35.0),
                rect(10.0, 5.0, 20.0, 10.0),
            ])),
        ],
        &Provenance::new("diff", "0.1.0", &0),
    );
}

fn metric(dir: &Path, name: &str) -> (f64, bool) {
    let t = read_table(&dir.join("metrics.parquet"), &compare::metrics_schema()).unwrap();
    let names = t.strings("metric").unwrap();
    let i = names.iter().position(|n| n == name).unwrap_or_else(|| panic!("metric {name} missing"));
    (t.f64s("value").unwrap()[i], t.bools("applicable").unwrap()[i])
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + b.abs())
}

/// Each named metric is applicable and equals its expected value (to [`close`]).
fn assert_metrics(out: &Path, expected: &[(&str, f64)]) {
    for &(name, want) in expected {
        let (v, ok) = metric(out, name);
        assert!(ok && close(v, want), "{name}: {v} (applicable {ok}), want {want}");
    }
}

fn run_case(shift: f64, blocks: bool) -> tempfile::TempDir {
    run_case_bulked(shift, blocks, Config::default().bulking_factor)
}

/// [`run_case`] with the block volumes spread times `bulking_factor`.
fn run_case_bulked(shift: f64, blocks: bool, bulking_factor: f64) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    write_run(&tmp.path().join("run"), shift);
    write_diff(&tmp.path().join("diff"));
    let inputs = Inputs {
        run_dir: tmp.path().join("run"),
        diff_dir: Some(tmp.path().join("diff")),
        terrain_dir: None,
        blocks: blocks.then(|| tmp.path().join("run/seed.parquet")),
    };
    let config =
        Config { figure_width: 800, figure_height: 600, bulking_factor, ..Config::default() };
    let site = SiteInfo {
        name: "box".into(),
        description: "constructed <case>".into(),
        config_text: "[site]\nname = \"box\"\n".into(),
    };
    let s =
        talus_compare::run(&config, &inputs, &site, &tmp.path().join("out"), &talus_io::NoProgress)
            .unwrap();
    assert_eq!(s.blocks, 12);
    tmp
}

#[test]
fn perfect_match_has_unit_iou_and_zero_error() {
    let tmp = run_case(0.0, true);
    let out = tmp.path().join("out");
    assert_metrics(
        &out,
        &[
            ("deposit_iou", 1.0),
            ("volume_overlap", 1.0),
            ("thickness_rmse", 0.0),
            ("thickness_bias", 0.0),
            ("thickness_rmse_volume_matched", 0.0),
            ("centroid_offset", 0.0),
            ("deposit_area_simulated", 50.0),
            ("deposit_area_surveyed", 50.0),
            ("deposit_volume_simulated", 100.0),
            ("deposit_volume_surveyed", 100.0),
            ("lateral_spread_simulated", 10.0),
            ("lateral_spread_surveyed", 10.0),
            // Five equal rows of deposit at 25-29 m along the flow: half the volume within the
            // third.
            ("volume_median_along_flow_simulated", 34.5 - 7.5),
            ("volume_median_along_flow_surveyed", 34.5 - 7.5),
            // Crown: first highest scar cell (row 34, col 10) at (10.5, 34.5, 134); flow due south.
            ("runout_surveyed", 34.5 - 5.5),
            ("runout_simulated", 34.5 - 7.5),
            ("h_over_l_surveyed", 124.0 / 29.0),
            ("h_over_l_simulated", 124.0 / 27.0),
            ("travel_angle_surveyed", (124.0f64 / 29.0).atan().to_degrees()),
            ("volume_fraction_in_scar", 1.0 / 12.0),
            ("volume_fraction_left_domain", 1.0 / 12.0),
            ("seeded_volume", 12.0 * BLOCK_VOLUME),
            ("volume_off_grid", 0.0),
            ("blocks", 12.0),
            ("steps", 101.0),
            ("steps_with_fallback", 1.0),
            ("max_penetration", 0.02),
            // Over the blocks' smallest edge, 1 m (1 x 5 x 2).
            ("max_penetration_share", 0.02),
            ("max_contacts", 7.0),
            ("kinetic_energy_peak", 250.0),
            ("kinetic_energy_peak_time", 5.0),
            ("speed_max", 5.0),
            ("dissipated_total", 500.0),
            ("potential_energy_drop", 500.0),
        ],
    );
    let (e, _) = metric(&out, "energy_balance_residual");
    assert!(e < 1e-12, "{e}");
    // Thickness table: 50 deposit cells (simulated = surveyed = 2 m) + 50 scar cells.
    let t = read_table(&out.join("thickness.parquet"), &compare::thickness_schema()).unwrap();
    assert_eq!(t.num_rows(), 100);
    let (h, d) = (t.f64s("thickness_simulated").unwrap(), t.f64s("thickness_surveyed").unwrap());
    let scar = t.bools("in_scar").unwrap();
    for i in 0..h.len() {
        if scar[i] {
            assert_eq!((h[i], d[i]), (0.0, 0.0));
        } else {
            assert!(close(h[i], 2.0) && close(d[i], 2.0), "{} {}", h[i], d[i]);
        }
    }
    assert!(t.metadata.contains_key("geo"));
}

#[test]
fn shifted_deposit_matches_closed_forms() {
    let tmp = run_case(5.0, false);
    let out = tmp.path().join("out");
    assert_metrics(
        &out,
        &[
            ("deposit_iou", 1.0 / 3.0),
            ("volume_overlap", 1.0 / 3.0),
            ("thickness_rmse", (8.0f64 / 3.0).sqrt()),
            ("thickness_bias", 0.0),
            // Same volumes: the scaling is 1.
            ("thickness_rmse_volume_matched", (8.0f64 / 3.0).sqrt()),
            ("centroid_offset", 5.0),
            ("centroid_azimuth", 90.0),
            ("lateral_spread_simulated", 10.0),
            // Shifted across the flow: the same median along it.
            ("volume_median_along_flow_simulated", 34.5 - 7.5),
        ],
    );
    // Initial state from the trajectories: block 0 moved from (10.5, 32.5, 140) to (15.5, 7.5, 11).
    let (dmax, _) = metric(&out, "displacement_max");
    assert!(dmax >= (25.0f64.powi(2) + 129.0f64.powi(2) + 25.0).sqrt() - 1e-9, "{dmax}");
}

#[test]
fn volume_matched_rmse_removes_an_error_of_amount_and_keeps_one_of_place() {
    // Twice the volume in the right cells: 4 m against 2 m everywhere on the deposit.
    let tmp = run_case_bulked(0.0, true, 2.0);
    let out = tmp.path().join("out");
    assert_metrics(
        &out,
        &[
            ("deposit_volume_simulated", 200.0),
            ("thickness_rmse", 2.0),
            ("thickness_bias", 2.0),
            ("thickness_rmse_volume_matched", 0.0),
            ("deposit_iou", 1.0),
        ],
    );
    // Shifted by 5 m and bulked three times (6 m thick): the matched RMSE is the unbulked
    // shifted deposit's, sqrt(8/3) (shifted_deposit_matches_closed_forms), whatever the
    // bulking; the plain RMSE is not: errors of 4 m on the 25 shared cells, 6 m on the 25
    // simulated only and 2 m on the 25 surveyed only.
    let tmp = run_case_bulked(5.0, false, 3.0);
    let out = tmp.path().join("out");
    assert_metrics(
        &out,
        &[
            ("thickness_rmse_volume_matched", (8.0f64 / 3.0).sqrt()),
            ("thickness_rmse", ((16.0f64 + 36.0 + 4.0) / 3.0).sqrt()),
        ],
    );
}

#[test]
fn outputs_exist_and_report_lists_every_metric() {
    let tmp = run_case(2.0, true);
    let out = tmp.path().join("out");
    // To look at the figures: TALUS_COMPARE_KEEP=/some/dir cargo test ...
    if let Some(keep) = std::env::var_os("TALUS_COMPARE_KEEP") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).unwrap();
        for e in std::fs::read_dir(out.join("figures")).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), keep.join(e.file_name())).unwrap();
        }
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    let metrics = json["metrics"].as_array().unwrap();
    assert!(metrics.len() >= 30);
    for m in metrics {
        let name = m["metric"].as_str().unwrap();
        assert!(html.contains(&format!("id=\"metric-{name}\"")), "{name} not in the report");
    }
    assert!(html.contains("constructed &lt;case&gt;"));
    // The section is drawn along the flow, not along the easting.
    assert!(html.contains("Trajectories, section along the flow"), "{html}");
    assert!(!html.contains("easting-elevation"), "{html}");
    // The diagnostics table says what each status means.
    assert!(
        html.contains("<td>MaxIterations</td><td class=\"num\">1</td><td>the iteration limit"),
        "{html}"
    );
    assert!(html.contains("<td>Solved</td><td class=\"num\">100</td><td>every island"), "{html}");
    for f in [
        "dod",
        "deposit",
        "deposit_along_flow",
        "energy_kinetic",
        "energy_dissipation",
        "trajectories",
        "trajectories_side",
        "hazard_energy",
        "hazard_passes",
    ] {
        let p = out.join("figures").join(format!("{f}.png"));
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{f}");
        assert!(html.contains(&format!("id=\"fig-{f}\"")), "{f} not embedded");
    }
    assert!(html.contains("data:image/png;base64,"));
    // The hazard maps, as GeoTIFF rasters next to the thickness rasters.
    for f in [
        "hazard_max_energy.tif",
        "hazard_max_velocity.tif",
        "hazard_max_height.tif",
        "hazard_passes.tif",
    ] {
        let bytes = std::fs::read(out.join(f)).unwrap();
        assert_eq!(&bytes[..4], b"II*\0", "{f}");
    }
    // No temporary files left behind.
    let leftovers: Vec<_> = std::fs::read_dir(out.join("figures"))
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            n.starts_with('.').then_some(n)
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn run_without_survey_lists_deposit_metrics_as_not_applicable() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(&tmp.path().join("run"), 0.0);
    let inputs = Inputs { run_dir: tmp.path().join("run"), ..Default::default() };
    let config = Config { figure_width: 800, figure_height: 600, ..Config::default() };
    let out = tmp.path().join("out");
    let s = talus_compare::run(&config, &inputs, &SiteInfo::default(), &out, &talus_io::NoProgress)
        .unwrap();
    assert_eq!(s.deposit_iou, None);
    let (v, ok) = metric(&out, "deposit_iou");
    assert!(!ok && v.is_nan());
    let (v, ok) = metric(&out, "volume_fraction_left_domain");
    assert!(ok && close(v, 1.0 / 12.0), "{v}");
    assert!(!out.join("thickness.parquet").exists());
    assert!(!out.join("figures/dod.png").exists());
    assert!(out.join("figures/energy_kinetic.png").exists());
    assert!(out.join("figures/trajectories.png").exists());
    // Without a survey grid the hazard maps are on a grid of their own.
    assert!(out.join("hazard_passes.tif").exists());
    let json = std::fs::read_to_string(out.join("metrics.json")).unwrap();
    assert!(json.contains("not applicable: no survey"));
}

#[test]
fn same_inputs_give_identical_outputs() {
    let a = run_case(3.0, true);
    let b = run_case(3.0, true);
    for f in [
        "metrics.parquet",
        "thickness.parquet",
        "metrics.json",
        "figures/deposit.png",
        "hazard_max_energy.tif",
        "hazard_passes.tif",
        "report.html",
    ] {
        let (x, y) = (
            std::fs::read(a.path().join("out").join(f)).unwrap(),
            std::fs::read(b.path().join("out").join(f)).unwrap(),
        );
        assert!(x == y, "{f} differs");
    }
}

#[test]
fn missing_input_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(&tmp.path().join("run"), 0.0);
    std::fs::remove_file(tmp.path().join("run/energies.parquet")).unwrap();
    let inputs = Inputs { run_dir: tmp.path().join("run"), ..Default::default() };
    let e = talus_compare::run(
        &Config::default(),
        &inputs,
        &SiteInfo::default(),
        &tmp.path().join("out"),
        &talus_io::NoProgress,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("energies.parquet") && e.contains("not found"), "{e}");
    assert!(!tmp.path().join("out/metrics.parquet").exists());
    let bad = Config { bulking_factor: 0.0, ..Config::default() };
    assert!(bad.validate().unwrap_err().to_string().contains("bulking_factor"));
}
