//! Tests of the denial reader: each tool's words for a denied write or connect, the evidence
//! order, the writable-root rule (with a proptest), the bounded scan, and denials produced by
//! a real Landlock ruleset on this machine.
//!
//! The quoted outputs were produced on this machine (Debian 12, as root) by running each
//! command under a Landlock ruleset that allowed writes only below the working directory and
//! TCP connects to no port (applied with Python's ctypes, then exec), and, for the network
//! off, under `unshare --user --map-root-user --net`.

mod live;

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::proxy::{BlockReason, Blocked};

fn deep() -> bool {
    std::env::var_os("TACKLE_DEEP").is_some()
}

/// A workspace that exists, so paths in it resolve to themselves.
struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn workspace() -> Workspace {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    Workspace { _dir: dir, root }
}

fn read(ws: &Workspace, network: NetworkRule, output: &str, exit_code: i32) -> Vec<Denial> {
    let writable = [ws.root.clone()];
    let rules = Rules {
        writable: &writable,
        read_only: &[],
        network,
        cwd: &ws.root,
    };
    let evidence = Evidence {
        output,
        exit_code: Some(exit_code),
        signal: None,
        blocked: &[],
    };
    diagnose(&rules, &evidence)
}

fn write(path: impl AsRef<Path>) -> Denial {
    Denial::Write {
        path: path.as_ref().to_path_buf(),
    }
}

fn network(host: Option<&str>, port: Option<u16>) -> Denial {
    Denial::Network {
        host: host.map(str::to_owned),
        port,
    }
}

/// Each tool's denied write, as it printed it, and the path it names.
const WRITE_FORMS: &[(&str, &str)] = &[
    ("sh: 1: cannot create /etc/x: Permission denied", "/etc/x"),
    ("bash: /etc/x: Permission denied", "/etc/x"),
    ("bash: line 1: /etc/x: Permission denied", "/etc/x"),
    ("touch: cannot touch '/etc/x': Permission denied", "/etc/x"),
    (
        "mkdir: cannot create directory ‘/etc/d’: Permission denied",
        "/etc/d",
    ),
    (
        "cp: cannot create regular file '/etc/ok.txt': Permission denied",
        "/etc/ok.txt",
    ),
    (
        "mv: cannot move 'ok.txt' to '/etc/ok.txt': Permission denied",
        "/etc/ok.txt",
    ),
    (
        "rm: cannot remove '/etc/hostname': Permission denied",
        "/etc/hostname",
    ),
    (
        "touch: cannot touch '/etc/x': Read-only file system",
        "/etc/x",
    ),
    (
        "touch: cannot touch '/etc/x': Operation not permitted",
        "/etc/x",
    ),
    (
        "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nPermissionError: [Errno 13] Permission denied: '/etc/x'",
        "/etc/x",
    ),
    (
        "Cannot open /etc/x: Permission denied at -e line 1.",
        "/etc/x",
    ),
    (
        "fatal: Unable to create '/opt/repo/.git/index.lock': Permission denied",
        "/opt/repo/.git/index.lock",
    ),
    (
        "fatal: cannot mkdir /etc/newrepo: Permission denied",
        "/etc/newrepo",
    ),
    (
        "fatal: could not open '/opt/repo/.git/COMMIT_EDITMSG' for writing: Permission denied",
        "/opt/repo/.git/COMMIT_EDITMSG",
    ),
    (
        "npm error code EACCES\nnpm error syscall mkdir\nnpm error path /etc/npmx\nnpm error errno -13\nnpm error Error: EACCES: permission denied, mkdir '/etc/npmx'\nnpm error     at async mkdir (node:internal/fs/promises:856:10)",
        "/etc/npmx",
    ),
    (
        "node:fs:2380\n    return binding.writeFileUtf8(\n                   ^\n\nError: EACCES: permission denied, open '/etc/x'\n    at Object.writeFileSync (node:fs:2380:20)",
        "/etc/x",
    ),
    (
        "error: failed to create package `foo` at `/etc/foo`\n\nCaused by:\n  failed to create directory `/etc/foo`\n\nCaused by:\n  Permission denied (os error 13)",
        "/etc/foo",
    ),
    ("zsh: permission denied: /etc/x", "/etc/x"),
    ("Error: couldn't write '/etc/out': EROFS", "/etc/out"),
];

