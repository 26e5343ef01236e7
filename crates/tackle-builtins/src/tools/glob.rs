//! The glob tool: files whose path matches a glob, newest first.
//!
//! The walk follows the same rules as grep ([`walk`](super::walk)): it respects `.gitignore`
//! (also outside a git repository), `.ignore` and the global git excludes, includes hidden files
//! but never `.git/`, and follows symlinks with loop protection while their real target stays in
//! the Location (or in the directory named, when that is outside). A directory named explicitly as `path` is searched
//! even when it is ignored. The walk runs on every core; each walker thread keeps its own best
//! [`LIMIT`] files in a bounded heap and counts the rest, so the total is exact however many files
//! match, and memory stays bounded. A host's live index (`ToolEnv::with_index`) answers instead
//! of the walk when it can, with the same files and modification times.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use tackle_core::names::Permission;

use globset::{Candidate, GlobBuilder, GlobMatcher};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::thousands;
use tackle_core::{AnyTool, CancellationToken, Context, State, Tool, ToolFailure};

use super::{ToolEnv, failure};
use crate::fs::Resolved;
use crate::gate::Ask;

#[cfg(test)]
mod tests;

/// The most files glob shows.
const LIMIT: usize = 100;

const DESCRIPTION: &str = "Find files by name or path pattern.\n\
- pattern is a glob such as `**/*.rs`, `src/**/*.{ts,tsx}` or `Cargo.toml`. A pattern without \
/ matches file names at any depth; one with / matches paths from the searched directory, where \
`*` stays within one directory and `**` crosses directories.\n\
- path is the directory to search, relative to the working directory or absolute. Leave the \
field out to search the working directory; do not write \"undefined\" or \"null\".\n\
- Only files are returned, one path per line, the most recently modified first.\n\
- .gitignore and .ignore are respected, hidden files are included and .git is never searched. \
Name an ignored directory as path to search it anyway.\n\
- At most 100 files are shown; a last line gives the real total when there are more.\n\
- Use grep to search file contents, and list to see a directory's layout.";

/// Arguments of the glob tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobInput {
    /// The glob to match, such as `**/*.rs` or `src/**/*.{ts,tsx}`. A glob without a `/` matches
    /// file names at any depth; one with a `/` matches paths relative to the searched directory.
    pub pattern: String,
    /// The directory to search, relative to the working directory or absolute. Absent means the
    /// working directory.
    #[serde(default)]
    pub path: Option<String>,
}

/// The result of the glob tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GlobOutput {
    /// What the model reads: the matching files, newest first, one per line (relative to the
    /// working directory when inside it, absolute otherwise), then a note when some were left
    /// out; `No files found` when nothing matched.
    pub output: String,
    /// Files that matched, all of them, including those not shown.
    pub total: usize,
    /// Files shown in `output`: at most 100.
    pub shown: usize,
    /// True when some matching files were not shown.
    pub truncated: bool,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(DESCRIPTION, env.clone(), glob)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::ReadOnly)
        .erase()
}

