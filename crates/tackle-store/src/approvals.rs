//! Saved approvals in SQLite: the "always" answers of the user, per project, kept in the same
//! database file as the settlement journal.
//!
//! Opened [`beside`](SqliteSavedApprovals::beside) the journal, the store uses the journal's
//! connection; a save is committed before it returns (an answer the user gave must not wait in a
//! queue), and one that meets another process's write lock waits for it (up to the busy timeout)
//! rather than failing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::params;
use tackle_permission::{SavedApprovals, SavedApprovalsError};

use crate::SqliteJournal;
use crate::database::Database;
use crate::journal::Durability;

pub(crate) const SCHEMA: &str = "
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
    database: Arc<Database>,
}

impl SqliteSavedApprovals {
    /// Opens (or creates) the approvals table in the database at `path`, creating missing parent
    /// directories, with a connection of its own. [`beside`](Self::beside) shares an open
    /// journal's instead.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        Ok(Self {
            database: Database::open(path.as_ref(), "saved approvals", Durability::Normal)?,
        })
    }

    /// Saved approvals in `journal`'s database, through its connection.
    pub fn beside(journal: &SqliteJournal) -> Self {
        Self {
            database: journal.database().clone(),
        }
    }

    /// The journal's default location, where approvals are kept by default.
    pub fn default_path() -> Option<PathBuf> {
        SqliteJournal::default_path()
    }

    /// Where these approvals live.
    pub fn path(&self) -> &Path {
        self.database.path()
    }

    fn failed(&self, action: &str, e: rusqlite::Error) -> SavedApprovalsError {
        SavedApprovalsError(format!(
            "cannot {action} saved approvals {}: {e}",
            self.path().display()
        ))
    }
}

/// Why a database of tackle (the journal, or a store beside it: saved approvals, session state,
/// the job log) could not be opened.
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
    /// The writer thread, which opens the file, could not be started or stopped while opening.
    #[error("cannot start the writer of {what} {}: {source}", path.display())]
    Writer {
        /// What was being opened.
        what: &'static str,
        /// The database file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file was written by a newer tackle.
    #[error(
        "cannot open {what} {}: schema version {found} is newer than this build understands \
         ({supported}); use the tackle that wrote it or another data directory",
        path.display()
    )]
    NewerSchema {
        /// What was being opened.
        what: &'static str,
        /// The database file.
        path: PathBuf,
        /// The file's `user_version`.
        found: i64,
        /// The newest version this build reads.
        supported: i64,
    },
    /// The file cannot be put in WAL mode, which concurrent readers and writers need.
    #[error("cannot open {what} {}: the database refused WAL mode (it is in {mode} mode)", path.display())]
    NotWal {
        /// What was being opened.
        what: &'static str,
        /// The database file.
        path: PathBuf,
        /// The journal mode the file is in.
        mode: String,
    },
}

impl SavedApprovals for SqliteSavedApprovals {
    fn load(&self, project: &str) -> Result<Vec<(String, String)>, SavedApprovalsError> {
        let conn = self.database.connection();
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
        let conn = self.database.connection();
        conn.prepare_cached(INSERT)
            .and_then(|mut insert| insert.execute(params![project, permission, pattern, now_ms()]))
            .map(drop)
            .map_err(|e| self.failed("write", e))
    }
}

impl std::fmt::Debug for SqliteSavedApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSavedApprovals")
            .field("path", &self.path())
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
