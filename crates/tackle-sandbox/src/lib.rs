//! The OS sandbox for every process tackle starts on a model's behalf.
//!
//! A permission prompt judges a command line; it cannot judge what `python3 -c "$X"` does. The
//! sandbox is the other half: the kernel refuses what the policy does not allow, whatever the
//! command is. A [`Policy`] (per agent, from the configuration) says what a command may write
//! (`read-only`, `workspace-write`, `off`) and reach on the network (`on`, `off`, an allow-list
//! through tackle's proxy). [`Sandboxes`] resolves it for one call into a [`Prepared`], and
//! every spawner (bash and its jobs, custom tools, hooks, formatters, and MCP and language
//! servers when configured) applies that to its command with [`Prepared::apply`].
//!
//! # The key decision: in-process, between fork and exec
//!
//! Nothing is re-executed and no helper binary is needed: the parent builds everything (the
//! Landlock ruleset's descriptor, the compiled seccomp filter, the namespace maps) and the
//! forked child only makes system calls before `exec` (see `child`). That keeps the cost of a
//! sandboxed `bash` call close to an unsandboxed one, works where bubblewrap is refused
//! (containers, AppArmor's user-namespace limits), and leaves one place that knows how.
//!
//! - **Landlock** enforces the filesystem: reads everywhere but the denied paths, writes only
//!   to the writable places. It only grants, so paths inside the Location (`.git/hooks`,
//!   `.git/config`, `.tackle/`) are protected by read-only bind mounts, which need namespaces.
//! - **seccomp** enforces the network's off switch (only Unix sockets), limits sockets to TCP
//!   under an allow-list (where Landlock's TCP rules let connections reach only the proxy), and
//!   refuses io_uring, which would bypass both.
//! - **User, PID and mount namespaces**, where unprivileged user namespaces work: the call's
//!   processes live in a PID namespace whose init ends with the shell, so nothing the call
//!   started outlives it (`setsid env -i …`, double forks). Without them the caller falls back
//!   to its marker search.
//!
//! When the platform cannot apply the policy, [`Prepared`] says so ([`Status::Unavailable`]):
//! the command runs unsandboxed with a footer saying why, or is refused, as configured. The
//! sandbox never turns itself off silently.
//!
//! Be careful when adding to `child`: it runs in a copy of a multi-threaded process, where an
//! allocation can deadlock. Build in the parent; only make system calls in the child.

mod bwrap;
#[cfg(target_os = "linux")]
mod child;
pub mod denial;
pub mod policy;
pub mod proxy;
#[cfg(target_os = "linux")]
mod rules;
mod sandboxes;
mod support;

pub use policy::{Backend, Mode, Network, Policy, Unavailable};
pub use sandboxes::{Confine, Prepared, Request, Sandboxes, Status, TEMP_MAX_AGE};
pub use support::{SIMULATE_NONE_ENV, Support};

/// The `bwrap` the bubblewrap backend would run, or why there is none that works here.
pub fn bubblewrap() -> Result<std::path::PathBuf, &'static str> {
    bwrap::find().map(|found| found.program.clone())
}

/// Why a sandbox could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The platform cannot apply the policy, and the policy says to refuse.
    #[error("the sandbox cannot be applied on this machine: {reason}")]
    Unavailable {
        /// Why.
        reason: String,
    },
    /// The Landlock ruleset could not be built.
    #[error("the Landlock ruleset could not be built: {0}")]
    Landlock(String),
    /// The seccomp filter could not be built.
    #[error("the seccomp filter could not be built: {0}")]
    Seccomp(String),
    /// The session's temp directory could not be made.
    #[error("the session's temp directory could not be made: {0}")]
    TempDir(String),
}
