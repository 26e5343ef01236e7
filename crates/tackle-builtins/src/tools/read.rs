//! The read tool: numbered pages of text files, directory listings, notebooks as cells with
//! their outputs, PDFs as text by page (and as media), and images as media.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{AnyTool, Context, OutputLimits, State, Tool, ToolFailure};

use super::human;
use super::instructions::nearest_unseen;
#[cfg(feature = "pdf")]
use super::pdf;
use super::readable::read_ask;
use super::{ToolEnv, failure, notebook};
use crate::fs::Resolved;
use crate::text::{
    self, DEFAULT_READ_LIMIT, DecodeError, MAX_LINE_CHARS, MAX_READ_BYTES, SNIFF_BYTES,
};

/// Text files larger than this are refused: read keeps a whole file in memory to hash it.
const MAX_TEXT_FILE_BYTES: u64 = 256 * 1024 * 1024;

const DESCRIPTION: &str = "Read a file or list a directory.\n\
- filePath is relative to the working directory, or absolute.\n\
- Text comes back as numbered lines (`     7\\tline`); by default up to 2000 lines from the start. \
Use offset (the line number to start at) and limit to page through long files; the footer says \
which offset continues.\n\
- Lines over 2000 characters are cut. Use grep to find things in huge files.\n\
- Images (PNG, JPEG, GIF, WebP) come back as media.\n\
- A PDF comes back as its text, page by page (at most 20 pages a call; pick them with pages, \
such as \"3-5\"), with the PDF itself attached as media.\n\
- A Jupyter notebook (.ipynb) comes back as its cells in order (index, type, id, numbered \
source) with their outputs, images attached as media; offset and limit then count cells, \
offset being the first cell's 0-based index. Edit cells with notebook_edit.\n\
- A directory comes back as its sorted entries, directories marked with a trailing /.\n\
- Read files before editing them, and read several files in parallel when you can.";

/// Arguments of the read tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadInput {
    /// The file or directory to read, relative to the working directory or absolute.
    pub file_path: String,
    /// The line (or directory entry) number to start from, 1-based as shown in the output. 0 or
    /// absent means the start.
    #[serde(default)]
    pub offset: Option<usize>,
    /// The most lines (or entries) to return. Defaults to 2000.
    #[serde(default)]
    pub limit: Option<usize>,
    /// For a PDF: the pages to read, such as `3`, `3-5` or `3-`, counting from 1.
    #[serde(default)]
    pub pages: Option<String>,
}

/// What was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadKind {
    /// A text file, shown as numbered lines.
    File,
    /// A directory, shown as its entries.
    Directory,
    /// An image, returned as media.
    Media,
    /// A PDF: its text by page, and the PDF as media when it is small enough.
    Pdf,
    /// A Jupyter notebook, shown as cells; lines count cells.
    Notebook,
}

/// A media part of a result beyond the main one: a notebook's image outputs.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadMedia {
    /// The media type.
    pub mime_type: String,
    /// The bytes, base64-encoded.
    pub data_base64: String,
}

/// The result of the read tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadOutput {
    /// What the model reads.
    pub output: String,
    /// The path read, relative to the working directory when inside it.
    pub path: String,
    /// What kind of thing was read.
    pub kind: ReadKind,
    /// The first line (entry, or PDF page) shown, 1-based; 0 when nothing was shown. For a
    /// notebook, the first cell's 0-based index.
    pub first_line: usize,
    /// The last line (entry, page, or cell index) shown; 0 when nothing was shown.
    pub last_line: usize,
    /// Lines in the file (entries in the directory, pages in the PDF, cells in the notebook).
    pub total_lines: usize,
    /// The offset that continues reading, when the page stopped early.
    pub next_offset: Option<usize>,
    /// Instruction files added to the output, relative to the working directory.
    pub instructions: Vec<String>,
    /// The media type of an image or PDF.
    pub mime_type: Option<String>,
    /// The bytes of an image or PDF, base64-encoded.
    pub data_base64: Option<String>,
    /// Further media: a notebook's image outputs, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<ReadMedia>,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(DESCRIPTION, env.clone(), read)
        .with_projection(project)
        .with_concurrency(tackle_core::Concurrency::ReadOnly)
        .erase()
}

/// The text, the main media part, then each further one.
fn project(input: &ReadInput, output: &serde_json::Value) -> Vec<tackle_core::Content> {
    let mut content = super::project_output(input, output);
    if let Some(media) = output["media"].as_array() {
        for part in media {
            if let (Some(mime), Some(data)) =
                (part["mimeType"].as_str(), part["dataBase64"].as_str())
            {
                content.push(tackle_core::Content::media(mime, data));
            }
        }
    }
    content
}

