//! The snapshot layer: a mark before and a delta after every call that may change files (every
//! tool but the read-only ones), recorded as the call's change so it can be undone.
//!
//! It runs last before a call (after name repair and aliases, so the name is the tool's) and
//! first after it. Marks are cheap: the change watcher names the directories to read again, so a
//! call that changed nothing costs a drain of the watcher's queue.
//!
//! Attribution: what changed *between* calls while a background job ran is recorded as that
//! job's change (under the call that started it); with no job running it was the user's, and is
//! not recorded. A call during which a job or another call also ran records them as overlapping
//! work, and an undo of it asks for `--force` on its paths. The first full snapshot is taken in
//! the background; a call that starts before it is ready (after a short wait) runs without a
//! snapshot, and its journal entry says so. A snapshot that fails is logged and never fails the
//! call.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use tackle_builtins::tools::bash::jobs::{Jobs, WeakJobs};
use tackle_core::names::ToolName;
use tackle_core::{Concurrency, Context, Settlement, ToolFailure};
use tackle_registry::{CallDraft, Layer, Turn};
use tackle_store::Snapshots;
use tackle_store::snapshot::{ChangeMeta, Mark};

use crate::warnings::Warnings;

/// How long a call waits for the first snapshot before it runs without one.
const READY_WAIT: Duration = Duration::from_secs(1);

pub(crate) struct SnapshotLayer {
    snapshots: Arc<Snapshots>,
    jobs: Option<WeakJobs>,
    state: Arc<Mutex<State>>,
    warnings: Warnings,
}

#[derive(Default)]
struct State {
    /// The calls running now: their "before" mark and the work that overlapped them.
    running: HashMap<CallKey, Running>,
    /// Every change up to this mark is accounted for (recorded, or the user's).
    quiet: Option<Mark>,
    /// The jobs running at the last mark, as `(session, message, call, job)`.
    jobs_seen: BTreeSet<JobRef>,
}

struct Running {
    mark: Mark,
    overlap: BTreeSet<String>,
    describe: String,
}

/// A running call: its session, call ID and sub-call index.
type CallKey = (String, String, Option<u32>);

/// A job: its session, the message and call that started it, and its ID.
type JobRef = (String, String, String, String);

impl SnapshotLayer {
    pub(crate) fn new(snapshots: Arc<Snapshots>, jobs: Option<&Jobs>, warnings: Warnings) -> Self {
        Self {
            snapshots,
            jobs: jobs.map(Jobs::downgrade),
            state: Arc::default(),
            warnings,
        }
    }

    fn running_jobs(&self) -> BTreeSet<JobRef> {
        let Some(jobs) = self.jobs.as_ref().and_then(WeakJobs::upgrade) else {
            return BTreeSet::new();
        };
        jobs.running_anywhere()
            .iter()
            .map(|job| {
                let (message, call) = job.started_by();
                (
                    job.session.clone(),
                    message.to_owned(),
                    call.to_owned(),
                    job.id.clone(),
                )
            })
            .collect()
    }
}

impl SnapshotLayer {
    /// Takes what changed since the last mark as accounted for, without recording it: an undo
    /// recorded its own change, which no job made.
    pub(crate) fn absorb(&self) {
        if !self.snapshots.is_ready() {
            return;
        }
        let mut state = self.state.lock();
        match self.snapshots.mark() {
            Ok(mark) => {
                if let Some(previous) = state.quiet.replace(mark) {
                    self.snapshots.release(previous);
                }
            }
            Err(error) => tracing::warn!(%error, "a snapshot failed"),
        }
    }
}

fn job_text(job: &JobRef) -> String {
    format!("background job `{}` (started by call `{}`)", job.3, job.2)
}

fn key(cx: &Context) -> CallKey {
    let identity = cx.identity();
    (
        identity.session.as_str().to_owned(),
        identity.call.as_str().to_owned(),
        identity.sub_call,
    )
}

/// The call as a change row names it: `call`, or `call#n` for a batch sub-call.
fn call_id(cx: &Context) -> String {
    let identity = cx.identity();
    match identity.sub_call {
        Some(index) => format!("{}#{index}", identity.call.as_str()),
        None => identity.call.as_str().to_owned(),
    }
}

/// Brings the picture up to date and returns a mark for now. What changed since the last mark
/// is recorded as the work of the background jobs that ran meanwhile (with none running, it
/// was the user's, and is not recorded).
fn checkpoint(
    snapshots: &Snapshots,
    state: &mut State,
    jobs_now: &BTreeSet<JobRef>,
) -> Result<Mark, tackle_store::SnapshotError> {
    let (mark, delta) = match &state.quiet {
        Some(previous) => snapshots.since(previous)?,
        None => (snapshots.mark()?, Default::default()),
    };
    let seen = std::mem::replace(&mut state.jobs_seen, jobs_now.clone());
    let jobs: Vec<&JobRef> = seen.union(jobs_now).collect();
    if let Some(first) = jobs.first()
        && !delta.is_empty()
    {
        let meta = ChangeMeta {
            session: first.0.clone(),
            message: first.1.clone(),
            call: first.2.clone(),
            tool: "bash job".into(),
            overlap: jobs[1..].iter().map(|job| job_text(job)).collect(),
        };
        if let Err(error) = snapshots.record(&meta, &delta) {
            tracing::warn!(%error, "recording a job's change failed");
        }
    }
    if let Some(previous) = state.quiet.replace(snapshots.duplicate(&mark)) {
        snapshots.release(previous);
    }
    Ok(mark)
}

