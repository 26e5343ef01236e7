//! The text of a PDF, page by page, for `read`: `pdf-extract` (pure Rust, over `lopdf`) on a
//! thread of its own, bounded in input size, time and stack, with its panics caught, so a
//! hostile or broken PDF costs one failed call and never the process.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pdf_extract::{Document, PlainTextOutput, output_doc_page};
use tackle_core::{Direction, OutputLimits, ToolFailure, bound_text, thousands};

use crate::text::MAX_READ_BYTES;

/// Pages one read returns at most.
pub(crate) const MAX_PAGES_PER_READ: usize = 20;
/// PDFs larger than this are not parsed for text: parsing holds the whole document in memory.
pub(crate) const MAX_TEXT_PDF_BYTES: u64 = 32 * 1024 * 1024;
/// How long extraction may take before the call gives up on it.
const EXTRACT_TIMEOUT: Duration = Duration::from_secs(20);
/// The extractor's stack: deep object nesting recurses.
const EXTRACT_STACK_BYTES: usize = 64 * 1024 * 1024;
/// Bytes of page text one read returns, markers included.
const WINDOW_BYTES: usize = MAX_READ_BYTES - 1024;
/// Lines of page text one read returns, markers included.
const WINDOW_LINES: usize = OutputLimits::DEFAULT_MAX_LINES - 8;

/// Pages asked for: `first` to `last` (1-based, inclusive); `last` absent means to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageRange {
    pub(crate) first: usize,
    pub(crate) last: Option<usize>,
}

impl PageRange {
    /// Every page.
    pub(crate) const ALL: Self = Self {
        first: 1,
        last: None,
    };

    /// Parses `3`, `3-5` or `3-`.
    pub(crate) fn parse(spec: &str) -> Result<Self, ToolFailure> {
        let bad = || {
            ToolFailure::new(format!(
                "pages `{spec}` is not a page range. Give one page (`3`), a range (`3-5`) or a \
                 start (`3-`); pages count from 1."
            ))
        };
        let number = |text: &str| text.trim().parse::<usize>().ok().filter(|n| *n >= 1);
        let range = match spec.split_once('-') {
            None => {
                let page = number(spec).ok_or_else(bad)?;
                Self {
                    first: page,
                    last: Some(page),
                }
            }
            Some((first, last)) => Self {
                first: number(first).ok_or_else(bad)?,
                last: if last.trim().is_empty() {
                    None
                } else {
                    Some(number(last).ok_or_else(bad)?)
                },
            },
        };
        if range.last.is_some_and(|last| last < range.first) {
            return Err(bad());
        }
        Ok(range)
    }
}

/// Text of some pages of a PDF.
#[derive(Debug)]
pub(crate) struct PdfText {
    /// The pages' text with `--- page N ---` markers and a footer.
    pub(crate) text: String,
    pub(crate) first_page: usize,
    pub(crate) last_page: usize,
    pub(crate) total_pages: usize,
    /// The first page not shown, when pages of the range were left for another call.
    pub(crate) next_page: Option<usize>,
}

/// What extraction produced, before it is laid out.
struct Extracted {
    total_pages: usize,
    /// Page number and text (`None` when the extractor failed on that page).
    pages: Vec<(usize, Option<String>)>,
    /// Extraction stopped at the time limit after these pages.
    timed_out: bool,
}

/// The text of `range` of the PDF `bytes` (named `name`), within one read's bound.
pub(crate) async fn read_text(
    bytes: Vec<u8>,
    name: &str,
    range: PageRange,
) -> Result<PdfText, ToolFailure> {
    let stop = Arc::new(AtomicBool::new(false));
    let (send, receive) = tokio::sync::oneshot::channel();
    let worker_stop = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("tackle-pdf".to_owned())
        .stack_size(EXTRACT_STACK_BYTES)
        .spawn(move || {
            let result = catch_unwind(AssertUnwindSafe(|| extract(&bytes, range, &worker_stop)));
            let _ = send.send(result);
        });
    if spawned.is_err() {
        return Err(ToolFailure::new(format!(
            "The text of `{name}` could not be read: no thread could be started for it."
        )));
    }
    let outcome = tokio::time::timeout(EXTRACT_TIMEOUT + Duration::from_secs(5), receive).await;
    // Whatever happened, the worker stops at its next page.
    stop.store(true, Ordering::Relaxed);
    let extracted = match outcome {
        Err(_) => {
            return Err(ToolFailure::new(format!(
                "Reading the text of `{name}` took over {} s, so it was stopped. The PDF is too \
                 complex or malformed for the text extractor.",
                EXTRACT_TIMEOUT.as_secs() + 5
            ))
            .with_hint("Ask for fewer pages with `pages`, or convert it with bash if a PDF tool is installed."));
        }
        Ok(Err(_)) | Ok(Ok(Err(_))) => {
            return Err(ToolFailure::new(format!(
                "The text of `{name}` could not be read: the PDF is malformed in a way the text \
                 extractor cannot handle."
            )));
        }
        Ok(Ok(Ok(result))) => result.map_err(|why| {
            ToolFailure::new(format!("The text of `{name}` could not be read: {why}."))
        })?,
    };
    lay_out(extracted, name, range)
}

