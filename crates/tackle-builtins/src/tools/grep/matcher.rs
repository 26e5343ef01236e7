//! The grep tool's matcher: ripgrep's regex semantics for line-oriented search, compiled
//! without a full DFA, so a pattern costs a fraction of a millisecond to build, not ten.
//!
//! `grep-regex` asks `regex-automata` for a fully compiled DFA whenever the pattern's NFA is
//! small. For a pattern with a Unicode class (`\w`, `\d`, `.`) that determinization takes
//! about 9 ms and is often thrown away when it outgrows its size limit; ripgrep pays it once
//! per run over a whole tree, but a tool call pays it on every call, where it was most of the
//! cost of searching a small directory. The lazy DFA (built as the search needs it) and the
//! meta regex's literal prefilters do the same work without the up-front build.
//!
//! The semantics follow `grep-regex` with a `\n` line terminator, which the tests compare
//! against on random patterns and texts: the pattern is parsed with Unicode on and UTF-8
//! matching off (so it matches in files that are not valid UTF-8); `\n` is removed from every
//! class so a match never spans lines, and a literal `\n` in the pattern is refused; and when
//! the pattern has a whole-text anchor (`\A`, `\z`, or `^`/`$` outside multi-line mode) no line
//! terminator is declared, so the searcher runs it on one line at a time, where `^` and `$`
//! mean the line's start and end.

use grep::matcher::{LineTerminator, Match, Matcher, NoCaptures, NoError};
use regex_automata::Input;
use regex_automata::meta::Regex;
use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange};
use regex_syntax::hir::{Hir, HirKind};

/// How deep a pattern may nest groups and repetitions, as in ripgrep.
const NEST_LIMIT: u32 = 250;

/// The largest compiled program a pattern may produce, as in ripgrep (100 MiB).
const SIZE_LIMIT: usize = 100 << 20;

/// The lazy DFA's cache, as in ripgrep (1,000 MiB: it grows only as far as a search needs).
const LAZY_DFA_CAPACITY: usize = 1000 << 20;

/// A compiled grep pattern.
#[derive(Clone, Debug)]
pub(crate) struct LineMatcher {
    regex: Regex,
    line_terminator: Option<LineTerminator>,
}

impl LineMatcher {
    /// Compiles `pattern`, or says why it is not a valid pattern.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .nest_limit(NEST_LIMIT)
            .build()
            .parse(pattern)
            .map_err(|error| error.to_string())?;
        let hir = without_newlines(hir)?;
        let line_terminator = (!hir.properties().look_set().contains_anchor_haystack())
            .then(|| LineTerminator::byte(b'\n'));
        let config = Regex::config()
            .utf8_empty(false)
            .nfa_size_limit(Some(SIZE_LIMIT))
            .dfa(false)
            .hybrid_cache_capacity(LAZY_DFA_CAPACITY);
        let regex = Regex::builder()
            .configure(config)
            .build_from_hir(&hir)
            .map_err(|error| error.to_string())?;
        Ok(Self {
            regex,
            line_terminator,
        })
    }
}

/// `hir` with `\n` removed from every class; an error when a literal holds one or a class
/// holds nothing else.
fn without_newlines(hir: Hir) -> Result<Hir, String> {
    let refused = || Err("the literal \"\\n\" is not allowed in a grep pattern".to_owned());
    Ok(match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Look(look) => Hir::look(look),
        HirKind::Literal(literal) => {
            if literal.0.contains(&b'\n') {
                return refused();
            }
            Hir::literal(literal.0)
        }
        HirKind::Class(Class::Unicode(mut class)) => {
            if class.ranges().is_empty() {
                return Ok(Hir::class(Class::Unicode(class)));
            }
            class.difference(&ClassUnicode::new([ClassUnicodeRange::new('\n', '\n')]));
            if class.ranges().is_empty() {
                return refused();
            }
            Hir::class(Class::Unicode(class))
        }
        HirKind::Class(Class::Bytes(mut class)) => {
            if class.ranges().is_empty() {
                return Ok(Hir::class(Class::Bytes(class)));
            }
            class.difference(&ClassBytes::new([ClassBytesRange::new(b'\n', b'\n')]));
            if class.ranges().is_empty() {
                return refused();
            }
            Hir::class(Class::Bytes(class))
        }
        HirKind::Repetition(mut repetition) => {
            repetition.sub = Box::new(without_newlines(*repetition.sub)?);
            Hir::repetition(repetition)
        }
        HirKind::Capture(mut capture) => {
            capture.sub = Box::new(without_newlines(*capture.sub)?);
            Hir::capture(capture)
        }
        HirKind::Concat(parts) => Hir::concat(
            parts
                .into_iter()
                .map(without_newlines)
                .collect::<Result<_, _>>()?,
        ),
        HirKind::Alternation(parts) => Hir::alternation(
            parts
                .into_iter()
                .map(without_newlines)
                .collect::<Result<_, _>>()?,
        ),
    })
}

impl Matcher for LineMatcher {
    type Captures = NoCaptures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        let input = Input::new(haystack).span(at..haystack.len());
        Ok(self
            .regex
            .find(input)
            .map(|found| Match::new(found.start(), found.end())))
    }

    fn new_captures(&self) -> Result<NoCaptures, NoError> {
        Ok(NoCaptures::new())
    }

    fn shortest_match_at(&self, haystack: &[u8], at: usize) -> Result<Option<usize>, NoError> {
        let input = Input::new(haystack).span(at..haystack.len());
        Ok(self.regex.search_half(&input).map(|end| end.offset()))
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        self.line_terminator
    }
}

#[cfg(test)]
mod tests;
