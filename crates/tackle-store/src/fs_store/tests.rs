//! Tests of the on-disk output store: naming, dedupe, atomicity, failures and the sweep.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tackle_core::OutputStore;

use super::*;

fn store() -> (tempfile::TempDir, FsOutputStore) {
    let temp = tempfile::tempdir().unwrap();
    let store = FsOutputStore::new(temp.path().join("tool-output")).unwrap();
    (temp, store)
}

/// Names of the entries in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn set_age(path: &Path, age: Duration) {
    let file = File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

const HOUR: Duration = Duration::from_secs(60 * 60);

#[tokio::test]
async fn retain_writes_the_bytes_under_their_blake3_hex() {
    let (_temp, store) = store();
    let bytes = Bytes::from_static(b"line 1\nline 2\n");
    let hex = blake3::hash(&bytes).to_hex().to_string();

    let reference = store.retain(bytes.clone()).await.unwrap();

    assert_eq!(reference.id, hex);
    assert_eq!(reference.bytes, bytes.len() as u64);
    assert_eq!(reference.path, store.directory().unwrap().join(&hex));
    assert_eq!(std::fs::read(&reference.path).unwrap(), bytes);
    assert_eq!(entries(store.directory().unwrap()), vec![hex]);
}

#[tokio::test]
async fn retaining_the_same_bytes_twice_keeps_one_file() {
    let (_temp, store) = store();
    let first = store.retain(Bytes::from_static(b"same")).await.unwrap();
    let second = store.retain(Bytes::from_static(b"same")).await.unwrap();

    assert_eq!(first, second);
    assert_eq!(entries(store.directory().unwrap()).len(), 1);
}

#[tokio::test]
async fn different_bytes_get_different_files() {
    let (_temp, store) = store();
    let a = store.retain(Bytes::from_static(b"a")).await.unwrap();
    let b = store.retain(Bytes::from_static(b"b")).await.unwrap();

    assert_ne!(a.id, b.id);
    assert_eq!(entries(store.directory().unwrap()), {
        let mut ids = vec![a.id, b.id];
        ids.sort();
        ids
    });
    assert_eq!(std::fs::read(&b.path).unwrap(), b"b");
}

#[tokio::test]
async fn empty_output_is_retained() {
    let (_temp, store) = store();
    let reference = store.retain(Bytes::new()).await.unwrap();
    assert_eq!(reference.bytes, 0);
    assert_eq!(std::fs::read(&reference.path).unwrap(), b"");
}

#[tokio::test]
async fn no_temporary_files_remain_after_retain() {
    let (_temp, store) = store();
    for i in 0..20u32 {
        store
            .retain(i.to_le_bytes().repeat(1000).into())
            .await
            .unwrap();
    }
    store
        .retain(0u32.to_le_bytes().repeat(1000).into())
        .await
        .unwrap();

    let names = entries(store.directory().unwrap());
    assert_eq!(names.len(), 20);
    assert!(
        names.iter().all(|n| is_hash_name(n)),
        "unexpected entries: {names:?}"
    );
}

#[tokio::test]
async fn concurrent_retains_of_the_same_output_agree() {
    let (_temp, store) = store();
    let bytes = Bytes::from(vec![7u8; 1 << 20]);
    let tasks: Vec<_> = (0..8)
        .map(|_| tokio::spawn(store.retain(bytes.clone())))
        .collect();
    for task in tasks {
        let reference = task.await.unwrap().unwrap();
        assert_eq!(std::fs::read(&reference.path).unwrap(), bytes);
    }
    assert_eq!(entries(store.directory().unwrap()).len(), 1);
}

#[tokio::test]
async fn a_file_of_the_wrong_size_under_a_hash_name_is_replaced() {
    let (_temp, store) = store();
    let bytes = Bytes::from_static(b"the real output");
    let hex = blake3::hash(&bytes).to_hex().to_string();
    let path = store.directory().unwrap().join(&hex);
    std::fs::write(&path, b"trunc").unwrap();

    store.retain(bytes.clone()).await.unwrap();

    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[tokio::test]
async fn retain_fails_with_the_directory_when_it_is_gone() {
    let (_temp, store) = store();
    let dir = store.directory().unwrap().to_path_buf();
    // Root ignores permission bits, so take the directory away instead.
    std::fs::remove_dir(&dir).unwrap();
    std::fs::write(&dir, b"not a directory").unwrap();

    let error = store
        .retain(Bytes::from_static(b"output"))
        .await
        .unwrap_err();

    let message = error.to_string();
    assert!(message.contains(&dir.display().to_string()), "{message}");
    assert!(message.contains("os error"), "{message}");
}

#[test]
fn new_fails_under_a_regular_file() {
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let dir = file.join("tool-output");

    let error = FsOutputStore::new(&dir).unwrap_err();

    assert!(error.0.contains(&dir.display().to_string()), "{}", error.0);
    assert!(error.0.contains("os error"), "{}", error.0);
}

#[test]
fn new_creates_missing_parents() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("a/b/c");
    let store = FsOutputStore::new(&dir).unwrap();
    assert!(dir.is_dir());
    assert_eq!(store.directory(), Some(dir.as_path()));
}

