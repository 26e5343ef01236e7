//! Code intelligence end to end, on real language servers: diagnostics after edits through
//! `tackle call` and `tackle serve`, the `lsp` tool, restarts, and servers that never answer.
//!
//! The servers come from `scripts/install-test-servers.sh`, which the tests run on first use
//! (and `.ci/run` calls). When it cannot install them, these tests print a line naming the
//! script and pass; with `CI=true` they fail.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use support::{SILENT_SERVER, call, text};
use tempfile::TempDir;

/// The directory holding the test servers (installed on first use), or `None` (after saying
/// so) when they are missing.
fn servers(programs: &[&str]) -> Option<PathBuf> {
    let dir = support::peers::locate(support::peers::Peer::LanguageServers, &programs.join(" "))?;
    let system = [dir.clone(), PathBuf::from("/usr/bin")];
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| !system.iter().any(|d| d.join(p).exists()))
        .collect();
    if missing.is_empty() {
        return Some(dir);
    }
    let message = format!(
        "skipped: {} not installed; run scripts/install-test-servers.sh",
        missing.join(", ")
    );
    assert!(std::env::var("CI").is_err(), "{message}");
    eprintln!("{message}");
    None
}

/// A project directory and a private data directory.
struct Project {
    root: TempDir,
    data: TempDir,
    path_var: String,
}

impl Project {
    fn new(servers: Option<&Path>) -> Self {
        let path_var = match servers {
            Some(dir) => format!("{}:/usr/bin:/bin", dir.display()),
            // No directory at all: no server can be found.
            None => "/nonexistent-tackle-test-path".to_owned(),
        };
        Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            path_var,
        }
    }

    /// Writes `name`; a configuration file is then trusted (these tests are about what it
    /// configures, `trust.rs` about trust).
    fn write(&self, name: &str, text: &str) {
        let path = self.root.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        if name == ".tackle/config.json" {
            assert!(
                self.command()
                    .arg("trust")
                    .output()
                    .unwrap()
                    .status
                    .success()
            );
        }
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.path().join(name)).unwrap()
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .args(["--session", "s"])
            .env("PATH", &self.path_var)
            .env("HOME", self.data.path())
            .env(MARK, self.data.path())
            .env_remove("TACKLE_MODEL");
        command
    }

    /// `tackle call NAME ARGS`: what the model reads, and how long it took.
    fn call(&self, name: &str, args: serde_json::Value) -> (String, Duration) {
        let started = Instant::now();
        let output = self
            .command()
            .args(["call", name, &args.to_string()])
            .output()
            .unwrap();
        let took = started.elapsed();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "tackle call {name} failed: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        (stdout, took)
    }

    async fn serve(&self) -> RunningService<rmcp::RoleClient, ()> {
        let mut command = tokio::process::Command::from(self.command());
        command.arg("serve");
        ().serve(TokioChildProcess::new(command).unwrap())
            .await
            .expect("initialize")
    }

    /// Processes started for this project other than `tackle` itself: its language servers.
    /// They inherit the marker in their environment.
    fn server_processes(&self) -> Vec<i32> {
        let mark = format!("{MARK}={}", self.data.path().display());
        let tackle = env!("CARGO_BIN_EXE_tackle");
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                let marked = environ.split(|&b| b == 0).any(|v| v == mark.as_bytes());
                let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
                marked && exe != Path::new(tackle)
            })
            .collect()
    }
}

/// Generous waits: the tests run beside the whole suite on two cores.
const PATIENT: &str = r#"{"diagnostics": {"waitMs": 15000, "startTimeoutMs": 60000}}"#;

fn python_project(servers: &Path) -> Project {
    let project = Project::new(Some(servers));
    project.write(".tackle/config.json", PATIENT);
    project.write("pyproject.toml", "");
    project.write(
        "lib.py",
        "def add(a: int, b: int) -> int:\n    return a + b\n",
    );
    project.write("main.py", "from lib import add\n\nprint(add(1, 2))\n");
    project
}

/// The environment variable that marks the processes of one test's project.
const MARK: &str = "TACKLE_LSP_TEST_PROJECT";

