//! Unit tests of the grep tool: ignore rules, symlinks, binary files, ordering, limits, long
//! lines, refusals and cancellation.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tackle_core::{
    AnyTool, CallIdentity, CancellationToken, Content, Context, InvocationOutcome, ToolFailure,
};
use tempfile::TempDir;

use super::search::{self, Query, clip};
use super::{GrepOutput, LIMIT};
use crate::fs::LocationFs;
use crate::tools::ToolEnv;

/// Writes `files` (with parents) below `root` as `(path, content)` pairs.
fn populate(root: &Path, files: &[(&str, &str)]) {
    for (file, content) in files {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
    }
}

fn location(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path(), files);
    dir
}

fn env(dir: &TempDir) -> ToolEnv {
    ToolEnv::new(LocationFs::new(dir.path()).unwrap())
}

fn cx(cancel: CancellationToken) -> Context {
    Context::new(CallIdentity::new("s", "build", "m", "c"), cancel)
}

/// Invokes the erased grep tool the way a registry does.
async fn invoke(env: &ToolEnv, args: Value) -> Result<(GrepOutput, String), ToolFailure> {
    let tool: AnyTool = super::tool(env);
    match tool
        .invoke(args.into(), cx(CancellationToken::new()))
        .await
        .outcome
    {
        InvocationOutcome::Completed(output) => {
            let text = match output.content.as_slice() {
                [Content::Text { text }] => text.clone(),
                other => panic!("expected one text part, got {other:?}"),
            };
            Ok((serde_json::from_value(output.structured).unwrap(), text))
        }
        InvocationOutcome::Failed(failure) => Err(failure),
        other => panic!("unexpected outcome {other:?}"),
    }
}

async fn grep(env: &ToolEnv, args: Value) -> GrepOutput {
    let (output, text) = invoke(env, args).await.expect("grep should succeed");
    assert_eq!(text, output.output, "the projection is the output text");
    output
}

