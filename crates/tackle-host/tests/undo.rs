//! An embedder's undo: calls settled through a host's turns are snapshotted (on by default),
//! listed with their files, diffed between snapshots, and reverted by message or by call.

use serde_json::json;
use tackle_core::{CallIdentity, CancellationToken, Context, ToolCall};
use tackle_host::{Approvals, HostBuilder, TurnSpec, UndoOutcome, UndoTarget};

fn cx(message: &str, call: &str) -> Context {
    Context::new(
        CallIdentity::new("s", "build", message, call),
        CancellationToken::new(),
    )
}

#[tokio::test]
async fn calls_are_recorded_diffed_and_undone_by_message_and_by_call() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    let host = HostBuilder::new(root.path())
        .data_dir(data.path())
        .home(None)
        .approvals(Approvals::AllowOnce)
        .build()
        .unwrap();
    let turn = host.turn(&TurnSpec::default()).unwrap();
    let settle = |message: &'static str, call: &'static str, tool: &'static str, args| {
        host.settle(&turn, cx(message, call), ToolCall::new(tool, args))
    };
    settle(
        "m1",
        "c1",
        "write",
        json!({"filePath": "b.txt", "content": "new\n"}),
    )
    .await;
    settle("m1", "c2", "bash", json!({"command": "echo ALPHA > a.txt"})).await;
    // A read changes nothing and records nothing.
    settle("m2", "c3", "read", json!({"filePath": "a.txt"})).await;
    settle("m2", "c4", "bash", json!({"command": "echo more >> b.txt"})).await;

    let history = host.history("s").unwrap();
    let calls: Vec<&str> = history.iter().map(|h| h.change.call.as_str()).collect();
    assert_eq!(calls, ["c1", "c2", "c4"]);
    assert_eq!(history[0].files, [('A', "b.txt".to_owned(), 1, 0)]);
    let bash = &history[1].change;
    let diff = host.diff(bash);
    assert!(
        diff.contains("--- a/a.txt\n+++ b/a.txt\n") && diff.contains("-alpha\n+ALPHA\n"),
        "{diff}"
    );

    // Message m1's two calls: b.txt was changed since by c4, so it is a conflict, and nothing
    // is done (all or nothing).
    let report = host
        .undo(Some("s"), UndoTarget::Message("m1".into()), false, false)
        .await
        .unwrap();
    assert_eq!(report.outcome, UndoOutcome::Refused, "{}", report.render());
    assert_eq!(report.plan.conflicts().count(), 1);
    assert_eq!(
        std::fs::read_to_string(root.path().join("a.txt")).unwrap(),
        "ALPHA\n"
    );
    // Undo c4 alone, then m1 again: everything is as before.
    host.undo(Some("s"), UndoTarget::Call("c4".into()), false, false)
        .await
        .unwrap();
    let report = host
        .undo(Some("s"), UndoTarget::Message("m1".into()), false, false)
        .await
        .unwrap();
    assert_eq!(report.plan.conflicts().count(), 0, "{}", report.render());
    assert!(!root.path().join("b.txt").exists());
    // Since c1: every change from it on (the undos included) is reverted at once, which puts
    // back what the undos took away.
    let report = host
        .undo(Some("s"), UndoTarget::Since("c1".into()), true, false)
        .await
        .unwrap();
    assert!(report.changes.len() >= 5, "{}", report.render());
}
