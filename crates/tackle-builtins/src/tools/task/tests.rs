//! Tests of the task tool with a scripted subagent runner.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tackle_core::{AnyTool, CallIdentity, CancellationToken, Context, InvocationOutcome};
use tackle_permission::{
    Action, Agent, AgentMode, PresetContext, Rule, RuleSource, Ruleset, derive_subagent_rules,
    preset,
};

use super::{
    RunFuture, Shared, SubagentReport, SubagentRequest, SubagentRunner, SubagentStatus, TaskInput,
    offered, run_task,
};
use crate::fs::LocationFs;
use crate::tools::ToolEnv;

/// What the scripted runner does with every request.
enum Script {
    /// Resolves at once with this report.
    Report(SubagentReport),
    /// Waits until its token is cancelled, notes it, and reports a cancelled run.
    UntilCancelled,
    /// Never resolves and never looks at its token.
    Ignore,
}

/// Records every request and its token, and answers as scripted.
struct Scripted {
    script: Script,
    seen: Mutex<Vec<(SubagentRequest, CancellationToken)>>,
    observed_cancel: AtomicBool,
}

impl Scripted {
    fn new(script: Script) -> Arc<Self> {
        Arc::new(Self {
            script,
            seen: Mutex::new(Vec::new()),
            observed_cancel: AtomicBool::new(false),
        })
    }

    fn reporting(status: SubagentStatus, text: &str, detail: Option<&str>) -> Arc<Self> {
        Self::new(Script::Report(SubagentReport {
            task_id: "child-1".to_owned(),
            status,
            text: text.to_owned(),
            detail: detail.map(str::to_owned),
        }))
    }

    fn requests(&self) -> Vec<SubagentRequest> {
        let seen = self.seen.lock().unwrap();
        seen.iter().map(|(request, _)| request.clone()).collect()
    }

    fn tokens(&self) -> Vec<CancellationToken> {
        let seen = self.seen.lock().unwrap();
        seen.iter().map(|(_, token)| token.clone()).collect()
    }
}

impl SubagentRunner for Scripted {
    fn run<'a>(&'a self, request: SubagentRequest, cancel: CancellationToken) -> RunFuture<'a> {
        self.seen.lock().unwrap().push((request, cancel.clone()));
        Box::pin(async move {
            match &self.script {
                Script::Report(report) => report.clone(),
                Script::UntilCancelled => {
                    cancel.cancelled().await;
                    self.observed_cancel.store(true, Ordering::SeqCst);
                    SubagentReport {
                        task_id: "child-1".to_owned(),
                        status: SubagentStatus::Cancelled,
                        text: String::new(),
                        detail: None,
                    }
                }
                Script::Ignore => std::future::pending().await,
            }
        })
    }
}

/// The built-in `build` (primary), `explore` and `general` (subagents) agents, and a hidden one.
fn agents() -> Vec<Agent> {
    let ctx = PresetContext::default();
    ["build", "general", "explore", "title"]
        .into_iter()
        .map(|name| preset(name, &ctx).unwrap())
        .collect()
}

/// The caller's rules: build's preset, plus `extra`.
fn caller_rules(extra: &[(&str, &str, Action)]) -> Ruleset {
    let mut rules = preset("build", &PresetContext::default()).unwrap().rules;
    for (permission, pattern, action) in extra {
        rules.push(Rule::new(permission, pattern, *action, RuleSource::Default));
    }
    rules
}

fn env(dir: &tempfile::TempDir) -> ToolEnv {
    ToolEnv::new(LocationFs::new(dir.path()).unwrap())
}

fn task_tool(dir: &tempfile::TempDir, runner: Arc<Scripted>, rules: Ruleset) -> AnyTool {
    super::tool(&env(dir), runner, agents(), rules)
}

fn cx(token: CancellationToken) -> Context {
    Context::new(CallIdentity::new("s", "build", "m", "c"), token)
}

fn args(subagent_type: &str) -> Value {
    json!({
        "description": "Find the config loader",
        "prompt": "Find where the configuration is loaded and report the file and function.",
        "subagent_type": subagent_type,
    })
}

