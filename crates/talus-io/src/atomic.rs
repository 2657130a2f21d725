//! Files written beside their destination and renamed into place, and the register of the
//! temporary files being written, which a stopped process removes
//! ([`remove_in_flight`]).

use std::collections::BTreeSet;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{IoError, Result, os, without_temporary_name};

/// The temporary files this process is writing (each [`InFlight`]'s path).
static IN_FLIGHT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn in_flight() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner())
}

/// A temporary file being written, in the register [`remove_in_flight`] empties; out of it
/// when dropped. Create it with [`InFlight::create`], so that the file never exists
/// unregistered, and rename it into place with [`InFlight::rename`].
#[derive(Debug)]
pub(crate) struct InFlight {
    path: PathBuf,
}

impl InFlight {
    /// Create a temporary file by `create`, which returns its path with what it made, and
    /// register the path, both while the register is held: a process stopped by a signal
    /// removes the file whenever this has returned.
    pub(crate) fn create<T, E>(
        create: impl FnOnce() -> std::result::Result<(PathBuf, T), E>,
    ) -> std::result::Result<(InFlight, T), E> {
        let mut set = in_flight();
        let (path, made) = create()?;
        set.insert(path.clone());
        Ok((InFlight { path }, made))
    }

    /// Rename the file into place by `rename` and take it out of the register, both while
    /// the register is held: [`remove_in_flight`] removes the temporary file or nothing.
    pub(crate) fn rename<T>(self, rename: impl FnOnce() -> T) -> T {
        let mut set = in_flight();
        let done = rename();
        set.remove(&self.path);
        done
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        in_flight().remove(&self.path);
    }
}

/// Remove every temporary file this process is writing, for a process about to end on a
/// signal (SIGINT, SIGTERM, SIGHUP): the stage stops without leaving them behind. The register
/// stays locked afterwards, so no thread starts a new temporary file or renames one into
/// place before the process ends. Returns how many files were removed.
pub fn remove_in_flight() -> usize {
    let set = in_flight();
    let removed = set.iter().filter(|p| std::fs::remove_file(p).is_ok()).count();
    std::mem::forget(set);
    removed
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
        let (registered, tmp) = InFlight::create(|| {
            let tmp = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(".tmp")
                .tempfile_in(&dir)
                .map_err(|e| IoError::Os {
                    path: path.to_path_buf(),
                    source: without_temporary_name(e),
                })?;
            Ok::<_, IoError>((tmp.path().to_path_buf(), tmp))
        })?;
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
        let AtomicFile { path, tmp, registered } = self;
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
        registered.rename(|| tmp.persist(&path)).map_err(|e| IoError::Os {
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
