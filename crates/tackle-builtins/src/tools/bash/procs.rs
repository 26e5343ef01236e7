//! Finding a command's processes that left its process group (`setsid cmd &`), without
//! cgroups: through `/proc`, by the pipes they hold open and by an environment marker they
//! inherited.
//!
//! - [`pipe_holders`] finds the processes holding one of the capture's pipes: exactly what
//!   keeps a call's output open after its shell exited.
//! - [`marked`] finds the processes whose environment carries the call's [`MARKER_ENV`] value,
//!   which every process the shell starts inherits unless it clears its environment.
//!
//! Only processes of this user can be inspected (and killed). Without `/proc` (not Linux) both
//! find nothing, and the caller says so rather than claiming the processes were stopped.

use std::io;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The variable that marks every process of one bash call.
pub(crate) const MARKER_ENV: &str = "TACKLE_BASH_RUN";

/// A process found in `/proc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) pid: i32,
    /// Its command name (`comm`), as the kernel keeps it.
    pub(crate) name: String,
}

/// A value of [`MARKER_ENV`] unique to one call of this process.
pub(crate) fn new_marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The inode of the pipe behind `fd`, to find who else holds it.
pub(crate) fn pipe_inode(fd: impl AsFd) -> io::Result<u64> {
    let stat = nix::sys::stat::fstat(fd.as_fd()).map_err(io::Error::from)?;
    Ok(stat.st_ino)
}

/// Other processes that hold a descriptor on one of the pipes `inodes`.
pub(crate) fn pipe_holders(inodes: &[u64]) -> Vec<Found> {
    let links: Vec<String> = inodes.iter().map(|ino| format!("pipe:[{ino}]")).collect();
    scan(|dir| {
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| links.iter().any(|link| target.as_os_str() == link.as_str()))
        })
    })
}

/// Other processes whose environment holds `MARKER_ENV=marker`.
pub(crate) fn marked(marker: &str) -> Vec<Found> {
    let needle = format!("{MARKER_ENV}={marker}");
    scan(|dir| {
        let Ok(environ) = std::fs::read(dir.join("environ")) else {
            return false;
        };
        environ
            .split(|&byte| byte == 0)
            .any(|entry| entry == needle.as_bytes())
    })
}

/// Sends SIGKILL to each process, ignoring those already gone.
pub(crate) fn kill_all(found: &[Found]) {
    for process in found {
        let _ = kill(Pid::from_raw(process.pid), Signal::SIGKILL);
    }
}

/// The live processes other than this one whose `/proc/<pid>` directory passes `matches`.
fn scan(mut matches: impl FnMut(&Path) -> bool) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let this = std::process::id();
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        if pid == this || is_zombie(&dir) || !matches(&dir) {
            continue;
        }
        let Ok(pid) = i32::try_from(pid) else {
            continue;
        };
        let name = std::fs::read_to_string(dir.join("comm"))
            .map(|name| name.trim_end().to_owned())
            .unwrap_or_default();
        found.push(Found { pid, name });
    }
    found
}

/// True for a process that has exited and waits to be reaped: it holds nothing any more.
fn is_zombie(dir: &Path) -> bool {
    let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
        return true;
    };
    // `pid (comm) S …`: the state follows the last `)`, since the name may hold one.
    stat.rsplit_once(')')
        .is_none_or(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
}
