//! The tools over background jobs: `bash_output` (new output, or the session's jobs),
//! `bash_input` (write to a job's stdin) and `bash_kill` (stop a job).
//!
//! They ask no permission of their own: starting the job asked `bash`. They reach only the
//! calling session's jobs.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure, thousands};

use super::jobs::{Job, JobEventKind, JobState, Jobs, KILL_GRACE};
use super::{exit_line, human_duration};

/// The longest `wait` of bash_output.
pub const MAX_OUTPUT_WAIT: Duration = Duration::from_secs(120);
/// How long bash_input waits for the job's answer.
const INPUT_ECHO_WAIT: Duration = Duration::from_millis(500);

const OUTPUT_DESCRIPTION: &str = "Read the new output of a background job (started with bash \
runInBackground), or list this session's jobs when jobId is left out.\n\
- Returns only output not shown before (stdout and stderr in arrival order), then the job's \
state: running, exited N, or killed.\n\
- filter is a regular expression: only matching lines are shown (the others still count as \
read).\n\
- wait (milliseconds, at most 120000) blocks until new output arrives or the job ends, so there \
is no need to poll in a loop.";

const INPUT_DESCRIPTION: &str = "Write text to the stdin of a background job, for programs \
that prompt. Include the newline (\"yes\\n\"). close: true closes stdin afterwards (end of \
input). Returns the job's output that follows within half a second.";

const KILL_DESCRIPTION: &str = "Stop a background job: SIGTERM to it and everything it \
started, then SIGKILL after 3 seconds. Returns its final state and the end of its output.";

/// Arguments of bash_output.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashOutputInput {
    /// The job, such as `job-1`; leave it out to list this session's jobs.
    #[serde(default)]
    pub job_id: Option<String>,
    /// A regular expression: only lines matching it are shown.
    #[serde(default)]
    pub filter: Option<String>,
    /// Milliseconds to wait for new output or the job's end when there is none yet (at most
    /// 120000).
    #[serde(default)]
    pub wait: Option<u64>,
}

/// Arguments of bash_input.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashInputInput {
    /// The job, such as `job-1`.
    pub job_id: String,
    /// The text to write, newline included.
    pub text: String,
    /// Close stdin after writing.
    #[serde(default)]
    pub close: Option<bool>,
}

/// Arguments of bash_kill.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashKillInput {
    /// The job, such as `job-1`.
    pub job_id: String,
}

/// The result of the job tools.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobResult {
    /// What the model reads.
    pub output: String,
    /// The job's state (`running`, `exited 0`, `killed`), when one job was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Bytes the job's output window lost before they were read.
    #[serde(default)]
    pub dropped_bytes: u64,
}

