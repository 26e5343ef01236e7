//! The configuration files: the user's `~/.config/tackle/config.json`, the project's
//! `<root>/.tackle/config.json` (or OpenCode's `opencode.json` / `opencode.jsonc` when that is
//! missing), and the `--config` file, read in that order.
//!
//! The files are JSON with comments and trailing commas. Later files win: permission rules are
//! appended, so a later file's rules outrank an earlier one's, and a later scalar replaces an
//! earlier one. Every problem names the file, the key path and the line and column.
//!
//! What came with the project (its file and its custom tool manifests) is split as it is read:
//! what only narrows applies at once, what runs a command or widens permissions waits for the
//! person's trust (see [`crate::trust`]); [`Config::trust`] says what waits and whether it
//! applies.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use tackle_builtins::tools::bash::BashOptions;
use tackle_core::{LimitsOverride, OutputLimits};
use tackle_permission::names::ToolName;
use tackle_permission::{
    Agent, AgentMode, PRESET_NAMES, Pattern, PresetContext, Ruleset, agent_with_user_rules,
    custom_agent, preset,
};

mod de;
pub(crate) mod file;
mod json;
mod read;

pub use file::schema;
pub use json::Pos;

use crate::error::HostError;
use crate::trust::{HashedFile, Held, HeldReason, ProjectTrust, TrustStore};
use file::{FormatterSection, FormatterSetting, HookSection, HooksSection, LspSection};
use read::Reader;

/// The built-in tool sets per model, applied before the configuration's `models` entries, which
/// can undo any of them. Each entry is a model glob and the tools it turns on (`true`) or hides
/// (`false`); the last matching entry wins per tool name. With no model chosen none applies.
///
/// It lives in the host, not next to the tools: which editing tool suits which model is a host's
/// policy about models, and the tools themselves work the same for every model.
pub const DEFAULT_TOOL_SETS: &[(&str, &[(ToolName, bool)])] = &[
    // Patch-trained models get `apply_patch`; the others keep the string-replacing tools.
    ("*", &[(ToolName::APPLY_PATCH, false)]),
    ("openai/gpt-5*", PATCH_TOOLS),
    ("openai/*codex*", PATCH_TOOLS),
];

/// The tool set of a model trained on patches: `apply_patch` instead of the other edit tools.
const PATCH_TOOLS: &[(ToolName, bool)] = &[
    (ToolName::APPLY_PATCH, true),
    (ToolName::EDIT, false),
    (ToolName::MULTIEDIT, false),
    (ToolName::WRITE, false),
];

/// The model a turn is for, chosen with `--model PROVIDER/MODEL` or `TACKLE_MODEL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    /// The provider, such as `openai`: the part before the first `/`.
    pub provider: String,
    /// The model within the provider, such as `gpt-5.1`; it may hold more `/`.
    pub id: String,
}

impl Model {
    /// Parses `provider/model`; both parts must be non-empty.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().split_once('/') {
            Some((provider, id)) if !provider.is_empty() && !id.is_empty() => Ok(Self {
                provider: provider.to_owned(),
                id: id.to_owned(),
            }),
            _ => Err(format!(
                "`{text}` is not a model of the form PROVIDER/MODEL; give the provider and the \
                 model, such as `openai/gpt-5.1` or `anthropic/claude-sonnet-4-5`"
            )),
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.id)
    }
}

/// One `models` entry: a model glob and the tools it turns on or hides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelTools {
    /// The model glob, such as `openai/gpt-5*`.
    pub model: String,
    /// Tool names, each `true` (offer) or `false` (hide), in file order.
    pub tools: Vec<(String, bool)>,
    /// The file that defined it.
    pub file: PathBuf,
}

impl ModelTools {
    /// A summary for `config check --json`.
    pub fn to_json(&self) -> serde_json::Value {
        let tools: serde_json::Map<String, serde_json::Value> = self
            .tools
            .iter()
            .map(|(name, on)| (name.clone(), json!(on)))
            .collect();
        json!({"model": self.model, "tools": tools, "file": self.file.display().to_string()})
    }
}

/// The tool set of one model: which tools it turns on or hides. A tool it does not name is
/// offered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolChoices(Vec<(String, bool)>);

impl ToolChoices {
    /// Records `on` for `name`, replacing an earlier choice.
    fn choose(&mut self, name: &str, on: bool) {
        self.0.retain(|(n, _)| n != name);
        self.0.push((name.to_owned(), on));
    }

