//! The `batch` tool: up to 25 tool calls in one, each settled on its own, run concurrently where
//! the tools' declared [`Concurrency`] allows it and in the model's order where it does not.
//!
//! Scheduling is decided once, before anything runs. Each sub-call gets a class from its tool's
//! definition in a turn materialized at batch time, and waits for every *earlier* sub-call whose
//! class conflicts with its own:
//!
//! | earlier \ later | read-only | writes path P               | exclusive |
//! |-----------------|-----------|-----------------------------|-----------|
//! | read-only       | overlap   | wait                        | wait      |
//! | writes path Q   | wait      | wait if P = Q, else overlap | wait      |
//! | exclusive       | wait      | wait                        | wait      |
//!
//! Read-only tools do not say what they read, so a write waits for earlier reads and a read waits
//! for earlier writes: "read a file, then edit it" keeps its order. Paths are compared after
//! dropping `.` components and the Location root. A writing call whose path argument is missing or
//! not a string (or array of strings) runs as exclusive. A call that cannot run (refused, or a name
//! the turn does not advertise) waits for nothing and blocks nothing.
//!
//! Every sub-call settles against the turn the batch itself was settled in
//! ([`Context::settle_sub`]): a name that turn did not advertise is unknown and a registration
//! changed since is stale, exactly as for a direct call. A sub-call's identity is the batch's
//! host-supplied IDs plus its 1-based position. A sub-call that ends in an interruption or a
//! defect is listed in the batch's settlement for the host; the model reads one neutral line.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared, join_all};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tackle_core::schemars::JsonSchema;
use tackle_core::{
    AnyTool, Concurrency, Content, Context, InvalidInput, Outcome, Settlement, Tool, ToolCall,
    ToolDefinition, ToolFailure,
};

use crate::turn::TurnInner;

/// The most sub-calls one batch accepts.
pub const MAX_BATCH_CALLS: usize = 25;

/// The name under which a batch tool is expected to be registered. A call of this name from
/// inside a batch is always refused, as is a call of any batch tool under any name.
const BATCH_NAME: &str = tackle_core::names::ToolName::BATCH.as_str();

const DESCRIPTION: &str = "\
Runs several independent tool calls in one step and returns every result.

