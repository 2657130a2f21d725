//! The names of the files each stage writes into its output directory, declared once:
//! the stages write them, later stages and the pipeline read and hash them by these names.

use std::path::{Path, PathBuf};

/// `talus synth`: the survey pair and its truth.
pub mod synth {
    /// Pre-event survey (LAZ).
    pub const PRE: &str = "pre.laz";
    /// Post-event survey (LAZ).
    pub const POST: &str = "post.laz";
    /// Truth grid (Parquet).
    pub const TRUTH_PARQUET: &str = "truth.parquet";
    /// Truth volumes and site parameters (JSON).
    pub const TRUTH_JSON: &str = "truth.json";
    /// Every file, in the order the pipeline records them.
    pub const ALL: [&str; 4] = [PRE, POST, TRUTH_PARQUET, TRUTH_JSON];
}

/// `talus ingest` in the pipeline: one points table per epoch.
pub mod points {
    /// Pre-event points.
    pub const PRE: &str = "pre.parquet";
    /// Post-event points.
    pub const POST: &str = "post.parquet";
}

/// `talus diff`.
pub mod diff {
    /// DEM of difference grid.
    pub const DOD: &str = "dod.parquet";
    /// Scar and deposit zones (GeoParquet).
    pub const ZONES: &str = "zones.parquet";
    /// M3C2 distances at core points.
    pub const M3C2: &str = "m3c2.parquet";
    /// Cloud-to-cloud distances.
    pub const C2C: &str = "c2c.parquet";
    /// Volumes and statistics (JSON).
    pub const SUMMARY: &str = "summary.json";
    /// The DoD's dz as a GeoTIFF (m; NaN where either survey has no cell).
    pub const DOD_TIF: &str = "dod.tif";
    /// The level of detection as a GeoTIFF (m).
    pub const LOD_TIF: &str = "lod.tif";
    /// The significance mask as a GeoTIFF (1: |dz| > LoD, 0: not, NaN: no dz).
    pub const SIGNIFICANT_TIF: &str = "significant.tif";
    /// The M3C2 core points as LAZ with `m3c2_distance`, `m3c2_uncertainty`,
    /// `m3c2_significant` (1/0) and `m3c2_flag` as extra-bytes scalar fields (CloudCompare).
    pub const M3C2_LAZ: &str = "m3c2.laz";
    /// The post-event points as LAZ with `c2c_distance`, `c2c_dz` and `c2c_plane_distance`
    /// as extra-bytes scalar fields.
    pub const C2C_LAZ: &str = "c2c.laz";
    /// Every file, in the order the pipeline records them.
    pub const ALL: [&str; 10] =
        [DOD, ZONES, M3C2, C2C, SUMMARY, DOD_TIF, LOD_TIF, SIGNIFICANT_TIF, M3C2_LAZ, C2C_LAZ];
}

/// `talus terrain`.
pub mod terrain {
    /// TIN vertices.
    pub const VERTICES: &str = "vertices.parquet";
    /// TIN triangles.
    pub const TRIANGLES: &str = "triangles.parquet";
    /// The TIN as a PLY mesh (CloudCompare, ParaView).
    pub const PLY: &str = "terrain.ply";
    /// The two tables a TIN is read from.
    pub const TIN: [&str; 2] = [VERTICES, TRIANGLES];
    /// Every file, in the order the pipeline records them.
    pub const ALL: [&str; 3] = [VERTICES, TRIANGLES, PLY];
}

/// `talus seed` in the pipeline.
pub mod seed {
    /// The seeded blocks.
    pub const BLOCKS: &str = "blocks.parquet";
}

