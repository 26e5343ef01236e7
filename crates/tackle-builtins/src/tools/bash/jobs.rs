//! Background jobs: commands that keep running after the call that started them, with their
//! output kept in a bounded window, their stdin open, and their lifetime tied to the session
//! and the host.
//!
//! A job is a shell in its own process group, like a foreground command, with a stdin pipe. Its
//! stdout and stderr go, in arrival order, into a window of the last [`WINDOW_BYTES`] and, in
//! full up to the spool cap, into a file under the session's spool directory, where `read` and
//! `grep` can reach it. Each reader (`bash_output`) has a cursor, so every byte is shown once;
//! what the window lost before it was read is counted and reported, never silently skipped.
//!
//! The key decision is that a job cannot outlive what owns it. A session's jobs are killed when
//! the session ends, every job is killed when [`Jobs`] is dropped (the host ended), and a job's
//! whole process group is killed when its shell exits, so nothing it started is left behind.

use std::collections::{HashMap, VecDeque};
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::ChildStdin;
use tokio::sync::watch;

use super::procs;
use super::run::{self, Spec};
use super::spool::OpenSpool;

/// Something that happened to a job, for the host's record (the journal's job log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEvent {
    /// The session the job belongs to.
    pub session: String,
    /// The message of the call the event belongs to.
    pub message: String,
    /// The call the event belongs to: the one that started the job (start, exit), wrote to it
    /// (input) or stopped it (kill).
    pub call: String,
    /// The job.
    pub job: String,
    /// What happened.
    pub kind: JobEventKind,
}

/// What happened to a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobEventKind {
    /// It started: the command line and the shell's pid.
    Started {
        /// The command line.
        command: String,
        /// The shell's process ID.
        pid: i32,
    },
    /// Text was written to its stdin.
    Input {
        /// How many bytes.
        bytes: usize,
        /// Whether stdin was closed after.
        closed: bool,
    },
    /// A kill was asked for.
    Kill,
    /// It ended.
    Ended(JobEnd),
}

impl JobEventKind {
    /// A short name for the record: `started`, `input`, `kill` or `ended`.
    pub fn name(&self) -> &'static str {
        match self {
            JobEventKind::Started { .. } => "started",
            JobEventKind::Input { .. } => "input",
            JobEventKind::Kill => "kill",
            JobEventKind::Ended(_) => "ended",
        }
    }

    /// The details as one line (`pid 123: npm run dev`, `5 bytes, closed`, `exited 0`).
    pub fn detail(&self) -> String {
        match self {
            JobEventKind::Started { command, pid } => format!("pid {pid}: {command}"),
            JobEventKind::Input { bytes, closed } => {
                format!("{bytes} bytes{}", if *closed { ", closed" } else { "" })
            }
            JobEventKind::Kill => String::new(),
            JobEventKind::Ended(end) => JobState::Ended(*end).to_string(),
        }
    }
}

/// Where job events go.
pub type JobEventSink = Arc<dyn Fn(&JobEvent) + Send + Sync>;

/// The output a job keeps in memory: the last this many bytes.
pub const WINDOW_BYTES: usize = 1024 * 1024;
/// How long `bash_kill` waits after SIGTERM before SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(3);

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobEnd {
    /// Its shell exited with this code.
    Exited(i32),
    /// A signal ended it (not one tackle sent).
    Signaled(i32),
    /// tackle stopped it (`bash_kill`, the session or the host ended).
    Killed,
}

/// What a job's owner sees of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Still running.
    Running,
    /// Ended.
    Ended(JobEnd),
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobState::Running => f.write_str("running"),
            JobState::Ended(JobEnd::Exited(code)) => write!(f, "exited {code}"),
            JobState::Ended(JobEnd::Signaled(signal)) => write!(f, "ended by signal {signal}"),
            JobState::Ended(JobEnd::Killed) => f.write_str("killed"),
        }
    }
}

/// The output window and state of one job.
struct Window {
    bytes: VecDeque<u8>,
    /// The offset (in all output) of `bytes[0]`.
    start: u64,
    /// The offset of the next byte not yet shown to a reader.
    cursor: u64,
    state: JobState,
    /// Set once the output pipes closed (after the state ended, everything is in).
    drained: bool,
    /// Bytes the spool file could not take.
    spool_dropped: u64,
}

