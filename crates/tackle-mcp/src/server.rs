//! The MCP server handler over a tackle turn factory, and the functions that serve it.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities,
    SubscriptionFilter, Tool,
};
use rmcp::service::{
    NotificationContext, RequestContext, RunningService, ServerInitializeError,
    SubscriptionContext, SubscriptionSink,
};
use rmcp::transport::IntoTransport;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tackle_core::{
    AgentId, CallIdentity, Concurrency, Context, Progress, ToolDefinition, TraceParent,
};
use tackle_registry::{Location, RegistryChanges, ToolCall, Turn, TurnFilter};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::convert::{self, StructuredContent};
use crate::elicit::{Asker, ClientCalls};
use crate::wire::{self, LineTransport};

mod first_call;
mod input_required;
mod logging;
mod prompts;
mod resources;
pub use first_call::{Client, Confirmation, FirstCall, Prepared, QUESTION_TIMEOUT};
pub use input_required::{INPUT_REQUIRED_TIMEOUT, MAX_WAITING};
use input_required::{InFlight, WaitingCalls};
pub use logging::{BACKLOG, LogLevel, LogMessage};
pub use prompts::{PromptEntry, PromptSource, REQUEST_ARGUMENT};
pub use resources::{
    MAX_RESOURCE_BYTES, RESOURCES_PAGE, ResourceBytes, SessionResource, SessionResources,
};

/// Produces the turn a request sees.
type TurnFactory = dyn Fn() -> Turn + Send + Sync;

/// Runs when a connection's own session ends, with the session ID.
type SessionEnd = Arc<dyn Fn(&str) + Send + Sync>;

/// Text a host puts before a session's result, given the session ID (`None`: nothing).
type Notice = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Says whether a tool (by its advertised name) may reach an open world of external entities.
type OpenWorld = Arc<dyn Fn(&str, &ToolDefinition) -> bool + Send + Sync>;

/// An MCP server handler that lists and settles a Location's tools.
///
/// Cloning is cheap and yields a handle to the same server and connection: a host keeps a clone
/// to call [`TackleServer::notify_tools_changed`] after the clone it served is gone.
///
/// Each connection is its own session: it gets a fresh ID, unique across connections and
/// server processes (`mcp-<time>-<pid>-<n>`), so read tracking, todos and the other session
/// state of one client never serve another. Over stdio a process serves one connection; over
/// HTTP each MCP session is one (see [`TackleServer::for_connection`]). MCP carries no client
/// session identifier tackle could use instead (the HTTP `Mcp-Session-Id` is assigned by the
/// server). [`TackleServer::with_session`] pins one session for every connection instead.
#[derive(Clone)]
pub struct TackleServer {
    inner: Arc<Inner>,
    connection: Arc<Connection>,
}

/// What belongs to one connection.
struct Connection {
    /// The turn the last `tools/list` of this connection advertised: calls settle against it,
    /// so a call made from an outdated listing is rejected as stale rather than served by a
    /// different tool.
    listed: Mutex<Option<Turn>>,
    /// Set once this connection's client is in `peers`.
    peer_known: AtomicBool,
    /// Unique across connections and processes: the prefix of this connection's call IDs, and
    /// its session unless the server pins one.
    id: String,
    /// Runs with `id` when the connection is gone, when `id` is its session.
    end: Option<SessionEnd>,
    /// Set once the host's step before the first call has run.
    first_call: tokio::sync::OnceCell<()>,
}

impl Connection {
    fn new(inner: &Inner) -> Self {
        Self {
            listed: Mutex::new(None),
            peer_known: AtomicBool::new(false),
            id: fresh_connection_id(),
            end: match inner.session {
                None => inner.session_end.clone(),
                Some(_) => None,
            },
            first_call: tokio::sync::OnceCell::new(),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(end) = self.end.take() {
            end(&self.id);
        }
    }
}

/// Numbers `subscriptions/listen` streams within this process.
static SUBSCRIPTIONS: AtomicU64 = AtomicU64::new(1);

/// Numbers connections within this process.
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// A connection ID no other connection of any process has: the time, this process's ID and a
/// counter.
fn fresh_connection_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "mcp-{nanos:x}-{:x}-{}",
        std::process::id(),
        CONNECTIONS.fetch_add(1, Ordering::Relaxed)
    )
}

