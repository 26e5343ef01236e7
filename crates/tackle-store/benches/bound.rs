//! Benchmarks: bounding a 100 MiB output through the disk store, its peak extra memory, and
//! durable journal throughput.
//!
//! Run with `cargo bench -p tackle-store --bench bound`. The peak-memory figures are printed to
//! stderr before the timed groups.

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use peak_alloc::PeakAlloc;
use serde_json::Value;
use tackle_core::{
    CallIdentity, Content, Journal, ModelResult, OutcomeKind, OutputLimits, OutputStore,
    PhaseTimings, Recovery, SettlementRecord, ToolOutput, bound_output, bound_text,
};
use tackle_store::{Durability, FsOutputStore, SqliteJournal};

/// Counts current and peak heap bytes, across all threads.
#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

const MIB: usize = 1024 * 1024;
const INPUT_BYTES: usize = 100 * MIB;
/// Concurrent recording tasks in the journal benchmark.
const JOURNAL_TASKS: u64 = 64;

/// Exactly `INPUT_BYTES` of numbered lines, like a long build log.
fn numbered_lines() -> String {
    let mut text = String::with_capacity(INPUT_BYTES + 128);
    let mut line = 0u64;
    while text.len() < INPUT_BYTES {
        writeln!(
            text,
            "{line:>9} compiling crate number {line} of the workspace: ok"
        )
        .unwrap();
        line += 1;
    }
    text.truncate(INPUT_BYTES);
    text
}

fn output_of(text: String) -> ToolOutput {
    ToolOutput {
        content: vec![Content::text(text)],
        structured: Value::Null,
    }
}

/// `text` split at a line boundary into two parts, which bounding joins back together.
fn two_parts_of(mut text: String) -> ToolOutput {
    let middle = text[..text.len() / 2].rfind('\n').unwrap();
    let second = text.split_off(middle + 1);
    text.pop();
    ToolOutput {
        content: vec![Content::text(text), Content::text(second)],
        structured: Value::Null,
    }
}

/// A copy of `text` whose first line carries `n`, so its hash is new.
fn fresh_copy(text: &str, n: u64) -> String {
    let mut copy = text.to_owned();
    copy.replace_range(0..9, &format!("{n:>9}"));
    copy
}

fn recovery() -> Recovery {
    Recovery {
        read: Some("read".to_owned()),
        grep: Some("grep".to_owned()),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `work` and prints the peak heap bytes it allocated beyond what was live when it
/// started, as a multiple of the input size, and how long it took.
fn report_peak<T>(what: &str, work: impl FnOnce() -> T) -> T {
    let base = ALLOC.current_usage();
    ALLOC.reset_peak_usage();
    let start = Instant::now();
    let result = work();
    let elapsed = start.elapsed();
    let extra = ALLOC.peak_usage().saturating_sub(base);
    eprintln!(
        "peak extra memory, {what}: {:.1} MiB = {:.2}x the input (took {elapsed:.0?})",
        extra as f64 / MIB as f64,
        extra as f64 / INPUT_BYTES as f64,
    );
    result
}

/// Prints the peak extra memory of one `bound_output` call on the 100 MiB input, and of its
/// parts, so copies can be attributed.
fn peak_memory(_: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = FsOutputStore::new(dir.path()).unwrap();
    let limits = OutputLimits::default();
    let recovery = recovery();
    let text = numbered_lines();

    for what in [
        "bound_output, new output (hash + write)",
        "bound_output, retained before (hash)",
    ] {
        let input = output_of(fresh_copy(&text, 0));
        report_peak(what, || {
            rt.block_on(bound_output(input, &limits, &store, &recovery))
                .unwrap()
        });
    }
    let input = two_parts_of(fresh_copy(&text, 2));
    report_peak("bound_output, two text parts (join + hash + write)", || {
        rt.block_on(bound_output(input, &limits, &store, &recovery))
            .unwrap()
    });
    report_peak("bound_text alone, on borrowed text", || {
        bound_text(&text, &limits, |_| "[marker]".to_owned())
    });
    for what in [
        "FsOutputStore::retain alone, new output",
        "FsOutputStore::retain alone, retained before",
    ] {
        let bytes = Bytes::from(fresh_copy(&text, 1));
        report_peak(what, || rt.block_on(store.retain(bytes)).unwrap());
    }
}

fn bound_100mib(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let store = FsOutputStore::new(dir.path()).unwrap();
    let limits = OutputLimits::default();
    let recovery = recovery();
    let text = numbered_lines();
    let (store, limits, recovery, text) = (&store, &limits, &recovery, &text);

    let mut group = c.benchmark_group("bound/100MiB");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Bytes(INPUT_BYTES as u64));

    // The same output every time: after the first, only hashing and an mtime refresh.
    group.bench_function("dedupe", |b| {
        b.to_async(&rt).iter_batched(
            || output_of(text.clone()),
            |input| async move { bound_output(input, limits, store, recovery).await.unwrap() },
            BatchSize::PerIteration,
        );
    });

    // A new output every time: hashing plus writing 100 MiB. Old files are removed untimed.
    let next = AtomicU64::new(1);
    group.bench_function("fresh", |b| {
        b.to_async(&rt).iter_batched(
            || {
                store.sweep(Duration::ZERO).unwrap();
                output_of(fresh_copy(text, next.fetch_add(1, Ordering::Relaxed)))
            },
            |input| async move { bound_output(input, limits, store, recovery).await.unwrap() },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn settlement(task: u64, i: u64) -> SettlementRecord {
    SettlementRecord {
        identity: CallIdentity::new(
            "session-01",
            "build",
            format!("msg-{task}"),
            format!("call-{task}-{i}"),
        ),
        tool: "bash".to_owned(),
        registration: Some(7),
        outcome: OutcomeKind::Success,
        model_result: Some(ModelResult {
            is_error: false,
            content: vec![Content::text(format!("exit 0 after {i} ms"))],
            structured: None,
        }),
        managed: Vec::new(),
        started_at_ms: 1_750_000_000_000 + i,
        timings: PhaseTimings {
            execute: Duration::from_micros(1234),
            ..PhaseTimings::default()
        },
        adjustments: Vec::new(),
    }
}

/// Records `total` settlements from `JOURNAL_TASKS` concurrent tasks and returns the elapsed time.
async fn record_concurrently(journal: &Arc<SqliteJournal>, total: u64) -> Duration {
    let start = Instant::now();
    let tasks: Vec<_> = (0..JOURNAL_TASKS)
        .map(|task| {
            let journal = Arc::clone(journal);
            let share = total / JOURNAL_TASKS + u64::from(task < total % JOURNAL_TASKS);
            tokio::spawn(async move {
                for i in 0..share {
                    journal.record(settlement(task, i)).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    start.elapsed()
}

fn journal_record(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("journal/record");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        // One iteration is one durable record, so throughput reads as records per second.
        .throughput(Throughput::Elements(1));
    for (name, durability) in [("normal", Durability::Normal), ("full", Durability::Full)] {
        let dir = tempfile::tempdir().unwrap();
        let journal =
            Arc::new(SqliteJournal::open_with(dir.path().join("j.sqlite3"), durability).unwrap());
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let journal = Arc::clone(&journal);
                async move { black_box(record_concurrently(&journal, iters).await) }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, peak_memory, bound_100mib, journal_record);
criterion_main!(benches);
