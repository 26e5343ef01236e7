//! Tests of the SQLite journal: exact round trips, durability across reopen, and concurrency.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::*;
use tackle_core::Content;

fn record(session: &str, call: &str) -> SettlementRecord {
    SettlementRecord {
        identity: CallIdentity::new(session, "agent", "message", call),
        tool: "read".to_owned(),
        registration: Some(1),
        outcome: OutcomeKind::Success,
        model_result: Some(ModelResult {
            is_error: false,
            content: vec![Content::text("ok")],
            structured: None,
        }),
        managed: Vec::new(),
        started_at_ms: 1_700_000_000_000,
        timings: PhaseTimings::default(),
        adjustments: Vec::new(),
    }
}

/// A record with every field set to something unusual.
fn rich_record() -> SettlementRecord {
    SettlementRecord {
        identity: CallIdentity::new(
            "séance-🦀-\u{0}-\u{202e}",
            "agent/ünïcode \"quoted\"",
            "msg_01 日本語 'x'",
            "toolu_🔧\n\t ",
        ),
        tool: "grep_ß".to_owned(),
        registration: Some(i64::MAX as u64),
        outcome: OutcomeKind::RetentionFailed,
        model_result: Some(ModelResult {
            is_error: true,
            content: vec![
                Content::text("é\n\u{0}\u{202e} \"quoted\" 🦀"),
                Content::Media {
                    mime_type: "image/png".to_owned(),
                    data_base64: "iVBORw0KGgo=".to_owned(),
                    name: Some("shot ü.png".to_owned()),
                },
            ],
            structured: Some(serde_json::json!({
                "float": 0.1,
                "big": u64::MAX,
                "negative": i64::MIN,
                "nested": [null, true, {"": "empty key"}],
            })),
        }),
        managed: vec![
            ManagedRef {
                id: "ab".repeat(32),
                path: PathBuf::from("/data/tackle/tool-output/é"),
                bytes: u64::MAX,
            },
            ManagedRef {
                id: "cd".repeat(32),
                path: PathBuf::from("memory://x"),
                bytes: 0,
            },
        ],
        started_at_ms: i64::MAX as u64,
        timings: PhaseTimings {
            resolve: Duration::from_micros(1),
            decode: Duration::from_micros(22),
            execute: Duration::from_secs(3600),
            encode: Duration::ZERO,
            project: Duration::from_micros(4_000_001),
            bound: Duration::from_micros(u32::MAX as u64),
        },
        adjustments: vec![
            "renamed the argument `old_string` to `oldString` (ünï \"q\")".to_owned(),
        ],
    }
}

fn journal() -> (tempfile::TempDir, SqliteJournal) {
    let temp = tempfile::tempdir().unwrap();
    let journal = SqliteJournal::open(temp.path().join("journal.sqlite3")).unwrap();
    (temp, journal)
}

#[tokio::test]
async fn every_field_round_trips_exactly() {
    let (_temp, journal) = journal();
    let rich = rich_record();
    let mut sparse = record("s", "c");
    sparse.registration = None;
    sparse.model_result = None;

    journal.record(rich.clone()).await.unwrap();
    journal.record(sparse.clone()).await.unwrap();

    let records = journal.records().unwrap();
    assert_eq!(records, vec![rich.clone(), sparse]);
    let session = &records[0].identity.session;
    assert_eq!(
        session.as_str().as_bytes(),
        rich.identity.session.as_str().as_bytes()
    );
}

#[tokio::test]
async fn records_survive_drop_and_reopen() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("nested/dir/journal.sqlite3");
    let written = vec![
        rich_record(),
        record("🦀 session", "call ①"),
        record("🦀 session", "②"),
    ];
    {
        let journal = SqliteJournal::open(&path).unwrap();
        for r in &written {
            journal.record(r.clone()).await.unwrap();
        }
    }

    let reopened = SqliteJournal::open(&path).unwrap();
    assert_eq!(reopened.records().unwrap(), written);

    reopened.record(record("later", "c")).await.unwrap();
    assert_eq!(reopened.records().unwrap().len(), 4);
}

