//! The apply_patch tool: a multi-file `*** Begin Patch` patch, planned in memory as a whole and
//! committed file by file with compare-and-swap.
//!
//! The order is the one every file tool follows (see the [module docs](super)): the patch is
//! parsed and its paths resolved (asking `external_directory` once per outside scope), denied
//! paths are refused, every file is locked, read and checked for freshness, the whole patch is
//! planned by [`tackle_edit::patch::plan_patch`] (all or nothing), the `edit` permission is asked
//! once with the combined diff, and only then is anything written. Every compare-and-swap
//! precondition is checked again just before the first write; should a write still fail midway,
//! the result says exactly which operations were applied and which were not.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use tackle_core::names::Permission;
use tackle_edit::diff::LineDiff;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tackle_core::{AnyTool, Context, FileChange as ReviewChange, State, Tool, ToolFailure};
use tackle_edit::patch::{FileChange, MatchLevel, Operation, Patch, PatchError};

use super::write::current_bytes;
use super::{ToolEnv, failure};
use crate::fs::{ChangeKind, FsError, PathGuard, Resolved};
use crate::gate::Ask;
use crate::text::{self, Encoding};

#[cfg(test)]
mod tests;

const DESCRIPTION: &str = "Apply a patch that adds, deletes, updates and moves files, all or nothing.\n\
- patchText is the patch itself, not a JSON object or a shell command:\n\
*** Begin Patch\n\
*** Add File: path/new.txt\n\
+every line of a new file starts with +\n\
*** Delete File: path/old.txt\n\
*** Update File: path/file.py\n\
*** Move to: path/renamed.py\n\
@@ def run():\n\
     unchanged context line\n\
-    removed line\n\
+    added line\n\
*** End Patch\n\
- In an Update, each chunk starts with `@@`, optionally followed by a line of the file that \
precedes the chunk (a function or class header). Give about three lines of unchanged context \
before and after each change, each prefixed with a space; `-` removes a line, `+` adds one. End a \
chunk that reaches the end of the file with `*** End of File`.\n\
- Paths are relative to the working directory, or absolute. A path may appear in only one \
operation. Add never overwrites and Move never replaces an existing file.\n\
- Every file the patch updates, moves or deletes must have been read in this session and not \
changed since. Updated files keep their BOM, encoding and line endings.\n\
- If any chunk fails to match, nothing is written and the error names the chunk.";

/// Arguments of the apply_patch tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyPatchInput {
    /// The full patch text, from `*** Begin Patch` to `*** End Patch`.
    pub patch_text: String,
}

/// One file operation of an applied patch.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchedFile {
    /// The file, relative to the working directory when inside it (the source of a move).
    pub path: String,
    /// What was done: `add`, `update`, `delete` or `move`.
    pub operation: String,
    /// Where a `move` put the file.
    pub move_to: Option<String>,
    /// Lines added.
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// How each chunk of an update or move matched, in chunk order: `exact`,
    /// `trailing_whitespace`, `whitespace` or `punctuation`. Empty for adds and deletes.
    pub fuzz: Vec<String>,
}

/// The result of the apply_patch tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyPatchOutput {
    /// What the model reads.
    pub output: String,
    /// Every file operation, in patch order.
    pub files: Vec<PatchedFile>,
    /// A unified diff of every change, file after file.
    pub diff: String,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(DESCRIPTION, env.clone(), apply_patch)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::Exclusive)
        .erase()
}

async fn apply_patch(
    State(env): State<ToolEnv>,
    input: ApplyPatchInput,
    cx: Context,
) -> Result<ApplyPatchOutput, ToolFailure> {
    apply(&env, &cx, &input.patch_text).await
}

/// A file the patch reads, as it was when locked.
struct Snapshot {
    /// The bytes on disk, `None` when the file does not exist.
    bytes: Option<Vec<u8>>,
    /// The decoded text, for files the patch updates, moves or deletes.
    text: Option<TextFile>,
}

struct TextFile {
    raw: String,
    lf: String,
    encoding: Encoding,
}

