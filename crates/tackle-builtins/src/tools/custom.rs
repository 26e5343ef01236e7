//! Custom command tools: a JSON manifest names a tool, gives its input schema and a command, and
//! the command runs with the arguments as JSON on its stdin.
//!
//! Manifests live in `<root>/.tackle/tools/*.json` (project) and
//! `<home>/.config/tackle/tools/*.json` (user):
//!
//! ```json
//! {
//!   "name": "k8s_pods",
//!   "description": "List the pods of a namespace.",
//!   "input": {"type": "object", "properties": {"namespace": {"type": "string"}}},
//!   "command": ["kubectl", "get", "pods"],
//!   "timeout": 30000,
//!   "cwd": "deploy",
//!   "providers": ["anthropic", "openai"]
//! }
//! ```
//!
//! - `command` is a shell command line (run with `sh -c`, or bash when installed) or an argv array
//!   (run as is, without shell expansion).
//! - `timeout` is in milliseconds (60 s by default, at most 10 minutes); `cwd` is a directory
//!   relative to the Location root.
//! - `providers` (optional) lists the model providers the tool works with; a host leaves it out
//!   of turns for other providers (see `Tool::with_providers`).
//! - The arguments are validated against `input` before anything runs, with the same field-path
//!   errors as a built-in tool; invalid arguments never run the command.
//! - The command runs like bash's: its own process group, secrets removed from the environment,
//!   the whole group stopped on timeout or cancellation, output captured in bounded memory with
//!   stdout and stderr merged. When the output parses as JSON, the result is that JSON; otherwise
//!   it is the text. A non-zero exit is a failure showing the end of the output.
//!
//! Precedence: a project manifest wins over a user manifest of the same name; within one
//! directory, files are read in name order and a repeated name is reported and skipped.
//!
//! Permissions: each call asks the tool's own name as the permission, on `*`, so a rule such as
//! `k8s_pods: deny` disables it. A project manifest comes with the repository, so before its first
//! use the user is asked `custom_tool_trust` on `<manifest path>@<blake3 of its bytes>`; "always"
//! saves exactly that, so an edited manifest is asked about again. User manifests are trusted.

// Until `tools.rs` re-exports the public items and registers the tools, they are unreachable
// and only tests use them. Remove both allows with that wiring.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tackle_core::{AnyTool, Content, Context, Tool, ToolFailure};

use super::ToolEnv;
use super::bash::run::{self, CaptureLimits, Stop};
use super::bash::{BashOptions, choose_shell, human_duration};
use crate::gate::Ask;

#[cfg(test)]
mod tests;

/// The permission asked before the first use of a project manifest.
pub const TRUST_PERMISSION: &str = tackle_core::names::Permission::CUSTOM_TOOL_TRUST.as_str();

/// The timeout when a manifest gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest timeout a manifest may give.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// How much of the output's end a failure shows.
const FAILURE_TAIL_BYTES: usize = 4 * 1024;

/// Where a manifest was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CustomSource {
    /// `<root>/.tackle/tools`: comes with the repository, so it needs the user's trust.
    Project,
    /// `<home>/.config/tackle/tools`: written by the user, trusted.
    User,
}

/// How a custom command runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CustomCommand {
    /// A command line for the shell.
    Shell(String),
    /// A program and its arguments, run without shell expansion.
    Argv(Vec<String>),
}

/// One valid manifest.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomManifest {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// The JSON Schema of the arguments (an object schema; it compiles).
    pub input: Value,
    /// What runs.
    pub command: CustomCommand,
    /// The wall-clock limit of one call.
    pub timeout: Duration,
    /// The directory the command runs in, relative to the Location root; absent means the root.
    pub cwd: Option<String>,
    /// The model providers the tool works with; absent means any.
    pub providers: Option<Vec<String>>,
    /// The manifest file.
    pub path: PathBuf,
    /// Where it was found.
    pub source: CustomSource,
    /// The blake3 hash of the manifest's bytes, in hex.
    pub hash: String,
}

impl CustomManifest {
    /// The pattern a trust approval covers: `<manifest path>@<blake3 of its bytes>`.
    pub fn trust_pattern(&self) -> String {
        format!("{}@{}", self.path.display(), self.hash)
    }
}

/// A manifest that was skipped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomWarning {
    /// The manifest file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for CustomWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

/// The custom tools found, and the manifests skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CustomCatalog {
    /// Valid manifests, project ones first, each name once.
    pub tools: Vec<CustomManifest>,
    /// Manifests that were skipped.
    pub warnings: Vec<CustomWarning>,
}

