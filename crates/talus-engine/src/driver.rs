//! The run driver of `talus run`: the step loop over Parquet input and output (blocks and
//! terrain in; trajectories, energies, diagnostics, timings and the final state out,
//! checkpoints to resume from).
//!
//! Outputs are written atomically at the end of the run (talus-io sinks): a run that
//! fails or is interrupted leaves its checkpoints and no half-written table. Each
//! checkpoint `checkpoints/step_NNNNNNNNNN/` holds the full state (`state.parquet`,
//! `state.json` with the cumulative energies and the warm-start multipliers) and the rows
//! of the four per-step tables since the previous checkpoint; `--resume` replays those
//! rows with the same batching and continues, so every table but `timings.parquet` is
//! byte-identical to an uninterrupted run's (timings too with `wall_times = false`).
//! Wall-clock times live only in `timings.parquet`, so two runs of the same inputs give
//! byte-identical trajectories, energies, diagnostics and final state.
use crate::body::Block;
use crate::config::{Config, OnSolverFailure};
use crate::error::Error;
use crate::geometry::colliders::{Plane, Statics, TinCollider};
use crate::sim::{Diagnostics, Energies, SimError, Simulation, Totals};
use crate::solver::clarabel::{QpStatus, clarabel_json};
use crate::solver::warm::{ContactKey, WarmStart};
use arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow::datatypes::SchemaRef;
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use talus_io::atomic::TemporaryDir;
use talus_io::{Crs, ParquetSink, Progress, Provenance};
use talus_schema::file_names as names;

/// What a run did.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub steps: u64,
    pub time: f64,
    pub blocks: usize,
    pub active_blocks: usize,
    pub deactivated: usize,
    pub max_contacts: u32,
    pub max_penetration: f64,
    /// The smallest edge of the run's blocks, m (0 without blocks).
    #[serde(default)]
    pub smallest_edge: f64,
    pub failed_qps: usize,
    pub fallbacks: usize,
    pub kappa_normal: Option<f64>,
    pub initial_energy: f64,
    pub final_kinetic: f64,
    pub dissipated: f64,
    pub max_abs_balance_error: f64,
    pub resumed_from: Option<u64>,
    /// Simulated time at which the run ended because the blocks were at rest
    /// (`stop_at_rest`), s.
    #[serde(default)]
    pub stopped_at_rest: Option<f64>,
    pub wall_seconds: f64,
    /// The ParaView series written (none with `paraview = false`).
    #[serde(default)]
    pub paraview: Option<crate::paraview::Series>,
}

/// Blocks read from a blocks table: the blocks, their densities and size classes, the CRS.
pub struct BlocksInput {
    pub blocks: Vec<Block>,
    pub densities: Vec<f64>,
    pub classes: Vec<u32>,
    pub crs: Option<Crs>,
}

fn input_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Input { path: path.to_path_buf(), message: message.into() }
}

/// Read a blocks table ([`talus_io::blocks::read`]) into bodies, checking what the
/// engine needs besides (at least one block, distinct ids).
pub fn read_blocks(path: &Path) -> Result<BlocksInput, Error> {
    let (rows, prov) = talus_io::blocks::read(path)?;
    if rows.is_empty() {
        return Err(input_err(path, "no blocks"));
    }
    let mut blocks = Vec::with_capacity(rows.len());
    for r in &rows {
        let [w, i, j, k] = r.orientation;
        let q = Quaternion::new(w, i, j, k);
        let mut blk = Block::new(
            r.id,
            r.size[0],
            r.size[1],
            r.size[2],
            r.density,
            Vector3::from(r.centre),
            // A unit quaternion (a state written by a run, a checkpoint) is kept bit for bit,
            // so that a resumed run continues exactly; others are normalised.
            if (q.norm() - 1.0).abs() <= 1e-12 {
                UnitQuaternion::new_unchecked(q)
            } else {
                UnitQuaternion::from_quaternion(q)
            },
        );
        blk.vel = Vector3::from(r.velocity);
        blk.omega = Vector3::from(r.angular_velocity);
        blk.active = r.active;
        blocks.push(blk);
    }
    crate::sim::validate_blocks(&blocks).map_err(|e| input_err(path, e.to_string()))?;
    Ok(BlocksInput {
        blocks,
        densities: rows.iter().map(|r| r.density).collect(),
        classes: rows.iter().map(|r| r.class).collect(),
        crs: prov.crs,
    })
}

/// Read a terrain directory ([`talus_io::tin::read`]) into the TIN collider.
pub fn read_terrain(dir: &Path) -> Result<TinCollider, Error> {
    let t = talus_io::tin::read(dir)?;
    let verts = t.vertices.iter().map(|p| Vector3::from(*p)).collect();
    TinCollider::new(verts, t.triangles)
        .map_err(|e| input_err(&dir.join(names::terrain::TRIANGLES), e.to_string()))
}

/// The statics of a run: the TIN (if any) and the configured planes.
pub fn statics(config: &Config, tin: Option<TinCollider>) -> Statics {
    Statics {
        tin,
        planes: config
            .planes
            .iter()
            .map(|p| Plane::new(Vector3::from(p.point), Vector3::from(p.normal)))
            .collect(),
    }
}

fn f64col(v: Vec<f64>) -> ArrayRef {
    Arc::new(Float64Array::from(v))
}

