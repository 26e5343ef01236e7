//! Benchmarks: one evaluation against a realistic 200-rule ruleset, with the deciding rule near
//! the end (found first, the scan runs backwards), near the start, and with no matching rule.
//!
//! Run with `cargo bench -p tackle-permission --bench evaluate`. The target is at most 2 µs per
//! evaluation.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tackle_permission::{Action, Rule, RuleSource, Ruleset};

const RULES: usize = 200;

/// Commands that get a `cmd *` prefix rule, a literal rule, or both.
const COMMANDS: &[&str] = &[
    "git status",
    "git log",
    "git diff",
    "git show",
    "git branch",
    "git fetch",
    "git add",
    "git commit",
    "git stash",
    "git rev-parse",
    "cargo build",
    "cargo test",
    "cargo check",
    "cargo clippy",
    "cargo fmt",
    "cargo doc",
    "cargo tree",
    "npm run",
    "npm test",
    "npm ci",
    "pnpm install",
    "pnpm run",
    "yarn test",
    "make",
    "cmake",
    "ninja",
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "fd",
    "find",
    "tree",
    "pwd",
    "echo",
    "which",
    "env",
    "date",
    "python -m pytest",
    "pytest",
    "go test",
    "go build",
    "go vet",
    "docker ps",
    "docker images",
    "kubectl get",
    "kubectl describe",
];

/// Globs with a star in the middle.
const MIDDLE_GLOBS: &[&str] = &[
    "git * --force",
    "git push * main",
    "rm * -rf",
    "rm -rf *",
    "docker * --privileged",
    "curl * | sh",
    "chmod * /etc/*",
    "sudo *",
    "npm publish*",
    "cargo publish*",
    "git reset --hard*",
    "kubectl delete * --all",
    "* > /dev/sda",
    "dd if=* of=/dev/*",
    "mkfs.*",
    "find * -delete",
];

/// Path patterns for file permissions.
const PATHS: &[&str] = &[
    "src/*",
    "tests/*",
    "benches/*",
    "docs/*.md",
    "*.lock",
    "*.env",
    "*.env.*",
    "*.env.example",
    "/home/u/projects/*/target/*",
    "/home/u/.ssh/*",
    "/home/u/.aws/*",
    "/etc/*",
    "/tmp/*",
    "*/node_modules/*",
    "*.pem",
    "*.key",
    "Cargo.toml",
    "package.json",
    ".git/*",
    "?*.bak",
];

/// A 200-rule ruleset. Rule 0 is `bash *: ask` when `catch_all`, else an unrelated rule; the last
/// rule denies `git push --force`.
fn ruleset(catch_all: bool) -> Ruleset {
    let source = || RuleSource::Config {
        key: "permission.bash".into(),
    };
    let mut rules = Ruleset::new();
    if catch_all {
        rules.push(Rule::new("bash", "*", Action::Ask, source()));
    } else {
        rules.push(Rule::new("task", "review", Action::Ask, source()));
    }
    rules.push(Rule::new(
        "doom_loop",
        "*",
        Action::Ask,
        RuleSource::Default,
    ));
    rules.push(Rule::new("mcp_*", "*", Action::Ask, RuleSource::Default));
    rules.push(Rule::new(
        "mcp_github_*",
        "*",
        Action::Allow,
        RuleSource::Default,
    ));
    let mut command = COMMANDS.iter().cycle();
    let mut glob = MIDDLE_GLOBS.iter().cycle();
    let mut path = PATHS.iter().cycle();
    let mut n = 0;
    while rules.len() < RULES - 1 {
        let (permission, pattern, action) = match n % 10 {
            // Prefix rules dominate real configurations.
            0..=3 => (
                "bash",
                format!("{} *", command.next().unwrap()),
                Action::Allow,
            ),
            4 => ("bash", (*command.next().unwrap()).to_owned(), Action::Allow),
            5 | 6 => ("bash", (*glob.next().unwrap()).to_owned(), Action::Deny),
            7 => ("edit", (*path.next().unwrap()).to_owned(), Action::Ask),
            8 => ("read", (*path.next().unwrap()).to_owned(), Action::Allow),
            _ => (
                "external_directory",
                (*path.next().unwrap()).to_owned(),
                Action::Allow,
            ),
        };
        rules.push(Rule::new(permission, &pattern, action, source()));
        n += 1;
    }
    rules.push(Rule::new(
        "bash",
        "git push --force*",
        Action::Deny,
        source(),
    ));
    assert_eq!(rules.len(), RULES);
    rules
}

/// One timed evaluation, with the deciding rule it must reach.
struct Case<'a> {
    name: &'a str,
    rules: &'a Ruleset,
    permission: &'a str,
    resource: &'a str,
    action: Action,
    deciding: Option<usize>,
}

fn bench_evaluate(c: &mut Criterion) {
    let with_catch_all = ruleset(true);
    let without = ruleset(false);
    let case = |name, rules, permission, resource, action, deciding| Case {
        name,
        rules,
        permission,
        resource,
        action,
        deciding,
    };
    let cases = [
        case(
            "near_end",
            &with_catch_all,
            "bash",
            "git push --force origin main",
            Action::Deny,
            Some(RULES - 1),
        ),
        case(
            "near_start",
            &with_catch_all,
            "bash",
            "frobnicate --verbose --output=/tmp/x",
            Action::Ask,
            Some(0),
        ),
        case(
            "near_start_mcp",
            &with_catch_all,
            "mcp_jira_search",
            "project = TACKLE",
            Action::Ask,
            Some(2),
        ),
        case(
            "no_match_bash",
            &without,
            "bash",
            "frobnicate --verbose --output=/tmp/x",
            Action::Ask,
            None,
        ),
        case(
            "no_match_path",
            &without,
            "edit",
            "/home/u/projects/tackle/README.txt",
            Action::Ask,
            None,
        ),
        case(
            "no_match_windows_path",
            &without,
            "edit",
            "C:\\Users\\u\\tackle\\README.txt",
            Action::Ask,
            None,
        ),
        case(
            "no_match_permission",
            &without,
            "webfetch",
            "https://example.com/docs",
            Action::Ask,
            None,
        ),
    ];
    let mut group = c.benchmark_group("evaluate_200_rules");
    for Case {
        name,
        rules,
        permission,
        resource,
        action,
        deciding,
    } in cases
    {
        // Check the case is what it claims before timing it.
        let decision = rules.explain(permission, resource);
        assert_eq!(decision.action, action, "{name}");
        let index = decision.rule.map(|rule| {
            rules
                .rules()
                .iter()
                .position(|r| std::ptr::eq(r, rule))
                .unwrap()
        });
        assert_eq!(index, deciding, "{name}");
        group.bench_function(name, |b| {
            b.iter(|| black_box(rules).evaluate(black_box(permission), black_box(resource)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_evaluate);
criterion_main!(benches);
