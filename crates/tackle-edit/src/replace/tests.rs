//! Table-driven tests for the replace ladder, plus a property test for the exact path.

use proptest::prelude::*;

use super::{EditError, Strategy, replace};

/// What a case expects.
enum Expect {
    /// Success: content, strategy, replacements, first line.
    Ok(&'static str, Strategy, usize, usize),
    /// Ambiguity at these lines.
    Ambiguous(&'static [usize]),
    /// Not found, with the closest region at these lines (or none).
    NotFound(Option<(usize, usize)>),
    Empty,
    NoChange,
    /// Refused: the file's trailing mark on this line has no clear place in `new`.
    UnclearMark(usize),
}

struct Case {
    name: &'static str,
    content: &'static str,
    old: &'static str,
    new: &'static str,
    all: bool,
    expect: Expect,
}

const fn case(
    name: &'static str,
    content: &'static str,
    old: &'static str,
    new: &'static str,
    all: bool,
    expect: Expect,
) -> Case {
    Case {
        name,
        content,
        old,
        new,
        all,
        expect,
    }
}

use Expect::*;
use Strategy::*;

const FN_RUN: &str =
    "fn run() {\n    let a = 1;\n    let b = 2;\n    let c = 3;\n    call(a, b, c);\n}\n";
const FN_TOTAL: &str = "fn total(items: &[u32]) -> u32 {\n    let mut sum = 0;\n    for i in items { sum += i; }\n    sum\n}\n";
const FN_SIX: &str =
    "fn a() {\n    one();\n    two();\n    three();\n    four();\n    five();\n    six();\n}\n";
const TEN: &str = "line one\nline two\nline three\nline four\nlet total = compute(alpha, beta);\nprintln!(\"{}\", total);\nline seven\nline eight\nline nine\nline ten\n";

const CASES: &[Case] = &[
    // Simple, counts, ambiguity.
    case(
        "simple single line",
        "a\nb\nc\n",
        "b",
        "B",
        false,
        Ok("a\nB\nc\n", Simple, 1, 2),
    ),
    case(
        "simple multi-line with trailing newline",
        "fn a() {\n    x();\n}\n",
        "    x();\n",
        "    y();\n    z();\n",
        false,
        Ok("fn a() {\n    y();\n    z();\n}\n", Simple, 1, 2),
    ),
    case(
        "simple mid-line",
        "let v = old_name + 1;",
        "old_name",
        "new_name",
        false,
        Ok("let v = new_name + 1;", Simple, 1, 1),
    ),
    case(
        "simple deletion",
        "keep\ndrop\nkeep\n",
        "drop\n",
        "",
        false,
        Ok("keep\nkeep\n", Simple, 1, 2),
    ),
    case(
        "replace_all three",
        "x y x z x",
        "x",
        "w",
        true,
        Ok("w y w z w", MultiOccurrence, 3, 1),
    ),
    case(
        "replace_all across lines",
        "a\nfoo\nb\nfoo\nfoo\n",
        "foo",
        "bar",
        true,
        Ok("a\nbar\nb\nbar\nbar\n", MultiOccurrence, 3, 2),
    ),
    case(
        "replace_all single occurrence is simple",
        "one two",
        "two",
        "2",
        true,
        Ok("one 2", Simple, 1, 1),
    ),
    case(
        "ambiguous exact lists lines",
        "foo\nbar\nfoo\n",
        "foo",
        "x",
        false,
        Ambiguous(&[1, 3]),
    ),
    case(
        "ambiguous three places",
        "use a;\nfn f() {}\nuse a;\n\nuse a;\n",
        "use a;",
        "use b;",
        false,
        Ambiguous(&[1, 3, 5]),
    ),
    case(
        "overlapping occurrences counted",
        "aaa",
        "aa",
        "b",
        false,
        Ambiguous(&[1, 1]),
    ),
    case(
        "overlapping newlines ambiguous",
        "x\n\n\ny",
        "\n\n",
        "\n",
        false,
        Ambiguous(&[1, 2]),
    ),
    case(
        "overlapping replace_all is leftmost non-overlapping",
        "aaa",
        "aa",
        "b",
        true,
        Ok("ba", MultiOccurrence, 1, 1),
    ),
    // Verbatim insertion, unicode, degenerate input.
    case(
        "dollar patterns inserted verbatim",
        "log(\"done\");",
        "log(\"done\");",
        "log(\"$& ok $1 $$ $` $'\");",
        false,
        Ok("log(\"$& ok $1 $$ $` $'\");", Simple, 1, 1),
    ),
    case(
        "unicode exact",
        "let s = \"héllo wörld\";\nlet t = 1;\n",
        "héllo wörld",
        "日本語 🦀",
        false,
        Ok("let s = \"日本語 🦀\";\nlet t = 1;\n", Simple, 1, 1),
    ),
    case(
        "unicode whitespace-normalized",
        "    名前 = 1\n",
        "名前  =  1",
        "名前 = 2",
        false,
        Ok("    名前 = 2\n", WhitespaceNormalized, 1, 1),
    ),
    case(
        "unicode indentation-flexible",
        "fn f() {\n    let ç = \"ü\";\n    ç.len()\n}\n",
        "let ç = \"ü\";\nç.len()",
        "let ç = \"🦀\";\nç.len()",
        false,
        Ok(
            "fn f() {\n    let ç = \"🦀\";\n    ç.len()\n}\n",
            IndentationFlexible,
            1,
            2,
        ),
    ),
    case("empty old", "abc", "", "x", false, Empty),
    case("no change", "abc", "b", "b", false, NoChange),
    case(
        "whitespace-only old not found",
        "abc",
        " ",
        "x",
        false,
        NotFound(None),
    ),
    case(
        "whitespace-only old never fuzzy",
        "a\n\tb\n",
        "  ",
        "x",
        false,
        NotFound(None),
    ),
    // Indentation-flexible.
    case(
        "indentation shift re-indents new",
        "fn main() {\n    if x {\n        y();\n    }\n}\n",
        "if x {\n    y();\n}",
        "if x {\n    z();\n    w();\n}",
        false,
        Ok(
            "fn main() {\n    if x {\n        z();\n        w();\n    }\n}\n",
            IndentationFlexible,
            1,
            2,
        ),
    ),
    case(
        "three-space old against four-space file",
        "def f():\n    a = 1\n    b = 2\n",
        "   a = 1\n   b = 2\n",
        "   a = 10\n   b = 20\n",
        false,
        Ok(
            "def f():\n    a = 10\n    b = 20\n",
            IndentationFlexible,
            1,
            2,
        ),
    ),
    case(
        "tab-indented file",
        "\tif x {\n\t\ty()\n\t}\n",
        "if x {\n\ty()\n}",
        "if x {\n\tz()\n}",
        false,
        Ok("\tif x {\n\t\tz()\n\t}\n", IndentationFlexible, 1, 1),
    ),
    case(
        "trailing spaces ignored",
        "  a();   \n  b();\n",
        "a();\nb();",
        "c();\nd();",
        false,
        Ok("  c();\n  d();\n", IndentationFlexible, 1, 1),
    ),
    case(
        "replace_all indentation-flexible",
        "    a();\n    b();\n\ta();\n\tb();\n",
        "  a();\n  b();\n",
        "  c();\n",
        true,
        Ok("    c();\n\tc();\n", IndentationFlexible, 2, 1),
    ),
    case(
        "ambiguous indentation-flexible",
        "    a();\n    b();\n\ta();\n\tb();\n",
        "  a();\n  b();\n",
        "  c();\n",
        false,
        Ambiguous(&[1, 3]),
    ),
    // Line-trimmed.
    case(
        "relative indentation differs",
        "    if a {\n        b();\n    }\n",
        "if a {\n  b();\n}",
        "if a {\n  c();\n}",
        false,
        Ok("    if a {\n        c();\n    }\n", LineTrimmed, 1, 1),
    ),
    case(
        "flattened block",
        "x\nif a {\n    b();\n}\ny\n",
        "if a {\nb();\n}\n",
        "if a {\nc();\n}\n",
        false,
        Ok("x\nif a {\nc();\n}\ny\n", LineTrimmed, 1, 2),
    ),
    // Trimmed boundary.
    case(
        "boundary spaces",
        "let x = compute(a, b);\n",
        "  compute(a, b)  ",
        "  compute(b, a)  ",
        false,
        Ok("let x = compute(b, a);\n", TrimmedBoundary, 1, 1),
    ),
    case(
        "boundary blank lines",
        "a\nb\nc",
        "\n\nb\n\n",
        "\n\nB\n\n",
        false,
        Ok("a\nB\nc", TrimmedBoundary, 1, 2),
    ),
    // Whitespace-normalized.
    case(
        "inner whitespace single line",
        "let  x =   5;\n",
        "let x = 5;",
        "let x = 6;",
        false,
        Ok("let x = 6;\n", WhitespaceNormalized, 1, 1),
    ),
    case(
        "inner whitespace multi-line",
        "a  =  1\nb  =  2\n",
        "a = 1\nb = 2",
        "a = 3\nb = 4",
        false,
        Ok("a = 3\nb = 4\n", WhitespaceNormalized, 1, 1),
    ),
    case(
        "inner whitespace inside a line",
        "call(foo,   bar) + 1\n",
        "foo, bar",
        "baz",
        false,
        Ok("call(baz) + 1\n", WhitespaceNormalized, 1, 1),
    ),
    case(
        "whitespace variants are ambiguous",
        "alpha   beta\nalpha\tbeta\n",
        "alpha beta",
        "gamma",
        false,
        Ambiguous(&[1, 2]),
    ),
    // Escape-normalized.
    case(
        "escaped quotes",
        "print(\"hi\")\n",
        "print(\\\"hi\\\")",
        "print(\"bye\")",
        false,
        Ok("print(\"bye\")\n", EscapeNormalized, 1, 1),
    ),
    case(
        "escaped newline",
        "a\nb\n",
        "a\\nb",
        "c",
        false,
        Ok("c\n", EscapeNormalized, 1, 1),
    ),
    // Line-normalized: a trailing `;`/`,` drift and blank lines that differ in number.
    case(
        "missing semicolons keep the file's",
        "fn run() {\n    let a = 1;\n    go(a);\n}\n",
        "fn run() {\n    let a = 1\n    go(a)\n}",
        "fn run() {\n    let a = 1\n    go(a + 1);\n}",
        false,
        Ok(
            "fn run() {\n    let a = 1;\n    go(a + 1);\n}\n",
            LineNormalized,
            1,
            1,
        ),
    ),
    case(
        "an extra blank line in the file is kept",
        "// head\nfn a() {\n    let x = 1;\n\n    x + 1\n}\n",
        "fn a() {\n    let x = 1;\n    x + 1\n}",
        "fn a() {\n    let x = 2;\n    x + 1\n}",
        false,
        Ok(
            "// head\nfn a() {\n    let x = 2;\n\n    x + 1\n}\n",
            LineNormalized,
            1,
            2,
        ),
    ),
    case(
        "a blank line only in the quote",
        "a = 1\nb = 2\n",
        "a = 1\n\nb  =  2\n",
        "a = 1\n\nb = 3\n",
        false,
        Ok("a = 1\nb = 3\n", LineNormalized, 1, 1),
    ),
    // What the line-normalized rung ignored is given back on the lines the model changed.
    case(
        "a dropped trailing comma survives on the changed line (issue 26)",
        "items = [\n    'alpha',\n    'beta',\n    'delta',\n]\n",
        "    'beta'\n",
        "    'gamma'\n",
        false,
        Ok(
            "items = [\n    'alpha',\n    'gamma',\n    'delta',\n]\n",
            LineNormalized,
            1,
            3,
        ),
    ),
    case(
        "dropped commas survive on kept and changed lines alike",
        "items = [\n    'alpha',\n    'beta',\n    'delta',\n]\n",
        "'alpha'\n'beta'",
        "'alpha'\n'gamma'",
        false,
        Ok(
            "items = [\n    'alpha',\n    'gamma',\n    'delta',\n]\n",
            LineNormalized,
            1,
            2,
        ),
    ),
    case(
        "a semicolon the file lacks is not added to the changed line",
        "let a = 1\nlet b = 2\n",
        "let a = 1;\nlet b = 2;",
        "let a = 1;\nlet b = 3;",
        false,
        Ok("let a = 1\nlet b = 3\n", LineNormalized, 1, 1),
    ),
    case(
        "a changed line that gained a line keeps the mark on the line most like it",
        "call(a);\nnext(b);\n",
        "call(a)\nnext(b);",
        "call(a, 2)\nlog(a);\nnext(b);",
        false,
        Ok("call(a, 2);\nlog(a);\nnext(b);\n", LineNormalized, 1, 1),
    ),
    case(
        "a dropped comma with no clear line to return to is refused",
        "items = [\n    'beta',\n    'delta',\n]\n",
        "    'beta'\n    'delta',\n",
        "    'b1'\n    'b2'\n    'delta',\n",
        false,
        UnclearMark(2),
    ),
    // Quote-normalized: typographic quotes in the file against ASCII quotes in the quote.
    case(
        "typographic apostrophe kept on the text the model left (issue 26)",
        "say(\"don\u{2019}t stop\")\n",
        "don't stop",
        "don't go",
        false,
        Ok("say(\"don\u{2019}t go\")\n", QuoteNormalized, 1, 1),
    ),
    case(
        "typographic double quotes kept around changed text",
        "msg = \u{201C}hello\u{201D}\nnext()\n",
        "msg = \"hello\"\nnext()",
        "msg = \"hello, world\"\nnext()",
        false,
        Ok(
            "msg = \u{201C}hello, world\u{201D}\nnext()\n",
            QuoteNormalized,
            1,
            1,
        ),
    ),
    case(
        "ASCII quotes in the file are kept against typographic ones quoted",
        "x = 'a'\n",
        "x = \u{2018}a\u{2019}",
        "x = \u{2018}b\u{2019}",
        false,
        Ok("x = 'b'\n", QuoteNormalized, 1, 1),
    ),
    case(
        "a quote-normalized match inside an identifier is refused",
        "don\u{2019}tstop\n",
        "n't",
        "x",
        false,
        NotFound(None),
    ),
    case(
        "ambiguous quote-normalized matches",
        "\u{2018}a\u{2019} \u{2018}a\u{2019}\n",
        "'a'",
        "'b'",
        false,
        Ambiguous(&[1, 1]),
    ),
    case(
        "comma against semicolon is refused",
        "call(a);\nnext(b);\n",
        "call(a),\nnext(b);",
        "x",
        false,
        NotFound(Some((1, 2))),
    ),
    case(
        "ambiguous normalized blocks",
        "f(a);\ng(b);\nf(a);\ng(b);\n",
        "f(a)\ng(b)",
        "h()",
        false,
        Ambiguous(&[1, 3]),
    ),
    // Matches the old ladder accepted and the safety law refuses.
    case(
        "half the middle lines equal is refused",
        FN_RUN,
        "fn run() {\n    let a = 1;\n    let b = 2;\n    totally_other_thing();\n    something_else_here(1, 2);\n}",
        "fn run() {\n    go();\n}",
        false,
        NotFound(Some((1, 6))),
    ),
    case(
        "similar middle lines are refused",
        FN_TOTAL,
        "fn total(items: &[u32]) -> u32 {\n    let mut summ = 0;\n    for i in items { summ += i; }\n    summ\n}",
        "fn total(items: &[u32]) -> u32 {\n    items.iter().sum()\n}",
        false,
        NotFound(Some((1, 5))),
    ),
    case(
        "one extra non-blank line in the file is refused",
        "// head\nfn a() {\n    let x = 1;\n    log(x);\n    x + 1\n}\n",
        "fn a() {\n    let x = 1;\n    x + 1\n}",
        "fn a() {\n    2\n}",
        false,
        NotFound(Some((2, 5))),
    ),
    case(
        "whitespace match inside an identifier is refused",
        "let vmax  = 50;\n",
        "max = 5",
        "max = 6",
        false,
        NotFound(None),
    ),
    case(
        "trimmed match inside an identifier is refused",
        "let vmax = 50;\n",
        " max = 5 ",
        "max = 6",
        false,
        NotFound(None),
    ),
    case(
        "whitespace match on token boundaries is kept",
        "let max  = 5;\n",
        "max = 5",
        "max = 6",
        false,
        Ok("let max = 6;\n", WhitespaceNormalized, 1, 1),
    ),
    case(
        "escaped newlines unescape newString too",
        "first();\nsecond();\n",
        "first();\\nsecond();",
        "first();\\nthird();",
        false,
        Ok("first();\nthird();\n", EscapeNormalized, 1, 1),
    ),
    // Refusals.
    case(
        "disproportionate block refused",
        FN_SIX,
        "fn a() {\n    one();\n}",
        "fn a() {}",
        false,
        NotFound(Some((1, 3))),
    ),
    case(
        "unrelated middle refused",
        "fn a() {\n    launch_missiles(now);\n}\n",
        "fn a() {\n    let total = compute(1, 2);\n}",
        "fn a() {}",
        false,
        NotFound(Some((1, 3))),
    ),
    case(
        "punctuation anchors refused",
        "{\n  alpha\n}\n",
        "{\n  omega\n}",
        "{}",
        false,
        NotFound(Some((1, 3))),
    ),
    // Line-number prefixes.
    case(
        "read prefix stripped from both",
        "def f():\n    return 1\n",
        "     2\t    return 1",
        "     2\t    return 2",
        false,
        Ok("def f():\n    return 2\n", Simple, 1, 2),
    ),
    case(
        "read prefix stripped from old only",
        "def f():\n    return 1\n",
        "     1\tdef f():\n     2\t    return 1\n",
        "def f():\n    return 2\n",
        false,
        Ok("def f():\n    return 2\n", Simple, 1, 1),
    ),
    case(
        "colon prefixes",
        "a\nb\n",
        "1: a\n2: b",
        "1: x\n2: y",
        false,
        Ok("x\ny\n", Simple, 1, 1),
    ),
    case(
        "non-consecutive prefixes kept",
        "a\nb\n",
        "1\ta\n5\tb",
        "x",
        false,
        NotFound(Some((1, 2))),
    ),
    case(
        "content that looks like a prefix matches exactly",
        "12: item\n",
        "12: item",
        "13: item",
        false,
        Ok("13: item\n", Simple, 1, 1),
    ),
    // Not found.
    case(
        "closest region has the right lines",
        TEN,
        "let total = compute(alpha, gamma);\nprintln!(\"{}\", totals);",
        "x",
        false,
        NotFound(Some((5, 6))),
    ),
    case(
        "tab versus spaces with a changed line",
        "def foo(self):\n\treturn 1\n",
        "def foo(self):\n    return 2",
        "x",
        false,
        NotFound(Some((1, 2))),
    ),
    case(
        "nothing resembles",
        "aaa\n",
        "zzz qqq",
        "x",
        false,
        NotFound(None),
    ),
];

#[test]
fn table() {
    assert!(CASES.len() >= 40, "only {} cases", CASES.len());
    let mut failures = Vec::new();
    for c in CASES {
        let got = replace(c.content, c.old, c.new, c.all);
        let ok = match (&c.expect, &got) {
            (Ok(content, strategy, n, line), Result::Ok(r)) => {
                r.content == *content
                    && r.strategy == *strategy
                    && r.replacements == *n
                    && r.first_line == *line
            }
            (Ambiguous(lines), Err(EditError::Ambiguous { lines: got })) => got == lines,
            (NotFound(None), Err(EditError::NotFound { closest: None })) => true,
            (NotFound(Some((a, b))), Err(EditError::NotFound { closest: Some(c) })) => {
                c.first_line == *a && c.last_line == *b && c.similarity > 0.0 && c.similarity < 1.0
            }
            (Empty, Err(EditError::EmptyOld)) => true,
            (UnclearMark(at), Err(EditError::UnclearMark { line, .. })) => line == at,
            (NoChange, Err(EditError::NoChange)) => true,
            _ => false,
        };
        if !ok {
            failures.push(format!("{}: got {got:?}", c.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn escaped_old_with_a_mixed_new_is_refused() {
    let content = "say(\"hi\");\nnext();\n";
    // oldString escapes quotes and the newline; newString has a raw newline and escaped quotes.
    let e = replace(
        content,
        "say(\\\"hi\\\");\\nnext();",
        "say(\\\"bye\\\");\nnext();",
        false,
    )
    .unwrap_err();
    assert_eq!(e, EditError::MixedEscapes);
    assert!(e.to_string().contains("Nothing was changed"), "{e}");
    // A newString with no escapes at all is written as given.
    let r = replace(content, "say(\\\"hi\\\");", "say(\"bye\");", false).unwrap();
    assert_eq!(r.content, "say(\"bye\");\nnext();\n");
}

#[test]
fn a_misremembered_middle_line_is_refused_not_rewritten() {
    // spec: LAW-TOLERANT-MATCH
    let content = "alpha();\nreal_middle();\ngamma();\ndelta();\n";
    let quote = "alpha();\nimagined_middle();\ngamma();\ndelta();";
    let new = "alpha();\nimagined_middle();\ngamma();\nomega();";
    let Err(EditError::NotFound { closest: Some(c) }) = replace(content, quote, new, false) else {
        panic!("expected a refusal with the closest region");
    };
    assert_eq!((c.first_line, c.last_line), (1, 4));
    assert!(c.diff.contains("+real_middle();"), "{}", c.diff);
}

#[test]
fn lines_the_model_did_not_change_keep_the_file_bytes() {
    // The quote drifts in whitespace and semicolons; only the changed line takes new's text.
    let content = "fn f() {\n\tlet  a = 1;\n\tlet b = 2;\n\tuse_it(a, b);\n}\n";
    let quote = "fn f() {\n    let a = 1\n    let b = 2\n    use_it(a, b)\n}";
    let new = "fn f() {\n    let a = 1\n    let b = 3;\n    use_it(a, b)\n}";
    let r = replace(content, quote, new, false).unwrap();
    assert_eq!(r.strategy, LineNormalized);
    assert_eq!(
        r.content,
        "fn f() {\n\tlet  a = 1;\n\tlet b = 3;\n\tuse_it(a, b);\n}\n"
    );
}

#[test]
fn an_unclear_mark_says_what_differed_and_nothing_changed() {
    let e = replace(
        "items = [\n    'beta',\n]\n",
        "    'beta'\n",
        "    'b1'\n    'b2'\n",
        false,
    )
    .unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("line 2") && message.contains("`'beta',`") && message.contains("`'beta'`"),
        "{message}"
    );
    assert!(message.contains("Nothing was changed"), "{message}");
}

#[test]
fn replace_all_keeps_each_span_s_own_quotes() {
    let content = "a(\u{2018}x\u{2019})\nb(\u{201B}x')\n";
    let r = replace(content, "('x')", "('y')", true).unwrap();
    assert_eq!((r.strategy, r.replacements), (QuoteNormalized, 2));
    assert_eq!(r.content, "a(\u{2018}y\u{2019})\nb(\u{201B}y')\n");
    let r = replace(content, "x", "y", true).unwrap();
    assert_eq!(r.strategy, MultiOccurrence);
}

#[test]
fn splices_describe_every_replacement() {
    let content = "a x\nb\nx c\n";
    let r = replace(content, "x", "yy", true).unwrap();
    assert_eq!(r.replacements, 2);
    for s in &r.splices {
        assert_eq!(&content[s.old.clone()], "x");
        assert_eq!(&r.content[s.new.clone()], "yy");
    }
    assert_eq!(r.splices.len(), 2);
}

#[test]
fn prefix_stripping_is_reported() {
    let r = replace("a\nb\n", "1\ta\n2\tb", "1\tx\n2\ty", false).unwrap();
    assert!(r.stripped_line_numbers);
    assert_eq!(r.content, "x\ny\n");
    let r = replace("a\nb\n", "a\nb", "x", false).unwrap();
    assert!(!r.stripped_line_numbers);
}

#[test]
fn ambiguous_message_teaches() {
    let e = replace("x\nx\nx\n", "x", "y", false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "oldString matches 3 places (lines 1, 2, 3). Include more surrounding lines to make it \
         unique, or set replaceAll."
    );
}

#[test]
fn not_found_message_shows_region_and_visible_whitespace() {
    let e = replace(
        "def foo(self):\n\treturn 1\n",
        "def foo(self):\n    return 2",
        "x",
        false,
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("oldString was not found in the file. The closest region is lines 1-2"),
        "{msg}"
    );
    assert!(msg.contains("→return 1"), "{msg}");
    assert!(msg.contains("-    return 2"), "{msg}");
    assert!(msg.ends_with("Copy the exact text from a fresh read of the file and try again."));
    assert!(msg.len() <= 2048);
    let none = replace("aaa", "zzz", "x", false).unwrap_err().to_string();
    assert!(none.contains("no region resembles it"), "{none}");
}

#[test]
fn not_found_diff_is_bounded() {
    let content: String = (0..500)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    let old: String = (0..300)
        .map(|i| format!("lime {i} of the fill\n"))
        .collect();
    let Err(EditError::NotFound { closest: Some(c) }) = replace(&content, &old, "x", false) else {
        panic!("expected a closest region");
    };
    assert!(c.diff.len() <= 2100, "{}", c.diff.len());
}

#[test]
fn forty_line_old_against_four_hundred_line_span_is_refused() {
    let body = |n: usize| {
        (0..n)
            .map(|i| format!("    step_{i}();\n"))
            .collect::<String>()
    };
    let content = format!("fn big() {{\n{}}}\n", body(398));
    let old = format!("fn big() {{\n{}}}\n", body(38).replace("step", "stage"));
    assert!(matches!(
        replace(&content, &old, "fn big() {}\n", false),
        Err(EditError::NotFound { .. })
    ));
}

#[test]
fn bytes_outside_the_span_are_untouched() {
    let prefix = "# header\r\n\tkeep  \n";
    let suffix = "\n# footer  \t\n";
    let content = format!("{prefix}def f():\n    a = 1\n    b = 2{suffix}");
    let r = replace(&content, "   a = 1\n   b = 2", "   a = 3\n   b = 4", false).unwrap();
    assert_eq!(r.strategy, IndentationFlexible);
    assert!(r.content.starts_with(&format!("{prefix}def f():\n")));
    assert!(r.content.ends_with(suffix));
}

#[test]
fn strategy_names_are_stable() {
    let names: Vec<&str> = Strategy::LADDER.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "simple",
            "indentation_flexible",
            "line_trimmed",
            "trimmed_boundary",
            "whitespace_normalized",
            "escape_normalized",
            "quote_normalized",
            "line_normalized",
            "multi_occurrence"
        ]
    );
    assert!(Simple.is_exact() && MultiOccurrence.is_exact() && !LineNormalized.is_exact());
}

proptest! {
    #[test]
    fn unique_exact_substring_uses_simple(
        content in "[a-c \n\t{}é]{1,80}",
        start in 0usize..80,
        len in 1usize..12,
        new in "[a-d\n$&]{0,10}",
    ) {
        let chars: Vec<char> = content.chars().collect();
        let start = start % chars.len();
        let end = (start + len).min(chars.len());
        let old: String = chars[start..end].iter().collect();
        let occurrences = (0..content.len())
            .filter(|&i| content.is_char_boundary(i) && content[i..].starts_with(&old))
            .count();
        prop_assume!(occurrences == 1 && old != new);
        let r = replace(&content, &old, &new, false).unwrap();
        prop_assert_eq!(r.strategy, Simple);
        prop_assert_eq!(r.replacements, 1);
        prop_assert_eq!(r.content, content.replacen(&old, &new, 1));
    }
}
