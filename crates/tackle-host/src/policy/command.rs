//! Command hooks from the configuration: a program run before or after matching calls, the way
//! a plugin's [`Hook`] is, for people who write hooks as scripts.
//!
//! The protocol, in the README's words for hook authors:
//! - The hook reads one JSON object on stdin: `{"phase": "before", "tool", "arguments",
//!   "sessionID", "callID"}` before the call, and `{"phase": "after", "tool", "sessionID",
//!   "callID", "outcome", "isError", "output"}` after it (`output` is the text the model reads).
//! - Before: exit 0 lets the call run; printing `{"arguments": {...}}` replaces its arguments
//!   (the tool's codec still checks them). Exit 2 refuses the call, and stderr is the message
//!   the model reads. Any other failure (another exit code, a timeout, a crash, output that is
//!   not that object) also refuses the call, naming the hook: a guard that breaks must not
//!   wave calls through.
//! - After: what the hook prints is noted for the host (journal and `tackle call --json`), never
//!   shown to the model; a failure is noted the same way.
//!
//! A hook from the project's own configuration is here only once the person trusted that
//! configuration (see [`crate::trust`]): cloning a repository is not enough to run its commands.
//!
//! A hook runs with [`IN_HOOK_ENV`] set, and a host started under it registers no command
//! hooks: a hook that calls `tackle` gets a plain tool layer instead of its own hook again.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tackle_core::{Context, Settlement};
use tackle_permission::Pattern;
use tackle_sandbox::{Request, Sandboxes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::hooks::Hook;
use crate::config::{CommandHook, HookWhen};

/// Set in every hook's environment. A tackle started with it runs no command hooks, so a hook
/// that calls `tackle` cannot start itself again, and again.
pub(crate) const IN_HOOK_ENV: &str = "TACKLE_IN_HOOK";

/// The most of a hook's stdout or stderr kept; the rest is read and dropped.
const MAX_STREAM_BYTES: usize = 64 * 1024;

/// The most of an after-hook's note kept for the host.
const MAX_NOTE_CHARS: usize = 2_000;

/// One configured command hook, ready to run.
pub(crate) struct CommandHookRunner {
    hook: CommandHook,
    tools: Vec<Pattern>,
    root: PathBuf,
    sandboxes: Option<Arc<Sandboxes>>,
}

impl CommandHookRunner {
    /// A runner for `hook`, run in `root`, under the sandbox of the call's agent when
    /// `sandboxes` is given.
    pub(crate) fn new(hook: CommandHook, root: PathBuf, sandboxes: Option<Arc<Sandboxes>>) -> Self {
        let tools = hook.tools.iter().map(|t| Pattern::new(t)).collect();
        Self {
            hook,
            tools,
            root,
            sandboxes,
        }
    }

    /// The hook's name in the journal and in messages: its file and command.
    pub(crate) fn name(hook: &CommandHook) -> String {
        format!("{} ({})", hook.command.join(" "), hook.file.display())
    }

    fn applies_to(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|p| p.matches(tool))
    }

    /// Runs the command with `input` on stdin.
    async fn run(&self, cx: &Context, input: &Value) -> Result<Finished, String> {
        let (program, args) = self
            .hook
            .command
            .split_first()
            .ok_or_else(|| "it has no command".to_owned())?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(&self.root)
            .env("TACKLE_ROOT", &self.root)
            .env(IN_HOOK_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(sandboxes) = &self.sandboxes {
            let identity = cx.identity();
            let sandbox = sandboxes
                .prepare(&Request {
                    agent: identity.agent.as_str(),
                    session: identity.session.as_str(),
                    root: &self.root,
                    unsandboxed: false,
                })
                .map_err(|e| format!("it could not be started: {e}"))?;
            sandbox.apply(command.as_std_mut());
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("it could not be started: {e}"))?;
        let pgid = child.id().map(|id| id as i32);
        let mut stdin = child.stdin.take();
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let payload = {
            let mut bytes = serde_json::to_vec(input).unwrap_or_default();
            bytes.push(b'\n');
            bytes
        };
        let work = async {
            let write = async {
                if let Some(mut stdin) = stdin.take() {
                    // A hook that ignores its input may close stdin early; that is not an error.
                    let _ = stdin.write_all(&payload).await;
                }
            };
            let (_, out, err, status) = tokio::join!(
                write,
                read_bounded(stdout.as_mut()),
                read_bounded(stderr.as_mut()),
                child.wait()
            );
            (out, err, status)
        };
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(self.hook.timeout, work) => match outcome {
                Ok((out, err, Ok(status))) => Ok(Finished {
                    code: status.code(),
                    stdout: out,
                    stderr: err,
                }),
                Ok((_, _, Err(e))) => Err(format!("it could not be waited for: {e}")),
                Err(_) => Err(format!(
                    "it timed out after {} ms and was stopped",
                    self.hook.timeout.as_millis()
                )),
            },
            () = cx.cancellation().cancelled() => {
                Err("the call was cancelled while it ran".to_owned())
            }
        };
        // However it ended, nothing the hook started outlives it.
        kill_group(pgid);
        outcome
    }

    fn before_input(cx: &Context, tool: &str, arguments: &Map<String, Value>) -> Value {
        json!({
            "phase": "before",
            "tool": tool,
            "arguments": arguments,
            "sessionID": cx.session().as_str(),
            "callID": cx.call().as_str(),
        })
    }
}

