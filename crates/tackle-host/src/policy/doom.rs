//! The doom-loop check: the third identical consecutive call in a session asks `doom_loop`
//! before it runs.
//!
//! The streak lives in the session state store, so separate `tackle call` processes of one
//! session see it. Calls are identical when the tool and the canonical arguments (keys sorted)
//! are equal; a saved "always" for the tool lets the streak go on without asking.

use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tackle_builtins::{Ask, Gate};
use tackle_core::{Context, SessionState, ToolFailure};
use tackle_permission::{DEFAULT_DOOM_LOOP_THRESHOLD, DoomLoop, Streak};
use tackle_registry::{CallDraft, Layer, Turn};

use crate::warnings::Warnings;

/// Where a session's streak is kept.
const STREAK_KEY: &str = "doom_loop.streak";

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

    /// Counts this call into the session's streak; the loop it makes, if any.
    fn observe(&self, session: &str, tool: &str, arguments: &Value) -> Option<DoomLoop> {
        let _guard = self.update.lock().unwrap_or_else(PoisonError::into_inner);
        let mut streak: Streak = match self.state.get(session, STREAK_KEY) {
            Ok(Some(text)) => serde_json::from_str(&text).unwrap_or_default(),
            Ok(None) => Streak::default(),
            Err(error) => {
                self.warnings.session(
                    session,
                    format!(
                        "the repeated-call check could not read this session's streak: {error}"
                    ),
                );
                Streak::default()
            }
        };
        let found = streak.observe(tool, arguments, self.threshold);
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
        _turn: &'a Turn,
        cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            let name = call.name().to_owned();
            let arguments = call
                .arguments_mut()
                .map_or(Value::Null, |map| Value::Object(map.clone()));
            let Some(found) = self.observe(cx.session().as_str(), &name, &arguments) else {
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
            self.gate.ask(cx, ask).await.map_err(|failure| {
                if failure.is_interruption() {
                    failure
                } else {
                    ToolFailure::new(format!(
                        "This is the {} identical call of `{name}` in a row, and it was not \
                         allowed to run again: {failure}",
                        ordinal(repeats)
                    ))
                }
            })
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
