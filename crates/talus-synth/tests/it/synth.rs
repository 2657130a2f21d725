//! End-to-end behaviour of `talus synth`: determinism, volumes, file validity, bad input.

use std::path::{Path, PathBuf};
use talus_io::NoProgress;
use talus_synth::{Config, Epoch, Site, generate, run, truth};

/// A fast configuration: the default site geometry, sparse points, coarse truth grid.
fn small(seed: u64) -> Config {
    let mut c = Config { seed, scale: 0.03, truth_cell: 2.0, ..Config::default() };
    c.post.misregistration = [0.1, -0.1, 0.02];
    c
}

fn out_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("talus-synth").join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

#[test]
fn same_seed_gives_byte_identical_files() {
    let (a, b) = (out_dir("same-a"), out_dir("same-b"));
    let sa = run(&small(7), &a, &NoProgress).unwrap();
    run(&small(7), &b, &NoProgress).unwrap();
    for f in ["pre.laz", "post.laz", "truth.parquet", "truth.json"] {
        let (x, y) = (std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap());
        assert!(!x.is_empty(), "{f} is empty");
        assert!(x == y, "{f} differs between two runs with the same seed");
    }
    assert!(sa.pre.points > 1000 && sa.post.points > sa.pre.points, "{sa:?}");
}

#[test]
fn different_seed_changes_relief_not_volumes() {
    let a = generate(&small(1), true, &NoProgress).unwrap();
    let b = generate(&small(2), true, &NoProgress).unwrap();
    let differing =
        a.truth.z_pre.iter().zip(&b.truth.z_pre).filter(|(p, q)| (*p - *q).abs() > 0.05).count();
    assert!(differing > a.truth.z_pre.len() / 2, "relief barely changed: {differing} cells");
    assert!(a.pre != b.pre);
    let (sa, sb) = (&a.summary, &b.summary);
    assert!(rel(sa.scar_volume, sb.scar_volume) < 0.01, "{} vs {}", sa.scar_volume, sb.scar_volume);
    assert!(rel(sa.deposit_volume, sb.deposit_volume) < 0.01);
    // The configured volume and bulking are met on the grid.
    assert!(rel(sa.scar_volume, 8.0e5) < 1e-6, "{}", sa.scar_volume);
    assert!(rel(sa.deposit_volume, 1.2 * sa.scar_volume) < 1e-6, "{}", sa.deposit_volume);
    assert!(rel(sa.net_volume, sa.scar_volume - sa.deposit_volume) < 1e-3);
}

#[test]
fn truth_volume_matches_the_surfaces_within_half_a_percent() {
    // The truth (Σ Δz · cell² on the 2 m grid) against an independent integration of the
    // exact surfaces z_pre - z_post on a 0.5 m grid.
    let c = small(3);
    let site = Site::new(&c).unwrap();
    let tg = truth::TruthGrid::compute(&site);
    let (scar, dep) = (tg.scar(), tg.deposit());
    let h = 0.5;
    let (nx, ny) = ((c.extent[0] / h) as usize, (c.extent[1] / h) as usize);
    let (mut loss, mut gain) = (0.0, 0.0);
    for j in 0..ny {
        for i in 0..nx {
            let (x, y) = ((i as f64 + 0.5) * h, (j as f64 + 0.5) * h);
            let dz = site.z_pre(x, y) - site.z_post(x, y);
            if dz > 0.0 { loss += dz } else { gain -= dz }
        }
    }
    let (loss, gain) = (loss * h * h, gain * h * h);
    // Loss and gain overlap only in the deficit's sub-millimetre tail below the cliff foot.
    assert!(rel(scar.volume, loss) < 0.005, "scar {} vs surfaces {loss}", scar.volume);
    assert!(rel(dep.volume, gain) < 0.005, "deposit {} vs surfaces {gain}", dep.volume);
    // Shape figures of the thesis: height differences of tens of metres, scar over the cliff.
    assert!((40.0..=80.0).contains(&scar.max_dz), "max deficit {}", scar.max_dz);
    assert!((20.0..=80.0).contains(&dep.max_dz), "max thickness {}", dep.max_dz);
    assert!(scar.polygon.len() > 10 && dep.polygon.len() > 10);
    // The deposit lies downslope (south) of the scar and its tip is its southernmost point.
    let cy = |p: &[[f64; 2]]| p.iter().map(|q| q[1]).sum::<f64>() / p.len() as f64;
    assert!(cy(&dep.polygon) < cy(&scar.polygon));
}

