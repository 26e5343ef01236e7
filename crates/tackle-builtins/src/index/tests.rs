//! The index against its model, the scan: over random trees, random edits between calls (made
//! while the index watches, and while no index runs), and random patterns, every grep and glob
//! answer from the index equals the scan's, byte for byte.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use tackle_core::{AnyTool, CallIdentity, CancellationToken, Context, InvocationOutcome};
use tackle_permission::{
    Action, Approver, MemorySavedApprovals, PermissionRequest, PermissionService, Rule, RuleSource,
    Ruleset, SavedApprovals,
};

use super::plan::{Plan, plan};
use super::{IndexOptions, IndexStatus, SearchIndex};
use crate::fs::LocationFs;
use crate::gate::Gate;
use crate::tools::{FileIndex, ToolEnv, search_tools};

const PATHS: [&str; 9] = [
    "a.txt",
    "b.rs",
    "d/c.txt",
    "d/e.log",
    "d/f/g.rs",
    "h/i.txt",
    "h/j.md",
    "k/l/m.txt",
    ".hidden.txt",
];
const DIRS: [&str; 4] = ["d", "d/f", "h", "k"];
const WORDS: [&str; 12] = [
    "foo",
    "Bar",
    "baz",
    "qux",
    "\n",
    "  ",
    "fo",
    "\0",
    "kelvin \u{212A}",
    "ÄÖ",
    "ab\ncd",
    "x1",
];
const IGNORES: [&str; 6] = [
    "",
    "*.log\n",
    "h/\n",
    "d/f/\n",
    "*.log\n!d/e.log\n",
    "k/**\n",
];
const PATTERNS: [&str; 18] = [
    "foo",
    "bar",
    "(?i)bar",
    "fo+",
    "ba[rz]",
    "qux|foo",
    r"\w+",
    "a.c",
    "ba(r|z)",
    r"o\s+q",
    "^foo",
    "Bar$",
    "(?i)kelvin k",
    "xyz",
    "[0-9]",
    "ÄÖ",
    "(foo|ba)(z|r)q",
    "x1?",
];
const TARGETS: [Option<&str>; 6] = [
    None,
    Some("d"),
    Some("h"),
    Some("d/f"),
    Some("k"),
    Some("a.txt"),
];
const INCLUDES: [Option<&str>; 4] = [None, Some("*.txt"), Some("*.{rs,md}"), Some("d/**")];
/// Patterns of `read` rules: files grep must leave out (and count) wherever it answers from.
const READ_PATTERNS: [&str; 6] = ["*", "*.log", "d/*", "h/**", "*/g.rs", "a.txt"];
const GLOBS: [&str; 6] = ["*.txt", "**/*.rs", "d/**", "*", "h/*.md", "**/c.*"];

#[derive(Clone, Debug)]
enum Op {
    Write(usize, Vec<usize>),
    Delete(usize),
    RemoveDir(usize),
    /// Renames a directory to `moved` (replacing what was there), then writes into it.
    MoveDir(usize, Vec<usize>),
    Ignore(usize),
    /// Stops the index, edits, and starts a new one that calls may reach before it is built.
    Restart(usize, Vec<usize>),
    WaitBuilt,
    Query(usize, usize, usize),
    Glob(usize, usize),
}

fn content() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..WORDS.len(), 0..8)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..PATHS.len(), content()).prop_map(|(p, c)| Op::Write(p, c)),
        1 => (0..PATHS.len()).prop_map(Op::Delete),
        1 => (0..DIRS.len()).prop_map(Op::RemoveDir),
        1 => (0..DIRS.len(), content()).prop_map(|(d, c)| Op::MoveDir(d, c)),
        1 => (0..IGNORES.len()).prop_map(Op::Ignore),
        1 => (0..PATHS.len(), content()).prop_map(|(p, c)| Op::Restart(p, c)),
        1 => Just(Op::WaitBuilt),
        6 => (0..PATTERNS.len(), 0..TARGETS.len(), 0..INCLUDES.len())
            .prop_map(|(p, t, i)| Op::Query(p, t, i)),
        3 => (0..GLOBS.len(), 0..TARGETS.len()).prop_map(|(g, t)| Op::Glob(g, t)),
    ]
}

