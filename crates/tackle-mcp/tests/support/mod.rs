//! What the server-side test binaries share: the echo tool's types, and calling a tool from an
//! rmcp client and reading its text.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::{Peer, RoleClient};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest any single wait in these tests may take.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

#[derive(Deserialize, JsonSchema)]
pub(crate) struct EchoInput {
    /// What to echo.
    pub(crate) text: String,
}

#[derive(Serialize, JsonSchema)]
pub(crate) struct EchoOutput {
    pub(crate) echoed: String,
    pub(crate) length: usize,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Empty {}

/// Calls `name` with `args` (a JSON object) and returns the result, within [`WAIT`].
pub(crate) async fn call(peer: &Peer<RoleClient>, name: &str, args: Value) -> CallToolResult {
    let Value::Object(arguments) = args else {
        panic!("arguments must be an object");
    };
    call_with(
        peer,
        CallToolRequestParams::new(name.to_owned()).with_arguments(arguments),
    )
    .await
}

/// Sends `params` as `tools/call` and returns the result, within [`WAIT`].
pub(crate) async fn call_with(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
) -> CallToolResult {
    match tokio::time::timeout(WAIT, peer.call_tool_once(params))
        .await
        .expect("an answer in time")
        .expect("a tools/call result")
    {
        CallToolResponse::Complete(result) => result,
        other => panic!("unexpected response: {other:?}"),
    }
}

/// The result's text blocks, joined by newlines.
pub(crate) fn texts(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
