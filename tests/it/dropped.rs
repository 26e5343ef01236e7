//! Cancel safety: a settlement whose future is dropped after its tool started still leaves a
//! journal row, `interrupted`, with every output already retained.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tackle::{EchoInput, Harness, cx};
use tackle_core::{
    Bytes, Content, LimitsOverride, ManagedRef, OutcomeKind, OutputStore, RetentionError,
    SettlementRecord, Tool, ToolFailure,
};
use tackle_registry::{AllTools, Location, SettlementConfig, ToolCall, ToolSet};
use tackle_store::{MemoryJournal, MemoryOutputStore, SqliteJournal};
use tokio::sync::Notify;

/// Waits until `records` returns something, for at most five seconds.
fn first_record(records: impl Fn() -> Vec<SettlementRecord>) -> SettlementRecord {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(record) = records().into_iter().next() {
            return record;
        }
        assert!(Instant::now() < deadline, "no journal row was written");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[tokio::test]
async fn a_settlement_dropped_while_its_tool_runs_is_journaled_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(SqliteJournal::open(dir.path().join("journal.sqlite3")).unwrap());
    let h = Harness::new();
    let location = Location::new(
        "/ws",
        &h.process,
        SettlementConfig::new(h.store.clone(), journal.clone()),
    );
    let started = Arc::new(Notify::new());
    let signal = started.clone();
    let stuck = Tool::new("Never ends.", move |_: EchoInput, _cx| {
        let signal = signal.clone();
        async move {
            signal.notify_one();
            std::future::pending::<()>().await;
            Ok::<String, ToolFailure>(String::new())
        }
    });
    let registration = location
        .register(ToolSet::new().with("stuck", stuck))
        .unwrap();
    let turn = location.materialize(AllTools);
    let settling = tokio::spawn(async move {
        turn.settle(cx("c-drop"), ToolCall::new("stuck", r#"{"text":"x"}"#))
            .await
    });
    started.notified().await;
    settling.abort();
    assert!(settling.await.unwrap_err().is_cancelled());

    let record = first_record(|| journal.records().unwrap());
    assert_eq!(record.outcome, OutcomeKind::Interrupted);
    assert_eq!(record.identity, cx("c-drop").identity().clone());
    assert_eq!(record.tool, "stuck");
    assert_eq!(
        record.registration,
        registration.identity("stuck").map(|id| id.get())
    );
    assert_eq!(record.model_result, None);
    assert!(record.managed.is_empty());
}

/// A memory store whose retentions after the first `keep` never finish; it says when one
/// stalls.
struct StallingStore {
    inner: MemoryOutputStore,
    keep: usize,
    retained: AtomicUsize,
    stalled: Arc<Notify>,
}

impl OutputStore for StallingStore {
    fn retain(&self, bytes: Bytes) -> BoxFuture<'static, Result<ManagedRef, RetentionError>> {
        if self.retained.fetch_add(1, Ordering::SeqCst) < self.keep {
            return self.inner.retain(bytes);
        }
        let stalled = self.stalled.clone();
        Box::pin(async move {
            stalled.notify_one();
            std::future::pending().await
        })
    }

    fn directory(&self) -> Option<&std::path::Path> {
        None
    }
}

#[tokio::test]
async fn a_settlement_dropped_while_bounding_keeps_what_it_retained() {
    let h = Harness::new();
    let journal = Arc::new(MemoryJournal::new());
    let stalled = Arc::new(Notify::new());
    let store = Arc::new(StallingStore {
        inner: MemoryOutputStore::new(),
        keep: 1,
        retained: AtomicUsize::new(0),
        stalled: stalled.clone(),
    });
    let location = Location::new(
        "/ws",
        &h.process,
        SettlementConfig::new(store.clone(), journal.clone()),
    );
    // Too much text and too much JSON: the text is retained first, then the JSON stalls.
    let rows: Vec<String> = (0..2_000).map(|i| format!("row {i}")).collect();
    let text = rows.join("\n");
    let report = Tool::new("Reports.", move |_: EchoInput, _cx| {
        let rows = rows.clone();
        async move { Ok::<_, ToolFailure>(json!({ "rows": rows })) }
    })
    .with_projection(move |_: &EchoInput, encoded: &Value| {
        let lines: Vec<&str> = encoded["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        vec![Content::text(lines.join("\n"))]
    });
    let _registration = location
        .register(ToolSet::new().with("report", report))
        .unwrap();
    let turn = location.materialize(AllTools);
    let call = ToolCall::new("report", r#"{"text":"x"}"#).with_limits(LimitsOverride {
        max_bytes: Some(1_024),
        ..LimitsOverride::default()
    });
    let settling = tokio::spawn(async move { turn.settle(cx("c-bound"), call).await });
    stalled.notified().await;
    settling.abort();
    assert!(settling.await.unwrap_err().is_cancelled());

    let record = first_record(|| journal.records());
    assert_eq!(record.outcome, OutcomeKind::Interrupted);
    assert_eq!(record.identity, cx("c-bound").identity().clone());
    assert_eq!(record.model_result, None);
    assert_eq!(record.managed.len(), 1, "{:?}", record.managed);
    let kept = store.inner.get(&record.managed[0].id).unwrap();
    assert_eq!(&kept[..], text.as_bytes());
    assert_eq!(journal.records().len(), 1);
}
