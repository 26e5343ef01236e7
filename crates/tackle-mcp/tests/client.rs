//! The MCP client end to end: tackle connects to `tackle-mcp-echo` (a small stdio MCP server
//! built with this crate), registers its tools, settles calls through a Location turn, follows
//! the server's `tools/list_changed`, and loses the tools when the server goes away.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tackle_core::{CallIdentity, Content, Context, ToolFailure, TraceParent};
use tackle_mcp::{
    BeforeCall, ConnectError, ConnectOptions, McpServerConfig, McpTransport, connect, supervise,
};
use tackle_registry::{
    AllTools, Interruption, Location, ModelErrorKind, Outcome, Settlement, SettlementConfig,
    ToolCall, ToolRegistry, Turn,
};
use tackle_store::{MemoryJournal, MemoryOutputStore};
use tokio_util::sync::CancellationToken;

const ECHO: &str = env!("CARGO_BIN_EXE_tackle-mcp-echo");

fn location() -> Location {
    Location::new(
        std::env::temp_dir(),
        &ToolRegistry::new(),
        SettlementConfig::new(
            Arc::new(MemoryOutputStore::new()),
            Arc::new(MemoryJournal::new()),
        ),
    )
}

fn echo_server() -> McpServerConfig {
    McpServerConfig::stdio("echo", ECHO, Vec::<String>::new()).with_env("RUST_LOG", "off")
}

async fn settle(turn: &Turn, name: &str, arguments: Value) -> Settlement {
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", format!("call-{name}")),
        CancellationToken::new(),
    );
    turn.settle(cx, ToolCall::new(name, arguments)).await
}

/// Materializes turns until one advertises `name`, for at most 10 s.
async fn turn_with(location: &Location, name: &str) -> Turn {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let turn = location.materialize(AllTools);
            if turn.get(name).is_some() {
                return turn;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("`{name}` was never registered"))
}

/// The text of a successful settlement; panics, naming the outcome, on anything else.
fn success_text(settlement: &Settlement) -> String {
    let Outcome::Success(output) = &settlement.outcome else {
        panic!("`{}` failed: {:?}", settlement.tool, settlement.outcome);
    };
    text(&output.content)
}

