//! Tests of the glob tool through its erased form, as the host calls it.

use std::path::Path;
use std::time::{Duration, SystemTime};

use proptest::prelude::*;
use serde_json::{Value, json};
use tackle_core::{CallIdentity, CancellationToken, Context, InvocationOutcome};

use super::{GlobOutput, tool};
use crate::fs::LocationFs;
use crate::tools::ToolEnv;

fn env(root: &Path) -> ToolEnv {
    ToolEnv::new(LocationFs::new(root).unwrap())
}

fn cx() -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    )
}

/// Runs glob and returns (is_error, text the model reads, structured output when it succeeded).
async fn call(env: &ToolEnv, args: Value) -> (bool, String, Option<GlobOutput>) {
    let outcome = tool(env)
        .invoke(args.to_string().into(), cx())
        .await
        .outcome;
    match outcome {
        InvocationOutcome::Completed(output) => {
            let text = output.content[0].as_text().unwrap_or_default().to_owned();
            let structured = serde_json::from_value(output.structured.clone()).unwrap();
            (false, text, Some(structured))
        }
        InvocationOutcome::Failed(failure) => (true, failure.to_string(), None),
        other => panic!("unexpected outcome {other:?}"),
    }
}

/// Runs glob, expects success, and returns the text's lines.
async fn lines(env: &ToolEnv, args: Value) -> Vec<String> {
    let (err, text, _) = call(env, args).await;
    assert!(!err, "{text}");
    text.lines().map(str::to_owned).collect()
}

fn write(root: &Path, relative: &str, content: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn set_mtime(root: &Path, relative: &str, secs_after_epoch: u64) {
    let file = std::fs::File::options()
        .write(true)
        .open(root.join(relative))
        .unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs_after_epoch))
        .unwrap();
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[tokio::test]
async fn gitignore_is_respected_outside_a_git_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "node_modules/\n*.log\n");
    write(root, "src/main.rs", "");
    write(root, "node_modules/x/package.json", "");
    write(root, "package.json", "");
    write(root, "debug.log", "");
    let env = env(root);
    assert_eq!(
        lines(&env, json!({"pattern": "**/package.json"})).await,
        ["package.json"]
    );
    assert!(
        lines(&env, json!({"pattern": "*.log"}))
            .await
            .contains(&"No files found".to_owned())
    );
}

#[tokio::test]
async fn an_explicitly_named_ignored_directory_is_searched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "node_modules/\n");
    write(root, "node_modules/x/package.json", "");
    write(root, "node_modules/y/index.js", "");
    let env = env(root);
    assert_eq!(
        sorted(lines(&env, json!({"pattern": "*", "path": "node_modules"})).await),
        ["node_modules/x/package.json", "node_modules/y/index.js"]
    );
}

#[tokio::test]
async fn hidden_files_are_included_and_git_is_excluded() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".ai/task.md", "");
    write(root, ".env", "");
    write(root, ".git/config", "");
    write(root, ".git/HEAD", "");
    write(root, "README.md", "");
    let env = env(root);
    assert_eq!(
        sorted(lines(&env, json!({"pattern": "**/*"})).await),
        [".ai/task.md", ".env", "README.md"]
    );
    assert_eq!(
        lines(&env, json!({"pattern": ".ai/*.md"})).await,
        [".ai/task.md"]
    );
    assert_eq!(
        lines(&env, json!({"pattern": "config"})).await,
        ["No files found"]
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_loop_terminates_and_linked_files_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a/b/file.txt", "");
    std::os::unix::fs::symlink(root.join("a"), root.join("a/b/loop")).unwrap();
    write(root, "elsewhere/target.txt", "");
    std::os::unix::fs::symlink(root.join("elsewhere"), root.join("a/linked")).unwrap();
    let env = env(root);
    let found = tokio::time::timeout(
        Duration::from_secs(10),
        lines(&env, json!({"pattern": "*.txt", "path": "a"})),
    )
    .await
    .expect("the walk terminates");
    assert_eq!(sorted(found), ["a/b/file.txt", "a/linked/target.txt"]);
}

#[tokio::test]
async fn a_file_path_is_refused_with_a_pointer_to_read() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/main.rs", "");
    let env = env(dir.path());
    let (err, text, _) = call(&env, json!({"pattern": "*.rs", "path": "src/main.rs"})).await;
    assert!(err, "{text}");
    assert!(text.contains("`src/main.rs` is a file"), "{text}");
    assert!(text.contains("`read`"), "{text}");
}