/// `bash_output`, `bash_input` and `bash_kill` over `jobs`.
pub(crate) fn tools(jobs: &Jobs) -> [(&'static str, AnyTool); 3] {
    let shared = Arc::new(jobs.clone());
    [
        (
            tackle_core::names::ToolName::BASH_OUTPUT.as_str(),
            Tool::with_state(OUTPUT_DESCRIPTION, shared.clone(), output)
                .with_projection(crate::tools::project_output)
                .with_output_limits(tackle_core::LimitsOverride {
                    direction: Some(tackle_core::Direction::Tail),
                    ..Default::default()
                })
                .erase(),
        ),
        (
            tackle_core::names::ToolName::BASH_INPUT.as_str(),
            Tool::with_state(INPUT_DESCRIPTION, shared.clone(), input)
                .with_projection(crate::tools::project_output)
                .erase(),
        ),
        (
            tackle_core::names::ToolName::BASH_KILL.as_str(),
            Tool::with_state(KILL_DESCRIPTION, shared, kill)
                .with_projection(crate::tools::project_output)
                .erase(),
        ),
    ]
}

fn find(jobs: &Jobs, cx: &Context, id: &str) -> Result<Arc<Job>, ToolFailure> {
    let session = cx.session().as_str();
    jobs.get(session, id).ok_or_else(|| {
        let known: Vec<String> = jobs
            .of_session(session)
            .iter()
            .map(|job| job.id.clone())
            .collect();
        let known = if known.is_empty() {
            "This session has no background jobs.".to_owned()
        } else {
            format!("This session's jobs: {}.", known.join(", "))
        };
        ToolFailure::new(format!(
            "There is no background job `{id}` in this session. {known}"
        ))
        .with_hint("Call bash_output without jobId to list them.")
    })
}

/// Logs `kind` for `job` under the calling settlement's identity.
fn record(job: &Job, cx: &Context, kind: JobEventKind) {
    let identity = cx.identity();
    job.record(
        identity.assistant_message.as_str(),
        identity.call.as_str(),
        kind,
    );
}

fn listing(jobs: &Jobs, session: &str) -> String {
    let all = jobs.of_session(session);
    if all.is_empty() {
        return "This session has no background jobs. Start one with bash and \
                runInBackground: true."
            .to_owned();
    }
    all.iter()
        .map(|job| {
            format!(
                "{} {} for {} (pid {}): `{}`, {} bytes unread",
                job.id,
                job.state(),
                human_duration(Duration::from_secs(job.age().as_secs())),
                job.pid,
                job.command,
                thousands(job.unread())
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn state_line(job: &Job, state: &JobState) -> String {
    match state {
        JobState::Running => format!("[{} is running]", job.id),
        ended => format!("[{} ended: {}]", job.id, exit_line(ended)),
    }
}

async fn output(
    State(jobs): State<Arc<Jobs>>,
    input: BashOutputInput,
    cx: Context,
) -> Result<JobResult, ToolFailure> {
    let Some(id) = &input.job_id else {
        return Ok(JobResult {
            output: listing(&jobs, cx.session().as_str()),
            state: None,
            dropped_bytes: 0,
        });
    };
    let job = find(&jobs, &cx, id)?;
    let filter = match &input.filter {
        Some(pattern) => Some(regex::Regex::new(pattern).map_err(|e| {
            ToolFailure::new(format!("`filter` is not a valid regular expression: {e}"))
        })?),
        None => None,
    };
    let wait = Duration::from_millis(input.wait.unwrap_or(0)).min(MAX_OUTPUT_WAIT);
    let read = tokio::select! {
        read = job.read(filter.as_ref(), wait) => read,
        () = cx.cancellation().cancelled() => {
            return Err(ToolFailure::interruption("bash_output was interrupted"));
        }
    };
    let mut output = if read.text.is_empty() {
        "(no new output)\n".to_owned()
    } else {
        read.text.clone()
    };
    if !output.ends_with('\n') {
        output.push('\n');
    }
    if read.dropped > 0 {
        output.push_str(&format!(
            "({} bytes before this were dropped: the job printed more than its {} window since \
             the last read.{})\n",
            thousands(read.dropped),
            "1 MiB",
            job.spool_path
                .as_ref()
                .map(|p| format!(" The full output is in {}.", p.display()))
                .unwrap_or_default()
        ));
    }
    output.push_str(&state_line(&job, &read.state));
    if read.state != JobState::Running {
        jobs.forget(&job.id);
    }
    Ok(JobResult {
        output,
        state: Some(read.state.to_string()),
        dropped_bytes: read.dropped,
    })
}

async fn input(
    State(jobs): State<Arc<Jobs>>,
    input: BashInputInput,
    cx: Context,
) -> Result<JobResult, ToolFailure> {
    let job = find(&jobs, &cx, &input.job_id)?;
    if job.state() != JobState::Running {
        return Err(ToolFailure::new(format!(
            "{} has ended ({}), so it reads no input.",
            job.id,
            job.state()
        )));
    }
    let close = input.close.unwrap_or(false);
    job.write_input(&input.text, close)
        .await
        .map_err(|reason| {
            ToolFailure::new(format!("Nothing was written to {}: {reason}.", job.id))
        })?;
    record(
        &job,
        &cx,
        JobEventKind::Input {
            bytes: input.text.len(),
            closed: close,
        },
    );
    let read = job.read(None, INPUT_ECHO_WAIT).await;
    let mut output = format!(
        "Wrote {} bytes to {}'s stdin{}.\n",
        thousands(input.text.len() as u64),
        job.id,
        if close { " and closed it" } else { "" }
    );
    if !read.text.is_empty() {
        output.push_str(&read.text);
        if !output.ends_with('\n') {
            output.push('\n');
        }
    }
    output.push_str(&state_line(&job, &read.state));
    Ok(JobResult {
        output,
        state: Some(read.state.to_string()),
        dropped_bytes: read.dropped,
    })
}

async fn kill(
    State(jobs): State<Arc<Jobs>>,
    input: BashKillInput,
    cx: Context,
) -> Result<JobResult, ToolFailure> {
    let job = find(&jobs, &cx, &input.job_id)?;
    record(&job, &cx, JobEventKind::Kill);
    let state = job.kill(KILL_GRACE).await;
    let tail = job.tail(20);
    jobs.forget(&job.id);
    let mut output = format!("{} (`{}`): {}.", job.id, job.command, exit_line(&state));
    if !tail.is_empty() {
        output.push_str(&format!("\nLast output:\n{tail}"));
    }
    Ok(JobResult {
        output,
        state: Some(state.to_string()),
        dropped_bytes: 0,
    })
}
