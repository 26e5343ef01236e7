//! Undo without git: the changes the snapshot layer recorded, listed (`history`, `sessions`),
//! diffed, and reverted all or nothing (`undo`). A revert is recorded as a change of its own,
//! under a unique `undo-<seq>` call, so undoing it redoes.

use std::fmt::Write as _;

use tackle_store::snapshot::revert::{self, ApplyError, Plan};
use tackle_store::snapshot::{Change, Entry, FileChange, Kind, SessionSummary};
use tackle_store::{SnapshotError, Snapshots};

use crate::{Host, HostError};

/// Which changes to revert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UndoTarget {
    /// The session's last N changes (an undo counts as one, so undoing it redoes).
    Last(usize),
    /// The change of one call (its provider call ID, or an undo's `undo-<seq>`).
    Call(String),
    /// Every change of one assistant message.
    Message(String),
    /// The change of one call and every later change of the session.
    Since(String),
}

/// How an undo ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UndoOutcome {
    /// Only planned, on purpose.
    DryRun,
    /// Everything is already as the undo would leave it.
    NothingToDo,
    /// Not applied: some path is blocked, or conflicts and no `--force`. Nothing changed.
    Refused,
    /// Applied and recorded under this call ID.
    Applied(String),
    /// A step failed and everything was put back: nothing changed.
    RolledBack(String),
    /// A step failed and putting back failed too: the message says which paths are left.
    Partial(String),
}

/// What an undo did, or would do.
#[derive(Clone, Debug)]
pub struct UndoReport {
    /// The session whose changes were reverted.
    pub session: String,
    /// Whether the session was chosen as the Location's most recent (none was named).
    pub session_chosen: bool,
    /// The changes reverted, oldest first.
    pub changes: Vec<Change>,
    /// The per-path plan, conflicts and blocked paths included.
    pub plan: Plan,
    /// Whether conflicts were overwritten.
    pub forced: bool,
    /// How it ended.
    pub outcome: UndoOutcome,
}

impl UndoReport {
    /// Whether the tree was changed.
    pub fn applied(&self) -> bool {
        matches!(self.outcome, UndoOutcome::Applied(_))
    }

