//! Undo without git: the changes the snapshot layer recorded, listed (`history`), diffed, and
//! reverted per file with compare-and-swap (`undo`). A revert is recorded as a change of its
//! own, so undoing it redoes.

use std::fmt::Write as _;

use tackle_store::snapshot::revert::{self, Plan};
use tackle_store::{Change, SnapshotError};

use crate::{Host, HostError};

/// Which changes to revert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UndoTarget {
    /// The session's last N changes (an undo counts as one, so undoing it redoes).
    Last(usize),
    /// The change of one call (its provider call ID).
    Call(String),
    /// Every change of one assistant message.
    Message(String),
    /// The change of one call and every later change of the session.
    Since(String),
}

/// What an undo did, or would do.
#[derive(Clone, Debug)]
pub struct UndoReport {
    /// The changes reverted, oldest first.
    pub changes: Vec<Change>,
    /// The per-file plan, conflicts included.
    pub plan: Plan,
    /// The files written or deleted (empty for a dry run).
    pub applied: Vec<String>,
    /// True when nothing was changed on purpose.
    pub dry_run: bool,
}

impl UndoReport {
    /// The plan as lines for a person or a model: one per file (`M path (+1 -2)`), then each
    /// conflict with its diff, then what was done.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let calls: Vec<String> = self
            .changes
            .iter()
            .map(|c| format!("{} `{}`", c.tool, c.call))
            .collect();
        let _ = writeln!(
            out,
            "Undo of {} change{}: {}",
            self.changes.len(),
            if self.changes.len() == 1 { "" } else { "s" },
            calls.join(", ")
        );
        for file in &self.plan.files {
            let mark = if file.conflict.is_some() {
                "  (conflict)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{} {} (+{} -{}){mark}",
                file.action.letter(),
                file.path,
                file.additions,
                file.deletions
            );
        }
        for file in self.plan.conflicts() {
            let _ = writeln!(out, "\n{}", file.conflict.as_deref().unwrap_or_default());
        }
        if self.dry_run {
            out.push_str("Dry run: nothing was changed.");
        } else {
            let left = self.plan.conflicts().count();
            let _ = write!(
                out,
                "Restored {} file{}.",
                self.applied.len(),
                if self.applied.len() == 1 { "" } else { "s" }
            );
            if left > 0 {
                let _ = write!(
                    out,
                    " {left} file{} left alone (changed since; --force overwrites).",
                    if left == 1 { " was" } else { "s were" }
                );
            }
        }
        out
    }
}

/// One recorded change with its files.
#[derive(Clone, Debug)]
pub struct HistoryEntry {
    /// The change.
    pub change: Change,
    /// Each file it changed: `M`/`A`/`D`, the path, lines added and removed.
    pub files: Vec<(char, String, usize, usize)>,
}

fn snapshot_error(error: SnapshotError) -> HostError {
    HostError::Snapshot(error.to_string())
}

impl Host {
    /// The changes recorded for `session`, oldest first, each with its diffstat.
    pub fn history(&self, session: &str) -> Result<Vec<HistoryEntry>, HostError> {
        let snapshots = &self.snapshots;
        let mut entries = Vec::new();
        for change in snapshots.changes(session).map_err(snapshot_error)? {
            let before = snapshots.manifest(&change.before).map_err(snapshot_error)?;
            let after = snapshots.manifest(&change.after).map_err(snapshot_error)?;
            let files = revert::differing(&before, &after)
                .into_iter()
                .map(|path| {
                    let old = before.files.get(&path);
                    let new = after.files.get(&path);
                    let text = |entry: Option<&tackle_store::snapshot::Entry>| {
                        entry
                            .and_then(|e| snapshots.object(&e.hash).ok())
                            .and_then(|b| String::from_utf8(b).ok())
                            .unwrap_or_default()
                    };
                    let (added, removed) = revert::diffstat(&text(old), &text(new));
                    let letter = match (old, new) {
                        (None, _) => 'A',
                        (_, None) => 'D',
                        _ => 'M',
                    };
                    (letter, path, added, removed)
                })
                .collect();
            entries.push(HistoryEntry { change, files });
        }
        Ok(entries)
    }

    /// The unified diff between two snapshots (IDs from the change log or a settlement's
    /// `snapshot:` annotation).
    pub fn diff(&self, from: &str, to: &str) -> Result<String, HostError> {
        let snapshots = &self.snapshots;
        let before = snapshots.manifest(from).map_err(snapshot_error)?;
        let after = snapshots.manifest(to).map_err(snapshot_error)?;
        let text = |entry: Option<&tackle_store::snapshot::Entry>| {
            entry
                .and_then(|e| snapshots.object(&e.hash).ok())
                .map(|b| String::from_utf8(b).unwrap_or_else(|_| "(binary)\n".to_owned()))
                .unwrap_or_default()
        };
        Ok(revert::differing(&before, &after)
            .into_iter()
            .map(|path| {
                revert::unified(
                    &path,
                    &text(before.files.get(&path)),
                    &text(after.files.get(&path)),
                )
            })
            .collect())
    }

    /// Reverts `target`'s changes in `session`: each file gets back its content from before
    /// them, where it still holds what they left (otherwise it is a conflict, left alone unless
    /// `force`). With `dry_run`, only plans. The revert is recorded as a change of its own.
    pub async fn undo(
        &self,
        session: &str,
        target: UndoTarget,
        dry_run: bool,
        force: bool,
    ) -> Result<UndoReport, HostError> {
        let snapshots = self.snapshots.clone();
        let session = session.to_owned();
        let task = tokio::task::spawn_blocking(move || {
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
                    "nothing to undo: no recorded change matches {target:?} in session `{session}`"
                )));
            }
            let plan = revert::plan(&snapshots, &changes).map_err(snapshot_error)?;
            if dry_run {
                return Ok(UndoReport {
                    changes,
                    plan,
                    applied: Vec::new(),
                    dry_run,
                });
            }
            let before = snapshots.take().map_err(snapshot_error)?;
            let applied = revert::apply(&snapshots, &plan, force).map_err(snapshot_error)?;
            let after = snapshots.take().map_err(snapshot_error)?;
            if before != after {
                let call = format!("undo-{}", changes.last().map(|c| c.seq).unwrap_or_default());
                snapshots
                    .record(&session, "undo", &call, "undo", &before, &after)
                    .map_err(snapshot_error)?;
            }
            Ok(UndoReport {
                changes,
                plan,
                applied,
                dry_run,
            })
        });
        task.await
            .map_err(|e| HostError::Snapshot(format!("the undo stopped: {e}")))?
    }
}
