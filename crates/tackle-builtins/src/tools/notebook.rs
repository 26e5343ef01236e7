//! Jupyter notebooks: what `read` shows of one (its cells in order, with their outputs, images
//! as media) and the one-cell edits of `notebook_edit`, made on the file's own JSON text.

use serde_json::Value;
use tackle_core::{Direction, OutputLimits, bound_text, thousands};

use crate::text::{MAX_LINE_CHARS, MAX_READ_BYTES, format_row};

pub(crate) mod edit;
mod spans;

/// Bytes of one read's notebook text, footer excluded.
const WINDOW_BYTES: usize = MAX_READ_BYTES - 512;
/// Lines of one read's notebook text, footer excluded.
const WINDOW_LINES: usize = OutputLimits::DEFAULT_MAX_LINES - 4;
/// How much of a cell's source a read of several cells shows.
const SOURCE_CAP: Cap = Cap {
    lines: 400,
    bytes: 16 * 1024,
};
/// How much of one output a read of several cells shows.
const OUTPUT_CAP: Cap = Cap {
    lines: 100,
    bytes: 8 * 1024,
};
/// The least a read of one cell gives each of its outputs.
const OUTPUT_FLOOR: Cap = Cap {
    lines: 20,
    bytes: 1024,
};
/// Images one read attaches.
pub(crate) const MAX_IMAGES: usize = 8;
/// Image types attached as media.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

#[derive(Clone, Copy, Debug)]
struct Cap {
    lines: usize,
    bytes: usize,
}

/// An image output, attached to the result as media.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Image {
    pub(crate) mime_type: String,
    pub(crate) data_base64: String,
}

/// One page of a rendered notebook.
#[derive(Debug)]
pub(crate) struct Rendered {
    /// What the model reads, footer included.
    pub(crate) text: String,
    /// The first cell shown (0-based).
    pub(crate) first_cell: usize,
    /// The last cell shown (0-based).
    pub(crate) last_cell: usize,
    /// Cells in the notebook.
    pub(crate) total_cells: usize,
    /// The offset that continues, when cells are left.
    pub(crate) next_offset: Option<usize>,
    /// The image outputs of the cells shown, in order.
    pub(crate) images: Vec<Image>,
}

/// Why a notebook could not be shown as cells.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotebookError {
    /// The text is not JSON, or not a notebook's.
    #[error("{0}")]
    Malformed(String),
    /// The offset is past the last cell.
    #[error("offset {offset} is past the last cell of `{name}`, which has {total} cells (0-{last}). Use an offset from 0 to {last}.", last = total.saturating_sub(1))]
    OffsetPastEnd {
        offset: usize,
        total: usize,
        name: String,
    },
}

/// The cells of the notebook `text`, checked to be a notebook.
pub(crate) fn parse(text: &str) -> Result<Value, NotebookError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| NotebookError::Malformed(format!("it is not valid JSON ({e})")))?;
    match value.get("cells") {
        Some(Value::Array(cells)) if cells.iter().all(Value::is_object) => Ok(value),
        _ => Err(NotebookError::Malformed(
            "it has no `cells` array of objects, so it is not a Jupyter notebook".to_owned(),
        )),
    }
}

/// The cells of a parsed notebook.
pub(crate) fn cells(notebook: &Value) -> &[Value] {
    notebook["cells"].as_array().map_or(&[], Vec::as_slice)
}

