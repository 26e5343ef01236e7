//! The change watcher: every path the operating system reports changed is marked dirty, and a
//! call first waits until every change made before it has been reported.
//!
//! Waiting uses a cookie: the call creates and removes a file of its own in the Location root
//! (a temporary-file name, which walkers never show) and waits for the watcher to report it.
//! The kernel queues one watcher's events in order, so once the cookie is reported, so is every
//! change made before it. A lost event (the kernel's queue overflowed) asks for a new walk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use notify::{Event, EventKind, RecursiveMode, Watcher};

use crate::fs::handle::{TEMP_PREFIX, TEMP_SUFFIX};

/// How long a call waits for its cookie before it scans instead.
const SYNC_TIMEOUT: Duration = Duration::from_secs(2);

/// The changes reported since they were last taken.
#[derive(Default)]
pub(crate) struct Changes {
    /// Paths reported changed.
    pub(crate) paths: Vec<PathBuf>,
    /// True when events were lost: only a new walk is exact.
    pub(crate) lost: bool,
    /// The highest cookie reported.
    cookie: u64,
}

struct Shared {
    changes: Mutex<Changes>,
    reported: Condvar,
}

/// A recursive watch of one Location root.
pub(crate) struct Watch {
    root: PathBuf,
    shared: Arc<Shared>,
    next_cookie: AtomicU64,
    _watcher: notify::RecommendedWatcher,
}

/// The cookie file name for `number`: a temporary-file name of the right length.
fn cookie_name(number: u64) -> String {
    format!("{TEMP_PREFIX}ck{number:010}{TEMP_SUFFIX}")
}

fn cookie_number(name: &std::ffi::OsStr) -> Option<u64> {
    let name = name.to_str()?;
    let digits = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(TEMP_SUFFIX)?;
    digits.strip_prefix("ck")?.parse().ok()
}

impl Watch {
    /// Starts watching `root` (canonical) and everything below it.
    pub(crate) fn start(root: &Path) -> notify::Result<Self> {
        let shared = Arc::new(Shared {
            changes: Mutex::new(Changes::default()),
            reported: Condvar::new(),
        });
        let handler_shared = shared.clone();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
            // Opening or closing a file changes nothing (a write reports its own change), and
            // every walk opens thousands.
            if let Ok(Event {
                kind: EventKind::Access(_),
                ..
            }) = event
            {
                return;
            }
            let mut changes = handler_shared
                .changes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match event {
                Ok(event) => {
                    if event.need_rescan() {
                        changes.lost = true;
                    }
                    for path in event.paths {
                        if let Some(number) = path.file_name().and_then(cookie_number) {
                            changes.cookie = changes.cookie.max(number);
                            continue;
                        }
                        changes.paths.push(path);
                    }
                }
                Err(_) => changes.lost = true,
            }
            drop(changes);
            handler_shared.reported.notify_all();
        })?;
        watcher.watch(root, RecursiveMode::Recursive)?;
        Ok(Self {
            root: root.to_path_buf(),
            shared,
            next_cookie: AtomicU64::new(1),
            _watcher: watcher,
        })
    }

    /// Waits until every change made before this call is reported, then takes the changes
    /// reported so far. `None` when that could not be made sure of: calls then scan.
    pub(crate) fn sync(&self) -> Option<Changes> {
        let number = self.next_cookie.fetch_add(1, Ordering::Relaxed);
        let cookie = self.root.join(cookie_name(number));
        std::fs::write(&cookie, b"").ok()?;
        let _ = std::fs::remove_file(&cookie);
        let deadline = Instant::now() + SYNC_TIMEOUT;
        let mut changes = self
            .shared
            .changes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while changes.cookie < number {
            let left = deadline.checked_duration_since(Instant::now())?;
            changes = self
                .shared
                .reported
                .wait_timeout(changes, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let cookie = changes.cookie;
        let taken = std::mem::take(&mut *changes);
        changes.cookie = cookie;
        Some(taken)
    }

    /// Forgets the changes reported so far: a walk starting now sees them all.
    pub(crate) fn clear(&self) {
        let mut changes = self
            .shared
            .changes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let cookie = changes.cookie;
        *changes = Changes::default();
        changes.cookie = cookie;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cookie_names_are_temporary_file_names() {
        let name = super::cookie_name(42);
        assert!(crate::fs::handle::is_temp_name(std::ffi::OsStr::new(&name)));
        assert_eq!(super::cookie_number(std::ffi::OsStr::new(&name)), Some(42));
    }
}
