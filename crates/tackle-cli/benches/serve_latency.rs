//! Round-trip latency of a small `read` call over `tackle serve`'s stdio, with in-process references.
//!
//! Run: `cargo bench -p tackle-cli --bench serve_latency`. It measures four targets in one run,
//! each reading the same 20-line file:
//!
//! - (a) the call settled in-process through the registry, with no MCP;
//! - (b) the call over MCP to an in-process `tackle_mcp` server on a tokio duplex pipe;
//! - (c) the call over MCP to a real `tackle serve` child process on stdio;
//! - (d) the reference: the Node `@modelcontextprotocol/server-filesystem`'s `read_text_file`
//!   on stdio, the same client (installed by `scripts/install-reference-server.sh`; the bench
//!   looks for it where that script puts it, or at `$TACKLE_REFERENCE_SERVER`, and skips the
//!   row with a note when it or `node` is missing).
//!
//! For each: the median and p90 of 200 sequential calls after 20 warm-up calls, then 50
//! concurrent calls (wall time for all, and the median per call). Machines are noisy, so read
//! the ratios of (c) to (a), (b) and (d), not the absolute figures: (c)/(d) is the server's
//! time per `read` round trip against the reference's, the client's own cost in both.
//!
//! The in-process host mirrors the CLI's: the same SQLite journal and session state, the file
//! output store, the `build` preset rules behind a permission gate, and an approver that allows
//! once (like `--yes`). It registers only the file tools; the lookup cost does not depend on it.
//! Everything in this process runs on one current-thread runtime, as `tackle serve` does.
//!
//! Row (c) runs this build's `tackle`, or the binary at `$TACKLE_BIN`: set it to compare two
//! builds in one session, as `TACKLE_BIN=<other> cargo bench … -- --bench`.
//!
//! Quick mode (a few calls each): `TACKLE_BENCH_QUICK=1`, `--test`, or no `--bench` argument
//! (so `cargo test --benches` stays fast).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tackle_builtins::{Gate, LocationFs, ToolEnv, file_tools};
use tackle_core::{CallIdentity, CancellationToken, Context, ToolDefinition};
use tackle_mcp::{Serving, TackleServer};
use tackle_permission::{
    Approver, PermissionRequest, PermissionService, PresetContext, Reply, Ruleset, preset,
    visible_filter,
};
use tackle_registry::{Location, Registration, SettlementConfig, ToolCall, ToolRegistry, Turn};
use tackle_store::{FsOutputStore, SqliteJournal, SqliteSavedApprovals, SqliteSessionState};
use tempfile::TempDir;

/// How many calls each phase makes.
#[derive(Clone, Copy)]
struct Plan {
    warmup: usize,
    sequential: usize,
    concurrent: usize,
}

const FULL: Plan = Plan {
    warmup: 20,
    sequential: 200,
    concurrent: 50,
};

const QUICK: Plan = Plan {
    warmup: 2,
    sequential: 5,
    concurrent: 5,
};

/// Lines in the file that is read.
const LINES: usize = 20;

fn quick() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::env::var("TACKLE_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
        || args.iter().any(|a| a == "--test")
        || !args.iter().any(|a| a == "--bench")
}

fn main() {
    let plan = if quick() { QUICK } else { FULL };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(plan));
}

