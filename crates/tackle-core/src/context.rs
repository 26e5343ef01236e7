//! The invocation context every tool receives: identity, cancellation and live progress.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ids::{AgentId, CallId, CallIdentity, MessageId, SessionId};

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
#[derive(Clone, Debug)]
pub struct Context {
    inner: Arc<ContextInner>,
}

#[derive(Clone, Debug)]
struct ContextInner {
    identity: CallIdentity,
    cancellation: CancellationToken,
    progress: Option<mpsc::Sender<Progress>>,
}

impl Context {
    /// A context for one call, with its host-supplied identity and cancellation token.
    pub fn new(identity: CallIdentity, cancellation: CancellationToken) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                identity,
                cancellation,
                progress: None,
            }),
        }
    }

    /// The same context with a channel for live progress updates.
    pub fn with_progress(self, progress: mpsc::Sender<Progress>) -> Self {
        let inner = Arc::unwrap_or_clone(self.inner);
        Self {
            inner: Arc::new(ContextInner {
                progress: Some(progress),
                ..inner
            }),
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
