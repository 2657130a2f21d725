//! The self-contained HTML report: site, configuration, metrics, figures (PNG embedded
//! as base64 data URIs), run diagnostics.

use crate::figures::Figure;
use crate::inputs::Data;
use crate::metrics::Metric;
use crate::{Config, Error, SiteInfo};
use base64::Engine;
use std::fmt::Write as _;
use std::path::Path;

/// Escape text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value with 4 significant digits (scientific notation when very large or small).
pub fn format_value(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.4e}")
    } else if v.fract() == 0.0 && a < 1e6 {
        format!("{v:.0}")
    } else {
        let digits = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        format!("{v:.digits$}")
    }
}

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
) -> String {
    let mut h = String::new();
    let title = if site.name.is_empty() {
        "Talus comparison report".to_string()
    } else {
        format!("Talus report: {}", site.name)
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
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
    let b64 = base64::engine::general_purpose::STANDARD;
    for (f, bytes) in figures {
        let _ = writeln!(
            h,
            "<figure id=\"fig-{}\"><img alt=\"{}\" src=\"data:image/png;base64,{}\"><figcaption><b>{}.</b> {}</figcaption></figure>",
            escape(f.file.trim_end_matches(".png")),
            escape(&f.title),
            b64.encode(bytes),
            escape(&f.title),
            escape(&f.caption)
        );
    }

    h.push_str("<h2>Run diagnostics</h2>\n<table><tr><th>solver status</th><th>steps</th></tr>\n");
    for (s, n) in &data.diagnostics.status_counts {
        let _ = writeln!(h, "<tr><td>{}</td><td class=\"num\">{n}</td></tr>", escape(s));
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
) -> Result<(), Error> {
    let mut figs = Vec::with_capacity(figures.len());
    for f in figures {
        let bytes = std::fs::read(&f.path).map_err(|e| Error::input(&f.path, e.to_string()))?;
        figs.push((f.clone(), bytes));
    }
    talus_io::AtomicFile::write_all(path, render(site, config, data, metrics, &figs).as_bytes())?;
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
