//! Tests of catalog visibility and the edit alias.

use super::*;
use crate::rule::{Rule, RuleSource};

/// A rule as `(permission, pattern, action)`.
type Spec<'a> = (&'a str, &'a str, Action);

fn rules(spec: &[Spec<'_>]) -> Ruleset {
    spec.iter()
        .map(|&(permission, pattern, action)| {
            Rule::new(
                permission,
                pattern,
                action,
                RuleSource::Config {
                    key: format!("permission.{permission}"),
                },
            )
        })
        .collect()
}

#[test]
fn tool_permissions() {
    let cases = [
        ("edit", "edit"),
        ("write", "edit"),
        ("multiedit", "edit"),
        ("apply_patch", "edit"),
        ("read", "read"),
        ("bash", "bash"),
        ("mcp_github_search", "mcp_github_search"),
    ];
    for (tool, permission) in cases {
        assert_eq!(tool_permission(tool), permission, "{tool}");
    }
}

#[test]
fn visibility_table() {
    use Action::{Allow, Ask, Deny};
    // (name, rules, tool, hidden)
    let cases: [(&str, Vec<Spec<'_>>, &str, bool); 18] = [
        ("no rules", vec![], "bash", false),
        ("whole deny", vec![("bash", "*", Deny)], "bash", true),
        ("partial deny", vec![("bash", "rm *", Deny)], "bash", false),
        ("ask", vec![("bash", "*", Ask)], "bash", false),
        (
            "wildcard deny then specific allow",
            vec![("bash", "*", Deny), ("bash", "git *", Allow)],
            "bash",
            false,
        ),
        (
            "specific allow then wildcard deny",
            vec![("bash", "git *", Allow), ("bash", "*", Deny)],
            "bash",
            true,
        ),
        (
            "global deny hides read",
            vec![("*", "*", Deny)],
            "read",
            true,
        ),
        (
            "global deny hides mcp",
            vec![("*", "*", Deny)],
            "mcp_x",
            true,
        ),
        (
            "global deny then allow",
            vec![("*", "*", Deny), ("read", "*", Allow)],
            "read",
            false,
        ),
        (
            "global deny then allow leaves others hidden",
            vec![("*", "*", Deny), ("read", "*", Allow)],
            "bash",
            true,
        ),
        (
            "later global allow reveals",
            vec![("bash", "*", Deny), ("*", "*", Allow)],
            "bash",
            false,
        ),
        (
            "unrelated rule after deny does not matter",
            vec![("bash", "*", Deny), ("read", "*", Allow)],
            "bash",
            true,
        ),
        (
            "edit deny hides write",
            vec![("edit", "*", Deny)],
            "write",
            true,
        ),
        (
            "edit deny hides multiedit",
            vec![("edit", "*", Deny)],
            "multiedit",
            true,
        ),
        (
            "edit deny hides apply_patch",
            vec![("edit", "*", Deny)],
            "apply_patch",
            true,
        ),
        (
            "edit deny hides notebook_edit",
            vec![("edit", "*", Deny)],
            "notebook_edit",
            true,
        ),
        (
            "write rule does not govern write",
            vec![("edit", "*", Allow), ("write", "*", Deny)],
            "write",
            false,
        ),
        (
            "glob on permission",
            vec![("mcp_*", "*", Deny)],
            "mcp_github",
            true,
        ),
    ];
    for (name, spec, tool, hidden) in cases {
        assert_eq!(is_hidden(&rules(&spec), tool), hidden, "{name}");
    }
}

#[test]
fn filter_is_a_shareable_predicate() {
    use Action::{Allow, Deny};
    let filter = visible_filter(rules(&[
        ("*", "*", Allow),
        ("edit", "*", Deny),
        ("webfetch", "*", Deny),
    ]));
    fn assert_send_sync<T: Send + Sync + 'static>(_: &T) {}
    assert_send_sync(&filter);
    let tools = ["read", "edit", "write", "bash", "webfetch", "apply_patch"];
    let visible: Vec<&str> = tools.into_iter().filter(|tool| filter(tool)).collect();
    assert_eq!(visible, ["read", "bash"]);
}

#[test]
fn denied_subagents_are_not_offered() {
    use Action::{Allow, Deny};
    let ruleset = rules(&[("*", "*", Allow), ("task", "general", Deny)]);
    assert!(!subagent_offered(&ruleset, "general"));
    assert!(subagent_offered(&ruleset, "explore"));
}
