//! Tests of the Location filesystem service, on a real filesystem in temporary directories.

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::Path;
use std::sync::atomic::Ordering;

use tackle_core::SessionId;
use tempfile::TempDir;

use super::*;

/// A Location root and a sibling directory outside it.
struct Setup {
    _dir: TempDir,
    fs: LocationFs,
    outside: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let fs = LocationFs::new(&root).unwrap();
    let outside = std::fs::canonicalize(outside).unwrap();
    Setup {
        _dir: dir,
        fs,
        outside,
    }
}

impl Setup {
    fn root(&self) -> &Path {
        self.fs.root()
    }

    fn put(&self, relative: &str, content: &str) -> PathBuf {
        let path = self.root().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.root().join(relative)).unwrap()
    }
}

/// Every entry below `dir` whose name marks it as one of our temporary files.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.is_symlink() {
            found.extend(temp_files(&path));
        } else if path.to_string_lossy().ends_with(".tackle-tmp") {
            found.push(path);
        }
    }
    found
}

fn slash(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

// ---- resolution ----

#[tokio::test]
async fn new_canonicalizes_the_root() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
    let fs = LocationFs::new(dir.path().join("link/./")).unwrap();
    assert_eq!(
        fs.root(),
        std::fs::canonicalize(dir.path().join("real")).unwrap()
    );
    assert!(LocationFs::new(dir.path().join("missing")).is_err());
}

#[tokio::test]
async fn relative_existing_file_inside() {
    let s = setup();
    let file = s.put("src/main.rs", "fn main() {}\n");
    let r = s.fs.resolve("src/main.rs").await.unwrap();
    assert_eq!(r.path, file);
    assert_eq!(r.relative.as_deref(), Some("src/main.rs"));
    assert_eq!(r.external_directory, None);
    assert!(r.exists);
    assert_eq!(r.display_name(), "src/main.rs");
}

#[tokio::test]
async fn relative_missing_file_inside() {
    let s = setup();
    let r = s.fs.resolve("./new.txt").await.unwrap();
    assert_eq!(r.path, s.root().join("new.txt"));
    assert_eq!(r.relative.as_deref(), Some("new.txt"));
    assert!(!r.exists);
}

#[tokio::test]
async fn empty_and_dot_name_the_root() {
    let s = setup();
    for given in ["", ".", "a/.."] {
        let r = s.fs.resolve(given).await.unwrap();
        assert_eq!(r.path, s.root(), "{given:?}");
        assert_eq!(r.relative.as_deref(), Some("."));
    }
}

#[tokio::test]
async fn dotdot_that_stays_inside_is_fine() {
    let s = setup();
    s.put("b.txt", "b");
    let r = s.fs.resolve("a/../b.txt").await.unwrap();
    assert_eq!(r.relative.as_deref(), Some("b.txt"));
    assert!(r.exists);
}

#[tokio::test]
async fn relative_escape_is_external_and_scoped_at_the_real_directory() {
    let s = setup();
    let parent = s.root().parent().unwrap().to_path_buf();
    for (given, scope) in [
        ("../outside/x", s.outside.clone()),
        ("..", parent.clone()),
        ("a/../../x", parent.clone()),
    ] {
        let r = s.fs.resolve(given).await.unwrap();
        assert_eq!(r.relative, None, "{given}");
        assert_eq!(
            r.external_directory,
            Some(format!("{}/*", slash(&scope))),
            "{given}"
        );
        assert!(r.display_name().starts_with('/'), "{given}");
    }
}

#[tokio::test]
async fn absolute_inside_is_internal() {
    let s = setup();
    s.put("a.txt", "a");
    let r = s.fs.resolve(&slash(&s.root().join("a.txt"))).await.unwrap();
    assert_eq!(r.relative.as_deref(), Some("a.txt"));
    assert_eq!(r.external_directory, None);
}

