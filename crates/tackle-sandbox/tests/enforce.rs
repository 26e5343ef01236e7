//! The sandbox enforced on real processes: writes, the network, protected paths, exit statuses
//! and processes that try to outlive their call.

#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Command, Output};

use tackle_sandbox::{Mode, Network, Policy, Prepared, Request, Sandboxes, Status, Support};

struct Fixture {
    _dirs: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    temp_root: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let dirs = tempfile::tempdir().unwrap();
    let root = dirs.path().join("work");
    let outside = dirs.path().join("outside");
    let temp_root = dirs.path().join("tmp");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    Fixture {
        root: root.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        temp_root,
        _dirs: dirs,
    }
}

fn sandboxes(f: &Fixture, policy: Policy) -> Sandboxes {
    Sandboxes::new(policy, HashMap::new(), f.temp_root.clone())
}

fn prepared(f: &Fixture, policy: Policy) -> Prepared {
    sandboxes(f, policy)
        .prepare(&Request {
            agent: "build",
            session: "s1",
            root: &f.root,
            unsandboxed: false,
        })
        .unwrap()
}

fn sh(prepared: &Prepared, cwd: &Path, script: &str) -> Output {
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(script).current_dir(cwd);
    prepared.apply(&mut command);
    command.output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn supported() -> bool {
    let support = Support::get();
    if !support.filesystem() {
        eprintln!("skipped: no Landlock here ({})", support.describe());
    }
    support.filesystem()
}

#[test]
fn workspace_write_allows_the_location_and_tmpdir_and_refuses_the_rest() {
    if !supported() {
        return;
    }
    let f = fixture();
    let p = prepared(&f, Policy::default());
    assert!(matches!(
        p.status(),
        Status::Sandboxed {
            mode: Mode::WorkspaceWrite,
            ..
        }
    ));
    let out = sh(
        &p,
        &f.root,
        "echo in > inside.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(f.root.join("inside.txt")).unwrap(),
        "in\n"
    );
    let target = f.outside.join("x");
    let out = sh(&p, &f.root, &format!("echo no > {}", target.display()));
    assert!(!out.status.success());
    assert!(text(&out).contains("Permission denied"), "{}", text(&out));
    assert!(!target.exists());
    // Through a symlink in the Location pointing out.
    std::os::unix::fs::symlink(&f.outside, f.root.join("link")).unwrap();
    let out = sh(&p, &f.root, "echo no > link/y");
    assert!(!out.status.success());
    assert!(!f.outside.join("y").exists());
    // An interpreter is no way around it.
    let out = sh(
        &p,
        &f.root,
        &format!("python3 -c \"open('{}/z','w')\"", f.outside.display()),
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!f.outside.join("z").exists());
}

#[test]
fn read_only_refuses_writes_in_the_location_too() {
    if !supported() {
        return;
    }
    let f = fixture();
    let p = prepared(
        &f,
        Policy {
            mode: Mode::ReadOnly,
            ..Policy::default()
        },
    );
    let out = sh(&p, &f.root, "echo x > a.txt");
    assert!(!out.status.success());
    assert!(!f.root.join("a.txt").exists());
    let out = sh(&p, &f.root, "echo t > \"$TMPDIR/t\" && ls > /dev/null");
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn network_off_refuses_a_tcp_connect_to_loopback() {
    if !supported() {
        return;
    }
    let f = fixture();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')\""
    );
    let on = prepared(&f, Policy::default());
    let out = sh(&on, &f.root, &script);
    assert!(text(&out).contains("connected"), "{}", text(&out));
    let off = prepared(
        &f,
        Policy {
            network: Network::Off,
            ..Policy::default()
        },
    );
    let out = sh(&off, &f.root, &script);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("Operation not permitted"),
        "{}",
        text(&out)
    );
}

#[test]
fn exit_codes_and_signals_come_back_as_the_shell_ended() {
    if !supported() {
        return;
    }
    let f = fixture();
    let p = prepared(&f, Policy::default());
    assert_eq!(sh(&p, &f.root, "exit 7").status.code(), Some(7));
    assert_eq!(sh(&p, &f.root, "kill -9 $$").status.signal(), Some(9));
    assert_eq!(sh(&p, &f.root, "echo out; echo err >&2").stdout, b"out\n");
}

#[test]
fn a_detached_process_does_not_outlive_the_call() {
    if !supported() || !Support::get().user_namespaces {
        return;
    }
    let f = fixture();
    let p = prepared(&f, Policy::default());
    assert!(p.contains_processes());
    let stamp = f.root.join("stamp");
    let out = sh(
        &p,
        &f.root,
        &format!(
            "setsid env -i /bin/sh -c 'sleep 1; echo alive > {}' > /dev/null 2>&1 < /dev/null &",
            stamp.display()
        ),
    );
    assert!(out.status.success(), "{}", text(&out));
    std::thread::sleep(std::time::Duration::from_millis(1600));
    assert!(!stamp.exists(), "the detached process outlived the call");
}

