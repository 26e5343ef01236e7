//! HTML to Markdown (through `htmd`) and HTML to visible text (a walk of the parsed tree).
//!
//! A page is untrusted input, and both conversions recurse once per level of element nesting.
//! So the page is parsed with a bound on its depth first ([`super::dom::parse`]), a page nested
//! deeper than [`MAX_DEPTH`] is refused, and the conversion runs on a thread of its own with a
//! [`STACK_BYTES`] stack, far more than [`MAX_DEPTH`] levels need. A panic there is the call's
//! defect, never the end of the process.

use std::rc::Rc;

use markup5ever_rcdom::{Node, NodeData};

/// The deepest element nesting converted. Browsers' own parsers stop nesting at 512 levels.
pub(crate) const MAX_DEPTH: usize = 512;

/// The stack of the conversion thread: [`MAX_DEPTH`] levels took 1 to 2 MiB in a debug build.
const STACK_BYTES: usize = 64 * 1024 * 1024;

/// What a conversion produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Markdown: ATX headings, `-` bullets, fenced code.
    Markdown,
    /// The visible text only.
    Text,
}

/// Why a page could not be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConvertError {
    /// The page nests elements deeper than [`MAX_DEPTH`].
    #[error("the page nests elements more than {MAX_DEPTH} levels deep")]
    TooDeep,
    /// The conversion thread could not be started.
    #[error("the HTML conversion thread could not be started")]
    NoThread,
}

/// Converts `html` on a thread of its own with a known stack. The page is measured before the
/// conversion starts, so no page can overflow that stack. A panic of the converter is resumed
/// in the caller, where settlement reports it as the call's defect.
pub(crate) async fn convert(html: String, target: Target) -> Result<String, ConvertError> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("tackle-html".to_owned())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let converted = std::panic::catch_unwind(|| convert_here(&html, target));
            // The caller may have stopped waiting (a timeout, a cancellation).
            let _ = sender.send(converted);
        })
        .map_err(|_| ConvertError::NoThread)?;
    match receiver.await {
        Ok(Ok(converted)) => converted,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        // The thread ends only by sending; a closed channel means it could not finish.
        Err(_) => Err(ConvertError::NoThread),
    }
}

/// Parses, measures and converts on the current thread, which must have a stack large enough
/// for [`MAX_DEPTH`] levels of the converters.
pub(crate) fn convert_here(html: &str, target: Target) -> Result<String, ConvertError> {
    let tree = super::dom::parse(html, MAX_DEPTH).ok_or(ConvertError::TooDeep)?;
    Ok(match target {
        Target::Markdown => to_markdown(&tree),
        Target::Text => to_text(&tree),
    })
}

/// Elements whose content is never shown: code, styling, embedded documents and metadata.
const HIDDEN: &[&str] = &[
    "script", "style", "noscript", "iframe", "object", "embed", "svg", "template", "meta", "link",
    "head", "canvas",
];

/// Elements that start and end a line of text.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tr",
    "ul",
];

/// The page as Markdown: ATX headings, `-` bullets, fenced code; hidden elements dropped.
fn to_markdown(tree: &Rc<Node>) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(HIDDEN.to_vec())
        .options(htmd::options::Options {
            heading_style: htmd::options::HeadingStyle::Atx,
            code_block_style: htmd::options::CodeBlockStyle::Fenced,
            bullet_list_marker: htmd::options::BulletListMarker::Dash,
            ..Default::default()
        })
        .build();
    converter.tree_to_markdown(tree).trim().to_owned()
}

/// The visible text of the page: hidden elements dropped, whitespace collapsed, one line per
/// block.
fn to_text(tree: &Rc<Node>) -> String {
    let mut out = String::new();
    walk(tree, &mut out, false);
    tidy(&out)
}

fn walk(node: &Rc<Node>, out: &mut String, pre: bool) {
    match &node.data {
        NodeData::Text { contents } => {
            let text = contents.borrow();
            if pre {
                out.push_str(&text);
            } else {
                for (i, word) in text.split_whitespace().enumerate() {
                    let starts_with_space = text.starts_with(char::is_whitespace);
                    if (i > 0 || starts_with_space) && !out.ends_with([' ', '\n']) {
                        out.push(' ');
                    }
                    out.push_str(word);
                }
                if text.ends_with(char::is_whitespace) && !out.ends_with([' ', '\n']) {
                    out.push(' ');
                }
            }
        }
        NodeData::Element { name, .. } => {
            let tag: &str = &name.local;
            if HIDDEN.contains(&tag) {
                return;
            }
            let block = BLOCKS.contains(&tag);
            if block {
                newline(out);
            }
            let pre = pre || tag == "pre";
            for child in node.children.borrow().iter() {
                walk(child, out, pre);
            }
            if block {
                newline(out);
            } else if matches!(tag, "td" | "th") && !out.ends_with([' ', '\n']) {
                out.push(' ');
            }
        }
        NodeData::Document => {
            for child in node.children.borrow().iter() {
                walk(child, out, pre);
            }
        }
        _ => {}
    }
}

