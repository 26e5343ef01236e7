//! The rungs of the matching ladder: each turns `old` into candidate byte spans of the content.

use super::Strategy;

/// The content, split into lines once.
pub(super) struct Doc<'a> {
    pub(super) text: &'a str,
    starts: Vec<usize>,
    pub(super) lines: Vec<&'a str>,
    trimmed: Vec<&'a str>,
}

impl<'a> Doc<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let mut starts = Vec::new();
        let mut lines = Vec::new();
        let mut at = 0;
        for line in text.split('\n') {
            starts.push(at);
            lines.push(line);
            at += line.len() + 1;
        }
        let trimmed = lines.iter().map(|l| l.trim()).collect();
        Doc {
            text,
            starts,
            lines,
            trimmed,
        }
    }

    /// The byte span of lines `first..first + count`, plus the newline after them if asked.
    fn span(&self, first: usize, count: usize, newline: bool) -> (usize, usize) {
        let last = first + count - 1;
        let mut end = self.starts[last] + self.lines[last].len();
        if newline && end < self.text.len() {
            end += 1;
        }
        (self.starts[first], end)
    }
}

/// `old`, split into lines once (a trailing newline does not make an extra line).
pub(super) struct Query<'a> {
    pub(super) text: &'a str,
    lines: Vec<&'a str>,
    trimmed: Vec<&'a str>,
    newline: bool,
    /// The common leading whitespace of `old`'s non-blank lines.
    pub(super) indent: &'a str,
}

impl<'a> Query<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let newline = text.ends_with('\n');
        let body = if newline {
            &text[..text.len() - 1]
        } else {
            text
        };
        let lines: Vec<&str> = body.split('\n').collect();
        let trimmed = lines.iter().map(|l| l.trim()).collect();
        Query {
            text,
            indent: common_indent(lines.iter().copied()),
            lines,
            trimmed,
            newline,
        }
    }
}

/// A span of the content that a rung proposes to replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Candidate {
    pub(super) start: usize,
    pub(super) end: usize,
    /// The span is a run of whole lines (so `new` may be re-indented to fit).
    pub(super) whole_lines: bool,
}

/// Every occurrence of `needle`, overlapping ones included.
pub(super) fn exact(hay: &str, needle: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = hay[from..].find(needle) {
        let start = from + p;
        out.push(Candidate {
            start,
            end: start + needle.len(),
            whole_lines: false,
        });
        // Advance one character, not the needle's length, so overlaps count.
        from = start + hay[start..].chars().next().map_or(1, char::len_utf8);
        if from >= hay.len() {
            break;
        }
    }
    out
}

/// The candidates of one tolerant rung.
pub(super) fn find(strategy: Strategy, doc: &Doc<'_>, q: &Query<'_>) -> Vec<Candidate> {
    match strategy {
        Strategy::IndentationFlexible => indentation_flexible(doc, q),
        Strategy::LineTrimmed => windows(doc, q, |w| {
            w.iter().zip(&q.lines).all(|(a, b)| a.trim() == b.trim())
        }),
        Strategy::WhitespaceNormalized => whitespace_normalized(doc, q),
        Strategy::TrimmedBoundary => {
            let t = q.text.trim();
            if t.len() == q.text.len() {
                Vec::new()
            } else {
                exact(doc.text, t)
            }
        }
        Strategy::EscapeNormalized => {
            let u = unescape(q.text);
            if u == q.text || u.trim().is_empty() {
                Vec::new()
            } else {
                exact(doc.text, &u)
            }
        }
        Strategy::ContextAware => context_aware(doc, q),
        Strategy::BlockAnchor => block_anchor(doc, q),
        Strategy::Simple | Strategy::MultiOccurrence => exact(doc.text, q.text),
    }
}

/// Windows of exactly `old`'s line count whose first trimmed line matches and that pass `ok`.
fn windows(doc: &Doc<'_>, q: &Query<'_>, ok: impl Fn(&[&str]) -> bool) -> Vec<Candidate> {
    let m = q.lines.len();
    if m > doc.lines.len() {
        return Vec::new();
    }
    (0..=doc.lines.len() - m)
        .filter(|&i| doc.trimmed[i] == q.trimmed[0] && ok(&doc.lines[i..i + m]))
        .map(|i| window(doc, q, i, m))
        .collect()
}

fn window(doc: &Doc<'_>, q: &Query<'_>, first: usize, count: usize) -> Candidate {
    let (start, end) = doc.span(first, count, q.newline);
    Candidate {
        start,
        end,
        whole_lines: true,
    }
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// The longest leading-whitespace prefix shared by every non-blank line.
pub(super) fn common_indent<'a>(lines: impl Iterator<Item = &'a str>) -> &'a str {
    let mut best: Option<&str> = None;
    for line in lines.filter(|l| !is_blank(l)) {
        let ws = &line[..line.len() - line.trim_start().len()];
        best = Some(match best {
            None => ws,
            Some(b) => {
                let n = b
                    .bytes()
                    .zip(ws.bytes())
                    .take_while(|(x, y)| x == y)
                    .count();
                &b[..n]
            }
        });
    }
    best.unwrap_or("")
}

