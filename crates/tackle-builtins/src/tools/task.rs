//! The task tool: runs a subagent in a child session through the host's [`SubagentRunner`] and
//! returns its final text, with a typed status that never calls a cut-off run "completed".
//!
//! The tool offers only the subagents the caller may start: agents in
//! [`AgentMode::Subagent`] whose `task` permission the caller's rules do not deny
//! ([`subagent_offered`]). The child runs under [`derive_subagent_rules`] of the caller's rules,
//! so it never gains what its parent was refused, and under a child of the call's cancellation
//! token, so cancelling the parent call cancels the subagent.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tackle_core::names::Permission;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{AnyTool, CancellationToken, Context, State, Tool, ToolFailure};
use tackle_permission::{Agent, AgentMode, Ruleset, derive_subagent_rules, subagent_offered};

use super::ToolEnv;
use crate::gate::Ask;

#[cfg(test)]
mod tests;

const DESCRIPTION_HEAD: &str = "Start a subagent that works on a task in its own session, and \
wait for its result.\n\
- Use it for self-contained, multi-step work: researching a question across the code, or a \
change you can describe completely.\n\
- `description`: 3-5 words saying what the task is, shown to the user.\n\
- `prompt`: the whole task. The subagent sees nothing of this conversation, so include every \
detail it needs and say exactly what it should report back.\n\
- `subagent_type`: one of the types listed below.\n\
- `task_id`: to continue an earlier subagent with its context, pass the `task_id` from its \
result; leave it out to start a new one.\n\
- The result holds the subagent's final text and its status. The user does not see it; tell the \
user what matters. A truncated result is partial: check or continue the work.";

/// How a subagent run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubagentStatus {
    /// The subagent finished and its text is its final answer.
    Completed,
    /// The subagent stopped on an error.
    Failed,
    /// The subagent was cancelled before finishing.
    Cancelled,
    /// The subagent was cut off before finishing (a step, token or context budget ran out);
    /// its text is partial.
    Truncated,
}

/// What the task tool asks the host to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubagentRequest {
    /// The session of the calling agent.
    pub parent_session: String,
    /// The tool call that starts the subagent.
    pub parent_call: String,
    /// The child session to resume, when the model passed a `task_id`; `None` starts a new one.
    pub task_id: Option<String>,
    /// The name of the subagent to run.
    pub agent: String,
    /// The short description of the task, 3-5 words.
    pub description: String,
    /// The task itself: the child session's first user message.
    pub prompt: String,
    /// The child session's rules, derived from the caller's with [`derive_subagent_rules`].
    pub rules: Ruleset,
}

/// How a subagent run ended, as the host reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubagentReport {
    /// The child session; the model passes it back as `task_id` to resume.
    pub task_id: String,
    /// How the run ended.
    pub status: SubagentStatus,
    /// The subagent's final text; partial when `status` is not `Completed`.
    pub text: String,
    /// Why the run did not complete (the error, the budget that ran out), when known.
    pub detail: Option<String>,
}

/// The future a [`SubagentRunner`] returns.
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = SubagentReport> + Send + 'a>>;

/// The host's way of running a subagent in a child session.
///
/// Be careful when:
/// - implementing `run`. `cancel` is a child of the calling tool's cancellation token: stop the
///   child session when it fires. The tool also drops the future when the parent call is
///   cancelled, so clean up on drop rather than after an await.
/// - reporting the end. Report [`SubagentStatus::Truncated`] whenever the subagent stopped
///   before finishing on its own (a step, token or context budget), never `Completed`.
pub trait SubagentRunner: Send + Sync + 'static {
    /// Runs `request` (resuming `request.task_id` when set) and resolves with how it ended.
    fn run<'a>(&'a self, request: SubagentRequest, cancel: CancellationToken) -> RunFuture<'a>;
}

/// Arguments of the task tool. Field names are snake_case, as in OpenCode.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub struct TaskInput {
    /// What the task is, in 3-5 words, shown to the user.
    #[schemars(length(min = 1))]
    pub description: String,
    /// The whole task for the subagent, with every detail it needs.
    #[schemars(length(min = 1))]
    pub prompt: String,
    /// The subagent to run, as listed in the tool's description.
    #[schemars(length(min = 1))]
    pub subagent_type: String,
    /// The `task_id` of an earlier subagent to continue; leave it out to start a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