fn write(root: &Path, path: usize, words: &[usize]) {
    let path = root.join(PATHS[path]);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = words.iter().map(|w| WORDS[*w]).collect();
    std::fs::write(path, text).unwrap();
}

fn apply(root: &Path, op: &Op) {
    match op {
        Op::Write(path, words) | Op::Restart(path, words) => write(root, *path, words),
        Op::Delete(path) => {
            let _ = std::fs::remove_file(root.join(PATHS[*path]));
        }
        Op::RemoveDir(dir) => {
            let _ = std::fs::remove_dir_all(root.join(DIRS[*dir]));
        }
        Op::MoveDir(dir, words) => {
            let _ = std::fs::remove_dir_all(root.join("moved"));
            if std::fs::rename(root.join(DIRS[*dir]), root.join("moved")).is_ok() {
                let text: String = words.iter().map(|w| WORDS[*w]).collect();
                std::fs::write(root.join("moved/new.txt"), text).unwrap();
            }
        }
        Op::Ignore(rules) => std::fs::write(root.join(".gitignore"), IGNORES[*rules]).unwrap(),
        Op::WaitBuilt | Op::Query(..) | Op::Glob(..) => {}
    }
}

fn call(env: &ToolEnv, name: &str, args: Value) -> String {
    let tool: AnyTool = search_tools(env)
        .into_iter()
        .find(|(tool, _)| *tool == name)
        .unwrap()
        .1;
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match runtime
        .block_on(tool.invoke(args.to_string().into(), cx))
        .outcome
    {
        InvocationOutcome::Completed(output) => output.structured.to_string(),
        InvocationOutcome::Failed(failure) => format!("failed: {failure}"),
        other => panic!("unexpected outcome {other:?}"),
    }
}

/// An index of `root` saved in `store`, so a restarted one loads it and checks it.
fn start(root: &Path, store: &Path) -> SearchIndex {
    SearchIndex::start(
        root,
        IndexOptions {
            store_dir: Some(store.to_path_buf()),
            ..IndexOptions::default()
        },
    )
}

/// Nobody answers: the rules below allow every other question.
struct NoOne;

impl Approver for NoOne {
    fn ask(&self, _request: &PermissionRequest) {}
}

/// Tools under `read` rules (everything else allowed), with an approval saved for `saved`.
fn gated(fs: &LocationFs, reads: &[(usize, Action)], saved: Option<usize>) -> ToolEnv {
    let approvals = Arc::new(MemorySavedApprovals::new());
    if let Some(pattern) = saved {
        approvals.save("p", "read", READ_PATTERNS[pattern]).unwrap();
    }
    let service = Arc::new(PermissionService::new("p", Arc::new(NoOne), approvals).unwrap());
    let rules: Ruleset = std::iter::once(Rule::new("*", "*", Action::Allow, RuleSource::Default))
        .chain(reads.iter().map(|(pattern, action)| {
            Rule::new(
                "read",
                READ_PATTERNS[*pattern],
                *action,
                RuleSource::Default,
            )
        }))
        .collect();
    ToolEnv::new(fs.clone()).with_gate(Gate::new(service, move |_| rules.clone()))
}