const BLOCK: &str = "LSP errors detected in this file, please fix:";

#[test]
fn an_edit_that_introduces_a_type_error_is_reported_and_the_fix_clears_it() {
    let Some(servers) = servers(&["pyright-langserver"]) else {
        return;
    };
    let project = python_project(&servers);
    project.call("read", json!({"filePath": "lib.py"}));
    let (broke, _) = project.call(
        "edit",
        json!({"filePath": "lib.py", "oldString": "return a + b", "newString": "return a + \"b\""}),
    );
    assert!(broke.contains(BLOCK), "{broke}");
    assert!(
        broke.contains("<diagnostics file=\"lib.py\">\nERROR [2:12] Operator \"+\" not supported"),
        "{broke}"
    );
    let (fixed, _) = project.call(
        "edit",
        json!({"filePath": "lib.py", "oldString": "return a + \"b\"", "newString": "return a + b"}),
    );
    assert!(!fixed.contains("LSP errors"), "{fixed}");
    assert!(!fixed.contains("language server"), "{fixed}");
}

/// A pyright project whose `old.py`, already read, has a type error on line 1.
fn old_error_read(servers: &Path) -> Project {
    let project = python_project(servers);
    project.write(
        "old.py",
        "x: int = \"old\"\n\ndef f() -> int:\n    return 1\n",
    );
    project.call("read", json!({"filePath": "old.py"}));
    project
}

#[test]
fn errors_that_were_there_before_are_counted_not_listed() {
    let Some(servers) = servers(&["pyright-langserver"]) else {
        return;
    };
    let project = old_error_read(&servers);
    let (out, _) = project.call(
        "edit",
        json!({"filePath": "old.py", "oldString": "return 1", "newString": "return \"new\""}),
    );
    assert!(out.contains("ERROR [4:12]"), "{out}");
    assert!(!out.contains("[1:10]"), "the old error is listed: {out}");
    assert!(
        out.contains("(1 error that was there before this change is not listed.)"),
        "{out}"
    );
}

#[test]
fn an_edit_that_adds_no_error_still_counts_the_old_ones() {
    let Some(servers) = servers(&["pyright-langserver"]) else {
        return;
    };
    let project = old_error_read(&servers);
    let (out, _) = project.call(
        "edit",
        json!({"filePath": "old.py", "oldString": "return 1", "newString": "return 2"}),
    );
    assert!(!out.contains("LSP errors"), "{out}");
    assert!(
        out.contains("(1 error that was there before this change is not listed.)"),
        "{out}"
    );
}

/// Case 5 of issue 26: a file read while the server is still cold has old errors; a harmless
/// edit of another file must not list them as introduced.
#[tokio::test]
async fn an_old_error_in_a_file_read_on_a_cold_server_is_not_blamed_on_the_next_edit() {
    let Some(servers) = servers(&["pyright-langserver"]) else {
        return;
    };
    let project = python_project(&servers);
    project.write("pre.py", "x: int = \"s\"\n");
    let client = project.serve().await;
    call(&client, "read", json!({"filePath": "lib.py"})).await;
    call(&client, "read", json!({"filePath": "pre.py"})).await;
    let out = text(
        &call(
            &client,
            "edit",
            json!({"filePath": "lib.py", "oldString": "return a + b", "newString": "return b + a"}),
        )
        .await,
    );
    assert!(!out.contains("LSP errors"), "{out}");
    assert!(!out.contains("pre.py"), "{out}");
    // Once the server has answered for it, the old error stays old on later edits too.
    let later = text(
        &call(
            &client,
            "edit",
            json!({"filePath": "lib.py", "oldString": "return b + a", "newString": "return a + b"}),
        )
        .await,
    );
    assert!(!later.contains("pre.py"), "{later}");
    client.cancel().await.unwrap();
}

