//! Fuzzing with arbitrary bytes (proptest, so it runs on stable): the argument decoder, the patch
//! parser and planner, the edit engine and the JSONC configuration reader never panic and always
//! answer, whatever they are fed. (The MCP line reader has its own in `tackle-mcp`'s wire tests.)
//!
//! By default each target runs 256 cases. With `TACKLE_DEEP=1` each runs for ten minutes
//! (`TACKLE_FUZZ_SECS` changes that), in batches of fresh random cases.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tackle::{Harness, cx, tagged};
use tackle_core::Outcome;
use tackle_registry::{AllTools, ToolCall, ToolSet};

/// Runs `test` on values of `strategy`: 256 cases, or for the deep-run duration.
fn fuzz<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let deep = std::env::var("TACKLE_DEEP").is_ok_and(|v| v == "1");
    let budget = std::env::var("TACKLE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(600));
    let started = Instant::now();
    let mut cases = 0u64;
    loop {
        let mut runner = TestRunner::new(Config {
            cases: 256,
            failure_persistence: None,
            ..Config::default()
        });
        if let Err(error) = runner.run(&strategy, &test) {
            panic!("{name}: {error}");
        }
        cases += 256;
        if !deep || started.elapsed() >= budget {
            break;
        }
    }
    if deep {
        eprintln!("{name}: {cases} cases in {:.0?}", started.elapsed());
    }
}

/// Bytes that are mostly JSON-ish, sometimes not text at all.
fn jsonish() -> impl Strategy<Value = String> {
    prop_oneof![
        "[\\[\\]{}\":,0-9a-z \\\\ntf.-]{0,200}",
        any::<Vec<u8>>().prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        (any::<String>(), any::<u32>()).prop_map(|(text, repeat)| {
            format!(
                "{{\"text\": {}, \"repeat\": {}}}",
                serde_json::Value::from(text),
                repeat % 5
            )
        }),
    ]
}

#[test]
fn the_argument_decoder_answers_any_bytes() {
    let harness = Harness::new();
    let location = harness.location("/repo");
    let (echo, _) = tagged("echo");
    let _guard = location
        .register(ToolSet::new().with("echo", echo))
        .unwrap();
    let turn = location.materialize(AllTools);
    let runtime = crate::support::runtime();
    fuzz("arguments", jsonish(), |arguments| {
        let settled = runtime.block_on(turn.settle(cx("c"), ToolCall::new("echo", arguments)));
        prop_assert!(
            matches!(settled.outcome, Outcome::Success(_) | Outcome::Error(_)),
            "{:?}",
            settled.outcome
        );
        Ok(())
    });
}

/// Patch text: the grammar's markers and lines among arbitrary ones.
fn patchish() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("*** Begin Patch".to_owned()),
        Just("*** End Patch".to_owned()),
        Just("  *** End Patch ".to_owned()),
        "\\*\\*\\* (Add|Delete|Update) File: [a-c./]{0,6}",
        Just("*** Move to: b".to_owned()),
        Just("*** End of File".to_owned()),
        "@@[ a-z@-]{0,10}",
        "[ +-][a-c ]{0,8}",
        any::<String>(),
    ];
    prop::collection::vec(line, 0..30).prop_map(|lines| lines.join("\n"))
}

#[test]
fn the_patch_parser_and_planner_answer_any_text() {
    let files = |path: &str| match path {
        "a" => Some("a\nb\nc\n".to_owned()),
        "b" => Some(String::new()),
        _ => None,
    };
    fuzz("patch", patchish(), |text| {
        if let Ok(patch) = tackle_edit::patch::parse_patch(&text) {
            let _ = tackle_edit::patch::plan_patch(&patch, &files);
        }
        Ok(())
    });
}

#[test]
fn the_edit_engine_answers_any_strings() {
    let text = "[a-c \\n\\t;,{}\\\\\"é]{0,60}";
    fuzz(
        "edit",
        (text, text, text, any::<bool>()),
        |(content, old, new, all)| {
            if let Ok(replaced) = tackle_edit::replace::replace(&content, &old, &new, all) {
                // Every splice names real spans of both texts.
                for splice in &replaced.splices {
                    prop_assert!(content.get(splice.old.clone()).is_some());
                    prop_assert!(replaced.content.get(splice.new.clone()).is_some());
                }
                let diff = tackle_edit::diff::LineDiff::from_splices(
                    &content,
                    &replaced.content,
                    &replaced.splices,
                );
                let _ = diff.unified("f", 3);
            }
            Ok(())
        },
    );
}

#[test]
fn the_jsonc_configuration_reader_answers_any_file() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join(".tackle")).unwrap();
    let file = root.path().join(".tackle/config.json");
    let configish = prop_oneof![
        jsonish(),
        "[{}\\[\\]\":, /*\\n]{0,40}(permission|mcp|limits|shell|models|agents|tools)[{}\\[\\]\":, a-z0-9*/\\n]{0,80}",
    ];
    fuzz("config", configish, |text| {
        std::fs::write(&file, &text).unwrap();
        let _ = tackle_host::config::load_with_home(
            root.path(),
            None,
            None,
            &tackle_host::TrustStore::nothing(),
        );
        Ok(())
    });
}
