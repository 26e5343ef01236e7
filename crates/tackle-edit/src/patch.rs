//! The `*** Begin Patch` grammar: parsing a multi-file patch and planning its effect in memory.
//!
//! A patch is text of this shape:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: src/new.rs
//! +fn main() {}
//! *** Delete File: src/old.rs
//! *** Update File: src/lib.rs
//! *** Move to: src/core.rs
//! @@ fn run() {
//!      let x = 1;
//! -    let y = 2;
//! +    let y = 3;
//! *** End of File
//! *** End Patch
//! ```
//!
//! [`parse_patch`] turns the text into a [`Patch`]; [`plan_patch`] checks every operation against
//! the current file contents supplied by the caller and computes every resulting file, returning
//! either the complete list of [`FileChange`]s or the first error. Nothing is ever half-applied:
//! the caller writes the changes only after the whole plan has succeeded.
//!
//! # Grammar decisions
//!
//! - The text may be wrapped in a heredoc (`cat <<'EOF'`, `<<EOF`, `apply_patch <<"EOF"`, closed
//!   by the delimiter line) or a Markdown code fence, and surrounded by blank lines.
//! - `*** Begin Patch` must be the first line and `*** End Patch` the last; only blank lines may
//!   follow it. A patch with no operations is refused.
//! - Markers are compared trimmed, as codex does: models indent them. A line that trims to an
//!   operation header, `*** Move to:`, `*** End of File` or `*** End Patch` is read as that
//!   marker, so a context line of exactly that text cannot be expressed. The last non-blank line
//!   ends the patch when it trims to `*** End Patch`.
//! - Every line of an `Add File` body starts with `+`. A bare empty line inside the body is taken
//!   as an empty line of the file; bare empty lines just before the next `***` marker are ignored.
//!   The created file ends with `\n` (an Add with no body lines creates an empty file).
//! - An `Update File` section holds one or more chunks. Each chunk is introduced by `@@` or
//!   `@@ <context line>`; the header may be omitted before the first chunk. A unified-diff header
//!   such as `@@ -12,5 +12,6 @@ fn run()` is accepted: its ranges are ignored and the text after
//!   the second `@@`, if any, is the context line. Chunk lines start with ` ` (context), `-`
//!   (removed) or `+` (added); a bare empty line is an empty context line, except at the end of a
//!   chunk where it is ignored. `*** End of File` closes a chunk that ends at the end of the file.
//! - An `Update File` without chunks is only allowed together with `*** Move to:` (a rename).
//!
//! # Planning decisions
//!
//! - `Add File` onto an existing file, `Update`/`Delete` of a missing file, a move onto the file
//!   itself and a move onto an existing file are refused. To replace a file, delete it in one
//!   patch and add it in the next.
//! - A path may appear only once per patch (as a source or a move target). Paths are compared
//!   after removing `./` segments and doubled slashes.
//! - Chunks are matched in order, each after the previous one, with the ladder of
//!   [`MatchLevel`]s. The `@@` context line is located first and the chunk is matched after it.
//!   An end-of-file chunk is tried at the very end of the file first. A chunk may also start on
//!   its own context line (models often repeat it). A chunk that fails and ends with an empty
//!   line is retried without it. A failure names the chunk, the closest region of the file and,
//!   when the chunk's new lines are already there, that it may already have been applied.
//! - A pure insertion (no `-` or context lines) is inserted right after its `@@` context line; one
//!   without a context line is appended at the end of the file.
//! - An updated file ends with `\n` exactly when the original did (an originally empty file gains
//!   a final `\n` when lines are added).

mod apply;
mod parse;
#[cfg(test)]
mod tests;

use std::fmt;

/// A parsed patch: its operations, in the order they were written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The file operations of the patch.
    pub operations: Vec<Operation>,
}

/// One file operation of a [`Patch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// `*** Add File: <path>`: create a file that does not exist yet.
    Add {
        /// The path of the new file, as written in the patch.
        path: String,
        /// The full content of the new file, with `\n` line endings.
        content: String,
    },
    /// `*** Delete File: <path>`: remove an existing file.
    Delete {
        /// The path of the file to remove, as written in the patch.
        path: String,
    },
    /// `*** Update File: <path>`: change an existing file, and optionally rename it.
    Update {
        /// The path of the file to change, as written in the patch.
        path: String,
        /// The new path from `*** Move to: <path>`, if any.
        move_to: Option<String>,
        /// The chunks to apply, in file order.
        chunks: Vec<Chunk>,
    },
}

