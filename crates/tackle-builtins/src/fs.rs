//! The Location filesystem service: path resolution, per-path locks and compare-and-swap writes.
//!
//! Every file tool goes through one [`LocationFs`] per Location. [`LocationFs::resolve`] turns
//! what the model typed into a canonical path, refusing relative escapes and symlink escapes and
//! naming the `external_directory` scope for absolute paths outside the root. Writes commit only
//! when the file still holds the bytes the tool planned against, through a temporary file in the
//! target's own directory renamed into place, so a reader never sees a half-written file, the mode
//! survives, and a symlink is written through rather than replaced.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex as StdMutex};

use tackle_permission::{TargetKind, external_directory_pattern, resolve_in_location};
use tokio::sync::{Mutex, OwnedMutexGuard};

mod tracking;

pub use tracking::{ReadTracker, StaleRead};

#[cfg(test)]
mod tests;

/// A path resolved against the Location root by [`LocationFs::resolve`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Resolved {
    /// The canonical path where it exists; for a missing path, the canonical nearest existing
    /// ancestor joined with the missing tail.
    pub path: PathBuf,
    /// The path relative to the Location root with `/` separators (`.` for the root itself), or
    /// `None` when it lies outside.
    pub relative: Option<String>,
    /// The `<dir>/*` pattern to ask `external_directory` for when the path lies outside the root.
    pub external_directory: Option<String>,
    /// Whether the path existed when it was resolved.
    pub exists: bool,
}

impl Resolved {
    /// The name to show the model: Location-relative when internal, absolute otherwise.
    pub fn display_name(&self) -> String {
        match &self.relative {
            Some(relative) => relative.clone(),
            None => self.path.to_string_lossy().into_owned(),
        }
    }
}

/// What a successful write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteReport {
    /// Bytes now in the file.
    pub bytes_written: u64,
    /// True when the file did not exist before.
    pub created: bool,
}

/// How a file differed from what a compare-and-swap expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// The file exists but holds other bytes.
    Modified,
    /// The file was expected to be missing but now exists.
    Appeared,
    /// The file was expected to exist but is gone.
    Disappeared,
}

/// A filesystem failure, worded for the model: what happened, then what to do.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The nearest existing ancestor of a missing path is not a directory.
    #[error(
        "`{ancestor}` is a file, not a directory, so `{path}` cannot exist below it. Choose a \
         different path."
    )]
    NotADirectory {
        /// The missing path.
        path: String,
        /// Its nearest existing ancestor, which is not a directory.
        ancestor: String,
    },
    /// A symlink whose target does not exist.
    #[error(
        "`{path}` is a symlink to a target that does not exist. Fix or remove the link, or write \
         to the target path directly."
    )]
    DanglingSymlink {
        /// The link.
        path: String,
    },
    /// The file does not exist.
    #[error("`{path}` does not exist. Check the path, for example by listing its directory.")]
    NotFound {
        /// The missing path.
        path: String,
    },
    /// The path names a directory where a file was needed.
    #[error("`{path}` is a directory, not a file. Name a file inside it instead.")]
    IsADirectory {
        /// The directory.
        path: String,
    },
    /// Compare-and-swap refused: the file is not what the tool planned against.
    #[error("{}", changed_message(path, *kind))]
    Changed {
        /// The file.
        path: String,
        /// How it differs.
        kind: ChangeKind,
    },
    /// Any other I/O failure.
    #[error(
        "Could not {action} `{path}`: {source}. Nothing was changed; check the path and retry."
    )]
    Io {
        /// What was being done, as a verb phrase.
        action: &'static str,
        /// The path involved.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}

fn changed_message(path: &str, kind: ChangeKind) -> String {
    let what = match kind {
        ChangeKind::Modified => "changed on disk",
        ChangeKind::Appeared => "was created by someone else",
        ChangeKind::Disappeared => "was deleted",
    };
    format!(
        "`{path}` {what} after you planned this change, so nothing was written. Read it again, then retry."
    )
}

/// The filesystem service of one Location. Cheap to clone; clones share the lock table.
#[derive(Clone)]
pub struct LocationFs {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    root_str: String,
    locks: StdMutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
    /// Test hook: fail every write after its temporary file is written.
    #[cfg(test)]
    fail_after_temp: std::sync::atomic::AtomicBool,
}

impl fmt::Debug for LocationFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocationFs")
            .field("root", &self.inner.root)
            .finish()
    }
}

