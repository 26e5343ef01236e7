//! Tests of the shared database: what opening writes, how long the log grows, and the writes
//! queued off the caller's path (read back before their commit, committed by a flush).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use futures_util::FutureExt;
use rusqlite::Connection;
use tackle_core::{CallIdentity, Journal, OutcomeKind, PhaseTimings, SessionState};

use crate::{Acknowledge, SqliteJournal, SqliteSessionState};

fn record(call: &str) -> tackle_core::SettlementRecord {
    tackle_core::SettlementRecord {
        identity: CallIdentity::new("s", "agent", "message", call),
        tool: "read".to_owned(),
        registration: Some(1),
        outcome: OutcomeKind::Success,
        model_result: Some(tackle_core::ModelResult {
            is_error: false,
            content: Vec::new(),
            structured: None,
        }),
        managed: Vec::new(),
        started_at_ms: 1,
        timings: PhaseTimings::default(),
        adjustments: Vec::new(),
    }
}

/// The bytes of the database and of its log.
fn files(path: &Path) -> (Vec<u8>, Vec<u8>) {
    let wal = path.with_extension("sqlite3-wal");
    (
        std::fs::read(path).unwrap(),
        std::fs::read(wal).unwrap_or_default(),
    )
}

#[tokio::test]
async fn opening_a_current_database_writes_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    let journal = SqliteJournal::open(&path).unwrap();
    journal.record(record("c")).await.unwrap();
    drop(journal);
    let before = files(&path);

    for _ in 0..3 {
        let journal = SqliteJournal::open(&path).unwrap();
        drop(SqliteSessionState::beside(&journal));
        drop(crate::SqliteSavedApprovals::beside(&journal));
        drop(journal);
    }

    assert!(before == files(&path), "reopening changed the files");
}

#[tokio::test]
async fn the_log_is_folded_back_long_before_a_new_process_would_replay_megabytes() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    let journal = SqliteJournal::open(&path).unwrap();
    // One commit each, as one `tackle call` per process makes.
    for i in 0..600 {
        journal.record(record(&i.to_string())).await.unwrap();
    }
    drop(journal);

    let wal = std::fs::metadata(path.with_extension("sqlite3-wal"))
        .unwrap()
        .len();
    // Frames of 4 KiB pages: a new process replays at most this much.
    let bound = 512 * 1024;
    assert!(wal <= bound, "the log holds {wal} bytes (bound {bound})");
    let journal = SqliteJournal::open(&path).unwrap();
    assert_eq!(journal.records().unwrap().len(), 600);
}

#[tokio::test]
async fn a_queued_row_resolves_at_once_and_is_read_back_after_its_commit() {
    let temp = tempfile::tempdir().unwrap();
    let journal = SqliteJournal::open(temp.path().join("journal.sqlite3"))
        .unwrap()
        .acknowledging(Acknowledge::Queued);
    {
        // The writer cannot commit while the connection is held.
        let _held = journal.database().connection();
        let recorded = journal.record(record("queued")).now_or_never();
        assert!(
            matches!(recorded, Some(Ok(()))),
            "resolved without the commit: {recorded:?}"
        );
    }
    let records = journal.records().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].identity.call.as_str(), "queued");
}

#[test]
fn a_session_state_put_is_read_back_before_its_commit() {
    let temp = tempfile::tempdir().unwrap();
    let journal = SqliteJournal::open(temp.path().join("journal.sqlite3")).unwrap();
    let state = std::sync::Arc::new(SqliteSessionState::beside(&journal));
    let held = journal.database().connection();
    let (done, finished) = mpsc::channel();
    {
        let state = state.clone();
        std::thread::spawn(move || {
            state.put("s", "read:/a", Some("h1")).unwrap();
            state.put("s", "read:/b", Some("h2")).unwrap();
            state.put("s", "read:/b", None).unwrap();
            let read = (
                state.get("s", "read:/a").unwrap(),
                state.get("s", "read:/b").unwrap(),
            );
            done.send(read).unwrap();
        });
    }
    let read = finished.recv_timeout(Duration::from_secs(5));
    drop(held);
    assert_eq!(read, Ok((Some("h1".to_owned()), None)));

    state.flush().unwrap();
    let reopened = SqliteSessionState::open(journal.path()).unwrap();
    assert_eq!(reopened.get("s", "read:/a").unwrap().as_deref(), Some("h1"));
    assert_eq!(reopened.get("s", "read:/b").unwrap(), None);
}

#[tokio::test]
async fn a_failed_commit_of_queued_rows_is_reported_by_the_next_flush() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    let journal = SqliteJournal::open(&path)
        .unwrap()
        .acknowledging(Acknowledge::Queued);
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE settlements")
        .unwrap();

    journal.record(record("lost")).await.unwrap();

    let error = journal.flush().unwrap_err();
    assert!(error.0.contains("no such table"), "{}", error.0);
    assert!(error.0.contains(&path.display().to_string()), "{}", error.0);
    // Reported once: nothing failed since.
    journal.flush().unwrap();
}

#[test]
fn reads_go_on_while_another_process_holds_the_write_lock() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    let journal = SqliteJournal::open(&path).unwrap();
    let state = std::sync::Arc::new(SqliteSessionState::beside(&journal));
    state.put("s", "old", Some("v0")).unwrap();
    state.flush().unwrap();
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();

    // The writer waits for the lock with this queued; reads must not wait with it.
    state.put("s", "new", Some("v1")).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let (done, finished) = mpsc::channel();
    {
        let state = state.clone();
        std::thread::spawn(move || done.send(state.get("s", "old").unwrap()).unwrap());
    }
    let read = finished.recv_timeout(Duration::from_secs(2));
    other.execute_batch("COMMIT").unwrap();
    assert_eq!(read, Ok(Some("v0".to_owned())));

    state.flush().unwrap();
    let reopened = SqliteSessionState::open(&path).unwrap();
    assert_eq!(reopened.get("s", "new").unwrap().as_deref(), Some("v1"));
}
