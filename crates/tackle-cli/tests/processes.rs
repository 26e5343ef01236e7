//! No self-spawn and no orphan servers: a configuration naming tackle itself (OpenCode's
//! `opencode.json` way of plugging tackle in) starts no tackle, a wrapped one stops at one
//! level, and child MCP servers die with their parent, whether it exits or is killed.
//!
//! Every process a test starts carries a unique `TACKLE_TEST_TAG` in its environment, which
//! children inherit; counting is done by that tag in `/proc`, so parallel tests never count
//! each other's processes.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tempfile::TempDir;

const TAG_ENV: &str = "TACKLE_TEST_TAG";

/// The `tackle` binary under test.
fn tackle() -> &'static str {
    env!("CARGO_BIN_EXE_tackle")
}

/// A root with a private data directory and HOME, and a tag for its processes.
struct Sandbox {
    root: TempDir,
    data: TempDir,
    tag: String,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let tag = format!(
            "{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            tag,
        }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.root().join(name), text).unwrap();
    }

    /// `opencode.json` with one local MCP server `t` running `command`.
    fn opencode_mcp(&self, command: &[&str]) {
        let config = json!({ "mcp": { "t": { "type": "local", "command": command } } });
        self.write("opencode.json", &config.to_string());
        self.trust();
    }

    /// Trusts the project's configuration as it now is: its servers may start.
    fn trust(&self) {
        let status = self.command(&["trust"], None).output().unwrap().status;
        assert!(status.success());
    }

    /// `.tackle/config.json` with the given `mcp` table.
    fn tackle_mcp(&self, mcp: Value) {
        std::fs::create_dir_all(self.root().join(".tackle")).unwrap();
        std::fs::write(
            self.root().join(".tackle/config.json"),
            json!({ "mcp": mcp }).to_string(),
        )
        .unwrap();
        self.trust();
    }

    /// `tackle ARGS…` run in the root, tagged, with a private HOME and data directory.
    fn command(&self, args: &[&str], path: Option<&Path>) -> Command {
        let mut command = Command::new(tackle());
        command
            .args(args)
            .current_dir(self.root())
            .env(TAG_ENV, &self.tag)
            .env("HOME", self.data.path())
            .env("TACKLE_DATA_DIR", self.data.path())
            .env_remove("TACKLE_MODEL")
            .env_remove(tackle_mcp::DEPTH_ENV);
        if let Some(bin) = path {
            let system = std::env::var_os("PATH").unwrap_or_default();
            let mut dirs = vec![bin.to_path_buf()];
            dirs.extend(std::env::split_paths(&system));
            command.env("PATH", std::env::join_paths(dirs).unwrap());
        }
        command
    }

    /// Runs `tackle ARGS…` to the end, within 60 s.
    fn run(&self, args: &[&str], path: Option<&Path>) -> Output {
        let child = self
            .command(args, path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
        let deadline = Instant::now() + Duration::from_secs(60);
        while !waiter.is_finished() {
            assert!(Instant::now() < deadline, "tackle {args:?} ran for 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        waiter.join().unwrap()
    }

    /// Starts `tackle serve` in the root and initializes an MCP client with it.
    async fn serve(&self) -> (RunningService<RoleClient, ()>, u32) {
        let command = tokio::process::Command::from(self.command(&["serve"], None));
        let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
        let pid = transport.id().expect("a pid");
        let client = tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
            .await
            .expect("initialized in time")
            .expect("initialize");
        (client, pid)
    }

    /// The live processes that carry this sandbox's tag.
    fn processes(&self) -> Vec<Process> {
        tagged(&self.tag)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // Whatever happened, leave nothing running: a process mid-spawn may not show in one
        // pass, so stop only after three empty passes in a row.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut empty_passes = 0;
        loop {
            let left = tagged(&self.tag);
            empty_passes = if left.is_empty() { empty_passes + 1 } else { 0 };
            if empty_passes == 3 || Instant::now() > deadline {
                return;
            }
            for process in left {
                let _ = Command::new("kill")
                    .args(["-KILL", &process.pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A live process.
#[derive(Debug)]
struct Process {
    pid: u32,
    name: String,
}

/// Live (not zombie) processes whose environment holds `TACKLE_TEST_TAG=<tag>`.
fn tagged(tag: &str) -> Vec<Process> {
    let needle = format!("{TAG_ENV}={tag}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if !environ
            .windows(needle.len())
            .any(|window| window == needle.as_bytes())
        {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (name) S …`: the state follows the last `)`.
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        if state.is_some_and(|rest| rest.starts_with('Z')) {
            continue;
        }
        let name = std::fs::read_to_string(entry.path().join("comm"))
            .unwrap_or_default()
            .trim()
            .to_owned();
        found.push(Process { pid, name });
    }
    found
}

/// A directory holding `tackle`, a symlink to the binary under test.
fn bin_dir() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(tackle(), dir.path().join("tackle")).unwrap();
    dir
}

/// Runs `tackle call read` in `sandbox` and checks that it worked, that the self-referencing
/// server was skipped with a warning, and that no tagged process is left, now or a little later.
fn call_read_leaves_nothing(sandbox: &Sandbox, path: Option<&Path>) {
    sandbox.write("a.txt", "hello\n");
    let output = sandbox.run(&["call", "read", r#"{"filePath": "a.txt"}"#], path);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("hello"),
        "{output:?}"
    );
    assert!(
        stderr.contains("skipped MCP server `t`") && stderr.contains("this tackle"),
        "{stderr}"
    );
    assert_eq!(sandbox.processes().len(), 0, "{:?}", sandbox.processes());
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(sandbox.processes().len(), 0, "{:?}", sandbox.processes());
}

#[test]
fn an_opencode_config_naming_this_tackle_by_path_starts_no_tackle() {
    let sandbox = Sandbox::new("by-path");
    sandbox.opencode_mcp(&[tackle(), "--root", ".", "serve"]);
    call_read_leaves_nothing(&sandbox, None);
}

#[test]
fn an_opencode_config_naming_tackle_on_path_starts_no_tackle() {
    let sandbox = Sandbox::new("on-path");
    let bin = bin_dir();
    sandbox.opencode_mcp(&["tackle", "--root", ".", "serve"]);
    call_read_leaves_nothing(&sandbox, Some(bin.path()));
}

#[tokio::test]
async fn serve_with_an_opencode_config_naming_itself_runs_alone_and_leaves_nothing() {
    let sandbox = Sandbox::new("serve-self");
    sandbox.opencode_mcp(&[tackle(), "--root", ".", "serve"]);
    let (client, pid) = sandbox.serve().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|tool| tool.name == "read"));
    assert!(
        !tools.iter().any(|tool| tool.name.starts_with("t_")),
        "tackle's own tools came back through itself: {tools:?}"
    );
    std::thread::sleep(Duration::from_secs(1));
    let running = sandbox.processes();
    assert_eq!(
        running.iter().map(|p| p.pid).collect::<Vec<_>>(),
        vec![pid],
        "{running:?}"
    );
    client.cancel().await.expect("close the client");
    assert!(
        support::holds_within(Duration::from_secs(10), || sandbox.processes().is_empty()),
        "{:?}",
        sandbox.processes()
    );
}

#[test]
fn a_wrapped_self_reference_stops_at_one_nested_tackle() {
    let sandbox = Sandbox::new("wrapped");
    let bin = bin_dir();
    // A wrapper hides the program from the path check; the nesting marker stops it.
    sandbox.opencode_mcp(&["sh", "-c", "exec tackle --root . serve"]);
    sandbox.write("a.txt", "hello\n");
    let output = sandbox.run(
        &["call", "read", r#"{"filePath": "a.txt"}"#],
        Some(bin.path()),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // The nested tackle said why it started no server of its own.
    assert!(
        stderr.contains("not starting MCP server `t`") && stderr.contains("TACKLE_MCP_DEPTH=1"),
        "{stderr}"
    );
    assert!(
        support::holds_within(Duration::from_secs(5), || sandbox.processes().is_empty()),
        "{:?}",
        sandbox.processes()
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(sandbox.processes().len(), 0, "{:?}", sandbox.processes());
}

/// Starts `tackle serve` in `sandbox` with one configured server `far`: `sh -c` running
/// `template`, where `{tackle}` becomes a nested `tackle serve` of another root. Returns the
/// client, the server's pid and the other root's directories, once `far`'s tools are listed.
async fn serve_with_far(
    sandbox: &Sandbox,
    template: &str,
) -> (RunningService<RoleClient, ()>, u32, [TempDir; 2]) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let quoted = |path: &Path| format!("'{}'", path.display());
    let nested = format!(
        "{} --root {} --data-dir {} serve",
        quoted(Path::new(tackle())),
        quoted(dirs[0].path()),
        quoted(dirs[1].path())
    );
    let script = template.replace("{tackle}", &nested);
    sandbox.tackle_mcp(json!({ "far": { "command": "sh", "args": ["-c", script] } }));
    let (client, pid) = sandbox.serve().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(
        tools.iter().any(|tool| tool.name == "far_read"),
        "{tools:?}"
    );
    (client, pid, dirs)
}

#[tokio::test]
async fn a_server_killed_with_sigkill_leaves_no_child_server_behind() {
    let sandbox = Sandbox::new("sigkill");
    // A child server that outlives its stdin: after the nested tackle exits, `sh` goes on.
    let (client, pid, _dirs) = serve_with_far(&sandbox, "{tackle}; exec sleep 600").await;
    assert!(sandbox.processes().len() >= 3, "{:?}", sandbox.processes());

    Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(
        support::holds_within(Duration::from_secs(10), || sandbox.processes().is_empty()),
        "left behind: {:?}",
        sandbox.processes()
    );
    drop(client);
}

#[tokio::test]
async fn a_server_that_exits_takes_its_child_servers_process_group_with_it() {
    let sandbox = Sandbox::new("group");
    // The wrapper leaves a background process in the child's group.
    let (client, _pid, _dirs) = serve_with_far(&sandbox, "sleep 600 & exec {tackle}").await;
    assert!(
        sandbox.processes().iter().any(|p| p.name == "sleep"),
        "{:?}",
        sandbox.processes()
    );
    client.cancel().await.expect("close the client");
    assert!(
        support::holds_within(Duration::from_secs(10), || sandbox.processes().is_empty()),
        "left behind: {:?}",
        sandbox.processes()
    );
}
