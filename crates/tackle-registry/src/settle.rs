//! Settlement: resolve, decode, execute, encode, project, bound and record one call.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use quanta::Instant;

use serde::Serialize;
use serde_json::Value;
use tackle_core::{
    AnyTool, Arguments, CallIdentity, Content, Context, InvocationOutcome, JournalError,
    LimitsOverride, ManagedRef, OutcomeKind, PhaseTimings, RetentionError, SettlementRecord,
    ToolDefinition, ToolOutput, bound_output,
};
use tracing::Instrument;

use crate::placement::RegistrationId;
use crate::suggest::nearest_names;
use crate::turn::Turn;

/// One call as the provider sent it: a name and raw arguments.
///
/// The call's ID travels in the [`Context`], with the rest of the host-supplied identity.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    name: String,
    arguments: Arguments,
    limits: LimitsOverride,
}

impl ToolCall {
    /// A call of `name` with the provider's raw arguments.
    pub fn new(name: impl Into<String>, arguments: impl Into<Arguments>) -> Self {
        Self {
            name: name.into(),
            arguments: arguments.into(),
            limits: LimitsOverride::default(),
        }
    }

    /// The same call with its own output limits, which outrank every other setting.
    pub fn with_limits(mut self, limits: LimitsOverride) -> Self {
        self.limits = limits;
        self
    }

    /// The name the model called.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Why a call produced an error result for the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelErrorKind {
    /// The tool returned a `ToolFailure`.
    Failed,
    /// The name was not advertised in the turn.
    Unknown,
    /// The advertised registration was removed or replaced; nothing ran.
    Stale,
    /// The arguments did not decode; nothing ran.
    Invalid,
}

/// An error result the model sees, with a message that says how to fix the call.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelError {
    /// What kind of error.
    pub kind: ModelErrorKind,
    /// The bounded model-facing text.
    pub content: Vec<Content>,
}

impl ModelError {
    /// The error text the model reads.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// An operational failure for the host's policy. Never shown to the model as a tool result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Defect {
    /// The tool panicked.
    #[error("tool panicked: {0}")]
    Panicked(String),
    /// The tool returned an output its codec rejects.
    #[error("tool returned an invalid output: {0}")]
    InvalidOutput(String),
    /// The complete output could not be retained, so no bounded preview was published.
    #[error(transparent)]
    Retention(#[from] RetentionError),
    /// The settlement could not be recorded; `outcome` is what it would have been.
    #[error("{error} (the call ended as {})", outcome.as_str())]
    Journal {
        /// The journal's error.
        error: JournalError,
        /// How the call ended before recording failed.
        outcome: OutcomeKind,
    },
}

/// How a settlement ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The tool ran; here is the bounded model-facing output.
    Success(ToolOutput),
    /// An error result for the model.
    Error(ModelError),
    /// The host cancelled the call. Not a tool result: the host decides what the model sees.
    Interrupted,
    /// An operational failure for the host.
    Defect(Defect),
}

impl Outcome {
    /// How the journal names this outcome.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Success(_) => OutcomeKind::Success,
            Outcome::Error(error) => match error.kind {
                ModelErrorKind::Failed => OutcomeKind::Failure,
                ModelErrorKind::Unknown => OutcomeKind::Unknown,
                ModelErrorKind::Stale => OutcomeKind::Stale,
                ModelErrorKind::Invalid => OutcomeKind::Invalid,
            },
            Outcome::Interrupted => OutcomeKind::Interrupted,
            Outcome::Defect(Defect::Panicked(_)) => OutcomeKind::Panicked,
            Outcome::Defect(Defect::InvalidOutput(_)) => OutcomeKind::InvalidOutput,
            Outcome::Defect(Defect::Retention(_)) => OutcomeKind::RetentionFailed,
            Outcome::Defect(Defect::Journal { outcome, .. }) => *outcome,
        }
    }
}

/// The result a provider receives for a call, when the outcome has one.
///
/// Serializes as `{"is_error": …, "content": […], "structured": …}`; the journal stores that
/// JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelResult {
    /// True for error results.
    pub is_error: bool,
    /// The parts the model reads. Empty for a structured-only success.
    pub content: Vec<Content>,
    /// The structured output of a success, for providers that accept it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
}

/// The settled result of one call.
#[derive(Clone, Debug, PartialEq)]
pub struct Settlement {
    /// The host-supplied identity, exactly as given.
    pub identity: CallIdentity,
    /// The name the model called.
    pub tool: String,
    /// The registration that served the call, when one was resolved.
    pub registration: Option<RegistrationId>,
    /// How it ended.
    pub outcome: Outcome,
    /// Complete outputs retained in managed storage. Settlement metadata only.
    pub managed: Vec<ManagedRef>,
    /// Phase durations.
    pub timings: PhaseTimings,
}

impl Settlement {
    /// What the provider should receive as this call's result, or `None` when the outcome is for
    /// the host (interruption, defects).
    pub fn model_result(&self) -> Option<ModelResult> {
        self.view().map(|view| ModelResult {
            is_error: view.is_error,
            content: view.content.to_vec(),
            structured: view.structured.cloned(),
        })
    }

