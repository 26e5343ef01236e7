//! The model-facing output bound: limits, measuring, and the pure preview algorithm.
//!
//! The registry applies this once per settlement, after projection. Tools never truncate for the
//! model themselves.

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::{Content, ToolOutput};
use crate::ports::{ManagedRef, OutputStore, RetentionError};

/// Which part of an oversized output the preview keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The beginning.
    Head,
    /// The end; right for command output, where the last lines say how it ended.
    Tail,
    /// Both ends, with the marker between them. The default.
    #[default]
    HeadTail,
}

/// How much of a call's output the model may see inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OutputLimits {
    /// Most lines of text, marker included.
    pub max_lines: usize,
    /// Most bytes of text, marker included.
    pub max_bytes: usize,
    /// Which part of the text to keep.
    pub direction: Direction,
    /// Largest media part passed to the model natively.
    pub max_media_bytes: usize,
}

impl OutputLimits {
    /// 2000 lines.
    pub const DEFAULT_MAX_LINES: usize = 2000;
    /// 50 KiB.
    pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
    /// 5 MiB, the common provider ceiling for one image.
    pub const DEFAULT_MAX_MEDIA_BYTES: usize = 5 * 1024 * 1024;
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            max_lines: Self::DEFAULT_MAX_LINES,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            direction: Direction::HeadTail,
            max_media_bytes: Self::DEFAULT_MAX_MEDIA_BYTES,
        }
    }
}

/// A partial override of [`OutputLimits`], for an agent or a single call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LimitsOverride {
    /// Replaces `max_lines` when set.
    pub max_lines: Option<usize>,
    /// Replaces `max_bytes` when set.
    pub max_bytes: Option<usize>,
    /// Replaces `direction` when set.
    pub direction: Option<Direction>,
    /// Replaces `max_media_bytes` when set.
    pub max_media_bytes: Option<usize>,
}

impl OutputLimits {
    /// These limits with the override's set fields replacing theirs.
    pub fn with(mut self, over: &LimitsOverride) -> Self {
        if let Some(v) = over.max_lines {
            self.max_lines = v;
        }
        if let Some(v) = over.max_bytes {
            self.max_bytes = v;
        }
        if let Some(v) = over.direction {
            self.direction = v;
        }
        if let Some(v) = over.max_media_bytes {
            self.max_media_bytes = v;
        }
        self
    }

    /// True when `text` fits in both the line and the byte limit.
    pub fn fits(&self, text: &str) -> bool {
        text.len() <= self.max_bytes && count_lines(text) <= self.max_lines
    }
}

/// Number of lines in `text`. A final newline ends the last line rather than starting a new one.
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = memchr_count(text.as_bytes());
    if text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

fn memchr_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// What a preview left out, for the marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Omitted {
    /// Lines not shown in full.
    pub lines: usize,
    /// Bytes not shown.
    pub bytes: usize,
    /// Lines in the whole text.
    pub total_lines: usize,
    /// Bytes in the whole text.
    pub total_bytes: usize,
    /// Whole lines shown before the marker; the first omitted line is `head_lines + 1`.
    pub head_lines: usize,
}

