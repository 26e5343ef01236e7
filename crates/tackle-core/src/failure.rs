//! `ToolFailure`: the one error a tool may return, shown to the model as a failed call.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An expected failure that the model should see and can act on.
///
/// Return a `ToolFailure` for conditions the model can fix by changing its call: a missing file,
/// an ambiguous match, a command that needs a different flag. The message should say what went
/// wrong; the hint, when there is one, should say what to do next (see `STYLE.md`).
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
}

impl ToolFailure {
    /// A failure with a message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
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
