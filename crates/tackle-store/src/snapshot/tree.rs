//! The Location's files as the snapshot store last saw them, kept up to date incrementally.
//!
//! Every path is in one of two states: *tracked* (a file, a symlink or a directory, with its
//! content hash and mode) or *opaque* (present, but never looked into or touched: ignored by the
//! ignore rules, `.git`, tackle's own data directory, a FIFO or device, an unreadable
//! directory, a temporary file of tackle's). Recording opaque paths is what lets an undo prove
//! it never touches an ignored file: a path that is opaque in either state of a change is not
//! part of that change, whatever the ignore rules said at the other end.
//!
//! The ignore rules are tackle's own reading of `.gitignore` and `.ignore` files (through the
//! `ignore` crate's matcher), per directory, nearest first, then those above the root, git's
//! exclude file and the global one. The walk and the later checks use the same rules, so what
//! was tracked and what was opaque is always decided once.
//!
//! Each change to a path is logged with the version of the refresh that saw it, so the state of
//! any pinned earlier version can be read back: a call's change set is the log since its
//! "before" mark, not a second full copy of the tree.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::codec::{Reader, Writer};
use super::watch::{DirKey, Dirty, Watcher};
use super::{Entry, Kind, MAX_KEPT_FILE, Objects, RelPath, SnapshotError, io};

/// How much newer than a file's mtime and ctime a snapshot must be to trust its cached hash:
/// file timestamps come from a coarse clock (a few milliseconds).
const RACY_NS: i128 = 100_000_000;

/// A path's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// A file, symlink or directory tackle tracks.
    Tracked(Entry),
    /// Present, never looked into or touched.
    Opaque,
}

/// What the cache keeps per file: the stat that was hashed, and the entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cached {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    inode: u64,
    mode: u32,
    /// When the scan that hashed it started.
    taken_ns: i128,
    entry: Entry,
}

/// One directory's ignore rules, and a fingerprint of their source to notice a change.
struct DirRules {
    matcher: Gitignore,
    fingerprint: blake3::Hash,
}

/// Whether a path's content is never to be read or kept (a secret the read rules protect).
pub type SecretFilter = Arc<dyn Fn(&RelPath) -> bool + Send + Sync>;

pub(crate) struct Tree {
    pub(crate) secret: Option<SecretFilter>,
    root: PathBuf,
    excluded: Option<PathBuf>,
    slots: BTreeMap<RelPath, Slot>,
    cache: HashMap<RelPath, Cached>,
    rules: HashMap<DirKey, Arc<DirRules>>,
    /// Rules from outside the tree: parents' ignore files, git's exclude file, the global one.
    outer: Vec<Gitignore>,
    watcher: Option<Watcher>,
    /// Bumped by every refresh.
    version: u64,
    /// `(version, path, state before that version)` for every change since the oldest pin.
    log: Vec<(u64, RelPath, Option<Slot>)>,
    pins: BTreeMap<u64, usize>,
    /// False until the first full scan is done.
    pub(crate) built: bool,
    cache_dirty: bool,
}

/// A path's state before and after some refreshes.
pub(crate) type Span = (Option<Slot>, Option<Slot>);

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or_default()
}

/// True for the name of a file tool's temporary file (`.tackle-` + 12 characters + `.tmp`).
fn is_temp_name(name: &[u8]) -> bool {
    name.len() == 8 + 12 + 4 && name.starts_with(b".tackle-") && name.ends_with(b".tmp")
}

impl Tree {
    pub(crate) fn new(root: &Path, excluded: Option<PathBuf>) -> Self {
        Self {
            secret: None,
            root: root.to_path_buf(),
            excluded,
            slots: BTreeMap::new(),
            cache: HashMap::new(),
            rules: HashMap::new(),
            outer: outer_rules(root),
            watcher: None,
            version: 0,
            log: Vec::new(),
            pins: BTreeMap::new(),
            built: false,
            cache_dirty: false,
        }
    }

    /// The first full scan; watches are added as directories are read, each before its listing,
    /// so nothing that happens after a directory was read is missed.
    pub(crate) fn build(&mut self, objects: &Objects) {
        self.watcher = Watcher::new();
        self.scan(objects, vec![(None, true)]);
        self.built = true;
        self.log.clear();
    }

