//! The settlement kernel: once a registry has resolved a call, run it through the codec boundary,
//! bound the model-facing result and record it. It is the only code that runs a tool's executor.
//!
//! `AnyTool::invoke` is private to this crate, so a host cannot run a tool while skipping the
//! bound and the journal: every run goes through [`Settle::run`], which always bounds, always
//! records, and records an interruption even when its future is dropped midway.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::bound::{LimitsOverride, OutputLimits, Recovery, bound_into};
use crate::clock::Stopwatch;
use crate::codec::Arguments;
use crate::content::{Content, ToolOutput};
use crate::context::Context;
use crate::ids::{AgentId, CallIdentity, RegistrationId};
use crate::ports::{Journal, ManagedRef, OutcomeKind, OutputStore, PhaseTimings, SettlementRecord};
use crate::provider::{Provider, restore_arguments};
use crate::settlement::{
    Defect, ModelError, ModelErrorKind, Outcome, Settlement, SubCallReport, ToolCall,
};
use crate::tool::{AnyTool, InvocationOutcome, ToolDefinition};

/// Settles calls on behalf of a running call: the turn that call was settled in.
///
/// A registry implements it for its turn and hands it to [`Settle::run`]; a tool reaches it only
/// through [`Context::settle_sub`], which gives each sub-call its identity.
pub trait SubSettle: Send + Sync + 'static {
    /// Settles `call` for `cx` against the captured turn.
    fn settle(self: Arc<Self>, cx: Context, call: ToolCall) -> BoxFuture<'static, Settlement>;

    /// The turn itself, for the registry that implemented it to recognise
    /// ([`Context::turn`]).
    fn as_any(&self) -> &(dyn Any + Send + Sync);
}

/// How a Location's turns bound and record their settlements.
///
/// There is no `Default`: a host must choose where complete outputs and the journal live.
#[derive(Clone)]
pub struct SettlementConfig {
    store: Arc<dyn OutputStore>,
    journal: Arc<dyn Journal>,
    limits: OutputLimits,
    agent_limits: HashMap<AgentId, LimitsOverride>,
    read_tool: String,
    grep_tool: String,
}

impl fmt::Debug for SettlementConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SettlementConfig")
            .field("limits", &self.limits)
            .field("agent_limits", &self.agent_limits)
            .field("read_tool", &self.read_tool)
            .field("grep_tool", &self.grep_tool)
            .finish_non_exhaustive()
    }
}

impl SettlementConfig {
    /// Settlement with default limits (2000 lines, 50 KiB, head+tail), retaining oversized
    /// output in `store` and recording every settlement in `journal`.
    pub fn new(store: Arc<dyn OutputStore>, journal: Arc<dyn Journal>) -> Self {
        Self {
            store,
            journal,
            limits: OutputLimits::default(),
            agent_limits: HashMap::new(),
            read_tool: crate::names::ToolName::READ.as_str().to_owned(),
            grep_tool: crate::names::ToolName::GREP.as_str().to_owned(),
        }
    }

    /// Replaces the registry-wide output limits.
    pub fn with_limits(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Overrides the limits for one agent. A tool's own preference sits below this; a per-call
    /// override sits above it.
    pub fn with_agent_limits(mut self, agent: impl Into<AgentId>, limits: LimitsOverride) -> Self {
        self.agent_limits.insert(agent.into(), limits);
        self
    }

    /// The names of the tools the truncation hint may point to (defaults: `read`, `grep`). The
    /// hint names one only when the turn advertises it.
    pub fn with_recovery_tools(mut self, read: impl Into<String>, grep: impl Into<String>) -> Self {
        self.read_tool = read.into();
        self.grep_tool = grep.into();
        self
    }

    /// The recovery hint of a turn, given which names it advertises.
    pub fn recovery(&self, advertised: impl Fn(&str) -> bool) -> Recovery {
        Recovery {
            read: advertised(&self.read_tool).then(|| self.read_tool.clone()),
            grep: advertised(&self.grep_tool).then(|| self.grep_tool.clone()),
        }
    }

    /// The store that keeps complete outputs. Tools that read files treat its directory as
    /// readable.
    pub fn store(&self) -> &Arc<dyn OutputStore> {
        &self.store
    }
}

/// One call on its way through settlement, from the moment its name is looked up.
///
/// A registry starts one with [`Settle::begin`], resolves the name against its turn, then either
/// [`run`](Settle::run)s the resolved tool or [`reject`](Settle::reject)s the call with a
/// model-facing error.
pub struct Settle<'a> {
    config: &'a SettlementConfig,
    recovery: &'a Recovery,
    dialect: Option<Provider>,
    header: Header,
    call_limits: LimitsOverride,
    agent_limits: Option<LimitsOverride>,
    /// Times the phases; its first lap is the resolve phase.
    clock: Stopwatch,
    /// What host policy tells the model about a call that runs, before its output.
    notices: Vec<String>,
}

