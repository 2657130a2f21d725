//! Ground classification (SMRF) with known truth: the shipped synthetic surveys of the
//! default site (data/piton-marcel/{pre,post}.laz, classes 2 = ground, 3-5 =
//! vegetation) with every class stripped to 1, filtered, compared with the known classes
//! (overall and on the 65° cliff) and differenced against the classified run.

use las::{Reader, Writer};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use talus_ingest::{Config, Ground, Smrf, run};
use talus_io::{NoProgress, read_table};
use talus_schema::points::{CLASSIFICATION_ORIGINAL, core_schema, ground_schema};
use talus_synth::site::Site;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn site_file() -> toml::Table {
    let text = std::fs::read_to_string(root().join("pipelines/piton-marcel.toml")).unwrap();
    text.parse().unwrap()
}

/// `src` with every point's class set to 1 (unclassified), written to `dst`.
fn strip(src: &Path, dst: &Path) -> Vec<u8> {
    let mut reader = Reader::from_path(src).unwrap();
    let mut writer = Writer::from_path(dst, reader.header().clone()).unwrap();
    let mut truth = Vec::new();
    for p in reader.read_all().unwrap().points() {
        let mut p = p.unwrap();
        truth.push(u8::from(p.classification));
        p.classification = las::point::Classification::Unclassified;
        writer.write_point(p).unwrap();
    }
    writer.close().unwrap();
    truth
}

/// One epoch: the known classes and the points table of the filtered stripped survey.
struct Epoch {
    truth: Vec<u8>,
    stripped: PathBuf,
    classified: PathBuf,
    filtered: PathBuf,
    summary: talus_ingest::Summary,
}

struct Fixture {
    pre: Epoch,
    post: Epoch,
}

/// The ground filter with its default parameters.
fn smrf() -> Config {
    Config { ground: Ground::Smrf(Smrf::default()), ..Config::default() }
}

/// Strip and ingest both surveys once for every test of this file.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("talus-ingest-ground");
        std::fs::create_dir_all(&dir).unwrap();
        let epoch = |name: &str| {
            let src = root().join(format!("data/piton-marcel/{name}.laz"));
            let stripped = dir.join(format!("{name}-stripped.laz"));
            let truth = strip(&src, &stripped);
            let classified = dir.join(format!("{name}-classified.parquet"));
            run(&Config::default(), &[src], &classified, &NoProgress).unwrap();
            let filtered = dir.join(format!("{name}-smrf.parquet"));
            let summary =
                run(&smrf(), std::slice::from_ref(&stripped), &filtered, &NoProgress).unwrap();
            println!("{name}: {summary}");
            Epoch { truth, stripped, classified, filtered, summary }
        };
        Fixture { pre: epoch("pre"), post: epoch("post") }
    })
}

/// Agreement and Cohen's κ of predicted against true ground (None for κ when undefined).
#[derive(Debug, Default, Clone, Copy)]
struct Confusion {
    /// [true ground & predicted ground, true ground & predicted not, true not & predicted
    /// ground, true not & predicted not]
    n: [u64; 4],
}

impl Confusion {
    fn add(&mut self, truth: bool, pred: bool) {
        self.n[match (truth, pred) {
            (true, true) => 0,
            (true, false) => 1,
            (false, true) => 2,
            (false, false) => 3,
        }] += 1;
    }
    fn total(&self) -> u64 {
        self.n.iter().sum()
    }
    fn agreement(&self) -> f64 {
        (self.n[0] + self.n[3]) as f64 / self.total() as f64
    }
    fn kappa(&self) -> Option<f64> {
        let t = self.total() as f64;
        let [a, b, c, d] = self.n.map(|v| v as f64);
        let pe = ((a + b) * (a + c) + (c + d) * (b + d)) / (t * t);
        (pe < 1.0).then(|| (self.agreement() - pe) / (1.0 - pe))
    }
    fn line(&self, what: &str) -> String {
        format!(
            "{what}: {} points, agreement {:.2} %, kappa {}, [ground->ground {}, ground->not {}, not->ground {}, not->not {}]",
            self.total(),
            100.0 * self.agreement(),
            self.kappa().map_or("undefined (one class)".into(), |k| format!("{k:.4}")),
            self.n[0],
            self.n[1],
            self.n[2],
            self.n[3]
        )
    }
}

/// Slope mask of the true surface of an epoch on a 2 m grid, dilated by `margin` cells.
struct SlopeMask {
    origin: [f64; 2],
    cell: f64,
    nx: usize,
    ny: usize,
    steep: Vec<bool>,
    band: Vec<bool>,
}

