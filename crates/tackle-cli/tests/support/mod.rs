//! What the MCP test binaries share: calling a tool from an rmcp client, reading a result's
//! text, and finding the URL a `tackle serve --http` announced.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::Child;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;

/// `value` as a JSON object; panics on anything else.
pub(crate) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

/// Calls `name` with `args` (a JSON object) and returns the result.
pub(crate) async fn call<C: ClientHandler>(
    client: &RunningService<RoleClient, C>,
    name: &str,
    args: Value,
) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(object(args)))
        .await
        .expect("a tools/call result")
}

/// The result's text blocks, joined by newlines.
pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The URL a `tackle serve --http` child (with stderr piped) announced; the rest of its stderr
/// is drained in the background so the server never blocks on it.
pub(crate) fn announced_url(server: &mut Child) -> String {
    let stderr = server.stderr.take().expect("stderr is piped");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines.next().expect("a line on stderr").unwrap();
        if let Some(url) = line.split("at ").nth(1).filter(|u| u.starts_with("http")) {
            break url.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    url
}