/// One write of the commit, with the bytes it expects and the bytes it leaves.
enum Step {
    Add {
        target: Resolved,
        bytes: Vec<u8>,
    },
    Update {
        target: Resolved,
        old: Vec<u8>,
        new: Vec<u8>,
    },
    Delete {
        target: Resolved,
        old: Vec<u8>,
    },
    Move {
        from: Resolved,
        to: Resolved,
        old: Vec<u8>,
        new: Vec<u8>,
    },
    /// Delete of a symlink: the link goes, what it points to stays.
    RemoveLink {
        link: Resolved,
        points_to: PathBuf,
    },
    /// Move of a symlink: the link moves, what it points to stays.
    MoveLink {
        from: Resolved,
        to: Resolved,
        points_to: PathBuf,
    },
}

impl Step {
    /// The line naming the operation in summaries: `A x`, `M x`, `D x` or `R x -> y`.
    fn label(&self) -> String {
        match self {
            Step::Add { target, .. } => format!("A {}", target.display_name()),
            Step::Update { target, .. } => format!("M {}", target.display_name()),
            Step::Delete { target, .. } => format!("D {}", target.display_name()),
            Step::Move { from, to, .. } => {
                format!("R {} -> {}", from.display_name(), to.display_name())
            }
            Step::RemoveLink { link, .. } => {
                format!(
                    "D {} (a symlink; what it points to was kept)",
                    link.display_name()
                )
            }
            Step::MoveLink { from, to, .. } => format!(
                "R {} -> {} (a symlink; what it points to was kept)",
                from.display_name(),
                to.display_name()
            ),
        }
    }

    /// The file named when this step fails.
    fn name(&self) -> String {
        match self {
            Step::Add { target, .. }
            | Step::Update { target, .. }
            | Step::Delete { target, .. } => target.display_name(),
            Step::Move { from, .. } => from.display_name(),
            Step::RemoveLink { link, .. } => link.display_name(),
            Step::MoveLink { from, .. } => from.display_name(),
        }
    }
}

/// How far a failed step got before it failed.
enum StepFailure {
    /// Nothing of the step was done.
    Nothing(FsError),
    /// A move renamed the file but could not write its new content.
    MovedOnly(FsError),
}

