//! Unit tests of notebook rendering and of one-cell edits on the file's own JSON text.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::edit::{CellRef, Change, apply};
use super::{clean, parse, render};

/// `value` as Jupyter writes a notebook: sorted keys (the literals below are written sorted),
/// one-space indentation, a final newline.
pub(crate) fn jupyter(value: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(value, &mut serializer).unwrap();
    String::from_utf8(out).unwrap() + "\n"
}

fn notebook(cells: Vec<Value>) -> Value {
    json!({
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5
    })
}

fn markdown(id: &str, source: &[&str]) -> Value {
    json!({"cell_type": "markdown", "id": id, "metadata": {}, "source": source})
}

fn code(id: &str, count: Option<u64>, outputs: Vec<Value>, source: &[&str]) -> Value {
    json!({
        "cell_type": "code",
        "execution_count": count,
        "id": id,
        "metadata": {"tags": ["keep"]},
        "outputs": outputs,
        "source": source
    })
}

/// A 1×1 PNG, base64.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn sample() -> Value {
    notebook(vec![
        markdown("intro", &["# Title\n", "Some text"]),
        code(
            "load",
            Some(1),
            vec![
                json!({"name": "stdout", "output_type": "stream", "text": ["loading\r50%\r100%\n", "done\n"]}),
                json!({"data": {"text/plain": ["array([1, 2])"]}, "execution_count": 1, "metadata": {}, "output_type": "execute_result"}),
            ],
            &["import numpy as np\n", "np.array([1, 2])"],
        ),
        code(
            "plot",
            Some(2),
            vec![
                json!({"data": {"image/png": format!("{}\n", PIXEL), "text/plain": ["<Figure size 640x480>"]}, "metadata": {}, "output_type": "display_data"}),
            ],
            &["plt.plot([1, 2])"],
        ),
        code(
            "boom",
            Some(3),
            vec![
                json!({"ename": "ZeroDivisionError", "evalue": "division by zero", "output_type": "error", "traceback": ["\u{1b}[0;31m---------\u{1b}[0m", "\u{1b}[0;31mZeroDivisionError\u{1b}[0m: division by zero"]}),
            ],
            &["1/0"],
        ),
    ])
}

#[test]
fn cells_render_in_order_with_numbered_source_outputs_and_images() {
    let rendered = render(&sample(), "nb.ipynb", 0, None).unwrap();
    assert_eq!(
        rendered.text,
        "Jupyter notebook nb.ipynb: 4 cells (3 code, 1 markdown, 0 raw), language python.\n\n\
         Cell 0 · markdown · id intro\n     1\t# Title\n     2\tSome text\n\n\
         Cell 1 · code · id load · execution_count 1\n     1\timport numpy as np\n     2\tnp.array([1, 2])\n\
         Output 0 · stdout\n100%\ndone\n\
         Output 1 · execute_result\narray([1, 2])\n\n\
         Cell 2 · code · id plot · execution_count 2\n     1\tplt.plot([1, 2])\n\
         Output 0 · display_data image/png · attached as media part 1\n<Figure size 640x480>\n\n\
         Cell 3 · code · id boom · execution_count 3\n     1\t1/0\n\
         Output 0 · error ZeroDivisionError\n---------\nZeroDivisionError: division by zero\n\n\
         (End of notebook: 4 cells.)"
    );
    assert_eq!(rendered.images.len(), 1);
    assert_eq!(rendered.images[0].mime_type, "image/png");
    assert_eq!(
        rendered.images[0].data_base64, PIXEL,
        "whitespace is removed"
    );
    assert_eq!(
        (
            rendered.first_cell,
            rendered.last_cell,
            rendered.total_cells
        ),
        (0, 3, 4)
    );
    assert_eq!(rendered.next_offset, None);
}

#[test]
fn offset_and_limit_page_through_cells() {
    let rendered = render(&sample(), "nb.ipynb", 1, Some(2)).unwrap();
    assert!(rendered.text.contains("Cell 1 ·"), "{}", rendered.text);
    assert!(rendered.text.contains("Cell 2 ·"));
    assert!(!rendered.text.contains("Cell 0 ·") && !rendered.text.contains("Cell 3 ·"));
    assert!(
        rendered.text.ends_with(
            "(Showing cells 1-2 of the notebook's 4 cells, 0-3. Use offset=3 to continue.)"
        ),
        "{}",
        rendered.text
    );
    assert_eq!(rendered.next_offset, Some(3));
    let past = render(&sample(), "nb.ipynb", 4, None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        past,
        "offset 4 is past the last cell of `nb.ipynb`, which has 4 cells (0-3). Use an offset \
         from 0 to 3."
    );
}

