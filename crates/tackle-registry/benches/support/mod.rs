//! The echo fixture shared by the `settle` benchmark and the `settle_breakdown` example.

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{Journal, JournalError, SettlementRecord, ToolFailure};

/// About 100 bytes of input, echoed back as about 100 bytes of output.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub(crate) struct Echo {
    text: String,
    repeat: u32,
    tags: Vec<String>,
    loud: bool,
}

/// About 100 bytes of arguments for [`Echo`].
pub(crate) const ARGUMENTS: &str = r#"{"text":"the quick brown fox jumps over the lazy dog","repeat":3,"tags":["alpha","beta","gamma"],"loud":false}"#;

/// The tool body: returns its input.
pub(crate) async fn echo(input: Echo) -> Result<Echo, ToolFailure> {
    Ok(input)
}

/// Discards records, so measurements cover settlement rather than journal growth. The durable
/// journal has its own benchmark in tackle-store.
pub(crate) struct DiscardJournal;

impl Journal for DiscardJournal {
    fn record(&self, record: SettlementRecord) -> BoxFuture<'static, Result<(), JournalError>> {
        drop(record);
        Box::pin(async { Ok(()) })
    }
}
