//! The doom-loop check: the third identical consecutive call within one assistant message asks
//! `doom_loop` before it runs.
//!
//! As in OpenCode, a streak belongs to one assistant message: a new message starts a new
//! streak, so separate `tackle call` processes (each its own message unless `--message` says
//! otherwise) never trip it, and over MCP, which has no messages, a connection's calls are one
//! message. The streak lives in the session state store, so processes that share a message see
//! it. Calls are identical when the tool and the canonical arguments (keys sorted) are equal; a
//! saved "always" for the tool lets the streak go on without asking.
//!
//! When nobody can be asked, a read-only call runs anyway, and the model is told that it
//! repeated itself: refusing a read teaches the model nothing a repeated result does not.

use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle_builtins::{Ask, Gate, refusal};
use tackle_core::{Concurrency, Context, SessionState, ToolFailure};
use tackle_permission::{DEFAULT_DOOM_LOOP_THRESHOLD, DoomLoop, PermissionError, Streak};
use tackle_registry::{CallDraft, Layer, Turn};

use crate::warnings::Warnings;

/// Where a session's streak is kept.
const STREAK_KEY: &str = "doom_loop.streak";

/// A streak and the assistant message it belongs to.
#[derive(Default, Serialize, Deserialize)]
struct MessageStreak {
    #[serde(default)]
    message: String,
    #[serde(flatten)]
    streak: Streak,
}

/// Asks before the threshold-th identical consecutive call runs.
pub(crate) struct DoomLoopCheck {
    gate: Gate,
    state: Arc<dyn SessionState>,
    warnings: Warnings,
    threshold: usize,
    /// Serializes this process's read-update-write of a streak.
    update: Mutex<()>,
}

impl DoomLoopCheck {
    pub(crate) fn new(gate: Gate, state: Arc<dyn SessionState>, warnings: Warnings) -> Self {
        Self {
            gate,
            state,
            warnings,
            threshold: DEFAULT_DOOM_LOOP_THRESHOLD,
            update: Mutex::new(()),
        }
    }

    /// Counts this call into its message's streak; the loop it makes, if any.
    fn observe(&self, cx: &Context, tool: &str, arguments: &Value) -> Option<DoomLoop> {
        let session = cx.session().as_str();
        let message = cx.assistant_message().as_str();
        let _guard = self.update.lock().unwrap_or_else(PoisonError::into_inner);
        let mut streak: MessageStreak = match self.state.get(session, STREAK_KEY) {
            Ok(Some(text)) => serde_json::from_str(&text).unwrap_or_default(),
            Ok(None) => MessageStreak::default(),
            Err(error) => {
                self.warnings.session(
                    session,
                    format!(
                        "the repeated-call check could not read this session's streak: {error}"
                    ),
                );
                MessageStreak::default()
            }
        };
        if streak.message != message {
            streak = MessageStreak {
                message: message.to_owned(),
                streak: Streak::default(),
            };
        }
        let found = streak.streak.observe(tool, arguments, self.threshold);
        if let Ok(text) = serde_json::to_string(&streak)
            && let Err(error) = self.state.put(session, STREAK_KEY, Some(&text))
        {
            self.warnings.session(
                session,
                format!("the repeated-call check could not save this session's streak: {error}"),
            );
        }
        found
    }
}

impl Layer for DoomLoopCheck {
    fn before<'a>(
        &'a self,
        turn: &'a Turn,
        cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            let name = call.name().to_owned();
            let arguments = call
                .arguments_mut()
                .map_or(Value::Null, |map| Value::Object(map.clone()));
            let Some(found) = self.observe(cx, &name, &arguments) else {
                return Ok(());
            };
            let repeats = found.repeats;
            let ask = Ask::new(found.permission(), [found.pattern()])
                .with_always([found.pattern()])
                .with_metadata(serde_json::json!({
                    "tool": name,
                    "repeats": repeats,
                    "arguments": arguments,
                }));
            let read_only = turn
                .get(&name)
                .is_some_and(|tool| matches!(tool.definition().concurrency, Concurrency::ReadOnly));
            match self.gate.request(cx, ask).await {
                Ok(()) => Ok(()),
                Err(PermissionError::Unanswered { reason, .. }) if read_only => {
                    call.note(format!(
                        "ran the {} identical call of `{name}` in a row: nobody could be asked \
                         ({reason}), and the tool only reads",
                        ordinal(repeats)
                    ));
                    call.tell_model(format!(
                        "This is the {} identical call of `{name}` in a row, and its result \
                         below is what the earlier ones returned unless something changed \
                         since. Use it, or change the call; do not repeat it again.",
                        ordinal(repeats)
                    ));
                    Ok(())
                }
                Err(error) => {
                    let failure = refusal(error);
                    if failure.is_interruption() {
                        Err(failure)
                    } else {
                        Err(ToolFailure::new(format!(
                            "This is the {} identical call of `{name}` in a row, and it was not \
                             allowed to run again: {failure}",
                            ordinal(repeats)
                        )))
                    }
                }
            }
        })
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
