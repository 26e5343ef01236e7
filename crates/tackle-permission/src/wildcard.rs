//! The wildcard grammar of rules: `*` matches any run of characters, `?` exactly one, and a
//! trailing ` *` is optional, so `ls *` matches `ls` and `ls -la` but not `lsof`.
//!
//! Patterns are compiled once. Matching works on bytes, allocates nothing, and takes a fast path
//! for the common shapes: `*`, a literal, a command prefix such as `git status *`, and a literal
//! followed by `*`. Other patterns split at their stars into segments; the first segment is
//! anchored at the start, the last at the end, and the middle ones are found leftmost-first,
//! which is exact because a segment (literals and `?`) always spans a fixed number of characters.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

#[cfg(test)]
mod tests;

/// A compiled wildcard pattern.
///
/// Both the pattern and the input are compared with `/` as the path separator (a `\` is read as
/// `/`). Matching is case-sensitive. `?` matches one Unicode character, and both `*` and `?`
/// match newlines.
#[derive(Clone)]
pub struct Pattern {
    source: Box<str>,
    kind: Kind,
    /// The byte every match starts with, when the pattern starts with a literal: a mismatch is
    /// rejected without reading the compiled body.
    lead: Option<u8>,
}

/// The matching strategy chosen at compile time. Bodies have `\` read as `/` and any optional
/// trailing ` *` removed.
#[derive(Clone)]
enum Kind {
    /// The body is only stars: everything matches.
    Any,
    /// No wildcard and no optional tail: the input equals the body.
    Exact(Box<str>),
    /// No wildcard, with the optional tail: the body, alone or followed by a space.
    Command(Box<str>),
    /// A literal then only stars: the input starts with the literal.
    Prefix(Box<str>),
    /// Anything else. Without a star there is exactly one segment; with stars there are at least
    /// two (the first and last may be empty), split at each run of stars.
    Glob {
        segments: Box<[Segment]>,
        starred: bool,
        /// The pattern ended in ` *`: the input may stop where the body ends, or continue with a
        /// space and anything.
        tail: bool,
    },
}

/// A star-free piece of a pattern: literal bytes and `?`.
#[derive(Clone)]
struct Segment {
    text: Box<str>,
    /// True when the segment holds a `?`, so its byte length varies with the input.
    wild: bool,
}

impl Pattern {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Self {
        let normalized = pattern.replace('\\', "/");
        let (body, optional_tail) = match normalized.strip_suffix(" *") {
            Some(body) => (body, true),
            None => (normalized.as_str(), false),
        };
        Self {
            source: pattern.into(),
            kind: Kind::compile(body, optional_tail),
            lead: body.bytes().next().filter(|&b| b != b'*' && b != b'?'),
        }
    }

    /// Compiles `pattern` after expanding a home-directory prefix with
    /// [`Pattern::expand_home`]. With no `home`, the pattern is compiled as written.
    pub fn with_home(pattern: &str, home: Option<&str>) -> Self {
        Self::new(&Self::expand_home(pattern, home))
    }

    /// Replaces a leading `~` or `$HOME` with `home`: exactly `~` or `$HOME`, or either followed
    /// by a separator (`~/src/*`, `$HOME/.ssh/*`; `\` counts as `/`). Nothing else expands: not a
    /// `~` later in the pattern, not `~user`, not `$HOMEDIR`. With no `home`, or nothing to
    /// expand, the pattern is returned unchanged.
    pub fn expand_home<'a>(pattern: &'a str, home: Option<&str>) -> Cow<'a, str> {
        let (Some(home), Some(rest)) = (home, home_relative(pattern)) else {
            return Cow::Borrowed(pattern);
        };
        if rest.is_empty() {
            return Cow::Owned(home.to_owned());
        }
        // `rest` starts with its separator; avoid doubling the one a home may end with.
        let trimmed = home.trim_end_matches(['/', '\\']);
        Cow::Owned(format!("{trimmed}{rest}"))
    }

    /// True when `pattern` starts with a `~` or `$HOME` that [`Pattern::expand_home`] expands.
    pub fn needs_home(pattern: &str) -> bool {
        home_relative(pattern).is_some()
    }

    /// The pattern as written (after any home expansion).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when `input` matches the whole pattern.
    pub fn matches(&self, input: &str) -> bool {
        self.matches_subject(&Subject::new(input))
    }

    /// The literal a wildcard-free pattern without the optional tail must equal (with `\` read
    /// as `/`), or `None`.
    pub(crate) fn literal(&self) -> Option<&str> {
        match &self.kind {
            Kind::Exact(body) => Some(body),
            _ => None,
        }
    }

    /// [`Pattern::matches`] on an input whose separator scan is already done. The fast paths are
    /// inlined into the rule scan; general globs are a call.
    #[inline]
    pub(crate) fn matches_subject(&self, subject: &Subject<'_>) -> bool {
        let input = subject.text.as_bytes();
        let slashed = subject.backslash;
        if let Some(lead) = self.lead {
            match input.first() {
                Some(&first) if norm(first) == lead => {}
                _ => return false,
            }
        }
        match &self.kind {
            Kind::Any => true,
            Kind::Exact(body) => {
                input.len() == body.len() && eq_at(input, 0, body.as_bytes(), slashed)
            }
            Kind::Command(body) => {
                eq_at(input, 0, body.as_bytes(), slashed)
                    && (input.len() == body.len() || input[body.len()] == b' ')
            }
            Kind::Prefix(literal) => eq_at(input, 0, literal.as_bytes(), slashed),
            Kind::Glob {
                segments,
                starred,
                tail,
            } => glob(segments, *starred, *tail, input, slashed),
        }
    }
}

