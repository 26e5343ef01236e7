//! The edit and multiedit tools: exact-first string replacement, planned in memory, committed once.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle_core::names::Permission;
use tackle_core::{AnyTool, Context, FileChange, State, Tool, ToolFailure, thousands};
use tackle_edit::diff::{LineDiff, Splice, compose};
use tackle_edit::replace::{EditError, Strategy, replace};

use super::read::missing_with_suggestions;
use super::write::current_bytes;
use super::{ToolEnv, failure};
use crate::fs::Resolved;
use crate::gate::Ask;
use crate::text::{self, Encoding};

const EDIT_DESCRIPTION: &str = "Replace text in a file.\n\
- oldString must match the file's text, including indentation; copy it from a fresh read, \
without the line-number prefix. Give enough surrounding lines to make it unique, or set \
replaceAll to change every occurrence.\n\
- If no exact match exists, tolerant matching is tried: shifted indentation, trimmed lines, \
collapsed whitespace, escaped text, ASCII quotes for typographic ones, a missing trailing `;` \
or `,`, extra blank lines. Every \
quoted line must still equal its file line that way, or the edit is refused and the closest \
region is shown. Lines you quote but leave unchanged keep the file's exact text; the result \
names the strategy used.\n\
- newString is inserted as given; after a tolerant match, the lines it changes are re-indented \
to fit the file and keep the file's trailing `;` or `,` and quotation marks where you left \
them as quoted.\n\
- An empty oldString creates a new file with newString as its content.\n\
- The file must have been read in this session and not changed since. It keeps its BOM, line \
endings and permissions.";

const MULTIEDIT_DESCRIPTION: &str = "Make several replacements in one file, all or nothing.\n\
- edits apply in order, each to the result of the previous ones, with the same rules as edit.\n\
- If any edit fails, nothing is written and the error names the failing edit.\n\
- If the file does not exist, the first edit may have an empty oldString to create it.";

/// Arguments of the edit tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditInput {
    /// The file to edit, relative to the working directory or absolute.
    pub file_path: String,
    /// The text to replace.
    pub old_string: String,
    /// The text to put in its place; must differ from oldString.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// One replacement of a multiedit.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OneEdit {
    /// The text to replace.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// Arguments of the multiedit tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiEditInput {
    /// The file to edit, relative to the working directory or absolute.
    pub file_path: String,
    /// The replacements, applied in order.
    pub edits: Vec<OneEdit>,
}

/// How one replacement matched.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditMatch {
    /// The matching strategy (`simple` is an exact match).
    pub strategy: String,
    /// How many places were replaced.
    pub replacements: usize,
    /// The 1-based line where the first replacement starts, in the text it was applied to.
    pub first_line: usize,
}

/// The result of the edit tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditOutput {
    /// What the model reads.
    pub output: String,
    /// The file edited, relative to the working directory when inside it.
    pub path: String,
    /// How the replacement matched (absent when the edit created the file).
    #[serde(rename = "match")]
    pub matched: Option<EditMatch>,
    /// True when the edit created the file.
    pub created: bool,
    /// Lines added.
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// A unified diff of the change.
    pub diff: String,
}

/// The result of the multiedit tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiEditOutput {
    /// What the model reads.
    pub output: String,
    /// The file edited, relative to the working directory when inside it.
    pub path: String,
    /// How each edit matched, in order (`null` for an edit that created the file).
    pub matches: Vec<Option<EditMatch>>,
    /// True when the edits created the file.
    pub created: bool,
    /// Lines added.
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// A unified diff of the change.
    pub diff: String,
}

pub(crate) fn edit_tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(EDIT_DESCRIPTION, env.clone(), edit)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::writes_paths("filePath"))
        .erase()
}

pub(crate) fn multiedit_tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(MULTIEDIT_DESCRIPTION, env.clone(), multiedit)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::writes_paths("filePath"))
        .erase()
}

