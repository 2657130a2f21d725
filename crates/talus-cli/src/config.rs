//! A stage's configuration arguments (`--config`, `--set`, `--print-config`), loaded by
//! `talus_pipeline::options`; and the help text of the options, rendered from the config
//! struct's doc comments and `Default` (through its JSON schema), so units and defaults
//! are written once.

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::PathBuf;

/// Configuration arguments shared by every stage subcommand.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// TOML file with the stage's options (top level), or a site file
    /// (`pipelines/NAME.toml`) whose `[STAGE]` table holds them.
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override one option, VALUE in TOML syntax; dotted keys reach nested tables
    /// (e.g. `--set cell_size=0.5`, `--set 'classes=[2]'`, `--set method="median"`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the effective configuration as TOML and exit.
    #[arg(long)]
    pub print_config: bool,
}

/// Build the effective configuration of `stage` from its arguments. With
/// `--print-config` the effective configuration is printed and `None` returned.
pub fn load<T: DeserializeOwned + Serialize>(
    args: &ConfigArgs,
    stage: &str,
) -> Result<Option<T>, Box<dyn std::error::Error + Send + Sync>> {
    let cfg: T = talus_pipeline::options::load(args.config.as_deref(), &args.set, stage)?;
    if args.print_config {
        print_toml(&cfg)?;
        return Ok(None);
    }
    Ok(Some(cfg))
}

/// Print a configuration as TOML (`--print-config`).
pub fn print_toml<T: Serialize>(cfg: &T) -> Result<(), toml::ser::Error> {
    print!("{}", small_floats_in_exponent_form(&toml::to_string_pretty(cfg)?));
    Ok(())
}

/// TOML as `toml` writes it, with floats below 1e-3 in exponent form (`1e-9` instead of
/// `0.000000001`); strings are left alone.
fn small_floats_in_exponent_form(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    let mut prev = '\n';
    while let Some((i, c)) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q && prev != '\\' {
                quote = None;
            }
            prev = c;
            continue;
        }
        let starts_number =
            (c.is_ascii_digit() || c == '-') && matches!(prev, ' ' | '[' | ',' | '=' | '\n');
        if c == '"' || c == '\'' {
            quote = Some(c);
        } else if starts_number {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_ascii_digit() || matches!(d, '.' | 'e' | 'E' | '+' | '-' | '_')) {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            let token = &text[i..end];
            let short = token
                .parse::<f64>()
                .ok()
                .filter(|v| token.contains('.') && *v != 0.0 && v.abs() < 1e-3)
                .map(|v| format!("{v:e}"))
                .filter(|s| s.parse::<f64>() == token.parse::<f64>());
            out.push_str(short.as_deref().unwrap_or(token));
            prev = token.chars().last().unwrap_or(c);
            continue;
        }
        out.push(c);
        prev = c;
    }
    out
}

/// Render the options of a config struct for `--help`: name, type, default, doc.
pub fn options_help<T: JsonSchema>(stage: &str) -> String {
    let schema = schemars::schema_for!(T);
    let root = schema.as_value();
    let mut out = format!(
        "Configuration (TOML; the top level of --config FILE, or the [{stage}] table of a site file; --set KEY=VALUE):\n"
    );
    render_properties(root, root, "", None, &mut out);
    out
}

fn resolve<'a>(root: &'a serde_json::Value, v: &'a serde_json::Value) -> &'a serde_json::Value {
    if let Some(r) = v.get("$ref").and_then(|r| r.as_str()) {
        let name = r.rsplit('/').next().unwrap_or_default();
        for defs in ["$defs", "definitions"] {
            if let Some(d) = root.get(defs).and_then(|d| d.get(name)) {
                return d;
            }
        }
    }
    if let Some(all) = v.get("allOf").and_then(|a| a.as_array())
        && all.len() == 1
    {
        return resolve(root, &all[0]);
    }
    v
}

fn type_name(root: &serde_json::Value, v: &serde_json::Value) -> String {
    let r = resolve(root, v);
    if let Some(e) = r.get("enum").and_then(|e| e.as_array()) {
        return e.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" | ");
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = r.get(key).and_then(|a| a.as_array()) {
            let names: Vec<String> = alts
                .iter()
                .filter(|a| a.get("type") != Some(&serde_json::Value::String("null".into())))
                .map(|a| {
                    let a = resolve(root, a);
                    if let Some(c) = a.get("const") {
                        c.to_string()
                    } else if let Some(e) = a.get("enum").and_then(|e| e.as_array()) {
                        e.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" | ")
                    } else if let Some(p) = a.get("properties").and_then(|p| p.as_object()) {
                        variant_table(root, p)
                    } else {
                        type_name(root, a)
                    }
                })
                .collect();
            return names.join(" | ");
        }
    }
    match r.get("type") {
        Some(serde_json::Value::String(t)) if t == "array" => {
            format!("[{}]", r.get("items").map(|i| type_name(root, i)).unwrap_or_default())
        }
        Some(serde_json::Value::String(t)) => t.clone(),
        Some(serde_json::Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str())
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" | "),
        _ if r.get("properties").is_some() => "table".into(),
        _ => "value".into(),
    }
}