/// Bounds `text` to `limits`, or returns `None` when it already fits.
///
/// The result is the kept head, the marker, and the kept tail, in the order the direction
/// implies, and it fits in both limits with the marker counted. Whole lines are kept where they
/// fit; when not even one line fits, a single huge line is cut at a character boundary.
/// `marker` is called with what was left out; it is called once with upper bounds to reserve
/// room, so its length must not grow when the numbers shrink.
pub fn bound_text(
    text: &str,
    limits: &OutputLimits,
    marker: impl Fn(&Omitted) -> String,
) -> Option<String> {
    if limits.fits(text) {
        return None;
    }
    let total_lines = count_lines(text);
    let total_bytes = text.len();
    let reserve = marker(&Omitted {
        lines: total_lines,
        bytes: total_bytes,
        total_lines,
        total_bytes,
        head_lines: total_lines,
    });
    // The marker takes its own lines plus a blank-free separator line on each side it touches.
    let separators = match limits.direction {
        Direction::HeadTail => 2,
        Direction::Head | Direction::Tail => 1,
    };
    let marker_lines = count_lines(&reserve).max(1);
    let line_budget = limits.max_lines.saturating_sub(marker_lines);
    let byte_budget = limits.max_bytes.saturating_sub(reserve.len() + separators);

    let lines: Vec<&str> = split_lines(text);
    let (head, tail) = match limits.direction {
        Direction::Head => (take_head(&lines, line_budget, byte_budget), Kept::default()),
        Direction::Tail => (Kept::default(), take_tail(&lines, line_budget, byte_budget)),
        Direction::HeadTail => {
            let head = take_head(&lines, line_budget.div_ceil(2), byte_budget / 2);
            let rest = &lines[head.lines_used()..];
            let tail_bytes = byte_budget - head.text.len();
            let tail = if rest.is_empty() && head.partial && line_budget > head.lines_used() {
                // One huge line: show its start and its end.
                let remainder = &lines[0][head.text.len()..];
                let text = suffix_at_char_boundary(remainder, tail_bytes).to_owned();
                Kept {
                    partial: !text.is_empty(),
                    text,
                    whole: 0,
                }
            } else {
                take_tail(rest, line_budget - head.lines_used(), tail_bytes)
            };
            (head, tail)
        }
    };
    let kept_whole = head.whole + tail.whole;
    let shown_bytes = head.text.len() + tail.text.len();
    let omitted = Omitted {
        lines: total_lines - kept_whole,
        bytes: total_bytes.saturating_sub(shown_bytes),
        total_lines,
        total_bytes,
        head_lines: head.whole,
    };
    let marker = marker(&omitted);
    let mut out = String::with_capacity(shown_bytes + marker.len() + 2);
    if head.lines_used() > 0 {
        out.push_str(&head.text);
        out.push('\n');
    }
    out.push_str(&marker);
    if tail.lines_used() > 0 {
        out.push('\n');
        out.push_str(&tail.text);
    }
    Some(out)
}

/// Lines of `text` without their terminators. A final newline does not start an empty line.
fn split_lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

#[derive(Default, Debug)]
struct Kept {
    text: String,
    /// Whole lines kept.
    whole: usize,
    /// True when a line was cut to fit.
    partial: bool,
}

impl Kept {
    fn lines_used(&self) -> usize {
        self.whole + usize::from(self.partial)
    }
}

fn take_head(lines: &[&str], max_lines: usize, max_bytes: usize) -> Kept {
    let mut kept = Kept::default();
    let mut used = 0;
    for line in lines.iter().take(max_lines) {
        let cost = line.len() + usize::from(kept.whole > 0);
        if used + cost > max_bytes {
            break;
        }
        used += cost;
        kept.whole += 1;
    }
    kept.text = lines[..kept.whole].join("\n");
    if kept.whole == 0 && max_lines > 0 && !lines.is_empty() {
        kept.text = prefix_at_char_boundary(lines[0], max_bytes).to_owned();
        kept.partial = !kept.text.is_empty();
    }
    kept
}

fn take_tail(lines: &[&str], max_lines: usize, max_bytes: usize) -> Kept {
    let mut kept = Kept::default();
    let mut used = 0;
    for line in lines.iter().rev().take(max_lines) {
        let cost = line.len() + usize::from(kept.whole > 0);
        if used + cost > max_bytes {
            break;
        }
        used += cost;
        kept.whole += 1;
    }
    kept.text = lines[lines.len() - kept.whole..].join("\n");
    if kept.whole == 0 && max_lines > 0 && !lines.is_empty() {
        kept.text = suffix_at_char_boundary(lines[lines.len() - 1], max_bytes).to_owned();
        kept.partial = !kept.text.is_empty();
    }
    kept
}

fn prefix_at_char_boundary(line: &str, max_bytes: usize) -> &str {
    let mut end = max_bytes.min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

fn suffix_at_char_boundary(line: &str, max_bytes: usize) -> &str {
    let mut start = line.len().saturating_sub(max_bytes);
    while !line.is_char_boundary(start) {
        start += 1;
    }
    &line[start..]
}

/// The tools a model can use to recover a bounded output, by their advertised names.
///
/// The marker's hint names only tools the current turn actually advertises.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The name of a file-reading tool that takes `offset` and `limit`, if advertised.
    pub read: Option<String>,
    /// The name of a content-search tool, if advertised.
    pub grep: Option<String>,
}