/// The notebook `notebook` (named `name`) from cell `offset` on: at most `limit` cells, within
/// one read's bound. A read of one cell (`limit` 1) gives that cell's outputs the whole bound.
pub(crate) fn render(
    notebook: &Value,
    name: &str,
    offset: usize,
    limit: Option<usize>,
) -> Result<Rendered, NotebookError> {
    let cells = cells(notebook);
    let total = cells.len();
    if total > 0 && offset >= total {
        return Err(NotebookError::OffsetPastEnd {
            offset,
            total,
            name: name.to_owned(),
        });
    }
    let single = limit == Some(1);
    let limit = limit.unwrap_or(usize::MAX).max(1);
    let mut text = summary(notebook, name);
    let mut images = Vec::new();
    let mut last = offset;
    for (shown, (index, cell)) in cells.iter().enumerate().skip(offset).enumerate() {
        if shown == limit {
            break;
        }
        let mut cell_images = Vec::new();
        let mut rendered = render_cell(cell, index, single, &mut cell_images, images.len());
        let fits = text.len() + rendered.len() <= WINDOW_BYTES
            && tackle_core::count_lines(&text) + tackle_core::count_lines(&rendered)
                <= WINDOW_LINES;
        if !fits && shown > 0 {
            break;
        }
        if !fits {
            // One cell alone over the bound: its middle gives way.
            let limits = OutputLimits {
                max_lines: WINDOW_LINES.saturating_sub(tackle_core::count_lines(&text)),
                max_bytes: WINDOW_BYTES.saturating_sub(text.len()),
                direction: Direction::HeadTail,
                ..OutputLimits::default()
            };
            if let Some(cut) = bound_text(&rendered, &limits, |o| {
                format!(
                    "[... {} of {} lines ({} of {} bytes) of cell {index} omitted, from line {}. \
                     The rest is in the notebook's JSON at cells[{index}]; search it with grep.]",
                    thousands(o.lines),
                    thousands(o.total_lines),
                    thousands(o.bytes),
                    thousands(o.total_bytes),
                    thousands(o.head_lines + 1),
                )
            }) {
                rendered = cut;
            }
        }
        text.push_str(&rendered);
        images.append(&mut cell_images);
        last = index;
    }
    let next_offset = (total > 0 && last + 1 < total).then_some(last + 1);
    // Every cell ends with a blank line, and so does the summary.
    text.push_str(&match (total, next_offset) {
        (0, _) => "(The notebook has no cells.)".to_owned(),
        (_, Some(next)) => format!(
            "(Showing cells {offset}-{last} of the notebook's {total} cells, 0-{}. Use offset={next} \
             to continue.)",
            total - 1
        ),
        (_, None) => format!("(End of notebook: {total} cell{}.)", plural(total)),
    });
    Ok(Rendered {
        text,
        first_cell: offset,
        last_cell: if total == 0 { 0 } else { last },
        total_cells: total,
        next_offset,
        images,
    })
}

/// The notebook's first line: its name, cell counts and language.
fn summary(notebook: &Value, name: &str) -> String {
    let cells = cells(notebook);
    let count = |kind: &str| {
        cells
            .iter()
            .filter(|cell| cell["cell_type"].as_str() == Some(kind))
            .count()
    };
    let language = notebook["metadata"]["language_info"]["name"]
        .as_str()
        .or_else(|| notebook["metadata"]["kernelspec"]["language"].as_str());
    let mut line = format!(
        "Jupyter notebook {name}: {} cell{} ({} code, {} markdown, {} raw)",
        thousands(cells.len()),
        plural(cells.len()),
        count("code"),
        count("markdown"),
        count("raw"),
    );
    if let Some(language) = language {
        line.push_str(&format!(", language {language}"));
    }
    line.push_str(".\n\n");
    line
}

/// One cell: a header line, the numbered source, then each output.
fn render_cell(
    cell: &Value,
    index: usize,
    single: bool,
    images: &mut Vec<Image>,
    attached_before: usize,
) -> String {
    let kind = cell["cell_type"].as_str().unwrap_or("unknown");
    let mut out = format!("Cell {index} · {kind}");
    if let Some(id) = cell["id"].as_str() {
        out.push_str(&format!(" · id {id}"));
    }
    if let Some(count) = cell["execution_count"].as_u64() {
        out.push_str(&format!(" · execution_count {count}"));
    }
    out.push('\n');
    let source = joined(&cell["source"]);
    if source.is_empty() {
        out.push_str("(empty source)\n");
    } else {
        let numbered: String = source
            .split('\n')
            .enumerate()
            .map(|(i, line)| format_row(i + 1, line, MAX_LINE_CHARS))
            .collect();
        let cap = if single {
            Cap {
                lines: WINDOW_LINES / 2,
                bytes: WINDOW_BYTES / 2,
            }
        } else {
            SOURCE_CAP
        };
        out.push_str(&capped(&numbered, cap, |o| {
            format!(
                "[... {} of {} source lines ({} of {} bytes) omitted, from line {}. {}]",
                thousands(o.lines),
                thousands(o.total_lines),
                thousands(o.bytes),
                thousands(o.total_bytes),
                thousands(o.head_lines + 1),
                more_hint(index, single, "source"),
            )
        }));
    }
    let outputs = cell["outputs"].as_array().map_or(&[][..], Vec::as_slice);
    for (number, output) in outputs.iter().enumerate() {
        let (label, body, image) = describe_output(output);
        out.push_str(&format!("Output {number} · {label}"));
        if let Some(image) = image {
            if attached_before + images.len() < MAX_IMAGES {
                images.push(image);
                out.push_str(&format!(
                    " · attached as media part {}",
                    attached_before + images.len()
                ));
            } else {
                out.push_str(&format!(
                    " · not attached: this read already attached {MAX_IMAGES} images (read from \
                     cell {index} to see it)"
                ));
            }
        }
        out.push('\n');
        if body.is_empty() {
            continue;
        }
        let cap = if single {
            Cap {
                lines: WINDOW_LINES
                    .saturating_sub(tackle_core::count_lines(&out))
                    .max(OUTPUT_FLOOR.lines),
                bytes: WINDOW_BYTES
                    .saturating_sub(out.len())
                    .max(OUTPUT_FLOOR.bytes),
            }
        } else {
            OUTPUT_CAP
        };
        out.push_str(&capped(&body, cap, |o| {
            format!(
                "[... {} of {} lines ({} of {} bytes) of output {number} omitted, from line {}. \
                 {}]",
                thousands(o.lines),
                thousands(o.total_lines),
                thousands(o.bytes),
                thousands(o.total_bytes),
                thousands(o.head_lines + 1),
                more_hint(index, single, &format!("outputs[{number}]")),
            )
        }));
    }
    out.push('\n');
    out
}

