//! What a process stopped by a signal removes ([`talus_io::atomic::remove_in_flight`]).
//! Its own test binary: the register stays locked after the call, as in a process about
//! to end.

use std::io::Write;
use talus_io::AtomicFile;
use talus_io::atomic::{TemporaryDir, remove_in_flight};

#[test]
fn a_stopped_process_removes_its_temporary_files_and_its_unpublished_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // A user's file beside the outputs, and one inside the directory being filled whose
    // name the caller did not claim.
    std::fs::write(root.join("notes.txt"), "mine").unwrap();
    // A segment whose first file is finished (renamed into place) and whose second is
    // being written: the moment before it would be published.
    let segment =
        TemporaryDir::create(&root.join(".segment_1"), &["a.parquet", "b.parquet"]).unwrap();
    AtomicFile::write_all(&segment.path().join("a.parquet"), b"finished").unwrap();
    let mut b = AtomicFile::create(&segment.path().join("b.parquet")).unwrap();
    b.write_all(b"half").unwrap();
    // A second segment holding a file the caller did not claim: only that file stays.
    let kept = TemporaryDir::create(&root.join(".segment_2"), &["a.parquet"]).unwrap();
    std::fs::write(kept.path().join("user.txt"), "mine too").unwrap();
    AtomicFile::write_all(&kept.path().join("a.parquet"), b"finished").unwrap();
    // An output being written outside any segment.
    let mut out = AtomicFile::create(&root.join("final.parquet")).unwrap();
    out.write_all(b"half").unwrap();

    let removed = remove_in_flight();
    // The process would end here: the guards are not dropped (their drop waits for the
    // register, which stays locked), also when an assertion below fails.
    std::mem::forget((segment, kept, b, out));
    // Removed: b's and final's temporary files, .segment_1/a.parquet, .segment_1,
    // .segment_2/a.parquet (.segment_2 is not empty, so it stays).
    assert_eq!(removed, 5);

    let mut left: Vec<String> = walk(root)
        .into_iter()
        .map(|p| p.strip_prefix(root).unwrap().display().to_string())
        .collect();
    left.sort();
    assert_eq!(left, [".segment_2", ".segment_2/user.txt", "notes.txt"]);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        all.push(p.clone());
        if p.is_dir() {
            all.extend(walk(&p));
        }
    }
    all
}