/// How long a burst of registry changes may last before the client hears of it.
const LIST_CHANGED_SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a call with a progress token goes without a progress notification, by default:
/// well under the 60 s after which OpenCode's MCP client gives up on a silent call.
pub const PROGRESS_HEARTBEAT: Duration = Duration::from_secs(15);

/// How many progress updates may wait for the client before newer ones are dropped.
const PROGRESS_BUFFER: usize = 16;

/// The longest progress message sent; the full metadata stays in the final result.
const PROGRESS_MESSAGE_CHARS: usize = 200;

struct Inner {
    turns: Box<TurnFactory>,
    /// The session of every connection, or `None` for a session per connection.
    session: Option<String>,
    agent: String,
    /// Initialized clients, for `notifications/tools/list_changed`.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Open `subscriptions/listen` streams (MCP 2026-07-28), by their request.
    subscriptions: Mutex<Vec<(u64, SubscriptionSink)>>,
    /// Calls waiting for the retry that answers their permission questions.
    waiting: Arc<WaitingCalls>,
    /// Where running calls are recorded with their client, for permission questions.
    client_calls: Option<ClientCalls>,
    /// Runs when a connection's own session ends.
    session_end: Option<SessionEnd>,
    /// Asked before each result; what it returns leads the result's content.
    notice: Option<Notice>,
    /// Which tools are open-world, for the listing's annotations.
    open_world: Option<OpenWorld>,
    /// How long a call with a progress token may go without a progress notification.
    progress_heartbeat: Duration,
    /// The host's step before each connection's first call.
    before_first_call: Option<first_call::BeforeFirstCall>,
    /// Which results carry `structuredContent`.
    structured_content: StructuredContent,
    /// The connections' logging levels and the recent log messages.
    logging: logging::Logging,
    /// What each session may read as resources; `None`: no `resources` capability.
    resources: Option<Arc<dyn SessionResources>>,
    /// What is offered as prompts; `None`: no `prompts` capability.
    prompts: Option<Arc<dyn PromptSource>>,
}

impl fmt::Debug for TackleServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TackleServer")
            .field("session", &self.session())
            .field("agent", &self.inner.agent)
            .finish_non_exhaustive()
    }
}

impl TackleServer {
    /// Serves the tools of `location` that `filter` advertises, for the agent `build`, with a
    /// session per connection (see [`TackleServer::with_agent`] and
    /// [`TackleServer::with_session`]).
    pub fn new(location: Location, filter: impl TurnFilter + Send + Sync + 'static) -> Self {
        Self::from_turns(move || {
            location.materialize(|name: &str, definition: &ToolDefinition| {
                filter.advertise(name, definition)
            })
        })
    }

    /// Serves whatever turn `turns` materializes; it is called for every `tools/list`, and for
    /// a `tools/call` that arrives before any listing.
    pub fn from_turns(turns: impl Fn() -> Turn + Send + Sync + 'static) -> Self {
        let inner = Inner {
            turns: Box::new(turns),
            session: None,
            agent: "build".to_owned(),
            peers: Mutex::new(Vec::new()),
            subscriptions: Mutex::new(Vec::new()),
            waiting: Arc::default(),
            client_calls: None,
            session_end: None,
            notice: None,
            open_world: None,
            progress_heartbeat: PROGRESS_HEARTBEAT,
            before_first_call: None,
            structured_content: StructuredContent::default(),
            logging: logging::Logging::default(),
            resources: None,
            prompts: None,
        };
        Self {
            connection: Arc::new(Connection::new(&inner)),
            inner: Arc::new(inner),
        }
    }

