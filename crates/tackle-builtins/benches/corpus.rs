//! `glob` on a large real tree, in process, against the walk `rg --files -g GLOB` makes.
//!
//! Run: `cargo bench -p tackle-builtins --bench corpus`. The tree is `TACKLE_CORPUS`, by default
//! the toolchain's HTML docs (`rustc --print sysroot`/share/doc/rust/html, about 52,000 files);
//! the globs are `TACKLE_CORPUS_GLOBS` (space-separated, default `**/*.rs.html **/*.html
//! core/**/fn.*.html`). For each glob:
//!
//! - `glob/<glob>` settles a `glob` call through a registry turn, as a host does: the walk, a
//!   stat of every match, the newest 100 kept and the total counted;
//! - `rg_files/<glob>` is ripgrep's own walk for `rg --files --hidden --follow -g <glob>`: the
//!   `ignore` crate's parallel walker on as many threads, the glob as an override, every match
//!   counted and nothing printed.
//!
//! Compare the two in the same run; without the process start-up of `tackle call`, their ratio
//! is what the tool adds to the walk. Nothing runs when the tree is missing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde_json::json;

mod support;
use support::Host;

const GLOBS: &str = "**/*.rs.html **/*.html core/**/fn.*.html";

/// The tree to search: `TACKLE_CORPUS`, else the toolchain's HTML docs.
fn corpus() -> Option<PathBuf> {
    let path = match std::env::var_os("TACKLE_CORPUS") {
        Some(path) => PathBuf::from(path),
        None => {
            let sysroot = std::process::Command::new("rustc")
                .args(["--print", "sysroot"])
                .output()
                .ok()?;
            let sysroot = String::from_utf8(sysroot.stdout).ok()?;
            Path::new(sysroot.trim()).join("share/doc/rust/html")
        }
    };
    std::fs::canonicalize(path).ok().filter(|p| p.is_dir())
}

/// Files `rg --files --hidden --follow -g glob root` lists, walked as ripgrep walks them.
fn rg_files(root: &Path, glob: &str) -> usize {
    let mut overrides = OverrideBuilder::new(root);
    overrides.add(glob).expect("a valid glob");
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(true)
        .overrides(overrides.build().expect("valid overrides"))
        .threads(threads)
        .build_parallel();
    let count = AtomicUsize::new(0);
    walker.run(|| {
        let count = &count;
        Box::new(move |entry| {
            if entry.is_ok_and(|e| e.file_type().is_some_and(|t| t.is_file())) {
                count.fetch_add(1, Ordering::Relaxed);
            }
            WalkState::Continue
        })
    });
    count.into_inner()
}

fn benches(c: &mut Criterion) {
    let Some(root) = corpus() else {
        eprintln!("corpus: no tree to search (set TACKLE_CORPUS); nothing measured");
        return;
    };
    let globs = std::env::var("TACKLE_CORPUS_GLOBS").unwrap_or_else(|_| GLOBS.to_owned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let host = Host::open(&root);
    eprintln!("corpus: {}", root.display());

    let mut group = c.benchmark_group("corpus");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    for glob in globs.split_whitespace() {
        let args = json!({ "pattern": glob });
        let found = rg_files(&root, glob);
        let text = runtime.block_on(host.call("glob", &args));
        // Both walks find the same files: the total, or every line when 100 or fewer.
        let agrees = text.contains(&format!(" of {} files", tackle_core::thousands(found)))
            || text.lines().count() == found;
        assert!(agrees, "glob {glob}: rg finds {found}, tackle says {text}");
        eprintln!("corpus: {glob} matches {found} files");
        group.bench_with_input(BenchmarkId::new("glob", glob), &args, |b, args| {
            b.to_async(&runtime).iter(|| host.call("glob", args));
        });
        group.bench_with_input(BenchmarkId::new("rg_files", glob), glob, |b, glob| {
            b.iter(|| rg_files(&root, glob));
        });
    }
    group.finish();
}

criterion_group!(corpus_benches, benches);
criterion_main!(corpus_benches);
