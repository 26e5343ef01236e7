//! Tests of websearch against a local server speaking JSON and server-sent events.

use serde_json::{Value, json};
use tackle_core::AnyTool;
use tackle_permission::Reply as Answer;

use super::{WebSearchConfig, render};
use crate::fs::LocationFs;
use crate::gate::Gate;
use crate::tools::ToolEnv;
use crate::tools::webfetch::test_server::{Reply, serve};
use crate::tools::webfetch::tests::{invoke, recording_gate};

const KEY: &str = "sk-test-0123456789secret";

fn websearch(gate: Gate, config: WebSearchConfig) -> (AnyTool, tempfile::TempDir) {
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
async fn a_json_answer_is_rendered_and_the_key_sent_only_as_a_header() {
    let answer = result(&format!(
        "Title: Rust\nURL: https://rust-lang.org\nkey echo {KEY}"
    ));
    let server = serve(move |_| Reply::ok("application/json", answer.to_string())).await;
    let (gate, recorder) = recording_gate(|_| Answer::Once);
    let config = WebSearchConfig::new(server.url("/mcp")).with_api_key(KEY);
    let (tool, _dir) = websearch(gate, config);
    let content = invoke(
        &tool,
        json!({"query": "rust language", "numResults": 50, "type": "fast"}),
    )
    .await
    .unwrap();
    let text = content[0].as_text().unwrap();
    assert!(
        text.starts_with("Title: Rust\nURL: https://rust-lang.org"),
        "{text}"
    );
    assert!(!text.contains(KEY), "{text}");
    assert!(text.contains("[redacted]"), "{text}");

    let request = &server.requests()[0];
    assert!(request.starts_with("POST /mcp "), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains(&format!("x-api-key: {}", KEY.to_ascii_lowercase())),
        "{request}"
    );
    let body = request_body(request);
    assert_eq!(body["method"], "tools/call");
    assert_eq!(body["params"]["name"], "web_search_exa");
    assert_eq!(
        body["params"]["arguments"],
        json!({"query": "rust language", "numResults": 20, "type": "fast"})
    );
    assert!(!body.to_string().contains(KEY));

    let requests = recorder.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].permission, "websearch");
    assert_eq!(requests[0].patterns, ["rust language"]);
}

#[tokio::test]
async fn an_event_stream_answer_is_rendered() {
    let event = result("First result\n\nSecond result");
    let body = format!(
        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}}\n\n\
         event: message\ndata: {event}\n\n"
    );
    let server = serve(move |_| Reply::ok("text/event-stream", body.clone())).await;
    let config = WebSearchConfig::new(server.url("/mcp")).with_api_key(KEY);
    let (tool, _dir) = websearch(Gate::allow_all(), config);
    let content = invoke(&tool, json!({"query": "anything"})).await.unwrap();
    assert_eq!(
        content[0].as_text().unwrap(),
        "First result\n\nSecond result"
    );
    let body = request_body(&server.requests()[0]);
    assert_eq!(
        body["params"]["arguments"],
        json!({"query": "anything", "numResults": 8, "type": "auto"})
    );
}

#[tokio::test]
async fn an_error_status_names_the_status_and_never_the_key() {
    let server = serve(|request| {
        // A provider echoing the request's headers in its error.
        Reply::with_status("401 Unauthorized", "text/plain", request.to_owned())
    })
    .await;
    let config = WebSearchConfig::new(server.url("/mcp")).with_api_key(KEY);
    let (tool, _dir) = websearch(Gate::allow_all(), config);
    let error = invoke(&tool, json!({"query": "q"})).await.unwrap_err();
    assert!(error.contains("HTTP 401 Unauthorized"), "{error}");
    assert!(!error.contains(KEY), "{error}");
}

#[tokio::test]
async fn a_refused_search_sends_nothing() {
    let server = serve(|_| Reply::ok("application/json", result("x").to_string())).await;
    let (gate, _recorder) = recording_gate(|_| Answer::Reject { message: None });
    let (tool, _dir) = websearch(gate, WebSearchConfig::new(server.url("/mcp")));
    let error = invoke(&tool, json!({"query": "q"})).await.unwrap_err();
    assert!(error.contains("websearch"), "{error}");
    assert!(server.requests().is_empty());
}

#[test]
fn rpc_errors_and_empty_results_are_explained() {
    let error = render(
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"quota"}}"#,
        super::NO_RESULTS,
    )
    .unwrap_err();
    assert!(error.contains("quota"), "{error}");
    let empty = render(
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
        super::NO_RESULTS,
    )
    .unwrap();
    assert_eq!(
        empty,
        "No search results found. Please try a different query."
    );
    let failed = render(
        r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"bad type"}]}}"#,
        super::NO_RESULTS,
    )
    .unwrap_err();
    assert!(failed.contains("bad type"), "{failed}");
}

#[test]
fn the_key_is_not_in_the_debug_form() {
    let config = WebSearchConfig::new("https://example.com/mcp").with_api_key(KEY);
    assert!(!format!("{config:?}").contains(KEY));
}

#[test]
fn provider_lists_are_trimmed_and_reach_the_definition() {
    assert_eq!(
        super::parse_providers(" opencode, anthropic,, "),
        ["opencode", "anthropic"]
    );
    assert!(super::parse_providers(" , ").is_empty());

    let (open, _root) = websearch(Gate::allow_all(), WebSearchConfig::new("http://x"));
    assert!(open.definition().serves_provider(Some("openai")));
    let (limited, _root) = websearch(
        Gate::allow_all(),
        WebSearchConfig::new("http://x").with_providers(["opencode"]),
    );
    assert!(limited.definition().serves_provider(Some("opencode")));
    assert!(!limited.definition().serves_provider(Some("openai")));
    assert!(
        limited.definition().serves_provider(None),
        "no model chosen: offered"
    );
}
