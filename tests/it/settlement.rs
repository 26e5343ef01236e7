//! Example tests for every settlement outcome, with exact model-facing messages.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle::{EchoInput, Harness, cx, tagged};
use tackle_core::{Content, OutcomeKind, Tool, ToolFailure};
use tackle_registry::{
    AllTools, Defect, Interruption, ModelErrorKind, Outcome, Settlement, ToolCall, ToolSet,
};

/// The model-facing error text of a settlement, or a panic naming what it was instead.
fn error_text(s: &Settlement, kind: ModelErrorKind) -> String {
    match &s.outcome {
        Outcome::Error(error) if error.kind == kind => error.text(),
        other => panic!("expected a {kind:?} error, got {other:?}"),
    }
}

fn success_tag(s: &Settlement) -> String {
    match &s.outcome {
        Outcome::Success(output) => output.structured["tag"].as_str().unwrap().to_owned(),
        other => panic!("expected success, got {other:?}"),
    }
}

#[tokio::test]
async fn success_returns_structured_output_and_records_it() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (tool, calls) = tagged("a");
    let _reg = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let turn = location.materialize(AllTools);
    let s = turn
        .settle(cx("c1"), ToolCall::new("echo", r#"{"text":"hi"}"#))
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{s:?}")
    };
    assert_eq!(
        output.structured,
        serde_json::json!({"tag":"a","text":"hi"})
    );
    assert!(
        output.content.is_empty(),
        "structured output has no text projection"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let records = h.journal.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, OutcomeKind::Success);
    assert_eq!(records[0].tool, "echo");
    assert_eq!(records[0].registration, s.registration.map(|r| r.get()));
    assert_eq!(
        records[0]
            .model_result
            .as_ref()
            .map(|result| serde_json::to_string(result).unwrap())
            .as_deref(),
        Some(r#"{"is_error":false,"content":[],"structured":{"tag":"a","text":"hi"}}"#)
    );
}

#[tokio::test]
async fn string_output_is_projected_as_text() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Say hi.", |input: EchoInput, _cx| async move {
        Ok::<_, ToolFailure>(format!("hi {}", input.text))
    });
    let _reg = location.register(ToolSet::new().with("hi", tool)).unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("hi", r#"{"text":"there"}"#))
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{s:?}")
    };
    assert_eq!(output.content, vec![Content::text("hi there")]);
}

#[tokio::test]
async fn unknown_tool_suggests_the_nearest_names() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (echo, _) = tagged("a");
    let (read, read_calls) = tagged("r");
    let _reg = location
        .register(ToolSet::new().with("echo", echo).with("read_file", read))
        .unwrap();
    let turn = location.materialize(AllTools);
    let s = turn
        .settle(cx("c1"), ToolCall::new("Read_File", "{}"))
        .await;
    assert_eq!(
        error_text(&s, ModelErrorKind::Unknown),
        "Unknown tool `Read_File`. Did you mean `read_file`? Available tools: echo, read_file."
    );
    assert_eq!(
        read_calls.load(Ordering::SeqCst),
        0,
        "a near match is never run"
    );
    let s = turn.settle(cx("c2"), ToolCall::new("shell", "{}")).await;
    assert_eq!(
        error_text(&s, ModelErrorKind::Unknown),
        "Unknown tool `shell`. Available tools: echo, read_file."
    );
    assert_eq!(s.registration, None);
}

