//! Tests of doom-loop fingerprints and streak detection.

use serde_json::json;

use super::*;

#[test]
fn canonical_json_sorts_keys_at_every_depth() {
    let cases = [
        (json!({"b": 1, "a": 2}), r#"{"a":2,"b":1}"#),
        (
            json!({"z": {"y": [1, {"d": null, "c": true}], "x": "s"}}),
            r#"{"z":{"x":"s","y":[1,{"c":true,"d":null}]}}"#,
        ),
        (json!([3, 1, 2]), "[3,1,2]"),
        (json!("quote\"d"), r#""quote\"d""#),
        (json!({"k\"ey": 1.5}), r#"{"k\"ey":1.5}"#),
        (json!({}), "{}"),
    ];
    for (value, expected) in cases {
        assert_eq!(canonical_json(&value), expected);
    }
}

#[test]
fn fingerprint_ignores_key_order_but_not_values_or_tool() {
    let a = fingerprint("edit", &json!({"b": 1, "a": 2}));
    assert_eq!(a, fingerprint("edit", &json!({"a": 2, "b": 1})));
    assert_ne!(a, fingerprint("edit", &json!({"a": 2, "b": 2})));
    assert_ne!(a, fingerprint("write", &json!({"a": 2, "b": 1})));
    // Array order is meaningful.
    assert_ne!(
        fingerprint("t", &json!({"x": [1, 2]})),
        fingerprint("t", &json!({"x": [2, 1]}))
    );
}

/// One call: session, tool, arguments.
type Call<'a> = (&'a str, &'a str, Value);

/// A scenario: name, threshold, calls, and the `repeats` expected per call.
type Case<'a> = (&'a str, usize, Vec<Call<'a>>, Vec<Option<usize>>);

/// Streaks per session, as a host keeps them.
#[derive(Default)]
struct DoomLoopDetector {
    threshold: usize,
    sessions: std::collections::HashMap<String, Streak>,
}

impl DoomLoopDetector {
    fn new() -> Self {
        Self::with_threshold(DEFAULT_DOOM_LOOP_THRESHOLD)
    }

    fn with_threshold(threshold: usize) -> Self {
        Self {
            threshold,
            sessions: Default::default(),
        }
    }

    fn observe(&mut self, session: &str, tool: &str, args: &Value) -> Option<DoomLoop> {
        let threshold = self.threshold;
        self.sessions
            .entry(session.to_owned())
            .or_default()
            .observe(tool, args, threshold)
    }

    fn repeats(&self, session: &str) -> usize {
        self.sessions.get(session).map_or(0, Streak::repeats)
    }
}

/// Feeds `calls` (session, tool, arguments) and returns the `repeats` reported per call.
fn run(detector: &mut DoomLoopDetector, calls: &[Call<'_>]) -> Vec<Option<usize>> {
    calls
        .iter()
        .map(|(session, tool, args)| {
            detector
                .observe(session, tool, args)
                .map(|found| found.repeats)
        })
        .collect()
}

#[test]
fn streak_table() {
    let read = || json!({"filePath": "/a", "limit": 10});
    let read_reordered = || json!({"limit": 10, "filePath": "/a"});
    let other = || json!({"filePath": "/b"});
    // (name, threshold, calls, expected reports)
    let cases: Vec<Case<'_>> = vec![
        (
            "third identical call fires",
            3,
            vec![
                ("s", "read", read()),
                ("s", "read", read()),
                ("s", "read", read()),
            ],
            vec![None, None, Some(3)],
        ),
        (
            "key order is irrelevant",
            3,
            vec![
                ("s", "read", read()),
                ("s", "read", read_reordered()),
                ("s", "read", read()),
            ],
            vec![None, None, Some(3)],
        ),
        (
            "an interleaved different call resets",
            3,
            vec![
                ("s", "read", read()),
                ("s", "read", read()),
                ("s", "read", other()),
                ("s", "read", read()),
                ("s", "read", read()),
                ("s", "read", read()),
            ],
            vec![None, None, None, None, None, Some(3)],
        ),
        (
            "same arguments on another tool reset",
            3,
            vec![
                ("s", "read", read()),
                ("s", "read", read()),
                ("s", "grep", read()),
                ("s", "read", read()),
            ],
            vec![None, None, None, None],
        ),
        (
            "sessions are independent",
            3,
            vec![
                ("s1", "read", read()),
                ("s2", "read", read()),
                ("s1", "read", read()),
                ("s2", "read", other()),
                ("s1", "read", read()),
            ],
            vec![None, None, None, None, Some(3)],
        ),
        (
            "later identical calls keep firing",
            3,
            vec![
                ("s", "bash", json!({"command": "ls"})),
                ("s", "bash", json!({"command": "ls"})),
                ("s", "bash", json!({"command": "ls"})),
                ("s", "bash", json!({"command": "ls"})),
            ],
            vec![None, None, Some(3), Some(4)],
        ),
        (
            "threshold two",
            2,
            vec![("s", "read", read()), ("s", "read", read())],
            vec![None, Some(2)],
        ),
        (
            "threshold five",
            5,
            vec![
                ("s", "read", read()),
                ("s", "read", read()),
                ("s", "read", read()),
                ("s", "read", read()),
                ("s", "read", read()),
            ],
            vec![None, None, None, None, Some(5)],
        ),
        (
            "threshold zero is clamped to one",
            0,
            vec![("s", "read", read())],
            vec![Some(1)],
        ),
    ];
    for (name, threshold, calls, expected) in cases {
        let mut detector = DoomLoopDetector::with_threshold(threshold);
        assert_eq!(run(&mut detector, &calls), expected, "{name}");
    }
}

#[test]
fn report_names_the_request() {
    let mut detector = DoomLoopDetector::new();
    let args = json!({"filePath": "x", "oldString": "a", "newString": "b"});
    assert!(detector.observe("s", "edit", &args).is_none());
    assert!(detector.observe("s", "edit", &args).is_none());
    let found = detector
        .observe("s", "edit", &args)
        .expect("third call fires");
    assert_eq!(found.tool, "edit");
    assert_eq!(found.repeats, 3);
    assert_eq!(found.fingerprint, fingerprint("edit", &args));
    assert_eq!(found.permission(), "doom_loop");
    assert_eq!(found.pattern(), "edit");
}

#[test]
fn sessions_have_their_own_streaks_and_a_streak_round_trips_through_json() {
    let mut detector = DoomLoopDetector::new();
    let args = json!({});
    detector.observe("s", "list", &args);
    detector.observe("s", "list", &args);
    detector.observe("other", "list", &args);
    assert_eq!(detector.repeats("s"), 2);
    assert_eq!(detector.repeats("other"), 1);
    let kept = serde_json::to_string(&detector.sessions["s"]).unwrap();
    let mut restored: Streak = serde_json::from_str(&kept).unwrap();
    assert_eq!(restored.repeats(), 2);
    assert!(restored.observe("list", &args, 3).is_some());
}
