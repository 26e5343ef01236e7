//! Tree-sitter syntax checks: the parse errors a change put into a file.
//!
//! A language server catches a broken file, but not every machine has one, and one may be slow to
//! start. A parse error is the cheapest mistake to catch and the most expensive to leave, because
//! every later edit builds on it. So after a file tool changes a file, tackle parses the new text
//! with a tree-sitter grammar linked into the binary and reports the parse errors the change
//! introduced. Tree-sitter recovers from errors and marks them in the tree as `ERROR` nodes
//! (text it could not fit) and `MISSING` nodes (a token it had to invent); [`syntax_errors`]
//! turns each outermost one into a [`SyntaxError`] with a 1-based line and column.
//! [`introduced_syntax_errors`] then removes errors the file already had, matching them by
//! message and line text rather than position, so a line added above an old error does not make
//! that error look new. The check is bounded: large files are not parsed and at most
//! [`MAX_ERRORS`] errors are reported. It is a syntax check only; names, types and everything else
//! a compiler knows are left to language servers.

use std::collections::HashMap;
use std::path::Path;

use tree_sitter::{Language, Node, Parser, Tree};

/// The most errors [`syntax_errors`] and [`introduced_syntax_errors`] report.
pub const MAX_ERRORS: usize = 50;

/// The largest text, in bytes, that is parsed (4 MiB).
pub const MAX_TEXT_BYTES: usize = 4 * 1024 * 1024;

/// How many errors a text may have before [`introduced_syntax_errors`] stops matching them.
/// It is larger than [`MAX_ERRORS`], so an old error past the report limit still finds its match.
const MATCH_LIMIT: usize = 20 * MAX_ERRORS;

/// The most characters of an unexpected node's text quoted in a message.
const SNIPPET_CHARS: usize = 30;

/// A grammar linked in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grammar {
    /// Rust (`.rs`).
    Rust,
    /// TypeScript (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    /// JavaScript, JSX included (`.js`, `.mjs`, `.cjs`, `.jsx`).
    JavaScript,
    /// Python (`.py`, `.pyi`).
    Python,
    /// Go (`.go`).
    Go,
    /// JSON (`.json`; not `.jsonc`).
    Json,
    /// Bash (`.sh`, `.bash`).
    Bash,
}

impl Grammar {
    /// The grammar for a path, chosen by its extension (ignoring ASCII case).
    pub fn for_path(path: &Path) -> Option<Grammar> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        let grammar = match extension.as_str() {
            "rs" => Grammar::Rust,
            "ts" | "mts" | "cts" => Grammar::TypeScript,
            "tsx" => Grammar::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Grammar::JavaScript,
            "py" | "pyi" => Grammar::Python,
            "go" => Grammar::Go,
            "json" => Grammar::Json,
            "sh" | "bash" => Grammar::Bash,
            _ => return None,
        };
        Some(grammar)
    }

    /// The language's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Grammar::Rust => "Rust",
            Grammar::TypeScript => "TypeScript",
            Grammar::Tsx => "TSX",
            Grammar::JavaScript => "JavaScript",
            Grammar::Python => "Python",
            Grammar::Go => "Go",
            Grammar::Json => "JSON",
            Grammar::Bash => "Bash",
        }
    }

    /// The tree-sitter language.
    fn language(self) -> Language {
        match self {
            Grammar::Rust => tree_sitter_rust::LANGUAGE.into(),
            Grammar::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Grammar::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Grammar::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Grammar::Python => tree_sitter_python::LANGUAGE.into(),
            Grammar::Go => tree_sitter_go::LANGUAGE.into(),
            Grammar::Json => tree_sitter_json::LANGUAGE.into(),
            Grammar::Bash => tree_sitter_bash::LANGUAGE.into(),
        }
    }
}

/// One syntax error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// The 1-based line.
    pub line: u32,
    /// The 1-based column, counted in chars.
    pub column: u32,
    /// What is wrong, e.g. "Syntax error: unexpected `)`" or "Syntax error: missing `;`".
    pub message: String,
}

/// Every syntax error in `text`, in file order, or `None` when no grammar applies to the path.
///
/// At most [`MAX_ERRORS`] errors are reported. Text larger than [`MAX_TEXT_BYTES`] is not parsed
/// (`None`). An error inside another error is part of it and not reported separately. A leading
/// byte-order mark is skipped, so positions are those an editor shows.
pub fn syntax_errors(path: &Path, text: &str) -> Option<Vec<SyntaxError>> {
    let found = located_errors(path, text, MAX_ERRORS)?;
    Some(found.into_iter().map(|located| located.error).collect())
}

