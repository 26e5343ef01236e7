//! `tackle serve` end to end: an MCP client spawns the binary and talks to it over stdio
//! (calls, errors, cancellation, `tools/list_changed` when a configured MCP server comes and
//! goes), and a second `tackle` reaches one served over streamable HTTP.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::NotificationContext;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use support::{Person, call, object, text};
use tempfile::TempDir;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

/// A workspace root and a private data directory for one server.
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
        std::fs::create_dir(sandbox.data.path().join("tmp")).unwrap();
        sandbox
    }

    /// Spawns `tackle --root <root> --data-dir <data> serve` and initializes a client with it.
    async fn connect(&self) -> RunningService<RoleClient, ()> {
        self.connect_with(()).await
    }

    /// The same with the client handler `client`.
    async fn connect_with<C: ClientHandler>(&self, client: C) -> RunningService<RoleClient, C> {
        let transport =
            TokioChildProcess::new(self.command(["serve"])).expect("spawn tackle serve");
        client.serve(transport).await.expect("initialize")
    }

    /// `tackle --root <root> --data-dir <data> ARGS…` with a private HOME and TMPDIR.
    fn command<const N: usize>(&self, args: [&str; N]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .args(args)
            .env("HOME", self.data.path())
            .env("TMPDIR", self.data.path().join("tmp"))
            .env_remove("TACKLE_MODEL");
        command
    }

    /// Writes `name`; a configuration file is then trusted (these tests are about what it
    /// configures, `trust.rs` about trust).
    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.root.path().join(name), text).unwrap();

        if name == ".tackle/config.json" {
            let trust = std::process::Command::new(env!("CARGO_BIN_EXE_tackle"))
                .arg("--root")
                .arg(self.root.path())
                .arg("--data-dir")
                .arg(self.data.path())
                .arg("trust")
                .env("HOME", self.data.path())
                .output()
                .unwrap();
            assert!(trust.status.success());
        }
    }

    fn path(&self, name: &str) -> String {
        self.root.path().join(name).to_string_lossy().into_owned()
    }
}

