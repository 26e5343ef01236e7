//! The MCP server end to end over an in-process duplex: listing, results, errors, cancellation
//! and `tools/list_changed`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use support::{EchoInput, EchoOutput, Empty, call, texts};
use tackle_core::{Tool, ToolFailure};
use tackle_mcp::{Serving, TackleServer, serve};
use tackle_registry::{AllTools, Location, Registration, SettlementConfig, ToolRegistry, ToolSet};
use tackle_store::{MemoryJournal, MemoryOutputStore};
use tokio::sync::mpsc;

/// What the slow tool reports to the test.
#[derive(Debug, PartialEq)]
enum SlowEvent {
    Started,
    Cancelled,
}

struct Fixture {
    location: Location,
    _tools: Registration,
    slow_events: mpsc::UnboundedReceiver<SlowEvent>,
}

fn fixture() -> Fixture {
    let location = Location::new(
        std::env::temp_dir(),
        &ToolRegistry::new(),
        SettlementConfig::new(
            Arc::new(MemoryOutputStore::new()),
            Arc::new(MemoryJournal::new()),
        ),
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
    let (events, slow_events) = mpsc::unbounded_channel();
    let slow = Tool::new("Waits until cancelled.", move |_: Empty, cx| {
        let events = events.clone();
        async move {
            let _ = events.send(SlowEvent::Started);
            cx.cancellation().cancelled().await;
            let _ = events.send(SlowEvent::Cancelled);
            Ok::<_, ToolFailure>("cancelled".to_owned())
        }
    });
    let tools = location
        .register(
            ToolSet::new()
                .with("echo", echo)
                .with("fail", fail)
                .with("slow", slow),
        )
        .expect("register the test tools");
    Fixture {
        location,
        _tools: tools,
        slow_events,
    }
}

/// A client that reports `tools/list_changed` notifications.
struct Client {
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

struct Connected {
    client: RunningService<RoleClient, Client>,
    serving: Serving,
    changed: mpsc::UnboundedReceiver<()>,
}

async fn connect(server: TackleServer) -> Connected {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server_task = tokio::spawn(async move { serve(server_io, server).await });
    let (changed_tx, changed) = mpsc::unbounded_channel();
    let client = Client {
        changed: changed_tx,
    }
    .serve(client_io)
    .await
    .expect("the client initializes");
    let serving = server_task
        .await
        .expect("the server task")
        .expect("the server initializes");
    Connected {
        client,
        serving,
        changed,
    }
}

#[tokio::test]
async fn initialize_advertises_tools_with_list_changed() {
    let fixture = fixture();
    let connected = connect(TackleServer::new(fixture.location.clone(), AllTools)).await;
    let info = connected.client.peer_info().expect("server info");
    let tools = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools.list_changed, Some(true));
    let name = info.server_info.as_ref().map(|server| server.name.as_str());
    assert_eq!(name, Some("tackle"));
}

#[tokio::test]
async fn list_carries_input_schemas_and_no_output_schemas() {
    let fixture = fixture();
    let connected = connect(TackleServer::new(fixture.location.clone(), AllTools)).await;
    let tools = connected.client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["echo", "fail", "slow"]);
    let echo = tools.iter().find(|tool| tool.name == "echo").expect("echo");
    assert_eq!(echo.description.as_deref(), Some("Echo the text back."));
    assert!(echo.input_schema["properties"].get("text").is_some());
    // A declared output schema would oblige every result to carry structured content, which
    // the output bound may leave out.
    assert!(tools.iter().all(|tool| tool.output_schema.is_none()));
}

#[tokio::test]
async fn filter_hides_tools() {
    let fixture = fixture();
    let server = TackleServer::new(fixture.location.clone(), |name: &str, _: &_| name != "slow");
    let connected = connect(server).await;
    let tools = connected.client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|tool| tool.name != "slow"));
    let result = call(connected.client.peer(), "slow", json!({})).await;
    assert_eq!(result.is_error, Some(true));
}

#[tokio::test]
async fn structured_only_output_keeps_its_structured_content_and_a_rendering_by_default() {
    let fixture = fixture();
    let connected = connect(TackleServer::new(fixture.location.clone(), AllTools)).await;
    let tools = connected.client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|tool| tool.output_schema.is_none()));
    let result = call(connected.client.peer(), "echo", json!({"text": "hi"})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"echoed": "hi", "length": 2}))
    );
    let text = texts(&result);
    assert!(text.contains("\"echoed\": \"hi\""), "{text}");
}

