//! The collected outputs: `runs.parquet`, `best.toml`, `figures/sensitivity.png` and
//! `report.html` (figure embedded, runs sorted by score, the best configuration).

use crate::Error;
use crate::config::Config;
use crate::sample::Parameter;
use crate::sensitivity::{SensitivitySeries, sensitivity};
use crate::table::{self, Row, Status};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use talus_report::html::{escape, format_value, page_start, png_data_uri};
use talus_schema::file_names::calibrate as names;

/// What the collection has to show.
pub struct Collection<'a> {
    /// Site name.
    pub site: &'a str,
    pub config: &'a Config,
    pub params: &'a [Parameter],
    /// One row per member, in member order.
    pub rows: &'a [Row],
    /// The rows gathered by point ([`table::points`]).
    pub points: &'a [table::Point],
    /// The best of them ([`table::best_point`]); its first row is the best member.
    pub best_point: Option<&'a table::Point>,
    /// The best member's site file (its `[run]`, and `[seed]` when a seed option varies,
    /// go into `best.toml`).
    pub best_site: Option<&'a toml::Table>,
    /// Link to the best member's comparison report, relative to the output directory.
    pub best_report: Option<String>,
}

/// Files written by [`write`].
#[derive(Debug, Clone)]
pub struct Summary {
    pub members: usize,
    pub ok: usize,
    /// Index (into the rows) of the best member.
    pub best: Option<usize>,
    pub runs: PathBuf,
    /// Absent when no member succeeded.
    pub best_toml: Option<PathBuf>,
    pub figure: PathBuf,
    pub report: PathBuf,
}

/// The best configuration as TOML to paste into the site file.
pub fn best_toml(c: &Collection, best: &Row, site: &toml::Table) -> String {
    let mut t = toml::Table::new();
    for key in ["run", "seed"] {
        if (key == "run" || c.config.varies_seed())
            && let Some(v) = site.get(key)
        {
            t.insert(key.into(), v.clone());
        }
    }
    let mut s = format!(
        "# Best of {} members of the calibration of `{}` (member {}, score {}, deposit IoU {}, runout error {}, thickness RMSE {} m).\n",
        c.rows.len(),
        c.site,
        best.member,
        format_value(best.score),
        format_value(best.metrics.deposit_iou),
        format_value(best.metrics.runout_error()),
        format_value(best.metrics.thickness_rmse),
    );
    for (p, v) in c.params.iter().zip(&best.values) {
        let _ = writeln!(s, "#   {} = {v} ({})", p.name, p.key);
    }
    if c.config.replicates > 1
        && let Some(p) = c.best_point
    {
        let _ = writeln!(
            s,
            "# Its point ({}) over {} replicates: {} (mean ± sample sd).",
            p.point,
            p.rows.len(),
            point_figures(p, ", "),
        );
    }
    s.push_str("# Replace the site file's tables below with these.\n\n");
    s.push_str(&toml::to_string(&t).unwrap_or_default());
    s
}

/// Write the runs table, the best configuration, the sensitivity figure and the report
/// into `dir`.
pub fn write(
    dir: &Path,
    c: &Collection,
    prov: &talus_io::Provenance,
    figure_size: (u32, u32),
) -> Result<Summary, Error> {
    let runs = dir.join(names::RUNS);
    table::write(&runs, c.params, c.rows, prov)?;
    let best = c.best_point.map(|p| p.rows[0]);
    let best_path = dir.join("best.toml");
    let best_text = match (best, c.best_site) {
        (Some(b), Some(site)) => {
            let text = best_toml(c, &c.rows[b], site);
            talus_io::AtomicFile::write_all(&best_path, text.as_bytes())?;
            Some(text)
        }
        _ => None,
    };
    let figure = dir.join(names::FIGURES).join("sensitivity.png");
    // The figure shows the search; the reference member is not one of its samples (nor
    // ever the best, so the best's index among the search's rows counts those before it).
    let search: Vec<&Row> = c.rows.iter().filter(|r| !r.reference).collect();
    let best_in_search = best.map(|b| c.rows[..b].iter().filter(|r| !r.reference).count());
    let columns: Vec<Vec<f64>> =
        (0..c.params.len()).map(|d| search.iter().map(|r| r.values[d]).collect()).collect();
    let named: Vec<(&str, &[f64])> =
        c.params.iter().zip(&columns).map(|(p, v)| (p.name.as_str(), v.as_slice())).collect();
    let score: Vec<f64> = search.iter().map(|r| r.score).collect();
    let iou: Vec<f64> = search.iter().map(|r| r.metrics.deposit_iou).collect();
    let runout: Vec<f64> = search.iter().map(|r| r.metrics.runout_error()).collect();
    let w = figure_size.0.max(360 * named.len() as u32).min(8000);
    sensitivity(
        &figure,
        (w, figure_size.1),
        &named,
        &[
            SensitivitySeries { label: "score (lower is better)", values: &score },
            SensitivitySeries { label: "deposit IoU", values: &iou },
            SensitivitySeries { label: "relative runout error", values: &runout },
        ],
        best_in_search,
    )?;
    let png = std::fs::read(&figure)
        .map_err(|e| Error::Output { path: figure.clone(), message: e.to_string() })?;
    let report = dir.join(names::REPORT);
    let html = render(c, best, best_text.as_deref(), &png);
    talus_io::AtomicFile::write_all(&report, html.as_bytes())?;
    Ok(Summary {
        members: c.rows.len(),
        ok: c.rows.iter().filter(|r| r.status == Status::Ok).count(),
        best,
        runs,
        best_toml: best_text.map(|_| best_path),
        figure,
        report,
    })
}