async fn apply(
    env: &ToolEnv,
    cx: &Context,
    patch_text: &str,
) -> Result<ApplyPatchOutput, ToolFailure> {
    let patch = parse(patch_text)?;
    let mut asked = HashSet::new();
    let (patch, link_steps) = split_symlink_operations(env, cx, patch, &mut asked).await?;

    // Resolve every path, asking `external_directory` once per outside scope.
    let mut resolved: HashMap<String, Resolved> = HashMap::new();
    let mut targets: Vec<Resolved> = Vec::new();
    for written in written_paths(&patch) {
        if resolved.contains_key(written) {
            continue;
        }
        let target = env.fs.resolve(written).await.map_err(failure)?;
        if let Some(scope) = &target.external_directory
            && asked.insert(scope.clone())
        {
            env.gate.external_directory(cx, &target).await?;
        }
        if !targets.iter().any(|t| t.path == target.path) {
            targets.push(target.clone());
        }
        resolved.insert(written.to_owned(), target);
    }
    let patch = canonical_patch(&patch, &resolved);
    check_paths(&patch)?;

    let mut names: Vec<String> = targets.iter().map(Resolved::display_name).collect();
    for step in &link_steps {
        if let Step::RemoveLink { link: from, .. } | Step::MoveLink { from, .. } = step {
            names.push(from.display_name());
        }
        if let Step::MoveLink { to, .. } = step {
            names.push(to.display_name());
        }
    }
    env.gate
        .refuse_if_denied(cx, Permission::EDIT.as_str(), &names)?;
    for target in &targets {
        if target.path.is_dir() {
            return Err(failure(FsError::IsADirectory {
                path: target.display_name(),
            }));
        }
    }

    let guards = env.fs.lock_many(&targets.iter().collect::<Vec<_>>()).await;
    let sources: HashSet<&str> = patch
        .operations
        .iter()
        .filter(|op| !matches!(op, Operation::Add { .. }))
        .map(Operation::path)
        .collect();
    let mut snapshots: HashMap<String, Snapshot> = HashMap::new();
    let mut problems = Vec::new();
    for guard in &guards {
        let target = guard.target();
        let name = target.display_name();
        let bytes = current_bytes(guard).await?;
        let mut text = None;
        if let Some(bytes) = &bytes
            && sources.contains(name.as_str())
        {
            match text::decode(bytes) {
                Err(e) => problems.push(format!(
                    "`{name}` is not UTF-8 or UTF-16 text ({e}), so it cannot be patched: \
                     rewriting it could damage it."
                )),
                Ok(decoded) => {
                    if let Err(stale) = env.reads.check_fresh(cx.session(), target, bytes) {
                        problems.push(stale.to_string());
                    }
                    text = Some(TextFile {
                        lf: text::to_lf(&decoded.text),
                        raw: decoded.text,
                        encoding: decoded.encoding,
                    });
                }
            }
        }
        snapshots.insert(name, Snapshot { bytes, text });
    }
    if !problems.is_empty() {
        return Err(not_applied(&problems));
    }

    let views: HashMap<&str, Option<String>> = snapshots
        .iter()
        .map(|(name, snapshot)| {
            let view = match (&snapshot.bytes, &snapshot.text) {
                (None, _) => None,
                (Some(_), Some(file)) => Some(file.lf.clone()),
                // Only existence matters for an Add target or a move destination.
                (Some(_), None) => Some(String::new()),
            };
            (name.as_str(), view)
        })
        .collect();
    let changes =
        tackle_edit::patch::plan_patch(&patch, &|path| views.get(path).cloned().flatten())
            .map_err(plan_error)?;

    // Turn the plan into bytes, diffs and the per-file report.
    let by_name: HashMap<String, &Resolved> =
        targets.iter().map(|t| (t.display_name(), t)).collect();
    let mut steps = Vec::with_capacity(changes.len());
    let mut files = Vec::with_capacity(changes.len());
    let mut diffs = Vec::with_capacity(changes.len());
    let mut fuzzy = Vec::new();
    for change in &changes {
        let target = by_name[change.path()].clone();
        let snapshot = &snapshots[change.path()];
        match change {
            FileChange::Create { path, content } => {
                let diff = text::text_change(path, "", content);
                files.push(patched(path, "add", None, &diff, &[]));
                diffs.push(diff.diff);
                steps.push(Step::Add {
                    target,
                    bytes: content.as_bytes().to_vec(),
                });
            }
            FileChange::Delete { path } => {
                let before = snapshot.text.as_ref().expect("sources are decoded");
                let diff = text::text_change(path, &before.lf, "");
                files.push(patched(path, "delete", None, &diff, &[]));
                diffs.push(diff.diff);
                steps.push(Step::Delete {
                    target,
                    old: snapshot
                        .bytes
                        .clone()
                        .expect("planned against an existing file"),
                });
            }
            FileChange::Update {
                path,
                move_to,
                content,
                fuzz,
            } => {
                let before = snapshot.text.as_ref().expect("sources are decoded");
                let old = snapshot
                    .bytes
                    .clone()
                    .expect("planned against an existing file");
                let line_diff = LineDiff::compute(&before.lf, content);
                let new_raw = text::splice_line_endings(&before.raw, content, &line_diff);
                let new = text::encode(&new_raw, &before.encoding);
                let shown = move_to.as_deref().unwrap_or(path);
                let mut diff = text::TextChange::new(shown, &line_diff);
                if move_to.is_some() && !diff.diff.is_empty() {
                    diff.diff =
                        diff.diff
                            .replacen(&format!("--- a/{shown}"), &format!("--- a/{path}"), 1);
                }
                let operation = if move_to.is_some() { "move" } else { "update" };
                files.push(patched(path, operation, move_to.clone(), &diff, fuzz));
                if fuzz.iter().any(|level| *level != MatchLevel::Exact) {
                    fuzzy.push((shown.to_owned(), fuzz.clone(), diff.diff.clone()));
                }
                diffs.push(diff.diff);
                steps.push(match move_to {
                    None => Step::Update { target, old, new },
                    Some(to) => Step::Move {
                        from: target,
                        to: by_name[to.as_str()].clone(),
                        old,
                        new,
                    },
                });
            }
        }
    }
    for step in link_steps {
        let change = text::text_change("", "", "");
        match &step {
            Step::RemoveLink { link, .. } => {
                files.push(patched(&link.display_name(), "delete", None, &change, &[]));
            }
            Step::MoveLink { from, to, .. } => files.push(patched(
                &from.display_name(),
                "move",
                Some(to.display_name()),
                &change,
                &[],
            )),
            _ => {}
        }
        diffs.push(String::new());
        steps.push(step);
    }
    let diff = diffs.concat();

    env.gate
        .ask(
            cx,
            Ask::new(Permission::EDIT.as_str(), names.clone()).with_metadata(json!({
                "files": files
                    .iter()
                    .zip(&diffs)
                    .map(|(file, diff)| {
                        let mut value = serde_json::to_value(file).unwrap_or(Value::Null);
                        value["diff"] = Value::String(diff.clone());
                        value
                    })
                    .collect::<Vec<_>>(),
                "diff": diff,
            })),
        )
        .await?;

    // Check every precondition before the first write, so a failure midway is unlikely.
    for guard in &guards {
        let name = guard.target().display_name();
        let expected = &snapshots[&name].bytes;
        let current = current_bytes(guard).await?;
        if let Some(kind) = change_kind(expected.as_deref(), current.as_deref()) {
            return Err(failure(FsError::Changed { path: name, kind }));
        }
    }

    let mut applied: Vec<String> = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        match commit(step, &guards, &env.fs).await {
            Ok(()) => {
                remember(env, cx, step);
                applied.push(step.label());
            }
            Err(StepFailure::Nothing(error)) => {
                let not_applied: Vec<String> = steps[index..].iter().map(Step::label).collect();
                return Err(partial_report(
                    &step.name(),
                    &commit_error(&error),
                    &applied,
                    &not_applied,
                ));
            }
            Err(StepFailure::MovedOnly(error)) => {
                // The rename stands: the file now lives at its destination with its old content.
                let mut not_applied = Vec::new();
                if let Step::Move { from, to, old, .. } = step {
                    env.reads.forget(cx.session(), from);
                    env.reads.record_read(cx.session(), to, old);
                    applied.push(format!(
                        "R {} -> {} (moved, but its changes were not written)",
                        from.display_name(),
                        to.display_name()
                    ));
                    not_applied.push(format!("the changes to {}", to.display_name()));
                }
                not_applied.extend(steps[index + 1..].iter().map(Step::label));
                return Err(partial_report(
                    &step.name(),
                    &commit_error(&error),
                    &applied,
                    &not_applied,
                ));
            }
        }
    }
    // The formatter, per written file, through the locks still held; then the diagnostics.
    let mut reformatted = Vec::new();
    let mut reviewed = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let (target, old, new) = match step {
            Step::Add { target, bytes } => (target, None, bytes),
            Step::Update { target, old, new } => (target, Some(old), new),
            Step::Move { from, to, old, new } => {
                reviewed.push(ReviewChange {
                    path: from.path.clone(),
                    display: from.display_name(),
                    before: text::decode(old).ok().map(|d| d.text),
                    after: None,
                });
                (to, Some(old), new)
            }
            Step::Delete { target, old } => {
                reviewed.push(ReviewChange {
                    path: target.path.clone(),
                    display: target.display_name(),
                    before: text::decode(old).ok().map(|d| d.text),
                    after: None,
                });
                continue;
            }
            Step::RemoveLink { .. } | Step::MoveLink { .. } => continue,
        };
        let Ok(decoded) = text::decode(new) else {
            continue;
        };
        let before = old.and_then(|old| text::decode(old).ok()).map(|d| d.text);
        let mut after = decoded.text;
        let guard = guard_of(&guards, target);
        if let Some(done) = env
            .format_written(guard, &target.path, new, &after, &decoded.encoding)
            .await
        {
            env.reads.record_read(cx.session(), target, &done.bytes);
            let before_lf = text::to_lf(before.as_deref().unwrap_or(""));
            let after_lf = text::to_lf(&done.raw);
            let change = text::TextChange::new(
                &target.display_name(),
                &LineDiff::compute(&before_lf, &after_lf),
            );
            files[index].additions = change.additions;
            files[index].deletions = change.deletions;
            diffs[index] = change.diff;
            reformatted.push(target.display_name());
            after = done.raw;
        }
        reviewed.push(ReviewChange {
            path: target.path.clone(),
            display: target.display_name(),
            before,
            after: Some(after),
        });
    }
    drop(guards);

    let mut output = summary(&steps, &fuzzy);
    if !reformatted.is_empty() {
        output.push_str(&format!(
            "\nThe project's formatter then reformatted {}; the diff shows the final content.",
            reformatted.join(", ")
        ));
    }
    output.push_str(&env.diagnose(&reviewed).await);
    Ok(ApplyPatchOutput {
        output,
        files,
        diff: diffs.concat(),
    })
}

