//! Which files a tool may show the content of: those whose `read` would be allowed at once.
//!
//! `read` asks the `read` permission on a file's real name ([`read_ask`]). A tool that shows
//! content it found itself (grep's matching lines, the lsp tool's lines) asks nobody per file:
//! it leaves out every file whose `read` a rule denies or would ask about, and says how many.
//! The decision is the gate's, the same one `read` gets, so the two can never disagree.

use std::path::Path;

use tackle_core::Context;
use tackle_core::names::Permission;

use super::ToolEnv;
use crate::gate::{Ask, GateJudgment};

/// The question `read` asks before showing the file named `name` (its display name).
pub(crate) fn read_ask(name: &str) -> Ask {
    Ask::new(Permission::READ.as_str(), [name])
}

/// Decides, for one call, which files may be shown without asking.
#[cfg(any(feature = "search", feature = "lsp"))]
#[derive(Clone, Debug)]
pub(crate) struct Readable {
    judgment: GateJudgment,
    env: ToolEnv,
    cx: Context,
}

#[cfg(any(feature = "search", feature = "lsp"))]
impl Readable {
    /// The decision for the call in `cx`, under its agent's rules and the approvals saved now.
    pub(crate) fn new(env: &ToolEnv, cx: &Context) -> Self {
        Self {
            judgment: env.gate.judgment(cx),
            env: env.clone(),
            cx: cx.clone(),
        }
    }

    /// Whether the content of the existing file `path` may be shown: its `read` would be
    /// allowed at once. A path that cannot be resolved is not shown. Blocking.
    /// Another session's saved output is never shown.
    pub(crate) fn shows(&self, path: &Path) -> bool {
        let Ok(real) = std::fs::canonicalize(path) else {
            return false;
        };
        !self.env.foreign_output(&self.cx, &real)
            && self
                .judgment
                .allows(&read_ask(&self.env.fs.name_of_real(&real)))
    }
}

#[cfg(test)]
mod tests;
