//! The list tool: a directory as an indented tree, without ignored, build and cache entries.
//!
//! The walk respects `.gitignore` (also outside a git repository), `.ignore` and the caller's
//! ignore globs, shows hidden files, skips the usual build and cache directories and never follows
//! symlinks. It counts every entry it finds, up to [`COUNT_CAP`], but keeps only the first
//! `list_limit` entries ordered by (depth, path). That choice is breadth-first: when the listing is
//! cut, every entry of a shallower level is shown before any entry of a deeper one, so the top of
//! the tree is always visible and every shown entry has its parent shown.

use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tackle_core::names::Permission;

use ignore::WalkBuilder;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::thousands;
use tackle_core::{AnyTool, CancellationToken, Context, State, Tool, ToolFailure};

use super::{ToolEnv, failure};
use crate::gate::Ask;

#[cfg(test)]
mod tests;

/// Directories never listed: build output, dependencies, caches and tool state.
const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    ".git",
    "dist",
    "build",
    ".venv",
    "venv",
    "env",
    "__pycache__",
    "vendor",
    "bin",
    "obj",
    ".idea",
    ".vscode",
    ".zig-cache",
    "zig-out",
    "coverage",
    ".coverage",
    "tmp",
    "temp",
    ".cache",
    "cache",
    "logs",
    ".next",
    ".turbo",
    ".gradle",
];

/// The walk stops counting after this many entries and reports "more than" this.
const COUNT_CAP: usize = 100_000;

const DESCRIPTION: &str = "List a directory as a tree.\n\
- path is relative to the working directory, or absolute; leave it out to list the working \
directory.\n\
- Entries are indented two spaces per level; directories come first and end with /.\n\
- .gitignore and .ignore are respected, hidden files are shown, and build and cache directories \
(node_modules, target, .git, dist, build, .venv, __pycache__, vendor and similar) are skipped.\n\
- ignore takes extra gitignore-style globs to skip, such as [\"*.log\", \"fixtures/\"].\n\
- Long listings are cut, shallow levels first: a `[N more entries not shown]` line marks each \
directory with hidden entries and the last line gives the real total. List a subdirectory to see \
deeper.\n\
- Prefer glob or grep when you know what you are looking for.";

/// Arguments of the list tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListInput {
    /// The directory to list, relative to the working directory or absolute. Absent means the
    /// working directory.
    #[serde(default)]
    pub path: Option<String>,
    /// Gitignore-style globs of entries to skip, such as `*.log` or `fixtures/`. A glob without
    /// a `/` matches names at any depth; one with a `/` matches paths from the listed directory.
    #[serde(default)]
    pub ignore: Option<Vec<String>>,
}

/// The result of the list tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListOutput {
    /// What the model reads: the directory, its tree, and a note when entries were left out.
    pub output: String,
    /// The directory listed, relative to the working directory when inside it.
    pub path: String,
    /// Entries shown (files and directories).
    pub entries: usize,
    /// Entries found, capped at 100,000 when the walk stopped counting.
    pub total: usize,
    /// True when some entries found were not shown.
    pub truncated: bool,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(DESCRIPTION, env.clone(), list)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::ReadOnly)
        .erase()
}

async fn list(
    State(env): State<ToolEnv>,
    input: ListInput,
    cx: Context,
) -> Result<ListOutput, ToolFailure> {
    let (env, cx) = (&env, &cx);
    let given = input
        .path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    let target = env.resolve(cx, given).await?;
    let name = target.display_name();
    // Asked before the existence check, so a denied list cannot probe for paths.
    env.gate
        .ask(cx, Ask::new(Permission::LIST.as_str(), [name.clone()]))
        .await?;
    if !target.exists {
        return Err(ToolFailure::new(format!("Directory not found: `{name}`."))
            .with_hint("List its parent directory to see what exists there."));
    }
    if !target.path.is_dir() {
        return Err(ToolFailure::new(format!(
            "`{name}` is a file, not a directory, so it cannot be listed."
        ))
        .with_hint("Use `read` to see its contents."));
    }
    let globs = user_globs(&target.path, input.ignore.as_deref().unwrap_or_default())?;
    let root = target.path.clone();
    let limit = env.options.list_limit;
    let cancel = cx.cancellation().clone();
    let walked = tokio::task::spawn_blocking(move || walk(&root, globs, limit, &cancel))
        .await
        .map_err(|join| {
            if join.is_panic() {
                std::panic::resume_unwind(join.into_panic());
            }
            failure(format!("Listing `{name}` was stopped before it finished."))
        })?;
    let output = render(&name, &target.path, &walked);
    Ok(ListOutput {
        output,
        path: name,
        entries: walked.shown.len(),
        total: walked.total,
        truncated: walked.shown.len() < walked.total,
    })
}