/// Parses the patch text, refusing empty text and JSON argument shapes with a precise message.
fn parse(patch_text: &str) -> Result<Patch, ToolFailure> {
    let trimmed = patch_text.trim();
    if trimmed.is_empty() {
        return Err(ToolFailure::new(
            "patchText is empty, so there is nothing to apply. Give the patch text, from \
             `*** Begin Patch` to `*** End Patch`.",
        ));
    }
    if trimmed.starts_with('{')
        && (trimmed.contains("\"command\"") || trimmed.contains("apply_patch"))
    {
        return Err(ToolFailure::new(
            "patchText holds a JSON object, not a patch, so nothing was applied. Pass the patch \
             text itself as patchText, starting with `*** Begin Patch` and ending with \
             `*** End Patch`, with no JSON or command around it.",
        ));
    }
    tackle_edit::patch::parse_patch(&text::to_lf(patch_text)).map_err(|e| {
        let e = match e {
            PatchError::Format { line, message } => {
                format!("patchText line {line}: {message}")
            }
            other => other.to_string(),
        };
        ToolFailure::new(format!(
            "The patch could not be parsed, so nothing was applied: {e}"
        ))
        .with_hint("Fix the patch text and call apply_patch again.")
    })
}

/// Every path of the patch as written: each operation's path, then its move target.
fn written_paths(patch: &Patch) -> Vec<&str> {
    let mut paths = Vec::new();
    for operation in &patch.operations {
        paths.push(operation.path());
        if let Operation::Update {
            move_to: Some(to), ..
        } = operation
        {
            paths.push(to.as_str());
        }
    }
    paths
}