/// What a finished hook left.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn failure(&self) -> String {
        let exit = self
            .code
            .map_or("it was killed by a signal".to_owned(), |c| {
                format!("it exited with {c}")
            });
        match self.stderr.trim() {
            "" => exit,
            err => format!("{exit}: {}", clip(err, MAX_NOTE_CHARS)),
        }
    }
}

/// Reads up to [`MAX_STREAM_BYTES`] of `stream` and drains the rest, as lossy UTF-8.
async fn read_bounded<R: tokio::io::AsyncRead + Unpin>(stream: Option<&mut R>) -> String {
    let Some(stream) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_STREAM_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

fn clip(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

impl Hook for CommandHookRunner {
    fn before<'a>(
        &'a self,
        cx: &'a Context,
        tool: &'a str,
        arguments: &'a mut Map<String, Value>,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if self.hook.when != HookWhen::Before || !self.applies_to(tool) {
                return Ok(());
            }
            let refused = |why: String| {
                format!(
                    "The hook `{}` configured in {} refused this call, so it did not run: {why}. \
                     The hook is part of the user's configuration; retrying the same call will \
                     not help unless the hook's condition changes.",
                    self.hook.command.join(" "),
                    self.hook.file.display()
                )
            };
            let input = Self::before_input(cx, tool, arguments);
            let finished = self.run(cx, &input).await.map_err(refused)?;
            match finished.code {
                Some(0) => {}
                Some(2) => {
                    let message = finished.stderr.trim();
                    return Err(if message.is_empty() {
                        refused("it gave no reason".to_owned())
                    } else {
                        clip(message, MAX_NOTE_CHARS)
                    });
                }
                _ => return Err(refused(finished.failure())),
            }
            let out = finished.stdout.trim();
            if out.is_empty() {
                return Ok(());
            }
            let replacement = match serde_json::from_str::<Value>(out) {
                Ok(Value::Object(mut object)) => match object.remove("arguments") {
                    Some(Value::Object(new)) if object.is_empty() => new,
                    _ => {
                        return Err(refused(
                            "it printed an object other than {\"arguments\": {...}}".to_owned(),
                        ));
                    }
                },
                _ => {
                    return Err(refused(format!(
                        "it printed something that is not a JSON object: `{}`",
                        clip(out, 200)
                    )));
                }
            };
            *arguments = replacement;
            Ok(())
        })
    }

    fn after<'a>(
        &'a self,
        cx: &'a Context,
        settlement: &'a Settlement,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let tool = settlement.tool.as_str();
            if self.hook.when != HookWhen::After || !self.applies_to(tool) {
                return None;
            }
            let result = settlement.model_result();
            let output: String = result
                .iter()
                .flat_map(|r| r.content.iter().filter_map(|c| c.as_text()))
                .collect::<Vec<_>>()
                .join("\n");
            let input = json!({
                "phase": "after",
                "tool": tool,
                "sessionID": cx.session().as_str(),
                "callID": cx.call().as_str(),
                "outcome": settlement.outcome.kind().as_str(),
                "isError": result.as_ref().is_some_and(|r| r.is_error),
                "output": output,
            });
            match self.run(cx, &input).await {
                Ok(finished) if finished.code == Some(0) => {
                    let out = finished.stdout.trim();
                    (!out.is_empty()).then(|| clip(out, MAX_NOTE_CHARS))
                }
                Ok(finished) => Some(format!("failed: {}", finished.failure())),
                Err(why) => Some(format!("failed: {why}")),
            }
        })
    }
}
