//! The invocation context every tool receives: identity, cancellation, live progress, and the
//! turn its sub-calls settle in.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ids::{AgentId, CallId, CallIdentity, MessageId, SessionId};
use crate::settle::SubSettle;
use crate::settlement::{Settlement, SubCallReport, ToolCall};
use crate::trace::{CallSpan, TraceParent};

/// One live progress update from a running tool: a new title, new metadata, or both.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// The call this update belongs to.
    pub call: CallId,
    /// A short human-readable title, such as `Reading src/lib.rs`.
    pub title: Option<String>,
    /// Tool-specific metadata, such as the tail of a running command's output.
    pub metadata: Option<Value>,
}

/// What a tool knows about the call it is serving.
///
/// The host builds a `Context` for each call and hands it to settlement; the registry passes it
/// through untouched. Cloning is cheap: it is a reference-counted handle.
///
/// Be careful when:
/// - observing cancellation. A tool may stop early when [`Context::cancellation`] fires, but it
///   must not turn that into a [`ToolFailure`](crate::ToolFailure): settlement reports an
///   interrupted call as interrupted whatever the tool returns.
/// - sending progress. Updates are advisory and are dropped when the host's channel is full; never
///   put anything there that the final output does not also carry.
#[derive(Clone)]
pub struct Context {
    inner: Arc<ContextInner>,
    /// Set by settlement: where sub-calls settle and where their host-side outcomes are kept.
    /// Apart from the rest, so settling a call shares the host's identity and token.
    scope: Option<Arc<CallScope>>,
}