fn dedented<'a>(lines: &[&'a str]) -> impl Iterator<Item = &'a str> + 'a {
    let cut = common_indent(lines.iter().copied()).len();
    let lines = lines.to_vec();
    lines
        .into_iter()
        .map(move |l| if is_blank(l) { "" } else { l[cut..].trim_end() })
}

fn indentation_flexible(doc: &Doc<'_>, q: &Query<'_>) -> Vec<Candidate> {
    let want: Vec<&str> = dedented(&q.lines).collect();
    windows(doc, q, |w| dedented(w).eq(want.iter().copied()))
}

fn whitespace_normalized(doc: &Doc<'_>, q: &Query<'_>) -> Vec<Candidate> {
    if q.lines.len() > 1 {
        let m = q.lines.len();
        if m > doc.lines.len() {
            return Vec::new();
        }
        // Cheap necessary condition first: the first line's first word.
        let head = q.lines[0].split_whitespace().next().unwrap_or("");
        return (0..=doc.lines.len() - m)
            .filter(|&i| {
                doc.trimmed[i].starts_with(head)
                    && doc.lines[i..i + m]
                        .iter()
                        .zip(&q.lines)
                        .all(|(a, b)| a.split_whitespace().eq(b.split_whitespace()))
            })
            .map(|i| window(doc, q, i, m))
            .collect();
    }
    // One line: a span inside a line, whitespace runs matching any whitespace run.
    let tokens: Vec<&str> = q.text.split_whitespace().collect();
    if tokens.len() < 2 {
        return Vec::new(); // nothing inner to normalize; the trimmed-boundary rung covers it
    }
    let mut out = Vec::new();
    for (i, line) in doc.lines.iter().enumerate() {
        let mut from = 0;
        while let Some(p) = line[from..].find(tokens[0]) {
            let s = from + p;
            match tokens_at(line, s, &tokens) {
                Some(e) => {
                    let base = doc.starts[i];
                    out.push(Candidate {
                        start: base + s,
                        end: base + e,
                        whole_lines: false,
                    });
                    from = e;
                }
                None => from = s + line[s..].chars().next().map_or(1, char::len_utf8),
            }
            if from >= line.len() {
                break;
            }
        }
    }
    out
}

/// Match `tokens` at byte `s` of `line`, each separated by at least one whitespace character.
fn tokens_at(line: &str, s: usize, tokens: &[&str]) -> Option<usize> {
    let mut pos = s + tokens[0].len();
    for t in &tokens[1..] {
        let rest = &line[pos..];
        let skipped = rest.len() - rest.trim_start().len();
        if skipped == 0 {
            return None;
        }
        pos += skipped;
        if !line[pos..].starts_with(t) {
            return None;
        }
        pos += t.len();
    }
    Some(pos)
}

/// Anchors must be non-blank and at least one must carry a word, so `}` … `}` never anchors.
fn anchors<'a>(q: &Query<'a>) -> Option<(&'a str, &'a str)> {
    let m = q.lines.len();
    if m < 3 {
        return None;
    }
    let (first, last) = (q.trimmed[0], q.trimmed[m - 1]);
    let wordy = |s: &str| s.chars().any(char::is_alphanumeric);
    (!first.is_empty() && !last.is_empty() && (wordy(first) || wordy(last)))
        .then_some((first, last))
}

fn context_aware(doc: &Doc<'_>, q: &Query<'_>) -> Vec<Candidate> {
    let Some((_, last)) = anchors(q) else {
        return Vec::new();
    };
    let m = q.lines.len();
    windows(doc, q, |w| {
        if w[m - 1].trim() != last {
            return false;
        }
        let (mut compared, mut equal) = (0, 0);
        for (a, b) in w[1..m - 1].iter().zip(&q.trimmed[1..m - 1]) {
            let a = a.trim();
            if a.is_empty() && b.is_empty() {
                continue;
            }
            compared += 1;
            equal += usize::from(a == *b);
        }
        compared == 0 || equal * 2 >= compared
    })
}

/// Minimum mean similarity of middle lines when the block has `old`'s line count.
const SAME_COUNT_SIMILARITY: f64 = 0.6;
/// Minimum character similarity of the middle text when the line counts differ.
const OTHER_COUNT_SIMILARITY: f64 = 0.7;

