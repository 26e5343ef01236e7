//! An embedder's background jobs: they belong to the session that started it (another session
//! neither sees nor reaches them), end with that session, and dropping the `Host` kills the rest.

use std::time::{Duration, Instant};

use serde_json::json;
use tackle_core::{CallIdentity, CancellationToken, Context, Settlement, ToolCall};
use tackle_host::{Approvals, HostBuilder, TurnSpec};

fn cx(session: &str, call: &str) -> Context {
    Context::new(
        CallIdentity::new(session, "build", "m", call),
        CancellationToken::new(),
    )
}

fn text(settlement: &Settlement) -> (bool, String) {
    let result = settlement
        .model_result()
        .unwrap_or_else(|| panic!("{}: {:?}", settlement.tool, settlement.outcome));
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("\n");
    (!result.is_error, text)
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

fn pid_of(started: &str) -> i32 {
    started
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {started}"))
}

async fn gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    !alive(pid)
}

#[tokio::test]
async fn jobs_are_private_to_their_session_end_with_it_and_die_with_the_host() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let host = HostBuilder::new(root.path())
        .data_dir(data.path())
        .home(None)
        .approvals(Approvals::AllowOnce)
        .build()
        .unwrap();
    let turn = host.turn(&TurnSpec::default()).unwrap();
    let start = |session: &'static str, call: &'static str, seconds: u32| {
        host.settle(
            &turn,
            cx(session, call),
            ToolCall::new(
                "bash",
                json!({"command": format!("exec sleep {seconds}"), "runInBackground": true}),
            ),
        )
    };
    let (ok, a) = text(&start("a", "c1", 901).await);
    assert!(ok, "{a}");
    let (_, b) = text(&start("b", "c2", 902).await);
    let (a_pid, b_pid) = (pid_of(&a), pid_of(&b));

    // Session b neither lists nor reaches a's job.
    let listed = host
        .settle(
            &turn,
            cx("b", "c3"),
            ToolCall::new("bash_output", json!({})),
        )
        .await;
    let (_, listed) = text(&listed);
    assert!(
        listed.contains("job-2") && !listed.contains("job-1"),
        "{listed}"
    );
    let reach = host
        .settle(
            &turn,
            cx("b", "c4"),
            ToolCall::new("bash_kill", json!({"jobId": "job-1"})),
        )
        .await;
    let (ok, refused) = text(&reach);
    assert!(
        !ok && refused.contains("no background job `job-1` in this session"),
        "{refused}"
    );
    assert!(alive(a_pid));

    // Session a ends: its job goes, b's stays.
    (host.session_end())("a");
    assert!(gone(a_pid).await, "a's job outlived its session");
    assert!(alive(b_pid));

    // Input and a kill, each under its own call.
    let (ok, _) = text(
        &host
            .settle(
                &turn,
                cx("b", "c5"),
                ToolCall::new("bash_input", json!({"jobId": "job-2", "text": "hi\n"})),
            )
            .await,
    );
    assert!(ok);

    // The host is dropped: b's job goes.
    drop(turn);
    drop(host);
    assert!(gone(b_pid).await, "a job outlived the host");

    // The journal's job log has every start, input, kill and end under its call's identity.
    let log = tackle_store::SqliteJobLog::open(data.path().join("journal.sqlite3")).unwrap();
    let events = |session: &str| -> Vec<(String, String, String)> {
        log.events(session)
            .unwrap()
            .into_iter()
            .map(|row| (row.call, row.job, row.event))
            .collect()
    };
    let own =
        |call: &str, job: &str, event: &str| (call.to_owned(), job.to_owned(), event.to_owned());
    assert_eq!(
        events("a"),
        [own("c1", "job-1", "started"), own("c1", "job-1", "ended")]
    );
    let b = events("b");
    assert_eq!(
        b[..2],
        [own("c2", "job-2", "started"), own("c5", "job-2", "input")]
    );
    // Dropped with the host: the end is logged when the waiter saw it, if it did before exit.
    assert!(b.len() <= 3);
}