impl SlopeMask {
    fn new(site: &Site, post: bool, min_deg: f64, margin: usize) -> SlopeMask {
        let c = &site.config;
        let cell = 2.0;
        let (nx, ny) = ((c.extent[0] / cell) as usize, (c.extent[1] / cell) as usize);
        let z = |x: f64, y: f64| if post { site.z_post(x, y) } else { site.z_pre(x, y) };
        let tan = min_deg.to_radians().tan();
        let mut steep = vec![false; nx * ny];
        for j in 0..ny {
            for i in 0..nx {
                let (x, y) = ((i as f64 + 0.5) * cell, (j as f64 + 0.5) * cell);
                let e = 0.5 * cell;
                let gx = (z(x + e, y) - z(x - e, y)) / cell;
                let gy = (z(x, y + e) - z(x, y - e)) / cell;
                steep[j * nx + i] = gx.hypot(gy) > tan;
            }
        }
        let mut band = steep.clone();
        for j in 0..ny {
            for i in 0..nx {
                if steep[j * nx + i] {
                    for b in j.saturating_sub(margin)..(j + margin + 1).min(ny) {
                        for a in i.saturating_sub(margin)..(i + margin + 1).min(nx) {
                            band[b * nx + a] = true;
                        }
                    }
                }
            }
        }
        SlopeMask { origin: c.origin, cell, nx, ny, steep, band }
    }

    fn cell_of(&self, x: f64, y: f64) -> Option<usize> {
        let (i, j) = ((x - self.origin[0]) / self.cell, (y - self.origin[1]) / self.cell);
        (i >= 0.0 && j >= 0.0 && (i as usize) < self.nx && (j as usize) < self.ny)
            .then(|| j as usize * self.nx + i as usize)
    }
}

#[test]
fn smrf_recovers_the_known_ground_of_the_stripped_synthetic_surveys() {
    let f = fixture();
    let synth: talus_synth::config::Config =
        site_file()["synth"].clone().try_into().expect("[synth] table");
    let site = Site::new(&synth).unwrap();
    let mut all = Confusion::default();
    let (mut cliff, mut band) = (Confusion::default(), Confusion::default());
    for (name, e, post) in [("pre", &f.pre, false), ("post", &f.post, true)] {
        let mask = SlopeMask::new(&site, post, 45.0, 5);
        let t = read_table(&e.filtered, &core_schema()).unwrap();
        let (x, y) = (t.f64s("x").unwrap(), t.f64s("y").unwrap());
        let class = t.u8s("classification").unwrap();
        assert_eq!(class.len(), e.truth.len(), "{name}: every point written, in order");
        let original = read_table(&e.filtered, &ground_schema()).unwrap();
        assert!(original.u8s(CLASSIFICATION_ORIGINAL).unwrap().iter().all(|c| *c == 1));
        let mut mine = Confusion::default();
        for k in 0..class.len() {
            let (truth, pred) = (e.truth[k] == 2, class[k] == 2);
            assert!(matches!(class[k], 1 | 2));
            mine.add(truth, pred);
            all.add(truth, pred);
            if let Some(c) = mask.cell_of(x[k], y[k]) {
                if mask.steep[c] {
                    cliff.add(truth, pred);
                }
                if mask.band[c] {
                    band.add(truth, pred);
                }
            }
        }
        println!("{}", mine.line(name));
    }
    println!("{}", all.line("both surveys"));
    println!("{}", cliff.line("cliff (true ground steeper than 45°)"));
    println!("{}", band.line("cliff band (within 10 m of ground steeper than 45°)"));
    for (what, c) in [("overall", &all), ("cliff band", &band)] {
        assert!(c.agreement() >= 0.95, "{what}: {}", c.line(what));
        assert!(c.kappa().unwrap() >= 0.9, "{what}: {}", c.line(what));
    }
    assert!(cliff.total() > 10_000, "{}", cliff.line("cliff"));
    assert!(cliff.agreement() >= 0.95, "{}", cliff.line("cliff"));
    if let Some(k) = cliff.kappa() {
        assert!(k >= 0.9, "{}", cliff.line("cliff"));
    }
}

