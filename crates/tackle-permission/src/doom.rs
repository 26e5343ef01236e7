//! Doom-loop detection: a model repeating the same call over and over.
//!
//! The host feeds every call of a session to that session's [`Streak::observe`] before running
//! it. When the call is the threshold-th identical consecutive call (three by default), the
//! streak reports a [`DoomLoop`], and the host raises a `doom_loop` permission request
//! (resource: the tool name) before the call runs. Later identical calls keep reporting, so each
//! one is decided; a saved "always" for that tool lets the streak continue without asking.
//!
//! Calls are identical when the tool and the canonical arguments (JSON with object keys sorted
//! at every depth) are equal. A streak is only the last fingerprint and a count: no clock, no
//! history.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
        crate::names::Permission::DOOM_LOOP.as_str()
    }

    /// The resource to request it on: the tool name, so "always" covers that tool's loops.
    pub fn pattern(&self) -> &str {
        &self.tool
    }
}

/// The current streak of identical consecutive calls of one session.
///
/// It is plain data, so a host can keep it wherever a session's state lives (tackle-host keeps
/// it in the session state store, so separate processes of one session share it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Streak {
    fingerprint: String,
    repeats: usize,
}

impl Streak {
    /// Records a call of `tool` with `arguments`, and reports a loop when it makes the streak of
    /// identical consecutive calls reach `threshold` (at least 1) or go past it.
    pub fn observe(&mut self, tool: &str, arguments: &Value, threshold: usize) -> Option<DoomLoop> {
        let print = fingerprint(tool, arguments);
        if self.fingerprint == print {
            self.repeats += 1;
        } else {
            *self = Streak {
                fingerprint: print.clone(),
                repeats: 1,
            };
        }
        (self.repeats >= threshold.max(1)).then(|| DoomLoop {
            tool: tool.to_owned(),
            repeats: self.repeats,
            fingerprint: print,
        })
    }

    /// How many identical consecutive calls the streak holds (0 before the first call).
    pub fn repeats(&self) -> usize {
        self.repeats
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