    /// The plan and its outcome for a person or a model: the session, one line per path
    /// (`M path (+1 -2)`), each conflict and blocked path with why, then what was done.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let calls: Vec<String> = self
            .changes
            .iter()
            .map(|c| format!("{} `{}`", c.tool, c.call))
            .collect();
        let chosen = if self.session_chosen {
            " (the most recent session that changed this Location; name another with --session)"
        } else {
            ""
        };
        let _ = writeln!(out, "Session `{}`{chosen}.", self.session);
        let _ = writeln!(
            out,
            "Undo of {} change{}: {}",
            self.changes.len(),
            plural(self.changes.len()),
            calls.join(", ")
        );
        for file in &self.plan.files {
            let mark = if file.blocked.is_some() {
                "  (blocked)"
            } else if file.kept.is_some() {
                "  (kept)"
            } else if file.conflict.is_some() {
                "  (conflict)"
            } else {
                ""
            };
            let slash = if file.kind() == Some(Kind::Dir) {
                "/"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{} {}{slash} (+{} -{}){mark}",
                file.action.letter(),
                file.path,
                file.additions,
                file.deletions
            );
        }
        if self.plan.shadowed > 0 {
            let _ = writeln!(
                out,
                "{} ignored path{} left untouched (ignored before or after the change).",
                self.plan.shadowed,
                plural(self.plan.shadowed)
            );
        }
        for file in self.plan.blocked() {
            let _ = writeln!(out, "\n{}", file.blocked.as_deref().unwrap_or_default());
        }
        for file in self.plan.conflicts().filter(|f| f.blocked.is_none()) {
            let _ = writeln!(out, "\n{}", file.conflict.as_deref().unwrap_or_default());
        }
        for file in self.plan.kept() {
            let _ = writeln!(out, "\n{}", file.kept.as_deref().unwrap_or_default());
        }
        let written = self.plan.files.iter().filter(|f| f.kept.is_none()).count();
        let conflicts = self.plan.conflicts().count();
        match &self.outcome {
            UndoOutcome::DryRun => out.push_str("Dry run: nothing was changed."),
            UndoOutcome::NothingToDo => {
                out.push_str("Nothing to do: every path is already as the undo would leave it.")
            }
            UndoOutcome::Refused if self.plan.blocked().next().is_some() => out.push_str(
                "Nothing was changed: the blocked paths above cannot be reverted, even with \
                 --force.",
            ),
            UndoOutcome::Refused => {
                let _ = write!(
                    out,
                    "Nothing was changed: {conflicts} path{} changed since. Run the same undo \
                     with --force to overwrite {}.",
                    plural(conflicts),
                    if conflicts == 1 { "it" } else { "them" }
                );
            }
            UndoOutcome::Applied(id) => {
                let _ = write!(out, "Reverted {written} path{}", plural(written));
                if self.forced && conflicts > 0 {
                    let _ = write!(out, ", {conflicts} of them overwritten (--force)");
                }
                let _ = write!(out, ". Recorded as `{id}`: undo it with --call {id}.");
            }
            UndoOutcome::RolledBack(message) | UndoOutcome::Partial(message) => {
                let _ = write!(out, "The undo failed: {message}.");
            }
        }
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// One recorded change with its paths.
#[derive(Clone, Debug)]
pub struct HistoryEntry {
    /// The change.
    pub change: Change,
    /// Each path it changed: `M`/`A`/`D`, the path (directories end in `/`), lines added and
    /// removed.
    pub files: Vec<(char, String, usize, usize)>,
}

fn snapshot_error(error: SnapshotError) -> HostError {
    HostError::Snapshot(error.to_string())
}

impl Host {
    fn history_entry(snapshots: &Snapshots, change: Change) -> HistoryEntry {
        let text = |entry: Option<&Entry>| revert::text(snapshots, entry).unwrap_or_default();
        let files = change
            .files
            .iter()
            .map(|file| {
                let (added, removed) =
                    revert::diffstat(&text(file.before.as_ref()), &text(file.after.as_ref()));
                let letter = match (&file.before, &file.after) {
                    (None, _) => 'A',
                    (_, None) => 'D',
                    _ => 'M',
                };
                let is_dir = [&file.before, &file.after]
                    .into_iter()
                    .flatten()
                    .any(|e| e.kind == Kind::Dir);
                let slash = if is_dir { "/" } else { "" };
                (letter, format!("{}{slash}", file.path), added, removed)
            })
            .collect();
        HistoryEntry { change, files }
    }

    /// The changes recorded for `session`, oldest first, each with its diffstat.
    pub fn history(&self, session: &str) -> Result<Vec<HistoryEntry>, HostError> {
        let snapshots = self.snapshots.get()?;
        let changes = snapshots.changes(session).map_err(snapshot_error)?;
        Ok(changes
            .into_iter()
            .map(|c| Self::history_entry(snapshots, c))
            .collect())
    }

    /// The Location's last `limit` changes across every session, newest first.
    pub fn recent_history(&self, limit: usize) -> Result<Vec<HistoryEntry>, HostError> {
        let snapshots = self.snapshots.get()?;
        let changes = snapshots.recent(limit).map_err(snapshot_error)?;
        Ok(changes
            .into_iter()
            .map(|c| Self::history_entry(snapshots, c))
            .collect())
    }

    /// The sessions that changed this Location, the most recent first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, HostError> {
        self.snapshots.get()?.sessions().map_err(snapshot_error)
    }

