//! Tests of the batch tool: scheduling by concurrency class, refusals, limits, per-call results,
//! journal records and cancellation.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use tackle_core::schemars::JsonSchema;
use tackle_core::{
    CallIdentity, CancellationToken, Concurrency, Context, Defect, Interruption, OutcomeKind, Tool,
    ToolFailure,
};
use tackle_store::{MemoryJournal, MemoryOutputStore};

use super::{BatchOptions, BatchOutput, MAX_BATCH_CALLS, batch_tool};
use crate::{
    AllTools, Location, ModelErrorKind, Outcome, Registration, Settlement, SettlementConfig,
    ToolCall, ToolRegistry, ToolSet,
};

/// One run of a probe tool: its label and when it started and ended.
#[derive(Clone, Debug)]
struct Span {
    label: String,
    start: Instant,
    end: Instant,
}

impl Span {
    fn overlaps(&self, other: &Span) -> bool {
        self.start < other.end && other.start < self.end
    }
}

type Log = Arc<Mutex<Vec<Span>>>;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(crate = "tackle_core::schemars")]
struct ProbeInput {
    label: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    wait_ms: u64,
    #[serde(default)]
    fail: bool,
}

/// A tool that sleeps `wait_ms`, records when it ran, and answers with its label.
fn probe(log: &Log, concurrency: Concurrency) -> Tool<ProbeInput, String> {
    let log = log.clone();
    Tool::new("Probe.", move |input: ProbeInput, _cx: Context| {
        let log = log.clone();
        async move {
            let _ = &input.path;
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(input.wait_ms)).await;
            let end = Instant::now();
            log.lock().unwrap().push(Span {
                label: input.label.clone(),
                start,
                end,
            });
            if input.fail {
                return Err(ToolFailure::new(format!("{} failed.", input.label)));
            }
            Ok(input.label)
        }
    })
    .with_concurrency(concurrency)
}

struct Fixture {
    location: Location,
    journal: Arc<MemoryJournal>,
    log: Log,
    _registrations: Vec<Registration>,
}

/// A Location with `look` (read-only), `put` (writes `path`), `run` (exclusive) and `batch`.
fn fixture(options: BatchOptions) -> Fixture {
    let journal = Arc::new(MemoryJournal::new());
    let store = Arc::new(MemoryOutputStore::new());
    let process = ToolRegistry::new();
    let location = Location::new(
        "/work",
        &process,
        SettlementConfig::new(store, journal.clone()),
    );
    let log = Log::default();
    let tools = location
        .register(
            ToolSet::new()
                .with("look", probe(&log, Concurrency::ReadOnly))
                .with("put", probe(&log, Concurrency::writes_paths("path")))
                .with("run", probe(&log, Concurrency::Exclusive)),
        )
        .unwrap();
    let batch = location
        .register(ToolSet::new().with("batch", batch_tool(options)))
        .unwrap();
    Fixture {
        location,
        journal,
        log,
        _registrations: vec![tools, batch],
    }
}

fn cx(call: &str) -> Context {
    Context::new(
        CallIdentity::new("session-1", "build", "message-1", call),
        CancellationToken::new(),
    )
}

impl Fixture {
    async fn batch_with(&self, cx: Context, calls: Value) -> Settlement {
        self.location
            .materialize(AllTools)
            .settle(cx, ToolCall::new("batch", json!({ "tool_calls": calls })))
            .await
    }

    async fn batch(&self, calls: Value) -> (BatchOutput, String) {
        let settlement = self.batch_with(cx("b"), calls).await;
        let Outcome::Success(output) = settlement.outcome else {
            panic!("the batch did not succeed: {:?}", settlement.outcome);
        };
        let text = output
            .content
            .iter()
            .filter_map(|part| part.as_text())
            .collect::<Vec<_>>()
            .join("\n");
        (BatchOutput::deserialize(&output.structured).unwrap(), text)
    }

    fn span(&self, label: &str) -> Span {
        self.log
            .lock()
            .unwrap()
            .iter()
            .find(|span| span.label == label)
            .cloned()
            .unwrap_or_else(|| panic!("{label} did not run"))
    }
}

fn call(tool: &str, label: &str, path: Option<&str>, wait_ms: u64) -> Value {
    let mut parameters = json!({ "label": label, "wait_ms": wait_ms });
    if let Some(path) = path {
        parameters["path"] = json!(path);
    }
    json!({ "tool": tool, "parameters": parameters })
}

