//! The bash tool's overhead and capture throughput.
//!
//! Run: `cargo bench -p tackle-builtins --bench bash -- --warm-up-time 1 --measurement-time 3`.
//! Compare `bash_tool/true` with `spawn/bash_true` (the same shell spawned bare; the tool picks
//! bash when it is installed), `spawn/sh_true` and `spawn/sh_true_piped` (with the tool's stdio)
//! in the same run: the target is a ratio of at most 1.5. Set `TACKLE_SHELL=/bin/sh` to compare
//! the tool with sh itself. `bash_tool/true_no_pdeathsig` shows the cost of the Linux
//! parent-death signal, which makes the spawn a `fork`. `bash_tool/1GiB` pipes 1 GiB of zeros through the tool's capture (memory, spool file
//! up to its 512 MiB cap, counting); the target is at least 500 MB/s.
//!
//! The sandbox's cost per call: `bash_tool/echo_unsandboxed`, `bash_tool/echo_sandboxed` (the
//! default policy: Landlock, seccomp and user/PID/mount namespaces) and
//! `bash_tool/echo_landlock_seccomp` (the same without namespaces; the network is on, so no
//! seccomp filter is installed) and `bash_tool/echo_landlock_seccomp_network_off` (with the
//! filter) run `echo hi` in the same run
//! (`cargo bench -p tackle-builtins --bench bash -- echo_`); the target is a ratio of at most
//! 1.2 for Landlock + seccomp over unsandboxed. `sandbox/prepare` is the part of that cost paid
//! in tackle before the spawn (kept per call context while its files stay the same). On a
//! noisy machine, compare the cases run in turn, one at a time, several rounds:
//! `BENCH=$(ls -t target/release/deps/bash-* | grep -v '\.d$' | head -1); for r in 1 2 3; do for
//! c in echo_unsandboxed echo_landlock_seccomp echo_sandboxed; do $BENCH --bench --exact
//! bash_tool/$c --warm-up-time 1 --measurement-time 3; done; done`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tackle_builtins::tools::bash::{BashOptions, tool_with_options};
use tackle_builtins::{LocationFs, ToolEnv, shell_tools};
use tackle_core::{
    AnyTool, CallIdentity, CancellationToken, Context, InvocationOutcome, ToolOutput,
};
use tackle_sandbox::{Policy, Request, Sandboxes, Support};

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

/// The bash tool in `dir` under `policy` (session temp directories under `temp_root`), or
/// without a sandbox.
fn sandboxed_bash_tool(
    dir: &std::path::Path,
    temp_root: &std::path::Path,
    policy: Option<Policy>,
) -> AnyTool {
    let env = ToolEnv::new(LocationFs::new(dir).expect("location"));
    let env = match policy {
        Some(policy) => env.with_sandboxes(Arc::new(Sandboxes::new(
            policy,
            HashMap::new(),
            temp_root.to_path_buf(),
        ))),
        None => env,
    };
    shell_tools(&env).remove(0).1
}

/// Runs the tool once and removes the spool file it left, if any.
async fn invoke(tool: &AnyTool, command: &str) {
    let output = completed(tool, command).await;
    if let Some(path) = output.structured["spoolPath"].as_str() {
        let _ = std::fs::remove_file(path);
    }
}

/// The tool's output for `command`, which must complete.
async fn completed(tool: &AnyTool, command: &str) -> ToolOutput {
    let args = serde_json::json!({ "command": command }).to_string();
    match tool.invoke(args.into(), context()).await.outcome {
        InvocationOutcome::Completed(output) => output,
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

    // One group, so the three run back to back in the same process.
    let temp_root = tempfile::tempdir().expect("tempdir");
    if !Support::get().filesystem() {
        eprintln!(
            "no sandbox here ({}): the sandboxed cases measure the unsandboxed fallback",
            Support::get().describe()
        );
    }
    // The namespaced case last: the kernel tears its namespaces down after the call, which
    // would slow a case measured after it.
    let cases = [
        ("echo_unsandboxed", None),
        (
            "echo_landlock_seccomp",
            Some(Policy {
                namespaces: false,
                ..Policy::default()
            }),
        ),
        (
            "echo_landlock_seccomp_network_off",
            Some(Policy {
                namespaces: false,
                network: tackle_sandbox::Network::Off,
                ..Policy::default()
            }),
        ),
        ("echo_sandboxed", Some(Policy::default())),
    ];
    let mut group = c.benchmark_group("bash_tool");
    for (name, policy) in cases {
        let contained = policy.as_ref().is_some_and(|p| p.namespaces);
        let sandboxed = policy.is_some() && Support::get().filesystem();
        let tool = sandboxed_bash_tool(dir.path(), temp_root.path(), policy);
        // Measure what the name says: the sandbox is applied, with namespaces or without.
        let output = runtime.block_on(completed(&tool, "echo \"mode=$TACKLE_SANDBOX pid=$$\""));
        let seen = output.structured["output"].as_str().unwrap_or_default();
        assert_eq!(
            seen.contains("mode=workspace-write"),
            sandboxed,
            "{name}: {seen}"
        );
        let in_namespace = contained && sandboxed && Support::get().user_namespaces;
        assert_eq!(
            seen.lines().any(|l| l.ends_with(" pid=2")),
            in_namespace,
            "{name}: {seen}"
        );
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| invoke(&tool, "echo hi"));
        });
    }
    group.finish();
    // Where the cost goes: resolving the policy for one call (the Landlock ruleset built, the
    // session's temp directory checked), which every sandboxed call pays before it spawns.
    let sandboxes = Sandboxes::new(Policy::default(), HashMap::new(), temp_root.path().into());
    c.bench_function("sandbox/prepare", |b| {
        b.iter(|| {
            sandboxes
                .prepare(&Request {
                    agent: "build",
                    session: "session-1",
                    root: dir.path(),
                    unsandboxed: false,
                })
                .expect("prepared")
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
