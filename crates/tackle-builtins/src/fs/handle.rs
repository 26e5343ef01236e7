//! Filesystem work by descriptor, not by name: what makes a checked path the path that is
//! written, whatever another process does meanwhile.
//!
//! A file tool resolves a path (following symlinks to the real location), asks permission for
//! that real location, then writes. Between the two, another process could swap a directory on
//! the way for a symlink to somewhere else; a write by name would follow it. So every operation
//! here opens the file's *directory* by its canonical path with no symlink allowed anywhere on
//! the way (`openat2` with `RESOLVE_NO_SYMLINKS`; where the kernel lacks it, `O_NOFOLLOW` and a
//! check of the opened directory's real path), then works relative to that open directory:
//! the file is opened with `O_NOFOLLOW`, the temporary file is created in that directory, and the
//! rename happens within it. A swap after the open changes nothing: the descriptor is the
//! directory that was checked.
//!
//! The same open directory carries the cross-process lock: `flock` on it, held from the
//! compare-and-swap check to the rename, so two processes (two `tackle call`s, two servers)
//! cannot both pass the check and both write. Locking the directory rather than a lock file
//! leaves nothing behind in the user's tree and needs no shared place every process agrees on.
//!
//! Files are opened with `O_NONBLOCK` and their type is checked on the descriptor: a FIFO, a
//! socket or a device is refused before anything reads from it, and every read stops at its
//! limit plus one byte, whatever the size the metadata claims.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags, RenameFlags, ResolveFlags};

/// Longest path accepted, in bytes (Linux's `PATH_MAX`).
pub(crate) const MAX_PATH_BYTES: usize = 4096;
/// Longest single path component accepted, in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 255;

/// The prefix and suffix of temporary files; walkers never show such names.
pub(crate) const TEMP_PREFIX: &str = ".tackle-";
pub(crate) const TEMP_SUFFIX: &str = ".tmp";

/// Temporary files older than this, in a directory a write touches, are left over from a crash
/// and are removed.
pub(crate) const STALE_TEMP_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// True for the name of one of tackle's temporary files.
pub(crate) fn is_temp_name(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    bytes.starts_with(TEMP_PREFIX.as_bytes())
        && bytes.ends_with(TEMP_SUFFIX.as_bytes())
        && bytes.len() == TEMP_PREFIX.len() + TEMP_RANDOM + TEMP_SUFFIX.len()
}

/// Random characters in a temporary file's name.
const TEMP_RANDOM: usize = 12;

/// What a path names, when it is not a regular file or a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialKind {
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

impl SpecialKind {
    /// How a message names it.
    pub fn describe(self) -> &'static str {
        match self {
            SpecialKind::Fifo => "a named pipe (FIFO)",
            SpecialKind::Socket => "a socket",
            SpecialKind::CharDevice => "a character device",
            SpecialKind::BlockDevice => "a block device",
        }
    }

    fn of(file_type: std::fs::FileType) -> Option<Self> {
        if file_type.is_fifo() {
            Some(SpecialKind::Fifo)
        } else if file_type.is_socket() {
            Some(SpecialKind::Socket)
        } else if file_type.is_char_device() {
            Some(SpecialKind::CharDevice)
        } else if file_type.is_block_device() {
            Some(SpecialKind::BlockDevice)
        } else {
            None
        }
    }
}

/// Why a descriptor-level operation failed.
#[derive(Debug)]
pub(crate) enum HandleError {
    /// The name is a directory.
    IsDirectory,
    /// The name is a FIFO, socket or device.
    Special(SpecialKind),
    /// A symlink appeared where the checked path had none: the path changed since it was checked.
    Relinked,
    /// The file holds more than the limit.
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// Anything else.
    Io(io::Error),
}

impl From<io::Error> for HandleError {
    fn from(error: io::Error) -> Self {
        HandleError::Io(error)
    }
}

impl From<rustix::io::Errno> for HandleError {
    fn from(errno: rustix::io::Errno) -> Self {
        HandleError::Io(errno.into())
    }
}

