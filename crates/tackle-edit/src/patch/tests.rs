//! Tests for the patch parser and planner.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

/// Plans `text` against an in-memory set of files.
fn plan(text: &str, files: &[(&str, &str)]) -> Result<Vec<FileChange>, PatchError> {
    let map: HashMap<String, String> = files
        .iter()
        .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
        .collect();
    let patch = parse_patch(text)?;
    plan_patch(&patch, &|path| map.get(path).cloned())
}

/// Applies a single-file update patch for `f.txt` and returns the new content and fuzz.
fn update(body: &str, original: &str) -> Result<(String, Vec<MatchLevel>), PatchError> {
    let text = format!("*** Begin Patch\n*** Update File: f.txt\n{body}\n*** End Patch");
    match plan(&text, &[("f.txt", original)])?.remove(0) {
        FileChange::Update { content, fuzz, .. } => Ok((content, fuzz)),
        other => panic!("unexpected change {other:?}"),
    }
}

fn updated(body: &str, original: &str) -> String {
    match update(body, original) {
        Ok((content, _)) => content,
        Err(e) => panic!("update failed: {e}"),
    }
}

fn format_error(text: &str) -> (usize, String) {
    match parse_patch(text) {
        Err(PatchError::Format { line, message }) => (line, message),
        other => panic!("expected a format error, got {other:?}"),
    }
}

// ---- Parsing ----

#[test]
fn begin_and_end_markers_are_required() {
    let cases = [
        ("*** Add File: a\n+x\n*** End Patch", 1, "*** Begin Patch"),
        (
            "*** Begin Patch\n*** Add File: a\n+x",
            4,
            "without '*** End Patch'",
        ),
        ("hello\n*** Begin Patch\n*** End Patch", 1, "got 'hello'"),
        ("", 1, "empty"),
        ("  \n\n", 1, "empty"),
    ];
    for (text, line, needle) in cases {
        let (got_line, message) = format_error(text);
        assert_eq!(got_line, line, "{text:?}: {message}");
        assert!(message.contains(needle), "{text:?}: {message}");
    }
}

#[test]
fn indented_markers_are_read_as_markers() {
    // An indented operation header, Move to and End of File, and an indented last End Patch.
    let text = "*** Begin Patch\n  *** Update File: a.txt\n  *** Move to: b.txt\n@@\n-one\n+two\n \
                *** End of File\n\t*** Add File: c.txt\n+new\n *** End Patch\n\n";
    let changes = plan(text, &[("a.txt", "one\n")]).unwrap();
    assert_eq!(
        changes,
        [
            FileChange::Update {
                path: "a.txt".into(),
                move_to: Some("b.txt".into()),
                content: "two\n".into(),
                fuzz: vec![MatchLevel::Exact],
            },
            FileChange::Create {
                path: "c.txt".into(),
                content: "new\n".into(),
            },
        ]
    );
}

#[test]
fn an_indented_end_marker_is_not_taken_for_context() {
    let text = "*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+two\n *** End Patch";
    assert!(plan(text, &[("f.txt", "one\n")]).is_ok());
    // An end marker that is not the last line is still text after the end.
    let (line, message) = format_error(
        "*** Begin Patch\n*** Delete File: a\n  *** End Patch\n*** Delete File: b\n*** End Patch",
    );
    assert_eq!(line, 4, "{message}");
}

#[test]
fn empty_patch_is_refused() {
    assert_eq!(
        parse_patch("*** Begin Patch\n*** End Patch"),
        Err(PatchError::Empty)
    );
    assert_eq!(
        parse_patch("*** Begin Patch\n\n\n*** End Patch\n"),
        Err(PatchError::Empty)
    );
}