async fn glob(
    State(env): State<ToolEnv>,
    input: GlobInput,
    cx: Context,
) -> Result<GlobOutput, ToolFailure> {
    let (env, cx) = (&env, &cx);
    let pattern = input.pattern.trim();
    if pattern.is_empty() {
        return Err(
            ToolFailure::new("`pattern` is empty, so nothing was searched.")
                .with_hint("Pass a glob such as `**/*.rs` or `*.toml`."),
        );
    }
    let matcher = Matcher::new(pattern)?;
    let given = input
        .path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    let target = env.resolve(cx, given).await?;
    let name = target.display_name();
    // Asked before the existence check, so a denied glob cannot probe for paths.
    let ask = Ask::new(Permission::GLOB.as_str(), [pattern.to_owned()])
        .with_metadata(serde_json::json!({ "pattern": pattern, "path": name }));
    env.gate.ask(cx, ask).await?;
    if !target.exists {
        return Err(ToolFailure::new(format!(
            "Directory not found: `{name}`, so nothing was searched."
        ))
        .with_hint(
            "Check the path with `list`, or leave `path` out to search the working directory.",
        ));
    }
    if !target.path.is_dir() {
        return Err(ToolFailure::new(format!(
            "`{name}` is a file, not a directory, so `glob` cannot search it."
        ))
        .with_hint("Use `read` to see its contents, or pass its directory as `path`."));
    }
    let root = target.path.clone();
    let boundary = super::walk::Boundary::for_target(env.fs().root(), &target);
    let cancel = cx.cancellation().clone();
    let index = env.index.clone();
    let walked = tokio::task::spawn_blocking(move || {
        if let Some(index) = index {
            let mut best = Best::new(LIMIT);
            let mut total = 0;
            let answered = index.glob_files(&root, &mut |relative, modified| {
                if matcher.is_match_below(relative) {
                    total += 1;
                    if best.would_keep(modified, relative) {
                        best.offer(Found {
                            modified,
                            relative: relative.to_path_buf(),
                        });
                    }
                }
            });
            if answered {
                return Walked {
                    kept: best.heap.into_sorted_vec(),
                    total,
                    errors: 0,
                    cancelled: false,
                };
            }
        }
        walk(&root, &boundary, matcher, LIMIT, &cancel)
    })
    .await
    .map_err(|join| {
        if join.is_panic() {
            std::panic::resume_unwind(join.into_panic());
        }
        failure(format!(
            "Searching `{name}` was stopped before it finished."
        ))
    })?;
    let output = render(&target, &walked);
    Ok(GlobOutput {
        output,
        total: walked.total,
        shown: walked.kept.len(),
        truncated: walked.kept.len() < walked.total,
    })
}

/// The compiled pattern, matched against file names or against paths from the searched
/// directory.
#[derive(Clone, Debug)]
struct Matcher {
    glob: GlobMatcher,
    /// True when the pattern has no `/`, so it matches names at any depth.
    name_only: bool,
}

impl Matcher {
    fn new(pattern: &str) -> Result<Self, ToolFailure> {
        // `./src/*.rs` means `src/*.rs`: paths are matched from the searched directory.
        let mut stripped = pattern;
        while let Some(rest) = stripped.strip_prefix("./") {
            stripped = rest;
        }
        let name_only = !stripped.contains('/');
        let glob = GlobBuilder::new(stripped)
            .literal_separator(true)
            .build()
            .map_err(|error| {
                ToolFailure::new(format!(
                    "`pattern` `{pattern}` is not a valid glob: {error}. Nothing was searched."
                ))
                .with_hint(
                    "Fix the glob: `*` matches within a name, `**/` any directories, `{a,b}` \
                     alternatives and `[abc]` one character; escape a literal one with `\\`.",
                )
            })?;
        Ok(Self {
            glob: glob.compile_matcher(),
            name_only,
        })
    }

    /// Whether the file at `relative`, its path below the searched directory (a plain one, as
    /// an index lists it), matches.
    fn is_match_below(&self, relative: &Path) -> bool {
        if self.name_only {
            last_name(relative)
                .is_some_and(|name| self.glob.is_match_candidate(&Candidate::new(name)))
        } else {
            !relative.as_os_str().is_empty()
                && self.glob.is_match_candidate(&Candidate::new(relative))
        }
    }

    /// Whether the file at `path`, below the searched directory `root`, matches.
    fn is_match(&self, root: &Path, path: &Path) -> bool {
        if self.name_only {
            path.file_name()
                .is_some_and(|name| self.glob.is_match_candidate(&Candidate::new(name)))
        } else {
            below(root, path)
                .is_some_and(|relative| self.glob.is_match_candidate(&Candidate::new(relative)))
        }
    }
}

/// `path` relative to `root`. The walker makes every path by joining names to the root, so the
/// root's bytes and a `/` start it: comparing bytes rather than components keeps this cheap
/// enough for every entry of a large tree.
#[cfg(unix)]
fn below<'p>(root: &Path, path: &'p Path) -> Option<&'p Path> {
    use std::os::unix::ffi::OsStrExt;
    let root = root.as_os_str().as_bytes();
    let rest = path.as_os_str().as_bytes().strip_prefix(root)?;
    let rest = if root.ends_with(b"/") {
        rest
    } else {
        rest.strip_prefix(b"/")?
    };
    Some(Path::new(std::ffi::OsStr::from_bytes(rest)))
}

#[cfg(not(unix))]
fn below<'p>(root: &Path, path: &'p Path) -> Option<&'p Path> {
    path.strip_prefix(root).ok()
}

