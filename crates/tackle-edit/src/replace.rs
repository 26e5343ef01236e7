//! Find what the model meant by `oldString` and splice `newString` in its place.
//!
//! [`replace`] climbs a ladder of matching strategies, from exact to increasingly tolerant. Each
//! rung yields candidate byte spans of the original text; the first rung with any candidate
//! decides the outcome, and later rungs are never consulted. The ladder, in order:
//!
//! 1. [`Strategy::Simple`]: the exact text (occurrences may overlap: `aa` occurs twice in `aaa`).
//! 2. [`Strategy::IndentationFlexible`]: whole lines equal once the common indentation of both
//!    sides is removed and trailing whitespace ignored (a uniform indentation shift).
//! 3. [`Strategy::LineTrimmed`]: whole lines equal after trimming each line on both ends.
//! 4. [`Strategy::TrimmedBoundary`]: `old` without its leading and trailing whitespace, exactly.
//! 5. [`Strategy::WhitespaceNormalized`]: runs of whitespace treated as one space; whole lines for a
//!    multi-line `old`, or a span inside one line for a single-line `old`.
//! 6. [`Strategy::EscapeNormalized`]: `old` with `\n`, `\t`, `\"`, `\\`, … unescaped, exactly.
//! 7. [`Strategy::QuoteNormalized`]: `old` exactly, once typographic quotes (‘ ’ “ ” and their
//!    low and reversed forms) on either side are read as the ASCII `'` and `"`.
//! 8. [`Strategy::LineNormalized`]: whole lines equal after trimming and collapsing whitespace
//!    runs, where a line may also lack or add one trailing `;` or `,`; blank lines between the
//!    quoted lines may differ in number.
//! 9. [`Strategy::MultiOccurrence`]: the label for an exact match that occurs several times and was
//!    replaced everywhere because `replace_all` was set.
//!
//! Stricter rungs come first (unlike OpenCode's order), so a loose rule never pre-empts a strict
//! one and the reported strategy is the tightest description of what happened.
//!
//! # The safety law (`LAW-TOLERANT-MATCH` in `spec/laws.md`)
//!
//! A tolerant match may change only text the model quoted:
//! - Every line of a matched span equals its quoted line under the rung's normalisation, and
//!   nothing looser. There is no "similar enough" line, no share of equal lines, no anchor match
//!   with a different middle: OpenCode's `ContextAware` and `BlockAnchor` rules rewrote lines the
//!   model had misremembered, so they are gone. A quote with one wrong line is not found, and the
//!   error shows the closest region with a diff, so the next call can quote it right.
//! - A span has as many non-blank lines as the quote; only blank lines may differ in number.
//! - A within-line match (rungs 4 to 6) never starts or ends inside a run of identifier
//!   characters (letters, digits, `_`) that continues outside it.
//! - When `old` matched only once unescaped, `new` is unescaped the same way; a `new` that mixes
//!   escaped and raw forms is refused.
//! - A whole-line match (rungs 2, 3, 5 with several lines, 8) applies the change from `old` to
//!   `new` to the file's lines: a line the model left as it quoted it keeps the file's bytes
//!   (its whitespace, its `;`), and only the lines the model changed, added or removed change.
//! - What a rung ignored is given back on the lines the model changed. A trailing `;` or `,`
//!   that the quoted line lacks (or has) and the file's line has (or lacks) is restored on the
//!   line of `new` that replaces it: line for line when the model changed a run of lines into as
//!   many lines, else on the one new line clearly most like the quoted one; with no such line
//!   the edit is refused ([`EditError::UnclearMark`]). A new line whose own ending differs from
//!   the quoted line's was changed by the model on purpose and is kept. Under the quote rung,
//!   the text of `new` that is `old`'s takes the file's characters, so its quotation marks
//!   survive; text the model changed is written as it wrote it.
//!
//! Other rules:
//! - Several candidates on one rung without `replace_all` is an ambiguity: the error lists every
//!   candidate's line and nothing looser is tried.
//! - A whitespace-only `old` is matched exactly or not at all.
//! - `new` is spliced in by byte offset, never expanded (`$&`, `$1`, `$$` stay literal).
//! - Re-indentation: the lines a whole-line match adds or changes are re-indented. Pairing the
//!   quote's non-blank lines with the file's gives a map from `old`'s indentation strings to the
//!   file's (an indentation that maps to two different strings is dropped from the map); a line
//!   of `new` whose leading whitespace is in the map gets the mapped whitespace. Any other line
//!   of `new` that starts with `old`'s common indentation gets that prefix replaced by the
//!   block's common indentation. Remaining lines are left as written.
//! - When a within-line rung matched (4, or 5 for a single-line `old`), the leading and trailing
//!   whitespace `old` had is also removed from `new` where `new` has exactly the same boundary.
//! - Every replacement is reported as a [`Splice`], so callers build diffs from the spans
//!   instead of diffing the whole file ([`crate::diff`]).
//! - Line-number prefixes copied from the read tool (`    12\t` or `12: `) are stripped from
//!   `old` only after the exact text failed, and only when every line carries one and the numbers
//!   are consecutive; they are stripped from `new` only if every line of `new` carries one too.
//! - When nothing matches, the error carries the closest region of the file, found with line
//!   anchors and token overlap in linear time, then scored precisely on a few small windows.

