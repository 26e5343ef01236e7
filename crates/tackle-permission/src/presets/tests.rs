//! Tests of the agent presets, custom agents and subagent rule derivation.

use super::*;
use crate::paths::{TargetKind, external_directory_pattern};

fn ctx() -> PresetContext {
    PresetContext {
        managed_output_dir: Some("/data/tool-output".to_owned()),
        temp_dir: Some("/tmp".to_owned()),
        extra_allowed_dirs: vec!["/home/me/skills/review".to_owned(), String::new()],
        plans_dir: Some("/data/plans/".to_owned()),
    }
}

#[test]
fn plan_may_write_plans_in_its_plans_directory_and_nothing_else_outside() {
    let plan = agent("plan");
    let cases = [
        ("external_directory", "/data/plans/*", Action::Allow),
        ("edit", "/data/plans/roadmap.md", Action::Allow),
        ("edit", "/data/plans/notes.txt", Action::Deny),
        ("edit", "src/main.rs", Action::Deny),
        ("external_directory", "/data/other/*", Action::Ask),
    ];
    for (permission, resource, expected) in cases {
        assert_eq!(
            plan.rules.evaluate(permission, resource),
            expected,
            "{permission} {resource}"
        );
    }
    // Without a plans directory, nothing outside the Location is opened up.
    let bare = preset("plan", &PresetContext::default()).unwrap();
    assert_eq!(
        bare.rules.evaluate("edit", "/data/plans/roadmap.md"),
        Action::Deny
    );
}

fn agent(name: &str) -> Agent {
    preset(name, &ctx()).unwrap_or_else(|| panic!("preset {name}"))
}

/// A rule as `(permission, pattern, action)`.
type Spec<'a> = (&'a str, &'a str, Action);

