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

#![deny(missing_docs)]

mod convert;
mod server;

pub use server::{ServeError, Serving, TackleServer, serve, serve_stdio};
