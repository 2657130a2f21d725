//! HTML helpers for the self-contained reports (no external files: figures are embedded).

use base64::Engine;

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

/// A value with 4 significant digits (scientific notation when very large or small;
/// `n/a` when not finite).
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

/// The start of a page: doctype, head with `title` and the `style` sheet, and the title
/// again as its `<h1>` (escaped).
pub fn page_start(title: &str, style: &str) -> String {
    let t = escape(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{style}</style></head><body>\n<h1>{t}</h1>\n"
    )
}

/// A PNG as a `data:` URI for an `<img src>`.
pub fn png_data_uri(png: &[u8]) -> String {
    format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(png))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_numbers() {
        assert_eq!(escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
        let cases = [
            (f64::NAN, "n/a"),
            (0.0, "0"),
            (42.0, "42"),
            (0.123456, "0.1235"),
            (3.25, "3.250"),
            (123.456, "123.5"),
            (2.5e7, "2.5000e7"),
            (-4.2e-5, "-4.2000e-5"),
        ];
        for (v, s) in cases {
            assert_eq!(format_value(v), s, "{v}");
        }
    }

    #[test]
    fn page_and_image() {
        let p = page_start("A <site>", "body{}");
        assert!(p.starts_with("<!DOCTYPE html>\n"));
        assert!(p.contains("<title>A &lt;site&gt;</title><style>body{}</style>"));
        assert!(p.ends_with("<h1>A &lt;site&gt;</h1>\n"));
        assert_eq!(png_data_uri(b"\x89PNG"), "data:image/png;base64,iVBORw==");
    }
}
