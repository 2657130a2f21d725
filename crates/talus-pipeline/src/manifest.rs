//! `OUT/manifest.json`: per stage, the command, its effective configuration, the SHA-256
//! of its inputs and outputs, the talus version and executable hash, wall time and
//! status. A stage whose record matches (same command, configuration, inputs, version
//! and executable, outputs still with their recorded hashes) is skipped.

use crate::Error;
use crate::stage::StageName;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A file and its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hashed {
    pub path: String,
    pub sha256: String,
}

/// How a stage ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// It ran and wrote its outputs.
    Ran,
    /// Its inputs, configuration and outputs were unchanged: not run again.
    Skipped,
    /// It failed (the record's `error` says why).
    Failed,
}

impl std::fmt::Display for StageStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StageStatus::Ran => "ran",
            StageStatus::Skipped => "skipped",
            StageStatus::Failed => "failed",
        })
    }
}

/// A stage's record in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageRecord {
    /// The stage (`ingest_pre`, ...).
    pub stage: String,
    /// The equivalent command line.
    pub command: Vec<String>,
    /// The stage's effective configuration (its typed options, defaults included).
    pub config: serde_json::Value,
    pub inputs: Vec<Hashed>,
    pub outputs: Vec<Hashed>,
    pub talus_version: String,
    /// SHA-256 of the talus executable that ran the stage.
    pub executable_sha256: String,
    /// Wall time of the stage's last actual run, s.
    pub wall_time_s: f64,
    pub status: StageStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl StageRecord {
    /// Whether `self` (a previous record) lets the stage described by `now` be skipped.
    pub fn allows_skipping(&self, now: &StageRecord) -> bool {
        matches!(self.status, StageStatus::Ran | StageStatus::Skipped)
            && self.command == now.command
            && self.config == now.config
            && self.inputs == now.inputs
            && self.talus_version == now.talus_version
            && self.executable_sha256 == now.executable_sha256
            && !self.outputs.is_empty()
            && self
                .outputs
                .iter()
                .all(|o| talus_io::sha256_file(Path::new(&o.path)).is_ok_and(|h| h == o.sha256))
    }
}

/// `OUT/manifest.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub site: String,
    pub site_file: String,
    pub site_sha256: String,
    pub talus_version: String,
    pub stages: Vec<StageRecord>,
    /// The report, when the pipeline completed.
    #[serde(default)]
    pub report: Option<String>,
}

impl Manifest {
    /// A manifest with no stage yet.
    pub fn new(site: &crate::Site) -> Self {
        Manifest {
            site: site.name().to_string(),
            site_file: site.path.to_string_lossy().into_owned(),
            site_sha256: site.sha256.clone(),
            talus_version: env!("CARGO_PKG_VERSION").to_string(),
            stages: Vec::new(),
            report: None,
        }
    }

    /// The manifest at `path`, or an empty one when there is none or it does not parse
    /// (then nothing is skipped).
    pub fn read_or_default(path: &Path) -> Self {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Write atomically.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Output { path: path.to_path_buf(), message: e.to_string() })?;
        talus_io::AtomicFile::write_all(path, text.as_bytes())?;
        Ok(())
    }

    /// The record of `stage`, if any.
    pub fn record(&self, stage: StageName) -> Option<&StageRecord> {
        self.stages.iter().find(|r| r.stage == stage.as_str())
    }

    /// Stages that ran (not skipped) in this manifest.
    pub fn ran(&self) -> usize {
        self.stages.iter().filter(|s| s.status == StageStatus::Ran).count()
    }
}

/// Hash `files`.
pub fn hash_files(files: &[PathBuf]) -> Result<Vec<Hashed>, talus_io::IoError> {
    files
        .iter()
        .map(|f| {
            Ok(Hashed { path: f.to_string_lossy().into_owned(), sha256: talus_io::sha256_file(f)? })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_written_as_before() {
        for (s, t) in [
            (StageStatus::Ran, "ran"),
            (StageStatus::Skipped, "skipped"),
            (StageStatus::Failed, "failed"),
        ] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{t}\""));
            assert_eq!(s.to_string(), t);
        }
    }

    #[test]
    fn a_record_allows_skipping_only_when_everything_matches() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("o.txt");
        std::fs::write(&out, "x").unwrap();
        let rec = StageRecord {
            stage: "diff".into(),
            command: vec!["talus".into(), "diff".into()],
            config: serde_json::json!({"cell": 1.0}),
            inputs: vec![],
            outputs: hash_files(std::slice::from_ref(&out)).unwrap(),
            talus_version: "0".into(),
            executable_sha256: "e".into(),
            wall_time_s: 1.0,
            status: StageStatus::Ran,
            error: None,
        };
        let now = StageRecord { outputs: vec![], wall_time_s: 0.0, ..rec.clone() };
        assert!(rec.allows_skipping(&now));
        let other = StageRecord { config: serde_json::json!({"cell": 2.0}), ..now.clone() };
        assert!(!rec.allows_skipping(&other));
        let failed = StageRecord { status: StageStatus::Failed, ..rec.clone() };
        assert!(!failed.allows_skipping(&now));
        std::fs::write(&out, "changed").unwrap();
        assert!(!rec.allows_skipping(&now));
    }
}