async fn edit(
    State(env): State<ToolEnv>,
    input: EditInput,
    cx: Context,
) -> Result<EditOutput, ToolFailure> {
    let edits = vec![OneEdit {
        old_string: input.old_string,
        new_string: input.new_string,
        replace_all: input.replace_all,
    }];
    let done = apply(&env, &cx, &input.file_path, &edits, Mode::Single).await?;
    Ok(EditOutput {
        output: done.output,
        path: done.path,
        matched: done.matches.into_iter().next().flatten(),
        created: done.created,
        additions: done.additions,
        deletions: done.deletions,
        diff: done.diff,
    })
}

async fn multiedit(
    State(env): State<ToolEnv>,
    input: MultiEditInput,
    cx: Context,
) -> Result<MultiEditOutput, ToolFailure> {
    if input.edits.is_empty() {
        return Err(ToolFailure::new(
            "edits is empty, so there is nothing to do. Give at least one edit.",
        ));
    }
    apply(&env, &cx, &input.file_path, &input.edits, Mode::Multi).await
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Single,
    Multi,
}

impl Mode {
    /// How an edit is named in errors: nothing for edit, `edits[i]` for multiedit.
    fn label(self, index: usize) -> String {
        match self {
            Mode::Single => String::new(),
            Mode::Multi => format!("edits[{index}]: "),
        }
    }
}

/// The file as it was before the edits.
struct Before {
    bytes: Option<Vec<u8>>,
    raw: String,
    encoding: Encoding,
}

async fn apply(
    env: &ToolEnv,
    cx: &Context,
    file_path: &str,
    edits: &[OneEdit],
    mode: Mode,
) -> Result<MultiEditOutput, ToolFailure> {
    for (index, edit) in edits.iter().enumerate() {
        if edit.old_string == edit.new_string {
            return Err(labelled(mode, index, EditError::NoChange));
        }
    }
    let (target, name, guard) = env.open_for_edit(cx, file_path).await?;
    let before = match current_bytes(&guard).await? {
        None if edits[0].old_string.is_empty() => Before {
            bytes: None,
            raw: String::new(),
            encoding: Encoding::Utf8,
        },
        None => return Err(missing(&target, &name)),
        Some(bytes) => {
            let decoded = text::decode(&bytes).map_err(|e| {
                ToolFailure::new(format!(
                    "`{name}` is not UTF-8 or UTF-16 text ({e}), so it was not edited: \
                     rewriting it could damage it."
                ))
            })?;
            env.reads
                .check_fresh(cx.session(), &target, &bytes)
                .map_err(failure)?;
            Before {
                raw: decoded.text,
                encoding: decoded.encoding,
                bytes: Some(bytes),
            }
        }
    };

    let old_lf = text::to_lf(&before.raw);
    let mut current = old_lf.clone();
    let mut matches = Vec::with_capacity(edits.len());
    // What changed so far, as byte spans of `old_lf` and `current`: the diff is built from
    // them, never from a whole-file diff.
    let mut splices: Vec<Splice> = Vec::new();
    for (index, edit) in edits.iter().enumerate() {
        if index == 0 && before.bytes.is_none() {
            current = text::to_lf(&edit.new_string);
            splices = vec![Splice {
                old: 0..0,
                new: 0..current.len(),
            }];
            matches.push(None);
            continue;
        }
        let replaced = replace(
            &current,
            &text::to_lf(&edit.old_string),
            &text::to_lf(&edit.new_string),
            edit.replace_all,
        )
        .map_err(|e| labelled(mode, index, e))?;
        matches.push(Some(EditMatch {
            strategy: replaced.strategy.as_str().to_owned(),
            replacements: replaced.replacements,
            first_line: replaced.first_line,
        }));
        splices = if splices.is_empty() {
            replaced.splices
        } else {
            compose(&splices, &replaced.splices)
        };
        current = replaced.content;
    }
    let line_diff = LineDiff::from_splices(&old_lf, &current, &splices);
    let new_raw = match &before.bytes {
        Some(_) => text::splice_line_endings(&before.raw, &current, &line_diff),
        // A created file follows the line endings of the text that created it.
        None => {
            let created = text::to_lf(&edits[0].new_string);
            let later = LineDiff::compute(&created, &current);
            text::splice_line_endings(&edits[0].new_string, &current, &later)
        }
    };
    let bytes = text::encode(&new_raw, &before.encoding);
    let change = text::TextChange::new(&name, &line_diff);

    env.gate
        .ask(
            cx,
            Ask::new(Permission::EDIT.as_str(), [name.clone()])
                .with_metadata(json!({ "filepath": name, "diff": change.diff })),
        )
        .await?;
    guard
        .write_if_unchanged(before.bytes.as_deref(), &bytes)
        .await
        .map_err(failure)?;
    let (mut bytes, mut new_raw, mut change, mut formatted) = (bytes, new_raw, change, false);
    if let Some(done) = env
        .format_written(&guard, &target.path, &bytes, &new_raw, &before.encoding)
        .await
    {
        let final_lf = text::to_lf(&done.raw);
        change = text::TextChange::new(&name, &LineDiff::compute(&old_lf, &final_lf));
        (bytes, new_raw, formatted) = (done.bytes, done.raw, true);
    }
    env.reads.record_read(cx.session(), &target, &bytes);

    let created = before.bytes.is_none();
    let mut output = summary(&name, created, &matches, &change);
    if formatted {
        output.push('\n');
        output.push_str(super::FORMATTED_NOTE);
    }
    output.push_str(
        &env.diagnose(&[FileChange {
            path: target.path.clone(),
            display: name.clone(),
            before: before.bytes.as_ref().map(|_| before.raw.clone()),
            after: Some(new_raw),
        }])
        .await,
    );
    Ok(MultiEditOutput {
        output,
        path: name,
        matches,
        created,
        additions: change.additions,
        deletions: change.deletions,
        diff: change.diff,
    })
}

