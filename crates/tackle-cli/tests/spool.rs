//! Where `bash` spools output that outgrows memory: under the data directory, never the system
//! temp directory, and gone when a `tackle serve` session ends.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// Output larger than the 1 MiB kept in memory: 2,828,895 bytes.
const BIG: &str = "seq 1 420000";

/// `tackle` with a private HOME, data directory and temp directory.
fn tackle(root: &Path, data: &Path, tmp: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tackle"));
    command
        .arg("--root")
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .env("HOME", data)
        .env("TMPDIR", tmp)
        .env_remove("TACKLE_MODEL")
        .env_remove(tackle_mcp::DEPTH_ENV);
    command
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn call_spools_under_the_data_directory_not_the_temp_directory() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let output = tackle(root.path(), data.path(), tmp.path())
        .args([
            "call",
            "bash",
            &json!({ "command": BIG }).to_string(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    // The structured output is bounded away from the record; the spool is found on disk.
    let spools = files_under(&data.path().join("spool"));
    assert_eq!(spools.len(), 1, "{spools:?}");
    assert_eq!(
        std::fs::metadata(&spools[0]).unwrap().len(),
        2_828_895,
        "the whole output is spooled"
    );
    assert!(
        files_under(tmp.path()).is_empty(),
        "{:?}",
        files_under(tmp.path())
    );
}

#[tokio::test]
async fn a_serve_session_removes_its_spool_files_when_it_ends() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut command = tackle(root.path(), data.path(), tmp.path());
    command.args(["serve", "--yes"]);
    let transport = TokioChildProcess::new(tokio::process::Command::from(command)).unwrap();
    let client = ().serve(transport).await.expect("initialize");
    let arguments = json!({ "command": BIG });
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("bash").with_arguments(arguments))
        .await
        .expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let spools = files_under(&data.path().join("spool"));
    assert_eq!(spools.len(), 1, "{spools:?}");
    let spool = spools[0].display().to_string();
    assert!(Path::new(&spool).is_file());
    client.cancel().await.expect("close the client");
    // The server exits once the client is gone, and takes the session's spool with it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while Path::new(&spool).exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!Path::new(&spool).exists(), "{spool} outlived its session");
}
