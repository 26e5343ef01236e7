//! Table tests for reading the `permission` configuration: shapes, order, expansion, errors.

use serde::Deserialize;

use super::*;

use Action::{Allow, Ask, Deny};

const HOME: Option<&str> = Some("/home/u");

/// `(permission, pattern, action, key path)` of each produced rule, in order.
type Expected = &'static [(&'static str, &'static str, Action, &'static str)];

fn summary(rules: &Ruleset) -> Vec<(String, String, Action, String)> {
    rules
        .rules()
        .iter()
        .map(|rule| {
            let RuleSource::Config { key } = &rule.source else {
                panic!("not a config source: {:?}", rule.source);
            };
            (
                rule.permission.as_str().to_owned(),
                rule.pattern.as_str().to_owned(),
                rule.action,
                key.clone(),
            )
        })
        .collect()
}

/// `(name, json, home, rules)`.
const PARSES: &[(&str, &str, Option<&str>, Expected)] = &[
    (
        "string shorthand allow",
        r#""allow""#,
        HOME,
        &[("*", "*", Allow, "permission")],
    ),
    (
        "string shorthand deny",
        r#""deny""#,
        HOME,
        &[("*", "*", Deny, "permission")],
    ),
    ("empty object", "{}", HOME, &[]),
    (
        "permission to action",
        r#"{"bash": "ask"}"#,
        HOME,
        &[("bash", "*", Ask, "permission.bash")],
    ),
    (
        "permission to patterns",
        r#"{"bash": {"git *": "allow", "rm *": "deny"}}"#,
        HOME,
        &[
            ("bash", "git *", Allow, r#"permission.bash."git *""#),
            ("bash", "rm *", Deny, r#"permission.bash."rm *""#),
        ],
    ),
    (
        "mixed shapes",
        r#"{
            "*": "ask",
            "read": "allow",
            "bash": {"*": "ask", "git status *": "allow"},
            "webfetch": "deny"
        }"#,
        HOME,
        &[
            ("*", "*", Ask, r#"permission."*""#),
            ("read", "*", Allow, "permission.read"),
            ("bash", "*", Ask, r#"permission.bash."*""#),
            (
                "bash",
                "git status *",
                Allow,
                r#"permission.bash."git status *""#,
            ),
            ("webfetch", "*", Deny, "permission.webfetch"),
        ],
    ),
    (
        "key order is kept, not sorted",
        r#"{"zeta": "allow", "alpha": "deny", "*": "ask", "mcp_*": "allow"}"#,
        HOME,
        &[
            ("zeta", "*", Allow, "permission.zeta"),
            ("alpha", "*", Deny, "permission.alpha"),
            ("*", "*", Ask, r#"permission."*""#),
            ("mcp_*", "*", Allow, r#"permission."mcp_*""#),
        ],
    ),
    (
        "specific before broad is not re-sorted by specificity",
        r#"{"bash": {"git status *": "allow", "git *": "ask", "*": "deny"}}"#,
        HOME,
        &[
            (
                "bash",
                "git status *",
                Allow,
                r#"permission.bash."git status *""#,
            ),
            ("bash", "git *", Ask, r#"permission.bash."git *""#),
            ("bash", "*", Deny, r#"permission.bash."*""#),
        ],
    ),
    (
        "sub-pattern order is kept",
        r#"{"edit": {"b": "allow", "a": "deny", "c": "ask"}}"#,
        HOME,
        &[
            ("edit", "b", Allow, "permission.edit.b"),
            ("edit", "a", Deny, "permission.edit.a"),
            ("edit", "c", Ask, "permission.edit.c"),
        ],
    ),
    ("empty pattern object", r#"{"bash": {}}"#, HOME, &[]),
    (
        "the same permission twice via a glob key",
        r#"{"bash": "deny", "b*": "allow"}"#,
        HOME,
        &[
            ("bash", "*", Deny, "permission.bash"),
            ("b*", "*", Allow, r#"permission."b*""#),
        ],
    ),
    (
        "tilde slash expands",
        r#"{"read": {"~/.ssh/*": "deny"}}"#,
        HOME,
        &[(
            "read",
            "/home/u/.ssh/*",
            Deny,
            r#"permission.read."~/.ssh/*""#,
        )],
    ),
    (
        "exact tilde expands",
        r#"{"external_directory": {"~": "allow"}}"#,
        HOME,
        &[(
            "external_directory",
            "/home/u",
            Allow,
            r#"permission.external_directory."~""#,
        )],
    ),
    (
        "$HOME slash expands",
        r#"{"edit": {"$HOME/notes/*": "allow"}}"#,
        HOME,
        &[(
            "edit",
            "/home/u/notes/*",
            Allow,
            r#"permission.edit."$HOME/notes/*""#,
        )],
    ),
    (
        "$HOME without a slash expands",
        r#"{"list": {"$HOME": "allow"}}"#,
        HOME,
        &[("list", "/home/u", Allow, r#"permission.list."$HOME""#)],
    ),
    (
        "tilde mid-path is literal",
        r#"{"edit": {"src/~/x": "deny", "a~": "deny"}}"#,
        HOME,
        &[
            ("edit", "src/~/x", Deny, r#"permission.edit."src/~/x""#),
            ("edit", "a~", Deny, r#"permission.edit."a~""#),
        ],
    ),
    (
        "other variables are literal",
        r#"{"edit": {"$HOMEDIR/x": "deny"}}"#,
        HOME,
        &[(
            "edit",
            "$HOMEDIR/x",
            Deny,
            r#"permission.edit."$HOMEDIR/x""#,
        )],
    ),
    (
        "permission keys never expand",
        r#"{"~": "deny"}"#,
        None,
        &[("~", "*", Deny, r#"permission."~""#)],
    ),
    (
        "no home is fine when nothing needs it",
        r#"{"bash": {"ls *": "allow"}}"#,
        None,
        &[("bash", "ls *", Allow, r#"permission.bash."ls *""#)],
    ),
];

#[test]
fn parse_table() {
    for &(name, json, home, expected) in PARSES {
        let rules = parse_permission_config(json, &ConfigContext::new(home))
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        let expected: Vec<_> = expected
            .iter()
            .map(|&(p, r, a, k)| (p.to_owned(), r.to_owned(), a, k.to_owned()))
            .collect();
        assert_eq!(summary(&rules), expected, "{name}");
    }
}

/// `(json, home, error message)`.
const ERRORS: &[(&str, Option<&str>, &str)] = &[
    (
        "5",
        HOME,
        r#"permission: expected "allow", "ask", "deny" or an object of permissions, got 5"#,
    ),
    (
        "1.5",
        HOME,
        r#"permission: expected "allow", "ask", "deny" or an object of permissions, got 1.5"#,
    ),
    (
        "null",
        HOME,
        r#"permission: expected "allow", "ask", "deny" or an object of permissions, got null"#,
    ),
    (
        r#"["allow"]"#,
        HOME,
        r#"permission: expected "allow", "ask", "deny" or an object of permissions, got an array"#,
    ),
    (
        r#""yes""#,
        HOME,
        r#"permission: expected "allow", "ask" or "deny", got "yes""#,
    ),
    (
        r#""Allow""#,
        HOME,
        r#"permission: expected "allow", "ask" or "deny", got "Allow""#,
    ),
    (
        r#"{"bash": true}"#,
        HOME,
        r#"permission.bash: expected "allow", "ask", "deny" or an object of patterns, got true"#,
    ),
    (
        r#"{"bash": ["ls"]}"#,
        HOME,
        r#"permission.bash: expected "allow", "ask", "deny" or an object of patterns, got an array"#,
    ),
    (
        r#"{"bash": "nope"}"#,
        HOME,
        r#"permission.bash: expected "allow", "ask" or "deny", got "nope""#,
    ),
    (
        r#"{"bash": {"git *": 5}}"#,
        HOME,
        r#"permission.bash."git *": expected "allow", "ask" or "deny", got 5"#,
    ),
    (
        r#"{"bash": {"git *": {"x": "allow"}}}"#,
        HOME,
        r#"permission.bash."git *": expected "allow", "ask" or "deny", got an object"#,
    ),
    (
        r#"{"bash": {"git *": "always"}}"#,
        HOME,
        r#"permission.bash."git *": expected "allow", "ask" or "deny", got "always""#,
    ),
    (
        r#"{"read": "allow", "a\"b": null}"#,
        HOME,
        r#"permission."a\"b": expected "allow", "ask", "deny" or an object of patterns, got null"#,
    ),
    (
        r#"{"bash": "allow", "edit": "ask", "bash": "deny"}"#,
        HOME,
        "permission.bash: the key appears more than once (write each key once, in precedence order)",
    ),
    (
        r#"{"bash": {"ls *": "allow", "ls *": "deny"}}"#,
        HOME,
        r#"permission.bash."ls *": the key appears more than once (write each key once, in precedence order)"#,
    ),
    (
        r#"{"read": {"~/.ssh/*": "deny"}}"#,
        None,
        r#"permission.read."~/.ssh/*": `~` and `$HOME` need a home directory, and none is known"#,
    ),
    (
        r#"{"read": {"$HOME": "deny"}}"#,
        None,
        r#"permission.read."$HOME": `~` and `$HOME` need a home directory, and none is known"#,
    ),
];

#[test]
fn error_table() {
    for &(json, home, expected) in ERRORS {
        let error = parse_permission_config(json, &ConfigContext::new(home)).expect_err(json);
        assert_eq!(error.to_string(), expected, "{json}");
        assert!(expected.starts_with(error.path()), "{json}");
    }
}

#[test]
fn syntax_errors_name_the_root_and_position() {
    let error = parse_permission_config(r#"{"bash": "#, &ConfigContext::default()).unwrap_err();
    assert!(matches!(error, ConfigError::Syntax { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with("permission: not valid JSON: "),
        "{message}"
    );
    assert!(message.contains("line 1"), "{message}");
}

#[test]
fn root_prefixes_sources_and_errors() {
    let context = ConfigContext::new(HOME).with_root("agent.plan.permission");
    let rules = parse_permission_config(r#"{"edit": {"*.md": "allow"}}"#, &context).unwrap();
    assert_eq!(
        rules.rules()[0].source,
        RuleSource::Config {
            key: r#"agent.plan.permission.edit."*.md""#.into()
        }
    );
    let error = parse_permission_config(r#"{"edit": 0}"#, &context).unwrap_err();
    assert_eq!(error.path(), "agent.plan.permission.edit");
}

#[test]
fn order_decides_evaluation() {
    let context = ConfigContext::new(HOME);
    let broad_last =
        parse_permission_config(r#"{"bash": {"git *": "allow", "*": "deny"}}"#, &context).unwrap();
    assert_eq!(broad_last.evaluate("bash", "git status"), Deny);
    let broad_first =
        parse_permission_config(r#"{"bash": {"*": "deny", "git *": "allow"}}"#, &context).unwrap();
    assert_eq!(broad_first.evaluate("bash", "git status"), Allow);
    assert_eq!(broad_first.evaluate("bash", "rm -rf /"), Deny);

    let home = parse_permission_config(r#"{"read": {"~/.ssh/*": "deny"}}"#, &context).unwrap();
    assert_eq!(home.evaluate("read", "/home/u/.ssh/id_ed25519"), Deny);
    assert_eq!(home.evaluate("read", "/srv/u/.ssh/id_ed25519"), Ask);
}

#[test]
fn config_value_keeps_order_inside_a_larger_document() {
    #[derive(Deserialize)]
    struct Document {
        permission: Option<ConfigValue>,
    }
    let document: Document = serde_json::from_str(
        r#"{"model": "x", "permission": {"zeta": "allow", "alpha": {"b": "ask", "a": "deny"}}}"#,
    )
    .unwrap();
    let value = document.permission.unwrap();
    let ConfigValue::Object(entries) = &value else {
        panic!("{value:?}");
    };
    let keys: Vec<&str> = entries.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(keys, ["zeta", "alpha"]);
    let rules = ruleset_from_config(&value, &ConfigContext::default()).unwrap();
    let patterns: Vec<&str> = rules.rules().iter().map(|r| r.pattern.as_str()).collect();
    assert_eq!(patterns, ["*", "b", "a"]);

    let absent: Document = serde_json::from_str(r#"{"permission": null}"#).unwrap();
    assert_eq!(absent.permission, None);
}

#[test]
fn config_value_parses_every_json_type() {
    let value =
        ConfigValue::from_json(r#"[null, true, -3, 18446744073709551615, 2.5, "s", {}]"#).unwrap();
    assert_eq!(
        value,
        ConfigValue::Array(vec![
            ConfigValue::Null,
            ConfigValue::Bool(true),
            ConfigValue::Number((-3).into()),
            ConfigValue::Number(u64::MAX.into()),
            ConfigValue::Number(serde_json::Number::from_f64(2.5).unwrap()),
            ConfigValue::String("s".into()),
            ConfigValue::Object(vec![]),
        ])
    );
}