Usage:
- Give 1 to 25 calls in `tool_calls`, each as {\"tool\": \"<name>\", \"parameters\": {...}}, with \
the same parameters the tool takes when called directly.
- Calls that only read or search run at the same time. Calls that write the same file run one \
after another in the order given. A call that writes waits for the reads before it, and a read \
waits for the writes before it. Commands and other tools that must run alone wait for \
everything before them, and nothing after them starts until they finish.
- Each call succeeds or fails on its own: one failure does not stop the others.
- `batch` cannot call `batch`. Tools from outside the runtime (such as MCP servers) cannot be \
batched: call them directly.
- Use it to read or search several files at once. Do not batch calls that need each other's \
results.";

/// Which tools a batch may call.
#[derive(Clone, Debug, Default)]
pub struct BatchOptions {
    /// The names a sub-call may use. `None` allows every tool the batch's turn advertises except
    /// the batch tool itself; a host that registers external tools (MCP, for example) should list
    /// its built-ins here so those are refused.
    pub allowed: Option<Vec<String>>,
}

/// The arguments of the batch tool.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(crate = "tackle_core::schemars")]
struct BatchInput {
    /// The calls to run, 1 to 25, in the order they should be applied.
    tool_calls: Vec<BatchCall>,
}

/// One call inside a batch.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(crate = "tackle_core::schemars")]
struct BatchCall {
    /// The name of the tool to call.
    tool: String,
    /// The tool's parameters, exactly as when calling it directly.
    parameters: Map<String, Value>,
}

/// What a batch returns: one entry per sub-call, in the order the model gave them.
///
/// The model reads a rendering of it: a header `Executed k/N tool calls successfully.`, then
/// for each call `## <i>. <tool>` followed by the call's model-facing text.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[schemars(crate = "tackle_core::schemars")]
pub struct BatchOutput {
    /// How many sub-calls succeeded.
    pub succeeded: usize,
    /// How many sub-calls the batch had.
    pub total: usize,
    /// One result per sub-call, in request order.
    pub results: Vec<BatchCallResult>,
}

/// The result of one sub-call of a batch.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[schemars(crate = "tackle_core::schemars")]
pub struct BatchCallResult {
    /// The tool the sub-call named.
    pub tool: String,
    /// The sub-call's 1-based position. The journal records the sub-call under the batch's own
    /// IDs with this index.
    pub index: u32,
    /// How it ended: an `OutcomeKind` name (`success`, `failure`, `unknown`, `interrupted`, …),
    /// or `refused` when the batch did not run it.
    pub outcome: String,
    /// True when the sub-call succeeded.
    pub ok: bool,
    /// The sub-call's model-facing text: its output, its error, or a short note on why no result
    /// is available.
    pub text: String,
}

/// Builds the `batch` tool. Register it under the name `batch`, in a Location or in the process
/// placement.
///
/// Each call settles every sub-call through [`Context::settle_sub`], against the turn the batch
/// was called in: resolution, decoding, bounding and journal recording happen per sub-call, and
/// permission is asked by the sub-call's tool as usual. A sub-call's context has the batch's
/// session, agent, message and call IDs, its 1-based index, and a child of the batch's
/// cancellation token.
pub fn batch_tool(options: BatchOptions) -> AnyTool {
    let shared = Arc::new(BatchState { options });
    Tool::new(
        description().clone(),
        move |input: BatchInput, cx: Context| {
            let shared = shared.clone();
            async move { shared.run(input, cx).await }
        },
    )
    .with_projection(
        |_: &BatchInput, output: &Value| match BatchOutput::deserialize(output) {
            Ok(output) => vec![Content::text(render(&output))],
            Err(_) => Vec::new(),
        },
    )
    .with_invalid_input_message(invalid_message)
    .with_concurrency(Concurrency::Exclusive)
    .erase()
}

/// The description every batch tool shares. A tool whose definition holds this very `Arc` is a
/// batch tool, whatever its name.
fn description() -> &'static Arc<str> {
    static DESCRIPTION_ARC: OnceLock<Arc<str>> = OnceLock::new();
    DESCRIPTION_ARC.get_or_init(|| Arc::from(DESCRIPTION))
}

/// What the batch executor captures.
struct BatchState {
    options: BatchOptions,
}

/// The scheduling class of one sub-call.
#[derive(Clone, Debug, PartialEq)]
enum Class {
    /// Nothing runs (refused or unadvertised): waits for nothing, blocks nothing.
    Idle,
    /// Read-only.
    Read,
    /// Writes these normalized paths.
    Write(Vec<PathBuf>),
    /// Runs alone.
    Exclusive,
}

impl Class {
    fn of(concurrency: &Concurrency, parameters: &Map<String, Value>, root: &Path) -> Self {
        match concurrency {
            Concurrency::ReadOnly => Class::Read,
            Concurrency::Exclusive => Class::Exclusive,
            Concurrency::WritesPaths { argument } => {
                let paths = match parameters.get(argument) {
                    Some(Value::String(path)) => vec![normalize(root, path)],
                    Some(Value::Array(items)) if !items.is_empty() => {
                        let paths: Option<Vec<PathBuf>> = items
                            .iter()
                            .map(|item| item.as_str().map(|path| normalize(root, path)))
                            .collect();
                        match paths {
                            Some(paths) => paths,
                            None => return Class::Exclusive,
                        }
                    }
                    _ => return Class::Exclusive,
                };
                Class::Write(paths)
            }
        }
    }