/// The errors in `after` that `before` did not have (`before` None = new file: all errors).
///
/// Errors are matched by what they say and the line they are on, not by line number: each error
/// is keyed by its message and the trimmed text of its line, and an error in `after` is old when
/// an error in `before` has the same key. Matching is a multiset: each error in `before`
/// matches at most one error in `after`, so a second copy of an old mistake is reported. Lines
/// added or removed elsewhere therefore do not make an old error look new, while an error whose
/// line the change edited is reported even if it was there before (the change touched it).
///
/// When `before` cannot be checked (it is too large) every error in `after` is reported, as for
/// a new file. No grammar for the path, or an `after` too large to parse, gives no errors. At
/// most [`MAX_ERRORS`] errors are reported.
pub fn introduced_syntax_errors(
    path: &Path,
    before: Option<&str>,
    after: &str,
) -> Vec<SyntaxError> {
    let Some(after_errors) = located_errors(path, after, MATCH_LIMIT) else {
        return Vec::new();
    };
    let before_errors = before
        .and_then(|before| located_errors(path, before, MATCH_LIMIT))
        .unwrap_or_default();
    let mut old: HashMap<(&str, &str), usize> = HashMap::new();
    for located in &before_errors {
        *old.entry(located.key()).or_default() += 1;
    }
    let mut introduced = Vec::new();
    for located in &after_errors {
        match old.get_mut(&located.key()) {
            Some(count) if *count > 0 => *count -= 1,
            _ => introduced.push(located.error.clone()),
        }
        if introduced.len() == MAX_ERRORS {
            break;
        }
    }
    introduced
}

/// A syntax error with the trimmed text of its line, the key for matching across versions.
struct Located<'a> {
    error: SyntaxError,
    line_text: &'a str,
}

impl Located<'_> {
    fn key(&self) -> (&str, &str) {
        (self.error.message.as_str(), self.line_text)
    }
}

/// Up to `limit` errors in `text` (`None` when no grammar applies or the text is too large).
fn located_errors<'a>(path: &Path, text: &'a str, limit: usize) -> Option<Vec<Located<'a>>> {
    let grammar = Grammar::for_path(path)?;
    if text.len() > MAX_TEXT_BYTES {
        return None;
    }
    // Editors do not count a byte-order mark, and grammars do not expect one.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let tree = parse(grammar, text)?;
    Some(collect_errors(&tree, text, limit))
}

/// The stack of a parse thread: this much, plus [`PARSE_STACK_PER_BYTE`] per byte parsed.
const PARSE_STACK_BASE: usize = 16 * 1024 * 1024;

/// tree-sitter frees its parse stack recursively, one frame per stack entry, and an unclosed
/// nesting leaves one entry per token: 4 MiB of `{a:` in JavaScript needed between 128 and
/// 256 MiB. A token takes at least a byte, so twice that per byte is always enough. The memory
/// is reserved, and only what the parse touches is used.
const PARSE_STACK_PER_BYTE: usize = 128;

/// The tree for `text`, or `None` if the grammar cannot be loaded or the parse did not finish.
///
/// The parse runs on a thread of its own with a stack sized for `text`, so no file can
/// overflow it.
fn parse(grammar: Grammar, text: &str) -> Option<Tree> {
    let stack = PARSE_STACK_BASE + PARSE_STACK_PER_BYTE * text.len();
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("tackle-syntax".to_owned())
            .stack_size(stack)
            .spawn_scoped(scope, || parse_here(grammar, text))
            .ok()?
            .join()
            .ok()?
    })
}

/// [`parse`] on the current thread; the parser, and its stack, are dropped here too.
fn parse_here(grammar: Grammar, text: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    // A grammar built for an incompatible tree-sitter is skipped rather than trusted.
    parser.set_language(&grammar.language()).ok()?;
    parser.parse(text, None)
}

