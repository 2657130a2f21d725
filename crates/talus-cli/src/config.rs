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
        print!("{}", toml::to_string_pretty(&cfg)?);
        return Ok(None);
    }
    Ok(Some(cfg))
}

/// Render the options of a config struct for `--help`: name, type, default, doc.
pub fn options_help<T: JsonSchema>(stage: &str) -> String {
    let schema = schemars::schema_for!(T);
    let root = schema.as_value();
    let mut out = format!(
        "Configuration (TOML; the top level of --config FILE, or the [{stage}] table of a site file; --set KEY=VALUE):\n"
    );
    render_properties(root, root, "", &mut out);
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
                        format!("{{ {} = ... }}", p.keys().cloned().collect::<Vec<_>>().join(", "))
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

fn render_properties(
    root: &serde_json::Value,
    node: &serde_json::Value,
    prefix: &str,
    out: &mut String,
) {
    let node = resolve(root, node);
    let Some(props) = node.get("properties").and_then(|p| p.as_object()) else { return };
    for (name, p) in props {
        let key = format!("{prefix}{name}");
        let r = resolve(root, p);
        let doc = p
            .get("description")
            .or_else(|| r.get("description"))
            .and_then(|d| d.as_str())
            .unwrap_or("")
            .replace('\n', " ");
        let default =
            p.get("default").map(|d| format!(" [default: {}]", toml_like(d))).unwrap_or_default();
        out.push_str(&format!("  {key} ({}){default}\n", type_name(root, p)));
        if !doc.is_empty() {
            out.push_str(&format!("      {doc}\n"));
        }
        if r.get("properties").is_some()
            && r.get("type") == Some(&serde_json::Value::String("object".into()))
        {
            render_properties(root, r, &format!("{key}."), out);
        }
    }
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

    #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Demo {
        /// Cell size, m.
        cell_size: f64,
        /// Classes kept.
        classes: Vec<u8>,
        inner: Inner,
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
            Demo { cell_size: 1.0, classes: vec![], inner: Inner::default() }
        }
    }

    #[test]
    fn help_lists_options_with_defaults_and_docs() {
        let h = options_help::<Demo>("demo");
        assert!(h.contains("cell_size (number) [default: 1.0]"), "{h}");
        assert!(h.contains("Cell size, m."), "{h}");
        assert!(h.contains("inner.seed"), "{h}");
    }
}
