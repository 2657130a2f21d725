//! Metrics of the simulated deposit against the surveyed one, and of the run itself.
//!
//! Notation: `h` simulated thickness, `d` surveyed thickness (`max(dz, 0)` in deposit
//! zones), `S = {h > h_min}`, `O` = cells of the deposit zones, `A` the cell area.
//! Flow direction `f`: unit horizontal vector from the scar's area centroid to the
//! surveyed deposit's thickness-weighted centroid; `n` is `f` turned 90° left. Crown `C`:
//! the scar cell with the highest pre-event elevation. Runout `L = max (p − C)·f` over
//! the deposited blocks' centres (simulated) or the deposit cells' centres (surveyed);
//! drop `H = z_C − z_toe` with `z_toe` the base of the distal block or the post-event
//! surface of the distal cell; travel angle (Fahrböschung) `atan(H / L)`.

use crate::deposit::{ThicknessMap, half_height};
use crate::inputs::{CELL_SCAR, Data};
use crate::{Config, Error};
use arrow::array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray};
use polars::prelude::*;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use talus_io::Provenance;

/// One metric (a row of `metrics.parquet`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    pub metric: String,
    /// NaN (`null` in JSON) when not applicable.
    pub value: f64,
    pub unit: String,
    pub applicable: bool,
    pub description: String,
}

/// Reason given for the deposit metrics of a run without survey.
pub const NO_SURVEY: &str = "not applicable: no survey (run without --diff)";

struct List(Vec<Metric>);

impl List {
    fn push(
        &mut self,
        metric: &str,
        value: Option<f64>,
        unit: &str,
        description: &str,
        why_not: &str,
    ) {
        let applicable = value.is_some_and(f64::is_finite);
        self.0.push(Metric {
            metric: metric.to_string(),
            // `+ 0.0` turns −0 (an empty `sum`, which starts at −0) into 0 in the tables.
            value: if applicable { value.unwrap_or(f64::NAN) + 0.0 } else { f64::NAN },
            unit: unit.to_string(),
            applicable,
            description: if applicable {
                description.to_string()
            } else {
                format!("{description} ({why_not})")
            },
        });
    }
}

