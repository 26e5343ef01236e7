//! The code that runs in the forked child before `exec`: namespaces, read-only binds, the
//! Landlock domain and the seccomp filter.
//!
//! Everything here runs after `fork` in a copy of a multi-threaded process, so it only makes
//! system calls: no allocation, no locks, no formatting. What it needs (the ruleset's file
//! descriptor, the compiled filter, the map lines, the paths as C strings) is built by the
//! parent in [`ChildPlan`].
//!
//! With namespaces the child becomes three processes:
//!
//! - **the waiter** (the process the parent spawned, whose PID it knows): it makes the user, PID
//!   and mount namespaces, mounts the protected paths read-only, forks the init, and exits as
//!   the init exits (re-raising a signal the shell died of). It ignores SIGTERM, so a group stop
//!   reaches the init and the shell; SIGKILL kills it, and the kernel then kills the init.
//! - **the init** (PID 1 of the new namespace): it forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT
//!   to every process of the namespace, reaps orphans, and when the shell exits gives the rest
//!   [`LINGER_MS`] after a SIGTERM before it exits. Its exit kills whatever is left: nothing the
//!   call started outlives it, whatever its session, group or environment.
//! - **the shell** (PID 2): it applies Landlock and seccomp and returns to `exec`.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};

/// How long the processes left when the shell exits get after SIGTERM, before SIGKILL.
pub(crate) const LINGER_MS: u64 = 200;

/// What the child applies, built by the parent.
#[derive(Default)]
pub(crate) struct ChildPlan {
    /// User, PID and mount namespaces.
    pub(crate) namespaces: Option<Namespaces>,
    /// The Landlock ruleset to enforce.
    pub(crate) ruleset: Option<OwnedFd>,
    /// The seccomp filter to install.
    pub(crate) filter: Option<seccompiler::BpfProgram>,
}

/// The namespaces' settings.
#[derive(Debug)]
pub(crate) struct Namespaces {
    /// `/proc/self/uid_map`'s content: this user mapped to itself.
    pub(crate) uid_map: Vec<u8>,
    /// `/proc/self/gid_map`'s content.
    pub(crate) gid_map: Vec<u8>,
    /// Paths bound onto themselves, in order: each becomes a mount point, which cannot be
    /// renamed or removed; read-only ones cannot be written either.
    pub(crate) binds: Vec<Bind>,
}

/// A path bound onto itself in the new mount namespace.
#[derive(Debug)]
pub(crate) struct Bind {
    /// The path.
    pub(crate) path: CString,
    /// The mount flags a remount must keep (a user namespace may not drop them).
    pub(crate) keep: libc::c_ulong,
    /// Whether it is remounted read-only.
    pub(crate) read_only: bool,
}

impl std::fmt::Debug for ChildPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildPlan")
            .field("namespaces", &self.namespaces)
            .field("ruleset", &self.ruleset)
            .field("filter_len", &self.filter.as_ref().map(Vec::len))
            .finish()
    }
}

// SAFETY: the plan is only read, by the parent and (after fork) by the child.
unsafe impl Sync for ChildPlan {}

impl ChildPlan {
    /// Whether the plan does anything.
    pub(crate) fn is_empty(&self) -> bool {
        self.namespaces.is_none() && self.ruleset.is_none() && self.filter.is_none()
    }

    /// Applies the plan in the forked child. With namespaces, only the shell returns.
    ///
    /// # Safety
    /// Call only in a child between `fork` and `exec` (a `pre_exec` hook).
    pub(crate) unsafe fn apply(&self) -> io::Result<()> {
        if let Some(namespaces) = &self.namespaces {
            // SAFETY: we are in the forked child, as the caller promised.
            unsafe { enter_namespaces(namespaces)? };
        }
        if self.ruleset.is_some() || self.filter.is_some() {
            // SAFETY: prctl with integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(ruleset) = &self.ruleset {
            // SAFETY: the ruleset descriptor is open (the parent keeps the plan alive).
            let done =
                unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) };
            if done != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(filter) = &self.filter {
            seccompiler::apply_filter(filter)
                .map_err(|_| io::Error::other("the seccomp filter could not be installed"))?;
        }
        Ok(())
    }
}

