//! Real MCP hosts with `tackle serve` as their server: Claude Code and codex, each driven by a
//! scripted model on loopback. The model's `read` result is the text `tackle call read` prints,
//! an edit lands, a new host session cannot edit a file it has not read, no `tackle` process
//! outlives the host, and neither the host nor tackle's databases show a forced kill.
//!
//! The hosts come from `scripts/install-test-hosts.sh`, which the tests run on first use (and
//! `.ci/run` calls). When it cannot install them, these tests print a line naming the script and
//! pass; with `CI=true` they fail. Each host's
//! home, configuration and project live in temporary directories, and nothing leaves loopback.

#[path = "support/scripted_model.rs"]
mod scripted_model;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use scripted_model::{Api, ScriptedModel, ToolCall, ToolResult};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Marks the processes one test starts (the host and its MCP server), through their environment.
const MARK: &str = "TACKLE_TEST_REAL_HOSTS";

/// The MCP server's name in each host's configuration.
const SERVER: &str = "tackle";

/// The longest one host run may take.
const HOST_LIMIT: Duration = Duration::from_secs(120);

/// How long the host's processes may take to be gone once the host has exited.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// What the project file holds before the edit: a tab and quotes, which JSON would escape.
const ORIGINAL: &str = "hello\n\tworld \"quoted\"\n";

/// `program` from the install script (run on first use), or `None` (after saying so).
fn installed(program: &str) -> Option<PathBuf> {
    let dir = support::peers::locate(support::peers::Peer::Hosts, program)?;
    let path = dir.join(program);
    if path.exists() {
        return Some(path);
    }
    let message = format!("skipped: {program} not installed; run scripts/install-test-hosts.sh");
    assert!(std::env::var("CI").is_err(), "{message}");
    eprintln!("{message}");
    None
}

