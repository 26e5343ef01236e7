//! Unit tests of the list tool: tree shape, skipping, ignore rules, limits and refusals.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde_json::{Value, json};
use tackle_core::{
    AnyTool, CallIdentity, CancellationToken, Content, Context, InvocationOutcome, ToolFailure,
};
use tackle_permission::{
    Approver, MemorySavedApprovals, PermissionRequest, PermissionService, PresetContext, Reply,
    preset,
};
use tempfile::TempDir;

use super::{ListOutput, thousands};
use crate::fs::LocationFs;
use crate::gate::Gate;
use crate::tools::{FileToolOptions, ToolEnv};

/// Creates `files` (with parents) below `root`; a name ending in `/` is an empty directory.
fn populate(root: &Path, files: &[&str]) {
    for file in files {
        let path = root.join(file);
        if file.ends_with('/') {
            std::fs::create_dir_all(&path).unwrap();
        } else {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x").unwrap();
        }
    }
}

fn location(files: &[&str]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path(), files);
    dir
}

fn env(dir: &TempDir) -> ToolEnv {
    ToolEnv::new(LocationFs::new(dir.path()).unwrap())
}

fn cx() -> Context {
    Context::new(
        CallIdentity::new("session", "build", "message", "call"),
        CancellationToken::new(),
    )
}