#[tokio::test]
async fn declared_structured_content_lists_output_schemas_and_sends_the_value() {
    let fixture = fixture();
    let server = TackleServer::new(fixture.location.clone(), AllTools)
        .with_structured_content(tackle_mcp::StructuredContent::Declared);
    let connected = connect(server).await;
    let tools = connected.client.list_all_tools().await.expect("tools/list");
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert!(echo.output_schema.is_some(), "{echo:?}");
    let result = call(connected.client.peer(), "echo", json!({"text": "hi"})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"echoed": "hi", "length": 2}))
    );
    assert!(texts(&result).contains("hi"));
}

#[tokio::test]
async fn failures_and_invalid_arguments_are_error_results() {
    let fixture = fixture();
    let connected = connect(TackleServer::new(fixture.location.clone(), AllTools)).await;
    let failed = call(connected.client.peer(), "fail", json!({})).await;
    assert_eq!(failed.is_error, Some(true));
    assert!(texts(&failed).contains("the disk is on fire"), "{failed:?}");
    assert!(failed.structured_content.is_none());

    let invalid = call(connected.client.peer(), "echo", json!({"text": 5})).await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(texts(&invalid).contains("text"), "{invalid:?}");
}

#[tokio::test]
async fn unknown_tool_is_an_error_result() {
    let fixture = fixture();
    let connected = connect(TackleServer::new(fixture.location.clone(), AllTools)).await;
    let result = call(connected.client.peer(), "ecko", json!({})).await;
    assert_eq!(result.is_error, Some(true));
    let text = texts(&result);
    assert!(text.contains("ecko"), "{text}");
}

#[tokio::test]
async fn cancelling_a_call_interrupts_the_tool_and_the_server_stays_up() {
    let mut fixture = fixture();
    let connected = connect(TackleServer::new(fixture.location.clone(), AllTools)).await;
    let peer = connected.client.peer().clone();
    let pending = tokio::spawn(async move { call(&peer, "slow", json!({})).await });
    let started = tokio::time::timeout(Duration::from_secs(10), fixture.slow_events.recv())
        .await
        .expect("the slow tool starts");
    assert_eq!(started, Some(SlowEvent::Started));
    // Dropping the request future sends `notifications/cancelled`.
    pending.abort();
    let cancelled = tokio::time::timeout(Duration::from_secs(10), fixture.slow_events.recv())
        .await
        .expect("the slow tool sees the cancellation");
    assert_eq!(cancelled, Some(SlowEvent::Cancelled));

    let result = call(
        connected.client.peer(),
        "echo",
        json!({"text": "still here"}),
    )
    .await;
    assert_eq!(result.is_error, Some(false));
}

#[tokio::test]
async fn host_triggers_tools_list_changed() {
    let fixture = fixture();
    let server = TackleServer::new(fixture.location.clone(), AllTools);
    let handle = server.clone();
    let mut connected = connect(server).await;
    let extra = fixture
        .location
        .register(ToolSet::new().with(
            "extra",
            Tool::new("One more.", |_: Empty, _cx| async move {
                Ok::<_, ToolFailure>(1)
            }),
        ))
        .expect("register extra");
    handle.notify_tools_changed().await;
    tokio::time::timeout(Duration::from_secs(10), connected.changed.recv())
        .await
        .expect("tools/list_changed arrives")
        .expect("the channel is open");
    let tools = connected.client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|tool| tool.name == "extra"));

    // The serving handle notifies too.
    drop(extra);
    connected.serving.notify_tools_changed().await;
    tokio::time::timeout(Duration::from_secs(10), connected.changed.recv())
        .await
        .expect("a second tools/list_changed arrives")
        .expect("the channel is open");
}

#[tokio::test]
async fn calls_from_an_outdated_listing_are_stale() {
    let fixture = fixture();
    let connected = connect(TackleServer::new(fixture.location.clone(), AllTools)).await;
    connected.client.list_all_tools().await.expect("tools/list");
    // Re-registering `echo` in the Location shadows the listed registration.
    let _shadow = fixture
        .location
        .register(ToolSet::new().with(
            "echo",
            Tool::new("A newer echo.", |input: EchoInput, _cx| async move {
                Ok::<_, ToolFailure>(input.text)
            }),
        ))
        .expect("register the newer echo");
    let stale = call(connected.client.peer(), "echo", json!({"text": "x"})).await;
    assert_eq!(stale.is_error, Some(true), "{stale:?}");
    connected.client.list_all_tools().await.expect("tools/list");
    let fresh = call(connected.client.peer(), "echo", json!({"text": "x"})).await;
    assert_eq!(fresh.is_error, Some(false), "{fresh:?}");
}

