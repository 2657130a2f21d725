//! Files written beside their destination and renamed into place, and the register of the
//! temporary files and directories being written, which a stopped process removes
//! ([`remove_in_flight`]).

use std::collections::BTreeSet;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{IoError, Result, os, without_temporary_name};

/// The temporary files and directories this process is writing (each [`InFlight`]'s path).
static IN_FLIGHT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn in_flight() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner())
}

/// A temporary file's or directory's entry in the register [`remove_in_flight`] empties,
/// taken out when dropped (after it was renamed into place or removed).
struct InFlight(PathBuf);

impl InFlight {
    /// Enter `path` in the register `set` (held by the caller while it creates the file or
    /// directory, so that a signal's clean-up never misses it).
    fn enter(set: &mut BTreeSet<PathBuf>, path: PathBuf) -> InFlight {
        set.insert(path.clone());
        InFlight(path)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        in_flight().remove(&self.0);
    }
}

/// Remove every temporary file this process is writing, and then every temporary
/// directory ([`TemporaryDir`]) left empty, for a process about to end on a signal
/// (SIGINT, SIGTERM, SIGHUP): the stage stops without leaving them behind. The register
/// stays locked afterwards, so no thread starts a new temporary file before the process
/// ends. Returns how many files and directories were removed.
pub fn remove_in_flight() -> usize {
    let set = in_flight();
    // The files first (a temporary file's path may be absolute and its directory's
    // relative, so their order in the set says nothing), then the directories they left
    // empty.
    let files = set.iter().filter(|p| std::fs::remove_file(p).is_ok()).count();
    let dirs = set.iter().filter(|p| std::fs::remove_dir(p).is_ok()).count();
    std::mem::forget(set);
    files + dirs
}

/// A directory being filled (e.g. a run's checkpoint segment before it is published),
/// registered with the files the caller will write in it, so that a process stopped by a
/// signal removes those files (finished or not), its temporary files, and then the
/// directory if that leaves it empty ([`remove_in_flight`]). Dropping the guard only
/// takes them out of the register: the directory is the caller's to rename or remove.
pub struct TemporaryDir {
    /// The directory's entry first, then its files'.
    registered: Vec<InFlight>,
}

impl TemporaryDir {
    /// Create `path` (and its parents) and register it, with the files `owned` (names in
    /// it) that the caller will write there.
    pub fn create(path: &Path, owned: &[&str]) -> Result<Self> {
        let mut set = in_flight();
        crate::error::create_dir(path)?;
        let registered = std::iter::once(path.to_path_buf())
            .chain(owned.iter().map(|name| path.join(name)))
            .map(|p| InFlight::enter(&mut set, p))
            .collect();
        Ok(TemporaryDir { registered })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.registered[0].0
    }
}

/// A file written beside its destination and renamed into place on [`AtomicFile::commit`].
/// Dropped without commit, the temporary file is removed and the destination is untouched.
pub struct AtomicFile {
    path: PathBuf,
    tmp: BufWriter<tempfile::NamedTempFile>,
    registered: InFlight,
}

impl AtomicFile {
    /// Start writing `path` (its directory is created if needed).
    pub fn create(path: &Path) -> Result<Self> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        crate::error::create_dir(&dir)?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // Created and registered while the register is held, so that a signal's clean-up
        // never misses it. (A rename needs no lock: a removal either precedes it, and the
        // rename fails in a process about to end, or follows it and finds nothing.)
        let mut set = in_flight();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(|e| IoError::Os {
                path: path.to_path_buf(),
                source: without_temporary_name(e),
            })?;
        let registered = InFlight::enter(&mut set, tmp.path().to_path_buf());
        drop(set);
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp: BufWriter::with_capacity(1 << 20, tmp),
            registered,
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush, sync and rename into place.
    pub fn commit(self) -> Result<()> {
        let AtomicFile { path, tmp, registered: _registered } = self;
        let tmp = tmp
            .into_inner()
            .map_err(|e| IoError::Os { path: path.clone(), source: e.into_error() })?;
        // A temporary file is created 0600; an output is an ordinary file (0644 less umask).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(os(&path))?;
        }
        tmp.as_file().sync_all().map_err(os(&path))?;
        tmp.persist(&path).map_err(|e| IoError::Os {
            path: path.clone(),
            source: without_temporary_name(e.error),
        })?;
        Ok(())
    }

    /// Write a whole byte buffer to `path` atomically.
    pub fn write_all(path: &Path, bytes: &[u8]) -> Result<()> {
        let mut f = AtomicFile::create(path)?;
        f.write_all(bytes).map_err(os(path))?;
        f.commit()
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.flush()
    }
}
