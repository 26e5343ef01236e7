//! `tackle serve --http` against hostile clients, through the real binary on loopback: slow
//! headers are cut off, browser origins that are not loopback (or allowed) get 403, and with a
//! token every request without it gets 401 while real MCP clients that send it still work.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use support::{call, text};
use tempfile::TempDir;

/// A token long enough for the server to take.
const TOKEN: &str = "tok-0123456789abcdef0123456789";

/// A `tackle serve --http` child with its announced URL and everything it wrote to stderr.
struct Served {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
    _root: TempDir,
    _data: TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `tackle serve --http 127.0.0.1:0 ARGS…` with `env` set.
    fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let root = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.txt"), "served\n").unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(root.path())
            .arg("--data-dir")
            .arg(data.path())
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .env("HOME", data.path())
            .env_remove("TACKLE_MODEL")
            .env_remove("TACKLE_SERVE_TOKEN")
            .env_remove(tackle_mcp::DEPTH_ENV)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("spawn tackle serve --http");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let url = loop {
            let line = lines.next().expect("a line on stderr").unwrap();
            stderr.lock().unwrap().push_str(&line);
            if let Some(url) = line.split("at ").nth(1).filter(|u| u.starts_with("http")) {
                break url.trim().to_owned();
            }
        };
        let rest = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                rest.lock().unwrap().push_str(&line);
            }
        });
        Self {
            child,
            url,
            stderr,
            _root: root,
            _data: data,
        }
    }

    /// `127.0.0.1:PORT`.
    fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }

    /// The status of an MCP `initialize` POST with the extra `headers`, over raw TCP.
    fn initialize_status(&self, headers: &[(&str, &str)]) -> u16 {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}
        })
        .to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n",
            self.authority(),
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        let mut stream = TcpStream::connect(self.authority()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        // The status line is all this needs; an event stream may stay open after it.
        while !head.ends_with(b"\r\n") && head.len() < 1024 {
            match stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => break,
            }
        }
        let line = String::from_utf8_lossy(&head).into_owned();
        line.split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {line:?}"))
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// Sends a request's headers one byte every 2 s and returns how long until the server closed
/// the connection, or `None` if it was still open after 30 s.
fn slow_headers(authority: &str) -> Option<Duration> {
    let request = format!("POST /mcp HTTP/1.1\r\nHost: {authority}\r\nX-Slow: ");
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let started = Instant::now();
    let mut bytes = request.bytes().chain(std::iter::repeat(b'a'));
    let mut buffer = [0u8; 256];
    for _ in 0..15 {
        let byte = bytes.next().unwrap_or(b'a');
        if stream.write_all(&[byte]).is_err() {
            return Some(started.elapsed());
        }
        match stream.read(&mut buffer) {
            // Closed, or an answer (a timeout status) that precedes the close.
            Ok(_) => return Some(started.elapsed()),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(started.elapsed());
            }
            Err(_) => {}
        }
    }
    None
}

#[test]
fn serve_http_closes_connections_that_send_their_headers_slowly() {
    let served = Served::start(&[], &[]);
    let authority = served.authority();
    let clients: Vec<_> = (0..50)
        .map(|_| {
            let authority = authority.clone();
            std::thread::spawn(move || slow_headers(&authority))
        })
        .collect();
    let closed: Vec<Option<Duration>> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let open = closed.iter().filter(|c| c.is_none()).count();
    assert_eq!(
        open, 0,
        "{open} of 50 slow connections were still open after 30 s"
    );
    let latest = closed.iter().flatten().max().unwrap();
    let earliest = closed.iter().flatten().min().unwrap();
    assert!(
        *latest <= Duration::from_secs(14),
        "the last slow connection was closed after {latest:?}"
    );
    assert!(
        *earliest >= Duration::from_secs(8),
        "a slow connection was closed after only {earliest:?}"
    );
    // The server still answers.
    assert_eq!(served.initialize_status(&[]), 200);
}

#[test]
fn serve_http_refuses_browser_origins_that_are_not_loopback_or_allowed() {
    let served = Served::start(&["--allow-origin", "https://app.example.com"], &[]);
    let rows = [
        (None, 200),
        (Some("http://evil.example"), 403),
        (Some("http://localhost.evil.example:8080"), 403),
        (Some("null"), 403),
        (Some("http://localhost:5173"), 200),
        (Some("http://127.0.0.1:3000"), 200),
        (Some("https://app.example.com"), 200),
        (Some("https://app.example.com:8443"), 403),
    ];
    for (origin, want) in rows {
        let headers: Vec<(&str, &str)> = origin.iter().map(|o| ("Origin", *o)).collect();
        assert_eq!(served.initialize_status(&headers), want, "{origin:?}");
    }
}

#[test]
fn serve_http_with_a_token_file_refuses_requests_without_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let served = Served::start(&["--token-file", file.to_str().unwrap()], &[]);
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(served.initialize_status(&[]), 401);
    assert_eq!(
        served.initialize_status(&[("Authorization", "Bearer tok-0123456789abcdef0123456780")]),
        401
    );
    assert_eq!(served.initialize_status(&[("Authorization", TOKEN)]), 401);
    assert_eq!(served.initialize_status(&[("Authorization", &bearer)]), 200);
    // A bad origin is refused even with the token.
    assert_eq!(
        served.initialize_status(&[
            ("Authorization", &bearer),
            ("Origin", "http://evil.example")
        ]),
        403
    );
    assert!(!served.stderr().contains(TOKEN), "{}", served.stderr());
}

#[tokio::test]
async fn serve_http_with_a_token_from_the_environment_serves_clients_that_send_it() {
    // rmcp's HTTP client is built without a TLS crypto provider, like tackle's.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let served = Served::start(&["--yes"], &[("TACKLE_SERVE_TOKEN", TOKEN)]);
    assert_eq!(served.initialize_status(&[]), 401);
    let config =
        StreamableHttpClientTransportConfig::with_uri(served.url.clone()).auth_header(TOKEN);
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialize with the token");
    let read = call(&client, "read", json!({"filePath": "a.txt"})).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert!(text(&read).contains("served"), "{read:?}");
    // The token is not handed to the commands the server runs.
    let bash = call(
        &client,
        "bash",
        json!({"command": "echo \"[${TACKLE_SERVE_TOKEN:-}]\""}),
    )
    .await;
    assert!(text(&bash).contains("[]"), "{bash:?}");
    assert!(!text(&bash).contains(TOKEN), "{bash:?}");
    client.cancel().await.expect("close the client");
    // A client without it cannot even start.
    let config = StreamableHttpClientTransportConfig::with_uri(served.url.clone());
    let refused = ().serve(StreamableHttpClientTransport::from_config(config)).await;
    assert!(refused.is_err(), "a client without the token was served");
    assert!(!served.stderr().contains(TOKEN), "{}", served.stderr());
}

#[test]
fn serve_http_on_an_address_that_is_not_loopback_needs_a_token() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    // A documentation address (TEST-NET-1) that no interface has: the refusal comes before
    // any bind, and even a server that tried to bind could not listen beyond loopback.
    let mut server = Command::new(env!("CARGO_BIN_EXE_tackle"))
        .arg("--root")
        .arg(root.path())
        .arg("--data-dir")
        .arg(data.path())
        .args(["serve", "--http", "192.0.2.1:0"])
        .env("HOME", data.path())
        .env_remove("TACKLE_SERVE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = server.kill();
            let _ = server.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{stderr}");
    assert!(
        stderr.contains("not a loopback address")
            && stderr.contains("--token-file")
            && stderr.contains("TACKLE_SERVE_TOKEN"),
        "{stderr}"
    );
}
