//! A scripted model on loopback for the real-host tests: the Anthropic Messages API or the
//! OpenAI Responses API, streamed as server-sent events like the real ones. Each request of the
//! agent loop gets the next scripted tool call (the step is the number of tool results the host
//! sends back), then a closing text; every request body is recorded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// The most bytes read from one request (headers and body).
const MAX_REQUEST_BYTES: usize = 32 << 20;

/// How long a connection may stay silent before it is dropped.
const IDLE: Duration = Duration::from_secs(30);

/// The wire protocol the host speaks to its model.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Api {
    /// Anthropic's Messages API (`POST /v1/messages`), as Claude Code calls it.
    Messages,
    /// OpenAI's Responses API (`POST /v1/responses`), as codex calls it.
    Responses,
}

/// One scripted tool call: a tackle tool's name and its arguments.
#[derive(Clone, Debug)]
pub(crate) struct ToolCall {
    pub(crate) name: &'static str,
    pub(crate) args: Value,
}

/// What the host sent back for one scripted call.
#[derive(Clone, Debug)]
pub(crate) struct ToolResult {
    /// The text blocks, in order, exactly as the model receives them.
    pub(crate) texts: Vec<String>,
    /// The error flag, where the API carries one.
    pub(crate) is_error: Option<bool>,
}

