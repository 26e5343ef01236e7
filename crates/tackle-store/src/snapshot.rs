//! Snapshots of a Location's files, kept content-addressed, and the log of what each call
//! changed, so any change can be seen and reverted without git.
//!
//! A snapshot is a manifest of `(path, kind, mode, blake3)` for every file the Location's
//! ignore rules keep (the same as grep and glob: `.gitignore`, `.ignore`, git excludes, never
//! `.git/`). Each file's bytes are stored once under their hash, shared by every snapshot and
//! session. Taking one is incremental: an index of `(size, mtime, inode, mode)` per path, kept in
//! memory and on disk, means only files that changed since the last snapshot are read and
//! hashed. The manifest is itself stored under its hash, which is the snapshot's ID.
//!
//! A [`Change`] row records one call that changed files: the snapshot before and after it. A
//! revert ([`revert`]) restores, per file, what was there before, with compare-and-swap: a file
//! that changed since is a conflict and is left alone unless forced. A revert is recorded as a
//! change too, so reverting it redoes.

pub mod revert;

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

/// How much newer than a file's mtime a snapshot must be to trust its index entry: file
/// timestamps come from a coarse clock (a few milliseconds).
const RACY_NS: i128 = 100_000_000;

/// Files larger than this are listed in a snapshot by hash but their bytes are not kept.
pub const MAX_KEPT_FILE: u64 = 64 * 1024 * 1024;

/// What a snapshot entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A regular file; the hash is of its bytes.
    File,
    /// A symbolic link; the hash is of its target.
    Symlink,
}

/// One file of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    /// File or symlink.
    pub kind: Kind,
    /// The permission bits.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
    /// blake3 of the bytes (a link's target), lowercase hex.
    pub hash: String,
    /// Whether the bytes are kept in the object store.
    pub kept: bool,
}

/// The files of a Location at one moment, by path relative to its root (`/`-separated).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Every file, by relative path.
    pub files: BTreeMap<String, Entry>,
}

impl Manifest {
    /// One line per file, `kind mode size hash kept path`, sorted by path: compact, and fast to
    /// write and read for trees of tens of thousands of files.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.files.len() * 110 + 32);
        out.extend_from_slice(MANIFEST_HEADER);
        for (path, entry) in &self.files {
            encode_line(&mut out, path, entry);
        }
        out
    }

    /// The manifest [`encode`](Self::encode) wrote, or `None` for other bytes.
    pub fn decode(bytes: &[u8]) -> Option<Manifest> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.split('\n');
        if lines.next()?
            != MANIFEST_HEADER
                .strip_suffix(b"\n")
                .and_then(|h| std::str::from_utf8(h).ok())?
        {
            return None;
        }
        let mut files = BTreeMap::new();
        for line in lines.filter(|l| !l.is_empty()) {
            let mut fields = line.splitn(6, ' ');
            let kind = match fields.next()? {
                "f" => Kind::File,
                "l" => Kind::Symlink,
                _ => return None,
            };
            let mode = u32::from_str_radix(fields.next()?, 8).ok()?;
            let size = fields.next()?.parse().ok()?;
            let hash = fields.next()?.to_owned();
            let kept = fields.next()? == "k";
            let path = unescape(fields.next()?);
            files.insert(
                path,
                Entry {
                    kind,
                    mode,
                    size,
                    hash,
                    kept,
                },
            );
        }
        Some(Manifest { files })
    }
}

/// The first line of every manifest.
const MANIFEST_HEADER: &[u8] = b"tackle-manifest 1\n";

/// Appends one manifest line: `kind mode size hash kept path`. A newline or backslash in a name
/// is escaped, so each file stays one line.
fn encode_line(out: &mut Vec<u8>, path: &str, entry: &Entry) {
    use std::io::Write as _;
    let kind = match entry.kind {
        Kind::File => 'f',
        Kind::Symlink => 'l',
    };
    let kept = if entry.kept { 'k' } else { '-' };
    let _ = write!(
        out,
        "{kind} {:o} {} {} {kept} ",
        entry.mode, entry.size, entry.hash
    );
    if path.contains(['\\', '\n']) {
        out.extend_from_slice(path.replace('\\', "\\\\").replace('\n', "\\n").as_bytes());
    } else {
        out.extend_from_slice(path.as_bytes());
    }
    out.push(b'\n');
}