    /// The unified diff of one recorded change.
    pub fn diff(&self, change: &Change) -> String {
        let Ok(snapshots) = self.snapshots.get() else {
            return String::new();
        };
        let text = |entry: Option<&Entry>| match entry {
            Some(e) if e.kind == Kind::File => revert::text(snapshots, Some(e))
                .unwrap_or_else(|| "(binary or not kept)\n".to_owned()),
            Some(e) if e.kind == Kind::Symlink => snapshots
                .object(&e.hash)
                .map(|t| format!("-> {}\n", String::from_utf8_lossy(&t)))
                .unwrap_or_default(),
            _ => String::new(),
        };
        change
            .files
            .iter()
            .map(
                |FileChange {
                     path,
                     before,
                     after,
                 }| {
                    revert::unified(
                        &path.display(),
                        &text(before.as_ref()),
                        &text(after.as_ref()),
                    )
                },
            )
            .collect()
    }

    /// Reverts `target`'s changes in `session` (by default the session of the Location's most
    /// recent change), all or nothing: every path gets back its state from before them, where
    /// it still holds what they left; a path changed since is a conflict, and nothing is done
    /// unless `force`. With `dry_run`, only plans. An applied revert is recorded as a change of
    /// its own.
    pub async fn undo(
        &self,
        session: Option<&str>,
        target: UndoTarget,
        dry_run: bool,
        force: bool,
    ) -> Result<UndoReport, HostError> {
        let snapshots = self.snapshots.get()?.clone();
        let session = session.map(str::to_owned);
        let task = tokio::task::spawn_blocking(move || {
            let (session, session_chosen) = match session {
                Some(session) => (session, false),
                None => match snapshots.latest_session().map_err(snapshot_error)? {
                    Some(session) => (session, true),
                    None => {
                        return Err(HostError::Snapshot(
                            "nothing to undo: no change is recorded in this Location (changes \
                             are recorded under `tackle serve`, by embedders, or with \
                             \"snapshot\": true)"
                                .into(),
                        ));
                    }
                },
            };
            let all = snapshots.changes(&session).map_err(snapshot_error)?;
            let changes: Vec<Change> = match &target {
                UndoTarget::Last(n) => all[all.len().saturating_sub(*n)..].to_vec(),
                UndoTarget::Call(call) => all.into_iter().filter(|c| &c.call == call).collect(),
                UndoTarget::Message(message) => {
                    all.into_iter().filter(|c| &c.message == message).collect()
                }
                UndoTarget::Since(call) => match all.iter().position(|c| &c.call == call) {
                    Some(at) => all[at..].to_vec(),
                    None => Vec::new(),
                },
            };
            if changes.is_empty() {
                return Err(HostError::Snapshot(format!(
                    "nothing to undo: no recorded change matches {target:?} in session \
                     `{session}` (see `tackle history` and `tackle sessions`)"
                )));
            }
            let plan = revert::plan(&snapshots, &changes).map_err(snapshot_error)?;
            let mut report = UndoReport {
                session,
                session_chosen,
                changes,
                plan,
                forced: force,
                outcome: UndoOutcome::DryRun,
            };
            if dry_run {
                return Ok(report);
            }
            if report.plan.files.iter().all(|f| f.kept.is_some()) {
                report.outcome = UndoOutcome::NothingToDo;
                return Ok(report);
            }
            report.outcome = match revert::apply(&snapshots, &report.plan, force) {
                Ok(_) => {
                    let change = snapshots
                        .record_undo(&report.session, &report.plan.delta())
                        .map_err(snapshot_error)?;
                    UndoOutcome::Applied(change.call)
                }
                Err(ApplyError::Refused) => UndoOutcome::Refused,
                Err(error @ ApplyError::RolledBack { .. }) => {
                    UndoOutcome::RolledBack(error.to_string())
                }
                Err(error @ ApplyError::Partial { .. }) => UndoOutcome::Partial(error.to_string()),
            };
            Ok(report)
        });
        let report = task
            .await
            .map_err(|e| HostError::Snapshot(format!("the undo stopped: {e}")))??;
        // The undo's own writes are its recorded change; no job made them.
        if let Some(layer) = &self.snapshot_layer {
            layer.absorb();
        }
        Ok(report)
    }
}
