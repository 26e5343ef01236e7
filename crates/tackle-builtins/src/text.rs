//! Pure text helpers for the file tools: encodings, line endings, binary and media sniffing, and read formatting.
//!
//! Nothing here touches the filesystem. The file tools read bytes through [`crate::fs`], hand
//! them to [`decode`], work on the LF view from [`to_lf`], and turn the result back into bytes with
//! [`restore`] and [`encode`], so the encoding, byte-order mark, line-ending style and final
//! newline they did not mean to change come back as they were.
//!
//! Decoding is strict: bytes that are not valid UTF-8 (and carry no UTF-16 BOM) are refused with
//! [`DecodeError::NotText`] rather than patched with U+FFFD, because a lossy decode on a path that
//! later writes would silently damage the file.

use std::fmt::Write as _;
use tackle_edit::diff::{LineDiff, LineOp};

/// The read tool's default number of lines per call.
pub const DEFAULT_READ_LIMIT: usize = 2000;
/// Lines longer than this many characters are cut in read output.
pub const MAX_LINE_CHARS: usize = 2000;
/// The byte budget of one read window (numbered lines, footer excluded).
pub const MAX_READ_BYTES: usize = 50 * 1024;
/// How many leading bytes [`is_binary`] and [`sniff_media`] look at.
pub const SNIFF_BYTES: usize = 4096;

const UTF8_BOM: &[u8] = &[0xEF, 0xBB, 0xBF];
const UTF16LE_BOM: &[u8] = &[0xFF, 0xFE];
const UTF16BE_BOM: &[u8] = &[0xFE, 0xFF];
const UTF32LE_BOM: &[u8] = &[0xFF, 0xFE, 0x00, 0x00];

/// The on-disk encoding of a text file, byte-order mark included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 without a byte-order mark (the default for new files).
    Utf8,
    /// UTF-8 preceded by the `EF BB BF` byte-order mark.
    Utf8Bom,
    /// UTF-16 little endian, preceded by `FF FE`.
    Utf16Le,
    /// UTF-16 big endian, preceded by `FE FF`.
    Utf16Be,
}

impl Encoding {
    /// Whether files in this encoding start with a byte-order mark.
    pub fn has_bom(&self) -> bool {
        !matches!(self, Encoding::Utf8)
    }

    /// A short human label, such as `UTF-8 with BOM`.
    pub fn label(&self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with BOM",
            Encoding::Utf16Le => "UTF-16 LE",
            Encoding::Utf16Be => "UTF-16 BE",
        }
    }
}

/// Decoded file content: the text without its byte-order mark, and how it was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The text, with the byte-order mark removed and line endings untouched.
    pub text: String,
    /// The encoding to write the text back with.
    pub encoding: Encoding,
}

/// Why bytes could not be decoded as text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not valid in the detected encoding.
    #[error("{reason}")]
    NotText {
        /// Offset of the first offending byte in the raw input.
        offset: usize,
        /// A sentence for the model, naming the offset.
        reason: String,
    },
}

/// Decodes file bytes strictly: UTF-8 (with or without BOM), or UTF-16 when a BOM says so.
///
/// Never substitutes replacement characters. A UTF-32 BOM is refused as unsupported.
pub fn decode(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    if let Some(rest) = bytes.strip_prefix(UTF8_BOM) {
        return decode_utf8(rest, UTF8_BOM.len()).map(|text| Decoded {
            text,
            encoding: Encoding::Utf8Bom,
        });
    }
    if bytes.starts_with(UTF32LE_BOM) {
        return Err(DecodeError::NotText {
            offset: 0,
            reason: "the file starts with a UTF-32 byte-order mark; only UTF-8 and UTF-16 text is supported".into(),
        });
    }
    if let Some(rest) = bytes.strip_prefix(UTF16LE_BOM) {
        return decode_utf16(rest, u16::from_le_bytes).map(|text| Decoded {
            text,
            encoding: Encoding::Utf16Le,
        });
    }
    if let Some(rest) = bytes.strip_prefix(UTF16BE_BOM) {
        return decode_utf16(rest, u16::from_be_bytes).map(|text| Decoded {
            text,
            encoding: Encoding::Utf16Be,
        });
    }
    decode_utf8(bytes, 0).map(|text| Decoded {
        text,
        encoding: Encoding::Utf8,
    })
}

fn decode_utf8(bytes: &[u8], base: usize) -> Result<String, DecodeError> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => {
            let offset = base + e.valid_up_to();
            Err(DecodeError::NotText {
                offset,
                reason: format!(
                    "the file is not UTF-8 text (invalid byte at offset {offset}); it may use another encoding"
                ),
            })
        }
    }
}

