//! Undo through the real binary, one test per failure issue 24 reported, each driving bash
//! through `tackle serve` (a fresh `mcp-…` session per connection) and undoing with `tackle
//! undo`, which finds that session by itself.

mod support;

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use support::{call, text};
use tempfile::TempDir;

struct Project {
    root: TempDir,
    data: TempDir,
}

impl Project {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        Self {
            root,
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        std::fs::canonicalize(self.root.path()).unwrap().join(name)
    }

    fn write(&self, name: &str, bytes: &str) {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// `tackle <args>`: whether it exited 0, its exit code and its output.
    fn run(&self, args: &[&str]) -> (i32, String) {
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
        (output.status.code().unwrap_or(-1), text)
    }

    async fn serve(&self) -> RunningService<rmcp::RoleClient, ()> {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .args(["serve", "--yes"])
            .env("HOME", self.data.path())
            .env_remove("TACKLE_MODEL");
        ().serve(TokioChildProcess::new(command).unwrap())
            .await
            .expect("initialize")
    }

    /// Whether `needle` appears in any file tackle stored.
    fn stored_anywhere(&self, needle: &[u8]) -> bool {
        let mut stack = vec![self.data.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if std::fs::read(&path)
                    .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
                {
                    return true;
                }
            }
        }
        false
    }
}

async fn bash(client: &RunningService<rmcp::RoleClient, ()>, command: &str) -> String {
    let result = call(client, "bash", json!({"command": command})).await;
    let out = text(&result);
    assert_eq!(result.is_error, Some(false), "{command}: {out}");
    out
}

/// The call IDs in `tackle history`, newest first, with their tools.
fn history_calls(project: &Project) -> Vec<(String, String)> {
    let (code, history) = project.run(&["history"]);
    assert_eq!(code, 0, "{history}");
    history
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            let parts: Vec<&str> = l.split('`').collect();
            let tool = parts[2].trim().to_owned();
            (tool, parts[3].to_owned())
        })
        .collect()
}

