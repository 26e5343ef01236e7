//! Background jobs end to end through `tackle serve`: a dev server started, queried, read and
//! killed; a prompt answered; a watcher read with `wait`; a job that ignores SIGTERM; the limit;
//! a timeout moved to the background; 1 GiB of output in bounded memory; and no process left
//! when the client goes away.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolResult;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use support::{call, text};
use tempfile::TempDir;

/// Marks every process one test starts, so the test can find what is left.
const MARK: &str = "TACKLE_JOBS_TEST";

struct Served {
    client: RunningService<rmcp::RoleClient, ()>,
    /// The `tackle serve` process.
    pid: u32,
    _root: TempDir,
    _data: TempDir,
    mark: String,
}

async fn serve(config: Option<Value>) -> Served {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    if let Some(config) = config {
        std::fs::create_dir_all(root.path().join(".tackle")).unwrap();
        std::fs::write(root.path().join(".tackle/config.json"), config.to_string()).unwrap();
    }
    let mark = data.path().display().to_string();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_tackle"));
    command
        .arg("--root")
        .arg(root.path())
        .arg("--data-dir")
        .arg(data.path())
        .args(["serve", "--yes"])
        .env("HOME", data.path())
        .env(MARK, &mark)
        .env_remove("TACKLE_MODEL");
    let transport = TokioChildProcess::new(command).unwrap();
    let pid = transport.id().expect("the server's pid");
    let client = ().serve(transport).await.expect("initialize");
    Served {
        client,
        pid,
        _root: root,
        _data: data,
        mark,
    }
}

impl Served {
    async fn call(&self, name: &str, args: Value) -> (String, CallToolResult) {
        let result = call(&self.client, name, args).await;
        (text(&result), result)
    }

    /// Processes other than `tackle serve` that carry this test's mark.
    fn leftovers(&self) -> Vec<i32> {
        let mark = format!("{MARK}={}", self.mark);
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid as u32 != self.pid)
            .filter(|pid| {
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                environ.split(|&b| b == 0).any(|v| v == mark.as_bytes())
            })
            .collect()
    }
}

impl Served {
    /// `first` plus the job's later output, read with `wait`, until it holds `needle` (a
    /// loaded machine may print after the start's grace).
    async fn until_seen(&self, id: &str, first: &str, needle: &str) -> String {
        let mut seen = first.to_owned();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !seen.contains(needle) && Instant::now() < deadline {
            let (more, _) = self
                .call("bash_output", json!({"jobId": id, "wait": 5000}))
                .await;
            seen.push_str(&more);
        }
        seen
    }
}