mod closest;
mod strategies;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;

use crate::diff::Splice;
use strategies::{Candidate, Doc, Query};

/// One rung of the matching ladder; see the [module documentation](self) for the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// The exact text, occurring once (or replaced where it occurs once with `replace_all`).
    Simple,
    /// Whole lines equal after trimming each line on both ends.
    LineTrimmed,
    /// Runs of whitespace treated as a single space.
    WhitespaceNormalized,
    /// Whole lines equal after removing the common indentation of both sides.
    IndentationFlexible,
    /// `old` with backslash escapes (`\n`, `\t`, `\"`, `\\`, …) unescaped.
    EscapeNormalized,
    /// `old` without its leading and trailing whitespace.
    TrimmedBoundary,
    /// `old` exactly, once typographic quotation marks are read as ASCII quotes.
    QuoteNormalized,
    /// Whole lines equal after trimming and collapsing whitespace, up to one trailing `;` or
    /// `,`, with blank lines between them free to differ in number.
    LineNormalized,
    /// Exact text occurring several times, every occurrence replaced (`replace_all`).
    MultiOccurrence,
}

impl Strategy {
    /// Every strategy, in the order [`replace`] tries them.
    pub const LADDER: [Strategy; 9] = [
        Strategy::Simple,
        Strategy::IndentationFlexible,
        Strategy::LineTrimmed,
        Strategy::TrimmedBoundary,
        Strategy::WhitespaceNormalized,
        Strategy::EscapeNormalized,
        Strategy::QuoteNormalized,
        Strategy::LineNormalized,
        Strategy::MultiOccurrence,
    ];

    /// A stable snake_case name, for tool output and metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Simple => "simple",
            Strategy::LineTrimmed => "line_trimmed",
            Strategy::WhitespaceNormalized => "whitespace_normalized",
            Strategy::IndentationFlexible => "indentation_flexible",
            Strategy::EscapeNormalized => "escape_normalized",
            Strategy::TrimmedBoundary => "trimmed_boundary",
            Strategy::QuoteNormalized => "quote_normalized",
            Strategy::LineNormalized => "line_normalized",
            Strategy::MultiOccurrence => "multi_occurrence",
        }
    }

    /// Whether the match was of the exact text (no tolerance applied).
    pub fn is_exact(self) -> bool {
        matches!(self, Strategy::Simple | Strategy::MultiOccurrence)
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A successful replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The whole new content.
    pub content: String,
    /// The rung of the ladder that matched.
    pub strategy: Strategy,
    /// How many spans were replaced (more than one only with `replace_all`).
    pub replacements: usize,
    /// The 1-based line, in the original content, where the first replacement starts.
    pub first_line: usize,
    /// Whether read-tool line-number prefixes were stripped from `old` before matching.
    pub stripped_line_numbers: bool,
    /// Every replaced span, in order: byte ranges of the content before and of `content`.
    pub splices: Vec<Splice>,
}

/// The region of the file most similar to an `old` that was not found.
#[derive(Debug, Clone, PartialEq)]
pub struct Closest {
    /// 1-based first line of the region.
    pub first_line: usize,
    /// 1-based last line of the region (inclusive).
    pub last_line: usize,
    /// Similarity between `old` and the region, from 0 to 1.
    pub similarity: f64,
    /// A short unified diff from `old` to the region, with tabs shown as `→` and trailing spaces
    /// as `·`.
    pub diff: String,
}

