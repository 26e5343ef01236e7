//! The server talking back to its client mid-call: progress notifications for calls that asked
//! for them, and permission questions sent as elicitation (with a fallback for clients that
//! cannot answer).

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
    JsonObject, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::{Empty, call_with, texts};
use tackle_core::{Tool, ToolFailure};
use tackle_mcp::{ClientCalls, ElicitingApprover, Serving, TackleServer, serve};
use tackle_permission::{
    Action, Approver, MemorySavedApprovals, PermissionRequest, PermissionService, Reply, Rule,
    RuleSource, Ruleset,
};
use tackle_registry::{AllTools, Location, Registration, SettlementConfig, ToolRegistry, ToolSet};
use tackle_store::{MemoryJournal, MemoryOutputStore};
use tokio::sync::mpsc;

/// The fallback approver: refuses, saying it was the fallback.
struct Fallback {
    service: std::sync::OnceLock<std::sync::Weak<PermissionService>>,
    asked: Mutex<Vec<String>>,
}

impl Approver for Fallback {
    fn ask(&self, request: &PermissionRequest) {
        self.asked.lock().unwrap().push(request.permission.clone());
        if let Some(service) = self.service.get().and_then(std::sync::Weak::upgrade) {
            let _ = service.reply(
                &request.id,
                Reply::Reject {
                    message: Some("refused by the fallback".to_owned()),
                },
            );
        }
    }
}

struct Fixture {
    location: Location,
    calls: ClientCalls,
    fallback: Arc<Fallback>,
    _tools: Registration,
    _service: Arc<PermissionService>,
}

