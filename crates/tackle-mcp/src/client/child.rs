//! Child MCP server processes: the nesting marker, their own process group, and death with
//! the parent.
//!
//! - Every child gets [`DEPTH_ENV`] set to this process's depth plus one, and no child deeper
//!   than [`MAX_DEPTH`] is started ([`ConnectError::Nested`]): a tackle started as an MCP server
//!   starts no MCP servers of its own. So a
//!   configuration that names tackle itself (directly or through a wrapper such as `sh -c` or
//!   `npx`) yields one extra tackle, not an endless chain.
//! - A child leads its own process group. When its connection ends (or is dropped, or the
//!   runtime shuts down) the whole group gets SIGKILL, so a wrapper's own children go too.
//! - On Linux a child also gets SIGKILL when the thread that started it exits (the parent
//!   death signal), which covers a parent killed with SIGKILL, where no destructor runs. Its own
//!   children then see their stdin close, which is how a stdio MCP server learns to exit.
//!
//! [`ConnectError::Nested`]: super::ConnectError::Nested

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The environment variable that tells a child MCP server how deeply it is nested: `1` for a
/// server that tackle started, `2` for one that server started, and so on.
pub const DEPTH_ENV: &str = "TACKLE_MCP_DEPTH";

/// The deepest a child MCP server may be nested: 1, so only a tackle that no tackle started
/// starts servers.
pub const MAX_DEPTH: u32 = 1;

/// This process's nesting depth from [`DEPTH_ENV`]: 0 when it is unset. A value that is set but
/// not a number counts as [`MAX_DEPTH`], so a damaged marker never allows more servers.
pub fn nesting_depth() -> u32 {
    match std::env::var(DEPTH_ENV) {
        Err(std::env::VarError::NotPresent) => 0,
        Ok(text) if text.trim().is_empty() => 0,
        Ok(text) => text.trim().parse().unwrap_or(MAX_DEPTH),
        Err(std::env::VarError::NotUnicode(_)) => MAX_DEPTH,
    }
}

/// True when a process at `depth` may start child servers (they would be at `depth + 1`).
pub fn may_start_servers(depth: u32) -> bool {
    depth < MAX_DEPTH
}

/// The command that starts a child server: `program` with `args` and `env` on top of this
/// process's environment, the nesting marker, its own process group, and (on Linux) the
/// parent death signal.
pub(crate) fn command(
    program: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    depth: u32,
) -> tokio::process::Command {
    debug_assert!(may_start_servers(depth));
    let mut command = std::process::Command::new(program);
    command
        .args(args)
        .envs(env)
        .env(DEPTH_ENV, (depth + 1).to_string());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    die_with_parent(&mut command);
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    command
}

/// The process groups of the children that are alive, for [`kill_child_servers`].
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Kills the whole process group of every child server still alive, at once. For a process
/// about to exit without dropping its connections (whose drop would do it): the parent death
/// signal reaches only the children themselves, not what they started.
pub fn kill_child_servers() {
    let groups = std::mem::take(&mut *LIVE_GROUPS.lock().unwrap_or_else(PoisonError::into_inner));
    for pgid in groups {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// Kills a child's whole process group when dropped.
#[derive(Debug)]
pub(crate) struct ChildGroup {
    pgid: i32,
}

impl ChildGroup {
    /// The group led by the child with process id `pid` (see [`command`]).
    pub(crate) fn led_by(pid: Option<u32>) -> Option<Self> {
        let pgid = i32::try_from(pid?).ok().filter(|&pgid| pgid > 1)?;
        LIVE_GROUPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pgid);
        Some(Self { pgid })
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        LIVE_GROUPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.pgid);
        // Synchronous, so it happens even while the runtime shuts down; a group that is gone
        // already is fine.
        let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
    }
}

/// Asks Linux to SIGKILL the child when the thread that spawned it exits. Tokio spawns from
/// runtime threads, which live as long as the runtime, so in practice this is the parent's exit.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = nix::unistd::getpid();
    // SAFETY: the hook runs in the forked child before exec. It only makes the prctl and getppid
    // system calls, which are async-signal-safe; it allocates nothing and takes no locks.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            // The parent may have died before the prctl call; then nobody will send the signal.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::other("the parent exited"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut std::process::Command) {}
