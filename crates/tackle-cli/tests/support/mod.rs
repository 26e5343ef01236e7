//! What the MCP test binaries share: calling a tool from an rmcp client, reading a result's
//! text, and finding the URL a `tackle serve --http` announced.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::Child;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use tokio::sync::mpsc;

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

/// What a client that shows forms (MCP form elicitation) declares, named `name`.
pub(crate) fn form_client_info(name: &str) -> rmcp::model::ClientConfig {
    let mut elicitation = rmcp::model::ElicitationCapability::new();
    elicitation.form = Some(rmcp::model::FormElicitationCapability::new());
    let mut capabilities = rmcp::model::ClientCapabilities::default();
    capabilities.elicitation = Some(elicitation);
    rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new(name, "0"))
}

/// An MCP client with form elicitation whose person answers every form: `Some(choice)` accepts
/// it with that `decision`, `None` declines it. Each question and each `tools/list_changed` is reported.
pub(crate) struct Person {
    answer: Option<&'static str>,
    asked: mpsc::UnboundedSender<String>,
    changed: mpsc::UnboundedSender<()>,
}

impl Person {
    pub(crate) fn new(
        answer: Option<&'static str>,
    ) -> (
        Self,
        mpsc::UnboundedReceiver<String>,
        mpsc::UnboundedReceiver<()>,
    ) {
        let (asked, questions) = mpsc::unbounded_channel();
        let (changed, changes) = mpsc::unbounded_channel();
        let person = Self {
            answer,
            asked,
            changed,
        };
        (person, questions, changes)
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        form_client_info("person")
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request {
            let _ = self.asked.send(message);
        }
        use rmcp::model::{ElicitResult, ElicitationAction};
        Ok(match self.answer {
            Some(decision) => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = Some(json!({ "decision": decision }));
                result
            }
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
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

pub(crate) mod peers;

/// The Python with the MCP SDK (installed on first use), or `None` when `test` is skipped
/// because it cannot be had (see [`peers`]).
pub(crate) fn python(test: &str) -> Option<std::path::PathBuf> {
    peers::locate(peers::Peer::PythonSdk, test)
}

/// `tackle serve --http 127.0.0.1:0` on `root`, with `data` as its data directory and home and
/// `token` (if any) as the bearer token it requires, and the URL it announced.
pub(crate) fn serve_http(
    root: &std::path::Path,
    data: &std::path::Path,
    token: Option<&str>,
) -> (Child, String) {
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_tackle"))
        .arg("--root")
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("HOME", data)
        .env_remove("TACKLE_MODEL")
        .env_remove(tackle_mcp::DEPTH_ENV)
        .env_remove("TACKLE_SERVE_TOKEN")
        .envs(token.map(|t| ("TACKLE_SERVE_TOKEN", t)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn tackle serve --http");
    let url = announced_url(&mut server);
    (server, url)
}

/// A language server in Python that answers `initialize` only when told to, and never
/// publishes diagnostics.
pub(crate) const SILENT_SERVER: &str = r#"
import json, sys
answer = sys.argv[1] == "answers"
stdin = sys.stdin.buffer
while True:
    length = None
    while True:
        line = stdin.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    message = json.loads(stdin.read(length))
    if answer and message.get("method") == "initialize":
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {"textDocumentSync": 1}}}).encode()
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        sys.stdout.buffer.flush()
"#;

/// Whether `condition` holds within `limit`, checked every 50 ms (and once more at the end).
pub(crate) fn holds_within(
    limit: std::time::Duration,
    mut condition: impl FnMut() -> bool,
) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    condition()
}
