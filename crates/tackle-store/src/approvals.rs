//! Saved approvals in SQLite: the "always" answers of the user, per project, kept in the same
//! database file as the settlement journal.
//!
//! The store opens its own connection on the journal's file. The database runs in WAL mode, so
//! this connection and the journal's writer and reader work side by side; a save that meets the
//! journal's write lock waits for it (up to the busy timeout) rather than failing.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, params};
use tackle_permission::{SavedApprovals, SavedApprovalsError};

use crate::SqliteJournal;

/// How long a statement waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS approvals (
    project TEXT NOT NULL,
    permission TEXT NOT NULL,
    pattern TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    UNIQUE (project, permission, pattern)
) STRICT;
";

const INSERT: &str = "
INSERT OR IGNORE INTO approvals (project, permission, pattern, created_at_ms)
VALUES (?1, ?2, ?3, ?4)";

const SELECT: &str = "SELECT permission, pattern FROM approvals WHERE project = ?1 ORDER BY rowid";

/// Saved approvals in a SQLite database, usually the journal's own file.
///
/// Be careful when:
/// - calling [`save`](SavedApprovals::save) or [`load`](SavedApprovals::load) on an async
///   runtime: both are short blocking database calls.
pub struct SqliteSavedApprovals {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl SqliteSavedApprovals {
    /// Opens (or creates) the approvals table in the database at `path`, creating missing parent
    /// directories. Pass the journal's [`path`](SqliteJournal::path) to share its file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        let conn = open_side_connection(&path, "saved approvals", SCHEMA)?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The journal's default location, where approvals are kept by default.
    pub fn default_path() -> Option<PathBuf> {
        SqliteJournal::default_path()
    }

    /// Where these approvals live.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn failed(&self, action: &str, e: rusqlite::Error) -> SavedApprovalsError {
        SavedApprovalsError(format!(
            "cannot {action} saved approvals {}: {e}",
            self.path.display()
        ))
    }
}

/// Why a store beside the journal (saved approvals, session state) could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The directory of the database could not be created.
    #[error("cannot create the directory of {what} {}: {source}", path.display())]
    Directory {
        /// What was being opened.
        what: &'static str,
        /// The database file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The database could not be opened or its table created.
    #[error("cannot {action} {what} {}: {source}", path.display())]
    Database {
        /// What was being opened.
        what: &'static str,
        /// `open` or `initialize`.
        action: &'static str,
        /// The database file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
}

/// Opens a connection beside the journal's on the database at `path` (creating missing parent
/// directories) and creates `schema`. `what` names the data in errors. Leaves `user_version` to
/// the journal.
pub(crate) fn open_side_connection(
    path: &Path,
    what: &'static str,
    schema: &str,
) -> Result<Connection, OpenError> {
    let database = |action: &'static str| {
        move |source: rusqlite::Error| OpenError::Database {
            what,
            action,
            path: path.to_path_buf(),
            source,
        }
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| OpenError::Directory {
            what,
            path: path.to_path_buf(),
            source,
        })?;
    }
    let conn = Connection::open(path).map_err(database("open"))?;
    let prepare = || -> rusqlite::Result<()> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // No checkpoint on close, as for the journal's own connections: stopping stays quick.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        // A no-op when the journal already switched the file to WAL.
        let _mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(schema)
    };
    prepare().map_err(database("initialize"))?;
    Ok(conn)
}

impl SavedApprovals for SqliteSavedApprovals {
    fn load(&self, project: &str) -> Result<Vec<(String, String)>, SavedApprovalsError> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let read = || -> rusqlite::Result<Vec<(String, String)>> {
            let mut statement = conn.prepare_cached(SELECT)?;
            let rows = statement.query_map([project], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect()
        };
        read().map_err(|e| self.failed("read", e))
    }

    fn save(
        &self,
        project: &str,
        permission: &str,
        pattern: &str,
    ) -> Result<(), SavedApprovalsError> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        conn.prepare_cached(INSERT)
            .and_then(|mut insert| insert.execute(params![project, permission, pattern, now_ms()]))
            .map(drop)
            .map_err(|e| self.failed("write", e))
    }
}

impl std::fmt::Debug for SqliteSavedApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSavedApprovals")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Milliseconds since the Unix epoch; 0 if the clock is before it.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