/// Invokes the erased list tool the way a registry does.
async fn invoke(env: &ToolEnv, args: Value) -> Result<(ListOutput, String), ToolFailure> {
    let tool: AnyTool = super::tool(env);
    match tool.invoke(args.into(), cx()).await.outcome {
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

async fn listing(env: &ToolEnv, args: Value) -> ListOutput {
    let (output, text) = invoke(env, args).await.expect("list should succeed");
    assert_eq!(text, output.output, "the projection is the output text");
    output
}

#[tokio::test]
async fn tree_lists_directories_first_sorted_and_indented() {
    let dir = location(&[
        "b.txt",
        "a.txt",
        "zdir/inner.rs",
        "adir/sub/deep.md",
        "adir/file.md",
        "adir/Empty/",
    ]);
    let out = listing(&env(&dir), json!({})).await;
    assert_eq!(
        out.output,
        "./\n  adir/\n    Empty/\n    sub/\n      deep.md\n    file.md\n  zdir/\n    inner.rs\n  \
         a.txt\n  b.txt"
    );
    assert_eq!(out.path, ".");
    assert_eq!((out.entries, out.total, out.truncated), (9, 9, false));
}

#[tokio::test]
async fn subdirectory_is_listed_under_its_display_path() {
    let dir = location(&["src/lib.rs", "src/nested/mod.rs", "other.txt"]);
    let out = listing(&env(&dir), json!({ "path": "src" })).await;
    assert_eq!(out.output, "src/\n  nested/\n    mod.rs\n  lib.rs");
    assert_eq!(out.path, "src");
    assert_eq!(out.total, 3);
}

#[tokio::test]
async fn build_and_cache_directories_are_skipped() {
    let dir = location(&[
        "node_modules/left-pad/index.js",
        "target/debug/app",
        ".git/HEAD",
        "__pycache__/m.pyc",
        "web/node_modules/react/index.js",
        "web/app.js",
        "src/main.rs",
        "build",
    ]);
    let out = listing(&env(&dir), json!({})).await;
    assert_eq!(
        out.output,
        "./\n  src/\n    main.rs\n  web/\n    app.js\n  build"
    );
    assert_eq!(out.total, 5);
}

#[tokio::test]
async fn gitignore_and_ignore_files_are_respected_without_a_repository() {
    let dir = location(&[
        "secret.txt",
        "generated/out.rs",
        "notes.draft",
        "src/keep.rs",
        "src/cache.bin",
    ]);
    assert!(!dir.path().join(".git").exists());
    std::fs::write(dir.path().join(".gitignore"), "secret.txt\ngenerated/\n").unwrap();
    std::fs::write(dir.path().join(".ignore"), "*.draft\n").unwrap();
    std::fs::write(dir.path().join("src/.gitignore"), "*.bin\n").unwrap();
    let out = listing(&env(&dir), json!({})).await;
    assert_eq!(
        out.output,
        "./\n  src/\n    .gitignore\n    keep.rs\n  .gitignore\n  .ignore"
    );

    // Listing a subdirectory still applies the .gitignore of its parents.
    std::fs::write(dir.path().join("src/old.draft"), "x").unwrap();
    let sub = listing(&env(&dir), json!({ "path": "src" })).await;
    assert_eq!(sub.output, "src/\n  .gitignore\n  keep.rs");
}

#[tokio::test]
async fn caller_ignore_globs_match_names_and_relative_paths() {
    let dir = location(&[
        "app.log",
        "sub/deep.log",
        "fixtures/a.json",
        "src/fixtures/b.json",
        "src/main.rs",
        "docs/a.md",
        "docs/keep.txt",
        "other/a.md",
        "#scratch.txt",
    ]);
    let out = listing(
        &env(&dir),
        json!({ "ignore": ["*.log", "fixtures/", "docs/*.md", "#scratch.txt"] }),
    )
    .await;
    assert_eq!(
        out.output,
        "./\n  docs/\n    keep.txt\n  other/\n    a.md\n  src/\n    main.rs\n  sub/"
    );
    assert_eq!(out.total, 7);
}

#[tokio::test]
async fn invalid_ignore_globs_are_all_reported() {
    let dir = location(&["a.txt"]);
    let error = invoke(&env(&dir), json!({ "ignore": ["ok/*", "a{b", " "] }))
        .await
        .unwrap_err();
    let message = error.message();
    assert!(message.contains("nothing was listed"), "{message}");
    assert!(message.contains("- `ignore[1]` (`a{b`)"), "{message}");
    assert!(message.contains("- `ignore[2]` is empty."), "{message}");
    assert!(!message.contains("ignore[0]"), "{message}");
}

#[tokio::test]
async fn limit_shows_the_first_entries_and_a_truthful_total() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..1234 {
        std::fs::write(dir.path().join(format!("f{i:04}")), "").unwrap();
    }
    let out = listing(&env(&dir), json!({})).await;
    assert_eq!((out.entries, out.total, out.truncated), (100, 1234, true));
    assert!(out.output.contains("\n  f0099\n"), "{}", out.output);
    assert!(!out.output.contains("f0100"), "{}", out.output);
    assert!(
        out.output.ends_with(
            "[1,134 more entries not shown]\n(Showing 100 of 1,234 entries. List a \
             subdirectory, or pass ignore globs, to see the rest.)"
        ),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn limit_keeps_shallow_levels_first() {
    let dir = location(&["a/b/c/d.txt", "a/b2.txt", "x.txt", "y.txt", "z/q.txt"]);
    let options = FileToolOptions {
        list_limit: 5,
        ..FileToolOptions::default()
    };
    let out = listing(&env(&dir).with_options(options), json!({})).await;
    // Depth 1 (a/, z/, x.txt, y.txt) fills four slots; the fifth is the first at depth 2.
    assert_eq!(
        out.output,
        "./\n  a/\n    b/\n      [1 more entry not shown]\n    [1 more entry not shown]\n  z/\n    \
         [1 more entry not shown]\n  x.txt\n  y.txt\n(Showing 5 of 9 entries. List a \
         subdirectory, or pass ignore globs, to see the rest.)"
    );
    assert_eq!((out.entries, out.total, out.truncated), (5, 9, true));
}

#[tokio::test]
async fn a_file_path_is_refused_with_a_pointer_to_read() {
    let dir = location(&["src/main.rs"]);
    let error = invoke(&env(&dir), json!({ "path": "src/main.rs" }))
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "`src/main.rs` is a file, not a directory, so it cannot be listed."
    );
    assert!(error.hint().unwrap().contains("`read`"));
}

#[tokio::test]
async fn a_missing_path_is_reported() {
    let dir = location(&["src/main.rs"]);
    let error = invoke(&env(&dir), json!({ "path": "nope/deeper" }))
        .await
        .unwrap_err();
    assert_eq!(error.message(), "Directory not found: `nope/deeper`.");
}

#[tokio::test]
async fn empty_and_fully_ignored_directories_say_so() {
    let dir = location(&["empty/", "ignored/node_modules/x.js"]);
    let empty = listing(&env(&dir), json!({ "path": "empty" })).await;
    assert_eq!(empty.output, "empty/\n(The directory is empty.)");
    assert_eq!((empty.entries, empty.total, empty.truncated), (0, 0, false));

    let ignored = listing(&env(&dir), json!({ "path": "ignored" })).await;
    assert!(
        ignored
            .output
            .starts_with("ignored/\n(No entries shown: everything here is ignored"),
        "{}",
        ignored.output
    );
    assert_eq!(ignored.total, 0);
}

#[tokio::test]
async fn hidden_dotfiles_are_shown() {
    let dir = location(&[".env", ".github/workflows/ci.yml", "visible.txt"]);
    let out = listing(&env(&dir), json!({})).await;
    assert_eq!(
        out.output,
        "./\n  .github/\n    workflows/\n      ci.yml\n  .env\n  visible.txt"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_are_listed_but_not_followed() {
    let outside = location(&["inside-link.txt"]);
    let dir = location(&["real.txt"]);
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    let out = listing(&env(&dir), json!({})).await;
    assert_eq!(out.output, "./\n  link\n  real.txt");
    assert_eq!(out.total, 2);
}

/// An approver that records each request and rejects it at once.
#[derive(Default)]
struct Rejecter {
    service: OnceLock<Weak<PermissionService>>,
    asked: Mutex<Vec<PermissionRequest>>,
}

impl Approver for Rejecter {
    fn ask(&self, request: &PermissionRequest) {
        self.asked.lock().unwrap().push(request.clone());
        let service = self.service.get().and_then(Weak::upgrade).unwrap();
        service
            .reply(&request.id, Reply::Reject { message: None })
            .unwrap();
    }
}

#[tokio::test]
async fn an_external_path_asks_external_directory_first() {
    let dir = location(&["inside.txt"]);
    let outside = location(&["secret/plan.md"]);
    let approver = Arc::new(Rejecter::default());
    let service = Arc::new(
        PermissionService::new(
            "project",
            approver.clone(),
            Arc::new(MemorySavedApprovals::new()),
        )
        .unwrap(),
    );
    approver.service.set(Arc::downgrade(&service)).unwrap();
    let rules = preset("build", &PresetContext::default()).unwrap().rules;
    let env = env(&dir).with_gate(Gate::new(service, move |_| rules.clone()));

    let target = outside.path().join("secret");
    let error = invoke(&env, json!({ "path": target.to_string_lossy() }))
        .await
        .unwrap_err();
    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].permission, "external_directory");
    assert!(
        !error.message().contains("plan.md"),
        "a refused list reveals nothing: {}",
        error.message()
    );

    // The same gate lets the Location itself be listed without asking.
    let inside = listing(&env, json!({})).await;
    assert_eq!(inside.output, "./\n  inside.txt");
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
}

#[test]
fn thousands_separates_groups_of_three() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(2345), "2,345");
    assert_eq!(thousands(100_000), "100,000");
    assert_eq!(thousands(1_234_567), "1,234,567");
}
