//! Tests of the SQLite saved approvals: round trips, project isolation, duplicates, reopening,
//! and sharing a file with the journal.

use std::sync::Arc;

use tackle_core::{CallIdentity, Journal, OutcomeKind, PhaseTimings, SettlementRecord};
use tackle_permission::{
    Action, Approver, PermissionRequest, PermissionService, Reply, Rule, RuleSource, Ruleset,
};

use super::*;
use crate::OpenError;

fn store() -> (tempfile::TempDir, SqliteSavedApprovals) {
    let temp = tempfile::tempdir().unwrap();
    let store = SqliteSavedApprovals::open(temp.path().join("journal.sqlite3")).unwrap();
    (temp, store)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|&(permission, pattern)| (permission.to_owned(), pattern.to_owned()))
        .collect()
}

fn record(call: &str) -> SettlementRecord {
    SettlementRecord {
        identity: CallIdentity::new("s", "agent", "message", call),
        tool: "bash".to_owned(),
        registration: Some(1),
        outcome: OutcomeKind::Success,
        model_result: None,
        managed: Vec::new(),
        started_at_ms: 1,
        timings: PhaseTimings::default(),
        adjustments: Vec::new(),
    }
}

#[test]
fn save_and_load_round_trip_in_order() {
    let (_temp, store) = store();
    assert!(store.load("proj").unwrap().is_empty());
    let saved = [
        ("bash", "git status *"),
        ("edit", "src/**"),
        ("webfetch", "https://docs.rs/*"),
        ("bash", "écho 🦀 'quoted' \"x\""),
    ];
    for (permission, pattern) in saved {
        store.save("proj", permission, pattern).unwrap();
    }
    assert_eq!(store.load("proj").unwrap(), pairs(&saved));
}

#[test]
fn projects_are_isolated() {
    let (_temp, store) = store();
    store.save("a", "bash", "ls *").unwrap();
    store.save("b", "bash", "rm *").unwrap();
    store.save("a", "edit", "*").unwrap();
    assert_eq!(
        store.load("a").unwrap(),
        pairs(&[("bash", "ls *"), ("edit", "*")])
    );
    assert_eq!(store.load("b").unwrap(), pairs(&[("bash", "rm *")]));
    assert!(store.load("c").unwrap().is_empty());
}

#[test]
fn duplicates_are_ignored() {
    let (_temp, store) = store();
    for _ in 0..3 {
        store.save("proj", "bash", "ls *").unwrap();
    }
    store.save("proj", "edit", "ls *").unwrap();
    store.save("other", "bash", "ls *").unwrap();
    assert_eq!(
        store.load("proj").unwrap(),
        pairs(&[("bash", "ls *"), ("edit", "ls *")])
    );
}

#[test]
fn approvals_survive_reopen() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("nested/dir/journal.sqlite3");
    {
        let store = SqliteSavedApprovals::open(&path).unwrap();
        assert_eq!(store.path(), path);
        store.save("proj", "bash", "cargo *").unwrap();
    }
    let reopened = SqliteSavedApprovals::open(&path).unwrap();
    assert_eq!(
        reopened.load("proj").unwrap(),
        pairs(&[("bash", "cargo *")])
    );
    reopened.save("proj", "bash", "cargo *").unwrap();
    reopened.save("proj", "edit", "*").unwrap();
    assert_eq!(reopened.load("proj").unwrap().len(), 2);
}

#[test]
fn open_fails_with_the_path_on_a_bad_file() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("not-a-db");
    std::fs::write(&path, b"this is not a SQLite database, just some text").unwrap();
    let error = SqliteSavedApprovals::open(&path).unwrap_err();
    assert!(
        matches!(&error, OpenError::Database { action: "initialize", path: p, .. } if *p == path),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
}

#[tokio::test]
async fn coexists_with_the_journal_on_one_file() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");

    // Journal first, then approvals on its path.
    let journal = SqliteJournal::open(&path).unwrap();
    let approvals = SqliteSavedApprovals::open(journal.path()).unwrap();
    journal.record(record("c1")).await.unwrap();
    approvals.save("proj", "bash", "ls *").unwrap();
    journal.record(record("c2")).await.unwrap();
    approvals.save("proj", "edit", "*").unwrap();
    assert_eq!(journal.records().unwrap().len(), 2);
    assert_eq!(approvals.load("proj").unwrap().len(), 2);

    // Interleaved writes from both connections at once.
    let writes: Vec<_> = (0..200)
        .map(|i| journal.record(record(&i.to_string())))
        .collect();
    for i in 0..50 {
        approvals
            .save("proj", "bash", &format!("cmd{i} *"))
            .unwrap();
    }
    for write in writes {
        write.await.unwrap();
    }
    assert_eq!(journal.records().unwrap().len(), 202);
    assert_eq!(approvals.load("proj").unwrap().len(), 52);
    drop(journal);
    drop(approvals);

    // Approvals first on a fresh file, then the journal: both orders work, and reopen.
    let path = temp.path().join("second.sqlite3");
    let approvals = SqliteSavedApprovals::open(&path).unwrap();
    approvals.save("proj", "bash", "ls *").unwrap();
    let journal = SqliteJournal::open(&path).unwrap();
    journal.record(record("c")).await.unwrap();
    assert_eq!(journal.records().unwrap().len(), 1);
    assert_eq!(approvals.load("proj").unwrap(), pairs(&[("bash", "ls *")]));
}

struct Silent;

impl Approver for Silent {
    fn ask(&self, _request: &PermissionRequest) {}
}

#[tokio::test]
async fn drives_the_permission_service_across_restarts() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    let ruleset: Ruleset = [Rule::new(
        "*",
        "*",
        Action::Ask,
        RuleSource::Config {
            key: "permission".into(),
        },
    )]
    .into_iter()
    .collect();
    {
        let store = Arc::new(SqliteSavedApprovals::open(&path).unwrap());
        let service = Arc::new(PermissionService::new("proj", Arc::new(Silent), store).unwrap());
        let asking = tokio::spawn({
            let service = service.clone();
            let ruleset = ruleset.clone();
            async move {
                let request = PermissionRequest::new("s1", "bash", ["cargo test --all"])
                    .with_id("r1")
                    .with_always(["cargo test *"]);
                service.ask(request, &ruleset).await
            }
        });
        while service.pending().is_empty() {
            tokio::task::yield_now().await;
        }
        service.reply(&"r1".into(), Reply::Always).unwrap();
        asking.await.unwrap().unwrap();
    }
    let store = Arc::new(SqliteSavedApprovals::open(&path).unwrap());
    let service = PermissionService::new("proj", Arc::new(Silent), store).unwrap();
    let request = PermissionRequest::new("s2", "bash", ["cargo test -p x"]);
    service.ask(request, &ruleset).await.unwrap();
}
