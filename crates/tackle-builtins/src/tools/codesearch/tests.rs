//! Tests of codesearch against a local server speaking JSON and server-sent events.

use serde_json::{Value, json};
use tackle_core::{AnyTool, InvocationOutcome};
use tackle_permission::Reply as Answer;

use super::NOTHING_FOUND;
use crate::fs::LocationFs;
use crate::gate::Gate;
use crate::tools::ToolEnv;
use crate::tools::WebSearchConfig;
use crate::tools::webfetch::test_server::{Reply, serve};
use crate::tools::webfetch::tests::{invoke, recording_gate};

const KEY: &str = "sk-test-code-0123456789secret";

fn codesearch(gate: Gate, config: WebSearchConfig) -> (AnyTool, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap()).with_gate(gate);
    (super::tool(&env, config), dir)
}

fn result(text: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": text}]},
    })
}

/// The JSON body of a request the server received.
fn request_body(request: &str) -> Value {
    let body = request.split_once("\r\n\r\n").unwrap().1;
    serde_json::from_str(body).unwrap()
}

#[tokio::test]
async fn a_streamed_answer_is_rendered_and_the_code_tool_called_with_the_key_as_a_header() {
    let event = result(&format!(
        "## tokio::select!\n```rust\nselect! {{}}\n```\necho {KEY}"
    ));
    let body = format!("event: message\ndata: {event}\n\n");
    let server = serve(move |_| Reply::ok("text/event-stream", body.clone())).await;
    let (gate, recorder) = recording_gate(|_| Answer::Once);
    let config = WebSearchConfig::new(server.url("/mcp")).with_api_key(KEY);
    let (tool, _dir) = codesearch(gate, config);
    let content = invoke(
        &tool,
        json!({"query": "  tokio select with timeout ", "tokensNum": 2000}),
    )
    .await
    .unwrap();
    let text = content[0].as_text().unwrap();
    assert!(text.starts_with("## tokio::select!\n```rust"), "{text}");
    assert!(!text.contains(KEY), "{text}");

    let request = &server.requests()[0];
    assert!(
        request
            .to_ascii_lowercase()
            .contains(&format!("x-api-key: {}", KEY.to_ascii_lowercase())),
        "{request}"
    );
    let body = request_body(request);
    assert_eq!(body["method"], "tools/call");
    assert_eq!(body["params"]["name"], "get_code_context_exa");
    assert_eq!(
        body["params"]["arguments"],
        json!({"query": "tokio select with timeout", "tokensNum": 2000})
    );
    let requests = recorder.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].permission, "codesearch");
    assert_eq!(requests[0].patterns, ["tokio select with timeout"]);
}

#[tokio::test]
async fn tokens_default_to_five_thousand_and_an_empty_answer_says_what_to_try() {
    let server = serve(|_| {
        Reply::ok(
            "application/json",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}).to_string(),
        )
    })
    .await;
    let (tool, _dir) = codesearch(Gate::allow_all(), WebSearchConfig::new(server.url("/mcp")));
    let content = invoke(&tool, json!({"query": "serde flatten"}))
        .await
        .unwrap();
    assert_eq!(content[0].as_text().unwrap(), NOTHING_FOUND);
    let body = request_body(&server.requests()[0]);
    assert_eq!(body["params"]["arguments"]["tokensNum"], 5000);
}

#[tokio::test]
async fn tokens_outside_the_range_are_refused_before_anything_is_sent() {
    let server = serve(|_| Reply::ok("application/json", result("x").to_string())).await;
    let (tool, _dir) = codesearch(Gate::allow_all(), WebSearchConfig::new(server.url("/mcp")));
    for tokens in [0, 999, 50_001] {
        let args = json!({"query": "q", "tokensNum": tokens});
        let outcome = tool
            .invoke(args.to_string().into(), crate::tools::webfetch::tests::cx())
            .await
            .outcome;
        let InvocationOutcome::InvalidInput { message, .. } = outcome else {
            panic!("{tokens}: {outcome:?}");
        };
        assert!(message.contains("tokensNum"), "{message}");
    }
    for tokens in [1000, 50_000] {
        invoke(&tool, json!({"query": "q", "tokensNum": tokens}))
            .await
            .unwrap();
    }
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_error_status_never_shows_the_key_and_a_refusal_sends_nothing() {
    let server =
        serve(|request| Reply::with_status("403 Forbidden", "text/plain", request.to_owned()))
            .await;
    let config = WebSearchConfig::new(server.url("/mcp")).with_api_key(KEY);
    let (tool, _dir) = codesearch(Gate::allow_all(), config.clone());
    let error = invoke(&tool, json!({"query": "q"})).await.unwrap_err();
    assert!(error.contains("HTTP 403 Forbidden"), "{error}");
    assert!(!error.contains(KEY), "{error}");

    let (gate, _recorder) = recording_gate(|_| Answer::Reject { message: None });
    let (refused, _dir) = codesearch(gate, config);
    let error = invoke(&refused, json!({"query": "q"})).await.unwrap_err();
    assert!(error.contains("codesearch"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn it_is_offered_to_the_providers_websearch_is() {
    let (limited, _root) = codesearch(
        Gate::allow_all(),
        WebSearchConfig::new("http://x").with_providers(["opencode"]),
    );
    assert!(limited.definition().serves_provider(Some("opencode")));
    assert!(!limited.definition().serves_provider(Some("openai")));
}