/// A table alternative of a tagged enum: its tag with its value first (a property with
/// one allowed value), then its other keys, e.g. `{ method = "grid", keep, spacing = ... }`.
fn variant_table(
    root: &serde_json::Value,
    props: &serde_json::Map<String, serde_json::Value>,
) -> String {
    let fixed = |v: &serde_json::Value| {
        let v = resolve(root, v);
        v.get("const").cloned().or_else(|| {
            v.get("enum").and_then(|e| e.as_array()).filter(|e| e.len() == 1).map(|e| e[0].clone())
        })
    };
    let mut parts: Vec<String> =
        props.iter().filter_map(|(k, v)| fixed(v).map(|c| format!("{k} = {c}"))).collect();
    let rest: Vec<&str> =
        props.iter().filter(|(_, v)| fixed(v).is_none()).map(|(k, _)| k.as_str()).collect();
    if !rest.is_empty() {
        parts.push(format!("{} = ...", rest.join(", ")));
    }
    format!("{{ {} }}", parts.join(", "))
}

fn render_properties(
    root: &serde_json::Value,
    node: &serde_json::Value,
    prefix: &str,
    parent_default: Option<&serde_json::Value>,
    out: &mut String,
) {
    let node = resolve(root, node);
    let Some(props) = node.get("properties").and_then(|p| p.as_object()) else { return };
    for (name, p) in props {
        let key = format!("{prefix}{name}");
        let r = resolve(root, p);
        let doc = user_doc(
            &p.get("description")
                .or_else(|| r.get("description"))
                .and_then(|d| d.as_str())
                .unwrap_or("")
                .replace('\n', " "),
        );
        // The default of a nested option is the one its parent's default holds (the
        // pre- and post-event surveys share a type with different defaults).
        let value = parent_default.and_then(|d| d.get(name)).or_else(|| p.get("default"));
        let table = r.get("properties").is_some()
            && r.get("type") == Some(&serde_json::Value::String("object".into()));
        // A table's default is shown key by key below it.
        let default = value
            .filter(|_| !table)
            .map(|d| format!(" [default: {}]", toml_like(d)))
            .unwrap_or_default();
        out.push_str(&format!("  {key} ({}){default}\n", type_name(root, p)));
        if !doc.is_empty() {
            out.push_str(&format!("      {doc}\n"));
        }
        if table {
            render_properties(root, r, &format!("{key}."), value, out);
        }
    }
}

/// A doc comment as help text: rustdoc links to the code (`[`crate::solver::dense`]`)
/// mean nothing to a user and are dropped with their parentheses or `see`; other links
/// keep their text.
fn user_doc(doc: &str) -> String {
    let mut s = doc.to_string();
    while let Some(start) = s.find("[`crate::") {
        let Some(len) = s[start..].find("`]") else { break };
        let mut a = start;
        let mut b = start + len + 2;
        let before = &s[..a];
        if before.ends_with('(') && s[b..].starts_with(')') {
            a -= 1;
            b += 1;
        } else if let Some(stripped) = before.strip_suffix("see ") {
            a = stripped.trim_end_matches([';', ',', ' ']).len();
            if s[..a].ends_with('(') {
                // "(see [`crate::site`] for the equations)": the whole parenthesis.
                a -= 1;
                b += s[b..].find(')').map_or(0, |k| k + 1);
            }
        }
        let a = s[..a].trim_end().len();
        s.replace_range(a..b, "");
    }
    s.replace("[`", "`").replace("`]", "`")
}

fn toml_like(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "none".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_config_writes_small_floats_in_exponent_form() {
        let text = "tolerance = 0.000000001\nsizes = [0.0001, 0.5, 697000.0, -0.00025]\nname = \"0.000001\"\nn = 3\n";
        let out = small_floats_in_exponent_form(text);
        assert_eq!(
            out,
            "tolerance = 1e-9\nsizes = [1e-4, 0.5, 697000.0, -2.5e-4]\nname = \"0.000001\"\nn = 3\n"
        );
        let back: toml::Table = out.parse().unwrap();
        assert_eq!(back["tolerance"].as_float(), Some(1e-9));
        assert_eq!(back["sizes"][3].as_float(), Some(-2.5e-4));
    }

    #[test]
    fn rustdoc_links_are_not_shown() {
        assert_eq!(
            user_doc("solved exactly ([`crate::solver::dense`]), certified"),
            "solved exactly, certified"
        );
        assert_eq!(
            user_doc("E.g. `friction = { .. }`; see [`crate::solver::friction`]."),
            "E.g. `friction = { .. }`."
        );
        assert_eq!(user_doc("Shape (see [`crate::site`] for the equations)."), "Shape.");
        assert_eq!(
            user_doc("Default 4 ([`DENSE_MAX_BODIES`])."),
            "Default 4 (`DENSE_MAX_BODIES`)."
        );
    }

    #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Demo {
        /// Cell size, m.
        cell_size: f64,
        /// Classes kept.
        classes: Vec<u8>,
        inner: Inner,
        other: Inner,
    }
    #[derive(
        serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug, PartialEq, Default,
    )]
    #[serde(deny_unknown_fields, default)]
    struct Inner {
        /// Seed.
        seed: u64,
    }
    impl Default for Demo {
        fn default() -> Self {
            Demo {
                cell_size: 1.0,
                classes: vec![],
                inner: Inner::default(),
                other: Inner { seed: 7 },
            }
        }
    }

    #[test]
    fn help_lists_options_with_defaults_and_docs() {
        let h = options_help::<Demo>("demo");
        assert!(h.contains("cell_size (number) [default: 1.0]"), "{h}");
        assert!(h.contains("Cell size, m."), "{h}");
        assert!(h.contains("inner.seed"), "{h}");
        // A nested option's default is its parent's (the type's own default is 0).
        assert!(h.contains("inner.seed (integer) [default: 0]"), "{h}");
        assert!(h.contains("other.seed (integer) [default: 7]"), "{h}");
        assert!(h.contains("  other (table)\n") || h.contains("  other (object)\n"), "{h}");
    }
}