fn job_id(out: &str) -> String {
    let at = out
        .find("job-")
        .unwrap_or_else(|| panic!("no job id in: {out}"));
    out[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

fn alive(pid: i32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

async fn until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    condition()
}

#[tokio::test]
async fn a_dev_server_is_started_queried_read_and_killed() {
    let served = serve(None).await;
    let (started, result) = served
        .call(
            "bash",
            json!({"command": "exec python3 -u -m http.server 0 --bind 127.0.0.1", "runInBackground": true}),
        )
        .await;
    assert_ne!(result.is_error, Some(true), "{started}");
    assert!(
        started.contains("Running in the background as job-1"),
        "{started}"
    );
    let started = served
        .until_seen("job-1", &started, "Serving HTTP on")
        .await;
    let port: u16 = started
        .split("port ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let id = job_id(&started);
    let (fetched, _) = served
        .call(
            "bash",
            json!({"command": format!("curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/")}),
        )
        .await;
    assert!(fetched.starts_with("200"), "{fetched}");
    let (log, _) = served
        .call("bash_output", json!({"jobId": id, "wait": 5000}))
        .await;
    assert!(log.contains("\"GET / HTTP/1.1\" 200"), "{log}");
    assert!(log.ends_with("[job-1 is running]"), "{log}");
    // Nothing is shown twice.
    let (again, _) = served.call("bash_output", json!({"jobId": id})).await;
    assert!(again.starts_with("(no new output)"), "{again}");
    let (listed, _) = served.call("bash_output", json!({})).await;
    assert!(listed.starts_with("job-1 running for "), "{listed}");
    let pids = served.leftovers();
    assert!(!pids.is_empty());
    let (killed, _) = served.call("bash_kill", json!({"jobId": id})).await;
    assert!(killed.contains("exit: stopped by tackle"), "{killed}");
    assert!(until(Duration::from_secs(5), || served.leftovers().is_empty()).await);
    let (gone, result) = served.call("bash_output", json!({"jobId": id})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        gone.contains("There is no background job `job-1`"),
        "{gone}"
    );
}

#[tokio::test]
async fn a_prompt_is_answered_with_bash_input_and_a_watcher_is_read_with_wait() {
    let served = serve(None).await;
    let (started, _) = served
        .call(
            "bash",
            json!({"command": "printf 'Name? '; read name; echo \"Hello $name\"", "runInBackground": true}),
        )
        .await;
    let id = job_id(&started);
    // On a loaded machine the prompt may come after the start's grace: wait for it.
    let mut prompt = started.clone();
    while !prompt.contains("Name? ") {
        let (more, _) = served
            .call("bash_output", json!({"jobId": id, "wait": 5000}))
            .await;
        assert!(more.contains("running"), "{more}");
        prompt.push_str(&more);
    }
    let (mut answered, _) = served
        .call("bash_input", json!({"jobId": id, "text": "Ada\n"}))
        .await;
    assert!(
        answered.starts_with("Wrote 4 bytes to job-1's stdin."),
        "{answered}"
    );
    while !answered.contains("ended") {
        let (more, _) = served
            .call("bash_output", json!({"jobId": id, "wait": 5000}))
            .await;
        answered.push_str(&more);
    }
    assert!(answered.contains("Hello Ada"), "{answered}");

    let (watching, _) = served
        .call(
            "bash",
            json!({"command": "for i in 1 2 3 4; do echo tick $i; sleep 0.5; done", "run_in_background": true}),
        )
        .await;
    let id = job_id(&watching);
    let mut seen = watching
        .lines()
        .filter(|l| l.starts_with("tick"))
        .map(str::to_owned)
        .collect::<Vec<_>>();
    let mut last = String::new();
    for _ in 0..20 {
        let (out, _) = served
            .call("bash_output", json!({"jobId": id, "wait": 3000}))
            .await;
        seen.extend(
            out.lines()
                .filter(|l| l.starts_with("tick"))
                .map(str::to_owned),
        );
        last = out;
        if last.contains("ended") {
            break;
        }
    }
    assert_eq!(
        seen,
        ["tick 1", "tick 2", "tick 3", "tick 4"],
        "each line once"
    );
    assert!(last.ends_with("[job-2 ended: exit: 0]"), "{last}");
}

#[tokio::test]
async fn a_job_that_ignores_sigterm_is_killed_and_the_limit_names_the_running_jobs() {
    let served = serve(Some(json!({"shell": {"maxJobs": 2}}))).await;
    let (stubborn, _) = served
        .call(
            "bash",
            json!({"command": "trap '' TERM; echo ready; while true; do sleep 0.2; done", "runInBackground": true}),
        )
        .await;
    let stubborn = served.until_seen("job-1", &stubborn, "ready").await;
    assert!(stubborn.contains("ready"), "{stubborn}");
    served
        .call(
            "bash",
            json!({"command": "sleep 600", "runInBackground": true}),
        )
        .await;
    let (refused, result) = served
        .call(
            "bash",
            json!({"command": "sleep 601", "runInBackground": true}),
        )
        .await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        refused.contains("already runs 2 background jobs")
            && refused.contains("job-1 (`trap '' TERM;")
            && refused.contains("job-2 (`sleep 600`)"),
        "{refused}"
    );
    let started = Instant::now();
    let (killed, _) = served.call("bash_kill", json!({"jobId": "job-1"})).await;
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "SIGKILL came after the grace"
    );
    assert!(
        killed.contains("exit: stopped by tackle") && killed.contains("Last output:\nready"),
        "{killed}"
    );
    // Room again.
    let (ok, result) = served
        .call(
            "bash",
            json!({"command": "sleep 601", "runInBackground": true}),
        )
        .await;
    assert_ne!(result.is_error, Some(true), "{ok}");
}

#[tokio::test]
async fn a_command_past_its_timeout_goes_on_as_a_job() {
    let served = serve(None).await;
    let (moved, _) = served
        .call(
            "bash",
            json!({"command": "echo started; sleep 2; echo done", "timeout": 500, "onTimeout": "background"}),
        )
        .await;
    assert!(
        moved.contains(
            "Still running after the 500 ms timeout, so it goes on in the background as job-1"
        ),
        "{moved}"
    );
    let mut finished = String::new();
    for _ in 0..10 {
        let (out, _) = served
            .call("bash_output", json!({"jobId": "job-1", "wait": 10000}))
            .await;
        finished.push_str(&out);
        if out.contains("ended") {
            break;
        }
    }
    let all = format!("{moved}{finished}");
    let (started, done) = (all.find("started\n"), all.find("done\n"));
    assert!(started.is_some() && started < done, "{all}");
    assert!(finished.ends_with("[job-1 ended: exit: 0]"), "{finished}");
    // A command that ends within its timeout reads as a plain foreground run.
    let (quick, _) = served
        .call(
            "bash",
            json!({"command": "echo quick", "onTimeout": "background"}),
        )
        .await;
    assert_eq!(quick.trim(), "quick\n\nexit: 0");
}

#[tokio::test]
async fn closing_the_client_kills_every_job() {
    let served = serve(None).await;
    for n in 0..3 {
        served
            .call(
                "bash",
                json!({"command": format!("sleep {}", 900 + n), "runInBackground": true}),
            )
            .await;
    }
    let pids = served.leftovers();
    assert!(pids.len() >= 3, "{pids:?}");
    let server = served.pid as i32;
    let Served { client, .. } = served;
    let _ = client.cancel().await;
    assert!(
        until(Duration::from_secs(10), || pids.iter().all(|p| !alive(*p))).await,
        "jobs are left: {pids:?}"
    );
    assert!(
        until(Duration::from_secs(10), || !alive(server)).await,
        "serve is left"
    );
}

#[tokio::test]
async fn a_gigabyte_of_output_keeps_the_host_under_64_mb() {
    let served = serve(None).await;
    let (started, _) = served
        .call(
            "bash",
            json!({"command": "head -c 1073741824 /dev/zero | tr '\\0' a; echo; echo end", "runInBackground": true}),
        )
        .await;
    let id = job_id(&started);
    let mut dropped = 0;
    let mut last = String::new();
    // Until the job ends, however many calls that takes: a call returns as soon as output
    // arrived, so a fast build makes many more of them than a debug one.
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        let (out, result) = served
            .call("bash_output", json!({"jobId": id, "wait": 5000}))
            .await;
        assert_ne!(result.is_error, Some(true), "{out}");
        if out.contains("bytes before this were dropped") {
            dropped += 1;
        }
        last = out;
        if last.contains("ended") {
            break;
        }
    }
    assert!(
        last.contains("end\n") && last.ends_with("[job-1 ended: exit: 0]"),
        "{}",
        &last[last.len().saturating_sub(300)..]
    );
    assert!(dropped > 0, "the window lost output and said so");
    let status = std::fs::read_to_string(format!("/proc/{}/status", served.pid)).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(peak_kb < 64 * 1024, "peak RSS {peak_kb} kB");
    eprintln!("peak RSS of tackle serve: {peak_kb} kB");
}

