//! One SQLite connection per database file, shared by the journal, session state, saved
//! approvals and the job log, with the one writer thread that group-commits what they queue.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, TransactionBehavior, params};
use tackle_core::JournalError;
use tokio::sync::oneshot;

use crate::approvals::now_ms;
use crate::journal::{self, Durability, RowValues};
use crate::{MAX_BATCH, OpenError};

/// How long a statement waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The log pages after which a commit folds the log back into the database (SQLite's
/// `wal_autocheckpoint`; its default is 1,000). A process that opens the file first rebuilds its
/// index of the log by reading every page written since the last fold, so a short log keeps a new
/// process's first read cheap; the fold runs on the writer thread, after the commit.
pub(crate) const WAL_CHECKPOINT_PAGES: u32 = 64;

/// The size the log file is cut back to when it restarts (`journal_size_limit`), in bytes.
const WAL_SIZE_LIMIT: i64 = 1 << 20;

/// The schema version stored in `PRAGMA user_version`.
///
/// - 1: one row per settlement, keyed by the host's IDs.
/// - 2: `call_index` and `parent_call`, for sub-calls settled on behalf of a call (a `batch`'s).
/// - 3: `adjustments`, what host policy changed in the call before it settled (a JSON array of
///   strings).
/// - 4: the tables beside the journal (session state, saved approvals, job events) belong to
///   the version, so an open that finds it creates nothing.
pub(crate) const SCHEMA_VERSION: i64 = 4;

/// One database file: its connection (shared by every reader and by the writer thread) and the
/// queue of the writer. The last handle to go commits what is queued and stops the writer.
pub(crate) struct Database {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    /// `None` only during drop, to disconnect the writer.
    jobs: Option<Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    /// Session-state writes queued and not yet committed: what a read must see first.
    pending: Arc<PendingState>,
}

/// One write waiting for the writer thread.
pub(crate) enum Job {
    /// A settlement row, and where to report its fate (`None` when nobody waits).
    Row {
        row: RowValues,
        ack: Option<oneshot::Sender<Result<(), JournalError>>>,
    },
    /// A session-state value (`None` removes it), with the generation it has in [`PendingState`].
    State {
        session: String,
        key: String,
        value: Option<String>,
        generation: u64,
    },
    /// A job event's columns: session, message, call, job, event, detail.
    Event([String; 6]),
    /// Answered once everything queued before it is committed: `Err` names what failed since
    /// the last flush.
    Flush(SyncSender<Result<(), String>>),
}

/// Session-state writes in the queue, by (session, key): the latest value and its generation.
#[derive(Default)]
pub(crate) struct PendingState {
    values: Mutex<PendingValues>,
}

#[derive(Default)]
struct PendingValues {
    next_generation: u64,
    by_key: HashMap<(String, String), (u64, Option<String>)>,
}

impl PendingState {
    /// The queued value of `key`: `Some(None)` when its removal is queued, `None` when nothing
    /// is queued for it.
    pub(crate) fn get(&self, session: &str, key: &str) -> Option<Option<String>> {
        let values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        if values.by_key.is_empty() {
            return None;
        }
        values
            .by_key
            .get(&(session.to_owned(), key.to_owned()))
            .map(|(_, value)| value.clone())
    }

    /// Notes `value` as the newest write of `key`; its generation.
    fn queue(&self, session: &str, key: &str, value: Option<&str>) -> u64 {
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        values.next_generation += 1;
        let generation = values.next_generation;
        values.by_key.insert(
            (session.to_owned(), key.to_owned()),
            (generation, value.map(str::to_owned)),
        );
        generation
    }

    /// Forgets the write of `key` committed as `generation`, unless a newer one is queued.
    fn committed(&self, session: String, key: String, generation: u64) {
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = (session, key);
        if values
            .by_key
            .get(&slot)
            .is_some_and(|(queued, _)| *queued == generation)
        {
            values.by_key.remove(&slot);
        }
    }
}

/// A database being opened on its writer thread, which then stays to commit its writes.
///
/// Opening costs a few hundred microseconds (SQLite reads its log and schema), so a process that
/// knows early which database it needs starts it here and does other work meanwhile; the one
/// thread opens the file and then serves as its writer.
pub(crate) struct Opening {
    path: PathBuf,
    what: &'static str,
    writer: JoinHandle<()>,
    opened: Receiver<Result<Opened, OpenError>>,
}

/// What the writer thread hands back once the file is open.
struct Opened {
    conn: Arc<Mutex<Connection>>,
    jobs: Sender<Job>,
    pending: Arc<PendingState>,
}

