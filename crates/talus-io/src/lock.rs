//! One writer per output: an advisory lock held for as long as a stage, the pipeline or a
//! calibration writes into a directory (or one output file), and the clean-up of the
//! temporary files that earlier, killed writers left there.
//!
//! The lock is `flock`-style (`std::fs::File::try_lock`) on a hidden file, `DIR/.talus.lock`
//! for a directory or `.NAME.talus.lock` beside an output file, holding the holder's pid;
//! the operating system releases it when the process ends, however it ends, so a killed
//! run never leaves a stale lock. A second process fails at once with an error naming the
//! holder's pid. Within one process a path already locked is not locked again (the
//! pipeline holds its directory while its stages lock theirs).

use crate::error::{IoError, Result, os};
use std::collections::BTreeSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Name of a directory's lock file.
pub const DIR_LOCK: &str = ".talus.lock";

/// Lock files held by this process (canonical paths).
static HELD: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// An exclusive lock on an output; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct OutputLock {
    /// `None` when this process already held the lock (re-entrant use).
    held: Option<(File, PathBuf)>,
    /// The directories [`OutputLock::directory`] created for it, deepest first. When the
    /// lock is released with nothing but the lock file in the directory (a stage refused
    /// before writing anything), the lock file and these directories are removed again.
    created: Vec<PathBuf>,
}

impl OutputLock {
    /// Lock the output directory `dir` (created if missing), then remove the temporary
    /// files earlier writers left in it ([`clean_stale_temporaries`]).
    pub fn directory(dir: &Path) -> Result<OutputLock> {
        let created: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
            .map(Path::to_path_buf)
            .collect();
        crate::error::create_dir(dir)?;
        let mut lock = Self::acquire(&dir.join(DIR_LOCK), dir)?;
        clean_stale_temporaries(dir)?;
        if lock.held.is_some() {
            lock.created = created;
        }
        Ok(lock)
    }

