//! What settlement produces: the call as the provider sent it, the outcome, the model-facing
//! result, and the settlement the host receives.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bound::LimitsOverride;
use crate::codec::Arguments;
use crate::content::{Content, ToolOutput};
use crate::ids::{CallIdentity, RegistrationId};
use crate::ports::{JournalError, ManagedRef, OutcomeKind, PhaseTimings, RetentionError};

/// One call as the provider sent it: a name and raw arguments.
///
/// The call's ID travels in the [`Context`](crate::Context), with the rest of the host-supplied
/// identity.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub(crate) name: String,
    pub(crate) arguments: Arguments,
    pub(crate) limits: LimitsOverride,
}

impl ToolCall {
    /// A call of `name` with the provider's raw arguments.
    pub fn new(name: impl Into<String>, arguments: impl Into<Arguments>) -> Self {
        Self {
            name: name.into(),
            arguments: arguments.into(),
            limits: LimitsOverride::default(),
        }
    }

    /// The same call with its own output limits, which outrank every other setting.
    pub fn with_limits(mut self, limits: LimitsOverride) -> Self {
        self.limits = limits;
        self
    }

    /// The name the model called.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The call's own output limits.
    pub fn limits(&self) -> &LimitsOverride {
        &self.limits
    }

    /// Splits the call into its name, its raw arguments and its limits.
    pub fn into_parts(self) -> (String, Arguments, LimitsOverride) {
        (self.name, self.arguments, self.limits)
    }
}

/// Why a call produced an error result for the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelErrorKind {
    /// The tool returned a `ToolFailure`.
    Failed,
    /// The name was not advertised in the turn.
    Unknown,
    /// The advertised registration was removed or replaced; nothing ran.
    Stale,
    /// The arguments did not decode; nothing ran.
    Invalid,
    /// Host policy refused the call before it ran (a hook, a loop check); nothing ran.
    Refused,
}

/// An error result the model sees, with a message that says how to fix the call.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelError {
    /// What kind of error.
    pub kind: ModelErrorKind,
    /// The bounded model-facing text.
    pub content: Vec<Content>,
}

impl ModelError {
    /// The error text the model reads.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// An operational failure for the host's policy. Never shown to the model as a tool result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Defect {
    /// The tool panicked. The payload is for the host's logs only.
    #[error("tool panicked: {0}")]
    Panicked(String),
    /// The tool returned an output its codec rejects.
    #[error("tool returned an invalid output: {0}")]
    InvalidOutput(String),
    /// The complete output could not be retained, so no bounded preview was published.
    #[error(transparent)]
    Retention(#[from] RetentionError),
    /// The settlement could not be recorded; `outcome` is what it would have been.
    #[error("{error} (the call ended as {})", outcome.as_str())]
    Journal {
        /// The journal's error.
        error: JournalError,
        /// How the call ended before recording failed.
        outcome: OutcomeKind,
    },
}

/// Why a call was interrupted. For the host: the model never reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interruption {
    /// The host's cancellation token fired.
    Cancelled,
    /// The tool was stopped from outside and said why with
    /// [`ToolFailure::interruption`](crate::ToolFailure::interruption): a permission prompt
    /// withdrawn before the user answered, a lost connection to a remote tool.
    Reported(String),
}

impl fmt::Display for Interruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interruption::Cancelled => f.write_str("the host cancelled the call"),
            Interruption::Reported(reason) => f.write_str(reason),
        }
    }
}

/// How a settlement ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The tool ran; here is the bounded model-facing output. Its `structured` value is what the
    /// provider receives: the domain output when it fits the bound with the text, else `null`
    /// (the complete value is then retained, see [`Settlement::managed`]).
    Success(ToolOutput),
    /// An error result for the model.
    Error(ModelError),
    /// The call was interrupted. Not a tool result: the host decides what the model sees.
    Interrupted(Interruption),
    /// An operational failure for the host.
    Defect(Defect),
}