#[tokio::test]
async fn serve_lists_and_settles_builtin_tools_over_stdio() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\nworld\n");
    let client = sandbox.connect().await;

    let info = client.peer_info().expect("server info");
    let tools_capability = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools_capability.list_changed, Some(true));

    let tools = client.list_all_tools().await.expect("tools/list");
    let read = tools
        .iter()
        .find(|tool| tool.name == "read")
        .expect("`read` is listed");
    assert!(read.description.as_deref().is_some_and(|d| !d.is_empty()));
    assert!(read.input_schema.contains_key("properties"));
    // `tackle tools --for serve` prints exactly this list.
    let mut served: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
    served.sort();
    let listed = sandbox
        .command(["tools", "--for", "serve"])
        .output()
        .await
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    let mut listed: Vec<String> = listed
        .lines()
        .filter_map(|line| line.split(": ").next())
        .map(str::to_owned)
        .collect();
    listed.sort();
    assert_eq!(served, listed);

    let result = call(
        &client,
        "read",
        json!({ "filePath": sandbox.path("a.txt") }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let body = text(&result);
    assert!(body.contains("     1\thello\n     2\tworld"), "{body}");

    let bad = call(&client, "read", json!({ "filePath": 7 })).await;
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert!(text(&bad).contains("filePath"), "{bad:?}");

    let unknown = call(&client, "no_such_tool", json!({})).await;
    assert_eq!(unknown.is_error, Some(true), "{unknown:?}");

    // Closing stdin ends the server promptly.
    let started = Instant::now();
    client.cancel().await.expect("close the client");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn serve_refuses_permission_questions_without_yes() {
    let sandbox = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "x\n").unwrap();
    let client = sandbox.connect().await;
    // Reading outside the root asks; nobody can answer, so it is refused as an error result.
    let result = call(&client, "read", json!({ "filePath": path_str(&secret) })).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    // The remedy is the user's: the model cannot restart the server it talks to.
    assert!(
        text(&result).contains("restart `tackle serve` with --yes")
            && !text(&result).contains("re-run"),
        "{result:?}"
    );
    client.cancel().await.expect("close the client");
}

fn path_str(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// A client that reports `tools/list_changed`.
struct ListChanged(mpsc::UnboundedSender<()>);

impl ClientHandler for ListChanged {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

/// True while a process with this PID exists.
fn alive(pid: &str) -> bool {
    std::process::Command::new("kill")
        .args(["-0", pid])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Waits up to `limit` for `condition`.
async fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    condition()
}

#[tokio::test]
async fn cancelling_a_call_kills_its_command_and_the_server_goes_on() {
    let sandbox = Sandbox::new();
    let client = sandbox.connect().await;
    let pid_file = sandbox.path("sleeper.pid");
    let peer = client.peer().clone();
    // The shell's PID as the host sees it (`$$` is its PID in the sandbox's namespace).
    let command = format!("cut -d' ' -f4 /proc/self/stat > '{pid_file}'; exec sleep 30");
    let pending = tokio::spawn(async move {
        peer.call_tool(
            CallToolRequestParams::new("bash")
                .with_arguments(object(json!({ "command": command }))),
        )
        .await
    });
    assert!(
        eventually(Duration::from_secs(10), || std::fs::read_to_string(
            &pid_file
        )
        .is_ok_and(|pid| !pid.trim().is_empty()))
        .await,
        "the command started"
    );
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    assert!(alive(&pid));
    // Dropping the request sends `notifications/cancelled`.
    pending.abort();
    assert!(
        eventually(Duration::from_secs(10), || !alive(&pid)).await,
        "the cancelled command's process is gone"
    );
    let result = call(&client, "bash", json!({ "command": "echo still here" })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(text(&result).contains("still here"), "{result:?}");
    client.cancel().await.expect("close the client");
}

#[tokio::test]
async fn a_configured_mcp_server_that_exits_and_returns_sends_list_changed_each_time() {
    let sandbox = Sandbox::new();
    // The upstream server is another `tackle serve`, started through sh to learn its PID.
    let upstream = Sandbox::new();
    upstream.write("note.txt", "from upstream\n");
    let pid_file = sandbox.data.path().join("upstream.pid");
    let script = format!(
        "echo $$ > '{}'; exec '{}' --root '{}' --data-dir '{}' serve",
        pid_file.display(),
        env!("CARGO_BIN_EXE_tackle"),
        upstream.root.path().display(),
        upstream.data.path().display(),
    );
    std::fs::create_dir(sandbox.root.path().join(".tackle")).unwrap();
    sandbox.write(
        ".tackle/config.json",
        &json!({ "mcp": { "up": { "command": "sh", "args": ["-c", script] } } }).to_string(),
    );
    let (changed_tx, mut changed) = mpsc::unbounded_channel();
    let client = sandbox.connect_with(ListChanged(changed_tx)).await;
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect()
    };
    let tools = names(client.list_all_tools().await.expect("tools/list"));
    assert!(tools.contains(&"up_read".to_owned()), "{tools:?}");
    let result = call(
        &client,
        "up_read",
        json!({ "filePath": upstream.path("note.txt") }),
    )
    .await;
    assert!(text(&result).contains("from upstream"), "{result:?}");

    // The upstream server dies: its tools leave, and the client hears of it.
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    std::fs::remove_file(&pid_file).unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap()
            .success()
    );
    tokio::time::timeout(Duration::from_secs(10), changed.recv())
        .await
        .expect("tools/list_changed after the exit")
        .expect("the channel is open");
    let tools = names(client.list_all_tools().await.expect("tools/list"));
    assert!(!tools.contains(&"up_read".to_owned()), "{tools:?}");
    assert!(
        tools.contains(&"read".to_owned()),
        "the built-ins stay: {tools:?}"
    );

    // It is restarted with backoff: the tools come back, and the client hears of that too.
    tokio::time::timeout(Duration::from_secs(15), changed.recv())
        .await
        .expect("tools/list_changed after the reconnection")
        .expect("the channel is open");
    let tools = names(client.list_all_tools().await.expect("tools/list"));
    assert!(tools.contains(&"up_read".to_owned()), "{tools:?}");
    client.cancel().await.expect("close the client");
}

#[tokio::test]
async fn a_tackle_served_over_http_is_reached_by_a_configured_url() {
    let served = Sandbox::new();
    served.write("remote.txt", "over http\n");
    let mut server = served.command(["serve", "--http", "127.0.0.1:0"]);
    server
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut server = server.spawn().expect("spawn tackle serve --http");
    let mut lines = tokio::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.expect("read stderr") {
            if let Some(url) = line.split(" at ").nth(1) {
                return url.trim().to_owned();
            }
        }
        panic!("the server exited before printing its address");
    })
    .await
    .expect("the server prints its address");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );

    let client = Sandbox::new();
    std::fs::create_dir(client.root.path().join(".tackle")).unwrap();
    client.write(
        ".tackle/config.json",
        &json!({ "mcp": { "far": { "url": url } } }).to_string(),
    );
    let output = client
        .command([
            "call",
            "far_read",
            &json!({ "filePath": served.path("remote.txt") }).to_string(),
        ])
        .output()
        .await
        .expect("run tackle call");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("over http"), "{stdout}");
    server.start_kill().expect("stop the server");
}

