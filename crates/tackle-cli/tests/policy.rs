//! Host policy end to end, through `tackle call` and `tackle serve`: a mis-cased tool name is
//! repaired, snake_case arguments are renamed, a call giving both forms is refused, and the
//! third identical call in a row of one message asks `doom_loop` (a read runs and says it
//! repeated itself when nobody can be asked; separate `tackle call` runs are separate messages);
//! every change is reported with the settlement. Command hooks from the configuration refuse,
//! rewrite and audit calls, and a project's own hooks wait until the project is trusted.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use support::{call, text};
use tempfile::TempDir;

/// A root with `notes.txt`, and a private data directory.
struct Project {
    root: TempDir,
    data: TempDir,
}

impl Project {
    fn new() -> Self {
        let project = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        std::fs::write(project.root.path().join("notes.txt"), "first\nsecond\n").unwrap();
        project
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .env("HOME", self.data.path())
            .env_remove("TACKLE_MODEL")
            .env_remove(tackle_mcp::DEPTH_ENV)
            .stdin(std::process::Stdio::null());
        command
    }

    /// `tackle --session SESSION call NAME ARGS [EXTRA…] --json`: the settlement record.
    fn call(&self, session: &str, name: &str, args: Value, extra: &[&str]) -> (Output, Value) {
        let output = self
            .command()
            .args([
                "--session",
                session,
                "call",
                name,
                &args.to_string(),
                "--json",
            ])
            .args(extra)
            .output()
            .unwrap();
        let record = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
        (output, record)
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.root.path().join(name)
    }
}

