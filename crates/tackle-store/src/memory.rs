//! In-memory doubles of the output store and the journal, for tests and embedders.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tackle_core::{
    Journal, JournalError, ManagedRef, OutputStore, RetentionError, SessionId, SettlementRecord,
};

/// Locks `mutex`, ignoring poisoning: every critical section here leaves the data consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps retained outputs in memory, keyed by the blake3 hex of their bytes.
///
/// References carry the path `memory://<hash>`, which no file tool can open. Clones share the
/// same contents, so a test can keep one handle and give another to a registry. Retained buffers
/// are kept as given, shared with the caller rather than copied.
#[derive(Clone, Debug, Default)]
pub struct MemoryOutputStore {
    outputs: Arc<Mutex<HashMap<String, Bytes>>>,
    /// When set, every `retain` fails with this message.
    failure: Option<Arc<str>>,
}

impl MemoryOutputStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store whose `retain` always fails with `message`.
    pub fn failing(message: impl Into<String>) -> Self {
        Self {
            failure: Some(Arc::from(message.into())),
            ..Self::default()
        }
    }

    /// The bytes retained under `id`; a cheap handle to the stored buffer.
    pub fn get(&self, id: &str) -> Option<Bytes> {
        lock(&self.outputs).get(id).cloned()
    }

    /// How many distinct outputs are retained.
    pub fn len(&self) -> usize {
        lock(&self.outputs).len()
    }

    /// True when nothing is retained.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl OutputStore for MemoryOutputStore {
    fn retain(&self, bytes: Bytes) -> BoxFuture<'static, Result<ManagedRef, RetentionError>> {
        let result = match &self.failure {
            Some(message) => Err(RetentionError(message.to_string())),
            None => {
                let id = blake3::hash(&bytes).to_hex().to_string();
                let reference = ManagedRef {
                    path: PathBuf::from(format!("memory://{id}")),
                    bytes: bytes.len() as u64,
                    id: id.clone(),
                };
                lock(&self.outputs).entry(id).or_insert(bytes);
                Ok(reference)
            }
        };
        Box::pin(std::future::ready(result))
    }

    fn directory(&self) -> Option<&Path> {
        None
    }
}

/// Keeps settlement records in memory, in the order they were recorded.
///
/// Clones share the same records.
#[derive(Clone, Debug, Default)]
pub struct MemoryJournal {
    records: Arc<Mutex<Vec<SettlementRecord>>>,
    /// When set, every `record` fails with this message and keeps nothing.
    failure: Option<Arc<str>>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// A journal whose `record` always fails with `message`.
    pub fn failing(message: impl Into<String>) -> Self {
        Self {
            failure: Some(Arc::from(message.into())),
            ..Self::default()
        }
    }

    /// Every recorded settlement, oldest first.
    pub fn records(&self) -> Vec<SettlementRecord> {
        lock(&self.records).clone()
    }

    /// The settlements of one session, oldest first.
    pub fn records_for_session(&self, session: &SessionId) -> Vec<SettlementRecord> {
        lock(&self.records)
            .iter()
            .filter(|record| record.identity.session == *session)
            .cloned()
            .collect()
    }
}

impl Journal for MemoryJournal {
    fn record(&self, record: SettlementRecord) -> BoxFuture<'static, Result<(), JournalError>> {
        // Recorded eagerly, so a caller that drops the future still leaves the record.
        let result = match &self.failure {
            Some(message) => Err(JournalError(message.to_string())),
            None => {
                lock(&self.records).push(record);
                Ok(())
            }
        };
        Box::pin(std::future::ready(result))
    }
}

#[cfg(test)]
mod tests;
