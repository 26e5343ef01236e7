//! The host wiring: storage, permissions, the built-in tools and the Location they run in.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, anyhow};
use tackle_builtins::{
    Ask, CustomCatalog, Gate, LocationFs, ToolEnv, TrustMode, agent_tools, custom_tools,
    discover_custom_tools, discover_skills, file_tools, search_tools, skill_tools, tools::bash,
    web_tools,
};
use tackle_core::{AnyTool, ToolDefinition};
use tackle_permission::{
    Agent, Approver, PermissionService, PresetContext, Ruleset, visible_filter,
};
use tackle_registry::{
    BatchOptions, Location, Registration, SettlementConfig, ToolRegistry, ToolSet, Turn, batch_tool,
};
use tackle_store::{
    DEFAULT_RETENTION, FsOutputStore, SqliteJournal, SqliteSavedApprovals, SqliteSessionState,
};

use crate::approve::{AskMode, CliApprover};
use crate::config::{Config, Model};

/// Built-ins that reach outside: the shell, and the web.
const OPEN_WORLD_BUILTINS: &[&str] = &["bash", "webfetch", "websearch"];

/// A turn filter: true for the tools a turn offers.
type OfferFn = Arc<dyn Fn(&str, &ToolDefinition) -> bool + Send + Sync>;

/// What the command line chose.
pub(crate) struct HostOptions {
    pub(crate) root: PathBuf,
    pub(crate) agent: String,
    pub(crate) data_dir: PathBuf,
    /// The merged configuration files.
    pub(crate) config: Config,
    pub(crate) ask: AskMode,
    /// The model the turns are for; `None` offers every tool set.
    pub(crate) model: Option<Model>,
    /// When serving MCP: the table of running calls' clients, so permission questions go to the
    /// calling client by elicitation before `ask` decides.
    pub(crate) client_calls: Option<tackle_mcp::ClientCalls>,
}

/// An opened Location with the built-in tools registered for one agent.
pub(crate) struct Host {
    location: Location,
    /// Which tools a turn offers: the agent's, the model's provider's and the model's tool set.
    offer: OfferFn,
    /// Keeps the tools registered; dropping it would unregister them.
    _tools: Registration,
    /// Keeps `batch` registered.
    _batch: Registration,
    /// Keeps the custom command tools registered.
    _custom: Registration,
    /// The MCP servers of the configuration, not yet connected.
    mcp_servers: Vec<tackle_mcp::McpServerConfig>,
    /// How MCP servers are connected: every call of their tools asks the gate first.
    mcp_options: tackle_mcp::ConnectOptions,
    /// Live MCP connections; each keeps its server's tools registered.
    mcp: Vec<tackle_mcp::McpConnection>,
    /// MCP servers kept connected in the background (`serve`).
    supervisors: Vec<tackle_mcp::Supervisor>,
    /// Answers permission questions; a session's pending ones are withdrawn when it ends.
    permissions: Arc<PermissionService>,
    /// Where the bash tool spools output.
    spool_dir: PathBuf,
    /// The built-in tools that reach nothing outside the Location and this machine's session
    /// state (every other tool, MCP and custom ones included, is open-world).
    closed_world: Arc<[String]>,
}

