//! While `talus calibrate` runs its members, each reports its stages' progress on a line
//! of its own: `Progress::child("member I")` is asked once per member, and the member's
//! stages (its run's steps among them) report to that child, not to the main line.

use std::sync::Mutex;
use talus_io::Progress;

/// The end-to-end calibration test's site: a reduced synthetic site, run for 12 steps.
const SITE: &str = include_str!("../../../data/fixtures/small-calibration-site.toml");

/// Records every phase started, by line.
#[derive(Default)]
struct Recorder {
    label: String,
    log: std::sync::Arc<Mutex<Vec<(String, String, u64)>>>,
}

impl Progress for Recorder {
    fn start(&self, phase: &str, len: u64) {
        self.log.lock().unwrap().push((self.label.clone(), phase.to_string(), len));
    }
    fn child(&self, label: &str) -> Box<dyn Progress + Send> {
        Box::new(Recorder { label: label.to_string(), log: self.log.clone() })
    }
}

#[test]
fn every_member_reports_on_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let site_path = dir.path().join("site.toml");
    std::fs::write(&site_path, SITE).unwrap();
    let site = talus_pipeline::Site::load(&site_path).unwrap();
    let ensemble = talus_calibrate::Ensemble::new(site, &dir.path().join("cal")).unwrap();
    let rec = Recorder { label: "main".into(), ..Recorder::default() };
    let ctx = talus_pipeline::Context { progress: &rec, log: &|_| {} };
    ensemble.prepare(false, &ctx).unwrap();
    rec.log.lock().unwrap().clear();
    ensemble.run_members(2, false, &ctx).unwrap();
    let log = rec.log.lock().unwrap().clone();
    for m in ["member 0", "member 1", "member 2", "member 3"] {
        let phases: Vec<&(String, String, u64)> = log.iter().filter(|(l, _, _)| l == m).collect();
        // The run stage's steps are counted on the member's line (12 steps).
        assert!(
            phases.iter().any(|(_, p, len)| p.contains("run") && *len == 12),
            "{m}: {phases:?}"
        );
    }
    assert!(log.iter().all(|(l, _, _)| l != "main"), "members report on their own lines: {log:?}");
}