async fn refused(env: &ToolEnv, args: Value) -> String {
    match invoke(env, args).await {
        Ok((output, _)) => panic!("expected a failure, got {}", output.output),
        Err(failure) => failure.to_string(),
    }
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

fn line_rows(output: &str) -> usize {
    output.lines().filter(|l| l.starts_with("  Line ")).count()
}

#[tokio::test]
async fn finds_matches_grouped_by_file_with_line_numbers() {
    let dir = location(&[
        ("src/a.rs", "fn main() {}\nlet x = 1;\nfn helper() {}\n"),
        ("b.txt", "nothing here\n"),
    ]);
    let out = grep(&env(&dir), json!({"pattern": "fn \\w+"})).await;
    assert_eq!(
        out.output,
        "Found 2 matches\n\nsrc/a.rs:\n  Line 1: fn main() {}\n  Line 3: fn helper() {}"
    );
    assert_eq!(
        (out.total, out.shown, out.files, out.truncated),
        (2, 2, 1, false)
    );
}

#[tokio::test]
async fn no_matches_says_so() {
    let dir = location(&[("a.txt", "alpha\n")]);
    let out = grep(&env(&dir), json!({"pattern": "omega"})).await;
    assert_eq!(out.output, "No matches found");
    assert_eq!((out.total, out.files), (0, 0));
}

#[tokio::test]
async fn gitignore_is_respected_outside_a_git_repository() {
    let dir = location(&[
        (".gitignore", "ignored/\n*.log\n"),
        ("ignored/a.txt", "needle\n"),
        ("debug.log", "needle\n"),
        (".ignore", "private.txt\n"),
        ("private.txt", "needle\n"),
        ("kept.txt", "needle\n"),
    ]);
    let out = grep(&env(&dir), json!({"pattern": "needle"})).await;
    assert_eq!(out.total, 1, "{}", out.output);
    assert!(out.output.contains("kept.txt:"), "{}", out.output);
}

#[tokio::test]
async fn an_explicitly_named_ignored_directory_is_searched() {
    let dir = location(&[
        (".gitignore", "build/\nout/**\n"),
        ("build/gen.txt", "needle\n"),
        ("out/deep/gen.txt", "needle\n"),
        ("main.txt", "needle\n"),
    ]);
    let env = env(&dir);
    let out = grep(&env, json!({"pattern": "needle", "path": "build"})).await;
    assert_eq!(out.total, 1, "{}", out.output);
    assert!(out.output.contains("build/gen.txt:"), "{}", out.output);

    // `out/**` ignores every descendant, so the root's parents' rules must not reach inside.
    let out = grep(&env, json!({"pattern": "needle", "path": "out"})).await;
    assert_eq!(out.total, 1, "{}", out.output);
    assert!(out.output.contains("out/deep/gen.txt:"), "{}", out.output);

    // The whole Location still hides both.
    let out = grep(&env, json!({"pattern": "needle"})).await;
    assert_eq!(out.total, 1, "{}", out.output);
    assert!(out.output.contains("main.txt:"), "{}", out.output);
}

#[tokio::test]
async fn a_subdirectory_still_obeys_its_parents_rules() {
    let dir = location(&[
        (".gitignore", "*.log\n"),
        ("sub/a.log", "needle\n"),
        ("sub/a.txt", "needle\n"),
    ]);
    let out = grep(&env(&dir), json!({"pattern": "needle", "path": "sub"})).await;
    assert_eq!(out.total, 1, "{}", out.output);
    assert!(out.output.contains("sub/a.txt:"), "{}", out.output);
}

#[tokio::test]
async fn hidden_files_are_searched_but_git_is_not() {
    let dir = location(&[
        (".env.example", "needle\n"),
        (".config/tool.toml", "needle\n"),
        (".git/config", "needle\n"),
        (".git/HEAD", "needle\n"),
    ]);
    let out = grep(&env(&dir), json!({"pattern": "needle"})).await;
    assert_eq!(out.total, 2, "{}", out.output);
    assert!(out.output.contains(".env.example:"), "{}", out.output);
    assert!(out.output.contains(".config/tool.toml:"), "{}", out.output);
    assert!(!out.output.contains(".git/"), "{}", out.output);
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_loop_terminates_and_linked_files_are_searched() {
    let dir = location(&[("real/a.txt", "needle\n"), ("top.txt", "needle\n")]);
    std::os::unix::fs::symlink(dir.path(), dir.path().join("real/loop")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        grep(&env(&dir), json!({"pattern": "needle"})),
    )
    .await
    .expect("the walk must terminate");
    // top.txt, real/a.txt, and alias/a.txt through the directory link.
    assert_eq!(out.total, 3, "{}", out.output);
    assert!(out.output.contains("alias/a.txt:"), "{}", out.output);
    assert!(!out.output.contains("could not be read"), "{}", out.output);
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_leading_outside_the_location_are_not_followed() {
    let outside = location(&[("secret.txt", "needle\n")]);
    let dir = location(&[("inside.txt", "needle\n")]);
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    let out = grep(&env(&dir), json!({"pattern": "needle"})).await;
    assert_eq!(out.total, 1, "{}", out.output);
    assert!(!out.output.contains("secret"), "{}", out.output);
    assert!(
        out.output.contains("1 symlink leading outside"),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn binary_files_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.so"), b"\x7fELF\0\0needle\0\x01").unwrap();
    std::fs::write(dir.path().join("text.txt"), "needle\n").unwrap();
    let out = grep(&env(&dir), json!({"pattern": "needle"})).await;
    assert_eq!(out.total, 1, "{}", out.output);
    assert!(!out.output.contains("lib.so"), "{}", out.output);
    assert!(
        out.output.contains("(1 binary file was skipped.)"),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn a_file_path_searches_only_that_file() {
    let dir = location(&[
        ("pkg/one.txt", "needle one\n"),
        ("pkg/two.txt", "needle two\n"),
    ]);
    let out = grep(
        &env(&dir),
        json!({"pattern": "needle", "path": "pkg/one.txt"}),
    )
    .await;
    assert_eq!(
        out.output,
        "Found 1 match\n\npkg/one.txt:\n  Line 1: needle one"
    );
}

#[tokio::test]
async fn include_filters_by_name_and_by_relative_path() {
    let dir = location(&[
        ("web/a.ts", "needle\n"),
        ("web/b.tsx", "needle\n"),
        ("web/c.js", "needle\n"),
        ("src/lib.rs", "needle\n"),
        ("tests/lib.rs", "needle\n"),
    ]);
    let env = env(&dir);
    let out = grep(&env, json!({"pattern": "needle", "include": "*.{ts,tsx}"})).await;
    assert_eq!((out.total, out.files), (2, 2), "{}", out.output);
    assert!(!out.output.contains("c.js"), "{}", out.output);

    let out = grep(&env, json!({"pattern": "needle", "include": "src/*.rs"})).await;
    assert_eq!(out.total, 1, "{}", out.output);
    assert!(out.output.contains("src/lib.rs:"), "{}", out.output);

    let err = refused(&env, json!({"pattern": "needle", "include": "a[b"})).await;
    assert!(
        err.contains("`include` (`a[b`) is not a valid glob"),
        "{err}"
    );
}

#[tokio::test]
async fn files_are_ordered_newest_first_then_by_line() {
    let dir = location(&[
        ("old.txt", "needle 1\nx\nneedle 3\n"),
        ("new.txt", "needle A\nneedle B\n"),
        ("mid.txt", "needle M\n"),
    ]);
    set_mtime(&dir.path().join("old.txt"), 3000);
    set_mtime(&dir.path().join("mid.txt"), 2000);
    set_mtime(&dir.path().join("new.txt"), 1000);
    let out = grep(&env(&dir), json!({"pattern": "needle"})).await;
    assert_eq!(
        out.output,
        "Found 5 matches\n\n\
         new.txt:\n  Line 1: needle A\n  Line 2: needle B\n\n\
         mid.txt:\n  Line 1: needle M\n\n\
         old.txt:\n  Line 1: needle 1\n  Line 3: needle 3"
    );
}

#[tokio::test]
async fn the_true_total_is_reported_when_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 250 matches over 5 files; the newest file's lines come first.
    for (i, age) in [(0, 500), (1, 400), (2, 300), (3, 200), (4, 100)] {
        let path = dir.path().join(format!("f{i}.txt"));
        std::fs::write(&path, "needle\n".repeat(50)).unwrap();
        set_mtime(&path, age);
    }
    let out = grep(&env(&dir), json!({"pattern": "needle"})).await;
    assert!(
        out.output
            .starts_with("Found 250 matches (showing the first 100)\n\nf4.txt:\n  Line 1:"),
        "{}",
        out.output
    );
    assert_eq!(line_rows(&out.output), 100);
    assert_eq!((out.total, out.shown, out.files), (250, 100, 5));
    assert!(out.truncated);
    assert!(out.output.contains("f3.txt:"), "{}", out.output);
    assert!(!out.output.contains("f2.txt:"), "{}", out.output);
    assert!(out.output.contains("Narrow `path`"), "{}", out.output);
}

#[tokio::test]
async fn exactly_the_limit_is_not_truncated() {
    let dir = location(&[("a.txt", &"needle\n".repeat(LIMIT))]);
    let out = grep(&env(&dir), json!({"pattern": "needle"})).await;
    assert_eq!((out.total, out.shown, out.truncated), (100, 100, false));
    assert!(
        out.output.starts_with("Found 100 matches\n"),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn an_invalid_regex_quotes_the_engine() {
    let dir = location(&[("a.txt", "x\n")]);
    let err = refused(&env(&dir), json!({"pattern": "fn (main"})).await;
    assert!(
        err.contains("`pattern` is not a valid regular expression"),
        "{err}"
    );
    assert!(err.contains("unclosed group"), "{err}");
}

#[tokio::test]
async fn an_empty_pattern_is_refused() {
    let dir = location(&[("a.txt", "x\n")]);
    let err = refused(&env(&dir), json!({"pattern": ""})).await;
    assert!(err.contains("`pattern` is empty"), "{err}");
}

#[tokio::test]
async fn a_missing_path_is_a_clear_error() {
    let dir = location(&[("a.txt", "x\n")]);
    let err = refused(&env(&dir), json!({"pattern": "x", "path": "nope/deeper"})).await;
    assert!(err.contains("Path not found: `nope/deeper`"), "{err}");
}

#[tokio::test]
async fn a_giant_single_line_is_searched_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut line = "a".repeat(20 * 1024 * 1024);
    line.replace_range(10_000_000..10_000_006, "needle");
    std::fs::write(dir.path().join("huge.txt"), &line).unwrap();
    drop(line);
    let started = Instant::now();
    let out = grep(&env(&dir), json!({"pattern": "needle"})).await;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(out.total, 1, "{}", &out.output[..200]);
    assert!(out.output.len() < 3 * 1024, "{} bytes", out.output.len());
    assert!(
        out.output.ends_with("… (line truncated to 2,000 chars)"),
        "{}",
        &out.output[out.output.len() - 100..]
    );
}

#[test]
fn clip_cuts_by_characters_and_drops_the_terminator() {
    assert_eq!(clip(b"short\r\n"), ("short".to_owned(), false));
    let long = "é".repeat(3000);
    let (text, cut) = clip(long.as_bytes());
    assert!(cut);
    assert_eq!(text.chars().count(), 2000);
    let exact = "x".repeat(2000);
    assert_eq!(clip(exact.as_bytes()), (exact, false));
}

/// A tree of `n` files, each containing `needle`.
fn many_files(n: usize) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        let sub = dir.path().join(format!("d{}", i % 20));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.txt")), "needle\n").unwrap();
    }
    dir
}

fn query(root: &Path) -> Query {
    Query {
        root: root.to_path_buf(),
        boundary: crate::tools::walk::Boundary::new(root),
        matcher: super::matcher::LineMatcher::new("needle").unwrap(),
        include: None,
        limit: LIMIT,
        readable: crate::tools::readable::Readable::new(
            &ToolEnv::new(LocationFs::new(root).unwrap()),
            &cx(CancellationToken::new()),
        ),
    }
}

#[test]
fn a_stop_request_quits_the_walk_early() {
    let dir = many_files(3000);
    let full = search::search(query(dir.path()), &|| false);
    assert_eq!((full.total, full.searched), (3000, 3000));
    assert!(!full.stopped);

    // Stop after the 50th poll: the walk quits instead of searching the rest.
    let polls = AtomicUsize::new(0);
    let stop = || polls.fetch_add(1, Ordering::Relaxed) >= 50;
    let part = search::search(query(dir.path()), &stop);
    assert!(part.stopped);
    assert!(part.searched < 500, "searched {} files", part.searched);
    assert!(part.total <= part.searched);

    let none = search::search(query(dir.path()), &|| true);
    assert!(none.stopped);
    assert_eq!((none.searched, none.total), (0, 0));
}

#[tokio::test]
async fn cancellation_interrupts_the_call_promptly() {
    let dir = many_files(3000);
    let env = env(&dir);
    let cancel = CancellationToken::new();
    let call = super::tool(&env).invoke(json!({"pattern": "needle"}).into(), cx(cancel.clone()));
    let handle = tokio::spawn(call);
    tokio::time::sleep(Duration::from_millis(1)).await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("the call must end")
        .unwrap()
        .outcome;
    assert!(cancelled_at.elapsed() < Duration::from_secs(2));
    // Either the cancellation won, or the search finished first with a complete result.
    match outcome {
        InvocationOutcome::Interrupted(_) => {}
        InvocationOutcome::Completed(output) => {
            let out: GrepOutput = serde_json::from_value(output.structured).unwrap();
            assert_eq!(out.total, 3000);
        }
        other => panic!("unexpected outcome {other:?}"),
    }
}

/// An approver that records what it was asked and never answers.
#[derive(Default)]
struct Silent(std::sync::Mutex<Vec<String>>);

impl tackle_permission::Approver for Silent {
    fn ask(&self, request: &tackle_permission::PermissionRequest) {
        self.0.lock().unwrap().push(request.permission.clone());
    }
}

/// `dir`'s environment under a gate with `rules` (after allowing everything) and the approvals
/// `saved`, and what its approver was asked.
fn gated(
    dir: &TempDir,
    rules: &[(&str, &str, tackle_permission::Action)],
    saved: &[(&str, &str)],
) -> (ToolEnv, Arc<Silent>) {
    use tackle_permission::{
        Action, MemorySavedApprovals, PermissionService, Rule, RuleSource, Ruleset, SavedApprovals,
    };
    let mut ruleset = Ruleset::new();
    ruleset.push(Rule::new("*", "*", Action::Allow, RuleSource::Default));
    for (permission, pattern, action) in rules {
        ruleset.push(Rule::new(permission, pattern, *action, RuleSource::Default));
    }
    let store = MemorySavedApprovals::new();
    for (permission, pattern) in saved {
        store.save("p", permission, pattern).unwrap();
    }
    let approver = Arc::new(Silent::default());
    let service = Arc::new(PermissionService::new("p", approver.clone(), Arc::new(store)).unwrap());
    let gate = crate::gate::Gate::new(service, move |_| ruleset.clone());
    (env(dir).with_gate(gate), approver)
}

/// A Location with a secret in `.env` and `conf/prod.env`, a link to `.env`, and one plain file.
fn secrets() -> TempDir {
    let dir = location(&[
        ("a.txt", "K=public\n"),
        (".env", "K=sk-live\n"),
        ("conf/prod.env", "K=sk-prod\n"),
    ]);
    std::os::unix::fs::symlink(dir.path().join(".env"), dir.path().join("settings")).unwrap();
    dir
}

#[tokio::test]
async fn grep_skips_files_whose_read_is_denied_or_would_ask() {
    use tackle_permission::Action;
    let dir = secrets();
    // `.env` files ask (as the defaults say), `conf/` is denied.
    let (env, asked) = gated(
        &dir,
        &[
            ("read", "*.env", Action::Ask),
            ("read", "conf/*", Action::Deny),
        ],
        &[],
    );
    for path in [
        None,
        Some("."),
        Some(".env"),
        Some("settings"),
        Some("conf"),
    ] {
        let mut args = json!({"pattern": "K="});
        if let Some(path) = path {
            args["path"] = json!(path);
        }
        let out = grep(&env, args).await;
        assert!(!out.output.contains("sk-"), "{path:?}: {}", out.output);
        let withheld = match path {
            None | Some(".") => 3,
            _ => 1,
        };
        let note = if withheld == 1 {
            "(1 file was not searched because your permission rules deny reading it or ask first"
                .to_owned()
        } else {
            format!(
                "({withheld} files were not searched because your permission rules deny reading them"
            )
        };
        assert!(out.output.contains(&note), "{path:?}: {}", out.output);
        let expected = usize::from(path.is_none() || path == Some("."));
        assert_eq!(out.total, expected, "{path:?}: {}", out.output);
    }
    assert!(
        !asked.0.lock().unwrap().contains(&"read".to_owned()),
        "grep asks nobody about the files it leaves out"
    );
}

#[tokio::test]
async fn a_saved_approval_to_read_a_file_lets_grep_search_it() {
    use tackle_permission::Action;
    let dir = secrets();
    let (env, _) = gated(&dir, &[("read", "*.env", Action::Ask)], &[("read", ".env")]);
    let out = grep(&env, json!({"pattern": "K="})).await;
    assert!(out.output.contains("K=sk-live"), "{}", out.output);
    assert!(!out.output.contains("sk-prod"), "{}", out.output);
    assert_eq!(
        out.total, 3,
        "a.txt, .env and the link to it: {}",
        out.output
    );
}
