//! The model-facing output bound: limits, measuring, and the pure preview algorithm.
//!
//! The registry applies this once per settlement, after projection. Tools never truncate for the
//! model themselves.

use std::io;
use std::sync::{Mutex, PoisonError};

use base64::Engine;
use bytes::Bytes;
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
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    if text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// The size of text seen in pieces, for measuring without building it: bytes, newlines and the
/// last byte, which is all [`count_lines`] of the whole needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Measure {
    bytes: usize,
    newlines: usize,
    last: Option<u8>,
}

impl Measure {
    /// The measure of `parts` joined with `\n`, the way [`join_texts`] joins them.
    fn of_joined<'a>(parts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut measure = Self::default();
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                measure.push(b"\n");
            }
            measure.push(part.as_bytes());
        }
        measure
    }

    fn push(&mut self, piece: &[u8]) {
        if let Some(&last) = piece.last() {
            self.bytes += piece.len();
            self.newlines += memchr::memchr_iter(b'\n', piece).count();
            self.last = Some(last);
        }
    }

    /// What [`count_lines`] would say of the whole.
    fn lines(&self) -> usize {
        match self.last {
            None => 0,
            Some(b'\n') => self.newlines,
            Some(_) => self.newlines + 1,
        }
    }

    fn fits(&self, limits: &OutputLimits) -> bool {
        self.bytes <= limits.max_bytes && self.lines() <= limits.max_lines
    }
}

/// What `serde_json::to_string_pretty` would produce, estimated by walking the value: the line
/// count is exact and the byte count is an upper bound. Walking a small value costs far less than
/// serializing it, and most outputs are far below the limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PrettyEstimate {
    lines: usize,
    max_bytes: usize,
}

impl PrettyEstimate {
    /// Worst case for a JSON string of `len` bytes: every byte escaped as `\u00XX`, plus quotes.
    fn string(len: usize) -> usize {
        len.saturating_mul(6).saturating_add(2)
    }

    /// The estimate for `value` printed at nesting `depth` (its own line's indent excluded).
    fn of(value: &Value, depth: usize) -> Self {
        // Each child line: indent, the value, then `,` and a newline.
        let child_indent = 2 * (depth + 1);
        let closing = 2 * depth + 1;
        match value {
            Value::Null | Value::Bool(_) => Self {
                lines: 1,
                max_bytes: 5,
            },
            // f64 and 64-bit integers print in at most 24 bytes.
            Value::Number(_) => Self {
                lines: 1,
                max_bytes: 24,
            },
            Value::String(text) => Self {
                lines: 1,
                max_bytes: Self::string(text.len()),
            },
            Value::Array(items) if items.is_empty() => Self {
                lines: 1,
                max_bytes: 2,
            },
            Value::Object(fields) if fields.is_empty() => Self {
                lines: 1,
                max_bytes: 2,
            },
            Value::Array(items) => {
                let mut total = Self {
                    lines: 2,
                    max_bytes: 2 + closing,
                };
                for item in items {
                    let child = Self::of(item, depth + 1);
                    total.lines += child.lines;
                    total.max_bytes = total
                        .max_bytes
                        .saturating_add(child_indent + child.max_bytes + 2);
                }
                total
            }
            Value::Object(fields) => {
                let mut total = Self {
                    lines: 2,
                    max_bytes: 2 + closing,
                };
                for (key, field) in fields {
                    let child = Self::of(field, depth + 1);
                    total.lines += child.lines;
                    // `"key": value,` plus the newline.
                    total.max_bytes = total.max_bytes.saturating_add(
                        child_indent + Self::string(key.len()) + 2 + child.max_bytes + 2,
                    );
                }
                total
            }
        }
    }
}

