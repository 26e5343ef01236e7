//! Denials produced here and now: commands run under a real Landlock ruleset (writes only in
//! a workspace, no TCP connect) from a thread that restricted itself, and their output read
//! back by `diagnose`.

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};

use super::{network, workspace, write};
use crate::denial::{Denial, Evidence, NetworkRule, Rules, diagnose};

/// Restricts the calling thread (and what it starts): read everywhere, write in `writable`,
/// connect nowhere. Fails unless the kernel enforces all of it.
fn confine(writable: &Path) -> Result<(), String> {
    let abi = ABI::V4;
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules([writable], AccessFs::from_all(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_all(abi))))
        .and_then(|r| r.restrict_self())
        .map_err(|error| error.to_string())?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        other => Err(format!("Landlock is not fully enforced here: {other:?}")),
    }
}

/// What one confined command printed (stdout then stderr) and how it ended.
struct Ran {
    output: String,
    exit_code: Option<i32>,
}

fn run_confined(cwd: PathBuf, commands: Vec<Vec<String>>) -> Vec<Ran> {
    std::thread::spawn(move || {
        confine(&cwd).expect("a real Landlock ruleset");
        commands
            .into_iter()
            .map(|argv| {
                let out = Command::new(&argv[0])
                    .args(&argv[1..])
                    .current_dir(&cwd)
                    .output()
                    .unwrap_or_else(|error| panic!("{argv:?} runs: {error}"));
                Ran {
                    output: format!(
                        "{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ),
                    exit_code: out.status.code(),
                }
            })
            .collect()
    })
    .join()
    .expect("the confined thread")
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn denials_made_by_a_real_landlock_ruleset_are_read_back_with_their_path_or_host() {
    let ws = workspace();
    let outside = tempfile::tempdir().expect("tempdir");
    let outside = outside.path().canonicalize().expect("canonical");
    std::os::unix::fs::symlink(&outside, ws.root.join("link")).expect("symlink");
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let target = |name: &str| outside.join(name).to_string_lossy().into_owned();
    let url = format!("http://127.0.0.1:{port}/");
    let cases: Vec<(Vec<String>, Vec<Denial>)> = vec![
        (
            argv(&["sh", "-c", &format!("echo x > {}", target("sh.txt"))]),
            vec![write(outside.join("sh.txt"))],
        ),
        (
            argv(&["bash", "-c", &format!("echo x > {}", target("bash.txt"))]),
            vec![write(outside.join("bash.txt"))],
        ),
        (
            argv(&["touch", &target("touched")]),
            vec![write(outside.join("touched"))],
        ),
        (
            argv(&["mkdir", &target("dir")]),
            vec![write(outside.join("dir"))],
        ),
        (
            argv(&[
                "python3",
                "-c",
                &format!("open({:?}, 'w')", target("py.txt")),
            ]),
            vec![write(outside.join("py.txt"))],
        ),
        (
            argv(&[
                "perl",
                "-e",
                &format!(
                    "open(F, '>', '{0}') or die \"cannot open {0}: $!\"",
                    target("pl.txt")
                ),
            ]),
            vec![write(outside.join("pl.txt"))],
        ),
        (
            argv(&["sh", "-c", "echo x > link/through-link.txt"]),
            vec![write(outside.join("through-link.txt"))],
        ),
        (
            argv(&["sh", "-c", "echo x > inside.txt && cat inside.txt"]),
            vec![],
        ),
        (
            argv(&["curl", "-sS", "--max-time", "5", &url]),
            vec![network(Some("127.0.0.1"), Some(port))],
        ),
        (
            argv(&[
                "python3",
                "-c",
                &format!("import socket; socket.create_connection(('127.0.0.1', {port}))"),
            ]),
            vec![network(None, None)],
        ),
    ];
    let (commands, expected): (Vec<_>, Vec<_>) = cases.into_iter().unzip();
    let ran = run_confined(ws.root.clone(), commands.clone());
    drop(listener);
    let writable = [ws.root.clone()];
    let rules = Rules {
        writable: &writable,
        read_only: &[],
        network: NetworkRule::Off,
        cwd: &ws.root,
    };
    for ((command, expected), ran) in commands.iter().zip(expected).zip(ran) {
        let evidence = Evidence {
            output: &ran.output,
            exit_code: ran.exit_code,
            signal: None,
            blocked: &[],
        };
        assert_eq!(
            diagnose(&rules, &evidence),
            expected,
            "{command:?} printed {:?} (exit {:?})",
            ran.output,
            ran.exit_code
        );
    }
    assert!(
        !outside.join("through-link.txt").exists(),
        "the write was really refused"
    );
    assert!(
        ws.root.join("inside.txt").exists(),
        "writes in the workspace work"
    );
}
