//! The change watcher: one inotify instance with a watch on every tracked directory, so a
//! snapshot re-reads only the directories something happened in.
//!
//! The kernel queues an event while the operation that caused it runs, so once a call's
//! processes have finished, every change they made is in the queue: draining it without
//! blocking is enough, no settling delay. A full queue (an overflow), a watch that cannot be
//! added (the user's watch limit) or an unknown watch all fall back to a full rescan, which is
//! always correct, only slower. Writes through a shared memory mapping raise no event; the same
//! is true of git's file-system monitor.

use std::collections::{BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

use super::RelPath;

/// A directory: `None` is the Location's root.
pub(crate) type DirKey = Option<RelPath>;

/// What happened since the last drain.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Dirty {
    /// These directories' entries changed (or their children's contents or modes).
    Dirs(BTreeSet<DirKey>),
    /// Events were lost: everything must be scanned.
    Everything,
}

pub(crate) struct Watcher {
    fd: OwnedFd,
    by_wd: HashMap<i32, DirKey>,
    by_dir: HashMap<DirKey, i32>,
}

/// The events that can change what a snapshot records.
fn mask() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
        | WatchFlags::DONT_FOLLOW
        | WatchFlags::EXCL_UNLINK
}

impl Watcher {
    /// A watcher, or `None` where inotify is not available.
    pub(crate) fn new() -> Option<Self> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
        Some(Self {
            fd,
            by_wd: HashMap::new(),
            by_dir: HashMap::new(),
        })
    }

    /// Watches the directory `dir` at `path`; false when the watch could not be added.
    pub(crate) fn watch(&mut self, path: &Path, dir: &DirKey) -> bool {
        match inotify::add_watch(&self.fd, path, mask()) {
            Ok(wd) => {
                // The same directory seen under a new name (it was moved): the watch follows it.
                if let Some(old) = self.by_wd.insert(wd, dir.clone())
                    && old != *dir
                    && self.by_dir.get(&old) == Some(&wd)
                {
                    self.by_dir.remove(&old);
                }
                self.by_dir.insert(dir.clone(), wd);
                true
            }
            // Gone already, or not a directory any more: its parent's event covers it.
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => true,
            Err(_) => false,
        }
    }

    /// Forgets `dir` and every directory under it (they left the tree). Their watches stay
    /// until the kernel drops them or one of them reports again, which removes it then.
    pub(crate) fn forget(&mut self, dir: &RelPath) {
        let gone: Vec<RelPath> = self
            .by_dir
            .keys()
            .flatten()
            .filter(|key| *key == dir || key.is_under(dir))
            .cloned()
            .collect();
        for key in gone {
            let key = Some(key);
            if let Some(wd) = self.by_dir.remove(&key)
                && self.by_wd.get(&wd) == Some(&key)
            {
                self.by_wd.remove(&wd);
            }
        }
    }

    /// Everything queued since the last drain.
    pub(crate) fn drain(&mut self) -> Dirty {
        let mut dirs = BTreeSet::new();
        let mut buffer = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut stale = Vec::new();
        let mut reader = inotify::Reader::new(&self.fd, &mut buffer);
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => break,
                Err(_) => return Dirty::Everything,
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                return Dirty::Everything;
            }
            let wd = event.wd();
            if flags.contains(ReadFlags::IGNORED) {
                if let Some(dir) = self.by_wd.remove(&wd)
                    && self.by_dir.get(&dir) == Some(&wd)
                {
                    self.by_dir.remove(&dir);
                }
                continue;
            }
            match self.by_wd.get(&wd) {
                Some(dir) => {
                    dirs.insert(dir.clone());
                }
                None => stale.push(wd),
            }
        }
        for wd in stale {
            let _ = inotify::remove_watch(&self.fd, wd);
        }
        Dirty::Dirs(dirs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_in_a_watched_directory_is_queued_before_the_writer_returns() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        let mut watcher = Watcher::new().unwrap();
        let sub = Some(RelPath::new(&b"sub"[..]).unwrap());
        assert!(watcher.watch(root.path(), &None));
        assert!(watcher.watch(&root.path().join("sub"), &sub));
        assert_eq!(watcher.drain(), Dirty::Dirs(BTreeSet::new()));
        std::fs::write(root.path().join("sub/f"), "x").unwrap();
        assert_eq!(watcher.drain(), Dirty::Dirs(BTreeSet::from([sub.clone()])));
        // A directory that left the tree reports nothing any more.
        watcher.forget(sub.as_ref().unwrap());
        std::fs::write(root.path().join("sub/g"), "x").unwrap();
        assert_eq!(watcher.drain(), Dirty::Dirs(BTreeSet::new()));
    }
}
