//! `tackle call bash` and paths outside the root: with `bash` itself allowed, a command line
//! that writes or reads outside (by a disguised name, through a wrapper, an interpreter, or a
//! symlink the repository ships) still asks `external_directory`, and with nobody to ask it is
//! refused before anything runs.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tempfile::TempDir;

/// A workspace root, a directory outside it, and a private data directory.
struct Sandbox {
    root: TempDir,
    outside: TempDir,
    data: TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let sandbox = Self {
            root: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(sandbox.data.path().join("tmp")).unwrap();
        std::fs::write(sandbox.root.path().join("a.txt"), "inside\n").unwrap();
        std::fs::write(sandbox.outside().join("secret.txt"), "sk-outside\n").unwrap();
        // The user allows `bash`, so only the outside paths can stop a command.
        std::fs::write(sandbox.config(), r#"{"permission": {"bash": "allow"}}"#).unwrap();
        // What a cloned repository can ship: a link to a directory outside, and a dangling
        // link to a file outside that a write would create.
        std::os::unix::fs::symlink(sandbox.outside(), sandbox.root.path().join("out")).unwrap();
        std::os::unix::fs::symlink(
            sandbox.outside().join("made-through-dangling"),
            sandbox.root.path().join("dangling"),
        )
        .unwrap();
        sandbox
    }

    fn outside(&self) -> PathBuf {
        std::fs::canonicalize(self.outside.path()).unwrap()
    }

    fn config(&self) -> PathBuf {
        self.data.path().join("user.json")
    }

    /// `tackle call bash` with `command`, stdin empty, and the user's configuration.
    fn bash(&self, command: &str, yes: bool) -> std::process::Output {
        self.bash_with(serde_json::json!({ "command": command }), yes)
    }

    fn bash_with(&self, args: serde_json::Value, yes: bool) -> std::process::Output {
        let args = args.to_string();
        let mut tackle = Command::cargo_bin("tackle").unwrap();
        tackle
            .arg("--root")
            .arg(self.root.path())
            .arg("--config")
            .arg(self.config())
            .env("TACKLE_DATA_DIR", self.data.path())
            .env("TMPDIR", self.data.path().join("tmp"))
            .env("HOME", self.data.path())
            .args(["call", "bash", &args])
            .write_stdin("");
        if yes {
            tackle.arg("--yes");
        }
        tackle.output().unwrap()
    }
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn path_str(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn bash_writes_outside_ask_external_directory_and_are_refused_without_yes() {
    let sandbox = Sandbox::new();
    let out = path_str(&sandbox.outside());
    let forms = [
        ("\"cp\" a.txt {out}/w1", "w1"),
        ("/bin/cp a.txt {out}/w2", "w2"),
        ("env timeout 5 nice cp a.txt {out}/w3", "w3"),
        ("dd if=a.txt of={out}/w4 status=none", "w4"),
        ("tar cf {out}/w5 a.txt", "w5"),
        ("python3 -c \"open('{out}/w6', 'w').write('x')\"", "w6"),
        ("sh -c 'cat a.txt > {out}/w7'", "w7"),
        ("cp a.txt out/w8", "w8"),
        ("echo x > dangling", "made-through-dangling"),
    ];
    for (form, written) in forms {
        let command = form.replace("{out}", &out);
        let output = sandbox.bash(&command, false);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(1), "{command}: {text}");
        assert!(
            text.contains("Nobody could be asked for permission to run `external_directory`"),
            "{command}: {text}"
        );
        assert!(
            !sandbox.outside().join(written).exists(),
            "{command} wrote outside without a question"
        );
    }
    // Approved, it runs, and the sandbox refuses the write (the question and the sandbox are
    // separate guards); allowed to run without the sandbox, it writes: the command was sound.
    let command = format!("/bin/cp a.txt {out}/w2");
    let output = sandbox.bash(&command, true);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("sandbox refused") || !tackle_sandbox::Support::get().filesystem(),
        "{}",
        stdout(&output)
    );
    let output = sandbox.bash_with(
        serde_json::json!({ "command": command, "sandbox": "off" }),
        true,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(sandbox.outside().join("w2").exists());
}

#[test]
fn bash_reads_outside_ask_external_directory_and_show_nothing_without_yes() {
    let sandbox = Sandbox::new();
    let out = path_str(&sandbox.outside());
    for form in [
        "cat {out}/secret.txt",
        "cat < {out}/secret.txt",
        "head -n 1 {out}/secret.txt",
        "cat out/secret.txt",
        "less out/secret.txt",
    ] {
        let command = form.replace("{out}", &out);
        let output = sandbox.bash(&command, false);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(1), "{command}: {text}");
        assert!(
            text.contains("`external_directory`") && !text.contains("sk-outside"),
            "{command}: {text}"
        );
    }
    // Inside the root nothing is asked.
    let output = sandbox.bash("cat a.txt && head -n 1 a.txt", false);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).contains("inside"));
}