/// One test's directories (the host's home, the project, tackle's data directory) and the
/// project's file, holding [`ORIGINAL`].
struct Sandbox {
    // Under the target directory, not /tmp: codex declines to set itself up in a temp dir.
    base: TempDir,
    mark: String,
    file: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        for dir in ["home", "project", "data", "call-data", "tmp"] {
            std::fs::create_dir_all(base.path().join(dir)).unwrap();
        }
        let mark = base.path().display().to_string();
        let file = base.path().join("project/a.txt");
        std::fs::write(&file, ORIGINAL).unwrap();
        Self { base, mark, file }
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.base.path().join(name)
    }

    fn home(&self) -> PathBuf {
        self.dir("home")
    }

    fn project(&self) -> PathBuf {
        self.dir("project")
    }

    /// `tackle serve`'s argv after the program, as the hosts run it.
    fn serve_args(&self) -> Vec<String> {
        let [project, data, log] =
            [self.project(), self.dir("data"), self.serve_log()].map(|p| p.display().to_string());
        [
            "--root",
            &project,
            "--data-dir",
            &data,
            "--log-file",
            &log,
            "serve",
            "--yes",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Where every `tackle serve` of the test logs (appended).
    fn serve_log(&self) -> PathBuf {
        self.dir("serve.log")
    }

    /// What `tackle call read` prints for `path` (its own session and data directory).
    fn call_read(&self, path: &Path) -> String {
        let output = Command::new(env!("CARGO_BIN_EXE_tackle"))
            .arg("--root")
            .arg(self.project())
            .arg("--data-dir")
            .arg(self.dir("call-data"))
            .args(["call", "read", &json!({ "filePath": path }).to_string()])
            .env("HOME", self.home())
            .env_remove("TACKLE_MODEL")
            .env_remove(tackle_mcp::DEPTH_ENV)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// A host command with a clean environment: only `PATH`, the sandbox's home and XDG
    /// directories, and the mark.
    fn host_command(&self, program: &Path) -> Command {
        let home = self.home();
        let mut command = Command::new(program);
        command
            .current_dir(self.project())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env(MARK, &self.mark);
        command
    }

    /// The processes that carry this sandbox's mark and have not exited, with their command lines.
    fn marked_alive(&self) -> Vec<(u32, String)> {
        let mark = format!("{MARK}={}", self.mark);
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| alive(pid))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .unwrap_or_default()
                    .split(|&b| b == 0)
                    .any(|v| v == mark.as_bytes())
            })
            .map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                (pid, String::from_utf8_lossy(&cmdline).replace('\0', " "))
            })
            .collect()
    }

    /// Waits up to [`EXIT_GRACE`] for every marked process to be gone; returns the survivors.
    fn survivors(&self) -> Vec<(u32, String)> {
        let deadline = Instant::now() + EXIT_GRACE;
        loop {
            let alive = self.marked_alive();
            if alive.is_empty() || Instant::now() > deadline {
                return alive;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The `tackle serve` processes that logged their start but not their clean stop: each
    /// was killed before it finished shutting down (its last log line is written after its jobs
    /// are stopped and its databases closed).
    fn unfinished_servers(&self) -> Vec<String> {
        let log = std::fs::read_to_string(self.serve_log()).unwrap_or_default();
        let pid_of = |line: &str| line.rsplit("pid=").next().map(str::trim).map(str::to_owned);
        let stopped: Vec<String> = log
            .lines()
            .filter(|line| line.contains("tackle serve stopped"))
            .filter_map(pid_of)
            .collect();
        let started: Vec<String> = log
            .lines()
            .filter(|line| line.contains("tackle serve started"))
            .filter_map(pid_of)
            .collect();
        assert!(
            !started.is_empty(),
            "no tackle serve logged its start:\n{log}"
        );
        started
            .into_iter()
            .filter(|pid| !stopped.contains(pid))
            .collect()
    }
}

impl Drop for Sandbox {
    /// Kills whatever this test started and left running (on failure too).
    fn drop(&mut self) {
        for (pid, _) in self.marked_alive() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// True while `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

/// A finished host run.
struct HostRun {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Kills a process group when dropped: the host's, if a test fails while it runs.
struct GroupKill(u32);

impl Drop for GroupKill {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .stderr(Stdio::null())
            .status();
    }
}

/// Runs `command` in its own process group, bounded by [`HOST_LIMIT`]; its output goes to
/// files in `sandbox` named after `label`.
fn run_host(sandbox: &Sandbox, mut command: Command, label: &str) -> HostRun {
    use std::os::unix::process::CommandExt as _;
    let [stdout_path, stderr_path] =
        ["stdout", "stderr"].map(|stream| sandbox.dir(&format!("{label}.{stream}")));
    command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let started = Instant::now();
    let mut child = command.spawn().expect("start the host");
    let _group = GroupKill(child.id());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HOST_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{label} did not finish within {HOST_LIMIT:?}; stderr:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    HostRun {
        status,
        stdout: read(&stdout_path),
        stderr: read(&stderr_path),
        took,
    }
}

/// Asserts the host ran to the end.
fn assert_success(label: &str, run: &HostRun) {
    assert!(
        run.status.success(),
        "{label} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        run.status,
        run.stdout,
        run.stderr
    );
}

/// Asserts the host left nothing behind: no marked process, no database tackle did not close.
fn assert_nothing_left(sandbox: &Sandbox, label: &str) {
    let survivors = sandbox.survivors();
    assert!(
        survivors.is_empty(),
        "processes outlived {label} by {EXIT_GRACE:?}: {survivors:?}"
    );
    let unfinished = sandbox.unfinished_servers();
    assert!(
        unfinished.is_empty(),
        "tackle serve was killed before it finished stopping under {label} (pids {unfinished:?}):\n{}",
        std::fs::read_to_string(sandbox.serve_log()).unwrap_or_default()
    );
}

/// The scripts of the two runs: read then edit `file`; then, from a new host session, edit
/// it again without reading it.
fn scripts(file: &Path) -> [Vec<ToolCall>; 2] {
    let path = file.display().to_string();
    let first = vec![
        ToolCall {
            name: "read",
            args: json!({ "filePath": path }),
        },
        ToolCall {
            name: "edit",
            args: json!({ "filePath": path, "oldString": "hello", "newString": "bye" }),
        },
    ];
    let second = vec![ToolCall {
        name: "edit",
        args: json!({ "filePath": path, "oldString": "bye", "newString": "ciao" }),
    }];
    [first, second]
}

/// Checks the first run's results: `read` carries `printed` byte for byte as the block the
/// host adds after `framing` blocks of its own (which `own_block` recognises), and the edit
/// landed. Prints the sizes.
fn assert_read_then_edit(
    host: &str,
    results: &[ToolResult],
    printed: &str,
    own_block: impl Fn(&str) -> bool,
    file: &Path,
) {
    assert_eq!(results.len(), 2, "{host} answered both calls: {results:?}");
    let read = &results[0];
    let (tackle_text, framing) = read.texts.split_last().expect("a text block");
    assert_eq!(
        tackle_text, printed,
        "{host}'s model read:\n{tackle_text}\n`tackle call read` printed:\n{printed}"
    );
    assert!(
        framing.iter().all(|block| own_block(block)),
        "{host} added blocks of its own: {framing:?}"
    );
    assert_ne!(read.is_error, Some(true), "{read:?}");
    let received: usize = read.texts.iter().map(String::len).sum();
    eprintln!(
        "{host}: the model received {received} bytes for `read` ({} blocks); tackle's text is {} bytes",
        read.texts.len(),
        printed.len()
    );
    let edited = results[1].texts.last().map_or("", String::as_str);
    assert!(edited.starts_with("Edited a.txt"), "{host}: {results:?}");
    assert_eq!(
        std::fs::read_to_string(file).unwrap(),
        ORIGINAL.replacen("hello", "bye", 1),
        "{host}: the edit lands"
    );
}

/// Checks the second run's result: the new session's edit is refused and nothing changed.
fn assert_unread_edit_refused(host: &str, results: &[ToolResult], file: &Path) {
    assert_eq!(results.len(), 1, "{host}: {results:?}");
    let refused = results[0].texts.concat();
    assert!(
        refused.contains("You have not read a.txt in this session"),
        "{host}: {refused}"
    );
    assert!(refused.contains("Read it first"), "{host}: {refused}");
    assert_ne!(results[0].is_error, Some(false), "{:?}", results[0]);
    assert_eq!(
        std::fs::read_to_string(file).unwrap(),
        ORIGINAL.replacen("hello", "bye", 1),
        "{host}: the refused edit changed nothing"
    );
}

/// Lines of a host's log that speak of MCP and report trouble (a warning or error level, a
/// failure, a signal, a timeout); `expected` exempts the lines a test checks otherwise.
fn mcp_trouble(log: &str, expected: impl Fn(&str) -> bool) -> Vec<&str> {
    const TROUBLE: [&str; 6] = ["kill", "sigterm", "fail", "error", "warn", "timed out"];
    log.lines()
        .filter(|line| !expected(line))
        .filter(|line| {
            let lower = line.to_lowercase();
            lower.contains("mcp") && TROUBLE.iter().any(|word| lower.contains(word))
        })
        .collect()
}

#[test]
fn claude_code_reads_tackles_text_edits_refuses_an_unread_edit_and_never_kills_tackle() {
    let Some(claude) = installed("claude") else {
        return;
    };
    let started = Instant::now();
    let sandbox = Sandbox::new();
    let (file, printed) = (&sandbox.file, sandbox.call_read(&sandbox.file));

    let config = sandbox.dir("mcp.json");
    let servers = json!({ "mcpServers": { SERVER: {
        "type": "stdio",
        "command": env!("CARGO_BIN_EXE_tackle"),
        "args": sandbox.serve_args(),
        "env": { MARK: sandbox.mark, "HOME": sandbox.home() },
    } } });
    std::fs::write(&config, servers.to_string()).unwrap();

    for (run, script) in scripts(file).into_iter().enumerate() {
        let model = ScriptedModel::start(Api::Messages, SERVER, script);
        let label = format!("claude-{run}");
        let debug_log = sandbox.dir(&format!("{label}.debug.log"));
        let mut command = sandbox.host_command(&claude);
        command
            .args(["-p", "Use the tackle tools.", "--mcp-config"])
            .arg(&config)
            .args(["--strict-mcp-config", "--tools", ""])
            .args(["--allowedTools", &format!("mcp__{SERVER}")])
            .args(["--output-format", "json", "--debug-file"])
            .arg(&debug_log)
            .env("TMPDIR", sandbox.dir("tmp"))
            .env("ANTHROPIC_BASE_URL", model.base_url())
            .env("ANTHROPIC_API_KEY", "sk-ant-test-dummy")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        let outcome = run_host(&sandbox, command, &label);
        eprintln!("{label}: the host ran {} ms", outcome.took.as_millis());
        assert_success(&label, &outcome);

        let log = std::fs::read_to_string(&debug_log).expect("Claude Code's debug log");
        // The refused edit, which the second run expects, is logged as the tool's error.
        let trouble = mcp_trouble(&log, |line| {
            run == 1
                && [
                    "You have not read a.txt",
                    "outcome=error",
                    "McpToolCallError",
                ]
                .iter()
                .any(|refusal| line.contains(refusal))
        });
        assert!(trouble.is_empty(), "{label} logged: {trouble:#?}");
        assert!(
            log.contains(&format!(
                "MCP server \"{SERVER}\": MCP server process exited cleanly"
            )),
            "{label} saw tackle exit cleanly; it logged:\n{}",
            log.lines()
                .filter(|line| line.contains(&format!("MCP server \"{SERVER}\"")))
                .collect::<Vec<_>>()
                .join("\n")
        );

        let results = model.tool_results(Api::Messages);
        match run {
            0 => assert_read_then_edit("Claude Code", &results, &printed, |_| false, file),
            _ => assert_unread_edit_refused("Claude Code", &results, file),
        }
        assert_nothing_left(&sandbox, &label);
    }
    eprintln!("Claude Code test: {} ms", started.elapsed().as_millis());
}

#[test]
fn codex_reads_tackles_text_edits_refuses_an_unread_edit_and_never_kills_tackle() {
    let Some(codex) = installed("codex") else {
        return;
    };
    let started = Instant::now();
    let sandbox = Sandbox::new();
    let (file, printed) = (&sandbox.file, sandbox.call_read(&sandbox.file));
    let codex_home = sandbox.home().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();

    for (run, script) in scripts(file).into_iter().enumerate() {
        let model = ScriptedModel::start(Api::Responses, SERVER, script);
        std::fs::write(
            codex_home.join("config.toml"),
            codex_config(&sandbox, &model.base_url()),
        )
        .unwrap();
        let label = format!("codex-{run}");
        let mut command = sandbox.host_command(&codex);
        command
            .args(["exec", "--skip-git-repo-check", "Use the tackle tools."])
            .env("CODEX_HOME", &codex_home)
            .env("RUST_LOG", "warn");
        let outcome = run_host(&sandbox, command, &label);
        eprintln!("{label}: the host ran {} ms", outcome.took.as_millis());
        // A refused call (`mcp: tackle/edit (failed)`) is the tool's answer, checked below.
        let trouble = mcp_trouble(&outcome.stderr, |line| {
            line.starts_with(&format!("mcp: {SERVER}/"))
        });
        assert!(trouble.is_empty(), "{label} logged: {trouble:#?}");
        assert_success(&label, &outcome);

        let results = model.tool_results(Api::Responses);
        let wall_time =
            |block: &str| block.starts_with("Wall time: ") && block.ends_with("Output:");
        match run {
            0 => assert_read_then_edit("codex", &results, &printed, wall_time, file),
            _ => assert_unread_edit_refused("codex", &results, file),
        }
        assert_nothing_left(&sandbox, &label);
    }
    eprintln!("codex test: {} ms", started.elapsed().as_millis());
}

/// codex's configuration: the scripted model as a custom provider, tackle as its MCP server
/// (its tools approved: the scripted model runs without a person), and everything that would
/// reach the network off.
fn codex_config(sandbox: &Sandbox, base_url: &str) -> String {
    let tackle = toml_string(env!("CARGO_BIN_EXE_tackle"));
    let args = sandbox
        .serve_args()
        .iter()
        .map(|arg| toml_string(arg))
        .collect::<Vec<_>>()
        .join(", ");
    let (mark, home) = (
        toml_string(&sandbox.mark),
        toml_string(&sandbox.home().display().to_string()),
    );
    let url = toml_string(&format!("{base_url}/v1"));
    format!(
        r#"model = "scripted-model"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = {url}
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.{SERVER}]
command = {tackle}
args = [{args}]
env = {{ {MARK} = {mark}, HOME = {home} }}
default_tools_approval_mode = "approve"

[features]
plugins = false
remote_plugin = false
apps = false
shell_tool = false
unified_exec = false
goals = false
image_generation = false
tool_suggest = false
skill_search = false

[agents]
enabled = false

[analytics]
enabled = false
"#
    )
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}