/// Why a replacement could not be made. `Display` tells the model what happened and what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    /// `old` was empty; the tool decides whether that means creating a file.
    #[error(
        "oldString is empty. Provide the exact text to replace, or use the write tool to create \
         or overwrite a whole file."
    )]
    EmptyOld,
    /// `old` and `new` are identical, so the edit would change nothing.
    #[error(
        "oldString and newString are identical, so there is nothing to change. Put the \
         replacement text in newString."
    )]
    NoChange,
    /// No strategy found `old`.
    #[error("{}", not_found_message(.closest.as_ref()))]
    NotFound {
        /// The most similar region of the file, if any region resembles `old` at all.
        closest: Option<Closest>,
    },
    /// `old` matched only once its backslash escapes were read as characters, and `new` mixes
    /// escaped and raw forms, so what it means is unclear.
    #[error(
        "oldString matched only after its backslash escapes (such as \\n or \\\") were read as \
         the characters they stand for, but newString mixes escapes with the raw characters, so \
         it is unclear what to write. Nothing was changed. Send oldString and newString with real \
         newlines, tabs and quotes, exactly as they should appear in the file."
    )]
    MixedEscapes,
    /// `old` matched only once a trailing `;` or `,` was ignored on a line, and `new` turns the
    /// lines around it into a different number of lines with none clearly standing for it, so
    /// it is unclear where the file's ending belongs.
    #[error(
        "oldString matched only when the end of line {line} was ignored: the file has `{file}` \
         where oldString has `{quoted}`. newString turns that line into a different number of \
         lines, and none of them clearly stands for it, so it is unclear which should end as the \
         file's line does. Nothing was changed. Quote the lines exactly as the file has them, \
         with their trailing `;` or `,`, and write newString with the endings you want."
    )]
    UnclearMark {
        /// The 1-based line of the file.
        line: usize,
        /// That line of the file, trimmed.
        file: String,
        /// The quoted line, trimmed.
        quoted: String,
    },
    /// `old` matched several places and `replace_all` was not set.
    #[error("{}", ambiguous_message(.lines))]
    Ambiguous {
        /// The 1-based starting line of every candidate, in file order (repeats when several
        /// candidates start on one line).
        lines: Vec<usize>,
    },
}

fn not_found_message(closest: Option<&Closest>) -> String {
    match closest {
        Some(c) => {
            let lines = if c.first_line == c.last_line {
                format!("line {}", c.first_line)
            } else {
                format!("lines {}-{}", c.first_line, c.last_line)
            };
            format!(
                "oldString was not found in the file. The closest region is {lines} ({:.0}% \
                 similar); this diff turns your oldString into what the file has \
                 (→ is a tab, · a trailing space):\n{}\nCopy the exact text from a fresh read \
                 of the file and try again.",
                c.similarity * 100.0,
                c.diff.trim_end()
            )
        }
        None => "oldString was not found in the file, and no region resembles it. Read the file \
                 again and copy the exact text you want to replace."
            .to_string(),
    }
}

fn ambiguous_message(lines: &[usize]) -> String {
    const SHOWN: usize = 20;
    let mut list = lines
        .iter()
        .take(SHOWN)
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if lines.len() > SHOWN {
        let _ = write!(list, " and {} more", lines.len() - SHOWN);
    }
    let word = if lines.len() == 1 { "line" } else { "lines" };
    format!(
        "oldString matches {} places ({word} {list}). Include more surrounding lines to make it \
         unique, or set replaceAll.",
        lines.len()
    )
}