/// The last name of `path`, a plain relative path (no `.` or `..` segment, no trailing `/`):
/// what [`Path::file_name`] gives, found without splitting the path into components.
#[cfg(unix)]
fn last_name(path: &Path) -> Option<&std::ffi::OsStr> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let name = bytes.rsplit(|&byte| byte == b'/').next()?;
    (!name.is_empty()).then(|| std::ffi::OsStr::from_bytes(name))
}

#[cfg(not(unix))]
fn last_name(path: &Path) -> Option<&std::ffi::OsStr> {
    path.file_name()
}

/// One matching file. Orders best first: newest, then by path.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Found {
    modified: SystemTime,
    /// The path relative to the searched directory.
    relative: PathBuf,
}

impl Ord for Found {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .modified
            .cmp(&self.modified)
            .then_with(|| self.relative.cmp(&other.relative))
    }
}

impl PartialOrd for Found {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The best `limit` files seen so far; the worst kept file sits on top.
#[derive(Debug)]
struct Best {
    heap: BinaryHeap<Found>,
    limit: usize,
}

impl Best {
    fn new(limit: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(limit.saturating_add(1)),
            limit,
        }
    }

    /// Whether a file modified at `modified` at `relative` would be kept.
    fn would_keep(&self, modified: SystemTime, relative: &Path) -> bool {
        if self.heap.len() < self.limit {
            return self.limit > 0;
        }
        self.heap.peek().is_some_and(|worst| {
            // Better means newer, then a smaller path.
            modified
                .cmp(&worst.modified)
                .then_with(|| worst.relative.as_path().cmp(relative))
                == Ordering::Greater
        })
    }

    fn offer(&mut self, found: Found) {
        if self.would_keep(found.modified, &found.relative) {
            if self.heap.len() >= self.limit {
                self.heap.pop();
            }
            self.heap.push(found);
        }
    }
}

/// What the walk found.
#[derive(Debug, Default)]
struct Walked {
    /// The files to show, best first.
    kept: Vec<Found>,
    /// Every matching file.
    total: usize,
    /// Entries the walk could not read (symlink loops are skipped silently).
    errors: usize,
    /// True when the call was cancelled during the walk.
    cancelled: bool,
}

/// The tallies of one walker thread, merged into the shared ones when the thread ends.
struct Tally {
    best: Best,
    total: usize,
    errors: usize,
}

/// Walks `root` on every core, keeping the best `limit` matching files and counting the rest.
fn walk(
    root: &Path,
    boundary: &super::walk::Boundary,
    matcher: Matcher,
    limit: usize,
    cancel: &CancellationToken,
) -> Walked {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    // Files are matched as their directory is read, so the rest never reach the visitors.
    let base = root.to_path_buf();
    let mut builder = super::walk::builder_of(root, boundary, move |entry| {
        matcher.is_match(&base, entry.path())
    });
    builder.parents(true).threads(threads);

    let shared = Mutex::new(Tally {
        best: Best::new(limit),
        total: 0,
        errors: 0,
    });
    let mut visitors = Visitors {
        root,
        cancel,
        shared: &shared,
        limit,
    };
    builder.build_parallel().visit(&mut visitors);

    let tally = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    Walked {
        kept: tally.best.heap.into_sorted_vec(),
        total: tally.total,
        errors: tally.errors,
        cancelled: cancel.is_cancelled(),
    }
}

/// Makes one [`Visitor`] per walker thread.
struct Visitors<'s> {
    root: &'s Path,
    cancel: &'s CancellationToken,
    shared: &'s Mutex<Tally>,
    limit: usize,
}

impl<'s> ParallelVisitorBuilder<'s> for Visitors<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            root: self.root,
            cancel: self.cancel,
            shared: self.shared,
            tally: Tally {
                best: Best::new(self.limit),
                total: 0,
                errors: 0,
            },
            dir: None,
        })
    }
}

/// One walker thread's visitor; it merges its tally into the shared one when dropped.
struct Visitor<'s> {
    root: &'s Path,
    cancel: &'s CancellationToken,
    shared: &'s Mutex<Tally>,
    tally: Tally,
    /// The directory of the last file stat'ed, kept open. Every match needs its mtime, and a
    /// stat relative to an open directory skips the lookup of the whole path, which was most of
    /// glob's cost on large trees.
    dir: Option<(PathBuf, std::os::fd::OwnedFd)>,
}

