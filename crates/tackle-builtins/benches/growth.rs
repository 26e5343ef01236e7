//! How the cost of `read`, `edit`, `grep` and `glob` grows with their input: 1×, 10× and 100×.
//!
//! Run: `cargo bench -p tackle-builtins --bench growth`, then `scripts/growth-table.sh` prints
//! the table (time per call and its ratio to the 1× case). Each call is settled through a
//! registry turn, as a host settles it: arguments decoded, the tool run with a real [`ToolEnv`],
//! the output bounded and recorded (in memory; the journal is discarded, since its cost does not
//! depend on the input).
//!
//! - `read/N`: the default read of an N-line file (200, 2,000, 20,000 lines of 60 bytes). Read
//!   shows at most 50 KiB, about 850 of these lines, so 10× and 100× show the same text:
//!   the growth is that of reading and hashing the whole file for the session's read ledger.
//! - `read_tail/N`: the last 50 lines of the same files (`offset` near the end): every line
//!   before it is counted.
//! - `edit/N`: one line in the middle of an N-line file replaced (and back by the next call), with
//!   the diff the permission question carries and the compare-and-swap write.
//! - `grep/N`: a regex in a tree of N files (500, 5,000, 50,000 files of 20 lines, 100 to a
//!   directory), one match in every tenth file: every file is searched, 100 lines are shown.
//! - `glob/N`: `**/*.rs` in the same trees (half the files match): every match is stat'ed for
//!   its modification time, the newest 100 are shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use tackle_core::thousands;

mod support;
use support::Host;

/// Lines in the 1× file of `read` and `edit`.
const LINES: usize = 200;
/// Files in the 1× tree of `grep` and `glob`.
const FILES: usize = 500;
/// The input scales measured.
const SCALES: [usize; 3] = [1, 10, 100];

/// A file of `lines` lines of 60 bytes; the middle one is `marker`.
fn write_lines(path: &Path, lines: usize, marker: &str) {
    let mut text = String::with_capacity(lines * 60);
    for i in 0..lines {
        if i == lines / 2 {
            text.push_str(marker);
        } else {
            text.push_str(&format!(
                "line {i:>8} of the file, some words to make it longer..."
            ));
        }
        text.push('\n');
    }
    std::fs::write(path, text).expect("write the file");
}

/// A tree of `files` files of 20 lines, 100 to a directory, alternately `.rs` and `.md`; every
/// tenth file has one line `fn target_N() {}`.
fn write_tree(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("d{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("create a directory");
        }
        let extension = if i % 2 == 0 { "rs" } else { "md" };
        let mut text = String::new();
        for line in 0..20 {
            if i % 10 == 0 && line == 10 {
                text.push_str(&format!("fn target_{i}() {{}}\n"));
            } else {
                text.push_str(&format!(
                    "// line {line} of file {i}, nothing to see here\n"
                ));
            }
        }
        std::fs::write(dir.join(format!("f{i:06}.{extension}")), text).expect("write a file");
    }
}

fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a tempdir");
    let path = std::fs::canonicalize(dir.path()).expect("a canonical tempdir");
    (dir, path)
}

fn file_benches(c: &mut Criterion, runtime: &tokio::runtime::Runtime) {
    let (_dir, root) = canonical_tempdir();
    let host = Host::open(&root);

    let mut group = c.benchmark_group("read");
    for scale in SCALES {
        let lines = LINES * scale;
        let path = root.join(format!("read-{lines}.txt"));
        write_lines(&path, lines, "the marker line");
        let whole = json!({ "filePath": path.to_string_lossy() });
        let text = runtime.block_on(host.call("read", &whole));
        assert!(text.contains("the marker line") || lines > 1000, "{text}");
        group.throughput(Throughput::Elements(lines as u64));
        group.bench_with_input(BenchmarkId::from_parameter(lines), &whole, |b, args| {
            b.to_async(runtime).iter(|| host.call("read", args));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("read_tail");
    for scale in SCALES {
        let lines = LINES * scale;
        let path = root.join(format!("read-{lines}.txt"));
        let tail = json!({ "filePath": path.to_string_lossy(), "offset": lines - 49 });
        let text = runtime.block_on(host.call("read", &tail));
        assert!(text.contains(&format!("{:>8}", lines - 1)), "{text}");
        group.throughput(Throughput::Elements(lines as u64));
        group.bench_with_input(BenchmarkId::from_parameter(lines), &tail, |b, args| {
            b.to_async(runtime).iter(|| host.call("read", args));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("edit");
    for scale in SCALES {
        let lines = LINES * scale;
        let path = root.join(format!("edit-{lines}.txt"));
        write_lines(&path, lines, "the marker line is alpha");
        let name = path.to_string_lossy().into_owned();
        runtime.block_on(host.call("read", &json!({ "filePath": name })));
        let there = json!({ "filePath": name, "oldString": "marker line is alpha",
            "newString": "marker line is beta" });
        let back = json!({ "filePath": name, "oldString": "marker line is beta",
            "newString": "marker line is alpha" });
        group.throughput(Throughput::Elements(lines as u64));
        // Each call edits the line one way, the next one back.
        let forth = std::cell::Cell::new(true);
        group.bench_function(BenchmarkId::from_parameter(lines), |b| {
            b.to_async(runtime).iter(|| {
                let args = if forth.replace(!forth.get()) {
                    &there
                } else {
                    &back
                };
                host.call("edit", args)
            });
        });
        if !forth.get() {
            runtime.block_on(host.call("edit", &back));
        }
        let text = std::fs::read_to_string(&path).expect("read the edited file");
        assert!(
            text.contains("the marker line is alpha\n"),
            "the edits did not land"
        );
    }
    group.finish();
}

fn search_benches(c: &mut Criterion, runtime: &tokio::runtime::Runtime) {
    let grep_args = json!({ "pattern": r"fn\s+target_\d+" });
    let glob_args = json!({ "pattern": "**/*.rs" });
    let trees: Vec<(usize, tempfile::TempDir, Host)> = SCALES
        .into_iter()
        .map(|scale| {
            let files = FILES * scale;
            let (dir, root) = canonical_tempdir();
            write_tree(&root, files);
            let host = Host::open(&root);
            // Each tool finds what the tree holds before it is timed.
            let text = runtime.block_on(host.call("grep", &grep_args));
            let expected = format!("Found {} matches", thousands(files / 10));
            assert!(text.starts_with(&expected), "grep/{files}: {text}");
            let text = runtime.block_on(host.call("glob", &glob_args));
            let expected = format!("of {} files", thousands(files / 2));
            assert!(text.contains(&expected), "glob/{files}: {text}");
            (files, dir, host)
        })
        .collect();

    for (tool, args) in [("grep", &grep_args), ("glob", &glob_args)] {
        let mut group = c.benchmark_group(tool);
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(5));
        for (files, _, host) in &trees {
            group.throughput(Throughput::Elements(*files as u64));
            group.bench_with_input(BenchmarkId::from_parameter(files), args, |b, args| {
                b.to_async(runtime).iter(|| host.call(tool, args));
            });
        }
        group.finish();
    }
}

fn benches(c: &mut Criterion) {
    // One worker thread, as `tackle serve` runs; grep and glob walk on their own threads.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    file_benches(c, &runtime);
    search_benches(c, &runtime);
}

criterion_group!(growth, benches);
criterion_main!(growth);