impl Window {
    fn total(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let excess = self.bytes.len().saturating_sub(WINDOW_BYTES);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.start += excess as u64;
        }
    }
}

/// One background job.
pub struct Job {
    /// Its ID, as the model names it (`job-3`).
    pub id: String,
    /// The session that started it.
    pub session: String,
    /// The command line.
    pub command: String,
    /// The shell's process ID, also its process group.
    pub pid: i32,
    /// The file holding its output in full (up to the spool cap).
    pub spool_path: Option<PathBuf>,
    /// The message and call that started it.
    started_by: (String, String),
    events: Option<JobEventSink>,
    started: Instant,
    marker: String,
    window: Mutex<Window>,
    changed: watch::Sender<u64>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    killed: std::sync::atomic::AtomicBool,
}

/// What a read of a job's output returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    /// The output since the last read (lines not matching the filter left out).
    pub text: String,
    /// Bytes the window lost before they were read.
    pub dropped: u64,
    /// The job's state after the read.
    pub state: JobState,
}

impl Job {
    /// The message and call that started it.
    pub fn started_by(&self) -> (&str, &str) {
        (&self.started_by.0, &self.started_by.1)
    }

    /// Its state now.
    pub fn state(&self) -> JobState {
        self.window.lock().state.clone()
    }

    /// How long it has run.
    pub fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// Bytes written that no reader saw yet.
    pub fn unread(&self) -> u64 {
        let window = self.window.lock();
        window.total() - window.cursor
    }

    /// The output since the last read, advancing the cursor; lines not matching `filter` are
    /// left out of the text (but still count as read). Waits up to `wait` for something new
    /// (output or the end) when there is nothing yet.
    pub async fn read(&self, filter: Option<&regex::Regex>, wait: Duration) -> Read {
        let deadline = tokio::time::Instant::now() + wait;
        let mut changes = self.changed.subscribe();
        loop {
            {
                let window = self.window.lock();
                let settled = window.state != JobState::Running && window.drained;
                if window.total() > window.cursor || settled {
                    break;
                }
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                break;
            }
        }
        let mut window = self.window.lock();
        let dropped = window.start.saturating_sub(window.cursor);
        let from = window.cursor.max(window.start);
        let skip = (from - window.start) as usize;
        let bytes: Vec<u8> = window.bytes.iter().skip(skip).copied().collect();
        window.cursor = window.total();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let text = match filter {
            Some(filter) => text
                .split_inclusive('\n')
                .filter(|line| filter.is_match(line))
                .collect(),
            None => text,
        };
        Read {
            text,
            dropped,
            state: window.state.clone(),
        }
    }

    /// The last `lines` lines of the output in the window.
    pub fn tail(&self, lines: usize) -> String {
        let window = self.window.lock();
        let bytes: Vec<u8> = window.bytes.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Writes `text` to its stdin, then closes stdin when `close`.
    pub async fn write_input(&self, text: &str, close: bool) -> Result<(), String> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err("its stdin is already closed".to_owned());
        };
        if !text.is_empty() {
            let written = tokio::time::timeout(Duration::from_secs(10), async {
                pipe.write_all(text.as_bytes()).await?;
                pipe.flush().await
            })
            .await;
            match written {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(format!("writing to its stdin failed: {e}")),
                Err(_) => {
                    return Err("it did not read its stdin within 10 seconds".to_owned());
                }
            }
        }
        if close {
            *stdin = None;
        }
        Ok(())
    }

    /// SIGTERM to its process group, then SIGKILL after `grace`; waits for the end.
    pub async fn kill(&self, grace: Duration) -> JobState {
        if self.state() != JobState::Running {
            return self.state();
        }
        self.killed.store(true, Ordering::SeqCst);
        run::signal_group(self.pid, Signal::SIGTERM);
        if !self.wait_end(grace).await {
            self.kill_now();
            self.wait_end(Duration::from_secs(5)).await;
        }
        self.state()
    }

    /// SIGKILL to the group and everything marked as started by the job, at once.
    fn kill_now(&self) {
        self.killed.store(true, Ordering::SeqCst);
        run::signal_group(self.pid, Signal::SIGKILL);
        procs::kill_all(&procs::marked(&self.marker));
    }

    /// Waits until it ended, at most `limit`. True when it did.
    pub async fn wait_end(&self, limit: Duration) -> bool {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.state() != JobState::Running {
                return true;
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return self.state() != JobState::Running;
            }
        }
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Reports `kind` for the call `(message, call)`.
    pub fn record(&self, message: &str, call: &str, kind: JobEventKind) {
        if let Some(sink) = &self.events {
            sink(&JobEvent {
                session: self.session.clone(),
                message: message.to_owned(),
                call: call.to_owned(),
                job: self.id.clone(),
                kind,
            });
        }
    }
}

