//! Reading and changing paths under a Location by descriptor, never by name from the root: the
//! same containment as the file tools.
//!
//! Every operation first opens the path's directory one component at a time from the open
//! root, each with `O_NOFOLLOW | O_DIRECTORY`, so a symlink anywhere on the way (a directory
//! swapped for a link to somewhere else) fails the open instead of being followed; then it works
//! relative to that directory descriptor. Files are opened with `O_NOFOLLOW | O_NONBLOCK` and
//! their type is checked on the descriptor. New content goes to a temporary file in the same
//! directory and is renamed over the name, so a reader sees the old file or the new one.

use std::ffi::CString;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::{Entry, Kind, MAX_KEPT_FILE, Objects, RelPath, SnapshotError};

/// What is at a path now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// Nothing.
    Absent,
    /// A file, symlink or directory.
    Entry(Entry),
    /// A FIFO, socket or device: never read, never replaced.
    Special,
}

impl Found {
    /// The entry, if a tracked kind is there.
    pub(crate) fn entry(&self) -> Option<&Entry> {
        match self {
            Found::Entry(entry) => Some(entry),
            _ => None,
        }
    }

    /// Whether this is the state `want` (absent for `None`).
    pub(crate) fn is(&self, want: Option<&Entry>) -> bool {
        match (self, want) {
            (Found::Absent, None) => true,
            (Found::Entry(have), Some(want)) => have.same_as(want),
            _ => false,
        }
    }
}

/// Why a path's directory could not be opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DirError {
    /// A component does not exist.
    Missing(RelPath),
    /// A component is a file or something else that is not a directory (nothing can be under
    /// it).
    NotADirectory(RelPath),
    /// A component is a symbolic link: what is under it lies wherever it points, never followed.
    Symlink(RelPath),
    /// Another error, as text.
    Other(String),
}

/// The Location's root, open.
pub(crate) struct Root {
    fd: OwnedFd,
}

impl Root {
    /// Opens the root directory (its real path).
    pub(crate) fn open(path: &Path) -> std::io::Result<Self> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self { fd })
    }

    /// Opens `dir` (`None`: the root itself) with no symlink on the way.
    pub(crate) fn dir(&self, dir: Option<&RelPath>) -> Result<OwnedFd, DirError> {
        let mut fd = rustix::io::dup(&self.fd).map_err(|e| DirError::Other(e.to_string()))?;
        let Some(dir) = dir else { return Ok(fd) };
        let mut so_far: Option<RelPath> = None;
        for part in dir.as_bytes().split(|b| *b == b'/') {
            let here = match &so_far {
                Some(path) => path.join(part),
                None => RelPath::top(part),
            };
            fd = match rustix::fs::openat(
                &fd,
                part,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(next) => next,
                Err(Errno::NOENT) => return Err(DirError::Missing(here)),
                Err(Errno::NOTDIR | Errno::LOOP) => {
                    let link = rustix::fs::statat(&fd, part, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(
                        |stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink,
                    );
                    return Err(if link {
                        DirError::Symlink(here)
                    } else {
                        DirError::NotADirectory(here)
                    });
                }
                Err(e) => return Err(DirError::Other(e.to_string())),
            };
            so_far = Some(here);
        }
        Ok(fd)
    }
}

/// Takes the directory's cross-process lock (the file tools take the same one) until dropped.
pub(crate) fn lock(dir: &OwnedFd) -> std::io::Result<()> {
    rustix::fs::flock(dir, FlockOperation::LockExclusive)?;
    Ok(())
}

