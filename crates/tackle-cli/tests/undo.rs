//! Snapshots and undo through the `tackle` binary: what bash and the file tools changed is
//! reverted byte for byte (CRLF, BOM, binary, modes, symlinks), files changed since are conflicts
//! left alone, an undo can be undone, and `.git` and ignored files are never touched.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use serde_json::json;
use tempfile::TempDir;

struct Project {
    root: TempDir,
    data: TempDir,
}

impl Project {
    /// A project with snapshots on (they are off for `tackle call` by default).
    fn new() -> Self {
        let project = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        project.write(".tackle/config.json", b"{\"snapshot\": true}");
        project
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.root.path().join(name)
    }

    fn write(&self, name: &str, bytes: &[u8]) {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn run(&self, args: &[&str]) -> (bool, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_tackle"))
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .args(args)
            .env("HOME", self.data.path())
            .env_remove("TACKLE_MODEL")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    }

    fn call(&self, tool: &str, args: serde_json::Value) -> String {
        let (ok, text) = self.run(&["call", "--yes", tool, &args.to_string()]);
        assert!(ok, "{tool}: {text}");
        text
    }

    /// Every file under the root but the configuration, with its bytes, mode and link target.
    fn tree(&self) -> Vec<(String, Vec<u8>, u32, Option<String>)> {
        fn visit(dir: &Path, root: &Path, out: &mut Vec<(String, Vec<u8>, u32, Option<String>)>) {
            let mut entries: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap())
                .collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let path = entry.path();
                let relative = path.strip_prefix(root).unwrap().display().to_string();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.file_type().is_symlink() {
                    let target = std::fs::read_link(&path).unwrap().display().to_string();
                    out.push((relative, Vec::new(), 0, Some(target)));
                } else if meta.is_dir() {
                    visit(&path, root, out);
                } else {
                    let mode = meta.permissions().mode() & 0o7777;
                    out.push((relative, std::fs::read(&path).unwrap(), mode, None));
                }
            }
        }
        let mut out = Vec::new();
        visit(self.root.path(), self.root.path(), &mut out);
        out
    }
}