impl Layer for SnapshotLayer {
    fn before<'a>(
        &'a self,
        turn: &'a Turn,
        cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            // `batch` is not bracketed: each of its sub-calls is.
            if call.name() == ToolName::BATCH.as_str() {
                return Ok(());
            }
            // Unknown names and read-only tools change nothing.
            let may_write = turn
                .get(call.name())
                .is_some_and(|tool| tool.definition().concurrency != Concurrency::ReadOnly);
            if !may_write {
                return Ok(());
            }
            let snapshots = self.snapshots.clone();
            let state = self.state.clone();
            let jobs_now = self.running_jobs();
            let key = key(cx);
            let describe = format!("call `{}` of session `{}`", call_id(cx), key.0);
            let taken = tokio::task::spawn_blocking(move || {
                if !snapshots.wait_ready(READY_WAIT) {
                    return Err(tackle_store::SnapshotError::NotReady);
                }
                let mut state = state.lock();
                let mark = checkpoint(&snapshots, &mut state, &jobs_now)?;
                // Whatever else runs now overlaps this call, and this call overlaps it.
                let mut overlap: BTreeSet<String> = jobs_now.iter().map(job_text).collect();
                for running in state.running.values_mut() {
                    running.overlap.insert(describe.clone());
                    overlap.insert(running.describe.clone());
                }
                state.running.insert(
                    key,
                    Running {
                        mark,
                        overlap,
                        describe,
                    },
                );
                Ok(())
            })
            .await;
            match taken {
                Ok(Ok(())) => {}
                Ok(Err(tackle_store::SnapshotError::NotReady)) => call.note(
                    "snapshot: the first snapshot of the Location was not ready yet, so this \
                     call cannot be undone",
                ),
                Ok(Err(error)) => {
                    self.warnings.session(
                        cx.identity().session.as_str(),
                        format!(
                            "the snapshot before call `{}` failed ({error}); it cannot be undone",
                            call_id(cx)
                        ),
                    );
                    call.note(format!(
                        "snapshot: failed ({error}); this call cannot be undone"
                    ));
                }
                Err(_) => {}
            }
            Ok(())
        })
    }

    fn after<'a>(
        &'a self,
        _turn: &'a Turn,
        cx: &'a Context,
        settlement: &'a mut Settlement,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let key = key(cx);
            if !self.state.lock().running.contains_key(&key) {
                return;
            }
            let snapshots = self.snapshots.clone();
            let state = self.state.clone();
            let jobs_now = self.running_jobs();
            let identity = cx.identity();
            let mut meta = ChangeMeta {
                session: identity.session.as_str().to_owned(),
                message: identity.assistant_message.as_str().to_owned(),
                call: call_id(cx),
                tool: settlement.tool.clone(),
                overlap: Vec::new(),
            };
            let warnings = self.warnings.clone();
            let recorded = tokio::task::spawn_blocking(move || {
                let mut state = state.lock();
                let running = state.running.remove(&key)?;
                let result = snapshots.since(&running.mark);
                snapshots.release(running.mark);
                let (now, delta) = match result {
                    Ok(taken) => taken,
                    Err(error) => {
                        warnings.session(
                            &meta.session,
                            format!(
                                "the snapshot after call `{}` failed ({error}); it cannot be \
                                 undone",
                                meta.call
                            ),
                        );
                        return None;
                    }
                };
                // What this call saw is accounted for: it is recorded as this call's.
                if let Some(previous) = state.quiet.replace(now) {
                    snapshots.release(previous);
                }
                let mut overlap = running.overlap;
                overlap.extend(jobs_now.iter().map(job_text));
                state.jobs_seen = jobs_now;
                if delta.is_empty() {
                    return None;
                }
                meta.overlap = overlap.into_iter().collect();
                match snapshots.record(&meta, &delta) {
                    Ok(change) => Some(change),
                    Err(error) => {
                        warnings.session(
                            &meta.session,
                            format!(
                                "recording what call `{}` changed failed ({error}); it cannot be \
                                 undone",
                                meta.call
                            ),
                        );
                        None
                    }
                }
            })
            .await;
            if let Ok(Some(change)) = recorded {
                settlement.annotations.push(format!(
                    "change: #{} ({} path{})",
                    change.seq,
                    change.files.len(),
                    if change.files.len() == 1 { "" } else { "s" }
                ));
            }
        })
    }
}