fn unescape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A call that changed files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Its row number, increasing.
    pub seq: i64,
    /// The session.
    pub session: String,
    /// The message the call belongs to.
    pub message: String,
    /// The call.
    pub call: String,
    /// The tool (`undo` for a revert).
    pub tool: String,
    /// The snapshot before it.
    pub before: String,
    /// The snapshot after it.
    pub after: String,
    /// When it was recorded (Unix milliseconds).
    pub at_ms: i64,
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
    /// A manifest or object is no longer stored (the retention sweep removed it).
    #[error("snapshot data {0} is no longer stored (removed by the retention sweep)")]
    Missing(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let what = what.into();
    move |source| SnapshotError::Io { what, source }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stat {
    size: u64,
    mtime_ns: i128,
    /// When the snapshot that hashed it started.
    taken_ns: i128,
    /// The last snapshot (in this process) that saw it.
    #[serde(skip)]
    seen: u64,
    inode: u64,
    mode: u32,
    entry: Entry,
}

/// Snapshots of one Location, and its change log.
pub struct Snapshots {
    root: PathBuf,
    excluded: Option<PathBuf>,
    objects: PathBuf,
    index_path: PathBuf,
    index: Mutex<Option<HashMap<String, Stat>>>,
    saved_at: Mutex<Option<std::time::Instant>>,
    index_dirty: std::sync::atomic::AtomicBool,
    generation: std::sync::atomic::AtomicU64,
    db: Mutex<Connection>,
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        if self.index_dirty.load(std::sync::atomic::Ordering::Relaxed)
            && let Some(index) = self
                .index
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
        {
            self.save_index(index);
        }
    }
}

/// How often the index is written while snapshots are taken.
const INDEX_SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl std::fmt::Debug for Snapshots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshots")
            .field("root", &self.root)
            .finish()
    }
}

impl Snapshots {
    /// Snapshots of the Location at `root` (its real path), kept under `dir` (objects shared by
    /// every Location; the index and the change log per Location).
    pub fn open(root: &Path, dir: &Path) -> Result<Self, SnapshotError> {
        Self::open_excluding(root, dir, None)
    }