    /// The model result borrowed from the outcome; the journal serializes it without a clone.
    fn view(&self) -> Option<ModelResultView<'_>> {
        match &self.outcome {
            Outcome::Success(output) => Some(ModelResultView {
                is_error: false,
                content: &output.content,
                structured: Some(&output.structured),
            }),
            Outcome::Error(error) => Some(ModelResultView {
                is_error: true,
                content: &error.content,
                structured: None,
            }),
            Outcome::Interrupted | Outcome::Defect(_) => None,
        }
    }

    fn model_result_json(&self) -> Option<String> {
        // Content and JSON values always serialize.
        self.view()
            .and_then(|view| serde_json::to_string(&view).ok())
    }
}

/// A borrowed [`ModelResult`]; it serializes to the same JSON.
#[derive(Serialize)]
struct ModelResultView<'a> {
    is_error: bool,
    content: &'a [Content],
    #[serde(skip_serializing_if = "Option::is_none")]
    structured: Option<&'a Value>,
}

impl fmt::Display for Settlement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.tool,
            self.identity.call,
            self.outcome.kind().as_str()
        )
    }
}

/// A call's name resolved to the registration its turn advertised.
struct Resolved {
    registration: RegistrationId,
    tool: AnyTool,
    definition: Arc<ToolDefinition>,
}

/// Why a call's name did not resolve, as a model-facing error.
struct Unresolved {
    kind: ModelErrorKind,
    registration: Option<RegistrationId>,
    message: String,
}

impl Turn {
    /// Settles one call of this turn.
    ///
    /// 1. Resolve: a name the turn did not advertise is `Unknown`; a registration removed or
    ///    replaced since the turn (a closed overlay revealing an older one included) is `Stale`.
    ///    The handler is captured only after this check, so later registry changes cannot
    ///    affect the running call.
    /// 2. Decode, execute, encode, check and project, through the tool's codecs.
    /// 3. Bound the model-facing output once, retaining the full output when it is cut.
    /// 4. Record the settlement in the journal, with the host's IDs verbatim.
    ///
    /// Interruption and defects are returned to the host, never as a tool result.
    pub async fn settle(&self, cx: Context, call: ToolCall) -> Settlement {
        let span = tracing::info_span!(
            "settle",
            tool = %call.name,
            call = %cx.call(),
            outcome = tracing::field::Empty,
        );
        if span.is_disabled() {
            // No subscriber wants it: skip the per-poll enter and exit.
            self.settle_inner(cx, call).await
        } else {
            self.settle_inner(cx, call).instrument(span).await
        }
    }

    async fn settle_inner(&self, cx: Context, call: ToolCall) -> Settlement {
        let started_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or_default();
        let ToolCall {
            name,
            arguments,
            limits: call_limits,
        } = call;
        let mut timings = PhaseTimings::default();
        let identity = cx.identity().clone();

        let started = Instant::now();
        let resolved = self.resolve(&name);
        timings.resolve = started.elapsed();

        let Resolved {
            registration,
            tool,
            definition,
        } = match resolved {
            Ok(found) => found,
            Err(unresolved) => {
                let result = self
                    .model_error(unresolved.kind, unresolved.message, None, &call_limits, &cx)
                    .await;
                return self
                    .finish(
                        identity,
                        name,
                        unresolved.registration,
                        result,
                        timings,
                        started_at_ms,
                    )
                    .await;
            }
        };

        let invocation = tool.invoke(arguments, cx.clone()).await;
        timings.decode = invocation.timings.decode;
        timings.execute = invocation.timings.execute;
        timings.encode = invocation.timings.encode;
        timings.project = invocation.timings.project;

        let started = Instant::now();
        let result = match invocation.outcome {
            InvocationOutcome::Completed(output) => {
                let limits = self.limits_for(Some(&definition.output_limits), &call_limits, &cx);
                match self.bound(output, &limits).await {
                    Ok(bounded) => (Outcome::Success(bounded.output), bounded.managed),
                    Err(defect) => (Outcome::Defect(defect), Vec::new()),
                }
            }
            InvocationOutcome::Failed(failure) => {
                let preference = Some(&definition.output_limits);
                self.model_error(
                    ModelErrorKind::Failed,
                    failure.to_string(),
                    preference,
                    &call_limits,
                    &cx,
                )
                .await
            }
            InvocationOutcome::InvalidInput { message, .. } => {
                let text = format!("Invalid arguments for tool `{name}`:\n{message}");
                let preference = Some(&definition.output_limits);
                self.model_error(ModelErrorKind::Invalid, text, preference, &call_limits, &cx)
                    .await
            }
            InvocationOutcome::InvalidOutput(message) => {
                (Outcome::Defect(Defect::InvalidOutput(message)), Vec::new())
            }
            InvocationOutcome::Interrupted => (Outcome::Interrupted, Vec::new()),
            InvocationOutcome::Panicked(message) => {
                (Outcome::Defect(Defect::Panicked(message)), Vec::new())
            }
        };
        timings.bound = started.elapsed();
        self.finish(
            identity,
            name,
            Some(registration),
            result,
            timings,
            started_at_ms,
        )
        .await
    }

