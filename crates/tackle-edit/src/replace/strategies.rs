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
    /// Whether `old` ended with a newline (so a whole-line span includes the last one).
    pub(super) fn ends_with_newline(&self) -> bool {
        self.newline
    }

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
    // One searcher for the whole scan: a `str::find` per occurrence would set up a new one each
    // time, which dominated `replaceAll` over thousands of occurrences.
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let bytes = hay.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = finder.find(&bytes[from..]) {
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
            // Several lines are the whole-line rungs' to match, so that lines the model kept
            // keep their bytes; within a line, the quote's frame must hold.
            if t.len() == q.text.len() || t.contains('\n') {
                Vec::new()
            } else {
                let found = on_token_boundaries(doc.text, exact(doc.text, t));
                as_whole_lines(doc, q, framed_like(q.text, doc.text, found))
            }
        }
        Strategy::EscapeNormalized => {
            let u = unescape(q.text);
            if u == q.text || u.trim().is_empty() {
                Vec::new()
            } else {
                on_token_boundaries(doc.text, exact(doc.text, &u))
            }
        }
        Strategy::QuoteNormalized => quote_normalized(doc, q),
        Strategy::LineNormalized => line_normalized(doc, q),
        Strategy::Simple | Strategy::MultiOccurrence => exact(doc.text, q.text),
    }
}

/// Keeps the candidates framed the way `old` is: where the whitespace `old` starts (ends) with
/// holds a newline, `old` claims a line boundary there, so only whitespace may stand between
/// the candidate and the start (end) of its line. A quote of a whole line, `"let x = f()\n"`,
/// never matches the front of `let x = f();`. Padding spaces claim nothing.
fn framed_like(old: &str, text: &str, mut found: Vec<Candidate>) -> Vec<Candidate> {
    let lead = old[..old.len() - old.trim_start().len()].contains('\n');
    let trail = old[old.trim_end().len()..].contains('\n');
    let blank = |s: &str| s.chars().all(char::is_whitespace);
    found.retain(|c| {
        let line_start = text[..c.start].rfind('\n').map_or(0, |nl| nl + 1);
        let line_end = text[c.end..].find('\n').map_or(text.len(), |nl| c.end + nl);
        (!lead || blank(&text[line_start..c.start])) && (!trail || blank(&text[c.end..line_end]))
    });
    found
}

