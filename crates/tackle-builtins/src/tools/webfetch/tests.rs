//! Tests of webfetch against a local server.
//!
//! The test servers listen on loopback, a private address, so calls that should succeed run
//! under a gate that allows `webfetch_private`.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tackle_core::{AnyTool, CallIdentity, CancellationToken, Content, Context, InvocationOutcome};
use tackle_permission::{
    Approver, MemorySavedApprovals, PermissionRequest, PermissionService, Reply as Answer, Ruleset,
};

use super::test_server::{Reply, serve};
use super::{MAX_RESPONSE_BYTES, is_public};
use crate::fs::LocationFs;
use crate::gate::Gate;
use crate::tools::ToolEnv;

/// An approver that records every request and answers with `answer(permission)`.
pub(crate) struct Recorder {
    answer: Box<dyn Fn(&str) -> Answer + Send + Sync>,
    pub(crate) requests: Mutex<Vec<PermissionRequest>>,
    service: OnceLock<Weak<PermissionService>>,
}

impl Approver for Recorder {
    fn ask(&self, request: &PermissionRequest) {
        self.requests.lock().unwrap().push(request.clone());
        if let Some(service) = self.service.get().and_then(Weak::upgrade) {
            service
                .reply(&request.id, (self.answer)(&request.permission))
                .unwrap();
        }
    }
}

/// A gate asking everything (no rules) of a recorder answering with `answer`.
pub(crate) fn recording_gate(
    answer: impl Fn(&str) -> Answer + Send + Sync + 'static,
) -> (Gate, Arc<Recorder>) {
    let recorder = Arc::new(Recorder {
        answer: Box::new(answer),
        requests: Mutex::new(Vec::new()),
        service: OnceLock::new(),
    });
    let service = Arc::new(
        PermissionService::new("p", recorder.clone(), Arc::new(MemorySavedApprovals::new()))
            .unwrap(),
    );
    recorder
        .service
        .set(Arc::downgrade(&service))
        .unwrap_or_else(|_| unreachable!());
    (Gate::new(service, |_| Ruleset::new()), recorder)
}

pub(crate) fn cx() -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    )
}

/// The outcome of a call: `Ok(content)` or `Err(failure text)`.
pub(crate) async fn invoke(tool: &AnyTool, args: Value) -> Result<Vec<Content>, String> {
    match tool.invoke(args.to_string().into(), cx()).await.outcome {
        InvocationOutcome::Completed(output) => Ok(output.content),
        InvocationOutcome::Failed(failure) => Err(failure.to_string()),
        other => panic!("unexpected outcome {other:?}"),
    }
}

fn webfetch(gate: Gate) -> (AnyTool, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap()).with_gate(gate);
    (super::tool(&env), dir)
}

fn text(content: &[Content]) -> &str {
    content[0].as_text().unwrap()
}

const PAGE: &str = "<!doctype html><html><head><title>Page</title>\
<style>body { color: red }</style><script>alert('x')</script></head><body>\
<h1>Hello</h1><p>Some <b>bold</b> text.</p><ul><li>one</li><li>two</li></ul>\
<noscript>Enable JavaScript</noscript></body></html>";

#[tokio::test]
async fn markdown_is_the_default_format() {
    let server = serve(|_| Reply::ok("text/html; charset=utf-8", PAGE)).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let content = invoke(&tool, json!({"url": server.url("/page")}))
        .await
        .unwrap();
    let md = text(&content);
    assert!(md.starts_with("# Hello"), "{md}");
    assert!(md.contains("Some **bold** text."), "{md}");
    assert!(md.contains("- one") || md.contains("-   one"), "{md}");
    for hidden in ["alert", "color: red", "Enable JavaScript"] {
        assert!(!md.contains(hidden), "{hidden} in {md}");
    }
    // The request asked for Markdown first.
    let request = server.requests()[0].to_ascii_lowercase();
    assert!(request.contains("accept: text/markdown"), "{request}");
}

#[tokio::test]
async fn text_format_drops_scripts_and_styles() {
    let server = serve(|_| Reply::ok("text/html", PAGE)).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let content = invoke(&tool, json!({"url": server.url("/"), "format": "text"}))
        .await
        .unwrap();
    assert_eq!(text(&content), "Hello\nSome bold text.\none\ntwo");
}

#[tokio::test]
async fn html_format_returns_the_raw_page() {
    let server = serve(|_| Reply::ok("text/html", PAGE)).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let content = invoke(&tool, json!({"url": server.url("/"), "format": "html"}))
        .await
        .unwrap();
    assert_eq!(text(&content), PAGE);
}