/// The outermost `ERROR` and `MISSING` nodes of the tree, in order, up to `limit`.
///
/// The walk uses a cursor, so deep trees do not deepen the stack, and it enters only subtrees
/// that contain an error.
fn collect_errors<'a>(tree: &Tree, text: &'a str, limit: usize) -> Vec<Located<'a>> {
    let mut found: Vec<Located<'a>> = Vec::new();
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        let error = if node.is_error() {
            Some(unexpected(node, text))
        } else if node.is_missing() {
            Some(missing(node))
        } else {
            None
        };
        if let Some(message) = error {
            let located = locate(node, text, message);
            // Two nodes at one place saying the same thing are one error.
            let repeated = found.last().is_some_and(|last| last.error == located.error);
            if !repeated {
                found.push(located);
                if found.len() >= limit {
                    break;
                }
            }
        } else if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        // Move to the next subtree: a sibling, or the sibling of the nearest ancestor that has one.
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return found;
            }
        }
    }
    found
}

/// The message for an `ERROR` node: the start of its text, on one line.
fn unexpected(node: Node<'_>, text: &str) -> String {
    let source = text.get(node.byte_range()).unwrap_or_default();
    let snippet = snippet(source);
    if snippet.is_empty() {
        // An empty or blank error node names no text; say where it is instead.
        let at_end = text
            .get(node.end_byte()..)
            .is_none_or(|rest| rest.trim().is_empty());
        let what = if at_end { "end of input" } else { "text" };
        return format!("Syntax error: unexpected {what}");
    }
    format!("Syntax error: unexpected {}", code(&snippet))
}

/// The first [`SNIPPET_CHARS`] characters of `source` with each run of whitespace made one space,
/// and `…` when there is more. It reads only as far as it needs, as an error may span the file.
fn snippet(source: &str) -> String {
    let mut snippet = String::new();
    let mut count = 0;
    let mut space = false;
    for c in source.chars() {
        if c.is_whitespace() {
            space = count > 0;
            continue;
        }
        let width = if space { 2 } else { 1 };
        if count + width > SNIPPET_CHARS {
            snippet.push('…');
            break;
        }
        if space {
            snippet.push(' ');
            space = false;
        }
        snippet.push(c);
        count += width;
    }
    snippet
}

/// The message for a `MISSING` node: the token the parser had to invent.
fn missing(node: Node<'_>) -> String {
    let kind = node.kind();
    if node.is_named() {
        format!("Syntax error: missing {kind}")
    } else if let Some(hidden) = kind.strip_prefix('_').filter(|rest| !rest.is_empty()) {
        // A hidden token's kind starts with `_`; it is named by its words.
        format!("Syntax error: missing {}", hidden.replace('_', " "))
    } else {
        format!("Syntax error: missing {}", code(kind))
    }
}