/// Who made a call and which name it called: what every record of it starts with.
struct Header {
    identity: CallIdentity,
    tool: String,
    started_at_ms: u64,
    adjustments: Vec<String>,
}

impl Header {
    /// The journal record of this call, before its outcome is known in full.
    fn record(
        self,
        registration: Option<RegistrationId>,
        outcome: OutcomeKind,
        timings: PhaseTimings,
    ) -> SettlementRecord {
        SettlementRecord {
            identity: self.identity,
            tool: self.tool,
            registration: registration.map(RegistrationId::get),
            outcome,
            model_result: None,
            managed: Vec::new(),
            started_at_ms: self.started_at_ms,
            timings,
            adjustments: self.adjustments,
        }
    }
}

impl fmt::Debug for Settle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settle")
            .field("identity", &self.header.identity)
            .field("tool", &self.header.tool)
            .field("dialect", &self.dialect)
            .finish_non_exhaustive()
    }
}

impl<'a> Settle<'a> {
    /// Starts settling a call of `tool` for `cx`, under `config`, in a turn whose recovery hint
    /// is `recovery` and that was exported in `dialect` (`None`: canonical JSON Schema). The
    /// resolve phase is timed from here.
    pub fn begin(
        config: &'a SettlementConfig,
        recovery: &'a Recovery,
        dialect: Option<Provider>,
        cx: &Context,
        tool: impl Into<String>,
        call_limits: LimitsOverride,
    ) -> Self {
        let started_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or_default();
        Self {
            config,
            recovery,
            dialect,
            header: Header {
                identity: cx.identity().clone(),
                tool: tool.into(),
                started_at_ms,
                adjustments: Vec::new(),
            },
            call_limits,
            agent_limits: config.agent_limits.get(cx.agent()).copied(),
            clock: Stopwatch::start(),
            notices: Vec::new(),
        }
    }

    /// The name the call named.
    pub fn tool(&self) -> &str {
        &self.header.tool
    }

    /// Records what host policy changed in the call before it got here (one line each), in
    /// the journal and the settlement.
    pub fn with_adjustments(mut self, adjustments: Vec<String>) -> Self {
        self.header.adjustments = adjustments;
        self
    }

    /// Puts `notices` (from host policy, one line each) before the text of a call that runs to
    /// success. They are part of the output the bound measures, so they never push a result
    /// past its limits; a bound that keeps the tail may cut them. An output with no text part
    /// (structured data alone) is left as it is.
    pub fn with_notices(mut self, notices: Vec<String>) -> Self {
        self.notices = notices;
        self
    }

    /// Settles a call that host policy stopped before it ran, without a result for the model:
    /// the question it had to ask was withdrawn, or the call was cancelled meanwhile. Recorded
    /// as interrupted; nothing runs.
    pub async fn interrupt(mut self, reason: String) -> Settlement {
        let timings = PhaseTimings {
            resolve: self.clock.lap(),
            ..PhaseTimings::default()
        };
        let outcome = Outcome::Interrupted(crate::settlement::Interruption::Reported(reason));
        let header = self.header.record(None, outcome.kind(), timings);
        finish(self.config, None, header, outcome, Vec::new(), Vec::new()).await
    }

    /// Settles a call whose name did not resolve to a runnable registration (unknown, stale):
    /// a model-facing error, bounded and recorded. Nothing runs.
    pub async fn reject(
        mut self,
        kind: ModelErrorKind,
        registration: Option<RegistrationId>,
        message: String,
    ) -> Settlement {
        let timings = PhaseTimings {
            resolve: self.clock.lap(),
            ..PhaseTimings::default()
        };
        let managed = Mutex::new(Vec::new());
        let outcome = self.model_error(kind, message, None, &managed).await;
        let header = self.header.record(registration, outcome.kind(), timings);
        let sub_calls = Vec::new();
        finish(
            self.config,
            registration,
            header,
            outcome,
            sub_calls,
            take(&managed),
        )
        .await
    }