async fn read(
    State(env): State<ToolEnv>,
    input: ReadInput,
    cx: Context,
) -> Result<ReadOutput, ToolFailure> {
    let (env, cx) = (&env, &cx);
    let target = env.resolve(cx, &input.file_path).await?;
    let name = target.display_name();
    if env.foreign_output(cx, &target.path) {
        return Err(ToolFailure::new(format!(
            "`{name}` is a saved output of another session, so it was not read. Only the session \
             whose result named it can read it."
        ))
        .with_hint("Run the command or search again in this session to get its output."));
    }
    // Asked before the existence check, so a denied read cannot probe for files.
    env.gate.ask(cx, read_ask(&name)).await?;
    if !target.exists {
        return Err(missing_with_suggestions(
            &target,
            format!("File not found: `{name}`."),
        ));
    }
    if target.path.is_dir() {
        return list_directory(&target, &name, &input).await;
    }
    // One open gives the size and the bytes, and refuses FIFOs, sockets and devices. Over the
    // limit, only the head is read, to say what the file is; the read stops at the limit
    // whatever the size said.
    let (size, bytes) = env
        .fs
        .read_sized(&target, MAX_TEXT_FILE_BYTES, SNIFF_BYTES as u64)
        .await
        .map_err(failure)?;
    let sample = &bytes[..bytes.len().min(SNIFF_BYTES)];

    let media = text::sniff_media(sample);
    if input.pages.is_some() && media != Some(PDF) {
        return Err(ToolFailure::new(format!(
            "pages applies only to PDFs, and `{name}` is not one, so nothing was read."
        ))
        .with_hint("Leave pages out; use offset and limit to page through other files."));
    }
    #[cfg(feature = "pdf")]
    if media == Some(PDF) {
        return read_pdf(env, cx, &target, name, size, &input).await;
    }
    if let Some(mime) = media {
        if size > env.options.max_media_bytes {
            return Err(ToolFailure::new(format!(
                "`{name}` is {mime} of {}, over the {} read returns as media.",
                human(size),
                human(env.options.max_media_bytes)
            ))
            .with_hint("Use a smaller copy of the file, or inspect it with bash."));
        }
        let bytes = env
            .fs
            .read_limited(&target, env.options.max_media_bytes)
            .await
            .map_err(failure)?;
        env.reads.record_read(cx.session(), &target, &bytes);
        let kind = if mime == PDF { "PDF" } else { "Image" };
        return Ok(ReadOutput {
            output: format!(
                "{kind} read successfully: {name} ({mime}, {}).",
                human(size)
            ),
            path: name,
            kind: ReadKind::Media,
            first_line: 0,
            last_line: 0,
            total_lines: 0,
            next_offset: None,
            instructions: Vec::new(),
            mime_type: Some(mime.to_owned()),
            data_base64: Some(base64::engine::general_purpose::STANDARD.encode(&bytes)),
            media: Vec::new(),
        });
    }
    if text::is_binary(&name, sample) {
        return Err(ToolFailure::new(format!(
            "Cannot read binary file `{name}` ({}, {}).",
            binary_kind(sample),
            human(size)
        ))
        .with_hint("Inspect binary files with bash (for example `file` or `xxd | head`)."));
    }
    if size > MAX_TEXT_FILE_BYTES {
        return Err(ToolFailure::new(format!(
            "`{name}` is {}, too large to read whole.",
            human(size)
        ))
        .with_hint("Search it with grep, or look at parts of it with bash (head, tail, sed -n)."));
    }
    let decoded = text::decode(&bytes).map_err(|e| not_text(&name, e))?;
    let mut note = None;
    if is_notebook(&name) {
        match notebook::parse(&decoded.text) {
            Ok(parsed) => {
                let rendered =
                    notebook::render(&parsed, &name, input.offset.unwrap_or(0), input.limit)
                        .map_err(failure)?;
                env.reads.record_read(cx.session(), &target, &bytes);
                return Ok(ReadOutput {
                    output: rendered.text,
                    path: name,
                    kind: ReadKind::Notebook,
                    first_line: rendered.first_cell,
                    last_line: rendered.last_cell,
                    total_lines: rendered.total_cells,
                    next_offset: rendered.next_offset,
                    instructions: Vec::new(),
                    mime_type: None,
                    data_base64: None,
                    media: rendered
                        .images
                        .into_iter()
                        .map(|image| ReadMedia {
                            mime_type: image.mime_type,
                            data_base64: image.data_base64,
                        })
                        .collect(),
                });
            }
            Err(why) => {
                note = Some(format!(
                    "`{name}` could not be shown as a notebook: {why}. It is shown as plain text \
                     below; notebook_edit cannot edit it until it is valid."
                ));
            }
        }
    }
    let offset = input.offset.unwrap_or(0);
    if text::count_lines(&decoded.text) == 0 && offset > 1 {
        return Err(ToolFailure::new(format!(
            "offset {offset} is past the end of `{name}`: the file is empty."
        )));
    }
    // The window, its footer and any reminder must fit the default output bound whole: a bound
    // that cut lines out of the middle would contradict the footer's "Showing lines a-b".
    let window_for = |extra_lines: usize, extra_bytes: usize| {
        let most_lines = OutputLimits::DEFAULT_MAX_LINES.saturating_sub(FOOTER_LINES + extra_lines);
        text::format_lines(
            &decoded.text,
            offset,
            input
                .limit
                .unwrap_or(DEFAULT_READ_LIMIT)
                .min(most_lines)
                .max(1),
            MAX_LINE_CHARS,
            MAX_READ_BYTES
                .saturating_sub(FOOTER_BYTES + extra_bytes)
                .max(1),
        )
        .map_err(failure)
    };
    let note_size = note
        .as_ref()
        .map_or((0, 0), |n| (tackle_core::count_lines(n) + 1, n.len() + 2));
    let mut window = window_for(note_size.0, note_size.1)?;
    env.reads.record_read(cx.session(), &target, &bytes);
    // A language server opens the file now, so the next change is compared with a known state.
    env.opened(&target.path, &decoded.text);

    let mut instructions = Vec::new();
    let mut reminder = None;
    if let Some(found) = nearest_unseen(env, cx.session(), &target) {
        let text = found.reminder();
        window = window_for(
            note_size.0 + tackle_core::count_lines(&text) + 2,
            note_size.1 + text.len() + 2,
        )?;
        reminder = Some(text);
        instructions.push(found.name);
    }
    let mut output = match note {
        Some(note) => format!("{note}\n\n{}", window.text),
        None => window.text.clone(),
    };
    if let Some(reminder) = reminder {
        output.push_str("\n\n");
        output.push_str(&reminder);
    }
    Ok(ReadOutput {
        output,
        path: name,
        kind: ReadKind::File,
        first_line: window.first_line,
        last_line: window.last_line,
        total_lines: window.total_lines,
        next_offset: window.next_offset(),
        instructions,
        mime_type: None,
        data_base64: None,
        media: Vec::new(),
    })
}