async fn run(tool: &AnyTool, args: Value) -> InvocationOutcome {
    tool.invoke(args.into(), cx(CancellationToken::new()))
        .await
        .outcome
}

fn completed(outcome: InvocationOutcome) -> (String, Value) {
    match outcome {
        InvocationOutcome::Completed(output) => (
            output.content[0].as_text().unwrap().to_owned(),
            output.structured,
        ),
        other => panic!("expected success, got {other:?}"),
    }
}

fn failed(outcome: InvocationOutcome) -> tackle_core::ToolFailure {
    match outcome {
        InvocationOutcome::Failed(failure) => failure,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_completed_run_returns_the_final_text_and_its_task_id() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Completed, "It is in src/config.rs.\n", None);
    let tool = task_tool(&dir, runner.clone(), caller_rules(&[]));
    let (text, structured) = completed(run(&tool, args("explore")).await);
    assert_eq!(
        text,
        "task_id: child-1 (resume with task_id)\n\
         status: completed\n\
         <task_result>\n\
         It is in src/config.rs.\n\
         </task_result>"
    );
    assert_eq!(
        structured,
        json!({"output": text, "taskId": "child-1", "status": "completed", "agent": "explore"})
    );
    let requests = runner.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.parent_session, "s");
    assert_eq!(request.parent_call, "c");
    assert_eq!(request.task_id, None);
    assert_eq!(request.agent, "explore");
    assert_eq!(request.description, "Find the config loader");
    assert!(request.prompt.starts_with("Find where the configuration"));
}

#[tokio::test]
async fn the_title_is_the_description() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Completed, "done", None);
    let tool = task_tool(&dir, runner, caller_rules(&[]));
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let cx = cx(CancellationToken::new()).with_progress(tx);
    let outcome = tool.invoke(args("general").into(), cx).await.outcome;
    completed(outcome);
    let progress = rx.recv().await.unwrap();
    assert_eq!(progress.title.as_deref(), Some("Find the config loader"));
}

#[tokio::test]
async fn resume_passes_the_task_id_through() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Completed, "continued", None);
    let tool = task_tool(&dir, runner.clone(), caller_rules(&[]));
    let mut call = args("general");
    call["task_id"] = json!("child-1");
    let (text, _) = completed(run(&tool, call).await);
    assert!(
        text.starts_with("task_id: child-1 (resume with task_id)\n"),
        "{text}"
    );
    assert_eq!(runner.requests()[0].task_id.as_deref(), Some("child-1"));
}

#[tokio::test]
async fn the_description_lists_only_offered_subagents() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Completed, "", None);
    let all = task_tool(&dir, runner.clone(), caller_rules(&[]));
    let description = all.definition().description.clone();
    assert!(
        description.ends_with(
            "Available subagent types:\n\
             - explore: A read-only subagent for finding files and answering questions about code.\n\
             - general: A general-purpose subagent for multi-step research and changes."
        ),
        "{description}"
    );
    assert!(
        !description.contains("- build:"),
        "a primary agent is listed"
    );
    assert!(
        !description.contains("- title:"),
        "a hidden agent is listed"
    );

    let hidden = task_tool(
        &dir,
        runner.clone(),
        caller_rules(&[("task", "explore", Action::Deny)]),
    );
    let description = hidden.definition().description.clone();
    assert!(!description.contains("- explore:"), "{description}");
    assert!(description.contains("- general:"), "{description}");

    let none = task_tool(&dir, runner, caller_rules(&[("task", "*", Action::Deny)]));
    assert!(
        none.definition()
            .description
            .ends_with("No subagent types are available.")
    );
}

#[test]
fn offered_keeps_subagent_mode_only_sorted_by_name() {
    let mut custom = preset("general", &PresetContext::default()).unwrap();
    custom.name = "aardvark".to_owned();
    custom.mode = AgentMode::Primary;
    let mut list = agents();
    list.push(custom);
    let names: Vec<String> = offered(list, &caller_rules(&[]))
        .into_iter()
        .map(|agent| agent.name)
        .collect();
    assert_eq!(names, ["explore", "general"]);
}

