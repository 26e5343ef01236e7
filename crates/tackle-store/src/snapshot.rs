//! Snapshots of a Location's files, kept content-addressed, and the log of what each call
//! changed, so any change can be seen and reverted without git.
//!
//! The store keeps one live picture of the Location (`tree`): every file, symlink and
//! directory the ignore rules keep, with its mode and content hash, and every path it must
//! never touch (ignored, `.git`, special files) marked opaque. File bytes are stored once under
//! their blake3 hash in a per-Location object store. The picture is refreshed incrementally: a
//! change watcher (inotify) names the directories something happened in, and only those are
//! read again; a cache of `(size, mtime, ctime, inode, mode)` per file means only files that
//! changed are hashed. The first full scan runs once per process, in the background.
//!
//! A caller takes a [`Mark`] before a call and asks for the [`Delta`] since it after: the paths
//! whose content, kind or mode changed, with their state before and after. A path that was
//! opaque at either end (or lies under an opaque directory) is not part of a delta; it is listed
//! as *shadowed*, so that no undo ever touches it. A [`Change`] row records one call's delta
//! under its identity. Reverting ([`revert`]) plans every step first and applies all or none.

mod codec;
mod contained;
mod path;
pub mod revert;
mod tree;
mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, params};
use serde::{Deserialize, Serialize};

use self::codec::{Reader, Writer};
pub use self::path::RelPath;
pub use self::tree::SecretFilter;
use self::tree::{Slot, Tree};

/// Files larger than this are recorded by hash but their bytes are not kept.
pub const MAX_KEPT_FILE: u64 = 64 * 1024 * 1024;

/// What a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A regular file; the hash is of its bytes.
    File,
    /// A symbolic link; the hash is of its target.
    Symlink,
    /// A directory; only its presence and mode are recorded.
    Dir,
}

/// One path's recorded state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    /// File, symlink or directory.
    pub kind: Kind,
    /// The permission bits.
    pub mode: u32,
    /// Size in bytes (0 for a directory).
    pub size: u64,
    /// blake3 of the bytes (a link's target), lowercase hex; empty for a directory.
    pub hash: String,
    /// Whether the bytes are kept in the object store (always for links and directories).
    pub kept: bool,
}

impl Entry {
    /// A directory with `mode`.
    pub fn dir(mode: u32) -> Self {
        Self {
            kind: Kind::Dir,
            mode,
            size: 0,
            hash: String::new(),
            kept: true,
        }
    }

    /// Whether two states are the same thing: kind, content and mode.
    pub fn same_as(&self, other: &Entry) -> bool {
        self.kind == other.kind && self.hash == other.hash && self.mode == other.mode
    }
}

/// Whether two optional states are the same (both absent, or the same thing).
pub fn same_state(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_as(b),
        _ => false,
    }
}

/// One path a call changed: its state before and after (`None`: absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The path, relative to the Location.
    pub path: RelPath,
    /// Before the call.
    pub before: Option<Entry>,
    /// After it.
    pub after: Option<Entry>,
}

/// What changed between a [`Mark`] and now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    /// Tracked paths whose content, kind or mode changed, in path order (a directory before
    /// what is under it).
    pub files: Vec<FileChange>,
    /// Paths that differ but were opaque (ignored, special, unreadable) at either end, or lie
    /// under such a directory: never touched by an undo.
    pub shadowed: Vec<RelPath>,
}

impl Delta {
    /// Whether nothing changed, shadowed paths included.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.shadowed.is_empty()
    }
}

/// A recorded change: one call's delta under its identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Its row number, increasing across the Location's sessions.
    pub seq: i64,
    /// The session.
    pub session: String,
    /// The message the call belongs to.
    pub message: String,
    /// The call (`undo-<seq>` for an undo, `<call>#<n>` for a batch sub-call).
    pub call: String,
    /// The tool (`undo` for a revert, `bash job` for a background job's writes).
    pub tool: String,
    /// When it was recorded (Unix milliseconds).
    pub at_ms: i64,
    /// The paths it changed.
    pub files: Vec<FileChange>,
    /// Paths that changed but were ignored at one end; an undo never touches them.
    pub shadowed: Vec<RelPath>,
    /// Other work that ran while this call did and may have written the same files (a
    /// background job, a concurrent call); an undo asks for `--force` on its paths.
    pub overlap: Vec<String>,
}

