//! Did the sandbox deny this command, and what? Read after a sandboxed command ends.
//!
//! A command that hits the sandbox fails in the command's own words: `touch: cannot touch
//! '/etc/x': Permission denied`, `curl: (6) Could not resolve host`, or a process killed by
//! `SIGSYS`. The bash tool asks [`diagnose`] whether such a failure came from the sandbox, so
//! that it can tell the model so, with the path or host, and how to proceed. It weighs its
//! evidence from the most exact to the least:
//!
//! 1. **Signals.** `SIGSYS` (signal 31, or exit code 159 from a shell reporting it) means
//!    seccomp killed a process: [`Denial::Syscall`].
//! 2. **The proxy's block log.** Every refusal the network proxy recorded while the command
//!    ran is a [`Denial::Network`] with its exact host and port.
//! 3. **Errno texts with a path.** A line with `Permission denied`, `Operation not permitted`,
//!    `Read-only file system` (or `EACCES`, `EPERM`, `EROFS`) names the path in the forms the
//!    tools print: quoted (`'…'`, `‘…’`, `"…"`, `` `…` ``), after a shell's prefix (`sh: 1:
//!    cannot create /x:`, `bash: /x:`), or as a bare absolute path. When the errno line has no
//!    path (cargo's `Caused by: Permission denied (os error 13)`), up to three lines before it
//!    are read. A path is resolved against the working directory, then through the symlinks
//!    of its longest existing prefix, and reported only when it lands outside every writable
//!    root: a denied path inside one is an ordinary permission error, not the sandbox.
//! 4. **Network errors by keyword**, only when the policy restricts the network: with the
//!    network off, failed lookups (`Could not resolve host`, `EAI_AGAIN`, `ENOTFOUND`,
//!    `Temporary failure in name resolution`), `Network is unreachable` and refused connects;
//!    with an allow-list, refused connects only (lookups still work there). A connect is
//!    refused when the line says so (`Couldn't connect to server`, `connect EACCES`), or has an
//!    errno text next to `connect`, `socket` or `urlopen`, or is Python's pathless
//!    `[Errno 13] Permission denied`. The host and port are taken from the line when it names
//!    them.
//!
//! Text evidence counts only when the command failed (a non-zero exit or a signal), so output
//! that merely quotes an old error does not count; signals and the block log always count.
//! Output can be huge: only its first 64 KiB and last 256 KiB are read. Some denials leave no
//! path to find (Perl's bare `Permission denied at -e line 1.`); those are not reported,
//! rather than guessed. The answer is deduplicated and holds at most [`MAX_DENIALS`] items.

use std::collections::VecDeque;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::proxy::Blocked;

/// The most denials [`diagnose`] reports.
pub const MAX_DENIALS: usize = 5;
/// How much of the start of the output is read.
pub const SCAN_HEAD: usize = 64 * 1024;
/// How much of the end of the output is read.
pub const SCAN_TAIL: usize = 256 * 1024;
/// The most paths whose symlinks are resolved in one diagnosis (each costs a few `stat`s).
const MAX_RESOLVED: usize = 64;
/// The most path candidates taken from one line.
const MAX_PER_LINE: usize = 16;
/// How many lines before a pathless errno line may supply its path or its `connect`.
const LOOK_BACK: usize = 3;
/// The signal seccomp kills with, and the exit code a shell gives for it.
const SIGSYS: i32 = 31;

/// The sandbox policy a command ran under, as far as the diagnosis needs it.
#[derive(Clone, Copy, Debug)]
pub struct Rules<'a> {
    /// Roots where writes are allowed (absolute, canonical).
    pub writable: &'a [PathBuf],
    /// Places inside the writable roots that are read-only (`.git/hooks`, `.git/config`,
    /// `.tackle/`): a denied write there is the sandbox's too.
    pub read_only: &'a [PathBuf],
    pub network: NetworkRule,
    /// The command's working directory, to resolve relative paths seen in the output.
    pub cwd: &'a Path,
}

/// What the policy let the command reach on the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkRule {
    On,
    Off,
    /// Only through the proxy, to the hosts the allow-list names.
    AllowList,
}

/// What a command left behind.
#[derive(Clone, Copy, Debug)]
pub struct Evidence<'a> {
    /// The command's merged stdout and stderr.
    pub output: &'a str,
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// The proxy's refusals while it ran.
    pub blocked: &'a [Blocked],
}