#[tokio::test]
async fn batch_read_only_calls_overlap() {
    let fx = fixture(BatchOptions::default());
    let (output, _) = fx
        .batch(json!([
            call("look", "a", None, 50),
            call("look", "b", None, 50)
        ]))
        .await;
    assert_eq!(output.succeeded, 2);
    assert!(fx.span("a").overlaps(&fx.span("b")));
}

#[tokio::test]
async fn batch_writes_to_one_path_run_in_order() {
    let fx = fixture(BatchOptions::default());
    let (output, _) = fx
        .batch(json!([
            call("put", "first", Some("./src/x.rs"), 50),
            call("put", "second", Some("src/x.rs"), 5),
            call("put", "third", Some("/work/src/./x.rs"), 5)
        ]))
        .await;
    assert_eq!(output.succeeded, 3);
    let (first, second, third) = (fx.span("first"), fx.span("second"), fx.span("third"));
    assert!(first.end <= second.start, "{first:?} {second:?}");
    assert!(second.end <= third.start, "{second:?} {third:?}");
}

#[tokio::test]
async fn batch_writes_to_different_paths_overlap() {
    let fx = fixture(BatchOptions::default());
    fx.batch(json!([
        call("put", "x", Some("x.rs"), 50),
        call("put", "y", Some("y.rs"), 50)
    ]))
    .await;
    assert!(fx.span("x").overlaps(&fx.span("y")));
}

#[tokio::test]
async fn batch_reads_and_writes_keep_their_order() {
    let fx = fixture(BatchOptions::default());
    fx.batch(json!([
        call("look", "read", None, 30),
        call("put", "write", Some("x.rs"), 5),
        call("look", "reread", None, 5)
    ]))
    .await;
    let (read, write, reread) = (fx.span("read"), fx.span("write"), fx.span("reread"));
    assert!(read.end <= write.start);
    assert!(write.end <= reread.start);
}

#[tokio::test]
async fn batch_exclusive_call_runs_alone() {
    let fx = fixture(BatchOptions::default());
    fx.batch(json!([
        call("look", "before", None, 30),
        call("put", "write", Some("x.rs"), 30),
        call("run", "alone", None, 30),
        call("look", "after", None, 30),
        call("put", "write-after", Some("y.rs"), 30)
    ]))
    .await;
    let alone = fx.span("alone");
    for label in ["before", "write", "after", "write-after"] {
        assert!(!alone.overlaps(&fx.span(label)), "{label} overlapped");
    }
    assert!(fx.span("before").end <= alone.start);
    assert!(alone.end <= fx.span("after").start);
    // A write without its path argument cannot be placed, so it runs alone too.
    let fx = fixture(BatchOptions::default());
    fx.batch(json!([
        call("look", "a", None, 30),
        call("put", "pathless", None, 30),
        call("look", "b", None, 30)
    ]))
    .await;
    let pathless = fx.span("pathless");
    assert!(!pathless.overlaps(&fx.span("a")) && !pathless.overlaps(&fx.span("b")));
}

#[tokio::test]
async fn batch_cannot_call_batch() {
    let fx = fixture(BatchOptions::default());
    // A batch tool under another name is refused too.
    let _alias = fx
        .location
        .register(ToolSet::new().with("many", batch_tool(BatchOptions::default())))
        .unwrap();
    let inner = json!({ "tool_calls": [call("look", "nested", None, 0)] });
    let (output, text) = fx
        .batch(json!([
            { "tool": "batch", "parameters": inner },
            { "tool": "many", "parameters": inner },
            call("look", "plain", None, 0)
        ]))
        .await;
    assert_eq!((output.succeeded, output.total), (1, 3));
    for refused in &output.results[..2] {
        assert_eq!(refused.outcome, "refused");
        assert!(
            refused
                .text
                .contains("cannot be called from inside a batch")
        );
        assert!(refused.text.contains("was not run"));
    }
    assert!(text.contains("`batch` cannot be called from inside a batch"));
    assert_eq!(output.results[2].text, "plain");
    let labels: Vec<String> = fx
        .log
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.label.clone())
        .collect();
    assert_eq!(labels, ["plain"]);
}

