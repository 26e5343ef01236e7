//! The ports tackle needs from the outside world: managed output storage, the journal, session
//! state, and what follows a file change (formatting and diagnostics).
//!
//! Core defines them; `tackle-store` and `tackle-diagnostics` implement them; the host wires one of
//! each into a registry (output store, journal) or into the built-in tools (session state, change
//! review).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::ids::CallIdentity;
use crate::settlement::ModelResult;

/// A handle to one retained output in managed storage.
///
/// `id` is the opaque reference (the blake3 hash of the bytes). `path` is settlement metadata for
/// the host and the bound's recovery hint; it never appears in a tool's types, schemas or
/// projections (`LAW-STORAGE-ENCAPSULATION`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ManagedRef {
    /// Content address of the retained bytes (lowercase blake3 hex).
    pub id: String,
    /// Where the bytes live, readable by the read and grep tools.
    pub path: PathBuf,
    /// How many bytes were retained.
    pub bytes: u64,
}

/// Why an output could not be retained. Settlement fails operationally on it: a bounded preview
/// is never published when the full output was not kept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to retain tool output: {0}")]
pub struct RetentionError(pub String);

/// Durable storage for complete outputs that exceed the model-facing bound.
///
/// Be careful when:
/// - implementing `retain`. It must either keep every byte it was given, or fail. Writes must be
///   atomic: a reader never sees a partial file under a final name.
/// - holding on to `bytes`. The caller shares the same buffer (it builds the preview from it), so
///   a clone is a reference count, not a copy; keeping it keeps the whole output in memory.
pub trait OutputStore: Send + Sync + 'static {
    /// Keeps `bytes` completely and returns a reference to them.
    fn retain(&self, bytes: Bytes) -> BoxFuture<'static, Result<ManagedRef, RetentionError>>;

    /// The directory holding retained outputs, if the store has one. Tools that read files treat
    /// it as readable without an external-directory prompt.
    fn directory(&self) -> Option<&Path>;
}

/// How a settlement ended, as the journal records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// The tool ran and its output was delivered.
    Success,
    /// The tool returned a `ToolFailure`.
    Failure,
    /// The name was not advertised in the turn.
    Unknown,
    /// The advertised registration was removed or replaced.
    Stale,
    /// The arguments did not decode.
    Invalid,
    /// Host policy refused the call before it ran.
    Refused,
    /// The output failed its codec (operational).
    InvalidOutput,
    /// The output could not be retained (operational).
    RetentionFailed,
    /// The host cancelled the call.
    Interrupted,
    /// The tool panicked (operational).
    Panicked,
}

impl OutcomeKind {
    /// Every outcome kind, in declaration order.
    pub const ALL: [OutcomeKind; 10] = [
        OutcomeKind::Success,
        OutcomeKind::Failure,
        OutcomeKind::Unknown,
        OutcomeKind::Stale,
        OutcomeKind::Invalid,
        OutcomeKind::Refused,
        OutcomeKind::InvalidOutput,
        OutcomeKind::RetentionFailed,
        OutcomeKind::Interrupted,
        OutcomeKind::Panicked,
    ];

    /// The stable snake_case name used in the journal; [`FromStr`] is its inverse.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Success => "success",
            OutcomeKind::Failure => "failure",
            OutcomeKind::Unknown => "unknown",
            OutcomeKind::Stale => "stale",
            OutcomeKind::Invalid => "invalid",
            OutcomeKind::Refused => "refused",
            OutcomeKind::InvalidOutput => "invalid_output",
            OutcomeKind::RetentionFailed => "retention_failed",
            OutcomeKind::Interrupted => "interrupted",
            OutcomeKind::Panicked => "panicked",
        }
    }

    /// True for outcomes the model sees as a tool result.
    pub fn is_model_visible(self) -> bool {
        matches!(
            self,
            OutcomeKind::Success
                | OutcomeKind::Failure
                | OutcomeKind::Unknown
                | OutcomeKind::Stale
                | OutcomeKind::Invalid
                | OutcomeKind::Refused
        )
    }
}

/// Why a string is not the name of an [`OutcomeKind`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome kind {0:?}")]
pub struct ParseOutcomeKindError(pub String);

impl FromStr for OutcomeKind {
    type Err = ParseOutcomeKindError;

    /// Parses the name [`OutcomeKind::as_str`] gives.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OutcomeKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| ParseOutcomeKindError(s.to_owned()))
    }
}

/// Durations of every settlement phase.
///
/// Durable journals keep these in whole microseconds: what reads back from one is truncated to
/// the microsecond.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseTimings {
    /// Resolving the name against the turn.
    pub resolve: Duration,
    /// Decoding the arguments.
    pub decode: Duration,
    /// Running the executor.
    pub execute: Duration,
    /// Encoding and checking the output.
    pub encode: Duration,
    /// Projecting for the model.
    pub project: Duration,
    /// Bounding (and retaining) the model-facing output.
    pub bound: Duration,
}

/// One settlement, as the journal keeps it.
///
/// A durable journal returns every field exactly as recorded, except `timings`, which it keeps
/// with microsecond precision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettlementRecord {
    /// The exact host-supplied IDs.
    pub identity: CallIdentity,
    /// The name the model called.
    pub tool: String,
    /// The registration that served the call, when one was resolved.
    pub registration: Option<u64>,
    /// How it ended.
    pub outcome: OutcomeKind,
    /// The model-facing result, for model-visible outcomes. Settlement hands it over as a value;
    /// a durable journal turns it into JSON where it writes, off the caller's path.
    pub model_result: Option<ModelResult>,
    /// Outputs retained in managed storage.
    pub managed: Vec<ManagedRef>,
    /// Wall-clock start, in milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// Phase durations.
    pub timings: PhaseTimings,
    /// What host policy changed in the call before it settled (a repaired name, renamed
    /// arguments, a hook's rewrite), one line each; empty when nothing was changed.
    #[serde(default)]
    pub adjustments: Vec<String>,
}

