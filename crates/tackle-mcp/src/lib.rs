//! Serves a tackle Location's tools over the Model Context Protocol (MCP).
//!
//! This crate is the only place in the workspace that knows MCP wire types. Everything it
//! serves goes through the registry exactly as an embedded host would: `tools/list` is a
//! materialized [`Turn`](tackle_registry::Turn), and `tools/call` is
//! [`Turn::settle`](tackle_registry::Turn::settle), so decoding, the stale check, permissions,
//! bounding, managed output and the journal all apply unchanged.
//!
//! The mapping onto MCP keeps tackle's split between model-facing results and host-facing
//! problems. Error outcomes (unknown tool, invalid arguments, stale call, tool failure, denied
//! permission) become results with `isError: true` carrying the model-facing text, because the
//! model should read them and retry. Successes carry their content parts (text, images, other
//! media as embedded resources); `structuredContent` only for structured-only output, unless
//! the host opts in ([`StructuredContent`]). Interrupted calls and defects are not results at all: they become JSON-RPC errors,
//! and a defect's details (a panic payload) go to the log, never to the client.
//!
//! Each connection is a session of its own, with a fresh ID unique across connections and
//! processes, so one client's read tracking and todos never serve another; call IDs are that ID
//! plus the request id. [`TackleServer::with_session_end`] runs when a connection ends, and
//! [`TackleServer::with_session`] pins one session instead. Listed tools carry MCP annotations
//! from their concurrency class (read-only and idempotent, or destructive), and
//! [`TackleServer::with_open_world`] lets the host say which reach an open world.
//!
//! Cancellation is the protocol's: each request's cancellation token becomes the call's
//! [`Context`](tackle_core::Context) token, so `notifications/cancelled` interrupts the tool.
//! The server advertises `tools.listChanged`; [`TackleServer::notify_on`] sends it whenever the
//! Location's registrations change (or the host calls [`TackleServer::notify_tools_changed`]).
//!
//! The server talks back to its client mid-call in two ways. A tool's progress (its
//! [`Context`](tackle_core::Context) title and metadata updates) becomes
//! `notifications/progress` under the token the request carried. A permission question goes to
//! the client that made the call as a form elicitation (allow once, always, or reject with
//! feedback for the model) when the host answers questions with an [`ElicitingApprover`] that
//! shares a [`ClientCalls`] table with the server; clients without form elicitation get the
//! host's fallback answer.
//!
//! Before a connection's first call, a host's step ([`TackleServer::with_before_first_call`])
//! may ask the person behind the client one yes/no question by form elicitation (tackle asks
//! whether to trust the project's configuration) and change the tools that call settles against.
//!
//! Nothing here writes to stdout except the transport itself; diagnostics go through
//! `tracing`, which a stdio host must route to stderr. Over stdio ([`serve_stdio`],
//! [`serve_lines`]) tackle reads lines itself, in front of rmcp: every request gets an answer
//! (an oversized line, malformed params, a reused id), or the connection closes.
//!
//! [`serve_http`] serves the same handler over streamable HTTP on a TCP address: each client
//! session gets its own [`TackleServer::for_connection`] handle, `tools/list_changed` reaches
//! every open session, and the `Host` header is checked against loopback names unless the
//! server is bound elsewhere. [`HttpOptions`] guard it: a browser `Origin` must be loopback or
//! allowed (403), an optional [`BearerToken`] is required on every request (401) and always
//! when the address is not loopback, headers must arrive within [`HEADER_READ_TIMEOUT`], an idle
//! connection is closed after [`IDLE_TIMEOUT`]. Ending a session with `DELETE` answers 204.
//! Picking the address (loopback by default) is the host's job.
//!
//! The other direction is the client: [`connect`] starts an MCP server (a child process over
//! stdio, or a streamable HTTP endpoint with configured headers), initializes it within a
//! startup timeout, lists all its tools and registers each in
//! a [`Location`](tackle_registry::Location) as a [`Tool::with_schema`](tackle_core::Tool)
//! tool named `<server>_<tool>` (see [`assign_tool_names`]). A call becomes `tools/call` with
//! the call's cancellation; the result settles through the registry like any built-in, so it is
//! bounded and journaled the same way. The output is `{"content": [...], "structuredContent":
//! {...}}` and the model reads the content parts (text and media); `isError` becomes a tool
//! failure. A tool whose schema tackle refuses is skipped with a warning. The tools follow the
//! server's `tools/list_changed`: the connection lists them again and replaces its registration,
//! so turns that advertised the old tools settle them as stale. The
//! [`McpConnection`] owns the registration: when the server disconnects the tools disappear and
//! turns that advertised them settle as stale; over HTTP a failed heartbeat ping counts as a
//! disconnection. [`supervise`] reconnects with exponential backoff. Child server processes
//! carry a nesting marker ([`DEPTH_ENV`]; none is started deeper than [`MAX_DEPTH`]), lead their
//! own process group, and are killed with it when the connection ends or the parent dies. An optional
//! [`BeforeCall`] hook (see [`ConnectOptions::with_before_call`]) can refuse a call before
//! anything is sent, which is where a host plugs in its permission check.

#![deny(missing_docs)]

mod client;
mod convert;
mod elicit;
mod http;
mod server;
mod wire;

pub use convert::StructuredContent;

pub use client::{
    BeforeCall, ConnectError, ConnectOptions, DEPTH_ENV, MAX_DEPTH, McpConnection, McpServerConfig,
    McpTransport, Supervisor, SupervisorState, assign_tool_names, connect, kill_child_servers,
    may_start_servers, nesting_depth, supervise,
};
pub use elicit::{ClientCalls, ElicitingApprover};
pub use http::{
    BearerToken, HEADER_READ_TIMEOUT, HttpOptions, HttpServing, IDLE_TIMEOUT, MAX_CONNECTIONS,
    serve_http,
};
pub use server::{BACKLOG, LogLevel, LogMessage};
pub use server::{
    Client, Confirmation, FirstCall, INPUT_REQUIRED_TIMEOUT, MAX_WAITING, Prepared,
    QUESTION_TIMEOUT,
};
pub use server::{
    MAX_RESOURCE_BYTES, PromptEntry, PromptSource, REQUEST_ARGUMENT, RESOURCES_PAGE, ResourceBytes,
    SessionResource, SessionResources,
};
pub use server::{
    PROGRESS_HEARTBEAT, ServeError, Serving, TackleServer, serve, serve_lines, serve_stdio,
};
pub use wire::MAX_LINE_BYTES;
