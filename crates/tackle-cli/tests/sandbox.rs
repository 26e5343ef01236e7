//! The OS sandbox end to end, through the real binary (`tackle call` and `tackle serve`).
//!
//! Under the default policy a command cannot write outside the Location (the home directory,
//! `/etc`, a symlink pointing out, an interpreter, a command line built at run time), while the
//! everyday work goes on (files in the Location, git commits, `$TMPDIR`, `cargo build`,
//! `npm install`); `.git/hooks` and `.git/config` stay read-only; the network can be turned
//! off; nothing a call or a job starts outlives it; the `plan` agent writes nothing; a machine
//! without the sandbox gets the configured fallback, said in the result; `sandbox: "off"` asks
//! a person; and a project cannot turn the sandbox off before it is trusted.
//!
//! Each test has its own root, data directory, HOME and a directory outside them that must stay
//! empty. The tests need Landlock, and some need user namespaces: without them a test prints a
//! skip line, and fails under `CI=true`. `--yes` answers the permission questions, so that the
//! sandbox, not a prompt, is what stops a command.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long a process the sandbox should have ended may take to go.
const GONE_WITHIN: Duration = Duration::from_secs(2);

/// One test's root, data directory, HOME, a directory outside all of them, and a tag that
/// names its processes.
struct Project {
    root: TempDir,
    data: TempDir,
    home: TempDir,
    outside: TempDir,
    tag: String,
}