#[tokio::test]
async fn removing_gitignore_then_undoing_never_deletes_what_it_ignored_or_stores_the_secret() {
    let project = Project::new();
    project.write(".gitignore", "node_modules/\n.env\n");
    project.write("node_modules/pkg/index.js", "module.exports = 1;\n");
    project.write(".env", "K=sk-live-0123456789\n");
    project.write("a.txt", "a\n");
    let client = project.serve().await;
    bash(&client, "rm .gitignore").await;
    client.cancel().await.unwrap();

    let (code, out) = project.run(&["undo", "--last", "1"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("the most recent session"), "{out}");
    assert!(out.contains("Reverted 1 path."), "{out}");
    assert_eq!(project.read(".gitignore"), "node_modules/\n.env\n");
    assert_eq!(
        project.read("node_modules/pkg/index.js"),
        "module.exports = 1;\n"
    );
    assert_eq!(project.read(".env"), "K=sk-live-0123456789\n");
    // Redo (undo the undo): the rules go again, and still nothing they covered.
    let (code, out) = project.run(&["undo", "--last", "1"]);
    assert_eq!(code, 0, "{out}");
    assert!(!project.path(".gitignore").exists());
    assert!(project.path("node_modules/pkg/index.js").exists());
    assert!(project.path(".env").exists());
    // The secret the read rules protect was never read into the snapshot store.
    assert!(
        !project.stored_anywhere(b"sk-live-0123456789"),
        "the secret was stored"
    );
    // Every undo has its own ID.
    let calls = history_calls(&project);
    let undos: Vec<&String> = calls
        .iter()
        .filter(|(t, _)| t == "undo")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(undos.len(), 2, "{calls:?}");
    assert_ne!(undos[0], undos[1]);
}

#[tokio::test]
async fn removing_one_ignore_rule_then_undoing_keeps_the_file_it_ignored() {
    let project = Project::new();
    project.write(".gitignore", "app.log\n*.tmp\n");
    project.write("app.log", "log line\n");
    let client = project.serve().await;
    bash(&client, "printf '*.tmp\\n' > .gitignore").await;
    client.cancel().await.unwrap();
    let (code, out) = project.run(&["undo"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(project.read(".gitignore"), "app.log\n*.tmp\n");
    assert_eq!(project.read("app.log"), "log line\n", "{out}");
}

#[tokio::test]
async fn a_file_replaced_by_a_directory_is_undone_and_redone_whole() {
    let project = Project::new();
    project.write("a.txt", "A\n");
    project.write("x", "X\n");
    project.write("z.txt", "Z\n");
    let client = project.serve().await;
    bash(
        &client,
        "echo A2>a.txt; echo Z2>z.txt; rm x; mkdir x; echo in>x/y",
    )
    .await;
    bash(&client, "rm -rf x; ln -s a.txt x").await;
    client.cancel().await.unwrap();

    let (code, out) = project.run(&["undo", "--last", "2"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        (
            project.read("a.txt"),
            project.read("x"),
            project.read("z.txt")
        ),
        ("A\n".into(), "X\n".into(), "Z\n".into())
    );
    assert!(
        std::fs::symlink_metadata(project.path("x"))
            .unwrap()
            .is_file()
    );
    // Redo: the link (directory → symlink, file → symlink) is back.
    let (code, out) = project.run(&["undo", "--last", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_link(project.path("x")).unwrap(),
        Path::new("a.txt")
    );
    assert_eq!(project.read("z.txt"), "Z2\n");
}

#[tokio::test]
async fn a_file_put_by_hand_where_a_directory_was_is_a_conflict_not_an_error() {
    let project = Project::new();
    let client = project.serve().await;
    bash(&client, "mkdir d; echo f > d/f").await;
    client.cancel().await.unwrap();
    std::fs::remove_dir_all(project.path("d")).unwrap();
    project.write("d", "by hand\n");
    let (code, out) = project.run(&["undo"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("(conflict)") && out.contains("Nothing was changed"),
        "{out}"
    );
    assert_eq!(project.read("d"), "by hand\n");
    let (code, out) = project.run(&["undo", "--force"]);
    assert_eq!(code, 0, "{out}");
    assert!(!project.path("d").exists());
}

#[tokio::test]
async fn undo_never_writes_or_deletes_through_a_symlinked_directory() {
    let project = Project::new();
    let elsewhere = tempfile::tempdir().unwrap();
    project.write("d/f", "F\n");
    project.write("e/keep", "K\n");
    let client = project.serve().await;
    bash(&client, "rm -rf d").await;
    bash(&client, "echo N > e/new.txt").await;
    client.cancel().await.unwrap();
    let calls = history_calls(&project);
    let (remove, create) = (calls[1].1.clone(), calls[0].1.clone());
    // By hand: both directories become links to somewhere else, which has a new.txt that
    // matches what the call wrote.
    std::os::unix::fs::symlink(elsewhere.path(), project.path("d")).unwrap();
    std::fs::rename(project.path("e"), project.path("e.real")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), project.path("e")).unwrap();
    std::fs::write(elsewhere.path().join("new.txt"), "N\n").unwrap();

    let (code, out) = project.run(&["undo", "--call", &create]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("(blocked)") && out.contains("never writes or deletes through it"),
        "{out}"
    );
    let (code, out) = project.run(&["undo", "--call", &create, "--force"]);
    assert_eq!(code, 1, "blocked even when forced: {out}");
    assert!(
        elsewhere.path().join("new.txt").exists(),
        "deleted outside: {out}"
    );

    let (code, out) = project.run(&["undo", "--call", &remove]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = project.run(&["undo", "--call", &remove, "--force"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        !elsewhere.path().join("f").exists(),
        "created outside: {out}"
    );
    assert!(
        std::fs::symlink_metadata(project.path("d"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(project.read("d/f"), "F\n");
}

#[tokio::test]
async fn non_utf8_names_same_size_rewrites_and_empty_directories_are_recorded() {
    let project = Project::new();
    project.write("a", "A");
    std::fs::create_dir(project.path("empty")).unwrap();
    std::fs::set_permissions(
        project.path("empty"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(project.path("a"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let client = project.serve().await;
    bash(&client, "echo unrelated > u.txt").await;
    bash(&client, "printf x > $'n\\xff'; mkdir made; rmdir empty").await;
    bash(
        &client,
        "m=$(stat -c %y a); printf B > a; touch -d \"$m\" a",
    )
    .await;
    client.cancel().await.unwrap();

    let (code, out) = project.run(&["undo", "--last", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        project.read("a"),
        "A",
        "the same-size rewrite with its mtime put back: {out}"
    );
    let second = history_calls(&project)
        .into_iter()
        .filter(|(tool, _)| tool == "bash")
        .nth(1)
        .unwrap()
        .1;
    let (code, out) = project.run(&["undo", "--call", &second]);
    assert_eq!(code, 0, "{out}");
    let odd = project.path("").join(std::ffi::OsStr::from_bytes(b"n\xff"));
    assert!(!odd.exists(), "{out}");
    assert!(out.contains("n\\xff"), "{out}");
    assert!(!project.path("made").exists(), "{out}");
    let empty = std::fs::metadata(project.path("empty")).unwrap();
    assert!(empty.is_dir());
    assert_eq!(empty.permissions().mode() & 0o777, 0o750);
    // The unrelated call before it is untouched.
    assert_eq!(project.read("u.txt"), "unrelated\n");
}

#[tokio::test]
async fn a_background_jobs_writes_are_its_own_and_overlap_asks_for_force() {
    let project = Project::new();
    project.write("a.txt", "a\n");
    let client = project.serve().await;
    let started = call(
        &client,
        "bash",
        json!({"command": "sleep 4; echo done > job.log", "runInBackground": true}),
    )
    .await;
    assert_eq!(started.is_error, Some(false), "{}", text(&started));
    bash(&client, "ls").await;
    // Wait for the job's write, then a call that changes nothing records it as the job's.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !project.path("job.log").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    bash(&client, "true").await;
    let calls = history_calls(&project);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, "bash job", "{calls:?}");
    // A job writing while a foreground call runs: the call's change names it.
    call(
        &client,
        "bash",
        json!({"command": "for i in $(seq 60); do echo $i >> busy.log; sleep 0.02; done; touch busy.done", "runInBackground": true}),
    )
    .await;
    bash(&client, "echo A > a.txt; sleep 0.3").await;
    // The job has finished before the undos, so they race with nothing.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !project.path("busy.done").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, history) = project.run(&["history"]);
    let line = history
        .lines()
        .find(|l| l.contains("a.txt"))
        .map(|_| ())
        .is_some();
    assert!(
        line && history.contains("overlapped by background job"),
        "{history}"
    );
    let foreground = history_calls(&project)
        .into_iter()
        .find(|(tool, _)| tool == "bash")
        .unwrap()
        .1;
    let (code, out) = project.run(&["undo", "--call", &foreground]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("may also have been written by background job"),
        "{out}"
    );
    let (code, out) = project.run(&["undo", "--call", &foreground, "--force"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(project.read("a.txt"), "a\n");
    client.cancel().await.unwrap();
    // The sessions that changed the Location are listed, and history names them.
    let (code, sessions) = project.run(&["sessions"]);
    assert_eq!(code, 0, "{sessions}");
    assert!(sessions.starts_with("mcp-"), "{sessions}");
}