fn decode_utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> Result<String, DecodeError> {
    // The BOM took two bytes; offsets below count from the start of the file.
    if bytes.len() % 2 == 1 {
        let offset = 2 + bytes.len() - 1;
        return Err(DecodeError::NotText {
            offset,
            reason: format!(
                "the file has a UTF-16 byte-order mark but an odd length (stray byte at offset {offset})"
            ),
        });
    }
    let units = bytes.chunks_exact(2).map(|c| unit([c[0], c[1]]));
    let mut text = String::with_capacity(bytes.len() / 2);
    let mut index = 0usize;
    for ch in char::decode_utf16(units) {
        match ch {
            Ok(c) => {
                text.push(c);
                index += c.len_utf16();
            }
            Err(_) => {
                let offset = 2 + index * 2;
                return Err(DecodeError::NotText {
                    offset,
                    reason: format!(
                        "the file is not valid UTF-16 text (unpaired surrogate at offset {offset})"
                    ),
                });
            }
        }
    }
    Ok(text)
}

/// Encodes text for disk in `encoding`, with exactly one byte-order mark when it calls for one.
///
/// A leading U+FEFF in `text` is taken as a BOM and not doubled. For plain [`Encoding::Utf8`]
/// the text is written as given.
pub fn encode(text: &str, encoding: &Encoding) -> Vec<u8> {
    let body = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf8Bom => {
            let mut out = Vec::with_capacity(UTF8_BOM.len() + body.len());
            out.extend_from_slice(UTF8_BOM);
            out.extend_from_slice(body.as_bytes());
            out
        }
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let le = matches!(encoding, Encoding::Utf16Le);
            let mut out = Vec::with_capacity(2 + body.len() * 2);
            out.extend_from_slice(if le { UTF16LE_BOM } else { UTF16BE_BOM });
            for u in body.encode_utf16() {
                out.extend_from_slice(&if le { u.to_le_bytes() } else { u.to_be_bytes() });
            }
            out
        }
    }
}

/// The line-ending style of a text. A lone `\r` is not counted as a line ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEndings {
    /// Every line ends with `\n`.
    Lf,
    /// Every line ends with `\r\n`.
    Crlf,
    /// Both styles occur.
    Mixed {
        /// Number of `\r\n` endings.
        crlf: usize,
        /// Number of bare `\n` endings.
        lf: usize,
    },
    /// The text has no line ending at all.
    None,
}

impl LineEndings {
    /// The newline new text should use: `\r\n` for CRLF files and CRLF-majority mixed files, else `\n`.
    pub fn dominant(&self) -> &'static str {
        match self {
            LineEndings::Crlf => "\r\n",
            LineEndings::Mixed { crlf, lf } if crlf > lf => "\r\n",
            _ => "\n",
        }
    }
}

/// Counts `\r\n` and bare `\n` endings and classifies the text.
pub fn detect_line_endings(text: &str) -> LineEndings {
    let bytes = text.as_bytes();
    let (mut crlf, mut lf) = (0usize, 0usize);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            if i > 0 && bytes[i - 1] == b'\r' {
                crlf += 1;
            } else {
                lf += 1;
            }
        }
    }
    match (crlf, lf) {
        (0, 0) => LineEndings::None,
        (0, _) => LineEndings::Lf,
        (_, 0) => LineEndings::Crlf,
        (crlf, lf) => LineEndings::Mixed { crlf, lf },
    }
}

/// The LF view of a text: every `\r\n` becomes `\n`; lone `\r` is kept.
pub fn to_lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Turns an LF text back into the file's original style.
///
/// - [`LineEndings::Crlf`]: every `\n` becomes `\r\n` (the input is assumed to be an LF view, so
///   a `\r` before a `\n` is content and is kept).
/// - [`LineEndings::Lf`] and [`LineEndings::None`]: returned as is.
/// - [`LineEndings::Mixed`]: returned as is (LF). A whole-file rewrite cannot know which lines
///   had which ending; mixed files keep their bytes only when edits splice changed spans into the
///   raw text, which is the edit engine's job.
pub fn restore(text_lf: &str, style: &LineEndings) -> String {
    match style {
        LineEndings::Crlf => text_lf.replace('\n', "\r\n"),
        LineEndings::Lf | LineEndings::None | LineEndings::Mixed { .. } => text_lf.to_owned(),
    }
}

/// Whether the text ends with a newline (`\n`, which covers `\r\n`).
pub fn has_final_newline(text: &str) -> bool {
    text.ends_with('\n')
}