/// A sink that only measures, for serializers.
impl io::Write for Measure {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.push(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
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
    let total_lines = count_lines(text);
    if text.len() <= limits.max_bytes && total_lines <= limits.max_lines {
        return None;
    }
    Some(preview(text, total_lines, limits, marker))
}

/// The preview of `text`, which has `total_lines` lines and does not fit in `limits`.
///
/// Only the kept lines are visited: the head is found scanning forward, the tail backward.
fn preview(
    text: &str,
    total_lines: usize,
    limits: &OutputLimits,
    marker: impl Fn(&Omitted) -> String,
) -> String {
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

    // A final newline does not start an empty line.
    let body = text.strip_suffix('\n').unwrap_or(text);
    let (head, tail) = match limits.direction {
        Direction::Head => (
            take_head(Some(body), line_budget, byte_budget).0,
            Kept::default(),
        ),
        Direction::Tail => (
            Kept::default(),
            take_tail(Some(body), line_budget, byte_budget),
        ),
        Direction::HeadTail => {
            let (head, rest) = take_head(Some(body), line_budget.div_ceil(2), byte_budget / 2);
            let tail_bytes = byte_budget - head.text.len();
            let tail = if rest.is_none() && head.partial && line_budget > head.lines_used() {
                // One huge line: show its start and its end.
                let text = suffix_at_char_boundary(&body[head.text.len()..], tail_bytes);
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
        out.push_str(head.text);
        out.push('\n');
    }
    out.push_str(&marker);
    if tail.lines_used() > 0 {
        out.push('\n');
        out.push_str(tail.text);
    }
    out
}

/// Kept text, borrowed from the input.
#[derive(Default, Debug)]
struct Kept<'a> {
    text: &'a str,
    /// Whole lines kept.
    whole: usize,
    /// True when a line was cut to fit.
    partial: bool,
}

impl Kept<'_> {
    fn lines_used(&self) -> usize {
        self.whole + usize::from(self.partial)
    }
}

// `Some(s)` stands for the lines of `s` split on `\n` (at least one, possibly empty); `None` for
// no lines at all.

/// Keeps lines from the start of `lines`, and returns them with the lines after them.
fn take_head(lines: Option<&str>, max_lines: usize, max_bytes: usize) -> (Kept<'_>, Option<&str>) {
    let Some(s) = lines else {
        return (Kept::default(), None);
    };
    let mut kept = Kept::default();
    let mut end = 0;
    // Start of the first line not kept, if there is one.
    let mut next = Some(0);
    while kept.whole < max_lines {
        let Some(start) = next else { break };
        let line_end = memchr::memchr(b'\n', &s.as_bytes()[start..]).map_or(s.len(), |i| start + i);
        // The kept lines and their separators span exactly `..line_end`.
        if line_end > max_bytes {
            break;
        }
        kept.whole += 1;
        end = line_end;
        next = (line_end < s.len()).then_some(line_end + 1);
    }
    kept.text = &s[..end];
    if kept.whole == 0 && max_lines > 0 {
        let first_end = memchr::memchr(b'\n', s.as_bytes());
        kept.text = prefix_at_char_boundary(&s[..first_end.unwrap_or(s.len())], max_bytes);
        kept.partial = !kept.text.is_empty();
        if kept.partial {
            next = first_end.map(|i| i + 1);
        }
    }
    (kept, next.map(|start| &s[start..]))
}

/// Keeps lines from the end of `lines`.
fn take_tail(lines: Option<&str>, max_lines: usize, max_bytes: usize) -> Kept<'_> {
    let Some(s) = lines else {
        return Kept::default();
    };
    let mut kept = Kept::default();
    let mut start = s.len();
    // End of the last line not kept, if there is one.
    let mut prev = Some(s.len());
    while kept.whole < max_lines {
        let Some(end) = prev else { break };
        let line_start = memchr::memrchr(b'\n', &s.as_bytes()[..end]).map_or(0, |i| i + 1);
        // The kept lines and their separators span exactly `line_start..`.
        if s.len() - line_start > max_bytes {
            break;
        }
        kept.whole += 1;
        start = line_start;
        prev = line_start.checked_sub(1);
    }
    kept.text = &s[start..];
    if kept.whole == 0 && max_lines > 0 {
        let last_start = memchr::memrchr(b'\n', s.as_bytes()).map_or(0, |i| i + 1);
        kept.text = suffix_at_char_boundary(&s[last_start..], max_bytes);
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
    /// What the provider receives: the bounded content, and the structured value when it fits
    /// with the text (else `null`, and the complete value is among `managed`).
    pub output: ToolOutput,
    /// Complete outputs retained because they exceeded the bound.
    pub managed: Vec<ManagedRef>,
}

/// Formats a non-negative integer with thousands separators: `1234567` as `1,234,567`. Every
/// model-facing count (truncation markers, search totals) uses it, so they read alike.
pub fn thousands(n: impl std::fmt::Display) -> String {
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
/// Everything the provider receives is bounded, the structured value included:
/// - Structured data the content already carries is not sent, counted or stored twice: strings
///   of the structured value that repeat a media part's data are replaced by a short note
///   ([`MEDIA_DATA_OMITTED`]), and a string value that is the content's text (a string output
///   shown as itself) is sent as `null`.
/// - Media parts stay native up to `limits.max_media_bytes`; a larger one is retained and replaced
///   by a note.
/// - With content, the text parts are measured together and bounded to the limits. The
///   structured value is then sent only when its JSON fits, with the text, in `max_bytes`;
///   otherwise it is retained and sent as `null`.
/// - Without content, the model reads the structured value, measured as indented JSON; when it
///   does not fit, a preview of that JSON becomes the content and the value is sent as `null`.
/// - Oversized text or JSON is retained in full through `store` before any preview is published.
///   If that fails, so does bounding: a lossy success is never returned.
/// - Output that fits is measured where it lies, never copied. Oversized text is moved out of a
///   single part (or joined once from several) and shared with the store, then freed as soon as
///   the preview exists: at most one extra copy, none for a single part.
pub async fn bound_output(
    output: ToolOutput,
    limits: &OutputLimits,
    store: &dyn OutputStore,
    recovery: &Recovery,
) -> Result<Bounded, RetentionError> {
    let managed = Mutex::new(Vec::new());
    let output = bound_into(output, limits, store, recovery, &managed).await?;
    let managed = managed.into_inner().unwrap_or_else(PoisonError::into_inner);
    Ok(Bounded { output, managed })
}

/// What a string of the structured value becomes when a media part of the same result carries
/// the same data.
pub const MEDIA_DATA_OMITTED: &str = "(omitted here: the result carries this data as a media part)";

/// [`bound_output`], adding each reference to `managed` as soon as it is retained, so a caller
/// whose future is dropped midway still knows what was written.
pub(crate) async fn bound_into(
    mut output: ToolOutput,
    limits: &OutputLimits,
    store: &dyn OutputStore,
    recovery: &Recovery,
    managed: &Mutex<Vec<ManagedRef>>,
) -> Result<ToolOutput, RetentionError> {
    let keep = |reference: &ManagedRef| {
        managed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(reference.clone());
    };
    omit_duplicates(&mut output);
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
            let reference = store.retain(Bytes::from(bytes)).await?;
            keep(&reference);
            *part = Content::text(format!(
                "[{mime_type} media omitted: {} bytes exceeds the {}-byte media limit. Saved at {}.]",
                thousands(size),
                thousands(limits.max_media_bytes),
                reference.path.display(),
            ));
        }
    }

