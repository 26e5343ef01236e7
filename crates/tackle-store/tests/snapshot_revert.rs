//! The snapshot store and revert, in process: any sequence of changes, each recorded between a
//! mark and a delta, reverted all at once, leaves the tree as it was (bytes, modes, links,
//! directories, empty ones included); a revert is all or nothing, rolls back when the tree moves
//! under it, and never writes through a symlink.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::Path;

use proptest::prelude::*;
use tackle_store::Snapshots;
use tackle_store::snapshot::revert::{self, ApplyError};
use tackle_store::snapshot::{Change, ChangeMeta};

/// Runs `change` between a mark and a delta and records it as call `call`.
fn recorded(snapshots: &Snapshots, call: &str, change: impl FnOnce()) -> Option<Change> {
    let mark = snapshots.mark().unwrap();
    change();
    let (now, delta) = snapshots.since(&mark).unwrap();
    snapshots.release(mark);
    snapshots.release(now);
    let meta = ChangeMeta {
        session: "s".into(),
        message: "m".into(),
        call: call.into(),
        tool: "bash".into(),
        overlap: Vec::new(),
    };
    (!delta.is_empty()).then(|| snapshots.record(&meta, &delta).unwrap())
}

fn open(root: &Path, data: &Path) -> Snapshots {
    let snapshots = Snapshots::open(root, data).unwrap();
    snapshots.build();
    snapshots
}

#[derive(Clone, Debug)]
enum Op {
    Write(usize, Vec<u8>),
    Chmod(usize, u32),
    Remove(usize),
    Link(usize, usize),
    Mkdir(usize),
}

const NAMES: [&str; 6] = ["a.txt", "b.bin", "dir/c.txt", "dir/deep/d", "e", "dir"];

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
        (0..NAMES.len()).prop_map(Op::Remove),
        (0..NAMES.len(), 0..NAMES.len()).prop_map(|(i, j)| Op::Link(i, j)),
        (0..NAMES.len()).prop_map(Op::Mkdir),
    ]
}

fn clear(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(p).unwrap(),
        Ok(_) => std::fs::remove_file(p).unwrap(),
        Err(_) => {}
    }
}

/// Makes `p`'s parent a directory (replacing whatever is on the way).
fn parents(root: &Path, p: &Path) {
    let mut dir = root.to_path_buf();
    for part in p.strip_prefix(root).unwrap().parent().unwrap().components() {
        dir.push(part);
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            clear(&dir);
            std::fs::create_dir(&dir).unwrap();
        }
    }
}

fn apply(root: &Path, op: &Op) {
    let path = |i: usize| root.join(NAMES[i]);
    match op {
        Op::Write(i, bytes) => {
            let p = path(*i);
            parents(root, &p);
            clear(&p);
            std::fs::write(&p, bytes).unwrap();
        }
        Op::Chmod(i, mode) => {
            let p = path(*i);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| !m.is_symlink()) {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode)).unwrap();
            }
        }
        Op::Remove(i) => clear(&path(*i)),
        Op::Link(i, j) => {
            let p = path(*i);
            parents(root, &p);
            clear(&p);
            std::os::unix::fs::symlink(NAMES[*j], &p).unwrap();
        }
        Op::Mkdir(i) => {
            let p = path(*i);
            parents(root, &p);
            clear(&p);
            std::fs::create_dir(&p).unwrap();
        }
    }
}

/// Every path under `root` but `skip`: kind, mode, bytes or link target.
fn tree(root: &Path) -> BTreeMap<Vec<u8>, (char, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let key = p
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            let value = if meta.is_symlink() {
                (
                    'l',
                    0,
                    std::fs::read_link(&p)
                        .unwrap()
                        .as_os_str()
                        .as_bytes()
                        .to_vec(),
                )
            } else if meta.is_dir() {
                stack.push(p);
                ('d', meta.mode() & 0o7777, Vec::new())
            } else {
                ('f', meta.mode() & 0o7777, std::fs::read(&p).unwrap())
            };
            out.insert(key, value);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if std::env::var_os("TACKLE_DEEP").is_some() { 1024 } else { 64 },
        ..ProptestConfig::default()
    })]

    // spec: LAW-UNDO
    /// In the store: revert everything and the tree is as it was; revert the revert
    /// and it is as after the changes.
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
        let snapshots = open(&root_path, data.path());
        for (n, ops) in calls.iter().enumerate() {
            recorded(&snapshots, &format!("c{n}"), || ops.iter().for_each(|op| apply(&root_path, op)));
        }
        let changed = tree(&root_path);
        let changes = snapshots.changes("s").unwrap();
        let plan = revert::plan(&snapshots, &changes).unwrap();
        prop_assert_eq!(plan.conflicts().count(), 0);
        prop_assert!(plan.can_apply(false));
        revert::apply(&snapshots, &plan, false).unwrap();
        prop_assert_eq!(tree(&root_path), initial);
        let undo = snapshots.record_undo("s", &plan.delta()).unwrap();
        let redo = revert::plan(&snapshots, &[undo]).unwrap();
        revert::apply(&snapshots, &redo, false).unwrap();
        prop_assert_eq!(tree(&root_path), changed);
    }
}