/// The deposit metrics that need a survey, with their units and descriptions, in the
/// order they are listed.
pub const DEPOSIT_METRICS: &[(&str, &str, &str)] = &[
    (
        "deposit_area_simulated",
        "m^2",
        "area of the cells with simulated thickness above min_thickness",
    ),
    ("deposit_area_surveyed", "m^2", "area of the cells of the surveyed deposit zones"),
    ("deposit_iou", "1", "intersection over union of the simulated and surveyed deposit areas"),
    ("deposit_volume_simulated", "m^3", "bulked volume of the deposited blocks on the grid"),
    ("deposit_volume_surveyed", "m^3", "volume of the positive dz in the surveyed deposit zones"),
    (
        "volume_overlap",
        "1",
        "volume-weighted overlap sum(min(h, d)) / sum(max(h, d)) over the grid",
    ),
    (
        "thickness_rmse",
        "m",
        "root mean square of simulated minus surveyed thickness over the union of both deposits",
    ),
    (
        "thickness_bias",
        "m",
        "mean of simulated minus surveyed thickness over the union of both deposits",
    ),
    (
        "thickness_rmse_volume_matched",
        "m",
        "thickness_rmse with the simulated thickness scaled by deposit_volume_surveyed / deposit_volume_simulated (same cells): the error left by where the volume lies once its amount is right",
    ),
    (
        "centroid_offset",
        "m",
        "horizontal distance from the surveyed to the simulated deposit centroid (thickness-weighted)",
    ),
    (
        "centroid_azimuth",
        "deg",
        "azimuth (clockwise from north) of the offset from the surveyed to the simulated centroid",
    ),
    (
        "runout_simulated",
        "m",
        "distance along the flow from the crown of the scar to the farthest deposited block",
    ),
    (
        "runout_surveyed",
        "m",
        "distance along the flow from the crown of the scar to the farthest surveyed deposit cell",
    ),
    (
        "travel_angle_simulated",
        "deg",
        "Fahrboschung atan(H/L): drop H from the crown to the base of the farthest block over its runout L",
    ),
    (
        "travel_angle_surveyed",
        "deg",
        "Fahrboschung atan(H/L): drop H from the crown to the farthest deposit cell's surface over its runout L",
    ),
    ("h_over_l_simulated", "1", "H/L ratio of the simulated runout"),
    ("h_over_l_surveyed", "1", "H/L ratio of the surveyed runout"),
    (
        "h_over_l_scheidegger",
        "1",
        "H/L that Scheidegger's (1973) relation for rock avalanches gives the surveyed scar volume V: log10(H/L) = 0.62419 - 0.15666 log10(V / m^3)",
    ),
    ("lateral_spread_simulated", "m", "width of the simulated deposit across the flow direction"),
    ("lateral_spread_surveyed", "m", "width of the surveyed deposit across the flow direction"),
    (
        "volume_median_along_flow_simulated",
        "m",
        "distance along the flow from the crown of the scar within which half the simulated deposit's volume lies (the cells' volume-weighted median)",
    ),
    (
        "volume_median_along_flow_surveyed",
        "m",
        "distance along the flow from the crown of the scar within which half the surveyed deposit's volume lies (the cells' volume-weighted median)",
    ),
    (
        "volume_fraction_in_scar",
        "1",
        "fraction of the seeded volume whose blocks ended with their centre in the scar",
    ),
    (
        "volume_off_grid",
        "m^3",
        "bulked volume of deposited blocks whose footprint fell outside the DoD grid",
    ),
];

/// Scalar aggregates of the thickness map, computed with polars.
struct Aggregates {
    n_sim: f64,
    n_obs: f64,
    n_inter: f64,
    n_union: f64,
    v_sim: f64,
    v_obs: f64,
    v_min: f64,
    v_max: f64,
    centroid_sim: Option<[f64; 2]>,
    centroid_obs: Option<[f64; 2]>,
    rmse: f64,
    bias: f64,
    /// RMSE with h scaled by v_obs / v_sim (None without simulated volume).
    rmse_matched: Option<f64>,
}

fn scalar(df: &DataFrame, name: &str) -> Result<f64, Error> {
    Ok(df.column(name)?.cast(&DataType::Float64)?.f64()?.get(0).unwrap_or(f64::NAN))
}