#[test]
fn each_tool_s_denied_write_outside_the_workspace_names_its_path() {
    let ws = workspace();
    for (output, path) in WRITE_FORMS {
        assert_eq!(
            read(&ws, NetworkRule::On, output, 1),
            [write(path)],
            "{output}"
        );
    }
}

#[test]
fn the_same_errors_inside_a_writable_root_are_not_the_sandbox() {
    let ws = workspace();
    for (output, path) in WRITE_FORMS {
        let inside = ws.root.join("sub").join(path.trim_start_matches('/'));
        let output = output.replace(path, &inside.to_string_lossy());
        assert_eq!(read(&ws, NetworkRule::Off, &output, 1), [], "{output}");
    }
    let relative = "touch: cannot touch 'build/out.txt': Permission denied\n\
                    bash: ./x: Permission denied\nsh: 1: cannot create y: Permission denied";
    assert_eq!(read(&ws, NetworkRule::On, relative, 1), []);
}

#[test]
fn a_relative_path_is_resolved_against_the_working_directory() {
    let ws = workspace();
    let output = "touch: cannot touch '../../outside/x': Permission denied";
    let expected = ws
        .root
        .parent()
        .and_then(Path::parent)
        .expect("two up")
        .join("outside/x");
    assert_eq!(read(&ws, NetworkRule::On, output, 1), [write(expected)]);
}

#[test]
fn a_symlink_in_the_workspace_that_points_out_is_reported_at_its_target() {
    let ws = workspace();
    let target = tempfile::tempdir().expect("tempdir");
    let target_root = target.path().canonicalize().expect("canonical");
    std::os::unix::fs::symlink(&target_root, ws.root.join("link")).expect("symlink");
    let output = "bash: link/notes.txt: Permission denied";
    assert_eq!(
        read(&ws, NetworkRule::On, output, 1),
        [write(target_root.join("notes.txt"))]
    );
}

#[test]
fn perl_s_bare_errno_names_no_path_and_is_not_guessed() {
    let ws = workspace();
    assert_eq!(
        read(&ws, NetworkRule::On, "Permission denied at -e line 1.", 2),
        []
    );
}

#[test]
fn ssh_s_permission_denied_is_not_a_write() {
    let ws = workspace();
    let output = "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.";
    assert_eq!(read(&ws, NetworkRule::On, output, 128), []);
}

#[test]
fn exit_126_is_a_file_that_could_not_run_not_a_denied_write() {
    let ws = workspace();
    assert_eq!(
        read(
            &ws,
            NetworkRule::On,
            "bash: /opt/tool/run: Permission denied",
            126
        ),
        []
    );
    assert_eq!(
        read(
            &ws,
            NetworkRule::On,
            "bash: /opt/tool/run: Permission denied",
            1
        ),
        [write("/opt/tool/run")]
    );
}

#[test]
fn text_evidence_counts_only_when_the_command_failed() {
    let ws = workspace();
    let output = "touch: cannot touch '/etc/x': Permission denied\ncurl: (6) Could not resolve host: example.com";
    assert_eq!(read(&ws, NetworkRule::Off, output, 0), []);
    assert_eq!(read(&ws, NetworkRule::Off, output, 1).len(), 2);
}

/// Each tool's refused connection or lookup, and the host and port it names.
const NETWORK_OFF_FORMS: &[(&str, Option<&str>, Option<u16>)] = &[
    (
        "curl: (6) Could not resolve host: example.com",
        Some("example.com"),
        None,
    ),
    (
        "curl: (7) Failed to connect to 1.2.3.4 port 80 after 0 ms: Couldn't connect to server",
        Some("1.2.3.4"),
        Some(80),
    ),
    ("OSError: [Errno 101] Network is unreachable", None, None),
    (
        "socket.gaierror: [Errno -3] Temporary failure in name resolution",
        None,
        None,
    ),
    (
        "getaddrinfo EAI_AGAIN registry.npmjs.org",
        Some("registry.npmjs.org"),
        None,
    ),
    (
        "getaddrinfo ENOTFOUND nonexistent.invalid",
        Some("nonexistent.invalid"),
        None,
    ),
    (
        "connect ENETUNREACH 1.2.3.4:80 - Local (0.0.0.0:0)",
        Some("1.2.3.4"),
        Some(80),
    ),
    (
        "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
        Some("github.com"),
        None,
    ),
    (
        "Resolving example.com (example.com)... failed: Temporary failure in name resolution.",
        Some("example.com"),
        None,
    ),
    (
        "wget: unable to resolve host address ‘example.com’",
        Some("example.com"),
        None,
    ),
    (
        "ssh: Could not resolve hostname github.com: Temporary failure in name resolution",
        Some("github.com"),
        None,
    ),
    (
        "error: failed to get `serde` as a dependency\n\nCaused by:\n  [6] Couldn't resolve host name (Could not resolve host: index.crates.io)",
        Some("index.crates.io"),
        None,
    ),
    (
        "npm error code EAI_AGAIN\nnpm error syscall getaddrinfo\nnpm error errno EAI_AGAIN\nnpm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org",
        Some("registry.npmjs.org"),
        None,
    ),
];