#[tokio::test]
async fn plain_text_and_json_come_back_as_they_are() {
    let server = serve(|_| Reply::ok("application/json", r#"{"a": 1}"#)).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let content = invoke(&tool, json!({"url": server.url("/data.json")}))
        .await
        .unwrap();
    assert_eq!(text(&content), r#"{"a": 1}"#);
}

#[tokio::test]
async fn an_image_becomes_media_content() {
    let png: Vec<u8> = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRfake".to_vec();
    let body = png.clone();
    let server = serve(move |_| Reply::ok("image/png", body.clone())).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let content = invoke(&tool, json!({"url": server.url("/a.png")}))
        .await
        .unwrap();
    assert!(
        text(&content).starts_with("Image fetched successfully"),
        "{content:?}"
    );
    use base64::Engine as _;
    assert_eq!(
        content[1],
        Content::media(
            "image/png",
            base64::engine::general_purpose::STANDARD.encode(&png)
        )
    );
}

#[tokio::test]
async fn other_binary_content_is_refused_naming_its_type() {
    let server = serve(|_| Reply::ok("application/octet-stream", vec![0u8, 1, 2, 255])).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let error = invoke(&tool, json!({"url": server.url("/blob")}))
        .await
        .unwrap_err();
    assert!(error.contains("`application/octet-stream`"), "{error}");
}

#[tokio::test]
async fn an_error_status_is_reported_with_its_reason() {
    let server = serve(|_| Reply::with_status("404 Not Found", "text/html", "<p>gone</p>")).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let error = invoke(&tool, json!({"url": server.url("/missing")}))
        .await
        .unwrap_err();
    assert!(error.contains("HTTP 404 Not Found"), "{error}");
}

#[tokio::test]
async fn only_http_and_https_urls_are_fetched() {
    let (tool, _dir) = webfetch(Gate::allow_all());
    for url in ["ftp://example.com/a", "file:///etc/passwd", "example.com"] {
        let error = invoke(&tool, json!({"url": url})).await.unwrap_err();
        assert!(
            error.contains("URL must start with http:// or https://"),
            "{error}"
        );
    }
    let error = invoke(&tool, json!({"url": "http://user:secret@example.com/"}))
        .await
        .unwrap_err();
    assert!(error.contains("credentials"), "{error}");
    assert!(!error.contains("secret"), "{error}");
}

#[tokio::test]
async fn an_oversize_body_is_refused_while_streaming() {
    let chunk_size = 64 * 1024;
    let count = 6 * 1024 * 1024 / chunk_size;
    let server = serve(move |_| Reply::Slow {
        // No Content-Length: the size is known only by reading.
        head: b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n".to_vec(),
        chunk: vec![b'a'; chunk_size],
        count,
        delay: Duration::from_millis(20),
    })
    .await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let started = Instant::now();
    let error = invoke(&tool, json!({"url": server.url("/big")}))
        .await
        .unwrap_err();
    assert!(
        error.contains("5 MiB (5,242,880-byte) size limit"),
        "{error}"
    );
    assert!(error.contains("size limit"), "{error}");
    // Give the server a moment to notice the closed connection, then check it stopped early.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = server.sent.load(std::sync::atomic::Ordering::SeqCst);
    assert!(sent < (count * chunk_size) as u64, "sent {sent} bytes");
    assert!(
        sent >= MAX_RESPONSE_BYTES - chunk_size as u64,
        "sent {sent} bytes"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_declared_oversize_body_is_refused_before_reading() {
    let server = serve(|_| {
        Reply::Full(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 10000000\r\n\
              Connection: close\r\n\r\nabc"
                .to_vec(),
        )
    })
    .await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let error = invoke(&tool, json!({"url": server.url("/big")}))
        .await
        .unwrap_err();
    assert!(error.contains("size limit"), "{error}");
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let server = serve(|_| Reply::Hang).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let started = Instant::now();
    let error = invoke(&tool, json!({"url": server.url("/slow"), "timeout": 1}))
        .await
        .unwrap_err();
    assert!(error.contains("timed out after 1 second."), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_redirect_to_another_host_asks_again() {
    let port = Arc::new(OnceLock::<u16>::new());
    let p = port.clone();
    let server = serve(move |request| {
        if request.starts_with("GET /start ") {
            Reply::redirect(&format!("http://localhost:{}/end", p.get().unwrap()))
        } else {
            Reply::ok("text/plain", "arrived")
        }
    })
    .await;
    port.set(server.addr.port()).unwrap();
    let (gate, recorder) = recording_gate(|_| Answer::Once);
    let (tool, _dir) = webfetch(gate);
    let content = invoke(&tool, json!({"url": server.url("/start")}))
        .await
        .unwrap();
    assert_eq!(text(&content), "arrived");
    let requests = recorder.requests.lock().unwrap();
    let fetches: Vec<_> = requests
        .iter()
        .filter(|r| r.permission == "webfetch")
        .collect();
    assert_eq!(fetches.len(), 2, "{requests:?}");
    let end = format!("http://localhost:{}/end", server.addr.port());
    assert_eq!(fetches[1].patterns, vec![end]);
    assert_eq!(
        fetches[1].always,
        vec![format!("http://localhost:{}/*", server.addr.port())]
    );
    // Both hosts are on loopback, so each needed `webfetch_private` for its own host and port.
    let private: Vec<_> = requests
        .iter()
        .filter(|r| r.permission == "webfetch_private")
        .map(|r| r.patterns.clone())
        .collect();
    let port = server.addr.port();
    assert_eq!(
        private,
        vec![
            vec![format!("127.0.0.1:{port}")],
            vec![format!("localhost:{port}")]
        ]
    );
}

#[tokio::test]
async fn a_private_approval_covers_one_host_and_port() {
    let first = serve(|_| Reply::ok("text/plain", "first")).await;
    let second = serve(|_| Reply::ok("text/plain", "second")).await;
    let (gate, recorder) = recording_gate(|_| Answer::Always);
    let (tool, _dir) = webfetch(gate);
    let private_asks = || -> Vec<(Vec<String>, Vec<String>)> {
        recorder
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.permission == "webfetch_private")
            .map(|r| (r.patterns.clone(), r.always.clone()))
            .collect()
    };
    let first_port = format!("127.0.0.1:{}", first.addr.port());
    let second_port = format!("127.0.0.1:{}", second.addr.port());

    invoke(&tool, json!({"url": first.url("/")})).await.unwrap();
    invoke(&tool, json!({"url": first.url("/again")}))
        .await
        .unwrap();
    assert_eq!(
        private_asks(),
        vec![(vec![first_port.clone()], vec![first_port.clone()])],
        "the saved approval covers its own port"
    );
    let content = invoke(&tool, json!({"url": second.url("/")}))
        .await
        .unwrap();
    assert_eq!(text(&content), "second");
    assert_eq!(
        private_asks(),
        vec![
            (vec![first_port.clone()], vec![first_port]),
            (vec![second_port.clone()], vec![second_port])
        ],
        "another port on the same host is asked again"
    );
}

#[tokio::test]
async fn a_same_host_redirect_does_not_ask_again() {
    let server = serve(|request| {
        if request.starts_with("GET /old ") {
            Reply::redirect("/new")
        } else {
            Reply::ok("text/plain", "new")
        }
    })
    .await;
    let (gate, recorder) = recording_gate(|_| Answer::Once);
    let (tool, _dir) = webfetch(gate);
    let content = invoke(&tool, json!({"url": server.url("/old")}))
        .await
        .unwrap();
    assert_eq!(text(&content), "new");
    let permissions: Vec<String> = recorder
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.permission.clone())
        .collect();
    assert_eq!(permissions, ["webfetch", "webfetch_private"]);
}

#[tokio::test]
async fn too_many_redirects_are_refused() {
    let server = serve(|_| Reply::redirect("/again")).await;
    let (tool, _dir) = webfetch(Gate::allow_all());
    let error = invoke(&tool, json!({"url": server.url("/")}))
        .await
        .unwrap_err();
    assert!(error.contains("more than 10 times"), "{error}");
    assert_eq!(server.requests().len(), 11);
}

#[tokio::test]
async fn a_private_address_needs_webfetch_private() {
    let server = serve(|_| Reply::ok("text/plain", "internal secret")).await;
    let (gate, recorder) = recording_gate(|permission| match permission {
        "webfetch_private" => Answer::Reject { message: None },
        _ => Answer::Once,
    });
    let (tool, _dir) = webfetch(gate);
    let error = invoke(&tool, json!({"url": server.url("/admin")}))
        .await
        .unwrap_err();
    assert!(error.contains("`webfetch_private`"), "{error}");
    assert!(error.contains("127.0.0.1"), "{error}");
    assert!(!error.contains("internal secret"), "{error}");
    assert!(server.requests().is_empty(), "nothing was sent");
    let permissions: Vec<String> = recorder
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.permission.clone())
        .collect();
    assert_eq!(permissions, ["webfetch", "webfetch_private"]);
}

#[test]
fn special_addresses_are_not_public() {
    let private = [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "::1",
        "::",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a00:1",
    ];
    for ip in private {
        assert!(!is_public(ip.parse::<IpAddr>().unwrap()), "{ip}");
    }
    for ip in [
        "93.184.216.34",
        "1.1.1.1",
        "2606:4700::1111",
        "64:ff9b::101:101",
    ] {
        assert!(is_public(ip.parse::<IpAddr>().unwrap()), "{ip}");
    }
}
