//! Spool files: where command output that outgrows memory is kept, under one total cap.
//!
//! Spool files live in one directory per session under the spool directory (by default the
//! data directory's `spool`, never the system temp directory):
//! `<spool>/<session hash>/bash-XXXXXX.log`. Every file there counts against a total cap
//! (2 GiB by default). Before a new file is opened, the oldest files are removed until the
//! others plus the new file's own cap fit; files still being written by this process count at
//! their full cap and are never removed. When even that leaves too little room, the new file
//! gets only what is left, and the capture reports the rest as dropped.
//!
//! Files older than a day are removed whenever a spool file is opened or [`sweep_spools`]
//! runs, and a session's files are removed when the host ends the session
//! ([`end_session_spools`]).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// How old a spool file gets before a sweep removes it.
pub const SPOOL_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Spool files this process is writing, with the bytes each may still reach.
static LIVE: Mutex<Option<HashMap<PathBuf, u64>>> = Mutex::new(None);

/// Serializes opening spool files in this process, so two opens never both count the same room.
static OPENING: Mutex<()> = Mutex::new(());

/// Where a capture may spool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SpoolPlace {
    /// The spool directory.
    pub(crate) dir: PathBuf,
    /// The session whose directory the file goes in.
    pub(crate) session: String,
    /// The most bytes one file may hold.
    pub(crate) file_cap: u64,
    /// The most bytes all spool files together may hold.
    pub(crate) total_cap: u64,
}

/// A spool file being written: it counts as live until dropped.
#[derive(Debug)]
pub(crate) struct OpenSpool {
    pub(crate) file: File,
    pub(crate) path: PathBuf,
    /// The most bytes this file may hold: the place's file cap, or less when the total cap
    /// left less room.
    pub(crate) cap: u64,
}

impl Drop for OpenSpool {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = live.as_mut() {
            live.remove(&self.path);
        }
    }
}

/// Why no spool file was opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpoolError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error(
        "the spool directory {dir} is full: files still being written take the whole {cap}-byte \
         total cap"
    )]
    Full { dir: PathBuf, cap: String },
}

/// Opens a new spool file in `place`, first removing stale files and, oldest first, as many
/// others as the total cap needs.
pub(crate) fn open(place: &SpoolPlace) -> Result<OpenSpool, SpoolError> {
    let _opening = OPENING.lock().unwrap_or_else(PoisonError::into_inner);
    let session_dir = place.dir.join(session_dir_name(&place.session));
    std::fs::create_dir_all(&session_dir)?;
    let live: HashMap<PathBuf, u64> = LIVE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_default();
    let mut files = spool_files(&place.dir);
    let now = SystemTime::now();
    files.retain(|file| {
        let stale = !live.contains_key(&file.path)
            && now
                .duration_since(file.modified)
                .is_ok_and(|age| age > SPOOL_MAX_AGE);
        if stale {
            let _ = std::fs::remove_file(&file.path);
        }
        !stale
    });
    files.sort_by_key(|file| file.modified);
    let mut used: u64 = files
        .iter()
        .map(|file| match live.get(&file.path) {
            Some(&reserved) => reserved.max(file.size),
            None => file.size,
        })
        .sum();
    let wanted = place.file_cap.min(place.total_cap);
    for file in &files {
        if used.saturating_add(wanted) <= place.total_cap {
            break;
        }
        if live.contains_key(&file.path) {
            continue;
        }
        if std::fs::remove_file(&file.path).is_ok() || !file.path.exists() {
            used = used.saturating_sub(file.size);
        }
    }
    let cap = wanted.min(place.total_cap.saturating_sub(used));
    if cap == 0 {
        return Err(SpoolError::Full {
            dir: place.dir.clone(),
            cap: tackle_core::thousands(place.total_cap),
        });
    }
    let (file, path) = tempfile::Builder::new()
        .prefix("bash-")
        .suffix(".log")
        .tempfile_in(&session_dir)?
        .keep()
        .map_err(|error| error.error)?;
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert(path.clone(), cap);
    Ok(OpenSpool { file, path, cap })
}

/// Removes the spool files of `session` under `dir`, except files this process is still
/// writing. Call it when the session ends.
pub fn end_session_spools(dir: &Path, session: &str) {
    let session_dir = dir.join(session_dir_name(session));
    let live = live_paths();
    let Ok(entries) = std::fs::read_dir(&session_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if is_spool_name(&entry.file_name()) && !live.contains(&path) {
            let _ = std::fs::remove_file(&path);
        }
    }
    // Only succeeds when nothing is left in it.
    let _ = std::fs::remove_dir(&session_dir);
}

/// Removes spool files under `dir` older than `max_age` (see [`SPOOL_MAX_AGE`]), and session
/// directories left empty. Blocks on file system IO; best effort.
pub fn sweep_spools(dir: &Path, max_age: Duration) {
    let live = live_paths();
    let now = SystemTime::now();
    for file in spool_files(dir) {
        let old = now
            .duration_since(file.modified)
            .is_ok_and(|age| age > max_age);
        if old && !live.contains(&file.path) {
            let _ = std::fs::remove_file(&file.path);
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

fn live_paths() -> Vec<PathBuf> {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|live| live.keys().cloned().collect())
        .unwrap_or_default()
}

/// The directory name of a session: a hash, so any session ID makes a safe, fixed-length name.
use crate::tools::session_dir_name;

fn is_spool_name(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    name.starts_with("bash-") && name.ends_with(".log")
}

/// A spool file on disk.
struct SpoolFile {
    path: PathBuf,
    size: u64,
    modified: SystemTime,
}

/// The spool files under `dir`: in its session directories, and loose in it (older versions).
fn spool_files(dir: &Path) -> Vec<SpoolFile> {
    let mut files = Vec::new();
    let add = |dir: &Path, files: &mut Vec<SpoolFile>| {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if !is_spool_name(&entry.file_name()) {
                continue;
            }
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if metadata.is_file() {
                files.push(SpoolFile {
                    path: entry.path(),
                    size: metadata.len(),
                    modified: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                });
            }
        }
    };
    add(dir, &mut files);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let is_session = entry.file_name().to_string_lossy().starts_with("s-")
                && entry.file_type().is_ok_and(|t| t.is_dir());
            if is_session {
                add(&entry.path(), &mut files);
            }
        }
    }
    files
}
