//! The grep tool: the lines of files that match a regular expression, newest files first.
//!
//! The search runs in process (the `grep` and `ignore` crates, no subprocess) on a parallel walk
//! that respects `.gitignore` (also outside a git repository), `.ignore` and the global git
//! excludes, searches hidden files but never `.git`, follows symlinks that stay inside the
//! searched scope, and skips binary files. The walk root is never hidden by the ignore rules of
//! its parents, so a path the model names explicitly is searched.
//!
//! Matches are ordered by file modification time (newest first), then path, then line. Only the
//! best [`LIMIT`] are kept, in a bounded heap shared by the walker threads; the rest are counted,
//! so the header always gives the true total and memory stays small however many lines match.

use std::path::Path;
use tackle_core::names::Permission;

use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle_core::thousands;
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure};

use super::readable::Readable;
use super::{ToolEnv, failure};
use crate::gate::Ask;
use matcher::LineMatcher;

#[cfg(feature = "index")]
pub(crate) use search::ignored_by_parents;

mod matcher;
mod search;
#[cfg(test)]
mod tests;

use search::{Found, Hit, LINE_CAP, Query};

/// The most matching lines shown.
const LIMIT: usize = 100;

const DESCRIPTION: &str = "Search file contents with a regular expression.\n\
- pattern is a regular expression (Rust regex syntax, like ripgrep): `fn\\s+main`, \
`log.*Error`. Escape regex characters to match them literally, such as `\\(` or `\\.`.\n\
- path is a directory or a single file, relative to the working directory or absolute; leave it \
out to search the working directory.\n\
- include limits the search to files whose name or relative path matches a glob, such as \
`*.rs` or `*.{ts,tsx}`.\n\
- .gitignore and .ignore are respected, hidden files are searched, .git and binary files are \
skipped, and so are files you may not read without asking (such as .env files). A directory you \
name in path is searched even when it is ignored.\n\
- Results list each file, newest first, with its matching lines as `Line N: text`. At most 100 \
lines are shown; the header gives the true total. Lines longer than 2,000 characters are cut.\n\
- Use glob to find files by name, and read to see a file around a match.";

/// Arguments of the grep tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepInput {
    /// The regular expression to search for, in Rust regex syntax (as ripgrep uses).
    pub pattern: String,
    /// The directory or file to search, relative to the working directory or absolute. Absent
    /// means the working directory.
    #[serde(default)]
    pub path: Option<String>,
    /// A glob that files must match to be searched, such as `*.rs` or `*.{ts,tsx}`. It is
    /// matched against the file name and against the path below the searched directory.
    #[serde(default)]
    pub include: Option<String>,
}

/// The result of the grep tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepOutput {
    /// What the model reads: a header with the match count, then each file with its matching
    /// lines.
    pub output: String,
    /// Matching lines found, all of them, shown or not.
    pub total: usize,
    /// Matching lines shown (at most 100).
    pub shown: usize,
    /// True when some matching lines found were not shown.
    pub truncated: bool,
    /// Files with at least one matching line.
    pub files: usize,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(DESCRIPTION, env.clone(), grep)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::ReadOnly)
        .erase()
}

async fn grep(
    State(env): State<ToolEnv>,
    input: GrepInput,
    cx: Context,
) -> Result<GrepOutput, ToolFailure> {
    let (env, cx) = (&env, &cx);
    let pattern = input.pattern;
    if pattern.is_empty() {
        return Err(
            ToolFailure::new("`pattern` is empty, so nothing was searched.")
                .with_hint("Pass the regular expression to search for in `pattern`."),
        );
    }
    let matcher = LineMatcher::new(&pattern).map_err(|error| {
        ToolFailure::new(format!(
            "`pattern` is not a valid regular expression, so nothing was searched. The regex \
                 engine says:\n{error}"
        ))
        .with_hint(
            "Fix the pattern; escape characters such as `(`, `[`, `{`, `.` or `\\` with a \
                 backslash to match them literally.",
        )
    })?;
    let include = input
        .include
        .as_deref()
        .map(str::trim)
        .filter(|glob| !glob.is_empty())
        .map(include_glob)
        .transpose()?;
    let given = input
        .path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    let target = env.resolve(cx, given).await?;
    let name = target.display_name();
    // Asked before the existence check, so a denied grep cannot probe for paths.
    let ask = Ask::new(Permission::GREP.as_str(), [pattern.clone()]).with_metadata(json!({
        "pattern": pattern,
        "path": name,
        "include": input.include,
    }));
    env.gate.ask(cx, ask).await?;
    if !target.exists {
        return Err(ToolFailure::new(format!(
            "Path not found: `{name}`, so nothing was searched."
        ))
        .with_hint("Check the path with glob or list, or leave `path` out to search the working directory."));
    }

    // Symlinks are followed only while they stay where this call may look.
    let boundary = super::walk::Boundary::for_target(env.fs.root(), &target);
    let query = Query {
        root: target.path.clone(),
        boundary,
        matcher,
        include,
        limit: LIMIT,
        readable: Readable::new(env, cx),
    };
    let cancel = cx.cancellation().clone();
    // The index answers for a directory; a single file is searched as it is.
    let index = env.index.clone().filter(|_| target.path.is_dir());
    let found = tokio::task::spawn_blocking(move || {
        let stop = || cancel.is_cancelled();
        match index.and_then(|index| index.grep_files(&query.root, &pattern)) {
            Some(files) => search::search_listed(query, files, &stop),
            None => search::search(query, &stop),
        }
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
    let output = render(env.fs.root(), &found);
    Ok(GrepOutput {
        output,
        total: found.total,
        shown: found.hits.len(),
        truncated: found.hits.len() < found.total,
        files: found.files,
    })
}

/// The include glob; `{a,b}` alternatives allowed, `*` does not cross `/`.
fn include_glob(glob: &str) -> Result<GlobMatcher, ToolFailure> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|error| {
            ToolFailure::new(format!(
                "`include` (`{glob}`) is not a valid glob, so nothing was searched: {error}."
            ))
            .with_hint("Pass a file glob such as `*.rs` or `*.{ts,tsx}`, or leave `include` out.")
        })
}

