//! Layers of host policy around settlement (`Turn::with_layers`): they see every call of the
//! turn, `batch` sub-calls included; what they change is journaled as adjustments; a refusal is
//! a model-visible `refused` error and an interruption is the host's; `after` sees the final
//! settlement and may only annotate it.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tackle::{Harness, cx, tagged};
use tackle_core::{
    Content, Context, Interruption, ModelErrorKind, Outcome, OutcomeKind, Settlement, ToolFailure,
};
use tackle_registry::{
    AllTools, BatchOptions, CallDraft, Layer, Layers, ToolCall, ToolSet, Turn, batch_tool,
};

/// Records every call it sees and renames `shout` to `echo`.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<(String, Option<u32>)>>,
}

impl Layer for Recorder {
    fn before<'a>(
        &'a self,
        _turn: &'a Turn,
        cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            self.seen
                .lock()
                .unwrap()
                .push((call.name().to_owned(), cx.identity().sub_call));
            if call.name() == "shout" {
                call.rename("echo", "renamed `shout` to `echo`");
            }
            Ok(())
        })
    }

    fn after<'a>(
        &'a self,
        _turn: &'a Turn,
        _cx: &'a Context,
        settlement: &'a mut Settlement,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            settlement
                .annotations
                .push(format!("after {}", settlement.outcome.kind().as_str()));
        })
    }
}

/// Refuses calls with `"text": "no"`, interrupts those with `"text": "stop"`, and tells the
/// model something before the output of those with `"text": "tell"`.
struct Guard;

impl Layer for Guard {
    fn before<'a>(
        &'a self,
        _turn: &'a Turn,
        _cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            match call
                .arguments_mut()
                .and_then(|args| args.get("text").cloned())
            {
                Some(Value::String(text)) if text == "no" => Err(ToolFailure::new(
                    "`no` is not allowed here; send another text.",
                )),
                Some(Value::String(text)) if text == "stop" => {
                    Err(ToolFailure::interruption("the user stopped the session"))
                }
                Some(Value::String(text)) if text == "tell" => {
                    call.tell_model("You asked for this one already.");
                    Ok(())
                }
                _ => Ok(()),
            }
        })
    }
}

fn setup(
    recorder: Arc<Recorder>,
) -> (
    Harness,
    tackle_registry::Location,
    Vec<tackle_registry::Registration>,
    Turn,
) {
    let harness = Harness::new();
    let location = harness.location("/repo");
    let (echo, _) = tagged("echo");
    let say = tagged("say")
        .0
        .with_projection(|_: &tackle::EchoInput, said: &Value| {
            vec![Content::text(said["text"].as_str().unwrap_or_default())]
        });
    let guards = vec![
        location
            .register(
                ToolSet::new()
                    .with("echo", echo)
                    .with("say", say)
                    .with("batch", batch_tool(BatchOptions::default())),
            )
            .unwrap(),
    ];
    let layers: Layers = vec![recorder as Arc<dyn Layer>, Arc::new(Guard)].into();
    let turn = location.materialize(AllTools).with_layers(layers);
    (harness, location, guards, turn)
}

#[tokio::test]
async fn a_layer_renames_a_call_and_the_journal_keeps_the_adjustment() {
    let recorder = Arc::new(Recorder::default());
    let (harness, _location, _guards, turn) = setup(recorder.clone());
    let settled = turn
        .settle(cx("c1"), ToolCall::new("shout", json!({"text": "hi"})))
        .await;
    assert!(
        matches!(settled.outcome, Outcome::Success(_)),
        "{:?}",
        settled.outcome
    );
    assert_eq!(settled.tool, "echo");
    assert_eq!(settled.adjustments, ["renamed `shout` to `echo`"]);
    assert_eq!(settled.annotations, ["after success"]);
    let records = harness.journal.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].tool, "echo");
    assert_eq!(records[0].adjustments, ["renamed `shout` to `echo`"]);
}

