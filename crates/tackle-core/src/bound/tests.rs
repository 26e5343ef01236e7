//! Unit tests for the preview algorithm.

use std::cell::RefCell;
use std::path::Path;
use std::sync::Mutex;

use base64::Engine;
use futures_util::future::BoxFuture;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn marker(o: &Omitted) -> String {
    format!(
        "[{} lines {} bytes omitted from {}]",
        o.lines,
        o.bytes,
        o.head_lines + 1
    )
}

fn limits(max_lines: usize, max_bytes: usize, direction: Direction) -> OutputLimits {
    OutputLimits {
        max_lines,
        max_bytes,
        direction,
        max_media_bytes: OutputLimits::DEFAULT_MAX_MEDIA_BYTES,
    }
}

/// `line 1\n` .. `line n\n`.
fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn bound(text: &str, max_lines: usize, max_bytes: usize, direction: Direction) -> String {
    bound_text(text, &limits(max_lines, max_bytes, direction), marker)
        .unwrap_or_else(|| panic!("{direction:?} should bound {} bytes", text.len()))
}

/// Bounds `text` and returns the output with the `Omitted` of the final marker.
fn bound_recording(text: &str, limits: &OutputLimits) -> Option<(String, Omitted, String)> {
    let calls = RefCell::new(Vec::new());
    let out = bound_text(text, limits, |o| {
        let m = marker(o);
        calls.borrow_mut().push((*o, m.clone()));
        m
    })?;
    let (omitted, final_marker) = calls.borrow().last().cloned().expect("marker was called");
    Some((out, omitted, final_marker))
}

/// Splits a bounded output around its marker into (head, tail), dropping the separators.
fn split_around<'a>(out: &'a str, marker: &str) -> (&'a str, &'a str) {
    let at = out.find(marker).expect("the output contains the marker");
    let head = &out[..at];
    let head = head.strip_suffix('\n').unwrap_or(head);
    let tail = &out[at + marker.len()..];
    let tail = tail.strip_prefix('\n').unwrap_or(tail);
    (head, tail)
}

const ALL: [Direction; 3] = [Direction::Head, Direction::Tail, Direction::HeadTail];

// ---------------------------------------------------------------------------------------------
// Fitting and counting
// ---------------------------------------------------------------------------------------------

#[test]
fn count_lines_ignores_a_final_newline() {
    assert_eq!(count_lines(""), 0);
    assert_eq!(count_lines("a"), 1);
    assert_eq!(count_lines("a\n"), 1);
    assert_eq!(count_lines("a\nb"), 2);
    assert_eq!(count_lines("\n"), 1);
    assert_eq!(count_lines("a\n\n"), 2);
    assert_eq!(count_lines("a\nb\n"), 2);
}

#[test]
fn text_within_both_limits_is_not_bounded() {
    let text = numbered(10); // 10 lines, 71 bytes
    assert_eq!(text.len(), 71);
    for direction in ALL {
        assert_eq!(bound_text(&text, &limits(10, 71, direction), marker), None);
        assert_eq!(
            bound_text(&text, &limits(100, 1000, direction), marker),
            None
        );
        assert_eq!(bound_text("", &limits(1, 1, direction), marker), None);
        // One over either limit is bounded.
        assert!(bound_text(&text, &limits(9, 71, direction), marker).is_some());
        assert!(bound_text(&text, &limits(10, 70, direction), marker).is_some());
    }
}

#[test]
fn limits_override_replaces_only_set_fields() {
    let base = OutputLimits::default();
    let over = LimitsOverride {
        max_lines: Some(7),
        direction: Some(Direction::Tail),
        ..LimitsOverride::default()
    };
    assert_eq!(
        base.with(&over),
        OutputLimits {
            max_lines: 7,
            max_bytes: OutputLimits::DEFAULT_MAX_BYTES,
            direction: Direction::Tail,
            max_media_bytes: OutputLimits::DEFAULT_MAX_MEDIA_BYTES,
        }
    );
    assert_eq!(base.with(&LimitsOverride::default()), base);
    assert_eq!(base.direction, Direction::HeadTail);
}

#[test]
fn thousands_groups_digits() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(123_456), "123,456");
    assert_eq!(thousands(1_234_567), "1,234,567");
}

// ---------------------------------------------------------------------------------------------
// Previews by lines
// ---------------------------------------------------------------------------------------------

#[test]
fn head_by_lines_keeps_the_first_lines() {
    let out = bound(&numbered(10), 5, 1000, Direction::Head);
    assert_eq!(
        out,
        "line 1\nline 2\nline 3\nline 4\n[6 lines 44 bytes omitted from 5]"
    );
    assert!(count_lines(&out) <= 5 && out.len() <= 1000);
}