    /// True when a call of class `self` must wait for an earlier call of class `earlier`.
    fn waits_for(&self, earlier: &Class) -> bool {
        match (self, earlier) {
            (Class::Idle, _) | (_, Class::Idle) => false,
            (Class::Exclusive, _) | (_, Class::Exclusive) => true,
            (Class::Read, Class::Read) => false,
            (Class::Write(mine), Class::Write(theirs)) => mine.iter().any(|p| theirs.contains(p)),
            (Class::Read, Class::Write(_)) | (Class::Write(_), Class::Read) => true,
        }
    }
}

/// A path as written by the model, without `.` components and relative to `root` when inside it.
fn normalize(root: &Path, raw: &str) -> PathBuf {
    let path = Path::new(raw);
    let path = path.strip_prefix(root).unwrap_or(path);
    path.components()
        .filter(|component| !matches!(component, Component::CurDir))
        .collect()
}

type Pending = Shared<BoxFuture<'static, Arc<BatchCallResult>>>;

impl BatchState {
    async fn run(&self, input: BatchInput, cx: Context) -> Result<BatchOutput, ToolFailure> {
        let total = input.tool_calls.len();
        if total == 0 {
            return Err(
                ToolFailure::new("`tool_calls` is empty, so nothing was run.")
                    .with_hint("Give between 1 and 25 calls."),
            );
        }
        if total > MAX_BATCH_CALLS {
            return Err(ToolFailure::new(format!(
                "`tool_calls` has {total} calls, but a batch runs at most {MAX_BATCH_CALLS}, so \
                 nothing was run."
            ))
            .with_hint("Split the calls into batches of at most 25."));
        }
        let Some(turn) = cx.turn().and_then(|turn| turn.downcast_ref::<TurnInner>()) else {
            return Err(ToolFailure::new(
                "This batch was not called through a turn, so nothing was run.",
            ));
        };
        let root = turn.location.root().to_path_buf();

        let mut classes: Vec<Class> = Vec::with_capacity(total);
        let mut pending: Vec<Pending> = Vec::with_capacity(total);
        for (position, BatchCall { tool, parameters }) in input.tool_calls.into_iter().enumerate() {
            // At most 25 calls: the index fits.
            let index = position as u32 + 1;
            if let Some(message) = self.refusal(turn, &tool) {
                classes.push(Class::Idle);
                pending.push(ready(refused(tool, index, message)));
                continue;
            }
            let class = match turn.get(&tool) {
                Some(advertised) => {
                    Class::of(&advertised.definition().concurrency, &parameters, &root)
                }
                None => Class::Idle,
            };
            let before: Vec<Pending> = classes
                .iter()
                .zip(&pending)
                .filter(|(earlier, _)| class.waits_for(earlier))
                .map(|(_, done)| done.clone())
                .collect();
            classes.push(class);
            let cx = cx.clone();
            let call = ToolCall::new(tool.clone(), Value::Object(parameters));
            let future = async move {
                join_all(before).await;
                Arc::new(match cx.settle_sub(index, call).await {
                    Ok(settlement) => describe(tool, index, &settlement),
                    Err(error) => refused(tool, index, format!("This call was not run: {error}.")),
                })
            };
            pending.push(future.boxed().shared());
        }

        let results: Vec<BatchCallResult> = join_all(pending)
            .await
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect();
        if cx.is_cancelled() {
            // Reported as an interruption by settlement, whatever the message.
            return Err(ToolFailure::new("The batch was interrupted."));
        }
        Ok(BatchOutput {
            succeeded: results.iter().filter(|result| result.ok).count(),
            total,
            results,
        })
    }