/// Whose manifests need a trust approval before their first use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrustMode {
    /// Project manifests ask `custom_tool_trust`; user manifests are trusted.
    #[default]
    AskForProject,
    /// Every manifest is trusted (for hosts that vetted the project themselves).
    TrustAll,
}

/// Finds the manifests in `<root>/.tackle/tools/*.json` and `<home>/.config/tackle/tools/*.json`.
///
/// Missing directories are skipped silently. A manifest that cannot be read, is not valid JSON,
/// misses a field or has an invalid one (name, command, timeout, cwd, input schema) is reported
/// in [`CustomCatalog::warnings`] and skipped. A project manifest shadows a user manifest of the
/// same name.
pub fn discover_custom_tools(root: &Path, home: Option<&Path>) -> CustomCatalog {
    let mut places = vec![(root.join(".tackle/tools"), CustomSource::Project)];
    if let Some(home) = home {
        places.push((home.join(".config/tackle/tools"), CustomSource::User));
    }
    let mut catalog = CustomCatalog::default();
    for (place, source) in places {
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "json") && path.is_file())
            .collect();
        files.sort();
        for path in files {
            match load(&path, source) {
                Ok(manifest) => {
                    if let Some(first) = catalog.tools.iter().find(|t| t.name == manifest.name) {
                        if first.source == source {
                            catalog.warnings.push(CustomWarning {
                                problem: format!(
                                    "the name `{}` is already used by {}; rename one of them",
                                    manifest.name,
                                    first.path.display()
                                ),
                                path,
                            });
                        }
                        // A user manifest shadowed by a project one is skipped silently.
                        continue;
                    }
                    catalog.tools.push(manifest);
                }
                Err(problem) => catalog.warnings.push(CustomWarning { path, problem }),
            }
        }
    }
    catalog
}

/// The fields of a manifest file, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: String,
    description: String,
    input: Value,
    command: Value,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    providers: Option<Value>,
}

