//! `tackle serve`'s stdio wire, byte by byte: every request gets an answer (an oversized line,
//! missing or malformed params, a reused id), a line that cannot be answered closes the
//! connection, and logs to a pipe carry no colour codes.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

/// The longest a test waits for one answer.
const WAIT: Duration = Duration::from_secs(20);

/// One past the server's line limit.
const OVERSIZED: usize = tackle_mcp::MAX_LINE_BYTES + 1;

/// A `tackle serve` spoken to line by line.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    _root: TempDir,
    _data: TempDir,
}

impl Raw {
    /// Starts `tackle serve --yes` with `log` as `TACKLE_LOG` and initializes it.
    fn start(log: &str) -> Self {
        let root = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_tackle"))
            .arg("--root")
            .arg(root.path())
            .arg("--data-dir")
            .arg(data.path())
            .args(["serve", "--yes"])
            .env("HOME", data.path())
            .env("TACKLE_LOG", log)
            .env_remove("TACKLE_MODEL")
            .env_remove(tackle_mcp::DEPTH_ENV)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tackle serve");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut raw = Self {
            child,
            stdin,
            lines,
            _root: root,
            _data: data,
        };
        raw.send(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}
            }
        }));
        assert!(raw.answer(0).get("result").is_some());
        raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_bytes(&line);
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// The next message from the server, or `None` once its stdout closed; panics when
    /// nothing comes in time.
    fn next(&self) -> Option<Value> {
        match self.lines.recv_timeout(WAIT) {
            Ok(line) => Some(serde_json::from_str(&line).expect("a JSON line")),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("nothing from the server in {WAIT:?}"),
        }
    }

    /// The next answer to request `id`, skipping notifications.
    fn answer(&self, id: i64) -> Value {
        loop {
            let message = self.next().expect("an answer before stdout closed");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
            assert!(
                message.get("method").is_some(),
                "an answer to another request: {message}"
            );
        }
    }

    /// The error code of the answer to `id`.
    fn error_code(&self, id: i64) -> i64 {
        let answer = self.answer(id);
        answer["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {answer}"))
    }

    /// Closes stdin and returns everything the server wrote to stderr.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        self.child.wait().unwrap();
        stderr
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tools/call` of `read` whose line is `size` bytes long, with `head` first.
fn oversized_call(head: &str, size: usize) -> Vec<u8> {
    let mut line = head.as_bytes().to_vec();
    let tail = br#""}}}"#;
    line.resize(size - tail.len() - 1, b'a');
    line.extend_from_slice(tail);
    line.push(b'\n');
    line
}

#[test]
fn an_oversized_request_gets_an_error_for_its_id_and_the_connection_goes_on() {
    let mut raw = Raw::start("error");
    let line = oversized_call(
        r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"read","arguments":{"filePath":""#,
        OVERSIZED + 1024,
    );
    raw.send_bytes(&line);
    let answer = raw.answer(41);
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("16,777,216 bytes"), "{message}");
    // The next request is read normally.
    raw.send(&json!({"jsonrpc": "2.0", "id": 42, "method": "tools/list"}));
    assert!(raw.answer(42)["result"]["tools"].is_array());
}

#[test]
fn an_oversized_message_without_a_readable_id_closes_the_connection() {
    let mut raw = Raw::start("error");
    // The id comes after the cut, so there is nobody to answer.
    let line = oversized_call(
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read","arguments":{"filePath":""#,
        OVERSIZED + 1024,
    );
    let mut line = line[..line.len() - 2].to_vec();
    line.extend_from_slice(b",\"id\":43}\n");
    // The server may close before it has read it all.
    let _ = raw.stdin.as_mut().unwrap().write_all(&line);
    assert_eq!(
        raw.next(),
        None,
        "the server answered or kept the connection"
    );
    let stderr = raw.finish();
    assert!(stderr.contains("closing the connection"), "{stderr}");
}

/// A `tools/call` of `read` whose `filePath` is `depth` nested arrays.
fn nested_call(id: i64, depth: usize) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read","arguments":{{"filePath":{}{}}}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
    .into_bytes()
    .into_iter()
    .chain([b'\n'])
    .collect()
}

#[test]
fn a_request_nested_100000_deep_gets_an_error_for_its_id_and_the_connection_goes_on() {
    let mut raw = Raw::start("error");
    raw.send_bytes(&nested_call(51, 100_000));
    let answer = raw.answer(51);
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("more than 128 levels deep"), "{message}");
    // Just within the limit, the call reaches the tool and is refused as a bad argument.
    raw.send_bytes(&nested_call(52, 120));
    let answer = raw.answer(52);
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    raw.send(&json!({"jsonrpc": "2.0", "id": 53, "method": "tools/list"}));
    assert!(raw.answer(53)["result"]["tools"].is_array());
}

#[test]
fn tools_call_with_missing_or_malformed_params_is_invalid_params() {
    let mut raw = Raw::start("error");
    raw.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": null}));
    assert_eq!(raw.error_code(1), -32602);
    raw.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}));
    assert_eq!(raw.error_code(2), -32602);
    raw.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": 5}));
    let answer = raw.answer(3);
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("`name`"), "{message}");
    // An unknown method is still method-not-found.
    raw.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "no/such"}));
    assert_eq!(raw.error_code(4), -32601);
}

#[test]
fn a_request_reusing_the_id_of_a_running_one_is_refused() {
    let mut raw = Raw::start("error");
    let slow = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "sleep 1; echo first"}}
    });
    let quick = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "echo second"}}
    });
    raw.send(&slow);
    raw.send(&quick);
    let refused = raw.answer(7);
    assert_eq!(refused["error"]["code"], json!(-32600), "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in use"),
        "{refused}"
    );
    let first = raw.answer(7);
    let text = first["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("first"), "{first}");
    // Answered, the id is free again.
    raw.send(&quick);
    let second = raw.answer(7);
    let text = second["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("second"), "{second}");
}

#[test]
fn logs_written_to_a_pipe_carry_no_colour_codes() {
    let mut raw = Raw::start("debug");
    raw.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}));
    raw.answer(5);
    let stderr = raw.finish();
    assert!(
        stderr.contains("DEBUG") || stderr.contains("INFO"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}
