//! The index of one Location: every file the walker sees, with its fingerprint, and a trigram
//! posting list per trigram.
//!
//! Files get ids in the order they are indexed; a changed file gets a new id and its old one is
//! marked dead, so every posting list stays sorted and only ever grows at its end. A posting
//! list is delta-encoded varints. The walk is the grep tool's (the shared rules of
//! `tools::walk`), so the file set is the one a scan sees.

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ignore::WalkState;
use rustc_hash::FxHashMap;

use super::plan::{Plan, trigram};
use crate::tools::IndexedFile;
use crate::tools::walk::{self, Boundary};

/// Files larger than this are not indexed: they are searched on every call.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// What identifies one version of a file's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub(super) len: u64,
    pub(super) modified: SystemTime,
    pub(super) changed: (i64, i64),
    pub(super) inode: u64,
}

impl Fingerprint {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            len: meta.len(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            changed: (meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
        }
    }
}

/// How a file's contents are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Text whose trigrams are in the posting lists.
    Text,
    /// It holds a NUL byte: a scan counts it as binary and shows none of its lines.
    Binary,
    /// Not indexed (too large, unreadable, or with a byte-order mark the searcher transcodes):
    /// searched on every call.
    Live,
}

#[derive(Clone, Debug)]
pub(super) struct FileRecord {
    pub(super) fingerprint: Fingerprint,
    pub(super) kind: Kind,
}

/// The live files in path order, flattened for calls; built again after a change.
struct Listing {
    paths: Arc<[PathBuf]>,
    ids: Vec<u32>,
}

impl Listing {
    /// The listing in `slot`, built from `by_path` when a change dropped it.
    fn of<'a>(slot: &'a mut Option<Listing>, by_path: &BTreeMap<PathBuf, u32>) -> &'a Listing {
        slot.get_or_insert_with(|| {
            let (paths, ids): (Vec<PathBuf>, Vec<u32>) =
                by_path.iter().map(|(path, id)| (path.clone(), *id)).unzip();
            Listing {
                paths: paths.into(),
                ids,
            }
        })
    }

    /// The positions of the files at or below the directory `relative`.
    fn below(&self, relative: &Path) -> std::ops::Range<usize> {
        if relative.as_os_str().is_empty() {
            return 0..self.paths.len();
        }
        // Paths sort by component, as the map does: a directory's files are contiguous.
        let start = self.paths.partition_point(|path| path.as_path() < relative);
        let len = self.paths[start..].partition_point(|path| path.starts_with(relative));
        start..start + len
    }
}

/// One posting list: delta-encoded varint ids.
#[derive(Default)]
pub(super) struct Postings {
    pub(super) bytes: Vec<u8>,
    pub(super) last: u32,
}

impl Postings {
    fn push(&mut self, id: u32) {
        let mut delta = id - self.last;
        self.last = id;
        loop {
            let low = (delta & 0x7f) as u8;
            delta >>= 7;
            if delta == 0 {
                self.bytes.push(low);
                break;
            }
            self.bytes.push(low | 0x80);
        }
    }

    fn set_bits(&self, bits: &mut [u64]) {
        let (mut id, mut delta, mut shift) = (0u32, 0u32, 0u32);
        for &byte in &self.bytes {
            delta |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                id += delta;
                bits[(id / 64) as usize] |= 1 << (id % 64);
                delta = 0;
                shift = 0;
            } else {
                shift += 7;
            }
        }
    }
}

/// Why a tree cannot answer exactly as a scan would; calls then scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Inexact {
    /// A symlink: a scan follows it from wherever the walk starts.
    Symlink,
    /// An entry could not be read.
    Unreadable,
    /// The root is ignored by its parents' rules.
    IgnoredRoot,
}

/// The index of one Location.
pub(crate) struct Tree {
    pub(super) root: PathBuf,
    pub(super) files: Vec<Option<FileRecord>>,
    pub(super) by_path: BTreeMap<PathBuf, u32>,
    pub(super) dirs: HashSet<PathBuf>,
    pub(super) postings: FxHashMap<u32, Postings>,
    pub(super) posting_bytes: usize,
    pub(crate) inexact: Option<Inexact>,
    /// The files in path order, once a call asked since the last change.
    listing: Option<Listing>,
}

/// What a walker thread found for one file.
struct Found {
    relative: PathBuf,
    fingerprint: Fingerprint,
    kind: Kind,
    trigrams: Vec<u32>,
}

