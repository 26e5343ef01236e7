//! The MCP client: connects to an MCP server and registers its tools into a Location for as
//! long as the server stays connected, following the server's `tools/list_changed`.

mod child;
mod names;
mod result;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use http::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientRequest, JsonObject, PingRequest,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tackle_core::{Context, Tool, ToolFailure};
use tackle_registry::{Location, Registration, RegistrationError, ToolSet};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use child::{DEPTH_ENV, MAX_DEPTH, kill_child_servers, may_start_servers, nesting_depth};
pub use names::assign_tool_names;

/// How to reach one MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name: the prefix of its tools' names (`<name>_<tool>`).
    pub name: String,
    /// How to talk to it.
    pub transport: McpTransport,
}

impl McpServerConfig {
    /// A server started as a child process speaking MCP over its stdin and stdout.
    pub fn stdio(
        name: impl Into<String>,
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
            },
        }
    }

    /// Sets `key` to `value` in a stdio server's environment; no effect on other transports.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }
}

/// The transport of an MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process; its stderr is inherited.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set in its environment, on top of this process's.
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP. HTTP has no connection to lose, so the client pings the server (see
    /// [`ConnectOptions::with_heartbeat`]) and treats a failed ping as a disconnection.
    Http {
        /// The endpoint, such as `https://example.com/mcp`.
        url: String,
        /// Headers sent with every request. An `Authorization: Bearer <token>` header is sent
        /// as rmcp's bearer token; any other value is sent as it is.
        headers: BTreeMap<String, String>,
    },
}

/// Checks a call to an MCP tool before it is sent: it gets the call's context and the
/// registered tool name (`<server>_<tool>`). An `Err` becomes the call's tool failure, and
/// nothing is sent to the server.
pub type BeforeCall =
    Arc<dyn Fn(Context, String) -> BoxFuture<'static, Result<(), ToolFailure>> + Send + Sync>;

/// How [`connect`] and [`supervise`] behave.
#[derive(Clone)]
pub struct ConnectOptions {
    startup_timeout: Duration,
    backoff_initial: Duration,
    backoff_max: Duration,
    heartbeat: Duration,
    before_call: Option<BeforeCall>,
    sandbox: Option<tackle_sandbox::Confine>,
}

impl fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("startup_timeout", &self.startup_timeout)
            .field("backoff_initial", &self.backoff_initial)
            .field("backoff_max", &self.backoff_max)
            .field("heartbeat", &self.heartbeat)
            .field("before_call", &self.before_call.is_some())
            .field("sandbox", &self.sandbox.is_some())
            .finish()
    }
}

impl Default for ConnectOptions {
    /// A 10 s startup timeout; reconnection backoff from 0.5 s doubling up to 30 s; an HTTP
    /// heartbeat every 10 s; no hook before calls.
    fn default() -> Self {
        Self {
            startup_timeout: Duration::from_secs(10),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            before_call: None,
            sandbox: None,
        }
    }
}

impl ConnectOptions {
    /// How long starting, initializing and listing the tools may take in all.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// The first delay before [`supervise`] reconnects, and the most it doubles up to.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_max = max.max(initial);
        self
    }

    /// How often an HTTP server is pinged. A ping that fails or takes longer than the startup
    /// timeout counts as a disconnection. A call that fails in the transport pings at once.
    /// Stdio servers are not pinged: their process exiting is the disconnection.
    pub fn with_heartbeat(mut self, interval: Duration) -> Self {
        self.heartbeat = interval.max(Duration::from_millis(1));
        self
    }

    /// Runs `hook` before every call to a registered tool; see [`BeforeCall`].
    pub fn with_before_call(mut self, hook: BeforeCall) -> Self {
        self.before_call = Some(hook);
        self
    }

    /// Starts child servers under `sandbox`.
    pub fn with_sandbox(mut self, sandbox: tackle_sandbox::Confine) -> Self {
        self.sandbox = Some(sandbox);
        self
    }
}

