//! MCP over streamable HTTP end to end: a Location served with `serve_http` to rmcp's HTTP
//! client, and tackle's own client connecting to it, with headers, shutdown and reconnection.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::{EchoInput, EchoOutput, Empty, WAIT, call, texts};
use tackle_core::{CallIdentity, Context, Tool, ToolFailure};
use tackle_mcp::{
    ConnectError, ConnectOptions, HttpOptions, HttpServing, McpServerConfig, McpTransport,
    TackleServer, connect, serve_http, supervise,
};
use tackle_registry::{
    AllTools, Location, ModelErrorKind, Outcome, Registration, Settlement, SettlementConfig,
    ToolCall, ToolRegistry, ToolSet, Turn,
};
use tackle_store::{FsOutputStore, SqliteJournal};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A Location on disk (output store and journal in a temporary directory) holding `echo` and
/// `fail`.
struct Fixture {
    location: Location,
    _tools: Registration,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = FsOutputStore::new(dir.path().join("output")).expect("the output store");
    let journal = SqliteJournal::open(dir.path().join("journal.db")).expect("the journal");
    let location = Location::new(
        dir.path(),
        &ToolRegistry::new(),
        SettlementConfig::new(Arc::new(store), Arc::new(journal)),
    );
    let echo = Tool::new("Echo the text back.", |input: EchoInput, _cx| async move {
        Ok::<_, ToolFailure>(EchoOutput {
            length: input.text.len(),
            echoed: input.text,
        })
    });
    let fail = Tool::new("Always fails.", |_: Empty, _cx| async move {
        Err::<String, _>(ToolFailure::new("the disk is on fire"))
    });
    let tools = location
        .register(ToolSet::new().with("echo", echo).with("fail", fail))
        .expect("register the test tools");
    Fixture {
        location,
        _tools: tools,
        _dir: dir,
    }
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

async fn serve(fixture: &Fixture) -> HttpServing {
    serve_http(
        loopback(),
        TackleServer::new(fixture.location.clone(), AllTools),
        HttpOptions::default(),
    )
    .await
    .expect("serve on a free loopback port")
}

fn url(serving: &HttpServing) -> String {
    format!("http://{}/mcp", serving.local_addr())
}

/// rmcp's HTTP client is built without a TLS crypto provider, like tackle's.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// An rmcp client that reports `tools/list_changed` notifications.
struct Client {
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

async fn rmcp_client(
    url: &str,
) -> (
    RunningService<RoleClient, Client>,
    mpsc::UnboundedReceiver<()>,
) {
    install_crypto_provider();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let (changed_tx, changed) = mpsc::unbounded_channel();
    let client = tokio::time::timeout(
        WAIT,
        Client {
            changed: changed_tx,
        }
        .serve(transport),
    )
    .await
    .expect("initialize in time")
    .expect("the client initializes");
    (client, changed)
}

fn http_config(url: String, headers: BTreeMap<String, String>) -> McpServerConfig {
    McpServerConfig {
        name: "remote".to_owned(),
        transport: McpTransport::Http { url, headers },
    }
}

/// A location with nothing registered, for tackle's client side.
fn empty_location() -> Location {
    Location::new(
        std::env::temp_dir(),
        &ToolRegistry::new(),
        SettlementConfig::new(
            Arc::new(tackle_store::MemoryOutputStore::new()),
            Arc::new(tackle_store::MemoryJournal::new()),
        ),
    )
}

async fn settle(turn: &Turn, name: &str, arguments: Value) -> Settlement {
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", format!("call-{name}")),
        CancellationToken::new(),
    );
    tokio::time::timeout(WAIT, turn.settle(cx, ToolCall::new(name, arguments)))
        .await
        .expect("the call settles in time")
}

#[tokio::test]
async fn an_http_client_lists_calls_and_hears_list_changed() {
    let fixture = fixture();
    let serving = serve(&fixture).await;
    assert!(serving.local_addr().port() != 0);
    let (client, mut changed) = rmcp_client(&url(&serving)).await;

    let info = client.peer_info().expect("server info");
    let name = info.server_info.as_ref().map(|server| server.name.as_str());
    assert_eq!(name, Some("tackle"));
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["echo", "fail"]);