impl LocationFs {
    /// Creates the service for the Location at `root`, which must exist; it is canonicalized.
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root.into())?;
        let root_str = slashed(&root);
        Ok(Self {
            inner: Arc::new(Inner {
                root,
                root_str,
                locks: StdMutex::new(HashMap::new()),
                #[cfg(test)]
                fail_after_temp: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The canonical Location root.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Resolves `path` as the model gave it: relative paths join the root, absolute ones stay.
    ///
    /// Whatever lands outside the root, whether by an absolute path, by climbing out with `..`,
    /// or through a symlink inside the root that leads outside, comes back external: `relative`
    /// is `None` and `external_directory` names the scope of the *real* location to ask for. A
    /// missing path is anchored at its nearest existing ancestor, which must be a directory.
    pub async fn resolve(&self, path: &str) -> Result<Resolved, FsError> {
        let this = self.clone();
        let path = path.to_owned();
        blocking(move || this.resolve_blocking(&path)).await
    }

    fn resolve_blocking(&self, given: &str) -> Result<Resolved, FsError> {
        let lexical = resolve_in_location(&self.inner.root_str, given);
        let shown = lexical
            .relative_to_root
            .clone()
            .unwrap_or_else(|| lexical.absolute.clone());
        let absolute = PathBuf::from(&lexical.absolute);

        let (canonical, exists, is_dir) = match std::fs::canonicalize(&absolute) {
            Ok(canonical) => {
                let is_dir = canonical.is_dir();
                (canonical, true, is_dir)
            }
            Err(_) if absolute.symlink_metadata().is_ok() => {
                return Err(FsError::DanglingSymlink { path: shown });
            }
            Err(_) => (anchor_missing(&absolute, &shown)?, false, false),
        };

        let canonical_str = slashed(&canonical);
        // Containment is judged on the real path, so `..` and symlinks cannot hide an escape.
        let relative = resolve_in_location(&self.inner.root_str, &canonical_str).relative_to_root;
        let external_directory = relative.is_none().then(|| {
            let kind = if is_dir {
                TargetKind::Directory
            } else {
                TargetKind::File
            };
            external_directory_pattern(&canonical_str, kind)
        });
        Ok(Resolved {
            path: canonical,
            relative,
            external_directory,
            exists,
        })
    }

    /// Takes the lock of `target`'s canonical path, waiting for any other holder.
    ///
    /// Mutating tools hold it across read, plan and write so concurrent edits of one file
    /// serialize. The lock is not reentrant: while holding a guard, write through the guard.
    pub async fn lock(&self, target: &Resolved) -> PathGuard {
        let mutex = {
            let mut locks = self.inner.locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(target.path.clone()).or_default().clone()
        };
        let guard = mutex.lock_owned().await;
        PathGuard {
            fs: self.clone(),
            target: target.clone(),
            guard: Some(guard),
        }
    }

    /// Locks several targets at once, in a fixed order so two callers cannot deadlock. Duplicate
    /// canonical paths are locked once; the guards come back in canonical-path order.
    pub async fn lock_many(&self, targets: &[&Resolved]) -> Vec<PathGuard> {
        let mut sorted: Vec<&Resolved> = targets.to_vec();
        sorted.sort_by(|a, b| a.path.cmp(&b.path));
        sorted.dedup_by(|a, b| a.path == b.path);
        let mut guards = Vec::with_capacity(sorted.len());
        for target in sorted {
            guards.push(self.lock(target).await);
        }
        guards
    }

    /// Reads the whole file, without taking its lock.
    pub async fn read_bytes(&self, target: &Resolved) -> Result<Vec<u8>, FsError> {
        let path = target.path.clone();
        let name = target.display_name();
        blocking(move || match read_current(&path, &name)? {
            Some(bytes) => Ok(bytes),
            None => Err(FsError::NotFound { path: name }),
        })
        .await
    }

    /// Takes the lock, then writes `new` only if the file still holds `expected` (`None`: the
    /// file must not exist). See [`PathGuard::write_if_unchanged`].
    pub async fn write_if_unchanged(
        &self,
        target: &Resolved,
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> Result<WriteReport, FsError> {
        self.lock(target)
            .await
            .write_if_unchanged(expected, new)
            .await
    }

    /// Takes the lock, then deletes the file only if it still holds `expected`.
    pub async fn delete_if_unchanged(
        &self,
        target: &Resolved,
        expected: &[u8],
    ) -> Result<(), FsError> {
        self.lock(target).await.delete_if_unchanged(expected).await
    }

    /// Takes both locks, then moves `from` to `to` only if `from` still holds `expected` and `to`
    /// does not exist. Parent directories of `to` are created.
    pub async fn rename_if_unchanged(
        &self,
        from: &Resolved,
        expected: &[u8],
        to: &Resolved,
    ) -> Result<(), FsError> {
        let guards = self.lock_many(&[from, to]).await;
        let from_guard = guards
            .iter()
            .find(|g| g.target.path == from.path)
            .expect("locked above");
        let to_guard = guards
            .iter()
            .find(|g| g.target.path == to.path)
            .expect("locked above");
        from_guard.rename_if_unchanged(expected, to_guard).await
    }

    fn unlock(&self, path: &Path) {
        let mut locks = self.inner.locks.lock().unwrap_or_else(|e| e.into_inner());
        // Only the table holds it once every guard and waiter is gone.
        if locks.get(path).is_some_and(|m| Arc::strong_count(m) == 1) {
            locks.remove(path);
        }
    }

    #[cfg(test)]
    fn lock_table_len(&self) -> usize {
        self.inner.locks.lock().unwrap().len()
    }

    fn fail_after_temp(&self) -> bool {
        #[cfg(test)]
        {
            self.inner
                .fail_after_temp
                .load(std::sync::atomic::Ordering::SeqCst)
        }
        #[cfg(not(test))]
        {
            false
        }
    }
}

/// The held lock of one canonical path. Mutate the file through it; dropping it unlocks.
#[derive(Debug)]
pub struct PathGuard {
    fs: LocationFs,
    target: Resolved,
    guard: Option<OwnedMutexGuard<()>>,
}

impl PathGuard {
    /// The locked target.
    pub fn target(&self) -> &Resolved {
        &self.target
    }

    /// Reads the whole locked file.
    pub async fn read_bytes(&self) -> Result<Vec<u8>, FsError> {
        self.fs.read_bytes(&self.target).await
    }

    /// Writes `new` only if the file still holds exactly `expected` (`None`: it must not exist),
    /// else [`FsError::Changed`] and nothing is written.
    ///
    /// The bytes go to a temporary file in the target's directory, are synced, get the old mode,
    /// and are renamed over the target; a failure leaves the target intact and no temporary file.
    /// The target is canonical, so a symlink is written through and stays a link. Missing parent
    /// directories of a new file are created.
    pub async fn write_if_unchanged(
        &self,
        expected: Option<&[u8]>,
        new: &[u8],
    ) -> Result<WriteReport, FsError> {
        let path = self.target.path.clone();
        let name = self.target.display_name();
        let expected = expected.map(<[u8]>::to_vec);
        let new = new.to_vec();
        let fail = self.fs.fail_after_temp();
        blocking(move || {
            check_unchanged(&path, &name, expected.as_deref())?;
            atomic_write(&path, &name, &new, fail)?;
            Ok(WriteReport {
                bytes_written: new.len() as u64,
                created: expected.is_none(),
            })
        })
        .await
    }

    /// Deletes the file only if it still holds exactly `expected`.
    pub async fn delete_if_unchanged(&self, expected: &[u8]) -> Result<(), FsError> {
        let path = self.target.path.clone();
        let name = self.target.display_name();
        let expected = expected.to_vec();
        blocking(move || {
            check_unchanged(&path, &name, Some(&expected))?;
            std::fs::remove_file(&path).map_err(|source| io_error("delete", &name, source))
        })
        .await
    }

    /// Moves this file to the target of `to` (whose lock the caller also holds) only if this file
    /// still holds `expected` and `to` does not exist. Parent directories of `to` are created.
    pub async fn rename_if_unchanged(
        &self,
        expected: &[u8],
        to: &PathGuard,
    ) -> Result<(), FsError> {
        let from_path = self.target.path.clone();
        let from_name = self.target.display_name();
        let to_path = to.target.path.clone();
        let to_name = to.target.display_name();
        let expected = expected.to_vec();
        blocking(move || {
            check_unchanged(&from_path, &from_name, Some(&expected))?;
            check_unchanged(&to_path, &to_name, None)?;
            if let Some(parent) = to_path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| {
                    io_error("create the parent directories of", &to_name, source)
                })?;
            }
            std::fs::rename(&from_path, &to_path)
                .map_err(|source| io_error("move", &from_name, source))
        })
        .await
    }
}

impl Drop for PathGuard {
    fn drop(&mut self) {
        drop(self.guard.take());
        self.fs.unlock(&self.target.path);
    }
}

/// Runs blocking filesystem work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, FsError> + Send + 'static,
) -> Result<T, FsError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Err(join) => Err(FsError::Io {
            action: "finish working on",
            path: String::from("a file"),
            source: io::Error::other(join),
        }),
    }
}

