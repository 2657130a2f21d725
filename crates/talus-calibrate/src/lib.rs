//! Calibration of a site's simulation against its surveyed deposit: an ensemble of runs
//! over chosen options of `[run]` and `[seed]`, each scored by `talus compare`.
//!
//! 1. **Members** ([`sample`]): the `[calibrate]` table ([`Config`]) names the varied
//!    parameters (restitution e, κ_T/κ_N, raw κ_N and κ_T, a block-size factor, or any
//!    numeric `run.`/`seed.` option by its dotted key) and a search: a grid (Cartesian
//!    product of levels), a seeded uniform random search, or a seeded Latin hypercube.
//!    Member i's values depend only on (seed, i) (and `samples` for the hypercube), so
//!    any member can be run alone (`talus calibrate SITE --member i`, one process per
//!    member, e.g. a Slurm array) and the rows collected afterwards. With `replicates =
//!    R`, member i runs point ⌊i / R⌋ of the search as its replicate i mod R (replicate
//!    r > 0 with the blocks' initial velocities perturbed, seed r: the deposit is
//!    chaotic, and the replicates sample its spread).
//! 2. **Score** ([`table`]): from the member's `compare/metrics.parquet`,
//!    `S = (w_iou (1 − IoU) + w_L |L_sim − L_obs|/L_obs + w_h RMSE/h̄_obs) / Σw`, lower
//!    is better (IoU the deposit area IoU, L the runouts, RMSE the thickness RMSE over the
//!    union of the deposits, h̄_obs the mean surveyed deposit thickness).
//! 3. **Outputs** ([`report`]): `runs.parquet` (one row per member: point, replicate,
//!    parameters, scores, status, wall time), `best.toml` (the best member's
//!    `[run]`/`[seed]` tables, ready to paste into the site file; with replicates, the
//!    unperturbed run of the point with the lowest mean score), `figures/sensitivity.png`
//!    (score and IoU against each parameter) and `report.html` (with replicates, each
//!    point's mean ± standard deviation).
//!
//! 4. **Ensemble** ([`ensemble`], on `talus-pipeline`): the stages that no varied
//!    parameter touches (ingest, diff, terrain, and seed unless a `seed.` option varies)
//!    once, into `OUT/shared/`; then per member `seed` (if varied), `run` and `compare`
//!    into `OUT/members/NNNN/`, which writes `row.parquet`; then the collection.

pub mod config;
pub mod ensemble;
pub mod error;
pub mod report;
pub mod sample;
pub mod sensitivity;
pub mod table;

pub use config::{Config, Parameters, Scale, Search, Spec, Weights};
pub use ensemble::{Collected, Ensemble, describe};
pub use error::Error;
pub use sample::{BaseBlocks, Member, Parameter, member, member_count, members, parameters};
pub use table::{Metrics, Row, Status};
