//! A stage's options from TOML: a file (the stage's options at top level, or a site file
//! whose `[<stage>]` table holds them), then `KEY=VALUE` overrides, then serde with
//! `deny_unknown_fields` on the stage's config struct, so an unknown or mistyped key is
//! an error that names it.

use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// Errors while reading options.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("{path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: invalid TOML: {message}")]
    Toml { path: PathBuf, message: String },
    #[error("--set {0}: expected KEY=VALUE")]
    BadSet(String),
    #[error("--set {key}: `{segment}` is not a table")]
    NotATable { key: String, segment: String },
    #[error("configuration of `{stage}`{origin}: {message}")]
    Invalid { stage: String, origin: String, message: String },
}

/// Read a TOML file into a table.
pub fn read_toml(path: &Path) -> Result<toml::Table, OptionsError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| OptionsError::Read { path: path.to_path_buf(), source })?;
    text.parse::<toml::Table>()
        .map_err(|e| OptionsError::Toml { path: path.to_path_buf(), message: e.to_string() })
}

/// Apply `KEY=VALUE` overrides to a table; VALUE in TOML syntax (a value that is not
/// valid TOML is taken as a bare string), dotted keys reach nested tables.
pub fn apply_sets(table: &mut toml::Table, sets: &[String]) -> Result<(), OptionsError> {
    for s in sets {
        let (key, value) = s.split_once('=').ok_or_else(|| OptionsError::BadSet(s.clone()))?;
        let key = key.trim();
        let value: toml::Value = format!("v = {value}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        let mut parts: Vec<&str> = key.split('.').collect();
        let last =
            parts.pop().filter(|l| !l.is_empty()).ok_or_else(|| OptionsError::BadSet(s.clone()))?;
        let mut t = &mut *table;
        for p in parts {
            let entry =
                t.entry(p.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
            t = entry.as_table_mut().ok_or_else(|| OptionsError::NotATable {
                key: key.to_string(),
                segment: p.to_string(),
            })?;
        }
        t.insert(last.to_string(), value);
    }
    Ok(())
}

/// The table of options for `stage` from a file: a site file (it has a `[site]` table)
/// contributes its `[stage]` table, any other file is the stage's options at top level.
pub fn stage_table(file: toml::Table, stage: &str) -> toml::Table {
    if file.contains_key("site") {
        match file.get(stage) {
            Some(toml::Value::Table(t)) => t.clone(),
            _ => toml::Table::new(),
        }
    } else {
        file
    }
}

/// Deserialize a stage's config from a table; errors name the stage, `origin` (e.g.
/// ` (site.toml)`) and the key.
pub fn from_table<T: DeserializeOwned>(
    table: toml::Table,
    stage: &str,
    origin: &str,
) -> Result<T, OptionsError> {
    T::deserialize(toml::Value::Table(table)).map_err(|e| OptionsError::Invalid {
        stage: stage.to_string(),
        origin: origin.to_string(),
        // An option that takes one of several forms (an enum's table, e.g. a friction
        // law) given two of them: the toml crate's words say it of elements.
        message: e
            .to_string()
            .trim()
            .replace(
                "wanted exactly 1 element, more than 1 element",
                &format!(
                    "several of this option's forms where it takes one \
                     (`talus {stage} --help` lists them)"
                ),
            )
            .replace(
                "wanted exactly 1 element, found 0 elements",
                "an empty table where one of this option's forms is needed",
            ),
    })
}

/// A stage's configuration from an optional file and overrides.
pub fn load<T: DeserializeOwned>(
    file: Option<&Path>,
    sets: &[String],
    stage: &str,
) -> Result<T, OptionsError> {
    let (mut table, origin) = match file {
        Some(p) => (stage_table(read_toml(p)?, stage), format!(" ({})", p.display())),
        None => (toml::Table::new(), String::new()),
    };
    apply_sets(&mut table, sets)?;
    from_table(table, stage, &origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Demo {
        cell_size: f64,
        classes: Vec<u8>,
        inner: Inner,
    }
    #[derive(serde::Deserialize, Debug, PartialEq, Default)]
    #[serde(deny_unknown_fields, default)]
    struct Inner {
        seed: u64,
    }
    impl Default for Demo {
        fn default() -> Self {
            Demo { cell_size: 1.0, classes: vec![], inner: Inner::default() }
        }
    }

    #[test]
    fn sets_override_and_unknown_keys_are_named() {
        let mut t = toml::Table::new();
        apply_sets(
            &mut t,
            &["cell_size=0.5".into(), "classes=[2, 3]".into(), "inner.seed=7".into()],
        )
        .unwrap();
        let d: Demo = from_table(t, "demo", "").unwrap();
        assert_eq!(d, Demo { cell_size: 0.5, classes: vec![2, 3], inner: Inner { seed: 7 } });
        let mut t = toml::Table::new();
        apply_sets(&mut t, &["cel_size=0.5".into()]).unwrap();
        let e = from_table::<Demo>(t, "demo", "").unwrap_err().to_string();
        assert!(e.contains("cel_size"), "{e}");
        let mut t = toml::Table::new();
        assert!(matches!(apply_sets(&mut t, &["novalue".into()]), Err(OptionsError::BadSet(_))));
        apply_sets(&mut t, &["cell_size=1".into()]).unwrap();
        let e = apply_sets(&mut t, &["cell_size.x=1".into()]).unwrap_err();
        assert!(matches!(e, OptionsError::NotATable { .. }), "{e}");
    }

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "snake_case", deny_unknown_fields)]
    enum Law {
        Coulomb(f64),
        Voellmy { mu: f64 },
    }
    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct WithLaw {
        law: Law,
    }

    /// An option of several forms given two, or none, says so and points to the help.
    #[test]
    fn an_option_of_several_forms_given_two_or_none_says_so() {
        let t: toml::Table = "law = { voellmy = { mu = 0.3 } }".parse().unwrap();
        assert_eq!(from_table::<WithLaw>(t, "run", "").unwrap().law, Law::Voellmy { mu: 0.3 });
        for (text, says) in [
            (
                "law = { coulomb = 0.5, voellmy = { mu = 0.3 } }",
                "several of this option's forms where it takes one (`talus run --help` lists them)",
            ),
            ("law = {}", "an empty table where one of this option's forms is needed"),
        ] {
            let t: toml::Table = text.parse().unwrap();
            let e = from_table::<WithLaw>(t, "run", " (site.toml)").unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("law") && e.contains("site.toml"), "{e}");
        }
    }

    #[test]
    fn site_file_section_is_used() {
        let file: toml::Table = "[site]\nname='x'\n[demo]\ncell_size = 2.0\n".parse().unwrap();
        let d: Demo = from_table(stage_table(file, "demo"), "demo", "").unwrap();
        assert_eq!(d.cell_size, 2.0);
        let file: toml::Table = "cell_size = 3.0\n".parse().unwrap();
        let d: Demo = from_table(stage_table(file, "demo"), "demo", "").unwrap();
        assert_eq!(d.cell_size, 3.0);
    }
}
