//! The SQLite settlement journal: one writer thread that group-commits, and a read connection.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use futures_util::future::BoxFuture;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, Row, params};
use tackle_core::{
    CallIdentity, Journal, JournalError, ManagedRef, OutcomeKind, PhaseTimings, SessionId,
    SettlementRecord,
};
use tokio::sync::oneshot;

/// Most rows the writer commits in one transaction.
pub const MAX_BATCH: usize = 4096;

/// The schema version stored in `PRAGMA user_version`.
///
/// - 1: one row per settlement, keyed by the host's IDs.
/// - 2: `call_index` and `parent_call`, for sub-calls settled on behalf of a call (a `batch`'s).
/// - 3: `adjustments`, what host policy changed in the call before it settled (a JSON array of
///   strings).
const SCHEMA_VERSION: i64 = 3;

/// How long a connection waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The current schema. A sub-call's row keeps its parent's host-supplied IDs (`call` is the
/// parent's call ID) and adds its 1-based `call_index`; `parent_call` repeats the parent's call ID
/// for sub-calls only (`NULL` for a direct call), computed rather than stored.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS settlements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    agent TEXT NOT NULL,
    assistant_message TEXT NOT NULL,
    call TEXT NOT NULL,
    tool TEXT NOT NULL,
    registration INTEGER,
    outcome TEXT NOT NULL,
    model_result TEXT,
    managed TEXT NOT NULL,
    started_at_ms INTEGER NOT NULL,
    resolve_us INTEGER NOT NULL,
    decode_us INTEGER NOT NULL,
    execute_us INTEGER NOT NULL,
    encode_us INTEGER NOT NULL,
    project_us INTEGER NOT NULL,
    bound_us INTEGER NOT NULL,
    call_index INTEGER,
    parent_call TEXT GENERATED ALWAYS AS (CASE WHEN call_index IS NULL THEN NULL ELSE call END) VIRTUAL,
    adjustments TEXT NOT NULL DEFAULT '[]'
) STRICT;
CREATE INDEX IF NOT EXISTS settlements_by_session ON settlements (session, id);
CREATE INDEX IF NOT EXISTS settlements_by_parent ON settlements (parent_call, call_index);
";

/// From version 1: the sub-call columns, added to the rows already there (all direct calls).
const MIGRATE_1_TO_2: &str = "
ALTER TABLE settlements ADD COLUMN call_index INTEGER;
ALTER TABLE settlements ADD COLUMN parent_call TEXT
    GENERATED ALWAYS AS (CASE WHEN call_index IS NULL THEN NULL ELSE call END) VIRTUAL;
CREATE INDEX IF NOT EXISTS settlements_by_parent ON settlements (parent_call, call_index);
";

/// From version 2: the host policy's adjustments, none for the rows already there.
const MIGRATE_2_TO_3: &str = "
ALTER TABLE settlements ADD COLUMN adjustments TEXT NOT NULL DEFAULT '[]';
";

const INSERT: &str = "
INSERT INTO settlements (
    session, agent, assistant_message, call, call_index, tool, registration, outcome,
    model_result, managed, started_at_ms, resolve_us, decode_us, execute_us, encode_us,
    project_us, bound_us, adjustments
) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";

const SELECT: &str = "
SELECT id, session, agent, assistant_message, call, call_index, tool, registration, outcome,
    model_result, managed, started_at_ms, resolve_us, decode_us, execute_us, encode_us,
    project_us, bound_us, adjustments
FROM settlements";

/// What a resolved [`SqliteJournal::record`](Journal::record) survives.
///
/// The journal always runs in WAL mode, where a commit is an append to the log; neither level can
/// corrupt the database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// `synchronous=NORMAL`: a recorded settlement survives the process crashing, but the last
    /// few commits may be lost if the operating system crashes or the machine loses power before
    /// the next checkpoint. Commits do not wait for the disk. The default.
    #[default]
    Normal,
    /// `synchronous=FULL`: the log is synced to disk before every commit is acknowledged, so a
    /// recorded settlement also survives power loss. Group commit amortizes the sync.
    Full,
}

impl Durability {
    fn pragma(self) -> &'static str {
        match self {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        }
    }
}

/// A settlement journal in a SQLite database, written by one group-committing thread.
///
/// Be careful when:
/// - dropping it. Drop waits for the writer to commit what is already queued, which is at most
///   a few transactions but is blocking IO.
pub struct SqliteJournal {
    path: PathBuf,
    /// `None` only during drop, to disconnect the writer.
    jobs: Option<Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    reader: Mutex<Connection>,
}

/// One row waiting for the writer, and where to report its fate.
struct Job {
    row: RowValues,
    ack: oneshot::Sender<Result<(), JournalError>>,
}

/// A record converted to column values, checked before it is queued.
struct RowValues {
    session: String,
    agent: String,
    assistant_message: String,
    call: String,
    call_index: Option<i64>,
    tool: String,
    registration: Option<i64>,
    outcome: &'static str,
    model_result: Option<String>,
    managed: String,
    started_at_ms: i64,
    timings_us: [i64; 6],
    adjustments: String,
}