#[test]
fn invalid_lines_are_reported_with_their_line_number() {
    let cases = [
        (
            "*** Begin Patch\n*** Update File: a\n@@\n x\n-y\n+z\nfoo\n*** End Patch",
            7,
            "expected a hunk line starting with ' ', '-' or '+', or '@@', got 'foo'",
        ),
        (
            "*** Begin Patch\n*** Frobnicate File: a\n*** End Patch",
            2,
            "expected '*** Add File: <path>', '*** Delete File: <path>', '*** Update File: \
             <path>' or '*** End Patch', got '*** Frobnicate File: a'",
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+ok\nnot plus\n*** End Patch",
            4,
            "expected an Add File line starting with '+', got 'not plus'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** End Patch",
            2,
            "has no hunks",
        ),
        (
            "*** Begin Patch\n*** Delete File:   \n*** End Patch",
            2,
            "expected a path",
        ),
        (
            "*** Begin Patch\n*** Delete File: a\n*** End Patch\nmore",
            4,
            "unexpected text after '*** End Patch'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@ ctx\n*** End Patch",
            3,
            "this hunk has no lines",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch",
            3,
            "must end a chunk",
        ),
        (
            "*** Begin Patch\n*** Update File: a\nstray\n*** End Patch",
            3,
            "expected a hunk header '@@'",
        ),
    ];
    for (text, line, needle) in cases {
        let (got_line, message) = format_error(text);
        assert_eq!(got_line, line, "{text:?}: {message}");
        assert!(message.contains(needle), "{text:?}: {message}");
    }
}

#[test]
fn format_error_display_starts_with_line() {
    let err =
        parse_patch("*** Begin Patch\n*** Update File: a\n@@\n-x\nfoo\n*** End Patch").unwrap_err();
    assert!(
        err.to_string().starts_with("line 5: expected a hunk line"),
        "{err}"
    );
}

