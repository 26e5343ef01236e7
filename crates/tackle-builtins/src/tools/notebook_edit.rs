//! The notebook_edit tool: replace, insert or delete one cell of a Jupyter notebook, keeping
//! the rest of the file byte for byte.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle_core::names::Permission;
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure, thousands};
use tackle_edit::diff::LineDiff;

use super::notebook::edit::{CellRef, Change, apply};
use super::read::missing_with_suggestions;
use super::write::current_bytes;
use super::{ToolEnv, failure, notebook};
use crate::gate::Ask;
use crate::text;

const DESCRIPTION: &str = "Replace, insert or delete one cell of a Jupyter notebook (.ipynb).\n\
- Read the notebook first: read shows each cell's index and id. The notebook must not have \
changed since.\n\
- Name the cell with cellId or cellIndex (0-based), not both.\n\
- editMode `replace` (the default) gives the cell newSource, and cellType if given; a code cell's \
outputs and execution count are cleared.\n\
- editMode `insert` adds a cell of cellType with newSource: at cellIndex (the cell count \
appends), or right after the cell cellId.\n\
- editMode `delete` removes the cell; the cells after it move up one index.\n\
- Everything else in the file (other cells, metadata, formatting) stays exactly as it was.";

/// What to do with the cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotebookEditMode {
    /// Give the cell new source.
    #[default]
    Replace,
    /// Add a new cell.
    Insert,
    /// Remove the cell.
    Delete,
}

/// A cell's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotebookCellType {
    /// Code, run by the kernel.
    Code,
    /// Markdown text.
    Markdown,
    /// Raw text, not rendered.
    Raw,
}

impl NotebookCellType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Markdown => "markdown",
            Self::Raw => "raw",
        }
    }
}

/// Arguments of the notebook_edit tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotebookEditInput {
    /// The notebook to edit, relative to the working directory or absolute.
    pub notebook_path: String,
    /// The id of the cell, as read shows it.
    #[serde(default)]
    pub cell_id: Option<String>,
    /// The 0-based index of the cell. For insert, the index the new cell takes.
    #[serde(default)]
    pub cell_index: Option<usize>,
    /// The cell's new source (replace and insert).
    #[serde(default)]
    pub new_source: Option<String>,
    /// The cell's type: required for insert; for replace, changes the cell's type.
    #[serde(default)]
    pub cell_type: Option<NotebookCellType>,
    /// `replace` (the default), `insert` or `delete`.
    #[serde(default)]
    pub edit_mode: NotebookEditMode,
}

/// The result of the notebook_edit tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotebookEditOutput {
    /// What the model reads.
    pub output: String,
    /// The notebook edited, relative to the working directory when inside it.
    pub path: String,
    /// What was done.
    pub edit_mode: NotebookEditMode,
    /// The index of the cell replaced, inserted or deleted.
    pub cell_index: usize,
    /// That cell's id, when it has one.
    pub cell_id: Option<String>,
    /// That cell's type.
    pub cell_type: String,
    /// Cells in the notebook now.
    pub total_cells: usize,
    /// A unified diff of the notebook's JSON.
    pub diff: String,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(DESCRIPTION, env.clone(), notebook_edit)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::writes_paths("notebookPath"))
        .erase()
}

