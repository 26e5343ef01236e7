//! The bash tool's overhead and capture throughput.
//!
//! Run: `cargo bench -p tackle-builtins --bench bash -- --warm-up-time 1 --measurement-time 3`.
//! Compare `bash_tool/true` with `spawn/bash_true` (the same shell spawned bare; the tool picks
//! bash when it is installed), `spawn/sh_true` and `spawn/sh_true_piped` (with the tool's stdio)
//! in the same run: the target is a ratio of at most 1.5. Set `TACKLE_SHELL=/bin/sh` to compare
//! the tool with sh itself. `bash_tool/true_no_pdeathsig` shows the cost of the Linux
//! parent-death signal, which makes the spawn a `fork`. `bash_tool/1GiB` pipes 1 GiB of zeros through the tool's capture (memory, spool file
//! up to its 512 MiB cap, counting); the target is at least 500 MB/s.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tackle_builtins::tools::bash::{BashOptions, tool_with_options};
use tackle_builtins::{LocationFs, ToolEnv, shell_tools};
use tackle_core::{AnyTool, CallIdentity, CancellationToken, Context, InvocationOutcome};

fn context() -> Context {
    Context::new(
        CallIdentity::new("session-1", "build", "message-1", "call-1"),
        CancellationToken::new(),
    )
}

fn bash_tool(dir: &std::path::Path) -> AnyTool {
    let env = ToolEnv::new(LocationFs::new(dir).expect("location"));
    shell_tools(&env).remove(0).1
}

/// Runs the tool once and removes the spool file it left, if any.
async fn invoke(tool: &AnyTool, command: &str) {
    let args = serde_json::json!({ "command": command }).to_string();
    match tool.invoke(args.into(), context()).await.outcome {
        InvocationOutcome::Completed(output) => {
            if let Some(path) = output.structured["spoolPath"].as_str() {
                let _ = std::fs::remove_file(path);
            }
        }
        other => panic!("unexpected outcome {other:?}"),
    }
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let tool = bash_tool(dir.path());

    c.bench_function("bash_tool/true", |b| {
        b.to_async(&runtime).iter(|| invoke(&tool, "true"));
    });
    let env = ToolEnv::new(LocationFs::new(dir.path()).expect("location"));
    let options = BashOptions {
        die_with_parent: false,
        ..BashOptions::default()
    };
    let plain = tool_with_options(&env, options);
    c.bench_function("bash_tool/true_no_pdeathsig", |b| {
        b.to_async(&runtime).iter(|| invoke(&plain, "true"));
    });
    for shell in ["sh", "bash"] {
        c.bench_function(&format!("spawn/{shell}_true"), |b| {
            b.to_async(&runtime).iter(|| async {
                tokio::process::Command::new(shell)
                    .arg("-c")
                    .arg("true")
                    .status()
                    .await
                    .expect("spawn")
            });
        });
    }

    // The tool pipes both streams and nulls stdin; this is the bare spawn with the same stdio.
    c.bench_function("spawn/sh_true_piped", |b| {
        b.to_async(&runtime).iter(|| async {
            tokio::process::Command::new("sh")
                .arg("-c")
                .arg("true")
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .expect("spawn")
        });
    });

    let mut group = c.benchmark_group("bash_tool");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(1 << 30));
    group.bench_function("1GiB", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let tool = tool.clone();
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    invoke(&tool, "head -c 1073741824 /dev/zero").await;
                }
                start.elapsed()
            }
        });
    });
    group.finish();
}

criterion_group!(bash, benches);
criterion_main!(bash);
