//! `Tool<I, O>`: the opaque typed tool, its erased form `AnyTool`, and one invocation through the
//! codec boundary (decode, execute, encode, check, project).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Either, select};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bound::LimitsOverride;
use crate::clock::Stopwatch;
use crate::codec::{
    Arguments, InvalidInput, SchemaError, SchemaInfo, output_schema_info, schema_info,
};
use crate::content::{Content, ToolOutput};
use crate::context::Context;
use crate::failure::ToolFailure;
use crate::settlement::Interruption;

type ExecuteFn<I, O> =
    Arc<dyn Fn(I, Context) -> BoxFuture<'static, Result<O, ToolFailure>> + Send + Sync>;
type ProjectFn<I> = Arc<dyn Fn(&I, &Value) -> Vec<Content> + Send + Sync>;
type CloneFn<I> = fn(&I) -> I;
type FormatInvalidFn = Arc<dyn Fn(&InvalidInput, &ToolDefinition) -> String + Send + Sync>;

/// What a provider turn advertises for one tool: its description and both schemas.
///
/// Built once when the tool is built and shared by reference afterwards. Each schema is
/// generated the first time it is read and kept for the life of the process, so materializing
/// a turn never regenerates one, and a process that never advertises a tool never generates
/// its schemas.
///
/// Serializes as `{"description", "input_schema", "output_schema"}`.
#[derive(Clone, Debug)]
pub struct ToolDefinition {
    /// What the tool does, written for the model.
    pub description: Arc<str>,
    /// The arguments' schema, generated on first read.
    input: Arc<SchemaInfo>,
    /// The encoded output's schema, generated on first read.
    output: Arc<SchemaInfo>,
    /// The tool's preferred output limits, applied over the registry's defaults and under any
    /// agent or per-call override. Command output, for example, prefers `Direction::Tail`.
    pub output_limits: LimitsOverride,
    /// Which calls of this tool may run at the same time as other calls. Not advertised to the
    /// provider; schedulers such as the registry's `batch` tool read it.
    pub concurrency: Concurrency,
    /// The model providers this tool works with (such as `opencode`), or `None` for any. Not
    /// advertised; a host leaves the tool out of turns for other providers.
    pub providers: Option<Arc<[String]>>,
}

impl PartialEq for ToolDefinition {
    fn eq(&self, other: &Self) -> bool {
        self.description == other.description
            && self.input_schema() == other.input_schema()
            && self.output_schema() == other.output_schema()
            && self.output_limits == other.output_limits
            && self.concurrency == other.concurrency
            && self.providers == other.providers
    }
}

impl Serialize for ToolDefinition {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("ToolDefinition", 3)?;
        out.serialize_field("description", &self.description)?;
        out.serialize_field("input_schema", &**self.input_schema())?;
        out.serialize_field("output_schema", &**self.output_schema())?;
        out.end()
    }
}

impl ToolDefinition {
    /// JSON Schema of the arguments. Generated now if this is its first read.
    pub fn input_schema(&self) -> &Arc<Value> {
        self.input.schema()
    }

    /// JSON Schema of the encoded output. Generated now if this is its first read.
    pub fn output_schema(&self) -> &Arc<Value> {
        self.output.schema()
    }

    /// The top-level argument fields in one line (`path: string (required), limit: integer`),
    /// for error messages.
    pub fn input_summary(&self) -> &Arc<str> {
        self.input.summary()
    }

    /// Generates the input schema, then the output schema and its check, on a thread of its
    /// own, so a call about to be settled finds them ready. For a process that settles one call;
    /// a long-lived one makes them at its first call of the tool, as it would anyway.
    pub fn prepare_for_call(&self) {
        SchemaInfo::prepare_ahead(&self.input, &self.output);
    }