/// The patch with every path replaced by its canonical display name.
fn canonical_patch(patch: &Patch, resolved: &HashMap<String, Resolved>) -> Patch {
    let name = |path: &str| resolved[path].display_name();
    Patch {
        operations: patch
            .operations
            .iter()
            .map(|operation| match operation {
                Operation::Add { path, content } => Operation::Add {
                    path: name(path),
                    content: content.clone(),
                },
                Operation::Delete { path } => Operation::Delete { path: name(path) },
                Operation::Update {
                    path,
                    move_to,
                    chunks,
                } => Operation::Update {
                    path: name(path),
                    move_to: move_to.as_deref().map(name),
                    chunks: chunks.clone(),
                },
            })
            .collect(),
    }
}

/// Refuses a move onto the file itself and a file named by two operations, before any file is
/// read. The paths are canonical, so `./a.txt` and `a.txt` are one file.
fn check_paths(patch: &Patch) -> Result<(), ToolFailure> {
    let mut seen = HashSet::new();
    for operation in &patch.operations {
        let mut paths = vec![operation.path()];
        if let Operation::Update {
            path,
            move_to: Some(to),
            ..
        } = operation
        {
            if to == path {
                return Err(plan_error(PatchError::MoveOntoItself {
                    path: path.clone(),
                }));
            }
            paths.push(to);
        }
        for path in paths {
            if !seen.insert(path) {
                return Err(plan_error(PatchError::DuplicatePath {
                    path: path.to_owned(),
                }));
            }
        }
    }
    Ok(())
}

fn plan_error(error: PatchError) -> ToolFailure {
    ToolFailure::new(format!(
        "{error}\nThe patch was not applied; no file was changed."
    ))
}

