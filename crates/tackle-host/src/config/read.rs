//! Reading one configuration file into the merged [`Config`]: the JSONC tree is parsed once,
//! keeping every position; each top-level key, and each entry of the keyed sections, is
//! deserialized into its serde type on its own, so one bad entry is reported without hiding the
//! next; every problem names the file, the key path, the line and the column.

use std::path::Path;

use serde::de::DeserializeOwned;
use tackle_core::Direction;
use tackle_permission::{
    Action, AgentMode, ConfigContext, Rule, RuleSource, Ruleset, is_trust, ruleset_from_config,
};

use super::file::{
    AgentModeName, AgentSection, DiagnosticsSection, DirectionName, FormatterSetting, HooksSection,
    IndexSection, LimitsSection, LspSection, McpSection, ModelSection, NonEmpty, OpenCodeAgent,
    OpenCodeMcp, OrderedBools, PermissionValue, SandboxSection, ServeSection, ShellSection,
    Strings, TACKLE_KEYS, TelemetrySection,
};
use super::json::{self, Entry, Node, Pos, Value};
use super::{AgentConfig, Config, Dialect, McpServer, McpTransport, ModelTools, Problem};
use crate::trust::{Held, HeldReason, ProjectTrust};

/// Reads one file into the configuration, recording problems.
pub(super) struct Reader<'a> {
    pub(super) file: &'a Path,
    pub(super) home: Option<&'a str>,
    pub(super) problems: &'a mut Vec<Problem>,
    /// For a file that came with the project: its trust state, where held settings are listed.
    pub(super) project: Option<&'a mut ProjectTrust>,
}