/// The result of the task tool. Failed and cancelled runs are tool failures instead.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskOutput {
    /// What the model reads.
    pub output: String,
    /// The child session; pass it back as `task_id` to resume it.
    pub task_id: String,
    /// How the run ended: `completed` or `truncated`.
    pub status: SubagentStatus,
    /// The subagent that ran.
    pub agent: String,
}

/// What every call of one task tool shares.
struct Shared {
    env: ToolEnv,
    runner: Arc<dyn SubagentRunner>,
    /// The subagents the caller may start, sorted by name.
    offered: Vec<Agent>,
    caller_rules: Ruleset,
}

/// The task tool for a caller under `caller_rules`, offering those of `subagents` it may start;
/// its description lists them.
pub(crate) fn tool(
    env: &ToolEnv,
    runner: Arc<dyn SubagentRunner>,
    subagents: Vec<Agent>,
    caller_rules: Ruleset,
) -> AnyTool {
    let offered = offered(subagents, &caller_rules);
    let description = describe(&offered);
    let shared = Arc::new(Shared {
        env: env.clone(),
        runner,
        offered,
        caller_rules,
    });
    Tool::with_state(description, shared, run_task)
        .with_projection(super::project_output)
        .erase()
}

/// The subagents `caller_rules` may start, sorted by name, one per name.
fn offered(subagents: Vec<Agent>, caller_rules: &Ruleset) -> Vec<Agent> {
    let mut offered: Vec<Agent> = subagents
        .into_iter()
        .filter(|agent| agent.mode == AgentMode::Subagent)
        .filter(|agent| subagent_offered(caller_rules, &agent.name))
        .collect();
    offered.sort_by(|a, b| a.name.cmp(&b.name));
    offered.dedup_by(|a, b| a.name == b.name);
    offered
}

/// The tool description: what it does, then `- name: description` for every offered subagent.
fn describe(offered: &[Agent]) -> String {
    let mut description = DESCRIPTION_HEAD.to_owned();
    if offered.is_empty() {
        description.push_str("\n\nNo subagent types are available.");
    } else {
        description.push_str("\n\nAvailable subagent types:");
        for agent in offered {
            let summary = agent.description.split_whitespace().collect::<Vec<_>>();
            description.push_str(&format!("\n- {}: {}", agent.name, summary.join(" ")));
        }
    }
    description
}

/// The executor: checks the arguments, asks `task`, runs the subagent under derived rules and a
/// child cancellation token, and renders its report.
async fn run_task(
    State(shared): State<Arc<Shared>>,
    input: TaskInput,
    cx: Context,
) -> Result<TaskOutput, ToolFailure> {
    let (shared, cx) = (&*shared, &cx);
    validate(&input)?;
    let Some(agent) = shared
        .offered
        .iter()
        .find(|agent| agent.name == input.subagent_type)
    else {
        return Err(not_offered(&input.subagent_type, &shared.offered));
    };
    shared
        .env
        .gate
        .ask(
            cx,
            Ask::new(Permission::TASK.as_str(), [agent.name.clone()])
                .with_always([agent.name.clone()])
                .with_metadata(serde_json::json!({
                    "description": input.description,
                    "prompt": input.prompt,
                })),
        )
        .await?;
    cx.set_title(input.description.clone());
    let request = SubagentRequest {
        parent_session: cx.session().as_str().to_owned(),
        parent_call: cx.call().as_str().to_owned(),
        task_id: input.task_id.clone(),
        agent: agent.name.clone(),
        description: input.description.clone(),
        prompt: input.prompt.clone(),
        rules: derive_subagent_rules(&shared.caller_rules, agent),
    };
    let child = cx.cancellation().child_token();
    // The runner goes first, so a runner that stops on its token reports its own end (and its
    // task_id); one that ignores the token is dropped when the parent is cancelled.
    let report = tokio::select! {
        biased;
        report = shared.runner.run(request, child.clone()) => report,
        () = cx.cancellation().cancelled() => {
            child.cancel();
            return Err(ToolFailure::new(format!(
                "The call was interrupted, so the subagent `{}` was cancelled before it finished.",
                agent.name
            )));
        }
    };
    render(&agent.name, report)
}

