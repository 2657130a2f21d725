//! Files written beside their destination and renamed into place.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{IoError, Result, os, without_temporary_name};

/// A file written beside its destination and renamed into place on [`AtomicFile::commit`].
/// Dropped without commit, the temporary file is removed and the destination is untouched.
pub struct AtomicFile {
    path: PathBuf,
    tmp: BufWriter<tempfile::NamedTempFile>,
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
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(|e| IoError::Os {
                path: path.to_path_buf(),
                source: without_temporary_name(e),
            })?;
        Ok(AtomicFile { path: path.to_path_buf(), tmp: BufWriter::with_capacity(1 << 20, tmp) })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush, sync and rename into place.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let tmp = self
            .tmp
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
