//! Scores of a member and the runs table.
//!
//! Score (lower is better, 0 = perfect), from the member's `compare/metrics.parquet`:
//! `S = (w_iou (1 − IoU) + w_L |L_sim − L_obs| / L_obs + w_h RMSE / h̄_obs) / (w_iou + w_L + w_h)`
//! with IoU the deposit area IoU, `L` the runouts, RMSE the thickness RMSE over the union
//! of the deposits and `h̄_obs = V_obs / A_obs` the mean surveyed deposit thickness.
//!
//! Each member writes its row as a one-row Parquet file with the schema of the whole
//! table ([`schema`]); `collect` concatenates them in member order. A full run and the
//! same members run one per process and collected give the same bytes.
//!
//! With replicates, [`points`] gathers each point's rows (mean and sample standard
//! deviation of the score and the deposit metrics) and [`best_point`] ranks the points by
//! their mean score.

use crate::Error;
use crate::config::Weights;
use crate::sample::{Member, Parameter};
use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Schema};
use std::path::Path;
use std::sync::Arc;
use talus_schema::field;

/// Outcome of a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Every stage ran and the score is defined.
    Ok,
    /// A stage failed, or a metric the score needs is not applicable (see `error`).
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
        }
    }
}

/// The metrics the score uses, from `compare/metrics.parquet` (NaN when not applicable).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    pub deposit_iou: f64,
    pub volume_overlap: f64,
    pub runout_simulated: f64,
    pub runout_surveyed: f64,
    pub thickness_rmse: f64,
    pub deposit_volume_surveyed: f64,
    pub deposit_area_surveyed: f64,
    pub centroid_offset: f64,
    /// Fahrböschung atan(H/L) of the simulated and the surveyed runout, degrees.
    pub travel_angle_simulated: f64,
    pub travel_angle_surveyed: f64,
    /// H/L of Scheidegger's (1973) volume relation for the scar's volume, 1.
    pub h_over_l_scheidegger: f64,
}

/// A term of the score: its name, weight, loss, and the metrics it is computed from.
type ScoreTerm<'a> = (&'a str, f64, f64, &'a [(&'a str, f64)]);

impl Metrics {
    /// All NaN (a member whose run failed).
    pub fn missing() -> Self {
        Metrics {
            deposit_iou: f64::NAN,
            volume_overlap: f64::NAN,
            runout_simulated: f64::NAN,
            runout_surveyed: f64::NAN,
            thickness_rmse: f64::NAN,
            deposit_volume_surveyed: f64::NAN,
            deposit_area_surveyed: f64::NAN,
            centroid_offset: f64::NAN,
            travel_angle_simulated: f64::NAN,
            travel_angle_surveyed: f64::NAN,
            h_over_l_scheidegger: f64::NAN,
        }
    }