#[tokio::test]
async fn batch_refuses_tools_outside_the_allow_list() {
    let fx = fixture(BatchOptions {
        allowed: Some(vec!["look".to_owned(), "put".to_owned()]),
    });
    let (output, _) = fx
        .batch(json!([
            call("run", "x", None, 0),
            call("look", "y", None, 0)
        ]))
        .await;
    assert_eq!(output.results[0].outcome, "refused");
    assert_eq!(
        output.results[0].text,
        "Tool `run` cannot be called from a batch, so this call was not run. Call it directly. \
         Tools that can be batched: `look`, `put`."
    );
    assert!(output.results[1].ok);
}

#[tokio::test]
async fn batch_limits_the_number_of_calls() {
    let fx = fixture(BatchOptions::default());
    let calls: Vec<Value> = (0..=MAX_BATCH_CALLS)
        .map(|i| call("look", &format!("c{i}"), None, 0))
        .collect();
    let settlement = fx.batch_with(cx("b"), json!(calls)).await;
    let Outcome::Error(error) = &settlement.outcome else {
        panic!("{:?}", settlement.outcome);
    };
    assert_eq!(error.kind, ModelErrorKind::Failed);
    assert_eq!(
        error.text(),
        "`tool_calls` has 26 calls, but a batch runs at most 25, so nothing was run.\n\
         Hint: Split the calls into batches of at most 25."
    );
    assert!(fx.log.lock().unwrap().is_empty());

    let settlement = fx.batch_with(cx("b"), json!([])).await;
    assert!(matches!(settlement.outcome, Outcome::Error(_)));

    let (output, _) = fx.batch(json!(calls[..MAX_BATCH_CALLS])).await;
    assert_eq!(output.succeeded, MAX_BATCH_CALLS);
}

#[tokio::test]
async fn batch_reports_each_call_in_order() {
    let fx = fixture(BatchOptions::default());
    let mut failing = call("look", "bad", None, 0);
    failing["parameters"]["fail"] = json!(true);
    let (output, text) = fx
        .batch(json!([
            call("look", "good", None, 20),
            failing,
            { "tool": "nosuch", "parameters": {} },
            { "tool": "look", "parameters": { "wait_ms": 1 } }
        ]))
        .await;
    assert_eq!((output.succeeded, output.total), (1, 4));
    let outcomes: Vec<&str> = output.results.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, ["success", "failure", "unknown", "invalid"]);
    let indices: Vec<u32> = output.results.iter().map(|r| r.index).collect();
    assert_eq!(indices, [1, 2, 3, 4]);
    assert!(
        text.starts_with("Executed 1/4 tool calls successfully. 3 failed.\n\n## 1. look\ngood")
    );
    assert!(text.contains("\n\n## 2. look\nError: bad failed."));
    assert!(text.contains("\n\n## 3. nosuch\nError: Unknown tool `nosuch`."));
    assert!(text.contains("\n\n## 4. look\nError: Invalid arguments for tool `look`"));
}

/// Each journal row as (call ID, sub-call index, outcome), sorted.
fn rows(journal: &MemoryJournal) -> Vec<(String, Option<u32>, OutcomeKind)> {
    let mut rows: Vec<_> = journal
        .records()
        .iter()
        .map(|r| {
            (
                r.identity.call.as_str().to_owned(),
                r.identity.sub_call,
                r.outcome,
            )
        })
        .collect();
    rows.sort_by_key(|row| (row.0.clone(), row.1));
    rows
}

#[tokio::test]
async fn batch_records_each_sub_call_under_the_batchs_ids_and_its_index() {
    let fx = fixture(BatchOptions::default());
    fx.batch(json!([
        call("look", "a", None, 0),
        call("nosuch", "b", None, 0),
        call("batch", "c", None, 0)
    ]))
    .await;
    // The refused call ran nothing and has no settlement of its own. No call ID is invented:
    // every row carries the host's `b`, and a sub-call adds its position.
    assert_eq!(
        rows(&fx.journal),
        [
            ("b".to_owned(), None, OutcomeKind::Success),
            ("b".to_owned(), Some(1), OutcomeKind::Success),
            ("b".to_owned(), Some(2), OutcomeKind::Unknown),
        ]
    );
    for record in &fx.journal.records() {
        assert_eq!(record.identity.session.as_str(), "session-1");
        assert_eq!(record.identity.agent.as_str(), "build");
        assert_eq!(record.identity.assistant_message.as_str(), "message-1");
    }
}

