//! Where each member and element of a JSON text lies, so a cell can be replaced, inserted or
//! removed in the file's own text: every byte outside the edited cell stays as it was.
//!
//! The scanner is only ever given text `serde_json` has already parsed, so it checks little;
//! on anything unexpected it returns `None` rather than panicking. It never recurses.

use std::ops::Range;

/// One member of an object: its key and the byte span of its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Member {
    /// The key, unescaped only as far as keys of notebooks need (no escapes expected).
    pub(super) key: String,
    /// Where the key's opening quote starts.
    pub(super) key_start: usize,
    /// The value.
    pub(super) value: Range<usize>,
}

/// The index of the first byte at or after `at` that is not JSON whitespace.
pub(super) fn skip_ws(text: &[u8], mut at: usize) -> usize {
    while at < text.len() && matches!(text[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// The end (exclusive) of the value starting at `start`.
pub(super) fn value_end(text: &[u8], start: usize) -> Option<usize> {
    match *text.get(start)? {
        b'"' => string_end(text, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = start;
            while at < text.len() {
                match text[at] {
                    b'"' => {
                        at = string_end(text, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
            None
        }
        _ => {
            let mut at = start;
            while at < text.len()
                && !matches!(text[at], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                at += 1;
            }
            (at > start).then_some(at)
        }
    }
}

/// The end (exclusive) of the string whose opening quote is at `start`.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while at < text.len() {
        match text[at] {
            b'\\' => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
    None
}

/// The members of the object spanning `span` (braces included), in the file's order.
pub(super) fn members(text: &[u8], span: Range<usize>) -> Option<Vec<Member>> {
    if text.get(span.start) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    let mut at = skip_ws(text, span.start + 1);
    if text.get(at) == Some(&b'}') {
        return Some(out);
    }
    loop {
        let key_start = at;
        let key_end = string_end(text, key_start)?;
        let key = serde_json::from_slice::<String>(&text[key_start..key_end]).ok()?;
        at = skip_ws(text, key_end);
        if text.get(at) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(text, at + 1);
        let end = value_end(text, value_start)?;
        out.push(Member {
            key,
            key_start,
            value: value_start..end,
        });
        at = skip_ws(text, end);
        match text.get(at)? {
            b',' => at = skip_ws(text, at + 1),
            b'}' if at + 1 == span.end => return Some(out),
            _ => return None,
        }
    }
}

/// The elements of the array spanning `span` (brackets included), in order.
pub(super) fn elements(text: &[u8], span: Range<usize>) -> Option<Vec<Range<usize>>> {
    if text.get(span.start) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut at = skip_ws(text, span.start + 1);
    if text.get(at) == Some(&b']') {
        return Some(out);
    }
    loop {
        let end = value_end(text, at)?;
        out.push(at..end);
        at = skip_ws(text, end);
        match text.get(at)? {
            b',' => at = skip_ws(text, at + 1),
            b']' if at + 1 == span.end => return Some(out),
            _ => return None,
        }
    }
}

/// The whitespace that starts the line `at` is on, when only whitespace precedes `at` on it;
/// `None` when `at` shares its line with other text (compact JSON).
pub(super) fn line_indent(text: &[u8], at: usize) -> Option<&str> {
    let line_start = text[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let indent = &text[line_start..at];
    if indent.iter().all(|&b| b == b' ' || b == b'\t') && text[..at].contains(&b'\n') {
        std::str::from_utf8(indent).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_and_elements_are_found_with_strings_that_hold_brackets() {
        let text = br#"{ "a": [1, "]}\"", {"b": null}], "c" : "x" }"#;
        let found = members(text, 0..text.len()).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].key, "a");
        let array = found[0].value.clone();
        assert_eq!(&text[array.clone()], br#"[1, "]}\"", {"b": null}]"#);
        let items = elements(text, array).unwrap();
        let items: Vec<&[u8]> = items.into_iter().map(|r| &text[r]).collect();
        assert_eq!(items, [&b"1"[..], br#""]}\"""#, br#"{"b": null}"#]);
        assert_eq!(&text[found[1].value.clone()], br#""x""#);
    }

    #[test]
    fn empty_containers_have_no_members() {
        assert_eq!(members(b"{ }", 0..3).unwrap(), Vec::new());
        assert_eq!(elements(b"[]", 0..2).unwrap(), Vec::<Range<usize>>::new());
    }

    #[test]
    fn line_indent_is_none_for_compact_text() {
        let text = b"{\n  \"a\": 1}";
        assert_eq!(line_indent(text, 4), Some("  "));
        assert_eq!(line_indent(b"{\"a\": 1}", 1), None);
    }
}
