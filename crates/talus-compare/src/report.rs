//! The self-contained HTML report: site, configuration, metrics, figures (PNG embedded
//! as base64 data URIs), run diagnostics.

use crate::figures::Figure;
use crate::inputs::Data;
use crate::metrics::Metric;
use crate::{Config, Error, SiteInfo};
use std::fmt::Write as _;
use std::path::Path;
use talus_report::html::{escape, format_value, page_start, png_data_uri};

const STYLE: &str = "body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;max-width:1250px;margin:2em auto;padding:0 1em;color:#222}\
h1{margin-bottom:0.2em}h2{border-bottom:1px solid #ccc;padding-bottom:0.2em;margin-top:1.6em}\
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:0.25em 0.6em;text-align:left;vertical-align:top}\
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
tr.na td{color:#888}pre{background:#f7f7f7;border:1px solid #ddd;padding:0.8em;overflow-x:auto;font-size:0.85em}\
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:0.9em;color:#444;margin-top:0.3em}";

/// Render the report.
pub fn render(
    site: &SiteInfo,
    config: &Config,
    data: &Data,
    metrics: &[Metric],
    figures: &[(Figure, Vec<u8>)],
    sizes: &(Vec<crate::sizes::SizeRow>, &str),
) -> String {
    let mut h = String::new();
    let title = if site.name.is_empty() {
        "Talus comparison report".to_string()
    } else {
        format!("Talus report: {}", site.name)
    };
    h.push_str(&page_start(&title, STYLE));
    if !site.description.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", escape(&site.description));
    }
    let applicable = metrics.iter().filter(|m| m.applicable).count();
    let _ = writeln!(
        h,
        "<p>talus {} &middot; {} blocks &middot; {} of {} metrics applicable &middot; survey: {} &middot; initial state: {}{}</p>",
        env!("CARGO_PKG_VERSION"),
        data.final_blocks.len(),
        applicable,
        metrics.len(),
        if data.survey.is_some() { "yes" } else { "none (deposit metrics not applicable)" },
        escape(&data.initial_source),
        data.crs
            .as_ref()
            .map(|c| format!(" &middot; CRS {}", escape(&c.label())))
            .unwrap_or_default()
    );

    h.push_str("<h2>Metrics</h2>\n<table><tr><th>metric</th><th>value</th><th>unit</th><th>description</th></tr>\n");
    for m in metrics {
        let _ = writeln!(
            h,
            "<tr id=\"metric-{}\"{}><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&m.metric),
            if m.applicable { "" } else { " class=\"na\"" },
            escape(&m.metric),
            if m.applicable { format_value(m.value) } else { "n/a".into() },
            escape(&m.unit),
            escape(&m.description)
        );
    }
    h.push_str("</table>\n");

    h.push_str("<h2>Figures</h2>\n");
    for (f, bytes) in figures {
        let _ = writeln!(
            h,
            "<figure id=\"fig-{}\"><img alt=\"{}\" src=\"{}\"><figcaption><b>{}.</b> {}</figcaption></figure>",
            escape(f.file.trim_end_matches(".png")),
            escape(&f.title),
            png_data_uri(bytes),
            escape(&f.title),
            escape(&f.caption)
        );
    }

    if !sizes.0.is_empty() {
        let _ = writeln!(
            h,
            "<h2>Block sizes</h2>\n<p>Per size class as seeded (the <code>class</code> column of the blocks tables, 0 = the largest): where the blocks started and where those still on the terrain stopped, as {} (do the large blocks run further?).</p>",
            escape(sizes.1)
        );
        h.push_str("<table><tr><th>class</th><th>block volume (m³)</th><th>edges a × b × c, mean (m)</th><th>blocks</th><th>volume (m³)</th><th>deposited</th><th>start, median (m)</th><th>stop, median (m)</th><th>stop, 90th percentile (m)</th></tr>\n");
        for r in &sizes.0 {
            let _ = writeln!(
                h,
                "<tr><td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.2} × {:.2} × {:.2}</td><td class=\"num\">{}</td><td class=\"num\">{:.0}</td><td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.1}</td></tr>",
                r.class,
                r.block_volume,
                r.edges[0],
                r.edges[1],
                r.edges[2],
                r.blocks,
                r.volume,
                r.deposited,
                r.start_median,
                r.stop_median,
                r.stop_p90
            );
        }
        h.push_str("</table>\n");
    }

    h.push_str(
        "<h2>Run diagnostics</h2>\n<p>Steps by the worst status of the contact problems solved in them (the <code>status</code> column of <code>run/diagnostics.parquet</code>).</p>\n<table><tr><th>solver status</th><th>steps</th><th>meaning</th></tr>\n",
    );
    for (s, n) in &data.diagnostics.status_counts {
        let meaning = talus_schema::run::status_meaning(s).unwrap_or("(not a status Talus writes)");
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{n}</td><td>{}</td></tr>",
            escape(s),
            escape(meaning)
        );
    }
    h.push_str("</table>\n");

    h.push_str("<h2>Configuration</h2>\n<h3>compare (effective)</h3>\n");
    let _ = writeln!(h, "<pre>{}</pre>", escape(&toml_of(config)));
    if !data.run_config.is_null() {
        h.push_str("<h3>run (from final.parquet's provenance)</h3>\n");
        let _ = writeln!(
            h,
            "<pre>{}</pre>",
            escape(&serde_json::to_string_pretty(&data.run_config).unwrap_or_default())
        );
    }
    if !site.config_text.is_empty() {
        h.push_str("<h3>site file</h3>\n");
        let _ = writeln!(h, "<pre>{}</pre>", escape(&site.config_text));
    }
    h.push_str("</body></html>\n");
    h
}

fn toml_of(config: &Config) -> String {
    // The config is plain numbers; render it as TOML-like `key = value` lines via JSON.
    let v = serde_json::to_value(config).unwrap_or_default();
    v.as_object()
        .map(|o| o.iter().map(|(k, v)| format!("{k} = {v}\n")).collect())
        .unwrap_or_default()
}

/// Write the report atomically, embedding the figures.
pub fn write(
    path: &Path,
    site: &SiteInfo,
    config: &Config,
    data: &Data,
    metrics: &[Metric],
    figures: &[Figure],
    sizes: &(Vec<crate::sizes::SizeRow>, &str),
) -> Result<(), Error> {
    let mut figs = Vec::with_capacity(figures.len());
    for f in figures {
        let bytes = std::fs::read(&f.path).map_err(|e| Error::input(&f.path, e.to_string()))?;
        figs.push((f.clone(), bytes));
    }
    talus_io::AtomicFile::write_all(
        path,
        render(site, config, data, metrics, &figs, sizes).as_bytes(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_readable() {
        assert_eq!(format_value(f64::NAN), "n/a");
        assert_eq!(format_value(0.0), "0");
        assert_eq!(format_value(435.0), "435");
        assert_eq!(format_value(0.73216), "0.7322");
        assert_eq!(format_value(12.3456), "12.35");
        assert_eq!(format_value(2.5e12), "2.5000e12");
        assert_eq!(escape("<a & b>"), "&lt;a &amp; b&gt;");
    }
}