impl Project {
    fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let project = Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
            tag: format!(
                "{}{:03}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
        };
        std::os::unix::fs::symlink(project.outside(), project.root().join("out")).unwrap();
        project
    }

    fn root(&self) -> PathBuf {
        self.root.path().canonicalize().unwrap()
    }

    fn home(&self) -> PathBuf {
        self.home.path().canonicalize().unwrap()
    }

    fn outside(&self) -> PathBuf {
        self.outside.path().canonicalize().unwrap()
    }

    /// What is in the outside directory: it must stay empty.
    fn outside_entries(&self) -> Vec<String> {
        std::fs::read_dir(self.outside())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// A sleep duration no other process on the machine has: the `n`th of this test.
    fn sleeper(&self, n: u32) -> String {
        format!("{n}000.{}", self.tag)
    }

    /// A file name no other test uses, for places shared with the machine (`/etc`, `/tmp`).
    fn unique(&self, name: &str) -> String {
        format!("tackle-sandbox-{}-{name}", self.tag)
    }

    /// A configuration file for `--config`, kept in the home directory.
    fn config(&self, config: Value) -> PathBuf {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = self.home().join(format!("flags-{n}.json"));
        std::fs::write(&path, config.to_string()).unwrap();
        path
    }

    /// `tackle --root ROOT` with the private HOME and data directory, and none of the
    /// variables that would change what is tested.
    fn tackle(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tackle"));
        command
            .arg("--root")
            .arg(self.root())
            .current_dir(self.root())
            .env("HOME", self.home())
            .env("TACKLE_DATA_DIR", self.data.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("TACKLE_MODEL")
            .env_remove("TACKLE_SHELL")
            .env_remove("TACKLE_SANDBOX_SIMULATE_NONE")
            .env_remove(tackle_mcp::DEPTH_ENV);
        command
    }

    /// `tackle FLAGS… call bash ARGS` with stdin empty (nobody can be asked).
    fn call(&self, flags: &[&str], args: Value) -> Output {
        self.call_with(self.tackle(), flags, args)
    }

    /// [`Project::call`] with `command` as the `tackle` to run.
    fn call_with(&self, mut command: Command, flags: &[&str], args: Value) -> Output {
        command
            .args(["call", "bash", &args.to_string()])
            .args(flags)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `tackle call --yes bash` with `command`, which must settle: the model-facing text.
    fn bash(&self, command: &str) -> String {
        self.bash_with(&[], command)
    }

    /// [`Project::bash`] with more flags (`--config`, `--agent`).
    fn bash_with(&self, flags: &[&str], command: &str) -> String {
        let flags: Vec<&str> = flags.iter().copied().chain(["--yes"]).collect();
        let output = self.call(&flags, json!({ "command": command }));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{command}: {}",
            printed(&output)
        );
        stdout(&output)
    }

    /// `tackle serve --yes` on the root, with an MCP client connected.
    async fn serve(&self) -> RunningService<RoleClient, ()> {
        let mut command = tokio::process::Command::from(self.tackle());
        command.args(["serve", "--yes"]);
        let transport = TokioChildProcess::new(command).expect("spawn tackle serve");
        tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
            .await
            .expect("initialized in time")
            .expect("initialize")
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        // Whatever this test left running or wrote to the machine's own places goes.
        for pid in tagged(&self.tag) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        for place in ["/etc", "/tmp"] {
            let _ = std::fs::remove_file(Path::new(place).join(self.unique("x")));
        }
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Everything `tackle` printed, for a failed assertion's message.
fn printed(output: &Output) -> String {
    format!(
        "{}\n[stderr] {}",
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The exit code on the result's `exit:` line.
fn exit_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .find_map(|line| line.strip_prefix("exit: "))
        .map(str::to_owned)
}

/// The result says a write was refused.
fn assert_write_denied(command: &str, text: &str) {
    assert_ne!(exit_line(text).as_deref(), Some("0"), "{command}: {text}");
    assert!(text.contains("Permission denied"), "{command}: {text}");
    assert!(
        text.contains("sandbox refused writing"),
        "{command}: {text}"
    );
}

/// The live (not zombie) processes with `arg` among their arguments.
fn running(arg: &str) -> Vec<u32> {
    processes(|args| args.iter().any(|a| a == arg))
}

/// The live processes with an argument ending in this test's tag (its sleepers).
fn tagged(tag: &str) -> Vec<u32> {
    let suffix = format!(".{tag}");
    processes(|args| args.iter().any(|a| a.ends_with(&suffix)))
}

fn processes(matches: impl Fn(&[String]) -> bool) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<String> = cmdline
                .split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            matches(&args) && !zombie(*pid)
        })
        .collect()
}

fn zombie(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name's closing parenthesis.
    stat.rsplit_once(") ")
        .is_none_or(|(_, rest)| rest.starts_with('Z'))
}

/// What this machine enforces, as the binary shows it.
#[derive(Debug)]
struct Platform {
    /// `Err(footer)` when bash results say the sandbox is unavailable.
    sandbox: Result<(), String>,
    /// Whether a command's shell is PID 2 of its own namespace (the init is PID 1).
    namespaces: bool,
}

fn platform() -> &'static Platform {
    static PLATFORM: OnceLock<Platform> = OnceLock::new();
    PLATFORM.get_or_init(|| {
        let project = Project::new();
        let text = project.bash("echo \"pid=$$\"");
        let sandbox = match text.lines().find(|l| l.starts_with("sandbox: unavailable")) {
            Some(footer) => Err(footer.to_owned()),
            None => Ok(()),
        };
        Platform {
            sandbox,
            namespaces: text.lines().any(|l| l == "pid=2"),
        }
    })
}

/// Says `test` is skipped and why; fails instead under `CI=true`.
fn skip(test: &str, reason: &str) -> bool {
    let line = format!("skipped {test}: {reason}");
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{line} (CI=true: the sandbox is required)"
    );
    eprintln!("tackle-test: {line}");
    false
}

/// Whether this machine applies Landlock and seccomp; otherwise `test` is skipped.
fn enforced(test: &str) -> bool {
    match &platform().sandbox {
        Ok(()) => true,
        Err(footer) => skip(test, &format!("no sandbox here ({footer})")),
    }
}

/// Whether this machine also gives commands their own namespaces; otherwise `test` is skipped.
fn contained(test: &str) -> bool {
    enforced(test)
        && (platform().namespaces
            || skip(
                test,
                "no unprivileged user namespaces here (the shell is not PID 2)",
            ))
}