/// A Location with `steps` (three progress updates) and `remove` (asks `bash` on `rm x`, which
/// the rules leave to the user), asking through an [`ElicitingApprover`].
fn fixture() -> Fixture {
    let calls = ClientCalls::new();
    let fallback = Arc::new(Fallback {
        service: std::sync::OnceLock::new(),
        asked: Mutex::new(Vec::new()),
    });
    let approver = Arc::new(ElicitingApprover::new(calls.clone(), fallback.clone()));
    let service = Arc::new(
        PermissionService::new(
            "/project",
            approver.clone(),
            Arc::new(MemorySavedApprovals::default()),
        )
        .expect("a permission service"),
    );
    approver.attach(&service);
    let _ = fallback.service.set(Arc::downgrade(&service));

    let location = Location::new(
        std::env::temp_dir(),
        &ToolRegistry::new(),
        SettlementConfig::new(
            Arc::new(MemoryOutputStore::new()),
            Arc::new(MemoryJournal::new()),
        ),
    );
    let steps = Tool::new("Reports three steps.", |_: Empty, cx| async move {
        for step in 1..=3 {
            cx.set_title(format!("step {step}"));
            // Let the forwarder send each update before the next one.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cx.set_metadata(json!({"output": "first line\nlast line\n"}));
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok::<_, ToolFailure>("done".to_owned())
    });
    let asking = service.clone();
    let remove = Tool::new("Asks before removing x.", move |_: Empty, cx| {
        let service = asking.clone();
        async move {
            let rules: Ruleset = [Rule::new("bash", "*", Action::Ask, RuleSource::Default)]
                .into_iter()
                .collect();
            let request = PermissionRequest::new(cx.session().as_str(), "bash", ["rm x"])
                .with_tool_call(cx.assistant_message().as_str(), cx.call().as_str());
            match service.ask(request, &rules).await {
                Ok(()) => Ok("removed".to_owned()),
                Err(error) => Err(ToolFailure::new(error.to_string())),
            }
        }
    });
    let quiet = Tool::new(
        "Works for a second without a word.",
        |_: Empty, _cx| async move {
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            Ok::<_, ToolFailure>("finished".to_owned())
        },
    );
    let tools = location
        .register(
            ToolSet::new()
                .with("steps", steps)
                .with("remove", remove)
                .with("quiet", quiet),
        )
        .expect("register the test tools");
    Fixture {
        location,
        calls,
        fallback,
        _tools: tools,
        _service: service,
    }
}

/// A client that records progress and answers elicitations with `answer` (or does not support
/// elicitation when `answer` is `None`).
struct Client {
    answer: Option<ElicitResult>,
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    questions: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.answer.is_some() {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        ClientConfig::new(capabilities, Implementation::new("interactive-test", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.questions.lock().unwrap().push(message);
        }
        Ok(self.answer.clone().expect("asked only when supported"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

struct Connected {
    client: RunningService<RoleClient, Client>,
    _serving: Serving,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    questions: Arc<Mutex<Vec<String>>>,
}

async fn connect(fixture: &Fixture, answer: Option<ElicitResult>) -> Connected {
    let server = TackleServer::new(fixture.location.clone(), AllTools)
        .with_client_calls(fixture.calls.clone())
        .with_progress_heartbeat(HEARTBEAT);
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server_task = tokio::spawn(async move { serve(server_io, server).await });
    let (progress_tx, progress) = mpsc::unbounded_channel();
    let questions = Arc::new(Mutex::new(Vec::new()));
    let client = Client {
        answer,
        progress: progress_tx,
        questions: questions.clone(),
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
        _serving: serving,
        progress,
        questions,
    }
}

#[tokio::test]
async fn progress_reaches_the_client_under_its_token_in_order() {
    let fixture = fixture();
    let mut connected = connect(&fixture, None).await;

    let result = call_with(
        connected.client.peer(),
        CallToolRequestParams::new("steps").with_arguments(JsonObject::new()),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", texts(&result));
    let mut seen = Vec::new();
    while let Ok(Some(update)) =
        tokio::time::timeout(Duration::from_millis(500), connected.progress.recv()).await
    {
        seen.push(update);
    }
    assert_eq!(
        seen.len(),
        4,
        "three titles and one metadata update: {seen:?}"
    );
    // rmcp's client puts its own token on every request; the server must echo that one.
    let token = seen[0].progress_token.clone();
    for (index, update) in seen.iter().enumerate() {
        assert_eq!(update.progress_token, token, "one token for the call");
        assert_eq!(update.progress, (index + 1) as f64, "progress increases");
    }
    let messages: Vec<_> = seen.iter().map(|u| u.message.clone().unwrap()).collect();
    assert_eq!(messages, ["step 1", "step 2", "step 3", "last line"]);
}

/// The progress heartbeat of the test server (the real default is 15 s).
const HEARTBEAT: Duration = Duration::from_millis(300);

#[tokio::test]
async fn a_silent_call_still_sends_progress_so_clients_do_not_time_it_out() {
    let fixture = fixture();
    let mut connected = connect(&fixture, None).await;
    let result = call_with(
        connected.client.peer(),
        CallToolRequestParams::new("quiet").with_arguments(JsonObject::new()),
    )
    .await;
    assert_eq!(texts(&result), "finished");
    let mut seen = Vec::new();
    while let Ok(Some(update)) =
        tokio::time::timeout(Duration::from_millis(500), connected.progress.recv()).await
    {
        seen.push(update);
    }
    // One second of silence with a 300 ms heartbeat: three beats (the last may race the end).
    assert!((2..=3).contains(&seen.len()), "{seen:?}");
    for (index, update) in seen.iter().enumerate() {
        assert_eq!(update.progress, (index + 1) as f64, "progress increases");
        let message = update.message.as_deref().unwrap_or_default();
        assert!(message.starts_with("still running ("), "{message}");
    }
}

fn accept(content: Value) -> ElicitResult {
    let mut result = ElicitResult::new(ElicitationAction::Accept);
    result.content = Some(content);
    result
}

#[tokio::test]
async fn a_permission_question_is_elicited_from_the_calling_client_and_its_answer_applies() {
    let fixture = fixture();
    let connected = connect(&fixture, Some(accept(json!({"decision": "once"})))).await;
    let params = CallToolRequestParams::new("remove").with_arguments(JsonObject::new());
    let result = call_with(connected.client.peer(), params).await;
    assert_eq!(result.is_error, Some(false), "{}", texts(&result));
    assert_eq!(texts(&result), "removed");
    let questions = connected.questions.lock().unwrap().clone();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(
        questions[0].contains("Allow `bash` on `rm x`?"),
        "{questions:?}"
    );
    assert!(
        fixture.fallback.asked.lock().unwrap().is_empty(),
        "the fallback was not asked"
    );
}

#[tokio::test]
async fn a_rejection_with_feedback_reaches_the_model_and_a_decline_refuses() {
    let rejecting = fixture();
    let connected = connect(
        &rejecting,
        Some(accept(
            json!({"decision": "reject", "feedback": "move it to trash instead"}),
        )),
    )
    .await;
    let params = CallToolRequestParams::new("remove").with_arguments(JsonObject::new());
    let result = call_with(connected.client.peer(), params).await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        texts(&result).contains("move it to trash instead"),
        "{}",
        texts(&result)
    );

    let declining = fixture();
    let connected = connect(
        &declining,
        Some(ElicitResult::new(ElicitationAction::Decline)),
    )
    .await;
    let params = CallToolRequestParams::new("remove").with_arguments(JsonObject::new());
    let result = call_with(connected.client.peer(), params).await;
    assert_eq!(result.is_error, Some(true), "{}", texts(&result));
}

#[tokio::test]
async fn a_client_without_elicitation_gets_the_fallback_answer() {
    let fixture = fixture();
    let connected = connect(&fixture, None).await;
    let params = CallToolRequestParams::new("remove").with_arguments(JsonObject::new());
    let result = call_with(connected.client.peer(), params).await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        texts(&result).contains("refused by the fallback"),
        "{}",
        texts(&result)
    );
    assert_eq!(*fixture.fallback.asked.lock().unwrap(), ["bash"]);
}