/// Trajectory rows of the active blocks.
pub fn trajectory_batch(step: u64, time: f64, blocks: &[Block]) -> RecordBatch {
    let act: Vec<&Block> = blocks.iter().filter(|b| b.active).collect();
    let g = |f: &dyn Fn(&Block) -> f64| f64col(act.iter().map(|b| f(b)).collect());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(vec![step; act.len()])),
        f64col(vec![time; act.len()]),
        Arc::new(UInt32Array::from(act.iter().map(|b| b.id).collect::<Vec<_>>())),
        g(&|b| b.pos.x),
        g(&|b| b.pos.y),
        g(&|b| b.pos.z),
        g(&|b| b.rot.w),
        g(&|b| b.rot.i),
        g(&|b| b.rot.j),
        g(&|b| b.rot.k),
        g(&|b| b.vel.x),
        g(&|b| b.vel.y),
        g(&|b| b.vel.z),
        g(&|b| b.omega.x),
        g(&|b| b.omega.y),
        g(&|b| b.omega.z),
    ];
    RecordBatch::try_new(Arc::new(talus_schema::run::trajectories_schema()), cols)
        .expect("trajectories schema")
}

/// Energies rows.
pub fn energies_batch(rows: &[Energies]) -> RecordBatch {
    let g = |f: &dyn Fn(&Energies) -> f64| f64col(rows.iter().map(f).collect());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(rows.iter().map(|e| e.step).collect::<Vec<_>>())),
        g(&|e| e.time),
        g(&|e| e.kinetic_translational),
        g(&|e| e.kinetic_rotational),
        g(&|e| e.kinetic()),
        g(&|e| e.potential),
        g(&|e| e.dissipated),
        g(&|e| e.dissipated_cumulative),
        g(&|e| e.gravity_work),
        g(&|e| e.separation_work),
        g(&|e| e.separation_work_cumulative),
        g(&|e| e.removed_cumulative),
        g(&|e| e.balance_error),
    ];
    RecordBatch::try_new(Arc::new(talus_schema::run::energies_schema()), cols)
        .expect("energies schema")
}

/// One diagnostics row, as stored in memory until its batch is written.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DiagRow {
    pub step: u64,
    pub time: f64,
    pub bb: u32,
    pub bt: u32,
    pub bp: u32,
    pub islands: u32,
    pub vars: u32,
    pub cons: u32,
    pub solver: String,
    pub status: String,
    pub iterations: u32,
    pub r_prim: f64,
    pub r_dual: f64,
    pub accuracy: f64,
    pub fallback: bool,
    pub max_penetration: f64,
    pub deactivated: u32,
    pub failed: u32,
    pub active: u32,
}

/// One row of `timings.parquet`: wall-clock seconds of a step and of its phases.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimingRow {
    pub step: u64,
    pub t_broad: f64,
    pub t_narrow: f64,
    pub t_assembly: f64,
    pub t_solve: f64,
    pub t_step: f64,
}

impl TimingRow {
    /// The times of step `d`; all zero unless `wall_times` (config).
    fn from(d: &Diagnostics, t_step: f64, wall_times: bool) -> Self {
        if !wall_times {
            return TimingRow { step: d.step, ..Default::default() };
        }
        TimingRow {
            step: d.step,
            t_broad: d.t_broad,
            t_narrow: d.t_narrow,
            t_assembly: d.jump.t_assembly,
            t_solve: d.jump.t_solve,
            t_step,
        }
    }
}

/// Timings rows.
pub fn timings_batch(rows: &[TimingRow]) -> RecordBatch {
    let g = |f: &dyn Fn(&TimingRow) -> f64| f64col(rows.iter().map(f).collect());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(rows.iter().map(|d| d.step).collect::<Vec<_>>())),
        g(&|d| d.t_broad),
        g(&|d| d.t_narrow),
        g(&|d| d.t_assembly),
        g(&|d| d.t_solve),
        g(&|d| d.t_step),
    ];
    RecordBatch::try_new(Arc::new(talus_schema::run::timings_schema()), cols)
        .expect("timings schema")
}

impl DiagRow {
    fn from(d: &Diagnostics, active: u32) -> Self {
        let j = &d.jump;
        DiagRow {
            step: d.step,
            time: d.time,
            bb: j.contacts_block_block,
            bt: j.contacts_block_terrain,
            bp: j.contacts_block_plane,
            islands: j.islands,
            vars: j.qp_variables,
            cons: j.qp_constraints,
            solver: j.solver.clone(),
            status: j.status.to_string(),
            iterations: j.iterations,
            r_prim: j.r_prim,
            r_dual: j.r_dual,
            accuracy: j.accuracy,
            fallback: j.fallback,
            max_penetration: j.max_penetration,
            deactivated: d.deactivated.len() as u32,
            failed: j.failed.len() as u32,
            active,
        }
    }
}