/// The model-facing text of a `--json` record.
fn model_text(record: &Value) -> String {
    record["model_result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn adjustments(record: &Value) -> Vec<String> {
    serde_json::from_value(record["adjustments"].clone()).unwrap()
}

#[test]
fn a_mis_cased_tool_name_settles_as_the_one_it_matches_and_says_so() {
    let project = Project::new();
    let (output, record) = project.call("s", "READ", json!({"filePath": "notes.txt"}), &[]);
    assert_eq!(output.status.code(), Some(0), "{record}");
    assert_eq!(record["tool"], "read");
    assert_eq!(
        adjustments(&record),
        ["repaired the tool name `READ` to `read`"]
    );
    assert!(model_text(&record).contains("1\tfirst"), "{record}");
    // A name no case repair can settle stays unknown.
    let (output, record) = project.call("s", "reed", json!({"filePath": "notes.txt"}), &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(record["outcome"], "unknown");
}

#[test]
fn snake_case_arguments_are_renamed_and_both_spellings_are_refused() {
    let project = Project::new();
    project.call("s", "read", json!({"filePath": "notes.txt"}), &[]);
    let args = json!({"file_path": "notes.txt", "old_string": "first", "new_string": "1st"});
    let (output, record) = project.call("s", "edit", args, &[]);
    assert_eq!(output.status.code(), Some(0), "{record}");
    assert_eq!(
        adjustments(&record),
        [
            "renamed the argument `file_path` to `filePath`",
            "renamed the argument `new_string` to `newString`",
            "renamed the argument `old_string` to `oldString`",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(project.path("notes.txt")).unwrap(),
        "1st\nsecond\n"
    );

    let both = json!({"filePath": "notes.txt", "file_path": "notes.txt", "oldString": "1st",
                      "newString": "one"});
    let (output, record) = project.call("s", "edit", both, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(record["outcome"], "refused");
    assert!(
        model_text(&record).contains("`file_path` and `filePath` are the same argument"),
        "{record}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path("notes.txt")).unwrap(),
        "1st\nsecond\n"
    );
}

#[test]
fn five_identical_reads_from_a_shell_all_run() {
    let project = Project::new();
    // Each run is its own assistant message, so a script or a benchmark loop never trips the
    // doom-loop check.
    let script = format!(
        "for i in 1 2 3 4 5; do '{}' --root '{}' --data-dir '{}' call read \
         '{{\"filePath\":\"notes.txt\"}}' || exit 9; echo; done",
        env!("CARGO_BIN_EXE_tackle"),
        project.root.path().display(),
        project.data.path().display(),
    );
    let output = Command::new("sh")
        .args(["-c", &script])
        .env("HOME", project.data.path())
        .env_remove("TACKLE_MODEL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.matches("1\tfirst").count(), 5, "{stdout}");
    assert!(!stdout.contains("identical call"), "{stdout}");
}

#[test]
fn the_third_identical_call_of_one_message_asks_doom_loop_across_processes() {
    let project = Project::new();
    let read = json!({"filePath": "notes.txt"});
    let message = ["--message", "m1"];
    for _ in 0..2 {
        let (output, _) = project.call("loop", "read", read.clone(), &message);
        assert_eq!(output.status.code(), Some(0));
    }
    // The third run of the same call in the same message, in a new process: nobody can be
    // asked, and `read` only reads, so it runs and the model is told it repeated itself.
    let (output, record) = project.call("loop", "read", read.clone(), &message);
    assert_eq!(output.status.code(), Some(0), "{record}");
    let text = model_text(&record);
    assert!(
        text.starts_with("This is the 3rd identical call of `read` in a row")
            && text.contains("1\tfirst"),
        "{text}"
    );
    assert!(
        adjustments(&record)[0].contains("nobody could be asked"),
        "{record}"
    );
    // A call that changes something is refused instead, saying why.
    let todo = json!({"todos": [{"content": "x", "status": "pending", "priority": "low"}]});
    for _ in 0..2 {
        let (output, record) = project.call("loop", "todowrite", todo.clone(), &message);
        assert_eq!(output.status.code(), Some(0), "{record}");
    }
    let (output, record) = project.call("loop", "todowrite", todo.clone(), &message);
    assert_eq!(output.status.code(), Some(1), "{record}");
    assert_eq!(record["outcome"], "refused");
    let text = model_text(&record);
    assert!(
        text.contains("3rd identical call of `todowrite` in a row")
            && text.contains("`doom_loop` on `todowrite`"),
        "{text}"
    );
    // Another message, or another session, has its own streak.
    let (output, _) = project.call("loop", "todowrite", todo.clone(), &["--message", "m2"]);
    assert_eq!(output.status.code(), Some(0));
    let (output, _) = project.call("other", "todowrite", todo.clone(), &message);
    assert_eq!(output.status.code(), Some(0));
    // Approved, the loop goes on; a different call ends the streak.
    let (output, _) = project.call(
        "loop",
        "todowrite",
        todo.clone(),
        &["--message", "m2", "--yes"],
    );
    assert_eq!(output.status.code(), Some(0));
    let (output, _) = project.call("loop", "read", read.clone(), &["--message", "m2"]);
    assert_eq!(output.status.code(), Some(0));
    let (output, _) = project.call("loop", "todowrite", todo, &["--message", "m2"]);
    assert_eq!(output.status.code(), Some(0));
}

#[tokio::test]
async fn serve_repairs_names_renames_arguments_and_checks_loops() {
    let project = Project::new();
    let mut command = tokio::process::Command::from(project.command());
    command.args(["serve"]);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let listed: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert!(listed.contains(&"read".to_owned()), "{listed:?}");

    let repaired = call(&client, "Read", json!({"file_path": "notes.txt"})).await;
    assert_ne!(repaired.is_error, Some(true), "{repaired:?}");
    assert!(text(&repaired).contains("1\tfirst"), "{repaired:?}");
    let again = call(&client, "read", json!({"filePath": "notes.txt"})).await;
    assert_ne!(again.is_error, Some(true));
    // The third identical call of the connection (the repaired and renamed one counts as the
    // same call): the client cannot be asked and there is no --yes, but `read` only reads, so
    // it runs and the model is told it repeated itself.
    let third = call(&client, "read", json!({"filePath": "notes.txt"})).await;
    assert_ne!(third.is_error, Some(true), "{third:?}");
    let message = text(&third);
    assert!(
        message.starts_with("This is the 3rd identical call of `read` in a row")
            && message.contains("1\tfirst"),
        "{message}"
    );
    client.cancel().await.unwrap();
    assert!(Path::new(&project.path("notes.txt")).is_file());
}

/// A before hook for `bash`: refuses `rm` with exit 2, rewrites `echo hi`, passes the rest.
const GUARD_HOOK: &str = r#"
import json, sys
call = json.load(sys.stdin)
assert call["phase"] == "before" and call["tool"] == "bash", call
command = call["arguments"].get("command", "")
if command.startswith("rm "):
    print("Deleting files is not allowed here; move them to trash/ instead.", file=sys.stderr)
    sys.exit(2)
if command == "echo hi":
    args = dict(call["arguments"], command="echo rewritten by " + call["sessionID"])
    print(json.dumps({"arguments": args}))
"#;

/// An after hook: notes the outcome and the size of what the model read.
const AUDIT_HOOK: &str = r#"
import json, sys
call = json.load(sys.stdin)
print(f"audited {call['tool']} {call['outcome']} {len(call['output'])} chars")
"#;

impl Project {
    /// Writes `script` under the data directory and returns the hook command running it.
    fn script(&self, name: &str, script: &str) -> Value {
        let path = self.data.path().join(name);
        std::fs::write(&path, script).unwrap();
        json!(["python3", path])
    }

    /// Writes the user's configuration file (HOME is the data directory).
    fn user_config(&self, config: Value) {
        let dir = self.data.path().join(".config/tackle");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    }
}

#[test]
fn command_hooks_refuse_rewrite_and_audit_calls_through_call() {
    let project = Project::new();
    std::fs::write(project.path("keep.txt"), "kept").unwrap();
    project.user_config(json!({"hooks": {
        "before": [{"tools": ["bash"], "command": project.script("guard.py", GUARD_HOOK)}],
        "after": [{"tools": ["read"], "command": project.script("audit.py", AUDIT_HOOK)}],
    }}));

    // Refused with the hook's own words; nothing ran.
    let rm = json!({"command": "rm keep.txt", "description": "Delete"});
    let (output, record) = project.call("h", "bash", rm, &[]);
    assert_eq!(output.status.code(), Some(1), "{record}");
    assert_eq!(record["outcome"], "refused");
    assert_eq!(
        model_text(&record),
        "Deleting files is not allowed here; move them to trash/ instead."
    );
    assert!(project.path("keep.txt").is_file());

    // Rewritten: the tool ran the hook's arguments, and the record says a hook changed them.
    let echo = json!({"command": "echo hi", "description": "Greet"});
    let (output, record) = project.call("h", "bash", echo, &[]);
    assert_eq!(output.status.code(), Some(0), "{record}");
    assert!(model_text(&record).contains("rewritten by h"), "{record}");
    let adjustments = adjustments(&record);
    assert!(
        adjustments.len() == 1
            && adjustments[0].contains("guard.py")
            && adjustments[0].contains("rewrote the arguments"),
        "{adjustments:?}"
    );

    // Other calls pass untouched; the after hook notes the read for the host, not the model.
    let (output, record) = project.call("h", "read", json!({"filePath": "notes.txt"}), &[]);
    assert_eq!(output.status.code(), Some(0), "{record}");
    assert!(adjustments_are_empty(&record), "{record}");
    let text = model_text(&record);
    let annotations: Vec<String> = serde_json::from_value(record["annotations"].clone()).unwrap();
    assert_eq!(annotations.len(), 1, "{annotations:?}");
    assert!(
        annotations[0].ends_with(&format!(
            "audited read success {} chars",
            text.chars().count()
        )),
        "{annotations:?}"
    );
    assert!(!text.contains("audited"), "{text}");
}

fn adjustments_are_empty(record: &Value) -> bool {
    record["adjustments"].as_array().is_none_or(Vec::is_empty)
}

#[test]
fn a_broken_or_slow_hook_refuses_the_call_naming_the_hook() {
    let project = Project::new();
    project.user_config(json!({"hooks": {"before": [
        {"tools": ["glob"], "command": ["sh", "-c", "echo broken >&2; exit 1"]},
        {"tools": ["list"], "command": ["sleep", "30"], "timeoutMs": 300},
        {"tools": ["grep"], "command": ["sh", "-c", "echo not json"]},
    ]}}));
    let (output, record) = project.call("b", "glob", json!({"pattern": "*.txt"}), &[]);
    assert_eq!(output.status.code(), Some(1), "{record}");
    let text = model_text(&record);
    assert!(
        text.contains("refused this call, so it did not run: it exited with 1: broken"),
        "{text}"
    );
    let started = std::time::Instant::now();
    let (output, record) = project.call("b", "list", json!({}), &[]);
    assert_eq!(output.status.code(), Some(1), "{record}");
    assert!(
        model_text(&record).contains("timed out after 300 ms"),
        "{record}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let (output, record) = project.call("b", "grep", json!({"pattern": "first"}), &[]);
    assert_eq!(output.status.code(), Some(1), "{record}");
    assert!(
        model_text(&record).contains("not a JSON object: `not json`"),
        "{record}"
    );
}

#[test]
fn a_project_hook_runs_only_once_trusted() {
    let project = Project::new();
    let marker = project.data.path().join("ran");
    let config = json!({"hooks": {"before": [{"command": ["touch", marker]}]}});
    std::fs::create_dir_all(project.path(".tackle")).unwrap();
    std::fs::write(project.path(".tackle/config.json"), config.to_string()).unwrap();
    let read = json!({"filePath": "notes.txt"});
    // Untrusted, the hook is ignored (and said so); `--yes` answers questions, it does not trust.
    for extra in [&[][..], &["--yes"][..]] {
        let (output, record) = project.call("t", "read", read.clone(), extra);
        assert_eq!(output.status.code(), Some(0), "{record}");
        assert!(!marker.exists(), "an untrusted project hook ran");
    }
    let trust = project.command().arg("trust").output().unwrap();
    assert_eq!(trust.status.code(), Some(0));
    let (output, record) = project.call("t2", "glob", json!({"pattern": "*"}), &[]);
    assert_eq!(output.status.code(), Some(0), "{record}");
    assert!(marker.exists(), "the trusted hook did not run");
}

#[tokio::test]
async fn serve_runs_command_hooks() {
    let project = Project::new();
    std::fs::write(project.path("keep.txt"), "kept").unwrap();
    project.user_config(json!({"hooks": {"before": [
        {"tools": ["bash"], "command": project.script("guard.py", GUARD_HOOK)}
    ]}}));
    let mut command = tokio::process::Command::from(project.command());
    command.args(["--session", "srv", "serve"]);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let refused = call(
        &client,
        "bash",
        json!({"command": "rm keep.txt", "description": "x"}),
    )
    .await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(
        text(&refused).contains("move them to trash/"),
        "{refused:?}"
    );
    assert!(project.path("keep.txt").is_file());
    let rewritten = call(
        &client,
        "bash",
        json!({"command": "echo hi", "description": "x"}),
    )
    .await;
    assert_ne!(rewritten.is_error, Some(true), "{rewritten:?}");
    assert!(
        text(&rewritten).contains("rewritten by srv"),
        "{rewritten:?}"
    );
    client.cancel().await.unwrap();
}

#[test]
fn a_hook_that_calls_tackle_does_not_run_itself_again() {
    let project = Project::new();
    let marker = project.data.path().join("nested-ran");
    // The hook runs tackle on the same project, whose configuration has the same hook.
    let nested = format!(
        "'{}' --root '{}' --data-dir '{}' --session nested call read '{{\"filePath\":\"notes.txt\"}}' >/dev/null && touch '{}'",
        env!("CARGO_BIN_EXE_tackle"),
        project.root.path().display(),
        project.data.path().display(),
        marker.display()
    );
    project.user_config(json!({"hooks": {"before": [
        {"tools": ["read"], "command": ["sh", "-c", nested], "timeoutMs": 20000}
    ]}}));
    let started = std::time::Instant::now();
    let (output, record) = project.call("outer", "read", json!({"filePath": "notes.txt"}), &[]);
    assert_eq!(output.status.code(), Some(0), "{record}");
    assert!(marker.exists(), "the nested tackle's read did not succeed");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
}