/// Text in Markdown code quotes, with a longer fence when the text holds a backtick.
fn code(text: &str) -> String {
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// The error at the node's start, with its line's text for matching.
fn locate<'a>(node: Node<'_>, text: &'a str, message: String) -> Located<'a> {
    let start = node.start_byte().min(text.len());
    let point = node.start_position();
    // Tree-sitter counts columns in bytes from the last `\n`.
    let line_start = start.saturating_sub(point.column);
    let line_end = text
        .get(line_start..)
        .and_then(|rest| rest.find('\n'))
        .map_or(text.len(), |offset| line_start + offset);
    let before = text.get(line_start..start).unwrap_or_default();
    let line_text = text.get(line_start..line_end).unwrap_or_default().trim();
    Located {
        error: SyntaxError {
            line: to_u32(point.row.saturating_add(1)),
            column: to_u32(before.chars().count().saturating_add(1)),
            message,
        },
        line_text,
    }
}

fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(line: u32, column: u32, message: &str) -> SyntaxError {
        SyntaxError {
            line,
            column,
            message: message.to_owned(),
        }
    }

    fn check(path: &str, text: &str) -> Vec<SyntaxError> {
        syntax_errors(Path::new(path), text).expect("a grammar applies")
    }

    /// Asserts that `valid` parses cleanly and `broken` has exactly `expected`.
    fn valid_and_broken(path: &str, valid: &str, broken: &str, expected: &[SyntaxError]) {
        assert_eq!(check(path, valid), [], "{path}: valid text");
        assert_eq!(check(path, broken), expected, "{path}: broken text");
    }

    #[test]
    fn extensions_choose_grammars() {
        let cases = [
            ("a.rs", Grammar::Rust),
            ("a.ts", Grammar::TypeScript),
            ("a.mts", Grammar::TypeScript),
            ("a.cts", Grammar::TypeScript),
            ("a.tsx", Grammar::Tsx),
            ("a.js", Grammar::JavaScript),
            ("a.mjs", Grammar::JavaScript),
            ("a.cjs", Grammar::JavaScript),
            ("a.jsx", Grammar::JavaScript),
            ("a.py", Grammar::Python),
            ("a.pyi", Grammar::Python),
            ("a.go", Grammar::Go),
            ("a.json", Grammar::Json),
            ("a.sh", Grammar::Bash),
            ("a.bash", Grammar::Bash),
            ("dir/Main.RS", Grammar::Rust),
        ];
        for (path, grammar) in cases {
            assert_eq!(Grammar::for_path(Path::new(path)), Some(grammar), "{path}");
        }
        for path in ["a.jsonc", "a.txt", "Makefile", "a.rs.bak", ".rs"] {
            assert_eq!(Grammar::for_path(Path::new(path)), None, "{path}");
        }
        assert_eq!(Grammar::Tsx.name(), "TSX");
        assert_eq!(Grammar::Json.name(), "JSON");
    }

    #[test]
    fn unknown_extension_gives_none() {
        assert_eq!(syntax_errors(Path::new("notes.txt"), "fn main( {"), None);
        assert_eq!(syntax_errors(Path::new("a.jsonc"), "{,}"), None);
        assert_eq!(syntax_errors(Path::new("README"), "(("), None);
        assert_eq!(
            introduced_syntax_errors(Path::new("notes.txt"), None, "fn main( {"),
            []
        );
    }

    #[test]
    fn rust() {
        valid_and_broken(
            "a.rs",
            "use std::fmt;\n\n/// Doc.\n#[derive(Debug)]\npub struct P<T: fmt::Debug> { x: T }\n\nfn main() {\n    let v: Vec<u8> = vec![1, 2];\n    let f = |a: u8| a + 1;\n    println!(\"{:?}\", v.iter().map(|a| f(*a)).collect::<Vec<_>>());\n}\n",
            "fn main() {\n    foo(1, 2));\n}\n",
            &[err(2, 14, "Syntax error: unexpected `)`")],
        );
    }

    #[test]
    fn rust_missing_token() {
        assert_eq!(
            check("a.rs", "fn main() {\n    let x = 1\n    let y = 2;\n}\n"),
            [err(2, 14, "Syntax error: missing `;`")]
        );
    }

    #[test]
    fn typescript() {
        valid_and_broken(
            "a.ts",
            "interface P { x: number; y?: string }\n\nexport function f<T extends P>(p: T): number {\n  const g = (a: number): number => a * 2;\n  return g(p.x) as number;\n}\n",
            "const x: number = 1;\nconst y = (x;\n",
            &[err(2, 13, "Syntax error: missing `)`")],
        );
    }

    #[test]
    fn typescript_missing_identifier() {
        assert_eq!(
            check(
                "a.ts",
                "function f(x: number): number {\n  return x +;\n}\n"
            ),
            [err(2, 13, "Syntax error: missing identifier")]
        );
    }

    #[test]
    fn tsx() {
        valid_and_broken(
            "a.tsx",
            "type Props = { name: string };\n\nexport function Hello({ name }: Props) {\n  return <div className=\"x\">\n    <b>{name}</b>\n  </div>;\n}\n",
            "const a = <div>\n  <b>hi</b>\n</div>;\nfoo(1, 2));\n",
            &[err(4, 10, "Syntax error: unexpected `)`")],
        );
    }

    #[test]
    fn tsx_and_typescript_are_different_grammars() {
        let jsx = "const a = <div>hi</div>;\n";
        assert_eq!(check("a.tsx", jsx), []);
        assert_ne!(check("a.ts", jsx), []);
    }

    #[test]
    fn javascript() {
        valid_and_broken(
            "a.js",
            "import x from \"./x.js\";\n\nexport async function f(a, ...rest) {\n  const { b = 1 } = await x(a);\n  return [b, ...rest].map((n) => `${n}!`);\n}\n",
            "const a = [1, 2;\n",
            &[err(1, 16, "Syntax error: missing `]`")],
        );
        assert_eq!(check("a.jsx", "const a = <div>{x}</div>;\n"), []);
    }

    #[test]
    fn python() {
        valid_and_broken(
            "a.py",
            "import os\n\n\n@dataclass\nclass P:\n    x: int = 0\n\n    async def f(self, *args, **kw) -> str:\n        return f\"{self.x} {os.sep}\"\n",
            "def f(x):\n    print(x,, 2)\n    return x\n",
            &[err(2, 12, "Syntax error: unexpected `,`")],
        );
    }

    #[test]
    fn go() {
        valid_and_broken(
            "a.go",
            "package main\n\nimport \"fmt\"\n\ntype P struct{ X int }\n\nfunc main() {\n\tfor i := range 3 {\n\t\tfmt.Println(P{X: i})\n\t}\n}\n",
            "package main\n\nfunc main() {\n\tfoo(1, 2))\n}\n",
            &[err(4, 11, "Syntax error: unexpected `)`")],
        );
    }

    #[test]
    fn json() {
        valid_and_broken(
            "a.json",
            "{\n  \"a\": [1, 2.5, -3e2],\n  \"b\": { \"c\": null, \"d\": true },\n  \"e\": \"\\u00e9\"\n}\n",
            "{\n  \"a\": 1,\n  \"b\": 2,\n}\n",
            &[err(3, 9, "Syntax error: unexpected `,`")],
        );
    }

    #[test]
    fn bash() {
        valid_and_broken(
            "a.sh",
            "#!/bin/bash\nset -eu\n\nf() {\n  local x=\"$1\"\n  case \"$x\" in\n    a|b) echo \"${x}\" | tr a b ;;\n    *) return 1 ;;\n  esac\n}\n\nfor y in 1 2; do f \"$y\"; done\n",
            "if [ -f x ]; then\n  echo hi\n",
            &[err(3, 1, "Syntax error: missing `fi`")],
        );
    }

    #[test]
    fn nested_errors_are_reported_once() {
        let text = "fn main() {\n    foo(1));\n    let x = ;\n";
        // The tree really holds an ERROR inside an ERROR.
        let tree = parse(Grammar::Rust, text).expect("parses");
        let mut cursor = tree.walk();
        let mut errors = 0;
        loop {
            errors += usize::from(cursor.node().is_error());
            if cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    break;
                }
            }
            if cursor.node() == tree.root_node() {
                break;
            }
        }
        assert!(errors >= 2, "expected nested ERROR nodes, found {errors}");
        assert_eq!(
            check("a.rs", text),
            [err(
                1,
                1,
                "Syntax error: unexpected `fn main() { foo(1)); let x = ;`"
            )]
        );
    }

    #[test]
    fn snippets_are_one_line_and_short() {
        let errors = check(
            "a.py",
            "def f(:\n    x = [1, 2\n    return some_long_name_here )\n",
        );
        assert_eq!(
            errors,
            [err(
                1,
                1,
                "Syntax error: unexpected `def f(: x = [1, 2 return some_…`"
            )]
        );
        assert_eq!(snippet("  a \n\t b  "), "a b");
        assert_eq!(snippet(&"x".repeat(30)), "x".repeat(30));
        assert_eq!(snippet(&"x".repeat(31)), format!("{}…", "x".repeat(30)));
        assert_eq!(code("a`b"), "`` a`b ``");
    }

    #[test]
    fn crlf_columns_count_chars() {
        let text = "fn main() {\r\n    let é = \"ü\"; )\r\n}\r\n";
        // The `)` is 20 bytes but 17 chars into its line.
        assert_eq!(
            check("a.rs", text),
            [err(2, 18, "Syntax error: unexpected `)`")]
        );
        let lf = text.replace("\r\n", "\n");
        assert_eq!(
            check("a.rs", &lf),
            [err(2, 18, "Syntax error: unexpected `)`")]
        );
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        assert_eq!(check("a.json", "\u{feff}{\"a\": 1}\n"), []);
        assert_eq!(
            check("a.json", "\u{feff}[1,,2]\n"),
            [err(1, 3, "Syntax error: unexpected `,`")]
        );
    }

    #[test]
    fn a_long_valid_file_parses() {
        let text: String = (0..20_000)
            .map(|i| format!("fn f{i}(x: u32) -> u32 {{ x + {i} }}\n"))
            .collect();
        assert_eq!(text.lines().count(), 20_000);
        assert_eq!(check("a.rs", &text), []);
        let broken = format!("{text}fn g() {{ foo(1)); }}\n");
        assert_eq!(
            check("a.rs", &broken),
            [err(20_001, 16, "Syntax error: unexpected `)`")]
        );
    }

    #[test]
    fn a_deeply_nested_file_is_walked() {
        let depth = 20_000;
        let valid = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(check("a.json", &valid), []);
        let broken = format!("{}1,,{}", "[".repeat(depth), "]".repeat(depth));
        let column = u32::try_from(depth).expect("small") + 2;
        assert_eq!(
            check("a.json", &broken),
            [err(1, column, "Syntax error: unexpected `,,`")]
        );
    }

    #[test]
    fn errors_are_capped() {
        let text: String = (0..100)
            .map(|i| format!("fn f{i}() {{ foo(1)); }}\n"))
            .collect();
        let errors = check("a.rs", &text);
        assert_eq!(errors.len(), MAX_ERRORS);
        assert_eq!(errors[0], err(1, 17, "Syntax error: unexpected `)`"));
        assert_eq!(
            introduced_syntax_errors(Path::new("a.rs"), None, &text).len(),
            MAX_ERRORS
        );
    }

    #[test]
    fn large_text_is_not_parsed() {
        let mut text = "fn main() { foo(1)); }\n//".to_owned();
        text.push_str(&"a".repeat(MAX_TEXT_BYTES - text.len()));
        assert_eq!(check("a.rs", &text).len(), 1, "at the limit it is parsed");
        text.push('a');
        assert_eq!(syntax_errors(Path::new("a.rs"), &text), None);
        assert_eq!(introduced_syntax_errors(Path::new("a.rs"), None, &text), []);
    }

    const OLD: &str = "fn main() {\n    foo(1, 2));\n}\n";

    #[test]
    fn an_old_error_that_moved_is_not_introduced() {
        let after = "use std::fmt;\n\nfn main() {\n    foo(1, 2));\n}\n";
        assert_eq!(
            check("a.rs", after),
            [err(4, 14, "Syntax error: unexpected `)`")]
        );
        assert_eq!(
            introduced_syntax_errors(Path::new("a.rs"), Some(OLD), after),
            []
        );
    }

    #[test]
    fn only_a_new_error_is_introduced() {
        let after = "fn main() {\n    foo(1, 2));\n    bar[0]];\n}\n";
        assert_eq!(check("a.rs", after).len(), 2);
        assert_eq!(
            introduced_syntax_errors(Path::new("a.rs"), Some(OLD), after),
            [err(3, 11, "Syntax error: unexpected `]`")]
        );
    }

    #[test]
    fn a_new_file_reports_every_error() {
        let after = "fn main() {\n    foo(1, 2));\n    bar[0]];\n}\n";
        let all = introduced_syntax_errors(Path::new("a.rs"), None, after);
        assert_eq!(all.len(), 2);
        assert_eq!(all, check("a.rs", after));
    }

    #[test]
    fn a_copied_error_line_is_introduced_once() {
        let after = "fn main() {\n    foo(1, 2));\n    foo(1, 2));\n}\n";
        assert_eq!(check("a.rs", after).len(), 2);
        assert_eq!(
            introduced_syntax_errors(Path::new("a.rs"), Some(OLD), after),
            [err(3, 14, "Syntax error: unexpected `)`")]
        );
    }

    #[test]
    fn an_edited_error_line_is_introduced() {
        let after = "fn main() {\n    foo(1, 3));\n}\n";
        assert_eq!(
            introduced_syntax_errors(Path::new("a.rs"), Some(OLD), after),
            [err(2, 14, "Syntax error: unexpected `)`")]
        );
    }

    #[test]
    fn changing_line_endings_introduces_nothing() {
        let crlf = OLD.replace('\n', "\r\n");
        assert_eq!(check("a.rs", &crlf).len(), 1);
        assert_eq!(
            introduced_syntax_errors(Path::new("a.rs"), Some(OLD), &crlf),
            []
        );
    }

    #[test]
    fn a_fixed_error_introduces_nothing() {
        let after = "fn main() {\n    foo(1, 2);\n}\n";
        assert_eq!(
            introduced_syntax_errors(Path::new("a.rs"), Some(OLD), after),
            []
        );
        assert_eq!(check("a.rs", after), []);
    }

    #[test]
    fn an_unreadable_before_reports_every_error() {
        let mut before = OLD.to_owned();
        before.push_str(&"/".repeat(MAX_TEXT_BYTES));
        assert_eq!(
            introduced_syntax_errors(Path::new("a.rs"), Some(&before), OLD),
            check("a.rs", OLD)
        );
        assert_eq!(check("a.rs", OLD).len(), 1);
    }
}