#[test]
fn files_read_back_with_crs_classes_returns_and_noise() {
    let c = small(11);
    let dir = out_dir("readback");
    let s = run(&c, &dir, &NoProgress).unwrap();
    let site = Site::new(&c).unwrap();
    for (file, epoch, stats) in
        [("pre.laz", Epoch::Pre, &s.pre), ("post.laz", Epoch::Post, &s.post)]
    {
        let mut reader = las::Reader::from_path(dir.join(file)).unwrap();
        let header = reader.header().clone();
        assert_eq!(header.number_of_points(), stats.points);
        let wkt = String::from_utf8_lossy(header.get_wkt_crs_bytes().expect("WKT VLR")).to_string();
        assert_eq!(talus_io::Crs::from_wkt(&wkt).epsg, Some(32620), "{wkt}");
        let mut classes = [0u64; 8];
        let mut multi = 0u64;
        let mut last_t = f64::NEG_INFINITY;
        let mut line = 0u16;
        let mut residuals = Vec::new();
        let mis = if epoch == Epoch::Post { c.post.misregistration } else { [0.0; 3] };
        let data = reader.read_all().unwrap();
        for p in data.points() {
            let p = p.unwrap();
            let class = u8::from(p.classification);
            classes[class.min(7) as usize] += 1;
            if p.number_of_returns > 1 {
                multi += 1;
            }
            let t = p.gps_time.unwrap();
            if p.point_source_id == line {
                assert!(t >= last_t, "GPS time goes back within a flight line");
            }
            line = p.point_source_id;
            last_t = t;
            assert!(p.x >= c.origin[0] - 5.0 && p.x <= c.origin[0] + c.extent[0] + 5.0);
            if class == 2 {
                let (x, y) = (p.x - c.origin[0] - mis[0], p.y - c.origin[1] - mis[1]);
                let truth = match epoch {
                    Epoch::Pre => site.z_pre(x, y),
                    Epoch::Post => site.z_post(x, y),
                };
                residuals.push((p.z - mis[2] - truth).abs());
            }
        }
        assert!(classes[2] > 0 && classes[3] + classes[4] + classes[5] > 0, "{classes:?}");
        assert!(classes[5] > 0, "tall vegetation expected: {classes:?}");
        assert!(multi > 0);
        // Ground residuals: σ_z plus the slope times the planimetric error; on most of the
        // site (gentle slopes) the median stays at a few centimetres to decimetres.
        residuals.sort_by(f64::total_cmp);
        let median = residuals[residuals.len() / 2];
        assert!(median < 0.25, "{file}: median |z - truth| = {median}");
    }
}

#[test]
fn points_cover_the_cliff_face() {
    // Surface-area sampling: the cliff face (horizontal width ~60 m for 130 m of height)
    // gets about sec(slope) times the density of flat ground per horizontal m².
    let c = small(5);
    let site = Site::new(&c).unwrap();
    let x = 60.0; // outside the scar
    let foot = site.foot_y(x);
    let count = |epoch, y0: f64, y1: f64| {
        let mut n = 0;
        for line in 0..talus_synth::survey::line_count(&site, &c.pre) {
            for r in talus_synth::survey::flight_line(&site, &c.pre, epoch, line) {
                let (px, py) = (r.x - c.origin[0], r.y - c.origin[1]);
                if r.classification == 2 && (px - x).abs() < 40.0 && py > y0 && py < y1 {
                    n += 1;
                }
            }
        }
        n as f64
    };
    let face = count(Epoch::Pre, foot + 10.0, foot + 10.0 + 30.0);
    let flat = count(Epoch::Pre, foot - 60.0, foot - 30.0);
    assert!(face > 1.5 * flat, "face {face} vs flat {flat}");
}