    /// A handle for one more connection: the same tools, agent and clients to notify, but its
    /// own session and its own last listing, so one client's `tools/list` never changes what
    /// another client's calls settle against. Transports that serve many clients (HTTP) use it.
    pub fn for_connection(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            connection: Arc::new(Connection::new(&self.inner)),
        }
    }

    /// The session of this connection's calls.
    pub fn session(&self) -> &str {
        self.inner.session.as_deref().unwrap_or(&self.connection.id)
    }

    /// The agent named in every call's identity (default `build`).
    pub fn with_agent(self, agent: impl Into<AgentId>) -> Self {
        let agent: AgentId = agent.into();
        self.reconfigure(|inner| inner.agent = agent.to_string())
    }

    /// One session for every connection, instead of a fresh one per connection. Calls still
    /// get IDs unique to their connection.
    pub fn with_session(self, session: impl Into<String>) -> Self {
        let session = session.into();
        self.reconfigure(|inner| inner.session = Some(session))
    }

    /// Runs `end` with a connection's session ID once the connection is gone (the client
    /// disconnected, or its HTTP session was deleted or expired), so the host can release
    /// what the session held. Not called for a session pinned by
    /// [`TackleServer::with_session`], which outlives any one connection.
    pub fn with_session_end(self, end: impl Fn(&str) + Send + Sync + 'static) -> Self {
        let end: SessionEnd = Arc::new(end);
        self.reconfigure(|inner| inner.session_end = Some(end))
    }

    /// Asks `notice` with the session before each call's result is sent; text it returns is
    /// put first in the result's content. A host uses it to tell a session something once
    /// (that parts of the configuration were ignored, say), deciding itself when to stop.
    pub fn with_notice(
        self,
        notice: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        let notice: Notice = Arc::new(notice);
        self.reconfigure(|inner| inner.notice = Some(notice))
    }

    /// Decides the listing's `openWorldHint` per tool (by default, every tool is open-world, as
    /// MCP assumes). The other hints come from the tool's concurrency class: read-only tools
    /// are read-only and idempotent, every other tool may be destructive.
    pub fn with_open_world(
        self,
        open_world: impl Fn(&str, &ToolDefinition) -> bool + Send + Sync + 'static,
    ) -> Self {
        let open_world: OpenWorld = Arc::new(open_world);
        self.reconfigure(|inner| inner.open_world = Some(open_world))
    }

    /// Records each running call with its client in `calls`, so an [`ElicitingApprover`]
    /// sharing the table can ask that client for permission.
    ///
    /// [`ElicitingApprover`]: crate::ElicitingApprover
    pub fn with_client_calls(self, calls: ClientCalls) -> Self {
        self.reconfigure(|inner| inner.client_calls = Some(calls))
    }

    /// Sends a progress notification at least this often while a call that carries a progress
    /// token runs (default [`PROGRESS_HEARTBEAT`]), so that a client which times a call out
    /// after a silent spell (OpenCode: 60 s, reset on progress) does not abandon a long, quiet
    /// command. A zero period is read as one millisecond.
    pub fn with_progress_heartbeat(self, every: Duration) -> Self {
        let every = every.max(Duration::from_millis(1));
        self.reconfigure(|inner| inner.progress_heartbeat = every)
    }

    /// Which results carry `structuredContent` (default [`StructuredContent::WithoutText`]:
    /// only structured-only output, so hosts that prefer it still show the model tackle's text).
    pub fn with_structured_content(self, structured: StructuredContent) -> Self {
        self.reconfigure(|inner| inner.structured_content = structured)
    }

    /// Offers each session the resources `resources` lists for it (`resources/list`, paged by
    /// [`RESOURCES_PAGE`]; `resources/read`, bounded by [`MAX_RESOURCE_BYTES`]) and declares
    /// the `resources` capability.
    pub fn with_resources(self, resources: impl SessionResources) -> Self {
        let resources: Arc<dyn SessionResources> = Arc::new(resources);
        self.reconfigure(|inner| inner.resources = Some(resources))
    }

    /// Offers what `prompts` lists as MCP prompts and declares the `prompts` capability.
    pub fn with_prompts(self, prompts: impl PromptSource) -> Self {
        let prompts: Arc<dyn PromptSource> = Arc::new(prompts);
        self.reconfigure(|inner| inner.prompts = Some(prompts))
    }

    /// Sends `message` as `notifications/message` to every connection whose client set a
    /// level it reaches (and, for a session's message, only to that session's connections),
    /// and keeps it for connections that set their level later (the last [`BACKLOG`]).
    pub async fn log(&self, message: LogMessage) {
        self.inner.logging.log(message).await;
    }

    /// Logs every message of `messages` (see [`TackleServer::log`]) until the stream ends or
    /// the returned task is aborted: the host hands its warnings to the server this way.
    pub fn log_on(
        &self,
        messages: impl futures_util::Stream<Item = LogMessage> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let server = self.clone();
        tokio::spawn(async move {
            use futures_util::StreamExt as _;
            let mut messages = std::pin::pin!(messages);
            while let Some(message) = messages.next().await {
                server.log(message).await;
            }
        })
    }

    fn reconfigure(self, change: impl FnOnce(&mut Inner)) -> Self {
        let Self { inner, connection } = self;
        match Arc::try_unwrap(inner) {
            Ok(mut inner) => {
                change(&mut inner);
                // This handle's connection starts over under the new configuration; the old
                // one never served anybody, so it ends silently.
                let mut old = connection;
                if let Some(old) = Arc::get_mut(&mut old) {
                    old.end = None;
                }
                Self {
                    connection: Arc::new(Connection::new(&inner)),
                    inner: Arc::new(inner),
                }
            }
            // Already shared: configuration is fixed once a handle escapes, so keep it as is.
            Err(inner) => {
                tracing::warn!("TackleServer configured after it was cloned; ignoring");
                Self { inner, connection }
            }
        }
    }

    /// Sends `notifications/tools/list_changed` to every connected client. Call it when the
    /// Location's registrations change. Clients that have gone away are forgotten.
    ///
    /// A client on MCP 2026-07-28 or later hears it through its `subscriptions/listen` stream,
    /// when it asked for `toolsListChanged`: that revision sends no notification outside one.
    pub async fn notify_tools_changed(&self) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.peers();
            peers.retain(|peer| !peer.is_transport_closed());
            peers.clone()
        };
        for peer in peers.into_iter().filter(|peer| !listens(peer)) {
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!("cannot send tools/list_changed: {error}");
            }
        }
        let sinks: Vec<SubscriptionSink> = self
            .subscriptions()
            .iter()
            .map(|(_, sink)| sink.clone())
            .collect();
        for sink in sinks {
            if let Err(error) = sink.notify_tool_list_changed().await {
                tracing::debug!("cannot send tools/list_changed to a subscription: {error}");
            }
        }
    }

    fn subscriptions(&self) -> std::sync::MutexGuard<'_, Vec<(u64, SubscriptionSink)>> {
        self.inner
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `notifications/tools/list_changed` after every change `changes` sees, until the
    /// returned task is aborted or no change can come. Changes within 50 ms of each other (a
    /// reconnected MCP server registering its tools, say) become one notification.
    ///
    /// Pass [`Location::changes`](tackle_registry::Location::changes) of the served Location.
    pub fn notify_on(&self, mut changes: RegistryChanges) -> tokio::task::JoinHandle<()> {
        let server = self.clone();
        tokio::spawn(async move {
            while changes.changed().await {
                tokio::time::sleep(LIST_CHANGED_SETTLE).await;
                changes.mark_seen();
                server.notify_tools_changed().await;
            }
        })
    }

    fn peers(&self) -> std::sync::MutexGuard<'_, Vec<Peer<RoleServer>>> {
        self.inner
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers this connection's client for list_changed, once.
    fn add_peer(&self, peer: Peer<RoleServer>) {
        if self.connection.peer_known.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut peers = self.peers();
        peers.retain(|peer| !peer.is_transport_closed());
        peers.push(peer);
    }

    /// A fresh turn, remembered as the one calls settle against.
    fn list(&self) -> Turn {
        let turn = (self.inner.turns)();
        *self
            .connection
            .listed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(turn.clone());
        turn
    }

    /// The turn a call settles against: the last listing, else a fresh one.
    fn turn_for_call(&self) -> Turn {
        let listed = self
            .connection
            .listed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        listed.unwrap_or_else(|| self.list())
    }
}

