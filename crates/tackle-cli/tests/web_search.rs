//! End-to-end tests of `websearch` and `codesearch` through the binary, against a scripted
//! loopback provider that answers with server-sent events.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use serde_json::{Value, json};

const KEY: &str = "sk-e2e-provider-key-0123456789";

/// A loopback provider: every request's JSON body is kept, and each answer is one SSE event
/// whose text names the called tool.
struct Provider {
    url: String,
    bodies: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Provider {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut headers = String::new();
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap();
                    }
                    headers.push_str(&line);
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let body: Value = serde_json::from_slice(&body).unwrap();
                let tool = body["params"]["name"].as_str().unwrap_or("").to_owned();
                seen.lock().unwrap().push((headers, body));
                let result = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [
                    {"type": "text", "text": format!("answer from {tool} (key {KEY})")}
                ]}});
                let events = format!(
                    "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}}\n\n\
                     event: message\ndata: {result}\n\n"
                );
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{events}",
                    events.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        Self { url, bodies }
    }
}

fn tackle(
    root: &tempfile::TempDir,
    data: &tempfile::TempDir,
    provider: Option<&Provider>,
) -> Command {
    let mut command = Command::cargo_bin("tackle").unwrap();
    command
        .arg("--root")
        .arg(root.path())
        .env("TACKLE_DATA_DIR", data.path())
        .env_remove("TACKLE_WEBSEARCH_URL")
        .env_remove("TACKLE_WEBSEARCH_KEY")
        .env_remove("TACKLE_WEBSEARCH_PROVIDERS")
        .write_stdin("");
    if let Some(provider) = provider {
        command
            .env("TACKLE_WEBSEARCH_URL", &provider.url)
            .env("TACKLE_WEBSEARCH_KEY", KEY);
    }
    command
}

/// The names `tackle tools` lists, one `name: description` a line.
fn tool_names(output: &std::process::Output) -> Vec<String> {
    assert_eq!(output.status.code(), Some(0));
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

#[test]
fn codesearch_calls_the_code_context_tool_and_shows_the_streamed_answer_without_the_key() {
    let (root, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let provider = Provider::start();
    let args = json!({"query": "axum router nesting", "tokensNum": 3000}).to_string();
    let output = tackle(&root, &data, Some(&provider))
        .args(["call", "codesearch", &args])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("answer from get_code_context_exa"),
        "{stdout}"
    );
    assert!(!stdout.contains(KEY), "{stdout}");

    let bodies = provider.bodies.lock().unwrap();
    let (headers, body) = &bodies[0];
    assert!(
        headers
            .to_ascii_lowercase()
            .contains(&format!("x-api-key: {KEY}")),
        "{headers}"
    );
    assert_eq!(body["params"]["name"], "get_code_context_exa");
    assert_eq!(
        body["params"]["arguments"],
        json!({"query": "axum router nesting", "tokensNum": 3000})
    );
}

#[test]
fn codesearch_refuses_tokens_outside_the_range_and_sends_nothing() {
    let (root, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let provider = Provider::start();
    let args = json!({"query": "q", "tokensNum": 60000}).to_string();
    let output = tackle(&root, &data, Some(&provider))
        .args(["call", "codesearch", &args])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("tokensNum"), "{stdout}");
    assert!(provider.bodies.lock().unwrap().is_empty());
}

#[test]
fn codesearch_is_offered_exactly_where_websearch_is() {
    let (root, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let provider = Provider::start();
    let unconfigured = tool_names(&tackle(&root, &data, None).arg("tools").output().unwrap());
    assert!(
        !unconfigured
            .iter()
            .any(|name| name == "websearch" || name == "codesearch"),
        "{unconfigured:?}"
    );
    let everyone = tool_names(
        &tackle(&root, &data, Some(&provider))
            .arg("tools")
            .output()
            .unwrap(),
    );
    assert!(
        everyone.iter().any(|name| name == "websearch")
            && everyone.iter().any(|name| name == "codesearch"),
        "{everyone:?}"
    );
    for (model, offered) in [("opencode/big-pickle", true), ("openai/gpt-5.1", false)] {
        let names = tool_names(
            &tackle(&root, &data, Some(&provider))
                .env("TACKLE_WEBSEARCH_PROVIDERS", "opencode")
                .args(["--model", model, "tools"])
                .output()
                .unwrap(),
        );
        for tool in ["websearch", "codesearch"] {
            assert_eq!(
                names.iter().any(|name| name == tool),
                offered,
                "{tool} for {model}: {names:?}"
            );
        }
    }
}