#[test]
fn a_long_output_is_cut_in_the_middle_with_the_way_to_see_more() {
    let lines: Vec<String> = (1..=1000).map(|n| format!("step {n}\n")).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let nb = notebook(vec![
        code(
            "train",
            Some(1),
            vec![json!({"name": "stdout", "output_type": "stream", "text": lines})],
            &["train()"],
        ),
        markdown("after", &["done"]),
    ]);
    let several = render(&nb, "nb.ipynb", 0, None).unwrap().text;
    assert!(several.contains("step 1\n"), "the head is kept");
    assert!(
        several.contains("step 1000\n"),
        "the tail is kept: {several}"
    );
    assert!(
        several.contains("lines (") && several.contains("of output 0 omitted, from line"),
        "{several}"
    );
    assert!(
        several.contains("Read this cell alone (offset=0, limit=1) to see more of it.]"),
        "{several}"
    );
    assert!(
        several.contains("Cell 1 · markdown"),
        "later cells still show"
    );

    let alone = render(&nb, "nb.ipynb", 0, Some(1)).unwrap().text;
    assert!(
        !alone.contains("omitted"),
        "a cell read alone gets the whole bound: {alone}"
    );
    assert!(alone.ends_with("Use offset=1 to continue.)"), "{alone}");
}

#[test]
fn many_cells_stop_at_the_bound_and_say_where_to_continue() {
    let source = "x = 1  # ".to_owned() + &"y".repeat(1500);
    let cells: Vec<Value> = (0..100)
        .map(|n| code(&format!("c{n}"), None, vec![], &[source.as_str()]))
        .collect();
    let rendered = render(&notebook(cells), "nb.ipynb", 0, None).unwrap();
    assert!(
        rendered.text.len() <= crate::text::MAX_READ_BYTES,
        "{}",
        rendered.text.len()
    );
    let next = rendered.next_offset.expect("cells are left");
    assert!(next > 1 && next < 100);
    assert!(
        rendered
            .text
            .ends_with(&format!("Use offset={next} to continue.)"))
    );
}

#[test]
fn terminal_codes_and_overwritten_progress_are_cleaned() {
    assert_eq!(
        clean("\u{1b}[1;32mok\u{1b}[0m\n\u{1b}]0;title\u{7}10%\r100%\r\n"),
        "ok\n100%"
    );
}

#[test]
fn not_a_notebook_says_why() {
    assert!(
        parse("{\"cells\": 3}")
            .unwrap_err()
            .to_string()
            .contains("no `cells` array")
    );
    assert!(
        parse("{")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON")
    );
}

fn edit(text: &str, target: CellRef, change: Change) -> super::edit::Edited {
    apply("nb.ipynb", text, &parse(text).unwrap(), &target, &change).unwrap()
}

#[test]
fn replace_keeps_the_file_as_jupyter_writes_it_and_clears_outputs() {
    let text = jupyter(&sample());
    let edited = edit(
        &text,
        CellRef::Id("load".into()),
        Change::Replace {
            source: "import pandas as pd\nprint(pd)\n".into(),
            cell_type: None,
        },
    );
    let mut expected = sample();
    expected["cells"][1]["source"] = json!(["import pandas as pd\n", "print(pd)\n"]);
    expected["cells"][1]["outputs"] = json!([]);
    expected["cells"][1]["execution_count"] = Value::Null;
    assert_eq!(edited.text, jupyter(&expected));
    assert!(edited.cleared_outputs);
    assert_eq!((edited.index, edited.cell_type.as_str()), (1, "code"));
}

#[test]
fn replace_can_change_the_cell_type() {
    let text = jupyter(&sample());
    let edited = edit(
        &text,
        CellRef::Index(3),
        Change::Replace {
            source: "No more errors.".into(),
            cell_type: Some("markdown".into()),
        },
    );
    let mut expected = sample();
    expected["cells"][3] = json!({"cell_type": "markdown", "id": "boom", "metadata": {"tags": ["keep"]}, "source": ["No more errors."]});
    assert_eq!(edited.text, jupyter(&expected));

    let back = edit(
        &edited.text,
        CellRef::Id("boom".into()),
        Change::Replace {
            source: "2/1".into(),
            cell_type: Some("code".into()),
        },
    );
    expected["cells"][3] = code("boom", None, vec![], &["2/1"]);
    assert_eq!(back.text, jupyter(&expected));
}

