//! What every walker of the Location shares: which entries it sees and which symlinks it may
//! follow.
//!
//! One rule for grep, glob, list and skill discovery: a symlink is followed only while its real
//! target stays inside the walk's boundary (the Location root when the walk starts inside it,
//! else the directory the call named). A link to `$HOME` or `/etc` from inside the root is never
//! followed, however the walk reached it; asking `external_directory` for the link's target
//! path is the way there. `.git` is never entered, and tackle's own temporary files are never
//! shown.

// Skills use the boundary alone; the walker is for grep and glob (feature `search`).
#![cfg_attr(not(feature = "search"), allow(dead_code))]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::{DirEntry, WalkBuilder};

use crate::fs::Resolved;
use crate::fs::handle::is_temp_name;

/// Where a walk may follow symlinks, and how many it refused.
#[derive(Clone, Debug)]
pub(crate) struct Boundary {
    inside: PathBuf,
    refused: Arc<AtomicUsize>,
}

impl Boundary {
    /// Symlinks stay within `inside` (canonical).
    pub(crate) fn new(inside: impl Into<PathBuf>) -> Self {
        Self {
            inside: inside.into(),
            refused: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The boundary of a walk of `target` in the Location at `root`: the root when the target is
    /// inside it, else the target directory itself (or a file's directory).
    pub(crate) fn for_target(root: &Path, target: &Resolved) -> Self {
        let inside = if target.relative.is_some() {
            root.to_path_buf()
        } else if target.path.is_dir() {
            target.path.clone()
        } else {
            target.path.parent().unwrap_or(&target.path).to_path_buf()
        };
        Self::new(inside)
    }

    /// Whether the walk may follow the symlink at `path`: its real target is inside.
    pub(crate) fn allows_link(&self, path: &Path) -> bool {
        let inside = std::fs::canonicalize(path).is_ok_and(|real| real.starts_with(&self.inside));
        if !inside {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        inside
    }

    /// How many symlinks leading outside were not followed.
    pub(crate) fn refused(&self) -> usize {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Whether a walk shows `entry` (and descends into it): not `.git`, not a temporary file, and
/// not a symlink leading outside `boundary`. The walk's root is always shown.
pub(crate) fn admits(entry: &DirEntry, boundary: &Boundary) -> bool {
    if entry.depth() == 0 {
        return true;
    }
    let name = entry.file_name();
    if name == OsStr::new(".git") || is_temp_name(name) {
        return false;
    }
    !entry.path_is_symlink() || boundary.allows_link(entry.path())
}

/// A walker of `root` with the shared rules: ignore files respected (also outside git), hidden
/// files kept, symlinks followed within `boundary` (with loop protection), `.git` and temporary
/// files left out. Callers add their own settings (threads, parents).
pub(crate) fn builder(root: &Path, boundary: &Boundary) -> WalkBuilder {
    let boundary = boundary.clone();
    let mut builder = base(root);
    builder.filter_entry(move |entry| admits(entry, &boundary));
    builder
}

/// Like [`builder`], but an entry that is not a directory is yielded only when `wanted` accepts
/// it. The test runs as the walker reads the directory, so an unwanted file never reaches the
/// walker's queue or the visitor: on a large tree with a narrow pattern that is most of the walk.
pub(crate) fn builder_of(
    root: &Path,
    boundary: &Boundary,
    wanted: impl Fn(&DirEntry) -> bool + Send + Sync + 'static,
) -> WalkBuilder {
    let boundary = boundary.clone();
    let mut builder = base(root);
    builder.filter_entry(move |entry| {
        admits(entry, &boundary) && (entry.file_type().is_some_and(|t| t.is_dir()) || wanted(entry))
    });
    builder
}

/// The settings every walk shares, without a filter.
fn base(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .follow_links(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .ignore(true)
        .require_git(false);
    builder
}