    /// Why `name` may not be called from this batch, as a model-facing message.
    fn refusal(&self, turn: &TurnInner, name: &str) -> Option<String> {
        let is_batch = |name: &str| {
            name == BATCH_NAME
                || turn.get(name).is_some_and(|advertised| {
                    Arc::ptr_eq(&advertised.definition().description, description())
                })
        };
        if is_batch(name) {
            return Some(format!(
                "`{name}` cannot be called from inside a batch, so this call was not run. Put \
                 its calls in this batch directly."
            ));
        }
        let allowed = self.options.allowed.as_ref()?;
        if allowed.iter().any(|allowed| allowed == name) {
            return None;
        }
        let offered: Vec<String> = turn
            .tools()
            .iter()
            .map(|tool| tool.name())
            .filter(|tool| !is_batch(tool) && allowed.iter().any(|allowed| allowed == tool))
            .map(|tool| format!("`{tool}`"))
            .collect();
        let mut message = format!(
            "Tool `{name}` cannot be called from a batch, so this call was not run. Call it \
             directly."
        );
        if offered.is_empty() {
            message.push_str(" No tool in this turn can be batched.");
        } else {
            let _ = write!(
                message,
                " Tools that can be batched: {}.",
                offered.join(", ")
            );
        }
        Some(message)
    }
}

/// A sub-call that is already decided.
fn ready(result: BatchCallResult) -> Pending {
    futures_util::future::ready(Arc::new(result))
        .boxed()
        .shared()
}

/// A sub-call the batch did not run.
fn refused(tool: String, index: u32, message: String) -> BatchCallResult {
    BatchCallResult {
        tool,
        index,
        outcome: "refused".to_owned(),
        ok: false,
        text: message,
    }
}

/// One settled sub-call as the batch reports it. Interruptions and defects get a neutral line:
/// their details are for the host, in the batch's settlement.
fn describe(tool: String, index: u32, settlement: &Settlement) -> BatchCallResult {
    let (ok, text) = match &settlement.outcome {
        Outcome::Success(output) => {
            let mut parts = Vec::new();
            for part in &output.content {
                match part {
                    Content::Text { text } => parts.push(text.clone()),
                    Content::Media { mime_type, .. } => parts.push(format!(
                        "[{mime_type} media not shown: batch results carry text only. Call \
                         `{tool}` directly to see it.]"
                    )),
                }
            }
            if parts.is_empty() && !output.structured.is_null() {
                parts.push(output.structured.to_string());
            }
            (true, parts.join("\n"))
        }
        Outcome::Error(error) => (false, error.text()),
        Outcome::Interrupted(_) => (
            false,
            "The call was interrupted before it finished; its effects, if any, are unknown."
                .to_owned(),
        ),
        Outcome::Defect(_) => (
            false,
            "The call failed with an internal error, so no result is available; its effects, if \
             any, are unknown."
                .to_owned(),
        ),
    };
    BatchCallResult {
        tool,
        index,
        outcome: settlement.outcome.kind().as_str().to_owned(),
        ok,
        text,
    }
}

/// The model-facing text of a batch.
fn render(output: &BatchOutput) -> String {
    let failed = output.total - output.succeeded;
    let mut text = format!(
        "Executed {}/{} tool calls successfully.",
        output.succeeded, output.total
    );
    if failed > 0 {
        let _ = write!(text, " {failed} failed.");
    }
    for (index, result) in output.results.iter().enumerate() {
        let _ = write!(text, "\n\n## {}. {}\n", index + 1, result.tool);
        if !result.ok {
            text.push_str("Error: ");
        }
        text.push_str(&result.text);
    }
    text
}

/// The message for undecodable batch arguments: the problems, then the expected shape.
fn invalid_message(reason: &InvalidInput, _: &ToolDefinition) -> String {
    format!(
        "{reason}\nSend the calls as `tool_calls`, a list of 1 to 25 objects: \
         {{\"tool_calls\": [{{\"tool\": \"read\", \"parameters\": {{\"filePath\": \"src/lib.rs\"}}}}, \
         {{\"tool\": \"grep\", \"parameters\": {{\"pattern\": \"fn main\"}}}}]}}."
    )
}

#[cfg(test)]
mod tests;