#[tokio::test]
async fn mcp_tools_are_asked_for_under_their_registered_name() {
    let upstream = Sandbox::new();
    upstream.write("note.txt", "guarded\n");
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.root.path().join(".tackle")).unwrap();
    sandbox.write(
        ".tackle/config.json",
        &json!({
            "permission": { "up_read": "ask" },
            "mcp": { "up": {
                "command": env!("CARGO_BIN_EXE_tackle"),
                "args": ["--root", upstream.root.path(), "--data-dir", upstream.data.path(), "serve"],
            } },
        })
        .to_string(),
    );
    let args = json!({ "filePath": upstream.path("note.txt") }).to_string();
    let refused = sandbox
        .command(["call", "up_read", &args])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run tackle call");
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert_eq!(refused.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("`up_read`") && stdout.contains("--yes"),
        "{stdout}"
    );
    assert!(!stdout.contains("guarded"), "{stdout}");

    let allowed = sandbox
        .command(["call", "--yes", "up_read", &args])
        .output()
        .await
        .expect("run tackle call --yes");
    let stdout = String::from_utf8_lossy(&allowed.stdout);
    assert!(allowed.status.success(), "{stdout}");
    assert!(stdout.contains("guarded"), "{stdout}");
}

#[tokio::test]
async fn serve_asks_a_client_with_elicitation_instead_of_refusing() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "the answer\n").unwrap();
    for (decision, allowed) in [("once", true), ("reject", false)] {
        let sandbox = Sandbox::new();
        let (person, mut asked, _changes) = Person::new(Some(decision));
        let client = sandbox.connect_with(person).await;
        let result = call(&client, "read", json!({ "filePath": path_str(&secret) })).await;
        let question = asked.try_recv().expect("the client was asked");
        assert!(question.contains("external_directory"), "{question}");
        assert_eq!(result.is_error, Some(!allowed), "{decision}: {result:?}");
        assert_eq!(text(&result).contains("the answer"), allowed, "{result:?}");
        client.cancel().await.expect("close the client");
    }
}

#[tokio::test]
async fn debug_logs_go_to_the_log_file_and_never_to_stdout() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "alpha\n");
    let log = sandbox.data.path().join("serve.log");
    let log_arg = log.to_string_lossy().into_owned();
    let mut command = sandbox.command(["--log-file", &log_arg, "serve"]);
    command.env("TACKLE_LOG", "debug");
    let client =
        ().serve(TokioChildProcess::new(command).expect("spawn tackle serve"))
            .await
            .expect("initialize: stdout carries only the protocol");
    let result = call(
        &client,
        "read",
        json!({ "filePath": sandbox.path("a.txt") }),
    )
    .await;
    assert!(text(&result).contains("alpha"), "{result:?}");
    client.cancel().await.expect("close the client");
    let logged = std::fs::read_to_string(&log).expect("the log file exists");
    assert!(
        logged.contains("DEBUG"),
        "debug lines are in the file: {logged}"
    );
}

