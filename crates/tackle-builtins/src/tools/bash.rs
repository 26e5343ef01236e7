//! The bash tool: runs one command line in a fresh non-interactive shell.
//!
//! Each call is stateless: a new shell, started in `workdir` (the Location root by default), with
//! stdin on `/dev/null`, in its own process group, with secrets removed from the environment and
//! pagers and editors turned off (see [`run`] for the process and capture rules).
//!
//! Before anything runs, the command line is scanned ([`scan`]): paths outside the Location,
//! named directly or reached through a symlink inside it ([`links`]), ask `external_directory`,
//! then the commands found ask `bash`.
//!
//! A non-zero exit is data, not a failure: the output always ends with an `exit:` line. A
//! timeout stops the whole process group and keeps the partial output. Output of any size is
//! captured in bounded memory; what does not fit in memory goes to a spool file named in the
//! output, and bytes past the spool cap are counted and reported as dropped.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tackle_core::names::Permission;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle_core::{AnyTool, Context, Direction, LimitsOverride, State, Tool, ToolFailure};

use super::ToolEnv;
use crate::gate::Ask;

mod job_tools;
pub mod jobs;
mod links;
mod procs;
pub(crate) mod run;
pub mod scan;
mod spool;

pub use spool::{SPOOL_MAX_AGE, end_session_spools, sweep_spools};

#[cfg(test)]
mod tests;

use run::{CaptureLimits, Stop};
use tackle_core::thousands;

const DESCRIPTION: &str = "Run a shell command and return its output.\n\
- Each call starts a fresh non-interactive shell (bash if installed, else sh) in workdir, or in \
the working directory when workdir is left out. Nothing carries over between calls: use workdir \
instead of `cd dir && …`.\n\
- stdin is empty and there is no terminal: commands that prompt get end-of-file. Pagers and \
editors are disabled (PAGER=cat, GIT_EDITOR=true), so pass messages on the command line \
(`git commit -m`).\n\
- stdout and stderr are merged in arrival order. The output ends with an `exit:` line; a \
non-zero exit code is reported, not treated as an error.\n\
- timeout is in milliseconds: 120000 (2 minutes) by default, 600000 at most. On timeout the \
command and everything it started are stopped, and the output so far is returned.\n\
- Long output is shortened to its end; the full output is saved to a file named in the output.\n\
- To start a server, a watcher or another long-lived process, set runInBackground: the call \
returns at once with a job ID and the first output; read more with bash_output, answer prompts \
with bash_input, stop it with bash_kill. onTimeout: \"background\" keeps a command that outlives \
its timeout running as a job instead of stopping it. Jobs end with the session.\n\
- Background processes started with `&` are stopped when the command exits (under the sandbox \
all of them; otherwise those that keep the output open).\n\
- Commands run in a sandbox: writes outside the working directory, its temp directory ($TMPDIR) \
and the tool caches fail, and the network may be limited. If the result says the sandbox blocked \
something the task needs, call again with sandbox: \"off\"; a person decides.\n\
- Prefer the dedicated tools to read, search, list and edit files.\n\
- description is a short title for the command, such as \"Run the unit tests\".";

