//! Reverting changes, all or nothing: plan every step in memory, check every precondition,
//! then apply in a safe order and roll back if the file system still fails midway.
//!
//! For each path the reverted changes touched, the revert wants what was there before the first
//! of them (`desired`) and expects what the last of them left (`expected`). The plan reads what
//! is there now, by descriptor (see [`contained`](super::contained)):
//! - already as desired: nothing to do;
//! - not as expected (changed since, or written while other work overlapped the call): a
//!   conflict, shown with a diff, applied only when forced;
//! - something the revert must never do (write through a symlinked or removed directory,
//!   replace a FIFO, restore bytes that were never kept): blocked, even when forced;
//! - a directory to remove that still holds something the revert does not remove (an ignored
//!   file, a file made since): kept in place and said so.
//!
//! A path that was ignored (opaque) at either end of any reverted change is not planned at all.
//!
//! Steps run in three passes: removals deepest first, then creations shallowest first (a
//! directory before what goes in it; a new directory is made private until its mode is set),
//! then directory modes deepest first. Every step checks, under the directory's lock, that the
//! path still holds what the plan saw (compare-and-swap); a step that fails undoes the steps
//! before it, so the tree is as it was and the caller can say nothing changed.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::contained::{self, DirError, Found, Root};
use super::{
    Change, Delta, Entry, FileChange, Kind, RelPath, SnapshotError, Snapshots, same_state,
};

/// What a revert does to one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Put back its earlier content, kind or mode.
    Restore,
    /// Remove it: the reverted changes created it.
    Delete,
    /// Create it again: the reverted changes removed it.
    Recreate,
}

impl Action {
    /// One letter, as in a diffstat (`M`, `D`, `A`).
    pub fn letter(self) -> char {
        match self {
            Action::Restore => 'M',
            Action::Delete => 'D',
            Action::Recreate => 'A',
        }
    }
}

/// One path of a revert plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePlan {
    /// The path, relative to the Location.
    pub path: RelPath,
    /// What the revert does.
    pub action: Action,
    /// Lines the revert adds (0 for binary files, links and directories).
    pub additions: usize,
    /// Lines it removes.
    pub deletions: usize,
    /// Why it needs `--force`: it changed since the reverted changes (with a diff from what is
    /// there to what the revert writes), or other work overlapped the call that changed it.
    pub conflict: Option<String>,
    /// Why it cannot be reverted at all, even with `--force`.
    pub blocked: Option<String>,
    /// A directory the revert would remove, kept because it holds something else (why).
    pub kept: Option<String>,
    current: Found,
    desired: Option<Entry>,
}

impl FilePlan {
    /// The kind the path has after the revert (or had, when the revert removes it).
    pub fn kind(&self) -> Option<Kind> {
        self.desired
            .as_ref()
            .map(|e| e.kind)
            .or_else(|| self.current.entry().map(|e| e.kind))
    }
}

/// What a revert would do, path by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The paths, a directory before what is under it.
    pub files: Vec<FilePlan>,
    /// How many paths the changes touched while they were ignored: never touched here.
    pub shadowed: usize,
}

impl Plan {
    /// The paths that need `--force`.
    pub fn conflicts(&self) -> impl Iterator<Item = &FilePlan> {
        self.files.iter().filter(|f| f.conflict.is_some())
    }

    /// The paths that cannot be reverted.
    pub fn blocked(&self) -> impl Iterator<Item = &FilePlan> {
        self.files.iter().filter(|f| f.blocked.is_some())
    }

    /// The directories kept in place.
    pub fn kept(&self) -> impl Iterator<Item = &FilePlan> {
        self.files.iter().filter(|f| f.kept.is_some())
    }

    /// Whether the plan can be applied: nothing blocked, and no conflict unless forced.
    pub fn can_apply(&self, force: bool) -> bool {
        self.blocked().next().is_none() && (force || self.conflicts().next().is_none())
    }