/// Why [`connect`] failed. Nothing was registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server process could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// Starting, initializing and listing the tools took longer than the startup timeout.
    #[error("MCP server `{server}` did not start within {after:?}")]
    Timeout {
        /// The server's name.
        server: String,
        /// The startup timeout.
        after: Duration,
    },
    /// This process is itself an MCP server started by tackle (see [`DEPTH_ENV`]), and
    /// servers nested deeper than [`MAX_DEPTH`] are not started. Retrying cannot help.
    #[error(
        "MCP server `{server}` was not started: this process is an MCP server started by \
         another tackle ({DEPTH_ENV}={depth}), and nested servers are not started"
    )]
    Nested {
        /// The server's name.
        server: String,
        /// This process's nesting depth.
        depth: u32,
    },
    /// The MCP handshake failed.
    #[error("MCP server `{server}`: initialization failed: {message}")]
    Initialize {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
    /// `tools/list` failed.
    #[error("MCP server `{server}`: cannot list its tools: {message}")]
    ListTools {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
    /// The Location refused the tools.
    #[error("MCP server `{server}`: cannot register its tools: {source}")]
    Register {
        /// The server's name.
        server: String,
        /// Why.
        source: RegistrationError,
    },
    /// A configured HTTP header cannot be sent.
    #[error("MCP server `{server}`: cannot send the header `{header}`: {reason}")]
    Header {
        /// The server's name.
        server: String,
        /// The header's name as configured.
        header: String,
        /// Why; never the header's value, which may be a secret.
        reason: &'static str,
    },
}

/// The registered tool names of a connection and the tools it skipped.
#[derive(Clone, Debug, Default)]
struct Listing {
    /// Registered names, sorted by the tools' original names.
    tools: Vec<String>,
    /// One message per skipped tool.
    warnings: Vec<String>,
}

/// What lives exactly as long as the server is connected.
struct Shared {
    /// `None` once the connection is down; a refresh never registers again after that.
    registration: Mutex<Option<Registration>>,
    /// The current registration's names and warnings.
    listing: watch::Sender<Listing>,
    /// Asks the heartbeat to ping now, after a call failed in the transport.
    probe: Notify,
}

impl Shared {
    fn unregister(&self) {
        let registration = self
            .registration
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(registration);
    }
}

/// A connected MCP server whose tools are registered in a Location.
///
/// The connection owns the registration. When the server sends `tools/list_changed`, the
/// connection lists the tools again and replaces the registration: the new one is registered
/// before the old one is dropped, so a name the server keeps never disappears, but every tool
/// gets a new identity and a turn that advertised the old ones settles their calls as stale. A
/// failed re-list keeps the old registration and logs a warning. When the server disconnects
/// (its process exits, the transport closes) the registration is dropped: the tools disappear,
/// and a turn that advertised them settles their calls as stale. Dropping the connection (or
/// [`McpConnection::close`]) stops the server and unregisters the tools too.
pub struct McpConnection {
    server: String,
    shared: Arc<Shared>,
    closed: watch::Receiver<bool>,
    cancel: CancellationToken,
}

impl fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.server)
            .field("tools", &self.tools())
            .field("warnings", &self.warnings())
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The names the server's tools are registered under, sorted by their original names: a
    /// snapshot of the latest listing, which changes when the server sends `tools/list_changed`.
    pub fn tools(&self) -> Vec<String> {
        self.shared.listing.borrow().tools.clone()
    }

    /// Tools of the latest listing that were skipped, one message each (for example a schema
    /// tackle cannot compile).
    pub fn warnings(&self) -> Vec<String> {
        self.shared.listing.borrow().warnings.clone()
    }

    /// True until the server disconnects or the connection is closed.
    pub fn is_connected(&self) -> bool {
        !*self.closed.borrow()
    }

    /// Waits until the server disconnects; its tools are unregistered by then.
    pub async fn disconnected(&self) {
        let mut closed = self.closed.clone();
        // An error means the watcher is gone, which also means disconnected.
        let _ = closed.wait_for(|closed| *closed).await;
    }

    /// Unregisters the tools, stops the server and waits until the connection is down.
    pub async fn close(self) {
        self.shared.unregister();
        self.cancel.cancel();
        self.disconnected().await;
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        self.shared.unregister();
        self.cancel.cancel();
    }
}