fn labelled(mode: Mode, index: usize, error: EditError) -> ToolFailure {
    let nothing = match mode {
        Mode::Single => "",
        Mode::Multi => " No edit was applied; the file is unchanged.",
    };
    ToolFailure::new(format!("{}{error}{nothing}", mode.label(index)))
}

fn missing(target: &Resolved, name: &str) -> ToolFailure {
    missing_with_suggestions(
        target,
        format!(
            "`{name}` does not exist. To create it, use write, or edit with an empty oldString."
        ),
    )
}

/// What the model reads after a successful edit: what changed, and how every match was found.
/// A tolerant match shows the diff, so the model can check the edit landed where it meant.
fn summary(
    name: &str,
    created: bool,
    matches: &[Option<EditMatch>],
    change: &text::TextChange,
) -> String {
    let mut out = if created {
        format!("Created {name}")
    } else {
        format!("Edited {name}")
    };
    out.push_str(&format!(
        " (+{} -{} lines).",
        thousands(change.additions),
        thousands(change.deletions)
    ));
    let many = matches.len() > 1;
    let mut tolerant = false;
    for (index, matched) in matches.iter().enumerate() {
        let Some(m) = matched else { continue };
        let exact = m.strategy == Strategy::Simple.as_str()
            || m.strategy == Strategy::MultiOccurrence.as_str();
        tolerant |= !exact;
        if many || !exact || m.replacements > 1 {
            let prefix = if many {
                format!("\nedits[{index}]: ")
            } else {
                "\n".to_owned()
            };
            out.push_str(&format!(
                "{prefix}{} replacement{} from line {}, matched {}.",
                m.replacements,
                if m.replacements == 1 { "" } else { "s" },
                m.first_line,
                if exact {
                    "exactly".to_owned()
                } else {
                    format!("by the tolerant `{}` strategy", m.strategy)
                }
            ));
        }
    }
    if tolerant && !change.diff.is_empty() {
        out.push_str("\nCheck that the change is the one you meant:\n");
        out.push_str(change.diff.trim_end());
    }
    out
}