/// Refuses empty arguments, listing every problem.
fn validate(input: &TaskInput) -> Result<(), ToolFailure> {
    let mut problems = Vec::new();
    if input.description.trim().is_empty() {
        problems.push("- `description`: must not be empty; give 3-5 words");
    }
    if input.prompt.trim().is_empty() {
        problems.push("- `prompt`: must not be empty; give the whole task");
    }
    if input.subagent_type.trim().is_empty() {
        problems.push("- `subagent_type`: must not be empty");
    }
    if input
        .task_id
        .as_deref()
        .is_some_and(|id| id.trim().is_empty())
    {
        problems.push("- `task_id`: must not be empty; leave it out to start a new subagent");
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(
        ToolFailure::new(format!("No subagent was started:\n{}", problems.join("\n")))
            .with_hint("Fix these fields and call task again."),
    )
}

/// The failure for a subagent type that does not exist or that the caller may not start.
fn not_offered(name: &str, offered: &[Agent]) -> ToolFailure {
    let message = format!("Subagent type `{name}` is not available, so no subagent was started.");
    if offered.is_empty() {
        return ToolFailure::new(format!("{message} No subagent types are available."))
            .with_hint("Do the work yourself instead of calling task.");
    }
    let names: Vec<String> = offered
        .iter()
        .map(|agent| format!("`{}`", agent.name))
        .collect();
    ToolFailure::new(format!(
        "{message} Available subagent types: {}.",
        names.join(", ")
    ))
    .with_hint("Call task again with one of the available subagent types.")
}

/// The model-facing result of a report: a success for completed and truncated runs, a failure
/// (still naming the task_id) for failed and cancelled ones.
fn render(agent: &str, report: SubagentReport) -> Result<TaskOutput, ToolFailure> {
    let SubagentReport {
        task_id,
        status,
        text,
        detail,
    } = report;
    let mut output = format!("task_id: {task_id} (resume with task_id)\n");
    let because = detail
        .as_deref()
        .map(str::trim)
        .filter(|detail| !detail.is_empty())
        .map(|detail| format!(": {detail}"))
        .unwrap_or_default();
    let text = text.trim_end();
    match status {
        SubagentStatus::Completed => {
            output.push_str("status: completed\n");
            push_text(
                &mut output,
                "task_result",
                text,
                "The subagent gave no final text.",
            );
        }
        SubagentStatus::Truncated => {
            output.push_str(&format!(
                "status: truncated. The subagent `{agent}` was cut off before finishing{because}. \
Its text below is partial, and work it describes may be unfinished. Check its work, or call task \
with this task_id to let it continue.\n"
            ));
            push_text(
                &mut output,
                "partial_task_result",
                text,
                "The subagent gave no text before it was cut off.",
            );
        }
        SubagentStatus::Failed | SubagentStatus::Cancelled => {
            let what = if status == SubagentStatus::Failed {
                format!("status: failed. The subagent `{agent}` failed{because}.")
            } else {
                format!(
                    "status: cancelled. The subagent `{agent}` was cancelled before it finished{because}."
                )
            };
            output.push_str(&what);
            if !text.is_empty() {
                output.push('\n');
                push_text(&mut output, "partial_task_result", text, "");
            }
            return Err(ToolFailure::new(output).with_hint(
                "Call task with this task_id to let the subagent try again, or choose another \
approach.",
            ));
        }
    }
    Ok(TaskOutput {
        output,
        task_id,
        status,
        agent: agent.to_owned(),
    })
}

/// Appends `text` wrapped in `<tag>`, or `empty` when there is no text.
fn push_text(output: &mut String, tag: &str, text: &str, empty: &str) {
    output.push_str(&format!("<{tag}>\n"));
    output.push_str(if text.is_empty() { empty } else { text });
    output.push_str(&format!("\n</{tag}>"));
}
