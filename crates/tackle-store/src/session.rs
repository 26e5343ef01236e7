//! Session state in SQLite (beside the journal) and in memory: the `SessionState` port's adapters.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{OptionalExtension, Transaction, params};
use tackle_core::{SessionState, SessionStateError};

use crate::SqliteJournal;
use crate::approvals::now_ms;
use crate::database::Database;
use crate::journal::Durability;

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS session_state (
    session TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session, key)
) STRICT;
";

const SELECT: &str = "SELECT value FROM session_state WHERE session = ?1 AND key = ?2";

const UPSERT: &str = "
INSERT INTO session_state (session, key, value, updated_at_ms) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (session, key) DO UPDATE SET value = excluded.value,
    updated_at_ms = excluded.updated_at_ms";

const DELETE: &str = "DELETE FROM session_state WHERE session = ?1 AND key = ?2";

/// Session state in a SQLite database, usually the journal's own file.
///
/// Writes are queued to the database's writer thread and committed with the next group, off
/// the caller's path; a `get` in this process sees every `put` made before it (queued values
/// are read first). [`flush`](Self::flush), or dropping the last handle on the database,
/// commits what is queued, so the next process sees it.
///
/// Be careful when:
/// - calling `get` on an async runtime: a value not queued is one short blocking read.
pub struct SqliteSessionState {
    database: Arc<Database>,
}

impl SqliteSessionState {
    /// Opens (or creates) the session-state table in the database at `path`, creating missing
    /// parent directories, with a connection of its own. [`beside`](Self::beside) shares an
    /// open journal's instead.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, crate::OpenError> {
        Ok(Self {
            database: Database::open(path.as_ref(), "session state", Durability::Normal)?,
        })
    }

    /// Session state in `journal`'s database, through its connection and writer thread.
    pub fn beside(journal: &SqliteJournal) -> Self {
        Self {
            database: journal.database().clone(),
        }
    }

    /// Where the state lives.
    pub fn path(&self) -> &Path {
        self.database.path()
    }

    /// Blocks until every write queued so far on this database (session state, and the
    /// journal's rows when it is shared) is committed.
    pub fn flush(&self) -> Result<(), SessionStateError> {
        self.database.flush().map_err(SessionStateError)
    }
}

/// Writes one value (or removes it) in the writer's transaction.
pub(crate) fn write(
    tx: &Transaction<'_>,
    session: &str,
    key: &str,
    value: Option<&str>,
) -> rusqlite::Result<()> {
    match value {
        Some(value) => tx
            .prepare_cached(UPSERT)?
            .execute(params![session, key, value, now_ms()]),
        None => tx.prepare_cached(DELETE)?.execute(params![session, key]),
    }
    .map(drop)
}

impl SessionState for SqliteSessionState {
    fn get(&self, session: &str, key: &str) -> Result<Option<String>, SessionStateError> {
        if let Some(queued) = self.database.pending_state().get(session, key) {
            return Ok(queued);
        }
        let conn = self.database.connection();
        conn.prepare_cached(SELECT)
            .and_then(|mut select| {
                select
                    .query_row(params![session, key], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| {
                SessionStateError(format!(
                    "cannot read session state {}: {e}",
                    self.path().display()
                ))
            })
    }

    fn put(&self, session: &str, key: &str, value: Option<&str>) -> Result<(), SessionStateError> {
        if self.database.queue_state(session, key, value) {
            Ok(())
        } else {
            Err(SessionStateError(format!(
                "cannot write session state {}: its writer has stopped",
                self.path().display()
            )))
        }
    }
}

impl std::fmt::Debug for SqliteSessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSessionState")
            .field("path", &self.path())
            .finish_non_exhaustive()
    }
}

/// Session state in memory, for hosts that keep one process per session and for tests.
#[derive(Debug, Default)]
pub struct MemorySessionState {
    values: Mutex<HashMap<(String, String), String>>,
}

impl MemorySessionState {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl SessionState for MemorySessionState {
    fn get(&self, session: &str, key: &str) -> Result<Option<String>, SessionStateError> {
        let values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(values.get(&(session.to_owned(), key.to_owned())).cloned())
    }

    fn put(&self, session: &str, key: &str, value: Option<&str>) -> Result<(), SessionStateError> {
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = (session.to_owned(), key.to_owned());
        match value {
            Some(value) => values.insert(slot, value.to_owned()),
            None => values.remove(&slot),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(state: &dyn SessionState) {
        assert_eq!(state.get("s1", "read:/a").unwrap(), None);
        state.put("s1", "read:/a", Some("h1")).unwrap();
        state.put("s2", "read:/a", Some("other")).unwrap();
        assert_eq!(state.get("s1", "read:/a").unwrap().as_deref(), Some("h1"));
        state.put("s1", "read:/a", Some("h2")).unwrap();
        assert_eq!(state.get("s1", "read:/a").unwrap().as_deref(), Some("h2"));
        state.put("s1", "read:/a", None).unwrap();
        assert_eq!(state.get("s1", "read:/a").unwrap(), None);
        assert_eq!(
            state.get("s2", "read:/a").unwrap().as_deref(),
            Some("other")
        );
    }

    #[test]
    fn memory_state_keeps_sessions_apart_and_overwrites() {
        round_trip(&MemorySessionState::new());
    }

    #[test]
    fn sqlite_state_keeps_sessions_apart_and_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/journal.sqlite3");
        round_trip(&SqliteSessionState::open(&path).unwrap());
        SqliteSessionState::open(&path)
            .unwrap()
            .put("s9", "todo", Some("[]"))
            .unwrap();
        let reopened = SqliteSessionState::open(&path).unwrap();
        assert_eq!(reopened.get("s9", "todo").unwrap().as_deref(), Some("[]"));
        assert_eq!(
            reopened.get("s2", "read:/a").unwrap().as_deref(),
            Some("other")
        );
    }

    #[test]
    fn sqlite_state_shares_the_journal_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        let journal = crate::SqliteJournal::open(&path).unwrap();
        let state = SqliteSessionState::open(journal.path()).unwrap();
        state.put("s", "k", Some("v")).unwrap();
        assert_eq!(state.get("s", "k").unwrap().as_deref(), Some("v"));
    }
}
