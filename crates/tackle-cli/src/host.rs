//! The host wiring: storage, permissions, the built-in tools and the Location they run in.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, anyhow};
use tackle_builtins::{
    Gate, LocationFs, ToolEnv, TrustMode, agent_tools, custom_tools, discover_custom_tools,
    discover_skills, file_tools, search_tools, skill_tools, tools::bash, web_tools,
};
use tackle_core::ToolDefinition;
use tackle_permission::{Agent, PermissionService, PresetContext, Ruleset, visible_filter};
use tackle_registry::{
    BatchOptions, Location, Registration, SettlementConfig, ToolRegistry, ToolSet, Turn, batch_tool,
};
use tackle_store::{
    DEFAULT_RETENTION, FsOutputStore, SqliteJournal, SqliteSavedApprovals, SqliteSessionState,
};

use crate::approve::{AskMode, CliApprover};
use crate::config::Config;

/// What the command line chose.
pub(crate) struct HostOptions {
    pub(crate) root: PathBuf,
    pub(crate) agent: String,
    pub(crate) data_dir: PathBuf,
    /// The merged configuration files.
    pub(crate) config: Config,
    pub(crate) ask: AskMode,
}

/// An opened Location with the built-in tools registered for one agent.
pub(crate) struct Host {
    location: Location,
    rules: Ruleset,
    /// Keeps the tools registered; dropping it would unregister them.
    _tools: Registration,
    /// Keeps `batch` registered.
    _batch: Registration,
    /// Keeps the custom command tools registered.
    _custom: Registration,
    /// The MCP servers of the configuration, not yet connected.
    mcp_servers: Vec<tackle_mcp::McpServerConfig>,
    /// Live MCP connections; each keeps its server's tools registered.
    mcp: Vec<tackle_mcp::McpConnection>,
}

impl Host {
    pub(crate) fn open(options: HostOptions) -> anyhow::Result<Self> {
        let HostOptions {
            root,
            agent,
            data_dir,
            config,
            ask,
        } = options;
        let root = std::fs::canonicalize(&root)
            .with_context(|| format!("cannot open the root {}", root.display()))?;
        std::fs::create_dir_all(&data_dir)
            .with_context(|| format!("cannot create the data directory {}", data_dir.display()))?;

        let output_dir = data_dir.join("tool-output");
        let store = FsOutputStore::new(&output_dir).map_err(|e| anyhow!(e))?;
        store.spawn_sweep_once(DEFAULT_RETENTION);
        let journal_path = data_dir.join("journal.sqlite3");
        let journal = SqliteJournal::open(&journal_path).map_err(|e| anyhow!(e))?;
        let approvals = SqliteSavedApprovals::open(&journal_path).map_err(|e| anyhow!(e))?;
        let session_state = SqliteSessionState::open(&journal_path).map_err(|e| anyhow!(e))?;

        let agent = agent_rules(&agent, &output_dir, &config)?;
        let rules = agent.rules;

        let approver = Arc::new(CliApprover::new(ask));
        let service = Arc::new(
            PermissionService::new(
                root.to_string_lossy(),
                approver.clone(),
                Arc::new(approvals),
            )
            .map_err(|e| anyhow!(e))?,
        );
        approver.attach(&service);

        let gate_rules = rules.clone();
        let fs = LocationFs::new(&root)
            .with_context(|| format!("cannot open the root {}", root.display()))?;
        let env = ToolEnv::new(fs)
            .with_gate(Gate::new(service, move |_| gate_rules.clone()))
            .with_session_state(Arc::new(session_state));

        let location = Location::new(
            root,
            &ToolRegistry::new(),
            SettlementConfig::new(Arc::new(store), Arc::new(journal))
                .with_limits(config.output_limits()),
        );
        let builtins = builtin_tools(&env, &config);
        // Built-ins only: external tools (MCP, custom) join the allow-list deliberately.
        let batchable: Vec<String> = builtins.names().map(str::to_owned).collect();
        let tools = location.register(builtins).map_err(|e| anyhow!(e))?;
        let visible = visible_filter(rules.clone());
        let batch_set = if config.is_disabled("batch") {
            ToolSet::new()
        } else {
            ToolSet::new().with(
                "batch",
                batch_tool(
                    &location,
                    move |name: &str, _: &ToolDefinition| visible(name),
                    BatchOptions {
                        allowed: Some(batchable.clone()),
                    },
                ),
            )
        };
        let batch = location.register(batch_set).map_err(|e| anyhow!(e))?;
        // Custom tools come last: they are not batchable and never replace a built-in.
        let custom = location
            .register(custom_toolset(&env, &batchable, &config))
            .map_err(|e| anyhow!(e))?;
        let mcp_servers = config.mcp.iter().map(mcp_config).collect();
        Ok(Self {
            location,
            rules,
            _tools: tools,
            _batch: batch,
            _custom: custom,
            mcp_servers,
            mcp: Vec::new(),
        })
    }