fn block_anchor(doc: &Doc<'_>, q: &Query<'_>) -> Vec<Candidate> {
    let Some((first, last)) = anchors(q) else {
        return Vec::new();
    };
    let m = q.lines.len();
    let n = doc.lines.len();
    let tol = (m / 10).max(1);
    let mut out = Vec::new();
    for i in (0..n).filter(|&i| doc.trimmed[i] == first) {
        let mut best: Option<(f64, usize)> = None;
        for count in m.saturating_sub(tol).max(3)..=m + tol {
            if i + count > n || doc.trimmed[i + count - 1] != last {
                continue;
            }
            let middle = &doc.trimmed[i + 1..i + count - 1];
            let want = &q.trimmed[1..m - 1];
            let (sim, floor) = if count == m {
                (mean_line_similarity(middle, want), SAME_COUNT_SIMILARITY)
            } else {
                (
                    text_similarity(&middle.join("\n"), &want.join("\n")),
                    OTHER_COUNT_SIMILARITY,
                )
            };
            let better = best
                .is_none_or(|(s, c)| sim > s || (sim == s && count.abs_diff(m) < c.abs_diff(m)));
            if sim >= floor && better {
                best = Some((sim, count));
            }
        }
        if let Some((_, count)) = best {
            out.push(window(doc, q, i, count));
        }
    }
    out
}

/// Mean per-line similarity of two equally long runs of trimmed lines (1.0 when empty).
fn mean_line_similarity(a: &[&str], b: &[&str]) -> f64 {
    if a.is_empty() {
        return 1.0;
    }
    let total: f64 = a.iter().zip(b).map(|(x, y)| line_similarity(x, y)).sum();
    total / a.len() as f64
}

/// Normalized Levenshtein similarity of two lines; long lines fall back to a diff ratio.
pub(super) fn line_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    if a.len() > 400 || b.len() > 400 {
        return text_similarity(a, b);
    }
    strsim::normalized_levenshtein(a, b)
}

/// Character-level similarity (2 × matched / total) with a time bound.
pub(super) fn text_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(5))
        .diff_chars(a, b);
    f64::from(diff.ratio())
}

/// Undo one level of backslash escaping.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(e @ ('\'' | '"' | '`' | '\\' | '$' | '\n')) => out.push(e),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn lead(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Re-indent `new` to fit the matched lines `file` (see the module documentation for the rule).
pub(super) fn reindent(new: &str, q: &Query<'_>, file: &[&str]) -> String {
    let to = common_indent(file.iter().copied());
    let from = q.indent;
    // Old indentation string -> file indentation string, `None` once contradicted.
    let mut map: Vec<(&str, Option<&str>)> = Vec::new();
    if file.len() == q.lines.len() {
        for (o, f) in q.lines.iter().zip(file) {
            if is_blank(o) || is_blank(f) {
                continue;
            }
            let (lo, lf) = (lead(o), lead(f));
            match map.iter_mut().find(|(k, _)| *k == lo) {
                Some((_, v)) if *v != Some(lf) => *v = None,
                Some(_) => {}
                None => map.push((lo, Some(lf))),
            }
        }
    }
    if from == to && map.iter().all(|(k, v)| *v == Some(*k)) {
        return new.to_string();
    }
    new.split('\n')
        .map(|line| {
            if is_blank(line) {
                return line.to_string();
            }
            let l = lead(line);
            if let Some((_, Some(v))) = map.iter().find(|(k, _)| *k == l) {
                return format!("{v}{}", &line[l.len()..]);
            }
            match line.strip_prefix(from) {
                Some(rest) => format!("{to}{rest}"),
                None => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Remove from `new` the leading and trailing whitespace that `old` had, where `new` has it too.
pub(super) fn trim_like<'a>(old: &str, new: &'a str) -> &'a str {
    let lead = &old[..old.len() - old.trim_start().len()];
    let trail = &old[old.trim_end().len()..];
    let new = new.strip_prefix(lead).unwrap_or(new);
    new.strip_suffix(trail).unwrap_or(new)
}

/// Split a read-tool prefix (`    12\t` or `12: `) off one line.
fn split_prefix(line: &str) -> Option<(u64, &str)> {
    let t = line.trim_start_matches(' ');
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 9 {
        return None;
    }
    let n = t[..digits].parse().ok()?;
    let rest = &t[digits..];
    let body = rest
        .strip_prefix('\t')
        .or_else(|| rest.strip_prefix(": "))
        .or_else(|| (rest == ":").then_some(""))?;
    Some((n, body))
}

/// Strip read-tool line-number prefixes from a block, if every line has one.
fn strip_block(text: &str, consecutive: bool) -> Option<String> {
    let newline = text.ends_with('\n');
    let body = if newline {
        &text[..text.len() - 1]
    } else {
        text
    };
    let mut out = Vec::new();
    let mut prev: Option<u64> = None;
    for line in body.split('\n') {
        let (n, rest) = split_prefix(line)?;
        if consecutive && prev.is_some_and(|p| p + 1 != n) {
            return None;
        }
        prev = Some(n);
        out.push(rest);
    }
    let mut s = out.join("\n");
    if newline {
        s.push('\n');
    }
    Some(s)
}

/// `old` and `new` without read-tool prefixes, if `old` carries them on every line
/// (consecutively numbered); `new` is only stripped if it carries them on every line too.
pub(super) fn strip_line_numbers(old: &str, new: &str) -> Option<(String, String)> {
    let old = strip_block(old, true)?;
    let new = if new.is_empty() {
        String::new()
    } else {
        strip_block(new, false).unwrap_or_else(|| new.to_string())
    };
    Some((old, new))
}