    /// Brings the tree up to date with the disk and returns the new version.
    pub(crate) fn refresh(&mut self, objects: &Objects) -> u64 {
        self.version += 1;
        let dirty = match self.watcher.as_mut() {
            Some(watcher) => watcher.drain(),
            None => Dirty::Everything,
        };
        match dirty {
            Dirty::Everything => self.scan(objects, vec![(None, true)]),
            // A moved directory's watch is re-pointed by the watcher whichever of its two
            // names is scanned first.
            Dirty::Dirs(dirs) => {
                self.scan(objects, dirs.into_iter().map(|dir| (dir, false)).collect());
            }
        }
        self.trim_log();
        self.version
    }

    /// Scans each `(directory, whole subtree)`; a directory seen for the first time, or whose
    /// ignore rules changed, is scanned with its whole subtree.
    fn scan(&mut self, objects: &Objects, mut stack: Vec<(DirKey, bool)>) {
        let taken_ns = now_ns();
        let mut seen = BTreeSet::new();
        // Parents first (the stack pops from its end): a directory that became a link or a file
        // is settled by its parent before anything would list it.
        stack.reverse();
        while let Some((dir, subtree)) = stack.pop() {
            if !seen.insert((dir.clone(), subtree)) {
                continue;
            }
            stack.extend(self.scan_dir(objects, &dir, subtree, taken_ns));
        }
    }

    /// Scans one directory; returns the directories to scan next.
    fn scan_dir(
        &mut self,
        objects: &Objects,
        dir: &DirKey,
        mut subtree: bool,
        taken_ns: i128,
    ) -> Vec<(DirKey, bool)> {
        if let Some(rel) = dir
            && !matches!(self.slots.get(rel), Some(Slot::Tracked(e)) if e.kind == Kind::Dir)
        {
            return Vec::new();
        }
        let path = self.abs(dir);
        // Never list through a symlink: what it points to is not the Location's.
        if !is_real_dir(&path) {
            return Vec::new();
        }
        if let Some(watcher) = self.watcher.as_mut()
            && !watcher.watch(&path, dir)
        {
            tracing::warn!(
                "a directory could not be watched (the inotify watch limit?); snapshots \
                 rescan the whole tree from now on"
            );
            self.watcher = None;
        }
        let names = match list(&path) {
            Ok(names) => names,
            Err(_) => {
                // Unreadable: nothing under it is known, so nothing under it is ever touched.
                if let Some(rel) = dir {
                    self.set(rel, Some(Slot::Opaque));
                }
                return Vec::new();
            }
        };
        if self.load_rules(dir, &path) && self.built {
            subtree = true;
        }
        let gone: Vec<RelPath> = self
            .children(dir)
            .into_iter()
            .filter(|child| !names.contains(child.name()))
            .collect();
        for child in gone {
            self.set(&child, None);
        }
        let mut next = Vec::new();
        for name in names {
            let child = match dir {
                Some(rel) => rel.join(&name),
                None => RelPath::top(&name),
            };
            let was_dir =
                matches!(self.slots.get(&child), Some(Slot::Tracked(e)) if e.kind == Kind::Dir);
            let slot = self.classify(objects, &child, &name, taken_ns);
            let is_dir = matches!(&slot, Some(Slot::Tracked(e)) if e.kind == Kind::Dir);
            self.set(&child, slot);
            if is_dir && (subtree || !was_dir) {
                next.push((Some(child), true));
            }
        }
        next
    }