/// Who made a change, for [`Snapshots::record`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeMeta {
    /// The session.
    pub session: String,
    /// The message.
    pub message: String,
    /// The call.
    pub call: String,
    /// The tool.
    pub tool: String,
    /// Work that overlapped it (see [`Change::overlap`]).
    pub overlap: Vec<String>,
}

/// A session that changed the Location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session ID.
    pub session: String,
    /// How many changes it recorded.
    pub changes: usize,
    /// When its last change was recorded (Unix milliseconds).
    pub last_at_ms: i64,
}

/// Why a snapshot operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// Reading or writing files failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// The change log failed.
    #[error("the change log: {0}")]
    Db(#[from] rusqlite::Error),
    /// An object is no longer stored (the retention sweep removed it).
    #[error("snapshot data {0} is no longer stored (removed by the retention sweep)")]
    Missing(String),
    /// The first scan of the Location has not finished.
    #[error("the first snapshot of the Location is still being taken")]
    NotReady,
    /// A recorded change could not be read back.
    #[error("change #{0} is not readable (written by another version of tackle?)")]
    Corrupt(i64),
}

pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let what = what.into();
    move |source| SnapshotError::Io { what, source }
}

/// The content-addressed object store of one Location.
pub(crate) struct Objects {
    dir: PathBuf,
}

impl Objects {
    fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(hash.get(..2).unwrap_or("00")).join(hash)
    }

    /// Stores `bytes` under their hash (once); returns the hash.
    pub(crate) fn put(&self, bytes: &[u8]) -> Result<String, SnapshotError> {
        let hash = blake3::hash(bytes).to_hex().to_string();
        let path = self.path(&hash);
        if !path.exists() {
            let dir = path.parent().unwrap_or(&self.dir);
            std::fs::create_dir_all(dir).map_err(io("creating an object directory"))?;
            let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(io("writing an object"))?;
            std::io::Write::write_all(&mut temp, bytes).map_err(io("writing an object"))?;
            temp.persist(&path).map_err(|e| SnapshotError::Io {
                what: "storing an object".into(),
                source: e.error,
            })?;
        }
        Ok(hash)
    }

    fn get(&self, hash: &str) -> Result<Vec<u8>, SnapshotError> {
        std::fs::read(self.path(hash)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SnapshotError::Missing(hash.to_owned()),
            _ => SnapshotError::Io {
                what: "reading an object".into(),
                source: e,
            },
        })
    }

    fn has(&self, hash: &str) -> bool {
        self.path(hash).exists()
    }
}

/// A point in the Location's history, pinned until released: what changed since it can be
/// asked for. Take one with [`Snapshots::mark`]; give it back with [`Snapshots::release`].
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a mark pins the change log until it is released"]
pub struct Mark {
    version: u64,
}

/// How often the stat cache is written while snapshots are taken.
const CACHE_SAVE_EVERY: Duration = Duration::from_secs(5);

/// Snapshots of one Location, and its change log.
pub struct Snapshots {
    root: PathBuf,
    objects: Objects,
    tree: Mutex<Tree>,
    ready: AtomicBool,
    ready_signal: (Mutex<bool>, Condvar),
    cache_path: PathBuf,
    saved_at: Mutex<Option<std::time::Instant>>,
    db: Mutex<Connection>,
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        self.save_cache(true);
    }
}

impl std::fmt::Debug for Snapshots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshots")
            .field("root", &self.root)
            .finish()
    }
}

impl Snapshots {
    /// Snapshots of the Location at `root` (its real path), kept under `dir`.
    pub fn open(root: &Path, dir: &Path) -> Result<Self, SnapshotError> {
        Self::open_excluding(root, dir, None)
    }

    /// [`open`](Self::open), never looking into `excluded` (tackle's data directory, when it
    /// lies inside the Location: its own files are not the project's).
    pub fn open_excluding(
        root: &Path,
        dir: &Path,
        excluded: Option<&Path>,
    ) -> Result<Self, SnapshotError> {
        let key = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
        let dir = dir.join(format!("location-{}", &key[..16]));
        let objects = dir.join("objects");
        std::fs::create_dir_all(&objects).map_err(io("creating the snapshot directory"))?;
        // Version 2: deltas with byte paths and directories (version 1's manifests are left).
        let db = Connection::open(dir.join("changes-v2.sqlite3"))?;
        db.busy_timeout(Duration::from_secs(10))?;
        // No checkpoint on close, as for the journal: stopping stays quick.
        db.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        db.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE IF NOT EXISTS changes (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 session TEXT NOT NULL, message TEXT NOT NULL, call TEXT NOT NULL,
                 tool TEXT NOT NULL, at_ms INTEGER NOT NULL,
                 delta BLOB NOT NULL, overlap TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS changes_session ON changes(session, seq);",
        )?;
        let excluded = excluded
            .and_then(|path| std::fs::canonicalize(path).ok())
            .filter(|path| path.starts_with(root) && path != root);
        Ok(Self {
            root: root.to_path_buf(),
            objects: Objects { dir: objects },
            tree: Mutex::new(Tree::new(root, excluded)),
            ready: AtomicBool::new(false),
            ready_signal: (Mutex::new(false), Condvar::new()),
            cache_path: dir.join("cache.bin"),
            saved_at: Mutex::new(None),
            db: Mutex::new(db),
        })
    }