impl Reader<'_> {
    /// Whether a setting at `key` that does `what` applies now. Everything applies from the
    /// user's files; from the project's, a setting held for `reason` is listed and applies only
    /// once the project is trusted (never, for what a project may never grant).
    fn hold(&mut self, key: &str, what: impl Into<String>, reason: HeldReason) -> bool {
        let Some(project) = self.project.as_deref_mut() else {
            return true;
        };
        project.held.push(Held {
            file: self.file.to_path_buf(),
            key: key.to_owned(),
            what: what.into(),
            reason,
        });
        project.trusted && reason != HeldReason::NeverGranted
    }

    fn problem(&mut self, path: &str, pos: Option<Pos>, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.file.to_path_buf(),
            path: path.to_owned(),
            pos,
            message: message.into(),
        });
    }

    /// The entries of an object (duplicate keys reported), or a problem.
    fn object<'n>(&mut self, path: &str, node: &'n Node) -> Option<&'n [Entry]> {
        let Value::Object(entries) = &node.value else {
            self.problem(
                path,
                Some(node.pos),
                format!("expected an object, got {}", got(node)),
            );
            return None;
        };
        let mut seen = std::collections::HashSet::new();
        for entry in entries {
            if !seen.insert(entry.key.as_str()) {
                let at = key_path(path, &entry.key);
                self.problem(&at, Some(entry.key_pos), "the key appears more than once");
            }
        }
        Some(entries)
    }

    /// Deserializes `node` (at `path`) into `T`, or records where and why it does not fit.
    fn decode<T: DeserializeOwned>(&mut self, path: &str, node: &Node) -> Option<T> {
        match serde_path_to_error::deserialize::<_, T>(node) {
            Ok(value) => Some(value),
            Err(error) => {
                let mut at = path.to_owned();
                for segment in error.path() {
                    match segment {
                        serde_path_to_error::Segment::Seq { index } => {
                            at.push_str(&format!("[{index}]"));
                        }
                        serde_path_to_error::Segment::Map { key } => at = key_path(&at, key),
                        _ => {}
                    }
                }
                let raw = error.into_inner().to_string();
                let (message, unknown) = describe(&raw);
                if let Some(key) = &unknown
                    && !at.ends_with(&key_path("", key))
                {
                    at = key_path(&at, key);
                }
                let pos = locate_path(node, path, &at, unknown.is_some()).or(Some(node.pos));
                self.problem(&at, pos, message);
                None
            }
        }
    }

    pub(super) fn read(&mut self, text: &str, dialect: Dialect, config: &mut Config) {
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
                if !entries
                    .iter()
                    .any(|e| TACKLE_KEYS.contains(&e.key.as_str())) =>
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
            let tackle = dialect == Dialect::Tackle;
            match path {
                "permission" => self.permission(path, node, config),
                "agents" if tackle => self.agents(path, node, dialect, config),
                "agent" if !tackle => self.agents(path, node, dialect, config),
                "mcp" => self.mcp(path, node, dialect, config),
                "tools" => self.tools(path, node, config),
                "lsp" => self.lsp(path, node, dialect, config),
                "formatter" => {
                    if let Some(setting) = self.decode::<FormatterSetting>(path, node) {
                        let setting = self.formatters(path, setting);
                        config.merge_formatter(setting);
                    }
                }
                _ if !tackle => {}
                "limits" => self.limits(path, node, config),
                "snapshot" => {
                    if let Some(on) = self.decode::<bool>(path, node) {
                        config.snapshot = Some(on);
                    }
                }
                "index" => {
                    if let Some(section) = self.decode::<IndexSection>(path, node) {
                        if let Some(on) = section.enabled {
                            config.search_index = Some(on);
                        }
                        if let Some(mb) = section.max_memory_mb {
                            config.index_max_memory_mb = Some(mb.0);
                        }
                    }
                }
                "diagnostics" => {
                    if let Some(section) = self.decode::<DiagnosticsSection>(path, node) {
                        if let Some(ms) = section.wait_ms {
                            config.diagnostics_wait_ms = Some(ms.0);
                        }
                        if let Some(ms) = section.start_timeout_ms {
                            config.lsp_start_timeout_ms = Some(ms.0);
                        }
                    }
                }
                "sandbox" => {
                    if let Some(section) = self.sandbox(path, node) {
                        config.sandbox = std::mem::take(&mut config.sandbox).merged(section);
                    }
                }
                "serve" => {
                    if let Some(section) = self.decode::<ServeSection>(path, node)
                        && let Some(on) = section.structured_content
                    {
                        config.structured_content = Some(on);
                    }
                }
                "telemetry" => {
                    if let Some(section) = self.decode::<TelemetrySection>(path, node)
                        && self.hold(
                            path,
                            "sends spans and metrics to a collector",
                            HeldReason::SendsData,
                        )
                    {
                        let earlier = config.telemetry.take().unwrap_or_default();
                        config.telemetry = Some(earlier.merged(section));
                    }
                }
                "shell" => self.shell(path, node, config),
                "disabledTools" => {
                    if let Some(names) = self.decode::<Strings>(path, node) {
                        config.disabled_tools.extend(names.0);
                    }
                }
                "models" => self.models(path, node, config),
                "overrides" => {
                    if let Some(names) = self.decode::<Strings>(path, node) {
                        for name in names.0 {
                            let what = format!("replaces the built-in `{name}` with a custom tool");
                            let at = key_path(path, &name);
                            if self.hold(&at, what, HeldReason::WidensPermissions) {
                                config.overrides.push(name);
                            }
                        }
                    }
                }
                "hooks" => {
                    if let Some(hooks) = self.decode::<HooksSection>(path, node) {
                        let hooks = self.hooks(path, hooks);
                        config.add_hooks(hooks, self.file);
                    }
                }
                "$schema" => {
                    self.decode::<NonEmpty>(path, node);
                }
                _ => self.problem(
                    &key_path("", path),
                    Some(entry.key_pos),
                    format!("unknown key; expected one of: {}", TACKLE_KEYS.join(", ")),
                ),
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
        let value = self.decode::<PermissionValue>(path, node)?;
        let context = ConfigContext::new(self.home).with_root(path);
        match ruleset_from_config(&value.0, &context) {
            Ok(rules) if self.project.is_some() => Some(self.project_rules(rules)),
            Ok(rules) => Some(rules),
            Err(error) => {
                let at = locate_path(node, path, error.path(), false).unwrap_or(node.pos);
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

    /// A project file's rules, marked as the project's: deny and ask rules apply at once, allow
    /// rules once the project is trusted, and an allow of a trust permission never.
    fn project_rules(&mut self, rules: Ruleset) -> Ruleset {
        let mut kept = Ruleset::new();
        for rule in rules.rules() {
            let key = match &rule.source {
                RuleSource::Config { key } => key.clone(),
                other => other.to_string(),
            };
            let (permission, pattern) = (rule.permission.as_str(), rule.pattern.as_str());
            if rule.action == Action::Allow {
                let what = format!("allows `{permission}` on `{pattern}`");
                if is_trust(permission) {
                    self.hold(&key, what, HeldReason::NeverGranted);
                    continue;
                }
                if !self.hold(&key, what, HeldReason::WidensPermissions) {
                    continue;
                }
            }
            kept.push(Rule {
                source: RuleSource::Project { key },
                ..rule.clone()
            });
        }
        kept
    }

    fn agents(&mut self, path: &str, node: &Node, dialect: Dialect, config: &mut Config) {
        let Some(entries) = self.object(path, node) else {
            return;
        };
        for entry in entries {
            let agent_path = key_path(path, &entry.key);
            let (description, mode, permission, sandbox) = if dialect == Dialect::OpenCode {
                let Some(agent) = self.decode::<OpenCodeAgent>(&agent_path, &entry.node) else {
                    continue;
                };
                (agent.description, agent.mode, agent.permission, None)
            } else {
                let Some(agent) = self.decode::<AgentSection>(&agent_path, &entry.node) else {
                    continue;
                };
                let sandbox = match (agent.sandbox, entry_field(&entry.node, "sandbox")) {
                    (Some(_), Some(node)) => self.sandbox(&key_path(&agent_path, "sandbox"), node),
                    _ => None,
                };
                (agent.description, agent.mode, agent.permission, sandbox)
            };
            let rules = match (&permission, entry_field(&entry.node, "permission")) {
                (Some(_), Some(node)) => {
                    let rules_path = key_path(&agent_path, "permission");
                    self.rules(&rules_path, node).unwrap_or_default()
                }
                _ => Ruleset::new(),
            };
            let agent = AgentConfig {
                description: description.map(|d| d.0),
                mode: mode.map(|mode| match mode {
                    AgentModeName::Primary | AgentModeName::All => AgentMode::Primary,
                    AgentModeName::Subagent => AgentMode::Subagent,
                    AgentModeName::Hidden => AgentMode::Hidden,
                }),
                rules,
                sandbox,
            };
            config.merge_agent(&entry.key, agent);
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
            let what = match &transport {
                Some(McpTransport::Stdio { command, args, .. }) => Some((
                    format!("starts `{}`", argv_text(command, args)),
                    HeldReason::RunsCommand,
                )),
                Some(McpTransport::Http { url, .. }) => Some((
                    format!("connects to {url} and offers its tools"),
                    HeldReason::WidensPermissions,
                )),
                None => None,
            };
            if let Some((what, reason)) = what
                && !self.hold(&server_path, what, reason)
            {
                continue;
            }
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
        let server = self.decode::<McpSection>(path, node)?;
        let key_pos = |key: &str| entry_key_pos(node, key);
        match (server.command, server.url) {
            (Some(command), None) => {
                if server.headers.is_some() {
                    let message = "`headers` goes with `url`, not `command`";
                    self.problem(&key_path(path, "headers"), key_pos("headers"), message);
                    return None;
                }
                Some(McpTransport::Stdio {
                    command: command.0,
                    args: server.args.unwrap_or_default().0,
                    env: server.env.unwrap_or_default().into_iter().collect(),
                })
            }
            (None, Some(url)) => {
                for key in ["args", "env"] {
                    if entry_field(node, key).is_some() {
                        let message = format!("`{key}` goes with `command`, not `url`");
                        self.problem(&key_path(path, key), key_pos(key), message);
                        return None;
                    }
                }
                let url = self.url(&key_path(path, "url"), node, url.0)?;
                Some(McpTransport::Http {
                    url,
                    headers: server.headers.unwrap_or_default().into_iter().collect(),
                })
            }
            (Some(_), Some(_)) => {
                let message = "a server has either `command` or `url`, not both";
                self.problem(path, key_pos("url"), message);
                None
            }
            (None, None) => {
                self.problem(
                    path,
                    Some(node.pos),
                    "expected an object with `command` or `url`",
                );
                None
            }
        }
    }

    /// OpenCode's `{type: "local", command: [..], environment?}` or
    /// `{type: "remote", url, headers?}`; `enabled: false` leaves the server out.
    fn opencode_server(&mut self, path: &str, node: &Node) -> Option<McpTransport> {
        let server = self.decode::<OpenCodeMcp>(path, node)?;
        if server.enabled == Some(false) {
            return None;
        }
        let Some(kind) = server.kind else {
            self.problem(
                path,
                Some(node.pos),
                r#"expected an object with `type` "local" or "remote""#,
            );
            return None;
        };
        match kind.0.as_str() {
            "local" => {
                let Some(mut argv) = server.command.map(|c| c.0) else {
                    self.problem(path, Some(node.pos), "expected an object with `command`");
                    return None;
                };
                if argv.is_empty() {
                    let at = key_path(path, "command");
                    let pos = entry_field(node, "command").map(|n| n.pos);
                    self.problem(&at, pos, "expected a non-empty array");
                    return None;
                }
                let command = argv.remove(0);
                Some(McpTransport::Stdio {
                    command,
                    args: argv,
                    env: server.environment.unwrap_or_default().into_iter().collect(),
                })
            }
            "remote" => {
                let Some(url) = server.url else {
                    self.problem(path, Some(node.pos), "expected an object with `url`");
                    return None;
                };
                let url = self.url(&key_path(path, "url"), node, url.0)?;
                Some(McpTransport::Http {
                    url,
                    headers: server.headers.unwrap_or_default().into_iter().collect(),
                })
            }
            other => {
                let at = key_path(path, "type");
                let pos = entry_field(node, "type").map(|n| n.pos);
                self.problem(
                    &at,
                    pos,
                    format!(r#"expected "local" or "remote", got the string "{other}""#),
                );
                None
            }
        }
    }

    fn url(&mut self, path: &str, server: &Node, url: String) -> Option<String> {
        if url.starts_with("http://") || url.starts_with("https://") {
            return Some(url);
        }
        let pos = entry_field(server, "url").map(|n| n.pos);
        self.problem(
            path,
            pos,
            format!(
                "expected an http:// or https:// URL, got the string {}",
                quote(&url)
            ),
        );
        None
    }

    /// OpenCode's `tools` map; `true` undoes an earlier `false`.
    fn tools(&mut self, path: &str, node: &Node, config: &mut Config) {
        let Some(choices) = self.decode::<OrderedBools>(path, node) else {
            return;
        };
        for (name, on) in choices.0 {
            let at = key_path(path, &name);
            if on
                && !self.hold(
                    &at,
                    format!("offers `{name}`"),
                    HeldReason::WidensPermissions,
                )
            {
                continue;
            }
            config.disabled_tools.retain(|n| *n != name);
            if !on {
                config.disabled_tools.push(name);
            }
        }
    }

    fn models(&mut self, path: &str, node: &Node, config: &mut Config) {
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
            let Some(section) = self.decode::<ModelSection>(&model_path, &entry.node) else {
                continue;
            };
            let mut tools = section.tools.unwrap_or_default().0;
            tools.retain(|(name, on)| {
                let at = key_path(&key_path(&model_path, "tools"), name);
                !on || self.hold(
                    &at,
                    format!("offers `{name}`"),
                    HeldReason::WidensPermissions,
                )
            });
            config.models.push(ModelTools {
                model: entry.key.clone(),
                tools,
                file: self.file.to_path_buf(),
            });
        }
    }

    fn lsp(&mut self, path: &str, node: &Node, dialect: Dialect, config: &mut Config) {
        let Some(entries) = self.object(path, node) else {
            return;
        };
        for entry in entries {
            let server_path = key_path(path, &entry.key);
            if dialect == Dialect::Tackle
                && let Value::Object(fields) = &entry.node.value
            {
                const KEYS: &[&str] =
                    &["command", "extensions", "env", "initialization", "disabled"];
                if let Some(field) = fields.iter().find(|f| !KEYS.contains(&f.key.as_str())) {
                    self.problem(
                        &key_path(&server_path, &field.key),
                        Some(field.key_pos),
                        format!("unknown key; expected one of: {}", KEYS.join(", ")),
                    );
                    continue;
                }
            }
            if let Some(section) = self.decode::<LspSection>(&server_path, &entry.node) {
                // Turning a server off only narrows; anything else sets what runs and how.
                let only_off = section.disabled == Some(true)
                    && section.command.is_none()
                    && section.env.is_none();
                let what = match &section.command {
                    Some(command) => format!("runs `{}`", command.0.join(" ")),
                    None => format!("changes how the `{}` language server runs", entry.key),
                };
                if !only_off && !self.hold(&server_path, what, HeldReason::RunsCommand) {
                    continue;
                }
                config.lsp.retain(|(name, _)| *name != entry.key);
                config.lsp.push((entry.key.clone(), section));
            }
        }
    }

    /// The formatters that apply now: a built-in one named without a command of its own (its
    /// binary found on `PATH` by its own name) or one turned off applies at once; a command or
    /// environment from the project waits for trust.
    fn formatters(&mut self, path: &str, setting: FormatterSetting) -> FormatterSetting {
        let FormatterSetting::Named(named) = setting else {
            return setting;
        };
        let builtins = tackle_diagnostics::format::builtin_formatters();
        let kept = named
            .into_iter()
            .filter(|(name, section)| {
                let builtin = builtins.iter().any(|b| b.name == *name);
                let own_command = section.command.is_some() || section.environment.is_some();
                let off = section.disabled == Some(true);
                if off || (builtin && !own_command) {
                    return true;
                }
                let what = match &section.command {
                    Some(command) => format!("runs `{}`", command.0.join(" ")),
                    None => format!("changes how the `{name}` formatter runs"),
                };
                self.hold(&key_path(path, name), what, HeldReason::RunsCommand)
            })
            .collect();
        FormatterSetting::Named(kept)
    }

    fn limits(&mut self, path: &str, node: &Node, config: &mut Config) {
        let Some(limits) = self.decode::<LimitsSection>(path, node) else {
            return;
        };
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        if let Some(n) = limits.max_lines {
            config.limits.max_lines = Some(size(n.0));
        }
        if let Some(n) = limits.max_bytes {
            config.limits.max_bytes = Some(size(n.0));
        }
        if let Some(direction) = limits.direction {
            config.limits.direction = Some(match direction {
                DirectionName::Head => Direction::Head,
                DirectionName::Tail => Direction::Tail,
                DirectionName::HeadTail => Direction::HeadTail,
            });
        }
    }

    fn shell(&mut self, path: &str, node: &Node, config: &mut Config) {
        let Some(shell) = self.decode::<ShellSection>(path, node) else {
            return;
        };
        if let Some(shell_path) = shell.path {
            let name = Path::new(&shell_path.0)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name == "fish" || name == "nu" {
                let pos = entry_field(node, "path").map(|n| n.pos);
                let message = format!("{name} cannot run POSIX command lines");
                self.problem(&key_path(path, "path"), pos, message);
            } else if self.hold(
                &key_path(path, "path"),
                format!("runs every `bash` command with `{}`", shell_path.0),
                HeldReason::RunsCommand,
            ) {
                config.shell_path = Some(shell_path.0);
            }
        }
        if let Some(ms) = shell.default_timeout_ms {
            config.default_timeout_ms = Some(ms.0);
        }
        if let Some(ms) = shell.max_timeout_ms {
            config.max_timeout_ms = Some(ms.0);
        }
        if let Some(n) = shell.max_jobs {
            config.max_jobs = Some(usize::try_from(n.0).unwrap_or(usize::MAX));
        }
    }
}

impl Reader<'_> {
    /// A `sandbox` section; a project's that loosens the sandbox waits for trust.
    fn sandbox(&mut self, path: &str, node: &Node) -> Option<SandboxSection> {
        let section = self.decode::<SandboxSection>(path, node)?;
        if let Some(super::file::NetworkSetting::Lists(lists)) = &section.network
            && let Err(error) =
                tackle_sandbox::proxy::AllowList::parse(&lists.allow.0, &lists.deny.0)
        {
            let pos = entry_field(node, "network").map(|n| n.pos);
            self.problem(&key_path(path, "network"), pos, error.to_string());
            return None;
        }
        let loosens = section.loosening_keys();
        if !loosens.is_empty()
            && !self.hold(
                path,
                format!("loosens the sandbox ({})", loosens.join(", ")),
                HeldReason::WidensPermissions,
            )
        {
            return None;
        }
        Some(section)
    }

    /// The hooks that apply now: a project's wait for trust.
    fn hooks(&mut self, path: &str, hooks: HooksSection) -> HooksSection {
        let mut keep = |when: &str, list: Option<Vec<super::file::HookSection>>| {
            list.map(|list| {
                list.into_iter()
                    .enumerate()
                    .filter(|(i, hook)| {
                        let at = format!("{}[{i}]", key_path(path, when));
                        let what = format!("runs `{}` {when} calls", hook.command.0.join(" "));
                        self.hold(&at, what, HeldReason::RunsCommand)
                    })
                    .map(|(_, hook)| hook)
                    .collect()
            })
        };
        let before = keep("before", hooks.before);
        let after = keep("after", hooks.after);
        HooksSection { before, after }
    }
}

/// A command and its arguments as one line.
fn argv_text(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A serde error message in the file's terms, and the unknown key it names, if any.
fn describe(raw: &str) -> (String, Option<String>) {
    let names = |list: &str| -> Vec<String> {
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    if let Some(rest) = raw.strip_prefix("unknown field `") {
        let (key, after) = rest.split_once('`').unwrap_or((rest, ""));
        let expected = names(after);
        let message = if expected.is_empty() {
            "unknown key".to_owned()
        } else {
            format!("unknown key; expected one of: {}", expected.join(", "))
        };
        return (message, Some(key.to_owned()));
    }
    if let Some(rest) = raw.strip_prefix("unknown variant `") {
        let (got, after) = rest.split_once('`').unwrap_or((rest, ""));
        let expected: Vec<String> = names(after).iter().map(|n| format!("\"{n}\"")).collect();
        let list = match expected.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
        };
        return (format!("expected {list}, got the string \"{got}\""), None);
    }
    if let Some(key) = raw
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return (format!("expected an object with `{key}`"), None);
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = raw.strip_prefix(prefix)
            && let Some((got, expected)) = rest.split_once(", expected ")
        {
            return (
                format!("expected {expected}, got {}", got_phrase(got)),
                None,
            );
        }
    }
    if raw.starts_with("data did not match any variant") {
        return ("does not have a form this key accepts".to_owned(), None);
    }
    (raw.to_owned(), None)
}

/// serde's description of a value, as the messages name it.
fn got_phrase(got: &str) -> String {
    let literal = |s: &str| s.trim_matches('`').to_owned();
    if let Some(s) = got.strip_prefix("string ") {
        format!("the string {s}")
    } else if let Some(n) = got
        .strip_prefix("integer ")
        .or_else(|| got.strip_prefix("floating point "))
    {
        format!("the number {}", literal(n))
    } else if let Some(b) = got.strip_prefix("boolean ") {
        literal(b)
    } else {
        match got {
            "map" => "an object".to_owned(),
            "sequence" => "an array".to_owned(),
            "unit value" | "null" => "null".to_owned(),
            other => other.to_owned(),
        }
    }
}

/// How an error names the value at `node`.
fn got(node: &Node) -> String {
    match &node.value {
        Value::String(s) => format!("the string {}", quote(s)),
        Value::Number(n) => format!("the number {n}"),
        other => other.kind().to_owned(),
    }
}

/// The object field `key` of `node`, if `node` is an object that has it.
fn entry_field<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.value {
        Value::Object(entries) => entries.iter().rev().find(|e| e.key == key).map(|e| &e.node),
        _ => None,
    }
}

fn entry_key_pos(node: &Node, key: &str) -> Option<Pos> {
    match &node.value {
        Value::Object(entries) => entries
            .iter()
            .rev()
            .find(|e| e.key == key)
            .map(|e| e.key_pos),
        _ => None,
    }
}

/// The position of what `path` names inside `node` (which sits at `root`): a value, or with
/// `key` the key of the last segment. Paths are as [`key_path`] writes them.
fn locate_path(node: &Node, root: &str, path: &str, key: bool) -> Option<Pos> {
    let mut rest = path.strip_prefix(root)?;
    let mut node = node;
    let mut key_pos = None;
    loop {
        if let Some(after) = rest.strip_prefix('.') {
            let (name, remaining) = if after.starts_with('"') {
                let end = quoted_end(after)?;
                (
                    serde_json::from_str::<String>(&after[..end]).ok()?,
                    &after[end..],
                )
            } else {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                (after[..end].to_owned(), &after[end..])
            };
            let Value::Object(entries) = &node.value else {
                return None;
            };
            let entry = entries.iter().rev().find(|e| e.key == name)?;
            key_pos = Some(entry.key_pos);
            node = &entry.node;
            rest = remaining;
        } else if let Some(after) = rest.strip_prefix('[') {
            let (index, remaining) = after.split_once(']')?;
            let Value::Array(items) = &node.value else {
                return None;
            };
            node = items.get(index.parse::<usize>().ok()?)?;
            key_pos = None;
            rest = remaining;
        } else if rest.is_empty() {
            return Some(if key {
                key_pos.unwrap_or(node.pos)
            } else {
                node.pos
            });
        } else {
            return None;
        }
    }
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
pub(super) fn key_path(parent: &str, key: &str) -> String {
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
