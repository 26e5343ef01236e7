//! The registration API: name checks that reject whole records, names and identities, Location
//! precedence and isolation, one tool under several names, and guards that outlive their registry.

use std::sync::atomic::Ordering;

use tackle::{Harness, cx, tagged};
use tackle_registry::{
    AllTools, Location, ModelErrorKind, Outcome, RegistrationError, Settlement, ToolCall,
    ToolRegistry, ToolSet, Turn,
};

const GRAMMAR: &str = "^[A-Za-z][A-Za-z0-9_-]{0,63}$";

fn tag_of(s: &Settlement) -> String {
    match &s.outcome {
        Outcome::Success(output) => output.structured["tag"].as_str().unwrap().to_owned(),
        other => panic!("expected success, got {other:?}"),
    }
}

async fn call(turn: &Turn, name: &str) -> Settlement {
    turn.settle(cx("c1"), ToolCall::new(name, r#"{"text":"x"}"#))
        .await
}

/// Which tag answers `name` in a fresh turn of `location`.
async fn answer(location: &Location, name: &str) -> String {
    tag_of(&call(&location.materialize(AllTools), name).await)
}

async fn is_unknown(location: &Location, name: &str) -> bool {
    let s = call(&location.materialize(AllTools), name).await;
    matches!(&s.outcome, Outcome::Error(e) if e.kind == ModelErrorKind::Unknown)
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/// Registers `good` tools around one `bad` name and returns the error.
fn reject(registry: &ToolRegistry, bad: &str) -> RegistrationError {
    let record = ToolSet::new()
        .with("good_before", tagged("a").0)
        .with(bad, tagged("b").0)
        .with("good_after", tagged("c").0);
    registry
        .register(record)
        .expect_err("a record with a bad name is rejected")
}

// spec: LAW-SCOPED-REGISTRATION
#[test]
fn invalid_name_rejects_the_whole_record() {
    let registry = ToolRegistry::new();
    let cases = [
        (
            "1read".to_owned(),
            format!(
                "invalid tool name \"1read\": it must start with an ASCII letter; \
                 names must match {GRAMMAR}"
            ),
        ),
        (
            "read.file".to_owned(),
            format!(
                "invalid tool name \"read.file\": it may contain only ASCII letters, digits, \
                 `_` and `-`; names must match {GRAMMAR}"
            ),
        ),
        (
            "x".repeat(65),
            format!(
                "invalid tool name \"{}\": it is longer than 64 characters; names must match {GRAMMAR}",
                "x".repeat(65)
            ),
        ),
        (
            String::new(),
            format!("invalid tool name \"\": it is empty; names must match {GRAMMAR}"),
        ),
    ];
    for (bad, message) in cases {
        let error = reject(&registry, &bad);
        assert!(
            matches!(&error, RegistrationError::InvalidName { name, .. } if *name == bad),
            "{error:?}"
        );
        assert_eq!(error.to_string(), message);
        assert!(
            registry.names().is_empty(),
            "nothing from a rejected record is registered: {:?}",
            registry.names()
        );
    }
}

#[test]
fn longest_valid_name_is_accepted() {
    let registry = ToolRegistry::new();
    let name = format!("a{}", "Z9_-".repeat(15)) + "xyz";
    assert_eq!(name.len(), 64);
    let reg = registry
        .register(ToolSet::new().with(name.as_str(), tagged("a").0))
        .unwrap();
    assert_eq!(registry.names(), vec![name.clone()]);
    assert!(reg.identity(&name).is_some());
}

// spec: LAW-SCOPED-REGISTRATION
#[test]
fn duplicate_name_rejects_the_whole_record() {
    let registry = ToolRegistry::new();
    let record = ToolSet::new()
        .with("echo", tagged("a").0)
        .with("other", tagged("b").0)
        .with("echo", tagged("c").0);
    let error = registry.register(record).unwrap_err();
    assert_eq!(error, RegistrationError::DuplicateName("echo".to_owned()));
    assert_eq!(
        error.to_string(),
        "tool name \"echo\" appears more than once in one registration record"
    );
    assert!(registry.names().is_empty());
}

#[tokio::test]
async fn rejected_location_record_leaves_the_turn_unchanged() {
    let h = Harness::new();
    let location = h.location("/ws");
    let _keep = location
        .register(ToolSet::new().with("echo", tagged("kept").0))
        .unwrap();
    let before = location.materialize(AllTools);
    let error = location
        .register(
            ToolSet::new()
                .with("echo", tagged("intruder").0)
                .with("bad name", tagged("x").0),
        )
        .unwrap_err();
    assert!(matches!(error, RegistrationError::InvalidName { .. }));
    assert_eq!(answer(&location, "echo").await, "kept");
    assert_eq!(
        tag_of(&call(&before, "echo").await),
        "kept",
        "a rejected record does not make earlier turns stale"
    );
}

#[test]
fn names_are_sorted_unique_and_follow_the_guards() {
    let registry = ToolRegistry::new();
    assert!(registry.names().is_empty());
    let first = registry
        .register(
            ToolSet::new()
                .with("zeta", tagged("z").0)
                .with("alpha", tagged("a").0),
        )
        .unwrap();
    let second = registry
        .register(
            ToolSet::new()
                .with("alpha", tagged("a2").0)
                .with("mid", tagged("m").0),
        )
        .unwrap();
    assert_eq!(registry.names(), ["alpha", "mid", "zeta"]);
    drop(first);
    assert_eq!(
        registry.names(),
        ["alpha", "mid"],
        "alpha is still held by the second"
    );
    second.close();
    assert!(registry.names().is_empty());
}

#[test]
fn tool_set_lists_names_in_insertion_order() {
    let mut record: ToolSet = [("b", tagged("b").0), ("a", tagged("a").0)]
        .into_iter()
        .collect();
    record.insert("c", tagged("c").0);
    assert_eq!(record.names().collect::<Vec<_>>(), ["b", "a", "c"]);
}

// ---------------------------------------------------------------------------------------------
// Identities
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn registration_identity_is_per_name_and_matches_the_turn_and_settlement() {
    let h = Harness::new();
    let location = h.location("/ws");
    let reg = location
        .register(
            ToolSet::new()
                .with("alpha", tagged("a").0)
                .with("beta", tagged("b").0),
        )
        .unwrap();
    let alpha = reg.identity("alpha").unwrap();
    let beta = reg.identity("beta").unwrap();
    assert_ne!(alpha, beta);
    assert_eq!(reg.identity("gamma"), None);
    assert_eq!(reg.identity("Alpha"), None, "names are case-sensitive");

    let turn = location.materialize(AllTools);
    assert_eq!(turn.get("alpha").unwrap().registration(), alpha);
    assert_eq!(turn.get("beta").unwrap().registration(), beta);
    let s = call(&turn, "alpha").await;
    assert_eq!(s.registration, Some(alpha));
    assert_eq!(h.journal.records()[0].registration, Some(alpha.get()));
    assert_eq!(alpha.to_string(), format!("r{}", alpha.get()));

    // Registering the same name again mints a fresh identity.
    let again = location
        .register(ToolSet::new().with("alpha", tagged("a").0))
        .unwrap();
    let newer = again.identity("alpha").unwrap();
    assert_ne!(newer, alpha);
    assert!(newer > alpha, "identities increase");
    assert_eq!(
        location
            .materialize(AllTools)
            .get("alpha")
            .unwrap()
            .registration(),
        newer
    );
}

#[tokio::test]
async fn same_tool_value_under_two_names_gets_two_identities() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (tool, calls) = tagged("shared");
    let reg = location
        .register(
            ToolSet::new()
                .with("first", tool.clone())
                .with("second", tool),
        )
        .unwrap();
    let first = reg.identity("first").unwrap();
    let second = reg.identity("second").unwrap();
    assert_ne!(first, second);

    let turn = location.materialize(AllTools);
    let a = call(&turn, "first").await;
    let b = call(&turn, "second").await;
    assert_eq!(tag_of(&a), "shared");
    assert_eq!(tag_of(&b), "shared");
    assert_eq!(a.registration, Some(first));
    assert_eq!(b.registration, Some(second));
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // Replacing one name leaves the other's identity (and turn) valid.
    let _other = location
        .register(ToolSet::new().with("first", tagged("new").0))
        .unwrap();
    assert_eq!(tag_of(&call(&turn, "second").await), "shared");
    let stale = call(&turn, "first").await;
    assert!(matches!(&stale.outcome, Outcome::Error(e) if e.kind == ModelErrorKind::Stale));
}

// ---------------------------------------------------------------------------------------------
// Locations
// ---------------------------------------------------------------------------------------------

// spec: LAW-LOCATION-PRECEDENCE
#[tokio::test]
async fn location_registration_outranks_the_process_one_until_dropped() {
    let h = Harness::new();
    let location = h.location("/ws");
    let _process = h
        .process
        .register(ToolSet::new().with("echo", tagged("process").0))
        .unwrap();
    assert_eq!(answer(&location, "echo").await, "process");

    let local = location
        .register(ToolSet::new().with("echo", tagged("local").0))
        .unwrap();
    assert_eq!(answer(&location, "echo").await, "local");

    // A newer process registration still does not outrank the Location's.
    let _newer = h
        .process
        .register(ToolSet::new().with("echo", tagged("process-newer").0))
        .unwrap();
    assert_eq!(answer(&location, "echo").await, "local");
    assert_eq!(
        location
            .materialize(AllTools)
            .get("echo")
            .unwrap()
            .registration(),
        local.identity("echo").unwrap()
    );

    drop(local);
    assert_eq!(answer(&location, "echo").await, "process-newer");
    assert_eq!(location.tools().names(), Vec::<String>::new());
    assert_eq!(h.process.names(), ["echo"]);
}

// spec: LAW-LOCATION-PRECEDENCE
#[tokio::test]
async fn two_locations_over_one_process_registry_are_isolated() {
    let h = Harness::new();
    let a = h.location("/a");
    let b = h.location("/b");
    let _shared = h
        .process
        .register(ToolSet::new().with("shared", tagged("process").0))
        .unwrap();
    let _a_echo = a
        .register(ToolSet::new().with("echo", tagged("a").0))
        .unwrap();
    let _a_shared = a
        .register(ToolSet::new().with("shared", tagged("a-shared").0))
        .unwrap();

    assert_eq!(answer(&a, "echo").await, "a");
    assert!(is_unknown(&b, "echo").await, "b does not see a's tool");
    assert_eq!(answer(&a, "shared").await, "a-shared");
    assert_eq!(
        answer(&b, "shared").await,
        "process",
        "a's override stays in a"
    );

    let _b_echo = b
        .register(ToolSet::new().with("echo", tagged("b").0))
        .unwrap();
    assert_eq!(answer(&a, "echo").await, "a");
    assert_eq!(answer(&b, "echo").await, "b");
    assert_eq!(a.tools().names(), ["echo", "shared"]);
    assert_eq!(b.tools().names(), ["echo"]);
    assert_eq!(h.process.names(), ["shared"]);

    // A turn of a is not made stale by b's registrations.
    let turn = a.materialize(AllTools);
    let _b_more = b
        .register(ToolSet::new().with("shared", tagged("b-shared").0))
        .unwrap();
    assert_eq!(tag_of(&call(&turn, "shared").await), "a-shared");
}

#[tokio::test]
async fn location_tools_handle_registers_into_the_same_placement() {
    let h = Harness::new();
    let location = h.location("/ws");
    let plugin_view = location.tools().clone();
    let _reg = plugin_view
        .register(ToolSet::new().with("echo", tagged("plugin").0))
        .unwrap();
    assert_eq!(answer(&location, "echo").await, "plugin");
    assert!(h.process.names().is_empty());
    assert_eq!(location.root(), std::path::Path::new("/ws"));
}

// ---------------------------------------------------------------------------------------------
// Guards outliving their registry
// ---------------------------------------------------------------------------------------------

#[test]
fn guard_dropped_after_its_registry_does_not_panic() {
    let registry = ToolRegistry::new();
    let reg = registry
        .register(ToolSet::new().with("echo", tagged("a").0))
        .unwrap();
    assert_eq!(reg.identity("echo").map(|_| ()), Some(()));
    drop(registry);
    drop(reg);

    let registry = ToolRegistry::new();
    let reg = registry
        .register(ToolSet::new().with("echo", tagged("a").0))
        .unwrap();
    drop(registry);
    reg.close();
}

#[tokio::test]
async fn guard_dropped_after_its_location_does_not_panic() {
    let h = Harness::new();
    let location = h.location("/ws");
    let reg = location
        .register(ToolSet::new().with("echo", tagged("a").0))
        .unwrap();
    let turn = location.materialize(AllTools);
    drop(location);
    // The turn keeps the Location alive; the guard still removes its tool.
    drop(reg);
    let s = call(&turn, "echo").await;
    assert!(matches!(&s.outcome, Outcome::Error(e) if e.kind == ModelErrorKind::Stale));
    drop(turn);

    let location = h.location("/ws2");
    let reg = location
        .register(ToolSet::new().with("echo", tagged("a").0))
        .unwrap();
    drop(location);
    drop(reg);
}

#[test]
fn clones_of_a_registry_share_one_placement() {
    let registry = ToolRegistry::new();
    let clone = registry.clone();
    let reg = clone
        .register(ToolSet::new().with("echo", tagged("a").0))
        .unwrap();
    assert_eq!(registry.names(), ["echo"]);
    drop(clone);
    assert_eq!(
        registry.names(),
        ["echo"],
        "a live clone keeps the placement"
    );
    drop(reg);
    assert!(registry.names().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Change notifications
// ---------------------------------------------------------------------------------------------

/// Waits for `changes` a little; true when a change came.
async fn woke(changes: &mut tackle_registry::RegistryChanges) -> bool {
    tokio::time::timeout(std::time::Duration::from_secs(5), changes.changed())
        .await
        .unwrap_or(false)
}

/// True when `changes` has nothing pending right now.
async fn quiet(changes: &mut tackle_registry::RegistryChanges) -> bool {
    tokio::time::timeout(std::time::Duration::from_millis(50), changes.changed())
        .await
        .is_err()
}

#[tokio::test]
async fn location_changes_wake_on_register_and_on_dropped_guards_of_both_placements() {
    let h = Harness::new();
    let location = h.location("/ws");
    let mut changes = location.changes();
    assert!(quiet(&mut changes).await, "nothing changed yet");

    let local = location
        .register(ToolSet::new().with("echo", tagged("local").0))
        .unwrap();
    assert!(woke(&mut changes).await, "a Location registration wakes it");
    assert!(quiet(&mut changes).await, "one change, one wake-up");

    let process = h
        .process
        .register(ToolSet::new().with("other", tagged("process").0))
        .unwrap();
    assert!(woke(&mut changes).await, "a process registration wakes it");

    drop(local);
    assert!(woke(&mut changes).await, "dropping a guard wakes it");
    drop(process);
    assert!(
        woke(&mut changes).await,
        "dropping a process guard wakes it"
    );

    // A rejected record changes nothing.
    let rejected = location.register(ToolSet::new().with("bad name", tagged("x").0));
    assert!(rejected.is_err());
    assert!(
        quiet(&mut changes).await,
        "a rejected record is not a change"
    );
}

#[tokio::test]
async fn registry_changes_report_the_end_when_the_placement_is_gone() {
    let registry = ToolRegistry::new();
    let mut changes = registry.changes();
    drop(registry);
    assert!(
        !changes.changed().await,
        "no change can come from a dropped placement"
    );
}

#[tokio::test]
async fn mark_seen_folds_a_burst_of_changes_into_one_wake_up() {
    let h = Harness::new();
    let location = h.location("/ws");
    let mut changes = location.changes();
    let first = location
        .register(ToolSet::new().with("a", tagged("a").0))
        .unwrap();
    let second = location
        .register(ToolSet::new().with("b", tagged("b").0))
        .unwrap();
    drop(first);
    changes.mark_seen();
    assert!(quiet(&mut changes).await, "the burst was marked seen");
    drop(second);
    assert!(woke(&mut changes).await, "a later change still wakes it");
}