impl SqliteJournal {
    /// Opens (or creates) the journal at `path` with [`Durability::Normal`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        Self::open_with(path, Durability::default())
    }

    /// Opens (or creates) the journal at `path`, creating missing parent directories, and starts
    /// its writer thread.
    pub fn open_with(path: impl AsRef<Path>, durability: Durability) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        let failed = |action: &str, e: &dyn std::fmt::Display| {
            JournalError(format!("cannot {action} journal {}: {e}", path.display()))
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| failed("create the directory of", &e))?;
        }
        let writer_conn = Connection::open(&path).map_err(|e| failed("open", &e))?;
        prepare_writer(&writer_conn, durability).map_err(|e| failed("initialize", &e))?;
        let reader = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| failed("open for reading", &e))?;
        reader
            .busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| reader.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true))
            .map_err(|e| failed("open for reading", &e))?;

        let (jobs, queue) = mpsc::channel();
        let writer = std::thread::Builder::new()
            .name("tackle-journal".to_owned())
            .spawn(move || run_writer(writer_conn, queue))
            .map_err(|e| failed("start the writer of", &e))?;
        Ok(Self {
            path,
            jobs: Some(jobs),
            writer: Some(writer),
            reader: Mutex::new(reader),
        })
    }

    /// The default location: the platform data directory joined with `tackle/journal.sqlite3`.
    /// `None` when the platform has no data directory.
    pub fn default_path() -> Option<PathBuf> {
        crate::data_path("journal.sqlite3")
    }

    /// Where this journal lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every recorded settlement, oldest first. Blocks on a read of the database.
    ///
    /// Every field reads back exactly as recorded, except that phase timings are kept in whole
    /// microseconds.
    pub fn records(&self) -> Result<Vec<SettlementRecord>, JournalError> {
        self.query(&format!("{SELECT} ORDER BY id"), &[])
    }

    /// The settlements of one session, oldest first. Blocks on a read of the database.
    pub fn records_for_session(
        &self,
        session: &SessionId,
    ) -> Result<Vec<SettlementRecord>, JournalError> {
        self.query(
            &format!("{SELECT} WHERE session = ?1 ORDER BY id"),
            &[&session.as_str()],
        )
    }

    fn query(
        &self,
        sql: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<SettlementRecord>, JournalError> {
        let failed = |e: rusqlite::Error| {
            JournalError(format!("cannot read journal {}: {e}", self.path.display()))
        };
        let reader = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        let mut statement = reader.prepare_cached(sql).map_err(failed)?;
        let mut rows = statement.query(args).map_err(failed)?;
        let mut records = Vec::new();
        while let Some(row) = rows.next().map_err(failed)? {
            records.push(read_row(row).map_err(|e| {
                JournalError(format!(
                    "journal {} has a corrupt row: {e}",
                    self.path.display()
                ))
            })?);
        }
        Ok(records)
    }
}

impl Journal for SqliteJournal {
    fn record(&self, record: SettlementRecord) -> BoxFuture<'static, Result<(), JournalError>> {
        // Queue now rather than on first poll: a settlement is journaled even if the caller
        // drops the future.
        let queued = RowValues::new(&record).and_then(|row| {
            let (ack, done) = oneshot::channel();
            self.jobs
                .as_ref()
                .and_then(|jobs| jobs.send(Job { row, ack }).ok())
                .map(|()| done)
                .ok_or_else(writer_stopped)
        });
        Box::pin(async move { queued?.await.unwrap_or_else(|_| Err(writer_stopped())) })
    }
}

impl Drop for SqliteJournal {
    fn drop(&mut self) {
        // Disconnecting lets the writer drain the queue and return.
        drop(self.jobs.take());
        if let Some(writer) = self.writer.take()
            && writer.join().is_err()
        {
            tracing::error!(path = %self.path.display(), "the journal writer panicked");
        }
    }
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn writer_stopped() -> JournalError {
    JournalError("the journal writer has stopped".to_owned())
}

/// Sets the write connection's pragmas and creates or checks the schema.
fn prepare_writer(conn: &Connection, durability: Durability) -> Result<(), BoxError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Closing skips the checkpoint (and its fsyncs, tens of milliseconds) so a process stops
    // within the moment a host gives it: the log keeps every commit, and the next writer's
    // automatic checkpoints fold it in.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("the database refused WAL mode (it is in {mode} mode)").into());
    }
    conn.pragma_update(None, "synchronous", durability.pragma())?;
    // Another process may be creating or migrating the same file: decide under its write lock.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    match version {
        1 => {
            tx.execute_batch(MIGRATE_1_TO_2)?;
            tx.execute_batch(MIGRATE_2_TO_3)?;
        }
        2 => tx.execute_batch(MIGRATE_2_TO_3)?,
        0 | SCHEMA_VERSION => tx.execute_batch(SCHEMA)?,
        newer => {
            return Err(format!(
                "schema version {newer} is newer than this build understands ({SCHEMA_VERSION})"
            )
            .into());
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

/// The writer thread: block for one job, drain what is queued, commit once, acknowledge all.
/// Returns when every sender is gone and the queue is empty.
fn run_writer(mut conn: Connection, queue: Receiver<Job>) {
    let mut batch = Vec::new();
    while let Ok(first) = queue.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let result = commit(&mut conn, &batch).map_err(|e| {
            JournalError(format!(
                "cannot write to journal {}: {e}",
                conn.path().unwrap_or("?")
            ))
        });
        for job in batch.drain(..) {
            // A waiter that stopped listening does not matter: the row is committed or not.
            let _ = job.ack.send(result.clone());
        }
    }
}