    /// Runs the resolved `tool` (registration `registration`, advertised as `definition`) with
    /// the call's raw `arguments`, then bounds and records the result.
    ///
    /// - The dialect's transformations are undone first: OpenAI strict mode's `null` for an
    ///   optional field becomes an absent field again.
    /// - `turn` is where the tool's sub-calls settle ([`Context::settle_sub`]); their
    ///   interruptions and defects come back in [`Settlement::sub_calls`].
    /// - If the returned future is dropped once the tool has started, the call is still
    ///   recorded, as interrupted, with every output already retained.
    pub async fn run(
        self,
        registration: RegistrationId,
        tool: AnyTool,
        definition: Arc<ToolDefinition>,
        arguments: Arguments,
        cx: Context,
        turn: Option<Arc<dyn SubSettle>>,
    ) -> Settlement {
        let Self {
            config,
            recovery,
            dialect,
            header,
            call_limits,
            agent_limits,
            mut clock,
            notices,
        } = self;
        let limits = Limits {
            config,
            call: call_limits,
            agent: agent_limits,
        };
        let mut timings = PhaseTimings {
            resolve: clock.lap(),
            ..PhaseTimings::default()
        };
        let arguments = match dialect {
            Some(dialect) => restore_arguments(dialect, definition.input_schema(), arguments),
            None => arguments,
        };
        let cx = cx.for_settlement(turn);
        let mut unfinished = Unfinished {
            journal: &config.journal,
            record: Some(header.record(Some(registration), OutcomeKind::Interrupted, timings)),
            managed: Mutex::new(Vec::new()),
        };

        let (invocation, mut clock) = tool.run_invocation(arguments, cx.clone(), clock).await;
        timings.decode = invocation.timings.decode;
        timings.execute = invocation.timings.execute;
        timings.encode = invocation.timings.encode;
        timings.project = invocation.timings.project;

        let preference = Some(&definition.output_limits);
        let managed = &unfinished.managed;
        let outcome = match invocation.outcome {
            InvocationOutcome::Completed(mut output) => {
                lead_with(&mut output, &notices);
                let limits = limits.resolve(preference);
                match bound_into(output, &limits, &*config.store, recovery, managed).await {
                    Ok(output) => Outcome::Success(output),
                    Err(error) => Outcome::Defect(Defect::Retention(error)),
                }
            }
            InvocationOutcome::Failed(failure) => {
                let text = failure.to_string();
                let kind = ModelErrorKind::Failed;
                model_error(&limits, recovery, kind, text, preference, managed).await
            }
            InvocationOutcome::InvalidInput { message, .. } => {
                let name = unfinished.record.as_ref().map_or("", |r| r.tool.as_str());
                let text = format!("Invalid arguments for tool `{name}`:\n{message}");
                let kind = ModelErrorKind::Invalid;
                model_error(&limits, recovery, kind, text, preference, managed).await
            }
            InvocationOutcome::InvalidOutput(message) => {
                Outcome::Defect(Defect::InvalidOutput(message))
            }
            InvocationOutcome::Interrupted(interruption) => Outcome::Interrupted(interruption),
            InvocationOutcome::Panicked(message) => Outcome::Defect(Defect::Panicked(message)),
        };
        timings.bound = clock.lap();
        let (mut record, managed) = unfinished.disarm();
        record.outcome = outcome.kind();
        record.timings = timings;
        let sub_calls = cx.take_sub_reports();
        finish(
            config,
            Some(registration),
            record,
            outcome,
            sub_calls,
            managed,
        )
        .await
    }

    /// An error result for the model, bounded like any other model-facing output.
    async fn model_error(
        &self,
        kind: ModelErrorKind,
        text: String,
        tool_preference: Option<&LimitsOverride>,
        managed: &Mutex<Vec<ManagedRef>>,
    ) -> Outcome {
        let limits = Limits {
            config: self.config,
            call: self.call_limits,
            agent: self.agent_limits,
        };
        model_error(&limits, self.recovery, kind, text, tool_preference, managed).await
    }
}