    /// What `child` is now.
    fn classify(
        &mut self,
        objects: &Objects,
        child: &RelPath,
        name: &[u8],
        taken_ns: i128,
    ) -> Option<Slot> {
        let path = child.under_root(&self.root);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if name == b".git" || is_temp_name(name) || self.excluded.as_deref() == Some(&path) {
            return Some(Slot::Opaque);
        }
        let kind = meta.file_type();
        if !(kind.is_file() || kind.is_dir() || kind.is_symlink()) {
            return Some(Slot::Opaque);
        }
        if self.ignored(child, &path, kind.is_dir()) {
            return Some(Slot::Opaque);
        }
        // A file the read rules protect is never hashed or kept, so never touched either.
        if !kind.is_dir() && self.secret.as_ref().is_some_and(|secret| secret(child)) {
            return Some(Slot::Opaque);
        }
        let mode = meta.mode() & 0o7777;
        if kind.is_dir() {
            return Some(Slot::Tracked(Entry::dir(mode)));
        }
        let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        let ctime_ns = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
        if let Some(cached) = self.cache.get(child)
            && cached.size == meta.len()
            && cached.mtime_ns == mtime_ns
            && cached.ctime_ns == ctime_ns
            && cached.inode == meta.ino()
            && cached.mode == mode
            && mtime_ns.max(ctime_ns) + RACY_NS < cached.taken_ns
            && (cached.entry.kind == Kind::Symlink) == kind.is_symlink()
        {
            return Some(Slot::Tracked(cached.entry.clone()));
        }
        // Gone or unreadable since the listing: an unreadable file is never touched either.
        let Ok(entry) = hash_entry(objects, &path, kind.is_symlink(), mode, meta.len()) else {
            return std::fs::symlink_metadata(&path)
                .is_ok()
                .then_some(Slot::Opaque);
        };
        self.cache.insert(
            child.clone(),
            Cached {
                size: meta.len(),
                mtime_ns,
                ctime_ns,
                inode: meta.ino(),
                mode,
                taken_ns,
                entry: entry.clone(),
            },
        );
        self.cache_dirty = true;
        Some(Slot::Tracked(entry))
    }

    /// Whether the ignore rules exclude `child`: the nearest directory's rules that say
    /// anything decide, then the rules from outside the tree.
    fn ignored(&self, child: &RelPath, path: &Path, is_dir: bool) -> bool {
        let dirs = child.ancestors().map(Some).chain(std::iter::once(None));
        for dir in dirs {
            if let Some(rules) = self.rules.get(&dir) {
                let matched = rules.matcher.matched(path, is_dir);
                if matched.is_ignore() {
                    return true;
                }
                if matched.is_whitelist() {
                    return false;
                }
            }
        }
        for matcher in &self.outer {
            let matched = matcher.matched(path, is_dir);
            if matched.is_ignore() {
                return true;
            }
            if matched.is_whitelist() {
                return false;
            }
        }
        false
    }

    /// Reads `dir`'s `.gitignore` and `.ignore`; true when they differ from what was known.
    fn load_rules(&mut self, dir: &DirKey, path: &Path) -> bool {
        let mut source = Vec::new();
        let mut builder = GitignoreBuilder::new(path);
        for name in [".gitignore", ".ignore"] {
            let file = path.join(name);
            if let Ok(bytes) = std::fs::read(&file) {
                source.extend_from_slice(name.as_bytes());
                source.extend_from_slice(&bytes);
                builder.add(&file);
            }
        }
        let fingerprint = blake3::hash(&source);
        let known = self.rules.get(dir).map(|rules| rules.fingerprint);
        if source.is_empty() {
            return self.rules.remove(dir).is_some();
        }
        if known == Some(fingerprint) {
            return false;
        }
        let matcher = builder.build().unwrap_or_else(|_| Gitignore::empty());
        self.rules.insert(
            dir.clone(),
            Arc::new(DirRules {
                matcher,
                fingerprint,
            }),
        );
        true
    }

    fn abs(&self, dir: &DirKey) -> PathBuf {
        match dir {
            Some(rel) => rel.under_root(&self.root),
            None => self.root.clone(),
        }
    }

    /// The direct children of `dir` in the tree.
    fn children(&self, dir: &DirKey) -> Vec<RelPath> {
        match dir {
            None => self
                .slots
                .keys()
                .filter(|path| path.depth() == 1)
                .cloned()
                .collect(),
            Some(rel) => {
                let depth = rel.depth() + 1;
                self.subtree(rel)
                    .filter(|path| path.depth() == depth)
                    .cloned()
                    .collect()
            }
        }
    }

