//! The `lsp` tool's questions (definition, references, hover, symbols, call hierarchy), asked
//! with 1-based character positions and answered with paths, positions and line texts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::{
    CallHierarchyIncomingCall, CallHierarchyItem, CallHierarchyOutgoingCall, DocumentSymbol,
    DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, Location, MarkedString,
    SymbolInformation, SymbolKind, WorkspaceSymbolResponse,
};
use serde_json::{Value, json};

use crate::position::{column_to_utf16, line_of, path_to_uri, uri_to_path, utf16_to_column};
use crate::{LspError, LspManager};

/// What to ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Where the symbol at the position is defined.
    GoToDefinition,
    /// Every reference to it.
    FindReferences,
    /// Its type and documentation.
    Hover,
    /// The file's symbols.
    DocumentSymbol,
    /// Symbols matching a query across the project.
    WorkspaceSymbol,
    /// Its implementations.
    GoToImplementation,
    /// The call-hierarchy item at the position.
    PrepareCallHierarchy,
    /// Who calls it.
    IncomingCalls,
    /// What it calls.
    OutgoingCalls,
}

/// A place in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: u32,
    /// 1-based character column.
    pub column: u32,
    /// The line's text, trimmed.
    pub text: String,
}

/// A named symbol and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Its name.
    pub name: String,
    /// Its kind (`function`, `class`…).
    pub kind: String,
    /// Where it is.
    pub place: Place,
    /// Nesting depth in a document outline (0 at the top).
    pub depth: usize,
}

/// An answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Places (definitions, references, implementations).
    Places(Vec<Place>),
    /// Hover text.
    Hover(Option<String>),
    /// Symbols (outline, workspace search, call-hierarchy items, callers, callees).
    Symbols(Vec<Symbol>),
}

/// Text of files read while answering, so each is read once.
#[derive(Default)]
struct Texts(HashMap<PathBuf, String>);

impl Texts {
    fn place(&mut self, path: PathBuf, line: u32, character: u32) -> Place {
        let text = self
            .0
            .entry(path.clone())
            .or_insert_with(|| read_small(&path).unwrap_or_default());
        let line_text = line_of(text, line);
        Place {
            column: utf16_to_column(line_text, character),
            text: line_text.trim().to_owned(),
            line: line + 1,
            path,
        }
    }

    fn location(&mut self, location: &Location) -> Option<Place> {
        let path = uri_to_path(location.uri.as_str())?;
        Some(self.place(
            path,
            location.range.start.line,
            location.range.start.character,
        ))
    }
}

/// A result decoded; `null` or a shape the server got wrong is nothing.
fn decode<T: serde::de::DeserializeOwned>(value: Value) -> Option<T> {
    serde_json::from_value(value).ok()
}

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.len() <= 8 * 1024 * 1024)
        .then(|| std::fs::read_to_string(path).ok())
        .flatten()
}

/// The most results an answer keeps.
const MAX_RESULTS: usize = 200;