#[tokio::test]
async fn queued_records_are_committed_when_the_journal_is_dropped() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    let journal = SqliteJournal::open(&path).unwrap();
    // Never polled before the drop: `record` queues eagerly, and drop waits for the queue.
    let pending: Vec<_> = (0..2000)
        .map(|i| journal.record(record("s", &i.to_string())))
        .collect();
    drop(journal);

    // A plain reader, which unlike `open` never waits for another writer's lock.
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut select = conn
        .prepare("SELECT call FROM settlements ORDER BY id")
        .unwrap();
    let calls: Vec<String> = select
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(calls, (0..2000).map(|i| i.to_string()).collect::<Vec<_>>());
    for future in pending {
        future.await.unwrap();
    }
}

#[tokio::test]
async fn every_outcome_kind_round_trips() {
    let (_temp, journal) = journal();
    for kind in OutcomeKind::ALL {
        let mut r = record("s", kind.as_str());
        r.outcome = kind;
        journal.record(r).await.unwrap();
    }

    let outcomes: Vec<OutcomeKind> = journal
        .records()
        .unwrap()
        .iter()
        .map(|r| r.outcome)
        .collect();
    assert_eq!(outcomes, OutcomeKind::ALL);
}

#[tokio::test]
async fn outcomes_are_stored_as_their_stable_names() {
    let (temp, journal) = journal();
    let mut r = record("s", "c");
    r.outcome = OutcomeKind::InvalidOutput;
    journal.record(r).await.unwrap();

    let conn = Connection::open(temp.path().join("journal.sqlite3")).unwrap();
    let stored: String = conn
        .query_row("SELECT outcome FROM settlements", [], |row| row.get(0))
        .unwrap();
    assert_eq!(stored, "invalid_output");
}

#[tokio::test]
async fn the_model_result_is_stored_as_the_json_the_provider_was_sent() {
    let (temp, journal) = journal();
    let r = record("s", "c");
    let sent = serde_json::to_string(r.model_result.as_ref().unwrap()).unwrap();
    journal.record(r).await.unwrap();

    let conn = Connection::open(temp.path().join("journal.sqlite3")).unwrap();
    let stored: String = conn
        .query_row("SELECT model_result FROM settlements", [], |row| row.get(0))
        .unwrap();
    assert_eq!(stored, sent);
    assert_eq!(
        stored,
        r#"{"is_error":false,"content":[{"type":"text","text":"ok"}]}"#
    );
}

#[tokio::test]
async fn a_record_that_cannot_be_stored_is_refused_alone_and_its_batch_is_kept() {
    use std::os::unix::ffi::OsStrExt as _;
    let (_temp, journal) = journal();
    let mut unstorable = record("s", "non-utf8");
    // A data directory whose name is not UTF-8 puts such a path in a managed reference.
    unstorable.managed = vec![ManagedRef {
        id: "ab".repeat(32),
        path: PathBuf::from(std::ffi::OsStr::from_bytes(b"/data/\xff/out")),
        bytes: 1,
    }];

    // Queued together, so the writer would commit them in one transaction.
    let before = journal.record(record("s", "before"));
    let refused = journal.record(unstorable);
    let after = journal.record(record("s", "after"));
    let (before, refused, after) = futures_util::join!(before, refused, after);

    let error = refused.unwrap_err();
    assert!(error.0.contains("managed references"), "{}", error.0);
    before.unwrap();
    after.unwrap();
    let calls: Vec<String> = journal
        .records()
        .unwrap()
        .into_iter()
        .map(|r| r.identity.call.as_str().to_owned())
        .collect();
    assert_eq!(calls, ["before", "after"]);
}

#[tokio::test]
async fn a_stored_model_result_that_is_not_one_is_a_corrupt_row_naming_it() {
    let (temp, journal) = journal();
    journal.record(record("s", "c")).await.unwrap();
    let conn = Connection::open(temp.path().join("journal.sqlite3")).unwrap();
    conn.execute("UPDATE settlements SET model_result = '{\"ok\":true}'", [])
        .unwrap();

    let error = journal.records().unwrap_err();

    assert!(error.0.contains("row 1: model_result: "), "{}", error.0);
}