    let echo = call(client.peer(), "echo", json!({"text": "over http"})).await;
    assert_eq!(echo.is_error, Some(false), "{echo:?}");
    assert_eq!(
        echo.structured_content,
        Some(json!({"echoed": "over http", "length": 9}))
    );
    let unknown = call(client.peer(), "ecko", json!({})).await;
    assert_eq!(unknown.is_error, Some(true), "{unknown:?}");
    assert!(texts(&unknown).contains("ecko"), "{unknown:?}");
    let failed = call(client.peer(), "fail", json!({})).await;
    assert_eq!(failed.is_error, Some(true), "{failed:?}");
    assert!(texts(&failed).contains("the disk is on fire"), "{failed:?}");

    let _extra = fixture
        .location
        .register(ToolSet::new().with(
            "extra",
            Tool::new("One more.", |_: Empty, _cx| async move {
                Ok::<_, ToolFailure>(1)
            }),
        ))
        .expect("register extra");
    serving.server().notify_tools_changed().await;
    tokio::time::timeout(WAIT, changed.recv())
        .await
        .expect("tools/list_changed arrives over HTTP")
        .expect("the channel is open");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|tool| tool.name == "extra"));

    let _ = client.cancel().await;
    tokio::time::timeout(WAIT, serving.shutdown())
        .await
        .expect("the server shuts down in time");
}

#[tokio::test]
async fn tackle_connects_to_a_tackle_served_over_http_and_loses_it_on_shutdown() {
    let fixture = fixture();
    let serving = serve(&fixture).await;
    let remote = empty_location();
    let options = ConnectOptions::default().with_heartbeat(Duration::from_millis(100));
    let connection = connect(
        &http_config(url(&serving), BTreeMap::new()),
        &remote,
        &options,
    )
    .await
    .expect("tackle connects over HTTP");
    assert_eq!(connection.tools(), ["remote_echo", "remote_fail"]);
    assert_eq!(remote.tools().names(), ["remote_echo", "remote_fail"]);

    let turn = remote.materialize(AllTools);
    let echo = settle(&turn, "remote_echo", json!({"text": "hello"})).await;
    let Outcome::Success(output) = &echo.outcome else {
        panic!("echo failed: {:?}", echo.outcome);
    };
    assert_eq!(
        output.structured["structuredContent"],
        json!({"echoed": "hello", "length": 5})
    );
    let fail = settle(&turn, "remote_fail", json!({})).await;
    assert!(
        matches!(&fail.outcome, Outcome::Error(error) if error.text().contains("the disk is on fire")),
        "{:?}",
        fail.outcome
    );

    tokio::time::timeout(WAIT, serving.shutdown())
        .await
        .expect("the server shuts down in time");
    tokio::time::timeout(WAIT, connection.disconnected())
        .await
        .expect("the heartbeat notices the server is gone");
    assert!(!connection.is_connected());
    assert!(remote.tools().names().is_empty());
    let stale = settle(&turn, "remote_echo", json!({"text": "anyone?"})).await;
    assert!(
        matches!(&stale.outcome, Outcome::Error(error) if error.kind == ModelErrorKind::Stale),
        "{:?}",
        stale.outcome
    );
}

