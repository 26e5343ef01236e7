//! The per-call cost of snapshots through `tackle serve`, against `git add -A && git write-tree`
//! on the same tree in the same run.
//!
//! Run: `cargo bench -p tackle-cli --bench undo_overhead`. For trees of 2,000 and 50,000 files
//! it starts two `tackle serve` processes on stdio, one with snapshots on (the default) and one
//! with them off (`"snapshot": false` in the user's configuration), and times `bash` calls over
//! MCP: `echo hi` (changes nothing) and a one-file rewrite. The overhead is the difference of
//! the medians, on minus off; git's median on the same tree is the reference. It also times the
//! first call on a fresh data directory, while the first full snapshot is still being taken in
//! the background.
//!
//! Quick mode (2,000 files, a few rounds): `TACKLE_BENCH_QUICK=1`, `--test`, or no `--bench`
//! argument (so `cargo test --benches` stays fast).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

fn quick() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::env::var("TACKLE_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
        || args.iter().any(|a| a == "--test")
        || !args.iter().any(|a| a == "--bench")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

fn make_tree(root: &Path, files: usize) {
    for n in 0..files {
        let dir = root.join(format!("d{:03}", n % (files / 100).max(1)));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{n:05}.txt")), format!("file {n}\n")).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
}

async fn serve(root: &Path, data: &Path, home: &Path) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
    command
        .arg("serve")
        .arg("--root")
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .arg("--yes")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .stderr(std::process::Stdio::null());
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    client.list_all_tools().await.unwrap();
    client
}

async fn bash(client: &RunningService<RoleClient, ()>, command: &str) -> Duration {
    let serde_json::Value::Object(arguments) = json!({"command": command}) else {
        unreachable!()
    };
    let params = CallToolRequestParams::new("bash").with_arguments(arguments);
    let started = Instant::now();
    let response = client.call_tool_once(params).await.unwrap();
    let elapsed = started.elapsed();
    let CallToolResponse::Complete(result) = response else {
        panic!("{response:?}")
    };
    assert_eq!(result.is_error, Some(false), "{result:?}");
    elapsed
}

/// Waits until the first full snapshot of `data`'s Location is saved.
fn wait_for_first_snapshot(data: &Path) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let ready = std::fs::read_dir(data.join("snapshots"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|dir| dir.path().join("cache.bin").exists());
        if ready {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the first snapshot was not taken within 120 s");
}

async fn measure(files: usize, rounds: usize) {
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    make_tree(&root, files);
    let home_on = tempfile::tempdir().unwrap();
    let home_off = tempfile::tempdir().unwrap();
    let config = home_off.path().join(".config/tackle");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), r#"{"snapshot": false}"#).unwrap();
    let (data_on, data_off) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    // The first call, while the first snapshot is taken in the background.
    let on = serve(&root, data_on.path(), home_on.path()).await;
    let first = bash(&on, "echo first").await;
    wait_for_first_snapshot(data_on.path());
    let off = serve(&root, data_off.path(), home_off.path()).await;

    let git_dir = tempfile::tempdir().unwrap();
    let git_env = |args: &[&str]| {
        let mut full = vec![
            "--git-dir",
            git_dir.path().to_str().unwrap(),
            "--work-tree",
            ".",
        ];
        full.extend_from_slice(args);
        git(&root, &full);
    };
    git_env(&["init", "-q"]);
    git_env(&["add", "-A"]);
    git_env(&["write-tree"]);

    let (mut git_times, mut times) = (
        Vec::new(),
        [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]],
    );
    for _ in 0..3 {
        bash(&on, "echo warm").await;
        bash(&off, "echo warm").await;
    }
    for round in 0..rounds {
        for (side, client) in [&on, &off].into_iter().enumerate() {
            times[side][0].push(bash(client, "echo hi").await);
            let change = format!("echo round {round} side {side} > d000/f00000.txt");
            times[side][1].push(bash(client, &change).await);
        }
        std::fs::write(root.join("d001/f00001.txt"), format!("git round {round}\n")).unwrap();
        let started = Instant::now();
        git_env(&["add", "-A"]);
        git_env(&["write-tree"]);
        git_times.push(started.elapsed());
    }
    let git = median(git_times);
    println!(
        "{files} files: first call while the first snapshot is taken: {:.1} ms",
        ms(first)
    );
    println!(
        "{files} files: git add -A && git write-tree (warm): {:.1} ms",
        ms(git)
    );
    for (index, what) in ["bash echo hi", "bash rewriting one file"]
        .iter()
        .enumerate()
    {
        let on = median(times[0][index].clone());
        let off = median(times[1][index].clone());
        let overhead = on.saturating_sub(off);
        println!(
            "{files} files: {what}: snapshots on {:.1} ms, off {:.1} ms, overhead {:.1} ms = {:.2}x git",
            ms(on),
            ms(off),
            ms(overhead),
            overhead.as_secs_f64() / git.as_secs_f64()
        );
    }
    on.cancel().await.ok();
    off.cancel().await.ok();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        if quick() {
            measure(2_000, 3).await;
        } else {
            measure(2_000, 15).await;
            measure(50_000, 15).await;
        }
    });
}
