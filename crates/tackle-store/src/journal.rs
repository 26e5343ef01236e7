//! The SQLite settlement journal: rows queued to the database's group-committing writer thread,
//! read through the database's one connection.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use rusqlite::{Row, Transaction, params};
use tackle_core::{
    CallIdentity, Journal, JournalError, ManagedRef, ModelResult, OutcomeKind, PhaseTimings,
    SessionId, SettlementRecord,
};
use tokio::sync::oneshot;

use crate::OpenError;
use crate::database::{Database, Job, Opening};

/// Most rows the writer commits in one transaction.
pub const MAX_BATCH: usize = 4096;

#[cfg(test)]
use crate::database::SCHEMA_VERSION;

/// The current schema. A sub-call's row keeps its parent's host-supplied IDs (`call` is the
/// parent's call ID) and adds its 1-based `call_index`; `parent_call` repeats the parent's call ID
/// for sub-calls only (`NULL` for a direct call), computed rather than stored.
pub(crate) const SCHEMA: &str = "
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
pub(crate) const MIGRATE_1_TO_2: &str = "
ALTER TABLE settlements ADD COLUMN call_index INTEGER;
ALTER TABLE settlements ADD COLUMN parent_call TEXT
    GENERATED ALWAYS AS (CASE WHEN call_index IS NULL THEN NULL ELSE call END) VIRTUAL;
CREATE INDEX IF NOT EXISTS settlements_by_parent ON settlements (parent_call, call_index);
";

/// From version 2: the host policy's adjustments, none for the rows already there.
pub(crate) const MIGRATE_2_TO_3: &str = "
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

/// What a committed row survives: with [`Acknowledge::Committed`], a resolved
/// [`SqliteJournal::record`](Journal::record).
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
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        }
    }
}

/// When a [`SqliteJournal::record`](Journal::record) future resolves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Acknowledge {
    /// Once the transaction holding the row has committed; a failed commit is the caller's
    /// error. The default.
    #[default]
    Committed,
    /// As soon as the row is queued for the writer, so a settlement does not wait for the
    /// database. The row is visible at once to this journal's readers (they wait for the writer
    /// first) and is committed with the next group; [`SqliteJournal::flush`] (or dropping the
    /// last handle on the database) commits what is queued, so a process that flushes before it
    /// exits loses nothing. A failed commit is logged and reported by the next flush.
    Queued,
}

/// A settlement journal in a SQLite database, written by one group-committing thread.
///
/// The journal owns the database's one connection; the session state, saved approvals and job
/// log opened [`beside`](crate::SqliteSessionState::beside) it share the connection and writer.
///
/// Be careful when:
/// - dropping it. Dropping the last handle on the database waits for the writer to commit what
///   is already queued, which is at most a few transactions but is blocking IO.
pub struct SqliteJournal {
    database: Arc<Database>,
    acknowledge: Acknowledge,
}

/// A record checked before it is queued: what SQLite cannot hold (a number out of its range, a
/// managed path that is not UTF-8) refuses this record alone, on the caller's path. The model
/// result, which always serializes, is turned into JSON on the writer thread, so a large result
/// costs the caller a move, not its serialization.
pub(crate) struct RowValues {
    identity: CallIdentity,
    tool: String,
    registration: Option<i64>,
    outcome: &'static str,
    model_result: Option<ModelResult>,
    managed: String,
    started_at_ms: i64,
    timings_us: [i64; 6],
    adjustments: String,
}

/// A journal being opened on its writer thread ([`SqliteJournal::start_opening`]).
pub struct PendingJournal(Result<Opening, OpenError>);

impl std::fmt::Debug for PendingJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Ok(opening) => f
                .debug_struct("PendingJournal")
                .field("path", &opening.path())
                .finish(),
            Err(error) => f.debug_tuple("PendingJournal").field(error).finish(),
        }
    }
}

impl PendingJournal {
    /// Waits until the journal is open.
    pub fn finish(self) -> Result<SqliteJournal, JournalError> {
        let database = self
            .0
            .and_then(Opening::finish)
            .map_err(|e| JournalError(e.to_string()))?;
        Ok(SqliteJournal {
            database,
            acknowledge: Acknowledge::default(),
        })
    }
}

