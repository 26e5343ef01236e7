//! The MCP client: connects to an MCP server and registers its tools into a Location for as
//! long as the server stays connected.

mod names;
mod result;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tackle_core::{Context, Tool, ToolFailure};
use tackle_registry::{Location, Registration, RegistrationError, ToolSet};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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
    /// Streamable HTTP. Not supported yet: [`connect`] refuses it with
    /// [`ConnectError::UnsupportedTransport`].
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

/// How [`connect`] and [`supervise`] behave.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    startup_timeout: Duration,
    backoff_initial: Duration,
    backoff_max: Duration,
}

impl Default for ConnectOptions {
    /// A 10 s startup timeout; reconnection backoff from 0.5 s doubling up to 30 s.
    fn default() -> Self {
        Self {
            startup_timeout: Duration::from_secs(10),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
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
    /// The transport is not implemented.
    #[error("MCP server `{server}`: the {transport} transport is not supported yet")]
    UnsupportedTransport {
        /// The server's name.
        server: String,
        /// Which transport.
        transport: &'static str,
    },
}

/// What lives exactly as long as the server is connected.
struct Shared {
    registration: Mutex<Option<Registration>>,
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
/// The connection owns the registration. When the server disconnects (its process exits, the
/// transport closes) the registration is dropped: the tools disappear, and a turn that
/// advertised them settles their calls as stale. Dropping the connection (or
/// [`McpConnection::close`]) stops the server and unregisters the tools too.
pub struct McpConnection {
    server: String,
    tools: Vec<String>,
    warnings: Vec<String>,
    shared: Arc<Shared>,
    closed: watch::Receiver<bool>,
    cancel: CancellationToken,
}

impl fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.server)
            .field("tools", &self.tools)
            .field("warnings", &self.warnings)
            .field("connected", &self.is_connected())
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The names the server's tools were registered under, sorted by their original names.
    pub fn tools(&self) -> &[String] {
        &self.tools
    }

    /// Tools that were skipped, one message each (for example a schema tackle cannot compile).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
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

/// Starts the MCP server `config` describes, initializes it, lists all its tools and registers
/// them in `location` under [`assign_tool_names`].
///
/// Starting, initializing and listing must finish within the startup timeout of `options`. A
/// tool whose input schema tackle refuses is skipped and reported in
/// [`McpConnection::warnings`]; the others still register.
pub async fn connect(
    config: &McpServerConfig,
    location: &Location,
    options: &ConnectOptions,
) -> Result<McpConnection, ConnectError> {
    let server = config.name.clone();
    let transport = match &config.transport {
        McpTransport::Stdio { command, args, env } => {
            let mut process = tokio::process::Command::new(command);
            process.args(args).envs(env).kill_on_drop(true);
            TokioChildProcess::new(process).map_err(|source| ConnectError::Spawn {
                server: server.clone(),
                command: command.clone(),
                source,
            })?
        }
        McpTransport::Http { .. } => {
            return Err(ConnectError::UnsupportedTransport {
                server,
                transport: "HTTP",
            });
        }
    };
    let cancel = CancellationToken::new();
    let startup = async {
        let running =
            ().serve_with_ct(transport, cancel.clone())
                .await
                .map_err(|error| ConnectError::Initialize {
                    server: server.clone(),
                    message: error.to_string(),
                })?;
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

    let peer = running.peer().clone();
    let mut record = ToolSet::new();
    let mut tools = Vec::new();
    let mut warnings = Vec::new();
    let assigned = assign_tool_names(&server, listed.iter().map(|tool| tool.name.as_ref()));
    // Both are sorted by original name; a duplicated original name pairs up in order.
    let mut listed: Vec<_> = listed.into_iter().collect();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    for ((original, name), tool) in assigned.into_iter().zip(listed) {
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_owned();
        let schema = Value::Object((*tool.input_schema).clone());
        match remote_tool(&server, &original, description, schema, peer.clone()) {
            Ok(remote) => {
                record.insert(name.clone(), remote);
                tools.push(name);
            }
            Err(error) => {
                let warning = format!(
                    "MCP server `{server}`: skipped tool `{original}` (as `{name}`): {error}"
                );
                tracing::warn!("{warning}");
                warnings.push(warning);
            }
        }
    }
    let registration = location
        .register(record)
        .map_err(|source| ConnectError::Register {
            server: server.clone(),
            source,
        })?;

    let shared = Arc::new(Shared {
        registration: Mutex::new(Some(registration)),
    });
    let (closed_tx, closed) = watch::channel(false);
    tokio::spawn(watch_connection(
        server.clone(),
        running,
        shared.clone(),
        closed_tx,
    ));
    Ok(McpConnection {
        server,
        tools,
        warnings,
        shared,
        closed,
        cancel,
    })
}

/// Waits for the service to stop, then drops the registration and reports the disconnection.
async fn watch_connection(
    server: String,
    running: RunningService<RoleClient, ()>,
    shared: Arc<Shared>,
    closed: watch::Sender<bool>,
) {
    let reason = running.waiting().await;
    shared.unregister();
    tracing::info!("MCP server `{server}` disconnected ({reason:?}); its tools were removed");
    let _ = closed.send(true);
}

/// One server tool as a tackle tool: its calls become `tools/call` requests.
fn remote_tool(
    server: &str,
    original: &str,
    description: String,
    schema: Value,
    peer: Peer<RoleClient>,
) -> Result<Tool<Value, Value>, tackle_core::SchemaError> {
    let server: Arc<str> = server.into();
    let original: Arc<str> = original.into();
    let tool = Tool::with_schema(description, schema, move |arguments: Value, cx: Context| {
        let peer = peer.clone();
        let server = server.clone();
        let original = original.clone();
        async move {
            let arguments = match arguments {
                Value::Object(arguments) => arguments,
                _ => JsonObject::new(),
            };
            let request =
                CallToolRequestParams::new(original.to_string()).with_arguments(arguments);
            // Dropping the request future sends `notifications/cancelled` to the server.
            let response = tokio::select! {
                response = peer.call_tool_once(request) => response,
                () = cx.cancellation().cancelled() => {
                    return Err(ToolFailure::new("the call was cancelled"));
                }
            };
            match response {
                Ok(CallToolResponse::Complete(result)) => result::output(result),
                Ok(_) => Err(ToolFailure::new(format!(
                    "the MCP server `{server}` answered `{original}` with a request for more \
                     input or a task, which tackle does not support"
                ))),
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
    /// The registered tool names of the current connection; empty while disconnected.
    pub tools: Vec<String>,
    /// The warnings of the current (or last) connection.
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
                    state_tx.send_modify(|state| {
                        state.connected = true;
                        state.connections += 1;
                        state.tools = connection.tools().to_vec();
                        state.warnings = connection.warnings().to_vec();
                        state.last_error = None;
                    });
                    connection.disconnected().await;
                    drop(connection);
                    state_tx.send_modify(|state| {
                        state.connected = false;
                        state.tools.clear();
                    });
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
