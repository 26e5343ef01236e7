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

// ---------------------------------------------------------------------------------------------
// Project rules: they narrow, and never overrule a deny or grant trust
// ---------------------------------------------------------------------------------------------

fn project(permission: &str, pattern: &str, action: Action) -> Rule {
    Rule::new(
        permission,
        pattern,
        action,
        RuleSource::Project {
            key: format!("permission.{permission}"),
        },
    )
}

fn user(permission: &str, pattern: &str, action: Action) -> Rule {
    Rule::new(
        permission,
        pattern,
        action,
        RuleSource::Config {
            key: format!("permission.{permission}"),
        },
    )
}

#[test]
fn a_project_allow_never_beats_a_users_deny() {
    let rules = Ruleset::from_iter([
        Rule::new("*", "*", Allow, RuleSource::Default),
        Rule::new("external_directory", "*", Ask, RuleSource::Default),
        user("external_directory", "/etc/*", Deny),
        user("read", "*.env", Deny),
        project("external_directory", "*", Allow),
        project("read", "*", Allow),
        project("*", "*", Allow),
    ]);
    assert_eq!(rules.evaluate("external_directory", "/etc/*"), Deny);
    assert_eq!(rules.evaluate("read", "a/.env"), Deny);
    let decision = rules.explain("read", "a/.env");
    assert_eq!(
        decision.source(),
        RuleSource::Config {
            key: "permission.read".into()
        }
    );
    // Where the user did not deny, a project allow widens (a trusted project's own rules).
    assert_eq!(rules.evaluate("external_directory", "/srv/*"), Allow);
}

#[test]
fn a_project_rule_never_grants_a_trust_permission() {
    let rules = Ruleset::from_iter([
        Rule::new("*", "*", Allow, RuleSource::Default),
        Rule::new("hook_trust", "*", Ask, RuleSource::Default),
        Rule::new("custom_tool_trust", "*", Ask, RuleSource::Default),
        project("hook_trust", "*", Allow),
        project("*", "*", Allow),
    ]);
    assert_eq!(rules.evaluate("hook_trust", "x"), Ask);
    assert_eq!(rules.evaluate("custom_tool_trust", "x"), Ask);
    // A project may still deny one.
    let narrowed = rules.merged(&Ruleset::from_iter([project("hook_trust", "*", Deny)]));
    assert_eq!(narrowed.evaluate("hook_trust", "x"), Deny);
}

#[test]
fn a_project_ask_or_deny_narrows_the_users_allow() {
    let rules = Ruleset::from_iter([
        Rule::new("*", "*", Allow, RuleSource::Default),
        user("bash", "*", Allow),
        user("bash", "rm *", Deny),
        project("bash", "git push *", Ask),
        project("bash", "rm *", Ask),
        project("bash", "curl *", Deny),
    ]);
    assert_eq!(rules.evaluate("bash", "git push origin"), Ask);
    assert_eq!(rules.evaluate("bash", "curl x"), Deny);
    // A project ask cannot loosen the user's deny.
    assert_eq!(rules.evaluate("bash", "rm -rf /"), Deny);
    assert_eq!(rules.evaluate("bash", "ls"), Allow);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Whatever the project's rules, the decision is never more permissive than the other rules
    /// where those deny, or where the permission is a trust permission; and it is never more
    /// permissive than the project's own last matching rule.
    #[test]
    fn project_rules_never_overrule_a_deny_or_grant_trust(
        base in prop::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..8),
        projected in prop::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..8),
        interleave in any::<bool>(),
        permission in 0usize..4,
        resource in 0usize..3,
    ) {
        const PERMISSIONS: [&str; 4] = ["*", "bash", "hook_trust", "external_directory"];
        const PATTERNS: [&str; 3] = ["*", "a*", "ab"];
        const ACTIONS: [Action; 3] = [Allow, Ask, Deny];
        let asked = ["bash", "hook_trust", "external_directory", "read"][permission];
        let on = ["ab", "ax", "zz"][resource];
        let make = |(p, r, a): (usize, usize, usize), from_project: bool| {
            if from_project {
                project(PERMISSIONS[p], PATTERNS[r], ACTIONS[a])
            } else {
                user(PERMISSIONS[p], PATTERNS[r], ACTIONS[a])
            }
        };
        let base_rules: Ruleset = base.iter().map(|&r| make(r, false)).collect();
        let project_rules: Ruleset = projected.iter().map(|&r| make(r, true)).collect();
        // Project rules after the base, or woven between them (agent rules follow the file's).
        let all: Ruleset = if interleave {
            let mut woven = Vec::new();
            let (mut b, mut p) = (base_rules.rules().iter(), project_rules.rules().iter());
            loop {
                match (b.next(), p.next()) {
                    (None, None) => break,
                    (x, y) => woven.extend(x.into_iter().chain(y).cloned()),
                }
            }
            woven.into_iter().collect()
        } else {
            base_rules.clone().merged(&project_rules)
        };
        let without = all.rules().iter().filter(|r| !r.source.is_project()).cloned().collect::<Ruleset>();
        let decided = all.evaluate(asked, on);
        let rank = |a: Action| match a { Allow => 0, Ask => 1, Deny => 2 };
        let base_decision = without.evaluate(asked, on);
        if base_decision == Deny {
            prop_assert_eq!(decided, Deny);
        }
        if is_trust(asked) {
            prop_assert!(rank(decided) >= rank(base_decision));
        }
        if let Some(last) = all.rules().iter().rev().find(|r| r.matches(asked, on))
            && last.source.is_project()
        {
            prop_assert!(rank(decided) >= rank(last.action));
        }
    }
}
