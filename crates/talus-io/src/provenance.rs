//! Where a file came from: the provenance written into every Parquet file's key-value
//! metadata (stage, version, effective configuration, hashed inputs, CRS), and the
//! SHA-256 of files.

use parquet::file::metadata::KeyValue;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::Crs;
use crate::error::{Result, os};

/// Metadata key: the stage that wrote the file (`ingest`, `diff`, ...).
pub const KEY_STAGE: &str = "talus:stage";
/// Metadata key: the version of the crate that wrote the file.
pub const KEY_VERSION: &str = "talus:version";
/// Metadata key: the effective configuration of the stage, as JSON.
pub const KEY_CONFIG: &str = "talus:config";
/// Metadata key: the input files, as a JSON array of `{name, sha256}`.
pub const KEY_INPUTS: &str = "talus:inputs";
/// Metadata key: the CRS as OGC WKT (when known).
pub const KEY_CRS_WKT: &str = "talus:crs_wkt";
/// Metadata key: the CRS as PROJJSON (when known).
pub const KEY_CRS_PROJJSON: &str = "talus:crs_projjson";

/// One input of a stage, as recorded in provenance: file name and content hash (the
/// directory is left out so that the same inputs give byte-identical outputs wherever
/// they live).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    pub name: String,
    pub sha256: String,
}

impl InputFile {
    /// Hash a file's content.
    pub fn hash(path: &Path) -> Result<Self> {
        Ok(InputFile {
            name: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            sha256: sha256_file(path)?,
        })
    }
}

/// Where a file came from: written into every Parquet file's key-value metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Stage name (`ingest`, `diff`, `terrain`, `seed`, `run`, `compare`, `synth`).
    pub stage: String,
    /// Version of the crate that wrote the file.
    pub version: String,
    /// The stage's effective configuration.
    pub config: serde_json::Value,
    /// Input files with their SHA-256.
    pub inputs: Vec<InputFile>,
    /// Coordinate reference system of the coordinates in the file.
    pub crs: Option<Crs>,
    /// Further stage-specific entries (e.g. the LAS header), written verbatim.
    pub extra: BTreeMap<String, String>,
}

impl Provenance {
    /// Provenance for `stage` written by a crate of `version` with `config`.
    pub fn new(stage: &str, version: &str, config: &impl Serialize) -> Self {
        Provenance {
            stage: stage.to_string(),
            version: version.to_string(),
            config: serde_json::to_value(config).unwrap_or(serde_json::Value::Null),
            ..Default::default()
        }
    }

    /// Add input files, hashing each.
    pub fn with_inputs<P: AsRef<Path>>(mut self, paths: &[P]) -> Result<Self> {
        for p in paths {
            self.inputs.push(InputFile::hash(p.as_ref())?);
        }
        Ok(self)
    }

    /// Set the CRS.
    pub fn with_crs(mut self, crs: Option<Crs>) -> Self {
        self.crs = crs;
        self
    }

    /// Add a verbatim metadata entry.
    pub fn with_extra(mut self, key: &str, value: impl Into<String>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// The key-value pairs to write, in a fixed order.
    pub fn key_values(&self) -> Vec<KeyValue> {
        let mut kv = vec![
            KeyValue::new(KEY_STAGE.to_string(), self.stage.clone()),
            KeyValue::new(KEY_VERSION.to_string(), self.version.clone()),
            KeyValue::new(KEY_CONFIG.to_string(), self.config.to_string()),
            KeyValue::new(
                KEY_INPUTS.to_string(),
                serde_json::to_string(&self.inputs).unwrap_or_default(),
            ),
        ];
        if let Some(crs) = &self.crs {
            if let Some(w) = &crs.wkt {
                kv.push(KeyValue::new(KEY_CRS_WKT.to_string(), w.clone()));
            }
            if let Some(p) = crs.projjson() {
                kv.push(KeyValue::new(KEY_CRS_PROJJSON.to_string(), p.to_string()));
            }
        }
        for (k, v) in &self.extra {
            kv.push(KeyValue::new(k.clone(), v.clone()));
        }
        kv
    }

    /// Read provenance back from a file's key-value metadata.
    pub fn from_metadata(meta: &BTreeMap<String, String>) -> Self {
        let crs_wkt = meta.get(KEY_CRS_WKT).cloned();
        let crs_epsg = meta
            .get(KEY_CRS_PROJJSON)
            .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
            .and_then(|v| v["id"]["code"].as_u64())
            .map(|c| c as u32);
        let crs = (crs_wkt.is_some() || crs_epsg.is_some())
            .then_some(Crs { wkt: crs_wkt, epsg: crs_epsg });
        let known = [KEY_STAGE, KEY_VERSION, KEY_CONFIG, KEY_INPUTS, KEY_CRS_WKT, KEY_CRS_PROJJSON];
        Provenance {
            stage: meta.get(KEY_STAGE).cloned().unwrap_or_default(),
            version: meta.get(KEY_VERSION).cloned().unwrap_or_default(),
            config: meta
                .get(KEY_CONFIG)
                .and_then(|c| serde_json::from_str(c).ok())
                .unwrap_or(serde_json::Value::Null),
            inputs: meta
                .get(KEY_INPUTS)
                .and_then(|c| serde_json::from_str(c).ok())
                .unwrap_or_default(),
            crs,
            extra: meta
                .iter()
                .filter(|(k, _)| !known.contains(&k.as_str()) && k.as_str() != "ARROW:schema")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

/// SHA-256 of a file's content, lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = BufReader::new(File::open(path).map_err(os(path))?);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(os(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// SHA-256 of bytes, lowercase hex (equal to [`sha256_file`] of a file holding them).
pub fn sha256_bytes(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}