#[test]
fn without_any_server_the_syntax_check_still_reports() {
    let project = Project::new(None);
    project.write("pyproject.toml", "");
    let (out, _) = project.call(
        "write",
        json!({"filePath": "bad.py", "content": "def f(:\n    pass\n"}),
    );
    assert!(
        out.trim_end().ends_with(&format!(
            "{BLOCK}\n<diagnostics file=\"bad.py\">\nERROR [1:7] Syntax error: missing `)`\n</diagnostics>"
        )),
        "{out}"
    );
    let (config, _) = {
        let output = project
            .command()
            .args(["config", "check"])
            .output()
            .unwrap();
        (String::from_utf8_lossy(&output.stdout).into_owned(), ())
    };
    assert!(config.contains("language servers: none found"), "{config}");
    // A valid file says nothing more than the write.
    let (clean, _) = project.call(
        "write",
        json!({"filePath": "ok.rs", "content": "fn main() {}\n"}),
    );
    assert_eq!(clean.trim(), "Created ok.rs (1 line).");
}

#[test]
fn typescript_and_clangd_report_an_introduced_error_and_its_fix() {
    let Some(servers) = servers(&["typescript-language-server", "clangd"]) else {
        return;
    };
    let project = Project::new(Some(&servers));
    project.write(".tackle/config.json", PATIENT);
    project.write("package.json", "{}\n");
    project.write(
        "tsconfig.json",
        "{\"compilerOptions\": {\"strict\": true}}\n",
    );
    project.write("a.ts", "export const n: number = 1;\n");
    project.write("compile_flags.txt", "-std=c11\n");
    project.write("a.c", "int main(void) { return 0; }\n");
    for (file, bad, good, message) in [
        (
            "a.ts",
            "= \"one\";",
            "= 1;",
            "not assignable to type 'number'",
        ),
        (
            "a.c",
            "return x;",
            "return 0;",
            "Use of undeclared identifier 'x'",
        ),
    ] {
        project.call("read", json!({"filePath": file}));
        let (broke, _) = project.call(
            "edit",
            json!({"filePath": file, "oldString": good.trim_start_matches("= ").trim_start_matches("return "), "newString": bad.trim_start_matches("= ").trim_start_matches("return ")}),
        );
        assert!(
            broke.contains(BLOCK) && broke.contains(message),
            "{file}: {broke}"
        );
        let (fixed, _) = project.call(
            "edit",
            json!({"filePath": file, "oldString": bad.trim_start_matches("= ").trim_start_matches("return "), "newString": good.trim_start_matches("= ").trim_start_matches("return ")}),
        );
        assert!(!fixed.contains("LSP errors"), "{file}: {fixed}");
    }
}

#[tokio::test]
async fn through_serve_other_files_hover_references_and_a_restart_after_a_crash() {
    let Some(servers) = servers(&["pyright-langserver"]) else {
        return;
    };
    let project = python_project(&servers);
    let client = project.serve().await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "lsp"), "lsp is offered");

    // The caller is open (it was read), so breaking the callee reports it as another file.
    call(&client, "read", json!({"filePath": "main.py"})).await;
    call(&client, "read", json!({"filePath": "lib.py"})).await;
    let broke = text(
        &call(
            &client,
            "edit",
            json!({"filePath": "lib.py", "oldString": "def add(a: int, b: int)", "newString": "def add(a: int, b: int, c: int)"}),
        )
        .await,
    );
    assert!(
        broke.contains(
            "LSP errors detected in other files:\n<diagnostics file=\"main.py\">\nERROR [3:7]"
        ),
        "{broke}"
    );
    assert!(!broke.contains(BLOCK), "{broke}");
    call(
        &client,
        "edit",
        json!({"filePath": "lib.py", "oldString": ", c: int)", "newString": ")"}),
    )
    .await;

    let hover = text(
        &call(
            &client,
            "lsp",
            json!({"operation": "hover", "filePath": "main.py", "line": 3, "character": 7}),
        )
        .await,
    );
    assert!(
        hover.contains("def add(") && hover.contains("-> int"),
        "{hover}"
    );
    let references = text(
        &call(
            &client,
            "lsp",
            json!({"operation": "findReferences", "filePath": "lib.py", "line": 1, "character": 5}),
        )
        .await,
    );
    assert!(
        references.contains("lib.py:1:5: def add(a: int, b: int) -> int:"),
        "{references}"
    );
    assert!(
        references.contains("main.py:3:7: print(add(1, 2))"),
        "{references}"
    );
    let symbols = text(
        &call(
            &client,
            "lsp",
            json!({"operation": "documentSymbol", "filePath": "lib.py"}),
        )
        .await,
    );
    assert!(
        symbols.starts_with("function add — lib.py:1:5"),
        "{symbols}"
    );

    // Kill the server: the next edit starts it again and still reports.
    let before = project.server_processes();
    assert!(!before.is_empty(), "a language server runs in the project");
    for pid in &before {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = text(
        &call(
            &client,
            "edit",
            json!({"filePath": "lib.py", "oldString": "return a + b", "newString": "return a + \"b\""}),
        )
        .await,
    );
    assert!(
        again.contains(BLOCK) && again.contains("Operator \"+\""),
        "{again}"
    );

    // Closing the client ends serve, and its servers with it.
    client.cancel().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !project.server_processes().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        project.server_processes(),
        Vec::<i32>::new(),
        "no server is left"
    );
    assert_eq!(
        project.read("lib.py"),
        "def add(a: int, b: int) -> int:\n    return a + \"b\"\n"
    );
}

