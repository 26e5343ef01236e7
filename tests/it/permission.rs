//! The permission engine wired into a Location: catalog visibility as the turn filter, the
//! managed-output directory whitelisted, a doom loop gated by the approval service, and a
//! withdrawn request that interrupts the call instead of failing it.

use std::sync::{Arc, Mutex};

use tackle::{Harness, cx, tagged};
use tackle_builtins::{Gate, LocationFs, ToolEnv, file_tools};
use tackle_core::{OutcomeKind, OutputStore, ToolDefinition};
use tackle_permission::{
    Action, MemorySavedApprovals, PermissionError, PermissionRequest, PermissionService,
    PresetContext, Reply, RuleSource, Ruleset, Streak, agent_with_user_rules,
    parse_permission_config, preset, visible_filter,
};
use tackle_registry::{
    BatchOptions, Interruption, ModelErrorKind, Outcome, ToolCall, ToolSet, batch_tool,
};
use tackle_store::FsOutputStore;

fn user_rules(json: &str) -> Ruleset {
    parse_permission_config(json, &Default::default()).expect("valid config")
}

#[tokio::test]
async fn wholly_denied_tools_are_hidden_from_the_turn_and_unknown_to_it() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (edit, edit_calls) = tagged("edit");
    let (write, _) = tagged("write");
    let (bash, _) = tagged("bash");
    let _tools = location
        .register(
            ToolSet::new()
                .with("edit", edit)
                .with("write", write)
                .with("bash", bash),
        )
        .unwrap();
    let plan = preset("plan", &PresetContext::default()).unwrap();
    let visible = visible_filter(plan.rules.clone());
    let turn = location.materialize(move |name: &str, _: &ToolDefinition| visible(name));
    let names: Vec<&str> = turn.tools().iter().map(|t| t.name()).collect();
    // plan denies `edit` on `*` then allows plan files: the last rule is not a wildcard deny, so
    // the edit family stays visible and is gated per call.
    assert_eq!(names, ["bash", "edit", "write"]);

    let agent = agent_with_user_rules(plan, &user_rules(r#"{"edit": "deny"}"#));
    let visible = visible_filter(agent.rules);
    let turn = location.materialize(move |name: &str, _: &ToolDefinition| visible(name));
    let names: Vec<&str> = turn.tools().iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        ["bash"],
        "edit and write share the `edit` permission"
    );
    let s = turn
        .settle(cx("c1"), ToolCall::new("edit", r#"{"text":"x"}"#))
        .await;
    assert!(matches!(&s.outcome, Outcome::Error(e) if e.kind == ModelErrorKind::Unknown));
    assert_eq!(edit_calls.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn the_managed_output_directory_is_readable_without_an_external_directory_prompt() {
    let data = tempfile::tempdir().unwrap();
    let store = FsOutputStore::new(data.path().join("tool-output")).unwrap();
    let dir = store.directory().unwrap().to_string_lossy().into_owned();
    let context = PresetContext {
        managed_output_dir: Some(dir.clone()),
        temp_dir: Some("/tmp".to_owned()),
        extra_allowed_dirs: Vec::new(),
        plans_dir: None,
    };
    let build = preset("build", &context).unwrap();
    let inside = format!("{dir}/{}", "ab".repeat(32));
    assert_eq!(
        build.rules.evaluate("external_directory", &inside),
        Action::Allow
    );
    assert_eq!(
        build.rules.evaluate("external_directory", "/etc/passwd"),
        Action::Ask
    );
    let decision = build.rules.explain("external_directory", &inside);
    assert_eq!(decision.source(), RuleSource::Default);
}

/// Answers every request by replying through a handle set after construction.
#[derive(Default)]
struct RecordingApprover {
    asked: Mutex<Vec<PermissionRequest>>,
}

impl tackle_permission::Approver for RecordingApprover {
    fn ask(&self, request: &PermissionRequest) {
        self.asked.lock().unwrap().push(request.clone());
    }
}

#[tokio::test]
async fn a_third_identical_call_asks_doom_loop_before_it_runs() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (tool, calls) = tagged("a");
    let _tools = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let turn = location.materialize(tackle_registry::AllTools);
    let rules = preset("build", &PresetContext::default()).unwrap().rules;
    let approver = Arc::new(RecordingApprover::default());
    let service = Arc::new(
        PermissionService::new(
            "project",
            approver.clone(),
            Arc::new(MemorySavedApprovals::default()),
        )
        .unwrap(),
    );
    let mut streak = Streak::default();
    let arguments = serde_json::json!({"text": "same", "repeat": 1});

    // The host's loop: observe, ask doom_loop when it fires, then settle.
    let mut outcomes = Vec::new();
    for call in ["c1", "c2", "c3"] {
        if let Some(doom) = streak.observe("echo", &arguments, 3) {
            let request =
                PermissionRequest::new("session-1", doom.permission(), vec![doom.pattern()]);
            let asking = {
                let service = service.clone();
                let rules = rules.clone();
                tokio::spawn(async move { service.ask(request, &rules).await })
            };
            // The user rejects with feedback: the call does not run and the model is told why.
            while approver.asked.lock().unwrap().is_empty() {
                tokio::task::yield_now().await;
            }
            let id = approver.asked.lock().unwrap()[0].id.clone();
            service
                .reply(
                    &id,
                    Reply::Reject {
                        message: Some("stop repeating; read the error".into()),
                    },
                )
                .unwrap();
            let error = asking.await.unwrap().unwrap_err();
            assert!(matches!(error, PermissionError::Corrected { .. }));
            outcomes.push(error.to_string());
            continue;
        }
        let s = turn
            .settle(cx(call), ToolCall::new("echo", arguments.clone()))
            .await;
        assert!(matches!(s.outcome, Outcome::Success(_)));
        outcomes.push("ran".to_owned());
    }
    assert_eq!(outcomes[..2], ["ran", "ran"]);
    assert!(
        outcomes[2].contains("stop repeating; read the error"),
        "{}",
        outcomes[2]
    );
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the third call never ran"
    );
    let asked = approver.asked.lock().unwrap();
    assert_eq!(asked[0].permission, "doom_loop");
    assert_eq!(asked[0].patterns, ["echo"]);
}

/// A Location with the file tools, gated by a service that asks `approver` before any edit.
fn gated_file_tools(
    root: &std::path::Path,
    approver: Arc<RecordingApprover>,
) -> (
    tackle_registry::Location,
    Arc<PermissionService>,
    tackle_registry::Registration,
    Harness,
) {
    let h = Harness::new();
    let service = Arc::new(
        PermissionService::new(
            "project",
            approver,
            Arc::new(MemorySavedApprovals::default()),
        )
        .unwrap(),
    );
    let build = preset("build", &PresetContext::default()).unwrap();
    let rules = agent_with_user_rules(build, &user_rules(r#"{"edit": "ask"}"#)).rules;
    let gate = Gate::new(service.clone(), move |_| rules.clone());
    let env = ToolEnv::new(LocationFs::new(root).unwrap()).with_gate(gate);
    let location = h.location(root.to_str().unwrap());
    let mut tools: ToolSet = file_tools(&env).into_iter().collect();
    tools.insert("batch", batch_tool(BatchOptions::default()));
    let registration = location.register(tools).unwrap();
    (location, service, registration, h)
}

/// Waits until `approver` was asked, then withdraws the pending requests of call `call`.
async fn withdraw_when_asked(
    approver: &RecordingApprover,
    service: &PermissionService,
    call: &str,
) {
    while approver.asked.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(service.cancel_call(call), 1);
}

#[tokio::test]
async fn a_withdrawn_permission_request_interrupts_the_call_for_the_host_only() {
    let dir = tempfile::tempdir().unwrap();
    let approver = Arc::new(RecordingApprover::default());
    let (location, service, _tools, h) = gated_file_tools(dir.path(), approver.clone());
    let turn = location.materialize(tackle_registry::AllTools);
    let call = ToolCall::new(
        "write",
        serde_json::json!({"filePath": "new.txt", "content": "hello"}),
    );
    let (s, ()) = tokio::join!(
        turn.settle(cx("c1"), call),
        withdraw_when_asked(&approver, &service, "c1"),
    );
    let Outcome::Interrupted(Interruption::Reported(reason)) = &s.outcome else {
        panic!("{:?}", s.outcome);
    };
    assert!(
        reason.contains("was cancelled before the user answered"),
        "{reason}"
    );
    assert!(s.model_result().is_none());
    assert!(!dir.path().join("new.txt").exists());
    let record = h.journal.records().pop().unwrap();
    assert_eq!(record.outcome, OutcomeKind::Interrupted);
    assert_eq!(record.model_result, None);

    // Inside a batch: the sub-call is interrupted for the host, the model reads a neutral line.
    approver.asked.lock().unwrap().clear();
    let batch = ToolCall::new(
        "batch",
        serde_json::json!({"tool_calls": [
            {"tool": "write", "parameters": {"filePath": "new.txt", "content": "hello"}}
        ]}),
    );
    let (s, ()) = tokio::join!(
        turn.settle(cx("b1"), batch),
        withdraw_when_asked(&approver, &service, "b1"),
    );
    assert_eq!(s.sub_calls.len(), 1);
    assert!(matches!(
        s.sub_calls[0].outcome,
        Outcome::Interrupted(Interruption::Reported(_))
    ));
    let sent = serde_json::to_string(&s.model_result().unwrap()).unwrap();
    assert!(sent.contains("interrupted before it finished"), "{sent}");
    assert!(
        !sent.contains("cancelled before the user answered"),
        "{sent}"
    );
    assert!(!dir.path().join("new.txt").exists());
}