fn aggregates(map: &ThicknessMap) -> Result<Aggregates, Error> {
    let (h, d) = (col("thickness_simulated"), col("thickness_surveyed"));
    let count = |e: Expr| e.cast(DataType::Float64).sum();
    let df = map
        .frame
        .clone()
        .lazy()
        .select([
            count(col("in_simulated")).alias("n_sim"),
            count(col("in_surveyed")).alias("n_obs"),
            count(col("in_simulated").and(col("in_surveyed"))).alias("n_inter"),
            count(col("in_simulated").or(col("in_surveyed"))).alias("n_union"),
            h.clone().sum().alias("v_sim"),
            d.clone().sum().alias("v_obs"),
            when(h.clone().lt(d.clone())).then(h.clone()).otherwise(d.clone()).sum().alias("v_min"),
            when(h.clone().gt(d.clone())).then(h.clone()).otherwise(d.clone()).sum().alias("v_max"),
            (h.clone() * col("x")).sum().alias("hx"),
            (h.clone() * col("y")).sum().alias("hy"),
            (d.clone() * col("x")).sum().alias("dx"),
            (d.clone() * col("y")).sum().alias("dy"),
        ])
        .collect()?;
    let g = |n: &str| scalar(&df, n);
    let (v_sim, v_obs) = (g("v_sim")?, g("v_obs")?);
    // The simulated thickness scaled to the surveyed volume (NaN without simulated volume).
    let k = if v_sim > 0.0 { v_obs / v_sim } else { f64::NAN };
    let square = |e: Expr| e.clone() * e;
    let errs = map
        .frame
        .clone()
        .lazy()
        .filter(col("in_simulated").or(col("in_surveyed")))
        .select([
            square(h.clone() - d.clone()).mean().alias("mse"),
            (h.clone() - d.clone()).mean().alias("bias"),
            square(h * lit(k) - d).mean().alias("mse_matched"),
        ])
        .collect()?;
    let rmse_matched =
        (v_sim > 0.0).then(|| scalar(&errs, "mse_matched")).transpose()?.map(f64::sqrt);
    let centroid = |sx: f64, sy: f64, v: f64| (v > 0.0).then(|| [sx / v, sy / v]);
    Ok(Aggregates {
        n_sim: g("n_sim")?,
        n_obs: g("n_obs")?,
        n_inter: g("n_inter")?,
        n_union: g("n_union")?,
        v_sim,
        v_obs,
        v_min: g("v_min")?,
        v_max: g("v_max")?,
        centroid_sim: centroid(g("hx")?, g("hy")?, v_sim),
        centroid_obs: centroid(g("dx")?, g("dy")?, v_obs),
        rmse: scalar(&errs, "mse")?.sqrt(),
        bias: scalar(&errs, "bias")?,
        rmse_matched,
    })
}

/// Scheidegger's (1973) relation between the volume of a rock avalanche and its
/// Fahrböschung: log10(H/L) = 0.62419 − 0.15666 log10(V), V in m³ (H/L ≈ 0.50 for
/// 8 × 10⁵ m³).
pub fn scheidegger_h_over_l(volume: f64) -> f64 {
    10f64.powf(0.62419 - 0.15666 * volume.log10())
}

/// Geometry of the flow: crown and direction.
#[derive(Debug, Clone, Copy)]
pub struct Flow {
    /// Crown: highest pre-event scar cell (x, y, z).
    pub crown: [f64; 3],
    /// Unit horizontal flow direction.
    pub dir: [f64; 2],
    /// Scar area centroid.
    pub scar_centroid: [f64; 2],
}

fn flow(data: &Data, agg: &Aggregates) -> Option<Flow> {
    let s = data.survey.as_ref()?;
    let g = s.grid;
    let (mut sx, mut sy, mut n) = (0.0, 0.0, 0.0);
    let mut crown: Option<[f64; 3]> = None;
    for r in 0..g.ny {
        for c in 0..g.nx {
            let k = g.index(r, c);
            if s.class[k] != CELL_SCAR {
                continue;
            }
            let (x, y) = g.centre(r, c);
            sx += x;
            sy += y;
            n += 1.0;
            let z = s.z_pre[k];
            if z.is_finite() && crown.is_none_or(|cr| z > cr[2]) {
                crown = Some([x, y, z]);
            }
        }
    }
    if n == 0.0 {
        return None;
    }
    let sc = [sx / n, sy / n];
    let dep = agg.centroid_obs?;
    let (fx, fy) = (dep[0] - sc[0], dep[1] - sc[1]);
    let len = fx.hypot(fy);
    (len > 0.0).then(|| Flow {
        crown: crown.unwrap_or([sc[0], sc[1], f64::NAN]),
        dir: [fx / len, fy / len],
        scar_centroid: sc,
    })
}

/// The volume-weighted median of (value, weight) pairs: the smallest value at which the
/// cumulative weight, in increasing value, reaches half the total (`None` without weight).
fn weighted_median(v: &mut [(f64, f64)]) -> Option<f64> {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|p| p.1).sum();
    if total.is_nan() || total <= 0.0 {
        return None;
    }
    let mut cum = 0.0;
    for &(x, w) in v.iter() {
        cum += w;
        if cum >= 0.5 * total {
            return Some(x);
        }
    }
    v.last().map(|p| p.0)
}