impl ServerHandler for TackleServer {
    fn get_info(&self) -> InitializeResult {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        capabilities.logging = Some(Default::default());
        if self.inner.resources.is_some() {
            capabilities.resources = Some(Default::default());
        }
        if self.inner.prompts.is_some() {
            capabilities.prompts = Some(Default::default());
        }
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("tackle", env!("CARGO_PKG_VERSION")))
    }

    #[allow(
        deprecated,
        reason = "MCP 2026-07-28 deprecates logging; older clients use it"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner
            .logging
            .set_level(
                &self.connection.id,
                self.session(),
                request.level,
                context.peer,
            )
            .await;
        Ok(())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let resources = self.inner.resources.clone().ok_or_else(method_not_found)?;
        resources::list(resources, self.session().to_owned(), request).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        // Every resource is listed by its URI; there is no template to fill.
        self.inner.resources.as_ref().ok_or_else(method_not_found)?;
        Ok(rmcp::model::ListResourceTemplatesResult::default())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let resources = self.inner.resources.clone().ok_or_else(method_not_found)?;
        resources::read(resources, self.session().to_owned(), request.uri)
            .await
            .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let prompts = self.inner.prompts.clone().ok_or_else(method_not_found)?;
        prompts::list(prompts).await
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let prompts = self.inner.prompts.clone().ok_or_else(method_not_found)?;
        prompts::get(prompts, request).await.map(Into::into)
    }

    async fn complete(
        &self,
        _request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        // tackle declares no `completions` capability.
        Err(method_not_found())
    }

    #[allow(deprecated, reason = "the legacy method, answered as undeclared")]
    async fn subscribe(
        &self,
        _request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The `resources` capability is declared without `subscribe`.
        Err(method_not_found())
    }

    #[allow(deprecated, reason = "the legacy method, answered as undeclared")]
    async fn unsubscribe(
        &self,
        _request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(method_not_found())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // rmcp reads a known method whose params do not parse (`tools/call` with `params:
        // null`) as a custom request: that is a call with invalid params, not an unknown method.
        if wire::is_client_method(&request.method) {
            return Err(wire::invalid_params(&request.method));
        }
        Err(method_not_found())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Every transport passes here once per client, so list_changed reaches them all.
        self.add_peer(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let turn = self.list();
        let open_world = self.inner.open_world.as_deref();
        let tools: Vec<Tool> = turn
            .tools()
            .iter()
            .map(|tool| {
                let open = open_world.is_none_or(|f| f(tool.name(), tool.definition()));
                convert::tool(tool, open, self.inner.structured_content)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // MCP 2026-07-28: a request that names a `logLevel` hears log messages while it runs.
        let _hears = context.meta.log_level().map(|level| {
            self.inner.logging.during(
                format!("{}-{}-request", self.connection.id, context.id),
                self.session(),
                level,
                context.peer.clone(),
            )
        });
        if let Some(state) = request.request_state.as_deref() {
            let responses = request.input_responses.clone().unwrap_or_default();
            let responses = responses.into_iter().collect();
            return self
                .resume(state, request.name.as_ref(), responses, &context)
                .await;
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(request.name.as_ref(), arguments);
        // Unique across connections and processes: the connection's ID and the request's.
        let call_id = format!("{}-{}", self.connection.id, context.id);
        // MCP has no assistant messages: a connection's calls count as one (its doom-loop
        // streak is its consecutive identical calls).
        let identity = CallIdentity::new(
            self.session(),
            self.inner.agent.as_str(),
            self.connection.id.as_str(),
            call_id.clone(),
        );
        if let Some(calls) = self.inner.client_calls.as_ref()
            && input_required::asks_inline(&context)
        {
            // Runs on a task of its own, so it can wait for a retry that answers a question
            // (the host's question before the connection's first call included).
            let (asker, questions) = mpsc::unbounded_channel();
            let registered = calls.enter(call_id, Asker::InputRequired(asker.clone()));
            let cancel = CancellationToken::new();
            let (progress, updates) = mpsc::channel(PROGRESS_BUFFER);
            let cx = with_trace(Context::new(identity, cancel.clone()), &context)
                .with_progress(progress);
            let server = self.clone();
            let stopped = cancel.clone();
            let in_flight = InFlight {
                tool: request.name.to_string(),
                settlement: tokio::spawn(async move {
                    server
                        .before_first_call(Asker::InputRequired(asker), &stopped)
                        .await;
                    let turn = server.turn_for_call();
                    let settlement = turn.settle(cx, call).await;
                    (turn, settlement)
                }),
                questions,
                asked: Vec::new(),
                cancel,
                progress: updates,
                _registered: registered,
                _connection: self.connection.clone(),
            };
            return self.drive(in_flight, &context).await;
        }
        self.before_first_call(Asker::Request(context.peer.clone()), &context.ct)
            .await;
        let turn = self.turn_for_call();
        let _running = self
            .inner
            .client_calls
            .as_ref()
            .map(|calls| calls.enter(call_id, Asker::Request(context.peer.clone())));
        let mut cx = with_trace(Context::new(identity, context.ct.clone()), &context);
        let forwarder = context.meta.get_progress_token().map(|token| {
            let (sender, mut updates) = mpsc::channel(PROGRESS_BUFFER);
            cx = cx.clone().with_progress(sender);
            let peer = context.peer.clone();
            let heartbeat = self.inner.progress_heartbeat;
            tokio::spawn(async move {
                forward_progress(&peer, &token, &mut updates, heartbeat).await;
            })
        });
        let settlement = turn.settle(cx, call).await;
        // No progress after the result.
        if let Some(forwarder) = forwarder {
            forwarder.abort();
        }
        let stateless = per_request_session(&context);
        let mut result = self.finish(&settlement, &turn, request.name.as_ref())?;
        if stateless && result.is_error == Some(true) && writes(&turn, request.name.as_ref()) {
            result
                .content
                .push(rmcp::model::ContentBlock::text(PER_REQUEST_SESSION));
        }
        Ok(CallToolResponse::from(result))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp narrows this to what `get_info` declares.
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let key = SUBSCRIPTIONS.fetch_add(1, Ordering::Relaxed);
        self.subscriptions()
            .push((key, subscription.sink().clone()));
        subscription.cancelled().await;
        self.subscriptions().retain(|(open, _)| *open != key);
        Ok(())
    }
}

/// Told to the model after a failed write in a session of one request (stateless HTTP under
/// MCP 2026-07-28, where the client keeps no session with the server).
pub(crate) const PER_REQUEST_SESSION: &str = "This client keeps no session with tackle, so each call \
     is a session of its own and a file read in an earlier call counts as unread here. To \
     change a file, read it and edit it in one `batch` call (the edit waits for the read).";

/// True when the request came over HTTP without an MCP session: MCP 2026-07-28 sends every
/// request on its own, so the request is the session.
fn per_request_session(context: &RequestContext<RoleServer>) -> bool {
    context
        .extensions
        .get::<http::request::Parts>()
        .is_some_and(|parts| !parts.headers.contains_key("mcp-session-id"))
}

/// `cx` continuing the trace the request names: its `_meta.traceparent` (MCP's carrier of the
/// W3C Trace Context), else the `traceparent` header of the HTTP request that carried it. An
/// invalid value is ignored, as the W3C spec asks.
fn with_trace(cx: Context, context: &RequestContext<RoleServer>) -> Context {
    let header = || {
        let parts = context.extensions.get::<http::request::Parts>()?;
        parts.headers.get("traceparent")?.to_str().ok()
    };
    let Some(value) = context.meta.get_traceparent().or_else(header) else {
        return cx;
    };
    match TraceParent::parse(value) {
        Ok(parent) => cx.with_trace_parent(parent),
        Err(error) => {
            tracing::debug!(%error, "ignored the request's trace context");
            cx
        }
    }
}

/// True when `name` in `turn` may change files (its class is not read-only).
fn writes(turn: &Turn, name: &str) -> bool {
    turn.get(name)
        .is_some_and(|tool| !matches!(tool.definition().concurrency, Concurrency::ReadOnly))
}

/// True when `peer` is on MCP 2026-07-28 or later, where notifications travel only on
/// `subscriptions/listen` streams. Such a client opens without `initialize`, so rmcp keeps no
/// handshake for it.
fn listens(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_none_or(|info| info.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

impl TackleServer {
    /// The result the client gets for `settlement` of `name`, with the host's notice first.
    fn finish(
        &self,
        settlement: &tackle_registry::Settlement,
        turn: &Turn,
        name: &str,
    ) -> Result<CallToolResult, ErrorData> {
        // The client checks the result against the listing of the name it called.
        let called = turn.get(name);
        let mut result = convert::call_result(settlement, called, self.inner.structured_content)?;
        if let Some(text) = self.inner.notice.as_ref().and_then(|n| n(self.session())) {
            result
                .content
                .insert(0, rmcp::model::ContentBlock::text(text));
        }
        Ok(result)
    }
}

/// The JSON-RPC answer to a method this server does not declare: -32601 "Method not found".
fn method_not_found() -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        "Method not found",
        None,
    )
}

/// A server running over one connection.
pub struct Serving {
    running: RunningService<RoleServer, TackleServer>,
}

impl fmt::Debug for Serving {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Serving").finish_non_exhaustive()
    }
}

impl Serving {
    /// The served handler; clone it to notify this connection's client later.
    pub fn server(&self) -> &TackleServer {
        self.running.service()
    }

    /// Sends `notifications/tools/list_changed` to the connected clients.
    pub async fn notify_tools_changed(&self) {
        self.running.service().notify_tools_changed().await;
    }

    /// Waits until the client disconnects or the connection fails.
    pub async fn waiting(self) -> Result<(), ServeError> {
        self.running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|error| ServeError(error.to_string()))
    }

    /// Closes the connection and waits for the service to stop.
    pub async fn close(mut self) -> Result<(), ServeError> {
        self.running
            .close()
            .await
            .map(|_| ())
            .map_err(|error| ServeError(error.to_string()))
    }
}

/// The connection could not be set up or failed while running.
#[derive(Debug)]
pub struct ServeError(String);

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MCP server: {}", self.0)
    }
}