#[test]
fn tail_by_lines_keeps_the_last_lines() {
    let out = bound(&numbered(10), 5, 1000, Direction::Tail);
    assert_eq!(
        out,
        "[6 lines 43 bytes omitted from 1]\nline 7\nline 8\nline 9\nline 10"
    );
    assert!(count_lines(&out) <= 5 && out.len() <= 1000);
}

#[test]
fn head_tail_by_lines_keeps_both_ends() {
    let out = bound(&numbered(10), 5, 1000, Direction::HeadTail);
    assert_eq!(
        out,
        "line 1\nline 2\n[6 lines 44 bytes omitted from 3]\nline 9\nline 10"
    );
    assert!(count_lines(&out) <= 5 && out.len() <= 1000);

    // An odd budget gives the head the extra line.
    let out = bound(&numbered(10), 6, 1000, Direction::HeadTail);
    assert_eq!(
        out,
        "line 1\nline 2\nline 3\n[5 lines 37 bytes omitted from 4]\nline 9\nline 10"
    );
}

// ---------------------------------------------------------------------------------------------
// Previews by bytes
// ---------------------------------------------------------------------------------------------

#[test]
fn head_by_bytes_keeps_whole_lines_that_fit() {
    let out = bound(&numbered(10), 100, 60, Direction::Head);
    assert_eq!(
        out,
        "line 1\nline 2\nline 3\n[7 lines 51 bytes omitted from 4]"
    );
    assert!(out.len() <= 60);
}

#[test]
fn tail_by_bytes_keeps_whole_lines_that_fit() {
    let out = bound(&numbered(10), 100, 60, Direction::Tail);
    assert_eq!(
        out,
        "[7 lines 50 bytes omitted from 1]\nline 8\nline 9\nline 10"
    );
    assert!(out.len() <= 60);
}

#[test]
fn head_tail_by_bytes_splits_the_budget() {
    let out = bound(&numbered(10), 100, 60, Direction::HeadTail);
    assert_eq!(
        out,
        "line 1\n[7 lines 51 bytes omitted from 2]\nline 9\nline 10"
    );
    assert!(out.len() <= 60);
}

// ---------------------------------------------------------------------------------------------
// One huge line
// ---------------------------------------------------------------------------------------------

#[test]
fn huge_line_head_keeps_its_start() {
    let text = "x".repeat(10_000);
    let out = bound(&text, 10, 100, Direction::Head);
    assert_eq!(
        out,
        format!("{}\n[1 lines 9937 bytes omitted from 1]", "x".repeat(63))
    );
    assert_eq!(out.len(), 99);
}

#[test]
fn huge_line_tail_keeps_its_end() {
    let text = "x".repeat(10_000);
    let out = bound(&text, 10, 100, Direction::Tail);
    assert_eq!(
        out,
        format!("[1 lines 9937 bytes omitted from 1]\n{}", "x".repeat(63))
    );
    assert_eq!(out.len(), 99);
}

#[test]
fn huge_line_head_tail_shows_start_and_end_without_overlap() {
    // Distinct characters at both ends, so overlap or misplacement would show.
    let text = format!("{}{}{}", "a".repeat(40), "m".repeat(9_920), "z".repeat(40));
    let out = bound(&text, 10, 100, Direction::HeadTail);
    assert_eq!(
        out,
        format!(
            "{}\n[1 lines 9938 bytes omitted from 1]\n{}",
            "a".repeat(31),
            "z".repeat(31)
        )
    );
    assert!(out.len() <= 100);
    assert!(count_lines(&out) <= 10);

    // With almost the whole line allowed, the two ends still do not overlap.
    let text: String = (0..300)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let (out, omitted, m) = bound_recording(&text, &limits(10, 299, Direction::HeadTail)).unwrap();
    let (head, tail) = split_around(&out, &m);
    assert!(!head.is_empty() && !tail.is_empty());
    assert!(text.starts_with(head));
    assert!(text.ends_with(tail));
    assert!(head.len() + tail.len() < text.len());
    assert_eq!(omitted.bytes, text.len() - head.len() - tail.len());
    assert!(out.len() <= 299);
}

#[test]
fn huge_line_head_tail_respects_a_two_line_limit() {
    // The marker takes one line, leaving one for content: the huge line cannot be shown as two.
    let text = "x".repeat(10_000);
    let out = bound(&text, 2, 100, Direction::HeadTail);
    assert!(count_lines(&out) <= 2, "{out:?}");
    assert!(out.len() <= 100, "{out:?}");
    assert!(out.contains("omitted"), "{out:?}");
}

// ---------------------------------------------------------------------------------------------
// Multi-byte characters
// ---------------------------------------------------------------------------------------------

