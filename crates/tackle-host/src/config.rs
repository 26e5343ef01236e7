//! The configuration files: the user's `~/.config/tackle/config.json`, the project's
//! `<root>/.tackle/config.json` (or OpenCode's `opencode.json` / `opencode.jsonc` when that is
//! missing), and the `--config` file, read in that order.
//!
//! The files are JSON with comments and trailing commas. Later files win: permission rules are
//! appended, so a later file's rules outrank an earlier one's, and a later scalar replaces an
//! earlier one. Every problem names the file, the key path and the line and column.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use tackle_builtins::tools::bash::BashOptions;
use tackle_core::{Direction, LimitsOverride, OutputLimits};
use tackle_permission::{
    Agent, AgentMode, ConfigContext, PRESET_NAMES, Pattern, PresetContext, Ruleset,
    agent_with_user_rules, custom_agent, preset, ruleset_from_config,
};

mod json;

use crate::error::HostError;

pub use json::Pos;
use json::{Entry, Node, Value};

/// The keys of a tackle configuration file.
const TOP_KEYS: &[&str] = &[
    "$schema",
    "permission",
    "agents",
    "mcp",
    "limits",
    "shell",
    "disabledTools",
    "tools",
    "models",
    "overrides",
];

/// The built-in tool sets per model, applied before the configuration's `models` entries, which
/// can undo any of them. Each entry is a model glob and the tools it turns on (`true`) or hides
/// (`false`); the last matching entry wins per tool name. With no model chosen none applies.
///
/// It lives in the CLI, not next to the tools: which editing tool suits which model is a host's
/// policy about models, and the tools themselves work the same for every model.
pub const DEFAULT_TOOL_SETS: &[(&str, &[(&str, bool)])] = &[
    // Patch-trained models get `apply_patch`; the others keep the string-replacing tools.
    ("*", &[("apply_patch", false)]),
    ("openai/gpt-5*", PATCH_TOOLS),
    ("openai/*codex*", PATCH_TOOLS),
];

/// The tool set of a model trained on patches: `apply_patch` instead of the other edit tools.
const PATCH_TOOLS: &[(&str, bool)] = &[
    ("apply_patch", true),
    ("edit", false),
    ("multiedit", false),
    ("write", false),
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
    pub file: PathBuf,
    /// The key path, such as `limits.maxLines`; empty for the whole file.
    pub path: String,
    pub pos: Option<Pos>,
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
}

/// How an MCP server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One configured MCP server, validated; the MCP client connects to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServer {
    pub name: String,
    /// The file that defined it.
    pub file: PathBuf,
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
}

/// The files that apply to `root`, in the order they are read, without the `--config` file.
fn config_files(root: &Path, home: Option<&Path>) -> Vec<(PathBuf, Dialect)> {
    let mut files = Vec::new();
    if let Some(home) = home {
        let user = home.join(".config").join("tackle").join("config.json");
        if user.is_file() {
            files.push((user, Dialect::Tackle));
        }
    }
    let project = root.join(".tackle").join("config.json");
    if project.is_file() {
        files.push((project, Dialect::Tackle));
    } else if let Some(opencode) = ["opencode.json", "opencode.jsonc"]
        .iter()
        .map(|name| root.join(name))
        .find(|path| path.is_file())
    {
        files.push((opencode, Dialect::OpenCode));
    }
    files
}

/// Reads and merges every file that applies, or reports every problem found.
pub fn load(root: &Path, flag: Option<&Path>) -> Result<Config, Problems> {
    load_with_home(root, flag, dirs::home_dir().as_deref())
}

