//! Instruction files (AGENTS.md, CLAUDE.md) that read adds to its output, once per session.

// The ledger is part of every `ToolEnv`; only `read` (feature `fs`) fills it.
#![cfg_attr(not(feature = "fs"), allow(dead_code))]

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tackle_core::{SessionId, SessionState};

use super::ToolEnv;
use crate::fs::Resolved;

/// The most bytes of an instruction file read adds.
const MAX_INSTRUCTION_BYTES: usize = 32 * 1024;

/// Which instruction files each session has been shown. Cheap to clone; clones share the set.
#[derive(Clone, Default)]
pub(crate) struct Shown {
    memory: Arc<Mutex<HashSet<(SessionId, PathBuf)>>>,
    backing: Option<Arc<dyn SessionState>>,
}

impl fmt::Debug for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shown")
            .field("persistent", &self.backing.is_some())
            .finish()
    }
}

impl Shown {
    /// A set also kept in `state`, under `instructions:<path>`.
    pub(crate) fn persistent(state: Arc<dyn SessionState>) -> Self {
        Self {
            memory: Arc::default(),
            backing: Some(state),
        }
    }

    /// Claims `path` for `session`: true the first time, false once it has been shown.
    pub(crate) fn claim(&self, session: &SessionId, path: &Path) -> bool {
        let fresh = self
            .memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((session.clone(), path.to_path_buf()));
        if !fresh {
            return false;
        }
        let Some(state) = &self.backing else {
            return true;
        };
        let key = format!("instructions:{}", path.to_string_lossy());
        match state.get(session.as_str(), &key) {
            Ok(Some(_)) => false,
            // Showing a file twice is better than never showing it, so errors count as fresh.
            Ok(None) | Err(_) => {
                let _ = state.put(session.as_str(), &key, Some("1"));
                true
            }
        }
    }
}

/// An instruction file to add to a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Instruction {
    /// The file, as shown to the model.
    pub(crate) name: String,
    /// Its content (cut at [`MAX_INSTRUCTION_BYTES`]).
    pub(crate) content: String,
}

impl Instruction {
    /// The reminder block appended to the read output.
    pub(crate) fn reminder(&self) -> String {
        format!(
            "<system-reminder>\nInstructions from: {}\n{}\n</system-reminder>",
            self.name,
            self.content.trim_end()
        )
    }
}

/// The nearest instruction file between `target` and the Location root (the root itself
/// excluded: hosts put its instructions in the system prompt), if `session` has not seen it.
pub(crate) fn nearest_unseen(
    env: &ToolEnv,
    session: &SessionId,
    target: &Resolved,
) -> Option<Instruction> {
    target.relative.as_ref()?;
    let root = env.fs.root();
    let mut dir = target.path.parent()?;
    while dir != root && dir.starts_with(root) {
        for name in &env.options.instruction_files {
            let candidate = dir.join(name);
            if candidate == target.path || !candidate.is_file() {
                continue;
            }
            if !env.instructions.claim(session, &candidate) {
                return None;
            }
            let bytes = std::fs::read(&candidate).ok()?;
            let cut = &bytes[..bytes.len().min(MAX_INSTRUCTION_BYTES)];
            let content = String::from_utf8_lossy(cut).into_owned();
            let name = candidate
                .strip_prefix(root)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_else(|_| candidate.to_string_lossy().into_owned());
            return Some(Instruction { name, content });
        }
        dir = dir.parent()?;
    }
    None
}