#[test]
fn insert_and_delete_keep_the_file_as_jupyter_writes_it() {
    let text = jupyter(&sample());
    let inserted = edit(
        &text,
        CellRef::Index(1),
        Change::Insert {
            source: "## Setup".into(),
            cell_type: "markdown".into(),
        },
    );
    let id = inserted.id.clone().expect("nbformat 4.5 cells get an id");
    assert_eq!(id.len(), 8);
    let mut expected = sample();
    expected["cells"].as_array_mut().unwrap().insert(
        1,
        json!({"cell_type": "markdown", "id": id, "metadata": {}, "source": ["## Setup"]}),
    );
    assert_eq!(inserted.text, jupyter(&expected));

    let appended = edit(
        &inserted.text,
        CellRef::Id("boom".into()),
        Change::Insert {
            source: "print(2)\n".into(),
            cell_type: "code".into(),
        },
    );
    let new_id = appended.id.clone().unwrap();
    expected["cells"].as_array_mut().unwrap().push(json!({"cell_type": "code", "execution_count": null, "id": new_id, "metadata": {}, "outputs": [], "source": ["print(2)\n"]}));
    assert_eq!(appended.text, jupyter(&expected));
    assert_eq!(appended.index, 5);

    let deleted = edit(&appended.text, CellRef::Index(0), Change::Delete);
    expected["cells"].as_array_mut().unwrap().remove(0);
    assert_eq!(deleted.text, jupyter(&expected));
    let last = edit(&deleted.text, CellRef::Index(4), Change::Delete);
    expected["cells"].as_array_mut().unwrap().remove(4);
    assert_eq!(last.text, jupyter(&expected));
}

#[test]
fn the_only_cell_deleted_and_a_cell_inserted_into_an_empty_notebook() {
    let one = notebook(vec![markdown("a", &["x"])]);
    let emptied = edit(&jupyter(&one), CellRef::Index(0), Change::Delete);
    assert_eq!(emptied.text, jupyter(&notebook(vec![])));
    let filled = edit(
        &emptied.text,
        CellRef::Index(0),
        Change::Insert {
            source: "x".into(),
            cell_type: "markdown".into(),
        },
    );
    let id = filled.id.unwrap();
    assert_eq!(filled.text, jupyter(&notebook(vec![markdown(&id, &["x"])])));
}

#[test]
fn another_layout_keeps_every_byte_outside_the_cell() {
    // Two-space indentation, keys unsorted, a string source, no final newline.
    let text = "{\n  \"nbformat\": 4,\n  \"nbformat_minor\": 2,\n  \"cells\": [\n    {\n      \"source\": \"a = 1\",\n      \"cell_type\": \"code\",\n      \"outputs\": [],\n      \"metadata\": {\"z\": 1, \"a\": 2},\n      \"execution_count\": 7\n    },\n    {\n      \"cell_type\": \"markdown\",\n      \"metadata\": {},\n      \"source\": [\"b\"]\n    }\n  ],\n  \"metadata\": {}\n}";
    let edited = edit(
        text,
        CellRef::Index(0),
        Change::Replace {
            source: "a = 2".into(),
            cell_type: None,
        },
    );
    assert_eq!(
        edited.text,
        text.replace("\"source\": \"a = 1\"", "\"source\": \"a = 2\"")
            .replace("\"execution_count\": 7", "\"execution_count\": null")
    );
    assert_eq!(edited.id, None);
    let inserted = edit(
        text,
        CellRef::Index(2),
        Change::Insert {
            source: "c\nd".into(),
            cell_type: "raw".into(),
        },
    );
    assert_eq!(inserted.id, None, "an nbformat 4.2 notebook gets no ids");
    assert_eq!(
        inserted.text,
        text.replace(
            "\"source\": [\"b\"]\n    }\n",
            "\"source\": [\"b\"]\n    },\n    {\n      \"cell_type\": \"raw\",\n      \"metadata\": {},\n      \"source\": [\n        \"c\\n\",\n        \"d\"\n      ]\n    }\n"
        )
    );
}

#[test]
fn compact_json_stays_compact() {
    let text = r#"{"cells":[{"cell_type":"markdown","metadata":{},"source":["a"]}],"metadata":{},"nbformat":4,"nbformat_minor":4}"#;
    let edited = edit(
        text,
        CellRef::Index(1),
        Change::Insert {
            source: "b".into(),
            cell_type: "markdown".into(),
        },
    );
    assert_eq!(
        edited.text,
        r#"{"cells":[{"cell_type":"markdown","metadata":{},"source":["a"]},{"cell_type":"markdown","metadata":{},"source":["b"]}],"metadata":{},"nbformat":4,"nbformat_minor":4}"#
    );
}