const PDF: &str = "application/pdf";

/// Whether `name` is a Jupyter notebook's, by its extension.
fn is_notebook(name: &str) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(_, extension)| extension.eq_ignore_ascii_case("ipynb"))
}

/// A PDF: the text of the pages asked for, and the PDF itself as media when it fits the
/// media limit.
#[cfg(feature = "pdf")]
async fn read_pdf(
    env: &ToolEnv,
    cx: &Context,
    target: &Resolved,
    name: String,
    size: u64,
    input: &ReadInput,
) -> Result<ReadOutput, ToolFailure> {
    let attach = size <= env.options.max_media_bytes;
    if !attach && size > pdf::MAX_TEXT_PDF_BYTES {
        return Err(ToolFailure::new(format!(
            "`{name}` is a PDF of {}, over both the {} read extracts text from and the {} it \
             returns as media.",
            human(size),
            human(pdf::MAX_TEXT_PDF_BYTES),
            human(env.options.max_media_bytes)
        ))
        .with_hint(
            "Split it into smaller PDFs, or extract its text with bash if a PDF tool is installed.",
        ));
    }
    let range = match &input.pages {
        Some(spec) => pdf::PageRange::parse(spec)?,
        None => pdf::PageRange::ALL,
    };
    let bytes = env
        .fs
        .read_limited(
            target,
            env.options.max_media_bytes.max(pdf::MAX_TEXT_PDF_BYTES),
        )
        .await
        .map_err(failure)?;
    env.reads.record_read(cx.session(), target, &bytes);
    let data_base64 = attach.then(|| base64::engine::general_purpose::STANDARD.encode(&bytes));
    let text = if size <= pdf::MAX_TEXT_PDF_BYTES {
        pdf::read_text(bytes, &name, range).await?
    } else {
        pdf::PdfText {
            text: format!(
                "Its text was not extracted: at {} it is over the {} read parses for text.",
                human(size),
                human(pdf::MAX_TEXT_PDF_BYTES)
            ),
            first_page: 0,
            last_page: 0,
            total_pages: 0,
            next_page: None,
        }
    };
    let pages = if text.total_pages == 0 {
        String::new()
    } else {
        format!(
            " {} page{},",
            tackle_core::thousands(text.total_pages),
            if text.total_pages == 1 { "" } else { "s" }
        )
    };
    let attached = if attach {
        "The PDF itself is attached as media."
    } else {
        "The PDF itself is not attached: it is over the media limit."
    };
    Ok(ReadOutput {
        output: format!(
            "PDF {name}:{pages} {}. {attached}\n\n{}",
            human(size),
            text.text
        ),
        path: name,
        kind: ReadKind::Pdf,
        first_line: text.first_page,
        last_line: text.last_page,
        total_lines: text.total_pages,
        next_offset: text.next_page,
        instructions: Vec::new(),
        mime_type: attach.then(|| PDF.to_owned()),
        data_base64,
        media: Vec::new(),
    })
}