    /// Every path strictly under `dir`.
    fn subtree<'a>(&'a self, dir: &'a RelPath) -> impl Iterator<Item = &'a RelPath> + 'a {
        self.slots
            .range((std::ops::Bound::Excluded(dir), std::ops::Bound::Unbounded))
            .map(|(path, _)| path)
            .take_while(move |path| path.is_under(dir))
    }

    /// Sets `path`'s state, logging the old one; a directory that stops being one takes its
    /// subtree with it.
    fn set(&mut self, path: &RelPath, slot: Option<Slot>) {
        let old = self.slots.get(path).cloned();
        if old == slot {
            return;
        }
        let was_dir = matches!(&old, Some(Slot::Tracked(e)) if e.kind == Kind::Dir);
        let is_dir = matches!(&slot, Some(Slot::Tracked(e)) if e.kind == Kind::Dir);
        if was_dir && !is_dir {
            let under: Vec<RelPath> = self.subtree(path).cloned().collect();
            for child in under.into_iter().rev() {
                let old = self.slots.remove(&child);
                self.log_change(child, old);
            }
            if let Some(watcher) = self.watcher.as_mut() {
                watcher.forget(path);
            }
        }
        match slot {
            Some(slot) => self.slots.insert(path.clone(), slot),
            None => self.slots.remove(path),
        };
        self.log_change(path.clone(), old);
    }

    fn log_change(&mut self, path: RelPath, old: Option<Slot>) {
        if self.built && !self.pins.is_empty() {
            self.log.push((self.version, path, old));
        }
    }

    /// Keeps the log from `version` on readable until it is unpinned.
    pub(crate) fn pin(&mut self, version: u64) {
        *self.pins.entry(version).or_default() += 1;
    }

    pub(crate) fn unpin(&mut self, version: u64) {
        if let Some(count) = self.pins.get_mut(&version) {
            *count -= 1;
            if *count == 0 {
                self.pins.remove(&version);
            }
        }
        self.trim_log();
    }

    fn trim_log(&mut self) {
        match self.pins.keys().next() {
            None => self.log.clear(),
            Some(oldest) => self.log.retain(|(version, ..)| version > oldest),
        }
    }

    /// Every path whose state differs between `since` (a pinned version) and now: its state
    /// then, and now.
    pub(crate) fn changes_since(&self, since: u64) -> BTreeMap<RelPath, Span> {
        let mut out: BTreeMap<RelPath, Span> = BTreeMap::new();
        for (version, path, old) in &self.log {
            if *version > since && !out.contains_key(path) {
                out.insert(path.clone(), (old.clone(), None));
            }
        }
        out.retain(|path, span| {
            span.1 = self.slots.get(path).cloned();
            span.0 != span.1
        });
        out
    }

    /// The state of `path` now.
    pub(crate) fn slot(&self, path: &RelPath) -> Option<&Slot> {
        self.slots.get(path)
    }

    /// Every content hash the current files need.
    pub(crate) fn live_hashes(&self) -> impl Iterator<Item = &str> {
        self.cache
            .iter()
            .filter(|(path, _)| {
                !self.built || matches!(self.slots.get(*path), Some(Slot::Tracked(_)))
            })
            .map(|(_, cached)| cached.entry.hash.as_str())
    }

    /// The cache in its on-disk form.
    pub(crate) fn encode_cache(&mut self) -> Option<Vec<u8>> {
        if !std::mem::take(&mut self.cache_dirty) {
            return None;
        }
        // Entries for paths no longer tracked are dropped as it is written.
        let mut w = Writer::default();
        w.0.extend_from_slice(CACHE_HEADER);
        for (path, cached) in &self.cache {
            if !matches!(self.slots.get(path), Some(Slot::Tracked(_))) && self.built {
                continue;
            }
            w.path(path);
            w.u64(cached.size);
            w.i128(cached.mtime_ns);
            w.i128(cached.ctime_ns);
            w.u64(cached.inode);
            w.u32(cached.mode);
            w.i128(cached.taken_ns);
            w.entry(Some(&cached.entry));
        }
        Some(w.0)
    }

    /// Loads a cache [`encode_cache`](Self::encode_cache) wrote; other bytes are ignored.
    pub(crate) fn load_cache(&mut self, bytes: &[u8]) {
        let Some(body) = bytes.strip_prefix(CACHE_HEADER) else {
            return;
        };
        let mut r = Reader(body);
        while !r.is_empty() {
            let read = (|| {
                let path = r.path()?;
                let cached = Cached {
                    size: r.u64()?,
                    mtime_ns: r.i128()?,
                    ctime_ns: r.i128()?,
                    inode: r.u64()?,
                    mode: r.u32()?,
                    taken_ns: r.i128()?,
                    entry: r.entry()??,
                };
                Some((path, cached))
            })();
            let Some((path, cached)) = read else { return };
            self.cache.insert(path, cached);
        }
    }
}