async fn run(plan: Plan) {
    let root = tempfile::tempdir().expect("a root tempdir");
    let file = root.path().join("small.txt");
    let text: String = (1..=LINES)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    std::fs::write(&file, text).expect("write the file");
    let file = std::fs::canonicalize(&file).expect("canonical file path");
    let arguments = json!({ "filePath": file.to_string_lossy() });

    // (a) and (b) share one in-process host; (c) has its own data directory.
    let host_data = data_dir();
    let host = InProcess::open(root.path(), host_data.path());
    let settle = Arc::new(Target::Settle {
        turn: host.materialize(),
        next: AtomicU64::new(0),
    });
    let (duplex_client, serving) = host.serve_duplex().await;
    let duplex = Arc::new(Target::Mcp(duplex_client.peer().clone()));
    let child_data = data_dir();
    let child_client = spawn_serve(root.path(), child_data.path()).await;
    let child = Arc::new(Target::Mcp(child_client.peer().clone()));
    let reference_client = spawn_reference(root.path()).await;
    let reference = reference_client
        .as_ref()
        .map(|client| Arc::new(Target::Reference(client.peer().clone())));
    let reference_arguments = json!({ "path": file.to_string_lossy() });

    // Each target must read the file correctly before anything is timed.
    for target in [&settle, &duplex, &child] {
        let body = target.call(&arguments).await.1;
        assert!(
            body.contains("     1\tline 1 of the file"),
            "unexpected read output: {body}"
        );
    }
    if let Some(reference) = &reference {
        let body = reference.call(&reference_arguments).await.1;
        assert!(
            body.starts_with("line 1 of the file"),
            "unexpected reference output: {body}"
        );
    }

    let rows = [
        (
            "(a) in-process settle",
            measure(&settle, &arguments, plan).await,
        ),
        (
            "(b) in-process MCP, duplex",
            measure(&duplex, &arguments, plan).await,
        ),
        (
            "(c) tackle serve, stdio",
            measure(&child, &arguments, plan).await,
        ),
    ];
    let reference = match &reference {
        Some(reference) => Some(measure(reference, &reference_arguments, plan).await),
        None => None,
    };
    print_table(plan, &rows, reference.as_ref());

    duplex_client
        .cancel()
        .await
        .expect("close the duplex client");
    drop(serving);
    child_client.cancel().await.expect("close the child client");
    if let Some(client) = reference_client {
        client.cancel().await.expect("close the reference client");
    }
    drop(host);
}

/// The reference server's entry script: `$TACKLE_REFERENCE_SERVER`, or where
/// `scripts/install-reference-server.sh` installs it.
fn reference_entry() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TACKLE_REFERENCE_SERVER") {
        return Some(PathBuf::from(path));
    }
    let cache = match std::env::var_os("TACKLE_SERVER_CACHE") {
        Some(cache) => PathBuf::from(cache),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/tackle-ci/servers"),
    };
    let entry =
        cache.join("filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    entry.is_file().then_some(entry)
}

/// Spawns the Node reference server on `root` and initializes a client, or says why not.
async fn spawn_reference(root: &Path) -> Option<RunningService<RoleClient, ()>> {
    let Some(entry) = reference_entry() else {
        println!("(d) skipped: run scripts/install-reference-server.sh to compare with Node");
        return None;
    };
    let mut command = tokio::process::Command::new("node");
    command.arg(&entry).arg(root);
    let transport = match TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok((transport, _stderr)) => transport,
        Err(error) => {
            println!(
                "(d) skipped: cannot start node {}: {error}",
                entry.display()
            );
            return None;
        }
    };
    let client = ().serve(transport).await.expect("initialize the reference server");
    client.list_all_tools().await.expect("tools/list");
    Some(client)
}

/// A data directory with a private `tmp` inside, as the e2e tests use.
fn data_dir() -> TempDir {
    let dir = tempfile::tempdir().expect("a data tempdir");
    std::fs::create_dir(dir.path().join("tmp")).expect("create tmp");
    dir
}

/// Spawns `tackle serve --root <root> --data-dir <data> --yes` and initializes a client. The
/// binary is this build's, or `$TACKLE_BIN` (to time another build in row (c)).
async fn spawn_serve(root: &Path, data: &Path) -> RunningService<RoleClient, ()> {
    let binary = std::env::var_os("TACKLE_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_tackle")),
        PathBuf::from,
    );
    let mut command = tokio::process::Command::new(binary);
    command
        .arg("serve")
        .arg("--root")
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .arg("--yes")
        .env("TMPDIR", data.join("tmp"));
    let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
    let client = ().serve(transport).await.expect("initialize tackle serve");
    // A real client lists first; calls then settle against that listing.
    client.list_all_tools().await.expect("tools/list");
    client
}

/// What one measurement calls.
enum Target {
    /// Settles through the turn directly.
    Settle { turn: Turn, next: AtomicU64 },
    /// Calls `tools/call` of `read` over an MCP connection.
    Mcp(Peer<RoleClient>),
    /// Calls `tools/call` of the reference server's `read_text_file`.
    Reference(Peer<RoleClient>),
}