impl Opening {
    /// The file being opened.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the file to be open.
    pub(crate) fn finish(self) -> Result<Arc<Database>, OpenError> {
        let Self {
            path,
            what,
            writer,
            opened,
        } = self;
        // The thread sends before it serves; a thread that sent nothing has panicked.
        let failure = match opened.recv() {
            Ok(Ok(Opened {
                conn,
                jobs,
                pending,
            })) => {
                return Ok(Arc::new(Database {
                    path,
                    conn,
                    jobs: Some(jobs),
                    writer: Some(writer),
                    pending,
                }));
            }
            Ok(Err(error)) => error,
            Err(_) => OpenError::Writer {
                what,
                path,
                source: std::io::Error::other("the database thread stopped while opening"),
            },
        };
        let _ = writer.join();
        Err(failure)
    }
}

impl Database {
    /// Opens the database at `path` (creating missing parent directories and, when
    /// `user_version` says it is not current, the schema) on its writer thread. `what` names the
    /// store in errors.
    pub(crate) fn open(
        path: &Path,
        what: &'static str,
        durability: Durability,
    ) -> Result<Arc<Self>, OpenError> {
        Self::start_opening(path, what, durability)?.finish()
    }

    /// Starts [`Database::open`] on the writer thread; [`Opening::finish`] waits for it.
    pub(crate) fn start_opening(
        path: &Path,
        what: &'static str,
        durability: Durability,
    ) -> Result<Opening, OpenError> {
        let (send, opened) = mpsc::sync_channel(1);
        let writer = {
            let file = path.to_path_buf();
            std::thread::Builder::new()
                .name("tackle-db-writer".to_owned())
                .spawn(move || match open_connection(&file, what, durability) {
                    Ok(conn) => {
                        let conn = Arc::new(Mutex::new(conn));
                        let pending = Arc::new(PendingState::default());
                        let (jobs, queue) = mpsc::channel();
                        let opened = Opened {
                            conn: conn.clone(),
                            jobs,
                            pending: pending.clone(),
                        };
                        if send.send(Ok(opened)).is_ok() {
                            run_writer(&conn, &pending, queue);
                        }
                    }
                    Err(error) => {
                        let _ = send.send(Err(error));
                    }
                })
                .map_err(|source| OpenError::Writer {
                    what,
                    path: path.to_path_buf(),
                    source,
                })?
        };
        Ok(Opening {
            path: path.to_path_buf(),
            what,
            writer,
            opened,
        })
    }

    /// Where the database lives.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for a short read or a write that must be committed before it returns.
    pub(crate) fn connection(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `job` for the writer; `false` when the writer has stopped.
    pub(crate) fn queue(&self, job: Job) -> bool {
        self.jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok())
    }

    /// The session-state writes not committed yet.
    pub(crate) fn pending_state(&self) -> &PendingState {
        &self.pending
    }

    /// Queues a session-state write, visible to [`PendingState::get`] at once.
    pub(crate) fn queue_state(&self, session: &str, key: &str, value: Option<&str>) -> bool {
        let generation = self.pending.queue(session, key, value);
        self.queue(Job::State {
            session: session.to_owned(),
            key: key.to_owned(),
            value: value.map(str::to_owned),
            generation,
        })
    }

    /// Blocks until everything queued so far is committed. `Err` says what could not be written
    /// since the last flush (or that the writer has stopped).
    pub(crate) fn flush(&self) -> Result<(), String> {
        let (done, wait) = mpsc::sync_channel(1);
        if !self.queue(Job::Flush(done)) {
            return Err("the database writer has stopped".to_owned());
        }
        wait.recv()
            .unwrap_or_else(|_| Err("the database writer has stopped".to_owned()))
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // Disconnecting lets the writer drain the queue and return.
        drop(self.jobs.take());
        if let Some(writer) = self.writer.take()
            && writer.join().is_err()
        {
            tracing::error!(path = %self.path.display(), "the database writer panicked");
        }
    }
}

/// Opens the file, configures the connection and checks (or creates) the schema.
fn open_connection(
    path: &Path,
    what: &'static str,
    durability: Durability,
) -> Result<Connection, OpenError> {
    let failed = |action: &'static str| {
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
    let conn = Connection::open(path).map_err(failed("open"))?;
    match initialize(&conn, durability).map_err(failed("initialize"))? {
        SchemaCheck::Current => Ok(conn),
        SchemaCheck::Newer(found) => Err(OpenError::NewerSchema {
            what,
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        }),
        SchemaCheck::NotWal(mode) => Err(OpenError::NotWal {
            what,
            path: path.to_path_buf(),
            mode,
        }),
    }
}

/// Configures the connection and checks (or creates) the schema. While other processes create
/// the same file, SQLite can answer busy without waiting (two connections that both hold a read
/// lock and want the write lock: one is refused at once), so a busy answer is retried, with
/// pauses, for up to the busy timeout.
fn initialize(conn: &Connection, durability: Durability) -> rusqlite::Result<SchemaCheck> {
    retry_while_busy(|| configure(conn, durability).and_then(|()| ensure_schema(conn)))
}

