//! A live index of one Location that grep answers from, for hosts that outlive one call.
//!
//! [`SearchIndex::start`] watches the Location root and builds the index on a thread of its
//! own: every file the grep walker sees, with its fingerprint, and a trigram posting list per
//! trigram of the files' contents. A grep call plans the trigrams any match must contain
//! ([`plan`]), opens only the files that hold them, and counts the rest (binary files among
//! them) without opening them, so its result equals a scan's: the same matches, order, totals,
//! binary skips and truncation.
//!
//! Never stale: before answering, a call waits until the watcher has reported every change made
//! before it (see [`watch`]) and reads those paths again; a directory that appeared is walked
//! whole (and again on each call for a second, until its own watch surely exists). A call made
//! before the index is ready, after lost events, or in a tree the index cannot mirror exactly
//! (one with symlinks or unreadable entries) scans, as `tackle call` does.

pub(crate) mod plan;
mod store;
mod tree;
mod watch;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::tools::{FileIndex, IndexedFiles};
use tree::Tree;
use watch::Watch;

/// More changed paths than this at one call are not read one by one: the index is walked again
/// in the background and the call scans.
const MAX_CHANGES: usize = 10_000;
/// How long a directory that appeared is walked whole on every call.
const YOUNG: Duration = Duration::from_secs(1);

/// The index's limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexOptions {
    /// The most memory the index may hold, in bytes; a Location whose index would be larger is
    /// scanned.
    pub max_memory_bytes: usize,
    /// Where the index is saved after each full walk and loaded from at the next start (a
    /// directory of the data directory); `None` keeps it in memory only.
    pub store_dir: Option<PathBuf>,
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            max_memory_bytes: 1024 * 1024 * 1024,
            store_dir: None,
        }
    }
}

/// What the index is doing, for `tackle config check` and the logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexStatus {
    /// Being built; calls scan.
    Building,
    /// Answering calls.
    Ready {
        /// Files indexed.
        files: usize,
        /// Memory held, in bytes (an estimate).
        memory_bytes: usize,
        /// How long the last full walk took.
        built_in: Duration,
    },
    /// Not used; calls scan. The reason is a sentence.
    Off(String),
}

enum Phase {
    Building,
    Ready { tree: Tree, built_in: Duration },
    Off(String),
}

struct Inner {
    root: PathBuf,
    options: IndexOptions,
    phase: Mutex<Phase>,
    /// Directories that appeared, with when: walked whole on every call for [`YOUNG`].
    young: Mutex<Vec<(PathBuf, Instant)>>,
    watch: Option<Watch>,
    rebuilding: AtomicBool,
    /// Whether the saved index was looked for.
    loaded: AtomicBool,
    /// Whether the reason calls scan was logged.
    said: AtomicBool,
}

/// The live index of one Location. Cloning shares it; the watcher stops when the last clone
/// is dropped.
#[derive(Clone)]
pub struct SearchIndex {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("root", &self.inner.root)
            .finish_non_exhaustive()
    }
}

impl SearchIndex {
    /// Starts watching `root` and building its index in the background. Calls scan until it
    /// is ready.
    pub fn start(root: &Path, options: IndexOptions) -> Self {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let watch = Watch::start(&root);
        let phase = match &watch {
            Ok(_) => Phase::Building,
            Err(error) => Phase::Off(format!(
                "the index of {} is off: its files cannot be watched ({error})",
                root.display()
            )),
        };
        let index = Self {
            inner: Arc::new(Inner {
                root,
                options,
                phase: Mutex::new(phase),
                young: Mutex::new(Vec::new()),
                watch: watch.ok(),
                rebuilding: AtomicBool::new(false),
                loaded: AtomicBool::new(false),
                said: AtomicBool::new(false),
            }),
        };
        if index.inner.watch.is_some() {
            index.rebuild();
        }
        index
    }

    /// Where the index of `root` is saved under `store_dir`, and its size in bytes, when one
    /// is saved there.
    pub fn saved(store_dir: &Path, root: &Path) -> Option<(PathBuf, u64)> {
        let root = std::fs::canonicalize(root).ok()?;
        let path = store::path_for(store_dir, &root);
        let bytes = std::fs::metadata(&path).ok()?.len();
        Some((path, bytes))
    }

    /// What the index is doing.
    pub fn status(&self) -> IndexStatus {
        match &*self.inner.phase.lock().unwrap_or_else(|e| e.into_inner()) {
            Phase::Building => IndexStatus::Building,
            Phase::Ready { tree, built_in } => match &tree.inexact {
                Some(inexact) => IndexStatus::Off(inexact_reason(inexact)),
                None => IndexStatus::Ready {
                    files: tree.file_count(),
                    memory_bytes: tree.memory(),
                    built_in: *built_in,
                },
            },
            Phase::Off(reason) => IndexStatus::Off(reason.clone()),
        }
    }