/// A directory opened by its canonical path, with no symlink on the way.
pub(crate) struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens the directory at `path` (canonical), refusing any symlink on the way. A symlink
    /// found there means the path changed since it was resolved: [`HandleError::Relinked`].
    pub(crate) fn open(path: &Path) -> Result<Dir, HandleError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(rustix::fs::CWD, path, flags, Mode::empty(), resolve) {
            Ok(fd) => Ok(Dir {
                fd,
                path: path.to_path_buf(),
            }),
            Err(rustix::io::Errno::LOOP) | Err(rustix::io::Errno::XDEV) => {
                Err(HandleError::Relinked)
            }
            Err(rustix::io::Errno::NOSYS) | Err(rustix::io::Errno::PERM) => {
                Self::open_and_check(path)
            }
            Err(errno) => Err(errno.into()),
        }
    }

    /// Without `openat2`: open with `O_NOFOLLOW` (the last component), then check that the
    /// opened directory is really at `path` (the components before it).
    fn open_and_check(path: &Path) -> Result<Dir, HandleError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd = match rustix::fs::openat(rustix::fs::CWD, path, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::LOOP) => return Err(HandleError::Relinked),
            Err(errno) => return Err(errno.into()),
        };
        let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        match std::fs::read_link(link) {
            Ok(real) if real == path => Ok(Dir {
                fd,
                path: path.to_path_buf(),
            }),
            Ok(_) => Err(HandleError::Relinked),
            Err(error) => Err(error.into()),
        }
    }

    /// The canonical path it was opened by.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Holds an exclusive advisory lock on the directory until the returned guard drops: the
    /// cross-process part of a compare-and-swap. Blocks while another holder has it.
    pub(crate) fn lock(&self) -> Result<DirLock<'_>, HandleError> {
        rustix::fs::flock(&self.fd, FlockOperation::LockExclusive)?;
        Ok(DirLock { dir: self })
    }

    /// Opens `name` in this directory for reading, without following a symlink and without
    /// blocking on a FIFO; only a regular file is returned. `None` when it does not exist.
    pub(crate) fn open_regular(&self, name: &OsStr) -> Result<Option<File>, HandleError> {
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => return Err(HandleError::Relinked),
            Err(rustix::io::Errno::NXIO) => return Err(HandleError::Special(SpecialKind::Socket)),
            Err(errno) => return Err(errno.into()),
        };
        let file = File::from(fd);
        let file_type = file.metadata()?.file_type();
        if file_type.is_dir() {
            return Err(HandleError::IsDirectory);
        }
        if let Some(kind) = SpecialKind::of(file_type) {
            return Err(HandleError::Special(kind));
        }
        // Regular files never block; clear the flag so reads behave as usual.
        rustix::fs::fcntl_setfl(&file, OFlags::empty())?;
        Ok(Some(file))
    }

    /// The whole of `name`, at most `limit` bytes; `None` when it does not exist.
    pub(crate) fn read(&self, name: &OsStr, limit: u64) -> Result<Option<Vec<u8>>, HandleError> {
        let Some(file) = self.open_regular(name)? else {
            return Ok(None);
        };
        read_limited(file, limit).map(Some)
    }

    /// What the symlink `name` in this directory points to; `None` when it is not a symlink.
    pub(crate) fn read_link(&self, name: &OsStr) -> Option<PathBuf> {
        if !self.is_symlink(name) {
            return None;
        }
        rustix::fs::readlinkat(&self.fd, name, Vec::new())
            .ok()
            .map(|target| PathBuf::from(std::ffi::OsStr::from_bytes(target.as_bytes()).to_owned()))
    }

    /// Whether `name` is a symlink in this directory.
    pub(crate) fn is_symlink(&self, name: &OsStr) -> bool {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode).is_symlink())
    }

    /// Writes `bytes` to a new temporary file in this directory and renames it over `name`,
    /// with `mode` (and, when possible, `owner`). The caller holds the lock and has checked the
    /// current content. On failure nothing is left behind.
    pub(crate) fn replace(
        &self,
        name: &OsStr,
        bytes: &[u8],
        mode: u32,
        owner: Option<(u32, u32)>,
        fail_before_rename: bool,
    ) -> Result<(), HandleError> {
        let (temp_name, file) = self.create_temp(mode)?;
        let written = (|| -> Result<(), HandleError> {
            let mut file = file;
            file.write_all(bytes)?;
            // The umask may have cleared bits at creation; set the exact mode.
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            if let Some((uid, gid)) = owner {
                // Keeping the owner needs privileges; without them the writer owns the file.
                let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
            }
            file.sync_all()?;
            if fail_before_rename {
                return Err(io::Error::other("injected failure").into());
            }
            rustix::fs::renameat(&self.fd, &temp_name, &self.fd, name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, &temp_name, AtFlags::empty());
        }
        written?;
        let _ = rustix::fs::fsync(&self.fd);
        Ok(())
    }

    /// Creates a temporary file with a short random name (so a target of any length the
    /// filesystem accepts can be replaced), exclusively.
    fn create_temp(&self, mode: u32) -> Result<(std::ffi::OsString, File), HandleError> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for _ in 0..16 {
            let name = temp_name();
            match rustix::fs::openat(
                &self.fd,
                name.as_os_str(),
                flags,
                Mode::from_bits_truncate(mode),
            ) {
                Ok(fd) => return Ok((name, File::from(fd))),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(errno) => return Err(errno.into()),
            }
        }
        Err(io::Error::other("no free temporary file name").into())
    }

    /// Removes `name` (a file or a symlink, never followed).
    pub(crate) fn remove(&self, name: &OsStr) -> Result<(), HandleError> {
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?;
        let _ = rustix::fs::fsync(&self.fd);
        Ok(())
    }

    /// Moves `name` to `to_name` in `to`, refusing to replace anything there (`RENAME_NOREPLACE`).
    pub(crate) fn move_to(
        &self,
        name: &OsStr,
        to: &Dir,
        to_name: &OsStr,
    ) -> Result<(), HandleError> {
        rustix::fs::renameat_with(&self.fd, name, &to.fd, to_name, RenameFlags::NOREPLACE)?;
        let _ = rustix::fs::fsync(&self.fd);
        let _ = rustix::fs::fsync(&to.fd);
        Ok(())
    }

    /// Removes this directory's temporary files older than [`STALE_TEMP_AGE`]: what a crash
    /// between creating and renaming one left behind.
    pub(crate) fn sweep_stale_temps(&self) {
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !is_temp_name(&name) {
                continue;
            }
            let stale = entry
                .metadata()
                .ok()
                .filter(|meta| meta.is_file())
                .and_then(|meta| meta.modified().ok())
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age >= STALE_TEMP_AGE);
            if stale {
                let _ = rustix::fs::unlinkat(&self.fd, &name, AtFlags::empty());
            }
        }
    }
}

