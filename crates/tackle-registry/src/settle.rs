//! Settlement: resolve a call's name against its turn, then hand it to the core kernel
//! (`tackle_core::Settle`), which decodes, executes, encodes, projects, bounds and records it.

use std::any::Any;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tackle_core::{
    AnyTool, Context, ModelErrorKind, RegistrationId, Settle, Settlement, SubSettle, ToolCall,
    ToolDefinition, ToolFailure,
};
use tracing::Instrument;

use crate::layer::CallDraft;
use crate::suggest::nearest_names;
use crate::turn::{Turn, TurnInner};

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
    /// 2. Undo the turn's provider dialect, then decode, execute, encode, check and project,
    ///    through the tool's codecs.
    /// 3. Bound the model-facing output once, retaining the full output when it is cut.
    /// 4. Record the settlement in the journal, with the host's IDs verbatim, even when this
    ///    future is dropped after the tool started (then as interrupted).
    ///
    /// Interruption and defects are returned to the host, never as a tool result. Sub-calls the
    /// tool settles ([`Context::settle_sub`], as `batch` does) are judged against this same turn.
    pub async fn settle(&self, cx: Context, call: ToolCall) -> Settlement {
        let span = tracing::info_span!(
            "settle",
            tool = %call.name(),
            call = %cx.call(),
            outcome = tracing::field::Empty,
        );
        if span.is_disabled() {
            // No subscriber wants it: skip the per-poll enter and exit.
            return self.settle_inner(cx, call).await;
        }
        let settlement = self.settle_inner(cx, call).instrument(span.clone()).await;
        span.record("outcome", settlement.outcome.kind().as_str());
        settlement
    }

    async fn settle_inner(&self, cx: Context, call: ToolCall) -> Settlement {
        let layers = self.inner.layers.clone();
        if layers.is_empty() {
            return self
                .settle_call(cx, call, Vec::new(), Vec::new(), None)
                .await;
        }
        let mut draft = CallDraft::new(call);
        let mut stopped = None;
        for layer in layers.iter() {
            if let Err(failure) = layer.before(self, &cx, &mut draft).await {
                stopped = Some(failure);
                break;
            }
        }
        let (call, adjustments, notices) = draft.into_parts();
        let mut settlement = self
            .settle_call(cx.clone(), call, adjustments, notices, stopped)
            .await;
        for layer in layers.iter().rev() {
            layer.after(self, &cx, &mut settlement).await;
        }
        settlement
    }

    /// Settles a call after host policy: resolved and run, or stopped by a layer.
    ///
    /// Resolution happens here, before the future is returned; the kernel's future is boxed
    /// where it is made, so the futures around it stay small (every level of `async` nesting
    /// copies its child's whole state at least once per call).
    fn settle_call(
        &self,
        cx: Context,
        call: ToolCall,
        adjustments: Vec<String>,
        notices: Vec<String>,
        stopped: Option<ToolFailure>,
    ) -> BoxFuture<'_, Settlement> {
        let (name, arguments, limits) = call.into_parts();
        let inner = &*self.inner;
        let settle = Settle::begin(
            &inner.location.config,
            &inner.recovery,
            inner.dialect,
            &cx,
            name,
            limits,
        )
        .with_adjustments(adjustments)
        .with_notices(notices);
        match stopped {
            Some(failure) if failure.is_interruption() => {
                return Box::pin(settle.interrupt(failure.to_string()));
            }
            Some(failure) => {
                let message = failure.to_string();
                return Box::pin(settle.reject(ModelErrorKind::Refused, None, message));
            }
            None => {}
        }
        match self.resolve(settle.tool()) {
            Ok(Resolved {
                registration,
                tool,
                definition,
            }) => {
                let turn: Arc<dyn SubSettle> = self.inner.clone();
                Box::pin(settle.run(registration, tool, definition, arguments, cx, Some(turn)))
            }
            Err(unresolved) => Box::pin(settle.reject(
                unresolved.kind,
                unresolved.registration,
                unresolved.message,
            )),
        }
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
}

impl SubSettle for TurnInner {
    fn settle(self: Arc<Self>, cx: Context, call: ToolCall) -> BoxFuture<'static, Settlement> {
        let turn = Turn { inner: self };
        Box::pin(async move { turn.settle(cx, call).await })
    }

    fn as_any(&self) -> &(dyn Any + Send + Sync) {
        self
    }
}