/// One thing the sandbox denied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    /// A write to a path outside every writable root, or inside a read-only one.
    Write { path: PathBuf },
    /// A connection, to the host and port when the evidence names them.
    Network {
        host: Option<String>,
        port: Option<u16>,
    },
    /// A forbidden system call: seccomp killed a process.
    Syscall,
}

/// What the sandbox denied this command, most exact evidence first; empty when nothing shows
/// the sandbox's hand.
pub fn diagnose(rules: &Rules, evidence: &Evidence) -> Vec<Denial> {
    let mut found = Found::default();
    if evidence.signal == Some(SIGSYS) || evidence.exit_code == Some(128 + SIGSYS) {
        found.push(Denial::Syscall);
    }
    for blocked in evidence.blocked {
        found.push(Denial::Network {
            host: Some(blocked.host.clone()),
            port: Some(blocked.port),
        });
    }
    let failed = evidence.exit_code != Some(0) || evidence.signal.is_some();
    if failed {
        let mut reader = Reader {
            rules,
            exit_code: evidence.exit_code,
            resolved: 0,
            previous: VecDeque::with_capacity(LOOK_BACK),
        };
        for line in scanned_lines(evidence.output) {
            if found.is_full() {
                break;
            }
            reader.read(line, &mut found);
        }
    }
    found.finish()
}

/// The lines of the first [`SCAN_HEAD`] and last [`SCAN_TAIL`] bytes of `output`.
fn scanned_lines(output: &str) -> impl Iterator<Item = &str> {
    let (head, tail) = if output.len() <= SCAN_HEAD + SCAN_TAIL {
        (output, "")
    } else {
        let mut head_end = SCAN_HEAD;
        while !output.is_char_boundary(head_end) {
            head_end -= 1;
        }
        let mut tail_start = output.len() - SCAN_TAIL;
        while !output.is_char_boundary(tail_start) {
            tail_start += 1;
        }
        (&output[..head_end], &output[tail_start..])
    };
    head.lines().chain(tail.lines())
}

/// The denials found so far: deduplicated, at most [`MAX_DENIALS`].
#[derive(Default)]
struct Found(Vec<Denial>);

impl Found {
    fn is_full(&self) -> bool {
        self.0.len() >= MAX_DENIALS
    }

    fn push(&mut self, denial: Denial) {
        if let Denial::Network {
            host: Some(host),
            port,
        } = &denial
        {
            // A host already known, with its port or without, is not a new denial.
            let known = self.0.iter_mut().find_map(|d| match d {
                Denial::Network {
                    host: Some(h),
                    port: p,
                } if h == host && (p == port || p.is_none() || port.is_none()) => Some(p),
                _ => None,
            });
            if let Some(known_port) = known {
                if known_port.is_none() {
                    *known_port = *port;
                }
                return;
            }
        }
        if !self.is_full() && !self.0.contains(&denial) {
            self.0.push(denial);
        }
    }

    /// Drops a hostless network denial when one with a host says more.
    fn finish(mut self) -> Vec<Denial> {
        let named = self
            .0
            .iter()
            .any(|d| matches!(d, Denial::Network { host: Some(_), .. }));
        if named {
            self.0.retain(|d| {
                !matches!(
                    d,
                    Denial::Network {
                        host: None,
                        port: None
                    }
                )
            });
        }
        self.0
    }
}

macro_rules! regex {
    ($name:ident, $pattern:expr) => {
        static $name: LazyLock<Regex> =
            LazyLock::new(|| Regex::new($pattern).expect("a valid built-in pattern"));
    };
}

