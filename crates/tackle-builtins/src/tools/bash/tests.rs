//! Tests of the bash tool: real shells, real process groups, real pipes.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tackle_core::{CallIdentity, CancellationToken, Context, InvocationOutcome};

use super::run::{self, CaptureLimits, Spec};
use super::{BashOptions, choose_shell, tool_with_options as tool_with};
use crate::fs::LocationFs;
use crate::tools::ToolEnv;

fn env(dir: &Path) -> ToolEnv {
    ToolEnv::new(LocationFs::new(dir).unwrap())
}

fn cx(token: CancellationToken) -> Context {
    Context::new(CallIdentity::new("s", "build", "m", "c"), token)
}

/// Options whose spool files go to `dir`.
fn options(dir: &Path) -> BashOptions {
    BashOptions {
        spool_dir: dir.join("spool"),
        ..BashOptions::default()
    }
}

/// Runs the tool: `Ok(structured output)` or `Err(failure text)`.
async fn call_with(dir: &Path, options: BashOptions, args: Value) -> Result<Value, String> {
    let tool = tool_with(&env(dir), options);
    match tool
        .invoke(args.to_string().into(), cx(CancellationToken::new()))
        .await
        .outcome
    {
        InvocationOutcome::Completed(output) => Ok(output.structured),
        InvocationOutcome::Failed(failure) => Err(failure.to_string()),
        other => panic!("unexpected outcome {other:?}"),
    }
}

async fn call(dir: &Path, args: Value) -> Result<Value, String> {
    call_with(dir, options(dir), args).await
}

fn text(output: &Value) -> &str {
    output["output"].as_str().unwrap()
}

/// Live (not zombie) processes whose process group is `pgid`.
fn live_in_group(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            found.push(pid);
        }
    }
    found
}