    /// The Location's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The bytes stored under `hash`.
    pub fn object(&self, hash: &str) -> Result<Vec<u8>, SnapshotError> {
        self.objects.get(hash)
    }

    /// Whether the bytes of `hash` are stored.
    pub fn has_object(&self, hash: &str) -> bool {
        self.objects.has(hash)
    }

    pub(crate) fn objects(&self) -> &Objects {
        &self.objects
    }

    fn lock_tree(&self) -> std::sync::MutexGuard<'_, Tree> {
        self.tree.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the files whose content must never be read or kept (those the read rules deny or
    /// ask for, such as `.env`): they are opaque, like ignored files. Set it before
    /// [`build`](Self::build).
    pub fn set_secret_filter(&self, filter: SecretFilter) {
        self.lock_tree().secret = Some(filter);
    }

    /// Takes the first full snapshot (reading the saved cache, so only changed files are
    /// hashed), and starts watching. Blocks for as long as the scan takes; call it from a
    /// background thread. Later calls return at once.
    pub fn build(&self) {
        {
            let mut tree = self.lock_tree();
            if !tree.built {
                if let Ok(bytes) = std::fs::read(&self.cache_path) {
                    tree.load_cache(&bytes);
                }
                let started = std::time::Instant::now();
                tree.build(&self.objects);
                tracing::debug!(elapsed = ?started.elapsed(), "the first snapshot is ready");
            }
        }
        self.save_cache(true);
        self.ready.store(true, Ordering::Release);
        let (lock, signal) = &self.ready_signal;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        signal.notify_all();
    }

    /// Whether the first snapshot is done.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Waits up to `limit` for the first snapshot; true when it is done.
    pub fn wait_ready(&self, limit: Duration) -> bool {
        let (lock, signal) = &self.ready_signal;
        let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = signal
            .wait_timeout_while(guard, limit, |ready| !*ready)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }

    /// Brings the picture up to date and pins this moment.
    pub fn mark(&self) -> Result<Mark, SnapshotError> {
        if !self.is_ready() {
            return Err(SnapshotError::NotReady);
        }
        let mut tree = self.lock_tree();
        let version = tree.refresh(&self.objects);
        tree.pin(version);
        drop(tree);
        self.save_cache(false);
        Ok(Mark { version })
    }

    /// What changed since `mark`, and a new mark for now (`mark` stays pinned until released).
    pub fn since(&self, mark: &Mark) -> Result<(Mark, Delta), SnapshotError> {
        let mut tree = self.lock_tree();
        let version = tree.refresh(&self.objects);
        tree.pin(version);
        let spans = tree.changes_since(mark.version);
        let delta = delta_of(&tree, &spans);
        drop(tree);
        self.save_cache(false);
        Ok((Mark { version }, delta))
    }

    /// A second pin of the same moment as `mark`.
    pub fn duplicate(&self, mark: &Mark) -> Mark {
        self.lock_tree().pin(mark.version);
        Mark {
            version: mark.version,
        }
    }

    /// Unpins `mark`.
    pub fn release(&self, mark: Mark) {
        self.lock_tree().unpin(mark.version);
    }

    /// Writes the stat cache now (dropping the store does too), so a process that exits
    /// without dropping it starts its successor warm.
    pub fn persist(&self) {
        self.save_cache(true);
    }

    fn save_cache(&self, now: bool) {
        let mut saved = self.saved_at.lock().unwrap_or_else(|e| e.into_inner());
        if !now && saved.is_some_and(|at| at.elapsed() < CACHE_SAVE_EVERY) {
            return;
        }
        let Some(bytes) = self.lock_tree().encode_cache() else {
            return;
        };
        *saved = Some(std::time::Instant::now());
        let Some(dir) = self.cache_path.parent() else {
            return;
        };
        if let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir)
            && std::io::Write::write_all(&mut temp, &bytes).is_ok()
        {
            let _ = temp.persist(&self.cache_path);
        }
    }

