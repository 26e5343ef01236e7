//! The process runner of the bash tool: spawn in a new process group, capture with bounded
//! memory, stop the whole group on timeout or cancellation.
//!
//! The shell runs as the leader of its own process group with stdin on `/dev/null`, or on a pipe
//! carrying a payload ([`run_with_stdin`]). Its stdout
//! and stderr are two pipes read concurrently into one [`Capture`], so the capture keeps the
//! order in which chunks arrived (the order between the two streams is exact only up to one read
//! of each).
//!
//! A run ends in one of three ways:
//!
//! - The shell exits. The pipes are then drained for at most [`DRAIN`]. When a background
//!   process still holds them open after that, the group is killed with SIGKILL when
//!   [`KILL_BACKGROUND`] is set (the default), and so is every other process that holds the
//!   pipes (one that left the group with `setsid`, say); reading stops either way. A process
//!   that still holds them after that is reported by PID and name. Background processes that
//!   redirected their output elsewhere are left running.
//! - The timeout passes, or the cancellation token fires. The group gets SIGTERM, then SIGKILL
//!   after [`GRACE`], and the runner waits until no process of the group is left. Then every
//!   process carrying the call's marker ([`procs::MARKER_ENV`], inherited by all the shell
//!   starts) or holding its pipes gets SIGKILL too.
//! - The future is dropped mid-run (settlement drops the executor on cancellation). A guard then
//!   stops the group and the marked processes the same way, in the background.
//!
//! Processes that leave the group are found through `/proc` (see [`procs`]); one that also
//! cleared its environment and closed the pipes is out of reach without a cgroup.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write as _};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tackle_core::CancellationToken;
use tackle_core::thousands;
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::Child;

use super::procs::{self, Found};
use super::spool::{self, OpenSpool, SpoolPlace};

/// How long the pipes are drained after the shell exits.
pub(crate) const DRAIN: Duration = Duration::from_millis(250);

/// Whether background processes still holding the output open after [`DRAIN`] are killed. When
/// false they keep running and only the reading stops.
pub(crate) const KILL_BACKGROUND: bool = true;

/// The time between SIGTERM and SIGKILL when a group is stopped.
pub(crate) const GRACE: Duration = Duration::from_secs(3);

/// How long to wait for the group to vanish after SIGKILL before giving up.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// How often a stopping group is checked.
const POLL: Duration = Duration::from_millis(20);

/// How often live progress is sent, at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// How much of the output's end live progress shows.
pub(crate) const PROGRESS_BYTES: usize = 30 * 1024;

/// The size of each read from a pipe.
const READ_BYTES: usize = 64 * 1024;

/// The limits of a [`Capture`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CaptureLimits {
    /// Output up to this size is kept whole in memory and never spooled. It is also the size of
    /// the tail kept in memory once the output is larger.
    pub(crate) memory: usize,
    /// The start of a large output kept in memory.
    pub(crate) head: usize,
    /// Where spool files are created, and their caps; bytes past a file's cap reach only the
    /// in-memory tail.
    pub(crate) spool: SpoolPlace,
}

/// What to run.
#[derive(Debug)]
pub(crate) struct Spec {
    /// The shell.
    pub(crate) shell: PathBuf,
    /// The command line, passed to `shell -c`.
    pub(crate) command: String,
    /// The working directory.
    pub(crate) cwd: PathBuf,
    /// The whole environment of the shell.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// The wall-clock limit.
    pub(crate) timeout: Duration,
    /// Whether the shell dies with the spawning thread (Linux only).
    pub(crate) die_with_parent: bool,
    /// The capture limits.
    pub(crate) limits: CaptureLimits,
    /// The sandbox the shell runs under.
    pub(crate) sandbox: tackle_sandbox::Prepared,
}

/// How the group was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// SIGTERM was enough.
    Term,
    /// SIGKILL followed SIGTERM.
    TermThenKill,
    /// SIGKILL followed SIGTERM, and a process was still left when the runner gave up.
    Lingering,
}

