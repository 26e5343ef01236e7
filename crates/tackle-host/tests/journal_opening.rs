//! A journal opened ahead of the host (as `tackle call` does, on a thread, while it reads its
//! configuration) records the host's calls when it is the data directory's own, and is left
//! alone when it is another's.

use std::path::Path;

use serde_json::json;
use tackle_core::{CallIdentity, CancellationToken, Context, ToolCall};
use tackle_host::{Approvals, HostBuilder, JournalOpening, TurnSpec};
use tackle_store::SqliteJournal;

/// Settles one `read` through a host over `root` and `data`, built with `opening`.
async fn settle_one_read(root: &Path, data: &Path, opening: JournalOpening) {
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    let host = HostBuilder::new(root)
        .data_dir(data)
        .home(None)
        .approvals(Approvals::AllowOnce)
        .snapshots(false)
        .background_jobs(false)
        .search_index(false)
        .journal_opening(opening)
        .build()
        .unwrap();
    let turn = host.turn(&TurnSpec::default()).unwrap();
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    );
    let settlement = host
        .settle(
            &turn,
            cx,
            ToolCall::new("read", json!({"filePath": "a.txt"})),
        )
        .await;
    assert!(settlement.model_result().is_some_and(|r| !r.is_error));
}

/// The tools the journal of `data` recorded.
fn recorded_tools(data: &Path) -> Vec<String> {
    let journal = SqliteJournal::open(data.join("journal.sqlite3")).unwrap();
    journal
        .records()
        .unwrap()
        .into_iter()
        .map(|record| record.tool)
        .collect()
}

#[tokio::test]
async fn a_journal_opened_ahead_for_the_data_directory_records_the_calls() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    settle_one_read(root.path(), data.path(), JournalOpening::start(data.path())).await;
    assert_eq!(recorded_tools(data.path()), ["read"]);
}

#[tokio::test]
async fn a_journal_opened_ahead_for_another_directory_is_not_used() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    settle_one_read(
        root.path(),
        data.path(),
        JournalOpening::start(other.path()),
    )
    .await;
    assert_eq!(recorded_tools(data.path()), ["read"]);
    assert!(recorded_tools(other.path()).is_empty());
}

#[test]
fn a_journal_that_cannot_be_opened_ahead_fails_the_build_naming_its_file() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    // A directory where the journal's file should be: SQLite cannot open it.
    std::fs::create_dir(data.path().join("journal.sqlite3")).unwrap();
    let error = HostBuilder::new(root.path())
        .data_dir(data.path())
        .home(None)
        .snapshots(false)
        .background_jobs(false)
        .search_index(false)
        .journal_opening(JournalOpening::start(data.path()))
        .build()
        .err()
        .expect("the build must fail");
    let message = format!("{error:#}");
    assert!(message.contains("journal.sqlite3"), "{message}");
    assert!(message.contains("cannot open journal"), "{message}");
}
