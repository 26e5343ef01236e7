//! One cell replaced, inserted or deleted in a notebook's JSON text. Only the edited cell's bytes
//! (and one separator) change: the rest of the file, its indentation, key order, metadata and
//! final newline, stays byte for byte. New JSON follows the file's own indentation.

use std::ops::Range;

use serde_json::Value;

use super::spans::{self, Member};

/// Which cell an edit names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CellRef {
    /// The cell with this `id`.
    Id(String),
    /// The cell at this 0-based index.
    Index(usize),
}

/// What to do with the cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// Give the cell this source (and this type, when set). A code cell loses its outputs.
    Replace {
        source: String,
        cell_type: Option<String>,
    },
    /// Put a new cell at the index (or after the cell with the id).
    Insert { source: String, cell_type: String },
    /// Remove the cell.
    Delete,
}

/// What an edit did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edited {
    /// The notebook's new text.
    pub(crate) text: String,
    /// The index of the cell replaced, inserted or deleted.
    pub(crate) index: usize,
    /// Its type (after the edit, for a replacement).
    pub(crate) cell_type: String,
    /// Its id, if it has one.
    pub(crate) id: Option<String>,
    /// True when a replaced code cell had outputs or an execution count, now cleared.
    pub(crate) cleared_outputs: bool,
    /// Cells in the notebook after the edit.
    pub(crate) total_cells: usize,
}

/// Why a cell edit cannot be made; worded for the model.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CellEditError {
    /// No cell has the id.
    #[error("No cell of `{name}` has id `{id}`. {known}")]
    NoSuchId {
        name: String,
        id: String,
        known: String,
    },
    /// The index is past the end.
    #[error(
        "cellIndex {index} is past the end of `{name}`, which has {total} cells{range}.{insert}"
    )]
    NoSuchIndex {
        name: String,
        index: usize,
        total: usize,
        range: String,
        insert: &'static str,
    },
    /// The JSON is laid out in a way the span scanner does not follow.
    #[error(
        "`{name}` is valid JSON, but its layout could not be followed to edit one cell in place, \
         so nothing was written. Rewrite it with write if you must change it."
    )]
    Layout { name: String },
}