#[test]
fn zone_volumes_of_the_filtered_surveys_stay_within_their_error_bars() {
    let f = fixture();
    let config: talus_diff::Config = site_file()["diff"].clone().try_into().expect("[diff] table");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("talus-ingest-ground");
    let zones = |pre: &Path, post: &Path, out: &str| {
        let s = talus_diff::run(&config, pre, post, &dir.join(out), &NoProgress).unwrap();
        let pick = |kind: talus_diff::ZoneKind| {
            s.zones
                .iter()
                .filter(|z| z.kind == kind)
                .max_by(|a, b| a.volume.volume.total_cmp(&b.volume.volume))
                .map(|z| z.volume)
                .unwrap_or_else(|| panic!("{out}: no {kind:?} zone"))
        };
        (pick(talus_diff::ZoneKind::Scar), pick(talus_diff::ZoneKind::Deposit))
    };
    let classified = zones(&f.pre.classified, &f.post.classified, "diff-classified");
    let filtered = zones(&f.pre.filtered, &f.post.filtered, "diff-smrf");
    for (what, a, b) in
        [("scar", &classified.0, &filtered.0), ("deposit", &classified.1, &filtered.1)]
    {
        let dv = b.volume - a.volume;
        println!(
            "{what}: classified {:.0} ± {:.0} m³, SMRF on stripped {:.0} ± {:.0} m³, ΔV = {dv:+.0} m³ ({:+.3} %, {:.2} σ)",
            a.volume,
            a.error,
            b.volume,
            b.error,
            100.0 * dv / a.volume,
            dv.abs() / a.error
        );
        assert!(dv.abs() <= a.error, "{what}: |ΔV| = {:.0} m³ > {:.0} m³", dv.abs(), a.error);
    }
}

#[test]
fn ground_filtering_is_deterministic_and_reports_its_counts() {
    let f = fixture();
    let again = f.pre.filtered.with_file_name("pre-smrf-again.parquet");
    let config = Config { chunk_points: 7_777, ..smrf() };
    let s = run(&config, std::slice::from_ref(&f.pre.stripped), &again, &NoProgress).unwrap();
    // The chunking does not change the points table (the provenance records the config, so
    // compare the tables, not the bytes).
    let (a, b) = (
        read_table(&f.pre.filtered, &core_schema()).unwrap(),
        read_table(&again, &core_schema()).unwrap(),
    );
    assert_eq!(a.u8s("classification").unwrap(), b.u8s("classification").unwrap());
    assert_eq!(a.f64s("z").unwrap(), b.f64s("z").unwrap());
    // Same config, same input: byte-identical file.
    let third = f.pre.filtered.with_file_name("pre-smrf-third.parquet");
    run(&smrf(), std::slice::from_ref(&f.pre.stripped), &third, &NoProgress).unwrap();
    assert_eq!(std::fs::read(&f.pre.filtered).unwrap(), std::fs::read(&third).unwrap());
    let g = s.ground.clone().expect("ground summary");
    let p = &g.points;
    assert_eq!(p.ground + p.non_ground + p.other_returns + p.kept, s.points_read);
    assert_eq!(s.class_counts.get(&2).copied().unwrap_or(0), p.ground);
    assert_eq!(f.pre.summary.ground.as_ref().unwrap().points.ground, p.ground);
    assert!(format!("{s}").contains("ground (SMRF"));
}

#[test]
fn class_filter_keeps_the_computed_ground() {
    let f = fixture();
    let out = f.pre.filtered.with_file_name("pre-smrf-ground-only.parquet");
    let config = Config { classes: vec![2], ..smrf() };
    let s = run(&config, std::slice::from_ref(&f.pre.stripped), &out, &NoProgress).unwrap();
    assert_eq!(s.points_written, s.ground.unwrap().points.ground);
    let t = read_table(&out, &core_schema()).unwrap();
    assert!(t.u8s("classification").unwrap().iter().all(|c| *c == 2));
}

#[test]
fn bad_ground_parameters_are_refused_naming_the_field() {
    for (field, p) in [
        ("ground.cell", Smrf { cell: 0.0, ..Smrf::default() }),
        ("ground.slope", Smrf { slope: -0.1, ..Smrf::default() }),
        ("ground.window", Smrf { window: f64::NAN, ..Smrf::default() }),
        ("ground.threshold", Smrf { threshold: -1.0, ..Smrf::default() }),
        ("ground.scalar", Smrf { scalar: f64::INFINITY, ..Smrf::default() }),
        ("ground.window", Smrf { cell: 2.0, window: 1.0, ..Smrf::default() }),
    ] {
        let config = Config { ground: Ground::Smrf(p), ..Config::default() };
        let e = config.validate().unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
    // Unknown keys and methods are refused by the parser.
    let e = serde_json::from_str::<Config>(r#"{"ground": {"method": "smrf", "cel": 1.0}}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cel"), "{e}");
    let e =
        serde_json::from_str::<Config>(r#"{"ground": {"method": "pmf"}}"#).unwrap_err().to_string();
    assert!(e.contains("pmf"), "{e}");
    let c: Config = serde_json::from_str(r#"{"ground": {"method": "smrf", "cell": 2.0}}"#).unwrap();
    assert_eq!(c.ground, Ground::Smrf(Smrf { cell: 2.0, ..Smrf::default() }));
    // The default (no ground filter) serialises as before: no `ground` key.
    // The default is written out, so `--print-config` and the provenance show it.
    assert!(
        serde_json::to_string(&Config::default())
            .unwrap()
            .contains(r#""ground":{"method":"none"}"#)
    );
}