/// Why a job could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The session runs as many jobs as allowed.
    #[error("this session already runs {limit} background jobs")]
    TooMany {
        /// The limit.
        limit: usize,
    },
    /// The host is shutting down.
    #[error("the host is shutting down")]
    Closed,
    /// The shell could not be started.
    #[error("the shell could not be started: {0}")]
    Spawn(std::io::Error),
}

/// The background jobs of one host, for every session. Cheap to clone; dropping the last
/// clone kills every job still running.
#[derive(Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: Mutex<HashMap<String, Arc<Job>>>,
    events: Option<JobEventSink>,
    next: AtomicU64,
    max_per_session: usize,
    closed: std::sync::atomic::AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for job in self.jobs.lock().values() {
            if job.state() == JobState::Running {
                job.kill_now();
            }
        }
    }
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("jobs", &self.inner.jobs.lock().len())
            .field("max_per_session", &self.inner.max_per_session)
            .finish()
    }
}

/// A handle on [`Jobs`] that does not keep them alive (dropping the last [`Jobs`] still kills
/// every job).
#[derive(Clone, Debug)]
pub struct WeakJobs(std::sync::Weak<Inner>);

impl WeakJobs {
    /// The jobs, while some [`Jobs`] still holds them.
    pub fn upgrade(&self) -> Option<Jobs> {
        self.0.upgrade().map(|inner| Jobs { inner })
    }
}

/// The default number of jobs a session may run at once.
pub const DEFAULT_MAX_JOBS: usize = 8;

impl Jobs {
    /// No jobs yet; each session may run `max_per_session` at once.
    pub fn new(max_per_session: usize) -> Self {
        Self::build(max_per_session, None)
    }

    /// No jobs yet, as [`new`](Self::new), with every start, input, kill and end reported to
    /// `sink` under the identity of the call it belongs to.
    pub fn with_events(max_per_session: usize, sink: JobEventSink) -> Self {
        Self::build(max_per_session, Some(sink))
    }

    fn build(max_per_session: usize, events: Option<JobEventSink>) -> Self {
        Self {
            inner: Arc::new(Inner {
                jobs: Mutex::default(),
                events,
                next: AtomicU64::new(1),
                max_per_session,
                closed: Default::default(),
            }),
        }
    }

    /// A handle that does not keep the jobs alive.
    pub fn downgrade(&self) -> WeakJobs {
        WeakJobs(Arc::downgrade(&self.inner))
    }

    /// The job `id` if `session` owns it.
    pub fn get(&self, session: &str, id: &str) -> Option<Arc<Job>> {
        self.inner
            .jobs
            .lock()
            .get(id)
            .filter(|job| job.session == session)
            .cloned()
    }

    /// The session's jobs, oldest first.
    pub fn of_session(&self, session: &str) -> Vec<Arc<Job>> {
        let mut jobs: Vec<_> = self
            .inner
            .jobs
            .lock()
            .values()
            .filter(|job| job.session == session)
            .cloned()
            .collect();
        jobs.sort_by_key(|job| job.started);
        jobs
    }

    /// Every running job, of every session, oldest first.
    pub fn running_anywhere(&self) -> Vec<Arc<Job>> {
        let mut jobs: Vec<_> = self
            .inner
            .jobs
            .lock()
            .values()
            .filter(|job| job.state() == JobState::Running)
            .cloned()
            .collect();
        jobs.sort_by_key(|job| job.started);
        jobs
    }

    /// The session's running jobs.
    pub fn running(&self, session: &str) -> Vec<Arc<Job>> {
        self.of_session(session)
            .into_iter()
            .filter(|job| job.state() == JobState::Running)
            .collect()
    }

