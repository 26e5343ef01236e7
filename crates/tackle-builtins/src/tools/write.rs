//! The write tool: replace or create a whole file, keeping its encoding, BOM, line endings and mode.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle_core::names::Permission;
use tackle_core::{AnyTool, Context, FileChange, State, Tool, ToolFailure};
use tackle_edit::diff::LineDiff;

use super::{ToolEnv, failure};
use crate::fs::{FsError, PathGuard};
use crate::gate::Ask;
use crate::text::{self, Encoding};

const DESCRIPTION: &str = "Write a whole file, creating it (and its directories) if needed.\n\
- filePath is relative to the working directory, or absolute.\n\
- To change an existing file, prefer edit or apply_patch; write replaces everything.\n\
- An existing file must have been read in this session, and not changed since.\n\
- The file keeps its byte-order mark, line-ending style and permissions.";

/// Arguments of the write tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteInput {
    /// The file to write, relative to the working directory or absolute.
    pub file_path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// The result of the write tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteOutput {
    /// What the model reads.
    pub output: String,
    /// The file written, relative to the working directory when inside it.
    pub path: String,
    /// True when the file did not exist before.
    pub created: bool,
    /// Lines added.
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// A unified diff of the change.
    pub diff: String,
    /// Bytes now in the file.
    pub bytes: u64,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(DESCRIPTION, env.clone(), write)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::writes_paths("filePath"))
        .erase()
}

/// Reads the locked file: `None` when it does not exist.
pub(crate) async fn current_bytes(guard: &PathGuard) -> Result<Option<Vec<u8>>, ToolFailure> {
    match guard.read_bytes().await {
        Ok(bytes) => Ok(Some(bytes)),
        Err(FsError::NotFound { .. }) => Ok(None),
        Err(e) => Err(failure(e)),
    }
}

async fn write(
    State(env): State<ToolEnv>,
    input: WriteInput,
    cx: Context,
) -> Result<WriteOutput, ToolFailure> {
    let (env, cx) = (&env, &cx);
    let (target, name, guard) = env.open_for_edit(cx, &input.file_path).await?;
    let old = current_bytes(&guard).await?;
    if let Some(old) = &old {
        env.reads
            .check_fresh(cx.session(), &target, old)
            .map_err(failure)?;
    }
    let previous = old.as_deref().and_then(|bytes| text::decode(bytes).ok());
    let (old_raw, encoding) = match &previous {
        Some(decoded) => (decoded.text.as_str(), decoded.encoding),
        None => ("", Encoding::Utf8),
    };
    let old_lf = text::to_lf(old_raw);
    let new_lf = text::to_lf(&input.content);
    // Nothing is known about what changed: a bounded diff (common ends skipped, a deadline on
    // the middle), never a quadratic one.
    let line_diff = LineDiff::compute(&old_lf, &new_lf);
    // Content without carriage returns follows the file's own line endings.
    let new_raw = if previous.is_some() && !input.content.contains('\r') {
        text::splice_line_endings(old_raw, &input.content, &line_diff)
    } else {
        input.content.clone()
    };
    let bytes = text::encode(&new_raw, &encoding);
    let change = text::TextChange::new(&name, &line_diff);

    env.gate
        .ask(
            cx,
            Ask::new(Permission::EDIT.as_str(), [name.clone()])
                .with_metadata(json!({ "filepath": name, "diff": change.diff })),
        )
        .await?;
    guard
        .write_if_unchanged(old.as_deref(), &bytes)
        .await
        .map_err(failure)?;
    let (mut bytes, mut new_raw, mut change, mut formatted) = (bytes, new_raw, change, false);
    if let Some(done) = env
        .format_written(&guard, &target.path, &bytes, &new_raw, &encoding)
        .await
    {
        let final_lf = text::to_lf(&done.raw);
        change = text::TextChange::new(&name, &LineDiff::compute(&old_lf, &final_lf));
        (bytes, new_raw, formatted) = (done.bytes, done.raw, true);
    }
    env.reads.record_read(cx.session(), &target, &bytes);

    let output = if old.is_none() {
        format!(
            "Created {name} ({} line{}).",
            tackle_core::thousands(text::count_lines(&input.content)),
            if text::count_lines(&input.content) == 1 {
                ""
            } else {
                "s"
            }
        )
    } else if change.additions + change.deletions == 0 {
        format!("Wrote {name}; its content was already exactly this, so nothing changed.")
    } else {
        format!(
            "Wrote {name} (+{} -{} lines).",
            tackle_core::thousands(change.additions),
            tackle_core::thousands(change.deletions)
        )
    };
    let mut output = output;
    if formatted {
        output.push('\n');
        output.push_str(super::FORMATTED_NOTE);
    }
    output.push_str(
        &env.diagnose(&[FileChange {
            path: target.path.clone(),
            display: name.clone(),
            before: previous.as_ref().map(|p| p.text.clone()),
            after: Some(new_raw),
        }])
        .await,
    );
    Ok(WriteOutput {
        output,
        path: name,
        created: old.is_none(),
        additions: change.additions,
        deletions: change.deletions,
        diff: change.diff,
        bytes: bytes.len() as u64,
    })
}
