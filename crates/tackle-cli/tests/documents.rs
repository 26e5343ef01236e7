//! End-to-end tests of notebooks and PDFs through the real binary: `tackle call read` renders a
//! notebook as cells and a PDF as text by page, and `tackle call notebook_edit` edits one cell
//! of a notebook the session read in an earlier process, keeping the rest of the file.

use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};
use tempfile::TempDir;

/// `tackle call NAME -` in session `s` of `root`, with `data` as the data directory:
/// (exit code, stdout).
fn call(root: &Path, data: &Path, name: &str, args: Value) -> (Option<i32>, String) {
    let output = Command::cargo_bin("tackle")
        .unwrap()
        .arg("--root")
        .arg(root)
        .args(["--session", "s", "call", name, "-", "--yes"])
        .env("HOME", data)
        .env("TACKLE_DATA_DIR", data)
        .write_stdin(args.to_string())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

/// A notebook as Jupyter writes it: sorted keys, one-space indentation, a final newline.
const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Analysis"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "calc",
   "metadata": {
    "scrolled": true
   },
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "mean 2.5\n"
     ]
    },
    {
     "data": {
      "image/png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==\n",
      "text/plain": [
       "<Figure size 640x480 with 1 Axes>"
      ]
     },
     "metadata": {},
     "output_type": "display_data"
    },
    {
     "ename": "KeyError",
     "evalue": "'x'",
     "output_type": "error",
     "traceback": [
      "\u001b[0;31mKeyError\u001b[0m: 'x'"
     ]
    }
   ],
   "source": [
    "print('mean', 2.5)\n",
    "plot()"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

#[test]
fn call_read_renders_a_notebook_as_cells_with_outputs_and_images() {
    let (root, data) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    std::fs::write(root.path().join("analysis.ipynb"), NOTEBOOK).unwrap();
    let (code, out) = call(
        root.path(),
        data.path(),
        "read",
        json!({"filePath": "analysis.ipynb"}),
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(
            "Cell 0 · markdown · id intro\n     1\t# Analysis\n\n\
             Cell 1 · code · id calc · execution_count 1\n     1\tprint('mean', 2.5)\n     2\tplot()\n\
             Output 0 · stdout\nmean 2.5\n\
             Output 1 · display_data image/png · attached as media part 1\n<Figure size 640x480 with 1 Axes>\n\
             Output 2 · error KeyError\nKeyError: 'x'\n\n(End of notebook: 2 cells.)"
        ),
        "{out}"
    );
    assert!(out.contains("\n[media: image/png, "), "{out}");
}

#[test]
fn call_notebook_edit_needs_a_read_and_keeps_the_rest_of_the_file() {
    let (root, data) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let path = root.path().join("analysis.ipynb");
    std::fs::write(&path, NOTEBOOK).unwrap();
    let replace = json!({
        "notebookPath": "analysis.ipynb",
        "cellId": "calc",
        "newSource": "print('median', 2)\n"
    });
    let (code, out) = call(root.path(), data.path(), "notebook_edit", replace.clone());
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("have not read"), "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), NOTEBOOK);

    let (code, _) = call(
        root.path(),
        data.path(),
        "read",
        json!({"filePath": "analysis.ipynb"}),
    );
    assert_eq!(code, Some(0));
    let (code, out) = call(root.path(), data.path(), "notebook_edit", replace);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("Replaced cell 1 (code, id calc) of analysis.ipynb. Its outputs"));
    let outputs_start = NOTEBOOK.find("   \"execution_count\": 1").unwrap();
    let source_end = NOTEBOOK.find("  }\n ],\n \"metadata\"").unwrap();
    let expected = format!(
        "{}   \"execution_count\": null,\n   \"id\": \"calc\",\n   \"metadata\": {{\n    \
         \"scrolled\": true\n   }},\n   \"outputs\": [],\n   \"source\": [\n    \
         \"print('median', 2)\\n\"\n   ]\n{}",
        &NOTEBOOK[..outputs_start],
        &NOTEBOOK[source_end..]
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);

    // Insert then delete, in later processes: the file comes back to the edited notebook.
    let (code, out) = call(
        root.path(),
        data.path(),
        "notebook_edit",
        json!({"notebookPath": "analysis.ipynb", "cellIndex": 0, "editMode": "insert", "cellType": "markdown", "newSource": "Draft"}),
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("\"Draft\"")
    );
    let (code, out) = call(
        root.path(),
        data.path(),
        "notebook_edit",
        json!({"notebookPath": "analysis.ipynb", "cellIndex": 0, "editMode": "delete"}),
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
}

/// A PDF written by hand: one page per entry, each drawing its text in Helvetica, or only a
/// filled rectangle when the entry is empty (a page without a text layer).
fn pdf(pages: &[&str]) -> Vec<u8> {
    let kids: Vec<String> = (0..pages.len())
        .map(|i| format!("{} 0 R", 4 + 2 * i))
        .collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> >>",
            kids.join(" "),
            pages.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    for (i, text) in pages.iter().enumerate() {
        let stream = if text.is_empty() {
            "0 0 1 rg 10 10 200 200 re f".to_owned()
        } else {
            format!("BT /F1 18 Tf 72 700 Td ({text}) Tj ET")
        };
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /Contents {} 0 R >>",
            5 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{stream}\nendstream",
            stream.len()
        ));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{object}\nendobj\n", i + 1).bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .bytes(),
    );
    out
}

#[test]
fn call_read_gives_a_pdf_as_text_by_page_and_pages_picks() {
    let (root, data) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    std::fs::write(
        root.path().join("report.pdf"),
        pdf(&["Quarterly results", "Outlook for next year"]),
    )
    .unwrap();
    let (code, out) = call(
        root.path(),
        data.path(),
        "read",
        json!({"filePath": "report.pdf"}),
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("PDF report.pdf: 2 pages,"), "{out}");
    assert!(
        out.contains(
            "--- page 1 ---\nQuarterly results\n--- page 2 ---\nOutlook for next year\n\n(End of PDF: 2 pages.)"
        ),
        "{out}"
    );
    assert!(out.contains("\n[media: application/pdf, "), "{out}");

    let (code, out) = call(
        root.path(),
        data.path(),
        "read",
        json!({"filePath": "report.pdf", "pages": "2"}),
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("--- page 2 ---\nOutlook for next year\n") && !out.contains("Quarterly"),
        "{out}"
    );
    assert!(out.contains("(Showing pages 2-2 of 2.)"), "{out}");
}

#[test]
fn call_read_says_when_a_pdf_has_no_text_layer() {
    let (root, data) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    std::fs::write(root.path().join("scan.pdf"), pdf(&[""])).unwrap();
    let (code, out) = call(
        root.path(),
        data.path(),
        "read",
        json!({"filePath": "scan.pdf"}),
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("No text layer was found on page 1: the PDF is probably scanned"),
        "{out}"
    );
}