    /// Starts `spec` (its timeout is ignored) as a job of `session`, spooling its output to
    /// `spool`.
    pub(crate) fn start(
        &self,
        session: &str,
        started_by: (&str, &str),
        spec: &Spec,
        spool: Option<OpenSpool>,
    ) -> Result<Arc<Job>, StartError> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(StartError::Closed);
        }
        if self.running(session).len() >= self.inner.max_per_session {
            return Err(StartError::TooMany {
                limit: self.inner.max_per_session,
            });
        }
        let marker = procs::new_marker();
        let mut command = run::shell_command(spec, &marker, true);
        command.kill_on_drop(false);
        let mut child = command.spawn().map_err(StartError::Spawn)?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| StartError::Spawn(std::io::Error::other("the shell exited at once")))?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let stdin = child.stdin.take();
        let id = format!("job-{}", self.inner.next.fetch_add(1, Ordering::Relaxed));
        let spool_path = spool.as_ref().map(|open| open.path.clone());
        let (changed, _) = watch::channel(0);
        let job = Arc::new(Job {
            id: id.clone(),
            session: session.to_owned(),
            command: spec.command.clone(),
            pid,
            spool_path,
            started_by: (started_by.0.to_owned(), started_by.1.to_owned()),
            events: self.inner.events.clone(),
            started: Instant::now(),
            marker,
            window: Mutex::new(Window {
                bytes: VecDeque::new(),
                start: 0,
                cursor: 0,
                state: JobState::Running,
                drained: false,
                spool_dropped: 0,
            }),
            changed,
            stdin: tokio::sync::Mutex::new(stdin),
            killed: Default::default(),
        });
        self.inner.jobs.lock().insert(id, job.clone());
        job.record(
            started_by.0,
            started_by.1,
            JobEventKind::Started {
                command: spec.command.clone(),
                pid,
            },
        );

        // The pump: both pipes into the window and the spool file, in arrival order.
        let pumped = job.clone();
        let pump = tokio::spawn(async move {
            // The open spool stays alive (and counted as live) until the pump ends.
            let mut spool = spool.map(|open| {
                let cap = open.cap;
                let file = open.file.try_clone().map(std::io::BufWriter::new);
                (file, 0u64, cap, open)
            });
            let (mut out, mut err) = (stdout, stderr);
            let mut out_buf = vec![0u8; 64 * 1024];
            let mut err_buf = vec![0u8; 64 * 1024];
            loop {
                let chunk = tokio::select! {
                    read = async { out.as_mut().unwrap().read(&mut out_buf).await }, if out.is_some() => {
                        match read { Ok(0) | Err(_) => { out = None; continue } Ok(n) => &out_buf[..n] }
                    }
                    read = async { err.as_mut().unwrap().read(&mut err_buf).await }, if err.is_some() => {
                        match read { Ok(0) | Err(_) => { err = None; continue } Ok(n) => &err_buf[..n] }
                    }
                    else => break,
                };
                let mut window = pumped.window.lock();
                window.push(chunk);
                if let Some((Ok(file), written, cap, _)) = spool.as_mut() {
                    let room = cap.saturating_sub(*written) as usize;
                    let keep = chunk.len().min(room);
                    if keep > 0 && file.write_all(&chunk[..keep]).is_ok() {
                        *written += keep as u64;
                    }
                    window.spool_dropped += (chunk.len() - keep) as u64;
                }
                drop(window);
                pumped.bump();
            }
            if let Some((Ok(mut file), ..)) = spool {
                let _ = file.flush();
            }
        });

        // The waiter: the shell's end, then the rest of its group, then the pipes.
        let waited = job.clone();
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            // Nothing the job started outlives it.
            run::signal_group(waited.pid, Signal::SIGKILL);
            procs::kill_all(&procs::marked(&waited.marker));
            let end = if waited.killed.load(Ordering::SeqCst) {
                JobEnd::Killed
            } else {
                match status {
                    Some(status) => match (status.code(), status.signal()) {
                        (Some(code), _) => JobEnd::Exited(code),
                        (None, Some(signal)) => JobEnd::Signaled(signal),
                        (None, None) => JobEnd::Killed,
                    },
                    None => JobEnd::Killed,
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
            {
                let mut window = waited.window.lock();
                window.state = JobState::Ended(end);
                window.drained = true;
            }
            *waited.stdin.lock().await = None;
            let (message, call) = waited.started_by.clone();
            waited.record(&message, &call, JobEventKind::Ended(end));
            waited.bump();
        });
        Ok(job)
    }

    /// Removes job `id` from the table (it ended and was reported).
    pub fn forget(&self, id: &str) {
        self.inner.jobs.lock().remove(id);
    }

    /// Kills the jobs of `session` at once (the session ended).
    pub fn end_session(&self, session: &str) {
        for job in self.running(session) {
            job.kill_now();
        }
    }

    /// Stops every job (SIGTERM, then SIGKILL after `grace`) and refuses new ones: the host is
    /// shutting down.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let jobs: Vec<_> = self.inner.jobs.lock().values().cloned().collect();
        // All at once: SIGTERM to every group, then each waits its own grace.
        let stops: Vec<_> = jobs
            .into_iter()
            .map(|job| tokio::spawn(async move { job.kill(grace).await }))
            .collect();
        for stop in stops {
            let _ = stop.await;
        }
    }
}