    /// Connects the configured MCP servers, all at once, and registers their tools. A server
    /// that fails to start (or is slow past the startup timeout) is reported on stderr and left
    /// out; the others and the built-ins still work.
    pub(crate) async fn connect_mcp(&mut self) {
        let options = tackle_mcp::ConnectOptions::default();
        let attempts = self
            .mcp_servers
            .iter()
            .map(|server| tackle_mcp::connect(server, &self.location, &options));
        for result in futures_util::future::join_all(attempts).await {
            match result {
                Ok(connection) => {
                    for warning in connection.warnings() {
                        eprintln!("tackle: {warning}");
                    }
                    self.mcp.push(connection);
                }
                Err(error) => eprintln!("tackle: {error}"),
            }
        }
    }

    /// The turn the agent is offered: every registered tool its rules do not wholly deny.
    pub(crate) fn materialize(&self) -> Turn {
        let visible = visible_filter(self.rules.clone());
        self.location
            .materialize(move |name: &str, _: &ToolDefinition| visible(name))
    }
}

/// The tools the command offers, minus the configuration's `disabledTools`. Tools of later
/// issues register here.
///
/// `question` is left out: a one-shot command has nobody to ask mid-call.
fn builtin_tools(env: &ToolEnv, config: &Config) -> ToolSet {
    let skills = discover_skills(env.fs().root(), dirs::home_dir().as_deref());
    for warning in &skills.warnings {
        eprintln!("tackle: skipped a skill: {warning}");
    }
    file_tools(env)
        .into_iter()
        .chain(search_tools(env))
        .chain([("bash", bash::tool_with_options(env, config.bash_options()))])
        .chain(agent_tools(env, None))
        .chain(web_tools(env, tackle_builtins::WebSearchConfig::from_env()))
        // With no skills, `skill` has nothing to offer and is not advertised.
        .chain(if skills.skills.is_empty() {
            Vec::new()
        } else {
            skill_tools(env, skills)
        })
        .filter(|(name, _)| !config.is_disabled(name))
        .collect()
}

/// The custom command tools of the project and the user, minus any that would take the name of
/// a built-in (`builtins`) or of `batch`.
fn custom_toolset(env: &ToolEnv, builtins: &[String], config: &Config) -> ToolSet {
    let catalog = discover_custom_tools(env.fs().root(), dirs::home_dir().as_deref());
    for warning in &catalog.warnings {
        eprintln!("tackle: skipped a custom tool: {warning}");
    }
    custom_tools(env, &catalog, TrustMode::AskForProject)
        .into_iter()
        .filter(|(name, _)| !config.is_disabled(name))
        .filter(|(name, _)| {
            let clash = builtins.iter().any(|b| b == name) || name == "batch";
            if clash {
                eprintln!("tackle: skipped custom tool `{name}`: a built-in tool has that name");
            }
            !clash
        })
        .collect()
}

/// The MCP client's form of a configured server.
fn mcp_config(server: &crate::config::McpServer) -> tackle_mcp::McpServerConfig {
    use crate::config::McpTransport;
    let transport = match &server.transport {
        McpTransport::Stdio { command, args, env } => tackle_mcp::McpTransport::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: env.iter().cloned().collect(),
        },
        McpTransport::Http { url, headers } => tackle_mcp::McpTransport::Http {
            url: url.clone(),
            headers: headers.iter().cloned().collect(),
        },
    };
    tackle_mcp::McpServerConfig {
        name: server.name.clone(),
        transport,
    }
}

/// The agent `name`, a preset or a configured agent, with the configuration's rules on top.
fn agent_rules(name: &str, output_dir: &Path, config: &Config) -> anyhow::Result<Agent> {
    let context = PresetContext {
        managed_output_dir: Some(canonical(output_dir)),
        temp_dir: Some(canonical(&std::env::temp_dir())),
        ..PresetContext::default()
    };
    config.agent(name, &context)
}

/// `path` canonicalized when possible, as a string.
fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}
