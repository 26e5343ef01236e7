//! What MCP hosts get from `tackle serve`: the model reads the text `tackle call` prints (no
//! `structuredContent` for hosts that prefer it, unless the configuration opts in, and then
//! every success carries a value its declared `outputSchema` admits), and the server exits well
//! before a host that sends SIGINT gives up on it, with its jobs stopped and its calls journaled.

mod support;

use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::{call, text};
use tempfile::TempDir;

/// Marks the processes one test's server starts, through their environment.
const MARK: &str = "TACKLE_TEST_SERVE_HOSTS";

/// A workspace root and a private data directory.
struct Sandbox {
    root: TempDir,
    data: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.root.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .env("HOME", self.data.path())
            .env(MARK, self.data.path())
            .env_remove("TACKLE_MODEL")
            .env_remove(tackle_mcp::DEPTH_ENV);
        command
    }

    /// `tackle serve --yes` with an initialized client, and the server's pid.
    async fn serve(&self) -> (RunningService<RoleClient, ()>, u32) {
        let mut command = self.command();
        command.args(["serve", "--yes"]);
        let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
        let pid = transport.id().expect("the server's pid");
        (().serve(transport).await.expect("initialize"), pid)
    }

    /// What `tackle call NAME ARGS` prints on stdout, piped.
    async fn call_stdout(&self, name: &str, args: &Value) -> Vec<u8> {
        let output = self
            .command()
            .args(["call", name, &args.to_string()])
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        output.stdout
    }

    /// The processes other than `pid` that carry this sandbox's mark and have not exited.
    fn marked_alive(&self, pid: u32) -> Vec<u32> {
        let mark = format!("{MARK}={}", self.data.path().display());
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&other| other != pid && running(other))
            .filter(|other| {
                std::fs::read(format!("/proc/{other}/environ"))
                    .unwrap_or_default()
                    .split(|&b| b == 0)
                    .any(|v| v == mark.as_bytes())
            })
            .collect()
    }
}

/// True while `pid` exists and is not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

fn listed<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("`{name}` is listed"))
}

/// The only content block's text; fails on any other shape.
fn only_text(result: &CallToolResult) -> String {
    assert_eq!(result.content.len(), 1, "{result:?}");
    text(result)
}

#[tokio::test]
async fn a_read_over_mcp_is_the_text_tackle_call_prints_and_carries_no_structured_content() {
    let sandbox = Sandbox::new();
    let path = sandbox.write("a.txt", "hello\n\tworld \"quoted\"\n");
    let args = json!({ "filePath": path });
    let printed = sandbox.call_stdout("read", &args).await;

    let (client, _) = sandbox.serve().await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(
        tools.iter().all(|tool| tool.output_schema.is_none()),
        "no tool declares an output schema by default"
    );
    let result = call(&client, "read", args).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(result.structured_content, None, "{result:?}");
    let read = only_text(&result);
    assert!(read.contains("     2\t\tworld \"quoted\""), "{read}");
    assert_eq!(
        read.as_bytes(),
        printed.as_slice(),
        "MCP text:\n{read}\n`tackle call` stdout:\n{}",
        String::from_utf8_lossy(&printed)
    );
}