    /// The paths the plan writes, with their state now and after (kept directories left out).
    pub fn delta(&self) -> Delta {
        Delta {
            files: self
                .files
                .iter()
                .filter(|f| f.kept.is_none())
                .map(|f| FileChange {
                    path: f.path.clone(),
                    before: f.current.entry().cloned(),
                    after: f.desired.clone(),
                })
                .collect(),
            shadowed: Vec::new(),
        }
    }
}

/// What the reverted changes want of one path.
struct Want {
    desired: Option<Entry>,
    expected: Option<Entry>,
    overlap: Vec<String>,
}

/// The plan to revert `changes` (oldest first). Reads the tree; changes nothing.
pub fn plan(snapshots: &Snapshots, changes: &[Change]) -> Result<Plan, SnapshotError> {
    let mut wants: BTreeMap<RelPath, Want> = BTreeMap::new();
    let mut shadowed: BTreeSet<RelPath> = BTreeSet::new();
    for change in changes {
        shadowed.extend(change.shadowed.iter().cloned());
        for file in &change.files {
            let want = wants.entry(file.path.clone()).or_insert_with(|| Want {
                desired: file.before.clone(),
                expected: None,
                overlap: Vec::new(),
            });
            want.expected = file.after.clone();
            for other in &change.overlap {
                want.overlap.push(format!(
                    "{other}, while {} `{}` ran",
                    change.tool, change.call
                ));
            }
        }
    }
    // Every shadowed path once: those listed, and those under a listed directory.
    let shadowed_count = shadowed.len()
        + wants
            .keys()
            .filter(|path| !shadowed.contains(*path) && is_shadowed(path, &shadowed))
            .count();
    wants.retain(|path, want| {
        !is_shadowed(path, &shadowed) && !same_state(want.desired.as_ref(), want.expected.as_ref())
    });
    let root = Root::open(snapshots.root()).map_err(super::io("opening the Location"))?;
    let objects = snapshots.objects();
    let mut files = Vec::new();
    for (path, want) in &wants {
        let becomes_dir = |dir: &RelPath| {
            wants
                .get(dir)
                .is_some_and(|w| w.desired.as_ref().is_some_and(|e| e.kind == Kind::Dir))
        };
        let mut blocked = None;
        let current = match root.dir(path.parent().as_ref()) {
            Ok(dir) => contained::found_at(objects, &dir, path.name())?,
            // Nothing can be under a missing directory or a non-directory (a link is never
            // followed): the path is absent, which is right when it is to be absent or when
            // the plan makes its directory first.
            Err(DirError::Missing(dir) | DirError::NotADirectory(dir))
                if becomes_dir(&dir) || want.desired.is_none() =>
            {
                Found::Absent
            }
            Err(DirError::Symlink(dir)) if becomes_dir(&dir) => Found::Absent,
            Err(DirError::Symlink(dir)) => {
                blocked = Some(format!(
                    "`{path}` is out of reach: `{dir}` is a symlink now, and undo never writes \
                     or deletes through it. Put the directory back, then undo again."
                ));
                Found::Absent
            }
            Err(DirError::Missing(dir)) => {
                blocked = Some(format!(
                    "`{path}` cannot be put back: its directory `{dir}` was removed after the \
                     change. Undo the change that removed it first."
                ));
                Found::Absent
            }
            Err(DirError::NotADirectory(dir)) => {
                blocked = Some(format!(
                    "`{path}` cannot be put back: `{dir}` is a file now, not a directory. Undo \
                     the change that replaced it first."
                ));
                Found::Absent
            }
            Err(DirError::Other(error)) => {
                blocked = Some(format!("`{path}` cannot be read: {error}."));
                Found::Absent
            }
        };
        if blocked.is_none() && current.is(want.desired.as_ref()) {
            continue;
        }
        let action = match (&want.desired, &want.expected) {
            (None, _) => Action::Delete,
            (Some(_), None) => Action::Recreate,
            (Some(_), Some(_)) => Action::Restore,
        };
        let desired_text = text(snapshots, want.desired.as_ref()).unwrap_or_default();
        let current_text = text(snapshots, current.entry()).unwrap_or_default();
        let (additions, deletions) = diffstat(&current_text, &desired_text);
        if blocked.is_none() {
            blocked = match (&current, &want.desired) {
                (Found::Special, _) => Some(format!(
                    "`{path}` is now a FIFO, socket or device; undo does not replace it. Remove \
                     it by hand, then undo again."
                )),
                (_, Some(entry)) if entry.kind != Kind::Dir && !entry.kept => Some(format!(
                    "`{path}`: its earlier content was too large to keep, so it cannot be \
                     restored."
                )),
                (_, Some(entry))
                    if entry.kind != Kind::Dir && !snapshots.has_object(&entry.hash) =>
                {
                    Some(format!(
                        "`{path}`: its earlier content is no longer stored (the retention sweep \
                         removed it), so it cannot be restored."
                    ))
                }
                _ => None,
            };
        }
        let mut conflict = None;
        if !current.is(want.expected.as_ref()) {
            conflict = Some(format!(
                "`{path}` changed after the reverted changes ({}).\n{}",
                describe(&current, want.expected.as_ref()),
                unified(&path.display(), &current_text, &desired_text)
            ));
        } else if !want.overlap.is_empty() {
            conflict = Some(format!(
                "`{path}` may also have been written by {}.",
                want.overlap.join("; ")
            ));
        }
        if conflict.is_none()
            && let Some(entry) = current.entry()
            && entry.kind == Kind::File
            && !entry.kept
        {
            conflict = Some(format!(
                "`{path}` is too large for a copy to be kept, so this undo could not be undone."
            ));
        }
        files.push(FilePlan {
            path: path.clone(),
            action,
            additions,
            deletions,
            conflict,
            blocked,
            kept: None,
            current,
            desired: want.desired.clone(),
        });
    }
    settle_directories(&root, &mut files);
    Ok(Plan {
        files,
        shadowed: shadowed_count,
    })
}