fn load(path: &Path, source: CustomSource) -> Result<CustomManifest, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
    let raw: RawManifest = serde_json::from_slice(&bytes).map_err(|e| json_problem(&e))?;
    if !valid_name(&raw.name) {
        return Err(format!(
            "invalid `name` {:?}: a tool name starts with a letter and has at most 64 letters, \
             digits, `_` or `-`",
            raw.name
        ));
    }
    if raw.description.trim().is_empty() {
        return Err("`description` is empty; say what the tool does, for the model".to_owned());
    }
    let command = match raw.command {
        Value::String(line) if !line.trim().is_empty() => CustomCommand::Shell(line),
        Value::Array(items) if !items.is_empty() => {
            let argv = items
                .into_iter()
                .map(|item| match item {
                    Value::String(arg) => Ok(arg),
                    other => Err(format!(
                        "invalid `command`: every argv item must be a string, got {other}"
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if argv[0].is_empty() {
                return Err("invalid `command`: the program (argv[0]) is empty".to_owned());
            }
            CustomCommand::Argv(argv)
        }
        other => {
            return Err(format!(
                "invalid `command`: expected a non-empty command line or argv array of strings, \
                 got {other}"
            ));
        }
    };
    let timeout = match raw.timeout {
        None => DEFAULT_TIMEOUT,
        Some(0) => return Err("invalid `timeout`: 0 ms; give milliseconds above 0".to_owned()),
        Some(ms) if u128::from(ms) > MAX_TIMEOUT.as_millis() => {
            return Err(format!(
                "invalid `timeout`: {ms} ms is over the maximum of {} ms",
                MAX_TIMEOUT.as_millis()
            ));
        }
        Some(ms) => Duration::from_millis(ms),
    };
    if let Some(cwd) = &raw.cwd {
        let relative = Path::new(cwd)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if cwd.is_empty() || !relative {
            return Err(format!(
                "invalid `cwd` {cwd:?}: give a directory relative to the project root, without \
                 `..`"
            ));
        }
    }
    let providers = raw.providers.map(parse_providers).transpose()?;
    // Compile the schema now, so a broken one is reported here rather than at the first call.
    Tool::with_schema(raw.description.clone(), raw.input.clone(), |v, _| async {
        Ok(v)
    })
    .map_err(|e| format!("invalid `input`: {e}"))?;
    Ok(CustomManifest {
        name: raw.name,
        description: raw.description,
        input: raw.input,
        command,
        timeout,
        cwd: raw.cwd,
        providers,
        path: path.to_path_buf(),
        source,
        hash: blake3::hash(&bytes).to_hex().to_string(),
    })
}

/// The `providers` of a manifest: a non-empty array of non-empty strings.
fn parse_providers(value: Value) -> Result<Vec<String>, String> {
    let expected = "expected a non-empty array of provider names such as [\"openai\"]";
    let Value::Array(items) = value else {
        return Err(format!("invalid `providers`: {expected}, got {value}"));
    };
    if items.is_empty() {
        return Err(format!(
            "invalid `providers`: {expected}, got []; leave it out to serve every provider"
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(name) if !name.trim().is_empty() => Ok(name),
            other => Err(format!(
                "invalid `providers[{i}]`: expected a non-empty provider name, got {other}"
            )),
        })
        .collect()
}

/// `missing field `command` (line 6, column 1)` or
/// `not valid JSON: expected `,` or `}` (line 3, column 5)`.
fn json_problem(error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let message = error.to_string();
    let message = match message.rsplit_once(" at line ") {
        Some((head, _)) => head.to_owned(),
        None => message,
    };
    let at = format!("(line {}, column {})", error.line(), error.column());
    match error.classify() {
        Category::Syntax | Category::Eof => format!("not valid JSON: {message} {at}"),
        Category::Data | Category::Io => format!("{message} {at}"),
    }
}

/// The registry's name grammar: `^[A-Za-z][A-Za-z0-9_-]{0,63}$`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The tools of `catalog`, named as the model calls them (each manifest's `name`).
pub fn custom_tools(
    env: &ToolEnv,
    catalog: &CustomCatalog,
    trust: TrustMode,
) -> Vec<(String, AnyTool)> {
    catalog
        .tools
        .iter()
        .map(|manifest| (manifest.name.clone(), tool(env, manifest.clone(), trust)))
        .collect()
}

/// The tool of one manifest.
///
/// With [`TrustMode::AskForProject`], a project manifest asks `custom_tool_trust` before its
/// first call; once granted, this tool value does not ask again (an "always" reply also saves the
/// approval for the manifest's exact bytes).
pub(crate) fn tool(env: &ToolEnv, manifest: CustomManifest, trust: TrustMode) -> AnyTool {
    let needs_trust = trust == TrustMode::AskForProject && manifest.source == CustomSource::Project;
    let state = Arc::new(Custom {
        env: env.clone(),
        manifest,
        trusted: tokio::sync::Mutex::new(!needs_trust),
    });
    let description = state.manifest.description.clone();
    let schema = state.manifest.input.clone();
    let providers = state.manifest.providers.clone();
    let tool = Tool::with_schema(description, schema, move |input: Value, cx: Context| {
        let state = state.clone();
        async move { state.call(&cx, input).await }
    })
    // Discovery compiled the schema; a hand-made manifest with a broken one fails every call.
    .unwrap_or_else(|error| {
        let message = error.to_string();
        Tool::with_schema(
            "A custom tool with a broken input schema.",
            json!({"type": "object"}),
            move |_: Value, _| {
                let message = message.clone();
                async move { Err(ToolFailure::new(message)) }
            },
        )
        .expect("the fallback schema compiles")
    })
    .with_projection(project);
    match providers {
        Some(providers) => tool.with_providers(providers).erase(),
        None => tool.erase(),
    }
}

struct Custom {
    env: ToolEnv,
    manifest: CustomManifest,
    /// True once the manifest is trusted (always for user manifests).
    trusted: tokio::sync::Mutex<bool>,
}

/// The text rendering: the text as is, or the JSON pretty-printed.
fn project(_input: &Value, output: &Value) -> Vec<Content> {
    let text = match output {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    };
    vec![Content::text(text)]
}

impl Custom {
    async fn call(&self, cx: &Context, input: Value) -> Result<Value, ToolFailure> {
        let manifest = &self.manifest;
        let all = ["*".to_owned()];
        self.env.gate.refuse_if_denied(cx, &manifest.name, &all)?;
        {
            let mut trusted = self.trusted.lock().await;
            if !*trusted {
                let pattern = manifest.trust_pattern();
                let ask = Ask::new(TRUST_PERMISSION, [pattern.clone()])
                    .with_always([pattern])
                    .with_metadata(json!({
                        "tool": manifest.name,
                        "manifest": manifest.path.to_string_lossy(),
                        "hash": manifest.hash,
                        "command": command_text(&manifest.command),
                    }));
                self.env.gate.ask(cx, ask).await?;
                *trusted = true;
            }
        }
        let ask = Ask::new(manifest.name.clone(), all).with_metadata(json!({
            "command": command_text(&manifest.command),
            "input": input,
        }));
        self.env.gate.ask(cx, ask).await?;

        let root = self.env.fs().root();
        let cwd = match &manifest.cwd {
            None => root.to_path_buf(),
            Some(dir) => root.join(dir),
        };
        if !cwd.is_dir() {
            return Err(ToolFailure::new(format!(
                "The working directory `{}` of custom tool `{}` does not exist, so nothing was \
                 run.",
                manifest.cwd.as_deref().unwrap_or("."),
                manifest.name
            ))
            .with_hint(format!(
                "Ask the user to create it or fix `cwd` in {}.",
                manifest.path.display()
            )));
        }
        let shell = choose_shell(std::env::var_os("TACKLE_SHELL"), std::env::var_os("PATH"))?;
        let defaults = BashOptions::default();
        let spec = run::Spec {
            shell: shell.clone(),
            command: shell_line(&manifest.command),
            cwd,
            env: run::call_env(cx),
            timeout: manifest.timeout,
            die_with_parent: defaults.die_with_parent,
            limits: CaptureLimits {
                memory: defaults.memory_bytes,
                head: defaults.head_bytes,
                spool: defaults.spool_place(cx.session().as_str()),
            },
            sandbox: self.env.sandbox(cx, false)?,
        };
        let mut payload = serde_json::to_vec(&input).map_err(super::failure)?;
        payload.push(b'\n');
        let progress = |tail: &str| {
            cx.set_metadata(json!({"output": tail}));
        };
        let finished = run::run_with_stdin(spec, Some(payload), cx.cancellation(), &progress)
            .await
            .map_err(|e| {
                ToolFailure::new(format!(
                    "The shell `{}` could not be started: {e}. Nothing was run.",
                    shell.display()
                ))
            })?;
        if finished.cancelled {
            return Err(ToolFailure::new("The command was interrupted and stopped."));
        }
        let text = finished.capture.text;
        if finished.timed_out {
            let how = match finished.stop {
                Some(Stop::Term) | None => "SIGTERM",
                Some(Stop::TermThenKill) | Some(Stop::Lingering) => "SIGTERM, then SIGKILL",
            };
            return Err(ToolFailure::new(format!(
                "Custom tool `{}` timed out after {} and was stopped ({how}).{}",
                manifest.name,
                human_duration(manifest.timeout),
                output_tail(&text)
            ))
            .with_hint(format!(
                "The timeout is set in {}; ask the user to raise it if the command needs longer.",
                manifest.path.display()
            )));
        }
        match finished.status.map(|s| (s.code(), s.success())) {
            Some((_, true)) => {}
            status => {
                let exit = match status {
                    Some((Some(code), _)) => format!("exit: {code}"),
                    _ => finished
                        .status
                        .and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s))
                        .map_or("exit: unknown".to_owned(), |sig| {
                            format!("exit: killed by signal {sig}")
                        }),
                };
                return Err(ToolFailure::new(format!(
                    "Custom tool `{}` failed ({exit}).{}\n{exit}",
                    manifest.name,
                    output_tail(&text)
                )));
            }
        }
        let trimmed = text.trim();
        if !trimmed.is_empty()
            && let Ok(value) = serde_json::from_str::<Value>(trimmed)
        {
            return Ok(value);
        }
        Ok(Value::String(if text.is_empty() {
            "(no output)".to_owned()
        } else {
            text
        }))
    }
}

/// `\nOutput (end):\n…` with the last bytes of `text`, or a note that there was none.
fn output_tail(text: &str) -> String {
    if text.trim().is_empty() {
        return " It printed nothing.".to_owned();
    }
    let mut start = text.len().saturating_sub(FAILURE_TAIL_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = if start > 0 { "…" } else { "" };
    format!(
        "\nOutput{}:\n{cut}{}",
        if start > 0 { " (end)" } else { "" },
        text[start..].trim_end()
    )
}

/// The command as one line, for prompts.
fn command_text(command: &CustomCommand) -> String {
    match command {
        CustomCommand::Shell(line) => line.clone(),
        CustomCommand::Argv(argv) => argv
            .iter()
            .map(|arg| shell_quote(arg))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// The line given to `shell -c`: the command line, or `exec` of the quoted argv.
fn shell_line(command: &CustomCommand) -> String {
    match command {
        CustomCommand::Shell(line) => line.clone(),
        CustomCommand::Argv(_) => format!("exec {}", command_text(command)),
    }
}

/// `arg` in single quotes, safe for any POSIX shell.
fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}