    /// Read them from a `metrics.parquet` written by `talus compare`.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let t = talus_io::read_table(path, &talus_schema::compare::metrics_schema())?;
        let names = t.strings("metric")?;
        let values = t.f64s("value")?;
        let get =
            |n: &str| names.iter().position(|m| m == n).map(|k| values[k]).unwrap_or(f64::NAN);
        Ok(Metrics {
            deposit_iou: get("deposit_iou"),
            volume_overlap: get("volume_overlap"),
            runout_simulated: get("runout_simulated"),
            runout_surveyed: get("runout_surveyed"),
            thickness_rmse: get("thickness_rmse"),
            deposit_volume_surveyed: get("deposit_volume_surveyed"),
            deposit_area_surveyed: get("deposit_area_surveyed"),
            centroid_offset: get("centroid_offset"),
            travel_angle_simulated: get("travel_angle_simulated"),
            travel_angle_surveyed: get("travel_angle_surveyed"),
            h_over_l_scheidegger: get("h_over_l_scheidegger"),
        })
    }

    /// Relative runout error |L_sim − L_obs| / L_obs.
    pub fn runout_error(&self) -> f64 {
        (self.runout_simulated - self.runout_surveyed).abs() / self.runout_surveyed
    }

    /// Scheidegger's travel angle atan(H/L) for the scar's volume, degrees.
    pub fn travel_angle_scheidegger(&self) -> f64 {
        self.h_over_l_scheidegger.atan().to_degrees()
    }

    /// Mean surveyed deposit thickness V_obs / A_obs, m.
    pub fn mean_thickness_surveyed(&self) -> f64 {
        self.deposit_volume_surveyed / self.deposit_area_surveyed
    }

    /// The weighted score, or the first term it needs that is not finite.
    pub fn score(&self, w: &Weights) -> Result<f64, String> {
        let terms: [ScoreTerm; 3] = [
            ("deposit_iou", w.iou, 1.0 - self.deposit_iou, &[("deposit_iou", self.deposit_iou)]),
            (
                "runout",
                w.runout,
                self.runout_error(),
                &[
                    ("runout_simulated", self.runout_simulated),
                    ("runout_surveyed", self.runout_surveyed),
                ],
            ),
            (
                "thickness",
                w.thickness,
                self.thickness_rmse / self.mean_thickness_surveyed(),
                &[
                    ("thickness_rmse", self.thickness_rmse),
                    ("deposit_volume_surveyed", self.deposit_volume_surveyed),
                    ("deposit_area_surveyed", self.deposit_area_surveyed),
                ],
            ),
        ];
        let mut s = 0.0;
        for (term, weight, loss, needs) in terms {
            if weight > 0.0 {
                if !loss.is_finite() {
                    // Name the metric that is missing (its reason is in the member's
                    // compare/metrics.parquet and report).
                    let missing: Vec<String> = needs
                        .iter()
                        .filter(|(_, v)| !v.is_finite())
                        .map(|(n, _)| format!("`{n}`"))
                        .collect();
                    let what = if missing.is_empty() {
                        "is not finite".to_string()
                    } else {
                        format!(
                            "needs {}, not applicable in this member's comparison (see its compare/metrics.json for why)",
                            missing.join(" and ")
                        )
                    };
                    return Err(format!("the score's {term} term (weight {weight}) {what}"));
                }
                s += weight * loss;
            }
        }
        Ok(s / (w.iou + w.runout + w.thickness))
    }
}

/// One row of the runs table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub member: u32,
    /// The point of the search (or the reference) the member runs.
    pub point: u32,
    /// Which run of its point (0: unperturbed; see `[calibrate] replicates`).
    pub replicate: u32,
    pub member_seed: u64,
    /// One value per parameter.
    pub values: Vec<f64>,
    /// The uncalibrated reference member (`[calibrate] reference`), never the best.
    pub reference: bool,
    pub status: Status,
    pub metrics: Metrics,
    /// NaN when failed.
    pub score: f64,
    /// s (0 when wall times are not recorded).
    pub wall_time_s: f64,
    /// Why the member failed (empty when ok).
    pub error: String,
}

impl Row {
    /// The row of a member from its metrics (`Err`: the stage that failed and why).
    pub fn new(
        member: &Member,
        outcome: Result<Metrics, String>,
        weights: &Weights,
        wall_time_s: f64,
    ) -> Self {
        let (metrics, score) = match outcome {
            Ok(m) => (m, m.score(weights)),
            Err(e) => (Metrics::missing(), Err(e)),
        };
        let (status, score, error) = match score {
            Ok(s) => (Status::Ok, s, String::new()),
            Err(e) => (Status::Failed, f64::NAN, e),
        };
        Row {
            member: member.index as u32,
            point: member.point as u32,
            replicate: member.replicate as u32,
            member_seed: member.seed,
            values: member.values.clone(),
            reference: member.reference,
            status,
            metrics,
            score,
            wall_time_s,
            error,
        }
    }
}