/// How a run ended.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The captured output.
    pub(crate) capture: Captured,
    /// The shell's status, when it was collected.
    pub(crate) status: Option<ExitStatus>,
    /// True when the timeout passed.
    pub(crate) timed_out: bool,
    /// True when the cancellation token fired.
    pub(crate) cancelled: bool,
    /// How the group was stopped on timeout or cancellation.
    pub(crate) stop: Option<Stop>,
    /// True when background processes held the output open past [`DRAIN`].
    pub(crate) background: bool,
    /// Processes that still held the output open after they were sent SIGKILL (or, without
    /// `/proc`, none could be found): they are still running.
    pub(crate) survivors: Vec<Found>,
    /// True when something still held the output open at the end, whether or not it could be
    /// named in `survivors`.
    pub(crate) output_held: bool,
    /// The process group id (the shell's pid).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) pgid: i32,
}

/// Runs `spec`, sending the end of the output to `progress` at most every 250 ms.
pub(crate) async fn run(
    spec: Spec,
    cancel: &CancellationToken,
    progress: &(dyn Fn(&str) + Sync),
) -> io::Result<Finished> {
    run_with_stdin(spec, None, cancel, progress).await
}

/// Runs `spec` like [`run`], with `stdin` written to the shell's stdin and then closed. Without
/// a payload stdin is `/dev/null`. A command that exits without reading its stdin is not an
/// error: the rest of the payload is dropped.
pub(crate) async fn run_with_stdin(
    spec: Spec,
    stdin: Option<Vec<u8>>,
    cancel: &CancellationToken,
    progress: &(dyn Fn(&str) + Sync),
) -> io::Result<Finished> {
    let marker = procs::new_marker();
    let mut command = shell_command(&spec, &marker, stdin.is_some());
    let mut child = command.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the shell exited before it started"))?;
    let pgid = i32::try_from(pid).map_err(io::Error::other)?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout pipe"))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("no stderr pipe"))?;
    // Whoever else holds these pipes keeps the output open.
    let pipes: Vec<u64> = [procs::pipe_inode(&stdout), procs::pipe_inode(&stderr)]
        .into_iter()
        .flatten()
        .collect();
    if let Some(payload) = stdin {
        let mut pipe = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("no stdin pipe"))?;
        // Written in the background so a command that reads slowly (or never) cannot stall the
        // run; the pipe closes when the payload is written or the command is gone.
        tokio::spawn(async move {
            let _ = tokio::io::AsyncWriteExt::write_all(&mut pipe, &payload).await;
        });
    }
    let mut guard = GroupGuard {
        pgid,
        marker: marker.clone(),
        child: Some(child),
    };

    let deadline = tokio::time::Instant::now() + spec.timeout;
    let mut capture = Capture::new(spec.limits);
    let pump_done = CancellationToken::new();
    let stop_pump = CancellationToken::new();

    let pump = pump(
        &mut capture,
        stdout,
        stderr,
        &pump_done,
        &stop_pump,
        progress,
    );
    let control = async {
        let child = guard
            .child
            .as_mut()
            .expect("the child is kept until the end");
        let mut outcome = Control::default();
        tokio::select! {
            // A failed wait leaves the status unknown; the group is then stopped below.
            status = child.wait() => outcome.status = status.ok(),
            () = tokio::time::sleep_until(deadline) => outcome.timed_out = true,
            () = cancel.cancelled() => outcome.cancelled = true,
        }
        if outcome.status.is_some() {
            if !drained(&pump_done, DRAIN).await {
                outcome.background = true;
                if KILL_BACKGROUND {
                    signal_group(pgid, Signal::SIGKILL);
                    // Those that left the group but kept the output: found by the pipes.
                    procs::kill_all(&procs::pipe_holders(&pipes));
                    outcome.output_held = !drained(&pump_done, DRAIN).await;
                } else {
                    outcome.output_held = true;
                }
            }
        } else {
            let (status, stop) = stop_group(pgid, child).await;
            outcome.status = status;
            outcome.stop = Some(stop);
            // Everything it started goes, in the group or not.
            procs::kill_all(&procs::marked(&marker));
            procs::kill_all(&procs::pipe_holders(&pipes));
            outcome.output_held = !drained(&pump_done, DRAIN).await;
        }
        if outcome.output_held && KILL_BACKGROUND {
            outcome.survivors = procs::pipe_holders(&pipes);
        }
        stop_pump.cancel();
        outcome
    };
    let ((), outcome) = tokio::join!(pump, control);
    // The group is gone, or what is left was deliberately left running.
    guard.disarm();
    Ok(Finished {
        capture: capture.finish(),
        status: outcome.status,
        timed_out: outcome.timed_out,
        cancelled: outcome.cancelled,
        stop: outcome.stop,
        background: outcome.background,
        survivors: outcome.survivors,
        output_held: outcome.output_held,
        pgid,
    })
}

