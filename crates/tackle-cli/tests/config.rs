//! End-to-end tests of the configuration files: the project's, the user's, OpenCode's, and
//! `tackle config check`.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// A workspace root, a private data directory and a private home for one test.
struct Sandbox {
    root: TempDir,
    data: TempDir,
    home: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let sandbox = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(sandbox.tmp()).unwrap();
        sandbox
    }

    fn tmp(&self) -> PathBuf {
        self.data.path().join("tmp")
    }

    fn write(&self, name: &str, text: &str) {
        write(&self.root.path().join(name), text);
    }

    /// Writes the project's `.tackle/config.json`.
    fn project(&self, text: &str) {
        self.write(".tackle/config.json", text);
    }

    /// Writes the user's `~/.config/tackle/config.json`.
    fn user(&self, text: &str) {
        write(&self.home.path().join(".config/tackle/config.json"), text);
    }

    /// `tackle --root <root>` with HOME, the data directory and TMPDIR private, stdin empty.
    fn tackle(&self) -> Command {
        let mut command = Command::cargo_bin("tackle").unwrap();
        command
            .arg("--root")
            .arg(self.root.path())
            .env("HOME", self.home.path())
            .env("TACKLE_DATA_DIR", self.data.path())
            .env("TMPDIR", self.tmp())
            .env_remove("TACKLE_SHELL")
            .write_stdin("");
        command
    }

    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let output = self.tackle().args(args).output().unwrap();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read_args(path: &str) -> String {
    serde_json::json!({ "filePath": path }).to_string()
}

/// A permission config that denies reading `secret.txt` and allows the rest.
const DENY_SECRET: &str = r#"{"read": {"*": "allow", "*secret.txt": "deny"}}"#;