#[tokio::test]
async fn a_hidden_subagent_type_is_refused_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Completed, "", None);
    let tool = task_tool(
        &dir,
        runner.clone(),
        caller_rules(&[("task", "explore", Action::Deny)]),
    );
    let failure = failed(run(&tool, args("explore")).await);
    assert_eq!(
        failure.message(),
        "Subagent type `explore` is not available, so no subagent was started. Available \
         subagent types: `general`."
    );
    assert_eq!(
        failure.hint(),
        Some("Call task again with one of the available subagent types.")
    );
    assert!(runner.requests().is_empty());
}

#[tokio::test]
async fn unknown_and_primary_types_are_refused_listing_the_offered_ones() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Completed, "", None);
    let tool = task_tool(&dir, runner.clone(), caller_rules(&[]));
    for name in ["reviewer", "build", "title"] {
        let failure = failed(run(&tool, args(name)).await);
        assert_eq!(
            failure.message(),
            format!(
                "Subagent type `{name}` is not available, so no subagent was started. \
                 Available subagent types: `explore`, `general`."
            )
        );
    }
    assert!(runner.requests().is_empty());
}

#[tokio::test]
async fn empty_arguments_are_refused_listing_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Completed, "", None);
    let tool = task_tool(&dir, runner.clone(), caller_rules(&[]));
    let call = json!({"description": " ", "prompt": "\n ", "subagent_type": "general"});
    let failure = failed(run(&tool, call).await);
    assert_eq!(
        failure.message(),
        "No subagent was started:\n\
         - `description`: must not be empty; give 3-5 words\n\
         - `prompt`: must not be empty; give the whole task"
    );
    assert!(runner.requests().is_empty());
}

#[tokio::test]
async fn child_rules_come_from_derive_subagent_rules() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Completed, "ok", None);
    let parent = caller_rules(&[("bash", "rm *", Action::Deny)]);
    let tool = task_tool(&dir, runner.clone(), parent.clone());
    completed(run(&tool, args("general")).await);
    let rules = runner.requests()[0].rules.clone();
    let general = preset("general", &PresetContext::default()).unwrap();
    assert_eq!(rules, derive_subagent_rules(&parent, &general));
    assert_eq!(rules.evaluate("bash", "rm -rf target"), Action::Deny);
    assert_eq!(rules.evaluate("task", "explore"), Action::Deny);
    assert!(
        rules
            .rules()
            .iter()
            .any(|rule| rule.permission.as_str() == "bash"
                && rule.pattern.as_str() == "rm *"
                && rule.source == RuleSource::Inherited)
    );
}

#[tokio::test]
async fn a_truncated_run_is_reported_as_truncated_never_completed() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(
        SubagentStatus::Truncated,
        "Steps so far: read src/config.rs",
        Some("the step budget of 2 steps ran out"),
    );
    let tool = task_tool(&dir, runner, caller_rules(&[]));
    let (text, structured) = completed(run(&tool, args("general")).await);
    assert_eq!(
        text,
        "task_id: child-1 (resume with task_id)\n\
         status: truncated. The subagent `general` was cut off before finishing: the step budget \
         of 2 steps ran out. Its text below is partial, and work it describes may be unfinished. \
         Check its work, or call task with this task_id to let it continue.\n\
         <partial_task_result>\n\
         Steps so far: read src/config.rs\n\
         </partial_task_result>"
    );
    assert!(!text.contains("completed"), "{text}");
    assert!(!text.contains("<task_result>"), "{text}");
    assert_eq!(structured["status"], "truncated");
}

#[tokio::test]
async fn a_failed_run_is_a_failure_naming_the_task_id() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(
        SubagentStatus::Failed,
        "I started on it",
        Some("the model provider returned 500"),
    );
    let tool = task_tool(&dir, runner, caller_rules(&[]));
    let failure = failed(run(&tool, args("general")).await);
    assert_eq!(
        failure.message(),
        "task_id: child-1 (resume with task_id)\n\
         status: failed. The subagent `general` failed: the model provider returned 500.\n\
         <partial_task_result>\n\
         I started on it\n\
         </partial_task_result>"
    );
    assert!(failure.hint().unwrap().contains("task_id"));
}

