//! Doom-loop detection: a model repeating the same call over and over.
//!
//! The host feeds every call to [`DoomLoopDetector::observe`] before running it. When the call is
//! the threshold-th identical consecutive call of its session (three by default), the detector
//! reports a [`DoomLoop`], and the host raises a `doom_loop` permission request (resource: the
//! tool name) before the call runs. Later identical calls keep reporting, so each one is
//! decided; a saved "always" for that tool lets the streak continue without asking.
//!
//! Calls are identical when the tool and the canonical arguments (JSON with object keys sorted
//! at every depth) are equal. The detector keeps only the current streak per session and never
//! reads a clock.

use std::collections::HashMap;

use serde_json::Value;

/// The permission a doom-loop request asks for.
pub const DOOM_LOOP_PERMISSION: &str = "doom_loop";

/// How many identical consecutive calls make a loop, unless configured otherwise.
pub const DEFAULT_DOOM_LOOP_THRESHOLD: usize = 3;

/// A detected loop: the call about to run repeats the previous ones.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DoomLoop {
    /// The repeated tool.
    pub tool: String,
    /// How many identical consecutive calls there are, counting this one.
    pub repeats: usize,
    /// The call's fingerprint (see [`fingerprint`]).
    pub fingerprint: String,
}

impl DoomLoop {
    /// The permission to request: `doom_loop`.
    pub fn permission(&self) -> &'static str {
        DOOM_LOOP_PERMISSION
    }

    /// The resource to request it on: the tool name, so "always" covers that tool's loops.
    pub fn pattern(&self) -> &str {
        &self.tool
    }
}

/// The current streak of one session.
#[derive(Clone, Debug)]
struct Streak {
    fingerprint: String,
    repeats: usize,
}

/// Tracks identical consecutive calls per session.
#[derive(Clone, Debug)]
pub struct DoomLoopDetector {
    threshold: usize,
    sessions: HashMap<String, Streak>,
}

impl Default for DoomLoopDetector {
    fn default() -> Self {
        Self::new()
    }
}

impl DoomLoopDetector {
    /// A detector with the default threshold of three.
    pub fn new() -> Self {
        Self::with_threshold(DEFAULT_DOOM_LOOP_THRESHOLD)
    }

    /// A detector that reports from the `threshold`-th identical call on (at least 1).
    pub fn with_threshold(threshold: usize) -> Self {
        Self {
            threshold: threshold.max(1),
            sessions: HashMap::new(),
        }
    }

    /// The configured threshold.
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// Records a call of `tool` with `arguments` in `session`, and reports a loop when this call
    /// makes the streak of identical consecutive calls reach the threshold (or go past it).
    pub fn observe(&mut self, session: &str, tool: &str, arguments: &Value) -> Option<DoomLoop> {
        let print = fingerprint(tool, arguments);
        let repeats = match self.sessions.get_mut(session) {
            Some(streak) if streak.fingerprint == print => {
                streak.repeats += 1;
                streak.repeats
            }
            Some(streak) => {
                *streak = Streak {
                    fingerprint: print.clone(),
                    repeats: 1,
                };
                1
            }
            None => {
                self.sessions.insert(
                    session.to_owned(),
                    Streak {
                        fingerprint: print.clone(),
                        repeats: 1,
                    },
                );
                1
            }
        };
        (repeats >= self.threshold).then(|| DoomLoop {
            tool: tool.to_owned(),
            repeats,
            fingerprint: print,
        })
    }

    /// The length of `session`'s current streak (0 when nothing was observed).
    pub fn repeats(&self, session: &str) -> usize {
        self.sessions
            .get(session)
            .map_or(0, |streak| streak.repeats)
    }

    /// Drops everything known about `session`.
    pub fn forget_session(&mut self, session: &str) {
        self.sessions.remove(session);
    }
}

/// The fingerprint of a call: the tool name, a NUL, and the canonical arguments.
pub fn fingerprint(tool: &str, arguments: &Value) -> String {
    format!("{tool}\u{0}{}", canonical_json(arguments))
}

/// Compact JSON with object keys sorted at every depth, so key order never matters.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sort explicitly: the map's own order depends on serde_json features.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests;
