//! Evaluation tables, explanations, merging, and a property test against a regex reference.

use proptest::prelude::*;
use regex::Regex;

use super::*;
use crate::config::{ConfigContext, parse_permission_config};

use Action::{Allow, Ask, Deny};

fn ruleset(rules: &[(&str, &str, Action)]) -> Ruleset {
    rules
        .iter()
        .map(|&(permission, pattern, action)| {
            Rule::new(permission, pattern, action, RuleSource::Default)
        })
        .collect()
}

/// The index of the deciding rule, found by address.
fn deciding_index(rules: &Ruleset, decision: &Decision<'_>) -> Option<usize> {
    let rule = decision.rule?;
    rules.rules().iter().position(|r| std::ptr::eq(r, rule))
}

struct Case {
    name: &'static str,
    rules: &'static [(&'static str, &'static str, Action)],
    permission: &'static str,
    resource: &'static str,
    action: Action,
    /// The deciding rule's index, or `None` for the fallback.
    rule: Option<usize>,
}

const ENV_RULES: &[(&str, &str, Action)] = &[
    ("*", "*", Allow),
    ("read", "*", Allow),
    ("read", "*.env", Ask),
    ("read", "*.env.*", Ask),
    ("read", "*.env.example", Allow),
];

const CASES: &[Case] = &[
    Case {
        name: "empty ruleset asks",
        rules: &[],
        permission: "bash",
        resource: "ls",
        action: Ask,
        rule: None,
    },
    Case {
        name: "exact permission and pattern",
        rules: &[("bash", "ls", Allow)],
        permission: "bash",
        resource: "ls",
        action: Allow,
        rule: Some(0),
    },
    Case {
        name: "exact pattern does not cover arguments",
        rules: &[("bash", "ls", Allow)],
        permission: "bash",
        resource: "ls -la",
        action: Ask,
        rule: None,
    },
    Case {
        name: "wildcard pattern",
        rules: &[("bash", "*", Deny)],
        permission: "bash",
        resource: "rm -rf /",
        action: Deny,
        rule: Some(0),
    },
    Case {
        name: "unknown permission asks",
        rules: &[("bash", "*", Allow), ("edit", "*", Deny)],
        permission: "webfetch",
        resource: "https://example.com",
        action: Ask,
        rule: None,
    },
    Case {
        name: "wildcard permission covers everything",
        rules: &[("*", "*", Deny)],
        permission: "anything",
        resource: "",
        action: Deny,
        rule: Some(0),
    },
    Case {
        name: "glob on the permission side",
        rules: &[("*", "*", Ask), ("mcp_*", "*", Allow)],
        permission: "mcp_github_create_issue",
        resource: "*",
        action: Allow,
        rule: Some(1),
    },
    Case {
        name: "permission glob needs its prefix",
        rules: &[("*", "*", Ask), ("mcp_*", "*", Allow)],
        permission: "mcp",
        resource: "*",
        action: Ask,
        rule: Some(0),
    },
    Case {
        name: "question mark on the permission side",
        rules: &[("e?it", "*", Deny)],
        permission: "edit",
        resource: "src/lib.rs",
        action: Deny,
        rule: Some(0),
    },
    Case {
        name: "allow after deny: the later allow wins",
        rules: &[("bash", "*", Deny), ("bash", "git *", Allow)],
        permission: "bash",
        resource: "git status",
        action: Allow,
        rule: Some(1),
    },
    Case {
        name: "allow after deny: other commands stay denied",
        rules: &[("bash", "*", Deny), ("bash", "git *", Allow)],
        permission: "bash",
        resource: "rm -rf /",
        action: Deny,
        rule: Some(0),
    },
    Case {
        name: "deny after allow: the later deny wins",
        rules: &[("bash", "*", Allow), ("bash", "rm *", Deny)],
        permission: "bash",
        resource: "rm -rf /",
        action: Deny,
        rule: Some(1),
    },
    Case {
        name: "deny after allow: other commands stay allowed",
        rules: &[("bash", "*", Allow), ("bash", "rm *", Deny)],
        permission: "bash",
        resource: "ls",
        action: Allow,
        rule: Some(0),
    },
    Case {
        name: "a later broad rule beats an earlier specific one",
        rules: &[("bash", "git status *", Allow), ("bash", "*", Ask)],
        permission: "bash",
        resource: "git status",
        action: Ask,
        rule: Some(1),
    },
    Case {
        name: "a final global deny means it",
        rules: &[("bash", "git *", Allow), ("*", "*", Deny)],
        permission: "bash",
        resource: "git log",
        action: Deny,
        rule: Some(1),
    },
    Case {
        name: "ls * does not cover lsof",
        rules: &[("bash", "*", Ask), ("bash", "ls *", Allow)],
        permission: "bash",
        resource: "lsof -i",
        action: Ask,
        rule: Some(0),
    },
    Case {
        name: "backslash paths compare as slashes",
        rules: &[("edit", "src/*", Allow)],
        permission: "edit",
        resource: "src\\main.rs",
        action: Allow,
        rule: Some(0),
    },
    Case {
        name: "a backslash in the permission reads as a slash",
        rules: &[("x/y", "*", Deny), ("x/z", "*", Allow)],
        permission: "x\\y",
        resource: "r",
        action: Deny,
        rule: Some(0),
    },
    Case {
        name: ".env asks",
        rules: ENV_RULES,
        permission: "read",
        resource: "/p/.env",
        action: Ask,
        rule: Some(2),
    },
    Case {
        name: ".env.local asks",
        rules: ENV_RULES,
        permission: "read",
        resource: "/p/.env.local",
        action: Ask,
        rule: Some(3),
    },
    Case {
        name: ".env.example is allowed",
        rules: ENV_RULES,
        permission: "read",
        resource: "/p/.env.example",
        action: Allow,
        rule: Some(4),
    },
    Case {
        name: ".envrc is allowed",
        rules: ENV_RULES,
        permission: "read",
        resource: "/p/.envrc",
        action: Allow,
        rule: Some(1),
    },
    Case {
        name: "environment.ts is allowed",
        rules: ENV_RULES,
        permission: "read",
        resource: "src/environment.ts",
        action: Allow,
        rule: Some(1),
    },
];

