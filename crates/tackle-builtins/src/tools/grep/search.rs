//! The search behind the grep tool: a parallel walk that searches each file and keeps only the
//! best matches.
//!
//! Every walker thread searches files with its own [`Searcher`] and a [`FileSink`] that keeps at
//! most `limit` lines of one file. When a file ends, its lines go into one shared bounded heap of
//! the best `limit` matches by (mtime newest first, path, line); everything else is only counted.
//! Memory stays bounded by `limit` lines of at most [`LINE_CAP`] characters per thread, however
//! many matches there are.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use globset::GlobMatcher;
use grep::searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::gitignore::GitignoreBuilder;
use ignore::{WalkBuilder, WalkState};

use super::matcher::LineMatcher;
use crate::tools::IndexedFiles;
use crate::tools::readable::{Readable, RealDirs};
use crate::tools::walk::{self, Boundary};

/// Matched lines are cut to this many characters.
pub(super) const LINE_CAP: usize = 2000;

/// The most a searcher buffers for one line; a file with a longer line is reported unreadable.
const HEAP_LIMIT: usize = 64 * 1024 * 1024;

/// One matching line kept for the output. Ordered best first: newest file, then path, then line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Hit {
    /// The file's modification time, newest first.
    pub(super) newest: Reverse<SystemTime>,
    /// The file as the walk found it.
    pub(super) path: Arc<Path>,
    /// The 1-based line number.
    pub(super) line: u64,
    /// The line without its terminator, cut to [`LINE_CAP`] characters.
    pub(super) text: String,
    /// True when `text` was cut.
    pub(super) cut: bool,
}

/// What a search looks for and where.
pub(super) struct Query {
    /// The file or directory searched.
    pub(super) root: PathBuf,
    /// Symlinks whose target lies outside it are not followed.
    pub(super) boundary: Boundary,
    /// The compiled pattern.
    pub(super) matcher: LineMatcher,
    /// Only files whose name or path below `root` matches are searched.
    pub(super) include: Option<GlobMatcher>,
    /// The most matches kept.
    pub(super) limit: usize,
    /// Files whose `read` would not be allowed at once are not searched.
    pub(super) readable: Readable,
}

/// What a search found.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// The best matches, sorted best first.
    pub(super) hits: Vec<Hit>,
    /// Every matching line found.
    pub(super) total: usize,
    /// Files with at least one matching line.
    pub(super) files: usize,
    /// Files searched (binary ones included).
    pub(super) searched: usize,
    /// Files skipped because they hold binary data.
    pub(super) binary: usize,
    /// Files or directories that could not be read.
    pub(super) unreadable: usize,
    /// Files not searched because their `read` is denied or would ask.
    pub(super) withheld: usize,
    /// Symlinks not followed because they lead outside the boundary.
    pub(super) outside_links: usize,
    /// True when the search stopped early because `stop` said so.
    pub(super) stopped: bool,
}

/// Files a thread of a listed search takes at a time.
const BLOCK: usize = 64;

/// The state the walker threads share.
struct Shared {
    limit: usize,
    best: Mutex<Best>,
    searched: AtomicUsize,
    unreadable: AtomicUsize,
    withheld: AtomicUsize,
    /// Binary files counted without being searched (an index knew them).
    binary_known: AtomicUsize,
}

impl Shared {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            best: Mutex::new(Best::default()),
            searched: AtomicUsize::new(0),
            unreadable: AtomicUsize::new(0),
            withheld: AtomicUsize::new(0),
            binary_known: AtomicUsize::new(0),
        }
    }
}

/// What one thread counted, added to the shared counts when it ends: threads share no
/// counter per file.
#[derive(Default)]
struct Tally {
    searched: usize,
    unreadable: usize,
    withheld: usize,
    binary_known: usize,
}

#[derive(Default)]
struct Best {
    /// A max-heap of the best matches: the worst kept one sits on top.
    heap: BinaryHeap<Hit>,
    total: usize,
    files: usize,
    binary: usize,
}

impl Best {
    /// Whether a match ranked `(newest, path, line)` would be kept.
    fn would_keep(
        &self,
        limit: usize,
        newest: Reverse<SystemTime>,
        path: &Path,
        line: u64,
    ) -> bool {
        if self.heap.len() < limit {
            return true;
        }
        self.heap
            .peek()
            .is_some_and(|worst| (newest, path, line) < (worst.newest, &*worst.path, worst.line))
    }
}