#[tokio::test]
async fn supervise_reconnects_when_the_http_server_comes_back() {
    let fixture = fixture();
    // Find a free port, then leave it empty: the first attempts fail.
    let port = std::net::TcpListener::bind(loopback())
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let remote = empty_location();
    let supervisor = supervise(
        http_config(format!("http://{addr}/mcp"), BTreeMap::new()),
        remote.clone(),
        ConnectOptions::default()
            .with_heartbeat(Duration::from_millis(100))
            .with_backoff(Duration::from_millis(50), Duration::from_millis(200)),
    );
    let failing = tokio::time::timeout(WAIT, supervisor.wait_for(|s| s.last_error.is_some()))
        .await
        .expect("a failed attempt");
    assert!(!failing.connected);

    let server = TackleServer::new(fixture.location.clone(), AllTools);
    let serving = serve_http(addr, server.clone(), HttpOptions::default())
        .await
        .expect("serve");
    let first = tokio::time::timeout(WAIT, supervisor.wait_for(|s| s.connected))
        .await
        .expect("the first connection");
    assert_eq!(first.tools, ["remote_echo", "remote_fail"]);

    serving.shutdown().await;
    tokio::time::timeout(WAIT, supervisor.wait_for(|s| !s.connected))
        .await
        .expect("the disconnection is noticed");
    assert!(remote.tools().names().is_empty());

    let serving = serve_http(addr, server, HttpOptions::default())
        .await
        .expect("serve again");
    let second = tokio::time::timeout(
        WAIT,
        supervisor.wait_for(|s| s.connected && s.connections == 2),
    )
    .await
    .expect("the reconnection");
    assert_eq!(second.tools, ["remote_echo", "remote_fail"]);
    let echo = settle(
        &remote.materialize(AllTools),
        "remote_echo",
        json!({"text": "again"}),
    )
    .await;
    assert!(
        matches!(echo.outcome, Outcome::Success(_)),
        "{:?}",
        echo.outcome
    );
    drop(supervisor);
    serving.shutdown().await;
}

/// Accepts one connection, returns the head of the first request it reads (lowercased), and
/// answers it with an error.
async fn capture_first_request(listener: tokio::net::TcpListener) -> String {
    let (mut stream, _) = listener.accept().await.expect("a connection");
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.expect("read the request");
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let _ = stream
        .write_all(
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        )
        .await;
    String::from_utf8_lossy(&head).to_ascii_lowercase()
}

#[tokio::test]
async fn configured_headers_and_the_bearer_token_are_sent() {
    let listener = tokio::net::TcpListener::bind(loopback())
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let captured = tokio::spawn(capture_first_request(listener));
    let headers = BTreeMap::from([
        ("Authorization".to_owned(), "Bearer s3cret-token".to_owned()),
        ("X-Team".to_owned(), "tools".to_owned()),
    ]);
    let error = connect(
        &http_config(format!("http://{addr}/mcp"), headers),
        &empty_location(),
        &ConnectOptions::default().with_startup_timeout(WAIT),
    )
    .await
    .expect_err("the stand-in server refuses the handshake");
    assert!(matches!(error, ConnectError::Initialize { .. }), "{error}");
    let head = tokio::time::timeout(WAIT, captured)
        .await
        .expect("the request arrives")
        .expect("the capture task");
    assert!(head.starts_with("post /mcp "), "{head}");
    assert!(head.contains("\r\nx-team: tools\r\n"), "{head}");
    // Exactly one authorization header, with the token as configured.
    assert_eq!(head.matches("\r\nauthorization:").count(), 1, "{head}");
    assert!(
        head.contains("\r\nauthorization: bearer s3cret-token\r\n"),
        "{head}"
    );
}

#[tokio::test]
async fn bad_headers_fail_with_an_error_naming_the_server_and_header() {
    let location = empty_location();
    let cases = [
        ("X-Bad", "line\nbreak", "value"),
        ("bad header", "x", "name"),
        ("Accept", "text/plain", "sets it itself"),
    ];
    for (name, value, reason) in cases {
        let headers = BTreeMap::from([(name.to_owned(), value.to_owned())]);
        // Nothing listens on port 9: a header problem must be found before connecting.
        let config = http_config("http://127.0.0.1:9/mcp".to_owned(), headers);
        let error = connect(&config, &location, &ConnectOptions::default())
            .await
            .expect_err("the header is refused");
        let ConnectError::Header { server, header, .. } = &error else {
            panic!("expected a header error for `{name}`: {error}");
        };
        assert_eq!(server, "remote");
        assert_eq!(header, name);
        let message = error.to_string();
        assert!(message.contains(reason), "{message}");
        assert!(
            !message.contains(value),
            "the value may be a secret: {message}"
        );
    }
    assert!(location.tools().names().is_empty());
}