    /// True when a turn for `provider` may offer this tool. With no provider chosen, every tool
    /// may be offered.
    pub fn serves_provider(&self, provider: Option<&str>) -> bool {
        match (provider, &self.providers) {
            (Some(provider), Some(providers)) => providers.iter().any(|p| p == provider),
            _ => true,
        }
    }
}

/// Which calls of a tool may run at the same time as other calls.
///
/// A scheduler uses it to overlap what is safe to overlap and to serialize the rest in the
/// order the model sent the calls. The default is [`Concurrency::Exclusive`]: a tool that
/// declares nothing runs alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Concurrency {
    /// The tool only reads. Its calls may overlap any other read-only call.
    ReadOnly,
    /// The tool writes the path or paths named by the top-level argument `argument` (a string,
    /// or an array of strings). Calls writing the same path run one after another in order;
    /// calls writing different paths may overlap. When the argument is missing or has another
    /// type, the call is treated as [`Concurrency::Exclusive`].
    WritesPaths {
        /// The name of the top-level argument that holds the path, such as `filePath`.
        argument: String,
    },
    /// The call runs alone: it waits for every earlier call, and no later call starts until it
    /// has finished.
    #[default]
    Exclusive,
}

impl Concurrency {
    /// A tool that writes the path named by the top-level argument `argument`.
    pub fn writes_paths(argument: impl Into<String>) -> Self {
        Concurrency::WritesPaths {
            argument: argument.into(),
        }
    }
}

/// The shared state a tool's handler receives on every call (see [`Tool::with_state`]).
/// Destructure it in the handler's signature: `State(env): State<Env>`.
#[derive(Clone, Copy, Debug, Default)]
pub struct State<S>(pub S);

/// A typed tool: a description, one executor, and optionally a projection for the model.
///
/// A `Tool` has no name. It gets one when it is registered, under the key of the registration
/// record, so the same value can be registered under several names.
///
/// Its executor and schemas are private. The only way to run it is through settlement, which
/// decodes the arguments with the input codec, runs the executor with the host's
/// [`Context`], encodes the output and checks it against the output schema
/// (`LAW-SINGLE-EXECUTOR`, `LAW-CODEC-BOUNDARY`).
///
/// Be careful when:
/// - capturing dependencies. Acquire services when you build the tool and hand them over as
///   [`State`] with [`Tool::with_state`]: the handler gets its own clone on every call, and the
///   context carries identity and cancellation only.
/// - returning errors. Return [`ToolFailure`] for what the model can fix. A panic is reported to
///   the host as a defect and never reaches the model; so is an output that fails its schema.
/// - projecting. The projection must be pure and total: it sees the decoded input and the encoded
///   output, never the invocation's identity.
pub struct Tool<I, O> {
    inner: Arc<ToolInner<I, O>>,
}

struct ToolInner<I, O> {
    definition: Arc<ToolDefinition>,
    input: Arc<SchemaInfo>,
    output: Arc<SchemaInfo>,
    execute: ExecuteFn<I, O>,
    project: Option<(ProjectFn<I>, CloneFn<I>)>,
    format_invalid: Option<FormatInvalidFn>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for ToolInner<I, O> {
    fn clone(&self) -> Self {
        Self {
            definition: self.definition.clone(),
            input: self.input.clone(),
            output: self.output.clone(),
            execute: self.execute.clone(),
            project: self.project.clone(),
            format_invalid: self.format_invalid.clone(),
            _types: PhantomData,
        }
    }
}

impl<I, O> Clone for Tool<I, O> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<I, O> fmt::Debug for Tool<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("description", &self.inner.definition.description)
            .finish_non_exhaustive()
    }
}