/// A directory the plan removes must end up empty: every name in it must be removed by the plan
/// too. One that would not is kept (or, when a file must take its place, blocked). Children are
/// decided before their parents.
fn settle_directories(root: &Root, files: &mut [FilePlan]) {
    let mut removed: HashSet<RelPath> = HashSet::new();
    for index in (0..files.len()).rev() {
        let file = &files[index];
        if file.blocked.is_some() || matches!(file.current, Found::Absent) {
            continue;
        }
        let current_dir = file.current.entry().is_some_and(|e| e.kind == Kind::Dir);
        let desired_dir = file.desired.as_ref().is_some_and(|e| e.kind == Kind::Dir);
        // A file or link in the plan goes (or is replaced; its parent then stays a directory).
        if !current_dir {
            removed.insert(file.path.clone());
            continue;
        }
        if desired_dir {
            continue;
        }
        let others: Vec<RelPath> = match root.dir(Some(&file.path)) {
            Ok(dir) => contained::names_in(&dir)
                .unwrap_or_default()
                .into_iter()
                .map(|name| file.path.join(&name))
                .filter(|child| !removed.contains(child))
                .collect(),
            Err(_) => Vec::new(),
        };
        if others.is_empty() {
            removed.insert(file.path.clone());
            continue;
        }
        let shown: Vec<String> = others.iter().take(3).map(|p| format!("`{p}`")).collect();
        let more = others.len().saturating_sub(3);
        let holds = format!(
            "{}{}",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
        let file = &mut files[index];
        if file.desired.is_none() {
            file.kept = Some(format!(
                "`{}` is kept: it holds {holds}, which this undo does not remove.",
                file.path
            ));
        } else {
            file.blocked = Some(format!(
                "`{}` cannot be replaced: the directory holds {holds}, which this undo does not \
                 remove.",
                file.path
            ));
        }
    }
}

/// What a path holds, against what the change left, in a few words.
fn describe(current: &Found, expected: Option<&Entry>) -> String {
    let what = |found: Option<&Entry>| match found.map(|e| e.kind) {
        None => "absent",
        Some(Kind::File) => "a file",
        Some(Kind::Symlink) => "a symlink",
        Some(Kind::Dir) => "a directory",
    };
    match (current, expected) {
        (Found::Special, _) => "it is now a FIFO, socket or device".into(),
        (Found::Entry(now), Some(then)) if now.kind == then.kind && now.hash == then.hash => {
            format!("its mode is now {:o}, was {:o}", now.mode, then.mode)
        }
        (Found::Entry(now), Some(then)) if now.kind == then.kind => {
            format!("{} with other content now", what(Some(now)))
        }
        (now, then) => format!("{} now, {} after the change", what(now.entry()), what(then)),
    }
}

fn is_shadowed(path: &RelPath, shadowed: &BTreeSet<RelPath>) -> bool {
    shadowed.contains(path) || path.ancestors().any(|dir| shadowed.contains(&dir))
}

/// Why an apply did not happen, or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The plan has blocked paths, or conflicts and no force: nothing was done.
    #[error("the plan cannot be applied as it stands; nothing was changed")]
    Refused,
    /// A step failed; every step before it was put back, so nothing changed.
    #[error("`{path}` could not be changed ({cause}); everything was put back, nothing changed")]
    RolledBack {
        /// The path whose step failed.
        path: RelPath,
        /// Why.
        cause: String,
    },
    /// A step failed, and putting back the steps before it failed too.
    #[error(
        "`{path}` could not be changed ({cause}), and putting back the earlier steps failed \
         ({rollback}); these paths are left reverted: {}",
        left.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
    )]
    Partial {
        /// The path whose step failed.
        path: RelPath,
        /// Why.
        cause: String,
        /// Why the rollback failed.
        rollback: String,
        /// The paths left in their reverted state.
        left: Vec<RelPath>,
    },
}