// Any line worth a closer look.
regex!(
    TRIGGER,
    r"(?i)permission denied|operation not permitted|read-only file system|\beacces\b|\beperm\b|\berofs\b|network is unreachable|enetunreach|could(?: not|n't) resolve host|temporary failure in name resolution|eai_again|enotfound|name or service not known|unable to resolve host|failed to lookup address|couldn't connect to server"
);
// An errno text of a refused write or connect.
regex!(
    ERRNO,
    r"(?i)permission denied|operation not permitted|read-only file system|\beacces\b|\beperm\b|\berofs\b"
);
// Words that put an errno text on the network.
regex!(
    NETWORK_CONTEXT,
    r"(?i)\bconnect|\bsocket\b|urlopen|\bsendto\b|getaddrinfo"
);
// A connect the kernel refused, in words that need no errno.
regex!(
    CONNECT_REFUSED,
    r"(?i)couldn't connect to server|connect (?:eacces|eperm)\b"
);
// A failed lookup or an unreachable network: the sandbox's doing only with the network off.
regex!(
    NETWORK_OFF,
    r"(?i)network is unreachable|enetunreach|could(?: not|n't) resolve host|temporary failure in name resolution|eai_again|enotfound|name or service not known|unable to resolve host|failed to lookup address"
);
// Python's socket errors carry no path.
regex!(
    PYTHON_PATHLESS,
    r"\[Errno (?:1|13)\] (?:Operation not permitted|Permission denied)(?:>|\)|$)"
);
// Quoted text, in the quotes tools use.
regex!(
    QUOTED,
    r#"(?:^|[^\w'])'([^']+)'|"([^"]+)"|‘([^’]+)’|“([^”]+)”|`([^`']+)[`']"#
);
// A bare absolute or ./ path.
regex!(
    BARE_PATH,
    r#"(?:^|[\s=(\[,])((?:/|\.\.?/)[^\s'"`,;:()\[\]<>]*)"#
);
// The path a shell names before its errno text: `sh: 1: cannot create /x:`, `bash: line 1: /x:`.
regex!(
    SHELL_PATH,
    r"^(?:\S*/)?(?:-?[a-z]*sh): (?:line \d+: |\d+: )?(?:cannot create |can't create )?(.+?): (?:Permission denied|Operation not permitted|Read-only file system)"
);
// zsh puts the path last: `zsh: permission denied: /x`.
regex!(
    ZSH_PATH,
    r"^zsh: (?:permission denied|read-only file system|operation not permitted): (.+)$"
);
// Where tools name a host (and maybe a port), most specific first.
regex!(
    HOST_PORT,
    r"(?x)
      Failed\ to\ connect\ to\ (?P<h1>[^\s]+)\ port\ (?P<p1>\d+)
    | connect\ to\ host\ (?P<h2>[^\s]+)\ port\ (?P<p2>\d+)
    | connect\ [A-Z]+\ (?P<h3>[0-9a-fA-F.:]+?|[\w.-]+):(?P<p3>\d+)
    | host='(?P<h4>[^']+)',\ port=(?P<p4>\d+)
    | Connecting\ to\ (?P<h5>[^\s(|]+)[^|]*\|[^|]*\|:(?P<p5>\d+)
    | [a-z][a-z0-9+.-]*://(?:[^@/\s]*@)?(?P<h6>[^/:\s'\x22]+)(?::(?P<p6>\d+))?
    | resolve\ host:\ (?P<h7>[\w.-]+)
    | resolve\ hostname\ (?P<h8>[\w.-]+)
    | host\ address\ [‘'\x22](?P<h9>[\w.-]+)
    | (?:ENOTFOUND|EAI_AGAIN|Resolving)\ (?P<h10>[\w.-]+)
    "
);

/// Reads lines one by one, remembering the last few.
struct Reader<'r, 'l> {
    rules: &'r Rules<'r>,
    exit_code: Option<i32>,
    resolved: usize,
    previous: VecDeque<&'l str>,
}

impl<'l> Reader<'_, 'l> {
    fn read(&mut self, line: &'l str, found: &mut Found) {
        if TRIGGER.is_match(line) {
            self.examine(line, found);
        }
        if self.previous.len() == LOOK_BACK {
            self.previous.pop_front();
        }
        self.previous.push_back(line);
    }

    fn examine(&mut self, line: &str, found: &mut Found) {
        let network = self.rules.network;
        if network == NetworkRule::Off && NETWORK_OFF.is_match(line) {
            return found.push(network_denial(line));
        }
        if network != NetworkRule::On && CONNECT_REFUSED.is_match(line) {
            return found.push(network_denial(line));
        }
        if !ERRNO.is_match(line) {
            return;
        }
        if NETWORK_CONTEXT.is_match(line) {
            if network != NetworkRule::On {
                found.push(network_denial(line));
            }
            return;
        }
        // Exit 126: the shell could not execute the file it names; that is not a write.
        if self.exit_code == Some(126) && (SHELL_PATH.is_match(line) || ZSH_PATH.is_match(line)) {
            return;
        }
        let candidates = self.path_candidates(line);
        if !candidates.is_empty() {
            return self.report_outside(&candidates, found);
        }
        // A pathless errno line: the lines before it say what it was about. Python names
        // the file of a failed file operation, so its pathless errno is a socket's.
        let context: Vec<&str> = self.previous.iter().rev().copied().collect();
        if let Some(before) = context.iter().find(|l| NETWORK_CONTEXT.is_match(l)) {
            if network != NetworkRule::On {
                found.push(network_denial(before));
            }
            return;
        }
        if PYTHON_PATHLESS.is_match(line) {
            if network != NetworkRule::On {
                found.push(network_denial(line));
            }
            return;
        }
        for before in context {
            let candidates = self.path_candidates(before);
            if !candidates.is_empty() {
                return self.report_outside(&candidates, found);
            }
        }
    }

    /// The texts on a line that may be paths.
    fn path_candidates<'t>(&self, line: &'t str) -> Vec<&'t str> {
        let mut candidates = Vec::new();
        for shell in [&SHELL_PATH, &ZSH_PATH] {
            if let Some(path) = shell.captures(line).and_then(|c| c.get(1)) {
                // The shell names exactly the path it could not write (its own path may lead
                // the line: `/usr/bin/bash: line 1: /x: Permission denied`).
                return vec![path.as_str()]
                    .into_iter()
                    .filter(|c| looks_like_path(c))
                    .collect();
            }
        }
        for captures in QUOTED.captures_iter(line) {
            if let Some(text) = captures.iter().skip(1).flatten().next() {
                candidates.push(text.as_str());
            }
            if candidates.len() >= MAX_PER_LINE {
                break;
            }
        }
        for captures in BARE_PATH.captures_iter(line) {
            if let Some(path) = captures.get(1) {
                candidates.push(path.as_str().trim_end_matches('.'));
            }
            if candidates.len() >= MAX_PER_LINE {
                break;
            }
        }
        candidates.retain(|c| looks_like_path(c));
        let mut unique = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            if !unique.contains(&candidate) {
                unique.push(candidate);
            }
        }
        unique.truncate(MAX_PER_LINE);
        unique
    }

    fn report_outside(&mut self, candidates: &[&str], found: &mut Found) {
        for candidate in candidates {
            if self.resolved >= MAX_RESOLVED {
                return;
            }
            self.resolved += 1;
            let path = real_path(&lexical_path(self.rules.cwd, candidate));
            let protected = self.rules.read_only.iter().any(|p| path.starts_with(p));
            if protected
                || !self
                    .rules
                    .writable
                    .iter()
                    .any(|root| path.starts_with(root))
            {
                found.push(Denial::Write { path });
            }
        }
    }
}