impl<I, O> Tool<I, O>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + JsonSchema + Send + 'static,
{
    /// Builds a tool from its description and its executor.
    ///
    /// Schemas for `I` and `O` are generated on first use of each type and cached for the life of
    /// the process.
    pub fn new<F, Fut>(description: impl Into<Arc<str>>, execute: F) -> Self
    where
        F: Fn(I, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolFailure>> + Send + 'static,
    {
        let started = Instant::now();
        let tool = Self::build(
            description.into(),
            schema_info::<I>(),
            output_schema_info::<O>(),
            execute,
        );
        tracing::debug!(
            target: "tackle::tool",
            input = std::any::type_name::<I>(),
            output = std::any::type_name::<O>(),
            elapsed_us = started.elapsed().as_micros() as u64,
            "built tool"
        );
        tool
    }

    /// Builds a tool whose handler takes shared state, the way an axum handler takes `State`:
    /// `state` is cloned into a [`State`] for every call, so the handler is a plain `async fn`
    /// that owns what it needs, with no clones written by hand.
    ///
    /// ```
    /// # use tackle_core::{Context, State, Tool, ToolFailure};
    /// # use std::sync::Arc;
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Greet { name: String }
    ///
    /// async fn greet(
    ///     State(greeting): State<Arc<str>>,
    ///     input: Greet,
    ///     _cx: Context,
    /// ) -> Result<String, ToolFailure> {
    ///     Ok(format!("{greeting}, {}", input.name))
    /// }
    ///
    /// let tool = Tool::with_state("Greets someone.", Arc::<str>::from("Hello"), greet);
    /// ```
    pub fn with_state<S, H, Fut>(description: impl Into<Arc<str>>, state: S, handler: H) -> Self
    where
        S: Clone + Send + Sync + 'static,
        H: Fn(State<S>, I, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolFailure>> + Send + 'static,
    {
        Self::new(description, move |input, cx| {
            handler(State(state.clone()), input, cx)
        })
    }

    fn build<F, Fut>(
        description: Arc<str>,
        input: Arc<SchemaInfo>,
        output: Arc<SchemaInfo>,
        execute: F,
    ) -> Self
    where
        F: Fn(I, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolFailure>> + Send + 'static,
    {
        let definition = Arc::new(ToolDefinition {
            description,
            input: input.clone(),
            output: output.clone(),
            output_limits: LimitsOverride::default(),
            concurrency: Concurrency::default(),
            providers: None,
        });
        Self {
            inner: Arc::new(ToolInner {
                definition,
                input,
                output,
                execute: Arc::new(move |input, cx| Box::pin(execute(input, cx))),
                project: None,
                format_invalid: None,
                _types: PhantomData,
            }),
        }
    }

    fn edit(mut self, change: impl FnOnce(&mut ToolInner<I, O>)) -> Self {
        change(Arc::make_mut(&mut self.inner));
        self
    }

    /// Sets the projection that turns the decoded input and the encoded output into what the
    /// model reads.
    ///
    /// Without one, a string output becomes a single text part and any other output is shown to
    /// the model as structured JSON.
    pub fn with_projection<P>(self, project: P) -> Self
    where
        I: Clone,
        P: Fn(&I, &Value) -> Vec<Content> + Send + Sync + 'static,
    {
        self.edit(|inner| inner.project = Some((Arc::new(project), I::clone)))
    }

    /// Replaces the default message for undecodable arguments, for example to show the expected
    /// payload shape. The registry still names the tool before the message.
    pub fn with_invalid_input_message<F>(self, format: F) -> Self
    where
        F: Fn(&InvalidInput, &ToolDefinition) -> String + Send + Sync + 'static,
    {
        self.edit(|inner| inner.format_invalid = Some(Arc::new(format)))
    }

    /// Sets this tool's preferred output limits (for example `Direction::Tail` for command
    /// output). Agent and per-call overrides still take precedence.
    pub fn with_output_limits(self, limits: LimitsOverride) -> Self {
        self.edit(|inner| Arc::make_mut(&mut inner.definition).output_limits = limits)
    }

    /// Declares which calls of this tool may run at the same time as other calls. Without it a
    /// tool is [`Concurrency::Exclusive`].
    pub fn with_concurrency(self, concurrency: Concurrency) -> Self {
        self.edit(|inner| Arc::make_mut(&mut inner.definition).concurrency = concurrency)
    }

    /// Declares the model providers this tool works with, such as `["opencode"]`, for a tool
    /// that needs one provider's service. Without it a tool serves any provider. See
    /// [`ToolDefinition::serves_provider`].
    pub fn with_providers<S: Into<String>>(self, providers: impl IntoIterator<Item = S>) -> Self {
        let providers: Arc<[String]> = providers.into_iter().map(Into::into).collect();
        self.edit(|inner| Arc::make_mut(&mut inner.definition).providers = Some(providers))
    }

    /// What a provider turn advertises for this tool.
    pub fn definition(&self) -> &Arc<ToolDefinition> {
        &self.inner.definition
    }

    /// Erases the types so tools of different types can share a registry.
    pub fn erase(self) -> AnyTool
    where
        I: Sync,
        O: Sync,
    {
        AnyTool(Arc::new(self))
    }
}

impl Tool<Value, Value> {
    /// Builds a tool whose input schema is known only at run time, such as a custom command tool
    /// or a tool of an MCP server.
    ///
    /// `input_schema` must be a JSON Schema object describing the argument object; it is compiled
    /// here, and a schema that does not compile (or does not describe an object) is refused with
    /// a [`SchemaError`] naming the problem. The schema is advertised as is in
    /// [`ToolDefinition::input_schema`], and every call's arguments are validated against it at
    /// the codec boundary, with the same field-path errors as a typed tool: the executor only
    /// ever sees arguments that match (stringified scalars coerced where the schema accepts
    /// nothing else). The output is any JSON value.
    pub fn with_schema<F, Fut>(
        description: impl Into<Arc<str>>,
        input_schema: Value,
        execute: F,
    ) -> Result<Self, SchemaError>
    where
        F: Fn(Value, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolFailure>> + Send + 'static,
    {
        let input = Arc::new(SchemaInfo::dynamic(input_schema)?);
        Ok(Self::build(
            description.into(),
            input,
            output_schema_info::<Value>(),
            execute,
        ))
    }
}

impl<I, O> From<Tool<I, O>> for AnyTool
where
    I: DeserializeOwned + JsonSchema + Send + Sync + 'static,
    O: Serialize + JsonSchema + Send + Sync + 'static,
{
    fn from(tool: Tool<I, O>) -> Self {
        tool.erase()
    }
}

/// How one invocation ended, before the registry bounds and records it.
#[derive(Clone, Debug, PartialEq)]
pub enum InvocationOutcome {
    /// The tool ran and its output passed the output codec.
    Completed(ToolOutput),
    /// The tool returned an expected failure for the model.
    Failed(ToolFailure),
    /// The arguments did not decode; the tool was not invoked. The message is model-facing.
    InvalidInput {
        /// The structured reason.
        reason: InvalidInput,
        /// The model-facing message (the tool's own formatter, or the default).
        message: String,
    },
    /// The tool returned a value its output codec rejects. An operational error for the host.
    InvalidOutput(String),
    /// The host cancelled the call, or the tool reported that it was stopped from outside. Not a
    /// tool result.
    Interrupted(Interruption),
    /// The tool panicked. An operational error for the host; the payload is never shown to the
    /// model.
    Panicked(String),
}

/// Durations of the phases inside one invocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InvocationTimings {
    /// Decoding the arguments.
    pub decode: Duration,
    /// Running the executor.
    pub execute: Duration,
    /// Encoding and checking the output.
    pub encode: Duration,
    /// Projecting the output for the model.
    pub project: Duration,
}

/// The result of running one call through the codec boundary.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// How it ended.
    pub outcome: InvocationOutcome,
    /// How long each phase took.
    pub timings: InvocationTimings,
}

/// A tool with its types erased, as registries store it.
///
/// Cloning is cheap. Two clones are the same tool: [`AnyTool::same_tool`] compares them by
/// identity.
#[derive(Clone)]
pub struct AnyTool(Arc<dyn ErasedTool>);

impl fmt::Debug for AnyTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyTool")
            .field("description", &self.0.definition().description)
            .finish_non_exhaustive()
    }
}