    /// False when the tool set hides `name`.
    pub fn offers(&self, name: &str) -> bool {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .is_none_or(|(_, on)| *on)
    }
}

/// One problem in one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file the problem is in.
    pub file: PathBuf,
    /// The key path, such as `limits.maxLines`; empty for the whole file.
    pub path: String,
    /// Where in the file, when known.
    pub pos: Option<Pos>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(pos) = self.pos {
            write!(f, ":{}:{}", pos.line, pos.column)?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl Problem {
    /// The problem as `config check --json` lists it.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "file": self.file.display().to_string(),
            "path": self.path,
            "line": self.pos.map(|p| p.line),
            "column": self.pos.map(|p| p.column),
            "message": self.message,
        })
    }
}

/// The problems of a failed load, one per line when shown.
#[derive(Debug)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Problems {}

/// Which format a file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    /// tackle's own: every key is checked.
    Tackle,
    /// OpenCode's: `permission`, `agent` and `mcp` are read, other keys are left to OpenCode.
    OpenCode,
    /// The `--config` file: a tackle configuration, or a bare `permission` value.
    Flag,
}

/// An agent's settings from the configuration, merged over the files.
#[derive(Clone, Debug, Default)]
struct AgentConfig {
    description: Option<String>,
    mode: Option<AgentMode>,
    rules: Ruleset,
    sandbox: Option<file::SandboxSection>,
}

/// How an MCP server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers.
        headers: Vec<(String, String)>,
    },
}

/// One configured MCP server, validated; the MCP client connects to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServer {
    /// The server's name, the prefix of its tools' names.
    pub name: String,
    /// The file that defined it.
    pub file: PathBuf,
    /// How it is reached.
    pub transport: McpTransport,
}

impl McpServer {
    /// A summary for `config check --json`; environment and header values are not shown.
    pub fn to_json(&self) -> serde_json::Value {
        let keys = |pairs: &[(String, String)]| -> Vec<String> {
            pairs.iter().map(|(k, _)| k.clone()).collect()
        };
        match &self.transport {
            McpTransport::Stdio { command, args, env } => json!({
                "name": self.name, "file": self.file.display().to_string(),
                "command": command, "args": args, "env": keys(env),
            }),
            McpTransport::Http { url, headers } => json!({
                "name": self.name, "file": self.file.display().to_string(),
                "url": url, "headers": keys(headers),
            }),
        }
    }
}

/// The merged configuration.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The files read, in order.
    pub files: Vec<PathBuf>,
    permission: Ruleset,
    agents: Vec<(String, AgentConfig)>,
    /// The MCP servers, in file order.
    pub mcp: Vec<McpServer>,
    limits: LimitsOverride,
    shell_path: Option<String>,
    default_timeout_ms: Option<u64>,
    max_timeout_ms: Option<u64>,
    /// Tool names (`*` globs) not to register, from `disabledTools` and `tools: {name: false}`.
    disabled_tools: Vec<String>,
    /// The `models` entries, in file order.
    pub models: Vec<ModelTools>,
    /// Built-ins a custom tool of the same name replaces.
    pub overrides: Vec<String>,
    /// Language servers by name, in file order (a later file's entry replaces an earlier one).
    lsp: Vec<(String, LspSection)>,
    /// Formatters by name; `None` when a file turned them all off with `false`.
    formatters: Option<Vec<(String, FormatterSection)>>,
    /// Command hooks, in file order, each with the file that defined it.
    hooks: Vec<CommandHook>,
    /// `diagnostics.waitMs`.
    diagnostics_wait_ms: Option<u64>,
    /// `shell.maxJobs`.
    max_jobs: Option<usize>,
    /// `snapshot`.
    snapshot: Option<bool>,
    /// `index.enabled`.
    search_index: Option<bool>,
    /// `index.maxMemoryMb`.
    index_max_memory_mb: Option<u64>,
    /// `diagnostics.startTimeoutMs`.
    lsp_start_timeout_ms: Option<u64>,
    /// `serve.structuredContent`.
    structured_content: Option<bool>,
    /// The project's configuration and its trust state, when the project has any.
    trust: Option<ProjectTrust>,
    /// `sandbox`, merged over the files.
    sandbox: file::SandboxSection,
    /// `telemetry`: the last file's section.
    pub(crate) telemetry: Option<file::TelemetrySection>,
}

/// A command hook from a configuration file.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandHook {
    /// `before` or `after` the call.
    pub when: HookWhen,
    /// The tools it runs for (`*` globs); empty means every tool.
    pub tools: Vec<String>,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// How long it may run.
    pub timeout: Duration,
    /// The file that defined it.
    pub file: PathBuf,
}

