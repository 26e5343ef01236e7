//! A tiny MCP server over stdio, used only by tackle-mcp's client tests.
//!
//! Tools: `echo` (text plus `structuredContent`, with the request's `_meta.traceparent` when
//! it has one), `picture` (an image), `fail` (`isError`),
//! `broken` (an input schema no JSON Schema compiler accepts), `slow` (waits until
//! cancelled), `exit` (the process exits without answering), `seen` (the names of the tools
//! called so far, for tests that check a call never arrived) and `grow` (adds the tool `extra`,
//! removes `fail` and sends `tools/list_changed`). With the argument `--hang` the process never
//! answers `initialize`, for the startup-timeout test.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// One pixel of PNG, base64-encoded.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// The names of the tools called so far, `seen` excluded.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// True once `grow` was called: `extra` is listed and `fail` is not.
static GROWN: AtomicBool = AtomicBool::new(false);

struct Echo;

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("the test schemas are objects"),
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("tackle-mcp-echo", "0.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let text = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        });
        let empty = json!({"type": "object", "properties": {}});
        let mut tools = vec![
            Tool::new("echo", "Echo the text back.", schema(text)),
            Tool::new(
                "picture",
                "Return a one-pixel image.",
                schema(empty.clone()),
            ),
            Tool::new("broken", "Has a broken schema.", schema(json!({"type": 5}))),
            Tool::new("slow", "Waits until cancelled.", schema(empty.clone())),
            Tool::new("exit", "Exits the server process.", schema(empty.clone())),
            Tool::new(
                "seen",
                "Lists the tools called so far.",
                schema(empty.clone()),
            ),
            Tool::new("grow", "Changes the tool list.", schema(empty.clone())),
        ];
        if GROWN.load(Ordering::SeqCst) {
            tools.push(Tool::new("extra", "Added by grow.", schema(empty)));
        } else {
            tools.push(Tool::new("fail", "Always fails.", schema(empty)));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let seen = {
            let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
            if request.name != "seen" {
                seen.push(request.name.to_string());
            }
            seen.join(",")
        };
        let result = match request.name.as_ref() {
            "echo" => {
                let text = arguments
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(format!("echo: {text}"))]);
                let mut structured = json!({"echoed": text, "length": text.len()});
                // The trace context the client sent, for the test of its propagation.
                if let Some(traceparent) = context.meta.get_traceparent() {
                    structured["traceparent"] = json!(traceparent);
                }
                result.structured_content = Some(structured);
                result
            }
            "picture" => CallToolResult::success(vec![
                ContentBlock::text("a pixel"),
                ContentBlock::image(PIXEL, "image/png"),
            ]),
            "fail" => CallToolResult::error(vec![ContentBlock::text("the disk is on fire")]),
            "slow" => {
                context.ct.cancelled().await;
                eprintln!("tackle-mcp-echo: slow was cancelled");
                CallToolResult::success(vec![ContentBlock::text("cancelled")])
            }
            "exit" => std::process::exit(0),
            "seen" => CallToolResult::success(vec![ContentBlock::text(seen)]),
            "grow" => {
                GROWN.store(true, Ordering::SeqCst);
                if let Err(error) = context.peer.notify_tool_list_changed().await {
                    eprintln!("tackle-mcp-echo: cannot send tools/list_changed: {error}");
                }
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            "extra" => CallToolResult::success(vec![ContentBlock::text("extra")]),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named {other}"),
                    None,
                ));
            }
        };
        Ok(CallToolResponse::from(result))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::args().any(|argument| argument == "--hang") {
        std::future::pending::<()>().await;
    }
    let running = Echo
        .serve(rmcp::transport::stdio())
        .await
        .expect("the client initializes");
    let _ = running.waiting().await;
}