/// One step: `path` goes from `from` to `to`.
#[derive(Clone, Debug)]
struct Step {
    path: RelPath,
    from: Found,
    to: Found,
}

/// A new directory's mode until its final mode is set.
const MAKING_DIR_MODE: u32 = 0o700;

/// The steps of `plan`, in the order they run.
fn steps(plan: &Plan) -> Vec<Step> {
    let (mut removals, mut creations, mut modes) = (Vec::new(), Vec::new(), Vec::new());
    for file in plan.files.iter().filter(|f| f.kept.is_none()) {
        let path = file.path.clone();
        let current = file.current.clone();
        let is_dir = |found: &Found| found.entry().is_some_and(|e| e.kind == Kind::Dir);
        let making = Found::Entry(Entry::dir(MAKING_DIR_MODE));
        match &file.desired {
            None => removals.push(Step {
                path,
                from: current,
                to: Found::Absent,
            }),
            Some(desired) if desired.kind == Kind::Dir => {
                let to = Found::Entry(desired.clone());
                if is_dir(&current) {
                    modes.push(Step {
                        path,
                        from: current,
                        to,
                    });
                    continue;
                }
                if !matches!(current, Found::Absent) {
                    removals.push(Step {
                        path: path.clone(),
                        from: current,
                        to: Found::Absent,
                    });
                }
                creations.push(Step {
                    path: path.clone(),
                    from: Found::Absent,
                    to: making.clone(),
                });
                modes.push(Step {
                    path,
                    from: making,
                    to,
                });
            }
            Some(desired) => {
                let to = Found::Entry(desired.clone());
                if is_dir(&current) {
                    removals.push(Step {
                        path: path.clone(),
                        from: current,
                        to: Found::Absent,
                    });
                    creations.push(Step {
                        path,
                        from: Found::Absent,
                        to,
                    });
                } else {
                    creations.push(Step {
                        path,
                        from: current,
                        to,
                    });
                }
            }
        }
    }
    removals.reverse();
    modes.reverse();
    removals.into_iter().chain(creations).chain(modes).collect()
}