#[test]
fn writes_outside_the_location_fail_and_leave_nothing_behind() {
    if !enforced("writes_outside_the_location_fail_and_leave_nothing_behind") {
        return;
    }
    let project = Project::new();
    let out = project.outside().display().to_string();
    let home_file = project.home().join("owned.txt");
    let etc_file = Path::new("/etc").join(project.unique("x"));
    let attempts = [
        format!("echo x > {}", home_file.display()),
        format!("echo x > {}", etc_file.display()),
        // `out` is a symlink in the Location to the outside directory.
        "echo x > out/through-link".to_owned(),
        format!("python3 -c \"open('{out}/python', 'w').write('x')\""),
        format!("perl -e 'open(my $f, \">\", \"{out}/perl\") or die \"perl: {out}/perl: $!\\n\"'"),
        format!("sh -c \"$(echo 'echo x > {out}/built')\""),
    ];
    for command in &attempts {
        let text = project.bash(command);
        assert_write_denied(command, &text);
    }
    assert!(!home_file.exists(), "a command wrote in the home directory");
    assert!(!etc_file.exists(), "a command wrote in /etc");
    assert_eq!(project.outside_entries(), Vec::<String>::new());
}

#[test]
fn writes_in_the_location_git_commits_and_tmpdir_work() {
    if !enforced("writes_in_the_location_git_commits_and_tmpdir_work") {
        return;
    }
    let project = Project::new();
    let tmp_file = Path::new("/tmp").join(project.unique("x"));
    let text = project.bash(&format!(
        "echo hello > notes.txt && git init -q && git add notes.txt \
         && git -c user.name=t -c user.email=t@example.com commit -qm first \
         && git log --format=%s \
         && echo scratch > \"$TMPDIR/x\" && cat \"$TMPDIR/x\" && echo \"TMPDIR=$TMPDIR\" \
         && echo x > {}; echo \"tmp=$?\"",
        tmp_file.display()
    ));
    assert_eq!(
        std::fs::read_to_string(project.root().join("notes.txt")).unwrap(),
        "hello\n"
    );
    assert!(text.lines().any(|l| l == "first"), "{text}");
    assert!(text.lines().any(|l| l == "scratch"), "{text}");
    let tmpdir = text
        .lines()
        .find_map(|l| l.strip_prefix("TMPDIR="))
        .unwrap_or_else(|| panic!("no TMPDIR in: {text}"));
    assert_ne!(tmpdir, "/tmp");
    let data = project.data.path().canonicalize().unwrap();
    assert!(Path::new(tmpdir).starts_with(&data), "{tmpdir}");
    // `/tmp` itself is the machine's: not writable.
    assert!(text.contains("tmp=1"), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    assert!(!tmp_file.exists());
}

#[test]
fn git_hooks_and_config_stay_read_only_while_commits_work() {
    if !contained("git_hooks_and_config_stay_read_only_while_commits_work") {
        return;
    }
    let project = Project::new();
    let commit = "git -c user.name=t -c user.email=t@example.com commit -qm";
    project.bash(&format!(
        "git init -q && echo a > a && git add a && {commit} first"
    ));
    let config_before = std::fs::read_to_string(project.root().join(".git/config")).unwrap();
    let text = project.bash(&format!(
        "echo evil > .git/hooks/pre-commit; echo \"hook=$?\"; \
         git config x.y z; echo \"config=$?\"; \
         echo b > b && git add b && {commit} second && git log --format=%s"
    ));
    assert!(text.contains("hook=1"), "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(!text.contains("config=0"), "{text}");
    assert!(text.lines().any(|l| l == "second"), "{text}");
    assert!(!project.root().join(".git/hooks/pre-commit").exists());
    // A command that fails on it is told the sandbox refused, and where.
    let text = project.bash("echo evil > .git/hooks/post-commit");
    assert!(text.contains("sandbox refused writing"), "{text}");
    assert!(text.contains(".git/hooks/post-commit"), "{text}");
    assert_eq!(
        std::fs::read_to_string(project.root().join(".git/config")).unwrap(),
        config_before
    );
}

/// The read-only binds of `.git/hooks` and `.git/config` must not be undone by moving `.git`
/// aside and putting a copy with its own config in its place: the person's next `git status`
/// would run that config's `core.fsmonitor` outside the sandbox. (It failed when written:
/// `.git` itself was an ordinary directory of the writable Location.)
#[test]
fn git_config_and_hooks_cannot_be_swapped_by_moving_git_aside() {
    if !contained("git_config_and_hooks_cannot_be_swapped_by_moving_git_aside") {
        return;
    }
    let project = Project::new();
    project.bash(
        "git init -q && echo a > a && git add a \
         && git -c user.name=t -c user.email=t@example.com commit -qm first",
    );
    let config_before = std::fs::read_to_string(project.root().join(".git/config")).unwrap();
    let mark = project.outside().join("pwned");
    project.bash(&format!(
        "mv .git .git-old && cp -a .git-old .git \
         && git config core.fsmonitor 'touch {}; false' \
         && echo evil > .git/hooks/pre-commit",
        mark.display()
    ));
    assert_eq!(
        std::fs::read_to_string(project.root().join(".git/config")).unwrap(),
        config_before,
        "the repository's config was replaced"
    );
    assert!(!project.root().join(".git/hooks/pre-commit").exists());
}

/// In a linked worktree `.git` is a file naming the git directory: a command must not replace it
/// with a repository of its own (or point it at one), whose config the person's next
/// `git status` would obey outside the sandbox. (It failed when written: the file was an
/// ordinary file of the writable Location.)
#[test]
fn a_linked_worktrees_git_file_cannot_be_replaced() {
    if !contained("a_linked_worktrees_git_file_cannot_be_replaced") {
        return;
    }
    let project = Project::new();
    std::fs::remove_file(project.root().join("out")).unwrap();
    let main = project.outside();
    let git = |dir: &Path, args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .env("HOME", project.home())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&main, &["init", "-q"]);
    std::fs::write(main.join("a"), "a\n").unwrap();
    git(&main, &["add", "a"]);
    git(&main, &["commit", "-qm", "first"]);
    let root = project.root().display().to_string();
    git(&main, &["worktree", "add", "-q", "-b", "wt", &root]);
    let link_before = std::fs::read_to_string(project.root().join(".git")).unwrap();
    let hostile = format!("touch {}; false", main.join("pwned").display());
    project.bash(&format!(
        "(rm .git && git init -q && git config core.fsmonitor '{hostile}') \
         || (git init -q evil && git -C evil config core.fsmonitor '{hostile}' \
             && echo \"gitdir: $PWD/evil/.git\" > .git)"
    ));
    assert_eq!(
        std::fs::read_to_string(project.root().join(".git")).unwrap_or_default(),
        link_before,
        "the worktree's link to its git directory was replaced"
    );
}

#[test]
fn network_off_refuses_a_loopback_connect_and_on_lets_it_through() {
    if !enforced("network_off_refuses_a_loopback_connect_and_on_lets_it_through") {
        return;
    }
    let project = Project::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
    );
    let off = project.config(json!({"sandbox": {"network": "off"}}));
    let text = project.bash_with(&["--config", off.to_str().unwrap()], &connect);
    assert!(!text.contains("connected"), "{text}");
    assert!(text.contains("Operation not permitted"), "{text}");
    assert!(text.contains("sandbox refused"), "{text}");
    assert!(text.contains("network: off"), "{text}");
    let refused = listener.accept();
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the server saw a connection: {refused:?}"
    );
    let text = project.bash(&connect);
    assert!(text.lines().any(|l| l == "connected"), "{text}");
    assert!(listener.accept().is_ok(), "the server saw no connection");
}