// Extensions that are binary whatever their content. Images and PDF are absent on purpose:
// they are media, handled by `sniff_media`. `.dat` is absent too: it is often plain text, so
// the content check decides.
const BINARY_EXTENSIONS: &[&str] = &[
    "7z", "a", "aac", "avi", "bin", "bz2", "class", "db", "deb", "dll", "dmg", "doc", "docx",
    "dylib", "ear", "eot", "exe", "flac", "gz", "ico", "iso", "jar", "lib", "m4a", "mkv", "mov",
    "mp3", "mp4", "o", "obj", "odp", "ods", "odt", "ogg", "otf", "ppt", "pptx", "pyc", "pyo",
    "rar", "rpm", "so", "sqlite", "sqlite3", "tar", "tgz", "ttf", "war", "wasm", "wav", "webm",
    "woff", "woff2", "xls", "xlsx", "xz", "zip", "zst",
];

fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match name.rfind('.') {
        Some(0) | None => None,
        Some(i) => Some(&name[i + 1..]),
    }
}

/// Whether a file should be treated as binary, from its path and its first bytes.
///
/// Binary when the extension is on a known-binary list, or the first [`SNIFF_BYTES`] hold a NUL
/// byte or more than 30% control bytes (tab, LF, CR and form feed are not counted). A file with
/// a UTF-16 BOM is text; an empty file is text. Bytes of multibyte UTF-8 characters never count
/// as control bytes, so a sample cut mid-character stays text.
pub fn is_binary(path: &str, first_bytes: &[u8]) -> bool {
    if extension(path).is_some_and(|ext| {
        BINARY_EXTENSIONS
            .iter()
            .any(|known| known.eq_ignore_ascii_case(ext))
    }) {
        return true;
    }
    let sample = &first_bytes[..first_bytes.len().min(SNIFF_BYTES)];
    if sample.is_empty() {
        return false;
    }
    if (sample.starts_with(UTF16LE_BOM) && !sample.starts_with(UTF32LE_BOM))
        || sample.starts_with(UTF16BE_BOM)
    {
        return false;
    }
    if sample.contains(&0) {
        return true;
    }
    let control = sample
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c)) || b == 0x7f)
        .count();
    control * 10 > sample.len() * 3
}

/// The MIME type of a supported image or PDF, sniffed from magic bytes alone.
///
/// Recognizes PNG, JPEG, GIF, WebP and PDF; anything else (whatever its extension) is `None`.
pub fn sniff_media(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if bytes.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

/// Which budget ended a read window early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinesOrBytes {
    /// The line limit was reached.
    Lines,
    /// The byte budget was reached.
    Bytes,
}

/// One page of numbered lines, as the read tool shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadWindow {
    /// The numbered lines followed by a blank line and a footer, or the empty-file reminder.
    pub text: String,
    /// The first line shown (1-based); 0 for an empty file.
    pub first_line: usize,
    /// The last line shown (1-based); 0 for an empty file.
    pub last_line: usize,
    /// The number of lines in the whole text.
    pub total_lines: usize,
    /// Set when the window stopped before the end of the text.
    pub truncated_by: Option<LinesOrBytes>,
}

impl ReadWindow {
    /// The offset that continues reading, when the window stopped early.
    pub fn next_offset(&self) -> Option<usize> {
        self.truncated_by.map(|_| self.last_line + 1)
    }
}

/// Why a read window could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The requested first line does not exist.
    #[error(
        "offset {offset} is past the end of the file ({total} lines). Use an offset from 1 to {total}."
    )]
    OffsetPastEnd {
        /// The requested 1-based offset.
        offset: usize,
        /// The number of lines in the file.
        total: usize,
    },
}

/// The reminder returned for an empty file.
pub const EMPTY_FILE_NOTE: &str = "The file is empty.";

/// Counts lines the way [`format_lines`] numbers them: a final newline does not start a new line.
/// It is the settlement bound's own count, so read windows and truncation markers agree.
pub use tackle_core::count_lines;

/// Formats a window of `text` as `{n:>6}\t{line}` rows with a footer telling how to go on.
///
/// `offset` is the 1-based first line (0 also means the start); `limit` is the most lines to show
/// (0 is treated as 1). Lines over `max_line_chars` characters are cut at a character boundary
/// with a marker. The window stops before a row that would push the rows past `max_bytes`, but
/// always shows at least one row so paging makes progress. A `\r` before each `\n` is not shown.
pub fn format_lines(
    text: &str,
    offset: usize,
    limit: usize,
    max_line_chars: usize,
    max_bytes: usize,
) -> Result<ReadWindow, ReadError> {
    let total = count_lines(text);
    if total == 0 {
        return Ok(ReadWindow {
            text: EMPTY_FILE_NOTE.to_owned(),
            first_line: 0,
            last_line: 0,
            total_lines: 0,
            truncated_by: None,
        });
    }
    let first = offset.max(1);
    if first > total {
        return Err(ReadError::OffsetPastEnd { offset, total });
    }
    let limit = limit.max(1);

    let mut body = String::new();
    let mut last = first - 1;
    let mut truncated_by = None;
    let lines = text.split('\n').take(total).skip(first - 1);
    for (shown, line) in lines.enumerate() {
        if shown == limit {
            truncated_by = Some(LinesOrBytes::Lines);
            break;
        }
        let row = format_row(first + shown, line, max_line_chars);
        if shown > 0 && body.len() + row.len() > max_bytes {
            truncated_by = Some(LinesOrBytes::Bytes);
            break;
        }
        body.push_str(&row);
        last = first + shown;
    }

    let footer = match truncated_by {
        None => format!(
            "(End of file: {total} line{} total.)",
            if total == 1 { "" } else { "s" }
        ),
        Some(LinesOrBytes::Lines) => format!(
            "(Showing lines {first}-{last} of {total}. Use offset={} to continue.)",
            last + 1
        ),
        Some(LinesOrBytes::Bytes) => format!(
            "(Output capped at {}. Showing lines {first}-{last} of {total}. Use offset={} to continue.)",
            human_bytes(max_bytes),
            last + 1
        ),
    };
    body.push('\n');
    body.push_str(&footer);
    Ok(ReadWindow {
        text: body,
        first_line: first,
        last_line: last,
        total_lines: total,
        truncated_by,
    })
}

