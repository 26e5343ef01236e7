//! Planning a parsed patch: locating every chunk and computing every new file in memory.

use std::borrow::Cow;
use std::collections::HashSet;

use super::{Chunk, ClosestRegion, FileChange, MatchLevel, Operation, Patch, PatchError};

/// A lexical key for comparing paths: `./` segments and doubled slashes removed.
fn path_key(path: &str) -> String {
    let absolute = path.starts_with('/');
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

pub(super) fn plan(
    patch: &Patch,
    files: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FileChange>, PatchError> {
    // Refuse any path named twice before looking at a single file.
    let mut seen = HashSet::new();
    for operation in &patch.operations {
        let move_to = match operation {
            Operation::Update {
                path,
                move_to: Some(target),
                ..
            } if path_key(path) == path_key(target) => {
                return Err(PatchError::MoveOntoItself { path: path.clone() });
            }
            Operation::Update { move_to, .. } => move_to.as_deref(),
            _ => None,
        };
        for path in std::iter::once(operation.path()).chain(move_to) {
            if !seen.insert(path_key(path)) {
                return Err(PatchError::DuplicatePath {
                    path: path.to_owned(),
                });
            }
        }
    }

    patch
        .operations
        .iter()
        .map(|operation| plan_one(operation, files))
        .collect()
}

fn plan_one(
    operation: &Operation,
    files: &dyn Fn(&str) -> Option<String>,
) -> Result<FileChange, PatchError> {
    match operation {
        Operation::Add { path, content } => {
            if files(path).is_some() {
                return Err(PatchError::AddExisting { path: path.clone() });
            }
            Ok(FileChange::Create {
                path: path.clone(),
                content: content.clone(),
            })
        }
        Operation::Delete { path } => {
            if files(path).is_none() {
                return Err(PatchError::MissingFile {
                    path: path.clone(),
                    operation: "Delete",
                });
            }
            Ok(FileChange::Delete { path: path.clone() })
        }
        Operation::Update {
            path,
            move_to,
            chunks,
        } => {
            let Some(original) = files(path) else {
                return Err(PatchError::MissingFile {
                    path: path.clone(),
                    operation: "Update",
                });
            };
            if let Some(target) = move_to
                && files(target).is_some()
            {
                return Err(PatchError::MoveTargetExists {
                    path: path.clone(),
                    target: target.clone(),
                });
            }
            let (content, fuzz) = apply_chunks(path, &original, chunks)?;
            Ok(FileChange::Update {
                path: path.clone(),
                move_to: move_to.clone(),
                content,
                fuzz,
            })
        }
    }
}

/// Maps typographic punctuation and exotic spaces to ASCII.
fn normalize_punctuation(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => out.push('\''),
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => out.push('"'),
            '\u{2010}'..='\u{2015}' | '\u{2212}' => out.push('-'),
            '\u{2026}' => out.push_str("..."),
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => {
                out.push(' ')
            }
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn lines_equal(level: MatchLevel, file: &str, wanted: &str) -> bool {
    match level {
        MatchLevel::Exact => file == wanted,
        MatchLevel::TrailingWhitespace => file.trim_end() == wanted.trim_end(),
        MatchLevel::Whitespace => file.trim() == wanted.trim(),
        MatchLevel::Punctuation => {
            normalize_punctuation(file).trim() == normalize_punctuation(wanted).trim()
        }
    }
}

fn matches_at(lines: &[&str], pattern: &[String], at: usize, level: MatchLevel) -> bool {
    at + pattern.len() <= lines.len()
        && pattern
            .iter()
            .zip(&lines[at..])
            .all(|(wanted, file)| lines_equal(level, file, wanted))
}

/// Finds `pattern` at or after `start`, trying each level over the whole range before the next.
/// With `end_of_file`, the position that ends at the last line is tried first at every level.
fn seek(
    lines: &[&str],
    pattern: &[String],
    start: usize,
    end_of_file: bool,
) -> Option<(usize, MatchLevel)> {
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    if end_of_file && last >= start {
        for level in MatchLevel::ALL {
            if matches_at(lines, pattern, last, level) {
                return Some((last, level));
            }
        }
    }
    for level in MatchLevel::ALL {
        for at in start..=last {
            if matches_at(lines, pattern, at, level) {
                return Some((at, level));
            }
        }
    }
    None
}

/// The sorted character pairs of a trimmed line: a cheap fingerprint for similarity.
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.trim().chars().collect();
    let mut pairs: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    pairs.sort_unstable();
    pairs
}

/// Dice similarity of two lines from 0 to 1, from their bigrams and trimmed text.
fn line_similarity(a: (&str, &[(char, char)]), b: (&str, &[(char, char)])) -> f64 {
    let (text_a, pairs_a) = a;
    let (text_b, pairs_b) = b;
    if text_a.trim() == text_b.trim() {
        return 1.0;
    }
    if pairs_a.is_empty() || pairs_b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < pairs_a.len() && j < pairs_b.len() {
        match pairs_a[i].cmp(&pairs_b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (pairs_a.len() + pairs_b.len()) as f64
}

/// The window of the file most similar to `expected`, for error messages.
fn closest_region(lines: &[&str], expected: &[String]) -> Option<ClosestRegion> {
    const MAX_PATTERN: usize = 24;
    if lines.is_empty() || expected.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let scored = &expected[..expected.len().min(MAX_PATTERN)];
    let width = scored.len().min(lines.len());
    let wanted: Vec<Vec<(char, char)>> = scored.iter().map(|l| bigrams(l)).collect();
    let file: Vec<Vec<(char, char)>> = lines.iter().map(|l| bigrams(l)).collect();
    let mut best: Option<(usize, f64)> = None;
    for at in 0..=lines.len() - width {
        let total: f64 = (0..width)
            .map(|k| line_similarity((lines[at + k], &file[at + k]), (&scored[k], &wanted[k])))
            .sum();
        let score = total / scored.len() as f64;
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((at, score));
        }
    }
    let (at, similarity) = best?;
    if similarity <= 0.3 {
        return None;
    }
    Some(ClosestRegion {
        start_line: at + 1,
        lines: lines[at..at + width]
            .iter()
            .map(|l| (*l).to_owned())
            .collect(),
        similarity,
    })
}

/// Splits content into lines and whether it ended with a newline.
fn split_lines(content: &str) -> (Vec<&str>, bool) {
    if content.is_empty() {
        return (Vec::new(), false);
    }
    let trailing = content.ends_with('\n');
    let body = content.strip_suffix('\n').unwrap_or(content);
    (body.split('\n').collect(), trailing)
}

/// One located chunk: replace `len` lines at `start` with `lines`.
struct Replacement<'c> {
    start: usize,
    len: usize,
    lines: Vec<&'c str>,
}

/// The lines that replace `file[at..at + old.len()]`: `new`, except that a line the chunk keeps
/// (a context line, in both `old` and `new`) is taken from the file. A tolerant match then never
/// rewrites the whitespace or punctuation of lines the patch did not change.
fn keep_context<'a>(
    file: &[&'a str],
    at: usize,
    old: &[String],
    new: &'a [String],
) -> Vec<&'a str> {
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, old, new);
    let mut out = Vec::with_capacity(new.len());
    for op in ops {
        match op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                out.extend_from_slice(&file[at + old_index..at + old_index + len])
            }
            similar::DiffOp::Delete { .. } => {}
            similar::DiffOp::Insert {
                new_index, new_len, ..
            }
            | similar::DiffOp::Replace {
                new_index, new_len, ..
            } => out.extend(
                new[new_index..new_index + new_len]
                    .iter()
                    .map(String::as_str),
            ),
        }
    }
    out
}