/// Puts `notices` first in `output`'s first text part. An output without text keeps its form
/// (the model reads its structured value, which a text part would hide), without the notices.
fn lead_with(output: &mut ToolOutput, notices: &[String]) {
    if notices.is_empty() {
        return;
    }
    let first_text = output.content.iter_mut().find_map(|part| match part {
        Content::Text { text } => Some(text),
        _ => None,
    });
    if let Some(text) = first_text {
        *text = format!("{}\n\n{text}", notices.join("\n"));
    }
}

/// The layers of limits a call's output is bounded by, but the tool's own.
struct Limits<'a> {
    config: &'a SettlementConfig,
    call: LimitsOverride,
    agent: Option<LimitsOverride>,
}

impl Limits<'_> {
    /// The limits for this call: registry defaults, then the tool's preference (when there is a
    /// tool), then the agent's override, then the call's own.
    fn resolve(&self, tool_preference: Option<&LimitsOverride>) -> OutputLimits {
        let mut limits = self.config.limits;
        if let Some(preference) = tool_preference {
            limits = limits.with(preference);
        }
        if let Some(agent) = &self.agent {
            limits = limits.with(agent);
        }
        limits.with(&self.call)
    }
}

/// An error result for the model, bounded like any other model-facing output. A resolved tool's
/// own limit preference applies to its errors too.
async fn model_error(
    layers: &Limits<'_>,
    recovery: &Recovery,
    kind: ModelErrorKind,
    text: String,
    tool_preference: Option<&LimitsOverride>,
    managed: &Mutex<Vec<ManagedRef>>,
) -> Outcome {
    let limits = layers.resolve(tool_preference);
    let output = ToolOutput {
        content: vec![Content::text(text)],
        structured: Value::Null,
    };
    let store = &*layers.config.store;
    match bound_into(output, &limits, store, recovery, managed).await {
        Ok(output) => Outcome::Error(ModelError {
            kind,
            content: output.content,
        }),
        Err(error) => Outcome::Defect(Defect::Retention(error)),
    }
}

/// Records the settlement of `record` (its outcome and timings set) and returns it to the host.
///
/// The journal takes the record when this is called; the future only waits for the commit, so
/// it holds the settlement alone (an `async fn` would hold its arguments too, and every caller's
/// future grows by what this one holds).
fn finish(
    config: &SettlementConfig,
    registration: Option<RegistrationId>,
    mut record: SettlementRecord,
    outcome: Outcome,
    sub_calls: Vec<SubCallReport>,
    managed: Vec<ManagedRef>,
) -> impl Future<Output = Settlement> + use<> {
    let kind = outcome.kind();
    let timings = record.timings;
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
    let mut settlement = Settlement {
        identity: record.identity.clone(),
        tool: record.tool.clone(),
        registration,
        outcome,
        sub_calls,
        managed,
        timings,
        adjustments: record.adjustments.clone(),
        annotations: Vec::new(),
    };
    record.model_result = settlement.model_result();
    record.managed = settlement.managed.clone();
    let committed = config.journal.record(record);
    async move {
        if let Err(error) = committed.await {
            settlement.outcome = Outcome::Defect(Defect::Journal {
                error,
                outcome: kind,
            });
        }
        settlement
    }
}

/// The references retained so far.
fn take(managed: &Mutex<Vec<ManagedRef>>) -> Vec<ManagedRef> {
    std::mem::take(&mut *managed.lock().unwrap_or_else(PoisonError::into_inner))
}

/// A started call that has not been recorded yet. Dropped while armed (its settlement future
/// was dropped), it records the call as interrupted, with every output retained so far.
struct Unfinished<'a> {
    journal: &'a Arc<dyn Journal>,
    record: Option<SettlementRecord>,
    managed: Mutex<Vec<ManagedRef>>,
}

impl Unfinished<'_> {
    /// Hands back the record and the retained outputs: the call is finishing normally.
    fn disarm(&mut self) -> (SettlementRecord, Vec<ManagedRef>) {
        let record = self.record.take().expect("disarmed once");
        (record, take(&self.managed))
    }
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        let Some(mut record) = self.record.take() else {
            return;
        };
        record.managed = take(&self.managed);
        tracing::debug!(
            target: "tackle::settle",
            tool = %record.tool,
            call = %record.identity.call,
            "settlement dropped after the tool started; recorded as interrupted"
        );
        // The journal takes the record when `record` is called (see `Journal`); the future only
        // reports the commit, and nobody is left to hear it.
        drop(self.journal.record(record));
    }
}