#[test]
fn the_python_sdk_starts_queries_reads_and_kills_a_dev_server_and_leaves_no_process() {
    let Some(python) = support::python("jobs python_sdk") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mark = format!("{}", data.path().display());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/jobs_python_sdk.py"
    );
    let output = std::process::Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_tackle"))
        .arg(root.path())
        .arg(data.path())
        .env(MARK, &mark)
        .env("HOME", data.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("CLOSED"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Nothing the session started is left: not the server, not the job left running.
    let marked = || -> Vec<i32> {
        let needle = format!("{MARK}={mark}");
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .unwrap_or_default()
                    .split(|&b| b == 0)
                    .any(|v| v == needle.as_bytes())
            })
            .filter(|pid| alive(*pid))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marked().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(marked(), Vec::<i32>::new(), "processes are left behind");
}

#[tokio::test]
async fn sigterm_and_ctrl_c_to_serve_kill_every_job_and_what_it_started() {
    for signal in ["-TERM", "-INT"] {
        let served = serve(None).await;
        // A job whose shell waits on a child of its own, and one in the plain case.
        served
            .call(
                "bash",
                json!({"command": "sleep 901 & sleep 902 & wait", "runInBackground": true}),
            )
            .await;
        served
            .call(
                "bash",
                json!({"command": "sleep 903", "runInBackground": true}),
            )
            .await;
        let pids = served.leftovers();
        assert!(pids.len() >= 4, "{signal}: {pids:?}");
        let status = std::process::Command::new("kill")
            .args([signal, &served.pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        assert!(
            until(Duration::from_secs(15), || pids.iter().all(|p| !alive(*p))).await,
            "{signal}: left behind: {:?}",
            pids.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
        );
        assert!(until(Duration::from_secs(5), || !alive(served.pid as i32)).await);
    }
}