/// Starts the MCP server `config` describes (or reaches it over HTTP), initializes it, lists
/// all its tools and registers them in `location` under [`assign_tool_names`].
///
/// Starting, initializing and listing must finish within the startup timeout of `options`. A
/// tool whose input schema tackle refuses is skipped and reported in
/// [`McpConnection::warnings`]; the others still register. Whenever the server sends
/// `tools/list_changed`, its tools are listed again (within the startup timeout) and the
/// registration is replaced; see [`McpConnection`].
pub async fn connect(
    config: &McpServerConfig,
    location: &Location,
    options: &ConnectOptions,
) -> Result<McpConnection, ConnectError> {
    let server = config.name.clone();
    let cancel = CancellationToken::new();
    let listener = Listener::default();
    let list_changed = listener.list_changed.clone();
    // Set once a child process is started; it takes the child's process group down with it.
    let mut group = None;
    let startup = async {
        let running = match &config.transport {
            McpTransport::Stdio { command, args, env } => {
                let depth = child::nesting_depth();
                if !child::may_start_servers(depth) {
                    return Err(ConnectError::Nested {
                        server: server.clone(),
                        depth,
                    });
                }
                let mut process = child::command(command, args, env, depth);
                if let Some(sandbox) = &options.sandbox {
                    sandbox
                        .apply(process.as_std_mut())
                        .map_err(|error| ConnectError::Spawn {
                            server: server.clone(),
                            command: command.clone(),
                            source: std::io::Error::other(error.to_string()),
                        })?;
                }
                let transport =
                    TokioChildProcess::new(process).map_err(|source| ConnectError::Spawn {
                        server: server.clone(),
                        command: command.clone(),
                        source,
                    })?;
                group = child::ChildGroup::led_by(transport.id());
                initialize(&server, listener, transport, cancel.clone()).await?
            }
            McpTransport::Http { url, headers } => {
                let transport = http_transport(&server, url, headers)?;
                initialize(&server, listener, transport, cancel.clone()).await?
            }
        };
        let tools =
            running
                .peer()
                .list_all_tools()
                .await
                .map_err(|error| ConnectError::ListTools {
                    server: server.clone(),
                    message: error.to_string(),
                })?;
        Ok::<_, ConnectError>((running, tools))
    };
    let (running, listed) = match tokio::time::timeout(options.startup_timeout, startup).await {
        Ok(started) => started?,
        Err(_) => {
            return Err(ConnectError::Timeout {
                server,
                after: options.startup_timeout,
            });
        }
    };

    let shared = Arc::new(Shared {
        registration: Mutex::new(None),
        listing: watch::Sender::new(Listing::default()),
        probe: Notify::new(),
    });
    let remote = Remote {
        server: server.as_str().into(),
        peer: running.peer().clone(),
        shared: shared.clone(),
        before_call: options.before_call.clone(),
    };
    let (record, listing) = tool_record(&remote, listed);
    let registration = location
        .register(record)
        .map_err(|source| ConnectError::Register {
            server: server.clone(),
            source,
        })?;
    *shared
        .registration
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(registration);
    shared.listing.send_replace(listing);

    let refresh = Refresh {
        remote,
        location: location.clone(),
        list_changed,
        timeout: options.startup_timeout,
    };
    let heartbeat = matches!(config.transport, McpTransport::Http { .. })
        .then_some((options.heartbeat, options.startup_timeout));
    let (closed_tx, closed) = watch::channel(false);
    tokio::spawn(watch_connection(
        server.clone(),
        running,
        shared.clone(),
        closed_tx,
        heartbeat,
        refresh,
        cancel.clone(),
        group,
    ));
    Ok(McpConnection {
        server,
        shared,
        closed,
        cancel,
    })
}

/// The client's handler: it only passes `tools/list_changed` on to the connection.
#[derive(Default)]
struct Listener {
    list_changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // Changes that arrive while a re-list runs fold into one more re-list.
        self.list_changed.notify_one();
    }
}

/// Runs the MCP handshake over `transport`, with `listener` handling the server's messages.
async fn initialize<T, E, A>(
    server: &str,
    listener: Listener,
    transport: T,
    cancel: CancellationToken,
) -> Result<RunningService<RoleClient, Listener>, ConnectError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    listener
        .serve_with_ct(transport, cancel)
        .await
        .map_err(|error| ConnectError::Initialize {
            server: server.to_owned(),
            message: error.to_string(),
        })
}