#[test]
fn servers_that_never_answer_or_never_report_do_not_hang_the_edit() {
    let mut project = Project::new(None);
    project.path_var = "/usr/bin:/bin".to_owned();
    project.write(".tackle/silent.py", SILENT_SERVER);
    let script = project.root.path().join(".tackle/silent.py");
    let script = script.to_str().unwrap();
    project.write(
        ".tackle/config.json",
        &json!({
            "lsp": {
                "mute": {"command": ["/usr/bin/python3", script, "mute"], "extensions": [".zz"]},
                "quiet": {"command": ["/usr/bin/python3", script, "answers"], "extensions": [".yy"]},
            },
            "diagnostics": {"waitMs": 500, "startTimeoutMs": 1000},
        })
        .to_string(),
    );
    let (out, took) = project.call("write", json!({"filePath": "a.zz", "content": "x\n"}));
    assert!(
        out.contains("(The mute language server is not available: it did not initialize: the server did not answer initialize within 1s. Only the syntax check ran.)"),
        "{out}"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
    let (out, _) = project.call("write", json!({"filePath": "a.yy", "content": "x\n"}));
    assert!(
        out.contains("(The quiet language server did not report on a.yy within 0.5 s; its errors, if any, are not listed.)"),
        "{out}"
    );
    // SIGKILL to the group is sent as tackle exits; the processes die a moment later.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !project.server_processes().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        project.server_processes(),
        Vec::<i32>::new(),
        "no server is left"
    );
}

/// A client that keeps the log messages it hears (MCP logging, deprecated in 2026-07-28 but
/// what 2025-11-25 clients use).
struct Listener(tokio::sync::mpsc::UnboundedSender<String>);

#[allow(deprecated)]
impl rmcp::ClientHandler for Listener {
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.data.to_string());
    }
}

#[tokio::test]
#[allow(deprecated)]
async fn a_language_server_that_does_not_report_is_a_log_message_for_the_client() {
    let mut project = Project::new(None);
    project.path_var = "/usr/bin:/bin".to_owned();
    project.write(".tackle/silent.py", SILENT_SERVER);
    let script = project.root.path().join(".tackle/silent.py");
    project.write(
        ".tackle/config.json",
        &json!({
            "lsp": {"quiet": {"command": ["/usr/bin/python3", script.to_str().unwrap(), "answers"], "extensions": [".yy"]}},
            "diagnostics": {"waitMs": 500},
        })
        .to_string(),
    );
    let (heard, mut messages) = tokio::sync::mpsc::unbounded_channel();
    let mut command = tokio::process::Command::from(project.command());
    command.arg("serve");
    let client = Listener(heard)
        .serve(TokioChildProcess::new(command).unwrap())
        .await
        .expect("initialize");
    client
        .peer()
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Warning,
        ))
        .await
        .expect("logging/setLevel");
    let result = call(
        &client,
        "write",
        json!({"filePath": "a.yy", "content": "x\n"}),
    )
    .await;
    assert!(
        text(&result).contains("did not report on a.yy"),
        "{}",
        text(&result)
    );
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let message = messages.recv().await.expect("the client is open");
            if message.contains("did not report") {
                return message;
            }
        }
    })
    .await
    .expect("the warning reached the client");
    assert!(
        heard.contains("The quiet language server did not report on a.yy within 0.5 s"),
        "{heard}"
    );
    client.cancel().await.unwrap();
}

