//! What the benches share: a host that settles calls to the built-in file and search tools.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tackle_builtins::{LocationFs, ToolEnv, file_tools, search_tools};
use tackle_core::{
    CallIdentity, CancellationToken, Context, Journal, JournalError, SettlementConfig,
    SettlementRecord,
};
use tackle_registry::{AllTools, Location, Registration, ToolCall, ToolRegistry, Turn};
use tackle_store::MemoryOutputStore;

/// Discards records: the journal's cost does not depend on the input size.
struct DiscardJournal;

impl Journal for DiscardJournal {
    fn record(
        &self,
        record: SettlementRecord,
    ) -> Pin<Box<dyn Future<Output = Result<(), JournalError>> + Send + 'static>> {
        drop(record);
        Box::pin(async { Ok(()) })
    }
}

/// A Location at `root` with the file and search tools registered, as a host has them.
pub(crate) struct Host {
    turn: Turn,
    _location: Location,
    _registrations: Vec<Registration>,
}

impl Host {
    /// The host of the Location at `root` (canonical).
    pub(crate) fn open(root: &Path) -> Self {
        let env = ToolEnv::new(LocationFs::new(root).expect("the Location fs"));
        let config =
            SettlementConfig::new(Arc::new(MemoryOutputStore::new()), Arc::new(DiscardJournal));
        let location = Location::new(root, &ToolRegistry::new(), config);
        let registrations = vec![
            location
                .register(file_tools(&env).into_iter().collect())
                .expect("register the file tools"),
            location
                .register(search_tools(&env).into_iter().collect())
                .expect("register the search tools"),
        ];
        Self {
            turn: location.materialize(AllTools),
            _location: location,
            _registrations: registrations,
        }
    }

    /// Settles one call and returns the text the model reads; panics on an error result.
    pub(crate) async fn call(&self, tool: &str, arguments: &Value) -> String {
        let cx = Context::new(
            CallIdentity::new("session-1", "build", "message-1", "call-1"),
            CancellationToken::new(),
        );
        let settlement = self
            .turn
            .settle(cx, ToolCall::new(tool, arguments.clone()))
            .await;
        let result = settlement
            .model_result()
            .unwrap_or_else(|| panic!("{tool}: no model result: {settlement:?}"));
        let text: String = result
            .content
            .iter()
            .filter_map(|part| part.as_text())
            .collect();
        assert!(!result.is_error, "{tool} failed: {text}");
        text
    }
}