// One numbered row, newline included.
pub(crate) fn format_row(number: usize, line: &str, max_chars: usize) -> String {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut row = String::with_capacity(line.len().min(max_chars * 4) + 16);
    let cut = line.char_indices().nth(max_chars).map(|(i, _)| i);
    match cut {
        None => {
            let _ = writeln!(row, "{number:>6}\t{line}");
        }
        Some(end) => {
            let chars = max_chars + line[end..].chars().count();
            let _ = writeln!(
                row,
                "{number:>6}\t{}... (line truncated to {max_chars} of {chars} characters)",
                &line[..end]
            );
        }
    }
    row
}

fn human_bytes(n: usize) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests;

/// Applies a change to `raw`, keeping the bytes of every line the change did not touch.
///
/// `diff` goes from [`to_lf`] of `raw` to `new_lf`. Lines equal in both keep their original
/// ending (so a mixed file stays mixed); a rewritten line keeps the ending of the line it
/// replaces, and inserted lines take the file's dominant ending. The result differs from `raw`
/// only where `new_lf` differs from the LF view.
pub fn splice_line_endings(raw: &str, new_lf: &str, diff: &LineDiff<'_>) -> String {
    let style = detect_line_endings(raw);
    match style {
        LineEndings::Lf | LineEndings::None => return new_lf.to_owned(),
        LineEndings::Crlf => return restore(new_lf, &style),
        LineEndings::Mixed { .. } => {}
    }
    let newline = style.dominant();
    let raw_lines: Vec<&str> = raw.split_inclusive('\n').collect();
    let new_lines = diff.new_lines();
    let mut out = String::with_capacity(new_lf.len() + new_lf.len() / 16);
    for op in diff.ops() {
        match op {
            LineOp::Equal { old, len, .. } => {
                for line in &raw_lines[*old..old + len] {
                    out.push_str(line);
                }
            }
            LineOp::Change { old, new } => {
                // A rewritten line keeps the ending of the line it replaces; extra lines take
                // the dominant one.
                for (k, line) in new_lines[new.clone()].iter().enumerate() {
                    let ending = match raw_lines.get(old.start + k) {
                        Some(raw) if k < old.len() && raw.ends_with("\r\n") => "\r\n",
                        Some(raw) if k < old.len() && raw.ends_with('\n') => "\n",
                        _ => newline,
                    };
                    push_with_ending(&mut out, line, ending);
                }
            }
        }
    }
    out
}

/// Appends `line` (which may end with `\n`) with its `\n` spelled as `ending`.
fn push_with_ending(out: &mut String, line: &str, ending: &str) {
    match line.strip_suffix('\n') {
        Some(body) => {
            out.push_str(body);
            out.push_str(ending);
        }
        None => out.push_str(line),
    }
}

/// A unified diff of two LF texts with `path` in its headers, and the counts of added and
/// removed lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextChange {
    /// The unified diff (empty when the texts are equal).
    pub diff: String,
    /// Lines added.
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
}

impl TextChange {
    /// The unified diff (three lines of context) and counts of a line diff, headed with `path`.
    pub fn new(path: &str, diff: &LineDiff<'_>) -> Self {
        TextChange {
            diff: diff.unified(path, 3),
            additions: diff.additions(),
            deletions: diff.deletions(),
        }
    }
}

/// Diffs `old` against `new` (LF texts) when nothing is known about the change: the common
/// prefix and suffix are skipped and the rest is diffed under a deadline
/// ([`LineDiff::compute`]), so a large rewrite stays linear in practice.
pub fn text_change(path: &str, old: &str, new: &str) -> TextChange {
    TextChange::new(path, &LineDiff::compute(old, new))
}