#[test]
fn impossible_configurations_fail_before_writing() {
    let mut bad = Vec::new();
    let mut c = small(1);
    c.scar.volume = 5.0e7; // needs the cliff to retreat further than the plateau goes
    bad.push(("scar volume", c));
    let mut c = small(1);
    c.scar.width = 900.0; // wider than the 560 m of cliff
    bad.push(("scar width", c));
    let mut c = small(1);
    c.pre.density = -2.0;
    bad.push(("density", c));
    let mut c = small(1);
    c.crs_epsg = 2154;
    bad.push(("crs", c));
    let mut c = small(1);
    c.deposit.travel_angle = Some(5.0);
    bad.push(("travel angle", c));
    for (what, c) in bad {
        let dir = out_dir(&format!("bad-{}", what.replace(' ', "-")));
        let e = run(&c, &dir, &NoProgress).expect_err(what).to_string();
        eprintln!("{what}: {e}");
        assert!(
            !dir.exists() || std::fs::read_dir(&dir).unwrap().next().is_none(),
            "{what}: files written"
        );
        match what {
            "scar volume" | "scar width" => assert!(e.contains("larger than the cliff"), "{e}"),
            "density" => assert!(e.contains("pre.density"), "{e}"),
            "crs" => assert!(e.contains("EPSG:2154"), "{e}"),
            _ => assert!(e.contains("travel"), "{e}"),
        }
    }
}

/// Cross-check with laspy (an optional Python package): `cargo test -- --ignored` runs it.
#[test]
#[ignore = "needs python3 with laspy and lazrs (pip install laspy lazrs); run with --ignored"]
fn laspy_opens_the_files() {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import laspy, lazrs"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "python3 with laspy and lazrs is not available (pip install laspy lazrs)");
    let dir = out_dir("laspy");
    let s = run(&small(9), &dir, &NoProgress).unwrap();
    let script = r#"
import sys, re, laspy, numpy as np
f = laspy.read(sys.argv[1])
wkt = [v for v in f.header.vlrs if v.record_id == 2112]
code = 'none'
if wkt:
    text = wkt[0].string if hasattr(wkt[0], 'string') else bytes(wkt[0].record_data).decode()
    m = re.findall(r'AUTHORITY\["EPSG","(\d+)"\]\]$', text.rstrip('\x00'))
    code = m[-1] if m else 'unparsed'
print(len(f.points), f.header.point_format.id, int(np.sum(f.classification == 2)), code)
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, dir.join("post.laz").to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "laspy failed: {}", String::from_utf8_lossy(&out.stderr));
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields[0].parse::<u64>().unwrap(), s.post.points);
    assert_eq!(fields[1], "6");
    assert_eq!(fields[2].parse::<u64>().unwrap(), s.post.ground);
    assert_eq!(fields[3], "32620", "WKT VLR as laspy reads it");
}

/// The default geometry with a pillar scar of 80 m × 156 m on 2 m truth cells.
fn pillar(seed: u64) -> Config {
    let mut c = small(seed);
    c.scar.shape = talus_synth::ScarShape::Pillar;
    c.scar.width = 156.0;
    c.scar.depth = 80.0;
    c.scar.center_x = 278.0;
    c.deposit.spread = 2.3;
    c
}