impl AnyTool {
    /// What a provider turn advertises for this tool.
    pub fn definition(&self) -> &Arc<ToolDefinition> {
        self.0.definition()
    }

    /// True when both handles are the same tool value.
    pub fn same_tool(&self, other: &AnyTool) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Runs one call through the codec boundary: decode, execute, encode, check, project.
    ///
    /// Only the settlement kernel calls it ([`Settle::run`](crate::Settle::run)), which adds the
    /// bound and the journal around it (`LAW-SINGLE-EXECUTOR`). The future owns everything it
    /// needs, so it outlives any change to the registry that handed out this tool
    /// (`LAW-CAPTURED-EXECUTION`).
    ///
    /// - Invalid arguments never reach the executor (`LAW-INVALID-INPUT-NEVER-INVOKES`).
    /// - An output that fails its codec is never `Completed` (`LAW-INVALID-OUTPUT-NEVER-SUCCEEDS`).
    /// - Cancellation wins: once the context's token fires, the executor is dropped and the outcome
    ///   is `Interrupted`, and a `Failed` that races with cancellation is also reported as
    ///   `Interrupted` (`LAW-INTERRUPTION-NOT-A-RESULT`). A `Completed` output is kept: its effects
    ///   happened. A [`ToolFailure::interruption`] is `Interrupted` too, with its reason.
    /// - A panic anywhere in the tool's code becomes `Panicked`.
    ///
    /// `clock`'s current lap is the decode phase; the invocation laps it at each phase boundary
    /// and hands it back.
    pub(crate) fn run_invocation(
        &self,
        arguments: Arguments,
        cx: Context,
        clock: Stopwatch,
    ) -> impl Future<Output = (Invocation, Stopwatch)> + Send + 'static {
        self.0.invoke(arguments, cx, clock)
    }

    /// Runs one call through the codec boundary alone, without resolution, bound or journal: the
    /// way a tool's own unit tests call it.
    ///
    /// Only with the `test-invoke` feature, which belongs in `[dev-dependencies]` only: a host
    /// that enables it in a normal dependency gets a second way to run a tool
    /// (`LAW-SINGLE-EXECUTOR`), and a tidy test refuses that inside this workspace.
    #[cfg(any(test, feature = "test-invoke"))]
    pub fn invoke(
        &self,
        arguments: Arguments,
        cx: Context,
    ) -> impl Future<Output = Invocation> + Send + 'static {
        let invocation = self.run_invocation(arguments, cx, Stopwatch::start());
        async move { invocation.await.0 }
    }
}

