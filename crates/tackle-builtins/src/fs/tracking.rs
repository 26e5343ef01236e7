//! Per-session read tracking: a write to an existing file needs a read of its current content.
//!
//! Freshness is decided by a blake3 hash of the bytes, never by timestamps, so touching a file or
//! a formatter rewriting it identically raises no false alarm, and a fresh read always clears a
//! stale entry.
//!
//! The ledger lives in memory. With a [`SessionState`] behind it, every entry is also written
//! through under `read:<canonical path>`, and a miss in memory is looked up there, so a session
//! that spans processes (the `tackle` CLI) keeps its reads.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tackle_core::{SessionId, SessionState};

use super::Resolved;

/// Why a write was refused by read tracking.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StaleRead {
    /// The session never read the file.
    #[error("You have not read {path} in this session. Read it first, then retry the edit.")]
    NeverRead {
        /// The file, as shown to the model.
        path: String,
    },
    /// The file's content differs from what the session last read.
    #[error("{path} changed since you last read it. Read it again, then retry.")]
    ChangedSinceRead {
        /// The file, as shown to the model.
        path: String,
    },
}

/// The read ledger of every session: canonical path → hash of the bytes last read or written.
/// Cheap to clone; clones share the ledger.
#[derive(Clone)]
pub struct ReadTracker {
    /// `None` when tracking is disabled by configuration.
    ledger: Option<Arc<Mutex<Ledger>>>,
    /// Where entries are also kept, when sessions outlive the process.
    backing: Option<Arc<dyn SessionState>>,
}

impl fmt::Debug for ReadTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadTracker")
            .field("enabled", &self.is_enabled())
            .field("persistent", &self.backing.is_some())
            .finish()
    }
}

/// Puts `hash` in the in-memory ledger for `session` and `target`.
fn remember(ledger: &Mutex<Ledger>, session: &SessionId, target: &Resolved, hash: blake3::Hash) {
    ledger
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(session.clone())
        .or_default()
        .insert(target.path.clone(), hash);
}

fn state_key(path: &Path) -> String {
    format!("read:{}", path.to_string_lossy())
}

type Ledger = HashMap<SessionId, HashMap<PathBuf, blake3::Hash>>;

impl Default for ReadTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadTracker {
    /// An enabled tracker with an empty ledger.
    pub fn new() -> Self {
        Self {
            ledger: Some(Arc::default()),
            backing: None,
        }
    }

    /// An enabled tracker that also keeps its entries in `state`, so a session's reads survive
    /// the process. A failure to persist only makes a later process ask for a fresh read.
    pub fn persistent(state: Arc<dyn SessionState>) -> Self {
        Self {
            ledger: Some(Arc::default()),
            backing: Some(state),
        }
    }

    /// A tracker that records nothing and finds every file fresh.
    pub fn disabled() -> Self {
        Self {
            ledger: None,
            backing: None,
        }
    }

    /// Whether tracking is on.
    pub fn is_enabled(&self) -> bool {
        self.ledger.is_some()
    }

    /// Records that `session` has seen `bytes` as the content of `target`. Call it after a read
    /// and after a successful write, so the session's own writes do not make the file stale.
    pub fn record_read(&self, session: &SessionId, target: &Resolved, bytes: &[u8]) {
        if let Some(ledger) = &self.ledger {
            let hash = blake3::hash(bytes);
            remember(ledger, session, target, hash);
            if let Some(state) = &self.backing {
                // Losing this entry is safe: the next process asks for a fresh read.
                let _ = state.put(
                    session.as_str(),
                    &state_key(&target.path),
                    Some(&hash.to_hex()),
                );
            }
        }
    }

    /// The hash recorded for `target`, from memory or else from the backing state.
    fn recorded(
        &self,
        ledger: &Mutex<Ledger>,
        session: &SessionId,
        target: &Resolved,
    ) -> Option<blake3::Hash> {
        let cached = ledger
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .and_then(|files| files.get(&target.path))
            .copied();
        if cached.is_some() {
            return cached;
        }
        let state = self.backing.as_ref()?;
        let stored = state
            .get(session.as_str(), &state_key(&target.path))
            .ok()??;
        let hash = blake3::Hash::from_hex(stored.as_bytes()).ok()?;
        remember(ledger, session, target, hash);
        Some(hash)
    }

    /// Refuses unless `session` has read `target` and its content is still `current_bytes`.
    pub fn check_fresh(
        &self,
        session: &SessionId,
        target: &Resolved,
        current_bytes: &[u8],
    ) -> Result<(), StaleRead> {
        let Some(ledger) = &self.ledger else {
            return Ok(());
        };
        let path = target.display_name();
        match self.recorded(ledger, session, target) {
            None => Err(StaleRead::NeverRead { path }),
            Some(hash) if hash != blake3::hash(current_bytes) => {
                Err(StaleRead::ChangedSinceRead { path })
            }
            Some(_) => Ok(()),
        }
    }

    /// Forgets `target` for `session`, for example after the session deleted it.
    pub fn forget(&self, session: &SessionId, target: &Resolved) {
        if let Some(ledger) = &self.ledger {
            let mut ledger = ledger.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(files) = ledger.get_mut(session) {
                files.remove(&target.path);
            }
            if let Some(state) = &self.backing {
                let _ = state.put(session.as_str(), &state_key(&target.path), None);
            }
        }
    }

    /// Drops everything recorded in memory for `session`, when the session ends. Entries in the
    /// backing state stay; they are keyed by session and harmless once it is over.
    pub fn end_session(&self, session: &SessionId) {
        if let Some(ledger) = &self.ledger {
            ledger
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(session);
        }
    }
}