/// Runs on the worker thread: parse, then each page of `range` until `stop` or the deadline.
fn extract(bytes: &[u8], range: PageRange, stop: &AtomicBool) -> Result<Extracted, String> {
    let started = Instant::now();
    let mut document =
        Document::load_mem(bytes).map_err(|e| format!("it is not a readable PDF ({e})"))?;
    if document.is_encrypted() && document.decrypt("").is_err() {
        return Err("it is encrypted with a password".to_owned());
    }
    let numbers: Vec<u32> = document.get_pages().keys().copied().collect();
    let total_pages = numbers.len();
    let mut pages = Vec::new();
    let mut timed_out = false;
    let last = range.last.unwrap_or(total_pages).min(total_pages);
    for (index, number) in numbers.iter().enumerate() {
        let page = index + 1;
        if page < range.first || page > last || pages.len() == MAX_PAGES_PER_READ {
            continue;
        }
        if stop.load(Ordering::Relaxed) || started.elapsed() > EXTRACT_TIMEOUT {
            timed_out = true;
            break;
        }
        let text = catch_unwind(AssertUnwindSafe(|| {
            let mut text = String::new();
            output_doc_page(&document, &mut PlainTextOutput::new(&mut text), *number)
                .ok()
                .map(|()| text)
        }))
        .ok()
        .flatten();
        pages.push((page, text));
    }
    Ok(Extracted {
        total_pages,
        pages,
        timed_out,
    })
}

/// The pages' text with markers, as much as one read holds, and a footer saying what is left.
fn lay_out(extracted: Extracted, name: &str, range: PageRange) -> Result<PdfText, ToolFailure> {
    let total = extracted.total_pages;
    let mut text = String::new();
    if total == 0 {
        text.push_str(&format!("`{name}` has no pages."));
        return Ok(PdfText {
            text,
            first_page: 0,
            last_page: 0,
            total_pages: 0,
            next_page: None,
        });
    }
    if range.first > total {
        return Err(ToolFailure::new(format!(
            "pages starts at {} but `{name}` has {} page{}. Give pages within 1-{total}.",
            range.first,
            thousands(total),
            if total == 1 { "" } else { "s" }
        )));
    }
    if extracted.pages.is_empty() {
        return Err(ToolFailure::new(format!(
            "Reading the text of `{name}` took over {} s, so it was stopped before its first \
             page. The PDF is too complex or malformed for the text extractor.",
            EXTRACT_TIMEOUT.as_secs()
        )));
    }
    let mut last_shown = 0;
    let mut empty = Vec::new();
    for (page, page_text) in &extracted.pages {
        let body = match page_text {
            None => "(The text extractor failed on this page.)".to_owned(),
            Some(t) if t.trim().is_empty() => {
                empty.push(*page);
                "(No text on this page.)".to_owned()
            }
            Some(t) => t.trim().to_owned(),
        };
        let mut block = format!("--- page {page} ---\n{body}\n");
        let over = text.len() + block.len() > WINDOW_BYTES
            || tackle_core::count_lines(&text) + tackle_core::count_lines(&block) > WINDOW_LINES;
        if over && last_shown > 0 {
            break;
        }
        if over {
            let limits = OutputLimits {
                max_lines: WINDOW_LINES,
                max_bytes: WINDOW_BYTES,
                direction: Direction::Head,
                ..OutputLimits::default()
            };
            if let Some(cut) = bound_text(&block, &limits, |o| {
                format!(
                    "[... {} of {} lines ({} of {} bytes) of page {page} omitted, from line {}: \
                     one page holds more text than one read returns.]",
                    thousands(o.lines),
                    thousands(o.total_lines),
                    thousands(o.bytes),
                    thousands(o.total_bytes),
                    thousands(o.head_lines + 1),
                )
            }) {
                block = cut;
                block.push('\n');
            }
        }
        text.push_str(&block);
        last_shown = *page;
    }
    let wanted_last = range.last.unwrap_or(total).min(total);
    let next_page = (last_shown < wanted_last).then_some(last_shown + 1);
    let shown = last_shown + 1 - range.first;
    if shown > 0 && empty.len() == shown {
        text.push_str(&format!(
            "\nNo text layer was found on {}: the PDF is probably scanned, or its text is drawn \
             as images. Its text cannot be extracted here; the PDF itself is attached for a \
             model that reads documents.\n",
            if shown == 1 {
                format!("page {}", range.first)
            } else {
                format!("pages {}-{last_shown}", range.first)
            }
        ));
    }
    text.push('\n');
    text.push_str(&match next_page {
        Some(next) => {
            let why = if extracted.timed_out {
                format!("extraction stopped after {} s", EXTRACT_TIMEOUT.as_secs())
            } else if shown == MAX_PAGES_PER_READ {
                format!("one read returns at most {MAX_PAGES_PER_READ} pages")
            } else {
                "one read returns at most 50 KiB of text".to_owned()
            };
            format!(
                "(Showing pages {}-{last_shown} of {} ({why}). Use pages=\"{next}-{}\" to \
                 continue.)",
                range.first,
                thousands(total),
                wanted_last.min(next + MAX_PAGES_PER_READ - 1)
            )
        }
        None if range.first == 1 && last_shown == total => {
            format!(
                "(End of PDF: {} page{}.)",
                thousands(total),
                if total == 1 { "" } else { "s" }
            )
        }
        None => format!(
            "(Showing pages {}-{last_shown} of {}.)",
            range.first,
            thousands(total)
        ),
    });
    Ok(PdfText {
        text,
        first_page: range.first,
        last_page: last_shown,
        total_pages: total,
        next_page,
    })
}

#[cfg(test)]
mod tests;