impl PartialEq for Jobs {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Jobs {}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str) -> Spec {
        Spec {
            shell: PathBuf::from("/bin/sh"),
            command: command.to_owned(),
            cwd: std::env::temp_dir(),
            env: run::child_env(std::env::vars_os()),
            timeout: Duration::from_secs(60),
            die_with_parent: true,
            limits: run::CaptureLimits {
                memory: 1024,
                head: 0,
                spool: super::super::spool::SpoolPlace {
                    dir: std::env::temp_dir(),
                    session: "t".to_owned(),
                    file_cap: 0,
                    total_cap: 0,
                },
            },
            sandbox: tackle_sandbox::Prepared::unsandboxed(tackle_sandbox::Status::Off {
                by_person: false,
            }),
        }
    }

    async fn ended(job: &Job) -> Read {
        assert!(job.wait_end(Duration::from_secs(20)).await, "the job ended");
        job.read(None, Duration::ZERO).await
    }

    #[tokio::test]
    async fn the_window_keeps_the_last_mebibyte_and_counts_what_it_lost() {
        let jobs = Jobs::new(2);
        // 3 MiB of `a`, then a last line.
        let job = jobs
            .start(
                "s",
                ("m", "c"),
                &spec("head -c 3145728 /dev/zero | tr '\\0' a; echo; echo last"),
                None,
            )
            .unwrap();
        let read = ended(&job).await;
        assert_eq!(read.state, JobState::Ended(JobEnd::Exited(0)));
        assert!(read.text.ends_with("a\nlast\n"));
        assert_eq!(read.text.len(), WINDOW_BYTES);
        assert_eq!(read.dropped, 3 * 1024 * 1024 + 6 - WINDOW_BYTES as u64);
        // Read once: nothing new, nothing lost.
        let again = job.read(None, Duration::ZERO).await;
        assert_eq!((again.text.as_str(), again.dropped), ("", 0));
    }

    #[tokio::test]
    async fn a_filter_shows_matching_lines_and_still_advances() {
        let jobs = Jobs::new(2);
        let job = jobs
            .start(
                "s",
                ("m", "c"),
                &spec("printf 'keep 1\\ndrop 2\\nkeep 3\\n'"),
                None,
            )
            .unwrap();
        job.wait_end(Duration::from_secs(20)).await;
        let filter = regex::Regex::new("^keep").unwrap();
        let read = job.read(Some(&filter), Duration::ZERO).await;
        assert_eq!(read.text, "keep 1\nkeep 3\n");
        assert_eq!(job.read(None, Duration::ZERO).await.text, "");
    }

    #[tokio::test]
    async fn sessions_see_only_their_jobs_and_the_limit_counts_running_ones() {
        let jobs = Jobs::new(1);
        let a = jobs
            .start("a", ("m", "c"), &spec("sleep 30"), None)
            .unwrap();
        assert!(jobs.get("b", &a.id).is_none());
        assert!(jobs.of_session("b").is_empty());
        assert!(matches!(
            jobs.start("a", ("m", "c"), &spec("true"), None),
            Err(StartError::TooMany { limit: 1 })
        ));
        // Another session has room of its own.
        let b = jobs.start("b", ("m", "c"), &spec("true"), None).unwrap();
        ended(&b).await;
        jobs.end_session("a");
        assert!(a.wait_end(Duration::from_secs(10)).await);
        assert_eq!(a.state(), JobState::Ended(JobEnd::Killed));
        // A finished job no longer counts.
        assert!(jobs.start("a", ("m", "c"), &spec("true"), None).is_ok());
    }
}