/// A path with `/` separators, as the permission helpers expect.
fn slashed(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

fn io_error(action: &'static str, name: &str, source: io::Error) -> FsError {
    FsError::Io {
        action,
        path: name.to_owned(),
        source,
    }
}

/// The canonical form of a missing path: its nearest existing ancestor, canonicalized, joined
/// with the missing tail. The ancestor must be a directory.
fn anchor_missing(absolute: &Path, shown: &str) -> Result<PathBuf, FsError> {
    let mut tail = Vec::new();
    let mut current = absolute;
    loop {
        let Some(name) = current.file_name() else {
            // Only a root has no name, and a root always exists.
            return Err(FsError::NotFound {
                path: shown.to_owned(),
            });
        };
        tail.push(name.to_owned());
        current = current.parent().unwrap_or(current);
        if current.symlink_metadata().is_ok() {
            break;
        }
    }
    let ancestor = std::fs::canonicalize(current).map_err(|_| FsError::DanglingSymlink {
        path: slashed(current),
    })?;
    if !ancestor.is_dir() {
        return Err(FsError::NotADirectory {
            path: shown.to_owned(),
            ancestor: slashed(current),
        });
    }
    Ok(tail
        .iter()
        .rev()
        .fold(ancestor, |path, name| path.join(name)))
}

/// The file's bytes, or `None` when it does not exist.
fn read_current(path: &Path, name: &str) -> Result<Option<Vec<u8>>, FsError> {
    if path.is_dir() {
        return Err(FsError::IsADirectory {
            path: name.to_owned(),
        });
    }
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(io_error("read", name, source)),
    }
}