/// Metric columns after the parameters: (name, unit, description, getter).
type Getter = fn(&Row) -> f64;
const METRIC_COLUMNS: &[(&str, &str, &str, Getter)] = &[
    ("deposit_iou", "1", "deposit area IoU against the survey", |r| r.metrics.deposit_iou),
    ("volume_overlap", "1", "volume-weighted deposit overlap", |r| r.metrics.volume_overlap),
    ("runout_simulated", "m", "runout of the simulated deposit", |r| r.metrics.runout_simulated),
    ("runout_surveyed", "m", "runout of the surveyed deposit", |r| r.metrics.runout_surveyed),
    ("runout_error", "1", "|runout_simulated - runout_surveyed| / runout_surveyed", |r| {
        r.metrics.runout_error()
    }),
    ("thickness_rmse", "m", "deposit thickness RMSE over the union of the deposits", |r| {
        r.metrics.thickness_rmse
    }),
    ("mean_thickness_surveyed", "m", "surveyed deposit volume / area", |r| {
        r.metrics.mean_thickness_surveyed()
    }),
    ("centroid_offset", "m", "distance between the deposit centroids", |r| {
        r.metrics.centroid_offset
    }),
    ("travel_angle_simulated", "deg", "Fahrboschung atan(H/L) of the simulated runout", |r| {
        r.metrics.travel_angle_simulated
    }),
    ("travel_angle_surveyed", "deg", "Fahrboschung atan(H/L) of the surveyed runout", |r| {
        r.metrics.travel_angle_surveyed
    }),
    (
        "h_over_l_scheidegger",
        "1",
        "H/L of Scheidegger's (1973) relation for the scar's volume (its travel angle is atan of it)",
        |r| r.metrics.h_over_l_scheidegger,
    ),
    ("score", "1", "weighted score, lower is better (NaN when failed)", |r| r.score),
    ("wall_time_s", "s", "wall time of the member's stages (0 when not recorded)", |r| {
        r.wall_time_s
    }),
];

/// The runs table's schema for these parameters.
pub fn schema(params: &[Parameter]) -> Schema {
    let mut fields = vec![
        field("member", DataType::UInt32, false, "1", "member index"),
        field(
            "point",
            DataType::UInt32,
            false,
            "1",
            "the point of the search (or the reference) the member runs",
        ),
        field(
            "replicate",
            DataType::UInt32,
            false,
            "1",
            "which run of its point: 0 as given, r > 0 with the initial velocities perturbed (seed r)",
        ),
        field("member_seed", DataType::UInt64, false, "1", "the point's seed"),
    ];
    for p in params {
        fields.push(field(
            &p.name,
            DataType::Float64,
            false,
            if p.unit.is_empty() { "see the option" } else { p.unit },
            &format!("varied parameter, site key `{}`", p.key),
        ));
    }
    fields.push(field(
        "reference",
        DataType::Boolean,
        false,
        "1",
        "the uncalibrated reference member ([calibrate] reference), not part of the search",
    ));
    fields.push(field("status", DataType::Utf8, false, "1", "ok | failed"));
    for (n, u, d, _) in METRIC_COLUMNS {
        fields.push(field(n, DataType::Float64, false, u, d));
    }
    fields.push(field("error", DataType::Utf8, false, "1", "why the member failed (empty: ok)"));
    Schema::new(fields)
}

fn batch(params: &[Parameter], rows: &[Row]) -> Result<(Arc<Schema>, RecordBatch), Error> {
    let schema = Arc::new(schema(params));
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.member))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.point))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.replicate))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.member_seed))),
    ];
    for d in 0..params.len() {
        cols.push(Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.values[d]))));
    }
    cols.push(Arc::new(BooleanArray::from(rows.iter().map(|r| r.reference).collect::<Vec<_>>())));
    cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.status.as_str()))));
    for (_, _, _, g) in METRIC_COLUMNS {
        cols.push(Arc::new(Float64Array::from_iter_values(rows.iter().map(g))));
    }
    cols.push(Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.error.as_str()))));
    let b = RecordBatch::try_new(schema.clone(), cols)
        .map_err(|e| Error::Table(format!("building the runs table: {e}")))?;
    Ok((schema, b))
}

/// Write rows (one member's, or the whole table) as Parquet.
pub fn write(
    path: &Path,
    params: &[Parameter],
    rows: &[Row],
    prov: &talus_io::Provenance,
) -> Result<(), Error> {
    let (schema, b) = batch(params, rows)?;
    talus_io::write_parquet(path, schema, &[b], prov)?;
    Ok(())
}