/// How to see the rest of a cut part of cell `index`.
fn more_hint(index: usize, single: bool, part: &str) -> String {
    if single {
        format!(
            "The full text is in the notebook's JSON at cells[{index}].{part}; search it with grep."
        )
    } else {
        format!("Read this cell alone (offset={index}, limit=1) to see more of it.")
    }
}

/// `text` (ending with a newline) within `cap`, its middle replaced by a marker when over.
fn capped(text: &str, cap: Cap, marker: impl Fn(&tackle_core::Omitted) -> String) -> String {
    let limits = OutputLimits {
        max_lines: cap.lines,
        max_bytes: cap.bytes,
        direction: Direction::HeadTail,
        ..OutputLimits::default()
    };
    let mut text = bound_text(text, &limits, marker).unwrap_or_else(|| text.to_owned());
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// An output's label, its text (ANSI codes and overwritten progress removed) and its image.
fn describe_output(output: &Value) -> (String, String, Option<Image>) {
    let kind = output["output_type"].as_str().unwrap_or("unknown");
    match kind {
        "stream" => {
            let stream = output["name"].as_str().unwrap_or("stream");
            (stream.to_owned(), clean(&joined(&output["text"])), None)
        }
        "error" => {
            let ename = output["ename"].as_str().unwrap_or("Error");
            let evalue = output["evalue"].as_str().unwrap_or("");
            let traceback: Vec<String> = output["traceback"]
                .as_array()
                .map(|lines| {
                    lines
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let body = if traceback.is_empty() {
                format!("{ename}: {evalue}")
            } else {
                clean(&traceback.join("\n"))
            };
            (format!("error {ename}"), body, None)
        }
        "execute_result" | "display_data" => {
            let data = &output["data"];
            let image = IMAGE_TYPES.iter().find_map(|mime| {
                let payload: String = joined(&data[*mime])
                    .chars()
                    .filter(|c| !c.is_ascii_whitespace())
                    .collect();
                (!payload.is_empty()).then(|| Image {
                    mime_type: (*mime).to_owned(),
                    data_base64: payload,
                })
            });
            let label = match &image {
                Some(image) => format!("{kind} {}", image.mime_type),
                None => kind.to_owned(),
            };
            let text = ["text/plain", "text/markdown", "text/latex"]
                .iter()
                .map(|mime| joined(&data[*mime]))
                .find(|text| !text.is_empty());
            let body = match text {
                Some(text) => clean(&text),
                None if image.is_some() => String::new(),
                None => {
                    let kinds: Vec<&str> = data
                        .as_object()
                        .map(|d| d.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    format!("({} only; not shown as text)", kinds.join(", "))
                }
            };
            (label, body, image)
        }
        other => (other.to_owned(), String::new(), None),
    }
}

/// A notebook text field: a string, or a list of strings to concatenate.
pub(crate) fn joined(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// Terminal output as the terminal showed it: ANSI escape sequences removed, and of a line
/// rewritten with carriage returns (a progress bar) only its last state. No trailing newline.
pub(crate) fn clean(text: &str) -> String {
    let stripped = strip_ansi(text);
    let mut out = String::with_capacity(stripped.len());
    for (i, line) in stripped.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(line.rsplit('\r').next().unwrap_or(line));
    }
    out.truncate(out.trim_end().len());
    out
}

/// `text` without ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL or ESC \`, and
/// two-byte escapes).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests;