impl Target {
    /// One `read` call: its latency and its text. Panics on an error result.
    async fn call(&self, arguments: &Value) -> (Duration, String) {
        match self {
            Self::Settle { turn, next } => {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let identity =
                    CallIdentity::new("mcp", "build", format!("bench-{n}"), format!("bench-{n}"));
                let cx = Context::new(identity, CancellationToken::new());
                let started = Instant::now();
                let settlement = turn
                    .settle(cx, ToolCall::new("read", arguments.clone()))
                    .await;
                let elapsed = started.elapsed();
                let result = settlement
                    .model_result()
                    .unwrap_or_else(|| panic!("no model result: {settlement:?}"));
                assert!(!result.is_error, "read failed in-process: {result:?}");
                let text = result
                    .content
                    .iter()
                    .filter_map(|part| part.as_text())
                    .collect::<Vec<_>>()
                    .join("\n");
                (elapsed, text)
            }
            Self::Mcp(peer) | Self::Reference(peer) => {
                let Value::Object(object) = arguments.clone() else {
                    panic!("the arguments are not an object");
                };
                let tool = match self {
                    Self::Reference(_) => "read_text_file",
                    _ => "read",
                };
                let params = CallToolRequestParams::new(tool).with_arguments(object);
                let started = Instant::now();
                let response = peer
                    .call_tool_once(params)
                    .await
                    .expect("a tools/call result");
                let elapsed = started.elapsed();
                let CallToolResponse::Complete(result) = response else {
                    panic!("unexpected response: {response:?}");
                };
                assert_ne!(
                    result.is_error,
                    Some(true),
                    "read failed over MCP: {result:?}"
                );
                (elapsed, text_of(&result))
            }
        }
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The figures of one target.
struct Figures {
    seq_median: Duration,
    seq_p90: Duration,
    conc_wall: Duration,
    conc_median: Duration,
}

async fn measure(target: &Arc<Target>, arguments: &Value, plan: Plan) -> Figures {
    for _ in 0..plan.warmup {
        target.call(arguments).await;
    }
    let mut sequential = Vec::with_capacity(plan.sequential);
    for _ in 0..plan.sequential {
        sequential.push(target.call(arguments).await.0);
    }
    sequential.sort_unstable();

    // Each call is its own task, as the server spawns one per request. Each times itself from
    // its first poll.
    let started = Instant::now();
    let tasks = (0..plan.concurrent).map(|_| {
        let target = target.clone();
        let arguments = arguments.clone();
        tokio::spawn(async move { target.call(&arguments).await.0 })
    });
    let results = join_all(tasks).await;
    let conc_wall = started.elapsed();
    let mut concurrent: Vec<Duration> = results
        .into_iter()
        .map(|joined| joined.expect("a concurrent call"))
        .collect();
    concurrent.sort_unstable();

    Figures {
        seq_median: median(&sequential),
        seq_p90: percentile(&sequential, 90),
        conc_wall,
        conc_median: median(&concurrent),
    }
}

/// The median of sorted durations.
fn median(sorted: &[Duration]) -> Duration {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }
}

/// The nearest-rank percentile of sorted durations.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.1}x", a.as_secs_f64() / b.as_secs_f64())
}

fn print_table(plan: Plan, rows: &[(&str, Figures); 3], reference: Option<&Figures>) {
    println!(
        "serve_latency: `read` of a {LINES}-line file; {} sequential calls after {} warm-up, \
         then {} concurrent (times in µs)",
        plan.sequential, plan.warmup, plan.concurrent
    );
    println!(
        "{:<28} {:>11} {:>11} {:>11} {:>11}",
        "target", "seq median", "seq p90", "conc wall", "conc median"
    );
    let reference_row = reference.map(|f| ("(d) Node reference, stdio", f));
    for (name, f) in rows.iter().map(|(name, f)| (*name, f)).chain(reference_row) {
        println!(
            "{:<28} {:>11} {:>11} {:>11} {:>11}",
            name,
            micros(f.seq_median),
            micros(f.seq_p90),
            micros(f.conc_wall),
            micros(f.conc_median)
        );
    }
    let child = &rows[2].1;
    let versus_reference = reference.map(|f| ("(c)/(d)", f));
    let references = [("(c)/(a)", &rows[0].1), ("(c)/(b)", &rows[1].1)];
    for (label, reference) in references.into_iter().chain(versus_reference) {
        println!(
            "{:<28} {:>11} {:>11} {:>11} {:>11}",
            label,
            ratio(child.seq_median, reference.seq_median),
            ratio(child.seq_p90, reference.seq_p90),
            ratio(child.conc_wall, reference.conc_wall),
            ratio(child.conc_median, reference.conc_median)
        );
    }
}

