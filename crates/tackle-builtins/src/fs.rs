//! The Location filesystem service: path resolution, per-path locks and compare-and-swap writes.
//!
//! Every file tool goes through one [`LocationFs`] per Location. [`LocationFs::resolve`] turns
//! what the model typed into a canonical path, naming the `external_directory` scope for a real
//! location outside the root (by an absolute path, `..` or a symlink). Writes commit only when
//! the file still holds the bytes the tool planned against, through a temporary file in the
//! target's own directory renamed into place, so a reader never sees a half-written file, the
//! mode survives, and a symlink is written through rather than replaced.
//!
//! Reads and writes work by descriptor ([`handle`]): the directory is opened by its canonical
//! path with no symlink allowed on the way, and everything happens relative to it, under an
//! `flock` held from the compare-and-swap check to the rename. So a directory swapped for a
//! symlink after the check cannot redirect a write, and two processes cannot both pass the
//! check. Only regular files are read or written as files; reads stop at a byte limit.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex as StdMutex};

use tackle_permission::{TargetKind, external_directory_pattern, resolve_in_location};
use tokio::sync::{Mutex, OwnedMutexGuard};

pub(crate) mod handle;
mod tracking;

pub use handle::SpecialKind;
pub use tracking::{ReadTracker, StaleRead};

use handle::{Dir, HandleError};