#[tokio::test]
async fn a_missing_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path());
    let (err, text, _) = call(&env, json!({"pattern": "*.rs", "path": "nope"})).await;
    assert!(err, "{text}");
    assert!(text.contains("Directory not found: `nope`"), "{text}");
}

#[tokio::test]
async fn files_are_sorted_newest_first_then_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (name, secs) in [
        ("old.rs", 1_000),
        ("new.rs", 3_000),
        ("mid_b.rs", 2_000),
        ("mid_a.rs", 2_000),
    ] {
        write(root, name, "");
        set_mtime(root, name, secs);
    }
    let env = env(root);
    assert_eq!(
        lines(&env, json!({"pattern": "*.rs"})).await,
        ["new.rs", "mid_a.rs", "mid_b.rs", "old.rs"]
    );
}

#[tokio::test]
async fn the_total_is_exact_when_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..250 {
        let name = format!("d{}/f{i:03}.txt", i % 7);
        write(root, &name, "");
        set_mtime(root, &name, 10_000 + i);
    }
    write(root, "other.md", "");
    let env = env(root);
    let (err, text, structured) = call(&env, json!({"pattern": "**/*.txt"})).await;
    assert!(!err, "{text}");
    let all: Vec<&str> = text.lines().collect();
    let (files, note) = all.split_at(all.len() - 1);
    assert_eq!(files.len(), 100, "{text}");
    assert_eq!(
        note,
        [
            "(Showing the 100 most recently modified of 250 files. Use a more specific pattern or path.)"
        ]
    );
    // The newest 100 are f249 down to f150.
    assert_eq!(files[0], "d4/f249.txt");
    assert_eq!(files[99], "d3/f150.txt");
    let structured = structured.unwrap();
    assert_eq!(
        (structured.total, structured.shown, structured.truncated),
        (250, 100, true)
    );

    // Exactly the limit is not truncated.
    let (_, text, structured) = call(&env, json!({"pattern": "f1*.txt"})).await;
    let structured = structured.unwrap();
    assert_eq!(
        (structured.total, structured.shown, structured.truncated),
        (100, 100, false)
    );
    assert_eq!(text.lines().count(), 100, "{text}");
}

#[tokio::test]
async fn no_files_found() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.rs", "");
    let env = env(dir.path());
    let (err, text, structured) = call(&env, json!({"pattern": "*.py"})).await;
    assert!(!err, "{text}");
    assert_eq!(text, "No files found");
    let structured = structured.unwrap();
    assert_eq!(
        (structured.total, structured.shown, structured.truncated),
        (0, 0, false)
    );
}

#[tokio::test]
async fn an_invalid_or_empty_glob_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path());
    let (err, text, _) = call(&env, json!({"pattern": "src/{a,b"})).await;
    assert!(err, "{text}");
    assert!(text.contains("is not a valid glob"), "{text}");
    assert!(
        text.contains("unclosed"),
        "globset's reason is quoted: {text}"
    );
    let (err, text, _) = call(&env, json!({"pattern": "  "})).await;
    assert!(err, "{text}");
    assert!(text.contains("`pattern` is empty"), "{text}");
}

#[tokio::test]
async fn a_name_only_pattern_matches_at_any_depth() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "");
    write(root, "crates/a/Cargo.toml", "");
    write(root, "crates/a/src/lib.rs", "");
    write(root, "web/src/app.tsx", "");
    write(root, "web/src/util.ts", "");
    write(root, "web/app.ts", "");
    let env = env(root);
    assert_eq!(
        sorted(lines(&env, json!({"pattern": "Cargo.toml"})).await),
        ["Cargo.toml", "crates/a/Cargo.toml"]
    );
    // A pattern with `/` is anchored at the searched directory, and `*` stays in one directory.
    assert_eq!(
        sorted(lines(&env, json!({"pattern": "web/src/**/*.{ts,tsx}"})).await),
        ["web/src/app.tsx", "web/src/util.ts"]
    );
    assert_eq!(
        lines(&env, json!({"pattern": "web/*.ts"})).await,
        ["web/app.ts"]
    );
    // Found paths are shown relative to the working directory, not to `path`.
    assert_eq!(
        sorted(lines(&env, json!({"pattern": "./src/*", "path": "web"})).await),
        ["web/src/app.tsx", "web/src/util.ts"]
    );
}

#[tokio::test]
async fn a_directory_outside_the_location_is_shown_absolute() {
    let location = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "x.rs", "");
    let env = env(location.path());
    let canonical = std::fs::canonicalize(outside.path()).unwrap();
    assert_eq!(
        lines(
            &env,
            json!({"pattern": "*.rs", "path": canonical.to_string_lossy()})
        )
        .await,
        [canonical.join("x.rs").to_string_lossy().into_owned()]
    );
}