impl Outcome {
    /// How the journal names this outcome.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Success(_) => OutcomeKind::Success,
            Outcome::Error(error) => match error.kind {
                ModelErrorKind::Failed => OutcomeKind::Failure,
                ModelErrorKind::Unknown => OutcomeKind::Unknown,
                ModelErrorKind::Stale => OutcomeKind::Stale,
                ModelErrorKind::Invalid => OutcomeKind::Invalid,
                ModelErrorKind::Refused => OutcomeKind::Refused,
            },
            Outcome::Interrupted(_) => OutcomeKind::Interrupted,
            Outcome::Defect(Defect::Panicked(_)) => OutcomeKind::Panicked,
            Outcome::Defect(Defect::InvalidOutput(_)) => OutcomeKind::InvalidOutput,
            Outcome::Defect(Defect::Retention(_)) => OutcomeKind::RetentionFailed,
            Outcome::Defect(Defect::Journal { outcome, .. }) => *outcome,
        }
    }

    /// True for outcomes that belong to the host (interruptions and defects), not the model.
    pub fn is_for_host(&self) -> bool {
        matches!(self, Outcome::Interrupted(_) | Outcome::Defect(_))
    }
}

/// The result a provider receives for a call, when the outcome has one.
///
/// Serializes as `{"is_error": …, "content": […], "structured": …}`; the journal stores that
/// JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelResult {
    /// True for error results.
    pub is_error: bool,
    /// The parts the model reads. Empty for a structured-only success.
    pub content: Vec<Content>,
    /// The structured output of a success, bounded with the text, for providers that accept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
}

/// A sub-call, settled on behalf of a call, whose outcome is for the host: an interruption or a
/// defect. The model read only a neutral line about it; the sub-call has its own journal row.
#[derive(Clone, Debug, PartialEq)]
pub struct SubCallReport {
    /// The sub-call's 1-based position among its parent's sub-calls.
    pub index: u32,
    /// The name the sub-call named.
    pub tool: String,
    /// How it ended: always [`Outcome::Interrupted`] or [`Outcome::Defect`].
    pub outcome: Outcome,
}

/// The settled result of one call.
#[derive(Clone, Debug, PartialEq)]
pub struct Settlement {
    /// The host-supplied identity, exactly as given.
    pub identity: CallIdentity,
    /// The name the model called.
    pub tool: String,
    /// The registration that served the call, when one was resolved.
    pub registration: Option<RegistrationId>,
    /// How it ended.
    pub outcome: Outcome,
    /// Sub-calls this call settled on its behalf (a `batch`'s) that ended in an interruption or a
    /// defect, in the order they were settled. The call's own outcome does not hide them.
    pub sub_calls: Vec<SubCallReport>,
    /// Complete outputs retained in managed storage. Settlement metadata only.
    pub managed: Vec<ManagedRef>,
    /// Phase durations.
    pub timings: PhaseTimings,
    /// What host policy changed in the call before it settled, one line each (also journaled).
    pub adjustments: Vec<String>,
    /// Notes host policy attached after the call settled, for the host only: never part of the
    /// model's result or the journal's.
    pub annotations: Vec<String>,
}

impl Settlement {
    /// What the provider should receive as this call's result, or `None` when the outcome is for
    /// the host (interruption, defects).
    pub fn model_result(&self) -> Option<ModelResult> {
        match &self.outcome {
            Outcome::Success(output) => Some(ModelResult {
                is_error: false,
                content: output.content.clone(),
                structured: (!output.structured.is_null()).then(|| output.structured.clone()),
            }),
            Outcome::Error(error) => Some(ModelResult {
                is_error: true,
                content: error.content.clone(),
                structured: None,
            }),
            Outcome::Interrupted(_) | Outcome::Defect(_) => None,
        }
    }
}

impl fmt::Display for Settlement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.tool, self.identity.call)?;
        if let Some(index) = self.identity.sub_call {
            write!(f, " (sub-call {index})")?;
        }
        write!(f, ": {}", self.outcome.kind().as_str())
    }
}