/// [`load`] with `home` as the user's home directory (`None`: no user configuration).
pub fn load_with_home(
    root: &Path,
    flag: Option<&Path>,
    home: Option<&Path>,
) -> Result<Config, Problems> {
    let mut files = config_files(root, home);
    if let Some(flag) = flag {
        files.push((flag.to_path_buf(), Dialect::Flag));
    }
    let home = home.map(|h| h.to_string_lossy().into_owned());
    let mut config = Config::default();
    let mut problems = Vec::new();
    for (file, dialect) in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(error) => {
                problems.push(Problem {
                    file,
                    path: String::new(),
                    pos: None,
                    message: format!("cannot read the file: {error}"),
                });
                continue;
            }
        };
        let mut reader = Reader {
            file: &file,
            home: home.as_deref(),
            problems: &mut problems,
        };
        reader.read(&text, dialect, &mut config);
        config.files.push(file);
    }
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
                    choices.choose(name, *on);
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

/// Reads one file into the configuration, recording problems.
struct Reader<'a> {
    file: &'a Path,
    home: Option<&'a str>,
    problems: &'a mut Vec<Problem>,
}

impl Reader<'_> {
    fn problem(&mut self, path: &str, pos: Option<Pos>, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.file.to_path_buf(),
            path: path.to_owned(),
            pos,
            message: message.into(),
        });
    }

    fn expected(&mut self, path: &str, node: &Node, expected: &str) {
        let got = match &node.value {
            Value::String(s) => format!("the string {}", quote(s)),
            Value::Number(n) => format!("the number {n}"),
            other => other.kind().to_owned(),
        };
        self.problem(
            path,
            Some(node.pos),
            format!("expected {expected}, got {got}"),
        );
    }

    fn unknown(&mut self, path: &str, entry: &Entry, known: &[&str]) {
        self.problem(
            path,
            Some(entry.key_pos),
            format!("unknown key; expected one of: {}", known.join(", ")),
        );
    }

    /// The entries of an object, or a problem.
    fn object<'n>(&mut self, path: &str, node: &'n Node) -> Option<&'n [Entry]> {
        match &node.value {
            Value::Object(entries) => {
                let mut seen = std::collections::HashSet::new();
                for entry in entries {
                    if !seen.insert(entry.key.as_str()) {
                        self.problem(
                            &key_path(path, &entry.key),
                            Some(entry.key_pos),
                            "the key appears more than once",
                        );
                    }
                }
                Some(entries)
            }
            _ => {
                self.expected(path, node, "an object");
                None
            }
        }
    }

    fn string(&mut self, path: &str, node: &Node) -> Option<String> {
        match &node.value {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            _ => {
                self.expected(path, node, "a non-empty string");
                None
            }
        }
    }

    fn strings(&mut self, path: &str, node: &Node) -> Option<Vec<String>> {
        let Value::Array(items) = &node.value else {
            self.expected(path, node, "an array of strings");
            return None;
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            out.push(self.string(&format!("{path}[{i}]"), item)?);
        }
        Some(out)
    }

    fn string_map(&mut self, path: &str, node: &Node) -> Option<Vec<(String, String)>> {
        let entries = self.object(path, node)?;
        let mut out = Vec::new();
        for entry in entries {
            let Value::String(value) = &entry.node.value else {
                self.expected(&key_path(path, &entry.key), &entry.node, "a string");
                return None;
            };
            out.push((entry.key.clone(), value.clone()));
        }
        Some(out)
    }

    /// An object whose values are booleans, in file order.
    fn booleans(&mut self, path: &str, node: &Node) -> Option<Vec<(String, bool)>> {
        let entries = self.object(path, node)?;
        let mut out = Vec::new();
        for entry in entries {
            match entry.node.value {
                Value::Bool(on) => out.push((entry.key.clone(), on)),
                _ => self.expected(&key_path(path, &entry.key), &entry.node, "a boolean"),
            }
        }
        Some(out)
    }

    /// `models`: a model glob to `{tools: {name: bool}}`.
    fn models(&mut self, path: &str, node: &Node, config: &mut Config) {
        const KEYS: &[&str] = &["tools"];
        let Some(entries) = self.object(path, node) else {
            return;
        };
        for entry in entries {
            let model_path = key_path(path, &entry.key);
            if entry.key != "*" && !entry.key.contains('/') {
                let message = "expected a model glob of the form PROVIDER/MODEL, such as \
                               `openai/gpt-5*`, or `*` for every model";
                self.problem(&model_path, Some(entry.key_pos), message);
                continue;
            }
            let Some(fields) = self.object(&model_path, &entry.node) else {
                continue;
            };
            let mut tools = Vec::new();
            for field in fields {
                let field_path = key_path(&model_path, &field.key);
                match field.key.as_str() {
                    "tools" => tools = self.booleans(&field_path, &field.node).unwrap_or_default(),
                    _ => self.unknown(&field_path, field, KEYS),
                }
            }
            config.models.push(ModelTools {
                model: entry.key.clone(),
                tools,
                file: self.file.to_path_buf(),
            });
        }
    }

    fn positive(&mut self, path: &str, node: &Node) -> Option<u64> {
        match &node.value {
            Value::Number(n) => match n.as_u64().filter(|&n| n > 0) {
                Some(n) => Some(n),
                None => {
                    self.expected(path, node, "a positive integer");
                    None
                }
            },
            _ => {
                self.expected(path, node, "a positive integer");
                None
            }
        }
    }

    fn read(&mut self, text: &str, dialect: Dialect, config: &mut Config) {
        let root = match json::parse(text) {
            Ok(root) => root,
            Err(error) => {
                self.problem(
                    "",
                    Some(error.pos),
                    format!("not valid JSON: {}", error.message),
                );
                return;
            }
        };
        let dialect = match (dialect, &root.value) {
            (Dialect::Flag, Value::String(_)) => {
                return self.permission("permission", &root, config);
            }
            (Dialect::Flag, Value::Object(entries))
                if !entries.iter().any(|e| TOP_KEYS.contains(&e.key.as_str())) =>
            {
                return self.permission("permission", &root, config);
            }
            (Dialect::Flag, _) => Dialect::Tackle,
            (other, _) => other,
        };
        let Some(entries) = self.object("", &root) else {
            return;
        };
        for entry in entries {
            let path = entry.key.as_str();
            let node = &entry.node;
            match (dialect, path) {
                (_, "permission") => self.permission(path, node, config),
                (Dialect::Tackle, "agents") | (Dialect::OpenCode, "agent") => {
                    self.agents(path, node, dialect, config);
                }
                (_, "mcp") => self.mcp(path, node, dialect, config),
                (Dialect::Tackle, "limits") => self.limits(path, node, config),
                (Dialect::Tackle, "shell") => self.shell(path, node, config),
                (Dialect::Tackle, "disabledTools") => {
                    if let Some(names) = self.strings(path, node) {
                        config.disabled_tools.extend(names);
                    }
                }
                // OpenCode's form of `disabledTools`; `true` undoes an earlier `false`.
                (_, "tools") => {
                    for (name, on) in self.booleans(path, node).unwrap_or_default() {
                        config.disabled_tools.retain(|n| *n != name);
                        if !on {
                            config.disabled_tools.push(name);
                        }
                    }
                }
                (Dialect::Tackle, "models") => self.models(path, node, config),
                (Dialect::Tackle, "overrides") => {
                    if let Some(names) = self.strings(path, node) {
                        config.overrides.extend(names);
                    }
                }
                (Dialect::Tackle, "$schema") => {
                    self.string(path, node);
                }
                (Dialect::Tackle, _) => self.unknown(&key_path("", path), entry, TOP_KEYS),
                _ => {}
            }
        }
    }

    /// A `permission` value, appended to `config.permission`.
    fn permission(&mut self, path: &str, node: &Node, config: &mut Config) {
        if let Some(rules) = self.rules(path, node) {
            config.permission = std::mem::take(&mut config.permission).merged(&rules);
        }
    }

    /// A `permission` value read by the permission crate, its errors located in the file.
    fn rules(&mut self, path: &str, node: &Node) -> Option<Ruleset> {
        let context = ConfigContext::new(self.home).with_root(path);
        match ruleset_from_config(&node.value.to_config_value(), &context) {
            Ok(rules) => Some(rules),
            Err(error) => {
                let at = locate(node, path, error.path()).unwrap_or(node.pos);
                let message = error.to_string();
                let message = message
                    .strip_prefix(&format!("{}: ", error.path()))
                    .unwrap_or(&message)
                    .to_owned();
                self.problem(error.path(), Some(at), message);
                None
            }
        }
    }

    fn agents(&mut self, path: &str, node: &Node, dialect: Dialect, config: &mut Config) {
        const KEYS: &[&str] = &["description", "mode", "permission"];
        let Some(entries) = self.object(path, node) else {
            return;
        };
        for entry in entries {
            let agent_path = key_path(path, &entry.key);
            let Some(fields) = self.object(&agent_path, &entry.node) else {
                continue;
            };
            let mut agent = AgentConfig::default();
            for field in fields {
                let field_path = key_path(&agent_path, &field.key);
                match field.key.as_str() {
                    "description" => agent.description = self.string(&field_path, &field.node),
                    "mode" => agent.mode = self.mode(&field_path, &field.node),
                    "permission" => {
                        agent.rules = self.rules(&field_path, &field.node).unwrap_or_default();
                    }
                    _ if dialect == Dialect::OpenCode => {}
                    _ => self.unknown(&field_path, field, KEYS),
                }
            }
            match config
                .agents
                .iter_mut()
                .find(|(name, _)| *name == entry.key)
            {
                Some((_, merged)) => {
                    merged.description = agent.description.or(merged.description.take());
                    merged.mode = agent.mode.or(merged.mode);
                    merged.rules = std::mem::take(&mut merged.rules).merged(&agent.rules);
                }
                None => config.agents.push((entry.key.clone(), agent)),
            }
        }
    }

    fn mode(&mut self, path: &str, node: &Node) -> Option<AgentMode> {
        match &node.value {
            Value::String(s) if s == "primary" || s == "all" => Some(AgentMode::Primary),
            Value::String(s) if s == "subagent" => Some(AgentMode::Subagent),
            Value::String(s) if s == "hidden" => Some(AgentMode::Hidden),
            _ => {
                self.expected(path, node, r#""primary", "subagent", "hidden" or "all""#);
                None
            }
        }
    }

    fn mcp(&mut self, path: &str, node: &Node, dialect: Dialect, config: &mut Config) {
        let Some(entries) = self.object(path, node) else {
            return;
        };
        for entry in entries {
            let server_path = key_path(path, &entry.key);
            let transport = match dialect {
                Dialect::OpenCode => self.opencode_server(&server_path, &entry.node),
                _ => self.server(&server_path, &entry.node),
            };
            config.mcp.retain(|server| server.name != entry.key);
            if let Some(transport) = transport {
                config.mcp.push(McpServer {
                    name: entry.key.clone(),
                    file: self.file.to_path_buf(),
                    transport,
                });
            }
        }
    }

    /// `{command, args?, env?}` or `{url, headers?}`.
    fn server(&mut self, path: &str, node: &Node) -> Option<McpTransport> {
        const KEYS: &[&str] = &["command", "args", "env", "url", "headers"];
        let fields = self.object(path, node)?;
        let get = |key: &str| fields.iter().find(|f| f.key == key);
        for field in fields {
            if !KEYS.contains(&field.key.as_str()) {
                self.unknown(&key_path(path, &field.key), field, KEYS);
            }
        }
        match (get("command"), get("url")) {
            (Some(command), None) => {
                for key in ["headers"] {
                    if let Some(field) = get(key) {
                        let message = "`headers` goes with `url`, not `command`";
                        self.problem(&key_path(path, key), Some(field.key_pos), message);
                    }
                }
                let command = self.string(&key_path(path, "command"), &command.node);
                let args = match get("args") {
                    Some(f) => self.strings(&key_path(path, "args"), &f.node),
                    None => Some(Vec::new()),
                };
                let env = match get("env") {
                    Some(f) => self.string_map(&key_path(path, "env"), &f.node),
                    None => Some(Vec::new()),
                };
                Some(McpTransport::Stdio {
                    command: command?,
                    args: args?,
                    env: env?,
                })
            }
            (None, Some(url)) => {
                for key in ["args", "env"] {
                    if let Some(field) = get(key) {
                        let message = format!("`{key}` goes with `command`, not `url`");
                        self.problem(&key_path(path, key), Some(field.key_pos), message);
                    }
                }
                let url = self.url(&key_path(path, "url"), &url.node);
                let headers = match get("headers") {
                    Some(f) => self.string_map(&key_path(path, "headers"), &f.node),
                    None => Some(Vec::new()),
                };
                Some(McpTransport::Http {
                    url: url?,
                    headers: headers?,
                })
            }
            (Some(_), Some(url)) => {
                let message = "a server has either `command` or `url`, not both";
                self.problem(path, Some(url.key_pos), message);
                None
            }
            (None, None) => {
                self.expected(path, node, "an object with `command` or `url`");
                None
            }
        }
    }

    /// OpenCode's `{type: "local", command: [..], environment?}` or
    /// `{type: "remote", url, headers?}`; `enabled: false` leaves the server out.
    fn opencode_server(&mut self, path: &str, node: &Node) -> Option<McpTransport> {
        let fields = self.object(path, node)?;
        let get = |key: &str| fields.iter().find(|f| f.key == key);
        if let Some(enabled) = get("enabled") {
            match enabled.node.value {
                Value::Bool(false) => return None,
                Value::Bool(true) => {}
                _ => self.expected(&key_path(path, "enabled"), &enabled.node, "a boolean"),
            }
        }
        let kind = match get("type") {
            Some(f) => self.string(&key_path(path, "type"), &f.node)?,
            None => {
                self.expected(path, node, r#"an object with `type` "local" or "remote""#);
                return None;
            }
        };
        match kind.as_str() {
            "local" => {
                let Some(command) = get("command") else {
                    self.expected(path, node, "an object with `command`");
                    return None;
                };
                let mut argv = self.strings(&key_path(path, "command"), &command.node)?;
                if argv.is_empty() {
                    self.expected(
                        &key_path(path, "command"),
                        &command.node,
                        "a non-empty array",
                    );
                    return None;
                }
                let env = match get("environment") {
                    Some(f) => self.string_map(&key_path(path, "environment"), &f.node)?,
                    None => Vec::new(),
                };
                let command = argv.remove(0);
                Some(McpTransport::Stdio {
                    command,
                    args: argv,
                    env,
                })
            }
            "remote" => {
                let Some(url) = get("url") else {
                    self.expected(path, node, "an object with `url`");
                    return None;
                };
                let url = self.url(&key_path(path, "url"), &url.node)?;
                let headers = match get("headers") {
                    Some(f) => self.string_map(&key_path(path, "headers"), &f.node)?,
                    None => Vec::new(),
                };
                Some(McpTransport::Http { url, headers })
            }
            _ => {
                let node = &get("type")?.node;
                self.expected(&key_path(path, "type"), node, r#""local" or "remote""#);
                None
            }
        }
    }

    fn url(&mut self, path: &str, node: &Node) -> Option<String> {
        match &node.value {
            Value::String(s) if s.starts_with("http://") || s.starts_with("https://") => {
                Some(s.clone())
            }
            _ => {
                self.expected(path, node, "an http:// or https:// URL");
                None
            }
        }
    }

    fn limits(&mut self, path: &str, node: &Node, config: &mut Config) {
        const KEYS: &[&str] = &["maxLines", "maxBytes", "direction"];
        let Some(fields) = self.object(path, node) else {
            return;
        };
        for field in fields {
            let field_path = key_path(path, &field.key);
            let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
            match field.key.as_str() {
                "maxLines" => {
                    if let Some(n) = self.positive(&field_path, &field.node) {
                        config.limits.max_lines = Some(size(n));
                    }
                }
                "maxBytes" => {
                    if let Some(n) = self.positive(&field_path, &field.node) {
                        config.limits.max_bytes = Some(size(n));
                    }
                }
                "direction" => {
                    let direction = match &field.node.value {
                        Value::String(s) if s == "head" => Some(Direction::Head),
                        Value::String(s) if s == "tail" => Some(Direction::Tail),
                        Value::String(s) if s == "head_tail" => Some(Direction::HeadTail),
                        _ => {
                            let expected = r#""head", "tail" or "head_tail""#;
                            self.expected(&field_path, &field.node, expected);
                            None
                        }
                    };
                    if direction.is_some() {
                        config.limits.direction = direction;
                    }
                }
                _ => self.unknown(&field_path, field, KEYS),
            }
        }
    }

    fn shell(&mut self, path: &str, node: &Node, config: &mut Config) {
        const KEYS: &[&str] = &["path", "defaultTimeoutMs", "maxTimeoutMs"];
        let Some(fields) = self.object(path, node) else {
            return;
        };
        for field in fields {
            let field_path = key_path(path, &field.key);
            match field.key.as_str() {
                "path" => {
                    if let Some(shell) = self.string(&field_path, &field.node) {
                        let name = Path::new(&shell)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        if name == "fish" || name == "nu" {
                            let message = format!("{name} cannot run POSIX command lines");
                            self.problem(&field_path, Some(field.node.pos), message);
                        } else {
                            config.shell_path = Some(shell);
                        }
                    }
                }
                "defaultTimeoutMs" => {
                    if let Some(ms) = self.positive(&field_path, &field.node) {
                        config.default_timeout_ms = Some(ms);
                    }
                }
                "maxTimeoutMs" => {
                    if let Some(ms) = self.positive(&field_path, &field.node) {
                        config.max_timeout_ms = Some(ms);
                    }
                }
                _ => self.unknown(&field_path, field, KEYS),
            }
        }
    }
}

/// The position of the value at `path` (as the permission crate writes it) inside `node`, which
/// sits at `root`.
fn locate(node: &Node, root: &str, path: &str) -> Option<Pos> {
    let mut rest = path.strip_prefix(root)?;
    let mut node = node;
    while let Some(after) = rest.strip_prefix('.') {
        let (key, remaining) = if after.starts_with('"') {
            let end = quoted_end(after)?;
            (
                serde_json::from_str::<String>(&after[..end]).ok()?,
                &after[end..],
            )
        } else {
            let end = after.find('.').unwrap_or(after.len());
            (after[..end].to_owned(), &after[end..])
        };
        let Value::Object(entries) = &node.value else {
            return None;
        };
        node = &entries.iter().rev().find(|e| e.key == key)?.node;
        rest = remaining;
    }
    Some(node.pos)
}

/// The byte length of the string literal that starts `text`, quotes included.
fn quoted_end(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// `parent.key`, with the key quoted unless it is a plain word; just `key` at the top.
fn key_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'$');
    let key = if plain { key.to_owned() } else { quote(key) };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
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
        assert_eq!(config.output_limits().direction, Direction::Head);
        assert_eq!(config.bash_options().max_timeout, Duration::from_secs(1));
        assert!(config.is_disabled("bash"));
        let (_, problems) = read(
            r#"{"limits": {"maxLines": 0, "direction": 1}}"#,
            Dialect::Tackle,
        );
        assert_eq!(problems.len(), 2);
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
            }
            .read(text, Dialect::Tackle, &mut config);
        }
        assert!(problems.is_empty(), "{problems:?}");
        assert!(!config.is_disabled("bash"));
        assert!(config.is_disabled("glob"));
    }
}