impl CommandHook {
    /// A summary for `config check --json`.
    pub fn to_json(&self) -> serde_json::Value {
        let when = match self.when {
            HookWhen::Before => "before",
            HookWhen::After => "after",
        };
        json!({
            "when": when, "tools": self.tools, "command": self.command,
            "file": self.file.display().to_string(),
        })
    }
}

/// When a command hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookWhen {
    /// Before the call; it may rewrite the arguments or refuse.
    Before,
    /// After the call settled; what it prints is noted for the host.
    After,
}

/// One language server as configured.
#[derive(Clone, Debug, PartialEq)]
pub struct LspServer {
    /// Its name.
    pub name: String,
    /// The command and its arguments (empty: a built-in default's, when one exists).
    pub command: Vec<String>,
    /// The file extensions it serves.
    pub extensions: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// `initializationOptions`.
    pub initialization: Option<serde_json::Value>,
    /// Turned off.
    pub disabled: bool,
}

/// One formatter as configured.
#[derive(Clone, Debug, PartialEq)]
pub struct Formatter {
    /// Its name.
    pub name: String,
    /// The command; `$FILE` stands for the changed file.
    pub command: Vec<String>,
    /// The file extensions it formats.
    pub extensions: Vec<String>,
    /// Extra environment variables.
    pub environment: Vec<(String, String)>,
    /// Turned off.
    pub disabled: bool,
}

/// Who wrote a configuration file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// The user: their own file, or the `--config` file they named.
    User,
    /// The project: it came with the repository, so parts of it wait for trust.
    Project,
}

/// The files that apply to `root`, in the order they are read, without the `--config` file.
fn config_files(root: &Path, home: Option<&Path>) -> Vec<(PathBuf, Dialect, Origin)> {
    let mut files = Vec::new();
    if let Some(home) = home {
        let user = home.join(".config").join("tackle").join("config.json");
        if user.is_file() {
            files.push((user, Dialect::Tackle, Origin::User));
        }
    }
    let project = root.join(".tackle").join("config.json");
    if project.is_file() {
        files.push((project, Dialect::Tackle, Origin::Project));
    } else if let Some(opencode) = ["opencode.json", "opencode.jsonc"]
        .iter()
        .map(|name| root.join(name))
        .find(|path| path.is_file())
    {
        files.push((opencode, Dialect::OpenCode, Origin::Project));
    }
    files
}

/// The project's custom tool manifests (`.tackle/tools/*.json`), each hashed, in name order.
/// They are part of what a trust decision covers.
fn project_manifests(root: &Path) -> Vec<HashedFile> {
    let dir = root.join(".tackle").join("tools");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json") && path.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(&path).ok()?;
            Some(HashedFile::new(path, &bytes))
        })
        .collect()
}

/// Reads and merges every file that applies, or reports every problem found. The project's
/// settings that wait for trust apply when `trust` records the person's trust in them.
pub fn load(root: &Path, flag: Option<&Path>, trust: &TrustStore) -> Result<Config, Problems> {
    load_with_home(root, flag, dirs::home_dir().as_deref(), trust)
}