/// Applies `change` to the cell `target` of the notebook `text` (already parsed as `notebook`).
pub(crate) fn apply(
    name: &str,
    text: &str,
    notebook: &Value,
    target: &CellRef,
    change: &Change,
) -> Result<Edited, CellEditError> {
    let layout = || CellEditError::Layout {
        name: name.to_owned(),
    };
    let bytes = text.as_bytes();
    let root_start = spans::skip_ws(bytes, 0);
    let root_end = spans::value_end(bytes, root_start).ok_or_else(layout)?;
    let root = spans::members(bytes, root_start..root_end).ok_or_else(layout)?;
    let cells_member = root
        .iter()
        .rev()
        .find(|m| m.key == "cells")
        .ok_or_else(layout)?;
    let elements = spans::elements(bytes, cells_member.value.clone()).ok_or_else(layout)?;
    let cells = super::cells(notebook);
    if elements.len() != cells.len() {
        return Err(layout());
    }
    let style = Style::of(bytes, &root, cells_member, &elements);
    let inserting = matches!(change, Change::Insert { .. });
    let index = locate(name, cells, target, inserting)?;

    let (range, replacement, cell_type, id, cleared_outputs) = match change {
        Change::Delete => {
            let cell = &cells[index];
            let range = if elements.len() == 1 {
                cells_member.value.clone()
            } else if index + 1 < elements.len() {
                elements[index].start..elements[index + 1].start
            } else {
                elements[index - 1].end..elements[index].end
            };
            let replacement = if elements.len() == 1 {
                "[]".to_owned()
            } else {
                String::new()
            };
            (
                range,
                replacement,
                cell_type_of(cell),
                cell["id"].as_str().map(str::to_owned),
                false,
            )
        }
        Change::Replace { source, cell_type } => {
            let cell = &cells[index];
            let span = elements[index].clone();
            let members = spans::members(bytes, span.clone()).ok_or_else(layout)?;
            let old_type = cell_type_of(cell);
            let new_type = cell_type.clone().unwrap_or_else(|| old_type.clone());
            let cleared = old_type == "code"
                && (cell["outputs"].as_array().is_some_and(|o| !o.is_empty())
                    || !cell["execution_count"].is_null());
            let member_indent = members
                .first()
                .and_then(|m| spans::line_indent(bytes, m.key_start))
                .map(str::to_owned)
                .or_else(|| {
                    style
                        .pretty()
                        .then(|| format!("{}{}", style.element, style.unit))
                });
            let source_text = style.value(
                &source_value(source, cell["source"].is_string()),
                member_indent.as_deref(),
            );
            let mut fields: Vec<(String, String)> = Vec::new();
            for Member { key, value, .. } in &members {
                let raw = &text[value.clone()];
                let kept = match key.as_str() {
                    "source" => Some(source_text.clone()),
                    "cell_type" => Some(json_string(&new_type)),
                    "outputs" => (new_type == "code").then(|| "[]".to_owned()),
                    "execution_count" => (new_type == "code").then(|| "null".to_owned()),
                    _ => Some(raw.to_owned()),
                };
                if let Some(kept) = kept {
                    fields.push((key.clone(), kept));
                }
            }
            let mut required = vec![("source", source_text.clone())];
            if new_type == "code" {
                required.push(("execution_count", "null".to_owned()));
                required.push(("outputs", "[]".to_owned()));
            }
            for (key, value) in required {
                if !fields.iter().any(|(k, _)| k == key) {
                    let at = fields
                        .iter()
                        .position(|(k, _)| k.as_str() > key)
                        .unwrap_or(fields.len());
                    fields.insert(at, (key.to_owned(), value));
                }
            }
            let separator = members
                .first()
                .map(|m| {
                    let key_end = m.key_start + json_string(&m.key).len();
                    text[key_end..m.value.start].to_owned()
                })
                .unwrap_or_else(|| style.colon().to_owned());
            let object = style.object(
                &fields,
                member_indent.as_deref(),
                spans::line_indent(bytes, span.end - 1).filter(|_| style.pretty()),
                &separator,
            );
            (
                span,
                object,
                new_type,
                cell["id"].as_str().map(str::to_owned),
                cleared,
            )
        }
        Change::Insert { source, cell_type } => {
            let id = uses_ids(notebook).then(|| fresh_id(cells));
            let mut fields: Vec<(String, String)> =
                vec![("cell_type".into(), json_string(cell_type))];
            if cell_type == "code" {
                fields.push(("execution_count".into(), "null".into()));
            }
            if let Some(id) = &id {
                fields.push(("id".into(), json_string(id)));
            }
            fields.push(("metadata".into(), "{}".into()));
            if cell_type == "code" {
                fields.push(("outputs".into(), "[]".into()));
            }
            let member_indent = style
                .pretty()
                .then(|| format!("{}{}", style.element, style.unit));
            fields.push((
                "source".into(),
                style.value(&source_value(source, false), member_indent.as_deref()),
            ));
            let object = style.object(
                &fields,
                member_indent.as_deref(),
                style.pretty().then_some(style.element.as_str()),
                style.colon(),
            );
            let (range, replacement) = if elements.is_empty() {
                let array = cells_member.value.clone();
                let replacement = if style.pretty() {
                    format!("[\n{}{object}\n{}]", style.element, style.root)
                } else {
                    format!("[{object}]")
                };
                (array, replacement)
            } else if index < elements.len() {
                let at = elements[index].start;
                (at..at, format!("{object}{}", style.separator))
            } else {
                let at = elements[elements.len() - 1].end;
                (at..at, format!("{}{object}", style.separator))
            };
            (range, replacement, cell_type.clone(), id, false)
        }
    };
    let mut new_text = String::with_capacity(text.len() + replacement.len());
    new_text.push_str(&text[..range.start]);
    new_text.push_str(&replacement);
    new_text.push_str(&text[range.end..]);
    let total_cells = match change {
        Change::Insert { .. } => cells.len() + 1,
        Change::Delete => cells.len() - 1,
        Change::Replace { .. } => cells.len(),
    };
    // The edit must leave a notebook with the cells it means to.
    match super::parse(&new_text) {
        Ok(parsed) if super::cells(&parsed).len() == total_cells => {}
        _ => return Err(layout()),
    }
    Ok(Edited {
        text: new_text,
        index,
        cell_type,
        id,
        cleared_outputs,
        total_cells,
    })
}

/// The index `target` names. For an insert, the index the new cell takes.
fn locate(
    name: &str,
    cells: &[Value],
    target: &CellRef,
    inserting: bool,
) -> Result<usize, CellEditError> {
    match target {
        CellRef::Index(index) => {
            let most = if inserting {
                cells.len()
            } else {
                cells.len().saturating_sub(1)
            };
            if *index <= most && (inserting || !cells.is_empty()) {
                Ok(*index)
            } else {
                Err(CellEditError::NoSuchIndex {
                    name: name.to_owned(),
                    index: *index,
                    total: cells.len(),
                    range: if cells.is_empty() {
                        String::new()
                    } else {
                        format!(" (0-{})", cells.len() - 1)
                    },
                    insert: if inserting {
                        ""
                    } else {
                        " To add a cell, use editMode `insert`."
                    },
                })
            }
        }
        CellRef::Id(id) => {
            let found = cells
                .iter()
                .position(|cell| cell["id"].as_str() == Some(id));
            match found {
                Some(index) if inserting => Ok(index + 1),
                Some(index) => Ok(index),
                None => {
                    let ids: Vec<String> = cells
                        .iter()
                        .filter_map(|cell| cell["id"].as_str())
                        .take(20)
                        .map(|id| format!("`{id}`"))
                        .collect();
                    let known = if ids.is_empty() {
                        "Its cells have no ids; name the cell with cellIndex instead.".to_owned()
                    } else {
                        format!(
                            "Its cell ids are {}{}. Read the notebook to see which is which, or \
                             use cellIndex.",
                            ids.join(", "),
                            if cells.len() > 20 { ", …" } else { "" }
                        )
                    };
                    Err(CellEditError::NoSuchId {
                        name: name.to_owned(),
                        id: id.clone(),
                        known,
                    })
                }
            }
        }
    }
}

