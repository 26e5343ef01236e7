//! Any sequence of changes, each recorded between two snapshots, reverted all at once, leaves the
//! tree byte for byte (and mode for mode, link for link) as it was; reverting one change whose
//! files later changes touched reports conflicts instead of overwriting them.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use proptest::prelude::*;
use tackle_store::Snapshots;
use tackle_store::snapshot::revert;

#[derive(Clone, Debug)]
enum Op {
    Write(usize, Vec<u8>),
    Chmod(usize, u32),
    Delete(usize),
    Link(usize, usize),
}

const NAMES: [&str; 5] = ["a.txt", "b.bin", "dir/c.txt", "dir/deep/d", "e"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            0..NAMES.len(),
            proptest::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(i, b)| Op::Write(i, b)),
        (
            0..NAMES.len(),
            prop_oneof![Just(0o644u32), Just(0o755), Just(0o600)]
        )
            .prop_map(|(i, m)| Op::Chmod(i, m)),
        (0..NAMES.len()).prop_map(Op::Delete),
        (0..NAMES.len(), 0..NAMES.len()).prop_map(|(i, j)| Op::Link(i, j)),
    ]
}

fn apply(root: &Path, op: &Op) {
    let path = |i: usize| root.join(NAMES[i]);
    let clear = |p: &Path| {
        if std::fs::symlink_metadata(p).is_ok() {
            std::fs::remove_file(p).unwrap();
        }
    };
    match op {
        Op::Write(i, bytes) => {
            let p = path(*i);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            clear(&p);
            std::fs::write(&p, bytes).unwrap();
        }
        Op::Chmod(i, mode) => {
            let p = path(*i);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
            }
        }
        Op::Delete(i) => clear(&path(*i)),
        Op::Link(i, j) => {
            let p = path(*i);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            clear(&p);
            std::os::unix::fs::symlink(NAMES[*j], &p).unwrap();
        }
    }
}

/// Files (not directories) with their bytes or link target, and mode.
fn tree(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    for name in NAMES {
        let p = root.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&p) {
            let value = if meta.file_type().is_symlink() {
                (
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                    0,
                )
            } else {
                (
                    std::fs::read(&p).unwrap(),
                    meta.permissions().mode() & 0o7777,
                )
            };
            out.insert(name.to_owned(), value);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if std::env::var_os("TACKLE_DEEP").is_some() { 512 } else { 32 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn reverting_every_recorded_change_restores_the_tree(
        start in proptest::collection::vec(op(), 0..6),
        calls in proptest::collection::vec(proptest::collection::vec(op(), 1..4), 1..6),
    ) {
        let root = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let root_path = std::fs::canonicalize(root.path()).unwrap();
        for op in &start {
            apply(&root_path, op);
        }
        let initial = tree(&root_path);
        let snapshots = Snapshots::open(&root_path, data.path()).unwrap();
        for (n, ops) in calls.iter().enumerate() {
            let before = snapshots.take().unwrap();
            for op in ops {
                apply(&root_path, op);
            }
            let after = snapshots.take().unwrap();
            if before != after {
                snapshots.record("s", "m", &format!("c{n}"), "bash", &before, &after).unwrap();
            }
        }
        let changes = snapshots.changes("s").unwrap();
        let plan = revert::plan(&snapshots, &changes).unwrap();
        prop_assert_eq!(plan.conflicts().count(), 0);
        revert::apply(&snapshots, &plan, false).unwrap();
        prop_assert_eq!(tree(&root_path), initial);
    }
}

#[test]
fn reverting_an_early_change_that_a_later_one_built_on_is_a_conflict() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("a.txt"), "1\n").unwrap();
    let snapshots = Snapshots::open(&root_path, data.path()).unwrap();
    for (call, text) in [("c1", "2\n"), ("c2", "3\n")] {
        let before = snapshots.take().unwrap();
        std::fs::write(root_path.join("a.txt"), text).unwrap();
        let after = snapshots.take().unwrap();
        snapshots
            .record("s", "m", call, "edit", &before, &after)
            .unwrap();
    }
    let first = snapshots.change_of_call("s", "c1").unwrap().unwrap();
    let plan = revert::plan(&snapshots, &[first]).unwrap();
    assert_eq!(plan.conflicts().count(), 1);
    assert!(revert::apply(&snapshots, &plan, false).unwrap().is_empty());
    assert_eq!(
        std::fs::read_to_string(root_path.join("a.txt")).unwrap(),
        "3\n"
    );
}

#[test]
fn a_rewrite_with_the_same_size_mtime_and_inode_is_still_seen() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    let file = root_path.join("a.txt");
    std::fs::write(&file, "aaaa").unwrap();
    let snapshots = Snapshots::open(&root_path, data.path()).unwrap();
    let first = snapshots.take().unwrap();
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    // Same size, same inode (written in place), same mtime (set back).
    std::fs::write(&file, "bbbb").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let second = snapshots.take().unwrap();
    assert_ne!(first, second, "the rewrite is in the second snapshot");
}

#[test]
fn the_sweep_keeps_what_current_files_and_recent_changes_need() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    let hash = |text: &str| blake3::hash(text.as_bytes()).to_hex().to_string();
    let object = |text: &str| {
        let h = hash(text);
        std::fs::read_dir(data.path())
            .unwrap()
            .map(|e| e.unwrap().path().join("objects").join(&h[..2]).join(&h))
            .find(|p| p.exists())
    };
    let age = |text: &str| {
        let path = object(text).expect("stored");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    std::fs::write(root_path.join("a.txt"), "first\n").unwrap();
    let snapshots = Snapshots::open(&root_path, data.path()).unwrap();
    let before = snapshots.take().unwrap();
    // Unchanged for a long time, then changed: its old content is what an undo needs.
    age("first\n");
    std::fs::write(root_path.join("a.txt"), "second\n").unwrap();
    let after = snapshots.take().unwrap();
    snapshots
        .record("s", "m", "c1", "bash", &before, &after)
        .unwrap();
    // Content no manifest of a recent change or current file refers to.
    std::fs::write(root_path.join("b.txt"), "transient\n").unwrap();
    snapshots.take().unwrap();
    std::fs::remove_file(root_path.join("b.txt")).unwrap();
    snapshots.take().unwrap();
    age("transient\n");

    let removed = snapshots
        .sweep(std::time::Duration::from_secs(3600))
        .unwrap();
    assert_eq!(removed, 1);
    assert!(
        object("transient\n").is_none(),
        "old and unreferenced: removed"
    );
    assert!(
        object("first\n").is_some(),
        "old but needed by a recent change: kept"
    );
    assert!(object("second\n").is_some(), "current: kept");
    let change = snapshots.change_of_call("s", "c1").unwrap().unwrap();
    let plan = revert::plan(&snapshots, &[change]).unwrap();
    assert_eq!(plan.conflicts().count(), 0);
}

#[test]
fn a_data_directory_inside_the_location_is_not_snapshotted() {
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("a.txt"), "a\n").unwrap();
    let data = root_path.join(".tackle/data");
    let snapshots =
        Snapshots::open_excluding(&root_path, &data.join("snapshots"), Some(&data)).unwrap();
    let first = snapshots.take().unwrap();
    let manifest = snapshots.manifest(&first).unwrap();
    assert_eq!(manifest.files.keys().collect::<Vec<_>>(), ["a.txt"]);
    // Its own objects and index do not make the next snapshot differ.
    assert_eq!(snapshots.take().unwrap(), first);
}