/// Every problem found while reading, in one failure.
fn not_applied(problems: &[String]) -> ToolFailure {
    match problems {
        [one] => ToolFailure::new(format!(
            "{one}\nThe patch was not applied; no file was changed."
        )),
        many => {
            let mut message = String::from("The patch was not applied; no file was changed:");
            for problem in many {
                message.push_str("\n- ");
                message.push_str(problem);
            }
            ToolFailure::new(message)
        }
    }
}

fn patched(
    path: &str,
    operation: &str,
    move_to: Option<String>,
    change: &text::TextChange,
    fuzz: &[MatchLevel],
) -> PatchedFile {
    PatchedFile {
        path: path.to_owned(),
        operation: operation.to_owned(),
        move_to,
        additions: change.additions,
        deletions: change.deletions,
        fuzz: fuzz.iter().map(|level| level.as_str().to_owned()).collect(),
    }
}

/// How `current` differs from `expected` (`None`: missing), if it does.
fn change_kind(expected: Option<&[u8]>, current: Option<&[u8]>) -> Option<ChangeKind> {
    match (expected, current) {
        (None, Some(_)) => Some(ChangeKind::Appeared),
        (Some(_), None) => Some(ChangeKind::Disappeared),
        (Some(want), Some(have)) if want != have => Some(ChangeKind::Modified),
        _ => None,
    }
}

fn guard_of<'a>(guards: &'a [PathGuard], target: &Resolved) -> &'a PathGuard {
    guards
        .iter()
        .find(|guard| guard.target().path == target.path)
        .expect("every target is locked")
}

/// Writes one step through the held locks.
async fn commit(
    step: &Step,
    guards: &[PathGuard],
    fs: &crate::LocationFs,
) -> Result<(), StepFailure> {
    match step {
        Step::RemoveLink { link, points_to } => fs
            .remove_symlink(link, points_to)
            .await
            .map_err(StepFailure::Nothing),
        Step::MoveLink {
            from,
            to,
            points_to,
        } => fs
            .move_symlink(from, points_to, to)
            .await
            .map_err(StepFailure::Nothing),
        Step::Add { target, bytes } => guard_of(guards, target)
            .write_if_unchanged(None, bytes)
            .await
            .map(drop)
            .map_err(StepFailure::Nothing),
        Step::Update { target, old, new } => guard_of(guards, target)
            .write_if_unchanged(Some(old), new)
            .await
            .map(drop)
            .map_err(StepFailure::Nothing),
        Step::Delete { target, old } => guard_of(guards, target)
            .delete_if_unchanged(old)
            .await
            .map_err(StepFailure::Nothing),
        Step::Move { from, to, old, new } => {
            // Renaming first keeps the file's mode and owner; the new content follows.
            let to_guard = guard_of(guards, to);
            guard_of(guards, from)
                .rename_if_unchanged(old, to_guard)
                .await
                .map_err(StepFailure::Nothing)?;
            if new != old {
                to_guard
                    .write_if_unchanged(Some(old), new)
                    .await
                    .map_err(StepFailure::MovedOnly)?;
            }
            Ok(())
        }
    }
}

/// Records what a committed step left on disk as read by the session.
fn remember(env: &ToolEnv, cx: &Context, step: &Step) {
    let session = cx.session();
    match step {
        Step::Add { target, bytes } => env.reads.record_read(session, target, bytes),
        Step::Update { target, new, .. } => env.reads.record_read(session, target, new),
        Step::Delete { target, .. } => env.reads.forget(session, target),
        Step::Move { from, to, new, .. } => {
            env.reads.forget(session, from);
            env.reads.record_read(session, to, new);
        }
        // A link's target was not touched, so what the session read of it still holds.
        Step::RemoveLink { .. } | Step::MoveLink { .. } => {}
    }
}