impl std::error::Error for ServeError {}

impl ServeError {
    /// An error with `message`, for the other serving functions of this crate.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl From<ServerInitializeError> for ServeError {
    fn from(error: ServerInitializeError) -> Self {
        Self(error.to_string())
    }
}

/// Serves `server` over `transport` (any rmcp transport: a `(reader, writer)` pair, a duplex
/// stream, a sink/stream pair) once the client has initialized.
pub async fn serve<T, E, A>(transport: T, server: TackleServer) -> Result<Serving, ServeError>
where
    T: IntoTransport<RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let handle = server.clone();
    let running = server.serve(transport).await?;
    // Known before the caller can notify, without waiting for `notifications/initialized`.
    handle.add_peer(running.peer().clone());
    Ok(Serving { running })
}

/// Serves `server` over this process's stdin and stdout until the client disconnects, with
/// [`serve_lines`]' line discipline.
pub async fn serve_stdio(server: TackleServer) -> Result<(), ServeError> {
    #[cfg(unix)]
    if let Some((stdin, stdout)) = stdio_pipes() {
        return serve_lines(stdin, stdout, server).await?.waiting().await;
    }
    let (stdin, stdout) = rmcp::transport::stdio();
    serve_lines(stdin, stdout, server).await?.waiting().await
}