impl Operation {
    /// The path the operation reads or creates (not its move target).
    pub fn path(&self) -> &str {
        match self {
            Operation::Add { path, .. }
            | Operation::Delete { path }
            | Operation::Update { path, .. } => path,
        }
    }
}

/// One `@@` chunk of an `Update File` operation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    /// The text after `@@`: a line of the file that precedes the chunk.
    pub context: Option<String>,
    /// The lines the chunk expects to find (context and `-` lines).
    pub old_lines: Vec<String>,
    /// The lines that replace them (context and `+` lines).
    pub new_lines: Vec<String>,
    /// Whether the chunk ends at the end of the file (`*** End of File`).
    pub end_of_file: bool,
}

/// How tolerant the comparison had to be for a chunk (or its context line) to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchLevel {
    /// The lines matched byte for byte.
    Exact,
    /// The lines matched once trailing whitespace was ignored.
    TrailingWhitespace,
    /// The lines matched once leading and trailing whitespace was ignored.
    Whitespace,
    /// The lines matched once whitespace was trimmed and typographic punctuation (curly quotes,
    /// dashes, ellipsis, non-breaking spaces) was mapped to ASCII.
    Punctuation,
}

impl MatchLevel {
    /// Every level, from the strictest to the most tolerant.
    pub const ALL: [MatchLevel; 4] = [
        MatchLevel::Exact,
        MatchLevel::TrailingWhitespace,
        MatchLevel::Whitespace,
        MatchLevel::Punctuation,
    ];

    /// A short stable name, for tool metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchLevel::Exact => "exact",
            MatchLevel::TrailingWhitespace => "trailing_whitespace",
            MatchLevel::Whitespace => "whitespace",
            MatchLevel::Punctuation => "punctuation",
        }
    }
}

impl fmt::Display for MatchLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The planned effect of a patch on one file, to be written by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Create a new file.
    Create {
        /// The path of the new file.
        path: String,
        /// Its full content.
        content: String,
    },
    /// Remove a file.
    Delete {
        /// The path of the file to remove.
        path: String,
    },
    /// Replace the content of a file, and optionally rename it.
    Update {
        /// The path of the existing file.
        path: String,
        /// The new path: write `content` there and remove `path`.
        move_to: Option<String>,
        /// The full new content.
        content: String,
        /// The match level used for each chunk, in chunk order. For a chunk that only inserts,
        /// this is the level of its context line ([`MatchLevel::Exact`] when it has none).
        fuzz: Vec<MatchLevel>,
    },
}

impl FileChange {
    /// The path the change applies to (the source path of a move).
    pub fn path(&self) -> &str {
        match self {
            FileChange::Create { path, .. }
            | FileChange::Delete { path }
            | FileChange::Update { path, .. } => path,
        }
    }
}

/// A region of the file that resembles lines the patch expected, shown when a chunk fails.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosestRegion {
    /// The 1-based number of the first line of the region.
    pub start_line: usize,
    /// The lines of the region, as they are in the file.
    pub lines: Vec<String>,
    /// How similar the region is to the expected lines, from 0 to 1.
    pub similarity: f64,
}

/// Why a patch could not be parsed or planned. The messages are written for the model.
#[derive(Debug, Clone, PartialEq)]
pub enum PatchError {
    /// The text does not follow the patch grammar.
    Format {
        /// The 1-based line of the patch text where the problem was found.
        line: usize,
        /// What was expected and what was found.
        message: String,
    },
    /// `*** Begin Patch` and `*** End Patch` with nothing between.
    Empty,
    /// An `Add File` names a file that already exists.
    AddExisting {
        /// The path.
        path: String,
    },
    /// An `Update File` or `Delete File` names a file that does not exist.
    MissingFile {
        /// The path.
        path: String,
        /// `"Update"` or `"Delete"`.
        operation: &'static str,
    },
    /// A `Move to` names the file being updated.
    MoveOntoItself {
        /// The path.
        path: String,
    },
    /// A `Move to` names a file that already exists.
    MoveTargetExists {
        /// The file being moved.
        path: String,
        /// The existing destination.
        target: String,
    },
    /// Two operations of the patch touch the same path.
    DuplicatePath {
        /// The path, as written the second time.
        path: String,
    },
    /// The `@@` context line of a chunk was not found.
    ContextNotFound {
        /// The file being updated.
        path: String,
        /// The 1-based index of the chunk in its `Update File` section.
        chunk: usize,
        /// The context line that was looked for.
        context: String,
        /// The search started after this many lines.
        after_line: usize,
        /// The most similar line of the file, if any.
        closest: Option<ClosestRegion>,
    },
    /// The lines a chunk expects were not found.
    ChunkMismatch {
        /// The file being updated.
        path: String,
        /// The 1-based index of the chunk in its `Update File` section.
        chunk: usize,
        /// The lines that were looked for.
        expected: Vec<String>,
        /// The search started after this many lines.
        after_line: usize,
        /// The most similar region of the file, if any.
        closest: Option<ClosestRegion>,
        /// The 1-based line where the chunk's new lines already stand, if they do.
        already_applied_at: Option<usize>,
    },
}

