//! The on-disk output store: content-addressed files, atomic writes, and an age-based sweep.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tackle_core::{ManagedRef, OutputStore, RetentionError};

/// How long retained outputs are kept by default: 7 days.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Prefix of in-flight temporary files; never a valid hash name. A write that crashed leaves one
/// behind, which the sweep deletes once it is older than the maximum age.
const TEMP_PREFIX: &str = ".tackle-tmp-";

/// Keeps complete outputs as files named by the blake3 hash of their bytes.
///
/// Cloning is cheap and yields a handle to the same directory.
#[derive(Clone, Debug)]
pub struct FsOutputStore {
    dir: PathBuf,
}

/// What one [`FsOutputStore::sweep`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Retained outputs deleted because they were older than the maximum age.
    pub deleted: usize,
    /// Retained outputs kept because they were young enough.
    pub kept: usize,
    /// Temporary files left by interrupted writes, deleted because they were older than the
    /// maximum age. Younger ones may be writes in progress; they are left alone and not counted.
    pub abandoned: usize,
}

impl FsOutputStore {
    /// Opens a store in `dir`, creating the directory (and its parents) if needed.
    ///
    /// A relative `dir` is made absolute, because the paths in a [`ManagedRef`] are shown to the
    /// model and to the host, which may not share this process's working directory.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, RetentionError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|e| io_error("cannot create", &dir, &e))?;
        let dir = std::path::absolute(&dir).map_err(|e| io_error("cannot resolve", &dir, &e))?;
        Ok(Self { dir })
    }

    /// The default directory: the platform data directory joined with `tackle/tool-output`
    /// (for example `$XDG_DATA_HOME/tackle/tool-output`). `None` when the platform has none.
    pub fn default_dir() -> Option<PathBuf> {
        crate::data_path("tool-output")
    }

    /// Deletes retained outputs, and temporary files left by interrupted writes, whose
    /// modification time is more than `max_age` ago.
    ///
    /// Only regular files named by 64 lowercase hex digits or starting with the store's
    /// temporary prefix are considered; everything else in the directory is left alone and not
    /// counted. A write still in progress keeps its temporary file young, so `max_age` should
    /// exceed the longest write. Files that vanish mid-sweep (another process sweeping the same
    /// directory) are not an error. This blocks on file system IO.
    pub fn sweep(&self, max_age: Duration) -> io::Result<SweepReport> {
        let now = SystemTime::now();
        let mut report = SweepReport::default();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let temporary = match entry.file_name().to_str() {
                Some(name) if is_hash_name(name) => false,
                Some(name) if name.starts_with(TEMP_PREFIX) => true,
                _ => continue,
            };
            // `DirEntry::metadata` does not follow symlinks, so a link is never a regular file.
            let metadata = match entry.metadata() {
                Ok(metadata) => metadata,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if !metadata.is_file() {
                continue;
            }
            // A modification time in the future yields an error here: treat it as young.
            let age = now.duration_since(metadata.modified()?).unwrap_or_default();
            if age <= max_age {
                report.kept += usize::from(!temporary);
                continue;
            }
            match std::fs::remove_file(entry.path()) {
                Ok(()) if temporary => report.abandoned += 1,
                Ok(()) => report.deleted += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(report)
    }
}

impl OutputStore for FsOutputStore {
    fn retain(&self, bytes: Bytes) -> BoxFuture<'static, Result<ManagedRef, RetentionError>> {
        let dir = self.dir.clone();
        // `bytes` is shared with the caller, not copied, and dropped once it is on disk.
        Box::pin(async move {
            // Hashing and writing block; keep them off the async workers when there is a tokio
            // runtime, and run inline under any other executor.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => runtime
                    .spawn_blocking(move || retain_blocking(&dir, &bytes))
                    .await
                    .map_err(|e| RetentionError(format!("the retention task failed: {e}")))?,
                Err(_) => retain_blocking(&dir, &bytes),
            }
        })
    }

    fn directory(&self) -> Option<&Path> {
        Some(&self.dir)
    }
}

/// Writes `bytes` under their hash in `dir`, or refreshes an existing identical file.
///
/// The hash comes first, so an identical output is never written twice.
fn retain_blocking(dir: &Path, bytes: &[u8]) -> Result<ManagedRef, RetentionError> {
    let id = content_hash(bytes);
    let path = dir.join(&id);
    let size = bytes.len() as u64;
    if !refresh_existing(&path, size).map_err(|e| io_error("cannot reuse output in", dir, &e))? {
        let write_error = |e: io::Error| io_error("cannot write to", dir, &e);
        let temp = write_temp(dir, bytes).map_err(write_error)?;
        // On failure the returned temporary file is dropped, which deletes it.
        temp.persist(&path).map_err(|e| write_error(e.error))?;
    }
    Ok(ManagedRef {
        id,
        path,
        bytes: size,
    })
}

/// Above this size, hashing is split across threads: large outputs are hashed on every core.
const PARALLEL_HASH_THRESHOLD: usize = 1024 * 1024;

/// The lowercase blake3 hex of `bytes`, the output's name in the store.
fn content_hash(bytes: &[u8]) -> String {
    let mut hasher = blake3::Hasher::new();
    if bytes.len() >= PARALLEL_HASH_THRESHOLD {
        hasher.update_rayon(bytes);
    } else {
        hasher.update(bytes);
    }
    hasher.finalize().to_hex().to_string()
}

/// If `path` already holds an output of `size` bytes, sets its modification time to now and
/// returns true. A file of another size is corrupt, and is replaced by the caller.
fn refresh_existing(path: &Path, size: u64) -> io::Result<bool> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() || metadata.len() != size {
        return Ok(false);
    }
    file.set_modified(SystemTime::now())?;
    Ok(true)
}

/// Writes `bytes` to a new temporary file in `dir`, to be renamed into place.
fn write_temp(dir: &Path, bytes: &[u8]) -> io::Result<tempfile::NamedTempFile> {
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.flush()?;
    Ok(temp)
}

/// True for a name made of exactly 64 lowercase hex digits: a blake3 hash.
fn is_hash_name(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// An operator-facing retention error naming the directory and the OS error.
fn io_error(action: &str, dir: &Path, error: &io::Error) -> RetentionError {
    RetentionError(format!(
        "{action} output directory {}: {error}",
        dir.display()
    ))
}

#[cfg(test)]
mod tests;
