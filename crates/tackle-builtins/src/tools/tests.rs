//! Unit tests of the file tools' shared environment: persistent session facts and the gate.

use std::sync::Arc;

use serde_json::json;
use tackle_core::{AnyTool, CallIdentity, CancellationToken, Context, SessionState};
use tackle_permission::{
    Action, MemorySavedApprovals, PermissionService, Rule, RuleSource, Ruleset,
};
use tackle_store::MemorySessionState;

use super::{ToolEnv, file_tools};
use crate::fs::LocationFs;
use crate::gate::Gate;

fn cx(session: &str) -> Context {
    Context::new(
        CallIdentity::new(session, "build", "m1", "c1"),
        CancellationToken::new(),
    )
}

fn tool(env: &ToolEnv, name: &str) -> AnyTool {
    file_tools(env)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t)
        .unwrap()
}

/// Runs a tool and returns (is_error, text).
async fn call(env: &ToolEnv, session: &str, name: &str, args: serde_json::Value) -> (bool, String) {
    use tackle_core::InvocationOutcome;
    let outcome = tool(env, name)
        .invoke(args.to_string().into(), cx(session))
        .await
        .outcome;
    match outcome {
        InvocationOutcome::Completed(output) => (
            false,
            output.content[0].as_text().unwrap_or_default().to_owned(),
        ),
        InvocationOutcome::Failed(failure) => (true, failure.to_string()),
        other => panic!("unexpected outcome {other:?}"),
    }
}

#[tokio::test]
async fn reads_recorded_in_session_state_serve_a_later_process() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let state: Arc<dyn SessionState> = Arc::new(MemorySessionState::new());
    let first =
        ToolEnv::new(LocationFs::new(dir.path()).unwrap()).with_session_state(state.clone());
    let (err, _) = call(&first, "s", "read", json!({"filePath": "a.txt"})).await;
    assert!(!err);

    // A new environment (a new process) sharing only the state.
    let second = ToolEnv::new(LocationFs::new(dir.path()).unwrap()).with_session_state(state);
    let edit = json!({"filePath": "a.txt", "oldString": "two", "newString": "2"});
    let (err, text) = call(&second, "other", "edit", edit.clone()).await;
    assert!(err, "another session never read it: {text}");
    assert!(text.contains("have not read"), "{text}");
    let (err, text) = call(&second, "s", "edit", edit).await;
    assert!(!err, "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\n2\n"
    );
}

#[tokio::test]
async fn instruction_files_are_shown_once_per_session_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/AGENTS.md"), "Use tabs.\n").unwrap();
    std::fs::write(dir.path().join("pkg/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(dir.path().join("pkg/b.rs"), "fn b() {}\n").unwrap();
    // The root's own file is the host's business, never added by read.
    std::fs::write(dir.path().join("AGENTS.md"), "Root rules.\n").unwrap();
    std::fs::write(dir.path().join("top.rs"), "fn top() {}\n").unwrap();
    let state: Arc<dyn SessionState> = Arc::new(MemorySessionState::new());
    let env =
        || ToolEnv::new(LocationFs::new(dir.path()).unwrap()).with_session_state(state.clone());

    let (_, text) = call(&env(), "s", "read", json!({"filePath": "pkg/a.rs"})).await;
    assert!(
        text.contains("Instructions from: pkg/AGENTS.md\nUse tabs."),
        "{text}"
    );
    let (_, text) = call(&env(), "s", "read", json!({"filePath": "pkg/b.rs"})).await;
    assert!(!text.contains("Instructions from"), "{text}");
    let (_, text) = call(&env(), "s2", "read", json!({"filePath": "pkg/b.rs"})).await;
    assert!(text.contains("Instructions from: pkg/AGENTS.md"), "{text}");
    let (_, text) = call(&env(), "s3", "read", json!({"filePath": "top.rs"})).await;
    assert!(!text.contains("Root rules"), "{text}");
}

struct NeverAsked;

impl tackle_permission::Approver for NeverAsked {
    fn ask(&self, request: &tackle_permission::PermissionRequest) {
        panic!("nothing should be asked: {request:?}");
    }
}

#[tokio::test]
async fn a_denied_edit_discloses_nothing_about_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "secret\n").unwrap();
    let service = PermissionService::new(
        "p",
        Arc::new(NeverAsked),
        Arc::new(MemorySavedApprovals::new()),
    )
    .unwrap();
    let rules: Ruleset = [
        Rule::new("*", "*", Action::Allow, RuleSource::Default),
        Rule::new("edit", "*", Action::Deny, RuleSource::Default),
    ]
    .into_iter()
    .collect();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap())
        .with_gate(Gate::new(Arc::new(service), move |_| rules.clone()));
    for old in ["secret", "absent"] {
        let (err, text) = call(
            &env,
            "s",
            "edit",
            json!({"filePath": "a.txt", "oldString": old, "newString": "x"}),
        )
        .await;
        assert!(err);
        assert!(
            text.starts_with("Permission denied: `edit` on `a.txt`"),
            "{text}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "secret\n"
    );
}
