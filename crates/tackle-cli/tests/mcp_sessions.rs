//! `tackle serve` gives each MCP connection its own session: what one client read does not let
//! another edit, whether both talk to one server over HTTP or to two servers one after the
//! other; and the listing's annotations say which tools are read-only, destructive or reach an
//! open world.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmcp::model::CallToolResult;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::{announced_url, call, text};
use tempfile::TempDir;

/// One root and data directory, shared by every server of a test.
struct Project {
    root: TempDir,
    data: TempDir,
}

impl Project {
    fn new() -> Self {
        let project = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        std::fs::write(project.root.path().join("f.txt"), "one\ntwo\n").unwrap();
        project
    }

    /// `tackle --root <root> --data-dir <data> ARGS…`.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .args(args)
            .env("HOME", self.data.path())
            .env_remove("TACKLE_MODEL")
            .env_remove(tackle_mcp::DEPTH_ENV);
        command
    }

    /// A client of a fresh `tackle serve` over stdio.
    async fn stdio_client(&self) -> RunningService<RoleClient, ()> {
        let command = tokio::process::Command::from(self.command(&["serve", "--yes"]));
        let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
        ().serve(transport).await.expect("initialize")
    }

    /// `tackle serve --http` on a free port, and its URL.
    fn http_server(&self) -> (KillOnDrop, String) {
        let mut child = self
            .command(&["serve", "--yes", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tackle serve --http");
        let url = announced_url(&mut child);
        (KillOnDrop(child), url)
    }
}

/// Kills the server when the test ends, however it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn http_client(url: &str) -> RunningService<RoleClient, ()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    tokio::time::timeout(Duration::from_secs(20), ().serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize")
}

fn read_f(root: &Path) -> Value {
    json!({ "filePath": root.join("f.txt").to_string_lossy() })
}

fn edit_f(root: &Path, from: &str, to: &str) -> Value {
    json!({ "filePath": root.join("f.txt").to_string_lossy(), "oldString": from, "newString": to })
}

/// The session's read was required and missing: the edit was refused and nothing changed.
fn assert_refused_unread(result: &CallToolResult, project: &Project) {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(text(result).contains("not read"), "{}", text(result));
    let now = std::fs::read_to_string(project.root.path().join("f.txt")).unwrap();
    assert_eq!(now, "one\ntwo\n");
}

#[tokio::test]
async fn a_second_server_session_cannot_edit_what_only_the_first_read() {
    let project = Project::new();
    let root = project.root.path();
    let first = project.stdio_client().await;
    let read = call(&first, "read", read_f(root)).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    first.cancel().await.expect("close the first server");

    // Same root, same data directory (the journal holds read tracking), a new connection.
    let second = project.stdio_client().await;
    let edit = call(&second, "edit", edit_f(root, "one", "uno")).await;
    assert_refused_unread(&edit, &project);
    second.cancel().await.expect("close the second server");
}

#[tokio::test]
async fn a_second_http_client_cannot_edit_what_only_the_first_read() {
    let project = Project::new();
    let root = project.root.path();
    let (_server, url) = project.http_server();
    let first = http_client(&url).await;
    let second = http_client(&url).await;
    let read = call(&first, "read", read_f(root)).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");

    let edit = call(&second, "edit", edit_f(root, "one", "uno")).await;
    assert_refused_unread(&edit, &project);
    // The reader itself may edit.
    let edit = call(&first, "edit", edit_f(root, "one", "uno")).await;
    assert_eq!(edit.is_error, Some(false), "{edit:?}");
    let _ = first.cancel().await;
    let _ = second.cancel().await;
}

#[tokio::test]
async fn the_listing_says_which_tools_are_read_only_destructive_or_open_world() {
    let project = Project::new();
    // A configured MCP server: a tackle serving another root.
    let other = tempfile::tempdir().unwrap();
    let other_data = tempfile::tempdir().unwrap();
    let config = json!({ "mcp": { "far": {
        "command": env!("CARGO_BIN_EXE_tackle"),
        "args": ["--root", other.path(), "--data-dir", other_data.path(), "serve"],
    } } });
    std::fs::create_dir(project.root.path().join(".tackle")).unwrap();
    std::fs::write(
        project.root.path().join(".tackle/config.json"),
        config.to_string(),
    )
    .unwrap();
    let trust = project.command(&["trust"]).output().unwrap();
    assert!(trust.status.success());
    let client = project.stdio_client().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let hints = |name: &str| {
        let tool = tools
            .iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("`{name}` is listed"));
        let a = tool.annotations.clone().expect("annotations");
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    };
    let read_only_closed = (Some(true), Some(false), Some(true), Some(false));
    for name in ["read", "grep", "glob", "list"] {
        assert_eq!(hints(name), read_only_closed, "{name}");
    }
    for name in ["edit", "write", "multiedit"] {
        assert_eq!(
            hints(name),
            (Some(false), Some(true), Some(false), Some(false)),
            "{name}"
        );
    }
    assert_eq!(
        hints("bash"),
        (Some(false), Some(true), Some(false), Some(true))
    );
    assert_eq!(hints("webfetch").3, Some(true));
    assert_eq!(hints("far_read").3, Some(true), "MCP tools are open-world");
    client.cancel().await.expect("close");
}