#[tokio::test]
async fn serve_answers_grep_and_glob_from_its_index_and_sees_each_edit_at_the_next_call() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "first line\n");
    std::fs::create_dir(sandbox.root.path().join("src")).unwrap();
    sandbox.write("src/b.rs", "fn main() {}\n");
    let log = sandbox.data.path().join("serve.log");
    let mut command = sandbox.command(["--log-file", log.to_str().unwrap(), "serve"]);
    command.env("TACKLE_LOG", "info");
    let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
    let client = ().serve(transport).await.expect("initialize");
    // The index is built in the background; its log line says when it is ready.
    let indexed = eventually(Duration::from_secs(30), || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("indexed"))
    })
    .await;
    assert!(indexed, "{:?}", std::fs::read_to_string(&log));

    let grep = |pattern: &'static str| call(&client, "grep", json!({ "pattern": pattern }));
    assert!(text(&grep("needle_edit").await).starts_with("No matches found"));

    // Edits made outside tackle, as an editor or `git checkout` would, before the next call.
    std::fs::write(
        sandbox.root.path().join("a.txt"),
        "first line\nneedle_edit\n",
    )
    .unwrap();
    std::fs::create_dir_all(sandbox.root.path().join("src/new")).unwrap();
    std::fs::write(sandbox.root.path().join("src/new/c.rs"), "// needle_edit\n").unwrap();
    let found = text(&grep("needle_edit").await);
    assert!(found.starts_with("Found 2 matches"), "{found}");
    assert!(found.contains("a.txt:\n  Line 2: needle_edit"), "{found}");
    assert!(
        found.contains("src/new/c.rs:\n  Line 1: // needle_edit"),
        "{found}"
    );

    let glob = text(&call(&client, "glob", json!({ "pattern": "**/*.rs" })).await);
    let mut listed: Vec<&str> = glob.lines().collect();
    listed.sort();
    assert_eq!(listed, ["src/b.rs", "src/new/c.rs"], "{glob}");

    std::fs::remove_file(sandbox.root.path().join("a.txt")).unwrap();
    let after = text(&grep("needle_edit").await);
    assert!(after.starts_with("Found 1 match"), "{after}");
    client.cancel().await.expect("close the client");
}

#[tokio::test]
async fn serve_grep_from_its_index_leaves_out_and_counts_files_whose_read_is_denied() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.root.path().join(".tackle")).unwrap();
    sandbox.write(
        ".tackle/config.json",
        &json!({ "permission": { "read": { "*.secret": "deny" } } }).to_string(),
    );
    sandbox.write("notes.txt", "needle_rule here\n");
    sandbox.write("keys.secret", "needle_rule hidden\n");
    let log = sandbox.data.path().join("serve.log");
    let mut command = sandbox.command(["--log-file", log.to_str().unwrap(), "serve"]);
    command.env("TACKLE_LOG", "info");
    let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
    let client = ().serve(transport).await.expect("initialize");
    let indexed = eventually(Duration::from_secs(30), || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("indexed"))
    })
    .await;
    assert!(indexed, "{:?}", std::fs::read_to_string(&log));

    // Before and after an edit, from the index: the denied file is neither shown nor searched.
    for round in 0..2 {
        let found = text(&call(&client, "grep", json!({ "pattern": "needle_rule" })).await);
        assert!(found.starts_with("Found 1 match"), "{round}: {found}");
        assert!(
            found.contains("notes.txt:\n  Line 1: needle_rule here"),
            "{found}"
        );
        assert!(!found.contains("hidden"), "{found}");
        assert!(
            found.contains("1 file was not searched because your permission rules deny"),
            "{found}"
        );
        std::fs::write(
            sandbox.root.path().join("keys.secret"),
            "needle_rule hidden again\n",
        )
        .unwrap();
    }
    client.cancel().await.expect("close the client");
}