    if !output.has_content() {
        return bound_structured_only(output, limits, store, recovery, keep).await;
    }
    // Measure first: text that fits is left where it is.
    let measure = Measure::of_joined(output.content.iter().filter_map(Content::as_text));
    let text_bytes = if measure.fits(limits) {
        measure.bytes
    } else {
        // Take the text parts out, leaving the media parts in order.
        let mut texts = Vec::new();
        output.content.retain_mut(|part| match part {
            Content::Text { text } => {
                texts.push(std::mem::take(text));
                false
            }
            Content::Media { .. } => true,
        });
        let full = join_texts(texts, measure.bytes).into_bytes();
        let preview = retain_preview(full, measure.lines(), limits, store, recovery, keep).await?;
        let bytes = preview.len();
        output.content.insert(0, Content::text(preview));
        bytes
    };
    let budget = limits.max_bytes.saturating_sub(text_bytes);
    if !structured_fits(&output.structured, budget)? {
        let json = pretty_json(&output.structured)?;
        let reference = store.retain(Bytes::from(json)).await?;
        keep(&reference);
        output.structured = Value::Null;
    }
    Ok(output)
}

/// Bounds an output without content: the model reads its structured value as indented JSON.
async fn bound_structured_only(
    mut output: ToolOutput,
    limits: &OutputLimits,
    store: &dyn OutputStore,
    recovery: &Recovery,
    keep: impl Fn(&ManagedRef),
) -> Result<ToolOutput, RetentionError> {
    if output.structured.is_null() {
        return Ok(output);
    }
    // Cheap first: exact lines and an upper bound on bytes, from the tree alone.
    let estimate = PrettyEstimate::of(&output.structured, 0);
    if estimate.lines <= limits.max_lines && estimate.max_bytes <= limits.max_bytes {
        return Ok(output);
    }
    let mut measure = Measure::default();
    serde_json::to_writer_pretty(&mut measure, &output.structured).map_err(not_serialized)?;
    if measure.fits(limits) {
        return Ok(output);
    }
    let json = pretty_json(&output.structured)?;
    let preview = retain_preview(json, measure.lines(), limits, store, recovery, keep).await?;
    output.content.push(Content::text(preview));
    output.structured = Value::Null;
    Ok(output)
}

