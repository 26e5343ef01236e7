//! Many `tackle call` processes started at once on a data directory nobody used yet: one
//! creates the journal and its schema, the others wait for it, and every call is answered and
//! journaled. SQLite refuses some of those waits at once (two processes that both read and then
//! want the write lock), which tackle must retry rather than report.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

const PROCESSES: usize = 48;
const ROUNDS: usize = 4;

fn call_read(root: &Path, data: &Path, session: usize) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_tackle"))
        .arg("--root")
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .args(["--session", &format!("s{session}"), "call", "read"])
        .arg(json!({"filePath": "a.txt"}).to_string())
        .env("HOME", data)
        .env_remove("TACKLE_MODEL")
        .env_remove(tackle_mcp::DEPTH_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn calls_started_at_once_on_a_new_data_directory_all_open_the_journal() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
    for round in 0..ROUNDS {
        let data = tempfile::tempdir().unwrap();
        let calls: Vec<_> = (0..PROCESSES)
            .map(|i| call_read(root.path(), data.path(), i))
            .collect();
        for call in calls {
            let done = call.wait_with_output().unwrap();
            assert!(
                done.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&done.stderr)
            );
        }
        let journal =
            tackle_store::SqliteJournal::open(data.path().join("journal.sqlite3")).unwrap();
        assert_eq!(journal.records().unwrap().len(), PROCESSES, "round {round}");
    }
}