const CACHE_HEADER: &[u8] = b"tackle-snapshot-cache 2\n";

/// Whether `path` is a directory itself, not a link to one.
fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// The names in a directory, `.` and `..` left out.
fn list(path: &Path) -> std::io::Result<BTreeSet<Vec<u8>>> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(path)? {
        names.insert(entry?.file_name().as_bytes().to_vec());
    }
    Ok(names)
}

/// Hashes a file (its bytes, kept when small enough) or a link (its target) by descriptor: a
/// file swapped for a link or a FIFO meanwhile is refused, never followed or blocked on.
fn hash_entry(
    objects: &Objects,
    path: &Path,
    symlink: bool,
    mode: u32,
    size: u64,
) -> Result<Entry, SnapshotError> {
    if symlink {
        let target = std::fs::read_link(path).map_err(io("reading a link"))?;
        let bytes = target.as_os_str().as_bytes();
        return Ok(Entry {
            kind: Kind::Symlink,
            mode,
            size: bytes.len() as u64,
            hash: objects.put(bytes)?,
            kept: true,
        });
    }
    let flags = (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(io("reading a file"))?;
    let meta = file.metadata().map_err(io("reading a file"))?;
    if !meta.is_file() {
        return Err(SnapshotError::Io {
            what: "reading a file".into(),
            source: std::io::Error::other("not a regular file"),
        });
    }
    if size > MAX_KEPT_FILE || meta.len() > MAX_KEPT_FILE {
        let mut hasher = blake3::Hasher::new();
        std::io::copy(&mut file, &mut hasher).map_err(io("hashing a large file"))?;
        return Ok(Entry {
            kind: Kind::File,
            mode,
            size: meta.len(),
            hash: hasher.finalize().to_hex().to_string(),
            kept: false,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut file)
        .take(MAX_KEPT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(io("reading a file"))?;
    Ok(Entry {
        kind: Kind::File,
        mode,
        size: bytes.len() as u64,
        hash: objects.put(&bytes)?,
        kept: true,
    })
}

/// The rules that apply from outside the Location: ignore files in its parent directories (up
/// to the repository's top), git's exclude file and the global excludes file.
fn outer_rules(root: &Path) -> Vec<Gitignore> {
    let mut rules = Vec::new();
    let mut top = None;
    for dir in root.ancestors() {
        if dir.join(".git").exists() {
            top = Some(dir.to_path_buf());
            break;
        }
    }
    if let Some(top) = &top {
        for dir in root.ancestors().skip(1) {
            if !dir.starts_with(top) {
                break;
            }
            let mut builder = GitignoreBuilder::new(dir);
            let mut any = false;
            for name in [".gitignore", ".ignore"] {
                let file = dir.join(name);
                if file.is_file() {
                    builder.add(file);
                    any = true;
                }
            }
            if any && let Ok(matcher) = builder.build() {
                rules.push(matcher);
            }
        }
        let exclude = top.join(".git").join("info").join("exclude");
        if exclude.is_file() {
            let mut builder = GitignoreBuilder::new(top);
            builder.add(exclude);
            if let Ok(matcher) = builder.build() {
                rules.push(matcher);
            }
        }
    }
    let (global, _) = Gitignore::global();
    if !global.is_empty() {
        rules.push(global);
    }
    rules
}