/// Read the rows of a file written by [`write`].
pub fn read(path: &Path, params: &[Parameter]) -> Result<Vec<Row>, Error> {
    let t = talus_io::read_table(path, &schema(params))?;
    let member = t.u32s("member")?;
    let point = t.u32s("point")?;
    let replicate = t.u32s("replicate")?;
    let seed = t.u64s("member_seed")?;
    let values: Vec<Vec<f64>> = params.iter().map(|p| t.f64s(&p.name)).collect::<Result<_, _>>()?;
    let status = t.strings("status")?;
    let reference = t.bools("reference")?;
    let col = |n: &str| t.f64s(n);
    let (iou, vo, rs, ro) = (
        col("deposit_iou")?,
        col("volume_overlap")?,
        col("runout_simulated")?,
        col("runout_surveyed")?,
    );
    let (rmse, hbar, off, score, wall) = (
        col("thickness_rmse")?,
        col("mean_thickness_surveyed")?,
        col("centroid_offset")?,
        col("score")?,
        col("wall_time_s")?,
    );
    let (ta_sim, ta_obs, hl_sch) = (
        col("travel_angle_simulated")?,
        col("travel_angle_surveyed")?,
        col("h_over_l_scheidegger")?,
    );
    let error = t.strings("error")?;
    Ok((0..t.num_rows())
        .map(|i| Row {
            member: member[i],
            point: point[i],
            replicate: replicate[i],
            member_seed: seed[i],
            values: values.iter().map(|v| v[i]).collect(),
            reference: reference[i],
            status: if status[i] == "ok" { Status::Ok } else { Status::Failed },
            metrics: Metrics {
                deposit_iou: iou[i],
                volume_overlap: vo[i],
                runout_simulated: rs[i],
                runout_surveyed: ro[i],
                thickness_rmse: rmse[i],
                // Area 1 keeps V/A = the stored mean thickness.
                deposit_volume_surveyed: hbar[i],
                deposit_area_surveyed: 1.0,
                centroid_offset: off[i],
                travel_angle_simulated: ta_sim[i],
                travel_angle_surveyed: ta_obs[i],
                h_over_l_scheidegger: hl_sch[i],
            },
            score: score[i],
            wall_time_s: wall[i],
            error: error[i].clone(),
        })
        .collect())
}

/// Mean and sample standard deviation of a point's replicates (NaN where undefined).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub mean: f64,
    /// Sample standard deviation (n − 1); NaN with one value.
    pub sd: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Spread {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() > 1 {
            (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            f64::NAN
        };
        Spread { mean, sd }
    }
}

/// One point of the search (or the reference) over its replicates' rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub point: u32,
    pub reference: bool,
    /// Indices into the rows, in replicate order.
    pub rows: Vec<usize>,
    /// Replicates that succeeded.
    pub ok: usize,
    /// Over the replicates when every one succeeded (NaN otherwise).
    pub score: Spread,
    pub deposit_iou: Spread,
    pub runout_simulated: Spread,
    pub runout_error: Spread,
    pub thickness_rmse: Spread,
    pub volume_overlap: Spread,
}

/// The points of `rows`, in the order of their first row.
pub fn points(rows: &[Row]) -> Vec<Point> {
    let mut order: Vec<u32> = Vec::new();
    let mut by_point: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, r) in rows.iter().enumerate() {
        let e = by_point.entry(r.point).or_default();
        if e.is_empty() {
            order.push(r.point);
        }
        e.push(i);
    }
    order
        .into_iter()
        .map(|p| {
            let mut idx = by_point.remove(&p).unwrap_or_default();
            idx.sort_by_key(|&i| rows[i].replicate);
            let ok = idx.iter().filter(|&&i| rows[i].status == Status::Ok).count();
            let all_ok = ok == idx.len();
            let spread = |f: fn(&Row) -> f64| {
                if all_ok {
                    Spread::of(&idx.iter().map(|&i| f(&rows[i])).collect::<Vec<_>>())
                } else {
                    Spread { mean: f64::NAN, sd: f64::NAN }
                }
            };
            Point {
                point: p,
                reference: rows[idx[0]].reference,
                ok,
                score: spread(|r| r.score),
                deposit_iou: spread(|r| r.metrics.deposit_iou),
                runout_simulated: spread(|r| r.metrics.runout_simulated),
                runout_error: spread(|r| r.metrics.runout_error()),
                thickness_rmse: spread(|r| r.metrics.thickness_rmse),
                volume_overlap: spread(|r| r.metrics.volume_overlap),
                rows: idx,
            }
        })
        .collect()
}

