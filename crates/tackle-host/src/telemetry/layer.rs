//! The telemetry layer: the first of a turn's layers, so it sees every call (sub-calls
//! included) before any other layer can stop it, and sees its settlement last.
//!
//! Each call gets one `execute_tool {gen_ai.tool.name}` span (kind internal), the child of the
//! trace its context continues (the host's parent, a request's `traceparent`, or for a `batch`
//! sub-call the batch's span). What it carries:
//! - `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name`, `gen_ai.tool.call.id`,
//!   `gen_ai.tool.type` (`function`), `gen_ai.conversation.id` (the session),
//!   `gen_ai.agent.name`, `gen_ai.provider.name` and `gen_ai.request.model` when the turn has
//!   a model; `tackle.message.id`, `tackle.sub_call.index` for a sub-call;
//! - after it settled: `tackle.outcome`, `error.type` (the outcome, unless a success) with an
//!   error status, `tackle.output.bytes_sent` (what the provider receives, after the bound),
//!   `tackle.output.bytes_retained` and `tackle.output.retained` (the complete outputs the
//!   bound cut and kept), `tackle.adjustments` (host policy's changes);
//! - an event per permission question (`tackle.permission`: the permission, the patterns, the
//!   answer), added by the gate;
//! - the arguments (`gen_ai.tool.call.arguments`) and the result (`gen_ai.tool.call.result`)
//!   only when the configuration opts in (`telemetry.content`), each cut to 16 KiB.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures_util::future::BoxFuture;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use parking_lot::Mutex;
use tackle_core::{CallSpan, Content, Context, Outcome, Settlement, ToolFailure, TraceParent};
use tackle_registry::{CallDraft, Layer, Turn};

use super::Telemetry;
use crate::config::Model;

/// The most bytes of arguments or result a span carries when content is opted in.
const CONTENT_CAP: usize = 16 * 1024;

/// Opens and ends the span of every call of one turn.
pub(crate) struct TelemetryLayer {
    telemetry: Arc<Telemetry>,
    /// `gen_ai.provider.name` and `gen_ai.request.model`, when the turn is for a model.
    model: Option<(String, String)>,
}

impl TelemetryLayer {
    pub(crate) fn new(telemetry: Arc<Telemetry>, model: Option<&Model>) -> Self {
        Self {
            telemetry,
            model: model.map(|m| (m.provider.clone(), m.id.clone())),
        }
    }

    /// Opens the span of the call in `cx`, the child of the trace the context continues.
    fn open(&self, cx: &Context, call: &mut CallDraft) -> OtelCallSpan {
        let name = call.name().to_owned();
        let identity = cx.identity();
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", name.clone()),
            KeyValue::new("gen_ai.tool.call.id", identity.call.as_str().to_owned()),
            KeyValue::new("gen_ai.tool.type", "function"),
            KeyValue::new(
                "gen_ai.conversation.id",
                identity.session.as_str().to_owned(),
            ),
            KeyValue::new("gen_ai.agent.name", identity.agent.as_str().to_owned()),
            KeyValue::new(
                "tackle.message.id",
                identity.assistant_message.as_str().to_owned(),
            ),
        ];
        if let Some((provider, model)) = &self.model {
            attributes.push(KeyValue::new("gen_ai.provider.name", provider.clone()));
            attributes.push(KeyValue::new("gen_ai.request.model", model.clone()));
        }
        if let Some(index) = identity.sub_call {
            attributes.push(KeyValue::new("tackle.sub_call.index", i64::from(index)));
        }
        if self.telemetry.content
            && let Some(arguments) = call.arguments_mut()
        {
            let json = serde_json::to_string(arguments).unwrap_or_default();
            attributes.push(KeyValue::new("gen_ai.tool.call.arguments", capped(json)));
        }
        let parent = match cx.trace_parent() {
            Some(parent) => {
                opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
                    TraceId::from_bytes(parent.trace_id()),
                    SpanId::from_bytes(parent.span_id()),
                    TraceFlags::new(parent.flags()),
                    identity.sub_call.is_none(),
                    TraceState::default(),
                ))
            }
            None => opentelemetry::Context::new(),
        };
        let span = self
            .telemetry
            .tracer
            .span_builder(format!("execute_tool {name}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&self.telemetry.tracer, &parent);
        let own = span.span_context();
        // The SDK always gives a valid context; a zero ID would only mean no parent to pass on.
        let context = TraceParent::new(
            own.trace_id().to_bytes(),
            own.span_id().to_bytes(),
            own.is_sampled(),
        );
        OtelCallSpan {
            telemetry: self.telemetry.clone(),
            span: Mutex::new(span),
            context,
            started: Instant::now(),
            tool: Mutex::new(name),
            ended: AtomicBool::new(false),
        }
    }
}

impl Layer for TelemetryLayer {
    fn before<'a>(
        &'a self,
        _turn: &'a Turn,
        cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        // A context reused for a second call keeps its first span; the second is not traced.
        if cx.span().is_none() {
            let span = self.open(cx, call);
            cx.attach_span(Arc::new(span));
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn after<'a>(
        &'a self,
        _turn: &'a Turn,
        cx: &'a Context,
        settlement: &'a mut Settlement,
    ) -> BoxFuture<'a, ()> {
        let ours = cx
            .span()
            .and_then(|span| span.as_any().downcast_ref::<OtelCallSpan>());
        if let Some(span) = ours {
            span.finish(settlement, self.telemetry.content);
        }
        Box::pin(std::future::ready(()))
    }
}