#[test]
fn evaluation_table() {
    for case in CASES {
        let rules = ruleset(case.rules);
        let decision = rules.explain(case.permission, case.resource);
        assert_eq!(decision.action, case.action, "{}", case.name);
        assert_eq!(
            deciding_index(&rules, &decision),
            case.rule,
            "{}",
            case.name
        );
        assert_eq!(
            rules.evaluate(case.permission, case.resource),
            case.action,
            "{}",
            case.name
        );
    }
}

#[test]
fn merge_is_concatenation() {
    let defaults = ruleset(&[("*", "*", Allow), ("bash", "*", Ask)]);
    let user = ruleset(&[("bash", "rm *", Deny), ("bash", "*", Allow)]);
    let merged = defaults.clone().merged(&user);
    let expected: Vec<Rule> = defaults
        .rules()
        .iter()
        .chain(user.rules())
        .cloned()
        .collect();
    assert_eq!(merged.rules(), expected.as_slice());
    assert_eq!(merged.len(), 4);
    // The later ruleset overrides only by position.
    assert_eq!(merged.evaluate("bash", "rm -rf /"), Allow);
    assert_eq!(
        user.clone().merged(&defaults).evaluate("bash", "rm -rf /"),
        Ask
    );

    let mut extended = defaults.clone();
    extended.extend(user.rules().iter().cloned());
    assert_eq!(extended, merged);
    assert_eq!((&merged).into_iter().count(), 4);
    assert!(Ruleset::new().is_empty());
}

#[test]
fn explain_reports_the_source() {
    let mut rules = ruleset(&[("*", "*", Allow)]);
    rules.push(Rule::new(
        "bash",
        "*",
        Ask,
        RuleSource::Agent {
            name: "plan".into(),
        },
    ));
    rules.push(Rule::new("bash", "git *", Allow, RuleSource::Saved));
    let config =
        parse_permission_config(r#"{"bash": {"rm *": "deny"}}"#, &ConfigContext::default())
            .unwrap();
    let rules = rules.merged(&config);

    let cases = [
        (
            "ls",
            Ask,
            RuleSource::Agent {
                name: "plan".into(),
            },
        ),
        ("git push", Allow, RuleSource::Saved),
        (
            "rm -rf /",
            Deny,
            RuleSource::Config {
                key: r#"permission.bash."rm *""#.into(),
            },
        ),
    ];
    for (command, action, source) in cases {
        let decision = rules.explain("bash", command);
        assert_eq!(decision.action, action, "{command}");
        assert_eq!(decision.source(), source, "{command}");
    }
    assert_eq!(rules.explain("edit", "x").source(), RuleSource::Default);
    assert_eq!(
        Ruleset::new().explain("edit", "x").source(),
        RuleSource::Fallback
    );
}

#[test]
fn decision_display() {
    let config = parse_permission_config(
        r#"{"bash": {"rm *": "deny"}, "edit": "allow"}"#,
        &ConfigContext::default(),
    )
    .unwrap();
    let cases = [
        (
            "bash",
            "rm -rf /",
            r#"deny `bash` on `rm *` (from your configuration (`permission.bash."rm *"`))"#,
        ),
        (
            "edit",
            "src/lib.rs",
            "allow `edit` on `*` (from your configuration (`permission.edit`))",
        ),
        ("read", "x", "ask: no matching rule (the default is ask)"),
    ];
    for (permission, resource, expected) in cases {
        assert_eq!(config.explain(permission, resource).to_string(), expected);
    }
    let saved = ruleset(&[]).merged(&Ruleset::from_iter([Rule::new(
        "bash",
        "git *",
        Allow,
        RuleSource::Saved,
    )]));
    assert_eq!(
        saved.explain("bash", "git log").to_string(),
        "allow `bash` on `git *` (from an approval saved with \"always\")"
    );
}

// ---------------------------------------------------------------------------------------------
// Property: evaluation equals a brute-force scan with regexes
// ---------------------------------------------------------------------------------------------

fn cases() -> u32 {
    if std::env::var("TACKLE_DEEP").as_deref() == Ok("1") {
        2048
    } else {
        64
    }
}

/// An independent translation of a pattern into an anchored regex.
fn reference_regex(pattern: &str) -> Regex {
    let pattern = pattern.replace('\\', "/");
    let (body, tail) = match pattern.strip_suffix(" *") {
        Some(body) => (body, "( .*)?"),
        None => (pattern.as_str(), ""),
    };
    let mut source = String::from("(?s)^");
    for c in body.chars() {
        match c {
            '*' => source.push_str(".*"),
            '?' => source.push('.'),
            c => source.push_str(&regex::escape(&c.to_string())),
        }
    }
    source.push_str(tail);
    source.push('$');
    Regex::new(&source).unwrap()
}

/// The last rule whose regexes both match, scanning every rule.
fn reference_decision(rules: &[(Regex, Regex)], permission: &str, resource: &str) -> Option<usize> {
    let permission = permission.replace('\\', "/");
    let resource = resource.replace('\\', "/");
    let mut decided = None;
    for (index, (p, r)) in rules.iter().enumerate() {
        if p.is_match(&permission) && r.is_match(&resource) {
            decided = Some(index);
        }
    }
    decided
}

fn text_from(alphabet: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(alphabet), 0..=max).prop_map(|parts| parts.concat())
}