/// Diagnostics rows.
pub fn diagnostics_batch(rows: &[DiagRow]) -> RecordBatch {
    let u = |f: &dyn Fn(&DiagRow) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from(rows.iter().map(f).collect::<Vec<_>>()))
    };
    let g = |f: &dyn Fn(&DiagRow) -> f64| f64col(rows.iter().map(f).collect());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(rows.iter().map(|d| d.step).collect::<Vec<_>>())),
        g(&|d| d.time),
        u(&|d| d.bb),
        u(&|d| d.bt),
        u(&|d| d.bp),
        u(&|d| d.islands),
        u(&|d| d.vars),
        u(&|d| d.cons),
        Arc::new(StringArray::from(rows.iter().map(|d| d.solver.clone()).collect::<Vec<_>>())),
        Arc::new(StringArray::from(rows.iter().map(|d| d.status.clone()).collect::<Vec<_>>())),
        u(&|d| d.iterations),
        g(&|d| d.r_prim),
        g(&|d| d.r_dual),
        g(&|d| d.accuracy),
        Arc::new(BooleanArray::from(rows.iter().map(|d| d.fallback).collect::<Vec<_>>())),
        g(&|d| d.max_penetration),
        u(&|d| d.deactivated),
        u(&|d| d.failed),
        u(&|d| d.active),
    ];
    RecordBatch::try_new(Arc::new(talus_schema::run::diagnostics_schema()), cols)
        .expect("diagnostics schema")
}

/// The rows of the blocks table of a state (final state, or a checkpoint).
pub fn block_rows(
    blocks: &[Block],
    densities: &[f64],
    classes: &[u32],
) -> Vec<talus_io::blocks::BlockRow> {
    blocks
        .iter()
        .zip(densities)
        .zip(classes)
        .map(|((b, &density), &class)| talus_io::blocks::BlockRow {
            id: b.id,
            size: (2.0 * b.half).into(),
            density,
            mass: b.mass,
            class,
            centre: b.pos.into(),
            orientation: [b.rot.w, b.rot.i, b.rot.j, b.rot.k],
            velocity: b.vel.into(),
            angular_velocity: b.omega.into(),
            active: b.active,
        })
        .collect()
}

/// Checkpoint state (JSON).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct CheckpointState {
    step: u64,
    /// Fingerprint of config + inputs: a checkpoint resumes only the same run.
    fingerprint: String,
    totals: Totals,
    /// f64 values as their bit patterns, so the state is restored exactly.
    totals_bits: [u64; 5],
    warm: Vec<(ContactKey, u64)>,
    /// Friction percussions of the warm start (world λ_T as bit patterns).
    #[serde(default)]
    warm_tangential: Vec<(ContactKey, [u64; 3])>,
    /// The contacts' changes of slip speed in the last jump (bits of f64), for the slip
    /// credit.
    #[serde(default)]
    warm_slip_change: Vec<(ContactKey, u64)>,
    /// `stop_at_rest`'s state: the largest kinetic energy so far (bit pattern) and the
    /// steps since it last exceeded the threshold.
    #[serde(default)]
    at_rest: (u64, u64),
    summary: Summary,
}

/// Energies/diagnostics batches end at multiples of this step count, at checkpoints and at
/// the end (the same batching in a resumed run, for byte-identical files).
const FLUSH_STEPS: u64 = 4096;

struct Sinks {
    traj: ParquetSink,
    energy: ParquetSink,
    diag: ParquetSink,
    timing: ParquetSink,
}

impl Sinks {
    fn finish(self) -> Result<(), Error> {
        self.traj.finish()?;
        self.energy.finish()?;
        self.diag.finish()?;
        self.timing.finish()?;
        Ok(())
    }
}

struct Pending {
    energies: Vec<Energies>,
    diags: Vec<DiagRow>,
    timings: Vec<TimingRow>,
}

/// The per-step tables of a run, in the run directory and in each checkpoint segment.
const SEGMENT_FILES: [&str; 4] =
    [names::run::TRAJECTORIES, names::run::ENERGIES, names::run::DIAGNOSTICS, names::run::TIMINGS];

/// The files a run writes into a checkpoint directory, `state.json` (which publishes it)
/// last.
const CHECKPOINT_FILES: [&str; 6] = [
    SEGMENT_FILES[0],
    SEGMENT_FILES[1],
    SEGMENT_FILES[2],
    SEGMENT_FILES[3],
    names::run::CHECKPOINT_STATE,
    names::run::CHECKPOINT_META,
];

fn segment_paths(dir: &Path) -> [PathBuf; 4] {
    SEGMENT_FILES.map(|n| dir.join(n))
}

fn open_sinks(paths: &[PathBuf; 4], prov: &Provenance) -> Result<Sinks, Error> {
    use talus_schema::run as s;
    let schema = |f: fn() -> arrow::datatypes::Schema| -> SchemaRef { Arc::new(f()) };
    Ok(Sinks {
        traj: ParquetSink::create(&paths[0], schema(s::trajectories_schema), prov)?,
        energy: ParquetSink::create(&paths[1], schema(s::energies_schema), prov)?,
        diag: ParquetSink::create(&paths[2], schema(s::diagnostics_schema), prov)?,
        timing: ParquetSink::create(&paths[3], schema(s::timings_schema), prov)?,
    })
}

fn flush(main: &mut Sinks, seg: &mut Sinks, pending: &mut Pending) -> Result<(), Error> {
    if !pending.energies.is_empty() {
        let b = energies_batch(&pending.energies);
        main.energy.write(&b)?;
        seg.energy.write(&b)?;
        pending.energies.clear();
    }
    if !pending.diags.is_empty() {
        let b = diagnostics_batch(&pending.diags);
        main.diag.write(&b)?;
        seg.diag.write(&b)?;
        pending.diags.clear();
    }
    if !pending.timings.is_empty() {
        let b = timings_batch(&pending.timings);
        main.timing.write(&b)?;
        seg.timing.write(&b)?;
        pending.timings.clear();
    }
    Ok(())
}