#[tokio::test]
async fn absolute_external_file_asks_for_its_parent() {
    let s = setup();
    let file = s.outside.join("notes.md");
    std::fs::write(&file, "x").unwrap();
    let r = s.fs.resolve(&slash(&file)).await.unwrap();
    assert_eq!(r.path, file);
    assert_eq!(r.relative, None);
    assert_eq!(
        r.external_directory,
        Some(format!("{}/*", slash(&s.outside)))
    );
    assert_eq!(r.display_name(), slash(&file));
}

#[tokio::test]
async fn absolute_external_directory_asks_for_itself() {
    let s = setup();
    let sub = s.outside.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let r = s.fs.resolve(&slash(&sub)).await.unwrap();
    assert_eq!(r.external_directory, Some(format!("{}/*", slash(&sub))));
}

#[tokio::test]
async fn absolute_external_missing_file_asks_for_its_parent() {
    let s = setup();
    let r =
        s.fs.resolve(&slash(&s.outside.join("new/deep.txt")))
            .await
            .unwrap();
    assert!(!r.exists);
    assert_eq!(
        r.external_directory,
        Some(format!("{}/new/*", slash(&s.outside)))
    );
}

#[tokio::test]
async fn symlink_inside_pointing_outside_is_external_at_its_target() {
    let s = setup();
    let target = s.outside.join("secret");
    std::fs::write(&target, "x").unwrap();
    symlink(&target, s.root().join("link")).unwrap();
    let r = s.fs.resolve("link").await.unwrap();
    assert_eq!(r.path, target);
    assert_eq!(r.relative, None);
    assert_eq!(
        r.external_directory,
        Some(format!("{}/*", slash(&s.outside)))
    );
}

#[tokio::test]
async fn missing_file_below_an_escaping_directory_link_is_external() {
    let s = setup();
    symlink(&s.outside, s.root().join("out")).unwrap();
    let r = s.fs.resolve("out/new/file.txt").await.unwrap();
    assert_eq!(r.relative, None);
    assert!(!r.exists);
    assert_eq!(
        r.external_directory,
        Some(format!("{}/new/*", slash(&s.outside)))
    );
}

#[tokio::test]
async fn symlink_inside_pointing_inside_resolves_to_the_target() {
    let s = setup();
    let real = s.put("real.md", "r");
    symlink("real.md", s.root().join("link.md")).unwrap();
    let r = s.fs.resolve("link.md").await.unwrap();
    assert_eq!(r.path, real);
    assert_eq!(r.relative.as_deref(), Some("real.md"));
}

#[tokio::test]
async fn missing_nested_path_is_anchored_at_nearest_ancestor() {
    let s = setup();
    std::fs::create_dir_all(s.root().join("a")).unwrap();
    symlink("a", s.root().join("alias")).unwrap();
    let r = s.fs.resolve("alias/b/c/d.txt").await.unwrap();
    assert_eq!(r.path, s.root().join("a/b/c/d.txt"));
    assert_eq!(r.relative.as_deref(), Some("a/b/c/d.txt"));
    assert!(!r.exists);
}