/// Waits up to `bound` for the group to have no live process.
async fn group_ends(pgid: i32, bound: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let live = live_in_group(pgid);
        if live.is_empty() || start.elapsed() > bound {
            return live;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn read_pgid(dir: &Path) -> i32 {
    std::fs::read_to_string(dir.join("pgid.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn bash_nonzero_exit_is_reported_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(dir.path(), json!({"command": "echo hi; exit 42"}))
        .await
        .unwrap();
    assert_eq!(out["exitCode"], 42);
    assert_eq!(out["signal"], Value::Null);
    assert_eq!(out["timedOut"], false);
    assert_eq!(text(&out), "hi\n\nexit: 42");
    assert_eq!(out["bytes"], 3);
    assert_eq!(out["workdir"], ".");
}

#[tokio::test]
async fn bash_stderr_is_captured() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(dir.path(), json!({"command": "echo oops >&2; exit 3"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "oops\n\nexit: 3");
}

#[tokio::test]
async fn bash_stdout_and_stderr_keep_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let command = "echo a; sleep 0.1; echo b >&2; sleep 0.1; echo c";
    let out = call(dir.path(), json!({"command": command})).await.unwrap();
    assert_eq!(text(&out), "a\nb\nc\n\nexit: 0");
}

#[tokio::test]
async fn bash_signal_exit_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(dir.path(), json!({"command": "kill -9 $$"}))
        .await
        .unwrap();
    assert_eq!(out["exitCode"], Value::Null);
    assert_eq!(out["signal"], 9);
    assert!(
        text(&out).ends_with("exit: killed by signal 9 (SIGKILL)"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn bash_timeout_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let command = "echo $$ > pgid.txt; echo started; sh -c 'sleep 1000 & sleep 1000'";
    let start = Instant::now();
    let out = call(dir.path(), json!({"command": command, "timeout": 500}))
        .await
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(out["timedOut"], true);
    let text = text(&out);
    assert!(
        text.starts_with("started\n"),
        "partial output is kept: {text}"
    );
    assert!(
        text.contains(
            "Command timed out after 500 ms and was stopped (SIGTERM). Retry with a larger timeout"
        ),
        "{text}"
    );
    let pgid = read_pgid(dir.path());
    assert!(live_in_group(pgid).is_empty(), "{:?}", live_in_group(pgid));
    assert!(run::group_gone(pgid));
}

#[tokio::test]
async fn bash_timeout_kills_processes_that_ignore_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let command = "echo $$ > pgid.txt; trap '' TERM; sh -c 'sleep 1000 & sleep 1000'";
    let start = Instant::now();
    let out = call(dir.path(), json!({"command": command, "timeout": 300}))
        .await
        .unwrap();
    let took = start.elapsed();
    assert!(
        took >= run::GRACE && took < Duration::from_secs(6),
        "{took:?}"
    );
    assert!(
        text(&out).contains("was stopped (SIGTERM, then SIGKILL)"),
        "{}",
        text(&out)
    );
    let pgid = read_pgid(dir.path());
    assert!(live_in_group(pgid).is_empty(), "{:?}", live_in_group(pgid));
}

#[tokio::test]
async fn bash_cancellation_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let tool = tool_with(&env(dir.path()), options(dir.path()));
    let token = CancellationToken::new();
    let command = "echo $$ > pgid.txt; sh -c 'sleep 1000 & sleep 1000'";
    let invocation = tool.invoke(
        json!({"command": command}).to_string().into(),
        cx(token.clone()),
    );
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    };
    let (invocation, ()) = tokio::join!(invocation, cancel);
    assert!(
        matches!(invocation.outcome, InvocationOutcome::Interrupted(_)),
        "{:?}",
        invocation.outcome
    );
    let pgid = read_pgid(dir.path());
    let left = group_ends(pgid, Duration::from_secs(5)).await;
    assert!(left.is_empty(), "processes left in group {pgid}: {left:?}");
}

#[tokio::test]
async fn bash_background_child_holding_output_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let out = call(
        dir.path(),
        json!({"command": "echo $$ > pgid.txt; sleep 100 & echo done"}),
    )
    .await
    .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    let text = text(&out);
    assert!(text.starts_with("done\n\nexit: 0\n"), "{text}");
    assert!(
        text.contains("Background processes that kept the output open were stopped."),
        "{text}"
    );
    assert_eq!(out["backgroundStopped"], true);
    let left = group_ends(read_pgid(dir.path()), Duration::from_secs(2)).await;
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn bash_background_child_with_redirected_output_keeps_running() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(
        dir.path(),
        json!({"command": "echo $$ > pgid.txt; sleep 100 > /dev/null 2>&1 & echo done"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "done\n\nexit: 0");
    assert_eq!(out["backgroundStopped"], false);
    let pgid = read_pgid(dir.path());
    assert_eq!(live_in_group(pgid).len(), 1, "the server is left running");
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::SIGKILL).unwrap();
}

#[tokio::test]
async fn bash_stdin_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let out = call(dir.path(), json!({"command": "read x; echo \"[$x]\"; cat"}))
        .await
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(text(&out), "[]\n\nexit: 0");
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn bash_git_pager_and_editor_do_not_hang() {
    let path = std::env::var_os("PATH");
    if super::find_program(Path::new("git"), path.as_deref()).is_none() {
        eprintln!("git is not installed; the pager test has nothing to run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    git(dir.path(), &["add", "a.txt"]);
    git(dir.path(), &["commit", "-q", "-m", "first commit"]);
    let start = Instant::now();
    let out = call(dir.path(), json!({"command": "git log", "timeout": 10000}))
        .await
        .unwrap();
    assert_eq!(out["exitCode"], 0, "{}", text(&out));
    assert!(text(&out).contains("first commit"), "{}", text(&out));

    // No -m: the editor is `true`, so git aborts on an empty message instead of waiting.
    std::fs::write(dir.path().join("a.txt"), "b\n").unwrap();
    git(dir.path(), &["add", "a.txt"]);
    let command = "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t \
                   GIT_COMMITTER_EMAIL=t@e git commit";
    let out = call(dir.path(), json!({"command": command, "timeout": 10000}))
        .await
        .unwrap();
    assert_eq!(out["timedOut"], false);
    assert_ne!(out["exitCode"], 0, "{}", text(&out));
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn bash_large_output_spools_the_middle() {
    let dir = tempfile::tempdir().unwrap();
    let opts = BashOptions {
        memory_bytes: 1000,
        head_bytes: 100,
        ..options(dir.path())
    };
    let out = call_with(dir.path(), opts, json!({"command": "seq 1 5000"}))
        .await
        .unwrap();
    let expected: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    assert_eq!(out["bytes"], expected.len());
    assert_eq!(out["droppedBytes"], 0);
    let spool = out["spoolPath"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(spool).unwrap(), expected);
    let text = text(&out);
    // Whole lines on both sides of the gap: no number is cut in half.
    let head = &expected[..expected[..100].rfind('\n').unwrap() + 1];
    assert!(text.starts_with(&format!("{head}[... ")), "{text}");
    assert!(
        text.contains(&format!("Full output: {spool} (inspect it with bash")),
        "{text}"
    );
    let last = &expected[expected.len() - 1000..];
    let tail = &last[last.find('\n').unwrap() + 1..];
    assert!(text.contains(&format!(" ...]\n{tail}\nexit: 0")), "{text}");
    // The whole output's place is repeated at the end, which an output bound keeps.
    assert!(
        text.ends_with(&format!(
            "The output was 5,000 lines (23,893 bytes); its middle is left out above. Full \
             output: {spool}"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn bash_workdir_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("file.txt"), "x").unwrap();
    let out = call(dir.path(), json!({"command": "pwd", "workdir": "sub"}))
        .await
        .unwrap();
    assert!(text(&out).contains("/sub\n"), "{}", text(&out));
    assert_eq!(out["workdir"], "sub");
    let err = call(dir.path(), json!({"command": "pwd", "workdir": "file.txt"}))
        .await
        .unwrap_err();
    assert!(err.contains("`file.txt` is a file"), "{err}");
    let err = call(dir.path(), json!({"command": "pwd", "workdir": "missing"}))
        .await
        .unwrap_err();
    assert!(err.contains("`missing` does not exist"), "{err}");
}

#[tokio::test]
async fn bash_timeout_over_the_maximum_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = call(dir.path(), json!({"command": "true", "timeout": 600001}))
        .await
        .unwrap_err();
    assert!(
        err.contains("`timeout` is 600,001 ms, over the maximum of 600,000 ms (10m 0s)"),
        "{err}"
    );
}

#[test]
fn bash_shell_choice_refuses_fish_and_falls_back() {
    let err = choose_shell(Some("/usr/bin/fish".into()), None).unwrap_err();
    assert!(err.to_string().contains("is fish"), "{err}");
    assert!(choose_shell(Some("nu".into()), None).is_err());
    assert_eq!(
        choose_shell(None, Some(OsString::new())).unwrap(),
        Path::new("/bin/sh")
    );
    let shell = choose_shell(None, std::env::var_os("PATH")).unwrap();
    assert!(
        shell.ends_with("bash") || shell.ends_with("sh"),
        "{shell:?}"
    );
}

#[tokio::test]
async fn bash_secrets_are_not_passed_to_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let base = vec![
        (OsString::from("MY_API_TOKEN"), OsString::from("s3cret")),
        (OsString::from("OPENAI_API_KEY"), OsString::from("sk-1")),
        (OsString::from("KEEP_ME"), OsString::from("yes")),
        (OsString::from("PAGER"), OsString::from("less")),
        (
            OsString::from("PATH"),
            std::env::var_os("PATH").unwrap_or_default(),
        ),
    ];
    let spec = Spec {
        shell: "/bin/sh".into(),
        command: "echo \"[$MY_API_TOKEN][$OPENAI_API_KEY][$KEEP_ME][$PAGER][$TERM]\"".into(),
        cwd: dir.path().to_path_buf(),
        env: run::child_env(base),
        timeout: Duration::from_secs(10),
        die_with_parent: true,
        limits: CaptureLimits {
            memory: 1024,
            head: 64,
            spool: BashOptions {
                spool_cap: 4096,
                ..options(dir.path())
            }
            .spool_place("s"),
        },
        sandbox: tackle_sandbox::Prepared::unsandboxed(tackle_sandbox::Status::Off {
            by_person: false,
        }),
    };
    let finished = run::run(spec, &CancellationToken::new(), &|_| {})
        .await
        .unwrap();
    assert_eq!(finished.capture.text, "[][][yes][cat][dumb]\n");
    assert!(run::group_gone(finished.pgid));
}

/// The processes listed in the file `name` (`count` PIDs, one per line) that are still alive
/// once they all ended or `wait` passed.
async fn live_pids_after(dir: &Path, name: &str, count: usize, wait: Duration) -> Vec<i32> {
    let listed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let pids: Vec<i32> = listed
        .lines()
        .filter_map(|line| line.trim().parse::<i32>().ok())
        .collect();
    assert_eq!(pids.len(), count, "{name} lists {listed:?}");
    let start = Instant::now();
    loop {
        let live = live_pids(&pids);
        if live.is_empty() || start.elapsed() >= wait {
            return live;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The processes of `pids` that are alive (not zombies).
fn live_pids(pids: &[i32]) -> Vec<i32> {
    pids.iter()
        .copied()
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .is_some_and(|(_, s)| !s.trim_start().starts_with('Z'))
            })
        })
        .collect()
}

#[tokio::test]
async fn bash_background_child_that_left_the_group_is_stopped_too() {
    let dir = tempfile::tempdir().unwrap();
    // `setsid` puts the child in its own session and group, out of reach of the group kill;
    // it still holds the output.
    let out = call(
        dir.path(),
        json!({"command": "setsid sh -c 'echo $$ >> pids.txt; exec sleep 100' & \
                            sleep 100 & echo $! >> pids.txt; \
                            while [ \"$(wc -l < pids.txt)\" -lt 2 ]; do sleep 0.01; done; echo done"}),
    )
    .await
    .unwrap();
    let text = text(&out);
    assert!(
        text.contains("Background processes that kept the output open were stopped."),
        "{text}"
    );
    assert_eq!(out["backgroundStopped"], true, "{out}");
    let left = live_pids_after(dir.path(), "pids.txt", 2, Duration::from_secs(2)).await;
    assert!(
        left.is_empty(),
        "the output says stopped, but these run: {left:?}"
    );
}

#[tokio::test]
async fn bash_timeout_stops_processes_that_left_the_group() {
    let dir = tempfile::tempdir().unwrap();
    // Redirected, so only the environment marker ties it to the call.
    let out = call(
        dir.path(),
        json!({"command": "setsid sh -c 'echo $$ > pid.txt; exec sleep 100' > /dev/null 2>&1 & \
                            sleep 100", "timeout": 500}),
    )
    .await
    .unwrap();
    assert_eq!(out["timedOut"], true, "{out}");
    let left = live_pids_after(dir.path(), "pid.txt", 1, Duration::from_secs(2)).await;
    assert!(
        left.is_empty(),
        "the timeout says stopped, but these run: {left:?}"
    );
}

#[tokio::test]
async fn bash_background_child_with_redirected_output_outside_the_group_keeps_running() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(
        dir.path(),
        json!({"command": "setsid sh -c 'echo $$ > pid.txt; exec sleep 100' > /dev/null 2>&1 & \
                            while [ ! -s pid.txt ]; do sleep 0.01; done; echo done"}),
    )
    .await
    .unwrap();
    assert_eq!(out["backgroundStopped"], false, "{out}");
    let left = live_pids_after(dir.path(), "pid.txt", 1, Duration::ZERO).await;
    assert_eq!(
        left.len(),
        1,
        "a daemon with its own output is left running"
    );
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(left[0]),
        nix::sys::signal::SIGKILL,
    );
}

/// Every spool file under `dir`, with its size, oldest first.
fn spool_files(dir: &Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut files = Vec::new();
    for session in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(session.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let metadata = file.metadata().unwrap();
            files.push((file.path(), metadata.len(), metadata.modified().unwrap()));
        }
    }
    files.sort_by_key(|(_, _, modified)| *modified);
    files
        .into_iter()
        .map(|(path, size, _)| (path, size))
        .collect()
}

#[tokio::test]
async fn bash_spool_files_stay_under_the_total_cap_oldest_removed_first() {
    let dir = tempfile::tempdir().unwrap();
    let opts = BashOptions {
        memory_bytes: 1000,
        head_bytes: 100,
        spool_cap: 10_000,
        spool_total_cap: 25_000,
        ..options(dir.path())
    };
    let spool_dir = opts.spool_dir.clone();
    let mut paths = Vec::new();
    for _ in 0..4 {
        let out = call_with(dir.path(), opts.clone(), json!({"command": "seq 1 5000"}))
            .await
            .unwrap();
        paths.push(out["spoolPath"].as_str().unwrap().to_owned());
        // Distinct modification times, so "oldest" is well defined.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let files = spool_files(&spool_dir);
    let total: u64 = files.iter().map(|(_, size)| size).sum();
    assert!(total <= 25_000, "{total} bytes in {files:?}");
    assert!(
        !Path::new(&paths[0]).exists(),
        "the oldest is removed first"
    );
    assert!(!Path::new(&paths[1]).exists(), "{files:?}");
    assert!(Path::new(&paths[2]).exists() && Path::new(&paths[3]).exists());
    // Each file is under the data directory given, never the system temp directory.
    for path in &paths[2..] {
        assert!(Path::new(path).starts_with(&spool_dir), "{path}");
    }
}

#[tokio::test]
async fn bash_spool_files_are_removed_when_their_session_ends_or_grows_old() {
    let dir = tempfile::tempdir().unwrap();
    let opts = BashOptions {
        memory_bytes: 1000,
        head_bytes: 100,
        ..options(dir.path())
    };
    let spool_dir = opts.spool_dir.clone();
    let run_in = |session: &'static str| {
        let opts = opts.clone();
        let dir = dir.path().to_path_buf();
        async move {
            let tool = tool_with(&env(&dir), opts);
            let cx = Context::new(
                CallIdentity::new(session, "build", "m", "c"),
                CancellationToken::new(),
            );
            match tool
                .invoke(json!({"command": "seq 1 5000"}).to_string().into(), cx)
                .await
                .outcome
            {
                InvocationOutcome::Completed(output) => {
                    output.structured["spoolPath"].as_str().unwrap().to_owned()
                }
                other => panic!("{other:?}"),
            }
        }
    };
    let mine = run_in("one").await;
    let other = run_in("two").await;
    super::end_session_spools(&spool_dir, "one");
    assert!(
        !Path::new(&mine).exists(),
        "the ended session's spool is gone"
    );
    assert!(Path::new(&other).exists(), "another session's spool stays");
    // The sweep removes what is older than its limit.
    super::sweep_spools(&spool_dir, Duration::ZERO);
    assert!(!Path::new(&other).exists());
    assert!(spool_files(&spool_dir).is_empty());
}

#[test]
fn bash_output_names_background_processes_that_could_not_be_stopped() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = tempfile::tempdir().unwrap();
    let limits = CaptureLimits {
        memory: 1024,
        head: 64,
        spool: options(dir.path()).spool_place("s"),
    };
    let mut capture = run::Capture::new(limits);
    capture.push(b"done\n");
    let finished = run::Finished {
        capture: capture.finish(),
        status: Some(std::process::ExitStatus::from_raw(0)),
        timed_out: false,
        cancelled: false,
        stop: None,
        background: true,
        survivors: vec![super::procs::Found {
            pid: 4242,
            name: "sleep".to_owned(),
        }],
        output_held: true,
        pgid: 1,
    };
    let out = super::render(
        finished,
        Duration::from_secs(1),
        ".".into(),
        Path::new("/bin/sh"),
    );
    assert!(!out.background_stopped);
    assert!(
        out.output
            .contains("could not all be stopped (still running: 4242 (sleep))"),
        "{}",
        out.output
    );
    assert!(!out.output.contains("were stopped."), "{}", out.output);
    assert_eq!(out.left_running.len(), 1);
}