fn read_energies(path: &Path) -> Result<Vec<Energies>, Error> {
    let t = talus_io::read_table(path, &talus_schema::run::energies_schema())?;
    let step = t.u64s("step")?;
    let c = |n: &str| t.f64s(n);
    let (time, kt, kr, pe, d, dc, gw, sw, swc, rm, be) = (
        c("time")?,
        c("kinetic_translational")?,
        c("kinetic_rotational")?,
        c("potential")?,
        c("dissipated")?,
        c("dissipated_cumulative")?,
        c("gravity_work")?,
        c("separation_work")?,
        c("separation_work_cumulative")?,
        c("removed_cumulative")?,
        c("balance_error")?,
    );
    Ok((0..step.len())
        .map(|k| Energies {
            step: step[k],
            time: time[k],
            kinetic_translational: kt[k],
            kinetic_rotational: kr[k],
            potential: pe[k],
            dissipated: d[k],
            dissipated_cumulative: dc[k],
            gravity_work: gw[k],
            separation_work: sw[k],
            separation_work_cumulative: swc[k],
            removed_cumulative: rm[k],
            balance_error: be[k],
        })
        .collect())
}

fn read_diags(path: &Path) -> Result<Vec<DiagRow>, Error> {
    let t = talus_io::read_table(path, &talus_schema::run::diagnostics_schema())?;
    let step = t.u64s("step")?;
    let f = |n: &str| t.f64s(n);
    let u = |n: &str| t.u32s(n);
    let (time, bb, bt, bp, isl, vars, cons) = (
        f("time")?,
        u("contacts_block_block")?,
        u("contacts_block_terrain")?,
        u("contacts_block_plane")?,
        u("islands")?,
        u("qp_variables")?,
        u("qp_constraints")?,
    );
    let (solver, status, it, rp, rd, acc, fb, mp) = (
        t.strings("solver")?,
        t.strings("status")?,
        u("iterations")?,
        f("primal_residual")?,
        f("dual_residual")?,
        f("accuracy")?,
        t.bools("fallback")?,
        f("max_penetration")?,
    );
    let (de, fq, ac) = (u("deactivated")?, u("failed_qps")?, u("active_blocks")?);
    Ok((0..step.len())
        .map(|k| DiagRow {
            step: step[k],
            time: time[k],
            bb: bb[k],
            bt: bt[k],
            bp: bp[k],
            islands: isl[k],
            vars: vars[k],
            cons: cons[k],
            solver: solver[k].clone(),
            status: status[k].clone(),
            iterations: it[k],
            r_prim: rp[k],
            r_dual: rd[k],
            accuracy: acc[k],
            fallback: fb[k],
            max_penetration: mp[k],
            deactivated: de[k],
            failed: fq[k],
            active: ac[k],
        })
        .collect())
}

fn read_timings(path: &Path) -> Result<Vec<TimingRow>, Error> {
    let t = talus_io::read_table(path, &talus_schema::run::timings_schema())?;
    let step = t.u64s("step")?;
    let f = |n: &str| t.f64s(n);
    let (tb, tn, ta, ts, tst) =
        (f("t_broad")?, f("t_narrow")?, f("t_assembly")?, f("t_solve")?, f("t_step")?);
    Ok((0..step.len())
        .map(|k| TimingRow {
            step: step[k],
            t_broad: tb[k],
            t_narrow: tn[k],
            t_assembly: ta[k],
            t_solve: ts[k],
            t_step: tst[k],
        })
        .collect())
}

/// Replay a checkpoint segment's rows of one per-step table into `sink` with the batching
/// of an uninterrupted run (a batch ends at every flush step); the rows after the last
/// flush step stay in `pending`.
fn replay<R>(
    rows: Vec<R>,
    step: impl Fn(&R) -> u64,
    batch: fn(&[R]) -> RecordBatch,
    pending: &mut Vec<R>,
    sink: &mut ParquetSink,
    config: &Config,
) -> Result<(), Error> {
    for r in rows {
        let s = step(&r);
        pending.push(r);
        if s > 0 && is_flush_step(s, config) {
            sink.write(&batch(pending))?;
            pending.clear();
        }
    }
    Ok(())
}

fn is_flush_step(step: u64, config: &Config) -> bool {
    step.is_multiple_of(FLUSH_STEPS)
        || (config.checkpoint_every > 0 && step.is_multiple_of(config.checkpoint_every))
}

fn checkpoint_dirs(root: &Path) -> Vec<(u64, PathBuf)> {
    let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix("step_")?.parse::<u64>().ok()?;
            e.path().join(names::run::CHECKPOINT_META).exists().then_some((n, e.path()))
        })
        .collect();
    v.sort();
    v
}

