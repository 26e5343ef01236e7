//! The log of background jobs' events (start, input, kill, end) in the journal's database, each
//! under the identity of the call it belongs to.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, params};

use crate::approvals::{now_ms, open_side_connection};

const SCHEMA: &str = "
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

/// The job log, usually in the journal's own file.
pub struct SqliteJobLog {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteJobLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJobLog").finish_non_exhaustive()
    }
}

impl SqliteJobLog {
    /// Opens (or creates) the log's table in the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, crate::OpenError> {
        let conn = open_side_connection(path.as_ref(), "job log", SCHEMA)?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    /// Appends one event. A failure is logged: a job's record must never stop the job.
    pub fn append(&self, row: &JobLogRow) {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let inserted = conn.execute(
            "INSERT INTO job_events (session, message, call, job, event, detail, at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                row.session,
                row.message,
                row.call,
                row.job,
                row.event,
                row.detail,
                now_ms()
            ],
        );
        if let Err(error) = inserted {
            tracing::warn!(%error, "a job event was not logged");
        }
    }

    /// The events of `session`, oldest first.
    pub fn events(&self, session: &str) -> Result<Vec<JobLogRow>, rusqlite::Error> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let mut statement = conn.prepare(
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