impl Host {
    pub(crate) fn open(options: HostOptions) -> anyhow::Result<Self> {
        let HostOptions {
            root,
            agent,
            data_dir,
            config,
            ask,
            model,
            client_calls,
        } = options;
        let root = std::fs::canonicalize(&root)
            .with_context(|| format!("cannot open the root {}", root.display()))?;
        std::fs::create_dir_all(&data_dir)
            .with_context(|| format!("cannot create the data directory {}", data_dir.display()))?;

        let output_dir = data_dir.join("tool-output");
        let store = FsOutputStore::new(&output_dir).map_err(|e| anyhow!(e))?;
        store.spawn_sweep_once(DEFAULT_RETENTION);
        let spool_dir = spool_dir(&data_dir);
        {
            let spool_dir = spool_dir.clone();
            std::thread::spawn(move || bash::sweep_spools(&spool_dir, bash::SPOOL_MAX_AGE));
        }
        let journal_path = data_dir.join("journal.sqlite3");
        let journal = SqliteJournal::open(&journal_path).map_err(|e| anyhow!(e))?;
        let approvals = SqliteSavedApprovals::open(&journal_path).map_err(|e| anyhow!(e))?;
        let session_state = SqliteSessionState::open(&journal_path).map_err(|e| anyhow!(e))?;

        let agent = agent_rules(&agent, &output_dir, &spool_dir, &config)?;
        let rules = agent.rules;

        let fallback = Arc::new(CliApprover::new(ask));
        let eliciting = client_calls
            .map(|calls| Arc::new(tackle_mcp::ElicitingApprover::new(calls, fallback.clone())));
        let approver: Arc<dyn Approver> = match &eliciting {
            Some(eliciting) => eliciting.clone(),
            None => fallback.clone(),
        };
        let service = Arc::new(
            PermissionService::new(root.to_string_lossy(), approver, Arc::new(approvals))
                .map_err(|e| anyhow!(e))?,
        );
        fallback.attach(&service);
        if let Some(eliciting) = &eliciting {
            eliciting.attach(&service);
        }

        let gate_rules = rules.clone();
        let gate = Gate::new(service.clone(), move |_| gate_rules.clone());
        let fs = LocationFs::new(&root)
            .with_context(|| format!("cannot open the root {}", root.display()))?;
        let env = ToolEnv::new(fs)
            .with_gate(gate.clone())
            .with_session_state(Arc::new(session_state));

        let location = Location::new(
            root,
            &ToolRegistry::new(),
            SettlementConfig::new(Arc::new(store), Arc::new(journal))
                .with_limits(config.output_limits()),
        );
        let offer = offer_filter(rules, model.as_ref(), &config);
        let catalog = discover_custom_tools(env.fs().root(), dirs::home_dir().as_deref());
        for warning in &catalog.warnings {
            eprintln!("tackle: skipped a custom tool: {warning}");
        }
        let mut builtins = builtin_tools(&env, &config, &spool_dir);
        let overridden = overridden(&config, &catalog, &builtins);
        builtins.retain(|(name, _)| !overridden.contains(name));
        // Built-ins only: external tools (MCP, custom) join the allow-list deliberately.
        let batchable: Vec<String> = builtins.iter().map(|(name, _)| name.clone()).collect();
        let closed_world = batchable
            .iter()
            .filter(|name| !OPEN_WORLD_BUILTINS.contains(&name.as_str()))
            .cloned()
            .collect();
        let tools = location
            .register(builtins.into_iter().collect::<ToolSet>())
            .map_err(|e| anyhow!(e))?;
        let with_batch = !config.is_disabled("batch") && !overridden.iter().any(|n| n == "batch");
        let batch_set = if with_batch {
            ToolSet::new().with(
                "batch",
                batch_tool(BatchOptions {
                    allowed: Some(batchable.clone()),
                }),
            )
        } else {
            ToolSet::new()
        };
        let batch = location.register(batch_set).map_err(|e| anyhow!(e))?;
        // Custom tools come last: they are not batchable, and they replace a built-in only when
        // the configuration's `overrides` names it (the built-in was left out above).
        let mut taken = batchable;
        if with_batch {
            taken.push("batch".to_owned());
        }
        let custom = location
            .register(custom_toolset(&env, &catalog, &taken, &config))
            .map_err(|e| anyhow!(e))?;
        let (startable, skipped) = crate::nesting::startable(&config.mcp, location.root());
        for warning in skipped {
            eprintln!("tackle: {warning}");
        }
        let mcp_servers = startable.into_iter().map(mcp_config).collect();
        Ok(Self {
            location,
            offer,
            _tools: tools,
            _batch: batch,
            _custom: custom,
            mcp_servers,
            mcp_options: mcp_options(gate),
            mcp: Vec::new(),
            supervisors: Vec::new(),
            permissions: service,
            spool_dir,
            closed_world,
        })
    }

