//! The parser for the `*** Begin Patch` grammar.

use super::{Chunk, Operation, Patch, PatchError};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A line of the patch text with its 1-based number.
type Line<'a> = (usize, &'a str);

fn error(line: usize, message: impl Into<String>) -> PatchError {
    PatchError::Format {
        line,
        message: message.into(),
    }
}

/// Shortens a line for an error message.
fn shown(line: &str) -> String {
    const MAX: usize = 80;
    if line.chars().count() > MAX {
        let cut: String = line.chars().take(MAX).collect();
        format!("'{cut}…'")
    } else {
        format!("'{line}'")
    }
}

/// Whether a line is a marker: it starts with `***`, or, once trimmed, it is one of the
/// grammar's markers (models indent them; codex accepts that too).
fn is_marker(line: &str) -> bool {
    line.starts_with("***") || {
        let t = line.trim();
        [ADD, DELETE, UPDATE, MOVE].iter().any(|m| t.starts_with(m)) || t == END_OF_FILE || t == END
    }
}

/// The delimiter of a heredoc opener such as `cat <<'EOF'`, if `line` is one.
fn heredoc_delimiter(line: &str) -> Option<&str> {
    let (_, rest) = line.split_once("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim();
    let rest = rest.trim_matches(|c| c == '\'' || c == '"');
    let word = rest.split_whitespace().next()?;
    let word = word.trim_matches(|c| c == '\'' || c == '"');
    (!word.is_empty()).then_some(word)
}

/// Removes surrounding blank lines, a heredoc wrapper and a Markdown fence.
fn unwrap<'s, 'a>(mut lines: &'s [Line<'a>]) -> &'s [Line<'a>] {
    fn trim_blank<'t, 'b>(mut lines: &'t [Line<'b>]) -> &'t [Line<'b>] {
        while lines.first().is_some_and(|(_, l)| l.trim().is_empty()) {
            lines = &lines[1..];
        }
        while lines.last().is_some_and(|(_, l)| l.trim().is_empty()) {
            lines = &lines[..lines.len() - 1];
        }
        lines
    }
    lines = trim_blank(lines);
    if let Some(&(_, first)) = lines.first() {
        let first = first.trim();
        if !first.starts_with("***") {
            if let Some(delimiter) = heredoc_delimiter(first) {
                lines = &lines[1..];
                if lines.last().is_some_and(|(_, l)| l.trim() == delimiter) {
                    lines = &lines[..lines.len() - 1];
                }
                lines = trim_blank(lines);
            } else if first.starts_with("```") {
                lines = &lines[1..];
                if lines.last().is_some_and(|(_, l)| l.trim() == "```") {
                    lines = &lines[..lines.len() - 1];
                }
                lines = trim_blank(lines);
            }
        }
    }
    lines
}

/// The path after a `*** Xxx File:` prefix, or an error if it is empty.
fn path_after(number: usize, line: &str, prefix: &str) -> Result<String, PatchError> {
    let path = line[prefix.len()..].trim();
    if path.is_empty() {
        return Err(error(number, format!("expected a path after '{prefix}'")));
    }
    Ok(path.to_owned())
}

/// The context of a `@@` header line: `@@`, `@@ text` or `@@ -1,2 +1,3 @@ text`.
fn header_context(line: &str) -> Option<String> {
    let rest = line.trim_end().strip_prefix("@@")?;
    let trimmed = rest.trim_start();
    let text = if trimmed.starts_with('-') && trimmed.contains(" @@") {
        // A unified-diff range header: keep only the text after its closing `@@`.
        let (_, after) = trimmed.split_once("@@")?;
        after.trim_start()
    } else {
        rest.strip_prefix(' ').unwrap_or(rest)
    };
    (!text.trim().is_empty()).then(|| text.to_owned())
}

pub(super) fn parse(text: &str) -> Result<Patch, PatchError> {
    let all: Vec<Line<'_>> = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
        .collect();
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('[')) && text.contains(BEGIN) {
        return Err(error(
            1,
            "the patch looks like a JSON value; pass the patch text itself, starting with \
             '*** Begin Patch', not a JSON object or command array",
        ));
    }
    let lines = unwrap(&all);
    let Some((&(first_number, first), body)) = lines.split_first() else {
        return Err(error(
            1,
            format!("the patch is empty; expected '{BEGIN}' as the first line"),
        ));
    };
    if first.trim() != BEGIN {
        return Err(error(
            first_number,
            format!("expected '{BEGIN}' as the first line, got {}", shown(first)),
        ));
    }
    // The last non-blank line ends the patch when it trims to the end marker, whatever its
    // indentation; without one, the parser reports the missing end.
    let (body, ended) = match body.split_last() {
        Some((&(_, last), rest)) if last.trim() == END => (rest, true),
        _ => (body, false),
    };
    let mut parser = Parser {
        lines: body,
        pos: 0,
        last_number: lines.last().map_or(1, |(n, _)| *n),
        ended,
    };
    let operations = parser.operations()?;
    if operations.is_empty() {
        return Err(PatchError::Empty);
    }
    Ok(Patch { operations })
}