#[test]
fn multibyte_line_is_cut_at_character_boundaries() {
    let text = "日".repeat(1000); // 3000 bytes
    let head = bound(&text, 10, 100, Direction::Head);
    assert_eq!(
        head,
        format!("{}\n[1 lines 2937 bytes omitted from 1]", "日".repeat(21))
    );
    let tail = bound(&text, 10, 100, Direction::Tail);
    assert_eq!(
        tail,
        format!("[1 lines 2937 bytes omitted from 1]\n{}", "日".repeat(21))
    );
    let both = bound(&text, 10, 100, Direction::HeadTail);
    assert_eq!(
        both,
        format!(
            "{}\n[1 lines 2937 bytes omitted from 1]\n{}",
            "日".repeat(10),
            "日".repeat(11)
        )
    );
    for out in [&head, &tail, &both] {
        assert!(out.len() <= 100);
    }
}

#[test]
fn mixed_width_characters_are_never_split() {
    let text = "aé日🎉".repeat(500); // 1 + 2 + 3 + 4 bytes per group
    for max_bytes in 60..100 {
        for direction in ALL {
            let (out, omitted, m) =
                bound_recording(&text, &limits(10, max_bytes, direction)).unwrap();
            assert!(out.len() <= max_bytes, "{direction:?} {max_bytes}: {out:?}");
            let (head, tail) = split_around(&out, &m);
            assert!(
                text.starts_with(head),
                "{direction:?} {max_bytes}: {head:?}"
            );
            assert!(text.ends_with(tail), "{direction:?} {max_bytes}: {tail:?}");
            // The kept parts end and start at boundaries of the original text.
            assert!(text.is_char_boundary(head.len()));
            assert!(text.is_char_boundary(text.len() - tail.len()));
            assert_eq!(omitted.bytes, text.len() - head.len() - tail.len());
            // Together the kept parts use the byte budget to within one character.
            let reserve = marker(&Omitted {
                lines: 1,
                bytes: text.len(),
                total_lines: 1,
                total_bytes: text.len(),
                head_lines: 1,
            });
            let separators = if direction == Direction::HeadTail {
                2
            } else {
                1
            };
            let budget = max_bytes - reserve.len() - separators;
            let kept = head.len() + tail.len();
            assert!(
                kept <= budget && kept + 3 >= budget,
                "{direction:?} {max_bytes}: {kept} of {budget}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Marker counts
// ---------------------------------------------------------------------------------------------

#[test]
fn marker_counts_add_up_to_the_whole_text() {
    let text = numbered(200);
    for direction in ALL {
        for (max_lines, max_bytes) in [(20, 100_000), (1000, 300), (7, 90)] {
            let (out, omitted, m) =
                bound_recording(&text, &limits(max_lines, max_bytes, direction)).unwrap();
            let (head, tail) = split_around(&out, &m);
            let shown_lines = count_lines(head) + count_lines(tail);
            assert_eq!(omitted.total_lines, 200);
            assert_eq!(omitted.total_bytes, text.len());
            assert_eq!(omitted.lines + shown_lines, 200, "{direction:?} {out:?}");
            assert_eq!(omitted.bytes, text.len() - head.len() - tail.len());
            assert_eq!(
                omitted.head_lines,
                count_lines(head),
                "{direction:?} {out:?}"
            );
            // The first omitted line really is the one after the head.
            if direction != Direction::Tail {
                assert!(text.starts_with(&format!("{head}\nline {}\n", omitted.head_lines + 1)));
            }
        }
    }
}

#[test]
fn marker_is_called_first_with_upper_bounds() {
    let calls = RefCell::new(Vec::new());
    let text = numbered(10);
    bound_text(&text, &limits(5, 1000, Direction::Head), |o| {
        calls.borrow_mut().push(*o);
        marker(o)
    })
    .unwrap();
    let calls = calls.into_inner();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0],
        Omitted {
            lines: 10,
            bytes: 71,
            total_lines: 10,
            total_bytes: 71,
            head_lines: 10,
        }
    );
    assert_eq!(
        calls[1],
        Omitted {
            lines: 6,
            bytes: 44,
            total_lines: 10,
            total_bytes: 71,
            head_lines: 4,
        }
    );
}

#[test]
fn leading_blank_line_kept_in_the_head_is_shown() {
    // The head keeps the empty first line; the preview must show it before the marker, or
    // "from line 2" would point past a line the model never saw.
    let text = format!("\n{}\n", "y".repeat(500));
    let (out, omitted, m) = bound_recording(&text, &limits(10, 100, Direction::Head)).unwrap();
    assert_eq!(omitted.head_lines, 1);
    assert_eq!(out, format!("\n{m}"));
    assert!(out.len() <= 100);
}

// ---------------------------------------------------------------------------------------------
// Tiny limits
// ---------------------------------------------------------------------------------------------

#[test]
fn one_line_limit_yields_only_the_marker() {
    let text = numbered(10);
    for direction in ALL {
        assert_eq!(
            bound(&text, 1, 1000, direction),
            "[10 lines 71 bytes omitted from 1]",
            "{direction:?}"
        );
    }
}

#[test]
fn byte_limit_below_the_marker_yields_only_the_marker() {
    let text = numbered(10);
    for direction in ALL {
        for max_bytes in [0, 1, 10, 34] {
            assert_eq!(
                bound(&text, 100, max_bytes, direction),
                "[10 lines 71 bytes omitted from 1]",
                "{direction:?} {max_bytes}"
            );
        }
    }
    let huge = "x".repeat(10_000);
    for direction in ALL {
        assert_eq!(
            bound(&huge, 100, 10, direction),
            "[1 lines 10000 bytes omitted from 1]",
            "{direction:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Property
// ---------------------------------------------------------------------------------------------

fn cases() -> u32 {
    if std::env::var("TACKLE_DEEP").as_deref() == Ok("1") {
        4096
    } else {
        64
    }
}

fn arbitrary_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => Just("\n".to_owned()),
        3 => "[a-z ]{0,40}",
        2 => any::<String>(),
        1 => "[é日🎉x]{0,30}",
        1 => "x{100,600}",
    ];
    prop::collection::vec(piece, 0..200).prop_map(|pieces| pieces.concat())
}

fn arbitrary_direction() -> impl Strategy<Value = Direction> {
    prop_oneof![
        Just(Direction::Head),
        Just(Direction::Tail),
        Just(Direction::HeadTail)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn bounded_text_fits_and_keeps_the_ends_of_the_input(
        text in arbitrary_text(),
        max_lines in 3usize..120,
        max_bytes in 200usize..6000,
        direction in arbitrary_direction(),
    ) {
        let limits = limits(max_lines, max_bytes, direction);
        match bound_recording(&text, &limits) {
            None => prop_assert!(limits.fits(&text)),
            Some((out, omitted, m)) => {
                prop_assert!(!limits.fits(&text));
                prop_assert!(out.len() <= max_bytes, "{} bytes > {}", out.len(), max_bytes);
                prop_assert!(count_lines(&out) <= max_lines, "{} lines > {}", count_lines(&out), max_lines);
                // The marker may also occur in the input; one of its positions must split the
                // output into a prefix and a suffix of the input.
                let body = text.strip_suffix('\n').unwrap_or(&text);
                let consistent = out.match_indices(m.as_str()).any(|(at, _)| {
                    let head = &out[..at];
                    let head = head.strip_suffix('\n').unwrap_or(head);
                    let tail = &out[at + m.len()..];
                    let tail = tail.strip_prefix('\n').unwrap_or(tail);
                    let ends = match direction {
                        Direction::Head => tail.is_empty() && text.starts_with(head),
                        Direction::Tail => head.is_empty() && body.ends_with(tail),
                        Direction::HeadTail => text.starts_with(head) && body.ends_with(tail),
                    };
                    ends && omitted.bytes == text.len() - head.len() - tail.len()
                });
                prop_assert!(consistent, "output {:?} does not split around {:?}", out, m);
                prop_assert_eq!(omitted.total_lines, count_lines(&text));
                prop_assert_eq!(omitted.total_bytes, text.len());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// bound_output
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct MemoryStore {
    blobs: Mutex<Vec<Bytes>>,
}

impl MemoryStore {
    fn blobs(&self) -> Vec<Vec<u8>> {
        self.blobs
            .lock()
            .unwrap()
            .iter()
            .map(|b| b.to_vec())
            .collect()
    }

    /// Where each retained buffer starts in memory, to tell a move from a copy.
    fn addresses(&self) -> Vec<*const u8> {
        self.blobs
            .lock()
            .unwrap()
            .iter()
            .map(|b| b.as_ptr())
            .collect()
    }
}

impl OutputStore for MemoryStore {
    fn retain(&self, bytes: Bytes) -> BoxFuture<'static, Result<ManagedRef, RetentionError>> {
        let mut blobs = self.blobs.lock().unwrap();
        let n = blobs.len();
        let reference = ManagedRef {
            id: format!("blob-{n}"),
            path: format!("/managed/{n}").into(),
            bytes: bytes.len() as u64,
        };
        blobs.push(bytes);
        Box::pin(async move { Ok(reference) })
    }

    fn directory(&self) -> Option<&Path> {
        None
    }
}

struct FailingStore;

impl OutputStore for FailingStore {
    fn retain(&self, _bytes: Bytes) -> BoxFuture<'static, Result<ManagedRef, RetentionError>> {
        Box::pin(async { Err(RetentionError("disk full".to_owned())) })
    }

    fn directory(&self) -> Option<&Path> {
        None
    }
}

fn recovery(read: Option<&str>, grep: Option<&str>) -> Recovery {
    Recovery {
        read: read.map(str::to_owned),
        grep: grep.map(str::to_owned),
    }
}

fn text_output(text: &str, structured: Value) -> ToolOutput {
    ToolOutput {
        content: vec![Content::text(text)],
        structured,
    }
}

fn base64_of(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn ten_lines() -> OutputLimits {
    limits(10, 10_000, Direction::HeadTail)
}

#[tokio::test]
async fn small_text_output_is_unchanged_and_nothing_is_retained() {
    let store = MemoryStore::default();
    let output = text_output(&numbered(10), json!({"ok": true}));
    let bounded = bound_output(output.clone(), &ten_lines(), &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(bounded.output, output);
    assert!(bounded.managed.is_empty());
    assert!(store.blobs().is_empty());
}

#[tokio::test]
async fn large_text_output_is_previewed_and_retained_in_full() {
    let store = MemoryStore::default();
    let text = numbered(100); // 792 bytes
    let structured = json!({"lines": 100});
    let bounded = bound_output(
        text_output(&text, structured.clone()),
        &ten_lines(),
        &store,
        &recovery(Some("read"), Some("grep")),
    )
    .await
    .unwrap();
    let expected = "line 1\nline 2\nline 3\nline 4\nline 5\n\
        [... 91 of 100 lines (726 of 792 bytes) omitted, from line 6. Full output: /managed/0 \
        (Use `read` with offset and limit to page through it, or `grep` to search it.) ...]\n\
        line 97\nline 98\nline 99\nline 100";
    assert_eq!(bounded.output.content, vec![Content::text(expected)]);
    assert_eq!(bounded.output.structured, structured);
    assert_eq!(
        bounded.managed,
        vec![ManagedRef {
            id: "blob-0".to_owned(),
            path: "/managed/0".into(),
            bytes: 792,
        }]
    );
    assert_eq!(store.blobs(), vec![text.into_bytes()]);
}

#[tokio::test]
async fn preview_hint_names_only_the_advertised_tools() {
    let cases = [
        (
            recovery(Some("read"), Some("grep")),
            "Use `read` with offset and limit to page through it, or `grep` to search it.",
        ),
        (
            recovery(Some("view"), None),
            "Use `view` with offset and limit to page through it.",
        ),
        (recovery(None, Some("search")), "Use `search` to search it."),
        (
            recovery(None, None),
            "No tool in this turn can open it; ask the user if you need the rest.",
        ),
    ];
    for (recovery, hint) in cases {
        let store = MemoryStore::default();
        let bounded = bound_output(
            text_output(&numbered(100), Value::Null),
            &ten_lines(),
            &store,
            &recovery,
        )
        .await
        .unwrap();
        let preview = bounded.output.content[0].as_text().unwrap();
        let expected_marker = format!(
            "[... 91 of 100 lines (726 of 792 bytes) omitted, from line 6. \
             Full output: /managed/0 ({hint}) ...]"
        );
        assert!(
            preview.contains(&format!("\n{expected_marker}\n")),
            "{recovery:?}: {preview}"
        );
        assert_eq!(store.blobs().len(), 1);
    }
}

#[tokio::test]
async fn text_parts_are_measured_together() {
    // Each part fits alone; joined, they do not.
    let store = MemoryStore::default();
    let output = ToolOutput {
        content: vec![Content::text(numbered(6)), Content::text(numbered(6))],
        structured: Value::Null,
    };
    let bounded = bound_output(output, &ten_lines(), &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(bounded.output.content.len(), 1);
    let joined = format!("{}\n{}", numbered(6), numbered(6));
    assert_eq!(store.blobs(), vec![joined.into_bytes()]);
    let preview = bounded.output.content[0].as_text().unwrap();
    assert!(ten_lines().fits(preview), "{preview}");
    assert!(preview.starts_with("line 1\n"), "{preview}");
}

#[tokio::test]
async fn structured_only_output_is_measured_as_pretty_json() {
    let store = MemoryStore::default();
    let structured = json!({"items": (0..500).collect::<Vec<_>>()});
    let output = ToolOutput {
        content: Vec::new(),
        structured: structured.clone(),
    };
    let bounded = bound_output(output, &ten_lines(), &store, &recovery(Some("read"), None))
        .await
        .unwrap();
    let pretty = serde_json::to_string_pretty(&structured).unwrap();
    // The model reads the preview; the complete value is retained, not sent again.
    assert_eq!(bounded.output.structured, Value::Null);
    assert_eq!(store.blobs(), vec![pretty.clone().into_bytes()]);
    assert_eq!(bounded.output.content.len(), 1);
    let preview = bounded.output.content[0].as_text().unwrap();
    assert!(
        preview.starts_with("{\n  \"items\": [\n    0,\n"),
        "{preview}"
    );
    assert!(preview.ends_with("\n    499\n  ]\n}"), "{preview}");
    assert!(preview.contains("Full output: /managed/0"), "{preview}");
    assert!(ten_lines().fits(preview), "{preview}");
}

#[tokio::test]
async fn small_structured_only_output_is_unchanged() {
    let store = MemoryStore::default();
    for structured in [json!({"a": [1, 2, 3]}), Value::Null] {
        let output = ToolOutput {
            content: Vec::new(),
            structured,
        };
        let bounded = bound_output(output.clone(), &ten_lines(), &store, &Recovery::default())
            .await
            .unwrap();
        assert_eq!(bounded.output, output);
        assert!(bounded.managed.is_empty());
    }
    // Compact, `{"a":[1,2,3]}` is one line; pretty it is six, over a five-line limit.
    let output = ToolOutput {
        content: Vec::new(),
        structured: json!({"a": [1, 2, 3]}),
    };
    let bounded = bound_output(
        output,
        &limits(5, 10_000, Direction::Head),
        &store,
        &Recovery::default(),
    )
    .await
    .unwrap();
    assert_eq!(bounded.managed.len(), 1);
    assert_eq!(store.blobs().len(), 1);
}

#[tokio::test]
async fn structured_output_is_sent_only_when_it_fits_with_the_text() {
    let store = MemoryStore::default();
    let limits = limits(10, 1_024, Direction::HeadTail);
    // Small: the text and the JSON fit together, so both are sent as they are.
    let small = ToolOutput {
        content: vec![Content::text("3 rows")],
        structured: json!({"rows": [1, 2, 3]}),
    };
    let bounded = bound_output(small.clone(), &limits, &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(bounded.output, small);
    assert!(store.blobs().is_empty());

    // Huge: the text is sent, the JSON is retained whole and sent as null.
    let huge = json!({"rows": (0..10_000).collect::<Vec<_>>()});
    let output = ToolOutput {
        content: vec![Content::text("10,000 rows")],
        structured: huge.clone(),
    };
    let bounded = bound_output(output, &limits, &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(bounded.output.content, vec![Content::text("10,000 rows")]);
    assert_eq!(bounded.output.structured, Value::Null);
    assert_eq!(
        store.blobs(),
        vec![serde_json::to_vec_pretty(&huge).unwrap()]
    );
    assert_eq!(bounded.managed.len(), 1);

    // The byte limit is shared: JSON that fits alone but not beside the text is retained too.
    let text = "x".repeat(600);
    let beside = json!({"note": "y".repeat(500)});
    let output = ToolOutput {
        content: vec![Content::text(text.clone())],
        structured: beside.clone(),
    };
    let bounded = bound_output(output, &limits, &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(bounded.output.content, vec![Content::text(text)]);
    assert_eq!(bounded.output.structured, Value::Null);
    assert_eq!(bounded.managed.len(), 1);
}

#[tokio::test]
async fn structured_data_repeated_by_a_media_part_is_sent_and_stored_once() {
    let store = MemoryStore::default();
    let png = base64_of(&[7u8; 30_000]);
    let output = ToolOutput {
        content: vec![
            Content::text("Image read."),
            Content::media("image/png", png.clone()),
        ],
        structured: json!({"output": "Image read.", "mimeType": "image/png", "dataBase64": png}),
    };
    let bounded = bound_output(output, &ten_lines(), &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(
        bounded.output.structured,
        json!({
            "output": "Image read.",
            "mimeType": "image/png",
            "dataBase64": crate::bound::MEDIA_DATA_OMITTED,
        })
    );
    assert_eq!(
        bounded.output.content[1],
        Content::media("image/png", png.clone())
    );
    assert!(store.blobs().is_empty());

    // An oversized image is retained once, as bytes; the structured copy is not stored again.
    let output = ToolOutput {
        content: vec![Content::media("image/png", png.clone())],
        structured: json!({"dataBase64": png}),
    };
    let small_media = OutputLimits {
        max_media_bytes: 1_000,
        ..ten_lines()
    };
    let bounded = bound_output(output, &small_media, &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(store.blobs(), vec![vec![7u8; 30_000]]);
    assert_eq!(
        bounded.output.structured,
        json!({"dataBase64": crate::bound::MEDIA_DATA_OMITTED})
    );
    let sent = serde_json::to_string(&bounded.output).unwrap();
    assert!(sent.len() < 1_000, "{sent}");
}

#[tokio::test]
async fn media_stays_native_next_to_a_text_preview() {
    let store = MemoryStore::default();
    let png = Content::media("image/png", base64_of(&[1u8; 300]));
    let output = ToolOutput {
        content: vec![png.clone(), Content::text(numbered(100))],
        structured: Value::Null,
    };
    let bounded = bound_output(output, &ten_lines(), &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(bounded.output.content.len(), 2);
    assert!(
        bounded.output.content[0]
            .as_text()
            .unwrap()
            .contains("Full output: /managed/0")
    );
    assert_eq!(bounded.output.content[1], png);
    assert_eq!(store.blobs(), vec![numbered(100).into_bytes()]);
}

#[tokio::test]
async fn oversized_media_is_retained_and_replaced_by_a_note() {
    let store = MemoryStore::default();
    let raw: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
    let small = Content::media("image/png", base64_of(&[9u8; 999]));
    let output = ToolOutput {
        content: vec![
            Content::text("two images"),
            Content::media("image/png", base64_of(&raw)),
            small.clone(),
        ],
        structured: json!({"images": 2}),
    };
    let mut limits = ten_lines();
    limits.max_media_bytes = 999; // the small image is exactly at the limit
    let bounded = bound_output(output, &limits, &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(
        bounded.output.content,
        vec![
            Content::text("two images"),
            Content::text(
                "[image/png media omitted: 4,000 bytes exceeds the 999-byte media limit. \
                 Saved at /managed/0.]"
            ),
            small,
        ]
    );
    assert_eq!(bounded.output.structured, json!({"images": 2}));
    assert_eq!(bounded.managed.len(), 1);
    assert_eq!(bounded.managed[0].path, Path::new("/managed/0"));
    assert_eq!(store.blobs(), vec![raw]);
}

#[tokio::test]
async fn failing_store_fails_bounding_instead_of_losing_output() {
    let big = text_output(&numbered(100), json!({"n": 1}));
    let error = bound_output(big, &ten_lines(), &FailingStore, &Recovery::default())
        .await
        .unwrap_err();
    assert_eq!(error, RetentionError("disk full".to_owned()));

    let structured_only = ToolOutput {
        content: Vec::new(),
        structured: json!({"items": (0..500).collect::<Vec<_>>()}),
    };
    assert!(
        bound_output(
            structured_only,
            &ten_lines(),
            &FailingStore,
            &Recovery::default()
        )
        .await
        .is_err()
    );

    let mut limits = ten_lines();
    limits.max_media_bytes = 10;
    let media = ToolOutput {
        content: vec![Content::media("image/png", base64_of(&[0u8; 300]))],
        structured: Value::Null,
    };
    assert!(
        bound_output(media, &limits, &FailingStore, &Recovery::default())
            .await
            .is_err()
    );

    // Small output never touches the store, so it still succeeds.
    let small = text_output("ok", Value::Null);
    assert!(
        bound_output(small, &ten_lines(), &FailingStore, &Recovery::default())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn oversized_media_that_is_not_base64_is_an_error() {
    let mut limits = ten_lines();
    limits.max_media_bytes = 10;
    let output = ToolOutput {
        content: vec![Content::media("image/png", "!".repeat(100))],
        structured: Value::Null,
    };
    let store = MemoryStore::default();
    assert!(
        bound_output(output, &limits, &store, &Recovery::default())
            .await
            .is_err()
    );
    assert!(store.blobs().is_empty());
}

#[tokio::test]
async fn a_single_text_part_is_retained_without_a_copy() {
    let store = MemoryStore::default();
    let text = numbered(100);
    let address = text.as_ptr();
    let output = ToolOutput {
        content: vec![Content::text(text)],
        structured: Value::Null,
    };
    bound_output(output, &ten_lines(), &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(store.addresses(), vec![address]);
    assert_eq!(store.blobs(), vec![numbered(100).into_bytes()]);
}

// ---------------------------------------------------------------------------------------------
// Measuring without building
// ---------------------------------------------------------------------------------------------

fn measured_pretty(value: &Value) -> Measure {
    let mut measure = Measure::default();
    serde_json::to_writer_pretty(&mut measure, value).unwrap();
    measure
}

#[test]
fn measured_json_matches_to_string_pretty_exactly() {
    let values = [
        Value::Null,
        json!(0),
        json!("text with\na newline, \"quotes\" and é日🎉"),
        json!([]),
        json!({}),
        json!([[], {}, [[]], {"a": {}}]),
        json!({"a": [1, 2, 3], "b": {"c": null, "d": [true, false]}}),
        json!({"items": (0..500).collect::<Vec<_>>()}),
        json!({"rows": (0..50).map(|i| json!({"id": i, "name": format!("row\n{i}")})).collect::<Vec<_>>()}),
    ];
    for value in &values {
        let pretty = serde_json::to_string_pretty(value).unwrap();
        let measure = measured_pretty(value);
        assert_eq!(measure.bytes, pretty.len(), "{pretty}");
        assert_eq!(measure.lines(), count_lines(&pretty), "{pretty}");
    }
}

#[tokio::test]
async fn structured_only_output_that_fits_exactly_is_unchanged() {
    let structured = json!({"items": (0..20).collect::<Vec<_>>()});
    let pretty = serde_json::to_string_pretty(&structured).unwrap();
    let output = ToolOutput {
        content: Vec::new(),
        structured,
    };
    let exact = limits(count_lines(&pretty), pretty.len(), Direction::HeadTail);
    let store = MemoryStore::default();
    let bounded = bound_output(output.clone(), &exact, &store, &Recovery::default())
        .await
        .unwrap();
    assert_eq!(bounded.output, output);
    assert!(store.blobs().is_empty());

    for tighter in [
        limits(count_lines(&pretty) - 1, pretty.len(), Direction::HeadTail),
        limits(count_lines(&pretty), pretty.len() - 1, Direction::HeadTail),
    ] {
        let bounded = bound_output(output.clone(), &tighter, &store, &Recovery::default())
            .await
            .unwrap();
        assert_eq!(bounded.managed.len(), 1);
    }
    // This test store does not dedupe.
    assert_eq!(store.blobs(), vec![pretty.into_bytes(); 2]);
}

/// Text parts are joined with one newline between every pair, empty parts included, the same
/// way hosts join them for display (`ModelError::text`).
fn join_like_bound_output(parts: &[String]) -> String {
    parts.join("\n")
}

#[test]
fn joined_measure_puts_a_separator_between_every_pair_of_parts() {
    for parts in [
        vec![],
        vec![""],
        vec!["", ""],
        vec!["", "a"],
        vec!["a", ""],
        vec!["a", "", "b"],
        vec!["a\n", "\n", "b"],
        vec!["\n", ""],
    ] {
        let parts: Vec<String> = parts.into_iter().map(str::to_owned).collect();
        let joined = join_like_bound_output(&parts);
        let measure = Measure::of_joined(parts.iter().map(String::as_str));
        assert_eq!(measure.bytes, joined.len(), "{parts:?}");
        assert_eq!(measure.lines(), count_lines(&joined), "{parts:?}");
        assert_eq!(join_texts(parts.clone(), joined.len()), joined, "{parts:?}");
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        "[a-z\n ]{0,10}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\n]{0,6}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn measures_agree_with_the_text_they_stand_for(
        value in arbitrary_json(),
        parts in prop::collection::vec(arbitrary_text(), 0..5),
    ) {
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let measure = measured_pretty(&value);
        prop_assert_eq!(measure.bytes, pretty.len());
        prop_assert_eq!(measure.lines(), count_lines(&pretty));

        let joined = join_like_bound_output(&parts);
        let measure = Measure::of_joined(parts.iter().map(String::as_str));
        prop_assert_eq!(measure.bytes, joined.len());
        prop_assert_eq!(measure.lines(), count_lines(&joined));
        prop_assert_eq!(join_texts(parts, joined.len()), joined);
    }
}

/// The tree-walk estimate must never under-count: its lines equal the pretty printer's and its
/// bytes are at least the pretty printer's, for any JSON value.
mod pretty_estimate {
    use super::super::PrettyEstimate;
    use proptest::prelude::*;
    use serde_json::Value;

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".*".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".*", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn estimate_has_exact_lines_and_never_undercounts_bytes(value in json()) {
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            let estimate = PrettyEstimate::of(&value, 0);
            prop_assert_eq!(estimate.lines, tackle_lines(&pretty));
            prop_assert!(estimate.max_bytes >= pretty.len(), "{} < {}", estimate.max_bytes, pretty.len());
        }
    }

    fn tackle_lines(text: &str) -> usize {
        crate::bound::count_lines(text)
    }

    #[test]
    fn nested_example_counts_lines_exactly() {
        let value = serde_json::json!({"a": {"b": [1, 2, []]}, "c": "x\ny"});
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        assert_eq!(
            PrettyEstimate::of(&value, 0).lines,
            crate::bound::count_lines(&pretty)
        );
    }
}