/// `talus run`.
pub mod run {
    /// Final state of every block (a blocks table).
    pub const FINAL: &str = "final.parquet";
    /// Block poses every `output_every` steps.
    pub const TRAJECTORIES: &str = "trajectories.parquet";
    /// Energy balance per step.
    pub const ENERGIES: &str = "energies.parquet";
    /// Solver diagnostics per step.
    pub const DIAGNOSTICS: &str = "diagnostics.parquet";
    /// Wall-clock times per step (the one table that differs between two runs).
    pub const TIMINGS: &str = "timings.parquet";
    /// Directory of the checkpoints (one subdirectory per checkpointed step).
    pub const CHECKPOINTS: &str = "checkpoints";
    /// A checkpoint's block states.
    pub const CHECKPOINT_STATE: &str = "state.parquet";
    /// A checkpoint's counters, warm-start data and hashes.
    pub const CHECKPOINT_META: &str = "state.json";
    /// Directory of the ParaView time series (`blocks.pvd`, `blocks_NNNNNNNNNN.vtu`,
    /// `terrain.vtu`).
    pub const PARAVIEW: &str = "paraview";
    /// The ParaView collection of the blocks over time (in [`PARAVIEW`]).
    pub const PARAVIEW_BLOCKS: &str = "blocks.pvd";
    /// The terrain TIN for ParaView (in [`PARAVIEW`]).
    pub const PARAVIEW_TERRAIN: &str = "terrain.vtu";
    /// Every file a finished run leaves, in the order the pipeline records them.
    pub const ALL: [&str; 5] = [FINAL, TRAJECTORIES, ENERGIES, DIAGNOSTICS, TIMINGS];
}

/// `talus compare`.
pub mod compare {
    /// Metrics table.
    pub const METRICS_PARQUET: &str = "metrics.parquet";
    /// Metrics as JSON.
    pub const METRICS_JSON: &str = "metrics.json";
    /// Thickness maps (GeoParquet).
    pub const THICKNESS: &str = "thickness.parquet";
    /// Block trajectories as 3-D lines (GeoParquet).
    pub const TRAJECTORY_LINES: &str = "trajectory_lines.parquet";
    /// Simulated deposit thickness as a GeoTIFF (m; NaN where the survey has no data).
    pub const THICKNESS_SIMULATED_TIF: &str = "thickness_simulated.tif";
    /// Surveyed deposit thickness as a GeoTIFF (m; NaN where the survey has no data).
    pub const THICKNESS_SURVEYED_TIF: &str = "thickness_surveyed.tif";
    /// Rockfall hazard map: maximum translational kinetic energy per cell (GeoTIFF, kJ;
    /// NaN where no block passed).
    pub const HAZARD_MAX_ENERGY_TIF: &str = "hazard_max_energy.tif";
    /// Rockfall hazard map: maximum block speed per cell (GeoTIFF, m/s).
    pub const HAZARD_MAX_VELOCITY_TIF: &str = "hazard_max_velocity.tif";
    /// Rockfall hazard map: maximum height of a block centre above the ground (GeoTIFF, m).
    pub const HAZARD_MAX_HEIGHT_TIF: &str = "hazard_max_height.tif";
    /// Rockfall hazard map: number of blocks that passed over each cell (GeoTIFF).
    pub const HAZARD_PASSES_TIF: &str = "hazard_passes.tif";
    /// The HTML report.
    pub const REPORT: &str = "report.html";
    /// Directory of the figures (PNG).
    pub const FIGURES: &str = "figures";
}

/// `talus calibrate`.
pub mod calibrate {
    /// One row per member.
    pub const RUNS: &str = "runs.parquet";
    /// The best member's `[run]`/`[seed]` tables.
    pub const BEST: &str = "best.toml";
    /// The calibration report.
    pub const REPORT: &str = "report.html";
    /// Directory of the figures.
    pub const FIGURES: &str = "figures";
    /// Directory of the stages every member shares.
    pub const SHARED: &str = "shared";
    /// Directory of the members (`members/NNNN`).
    pub const MEMBERS: &str = "members";
    /// A member's row.
    pub const ROW: &str = "row.parquet";
    /// A member's site file (the site with the member's values).
    pub const MEMBER_SITE: &str = "site.toml";
    /// Fraction of the members whose blocks reached each cell (GeoTIFF, 0-1; from the
    /// members' `compare/hazard_passes.tif`).
    pub const REACH_FRACTION_TIF: &str = "hazard_reach_fraction.tif";
    /// With `replicates` > 1: the fraction of the best point's replicates whose blocks
    /// reached each cell (GeoTIFF, 0-1), the calibrated configuration's reach probability.
    pub const REACH_FRACTION_BEST_TIF: &str = "hazard_reach_fraction_best.tif";
}

/// The pipeline's record of what ran (JSON), in a run directory.
pub const MANIFEST: &str = "manifest.json";

/// `names` joined onto `dir`.
pub fn in_dir<const N: usize>(dir: &Path, names: [&str; N]) -> [PathBuf; N] {
    names.map(|n| dir.join(n))
}
