//! Telemetry end to end: the real `tackle` binary exports OTLP/HTTP JSON to a receiver inside
//! the test (loopback), which parses what arrives and checks the GenAI conventions' span per
//! call, the trace a request names, the `TRACEPARENT` a command sees, the metrics, that no
//! content leaves without opt-in, and that a dead collector costs no call and no journal row.

mod support;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::{call, object, text};
use tempfile::TempDir;

/// An OTLP/HTTP receiver on loopback that keeps every JSON body it is sent, by path.
struct Receiver {
    address: SocketAddr,
    received: Arc<Mutex<Vec<(String, String)>>>,
}

impl Receiver {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let store = received.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let store = store.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let store = store.clone();
                        async move {
                            let path = request.uri().path().to_owned();
                            let body = request.into_body().collect().await.unwrap().to_bytes();
                            let body = String::from_utf8_lossy(&body).into_owned();
                            store.lock().unwrap().push((path, body));
                            let reply = Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from_static(b"{}")))
                                .unwrap();
                            Ok::<_, Infallible>(reply)
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Self { address, received }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The raw bodies received at `path`.
    fn bodies(&self, path: &str) -> Vec<String> {
        let received = self.received.lock().unwrap();
        received
            .iter()
            .filter(|(at, _)| at == path)
            .map(|(_, body)| body.clone())
            .collect()
    }

    /// Every span received, flattened, with its resource's attributes.
    fn spans(&self) -> Vec<Span> {
        let mut spans = Vec::new();
        for body in self.bodies("/v1/traces") {
            let export: Value = serde_json::from_str(&body).expect("OTLP JSON");
            for resource_spans in array(&export["resourceSpans"]) {
                let resource = attributes(&resource_spans["resource"]["attributes"]);
                for scope in array(&resource_spans["scopeSpans"]) {
                    for span in array(&scope["spans"]) {
                        spans.push(Span::of(&span, resource.clone()));
                    }
                }
            }
        }
        spans
    }

    /// Every metric received: its name and its data points' attributes and counts or sums.
    fn metrics(&self) -> Vec<(String, Vec<Point>)> {
        let mut metrics = Vec::new();
        for body in self.bodies("/v1/metrics") {
            let export: Value = serde_json::from_str(&body).expect("OTLP JSON");
            for resource in array(&export["resourceMetrics"]) {
                for scope in array(&resource["scopeMetrics"]) {
                    for metric in array(&scope["metrics"]) {
                        let name = metric["name"].as_str().unwrap_or_default().to_owned();
                        let points = array(&metric["histogram"]["dataPoints"])
                            .iter()
                            .chain(array(&metric["sum"]["dataPoints"]).iter())
                            .map(|point| {
                                let value = number(&point["count"])
                                    .or_else(|| number(&point["asInt"]))
                                    .unwrap_or_default();
                                (attributes(&point["attributes"]), value)
                            })
                            .collect();
                        metrics.push((name, points));
                    }
                }
            }
        }
        metrics
    }

    /// Waits until `done` holds, at most 30 s.
    async fn wait_for(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "the receiver never got {what}; spans: {:#?}",
                self.spans()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A metric's data point: its attributes and its count (a histogram) or value (a sum).
type Point = (BTreeMap<String, Value>, f64);

/// One received span.
#[derive(Clone, Debug)]
struct Span {
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    status_code: i64,
    attributes: BTreeMap<String, Value>,
    events: Vec<(String, BTreeMap<String, Value>)>,
    resource: BTreeMap<String, Value>,
}

impl Span {
    fn of(span: &Value, resource: BTreeMap<String, Value>) -> Self {
        let field = |name: &str| span[name].as_str().unwrap_or_default().to_owned();
        Self {
            name: field("name"),
            trace_id: field("traceId"),
            span_id: field("spanId"),
            parent_span_id: field("parentSpanId"),
            status_code: span["status"]["code"].as_i64().unwrap_or_default(),
            attributes: attributes(&span["attributes"]),
            events: array(&span["events"])
                .iter()
                .map(|event| {
                    let name = event["name"].as_str().unwrap_or_default().to_owned();
                    (name, attributes(&event["attributes"]))
                })
                .collect(),
            resource,
        }
    }

    fn text(&self, key: &str) -> &str {
        self.attributes
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

fn array(value: &Value) -> Vec<Value> {
    value.as_array().cloned().unwrap_or_default()
}

fn number(value: &Value) -> Option<f64> {
    value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

/// OTLP JSON attributes (`[{key, value: {stringValue|intValue|boolValue|arrayValue}}]`) as plain
/// JSON values.
fn attributes(list: &Value) -> BTreeMap<String, Value> {
    fn plain(value: &Value) -> Value {
        if let Some(text) = value.get("stringValue") {
            return text.clone();
        }
        if let Some(int) = value.get("intValue") {
            return json!(number(int).unwrap_or_default() as i64);
        }
        if let Some(flag) = value.get("boolValue") {
            return flag.clone();
        }
        if let Some(values) = value.get("arrayValue") {
            return Value::Array(array(&values["values"]).iter().map(plain).collect());
        }
        Value::Null
    }
    array(list)
        .iter()
        .map(|kv| {
            let key = kv["key"].as_str().unwrap_or_default().to_owned();
            (key, plain(&kv["value"]))
        })
        .collect()
}

/// A workspace root and a private data directory.
struct Workspace {
    root: TempDir,
    data: TempDir,
}

impl Workspace {
    fn new() -> Self {
        let workspace = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(workspace.data.path().join("tmp")).unwrap();
        workspace
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.root.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// `tackle --root <root> --data-dir <data> ARGS…` with a private HOME and TMPDIR and no
    /// telemetry variables of the test's own environment.
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .args(args)
            .env("HOME", self.data.path())
            .env("TMPDIR", self.data.path().join("tmp"))
            .env_remove("TACKLE_MODEL")
            .env_remove("TRACEPARENT");
        for (name, _) in std::env::vars() {
            if name.starts_with("OTEL_") {
                command.env_remove(name);
            }
        }
        command
    }

    async fn serve(&self, command: tokio::process::Command) -> RunningService<RoleClient, ()> {
        let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
        ().serve(transport).await.expect("initialize")
    }

    /// The settlements the journal holds.
    fn journal_rows(&self) -> i64 {
        let path = self.data.path().join("journal.sqlite3");
        let db = rusqlite::Connection::open(path).unwrap();
        db.query_row("SELECT COUNT(*) FROM settlements", [], |row| row.get(0))
            .unwrap()
    }
}

const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";
/// Text that must never leave the machine unless content is opted in.
const SECRET_BODY: &str = "body-marker-7f3e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_a_genai_span_per_call_and_continues_the_request_trace() {
    let receiver = Receiver::start().await;
    let workspace = Workspace::new();
    let hello = workspace.write("hello.txt", &format!("{SECRET_BODY}\n"));
    let secret = workspace.write("secret.txt", "do not show\n");
    let missing = workspace.root.path().join("missing.txt");
    let missing = missing.to_string_lossy();
    let rules = workspace.data.path().join("rules.json");
    std::fs::write(&rules, r#"{"read": {"*": "allow", "*secret.txt": "deny"}}"#).unwrap();

    let mut command = workspace.command(&["--config", rules.to_str().unwrap(), "serve"]);
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_SERVICE_NAME", "tackle-e2e")
        .env("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let client = workspace.serve(command).await;

    let ok = call(&client, "read", json!({ "filePath": hello })).await;
    assert_eq!(ok.is_error, Some(false), "{ok:?}");
    let failed = call(&client, "read", json!({ "filePath": missing })).await;
    assert_eq!(failed.is_error, Some(true), "{failed:?}");
    let denied = call(&client, "read", json!({ "filePath": secret })).await;
    assert_eq!(denied.is_error, Some(true), "{denied:?}");
    let batch = call(
        &client,
        "batch",
        json!({ "tool_calls": [
            { "tool": "read", "parameters": { "filePath": hello } },
            { "tool": "read", "parameters": { "filePath": missing } },
        ] }),
    )
    .await;
    assert_eq!(batch.is_error, Some(false), "{batch:?}");
    let mut meta = RequestMetaObject::default();
    meta.set_traceparent(format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01"));
    let mut params = CallToolRequestParams::new("read").with_arguments(object(json!({
        "filePath": hello
    })));
    params.meta = Some(meta);
    let traced = client.call_tool(params).await.unwrap();
    assert_eq!(traced.is_error, Some(false), "{traced:?}");
    let shell = call(
        &client,
        "bash",
        json!({ "command": "echo \"tp=$TRACEPARENT\"" }),
    )
    .await;
    let shell_text = text(&shell);
    client.cancel().await.unwrap();

    receiver
        .wait_for("eight spans and the call metrics", |r| {
            r.spans().len() >= 8
                && r.metrics()
                    .iter()
                    .any(|(name, _)| name == "gen_ai.execute_tool.duration")
        })
        .await;
    let spans = receiver.spans();
    assert_eq!(spans.len(), 8, "{spans:#?}");

    // Every span follows the conventions and names its call, session and agent.
    for span in &spans {
        let tool = span.text("gen_ai.tool.name");
        assert_eq!(span.name, format!("execute_tool {tool}"), "{span:#?}");
        assert_eq!(span.text("gen_ai.operation.name"), "execute_tool");
        assert!(!span.text("gen_ai.tool.call.id").is_empty(), "{span:#?}");
        assert!(!span.text("gen_ai.conversation.id").is_empty(), "{span:#?}");
        assert_eq!(span.text("gen_ai.agent.name"), "build");
        assert_eq!(span.resource["service.name"], "tackle-e2e");
        assert_eq!(span.resource["deployment.environment"], "test");
        assert!(!span.attributes.contains_key("gen_ai.tool.call.arguments"));
        assert!(!span.attributes.contains_key("gen_ai.tool.call.result"));
    }
    // No file content left the machine.
    for body in receiver.bodies("/v1/traces") {
        assert!(!body.contains(SECRET_BODY), "content was exported: {body}");
    }

    let top_level = |outcome: &str| {
        spans
            .iter()
            .filter(|s| s.text("gen_ai.tool.name") == "read")
            .filter(|s| !s.attributes.contains_key("tackle.sub_call.index"))
            .filter(|s| s.trace_id != PARENT_TRACE)
            .filter(|s| s.text("tackle.outcome") == outcome)
            .cloned()
            .collect::<Vec<_>>()
    };
    let success = &top_level("success")[0];
    assert!(
        !success.attributes.contains_key("error.type"),
        "{success:#?}"
    );
    assert_eq!(success.status_code, 0, "{success:#?}");
    assert!(success.attributes["tackle.output.bytes_sent"].as_i64() > Some(0));
    assert_eq!(success.attributes["tackle.output.retained"], false);
    assert!(success.parent_span_id.is_empty(), "{success:#?}");

    let failures = top_level("failure");
    assert_eq!(failures.len(), 2, "{failures:#?}");
    for failure in &failures {
        assert_eq!(failure.text("error.type"), "failure", "{failure:#?}");
        assert_eq!(failure.status_code, 2, "an error status: {failure:#?}");
    }
    // Each read asked its permission: the missing file's was allowed, the secret's denied.
    let answers: Vec<(String, String)> = failures
        .iter()
        .flat_map(|span| span.events.iter())
        .filter(|(name, _)| name == "tackle.permission")
        .map(|(_, attributes)| {
            assert_eq!(attributes["tackle.permission.name"], "read");
            let patterns = attributes["tackle.permission.patterns"].as_str().unwrap();
            let answer = attributes["tackle.permission.answer"].as_str().unwrap();
            (patterns.to_owned(), answer.to_owned())
        })
        .collect();
    assert!(
        answers
            .iter()
            .any(|(patterns, answer)| patterns.contains("secret.txt") && answer == "denied_by_rule"),
        "{answers:?}"
    );
    assert!(
        answers
            .iter()
            .any(|(patterns, answer)| patterns.contains("missing.txt") && answer == "allowed"),
        "{answers:?}"
    );

    // The batch's sub-calls are its children, in its trace.
    let batch = spans
        .iter()
        .find(|s| s.text("gen_ai.tool.name") == "batch")
        .expect("the batch span");
    assert_eq!(batch.text("tackle.outcome"), "success");
    let mut children: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == batch.span_id)
        .collect();
    children.sort_by_key(|s| s.attributes["tackle.sub_call.index"].as_i64());
    assert_eq!(children.len(), 2, "{spans:#?}");
    for child in &children {
        assert_eq!(child.trace_id, batch.trace_id);
        assert_eq!(
            child.text("gen_ai.tool.call.id"),
            batch.text("gen_ai.tool.call.id")
        );
    }
    assert_eq!(children[0].text("tackle.outcome"), "success");
    assert_eq!(children[1].text("error.type"), "failure");

    // The call that carried `_meta.traceparent` is a span in that trace, under that span.
    let traced = spans
        .iter()
        .find(|s| s.trace_id == PARENT_TRACE)
        .expect("a span in the request's trace");
    assert_eq!(traced.parent_span_id, PARENT_SPAN);

    // The command saw its own call's span as TRACEPARENT.
    let bash = spans
        .iter()
        .find(|s| s.text("gen_ai.tool.name") == "bash")
        .expect("the bash span");
    let expected = format!("tp=00-{}-{}-01", bash.trace_id, bash.span_id);
    assert!(
        shell_text.contains(&expected),
        "{shell_text} lacks {expected}"
    );

    // Metrics: the duration histogram and the call counter, by tool and outcome.
    let metrics = receiver.metrics();
    let points = |name: &str| {
        metrics
            .iter()
            .filter(|(metric, _)| metric == name)
            .flat_map(|(_, points)| points.clone())
            .collect::<Vec<_>>()
    };
    let read_failures: f64 = points("gen_ai.execute_tool.duration")
        .iter()
        .filter(|(attributes, _)| {
            attributes["gen_ai.tool.name"] == "read"
                && attributes.get("error.type") == Some(&json!("failure"))
        })
        .map(|(_, count)| *count)
        .fold(0.0, f64::max);
    assert_eq!(read_failures, 3.0, "{metrics:#?}");
    let batch_calls: f64 = points("tackle.tool.calls")
        .iter()
        .filter(|(attributes, _)| attributes["gen_ai.tool.name"] == "batch")
        .map(|(_, count)| *count)
        .fold(0.0, f64::max);
    assert_eq!(batch_calls, 1.0, "{metrics:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_exports_its_span_from_the_configuration_and_continues_traceparent() {
    let receiver = Receiver::start().await;
    let workspace = Workspace::new();
    let hello = workspace.write("hello.txt", "hi\n");
    let config = workspace.data.path().join("config.json");
    let settings = json!({ "telemetry": {
        "endpoint": receiver.endpoint(),
        "protocol": "http/json",
        "serviceName": "from-config",
        "content": true,
    } });
    std::fs::write(&config, settings.to_string()).unwrap();
    let args = json!({ "filePath": hello }).to_string();
    let output = workspace
        .command(&["--config", config.to_str().unwrap(), "call", "read", &args])
        .env("TRACEPARENT", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01"))
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    // The process flushed before it exited.
    let spans = receiver.spans();
    assert_eq!(spans.len(), 1, "{spans:#?}");
    let span = &spans[0];
    assert_eq!(span.resource["service.name"], "from-config");
    assert_eq!(span.trace_id, PARENT_TRACE);
    assert_eq!(span.parent_span_id, PARENT_SPAN);
    // Opted in: the arguments and the result are on the span.
    assert!(
        span.text("gen_ai.tool.call.arguments")
            .contains("hello.txt")
    );
    assert!(span.text("gen_ai.tool.call.result").contains("hi"));
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_collector_fails_no_call_loses_no_journal_row_and_is_logged_once() {
    let workspace = Workspace::new();
    let hello = workspace.write("hello.txt", "hi\n");
    let log = workspace.data.path().join("serve.log");
    let mut command = workspace.command(&["--log-file", log.to_str().unwrap(), "serve"]);
    command
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", closed_port()),
        )
        .env("OTEL_BSP_SCHEDULE_DELAY", "20");
    let client = workspace.serve(command).await;
    const CALLS: i64 = 30;
    for i in 0..CALLS {
        let result = call(&client, "read", json!({ "filePath": hello })).await;
        assert_eq!(result.is_error, Some(false), "call {i}: {result:?}");
        // Spread over several export rounds, each of which fails.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client.cancel().await.unwrap();
    wait_for_stop(&log).await;
    assert_eq!(workspace.journal_rows(), CALLS);
    let log = std::fs::read_to_string(&log).unwrap();
    let reports = log.matches("telemetry: the collector did not take").count();
    assert_eq!(reports, 1, "{log}");
}

/// Waits until the server's log says it stopped (it flushed telemetry before that).
async fn wait_for_stop(log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains("tackle serve stopped") {
            return;
        }
        assert!(Instant::now() < deadline, "serve did not stop: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_over_http_continues_the_traceparent_header() {
    let receiver = Receiver::start().await;
    let workspace = Workspace::new();
    let hello = workspace.write("hello.txt", "hi\n");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
    command
        .arg("--root")
        .arg(workspace.root.path())
        .arg("--data-dir")
        .arg(workspace.data.path())
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("HOME", workspace.data.path())
        .env_remove("TACKLE_MODEL")
        .env_remove("TACKLE_SERVE_TOKEN")
        .env_remove(tackle_mcp::DEPTH_ENV)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut server = command.spawn().expect("spawn tackle serve --http");
    let url = support::announced_url(&mut server);

    let _ = rustls::crypto::ring::default_provider().install_default();
    let traceparent = format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01");
    let headers = std::collections::HashMap::from([(
        hyper::header::HeaderName::from_static("traceparent"),
        hyper::header::HeaderValue::from_str(&traceparent).unwrap(),
    )]);
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("initialize over HTTP");
    let result = call(&client, "read", json!({ "filePath": hello })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");

    receiver
        .wait_for("the call's span", |r| !r.spans().is_empty())
        .await;
    let _ = server.kill();
    let _ = server.wait();
    let spans = receiver.spans();
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(spans[0].trace_id, PARENT_TRACE);
    assert_eq!(spans[0].parent_span_id, PARENT_SPAN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_file_names_a_collector_only_once_trusted() {
    let receiver = Receiver::start().await;
    let workspace = Workspace::new();
    let hello = workspace.write("hello.txt", "hi\n");
    std::fs::create_dir(workspace.root.path().join(".tackle")).unwrap();
    let settings =
        json!({ "telemetry": { "endpoint": receiver.endpoint(), "protocol": "http/json" } });
    workspace.write(".tackle/config.json", &settings.to_string());
    let args = json!({ "filePath": hello }).to_string();

    let untrusted = workspace
        .command(&["call", "read", &args])
        .output()
        .await
        .unwrap();
    assert!(untrusted.status.success(), "{untrusted:?}");
    assert!(
        receiver.spans().is_empty(),
        "an untrusted project sent telemetry"
    );
    let check = workspace
        .command(&["config", "check"])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout).into_owned()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("telemetry"), "{said}");

    let trust = workspace.command(&["trust"]).output().await.unwrap();
    assert!(trust.status.success(), "{trust:?}");
    let trusted = workspace
        .command(&["call", "read", &args])
        .output()
        .await
        .unwrap();
    assert!(trusted.status.success(), "{trusted:?}");
    assert_eq!(receiver.spans().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_ends_its_span_as_interrupted() {
    let receiver = Receiver::start().await;
    let workspace = Workspace::new();
    let started = workspace.root.path().join("started");
    let mut command = workspace.command(&["serve"]);
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_BSP_SCHEDULE_DELAY", "50");
    let client = workspace.serve(command).await;
    let peer = client.peer().clone();
    let script = format!("touch '{}'; exec sleep 30", started.display());
    let pending = tokio::spawn(async move {
        peer.call_tool(
            CallToolRequestParams::new("bash").with_arguments(object(json!({ "command": script }))),
        )
        .await
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Dropping the request sends `notifications/cancelled`.
    pending.abort();
    receiver
        .wait_for("the cancelled call's span", |r| !r.spans().is_empty())
        .await;
    client.cancel().await.unwrap();
    let spans = receiver.spans();
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(spans[0].text("tackle.outcome"), "interrupted");
    assert_eq!(spans[0].text("error.type"), "interrupted");
    assert_eq!(spans[0].status_code, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_protocol_the_export_is_protobuf() {
    let receiver = Receiver::start().await;
    let workspace = Workspace::new();
    let hello = workspace.write("hello.txt", "hi\n");
    let args = json!({ "filePath": hello }).to_string();
    let output = workspace
        .command(&["call", "read", &args])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let bodies = receiver.bodies("/v1/traces");
    assert_eq!(bodies.len(), 1);
    assert!(!bodies[0].is_empty());
    assert!(
        serde_json::from_str::<Value>(&bodies[0]).is_err(),
        "JSON was sent"
    );
    // The tool's name is a string field of the protobuf message.
    assert!(bodies[0].contains("execute_tool read"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_setting_leaves_telemetry_off_says_why_and_the_call_runs() {
    let receiver = Receiver::start().await;
    let workspace = Workspace::new();
    let hello = workspace.write("hello.txt", "hi\n");
    let args = json!({ "filePath": hello }).to_string();
    let output = workspace
        .command(&["call", "read", &args])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("telemetry is off: OTEL_EXPORTER_OTLP_PROTOCOL is `grpc`")
            && stderr.contains("`http/protobuf` or `http/json`"),
        "{stderr}"
    );
    assert!(receiver.bodies("/v1/traces").is_empty());
}
