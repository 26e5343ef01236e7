//! The lsp tool: the project's language servers answer where a symbol is defined, who uses it,
//! what its type is, and what calls what, rendered as lines a model reads.

use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::names::Permission;
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure, thousands};
use tackle_lsp::LspManager;
use tackle_lsp::query::{Answer, Operation, Place};

use super::readable::{Readable, read_ask};
use super::{ToolEnv, failure};
use crate::gate::Ask;

const DESCRIPTION: &str = "Ask the project's language server about code.\n\
- operation: goToDefinition, findReferences, hover, goToImplementation, prepareCallHierarchy, \
incomingCalls, outgoingCalls (all at filePath, line, character); documentSymbol (the outline of \
filePath); workspaceSymbol (symbols matching query, across the project).\n\
- line and character are 1-based, as read shows them; character counts characters in the line.\n\
- Results are one per line: path:line:column, then the line's text.";

/// What to ask the language server.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum LspOperation {
    /// Where the symbol at the position is defined.
    GoToDefinition,
    /// Every reference to the symbol at the position.
    FindReferences,
    /// The type and documentation of the symbol at the position.
    Hover,
    /// The symbols of the file.
    DocumentSymbol,
    /// Symbols matching `query` across the project.
    WorkspaceSymbol,
    /// The implementations of the symbol at the position.
    GoToImplementation,
    /// The function or method at the position.
    PrepareCallHierarchy,
    /// The functions that call the one at the position.
    IncomingCalls,
    /// The functions the one at the position calls.
    OutgoingCalls,
}

impl LspOperation {
    fn query(self) -> Operation {
        match self {
            Self::GoToDefinition => Operation::GoToDefinition,
            Self::FindReferences => Operation::FindReferences,
            Self::Hover => Operation::Hover,
            Self::DocumentSymbol => Operation::DocumentSymbol,
            Self::WorkspaceSymbol => Operation::WorkspaceSymbol,
            Self::GoToImplementation => Operation::GoToImplementation,
            Self::PrepareCallHierarchy => Operation::PrepareCallHierarchy,
            Self::IncomingCalls => Operation::IncomingCalls,
            Self::OutgoingCalls => Operation::OutgoingCalls,
        }
    }

    fn needs_position(self) -> bool {
        !matches!(self, Self::DocumentSymbol | Self::WorkspaceSymbol)
    }
}

/// Arguments of the lsp tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LspInput {
    /// What to ask.
    pub operation: LspOperation,
    /// The file, relative to the working directory or absolute.
    pub file_path: String,
    /// 1-based line of the symbol (not needed for documentSymbol and workspaceSymbol).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// 1-based character in that line (not needed for documentSymbol and workspaceSymbol).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub character: Option<u32>,
    /// What to search for, for workspaceSymbol.
    #[serde(default)]
    pub query: Option<String>,
}

/// The result of the lsp tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LspOutput {
    /// What the model reads.
    pub output: String,
    /// How many results.
    pub results: usize,
}

pub(crate) fn tool(env: &ToolEnv, manager: Arc<LspManager>) -> AnyTool {
    Tool::with_state(DESCRIPTION, (env.clone(), manager), lsp)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::ReadOnly)
        .erase()
}

async fn lsp(
    State((env, manager)): State<(ToolEnv, Arc<LspManager>)>,
    input: LspInput,
    cx: Context,
) -> Result<LspOutput, ToolFailure> {
    let target = env.resolve(&cx, &input.file_path).await?;
    let name = target.display_name();
    env.gate
        .ask(&cx, Ask::new(Permission::LSP.as_str(), [name.clone()]))
        .await?;
    // The answer shows the file's own lines, so its read rules apply as `read`'s do.
    env.gate.ask(&cx, read_ask(&name)).await?;
    if !target.exists || !target.path.is_file() {
        return Err(ToolFailure::new(format!("File not found: `{name}`."))
            .with_hint("Check the path with glob or list."));
    }
    if manager.servers_for(&target.path).is_empty() {
        return Err(ToolFailure::new(format!(
            "No language server is configured for `{name}`, so there is nothing to ask."
        ))
        .with_hint("Use grep to find definitions and references in files of this type."));
    }
    let (line, character) = match (
        input.operation.needs_position(),
        input.line,
        input.character,
    ) {
        (false, line, character) => (line.unwrap_or(1), character.unwrap_or(1)),
        (true, Some(line), Some(character)) if line >= 1 && character >= 1 => (line, character),
        (true, ..) => {
            return Err(ToolFailure::new(
                "This operation needs line and character, both 1-based, of the symbol to ask \
                 about (as read shows them).",
            ));
        }
    };
    let query = input.query.as_deref().unwrap_or("");
    let answer = manager
        .query(
            input.operation.query(),
            &target.path,
            line,
            character,
            query,
        )
        .await
        .map_err(failure)?;
    let (answer, withheld) = readable_only(Readable::new(&env, &cx), answer).await;
    let root = env.fs().root().to_path_buf();
    let shown = |path: &Path| {
        path.strip_prefix(&root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    };
    let place = |p: &Place| format!("{}:{}:{}: {}", shown(&p.path), p.line, p.column, p.text);
    let (lines, results): (Vec<String>, usize) = match answer {
        Answer::Places(places) => (places.iter().map(place).collect(), places.len()),
        Answer::Hover(Some(text)) if !text.trim().is_empty() => (vec![text], 1),
        Answer::Hover(_) => (Vec::new(), 0),
        Answer::Symbols(symbols) => (
            symbols
                .iter()
                .map(|s| {
                    format!(
                        "{}{} {} — {}",
                        "  ".repeat(s.depth),
                        s.kind,
                        s.name,
                        place(&s.place)
                    )
                })
                .collect(),
            symbols.len(),
        ),
    };
    let mut output = if lines.is_empty() {
        format!("No results found for {}.", operation_name(input.operation))
    } else {
        lines.join("\n")
    };
    if withheld > 0 {
        output.push_str(&format!(
            "\n\n({} {} in files your permission rules do not let you read without asking {} \
             left out; use `read` on a file to ask for it.)",
            thousands(withheld),
            if withheld == 1 { "result" } else { "results" },
            if withheld == 1 { "was" } else { "were" }
        ));
    }
    Ok(LspOutput { output, results })
}

/// `answer` without the places and symbols in files whose `read` would not be allowed at once,
/// and how many were left out.
async fn readable_only(readable: Readable, answer: Answer) -> (Answer, usize) {
    let judged = tokio::task::spawn_blocking(move || match answer {
        Answer::Places(places) => {
            let before = places.len();
            let kept: Vec<Place> = places
                .into_iter()
                .filter(|p| readable.shows(&p.path))
                .collect();
            let withheld = before - kept.len();
            (Answer::Places(kept), withheld)
        }
        Answer::Symbols(symbols) => {
            let before = symbols.len();
            let kept: Vec<_> = symbols
                .into_iter()
                .filter(|s| readable.shows(&s.place.path))
                .collect();
            let withheld = before - kept.len();
            (Answer::Symbols(kept), withheld)
        }
        hover => (hover, 0),
    })
    .await;
    match judged {
        Ok(judged) => judged,
        Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        // Not cancelled by anyone: the runtime is shutting down, so nothing is shown.
        Err(_) => (Answer::Places(Vec::new()), 0),
    }
}

fn operation_name(operation: LspOperation) -> String {
    serde_json::to_value(operation)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