#[test]
fn a_detached_process_does_not_outlive_its_foreground_call() {
    if !contained("a_detached_process_does_not_outlive_its_foreground_call") {
        return;
    }
    let project = Project::new();
    let (detached, holding) = (project.sleeper(1), project.sleeper(2));
    let text = project.bash(&format!(
        "setsid env -i sleep {detached} > /dev/null 2>&1 < /dev/null & \
         setsid env -i sleep {holding} & \
         sleep 0.3; pgrep -fx 'sleep {detached}' > /dev/null && echo started"
    ));
    assert!(text.lines().any(|l| l == "started"), "{text}");
    for arg in [&detached, &holding] {
        assert!(
            support::holds_within(GONE_WITHIN, || running(arg).is_empty()),
            "`sleep {arg}` outlived the call"
        );
    }
}

#[test]
fn without_namespaces_a_fully_detached_process_survives_but_writes_stay_refused() {
    if !enforced("without_namespaces_a_fully_detached_process_survives_but_writes_stay_refused") {
        return;
    }
    let project = Project::new();
    let flags = project.config(json!({"sandbox": {"namespaces": false}}));
    let (detached, holding) = (project.sleeper(1), project.sleeper(2));
    let home_file = project.home().join("owned.txt");
    let text = project.bash_with(
        &["--config", flags.to_str().unwrap()],
        &format!(
            "echo \"pid=$$\"; \
             setsid env -i sleep {detached} > /dev/null 2>&1 < /dev/null & \
             setsid env -i sleep {holding} & \
             echo x > {}",
            home_file.display()
        ),
    );
    assert!(!text.lines().any(|l| l == "pid=2"), "{text}");
    // Landlock needs no namespace.
    assert_write_denied("echo x > ~/owned.txt", &text);
    assert!(!home_file.exists());
    // The one holding the output is found by its pipe and stopped.
    assert!(
        text.contains("Background processes that kept the output open were stopped"),
        "{text}"
    );
    assert!(support::holds_within(GONE_WITHIN, || running(&holding).is_empty()));
    // The one that cleared its environment and closed its pipes is out of reach of the marker
    // search: it outlives the call (the project's cleanup kills it).
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(running(&detached).len(), 1, "`sleep {detached}` is gone");
}