    /// Waits up to `timeout` for the index to be built; true when it is (ready or off).
    pub fn wait_built(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if !matches!(self.status(), IndexStatus::Building) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Walks the whole Location again on a thread of its own; calls scan meanwhile.
    fn rebuild(&self) {
        if self.inner.rebuilding.swap(true, Ordering::AcqRel) {
            return;
        }
        let inner = self.inner.clone();
        let spawned = std::thread::Builder::new()
            .name("tackle-index".to_owned())
            .spawn(move || {
                {
                    let mut phase = inner.phase.lock().unwrap_or_else(|e| e.into_inner());
                    if matches!(*phase, Phase::Off(_)) {
                        inner.rebuilding.store(false, Ordering::Release);
                        return;
                    }
                    *phase = Phase::Building;
                }
                // Changes from now on are kept for the first call after the walk.
                if let Some(watch) = &inner.watch {
                    watch.clear();
                }
                let started = Instant::now();
                let stored = inner
                    .options
                    .store_dir
                    .as_ref()
                    .map(|dir| store::path_for(dir, &inner.root));
                // A saved index, once: later walks start from the one in memory.
                let saved = stored
                    .as_ref()
                    .filter(|_| !inner.loaded.swap(true, Ordering::AcqRel))
                    .and_then(|path| store::load(path, &inner.root));
                let tree = Tree::build(&inner.root, saved);
                let built_in = started.elapsed();
                if let Some(path) = stored.filter(|_| tree.inexact.is_none())
                    && let Err(error) = store::save(&tree, &path)
                {
                    tracing::warn!("could not save the index to {}: {error}", path.display());
                }
                let memory = tree.memory();
                let phase = if memory > inner.options.max_memory_bytes {
                    Phase::Off(format!(
                        "the index of {} would hold {} MiB, over its {} MiB cap, so grep scans",
                        inner.root.display(),
                        memory / (1024 * 1024),
                        inner.options.max_memory_bytes / (1024 * 1024)
                    ))
                } else {
                    tracing::info!(
                        files = tree.file_count(),
                        memory_bytes = memory,
                        built_in_ms = built_in.as_millis() as u64,
                        "indexed {}",
                        inner.root.display()
                    );
                    Phase::Ready { tree, built_in }
                };
                *inner.phase.lock().unwrap_or_else(|e| e.into_inner()) = phase;
                inner.rebuilding.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.inner.rebuilding.store(false, Ordering::Release);
        }
    }

    /// Says once, in the logs, why calls scan.
    fn say(&self, reason: &str) {
        if !self.inner.said.swap(true, Ordering::Relaxed) {
            tracing::warn!("{reason}");
        }
    }
}

fn inexact_reason(inexact: &tree::Inexact) -> String {
    let why = match inexact {
        tree::Inexact::Symlink => "it holds a symlink",
        tree::Inexact::Unreadable => "an entry in it could not be read",
        tree::Inexact::IgnoredRoot => "its parents' ignore rules ignore it",
    };
    format!("the Location is not indexed because {why}, so grep scans")
}

impl SearchIndex {
    /// The tree, brought up to date with every change made before this call, and `dir`
    /// (absolute) below its root; `None` when the index cannot answer for `dir` exactly.
    fn fresh(&self, dir: &Path) -> Option<(std::sync::MutexGuard<'_, Phase>, PathBuf)> {
        let inner = &self.inner;
        let relative = dir.strip_prefix(&inner.root).ok()?.to_path_buf();
        let mut phase = inner.phase.lock().unwrap_or_else(|e| e.into_inner());
        let Phase::Ready { tree, .. } = &mut *phase else {
            if let Phase::Off(reason) = &*phase {
                self.say(reason);
            }
            return None;
        };
        let changes = inner.watch.as_ref()?.sync()?;
        if changes.lost || changes.paths.len() > MAX_CHANGES {
            drop(phase);
            self.rebuild();
            return None;
        }
        let now = Instant::now();
        let mut young = inner.young.lock().unwrap_or_else(|e| e.into_inner());
        young.retain(|(_, since)| now.duration_since(*since) < YOUNG);
        for path in &changes.paths {
            if path.is_dir() {
                young.push((path.clone(), now));
            }
        }
        let whole: Vec<PathBuf> = young
            .iter()
            .filter_map(|(path, _)| path.strip_prefix(&inner.root).ok())
            .map(Path::to_path_buf)
            .collect();
        drop(young);
        tree.refresh(&changes.paths, &whole);
        if let Some(inexact) = &tree.inexact {
            self.say(&inexact_reason(inexact));
            return None;
        }
        if !tree.has_dir(&relative) {
            return None;
        }
        Some((phase, relative))
    }
}

impl FileIndex for SearchIndex {
    fn grep_files(&self, dir: &Path, pattern: &str) -> Option<IndexedFiles> {
        let (mut phase, relative) = self.fresh(dir)?;
        let Phase::Ready { tree, .. } = &mut *phase else {
            return None;
        };
        if !relative.as_os_str().is_empty() && crate::tools::grep_ignored_by_parents(dir) {
            return None;
        }
        let plan = plan::plan(pattern);
        let (paths, files) = tree.list(&relative, &plan);
        Some(IndexedFiles {
            base: self.inner.root.clone(),
            paths,
            files,
        })
    }

    fn glob_files(&self, dir: &Path, visit: &mut dyn FnMut(&Path, SystemTime)) -> bool {
        let Some((mut phase, relative)) = self.fresh(dir) else {
            return false;
        };
        let Phase::Ready { tree, .. } = &mut *phase else {
            return false;
        };
        tree.each_file(&relative, visit);
        true
    }
}
