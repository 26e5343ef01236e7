//! Property tests for the file laws (`LAW-KEPT-BYTES`, `LAW-ALL-OR-NOTHING`): generated files
//! with every mix of BOM, line endings and final newline, edited through settlement.
//!
//! Run deeper with `TACKLE_DEEP=1`. Failing cases are persisted to
//! `proptest-regressions/laws_files.txt`, relative to the package root.

use crate::support::{law_config, runtime};
use proptest::prelude::*;
use serde_json::json;
use tackle::{Harness, cx};
use tackle_builtins::{LocationFs, ToolEnv, file_tools};
use tackle_registry::{AllTools, Location, ToolCall, ToolSet};

fn config() -> ProptestConfig {
    law_config("proptest-regressions/laws_files.txt")
}

/// A generated text file: unique lines, each with its own ending, an optional BOM and an
/// optional final newline.
#[derive(Clone, Debug)]
struct FileSpec {
    lines: Vec<(String, bool)>,
    bom: bool,
    final_newline: bool,
}

impl FileSpec {
    /// The bytes on disk, with `replace` (index, text) applied to one line's content.
    fn bytes(&self, replace: Option<(usize, &str)>) -> Vec<u8> {
        let mut out = Vec::new();
        if self.bom {
            out.extend_from_slice(b"\xEF\xBB\xBF");
        }
        let last = self.lines.len() - 1;
        for (i, (content, crlf)) in self.lines.iter().enumerate() {
            match replace {
                Some((at, text)) if at == i => out.extend_from_slice(text.as_bytes()),
                _ => out.extend_from_slice(content.as_bytes()),
            }
            if i < last || self.final_newline {
                out.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
            }
        }
        out
    }
}

fn file_spec() -> impl Strategy<Value = FileSpec> {
    (
        prop::collection::vec(("[a-z ]{0,12}", any::<bool>()), 1..24),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, bom, final_newline)| FileSpec {
            // The index prefix makes every line unique, so an exact oldString matches once.
            lines: lines
                .into_iter()
                .enumerate()
                .map(|(i, (text, crlf))| (format!("line{i}:{text}"), crlf))
                .collect(),
            bom,
            final_newline,
        })
}

/// A Location over a fresh directory with the file tools registered, and the settled results of
/// `calls` made in order by one session.
fn settle_in_order(
    files: &[(&str, Vec<u8>)],
    calls: Vec<(&'static str, serde_json::Value)>,
) -> (tempfile::TempDir, Vec<(bool, String)>) {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let results = runtime().block_on(async {
        let harness = Harness::new();
        let location = Location::new(dir.path(), &harness.process, harness.config());
        let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap());
        let mut set = ToolSet::new();
        for (name, tool) in file_tools(&env) {
            set.insert(name, tool);
        }
        let _registration = location.register(set).unwrap();
        let turn = location.materialize(AllTools);
        let mut results = Vec::new();
        for (i, (name, args)) in calls.into_iter().enumerate() {
            let settled = turn
                .settle(
                    cx(&format!("call-{i}")),
                    ToolCall::new(name, args.to_string()),
                )
                .await;
            let result = settled.model_result().expect("a model-visible outcome");
            let text = result
                .content
                .iter()
                .filter_map(|c| c.as_text())
                .collect::<Vec<_>>()
                .join("\n");
            results.push((result.is_error, text));
        }
        results
    });
    (dir, results)
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-KEPT-BYTES
    /// An exact edit of one line changes that line's content and nothing else:
    /// the BOM, every line ending (mixed or not) and the final newline survive byte for byte.
    #[test]
    fn law_kept_bytes_an_edit_changes_only_its_span(
        spec in file_spec(),
        pick in any::<prop::sample::Index>(),
        replacement in "[A-Z]{1,8}",
    ) {
        let at = pick.index(spec.lines.len());
        let old = spec.lines[at].0.clone();
        let (dir, results) = settle_in_order(
            &[("f.txt", spec.bytes(None))],
            vec![
                ("read", json!({"filePath": "f.txt"})),
                ("edit", json!({"filePath": "f.txt", "oldString": old, "newString": replacement})),
            ],
        );
        prop_assert!(!results[1].0, "edit failed: {}", results[1].1);
        let on_disk = std::fs::read(dir.path().join("f.txt")).unwrap();
        prop_assert_eq!(on_disk, spec.bytes(Some((at, &replacement))));
    }

    // spec: LAW-ALL-OR-NOTHING
    /// A multiedit whose last edit cannot apply writes nothing, whatever the
    /// earlier edits would have done.
    #[test]
    fn law_all_or_nothing_a_failing_multiedit_writes_nothing(
        spec in file_spec(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..4),
    ) {
        let original = spec.bytes(None);
        let mut edits: Vec<serde_json::Value> = picks
            .iter()
            .map(|pick| {
                let line = &spec.lines[pick.index(spec.lines.len())].0;
                json!({"oldString": line, "newString": format!("{line}!"), "replaceAll": true})
            })
            .collect();
        edits.push(json!({"oldString": "no line contains this", "newString": "x"}));
        let failing = edits.len() - 1;
        let (dir, results) = settle_in_order(
            &[("f.txt", original.clone())],
            vec![
                ("read", json!({"filePath": "f.txt"})),
                ("multiedit", json!({"filePath": "f.txt", "edits": edits})),
            ],
        );
        prop_assert!(results[1].0);
        let failed_edit = format!("edits[{failing}]");
        prop_assert!(results[1].1.contains(&failed_edit), "{}", results[1].1);
        prop_assert_eq!(std::fs::read(dir.path().join("f.txt")).unwrap(), original);
    }
}