/// The shell running `spec.command`: its own process group, the call's environment plus
/// `marker`, stdout and stderr piped, stdin piped or `/dev/null`.
pub(crate) fn shell_command(
    spec: &Spec,
    marker: &str,
    stdin_piped: bool,
) -> tokio::process::Command {
    let mut command = spec.sandbox.shell_command(&spec.shell);
    command
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(procs::MARKER_ENV, marker)
        .stdin(if stdin_piped {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    if spec.die_with_parent {
        die_with_parent(&mut command);
    }
    // Last: the parent-death signal above is set on the process the runner waits for.
    spec.sandbox.apply_shell(&mut command);
    tokio::process::Command::from(command)
}

#[derive(Default)]
struct Control {
    status: Option<ExitStatus>,
    timed_out: bool,
    cancelled: bool,
    stop: Option<Stop>,
    background: bool,
    output_held: bool,
    survivors: Vec<Found>,
}

/// Waits until the pump finished, at most `bound`. True when it finished.
async fn drained(pump_done: &CancellationToken, bound: Duration) -> bool {
    tokio::time::timeout(bound, pump_done.cancelled())
        .await
        .is_ok()
}

/// Reads both pipes into `capture` until both close or `stop` fires.
async fn pump(
    capture: &mut Capture,
    mut stdout: impl AsyncRead + Unpin,
    mut stderr: impl AsyncRead + Unpin,
    done: &CancellationToken,
    stop: &CancellationToken,
    progress: &(dyn Fn(&str) + Sync),
) {
    let mut out_buf = vec![0u8; READ_BYTES];
    let mut err_buf = vec![0u8; READ_BYTES];
    let (mut out_open, mut err_open) = (true, true);
    let mut ticker = tokio::time::interval(PROGRESS_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shown = 0u64;
    while out_open || err_open {
        tokio::select! {
            read = stdout.read(&mut out_buf), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => capture.push(&out_buf[..n]),
            },
            read = stderr.read(&mut err_buf), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => capture.push(&err_buf[..n]),
            },
            _ = ticker.tick() => {
                if capture.total() != shown {
                    shown = capture.total();
                    progress(&capture.tail_text(PROGRESS_BYTES));
                }
            }
            () = stop.cancelled() => break,
        }
    }
    if capture.total() != shown {
        progress(&capture.tail_text(PROGRESS_BYTES));
    }
    done.cancel();
}

/// Sends `signal` to the group, ignoring a group that is already gone.
pub(crate) fn signal_group(pgid: i32, signal: Signal) {
    let _ = killpg(Pid::from_raw(pgid), signal);
}

/// True when no process (zombies included) is left in the group.
pub(crate) fn group_gone(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH)
}