#[test]
fn pillar_scar_is_a_box_of_whole_cells_holding_the_volume() {
    let c = pillar(4);
    let site = Site::new(&c).unwrap();
    let p = site.pillar.expect("a pillar");
    let cell = c.truth_cell;
    // Whole cells, the configured extent, centred on center_x.
    for v in [p.x0, p.x1, p.y0, p.y1] {
        assert!((v / cell - (v / cell).round()).abs() < 1e-9, "{v} is not on a cell edge");
    }
    assert_eq!((p.x1 - p.x0, p.y1 - p.y0), (156.0, 80.0));
    assert_eq!(0.5 * (p.x0 + p.x1), 278.0);
    let h = p.height();
    assert!((h - 8.0e5 / (156.0 * 80.0)).abs() < 1e-9, "height {h}");
    // On the truth grid: every cell of the box holds the full height, every other none.
    let tg = truth::TruthGrid::compute(&site);
    let g = tg.grid;
    let mut cells = 0;
    for j in 0..g.ny {
        for i in 0..g.nx {
            let k = j * g.nx + i;
            let inside = p.contains(g.x(i), g.y(j));
            cells += usize::from(inside);
            let want = if inside { h } else { 0.0 };
            assert_eq!(tg.deficit[k], want, "cell ({i}, {j})");
            if inside {
                assert_eq!((tg.z_pre[k], tg.z_post[k]), (p.top, p.bench));
            }
            // Scar and deposit never share a cell.
            assert!(!(tg.deficit[k] > 0.0 && tg.thickness[k] > 0.0), "cell ({i}, {j})");
        }
    }
    assert_eq!(cells, 78 * 40);
    let scar = tg.scar();
    assert!(rel(scar.volume, 8.0e5) < 1e-12, "{}", scar.volume);
    assert_eq!(scar.max_dz, h);
    assert!(rel(tg.deposit().volume, 1.2 * scar.volume) < 1e-6);
    // An independent integration on a 0.5 m grid (its cell edges include the box's) gives
    // the same scar volume.
    let hh = 0.5;
    let mut loss = 0.0;
    for j in 0..(c.extent[1] / hh) as usize {
        for i in 0..(c.extent[0] / hh) as usize {
            let (x, y) = ((i as f64 + 0.5) * hh, (j as f64 + 0.5) * hh);
            loss += (site.z_pre(x, y) - site.z_post(x, y)).max(0.0) * hh * hh;
        }
    }
    let dep = tg.deposit().volume;
    assert!(rel(loss, 8.0e5) < 1e-9, "scar by 0.5 m cells {loss}, deposit {dep}");
    // The bench is flush with the smooth cliff in front of it, the top with the plateau
    // behind, at the box's centre (to the slope × half a cell of rounding the front).
    let xc = 0.5 * (p.x0 + p.x1);
    assert!((site.base_pre(xc, p.y1) - p.top).abs() < 1e-9);
    let slope = c.terrain.cliff_slope.to_radians().tan();
    assert!(
        (site.base_pre(xc, p.y0) - p.bench).abs() <= slope * 0.5 * cell + 1e-6,
        "bench {} vs cliff {}",
        p.bench,
        site.base_pre(xc, p.y0)
    );
    // The box lies above the cliff foot, on the upper cliff: the bench is well above the
    // foot and the top near the old cliff top.
    let foot = site.base_pre(xc, site.foot_y(xc));
    assert!(p.bench - foot > 0.4 * c.terrain.cliff_height, "bench {} foot {foot}", p.bench);
    assert!(p.top - foot > 0.9 * c.terrain.cliff_height, "top {} foot {foot}", p.top);
    // The runout follows the travel angle from the crown (the back wall's top).
    let tan_a = site.travel_angle.to_radians().tan();
    let tan_b = c.terrain.valley_slope.to_radians().tan();
    let crown_dist = p.y1 - site.foot_y(xc);
    assert!((site.runout - ((p.top - foot) - tan_a * crown_dist) / (tan_a - tan_b)).abs() < 1e-9);
}

#[test]
fn pillar_too_large_for_the_cliff_fails_before_writing() {
    let mut c = pillar(1);
    c.scar.volume = 3.0e6; // 240 m tall over 80 m x 156 m: the cliff rises 130 m
    let dir = out_dir("bad-pillar");
    let e = run(&c, &dir, &NoProgress).expect_err("too tall").to_string();
    assert!(e.contains("larger than the cliff"), "{e}");
    assert!(!dir.exists() || std::fs::read_dir(&dir).unwrap().next().is_none());
}