/// Refuses unless the file holds exactly `expected` (`None`: it must not exist).
fn check_unchanged(path: &Path, name: &str, expected: Option<&[u8]>) -> Result<(), FsError> {
    let current = read_current(path, name)?;
    // A path that became a symlink since resolution no longer names the same file.
    let relinked = path
        .symlink_metadata()
        .is_ok_and(|meta| meta.file_type().is_symlink());
    // A dangling symlink that appeared reads as missing but would be replaced by the rename.
    let dangling = current.is_none() && path.symlink_metadata().is_ok();
    let kind = match (expected, current.as_deref()) {
        (None, None) if dangling => Some(ChangeKind::Appeared),
        (Some(_), Some(_)) if relinked => Some(ChangeKind::Modified),
        (None, Some(_)) => Some(ChangeKind::Appeared),
        (Some(_), None) => Some(ChangeKind::Disappeared),
        (Some(want), Some(have)) if want != have => Some(ChangeKind::Modified),
        _ => None,
    };
    match kind {
        Some(kind) => Err(FsError::Changed {
            path: name.to_owned(),
            kind,
        }),
        None => Ok(()),
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`.
fn atomic_write(path: &Path, name: &str, bytes: &[u8], fail: bool) -> Result<(), FsError> {
    let dir = path.parent().ok_or_else(|| FsError::IsADirectory {
        path: name.to_owned(),
    })?;
    std::fs::create_dir_all(dir)
        .map_err(|source| io_error("create the parent directories of", name, source))?;
    let existing = std::fs::metadata(path).ok();
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut builder = tempfile::Builder::new();
    let prefix = format!(".{file_name}.");
    builder.prefix(&prefix).suffix(".tackle-tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // New files get the usual 0o666 less the umask, not the temp-file default of 0o600.
        let mode = existing
            .as_ref()
            .map_or(0o666, |meta| meta.permissions().mode() & 0o7777);
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    let mut temp = builder
        .tempfile_in(dir)
        .map_err(|source| io_error("create a temporary file beside", name, source))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|source| io_error("write", name, source))?;
    if let Some(meta) = &existing {
        // The umask may have cleared bits at creation; set the exact old mode.
        std::fs::set_permissions(temp.path(), meta.permissions())
            .map_err(|source| io_error("copy the mode of", name, source))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            // Keeping the owner needs privileges; without them the writer owns the file.
            let _ = std::os::unix::fs::fchown(temp.as_file(), Some(meta.uid()), Some(meta.gid()));
        }
    }
    if fail {
        return Err(io_error(
            "write",
            name,
            io::Error::other("injected failure"),
        ));
    }
    temp.persist(path)
        .map_err(|e| io_error("replace", name, e.error))?;
    // Make the rename durable where the platform allows opening a directory.
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}