/// Remove a checkpoint or segment directory: the files a run writes there, then the
/// directory if nothing else is left in it.
fn remove_checkpoint(dir: &Path) {
    for name in CHECKPOINT_FILES {
        let _ = std::fs::remove_file(dir.join(name));
    }
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if talus_io::lock::is_temporary(&e.file_name().to_string_lossy()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Publish the finished segment directory `seg` as the checkpoint `target`: a rename, or,
/// when the user keeps files of their own in `target`, a move of each file with
/// `state.json` last (a checkpoint counts only once its `state.json` is there).
fn publish_checkpoint(seg: &Path, target: &Path) -> Result<(), Error> {
    remove_checkpoint(target);
    if std::fs::rename(seg, target).is_ok() {
        return Ok(());
    }
    let err = |e: std::io::Error| input_err(target, e.to_string());
    for name in CHECKPOINT_FILES {
        std::fs::rename(seg.join(name), target.join(name)).map_err(err)?;
    }
    std::fs::remove_dir(seg).map_err(err)
}

/// A warning when the blocks have nothing to land on (no terrain and no plane): they
/// fall freely for the whole run, which is rarely what was meant.
pub fn no_ground_warning(config: &Config, terrain_dir: Option<&Path>) -> Option<String> {
    (terrain_dir.is_none() && config.planes.is_empty()).then(|| {
        "no --terrain and no [run] planes: nothing for the blocks to land on, they fall freely for the whole run".to_string()
    })
}

/// Refuse a blocks input that the run in `out_dir` would overwrite or remove: its final
/// state, or a checkpoint's state.
fn refuse_own_output(blocks_path: &Path, out_dir: &Path) -> Result<(), Error> {
    let (Ok(input), Ok(dir)) = (blocks_path.canonicalize(), out_dir.canonicalize()) else {
        return Ok(()); // a missing input is reported by the reader; a new directory is empty
    };
    let own = names::run::ALL.iter().any(|n| input == dir.join(n))
        || input.starts_with(dir.join(names::run::CHECKPOINTS));
    if own {
        return Err(Error::OutputIsInput {
            path: blocks_path.to_path_buf(),
            out_dir: out_dir.to_path_buf(),
        });
    }
    Ok(())
}

/// The provenance of a run's outputs (without the CRS): configuration and input hashes.
fn provenance(
    config: &Config,
    blocks_path: &Path,
    terrain_dir: Option<&Path>,
) -> Result<Provenance, Error> {
    let mut inputs: Vec<PathBuf> = vec![blocks_path.to_path_buf()];
    if let Some(d) = terrain_dir {
        inputs.push(d.join(names::terrain::VERTICES));
        inputs.push(d.join(names::terrain::TRIANGLES));
    }
    Ok(Provenance::new("run", env!("CARGO_PKG_VERSION"), config).with_inputs(&inputs)?)
}

/// What a checkpoint must match to be resumed: the configuration and the inputs' hashes.
fn fingerprint(prov: &Provenance) -> String {
    format!("{}|{}", prov.config, serde_json::to_string(&prov.inputs).unwrap_or_default())
}

/// Whether `out_dir` holds the final state of this very run (same configuration, inputs).
fn finished(prov: &Provenance, out_dir: &Path) -> bool {
    talus_io::blocks::read(&out_dir.join(names::run::FINAL))
        .is_ok_and(|(_, done)| done.config == prov.config && done.inputs == prov.inputs)
}

/// The step of the checkpoint in `out_dir` that [`run`] with `resume` would continue
/// from: the last one, if it belongs to this configuration and these inputs and the run
/// has not finished. The pipeline uses it to continue an interrupted run.
pub fn resumable(
    config: &Config,
    blocks_path: &Path,
    terrain_dir: Option<&Path>,
    out_dir: &Path,
) -> Result<Option<u64>, Error> {
    let prov = provenance(config, blocks_path, terrain_dir)?;
    if finished(&prov, out_dir) {
        return Ok(None);
    }
    let Some((step, dir)) = checkpoint_dirs(&out_dir.join(names::run::CHECKPOINTS)).pop() else {
        return Ok(None);
    };
    let meta = std::fs::read_to_string(dir.join(names::run::CHECKPOINT_META)).ok();
    let state = meta.and_then(|t| serde_json::from_str::<CheckpointState>(&t).ok());
    Ok(state.filter(|st| st.fingerprint == fingerprint(&prov)).map(|_| step))
}

/// Run a simulation from files. `terrain_dir` holds `vertices.parquet` and
/// `triangles.parquet`; outputs go to `out_dir`. With `resume`, continue from the last
/// checkpoint in `out_dir/checkpoints`.
pub fn run(
    config: &Config,
    blocks_path: &Path,
    terrain_dir: Option<&Path>,
    out_dir: &Path,
    resume: bool,
    progress: &dyn Progress,
) -> Result<Summary, Error> {
    let wall = Instant::now();
    config.validate().map_err(SimError::from)?;
    refuse_own_output(blocks_path, out_dir)?;
    let input = read_blocks(blocks_path)?;
    // One writer per output directory (held until the run returns).
    let _lock = talus_io::OutputLock::directory(out_dir)?;
    let tin = terrain_dir.map(read_terrain).transpose()?;
    let prov = provenance(config, blocks_path, terrain_dir)?.with_crs(input.crs.clone());
    if resume && finished(&prov, out_dir) {
        return Err(Error::Finished { path: out_dir.join(names::run::FINAL) });
    }
    let fingerprint = fingerprint(&prov);
    let densities = input.densities.clone();
    let classes = input.classes.clone();
    let n_steps = config.n_steps();
    let mut sim = Simulation::new(config.clone(), input.blocks, statics(config, tin))?;
    let smallest_edge = sim.blocks.iter().map(|b| 2.0 * b.half.min()).fold(f64::INFINITY, f64::min);
    let mut summary = Summary {
        blocks: sim.blocks.len(),
        smallest_edge: if smallest_edge.is_finite() { smallest_edge } else { 0.0 },
        ..Default::default()
    };
    if let crate::step::KappaLaw::Global { normal, .. } = sim.params.kappa {
        summary.kappa_normal = Some(normal);
    }
    summary.initial_energy = sim.totals.initial_energy;

    let ckpt_root = out_dir.join(names::run::CHECKPOINTS);
    // A fresh run: the checkpoints of an earlier run in this directory are not ours.
    // Segment directories in progress (rows since the last checkpoint) of an interrupted
    // run are stale either way. Only what a run writes is removed: files the user put
    // there stay (and so does their directory).
    for e in std::fs::read_dir(&ckpt_root).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(".segment_") || (!resume && name.starts_with("step_")) {
            remove_checkpoint(&e.path());
        }
    }
    if !resume {
        let _ = std::fs::remove_dir(&ckpt_root);
    }
    let seg_dir = |start: u64| ckpt_root.join(format!(".segment_{start:010}"));
    let main_paths = segment_paths(out_dir);
    let mut main = open_sinks(&main_paths, &prov)?;
    let mut pending = Pending { energies: Vec::new(), diags: Vec::new(), timings: Vec::new() };

    // Resume: restore the state and replay the rows of every checkpoint segment.
    let mut resumed = false;
    // `stop_at_rest`: the largest kinetic energy so far and the steps spent below its share.
    let (mut max_kinetic, mut rest_steps) = (0.0f64, 0u64);
    if resume {
        let dirs = checkpoint_dirs(&ckpt_root);
        let Some((last, last_dir)) = dirs.last().cloned() else {
            return Err(Error::Resume { path: ckpt_root, message: "no checkpoint found".into() });
        };
        let text = std::fs::read_to_string(last_dir.join(names::run::CHECKPOINT_META))
            .map_err(|e| Error::Resume { path: last_dir.clone(), message: e.to_string() })?;
        let st: CheckpointState = serde_json::from_str(&text)
            .map_err(|e| Error::Resume { path: last_dir.clone(), message: e.to_string() })?;
        if st.fingerprint != fingerprint {
            return Err(Error::Resume {
                path: last_dir,
                message: "the configuration or the input files differ from the checkpointed run"
                    .into(),
            });
        }
        let state = read_blocks(&last_dir.join(names::run::CHECKPOINT_STATE))?;
        sim.blocks = state.blocks;
        sim.step = st.step;
        let b = st.totals_bits.map(f64::from_bits);
        sim.totals = Totals {
            dissipated: b[0],
            gravity_work: b[1],
            separation_work: b[2],
            removed: b[3],
            initial_energy: b[4],
        };
        sim.warm = WarmStart::from_entries(
            &st.warm.iter().map(|(k, v)| (*k, f64::from_bits(*v))).collect::<Vec<_>>(),
        )
        .with_tangential(
            &st.warm_tangential
                .iter()
                .map(|(k, v)| (*k, v.map(f64::from_bits)))
                .collect::<Vec<_>>(),
        )
        .with_slip_changes(
            &st.warm_slip_change.iter().map(|(k, v)| (*k, f64::from_bits(*v))).collect::<Vec<_>>(),
        );
        (max_kinetic, rest_steps) = (f64::from_bits(st.at_rest.0), st.at_rest.1);
        summary = st.summary;
        summary.resumed_from = Some(last);
        for (_, dir) in dirs.iter().filter(|(n, _)| *n <= last) {
            let [tp, ep, dp, tip] = segment_paths(dir);
            let table = talus_io::read_table(&tp, &talus_schema::run::trajectories_schema())?;
            // Trajectory batches: one per output step, as written.
            let rows = table.batches;
            if !rows.is_empty() {
                let all = arrow::compute::concat_batches(&rows[0].schema(), &rows)
                    .map_err(|e| Error::Resume { path: tp.clone(), message: e.to_string() })?;
                let all = RecordBatch::try_new(
                    Arc::new(talus_schema::run::trajectories_schema()),
                    all.columns().to_vec(),
                )
                .map_err(|e| Error::Resume { path: tp.clone(), message: e.to_string() })?;
                let steps = all
                    .column(0)
                    .as_any()
                    .downcast_ref::<UInt64Array>()
                    .expect("step column")
                    .values()
                    .to_vec();
                let mut start = 0;
                while start < steps.len() {
                    let mut end = start;
                    while end < steps.len() && steps[end] == steps[start] {
                        end += 1;
                    }
                    main.traj.write(&all.slice(start, end - start))?;
                    start = end;
                }
            }
            replay(
                read_energies(&ep)?,
                |e| e.step,
                energies_batch,
                &mut pending.energies,
                &mut main.energy,
                config,
            )?;
            replay(
                read_diags(&dp)?,
                |d| d.step,
                diagnostics_batch,
                &mut pending.diags,
                &mut main.diag,
                config,
            )?;
            replay(
                read_timings(&tip)?,
                |t| t.step,
                timings_batch,
                &mut pending.timings,
                &mut main.timing,
                config,
            )?;
        }
        resumed = true;
    }

    // The segment in progress: registered with its files, so that a run stopped by a
    // signal removes it, finished files and all, unless it was published
    // (talus_io::atomic::remove_in_flight).
    let mut cur = TemporaryDir::create(&seg_dir(sim.step), &CHECKPOINT_FILES)?;
    let mut seg = open_sinks(&segment_paths(cur.path()), &prov)?;
    if !resumed {
        let b = trajectory_batch(0, 0.0, &sim.blocks);
        main.traj.write(&b)?;
        seg.traj.write(&b)?;
        pending.energies.push(sim.energies(0.0, 0.0));
        pending.diags.push(DiagRow::from(
            &Diagnostics {
                jump: crate::step::JumpReport {
                    solver: "none".into(),
                    status: QpStatus::Solved,
                    ..Default::default()
                },
                ..Default::default()
            },
            sim.blocks.iter().filter(|b| b.active).count() as u32,
        ));
        pending.timings.push(TimingRow::default());
    }

    progress.start("run", n_steps.saturating_sub(sim.step));
    while sim.step < n_steps {
        let t0 = Instant::now();
        let (e, d) = sim.advance();
        let step = sim.step;
        let active = sim.blocks.iter().filter(|b| b.active).count() as u32;
        summary.max_contacts = summary.max_contacts.max(
            d.jump.contacts_block_block
                + d.jump.contacts_block_plane
                + d.jump.contacts_block_terrain,
        );
        summary.max_penetration = summary.max_penetration.max(d.jump.max_penetration);
        summary.fallbacks += d.jump.fallback as usize;
        summary.deactivated += d.deactivated.len();
        summary.max_abs_balance_error = summary.max_abs_balance_error.max(e.balance_error.abs());
        if !d.jump.failed.is_empty() {
            summary.failed_qps += d.jump.failed.len();
            let dump_dir = out_dir.join("failed_qps");
            for f in &d.jump.failed {
                let (tol, it) = config.solver.clarabel_settings();
                let path = dump_dir.join(format!("step_{step:010}_island_{:05}.json", f.island));
                let json = match &f.conic {
                    Some(cq) => crate::solver::friction::clarabel_json(cq, tol, it),
                    None => clarabel_json(&f.qp, tol, it),
                }
                .map_err(|m| input_err(&path, m))?;
                talus_io::AtomicFile::write_all(&path, &json)?;
            }
            if config.on_solver_failure == OnSolverFailure::Stop {
                return Err(Error::SolverFailure {
                    step,
                    count: d.jump.failed.len(),
                    status: d.jump.status.clone(),
                    dump: dump_dir,
                });
            }
        }
        let kinetic = e.kinetic();
        max_kinetic = max_kinetic.max(kinetic);
        let at_rest = config.stop_at_rest.is_some_and(|r| {
            if max_kinetic > 0.0 && kinetic <= r.kinetic_fraction * max_kinetic {
                rest_steps += 1;
            } else {
                rest_steps = 0;
            }
            rest_steps >= r.hold_steps(config.dt)
        });
        let last = step == n_steps || at_rest;
        if at_rest {
            summary.stopped_at_rest = Some(sim.time());
        }
        if step % config.output_every == 0 || last {
            let b = trajectory_batch(step, sim.time(), &sim.blocks);
            main.traj.write(&b)?;
            seg.traj.write(&b)?;
        }
        pending.energies.push(e);
        pending.diags.push(DiagRow::from(&d, active));
        pending.timings.push(TimingRow::from(&d, t0.elapsed().as_secs_f64(), config.wall_times));
        let ckpt = config.checkpoint_every > 0 && step % config.checkpoint_every == 0 && !last;
        if is_flush_step(step, config) || last {
            flush(&mut main, &mut seg, &mut pending)?;
        }
        if ckpt {
            // Close this segment, write the state, and publish the checkpoint.
            let next = TemporaryDir::create(&seg_dir(step), &CHECKPOINT_FILES)?;
            let done = std::mem::replace(&mut seg, open_sinks(&segment_paths(next.path()), &prov)?);
            done.finish()?;
            talus_io::blocks::write(
                &cur.path().join(names::run::CHECKPOINT_STATE),
                &block_rows(&sim.blocks, &densities, &classes),
                &prov,
            )?;
            let t = sim.totals;
            let mut sum = summary.clone();
            sum.steps = step;
            let st = CheckpointState {
                step,
                fingerprint: fingerprint.clone(),
                totals: t,
                totals_bits: [
                    t.dissipated,
                    t.gravity_work,
                    t.separation_work,
                    t.removed,
                    t.initial_energy,
                ]
                .map(f64::to_bits),
                warm: sim.warm.entries().into_iter().map(|(k, v)| (k, v.to_bits())).collect(),
                warm_tangential: sim
                    .warm
                    .tangential_entries()
                    .into_iter()
                    .map(|(k, v)| (k, v.map(f64::to_bits)))
                    .collect(),
                warm_slip_change: sim
                    .warm
                    .slip_change_entries()
                    .into_iter()
                    .map(|(k, v)| (k, v.to_bits()))
                    .collect(),
                at_rest: (max_kinetic.to_bits(), rest_steps),
                summary: sum,
            };
            let json = serde_json::to_vec(&st).map_err(|e| input_err(cur.path(), e.to_string()))?;
            talus_io::AtomicFile::write_all(&cur.path().join(names::run::CHECKPOINT_META), &json)?;
            let target = ckpt_root.join(format!("step_{step:010}"));
            publish_checkpoint(cur.path(), &target)?;
            cur = next;
        }
        progress.inc(1);
        if last {
            break;
        }
    }
    progress.finish();
    flush(&mut main, &mut seg, &mut pending)?;
    drop(seg);
    let _ = std::fs::remove_dir_all(cur.path());
    drop(cur);
    main.finish()?;
    talus_io::blocks::write(
        &out_dir.join(names::run::FINAL),
        &block_rows(&sim.blocks, &densities, &classes),
        &prov,
    )?;

    if config.paraview {
        let shapes =
            sim.blocks.iter().map(|b| (b.id, ([b.half.x, b.half.y, b.half.z], b.mass))).collect();
        summary.paraview = Some(crate::paraview::write_series(out_dir, &shapes, terrain_dir)?);
    }
    summary.steps = sim.step;
    summary.time = sim.time();
    summary.active_blocks = sim.blocks.iter().filter(|b| b.active).count();
    let e = sim.energies(0.0, 0.0);
    summary.final_kinetic = e.kinetic();
    summary.dissipated = sim.totals.dissipated;
    summary.wall_seconds = wall.elapsed().as_secs_f64();
    Ok(summary)
}

/// A largest penetration above this share of the smallest block edge is reported as a
/// warning (1 %; the default site keeps 0.2 %).
pub const PENETRATION_WARNING_SHARE: f64 = 0.01;

/// The penetration, as a share of the smallest block edge, the warning's suggested
/// `more_passes` leaves at most (the default site's 1 cm on 4.8 m edges).
pub const MORE_PASSES_SHARE: f64 = 0.002;

impl Summary {
    /// The largest penetration as a share of the smallest block edge (`None` without blocks).
    pub fn penetration_share(&self) -> Option<f64> {
        (self.smallest_edge > 0.0).then(|| self.max_penetration / self.smallest_edge)
    }
}

/// The run's outcome, as `talus run` reports it.
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        if let Some(step) = s.resumed_from {
            writeln!(f, "  resumed from the checkpoint of step {step}")?;
        }
        write!(
            f,
            "run: {} blocks, {} steps ({:.3} s simulated) in {:.1} s; {} active at the end, {} left the terrain; \
             at most {} contacts, max penetration {:.4} m{}; {} QP failures, {} fallbacks; energy: initial {:.4e} J, \
             final kinetic {:.4e} J, dissipated {:.4e} J",
            s.blocks,
            s.steps,
            s.time,
            s.wall_seconds,
            s.active_blocks,
            s.deactivated,
            s.max_contacts,
            s.max_penetration,
            match s.penetration_share() {
                Some(share) => format!(" ({:.1} % of the smallest block edge)", 100.0 * share),
                None => String::new(),
            },
            s.failed_qps,
            s.fallbacks,
            s.initial_energy,
            s.final_kinetic,
            s.dissipated
        )?;
        if let Some(t) = s.stopped_at_rest {
            write!(f, "\n  ended at t = {t:.3} s: the blocks were at rest (stop_at_rest)")?;
        }
        if let Some(share) = s.penetration_share().filter(|&x| x > PENETRATION_WARNING_SHARE) {
            write!(
                f,
                "\n  warning: the largest penetration is {:.1} % of the smallest block edge (over {} %); \
                 more correction reduces it, e.g. `separation = {{ method = \"position_after_motion\", \
                 passes = 4, iterations = 200, more_passes = {{ deeper_than = {:.2e}, max_passes = 8 }} }}` \
                 in [run] (docs/solver.md, \"Choosing the correction\")",
                100.0 * share,
                100.0 * PENETRATION_WARNING_SHARE,
                MORE_PASSES_SHARE * s.smallest_edge
            )?;
        }
        if let Some(p) = &s.paraview {
            write!(
                f,
                "\n  ParaView series: {}/{} ({} steps){}",
                names::run::PARAVIEW,
                names::run::PARAVIEW_BLOCKS,
                p.frames,
                if p.terrain {
                    format!(" and {}", names::run::PARAVIEW_TERRAIN)
                } else {
                    String::new()
                }
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary gives the penetration as a share of the smallest block edge, and warns
    /// above 1 % with the correction to use.
    #[test]
    fn the_summary_warns_of_a_penetration_over_one_percent_of_the_smallest_edge() {
        let mut s =
            Summary { blocks: 2, max_penetration: 0.05, smallest_edge: 10.0, ..Default::default() };
        let text = s.to_string();
        assert!(
            text.contains("max penetration 0.0500 m (0.5 % of the smallest block edge)"),
            "{text}"
        );
        assert!(!text.contains("warning"), "{text}");
        s.max_penetration = 0.3;
        let text = s.to_string();
        assert!(text.contains("(3.0 % of the smallest block edge)"), "{text}");
        assert!(
            text.contains(
                "warning: the largest penetration is 3.0 % of the smallest block edge (over 1 %)"
            ),
            "{text}"
        );
        assert!(
            text.contains("method = \"position_after_motion\", passes = 4, iterations = 200"),
            "{text}"
        );
        assert!(text.contains("more_passes = { deeper_than = 2.00e-2, max_passes = 8 }"), "{text}");
        let none = Summary::default();
        assert_eq!(none.penetration_share(), None);
        assert!(!none.to_string().contains("smallest block edge"));
    }
}