#[test]
fn git_hooks_and_config_stay_read_only_while_commits_work() {
    if !supported() || !Support::get().user_namespaces {
        return;
    }
    let f = fixture();
    let setup = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&f.root)
        .status()
        .unwrap();
    assert!(setup.success());
    let p = prepared(&f, Policy::default());
    let out = sh(
        &p,
        &f.root,
        "echo a > a && git add a && git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline | wc -l",
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = sh(&p, &f.root, "echo evil > .git/hooks/pre-commit");
    assert!(!out.status.success());
    assert!(!f.root.join(".git/hooks/pre-commit").exists());
    let out = sh(&p, &f.root, "git config core.hooksPath /tmp/evil");
    assert!(!out.status.success(), "{}", text(&out));
}

/// A loopback HTTP server answering `hello` to every request, on its own thread.
fn hello_server() -> u16 {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    port
}

#[test]
fn an_allow_list_passes_listed_hosts_through_the_proxy_and_nothing_else() {
    if !supported() || !Support::get().tcp_rules() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
    let f = fixture();
    let allowed = hello_server();
    let other = hello_server();
    let policy = Policy {
        network: Network::Allow {
            allow: vec![format!("127.0.0.1:{allowed}")],
            deny: Vec::new(),
        },
        ..Policy::default()
    };
    let sandboxes = sandboxes(&f, policy);
    let request = Request {
        agent: "build",
        session: "s1",
        root: &f.root,
        unsandboxed: false,
    };
    let p = sandboxes.prepare(&request).unwrap();
    let curl = |port: u16| {
        let p = p.clone();
        let root = f.root.clone();
        std::thread::spawn(move || {
            sh(
                &p,
                &root,
                &format!("curl -sS -i --max-time 5 http://127.0.0.1:{port}/"),
            )
        })
        .join()
        .unwrap()
    };
    let out = curl(allowed);
    assert!(text(&out).contains("hello"), "{}", text(&out));
    let out = curl(other);
    assert!(text(&out).contains("403"), "{}", text(&out));
    assert!(
        p.blocked().iter().any(|b| b.port == other),
        "{:?}",
        p.blocked()
    );
    // A client that ignores the proxy variables cannot go around it.
    let direct = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {allowed}), timeout=2)\""
    );
    let p2 = p.clone();
    let root = f.root.clone();
    let out = std::thread::spawn(move || sh(&p2, &root, &direct))
        .join()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let udp = "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\"";
    let out = sh(&p, &f.root, udp);
    assert!(!out.status.success(), "{}", text(&out));
}

#[test]
fn a_sandbox_prepared_again_follows_the_files_it_was_built_on() {
    if !supported() {
        return;
    }
    let f = fixture();
    let sandboxes = sandboxes(&f, Policy::default());
    let request = Request {
        agent: "build",
        session: "s1",
        root: &f.root,
        unsandboxed: false,
    };
    let before = sandboxes.prepare(&request).unwrap();
    assert!(before.read_only().is_empty());
    // The same files: the same sandbox, kept.
    assert_eq!(
        sandboxes.prepare(&request).unwrap().read_only(),
        before.read_only()
    );
    // A repository appears: its hooks are protected from the next call on.
    std::fs::create_dir_all(f.root.join(".git/hooks")).unwrap();
    let after = sandboxes.prepare(&request).unwrap();
    assert!(
        after.read_only().iter().any(|p| p.ends_with(".git/hooks")),
        "{:?}",
        after.read_only()
    );
    // The session's temp directory removed and made again: a rule for the old one would
    // refuse writes to the new one.
    sandboxes.end_session("s1");
    let again = sandboxes.prepare(&request).unwrap();
    let out = sh(&again, &f.root, "echo t > \"$TMPDIR/t\"");
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn the_sweep_removes_only_session_temp_directories_unchanged_for_too_long() {
    let f = fixture();
    let sandboxes = sandboxes(&f, Policy::default());
    let old = sandboxes.session_temp("old").unwrap();
    std::fs::write(old.join("left"), "x").unwrap();
    let fresh = sandboxes.session_temp("fresh").unwrap();
    let root = old.parent().unwrap().to_path_buf();
    // Not a session directory: another program's, and a symlink named like one.
    std::fs::create_dir(root.join("keep-me")).unwrap();
    std::os::unix::fs::symlink(&f.outside, root.join("s-0123456789abcdef")).unwrap();
    std::fs::write(f.outside.join("precious"), "p").unwrap();
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for path in [old.join("left"), old.clone()] {
        std::fs::File::options()
            .write(true)
            .open(&path)
            .or_else(|_| std::fs::File::open(&path))
            .unwrap()
            .set_modified(past)
            .unwrap();
    }
    sandboxes.sweep(std::time::Duration::from_secs(60));
    assert!(!old.exists(), "an old session's directory stays");
    assert!(fresh.exists());
    assert!(root.join("keep-me").exists());
    assert!(f.outside.join("precious").exists());
}