#[derive(Clone)]
struct ContextInner {
    identity: CallIdentity,
    cancellation: CancellationToken,
    progress: Option<mpsc::Sender<Progress>>,
    /// The trace this call continues: the host's, or the parent call's span for a sub-call.
    trace_parent: Option<TraceParent>,
    /// The span telemetry opened for this call, once it did.
    span: OnceLock<Arc<dyn CallSpan>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("identity", &self.inner.identity)
            .field("cancelled", &self.inner.cancellation.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// What settlement attaches to the context of a running call.
struct CallScope {
    /// The turn the call was settled in, when it has one.
    turn: Option<Arc<dyn SubSettle>>,
    /// Sub-calls that ended in an interruption or a defect.
    reports: Mutex<Vec<SubCallReport>>,
}

/// Why [`Context::settle_sub`] could not settle a sub-call. Nothing ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubCallError {
    /// The call was not settled through a turn, so there is none to settle sub-calls against.
    #[error("this call was not settled through a turn, so it cannot settle sub-calls")]
    NoTurn,
    /// The call is itself a sub-call; sub-calls do not nest.
    #[error("a sub-call cannot settle sub-calls of its own")]
    Nested,
}

impl Context {
    /// A context for one call, with its host-supplied identity and cancellation token.
    pub fn new(identity: CallIdentity, cancellation: CancellationToken) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                identity,
                cancellation,
                progress: None,
                trace_parent: None,
                span: OnceLock::new(),
            }),
            scope: None,
        }
    }

    /// The same context continuing the trace `parent` (the host's span, or the W3C
    /// `traceparent` a request carried): telemetry makes the call's span its child.
    pub fn with_trace_parent(self, parent: TraceParent) -> Self {
        let inner = Arc::unwrap_or_clone(self.inner);
        Self {
            inner: Arc::new(ContextInner {
                trace_parent: Some(parent),
                ..inner
            }),
            scope: self.scope,
        }
    }

    /// The trace context this call continues, when the host gave one (for a sub-call: its
    /// parent call's span).
    pub fn trace_parent(&self) -> Option<TraceParent> {
        self.inner.trace_parent
    }

    /// Attaches the span telemetry opened for this call. Only the first attach counts; returns
    /// false when a span was already attached.
    pub fn attach_span(&self, span: Arc<dyn CallSpan>) -> bool {
        self.inner.span.set(span).is_ok()
    }

    /// The span telemetry opened for this call, if any.
    pub fn span(&self) -> Option<&Arc<dyn CallSpan>> {
        self.inner.span.get()
    }

    /// The trace context to pass on to what this call starts (a command's `TRACEPARENT`, a
    /// sub-call): this call's span when telemetry opened one, else the trace it continues.
    pub fn trace_context(&self) -> Option<TraceParent> {
        self.span()
            .and_then(|span| span.context())
            .or(self.inner.trace_parent)
    }

    /// Records an event on this call's span; nothing when no span is open.
    pub fn span_event(
        &self,
        name: &'static str,
        attributes: impl FnOnce() -> Vec<(&'static str, String)>,
    ) {
        if let Some(span) = self.span() {
            span.event(name, attributes());
        }
    }

    /// The context settlement runs a call with: this one, with the call's own scope (`turn`
    /// for its sub-calls, and nothing reported yet).
    pub(crate) fn for_settlement(self, turn: Option<Arc<dyn SubSettle>>) -> Self {
        let scope = CallScope {
            turn,
            reports: Mutex::new(Vec::new()),
        };
        Self {
            inner: self.inner,
            scope: Some(Arc::new(scope)),
        }
    }

    /// The host-side outcomes of the sub-calls settled so far through this context.
    pub(crate) fn take_sub_reports(&self) -> Vec<SubCallReport> {
        match &self.scope {
            Some(scope) => std::mem::take(&mut *lock(&scope.reports)),
            None => Vec::new(),
        }
    }

    /// The turn this call was settled in, for the registry that settled it to downcast (the
    /// registry's `batch` reads the turn's advertised tools through it). `None` outside
    /// settlement. Settle sub-calls with [`Context::settle_sub`].
    pub fn turn(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        let turn = self.scope.as_ref()?.turn.as_ref()?;
        Some(turn.as_any())
    }

    /// Settles `call` as sub-call `index` (1-based) of this call, against the turn this call was
    /// settled in: the same captured registrations, so a name the turn did not advertise is
    /// unknown and a changed registration is stale, exactly as for a direct call.
    ///
    /// The sub-call's identity is this call's four host-supplied IDs plus `index`
    /// ([`CallIdentity::sub_call`]); its token is a child of this call's. It is bounded and
    /// journaled on its own. When it ends in an interruption or a defect, this call's settlement
    /// lists it in [`Settlement::sub_calls`](crate::Settlement) for the host; the tool should
    /// tell the model only a neutral line about it.
    pub async fn settle_sub(&self, index: u32, call: ToolCall) -> Result<Settlement, SubCallError> {
        if self.inner.identity.sub_call.is_some() {
            return Err(SubCallError::Nested);
        }
        let scope = self.scope.as_ref().ok_or(SubCallError::NoTurn)?;
        let turn = scope.turn.as_ref().ok_or(SubCallError::NoTurn)?;
        let cx = Context {
            inner: Arc::new(ContextInner {
                identity: self.inner.identity.sub_call(index),
                cancellation: self.inner.cancellation.child_token(),
                progress: self.inner.progress.clone(),
                trace_parent: self.trace_context(),
                span: OnceLock::new(),
            }),
            scope: None,
        };
        let settlement = turn.clone().settle(cx, call).await;
        if settlement.outcome.is_for_host() {
            lock(&scope.reports).push(SubCallReport {
                index,
                tool: settlement.tool.clone(),
                outcome: settlement.outcome.clone(),
            });
        }
        Ok(settlement)
    }

    /// The same context with a channel for live progress updates.
    pub fn with_progress(self, progress: mpsc::Sender<Progress>) -> Self {
        let inner = Arc::unwrap_or_clone(self.inner);
        Self {
            inner: Arc::new(ContextInner {
                progress: Some(progress),
                ..inner
            }),
            scope: self.scope,
        }
    }

    /// The full host-supplied identity of the call.
    pub fn identity(&self) -> &CallIdentity {
        &self.inner.identity
    }

    /// The session the call belongs to.
    pub fn session(&self) -> &SessionId {
        &self.inner.identity.session
    }

    /// The agent that made the call.
    pub fn agent(&self) -> &AgentId {
        &self.inner.identity.agent
    }

    /// The assistant message that contains the call.
    pub fn assistant_message(&self) -> &MessageId {
        &self.inner.identity.assistant_message
    }

    /// The provider's call ID.
    pub fn call(&self) -> &CallId {
        &self.inner.identity.call
    }

    /// The token that fires when the host interrupts this call.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancellation
    }

    /// True once the host has interrupted this call.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancellation.is_cancelled()
    }

    /// Sends a new title for the running call. Returns false when the update was dropped.
    pub fn set_title(&self, title: impl Into<String>) -> bool {
        self.send(Some(title.into()), None)
    }

    /// Sends new metadata for the running call. Returns false when the update was dropped.
    pub fn set_metadata(&self, metadata: Value) -> bool {
        self.send(None, Some(metadata))
    }

    fn send(&self, title: Option<String>, metadata: Option<Value>) -> bool {
        let Some(sender) = &self.inner.progress else {
            return false;
        };
        sender
            .try_send(Progress {
                call: self.inner.identity.call.clone(),
                title,
                metadata,
            })
            .is_ok()
    }
}