/// What follows a leading `~` or `$HOME` (empty, or starting with a separator).
fn home_relative(pattern: &str) -> Option<&str> {
    let rest = pattern
        .strip_prefix('~')
        .or_else(|| pattern.strip_prefix("$HOME"))?;
    (rest.is_empty() || rest.starts_with(['/', '\\'])).then_some(rest)
}

impl Kind {
    fn compile(body: &str, optional_tail: bool) -> Self {
        if !body.is_empty() && body.bytes().all(|b| b == b'*') {
            return Kind::Any;
        }
        let wild_at = body.find(['*', '?']);
        match wild_at {
            None if optional_tail => return Kind::Command(body.into()),
            None => return Kind::Exact(body.into()),
            Some(at) if body[at..].bytes().all(|b| b == b'*') => {
                return Kind::Prefix(body[..at].into());
            }
            Some(_) => {}
        }
        let starred = body.contains('*');
        let mut segments = body
            .split('*')
            .enumerate()
            // Runs of stars leave empty middle pieces; only the first and last are anchors.
            .filter(|&(index, piece)| !piece.is_empty() || index == 0)
            .map(|(_, piece)| Segment {
                text: piece.into(),
                wild: piece.contains('?'),
            })
            .collect::<Vec<_>>();
        if starred && body.ends_with('*') {
            segments.push(Segment {
                text: "".into(),
                wild: false,
            });
        }
        Kind::Glob {
            segments: segments.into_boxed_slice(),
            starred,
            tail: optional_tail,
        }
    }
}

/// An input to match, with its one-time scan for `\` done.
pub(crate) struct Subject<'a> {
    text: &'a str,
    /// True when `text` holds a `\`, which must then be read as `/` byte by byte.
    backslash: bool,
}

impl<'a> Subject<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            text,
            backslash: text.as_bytes().contains(&b'\\'),
        }
    }

    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    /// True when the text holds a `\` (read as `/` when matching).
    pub(crate) fn has_backslash(&self) -> bool {
        self.backslash
    }
}

/// The input byte as the matcher sees it.
#[inline]
fn norm(byte: u8) -> u8 {
    if byte == b'\\' { b'/' } else { byte }
}

/// The length of the UTF-8 character starting with `lead`.
#[inline]
fn char_len(lead: u8) -> usize {
    match lead {
        0..0xC0 => 1,
        0xC0..0xE0 => 2,
        0xE0..0xF0 => 3,
        _ => 4,
    }
}

#[inline]
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// True when `literal` occurs in `input` at `at`.
#[inline]
fn eq_at(input: &[u8], at: usize, literal: &[u8], slashed: bool) -> bool {
    let Some(window) = input.get(at..at + literal.len()) else {
        return false;
    };
    if slashed {
        window.iter().zip(literal).all(|(&i, &p)| norm(i) == p)
    } else {
        same(window, literal)
    }
}