/// An exclusive lock on a directory; dropping it unlocks.
pub(crate) struct DirLock<'d> {
    dir: &'d Dir,
}

impl Drop for DirLock<'_> {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.dir.fd, FlockOperation::Unlock);
    }
}

/// Reads `file` to its end, refusing more than `limit` bytes.
pub(crate) fn read_limited(file: File, limit: u64) -> Result<Vec<u8>, HandleError> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(HandleError::TooLarge { limit });
    }
    Ok(bytes)
}

/// The mode and owner a replacement keeps: the existing file's, else `0o666` less the umask
/// (applied at creation) and the writer's own.
pub(crate) fn kept_mode(existing: Option<&std::fs::Metadata>) -> (u32, Option<(u32, u32)>) {
    match existing {
        Some(meta) => (meta.mode() & 0o7777, Some((meta.uid(), meta.gid()))),
        None => (0o666 & !umask(), None),
    }
}

/// The process umask, read without changing it (Linux exposes it in `/proc/self/status`).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Umask:"))
                .and_then(|value| u32::from_str_radix(value.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

fn temp_name() -> std::ffi::OsString {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut random = [0u8; TEMP_RANDOM];
    if getrandom(&mut random).is_err() {
        // A counter and the clock still make collisions unlikely; `O_EXCL` catches the rest.
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()) as u64;
        for (i, byte) in random.iter_mut().enumerate() {
            *byte = (seed >> ((i % 8) * 8)) as u8 ^ i as u8;
        }
    }
    let mut name = String::from(TEMP_PREFIX);
    name.extend(
        random
            .iter()
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char),
    );
    name.push_str(TEMP_SUFFIX);
    name.into()
}

fn getrandom(buffer: &mut [u8]) -> io::Result<()> {
    rustix::rand::getrandom(buffer, rustix::rand::GetRandomFlags::empty())
        .map(drop)
        .map_err(Into::into)
}

/// Refuses a path too long for any filesystem before anything else looks at it.
pub(crate) fn check_length(path: &str) -> Result<(), String> {
    if path.len() > MAX_PATH_BYTES {
        return Err(format!(
            "The path is {} bytes long; paths are at most {MAX_PATH_BYTES} bytes.",
            path.len()
        ));
    }
    if let Some(long) = path.split('/').find(|part| part.len() > MAX_NAME_BYTES) {
        let shown: String = long.chars().take(40).collect();
        return Err(format!(
            "The path has a name of {} bytes (`{shown}…`); a name is at most {MAX_NAME_BYTES} \
             bytes.",
            long.len()
        ));
    }
    Ok(())
}
