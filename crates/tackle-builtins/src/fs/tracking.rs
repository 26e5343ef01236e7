//! Per-session read tracking: a write to an existing file needs a read of its current content.
//!
//! Freshness is decided by a blake3 hash of the bytes, never by timestamps, so touching a file or
//! a formatter rewriting it identically raises no false alarm, and a fresh read always clears a
//! stale entry.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tackle_core::SessionId;

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
#[derive(Clone, Debug)]
pub struct ReadTracker {
    /// `None` when tracking is disabled by configuration.
    ledger: Option<Arc<Mutex<Ledger>>>,
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
        }
    }

    /// A tracker that records nothing and finds every file fresh.
    pub fn disabled() -> Self {
        Self { ledger: None }
    }

    /// Whether tracking is on.
    pub fn is_enabled(&self) -> bool {
        self.ledger.is_some()
    }

    /// Records that `session` has seen `bytes` as the content of `target`. Call it after a read
    /// and after a successful write, so the session's own writes do not make the file stale.
    pub fn record_read(&self, session: &SessionId, target: &Resolved, bytes: &[u8]) {
        if let Some(ledger) = &self.ledger {
            let mut ledger = ledger.lock().unwrap_or_else(|e| e.into_inner());
            ledger
                .entry(session.clone())
                .or_default()
                .insert(target.path.clone(), blake3::hash(bytes));
        }
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
        let ledger = ledger.lock().unwrap_or_else(|e| e.into_inner());
        let path = target.display_name();
        match ledger
            .get(session)
            .and_then(|files| files.get(&target.path))
        {
            None => Err(StaleRead::NeverRead { path }),
            Some(hash) if *hash != blake3::hash(current_bytes) => {
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
        }
    }

    /// Drops everything recorded for `session`, when the session ends.
    pub fn end_session(&self, session: &SessionId) {
        if let Some(ledger) = &self.ledger {
            ledger
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(session);
        }
    }
}
