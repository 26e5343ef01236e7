//! What `tackle serve --http` offers an MCP client besides tools, through the official MCP
//! Python SDK (`pip install mcp`, which `.ci/run` installs): the full output behind a truncated
//! result as a `tackle://` resource its session lists and reads and no other session sees,
//! skills as prompts, and the server's warnings as log messages at or above the level each
//! client set.

mod support;

use std::path::Path;
use std::process::{Child, Command};

use support::python;

/// Two sessions of one server. The first runs a command whose output is past the output bound
/// (its middle is cut), lists its resources and reads the saved output; the second lists its own and tries to read the
/// first's by URI.
const RESOURCES_CLIENT: &str = r#"
import asyncio, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main(url):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as first:
            await first.initialize()
            result = await first.call_tool(
                "bash", {"command": "seq 1 5000", "description": "Print 5,000 numbers"})
            print("TRUNCATED", "omitted" in result.content[-1].text,
                  "\n2500\n" in result.content[-1].text)
            listed = await first.list_resources()
            outputs = [r for r in listed.resources if r.uri.startswith("tackle://output/")]
            print("FIRST_LISTS", len(outputs))
            uri = outputs[0].uri
            print("SIZE", outputs[0].size)
            contents = await first.read_resource(uri)
            text = contents.contents[0].text
            print("WHOLE", all(f"\n{n}\n" in text for n in range(2, 5001)))
            async with streamable_http_client(url) as (read2, write2):
                async with ClientSession(read2, write2) as second:
                    await second.initialize()
                    others = await second.list_resources()
                    print("SECOND_LISTS", len(others.resources))
                    try:
                        await second.read_resource(uri)
                        print("SECOND_READ allowed")
                    except Exception as error:
                        print("SECOND_READ", getattr(error, "error", error))
            try:
                await first.read_resource("tackle://output/0000")
            except Exception as error:
                print("UNKNOWN", getattr(error, "error", error))

asyncio.run(main(*sys.argv[1:]))
"#;

/// Lists the prompts and gets the skill with a request.
const PROMPTS_CLIENT: &str = r#"
import asyncio, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main(url):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            prompts = await session.list_prompts()
            for prompt in prompts.prompts:
                print("PROMPT", prompt.name, "|", prompt.description, "|",
                      [a.name for a in prompt.arguments or []])
            got = await session.get_prompt("greet", {"request": "I am Bob."})
            message = got.messages[0]
            print("ROLE", message.role)
            print("TEXT", message.content.text.replace("\n", " | "))

asyncio.run(main(*sys.argv[1:]))
"#;

/// Two sessions set different levels, then each makes a call; prints the log messages each got.
const LOGGING_CLIENT: &str = r#"
import asyncio, sys, warnings
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

warnings.simplefilter("ignore")

async def session(url, level, path, name):
    got = []
    async def on_log(params):
        got.append(params)
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as s:
            await s.initialize()
            if level:
                await s.set_logging_level(level)
            await s.call_tool("read", {"filePath": path})
            await asyncio.sleep(0.5)
    for params in got:
        print(name, params.level, params.logger, str(params.data).replace("\n", " "))
    print(name, "COUNT", len(got))

async def main(url, path):
    await session(url, "warning", path, "WARNING_LEVEL")
    await session(url, "error", path, "ERROR_LEVEL")
    await session(url, None, path, "NO_LEVEL")

asyncio.run(main(*sys.argv[1:]))
"#;

/// A root with `a.txt` and the skill `greet`.
fn project() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "hello from tackle\n").unwrap();
    let skill = root.path().join(".tackle/skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets the user warmly.\n---\nSay hello to the user by \
         name.\n",
    )
    .unwrap();
    root
}