    /// Records `delta` as the change of `meta`'s call; returns the row.
    pub fn record(&self, meta: &ChangeMeta, delta: &Delta) -> Result<Change, SnapshotError> {
        let at_ms = now_ms();
        let overlap = serde_json::to_string(&meta.overlap).unwrap_or_else(|_| "[]".into());
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        db.execute(
            "INSERT INTO changes (session, message, call, tool, at_ms, delta, overlap)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                meta.session,
                meta.message,
                meta.call,
                meta.tool,
                at_ms,
                encode_delta(delta),
                overlap
            ],
        )?;
        let seq = db.last_insert_rowid();
        Ok(Change {
            seq,
            session: meta.session.clone(),
            message: meta.message.clone(),
            call: meta.call.clone(),
            tool: meta.tool.clone(),
            at_ms,
            files: delta.files.clone(),
            shadowed: delta.shadowed.clone(),
            overlap: meta.overlap.clone(),
        })
    }

    /// Records an undo in `session`: its call ID is `undo-<seq>`, unique in the Location.
    pub fn record_undo(&self, session: &str, delta: &Delta) -> Result<Change, SnapshotError> {
        let mut change = self.record(
            &ChangeMeta {
                session: session.to_owned(),
                message: "undo".into(),
                call: String::new(),
                tool: "undo".into(),
                overlap: Vec::new(),
            },
            delta,
        )?;
        change.call = format!("undo-{}", change.seq);
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        db.execute(
            "UPDATE changes SET call = ?1 WHERE seq = ?2",
            params![change.call, change.seq],
        )?;
        Ok(change)
    }

    fn query(&self, sql: &str, args: impl rusqlite::Params) -> Result<Vec<Change>, SnapshotError> {
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let mut statement = db.prepare(sql)?;
        let rows = statement.query_map(args, |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, i64>(5)?,
                row.get::<_, Vec<u8>>(6)?,
                row.get::<_, String>(7)?,
            ))
        })?;
        let mut changes = Vec::new();
        for row in rows {
            let (seq, session, message, call, tool, at_ms, delta, overlap) = row?;
            let delta = decode_delta(&delta).ok_or(SnapshotError::Corrupt(seq))?;
            changes.push(Change {
                seq,
                session,
                message,
                call,
                tool,
                at_ms,
                files: delta.files,
                shadowed: delta.shadowed,
                overlap: serde_json::from_str(&overlap).unwrap_or_default(),
            });
        }
        Ok(changes)
    }

    /// The changes of `session`, oldest first.
    pub fn changes(&self, session: &str) -> Result<Vec<Change>, SnapshotError> {
        self.query(
            "SELECT seq, session, message, call, tool, at_ms, delta, overlap FROM changes
             WHERE session = ?1 ORDER BY seq",
            params![session],
        )
    }

    /// The Location's last `limit` changes across sessions, newest first.
    pub fn recent(&self, limit: usize) -> Result<Vec<Change>, SnapshotError> {
        self.query(
            "SELECT seq, session, message, call, tool, at_ms, delta, overlap FROM changes
             ORDER BY seq DESC LIMIT ?1",
            params![limit as i64],
        )
    }

    /// The sessions that changed the Location, the most recent first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, SnapshotError> {
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let mut statement = db.prepare(
            "SELECT session, COUNT(*), MAX(at_ms), MAX(seq) AS last FROM changes
             GROUP BY session ORDER BY last DESC",
        )?;
        let rows = statement.query_map([], |row| {
            Ok(SessionSummary {
                session: row.get(0)?,
                changes: row.get::<_, i64>(1)? as usize,
                last_at_ms: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The session of the Location's most recent change.
    pub fn latest_session(&self) -> Result<Option<String>, SnapshotError> {
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        Ok(db
            .query_row(
                "SELECT session FROM changes ORDER BY seq DESC LIMIT 1",
                [],
                |row| row.get(0),
            )
            .optional()?)
    }

    /// Removes stored contents older than `retention` that nothing still needs: not the current
    /// files' (the cache), and not those of changes recorded within `retention`. Older changes
    /// may then lose their contents; undoing one says so. Returns the objects removed.
    pub fn sweep(&self, retention: Duration) -> Result<usize, SnapshotError> {
        let now = std::time::SystemTime::now();
        let cutoff_ms = now
            .checked_sub(retention)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default();
        let mut live: std::collections::HashSet<String> = std::collections::HashSet::new();
        {
            let mut tree = self.lock_tree();
            if !tree.built
                && let Ok(bytes) = std::fs::read(&self.cache_path)
            {
                tree.load_cache(&bytes);
            }
            live.extend(tree.live_hashes().map(str::to_owned));
        }
        let recent = self.query(
            "SELECT seq, session, message, call, tool, at_ms, delta, overlap FROM changes
             WHERE at_ms >= ?1",
            params![cutoff_ms],
        )?;
        for change in recent {
            for file in &change.files {
                for entry in [&file.before, &file.after].into_iter().flatten() {
                    live.insert(entry.hash.clone());
                }
            }
        }
        let mut removed = 0;
        for shard in std::fs::read_dir(&self.objects.dir).map_err(io("sweeping snapshots"))? {
            let Ok(shard) = shard else { continue };
            let Ok(files) = std::fs::read_dir(shard.path()) else {
                continue;
            };
            for file in files.flatten() {
                let name = file.file_name().to_string_lossy().into_owned();
                let old = file
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|modified| {
                        now.duration_since(modified)
                            .is_ok_and(|age| age > retention)
                    });
                if old && !live.contains(&name) && std::fs::remove_file(file.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// The delta of some spans: tracked changes, and the paths shadowed by an opaque state at
/// either end (theirs or an ancestor's).
fn delta_of(tree: &Tree, spans: &BTreeMap<RelPath, tree::Span>) -> Delta {
    let opaque_then = |path: &RelPath| match spans.get(path) {
        Some((before, _)) => matches!(before, Some(Slot::Opaque)),
        None => matches!(tree.slot(path), Some(Slot::Opaque)),
    };
    let opaque_now = |path: &RelPath| matches!(tree.slot(path), Some(Slot::Opaque));
    let mut delta = Delta::default();
    for (path, (before, after)) in spans {
        let shadowed = matches!(before, Some(Slot::Opaque))
            || matches!(after, Some(Slot::Opaque))
            || path
                .ancestors()
                .any(|dir| opaque_then(&dir) || opaque_now(&dir));
        if shadowed {
            delta.shadowed.push(path.clone());
            continue;
        }
        let entry = |slot: &Option<Slot>| match slot {
            Some(Slot::Tracked(entry)) => Some(entry.clone()),
            _ => None,
        };
        delta.files.push(FileChange {
            path: path.clone(),
            before: entry(before),
            after: entry(after),
        });
    }
    delta
}

const DELTA_HEADER: &[u8] = b"D2";

fn encode_delta(delta: &Delta) -> Vec<u8> {
    let mut w = Writer::default();
    w.0.extend_from_slice(DELTA_HEADER);
    w.u32(delta.files.len() as u32);
    for file in &delta.files {
        w.path(&file.path);
        w.entry(file.before.as_ref());
        w.entry(file.after.as_ref());
    }
    w.u32(delta.shadowed.len() as u32);
    for path in &delta.shadowed {
        w.path(path);
    }
    w.0
}

fn decode_delta(bytes: &[u8]) -> Option<Delta> {
    let mut r = Reader(bytes.strip_prefix(DELTA_HEADER)?);
    let mut delta = Delta::default();
    for _ in 0..r.u32()? {
        delta.files.push(FileChange {
            path: r.path()?,
            before: r.entry()?,
            after: r.entry()?,
        });
    }
    for _ in 0..r.u32()? {
        delta.shadowed.push(r.path()?);
    }
    r.is_empty().then_some(delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_round_trip_with_byte_paths() {
        let file = Entry {
            kind: Kind::File,
            mode: 0o600,
            size: 1,
            hash: "cd".repeat(32),
            kept: true,
        };
        let delta = Delta {
            files: vec![
                FileChange {
                    path: RelPath::new(&b"x"[..]).unwrap(),
                    before: Some(file.clone()),
                    after: Some(Entry::dir(0o700)),
                },
                FileChange {
                    path: RelPath::new(&b"x/\xfe\n"[..]).unwrap(),
                    before: None,
                    after: Some(file),
                },
            ],
            shadowed: vec![RelPath::new(&b".env"[..]).unwrap()],
        };
        assert_eq!(decode_delta(&encode_delta(&delta)), Some(delta));
        assert_eq!(decode_delta(b"D2\x01"), None);
    }
}