const REGENERATE: &str = "Re-read the file and regenerate the patch.";

fn write_lines(f: &mut fmt::Formatter<'_>, lines: &[String]) -> fmt::Result {
    for line in lines {
        writeln!(f, "      | {line}")?;
    }
    Ok(())
}

fn write_closest(f: &mut fmt::Formatter<'_>, closest: &Option<ClosestRegion>) -> fmt::Result {
    match closest {
        Some(region) => {
            let end = region.start_line + region.lines.len().max(1) - 1;
            if end == region.start_line {
                write!(f, "The closest line is {}", region.start_line)?;
            } else {
                write!(f, "The closest lines are {}-{end}", region.start_line)?;
            }
            writeln!(f, " ({:.0}% similar):", region.similarity * 100.0)?;
            for (i, line) in region.lines.iter().enumerate() {
                writeln!(f, "{:>6}| {line}", region.start_line + i)?;
            }
            Ok(())
        }
        None => writeln!(f, "No similar lines were found."),
    }
}

fn where_from(after_line: usize) -> String {
    if after_line == 0 {
        "anywhere in the file".to_owned()
    } else {
        format!("after line {after_line}")
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::Format { line, message } => write!(f, "line {line}: {message}"),
            PatchError::Empty => write!(
                f,
                "the patch is empty: there are no operations between '*** Begin Patch' and \
                 '*** End Patch'"
            ),
            PatchError::AddExisting { path } => write!(
                f,
                "Add File {path}: the file already exists. Use '*** Update File: {path}' to \
                 change it."
            ),
            PatchError::MissingFile { path, operation } => {
                write!(
                    f,
                    "{operation} of {path}: the file does not exist. Check the path"
                )?;
                if *operation == "Update" {
                    write!(f, ", or use '*** Add File: {path}' to create it")?;
                }
                f.write_str(".")
            }
            PatchError::MoveOntoItself { path } => write!(
                f,
                "Update of {path}: '*** Move to' names the same file. Remove the '*** Move to' \
                 line to update the file in place."
            ),
            PatchError::MoveTargetExists { path, target } => write!(
                f,
                "Update of {path}: cannot move to {target}, which already exists. Moves never \
                 overwrite; delete {target} in a separate patch first."
            ),
            PatchError::DuplicatePath { path } => write!(
                f,
                "{path} appears in more than one operation of the patch. Combine all changes to \
                 a file into one '*** Update File' section."
            ),
            PatchError::ContextNotFound {
                path,
                chunk,
                context,
                after_line,
                closest,
            } => {
                writeln!(
                    f,
                    "Update of {path}: chunk {chunk} did not match. Its context line '@@ \
                     {context}' was not found {}.",
                    where_from(*after_line)
                )?;
                write_closest(f, closest)?;
                write!(f, "{REGENERATE}")
            }
            PatchError::ChunkMismatch {
                path,
                chunk,
                expected,
                after_line,
                closest,
                already_applied_at,
            } => {
                writeln!(
                    f,
                    "Update of {path}: chunk {chunk} did not match. Expected these lines {}:",
                    where_from(*after_line)
                )?;
                write_lines(f, expected)?;
                if let Some(line) = already_applied_at {
                    writeln!(
                        f,
                        "The chunk's new lines are already present at line {line}: this chunk \
                         may already have been applied."
                    )?;
                }
                write_closest(f, closest)?;
                write!(f, "{REGENERATE}")
            }
        }
    }
}

impl std::error::Error for PatchError {}

/// Parses patch text in the `*** Begin Patch` grammar (see the [module docs](self)).
///
/// The text must use `\n` line endings. Errors name the 1-based line of `text` at fault.
pub fn parse_patch(text: &str) -> Result<Patch, PatchError> {
    parse::parse(text)
}

/// Checks every operation of `patch` against the current files and computes their new contents.
///
/// `files` returns the current content of a path (with `\n` line endings), or `None` when no
/// such file exists. Either every change is returned, in patch order, or the first error is:
/// the caller never sees a partial plan.
pub fn plan_patch(
    patch: &Patch,
    files: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FileChange>, PatchError> {
    apply::plan(patch, files)
}
