//! Session state in SQLite (beside the journal) and in memory: the `SessionState` port's adapters.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, params};
use tackle_core::{SessionState, SessionStateError};

use crate::approvals::{now_ms, open_side_connection};

const SCHEMA: &str = "
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
/// Be careful when:
/// - calling it on an async runtime: each call is one short blocking statement.
pub struct SqliteSessionState {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl SqliteSessionState {
    /// Opens (or creates) the session-state table in the database at `path`, creating missing
    /// parent directories. Pass the journal's [`path`](crate::SqliteJournal::path) to share it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, crate::OpenError> {
        let path = path.as_ref().to_path_buf();
        let conn = open_side_connection(&path, "session state", SCHEMA)?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// Where the state lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn failed(&self, action: &str, e: rusqlite::Error) -> SessionStateError {
        SessionStateError(format!(
            "cannot {action} session state {}: {e}",
            self.path.display()
        ))
    }
}

impl SessionState for SqliteSessionState {
    fn get(&self, session: &str, key: &str) -> Result<Option<String>, SessionStateError> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        conn.prepare_cached(SELECT)
            .and_then(|mut select| {
                select
                    .query_row(params![session, key], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| self.failed("read", e))
    }

    fn put(&self, session: &str, key: &str, value: Option<&str>) -> Result<(), SessionStateError> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let result = match value {
            Some(value) => conn
                .prepare_cached(UPSERT)
                .and_then(|mut upsert| upsert.execute(params![session, key, value, now_ms()])),
            None => conn
                .prepare_cached(DELETE)
                .and_then(|mut delete| delete.execute(params![session, key])),
        };
        result.map(drop).map_err(|e| self.failed("write", e))
    }
}

impl std::fmt::Debug for SqliteSessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSessionState")
            .field("path", &self.path)
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
