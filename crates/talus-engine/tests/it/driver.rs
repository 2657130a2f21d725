//! `talus_engine::run` on files: outputs, determinism, checkpoints and resume, bad input.

use nalgebra::{UnitQuaternion, Vector3};
use std::path::Path;
use std::sync::Arc;
use talus_engine::Error;
use talus_engine::body::Block;
use talus_engine::config::{Config, Kappa, PlaneConfig};
use talus_engine::driver::{block_rows, run};
use talus_io::{NoProgress, Provenance};

fn write_blocks(path: &Path, blocks: &[Block]) {
    let dens = vec![2000.0; blocks.len()];
    let prov = Provenance::new("seed", "test", &serde_json::json!({}));
    // Size classes 0, 1, 0, 1, ...: carried through the run to final.parquet.
    let classes: Vec<u32> = (0..blocks.len() as u32).map(|i| i % 2).collect();
    talus_io::blocks::write(path, &block_rows(blocks, &dens, &classes), &prov).unwrap();
}

fn scene() -> Vec<Block> {
    let mut v = Vec::new();
    for k in 0..4u32 {
        let rot = UnitQuaternion::from_euler_angles(0.1 * k as f64, 0.2, -0.1 * k as f64);
        let mut b = Block::new(
            10 + k,
            0.6,
            0.5,
            0.4,
            2000.0,
            Vector3::new(0.3 * k as f64, 0.1 * k as f64, 0.5 + 0.7 * k as f64),
            rot,
        );
        b.vel = Vector3::new(0.2, -0.1, -1.0);
        b.omega = Vector3::new(0.5, 0.1, -0.3 * k as f64);
        v.push(b);
    }
    v
}

fn config() -> Config {
    Config {
        dt: 2e-3,
        steps: Some(200),
        kappa: Kappa::Raw { normal: 200.0, tangential: 200.0 },
        planes: vec![PlaneConfig { point: [0.0, 0.0, 0.0], normal: [0.0, 0.0, 1.0] }],
        output_every: 5,
        checkpoint_every: 60,
        ..Config::default()
    }
}

/// Every output but `timings.parquet`: byte-identical between two runs with the default
/// configuration (which measures wall times).
const TABLES: [&str; 4] =
    ["trajectories.parquet", "energies.parquet", "diagnostics.parquet", "final.parquet"];

/// The `step` and `t_step` columns of a run's `timings.parquet`.
fn timings(dir: &Path) -> (Vec<u64>, Vec<f64>) {
    let t =
        talus_io::read_table(&dir.join("timings.parquet"), &talus_schema::run::timings_schema())
            .unwrap();
    (t.u64s("step").unwrap(), t.f64s("t_step").unwrap())
}