    /// Lock the output file `file` (its directory is created if missing), then remove
    /// the temporary files an earlier writer of it left beside it.
    pub fn file(file: &Path) -> Result<OutputLock> {
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        crate::error::create_dir(&dir)?;
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let lock = Self::acquire(&dir.join(format!(".{name}.talus.lock")), file)?;
        for e in std::fs::read_dir(&dir).map_err(os(&dir))?.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if is_temporary_of(&n, &name) && e.file_type().is_ok_and(|t| t.is_file()) {
                std::fs::remove_file(e.path()).map_err(os(&e.path()))?;
            }
        }
        Ok(lock)
    }

    fn acquire(lock_path: &Path, what: &Path) -> Result<OutputLock> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock_path)
            .map_err(os(lock_path))?;
        let key = lock_path.canonicalize().map_err(os(lock_path))?;
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        if held.contains(&key) {
            return Ok(OutputLock { held: None, created: Vec::new() });
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(IoError::Invalid {
                    path: what.to_path_buf(),
                    message: format!(
                        "in use by another talus process (pid {}); wait for it to finish, stop it, or write elsewhere",
                        if pid.is_empty() { "unknown" } else { pid }
                    ),
                });
            }
            Err(TryLockError::Error(e)) => return Err(os(lock_path)(e)),
        }
        file.set_len(0).map_err(os(lock_path))?;
        file.seek(SeekFrom::Start(0)).map_err(os(lock_path))?;
        writeln!(file, "{}", std::process::id()).map_err(os(lock_path))?;
        held.insert(key.clone());
        Ok(OutputLock { held: Some((file, key)), created: Vec::new() })
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        if let Some((file, key)) = self.held.take() {
            // Nothing written into a directory made for this lock: remove the lock file
            // (still holding it) and, once released, the directories.
            let bare = self.created.first().is_some_and(|dir| {
                std::fs::read_dir(dir).is_ok_and(|entries| {
                    let names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
                    names.len() == 1 && names[0] == DIR_LOCK
                })
            });
            let bare = bare && std::fs::remove_file(&key).is_ok();
            HELD.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
            let _ = file.unlock();
            drop(file);
            if bare {
                for dir in &self.created {
                    if std::fs::remove_dir(dir).is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// Whether `name` is one of Talus's temporary files: `.TARGET.XXXXXX.tmp` (Parquet and
/// atomic files, figures included) or `.TARGET.tmp.png` (figures of versions before
/// 2026-11-28, which plotters wrote under that name).
pub fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && (name.ends_with(".tmp") || name.ends_with(".tmp.png"))
}

fn is_temporary_of(name: &str, target: &str) -> bool {
    is_temporary(name)
        && (name.starts_with(&format!(".{target}.")) && name.len() > target.len() + 2)
}

/// Remove the temporary files left by killed writers in `dir` and its subdirectories.
/// Subdirectories locked by another process (a calibration member still running) are left
/// alone; only names of Talus's temporary files are removed ([`is_temporary`]).
pub fn clean_stale_temporaries(dir: &Path) -> Result<usize> {
    let mut removed = 0;
    for e in std::fs::read_dir(dir).map_err(os(dir))?.flatten() {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        let name = e.file_name().to_string_lossy().into_owned();
        if kind.is_dir() {
            let sub = path.join(DIR_LOCK);
            if sub.exists() {
                // Try the subdirectory's lock: held elsewhere means a writer is at work.
                match OutputLock::acquire(&sub, &path) {
                    Ok(_guard) => removed += clean_stale_temporaries(&path)?,
                    Err(_) => continue,
                }
            } else {
                removed += clean_stale_temporaries(&path)?;
            }
        } else if kind.is_file() && is_temporary(&name) {
            std::fs::remove_file(&path).map_err(os(&path))?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names() {
        assert!(is_temporary(".final.parquet.a1B2c3.tmp"));
        assert!(is_temporary(".dod.png.tmp.png"));
        assert!(!is_temporary("notes.tmp"));
        assert!(!is_temporary(".hidden"));
        assert!(is_temporary_of(".pre.parquet.x9Y8z7.tmp", "pre.parquet"));
        assert!(!is_temporary_of(".post.parquet.x9Y8z7.tmp", "pre.parquet"));
    }

    /// A directory made for the lock and left with nothing but the lock file (a stage
    /// refused before writing) is removed with the directories made above it; one with an
    /// output, or one that was there before, stays.
    #[test]
    fn a_directory_made_for_a_lock_and_left_bare_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("runs/site/diff");
        drop(OutputLock::directory(&deep).unwrap());
        assert!(!dir.path().join("runs").exists());
        // Within a held lock (the pipeline's), a stage's directory goes, the pipeline's stays
        // while it holds it and goes when it is released bare.
        let site = dir.path().join("runs/site");
        let outer = OutputLock::directory(&site).unwrap();
        drop(OutputLock::directory(&deep).unwrap());
        assert!(!deep.exists() && site.join(DIR_LOCK).exists());
        drop(outer);
        assert!(!dir.path().join("runs").exists());
        // Written into: kept, with its lock file.
        let lock = OutputLock::directory(&deep).unwrap();
        std::fs::write(deep.join("dod.parquet"), b"x").unwrap();
        drop(lock);
        assert!(deep.join("dod.parquet").exists() && deep.join(DIR_LOCK).exists());
        // There before: kept, even bare.
        let mine = dir.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        drop(OutputLock::directory(&mine).unwrap());
        assert!(mine.is_dir());
        // Locked again in the same process (re-entrant): the inner release removes nothing.
        let fresh = dir.path().join("fresh");
        let a = OutputLock::directory(&fresh).unwrap();
        drop(OutputLock::directory(&fresh).unwrap());
        assert!(fresh.join(DIR_LOCK).exists());
        drop(a);
        assert!(!fresh.exists());
    }

    #[test]
    fn reentrant_in_process_and_stale_files_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("out");
        std::fs::create_dir_all(d.join("figures")).unwrap();
        std::fs::write(d.join(".final.parquet.AbC123.tmp"), b"").unwrap();
        std::fs::write(d.join("figures/.dod.png.tmp.png"), b"").unwrap();
        std::fs::write(d.join("mine.tmp"), b"user").unwrap();
        let a = OutputLock::directory(&d).unwrap();
        assert!(!d.join(".final.parquet.AbC123.tmp").exists());
        assert!(!d.join("figures/.dod.png.tmp.png").exists());
        assert_eq!(std::fs::read(d.join("mine.tmp")).unwrap(), b"user");
        // The same process may lock it again (a stage inside the pipeline).
        let b = OutputLock::directory(&d).unwrap();
        drop(b);
        drop(a);
        let pid = std::fs::read_to_string(d.join(DIR_LOCK)).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
    }
}
