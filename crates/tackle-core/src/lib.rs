//! The vocabulary of tackle: typed tools, their codecs, the invocation context, failures,
//! model-facing content, and the ports settlement needs.
//!
//! A [`Tool<I, O>`](Tool) is an opaque value built from a description, one async executor and an
//! optional projection. It has no name: a registry gives it one. Its input type `I` is decoded
//! from the provider's JSON arguments and its output type `O` is encoded with serde; both schemas
//! come from `schemars`, generated once per type and cached for the life of the process.
//!
//! The key decision of this crate is that *the codec boundary lives here, next to the type*.
//! [`AnyTool::invoke`] is the one place where raw provider arguments become a typed input and a
//! typed output becomes JSON, and it is the only way to run a tool's executor. A registry can
//! resolve, bound and record around it, but cannot reach past it: every law about decoding,
//! invalid output, panics and cancellation is enforced in one function that every tool, built-in
//! or not, goes through.
//!
//! Decoding has a fast path and a teaching path. Serde decodes well-formed arguments directly.
//! Only when that fails does the codec parse the JSON, coerce stringified numbers and booleans
//! where the schema accepts nothing else, and validate against the schema to list *every* failing
//! field path, so a model can fix its whole call in one retry.
//!
//! This crate does no IO. Output storage and the settlement journal are ports ([`OutputStore`],
//! [`Journal`]) that adapters implement and the host wires in.

#![deny(missing_docs)]

mod bound;
mod codec;
mod content;
mod context;
mod failure;
mod ids;
mod ports;
mod provider;
mod tool;

pub use bound::{
    Bounded, Direction, LimitsOverride, Omitted, OutputLimits, Recovery, bound_output, bound_text,
    count_lines, thousands,
};
pub use codec::SchemaError;
pub use codec::{Arguments, FieldError, InvalidInput};
pub use content::{Content, ToolOutput};
pub use context::{Context, Progress};
pub use failure::ToolFailure;
pub use ids::{AgentId, CallId, CallIdentity, MessageId, SessionId};
pub use ports::{
    Journal, JournalError, ManagedRef, OutcomeKind, OutputStore, ParseOutcomeKindError,
    PhaseTimings, RetentionError, SessionState, SessionStateError, SettlementRecord,
};
pub use provider::{
    GEMINI_KEYWORDS, OPENAI_DROPPED, ParseProviderError, Provider, SchemaCompatError, export_tool,
    export_tools, restore_absent_fields,
};
pub use tool::{
    AnyTool, Concurrency, Invocation, InvocationOutcome, InvocationTimings, Tool, ToolDefinition,
};

/// Re-exported so `OutputStore` adapters need no `bytes` dependency of their own.
pub use bytes::Bytes;
/// Re-exported so tool authors derive schemas with the same version tackle uses.
pub use schemars;
/// Re-exported so hosts build cancellation tokens with the same version tackle uses.
pub use tokio_util::sync::CancellationToken;