impl LspManager {
    /// Asks `operation` about `path` at 1-based `line` and `column` (ignored by
    /// `DocumentSymbol` and `WorkspaceSymbol`); `query` is `WorkspaceSymbol`'s search.
    pub async fn query(
        &self,
        operation: Operation,
        path: &Path,
        line: u32,
        column: u32,
        query: &str,
    ) -> Result<Answer, LspError> {
        let text = read_small(path).ok_or_else(|| LspError::Unreadable {
            path: path.to_path_buf(),
        })?;
        let line0 = line.saturating_sub(1);
        let character = column_to_utf16(line_of(&text, line0), column.max(1));
        let document = json!({ "uri": path_to_uri(path) });
        let at = json!({
            "textDocument": document,
            "position": {"line": line0, "character": character},
        });
        let mut texts = Texts::default();
        texts.0.insert(path.to_path_buf(), text);
        Ok(match operation {
            Operation::GoToDefinition | Operation::GoToImplementation => {
                let method = if operation == Operation::GoToDefinition {
                    "textDocument/definition"
                } else {
                    "textDocument/implementation"
                };
                let answer: Option<GotoDefinitionResponse> =
                    decode(self.request(path, method, at).await?);
                let locations = match answer {
                    None => Vec::new(),
                    Some(GotoDefinitionResponse::Scalar(one)) => vec![one],
                    Some(GotoDefinitionResponse::Array(many)) => many,
                    Some(GotoDefinitionResponse::Link(links)) => links
                        .into_iter()
                        .map(|link| Location {
                            uri: link.target_uri,
                            range: link.target_selection_range,
                        })
                        .collect(),
                };
                Answer::Places(places(&mut texts, &locations))
            }
            Operation::FindReferences => {
                let mut params = at;
                params["context"] = json!({"includeDeclaration": true});
                let answer: Option<Vec<Location>> = decode(
                    self.request(path, "textDocument/references", params)
                        .await?,
                );
                Answer::Places(places(&mut texts, &answer.unwrap_or_default()))
            }
            Operation::Hover => {
                let answer: Option<Hover> =
                    decode(self.request(path, "textDocument/hover", at).await?);
                Answer::Hover(answer.map(|hover| hover_text(hover.contents)))
            }
            Operation::DocumentSymbol => {
                let params = json!({ "textDocument": document });
                let answer: Option<DocumentSymbolResponse> = decode(
                    self.request(path, "textDocument/documentSymbol", params)
                        .await?,
                );
                let mut out = Vec::new();
                match answer {
                    Some(DocumentSymbolResponse::Nested(nested)) => {
                        outline(&mut texts, path, &nested, 0, &mut out)
                    }
                    Some(DocumentSymbolResponse::Flat(flat)) => {
                        out.extend(flat_symbols(&mut texts, &flat))
                    }
                    None => {}
                }
                out.truncate(MAX_RESULTS);
                Answer::Symbols(out)
            }
            Operation::WorkspaceSymbol => {
                let answer: Option<WorkspaceSymbolResponse> = decode(
                    self.request(path, "workspace/symbol", json!({ "query": query }))
                        .await?,
                );
                let mut out = match answer {
                    Some(WorkspaceSymbolResponse::Flat(flat)) => flat_symbols(&mut texts, &flat),
                    Some(WorkspaceSymbolResponse::Nested(nested)) => nested
                        .into_iter()
                        .filter_map(|symbol| {
                            let lsp_types::OneOf::Left(location) = symbol.location else {
                                return None;
                            };
                            Some(Symbol {
                                name: symbol.name,
                                kind: kind_name(symbol.kind),
                                place: texts.location(&location)?,
                                depth: 0,
                            })
                        })
                        .collect(),
                    None => Vec::new(),
                };
                out.truncate(MAX_RESULTS);
                Answer::Symbols(out)
            }
            Operation::PrepareCallHierarchy
            | Operation::IncomingCalls
            | Operation::OutgoingCalls => {
                let items: Vec<CallHierarchyItem> = decode(
                    self.request(path, "textDocument/prepareCallHierarchy", at)
                        .await?,
                )
                .unwrap_or_default();
                let mut out = Vec::new();
                for item in items {
                    match operation {
                        Operation::IncomingCalls => {
                            let calls: Vec<CallHierarchyIncomingCall> = decode(
                                self.request(
                                    path,
                                    "callHierarchy/incomingCalls",
                                    json!({ "item": item }),
                                )
                                .await?,
                            )
                            .unwrap_or_default();
                            for call in calls {
                                out.extend(call_symbol(&mut texts, &call.from));
                            }
                        }
                        Operation::OutgoingCalls => {
                            let calls: Vec<CallHierarchyOutgoingCall> = decode(
                                self.request(
                                    path,
                                    "callHierarchy/outgoingCalls",
                                    json!({ "item": item }),
                                )
                                .await?,
                            )
                            .unwrap_or_default();
                            for call in calls {
                                out.extend(call_symbol(&mut texts, &call.to));
                            }
                        }
                        _ => out.extend(call_symbol(&mut texts, &item)),
                    }
                }
                out.truncate(MAX_RESULTS);
                Answer::Symbols(out)
            }
        })
    }
}

fn places(texts: &mut Texts, locations: &[Location]) -> Vec<Place> {
    locations
        .iter()
        .take(MAX_RESULTS)
        .filter_map(|l| texts.location(l))
        .collect()
}

fn call_symbol(texts: &mut Texts, item: &CallHierarchyItem) -> Option<Symbol> {
    let path = uri_to_path(item.uri.as_str())?;
    let start = item.selection_range.start;
    Some(Symbol {
        name: item.name.clone(),
        kind: kind_name(item.kind),
        place: texts.place(path, start.line, start.character),
        depth: 0,
    })
}

fn outline(
    texts: &mut Texts,
    path: &Path,
    symbols: &[DocumentSymbol],
    depth: usize,
    out: &mut Vec<Symbol>,
) {
    for symbol in symbols {
        let start = symbol.selection_range.start;
        out.push(Symbol {
            name: symbol.name.clone(),
            kind: kind_name(symbol.kind),
            place: texts.place(path.to_path_buf(), start.line, start.character),
            depth,
        });
        if let Some(children) = &symbol.children {
            outline(texts, path, children, depth + 1, out);
        }
    }
}

#[allow(deprecated)] // `SymbolInformation::deprecated` is a field of the type, not used here.
fn flat_symbols(texts: &mut Texts, symbols: &[SymbolInformation]) -> Vec<Symbol> {
    symbols
        .iter()
        .filter_map(|symbol| {
            Some(Symbol {
                name: symbol.name.clone(),
                kind: kind_name(symbol.kind),
                place: texts.location(&symbol.location)?,
                depth: 0,
            })
        })
        .collect()
}

fn hover_text(contents: HoverContents) -> String {
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(code) => format!("```{}\n{}\n```", code.language, code.value),
    };
    match contents {
        HoverContents::Scalar(one) => marked(one),
        HoverContents::Array(many) => many
            .into_iter()
            .map(marked)
            .collect::<Vec<_>>()
            .join("\n\n"),
        HoverContents::Markup(markup) => markup.value,
    }
}

fn kind_name(kind: SymbolKind) -> String {
    let name = match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::PROPERTY => "property",
        SymbolKind::FIELD => "field",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRING => "string",
        SymbolKind::NUMBER => "number",
        SymbolKind::BOOLEAN => "boolean",
        SymbolKind::ARRAY => "array",
        SymbolKind::OBJECT => "object",
        SymbolKind::KEY => "key",
        SymbolKind::NULL => "null",
        SymbolKind::ENUM_MEMBER => "enum member",
        SymbolKind::STRUCT => "struct",
        SymbolKind::EVENT => "event",
        SymbolKind::OPERATOR => "operator",
        SymbolKind::TYPE_PARAMETER => "type parameter",
        _ => "symbol",
    };
    name.to_owned()
}