#[test]
fn undo_after_bash_restores_every_byte_mode_and_link_and_leaves_git_and_ignored_files() {
    let project = Project::new();
    project.write("crlf.txt", b"one\r\ntwo\r\n");
    project.write("bom.txt", b"\xef\xbb\xbfwith a bom\n");
    project.write("blob.bin", &[0, 159, 146, 150, 255, 0, 1]);
    project.write("run.sh", b"#!/bin/sh\necho hi\n");
    std::fs::set_permissions(
        project.path("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("crlf.txt", project.path("link")).unwrap();
    project.write(".gitignore", b"build/\n");
    project.write("build/out.o", b"old build output");
    project.write(".git/HEAD", b"ref: refs/heads/main\n");
    let before = project.tree();

    project.call(
        "bash",
        json!({"command": "printf 'x\\n' > crlf.txt; printf 'y' > bom.txt; printf '\\001' > blob.bin; \
                chmod 644 run.sh; rm link; ln -s bom.txt link; echo new > new.txt"}),
    );
    assert_ne!(project.tree(), before);
    // What happens to ignored and git files afterwards is not the undo's business.
    project.write("build/out.o", b"new build output");
    project.write(".git/HEAD", b"ref: refs/heads/other\n");

    let (ok, plan) = project.run(&["undo", "--dry-run"]);
    assert!(ok, "{plan}");
    assert!(
        plan.contains("M crlf.txt") && plan.contains("D new.txt") && plan.contains("M link"),
        "{plan}"
    );
    assert!(plan.contains("Dry run: nothing was changed."), "{plan}");
    let (ok, done) = project.run(&["undo", "--last", "1"]);
    assert!(ok, "{done}");
    assert!(done.contains("Reverted 6 paths."), "{done}");

    let mut expected = before.clone();
    for (name, bytes, _, _) in &mut expected {
        if name == "build/out.o" {
            *bytes = b"new build output".to_vec();
        }
        if name == ".git/HEAD" {
            *bytes = b"ref: refs/heads/other\n".to_vec();
        }
    }
    assert_eq!(project.tree(), expected);
}

#[test]
fn undo_after_apply_patch_removes_adds_recreates_deletes_and_moves_back() {
    let project = Project::new();
    project.write("keep.txt", b"alpha\nbeta\n");
    project.write("gone.txt", b"delete me\n");
    project.write("old/name.txt", b"move me\n");
    project.call("read", json!({"filePath": "keep.txt"}));
    project.call("read", json!({"filePath": "gone.txt"}));
    project.call("read", json!({"filePath": "old/name.txt"}));
    let before = project.tree();
    project.call(
        "apply_patch",
        json!({"patchText": "*** Begin Patch\n*** Add File: added.txt\n+fresh\n*** Delete File: gone.txt\n*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n-move me\n+moved\n*** Update File: keep.txt\n@@\n alpha\n-beta\n+BETA\n*** End Patch"}),
    );
    assert!(project.path("new/name.txt").exists() && !project.path("gone.txt").exists());
    let (ok, done) = project.run(&["undo"]);
    assert!(ok, "{done}");
    // The emptied directory `new/` may stay; every file is as before.
    let tree: Vec<_> = project.tree();
    assert_eq!(tree, before, "{done}");
}

#[test]
fn edits_and_writes_undo_one_at_a_time_and_an_undo_can_be_undone() {
    let project = Project::new();
    project.write("a.txt", b"one\ntwo\n");
    project.call("read", json!({"filePath": "a.txt"}));
    let original = project.tree();
    project.call(
        "edit",
        json!({"filePath": "a.txt", "oldString": "two", "newString": "TWO"}),
    );
    let edited = project.tree();
    project.call(
        "multiedit",
        json!({"filePath": "a.txt", "edits": [{"oldString": "one", "newString": "ONE"}]}),
    );
    project.call(
        "write",
        json!({"filePath": "b.txt", "content": "created\n"}),
    );
    let (_, history) = project.run(&["history"]);
    assert_eq!(history.matches("\n#").count() + 1, 3, "{history}");
    // Newest first, across sessions, each with its session.
    assert!(history.starts_with("#3 session `cli` write `"), "{history}");
    assert!(
        history.contains("write `") && history.contains("A b.txt (+1 -0)"),
        "{history}"
    );

    // The last two (multiedit, write), then redo them by undoing the undo.
    let (ok, done) = project.run(&["undo", "--last", "2"]);
    assert!(ok, "{done}");
    assert_eq!(project.tree(), edited);
    let (ok, redone) = project.run(&["undo", "--last", "1"]);
    assert!(ok, "{redone}");
    assert_eq!(std::fs::read(project.path("a.txt")).unwrap(), b"ONE\nTWO\n");
    assert_eq!(std::fs::read(project.path("b.txt")).unwrap(), b"created\n");
    // One call by its ID: the first edit, which later changes built on: a conflict.
    let call = history
        .lines()
        .find(|l| l.starts_with("#1 session `cli` edit"))
        .and_then(|l| l.split('`').nth(3))
        .unwrap()
        .to_owned();
    let (ok, conflict) = project.run(&["undo", "--call", &call]);
    assert!(!ok, "a conflict exits non-zero: {conflict}");
    assert!(
        conflict.contains("`a.txt` changed after the reverted changes"),
        "{conflict}"
    );
    assert!(
        conflict.contains("-ONE\n") || conflict.contains("-ONE"),
        "the diff: {conflict}"
    );
    assert_eq!(std::fs::read(project.path("a.txt")).unwrap(), b"ONE\nTWO\n");
    // --force writes it anyway.
    let (ok, forced) = project.run(&["undo", "--call", &call, "--force"]);
    assert!(ok, "{forced}");
    assert_eq!(std::fs::read(project.path("a.txt")).unwrap(), b"one\ntwo\n");
    let _ = original;
}

#[test]
fn a_conflict_changes_nothing_and_force_applies_the_same_undo() {
    let project = Project::new();
    project.write("a.txt", b"a\n");
    project.write("b.txt", b"b\n");
    project.call("bash", json!({"command": "echo A > a.txt; echo B > b.txt"}));
    project.write("b.txt", b"the user's own edit\n");
    let (ok, out) = project.run(&["undo"]);
    assert!(!ok);
    assert!(out.contains("M b.txt (+1 -1)  (conflict)"), "{out}");
    assert!(
        out.contains("Nothing was changed: 1 path changed since. Run the same undo with --force"),
        "{out}"
    );
    // All or nothing: the file without a conflict is not reverted either.
    assert_eq!(std::fs::read(project.path("a.txt")).unwrap(), b"A\n");
    assert_eq!(
        std::fs::read(project.path("b.txt")).unwrap(),
        b"the user's own edit\n"
    );
    // The same target again, with --force (nothing was recorded, so `--last 1` is still it).
    let (ok, out) = project.run(&["undo", "--last", "1", "--force"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("Reverted 2 paths, 1 of them overwritten (--force)."),
        "{out}"
    );
    assert_eq!(std::fs::read(project.path("a.txt")).unwrap(), b"a\n");
    assert_eq!(std::fs::read(project.path("b.txt")).unwrap(), b"b\n");
}

#[test]
fn swept_snapshot_data_is_reported_not_silently_skipped() {
    let project = Project::new();
    project.write("a.txt", b"kept?\n");
    project.call("bash", json!({"command": "echo changed > a.txt"}));
    // The retention sweep removed the old content.
    let objects = std::fs::read_dir(project.data.path().join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().path().join("objects"))
        .find(|p| p.is_dir())
        .unwrap();
    let old = blake3::hash(b"kept?\n").to_hex().to_string();
    std::fs::remove_file(objects.join(&old[..2]).join(&old)).unwrap();
    let (ok, out) = project.run(&["undo"]);
    assert!(!ok, "{out}");
    assert!(out.contains("no longer stored"), "{out}");
    assert_eq!(std::fs::read(project.path("a.txt")).unwrap(), b"changed\n");
}

#[test]
fn without_snapshots_a_one_shot_call_records_nothing() {
    let project = Project::new();
    project.write(".tackle/config.json", b"{}");
    project.write("a.txt", b"a\n");
    project.call("bash", json!({"command": "echo A > a.txt"}));
    let (_, history) = project.run(&["history"]);
    assert!(history.contains("no changes recorded"), "{history}");
    let (ok, out) = project.run(&["undo"]);
    assert!(!ok && out.contains("nothing to undo"), "{out}");
}