/// The file's layout: the indentation unit, the indentation of the root's members and of the
/// cells, and the separator between cells. Empty `unit` means compact JSON.
struct Style {
    unit: String,
    root: String,
    element: String,
    separator: String,
}

impl Style {
    fn of(bytes: &[u8], root: &[Member], cells: &Member, elements: &[Range<usize>]) -> Self {
        let root_indent = spans::line_indent(bytes, cells.key_start).or_else(|| {
            root.first()
                .and_then(|m| spans::line_indent(bytes, m.key_start))
        });
        let Some(root_indent) = root_indent.filter(|i| !i.is_empty()) else {
            return Self {
                unit: String::new(),
                root: String::new(),
                element: String::new(),
                separator: ",".to_owned(),
            };
        };
        let element = elements
            .first()
            .and_then(|e| spans::line_indent(bytes, e.start))
            .map(str::to_owned)
            .unwrap_or_else(|| root_indent.repeat(2));
        let separator = match elements {
            [first, second, ..] => {
                String::from_utf8_lossy(&bytes[first.end..second.start]).into_owned()
            }
            _ => format!(",\n{element}"),
        };
        Self {
            unit: root_indent.to_owned(),
            root: root_indent.to_owned(),
            element,
            separator,
        }
    }

    fn pretty(&self) -> bool {
        !self.unit.is_empty()
    }

    fn colon(&self) -> &'static str {
        if self.pretty() { ": " } else { ":" }
    }

    /// `value` as JSON in this style, for a member whose line starts with `indent`.
    fn value(&self, value: &Value, indent: Option<&str>) -> String {
        match indent.filter(|_| self.pretty()) {
            Some(indent) => {
                let mut out = Vec::new();
                let formatter = serde_json::ser::PrettyFormatter::with_indent(self.unit.as_bytes());
                let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
                serde::Serialize::serialize(value, &mut serializer)
                    .expect("a JSON value serializes");
                String::from_utf8(out)
                    .expect("serde_json writes UTF-8")
                    .replace('\n', &format!("\n{indent}"))
            }
            None => value.to_string(),
        }
    }

    /// An object of `fields` (raw JSON values), members on lines starting with `indent` and
    /// the closing brace after `close`, or compact when either is absent.
    fn object(
        &self,
        fields: &[(String, String)],
        indent: Option<&str>,
        close: Option<&str>,
        colon: &str,
    ) -> String {
        let member =
            |(key, value): &(String, String)| format!("{}{colon}{value}", json_string(key));
        match (indent, close) {
            (Some(indent), Some(close)) => {
                let body: Vec<String> = fields
                    .iter()
                    .map(|field| format!("{indent}{}", member(field)))
                    .collect();
                format!("{{\n{}\n{close}}}", body.join(",\n"))
            }
            _ => {
                let body: Vec<String> = fields.iter().map(member).collect();
                format!("{{{}}}", body.join(","))
            }
        }
    }
}

/// A source as Jupyter stores it: a list of lines, each but the last ending in `\n`; or one
/// string when the cell kept it that way.
fn source_value(source: &str, as_string: bool) -> Value {
    if as_string {
        return Value::String(source.to_owned());
    }
    Value::Array(
        source
            .split_inclusive('\n')
            .map(|line| Value::String(line.to_owned()))
            .collect(),
    )
}

fn cell_type_of(cell: &Value) -> String {
    cell["cell_type"].as_str().unwrap_or("code").to_owned()
}

fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// Whether the notebook's cells carry ids (nbformat 4.5 and later).
fn uses_ids(notebook: &Value) -> bool {
    let major = notebook["nbformat"].as_u64().unwrap_or(4);
    let minor = notebook["nbformat_minor"].as_u64().unwrap_or(0);
    major > 4
        || (major == 4 && minor >= 5)
        || super::cells(notebook).iter().any(|c| c["id"].is_string())
}

/// An id no cell of `cells` has: 8 hex digits, as Jupyter makes them.
fn fresh_id(cells: &[Value]) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (0u64..)
        .map(|n| {
            let seed = format!("{nanos}:{}:{n}", std::process::id());
            blake3::hash(seed.as_bytes()).to_hex()[..8].to_owned()
        })
        .find(|id| !cells.iter().any(|cell| cell["id"].as_str() == Some(id)))
        .expect("an unused id among 2^32")
}