#[tokio::test]
async fn a_refusal_is_a_model_visible_refused_error_and_nothing_runs() {
    let (harness, _location, _guards, turn) = setup(Arc::default());
    let settled = turn
        .settle(cx("c1"), ToolCall::new("echo", json!({"text": "no"})))
        .await;
    let Outcome::Error(error) = &settled.outcome else {
        panic!("{:?}", settled.outcome);
    };
    assert_eq!(error.kind, ModelErrorKind::Refused);
    assert!(
        error.text().contains("`no` is not allowed here"),
        "{}",
        error.text()
    );
    assert_eq!(harness.journal.records()[0].outcome, OutcomeKind::Refused);

    let stopped = turn
        .settle(cx("c2"), ToolCall::new("echo", json!({"text": "stop"})))
        .await;
    assert!(
        matches!(&stopped.outcome, Outcome::Interrupted(Interruption::Reported(reason)) if reason.contains("stopped")),
        "{:?}",
        stopped.outcome
    );
    assert!(stopped.model_result().is_none());
    assert_eq!(
        harness.journal.records()[1].outcome,
        OutcomeKind::Interrupted
    );
}

#[tokio::test]
async fn batch_sub_calls_go_through_the_calling_turn_s_layers() {
    let recorder = Arc::new(Recorder::default());
    let (harness, _location, _guards, turn) = setup(recorder.clone());
    let calls = json!({"tool_calls": [
        {"tool": "shout", "parameters": {"text": "a"}},
        {"tool": "echo", "parameters": {"text": "no"}},
    ]});
    let settled = turn.settle(cx("b1"), ToolCall::new("batch", calls)).await;
    assert!(
        matches!(settled.outcome, Outcome::Success(_)),
        "{:?}",
        settled.outcome
    );
    let seen = recorder.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("batch".to_owned(), None),
            ("shout".to_owned(), Some(1)),
            ("echo".to_owned(), Some(2)),
        ]
    );
    let records = harness.journal.records();
    let sub = |index: u32| {
        records
            .iter()
            .find(|r| r.identity.sub_call == Some(index))
            .unwrap()
    };
    assert_eq!(sub(1).tool, "echo");
    assert_eq!(sub(1).adjustments, ["renamed `shout` to `echo`"]);
    assert_eq!(sub(2).outcome, OutcomeKind::Refused);
}

#[tokio::test]
async fn a_layer_s_notice_leads_the_output_and_is_bounded_with_it() {
    let (harness, _location, _guards, turn) = setup(Arc::default());
    // A text output gets the notice first.
    let settled = turn
        .settle(cx("n1"), ToolCall::new("say", json!({"text": "tell"})))
        .await;
    let result = settled.model_result().expect("a result");
    let text = model_text(&result);
    assert!(
        text.starts_with("You asked for this one already.\n\n"),
        "{text}"
    );
    // The journal keeps what the model read.
    let record = &harness.journal.records()[0];
    let journaled = serde_json::to_string(&record.model_result).unwrap();
    assert!(
        journaled.contains("You asked for this one already."),
        "{journaled}"
    );

    // Under a bound smaller than notice and output together, the result still fits it.
    let limits = tackle_core::LimitsOverride {
        max_bytes: Some(24),
        ..Default::default()
    };
    let bounded = turn
        .settle(
            cx("n2"),
            ToolCall::new("say", json!({"text": "tell"})).with_limits(limits),
        )
        .await;
    let result = bounded.model_result().expect("a result");
    let text = model_text(&result);
    // The notice alone is longer than the limit: had it been added after the bound, it would
    // be here whole.
    assert!(!text.contains("You asked for this one already."), "{text}");
    assert!(
        !bounded.managed.is_empty(),
        "the whole output was retained: {text}"
    );
}

/// The text parts of a result, joined by newlines.
fn model_text(result: &tackle_core::ModelResult) -> String {
    result
        .content
        .iter()
        .filter_map(|part| part.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}
