//! Tests of the in-memory output store and journal, including their failing variants.

use bytes::Bytes;
use tackle_core::{CallIdentity, OutcomeKind, PhaseTimings};

use super::*;

fn record(session: &str, call: &str) -> SettlementRecord {
    SettlementRecord {
        identity: CallIdentity::new(session, "agent", "message", call),
        tool: "bash".to_owned(),
        registration: None,
        outcome: OutcomeKind::Failure,
        model_result: None,
        managed: Vec::new(),
        started_at_ms: 0,
        timings: PhaseTimings::default(),
        adjustments: Vec::new(),
    }
}

#[tokio::test]
async fn memory_store_keeps_bytes_by_hash_and_dedupes() {
    let store = MemoryOutputStore::new();
    let handle = store.clone();

    let a = store.retain(Bytes::from_static(b"alpha")).await.unwrap();
    let again = store.retain(Bytes::from_static(b"alpha")).await.unwrap();
    let b = store.retain(Bytes::from_static(b"beta")).await.unwrap();

    assert_eq!(a.id, blake3::hash(b"alpha").to_hex().as_str());
    assert_eq!(a.path, PathBuf::from(format!("memory://{}", a.id)));
    assert_eq!(a.bytes, 5);
    assert_eq!(a, again);
    assert_ne!(a.id, b.id);
    assert_eq!(handle.len(), 2);
    assert_eq!(handle.get(&a.id).as_deref(), Some(&b"alpha"[..]));
    assert_eq!(handle.get("missing"), None);
    assert!(store.directory().is_none());
}

#[tokio::test]
async fn memory_store_shares_the_buffer_it_is_given() {
    let store = MemoryOutputStore::new();
    let bytes = Bytes::from(vec![3u8; 4096]);

    let reference = store.retain(bytes.clone()).await.unwrap();

    let kept = store.get(&reference.id).unwrap();
    assert_eq!(kept, bytes);
    assert_eq!(kept.as_ptr(), bytes.as_ptr());
}

#[tokio::test]
async fn failing_memory_store_keeps_nothing() {
    let store = MemoryOutputStore::failing("disk full");

    let error = store.retain(Bytes::from_static(b"x")).await.unwrap_err();

    assert_eq!(error, RetentionError("disk full".to_owned()));
    assert!(store.is_empty());
}

#[tokio::test]
async fn memory_journal_keeps_records_in_order() {
    let journal = MemoryJournal::new();
    let handle = journal.clone();
    journal.record(record("a", "1")).await.unwrap();
    journal.record(record("b", "2")).await.unwrap();
    journal.record(record("a", "3")).await.unwrap();

    assert_eq!(
        handle.records(),
        vec![record("a", "1"), record("b", "2"), record("a", "3")]
    );
    assert_eq!(
        handle.records_for_session(&SessionId::new("a")),
        vec![record("a", "1"), record("a", "3")]
    );
}

#[tokio::test]
async fn failing_memory_journal_keeps_nothing() {
    let journal = MemoryJournal::failing("journal offline");

    let error = journal.record(record("a", "1")).await.unwrap_err();

    assert_eq!(error, JournalError("journal offline".to_owned()));
    assert!(journal.records().is_empty());
}