#[tokio::test]
async fn registry_changes_notify_the_client_once_per_burst() {
    let fixture = fixture();
    let server = TackleServer::new(fixture.location.clone(), AllTools);
    let watcher = server.notify_on(fixture.location.changes());
    let mut connected = connect(server).await;

    // Two registrations in a burst: one notification.
    let one = fixture
        .location
        .register(ToolSet::new().with(
            "one",
            Tool::new(
                "One.",
                |_: Empty, _cx| async move { Ok::<_, ToolFailure>(1) },
            ),
        ))
        .expect("register one");
    let two = fixture
        .location
        .register(ToolSet::new().with(
            "two",
            Tool::new(
                "Two.",
                |_: Empty, _cx| async move { Ok::<_, ToolFailure>(2) },
            ),
        ))
        .expect("register two");
    tokio::time::timeout(Duration::from_secs(10), connected.changed.recv())
        .await
        .expect("tools/list_changed arrives")
        .expect("the channel is open");
    let again = tokio::time::timeout(Duration::from_millis(300), connected.changed.recv()).await;
    assert!(again.is_err(), "one notification for the burst");
    let tools = connected.client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|tool| tool.name == "one"));
    assert!(tools.iter().any(|tool| tool.name == "two"));

    // A dropped registration is a change too.
    drop(one);
    tokio::time::timeout(Duration::from_secs(10), connected.changed.recv())
        .await
        .expect("tools/list_changed arrives after a drop")
        .expect("the channel is open");
    drop(two);
    watcher.abort();
}

#[tokio::test]
async fn a_panicking_tool_is_a_neutral_protocol_error_without_the_payload() {
    let fixture = fixture();
    let boom = Tool::new("Panics.", |_: Empty, _cx| async move {
        if std::hint::black_box(true) {
            panic!("secret-payload-1234");
        }
        Ok::<_, ToolFailure>(String::new())
    });
    let _boom = fixture
        .location
        .register(ToolSet::new().with("boom", boom))
        .expect("register boom");
    let connected = connect(TackleServer::new(fixture.location.clone(), AllTools)).await;
    let answer = connected
        .client
        .peer()
        .call_tool_once(rmcp::model::CallToolRequestParams::new("boom"))
        .await;
    let Err(rmcp::service::ServiceError::McpError(error)) = answer else {
        panic!("a protocol error, not {answer:?}");
    };
    assert_eq!(error.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
    assert!(!error.message.contains("secret-payload"), "{error:?}");
    assert!(!error.message.contains("panic"), "{error:?}");
    assert!(error.data.is_none(), "{error:?}");
    assert!(error.message.contains("`boom`"), "{error:?}");
    // The server goes on.
    let result = call(connected.client.peer(), "echo", json!({"text": "hi"})).await;
    assert_eq!(result.is_error, Some(false));
}

#[tokio::test]
async fn listed_tools_carry_hints_from_their_concurrency_class() {
    let fixture = fixture();
    let look = Tool::new("Reads.", |_: Empty, _cx| async move {
        Ok::<_, ToolFailure>(String::new())
    })
    .with_concurrency(tackle_core::Concurrency::ReadOnly);
    let put = Tool::new("Writes.", |_: Empty, _cx| async move {
        Ok::<_, ToolFailure>(String::new())
    })
    .with_concurrency(tackle_core::Concurrency::writes_paths("path"));
    let _more = fixture
        .location
        .register(ToolSet::new().with("look", look).with("put", put))
        .expect("register");
    // `echo` stays closed-world; everything else is open.
    let server = TackleServer::new(fixture.location.clone(), AllTools)
        .with_open_world(|name: &str, _: &_| name != "echo" && name != "look");
    let connected = connect(server).await;
    let tools = connected.client.list_all_tools().await.expect("tools/list");
    let hints = |name: &str| {
        let tool = tools.iter().find(|tool| tool.name == name).expect(name);
        let a = tool.annotations.clone().expect("annotations");
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    };
    assert_eq!(
        hints("look"),
        (Some(true), Some(false), Some(true), Some(false))
    );
    assert_eq!(
        hints("put"),
        (Some(false), Some(true), Some(false), Some(true))
    );
    // Exclusive by default: may change anything.
    assert_eq!(
        hints("echo"),
        (Some(false), Some(true), Some(false), Some(false))
    );
    assert_eq!(hints("slow").3, Some(true));
}