impl Recovery {
    fn hint(&self) -> String {
        match (&self.read, &self.grep) {
            (Some(read), Some(grep)) => format!(
                "Use `{read}` with offset and limit to page through it, or `{grep}` to search it."
            ),
            (Some(read), None) => format!("Use `{read}` with offset and limit to page through it."),
            (None, Some(grep)) => format!("Use `{grep}` to search it."),
            (None, None) => {
                "No tool in this turn can open it; ask the user if you need the rest.".to_owned()
            }
        }
    }
}

/// A model-facing output after bounding.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounded {
    /// What the model reads. `structured` is the tool's domain output, untouched.
    pub output: ToolOutput,
    /// Complete outputs retained because they exceeded the bound.
    pub managed: Vec<ManagedRef>,
}

/// Formats `1234567` as `1,234,567`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The marker placed where a preview leaves text out.
fn truncation_marker(omitted: &Omitted, reference: &ManagedRef, recovery: &Recovery) -> String {
    format!(
        "[... {} of {} lines ({} of {} bytes) omitted, from line {}. Full output: {} ({}) ...]",
        thousands(omitted.lines),
        thousands(omitted.total_lines),
        thousands(omitted.bytes),
        thousands(omitted.total_bytes),
        thousands(omitted.head_lines + 1),
        reference.path.display(),
        recovery.hint(),
    )
}

/// Bounds a projected output: the one place model-facing output is truncated.
///
/// - Text parts are measured together when there is content; the structured output is measured
///   (as indented JSON) only when there is none, so data duplicated by content or media is never
///   counted twice.
/// - Media parts stay native up to `limits.max_media_bytes`; a larger one is retained and replaced
///   by a note.
/// - Oversized text is retained in full through `store` before any preview is published. If that
///   fails, so does bounding: a lossy success is never returned.
/// - `structured` is never altered (`LAW-STORAGE-ENCAPSULATION`).
pub async fn bound_output(
    mut output: ToolOutput,
    limits: &OutputLimits,
    store: &dyn OutputStore,
    recovery: &Recovery,
) -> Result<Bounded, RetentionError> {
    let mut managed = Vec::new();
    for part in &mut output.content {
        let oversized = part
            .media_bytes()
            .is_some_and(|n| n > limits.max_media_bytes);
        if let (
            true,
            Content::Media {
                mime_type,
                data_base64,
                ..
            },
        ) = (oversized, &*part)
        {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data_base64.as_bytes())
                .map_err(|e| RetentionError(format!("media part is not valid base64: {e}")))?;
            let size = bytes.len();
            let reference = store.retain(bytes).await?;
            *part = Content::text(format!(
                "[{mime_type} media omitted: {} bytes exceeds the {}-byte media limit. Saved at {}.]",
                thousands(size),
                thousands(limits.max_media_bytes),
                reference.path.display(),
            ));
            managed.push(reference);
        }
    }

    let text_parts = output
        .content
        .iter()
        .filter(|p| p.as_text().is_some())
        .count();
    let measured: String = if output.has_content() {
        if text_parts == 0 {
            return Ok(Bounded { output, managed });
        }
        let mut joined = String::new();
        for text in output.content.iter().filter_map(Content::as_text) {
            if !joined.is_empty() {
                joined.push('\n');
            }
            joined.push_str(text);
        }
        joined
    } else {
        match &output.structured {
            Value::Null => return Ok(Bounded { output, managed }),
            structured => serde_json::to_string_pretty(structured)
                .map_err(|e| RetentionError(format!("structured output did not serialize: {e}")))?,
        }
    };
    if limits.fits(&measured) {
        return Ok(Bounded { output, managed });
    }

    let reference = store.retain(measured.as_bytes().to_vec()).await?;
    let preview = bound_text(&measured, limits, |omitted| {
        truncation_marker(omitted, &reference, recovery)
    })
    .expect("text that does not fit always yields a preview");
    drop(measured);
    managed.push(reference);

    let media = output.content.drain(..).filter(|p| p.as_text().is_none());
    let mut content = vec![Content::text(preview)];
    content.extend(media);
    output.content = content;
    Ok(Bounded { output, managed })
}

#[cfg(test)]
mod tests;
