//! Whose saved outputs are whose: after every call, the managed outputs its result named are
//! recorded in its session's state, so `read`, `grep` and the `lsp` tool show a session its own
//! saved outputs and never another's (see `tackle_builtins::SessionOutputs`); and each
//! session's list of them, which `tackle serve` offers as MCP resources (`crate::resources`).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tackle_builtins::tools::managed_output_key;
use tackle_core::{Context, SessionState, Settlement, ToolFailure};
use tackle_registry::{CallDraft, Layer, Turn};

use crate::warnings::Warnings;

pub(crate) struct OutputOwnership {
    state: Arc<dyn SessionState>,
    warnings: Warnings,
    /// Serializes this process's read-update-write of a session's list of saved outputs.
    index: std::sync::Mutex<()>,
}

impl OutputOwnership {
    pub(crate) fn new(state: Arc<dyn SessionState>, warnings: Warnings) -> Self {
        Self {
            state,
            warnings,
            index: std::sync::Mutex::new(()),
        }
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
            let _index = self
                .index
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for output in &settlement.managed {
                let recorded = self
                    .state
                    .put(session, &managed_output_key(&output.id), Some("1"))
                    .and_then(|()| index_output(&*self.state, session, output, settlement));
                if let Err(error) = recorded {
                    self.warnings.session(
                        session,
                        format!(
                            "the full output of call `{}` was saved, but recording that it is \
                             this session's failed ({error}), so `read` will refuse it",
                            settlement.identity.call
                        ),
                    );
                }
            }
        })
    }
}

/// The session-state key of a session's list of saved outputs, one per line, oldest first:
/// `<id>\t<bytes>\t<tool>\t<call>`.
pub(crate) const OUTPUT_INDEX_KEY: &str = "managed-outputs";

/// The most saved outputs a session's list keeps; older ones stay readable by their path and
/// URI, but are no longer listed.
pub(crate) const OUTPUT_INDEX_LIMIT: usize = 1000;

/// One saved output of a session's list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IndexedOutput {
    pub(crate) id: String,
    pub(crate) bytes: u64,
    pub(crate) tool: String,
    pub(crate) call: String,
}

/// The saved outputs listed for `session`, oldest first.
pub(crate) fn indexed_outputs(state: &dyn SessionState, session: &str) -> Vec<IndexedOutput> {
    let Ok(Some(index)) = state.get(session, OUTPUT_INDEX_KEY) else {
        return Vec::new();
    };
    index
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(4, '\t');
            Some(IndexedOutput {
                id: fields.next()?.to_owned(),
                bytes: fields.next()?.parse().ok()?,
                tool: fields.next()?.to_owned(),
                call: fields.next()?.to_owned(),
            })
        })
        .collect()
}

/// Adds `output` of `settlement` to `session`'s list (once), dropping the oldest past the limit.
fn index_output(
    state: &dyn SessionState,
    session: &str,
    output: &tackle_core::ManagedRef,
    settlement: &Settlement,
) -> Result<(), tackle_core::SessionStateError> {
    let mut listed = indexed_outputs(state, session);
    listed.retain(|known| known.id != output.id);
    listed.push(IndexedOutput {
        id: output.id.clone(),
        bytes: output.bytes,
        // Tabs and line ends cannot be in a name, but are kept out regardless.
        tool: settlement.tool.replace(['\t', '\n'], " "),
        call: settlement.identity.call.as_str().replace(['\t', '\n'], " "),
    });
    let skip = listed.len().saturating_sub(OUTPUT_INDEX_LIMIT);
    let index: Vec<String> = listed[skip..]
        .iter()
        .map(|o| format!("{}\t{}\t{}\t{}", o.id, o.bytes, o.tool, o.call))
        .collect();
    state.put(session, OUTPUT_INDEX_KEY, Some(&index.join("\n")))
}