/// The result text: header, files with their lines, and notes on what was left out.
fn render(root: &Path, found: &Found) -> String {
    let mut out = String::new();
    if found.total == 0 {
        out.push_str("No matches found");
    } else {
        let noun = if found.total == 1 { "match" } else { "matches" };
        out.push_str(&format!("Found {} {noun}", thousands(found.total)));
        if found.hits.len() < found.total {
            out.push_str(&format!(
                " (showing the first {})",
                thousands(found.hits.len())
            ));
        }
        let mut current: Option<&Path> = None;
        for hit in &found.hits {
            push_hit(&mut out, root, hit, &mut current);
        }
    }
    let mut notes = Vec::new();
    if found.stopped {
        notes.push(format!(
            "The call was cancelled during the search: the counts cover only the {} files \
             searched so far.",
            thousands(found.searched)
        ));
    } else if found.hits.len() < found.total {
        notes.push(
            "Matches are ordered by file modification time, newest first. Narrow `path`, \
             `include` or `pattern` to see the rest."
                .to_owned(),
        );
    }
    if found.binary > 0 {
        notes.push(format!(
            "{} binary {} skipped.",
            thousands(found.binary),
            if found.binary == 1 {
                "file was"
            } else {
                "files were"
            }
        ));
    }
    if found.unreadable > 0 {
        notes.push(format!(
            "{} {} could not be read and {} left out.",
            thousands(found.unreadable),
            if found.unreadable == 1 {
                "entry"
            } else {
                "entries"
            },
            if found.unreadable == 1 { "is" } else { "are" }
        ));
    }
    if found.withheld > 0 {
        notes.push(format!(
            "{} {} not searched because your permission rules deny reading {} or ask first; \
             use `read` on a file to ask for it.",
            thousands(found.withheld),
            if found.withheld == 1 {
                "file was"
            } else {
                "files were"
            },
            if found.withheld == 1 { "it" } else { "them" }
        ));
    }
    if found.outside_links > 0 {
        notes.push(format!(
            "{} {} leading outside the searched scope {} not followed.",
            thousands(found.outside_links),
            if found.outside_links == 1 {
                "symlink"
            } else {
                "symlinks"
            },
            if found.outside_links == 1 {
                "was"
            } else {
                "were"
            }
        ));
    }
    if !notes.is_empty() {
        out.push_str("\n\n");
        for note in notes {
            out.push('(');
            out.push_str(&note);
            out.push_str(")\n");
        }
        out.pop();
    }
    out
}

/// Appends one matching line, with its file's name when the file changes.
fn push_hit<'a>(out: &mut String, root: &Path, hit: &'a Hit, current: &mut Option<&'a Path>) {
    if *current != Some(&*hit.path) {
        out.push_str("\n\n");
        out.push_str(&display(root, &hit.path));
        out.push(':');
        *current = Some(&hit.path);
    }
    out.push_str(&format!("\n  Line {}: {}", hit.line, hit.text));
    if hit.cut {
        out.push_str(&format!(
            "… (line truncated to {} chars)",
            thousands(LINE_CAP)
        ));
    }
}

/// A path relative to the Location root when inside it, absolute otherwise, with `/`.
fn display(root: &Path, path: &Path) -> String {
    let shown = path.strip_prefix(root).unwrap_or(path);
    let text = shown.to_string_lossy();
    if cfg!(windows) {
        text.replace('\\', "/")
    } else {
        text.into_owned()
    }
}