#[test]
fn json_argument_shape_is_explained() {
    let (line, message) =
        format_error(r#"{"command":["apply_patch","*** Begin Patch\n*** End Patch"]}"#);
    assert_eq!(line, 1);
    assert!(message.contains("JSON"), "{message}");
}

#[test]
fn parses_every_operation_kind() {
    let text = "\
*** Begin Patch
*** Add File: new.txt
+one
+
+three
*** Delete File: old.txt
*** Update File: src/a.rs
*** Move to: src/b.rs
@@ fn main() {
     let x = 1;
-    let y = 2;
+    let y = 3;
@@
 tail
+more
*** End of File
*** End Patch";
    let expected = Patch {
        operations: vec![
            Operation::Add {
                path: "new.txt".into(),
                content: "one\n\nthree\n".into(),
            },
            Operation::Delete {
                path: "old.txt".into(),
            },
            Operation::Update {
                path: "src/a.rs".into(),
                move_to: Some("src/b.rs".into()),
                chunks: vec![
                    Chunk {
                        context: Some("fn main() {".into()),
                        old_lines: vec!["    let x = 1;".into(), "    let y = 2;".into()],
                        new_lines: vec!["    let x = 1;".into(), "    let y = 3;".into()],
                        end_of_file: false,
                    },
                    Chunk {
                        context: None,
                        old_lines: vec!["tail".into()],
                        new_lines: vec!["tail".into(), "more".into()],
                        end_of_file: true,
                    },
                ],
            },
        ],
    };
    assert_eq!(parse_patch(text), Ok(expected));
}

#[test]
fn header_variants_give_the_expected_context() {
    let cases = [
        ("@@", None),
        ("@@ ", None),
        ("@@ def foo():", Some("def foo():")),
        ("@@     indented()", Some("    indented()")),
        ("@@ -12,5 +12,6 @@", None),
        ("@@ -12,5 +12,6 @@ fn run()", Some("fn run()")),
    ];
    for (header, context) in cases {
        let text = format!("*** Begin Patch\n*** Update File: a\n{header}\n-x\n+y\n*** End Patch");
        let patch = parse_patch(&text).unwrap();
        let Operation::Update { chunks, .. } = &patch.operations[0] else {
            panic!("not an update");
        };
        assert_eq!(chunks[0].context.as_deref(), context, "{header:?}");
    }
}

#[test]
fn first_chunk_header_may_be_omitted() {
    assert_eq!(updated(" a\n-b\n+c", "a\nb\n"), "a\nc\n");
}

#[test]
fn rename_without_hunks_is_allowed() {
    let changes = plan(
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch",
        &[("a.txt", "keep\n")],
    )
    .unwrap();
    assert_eq!(
        changes,
        vec![FileChange::Update {
            path: "a.txt".into(),
            move_to: Some("b.txt".into()),
            content: "keep\n".into(),
            fuzz: vec![],
        }]
    );
}

#[test]
fn wrappers_and_blank_lines_are_stripped() {
    let inner = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch";
    let wrapped = [
        inner.to_owned(),
        format!("\n\n{inner}\n\n"),
        format!("cat <<'EOF'\n{inner}\nEOF"),
        format!("cat <<EOF\n{inner}\nEOF\n"),
        format!("<<EOF\n{inner}\nEOF"),
        format!("apply_patch <<\"PATCH\"\n{inner}\nPATCH"),
        format!("cat <<-'EOF' | apply_patch\n{inner}\nEOF"),
        format!("```diff\n{inner}\n```"),
        "  *** Begin Patch  \n*** Add File: a.txt\n+hi\n*** End Patch  ".to_owned(),
        inner.replace('\n', "\r\n"),
    ];
    for text in wrapped {
        let patch = parse_patch(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(
            patch.operations,
            vec![Operation::Add {
                path: "a.txt".into(),
                content: "hi\n".into()
            }],
            "{text:?}"
        );
    }
}

#[test]
fn line_numbers_count_from_the_original_text() {
    let text = "cat <<'EOF'\n\n*** Begin Patch\n*** Update File: a\n@@\nbad\n*** End Patch\nEOF";
    let (line, _) = format_error(text);
    assert_eq!(line, 6);
}

#[test]
fn trailing_blank_lines_of_a_chunk_are_ignored() {
    let patch = parse_patch(
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n\n\n@@\n-z\n+w\n\n*** End Patch",
    )
    .unwrap();
    let Operation::Update { chunks, .. } = &patch.operations[0] else {
        panic!("not an update");
    };
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].old_lines, vec!["x".to_owned()]);
    assert_eq!(chunks[1].new_lines, vec!["w".to_owned()]);
}

#[test]
fn bare_empty_line_inside_a_chunk_is_empty_context() {
    assert_eq!(updated("@@\n a\n\n-b\n+c", "a\n\nb\n"), "a\n\nc\n");
}

// ---- Planning ----

#[test]
fn add_update_and_delete_in_one_patch() {
    let text = "\
*** Begin Patch
*** Add File: added.txt
+new
*** Update File: changed.txt
@@
-old
+fresh
*** Delete File: gone.txt
*** End Patch";
    let changes = plan(
        text,
        &[("changed.txt", "keep\nold\n"), ("gone.txt", "bye\n")],
    )
    .unwrap();
    assert_eq!(
        changes,
        vec![
            FileChange::Create {
                path: "added.txt".into(),
                content: "new\n".into()
            },
            FileChange::Update {
                path: "changed.txt".into(),
                move_to: None,
                content: "keep\nfresh\n".into(),
                fuzz: vec![MatchLevel::Exact],
            },
            FileChange::Delete {
                path: "gone.txt".into()
            },
        ]
    );
}

#[test]
fn add_with_empty_body_creates_an_empty_file() {
    let changes = plan("*** Begin Patch\n*** Add File: e.txt\n*** End Patch", &[]).unwrap();
    assert_eq!(
        changes,
        vec![FileChange::Create {
            path: "e.txt".into(),
            content: String::new()
        }]
    );
}

#[test]
fn multiple_hunks_in_one_file() {
    let original = "one\ntwo\nthree\nfour\nfive\nsix\n";
    let body = "@@\n one\n-two\n+TWO\n@@\n four\n-five\n+FIVE";
    let (content, fuzz) = update(body, original).unwrap();
    assert_eq!(content, "one\nTWO\nthree\nfour\nFIVE\nsix\n");
    assert_eq!(fuzz, vec![MatchLevel::Exact, MatchLevel::Exact]);
}

#[test]
fn chunks_must_appear_in_file_order() {
    let original = "one\ntwo\nthree\n";
    let err = update("@@\n-three\n+3\n@@\n-one\n+1", original).unwrap_err();
    assert!(
        matches!(
            err,
            PatchError::ChunkMismatch {
                chunk: 2,
                after_line: 3,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn insert_only_hunk_lands_after_its_context() {
    let original = "def foo():\n    pass\n\ndef bar():\n    pass\n";
    let content = updated("@@ def foo():\n+    x = 1", original);
    assert_eq!(
        content,
        "def foo():\n    x = 1\n    pass\n\ndef bar():\n    pass\n"
    );
}

#[test]
fn insert_only_hunk_without_context_appends() {
    assert_eq!(updated("@@\n+tail", "a\nb\n"), "a\nb\ntail\n");
    assert_eq!(updated("@@\n+tail\n*** End of File", "a\nb"), "a\nb\ntail");
}

#[test]
fn trailing_newline_follows_the_original() {
    let cases = [
        ("a\nb\n", "@@\n-b\n+c", "a\nc\n"),
        ("a\nb", "@@\n-b\n+c", "a\nc"),
        ("a\nb", "@@\n a\n-b", "a"),
        ("a\n", "@@\n-a", ""),
        ("", "@@\n+first", "first\n"),
        ("a\n\n", "@@\n-a\n+b", "b\n\n"),
    ];
    for (original, body, expected) in cases {
        assert_eq!(updated(body, original), expected, "{original:?} / {body:?}");
    }
}

#[test]
fn move_to_a_new_path() {
    let text = "*** Begin Patch\n*** Update File: src/a.txt\n*** Move to: lib/b.txt\n@@\n-x\n+y\n*** End Patch";
    let changes = plan(text, &[("src/a.txt", "x\n")]).unwrap();
    assert_eq!(
        changes,
        vec![FileChange::Update {
            path: "src/a.txt".into(),
            move_to: Some("lib/b.txt".into()),
            content: "y\n".into(),
            fuzz: vec![MatchLevel::Exact],
        }]
    );
}

#[test]
fn move_onto_itself_is_refused() {
    for target in ["a.txt", "./a.txt", ".//a.txt"] {
        let text = format!(
            "*** Begin Patch\n*** Update File: a.txt\n*** Move to: {target}\n@@\n-x\n+y\n*** End Patch"
        );
        let err = plan(&text, &[("a.txt", "x\n")]).unwrap_err();
        assert_eq!(
            err,
            PatchError::MoveOntoItself {
                path: "a.txt".into()
            }
        );
    }
}

#[test]
fn move_onto_an_existing_file_is_refused() {
    let text =
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** End Patch";
    let err = plan(text, &[("a.txt", "x\n"), ("b.txt", "precious\n")]).unwrap_err();
    assert_eq!(
        err,
        PatchError::MoveTargetExists {
            path: "a.txt".into(),
            target: "b.txt".into()
        }
    );
    assert!(err.to_string().contains("never overwrite"), "{err}");
}

#[test]
fn add_onto_an_existing_file_is_refused() {
    let err = plan(
        "*** Begin Patch\n*** Add File: b.txt\n+new\n*** End Patch",
        &[("b.txt", "old\n")],
    )
    .unwrap_err();
    assert_eq!(
        err,
        PatchError::AddExisting {
            path: "b.txt".into()
        }
    );
    assert!(err.to_string().contains("*** Update File: b.txt"), "{err}");
}

#[test]
fn missing_targets_are_refused() {
    let cases = [
        ("*** Update File: nope.txt\n@@\n-x\n+y", "Update"),
        ("*** Delete File: nope.txt", "Delete"),
    ];
    for (body, operation) in cases {
        let text = format!("*** Begin Patch\n{body}\n*** End Patch");
        let err = plan(&text, &[]).unwrap_err();
        assert_eq!(
            err,
            PatchError::MissingFile {
                path: "nope.txt".into(),
                operation
            }
        );
    }
}

#[test]
fn a_path_may_appear_only_once() {
    let cases = [
        "*** Delete File: a.txt\n*** Add File: a.txt\n+x",
        "*** Update File: a.txt\n@@\n-x\n+y\n*** Update File: ./a.txt\n@@\n-y\n+z",
        "*** Update File: a.txt\n*** Move to: c.txt\n*** Add File: c.txt\n+x",
    ];
    for body in cases {
        let text = format!("*** Begin Patch\n{body}\n*** End Patch");
        let err = plan(&text, &[("a.txt", "x\n")]).unwrap_err();
        assert!(
            matches!(err, PatchError::DuplicatePath { .. }),
            "{body}: {err:?}"
        );
    }
}

#[test]
fn missing_context_reports_the_closest_line() {
    let original = "fn alpha() {\n    1\n}\nfn beta() {\n    2\n}\n";
    let err = update("@@ fn betta() {\n-    2\n+    3", original).unwrap_err();
    let PatchError::ContextNotFound {
        chunk,
        context,
        closest,
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!((*chunk, context.as_str()), (1, "fn betta() {"));
    let closest = closest.as_ref().unwrap();
    assert_eq!(closest.start_line, 4);
    assert_eq!(closest.lines, vec!["fn beta() {".to_owned()]);
    let message = err.to_string();
    assert!(message.contains("The closest line is 4"), "{message}");
    assert!(message.contains("Re-read the file"), "{message}");
}

#[test]
fn mismatch_reports_the_chunk_and_the_closest_region() {
    // Lines of scattered hex digits, so that only the intended region resembles the chunk.
    let line = |i: u64| format!("v{:x}", i * 2_654_435_761 % 1_000_003);
    let mut original = String::new();
    for i in 1..=60 {
        if i == 53 {
            original.push_str("line fifty-three\n");
        } else {
            original.push_str(&format!("{}\n", line(i)));
        }
    }
    let body = format!(
        "@@\n-{}\n+TWO\n@@\n {}\n-{}\n+changed\n {}",
        line(2),
        line(52),
        line(53),
        line(54)
    );
    let body = body.as_str();
    let err = update(body, &original).unwrap_err();
    let PatchError::ChunkMismatch {
        chunk,
        after_line,
        closest,
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!((*chunk, *after_line), (2, 2));
    assert_eq!(closest.as_ref().unwrap().start_line, 52);
    let message = err.to_string();
    assert!(
        message.starts_with(
            "Update of f.txt: chunk 2 did not match. Expected these lines after line 2:"
        ),
        "{message}"
    );
    assert!(message.contains("The closest lines are 52-54"), "{message}");
    assert!(message.contains("    53| line fifty-three"), "{message}");
    assert!(
        message.ends_with("Re-read the file and regenerate the patch."),
        "{message}"
    );
}

#[test]
fn an_already_applied_chunk_is_pointed_out() {
    let err = update("@@\n a\n-b\n+c", "a\nc\n").unwrap_err();
    assert!(
        matches!(
            err,
            PatchError::ChunkMismatch {
                already_applied_at: Some(1),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("already have been applied"),
        "{err}"
    );
}

#[test]
fn context_disambiguates_identical_blocks() {
    let original = "fn one() {\n    x = 0;\n}\nfn two() {\n    x = 0;\n}\n";
    let content = updated("@@ fn two() {\n-    x = 0;\n+    x = 2;", original);
    assert_eq!(
        content,
        "fn one() {\n    x = 0;\n}\nfn two() {\n    x = 2;\n}\n"
    );
}

#[test]
fn end_of_file_chunk_is_matched_from_the_end_first() {
    let original = "end\nmiddle\nend\n";
    let content = updated("@@\n-end\n+END\n*** End of File", original);
    assert_eq!(content, "end\nmiddle\nEND\n");
    // Without the anchor the first occurrence is changed.
    assert_eq!(updated("@@\n-end\n+END", original), "END\nmiddle\nend\n");
}

#[test]
fn end_of_file_chunk_falls_back_to_a_scan() {
    let content = updated("@@\n-a\n+A\n*** End of File", "a\nb\n");
    assert_eq!(content, "A\nb\n");
}

#[test]
fn tolerant_matching_reports_its_level() {
    let cases = [
        (
            "a = 1;   \nb\n",
            "@@\n-a = 1;\n+a = 2;",
            "a = 2;\nb\n",
            MatchLevel::TrailingWhitespace,
        ),
        (
            "    a = 1;\nb\n",
            "@@\n-a = 1;\n+a = 2;",
            "a = 2;\nb\n",
            MatchLevel::Whitespace,
        ),
        (
            "say(\u{201C}hi\u{201D}) \u{2014} don\u{2019}t\n",
            "@@\n-say(\"hi\") - don't\n+say(\"bye\")",
            "say(\"bye\")\n",
            MatchLevel::Punctuation,
        ),
        (
            "x\u{00A0}=\u{00A0}1\u{2026}\n",
            "@@\n-x = 1...\n+x = 2",
            "x = 2\n",
            MatchLevel::Punctuation,
        ),
        (
            "    fn f() {\n    a\n",
            "@@ fn f() {\n-    a\n+    b",
            "    fn f() {\n    b\n",
            MatchLevel::Whitespace,
        ),
    ];
    for (original, body, expected, level) in cases {
        let (content, fuzz) = update(body, original).unwrap();
        assert_eq!(content, expected, "{body:?}");
        assert_eq!(fuzz, vec![level], "{body:?}");
    }
}

#[test]
fn exact_match_is_preferred_over_an_earlier_tolerant_one() {
    let content = updated("@@\n-x\n+y", "  x\nx\n");
    assert_eq!(content, "  x\ny\n");
}

#[test]
fn trailing_empty_line_is_retried_without_it() {
    let (content, fuzz) = update("@@\n a\n-b\n+c\n \n", "a\nb").unwrap();
    assert_eq!(content, "a\nc");
    assert_eq!(fuzz, vec![MatchLevel::Exact]);
}

#[test]
fn a_failing_second_file_fails_the_whole_patch() {
    let text = "\
*** Begin Patch
*** Update File: one.txt
@@
-a
+b
*** Delete File: two.txt
*** Update File: three.txt
@@
-missing
+x
*** End Patch";
    let files = [("one.txt", "a\n"), ("two.txt", "t\n"), ("three.txt", "z\n")];
    let err = plan(text, &files).unwrap_err();
    assert!(
        matches!(&err, PatchError::ChunkMismatch { path, .. } if path == "three.txt"),
        "{err:?}"
    );
    let text = text.replace("*** Delete File: two.txt", "*** Delete File: absent.txt");
    assert!(matches!(
        plan(&text, &files),
        Err(PatchError::MissingFile { .. })
    ));
}

#[test]
fn planner_reads_only_what_it_needs_and_never_mutates() {
    let calls = std::cell::RefCell::new(Vec::new());
    let patch =
        parse_patch("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch").unwrap();
    let files = |path: &str| {
        calls.borrow_mut().push(path.to_owned());
        Some("x\n".to_owned())
    };
    let first = plan_patch(&patch, &files).unwrap();
    let second = plan_patch(&patch, &files).unwrap();
    assert_eq!(first, second);
    assert_eq!(*calls.borrow(), vec!["a".to_owned(), "a".to_owned()]);
}

#[test]
fn match_level_names_are_stable() {
    let names: Vec<&str> = MatchLevel::ALL.iter().map(|l| l.as_str()).collect();
    assert_eq!(
        names,
        ["exact", "trailing_whitespace", "whitespace", "punctuation"]
    );
    assert_eq!(MatchLevel::Whitespace.to_string(), "whitespace");
}

// ---- Property ----

proptest! {
    #[test]
    fn exact_single_replacement_yields_the_expected_content(
        tails in prop::collection::vec("[ -~]{0,8}", 1..30),
        trailing_newline in any::<bool>(),
        start_seed in any::<prop::sample::Index>(),
        len_seed in any::<prop::sample::Index>(),
        before in 0usize..4,
        after in 0usize..4,
        new_lines in prop::collection::vec("[ -~]{0,8}", 0..5),
    ) {
        // Unique lines make the first match the intended one.
        let lines: Vec<String> = tails.iter().enumerate().map(|(i, t)| format!("{i}:{t}")).collect();
        let start = start_seed.index(lines.len());
        let len = 1 + len_seed.index(lines.len() - start);
        let end = start + len;
        let context_start = start.saturating_sub(before);
        let context_end = (end + after).min(lines.len());

        let mut original = lines.join("\n");
        if trailing_newline {
            original.push('\n');
        }
        let mut body = String::from("@@\n");
        for line in &lines[context_start..start] {
            body.push_str(&format!(" {line}\n"));
        }
        for line in &lines[start..end] {
            body.push_str(&format!("-{line}\n"));
        }
        for line in &new_lines {
            body.push_str(&format!("+{line}\n"));
        }
        for line in &lines[end..context_end] {
            body.push_str(&format!(" {line}\n"));
        }

        let expected_lines: Vec<&str> = lines[..start]
            .iter()
            .chain(&new_lines)
            .chain(&lines[end..])
            .map(String::as_str)
            .collect();
        let mut expected = expected_lines.join("\n");
        if trailing_newline && !expected_lines.is_empty() {
            expected.push('\n');
        }
        let (content, fuzz) = update(body.trim_end_matches('\n'), &original).unwrap();
        prop_assert_eq!(content, expected);
        prop_assert_eq!(fuzz, vec![MatchLevel::Exact]);
    }
}

#[test]
fn unrelated_lines_give_no_closest_region() {
    let err = update("@@\n-qqqqqqqq\n+x", "abc\ndef\n").unwrap_err();
    assert!(
        matches!(err, PatchError::ChunkMismatch { closest: None, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("No similar lines were found."),
        "{err}"
    );
}

#[test]
fn missing_file_messages_suit_the_operation() {
    let update = PatchError::MissingFile {
        path: "a".into(),
        operation: "Update",
    };
    assert!(update.to_string().contains("'*** Add File: a'"), "{update}");
    let delete = PatchError::MissingFile {
        path: "a".into(),
        operation: "Delete",
    };
    assert!(!delete.to_string().contains("Add File"), "{delete}");
}

#[test]
fn context_and_end_of_file_insertion_appends() {
    let content = updated("@@ head\n+tail\n*** End of File", "head\nbody\n");
    assert_eq!(content, "head\nbody\ntail\n");
}

#[test]
fn operation_and_change_paths() {
    let patch = parse_patch(
        "*** Begin Patch\n*** Add File: a\n+x\n*** Delete File: b\n*** Update File: c\n*** Move to: d\n*** End Patch",
    )
    .unwrap();
    let paths: Vec<&str> = patch.operations.iter().map(Operation::path).collect();
    assert_eq!(paths, ["a", "b", "c"]);
    let changes = plan_patch(&patch, &|p| {
        (p != "a" && p != "d").then(|| "x\n".to_owned())
    })
    .unwrap();
    let paths: Vec<&str> = changes.iter().map(FileChange::path).collect();
    assert_eq!(paths, ["a", "b", "c"]);
}

#[test]
fn chunk_may_repeat_its_context_line() {
    let original = "fn a() {\n    1\n}\nfn b() {\n    1\n}\n";
    let content = updated("@@ fn b() {\n fn b() {\n-    1\n+    2", original);
    assert_eq!(content, "fn a() {\n    1\n}\nfn b() {\n    2\n}\n");
}

#[test]
fn tolerant_match_keeps_the_file_text_of_context_lines() {
    // The file's context lines carry trailing spaces and a curly quote the patch does not have.
    let original = "fn a() {   \n    let s = \u{201c}x\u{201d};\n    old();\n}\n";
    let (content, fuzz) = update(
        "@@\n fn a() {\n     let s = \"x\";\n-    old();\n+    new();\n }\n",
        original,
    )
    .unwrap();
    assert_eq!(fuzz, vec![MatchLevel::Punctuation]);
    assert_eq!(
        content,
        "fn a() {   \n    let s = \u{201c}x\u{201d};\n    new();\n}\n"
    );
}