#[tokio::test]
async fn an_unknown_stored_outcome_is_a_corrupt_row_naming_it() {
    let (temp, journal) = journal();
    journal.record(record("s", "c")).await.unwrap();
    let conn = Connection::open(temp.path().join("journal.sqlite3")).unwrap();
    conn.execute("UPDATE settlements SET outcome = 'exploded'", [])
        .unwrap();

    let error = journal.records().unwrap_err();

    assert!(error.0.contains("corrupt row"), "{}", error.0);
    assert!(
        error
            .0
            .contains(r#"row 1: unknown outcome kind "exploded""#),
        "{}",
        error.0
    );
}

#[tokio::test]
async fn records_for_session_filters_exactly() {
    let (_temp, journal) = journal();
    for (session, call) in [("a", "1"), ("b", "2"), ("a", "3"), ("A", "4"), ("a ", "5")] {
        journal.record(record(session, call)).await.unwrap();
    }

    let calls: Vec<String> = journal
        .records_for_session(&SessionId::new("a"))
        .unwrap()
        .iter()
        .map(|r| r.identity.call.to_string())
        .collect();
    assert_eq!(calls, ["1", "3"]);
    assert!(
        journal
            .records_for_session(&SessionId::new("z"))
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_records_all_land_exactly_once() {
    let (_temp, journal) = journal();
    let journal = Arc::new(journal);
    let tasks: Vec<_> = (0..20)
        .map(|task| {
            let journal = Arc::clone(&journal);
            tokio::spawn(async move {
                for i in 0..10 {
                    journal
                        .record(record("s", &format!("{task}-{i}")))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }

    let calls: Vec<String> = journal
        .records()
        .unwrap()
        .iter()
        .map(|r| r.identity.call.to_string())
        .collect();
    assert_eq!(calls.len(), 200);
    let unique: HashSet<&String> = calls.iter().collect();
    assert_eq!(unique.len(), 200);
}

#[tokio::test]
async fn a_record_is_readable_as_soon_as_record_resolves() {
    let (_temp, journal) = journal();
    for i in 0..50 {
        journal.record(record("s", &i.to_string())).await.unwrap();
        assert_eq!(journal.records().unwrap().len(), i + 1);
    }
}

#[tokio::test]
async fn values_sqlite_cannot_hold_are_rejected_without_poisoning_the_batch() {
    let (_temp, journal) = journal();
    let mut too_big = record("s", "too big");
    too_big.registration = Some(u64::MAX);
    let mut too_late = record("s", "too late");
    too_late.started_at_ms = u64::MAX;

    let rejected = journal.record(too_big);
    let late = journal.record(too_late);
    let fine = journal.record(record("s", "fine"));

    assert!(rejected.await.unwrap_err().0.contains("registration"));
    assert!(late.await.unwrap_err().0.contains("started_at_ms"));
    fine.await.unwrap();
    assert_eq!(journal.records().unwrap().len(), 1);
}

#[tokio::test]
async fn timings_are_kept_in_whole_microseconds() {
    let (_temp, journal) = journal();
    let mut r = record("s", "c");
    r.timings.execute = Duration::from_nanos(1_999);
    r.timings.bound = Duration::MAX;
    journal.record(r).await.unwrap();

    let timings = journal.records().unwrap()[0].timings;
    assert_eq!(timings.execute, Duration::from_micros(1));
    assert_eq!(timings.bound, Duration::from_micros(i64::MAX as u64));
}

#[tokio::test]
async fn full_durability_opens_and_records() {
    let temp = tempfile::tempdir().unwrap();
    let journal =
        SqliteJournal::open_with(temp.path().join("j.sqlite3"), Durability::Full).unwrap();
    journal.record(rich_record()).await.unwrap();
    assert_eq!(journal.records().unwrap(), vec![rich_record()]);
}

#[test]
fn the_database_is_in_wal_mode() {
    let (temp, journal) = journal();
    let conn = Connection::open(temp.path().join("journal.sqlite3")).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(journal);
}

#[test]
fn open_fails_with_the_path_when_the_location_is_unusable() {
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let path = file.join("journal.sqlite3");

    let error = SqliteJournal::open(&path).unwrap_err();

    assert!(error.0.contains(&file.display().to_string()), "{}", error.0);
}

#[test]
fn open_refuses_a_newer_schema() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();

    let error = SqliteJournal::open(&path).unwrap_err();

    assert!(error.0.contains("schema version 99"), "{}", error.0);
}

#[test]
fn default_path_is_under_the_data_dir() {
    if let Some(path) = SqliteJournal::default_path() {
        assert!(
            path.ends_with("tackle/journal.sqlite3"),
            "{}",
            path.display()
        );
    }
}

#[tokio::test]
async fn a_failed_commit_reports_an_error_to_every_waiter() {
    let (temp, journal) = journal();
    journal.record(record("s", "before")).await.unwrap();
    let path = temp.path().join("journal.sqlite3");
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE settlements")
        .unwrap();

    let waiters: Vec<_> = (0..10)
        .map(|i| journal.record(record("s", &i.to_string())))
        .collect();

    for waiter in waiters {
        let error = waiter.await.unwrap_err();
        assert!(error.0.contains("no such table"), "{}", error.0);
        assert!(error.0.contains(&path.display().to_string()), "{}", error.0);
    }
}

#[tokio::test]
async fn a_sub_call_row_keeps_its_parents_ids_and_its_index() {
    let (temp, journal) = journal();
    let parent = record("s", "toolu_01");
    let mut sub = record("s", "toolu_01");
    sub.identity = parent.identity.sub_call(3);
    journal.record(parent.clone()).await.unwrap();
    journal.record(sub.clone()).await.unwrap();
    assert_eq!(journal.records().unwrap(), vec![parent, sub]);

    // Stored as such: the host's call ID, the index, and the parent's call ID for sub-calls only.
    let conn = Connection::open(temp.path().join("journal.sqlite3")).unwrap();
    let mut select = conn
        .prepare("SELECT call, call_index, parent_call FROM settlements ORDER BY id")
        .unwrap();
    let rows: Vec<(String, Option<i64>, Option<String>)> = select
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows,
        [
            ("toolu_01".to_owned(), None, None),
            ("toolu_01".to_owned(), Some(3), Some("toolu_01".to_owned())),
        ]
    );
}

/// The version 1 schema, as a journal written before sub-calls had columns of their own.
const SCHEMA_V1: &str = "
CREATE TABLE settlements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL, agent TEXT NOT NULL, assistant_message TEXT NOT NULL,
    call TEXT NOT NULL, tool TEXT NOT NULL, registration INTEGER, outcome TEXT NOT NULL,
    model_result TEXT, managed TEXT NOT NULL, started_at_ms INTEGER NOT NULL,
    resolve_us INTEGER NOT NULL, decode_us INTEGER NOT NULL, execute_us INTEGER NOT NULL,
    encode_us INTEGER NOT NULL, project_us INTEGER NOT NULL, bound_us INTEGER NOT NULL
) STRICT;
CREATE INDEX settlements_by_session ON settlements (session, id);
INSERT INTO settlements VALUES
    (NULL, 's', 'agent', 'message', 'old-call', 'read', 1, 'success', NULL, '[]',
     1700000000000, 0, 0, 0, 0, 0, 0);
PRAGMA user_version = 1;
";

#[tokio::test]
async fn a_version_1_journal_is_migrated_in_place() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    Connection::open(&path)
        .unwrap()
        .execute_batch(SCHEMA_V1)
        .unwrap();

    let journal = SqliteJournal::open(&path).unwrap();
    let mut old = record("s", "old-call");
    old.model_result = None;
    assert_eq!(journal.records().unwrap(), vec![old.clone()]);
    let mut sub = record("s", "new-call");
    sub.identity = sub.identity.sub_call(1);
    journal.record(sub.clone()).await.unwrap();
    drop(journal);

    // Opening again finds the current version and changes nothing.
    let journal = SqliteJournal::open(&path).unwrap();
    assert_eq!(journal.records().unwrap(), vec![old, sub]);
    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

#[tokio::test]
async fn host_adjustments_round_trip() {
    let temp = tempfile::tempdir().unwrap();
    let journal = SqliteJournal::open(temp.path().join("journal.sqlite3")).unwrap();
    let mut adjusted = record("s", "c");
    adjusted.adjustments = vec![
        "repaired the name `Read` to `read`".to_owned(),
        "renamed the argument `file_path` to `filePath`".to_owned(),
    ];
    journal.record(adjusted.clone()).await.unwrap();
    assert_eq!(journal.records().unwrap(), vec![adjusted]);
}
