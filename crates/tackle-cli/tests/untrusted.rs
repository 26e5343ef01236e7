//! Untrusted content through the real binary: a deeply nested page fetched with `webfetch` is an
//! error result and the server goes on (`tackle serve`, `tackle call`), and `grep` never shows
//! what the read rules protect (`.env` asked by default, `*.env` denied by the user's
//! configuration, named as `path`, through a symlink, inside `batch`).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output};

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use support::{call, text};
use tempfile::TempDir;

/// A loopback HTTP server: `/deep/N` is a page of N nested `<div>`s, anything else a small page.
fn page_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request.split_whitespace().nth(1).unwrap_or("/");
                let body = match path.strip_prefix("/deep/") {
                    Some(depth) => {
                        let depth: usize = depth.parse().unwrap();
                        format!(
                            "<html><body>{}deep{}</body></html>",
                            "<div>".repeat(depth),
                            "</div>".repeat(depth)
                        )
                    }
                    None => "<html><body><h1>Small</h1><p>a page</p></body></html>".to_owned(),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    addr
}

/// A root and a data directory that is also `HOME`, so the user's configuration lives there.
struct Project {
    root: TempDir,
    data: TempDir,
}

impl Project {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes the user's own configuration (`~/.config/tackle/config.json`).
    fn user_config(&self, config: Value) {
        let dir = self.data.path().join(".config/tackle");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.root.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .env("HOME", self.data.path())
            .env_remove("TACKLE_MODEL")
            .env_remove(tackle_mcp::DEPTH_ENV)
            .stdin(std::process::Stdio::null());
        command
    }

    /// `tackle call NAME ARGS`: the output, and its stdout as text.
    fn call(&self, name: &str, args: Value) -> (Output, String) {
        let output = self
            .command()
            .args(["call", name, &args.to_string()])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        (output, stdout)
    }
}

/// The user allows fetching from loopback, as a person running a local server would.
fn allowing_loopback(project: &Project, addr: SocketAddr) {
    project.user_config(json!({"permission": {"webfetch_private": {
        format!("127.0.0.1:{}", addr.port()): "allow"
    }}}));
}

#[tokio::test]
async fn serve_survives_a_webfetch_of_100000_nested_elements() {
    let addr = page_server();
    let project = Project::new();
    allowing_loopback(&project, addr);
    project.write("notes.txt", "still here\n");
    let mut command = tokio::process::Command::from(project.command());
    command.arg("serve");
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");

    // 5,000 killed `tackle serve` by overflowing its stack; 100,000 also took quadratic time.
    for depth in [5_000, 20_000, 100_000] {
        let url = format!("http://{addr}/deep/{depth}");
        let result = call(&client, "webfetch", json!({"url": url})).await;
        assert_eq!(result.is_error, Some(true), "{depth}: {result:?}");
        let body = text(&result);
        assert!(
            body.contains("nests HTML elements more than 512 levels deep"),
            "{depth}: {body}"
        );
        assert!(body.contains("`format` set to `html`"), "{body}");
    }
    let read = call(&client, "read", json!({"filePath": "notes.txt"})).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert!(text(&read).contains("still here"));
    let small = call(
        &client,
        "webfetch",
        json!({"url": format!("http://{addr}/small")}),
    )
    .await;
    assert_eq!(small.is_error, Some(false), "{small:?}");
    assert!(text(&small).contains("# Small"), "{small:?}");
    // The raw page is still there for a model that needs it.
    let raw = call(
        &client,
        "webfetch",
        json!({"url": format!("http://{addr}/deep/5000"), "format": "html"}),
    )
    .await;
    assert_eq!(raw.is_error, Some(false), "{raw:?}");
    client.cancel().await.unwrap();
}

#[test]
fn call_survives_a_webfetch_of_20000_nested_elements() {
    let addr = page_server();
    let project = Project::new();
    allowing_loopback(&project, addr);
    for (depth, format) in [(20_000, "markdown"), (5_000, "text"), (20_000, "text")] {
        let url = format!("http://{addr}/deep/{depth}");
        let (output, stdout) = project.call("webfetch", json!({"url": url, "format": format}));
        assert_eq!(output.status.code(), Some(1), "{depth}: {output:?}");
        assert!(
            stdout.contains(&format!("deeper than webfetch converts to {format}")),
            "{stdout}"
        );
    }
    let (output, stdout) = project.call(
        "webfetch",
        json!({"url": format!("http://{addr}/deep/100")}),
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(stdout.trim(), "deep");
}

/// A project with a secret in `.env`, a link to it, and a public file.
fn secrets() -> Project {
    let project = Project::new();
    project.write(".env", "K=sk-live\n");
    project.write("config/prod.env", "K=sk-prod\n");
    project.write("app.txt", "K=public\n");
    std::os::unix::fs::symlink(".env", project.root.path().join("settings")).unwrap();
    project
}

fn assert_no_secret(stdout: &str) {
    assert!(!stdout.contains("sk-"), "{stdout}");
}

#[test]
fn grep_does_not_show_a_dot_env_that_read_would_ask_about() {
    let project = secrets();
    // The defaults ask before reading `.env` files, and nobody can be asked here.
    let (output, stdout) = project.call("read", json!({"filePath": ".env"}));
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_no_secret(&stdout);
    let (output, stdout) = project.call("grep", json!({"pattern": "K="}));
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert_no_secret(&stdout);
    assert!(stdout.contains("app.txt:"), "{stdout}");
    assert!(
        stdout.contains("(3 files were not searched because your permission rules deny"),
        "{stdout}"
    );
}

#[test]
fn grep_does_not_show_files_the_user_denies_reading() {
    let project = secrets();
    project.user_config(json!({"permission": {"read": {"*.env": "deny"}}}));
    for path in [
        None,
        Some(".env"),
        Some("settings"),
        Some("config/prod.env"),
        Some("config"),
    ] {
        let mut args = json!({"pattern": "K="});
        if let Some(path) = path {
            args["path"] = json!(path);
        }
        let (output, stdout) = project.call("grep", args);
        assert_eq!(output.status.code(), Some(0), "{path:?}: {stdout}");
        assert_no_secret(&stdout);
        assert!(stdout.contains("not searched"), "{path:?}: {stdout}");
    }
    // Named by absolute path, too.
    let absolute = project.root.path().join(".env");
    let (_, stdout) = project.call(
        "grep",
        json!({"pattern": "K=", "path": absolute.to_string_lossy()}),
    );
    assert_no_secret(&stdout);
}

#[test]
fn grep_inside_batch_does_not_show_denied_files() {
    let project = secrets();
    project.user_config(json!({"permission": {"read": {"*.env": "deny"}}}));
    let args = json!({"tool_calls": [
        {"tool": "grep", "parameters": {"pattern": "K="}},
        {"tool": "grep", "parameters": {"pattern": "K=", "path": ".env"}},
        {"tool": "grep", "parameters": {"pattern": "K=", "path": "settings"}},
    ]});
    let (output, stdout) = project.call("batch", args);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert_no_secret(&stdout);
    assert!(stdout.contains("K=public"), "{stdout}");
}