#[test]
fn reverting_an_early_change_that_a_later_one_built_on_is_a_conflict() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("a.txt"), "1\n").unwrap();
    let snapshots = open(&root_path, data.path());
    let first = recorded(&snapshots, "c1", || {
        std::fs::write(root_path.join("a.txt"), "2\n").unwrap()
    })
    .unwrap();
    recorded(&snapshots, "c2", || {
        std::fs::write(root_path.join("a.txt"), "3\n").unwrap()
    })
    .unwrap();
    let plan = revert::plan(&snapshots, &[first]).unwrap();
    assert_eq!(plan.conflicts().count(), 1);
    assert!(matches!(
        revert::apply(&snapshots, &plan, false),
        Err(ApplyError::Refused)
    ));
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
    // Old enough that its cache entry is trusted.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let snapshots = open(&root_path, data.path());
    let change = recorded(&snapshots, "c1", || {
        // Same size, same inode (written in place), same mtime (set back): only ctime moves.
        std::fs::write(&file, "bbbb").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(old)
            .unwrap();
    });
    let change = change.expect("the rewrite is seen");
    assert_eq!(change.files.len(), 1);
}

#[test]
fn a_revert_rolls_back_when_the_tree_moves_under_it() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("a.txt"), "a\n").unwrap();
    std::fs::write(root_path.join("z.txt"), "z\n").unwrap();
    std::fs::write(root_path.join("x"), "x\n").unwrap();
    let snapshots = open(&root_path, data.path());
    let change = recorded(&snapshots, "c1", || {
        std::fs::write(root_path.join("a.txt"), "A2\n").unwrap();
        std::fs::write(root_path.join("z.txt"), "Z2\n").unwrap();
        std::fs::remove_file(root_path.join("x")).unwrap();
        std::fs::create_dir(root_path.join("x")).unwrap();
        std::fs::write(root_path.join("x/y"), "in\n").unwrap();
    })
    .unwrap();
    let plan = revert::plan(&snapshots, &[change]).unwrap();
    assert!(plan.can_apply(false));
    // Between the plan and the apply, another process rewrites the last file the revert writes.
    std::fs::write(root_path.join("z.txt"), "someone else\n").unwrap();
    let moved = tree(&root_path);
    let error = revert::apply(&snapshots, &plan, false).unwrap_err();
    assert!(matches!(error, ApplyError::RolledBack { .. }), "{error}");
    assert_eq!(
        tree(&root_path),
        moved,
        "every step before the failure was put back"
    );
}