fn looks_like_path(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 4096
        && !text.starts_with('~')
        && !text.starts_with('<')
        && !text.starts_with('-')
        && !text.contains("://")
        && !text.chars().any(char::is_control)
}

/// `text` against `cwd`, with `.` and `..` resolved lexically.
fn lexical_path(cwd: &Path, text: &str) -> PathBuf {
    let mut path = PathBuf::new();
    for component in cwd.join(text).components() {
        match component {
            Component::ParentDir => {
                path.pop();
            }
            Component::CurDir => {}
            other => path.push(other),
        }
    }
    path
}

/// The path with the symlinks of its longest existing prefix resolved: where a write to it
/// would really land.
fn real_path(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |real, part| real.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// A network denial, with the host and port the line names.
fn network_denial(line: &str) -> Denial {
    let Some(captures) = HOST_PORT.captures(line) else {
        return Denial::Network {
            host: None,
            port: None,
        };
    };
    let pick = |names: &[&str]| names.iter().find_map(|n| captures.name(n));
    let host = pick(&["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "h10"]).map(|h| {
        h.as_str()
            .trim_matches(['[', ']'])
            .trim_end_matches('.')
            .to_ascii_lowercase()
    });
    let port = pick(&["p1", "p2", "p3", "p4", "p5", "p6"]).and_then(|p| p.as_str().parse().ok());
    Denial::Network {
        host: host.filter(|h| !h.is_empty()),
        port,
    }
}

#[cfg(test)]
mod tests;