/// Flow geometry of a run with survey (for the figures).
pub fn flow_of(data: &Data, map: &ThicknessMap) -> Option<Flow> {
    aggregates(map).ok().and_then(|a| flow(data, &a))
}

/// Compute every metric. Without a survey (`map` is `None`) the deposit metrics are
/// listed as not applicable.
pub fn compute(
    config: &Config,
    data: &Data,
    map: Option<&ThicknessMap>,
) -> Result<Vec<Metric>, Error> {
    let mut out = List(Vec::new());
    let fb = &data.final_blocks;
    let seeded: f64 = (0..data.initial_blocks.len()).map(|i| data.initial_blocks.volume(i)).sum();
    let left: f64 = (0..fb.len()).filter(|&i| !fb.active[i]).map(|i| fb.volume(i)).sum();

    match map {
        None => {
            for (name, unit, desc) in DEPOSIT_METRICS {
                out.push(name, None, unit, desc, NO_SURVEY);
            }
        }
        Some(map) => {
            let a = aggregates(map)?;
            let area = map.grid.cell_area();
            let fl = flow(data, &a);
            let no_flow = "not applicable: the survey has no scar or no deposit zone";
            let mut v: Vec<Option<f64>> = vec![
                Some(a.n_sim * area),
                Some(a.n_obs * area),
                (a.n_union > 0.0).then(|| a.n_inter / a.n_union),
                Some(a.v_sim * area),
                Some(a.v_obs * area),
                (a.v_max > 0.0).then(|| a.v_min / a.v_max),
                Some(a.rmse),
                Some(a.bias),
                a.rmse_matched,
            ];
            let offset =
                a.centroid_sim.zip(a.centroid_obs).map(|(s, o)| (s[0] - o[0], s[1] - o[1]));
            v.push(offset.map(|(dx, dy)| dx.hypot(dy)));
            v.push(offset.map(|(dx, dy)| dx.atan2(dy).to_degrees().rem_euclid(360.0)));
            let (
                mut run_s,
                mut run_o,
                mut ta_s,
                mut ta_o,
                mut hl_s,
                mut hl_o,
                mut lat_s,
                mut lat_o,
                mut med_s,
                mut med_o,
            ) = (None, None, None, None, None, None, None, None, None, None);
            if let (Some(f), Some(s)) = (fl, data.survey.as_ref()) {
                let c = f.crown;
                let along = |x: f64, y: f64| (x - c[0]) * f.dir[0] + (y - c[1]) * f.dir[1];
                let across = |x: f64, y: f64| -(x - c[0]) * f.dir[1] + (y - c[1]) * f.dir[0];
                // Simulated: farthest deposited block.
                let mut best: Option<(f64, f64)> = None;
                for i in 0..fb.len() {
                    if !map.deposited[i] {
                        continue;
                    }
                    let l = along(fb.x[i], fb.y[i]);
                    if best.is_none_or(|b| l > b.0) {
                        let base = fb.z[i] - half_height([fb.a[i], fb.b[i], fb.c[i]], fb.q[i]);
                        best = Some((l, c[2] - base));
                    }
                }
                if let Some((l, h)) = best.filter(|b| b.0 > 0.0) {
                    run_s = Some(l);
                    hl_s = Some(h / l);
                    ta_s = Some(h.atan2(l).to_degrees());
                }
                // Surveyed: farthest deposit cell.
                let g = s.grid;
                let mut best: Option<(f64, f64)> = None;
                let (mut lo_o, mut hi_o) = (f64::INFINITY, f64::NEG_INFINITY);
                let (mut lo_s, mut hi_s) = (f64::INFINITY, f64::NEG_INFINITY);
                let frame = &map.frame;
                let xs = frame.column("x")?.f64()?;
                let ys = frame.column("y")?.f64()?;
                let cells = frame.column("cell")?.i64()?;
                let in_s = frame.column("in_simulated")?.bool()?;
                let in_o = frame.column("in_surveyed")?.bool()?;
                let h = frame.column("thickness_simulated")?.f64()?;
                let d = frame.column("thickness_surveyed")?.f64()?;
                let (mut vol_s, mut vol_o) = (Vec::new(), Vec::new());
                for i in 0..frame.height() {
                    let (x, y) = (xs.get(i).unwrap_or(f64::NAN), ys.get(i).unwrap_or(f64::NAN));
                    let (t, l) = (across(x, y), along(x, y));
                    for (w, v) in [(h.get(i), &mut vol_s), (d.get(i), &mut vol_o)] {
                        if let Some(w) = w.filter(|w| *w > 0.0) {
                            v.push((l, w));
                        }
                    }
                    if in_s.get(i) == Some(true) {
                        lo_s = lo_s.min(t);
                        hi_s = hi_s.max(t);
                    }
                    if in_o.get(i) == Some(true) {
                        lo_o = lo_o.min(t);
                        hi_o = hi_o.max(t);
                        if best.is_none_or(|b| l > b.0) {
                            let k = cells.get(i).unwrap_or(0) as usize;
                            best = Some((l, c[2] - s.z_post[k]));
                        }
                    }
                }
                if let Some((l, h)) = best.filter(|b| b.0 > 0.0) {
                    run_o = Some(l);
                    hl_o = Some(h / l);
                    ta_o = Some(h.atan2(l).to_degrees());
                }
                lat_s = (hi_s >= lo_s).then_some(hi_s - lo_s + g.cell);
                lat_o = (hi_o >= lo_o).then_some(hi_o - lo_o + g.cell);
                med_s = weighted_median(&mut vol_s);
                med_o = weighted_median(&mut vol_o);
            }
            let scar_loss = data.survey.as_ref().map_or(0.0, |s| {
                let a = s.grid.cell * s.grid.cell;
                (0..s.class.len())
                    .filter(|&k| s.class[k] == CELL_SCAR && s.dz[k].is_finite())
                    .map(|k| (-s.dz[k]).max(0.0) * a)
                    .sum()
            });
            let hl_sch = (scar_loss > 0.0).then(|| scheidegger_h_over_l(scar_loss));
            v.extend([run_s, run_o, ta_s, ta_o, hl_s, hl_o, hl_sch, lat_s, lat_o, med_s, med_o]);
            let scar_vol: f64 =
                (0..fb.len()).filter(|&i| map.in_scar[i]).map(|i| fb.volume(i)).sum();
            v.push((seeded > 0.0).then(|| scar_vol / seeded));
            v.push(Some(map.volume_off_grid));
            for ((name, unit, desc), value) in DEPOSIT_METRICS.iter().zip(v) {
                let why = if *name == "h_over_l_scheidegger" {
                    "not applicable: the survey has no scar volume"
                } else if name.contains("along_flow") {
                    if fl.is_none() {
                        no_flow
                    } else {
                        "not applicable: empty simulated or surveyed deposit"
                    }
                } else if name.contains("runout")
                    || name.contains("travel")
                    || name.contains("h_over_l")
                    || name.contains("lateral")
                {
                    if fl.is_none() {
                        no_flow
                    } else if name.ends_with("_simulated") {
                        "not applicable: no deposited block lies beyond the scar's crown along the flow; the blocks stayed in the scar or left the map"
                    } else {
                        "not applicable: no surveyed deposit cell lies beyond the scar's crown along the flow"
                    }
                } else {
                    "not applicable: empty simulated or surveyed deposit"
                };
                out.push(name, value, unit, desc, why);
            }
        }
    }

    // Run metrics: always applicable when the run has data.
    let e = &data.energies;
    let no_e = "not applicable: the run recorded no energies";
    out.push("blocks", Some(fb.len() as f64), "1", "blocks in the run", "");
    out.push("seeded_volume", Some(seeded), "m^3", "volume of the seeded blocks", "");
    out.push(
        "volume_fraction_left_domain",
        (seeded > 0.0).then(|| left / seeded),
        "1",
        "fraction of the seeded volume whose blocks left the terrain (inactive at the end)",
        "not applicable: no seeded volume",
    );
    out.push(
        "simulated_time",
        e.time.last().copied(),
        "s",
        "simulated time at the last step",
        no_e,
    );
    out.push("steps", Some(data.diagnostics.steps as f64), "1", "time steps run", "");
    let (kmax_i, kmax) =
        e.kinetic.iter().enumerate().fold((None, f64::NEG_INFINITY), |acc, (i, &k)| {
            if k > acc.1 { (Some(i), k) } else { acc }
        });
    out.push(
        "kinetic_energy_peak",
        kmax_i.map(|_| kmax),
        "J",
        "largest total kinetic energy",
        no_e,
    );
    out.push(
        "kinetic_energy_peak_time",
        kmax_i.map(|i| e.time[i]),
        "s",
        "time of the kinetic energy peak",
        no_e,
    );
    out.push(
        "kinetic_energy_final",
        e.kinetic.last().copied(),
        "J",
        "total kinetic energy at the last step",
        no_e,
    );
    out.push(
        "dissipated_total",
        e.dissipated_cumulative.last().copied(),
        "J",
        "energy dissipated by the percussions over the run",
        no_e,
    );
    let p0 = e.potential.first().copied();
    out.push(
        "potential_energy_drop",
        p0.zip(e.potential.last().copied()).map(|(a, b)| a - b),
        "J",
        "potential energy released between the first and the last step",
        no_e,
    );
    let balance = (!e.kinetic.is_empty()).then(|| {
        let drop =
            (0..e.kinetic.len()).map(|i| e.potential[0] - e.potential[i]).fold(0.0, f64::max)
                + e.kinetic[0];
        let worst = match &e.balance_error {
            // The run's own balance (separation work and removed blocks accounted for).
            Some(b) => b.iter().map(|v| v.abs()).fold(0.0, f64::max),
            None => {
                let total = |i: usize| e.kinetic[i] + e.potential[i] + e.dissipated_cumulative[i];
                (0..e.kinetic.len()).map(|i| (total(i) - total(0)).abs()).fold(0.0, f64::max)
            }
        };
        if drop > 0.0 { worst / drop } else { 0.0 }
    });
    out.push(
        "energy_balance_residual",
        balance,
        "1",
        "largest |energy balance error| over the run (the run's balance_error when recorded, else K + P + D_cum - (K + P + D_cum)_0), relative to the released potential plus initial kinetic energy",
        no_e,
    );
    let ib = &data.initial_blocks;
    let init: std::collections::BTreeMap<u32, usize> =
        ib.id.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let disp: Vec<f64> = (0..fb.len())
        .filter(|&i| fb.active[i])
        .filter_map(|i| {
            let j = *init.get(&fb.id[i])?;
            Some(
                ((fb.x[i] - ib.x[j]).powi(2)
                    + (fb.y[i] - ib.y[j]).powi(2)
                    + (fb.z[i] - ib.z[j]).powi(2))
                .sqrt(),
            )
        })
        .collect();
    let no_d = "not applicable: no active block matches an initial block";
    out.push(
        "displacement_mean",
        (!disp.is_empty()).then(|| disp.iter().sum::<f64>() / disp.len() as f64),
        "m",
        "mean distance between initial and final centres of the active blocks",
        no_d,
    );
    out.push(
        "displacement_max",
        disp.iter().copied().reduce(f64::max),
        "m",
        "largest distance between initial and final centre",
        no_d,
    );
    out.push(
        "speed_max",
        data.trajectories.speed.iter().copied().reduce(f64::max),
        "m/s",
        "largest recorded speed of a block centre",
        "not applicable: no trajectories",
    );
    let d = &data.diagnostics;
    out.push(
        "steps_with_fallback",
        Some(d.steps_with_fallback as f64),
        "1",
        "steps where the fallback solver was used",
        "",
    );
    out.push(
        "max_penetration",
        Some(d.max_penetration),
        "m",
        "largest penetration depth at the start of a step",
        "",
    );
    let fb = &data.final_blocks;
    let smallest_edge =
        (0..fb.a.len()).map(|i| fb.a[i].min(fb.b[i]).min(fb.c[i])).fold(f64::INFINITY, f64::min);
    out.push(
        "max_penetration_share",
        (smallest_edge.is_finite() && smallest_edge > 0.0)
            .then(|| d.max_penetration / smallest_edge),
        "1",
        "max_penetration as a share of the smallest block edge (talus run warns above 0.01)",
        "not applicable: no blocks",
    );
    out.push(
        "max_contacts",
        Some(d.max_contacts as f64),
        "1",
        "largest number of contacts in a step",
        "",
    );
    let _ = config;
    Ok(out.0)
}