#[tokio::test]
async fn a_name_registered_after_the_turn_is_still_unknown_to_it() {
    let h = Harness::new();
    let location = h.location("/ws");
    let turn = location.materialize(AllTools);
    let (tool, calls) = tagged("late");
    let _reg = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let s = turn
        .settle(cx("c1"), ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert_eq!(
        error_text(&s, ModelErrorKind::Unknown),
        "Unknown tool `echo`: this turn offers no tools."
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

const REMOVED: &str = "Tool `echo` was removed after this turn began, so the call was not run. \
                       Do not call it again unless a later turn offers it.";
const REPLACED: &str = "Tool `echo` was replaced after this turn began, so the call was not run. \
                        Call it again in the next turn.";

#[tokio::test]
async fn stale_by_removal() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (tool, calls) = tagged("a");
    let reg = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let turn = location.materialize(AllTools);
    drop(reg);
    let s = turn
        .settle(cx("c1"), ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert_eq!(error_text(&s, ModelErrorKind::Stale), REMOVED);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(h.journal.records()[0].outcome, OutcomeKind::Stale);
}

#[tokio::test]
async fn stale_by_replacement() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (old, old_calls) = tagged("old");
    let (new, new_calls) = tagged("new");
    let _old = location.register(ToolSet::new().with("echo", old)).unwrap();
    let turn = location.materialize(AllTools);
    let _new = location.register(ToolSet::new().with("echo", new)).unwrap();
    let s = turn
        .settle(cx("c1"), ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert_eq!(error_text(&s, ModelErrorKind::Stale), REPLACED);
    assert_eq!(
        old_calls.load(Ordering::SeqCst) + new_calls.load(Ordering::SeqCst),
        0
    );
    // The next turn advertises the replacement, and runs it.
    let s = location
        .materialize(AllTools)
        .settle(cx("c2"), ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert_eq!(success_tag(&s), "new");
}

#[tokio::test]
async fn stale_by_revealed_overlay() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (base, base_calls) = tagged("base");
    let (overlay, overlay_calls) = tagged("overlay");
    let _base = location
        .register(ToolSet::new().with("echo", base))
        .unwrap();
    let overlay_reg = location
        .register(ToolSet::new().with("echo", overlay))
        .unwrap();
    let turn = location.materialize(AllTools);
    drop(overlay_reg);
    let s = turn
        .settle(cx("c1"), ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert_eq!(error_text(&s, ModelErrorKind::Stale), REPLACED);
    assert_eq!(
        base_calls.load(Ordering::SeqCst) + overlay_calls.load(Ordering::SeqCst),
        0
    );
    let s = location
        .materialize(AllTools)
        .settle(cx("c2"), ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert_eq!(
        success_tag(&s),
        "base",
        "closing the overlay reveals the base"
    );
}

#[tokio::test]
async fn application_call_is_stale_after_a_location_override() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (app, app_calls) = tagged("app");
    let (local, local_calls) = tagged("local");
    let _app = h
        .process
        .register(ToolSet::new().with("echo", app))
        .unwrap();
    let turn = location.materialize(AllTools);
    let _local = location
        .register(ToolSet::new().with("echo", local))
        .unwrap();
    let s = turn
        .settle(cx("c1"), ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert_eq!(error_text(&s, ModelErrorKind::Stale), REPLACED);
    assert_eq!(
        app_calls.load(Ordering::SeqCst) + local_calls.load(Ordering::SeqCst),
        0
    );
}

#[tokio::test]
async fn only_the_replaced_name_is_stale_in_a_multi_tool_turn() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (a, _) = tagged("a");
    let (b, _) = tagged("b");
    let (b2, _) = tagged("b2");
    let _ab = location
        .register(ToolSet::new().with("alpha", a).with("beta", b))
        .unwrap();
    let turn = location.materialize(AllTools);
    let _b2 = location.register(ToolSet::new().with("beta", b2)).unwrap();
    let alpha = turn
        .settle(cx("c1"), ToolCall::new("alpha", r#"{"text":"x"}"#))
        .await;
    assert_eq!(success_tag(&alpha), "a");
    let beta = turn
        .settle(cx("c2"), ToolCall::new("beta", r#"{"text":"x"}"#))
        .await;
    assert!(matches!(&beta.outcome, Outcome::Error(e) if e.kind == ModelErrorKind::Stale));
}

#[tokio::test]
async fn invalid_json_reports_position_and_never_runs() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (tool, calls) = tagged("a");
    let _reg = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("echo", r#"{"text":"hi","repeat":"#))
        .await;
    assert_eq!(
        error_text(&s, ModelErrorKind::Invalid),
        "Invalid arguments for tool `echo`:\n\
         the arguments are not valid JSON: EOF while parsing a value (line 1, column 22, byte 22)\n\
         Send the arguments as one complete JSON object. \
         Expected fields: repeat: integer, text: string (required)."
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "malformed JSON is never run as {{}}"
    );
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct EditInput {
    path: String,
    edits: Vec<Edit>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Edit {
    #[serde(rename = "oldString")]
    old_string: String,
    #[serde(rename = "newString")]
    new_string: String,
}

#[tokio::test]
async fn invalid_fields_are_all_listed_with_paths() {
    let h = Harness::new();
    let location = h.location("/ws");
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    let tool = Tool::new("Edit a file.", move |input: EditInput, _cx| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolFailure>(input.edits.len()) }
    });
    let _reg = location
        .register(ToolSet::new().with("edit", tool))
        .unwrap();
    let arguments = r#"{"path":"a.rs","edits":[{"oldString":"a","newString":"b"},{"oldString":"c","newString":"d"},{"newString":7}]}"#;
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("edit", arguments))
        .await;
    assert_eq!(
        error_text(&s, ModelErrorKind::Invalid),
        "Invalid arguments for tool `edit`:\n\
         - edits[2].newString: expected string, got number 7\n\
         - edits[2].oldString: missing field\n\
         Fix these fields and call the tool again. \
         Expected fields: edits: array (required), path: string (required)."
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn coerced_scalars_reach_the_tool_as_numbers_and_booleans() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (tool, _) = tagged("a");
    let _reg = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let turn = location.materialize(AllTools);
    let s = turn
        .settle(
            cx("c1"),
            ToolCall::new("echo", r#"{"text":"ab","repeat":"3"}"#),
        )
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{s:?}")
    };
    assert_eq!(output.structured["text"], "ababab");
    // A string field keeps a numeric-looking string as it is.
    let s = turn
        .settle(
            cx("c2"),
            ToolCall::new("echo", r#"{"text":"020","repeat":1}"#),
        )
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{s:?}")
    };
    assert_eq!(output.structured["text"], "020");
    // A non-numeric string for an integer is still invalid.
    let s = turn
        .settle(
            cx("c3"),
            ToolCall::new("echo", r#"{"text":"a","repeat":"three"}"#),
        )
        .await;
    assert_eq!(
        error_text(&s, ModelErrorKind::Invalid),
        "Invalid arguments for tool `echo`:\n\
         - repeat: expected integer, got string \"three\"\n\
         Fix these fields and call the tool again. \
         Expected fields: repeat: integer, text: string (required)."
    );
}

#[tokio::test]
async fn tool_failure_is_a_model_visible_error_with_its_hint() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Fail.", |input: EchoInput, _cx| async move {
        Err::<String, _>(
            ToolFailure::new(format!("file not found: {}", input.text))
                .with_hint("Check the path with glob."),
        )
    });
    let _reg = location
        .register(ToolSet::new().with("read", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("read", r#"{"text":"a.txt"}"#))
        .await;
    assert_eq!(
        error_text(&s, ModelErrorKind::Failed),
        "file not found: a.txt\nHint: Check the path with glob."
    );
    let result = s.model_result().unwrap();
    assert!(result.is_error);
    assert_eq!(h.journal.records()[0].outcome, OutcomeKind::Failure);
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Score {
    #[schemars(range(max = 10))]
    value: u32,
}

#[tokio::test]
async fn invalid_output_is_a_defect() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Score.", |_: EchoInput, _cx| async move {
        Ok::<_, ToolFailure>(Score { value: 11 })
    });
    let _reg = location
        .register(ToolSet::new().with("score", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("score", r#"{"text":"x"}"#))
        .await;
    assert_eq!(
        s.outcome,
        Outcome::Defect(Defect::InvalidOutput(
            "the output does not match its schema: value: 11 is greater than the maximum of 10"
                .to_owned()
        ))
    );
    assert_eq!(s.model_result(), None);
    let record = &h.journal.records()[0];
    assert_eq!(record.outcome, OutcomeKind::InvalidOutput);
    assert_eq!(record.model_result, None);
}

#[tokio::test]
async fn interruption_is_reported_to_the_host_only() {
    let h = Harness::new();
    let location = h.location("/ws");
    // The tool turns cancellation into a failure, which it must not do; settlement still says
    // the call was interrupted.
    let tool = Tool::new(
        "Wait.",
        |_: EchoInput, cx: tackle_core::Context| async move {
            cx.cancellation().cancelled().await;
            Err::<String, _>(ToolFailure::new("cancelled by the user"))
        },
    );
    let _reg = location
        .register(ToolSet::new().with("wait", tool))
        .unwrap();
    let turn = location.materialize(AllTools);
    let context = cx("c1");
    let token = context.cancellation().clone();
    let running = tokio::spawn({
        let turn = turn.clone();
        async move {
            turn.settle(context, ToolCall::new("wait", r#"{"text":"x"}"#))
                .await
        }
    });
    tokio::task::yield_now().await;
    token.cancel();
    let s = running.await.unwrap();
    assert_eq!(s.outcome, Outcome::Interrupted(Interruption::Cancelled));
    assert_eq!(s.model_result(), None);
    let record = &h.journal.records()[0];
    assert_eq!(record.outcome, OutcomeKind::Interrupted);
    assert_eq!(record.identity.call.as_str(), "c1");

    // A call whose token fired before settlement never runs.
    let (echo, calls) = tagged("a");
    let _echo = location
        .register(ToolSet::new().with("echo", echo))
        .unwrap();
    let context = cx("c2");
    context.cancellation().cancel();
    let s = location
        .materialize(AllTools)
        .settle(context, ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert_eq!(s.outcome, Outcome::Interrupted(Interruption::Cancelled));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn panic_is_a_defect_and_never_model_visible() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Explode.", |_: EchoInput, _cx| async move {
        if true {
            panic!("secret internal state");
        }
        Ok::<String, ToolFailure>(String::new())
    });
    let _reg = location
        .register(ToolSet::new().with("boom", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("boom", r#"{"text":"x"}"#))
        .await;
    assert_eq!(
        s.outcome,
        Outcome::Defect(Defect::Panicked("secret internal state".to_owned()))
    );
    assert_eq!(s.model_result(), None);
    let record = &h.journal.records()[0];
    assert_eq!(record.outcome, OutcomeKind::Panicked);
    assert_eq!(record.model_result, None);
}

#[tokio::test]
async fn running_call_completes_after_its_registration_is_dropped() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let gates = Arc::new(std::sync::Mutex::new(Some((started_tx, release_rx))));
    let tool = Tool::new("Slow.", move |input: EchoInput, _cx| {
        let gates = gates.lock().unwrap().take();
        async move {
            let (started, release) = gates.expect("called once");
            started.send(()).unwrap();
            release.await.unwrap();
            Ok::<_, ToolFailure>(format!("done {}", input.text))
        }
    });
    let reg = location
        .register(ToolSet::new().with("slow", tool))
        .unwrap();
    let turn = location.materialize(AllTools);
    let running = tokio::spawn({
        let turn = turn.clone();
        async move {
            turn.settle(cx("c1"), ToolCall::new("slow", r#"{"text":"x"}"#))
                .await
        }
    });
    started_rx.await.unwrap();
    drop(reg);
    assert!(location.tools().names().is_empty());
    release_tx.send(()).unwrap();
    let s = running.await.unwrap();
    let Outcome::Success(output) = &s.outcome else {
        panic!("{s:?}")
    };
    assert_eq!(output.content, vec![Content::text("done x")]);
}

#[tokio::test]
async fn definitions_are_reused_across_turns_and_filters_hide_tools() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (a, _) = tagged("a");
    let (b, b_calls) = tagged("b");
    let _reg = location
        .register(ToolSet::new().with("alpha", a).with("beta", b))
        .unwrap();
    let first = location.materialize(AllTools);
    let second = location.materialize(AllTools);
    let alpha_1 = first.get("alpha").unwrap();
    let alpha_2 = second.get("alpha").unwrap();
    assert!(Arc::ptr_eq(alpha_1.definition(), alpha_2.definition()));
    assert_eq!(alpha_1.registration(), alpha_2.registration());

    let filtered =
        location.materialize(|name: &str, _: &tackle_core::ToolDefinition| name != "beta");
    let names: Vec<&str> = filtered.tools().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["alpha"]);
    let s = filtered
        .settle(cx("c1"), ToolCall::new("beta", r#"{"text":"x"}"#))
        .await;
    assert!(matches!(&s.outcome, Outcome::Error(e) if e.kind == ModelErrorKind::Unknown));
    assert_eq!(
        b_calls.load(Ordering::SeqCst),
        0,
        "a hidden tool is never run"
    );
}

#[tokio::test]
async fn a_tool_can_replace_the_invalid_arguments_message() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (tool, calls) = tagged("a");
    let tool = tool.with_invalid_input_message(|reason, definition| {
        format!(
            "echo wants {{\"text\": \"...\"}}; {} problem(s); schema has {} field(s)",
            match reason {
                tackle_core::InvalidInput::Fields { errors } => errors.len(),
                tackle_core::InvalidInput::Syntax { .. } => 1,
            },
            definition.input_schema()["properties"]
                .as_object()
                .unwrap()
                .len()
        )
    });
    let _reg = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("echo", r#"{"repeat":1}"#))
        .await;
    assert_eq!(
        error_text(&s, ModelErrorKind::Invalid),
        "Invalid arguments for tool `echo`:\n\
         echo wants {\"text\": \"...\"}; 1 problem(s); schema has 2 field(s)"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn progress_updates_reach_the_host_while_the_call_runs() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new(
        "Report progress.",
        |input: EchoInput, cx: tackle_core::Context| async move {
            assert!(cx.set_title(format!("Echoing {}", input.text)));
            assert!(cx.set_metadata(serde_json::json!({"done": 1})));
            Ok::<_, ToolFailure>(input.text)
        },
    );
    let _reg = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let (sender, mut updates) = tokio::sync::mpsc::channel(8);
    let context = cx("c9").with_progress(sender);
    let s = location
        .materialize(AllTools)
        .settle(context, ToolCall::new("echo", r#"{"text":"x"}"#))
        .await;
    assert!(matches!(s.outcome, Outcome::Success(_)));
    let title = updates.recv().await.unwrap();
    assert_eq!(title.call.as_str(), "c9");
    assert_eq!(title.title.as_deref(), Some("Echoing x"));
    assert_eq!(title.metadata, None);
    let metadata = updates.recv().await.unwrap();
    assert_eq!(metadata.metadata, Some(serde_json::json!({"done": 1})));

    // Without a channel, updates are dropped and the tool is told so.
    let quiet = cx("c10");
    assert!(!quiet.set_title("nobody listens"));
}

#[tokio::test]
async fn phase_timings_are_real_time_and_cover_the_call() {
    // The executor sleeps 30 ms: `execute` reports at least that, the phases together no more
    // than the settlement took, and the journal keeps what the settlement reports.
    let h = Harness::new();
    let location = h.location("/ws");
    let pause = std::time::Duration::from_millis(30);
    let sleeper = Tool::new(
        "Sleep, then echo.",
        move |input: EchoInput, _cx| async move {
            tokio::time::sleep(pause).await;
            Ok::<_, ToolFailure>(input.text)
        },
    );
    let _reg = location
        .register(ToolSet::new().with("sleep", sleeper))
        .unwrap();
    let turn = location.materialize(AllTools);
    let started = std::time::Instant::now();
    let s = turn
        .settle(cx("c1"), ToolCall::new("sleep", r#"{"text":"hi"}"#))
        .await;
    let elapsed = started.elapsed();
    assert_eq!(s.outcome.kind(), OutcomeKind::Success, "{s:?}");
    let t = s.timings;
    assert!(t.execute >= pause, "{t:?}");
    let phases = t.resolve + t.decode + t.execute + t.encode + t.project + t.bound;
    // One percent for the counter's ratio to the monotonic clock, measured over this call.
    assert!(phases <= elapsed.mul_f64(1.01), "{t:?} in {elapsed:?}");
    let recorded = h.journal.records()[0].timings;
    assert_eq!(recorded, t);
}
