//! The real peers some tests run against (the MCP Python SDK, language servers, MCP hosts, the
//! MCP conformance suite), found or installed on first use into the tests' own cache.
//!
//! Each peer has an install script under `scripts/` that installs pinned versions into
//! `~/.cache/tackle-ci` (never into the system's Python) and prints where on its last line;
//! `.ci/run` runs the same scripts. A test asks [`locate`]: the peer's environment variable
//! when it is set, else the script's answer (run once per test process, under a lock, so
//! parallel tests install once). When the script fails (no network, no `npm`), the test is
//! skipped with one line on the terminal naming the script, unless `CI=true`, where it fails.
//! Every test that asks is counted, ran or skipped, in `target/tmp/peers.log`, which
//! `scripts/peer-summary.sh` sums up.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// A real program some tests run against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Peer {
    /// A Python with the MCP SDK (`mcp`): the path of its `python`.
    PythonSdk,
    /// pyright, typescript-language-server and clangd: the directory holding them.
    LanguageServers,
    /// Claude Code and codex: the directory holding `claude` and `codex`.
    Hosts,
    /// The official MCP conformance suite: the directory of its `conformance` command.
    Conformance,
}

impl Peer {
    fn script(self) -> &'static str {
        match self {
            Peer::PythonSdk => "install-test-python.sh",
            Peer::LanguageServers => "install-test-servers.sh",
            Peer::Hosts => "install-test-hosts.sh",
            Peer::Conformance => "install-conformance.sh",
        }
    }

    /// The variable that names the peer instead (`.ci/run` sets them).
    fn variable(self) -> &'static str {
        match self {
            Peer::PythonSdk => "TACKLE_TEST_PYTHON",
            Peer::LanguageServers => "TACKLE_TEST_SERVERS",
            Peer::Hosts => "TACKLE_TEST_HOSTS",
            Peer::Conformance => "TACKLE_CONFORMANCE",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Peer::PythonSdk => "the MCP Python SDK",
            Peer::LanguageServers => "the language servers",
            Peer::Hosts => "the MCP hosts (Claude Code, codex)",
            Peer::Conformance => "the MCP conformance suite",
        }
    }
}

/// A peer's place, or why it cannot be had.
type Found = (Peer, Result<PathBuf, String>);

/// Where `peer` is, installing it on first use; `None` when it cannot be had and this is not
/// CI (after saying so). `test` names the asking test in the skip line and the count.
pub(crate) fn locate(peer: Peer, test: &str) -> Option<PathBuf> {
    static FOUND: Mutex<Vec<Found>> = Mutex::new(Vec::new());
    let found = &FOUND;
    let answer = {
        let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
        match found.iter().find(|(known, _)| *known == peer) {
            Some((_, answer)) => answer.clone(),
            None => {
                let answer = find(peer);
                found.push((peer, answer.clone()));
                answer
            }
        }
    };
    match answer {
        Ok(path) => {
            count(&format!("ran\t{}\t{test}", peer.name()));
            Some(path)
        }
        Err(reason) => {
            let line = format!(
                "skipped {test}: {} unavailable ({reason}); install with scripts/{}",
                peer.name(),
                peer.script()
            );
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{line} (CI=true: real peers are required)"
            );
            // Straight to the terminal: the test harness shows captured output only on failure.
            let _ = writeln!(std::io::stderr().lock(), "tackle-test: {line}");
            count(&format!("skipped\t{}\t{test}\t{reason}", peer.name()));
            None
        }
    }
}

/// The peer from its variable, else from its install script.
fn find(peer: Peer) -> Result<PathBuf, String> {
    if let Some(value) = std::env::var_os(peer.variable()).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(value));
    }
    let scripts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts");
    let script = scripts.join(peer.script());
    let cache = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".cache/tackle-ci"))
        .ok_or("HOME is not set")?;
    std::fs::create_dir_all(&cache)
        .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    // One install at a time across test processes.
    let output = Command::new("flock")
        .arg(cache.join(".install.lock"))
        .arg(&script)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("{} failed: {last}", peer.script()));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    if last.is_empty() {
        return Err(format!("{} printed no path", peer.script()));
    }
    Ok(PathBuf::from(last.trim()))
}

/// Appends one line to the count of tests that ran against real peers or were skipped.
fn count(line: &str) {
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("peers.log");
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        // One write per line: test processes append at the same time, and `writeln!` may write
        // the line and its end separately, letting another process's line in between.
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}