/// Lines the footer of a read window takes (a blank line and the footer).
const FOOTER_LINES: usize = 2;
/// Bytes kept free for the footer.
const FOOTER_BYTES: usize = 256;

fn not_text(name: &str, error: DecodeError) -> ToolFailure {
    ToolFailure::new(format!("`{name}` is not UTF-8 or UTF-16 text: {error}"))
        .with_hint("It may use a legacy encoding; convert it with bash (iconv) to see it.")
}

/// `message` about a missing `target`, followed by up to three similar names from its directory.
pub(crate) fn missing_with_suggestions(target: &Resolved, mut message: String) -> ToolFailure {
    let suggestions = suggest_siblings(target, 3);
    if !suggestions.is_empty() {
        message.push_str("\n\nDid you mean one of these?");
        for suggestion in suggestions {
            message.push('\n');
            message.push_str(&suggestion);
        }
    }
    ToolFailure::new(message)
}

/// Siblings of a missing path whose names resemble its name, best first.
fn suggest_siblings(target: &Resolved, most: usize) -> Vec<String> {
    let (Some(parent), Some(base)) = (target.path.parent(), target.path.file_name()) else {
        return Vec::new();
    };
    let base = base.to_string_lossy().to_lowercase();
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut scored: Vec<(f64, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let lower = file_name.to_lowercase();
            let score = if lower.contains(&base) || base.contains(&lower) {
                1.0
            } else {
                strsim::normalized_damerau_levenshtein(&lower, &base)
            };
            (score >= 0.6).then_some((score, file_name))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let prefix = match target.display_name().rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/"),
        None => String::new(),
    };
    scored
        .into_iter()
        .take(most)
        .map(|(_, file_name)| format!("{prefix}{file_name}"))
        .collect()
}

async fn list_directory(
    target: &Resolved,
    name: &str,
    input: &ReadInput,
) -> Result<ReadOutput, ToolFailure> {
    let entries = std::fs::read_dir(&target.path)
        .map_err(|e| failure(format!("Could not list `{name}`: {e}.")))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let mut file_name = entry.file_name().to_string_lossy().into_owned();
            // `metadata` follows symlinks, so a link to a directory is marked like one.
            if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
                file_name.push('/');
            }
            file_name
        })
        .collect();
    names.sort();
    let total = names.len();
    let first = input.offset.unwrap_or(0).max(1);
    if total > 0 && first > total {
        return Err(ToolFailure::new(format!(
            "offset {first} is past the end of `{name}` ({total} entries). Use an offset from 1 \
             to {total}."
        )));
    }
    let limit = input.limit.unwrap_or(DEFAULT_READ_LIMIT).max(1);
    let shown: Vec<&String> = names.iter().skip(first - 1).take(limit).collect();
    let last = first - 1 + shown.len();
    let mut output = format!("{}/\n", name.trim_end_matches('/'));
    for entry in &shown {
        output.push_str(entry);
        output.push('\n');
    }
    let next_offset = (last < total).then_some(last + 1);
    match next_offset {
        Some(next) => output.push_str(&format!(
            "\n(Showing entries {first}-{last} of {total}. Use offset={next} to continue.)"
        )),
        None if total == 0 => output.push_str("\n(The directory is empty.)"),
        None => output.push_str(&format!(
            "\n({total} entr{})",
            if total == 1 { "y" } else { "ies" }
        )),
    }
    Ok(ReadOutput {
        output,
        path: name.to_owned(),
        kind: ReadKind::Directory,
        first_line: if shown.is_empty() { 0 } else { first },
        last_line: last,
        total_lines: total,
        next_offset,
        instructions: Vec::new(),
        mime_type: None,
        data_base64: None,
        media: Vec::new(),
    })
}

/// A short name for the kind of a binary file, from its magic bytes.
fn binary_kind(sample: &[u8]) -> &'static str {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x7fELF", "ELF executable"),
        (b"MZ", "Windows executable"),
        (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
        (b"\xca\xfe\xba\xbe", "Mach-O or Java class"),
        (b"PK\x03\x04", "zip archive"),
        (b"\x1f\x8b", "gzip data"),
        (b"\x00asm", "WebAssembly module"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"BM", "BMP image"),
    ];
    MAGIC
        .iter()
        .find(|(magic, _)| sample.starts_with(magic))
        .map_or("binary data", |(_, kind)| kind)
}
