//! Settlement-level bounding: default and layered limits, the truncation marker and its recovery
//! hint, retention in the memory and file stores, media, error results and interruption.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tackle::{Harness, cx, tagged};
use tackle_core::{
    CallIdentity, CancellationToken, Content, Context, Direction, LimitsOverride, OutcomeKind,
    OutputLimits, RetentionError, Tool, ToolDefinition, ToolFailure, count_lines,
};
use tackle_registry::{
    AllTools, Defect, Interruption, Location, ModelErrorKind, Outcome, Settlement,
    SettlementConfig, ToolCall, ToolSet,
};
use tackle_store::{FsOutputStore, MemoryJournal, MemoryOutputStore};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Input of the line-printing tools: how many numbered lines to print.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
struct Count {
    /// Number of lines.
    n: usize,
}

/// `line 1\nline 2\n...\nline n`.
fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn args(n: usize) -> String {
    format!(r#"{{"n":{n}}}"#)
}

/// A tool whose output is a string of `n` numbered lines.
fn lines_tool() -> Tool<Count, String> {
    Tool::new("Print numbered lines.", |input: Count, _cx| async move {
        Ok::<_, ToolFailure>(numbered(input.n))
    })
}

/// Formats `1234567` as `1,234,567`, as the marker does.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

const HINT_BOTH: &str =
    "Use `read` with offset and limit to page through it, or `grep` to search it.";
const HINT_READ: &str = "Use `read` with offset and limit to page through it.";
const HINT_NONE: &str = "No tool in this turn can open it; ask the user if you need the rest.";

/// The single text part of a successful settlement.
fn success_text(s: &Settlement) -> String {
    match &s.outcome {
        Outcome::Success(output) => {
            assert_eq!(output.content.len(), 1, "{:?}", output.content);
            output.content[0].as_text().expect("a text part").to_owned()
        }
        other => panic!("expected success, got {other:?}"),
    }
}

/// The marker line of a preview.
fn marker_of(text: &str) -> &str {
    let markers: Vec<&str> = text.lines().filter(|l| l.starts_with("[... ")).collect();
    assert_eq!(markers.len(), 1, "expected exactly one marker in {text:?}");
    markers[0]
}

/// The recovery hint inside a marker: the text between `(` after the path and ` ...]`.
fn hint_of(marker: &str) -> &str {
    let inner = marker
        .strip_suffix(") ...]")
        .expect("marker ends with ') ...]'");
    let open = inner.rfind(" (").expect("hint opens with ' ('");
    &inner[open + 2..]
}

/// The managed path named by a marker: after `Full output: ` and before ` (`.
fn marker_path(marker: &str) -> &str {
    let start = marker
        .find("Full output: ")
        .expect("marker names the output")
        + 13;
    let rest = &marker[start..];
    let end = rest.rfind(" (").expect("path ends before the hint");
    &rest[..end]
}

/// The first and last lines of a preview.
fn ends(text: &str) -> (&str, &str) {
    (
        text.lines().next().unwrap(),
        text.lines().next_back().unwrap(),
    )
}

// ---------------------------------------------------------------------------------------------
// Default limits
// ---------------------------------------------------------------------------------------------

// spec: LAW-BOUNDED-OUTPUT
// spec: LAW-STORAGE-ENCAPSULATION
#[tokio::test]
async fn default_limits_keep_head_and_tail_with_an_exact_marker_and_retain_the_full_output() {
    let h = Harness::new();
    let location = h.location("/ws");
    let _reg = location
        .register(ToolSet::new().with("lines", lines_tool()))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("lines", args(10_000)))
        .await;
    let full = numbered(10_000);
    let text = success_text(&s);

    let limits = OutputLimits::default();
    assert!(text.len() <= 50 * 1024, "{} bytes", text.len());
    assert_eq!(
        count_lines(&text),
        2000,
        "the preview uses the whole line budget, marker included"
    );
    assert!(limits.fits(&text));

    // Head: line 1..=k, marker, tail: line m..=10000, all contiguous.
    let lines: Vec<&str> = text.split('\n').collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("[... "))
        .expect("a marker");
    let head = &lines[..at];
    let tail = &lines[at + 1..];
    assert!(
        !head.is_empty() && !tail.is_empty(),
        "head+tail keeps both ends"
    );
    for (i, line) in head.iter().enumerate() {
        assert_eq!(*line, format!("line {}", i + 1));
    }
    let first_tail = 10_000 - tail.len() + 1;
    for (i, line) in tail.iter().enumerate() {
        assert_eq!(*line, format!("line {}", first_tail + i));
    }
    assert_eq!(head[0], "line 1");
    assert_eq!(*tail.last().unwrap(), "line 10000");

    // One managed reference, holding exactly the full text.
    assert_eq!(s.managed.len(), 1, "{:?}", s.managed);
    let managed = &s.managed[0];
    assert_eq!(managed.bytes, full.len() as u64);
    assert_eq!(
        managed.path,
        PathBuf::from(format!("memory://{}", managed.id))
    );
    assert_eq!(h.store.get(&managed.id).as_deref(), Some(full.as_bytes()));
    assert_eq!(h.store.len(), 1);

    // The marker states exactly what was left out and where the rest is.
    let omitted_lines = 10_000 - head.len() - tail.len();
    let omitted_bytes = full.len() - head.join("\n").len() - tail.join("\n").len();
    assert_eq!(
        lines[at],
        format!(
            "[... {} of 10,000 lines ({} of {} bytes) omitted, from line {}. \
             Full output: memory://{} ({HINT_NONE}) ...]",
            thousands(omitted_lines),
            thousands(omitted_bytes),
            thousands(full.len()),
            thousands(head.len() + 1),
            managed.id,
        )
    );

    // The string output is its own text: it is sent (and stored) once, as the bounded content,
    // never again beside it.
    let Outcome::Success(output) = &s.outcome else {
        unreachable!()
    };
    assert_eq!(output.structured, Value::Null);
    let result = s.model_result().unwrap();
    assert_eq!(result.structured, None);
    assert_eq!(result.content, vec![Content::text(text)]);
    let sent = serde_json::to_string(&result).unwrap();
    assert!(
        sent.len() < limits.max_bytes + 100,
        "{} bytes sent",
        sent.len()
    );

    // The journal keeps the same managed reference.
    let records = h.journal.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, OutcomeKind::Success);
    assert_eq!(records[0].managed, s.managed);
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn output_within_the_default_limits_is_untouched_and_not_retained() {
    let h = Harness::new();
    let location = h.location("/ws");
    let _reg = location
        .register(ToolSet::new().with("lines", lines_tool()))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("lines", args(2000)))
        .await;
    assert_eq!(success_text(&s), numbered(2000));
    assert!(s.managed.is_empty());
    assert!(h.store.is_empty());

    // One more line crosses the line limit.
    let s = location
        .materialize(AllTools)
        .settle(cx("c2"), ToolCall::new("lines", args(2001)))
        .await;
    assert_ne!(success_text(&s), numbered(2001));
    assert_eq!(s.managed.len(), 1);
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn byte_limit_bounds_output_with_few_long_lines() {
    let h = Harness::new();
    let location = h.location("/ws");
    // 100 lines of 1,000 bytes: far under the line limit, about twice the byte limit.
    let tool = Tool::new("Wide lines.", |_: Count, _cx| async move {
        Ok::<_, ToolFailure>(
            (0..100)
                .map(|i| format!("{i:03}{}", "x".repeat(997)))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    });
    let _reg = location
        .register(ToolSet::new().with("wide", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("wide", args(0)))
        .await;
    let text = success_text(&s);
    assert!(
        text.len() <= OutputLimits::DEFAULT_MAX_BYTES,
        "{}",
        text.len()
    );
    assert!(
        text.len() > OutputLimits::DEFAULT_MAX_BYTES - 1100,
        "{}",
        text.len()
    );
    assert!(text.starts_with("000x"));
    assert!(text.ends_with(&format!("099{}", "x".repeat(997))));
    assert_eq!(s.managed.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// The recovery hint
// ---------------------------------------------------------------------------------------------

/// Registers `lines` plus a tagged tool under each of `extra`, materializes with `filter`, and
/// returns the marker of a bounded call.
async fn marker_with(
    config: SettlementConfig,
    extra: &[&str],
    filter: impl tackle_registry::TurnFilter,
) -> String {
    let process = tackle_registry::ToolRegistry::new();
    let location = Location::new("/ws", &process, config);
    let mut record = ToolSet::new().with("lines", lines_tool());
    for name in extra {
        record = record.with(*name, tagged(name).0);
    }
    let _reg = location.register(record).unwrap();
    let call = ToolCall::new("lines", args(100)).with_limits(LimitsOverride {
        max_lines: Some(10),
        ..LimitsOverride::default()
    });
    let s = location.materialize(filter).settle(cx("c1"), call).await;
    marker_of(&success_text(&s)).to_owned()
}

fn memory_config() -> SettlementConfig {
    SettlementConfig::new(
        Arc::new(MemoryOutputStore::new()),
        Arc::new(MemoryJournal::new()),
    )
}

#[tokio::test]
async fn hint_names_read_and_grep_when_the_turn_advertises_both() {
    let marker = marker_with(memory_config(), &["read", "grep"], AllTools).await;
    assert_eq!(hint_of(&marker), HINT_BOTH, "{marker}");
}

#[tokio::test]
async fn hint_names_only_read_when_grep_is_not_registered() {
    let marker = marker_with(memory_config(), &["read"], AllTools).await;
    assert_eq!(hint_of(&marker), HINT_READ, "{marker}");
    assert!(!marker.contains("grep"), "{marker}");
}

#[tokio::test]
async fn hint_names_only_grep_when_read_is_not_registered() {
    let marker = marker_with(memory_config(), &["grep"], AllTools).await;
    assert_eq!(hint_of(&marker), "Use `grep` to search it.", "{marker}");
}

#[tokio::test]
async fn hint_says_no_tool_can_open_it_when_neither_is_advertised() {
    let marker = marker_with(memory_config(), &["reader", "grep_files"], AllTools).await;
    assert_eq!(hint_of(&marker), HINT_NONE, "{marker}");
}

#[tokio::test]
async fn hint_omits_a_tool_the_turn_filter_hides() {
    let hide_grep = |name: &str, _: &ToolDefinition| name != "grep";
    let marker = marker_with(memory_config(), &["read", "grep"], hide_grep).await;
    assert_eq!(hint_of(&marker), HINT_READ, "{marker}");
    let hide_both = |name: &str, _: &ToolDefinition| name == "lines";
    let marker = marker_with(memory_config(), &["read", "grep"], hide_both).await;
    assert_eq!(hint_of(&marker), HINT_NONE, "{marker}");
}

#[tokio::test]
async fn hint_follows_a_process_registration_of_the_recovery_tools() {
    let h = Harness::new();
    let _tools = h
        .process
        .register(
            ToolSet::new()
                .with("read", tagged("r").0)
                .with("grep", tagged("g").0),
        )
        .unwrap();
    let location = h.location("/ws");
    let _reg = location
        .register(ToolSet::new().with("lines", lines_tool()))
        .unwrap();
    let call = ToolCall::new("lines", args(100)).with_limits(LimitsOverride {
        max_lines: Some(10),
        ..LimitsOverride::default()
    });
    let s = location.materialize(AllTools).settle(cx("c1"), call).await;
    assert_eq!(hint_of(marker_of(&success_text(&s))), HINT_BOTH);
}

#[tokio::test]
async fn recovery_tool_names_come_from_the_settlement_config() {
    let config = || memory_config().with_recovery_tools("view", "search");
    let marker = marker_with(config(), &["view", "search"], AllTools).await;
    assert_eq!(
        hint_of(&marker),
        "Use `view` with offset and limit to page through it, or `search` to search it.",
        "{marker}"
    );
    // The default names no longer count.
    let marker = marker_with(config(), &["read", "grep"], AllTools).await;
    assert_eq!(hint_of(&marker), HINT_NONE, "{marker}");
    let marker = marker_with(config(), &["view", "grep"], AllTools).await;
    assert_eq!(
        hint_of(&marker),
        "Use `view` with offset and limit to page through it.",
        "{marker}"
    );
}

// ---------------------------------------------------------------------------------------------
// Limits precedence: registry < tool < agent < call
// ---------------------------------------------------------------------------------------------

/// The registry layer: 40 lines, head only.
fn registry_limits() -> OutputLimits {
    OutputLimits {
        max_lines: 40,
        max_bytes: 8 * 1024,
        direction: Direction::Head,
        ..OutputLimits::default()
    }
}

/// The tool layer: 30 lines, tail (like command output).
fn tail_tool() -> Tool<Count, String> {
    lines_tool().with_output_limits(LimitsOverride {
        max_lines: Some(30),
        direction: Some(Direction::Tail),
        ..LimitsOverride::default()
    })
}

/// The agent layer for `build`: 20 lines, direction unset. `plan` gets 5 lines.
fn agent_config(base: SettlementConfig) -> SettlementConfig {
    base.with_agent_limits(
        "build",
        LimitsOverride {
            max_lines: Some(20),
            ..LimitsOverride::default()
        },
    )
    .with_agent_limits(
        "plan",
        LimitsOverride {
            max_lines: Some(5),
            ..LimitsOverride::default()
        },
    )
}

/// Settles `lines` with 1,000 lines of output and returns the preview.
async fn preview(
    config: SettlementConfig,
    tool: Tool<Count, String>,
    context: Context,
    call: ToolCall,
) -> String {
    let process = tackle_registry::ToolRegistry::new();
    let location = Location::new("/ws", &process, config);
    let _reg = location
        .register(ToolSet::new().with("lines", tool))
        .unwrap();
    let s = location.materialize(AllTools).settle(context, call).await;
    assert_eq!(s.managed.len(), 1, "{:?}", s.outcome);
    success_text(&s)
}

fn call_1000() -> ToolCall {
    ToolCall::new("lines", args(1000))
}

fn assert_head(text: &str, lines: usize) {
    assert_eq!(count_lines(text), lines, "{text}");
    let (first, last) = ends(text);
    assert_eq!(first, "line 1", "{text}");
    assert!(last.starts_with("[... "), "head keeps no tail: {text}");
}

fn assert_tail(text: &str, lines: usize) {
    assert_eq!(count_lines(text), lines, "{text}");
    let (first, last) = ends(text);
    assert!(first.starts_with("[... "), "tail keeps no head: {text}");
    assert_eq!(last, "line 1000", "{text}");
    assert!(!text.lines().any(|l| l == "line 1"), "{text}");
}

fn assert_head_tail(text: &str, lines: usize) {
    assert_eq!(count_lines(text), lines, "{text}");
    let (first, last) = ends(text);
    assert_eq!(first, "line 1", "{text}");
    assert_eq!(last, "line 1000", "{text}");
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn registry_limits_replace_the_defaults() {
    // 1,000 short lines fit the defaults; the registry's 40-line head does not.
    let text = preview(
        memory_config().with_limits(registry_limits()),
        lines_tool(),
        cx("c1"),
        call_1000(),
    )
    .await;
    assert_head(&text, 40);
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn tool_preference_outranks_the_registry_limits() {
    let text = preview(
        memory_config().with_limits(registry_limits()),
        tail_tool(),
        cx("c1"),
        call_1000(),
    )
    .await;
    assert_tail(&text, 30);
}

#[tokio::test]
async fn tool_tail_preference_alone_keeps_the_last_lines_under_default_limits() {
    let bash_like = lines_tool().with_output_limits(LimitsOverride {
        direction: Some(Direction::Tail),
        ..LimitsOverride::default()
    });
    let text = preview(
        memory_config(),
        bash_like,
        cx("c1"),
        ToolCall::new("lines", args(5000)),
    )
    .await;
    let (first, last) = ends(&text);
    assert!(first.starts_with("[... "), "{first}");
    assert_eq!(last, "line 5000");
    assert!(!text.lines().any(|l| l == "line 1"));
    assert_eq!(count_lines(&text), OutputLimits::DEFAULT_MAX_LINES);
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn agent_override_outranks_the_tool_preference() {
    let config = agent_config(memory_config().with_limits(registry_limits()));
    let text = preview(config, tail_tool(), cx("c1"), call_1000()).await;
    // 20 lines from the agent; the direction it leaves unset still comes from the tool.
    assert_tail(&text, 20);
}

#[tokio::test]
async fn agent_override_applies_only_to_its_own_agent() {
    let plan = Context::new(
        CallIdentity::new("session-1", "plan", "message-1", "c1"),
        CancellationToken::new(),
    );
    let config = agent_config(memory_config().with_limits(registry_limits()));
    let text = preview(config, tail_tool(), plan, call_1000()).await;
    assert_tail(&text, 5);

    let other = Context::new(
        CallIdentity::new("session-1", "review", "message-1", "c2"),
        CancellationToken::new(),
    );
    let config = agent_config(memory_config().with_limits(registry_limits()));
    let text = preview(config, tail_tool(), other, call_1000()).await;
    assert_tail(&text, 30);
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn call_limits_outrank_the_agent_override() {
    let config = agent_config(memory_config().with_limits(registry_limits()));
    let call = call_1000().with_limits(LimitsOverride {
        max_lines: Some(10),
        direction: Some(Direction::HeadTail),
        ..LimitsOverride::default()
    });
    let text = preview(config, tail_tool(), cx("c1"), call).await;
    assert_head_tail(&text, 10);
}

#[tokio::test]
async fn call_limits_can_loosen_every_layer_below() {
    let config = agent_config(memory_config().with_limits(registry_limits()));
    let process = tackle_registry::ToolRegistry::new();
    let location = Location::new("/ws", &process, config);
    let _reg = location
        .register(ToolSet::new().with("lines", tail_tool()))
        .unwrap();
    let call = call_1000().with_limits(LimitsOverride {
        max_lines: Some(5000),
        max_bytes: Some(1 << 20),
        ..LimitsOverride::default()
    });
    let s = location.materialize(AllTools).settle(cx("c1"), call).await;
    assert_eq!(success_text(&s), numbered(1000));
    assert!(s.managed.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Error results
// ---------------------------------------------------------------------------------------------

fn huge_failure_message() -> String {
    // 4,000 lines of 50 bytes: 200 KB.
    (1..=4000)
        .map(|i| format!("failure line {i:>5}: {}", "e".repeat(30)))
        .collect::<Vec<_>>()
        .join("\n")
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn tool_failure_with_a_huge_message_is_bounded_and_retained() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Fail loudly.", |_: Count, _cx| async move {
        Err::<String, _>(ToolFailure::new(huge_failure_message()))
    });
    let _reg = location
        .register(ToolSet::new().with("fail", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("fail", args(0)))
        .await;
    let full = huge_failure_message();
    assert!(full.len() >= 200_000);
    let Outcome::Error(error) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    assert_eq!(error.kind, ModelErrorKind::Failed);
    let text = error.text();
    assert!(OutputLimits::default().fits(&text), "{} bytes", text.len());
    assert!(text.starts_with("failure line     1: "));
    assert!(text.ends_with(&format!("failure line  4000: {}", "e".repeat(30))));
    marker_of(&text);

    assert_eq!(s.managed.len(), 1);
    assert_eq!(
        h.store.get(&s.managed[0].id).as_deref(),
        Some(full.as_bytes())
    );
    let result = s.model_result().unwrap();
    assert!(result.is_error);
    assert_eq!(result.content, error.content);
    let record = &h.journal.records()[0];
    assert_eq!(record.outcome, OutcomeKind::Failure);
    assert_eq!(record.managed, s.managed);
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn tool_failure_is_bounded_with_the_tools_own_preference() {
    // A command tool that prefers the tail should show how a failed command ended, too.
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Fail loudly.", |_: Count, _cx| async move {
        Err::<String, _>(ToolFailure::new(huge_failure_message()))
    })
    .with_output_limits(LimitsOverride {
        max_lines: Some(50),
        direction: Some(Direction::Tail),
        ..LimitsOverride::default()
    });
    let _reg = location
        .register(ToolSet::new().with("fail", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("fail", args(0)))
        .await;
    let Outcome::Error(error) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    let text = error.text();
    let (first, last) = ends(&text);
    assert_eq!(
        (count_lines(&text), first.starts_with("[... ")),
        (50, true),
        "the tool's 50-line tail was not applied; the preview starts with {first:?}"
    );
    assert_eq!(last, format!("failure line  4000: {}", "e".repeat(30)));
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn invalid_and_unknown_errors_honour_call_limits() {
    let h = Harness::new();
    let location = h.location("/ws");
    let _reg = location
        .register(ToolSet::new().with("lines", lines_tool()))
        .unwrap();
    let turn = location.materialize(AllTools);
    let two_lines = LimitsOverride {
        max_lines: Some(2),
        ..LimitsOverride::default()
    };
    // The invalid-arguments message is three lines long.
    let s = turn
        .settle(
            cx("c1"),
            ToolCall::new("lines", "{}").with_limits(two_lines),
        )
        .await;
    let Outcome::Error(error) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    assert_eq!(error.kind, ModelErrorKind::Invalid);
    let text = error.text();
    assert!(count_lines(&text) <= 2, "{text}");
    assert!(
        text.starts_with("Invalid arguments for tool `lines`:"),
        "{text}"
    );
    marker_of(&text);
    assert_eq!(s.managed.len(), 1);
    let full = String::from_utf8(h.store.get(&s.managed[0].id).unwrap().to_vec()).unwrap();
    assert!(full.contains("- n: missing field"), "{full}");

    // An unknown-tool message over a tiny byte limit.
    let s = turn
        .settle(
            cx("c2"),
            ToolCall::new("lines_everywhere_and_then_some_more", "{}").with_limits(
                LimitsOverride {
                    max_lines: Some(1),
                    max_bytes: Some(400),
                    ..LimitsOverride::default()
                },
            ),
        )
        .await;
    let Outcome::Error(error) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    assert_eq!(error.kind, ModelErrorKind::Unknown);
    let text = error.text();
    assert_eq!(count_lines(&text), 1, "{text}");
    assert!(text.len() <= 400, "{text}");
}

// ---------------------------------------------------------------------------------------------
// Retention failure
// ---------------------------------------------------------------------------------------------

fn failing_location(h: &Harness) -> Location {
    let config = SettlementConfig::new(
        Arc::new(MemoryOutputStore::failing("disk full")),
        h.journal.clone(),
    );
    Location::new("/ws", &h.process, config)
}

// spec: LAW-NO-LOSSY-SUCCESS
#[tokio::test]
async fn retention_failure_fails_the_settlement() {
    let h = Harness::new();
    let location = failing_location(&h);
    let _reg = location
        .register(ToolSet::new().with("lines", lines_tool()))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("lines", args(10_000)))
        .await;
    assert_eq!(
        s.outcome,
        Outcome::Defect(Defect::Retention(RetentionError("disk full".to_owned())))
    );
    let Outcome::Defect(defect) = &s.outcome else {
        unreachable!()
    };
    assert_eq!(
        defect.to_string(),
        "failed to retain tool output: disk full"
    );
    assert_eq!(s.model_result(), None);
    assert!(s.managed.is_empty());
    let record = &h.journal.records()[0];
    assert_eq!(record.outcome, OutcomeKind::RetentionFailed);
    assert_eq!(record.model_result, None);
    assert!(record.managed.is_empty());
}

// spec: LAW-NO-LOSSY-SUCCESS
#[tokio::test]
async fn small_output_succeeds_with_a_failing_store() {
    let h = Harness::new();
    let location = failing_location(&h);
    let _reg = location
        .register(ToolSet::new().with("lines", lines_tool()))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("lines", args(3)))
        .await;
    assert_eq!(success_text(&s), "line 1\nline 2\nline 3");
    assert!(s.managed.is_empty());
    assert_eq!(h.journal.records()[0].outcome, OutcomeKind::Success);
}

// spec: LAW-NO-LOSSY-SUCCESS
#[tokio::test]
async fn oversized_error_with_a_failing_store_is_a_retention_defect() {
    let h = Harness::new();
    let location = failing_location(&h);
    let tool = Tool::new("Fail loudly.", |_: Count, _cx| async move {
        Err::<String, _>(ToolFailure::new(huge_failure_message()))
    });
    let _reg = location
        .register(ToolSet::new().with("fail", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("fail", args(0)))
        .await;
    assert!(
        matches!(s.outcome, Outcome::Defect(Defect::Retention(_))),
        "{:?}",
        s.outcome
    );
    assert_eq!(s.model_result(), None);
    assert_eq!(h.journal.records()[0].outcome, OutcomeKind::RetentionFailed);
}

// ---------------------------------------------------------------------------------------------
// File store
// ---------------------------------------------------------------------------------------------

/// Every file in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn file_store_keeps_one_file_per_bounded_output_and_dedupes_identical_ones() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("tool-output");
    let store = Arc::new(FsOutputStore::new(&dir).unwrap());
    let journal = Arc::new(MemoryJournal::new());
    let process = tackle_registry::ToolRegistry::new();
    let location = Location::new(
        temp.path(),
        &process,
        SettlementConfig::new(store, journal.clone()),
    );
    let _reg = location
        .register(ToolSet::new().with("lines", lines_tool()))
        .unwrap();
    let turn = location.materialize(AllTools);

    // A small output writes nothing.
    let s = turn
        .settle(cx("c0"), ToolCall::new("lines", args(10)))
        .await;
    assert!(s.managed.is_empty());
    assert!(files_in(&dir).is_empty());

    let first = turn
        .settle(cx("c1"), ToolCall::new("lines", args(10_000)))
        .await;
    assert_eq!(first.managed.len(), 1);
    let managed = &first.managed[0];
    assert_eq!(files_in(&dir), vec![dir.join(&managed.id)]);
    assert_eq!(managed.path, dir.join(&managed.id));
    let full = numbered(10_000);
    assert_eq!(std::fs::read(&managed.path).unwrap(), full.as_bytes());
    assert_eq!(managed.bytes, full.len() as u64);

    // The marker points at that file, and it exists.
    let text = success_text(&first);
    let path = marker_path(marker_of(&text));
    assert_eq!(Path::new(path), managed.path.as_path());
    assert!(Path::new(path).is_file(), "{path}");
    assert!(Path::new(path).is_absolute(), "{path}");

    // The same output again: same reference, still one file.
    let second = turn
        .settle(cx("c2"), ToolCall::new("lines", args(10_000)))
        .await;
    assert_eq!(second.managed, first.managed);
    assert_eq!(success_text(&second), text);
    assert_eq!(files_in(&dir).len(), 1);

    // A different output: a second file with its own bytes.
    let third = turn
        .settle(cx("c3"), ToolCall::new("lines", args(9_999)))
        .await;
    assert_eq!(third.managed.len(), 1);
    assert_ne!(third.managed[0].id, managed.id);
    assert_eq!(files_in(&dir).len(), 2);
    assert_eq!(
        std::fs::read(&third.managed[0].path).unwrap(),
        numbered(9_999).as_bytes()
    );

    let records = journal.records();
    assert_eq!(records.len(), 4);
    assert_eq!(records[1].managed, first.managed);
    assert_eq!(records[2].managed, first.managed);
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn empty_text_parts_still_count_as_lines() {
    // 3,000 empty parts and one more: read as the model reads them (one line per part, as
    // `ModelError::text` joins them), that is 3,001 lines, over the 2,000-line default.
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = lines_tool().with_projection(|_: &Count, _: &Value| {
        let mut parts = vec![Content::text(""); 3000];
        parts.push(Content::text("end"));
        parts
    });
    let _reg = location
        .register(ToolSet::new().with("parts", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("parts", args(1)))
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    let joined = output
        .content
        .iter()
        .filter_map(Content::as_text)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        OutputLimits::default().fits(&joined),
        "{} parts, {} lines, {} managed",
        output.content.len(),
        count_lines(&joined),
        s.managed.len()
    );
}

// ---------------------------------------------------------------------------------------------
// Media and structured output
// ---------------------------------------------------------------------------------------------

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn screenshot_tool() -> Tool<Count, String> {
    lines_tool().with_projection(|_: &Count, encoded: &Value| {
        vec![
            Content::text(encoded.as_str().unwrap()),
            Content::media("image/png", PNG),
        ]
    })
}

#[tokio::test]
async fn media_part_stays_native_when_its_text_is_bounded() {
    let h = Harness::new();
    let location = h.location("/ws");
    let _reg = location
        .register(ToolSet::new().with("shot", screenshot_tool()))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("shot", args(10_000)))
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    assert_eq!(output.content.len(), 2, "{:?}", output.content);
    let media: Vec<&Content> = output
        .content
        .iter()
        .filter(|p| p.as_text().is_none())
        .collect();
    assert_eq!(media, vec![&Content::media("image/png", PNG)]);
    let text: Vec<&str> = output.content.iter().filter_map(Content::as_text).collect();
    assert_eq!(text.len(), 1);
    assert!(OutputLimits::default().fits(text[0]));
    marker_of(text[0]);
    // Only the text was retained.
    assert_eq!(s.managed.len(), 1);
    assert_eq!(
        h.store.get(&s.managed[0].id).as_deref(),
        Some(numbered(10_000).as_bytes())
    );
}

#[tokio::test]
async fn media_with_small_text_is_not_bounded() {
    let h = Harness::new();
    let location = h.location("/ws");
    let _reg = location
        .register(ToolSet::new().with("shot", screenshot_tool()))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("shot", args(2)))
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    assert_eq!(
        output.content,
        vec![
            Content::text("line 1\nline 2"),
            Content::media("image/png", PNG)
        ]
    );
    assert!(s.managed.is_empty());
    assert!(h.store.is_empty());
}

#[tokio::test]
async fn media_over_the_media_limit_is_retained_and_replaced_by_a_note() {
    let h = Harness::new();
    let location = h.location("/ws");
    let _reg = location
        .register(ToolSet::new().with("shot", screenshot_tool()))
        .unwrap();
    let call = ToolCall::new("shot", args(1)).with_limits(LimitsOverride {
        max_media_bytes: Some(10),
        ..LimitsOverride::default()
    });
    let s = location.materialize(AllTools).settle(cx("c1"), call).await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    assert!(
        output.content.iter().all(|p| p.as_text().is_some()),
        "no native media over the limit: {:?}",
        output.content
    );
    assert_eq!(s.managed.len(), 1);
    let png = h.store.get(&s.managed[0].id).unwrap();
    assert_eq!(
        &png[..8],
        b"\x89PNG\r\n\x1a\n",
        "the decoded image is retained"
    );
    assert_eq!(
        output.content,
        vec![
            Content::text("line 1"),
            Content::text(format!(
                "[image/png media omitted: {} bytes exceeds the 10-byte media limit. Saved at memory://{}.]",
                png.len(),
                s.managed[0].id
            )),
        ]
    );
}

/// A large domain output.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
struct Report {
    rows: Vec<String>,
}

fn report(n: usize) -> Report {
    Report {
        rows: (1..=n).map(|i| format!("row {i}")).collect(),
    }
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn huge_structured_output_beside_a_small_projection_is_retained_not_sent() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Report.", |input: Count, _cx| async move {
        Ok::<_, ToolFailure>(report(input.n))
    })
    .with_projection(|input: &Count, _: &Value| vec![Content::text(format!("{} rows", input.n))]);
    let _reg = location
        .register(ToolSet::new().with("report", tool))
        .unwrap();
    let limits = OutputLimits {
        max_bytes: 1_024,
        ..OutputLimits::default()
    };
    let s = location
        .materialize(AllTools)
        .settle(
            cx("c1"),
            ToolCall::new("report", args(20_000)).with_limits(LimitsOverride {
                max_bytes: Some(limits.max_bytes),
                ..LimitsOverride::default()
            }),
        )
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    assert_eq!(output.content, vec![Content::text("20000 rows")]);
    // Everything sent fits the bound; the complete value is retained, byte for byte.
    let result = s.model_result().unwrap();
    assert_eq!(result.structured, None);
    let sent = serde_json::to_string(&result).unwrap();
    assert!(sent.len() <= limits.max_bytes, "{sent}");
    assert_eq!(s.managed.len(), 1);
    let kept = h.store.get(&s.managed[0].id).unwrap();
    let kept: Value = serde_json::from_slice(&kept).unwrap();
    assert_eq!(kept, serde_json::to_value(report(20_000)).unwrap());
    // The journal stores what was sent, not the whole value.
    let record = &h.journal.records()[0];
    let stored = serde_json::to_string(record.model_result.as_ref().unwrap()).unwrap();
    assert!(stored.len() <= limits.max_bytes, "{stored}");
    assert_eq!(record.managed, s.managed);
}

// spec: LAW-STORAGE-ENCAPSULATION
#[tokio::test]
async fn huge_structured_output_without_a_projection_is_bounded_as_json() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Report.", |input: Count, _cx| async move {
        Ok::<_, ToolFailure>(report(input.n))
    });
    let _reg = location
        .register(ToolSet::new().with("report", tool))
        .unwrap();
    let s = location
        .materialize(AllTools)
        .settle(cx("c1"), ToolCall::new("report", args(20_000)))
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{:?}", s.outcome)
    };
    // The model reads a preview of the JSON; the value itself is retained, not sent again.
    let expected = serde_json::to_value(report(20_000)).unwrap();
    assert_eq!(output.structured, Value::Null);
    assert_eq!(s.managed.len(), 1);
    let kept: Value = serde_json::from_slice(&h.store.get(&s.managed[0].id).unwrap()).unwrap();
    assert_eq!(kept, expected, "the domain output is retained untouched");
    assert_eq!(output.content.len(), 1);
    let text = output.content[0].as_text().unwrap();
    assert!(OutputLimits::default().fits(text));
    assert!(
        text.starts_with("{\n  \"rows\": [\n    \"row 1\","),
        "{}",
        &text[..40]
    );
    assert_eq!(s.managed.len(), 1);
    assert_eq!(
        h.store.get(&s.managed[0].id).as_deref(),
        Some(serde_json::to_string_pretty(&expected).unwrap().as_bytes())
    );
}

// ---------------------------------------------------------------------------------------------
// Interruption
// ---------------------------------------------------------------------------------------------

// spec: LAW-INTERRUPTION-NOT-A-RESULT
#[tokio::test]
async fn interrupted_call_with_a_huge_would_be_output_retains_nothing() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started = Arc::new(std::sync::Mutex::new(Some(started_tx)));
    let slow = Tool::new("Slow, huge.", move |input: Count, _cx| {
        let started = started.lock().unwrap().take();
        async move {
            if let Some(started) = started {
                started.send(()).unwrap();
            }
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            Ok::<_, ToolFailure>(numbered(input.n))
        }
    });
    let _reg = location
        .register(
            ToolSet::new()
                .with("slow", slow)
                .with("lines", lines_tool()),
        )
        .unwrap();
    let turn = location.materialize(AllTools);

    // Cancelled while running.
    let context = cx("c1");
    let token = context.cancellation().clone();
    let running = tokio::spawn({
        let turn = turn.clone();
        async move {
            turn.settle(context, ToolCall::new("slow", args(10_000)))
                .await
        }
    });
    started_rx.await.unwrap();
    token.cancel();
    let s = running.await.unwrap();
    assert_eq!(s.outcome, Outcome::Interrupted(Interruption::Cancelled));
    assert!(s.managed.is_empty());
    assert_eq!(s.model_result(), None);

    // Cancelled before it started.
    let context = cx("c2");
    context.cancellation().cancel();
    let s = turn
        .settle(context, ToolCall::new("lines", args(10_000)))
        .await;
    assert_eq!(s.outcome, Outcome::Interrupted(Interruption::Cancelled));
    assert!(s.managed.is_empty());

    assert!(h.store.is_empty(), "nothing was retained");
    for record in h.journal.records() {
        assert_eq!(record.outcome, OutcomeKind::Interrupted);
        assert!(record.managed.is_empty());
        assert_eq!(record.model_result, None);
    }
    assert_eq!(h.journal.records().len(), 2);
}

