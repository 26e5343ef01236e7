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
//! media as embedded resources) plus `structuredContent` when the structured output is a JSON
//! object. Interrupted calls and defects are not results at all: they become JSON-RPC errors.
//!
//! Cancellation is the protocol's: each request's cancellation token becomes the call's
//! [`Context`](tackle_core::Context) token, so `notifications/cancelled` interrupts the tool.
//! The server advertises `tools.listChanged`; the host calls
//! [`TackleServer::notify_tools_changed`] when its registrations change.
//!
//! Nothing here writes to stdout except the transport itself; diagnostics go through
//! `tracing`, which a stdio host must route to stderr.
//!
//! The other direction is the client: [`connect`] starts an MCP server (a child process over
//! stdio), initializes it within a startup timeout, lists all its tools and registers each in
//! a [`Location`](tackle_registry::Location) as a [`Tool::with_schema`](tackle_core::Tool)
//! tool named `<server>_<tool>` (see [`assign_tool_names`]). A call becomes `tools/call` with
//! the call's cancellation; the result settles through the registry like any built-in, so it is
//! bounded and journaled the same way. The output is `{"content": [...], "structuredContent":
//! {...}}` and the model reads the content parts (text and media); `isError` becomes a tool
//! failure. A tool whose schema tackle refuses is skipped with a warning. The
//! [`McpConnection`] owns the registration: when the server disconnects the tools disappear and
//! turns that advertised them settle as stale. [`supervise`] reconnects with exponential
//! backoff. The streamable HTTP transport is not implemented yet.

#![deny(missing_docs)]

mod client;
mod convert;
mod server;

pub use client::{
    ConnectError, ConnectOptions, McpConnection, McpServerConfig, McpTransport, Supervisor,
    SupervisorState, assign_tool_names, connect, supervise,
};
pub use server::{ServeError, Serving, TackleServer, serve, serve_stdio};