/// Stdin and stdout as non-blocking pipes, read and written on the runtime's own event loop,
/// when both are pipes (as hosts start MCP servers). Tokio's `stdin` and `stdout` hand every
/// read and write to a blocking thread: two thread hand-offs more per message. `None` (and
/// nothing changed) for a terminal, a file or a socket.
#[cfg(unix)]
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let pipe = |fd: std::os::fd::BorrowedFd<'_>| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        file.metadata()
            .is_ok_and(|meta| meta.file_type().is_fifo())
            .then_some(file)
    };
    let stdin = pipe(std::io::stdin().as_fd())?;
    let stdout = pipe(std::io::stdout().as_fd())?;
    let receiver = tokio::net::unix::pipe::Receiver::from_file(stdin).ok()?;
    let sender = tokio::net::unix::pipe::Sender::from_file(stdout).ok()?;
    Some((receiver, sender))
}

/// Serves `server` over a byte stream pair carrying one JSON-RPC message per line (what
/// [`serve_stdio`] uses). Unlike a bare `(reader, writer)` passed to [`serve`], it answers what
/// would otherwise go unanswered: a line over 16 MiB gets an error for the request id at its
/// start (or, with no readable id, the connection is closed), a malformed request gets an
/// error for its id, and a request reusing the id of one still running is refused.
pub async fn serve_lines<R, W>(
    reader: R,
    writer: W,
    server: TackleServer,
) -> Result<Serving, ServeError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    serve(LineTransport::new(reader, writer), server).await
}