/// The CLI's host, cut down: the built-in file tools in a Location with the real stores and
/// permission gate.
struct InProcess {
    location: Location,
    rules: Ruleset,
    _tools: Registration,
}

impl InProcess {
    fn open(root: &Path, data_dir: &Path) -> Self {
        let root = std::fs::canonicalize(root).expect("canonical root");
        let output_dir = data_dir.join("tool-output");
        let store = FsOutputStore::new(&output_dir).expect("the output store");
        let journal_path = data_dir.join("journal.sqlite3");
        let journal = SqliteJournal::open(&journal_path).expect("the journal");
        let approvals = SqliteSavedApprovals::open(&journal_path).expect("saved approvals");
        let session_state = SqliteSessionState::open(&journal_path).expect("session state");

        let context = PresetContext {
            managed_output_dir: Some(canonical(&output_dir)),
            temp_dir: Some(canonical(&std::env::temp_dir())),
            ..PresetContext::default()
        };
        let rules = preset("build", &context).expect("the build preset").rules;

        let approver = Arc::new(AllowOnce::default());
        let service = Arc::new(
            PermissionService::new(
                root.to_string_lossy(),
                approver.clone(),
                Arc::new(approvals),
            )
            .expect("the permission service"),
        );
        let _ = approver.service.set(Arc::downgrade(&service));

        let gate_rules = rules.clone();
        let env = ToolEnv::new(LocationFs::new(&root).expect("the Location fs"))
            .with_gate(Gate::new(service, move |_| gate_rules.clone()))
            .with_session_state(Arc::new(session_state));
        let location = Location::new(
            root,
            &ToolRegistry::new(),
            SettlementConfig::new(Arc::new(store), Arc::new(journal)),
        );
        let tools = location
            .register(file_tools(&env).into_iter().collect())
            .expect("register the file tools");
        Self {
            location,
            rules,
            _tools: tools,
        }
    }

    /// The turn the agent is offered, as the CLI materializes it.
    fn materialize(&self) -> Turn {
        let visible = visible_filter(self.rules.clone());
        self.location
            .materialize(move |name: &str, _: &ToolDefinition| visible(name))
    }

    /// Serves the host over a duplex pipe, as `tackle serve` does over stdio.
    async fn serve_duplex(&self) -> (RunningService<RoleClient, ()>, Serving) {
        let location = self.location.clone();
        let rules = self.rules.clone();
        let server = TackleServer::from_turns(move || {
            let visible = visible_filter(rules.clone());
            location.materialize(move |name: &str, _: &ToolDefinition| visible(name))
        });
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let server_task = tokio::spawn(tackle_mcp::serve(server_io, server));
        let client = ().serve(client_io).await.expect("initialize the duplex client");
        let serving = server_task
            .await
            .expect("the server task")
            .expect("the duplex server initializes");
        client.list_all_tools().await.expect("tools/list");
        (client, serving)
    }
}

/// Allows every question once, like `--yes`. It replies through the service it serves.
#[derive(Default)]
struct AllowOnce {
    service: OnceLock<Weak<PermissionService>>,
}

impl Approver for AllowOnce {
    fn ask(&self, request: &PermissionRequest) {
        if let Some(service) = self.service.get().and_then(Weak::upgrade) {
            service
                .reply(&request.id, Reply::Once)
                .expect("reply to a permission question");
        }
    }
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| PathBuf::from(path))
        .to_string_lossy()
        .into_owned()
}