impl Tree {
    /// An empty index of `root` (canonical).
    pub(crate) fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            files: Vec::new(),
            by_path: BTreeMap::new(),
            dirs: HashSet::new(),
            postings: FxHashMap::default(),
            posting_bytes: 0,
            inexact: None,
            listing: None,
        }
    }

    /// The whole Location, walked and indexed. A tree `saved` earlier is brought up to date
    /// instead: only files whose fingerprint changed are read.
    pub(crate) fn build(root: &Path, saved: Option<Tree>) -> Self {
        let mut tree = saved.unwrap_or_else(|| Self::new(root));
        tree.inexact = None;
        if crate::tools::grep_ignored_by_parents(root) {
            tree.inexact = Some(Inexact::IgnoredRoot);
            return tree;
        }
        tree.rewalk(Path::new(""), &HashSet::new());
        tree
    }

    /// Files indexed (alive).
    pub(crate) fn file_count(&self) -> usize {
        self.by_path.len()
    }

    /// Roughly the memory the index holds, in bytes.
    pub(crate) fn memory(&self) -> usize {
        let paths: usize = self
            .by_path
            .keys()
            .map(|path| path.as_os_str().len() * 2 + 96)
            .sum();
        // The listing holds each path a second time.
        self.posting_bytes + self.postings.len() * 48 + paths * 2 + self.files.len() * 12
    }

    /// Walks the directory `relative` (with its parents' ignore rules) and indexes what it finds:
    /// the whole subtree, or its own entries only with `depth`. Files whose fingerprint did not
    /// change keep their entry. Returns the files and directories the walk saw.
    fn walk(
        &mut self,
        relative: &Path,
        depth: Option<usize>,
        force: &HashSet<PathBuf>,
    ) -> (HashSet<PathBuf>, HashSet<PathBuf>) {
        let start = self.root.join(relative);
        let boundary = Boundary::new(&self.root);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut builder = walk::builder(&start, &boundary);
        builder.threads(threads).parents(true).max_depth(depth);
        let dirs: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
        let inexact: Mutex<Option<Inexact>> = Mutex::new(None);
        let files_seen: Mutex<HashSet<PathBuf>> = Mutex::new(HashSet::new());
        let known: FxHashMap<PathBuf, Fingerprint> = self
            .by_path
            .range(relative.to_path_buf()..)
            .take_while(|(path, _)| path.starts_with(relative))
            .filter(|(path, _)| depth.is_none() || path.parent() == Some(relative))
            // A file reported changed is read again whatever its fingerprint says: two writes
            // within one tick of the file system's clock can leave the same one.
            .filter(|(path, _)| !force.contains(*path))
            .filter_map(|(path, id)| {
                let record = self.files[*id as usize].as_ref()?;
                Some((path.clone(), record.fingerprint))
            })
            .collect();
        let root = self.root.clone();
        // Each file goes into the index as soon as it is read, so the walk holds no more than
        // one file's trigrams per thread.
        let tree = Mutex::new(&mut *self);
        builder.build_parallel().run(|| {
            let (tree, dirs, inexact, known, files_seen, root) =
                (&tree, &dirs, &inexact, &known, &files_seen, &root);
            let mut seen = Seen::default();
            Box::new(move |entry| {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(_) => {
                        *inexact.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(Inexact::Unreadable);
                        return WalkState::Continue;
                    }
                };
                if entry.path_is_symlink() {
                    *inexact.lock().unwrap_or_else(|e| e.into_inner()) = Some(Inexact::Symlink);
                    return WalkState::Continue;
                }
                let Ok(relative) = entry.path().strip_prefix(root) else {
                    return WalkState::Continue;
                };
                let relative = relative.to_path_buf();
                match entry.file_type() {
                    Some(kind) if kind.is_dir() => {
                        dirs.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(relative);
                    }
                    Some(kind) if kind.is_file() => {
                        let Ok(meta) = entry.metadata() else {
                            *inexact.lock().unwrap_or_else(|e| e.into_inner()) =
                                Some(Inexact::Unreadable);
                            return WalkState::Continue;
                        };
                        let fingerprint = Fingerprint::of(&meta);
                        files_seen
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(relative.clone());
                        if known.get(&relative) == Some(&fingerprint) {
                            return WalkState::Continue;
                        }
                        let (kind, trigrams) = seen.read(entry.path(), fingerprint.len);
                        tree.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(Found {
                                relative,
                                fingerprint,
                                kind,
                                trigrams,
                            });
                    }
                    _ => {}
                }
                WalkState::Continue
            })
        });
        let _ = tree.into_inner();
        if let Some(inexact) = inexact.into_inner().unwrap_or_else(|e| e.into_inner()) {
            self.inexact = Some(inexact);
        }
        if boundary.refused() > 0 {
            self.inexact = Some(Inexact::Symlink);
        }
        let dirs_seen: HashSet<PathBuf> = dirs
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .collect();
        self.dirs.extend(dirs_seen.iter().cloned());
        (
            files_seen.into_inner().unwrap_or_else(|e| e.into_inner()),
            dirs_seen,
        )
    }

    fn insert(&mut self, file: Found) {
        self.remove_file(&file.relative);
        self.listing = None;
        let id = u32::try_from(self.files.len()).unwrap_or(u32::MAX);
        for trigram in &file.trigrams {
            let postings = self.postings.entry(*trigram).or_default();
            let before = postings.bytes.len();
            postings.push(id);
            self.posting_bytes += postings.bytes.len() - before;
        }
        self.by_path.insert(file.relative, id);
        self.files.push(Some(FileRecord {
            fingerprint: file.fingerprint,
            kind: file.kind,
        }));
    }

    fn remove_file(&mut self, relative: &Path) {
        if let Some(id) = self.by_path.remove(relative) {
            self.files[id as usize] = None;
            self.listing = None;
        }
    }

    /// Forgets everything at or below `relative` (a directory).
    fn remove_tree(&mut self, relative: &Path) {
        let below: Vec<PathBuf> = self
            .by_path
            .range(relative.to_path_buf()..)
            .take_while(|(path, _)| path.starts_with(relative))
            .map(|(path, _)| path.clone())
            .collect();
        for path in below {
            self.remove_file(&path);
        }
        self.dirs.retain(|dir| !dir.starts_with(relative));
    }

    /// Brings the index up to date with the changes at `paths` (absolute), as the watcher
    /// reported them: each changed entry's directory is read again, and a directory that
    /// appeared, or whose ignore rules changed, is walked whole. `walk_whole` names directories
    /// to walk whole regardless.
    pub(crate) fn refresh(&mut self, paths: &[PathBuf], walk_whole: &[PathBuf]) {
        let force: HashSet<PathBuf> = paths
            .iter()
            .filter_map(|path| path.strip_prefix(&self.root).ok())
            .map(Path::to_path_buf)
            .collect();
        let mut by_dir: BTreeMap<PathBuf, HashSet<PathBuf>> = BTreeMap::new();
        let mut whole: Vec<PathBuf> = walk_whole.to_vec();
        for path in paths {
            let Ok(relative) = path.strip_prefix(&self.root) else {
                continue;
            };
            if relative.components().any(|c| c.as_os_str() == ".git") {
                continue;
            }
            let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
                continue;
            };
            if !self.dirs.contains(parent) {
                // Inside an ignored or vanished directory, or one whose appearance is itself a
                // change of its parent.
                continue;
            }
            if name == ".gitignore" || name == ".ignore" {
                whole.push(parent.to_path_buf());
                continue;
            }
            by_dir
                .entry(parent.to_path_buf())
                .or_default()
                .insert(relative.to_path_buf());
        }
        whole.sort();
        whole.dedup();
        // A directory walked whole needs none of its descendants walked again.
        let mut kept: Vec<PathBuf> = Vec::new();
        for dir in whole {
            if !kept.iter().any(|done| dir.starts_with(done)) {
                kept.push(dir);
            }
        }
        for dir in &kept {
            // Only a directory its parent's walk entered: walked from itself, an ignored one
            // would show everything in it.
            if dir.as_os_str().is_empty() || self.dirs.contains(dir) {
                self.rewalk(dir, &force);
            }
        }
        for (dir, changed) in by_dir {
            if kept.iter().any(|done| dir.starts_with(done)) || !self.dirs.contains(&dir) {
                continue;
            }
            let (files, dirs) = self.walk(&dir, Some(1), &force);
            for entry in changed {
                if dirs.contains(&entry) {
                    // A directory that was there before keeps its entries; each of their own
                    // changes is reported on its own. One that appeared is walked whole.
                    self.rewalk(&entry, &force);
                } else if !files.contains(&entry) {
                    self.remove_file(&entry);
                    self.remove_tree(&entry);
                }
            }
        }
    }

    /// Walks the directory `relative` whole again, forgetting what is no longer there.
    pub(crate) fn rewalk(&mut self, relative: &Path, force: &HashSet<PathBuf>) {
        let before: Vec<PathBuf> = self
            .by_path
            .range(relative.to_path_buf()..)
            .take_while(|(path, _)| path.starts_with(relative))
            .map(|(path, _)| path.clone())
            .collect();
        self.dirs
            .retain(|dir| !dir.starts_with(relative) || dir == relative);
        if !self.root.join(relative).is_dir() {
            self.remove_tree(relative);
            return;
        }
        let (files, _) = self.walk(relative, None, force);
        for path in before {
            if !files.contains(&path) {
                self.remove_file(&path);
            }
        }
    }

    /// Whether the directory `relative` was walked.
    pub(crate) fn has_dir(&self, relative: &Path) -> bool {
        self.dirs.contains(relative)
    }

    /// Every live file's path below the root, in path order (shared between calls), and the
    /// files at or below the directory `relative` among them, each marked with whether it must
    /// be searched for `plan` (it may match, or it is not indexed).
    pub(crate) fn list(
        &mut self,
        relative: &Path,
        plan: &Plan,
    ) -> (Arc<[PathBuf]>, Vec<IndexedFile>) {
        let candidates = self.evaluate(plan);
        let listing = Listing::of(&mut self.listing, &self.by_path);
        let files = listing
            .below(relative)
            .map(|at| {
                let id = listing.ids[at];
                let kind = self.files[id as usize]
                    .as_ref()
                    .map_or(Kind::Live, |record| record.kind);
                let search = match kind {
                    Kind::Live => true,
                    Kind::Binary => false,
                    Kind::Text => candidates
                        .as_ref()
                        .is_none_or(|bits| bits[(id / 64) as usize] & (1 << (id % 64)) != 0),
                };
                IndexedFile {
                    at: at as u32,
                    search,
                    binary: kind == Kind::Binary,
                }
            })
            .collect();
        (listing.paths.clone(), files)
    }

    /// Calls `visit` with each file at or below the directory `relative`: its path below that
    /// directory and its modification time.
    pub(crate) fn each_file(&mut self, relative: &Path, visit: &mut dyn FnMut(&Path, SystemTime)) {
        let listing = Listing::of(&mut self.listing, &self.by_path);
        let whole = relative.as_os_str().is_empty();
        for at in listing.below(relative) {
            let path = &listing.paths[at];
            if let Some(record) = &self.files[listing.ids[at] as usize] {
                let below = if whole {
                    path.as_path()
                } else {
                    path.strip_prefix(relative).unwrap_or(path)
                };
                visit(below, record.fingerprint.modified);
            }
        }
    }

    /// The ids that may match, as a bit set; `None` for all.
    fn evaluate(&self, plan: &Plan) -> Option<Vec<u64>> {
        let words = self.files.len() / 64 + 1;
        match plan {
            Plan::All => None,
            Plan::Nothing => Some(vec![0; words]),
            Plan::Trigrams(trigrams) => {
                let mut result: Option<Vec<u64>> = None;
                for trigram in trigrams {
                    let mut bits = vec![0; words];
                    if let Some(postings) = self.postings.get(trigram) {
                        postings.set_bits(&mut bits);
                    }
                    result = Some(intersect(result, bits));
                }
                result
            }
            Plan::And(parts) => {
                let mut result: Option<Vec<u64>> = None;
                for part in parts {
                    if let Some(bits) = self.evaluate(part) {
                        result = Some(intersect(result, bits));
                    }
                }
                result
            }
            Plan::Or(parts) => {
                let mut result = vec![0; words];
                for part in parts {
                    let bits = self.evaluate(part)?;
                    for (word, more) in result.iter_mut().zip(bits) {
                        *word |= more;
                    }
                }
                Some(result)
            }
        }
    }
}