#[test]
fn the_plan_agent_cannot_write_in_the_location() {
    if !enforced("the_plan_agent_cannot_write_in_the_location") {
        return;
    }
    let project = Project::new();
    let command = "echo x > planned.txt";
    let text = project.bash_with(&["--agent", "plan"], command);
    assert_write_denied(command, &text);
    assert!(!project.root().join("planned.txt").exists());
    // The build agent, the default, may.
    project.bash(command);
    assert!(project.root().join("planned.txt").exists());
}

#[test]
fn without_a_sandbox_commands_run_and_say_so_or_are_refused_as_configured() {
    let project = Project::new();
    let simulated = || {
        let mut command = project.tackle();
        command.env("TACKLE_SANDBOX_SIMULATE_NONE", "1");
        command
    };
    let output = project.call_with(
        simulated(),
        &["--yes"],
        json!({"command": "echo x > ran.txt && echo done"}),
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{}", printed(&output));
    assert!(text.lines().any(|l| l == "done"), "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("sandbox: unavailable, this command ran unsandboxed (")
            && last.ends_with(')'),
        "{text}"
    );
    assert!(project.root().join("ran.txt").exists());

    let refuse = project.config(json!({"sandbox": {"whenUnavailable": "refuse"}}));
    let output = project.call_with(
        simulated(),
        &["--yes", "--config", refuse.to_str().unwrap()],
        json!({"command": "echo x > refused.txt"}),
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{}", printed(&output));
    assert!(
        text.contains("the sandbox cannot be applied on this machine"),
        "{text}"
    );
    assert!(text.contains("so nothing was run"), "{text}");
    assert!(!project.root().join("refused.txt").exists());
}

#[test]
fn sandbox_off_asks_bash_unsandboxed_and_the_plan_agent_is_denied_it() {
    if !enforced("sandbox_off_asks_bash_unsandboxed_and_the_plan_agent_is_denied_it") {
        return;
    }
    let project = Project::new();
    let home_file = project.home().join("unsandboxed.txt");
    let args = json!({
        "command": format!("echo x > {}", home_file.display()),
        "sandbox": "off",
    });
    // Writing in the home directory is allowed by rule, so only `bash_unsandboxed` asks; with
    // nobody to ask, nothing runs.
    let allow_outside = project.config(json!({"permission": {
        "external_directory": {format!("{}/*", project.home().display()): "allow"}
    }}));
    let output = project.call(&["--config", allow_outside.to_str().unwrap()], args.clone());
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{}", printed(&output));
    assert!(
        text.contains("permission to run `bash_unsandboxed`"),
        "{text}"
    );
    assert!(!home_file.exists());

    let output = project.call(&["--yes"], args.clone());
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{}", printed(&output));
    assert_eq!(
        text.lines().last(),
        Some("sandbox: off for this command, as allowed"),
        "{text}"
    );
    assert!(
        home_file.exists(),
        "the allowed command did not run unsandboxed"
    );
    std::fs::remove_file(&home_file).unwrap();

    let output = project.call(&["--agent", "plan", "--yes"], args);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{}", printed(&output));
    assert!(text.contains("`bash_unsandboxed`"), "{text}");
    assert!(text.contains("denied"), "{text}");
    assert!(!home_file.exists());
}

#[test]
fn a_project_cannot_turn_the_sandbox_off_until_it_is_trusted() {
    if !enforced("a_project_cannot_turn_the_sandbox_off_until_it_is_trusted") {
        return;
    }
    let project = Project::new();
    std::fs::create_dir(project.root().join(".tackle")).unwrap();
    std::fs::write(
        project.root().join(".tackle/config.json"),
        json!({"sandbox": {"mode": "off"}}).to_string(),
    )
    .unwrap();
    let home_file = project.home().join("owned.txt");
    let command = format!("echo x > {}", home_file.display());
    let text = project.bash(&command);
    assert_write_denied(&command, &text);
    assert!(
        text.contains("this project's configuration is not trusted"),
        "{text}"
    );
    assert!(!home_file.exists());
    let trust = project.tackle().arg("trust").output().unwrap();
    assert_eq!(trust.status.code(), Some(0), "{}", stdout(&trust));
    // Trusted, the project's `mode: off` applies.
    let text = project.bash(&command);
    assert_eq!(exit_line(&text).as_deref(), Some("0"), "{text}");
    assert!(home_file.exists());
}

#[test]
fn cargo_build_of_a_small_crate_works_under_the_default_policy() {
    if !enforced("cargo_build_of_a_small_crate_works_under_the_default_policy") {
        return;
    }
    let project = Project::new();
    let krate = project.root().join("tiny");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/main.rs"),
        "fn main() { println!(\"tiny ran\"); }\n",
    )
    .unwrap();
    let cargo_home = project.data.path().join("cargo-home");
    std::fs::create_dir(&cargo_home).unwrap();
    let mut tackle = project.tackle();
    tackle
        .env("CARGO_HOME", &cargo_home)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    // The rustup proxies find their toolchains in the real home, not the test's.
    if std::env::var_os("RUSTUP_HOME").is_none()
        && let Some(home) = std::env::var_os("HOME")
    {
        tackle.env("RUSTUP_HOME", Path::new(&home).join(".rustup"));
    }
    let output = project.call_with(
        tackle,
        &["--yes"],
        json!({"command": "cargo run --offline --quiet", "workdir": "tiny", "timeout": 120000}),
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{}", printed(&output));
    assert!(text.lines().any(|l| l == "tiny ran"), "{text}");
    assert_eq!(exit_line(&text).as_deref(), Some("0"), "{text}");
    assert!(krate.join("target").is_dir());
    // The cargo caches are made, writable, for a first build with dependencies.
    assert!(cargo_home.join("registry").is_dir());
}

#[test]
fn npm_install_works_under_the_default_policy() {
    if !enforced("npm_install_works_under_the_default_policy") {
        return;
    }
    let found = Command::new("sh")
        .args(["-c", "command -v npm"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip(
            "npm_install_works_under_the_default_policy",
            "npm is not installed",
        );
        return;
    }
    let project = Project::new();
    let web = project.root().join("web");
    std::fs::create_dir(&web).unwrap();
    std::fs::write(
        web.join("package.json"),
        json!({"name": "web", "version": "1.0.0", "private": true}).to_string(),
    )
    .unwrap();
    let mut tackle = project.tackle();
    tackle.env("NO_UPDATE_NOTIFIER", "1");
    let output = project.call_with(
        tackle,
        &["--yes"],
        json!({"command": "npm install --no-audit --no-fund", "workdir": "web", "timeout": 120000}),
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{}", printed(&output));
    assert_eq!(exit_line(&text).as_deref(), Some("0"), "{text}");
    assert!(web.join("package-lock.json").is_file());
    // npm's cache lives in the home directory, writable as a tool cache.
    assert!(project.home().join(".npm/_logs").is_dir());
}

#[tokio::test]
async fn serve_refuses_a_write_outside_the_location() {
    if !enforced("serve_refuses_a_write_outside_the_location") {
        return;
    }
    let project = Project::new();
    let client = project.serve().await;
    let home_file = project.home().join("owned.txt");
    let command = format!("echo x > {}", home_file.display());
    let result = support::call(&client, "bash", json!({ "command": command })).await;
    let text = support::text(&result);
    assert_ne!(result.is_error, Some(true), "{text}");
    assert_write_denied(&command, &text);
    assert!(!home_file.exists());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn serve_a_job_and_the_process_it_detached_end_with_bash_kill() {
    if !contained("serve_a_job_and_the_process_it_detached_end_with_bash_kill") {
        return;
    }
    let project = Project::new();
    let client = project.serve().await;
    let (detached, holding, job) = (project.sleeper(1), project.sleeper(2), project.sleeper(3));
    let command = format!(
        "setsid env -i sleep {detached} > /dev/null 2>&1 < /dev/null & \
         setsid env -i sleep {holding} & \
         echo x > out/from-job; echo \"write=$?\"; sleep {job}"
    );
    let args = json!({ "command": command, "runInBackground": true });
    let result = support::call(&client, "bash", args).await;
    let started = support::text(&result);
    assert_ne!(result.is_error, Some(true), "{started}");
    let at = started
        .find("job-")
        .unwrap_or_else(|| panic!("no job in: {started}"));
    let id: String = started[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    for arg in [&detached, &holding, &job] {
        assert!(
            support::holds_within(Duration::from_secs(10), || !running(arg).is_empty()),
            "`sleep {arg}` never started: {started}"
        );
    }
    let result = support::call(&client, "bash_output", json!({"jobId": id})).await;
    let output = format!("{started}{}", support::text(&result));
    assert!(output.contains("Permission denied"), "{output}");
    assert!(output.contains("write=1"), "{output}");
    let result = support::call(&client, "bash_kill", json!({"jobId": id})).await;
    assert_ne!(result.is_error, Some(true), "{}", support::text(&result));
    for arg in [&detached, &holding, &job] {
        assert!(
            support::holds_within(GONE_WITHIN, || running(arg).is_empty()),
            "`sleep {arg}` outlived bash_kill"
        );
    }
    assert_eq!(project.outside_entries(), Vec::<String>::new());
    client.cancel().await.unwrap();
}

/// A loopback HTTP server answering `hello` to every request, on its own thread.
fn hello_server() -> u16 {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
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
fn an_allow_list_lets_a_listed_loopback_port_through_the_proxy_and_refuses_another() {
    if !enforced("an_allow_list_lets_a_listed_loopback_port_through_the_proxy_and_refuses_another")
    {
        return;
    }
    let project = Project::new();
    let (listed, other) = (hello_server(), hello_server());
    let config = project.config(json!({
        "sandbox": {"network": {"allow": [format!("localhost:{listed}")]}}
    }));
    let flags = ["--config", config.to_str().unwrap()];
    let text = project.bash_with(
        &flags,
        &format!("curl -sS --max-time 5 http://localhost:{listed}/"),
    );
    assert!(text.lines().any(|l| l == "hello"), "{text}");
    let text = project.bash_with(
        &flags,
        &format!("curl -sS --fail --max-time 5 http://localhost:{other}/"),
    );
    assert!(!text.contains("hello"), "{text}");
    assert!(text.contains("403"), "{text}");
    assert!(
        text.contains(&format!("sandbox refused connecting to localhost:{other}")),
        "{text}"
    );
    // A client that ignores the proxy cannot go around it: only the proxy's port is open.
    let text = project.bash_with(
        &flags,
        &format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {listed}), timeout=5); print('DIRECT-OK')\""
        ),
    );
    assert!(!text.contains("DIRECT-OK"), "{text}");
}

#[test]
fn a_command_hook_runs_sandboxed_unless_the_configuration_says_otherwise() {
    if !enforced("a_command_hook_runs_sandboxed_unless_the_configuration_says_otherwise") {
        return;
    }
    let project = Project::new();
    let mark = project.outside().join("hooked");
    let hook = json!({"before": [{
        "tools": ["bash"],
        "command": ["sh", "-c", format!("echo y > hook-ran; echo x > '{}' || true", mark.display())],
    }]});
    let sandboxed = project.config(json!({"hooks": hook}));
    let text = project.bash_with(&["--config", sandboxed.to_str().unwrap()], "echo ran");
    assert!(text.contains("ran"), "{text}");
    assert!(
        project.root().join("hook-ran").exists(),
        "the hook did not run"
    );
    assert!(
        !mark.exists(),
        "the sandboxed hook wrote outside the Location"
    );
    let unsandboxed = project.config(json!({"hooks": hook, "sandbox": {"hooks": false}}));
    let text = project.bash_with(&["--config", unsandboxed.to_str().unwrap()], "echo ran");
    assert!(text.contains("ran"), "{text}");
    assert!(mark.exists(), "the unsandboxed hook did not run");
    std::fs::remove_file(&mark).unwrap();
}

/// Whether `bwrap` is installed; otherwise `test` is skipped (fails under `CI=true`).
fn bubblewrap(test: &str) -> bool {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|dir| dir.join("bwrap").is_file());
    enforced(test) && (found || skip(test, "`bwrap` is not installed"))
}

#[test]
fn the_bubblewrap_backend_confines_writes_processes_git_and_the_network() {
    if !bubblewrap("the_bubblewrap_backend_confines_writes_processes_git_and_the_network") {
        return;
    }
    let project = Project::new();
    let bwrap = project.config(json!({"sandbox": {"backend": "bubblewrap"}}));
    let flags = ["--config", bwrap.to_str().unwrap()];
    let outside = project.outside().join("bwrap-owned");
    let text = project.bash_with(
        &flags,
        &format!(
            "git init -q && echo a > a && git add a \
             && git -c user.name=t -c user.email=t@example.com commit -qm first && echo committed; \
             echo t > \"$TMPDIR/t\" && echo tmp-ok; echo $$; echo x > '{}'",
            outside.display()
        ),
    );
    assert!(text.lines().any(|l| l == "committed"), "{text}");
    assert!(text.lines().any(|l| l == "tmp-ok"), "{text}");
    assert!(
        text.lines().any(|l| l == "2"),
        "its own PID namespace: {text}"
    );
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(text.contains("sandbox refused writing"), "{text}");
    assert!(!outside.exists());
    let text = project.bash_with(
        &flags,
        "echo evil > .git/hooks/pre-commit; mv .git .git-old; echo done",
    );
    assert!(text.contains("Device or resource busy"), "{text}");
    assert!(!project.root().join(".git/hooks/pre-commit").exists());
    assert!(project.root().join(".git").is_dir());
    // A detached process ends with the call.
    let detached = project.sleeper(7);
    project.bash_with(
        &flags,
        &format!("setsid env -i sleep {detached} > /dev/null 2>&1 < /dev/null & sleep 0.3"),
    );
    assert!(
        support::holds_within(GONE_WITHIN, || running(&detached).is_empty()),
        "`sleep {detached}` outlived the call"
    );
    // The network off is a network namespace of its own.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let off = project.config(json!({"sandbox": {"backend": "bubblewrap", "network": "off"}}));
    let text = project.bash_with(
        &["--config", off.to_str().unwrap()],
        &format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')\""
        ),
    );
    assert!(!text.contains("CONNECTED"), "{text}");
}

#[test]
fn bubblewrap_configured_but_missing_falls_back_to_landlock_and_says_so() {
    if !enforced("bubblewrap_configured_but_missing_falls_back_to_landlock_and_says_so") {
        return;
    }
    let project = Project::new();
    // A PATH with the shell and the usual tools but no `bwrap`.
    let bin = project.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["bash", "sh", "echo", "cat"] {
        if let Ok(path) = which(tool) {
            std::os::unix::fs::symlink(path, bin.join(tool)).unwrap();
        }
    }
    let config = project.config(json!({"sandbox": {"backend": "bubblewrap"}}));
    let outside = project.outside().join("fallback-owned");
    let mut tackle = project.tackle();
    tackle.env("PATH", &bin);
    let output = project.call_with(
        tackle,
        &["--yes", "--config", config.to_str().unwrap()],
        json!({"command": format!("echo x > '{}'", outside.display())}),
    );
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!outside.exists(), "{text}");
    assert!(
        text.contains("bubblewrap is configured but `bwrap` is not installed; Landlock is used"),
        "{text}"
    );
}

/// The path of `tool` on this process's `PATH`.
fn which(tool: &str) -> Result<std::path::PathBuf, ()> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(tool))
        .find(|path| path.is_file())
        .ok_or(())
}