#[test]
fn an_unknown_cell_is_refused_with_what_exists() {
    let text = jupyter(&sample());
    let nb = parse(&text).unwrap();
    let error = apply(
        "nb.ipynb",
        &text,
        &nb,
        &CellRef::Id("nope".into()),
        &Change::Delete,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        "No cell of `nb.ipynb` has id `nope`. Its cell ids are `intro`, `load`, `plot`, `boom`. \
         Read the notebook to see which is which, or use cellIndex."
    );
    let error = apply("nb.ipynb", &text, &nb, &CellRef::Index(4), &Change::Delete)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "cellIndex 4 is past the end of `nb.ipynb`, which has 4 cells (0-3). To add a cell, use \
         editMode `insert`."
    );
    let insert = Change::Insert {
        source: String::new(),
        cell_type: "code".into(),
    };
    assert!(apply("nb.ipynb", &text, &nb, &CellRef::Index(4), &insert).is_ok());
    assert!(apply("nb.ipynb", &text, &nb, &CellRef::Index(5), &insert).is_err());
}

/// A cell of the model: markdown or code, its source lines, whether it ran with output.
#[derive(Clone, Debug)]
struct ModelCell {
    code: bool,
    lines: Vec<String>,
    ran: bool,
}

impl ModelCell {
    fn json(&self, id: &str) -> Value {
        let source: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        if self.code {
            let outputs = if self.ran {
                vec![json!({"name": "stdout", "output_type": "stream", "text": ["out\n"]})]
            } else {
                vec![]
            };
            code(id, self.ran.then_some(1), outputs, &source)
        } else {
            markdown(id, &source)
        }
    }
}

fn model_cell() -> impl Strategy<Value = ModelCell> {
    (
        any::<bool>(),
        proptest::collection::vec("[a-z \"\\\\{}\\[\\],é]{0,8}", 0..4),
        any::<bool>(),
    )
        .prop_map(|(code, mut lines, ran)| {
            let last = lines.len().saturating_sub(1);
            for (i, line) in lines.iter_mut().enumerate() {
                if i < last {
                    line.push('\n');
                }
            }
            // As Jupyter stores a source: no empty last line.
            let lines = lines
                .concat()
                .split_inclusive('\n')
                .map(str::to_owned)
                .collect();
            ModelCell { code, lines, ran }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        if std::env::var_os("TACKLE_DEEP").is_some() { 2000 } else { 64 }
    ))]

    /// Any one-cell edit of a notebook as Jupyter wrote it gives exactly the text Jupyter would
    /// write for the edited notebook: no other cell, no metadata, no formatting changes.
    #[test]
    fn an_edit_is_exactly_the_edited_notebook_as_jupyter_writes_it(
        cells in proptest::collection::vec(model_cell(), 0..5),
        mode in 0..3u8,
        at in 0..6usize,
        new in model_cell(),
        by_id in any::<bool>(),
    ) {
        let ids: Vec<String> = (0..cells.len()).map(|i| format!("cell{i}")).collect();
        let json_cells: Vec<Value> = cells.iter().zip(&ids).map(|(c, id)| c.json(id)).collect();
        let text = jupyter(&notebook(json_cells.clone()));
        let source = new.lines.concat();
        let new_type = if new.code { "code" } else { "markdown" };
        let (change, limit) = match mode {
            0 => (Change::Replace { source: source.clone(), cell_type: Some(new_type.into()) }, cells.len()),
            1 => (Change::Insert { source: source.clone(), cell_type: new_type.into() }, cells.len() + 1),
            _ => (Change::Delete, cells.len()),
        };
        prop_assume!(limit > 0);
        let index = at % limit;
        let target = if by_id && index < cells.len() {
            CellRef::Id(ids[index].clone())
        } else {
            CellRef::Index(index)
        };
        let edited = apply("nb.ipynb", &text, &parse(&text).unwrap(), &target, &change).unwrap();
        let mut expected = json_cells;
        let fresh = ModelCell { ran: false, ..new };
        match mode {
            0 => {
                let mut cell = fresh.json(&ids[index]);
                // A replaced cell keeps its metadata.
                cell["metadata"] = expected[index]["metadata"].clone();
                expected[index] = cell;
            }
            1 => {
                let at = if matches!(target, CellRef::Id(_)) { index + 1 } else { index };
                let mut cell = fresh.json(edited.id.as_deref().unwrap());
                cell["metadata"] = json!({});
                expected.insert(at, cell);
            }
            _ => {
                expected.remove(index);
            }
        }
        prop_assert_eq!(edited.text, jupyter(&notebook(expected)));
    }
}