#[test]
fn default_dir_is_under_the_data_dir() {
    if let Some(dir) = FsOutputStore::default_dir() {
        assert!(dir.ends_with("tackle/tool-output"), "{}", dir.display());
        assert!(dir.starts_with(dirs::data_dir().unwrap()));
    }
}

#[tokio::test]
async fn sweep_deletes_old_outputs_keeps_young_ones_and_ignores_other_names() {
    let (_temp, store) = store();
    let dir = store.directory().unwrap().to_path_buf();
    let old = store.retain(Bytes::from_static(b"old")).await.unwrap();
    let young = store.retain(Bytes::from_static(b"young")).await.unwrap();
    set_age(&old.path, 2 * HOUR);

    let others: Vec<PathBuf> = [
        "notes.txt",
        &"A".repeat(64),
        &"a".repeat(63),
        "tackle-tmp-x",
    ]
    .iter()
    .map(|name| dir.join(name))
    .collect();
    for path in &others {
        std::fs::write(path, b"x").unwrap();
        set_age(path, 2 * HOUR);
    }
    let hex_dir = dir.join("b".repeat(64));
    std::fs::create_dir(&hex_dir).unwrap();

    let report = store.sweep(HOUR).unwrap();

    assert_eq!(
        report,
        SweepReport {
            deleted: 1,
            kept: 1,
            abandoned: 0,
        }
    );
    assert!(!old.path.exists());
    assert!(young.path.exists());
    assert!(others.iter().all(|p| p.exists()));
    assert!(hex_dir.is_dir());
}

/// A temporary file like the one a write that crashed before its rename leaves behind.
fn crashed_write(dir: &Path, bytes: &[u8]) -> PathBuf {
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .unwrap();
    temp.write_all(bytes).unwrap();
    temp.into_temp_path().keep().unwrap()
}

#[tokio::test]
async fn sweep_deletes_old_temporary_files_of_crashed_writes_only() {
    let (_temp, store) = store();
    let dir = store.directory().unwrap().to_path_buf();
    let output = store.retain(Bytes::from_static(b"kept")).await.unwrap();
    let abandoned = crashed_write(&dir, b"half an out");
    set_age(&abandoned, 2 * HOUR);
    // Young enough to be a write still in progress.
    let in_progress = crashed_write(&dir, b"still writ");
    set_age(&in_progress, HOUR / 2);
    let temp_dir = dir.join(format!("{TEMP_PREFIX}dir"));
    std::fs::create_dir(&temp_dir).unwrap();
    assert!(entries(&dir).iter().any(|n| n.starts_with(TEMP_PREFIX)));

    let report = store.sweep(HOUR).unwrap();

    assert_eq!(
        report,
        SweepReport {
            deleted: 0,
            kept: 1,
            abandoned: 1,
        }
    );
    assert!(!abandoned.exists());
    assert!(in_progress.exists());
    assert!(temp_dir.is_dir());
    assert!(output.path.exists());

    // Once old enough, the other one goes too; the retained output stays.
    set_age(&in_progress, 2 * HOUR);
    assert_eq!(store.sweep(HOUR).unwrap().abandoned, 1);
    assert!(!in_progress.exists());
    assert!(output.path.exists());
}

#[tokio::test]
async fn retaining_an_old_output_again_saves_it_from_the_sweep() {
    let (_temp, store) = store();
    let first = store.retain(Bytes::from_static(b"reused")).await.unwrap();
    set_age(&first.path, 2 * HOUR);
    let before = mtime(&first.path);

    let second = store.retain(Bytes::from_static(b"reused")).await.unwrap();

    assert_eq!(first, second);
    assert!(mtime(&second.path) > before + HOUR);
    assert_eq!(
        store.sweep(HOUR).unwrap(),
        SweepReport {
            deleted: 0,
            kept: 1,
            abandoned: 0,
        }
    );
    assert_eq!(std::fs::read(&second.path).unwrap(), b"reused");
}

#[test]
fn hash_names_are_exactly_64_lowercase_hex_digits() {
    assert!(is_hash_name(&"0123456789abcdef".repeat(4)));
    assert!(!is_hash_name(&"0123456789ABCDEF".repeat(4)));
    assert!(!is_hash_name(&"a".repeat(63)));
    assert!(!is_hash_name(&"a".repeat(65)));
    assert!(!is_hash_name(&"g".repeat(64)));
}