/// Replace `old` with `new` in `content` (text with `\n` line endings).
///
/// Without `replace_all`, exactly one candidate must match; with it, every non-overlapping
/// candidate of the winning rung is replaced (leftmost first). See the
/// [module documentation](self) for the ladder and its safety rules.
pub fn replace(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Replaced, EditError> {
    // Checks the pair, then tries the literal text; `None` means no exact match.
    let exact_attempt = |old: &str, new: &str, stripped: bool| {
        if old.is_empty() {
            return Some(Err(EditError::EmptyOld));
        }
        if old == new {
            return Some(Err(EditError::NoChange));
        }
        let exact = strategies::exact(content, old);
        (!exact.is_empty()).then(|| {
            apply(
                content,
                exact,
                Strategy::Simple,
                None,
                new,
                replace_all,
                stripped,
            )
        })
    };
    if let Some(result) = exact_attempt(old, new, false) {
        return result;
    }

    // Line-number prefixes are only considered once the literal text has failed.
    let stripped = strategies::strip_line_numbers(old, new);
    let (old, new, was_stripped) = match &stripped {
        Some((o, n)) => (o.as_str(), n.as_str(), true),
        None => (old, new, false),
    };
    if was_stripped && let Some(result) = exact_attempt(old, new, true) {
        return result;
    }

    if old.trim().is_empty() {
        return Err(EditError::NotFound { closest: None });
    }
    // Splitting the content into lines is only paid for once the exact text has failed.
    let doc = Doc::new(content);
    let query = Query::new(old);
    for strategy in &Strategy::LADDER[1..8] {
        let found = strategies::find(*strategy, &doc, &query);
        if found.is_empty() {
            continue;
        }
        let unescaped;
        let new = if *strategy == Strategy::EscapeNormalized {
            unescaped = strategies::unescape_new(old, new).ok_or(EditError::MixedEscapes)?;
            unescaped.as_str()
        } else {
            new
        };
        return apply(
            content,
            found,
            *strategy,
            Some(&query),
            new,
            replace_all,
            was_stripped,
        );
    }
    Err(EditError::NotFound {
        closest: closest::find(&doc, &query),
    })
}

/// Check uniqueness, then splice `new` into every chosen candidate.
fn apply(
    content: &str,
    mut found: Vec<Candidate>,
    strategy: Strategy,
    query: Option<&Query<'_>>,
    new: &str,
    replace_all: bool,
    stripped_line_numbers: bool,
) -> Result<Replaced, EditError> {
    found.sort_by_key(|c| (c.start, c.end));
    found.dedup_by_key(|c| (c.start, c.end));
    if found.len() > 1 && !replace_all {
        return Err(EditError::Ambiguous {
            lines: line_numbers(content, found.iter().map(|c| c.start)),
        });
    }
    let strategy = if strategy == Strategy::Simple && found.len() > 1 {
        Strategy::MultiOccurrence
    } else {
        strategy
    };

    let mut out = String::with_capacity(content.len() + new.len());
    let mut cursor = 0;
    let mut first_line = 0;
    let mut splices = Vec::with_capacity(found.len());
    for cand in &found {
        if cand.start < cursor {
            continue; // overlaps the previous replacement
        }
        if splices.is_empty() {
            first_line = line_numbers(content, [cand.start])[0];
        }
        out.push_str(&content[cursor..cand.start]);
        let at = out.len();
        match (strategy, query) {
            (_, Some(q)) if cand.whole_lines => {
                let span = &content[cand.start..cand.end];
                let lines: Vec<&str> = span
                    .strip_suffix('\n')
                    .filter(|_| q.ends_with_newline())
                    .unwrap_or(span)
                    .split('\n')
                    .collect();
                let spliced = strategies::splice_lines(q, &lines, new).map_err(|unclear| {
                    EditError::UnclearMark {
                        line: line_numbers(content, [cand.start])[0] + unclear.file_line,
                        file: unclear.file,
                        quoted: unclear.quoted,
                    }
                })?;
                out.push_str(&spliced);
            }
            (Strategy::QuoteNormalized, Some(q)) => out.push_str(&strategies::keep_file_quotes(
                q.text,
                &content[cand.start..cand.end],
                new,
            )),
            (Strategy::TrimmedBoundary | Strategy::WhitespaceNormalized, Some(q)) => {
                out.push_str(strategies::trim_like(q.text, new))
            }
            _ => out.push_str(new),
        }
        splices.push(Splice {
            old: cand.start..cand.end,
            new: at..out.len(),
        });
        cursor = cand.end;
    }
    out.push_str(&content[cursor..]);
    Ok(Replaced {
        content: out,
        strategy,
        replacements: splices.len(),
        first_line,
        stripped_line_numbers,
        splices,
    })
}

/// The 1-based line of each byte offset (offsets in ascending order), counted in one pass.
fn line_numbers(content: &str, offsets: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let bytes = content.as_bytes();
    let (mut at, mut line) = (0, 1);
    offsets
        .into_iter()
        .map(|off| {
            line += bytes[at..off].iter().filter(|&&b| b == b'\n').count();
            at = off;
            line
        })
        .collect()
}