#[test]
fn a_configured_formatter_leaves_the_formatted_file_and_the_next_edit_is_not_stale() {
    let Some(rustfmt) = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("rustfmt"))
            .find(|p| p.exists())
    }) else {
        assert!(std::env::var("CI").is_err(), "rustfmt is not on PATH");
        eprintln!("skipped: rustfmt is not on PATH");
        return;
    };
    let mut project = Project::new(None);
    project.path_var = format!("{}:/usr/bin:/bin", rustfmt.parent().unwrap().display());
    project.write(".tackle/config.json", r#"{"formatter": {"rustfmt": {}}}"#);
    let (out, _) = project.call(
        "write",
        json!({"filePath": "src/main.rs", "content": "fn  main( ){ let x=1 ; }\n"}),
    );
    assert_eq!(
        project.read("src/main.rs"),
        "fn main() {\n    let x = 1;\n}\n"
    );
    assert!(
        out.contains("The project's formatter then reformatted the file"),
        "{out}"
    );
    // No formatter's temporary copy is left next to the file.
    let names: Vec<_> = std::fs::read_dir(project.root.path().join("src"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["main.rs"]);
    // The session's read is the formatted file: editing it is not refused as stale, and the
    // result's diff is of the final file.
    let output = project
        .command()
        .args(["call", "--json", "edit"])
        .arg(
            json!({"filePath": "src/main.rs", "oldString": "let x = 1;", "newString": "let  y=2;"})
                .to_string(),
        )
        .output()
        .unwrap();
    let record: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert_eq!(
        project.read("src/main.rs"),
        "fn main() {\n    let y = 2;\n}\n"
    );
    assert!(
        text.contains("+    let y = 2;"),
        "the diff is of the formatted file: {record}"
    );
    // `formatter: false` turns it off.
    project.write(".tackle/config.json", r#"{"formatter": false}"#);
    project.call("read", json!({"filePath": "src/main.rs"}));
    project.call(
        "edit",
        json!({"filePath": "src/main.rs", "oldString": "let y = 2;", "newString": "let  z=3;"}),
    );
    assert_eq!(
        project.read("src/main.rs"),
        "fn main() {\n    let  z=3;\n}\n"
    );
}

#[tokio::test]
async fn lsp_results_leave_out_files_the_read_rules_protect() {
    let Some(servers) = servers(&["pyright-langserver"]) else {
        return;
    };
    let project = python_project(&servers);
    // A deny only narrows, so the project's own rule applies without trust.
    project.write(
        ".tackle/config.json",
        r#"{"diagnostics": {"waitMs": 15000, "startTimeoutMs": 60000},
            "permission": {"read": {"vault.py": "deny"}}}"#,
    );
    let client = project.serve().await;
    call(&client, "read", json!({"filePath": "main.py"})).await;
    call(&client, "read", json!({"filePath": "lib.py"})).await;
    // Written through the tools (a new file needs no read), so the server has it open.
    let vault = "from lib import add\n\nTOKEN = 'sk-hidden-0123'\nprint(add(TOKEN, 2))\n";
    call(
        &client,
        "write",
        json!({"filePath": "vault.py", "content": vault}),
    )
    .await;
    let references = text(
        &call(
            &client,
            "lsp",
            json!({"operation": "findReferences", "filePath": "lib.py", "line": 1, "character": 5}),
        )
        .await,
    );
    assert!(
        references.contains("main.py:3:7: print(add(1, 2))"),
        "{references}"
    );
    assert!(
        !references.contains("sk-hidden") && !references.contains("vault.py"),
        "{references}"
    );
    assert!(
        references.contains("in files your permission rules do not let you read"),
        "{references}"
    );
    client.cancel().await.unwrap();
}