#[test]
fn comments_and_trailing_commas_are_accepted() {
    let sandbox = Sandbox::new();
    sandbox.project(
        "// project settings\n{\n  /* output */\n  \"limits\": {\"maxLines\": 100,},\n  \
         \"disabledTools\": [\"glob\",], // trailing\n}\n",
    );
    let (code, out, err) = sandbox.run(&["config", "check"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.starts_with("ok: "), "{out}");
    assert!(out.contains(".tackle/config.json"), "{out}");
}

#[test]
fn an_unknown_key_is_an_error_with_its_path_and_line() {
    let sandbox = Sandbox::new();
    sandbox.project("{\n  \"limits\": {\n    \"maxLine\": 5\n  }\n}\n");
    let (code, out, _) = sandbox.run(&["config", "check"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("config.json:3:5: limits.maxLine: unknown key"),
        "{out}"
    );
    assert!(out.contains("maxLines"), "{out}");
    // Other commands refuse to run with an invalid configuration.
    let (code, _, err) = sandbox.run(&["tools"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("limits.maxLine"), "{err}");
}

#[test]
fn a_wrong_type_names_the_expected_type() {
    let sandbox = Sandbox::new();
    sandbox.project(r#"{"limits": {"maxLines": "five"}, "disabledTools": "bash"}"#);
    let (code, out, _) = sandbox.run(&["config", "check"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(r#"limits.maxLines: expected a positive integer, got the string "five""#),
        "{out}"
    );
    assert!(
        out.contains("disabledTools: expected an array of strings"),
        "{out}"
    );
}

#[test]
fn disabled_tools_are_not_registered() {
    let sandbox = Sandbox::new();
    let (_, before, _) = sandbox.run(&["tools"]);
    assert!(before.lines().any(|l| l.starts_with("bash: ")), "{before}");
    sandbox.project(r#"{"disabledTools": ["bash"]}"#);
    let (code, after, err) = sandbox.run(&["tools"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!after.lines().any(|l| l.starts_with("bash: ")), "{after}");
    assert!(after.lines().any(|l| l.starts_with("read: ")), "{after}");
    let (code, out, _) = sandbox.run(&["call", "bash", r#"{"command": "true"}"#]);
    assert_eq!(code, Some(1), "{out}");
}

#[test]
fn limits_max_lines_bounds_a_read() {
    let sandbox = Sandbox::new();
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    sandbox.write("long.txt", &text);
    sandbox.project(r#"{"limits": {"maxLines": 5}}"#);
    let (code, out, err) = sandbox.run(&["call", "read", &read_args("long.txt")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("omitted"), "{out}");
    assert!(out.lines().count() <= 5, "{out}");
}

#[test]
fn a_project_permission_deny_denies_a_call() {
    let sandbox = Sandbox::new();
    sandbox.write("secret.txt", "hidden\n");
    sandbox.write("open.txt", "visible\n");
    sandbox.project(&format!(r#"{{"permission": {DENY_SECRET}}}"#));
    let (code, out, _) = sandbox.run(&["call", "read", &read_args("secret.txt")]);
    assert_eq!(code, Some(1), "{out}");
    assert!(!out.contains("hidden"), "{out}");
    let (code, out, _) = sandbox.run(&["call", "read", &read_args("open.txt")]);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn the_project_config_wins_over_the_users() {
    let sandbox = Sandbox::new();
    sandbox.write("secret.txt", "hidden\n");
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    sandbox.write("long.txt", &text);
    sandbox.user(&format!(
        r#"{{"permission": {DENY_SECRET}, "limits": {{"maxLines": 5}}}}"#
    ));
    // The user's file alone applies.
    let (code, out, _) = sandbox.run(&["call", "read", &read_args("secret.txt")]);
    assert_eq!(code, Some(1), "{out}");
    let (_, out, _) = sandbox.run(&["call", "read", &read_args("long.txt")]);
    assert!(out.contains("omitted"), "{out}");
    // The project's rules come later and win, and its scalars replace the user's.
    sandbox.project(
        r#"{"permission": {"read": {"*secret.txt": "allow"}}, "limits": {"maxLines": 1000}}"#,
    );
    let (code, out, _) = sandbox.run(&["call", "read", &read_args("secret.txt")]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("hidden"), "{out}");
    let (_, out, _) = sandbox.run(&["call", "read", &read_args("long.txt")]);
    assert!(!out.contains("omitted") && out.contains("line 50"), "{out}");
    let (_, out, _) = sandbox.run(&["config", "check"]);
    let user = out.find(".config/tackle/config.json").unwrap();
    let project = out.find(".tackle/config.json").unwrap();
    assert!(user < project, "{out}");
}

#[test]
fn opencode_json_permission_is_read() {
    let sandbox = Sandbox::new();
    sandbox.write("secret.txt", "hidden\n");
    sandbox.write(
        "opencode.json",
        &format!(
            r#"{{"$schema": "https://opencode.ai/config.json", "model": "x/y",
                "permission": {DENY_SECRET},
                "agent": {{"review": {{"mode": "subagent", "model": "x/z",
                    "permission": {{"edit": "deny"}}}}}}}}"#
        ),
    );
    let (code, out, _) = sandbox.run(&["call", "read", &read_args("secret.txt")]);
    assert_eq!(code, Some(1), "{out}");
    // `agent` maps to agents: the custom agent exists and has its own rules.
    let (code, out, err) = sandbox.run(&["--agent", "review", "tools"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.lines().any(|l| l.starts_with("edit: ")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("read: ")), "{out}");
    // A project `.tackle/config.json` replaces opencode.json.
    sandbox.project("{}");
    let (code, out, _) = sandbox.run(&["call", "read", &read_args("secret.txt")]);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn config_check_exit_codes_and_json() {
    let sandbox = Sandbox::new();
    let (code, out, _) = sandbox.run(&["config", "check"]);
    assert_eq!(code, Some(0), "{out}");
    sandbox.project(
        r#"{"mcp": {"docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "secret"}}}}"#,
    );
    let (code, out, _) = sandbox.run(&["config", "check", "--json"]);
    assert_eq!(code, Some(0), "{out}");
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["ok"], true);
    assert_eq!(value["mcp"][0]["name"], "docs");
    assert!(!out.contains("secret"), "{out}");
    sandbox.project(r#"{"mcp": {"docs": {"command": ""}}, "shell": {"path": 1}}"#);
    let (code, out, _) = sandbox.run(&["config", "check", "--json"]);
    assert_eq!(code, Some(1), "{out}");
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["ok"], false);
    let paths: Vec<&str> = value["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["mcp.docs.command", "shell.path"]);
    assert_eq!(value["errors"][1]["line"], 1);
    // A broken --config file is checked too, after the project's.
    sandbox.project("{}");
    let flag = sandbox.data.path().join("flag.json");
    write(&flag, "{\"limits\": {\n  \"direction\": \"middle\"}}");
    let (code, out, _) = sandbox.run(&["config", "check", "--config", flag.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("flag.json:2:16: limits.direction: expected"),
        "{out}"
    );
    // Checking never opens the journal.
    assert!(!sandbox.data.path().join("journal.sqlite3").exists());
}

#[test]
fn shell_options_reach_the_bash_tool() {
    let sandbox = Sandbox::new();
    sandbox.project(r#"{"shell": {"path": "sh", "maxTimeoutMs": 1000}}"#);
    let (code, out, _) =
        sandbox.run(&["call", "bash", r#"{"command": "echo hi", "timeout": 5000}"#]);
    assert_eq!(code, Some(1), "{out}");
    let (code, out, err) = sandbox.run(&["call", "bash", r#"{"command": "echo hi"}"#, "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("/sh"), "{out}");
}