/// The most bytes a file tool reads from one file to change it; larger files are refused.
pub const MAX_EDIT_BYTES: u64 = 256 * 1024 * 1024;

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
    /// The path names a FIFO, a socket or a device, which the file tools never open as files.
    #[error(
        "`{path}` is {}, not a regular file, so it was not opened: reading it could block \
         forever or never end. Use bash if you really need it.", kind.describe()
    )]
    NotRegular {
        /// The path.
        path: String,
        /// What it is.
        kind: SpecialKind,
    },
    /// The file is larger than a tool reads.
    #[error(
        "`{path}` is larger than {limit} bytes, too large to handle whole. Nothing was changed; \
         use bash (head, sed, split) for files this large."
    )]
    TooLarge {
        /// The path.
        path: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The path is longer than any filesystem accepts.
    #[error("{message} Nothing was read or written; give a shorter path.")]
    PathTooLong {
        /// What is too long.
        message: String,
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
    /// Directories whose stale temporary files were swept by this process.
    swept: StdMutex<std::collections::HashSet<PathBuf>>,
    /// Test hook: fail every write after its temporary file is written.
    #[cfg(test)]
    fail_after_temp: std::sync::atomic::AtomicBool,
    /// Test hook: fail writes to files of this name after their temporary file is written.
    #[cfg(test)]
    fail_name: StdMutex<Option<std::ffi::OsString>>,
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
                swept: StdMutex::new(std::collections::HashSet::new()),
                #[cfg(test)]
                fail_after_temp: std::sync::atomic::AtomicBool::new(false),
                #[cfg(test)]
                fail_name: StdMutex::new(None),
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
        // Bounded first: a 10 MB path must not reach the resolver or the name suggestions.
        handle::check_length(path).map_err(|message| FsError::PathTooLong { message })?;
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
        let relative = self.relative_of_real(&canonical_str);
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

    /// The Location-relative name of the real path `canonical_str` (with `/`), or `None` when it
    /// lies outside. Containment is judged on the real path, so `..` and symlinks cannot hide
    /// an escape.
    fn relative_of_real(&self, canonical_str: &str) -> Option<String> {
        resolve_in_location(&self.inner.root_str, canonical_str).relative_to_root
    }

    /// The name the file tools show and ask permissions on for the existing `path` (a path a
    /// walk or a language server found): that of its real location, as [`resolve`](Self::resolve)
    /// gives it in [`Resolved::display_name`]. `None` when it cannot be resolved. Blocking.
    pub fn real_name_blocking(&self, path: &Path) -> Option<String> {
        let canonical = std::fs::canonicalize(path).ok()?;
        Some(self.name_of_real(&canonical))
    }

    /// [`real_name_blocking`](Self::real_name_blocking) for a path already canonical.
    pub(crate) fn name_of_real(&self, canonical: &Path) -> String {
        let canonical_str = slashed(canonical);
        self.relative_of_real(&canonical_str)
            .unwrap_or(canonical_str)
    }

    /// Calls `decide` with [`name_of_real`](Self::name_of_real)'s name for `canonical`,
    /// borrowed from the path when normalizing it would change nothing (the usual case), so a
    /// caller that names many files allocates nothing for them.
    #[cfg(any(feature = "search", feature = "lsp"))]
    pub(crate) fn with_name_of_real<R>(
        &self,
        canonical: &Path,
        decide: impl FnOnce(&str) -> R,
    ) -> R {
        match self.plain_name_of_real(canonical) {
            Some(name) => decide(name),
            None => decide(&self.name_of_real(canonical)),
        }
    }

    /// Whether the names of files below `base` are their paths below it: `base` is the root,
    /// and the root's text is in normal form.
    #[cfg(feature = "search")]
    pub(crate) fn names_below(&self, base: &Path) -> bool {
        base == self.inner.root && is_plain_absolute(&self.inner.root_str)
    }

    /// The name of the file at `relative` below the root, a path made of file names (as a walk
    /// or an index has it), when [`names_below`](Self::names_below) holds for the root: the
    /// path itself when it is UTF-8 without `\`, so nothing is built. `None` otherwise.
    #[cfg(any(feature = "search", test))]
    pub(crate) fn listed_name(relative: &Path) -> Option<&str> {
        let name = relative.to_str()?;
        (!name.is_empty() && !name.contains('\\')).then_some(name)
    }

    /// The name of `canonical` as a slice of it, when both it and the root are already in
    /// normal form (absolute, UTF-8, no `\`, no empty, `.` or `..` segment); `None` otherwise.
    #[cfg(any(feature = "search", feature = "lsp", test))]
    fn plain_name_of_real<'a>(&self, canonical: &'a Path) -> Option<&'a str> {
        let (text, root) = (canonical.to_str()?, self.inner.root_str.as_str());
        if !is_plain_absolute(text) || !is_plain_absolute(root) {
            return None;
        }
        if text == root {
            return Some(".");
        }
        let below = match root {
            "/" => text.strip_prefix('/'),
            _ => text
                .strip_prefix(root)
                .and_then(|rest| rest.strip_prefix('/')),
        };
        // Outside the root, the name is the absolute path itself.
        Some(below.unwrap_or(text))
    }

    /// When `given` names a symlink, the link itself (not followed): its own location, judged
    /// for containment by its directory, and what it points to. `None` for anything else.
    pub async fn symlink_at(&self, given: &str) -> Result<Option<(Resolved, PathBuf)>, FsError> {
        handle::check_length(given).map_err(|message| FsError::PathTooLong { message })?;
        let lexical = resolve_in_location(&self.inner.root_str, given);
        let absolute = PathBuf::from(&lexical.absolute);
        let is_link = absolute
            .symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_symlink());
        let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
            return Ok(None);
        };
        if !is_link {
            return Ok(None);
        }
        let parent = self.resolve(&slashed(parent)).await?;
        let path = parent.path.join(name);
        let shown = slashed(&path);
        let relative = resolve_in_location(&self.inner.root_str, &shown).relative_to_root;
        let external_directory = relative
            .is_none()
            .then(|| external_directory_pattern(&shown, TargetKind::File));
        let (dir, file_name) = open_parent(&path, &shown)?;
        let Some(points_to) = dir.read_link(&file_name) else {
            return Ok(None);
        };
        Ok(Some((
            Resolved {
                path,
                relative,
                external_directory,
                exists: true,
            },
            points_to,
        )))
    }

    /// Removes the symlink `link` (never what it points to) if it still points to `points_to`.
    pub async fn remove_symlink(&self, link: &Resolved, points_to: &Path) -> Result<(), FsError> {
        let path = link.path.clone();
        let name = link.display_name();
        let points_to = points_to.to_path_buf();
        blocking(move || {
            let (dir, file_name) = open_parent(&path, &name)?;
            let _lock = dir.lock().map_err(|e| handle_error(e, &name, "lock"))?;
            check_link(&dir, &file_name, &name, &points_to)?;
            dir.remove(&file_name)
                .map_err(|e| handle_error(e, &name, "delete"))
        })
        .await
    }

    /// Moves the symlink `link` itself to `to` (which must not exist) if it still points to
    /// `points_to`. A relative link keeps its text, so it may point elsewhere from its new
    /// place, as a moved link does.
    pub async fn move_symlink(
        &self,
        link: &Resolved,
        points_to: &Path,
        to: &Resolved,
    ) -> Result<(), FsError> {
        let (from_path, from_name) = (link.path.clone(), link.display_name());
        let (to_path, to_name) = (to.path.clone(), to.display_name());
        let points_to = points_to.to_path_buf();
        blocking(move || {
            if let Some(parent) = to_path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| {
                    io_error("create the parent directories of", &to_name, source)
                })?;
            }
            let (from_dir, from_file) = open_parent(&from_path, &from_name)?;
            let (to_dir, to_file) = open_parent(&to_path, &to_name)?;
            let _lock = from_dir
                .lock()
                .map_err(|e| handle_error(e, &from_name, "lock"))?;
            check_link(&from_dir, &from_file, &from_name, &points_to)?;
            from_dir
                .move_to(&from_file, &to_dir, &to_file)
                .map_err(|e| match e {
                    HandleError::Io(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                        FsError::Changed {
                            path: to_name.clone(),
                            kind: ChangeKind::Appeared,
                        }
                    }
                    other => handle_error(other, &from_name, "move"),
                })
        })
        .await
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

    /// Reads the whole file, without taking its lock, up to [`MAX_EDIT_BYTES`].
    pub async fn read_bytes(&self, target: &Resolved) -> Result<Vec<u8>, FsError> {
        self.read_limited(target, MAX_EDIT_BYTES).await
    }

    /// Reads the whole regular file, refusing one of more than `limit` bytes
    /// ([`FsError::TooLarge`]) whatever its metadata says, and anything that is not a regular
    /// file ([`FsError::NotRegular`]).
    pub async fn read_limited(&self, target: &Resolved, limit: u64) -> Result<Vec<u8>, FsError> {
        let path = target.path.clone();
        let name = target.display_name();
        blocking(move || match read_current(&path, &name, limit)? {
            Some(bytes) => Ok(bytes),
            None => Err(FsError::NotFound { path: name }),
        })
        .await
    }

    /// The size of the regular file and its bytes: all of them when it holds at most `limit`
    /// bytes, else its first `head` bytes. One open serves both, so they describe the same file;
    /// refuses special files. A file that grows past `limit` while it is read is
    /// [`FsError::TooLarge`].
    pub async fn read_sized(
        &self,
        target: &Resolved,
        limit: u64,
        head: u64,
    ) -> Result<(u64, Vec<u8>), FsError> {
        let path = target.path.clone();
        let name = target.display_name();
        blocking(move || {
            let (dir, file_name) = open_parent(&path, &name)?;
            let file = dir
                .open_regular(&file_name)
                .map_err(|e| handle_error(e, &name, "read"))?
                .ok_or_else(|| FsError::NotFound { path: name.clone() })?;
            let size = file
                .metadata()
                .map(|meta| meta.len())
                .map_err(|source| io_error("read", &name, source))?;
            let bytes = if size > limit {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut std::io::Read::take(file, head), &mut bytes)
                    .map_err(|source| io_error("read", &name, source))?;
                bytes
            } else {
                handle::read_limited(file, limit).map_err(|e| handle_error(e, &name, "read"))?
            };
            Ok((size, bytes))
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

    /// Removes the stale temporary files of `dir` (left by a crash), once per directory per
    /// process: the first write there pays one directory listing.
    fn sweep_once(&self, dir: &Dir) {
        let first = self
            .inner
            .swept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dir.path().to_path_buf());
        if first {
            dir.sweep_stale_temps();
        }
    }

    /// Test hook: make writes to files named `name` fail after their temporary file is written.
    #[cfg(test)]
    pub(crate) fn fail_writes_named(&self, name: &str) {
        *self.inner.fail_name.lock().unwrap() = Some(name.into());
    }

    fn fail_after_temp(&self, _target: &Path) -> bool {
        #[cfg(test)]
        {
            self.inner
                .fail_after_temp
                .load(std::sync::atomic::Ordering::SeqCst)
                || self.inner.fail_name.lock().unwrap().as_deref() == _target.file_name()
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
        let fail = self.fs.fail_after_temp(&self.target.path);
        let fs = self.fs.clone();
        blocking(move || {
            let parent = path
                .parent()
                .ok_or_else(|| FsError::IsADirectory { path: name.clone() })?;
            std::fs::create_dir_all(parent)
                .map_err(|source| io_error("create the parent directories of", &name, source))?;
            let (dir, file_name) = open_parent(&path, &name)?;
            fs.sweep_once(&dir);
            let _lock = dir.lock().map_err(|e| handle_error(e, &name, "lock"))?;
            check_unchanged(&dir, &file_name, &name, expected.as_deref())?;
            let existing = match dir.open_regular(&file_name) {
                Ok(Some(file)) => file.metadata().ok(),
                _ => None,
            };
            let (mode, owner) = handle::kept_mode(existing.as_ref());
            dir.replace(&file_name, &new, mode, owner, fail)
                .map_err(|e| handle_error(e, &name, "write"))?;
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
            let (dir, file_name) = open_parent(&path, &name)?;
            let _lock = dir.lock().map_err(|e| handle_error(e, &name, "lock"))?;
            check_unchanged(&dir, &file_name, &name, Some(&expected))?;
            dir.remove(&file_name)
                .map_err(|e| handle_error(e, &name, "delete"))
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
            if let Some(parent) = to_path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| {
                    io_error("create the parent directories of", &to_name, source)
                })?;
            }
            let (from_dir, from_file) = open_parent(&from_path, &from_name)?;
            let (to_dir, to_file) = open_parent(&to_path, &to_name)?;
            // Both directories, in path order; one lock when they are the same directory.
            let same = from_path.parent() == to_path.parent();
            let (first, second) = if from_path.parent() <= to_path.parent() {
                (&from_dir, &to_dir)
            } else {
                (&to_dir, &from_dir)
            };
            let _first = first
                .lock()
                .map_err(|e| handle_error(e, &from_name, "lock"))?;
            let _second = if same {
                None
            } else {
                Some(
                    second
                        .lock()
                        .map_err(|e| handle_error(e, &to_name, "lock"))?,
                )
            };
            check_unchanged(&from_dir, &from_file, &from_name, Some(&expected))?;
            check_unchanged(&to_dir, &to_file, &to_name, None)?;
            from_dir
                .move_to(&from_file, &to_dir, &to_file)
                .map_err(|e| match e {
                    HandleError::Io(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                        FsError::Changed {
                            path: to_name.clone(),
                            kind: ChangeKind::Appeared,
                        }
                    }
                    other => handle_error(other, &from_name, "move"),
                })
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
/// True when `path` is absolute and already in the form `normalize_path` gives: `/`, or `/`
/// followed by segments that are neither empty, `.` nor `..`, with no `\` anywhere.
#[cfg(any(feature = "search", feature = "lsp", test))]
fn is_plain_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') {
        return false;
    }
    if bytes.len() == 1 {
        return true;
    }
    // One pass: each segment ends at a `/` or at the end.
    let mut start = 1;
    for at in 1..=bytes.len() {
        match bytes.get(at) {
            Some(b'\\') => return false,
            Some(b'/') | None => {
                if matches!(&bytes[start..at], b"" | b"." | b"..") {
                    return false;
                }
                start = at + 1;
            }
            Some(_) => {}
        }
    }
    true
}

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

/// The directory holding `path` (canonical), opened with no symlink on the way, and the
/// file's name in it.
fn open_parent(path: &Path, name: &str) -> Result<(Dir, std::ffi::OsString), FsError> {
    let (Some(parent), Some(file_name)) = (path.parent(), path.file_name()) else {
        return Err(FsError::IsADirectory {
            path: name.to_owned(),
        });
    };
    let dir = Dir::open(parent).map_err(|e| match e {
        HandleError::Io(error) if error.kind() == io::ErrorKind::NotFound => FsError::NotFound {
            path: name.to_owned(),
        },
        other => handle_error(other, name, "open the directory of"),
    })?;
    Ok((dir, file_name.to_owned()))
}

/// A descriptor-level failure as the model reads it.
fn handle_error(error: HandleError, name: &str, action: &'static str) -> FsError {
    match error {
        HandleError::IsDirectory => FsError::IsADirectory {
            path: name.to_owned(),
        },
        HandleError::Special(kind) => FsError::NotRegular {
            path: name.to_owned(),
            kind,
        },
        // A symlink where the resolved path had none: the path changed since it was checked.
        HandleError::Relinked => FsError::Changed {
            path: name.to_owned(),
            kind: ChangeKind::Modified,
        },
        HandleError::TooLarge { limit } => FsError::TooLarge {
            path: name.to_owned(),
            limit,
        },
        HandleError::Io(source) => io_error(action, name, source),
    }
}

/// The file's bytes (at most `limit`), or `None` when it does not exist.
fn read_current(path: &Path, name: &str, limit: u64) -> Result<Option<Vec<u8>>, FsError> {
    let (dir, file_name) = match open_parent(path, name) {
        Ok(opened) => opened,
        Err(FsError::NotFound { .. }) => return Ok(None),
        Err(error) => return Err(error),
    };
    dir.read(&file_name, limit)
        .map_err(|e| handle_error(e, name, "read"))
}

/// Refuses unless `file_name` in `dir` is still a symlink to `points_to`.
fn check_link(
    dir: &Dir,
    file_name: &std::ffi::OsStr,
    name: &str,
    points_to: &Path,
) -> Result<(), FsError> {
    match dir.read_link(file_name) {
        Some(now) if now == points_to => Ok(()),
        Some(_) => Err(FsError::Changed {
            path: name.to_owned(),
            kind: ChangeKind::Modified,
        }),
        None => Err(FsError::Changed {
            path: name.to_owned(),
            kind: ChangeKind::Disappeared,
        }),
    }
}

/// Refuses unless `file_name` in `dir` holds exactly `expected` (`None`: it must not exist).
fn check_unchanged(
    dir: &Dir,
    file_name: &std::ffi::OsStr,
    name: &str,
    expected: Option<&[u8]>,
) -> Result<(), FsError> {
    let changed = |kind| FsError::Changed {
        path: name.to_owned(),
        kind,
    };
    // A symlink where a file was resolved no longer names the same file; a dangling one that
    // appeared would be replaced by the rename.
    if dir.is_symlink(file_name) {
        return Err(changed(if expected.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Appeared
        }));
    }
    let current = dir
        .read(file_name, MAX_EDIT_BYTES)
        .map_err(|e| handle_error(e, name, "read"))?;
    match (expected, current.as_deref()) {
        (None, Some(_)) => Err(changed(ChangeKind::Appeared)),
        (Some(_), None) => Err(changed(ChangeKind::Disappeared)),
        (Some(want), Some(have)) if want != have => Err(changed(ChangeKind::Modified)),
        _ => Ok(()),
    }
}