/// Write `metrics.parquet` and `metrics.json`.
pub fn write(
    parquet: &Path,
    json: &Path,
    metrics: &[Metric],
    prov: &Provenance,
) -> Result<(), Error> {
    let schema = Arc::new(talus_schema::compare::metrics_schema());
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(metrics.iter().map(|m| m.metric.as_str()))),
        Arc::new(Float64Array::from_iter_values(metrics.iter().map(|m| m.value))),
        Arc::new(StringArray::from_iter_values(metrics.iter().map(|m| m.unit.as_str()))),
        Arc::new(BooleanArray::from(metrics.iter().map(|m| m.applicable).collect::<Vec<_>>())),
        Arc::new(StringArray::from_iter_values(metrics.iter().map(|m| m.description.as_str()))),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| crate::Error::input(parquet, format!("building the metrics table: {e}")))?;
    talus_io::write_parquet(parquet, schema, &[batch], prov)?;
    let doc = serde_json::json!({
        "stage": "compare",
        "version": env!("CARGO_PKG_VERSION"),
        "metrics": metrics,
    });
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    talus_io::AtomicFile::write_all(json, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod scheidegger_tests {
    use super::scheidegger_h_over_l;

    #[test]
    fn scheidegger_gives_one_half_for_the_piton_marcel_volume() {
        // log10(H/L) = 0.62419 − 0.15666 × log10(8e5) = −0.30059 (H/L 0.50051).
        assert!((scheidegger_h_over_l(8e5) - 0.50051).abs() < 1e-5);
        assert!((scheidegger_h_over_l(1e6) - 10f64.powf(0.62419 - 0.15666 * 6.0)).abs() < 1e-12);
        assert!(scheidegger_h_over_l(1e7) < scheidegger_h_over_l(1e6));
    }
}

#[cfg(test)]
mod median_tests {
    use super::weighted_median;

    /// The weighted median is the value where the cumulative weight reaches half, not the
    /// weighted mean: a far outlier does not move it.
    #[test]
    fn the_weighted_median_is_where_half_the_weight_lies() {
        assert_eq!(weighted_median(&mut [(10.0, 1.0), (1.0, 1.0), (2.0, 1.0)]), Some(2.0));
        assert_eq!(weighted_median(&mut [(1.0, 3.0), (2.0, 1.0), (100.0, 1.0)]), Some(1.0));
        // Exactly half at the first value: that value.
        assert_eq!(weighted_median(&mut [(5.0, 2.0), (7.0, 2.0)]), Some(5.0));
        assert_eq!(weighted_median(&mut []), None);
        assert_eq!(weighted_median(&mut [(3.0, 0.0)]), None);
    }
}
