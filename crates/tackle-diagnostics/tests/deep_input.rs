//! Deeply nested sources through every tree-sitter grammar the syntax check knows: parsed and
//! walked on an ordinary thread's stack, whatever the nesting. Long runs: `TACKLE_DEEP=1`.

use std::path::Path;

use proptest::prelude::*;
use tackle_diagnostics::syntax::syntax_errors;

/// A file name per grammar, and how one level nests in it.
const SOURCES: &[(&str, &str, &str)] = &[
    ("a.rs", "fn f() { let x = ", "; }"),
    ("a.rs", "(", ")"),
    ("a.ts", "[", "]"),
    ("a.tsx", "<div>", "</div>"),
    ("a.js", "{ a: ", " }"),
    ("a.py", "[", "]"),
    ("a.py", "(", ")"),
    ("a.go", "func() int { return ", " }()"),
    ("a.json", "{\"a\": ", "}"),
    ("a.sh", "$(", ")"),
];

fn deep() -> bool {
    std::env::var_os("TACKLE_DEEP").is_some()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if deep() { 128 } else { 10 }))]

    #[test]
    fn deeply_nested_sources_are_checked_without_overflow(
        source in prop::sample::select(SOURCES),
        depth in 1usize..if deep() { 200_000 } else { 5_000 },
        closed in any::<bool>(),
    ) {
        let (name, open, close) = source;
        let mut text = open.repeat(depth);
        text.push('1');
        if closed {
            text.push_str(&close.repeat(depth));
        }
        let errors = syntax_errors(Path::new(name), &text);
        let too_large = text.len() > tackle_diagnostics::syntax::MAX_TEXT_BYTES;
        prop_assert_eq!(errors.is_some(), !too_large, "{} has a grammar", name);
    }
}

#[test]
fn an_unclosed_javascript_object_nested_20000_deep_is_checked() {
    // tree-sitter frees its parse stack recursively: this overflowed an ordinary thread.
    let text = "{ a: ".repeat(20_000);
    assert!(syntax_errors(Path::new("a.js"), &text).is_some_and(|errors| !errors.is_empty()));
}

#[test]
fn the_largest_file_checked_parses_whatever_it_nests() {
    // 4 MiB of the worst nesting found needed up to 256 MiB of stack; 1 MiB in short runs.
    let bytes = tackle_diagnostics::syntax::MAX_TEXT_BYTES / if deep() { 1 } else { 4 };
    let text = "{a:".repeat(bytes / 3 - 1);
    assert!(syntax_errors(Path::new("a.js"), &text).is_some());
}