/// [`load`] with `home` as the user's home directory (`None`: no user configuration).
pub fn load_with_home(
    root: &Path,
    flag: Option<&Path>,
    home: Option<&Path>,
    trust: &TrustStore,
) -> Result<Config, Problems> {
    let mut files = config_files(root, home);
    if let Some(flag) = flag {
        files.push((flag.to_path_buf(), Dialect::Flag, Origin::User));
    }
    let home = home.map(|h| h.to_string_lossy().into_owned());
    let mut config = Config::default();
    let mut problems = Vec::new();
    let mut texts = Vec::new();
    for (file, dialect, origin) in files {
        match std::fs::read_to_string(&file) {
            Ok(text) => texts.push((file, dialect, origin, text)),
            Err(error) => problems.push(Problem {
                file,
                path: String::new(),
                pos: None,
                message: format!("cannot read the file: {error}"),
            }),
        }
    }
    // The hash covers exactly the bytes read, and the manifests by the real path the custom
    // tools are found under.
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let manifests = project_manifests(&real_root);
    let mut hashed: Vec<HashedFile> = texts
        .iter()
        .filter(|(_, _, origin, _)| *origin == Origin::Project)
        .map(|(file, _, _, text)| {
            // By the real path: `--root .` and `--root /abs` name the same configuration.
            let real = file
                .strip_prefix(root)
                .map_or_else(|_| file.clone(), |relative| real_root.join(relative));
            HashedFile::new(real, text.as_bytes())
        })
        .collect();
    hashed.extend(manifests.iter().cloned());
    let mut project =
        (!hashed.is_empty()).then(|| ProjectTrust::new(real_root.clone(), hashed, trust));
    for (file, dialect, origin, text) in &texts {
        let mut reader = Reader {
            file,
            home: home.as_deref(),
            problems: &mut problems,
            project: project.as_mut().filter(|_| *origin == Origin::Project),
        };
        reader.read(text, *dialect, &mut config);
        config.files.push(file.clone());
    }
    if let Some(project) = &mut project {
        project.held.extend(manifests.iter().map(|manifest| Held {
            file: manifest.path.clone(),
            key: String::new(),
            what: "a custom tool manifest".to_owned(),
            reason: HeldReason::RunsCommand,
        }));
    }
    config.trust = project;
    if let (Some(default), Some(max)) = (config.default_timeout_ms, config.max_timeout_ms)
        && default > max
        && let Some(file) = config.files.last()
    {
        problems.push(Problem {
            file: file.clone(),
            path: "shell.defaultTimeoutMs".to_owned(),
            pos: None,
            message: format!(
                "the default timeout ({default} ms) is larger than the maximum ({max} ms)"
            ),
        });
    }
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(Problems(problems))
    }
}

impl Config {
    /// Merges one file's settings of agent `name` over the earlier files'.
    fn merge_agent(&mut self, name: &str, agent: AgentConfig) {
        match self.agents.iter_mut().find(|(n, _)| n == name) {
            Some((_, merged)) => {
                merged.description = agent.description.or(merged.description.take());
                merged.mode = agent.mode.or(merged.mode);
                merged.rules = std::mem::take(&mut merged.rules).merged(&agent.rules);
                merged.sandbox = match (merged.sandbox.take(), agent.sandbox) {
                    (Some(earlier), Some(later)) => Some(earlier.merged(later)),
                    (earlier, later) => later.or(earlier),
                };
            }
            None => self.agents.push((name.to_owned(), agent)),
        }
    }

    /// Merges one file's `formatter` over the earlier files': `false` turns all off, an object
    /// adds or replaces formatters by name.
    fn merge_formatter(&mut self, setting: FormatterSetting) {
        match setting {
            FormatterSetting::Off(false) => self.formatters = None,
            FormatterSetting::Off(true) => {
                self.formatters.get_or_insert_with(Vec::new);
            }
            FormatterSetting::Named(named) => {
                let list = self.formatters.get_or_insert_with(Vec::new);
                for (name, section) in named {
                    list.retain(|(n, _)| *n != name);
                    list.push((name, section));
                }
            }
        }
    }

    /// Adds one file's hooks after the earlier files'.
    fn add_hooks(&mut self, hooks: HooksSection, file: &Path) {
        let add = |when: HookWhen, list: Option<Vec<HookSection>>| {
            list.unwrap_or_default()
                .into_iter()
                .map(move |hook| CommandHook {
                    when,
                    tools: hook.tools.unwrap_or_default().0,
                    command: hook.command.0,
                    timeout: Duration::from_millis(hook.timeout_ms.map_or(10_000, |ms| ms.0)),
                    file: file.to_path_buf(),
                })
        };
        self.hooks.extend(add(HookWhen::Before, hooks.before));
        self.hooks.extend(add(HookWhen::After, hooks.after));
    }

    /// The language servers configured, in file order.
    pub fn lsp_servers(&self) -> Vec<LspServer> {
        self.lsp
            .iter()
            .map(|(name, section)| LspServer {
                name: name.clone(),
                command: section.command.clone().unwrap_or_default().0,
                extensions: section.extensions.clone().unwrap_or_default().0,
                env: section
                    .env
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .collect(),
                initialization: section.initialization.clone(),
                disabled: section.disabled.unwrap_or(false),
            })
            .collect()
    }

    /// The formatters configured, in file order; `None` when a file turned formatting off.
    pub fn formatters(&self) -> Option<Vec<Formatter>> {
        self.formatters.as_ref().map(|list| {
            list.iter()
                .map(|(name, section)| Formatter {
                    name: name.clone(),
                    command: section.command.clone().unwrap_or_default().0,
                    extensions: section.extensions.clone().unwrap_or_default().0,
                    environment: section
                        .environment
                        .clone()
                        .unwrap_or_default()
                        .into_iter()
                        .collect(),
                    disabled: section.disabled.unwrap_or(false),
                })
                .collect()
        })
    }