/// Retains `full` (UTF-8 text of `lines` lines) and returns its preview, marker included.
async fn retain_preview(
    full: Vec<u8>,
    lines: usize,
    limits: &OutputLimits,
    store: &dyn OutputStore,
    recovery: &Recovery,
    keep: impl Fn(&ManagedRef),
) -> Result<String, RetentionError> {
    // The store and the preview share one buffer: cloning `Bytes` counts a reference.
    let full = Bytes::from(full);
    let reference = store.retain(full.clone()).await?;
    keep(&reference);
    let text = std::str::from_utf8(&full).expect("joined text and JSON are UTF-8");
    Ok(preview(text, lines, limits, |omitted| {
        truncation_marker(omitted, &reference, recovery)
    }))
}

/// True when `structured` is `null` or its compact JSON takes at most `budget` bytes.
fn structured_fits(structured: &Value, budget: usize) -> Result<bool, RetentionError> {
    if structured.is_null() {
        return Ok(true);
    }
    // The indented estimate bounds the compact size too.
    if PrettyEstimate::of(structured, 0).max_bytes <= budget {
        return Ok(true);
    }
    let mut measure = Measure::default();
    serde_json::to_writer(&mut measure, structured).map_err(not_serialized)?;
    Ok(measure.bytes <= budget)
}

fn pretty_json(value: &Value) -> Result<Vec<u8>, RetentionError> {
    serde_json::to_vec_pretty(value).map_err(not_serialized)
}

fn not_serialized(error: serde_json::Error) -> RetentionError {
    RetentionError(format!("structured output did not serialize: {error}"))
}

/// Replaces every string of the structured value that equals the data of one of the output's
/// media parts with [`MEDIA_DATA_OMITTED`].
///
/// A structured value that is just the content's text (a string output shown as itself, in one
/// part or several) is a duplicate too: it becomes `null`.
fn omit_duplicates(output: &mut ToolOutput) {
    if let Value::String(structured) = &output.structured
        && is_joined_text(&output.content, structured)
    {
        output.structured = Value::Null;
        return;
    }
    let media: Vec<&str> = output
        .content
        .iter()
        .filter_map(|part| match part {
            Content::Media { data_base64, .. } => Some(data_base64.as_str()),
            Content::Text { .. } => None,
        })
        .collect();
    if media.is_empty() {
        return;
    }
    fn walk(value: &mut Value, media: &[&str]) {
        match value {
            Value::String(text) if media.contains(&text.as_str()) => {
                *text = MEDIA_DATA_OMITTED.to_owned();
            }
            Value::Array(items) => items.iter_mut().for_each(|item| walk(item, media)),
            Value::Object(fields) => fields.values_mut().for_each(|field| walk(field, media)),
            _ => {}
        }
    }
    walk(&mut output.structured, &media);
}

/// True when `text` is the text parts of `content` joined with `\n`, as the bound joins them.
fn is_joined_text(content: &[Content], text: &str) -> bool {
    let mut rest = text;
    let mut parts = content.iter().filter_map(Content::as_text).peekable();
    if parts.peek().is_none() {
        return false;
    }
    let mut first = true;
    for part in parts {
        if !first {
            let Some(after) = rest.strip_prefix('\n') else {
                return false;
            };
            rest = after;
        }
        first = false;
        let Some(after) = rest.strip_prefix(part) else {
            return false;
        };
        rest = after;
    }
    rest.is_empty()
}

/// `texts` joined with `\n`, skipping the separator while the result is still empty. A single
/// text is returned as it is; otherwise the parts are dropped as they are copied.
fn join_texts(mut texts: Vec<String>, bytes: usize) -> String {
    if texts.len() == 1 {
        return texts.pop().unwrap_or_default();
    }
    let mut joined = String::with_capacity(bytes);
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            joined.push('\n');
        }
        joined.push_str(text);
    }
    joined
}

#[cfg(test)]
mod tests;