/// What `name` in `dir` is now; a file's or link's bytes are stored in `objects` (when small
/// enough), so the state can be put back.
pub(crate) fn found_at(
    objects: &Objects,
    dir: &OwnedFd,
    name: &[u8],
) -> Result<Found, SnapshotError> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(Found::Absent),
        Err(e) => return Err(errno("reading a path's state", e)),
    };
    let mode = stat.st_mode & 0o7777;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => Ok(Found::Entry(Entry::dir(mode))),
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(dir, name, Vec::new())
                .map_err(|e| errno("reading a link", e))?;
            let bytes = target.as_bytes();
            Ok(Found::Entry(Entry {
                kind: Kind::Symlink,
                mode,
                size: bytes.len() as u64,
                hash: objects.put(bytes)?,
                kept: true,
            }))
        }
        FileType::RegularFile => {
            let fd = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| errno("opening a file", e))?;
            let stat = rustix::fs::fstat(&fd).map_err(|e| errno("reading a file", e))?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                return Ok(Found::Special);
            }
            let mut file = std::fs::File::from(fd);
            if stat.st_size as u64 > MAX_KEPT_FILE {
                let mut hasher = blake3::Hasher::new();
                std::io::copy(&mut file, &mut hasher).map_err(super::io("hashing a file"))?;
                return Ok(Found::Entry(Entry {
                    kind: Kind::File,
                    mode,
                    size: stat.st_size as u64,
                    hash: hasher.finalize().to_hex().to_string(),
                    kept: false,
                }));
            }
            let mut bytes = Vec::new();
            (&mut file)
                .take(MAX_KEPT_FILE + 1)
                .read_to_end(&mut bytes)
                .map_err(super::io("reading a file"))?;
            Ok(Found::Entry(Entry {
                kind: Kind::File,
                mode,
                size: bytes.len() as u64,
                hash: objects.put(&bytes)?,
                kept: true,
            }))
        }
        _ => Ok(Found::Special),
    }
}

/// The names in an open directory.
pub(crate) fn names_in(dir: &OwnedFd) -> Result<Vec<Vec<u8>>, SnapshotError> {
    let fd = rustix::io::dup(dir).map_err(|e| errno("listing a directory", e))?;
    let mut listing =
        rustix::fs::Dir::read_from(&fd).map_err(|e| errno("listing a directory", e))?;
    listing.rewind();
    let mut names = Vec::new();
    while let Some(entry) = listing.read() {
        let entry = entry.map_err(|e| errno("listing a directory", e))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    Ok(names)
}

/// Removes `name` (a directory only when empty).
pub(crate) fn remove_at(dir: &OwnedFd, name: &[u8], is_dir: bool) -> std::io::Result<()> {
    let flags = if is_dir {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    Ok(rustix::fs::unlinkat(dir, name, flags)?)
}

/// Creates the directory `name` with `mode`.
pub(crate) fn make_dir_at(dir: &OwnedFd, name: &[u8], mode: u32) -> std::io::Result<()> {
    rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700))?;
    set_mode_at(dir, name, true, mode)
}

/// Sets the mode of the file or directory `name`, refusing a link.
pub(crate) fn set_mode_at(
    dir: &OwnedFd,
    name: &[u8],
    is_dir: bool,
    mode: u32,
) -> std::io::Result<()> {
    let kind = if is_dir {
        OFlags::DIRECTORY
    } else {
        OFlags::NONBLOCK
    };
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | kind,
        Mode::empty(),
    )?;
    Ok(rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?)
}

/// Puts `bytes` (a file with `mode`) or a link to `bytes` at `name`, replacing a file or link
/// there in one rename.
pub(crate) fn put_at(
    dir: &OwnedFd,
    name: &[u8],
    kind: Kind,
    bytes: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    let temp = temp_name();
    match kind {
        Kind::Symlink => {
            let target = CString::new(bytes).map_err(std::io::Error::other)?;
            rustix::fs::symlinkat(target.as_c_str(), dir, temp.as_bytes())?;
        }
        Kind::File => {
            let fd = rustix::fs::openat(
                dir,
                temp.as_bytes(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            let mut file = std::fs::File::from(fd);
            let written = file
                .write_all(bytes)
                .and_then(|()| {
                    rustix::fs::fchmod(file.as_fd(), Mode::from_raw_mode(mode)).map_err(Into::into)
                })
                .and_then(|()| file.sync_data());
            if let Err(error) = written {
                let _ = rustix::fs::unlinkat(dir, temp.as_bytes(), AtFlags::empty());
                return Err(error);
            }
        }
        Kind::Dir => return Err(std::io::Error::other("a directory has no content to put")),
    }
    if let Err(error) = rustix::fs::renameat(dir, temp.as_bytes(), dir, name) {
        let _ = rustix::fs::unlinkat(dir, temp.as_bytes(), AtFlags::empty());
        return Err(error.into());
    }
    Ok(())
}

/// A temporary name the walkers never show: `.tackle-` + 12 characters + `.tmp`.
fn temp_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = format!(
        "{}-{}-{:?}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
    );
    let hash = blake3::hash(seed.as_bytes()).to_hex();
    format!(".tackle-{}.tmp", &hash[..12])
}

fn errno(what: &str, error: Errno) -> SnapshotError {
    SnapshotError::Io {
        what: what.into(),
        source: error.into(),
    }
}