fn user(spec: &[Spec<'_>]) -> Ruleset {
    spec.iter()
        .map(|&(permission, pattern, action)| {
            Rule::new(
                permission,
                pattern,
                action,
                RuleSource::Config {
                    key: format!("agent.permission.{permission}"),
                },
            )
        })
        .collect()
}

#[test]
fn env_file_matrix_for_build_and_plan() {
    let cases = [
        (".env", Action::Ask),
        (".env.local", Action::Ask),
        (".env.production", Action::Ask),
        (".env.development.local", Action::Ask),
        (".env.example", Action::Allow),
        (".envrc", Action::Allow),
        ("environment.ts", Action::Allow),
        ("src/main.rs", Action::Allow),
    ];
    for name in ["build", "plan", "general", "explore"] {
        let rules = agent(name).rules;
        for (file, expected) in cases {
            for path in [
                file.to_owned(),
                format!("src/{file}"),
                format!("/abs/dir/{file}"),
            ] {
                assert_eq!(
                    rules.evaluate("read", &path),
                    expected,
                    "{name} read {path}"
                );
            }
        }
    }
}

#[test]
fn default_rules_table() {
    let defaults = default_rules(&ctx());
    let external = |target: &str, kind| external_directory_pattern(target, kind);
    let cases = [
        ("bash", "rm -rf build".to_owned(), Action::Allow),
        ("edit", "src/lib.rs".to_owned(), Action::Allow),
        ("some_mcp_tool", "*".to_owned(), Action::Allow),
        ("doom_loop", "edit".to_owned(), Action::Ask),
        ("question", "*".to_owned(), Action::Deny),
        ("plan_enter", "*".to_owned(), Action::Deny),
        ("plan_exit", "*".to_owned(), Action::Deny),
        (
            "external_directory",
            external("/etc/passwd", TargetKind::File),
            Action::Ask,
        ),
        (
            "external_directory",
            external("/", TargetKind::Directory),
            Action::Ask,
        ),
        (
            "external_directory",
            external("/data/tool-output/tool_1", TargetKind::File),
            Action::Allow,
        ),
        (
            "external_directory",
            external("/tmp", TargetKind::Directory),
            Action::Allow,
        ),
        (
            "external_directory",
            external("/tmp/a/b/c.txt", TargetKind::File),
            Action::Allow,
        ),
        (
            "external_directory",
            external("/tmpfoo/x", TargetKind::File),
            Action::Ask,
        ),
        (
            "external_directory",
            external("/home/me/skills/review/SKILL.md", TargetKind::File),
            Action::Allow,
        ),
        (
            "external_directory",
            external("/home/me/x", TargetKind::File),
            Action::Ask,
        ),
    ];
    for (permission, resource, expected) in cases {
        assert_eq!(
            defaults.evaluate(permission, &resource),
            expected,
            "{permission} on {resource}"
        );
    }
    assert!(
        defaults
            .rules()
            .iter()
            .all(|rule| rule.source == RuleSource::Default)
    );
}

#[test]
fn defaults_without_context_dirs_ask_everywhere_outside() {
    let defaults = default_rules(&PresetContext::default());
    assert_eq!(
        defaults.evaluate("external_directory", "/tmp/*"),
        Action::Ask
    );
}

#[test]
fn agent_rules_table() {
    use Action::{Allow, Ask, Deny};
    // (agent, permission, resource, expected)
    let cases = [
        ("build", "question", "*", Allow),
        ("build", "plan_enter", "*", Allow),
        ("build", "plan_exit", "*", Deny),
        ("build", "edit", "src/lib.rs", Allow),
        ("build", "task", "general", Allow),
        ("plan", "question", "*", Allow),
        ("plan", "plan_exit", "*", Allow),
        ("plan", "plan_enter", "*", Deny),
        ("plan", "edit", "src/lib.rs", Deny),
        ("plan", "edit", "README.md", Deny),
        ("plan", "edit", ".opencode/plans/feature.md", Allow),
        ("plan", "edit", ".opencode/plans/feature.txt", Deny),
        ("plan", "task", "general", Deny),
        ("plan", "task", "explore", Allow),
        ("plan", "bash", "ls", Allow),
        ("general", "todowrite", "*", Deny),
        ("general", "question", "*", Deny),
        ("general", "bash", "cargo test", Allow),
        ("explore", "edit", "src/lib.rs", Deny),
        ("explore", "write", "src/lib.rs", Deny),
        ("explore", "todowrite", "*", Deny),
        ("explore", "task", "general", Deny),
        ("explore", "grep", "fn main", Allow),
        ("explore", "glob", "**/*.rs", Allow),
        ("explore", "list", "src", Allow),
        ("explore", "bash", "git log", Allow),
        ("explore", "webfetch", "https://example.com", Allow),
        ("explore", "websearch", "rust", Allow),
        ("explore", "codesearch", "tokio select", Allow),
        ("explore", "read", "src/lib.rs", Allow),
        ("explore", "external_directory", "/etc/*", Ask),
        ("explore", "external_directory", "/tmp/*", Allow),
        ("explore", "doom_loop", "read", Deny),
        ("build", "doom_loop", "read", Ask),
    ];
    for (name, permission, resource, expected) in cases {
        assert_eq!(
            agent(name).rules.evaluate(permission, resource),
            expected,
            "{name}: {permission} on {resource}"
        );
    }
}

#[test]
fn hidden_agents_deny_everything() {
    for name in ["compaction", "title", "summary"] {
        let agent = agent(name);
        assert_eq!(agent.mode, AgentMode::Hidden, "{name}");
        for (permission, resource) in [
            ("read", "src/lib.rs"),
            ("read", ".env.example"),
            ("bash", "ls"),
            ("edit", "a"),
            ("external_directory", "/tmp/*"),
            ("doom_loop", "read"),
        ] {
            assert_eq!(
                agent.rules.evaluate(permission, resource),
                Action::Deny,
                "{name}: {permission} on {resource}"
            );
        }
        assert!(crate::visibility::is_hidden(&agent.rules, "read"), "{name}");
    }
}

#[test]
fn catalog_and_modes() {
    let all = presets(&ctx());
    let names: Vec<&str> = all.iter().map(|agent| agent.name.as_str()).collect();
    assert_eq!(names, PRESET_NAMES);
    let modes: Vec<AgentMode> = all.iter().map(|agent| agent.mode).collect();
    use AgentMode::{Hidden, Primary, Subagent};
    assert_eq!(
        modes,
        [Primary, Primary, Subagent, Subagent, Hidden, Hidden, Hidden]
    );
    assert!(all.iter().all(|agent| !agent.description.is_empty()));
    assert!(preset("nope", &ctx()).is_none());

    let explain = agent("plan");
    let decision = explain.rules.explain("edit", "src/lib.rs");
    assert_eq!(
        decision.source(),
        RuleSource::Agent {
            name: "plan".to_owned()
        }
    );
}

#[test]
fn preset_visibility() {
    use crate::visibility::is_hidden;
    // (agent, tool, hidden)
    let cases = [
        ("build", "question", false),
        ("build", "plan_exit", true),
        ("plan", "edit", false),
        ("plan", "write", false),
        ("plan", "plan_enter", true),
        ("general", "todowrite", true),
        ("general", "question", true),
        ("explore", "edit", true),
        ("explore", "apply_patch", true),
        ("explore", "grep", false),
        ("explore", "read", false),
        ("explore", "task", true),
    ];
    for (name, tool, hidden) in cases {
        assert_eq!(
            is_hidden(&agent(name).rules, tool),
            hidden,
            "{name}: {tool}"
        );
    }
}

#[test]
fn user_rules_outrank_the_preset() {
    let plan = agent_with_user_rules(
        agent("plan"),
        &user(&[
            ("edit", "docs/*", Action::Allow),
            ("bash", "*", Action::Ask),
        ]),
    );
    assert_eq!(plan.name, "plan");
    assert_eq!(plan.rules.evaluate("edit", "docs/a.md"), Action::Allow);
    assert_eq!(plan.rules.evaluate("edit", "src/a.rs"), Action::Deny);
    assert_eq!(plan.rules.evaluate("bash", "ls"), Action::Ask);

    let locked = agent_with_user_rules(agent("build"), &user(&[("read", "*", Action::Deny)]));
    assert_eq!(locked.rules.evaluate("read", ".env.example"), Action::Deny);
}

#[test]
fn custom_agents_are_defaults_plus_user() {
    let reviewer = custom_agent(
        "reviewer",
        AgentMode::Subagent,
        &ctx(),
        &user(&[("edit", "*", Action::Deny)]),
    );
    assert_eq!(reviewer.name, "reviewer");
    assert_eq!(reviewer.mode, AgentMode::Subagent);
    assert_eq!(reviewer.rules.evaluate("edit", "a.rs"), Action::Deny);
    assert_eq!(reviewer.rules.evaluate("bash", "ls"), Action::Allow);
    assert_eq!(reviewer.rules.evaluate("read", ".env"), Action::Ask);
    assert_eq!(reviewer.rules.evaluate("question", "*"), Action::Deny);
}

#[test]
fn subagent_derivation_table() {
    use Action::{Allow, Ask, Deny};
    let parent = agent_with_user_rules(
        agent("build"),
        &user(&[
            ("bash", "rm *", Deny),
            ("webfetch", "*", Deny),
            ("external_directory", "/srv/data/*", Allow),
        ]),
    )
    .rules;
    let child = agent_with_user_rules(
        agent("general"),
        &user(&[
            ("bash", "rm -rf *", Allow),
            ("webfetch", "*", Allow),
            ("external_directory", "/opt/*", Allow),
        ]),
    );
    let derived = derive_subagent_rules(&parent, &child);
    // (permission, resource, expected, deciding source is inherited)
    let cases = [
        ("bash", "rm -rf build", Deny, true),
        ("bash", "rm x", Deny, true),
        ("bash", "ls", Allow, false),
        ("webfetch", "https://example.com", Deny, true),
        ("external_directory", "/srv/data/*", Allow, true),
        ("external_directory", "/tmp/*", Allow, true),
        ("external_directory", "/etc/*", Ask, true),
        // The parent's directory scope replaces the child's own widening.
        ("external_directory", "/opt/*", Ask, true),
        ("task", "explore", Deny, true),
        // The child declares todowrite (general denies it), so no extra rule is added.
        ("todowrite", "*", Deny, false),
        // build allows question, so the defaults' deny does not flow down; the child's own
        // defaults still deny it.
        ("question", "*", Deny, false),
        // build never allows plan_exit, so that deny does.
        ("plan_exit", "*", Deny, true),
        ("read", ".env", Ask, false),
        ("edit", "src/a.rs", Allow, false),
    ];
    for (permission, resource, expected, inherited) in cases {
        let decision = derived.explain(permission, resource);
        assert_eq!(decision.action, expected, "{permission} on {resource}");
        assert_eq!(
            decision.source() == RuleSource::Inherited,
            inherited,
            "source of {permission} on {resource}: {:?}",
            decision.source()
        );
    }
    // The child's own rules come first, unchanged.
    assert_eq!(
        &derived.rules()[..child.rules.rules().len()],
        child.rules.rules()
    );
}

#[test]
fn todowrite_and_task_are_denied_unless_declared() {
    let parent = agent("build").rules;
    // (child rules appended to the defaults, todowrite, task)
    let cases: [(Vec<Spec<'_>>, Action, Action); 4] = [
        (vec![], Action::Deny, Action::Deny),
        (
            vec![("todowrite", "*", Action::Allow)],
            Action::Allow,
            Action::Deny,
        ),
        (
            vec![("task", "explore", Action::Allow)],
            Action::Deny,
            Action::Allow,
        ),
        (
            vec![("todowrite", "*", Action::Ask), ("task", "*", Action::Ask)],
            Action::Ask,
            Action::Ask,
        ),
    ];
    for (spec, todowrite, task) in cases {
        let child = custom_agent("helper", AgentMode::Subagent, &ctx(), &user(&spec));
        let derived = derive_subagent_rules(&parent, &child);
        assert_eq!(derived.evaluate("todowrite", "*"), todowrite, "{spec:?}");
        assert_eq!(derived.evaluate("task", "explore"), task, "{spec:?}");
    }
}

#[test]
fn parent_todowrite_deny_beats_child_allow() {
    let parent = agent("general").rules;
    let child = custom_agent(
        "helper",
        AgentMode::Subagent,
        &ctx(),
        &user(&[("todowrite", "*", Action::Allow)]),
    );
    let derived = derive_subagent_rules(&parent, &child);
    assert_eq!(derived.evaluate("todowrite", "*"), Action::Deny);
}

#[test]
fn narrowed_parent_denies_err_strict() {
    // The parent allows `git *` inside a bash deny; the child only gets the deny.
    let parent = default_rules(&ctx()).merged(&user(&[
        ("bash", "*", Action::Deny),
        ("bash", "git *", Action::Allow),
    ]));
    let derived = derive_subagent_rules(&parent, &agent("general"));
    assert_eq!(parent.evaluate("bash", "git status"), Action::Allow);
    assert_eq!(derived.evaluate("bash", "git status"), Action::Deny);

    // A deny the parent fully re-allows is dropped.
    let parent = default_rules(&ctx()).merged(&user(&[
        ("bash", "curl *", Action::Deny),
        ("bash", "*", Action::Ask),
    ]));
    let derived = derive_subagent_rules(&parent, &agent("general"));
    assert_eq!(derived.evaluate("bash", "curl x"), Action::Allow);
}

#[test]
fn covers_is_conservative() {
    let cases = [
        ("*", "anything *", true),
        ("bash", "bash", true),
        ("ba*", "bash", true),
        ("ba*", "b*", false),
        ("git *", "git status", true),
        ("git *", "git", true),
        ("git *", "gitk", false),
        ("src/*", "src/*.rs", false),
    ];
    for (outer, inner, expected) in cases {
        assert_eq!(covers(outer, inner), expected, "{outer} covers {inner}");
    }
}

#[test]
fn every_preset_asks_before_private_fetches_and_project_tool_trust() {
    for name in PRESET_NAMES {
        let agent = preset(name, &ctx()).unwrap();
        // Ask, or deny for agents that deny whatever they do not list; never a silent allow.
        for permission in ["webfetch_private", "custom_tool_trust"] {
            assert_ne!(
                agent.rules.evaluate(permission, "127.0.0.1"),
                Action::Allow,
                "{name} {permission}"
            );
        }
    }
}