/// `tackle serve --http` on `root`; killed when dropped.
struct Server {
    child: Child,
    url: String,
    _data: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(root: &Path) -> Server {
    let data = tempfile::tempdir().unwrap();
    let (child, url) = support::serve_http(root, data.path(), None);
    Server {
        child,
        url,
        _data: data,
    }
}

/// Runs the Python `client` with `args`; its stdout once it succeeded.
fn run_client(python: &Path, client: &str, args: &[&str]) -> String {
    let output = Command::new(python)
        .args(["-c", client])
        .args(args)
        .output()
        .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    stdout
}

#[test]
fn a_truncated_results_full_output_is_a_resource_of_its_session_only() {
    let Some(python) = python("a_truncated_results_full_output_is_a_resource_of_its_session_only")
    else {
        return;
    };
    let root = project();
    let server = serve(root.path());
    let stdout = run_client(&python, RESOURCES_CLIENT, &[&server.url]);
    // The model read the head and the tail of the output, not the middle.
    assert!(stdout.contains("TRUNCATED True False"), "{stdout}");
    assert!(stdout.contains("FIRST_LISTS 1"), "{stdout}");
    // The resource is the whole output the model saw cut.
    assert!(stdout.contains("WHOLE True"), "{stdout}");
    // Another session neither lists nor reads it: it reads as not found.
    assert!(stdout.contains("SECOND_LISTS 0"), "{stdout}");
    let refused = stdout
        .lines()
        .find(|line| line.starts_with("SECOND_READ"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(refused.contains("-32002"), "{stdout}");
    assert!(refused.contains("Resource not found"), "{stdout}");
    let unknown = stdout
        .lines()
        .find(|line| line.starts_with("UNKNOWN"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(unknown.contains("-32002"), "{stdout}");
}

#[test]
fn skills_are_listed_as_prompts_and_get_returns_the_skill_as_a_user_message() {
    let Some(python) =
        python("skills_are_listed_as_prompts_and_get_returns_the_skill_as_a_user_message")
    else {
        return;
    };
    let root = project();
    let server = serve(root.path());
    let stdout = run_client(&python, PROMPTS_CLIENT, &[&server.url]);
    assert!(
        stdout.contains("PROMPT greet | Greets the user warmly. | ['request']"),
        "{stdout}"
    );
    assert!(stdout.contains("ROLE user"), "{stdout}");
    assert!(
        stdout.contains(
            "TEXT <skill name=\"greet\" dir=\".tackle/skills/greet\"> | Say hello to the user by name."
        ),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("| I am Bob."), "{stdout}");
}

#[test]
fn warnings_reach_clients_as_log_messages_at_or_above_their_level() {
    let Some(python) = python("warnings_reach_clients_as_log_messages_at_or_above_their_level")
    else {
        return;
    };
    let root = project();
    // The project's configuration waits for trust, so the server warns that it ignored it (at
    // its start, for everyone) and each session's first call warns that session again.
    std::fs::write(
        root.path().join(".tackle/config.json"),
        r#"{ "mcp": { "missing": { "command": "/nonexistent/mcp-server" } } }"#,
    )
    .unwrap();
    let server = serve(root.path());
    let a = root.path().join("a.txt");
    let stdout = run_client(&python, LOGGING_CLIENT, &[&server.url, a.to_str().unwrap()]);
    let lines = |name: &str| -> Vec<&str> {
        stdout
            .lines()
            .filter(|line| line.starts_with(&format!("{name} warning tackle")))
            .collect()
    };
    // The start's warning (sent when the level is set) and the session's own.
    let warned = lines("WARNING_LEVEL");
    assert_eq!(warned.len(), 2, "{stdout}");
    assert!(
        warned
            .iter()
            .all(|l| l.contains("configuration is not trusted")),
        "{stdout}"
    );
    // Nothing below the level set, and nothing without a level.
    assert!(stdout.contains("ERROR_LEVEL COUNT 0"), "{stdout}");
    assert!(stdout.contains("NO_LEVEL COUNT 0"), "{stdout}");
}