#[tokio::test]
async fn file_ancestor_is_not_a_directory() {
    let s = setup();
    s.put("file.txt", "x");
    let err = s.fs.resolve("file.txt/child/x").await.unwrap_err();
    match &err {
        FsError::NotADirectory { path, ancestor } => {
            assert_eq!(path, "file.txt/child/x");
            assert!(ancestor.ends_with("file.txt"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("not a directory"));
}

#[tokio::test]
async fn dangling_symlink_is_reported() {
    let s = setup();
    symlink("nowhere", s.root().join("dangling")).unwrap();
    let err = s.fs.resolve("dangling").await.unwrap_err();
    assert!(matches!(err, FsError::DanglingSymlink { .. }), "{err:?}");
}

// ---- reading ----

#[tokio::test]
async fn read_bytes_reports_missing_and_directories() {
    let s = setup();
    s.put("a.txt", "hello");
    std::fs::create_dir(s.root().join("dir")).unwrap();
    let r = s.fs.resolve("a.txt").await.unwrap();
    assert_eq!(s.fs.read_bytes(&r).await.unwrap(), b"hello");
    let missing = s.fs.resolve("gone.txt").await.unwrap();
    let err = s.fs.read_bytes(&missing).await.unwrap_err();
    assert!(matches!(&err, FsError::NotFound { path } if path == "gone.txt"));
    let dir = s.fs.resolve("dir").await.unwrap();
    assert!(matches!(
        s.fs.read_bytes(&dir).await.unwrap_err(),
        FsError::IsADirectory { .. }
    ));
}

// ---- compare-and-swap writes ----

#[tokio::test]
async fn cas_write_succeeds_when_unchanged() {
    let s = setup();
    s.put("a.txt", "old");
    let r = s.fs.resolve("a.txt").await.unwrap();
    let report =
        s.fs.write_if_unchanged(&r, Some(b"old"), b"new content")
            .await
            .unwrap();
    assert_eq!(
        report,
        WriteReport {
            bytes_written: 11,
            created: false
        }
    );
    assert_eq!(s.read("a.txt"), "new content");
    assert!(temp_files(s.root()).is_empty());
}

#[tokio::test]
async fn cas_write_refused_when_changed_after_planning() {
    let s = setup();
    s.put("a.txt", "planned");
    let r = s.fs.resolve("a.txt").await.unwrap();
    s.put("a.txt", "someone else");
    let err =
        s.fs.write_if_unchanged(&r, Some(b"planned"), b"mine")
            .await
            .unwrap_err();
    assert!(matches!(
        &err,
        FsError::Changed { path, kind: ChangeKind::Modified } if path == "a.txt"
    ));
    assert!(err.to_string().contains("nothing was written"));
    assert_eq!(s.read("a.txt"), "someone else");
    assert!(temp_files(s.root()).is_empty());
}

#[tokio::test]
async fn create_refused_when_the_file_appeared() {
    let s = setup();
    let r = s.fs.resolve("new.txt").await.unwrap();
    assert!(!r.exists);
    s.put("new.txt", "theirs");
    let err =
        s.fs.write_if_unchanged(&r, None, b"mine")
            .await
            .unwrap_err();
    assert!(matches!(
        err,
        FsError::Changed {
            kind: ChangeKind::Appeared,
            ..
        }
    ));
    assert_eq!(s.read("new.txt"), "theirs");
}

#[tokio::test]
async fn update_refused_when_the_file_disappeared() {
    let s = setup();
    let path = s.put("a.txt", "x");
    let r = s.fs.resolve("a.txt").await.unwrap();
    std::fs::remove_file(&path).unwrap();
    let err =
        s.fs.write_if_unchanged(&r, Some(b"x"), b"y")
            .await
            .unwrap_err();
    assert!(matches!(
        err,
        FsError::Changed {
            kind: ChangeKind::Disappeared,
            ..
        }
    ));
    assert!(!path.exists());
}

#[tokio::test]
async fn create_makes_parent_directories() {
    let s = setup();
    let r = s.fs.resolve("deep/er/new.txt").await.unwrap();
    let report = s.fs.write_if_unchanged(&r, None, b"hi").await.unwrap();
    assert!(report.created);
    assert_eq!(s.read("deep/er/new.txt"), "hi");
    // A new file gets an ordinary mode, never the temp-file 0o600 with the umask ignored.
    let mode = std::fs::metadata(s.root().join("deep/er/new.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o600, 0o600);
    assert!(temp_files(s.root()).is_empty());
}

#[tokio::test]
async fn file_mode_is_preserved() {
    let s = setup();
    let path = s.put("s.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = s.fs.resolve("s.sh").await.unwrap();
    s.fs.write_if_unchanged(&r, Some(b"#!/bin/sh\n"), b"#!/bin/sh\necho hi\n")
        .await
        .unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o755);
    // An unusual mode survives too.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    s.fs.write_if_unchanged(&r, Some(b"#!/bin/sh\necho hi\n"), b"x")
        .await
        .unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o640);
}

#[tokio::test]
async fn symlink_is_written_through_and_kept() {
    let s = setup();
    s.put("real.md", "old");
    let link = s.root().join("link.md");
    symlink("real.md", &link).unwrap();
    let r = s.fs.resolve("link.md").await.unwrap();
    s.fs.write_if_unchanged(&r, Some(b"old"), b"new")
        .await
        .unwrap();
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("real.md"));
    assert_eq!(s.read("real.md"), "new");
    assert_eq!(s.read("link.md"), "new");
}

#[tokio::test]
async fn injected_failure_leaves_original_and_no_temp_file() {
    let s = setup();
    s.put("a.txt", "original");
    let r = s.fs.resolve("a.txt").await.unwrap();
    s.fs.inner.fail_after_temp.store(true, Ordering::SeqCst);
    let err =
        s.fs.write_if_unchanged(&r, Some(b"original"), b"replacement")
            .await
            .unwrap_err();
    assert!(matches!(err, FsError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("a.txt"));
    assert_eq!(s.read("a.txt"), "original");
    assert!(temp_files(s.root()).is_empty());
    s.fs.inner.fail_after_temp.store(false, Ordering::SeqCst);
    s.fs.write_if_unchanged(&r, Some(b"original"), b"replacement")
        .await
        .unwrap();
    assert_eq!(s.read("a.txt"), "replacement");
}

#[tokio::test]
async fn writing_a_directory_is_refused() {
    let s = setup();
    std::fs::create_dir(s.root().join("dir")).unwrap();
    let r = s.fs.resolve("dir").await.unwrap();
    let err = s.fs.write_if_unchanged(&r, None, b"x").await.unwrap_err();
    assert!(matches!(err, FsError::IsADirectory { .. }), "{err:?}");
    assert!(s.root().join("dir").is_dir());
}

#[tokio::test]
async fn delete_if_unchanged_checks_content() {
    let s = setup();
    let path = s.put("a.txt", "x");
    let r = s.fs.resolve("a.txt").await.unwrap();
    let err = s.fs.delete_if_unchanged(&r, b"y").await.unwrap_err();
    assert!(matches!(err, FsError::Changed { .. }));
    assert!(path.exists());
    s.fs.delete_if_unchanged(&r, b"x").await.unwrap();
    assert!(!path.exists());
}

#[tokio::test]
async fn rename_if_unchanged_moves_and_keeps_mode() {
    let s = setup();
    let from_path = s.put("a.sh", "x");
    std::fs::set_permissions(&from_path, std::fs::Permissions::from_mode(0o751)).unwrap();
    let from = s.fs.resolve("a.sh").await.unwrap();
    let to = s.fs.resolve("bin/b.sh").await.unwrap();
    s.fs.rename_if_unchanged(&from, b"x", &to).await.unwrap();
    assert!(!from_path.exists());
    assert_eq!(s.read("bin/b.sh"), "x");
    let mode = std::fs::metadata(s.root().join("bin/b.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o751);
}

#[tokio::test]
async fn rename_refused_when_destination_exists_or_source_changed() {
    let s = setup();
    s.put("a.txt", "a");
    s.put("b.txt", "b");
    let a = s.fs.resolve("a.txt").await.unwrap();
    let b = s.fs.resolve("b.txt").await.unwrap();
    let c = s.fs.resolve("c.txt").await.unwrap();
    let err = s.fs.rename_if_unchanged(&a, b"a", &b).await.unwrap_err();
    assert!(matches!(
        err,
        FsError::Changed {
            kind: ChangeKind::Appeared,
            ..
        }
    ));
    let err = s.fs.rename_if_unchanged(&a, b"zzz", &c).await.unwrap_err();
    assert!(matches!(
        err,
        FsError::Changed {
            kind: ChangeKind::Modified,
            ..
        }
    ));
    assert_eq!(s.read("a.txt"), "a");
    assert_eq!(s.read("b.txt"), "b");
    assert!(!s.root().join("c.txt").exists());
}

// ---- locking ----

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_read_modify_write_loops_serialize() {
    let s = setup();
    s.put("log.txt", "");
    let r = s.fs.resolve("log.txt").await.unwrap();
    let mut tasks = Vec::new();
    for writer in ["a", "b"] {
        let fs = s.fs.clone();
        let r = r.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..25 {
                let guard = fs.lock(&r).await;
                let before = guard.read_bytes().await.unwrap();
                tokio::task::yield_now().await;
                let mut after = before.clone();
                after.extend_from_slice(format!("{writer}{i}\n").as_bytes());
                guard
                    .write_if_unchanged(Some(&before), &after)
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let text = s.read("log.txt");
    assert_eq!(text.lines().count(), 50);
    for writer in ["a", "b"] {
        for i in 0..25 {
            assert!(text.lines().any(|l| l == format!("{writer}{i}")));
        }
    }
    assert_eq!(s.fs.lock_table_len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_parallel_line_edits_all_land() {
    let s = setup();
    let original: String = (0..20).map(|i| format!("L{i}\n")).collect();
    s.put("f.txt", &original);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let fs = s.fs.clone();
        tasks.push(tokio::spawn(async move {
            // Each call resolves on its own, as separate tool calls would.
            let r = fs.resolve("f.txt").await.unwrap();
            let guard = fs.lock(&r).await;
            let before = String::from_utf8(guard.read_bytes().await.unwrap()).unwrap();
            let after = before.replace(&format!("L{i}\n"), &format!("X{i}\n"));
            guard
                .write_if_unchanged(Some(before.as_bytes()), after.as_bytes())
                .await
                .unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let expected: String = (0..20).map(|i| format!("X{i}\n")).collect();
    assert_eq!(s.read("f.txt"), expected);
}

#[tokio::test]
async fn lock_entries_are_cleaned_up_and_lock_many_dedups() {
    let s = setup();
    s.put("a.txt", "a");
    symlink("a.txt", s.root().join("alias.txt")).unwrap();
    let a = s.fs.resolve("a.txt").await.unwrap();
    let alias = s.fs.resolve("alias.txt").await.unwrap();
    let b = s.fs.resolve("b.txt").await.unwrap();
    {
        // The link and its target share one canonical path, so one lock.
        let guards = s.fs.lock_many(&[&b, &alias, &a]).await;
        assert_eq!(guards.len(), 2);
        assert_eq!(s.fs.lock_table_len(), 2);
    }
    assert_eq!(s.fs.lock_table_len(), 0);
    let guard = s.fs.lock(&a).await;
    // A second locker waits while the first guard is held.
    let fs = s.fs.clone();
    let a2 = a.clone();
    let waiter = tokio::spawn(async move {
        let _g = fs.lock(&a2).await;
    });
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert!(!waiter.is_finished());
    drop(guard);
    waiter.await.unwrap();
    assert_eq!(s.fs.lock_table_len(), 0);
}

// ---- read tracking ----

async fn tracked(s: &Setup, name: &str, content: &str) -> Resolved {
    s.put(name, content);
    s.fs.resolve(name).await.unwrap()
}

#[tokio::test]
async fn tracker_refuses_a_never_read_file() {
    let s = setup();
    let r = tracked(&s, "a.txt", "x").await;
    let tracker = ReadTracker::new();
    let err = tracker
        .check_fresh(&SessionId::from("s1"), &r, b"x")
        .unwrap_err();
    assert_eq!(
        err,
        StaleRead::NeverRead {
            path: "a.txt".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "You have not read a.txt in this session. Read it first, then retry the edit."
    );
}

#[tokio::test]
async fn tracker_detects_change_and_rereading_clears_it() {
    let s = setup();
    let r = tracked(&s, "a.txt", "x").await;
    let tracker = ReadTracker::new();
    let session = SessionId::from("s1");
    tracker.record_read(&session, &r, b"x");
    let err = tracker.check_fresh(&session, &r, b"x\ny").unwrap_err();
    assert_eq!(
        err.to_string(),
        "a.txt changed since you last read it. Read it again, then retry."
    );
    // No stuck state: a fresh read resets the entry.
    tracker.record_read(&session, &r, b"x\ny");
    tracker.check_fresh(&session, &r, b"x\ny").unwrap();
}

#[tokio::test]
async fn tracker_judges_by_content_not_time() {
    let s = setup();
    let r = tracked(&s, "a.txt", "same").await;
    let tracker = ReadTracker::new();
    let session = SessionId::from("s1");
    tracker.record_read(&session, &r, b"same");
    // Rewriting identical bytes (a touch, a no-op formatter) is not a change.
    s.put("a.txt", "same");
    let now = s.fs.read_bytes(&r).await.unwrap();
    tracker.check_fresh(&session, &r, &now).unwrap();
}

#[tokio::test]
async fn tracker_keys_by_canonical_path() {
    let s = setup();
    let r = tracked(&s, "real.txt", "x").await;
    symlink("real.txt", s.root().join("link.txt")).unwrap();
    let via_link = s.fs.resolve("link.txt").await.unwrap();
    let tracker = ReadTracker::new();
    let session = SessionId::from("s1");
    tracker.record_read(&session, &via_link, b"x");
    tracker.check_fresh(&session, &r, b"x").unwrap();
    tracker.forget(&session, &r);
    assert!(tracker.check_fresh(&session, &via_link, b"x").is_err());
}

#[tokio::test]
async fn tracker_isolates_sessions() {
    let s = setup();
    let r = tracked(&s, "a.txt", "x").await;
    let tracker = ReadTracker::new();
    let (one, two) = (SessionId::from("one"), SessionId::from("two"));
    tracker.record_read(&one, &r, b"x");
    tracker.check_fresh(&one, &r, b"x").unwrap();
    assert!(matches!(
        tracker.check_fresh(&two, &r, b"x"),
        Err(StaleRead::NeverRead { .. })
    ));
    // Clones share the ledger; ending a session forgets only that session.
    let clone = tracker.clone();
    clone.record_read(&two, &r, b"x");
    clone.end_session(&one);
    assert!(tracker.check_fresh(&one, &r, b"x").is_err());
    tracker.check_fresh(&two, &r, b"x").unwrap();
}

#[tokio::test]
async fn disabled_tracker_finds_everything_fresh() {
    let s = setup();
    let r = tracked(&s, "a.txt", "x").await;
    let tracker = ReadTracker::disabled();
    assert!(!tracker.is_enabled());
    let session = SessionId::from("s1");
    tracker.check_fresh(&session, &r, b"x").unwrap();
    tracker.record_read(&session, &r, b"x");
    tracker.check_fresh(&session, &r, b"other").unwrap();
    assert!(ReadTracker::default().is_enabled());
}

#[tokio::test]
async fn tracker_reports_external_paths_absolutely() {
    let s = setup();
    let file = s.outside.join("x.txt");
    std::fs::write(&file, "x").unwrap();
    let r = s.fs.resolve(&slash(&file)).await.unwrap();
    let err = ReadTracker::new()
        .check_fresh(&SessionId::from("s"), &r, b"x")
        .unwrap_err();
    assert!(err.to_string().contains(&slash(&file)));
}

#[tokio::test]
async fn create_refused_when_a_dangling_link_appeared() {
    let s = setup();
    let r = s.fs.resolve("new.txt").await.unwrap();
    symlink("nowhere", s.root().join("new.txt")).unwrap();
    let err = s.fs.write_if_unchanged(&r, None, b"x").await.unwrap_err();
    assert!(matches!(
        err,
        FsError::Changed {
            kind: ChangeKind::Appeared,
            ..
        }
    ));
    assert!(s.root().join("new.txt").is_symlink());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// The borrowed name of a path (what grep asks `read` on for each file) is the name
    /// `name_of_real` builds, whenever it is given: inside and outside the root, at the root,
    /// and for paths with `\`, `.`, `..`, empty segments or a trailing `/`.
    #[test]
    fn a_borrowed_name_equals_the_built_one(
        pieces in proptest::collection::vec(
            proptest::sample::select(&["a", "é", ".", "..", "", "b\\c", "x y"][..]), 0..6),
        below in proptest::prelude::any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let fs = LocationFs::new(dir.path()).unwrap();
        let base = if below { fs.inner.root_str.clone() } else { "/elsewhere".to_owned() };
        let text = std::iter::once(base.as_str()).chain(pieces.iter().copied()).collect::<Vec<_>>().join("/");
        let path = Path::new(&text);
        if let Some(name) = fs.plain_name_of_real(path) {
            proptest::prop_assert_eq!(name, fs.name_of_real(path));
        }
        proptest::prop_assert_eq!(fs.with_name_of_real(path, str::to_owned), fs.name_of_real(path));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// A file an index lists below the root is named by its listed path, whenever that is
    /// given, exactly as `name_of_real` names its real path.
    #[test]
    fn a_listed_name_equals_the_built_one(
        names in proptest::collection::vec(
            proptest::sample::select(&["a", "é", ".b", "..c", "d\\e", "x y", "f\ng", "..."][..]), 1..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let fs = LocationFs::new(dir.path()).unwrap();
        proptest::prop_assert!(fs.names_below(fs.root()));
        let relative: PathBuf = names.iter().collect();
        let built = fs.name_of_real(&fs.root().join(&relative));
        if let Some(name) = LocationFs::listed_name(&relative) {
            proptest::prop_assert_eq!(name, built);
        }
    }
}

// ---- read_sized: one open for the size and the bytes ----

#[tokio::test]
async fn read_sized_returns_a_small_file_whole_with_its_size() {
    let s = setup();
    s.put("a.txt", "one\ntwo\n");
    let target = s.fs.resolve("a.txt").await.unwrap();
    let (size, bytes) = s.fs.read_sized(&target, 100, 4).await.unwrap();
    assert_eq!(size, 8);
    assert_eq!(bytes, b"one\ntwo\n");
}

#[tokio::test]
async fn read_sized_returns_only_the_head_of_a_file_over_the_limit() {
    let s = setup();
    s.put("big.txt", &"x".repeat(1_000));
    let target = s.fs.resolve("big.txt").await.unwrap();
    let (size, bytes) = s.fs.read_sized(&target, 999, 16).await.unwrap();
    assert_eq!(size, 1_000);
    assert_eq!(bytes, "x".repeat(16).as_bytes());
    // At the limit exactly, the file is whole.
    let (size, bytes) = s.fs.read_sized(&target, 1_000, 16).await.unwrap();
    assert_eq!((size, bytes.len()), (1_000, 1_000));
}

#[tokio::test]
async fn read_sized_refuses_a_fifo_without_blocking_and_a_missing_file() {
    let s = setup();
    let fifo = s.root().join("pipe");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let target = s.fs.resolve("pipe").await.unwrap();
    let refused = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        s.fs.read_sized(&target, 100, 4),
    )
    .await
    .expect("a FIFO with no writer is refused at once, not waited on");
    assert!(
        matches!(refused, Err(FsError::NotRegular { .. })),
        "{refused:?}"
    );

    let target = s.fs.resolve("gone.txt").await.unwrap();
    let missing = s.fs.read_sized(&target, 100, 4).await;
    assert!(
        matches!(missing, Err(FsError::NotFound { .. })),
        "{missing:?}"
    );
}

#[tokio::test]
async fn read_sized_stops_at_the_limit_when_the_size_said_less() {
    // Files in /proc report a size of 0 and hold more: as a file that grew after its size was
    // read.
    let s = setup();
    let target = s.fs.resolve("/proc/self/status").await.unwrap();
    let (size, _) = s.fs.read_sized(&target, 1 << 20, 4).await.unwrap();
    assert_eq!(size, 0);
    let over = s.fs.read_sized(&target, 10, 4).await;
    assert!(
        matches!(over, Err(FsError::TooLarge { limit: 10, .. })),
        "{over:?}"
    );
}