#[test]
fn a_revert_never_writes_through_a_directory_swapped_for_a_symlink() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::create_dir(root_path.join("d")).unwrap();
    std::fs::write(root_path.join("d/f"), "F\n").unwrap();
    std::fs::write(root_path.join("d/g"), "G\n").unwrap();
    let snapshots = open(&root_path, data.path());
    let edit = recorded(&snapshots, "c1", || {
        std::fs::write(root_path.join("d/g"), "G2\n").unwrap()
    })
    .unwrap();
    let removal = recorded(&snapshots, "c2", || {
        std::fs::remove_dir_all(root_path.join("d")).unwrap()
    })
    .unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), root_path.join("d")).unwrap();
    // The edit alone: `d` is not the revert's to replace, so `d/g` is blocked, even forced.
    let plan = revert::plan(&snapshots, &[edit]).unwrap();
    assert_eq!(plan.blocked().count(), 1, "{plan:?}");
    assert!(matches!(
        revert::apply(&snapshots, &plan, true),
        Err(ApplyError::Refused)
    ));
    // The removal: `d` is a conflict (a symlink now); forced, the link itself is replaced.
    let plan = revert::plan(&snapshots, &[removal]).unwrap();
    assert!(!plan.can_apply(false));
    revert::apply(&snapshots, &plan, true).unwrap();
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
    assert!(
        std::fs::symlink_metadata(root_path.join("d"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(std::fs::read(root_path.join("d/f")).unwrap(), b"F\n");
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
    let snapshots = open(&root_path, data.path());
    // Unchanged for a long time, then changed: its old content is what an undo needs.
    age("first\n");
    let change = recorded(&snapshots, "c1", || {
        std::fs::write(root_path.join("a.txt"), "second\n").unwrap()
    })
    .unwrap();
    // Content no recent change or current file refers to.
    std::fs::write(root_path.join("b.txt"), "transient\n").unwrap();
    snapshots.release(snapshots.mark().unwrap());
    std::fs::remove_file(root_path.join("b.txt")).unwrap();
    snapshots.release(snapshots.mark().unwrap());
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
    let plan = revert::plan(&snapshots, &[change]).unwrap();
    assert!(plan.can_apply(false));
}

#[test]
fn a_data_directory_inside_the_location_is_not_snapshotted() {
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("a.txt"), "a\n").unwrap();
    let data = root_path.join(".tackle/data");
    let snapshots =
        Snapshots::open_excluding(&root_path, &data.join("snapshots"), Some(&data)).unwrap();
    snapshots.build();
    // Its own objects, cache and log do not make a change.
    let change = recorded(&snapshots, "c1", || {
        std::fs::write(data.join("noise"), "n").unwrap();
    });
    assert!(change.is_none(), "{change:?}");
    let change = recorded(&snapshots, "c2", || {
        std::fs::write(root_path.join("a.txt"), "b\n").unwrap()
    })
    .unwrap();
    let paths: Vec<String> = change.files.iter().map(|f| f.path.display()).collect();
    assert_eq!(paths, ["a.txt"]);
}

#[test]
fn a_directory_swapped_for_a_link_is_never_listed_through_it() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::create_dir(root_path.join("d")).unwrap();
    std::fs::write(root_path.join("d/f"), "inside\n").unwrap();
    std::fs::write(outside.path().join("x"), "outside only\n").unwrap();
    let snapshots = open(&root_path, data.path());
    let change = recorded(&snapshots, "c1", || {
        // The file inside changes too, so the watcher names `d` as well as the root.
        std::fs::write(root_path.join("d/f"), "changed\n").unwrap();
        std::fs::remove_dir_all(root_path.join("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root_path.join("d")).unwrap();
    })
    .unwrap();
    let hash = blake3::hash(b"outside only\n").to_hex().to_string();
    let stored = std::fs::read_dir(data.path()).unwrap().any(|e| {
        e.unwrap()
            .path()
            .join("objects")
            .join(&hash[..2])
            .join(&hash)
            .exists()
    });
    assert!(
        !stored,
        "a file outside the Location was read through the link"
    );
    let paths: Vec<String> = change.files.iter().map(|f| f.path.display()).collect();
    assert_eq!(paths, ["d", "d/f"]);
}

#[test]
fn a_fifo_in_the_tree_is_opaque_never_opened_and_never_reverted() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("a.txt"), "a\n").unwrap();
    let snapshots = open(&root_path, data.path());
    // Opening a FIFO for reading would block until a writer came: the snapshot must not.
    let change = recorded(&snapshots, "c1", || {
        let made = std::process::Command::new("mkfifo")
            .arg(root_path.join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        std::fs::write(root_path.join("a.txt"), "b\n").unwrap();
    })
    .unwrap();
    let paths: Vec<String> = change.files.iter().map(|f| f.path.display()).collect();
    assert_eq!(paths, ["a.txt"]);
    assert_eq!(change.shadowed.len(), 1, "the FIFO is shadowed: {change:?}");
    let plan = revert::plan(&snapshots, &[change]).unwrap();
    revert::apply(&snapshots, &plan, false).unwrap();
    assert!(
        std::fs::symlink_metadata(root_path.join("pipe"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert_eq!(std::fs::read(root_path.join("a.txt")).unwrap(), b"a\n");
}
