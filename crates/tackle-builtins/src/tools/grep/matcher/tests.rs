//! Tests of the grep matcher: it finds the same lines as ripgrep's own matcher on random
//! patterns and texts, and refuses the same patterns.

use grep::matcher::Matcher;
use grep::regex::RegexMatcherBuilder;
use grep::searcher::sinks::Bytes;
use grep::searcher::{BinaryDetection, SearcherBuilder};
use proptest::prelude::*;

use super::LineMatcher;

/// The matching lines (number and text) the grep tool's searcher reports for `matcher`.
fn lines<M: Matcher>(matcher: &M, text: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\0'))
        .line_number(true)
        .build();
    let mut found = Vec::new();
    searcher
        .search_slice(
            matcher,
            text,
            Bytes(|line, bytes| {
                found.push((line, bytes.to_vec()));
                Ok(true)
            }),
        )
        .unwrap();
    found
}

fn ripgrep(pattern: &str) -> Result<grep::regex::RegexMatcher, grep::regex::Error> {
    RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
}

const PIECES: &[&str] = &[
    "a",
    "b",
    "ab",
    "fn",
    "é",
    "A",
    "_",
    "1",
    " ",
    r"\w",
    r"\W",
    r"\d",
    r"\s",
    r"\S",
    ".",
    "[a-c]",
    "[^a]",
    "[^\\n]",
    r"\b",
    r"\B",
    "^",
    "$",
    r"\A",
    r"\z",
    "(?m:^)",
    "(?m:$)",
    "(?i)",
    "(?i:a)",
    r"\n",
    "\n",
    r"[\n]",
    r"[\na]",
    r"\x00",
    "(?s:.)",
    "(?-u:\\w)",
    r"\p{L}",
    "[[:alpha:]]",
];

const SUFFIXES: &[&str] = &["", "", "", "*", "+", "?", "{1,2}", "*?", "+?"];

prop_compose! {
    fn pattern()(parts in prop::collection::vec(
        (0..PIECES.len(), 0..SUFFIXES.len(), 0u8..10), 1..6,
    )) -> String {
        let mut pattern = String::new();
        for (piece, suffix, joint) in parts {
            match joint {
                0 if !pattern.is_empty() => pattern.push('|'),
                1 => pattern = format!("({pattern})"),
                _ => {}
            }
            pattern.push_str(PIECES[piece]);
            pattern.push_str(SUFFIXES[suffix]);
        }
        pattern
    }
}

const TEXT: &[&str] = &[
    "a",
    "b",
    "A",
    "é",
    "\n",
    "\n",
    "\r\n",
    " ",
    "1",
    "_",
    "fn ",
    "ab",
    "\u{1F600}",
    "\u{00A0}",
];

prop_compose! {
    fn text()(parts in prop::collection::vec(0..TEXT.len(), 0..40), invalid in any::<bool>())
        -> Vec<u8>
    {
        let mut text: Vec<u8> = parts.into_iter().flat_map(|p| TEXT[p].bytes()).collect();
        if invalid && !text.is_empty() {
            // A byte that is not UTF-8, as in a Latin-1 file.
            let at = text.len() / 2;
            text.insert(at, 0xE9);
        }
        text
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        if std::env::var_os("TACKLE_DEEP").is_some() { 20_000 } else { 150 }
    ))]

    /// The matcher reports the lines ripgrep's matcher does, and refuses what it refuses.
    #[test]
    fn the_matcher_finds_the_lines_ripgrep_finds(pattern in pattern(), texts in prop::collection::vec(text(), 1..4)) {
        let ours = LineMatcher::new(&pattern);
        let theirs = ripgrep(&pattern);
        prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?}: {:?} vs {:?}", pattern, ours.as_ref().err(), theirs.as_ref().err());
        if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
            prop_assert_eq!(ours.line_terminator(), theirs.line_terminator(), "{:?}", pattern);
            for text in texts {
                prop_assert_eq!(lines(&ours, &text), lines(&theirs, &text), "{:?} in {:?}", pattern, String::from_utf8_lossy(&text));
            }
        }
    }
}

#[test]
fn a_literal_newline_is_refused_with_a_reason() {
    for pattern in ["a\nb", r"a\nb", r"[\n]"] {
        let error = LineMatcher::new(pattern).unwrap_err();
        assert!(error.contains("not allowed"), "{pattern:?}: {error}");
    }
}

#[test]
fn a_class_never_matches_across_lines() {
    let matcher = LineMatcher::new(r"one\stwo").unwrap();
    assert!(lines(&matcher, b"one\ntwo\n").is_empty());
    assert_eq!(
        lines(&matcher, b"x\none two\n"),
        vec![(2, b"one two\n".to_vec())]
    );
}

#[test]
fn text_anchors_match_at_each_line() {
    let matcher = LineMatcher::new(r"^fn\b").unwrap();
    assert_eq!(matcher.line_terminator(), None);
    let found = lines(
        &matcher,
        b"use x;\nfn main() {}\n  fn inner() {}\nfn run() {}\n",
    );
    let numbers: Vec<u64> = found.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, vec![2, 4]);
}