/// Options of the bash tool. `Default` gives the documented behaviour.
///
/// [`ToolEnv`] has no field for them yet, so [`shell_tools`](super::shell_tools) always uses the
/// defaults; [`tool_with_options`] builds the tool with others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BashOptions {
    /// The timeout when the call gives none.
    pub default_timeout: Duration,
    /// The largest timeout a call may ask for.
    pub max_timeout: Duration,
    /// Output up to this size is kept whole in memory; larger output keeps this much of its end.
    pub memory_bytes: usize,
    /// The start of a large output kept in memory.
    pub head_bytes: usize,
    /// The most bytes saved to a spool file; later bytes are dropped (and counted) unless they
    /// are among the last `memory_bytes`.
    pub spool_cap: u64,
    /// The most bytes all spool files in `spool_dir` may hold together; the oldest are removed
    /// to make room for a new one.
    pub spool_total_cap: u64,
    /// Where spool files go, one directory per session. Files older than a day are removed when
    /// a new one is made (and by [`sweep_spools`]); a host removes a session's files when the
    /// session ends ([`end_session_spools`]).
    pub spool_dir: PathBuf,
    /// On Linux, whether the shell gets SIGKILL when the thread that spawned it exits (a
    /// crashed host). It makes the spawn a `fork` rather than a `vfork`-style spawn, which costs
    /// more in a host with a large address space (compare `bash_tool/true_no_pdeathsig` in the
    /// bench).
    pub die_with_parent: bool,
    /// The shell to run commands with, from configuration. `TACKLE_SHELL` in the environment
    /// takes precedence; with neither, bash if installed, else `/bin/sh`.
    pub shell: Option<PathBuf>,
    /// Where background jobs live; `None` in a host that ends with the call (`tackle call`),
    /// which refuses `runInBackground`.
    pub jobs: Option<jobs::Jobs>,
    /// How long a background start waits for the job's first output.
    pub background_grace: Duration,
}

impl Default for BashOptions {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            memory_bytes: 1024 * 1024,
            head_bytes: 64 * 1024,
            spool_cap: 512 * 1024 * 1024,
            spool_total_cap: 2 * 1024 * 1024 * 1024,
            spool_dir: default_spool_dir(),
            die_with_parent: true,
            shell: None,
            jobs: None,
            background_grace: Duration::from_secs(1),
        }
    }
}

/// The platform data directory joined with `tackle/spool` (for example
/// `$XDG_DATA_HOME/tackle/spool`), else the system temp directory's `tackle-spool`.
pub fn default_spool_dir() -> PathBuf {
    dirs::data_dir()
        .map(|dir| dir.join("tackle").join("spool"))
        .unwrap_or_else(|| std::env::temp_dir().join("tackle-spool"))
}

impl BashOptions {
    /// Where a call of `session` spools its output.
    pub(crate) fn spool_place(&self, session: &str) -> spool::SpoolPlace {
        spool::SpoolPlace {
            dir: self.spool_dir.clone(),
            session: session.to_owned(),
            file_cap: self.spool_cap,
            total_cap: self.spool_total_cap,
        }
    }
}

/// Arguments of the bash tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashInput {
    /// The command line to run.
    pub command: String,
    /// The timeout in milliseconds. Defaults to 120000 (2 minutes); at most 600000.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// The directory to run in, relative to the working directory or absolute. Absent means the
    /// working directory.
    #[serde(default)]
    pub workdir: Option<String>,
    /// A short title for the command, such as "Run the unit tests".
    #[serde(default)]
    pub description: Option<String>,
    /// Run it as a background job: the call returns at once with the job's ID and its first
    /// output (read more with bash_output, stop it with bash_kill).
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// What happens when the timeout passes: `kill` stops the command (the default);
    /// `background` keeps it running as a job.
    #[serde(default)]
    pub on_timeout: Option<OnTimeout>,
    /// `off` runs this one command without the sandbox, after a person allows it. Use it only
    /// when the result said the sandbox blocked something the task needs.
    #[serde(default)]
    pub sandbox: Option<SandboxChoice>,
}

/// A call's choice of sandbox.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SandboxChoice {
    /// Run without the sandbox (asks `bash_unsandboxed`).
    Off,
}

/// What happens to a command when its timeout passes.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnTimeout {
    /// Stop it and everything it started.
    Kill,
    /// Keep it running as a background job.
    Background,
}

/// The result of the bash tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashOutput {
    /// What the model reads: the output, an `exit:` line, then notes (timeout, dropped bytes,
    /// stopped background processes).
    pub output: String,
    /// The shell's exit code; absent when it was ended by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended the shell, when one did.
    pub signal: Option<i32>,
    /// True when the timeout passed and the command was stopped.
    pub timed_out: bool,
    /// Bytes the command wrote to stdout and stderr together.
    pub bytes: u64,
    /// Lines the command wrote (newline characters).
    pub lines: u64,
    /// Bytes kept neither in the output nor in the spool file.
    pub dropped_bytes: u64,
    /// The file holding the output that did not fit in memory, when it was needed.
    pub spool_path: Option<String>,
    /// True when background processes still held the output open after the shell exited, and
    /// were stopped.
    pub background_stopped: bool,
    /// Processes that kept the output open and could not be stopped: they are still running.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_running: Vec<RunningProcess>,
    /// The directory the command ran in, relative to the working directory when inside it.
    pub workdir: String,
    /// The shell that ran the command.
    pub shell: String,
    /// The background job the command runs as, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
}