/// The best point: the lowest mean score among the points of the search whose every
/// replicate succeeded (ties: the lowest point); the reference is not a candidate.
pub fn best_point(points: &[Point]) -> Option<&Point> {
    points
        .iter()
        .filter(|p| !p.reference && p.score.mean.is_finite())
        .min_by(|a, b| a.score.mean.total_cmp(&b.score.mean).then(a.point.cmp(&b.point)))
}

/// Index of the best row: the first replicate (the unperturbed run, when present) of the
/// [`best_point`]. With one replicate a point, the lowest score among the `ok` rows of the
/// search (ties: the lowest member).
pub fn best(rows: &[Row]) -> Option<usize> {
    best_point(&points(rows)).map(|p| p.rows[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Parameters, Spec};

    fn metrics(iou: f64, runout: f64, rmse: f64) -> Metrics {
        Metrics {
            deposit_iou: iou,
            volume_overlap: 0.5,
            runout_simulated: runout,
            runout_surveyed: 200.0,
            thickness_rmse: rmse,
            deposit_volume_surveyed: 1000.0,
            deposit_area_surveyed: 100.0,
            centroid_offset: 3.0,
            travel_angle_simulated: 30.0,
            travel_angle_surveyed: 28.0,
            h_over_l_scheidegger: 0.5,
        }
    }

    fn member(i: usize, v: f64) -> Member {
        Member {
            index: i,
            point: i,
            replicate: 0,
            seed: i as u64 * 7,
            values: vec![v],
            reference: false,
        }
    }

    #[test]
    fn score_is_the_weighted_mean_of_the_losses() {
        let w = Weights { iou: 1.0, runout: 0.5, thickness: 0.25 };
        let m = metrics(0.6, 250.0, 5.0);
        // (1 × 0.4 + 0.5 × 50/200 + 0.25 × 5/10) / 1.75
        let expected = (0.4 + 0.125 + 0.125) / 1.75;
        assert!((m.score(&w).unwrap() - expected).abs() < 1e-15);
        assert_eq!(metrics(1.0, 200.0, 0.0).score(&w).unwrap(), 0.0);
        // A metric with zero weight may be missing; one with weight may not.
        let only_iou = Weights { iou: 1.0, runout: 0.0, thickness: 0.0 };
        assert!((metrics(0.7, f64::NAN, f64::NAN).score(&only_iou).unwrap() - 0.3).abs() < 1e-15);
        let e = metrics(0.7, f64::NAN, 1.0).score(&w).unwrap_err();
        assert!(e.contains("runout term") && e.contains("`runout_simulated`"), "{e}");
        assert!(!e.contains("`runout_surveyed`"), "{e}");
    }

    #[test]
    fn best_is_the_lowest_score_among_ok_rows() {
        let w = Weights::default();
        let rows = vec![
            Row::new(&member(0, 0.1), Ok(metrics(0.3, 260.0, 6.0)), &w, 1.0),
            Row::new(&member(1, 0.2), Ok(metrics(0.7, 210.0, 4.0)), &w, 1.0),
            Row::new(&member(2, 0.3), Err("stage `run` failed: x".into()), &w, 1.0),
            Row::new(&member(3, 0.4), Ok(metrics(0.65, 205.0, 4.0)), &w, 1.0),
        ];
        assert_eq!(rows[2].status, Status::Failed);
        assert!(rows[2].score.is_nan());
        let b = best(&rows).unwrap();
        let min = rows
            .iter()
            .filter(|r| r.status == Status::Ok)
            .map(|r| r.score)
            .fold(f64::INFINITY, f64::min);
        assert_eq!(rows[b].score, min);
        assert_eq!(b, 1);
        assert_eq!(best(&rows[2..3]), None);
        // The reference member never wins, even with the lowest score.
        let reference = Member { reference: true, ..member(4, 0.5) };
        let mut with_ref = rows.clone();
        with_ref.push(Row::new(&reference, Ok(metrics(1.0, 200.0, 0.0)), &w, 1.0));
        assert_eq!(with_ref[4].score, 0.0);
        assert_eq!(best(&with_ref), Some(1));
    }

    /// With replicates, the best point is the one with the lowest mean score over its
    /// runs, not the one holding the luckiest run; a point with a failed replicate is not a
    /// candidate; the spreads are the replicates' mean and sample standard deviation.
    #[test]
    fn the_best_point_has_the_lowest_mean_score_over_its_replicates() {
        let w = Weights { iou: 1.0, runout: 0.0, thickness: 0.0 };
        let run = |i: usize, point: usize, iou: f64| {
            let m = Member { point, replicate: i % 3, ..member(i, point as f64) };
            Row::new(&m, Ok(metrics(iou, 200.0, 1.0)), &w, 1.0)
        };
        let mut rows = vec![
            // Point 0 holds the single best run (score 0.1) but a mean of 0.3.
            run(0, 0, 0.9),
            run(1, 0, 0.6),
            run(2, 0, 0.6),
            // Point 1: mean 0.2.
            run(3, 1, 0.8),
            run(4, 1, 0.8),
            run(5, 1, 0.8),
            // Point 2 would have the best mean (0.05) but one replicate failed.
            run(6, 2, 0.95),
            run(7, 2, 0.95),
        ];
        let failed = Member { point: 2, replicate: 2, ..member(8, 2.0) };
        rows.push(Row::new(&failed, Err("stage `run` failed".into()), &w, 1.0));
        let pts = points(&rows);
        assert_eq!(pts.len(), 3);
        let p0 = &pts[0];
        assert_eq!((p0.point, p0.ok, p0.rows.clone()), (0, 3, vec![0, 1, 2]));
        assert!((p0.deposit_iou.mean - 0.7).abs() < 1e-15);
        // Sample sd of (0.9, 0.6, 0.6): sqrt((0.04 + 0.01 + 0.01) / 2).
        assert!((p0.deposit_iou.sd - 0.03f64.sqrt()).abs() < 1e-15);
        assert!((p0.score.mean - 0.3).abs() < 1e-15);
        assert!(pts[1].deposit_iou.sd < 1e-15);
        assert_eq!(pts[2].ok, 2);
        assert!(pts[2].score.mean.is_nan());
        let b = best_point(&pts).unwrap();
        assert_eq!(b.point, 1);
        // The best row is the best point's first replicate.
        assert_eq!(best(&rows), Some(3));
        // With one run a point, the mean is the run's score and the sd undefined.
        let single = points(&rows[..1]);
        assert_eq!(single[0].score.mean, rows[0].score);
        assert!(single[0].score.sd.is_nan());
    }

    #[test]
    fn rows_round_trip_through_parquet() {
        let c = crate::Config {
            parameters: Parameters {
                restitution: Some(Spec { values: vec![0.1, 0.2], ..Spec::default() }),
                ..Parameters::default()
            },
            ..crate::Config::default()
        };
        let params = crate::sample::parameters(&c);
        let w = Weights::default();
        let rows = vec![
            Row::new(&member(0, 0.1), Ok(metrics(0.3, 260.0, 6.0)), &w, 1.5),
            Row::new(&member(1, 0.2), Err("stage `run` failed".into()), &w, 2.0),
            Row::new(
                &Member { reference: true, point: 1, replicate: 3, ..member(2, 0.3) },
                Ok(metrics(0.5, 220.0, 5.0)),
                &w,
                1.0,
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.parquet");
        let prov = talus_io::Provenance::new("calibrate", "test", &c);
        write(&path, &params, &rows, &prov).unwrap();
        let back = read(&path, &params).unwrap();
        assert_eq!(back.len(), 3);
        for (a, b) in rows.iter().zip(&back) {
            assert_eq!(
                (a.member, a.point, a.replicate, a.member_seed, &a.values, a.reference, a.status),
                (b.member, b.point, b.replicate, b.member_seed, &b.values, b.reference, b.status)
            );
            assert_eq!(
                a.metrics.travel_angle_simulated.to_bits(),
                b.metrics.travel_angle_simulated.to_bits()
            );
            assert_eq!(
                a.metrics.travel_angle_scheidegger().to_bits(),
                b.metrics.travel_angle_scheidegger().to_bits()
            );
            assert_eq!(a.score.to_bits(), b.score.to_bits());
            assert_eq!(a.metrics.deposit_iou.to_bits(), b.metrics.deposit_iou.to_bits());
            assert_eq!(a.metrics.runout_error().to_bits(), b.metrics.runout_error().to_bits());
            assert_eq!(a.error, b.error);
        }
    }
}
