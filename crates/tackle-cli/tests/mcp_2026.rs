//! MCP 2026-07-28 through the official Python SDK, which negotiates it by itself (`server/
//! discover`): `tools/list_changed` on a `subscriptions/listen` stream, permission questions as
//! `input_required` results answered by a retried call (elicitation for a 2025-11-25 client),
//! listings whose cache hints never outlive a change, and stateless HTTP, where each request is
//! a session of its own and the model is told how to edit anyway.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use support::{SILENT_SERVER, python};

/// The SDK client. `argv[1]` names the scenario, `argv[2]` the server (a URL, or a command line
/// to start over stdio), the rest are the scenario's. It prints what it saw, one fact a line.
const CLIENT: &str = r#"
import asyncio, os, signal, sys
import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

def server_of(target):
    if target.startswith("http"):
        return target
    parts = target.split("\x1f")
    return StdioServerParameters(command=parts[0], args=parts[1:], env=dict(os.environ))

def answering(decision):
    async def elicit(ctx, params):
        print("ASKED", params.message.splitlines()[0])
        return types.ElicitResult(action="accept", content={"decision": decision})
    return elicit

async def listen(target, pid_file):
    async with Client(server_of(target)) as client:
        print("VERSION", client.protocol_version)
        tools = await client.list_tools()
        print("UPSTREAM", any(t.name.startswith("up_") for t in tools.tools))
        print("TTL", tools.ttl_ms, tools.cache_scope)
        async with client.listen(tools_list_changed=True) as sub:
            print("HONORED", sub.honored.tools_list_changed)
            os.kill(int(open(pid_file).read().strip()), signal.SIGKILL)
            with anyio.fail_after(15):
                async for event in sub:
                    print("EVENT", type(event).__name__)
                    break
        tools = await client.list_tools(cache_mode="bypass")
        print("UPSTREAM", any(t.name.startswith("up_") for t in tools.tools))

async def ask(target, secret, decision, mode):
    async with Client(server_of(target), mode=mode, elicitation_callback=answering(decision)) as client:
        print("VERSION", client.protocol_version)
        result = await client.call_tool("read", {"filePath": secret})
        print("RESULT", result.is_error, result.content[0].text.splitlines()[0])

async def by_hand(target, secret):
    # The callback declares form elicitation; the rounds below are driven by hand.
    async with Client(server_of(target), elicitation_callback=answering("once")) as client:
        session = client.session
        first = await session.call_tool("read", {"filePath": secret}, allow_input_required=True)
        print("FIRST", type(first).__name__, getattr(first, "content", None))
        [(key, request)] = first.input_requests.items()
        print("REQUEST", key, request.method, request.params.mode or "form",
              request.params.requested_schema["properties"]["decision"]["enum"])
        reject = {key: {"action": "accept", "content": {"decision": "reject", "feedback": "use the copy in the project"}}}
        done = await session.call_tool("read", {"filePath": secret}, input_responses=reject,
                                       request_state=first.request_state)
        print("REJECTED", done.is_error, done.content[0].text.replace("\n", " | "))
        again = await session.call_tool("read", {"filePath": secret}, input_responses=reject,
                                        request_state=first.request_state)
        print("REUSED", again.is_error, again.content[0].text.replace("\n", " | "))
        second = await session.call_tool("read", {"filePath": secret}, allow_input_required=True)
        once = {k: {"action": "accept", "content": {"decision": "once"}} for k in second.input_requests}
        try:
            await session.call_tool("write", {"filePath": secret, "content": "x"}, input_responses=once,
                                    request_state=second.request_state)
            print("WRONG_NAME accepted")
        except Exception as error:
            print("WRONG_NAME", type(error).__name__, str(error).replace("\n", " | "))
        done = await session.call_tool("read", {"filePath": secret}, input_responses=once,
                                       request_state=second.request_state)
        print("ALLOWED", done.is_error, done.content[0].text.splitlines()[0])

async def stateless(target, path):
    async with Client(target) as client:
        print("VERSION", client.protocol_version)
        await client.call_tool("read", {"filePath": path})
        edit = {"filePath": path, "oldString": "alpha", "newString": "beta"}
        refused = await client.call_tool("edit", edit)
        print("EDIT", refused.is_error, " | ".join(c.text for c in refused.content).replace("\n", " | "))
        batch = await client.call_tool("batch", {"tool_calls": [
            {"tool": "read", "parameters": {"filePath": path}},
            {"tool": "edit", "parameters": edit},
        ]})
        print("BATCH", batch.is_error, batch.content[0].text.replace("\n", " | "))