fn text(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(Content::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_call_passes_its_trace_context_to_the_server_in_meta() {
    let location = location();
    let connection = connect(&echo_server(), &location, &ConnectOptions::default())
        .await
        .expect("the echo server connects");
    let turn = location.materialize(AllTools);
    let parent =
        TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", "traced"),
        CancellationToken::new(),
    )
    .with_trace_parent(parent);
    let traced = turn
        .settle(cx, ToolCall::new("echo_echo", json!({"text": "hi"})))
        .await;
    let Outcome::Success(output) = &traced.outcome else {
        panic!("echo failed: {:?}", traced.outcome);
    };
    assert_eq!(
        output.structured["structuredContent"]["traceparent"],
        json!(parent.to_string())
    );
    // A call without a trace sends none.
    let plain = settle(&turn, "echo_echo", json!({"text": "hi"})).await;
    let Outcome::Success(output) = &plain.outcome else {
        panic!("echo failed: {:?}", plain.outcome);
    };
    assert!(
        output.structured["structuredContent"]
            .get("traceparent")
            .is_none()
    );
    connection.close().await;
}

#[tokio::test]
async fn registers_the_server_tools_and_settles_calls_through_a_turn() {
    let location = location();
    let connection = connect(&echo_server(), &location, &ConnectOptions::default())
        .await
        .expect("the echo server connects");
    assert_eq!(
        connection.tools(),
        [
            "echo_echo",
            "echo_exit",
            "echo_fail",
            "echo_grow",
            "echo_picture",
            "echo_seen",
            "echo_slow"
        ]
    );
    assert_eq!(
        location.tools().names(),
        [
            "echo_echo",
            "echo_exit",
            "echo_fail",
            "echo_grow",
            "echo_picture",
            "echo_seen",
            "echo_slow"
        ]
    );

    let turn = location.materialize(AllTools);
    let echo = settle(&turn, "echo_echo", json!({"text": "hello"})).await;
    let Outcome::Success(output) = &echo.outcome else {
        panic!("echo failed: {:?}", echo.outcome);
    };
    assert_eq!(text(&output.content), "echo: hello");
    assert_eq!(
        output.structured["structuredContent"],
        json!({"echoed": "hello", "length": 5})
    );

    // The server's schema is enforced at the codec boundary: nothing reaches the server.
    let invalid = settle(&turn, "echo_echo", json!({})).await;
    let Outcome::Error(error) = &invalid.outcome else {
        panic!("expected invalid arguments: {:?}", invalid.outcome);
    };
    assert_eq!(error.kind, ModelErrorKind::Invalid);

    let picture = settle(&turn, "echo_picture", json!({})).await;
    let Outcome::Success(output) = &picture.outcome else {
        panic!("picture failed: {:?}", picture.outcome);
    };
    assert_eq!(output.content[0], Content::text("a pixel"));
    assert!(
        matches!(&output.content[1], Content::Media { mime_type, .. } if mime_type == "image/png"),
        "{:?}",
        output.content
    );

    let fail = settle(&turn, "echo_fail", json!({})).await;
    let Outcome::Error(error) = &fail.outcome else {
        panic!("expected a failure: {:?}", fail.outcome);
    };
    assert_eq!(error.kind, ModelErrorKind::Failed);
    assert!(
        error.text().contains("the disk is on fire"),
        "{}",
        error.text()
    );

    connection.close().await;
    assert!(location.tools().names().is_empty());
}

#[tokio::test]
async fn a_tool_with_a_broken_schema_is_skipped_with_a_warning() {
    let location = location();
    let connection = connect(&echo_server(), &location, &ConnectOptions::default())
        .await
        .expect("the echo server connects");
    assert!(!connection.tools().iter().any(|name| name == "echo_broken"));
    assert_eq!(
        connection.warnings().len(),
        1,
        "{:?}",
        connection.warnings()
    );
    assert!(
        connection.warnings()[0].contains("`broken`"),
        "{:?}",
        connection.warnings()
    );
    let turn = location.materialize(AllTools);
    assert!(turn.get("echo_broken").is_none());
    let echo = settle(&turn, "echo_echo", json!({"text": "still here"})).await;
    assert!(
        matches!(echo.outcome, Outcome::Success(_)),
        "{:?}",
        echo.outcome
    );
}

#[tokio::test]
async fn when_the_server_exits_its_tools_disappear_and_old_turns_are_stale() {
    let location = location();
    let connection = connect(&echo_server(), &location, &ConnectOptions::default())
        .await
        .expect("the echo server connects");
    let turn = location.materialize(AllTools);
    assert!(turn.get("echo_echo").is_some());

    // The server process exits without answering: the call was interrupted by the lost
    // connection, which the host sees and the model does not read as the tool's answer.
    let exit = settle(&turn, "echo_exit", json!({})).await;
    assert!(
        matches!(&exit.outcome, Outcome::Interrupted(Interruption::Reported(reason)) if reason.contains("was lost")),
        "{:?}",
        exit.outcome
    );
    assert!(exit.model_result().is_none());
    tokio::time::timeout(Duration::from_secs(10), connection.disconnected())
        .await
        .expect("the disconnection is noticed");
    assert!(!connection.is_connected());
    assert!(location.tools().names().is_empty());

    let stale = settle(&turn, "echo_echo", json!({"text": "anyone?"})).await;
    let Outcome::Error(error) = &stale.outcome else {
        panic!("expected a stale call: {:?}", stale.outcome);
    };
    assert_eq!(error.kind, ModelErrorKind::Stale);
    assert!(location.materialize(AllTools).get("echo_echo").is_none());
}

#[tokio::test]
async fn cancelling_a_call_interrupts_it() {
    let location = location();
    let connection = connect(&echo_server(), &location, &ConnectOptions::default())
        .await
        .expect("the echo server connects");
    let turn = location.materialize(AllTools);
    let cancel = CancellationToken::new();
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", "call-slow"),
        cancel.clone(),
    );
    let call =
        tokio::spawn(async move { turn.settle(cx, ToolCall::new("echo_slow", json!({}))).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    cancel.cancel();
    let settled = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the cancelled call settles")
        .expect("the call task");
    assert!(
        matches!(settled.outcome, Outcome::Interrupted(_)),
        "{:?}",
        settled.outcome
    );
    // The connection is still usable afterwards.
    let turn = location.materialize(AllTools);
    let echo = settle(&turn, "echo_echo", json!({"text": "after"})).await;
    assert!(
        matches!(echo.outcome, Outcome::Success(_)),
        "{:?}",
        echo.outcome
    );
    drop(connection);
    assert!(location.tools().names().is_empty());
}

#[tokio::test]
async fn a_server_that_never_initializes_fails_with_a_timeout() {
    let location = location();
    let config = McpServerConfig::stdio("hang", ECHO, ["--hang"]);
    let started = std::time::Instant::now();
    let error = connect(
        &config,
        &location,
        &ConnectOptions::default().with_startup_timeout(Duration::from_millis(300)),
    )
    .await
    .expect_err("the server never answers initialize");
    assert!(matches!(error, ConnectError::Timeout { .. }), "{error}");
    assert!(
        error.to_string().contains("did not start within"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(location.tools().names().is_empty());
}

#[tokio::test]
async fn a_missing_program_and_an_unreachable_url_fail_clearly() {
    let location = location();
    let missing = McpServerConfig::stdio("nope", "/nonexistent/tackle-mcp-server", ["x"]);
    let error = connect(&missing, &location, &ConnectOptions::default())
        .await
        .expect_err("the program does not exist");
    assert!(matches!(error, ConnectError::Spawn { .. }), "{error}");

    // Port 9 (discard) has no listener: the handshake fails, without waiting for the timeout.
    let http = McpServerConfig {
        name: "remote".to_owned(),
        transport: McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".to_owned(),
            headers: Default::default(),
        },
    };
    let error = connect(&http, &location, &ConnectOptions::default())
        .await
        .expect_err("nothing listens there");
    assert!(
        matches!(&error, ConnectError::Initialize { server, .. } if server == "remote"),
        "{error}"
    );
    assert!(location.tools().names().is_empty());
}

/// A hook that refuses `echo_echo` and records every name it was asked about.
fn refusing_echo(asked: Arc<Mutex<Vec<String>>>) -> BeforeCall {
    Arc::new(move |cx: Context, name: String| {
        let asked = asked.clone();
        Box::pin(async move {
            assert_eq!(cx.identity().call.as_str(), format!("call-{name}"));
            asked.lock().unwrap().push(name.clone());
            if name == "echo_echo" {
                Err(ToolFailure::new(
                    "permission denied: echo_echo is not allowed",
                ))
            } else {
                Ok(())
            }
        })
    })
}

#[tokio::test]
async fn a_refusing_before_call_hook_stops_the_call_before_the_server_sees_it() {
    let location = location();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let options = ConnectOptions::default().with_before_call(refusing_echo(asked.clone()));
    assert!(
        format!("{options:?}").contains("before_call: true"),
        "{options:?}"
    );
    let connection = connect(&echo_server(), &location, &options)
        .await
        .expect("the echo server connects");
    let turn = location.materialize(AllTools);

    let refused = settle(&turn, "echo_echo", json!({"text": "secret"})).await;
    let Outcome::Error(error) = &refused.outcome else {
        panic!("expected the hook's refusal: {:?}", refused.outcome);
    };
    assert_eq!(error.kind, ModelErrorKind::Failed);
    assert!(
        error
            .text()
            .contains("permission denied: echo_echo is not allowed"),
        "{}",
        error.text()
    );

    // The hook allows `seen`, and the server never saw the refused call.
    let seen = settle(&turn, "echo_seen", json!({})).await;
    assert_eq!(success_text(&seen), "");
    assert_eq!(*asked.lock().unwrap(), ["echo_echo", "echo_seen"]);
    connection.close().await;
}

#[tokio::test]
async fn an_allowing_before_call_hook_sees_the_registered_name() {
    let location = location();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let recorded = asked.clone();
    let allow_all: BeforeCall = Arc::new(move |_cx: Context, name: String| {
        recorded.lock().unwrap().push(name);
        Box::pin(async { Ok(()) })
    });
    let connection = connect(
        &echo_server(),
        &location,
        &ConnectOptions::default().with_before_call(allow_all),
    )
    .await
    .expect("the echo server connects");
    let turn = location.materialize(AllTools);
    let echo = settle(&turn, "echo_echo", json!({"text": "allowed"})).await;
    assert_eq!(success_text(&echo), "echo: allowed");
    let seen = settle(&turn, "echo_seen", json!({})).await;
    // The server got the original name; the hook got the registered one.
    assert_eq!(success_text(&seen), "echo");
    assert_eq!(*asked.lock().unwrap(), ["echo_echo", "echo_seen"]);
    assert!(!format!("{:?}", ConnectOptions::default()).contains("before_call: true"));
    connection.close().await;
}

#[tokio::test]
async fn supervise_reconnects_after_the_server_exits() {
    let location = location();
    let supervisor = supervise(
        echo_server(),
        location.clone(),
        ConnectOptions::default()
            .with_backoff(Duration::from_millis(50), Duration::from_millis(200)),
    );
    let wait = Duration::from_secs(15);
    let first = tokio::time::timeout(wait, supervisor.wait_for(|state| state.connected))
        .await
        .expect("the first connection");
    assert_eq!(first.connections, 1);
    assert!(first.tools.contains(&"echo_echo".to_owned()));

    let turn = location.materialize(AllTools);
    let _ = settle(&turn, "echo_exit", json!({})).await;
    let second = tokio::time::timeout(
        wait,
        supervisor.wait_for(|state| state.connected && state.connections == 2),
    )
    .await
    .expect("the reconnection");
    assert!(second.tools.contains(&"echo_echo".to_owned()));

    // The old turn advertised the first connection's registration.
    let stale = settle(&turn, "echo_echo", json!({"text": "old"})).await;
    assert!(
        matches!(&stale.outcome, Outcome::Error(error) if error.kind == ModelErrorKind::Stale),
        "{:?}",
        stale.outcome
    );
    let fresh = settle(
        &location.materialize(AllTools),
        "echo_echo",
        json!({"text": "new"}),
    )
    .await;
    assert!(
        matches!(fresh.outcome, Outcome::Success(_)),
        "{:?}",
        fresh.outcome
    );

    drop(supervisor);
    tokio::time::timeout(wait, async {
        while !location.tools().names().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("dropping the supervisor unregisters the tools");
}

#[tokio::test]
async fn a_changed_tool_list_replaces_the_registration_and_old_turns_go_stale() {
    let location = location();
    let connection = connect(&echo_server(), &location, &ConnectOptions::default())
        .await
        .expect("the echo server connects");
    let old = location.materialize(AllTools);
    assert!(old.get("echo_extra").is_none());
    assert!(old.get("echo_fail").is_some());

    // `grow` adds `extra`, removes `fail` and sends `tools/list_changed`.
    let grow = settle(&old, "echo_grow", json!({})).await;
    assert!(
        matches!(grow.outcome, Outcome::Success(_)),
        "{:?}",
        grow.outcome
    );
    let new = turn_with(&location, "echo_extra").await;
    assert!(new.get("echo_fail").is_none());
    let expected = [
        "echo_echo",
        "echo_exit",
        "echo_extra",
        "echo_grow",
        "echo_picture",
        "echo_seen",
        "echo_slow",
    ];
    assert_eq!(location.tools().names(), expected);
    assert_eq!(connection.tools(), expected);
    assert_eq!(
        connection.warnings().len(),
        1,
        "{:?}",
        connection.warnings()
    );

    let extra = settle(&new, "echo_extra", json!({})).await;
    assert_eq!(success_text(&extra), "extra");

    // Every tool got a new identity: the old turn's calls are stale, the new turn's succeed.
    let stale = settle(&old, "echo_echo", json!({"text": "old"})).await;
    assert!(
        matches!(&stale.outcome, Outcome::Error(error) if error.kind == ModelErrorKind::Stale),
        "{:?}",
        stale.outcome
    );
    let removed = settle(&old, "echo_fail", json!({})).await;
    assert!(
        matches!(&removed.outcome, Outcome::Error(error) if error.kind == ModelErrorKind::Stale),
        "{:?}",
        removed.outcome
    );
    let fresh = settle(&new, "echo_echo", json!({"text": "new"})).await;
    assert_eq!(success_text(&fresh), "echo: new");

    connection.close().await;
    assert!(location.tools().names().is_empty());
}

#[tokio::test]
async fn the_supervisor_state_follows_a_changed_tool_list() {
    let location = location();
    let supervisor = supervise(echo_server(), location.clone(), ConnectOptions::default());
    let wait = Duration::from_secs(10);
    let first = tokio::time::timeout(wait, supervisor.wait_for(|state| state.connected))
        .await
        .expect("the first connection");
    assert!(!first.tools.contains(&"echo_extra".to_owned()));

    let turn = location.materialize(AllTools);
    let grow = settle(&turn, "echo_grow", json!({})).await;
    assert!(
        matches!(grow.outcome, Outcome::Success(_)),
        "{:?}",
        grow.outcome
    );
    let grown = tokio::time::timeout(
        wait,
        supervisor.wait_for(|state| state.tools.contains(&"echo_extra".to_owned())),
    )
    .await
    .expect("the supervisor sees the new tool");
    assert!(grown.connected);
    assert_eq!(grown.connections, 1);
    assert!(!grown.tools.contains(&"echo_fail".to_owned()));
}