#[tokio::test]
async fn a_cancelled_call_stops_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..50 {
        write(dir.path(), &format!("d{i}/f.txt"), "");
    }
    let env = env(dir.path());
    let token = CancellationToken::new();
    token.cancel();
    let context = Context::new(CallIdentity::new("s", "build", "m", "c"), token);
    let outcome = tool(&env)
        .invoke(json!({"pattern": "*.txt"}).to_string().into(), context)
        .await
        .outcome;
    if let InvocationOutcome::Completed(output) = outcome {
        let text = output.content[0].as_text().unwrap_or_default();
        assert!(text.contains("cancelled"), "{text}");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_linked_file_is_matched_by_the_link_name_and_ranked_by_the_target_mtime() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "real/target.txt", "");
    set_mtime(root, "real/target.txt", 5_000);
    write(root, "older.rs", "");
    set_mtime(root, "older.rs", 1_000);
    // The link's own name decides the match; the file it leads to gives the mtime.
    std::os::unix::fs::symlink(root.join("real/target.txt"), root.join("link.rs")).unwrap();
    std::os::unix::fs::symlink(root.join("older.rs"), root.join("real/alias.txt")).unwrap();
    let env = env(root);
    assert_eq!(
        lines(&env, json!({"pattern": "*.rs"})).await,
        ["link.rs", "older.rs"]
    );
    assert_eq!(
        lines(&env, json!({"pattern": "real/*.txt"})).await,
        ["real/target.txt", "real/alias.txt"]
    );
}

#[tokio::test]
async fn an_ignored_file_is_neither_shown_nor_counted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "*.log\nbuild/\n");
    for i in 0..120 {
        write(root, &format!("src/f{i:03}.log"), "");
        write(root, &format!("build/f{i:03}.rs"), "");
    }
    write(root, "src/kept.rs", "");
    let env = env(root);
    let (err, text, structured) = call(&env, json!({"pattern": "**/*.{rs,log}"})).await;
    assert!(!err, "{text}");
    assert_eq!(text, "src/kept.rs");
    let structured = structured.unwrap();
    assert_eq!((structured.total, structured.shown), (1, 1));
}

/// A tree for the model test: files named from a small set so paths and mtimes collide.
fn tree_strategy() -> impl Strategy<Value = Vec<(String, u64)>> {
    let dirs = prop::sample::select(&["", "a/", "a/b/", "c/"][..]);
    let names = prop::sample::select(&["x", "y", "z", "w"][..]);
    let extensions = prop::sample::select(&["rs", "txt"][..]);
    // Three distinct mtimes make ties common.
    let mtimes = prop::sample::select(&[1_000_u64, 2_000, 3_000][..]);
    prop::collection::vec(
        (dirs, names, extensions, mtimes)
            .prop_map(|(dir, name, ext, mtime)| (format!("{dir}{name}.{ext}"), mtime)),
        0..40,
    )
}

fn cases() -> u32 {
    if std::env::var_os("TACKLE_DEEP").is_some() {
        1_000
    } else {
        24
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// The walk on every core keeps exactly what a sort of every match would: the newest
    /// `limit` files, ties broken by path, and the true total.
    #[test]
    fn the_walk_keeps_the_newest_files_and_counts_them_all(
        files in tree_strategy(),
        limit in 0_usize..6,
        name_only in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let mut model = std::collections::BTreeMap::new();
        for (relative, mtime) in &files {
            write(&root, relative, "");
            set_mtime(&root, relative, *mtime);
            model.insert(relative.clone(), *mtime);
        }
        let pattern = if name_only { "*.rs" } else { "a/**/*.rs" };
        let mut expected: Vec<(u64, String)> = model
            .iter()
            .filter(|(path, _)| {
                path.ends_with(".rs") && (name_only || path.starts_with("a/"))
            })
            .map(|(path, mtime)| (*mtime, path.clone()))
            .collect();
        let total = expected.len();
        expected.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        expected.truncate(limit);

        let walked = super::walk(
            &root,
            &crate::tools::walk::Boundary::new(&root),
            super::Matcher::new(pattern).unwrap(),
            limit,
            &CancellationToken::new(),
        );
        let kept: Vec<(u64, String)> = walked
            .kept
            .iter()
            .map(|found| {
                let secs = found.modified.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
                (secs, found.relative.to_string_lossy().into_owned())
            })
            .collect();
        prop_assert_eq!(kept, expected);
        prop_assert_eq!(walked.total, total);
        prop_assert_eq!(walked.errors, 0);
    }
}