trait ErasedTool: Send + Sync {
    fn definition(&self) -> &Arc<ToolDefinition>;
    fn invoke(
        &self,
        arguments: Arguments,
        cx: Context,
        clock: Stopwatch,
    ) -> BoxFuture<'static, (Invocation, Stopwatch)>;
}

impl<I, O> ErasedTool for Tool<I, O>
where
    I: DeserializeOwned + JsonSchema + Send + Sync + 'static,
    O: Serialize + JsonSchema + Send + Sync + 'static,
{
    fn definition(&self) -> &Arc<ToolDefinition> {
        &self.inner.definition
    }

    fn invoke(
        &self,
        arguments: Arguments,
        cx: Context,
        mut clock: Stopwatch,
    ) -> BoxFuture<'static, (Invocation, Stopwatch)> {
        let tool = self.clone();
        let mut timings = InvocationTimings::default();
        Box::pin(async move {
            // Watch the token through a handle on the context: cloning a token takes its lock.
            let scope = cx.clone();
            let cancellation = scope.cancellation();
            if cancellation.is_cancelled() {
                let outcome = InvocationOutcome::Interrupted(Interruption::Cancelled);
                return (Invocation { outcome, timings }, clock);
            }
            let run = tool.run(arguments, cx, &mut timings, &mut clock);
            let run = AssertUnwindSafe(run).catch_unwind();
            let cancelled = cancellation.cancelled();
            let outcome = match select(std::pin::pin!(run), std::pin::pin!(cancelled)).await {
                Either::Left((Ok(outcome), _)) => match outcome {
                    InvocationOutcome::Failed(_) if cancellation.is_cancelled() => {
                        InvocationOutcome::Interrupted(Interruption::Cancelled)
                    }
                    InvocationOutcome::Failed(failure) if failure.is_interruption() => {
                        InvocationOutcome::Interrupted(Interruption::Reported(
                            failure.message().to_owned(),
                        ))
                    }
                    outcome => outcome,
                },
                Either::Left((Err(panic), _)) => {
                    InvocationOutcome::Panicked(panic_message(&*panic))
                }
                Either::Right(((), _)) => InvocationOutcome::Interrupted(Interruption::Cancelled),
            };
            (Invocation { outcome, timings }, clock)
        })
    }
}