#[tokio::test]
async fn serving_on_a_busy_address_names_the_address() {
    let fixture = fixture();
    let taken = tokio::net::TcpListener::bind(loopback())
        .await
        .expect("bind");
    let addr = taken.local_addr().expect("address");
    let error = serve_http(
        addr,
        TackleServer::new(fixture.location.clone(), AllTools),
        HttpOptions::default(),
    )
    .await
    .expect_err("the address is taken");
    assert!(error.to_string().contains(&addr.to_string()), "{error}");
}

#[tokio::test]
async fn each_http_session_settles_against_its_own_listing() {
    let fixture = fixture();
    let serving = serve(&fixture).await;
    let (first, _) = rmcp_client(&url(&serving)).await;
    first.list_all_tools().await.expect("tools/list");
    // A newer `echo` shadows the one the first client listed.
    let _shadow = fixture
        .location
        .register(ToolSet::new().with(
            "echo",
            Tool::new("A newer echo.", |input: EchoInput, _cx| async move {
                Ok::<_, ToolFailure>(input.text)
            }),
        ))
        .expect("register the newer echo");
    let (second, _) = rmcp_client(&url(&serving)).await;
    second.list_all_tools().await.expect("tools/list");
    let fresh = call(second.peer(), "echo", json!({"text": "x"})).await;
    assert_eq!(fresh.is_error, Some(false), "{fresh:?}");
    // The second client's listing did not refresh the first one's.
    let stale = call(first.peer(), "echo", json!({"text": "x"})).await;
    assert_eq!(stale.is_error, Some(true), "{stale:?}");
    let _ = first.cancel().await;
    let _ = second.cancel().await;
    serving.shutdown().await;
}

#[tokio::test]
async fn deleting_a_session_answers_no_content() {
    let fixture = fixture();
    let serving = serve(&fixture).await;
    install_crypto_provider();
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "reqwest", "version": "0"}
        }
    });
    let response = http
        .post(url(&serving))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize.to_string())
        .send()
        .await
        .expect("initialize");
    assert_eq!(response.status(), 200);
    let session = response
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_owned();
    let deleted = http
        .delete(url(&serving))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), 204);
    assert!(deleted.bytes().await.unwrap().is_empty());
    // The session is gone: a request in it is refused.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let after = http
        .post(url(&serving))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(list.to_string())
        .send()
        .await
        .expect("a request after the delete");
    assert_eq!(after.status(), 404);
    serving.shutdown().await;
}

/// A Location with `whoami`, which answers with its call's session and call ID.
fn whoami_location() -> (Location, Registration) {
    let location = empty_location();
    let whoami = Tool::new("Says who is calling.", |_: Empty, cx: Context| async move {
        Ok::<_, ToolFailure>(json!({
            "session": cx.session().as_str(),
            "call": cx.call().as_str(),
        }))
    });
    let tools = location
        .register(ToolSet::new().with("whoami", whoami))
        .expect("register whoami");
    (location, tools)
}