    /// [`open`](Self::open), never walking into `excluded` (tackle's data directory, when it
    /// lies inside the Location: its own files are not the project's).
    pub fn open_excluding(
        root: &Path,
        dir: &Path,
        excluded: Option<&Path>,
    ) -> Result<Self, SnapshotError> {
        let key = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
        let key = &key[..16];
        // Per Location, so a sweep knows every manifest that refers to an object.
        let dir = dir.join(format!("location-{key}"));
        let objects = dir.join("objects");
        std::fs::create_dir_all(&objects).map_err(io("creating the snapshot directory"))?;
        let db = Connection::open(dir.join("changes.sqlite3"))?;
        db.busy_timeout(std::time::Duration::from_secs(10))?;
        db.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE IF NOT EXISTS changes (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 session TEXT NOT NULL, message TEXT NOT NULL, call TEXT NOT NULL,
                 tool TEXT NOT NULL, before TEXT NOT NULL, after TEXT NOT NULL,
                 at_ms INTEGER NOT NULL);
             CREATE INDEX IF NOT EXISTS changes_session ON changes(session, seq);",
        )?;
        let excluded = excluded
            .and_then(|path| std::fs::canonicalize(path).ok())
            .filter(|path| path.starts_with(root) && path != root);
        Ok(Self {
            root: root.to_path_buf(),
            excluded,
            objects,
            index_path: dir.join("index.json"),
            index: Mutex::new(None),
            saved_at: Mutex::new(None),
            index_dirty: Default::default(),
            generation: Default::default(),
            db: Mutex::new(db),
        })
    }

    /// The Location's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn object_path(&self, hash: &str) -> PathBuf {
        self.objects.join(&hash[..2]).join(hash)
    }

    /// Stores `bytes` under their hash (once); returns the hash.
    fn put(&self, bytes: &[u8]) -> Result<String, SnapshotError> {
        let hash = blake3::hash(bytes).to_hex().to_string();
        let path = self.object_path(&hash);
        if !path.exists() {
            let dir = path.parent().unwrap_or(&self.objects);
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

    /// The bytes stored under `hash`.
    pub fn object(&self, hash: &str) -> Result<Vec<u8>, SnapshotError> {
        std::fs::read(self.object_path(hash)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SnapshotError::Missing(hash.to_owned()),
            _ => SnapshotError::Io {
                what: "reading an object".into(),
                source: e,
            },
        })
    }

    /// The manifest of snapshot `id`.
    pub fn manifest(&self, id: &str) -> Result<Manifest, SnapshotError> {
        let bytes = self.object(id)?;
        Manifest::decode(&bytes).ok_or_else(|| SnapshotError::Io {
            what: "reading a manifest".into(),
            source: std::io::Error::other(format!("snapshot {id} is not a manifest")),
        })
    }

    /// Takes a snapshot: walks the Location, hashes and stores only files that changed since the
    /// last one, and stores the manifest. Returns its ID.
    pub fn take(&self) -> Result<String, SnapshotError> {
        let mut guard = self.index.lock().unwrap_or_else(|e| e.into_inner());
        let index = guard.get_or_insert_with(|| self.load_index());
        // Racy entries (git's word): a file changed within the file system's timestamp
        // granularity of the snapshot that hashed it may change again with the same size, mtime
        // and inode. Such entries are hashed again until a later snapshot sees them settled.
        let taken_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or_default();
        let mut paths = walk(&self.root, self.excluded.as_deref());
        paths.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Entries are updated in place; what the walk did not see is dropped after.
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let mut out = Vec::with_capacity(paths.len() * 110 + 32);
        out.extend_from_slice(MANIFEST_HEADER);
        let mut changed = false;
        for (relative, meta) in paths {
            let mode = meta.permissions().mode() & 0o7777;
            let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
            let trusted = index.get_mut(&relative).filter(|stat| {
                stat.size == meta.len()
                    && stat.mtime_ns == mtime_ns
                    && stat.inode == meta.ino()
                    && stat.mode == mode
                    && stat.mtime_ns + RACY_NS < stat.taken_ns
            });
            match trusted {
                Some(stat) => {
                    stat.seen = generation;
                    encode_line(&mut out, &relative, &stat.entry);
                }
                None => {
                    changed = true;
                    // Gone or unreadable since the walk: not part of this snapshot.
                    let Ok(entry) = self.entry_for(&relative, &meta, mode) else {
                        continue;
                    };
                    encode_line(&mut out, &relative, &entry);
                    index.insert(
                        relative,
                        Stat {
                            size: meta.len(),
                            mtime_ns,
                            inode: meta.ino(),
                            mode,
                            taken_ns,
                            seen: generation,
                            entry,
                        },
                    );
                }
            }
        }
        let before = index.len();
        index.retain(|_, stat| stat.seen == generation);
        changed |= index.len() != before;
        // The index is a cache: saved at most every few seconds (and on drop), so a burst of
        // snapshots does not rewrite it each time.
        if changed {
            let mut saved = self.saved_at.lock().unwrap_or_else(|e| e.into_inner());
            if saved.is_none_or(|at| at.elapsed() > INDEX_SAVE_EVERY) {
                self.save_index(index);
                *saved = Some(std::time::Instant::now());
                self.index_dirty
                    .store(false, std::sync::atomic::Ordering::Relaxed);
            } else {
                self.index_dirty
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        self.put(&out)
    }

    fn entry_for(
        &self,
        relative: &str,
        meta: &std::fs::Metadata,
        mode: u32,
    ) -> Result<Entry, SnapshotError> {
        let path = self.root.join(relative);
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).map_err(io("reading a link"))?;
            let bytes = target.as_os_str().as_encoded_bytes();
            return Ok(Entry {
                kind: Kind::Symlink,
                mode,
                size: bytes.len() as u64,
                hash: self.put(bytes)?,
                kept: true,
            });
        }
        if meta.len() > MAX_KEPT_FILE {
            let mut hasher = blake3::Hasher::new();
            let mut file = std::fs::File::open(&path).map_err(io("hashing a large file"))?;
            std::io::copy(&mut file, &mut hasher).map_err(io("hashing a large file"))?;
            return Ok(Entry {
                kind: Kind::File,
                mode,
                size: meta.len(),
                hash: hasher.finalize().to_hex().to_string(),
                kept: false,
            });
        }
        let bytes = std::fs::read(&path).map_err(io("reading a file"))?;
        Ok(Entry {
            kind: Kind::File,
            mode,
            size: bytes.len() as u64,
            hash: self.put(&bytes)?,
            kept: true,
        })
    }

    fn load_index(&self) -> HashMap<String, Stat> {
        std::fs::read(&self.index_path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save_index(&self, index: &HashMap<String, Stat>) {
        let Some(dir) = self.index_path.parent() else {
            return;
        };
        let Ok(bytes) = serde_json::to_vec(index) else {
            return;
        };
        if let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir)
            && std::io::Write::write_all(&mut temp, &bytes).is_ok()
        {
            let _ = temp.persist(&self.index_path);
        }
    }

    /// Records that `call` changed files from snapshot `before` to `after`.
    pub fn record(
        &self,
        session: &str,
        message: &str,
        call: &str,
        tool: &str,
        before: &str,
        after: &str,
    ) -> Result<i64, SnapshotError> {
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default();
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        db.execute(
            "INSERT INTO changes (session, message, call, tool, before, after, at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![session, message, call, tool, before, after, at_ms],
        )?;
        Ok(db.last_insert_rowid())
    }

    /// The changes of `session`, oldest first.
    pub fn changes(&self, session: &str) -> Result<Vec<Change>, SnapshotError> {
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let mut statement = db.prepare(
            "SELECT seq, session, message, call, tool, before, after, at_ms FROM changes
             WHERE session = ?1 ORDER BY seq",
        )?;
        let rows = statement.query_map(params![session], |row| {
            Ok(Change {
                seq: row.get(0)?,
                session: row.get(1)?,
                message: row.get(2)?,
                call: row.get(3)?,
                tool: row.get(4)?,
                before: row.get(5)?,
                after: row.get(6)?,
                at_ms: row.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The change recorded for `call` in `session`, if any.
    pub fn change_of_call(
        &self,
        session: &str,
        call: &str,
    ) -> Result<Option<Change>, SnapshotError> {
        Ok(self
            .changes(session)?
            .into_iter()
            .find(|change| change.call == call))
    }

    /// Removes stored contents older than `retention` that nothing still needs: not the current
    /// files' (the index), and not those of changes recorded within `retention`. Changes older
    /// than that may then lose their contents; undoing one says so. Returns the objects removed.
    pub fn sweep(&self, retention: std::time::Duration) -> Result<usize, SnapshotError> {
        let now = std::time::SystemTime::now();
        let cutoff_ms = now
            .checked_sub(retention)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default();
        let mut live: std::collections::HashSet<String> = std::collections::HashSet::new();
        {
            let mut guard = self.index.lock().unwrap_or_else(|e| e.into_inner());
            let index = guard.get_or_insert_with(|| self.load_index());
            live.extend(index.values().map(|stat| stat.entry.hash.clone()));
        }
        let recent: Vec<(String, String)> = {
            let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
            let mut statement =
                db.prepare("SELECT before, after FROM changes WHERE at_ms >= ?1")?;
            let rows =
                statement.query_map(params![cutoff_ms], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect::<Result<_, _>>()?
        };
        for (before, after) in recent {
            for id in [before, after] {
                if let Ok(manifest) = self.manifest(&id) {
                    live.extend(manifest.files.values().map(|e| e.hash.clone()));
                }
                live.insert(id);
            }
        }
        let mut removed = 0;
        for shard in std::fs::read_dir(&self.objects).map_err(io("sweeping snapshots"))? {
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

/// Every file under `root` the ignore rules keep, with its metadata (links not followed).
fn walk(root: &Path, excluded: Option<&Path>) -> Vec<(String, std::fs::Metadata)> {
    let excluded = excluded.map(Path::to_path_buf);
    let found = Mutex::new(Vec::new());
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            entry.file_name() != ".git" && excluded.as_deref() != Some(entry.path())
        })
        .build_parallel()
        .run(|| {
            let found = &found;
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return ignore::WalkState::Continue;
                };
                let Some(kind) = entry.file_type() else {
                    return ignore::WalkState::Continue;
                };
                if !(kind.is_file() || kind.is_symlink()) {
                    return ignore::WalkState::Continue;
                }
                let Ok(relative) = entry.path().strip_prefix(root) else {
                    return ignore::WalkState::Continue;
                };
                let Some(relative) = relative.to_str() else {
                    return ignore::WalkState::Continue;
                };
                if let Ok(meta) = entry.path().symlink_metadata() {
                    found
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((relative.to_owned(), meta));
                }
                ignore::WalkState::Continue
            })
        });
    found.into_inner().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_round_trip_names_with_spaces_newlines_and_backslashes() {
        let entry = |kind, kept| Entry {
            kind,
            mode: 0o755,
            size: 12,
            hash: "ab".repeat(32),
            kept,
        };
        let mut manifest = Manifest::default();
        for name in ["a b.txt", "line\nbreak", "back\\slash\\n", "dir/é.rs"] {
            manifest
                .files
                .insert(name.to_owned(), entry(Kind::File, true));
        }
        manifest
            .files
            .insert("link".to_owned(), entry(Kind::Symlink, false));
        let decoded = Manifest::decode(&manifest.encode()).unwrap();
        assert_eq!(decoded, manifest);
        assert_eq!(Manifest::decode(b"{}"), None);
    }
}
