//! The configured MCP servers of a host: connected once (one-shot commands) or supervised
//! (servers), their tools registered into the Location, every call of them asked through the
//! gate under its registered name first.

use std::sync::{Arc, Mutex, PoisonError};

use tackle_builtins::{Ask, Gate};
use tackle_registry::Location;

use crate::config::{McpServer, McpTransport};
use crate::warnings::Warnings;

/// The host's MCP servers and their live connections.
pub(crate) struct Mcp {
    servers: Vec<tackle_mcp::McpServerConfig>,
    /// The sandbox child servers start under, when the configuration asks for one.
    sandbox: Option<tackle_sandbox::Confine>,
    connections: Mutex<Vec<tackle_mcp::McpConnection>>,
    supervisors: Mutex<Vec<tackle_mcp::Supervisor>>,
    warnings: Warnings,
}

impl Mcp {
    pub(crate) fn new(
        servers: Vec<tackle_mcp::McpServerConfig>,
        sandbox: Option<tackle_sandbox::Confine>,
        warnings: Warnings,
    ) -> Self {
        Self {
            servers,
            sandbox,
            connections: Mutex::new(Vec::new()),
            supervisors: Mutex::new(Vec::new()),
            warnings,
        }
    }

    /// Drops every connection and supervisor: their tools leave, and each server's process
    /// group is killed as its task lets go of it.
    pub(crate) fn stop(&self) {
        let supervisors = std::mem::take(
            &mut *self
                .supervisors
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let connections = std::mem::take(
            &mut *self
                .connections
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        drop(supervisors);
        drop(connections);
    }

    /// Connects every server once, all at once; returns the warnings and failures.
    pub(crate) async fn connect(&self, location: &Location, gate: &Gate) -> Vec<String> {
        let options = options(gate.clone(), self.sandbox.clone());
        let attempts = self
            .servers
            .iter()
            .map(|server| tackle_mcp::connect(server, location, &options));
        let mut warnings = Vec::new();
        for result in futures_util::future::join_all(attempts).await {
            match result {
                Ok(connection) => {
                    warnings.extend(connection.warnings().iter().map(ToString::to_string));
                    self.connections
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(connection);
                }
                Err(error) => warnings.push(error.to_string()),
            }
        }
        warnings
    }

    /// Supervises every server; waits for each first attempt; returns the warnings.
    pub(crate) async fn supervise(&self, location: &Location, gate: &Gate) -> Vec<String> {
        let options = options(gate.clone(), self.sandbox.clone());
        let started: Vec<tackle_mcp::Supervisor> = self
            .servers
            .iter()
            .map(|server| tackle_mcp::supervise(server.clone(), location.clone(), options.clone()))
            .collect();
        let first = started
            .iter()
            .zip(&self.servers)
            .map(|(supervisor, server)| async move {
                let state = supervisor
                    .wait_for(|state| state.connected || state.last_error.is_some())
                    .await;
                let mut warnings: Vec<String> = state.warnings.clone();
                if let Some(error) = &state.last_error {
                    warnings.push(format!(
                        "{error}; retrying in the background (server `{}`)",
                        server.name
                    ));
                }
                warnings
            });
        let warnings = futures_util::future::join_all(first)
            .await
            .into_iter()
            .flatten()
            .collect();
        for (supervisor, server) in started.iter().zip(&self.servers) {
            tokio::spawn(warn_on_failures(
                supervisor.changes(),
                server.name.clone(),
                self.warnings.clone(),
            ));
        }
        self.supervisors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(started);
        warnings
    }
}

/// Warns when the supervised server `name` disconnects or fails to reconnect, after its first
/// attempt (whose outcome the start reports); ends with the supervisor.
async fn warn_on_failures(
    mut changes: tokio::sync::watch::Receiver<tackle_mcp::SupervisorState>,
    name: String,
    warnings: Warnings,
) {
    let mut before = changes.borrow_and_update().clone();
    while changes.changed().await.is_ok() {
        let now = changes.borrow_and_update().clone();
        if before.connected && !now.connected {
            warnings.host(format!(
                "MCP server `{name}` disconnected; its tools are unavailable until it reconnects"
            ));
        }
        if let Some(error) = now
            .last_error
            .as_ref()
            .filter(|e| before.last_error.as_ref() != Some(*e))
        {
            warnings.host(format!(
                "MCP server `{name}`: {error}; retrying in the background"
            ));
        }
        before = now;
    }
}

/// Connection options: a call of `<server>_<tool>` first asks the permission of that name on `*`,
/// as OpenCode does, so the configuration can allow, ask or deny each MCP tool.
fn options(gate: Gate, sandbox: Option<tackle_sandbox::Confine>) -> tackle_mcp::ConnectOptions {
    let hook: tackle_mcp::BeforeCall = Arc::new(move |cx, name| {
        let gate = gate.clone();
        Box::pin(async move { gate.ask(&cx, Ask::new(name, ["*"])).await })
    });
    let options = tackle_mcp::ConnectOptions::default().with_before_call(hook);
    match sandbox {
        Some(sandbox) => options.with_sandbox(sandbox),
        None => options,
    }
}

/// The MCP client's form of a configured server.
pub(crate) fn server_config(server: &McpServer) -> tackle_mcp::McpServerConfig {
    let transport = match &server.transport {
        McpTransport::Stdio { command, args, env } => tackle_mcp::McpTransport::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: env.iter().cloned().collect(),
        },
        McpTransport::Http { url, headers } => tackle_mcp::McpTransport::Http {
            url: url.clone(),
            headers: headers.iter().cloned().collect(),
        },
    };
    tackle_mcp::McpServerConfig {
        name: server.name.clone(),
        transport,
    }
}