#[tokio::test]
async fn each_http_connection_is_its_own_session_which_ends_with_it() {
    let (location, _tools) = whoami_location();
    let (ended_tx, mut ended) = mpsc::unbounded_channel();
    let server = TackleServer::new(location, AllTools).with_session_end(move |session: &str| {
        let _ = ended_tx.send(session.to_owned());
    });
    let serving = serve_http(loopback(), server, HttpOptions::default())
        .await
        .expect("serve");
    let (first, _) = rmcp_client(&url(&serving)).await;
    let (second, _) = rmcp_client(&url(&serving)).await;
    let who = |result: rmcp::model::CallToolResult| result.structured_content.expect("structured");
    let a = who(call(first.peer(), "whoami", json!({})).await);
    let b = who(call(second.peer(), "whoami", json!({})).await);
    let a_again = who(call(first.peer(), "whoami", json!({})).await);
    assert_ne!(a["session"], b["session"], "{a} {b}");
    assert_eq!(a["session"], a_again["session"]);
    assert!(a["session"].as_str().unwrap().starts_with("mcp-"), "{a}");
    // Call IDs differ across connections even for the same request id.
    assert_ne!(a["call"], b["call"]);
    assert_ne!(a["call"], a_again["call"]);

    let _ = first.cancel().await;
    let first_session = tokio::time::timeout(WAIT, ended.recv())
        .await
        .expect("the first session ends in time")
        .expect("a session id");
    assert_eq!(json!(first_session), a["session"]);
    let _ = second.cancel().await;
    serving.shutdown().await;
}

#[tokio::test]
async fn a_pinned_session_is_shared_and_never_ended() {
    let (location, _tools) = whoami_location();
    let (ended_tx, mut ended) = mpsc::unbounded_channel::<String>();
    let server = TackleServer::new(location, AllTools)
        .with_session_end(move |session: &str| {
            let _ = ended_tx.send(session.to_owned());
        })
        .with_session("pinned");
    let serving = serve_http(loopback(), server, HttpOptions::default())
        .await
        .expect("serve");
    let (first, _) = rmcp_client(&url(&serving)).await;
    let (second, _) = rmcp_client(&url(&serving)).await;
    let a = call(first.peer(), "whoami", json!({})).await;
    let b = call(second.peer(), "whoami", json!({})).await;
    let (a, b) = (a.structured_content.unwrap(), b.structured_content.unwrap());
    assert_eq!(a["session"], "pinned");
    assert_eq!(b["session"], "pinned");
    assert_ne!(a["call"], b["call"]);
    let _ = first.cancel().await;
    let _ = second.cancel().await;
    serving.shutdown().await;
    assert!(ended.try_recv().is_err(), "a pinned session was ended");
}

/// Writes `bytes` to a fresh connection and returns how long until the server closed it, or
/// `None` when it stayed open for `limit`.
async fn closed_within(addr: SocketAddr, bytes: &[u8], limit: Duration) -> Option<Duration> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let started = std::time::Instant::now();
    let mut buffer = [0u8; 1024];
    tokio::time::timeout(limit, async {
        // Whatever comes back before the close is read and dropped.
        while matches!(stream.read(&mut buffer).await, Ok(n) if n > 0) {}
    })
    .await
    .ok()
    .map(|()| started.elapsed())
}

#[tokio::test]
async fn a_connection_that_stalls_mid_body_is_closed_after_the_idle_timeout() {
    let fixture = fixture();
    let options =
        HttpOptions::default().with_timeouts(Duration::from_secs(10), Duration::from_millis(500));
    let serving = serve_http(
        loopback(),
        TackleServer::new(fixture.location.clone(), AllTools),
        options,
    )
    .await
    .expect("serve");
    let addr = serving.local_addr();
    // Complete headers, then 5 of the 100 body bytes announced, then nothing.
    let stalled = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"a\":"
    );
    let closed = closed_within(addr, stalled.as_bytes(), Duration::from_secs(5)).await;
    let closed = closed.expect("a stalled connection was still open after 5 s");
    assert!(closed >= Duration::from_millis(400), "{closed:?}");
    // An open connection that never sends its headers is cut by the header timeout instead.
    let options =
        HttpOptions::default().with_timeouts(Duration::from_millis(500), Duration::from_secs(60));
    let serving = serve_http(
        loopback(),
        TackleServer::new(fixture.location.clone(), AllTools),
        options,
    )
    .await
    .expect("serve");
    let closed = closed_within(
        serving.local_addr(),
        b"POST /mcp HTTP/1.1\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(closed.is_some(), "slow headers were still open after 5 s");
}