/// A process a command started that is still running.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct RunningProcess {
    /// Its process ID.
    pub pid: i32,
    /// Its command name.
    pub name: String,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    tool_with_options(env, BashOptions::default())
}

/// `bash_output`, `bash_input` and `bash_kill` over `jobs` (give the same `jobs` to the bash
/// tool's options), named as the model calls them.
pub fn job_tools(jobs: &jobs::Jobs) -> Vec<(&'static str, AnyTool)> {
    job_tools::tools(jobs).into_iter().collect()
}

pub use job_tools::{BashInputInput, BashKillInput, BashOutputInput, JobResult, MAX_OUTPUT_WAIT};

/// The bash tool with `options`, for hosts that change them.
pub fn tool_with_options(env: &ToolEnv, options: BashOptions) -> AnyTool {
    let state = (env.clone(), std::sync::Arc::new(options));
    Tool::with_state(DESCRIPTION, state, bash)
        .with_projection(super::project_output)
        .with_output_limits(LimitsOverride {
            direction: Some(Direction::Tail),
            ..Default::default()
        })
        .with_concurrency(tackle_core::Concurrency::Exclusive)
        .erase()
}

async fn bash(
    State((env, options)): State<(ToolEnv, std::sync::Arc<BashOptions>)>,
    input: BashInput,
    cx: Context,
) -> Result<BashOutput, ToolFailure> {
    let (env, options, cx) = (&env, &*options, &cx);
    if input.command.trim().is_empty() {
        return Err(ToolFailure::new("`command` is empty, so nothing was run.")
            .with_hint("Pass the command line to run in `command`."));
    }
    let timeout = timeout(options, input.timeout)?;
    let (cwd, workdir) = match &input.workdir {
        None => (env.fs().root().to_path_buf(), ".".to_owned()),
        Some(dir) => {
            let target = env.resolve(cx, dir).await?;
            let name = target.display_name();
            if !target.exists {
                return Err(ToolFailure::new(format!(
                    "The working directory `{name}` does not exist, so nothing was run."
                ))
                .with_hint(
                    "Check the path, or leave `workdir` out to run in the working directory.",
                ));
            }
            if !target.path.is_dir() {
                return Err(ToolFailure::new(format!(
                    "`workdir` must be a directory, but `{name}` is a file, so nothing was run."
                ))
                .with_hint("Pass the directory that contains it."));
            }
            (target.path, name)
        }
    };
    if let Some(title) = input
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
    {
        cx.set_title(title);
    }

    let home = std::env::var_os("HOME").map(PathBuf::from);
    let found = scan::scan(&input.command, &cwd, env.fs().root(), home.as_deref());
    // Paths inside the root may lead out of it through symlinks: those ask too.
    let root = env.fs().root().to_path_buf();
    let within = found.paths_within.clone();
    let through_links = tokio::task::spawn_blocking(move || links::escapes(&root, &within))
        .await
        .map_err(|_| {
            ToolFailure::new(
                "The paths of the command line could not be checked, so nothing was run.",
            )
            .with_hint("Call it again; if this repeats, run the command in smaller parts.")
        })?;
    let mut outside = found.external_directories.clone();
    for pattern in through_links {
        if !outside.contains(&pattern) {
            outside.push(pattern);
        }
    }
    for dir in &outside {
        let ask = Ask::new(Permission::EXTERNAL_DIRECTORY.as_str(), [dir.clone()])
            .with_always([dir.clone()])
            .with_metadata(json!({
                "command": input.command,
                "parentDir": dir.trim_end_matches("/*"),
            }));
        env.gate.ask(cx, ask).await?;
    }
    let patterns = found.bash_patterns();
    if !patterns.is_empty() {
        let ask = Ask::new(Permission::BASH.as_str(), patterns)
            .with_always(found.always_patterns())
            .with_metadata(json!({
                "command": input.command,
                "description": input.description,
            }));
        env.gate.ask(cx, ask).await?;
    }
    let unsandboxed = input.sandbox == Some(SandboxChoice::Off);
    if unsandboxed {
        let ask = Ask::new(
            Permission::BASH_UNSANDBOXED.as_str(),
            [input.command.clone()],
        )
        .with_metadata(json!({
            "command": input.command,
            "description": input.description,
        }));
        env.gate.ask(cx, ask).await?;
    }
    let sandbox = env.sandbox(cx, unsandboxed)?;
    let sandbox_note = sandbox.footer();
    let sandbox_used = sandbox.clone();

    let configured = std::env::var_os("TACKLE_SHELL")
        .filter(|s| !s.is_empty())
        .or_else(|| options.shell.clone().map(OsString::from));
    let shell = choose_shell(configured, std::env::var_os("PATH"))?;
    let spec_cwd = cwd.clone();
    let spec = run::Spec {
        shell: shell.clone(),
        command: input.command.clone(),
        cwd,
        env: run::call_env(cx),
        timeout,
        die_with_parent: options.die_with_parent,
        limits: CaptureLimits {
            memory: options.memory_bytes,
            head: options.head_bytes,
            spool: options.spool_place(cx.session().as_str()),
        },
        sandbox,
    };
    let on_timeout = input.on_timeout.unwrap_or(OnTimeout::Kill);
    if input.run_in_background.unwrap_or(false) || on_timeout == OnTimeout::Background {
        let mut output = background(options, cx, &input, spec, timeout, workdir, &shell).await?;
        if output.job_id.is_none()
            && let Some(note) = denial_note(&sandbox_used, &spec_cwd, &output)
        {
            output.output.push_str(&format!("\n{note}"));
        }
        if let Some(note) = sandbox_note {
            output.output.push_str(&format!("\n{note}"));
        }
        return Ok(output);
    }
    let progress = |tail: &str| {
        cx.set_metadata(json!({"output": tail, "description": input.description}));
    };
    let finished = run::run(spec, cx.cancellation(), &progress)
        .await
        .map_err(|e| {
            ToolFailure::new(format!(
                "The shell `{}` could not be started: {e}. Nothing was run.",
                shell.display()
            ))
        })?;
    if finished.cancelled {
        return Err(ToolFailure::new("The command was interrupted and stopped."));
    }
    let cwd_for_denial = spec_cwd;
    let mut output = render(finished, timeout, workdir, &shell);
    if let Some(note) = denial_note(&sandbox_used, &cwd_for_denial, &output) {
        output.output.push_str(&format!("\n{note}"));
    }
    if let Some(note) = sandbox_note {
        output.output.push_str(&format!("\n{note}"));
    }
    Ok(output)
}

