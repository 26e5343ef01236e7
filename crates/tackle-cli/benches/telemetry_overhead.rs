//! What telemetry costs a call: round trips of a small `read` over `tackle serve`'s stdio, with
//! telemetry off, with a collector that is down, and with one that takes everything.
//!
//! Run: `cargo bench -p tackle-cli --bench telemetry_overhead`. Three servers run at once and
//! are called in turn (off, dead, live, off, dead, live, …), so a slow spell of the machine
//! falls on all three alike:
//!
//! - off: no `OTEL_*` variable, so no telemetry is built;
//! - dead: `OTEL_EXPORTER_OTLP_ENDPOINT` names a loopback port nothing listens on;
//! - live: it names a receiver in this process that answers every export with 200.
//!
//! Both exporting servers export every 50 ms (`OTEL_BSP_SCHEDULE_DELAY`, and
//! `OTEL_METRIC_EXPORT_INTERVAL` for the metrics), so exports and their failures happen while
//! the calls run. It prints the median and p90 of each and the ratios against off; the journal
//! rows each server committed are checked against the calls it got.
//!
//! Quick mode (a few calls each): `TACKLE_BENCH_QUICK=1`, `--test`, or no `--bench` argument
//! (so `cargo test --benches` stays fast).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
use tempfile::TempDir;

fn quick() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::env::var("TACKLE_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
        || args.iter().any(|a| a == "--test")
        || !args.iter().any(|a| a == "--bench")
}

fn main() {
    let (warmup, calls) = if quick() { (2, 5) } else { (20, 300) };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run(warmup, calls));
}

/// A loopback receiver that answers every HTTP request with `200 {}`, on a thread of its own.
fn live_receiver() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    format!("http://{address}")
}

/// Answers each request on `stream` (kept alive) with `200 {}`.
fn answer(stream: std::net::TcpStream) {
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let reply =
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

struct Server {
    name: &'static str,
    data: TempDir,
    client: RunningService<RoleClient, ()>,
    times: Vec<Duration>,
}

async fn spawn(name: &'static str, root: &Path, endpoint: Option<String>) -> Server {
    let data = tempfile::tempdir().expect("data dir");
    std::fs::create_dir(data.path().join("tmp")).expect("tmp");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
    command
        .arg("--root")
        .arg(root)
        .arg("--data-dir")
        .arg(data.path())
        .arg("serve")
        .env("HOME", data.path())
        .env("TMPDIR", data.path().join("tmp"))
        .env_remove("TACKLE_MODEL");
    for (variable, _) in std::env::vars() {
        if variable.starts_with("OTEL_") {
            command.env_remove(variable);
        }
    }
    if let Some(endpoint) = endpoint {
        command
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
            .env("OTEL_BSP_SCHEDULE_DELAY", "50")
            .env("OTEL_METRIC_EXPORT_INTERVAL", "50");
    }
    let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
    let client = ().serve(transport).await.expect("initialize");
    Server {
        name,
        data,
        client,
        times: Vec::new(),
    }
}

async fn read(client: &RunningService<RoleClient, ()>, path: &str) -> Duration {
    let arguments = json!({ "filePath": path });
    let params = CallToolRequestParams::new("read")
        .with_arguments(arguments.as_object().expect("object").clone());
    let started = Instant::now();
    let result = client.call_tool(params).await.expect("tools/call");
    let took = started.elapsed();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    took
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

async fn run(warmup: usize, calls: usize) {
    let root = tempfile::tempdir().expect("root");
    let file = root.path().join("notes.txt");
    let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&file, text).expect("write");
    let path = file.to_string_lossy().into_owned();
    let dead = format!("http://127.0.0.1:{}", closed_port());
    let mut servers = vec![
        spawn("off", root.path(), None).await,
        spawn("dead collector", root.path(), Some(dead)).await,
        spawn("live collector", root.path(), Some(live_receiver())).await,
    ];
    for _ in 0..warmup {
        for server in &servers {
            read(&server.client, &path).await;
        }
    }
    for _ in 0..calls {
        for server in &mut servers {
            let took = read(&server.client, &path).await;
            server.times.push(took);
        }
    }
    let figures: Vec<(&str, Duration, Duration)> = servers
        .iter_mut()
        .map(|server| {
            server.times.sort();
            (
                server.name,
                percentile(&server.times, 50),
                percentile(&server.times, 90),
            )
        })
        .collect();
    let (_, off_median, off_p90) = figures[0];
    println!(
        "telemetry_overhead: `read` of a 20-line file over `tackle serve` stdio; {calls} calls \
         each after {warmup} warm-up, round robin"
    );
    println!(
        "{:<16} {:>12} {:>12} {:>14} {:>11}",
        "server", "median µs", "p90 µs", "median / off", "p90 / off"
    );
    for (name, median, p90) in &figures {
        println!(
            "{name:<16} {:>12.1} {:>12.1} {:>14.2} {:>11.2}",
            median.as_secs_f64() * 1e6,
            p90.as_secs_f64() * 1e6,
            median.as_secs_f64() / off_median.as_secs_f64(),
            p90.as_secs_f64() / off_p90.as_secs_f64(),
        );
    }
    // Every call journaled, whatever the collector did.
    for server in servers {
        let expected = (warmup + calls) as i64;
        let Server {
            data, client, name, ..
        } = server;
        client.cancel().await.expect("close");
        let journal = data.path().join("journal.sqlite3");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let rows: i64 = rusqlite::Connection::open(&journal)
                .and_then(|db| db.query_row("SELECT COUNT(*) FROM settlements", [], |r| r.get(0)))
                .unwrap_or(0);
            if rows == expected {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{name}: {rows} journal rows for {expected} calls"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    println!("journal: every call of every server committed");
}