/// Widens within-line candidates of a line-shaped quote (one holding a newline) that cover
/// their whole line but for whitespace into whole-line candidates, so they are applied line by
/// line: a line the model kept keeps the file's bytes, and `new`'s indentation is fitted to the
/// file's instead of being added to it.
fn as_whole_lines(doc: &Doc<'_>, q: &Query<'_>, found: Vec<Candidate>) -> Vec<Candidate> {
    if !q.text.contains('\n') {
        return found;
    }
    let text = doc.text;
    let blank = |s: &str| s.chars().all(|c| c == ' ' || c == '\t');
    found
        .into_iter()
        .map(|c| {
            let line_start = text[..c.start].rfind('\n').map_or(0, |nl| nl + 1);
            let line_end = text[c.end..].find('\n').map_or(text.len(), |nl| c.end + nl);
            let single_line = !text[c.start..c.end].contains('\n');
            if !(single_line && blank(&text[line_start..c.start]) && blank(&text[c.end..line_end]))
            {
                return c;
            }
            let end = if q.newline && line_end < text.len() {
                line_end + 1
            } else {
                line_end
            };
            Candidate {
                start: line_start,
                end,
                whole_lines: true,
            }
        })
        .collect()
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Keeps the candidates that neither start nor end inside a run of identifier characters that
/// continues outside them: a tolerant match of `max = 5` must not land inside `vmax = 50`.
fn on_token_boundaries(text: &str, mut found: Vec<Candidate>) -> Vec<Candidate> {
    let splits_word = |at: usize| {
        let before = text[..at].chars().next_back();
        let after = text[at..].chars().next();
        before.is_some_and(is_word_char) && after.is_some_and(is_word_char)
    };
    found.retain(|c| !splits_word(c.start) && !splits_word(c.end));
    found
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
    as_whole_lines(
        doc,
        q,
        framed_like(q.text, doc.text, on_token_boundaries(doc.text, out)),
    )
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

/// A typographic quotation mark (‘ ’ ‚ ‛ “ ” „ ‟) as its ASCII quote; other characters as they are.
fn ascii_quote(c: char) -> char {
    match c {
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        _ => c,
    }
}

fn is_typographic_quote(c: char) -> bool {
    ascii_quote(c) != c
}

/// `text` with its typographic quotes made ASCII, and the offsets (in the result) where a
/// quote was replaced; `None` when it has none. Each one shrinks from 3 bytes to 1.
fn ascii_quotes(text: &str) -> Option<(String, Vec<usize>)> {
    if !text.chars().any(is_typographic_quote) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut replaced = Vec::new();
    for c in text.chars() {
        let a = ascii_quote(c);
        if a != c {
            replaced.push(out.len());
        }
        out.push(a);
    }
    Some((out, replaced))
}

/// `old` found in the content once typographic quotes on either side are read as ASCII quotes,
/// on token boundaries. Each quotation mark is one character on both sides, so a candidate
/// spans as many characters as `old`.
fn quote_normalized(doc: &Doc<'_>, q: &Query<'_>) -> Vec<Candidate> {
    let old = ascii_quotes(q.text);
    let content = ascii_quotes(doc.text);
    if old.is_none() && content.is_none() {
        return Vec::new(); // the same text the exact rung did not find
    }
    let old = old.as_ref().map_or(q.text, |(text, _)| text.as_str());
    let (text, replaced) = match &content {
        Some((text, replaced)) => (text.as_str(), replaced.as_slice()),
        None => (doc.text, &[][..]),
    };
    let original = |at: usize| at + 2 * replaced.partition_point(|&r| r < at);
    let found = exact(text, old)
        .into_iter()
        .map(|c| Candidate {
            start: original(c.start),
            end: original(c.end),
            whole_lines: false,
        })
        .collect();
    on_token_boundaries(doc.text, found)
}

/// `new` for a span `file` that `old` matched once quotes were read as ASCII: where `new` keeps
/// `old`'s text, it takes the file's characters, so the file's quotation marks survive on the
/// text the model left as it quoted it. Changed text is written as the model wrote it.
pub(super) fn keep_file_quotes(old: &str, file: &str, new: &str) -> String {
    let old_lines: Vec<&str> = old.split('\n').collect();
    let file_lines: Vec<&str> = file.split('\n').collect();
    let new_lines: Vec<&str> = new.split('\n').collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
    let mut out: Vec<String> = Vec::with_capacity(new_lines.len());
    for op in similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        &old_lines,
        &new_lines,
        Some(deadline),
    ) {
        let (olds, news) = (op.old_range(), op.new_range());
        match op.tag() {
            similar::DiffTag::Equal => out.extend(file_lines[olds].iter().map(|l| l.to_string())),
            similar::DiffTag::Insert => out.extend(new_lines[news].iter().map(|l| l.to_string())),
            similar::DiffTag::Delete => {}
            similar::DiffTag::Replace => {
                let old_text = old_lines[olds.clone()].join("\n");
                let file_chars: Vec<char> = file_lines[olds].join("\n").chars().collect();
                let new_text = new_lines[news].join("\n");
                let diff = similar::TextDiff::configure()
                    .deadline(deadline)
                    .diff_chars(&old_text, &new_text);
                let mut group = String::with_capacity(new_text.len());
                for change in diff.iter_all_changes() {
                    match (change.tag(), change.old_index()) {
                        (similar::ChangeTag::Equal, Some(at)) => group.push(file_chars[at]),
                        (similar::ChangeTag::Delete, _) => {}
                        _ => group.push_str(change.value()),
                    }
                }
                out.push(group);
            }
        }
    }
    out.join("\n")
}

/// A trimmed line without one trailing `;` or `,`, and that mark.
fn split_mark(line: &str) -> (&str, Option<char>) {
    let t = line.trim();
    match t.chars().next_back() {
        Some(mark @ (';' | ',')) => (t[..t.len() - 1].trim_end(), Some(mark)),
        _ => (t, None),
    }
}

/// Lines equal once trimmed, with whitespace runs as one space, where one side may have a
/// trailing `;` or `,` the other lacks (but not `;` against `,`).
fn loosely_equal(file: &str, quoted: &str) -> bool {
    let (a, mark_a) = split_mark(file);
    let (b, mark_b) = split_mark(quoted);
    (mark_a == mark_b || mark_a.is_none() || mark_b.is_none())
        && a.split_whitespace().eq(b.split_whitespace())
}

/// Every non-blank quoted line loosely equal to the next non-blank file line, in order; blank
/// lines between them may differ in number. Blank lines the quote has before its first and
/// after its last line are taken into the span where the file has them, never more.
fn line_normalized(doc: &Doc<'_>, q: &Query<'_>) -> Vec<Candidate> {
    let Some(first) = q.lines.iter().position(|l| !is_blank(l)) else {
        return Vec::new();
    };
    let last = q.lines.iter().rposition(|l| !is_blank(l)).unwrap_or(first);
    let (lead_blank, trail_blank) = (first, q.lines.len() - 1 - last);
    let core: Vec<&str> = q.lines[first..=last]
        .iter()
        .copied()
        .filter(|l| !is_blank(l))
        .collect();
    let n = doc.lines.len();
    let mut out = Vec::new();
    for start in 0..n {
        if !loosely_equal(doc.lines[start], core[0]) {
            continue;
        }
        let mut at = start + 1;
        let mut matched = true;
        for quoted in &core[1..] {
            while at < n && is_blank(doc.lines[at]) {
                at += 1;
            }
            if at >= n || !loosely_equal(doc.lines[at], quoted) {
                matched = false;
                break;
            }
            at += 1;
        }
        if matched {
            let before = doc.lines[..start]
                .iter()
                .rev()
                .take(lead_blank)
                .take_while(|l| is_blank(l))
                .count();
            let after = doc.lines[at..]
                .iter()
                .take(trail_blank)
                .take_while(|l| is_blank(l))
                .count();
            let first_line = start - before;
            out.push(window(doc, q, first_line, at + after - first_line));
        }
    }
    out
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
pub(super) fn unescape(s: &str) -> String {
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

/// `new` for an edit whose `old` matched only once unescaped: unescaped the same way, as is
/// when it has no escapes, and `None` when it mixes escaped and raw forms of what `old` escaped.
pub(super) fn unescape_new(old: &str, new: &str) -> Option<String> {
    let unescaped = unescape(new);
    if unescaped == new {
        return Some(unescaped);
    }
    // The raw characters that `old` wrote as escapes.
    let raw_forms = [
        ("\\n", '\n'),
        ("\\t", '\t'),
        ("\\r", '\r'),
        ("\\\"", '"'),
        ("\\'", '\''),
        ("\\`", '`'),
    ];
    let mixed = raw_forms.iter().any(|(escape, raw)| {
        let new_without_escapes = new.replace("\\\\", "").replace(escape, "");
        old.contains(escape) && new_without_escapes.contains(*raw)
    });
    (!mixed).then_some(unescaped)
}

fn lead(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// How `new`'s lines are re-indented to fit the matched file lines (see the module
/// documentation for the rule).
struct Reindent<'a> {
    from: &'a str,
    to: &'a str,
    /// Quoted indentation -> file indentation, `None` once contradicted.
    map: Vec<(&'a str, Option<&'a str>)>,
}

impl<'a> Reindent<'a> {
    fn new(q: &Query<'a>, file: &[&'a str], pairs: &[Pair]) -> Self {
        let mut map: Vec<(&str, Option<&str>)> = Vec::new();
        for pair in pairs {
            let Pair::Both(qi, fi) = *pair else { continue };
            let (o, f) = (q.lines[qi], file[fi]);
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
        Reindent {
            from: q.indent,
            to: common_indent(file.iter().copied()),
            map,
        }
    }

    fn line(&self, line: &str) -> String {
        if is_blank(line) {
            return line.to_owned();
        }
        let l = lead(line);
        if let Some((_, Some(v))) = self.map.iter().find(|(k, _)| *k == l) {
            return format!("{v}{}", &line[l.len()..]);
        }
        match line.strip_prefix(self.from) {
            Some(rest) => format!("{}{rest}", self.to),
            None => line.to_owned(),
        }
    }
}

/// How a quoted line and a matched file line correspond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pair {
    /// Quoted line `.0` matched file line `.1`.
    Both(usize, usize),
    /// A blank quoted line the file does not have.
    QuoteOnly(usize),
    /// A blank file line the quote does not have.
    FileOnly(usize),
}

/// Pairs the quoted lines with the matched file lines: in order, blank lines paired when both
/// sides have one, otherwise left unpaired. The rungs guarantee the non-blank lines pair up.
fn pair_lines(quoted: &[&str], file: &[&str]) -> Vec<Pair> {
    let (mut qi, mut fi) = (0, 0);
    let mut pairs = Vec::with_capacity(quoted.len().max(file.len()));
    while qi < quoted.len() || fi < file.len() {
        let q_blank = quoted.get(qi).is_some_and(|l| is_blank(l));
        let f_blank = file.get(fi).is_some_and(|l| is_blank(l));
        if qi < quoted.len() && fi < file.len() && q_blank == f_blank {
            pairs.push(Pair::Both(qi, fi));
            qi += 1;
            fi += 1;
        } else if q_blank || fi >= file.len() {
            pairs.push(Pair::QuoteOnly(qi));
            qi += 1;
        } else {
            pairs.push(Pair::FileOnly(fi));
            fi += 1;
        }
    }
    pairs
}

/// A quoted line whose trailing `;` or `,` differs from its file line, where `new` gives no
/// clear line to restore the file's ending on.
#[derive(Debug)]
pub(super) struct UnclearMark {
    /// The file line, 0-based within the matched span.
    pub(super) file_line: usize,
    /// The file line, trimmed.
    pub(super) file: String,
    /// The quoted line, trimmed.
    pub(super) quoted: String,
}

/// `line` with its trailing mark `from` (the quoted line's) turned into `to` (the file
/// line's); as it is when it is blank or its own ending is not `from`.
fn with_mark(line: &str, from: Option<char>, to: Option<char>) -> String {
    if is_blank(line) || split_mark(line).1 != from {
        return line.to_owned();
    }
    let body = line.trim_end();
    let tail = &line[body.len()..];
    let body = if from.is_some() {
        &body[..body.len() - 1]
    } else {
        body
    };
    let mark = to.map(String::from).unwrap_or_default();
    format!("{body}{mark}{tail}")
}

/// The lines of `new` (one changed group) with the trailing marks the rung ignored restored:
/// each quoted line of the group whose ending differs from its file line's hands the file's
/// ending to the new line standing for it. See the module documentation for the rule.
fn restore_marks(
    q: &Query<'_>,
    file: &[&str],
    file_of: &[Option<usize>],
    quoted: std::ops::Range<usize>,
    new: &[&str],
) -> Result<Vec<String>, UnclearMark> {
    let mut out: Vec<String> = new.iter().map(|l| (*l).to_owned()).collect();
    if new.iter().all(|l| is_blank(l)) {
        return Ok(out); // the lines were removed: no ending to keep
    }
    let same_count = quoted.len() == new.len();
    for (offset, qi) in quoted.enumerate() {
        let Some(fi) = file_of[qi] else { continue };
        let (from, to) = (split_mark(q.lines[qi]).1, split_mark(file[fi]).1);
        if from == to {
            continue;
        }
        let target = if same_count {
            Some(offset)
        } else {
            most_like(q.lines[qi], new)
        };
        match target {
            Some(ni) => out[ni] = with_mark(&out[ni], from, to),
            None => {
                return Err(UnclearMark {
                    file_line: fi,
                    file: file[fi].trim().to_owned(),
                    quoted: q.lines[qi].trim().to_owned(),
                });
            }
        }
    }
    Ok(out)
}

/// The line of `lines` clearly most like `quoted`: at least half similar, and more similar
/// than every other line.
fn most_like(quoted: &str, lines: &[&str]) -> Option<usize> {
    let quoted = split_mark(quoted).0;
    let mut scores: Vec<(f64, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !is_blank(l))
        .map(|(i, l)| (text_similarity(quoted, split_mark(l).0), i))
        .collect();
    scores.sort_by(|a, b| b.0.total_cmp(&a.0));
    match scores.as_slice() {
        [(best, i), rest @ ..] if *best >= 0.5 && rest.first().is_none_or(|r| r.0 < *best) => {
            Some(*i)
        }
        _ => None,
    }
}

/// The text that replaces a whole-line tolerant match: the change from `old` (the quote) to
/// `new`, applied to the file's lines. A line the model left as it quoted it keeps the file's
/// bytes; lines it changed or added are re-indented to fit, with the file's trailing marks the
/// quote lacked given back; lines it removed go. So a tolerant match never rewrites a line the
/// model did not change.
pub(super) fn splice_lines(q: &Query<'_>, file: &[&str], new: &str) -> Result<String, UnclearMark> {
    let (body, terminated) = match (q.newline, new.strip_suffix('\n')) {
        (true, Some(body)) => (Some(body), true),
        (true, None) if new.is_empty() => (None, false),
        _ => (Some(new), false),
    };
    let new_lines: Vec<&str> = body.map_or_else(Vec::new, |b| b.split('\n').collect());
    let pairs = pair_lines(&q.lines, file);
    let reindent = Reindent::new(q, file, &pairs);
    let mut file_of = vec![None; q.lines.len()];
    for pair in &pairs {
        if let Pair::Both(qi, fi) = *pair {
            file_of[qi] = Some(fi);
        }
    }

    let mut keep = vec![true; q.lines.len()];
    let mut inserted: Vec<Vec<String>> = vec![Vec::new(); q.lines.len() + 1];
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
    // Positions come from the ops' lengths: similar's index for the other side of a delete or
    // an insert is not always the cursor's.
    let (mut at_old, mut at_new) = (0, 0);
    for op in similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        &q.lines,
        &new_lines,
        Some(deadline),
    ) {
        let (old_len, new_len) = (op.old_range().len(), op.new_range().len());
        if op.tag() != similar::DiffTag::Equal {
            keep[at_old..at_old + old_len]
                .iter_mut()
                .for_each(|k| *k = false);
            let group = &new_lines[at_new..at_new + new_len];
            let restored = restore_marks(q, file, &file_of, at_old..at_old + old_len, group)?;
            inserted[at_old].extend(restored);
        }
        at_old += old_len;
        at_new += new_len;
    }

    // The nearest quoted line on each side of every pair, to place unquoted blank lines.
    let quoted_at = |p: &Pair| match *p {
        Pair::Both(qi, _) | Pair::QuoteOnly(qi) => Some(qi),
        Pair::FileOnly(_) => None,
    };
    let mut out: Vec<String> = Vec::with_capacity(new_lines.len() + file.len());
    let mut previous: Option<usize> = None;
    for (index, pair) in pairs.iter().enumerate() {
        match *pair {
            Pair::Both(qi, _) | Pair::QuoteOnly(qi) => {
                out.extend(inserted[qi].iter().map(|l| reindent.line(l)));
                if let (true, Pair::Both(_, fi)) = (keep[qi], pair) {
                    out.push(file[*fi].to_owned());
                }
                previous = Some(qi);
            }
            Pair::FileOnly(fi) => {
                // A blank line the model never saw goes only with the lines around it.
                let next = pairs[index..].iter().find_map(quoted_at);
                let removed = |qi: Option<usize>| qi.is_some_and(|qi| !keep[qi]);
                if !(removed(previous) && removed(next)) {
                    out.push(file[fi].to_owned());
                }
            }
        }
    }
    out.extend(inserted[q.lines.len()].iter().map(|l| reindent.line(l)));
    let mut text = out.join("\n");
    if terminated && !(out.is_empty() && new_lines.is_empty()) {
        text.push('\n');
    }
    Ok(text)
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