// spec: LAW-BOUNDED-OUTPUT
#[tokio::test]
async fn an_image_read_is_sent_and_stored_once_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..30_000u32).map(|i| (i * 7 % 251) as u8));
    std::fs::write(dir.path().join("shot.png"), &png).unwrap();
    let h = Harness::new();
    let env = tackle_builtins::ToolEnv::new(tackle_builtins::LocationFs::new(dir.path()).unwrap());
    let location = h.location(dir.path().to_str().unwrap());
    let _tools = location
        .register(
            tackle_builtins::file_tools(&env)
                .into_iter()
                .collect::<ToolSet>(),
        )
        .unwrap();
    let limits = LimitsOverride {
        max_bytes: Some(1_024),
        max_media_bytes: Some(1_024),
        ..LimitsOverride::default()
    };
    let s = location
        .materialize(AllTools)
        .settle(
            cx("c1"),
            ToolCall::new("read", r#"{"filePath": "shot.png"}"#).with_limits(limits),
        )
        .await;
    let result = s.model_result().unwrap();
    assert!(!result.is_error, "{result:?}");
    let sent = serde_json::to_string(&result).unwrap();
    assert!(sent.len() < 1_300, "{} bytes sent: {sent}", sent.len());
    // The image is kept once, as its bytes; the journal holds what was sent.
    assert_eq!(s.managed.len(), 1, "{:?}", s.managed);
    assert_eq!(h.store.get(&s.managed[0].id).as_deref(), Some(&png[..]));
    let record = h.journal.records().pop().unwrap();
    assert_eq!(record.model_result.as_ref(), Some(&result));
}
