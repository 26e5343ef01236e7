//! The log of background jobs' events (start, input, kill, end) in the journal's database, each
//! under the identity of the call it belongs to.

use std::path::Path;
use std::sync::Arc;

use rusqlite::params;

use crate::SqliteJournal;
use crate::database::{Database, Job};
use crate::journal::Durability;

pub(crate) const INSERT: &str = "
INSERT INTO job_events (session, message, call, job, event, detail, at_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS job_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    message TEXT NOT NULL,
    call TEXT NOT NULL,
    job TEXT NOT NULL,
    event TEXT NOT NULL,
    detail TEXT NOT NULL,
    at_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS job_events_session ON job_events(session, seq);
";

/// One logged event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobLogRow {
    /// The session.
    pub session: String,
    /// The message of the call.
    pub message: String,
    /// The call.
    pub call: String,
    /// The job (`job-1`).
    pub job: String,
    /// `started`, `input`, `kill` or `ended`.
    pub event: String,
    /// Details (`pid 12: cmd`, `4 bytes`, `exited 0`).
    pub detail: String,
}

/// The job log, usually in the journal's own file. Events are queued to the database's writer
/// thread; [`events`](SqliteJobLog::events) waits for the queue first.
pub struct SqliteJobLog {
    database: Arc<Database>,
}

impl std::fmt::Debug for SqliteJobLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJobLog").finish_non_exhaustive()
    }
}

impl SqliteJobLog {
    /// Opens (or creates) the log's table in the database at `path`, with a connection of its
    /// own. [`beside`](Self::beside) shares an open journal's instead.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, crate::OpenError> {
        Ok(Self {
            database: Database::open(path.as_ref(), "job log", Durability::Normal)?,
        })
    }

    /// The job log in `journal`'s database, through its connection and writer thread.
    pub fn beside(journal: &SqliteJournal) -> Self {
        Self {
            database: journal.database().clone(),
        }
    }

    /// Appends one event. A failure is logged: a job's record must never stop the job.
    pub fn append(&self, row: &JobLogRow) {
        let columns = [
            row.session.clone(),
            row.message.clone(),
            row.call.clone(),
            row.job.clone(),
            row.event.clone(),
            row.detail.clone(),
        ];
        if !self.database.queue(Job::Event(columns)) {
            tracing::warn!("a job event was not logged: the database writer has stopped");
        }
    }

    /// The events of `session`, oldest first, after the queued ones are written.
    pub fn events(&self, session: &str) -> Result<Vec<JobLogRow>, rusqlite::Error> {
        if let Err(error) = self.database.flush() {
            tracing::warn!(%error, "reading the job log after a failed write");
        }
        let conn = self.database.connection();
        let mut statement = conn.prepare_cached(
            "SELECT session, message, call, job, event, detail FROM job_events
             WHERE session = ?1 ORDER BY seq",
        )?;
        let rows = statement.query_map(params![session], |row| {
            Ok(JobLogRow {
                session: row.get(0)?,
                message: row.get(1)?,
                call: row.get(2)?,
                job: row.get(3)?,
                event: row.get(4)?,
                detail: row.get(5)?,
            })
        })?;
        rows.collect()
    }
}