/// Connects a Landlock TCP rule refused: with the network off and with an allow-list.
const CONNECT_REFUSED_FORMS: &[(&str, Option<&str>, Option<u16>)] = &[
    (
        "curl: (7) Failed to connect to 127.0.0.1 port 18765 after 0 ms: Couldn't connect to server",
        Some("127.0.0.1"),
        Some(18765),
    ),
    (
        "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nPermissionError: [Errno 13] Permission denied",
        None,
        None,
    ),
    (
        "  File \"/srv/app/client.py\", line 3, in <module>\n    s.connect((\"10.0.0.5\", 5432))\nPermissionError: [Errno 13] Permission denied",
        None,
        None,
    ),
    (
        "connect EACCES 127.0.0.1:18765 - Local (0.0.0.0:0)",
        Some("127.0.0.1"),
        Some(18765),
    ),
    (
        "TypeError: fetch failed connect EACCES 127.0.0.1:18765 - Local (0.0.0.0:0)",
        Some("127.0.0.1"),
        Some(18765),
    ),
    (
        "fatal: unable to access 'http://127.0.0.1:18765/x.git/': Failed to connect to 127.0.0.1 port 18765 after 0 ms: Couldn't connect to server",
        Some("127.0.0.1"),
        Some(18765),
    ),
    (
        "urllib.error.URLError: <urlopen error [Errno 13] Permission denied>",
        None,
        None,
    ),
    (
        "Connecting to localhost (localhost)|127.0.0.1|:18765... failed: Permission denied.",
        Some("localhost"),
        Some(18765),
    ),
    (
        "ssh: connect to host github.com port 22: Permission denied",
        Some("github.com"),
        Some(22),
    ),
];

#[test]
fn with_the_network_off_each_tool_s_failed_lookup_or_connect_is_a_network_denial() {
    let ws = workspace();
    for (output, host, port) in NETWORK_OFF_FORMS.iter().chain(CONNECT_REFUSED_FORMS) {
        assert_eq!(
            read(&ws, NetworkRule::Off, output, 1),
            [network(*host, *port)],
            "{output}"
        );
    }
}

#[test]
fn with_an_allow_list_only_refused_connects_count_since_lookups_still_work() {
    let ws = workspace();
    for (output, host, port) in CONNECT_REFUSED_FORMS {
        assert_eq!(
            read(&ws, NetworkRule::AllowList, output, 1),
            [network(*host, *port)],
            "{output}"
        );
    }
    for (output, _, _) in NETWORK_OFF_FORMS {
        if !output.contains("Couldn't connect") {
            assert_eq!(read(&ws, NetworkRule::AllowList, output, 1), [], "{output}");
        }
    }
}

#[test]
fn a_dependency_that_could_not_be_resolved_is_not_the_network() {
    let ws = workspace();
    let output = "npm error code ERESOLVE\nnpm error ERESOLVE could not resolve\nnpm error While resolving: app@1.0.0";
    assert_eq!(read(&ws, NetworkRule::Off, output, 1), []);
}

#[test]
fn with_the_network_on_no_network_error_is_the_sandbox() {
    let ws = workspace();
    for (output, _, _) in NETWORK_OFF_FORMS.iter().chain(CONNECT_REFUSED_FORMS) {
        assert_eq!(read(&ws, NetworkRule::On, output, 1), [], "{output}");
    }
}

fn blocked(seq: u64, host: &str, port: u16) -> Blocked {
    Blocked {
        seq,
        host: host.to_owned(),
        port,
        reason: BlockReason::NotAllowed,
    }
}

