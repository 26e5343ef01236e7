//! HTML to Markdown (through `htmd`) and HTML to visible text (a walk of the parsed tree).

use std::rc::Rc;

use markup5ever_rcdom::{Node, NodeData};

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
pub(crate) fn to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(HIDDEN.to_vec())
        .options(htmd::options::Options {
            heading_style: htmd::options::HeadingStyle::Atx,
            code_block_style: htmd::options::CodeBlockStyle::Fenced,
            bullet_list_marker: htmd::options::BulletListMarker::Dash,
            ..Default::default()
        })
        .build();
    match converter.convert(html) {
        Ok(markdown) => markdown.trim().to_owned(),
        // Conversion works on an in-memory string and does not fail in practice; fall back to
        // the visible text rather than losing the page.
        Err(_) => to_text(html),
    }
}

/// The visible text of the page: hidden elements dropped, whitespace collapsed, one line per
/// block.
pub(crate) fn to_text(html: &str) -> String {
    let Ok(tree) = htmd::HtmlToMarkdown::new().html_to_tree(html) else {
        return String::new();
    };
    let mut out = String::new();
    walk(&tree, &mut out, false);
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
    use super::*;

    #[test]
    fn text_drops_hidden_elements_and_keeps_blocks_on_lines() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
                    <script>var x = 1;</script><h1>Title</h1><p>One   <b>two</b>\n three</p>\
                    <noscript>enable js</noscript><ul><li>a</li><li>b</li></ul></body></html>";
        assert_eq!(to_text(html), "Title\nOne two three\na\nb");
    }

    #[test]
    fn markdown_uses_atx_headings_and_dash_bullets() {
        let html = "<h1>Title</h1><script>bad()</script><ul><li>a</li></ul>";
        let md = to_markdown(html);
        assert!(md.starts_with("# Title"), "{md}");
        assert!(md.contains("- a") || md.contains("-   a"), "{md}");
        assert!(!md.contains("bad()"), "{md}");
    }
}
