//! Storage adapters for tackle: where complete outputs are kept, and where settlements are
//! journaled.
//!
//! `tackle-core` defines two ports and does no IO itself. This crate implements them:
//!
//! - [`FsOutputStore`] implements [`OutputStore`](tackle_core::OutputStore). When a tool's output
//!   is too large for the model, the registry hands the complete bytes to the store (as a
//!   shared [`Bytes`](bytes::Bytes) buffer, not a copy) before it publishes a preview; the
//!   preview's marker then points the model at the stored file.
//! - [`SqliteJournal`] implements [`Journal`](tackle_core::Journal). Every settlement, whatever
//!   its outcome, becomes one row in a SQLite database.
//! - [`MemoryOutputStore`] and [`MemoryJournal`] are in-memory doubles with the same contracts,
//!   for tests and for embedders that keep nothing on disk. Each has a `failing` constructor, so
//!   the operational failure paths of settlement can be exercised.
//!
//! # Output store: content addressing and atomic rename
//!
//! A retained output is named by the blake3 hash of its bytes, in lowercase hex, and lives at
//! `<dir>/<hash>`. Naming by content has three consequences this crate relies on:
//!
//! - *Dedupe is free.* A command that prints the same 100 MiB twice is stored once. When the file
//!   already exists, `retain` writes nothing and only refreshes the file's modification time.
//! - *A final name is a promise about the content.* Bytes are written to a temporary file in the
//!   same directory and then renamed over the final name, which is atomic on one file system. A
//!   reader never sees a partial file under a hash name, and concurrent writers of the same
//!   output race harmlessly, because both rename identical bytes.
//! - *Retention is by age.* [`FsOutputStore::sweep`] deletes hash-named files whose modification
//!   time is older than a maximum age, and temporary files that crashed writes left behind once
//!   they are as old; it touches nothing else in the directory. Since reuse refreshes the
//!   modification time, an output that was just handed to the model again is not swept from
//!   under it.
//!
//! # Journal: one connection, one writer thread, group commit
//!
//! SQLite allows one writer at a time, and a commit is the expensive part of a write. So a
//! [`SqliteJournal`] owns a dedicated thread that writes through the database's one connection.
//! `record` sends the row over a channel and, by default ([`Acknowledge::Committed`]), resolves
//! when the writer acknowledges it. The writer blocks for the first queued job, then drains
//! whatever else is already queued (up to [`MAX_BATCH`]) into *one* transaction, commits it, and
//! only then acknowledges every row in it. Under load, many settlements share one commit; when
//! idle, a lone settlement commits at once, with no timer adding latency. With
//! [`Acknowledge::Queued`], `record` resolves once the row is queued, so a settlement never waits
//! for the disk; [`SqliteJournal::flush`] commits the queue.
//!
//! The stores beside the journal ([`SqliteSessionState`], [`SqliteSavedApprovals`],
//! [`SqliteJobLog`]) share its file, its connection and its writer when opened with `beside`:
//! session-state writes and job events are queued and committed in the same groups, and a queued
//! session-state value is read back before its commit. Reads ([`SqliteJournal::records`],
//! [`SqliteJournal::records_for_session`]) wait for the queue, then read through the connection.
//! The database runs in WAL mode; see [`Durability`] for what a committed row survives.
//!
//! # Invariants
//!
//! - `retain` either keeps every byte it was given under the hash of those bytes, or returns a
//!   [`RetentionError`](tackle_core::RetentionError) that names the directory and the OS error.
//! - No file under a hash name ever holds anything but the bytes that hash to it.
//! - The sweep deletes only regular files named by 64 lowercase hex digits or by the store's
//!   temporary prefix, and only when they are older than the maximum age.
//! - With [`Acknowledge::Committed`], a `record` future resolves `Ok` only after the transaction
//!   containing its row has committed; with [`Acknowledge::Queued`], once every later read of the
//!   journal in the process will see it. A row is written whole or not at all.
//! - Host IDs are stored and returned byte-for-byte; the journal never rewrites them.
//! - Dropping the last handle on a database (the journal and the stores beside it) lets the
//!   writer commit everything already queued before the thread exits.

#![deny(missing_docs)]

mod approvals;
mod database;
mod fs_store;
mod job_log;
mod journal;
mod memory;
mod session;
pub mod snapshot;

pub use approvals::{OpenError, SqliteSavedApprovals};
pub use fs_store::{DEFAULT_RETENTION, FsOutputStore, SweepReport};
pub use job_log::{JobLogRow, SqliteJobLog};
pub use journal::{Acknowledge, Durability, MAX_BATCH, PendingJournal, SqliteJournal};
pub use memory::{MemoryJournal, MemoryOutputStore};
pub use session::{MemorySessionState, SqliteSessionState};
pub use snapshot::{Change, ChangeMeta, Delta, RelPath, SnapshotError, Snapshots};

/// The platform's per-user data directory joined with `tackle/<leaf>`.
fn data_path(leaf: &str) -> Option<std::path::PathBuf> {
    dirs::data_dir().map(|dir| dir.join("tackle").join(leaf))
}