impl Visitor<'_> {
    /// The modification time of `entry` (links followed); the epoch when it cannot be read.
    fn modified(&mut self, entry: &DirEntry) -> SystemTime {
        self.modified_at(entry.path())
            .or_else(|| entry.metadata().ok()?.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }

    #[cfg(unix)]
    fn modified_at(&mut self, path: &Path) -> Option<SystemTime> {
        use nix::fcntl::{AtFlags, OFlag, open};
        use nix::sys::stat::{Mode, fstatat};
        let (parent, name) = (path.parent()?, path.file_name()?);
        if self
            .dir
            .as_ref()
            .is_none_or(|(open_dir, _)| open_dir != parent)
        {
            let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
            let fd = open(parent, flags, Mode::empty()).ok()?;
            self.dir = Some((parent.to_path_buf(), fd));
        }
        let (_, fd) = self.dir.as_ref()?;
        let stat = fstatat(fd, name, AtFlags::empty()).ok()?;
        let since_epoch = std::time::Duration::new(
            u64::try_from(stat.st_mtime).ok()?,
            u32::try_from(stat.st_mtime_nsec).ok()?,
        );
        SystemTime::UNIX_EPOCH.checked_add(since_epoch)
    }

    #[cfg(not(unix))]
    fn modified_at(&mut self, _path: &Path) -> Option<SystemTime> {
        None
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                if !is_loop(&error) {
                    self.tally.errors += 1;
                }
                return WalkState::Continue;
            }
        };
        // With links followed, the file type is the target's.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        // The walker's filter let through only matching files.
        let Some(relative) = below(self.root, entry.path()) else {
            return WalkState::Continue;
        };
        let modified = self.modified(&entry);
        self.tally.total += 1;
        // Most files lose to the kept ones: allocate only for those that win.
        if self.tally.best.would_keep(modified, relative) {
            self.tally.best.offer(Found {
                modified,
                relative: relative.to_path_buf(),
            });
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.total += self.tally.total;
        shared.errors += self.tally.errors;
        for found in std::mem::take(&mut self.tally.best.heap) {
            shared.best.offer(found);
        }
    }
}

/// Whether `error` is a symlink loop, which the walk skips without complaint.
fn is_loop(error: &ignore::Error) -> bool {
    match error {
        ignore::Error::Loop { .. } => true,
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => is_loop(err),
        ignore::Error::Partial(errors) => !errors.is_empty() && errors.iter().all(is_loop),
        _ => false,
    }
}

/// The text the model reads.
fn render(target: &Resolved, walked: &Walked) -> String {
    let mut out = String::new();
    if walked.kept.is_empty() && !walked.cancelled {
        out.push_str("No files found");
    }
    for found in &walked.kept {
        out.push_str(&display(target, &found.relative));
        out.push('\n');
    }
    if walked.cancelled {
        out.push_str(&format!(
            "(The call was cancelled during the walk: showing {} of the {} files found so far.)",
            thousands(walked.kept.len()),
            thousands(walked.total)
        ));
    } else if walked.kept.len() < walked.total {
        out.push_str(&format!(
            "(Showing the {} most recently modified of {} files. Use a more specific pattern or \
             path.)",
            thousands(walked.kept.len()),
            thousands(walked.total)
        ));
    } else {
        // Drop the final newline of a complete result.
        if out.ends_with('\n') {
            out.pop();
        }
    }
    if walked.errors > 0 {
        let (noun, verb) = if walked.errors == 1 {
            ("entry", "is")
        } else {
            ("entries", "are")
        };
        out.push_str(&format!(
            "\n({} {noun} could not be read and {verb} left out.)",
            thousands(walked.errors)
        ));
    }
    out
}

/// How a found file is shown: relative to the working directory when the searched directory is
/// inside it, absolute otherwise.
fn display(target: &Resolved, relative: &Path) -> String {
    match target.relative.as_deref() {
        Some(".") => relative.to_string_lossy().into_owned(),
        Some(dir) => format!("{dir}/{}", relative.to_string_lossy()),
        None => target.path.join(relative).to_string_lossy().into_owned(),
    }
}