/// A command run as a job: started in the background (`runInBackground`), or waited for until
/// its timeout and then left running (`onTimeout: "background"`).
async fn background(
    options: &BashOptions,
    cx: &Context,
    input: &BashInput,
    spec: run::Spec,
    timeout: Duration,
    workdir: String,
    shell: &Path,
) -> Result<BashOutput, ToolFailure> {
    let Some(jobs) = &options.jobs else {
        return Err(ToolFailure::new(
            "Background jobs need a host that keeps running: this one ends with the call (`tackle \
             call`), so nothing was run.",
        )
        .with_hint(
            "Run the command in the foreground, or use tackle through `tackle serve` or an \
             embedding host to run background jobs.",
        ));
    };
    let session = cx.session().as_str();
    let spool = spool::open(&options.spool_place(session)).ok();
    let identity = cx.identity();
    let started_by = (identity.assistant_message.as_str(), identity.call.as_str());
    let job = jobs
        .start(session, started_by, &spec, spool)
        .map_err(|error| match error {
            jobs::StartError::TooMany { limit } => ToolFailure::new(format!(
                "This session already runs {limit} background jobs, the most allowed, so nothing \
             was run. Running: {}.",
                jobs.running(session)
                    .iter()
                    .map(|job| format!("{} (`{}`)", job.id, job.command))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .with_hint("Stop one with bash_kill, then start this again."),
            other => ToolFailure::new(format!("The job could not be started: {other}.")),
        })?;
    let in_background = input.run_in_background.unwrap_or(false);
    let wait = if in_background {
        options.background_grace
    } else {
        timeout
    };
    tokio::select! {
        _ = job.wait_end(wait) => {}
        () = cx.cancellation().cancelled() => {
            job.kill(Duration::ZERO).await;
            jobs.forget(&job.id);
            return Err(ToolFailure::new("The command was interrupted and stopped."));
        }
    }
    let read = job.read(None, Duration::ZERO).await;
    let mut output = if read.text.is_empty() {
        "(no output yet)\n".to_owned()
    } else {
        read.text.clone()
    };
    if !output.ends_with('\n') {
        output.push('\n');
    }
    let (exit_code, signal) = match &read.state {
        jobs::JobState::Ended(jobs::JobEnd::Exited(code)) => (Some(*code), None),
        jobs::JobState::Ended(jobs::JobEnd::Signaled(sig)) => (None, Some(*sig)),
        _ => (None, None),
    };
    let job_id = if read.state == jobs::JobState::Running {
        if in_background {
            output.push_str(&format!(
                "\nRunning in the background as {} (pid {}): `{}`. Read its output with \
                 bash_output {{\"jobId\": \"{}\"}}, answer it with bash_input, stop it with \
                 bash_kill.",
                job.id, job.pid, job.command, job.id
            ));
        } else {
            output.push_str(&format!(
                "\nStill running after the {} timeout, so it goes on in the background as {} \
                 (pid {}). Read its output with bash_output {{\"jobId\": \"{}\"}}, stop it with \
                 bash_kill.",
                human_duration(timeout),
                job.id,
                job.pid,
                job.id
            ));
        }
        Some(job.id.clone())
    } else {
        output.push_str(&format!("\n{}", exit_line(&read.state)));
        jobs.forget(&job.id);
        None
    };
    Ok(BashOutput {
        output,
        exit_code,
        signal,
        timed_out: false,
        bytes: 0,
        lines: 0,
        dropped_bytes: read.dropped,
        spool_path: job
            .spool_path
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
        background_stopped: false,
        left_running: Vec::new(),
        workdir,
        shell: shell.to_string_lossy().into_owned(),
        job_id,
    })
}

/// What the sandbox refused, told so the model can act on it, when the evidence shows it.
fn denial_note(
    sandbox: &tackle_sandbox::Prepared,
    cwd: &Path,
    output: &BashOutput,
) -> Option<String> {
    use tackle_sandbox::denial::Denial;
    let tackle_sandbox::Status::Sandboxed { mode, network, .. } = sandbox.status() else {
        return None;
    };
    let found = sandbox.denials(cwd, &output.output, output.exit_code, output.signal);
    if found.is_empty() {
        return None;
    }
    let what: Vec<String> = found
        .iter()
        .map(|denial| match denial {
            Denial::Write { path } => format!("writing `{}`", path.display()),
            Denial::Network {
                host: Some(host),
                port: Some(port),
            } => {
                format!("connecting to {host}:{port} (network: {network})")
            }
            Denial::Network {
                host: Some(host),
                port: None,
            } => {
                format!("connecting to {host} (network: {network})")
            }
            Denial::Network { .. } => format!("a network connection (network: {network})"),
            Denial::Syscall => "a system call the sandbox forbids".to_owned(),
        })
        .collect();
    let writes = if found.iter().any(|d| matches!(d, Denial::Write { .. })) {
        match mode {
            tackle_sandbox::Mode::ReadOnly => " Writes are allowed only in $TMPDIR.",
            _ => " Writes are allowed in the working directory, $TMPDIR and the tool caches.",
        }
    } else {
        ""
    };
    Some(format!(
        "sandbox: the {} sandbox refused {}.{writes} If the task needs this, call bash again \
         with sandbox: \"off\" (a person decides), or ask the user to allow it in the `sandbox` \
         configuration.",
        mode.as_str(),
        what.join(", ")
    ))
}

/// The `exit:` line of an ended job.
fn exit_line(state: &jobs::JobState) -> String {
    match state {
        jobs::JobState::Ended(jobs::JobEnd::Exited(code)) => format!("exit: {code}"),
        jobs::JobState::Ended(jobs::JobEnd::Signaled(sig)) => {
            format!("exit: killed by signal {sig}{}", signal_name(*sig))
        }
        jobs::JobState::Ended(jobs::JobEnd::Killed) => "exit: stopped by tackle".to_owned(),
        jobs::JobState::Running => "still running".to_owned(),
    }
}

/// The output text and fields of a finished run.
fn render(finished: run::Finished, timeout: Duration, workdir: String, shell: &Path) -> BashOutput {
    let capture = finished.capture;
    let mut output = if capture.text.is_empty() {
        "(no output)".to_owned()
    } else {
        capture.text
    };
    if !output.ends_with('\n') {
        output.push('\n');
    }
    let exit_code = finished.status.and_then(|s| s.code());
    let signal = finished.status.and_then(|s| s.signal());
    output.push('\n');
    match (exit_code, signal) {
        (Some(code), _) => output.push_str(&format!("exit: {code}")),
        (None, Some(sig)) => {
            output.push_str(&format!("exit: killed by signal {sig}{}", signal_name(sig)))
        }
        (None, None) => output.push_str("exit: unknown (the shell could not be waited for)"),
    }
    if finished.timed_out {
        let (how, left) = match finished.stop {
            Some(Stop::Term) | None => ("SIGTERM", ""),
            Some(Stop::TermThenKill) => ("SIGTERM, then SIGKILL", ""),
            Some(Stop::Lingering) => (
                "SIGTERM, then SIGKILL",
                " A process it started was still running 2 seconds after SIGKILL.",
            ),
        };
        output.push_str(&format!(
            "\nCommand timed out after {} and was stopped ({how}).{left} Retry with a larger \
             timeout, or run long-lived servers in the background with their output redirected \
             to a file.",
            human_duration(timeout)
        ));
    }
    let left_running: Vec<RunningProcess> = finished
        .survivors
        .iter()
        .map(|found| RunningProcess {
            pid: found.pid,
            name: found.name.clone(),
        })
        .collect();
    if finished.output_held && run::KILL_BACKGROUND {
        let named = left_running
            .iter()
            .map(|p| format!("{} ({})", p.pid, p.name))
            .collect::<Vec<_>>()
            .join(", ");
        let who = if named.is_empty() {
            "a process outside the command's process group that could not be found".to_owned()
        } else {
            format!("still running: {named}")
        };
        output.push_str(&format!(
            "\nBackground processes kept the output open and could not all be stopped ({who}). \
             Their later output is not shown. Redirect the output of background processes to a \
             file (`cmd > out.log 2>&1 &`)."
        ));
    } else if finished.background {
        if run::KILL_BACKGROUND {
            output.push_str(
                "\nBackground processes that kept the output open were stopped. Redirect the \
                 output of background processes to a file (`cmd > out.log 2>&1 &`) to keep them \
                 running.",
            );
        } else {
            output.push_str(
                "\nBackground processes kept the output open and were left running; their later \
                 output is not shown.",
            );
        }
    }
    // The middle of a long output was left out above; the kept end is what a bound keeps, so
    // the place of the whole output is repeated here, where it is seen.
    if capture.tail < capture.total
        && capture.dropped == 0
        && capture.spool_error.is_none()
        && let Some(path) = &capture.spool_path
    {
        output.push_str(&format!(
            "\nThe output was {} lines ({} bytes); its middle is left out above. Full output: {}",
            thousands(capture.lines),
            thousands(capture.total),
            path.display()
        ));
    }
    if capture.dropped > 0 {
        output.push_str(&format!(
            "\nNote: {} of {} bytes of output were dropped: only the first {} bytes were saved \
             and the last {} bytes kept.",
            thousands(capture.dropped),
            thousands(capture.total),
            thousands(capture.spooled),
            thousands(capture.tail),
        ));
    }
    if let Some(error) = &capture.spool_error {
        output.push_str(&format!(
            "\nThe spool file could not be written in full: {error}."
        ));
    }
    BashOutput {
        output,
        exit_code,
        signal,
        timed_out: finished.timed_out,
        bytes: capture.total,
        lines: capture.lines,
        dropped_bytes: capture.dropped,
        spool_path: capture.spool_path.map(|p| p.to_string_lossy().into_owned()),
        background_stopped: finished.background && run::KILL_BACKGROUND && !finished.output_held,
        left_running,
        workdir,
        shell: shell.to_string_lossy().into_owned(),
        job_id: None,
    }
}

/// The call's timeout, checked against the options.
fn timeout(options: &BashOptions, ms: Option<u64>) -> Result<Duration, ToolFailure> {
    let Some(ms) = ms else {
        return Ok(options.default_timeout);
    };
    let max = options.max_timeout.as_millis();
    if ms == 0 {
        return Err(
            ToolFailure::new("`timeout` is 0 ms, so nothing was run.").with_hint(
                "Pass a timeout in milliseconds, or leave it out for the 2-minute default.",
            ),
        );
    }
    if u128::from(ms) > max {
        return Err(ToolFailure::new(format!(
            "`timeout` is {} ms, over the maximum of {} ms ({}), so nothing was run.",
            thousands(ms),
            thousands(u64::try_from(max).unwrap_or(u64::MAX)),
            human_duration(options.max_timeout),
        ))
        .with_hint(
            "Pass a smaller timeout, or run long-lived work in the background with its output \
             redirected to a file.",
        ));
    }
    Ok(Duration::from_millis(ms))
}

/// Shells that cannot run POSIX command lines.
const REFUSED_SHELLS: &[&str] = &["fish", "nu"];

/// The shell to run: `$TACKLE_SHELL` when set, else `bash` from `PATH`, else `/bin/sh`.
pub(crate) fn choose_shell(
    configured: Option<OsString>,
    path: Option<OsString>,
) -> Result<PathBuf, ToolFailure> {
    if let Some(configured) = configured.filter(|s| !s.is_empty()) {
        let configured = PathBuf::from(configured);
        let name = configured
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if REFUSED_SHELLS.contains(&name.as_str()) {
            return Err(ToolFailure::new(format!(
                "The configured shell (`TACKLE_SHELL={}`) is {name}, which cannot run POSIX \
                 command lines, so nothing was run.",
                configured.display()
            ))
            .with_hint("Ask the user to set `TACKLE_SHELL` to bash or sh, or to unset it."));
        }
        return find_program(&configured, path.as_deref()).ok_or_else(|| {
            ToolFailure::new(format!(
                "The configured shell (`TACKLE_SHELL={}`) was not found, so nothing was run.",
                configured.display()
            ))
            .with_hint("Ask the user to set `TACKLE_SHELL` to an installed shell, or to unset it.")
        });
    }
    Ok(
        find_program(Path::new("bash"), path.as_deref())
            .unwrap_or_else(|| PathBuf::from("/bin/sh")),
    )
}

/// `program` as an executable file: itself when it has a `/`, else the first match on `path`.
fn find_program(program: &Path, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 {
        return executable(program).then(|| program.to_path_buf());
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

/// ` (SIGKILL)` for the usual signals, empty otherwise.
fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| format!(" ({})", s.as_str()))
        .unwrap_or_default()
}

/// A duration as `2m 0s`, `1.5s` or `500 ms`.
pub(crate) fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        if ms.is_multiple_of(1000) {
            format!("{}s", ms / 1000)
        } else {
            format!("{:.1}s", ms as f64 / 1000.0)
        }
    } else {
        format!("{}m {}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}