// spec: LAW-STALE-REJECTION
#[tokio::test]
async fn batch_judges_stale_and_unknown_against_the_calling_turn() {
    let fx = fixture(BatchOptions::default());
    let ran = Log::default();
    let old_turn = fx.location.materialize(AllTools);
    // After the turn: `look` is replaced and `late` appears.
    let _replacement = fx
        .location
        .register(
            ToolSet::new()
                .with("look", probe(&ran, Concurrency::ReadOnly))
                .with("late", probe(&ran, Concurrency::ReadOnly)),
        )
        .unwrap();
    let direct_look = old_turn
        .settle(cx("d1"), ToolCall::new("look", json!({"label": "x"})))
        .await;
    let direct_late = old_turn
        .settle(cx("d2"), ToolCall::new("late", json!({"label": "y"})))
        .await;
    assert_eq!(direct_look.outcome.kind(), OutcomeKind::Stale);
    assert_eq!(direct_late.outcome.kind(), OutcomeKind::Unknown);

    let settlement = old_turn
        .settle(
            cx("b"),
            ToolCall::new(
                "batch",
                json!({ "tool_calls": [call("look", "x", None, 0), call("late", "y", None, 0)] }),
            ),
        )
        .await;
    let Outcome::Success(output) = settlement.outcome else {
        panic!("{:?}", settlement.outcome);
    };
    let output = BatchOutput::deserialize(&output.structured).unwrap();
    let outcomes: Vec<&str> = output.results.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, ["stale", "unknown"]);
    assert_eq!(
        output.results[0].text,
        direct_look.model_result().unwrap().content[0]
            .as_text()
            .unwrap()
    );
    assert!(ran.lock().unwrap().is_empty(), "a sub-call ran a tool");
    assert!(fx.log.lock().unwrap().is_empty(), "a sub-call ran a tool");
    // The stale sub-call names the registration the turn advertised, never the replacement.
    let advertised = old_turn.get("look").unwrap().registration().get();
    let stale_row = fx
        .journal
        .records()
        .into_iter()
        .find(|r| r.identity.sub_call == Some(1))
        .unwrap();
    assert_eq!(stale_row.registration, Some(advertised));
}

#[tokio::test]
async fn a_panicking_sub_call_is_a_defect_for_the_host_and_a_neutral_line_for_the_model() {
    let fx = fixture(BatchOptions::default());
    let _boom = fx
        .location
        .register(
            ToolSet::new().with(
                "boom",
                Tool::new("Panics.", |_: Value, _cx: Context| async move {
                    if true {
                        panic!("secret payload 7f3a");
                    }
                    Ok::<String, ToolFailure>(String::new())
                })
                .with_concurrency(Concurrency::ReadOnly),
            ),
        )
        .unwrap();
    let settlement = fx
        .batch_with(
            cx("b"),
            json!([call("look", "fine", None, 0), { "tool": "boom", "parameters": {} }]),
        )
        .await;
    assert_eq!(settlement.sub_calls.len(), 1);
    let report = &settlement.sub_calls[0];
    assert_eq!((report.index, report.tool.as_str()), (2, "boom"));
    assert_eq!(
        report.outcome,
        Outcome::Defect(Defect::Panicked("secret payload 7f3a".to_owned()))
    );
    let Outcome::Success(output) = &settlement.outcome else {
        panic!("{:?}", settlement.outcome);
    };
    let sent = serde_json::to_string(&settlement.model_result()).unwrap();
    assert!(!sent.contains("secret payload"), "{sent}");
    let text = output.content[0].as_text().unwrap();
    assert!(
        text.contains("## 2. boom\nError: The call failed with an internal error"),
        "{text}"
    );
    assert_eq!(
        rows(&fx.journal),
        [
            ("b".to_owned(), None, OutcomeKind::Success),
            ("b".to_owned(), Some(1), OutcomeKind::Success),
            ("b".to_owned(), Some(2), OutcomeKind::Panicked),
        ]
    );
}