/// Inserts every row of `batch` in one transaction. On error, nothing is kept.
fn commit(conn: &mut Connection, batch: &[Job]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare_cached(INSERT)?;
        for Job { row, .. } in batch {
            let [resolve, decode, execute, encode, project, bound] = row.timings_us;
            insert.execute(params![
                row.session,
                row.agent,
                row.assistant_message,
                row.call,
                row.call_index,
                row.tool,
                row.registration,
                row.outcome,
                row.model_result,
                row.managed,
                row.started_at_ms,
                resolve,
                decode,
                execute,
                encode,
                project,
                bound,
                row.adjustments,
            ])?;
        }
    }
    tx.commit()
}

impl RowValues {
    /// Converts a record to column values, rejecting values SQLite cannot hold exactly.
    fn new(record: &SettlementRecord) -> Result<Self, JournalError> {
        let out_of_range = |field: &str, value: u64| {
            JournalError(format!("{field} {value} is too large for the journal"))
        };
        let registration = record
            .registration
            .map(|r| i64::try_from(r).map_err(|_| out_of_range("registration", r)))
            .transpose()?;
        let started_at_ms = i64::try_from(record.started_at_ms)
            .map_err(|_| out_of_range("started_at_ms", record.started_at_ms))?;
        let managed = serde_json::to_string(&record.managed)
            .map_err(|e| JournalError(format!("managed references did not serialize: {e}")))?;
        let t = &record.timings;
        let identity = &record.identity;
        Ok(Self {
            session: identity.session.as_str().to_owned(),
            agent: identity.agent.as_str().to_owned(),
            assistant_message: identity.assistant_message.as_str().to_owned(),
            call: identity.call.as_str().to_owned(),
            call_index: identity.sub_call.map(i64::from),
            tool: record.tool.clone(),
            registration,
            outcome: record.outcome.as_str(),
            model_result: record.model_result.clone(),
            managed,
            started_at_ms,
            timings_us: [t.resolve, t.decode, t.execute, t.encode, t.project, t.bound].map(micros),
            adjustments: serde_json::to_string(&record.adjustments)
                .map_err(|e| JournalError(format!("adjustments did not serialize: {e}")))?,
        })
    }
}

/// Whole microseconds, saturating at `i64::MAX` (about 292,000 years).
fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// An error from setting up the database or decoding a stored row.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn read_row(row: &Row<'_>) -> Result<SettlementRecord, BoxError> {
    let id: i64 = row.get("id")?;
    let in_row = |e: BoxError| -> BoxError { format!("row {id}: {e}").into() };
    let unsigned = |column: &str| -> Result<u64, BoxError> {
        let value: i64 = row.get(column)?;
        u64::try_from(value).map_err(|_| format!("{column} is negative ({value})").into())
    };
    let timing = |column: &str| unsigned(column).map(Duration::from_micros);

    let outcome: String = row.get("outcome")?;
    let outcome: OutcomeKind = outcome.parse().map_err(|e| in_row(Box::new(e)))?;
    let registration = match row.get::<_, Option<i64>>("registration")? {
        Some(_) => Some(unsigned("registration").map_err(in_row)?),
        None => None,
    };
    let managed: String = row.get("managed")?;
    let managed: Vec<ManagedRef> = serde_json::from_str(&managed).map_err(|e| in_row(e.into()))?;

    let sub_call = match row.get::<_, Option<i64>>("call_index")? {
        Some(index) => Some(
            u32::try_from(index).map_err(|_| in_row(format!("call_index is {index}").into()))?,
        ),
        None => None,
    };
    Ok(SettlementRecord {
        identity: CallIdentity {
            sub_call,
            ..CallIdentity::new(
                row.get::<_, String>("session")?,
                row.get::<_, String>("agent")?,
                row.get::<_, String>("assistant_message")?,
                row.get::<_, String>("call")?,
            )
        },
        tool: row.get("tool")?,
        registration,
        outcome,
        model_result: row.get("model_result")?,
        managed,
        started_at_ms: unsigned("started_at_ms").map_err(in_row)?,
        timings: PhaseTimings {
            resolve: timing("resolve_us").map_err(in_row)?,
            decode: timing("decode_us").map_err(in_row)?,
            execute: timing("execute_us").map_err(in_row)?,
            encode: timing("encode_us").map_err(in_row)?,
            project: timing("project_us").map_err(in_row)?,
            bound: timing("bound_us").map_err(in_row)?,
        },
        adjustments: serde_json::from_str(&row.get::<_, String>("adjustments")?)
            .map_err(|e| in_row(e.into()))?,
    })
}

#[cfg(test)]
mod tests;