fn newline(out: &mut String) {
    while out.ends_with(' ') {
        out.pop();
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// Trims each line and keeps at most one blank line between paragraphs.
fn tidy(text: &str) -> String {
    let mut out = String::new();
    let mut blank = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        out.push_str(line.trim_start());
        out.push('\n');
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn markdown(html: &str) -> String {
        convert_here(html, Target::Markdown).unwrap()
    }

    #[test]
    fn text_drops_hidden_elements_and_keeps_blocks_on_lines() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
                    <script>var x = 1;</script><h1>Title</h1><p>One   <b>two</b>\n three</p>\
                    <noscript>enable js</noscript><ul><li>a</li><li>b</li></ul></body></html>";
        assert_eq!(
            convert_here(html, Target::Text).unwrap(),
            "Title\nOne two three\na\nb"
        );
    }

    #[test]
    fn markdown_uses_atx_headings_and_dash_bullets() {
        let md = markdown("<h1>Title</h1><script>bad()</script><ul><li>a</li></ul>");
        assert!(md.starts_with("# Title"), "{md}");
        assert!(md.contains("- a") || md.contains("-   a"), "{md}");
        assert!(!md.contains("bad()"), "{md}");
    }

    /// `depth` nested `tag` elements around `inner`.
    fn nested(tag: &str, depth: usize, inner: &str) -> String {
        format!(
            "{}{inner}{}",
            format!("<{tag}>").repeat(depth),
            format!("</{tag}>").repeat(depth)
        )
    }

    #[tokio::test]
    async fn a_page_nested_to_the_limit_converts_on_its_own_thread() {
        // The document, `html` and `body` take three levels.
        let html = nested("div", MAX_DEPTH - 4, "deep text");
        for target in [Target::Markdown, Target::Text] {
            let out = convert(html.clone(), target).await.unwrap();
            assert_eq!(out, "deep text");
        }
    }

    #[tokio::test]
    async fn pages_nested_past_the_limit_are_refused_without_recursion() {
        for depth in [MAX_DEPTH, 5_000, 20_000, 100_000] {
            let html = nested("div", depth, "x");
            for target in [Target::Markdown, Target::Text] {
                assert_eq!(
                    convert(html.clone(), target).await,
                    Err(ConvertError::TooDeep),
                    "{depth}"
                );
            }
        }
    }

    /// Tags that nest inside themselves as written, so the tree is as deep as the markup.
    const NESTING: &[&str] = &[
        "div",
        "span",
        "section",
        "blockquote",
        "em",
        "strong",
        "code",
        "pre",
        "li",
        "td",
        "a",
        "h1",
        "table",
        "ul",
        "p",
        "b",
        "template",
        "svg",
        "select",
        "textarea",
    ];

    fn deep() -> bool {
        std::env::var_os("TACKLE_DEEP").is_some()
    }

    /// The deepest page generated: past every limit, deeper still in long runs.
    fn deepest() -> usize {
        if deep() { 200_000 } else { 20_000 }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if deep() { 64 } else { 8 }))]

        /// Any page, however deeply and oddly nested, converts or is refused as too deep; the
        /// process survives, and a page within the limit built from self-nesting blocks keeps
        /// its text.
        #[test]
        fn deep_pages_never_overflow(
            tags in prop::collection::vec(prop::sample::select(NESTING), 1..8),
            depth in prop_oneof![1usize..MAX_DEPTH, MAX_DEPTH..deepest()],
            close in any::<bool>(),
        ) {
            let mut html = String::new();
            for level in 0..depth {
                html.push('<');
                html.push_str(tags[level % tags.len()]);
                html.push('>');
            }
            html.push_str("inner words");
            if close {
                for level in (0..depth).rev() {
                    html.push_str("</");
                    html.push_str(tags[level % tags.len()]);
                    html.push('>');
                }
            }
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            for target in [Target::Markdown, Target::Text] {
                match runtime.block_on(convert(html.clone(), target)) {
                    Ok(_) | Err(ConvertError::TooDeep) => {}
                    Err(other) => prop_assert!(false, "{other}"),
                }
            }
            let blocks = nested("div", depth.min(MAX_DEPTH - 4), "inner words");
            let out = runtime.block_on(convert(blocks, Target::Text));
            prop_assert_eq!(out, Ok("inner words".to_owned()));
        }
    }
}
