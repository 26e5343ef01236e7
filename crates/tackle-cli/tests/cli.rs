//! End-to-end tests of the `tackle` binary: exit codes, stdout, sessions and permissions.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// A workspace root and a private data directory for one test.
struct Sandbox {
    root: TempDir,
    data: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let sandbox = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(sandbox.tmp()).unwrap();
        sandbox
    }

    /// A private temp directory, so other tempdirs count as external to the command.
    fn tmp(&self) -> std::path::PathBuf {
        self.data.path().join("tmp")
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.root.path().join(name), text).unwrap();
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.path().join(name)).unwrap()
    }

    /// `tackle --root <root>` with the data directory from the environment and stdin empty.
    fn tackle(&self) -> Command {
        let mut command = Command::cargo_bin("tackle").unwrap();
        command
            .arg("--root")
            .arg(self.root.path())
            .env("TACKLE_DATA_DIR", self.data.path())
            .env("TMPDIR", self.tmp())
            .write_stdin("");
        command
    }
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn read_args(path: &str) -> String {
    serde_json::json!({ "filePath": path }).to_string()
}

fn edit_args(path: &str, old: &str, new: &str) -> String {
    serde_json::json!({ "filePath": path, "oldString": old, "newString": new }).to_string()
}

#[test]
fn read_prints_numbered_lines_and_exits_0() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\nworld\n");
    let output = sandbox
        .tackle()
        .args(["call", "read", &read_args("a.txt")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(text.contains("     1\thello\n     2\tworld"), "{text}");
}

#[test]
fn read_of_a_missing_file_exits_1_with_the_error_on_stdout() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .tackle()
        .args(["call", "read", &read_args("missing.txt")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains("not found") && text.contains("missing.txt"),
        "{text}"
    );
}

#[test]
fn unknown_tool_exits_1() {
    let sandbox = Sandbox::new();
    let output = sandbox.tackle().args(["call", "nope"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("Unknown tool `nope`"));
}

#[test]
fn invalid_json_arguments_exit_1() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .tackle()
        .args(["call", "read", "{not json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("Invalid arguments"));
}

#[test]
fn a_bad_flag_exits_2() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .tackle()
        .args(["--no-such-flag", "tools"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
}

#[test]
fn an_unknown_agent_exits_2_listing_the_presets() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .tackle()
        .args(["call", "read", &read_args("a.txt"), "--agent", "nobody"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("nobody") && stderr.contains("build, plan"),
        "{stderr}"
    );
}

#[test]
fn read_then_edit_in_the_same_session_changes_the_file() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\nworld\n");
    sandbox
        .tackle()
        .args(["--session", "s1", "call", "read", &read_args("a.txt")])
        .assert()
        .code(0);
    sandbox
        .tackle()
        .args(["call", "edit", &edit_args("a.txt", "hello", "bye")])
        .args(["--session", "s1"])
        .assert()
        .code(0);
    assert_eq!(sandbox.read("a.txt"), "bye\nworld\n");
}

#[test]
fn edit_without_a_read_in_the_session_exits_1() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\n");
    sandbox
        .tackle()
        .args(["--session", "s1", "call", "read", &read_args("a.txt")])
        .assert()
        .code(0);
    let output = sandbox
        .tackle()
        .args(["--session", "fresh", "call", "edit"])
        .arg(edit_args("a.txt", "hello", "bye"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("Read it first"),
        "{}",
        stdout(&output)
    );
    assert_eq!(sandbox.read("a.txt"), "hello\n");
}

#[test]
fn arguments_come_from_stdin_with_a_dash() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "from stdin\n");
    let output = sandbox
        .tackle()
        .args(["call", "read", "-"])
        .write_stdin(read_args("a.txt"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).contains("1\tfrom stdin"));
}

#[test]
fn json_prints_the_settlement_record() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\n");
    let output = sandbox
        .tackle()
        .args(["call", "read", &read_args("a.txt"), "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let record: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(record["outcome"], "success");
    assert_eq!(record["tool"], "read");
    assert_eq!(record["identity"]["session"], "cli");
    assert_eq!(record["identity"]["agent"], "build");
    assert_eq!(record["model_result"]["is_error"], false);
    // Timings are plain numbers of milliseconds, the unit in each key.
    let timings = record["timings"].as_object().unwrap();
    assert_eq!(timings.len(), 6, "{timings:?}");
    for (phase, value) in timings {
        assert!(phase.ends_with("_ms"), "{phase}");
        assert!(
            value.as_f64().is_some_and(|ms| ms >= 0.0),
            "{phase}: {value}"
        );
    }
    assert!(timings["execute_ms"].as_f64().unwrap() > 0.0, "{timings:?}");
}

#[test]
fn tools_lists_the_file_tools_and_parses_as_json() {
    let sandbox = Sandbox::new();
    let output = sandbox.tackle().arg("tools").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    for name in ["read", "write", "edit"] {
        assert!(
            text.lines()
                .any(|line| line.starts_with(&format!("{name}: "))),
            "{text}"
        );
    }
    let output = sandbox.tackle().args(["tools", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let tools: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for name in ["read", "write", "edit"] {
        assert!(names.contains(&name), "{names:?}");
    }
    assert!(tools[0]["inputSchema"].is_object());
}

#[test]
fn an_external_path_needs_yes_when_nobody_can_be_asked() {
    let sandbox = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("x.txt");
    std::fs::write(&file, "outside\n").unwrap();
    let args = read_args(path_str(&file));
    let output = sandbox
        .tackle()
        .args(["call", "read", &args])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    // Nobody decided anything: the model reads that nobody could be asked, which rule would
    // allow it, and that retrying will not help; never that the user rejected it.
    for expected in [
        "Nobody could be asked for permission to run `external_directory`",
        "this run is non-interactive",
        "No person refused it",
        "calling again will get the same answer",
        r#""external_directory": {""#,
        "--yes",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    assert!(!text.contains("rejected"), "{text}");
    let output = sandbox
        .tackle()
        .args(["call", "read", &args, "--yes"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).contains("1\toutside"));
}

#[test]
fn the_plan_agent_cannot_edit() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\n");
    sandbox
        .tackle()
        .args(["--agent", "plan", "call", "read", &read_args("a.txt")])
        .assert()
        .code(0);
    let output = sandbox
        .tackle()
        .args(["--agent", "plan", "call", "edit", "--yes"])
        .arg(edit_args("a.txt", "hello", "bye"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("Permission denied"),
        "{}",
        stdout(&output)
    );
    assert_eq!(sandbox.read("a.txt"), "hello\n");
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_permission_config_applies_over_the_preset() {
    let sandbox = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("x.txt");
    std::fs::write(&file, "outside\n").unwrap();
    let wrapped = sandbox.data.path().join("wrapped.json");
    std::fs::write(
        &wrapped,
        r#"{"permission": {"external_directory": "allow"}}"#,
    )
    .unwrap();
    sandbox
        .tackle()
        .args(["call", "read", &read_args(path_str(&file))])
        .arg("--config")
        .arg(&wrapped)
        .assert()
        .code(0);
    let bare = sandbox.data.path().join("bare.json");
    std::fs::write(&bare, r#"{"read": "deny"}"#).unwrap();
    let output = sandbox
        .tackle()
        .arg("--config")
        .arg(&bare)
        .arg("tools")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(
        !text.lines().any(|line| line.starts_with("read: ")),
        "{text}"
    );
    assert!(
        text.lines().any(|line| line.starts_with("edit: ")),
        "{text}"
    );
}

#[test]
fn call_with_provider_openai_reads_null_as_an_absent_field() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\n");
    let read = sandbox
        .tackle()
        .args(["--session", "s1", "call", "read", &read_args("a.txt")])
        .output()
        .unwrap();
    assert_eq!(read.status.code(), Some(0));
    // OpenAI strict mode sends every field, `null` for the ones the model leaves out.
    let arguments = serde_json::json!({
        "filePath": "a.txt", "oldString": "hello", "newString": "bye", "replaceAll": null
    })
    .to_string();
    let plain = sandbox
        .tackle()
        .args(["--session", "s1", "call", "edit", &arguments])
        .output()
        .unwrap();
    assert_eq!(plain.status.code(), Some(1));
    assert!(
        stdout(&plain).contains("replaceAll: expected boolean, got null"),
        "{}",
        stdout(&plain)
    );
    let openai = sandbox
        .tackle()
        .args([
            "--session",
            "s1",
            "call",
            "--provider",
            "openai",
            "edit",
            &arguments,
        ])
        .output()
        .unwrap();
    assert_eq!(openai.status.code(), Some(0), "{}", stdout(&openai));
    assert_eq!(sandbox.read("a.txt"), "bye\n");
}

#[test]
fn tools_for_a_provider_leave_out_what_it_cannot_express() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .tackle()
        .args(["tools", "--provider", "openai"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let tools: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"read") && !names.contains(&"batch"),
        "{names:?}"
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("skipped a tool: tool `batch`"), "{stderr}");
    // A call to it in that dialect is a call to a tool the turn does not offer.
    let call = sandbox
        .tackle()
        .args([
            "call",
            "--provider",
            "openai",
            "batch",
            r#"{"tool_calls": []}"#,
        ])
        .output()
        .unwrap();
    assert_eq!(call.status.code(), Some(1));
    assert!(
        stdout(&call).starts_with("Unknown tool `batch`"),
        "{}",
        stdout(&call)
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let output = Command::cargo_bin("tackle")
        .unwrap()
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let rest = text
        .trim()
        .strip_prefix(concat!("tackle ", env!("CARGO_PKG_VERSION"), " (commit "))
        .unwrap_or_else(|| panic!("{text}"));
    let commit = rest.strip_suffix(')').unwrap_or_else(|| panic!("{text}"));
    let commit = commit.strip_suffix("-modified").unwrap_or(commit);
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{text}"
    );
}

/// The whole read, footer and instruction reminder included, fits the default output bound:
/// the bound never cuts numbered lines out of the middle while the footer claims them.
#[test]
fn a_full_read_is_never_cut_in_the_middle_by_the_output_bound() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.root.path().join("sub")).unwrap();
    // Many short lines: the line bound; long lines: the byte bound; a reminder on top.
    sandbox.write(
        "short.txt",
        &(1..=2500).map(|i| format!("{i}\n")).collect::<String>(),
    );
    let long: String = (0..2000)
        .map(|i| format!("line {i} of a file larger than the output bound\n"))
        .collect();
    sandbox.write("long.txt", &long);
    sandbox.write("sub/long.txt", &long);
    sandbox.write(
        "sub/AGENTS.md",
        &(0..300)
            .map(|i| format!("rule {i}: be careful\n"))
            .collect::<String>(),
    );
    for (file, limit, footer) in [
        (
            "short.txt",
            None,
            "(Showing lines 1-1998 of 2500. Use offset=1999 to continue.)",
        ),
        ("long.txt", Some(2000), "Use offset="),
        ("sub/long.txt", Some(2000), "Use offset="),
    ] {
        let mut args = serde_json::json!({ "filePath": file });
        if let Some(limit) = limit {
            args["limit"] = limit.into();
        }
        let output = sandbox
            .tackle()
            .args(["call", "read", &args.to_string()])
            .output()
            .unwrap();
        let text = stdout(&output);
        assert!(!text.contains("omitted"), "{file}: the bound cut the read");
        assert!(
            text.contains(footer),
            "{file}: {}",
            &text[text.len().saturating_sub(400)..]
        );
        // The footer's last line is the one before `offset`.
        let next: usize = text
            .split("offset=")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(
            text.contains(&format!("{:>6}\t", next - 1)) && !text.contains(&format!("{next:>6}\t")),
            "{file}: lines up to {} shown, and no more",
            next - 1
        );
    }
}

#[test]
fn tools_lists_exactly_what_call_accepts() {
    let sandbox = Sandbox::new();
    let output = sandbox.tackle().args(["tools", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let tools: Value = serde_json::from_slice(&output.stdout).unwrap();
    let listed: Vec<String> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    // `call` names what it accepts when it gets a name it does not.
    let output = sandbox
        .tackle()
        .args(["call", "no_such_tool", "{}"])
        .output()
        .unwrap();
    let text = stdout(&output);
    let accepted = text
        .split("Available tools: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"))
        .trim_end()
        .trim_end_matches('.');
    let mut accepted: Vec<String> = accepted.split(", ").map(str::to_owned).collect();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    accepted.sort();
    assert_eq!(listed_sorted, accepted);
    // The job tools exist only where jobs outlive a call.
    assert!(
        !listed.iter().any(|name| name.starts_with("bash_")),
        "{listed:?}"
    );
    let output = sandbox
        .tackle()
        .args(["tools", "--for", "serve"])
        .output()
        .unwrap();
    assert!(
        stdout(&output).contains("bash_output: "),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_one_shot_call_opens_no_snapshot_store_and_history_still_opens_it() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "one\n");
    let output = sandbox
        .tackle()
        .args(["call", "read", &read_args("a.txt")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let snapshots = sandbox.data.path().join("snapshots");
    assert!(
        !snapshots.exists(),
        "a call that takes no snapshot created {}",
        snapshots.display()
    );
    // Asked for history, the same kind of host opens the store on demand.
    let output = sandbox.tackle().args(["history"]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(snapshots.exists());
}
