//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned and
//! installed by `scripts/install-conformance.sh`, whose directory `.ci/run` puts in
//! `TACKLE_CONFORMANCE`) against `tackle serve --http`: every scenario of a capability tackle
//! declares passes. Without the suite the test is skipped, unless `CI=true`.
//!
//! Out of scope, because they test the suite's own fixtures rather than a capability: the
//! scenarios call tools, read resources and get prompts that a reference test server defines
//! (`test_simple_text`, `test://static-text`, `test_simple_prompt`, …), which a tackle server
//! does not have and must not invent:
//! - `tools-call-*`, `json-schema-2020-12`, `elicitation-sep1034-defaults`,
//!   `elicitation-sep1330-enums`: fixture tools;
//! - `resources-read-text`, `resources-read-binary`, `resources-templates-read`: fixture
//!   resources (tackle's are per-session `tackle://` URIs, read in python_sdk_capabilities.rs);
//! - `prompts-get-simple`, `prompts-get-with-args`, `prompts-get-embedded-resource`,
//!   `prompts-get-with-image`: fixture prompts (tackle's are its skills);
//! - `resources-subscribe`, `resources-unsubscribe`, `completion-complete`: capabilities tackle
//!   does not declare (no `resources.subscribe`, no `completions`), so they answer -32601
//!   "Method not found", which `undeclared_methods_are_method_not_found` checks here.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The scenarios of what tackle declares (initialize, ping, tools, logging, resources,
/// prompts) and of its HTTP transport.
const SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
];

/// The directory of the suite's `conformance` command, or `None` (the test is skipped) when it
/// is not installed and this is not CI.
fn suite(test: &str) -> Option<PathBuf> {
    let dir = support::peers::locate(support::peers::Peer::Conformance, test)?;
    assert!(
        dir.join("conformance").exists(),
        "{} holds no `conformance`: run scripts/install-conformance.sh",
        dir.display()
    );
    Some(dir)
}

/// A project with one skill, so `prompts/list` has something to list.
fn project() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let skill = root.path().join(".tackle/skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets the user.\n---\nSay hello.\n",
    )
    .unwrap();
    root
}

/// Runs `scenario` of the suite in `dir` against `url`; returns (passed, failed, output).
fn run_scenario(dir: &Path, url: &str, scenario: &str) -> (usize, usize, String) {
    let output = Command::new(dir.join("conformance"))
        .args(["server", "--url", url, "--scenario", scenario])
        .env("NO_COLOR", "1")
        .output()
        .expect("run the conformance suite");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // "Passed: 1/1, 0 failed, 0 warnings"
    let counts = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("Passed: "))
        .and_then(|rest| {
            let (passed, rest) = rest.split_once('/')?;
            let failed = rest.split(", ").nth(1)?.strip_suffix(" failed")?;
            Some((passed.parse().ok()?, failed.parse().ok()?))
        });
    let (passed, failed) =
        counts.unwrap_or_else(|| panic!("no result line for {scenario}:\n{text}"));
    (passed, failed, text)
}

/// `tackle serve --http` on a fresh project; killed when dropped.
struct Server {
    child: std::process::Child,
    url: String,
    _root: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Server {
    let root = project();
    let data = tempfile::tempdir().unwrap();
    let (child, url) = support::serve_http(root.path(), data.path(), None);
    Server {
        child,
        url,
        _root: root,
        _data: data,
    }
}

#[test]
fn the_conformance_scenarios_of_what_tackle_declares_pass() {
    let Some(dir) = suite("conformance") else {
        return;
    };
    let server = serve();
    let mut failures = Vec::new();
    for scenario in SCENARIOS {
        let (passed, failed, text) = run_scenario(&dir, &server.url, scenario);
        if failed > 0 || passed == 0 {
            failures.push(format!(
                "{scenario}: {passed} passed, {failed} failed\n{text}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn undeclared_methods_are_method_not_found() {
    let Some(dir) = suite("conformance") else {
        return;
    };
    let server = serve();
    // The suite asks `completion/complete` although tackle declares no `completions`.
    let (_, failed, text) = run_scenario(&dir, &server.url, "completion-complete");
    assert_eq!(failed, 1, "{text}");
    assert!(text.contains("-32601: Method not found"), "{text}");
}
