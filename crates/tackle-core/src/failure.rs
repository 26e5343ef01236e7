//! `ToolFailure`: the one error a tool may return. Shown to the model as a failed call, unless the
//! tool reports an interruption through it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An expected failure that the model should see and can act on.
///
/// Return a `ToolFailure` for conditions the model can fix by changing its call: a missing file,
/// an ambiguous match, a command that needs a different flag. The message should say what went
/// wrong; the hint, when there is one, should say what to do next (see `STYLE.md`).
///
/// A tool that was stopped from outside (a permission prompt withdrawn before the user answered,
/// the connection to a remote tool lost) returns [`ToolFailure::interruption`] instead: it
/// travels through the same `?` as a failure, but settlement reports the call as interrupted, to
/// the host only, and the model never reads its text (`LAW-INTERRUPTION-NOT-A-RESULT`).
///
/// Be careful when:
/// - translating errors. Classify only what you deliberately recognise. Never wrap a whole
///   executor in a catch-all: cancellation and bugs are not failures, and settlement reports them
///   to the host, not to the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFailure {
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    interruption: bool,
}

impl ToolFailure {
    /// A failure with a message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            interruption: false,
        }
    }

    /// Not a failure: the call was stopped from outside the tool, for `reason` (such as "the
    /// permission request was withdrawn" or "the MCP server closed the connection").
    ///
    /// Settlement reports the call as [`Interruption::Reported`](crate::Interruption) with this
    /// reason, for the host; nothing reaches the model.
    pub fn interruption(reason: impl Into<String>) -> Self {
        Self {
            interruption: true,
            ..Self::new(reason)
        }
    }

    /// True when this reports an interruption rather than a failure for the model.
    pub fn is_interruption(&self) -> bool {
        self.interruption
    }

    /// The same failure with a hint on how to fix the call.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What the model should do next, if the tool knows.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }
}

impl fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nHint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolFailure {}
