//! Table tests for the wildcard grammar, its compiled fast paths and home expansion.

use super::*;

/// `(pattern, input, matches)`.
const MATCHES: &[(&str, &str, bool)] = &[
    // `*` alone matches everything, including nothing and newlines.
    ("*", "", true),
    ("*", "anything at all", true),
    ("*", "line one\nline two", true),
    ("**", "", true),
    ("* *", "", true),
    ("a*b", "a\nb", true),
    ("a*b", "ab", true),
    ("a*b", "a", false),
    // `?` is exactly one character, multibyte included.
    ("?", "", false),
    ("?", "x", true),
    ("?", "xy", false),
    ("?", "\n", true),
    ("?", "é", true),
    ("?", "日", true),
    ("?", "🎉", true),
    ("??", "é", false),
    ("a?c", "aéc", true),
    ("a?c", "ac", false),
    ("*?", "", false),
    ("*?", "é", true),
    ("?*", "日本", true),
    ("a?*", "a", false),
    ("a?*", "ab", true),
    ("x*?y", "x🎉y", true),
    ("x*?y", "xy", false),
    // The trailing ` *` is optional.
    ("ls *", "ls", true),
    ("ls *", "ls -la", true),
    ("ls *", "ls  -la", true),
    ("ls *", "lsof", false),
    ("ls *", " ls", false),
    ("ls *", "ls\t-la", false),
    ("ls *", "ls\n", false),
    ("git *", "git \nrm -rf /", true),
    ("git status *", "git status", true),
    ("git status *", "git status --short", true),
    ("git status *", "git statuses", false),
    ("git status *", "git", false),
    (" *", "", true),
    (" *", " x", true),
    (" *", "x", false),
    ("a* *", "a", true),
    ("a* *", "ab c", true),
    ("a*b *", "ab", true),
    ("a*b *", "axb c", true),
    ("a*b *", "ab b", true),
    ("a*b *", "axbc", false),
    ("a*?b *", "a🎉b -x", true),
    ("?s *", "ls -la", true),
    ("?s *", "lsof", false),
    ("a*b*c *", "abc", true),
    ("a*b*c *", "a b c d", true),
    ("a*b*c *", "a b cd", false),
    // Literals and segments.
    ("", "", true),
    ("", "x", false),
    ("bash", "bash", true),
    ("bash", "bas", false),
    ("bash", "bashx", false),
    ("ab", "AB", false),
    ("*a*b*", "xxaxxbxx", true),
    ("*a*b*", "xxbxxaxx", false),
    ("a*a*a", "aaa", true),
    ("a*a*a", "aa", false),
    ("a**b", "ab", true),
    ("*.env", ".env", true),
    ("*.env", "config/.env", true),
    ("*.env", "x.env.local", false),
    ("*.env.*", ".env.local", true),
    ("*.env.*", "environment.ts", false),
    ("*.env.example", ".env.example", true),
    ("mcp_*", "mcp_github_create", true),
    ("mcp_*", "mcp", false),
    ("src/*", "src/a/b.rs", true),
    ("src/*", "src", false),
    ("src/*/mod.rs", "src/a/b/mod.rs", true),
    ("src/*/mod.rs", "src/mod.rs", false),
    // Backslashes read as slashes, on both sides.
    ("src\\*", "src/x", true),
    ("src/*", "src\\lib.rs", true),
    ("C:\\Users\\*", "C:/Users/me", true),
    ("C:/Users/*", "C:\\Users\\me", true),
    ("a\\b", "a/b", true),
    ("a/b", "a\\b", true),
    ("*\\b?", "x/a\\bé", true),
    ("*/b?c", "x\\a\\b日c", true),
    ("x*/y", "x\\y", true),
    ("x*/y", "x\\z", false),
    ("a/b *", "a\\b c", true),
    // Regex metacharacters are literal.
    ("a.b", "a.b", true),
    ("a.b", "axb", false),
    ("(x)", "(x)", true),
    ("(x)", "x", false),
    ("[", "[", true),
    ("[ab]", "a", false),
    ("[ab]", "[ab]", true),
    ("$", "$", true),
    ("a$", "a", false),
    ("^a", "^a", true),
    ("^a", "a", false),
    ("a+", "a+", true),
    ("a+", "aa", false),
    ("a|b", "a", false),
    ("{1}", "{1}", true),
    ("\\d", "/d", true),
    ("\\d", "1", false),
];

