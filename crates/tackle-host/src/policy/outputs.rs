//! Whose saved outputs are whose: after every call, the managed outputs its result named are
//! recorded in its session's state, so `read`, `grep` and the `lsp` tool show a session its own
//! saved outputs and never another's (see `tackle_builtins::SessionOutputs`).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tackle_builtins::tools::managed_output_key;
use tackle_core::{Context, SessionState, Settlement, ToolFailure};
use tackle_registry::{CallDraft, Layer, Turn};

pub(crate) struct OutputOwnership {
    state: Arc<dyn SessionState>,
}

impl OutputOwnership {
    pub(crate) fn new(state: Arc<dyn SessionState>) -> Self {
        Self { state }
    }
}

impl Layer for OutputOwnership {
    fn before<'a>(
        &'a self,
        _turn: &'a Turn,
        _cx: &'a Context,
        _call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async { Ok(()) })
    }

    fn after<'a>(
        &'a self,
        _turn: &'a Turn,
        cx: &'a Context,
        settlement: &'a mut Settlement,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let session = cx.identity().session.as_str();
            for output in &settlement.managed {
                if let Err(error) =
                    self.state
                        .put(session, &managed_output_key(&output.id), Some("1"))
                {
                    tracing::warn!(%error, "recording a saved output's session failed");
                }
            }
        })
    }
}