    /// Looks `name` up in the turn, then in the live registry.
    fn resolve(&self, name: &str) -> Result<Resolved, Unresolved> {
        let Some(advertised) = self.get(name) else {
            return Err(Unresolved {
                kind: ModelErrorKind::Unknown,
                registration: None,
                message: self.unknown_message(name),
            });
        };
        let registration = advertised.registration();
        let stale = |message: String| Unresolved {
            kind: ModelErrorKind::Stale,
            registration: Some(registration),
            message,
        };
        match self.inner.location.effective(name) {
            Some(entry) if entry.identity == registration => Ok(Resolved {
                registration,
                tool: entry.tool,
                definition: advertised.definition().clone(),
            }),
            Some(_) => Err(stale(format!(
                "Tool `{name}` was replaced after this turn began, so the call was not run. \
                 Call it again in the next turn."
            ))),
            None => Err(stale(format!(
                "Tool `{name}` was removed after this turn began, so the call was not run. \
                 Do not call it again unless a later turn offers it."
            ))),
        }
    }

    fn unknown_message(&self, name: &str) -> String {
        let names: Vec<&str> = self.tools().iter().map(|t| t.name()).collect();
        if names.is_empty() {
            return format!("Unknown tool `{name}`: this turn offers no tools.");
        }
        let nearest = nearest_names(name, &names);
        let mut message = format!("Unknown tool `{name}`.");
        match nearest.as_slice() {
            [] => {}
            [only] => message.push_str(&format!(" Did you mean `{only}`?")),
            several => message.push_str(&format!(
                " Did you mean one of: {}?",
                several
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
        message.push_str(&format!(" Available tools: {}.", names.join(", ")));
        message
    }

    /// The limits for this call: registry defaults, then the tool's preference (when there is a
    /// tool), then the agent's override, then the call's own.
    fn limits_for(
        &self,
        tool_preference: Option<&LimitsOverride>,
        call_limits: &LimitsOverride,
        cx: &Context,
    ) -> tackle_core::OutputLimits {
        let config = &self.inner.location.config;
        let mut limits = config.limits;
        if let Some(preference) = tool_preference {
            limits = limits.with(preference);
        }
        if let Some(agent) = config.agent_limits.get(cx.agent()) {
            limits = limits.with(agent);
        }
        limits.with(call_limits)
    }

    /// Bounds a model-facing output; a retention failure becomes a defect.
    async fn bound(
        &self,
        output: ToolOutput,
        limits: &tackle_core::OutputLimits,
    ) -> Result<tackle_core::Bounded, Defect> {
        let store = &*self.inner.location.config.store;
        bound_output(output, limits, store, &self.inner.recovery)
            .await
            .map_err(Defect::Retention)
    }

    /// An error result for the model, bounded like any other model-facing output. A resolved
    /// tool's own limit preference applies to its errors too.
    async fn model_error(
        &self,
        kind: ModelErrorKind,
        text: String,
        tool_preference: Option<&LimitsOverride>,
        call_limits: &LimitsOverride,
        cx: &Context,
    ) -> (Outcome, Vec<ManagedRef>) {
        let limits = self.limits_for(tool_preference, call_limits, cx);
        let output = ToolOutput {
            content: vec![Content::text(text)],
            structured: Value::Null,
        };
        match self.bound(output, &limits).await {
            Ok(bounded) => (
                Outcome::Error(ModelError {
                    kind,
                    content: bounded.output.content,
                }),
                bounded.managed,
            ),
            Err(defect) => (Outcome::Defect(defect), Vec::new()),
        }
    }

    async fn finish(
        &self,
        identity: CallIdentity,
        tool: String,
        registration: Option<RegistrationId>,
        (outcome, managed): (Outcome, Vec<ManagedRef>),
        timings: PhaseTimings,
        started_at_ms: u64,
    ) -> Settlement {
        let mut settlement = Settlement {
            identity,
            tool,
            registration,
            outcome,
            managed,
            timings,
        };
        let kind = settlement.outcome.kind();
        tracing::Span::current().record("outcome", kind.as_str());
        tracing::debug!(
            target: "tackle::settle",
            resolve_us = timings.resolve.as_micros() as u64,
            decode_us = timings.decode.as_micros() as u64,
            execute_us = timings.execute.as_micros() as u64,
            encode_us = timings.encode.as_micros() as u64,
            project_us = timings.project.as_micros() as u64,
            bound_us = timings.bound.as_micros() as u64,
            "settled"
        );
        let record = SettlementRecord {
            identity: settlement.identity.clone(),
            tool: settlement.tool.clone(),
            registration: registration.map(RegistrationId::get),
            outcome: kind,
            model_result: settlement.model_result_json(),
            managed: settlement.managed.clone(),
            started_at_ms,
            timings,
        };
        if let Err(error) = self.inner.location.config.journal.record(record).await {
            settlement.outcome = Outcome::Defect(Defect::Journal {
                error,
                outcome: kind,
            });
        }
        settlement
    }
}