/// The caller's globs as one gitignore matcher rooted at the listed directory. Every bad glob is
/// reported at once.
fn user_globs(root: &Path, globs: &[String]) -> Result<Option<Arc<Gitignore>>, ToolFailure> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut builder = GitignoreBuilder::new(root);
    let mut problems = Vec::new();
    for (index, glob) in globs.iter().enumerate() {
        if glob.trim().is_empty() {
            problems.push(format!("- `ignore[{index}]` is empty."));
            continue;
        }
        // A leading `#` would make the line a comment; the caller means a name.
        let line = match glob.strip_prefix('#') {
            Some(rest) => format!("\\#{rest}"),
            None => glob.clone(),
        };
        if let Err(error) = builder.add_line(None, &line) {
            problems.push(format!("- `ignore[{index}]` (`{glob}`): {error}"));
        }
    }
    if !problems.is_empty() {
        return Err(ToolFailure::new(format!(
            "Some ignore globs are not valid, so nothing was listed:\n{}",
            problems.join("\n")
        ))
        .with_hint("Fix or remove these globs and call `list` again."));
    }
    let matcher = builder.build().map_err(|error| {
        ToolFailure::new(format!(
            "The ignore globs could not be compiled: {error}. Nothing was listed."
        ))
    })?;
    Ok(Some(Arc::new(matcher)))
}

/// One entry found by the walk.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    /// Levels below the listed directory; 1 for its direct children.
    depth: usize,
    /// The path relative to the listed directory. `Path` orders by components.
    relative: PathBuf,
    /// Whether it is a directory (symlinks are not followed, so a link is never one).
    is_dir: bool,
}

/// What the walk found.
#[derive(Debug, Default)]
struct Walked {
    /// The entries to show, ordered by (depth, path).
    shown: Vec<Entry>,
    /// Every entry found, up to [`COUNT_CAP`].
    total: usize,
    /// True when the walk stopped counting at [`COUNT_CAP`].
    capped: bool,
    /// Direct children found per directory (relative path; empty for the listed directory).
    children: HashMap<PathBuf, usize>,
    /// Entries the walk could not read.
    errors: usize,
    /// True when the call was cancelled during the walk.
    cancelled: bool,
}