    /// What `serve` runs when a connection's session ends: its pending permission questions
    /// are withdrawn and its spooled command output is removed.
    pub(crate) fn session_end(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let permissions = self.permissions.clone();
        let spool_dir = self.spool_dir.clone();
        move |session: &str| {
            permissions.cancel_session(session);
            bash::end_session_spools(&spool_dir, session);
        }
    }

    /// Whether a tool may reach an open world (the network, other programs): every tool but
    /// the closed built-ins (files, search, todos, skills). For MCP's `openWorldHint`.
    pub(crate) fn open_world(
        &self,
    ) -> impl Fn(&str, &ToolDefinition) -> bool + Send + Sync + 'static {
        let closed = self.closed_world.clone();
        move |name: &str, _: &ToolDefinition| !closed.iter().any(|c| c == name)
    }

    /// Connects the configured MCP servers, all at once, and registers their tools. A server
    /// that fails to start (or is slow past the startup timeout) is reported on stderr and left
    /// out; the others and the built-ins still work.
    pub(crate) async fn connect_mcp(&mut self) {
        let options = &self.mcp_options;
        let attempts = self
            .mcp_servers
            .iter()
            .map(|server| tackle_mcp::connect(server, &self.location, options));
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

    /// Keeps the configured MCP servers connected in the background, reconnecting with backoff
    /// when one exits or cannot be reached; for a long-running `serve`. Each first attempt is
    /// awaited (within its startup timeout) so the first listing has the tools of the servers
    /// that start.
    pub(crate) async fn supervise_mcp(&mut self) {
        for server in &self.mcp_servers {
            let supervisor = tackle_mcp::supervise(
                server.clone(),
                self.location.clone(),
                self.mcp_options.clone(),
            );
            self.supervisors.push(supervisor);
        }
        let first =
            self.supervisors
                .iter()
                .zip(&self.mcp_servers)
                .map(|(supervisor, server)| async move {
                    let state = supervisor
                        .wait_for(|state| state.connected || state.last_error.is_some())
                        .await;
                    for warning in &state.warnings {
                        eprintln!("tackle: {warning}");
                    }
                    if let Some(error) = &state.last_error {
                        eprintln!(
                            "tackle: {error}; retrying in the background (server `{}`)",
                            server.name
                        );
                    }
                });
        futures_util::future::join_all(first).await;
    }

    /// The Location the tools are registered in.
    pub(crate) fn location(&self) -> &Location {
        &self.location
    }

    /// The turn the agent is offered for the model: every registered tool its rules do not
    /// wholly deny, that serves the model's provider and that the model's tool set keeps. With
    /// a `dialect`, the turn speaks that provider's API: tools it cannot express are left out
    /// (see [`Turn::incompatible`]) and calls are read as that API sends them.
    pub(crate) fn materialize(&self, dialect: Option<tackle_core::Provider>) -> Turn {
        let offer = self.offer.clone();
        let filter = move |name: &str, definition: &ToolDefinition| offer(name, definition);
        match dialect {
            Some(dialect) => self.location.materialize_for(dialect, filter),
            None => self.location.materialize(filter),
        }
    }
}

/// The filter of every turn (and of `batch`'s sub-calls): the agent's visible tools, minus the
/// disabled ones (MCP tools included), those that need another provider than the model's, and
/// those the model's tool set hides. With no model, only the agent's rules and
/// `disabledTools` apply.
fn offer_filter(rules: Ruleset, model: Option<&Model>, config: &Config) -> OfferFn {
    let visible = visible_filter(rules);
    let disabled = config.disabled_filter();
    let provider = model.map(|model| model.provider.clone());
    let choices = config.tool_choices(model);
    Arc::new(move |name: &str, definition: &ToolDefinition| {
        visible(name)
            && !disabled(name)
            && definition.serves_provider(provider.as_deref())
            && choices.offers(name)
    })
}