impl<I, O> Tool<I, O>
where
    I: DeserializeOwned + JsonSchema + Send + Sync + 'static,
    O: Serialize + JsonSchema + Send + Sync + 'static,
{
    async fn run(
        self,
        arguments: Arguments,
        cx: Context,
        timings: &mut InvocationTimings,
        clock: &mut Stopwatch,
    ) -> InvocationOutcome {
        let tool = &*self.inner;
        // One clock reading per phase boundary: each phase starts where the previous one ended.
        let decoded = tool.input.decode::<I>(&arguments);
        drop(arguments);
        timings.decode = clock.lap();
        let input = match decoded {
            Ok(input) => input,
            Err(reason) => {
                let message = match &tool.format_invalid {
                    Some(format) => format(&reason, &tool.definition),
                    None => default_invalid_message(&reason, &tool.definition),
                };
                return InvocationOutcome::InvalidInput { reason, message };
            }
        };
        let kept_input = tool.project.as_ref().map(|(_, clone)| clone(&input));

        let result = (tool.execute)(input, cx).await;
        timings.execute = clock.lap();
        let output = match result {
            Ok(output) => output,
            Err(failure) => return InvocationOutcome::Failed(failure),
        };

        let encoded = match serde_json::to_value(&output) {
            Ok(encoded) => encoded,
            Err(error) => {
                return InvocationOutcome::InvalidOutput(format!(
                    "the output could not be encoded: {error}"
                ));
            }
        };
        drop(output);
        if let Err(errors) = tool.output.check_output(&encoded) {
            return InvocationOutcome::InvalidOutput(format!(
                "the output does not match its schema: {errors}"
            ));
        }
        timings.encode = clock.lap();

        let content = match (&tool.project, kept_input) {
            (Some((project, _)), Some(input)) => project(&input, &encoded),
            _ => match &encoded {
                Value::String(text) => vec![Content::text(text.clone())],
                _ => Vec::new(),
            },
        };
        timings.project = clock.lap();
        InvocationOutcome::Completed(ToolOutput {
            content,
            structured: encoded,
        })
    }
}

/// The default model-facing message for undecodable arguments.
fn default_invalid_message(reason: &InvalidInput, definition: &ToolDefinition) -> String {
    let fix = match reason {
        InvalidInput::Syntax { .. } => "Send the arguments as one complete JSON object.",
        InvalidInput::Fields { .. } => "Fix these fields and call the tool again.",
    };
    if definition.input_summary().is_empty() {
        format!("{reason}\n{fix}")
    } else {
        format!(
            "{reason}\n{fix} Expected fields: {}.",
            definition.input_summary()
        )
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

#[cfg(test)]
mod tests;