/// Runs the search. `stop` is polled for every entry and every match; once it returns true the
/// walk quits and what was found so far comes back with `stopped` set.
pub(super) fn search(query: Query, stop: &(dyn Fn() -> bool + Sync)) -> Found {
    let shared = Shared::new(query.limit);
    let boundary = query.boundary.clone();
    let stopped = std::sync::atomic::AtomicBool::new(false);
    let walker = walker(&query, &boundary).build_parallel();

    walker.run(|| {
        let mut worker = Worker::new(&query, &shared);
        let shared = &shared;
        let query = &query;
        let stopped = &stopped;
        Box::new(move |result| {
            if stop() {
                stopped.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            let entry = match result {
                Ok(entry) => entry,
                // A symlink loop is not worth a note: everything on it was searched once.
                Err(error) if is_loop(&error) => return WalkState::Continue,
                Err(_) => {
                    shared.unreadable.fetch_add(1, Ordering::Relaxed);
                    return WalkState::Continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let origin = Origin::Walked {
                is_link: entry.path_is_symlink(),
            };
            if worker.visit(query, entry.path(), origin, stop) {
                stopped.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    finish(shared, &boundary, stopped.into_inner())
}

/// Runs the search over `listed`, what a walk of the root would find as an index listed it:
/// each file the index says cannot match is only counted (as binary when it is), every other
/// one is searched as a walk's would be. The threads take the files a block at a time, so a
/// slow part of the list does not hold up the rest. The result equals [`search`]'s.
pub(super) fn search_listed(
    query: Query,
    listed: IndexedFiles,
    stop: &(dyn Fn() -> bool + Sync),
) -> Found {
    let shared = Shared::new(query.limit);
    let stopped = std::sync::atomic::AtomicBool::new(false);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(listed.files.len().div_ceil(BLOCK))
        .max(1);
    // Names are the listed paths themselves when they lie below the Location root.
    let named = query.readable.names_below(&listed.base);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (query, shared, stopped, next, listed) =
                (&query, &shared, &stopped, &next, &listed);
            scope.spawn(move || {
                let mut worker = Worker::new(query, shared);
                let mut path = listed.base.clone();
                loop {
                    let start = next.fetch_add(BLOCK, Ordering::Relaxed);
                    let end = (start + BLOCK).min(listed.files.len());
                    let Some(block) = listed.files.get(start..end).filter(|b| !b.is_empty()) else {
                        return;
                    };
                    // Polled once a block: a searched file polls again at each match.
                    if stopped.load(Ordering::Relaxed) || stop() {
                        stopped.store(true, Ordering::Relaxed);
                        return;
                    }
                    for file in block {
                        let relative = listed.path(file);
                        let buffer = path.as_mut_os_string();
                        buffer.clear();
                        buffer.push(&listed.base);
                        path.push(relative);
                        let origin = Origin::Listed {
                            relative: named.then_some(relative),
                            search: file.search,
                            binary: file.binary,
                        };
                        if worker.visit(query, &path, origin, stop) {
                            stopped.store(true, Ordering::Relaxed);
                            return;
                        }
                    }
                }
            });
        }
    });
    finish(shared, &query.boundary, stopped.into_inner())
}

/// How a search came to a file.
#[derive(Clone, Copy)]
enum Origin<'a> {
    /// A walk found it; `is_link` when its entry is a symlink.
    Walked { is_link: bool },
    /// An index listed it (its path is real), with its path below the Location root when that
    /// is its name, and whether it must be searched and is binary.
    Listed {
        relative: Option<&'a Path>,
        search: bool,
        binary: bool,
    },
}

/// What one thread of a search keeps between files.
struct Worker<'s> {
    searcher: Searcher,
    matcher: LineMatcher,
    dirs: RealDirs,
    shared: &'s Shared,
    tally: Tally,
}

impl<'s> Worker<'s> {
    fn new(query: &Query, shared: &'s Shared) -> Self {
        Self {
            searcher: SearcherBuilder::new()
                .binary_detection(BinaryDetection::quit(b'\0'))
                .line_number(true)
                .heap_limit(Some(HEAP_LIMIT))
                .build(),
            matcher: query.matcher.clone(),
            dirs: RealDirs::default(),
            shared,
            tally: Tally::default(),
        }
    }

    /// Searches the file at `path`, or, when an index said it need not be searched, only
    /// counts it. True when the search must stop.
    fn visit(
        &mut self,
        query: &Query,
        path: &Path,
        origin: Origin<'_>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> bool {
        if !included(query, path) {
            return false;
        }
        let shown = match origin {
            Origin::Walked { is_link } => query.readable.shows_found(&mut self.dirs, path, is_link),
            Origin::Listed {
                relative: Some(relative),
                ..
            } => query.readable.shows_listed(path, relative),
            Origin::Listed { relative: None, .. } => query.readable.shows_real_path(path),
        };
        if !shown {
            self.tally.withheld += 1;
            return false;
        }
        self.tally.searched += 1;
        if let Origin::Listed {
            search: false,
            binary,
            ..
        } = origin
        {
            self.tally.binary_known += usize::from(binary);
            return false;
        }
        let mut sink = FileSink::new(self.shared, path, stop);
        let searched = self.searcher.search_path(&self.matcher, path, &mut sink);
        if searched.is_err() && !sink.stopped {
            self.tally.unreadable += 1;
            return false;
        }
        let quit = sink.stopped;
        sink.finish();
        quit
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        let (shared, tally) = (self.shared, &self.tally);
        shared.searched.fetch_add(tally.searched, Ordering::Relaxed);
        shared
            .unreadable
            .fetch_add(tally.unreadable, Ordering::Relaxed);
        shared.withheld.fetch_add(tally.withheld, Ordering::Relaxed);
        shared
            .binary_known
            .fetch_add(tally.binary_known, Ordering::Relaxed);
    }
}

/// The result from what the threads shared.
fn finish(shared: Shared, boundary: &Boundary, stopped: bool) -> Found {
    let best = shared.best.into_inner().unwrap_or_else(|e| e.into_inner());
    Found {
        hits: best.heap.into_sorted_vec(),
        total: best.total,
        files: best.files,
        searched: shared.searched.into_inner(),
        binary: best.binary + shared.binary_known.into_inner(),
        unreadable: shared.unreadable.into_inner(),
        withheld: shared.withheld.into_inner(),
        outside_links: boundary.refused(),
        stopped,
    }
}

/// The walker: the shared rules of [`walk`](crate::tools::walk), on every core; a root that its
/// parents' rules ignore was asked for by name, so it is searched whole. Files the include glob
/// rejects are dropped as their directory is read.
fn walker(query: &Query, boundary: &Boundary) -> WalkBuilder {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut builder = match &query.include {
        Some(glob) => {
            let (glob, root) = (glob.clone(), query.root.clone());
            walk::builder_of(&query.root, boundary, move |entry| {
                includes(&glob, &root, entry.path())
            })
        }
        None => walk::builder(&query.root, boundary),
    };
    builder
        .threads(threads)
        .parents(!ignored_by_parents(&query.root));
    builder
}

/// Whether the `.gitignore` or `.ignore` of some parent directory ignores the contents of `root`
/// as a whole (`root` itself, an ancestor, or everything below it). The nearest rule that decides
/// wins.
pub(crate) fn ignored_by_parents(root: &Path) -> bool {
    if !root.is_dir() {
        return false;
    }
    let probe = root.join("\u{1}tackle-grep-probe");
    for dir in root.ancestors().skip(1) {
        for name in [".ignore", ".gitignore"] {
            let file = dir.join(name);
            if !file.is_file() {
                continue;
            }
            let mut builder = GitignoreBuilder::new(dir);
            if builder.add(&file).is_some() {
                continue;
            }
            let Ok(rules) = builder.build() else {
                continue;
            };
            // A made-up entry of the root stands for "its contents": a rule such as `out/` or
            // `out/**` ignores it, one such as `*.log` does not.
            for is_dir in [false, true] {
                let decided = rules.matched_path_or_any_parents(&probe, is_dir);
                if decided.is_ignore() {
                    return true;
                }
                if decided.is_whitelist() {
                    return false;
                }
            }
        }
    }
    false
}

fn is_loop(error: &ignore::Error) -> bool {
    match error {
        ignore::Error::Loop { .. } => true,
        ignore::Error::WithPath { err, .. } | ignore::Error::WithDepth { err, .. } => is_loop(err),
        ignore::Error::WithLineNumber { err, .. } => is_loop(err),
        _ => false,
    }
}

/// Whether the include glob accepts `path`. The walker's filter has checked every file but a
/// file named as the root.
fn included(query: &Query, path: &Path) -> bool {
    query
        .include
        .as_ref()
        .is_none_or(|glob| includes(glob, &query.root, path))
}

/// Whether `glob` accepts `path`: its name, or its path below `root`.
fn includes(glob: &GlobMatcher, root: &Path, path: &Path) -> bool {
    if path.file_name().is_some_and(|name| glob.is_match(name)) {
        return true;
    }
    path.strip_prefix(root)
        .is_ok_and(|relative| !relative.as_os_str().is_empty() && glob.is_match(relative))
}

/// Collects the matches of one file: at most `limit` lines (its first ones, which are its best),
/// counting the rest. Binary files are dropped whole.
struct FileSink<'a> {
    shared: &'a Shared,
    path: &'a Path,
    stop: &'a (dyn Fn() -> bool + Sync),
    /// The file's rank and shared path, looked up at its first match.
    rank: Option<(Reverse<SystemTime>, Arc<Path>)>,
    /// False once no further line of this file can be among the best.
    keeping: bool,
    kept: Vec<Hit>,
    count: usize,
    binary: bool,
    stopped: bool,
}

impl<'a> FileSink<'a> {
    fn new(shared: &'a Shared, path: &'a Path, stop: &'a (dyn Fn() -> bool + Sync)) -> Self {
        Self {
            shared,
            path,
            stop,
            rank: None,
            keeping: true,
            kept: Vec::new(),
            count: 0,
            binary: false,
            stopped: false,
        }
    }

    /// Merges this file into the shared state.
    fn finish(self) {
        if !self.binary && self.count == 0 {
            return;
        }
        let mut best = self.shared.best.lock().unwrap_or_else(|e| e.into_inner());
        if self.binary {
            best.binary += 1;
            return;
        }
        best.total += self.count;
        best.files += 1;
        for hit in self.kept {
            if best.heap.len() < self.shared.limit {
                best.heap.push(hit);
            } else if best.heap.peek().is_some_and(|worst| hit < *worst) {
                best.heap.pop();
                best.heap.push(hit);
            } else {
                // The lines of a file come in order: none after this one can be kept either.
                break;
            }
        }
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if (self.stop)() {
            self.stopped = true;
            return Ok(false);
        }
        self.count += 1;
        if !self.keeping {
            return Ok(true);
        }
        if self.kept.len() >= self.shared.limit {
            self.keeping = false;
            return Ok(true);
        }
        let line = mat.line_number().unwrap_or(0);
        let (newest, path) = match &self.rank {
            Some((newest, path)) => (*newest, path.clone()),
            None => {
                let modified = std::fs::metadata(self.path)
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                let rank = (Reverse(modified), Arc::<Path>::from(self.path));
                // Checked once per file: later lines rank lower and the shared heap only gets
                // stricter, so a file whose first match misses keeps nothing.
                let keep = self
                    .shared
                    .best
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .would_keep(self.shared.limit, rank.0, &rank.1, line);
                self.rank = Some(rank.clone());
                if !keep {
                    self.keeping = false;
                    return Ok(true);
                }
                rank
            }
        };
        let (text, cut) = clip(mat.bytes());
        self.kept.push(Hit {
            newest,
            path,
            line,
            text,
            cut,
        });
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// The line without its terminator, cut to [`LINE_CAP`] characters; true when it was cut. Never
/// decodes more than the bytes the cap can need.
pub(super) fn clip(bytes: &[u8]) -> (String, bool) {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    // A character takes at most 4 bytes; one more byte tells whether anything follows.
    let window = &bytes[..bytes.len().min(LINE_CAP * 4 + 1)];
    let decoded = String::from_utf8_lossy(window);
    match decoded.char_indices().nth(LINE_CAP) {
        Some((end, _)) => (decoded[..end].to_owned(), true),
        None if window.len() < bytes.len() => (decoded.into_owned(), true),
        None => (decoded.into_owned(), false),
    }
}