#[test]
fn the_proxy_s_refusals_are_reported_exactly_even_when_the_command_succeeded() {
    let ws = workspace();
    let writable = [ws.root.clone()];
    let rules = Rules {
        writable: &writable,
        read_only: &[],
        network: NetworkRule::AllowList,
        cwd: &ws.root,
    };
    let refusals = [
        blocked(7, "registry.npmjs.org", 443),
        blocked(8, "registry.npmjs.org", 443),
    ];
    let evidence = Evidence {
        output: "done",
        exit_code: Some(0),
        signal: None,
        blocked: &refusals,
    };
    assert_eq!(
        diagnose(&rules, &evidence),
        [network(Some("registry.npmjs.org"), Some(443))]
    );
    // The same host named again in the output, without its port, adds nothing.
    let evidence = Evidence {
        output: "curl: (7) Failed to connect to registry.npmjs.org port 443 after 0 ms: Couldn't connect to server\nnpm error request to https://registry.npmjs.org/x failed, reason: connect EACCES registry.npmjs.org:443",
        exit_code: Some(1),
        ..evidence
    };
    assert_eq!(
        diagnose(&rules, &evidence),
        [network(Some("registry.npmjs.org"), Some(443))]
    );
}

#[test]
fn sigsys_or_exit_159_is_a_forbidden_system_call() {
    let ws = workspace();
    let writable = [ws.root.clone()];
    let rules = Rules {
        writable: &writable,
        read_only: &[],
        network: NetworkRule::On,
        cwd: &ws.root,
    };
    let killed = Evidence {
        output: "",
        exit_code: None,
        signal: Some(31),
        blocked: &[],
    };
    assert_eq!(diagnose(&rules, &killed), [Denial::Syscall]);
    assert_eq!(
        read(&ws, NetworkRule::On, "Bad system call", 159),
        [Denial::Syscall]
    );
    let other_signal = Evidence {
        signal: Some(9),
        ..killed
    };
    assert_eq!(diagnose(&rules, &other_signal), []);
}

#[test]
fn denials_are_deduplicated_and_at_most_five() {
    let ws = workspace();
    let repeated = "touch: cannot touch '/etc/a': Permission denied\n".repeat(3);
    assert_eq!(read(&ws, NetworkRule::On, &repeated, 1), [write("/etc/a")]);
    let many: String = (0..20)
        .map(|i| format!("touch: cannot touch '/etc/f{i}': Permission denied\n"))
        .collect();
    let found = read(&ws, NetworkRule::On, &many, 1);
    assert_eq!(found.len(), MAX_DENIALS);
    assert_eq!(found[0], write("/etc/f0"));
}

/// An output of `lines` filler lines with a denial of `/etc/marker` after line `at`.
fn with_marker(lines: usize, at: usize) -> String {
    let filler = "compiling something that takes a while and prints a line of about 100 bytes like this one..\n";
    let mut output = String::with_capacity(lines * filler.len() + 64);
    for i in 0..lines {
        if i == at {
            output.push_str("touch: cannot touch '/etc/marker': Permission denied\n");
        }
        output.push_str(filler);
    }
    output
}

#[test]
fn only_the_first_64_kib_and_the_last_256_kib_are_read() {
    let ws = workspace();
    // About 64 MiB: a denial in the middle is not read; at either end it is.
    let lines = 640_000;
    let found = |at| read(&ws, NetworkRule::On, &with_marker(lines, at), 1);
    assert_eq!(found(lines / 2), []);
    assert_eq!(found(10), [write("/etc/marker")]);
    assert_eq!(found(lines - 10), [write("/etc/marker")]);
}

/// A path below the root: names, `.` and `..` that never climb above it.
fn inside_path() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b c", "..", ".", "x.txt", ".git"]),
        1..6,
    )
    .prop_map(|parts| {
        let mut depth = 0usize;
        let mut kept = Vec::new();
        for part in parts {
            match part {
                ".." if depth == 0 => {}
                ".." => {
                    depth -= 1;
                    kept.push(part);
                }
                "." => kept.push(part),
                _ => {
                    depth += 1;
                    kept.push(part);
                }
            }
        }
        if kept.is_empty() {
            "x.txt".to_owned()
        } else {
            kept.join("/")
        }
    })
}