const STYLE: &str = "body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}\
h2{border-bottom:1px solid #ccc;padding-bottom:0.2em;margin-top:1.6em}\
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:0.2em 0.5em;text-align:left}\
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
tr.best td{background:#fff3c4}tr.reference td{background:#e8f0fb}tr.failed td{color:#a00}pre{background:#f7f7f7;border:1px solid #ddd;padding:0.8em;overflow-x:auto}\
figure img{max-width:100%;border:1px solid #ddd}\
td.status{max-width:32em;overflow-wrap:anywhere}td.status details summary{cursor:pointer}";

fn render(c: &Collection, best: Option<usize>, best_text: Option<&str>, png: &[u8]) -> String {
    let mut h = String::new();
    let title = format!("Talus calibration: {}", c.site);
    h.push_str(&page_start(&title, STYLE));
    let ok = c.rows.iter().filter(|r| r.status == Status::Ok).count();
    let w = &c.config.weights;
    let _ = writeln!(
        h,
        "<p>talus {} &middot; search <code>{:?}</code> (seed {}) &middot; {} members, {} ok, {} failed &middot; score = ({} &times; (1 &minus; IoU) + {} &times; |L<sub>sim</sub> &minus; L<sub>obs</sub>|/L<sub>obs</sub> + {} &times; RMSE/h&#772;<sub>obs</sub>) / {}, lower is better.</p>",
        env!("CARGO_PKG_VERSION"),
        c.config.search,
        c.config.seed,
        c.rows.len(),
        ok,
        c.rows.len() - ok,
        w.iou,
        w.runout,
        w.thickness,
        w.iou + w.runout + w.thickness
    );
    h.push_str("<h2 id=\"best\">Best configuration</h2>\n");
    match (best, best_text) {
        (Some(b), Some(text)) => {
            let r = &c.rows[b];
            let _ = writeln!(
                h,
                "<p>Member {} &middot; score {} &middot; deposit IoU {} &middot; runout error {} &middot; thickness RMSE {} m{}</p>\n<pre>{}</pre>",
                r.member,
                format_value(r.score),
                format_value(r.metrics.deposit_iou),
                format_value(r.metrics.runout_error()),
                format_value(r.metrics.thickness_rmse),
                c.best_report
                    .as_ref()
                    .map(|l| format!(
                        " &middot; <a href=\"{}\">its comparison report</a>",
                        escape(l)
                    ))
                    .unwrap_or_default(),
                escape(text)
            );
            if c.config.replicates > 1
                && let Some(p) = c.best_point
            {
                let _ = writeln!(
                    h,
                    "<p>The best point ({}) over its {} replicates, of which this member is replicate {}{}: {} (mean &plusmn; sample standard deviation).</p>",
                    p.point,
                    p.rows.len(),
                    r.replicate,
                    if r.replicate == 0 { " (unperturbed)" } else { "" },
                    point_figures(p, " &middot; ")
                );
            }
        }
        _ => h.push_str("<p>No member succeeded.</p>\n"),
    }
    h.push_str(&replicates(c, best));
    h.push_str(&travel_angles(c, best));
    let _ = writeln!(
        h,
        "<h2>Sensitivity</h2>\n<figure id=\"fig-sensitivity\"><img alt=\"sensitivity\" src=\"{}\"><figcaption>Score, deposit IoU and relative runout error of every member against each varied parameter; red cross: the best member.</figcaption></figure>",
        png_data_uri(png)
    );
    h.push_str("<h2>Runs (best first)</h2>\n<table><tr><th>member</th>");
    for p in c.params {
        let _ = write!(h, "<th>{}</th>", escape(&p.name));
    }
    h.push_str("<th>score</th><th>deposit IoU</th><th>runout error</th><th>thickness RMSE (m)</th><th>volume overlap</th><th>wall time (s)</th><th>status</th></tr>\n");
    let mut order: Vec<usize> = (0..c.rows.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (&c.rows[a], &c.rows[b]);
        let key = |r: &Row| if r.score.is_finite() { r.score } else { f64::INFINITY };
        key(ra).total_cmp(&key(rb)).then(ra.member.cmp(&rb.member))
    });
    for i in order {
        let r = &c.rows[i];
        let class = if Some(i) == best {
            " class=\"best\""
        } else if r.reference {
            " class=\"reference\""
        } else if r.status == Status::Failed {
            " class=\"failed\""
        } else {
            ""
        };
        let mut label = if r.reference { " (reference)" } else { "" }.to_string();
        if c.config.replicates > 1 {
            label.push_str(&format!(" (point {}, replicate {})", r.point, r.replicate));
        }
        let _ = write!(
            h,
            "<tr id=\"member-{}\"{class}><td class=\"num\">{}{label}</td>",
            r.member, r.member
        );
        for v in &r.values {
            let _ = write!(h, "<td class=\"num\">{}</td>", format_value(*v));
        }
        for v in [
            r.score,
            r.metrics.deposit_iou,
            r.metrics.runout_error(),
            r.metrics.thickness_rmse,
            r.metrics.volume_overlap,
            r.wall_time_s,
        ] {
            let _ = write!(h, "<td class=\"num\">{}</td>", format_value(v));
        }
        // A failure's reason can be long (an error chain): folded under the status, and
        // the cell wraps instead of widening the table.
        let status = if r.error.is_empty() {
            escape(r.status.as_str())
        } else {
            format!(
                "<details><summary>{}</summary>{}</details>",
                escape(r.status.as_str()),
                escape(&r.error)
            )
        };
        let _ = writeln!(h, "<td class=\"status\">{status}</td></tr>");
    }
    h.push_str("</table>\n<h2>Calibration options</h2>\n");
    let _ = writeln!(h, "<pre>{}</pre>", escape(&toml::to_string(c.config).unwrap_or_default()));
    h.push_str("</body></html>\n");
    h
}

/// A point's score, deposit IoU, runout and thickness RMSE over its replicates, joined
/// by `sep`.
fn point_figures(p: &table::Point, sep: &str) -> String {
    format!(
        "score {}{sep}deposit IoU {}{sep}runout {} m{sep}thickness RMSE {} m",
        spread(p.score),
        spread(p.deposit_iou),
        spread(p.runout_simulated),
        spread(p.thickness_rmse)
    )
}

/// "mean ± sd" (the sd left out when undefined).
fn spread(x: table::Spread) -> String {
    if x.sd.is_finite() {
        format!("{} ± {}", format_value(x.mean), format_value(x.sd))
    } else {
        format_value(x.mean)
    }
}

/// The points of the search and the reference over their replicates, best mean score
/// first (only with `replicates` > 1).
fn replicates(c: &Collection, best: Option<usize>) -> String {
    let mut h = String::new();
    if c.config.replicates <= 1 {
        return h;
    }
    let _ = writeln!(
        h,
        "<h2 id=\"replicates\">Points over their replicates</h2>\n<p>Each point ran {} times: replicate 0 as given, replicate r &gt; 0 with every block's initial velocity perturbed by {} m/s in a random direction (seed r). A deposit of many blocks is chaotic; the spread (mean &plusmn; sample standard deviation) is what a single run of the point may give. Points are ranked by their mean score.</p>",
        c.config.replicates,
        format_value(c.config.replicate_speed)
    );
    h.push_str("<table><tr><th>point</th>");
    for p in c.params {
        let _ = write!(h, "<th>{}</th>", escape(&p.name));
    }
    h.push_str("<th>runs ok</th><th>score</th><th>deposit IoU</th><th>runout (m)</th><th>thickness RMSE (m)</th><th>volume overlap</th></tr>\n");
    let mut pts: Vec<&table::Point> = c.points.iter().collect();
    pts.sort_by(|a, b| {
        let key =
            |p: &table::Point| if p.score.mean.is_finite() { p.score.mean } else { f64::INFINITY };
        key(a).total_cmp(&key(b)).then(a.point.cmp(&b.point))
    });
    for p in pts {
        let first = &c.rows[p.rows[0]];
        let class = if best.is_some_and(|b| p.rows.contains(&b)) {
            " class=\"best\""
        } else if p.reference {
            " class=\"reference\""
        } else {
            ""
        };
        let label = if p.reference { " (reference)" } else { "" };
        let _ = write!(h, "<tr{class}><td class=\"num\">{}{label}</td>", p.point);
        for v in &first.values {
            let _ = write!(h, "<td class=\"num\">{}</td>", format_value(*v));
        }
        let _ = write!(h, "<td class=\"num\">{} of {}</td>", p.ok, p.rows.len());
        for x in [p.score, p.deposit_iou, p.runout_simulated, p.thickness_rmse, p.volume_overlap] {
            let _ = write!(h, "<td class=\"num\">{}</td>", spread(x));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

/// Degrees with one decimal and H/L with three, or "n/a".
fn angle(deg: f64) -> String {
    if deg.is_finite() {
        format!("{deg:.1}&deg; (H/L {:.3})", deg.to_radians().tan())
    } else {
        "n/a".into()
    }
}

/// The travel angles: the survey's, Scheidegger's for the scar's volume, the best
/// member's, the search's range and the uncalibrated reference's.
fn travel_angles(c: &Collection, best: Option<usize>) -> String {
    let mut h = String::from("<h2 id=\"travel-angle\">Travel angle</h2>\n");
    let ok: Vec<&Row> = c.rows.iter().filter(|r| r.status == Status::Ok).collect();
    let Some(first) = ok.first() else {
        h.push_str("<p>No member succeeded.</p>\n");
        return h;
    };
    h.push_str("<p>Fahrb&ouml;schung atan(H/L): the drop H from the crown of the scar to the farthest deposit over its horizontal distance L. Scheidegger's (1973) relation for rock avalanches, log<sub>10</sub>(H/L) = 0.62419 &minus; 0.15666 log<sub>10</sub>V, gives the angle expected of the scar's volume V.</p>\n<table><tr><th>run</th><th>travel angle</th><th>deposit IoU</th><th>runout error</th></tr>\n");
    let m = &first.metrics;
    let _ = writeln!(
        h,
        "<tr><td>survey</td><td class=\"num\">{}</td><td></td><td></td></tr>\n<tr><td>Scheidegger (1973), the scar's volume</td><td class=\"num\">{}</td><td></td><td></td></tr>",
        angle(m.travel_angle_surveyed),
        angle(m.travel_angle_scheidegger())
    );
    let row = |h: &mut String, what: String, r: &Row| {
        let _ = writeln!(
            h,
            "<tr><td>{what}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            angle(r.metrics.travel_angle_simulated),
            format_value(r.metrics.deposit_iou),
            format_value(r.metrics.runout_error())
        );
    };
    if let Some(b) = best {
        row(&mut h, format!("best member ({})", c.rows[b].member), &c.rows[b]);
    }
    let angles: Vec<f64> = ok
        .iter()
        .filter(|r| !r.reference)
        .map(|r| r.metrics.travel_angle_simulated)
        .filter(|a| a.is_finite())
        .collect();
    if let (Some(lo), Some(hi)) =
        (angles.iter().copied().reduce(f64::min), angles.iter().copied().reduce(f64::max))
    {
        let _ = writeln!(
            h,
            "<tr><td>the search's {} members</td><td class=\"num\">{lo:.1}&ndash;{hi:.1}&deg;</td><td></td><td></td></tr>",
            angles.len()
        );
    }
    match c.rows.iter().find(|r| r.reference) {
        Some(r) if r.status == Status::Ok => {
            row(&mut h, format!("uncalibrated reference ({})", r.member), r)
        }
        Some(r) => {
            let _ = writeln!(
                h,
                "<tr><td>uncalibrated reference ({})</td><td colspan=\"3\">failed: {}</td></tr>",
                r.member,
                escape(&r.error)
            );
        }
        None => {}
    }
    h.push_str("</table>\n");
    if !c.rows.iter().any(|r| r.reference) {
        h.push_str("<p>Set <code>[calibrate] reference</code> (one value per varied parameter, e.g. textbook friction) to run the uncalibrated configuration beside the search and see how far the calibration moved the travel angle.</p>\n");
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Weights;
    use crate::sample::Member;
    use crate::table::Row;

    /// A collection of `rows` with no parameter and no best site.
    fn collection<'a>(config: &'a Config, rows: &'a [Row]) -> Collection<'a> {
        Collection {
            site: "s",
            config,
            params: &[],
            rows,
            points: &[],
            best_point: None,
            best_site: None,
            best_report: None,
        }
    }

    /// The travel-angle section sets the survey's, Scheidegger's (atan of its H/L), the best
    /// member's, the search's range and the reference's side by side; the reference row
    /// is marked and is never the best.
    #[test]
    fn travel_angles_sit_beside_scheidegger_and_the_reference() {
        let config = Config::default();
        let w = Weights::default();
        let metrics = |iou: f64, angle: f64| crate::table::Metrics {
            deposit_iou: iou,
            volume_overlap: 0.3,
            runout_simulated: 330.0,
            runout_surveyed: 316.0,
            thickness_rmse: 17.0,
            deposit_volume_surveyed: 9e5,
            deposit_area_surveyed: 4e4,
            centroid_offset: 20.0,
            travel_angle_simulated: angle,
            travel_angle_surveyed: 27.3,
            h_over_l_scheidegger: 0.5,
        };
        let m = |i: usize, reference: bool| Member {
            index: i,
            point: i,
            replicate: 0,
            seed: 1,
            values: vec![],
            reference,
        };
        let rows = [
            Row::new(&m(0, false), Ok(metrics(0.5, 26.0)), &w, 1.0),
            Row::new(&m(1, false), Ok(metrics(0.6, 25.5)), &w, 1.0),
            // The reference scores best but is not a candidate.
            Row::new(&m(2, true), Ok(metrics(0.9, 34.0)), &w, 1.0),
        ];
        let best = crate::table::best(&rows);
        assert_eq!(best, Some(1));
        let c = collection(&config, &rows);
        let html = travel_angles(&c, best);
        // Scheidegger: atan(0.5) = 26.565°.
        assert!(html.contains("26.6&deg; (H/L 0.500)"), "{html}");
        assert!(html.contains("<td>survey</td><td class=\"num\">27.3&deg;"), "{html}");
        assert!(html.contains("best member (1)</td><td class=\"num\">25.5&deg;"), "{html}");
        assert!(
            html.contains("the search's 2 members</td><td class=\"num\">25.5&ndash;26.0&deg;"),
            "{html}"
        );
        assert!(
            html.contains("uncalibrated reference (2)</td><td class=\"num\">34.0&deg;"),
            "{html}"
        );
        let page = render(&c, best, None, b"png");
        assert!(page.contains(
            "<tr id=\"member-2\" class=\"reference\"><td class=\"num\">2 (reference)</td>"
        ));
        // Without a reference the section says how to get one.
        let c = Collection { rows: &rows[..2], ..c };
        assert!(travel_angles(&c, best).contains("[calibrate] reference"));
    }

    /// A failed member's long reason is folded under its status in a wrapping cell.
    #[test]
    fn failure_reasons_are_folded_in_a_wrapping_cell() {
        let config = Config::default();
        let member =
            Member { index: 0, point: 0, replicate: 0, seed: 1, values: vec![], reference: false };
        let reason = "stage run failed: ".to_string() + &"a very long error chain ".repeat(20);
        let rows = [Row::new(&member, Err(reason.clone()), &Weights::default(), 1.0)];
        let c = collection(&config, &rows);
        let html = render(&c, None, None, b"png");
        let cell = format!(
            "<td class=\"status\"><details><summary>failed</summary>{}</details></td>",
            escape(&reason)
        );
        assert!(html.contains(&cell), "{html}");
        assert!(html.contains("td.status{max-width:32em;overflow-wrap:anywhere}"));
    }
}