async def trust(target, path):
    async def elicit(ctx, params):
        options = params.requested_schema["properties"]["decision"]["enum"]
        print("ASKED", options, params.message.splitlines()[0])
        return types.ElicitResult(action="accept", content={"decision": options[0]})
    async with Client(server_of(target), elicitation_callback=elicit) as client:
        print("VERSION", client.protocol_version)
        before = await client.list_tools()
        print("BEFORE", sorted(t.name for t in before.tools if t.name == "deploy"))
        result = await client.call_tool("read", {"filePath": path})
        print("RESULT", result.is_error, result.content[0].text.splitlines()[0])
        after = await client.list_tools(cache_mode="bypass")
        print("AFTER", sorted(t.name for t in after.tools if t.name == "deploy"))

async def log(target, path):
    heard = []
    async def on_log(params):
        heard.append(str(params.data))
    async with Client(server_of(target), log_level="warning", logging_callback=on_log) as client:
        print("VERSION", client.protocol_version)
        result = await client.call_tool("write", {"filePath": path, "content": "x\n"})
        print("RESULT", result.is_error)
        print("HEARD", " | ".join(heard))

scenario, rest = sys.argv[1], sys.argv[2:]
if scenario == "ask":
    rest[3] = None if rest[3] == "auto" else rest[3]
    asyncio.run(ask(rest[0], rest[1], rest[2], rest[3] or "auto"))
else:
    asyncio.run({"listen": listen, "by_hand": by_hand, "stateless": stateless, "trust": trust, "log": log}[scenario](*rest))
"#;

/// A project root, a data directory (also the home), and a directory outside the project.
struct Project {
    root: tempfile::TempDir,
    data: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let project = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        };
        std::fs::write(project.root.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(project.secret(), "the answer\n").unwrap();
        project
    }

    /// A file outside the project: reading it asks `external_directory`.
    fn secret(&self) -> PathBuf {
        self.outside.path().join("secret.txt")
    }

    /// The arguments before a subcommand.
    fn global_args(&self) -> Vec<String> {
        vec![
            "--root".into(),
            self.root.path().to_string_lossy().into_owned(),
            "--data-dir".into(),
            self.data.path().to_string_lossy().into_owned(),
        ]
    }

    /// `tackle serve` (without `--yes`) as the SDK's stdio command line.
    fn stdio(&self) -> String {
        let mut parts = vec![env!("CARGO_BIN_EXE_tackle").to_owned()];
        parts.extend(self.global_args());
        parts.push("serve".into());
        parts.join("\x1f")
    }

    /// A running `tackle serve --http` and its URL.
    fn http(&self) -> (Child, String) {
        support::serve_http(self.root.path(), self.data.path(), None)
    }

    /// Configures a second `tackle serve` as the MCP server `up`, writing its PID to the
    /// returned file, and trusts the configuration.
    fn with_upstream(&self) -> PathBuf {
        let upstream = self.data.path().join("upstream");
        std::fs::create_dir_all(&upstream).unwrap();
        let pid_file = self.data.path().join("upstream.pid");
        let script = format!(
            "echo $$ > '{}'; exec '{}' --root '{}' --data-dir '{}' serve",
            pid_file.display(),
            env!("CARGO_BIN_EXE_tackle"),
            upstream.display(),
            upstream.display(),
        );
        self.configure(
            &serde_json::json!({ "mcp": { "up": { "command": "sh", "args": ["-c", script] } } }),
        );
        pid_file
    }

    /// Writes `config` as the project's configuration and trusts it.
    fn configure(&self, config: &serde_json::Value) {
        std::fs::create_dir_all(self.root.path().join(".tackle")).unwrap();
        std::fs::write(
            self.root.path().join(".tackle/config.json"),
            config.to_string(),
        )
        .unwrap();
        let trust = Command::new(env!("CARGO_BIN_EXE_tackle"))
            .args(self.global_args())
            .arg("trust")
            .env("HOME", self.data.path())
            .output()
            .unwrap();
        assert!(trust.status.success(), "{trust:?}");
    }

    /// Runs the SDK client's `scenario`; returns its stdout once it succeeded, or `None` when
    /// the SDK cannot be had (the test is skipped).
    fn client(&self, scenario: &str, args: &[&str]) -> Option<String> {
        let python = python(&format!("mcp_2026 {scenario}"))?;
        let output = Command::new(python)
            .args(["-c", CLIENT, scenario])
            .args(args)
            .env("HOME", self.data.path())
            .env_remove("TACKLE_MODEL")
            .env_remove(tackle_mcp::DEPTH_ENV)
            .output()
            .expect("run the SDK client");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        Some(stdout)
    }
}

