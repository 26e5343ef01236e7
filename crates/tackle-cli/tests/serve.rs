//! `tackle serve` end to end: an MCP client spawns the binary and talks to it over stdio.

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A workspace root and a private data directory for one server.
struct Sandbox {
    root: TempDir,
    data: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let sandbox = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(sandbox.data.path().join("tmp")).unwrap();
        sandbox
    }

    /// Spawns `tackle --root <root> --data-dir <data> serve` and initializes a client with it.
    async fn connect(&self) -> RunningService<RoleClient, ()> {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .arg("serve")
            .env("TMPDIR", self.data.path().join("tmp"));
        let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
        ().serve(transport).await.expect("initialize")
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.root.path().join(name), text).unwrap();
    }

    fn path(&self, name: &str) -> String {
        self.root.path().join(name).to_string_lossy().into_owned()
    }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(object(args)))
        .await
        .expect("a tools/call result")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn serve_lists_and_settles_builtin_tools_over_stdio() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\nworld\n");
    let client = sandbox.connect().await;

    let info = client.peer_info().expect("server info");
    let tools_capability = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools_capability.list_changed, Some(true));

    let tools = client.list_all_tools().await.expect("tools/list");
    let read = tools
        .iter()
        .find(|tool| tool.name == "read")
        .expect("`read` is listed");
    assert!(read.description.as_deref().is_some_and(|d| !d.is_empty()));
    assert!(read.input_schema.contains_key("properties"));

    let result = call(
        &client,
        "read",
        json!({ "filePath": sandbox.path("a.txt") }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let body = text(&result);
    assert!(body.contains("     1\thello\n     2\tworld"), "{body}");

    let bad = call(&client, "read", json!({ "filePath": 7 })).await;
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert!(text(&bad).contains("filePath"), "{bad:?}");

    let unknown = call(&client, "no_such_tool", json!({})).await;
    assert_eq!(unknown.is_error, Some(true), "{unknown:?}");

    // Closing stdin ends the server promptly.
    let started = Instant::now();
    client.cancel().await.expect("close the client");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn serve_refuses_permission_questions_without_yes() {
    let sandbox = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "x\n").unwrap();
    let client = sandbox.connect().await;
    // Reading outside the root asks; nobody can answer, so it is refused as an error result.
    let result = call(&client, "read", json!({ "filePath": path_str(&secret) })).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(text(&result).contains("--yes"), "{result:?}");
    client.cancel().await.expect("close the client");
}

fn path_str(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