/// Takes the Delete and pure Move operations of symlinks out of `patch`: those act on the link
/// itself, never on what it points to (which may lie outside the Location). Moving and changing
/// a symlink in one operation is refused, since the change would land in the link's target.
async fn split_symlink_operations(
    env: &ToolEnv,
    cx: &Context,
    patch: Patch,
    asked: &mut HashSet<String>,
) -> Result<(Patch, Vec<Step>), ToolFailure> {
    let mut kept = Vec::with_capacity(patch.operations.len());
    let mut steps = Vec::new();
    for operation in patch.operations {
        let link = match &operation {
            Operation::Delete { path } | Operation::Update { path, .. } => {
                env.fs.symlink_at(path).await.map_err(failure)?
            }
            Operation::Add { .. } => None,
        };
        let Some((link, points_to)) = link else {
            kept.push(operation);
            continue;
        };
        if let Some(scope) = &link.external_directory
            && asked.insert(scope.clone())
        {
            env.gate.external_directory(cx, &link).await?;
        }
        match operation {
            Operation::Delete { .. } => steps.push(Step::RemoveLink { link, points_to }),
            Operation::Update {
                move_to: Some(to),
                chunks,
                ..
            } if chunks.is_empty() => {
                let to = env.fs.resolve(&to).await.map_err(failure)?;
                if let Some(scope) = &to.external_directory
                    && asked.insert(scope.clone())
                {
                    env.gate.external_directory(cx, &to).await?;
                }
                steps.push(Step::MoveLink {
                    from: link,
                    to,
                    points_to,
                });
            }
            Operation::Update {
                move_to: Some(_), ..
            } => {
                return Err(ToolFailure::new(format!(
                    "`{}` is a symlink, so moving it and changing its content in one operation \
                     would change the file it points to and move only the link. Nothing was \
                     applied. Move the link and edit its target ({}) in separate operations.",
                    link.display_name(),
                    points_to.display()
                )));
            }
            // Updating a link's content updates what it points to, as a plain path would.
            other => kept.push(other),
        }
    }
    Ok((Patch { operations: kept }, steps))
}

/// A commit error, worded for the middle of a commit: without the "nothing was changed" of a
/// single-file failure, which would not be true of the patch.
fn commit_error(error: &FsError) -> String {
    let text = match error {
        FsError::Io {
            action,
            path,
            source,
        } => format!("could not {action} `{path}`: {source}"),
        FsError::Changed { path, kind } => {
            let what = match kind {
                ChangeKind::Modified => "changed on disk",
                ChangeKind::Appeared => "was created by someone else",
                ChangeKind::Disappeared => "was deleted",
            };
            format!("`{path}` {what} while the patch was being written")
        }
        other => other.to_string(),
    };
    text.trim_end_matches('.').to_owned()
}

/// The failure of a commit that stopped midway: exactly what was applied and what was not.
pub(crate) fn partial_report(
    failed_at: &str,
    error: &str,
    applied: &[String],
    not_applied: &[String],
) -> ToolFailure {
    let list = |items: &[String]| {
        if items.is_empty() {
            "nothing".to_owned()
        } else {
            items.join(", ")
        }
    };
    ToolFailure::new(format!(
        "Patch partially applied before failing at {failed_at}: {error}. Applied: {}. Not \
         applied: {}.",
        list(applied),
        list(not_applied)
    ))
    .with_hint(
        "Read the affected files again, then apply the operations that were not applied in a new \
         patch.",
    )
}

/// What the model reads after the whole patch was applied.
fn summary(steps: &[Step], fuzzy: &[(String, Vec<MatchLevel>, String)]) -> String {
    let mut out = String::from("Success. Updated the following files:");
    for step in steps {
        out.push('\n');
        out.push_str(&step.label());
    }
    if fuzzy.is_empty() {
        return out;
    }
    for (path, levels, _) in fuzzy {
        for (index, level) in levels.iter().enumerate() {
            let ignoring = match level {
                MatchLevel::Exact => continue,
                MatchLevel::TrailingWhitespace => "trailing whitespace",
                MatchLevel::Whitespace => "leading and trailing whitespace",
                MatchLevel::Punctuation => "whitespace and typographic punctuation",
            };
            out.push_str(&format!(
                "\nChunk {} of {path} matched only when ignoring {ignoring} (`{level}`).",
                index + 1
            ));
        }
    }
    out.push_str("\nCheck that these changes are the ones you meant:");
    for (_, _, diff) in fuzzy {
        out.push('\n');
        out.push_str(diff.trim_end());
    }
    out
}