#[tokio::test]
async fn a_sub_call_interrupted_from_outside_is_reported_to_the_host() {
    let fx = fixture(BatchOptions::default());
    let _gone = fx
        .location
        .register(
            ToolSet::new().with(
                "gone",
                Tool::new(
                    "Loses its connection.",
                    |_: Value, _cx: Context| async move {
                        Err::<String, _>(ToolFailure::interruption("the server went away"))
                    },
                )
                .with_concurrency(Concurrency::ReadOnly),
            ),
        )
        .unwrap();
    let settlement = fx
        .batch_with(cx("b"), json!([{ "tool": "gone", "parameters": {} }]))
        .await;
    assert_eq!(
        settlement.sub_calls[0].outcome,
        Outcome::Interrupted(Interruption::Reported("the server went away".to_owned()))
    );
    let sent = serde_json::to_string(&settlement.model_result()).unwrap();
    assert!(!sent.contains("went away"), "{sent}");
    assert!(sent.contains("interrupted before it finished"), "{sent}");
}

#[tokio::test]
async fn batch_cancellation_cancels_sub_calls() {
    let fx = Arc::new(fixture(BatchOptions::default()));
    let token = CancellationToken::new();
    let batch_cx = Context::new(
        CallIdentity::new("session-1", "build", "message-1", "b"),
        token.clone(),
    );
    let started = Instant::now();
    let task = tokio::spawn({
        let fx = fx.clone();
        async move {
            fx.batch_with(
                batch_cx,
                json!([
                    call("look", "slow-a", None, 10_000),
                    call("look", "slow-b", None, 10_000)
                ]),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    token.cancel();
    let settlement = task.await.unwrap();
    assert_eq!(
        settlement.outcome,
        Outcome::Interrupted(Interruption::Cancelled)
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        fx.log.lock().unwrap().is_empty(),
        "a sub-call ran to its end"
    );
    // The sub-calls settle as interrupted in the same poll (the memory journal records eagerly).
    assert_eq!(
        rows(&fx.journal),
        [
            ("b".to_owned(), None, OutcomeKind::Interrupted),
            ("b".to_owned(), Some(1), OutcomeKind::Interrupted),
            ("b".to_owned(), Some(2), OutcomeKind::Interrupted),
        ]
    );
}

#[tokio::test]
async fn a_process_batch_runs_in_the_calling_locations_turn() {
    let journal = Arc::new(MemoryJournal::new());
    let process = ToolRegistry::new();
    let config = SettlementConfig::new(Arc::new(MemoryOutputStore::new()), journal.clone());
    let _registration = process
        .register(ToolSet::new().with("batch", batch_tool(BatchOptions::default())))
        .unwrap();
    let log = Log::default();
    let here = Location::new("/b", &process, config.clone());
    let _look = here
        .register(ToolSet::new().with("look", probe(&log, Concurrency::ReadOnly)))
        .unwrap();
    // Another Location over the same process placement does not see `look`.
    let elsewhere = Location::new("/c", &process, config);
    for (location, outcome) in [(&elsewhere, "unknown"), (&here, "success")] {
        let settlement = location
            .materialize(AllTools)
            .settle(
                cx("b"),
                ToolCall::new(
                    "batch",
                    json!({ "tool_calls": [call("look", "x", None, 0)] }),
                ),
            )
            .await;
        let Outcome::Success(output) = settlement.outcome else {
            panic!("{:?}", settlement.outcome);
        };
        let output = BatchOutput::deserialize(&output.structured).unwrap();
        assert_eq!(output.results[0].outcome, outcome);
    }
}

#[tokio::test]
async fn a_batch_run_outside_a_turn_runs_nothing() {
    // The settlement kernel with no turn: the batch has nothing to settle its calls against.
    let config = SettlementConfig::new(
        Arc::new(MemoryOutputStore::new()),
        Arc::new(MemoryJournal::new()),
    );
    let recovery = tackle_core::Recovery::default();
    let batch = batch_tool(BatchOptions::default());
    let context = cx("b");
    let settlement = tackle_core::Settle::begin(
        &config,
        &recovery,
        None,
        &context,
        "batch",
        Default::default(),
    )
    .run(
        tackle_core::RegistrationId::mint(),
        batch.clone(),
        batch.definition().clone(),
        json!({ "tool_calls": [{ "tool": "x", "parameters": {} }] }).into(),
        context.clone(),
        None,
    )
    .await;
    let Outcome::Error(error) = settlement.outcome else {
        panic!("{:?}", settlement.outcome);
    };
    assert!(
        error
            .text()
            .contains("not called through a turn, so nothing was run")
    );
}