/// Walks `root`, keeping the first `limit` entries by (depth, path) and counting the rest.
fn walk(
    root: &Path,
    globs: Option<Arc<Gitignore>>,
    limit: usize,
    cancel: &CancellationToken,
) -> Walked {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .follow_links(false)
        .git_ignore(true)
        .ignore(true)
        .require_git(false)
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            // tackle's own temporary files are never shown.
            if crate::fs::handle::is_temp_name(entry.file_name()) {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir
                && SKIPPED_DIRS
                    .iter()
                    .any(|skip| entry.file_name() == std::ffi::OsStr::new(skip))
            {
                return false;
            }
            match &globs {
                Some(globs) => !globs.matched(entry.path(), is_dir).is_ignore(),
                None => true,
            }
        });

    let mut walked = Walked::default();
    // A max-heap of the best `limit` entries: the worst kept entry sits on top.
    let mut kept: BinaryHeap<Entry> = BinaryHeap::with_capacity(limit.saturating_add(1));
    for result in builder.build() {
        if cancel.is_cancelled() {
            walked.cancelled = true;
            break;
        }
        let entry = match result {
            Ok(entry) => entry,
            Err(_) => {
                walked.errors += 1;
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        if walked.total >= COUNT_CAP {
            walked.capped = true;
            break;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        walked.total += 1;
        let parent = relative.parent().unwrap_or(Path::new("")).to_path_buf();
        *walked.children.entry(parent).or_default() += 1;
        let candidate = Entry {
            depth: entry.depth(),
            relative: relative.to_path_buf(),
            is_dir: entry.file_type().is_some_and(|t| t.is_dir()),
        };
        if kept.len() < limit {
            kept.push(candidate);
        } else if kept.peek().is_some_and(|worst| candidate < *worst) {
            kept.pop();
            kept.push(candidate);
        }
    }
    walked.shown = kept.into_sorted_vec();
    walked
}

/// The listing text: the directory, its tree, and notes on what was left out.
fn render(name: &str, dir: &Path, walked: &Walked) -> String {
    let mut out = format!("{}/\n", name.trim_end_matches('/'));
    if walked.total == 0 && !walked.cancelled {
        let empty = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none());
        out.push_str(if empty {
            "(The directory is empty.)"
        } else {
            "(No entries shown: everything here is ignored by .gitignore or .ignore, is a skipped \
             build or cache directory, or matches your ignore globs.)"
        });
        push_notes(&mut out, walked);
        return out;
    }

    // Children of each shown directory: directories first, then files, each sorted by name.
    let mut tree: HashMap<&Path, Vec<&Entry>> = HashMap::new();
    for entry in &walked.shown {
        let parent = entry.relative.parent().unwrap_or(Path::new(""));
        tree.entry(parent).or_default().push(entry);
    }
    for children in tree.values_mut() {
        children.sort_by(|a, b| {
            (!a.is_dir, a.relative.file_name()).cmp(&(!b.is_dir, b.relative.file_name()))
        });
    }
    render_children(&mut out, Path::new(""), 1, &tree, walked);

    if walked.cancelled {
        out.push_str(&format!(
            "(The call was cancelled during the walk: showing {} of the {} entries found so far.)",
            thousands(walked.shown.len()),
            thousands(walked.total)
        ));
    } else if walked.shown.len() < walked.total {
        let total = if walked.capped {
            format!("more than {}", thousands(COUNT_CAP))
        } else {
            thousands(walked.total)
        };
        out.push_str(&format!(
            "(Showing {} of {total} entries. List a subdirectory, or pass ignore globs, to see the \
             rest.)",
            thousands(walked.shown.len())
        ));
    } else {
        // Drop the final newline of a complete listing.
        out.pop();
    }
    push_notes(&mut out, walked);
    out
}

/// Renders the shown children of `dir` at `depth`, and how many of its children were left out.
fn render_children(
    out: &mut String,
    dir: &Path,
    depth: usize,
    tree: &HashMap<&Path, Vec<&Entry>>,
    walked: &Walked,
) {
    let indent = "  ".repeat(depth);
    let shown = tree.get(dir).map_or(&[][..], Vec::as_slice);
    for entry in shown {
        let name = entry
            .relative
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        out.push_str(&indent);
        out.push_str(&name);
        if entry.is_dir {
            out.push('/');
        }
        out.push('\n');
        if entry.is_dir {
            render_children(out, &entry.relative, depth + 1, tree, walked);
        }
    }
    let found = walked.children.get(dir).copied().unwrap_or(0);
    let omitted = found.saturating_sub(shown.len());
    if omitted > 0 {
        let more = if walked.capped || walked.cancelled {
            "at least "
        } else {
            ""
        };
        let noun = if omitted == 1 { "entry" } else { "entries" };
        out.push_str(&format!(
            "{indent}[{more}{} more {noun} not shown]\n",
            thousands(omitted)
        ));
    }
}

/// Appends a note about entries the walk could not read.
fn push_notes(out: &mut String, walked: &Walked) {
    if walked.errors > 0 {
        let noun = if walked.errors == 1 {
            "entry"
        } else {
            "entries"
        };
        out.push_str(&format!(
            "\n({} {noun} could not be read and {} left out.)",
            thousands(walked.errors),
            if walked.errors == 1 { "is" } else { "are" }
        ));
    }
}
