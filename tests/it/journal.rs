//! The settlement journal end to end: SQLite records that survive a reopen byte for byte, and a
//! failing journal that turns a settlement into a defect carrying the original outcome.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle::{Harness, tagged};
use tackle_core::{
    CallIdentity, CancellationToken, Content, Context, JournalError, LimitsOverride, ModelResult,
    OutcomeKind, SettlementRecord, Tool, ToolFailure,
};
use tackle_registry::{
    AllTools, Defect, Location, Outcome, Settlement, SettlementConfig, ToolCall, ToolRegistry,
    ToolSet,
};
use tackle_store::{MemoryJournal, MemoryOutputStore, SqliteJournal};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
struct Count {
    n: usize,
}

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn context(identity: &CallIdentity, cancelled: bool) -> Context {
    let token = CancellationToken::new();
    if cancelled {
        token.cancel();
    }
    Context::new(identity.clone(), token)
}

/// Host IDs that a careless journal would mangle: non-Latin scripts, emoji, combining marks,
/// right-to-left text, zero-width joiners, quotes, control characters, NUL and empty strings.
fn identities() -> Vec<CallIdentity> {
    let session = "séance-🦀-会话";
    let other_session = "séance-🦀-会話";
    vec![
        CallIdentity::new(session, "агент", "сообщение-1", "call_🔧_1"),
        CallIdentity::new(session, "build\u{200d}🧪", "e\u{301}-message", "مرحبا-2"),
        CallIdentity::new(
            session,
            "build",
            "msg 'single' \"double\"",
            "tab\tnew\nline",
        ),
        CallIdentity::new(other_session, "", "", "nul\0byte"),
        CallIdentity::new(session, "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "😀😃😄", "  spaced  "),
        CallIdentity::new(session, "Ǆ", "\u{feff}bom", "call-6"),
        CallIdentity::new(other_session, "build", "\u{10ffff}", "call-7"),
    ]
}

/// The model-visible result JSON the journal should hold for a settlement.
fn expected_model_result(s: &Settlement) -> Option<ModelResult> {
    s.model_result()
}

/// The model result's JSON, as the journal stores it.
fn stored_json(record: &SettlementRecord) -> Option<String> {
    record
        .model_result
        .as_ref()
        .map(|result| serde_json::to_string(result).unwrap())
}

// spec: LAW-DURABLE-IDENTITY
#[tokio::test]
async fn journal_survives_reopen_with_exact_ids() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("nested").join("journal.sqlite3");
    let ids = identities();
    let mut settlements = Vec::new();
    {
        let journal = Arc::new(SqliteJournal::open(&path).unwrap());
        let store = Arc::new(MemoryOutputStore::new());
        let process = ToolRegistry::new();
        let location = Location::new(
            temp.path(),
            &process,
            SettlementConfig::new(store, journal.clone()),
        );
        let (echo, _) = tagged("a");
        let lines = Tool::new("Lines.", |input: Count, _cx| async move {
            Ok::<_, ToolFailure>(numbered(input.n))
        });
        let fail = Tool::new("Fail.", |_: Count, _cx| async move {
            Err::<String, _>(ToolFailure::new("nope: ✗").with_hint("try «again»"))
        });
        let (gone, _) = tagged("gone");
        let _reg = location
            .register(
                ToolSet::new()
                    .with("echo", echo)
                    .with("lines", lines)
                    .with("fail", fail),
            )
            .unwrap();
        let gone_reg = location
            .register(ToolSet::new().with("gone", gone))
            .unwrap();
        let turn = location.materialize(AllTools);
        drop(gone_reg);

        let calls = [
            (ToolCall::new("echo", r#"{"text":"héllo 🌍"}"#), false),
            (ToolCall::new("nöpe", "{}"), false),
            (ToolCall::new("echo", r#"{"text":"#), false),
            (ToolCall::new("fail", r#"{"n":1}"#), false),
            (
                ToolCall::new("lines", r#"{"n":100}"#).with_limits(LimitsOverride {
                    max_lines: Some(10),
                    ..LimitsOverride::default()
                }),
                false,
            ),
            (ToolCall::new("echo", r#"{"text":"x"}"#), true),
            (ToolCall::new("gone", r#"{"text":"x"}"#), false),
        ];
        for (identity, (call, cancelled)) in ids.iter().zip(calls) {
            settlements.push(turn.settle(context(identity, cancelled), call).await);
        }
        let kinds: Vec<OutcomeKind> = journal
            .records()
            .unwrap()
            .iter()
            .map(|r| r.outcome)
            .collect();
        assert_eq!(
            kinds,
            [
                OutcomeKind::Success,
                OutcomeKind::Unknown,
                OutcomeKind::Invalid,
                OutcomeKind::Failure,
                OutcomeKind::Success,
                OutcomeKind::Interrupted,
                OutcomeKind::Stale,
            ]
        );
        drop(turn);
        drop(location);
        let journal = Arc::try_unwrap(journal).expect("the location released the journal");
        // Dropping commits whatever is queued and stops the writer.
        drop(journal);
    }

    let reopened = SqliteJournal::open(&path).unwrap();
    let records = reopened.records().unwrap();
    assert_eq!(records.len(), settlements.len());
    for ((record, s), identity) in records.iter().zip(&settlements).zip(&ids) {
        assert_eq!(&record.identity, identity);
        assert_eq!(&s.identity, identity);
        let id = &record.identity;
        for (got, want) in [
            (id.session.as_str(), identity.session.as_str()),
            (id.agent.as_str(), identity.agent.as_str()),
            (
                id.assistant_message.as_str(),
                identity.assistant_message.as_str(),
            ),
            (id.call.as_str(), identity.call.as_str()),
        ] {
            assert_eq!(got.as_bytes(), want.as_bytes());
        }
        assert_eq!(record.tool, s.tool);
        assert_eq!(record.registration, s.registration.map(|r| r.get()));
        assert_eq!(record.managed, s.managed);
        assert_eq!(record.model_result, expected_model_result(s));
    }

    // Spot-check the recorded fields literally.
    assert_eq!(records[0].tool, "echo");
    assert_eq!(records[1].tool, "nöpe");
    assert_eq!(records[1].registration, None);
    assert!(records[0].registration.is_some());
    assert_eq!(
        records[0].registration, records[2].registration,
        "the same registration served both echo calls"
    );
    assert_ne!(records[0].registration, records[3].registration);
    assert!(
        records[6].registration.is_some(),
        "a stale call names the advertised registration"
    );
    assert_eq!(
        stored_json(&records[0]).as_deref(),
        Some(r#"{"is_error":false,"content":[],"structured":{"tag":"a","text":"héllo 🌍"}}"#)
    );
    assert_eq!(
        stored_json(&records[1]).as_deref(),
        Some(
            r#"{"is_error":true,"content":[{"type":"text","text":"Unknown tool `nöpe`. Available tools: echo, fail, gone, lines."}]}"#
        )
    );
    assert_eq!(
        stored_json(&records[3]).as_deref(),
        Some(
            r#"{"is_error":true,"content":[{"type":"text","text":"nope: ✗\nHint: try «again»"}]}"#
        )
    );
    assert_eq!(records[4].managed.len(), 1);
    assert_eq!(records[5].model_result, None);

    // Per-session reads use the exact session bytes.
    let other = reopened.records_for_session(&ids[3].session).unwrap();
    let other_calls: Vec<&str> = other.iter().map(|r| r.identity.call.as_str()).collect();
    assert_eq!(other_calls, ["nul\0byte", "call-7"]);
    let main = reopened.records_for_session(&ids[0].session).unwrap();
    assert_eq!(main.len(), 5);
}

// spec: LAW-DURABLE-IDENTITY
#[tokio::test]
async fn reopened_journal_appends_after_the_existing_records() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("journal.sqlite3");
    let identity = CallIdentity::new("s", "a", "m", "first");
    for (round, call) in ["first", "second"].into_iter().enumerate() {
        let journal = Arc::new(SqliteJournal::open(&path).unwrap());
        let process = ToolRegistry::new();
        let location = Location::new(
            "/ws",
            &process,
            SettlementConfig::new(Arc::new(MemoryOutputStore::new()), journal.clone()),
        );
        let (echo, _) = tagged("a");
        let _reg = location
            .register(ToolSet::new().with("echo", echo))
            .unwrap();
        let identity = CallIdentity {
            call: call.into(),
            ..identity.clone()
        };
        location
            .materialize(AllTools)
            .settle(
                context(&identity, false),
                ToolCall::new("echo", r#"{"text":"x"}"#),
            )
            .await;
        let calls: Vec<String> = journal
            .records()
            .unwrap()
            .iter()
            .map(|r| r.identity.call.to_string())
            .collect();
        assert_eq!(calls.len(), round + 1);
        assert_eq!(calls.last().map(String::as_str), Some(call));
    }
}

/// Settles one call of `name` through a location whose journal always fails.
async fn settle_with_failing_journal(name: &str, arguments: &str) -> Settlement {
    let h = Harness::new();
    let config = SettlementConfig::new(
        h.store.clone(),
        Arc::new(MemoryJournal::failing("journal offline")),
    );
    let location = Location::new("/ws", &h.process, config);
    let (echo, _) = tagged("a");
    let fail = Tool::new("Fail.", |_: Count, _cx| async move {
        Err::<String, _>(ToolFailure::new("nope"))
    });
    let _reg = location
        .register(ToolSet::new().with("echo", echo).with("fail", fail))
        .unwrap();
    location
        .materialize(AllTools)
        .settle(tackle::cx("c1"), ToolCall::new(name, arguments))
        .await
}

#[tokio::test]
async fn failing_journal_turns_each_outcome_into_a_journal_defect_carrying_it() {
    let cases = [
        ("echo", r#"{"text":"x"}"#, OutcomeKind::Success),
        ("fail", r#"{"n":1}"#, OutcomeKind::Failure),
        ("missing", "{}", OutcomeKind::Unknown),
        ("echo", "{", OutcomeKind::Invalid),
    ];
    for (name, arguments, kind) in cases {
        let s = settle_with_failing_journal(name, arguments).await;
        assert_eq!(
            s.outcome,
            Outcome::Defect(Defect::Journal {
                error: JournalError("journal offline".to_owned()),
                outcome: kind,
            }),
            "{name} {arguments}"
        );
        let Outcome::Defect(defect) = &s.outcome else {
            unreachable!()
        };
        assert_eq!(
            defect.to_string(),
            format!(
                "failed to record settlement: journal offline (the call ended as {})",
                kind.as_str()
            )
        );
        assert_eq!(s.model_result(), None, "an unrecorded call has no result");
        assert_eq!(s.identity.call.as_str(), "c1");
        assert_eq!(s.tool, name);
    }
}

#[test]
fn journal_record_round_trips_through_serde() {
    // The record type is what hosts export; it must carry IDs verbatim through JSON too.
    let record = SettlementRecord {
        identity: identities()[1].clone(),
        tool: "echo".to_owned(),
        registration: Some(7),
        outcome: OutcomeKind::Stale,
        model_result: Some(ModelResult {
            is_error: false,
            content: vec![Content::text("ok")],
            structured: Some(serde_json::json!({})),
        }),
        managed: Vec::new(),
        started_at_ms: 1,
        timings: Default::default(),
        adjustments: vec!["repaired the name `Echo` to `echo`".to_owned()],
    };
    let json = serde_json::to_string(&record).unwrap();
    let back: SettlementRecord = serde_json::from_str(&json).unwrap();
    assert_eq!(back, record);
    assert!(json.contains(r#""outcome":"stale""#), "{json}");
}