impl SqliteJournal {
    /// Opens (or creates) the journal at `path` with [`Durability::Normal`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        Self::open_with(path, Durability::default())
    }

    /// Opens (or creates) the journal at `path`, creating missing parent directories, and starts
    /// its writer thread.
    pub fn open_with(path: impl AsRef<Path>, durability: Durability) -> Result<Self, JournalError> {
        Self::start_opening(path, durability).finish()
    }

    /// Starts opening the journal at `path` on its writer thread and returns at once;
    /// [`PendingJournal::finish`] waits for it. A process that knows its journal early opens it
    /// while it does other work, with no thread besides the writer it needs anyway.
    pub fn start_opening(path: impl AsRef<Path>, durability: Durability) -> PendingJournal {
        PendingJournal(Database::start_opening(
            path.as_ref(),
            "journal",
            durability,
        ))
    }

    /// The same journal, resolving `record` as `acknowledge` says.
    pub fn acknowledging(mut self, acknowledge: Acknowledge) -> Self {
        self.acknowledge = acknowledge;
        self
    }

    /// The default location: the platform data directory joined with `tackle/journal.sqlite3`.
    /// `None` when the platform has no data directory.
    pub fn default_path() -> Option<PathBuf> {
        crate::data_path("journal.sqlite3")
    }

    /// Where this journal lives.
    pub fn path(&self) -> &Path {
        self.database.path()
    }

    /// The database, for the stores that live beside the journal.
    pub(crate) fn database(&self) -> &Arc<Database> {
        &self.database
    }

    /// Blocks until every row queued so far (and every write queued on the same database) is
    /// committed. `Err` names what could not be written since the last flush.
    pub fn flush(&self) -> Result<(), JournalError> {
        self.database.flush().map_err(JournalError)
    }

    /// Every recorded settlement, oldest first. Waits for the queued rows, then reads.
    ///
    /// Every field reads back exactly as recorded, except that phase timings are kept in whole
    /// microseconds.
    pub fn records(&self) -> Result<Vec<SettlementRecord>, JournalError> {
        self.query(&format!("{SELECT} ORDER BY id"), &[])
    }

    /// The settlements of one session, oldest first. Waits for the queued rows, then reads.
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
        let path = self.path().display();
        let failed = |e: rusqlite::Error| JournalError(format!("cannot read journal {path}: {e}"));
        // Read after write: the rows this process queued come first. A failed earlier commit
        // does not stop the read of what is there.
        if let Err(error) = self.database.flush() {
            tracing::warn!(%error, "reading the journal after a failed write");
        }
        let reader = self.database.connection();
        let mut statement = reader.prepare_cached(sql).map_err(failed)?;
        let mut rows = statement.query(args).map_err(failed)?;
        let mut records = Vec::new();
        while let Some(row) = rows.next().map_err(failed)? {
            records.push(
                read_row(row)
                    .map_err(|e| JournalError(format!("journal {path} has a corrupt row: {e}")))?,
            );
        }
        Ok(records)
    }
}

impl Journal for SqliteJournal {
    fn record(&self, record: SettlementRecord) -> BoxFuture<'static, Result<(), JournalError>> {
        // Queue now rather than on first poll: a settlement is journaled even if the caller
        // drops the future.
        let row = match RowValues::new(record) {
            Ok(row) => row,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        match self.acknowledge {
            Acknowledge::Queued => {
                let queued = self.database.queue(Job::Row { row, ack: None });
                Box::pin(std::future::ready(
                    queued.then_some(()).ok_or_else(writer_stopped),
                ))
            }
            Acknowledge::Committed => {
                let (ack, done) = oneshot::channel();
                let queued = self.database.queue(Job::Row {
                    row,
                    ack: Some(ack),
                });
                Box::pin(async move {
                    if !queued {
                        return Err(writer_stopped());
                    }
                    done.await.unwrap_or_else(|_| Err(writer_stopped()))
                })
            }
        }
    }
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.path())
            .field("acknowledge", &self.acknowledge)
            .finish_non_exhaustive()
    }
}

fn writer_stopped() -> JournalError {
    JournalError("the journal writer has stopped".to_owned())
}

/// Inserts one row in the writer's transaction, serializing its model result.
pub(crate) fn insert(tx: &Transaction<'_>, row: &RowValues) -> rusqlite::Result<()> {
    let [resolve, decode, execute, encode, project, bound] = row.timings_us;
    let identity = &row.identity;
    let model_result = row
        .model_result
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        // Content and JSON values always serialize; were one not to, the batch fails, the
        // writer does not panic.
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    tx.prepare_cached(INSERT)?.execute(params![
        identity.session.as_str(),
        identity.agent.as_str(),
        identity.assistant_message.as_str(),
        identity.call.as_str(),
        identity.sub_call.map(i64::from),
        row.tool,
        row.registration,
        row.outcome,
        model_result,
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
    Ok(())
}

impl RowValues {
    /// Checks a record and takes its values, refusing what SQLite cannot hold exactly.
    fn new(record: SettlementRecord) -> Result<Self, JournalError> {
        let out_of_range = |field: &str, value: u64| {
            JournalError(format!("{field} {value} is too large for the journal"))
        };
        let registration = record
            .registration
            .map(|r| i64::try_from(r).map_err(|_| out_of_range("registration", r)))
            .transpose()?;
        let started_at_ms = i64::try_from(record.started_at_ms)
            .map_err(|_| out_of_range("started_at_ms", record.started_at_ms))?;
        // A managed path that is not UTF-8 has no JSON form.
        let managed = serde_json::to_string(&record.managed)
            .map_err(|e| JournalError(format!("managed references did not serialize: {e}")))?;
        let adjustments = serde_json::to_string(&record.adjustments)
            .map_err(|e| JournalError(format!("adjustments did not serialize: {e}")))?;
        let t = &record.timings;
        Ok(Self {
            identity: record.identity,
            tool: record.tool,
            registration,
            outcome: record.outcome.as_str(),
            model_result: record.model_result,
            managed,
            started_at_ms,
            timings_us: [t.resolve, t.decode, t.execute, t.encode, t.project, t.bound].map(micros),
            adjustments,
        })
    }
}

/// Whole microseconds, saturating at `i64::MAX` (about 292,000 years).
fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// An error from decoding a stored row.
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
        model_result: row
            .get::<_, Option<String>>("model_result")?
            .map(|json| serde_json::from_str(&json))
            .transpose()
            .map_err(|e| in_row(format!("model_result: {e}").into()))?,
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