#[tokio::test]
async fn with_serve_structured_content_every_success_carries_a_value_its_output_schema_admits() {
    let sandbox = Sandbox::new();
    sandbox.write(
        ".tackle/config.json",
        r#"{ "serve": { "structuredContent": true } }"#,
    );
    let small = sandbox.write("a.txt", "hello\n");
    let lines: String = (0..3000)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    let big = sandbox.write("big.txt", &lines);
    let (client, _) = sandbox.serve().await;
    let tools = client.list_all_tools().await.unwrap();
    let schema = listed(&tools, "read")
        .output_schema
        .clone()
        .expect("`read` declares its output schema");
    let validator = jsonschema::validator_for(&Value::Object((*schema).clone())).unwrap();

    let result = call(&client, "read", json!({ "filePath": small })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let value = result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert!(
        value["output"]
            .as_str()
            .is_some_and(|o| o.contains("hello")),
        "{value}"
    );
    assert!(validator.is_valid(&value), "{value}");
    assert!(only_text(&result).contains("     1\thello"));

    // The value does not fit the output bound with the text: a stand-in the schema admits.
    let result = call(&client, "read", json!({ "filePath": big, "limit": 2000 })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let value = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let omitted = value["structuredContentOmitted"]
        .as_str()
        .unwrap_or_default();
    assert!(omitted.contains("did not fit the output bound"), "{value}");
    assert!(validator.is_valid(&value), "{value}");
    assert!(text(&result).contains("line 0 of a long file"));
}

#[tokio::test]
async fn serve_exits_within_300_ms_of_sigint_with_stdin_open_jobs_killed_and_calls_journaled() {
    let sandbox = Sandbox::new();
    let (client, pid) = sandbox.serve().await;
    // A job that ignores SIGTERM: only the kill after the grace stops it.
    let started = call(
        &client,
        "bash",
        json!({ "command": "trap '' TERM; sleep 901", "runInBackground": true }),
    )
    .await;
    assert!(text(&started).contains("job-1"), "{started:?}");
    // A call still running when the signal comes.
    let peer = client.peer().clone();
    let pending = tokio::spawn(async move {
        peer.call_tool(
            rmcp::model::CallToolRequestParams::new("bash")
                .with_arguments(support::object(json!({ "command": "sleep 902" }))),
        )
        .await
    });
    // Both sleeps run (under the sandbox each call also has its waiter and init processes).
    let sleeping = |pid| {
        let commands: Vec<String> = sandbox
            .marked_alive(pid)
            .iter()
            .filter_map(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .collect();
        ["sleep 901", "sleep 902"]
            .iter()
            .all(|s| commands.iter().any(|c| c.contains(s)))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sleeping(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = sandbox.marked_alive(pid);
    assert!(sleeping(pid), "the job and the call run: {started:?}");

    // Like Claude Code: SIGINT, with stdin still open, then 500 ms before it escalates.
    let signalled = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    while running(pid) && signalled.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = signalled.elapsed();
    eprintln!("tackle serve exited {} ms after SIGINT", took.as_millis());
    assert!(
        took < Duration::from_millis(300),
        "exited {took:?} after SIGINT"
    );
    assert_eq!(sandbox.marked_alive(pid), Vec::<u32>::new(), "no orphan");
    drop(pending);
    drop(client);

    let journal =
        tackle_store::SqliteJournal::open(sandbox.data.path().join("journal.sqlite3")).unwrap();
    let records = journal.records().unwrap();
    let interrupted = records.iter().find(|record| {
        record.tool == "bash" && record.outcome == tackle_core::OutcomeKind::Interrupted
    });
    assert!(
        interrupted.is_some(),
        "the running call is journaled: {records:?}"
    );
}

/// How a test stops a server.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Sigterm,
    StdinClosed,
}

/// A call's answer never waits for the journal: while another process holds the journal's write
/// lock, calls are still answered. When the server stops (SIGTERM, or its client closing stdin),
/// it commits every answered call's row and every read it tracked before it exits, for the next
/// process to find.
#[tokio::test]
async fn calls_are_answered_while_the_journal_is_locked_and_all_kept_when_serve_stops_on_sigterm_or_stdin_close()
 {
    const CALLS: usize = 40;
    for stop in [Stop::Sigterm, Stop::StdinClosed] {
        let sandbox = Sandbox::new();
        let paths: Vec<String> = (0..CALLS)
            .map(|i| sandbox.write(&format!("f{i}.txt"), &format!("file {i}\n")))
            .collect();
        let mut command = sandbox.command();
        command.args(["--session", "kept", "serve", "--yes"]);
        let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
        let pid = transport.id().expect("the server's pid");
        let client = ().serve(transport).await.expect("initialize");
        let first = call(&client, "read", json!({ "filePath": paths[0] })).await;
        assert_eq!(first.is_error, Some(false), "{first:?}");

        let journal = sandbox.data.path().join("journal.sqlite3");
        let lock = rusqlite::Connection::open(&journal).unwrap();
        lock.execute_batch("BEGIN IMMEDIATE").unwrap();
        let answers = tokio::time::timeout(
            Duration::from_secs(4),
            futures_util::future::join_all(
                paths
                    .iter()
                    .map(|path| call(&client, "read", json!({ "filePath": path }))),
            ),
        )
        .await
        .expect("answered while the journal is locked");
        assert!(
            answers.iter().all(|a| a.is_error == Some(false)),
            "{answers:?}"
        );

        let stopping = tokio::spawn(async move {
            match stop {
                Stop::Sigterm => {
                    let status = std::process::Command::new("kill")
                        .args(["-TERM", &pid.to_string()])
                        .status()
                        .unwrap();
                    assert!(status.success());
                    drop(client);
                }
                Stop::StdinClosed => client.cancel().await.map(drop).expect("close stdin"),
            }
        });
        // The server waits for the lock to commit what it answered.
        tokio::time::sleep(Duration::from_millis(100)).await;
        lock.execute_batch("COMMIT").unwrap();
        drop(lock);
        stopping.await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while running(pid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(!running(pid), "{stop:?}: the server exited");

        let records = tackle_store::SqliteJournal::open(&journal)
            .unwrap()
            .records()
            .unwrap();
        let reads = records.iter().filter(|r| r.tool == "read").count();
        assert_eq!(
            reads,
            CALLS + 1,
            "{stop:?}: every answered call is journaled"
        );
        let state = tackle_store::SqliteSessionState::open(&journal).unwrap();
        for path in &paths {
            let real = std::fs::canonicalize(path).unwrap();
            let key = format!("read:{}", real.display());
            assert!(
                tackle_core::SessionState::get(&state, "kept", &key)
                    .unwrap()
                    .is_some(),
                "{stop:?}: the read of {path} is tracked"
            );
        }
    }
}

/// One connection on the journal's file, however many stores live in it (the journal, session
/// state, saved approvals, the job log).
#[tokio::test]
async fn serve_holds_one_connection_to_the_journal_file() {
    let sandbox = Sandbox::new();
    let path = sandbox.write("a.txt", "hello\n");
    let (client, pid) = sandbox.serve().await;
    let result = call(&client, "read", json!({ "filePath": path })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let journal = std::fs::canonicalize(sandbox.data.path())
        .unwrap()
        .join("journal.sqlite3");
    let open: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| *target == journal)
        .collect();
    assert_eq!(
        open.len(),
        1,
        "descriptors on {}: {open:?}",
        journal.display()
    );
    drop(client);
}