struct Parser<'s, 'a> {
    lines: &'s [Line<'a>],
    pos: usize,
    last_number: usize,
    /// Whether the text's last line was the end marker (already removed from `lines`).
    ended: bool,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.pos).copied()
    }

    /// Whether only bare empty lines remain before the next marker line (or the end).
    fn blank_until_marker(&self) -> bool {
        for &(_, line) in &self.lines[self.pos..] {
            if is_marker(line) || line.starts_with("@@") {
                return true;
            }
            if !line.is_empty() {
                return false;
            }
        }
        true
    }

    fn operations(&mut self) -> Result<Vec<Operation>, PatchError> {
        let mut operations = Vec::new();
        loop {
            let Some((number, line)) = self.peek() else {
                if self.ended {
                    return Ok(operations);
                }
                return Err(error(
                    self.last_number + 1,
                    format!("reached the end of the patch without '{END}'"),
                ));
            };
            self.pos += 1;
            let marker = line.trim();
            if marker == END {
                if let Some(&(n, l)) = self.lines[self.pos..]
                    .iter()
                    .find(|(_, l)| !l.trim().is_empty())
                {
                    return Err(error(
                        n,
                        format!("unexpected text after '{END}': {}", shown(l)),
                    ));
                }
                return Ok(operations);
            } else if marker.starts_with(ADD) {
                let path = path_after(number, marker, ADD)?;
                let content = self.add_body()?;
                operations.push(Operation::Add { path, content });
            } else if marker.starts_with(DELETE) {
                let path = path_after(number, marker, DELETE)?;
                operations.push(Operation::Delete { path });
            } else if marker.starts_with(UPDATE) {
                let path = path_after(number, marker, UPDATE)?;
                operations.push(self.update(number, path)?);
            } else if line.trim().is_empty() {
                // Blank lines between operations are harmless.
            } else {
                return Err(error(
                    number,
                    format!(
                        "expected '{ADD} <path>', '{DELETE} <path>', '{UPDATE} <path>' or \
                         '{END}', got {}",
                        shown(line)
                    ),
                ));
            }
        }
    }

    fn add_body(&mut self) -> Result<String, PatchError> {
        let mut content = String::new();
        while let Some((number, line)) = self.peek() {
            if is_marker(line) {
                break;
            }
            if let Some(rest) = line.strip_prefix('+') {
                content.push_str(rest);
                content.push('\n');
            } else if line.is_empty() {
                if self.blank_until_marker() {
                    self.pos += 1;
                    continue;
                }
                content.push('\n');
            } else {
                return Err(error(
                    number,
                    format!(
                        "expected an Add File line starting with '+', got {}",
                        shown(line)
                    ),
                ));
            }
            self.pos += 1;
        }
        Ok(content)
    }

    fn update(&mut self, header_number: usize, path: String) -> Result<Operation, PatchError> {
        let mut move_to = None;
        if let Some((number, line)) = self.peek()
            && line.trim_start().starts_with(MOVE)
        {
            move_to = Some(path_after(number, line.trim(), MOVE)?);
            self.pos += 1;
        }
        let mut chunks = Vec::new();
        while let Some((number, line)) = self.peek() {
            let context = if line.starts_with("@@") {
                self.pos += 1;
                header_context(line)
            } else if chunks.is_empty() && starts_hunk_line(line) {
                // The header of the first chunk may be omitted.
                None
            } else if is_marker(line) {
                if line.trim() == END_OF_FILE {
                    return Err(error(
                        number,
                        format!("'{END_OF_FILE}' must end a chunk of '-', '+' or ' ' lines"),
                    ));
                }
                break;
            } else if line.is_empty() && self.blank_until_marker() {
                self.pos += 1;
                continue;
            } else {
                return Err(error(
                    number,
                    format!(
                        "expected a hunk header '@@' or '@@ <context line>' in Update File \
                         {path}, got {}",
                        shown(line)
                    ),
                ));
            };
            chunks.push(self.chunk(number, context)?);
        }
        if chunks.is_empty() && move_to.is_none() {
            return Err(error(
                header_number,
                format!(
                    "Update File {path} has no hunks; add '@@' chunks with ' ', '-' and '+' \
                     lines"
                ),
            ));
        }
        Ok(Operation::Update {
            path,
            move_to,
            chunks,
        })
    }

    fn chunk(
        &mut self,
        header_number: usize,
        context: Option<String>,
    ) -> Result<Chunk, PatchError> {
        let mut chunk = Chunk {
            context,
            ..Chunk::default()
        };
        while let Some((number, line)) = self.peek() {
            if line.starts_with("@@") {
                break;
            }
            if is_marker(line) {
                if line.trim() == END_OF_FILE {
                    self.pos += 1;
                    chunk.end_of_file = true;
                }
                break;
            }
            if line.is_empty() {
                if self.blank_until_marker() {
                    // Trailing bare empty lines separate chunks; they are not content.
                    self.pos += 1;
                    continue;
                }
                chunk.old_lines.push(String::new());
                chunk.new_lines.push(String::new());
            } else if let Some(rest) = line.strip_prefix(' ') {
                chunk.old_lines.push(rest.to_owned());
                chunk.new_lines.push(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix('-') {
                chunk.old_lines.push(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix('+') {
                chunk.new_lines.push(rest.to_owned());
            } else {
                return Err(error(
                    number,
                    format!(
                        "expected a hunk line starting with ' ', '-' or '+', or '@@', got {}",
                        shown(line)
                    ),
                ));
            }
            self.pos += 1;
        }
        if chunk.old_lines.is_empty() && chunk.new_lines.is_empty() {
            return Err(error(
                header_number,
                "this hunk has no lines; expected lines starting with ' ', '-' or '+'",
            ));
        }
        Ok(chunk)
    }
}

fn starts_hunk_line(line: &str) -> bool {
    line.starts_with(' ') || line.starts_with('-') || line.starts_with('+')
}