/// Equality of two slices of the same length, without a call into `memcmp`: rule patterns and
/// permission names are short, and the call costs more than the comparison.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let len = a.len();
    if len < 4 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    if len <= 8 {
        // Two overlapping four-byte words cover four to eight bytes.
        return word4(a, 0) == word4(b, 0) && word4(a, len - 4) == word4(b, len - 4);
    }
    let mut at = 0;
    while at + 8 < len {
        if word8(a, at) != word8(b, at) {
            return false;
        }
        at += 8;
    }
    word8(a, len - 8) == word8(b, len - 8)
}

#[inline]
fn word4(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_ne_bytes(word)
}

#[inline]
fn word8(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_ne_bytes(word)
}

/// Matches `segment` at `at`; returns where the match ends.
fn match_forward(segment: &Segment, input: &[u8], at: usize, slashed: bool) -> Option<usize> {
    let text = segment.text.as_bytes();
    if !segment.wild {
        return eq_at(input, at, text, slashed).then_some(at + text.len());
    }
    let mut i = at;
    for &p in text {
        let &byte = input.get(i)?;
        if p == b'?' {
            i += char_len(byte);
        } else if norm(byte) == p {
            i += 1;
        } else {
            return None;
        }
    }
    Some(i)
}

/// Matches `segment` so that it ends at `end`; returns where the match starts.
fn match_backward(segment: &Segment, input: &[u8], end: usize, slashed: bool) -> Option<usize> {
    let text = segment.text.as_bytes();
    if !segment.wild {
        let start = end.checked_sub(text.len())?;
        return eq_at(input, start, text, slashed).then_some(start);
    }
    let mut j = end;
    for &p in text.iter().rev() {
        j = j.checked_sub(1)?;
        if p == b'?' {
            while j > 0 && is_continuation(input[j]) {
                j -= 1;
            }
        } else if norm(input[j]) != p {
            return None;
        }
    }
    Some(j)
}

/// The leftmost occurrence of `segment` at or after `from`, as `(start, end)`.
fn find(segment: &Segment, input: &[u8], from: usize, slashed: bool) -> Option<(usize, usize)> {
    let text = segment.text.as_bytes();
    match text.first() {
        Some(&first) if first != b'?' => {
            // Candidates start with the segment's first byte, which never continues a character,
            // so every candidate is a character boundary.
            let mut start = from;
            loop {
                let rest = input.get(start..)?;
                start += if slashed {
                    rest.iter().position(|&b| norm(b) == first)?
                } else {
                    rest.iter().position(|&b| b == first)?
                };
                if let Some(end) = match_forward(segment, input, start, slashed) {
                    return Some((start, end));
                }
                start += 1;
            }
        }
        _ => {
            let mut start = from;
            loop {
                if let Some(end) = match_forward(segment, input, start, slashed) {
                    return Some((start, end));
                }
                let &lead = input.get(start)?;
                start += char_len(lead);
            }
        }
    }
}

/// The general matcher: segments split at stars, with the optional ` *` tail handled at the end.
#[inline(never)]
fn glob(segments: &[Segment], starred: bool, tail: bool, bytes: &[u8], slashed: bool) -> bool {
    let at_stop = |end: usize| end == bytes.len() || (tail && bytes[end] == b' ');
    let Some((first, rest)) = segments.split_first() else {
        return bytes.is_empty();
    };
    let Some(mut cursor) = match_forward(first, bytes, 0, slashed) else {
        return false;
    };
    if !starred {
        return at_stop(cursor);
    }
    let Some((last, middle)) = rest.split_last() else {
        return at_stop(cursor);
    };
    for segment in middle {
        match find(segment, bytes, cursor, slashed) {
            Some((_, end)) => cursor = end,
            None => return false,
        }
    }
    if last.text.is_empty() {
        // The body ends with a star, which reaches the end of the input.
        return true;
    }
    if !tail {
        return match_backward(last, bytes, bytes.len(), slashed).is_some_and(|s| s >= cursor);
    }
    // With the optional tail, the last segment may end anywhere a space follows.
    let mut from = cursor;
    while let Some((start, end)) = find(last, bytes, from, slashed) {
        if at_stop(end) {
            return true;
        }
        let Some(&lead) = bytes.get(start) else {
            return false;
        };
        from = start + char_len(lead);
    }
    false
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        // Everything else is compiled from the source.
        self.source == other.source
    }
}

impl Eq for Pattern {}

impl Hash for Pattern {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.source.hash(state);
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.source, f)
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
