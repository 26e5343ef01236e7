//! The official MCP Python SDK (`pip install mcp`, which `.ci/run` installs) as a client of
//! `tackle serve --http`: it lists, calls (a small result and one past the output bound) and
//! ends its session without a complaint, also when the server requires a bearer token, and
//! accepts every result of a tool that declares an output schema (`serve.structuredContent`).

mod support;

use std::path::Path;
use std::process::Command;

use support::python;

/// The SDK client: lists the tools, reads a file, closes (which sends `DELETE`), and prints
/// what it saw and every warning the SDK logged.
const CLIENT: &str = r#"
import asyncio, io, logging, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

log = io.StringIO()
logging.basicConfig(stream=log, level=logging.WARNING)

async def main(url, path, big_path, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    http_client = create_mcp_http_client(headers=headers)
    async with streamable_http_client(url, http_client=http_client) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("TOOLS", len(tools.tools))
            result = await session.call_tool("read", {"filePath": path})
            print("ERROR", result.is_error)
            print("TEXT", result.content[0].text.replace("\n", " | "))
            # A result whose structured output exceeds the bound must still be valid for the SDK.
            big = await session.call_tool("read", {"filePath": big_path, "limit": 2000})
            print("BIG_ERROR", big.is_error, (big.content[0].text or "")[:80].replace("\n", " | "))

asyncio.run(main(*sys.argv[1:]))
print("LOG", log.getvalue().replace("\n", " | "))
"#;

/// The SDK client of a server whose configuration opts into `structuredContent`: it reads a
/// small file and one past the output bound. The SDK raises when a tool that declares an
/// `outputSchema` returns no structured content, or content the schema does not admit.
const STRUCTURED_CLIENT: &str = r#"
import asyncio, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main(url, path, big_path):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            schema = next(t for t in tools.tools if t.name == "read").output_schema
            print("SCHEMA", schema is not None)
            small = await session.call_tool("read", {"filePath": path})
            print("SMALL", small.is_error, sorted((small.structured_content or {}).keys()))
            big = await session.call_tool("read", {"filePath": big_path, "limit": 2000})
            print("BIG", big.is_error, sorted((big.structured_content or {}).keys()))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"#;

/// A root with `a.txt` (one line) and `big.txt` (2,000 lines, past the output bound), plus
/// `config` as its `.tackle/config.json` when given.
fn project(config: Option<&str>) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "hello from tackle\n").unwrap();
    let lines: String = (0..2000)
        .map(|i| format!("line {i} of a file larger than the bound\n"))
        .collect();
    std::fs::write(root.path().join("big.txt"), lines).unwrap();
    if let Some(config) = config {
        std::fs::create_dir(root.path().join(".tackle")).unwrap();
        std::fs::write(root.path().join(".tackle/config.json"), config).unwrap();
    }
    root
}

/// Runs the Python `client` with the URL of a `tackle serve --http` on `root` and the paths of
/// `a.txt` and `big.txt`; returns its stdout once it succeeded, or `None` when the SDK cannot
/// be had (the test is skipped).
fn run_client(root: &Path, client: &str, token: Option<&str>) -> Option<String> {
    let python = python("python_sdk")?;
    let data = tempfile::tempdir().unwrap();
    let (mut server, url) = support::serve_http(root, data.path(), token);

    let output = Command::new(python)
        .args(["-c", client, &url])
        .arg(root.join("a.txt"))
        .arg(root.join("big.txt"))
        .args(token)
        .output()
        .expect("run the SDK client");
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    Some(stdout)
}

#[test]
fn the_python_sdk_client_lists_calls_and_ends_its_session_cleanly() {
    sdk_session(None);
}

#[test]
fn the_python_sdk_client_sends_the_bearer_token_the_server_requires() {
    sdk_session(Some("sdk-0123456789abcdef0123456789"));
}

/// Runs the SDK client against a fresh server (requiring `token`, if any) and checks it.
fn sdk_session(token: Option<&str>) {
    let root = project(None);
    let Some(stdout) = run_client(root.path(), CLIENT, token) else {
        return;
    };
    let tools: usize = stdout
        .lines()
        .find_map(|line| line.strip_prefix("TOOLS "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(tools >= 10, "{stdout}");
    assert!(stdout.contains("ERROR False"), "{stdout}");
    assert!(stdout.contains("hello from tackle"), "{stdout}");
    assert!(stdout.contains("BIG_ERROR False"), "{stdout}");
    let log = stdout
        .lines()
        .find_map(|line| line.strip_prefix("LOG"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        !log.contains("Session termination failed"),
        "the SDK could not end its session: {log}"
    );
}

#[test]
fn the_python_sdk_accepts_declared_output_schemas_even_past_the_output_bound() {
    let root = project(Some(r#"{ "serve": { "structuredContent": true } }"#));
    let Some(stdout) = run_client(root.path(), STRUCTURED_CLIENT, None) else {
        return;
    };
    assert!(stdout.contains("SCHEMA True"), "{stdout}");
    assert!(stdout.contains("SMALL False ['dataBase64'"), "{stdout}");
    assert!(
        stdout.contains("BIG False ['structuredContentOmitted']"),
        "{stdout}"
    );
}