fn run(
    tree: &[(usize, Vec<usize>)],
    ops: &[Op],
    reads: &[(usize, Action)],
    saved: Option<usize>,
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    for (path, words) in tree {
        write(&root, *path, words);
    }
    let fs = LocationFs::new(&root).unwrap();
    let scan = gated(&fs, reads, saved);
    let store = tempfile::tempdir().unwrap();
    let mut index = start(&root, store.path());
    prop_assert!(index.wait_built(Duration::from_secs(10)));
    for op in ops {
        if let Op::Restart(..) = op {
            drop(index);
            apply(&root, op);
            index = start(&root, store.path());
            continue;
        }
        apply(&root, op);
        match op {
            Op::WaitBuilt => {
                prop_assert!(index.wait_built(Duration::from_secs(10)));
            }
            Op::Query(pattern, target, include) => {
                let mut args = json!({"pattern": PATTERNS[*pattern]});
                if let Some(target) = TARGETS[*target] {
                    args["path"] = json!(target);
                }
                if let Some(include) = INCLUDES[*include] {
                    args["include"] = json!(include);
                }
                let indexed = gated(&fs, reads, saved).with_index(Arc::new(index.clone()));
                let from_index = call(&indexed, "grep", args.clone());
                let from_scan = call(&scan, "grep", args.clone());
                prop_assert_eq!(from_index, from_scan, "{}", args);
            }
            Op::Glob(pattern, target) => {
                let mut args = json!({"pattern": GLOBS[*pattern]});
                if let Some(target) = TARGETS[*target] {
                    args["path"] = json!(target);
                }
                let indexed = gated(&fs, reads, saved).with_index(Arc::new(index.clone()));
                let from_index = call(&indexed, "glob", args.clone());
                let from_scan = call(&scan, "glob", args.clone());
                prop_assert_eq!(from_index, from_scan, "{}", args);
            }
            _ => {}
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if std::env::var_os("TACKLE_DEEP").is_some() { 1000 } else { 64 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn grep_and_glob_from_the_index_equal_a_scan_after_any_edits(
        tree in prop::collection::vec((0..PATHS.len(), content()), 0..9),
        ops in prop::collection::vec(op(), 1..24),
        reads in prop::collection::vec(
            (0..READ_PATTERNS.len(), prop::sample::select(&[Action::Allow, Action::Ask, Action::Deny][..])),
            0..3,
        ),
        saved in prop::option::of(0..READ_PATTERNS.len()),
    ) {
        run(&tree, &ops, &reads, saved)?;
    }
}

#[test]
fn an_edit_that_adds_a_match_is_found_by_the_next_call_from_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.rs"), "fn one() {}\n").unwrap();
    let store = tempfile::tempdir().unwrap();
    let index = start(&root, store.path());
    assert!(index.wait_built(Duration::from_secs(10)));
    assert!(matches!(
        index.status(),
        IndexStatus::Ready { files: 1, .. }
    ));
    let listed = |pattern: &str| {
        let listed = index.grep_files(&root, pattern).unwrap();
        let mut files: Vec<(String, bool)> = listed
            .files
            .iter()
            .map(|file| {
                let path = listed.base.join(listed.path(file));
                (
                    path.strip_prefix(&root).unwrap().display().to_string(),
                    file.search,
                )
            })
            .collect();
        files.sort();
        files
    };
    assert_eq!(listed("needle_x"), [("src/a.rs".to_owned(), false)]);
    std::fs::write(root.join("src/a.rs"), "fn needle_x() {}\n").unwrap();
    std::fs::create_dir_all(root.join("src/new/deeper")).unwrap();
    std::fs::write(root.join("src/new/deeper/b.rs"), "needle_x\n").unwrap();
    assert_eq!(
        listed("needle_x"),
        [
            ("src/a.rs".to_owned(), true),
            ("src/new/deeper/b.rs".to_owned(), true)
        ]
    );
}

#[test]
fn a_pattern_without_literals_searches_every_file() {
    assert_eq!(plan(r"\w+\s\d"), Plan::All);
    assert_eq!(plan("[a-z]{3}"), Plan::All);
}

#[test]
fn a_new_directory_that_an_ignore_rule_then_covers_stays_out_of_later_calls() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("d/c.txt"), "").unwrap();
    let store = tempfile::tempdir().unwrap();
    let index = start(&root, store.path());
    assert!(index.wait_built(Duration::from_secs(10)));
    std::fs::create_dir_all(root.join("d/f")).unwrap();
    std::fs::write(root.join("d/f/g.rs"), "").unwrap();
    std::fs::write(root.join(".gitignore"), "d/f/\n").unwrap();
    let files = || {
        let mut files = Vec::new();
        assert!(index.glob_files(&root, &mut |path, _| files.push(path.to_path_buf())));
        files.sort();
        files
    };
    // The first call walks the root again; the next ones must not walk the ignored new
    // directory from itself.
    for _ in 0..3 {
        assert_eq!(files(), [Path::new(".gitignore"), Path::new("d/c.txt")]);
    }
}
