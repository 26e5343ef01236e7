//! No lost update across processes: 64 `tackle call edit` processes, each in its own session
//! after its own read, each changing a different line of one file, 20 times over; and two
//! `tackle serve` processes on one root taking concurrent edits from their clients. Every edit
//! reported done is in the file; every refusal says the file changed.

mod support;

use std::path::Path;
use std::process::Command;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use support::{call, text};

const LINES: usize = 64;
const ROUNDS: usize = 20;

fn original() -> String {
    (0..LINES).map(|i| format!("line {i}\n")).collect()
}

fn tackle(root: &Path, data: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tackle"));
    command
        .arg("--root")
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .env("HOME", data)
        .env_remove("TACKLE_MODEL")
        .env_remove(tackle_mcp::DEPTH_ENV)
        .stdin(std::process::Stdio::null());
    command
}

/// Checks one round: every success is in the file, every refusal says the file changed, and
/// lines nobody reported stay as they were.
fn check_round(round: usize, file: &str, outcomes: &[(usize, bool, String)]) -> usize {
    let mut successes = 0;
    for (line, ok, output) in outcomes {
        let changed = format!("LINE {line} changed\n");
        if *ok {
            successes += 1;
            assert!(
                file.contains(&changed),
                "round {round}: the edit of line {line} was reported done but is not in the file"
            );
        } else {
            assert!(
                output.contains("changed since") || output.contains("changed on disk"),
                "round {round}: line {line} failed for another reason: {output}"
            );
            assert!(
                file.contains(&format!("line {line}\n")),
                "round {round}: line {line}"
            );
        }
    }
    successes
}

#[test]
fn sixty_four_edit_processes_lose_no_update() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let file = root.path().join("f.txt");
    std::fs::write(&file, original()).unwrap();
    // Each session reads the original once; every round restores it, so the reads stay fresh.
    let reads: Vec<_> = (0..LINES)
        .map(|i| {
            tackle(root.path(), data.path())
                .args(["--session", &format!("s{i}"), "call", "read"])
                .arg(json!({"filePath": "f.txt"}).to_string())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut read in reads {
        assert!(read.wait().unwrap().success());
    }
    let mut total = 0;
    for round in 0..ROUNDS {
        std::fs::write(&file, original()).unwrap();
        let edits: Vec<_> = (0..LINES)
            .map(|i| {
                let args = json!({
                    "filePath": "f.txt",
                    "oldString": format!("line {i}\n"),
                    "newString": format!("LINE {i} changed\n"),
                });
                // `--yes`: every round repeats the same edit, which the doom-loop check asks
                // about from the third round on.
                let child = tackle(root.path(), data.path())
                    .args(["--session", &format!("s{i}"), "call", "edit"])
                    .arg(args.to_string())
                    .arg("--yes")
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (i, child)
            })
            .collect();
        let outcomes: Vec<(usize, bool, String)> = edits
            .into_iter()
            .map(|(i, child)| {
                let output = child.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&output.stdout).into_owned();
                (i, output.status.success(), text)
            })
            .collect();
        let after = std::fs::read_to_string(&file).unwrap();
        total += check_round(round, &after, &outcomes);
    }
    assert!(
        total >= ROUNDS,
        "at least one edit per round lands ({total})"
    );
}

#[tokio::test]
async fn two_servers_on_one_root_lose_no_update() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let file = root.path().join("f.txt");
    for round in 0..ROUNDS {
        std::fs::write(&file, original()).unwrap();
        let mut clients = Vec::new();
        for _ in 0..2 {
            let mut command = tokio::process::Command::from(tackle(root.path(), data.path()));
            command.args(["serve", "--yes"]);
            let client =
                ().serve(TokioChildProcess::new(command).unwrap())
                    .await
                    .expect("initialize");
            let read = call(&client, "read", json!({"filePath": "f.txt"})).await;
            assert_ne!(read.is_error, Some(true), "{read:?}");
            clients.push(client);
        }
        // Each server's client edits half of the lines, all at once.
        let calls = (0..LINES).map(|i| {
            let client = &clients[i % 2];
            async move {
                let args = json!({
                    "filePath": "f.txt",
                    "oldString": format!("line {i}\n"),
                    "newString": format!("LINE {i} changed\n"),
                });
                let result = call(client, "edit", args).await;
                (i, result.is_error != Some(true), text(&result))
            }
        });
        let outcomes = futures_util::future::join_all(calls).await;
        let after = std::fs::read_to_string(&file).unwrap();
        check_round(round, &after, &outcomes);
        for client in clients {
            client.cancel().await.unwrap();
        }
    }
}
