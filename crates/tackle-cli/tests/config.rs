//! End-to-end tests of the configuration files: the project's, the user's, OpenCode's, and
//! `tackle config check`.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};
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

    /// Writes the project's `.tackle/config.json` and trusts the project's configuration as
    /// it now is (these tests are about what the settings do; `trust.rs` is about trust).
    fn project(&self, text: &str) {
        self.write(".tackle/config.json", text);
        self.run(&["trust"]);
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
fn the_projects_scalars_win_but_its_allow_never_beats_the_users_deny() {
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
    // The project's scalars replace the user's; its allow, trusted or not, never beats the
    // user's deny.
    sandbox.project(
        r#"{"permission": {"read": {"*secret.txt": "allow"}}, "limits": {"maxLines": 1000}}"#,
    );
    let (code, out, _) = sandbox.run(&["call", "read", &read_args("secret.txt")]);
    assert_eq!(code, Some(1), "{out}");
    assert!(!out.contains("hidden"), "{out}");
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

/// The tool names `tackle tools --json` lists with `args` before it.
fn tool_names(sandbox: &Sandbox, args: &[&str]) -> Vec<String> {
    let mut all = args.to_vec();
    all.extend(["tools", "--json"]);
    let (code, out, err) = sandbox.run(&all);
    assert_eq!(code, Some(0), "{out}{err}");
    let tools: Value = serde_json::from_str(&out).unwrap();
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The description `tackle tools --json` gives for `name`.
fn description(sandbox: &Sandbox, name: &str) -> String {
    let (_, out, _) = sandbox.run(&["tools", "--json"]);
    let tools: Value = serde_json::from_str(&out).unwrap();
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == name)
        .map(|tool| tool["description"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no tool `{name}` in {out}"))
}

fn has(names: &[String], name: &str) -> bool {
    names.iter().any(|n| n == name)
}

/// A custom tool manifest whose command prints `output`.
fn custom_manifest(name: &str, output: &str, extra: Value) -> String {
    let mut manifest = serde_json::json!({
        "name": name,
        "description": format!("The custom {name}."),
        "input": {"type": "object", "properties": {"pattern": {"type": "string"}}},
        "command": format!("touch ran-{name}; echo {output}"),
    });
    if let Value::Object(extra) = extra {
        manifest.as_object_mut().unwrap().extend(extra);
    }
    manifest.to_string()
}

#[test]
fn the_model_picks_apply_patch_or_the_edit_tools() {
    let sandbox = Sandbox::new();
    let gpt = tool_names(&sandbox, &["--model", "openai/gpt-5"]);
    assert!(has(&gpt, "apply_patch"), "{gpt:?}");
    for name in ["edit", "multiedit", "write"] {
        assert!(!has(&gpt, name), "{name}: {gpt:?}");
    }
    assert!(has(&gpt, "read") && has(&gpt, "bash"), "{gpt:?}");
    let claude = tool_names(&sandbox, &["--model", "anthropic/claude-x"]);
    assert!(!has(&claude, "apply_patch"), "{claude:?}");
    for name in ["edit", "multiedit", "write"] {
        assert!(has(&claude, name), "{name}: {claude:?}");
    }
    let all = tool_names(&sandbox, &[]);
    for name in ["apply_patch", "edit", "write"] {
        assert!(has(&all, name), "{name}: {all:?}");
    }
    // `TACKLE_MODEL` chooses the model too, and the flag wins over it.
    let output = sandbox
        .tackle()
        .env("TACKLE_MODEL", "openai/gpt-5.1-codex")
        .args(["tools", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("\"apply_patch\"") && !text.contains("\"edit\""),
        "{text}"
    );
    let output = sandbox
        .tackle()
        .env("TACKLE_MODEL", "openai/gpt-5")
        .args(["--model", "anthropic/claude-x", "tools", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        !text.contains("\"apply_patch\"") && text.contains("\"edit\""),
        "{text}"
    );
}

#[test]
fn a_model_without_a_provider_is_an_error() {
    let sandbox = Sandbox::new();
    let (code, out, err) = sandbox.run(&["--model", "gpt-5", "tools"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("`gpt-5` is not a model of the form PROVIDER/MODEL")
            && err.contains("openai/"),
        "{err}"
    );
    let output = sandbox
        .tackle()
        .env("TACKLE_MODEL", "claude")
        .arg("tools")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8(output.stderr).unwrap();
    assert!(
        err.contains("TACKLE_MODEL: `claude` is not a model"),
        "{err}"
    );
}

#[test]
fn a_call_of_a_tool_the_model_does_not_get_runs_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\n");
    let write = r#"{"filePath": "b.txt", "content": "new\n"}"#;
    let (code, out, _) = sandbox.run(&["--model", "openai/gpt-5", "call", "write", write]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("Unknown tool `write`"), "{out}");
    assert!(!sandbox.root.path().join("b.txt").exists());
    // `batch` sees the same turn, so it cannot reach the hidden tool either.
    let batch = serde_json::json!({"tool_calls": [{"tool": "write", "parameters":
        {"filePath": "b.txt", "content": "new\n"}}]})
    .to_string();
    let (_, out, _) = sandbox.run(&["--model", "openai/gpt-5", "call", "batch", &batch]);
    assert!(out.contains("Unknown tool `write`"), "{out}");
    assert!(!sandbox.root.path().join("b.txt").exists(), "{out}");
    // Another model gets `write`.
    let (code, out, _) = sandbox.run(&["--model", "anthropic/claude-x", "call", "write", write]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        std::fs::read_to_string(sandbox.root.path().join("b.txt")).unwrap(),
        "new\n"
    );
}

#[test]
fn a_models_entry_changes_the_tool_set() {
    let sandbox = Sandbox::new();
    sandbox.project(
        r#"{"models": {
            "openai/gpt-5*": {"tools": {"apply_patch": false, "edit": true}},
            "anthropic/*": {"tools": {"apply_patch": true, "write": false}},
        }}"#,
    );
    let gpt = tool_names(&sandbox, &["--model", "openai/gpt-5"]);
    assert!(!has(&gpt, "apply_patch") && has(&gpt, "edit"), "{gpt:?}");
    assert!(!has(&gpt, "write"), "{gpt:?}");
    let claude = tool_names(&sandbox, &["--model", "anthropic/claude-x"]);
    assert!(
        has(&claude, "apply_patch") && !has(&claude, "write"),
        "{claude:?}"
    );
    assert!(has(&claude, "edit"), "{claude:?}");
    // A forced tool is still subject to the agent's permissions.
    sandbox.project(
        r#"{"models": {"anthropic/*": {"tools": {"apply_patch": true}}},
            "permission": {"edit": "deny"}}"#,
    );
    let claude = tool_names(&sandbox, &["--model", "anthropic/claude-x"]);
    assert!(
        !has(&claude, "apply_patch") && !has(&claude, "edit"),
        "{claude:?}"
    );
}

#[test]
fn a_custom_tool_replaces_a_builtin_only_when_overrides_names_it() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "needle\n");
    sandbox.write(
        ".tackle/tools/grep.json",
        &custom_manifest("grep", "custom-grep", serde_json::json!({})),
    );
    let grep = r#"{"pattern": "needle"}"#;
    sandbox.run(&["trust"]);
    // Without `overrides` the built-in keeps the name, and the warning says how to override.
    let (code, out, err) = sandbox.run(&["call", "grep", grep]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("a.txt") && !out.contains("custom-grep"),
        "{out}"
    );
    assert!(
        err.contains("skipped custom tool `grep`") && err.contains("`overrides`"),
        "{err}"
    );
    assert_ne!(description(&sandbox, "grep"), "The custom grep.");

    // Once the project's configuration (its manifest included) is trusted.
    sandbox.project(r#"{"overrides": ["grep"]}"#);
    assert_eq!(description(&sandbox, "grep"), "The custom grep.");
    let (code, out, err) = sandbox.run(&["call", "grep", grep]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("custom-grep"), "{out}");
    assert!(!err.contains("skipped custom tool"), "{err}");
    // `batch` does not call custom tools, so the overridden name left its allow-list.
    let batch = serde_json::json!({"tool_calls": [{"tool": "grep", "parameters": {"pattern": "x"}},
        {"tool": "glob", "parameters": {"pattern": "*.txt"}}]})
    .to_string();
    let (_, out, _) = sandbox.run(&["call", "batch", &batch, "--yes"]);
    assert!(
        out.contains("Tool `grep` cannot be called from a batch"),
        "{out}"
    );
    assert!(out.contains("a.txt"), "{out}");
}

#[test]
fn an_override_without_a_custom_tool_keeps_the_builtin() {
    let sandbox = Sandbox::new();
    sandbox.project(r#"{"overrides": ["glob"]}"#);
    let (code, out, err) = sandbox.run(&["tools"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.lines().any(|l| l.starts_with("glob: ")), "{out}");
    assert!(
        err.contains("`overrides` names `glob`, but no custom tool has that name"),
        "{err}"
    );
}

#[test]
fn a_tool_with_providers_is_offered_only_to_them() {
    let sandbox = Sandbox::new();
    write(
        &sandbox.home.path().join(".config/tackle/tools/picky.json"),
        &custom_manifest(
            "picky",
            "hi",
            serde_json::json!({"providers": ["anthropic"]}),
        ),
    );
    assert!(has(&tool_names(&sandbox, &[]), "picky"));
    assert!(has(
        &tool_names(&sandbox, &["--model", "anthropic/claude-x"]),
        "picky"
    ));
    let gpt = tool_names(&sandbox, &["--model", "openai/gpt-5"]);
    assert!(!has(&gpt, "picky") && has(&gpt, "read"), "{gpt:?}");
    let (code, out, _) = sandbox.run(&["--model", "openai/gpt-5", "call", "picky"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("Unknown tool `picky`"), "{out}");
}

#[test]
fn opencode_tools_false_disables_a_tool() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "opencode.json",
        r#"{"tools": {"bash": false, "read": true}}"#,
    );
    let names = tool_names(&sandbox, &[]);
    assert!(!has(&names, "bash") && has(&names, "read"), "{names:?}");
    sandbox.write("opencode.json", r#"{"tools": {"bash": "no"}}"#);
    let (code, out, _) = sandbox.run(&["config", "check"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("tools.bash: expected a boolean"), "{out}");
}

#[test]
fn config_check_json_lists_models_and_overrides() {
    let sandbox = Sandbox::new();
    sandbox
        .project(r#"{"models": {"openai/*": {"tools": {"edit": false}}}, "overrides": ["grep"]}"#);
    let (code, out, _) = sandbox.run(&["config", "check", "--json"]);
    assert_eq!(code, Some(0), "{out}");
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["models"][0]["model"], "openai/*");
    assert_eq!(value["models"][0]["tools"]["edit"], false);
    assert_eq!(value["overrides"], serde_json::json!(["grep"]));
    sandbox.project(r#"{"models": {"openai/*": {"tools": {"edit": 0}}}}"#);
    let (code, out, _) = sandbox.run(&["config", "check"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(r#"models."openai/*".tools.edit: expected a boolean, got the number 0"#),
        "{out}"
    );
}

/// A configuration using every section, as a user would write it (JSONC).
const FULL_CONFIG: &str = r#"{
  // Editors validate against the printed schema.
  "$schema": "./tackle.schema.json",
  "permission": {"bash": {"*": "ask", "git status*": "allow"}, "read": "allow"},
  "agents": {"review": {"description": "Reviews diffs.", "mode": "subagent",
                        "permission": {"edit": "deny"}}},
  "mcp": {"docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "x"}},
          "fs": {"command": "npx", "args": ["-y", "server"], "env": {"K": "v"}}},
  "limits": {"maxLines": 500, "maxBytes": 20000, "direction": "tail"},
  "shell": {"path": "/bin/bash", "defaultTimeoutMs": 60000, "maxTimeoutMs": 300000},
  "disabledTools": ["websearch"],
  "tools": {"webfetch": false},
  "models": {"openai/gpt-5*": {"tools": {"edit": true}}},
  "overrides": [],
  "lsp": {"pyright": {"command": ["pyright-langserver", "--stdio"], "extensions": [".py"]}},
  "formatter": {"ruff": {"command": ["ruff", "format", "$FILE"], "extensions": [".py"]}},
  "hooks": {"before": [{"tools": ["bash"], "command": ["./guard.sh"], "timeoutMs": 2000}],
            "after": [{"command": ["./audit.sh"]}]},
}"#;

/// Strips `//` line comments and trailing commas, enough for [`FULL_CONFIG`].
fn strict_json(text: &str) -> Value {
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect();
    serde_json::from_str(&lines.join("\n").replace(",\n}", "\n}")).unwrap()
}

#[test]
fn the_printed_schema_accepts_a_full_config_and_rejects_what_check_rejects() {
    let sandbox = Sandbox::new();
    let (code, out, err) = sandbox.run(&["config", "schema"]);
    assert_eq!(code, Some(0), "{err}");
    let schema: Value = serde_json::from_str(&out).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");

    // The full configuration is valid for both the schema and the reader.
    let full = strict_json(FULL_CONFIG);
    let errors: Vec<String> = validator
        .iter_errors(&full)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    sandbox.project(FULL_CONFIG);
    let (code, out, _) = sandbox.run(&["config", "check", "--json"]);
    assert_eq!(code, Some(0), "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        report["hooks"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );

    // Each mistake is refused by both, the reader naming the key path.
    for (mistake, path) in [
        (json!({"permisson": {}}), "permisson"),
        (json!({"limits": {"maxLines": 0}}), "limits.maxLines"),
        (
            json!({"limits": {"direction": "middle"}}),
            "limits.direction",
        ),
        (
            json!({"hooks": {"before": [{"command": []}]}}),
            "hooks.before[0].command",
        ),
        (json!({"hooks": {"during": []}}), "hooks.during"),
        (json!({"shell": {"timeout": 5}}), "shell.timeout"),
    ] {
        assert!(
            !validator.is_valid(&mistake),
            "the schema accepts {mistake}"
        );
        sandbox.project(&mistake.to_string());
        let (code, out, _) = sandbox.run(&["config", "check", "--json"]);
        assert_eq!(code, Some(1), "the reader accepts {mistake}");
        let report: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["errors"][0]["path"], path, "{report}");
    }
}

#[test]
fn config_check_reports_the_search_index_setting_and_its_cap() {
    let sandbox = Sandbox::new();
    let (code, out, _) = sandbox.run(&["config", "check"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("index: kept by `serve` and embedders, at most 1,024 MiB of memory")
            && out.contains("none saved yet for this Location"),
        "{out}"
    );
    sandbox.project(r#"{"index": {"maxMemoryMb": 64}}"#);
    let (_, out, _) = sandbox.run(&["config", "check", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["index"]["maxMemoryMb"], 64, "{out}");
    assert_eq!(report["index"]["enabled"], true, "{out}");
    sandbox.project(r#"{"index": {"enabled": false}}"#);
    let (_, out, _) = sandbox.run(&["config", "check"]);
    assert!(
        out.contains("index: off (`index.enabled` is false)"),
        "{out}"
    );
    sandbox.project(r#"{"index": {"maxMemoryMb": 0}}"#);
    let (code, out, _) = sandbox.run(&["config", "check"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("index.maxMemoryMb"), "{out}");
}