    /// Whether a host that serves many calls keeps a live search index (default `true`).
    pub fn search_index(&self) -> bool {
        self.search_index.unwrap_or(true)
    }

    /// The most memory the live search index may hold, in bytes (default 1 GiB).
    pub fn index_max_memory_bytes(&self) -> usize {
        let mb = self.index_max_memory_mb.unwrap_or(1024);
        usize::try_from(mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX)
    }

    /// Whether calls are bracketed by snapshots, when the configuration says.
    pub fn snapshot(&self) -> Option<bool> {
        self.snapshot
    }

    /// Whether `tackle serve` sends structured values and declares output schemas
    /// (`serve.structuredContent`, default `false`).
    pub fn structured_content(&self) -> bool {
        self.structured_content.unwrap_or(false)
    }

    /// The most background jobs one session may run at once (default 8).
    pub fn max_jobs(&self) -> usize {
        self.max_jobs
            .unwrap_or(tackle_builtins::tools::bash::jobs::DEFAULT_MAX_JOBS)
    }

    /// How long an edit waits for a language server's diagnostics (default 2 s).
    pub fn diagnostics_wait(&self) -> Duration {
        Duration::from_millis(self.diagnostics_wait_ms.unwrap_or(2_000))
    }

    /// How long a language server may take to start (default 10 s).
    pub fn lsp_start_timeout(&self) -> Duration {
        Duration::from_millis(self.lsp_start_timeout_ms.unwrap_or(10_000))
    }

    /// The command hooks, in file order.
    pub fn hooks(&self) -> &[CommandHook] {
        &self.hooks
    }

    /// The project's configuration and its trust state: what waits for the person's trust and
    /// whether it applies. `None` when the project has no configuration of its own.
    pub fn trust(&self) -> Option<&ProjectTrust> {
        self.trust.as_ref()
    }

    /// The agent `name`: a preset or a configured agent, with the configured rules on top.
    pub fn agent(&self, name: &str, context: &PresetContext) -> Result<Agent, HostError> {
        let configured = self
            .agents
            .iter()
            .find(|(agent, _)| agent == name)
            .map(|(_, config)| config);
        let agent_rules = configured.map(|c| c.rules.clone()).unwrap_or_default();
        let user = self.permission.clone().merged(&agent_rules);
        let mut agent = match (preset(name, context), configured) {
            (Some(base), _) => agent_with_user_rules(base, &user),
            (None, Some(config)) => custom_agent(
                name,
                config.mode.unwrap_or(AgentMode::Primary),
                context,
                &user,
            ),
            (None, None) => {
                let mut names: Vec<&str> = PRESET_NAMES.to_vec();
                let configured = self.agents.iter().map(|(n, _)| n.as_str());
                names.extend(configured.filter(|n| !PRESET_NAMES.contains(n)));
                return Err(HostError::UnknownAgent {
                    name: name.to_owned(),
                    known: names.join(", "),
                });
            }
        };
        if let Some(config) = configured {
            if let Some(description) = &config.description {
                agent.description = description.clone();
            }
            if let Some(mode) = config.mode {
                agent.mode = mode;
            }
        }
        Ok(agent)
    }

    /// The registry-wide output limits.
    pub fn output_limits(&self) -> OutputLimits {
        OutputLimits::default().with(&self.limits)
    }