/// The built-ins that `overrides` names and a custom tool replaces. A name without a custom tool
/// of that name, or without such a built-in, is reported and changes nothing.
fn overridden(
    config: &Config,
    catalog: &CustomCatalog,
    builtins: &[(String, AnyTool)],
) -> Vec<String> {
    let mut out = Vec::new();
    for name in &config.overrides {
        let builtin = name == "batch" || builtins.iter().any(|(b, _)| b == name);
        if config.is_disabled(name) {
            // Both the built-in and the custom tool are left out.
        } else if !catalog.tools.iter().any(|tool| tool.name == *name) {
            eprintln!(
                "tackle: `overrides` names `{name}`, but no custom tool has that name; the \
                 built-in stays"
            );
        } else if !builtin {
            eprintln!("tackle: `overrides` names `{name}`, which is not a built-in tool");
        } else if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// The tools the command offers, minus the configuration's `disabledTools`. Tools of later
/// issues register here.
///
/// `question` is left out: a one-shot command has nobody to ask mid-call.
fn builtin_tools(env: &ToolEnv, config: &Config, spool_dir: &Path) -> Vec<(String, AnyTool)> {
    let skills = discover_skills(env.fs().root(), dirs::home_dir().as_deref());
    for warning in &skills.warnings {
        eprintln!("tackle: skipped a skill: {warning}");
    }
    file_tools(env)
        .into_iter()
        .chain(search_tools(env))
        .chain([(
            "bash",
            bash::tool_with_options(
                env,
                bash::BashOptions {
                    spool_dir: spool_dir.to_path_buf(),
                    ..config.bash_options()
                },
            ),
        )])
        .chain(agent_tools(env, None))
        .chain(web_tools(env, tackle_builtins::WebSearchConfig::from_env()))
        // With no skills, `skill` has nothing to offer and is not advertised.
        .chain(if skills.skills.is_empty() {
            Vec::new()
        } else {
            skill_tools(env, skills)
        })
        .filter(|(name, _)| !config.is_disabled(name))
        .map(|(name, tool)| (name.to_owned(), tool))
        .collect()
}

/// The custom command tools of `catalog`, minus any that would take the name of a registered
/// built-in (`taken`).
fn custom_toolset(
    env: &ToolEnv,
    catalog: &CustomCatalog,
    taken: &[String],
    config: &Config,
) -> ToolSet {
    custom_tools(env, catalog, TrustMode::AskForProject)
        .into_iter()
        .filter(|(name, _)| !config.is_disabled(name))
        .filter(|(name, _)| {
            let clash = taken.iter().any(|b| b == name);
            if clash {
                eprintln!(
                    "tackle: skipped custom tool `{name}`: a built-in tool has that name; add \
                     \"{name}\" to `overrides` in the configuration to replace the built-in"
                );
            }
            !clash
        })
        .collect()
}

/// Connection options for MCP servers: a call of `<server>_<tool>` first asks the permission
/// of that name on `*`, as OpenCode does, so the configuration can allow, ask or deny each MCP
/// tool (the default rules allow unknown permissions).
fn mcp_options(gate: Gate) -> tackle_mcp::ConnectOptions {
    let hook: tackle_mcp::BeforeCall = Arc::new(move |cx, name| {
        let gate = gate.clone();
        Box::pin(async move { gate.ask(&cx, Ask::new(name, ["*"])).await })
    });
    tackle_mcp::ConnectOptions::default().with_before_call(hook)
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

/// Where the bash tool spools output that outgrows memory: `spool` in the data directory.
pub(crate) fn spool_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("spool")
}

/// The agent `name`, a preset or a configured agent, with the configuration's rules on top. The
/// model may read the managed outputs and the spool files named in results without asking.
fn agent_rules(
    name: &str,
    output_dir: &Path,
    spool_dir: &Path,
    config: &Config,
) -> anyhow::Result<Agent> {
    // Created here so it has a canonical path to allow.
    let _ = std::fs::create_dir_all(spool_dir);
    let context = PresetContext {
        managed_output_dir: Some(canonical(output_dir)),
        temp_dir: Some(canonical(&std::env::temp_dir())),
        extra_allowed_dirs: vec![canonical(spool_dir)],
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
