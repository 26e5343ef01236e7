//! A snapshot of a 50,000-file tree with 10 changed files, warm, against `git add -A && git
//! write-tree` on the same tree in the same run (median of 7 rounds each).
//!
//! `cargo bench -p tackle-store --bench snapshot`

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tackle_store::Snapshots;

const FILES: usize = 50_000;
const CHANGED: usize = 10;
const ROUNDS: usize = 7;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

fn touch(root: &Path, round: usize, offset: usize) {
    for i in 0..CHANGED {
        let n = (round * 7919 + i * 4999 + offset) % FILES;
        let path = root.join(format!("d{:03}/f{n:05}.txt", n % 500));
        std::fs::write(path, format!("round {round} change {i} offset {offset}\n")).unwrap();
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    for n in 0..FILES {
        let sub = root.join(format!("d{:03}", n % 500));
        if n < 500 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        std::fs::write(sub.join(format!("f{n:05}.txt")), format!("file {n}\n")).unwrap();
    }
    let data = tempfile::tempdir().unwrap();
    let snapshots = Snapshots::open(&root, data.path()).unwrap();
    git(&root, &["init", "-q"]);
    // Warm both: the first snapshot hashes everything, the first `git add` builds the index.
    let cold = Instant::now();
    snapshots.take().unwrap();
    let cold_snapshot = cold.elapsed();
    let cold = Instant::now();
    git(&root, &["add", "-A"]);
    git(&root, &["write-tree"]);
    let cold_git = cold.elapsed();
    // Files must be older than the racy window to be trusted, as git's index needs too.
    std::thread::sleep(Duration::from_millis(300));
    snapshots.take().unwrap();
    git(&root, &["add", "-A"]);

    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        touch(&root, round, 0);
        let started = Instant::now();
        snapshots.take().unwrap();
        ours.push(started.elapsed());
        touch(&root, round, 1);
        let started = Instant::now();
        git(&root, &["add", "-A"]);
        git(&root, &["write-tree"]);
        theirs.push(started.elapsed());
    }
    let (ours, theirs) = (median(ours), median(theirs));
    println!("{FILES} files, {CHANGED} changed per round, median of {ROUNDS}:");
    println!(
        "  tackle snapshot (warm):            {:>8.1} ms   (cold: {:.0} ms)",
        ours.as_secs_f64() * 1e3,
        cold_snapshot.as_secs_f64() * 1e3
    );
    println!(
        "  git add -A && git write-tree:      {:>8.1} ms   (cold: {:.0} ms)",
        theirs.as_secs_f64() * 1e3,
        cold_git.as_secs_f64() * 1e3
    );
    println!(
        "  ratio tackle / git:                {:>8.2}",
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}
