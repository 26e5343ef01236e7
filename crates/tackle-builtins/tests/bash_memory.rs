//! The bash tool's memory bound, alone in its own test binary: the check reads the peak resident
//! memory of the whole process, which tests running in parallel would inflate.

use std::path::Path;

use serde_json::{Value, json};
use tackle_builtins::tools::bash::{BashOptions, tool_with_options};
use tackle_builtins::{LocationFs, ToolEnv};
use tackle_core::{CallIdentity, CancellationToken, Context, InvocationOutcome};

/// Runs the tool: `Ok(structured output)` or `Err(failure text)`.
async fn call_with(dir: &Path, options: BashOptions, args: Value) -> Result<Value, String> {
    let env = ToolEnv::new(LocationFs::new(dir).unwrap());
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    );
    match tool_with_options(&env, options)
        .invoke(args.to_string().into(), cx)
        .await
        .outcome
    {
        InvocationOutcome::Completed(output) => Ok(output.structured),
        InvocationOutcome::Failed(failure) => Err(failure.to_string()),
        other => panic!("unexpected outcome {other:?}"),
    }
}

/// The model-facing text of a structured bash output.
fn text(out: &Value) -> String {
    out["output"].as_str().unwrap_or_default().to_owned()
}

/// Peak resident memory of this process, in kB.
fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn bash_gigabyte_of_output_stays_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let cap = 64 * 1024 * 1024;
    let opts = BashOptions {
        spool_cap: cap,
        spool_dir: dir.path().join("spool"),
        ..BashOptions::default()
    };
    let before = vm_hwm_kb();
    let out = call_with(
        dir.path(),
        opts.clone(),
        json!({"command": "yes | head -c 1000000000", "timeout": 120000}),
    )
    .await
    .unwrap();
    let growth_mb = (vm_hwm_kb() - before) / 1024;
    // VmHWM is the whole test process, so this bounds the capture from above.
    assert!(growth_mb < 64, "peak memory grew by {growth_mb} MB");
    assert_eq!(out["bytes"], 1_000_000_000u64);
    let tail = opts.memory_bytes as u64;
    assert_eq!(out["droppedBytes"], 1_000_000_000 - cap - tail);
    let text = text(&out);
    assert!(text.len() < 2 * 1024 * 1024, "{}", text.len());
    assert!(text.starts_with("y\ny\n"));
    assert!(
        text.contains("[... 499,442,945 of 500,000,000 lines (998,885,890 of 1,000,000,000 bytes) omitted, from line 32,769. The first 67,108,864 bytes are saved in "),
        "{}",
        &text[65536..66200]
    );
    assert!(
        text.contains(
            "Note: 931,842,560 of 1,000,000,000 bytes of output were dropped: only the first \
             67,108,864 bytes were saved and the last 1,048,576 bytes kept."
        ),
        "{}",
        &text[text.len() - 400..]
    );
    let spool = out["spoolPath"].as_str().unwrap();
    assert_eq!(std::fs::metadata(spool).unwrap().len(), cap);
}