const FORWARDED: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// Makes the namespaces and the three processes; returns only in the shell.
unsafe fn enter_namespaces(namespaces: &Namespaces) -> io::Result<()> {
    // SAFETY (whole function): only system calls on memory the plan owns.
    unsafe {
        // Handlers inherited from the host (tokio's) must never run here: they would write to
        // the host's own signal pipe.
        for signal in 1..libc::SIGRTMAX() {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWPID;
        if !namespaces.binds.is_empty() {
            flags |= libc::CLONE_NEWNS;
        }
        if libc::unshare(flags) != 0 {
            return Err(io::Error::last_os_error());
        }
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &namespaces.uid_map)?;
        write_file(c"/proc/self/gid_map", &namespaces.gid_map)?;
        if !namespaces.binds.is_empty() {
            let none = std::ptr::null::<libc::c_char>();
            if libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            for bind in &namespaces.binds {
                let path = bind.path.as_ptr();
                if libc::mount(
                    path,
                    path,
                    none,
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                if bind.read_only
                    && libc::mount(
                        none,
                        path,
                        none,
                        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | bind.keep,
                        std::ptr::null(),
                    ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        let mut status = [0 as libc::c_int; 2];
        if libc::pipe2(status.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        for signal in FORWARDED {
            libc::signal(signal, libc::SIG_IGN);
        }
        let init = libc::fork();
        if init < 0 {
            return Err(io::Error::last_os_error());
        }
        if init > 0 {
            close_all_but(status[0]);
            waiter(init, status[0]);
        }
        // The init, PID 1 of the new namespace.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        for signal in FORWARDED {
            let handler: extern "C" fn(libc::c_int) = forward;
            libc::signal(signal, handler as libc::sighandler_t);
        }
        let shell = libc::fork();
        if shell < 0 {
            libc::_exit(127);
        }
        if shell > 0 {
            close_all_but(status[1]);
            init_loop(shell, status[1]);
        }
        // The shell.
        libc::close(status[0]);
        libc::close(status[1]);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        for signal in FORWARDED {
            libc::signal(signal, libc::SIG_DFL);
        }
        Ok(())
    }
}

/// The init's signal handler: the signal goes to every other process of the namespace.
extern "C" fn forward(signal: libc::c_int) {
    // SAFETY: kill is async-signal-safe.
    unsafe {
        libc::kill(-1, signal);
    }
}

/// The waiter: waits for the init and exits the same way.
unsafe fn waiter(init: libc::pid_t, status_pipe: libc::c_int) -> ! {
    // SAFETY (whole function): system calls only.
    unsafe {
        let mut status = 0;
        loop {
            let done = libc::waitpid(init, &mut status, 0);
            if done == init {
                break;
            }
            if done < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        let mut signal = [0u8; 1];
        let died_of = if libc::WIFSIGNALED(status) {
            libc::WTERMSIG(status)
        } else if libc::read(status_pipe, signal.as_mut_ptr().cast(), 1) == 1 {
            libc::c_int::from(signal[0])
        } else {
            0
        };
        if died_of > 0 {
            libc::signal(died_of, libc::SIG_DFL);
            libc::kill(libc::getpid(), died_of);
            libc::_exit(128 + died_of);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// The init: reaps every process until the shell exits, then stops the rest and exits as the
/// shell did (a signal travels through `status_pipe`, since PID 1 cannot die of one it sends
/// itself).
unsafe fn init_loop(shell: libc::pid_t, status_pipe: libc::c_int) -> ! {
    // SAFETY (whole function): system calls only.
    unsafe {
        let mut shell_status = 0;
        loop {
            let mut status = 0;
            let done = libc::waitpid(-1, &mut status, 0);
            if done == shell {
                shell_status = status;
                break;
            }
            if done < 0 && *libc::__errno_location() == libc::ECHILD {
                break;
            }
        }
        if libc::kill(-1, 0) == 0 {
            libc::kill(-1, libc::SIGTERM);
            let step = libc::timespec {
                tv_sec: 0,
                tv_nsec: 5_000_000,
            };
            for _ in 0..LINGER_MS / 5 {
                while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
                if libc::kill(-1, 0) != 0 {
                    break;
                }
                libc::nanosleep(&step, std::ptr::null_mut());
            }
        }
        if libc::WIFSIGNALED(shell_status) {
            let signal = libc::WTERMSIG(shell_status);
            let byte = [u8::try_from(signal).unwrap_or(0)];
            libc::write(status_pipe, byte.as_ptr().cast(), 1);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(shell_status))
    }
}

/// Closes every descriptor except `keep`.
unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: close_range and close on integers.
    unsafe {
        let max = libc::c_uint::MAX;
        let keep = keep as libc::c_uint;
        let low = if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0, keep - 1, 0)
        } else {
            0
        };
        let high = libc::syscall(libc::SYS_close_range, keep + 1, max, 0);
        if low != 0 || high != 0 {
            for fd in 0..4096 {
                if fd != keep as libc::c_int {
                    libc::close(fd);
                }
            }
        }
    }
}

/// Writes `bytes` to the file at `path`.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: open, write and close on a valid C string and buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(error);
        }
        Ok(())
    }
}

/// The Landlock ABI version, or 0.
pub(crate) fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query, with no ruleset attributes.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).unwrap_or(0)
}

/// Whether this kernel has seccomp filters.
pub(crate) fn seccomp_available() -> bool {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Whether a child can make the namespaces and `binds` in them: forks one that tries and exits.
pub(crate) fn probe_namespaces(binds: Vec<Bind>) -> io::Result<()> {
    use std::os::unix::process::CommandExt as _;
    let plan = ChildPlan {
        namespaces: Some(Namespaces::of_current_user(binds)),
        ..ChildPlan::default()
    };
    let mut command = std::process::Command::new("/bin/true");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: the hook applies the plan (system calls only) and exits.
    unsafe {
        command.pre_exec(move || {
            plan.apply()?;
            libc::_exit(0)
        });
    }
    let status = command.spawn()?.wait()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("the probe ended with {status}")))
    }
}

impl Namespaces {
    /// Namespaces mapping this user and group to themselves, with `binds`.
    pub(crate) fn of_current_user(binds: Vec<Bind>) -> Self {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            binds,
        }
    }
}