/// Headers the streamable HTTP transport sets itself.
const TRANSPORT_HEADERS: [&str; 5] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// The streamable HTTP transport to `url`, sending `headers` with every request.
fn http_transport(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<impl StreamableHttpClient>, ConnectError> {
    let refuse = |header: &str, reason| ConnectError::Header {
        server: server.to_owned(),
        header: header.to_owned(),
        reason,
    };
    let mut bearer = None;
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header_name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| refuse(name, "it is not a valid header name"))?;
        if TRANSPORT_HEADERS.contains(&header_name.as_str()) {
            return Err(refuse(name, "the MCP transport sets it itself"));
        }
        let header_value = HeaderValue::from_str(value.trim())
            .map_err(|_| refuse(name, "its value is not a valid header value"))?;
        if header_name == http::header::AUTHORIZATION
            && let Some(token) = bearer_token(value)
        {
            // rmcp sends its auth header as `Bearer <token>` on every request.
            bearer = Some(token.to_owned());
            continue;
        }
        custom.insert(header_name, header_value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    config.auth_header = bearer;
    install_crypto_provider();
    Ok(StreamableHttpClientTransport::from_config(config))
}

/// The token of a `Bearer <token>` authorization value.
fn bearer_token(value: &str) -> Option<&str> {
    let value = value.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

/// Installs ring as the process's TLS crypto provider, which reqwest (built without one) needs
/// before any client is built.
fn install_crypto_provider() {
    // An error means a provider is installed already, which is all reqwest needs.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Waits for the service to stop (or, over HTTP, for a ping to fail), following the server's
/// `tools/list_changed` meanwhile, then drops the registration and reports the disconnection.
/// A child server's process group is killed when this ends, or when the task is dropped.
#[allow(clippy::too_many_arguments)]
async fn watch_connection(
    server: String,
    running: RunningService<RoleClient, Listener>,
    shared: Arc<Shared>,
    closed: watch::Sender<bool>,
    heartbeat: Option<(Duration, Duration)>,
    refresh: Refresh,
    cancel: CancellationToken,
    group: Option<child::ChildGroup>,
) {
    let _group = group;
    let peer = running.peer().clone();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let reason = tokio::select! {
        reason = &mut waiting => format!("{reason:?}"),
        never = refresh.follow() => match never {},
        failure = heartbeat_failure(&peer, &shared, heartbeat) => {
            shared.unregister();
            cancel.cancel();
            let _ = waiting.await;
            failure
        }
    };
    shared.unregister();
    tracing::info!("MCP server `{server}` disconnected ({reason}); its tools were removed");
    let _ = closed.send(true);
}

/// Pings every `interval` (and whenever a call failed in the transport) until a ping fails or
/// takes longer than `timeout`; never returns without a heartbeat.
async fn heartbeat_failure(
    peer: &Peer<RoleClient>,
    shared: &Shared,
    heartbeat: Option<(Duration, Duration)>,
) -> String {
    let Some((interval, timeout)) = heartbeat else {
        return std::future::pending().await;
    };
    loop {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = shared.probe.notified() => {}
        }
        let ping = peer.send_request(ClientRequest::PingRequest(PingRequest::default()));
        match tokio::time::timeout(timeout, ping).await {
            // An MCP error is still an answer: the server is there.
            Ok(Ok(_) | Err(ServiceError::McpError(_))) => {}
            Ok(Err(error)) => return format!("ping failed: {error}"),
            Err(_) => return format!("no answer to a ping within {timeout:?}"),
        }
    }
}

/// Lists a connection's tools again whenever the server says they changed.
struct Refresh {
    remote: Remote,
    location: Location,
    list_changed: Arc<Notify>,
    /// How long one re-list may take.
    timeout: Duration,
}

impl Refresh {
    /// Replaces the registration after every `tools/list_changed`; never returns.
    async fn follow(&self) -> std::convert::Infallible {
        loop {
            self.list_changed.notified().await;
            self.replace().await;
        }
    }

    /// Lists the tools and registers them before dropping the old registration. On failure the
    /// old registration stays and a warning is logged.
    async fn replace(&self) {
        let server = &self.remote.server;
        let listed =
            match tokio::time::timeout(self.timeout, self.remote.peer.list_all_tools()).await {
                Ok(Ok(listed)) => listed,
                Ok(Err(error)) => {
                    tracing::warn!(
                        "MCP server `{server}`: cannot list its changed tools, keeping the old \
                         ones: {error}"
                    );
                    return;
                }
                Err(_) => {
                    tracing::warn!(
                        "MCP server `{server}`: listing its changed tools took longer than {:?}, \
                         keeping the old ones",
                        self.timeout
                    );
                    return;
                }
            };
        let (record, listing) = tool_record(&self.remote, listed);
        let shared = &self.remote.shared;
        let old = {
            let mut registration = shared
                .registration
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if registration.is_none() {
                // The connection is down: register nothing again.
                return;
            }
            match self.location.register(record) {
                Ok(new) => {
                    shared.listing.send_replace(listing);
                    registration.replace(new)
                }
                Err(error) => {
                    tracing::warn!(
                        "MCP server `{server}`: cannot register its changed tools, keeping the \
                         old ones: {error}"
                    );
                    return;
                }
            }
        };
        // Dropped only now, after the new registration is in place.
        drop(old);
        tracing::info!("MCP server `{server}` changed its tools");
    }
}

/// The registration record of the tools a server listed, with their registered names and the
/// warnings of the tools skipped.
fn tool_record(remote: &Remote, mut listed: Vec<rmcp::model::Tool>) -> (ToolSet, Listing) {
    let server = &remote.server;
    let mut record = ToolSet::new();
    let mut listing = Listing::default();
    let assigned = assign_tool_names(server, listed.iter().map(|tool| tool.name.as_ref()));
    // Both are sorted by original name; a duplicated original name pairs up in order.
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    for ((original, name), tool) in assigned.into_iter().zip(listed) {
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_owned();
        let schema = Value::Object((*tool.input_schema).clone());
        match remote_tool(remote, &original, &name, description, schema) {
            Ok(tool) => {
                record.insert(name.clone(), tool);
                listing.tools.push(name);
            }
            Err(error) => {
                let warning = format!(
                    "MCP server `{server}`: skipped tool `{original}` (as `{name}`): {error}"
                );
                tracing::warn!("{warning}");
                listing.warnings.push(warning);
            }
        }
    }
    (record, listing)
}

/// What every tool of one connection shares.
struct Remote {
    server: Arc<str>,
    peer: Peer<RoleClient>,
    shared: Arc<Shared>,
    before_call: Option<BeforeCall>,
}

/// One server tool as a tackle tool registered as `name`: its calls become `tools/call`
/// requests, after the connection's [`BeforeCall`] hook allows them.
fn remote_tool(
    remote: &Remote,
    original: &str,
    name: &str,
    description: String,
    schema: Value,
) -> Result<Tool<Value, Value>, tackle_core::SchemaError> {
    let server = remote.server.clone();
    let peer = remote.peer.clone();
    let shared = Arc::downgrade(&remote.shared);
    let before_call = remote.before_call.clone();
    let original: Arc<str> = original.into();
    let name: Arc<str> = name.into();
    let tool = Tool::with_schema(description, schema, move |arguments: Value, cx: Context| {
        let peer = peer.clone();
        let server = server.clone();
        let original = original.clone();
        let name = name.clone();
        let shared = shared.clone();
        let before_call = before_call.clone();
        async move {
            if let Some(hook) = before_call {
                tokio::select! {
                    allowed = hook(cx.clone(), name.to_string()) => allowed?,
                    () = cx.cancellation().cancelled() => {
                        return Err(ToolFailure::interruption("the call was cancelled"));
                    }
                }
            }
            let arguments = match arguments {
                Value::Object(arguments) => arguments,
                _ => JsonObject::new(),
            };
            let mut request =
                CallToolRequestParams::new(original.to_string()).with_arguments(arguments);
            // The server continues the call's trace (MCP carries W3C Trace Context in `_meta`).
            if let Some(trace) = cx.trace_context() {
                let mut meta = rmcp::model::RequestMetaObject::default();
                meta.set_traceparent(trace.to_string());
                request.meta = Some(meta);
            }
            // Dropping the request future sends `notifications/cancelled` to the server.
            let response = tokio::select! {
                response = peer.call_tool_once(request) => response,
                () = cx.cancellation().cancelled() => {
                    return Err(ToolFailure::interruption("the call was cancelled"));
                }
            };
            match response {
                Ok(CallToolResponse::Complete(result)) => result::output(result),
                Ok(_) => Err(ToolFailure::new(format!(
                    "the MCP server `{server}` answered `{original}` with a request for more \
                     input or a task, which tackle does not support"
                ))),
                Err(error @ (ServiceError::TransportSend(_) | ServiceError::TransportClosed)) => {
                    if let Some(shared) = shared.upgrade() {
                        // Check now whether the server is still there.
                        shared.probe.notify_one();
                    }
                    // The connection went away under the call: an interruption for the host,
                    // never a result the model reads as the tool's answer.
                    Err(ToolFailure::interruption(format!(
                        "the connection to the MCP server `{server}` was lost during \
                         `{original}`: {error}"
                    )))
                }
                Err(error) => Err(ToolFailure::new(format!(
                    "the MCP server `{server}` did not answer `{original}`: {error}"
                ))),
            }
        }
    })?;
    Ok(tool.with_projection(|_input: &Value, output: &Value| result::project(output)))
}

/// What a [`Supervisor`] currently knows about its server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SupervisorState {
    /// True while connected.
    pub connected: bool,
    /// How many connections succeeded so far.
    pub connections: u64,
    /// The registered tool names of the current connection, following its
    /// `tools/list_changed`; empty while disconnected.
    pub tools: Vec<String>,
    /// The warnings of the current (or last) connection's latest listing.
    pub warnings: Vec<String>,
    /// The last connection error, cleared on success.
    pub last_error: Option<String>,
}

/// Keeps one MCP server connected in the background; see [`supervise`]. Dropping it stops the
/// server and unregisters its tools.
#[derive(Debug)]
pub struct Supervisor {
    task: JoinHandle<()>,
    state: watch::Receiver<SupervisorState>,
}

impl Supervisor {
    /// A snapshot of the current state.
    pub fn state(&self) -> SupervisorState {
        self.state.borrow().clone()
    }

    /// A receiver that sees every change of the state, until the supervisor is dropped.
    pub fn changes(&self) -> watch::Receiver<SupervisorState> {
        self.state.clone()
    }

    /// Waits until the state satisfies `condition`, and returns that state.
    pub async fn wait_for(
        &self,
        condition: impl FnMut(&SupervisorState) -> bool,
    ) -> SupervisorState {
        let mut state = self.state.clone();
        match state.wait_for(condition).await {
            Ok(state) => state.clone(),
            Err(_) => self.state(),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // Aborting drops the task's connection, which unregisters the tools.
        self.task.abort();
    }
}

/// Connects to `config` in the background and reconnects whenever the server disconnects or
/// fails to start, waiting between attempts with exponential backoff (by default 0.5 s doubling
/// up to 30 s; it starts over after each successful connection).
pub fn supervise(
    config: McpServerConfig,
    location: Location,
    options: ConnectOptions,
) -> Supervisor {
    let (state_tx, state) = watch::channel(SupervisorState::default());
    let task = tokio::spawn(async move {
        let mut delay = options.backoff_initial;
        loop {
            match connect(&config, &location, &options).await {
                Ok(connection) => {
                    delay = options.backoff_initial;
                    let mut listing = connection.shared.listing.subscribe();
                    let first = listing.borrow_and_update().clone();
                    state_tx.send_modify(|state| {
                        state.connected = true;
                        state.connections += 1;
                        state.tools = first.tools;
                        state.warnings = first.warnings;
                        state.last_error = None;
                    });
                    {
                        let disconnected = connection.disconnected();
                        tokio::pin!(disconnected);
                        // The connection's listing changes after each `tools/list_changed`.
                        loop {
                            tokio::select! {
                                () = &mut disconnected => break,
                                Ok(()) = listing.changed() => {
                                    let current = listing.borrow_and_update().clone();
                                    state_tx.send_modify(|state| {
                                        state.tools = current.tools;
                                        state.warnings = current.warnings;
                                    });
                                }
                            }
                        }
                    }
                    drop(connection);
                    state_tx.send_modify(|state| {
                        state.connected = false;
                        state.tools.clear();
                    });
                }
                Err(error @ ConnectError::Nested { .. }) => {
                    // Permanent: the process's own nesting depth never changes.
                    tracing::warn!("{error}");
                    state_tx.send_modify(|state| state.last_error = Some(error.to_string()));
                    return;
                }
                Err(error) => {
                    tracing::warn!("{error}; retrying in {delay:?}");
                    state_tx.send_modify(|state| state.last_error = Some(error.to_string()));
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(options.backoff_max);
        }
    });
    Supervisor { task, state }
}
