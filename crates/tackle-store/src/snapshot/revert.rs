//! Reverting changes: per file, what was there before the first reverted change, written only
//! where the file still holds what the last reverted change left (compare-and-swap).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use super::{Change, Entry, Kind, Manifest, SnapshotError, Snapshots};

/// What a revert does to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Put back its earlier content (and mode).
    Restore,
    /// Delete it: the reverted changes created it.
    Delete,
    /// Create it again: the reverted changes deleted it.
    Recreate,
}

impl Action {
    /// One letter, as in a diffstat (`M`, `D`, `A`).
    pub fn letter(self) -> char {
        match self {
            Action::Restore => 'M',
            Action::Delete => 'D',
            Action::Recreate => 'A',
        }
    }
}

/// One file of a revert plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePlan {
    /// The path, relative to the Location.
    pub path: String,
    /// What the revert does.
    pub action: Action,
    /// Lines the revert adds and removes (0 for binary files).
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// Why the file is left alone: it changed since the reverted changes (with a diff from its
    /// current content to what the revert would write), or its earlier content is not stored.
    pub conflict: Option<String>,
    desired: Option<Entry>,
}

/// What a revert would do, file by file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The files, by path.
    pub files: Vec<FilePlan>,
}

impl Plan {
    /// The files left alone.
    pub fn conflicts(&self) -> impl Iterator<Item = &FilePlan> {
        self.files.iter().filter(|f| f.conflict.is_some())
    }
}

/// The plan to revert `changes` (oldest first).
pub fn plan(snapshots: &Snapshots, changes: &[Change]) -> Result<Plan, SnapshotError> {
    // Per path: what was there before the first change touching it, and after the last.
    let mut touched: BTreeMap<String, (Option<Entry>, Option<Entry>)> = BTreeMap::new();
    for change in changes {
        let before = snapshots.manifest(&change.before)?;
        let after = snapshots.manifest(&change.after)?;
        for path in differing(&before, &after) {
            let old = before.files.get(&path).cloned();
            let new = after.files.get(&path).cloned();
            touched
                .entry(path)
                .and_modify(|slot| slot.1 = new.clone())
                .or_insert((old, new));
        }
    }
    let mut files = Vec::new();
    for (path, (desired, expected)) in touched {
        if desired == expected {
            continue;
        }
        let current = current_entry(snapshots, &path);
        // Already as the revert would leave it: nothing to do, and no conflict.
        if same(&current, &desired) {
            continue;
        }
        let action = match (&desired, &expected) {
            (None, _) => Action::Delete,
            (Some(_), None) => Action::Recreate,
            (Some(_), Some(_)) => Action::Restore,
        };
        let desired_text = desired
            .as_ref()
            .and_then(|e| text_of(snapshots, e))
            .unwrap_or_default();
        // A link's text is its target, not what it points to.
        let current_text = match &current {
            Some(entry) if entry.kind == Kind::File => text_of(snapshots, entry),
            _ => None,
        }
        .unwrap_or_default();
        let (additions, deletions) = diffstat(&current_text, &desired_text);
        let conflict = if !same(&current, &expected) {
            Some(format!(
                "{path} changed after the reverted changes, so it was left alone.\n{}",
                unified(&path, &current_text, &desired_text)
            ))
        } else if desired.as_ref().is_some_and(|e| !e.kept) {
            Some(format!(
                "{path}: its earlier content was too large to keep, so it cannot be restored."
            ))
        } else if let Some(entry) = &desired
            && snapshots.object(&entry.hash).is_err()
        {
            Some(format!(
                "{path}: its earlier content is no longer stored (the retention sweep removed \
                 it), so it cannot be restored."
            ))
        } else {
            None
        };
        files.push(FilePlan {
            path,
            action,
            additions,
            deletions,
            conflict,
            desired,
        });
    }
    Ok(Plan { files })
}

/// Carries out `plan`: every file without a conflict (with `force`, conflicting files too,
/// when their earlier content is stored). Returns the paths written or deleted.
pub fn apply(
    snapshots: &Snapshots,
    plan: &Plan,
    force: bool,
) -> Result<Vec<String>, SnapshotError> {
    let mut done = Vec::new();
    for file in &plan.files {
        if file.conflict.is_some() && !force {
            continue;
        }
        let path = snapshots.root().join(&file.path);
        match &file.desired {
            None => match std::fs::remove_file(&path) {
                Ok(()) => done.push(file.path.clone()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(SnapshotError::Io {
                        what: format!("deleting {}", file.path),
                        source: e,
                    });
                }
            },
            Some(entry) => {
                if !entry.kept {
                    continue;
                }
                let Ok(bytes) = snapshots.object(&entry.hash) else {
                    continue;
                };
                write_entry(&path, entry, &bytes).map_err(|source| SnapshotError::Io {
                    what: format!("restoring {}", file.path),
                    source,
                })?;
                done.push(file.path.clone());
            }
        }
    }
    Ok(done)
}

fn write_entry(path: &Path, entry: &Entry, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir)?;
    match entry.kind {
        Kind::Symlink => {
            let target = std::path::PathBuf::from(std::ffi::OsStr::from_bytes_compat(bytes));
            match std::fs::symlink_metadata(path) {
                Ok(_) => std::fs::remove_file(path)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            std::os::unix::fs::symlink(target, path)
        }
        Kind::File => {
            let mut temp = tempfile::NamedTempFile::new_in(dir)?;
            std::io::Write::write_all(&mut temp, bytes)?;
            temp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(entry.mode))?;
            temp.persist(path).map_err(|e| e.error)?;
            Ok(())
        }
    }
}

/// `OsStr` from bytes on Unix.
trait FromBytesCompat {
    fn from_bytes_compat(bytes: &[u8]) -> &std::ffi::OsStr;
}

impl FromBytesCompat for std::ffi::OsStr {
    fn from_bytes_compat(bytes: &[u8]) -> &std::ffi::OsStr {
        std::os::unix::ffi::OsStrExt::from_bytes(bytes)
    }
}

/// Paths whose entries differ between two manifests.
pub fn differing(a: &Manifest, b: &Manifest) -> Vec<String> {
    let mut paths: Vec<String> = a
        .files
        .iter()
        .filter(|(path, entry)| b.files.get(*path) != Some(entry))
        .map(|(path, _)| path.clone())
        .collect();
    paths.extend(
        b.files
            .keys()
            .filter(|path| !a.files.contains_key(*path))
            .cloned(),
    );
    paths.sort();
    paths
}

/// Whether two states of a file are the same (kind, bytes and mode).
fn same(a: &Option<Entry>, b: &Option<Entry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.kind == b.kind && a.hash == b.hash && a.mode == b.mode,
        _ => false,
    }
}

/// The file's state now.
fn current_entry(snapshots: &Snapshots, relative: &str) -> Option<Entry> {
    let path = snapshots.root().join(relative);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let mode = meta.permissions().mode() & 0o7777;
    snapshots.entry_for(relative, &meta, mode).ok()
}

fn text_of(snapshots: &Snapshots, entry: &Entry) -> Option<String> {
    if entry.kind != Kind::File || !entry.kept {
        return None;
    }
    String::from_utf8(snapshots.object(&entry.hash).ok()?).ok()
}

/// Lines added and removed going from `from` to `to`.
pub fn diffstat(from: &str, to: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(from, to);
    let mut stat = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => stat.0 += 1,
            similar::ChangeTag::Delete => stat.1 += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    stat
}

/// A unified diff from `from` to `to`, named `path`.
pub fn unified(path: &str, from: &str, to: &str) -> String {
    similar::TextDiff::from_lines(from, to)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}