/// The forms a tool prints a denied path in.
const TEMPLATES: &[&str] = &[
    "touch: cannot touch '{}': Permission denied",
    "mkdir: cannot create directory ‘{}’: Permission denied",
    "bash: {}: Permission denied",
    "sh: 1: cannot create {}: Read-only file system",
    "PermissionError: [Errno 13] Permission denied: '{}'",
    "Error: EACCES: permission denied, open '{}'",
    "fatal: Unable to create '{}': Permission denied",
    "error: failed to create directory `{}`\n\nCaused by:\n  Permission denied (os error 13)",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if deep() { 1_024 } else { 64 }))]

    /// A denied path inside a writable root, absolute or relative to a working directory
    /// inside it, is never reported, whatever form and noise surround it.
    #[test]
    fn paths_inside_writable_roots_are_never_reported(
        path in inside_path(),
        absolute in any::<bool>(),
        template in prop::sample::select(TEMPLATES),
        noise in prop::collection::vec("[ -~]{0,40}", 0..4),
        network in prop::sample::select(vec![NetworkRule::On, NetworkRule::Off, NetworkRule::AllowList]),
        exit_code in prop::sample::select(vec![1, 2, 126, 127]),
    ) {
        let ws = workspace();
        let cwd = ws.root.join("sub");
        std::fs::create_dir_all(&cwd).expect("mkdir");
        let shown = if absolute { format!("{}/{path}", cwd.display()) } else { path.clone() };
        let mut output = noise.join("\n");
        output.push('\n');
        output.push_str(&template.replace("{}", &shown));
        let writable = [ws.root.clone()];
        let rules = Rules { writable: &writable, read_only: &[], network, cwd: &cwd };
        let evidence = Evidence { output: &output, exit_code: Some(exit_code), signal: None, blocked: &[] };
        let writes: Vec<Denial> = diagnose(&rules, &evidence)
            .into_iter()
            .filter(|d| matches!(d, Denial::Write { .. }))
            .collect();
        prop_assert!(writes.is_empty(), "{output}\n{writes:?}");
    }

    /// A denial is found exactly when it lies in the scanned head or tail.
    #[test]
    fn a_denial_is_found_exactly_when_it_lies_in_the_scanned_window(at in 0usize..8_000) {
        let ws = workspace();
        let lines = 8_000;
        let output = with_marker(lines, at);
        let offset = output.find("touch: cannot").expect("marker");
        let end = offset + "touch: cannot touch '/etc/marker': Permission denied".len();
        let in_head = end <= SCAN_HEAD;
        let in_tail = offset >= output.len() - SCAN_TAIL;
        let found = !read(&ws, NetworkRule::On, &output, 1).is_empty();
        if in_head || in_tail {
            prop_assert!(found);
        } else if end < output.len() - SCAN_TAIL && offset > SCAN_HEAD {
            prop_assert!(!found);
        }
    }
}

#[test]
fn a_shell_named_by_its_path_is_not_reported_as_the_denied_write() {
    let root = PathBuf::from("/work");
    let rules = Rules {
        writable: std::slice::from_ref(&root),
        read_only: &[],
        network: NetworkRule::On,
        cwd: &root,
    };
    let evidence = Evidence {
        output: "/usr/bin/bash: line 1: /etc/sbx: Permission denied\n",
        exit_code: Some(1),
        signal: None,
        blocked: &[],
    };
    assert_eq!(
        diagnose(&rules, &evidence),
        vec![Denial::Write {
            path: PathBuf::from("/etc/sbx")
        }]
    );
}

#[test]
fn a_denied_write_under_a_read_only_place_inside_the_root_is_the_sandbox() {
    let root = PathBuf::from("/work");
    let hooks = PathBuf::from("/work/.git/hooks");
    let rules = Rules {
        writable: std::slice::from_ref(&root),
        read_only: std::slice::from_ref(&hooks),
        network: NetworkRule::On,
        cwd: &root,
    };
    let evidence = Evidence {
        output: "sh: 1: cannot create .git/hooks/pre-commit: Read-only file system\n",
        exit_code: Some(2),
        signal: None,
        blocked: &[],
    };
    assert_eq!(
        diagnose(&rules, &evidence),
        vec![Denial::Write {
            path: PathBuf::from("/work/.git/hooks/pre-commit")
        }]
    );
}
