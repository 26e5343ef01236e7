//! A refresh of the snapshot picture of a 50,000-file tree with 10 changed files, warm, against
//! `git add -A && git write-tree` on the same tree in the same run (median of 7 rounds each);
//! then the same refresh with the change watcher's help, as `serve` takes it.
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
    let quick = !std::env::args().any(|a| a == "--bench");
    let files = if quick { 2_000 } else { FILES };
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    for n in 0..files {
        let dir = root.join(format!("d{:03}", n % 500));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{n:05}.txt")), format!("file {n}\n")).unwrap();
    }
    let data = tempfile::tempdir().unwrap();
    let snapshots = Snapshots::open(&root, data.path()).unwrap();
    let started = Instant::now();
    snapshots.build();
    println!("first snapshot (cold): {:?}", started.elapsed());
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["write-tree"]);

    let rounds = if quick { 2 } else { ROUNDS };
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        touch(&root, round, 0);
        let started = Instant::now();
        let mark = snapshots.mark().unwrap();
        ours.push(started.elapsed());
        snapshots.release(mark);
        touch(&root, round, 1);
        let started = Instant::now();
        git(&root, &["add", "-A"]);
        git(&root, &["write-tree"]);
        theirs.push(started.elapsed());
    }
    let (ours, theirs) = (median(ours), median(theirs));
    println!(
        "{files} files, {CHANGED} changed: tackle refresh {ours:?}, git add -A && git write-tree \
         {theirs:?}, ratio {:.3}",
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}