/// The connection's settings; none of them touches the file.
fn configure(conn: &Connection, durability: Durability) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Closing skips the checkpoint (and its fsyncs, tens of milliseconds) so a process stops
    // within the moment a host gives it: the log keeps every commit, and the automatic
    // checkpoints after commits fold it in, every WAL_CHECKPOINT_PAGES pages.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.pragma_update(None, "synchronous", durability.pragma())?;
    conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)?;
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)
}

/// What [`ensure_schema`] found.
enum SchemaCheck {
    Current,
    /// A version this build does not know.
    Newer(i64),
    /// The file refused WAL mode; the mode it is in.
    NotWal(String),
}

/// Creates or migrates the schema when `user_version` is not current; a current file costs one
/// read of its header.
fn ensure_schema(conn: &Connection) -> rusqlite::Result<SchemaCheck> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version == SCHEMA_VERSION {
        return Ok(SchemaCheck::Current);
    }
    if version > SCHEMA_VERSION {
        return Ok(SchemaCheck::Newer(version));
    }
    // WAL is kept in the file, so it is set once, with the schema (outside a transaction).
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Ok(SchemaCheck::NotWal(mode));
    }
    // Another process may be creating or migrating the same file: decide under its write lock.
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    match version {
        1 => tx.execute_batch(journal::MIGRATE_1_TO_2)?,
        2 | 3 => {}
        0 => tx.execute_batch(journal::SCHEMA)?,
        SCHEMA_VERSION => return Ok(SchemaCheck::Current),
        newer => return Ok(SchemaCheck::Newer(newer)),
    }
    if version == 1 || version == 2 {
        tx.execute_batch(journal::MIGRATE_2_TO_3)?;
    }
    // From 3: the tables beside the journal, which earlier versions created on every open.
    tx.execute_batch(crate::session::SCHEMA)?;
    tx.execute_batch(crate::approvals::SCHEMA)?;
    tx.execute_batch(crate::job_log::SCHEMA)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(SchemaCheck::Current)
}

/// The writer thread: block for one job, drain what is queued, commit once, then acknowledge.
/// Returns when every sender is gone and the queue is empty.
fn run_writer(conn: &Mutex<Connection>, pending: &PendingState, queue: Receiver<Job>) {
    let mut batch = Vec::new();
    // What failed since the last flush, for the next one to report.
    let mut failures: Option<String> = None;
    while let Ok(first) = queue.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let result = commit(conn, &batch);
        if let Err(error) = &result {
            tracing::error!(%error, rows = batch.len(), "a database commit failed");
            failures.get_or_insert_with(|| error.clone());
        }
        for job in batch.drain(..) {
            match job {
                // A waiter that stopped listening does not matter: the row is committed or not.
                Job::Row { ack: Some(ack), .. } => {
                    let _ = ack.send(result.clone().map_err(JournalError));
                }
                Job::Row { ack: None, .. } | Job::Event(_) => {}
                Job::State {
                    session,
                    key,
                    generation,
                    ..
                } => pending.committed(session, key, generation),
                Job::Flush(done) => {
                    let _ = done.send(failures.take().map_or(Ok(()), Err));
                }
            }
        }
    }
}

/// Writes every job of `batch` in one transaction. While another process holds the write lock,
/// the connection is let go between tries (for up to the busy timeout), so reads of this
/// process are not held up behind the wait. On error, nothing is kept.
fn commit(conn: &Mutex<Connection>, batch: &[Job]) -> Result<(), String> {
    if batch.iter().all(|job| matches!(job, Job::Flush(_))) {
        return Ok(());
    }
    let lock = || conn.lock().unwrap_or_else(PoisonError::into_inner);
    // The guard is a temporary of each try, so the connection is free during the pauses.
    retry_while_busy(|| write(&lock(), batch)).map_err(|e| {
        format!(
            "cannot write to the database {}: {e}",
            lock().path().unwrap_or("?")
        )
    })
}

/// Runs `attempt` until it ends otherwise than busy or the busy timeout has passed, pausing
/// between tries (250 µs, doubling up to 8 ms).
fn retry_while_busy<T>(mut attempt: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_micros(250);
    loop {
        match attempt() {
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(8));
            }
            result => return result,
        }
    }
}

/// True when another connection holds the lock.
fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(failure, _)
        if failure.code == rusqlite::ErrorCode::DatabaseBusy)
}

/// One try at the transaction of `batch`; the write lock is not waited for.
fn write(conn: &Connection, batch: &[Job]) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::ZERO)?;
    let begun = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate);
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let tx = begun?;
    for job in batch {
        match job {
            Job::Row { row, .. } => journal::insert(&tx, row)?,
            Job::State {
                session,
                key,
                value,
                ..
            } => crate::session::write(&tx, session, key, value.as_deref())?,
            Job::Event([session, message, call, job, event, detail]) => {
                tx.prepare_cached(crate::job_log::INSERT)?.execute(params![
                    session,
                    message,
                    call,
                    job,
                    event,
                    detail,
                    now_ms()
                ])?;
            }
            Job::Flush(_) => {}
        }
    }
    tx.commit()
}

#[cfg(test)]
mod tests;