/// Runs one step, checking under the directory's lock that the path holds `from`.
fn run(root: &Root, snapshots: &Snapshots, step: &Step) -> Result<(), String> {
    let dir = root.dir(step.path.parent().as_ref()).map_err(|e| match e {
        DirError::Missing(dir) => format!("`{dir}` is missing"),
        DirError::NotADirectory(dir) => format!("`{dir}` is not a directory"),
        DirError::Symlink(dir) => format!("`{dir}` is a symlink"),
        DirError::Other(error) => error,
    })?;
    contained::lock(&dir).map_err(|e| e.to_string())?;
    let name = step.path.name();
    let now = contained::found_at(snapshots.objects(), &dir, name).map_err(|e| e.to_string())?;
    if !same_found(&now, &step.from) {
        return Err("it changed while the undo ran".into());
    }
    let from_dir = step.from.entry().is_some_and(|e| e.kind == Kind::Dir);
    let done = match &step.to {
        Found::Absent => contained::remove_at(&dir, name, from_dir),
        Found::Special => return Err("a special file cannot be made".into()),
        Found::Entry(entry) if entry.kind == Kind::Dir => {
            if from_dir {
                contained::set_mode_at(&dir, name, true, entry.mode)
            } else {
                contained::make_dir_at(&dir, name, entry.mode)
            }
        }
        Found::Entry(entry) => {
            let bytes = snapshots.object(&entry.hash).map_err(|e| e.to_string())?;
            contained::put_at(&dir, name, entry.kind, &bytes, entry.mode)
        }
    };
    done.map_err(|e| e.to_string())
}

fn same_found(a: &Found, b: &Found) -> bool {
    match (a, b) {
        (Found::Absent, Found::Absent) | (Found::Special, Found::Special) => true,
        (Found::Entry(a), Found::Entry(b)) => a.same_as(b),
        _ => false,
    }
}

/// Carries out `plan` (conflicts too when `force`), all or nothing: every path of
/// [`Plan::delta`] is written, or none.
pub fn apply(snapshots: &Snapshots, plan: &Plan, force: bool) -> Result<(), ApplyError> {
    if !plan.can_apply(force) {
        return Err(ApplyError::Refused);
    }
    let root = Root::open(snapshots.root()).map_err(|e| ApplyError::RolledBack {
        path: RelPath::top(b"."),
        cause: e.to_string(),
    })?;
    let steps = steps(plan);
    for (index, step) in steps.iter().enumerate() {
        let Err(cause) = run(&root, snapshots, step) else {
            continue;
        };
        // Put back what was done, newest first.
        let mut left = Vec::new();
        let mut rollback = None;
        for done in steps[..index].iter().rev() {
            let back = Step {
                path: done.path.clone(),
                from: done.to.clone(),
                to: done.from.clone(),
            };
            if let Err(error) = run(&root, snapshots, &back) {
                rollback.get_or_insert(format!("`{}`: {error}", done.path));
                left.push(done.path.clone());
            }
        }
        return Err(match rollback {
            None => ApplyError::RolledBack {
                path: step.path.clone(),
                cause,
            },
            Some(rollback) => {
                left.sort();
                left.dedup();
                ApplyError::Partial {
                    path: step.path.clone(),
                    cause,
                    rollback,
                    left,
                }
            }
        });
    }
    Ok(())
}

/// The text of a file's content in a change, for diffs (`None` for binary, links, directories,
/// and content not kept).
pub fn text(snapshots: &Snapshots, entry: Option<&Entry>) -> Option<String> {
    let entry = entry?;
    if entry.kind != Kind::File || !entry.kept {
        return None;
    }
    String::from_utf8(snapshots.object(&entry.hash).ok()?).ok()
}

/// Lines added and removed going from `from` to `to`.
pub fn diffstat(from: &str, to: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(from, to);
    let mut stat = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => stat.0 += 1,
            similar::ChangeTag::Delete => stat.1 += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    stat
}

/// A unified diff from `from` to `to`, named `path`.
pub fn unified(path: &str, from: &str, to: &str) -> String {
    similar::TextDiff::from_lines(from, to)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}