#[test]
fn pattern_matches_table() {
    for &(pattern, input, expected) in MATCHES {
        assert_eq!(
            Pattern::new(pattern).matches(input),
            expected,
            "pattern {pattern:?} on input {input:?}"
        );
    }
}

#[test]
fn compiled_kinds() {
    let kind = |pattern: &str| match Pattern::new(pattern).kind {
        Kind::Any => "any",
        Kind::Exact(_) => "exact",
        Kind::Command(_) => "command",
        Kind::Prefix(_) => "prefix",
        Kind::Glob { .. } => "glob",
    };
    for (pattern, expected) in [
        ("*", "any"),
        ("***", "any"),
        ("* *", "any"),
        ("bash", "exact"),
        ("", "exact"),
        ("git status *", "command"),
        (" *", "command"),
        ("src/*", "prefix"),
        ("mcp_**", "prefix"),
        ("git* *", "prefix"),
        ("*.env", "glob"),
        ("a?c", "glob"),
        ("git * --force", "glob"),
    ] {
        assert_eq!(kind(pattern), expected, "{pattern:?}");
    }
    // Rules are scanned by the hundred: keep a pattern within a cache line.
    assert!(std::mem::size_of::<Pattern>() <= 48);
}

/// `(pattern, home, expanded)`.
const EXPANSIONS: &[(&str, Option<&str>, &str)] = &[
    ("~", Some("/home/u"), "/home/u"),
    ("~/", Some("/home/u"), "/home/u/"),
    ("~/src/*", Some("/home/u"), "/home/u/src/*"),
    ("$HOME", Some("/home/u"), "/home/u"),
    ("$HOME/.ssh/*", Some("/home/u"), "/home/u/.ssh/*"),
    ("~/x", Some("/home/u/"), "/home/u/x"),
    ("~/x", Some("/"), "/x"),
    ("~", Some("/"), "/"),
    ("~\\x", Some("C:\\Users\\me"), "C:\\Users\\me\\x"),
    // Only a leading `~` or `$HOME`, and only as a whole path component.
    ("src/~/x", Some("/home/u"), "src/~/x"),
    ("a~", Some("/home/u"), "a~"),
    ("~user/x", Some("/home/u"), "~user/x"),
    ("~~", Some("/home/u"), "~~"),
    ("$HOMEDIR/x", Some("/home/u"), "$HOMEDIR/x"),
    ("x/$HOME", Some("/home/u"), "x/$HOME"),
    ("*", Some("/home/u"), "*"),
    // Without a home, nothing changes.
    ("~/x", None, "~/x"),
    ("$HOME", None, "$HOME"),
];

#[test]
fn expand_home_table() {
    for &(pattern, home, expected) in EXPANSIONS {
        assert_eq!(
            Pattern::expand_home(pattern, home),
            expected,
            "{pattern:?} with home {home:?}"
        );
        let needs = !matches!(Pattern::expand_home(pattern, Some("/h")), Cow::Borrowed(_));
        assert_eq!(Pattern::needs_home(pattern), needs, "{pattern:?}");
    }
}

#[test]
fn with_home_compiles_the_expanded_pattern() {
    let pattern = Pattern::with_home("~/src/*", Some("/home/u"));
    assert_eq!(pattern.as_str(), "/home/u/src/*");
    assert!(pattern.matches("/home/u/src/main.rs"));
    assert!(!pattern.matches("~/src/main.rs"));
    assert!(Pattern::with_home("~/src/*", None).matches("~/src/main.rs"));
}

#[test]
fn equality_follows_the_source() {
    assert_eq!(Pattern::new("git *"), Pattern::new("git *"));
    assert_ne!(Pattern::new("a/b"), Pattern::new("a\\b"));
    assert_eq!(format!("{:?}", Pattern::new("a b")), "\"a b\"");
    assert_eq!(Pattern::new("rm *").to_string(), "rm *");
}