/// The server; it stops when dropped.
pub(crate) struct ScriptedModel {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<Value>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

/// What answers requests: the protocol, the MCP server's name as the host prefixes it, the script.
struct Script {
    api: Api,
    server: &'static str,
    calls: Vec<ToolCall>,
}

impl ScriptedModel {
    /// Serves `calls` over `api` on a free loopback port; `server` is the MCP server's name in
    /// the host's configuration (its tools reach the model as `mcp__<server>__<tool>`).
    pub(crate) fn start(api: Api, server: &'static str, calls: Vec<ToolCall>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let address = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(Script { api, server, calls });
        let acceptor = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (requests, script) = (requests.clone(), script.clone());
                    std::thread::spawn(move || serve_connection(stream, &script, &requests));
                }
            })
        };
        Self {
            address,
            requests,
            stop,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT`, without a path.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every request body received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The host's result for each scripted call it answered, by step; taken from the request
    /// that carried the most of them (each request repeats the conversation so far).
    pub(crate) fn tool_results(&self, api: Api) -> Vec<ToolResult> {
        self.requests()
            .iter()
            .map(|request| results_in(api, request))
            .max_by_key(Vec::len)
            .unwrap_or_default()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Answers one request on `stream`, then closes it.
fn serve_connection(stream: TcpStream, script: &Script, requests: &Mutex<Vec<Value>>) {
    let _ = stream.set_read_timeout(Some(IDLE));
    let _ = stream.set_write_timeout(Some(IDLE));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream.take(MAX_REQUEST_BYTES as u64));
    let Some((method, path, body)) = read_request(&mut reader) else {
        return;
    };
    let request: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|error| json!({ "unparsed": error.to_string() }));
    let wanted = method == "POST"
        && match script.api {
            Api::Messages => path.starts_with("/v1/messages") && !path.contains("count_tokens"),
            Api::Responses => path.starts_with("/v1/responses"),
        };
    if !wanted {
        let _ = writer
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    }
    requests.lock().unwrap().push(request.clone());
    let events = match script.api {
        Api::Messages => messages_events(script, &request),
        Api::Responses => responses_events(script, &request),
    };
    let body: String = events
        .iter()
        .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
        .collect();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = writer.write_all(head.as_bytes());
    let _ = writer.write_all(body.as_bytes());
    let _ = writer.flush();
}

/// The method, path and body of one HTTP/1.1 request (`Content-Length` or chunked).
fn read_request(reader: &mut impl BufRead) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let (mut length, mut chunked) = (0usize, false);
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).ok()?;
            let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length.min(MAX_REQUEST_BYTES), 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some((method, path, body))
}

/// The scripted call for this request: the next one when the request offers the server's
/// tools (an agent-loop turn), else none (the closing text, or a host's side request).
fn next_call(script: &Script, offers_tools: bool, answered: usize) -> Option<&ToolCall> {
    offers_tools.then(|| script.calls.get(answered)).flatten()
}

/// A Messages API stream: a `tool_use` block (its input split over two deltas) or a text block.
fn messages_events(script: &Script, request: &Value) -> Vec<(&'static str, Value)> {
    let prefix = format!("mcp__{}__", script.server);
    let offers_tools = request["tools"].as_array().is_some_and(|tools| {
        tools
            .iter()
            .any(|t| t["name"].as_str().is_some_and(|n| n.starts_with(&prefix)))
    });
    let answered = results_in(Api::Messages, request).len();
    let start = json!({
        "type": "message_start",
        "message": {
            "id": format!("msg_{answered}"), "type": "message", "role": "assistant",
            "model": request["model"], "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 1, "output_tokens": 1 }
        }
    });
    let (block, deltas, stop_reason) = match next_call(script, offers_tools, answered) {
        Some(call) => {
            let input = call.args.to_string();
            let (first, rest) = input.split_at(input.len() / 2);
            let deltas = [first, rest]
                .map(|part| json!({ "type": "input_json_delta", "partial_json": part }));
            let block = json!({
                "type": "tool_use", "id": format!("toolu_{answered}"),
                "name": format!("{prefix}{}", call.name), "input": {}
            });
            (block, deltas.to_vec(), "tool_use")
        }
        None => (
            json!({ "type": "text", "text": "" }),
            vec![json!({ "type": "text_delta", "text": "Done." })],
            "end_turn",
        ),
    };
    let mut events = vec![
        ("message_start", start),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": block }),
        ),
    ];
    for delta in deltas {
        events.push((
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": delta }),
        ));
    }
    events.extend([
        ("content_block_stop", json!({ "type": "content_block_stop", "index": 0 })),
        (
            "message_delta",
            json!({ "type": "message_delta", "delta": { "stop_reason": stop_reason, "stop_sequence": null }, "usage": { "output_tokens": 1 } }),
        ),
        ("message_stop", json!({ "type": "message_stop" })),
    ]);
    events
}

/// A Responses API stream: one output item (a `function_call` in the server's namespace, or an
/// assistant message), then `response.completed`.
fn responses_events(script: &Script, request: &Value) -> Vec<(&'static str, Value)> {
    let namespace = format!("mcp__{}", script.server);
    let offers_tools = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == namespace.as_str()));
    let answered = results_in(Api::Responses, request).len();
    let id = format!("resp_{answered}");
    let item = match next_call(script, offers_tools, answered) {
        Some(call) => json!({
            "type": "function_call", "id": format!("fc_{answered}"), "call_id": format!("call_{answered}"),
            "namespace": namespace, "name": call.name, "arguments": call.args.to_string(),
            "status": "completed"
        }),
        None => json!({
            "type": "message", "id": format!("msg_{answered}"), "role": "assistant", "status": "completed",
            "content": [{ "type": "output_text", "text": "Done.", "annotations": [] }]
        }),
    };
    vec![
        (
            "response.created",
            json!({ "type": "response.created", "response": { "id": id } }),
        ),
        (
            "response.output_item.added",
            json!({ "type": "response.output_item.added", "output_index": 0, "item": item }),
        ),
        (
            "response.output_item.done",
            json!({ "type": "response.output_item.done", "output_index": 0, "item": item }),
        ),
        (
            "response.completed",
            json!({ "type": "response.completed", "response": { "id": id, "usage": {
                "input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
                "output_tokens_details": null, "total_tokens": 2 } } }),
        ),
    ]
}

/// The tool results a request carries, in the order of the scripted calls.
fn results_in(api: Api, request: &Value) -> Vec<ToolResult> {
    let empty = Vec::new();
    match api {
        Api::Messages => request["messages"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter_map(|message| message["content"].as_array())
            .flatten()
            .filter(|block| block["type"] == "tool_result")
            .map(|block| ToolResult {
                texts: texts_of(&block["content"]),
                is_error: block["is_error"].as_bool(),
            })
            .collect(),
        Api::Responses => request["input"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter(|item| item["type"] == "function_call_output")
            .map(|item| ToolResult {
                texts: texts_of(&item["output"]),
                is_error: None,
            })
            .collect(),
    }
}

/// A result's text: a string, or the `text` of each block of an array.
fn texts_of(content: &Value) -> Vec<String> {
    match content {
        Value::String(text) => vec![text.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}