#[test]
fn outputs_are_deterministic_and_resume_is_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("blocks.parquet");
    write_blocks(&input, &scene());
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let cfg = config();
    let sa = run(&cfg, &input, None, &a, false, &NoProgress).unwrap();
    assert_eq!(sa.steps, 200);
    assert_eq!(sa.failed_qps, 0);
    assert!(sa.max_contacts > 0, "the blocks should land");
    // The summary's smallest block edge (blocks of 0.6 x 0.5 x 0.4 m), over which it reports
    // the largest penetration.
    assert!((sa.smallest_edge - 0.4).abs() < 1e-12, "{}", sa.smallest_edge);
    let share = sa.penetration_share().expect("a share with blocks");
    assert!((share - sa.max_penetration / 0.4).abs() <= 1e-15, "{share}");
    let t = talus_io::read_table(
        &a.join("trajectories.parquet"),
        &talus_schema::run::trajectories_schema(),
    )
    .unwrap();
    assert_eq!(t.num_rows(), 4 * 41); // steps 0, 5, ..., 200
    let e =
        talus_io::read_table(&a.join("energies.parquet"), &talus_schema::run::energies_schema())
            .unwrap();
    assert_eq!(e.num_rows(), 201);
    let d = e.f64s("dissipated").unwrap();
    // Per-step dissipation can dip below zero when a separating contact still carries a
    // multiplier (reported below); the cumulative dissipation must grow.
    let dmin = d.iter().copied().fold(f64::INFINITY, f64::min);
    eprintln!("min per-step dissipation {dmin:e} J, total {} J", d.iter().sum::<f64>());
    assert!(d.iter().sum::<f64>() > 0.0);
    let fin =
        talus_io::read_table(&a.join("final.parquet"), &talus_schema::blocks::schema()).unwrap();
    assert_eq!(fin.num_rows(), 4);
    assert!(fin.metadata.contains_key("geo"));
    assert_eq!(fin.u32s("class").unwrap(), vec![0, 1, 0, 1], "size classes kept");
    // Wall times are measured (the default), in timings.parquet only.
    assert!(cfg.wall_times);
    let (steps, t_step) = timings(&a);
    assert_eq!(steps, (0..=200).collect::<Vec<u64>>());
    assert!(t_step[1..].iter().all(|t| *t > 0.0), "every step is timed");
    // Same inputs: same bytes (everything but the timings).
    run(&cfg, &input, None, &b, false, &NoProgress).unwrap();
    for f in TABLES {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f} differs between runs"
        );
    }
    // Interrupted after the checkpoint of step 180: outputs gone, later state lost.
    for f in TABLES.iter().chain(&["timings.parquet"]) {
        std::fs::remove_file(b.join(f)).unwrap();
    }
    assert!(b.join("checkpoints/step_0000000180/state.json").exists());
    let sb = run(&cfg, &input, None, &b, true, &NoProgress).unwrap();
    assert_eq!(sb.resumed_from, Some(180));
    // The resumed run's summary carries the first part's: the same edge and penetration.
    assert_eq!(
        (sb.smallest_edge, sb.max_penetration.to_bits()),
        (sa.smallest_edge, sa.max_penetration.to_bits())
    );
    for f in TABLES {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f} differs after resume"
        );
    }
    // The ParaView series: one file per output step, the same after resume.
    assert_eq!(sb.paraview.map(|p| (p.frames, p.terrain)), Some((41, false)));
    let pv = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(d.join("paraview"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let (pa, pb) = (pv(&a), pv(&b));
    assert_eq!(pa.len(), 42);
    assert!(pa == pb, "the ParaView series differs after resume");
    assert!(!b.join(".paraview.partial").exists());
    // The timings of a resumed run cover every step too (those of steps 1..=180 as the
    // first process measured them).
    let (steps, t_step) = timings(&b);
    assert_eq!(steps, (0..=200).collect::<Vec<u64>>());
    assert!(t_step[1..].iter().all(|t| *t > 0.0));
    // A different configuration refuses to resume.
    let mut other = cfg.clone();
    other.gravity = 9.0;
    assert!(matches!(run(&other, &input, None, &b, true, &NoProgress), Err(Error::Resume { .. })));
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config();
    // NaN velocity.
    let mut blocks = scene();
    blocks[1].vel.x = f64::NAN;
    let p = tmp.path().join("nan.parquet");
    write_blocks(&p, &blocks);
    let e =
        run(&cfg, &p, None, &tmp.path().join("o1"), false, &NoProgress).unwrap_err().to_string();
    assert!(e.contains("block 11") && e.contains("finite"), "{e}");
    assert!(!tmp.path().join("o1/final.parquet").exists());
    // Non-positive size.
    let mut blocks = scene();
    blocks[2].half.y = 0.0;
    let p = tmp.path().join("size.parquet");
    write_blocks(&p, &blocks);
    let e =
        run(&cfg, &p, None, &tmp.path().join("o2"), false, &NoProgress).unwrap_err().to_string();
    assert!(e.contains("block 12") && e.contains("b = 0"), "{e}");
    // Overlapping blocks.
    let mut blocks = scene();
    blocks[1].pos = blocks[0].pos + Vector3::new(0.05, 0.0, 0.0);
    let p = tmp.path().join("overlap.parquet");
    write_blocks(&p, &blocks);
    let e =
        run(&cfg, &p, None, &tmp.path().join("o3"), false, &NoProgress).unwrap_err().to_string();
    assert!(e.contains("overlap") && e.contains("block 10") && e.contains("block 11"), "{e}");
    let mut allow = cfg.clone();
    allow.allow_initial_overlap = true;
    run(&allow, &p, None, &tmp.path().join("o4"), false, &NoProgress).unwrap();
    // Non-positive Δt.
    let mut bad = cfg.clone();
    bad.dt = 0.0;
    let e = run(
        &bad,
        &tmp.path().join("overlap.parquet"),
        None,
        &tmp.path().join("o5"),
        false,
        &NoProgress,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("dt"), "{e}");
    // Terrain with no triangles.
    let tdir = tmp.path().join("terrain");
    let prov = Provenance::new("terrain", "test", &serde_json::json!({}));
    let vs = Arc::new(talus_schema::terrain::vertices_schema());
    let ts = Arc::new(talus_schema::terrain::triangles_schema());
    talus_io::write_parquet(
        &tdir.join("vertices.parquet"),
        vs.clone(),
        &[arrow::array::RecordBatch::new_empty(vs)],
        &prov,
    )
    .unwrap();
    talus_io::write_parquet(
        &tdir.join("triangles.parquet"),
        ts.clone(),
        &[arrow::array::RecordBatch::new_empty(ts)],
        &prov,
    )
    .unwrap();
    let good = tmp.path().join("good.parquet");
    write_blocks(&good, &scene());
    let e = run(&cfg, &good, Some(&tdir), &tmp.path().join("o6"), false, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no triangles"), "{e}");
}

/// Copy the run directory `from` into `to` as a run killed just after the checkpoint of
/// step `k`: later checkpoints and every output gone.
fn killed_after(from: &Path, to: &Path, k: u64) {
    let ck = to.join("checkpoints");
    std::fs::create_dir_all(&ck).unwrap();
    for e in std::fs::read_dir(from.join("checkpoints")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(step) = name.strip_prefix("step_").and_then(|s| s.parse::<u64>().ok()) else {
            continue;
        };
        if step <= k {
            std::fs::create_dir_all(ck.join(&name)).unwrap();
            for f in std::fs::read_dir(e.path()).unwrap() {
                let f = f.unwrap();
                std::fs::copy(f.path(), ck.join(&name).join(f.file_name())).unwrap();
            }
        }
    }
}

/// `[run] perturbation`: the run starts with each block's velocity plus `speed` in its
/// seeded direction (step 0 of the trajectories), the energy balance counts that kinetic
/// energy, the run is deterministic and resumes byte for byte, and another seed gives
/// another run.
#[test]
fn a_perturbed_run_starts_from_the_perturbed_velocities_and_resumes_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("blocks.parquet");
    let blocks = scene();
    write_blocks(&input, &blocks);
    let p = talus_engine::config::Perturbation { speed: 0.25, seed: 5 };
    let cfg = Config { perturbation: Some(p), wall_times: false, ..config() };
    let (a, b, c, d) =
        (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"), tmp.path().join("d"));
    run(&cfg, &input, None, &a, false, &NoProgress).unwrap();
    let t = talus_io::read_table(
        &a.join("trajectories.parquet"),
        &talus_schema::run::trajectories_schema(),
    )
    .unwrap();
    let (step, id) = (t.u64s("step").unwrap(), t.u32s("id").unwrap());
    let v = [t.f64s("vx").unwrap(), t.f64s("vy").unwrap(), t.f64s("vz").unwrap()];
    let mut seen = 0;
    for r in (0..t.num_rows()).filter(|&r| step[r] == 0) {
        let b0 = blocks.iter().find(|b| b.id == id[r]).unwrap();
        let dir = p.direction(id[r]);
        for k in 0..3 {
            let expected = b0.vel[k] + p.speed * dir[k];
            assert!(
                (v[k][r] - expected).abs() < 1e-15,
                "block {}: v{k} {} != {expected}",
                id[r],
                v[k][r]
            );
        }
        seen += 1;
    }
    assert_eq!(seen, blocks.len());
    let e =
        talus_io::read_table(&a.join("energies.parquet"), &talus_schema::run::energies_schema())
            .unwrap();
    let (kinetic, balance) = (e.f64s("kinetic").unwrap(), e.f64s("balance_error").unwrap());
    assert!(balance[0].abs() <= 1e-9 * kinetic[0], "balance at the start {}", balance[0]);
    let worst = balance.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(worst <= 1e-6 * kinetic[0], "balance error {worst} J against {} J", kinetic[0]);
    // Deterministic; resumed from the checkpoint of step 180, the same bytes.
    run(&cfg, &input, None, &b, false, &NoProgress).unwrap();
    for f in TABLES {
        std::fs::remove_file(b.join(f)).unwrap();
    }
    std::fs::remove_file(b.join("timings.parquet")).unwrap();
    assert_eq!(run(&cfg, &input, None, &b, true, &NoProgress).unwrap().resumed_from, Some(180));
    for f in TABLES {
        assert!(
            std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
            "{f} differs after resume"
        );
    }
    // Another seed, and no perturbation: other runs.
    let other = Config {
        perturbation: Some(talus_engine::config::Perturbation { seed: 6, ..p }),
        ..cfg.clone()
    };
    run(&other, &input, None, &c, false, &NoProgress).unwrap();
    run(&Config { perturbation: None, ..cfg.clone() }, &input, None, &d, false, &NoProgress)
        .unwrap();
    let fin = |dir: &Path| std::fs::read(dir.join("final.parquet")).unwrap();
    assert!(fin(&a) != fin(&c), "the seed changed nothing");
    assert!(fin(&a) != fin(&d), "the perturbation changed nothing");
}

/// Resume from every checkpoint of a chaotic run (the thesis heap N = 100 landing from
/// step ~400: contacts, warm starts, the position correction, and with friction the
/// tangential warm start) and compare every output byte for byte with the uninterrupted
/// run; then `--resume` of the finished run says it is finished.
fn resume_from_every_checkpoint(config: Config) {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("blocks.parquet");
    let blocks = crate::common::thesis_blocks(&crate::common::thesis_dir(), 100);
    let dens = vec![5000.0; blocks.len()];
    let prov = Provenance::new("seed", "test", &serde_json::json!({}));
    talus_io::blocks::write(&input, &block_rows(&blocks, &dens, &vec![0; blocks.len()]), &prov)
        .unwrap();
    let a = tmp.path().join("a");
    let sa = run(&config, &input, None, &a, false, &NoProgress).unwrap();
    assert!(sa.max_contacts > 50, "{} contacts: the heap must form", sa.max_contacts);
    let every = config.checkpoint_every;
    let n = config.steps.unwrap();
    let files = TABLES.iter().chain(&["timings.parquet"]);
    for k in (every..n).step_by(every as usize) {
        let b = tmp.path().join(format!("b{k}"));
        killed_after(&a, &b, k);
        let sb = run(&config, &input, None, &b, true, &NoProgress).unwrap();
        assert_eq!(sb.resumed_from, Some(k));
        for f in files.clone() {
            assert!(
                std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
                "{f} differs after resuming from the checkpoint of step {k}"
            );
        }
        std::fs::remove_dir_all(&b).unwrap();
    }
    let e = run(&config, &input, None, &a, true, &NoProgress).unwrap_err().to_string();
    assert!(e.contains("finished"), "{e}");
}

#[test]
fn resume_from_every_checkpoint_of_the_thesis_heap_is_exact() {
    let mut config =
        crate::common::heap_config(600, talus_engine::config::Config::default().solver);
    config.checkpoint_every = 75;
    config.output_every = 25;
    config.wall_times = false;
    resume_from_every_checkpoint(config);
}

#[test]
fn resume_from_every_checkpoint_with_friction_is_exact() {
    let mut config =
        crate::common::heap_config(600, talus_engine::config::Config::default().solver);
    config.friction.block_block = Some(talus_engine::solver::friction::FrictionLaw::Coulomb(0.5));
    config.friction.block_terrain = Some(talus_engine::solver::friction::FrictionLaw::Coulomb(0.5));
    config.checkpoint_every = 75;
    config.output_every = 25;
    config.wall_times = false;
    resume_from_every_checkpoint(config);
}

/// A run removes only what runs write: a fresh run keeps the user's files among the
/// checkpoints, and a run refuses to take its own final state or checkpoint as input.
#[test]
fn run_touches_only_its_own_files() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("blocks.parquet");
    write_blocks(&input, &scene());
    let out = tmp.path().join("run");
    let cfg = config();
    run(&cfg, &input, None, &out, false, &NoProgress).unwrap();
    let ck = out.join("checkpoints");
    std::fs::write(ck.join("notes.txt"), "mine").unwrap();
    std::fs::write(ck.join("step_0000000060/notes.txt"), "mine too").unwrap();
    // A stale temporary of a killed run, and its segment in progress.
    std::fs::create_dir_all(ck.join(".segment_0000000180")).unwrap();
    std::fs::write(ck.join(".segment_0000000180/.energies.parquet.1234.tmp"), "").unwrap();
    run(&cfg, &input, None, &out, false, &NoProgress).unwrap();
    assert_eq!(std::fs::read_to_string(ck.join("notes.txt")).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(ck.join("step_0000000060/notes.txt")).unwrap(), "mine too");
    assert!(!ck.join(".segment_0000000180").exists());
    // The fresh run wrote its own checkpoints again (step 60's beside the user's file).
    assert!(ck.join("step_0000000060/state.json").is_file());
    assert!(ck.join("step_0000000120/state.json").is_file());
    // Its own outputs as input: refused, nothing touched.
    for own in ["final.parquet", "checkpoints/step_0000000120/state.parquet"] {
        let path = out.join(own);
        let before = std::fs::read(&path).unwrap();
        let e = run(&cfg, &path, None, &out, false, &NoProgress).unwrap_err();
        assert!(matches!(e, Error::OutputIsInput { .. }), "{e}");
        assert!(e.to_string().contains("overwrite"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "{own} was touched");
    }
    // The same blocks in another directory are fine.
    let copy = tmp.path().join("final-copy.parquet");
    std::fs::copy(out.join("final.parquet"), &copy).unwrap();
    run(&cfg, &copy, None, &out, false, &NoProgress).unwrap();
}

/// `stop_at_rest` ends the run once the blocks are at rest: the four blocks fall on the
/// plane with friction and stop. The run ends before its 1500 steps, its last `hold` of
/// kinetic energy is at or below the share of the largest, the final state is the state of
/// a run of exactly that many steps without the criterion, and resuming from every
/// checkpoint (some in the holding period) gives the same files byte for byte.
#[test]
fn stop_at_rest_ends_the_run_when_the_blocks_are_at_rest() {
    use talus_engine::config::StopAtRest;
    use talus_engine::solver::friction::FrictionLaw;
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("blocks.parquet");
    write_blocks(&input, &scene());
    let mut cfg = config();
    cfg.steps = Some(1500);
    cfg.friction.block_block = Some(FrictionLaw::Coulomb(0.6));
    cfg.friction.block_terrain = Some(FrictionLaw::Coulomb(0.6));
    cfg.wall_times = false;
    cfg.checkpoint_every = 40;
    let stop = StopAtRest { kinetic_fraction: 1e-3, hold: 0.1 };
    cfg.stop_at_rest = Some(stop);
    let a = tmp.path().join("a");
    let sa = run(&cfg, &input, None, &a, false, &NoProgress).unwrap();
    let n = sa.steps;
    assert!(n < 1500, "the run went to the end ({n} steps)");
    assert_eq!(sa.stopped_at_rest, Some(n as f64 * cfg.dt));
    let e =
        talus_io::read_table(&a.join("energies.parquet"), &talus_schema::run::energies_schema())
            .unwrap();
    let (kt, kr) =
        (e.f64s("kinetic_translational").unwrap(), e.f64s("kinetic_rotational").unwrap());
    let k: Vec<f64> = kt.iter().zip(&kr).map(|(a, b)| a + b).collect();
    assert_eq!(k.len() as u64, n + 1, "one energy row per step and the initial one");
    let max = k.iter().cloned().fold(0.0, f64::max);
    let hold = stop.hold_steps(cfg.dt) as usize;
    assert_eq!(hold, 50);
    let tail = &k[k.len() - hold..];
    assert!(tail.iter().all(|&v| v <= stop.kinetic_fraction * max), "not at rest: {tail:?}");
    assert!(
        k[k.len() - hold - 1] > stop.kinetic_fraction * max,
        "the run went on after {hold} steps at rest"
    );
    // The same physics as a run of n steps without the criterion.
    let mut plain = cfg.clone();
    plain.stop_at_rest = None;
    plain.steps = Some(n);
    let p = tmp.path().join("p");
    let sp = run(&plain, &input, None, &p, false, &NoProgress).unwrap();
    assert_eq!(sp.stopped_at_rest, None);
    let state = |d: &Path| talus_engine::driver::read_blocks(&d.join("final.parquet")).unwrap();
    let (fa, fp) = (state(&a), state(&p));
    for (x, y) in fa.blocks.iter().zip(&fp.blocks) {
        assert_eq!((x.pos, x.vel, x.omega), (y.pos, y.vel, y.omega), "block {}", x.id);
    }
    // Resume from every checkpoint.
    for c in (40..n).step_by(40) {
        let b = tmp.path().join(format!("b{c}"));
        killed_after(&a, &b, c);
        let sb = run(&cfg, &input, None, &b, true, &NoProgress).unwrap();
        assert_eq!(
            (sb.resumed_from, sb.steps, sb.stopped_at_rest),
            (Some(c), n, sa.stopped_at_rest)
        );
        for f in TABLES.iter().chain(&["timings.parquet"]) {
            assert!(
                std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
                "{f} differs after resuming from the checkpoint of step {c}"
            );
        }
    }
    // Out of its domain: refused before any work.
    let mut bad = cfg.clone();
    bad.stop_at_rest = Some(StopAtRest { kinetic_fraction: 1.5, hold: 0.1 });
    let err = run(&bad, &input, None, &tmp.path().join("bad"), false, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(err.contains("stop_at_rest"), "{err}");
}
