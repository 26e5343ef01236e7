//! A session's saved outputs are its own: the full text behind a truncated result (a managed
//! output) and a bash spool file are readable by the session whose result named them, and
//! neither `read` nor `grep` shows them to another session of the same data directory.

mod support;

use rmcp::ServiceExt;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use support::{call, text};

async fn serve(
    root: &std::path::Path,
    data: &std::path::Path,
) -> RunningService<rmcp::RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
    command
        .arg("--root")
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .args(["serve", "--yes"])
        .env("HOME", data)
        .env_remove("TACKLE_MODEL");
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

/// The first absolute path in `text` under a directory named `dir`.
fn path_in(text: &str, dir: &str) -> String {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| c == '`' || c == '.' || c == ',' || c == ')' || c == '('))
        .find(|w| w.starts_with('/') && w.contains(dir))
        .unwrap_or_else(|| {
            panic!(
                "no path under {dir} in: {}",
                &text[text.len().saturating_sub(600)..]
            )
        })
        .to_owned()
}

#[tokio::test]
async fn another_session_can_neither_read_nor_grep_a_sessions_saved_outputs() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let lines: String = (0..20_000)
        .map(|n| format!("needle {n} secret-{n}\n"))
        .collect();
    std::fs::write(root.path().join("big.txt"), lines).unwrap();
    let owner = serve(root.path(), data.path()).await;
    let other = serve(root.path(), data.path()).await;

    // A bash output past its limit names its spool file; a batch past the bound, the managed
    // output that keeps the whole text.
    let spooled = text(&call(&owner, "bash", json!({"command": "seq 1 300000"})).await);
    let spool = path_in(&spooled, "/spool/");
    let printing = "for i in $(seq 4000); do echo needle $i secret-$i; done";
    let batch = json!({"tool_calls": [
        {"tool": "bash", "parameters": {"command": printing}},
        {"tool": "bash", "parameters": {"command": printing}},
    ]});
    let found = text(&call(&owner, "batch", batch).await);
    let managed = path_in(&found, "/tool-output/");

    for path in [&spool, &managed] {
        let mine = call(&owner, "read", json!({"filePath": path, "limit": 3})).await;
        assert_eq!(mine.is_error, Some(false), "{}", text(&mine));
        let theirs = call(&other, "read", json!({"filePath": path, "limit": 3})).await;
        assert_eq!(theirs.is_error, Some(true), "{}", text(&theirs));
        assert!(
            text(&theirs).contains("saved output of another session"),
            "{}",
            text(&theirs)
        );
    }
    let searched = call(
        &other,
        "grep",
        json!({"pattern": "secret-1999", "path": managed}),
    )
    .await;
    assert!(
        !text(&searched).contains("needle 1999"),
        "{}",
        text(&searched)
    );
    let dir = std::path::Path::new(&managed)
        .parent()
        .unwrap()
        .display()
        .to_string();
    let searched = call(
        &other,
        "grep",
        json!({"pattern": "secret-1999", "path": dir}),
    )
    .await;
    assert!(
        !text(&searched).contains("needle 1999"),
        "{}",
        text(&searched)
    );
    owner.cancel().await.unwrap();
    other.cancel().await.unwrap();
}