fn apply_chunks(
    path: &str,
    original: &str,
    chunks: &[Chunk],
) -> Result<(String, Vec<MatchLevel>), PatchError> {
    let (lines, trailing_newline) = split_lines(original);
    let mut cursor = 0;
    let mut replacements = Vec::with_capacity(chunks.len());
    let mut fuzz = Vec::with_capacity(chunks.len());

    for (index, chunk) in chunks.iter().enumerate() {
        let number = index + 1;
        let mut level = MatchLevel::Exact;
        let mut anchored = false;
        if let Some(context) = &chunk.context {
            let wanted = std::slice::from_ref(context);
            let Some((at, found)) = seek(&lines, wanted, cursor, false) else {
                return Err(PatchError::ContextNotFound {
                    path: path.to_owned(),
                    chunk: number,
                    context: context.clone(),
                    after_line: cursor,
                    closest: closest_region(&lines, wanted),
                });
            };
            cursor = at + 1;
            level = found;
            anchored = true;
        }

        if chunk.old_lines.is_empty() {
            // A pure insertion: after its context line, else at the end of the file.
            let start = if anchored && !chunk.end_of_file {
                cursor
            } else {
                lines.len()
            };
            replacements.push(Replacement {
                start,
                len: 0,
                lines: chunk.new_lines.iter().map(String::as_str).collect(),
            });
            fuzz.push(level);
            continue;
        }

        let mut old: &[String] = &chunk.old_lines;
        let mut new: &[String] = &chunk.new_lines;
        // The model often repeats the `@@` context line as the chunk's first line: allow the
        // match to start on the context line itself.
        let search = |old: &[String]| {
            seek(&lines, old, cursor, chunk.end_of_file).or_else(|| {
                anchored
                    .then(|| seek(&lines, old, cursor - 1, false))
                    .flatten()
            })
        };
        let mut found = search(old);
        if found.is_none() && old.len() > 1 && old.last().is_some_and(String::is_empty) {
            // Retry without a trailing empty line the model may have added.
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = search(old);
        }
        let Some((at, found_level)) = found else {
            let already_applied_at = (!chunk.new_lines.is_empty()
                && chunk.new_lines != chunk.old_lines)
                .then(|| seek(&lines, &chunk.new_lines, cursor, chunk.end_of_file))
                .flatten()
                .map(|(at, _)| at + 1);
            return Err(PatchError::ChunkMismatch {
                path: path.to_owned(),
                chunk: number,
                expected: chunk.old_lines.clone(),
                after_line: cursor,
                closest: closest_region(&lines, &chunk.old_lines),
                already_applied_at,
            });
        };
        let kept = if found_level == MatchLevel::Exact {
            new.iter().map(String::as_str).collect()
        } else {
            keep_context(&lines, at, old, new)
        };
        replacements.push(Replacement {
            start: at,
            len: old.len(),
            lines: kept,
        });
        fuzz.push(level.max(found_level));
        cursor = at + old.len();
    }

    // Splice from the back so earlier positions stay valid.
    replacements.sort_by_key(|r| r.start);
    let mut result: Vec<&str> = lines.clone();
    for replacement in replacements.iter().rev() {
        result.splice(
            replacement.start..replacement.start + replacement.len,
            replacement.lines.iter().copied(),
        );
    }
    let mut content = result.join("\n");
    if !result.is_empty() && (trailing_newline || lines.is_empty()) {
        content.push('\n');
    }
    Ok((content, fuzz))
}