    /// The bash tool's options.
    pub fn bash_options(&self) -> BashOptions {
        let mut options = BashOptions::default();
        if let Some(ms) = self.default_timeout_ms {
            options.default_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.max_timeout_ms {
            options.max_timeout = Duration::from_millis(ms);
        }
        // A maximum below the built-in default lowers the default with it.
        options.default_timeout = options.default_timeout.min(options.max_timeout);
        options.shell = self.shell_path.as_ref().map(std::path::PathBuf::from);
        options
    }

    /// The sandbox policy of agent `name`: the file's `sandbox`, then the agent's own on top;
    /// the `plan` agent is `read-only` unless its own section sets a mode.
    pub fn sandbox_policy(&self, name: &str) -> tackle_sandbox::Policy {
        let own = self
            .agents
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, agent)| agent.sandbox.clone());
        let mut section = self.sandbox.clone();
        if name == "plan" && own.as_ref().is_none_or(|own| own.mode.is_none()) {
            section.mode = Some(file::SandboxModeName::ReadOnly);
        }
        if let Some(own) = own {
            section = section.merged(own);
        }
        section.policy()
    }

    /// The sandbox service: every preset's and configured agent's policy; session temp
    /// directories under `temp_root`.
    pub fn sandboxes(&self, temp_root: std::path::PathBuf) -> tackle_sandbox::Sandboxes {
        self.sandboxes_writing(temp_root, &[])
    }

    /// [`Config::sandboxes`] with `extra` writable for every agent (tackle's data directory,
    /// for command hooks that call `tackle`).
    pub fn sandboxes_writing(
        &self,
        temp_root: std::path::PathBuf,
        extra: &[std::path::PathBuf],
    ) -> tackle_sandbox::Sandboxes {
        let policy = |name: &str| {
            let mut policy = self.sandbox_policy(name);
            policy.writable_roots.extend(extra.iter().cloned());
            policy
        };
        let names = tackle_permission::PRESET_NAMES
            .iter()
            .copied()
            .chain(self.agents.iter().map(|(n, _)| n.as_str()));
        let agents = names.map(|name| (name.to_owned(), policy(name))).collect();
        tackle_sandbox::Sandboxes::new(policy(""), agents, temp_root)
    }

    /// Whether MCP servers started as child processes run in the sandbox.
    pub fn sandbox_mcp_servers(&self) -> bool {
        self.sandbox.mcp_servers.unwrap_or(false)
    }

    /// Whether command hooks run in the sandbox.
    pub fn sandbox_hooks(&self) -> bool {
        self.sandbox.hooks.unwrap_or(true)
    }

    /// Whether language servers run in the sandbox.
    pub fn sandbox_language_servers(&self) -> bool {
        self.sandbox.language_servers.unwrap_or(false)
    }

    /// True when `name` must not be registered or offered.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.disabled_tools
            .iter()
            .any(|pattern| Pattern::new(pattern).matches(name))
    }

    /// [`Config::is_disabled`] as a filter that owns its compiled patterns.
    pub fn disabled_filter(&self) -> impl Fn(&str) -> bool + Send + Sync + 'static {
        let patterns: Vec<Pattern> = self
            .disabled_tools
            .iter()
            .map(|p| Pattern::new(p))
            .collect();
        move |name| patterns.iter().any(|pattern| pattern.matches(name))
    }

    /// The tool set of `model`: the built-in defaults, then the `models` entries, each matching
    /// entry overriding earlier ones per tool name. With no model, every tool is offered.
    pub fn tool_choices(&self, model: Option<&Model>) -> ToolChoices {
        let mut choices = ToolChoices::default();
        let Some(model) = model else {
            return choices;
        };
        let model = model.to_string();
        for (glob, tools) in DEFAULT_TOOL_SETS {
            if Pattern::new(glob).matches(&model) {
                for (name, on) in *tools {
                    choices.choose(name.as_str(), *on);
                }
            }
        }
        for entry in &self.models {
            if Pattern::new(&entry.model).matches(&model) {
                for (name, on) in &entry.tools {
                    choices.choose(name, *on);
                }
            }
        }
        choices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, dialect: Dialect) -> (Config, Vec<Problem>) {
        let mut config = Config::default();
        let mut problems = Vec::new();
        let file = PathBuf::from("c.json");
        Reader {
            file: &file,
            home: Some("/home/u"),
            problems: &mut problems,
            project: None,
        }
        .read(text, dialect, &mut config);
        (config, problems)
    }

    #[test]
    fn permission_errors_are_located() {
        let (_, problems) = read(
            "{\n \"permission\": {\n  \"bash\": {\"git *\": \"maybe\"}\n }\n}",
            Dialect::Tackle,
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].path, r#"permission.bash."git *""#);
        assert_eq!(
            problems[0].pos,
            Some(Pos {
                line: 3,
                column: 21
            })
        );
        assert!(problems[0].message.contains("expected"), "{problems:?}");
    }

    #[test]
    fn mcp_servers_are_validated() {
        let (config, problems) = read(
            r#"{"mcp": {"a": {"command": "x", "args": ["-y"], "env": {"K": "v"}},
                "b": {"url": "https://e.com/mcp", "headers": {"H": "v"}}}}"#,
            Dialect::Tackle,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.mcp.len(), 2);
        let (_, problems) = read(
            r#"{"mcp": {"a": {"command": "x", "url": "https://e"}, "b": {"url": "ftp://x"},
                "c": {"command": "x", "cwd": "/"}, "d": {}}}"#,
            Dialect::Tackle,
        );
        let paths: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["mcp.a", "mcp.b.url", "mcp.c.cwd", "mcp.d"]);
    }

    #[test]
    fn opencode_mcp_maps_to_servers() {
        let (config, problems) = read(
            r#"{"model": "x", "mcp": {"a": {"type": "local", "command": ["npx", "-y", "s"],
                "environment": {"K": "v"}}, "off": {"type": "remote", "url": "https://x",
                "enabled": false}}}"#,
            Dialect::OpenCode,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            config.mcp[0].transport,
            McpTransport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "s".into()],
                env: vec![("K".into(), "v".into())],
            }
        );
        assert_eq!(config.mcp.len(), 1);
    }

    #[test]
    fn a_bare_permission_in_the_flag_file_is_accepted() {
        let (config, problems) = read(r#"{"bash": "deny"}"#, Dialect::Flag);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.permission.len(), 1);
        let (config, problems) = read(r#""ask""#, Dialect::Flag);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.permission.len(), 1);
    }

    #[test]
    fn limits_and_shell_are_read() {
        let (config, problems) = read(
            r#"{"limits": {"maxLines": 5, "direction": "head"}, "shell": {"maxTimeoutMs": 1000,
                "defaultTimeoutMs": 500}, "disabledTools": ["bash"]}"#,
            Dialect::Tackle,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.output_limits().max_lines, 5);
        assert_eq!(
            config.output_limits().direction,
            tackle_core::Direction::Head
        );
        assert_eq!(config.bash_options().max_timeout, Duration::from_secs(1));
        assert!(config.is_disabled("bash"));
        let (_, problems) = read(
            r#"{"limits": {"maxLines": 0, "direction": 1}}"#,
            Dialect::Tackle,
        );
        // A section stops at its first problem; the next section is still read.
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("positive integer"));
    }

    fn model(text: &str) -> Model {
        Model::parse(text).unwrap()
    }

    #[test]
    fn a_model_is_provider_slash_model() {
        let parsed = model("openrouter/anthropic/claude-sonnet-4-5");
        assert_eq!(parsed.provider, "openrouter");
        assert_eq!(parsed.id, "anthropic/claude-sonnet-4-5");
        assert_eq!(parsed.to_string(), "openrouter/anthropic/claude-sonnet-4-5");
        for bad in ["gpt-5", "/gpt-5", "openai/", ""] {
            let error = Model::parse(bad).unwrap_err();
            assert!(error.contains("PROVIDER/MODEL"), "{bad}: {error}");
        }
    }

    #[test]
    fn default_tool_sets_depend_on_the_model() {
        let config = Config::default();
        let none = config.tool_choices(None);
        for name in ["apply_patch", "edit", "multiedit", "write", "read"] {
            assert!(none.offers(name), "{name}");
        }
        for patch in [
            "openai/gpt-5",
            "openai/gpt-5.1",
            "openai/gpt-5.1-codex-mini",
        ] {
            let choices = config.tool_choices(Some(&model(patch)));
            assert!(choices.offers("apply_patch"), "{patch}");
            for name in ["edit", "multiedit", "write"] {
                assert!(!choices.offers(name), "{patch} {name}");
            }
            assert!(choices.offers("read"), "{patch}");
        }
        for other in [
            "openai/gpt-4o",
            "anthropic/claude-sonnet-4-5",
            "azure/gpt-5",
        ] {
            let choices = config.tool_choices(Some(&model(other)));
            assert!(!choices.offers("apply_patch"), "{other}");
            for name in ["edit", "multiedit", "write", "read"] {
                assert!(choices.offers(name), "{other} {name}");
            }
        }
        assert!(
            config
                .tool_choices(Some(&model("openai/codex-mini")))
                .offers("apply_patch")
        );
    }

    #[test]
    fn models_entries_override_the_defaults_and_the_last_match_wins() {
        let (config, problems) = read(
            r#"{"models": {
                "anthropic/*": {"tools": {"apply_patch": true, "write": false}},
                "anthropic/claude-opus*": {"tools": {"write": true}},
                "openai/gpt-5*": {"tools": {"edit": true}},
                "*": {"tools": {"bash": false}},
            }}"#,
            Dialect::Tackle,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.models.len(), 4);
        let sonnet = config.tool_choices(Some(&model("anthropic/claude-sonnet-4-5")));
        assert!(sonnet.offers("apply_patch"));
        assert!(!sonnet.offers("write"));
        assert!(sonnet.offers("edit"));
        assert!(!sonnet.offers("bash"));
        let opus = config.tool_choices(Some(&model("anthropic/claude-opus-4")));
        assert!(opus.offers("write") && opus.offers("apply_patch"));
        let gpt = config.tool_choices(Some(&model("openai/gpt-5")));
        assert!(gpt.offers("edit") && gpt.offers("apply_patch"));
        assert!(!gpt.offers("write") && !gpt.offers("bash"));
        // No model: neither the defaults nor the entries apply.
        assert!(config.tool_choices(None).offers("bash"));
        let json = config.models[0].to_json();
        assert_eq!(json["model"], "anthropic/*");
        assert_eq!(json["tools"]["write"], false);
    }

    #[test]
    fn bad_models_entries_are_located() {
        let (_, problems) = read(
            "{\"models\": {\n  \"gpt-5*\": {},\n  \"openai/x\": {\"tools\": {\"edit\": \"no\"}},\n  \
             \"openai/y\": {\"tool\": {}},\n  \"openai/z\": [],\n  \"openai/w\": {\"tools\": 1}}}",
            Dialect::Tackle,
        );
        let paths: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                r#"models."gpt-5*""#,
                r#"models."openai/x".tools.edit"#,
                r#"models."openai/y".tool"#,
                r#"models."openai/z""#,
                r#"models."openai/w".tools"#,
            ]
        );
        assert!(
            problems[0].message.contains("PROVIDER/MODEL"),
            "{problems:?}"
        );
        assert_eq!(problems[0].pos, Some(Pos { line: 2, column: 3 }));
        assert_eq!(
            problems[1].message,
            r#"expected a boolean, got the string "no""#
        );
        assert!(
            problems[2]
                .message
                .starts_with("unknown key; expected one of: tools")
        );
        assert_eq!(problems[3].message, "expected an object, got an array");
        assert_eq!(problems[4].message, "expected an object, got the number 1");
        let (_, problems) = read(r#"{"models": []}"#, Dialect::Tackle);
        assert_eq!(problems[0].path, "models");
    }

    #[test]
    fn overrides_are_joined_and_validated() {
        let (config, problems) = read(r#"{"overrides": ["grep", "glob"]}"#, Dialect::Tackle);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.overrides, ["grep", "glob"]);
        let (_, problems) = read(r#"{"overrides": "grep"}"#, Dialect::Tackle);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "overrides");
        assert!(problems[0].message.contains("an array of strings"));
        let (_, problems) = read(r#"{"overrides": ["grep", 3]}"#, Dialect::Tackle);
        assert_eq!(problems[0].path, "overrides[1]");
        // OpenCode's files have no such key; it is left to OpenCode.
        let (config, problems) = read(r#"{"overrides": ["grep"]}"#, Dialect::OpenCode);
        assert!(problems.is_empty() && config.overrides.is_empty());
    }

    #[test]
    fn a_tools_map_disables_in_both_dialects() {
        for dialect in [Dialect::Tackle, Dialect::OpenCode, Dialect::Flag] {
            let (config, problems) = read(
                r#"{"tools": {"webfetch": false, "read": true, "docs_*": false}}"#,
                dialect,
            );
            assert!(problems.is_empty(), "{dialect:?}: {problems:?}");
            assert!(config.is_disabled("webfetch"), "{dialect:?}");
            assert!(!config.is_disabled("read"), "{dialect:?}");
            assert!(config.is_disabled("docs_search"), "{dialect:?}");
            assert!(!config.is_disabled("docs"), "{dialect:?}");
            assert!((config.disabled_filter())("docs_search"));
        }
        let (_, problems) = read(r#"{"tools": {"bash": "off"}}"#, Dialect::OpenCode);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "tools.bash");
        // A later `true` undoes an earlier `false`, across files too.
        let mut config = Config::default();
        let mut problems = Vec::new();
        let file = PathBuf::from("c.json");
        for text in [
            r#"{"disabledTools": ["bash", "glob"]}"#,
            r#"{"tools": {"bash": true}}"#,
        ] {
            Reader {
                file: &file,
                home: None,
                problems: &mut problems,
                project: None,
            }
            .read(text, Dialect::Tackle, &mut config);
        }
        assert!(problems.is_empty(), "{problems:?}");
        assert!(!config.is_disabled("bash"));
        assert!(config.is_disabled("glob"));
    }
}