/// Stops the group: SIGTERM, then SIGKILL after [`GRACE`]. Reaps the shell, and returns its
/// status when it was collected.
async fn stop_group(pgid: i32, child: &mut Child) -> (Option<ExitStatus>, Stop) {
    signal_group(pgid, Signal::SIGTERM);
    let mut status = None;
    let start = Instant::now();
    loop {
        if status.is_none() {
            status = child.try_wait().ok().flatten();
        }
        if status.is_some() && group_gone(pgid) {
            return (status, Stop::Term);
        }
        if start.elapsed() >= GRACE {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    signal_group(pgid, Signal::SIGKILL);
    let start = Instant::now();
    loop {
        if status.is_none() {
            status = child.try_wait().ok().flatten();
        }
        if status.is_some() && group_gone(pgid) {
            return (status, Stop::TermThenKill);
        }
        if start.elapsed() >= KILL_WAIT {
            return (status, Stop::Lingering);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Stops the group, and the processes carrying the call's marker, if the run is abandoned: a
/// dropped future must not leave processes behind.
struct GroupGuard {
    pgid: i32,
    marker: String,
    child: Option<Child>,
}

impl GroupGuard {
    fn disarm(&mut self) {
        self.child = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pgid = self.pgid;
        // Processes that left the group cannot be waited for: SIGKILL now.
        procs::kill_all(&procs::marked(&self.marker));
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                // SIGTERM at once, so the stop starts even if the task never runs.
                signal_group(pgid, Signal::SIGTERM);
                handle.spawn(async move {
                    stop_group(pgid, &mut child).await;
                });
            }
            Err(_) => {
                signal_group(pgid, Signal::SIGTERM);
                // Without a runtime the shell cannot be reaped here, so a zombie shell keeps the
                // group alive and SIGKILL always follows; it is harmless to a zombie.
                std::thread::spawn(move || {
                    let _child = child;
                    let start = Instant::now();
                    while start.elapsed() < GRACE {
                        if group_gone(pgid) {
                            return;
                        }
                        std::thread::sleep(POLL);
                    }
                    signal_group(pgid, Signal::SIGKILL);
                });
            }
        }
    }
}

/// Asks Linux to SIGKILL the shell when the thread that spawned it exits, so a crashed host does
/// not leave the shell running. The signal follows the spawning thread, not the process: tokio
/// spawns from runtime threads, which live as long as the runtime.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = nix::unistd::getpid();
    // SAFETY: the hook runs in the forked child before exec. It only makes the prctl and getppid
    // system calls, which are async-signal-safe; it allocates nothing and takes no locks.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            // The parent may have died before the prctl call; then nobody will send the signal.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::other("the parent exited"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut std::process::Command) {}

/// Captured output in bounded memory: small output whole, large output as a head, a tail and a
/// spool file.
///
/// Up to `memory` bytes, everything stays in the ring. When the output grows past it, the ring
/// (still holding every byte) goes to a new spool file, and every later byte is written there too,
/// up to `spool_cap`. From then on memory holds the first `head` bytes and the last `memory`
/// bytes. Bytes past the cap that fall out of the tail are counted as dropped.
#[derive(Debug)]
pub(crate) struct Capture {
    limits: CaptureLimits,
    head: Vec<u8>,
    tail: Ring,
    total: u64,
    lines: u64,
    spool: Spool,
}

#[derive(Debug)]
enum Spool {
    /// Not needed yet.
    None,
    /// Writing to the file; `written` bytes so far.
    Open { spool: OpenSpool, written: u64 },
    /// The cap was reached or a write failed; the file holds `written` bytes.
    Closed {
        path: Option<PathBuf>,
        written: u64,
        error: Option<String>,
    },
}

/// The result of a capture.
#[derive(Debug)]
pub(crate) struct Captured {
    /// The output, with a marker where the middle lives only in the spool file.
    pub(crate) text: String,
    /// Bytes produced.
    pub(crate) total: u64,
    /// Lines produced.
    pub(crate) lines: u64,
    /// Bytes kept neither in memory nor in the spool file.
    pub(crate) dropped: u64,
    /// The spool file, when the output outgrew memory.
    pub(crate) spool_path: Option<PathBuf>,
    /// Bytes in the spool file.
    pub(crate) spooled: u64,
    /// Bytes of the output's end kept in memory.
    pub(crate) tail: u64,
    /// Why the spool file is missing or short, when a write failed.
    pub(crate) spool_error: Option<String>,
}

impl Capture {
    pub(crate) fn new(limits: CaptureLimits) -> Self {
        Self {
            head: Vec::new(),
            tail: Ring::new(limits.memory),
            total: 0,
            lines: 0,
            spool: Spool::None,
            limits,
        }
    }

    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Adds a chunk of output.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        let before = self.total;
        self.total += chunk.len() as u64;
        self.lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        if self.head.len() < self.limits.head {
            let take = chunk.len().min(self.limits.head - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        if matches!(self.spool, Spool::None) && self.total > self.limits.memory as u64 {
            // The ring still holds every earlier byte: they go to the spool first.
            debug_assert_eq!(before, self.tail.len() as u64);
            self.spool = self.open_spool();
            let (a, b) = self.tail.slices();
            write_spool(&mut self.spool, a);
            write_spool(&mut self.spool, b);
        }
        write_spool(&mut self.spool, chunk);
        self.tail.push(chunk);
    }

    fn open_spool(&self) -> Spool {
        match spool::open(&self.limits.spool) {
            Ok(spool) => Spool::Open { spool, written: 0 },
            Err(error) => Spool::Closed {
                path: None,
                written: 0,
                error: Some(error.to_string()),
            },
        }
    }

    /// The last `bytes` of the output as text.
    pub(crate) fn tail_text(&self, bytes: usize) -> String {
        let (a, b) = self.tail.slices();
        let len = a.len() + b.len();
        let skip = len.saturating_sub(bytes);
        let mut out = Vec::with_capacity(len - skip);
        if skip < a.len() {
            out.extend_from_slice(&a[skip..]);
            out.extend_from_slice(b);
        } else {
            out.extend_from_slice(&b[skip - a.len()..]);
        }
        String::from_utf8_lossy(trim_start_partial(&out)).into_owned()
    }

    /// The captured text and counts.
    pub(crate) fn finish(self) -> Captured {
        let tail = {
            let (a, b) = self.tail.slices();
            let mut v = Vec::with_capacity(a.len() + b.len());
            v.extend_from_slice(a);
            v.extend_from_slice(b);
            v
        };
        let (path, spooled, error) = match self.spool {
            Spool::None => (None, 0, None),
            Spool::Open { spool, written } => (Some(spool.path.clone()), written, None),
            Spool::Closed {
                path,
                written,
                error,
            } => (path, written, error),
        };
        if self.total <= self.limits.memory as u64 {
            return Captured {
                text: String::from_utf8_lossy(&tail).into_owned(),
                total: self.total,
                lines: self.lines,
                dropped: 0,
                spool_path: path,
                spooled,
                tail: self.total,
                spool_error: error,
            };
        }
        let tail_len = tail.len() as u64;
        let tail_start = self.total - tail_len;
        let dropped = tail_start.saturating_sub(spooled.max(self.head.len() as u64));
        // Whole lines on both sides of the gap: a number cut in half reads as another number.
        let head = whole_lines_head(trim_end_partial(&self.head));
        let tail = whole_lines_tail(trim_start_partial(&tail));
        let gap_start = head.len() as u64;
        let gap_end = self.total - tail.len() as u64;
        let count = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count() as u64;
        let head_lines = count(head);
        let gap_lines = self.lines.saturating_sub(head_lines + count(tail));
        let mut text = String::from_utf8_lossy(head).into_owned();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let omitted = format!(
            "[... {} of {} lines ({} of {} bytes) omitted, from line {}.",
            thousands(gap_lines),
            thousands(self.lines),
            thousands(gap_end - gap_start),
            thousands(self.total),
            thousands(head_lines + 1),
        );
        text.push_str(&omitted);
        match &path {
            Some(path) if dropped == 0 && error.is_none() => text.push_str(&format!(
                " Full output: {} (inspect it with bash: grep, sed -n, tail) ...]\n",
                path.display()
            )),
            Some(path) => text.push_str(&format!(
                " The first {} bytes are saved in {} (inspect it with bash: grep, sed -n, tail); \
                 the {} bytes after them were dropped ...]\n",
                thousands(spooled),
                path.display(),
                thousands(dropped),
            )),
            None => text.push_str(&format!(
                " They were dropped: the spool file could not be created ({}) ...]\n",
                error.as_deref().unwrap_or("unknown error")
            )),
        }
        text.push_str(&String::from_utf8_lossy(tail));
        Captured {
            text,
            total: self.total,
            lines: self.lines,
            dropped,
            spool_path: path,
            spooled,
            tail: tail_len,
            spool_error: error,
        }
    }
}

/// Writes `bytes` to the spool while it is open, up to its cap in all.
fn write_spool(spool: &mut Spool, bytes: &[u8]) {
    let Spool::Open {
        spool: open,
        written,
    } = spool
    else {
        return;
    };
    let room = open.cap.saturating_sub(*written);
    let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
    let result = open.file.write_all(&bytes[..take]);
    let closed = match result {
        Ok(()) => {
            *written += take as u64;
            (*written >= open.cap).then_some(None)
        }
        // What a failed write kept is unknown; count from the last good write.
        Err(error) => Some(Some(error.to_string())),
    };
    if let Some(error) = closed {
        *spool = Spool::Closed {
            path: Some(open.path.clone()),
            written: *written,
            error,
        };
    }
}

/// `bytes` without an incomplete UTF-8 sequence at its end.
/// `bytes` up to and including its last newline; all of it when it holds none (one long line).
fn whole_lines_head(bytes: &[u8]) -> &[u8] {
    match memchr::memrchr(b'\n', bytes) {
        Some(at) => &bytes[..=at],
        None => bytes,
    }
}

/// `bytes` after its first newline; all of it when it holds none.
fn whole_lines_tail(bytes: &[u8]) -> &[u8] {
    match memchr::memchr(b'\n', bytes) {
        Some(at) if at + 1 < bytes.len() => &bytes[at + 1..],
        _ => bytes,
    }
}

fn trim_end_partial(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// `bytes` without UTF-8 continuation bytes at its start (a character cut in half).
fn trim_start_partial(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|&&b| (0x80..0xC0).contains(&b))
        .count();
    &bytes[skip..]
}

/// A fixed-size ring of the last bytes written.
#[derive(Debug)]
struct Ring {
    buf: Vec<u8>,
    cap: usize,
    /// Where the next byte goes once the ring is full.
    start: usize,
}

impl Ring {
    fn new(cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            cap,
            start: 0,
        }
    }

    fn len(&self) -> usize {
        self.buf.len()
    }

    fn push(&mut self, mut chunk: &[u8]) {
        if self.cap == 0 {
            return;
        }
        if chunk.len() >= self.cap {
            chunk = &chunk[chunk.len() - self.cap..];
            self.buf.clear();
            self.buf.extend_from_slice(chunk);
            self.start = 0;
            return;
        }
        let room = self.cap - self.buf.len();
        if room > 0 {
            let take = room.min(chunk.len());
            self.buf.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        while !chunk.is_empty() {
            let take = (self.cap - self.start).min(chunk.len());
            self.buf[self.start..self.start + take].copy_from_slice(&chunk[..take]);
            self.start = (self.start + take) % self.cap;
            chunk = &chunk[take..];
        }
    }

    /// The bytes in order, as two slices.
    fn slices(&self) -> (&[u8], &[u8]) {
        if self.buf.len() < self.cap {
            (&self.buf, &[])
        } else {
            (&self.buf[self.start..], &self.buf[..self.start])
        }
    }
}

/// Secret environment variables removed from the shell's environment, as globs on the name
/// (case-insensitive; `*` matches any run of characters).
pub(crate) const SECRET_ENV: &[&str] = &[
    "*_TOKEN",
    "*_TOKENS",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_API_KEY",
    "*_APIKEY",
    "API_KEY",
    "*_PRIVATE_KEY",
    "*_ACCESS_KEY",
    "*_AUTH_KEY",
    "*_CLIENT_SECRET",
    "TOKEN",
];

/// Variables set in the shell's environment so nothing waits for a terminal, a pager or an
/// editor, and output carries no color codes.
pub(crate) const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("GIT_EDITOR", "true"),
    ("GIT_SEQUENCE_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GCM_INTERACTIVE", "never"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
];

/// Variables of tackle's own process that describe it, not the command: a command run from a
/// tackle that is an MCP server of another is not itself nested (`TACKLE_MCP_DEPTH`, read by
/// tackle-mcp), and a call's marker and trace context are set fresh for each call.
pub(crate) const HOST_ONLY_ENV: &[&str] = &[
    "TACKLE_MCP_DEPTH",
    procs::MARKER_ENV,
    TRACEPARENT_ENV,
    "TRACESTATE",
];

/// The W3C Trace Context variable a command's own telemetry continues from.
pub(crate) const TRACEPARENT_ENV: &str = "TRACEPARENT";

/// The environment of a command run for the call in `cx`: [`child_env`] of tackle's own, with
/// `TRACEPARENT` naming the call's span (or the trace it continues) when it has one.
pub(crate) fn call_env(cx: &tackle_core::Context) -> Vec<(OsString, OsString)> {
    let mut env = child_env(std::env::vars_os());
    if let Some(trace) = cx.trace_context() {
        env.push((TRACEPARENT_ENV.into(), trace.to_string().into()));
    }
    env
}

/// True when `name` matches one of [`SECRET_ENV`].
pub(crate) fn is_secret(name: &OsStr) -> bool {
    let name = name.to_string_lossy().to_ascii_uppercase();
    SECRET_ENV.iter().any(|glob| glob_match(glob, &name))
}

/// The shell's environment: `base` without secrets, with [`NON_INTERACTIVE_ENV`] on top.
pub(crate) fn child_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .into_iter()
        .filter(|(name, _)| !is_secret(name))
        .filter(|(name, _)| !HOST_ONLY_ENV.iter().any(|n| name == n))
        .filter(|(name, _)| !NON_INTERACTIVE_ENV.iter().any(|(n, _)| name == n))
        .collect();
    env.extend(
        NON_INTERACTIVE_ENV
            .iter()
            .map(|(n, v)| (OsString::from(n), OsString::from(v))),
    );
    env
}

/// Matches a glob of literal characters and `*` against `text`.
fn glob_match(glob: &str, text: &str) -> bool {
    let parts: Vec<&str> = glob.split('*').collect();
    if parts.len() == 1 {
        return glob == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn globs_match_secret_names_only() {
        for name in [
            "GITHUB_TOKEN",
            "MY_API_TOKEN",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "DB_PASSWORD",
            "client_secret",
        ] {
            assert!(is_secret(OsStr::new(name)), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "SSH_AUTH_SOCK",
            "TOKENIZERS_PARALLELISM",
            "LANG",
        ] {
            assert!(!is_secret(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn ring_keeps_the_last_bytes() {
        let mut ring = Ring::new(5);
        ring.push(b"abc");
        ring.push(b"def");
        ring.push(b"g");
        let (a, b) = ring.slices();
        assert_eq!([a, b].concat(), b"cdefg");
        ring.push(b"0123456789");
        let (a, b) = ring.slices();
        assert_eq!([a, b].concat(), b"56789");
    }

    #[test]
    fn thousands_separates() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_000_000_000), "1,000,000,000");
    }
}
