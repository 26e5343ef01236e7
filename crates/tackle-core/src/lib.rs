//! The vocabulary of tackle: typed tools, their codecs, the invocation context, failures,
//! model-facing content, and the ports settlement needs.
//!
//! A [`Tool<I, O>`](Tool) is an opaque value built from a description, one async executor and an
//! optional projection. It has no name: a registry gives it one. Its input type `I` is decoded
//! from the provider's JSON arguments and its output type `O` is encoded with serde; both schemas
//! come from `schemars`, generated once per type and cached for the life of the process.
//!
//! The key decision of this crate is that *the codec boundary and the settlement kernel live
//! here, next to the type*. One crate-private function is where raw provider arguments become a
//! typed input and a typed output becomes JSON, and it is the only way to run a tool's executor.
//! Its one caller is [`Settle::run`], which undoes the provider dialect, bounds everything the
//! provider receives and records the settlement, even when its future is dropped. A registry
//! resolves names against its turns and hands the resolved tool to `Settle`; it cannot reach
//! past it: every law about decoding, invalid output, panics, cancellation, bounding and
//! recording is enforced here, for every tool, built-in or not.
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
mod clock;
mod codec;
mod content;
mod context;
mod failure;
mod ids;
pub mod names;
mod ports;
mod provider;
mod settle;
mod settlement;
mod standard;
mod tool;
mod trace;

pub use bound::{
    Bounded, Direction, LimitsOverride, MEDIA_DATA_OMITTED, Omitted, OutputLimits, Recovery,
    bound_output, bound_text, count_lines, thousands,
};
pub use codec::SchemaError;
pub use codec::{Arguments, FieldError, InvalidInput};
pub use content::{Content, ToolOutput};
pub use context::{Context, Progress, SubCallError};
pub use failure::ToolFailure;
pub use ids::{AgentId, CallId, CallIdentity, MessageId, RegistrationId, SessionId};
pub use ports::{
    ChangeReview, FileChange, Journal, JournalError, ManagedRef, OutcomeKind, OutputStore,
    ParseOutcomeKindError, PhaseTimings, RetentionError, SessionState, SessionStateError,
    SettlementRecord,
};
pub use provider::{
    GEMINI_KEYWORDS, OPENAI_DROPPED, ParseProviderError, Provider, SchemaCompatError, export_tool,
    export_tools,
};
pub use settle::{Settle, SettlementConfig, SubSettle};
pub use settlement::{
    Defect, Interruption, ModelError, ModelErrorKind, ModelResult, Outcome, Settlement,
    SubCallReport, ToolCall,
};
pub use tool::{
    AnyTool, Concurrency, Invocation, InvocationOutcome, InvocationTimings, State, Tool,
    ToolDefinition,
};
pub use trace::{CallSpan, TraceParent, TraceParentError};

/// Re-exported so `OutputStore` adapters need no `bytes` dependency of their own.
pub use bytes::Bytes;
/// Re-exported so tool authors derive schemas with the same version tackle uses.
pub use schemars;
/// Re-exported so hosts build cancellation tokens with the same version tackle uses.
pub use tokio_util::sync::CancellationToken;