/// Sends each progress update of a call to the client as `notifications/progress`, numbered in
/// order, until the call's context is gone.
async fn forward_progress(
    peer: &Peer<RoleServer>,
    token: &ProgressToken,
    updates: &mut mpsc::Receiver<Progress>,
    heartbeat_every: Duration,
) {
    let started = tokio::time::Instant::now();
    let mut heartbeat = tokio::time::interval_at(started + heartbeat_every, heartbeat_every);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut count = 0.0;
    loop {
        let message = tokio::select! {
            update = updates.recv() => match update {
                Some(update) => {
                    heartbeat.reset();
                    progress_message(&update)
                }
                None => return,
            },
            _ = heartbeat.tick() => {
                Some(format!("still running ({} s)", started.elapsed().as_secs()))
            }
        };
        count += 1.0;
        let mut param = ProgressNotificationParam::new(token.clone(), count);
        if let Some(message) = message {
            param = param.with_message(message);
        }
        if peer.notify_progress(param).await.is_err() {
            return;
        }
    }
}

/// A one-line message for a progress update: its title, else the last line of its `output`
/// metadata (a running command's tail), else the metadata as compact JSON; cut to
/// [`PROGRESS_MESSAGE_CHARS`].
fn progress_message(update: &Progress) -> Option<String> {
    let text = match (&update.title, &update.metadata) {
        (Some(title), _) => title.clone(),
        (None, Some(metadata)) => match metadata.get("output").and_then(Value::as_str) {
            Some(output) => output
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .unwrap_or_default()
                .to_owned(),
            None => metadata.to_string(),
        },
        (None, None) => return None,
    };
    let mut chars = text.chars();
    let mut cut: String = chars.by_ref().take(PROGRESS_MESSAGE_CHARS).collect();
    if chars.next().is_some() {
        cut.push('…');
    }
    Some(cut)
}