/// Stops a server when the test ends, whatever happened.
struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn path(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn a_2026_client_hears_tools_list_changed_through_subscriptions_listen() {
    for transport in ["stdio", "http"] {
        let project = Project::new();
        let pid_file = project.with_upstream();
        let (_server, target) = match transport {
            "http" => {
                let (server, url) = project.http();
                (Some(Stop(server)), url)
            }
            _ => (None, project.stdio()),
        };
        let Some(seen) = project.client("listen", &[&target, &path(&pid_file)]) else {
            return;
        };
        assert!(seen.contains("VERSION 2026-07-28"), "{transport}: {seen}");
        assert!(seen.contains("HONORED True"), "{transport}: {seen}");
        // The upstream's tools were listed, left when it died, and the client heard of it.
        assert!(
            seen.contains("UPSTREAM True\n") && seen.contains("EVENT ToolsListChanged"),
            "{transport}: {seen}"
        );
        let after = seen.rsplit("EVENT").next().unwrap();
        assert!(after.contains("UPSTREAM False"), "{transport}: {seen}");
    }
}

#[test]
fn a_2026_listing_may_be_cached_for_no_time_and_only_by_its_client() {
    let project = Project::new();
    let pid_file = project.with_upstream();
    let Some(seen) = project.client("listen", &[&project.stdio(), &path(&pid_file)]) else {
        return;
    };
    // Registrations change without warning (an MCP server comes and goes), so no listing is
    // fresh beyond its answer; and a listing is per agent and session, so it is private.
    assert!(seen.contains("TTL 0 private"), "{seen}");
}

#[test]
fn a_2026_client_is_asked_permission_with_input_required_and_its_answer_decides() {
    let project = Project::new();
    let secret = path(&project.secret());
    let (server, url) = project.http();
    let _server = Stop(server);
    let Some(seen) = project.client("by_hand", &[&url, &secret]) else {
        return;
    };
    assert!(seen.contains("FIRST InputRequiredResult"), "{seen}");
    assert!(
        seen.contains("REQUEST permission-1 elicitation/create form ['once', 'always', 'reject']"),
        "{seen}"
    );
    let rejected = seen.lines().find(|l| l.starts_with("REJECTED")).unwrap();
    assert!(rejected.starts_with("REJECTED True"), "{seen}");
    assert!(rejected.contains("use the copy in the project"), "{seen}");
    assert!(!rejected.contains("the answer"), "{seen}");
    // A request state is single-use.
    assert!(
        seen.contains("REUSED True This call's permission question is no longer open"),
        "{seen}"
    );
    // A retry under another tool's name is refused, and the call still waits for the right one.
    assert!(seen.contains("WRONG_NAME MCPError"), "{seen}");
    assert!(seen.contains("belongs to a call of `read`"), "{seen}");
    assert!(seen.contains("ALLOWED False      1\tthe answer"), "{seen}");
}

#[test]
fn the_sdk_answers_input_required_by_itself_over_stdio_and_http_and_a_2025_client_gets_elicitation()
{
    let project = Project::new();
    let secret = path(&project.secret());
    let (server, url) = project.http();
    let _server = Stop(server);
    let stdio = project.stdio();
    for (target, decision, mode, allowed, version) in [
        (stdio.as_str(), "once", "auto", true, "2026-07-28"),
        (stdio.as_str(), "reject", "auto", false, "2026-07-28"),
        (url.as_str(), "once", "auto", true, "2026-07-28"),
        (stdio.as_str(), "once", "legacy", true, "2025-11-25"),
        (url.as_str(), "reject", "legacy", false, "2025-11-25"),
    ] {
        let Some(seen) = project.client("ask", &[target, &secret, decision, mode]) else {
            return;
        };
        let case = format!("{decision} {mode} over {}", &target[..4]);
        assert!(
            seen.contains(&format!("VERSION {version}")),
            "{case}: {seen}"
        );
        assert!(
            seen.contains("ASKED Allow `external_directory`"),
            "{case}: {seen}"
        );
        assert!(
            seen.contains(&format!(
                "RESULT {}",
                if allowed { "False" } else { "True" }
            )),
            "{case}: {seen}"
        );
        assert_eq!(seen.contains("the answer"), allowed, "{case}: {seen}");
    }
}

#[test]
fn over_stateless_http_each_call_is_a_session_and_an_edit_is_told_to_use_batch() {
    let project = Project::new();
    let file = project.root.path().join("a.txt");
    let (server, url) = project.http();
    let _server = Stop(server);
    let Some(seen) = project.client("stateless", &[&url, &path(&file)]) else {
        return;
    };
    assert!(seen.contains("VERSION 2026-07-28"), "{seen}");
    // The read was a session of its own, so the edit is refused, and says what works.
    assert!(seen.contains("EDIT True"), "{seen}");
    assert!(seen.contains("keeps no session with tackle"), "{seen}");
    assert!(seen.contains("one `batch` call"), "{seen}");
    assert!(seen.contains("BATCH False"), "{seen}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "beta\n");
}

#[test]
fn a_2026_client_is_asked_the_trust_question_with_input_required_and_a_yes_applies() {
    let project = Project::new();
    std::fs::create_dir(project.root.path().join(".tackle")).unwrap();
    let tool = serde_json::json!({
        "name": "deploy", "description": "Deploys.",
        "input": {"type": "object", "properties": {}},
        "command": "true",
    });
    std::fs::create_dir(project.root.path().join(".tackle/tools")).unwrap();
    std::fs::write(
        project.root.path().join(".tackle/tools/deploy.json"),
        tool.to_string(),
    )
    .unwrap();
    let file = project.root.path().join("a.txt");
    for transport in ["stdio", "http"] {
        let (_server, target) = match transport {
            "http" => {
                let (server, url) = project.http();
                (Some(Stop(server)), url)
            }
            _ => (None, project.stdio()),
        };
        let Some(seen) = project.client("trust", &[&target, &path(&file)]) else {
            return;
        };
        match transport {
            // The first run asks, and the yes is recorded for the project.
            "stdio" => {
                assert!(seen.contains("ASKED ['trust', 'ignore']"), "{seen}");
                assert!(seen.contains("BEFORE []"), "{seen}");
            }
            // Trusted since: nothing to ask.
            _ => assert!(!seen.contains("ASKED"), "{transport}: {seen}"),
        }
        assert!(seen.contains("VERSION 2026-07-28"), "{transport}: {seen}");
        assert!(
            seen.contains("RESULT False      1\talpha"),
            "{transport}: {seen}"
        );
        assert!(seen.contains("AFTER ['deploy']"), "{transport}: {seen}");
    }
}

#[test]
fn a_2026_request_that_names_a_log_level_hears_the_warnings_of_its_call() {
    let project = Project::new();
    let script = project.root.path().join(".tackle/silent.py");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, SILENT_SERVER).unwrap();
    let config = serde_json::json!({
        "lsp": {"quiet": {"command": ["python3", path(&script), "answers"], "extensions": [".yy"]}},
        "diagnostics": {"waitMs": 500},
    });
    project.configure(&config);
    for transport in ["stdio", "http"] {
        // A new file each time: writing over one needs a read first.
        let name = format!("{transport}.yy");
        let file = project.root.path().join(&name);
        let (_server, target) = match transport {
            "http" => {
                let (server, url) = project.http();
                (Some(Stop(server)), url)
            }
            _ => (None, project.stdio()),
        };
        let Some(seen) = project.client("log", &[&target, &path(&file)]) else {
            return;
        };
        assert!(seen.contains("VERSION 2026-07-28"), "{transport}: {seen}");
        assert!(
            seen.contains(&format!(
                "The quiet language server did not report on {name} within 0.5 s"
            )),
            "{transport}: {seen}"
        );
    }
}