#[tokio::test]
async fn a_cancelled_run_is_a_failure_naming_the_task_id() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::reporting(SubagentStatus::Cancelled, "", None);
    let tool = task_tool(&dir, runner, caller_rules(&[]));
    let failure = failed(run(&tool, args("general")).await);
    assert_eq!(
        failure.message(),
        "task_id: child-1 (resume with task_id)\n\
         status: cancelled. The subagent `general` was cancelled before it finished."
    );
}

#[tokio::test]
async fn cancelling_the_parent_call_cancels_the_subagent() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::new(Script::UntilCancelled);
    let tool = task_tool(&dir, runner.clone(), caller_rules(&[]));
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            token.cancel();
        })
    };
    let invocation = tokio::time::timeout(
        Duration::from_secs(5),
        tool.invoke(args("general").into(), cx(token)),
    )
    .await
    .expect("the call ends promptly once cancelled");
    canceller.await.unwrap();
    assert!(
        matches!(invocation.outcome, InvocationOutcome::Interrupted(_)),
        "{:?}",
        invocation.outcome
    );
    let tokens = runner.tokens();
    assert_eq!(tokens.len(), 1);
    assert!(
        tokens[0].is_cancelled(),
        "the runner's token was not cancelled"
    );
}

fn shared(runner: Arc<Scripted>, dir: &tempfile::TempDir) -> Shared {
    let rules = caller_rules(&[]);
    Shared {
        env: env(dir),
        runner,
        offered: offered(agents(), &rules),
        caller_rules: rules,
    }
}

fn input() -> TaskInput {
    serde_json::from_value(args("general")).unwrap()
}

#[tokio::test]
async fn the_executor_cancels_the_child_token_and_the_runner_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::new(Script::UntilCancelled);
    let shared = Arc::new(shared(runner.clone(), &dir));
    let token = CancellationToken::new();
    let call = cx(token.clone());
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(5), async {
        tokio::join!(
            run_task(tackle_core::State(shared.clone()), input(), call.clone()),
            canceller
        )
    })
    .await
    .expect("the executor ends promptly once cancelled");
    assert!(runner.observed_cancel.load(Ordering::SeqCst));
    assert!(runner.tokens()[0].is_cancelled());
    let failure = result.unwrap_err();
    assert!(
        failure
            .message()
            .starts_with("task_id: child-1 (resume with task_id)\nstatus: cancelled."),
        "{failure}"
    );
}

#[tokio::test]
async fn the_executor_returns_promptly_when_the_runner_ignores_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Scripted::new(Script::Ignore);
    let shared = Arc::new(shared(runner.clone(), &dir));
    let token = CancellationToken::new();
    let call = cx(token.clone());
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(5), async {
        tokio::join!(
            run_task(tackle_core::State(shared.clone()), input(), call.clone()),
            canceller
        )
    })
    .await
    .expect("the executor ends promptly once cancelled");
    assert!(runner.tokens()[0].is_cancelled());
    assert_eq!(
        result.unwrap_err().message(),
        "The call was interrupted, so the subagent `general` was cancelled before it finished."
    );
}

struct NeverAsked;

impl tackle_permission::Approver for NeverAsked {
    fn ask(&self, request: &tackle_permission::PermissionRequest) {
        panic!("nothing should be asked: {request:?}");
    }
}

#[tokio::test]
async fn a_denied_task_permission_starts_nothing() {
    use tackle_permission::{MemorySavedApprovals, PermissionService};
    let dir = tempfile::tempdir().unwrap();
    let service = PermissionService::new(
        "p",
        Arc::new(NeverAsked),
        Arc::new(MemorySavedApprovals::new()),
    )
    .unwrap();
    let gate_rules = caller_rules(&[("task", "general", Action::Deny)]);
    let env = env(&dir).with_gate(crate::gate::Gate::new(Arc::new(service), move |_| {
        gate_rules.clone()
    }));
    let runner = Scripted::reporting(SubagentStatus::Completed, "", None);
    let tool = super::tool(&env, runner.clone(), agents(), caller_rules(&[]));
    let failure = failed(run(&tool, args("general")).await);
    assert!(
        failure.message().starts_with("Permission denied: `task`"),
        "{failure}"
    );
    assert!(runner.requests().is_empty());
}