/// Why the journal could not record a settlement.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to record settlement: {0}")]
pub struct JournalError(pub String);

/// Durable record of every settlement.
///
/// Be careful when:
/// - implementing `record`. Take the record when `record` is called (queue it, or write it),
///   not when the future is first polled: settlement drops the future of the record it makes
///   for a call whose own future was dropped. Resolve the future once the record is durable, or
///   once it is queued if every later read of the journal sees queued records first and the
///   queue is committed before the process ends on a signal or closed input (the SQLite journal's
///   `Acknowledge::Queued`, which `tackle serve` uses; only a killed process loses it). An
///   in-memory journal resolves once the record is visible to readers. A record is written whole
///   or not at all.
/// - doing work in `record` itself. It runs on the call's path, before the host gets its result:
///   check there what could refuse the record, and serialize where the record is written (the
///   SQLite journal turns the model result into JSON on its writer thread).
pub trait Journal: Send + Sync + 'static {
    /// Records one settlement. The record is taken at once, even if the future is never polled.
    fn record(&self, record: SettlementRecord) -> BoxFuture<'static, Result<(), JournalError>>;
}

/// Why session state could not be read or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("session state is unavailable: {0}")]
pub struct SessionStateError(pub String);

/// Small per-session facts that must outlive one process: which file contents a session has read,
/// which instruction files it has been shown, its todo list.
///
/// Keys are namespaced by the caller (`read:<path>`, `todo`, …); values are short strings. A host
/// that runs one process per agent session can use an in-memory store; the `tackle` CLI keeps them
/// in the journal's database, so consecutive calls with one session id behave as one session.
///
/// Be careful when:
/// - implementing it over a database. Calls are synchronous and made from async tasks, so each
///   must be short: one indexed lookup or one upsert.
/// - reading after writing. A `get` must see every `put` of the same key that returned `Ok`,
///   from any clone of the store.
pub trait SessionState: Send + Sync + 'static {
    /// The value stored under `key` for `session`, if any.
    fn get(&self, session: &str, key: &str) -> Result<Option<String>, SessionStateError>;

    /// Stores `value` under `key` for `session`, or removes the key when `value` is `None`.
    fn put(&self, session: &str, key: &str, value: Option<&str>) -> Result<(), SessionStateError>;
}

/// A file a tool changed: its text before and after, `None` for absent (created or deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The file's real path.
    pub path: PathBuf,
    /// How the model names it (relative to the Location when inside it).
    pub display: String,
    /// The text before the change; `None` when the file was created.
    pub before: Option<String>,
    /// The text after the change; `None` when the file was deleted.
    pub after: Option<String>,
}

/// What follows a file tool's change: the project's formatter, and the report of errors the
/// change introduced (language servers, syntax checks), which the model reads with the result.
///
/// The file tools call it after their write landed; a host that wants none of this wires none.
///
/// Be careful when:
/// - implementing `format`. Return the formatted text, never write the file: the tool writes it
///   under its lock with compare-and-swap, so a file changed meanwhile is not overwritten.
/// - implementing `diagnose`. It runs while the model waits: bound every wait (a server that
///   never answers yields the report without it and a note), and never fail the call.
pub trait ChangeReview: Send + Sync + 'static {
    /// `text` formatted by the formatter configured for `path`, or `None` when none applies, it
    /// failed, or it changed nothing.
    fn format<'a>(&'a self, path: &'a Path, text: &'a str) -> BoxFuture<'a, Option<String>>;

    /// `path` was read with this text: a chance to warm up, so the next change of it is
    /// compared against a known state. It must return at once.
    fn opened(&self, path: &Path, text: &str);

    /// The report on `changes` (already written), or `None` when there is nothing to say.
    fn diagnose<'a>(&'a self, changes: &'a [FileChange]) -> BoxFuture<'a, Option<String>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_kind_names_round_trip_and_all_is_complete() {
        // Fails to compile when a kind is added, so `ALL` cannot fall behind.
        fn position(kind: OutcomeKind) -> usize {
            match kind {
                OutcomeKind::Success => 0,
                OutcomeKind::Failure => 1,
                OutcomeKind::Unknown => 2,
                OutcomeKind::Stale => 3,
                OutcomeKind::Invalid => 4,
                OutcomeKind::Refused => 5,
                OutcomeKind::InvalidOutput => 6,
                OutcomeKind::RetentionFailed => 7,
                OutcomeKind::Interrupted => 8,
                OutcomeKind::Panicked => 9,
            }
        }
        for (i, kind) in OutcomeKind::ALL.into_iter().enumerate() {
            assert_eq!(position(kind), i);
            assert_eq!(kind.as_str().parse::<OutcomeKind>(), Ok(kind));
            // The journal name is the serde name too.
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(kind.as_str())
            );
        }
    }

    #[test]
    fn unknown_outcome_names_are_rejected_by_name() {
        for bad in ["", "Success", "invalid-output", "panicked "] {
            let error = bad.parse::<OutcomeKind>().unwrap_err();
            assert_eq!(error, ParseOutcomeKindError(bad.to_owned()));
            assert_eq!(error.to_string(), format!("unknown outcome kind {bad:?}"));
        }
    }
}