fn intersect(into: Option<Vec<u64>>, bits: Vec<u64>) -> Vec<u64> {
    match into {
        None => bits,
        Some(mut into) => {
            for (word, more) in into.iter_mut().zip(bits) {
                *word &= more;
            }
            into
        }
    }
}

/// A walker thread's scratch space for a file's distinct trigrams.
#[derive(Default)]
struct Seen {
    bits: Vec<u64>,
}

impl Seen {
    /// Reads the file at `path` and returns its kind and distinct trigrams.
    fn read(&mut self, path: &Path, len: u64) -> (Kind, Vec<u32>) {
        if len > MAX_FILE_BYTES {
            return (Kind::Live, Vec::new());
        }
        let Ok(bytes) = std::fs::read(path) else {
            return (Kind::Live, Vec::new());
        };
        if bytes.len() as u64 > MAX_FILE_BYTES
            || bytes.starts_with(&[0xEF, 0xBB, 0xBF])
            || bytes.starts_with(&[0xFF, 0xFE])
            || bytes.starts_with(&[0xFE, 0xFF])
        {
            return (Kind::Live, Vec::new());
        }
        if memchr::memchr(0, &bytes).is_some() {
            return (Kind::Binary, Vec::new());
        }
        if self.bits.is_empty() {
            self.bits = vec![0; (1 << 24) / 64];
        }
        let mut trigrams = Vec::new();
        for window in bytes.windows(3) {
            let trigram = trigram([window[0], window[1], window[2]]);
            let (word, bit) = ((trigram / 64) as usize, 1u64 << (trigram % 64));
            if self.bits[word] & bit == 0 {
                self.bits[word] |= bit;
                trigrams.push(trigram);
            }
        }
        for trigram in &trigrams {
            self.bits[(trigram / 64) as usize] = 0;
        }
        (Kind::Text, trigrams)
    }
}