fn pattern_text() -> impl Strategy<Value = String> {
    const ALPHABET: &[&str] = &["a", "b", " ", "/", "*", "?", ".", "\\", "é"];
    (text_from(ALPHABET, 7), any::<u8>()).prop_map(|(text, roll)| {
        // A third of the patterns end in the optional ` *` tail.
        if roll % 3 == 0 { text + " *" } else { text }
    })
}

fn resource_text() -> impl Strategy<Value = String> {
    const ALPHABET: &[&str] = &["a", "b", " ", "/", ".", "\\", "é", "\n", "*", "?"];
    text_from(ALPHABET, 9)
}

/// An input that `pattern` probably matches: each `*` replaced by a fill, each `?` by one
/// character of a fill.
fn instantiate(pattern: &str, fills: &[String]) -> String {
    let mut fills = fills.iter().cycle();
    let mut out = String::new();
    for c in pattern.chars() {
        let fill = fills.next().map_or("", String::as_str);
        match c {
            '*' => out.push_str(fill),
            '?' => out.push(fill.chars().next().unwrap_or('x')),
            c => out.push(c),
        }
    }
    out
}

fn fills() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(resource_text(), 1..4)
}

fn permission_pattern() -> impl Strategy<Value = String> {
    text_from(&["a", "b", "/", "*", "?"], 3)
}

fn action() -> impl Strategy<Value = Action> {
    prop::sample::select(&[Allow, Ask, Deny][..])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn evaluation_matches_the_reference(
        rules in prop::collection::vec((permission_pattern(), pattern_text(), action()), 0..12),
        mut inputs in prop::collection::vec((text_from(&["a", "b", "/", "\\"], 3), resource_text()), 1..8),
        fills in fills(),
    ) {
        let ruleset: Ruleset = rules
            .iter()
            .map(|(p, r, a)| Rule::new(p, r, *a, RuleSource::Default))
            .collect();
        // Inputs built from the rules themselves, so that many of them match.
        for (p, r, _) in &rules {
            inputs.push((instantiate(p, &fills), instantiate(r, &fills)));
        }
        let reference: Vec<(Regex, Regex)> = rules
            .iter()
            .map(|(p, r, _)| (reference_regex(p), reference_regex(r)))
            .collect();
        for (permission, resource) in &inputs {
            let expected = reference_decision(&reference, permission, resource);
            let decision = ruleset.explain(permission, resource);
            prop_assert_eq!(deciding_index(&ruleset, &decision), expected);
            prop_assert_eq!(decision.action, expected.map_or(Ask, |index| rules[index].2));
        }
    }

    #[test]
    fn pattern_matches_the_reference(
        pattern in pattern_text(),
        mut inputs in prop::collection::vec(resource_text(), 1..16),
        fill_sets in prop::collection::vec(fills(), 1..8),
    ) {
        inputs.extend(fill_sets.iter().map(|fills| instantiate(&pattern, fills)));
        let compiled = Pattern::new(&pattern);
        let reference = reference_regex(&pattern);
        for input in &inputs {
            prop_assert_eq!(
                compiled.matches(input),
                reference.is_match(&input.replace('\\', "/")),
                "pattern {:?} on {:?}", pattern, input
            );
        }
    }
}