/// The span of one call, attached to its context.
struct OtelCallSpan {
    telemetry: Arc<Telemetry>,
    span: Mutex<opentelemetry_sdk::trace::Span>,
    context: Option<TraceParent>,
    started: Instant,
    /// The tool's name as the span knows it, for the metrics of a call that never settled.
    tool: Mutex<String>,
    ended: AtomicBool,
}

impl OtelCallSpan {
    /// Ends the span with what `settlement` says, and records the call's metrics.
    fn finish(&self, settlement: &Settlement, content: bool) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        let outcome = settlement.outcome.kind().as_str();
        let error = (!matches!(settlement.outcome, Outcome::Success(_))).then_some(outcome);
        let retained: u64 = settlement.managed.iter().map(|m| m.bytes).sum();
        let mut span = self.span.lock();
        if *self.tool.lock() != settlement.tool {
            span.update_name(format!("execute_tool {}", settlement.tool));
            span.set_attribute(KeyValue::new("gen_ai.tool.name", settlement.tool.clone()));
            *self.tool.lock() = settlement.tool.clone();
        }
        span.set_attribute(KeyValue::new("tackle.outcome", outcome));
        span.set_attribute(KeyValue::new(
            "tackle.output.bytes_sent",
            sent_bytes(&settlement.outcome) as i64,
        ));
        span.set_attribute(KeyValue::new(
            "tackle.output.bytes_retained",
            retained as i64,
        ));
        span.set_attribute(KeyValue::new(
            "tackle.output.retained",
            !settlement.managed.is_empty(),
        ));
        if !settlement.adjustments.is_empty() {
            let lines: Vec<StringValue> = settlement
                .adjustments
                .iter()
                .map(|line| StringValue::from(line.clone()))
                .collect();
            span.set_attribute(KeyValue::new(
                "tackle.adjustments",
                Value::Array(Array::String(lines)),
            ));
        }
        if content && let Some(result) = settlement.model_result() {
            let json = serde_json::to_string(&result).unwrap_or_default();
            span.set_attribute(KeyValue::new("gen_ai.tool.call.result", capped(json)));
        }
        if let Some(error) = error {
            span.set_attribute(KeyValue::new("error.type", error));
            span.set_status(Status::error(error));
        }
        span.end();
        drop(span);
        self.record(&settlement.tool, outcome, error);
    }

    /// Records the call's duration and count.
    fn record(&self, tool: &str, outcome: &'static str, error: Option<&'static str>) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
            KeyValue::new("tackle.outcome", outcome),
        ];
        if let Some(error) = error {
            attributes.push(KeyValue::new("error.type", error));
        }
        let seconds = self.started.elapsed().as_secs_f64();
        self.telemetry.duration.record(seconds, &attributes);
        self.telemetry.calls.add(1, &attributes);
    }
}

impl CallSpan for OtelCallSpan {
    fn context(&self) -> Option<TraceParent> {
        self.context
    }

    fn event(&self, name: &'static str, attributes: Vec<(&'static str, String)>) {
        let attributes = attributes
            .into_iter()
            .map(|(key, value)| KeyValue::new(key, value))
            .collect();
        self.span.lock().add_event(name, attributes);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for OtelCallSpan {
    /// A call whose settlement was dropped (its host stopped waiting) never reached `after`:
    /// it ends as interrupted, as the journal records it.
    fn drop(&mut self) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        let outcome = tackle_core::OutcomeKind::Interrupted.as_str();
        {
            let span = self.span.get_mut();
            span.set_attribute(KeyValue::new("tackle.outcome", outcome));
            span.set_attribute(KeyValue::new("error.type", outcome));
            span.set_status(Status::error(outcome));
            span.end();
        }
        let tool = std::mem::take(self.tool.get_mut());
        self.record(&tool, outcome, Some(outcome));
    }
}

/// The bytes the provider receives for `outcome`: its text, its media (as sent, base64) and its
/// structured value (compact JSON). Zero for an outcome the model never reads.
fn sent_bytes(outcome: &Outcome) -> usize {
    let (content, structured) = match outcome {
        Outcome::Success(output) => (&output.content, Some(&output.structured)),
        Outcome::Error(error) => (&error.content, None),
        Outcome::Interrupted(_) | Outcome::Defect(_) => return 0,
    };
    let parts: usize = content
        .iter()
        .map(|part| match part {
            Content::Text { text } => text.len(),
            Content::Media { data_base64, .. } => data_base64.len(),
        })
        .sum();
    let structured = structured
        .filter(|value| !value.is_null())
        .and_then(|value| serde_json::to_vec(value).ok())
        .map_or(0, |json| json.len());
    parts + structured
}

/// `text` cut to [`CONTENT_CAP`] bytes at a character boundary, saying so.
fn capped(mut text: String) -> String {
    if text.len() <= CONTENT_CAP {
        return text;
    }
    let total = text.len();
    let mut end = CONTENT_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!("… [cut: {total} bytes in all]"));
    text
}