async fn notebook_edit(
    State(env): State<ToolEnv>,
    input: NotebookEditInput,
    cx: Context,
) -> Result<NotebookEditOutput, ToolFailure> {
    let (env, cx) = (&env, &cx);
    let (target_cell, change) = plan(&input)?;
    let (target, name, guard) = env.open_for_edit(cx, &input.notebook_path).await?;
    let Some(old) = current_bytes(&guard).await? else {
        return Err(missing_with_suggestions(
            &target,
            format!(
                "`{name}` does not exist. To create a notebook, write its JSON with write \
                 (`{{\"cells\": [], \"metadata\": {{}}, \"nbformat\": 4, \"nbformat_minor\": 5}}`)."
            ),
        ));
    };
    env.reads
        .check_fresh(cx.session(), &target, &old)
        .map_err(failure)?;
    let decoded = text::decode(&old).map_err(|e| {
        ToolFailure::new(format!(
            "`{name}` is not UTF-8 text ({e}), so it is not a notebook."
        ))
    })?;
    let parsed = notebook::parse(&decoded.text).map_err(|e| {
        ToolFailure::new(format!(
            "`{name}` cannot be edited as a notebook: {e}. Nothing was written."
        ))
        .with_hint("Fix the file with edit or write, or check the path.")
    })?;
    let edited = apply(&name, &decoded.text, &parsed, &target_cell, &change).map_err(failure)?;
    let bytes = text::encode(&edited.text, &decoded.encoding);
    let line_diff = LineDiff::compute(&decoded.text, &edited.text);
    let change_text = text::TextChange::new(&name, &line_diff);

    env.gate
        .ask(
            cx,
            Ask::new(Permission::EDIT.as_str(), [name.clone()])
                .with_metadata(json!({ "filepath": name, "diff": change_text.diff })),
        )
        .await?;
    guard
        .write_if_unchanged(Some(&old), &bytes)
        .await
        .map_err(failure)?;
    env.reads.record_read(cx.session(), &target, &bytes);

    let id = match &edited.id {
        Some(id) => format!(", id {id}"),
        None => String::new(),
    };
    let cells = format!(
        "{} cell{}",
        thousands(edited.total_cells),
        if edited.total_cells == 1 { "" } else { "s" }
    );
    let output = match input.edit_mode {
        NotebookEditMode::Replace => format!(
            "Replaced cell {} ({}{id}) of {name}.{}",
            edited.index,
            edited.cell_type,
            if edited.cleared_outputs {
                " Its outputs and execution count were cleared; run it again to get new ones."
            } else {
                ""
            }
        ),
        NotebookEditMode::Insert => format!(
            "Inserted a {} cell at index {}{id} in {name}; the notebook now has {cells}.",
            edited.cell_type, edited.index
        ),
        NotebookEditMode::Delete => format!(
            "Deleted cell {} ({}{id}) of {name}; {cells} remain, and the cells after it moved up \
             one index.",
            edited.index, edited.cell_type
        ),
    };
    Ok(NotebookEditOutput {
        output,
        path: name,
        edit_mode: input.edit_mode,
        cell_index: edited.index,
        cell_id: edited.id,
        cell_type: edited.cell_type,
        total_cells: edited.total_cells,
        diff: change_text.diff,
    })
}

/// The cell named and the change, or every problem with the arguments at once.
fn plan(input: &NotebookEditInput) -> Result<(CellRef, Change), ToolFailure> {
    let mut problems = Vec::new();
    let target = match (&input.cell_id, input.cell_index) {
        (Some(id), None) => Some(CellRef::Id(id.clone())),
        (None, Some(index)) => Some(CellRef::Index(index)),
        (Some(_), Some(_)) => {
            problems.push("- Give cellId or cellIndex, not both.");
            None
        }
        (None, None) => {
            problems.push("- Name the cell with cellId or cellIndex (0-based).");
            None
        }
    };
    let mode = input.edit_mode;
    if mode != NotebookEditMode::Delete && input.new_source.is_none() {
        problems.push("- newSource is required for `replace` and `insert`.");
    }
    if mode == NotebookEditMode::Insert && input.cell_type.is_none() {
        problems.push("- cellType is required for `insert`: give `code`, `markdown` or `raw`.");
    }
    if mode == NotebookEditMode::Delete && input.new_source.is_some() {
        problems.push("- newSource does not apply to `delete`; leave it out.");
    }
    match target {
        Some(target) if problems.is_empty() => {
            let source = input.new_source.clone().unwrap_or_default();
            let cell_type = input.cell_type.map(|t| t.as_str().to_owned());
            let change = match mode {
                NotebookEditMode::Replace => Change::Replace { source, cell_type },
                NotebookEditMode::Insert => Change::Insert {
                    source,
                    cell_type: cell_type.unwrap_or_default(),
                },
                NotebookEditMode::Delete => Change::Delete,
            };
            Ok((target, change))
        }
        _ => Err(ToolFailure::new(format!(
            "The call was not run:\n{}",
            problems.join("\n")
        ))),
    }
}

#[cfg(test)]
mod tests;
