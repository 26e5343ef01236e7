//! [`HostBuilder`] and [`Host`]: one opened Location with its stores, permissions, tools and
//! policy, ready to make turns and settle calls.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tackle_builtins::{Ask, Gate, LocationFs, QuestionAsker, ToolEnv, tools::bash};
use tackle_core::{Context, Provider, SessionState, Settlement, ToolCall, ToolDefinition};
use tackle_mcp::ClientCalls;
use tackle_permission::{PermissionService, PresetContext};
use tackle_registry::{Layers, Location, SettlementConfig, ToolRegistry, Turn};
use tackle_store::{
    Acknowledge, DEFAULT_RETENTION, FsOutputStore, SqliteJournal, SqliteSavedApprovals,
    SqliteSessionState,
};

use crate::agents::Agents;
use crate::approvals::{Approvals, HostApprover};
use crate::config::{self, Config, Model};
use crate::error::HostError;
use crate::plugin::{Installed, Plugin, PluginScope};
use crate::policy::{self, Hooks};
use crate::toolsets::{self, ToolSets};

/// Builds a [`Host`]: where the Location and its data live, how questions are answered, which
/// configuration applies and which plugins to install.
///
/// ```no_run
/// # async fn example() -> Result<(), tackle_host::HostError> {
/// let host = tackle_host::HostBuilder::new("/path/to/repo").build()?;
/// let turn = host.turn(&tackle_host::TurnSpec::default())?;
/// # Ok(()) }
/// ```
pub struct HostBuilder {
    root: PathBuf,
    data_dir: Option<PathBuf>,
    config: Option<Config>,
    config_file: Option<PathBuf>,
    home: Option<PathBuf>,
    approvals: Approvals,
    client_calls: Option<ClientCalls>,
    question: Option<Arc<dyn QuestionAsker>>,
    plugins: Vec<Arc<dyn Plugin>>,
    default_agent: String,
    default_model: Option<Model>,
    background_jobs: bool,
    snapshots: bool,
    search_index: bool,
    journal_opening: Option<JournalOpening>,
}

/// The journal of a data directory, opening on its writer thread: a process that settles one
/// call starts it first, so SQLite reads its schema while the process reads its configuration.
/// Hand it to [`HostBuilder::journal_opening`].
#[derive(Debug)]
pub struct JournalOpening {
    path: PathBuf,
    opening: tackle_store::PendingJournal,
}

impl JournalOpening {
    /// Starts opening the journal of `data_dir` (created when missing) on its writer thread.
    pub fn start(data_dir: &Path) -> Self {
        let path = journal_path(data_dir);
        let opening = SqliteJournal::start_opening(&path, tackle_store::Durability::default());
        Self { path, opening }
    }

    /// The journal at `path`: this one when it is for `path`, else opened now.
    fn open(
        opening: Option<Self>,
        path: &Path,
    ) -> Result<SqliteJournal, tackle_core::JournalError> {
        match opening.filter(|opening| opening.path == path) {
            Some(opening) => opening.opening.finish(),
            None => SqliteJournal::open(path),
        }
    }
}

/// Where a data directory keeps the journal.
fn journal_path(data_dir: &Path) -> PathBuf {
    data_dir.join("journal.sqlite3")
}

impl HostBuilder {
    /// A host for the Location at `root`, with the defaults: data under
    /// [`default_data_dir`], the configuration files that apply to `root` (the user's, the
    /// project's or `opencode.json`), nobody to ask, the `build` agent, no model.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            data_dir: None,
            config: None,
            config_file: None,
            home: dirs::home_dir(),
            approvals: Approvals::default(),
            client_calls: None,
            question: None,
            plugins: Vec::new(),
            default_agent: "build".to_owned(),
            default_model: None,
            background_jobs: true,
            snapshots: true,
            search_index: true,
            journal_opening: None,
        }
    }

    /// Whether grep answers from a live index of the Location (watched, built in the background
    /// as the host opens; calls scan until it is ready). On by default, for hosts that serve
    /// many calls; a host that ends with one call (`tackle call`) turns it off and scans.
    pub fn search_index(mut self, on: bool) -> Self {
        self.search_index = on;
        self
    }

    /// Whether calls that may change files are bracketed by snapshots (so `undo` can revert
    /// them) when the configuration's `snapshot` key does not say. On by default; `tackle call`
    /// turns it off.
    pub fn snapshots(mut self, on: bool) -> Self {
        self.snapshots = on;
        self
    }

    /// Whether `bash` may run background jobs (and `bash_output`, `bash_input`, `bash_kill` are
    /// offered). On by default; a host that ends with one call (`tackle call`) turns it off, and
    /// `runInBackground` is then refused with a message saying why.
    pub fn background_jobs(mut self, on: bool) -> Self {
        self.background_jobs = on;
        self
    }

    /// Where the journal, managed outputs, saved approvals, session state and spool files live.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// Uses `config` instead of reading the configuration files.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Uses the journal `opening` started, when it is the journal of this host's data
    /// directory (else it is dropped and the journal opened as usual).
    pub fn journal_opening(mut self, opening: JournalOpening) -> Self {
        self.journal_opening = Some(opening);
        self
    }

    /// Reads `file` after the files that apply (the command line's `--config`).
    pub fn config_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.config_file = Some(file.into());
        self
    }

    /// The home directory for user configuration, skills and custom tools (default: the
    /// user's); `None` reads none of them.
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// How permission questions are answered.
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = approvals;
        self
    }

    /// When serving MCP: ask the client that made a call by elicitation first, when it can be
    /// asked, before [`HostBuilder::approvals`] decides.
    pub fn elicit_from(mut self, calls: ClientCalls) -> Self {
        self.client_calls = Some(calls);
        self
    }

    /// Offers the `question` tool, asking a person through `asker`.
    pub fn question_asker(mut self, asker: Arc<dyn QuestionAsker>) -> Self {
        self.question = Some(asker);
        self
    }

    /// Installs `plugin` after the built-ins, in a scope of its own.
    pub fn plugin(mut self, plugin: impl Plugin) -> Self {
        self.plugins.push(Arc::new(plugin));
        self
    }

    /// The agent of [`TurnSpec::default`] (default `build`).
    pub fn default_agent(mut self, agent: impl Into<String>) -> Self {
        self.default_agent = agent.into();
        self
    }

    /// The model of [`TurnSpec::default`] (default none: every tool set).
    pub fn default_model(mut self, model: Option<Model>) -> Self {
        self.default_model = model;
        self
    }

    /// Opens the stores, registers the built-ins, batch, the custom tools and the plugins, and
    /// checks the default agent.
    pub fn build(self) -> Result<Host, HostError> {
        let root = std::fs::canonicalize(&self.root).map_err(|source| HostError::Root {
            path: self.root.clone(),
            source,
        })?;
        let data_dir = match self.data_dir {
            Some(dir) => dir,
            None => default_data_dir().ok_or(HostError::NoDataDir)?,
        };
        std::fs::create_dir_all(&data_dir).map_err(|source| HostError::DataDir {
            path: data_dir.clone(),
            source,
        })?;
        let config = match self.config {
            Some(config) => config,
            None => config::load_with_home(
                &root,
                self.config_file.as_deref(),
                self.home.as_deref(),
                &crate::trust::TrustStore::in_data_dir(&data_dir),
            )?,
        };
        let config = Arc::new(config);
        let feed = crate::warnings::Warnings::default();
        let mut warnings = Vec::new();
        if let Some(trust) = config.trust().filter(|trust| trust.needs_trust()) {
            warnings.push(trust.notice());
        }
        if let Some(warning) = crate::sandbox::unavailable_warning(&config) {
            warnings.push(warning);
        }
        tracing::info!(kernel = %tackle_sandbox::Support::kernel().describe(), "sandbox");
        let telemetry = start_telemetry(&config, &mut warnings);

        let output_dir = data_dir.join("tool-output");
        let store = FsOutputStore::new(&output_dir).map_err(HostError::store("output store"))?;
        let spool_dir = spool_dir(&data_dir);
        // Created here so the preset can allow its canonical path.
        let _ = std::fs::create_dir_all(&spool_dir);
        // Outside the Location, only tackle's own directories need no question: the managed
        // outputs (read-only) and the spool. Not the system temp directory: other programs'
        // files live there.
        let preset_context = PresetContext {
            managed_output_dir: Some(canonical(&output_dir)),
            temp_dir: None,
            extra_allowed_dirs: vec![canonical(&spool_dir)],
            ..PresetContext::default()
        };
        let agents = Arc::new(Agents::new(config.clone(), preset_context));
        agents.get(&self.default_agent)?;

        let fs = LocationFs::new(&root).map_err(|source| HostError::Root {
            path: root.clone(),
            source: std::io::Error::other(source.to_string()),
        })?;
        let sandboxes = Arc::new(config.sandboxes(data_dir.join("tmp")));
        // Outputs, spools and session temp directories nobody ended, past their age.
        crate::sweeps::Sweeps {
            data_dir: data_dir.clone(),
            outputs: store.clone(),
            spool_dir: spool_dir.clone(),
            sandboxes: sandboxes.clone(),
        }
        .start_when_due(crate::sweeps::SWEEP_INTERVAL);
        // Formatters, MCP and language servers serve no single call: the default agent's policy.
        let servers_sandbox = tackle_sandbox::Confine::new(
            sandboxes.clone(),
            self.default_agent.clone(),
            "tackle-servers",
            root.clone(),
        );
        let code = {
            let feed = feed.clone();
            crate::code::build(
                root.clone(),
                &config,
                Arc::new(move |m| feed.host(m)),
                servers_sandbox.clone(),
            )
        };
        // Needed first here, so a journal opened ahead opens while the parts above are built.
        // One connection for the file: the journal's, shared by the stores beside it. Rows and
        // session state are committed by its writer thread, off the calls' path; the host
        // flushes them when it persists or drops.
        let journal = JournalOpening::open(self.journal_opening, &journal_path(&data_dir))
            .map_err(HostError::store("journal"))?
            .acknowledging(Acknowledge::Queued);
        let approvals = SqliteSavedApprovals::beside(&journal);
        let session_state = Arc::new(SqliteSessionState::beside(&journal));

        let fallback = Arc::new(HostApprover::new(self.approvals));
        let eliciting = self
            .client_calls
            .map(|calls| Arc::new(tackle_mcp::ElicitingApprover::new(calls, fallback.clone())));
        let approver: Arc<dyn tackle_permission::Approver> = match &eliciting {
            Some(eliciting) => eliciting.clone(),
            None => fallback.clone(),
        };
        let permissions = Arc::new(
            PermissionService::new(root.to_string_lossy(), approver, Arc::new(approvals))
                .map_err(HostError::store("saved approvals"))?,
        );
        fallback.attach(&permissions);
        if let Some(eliciting) = &eliciting {
            eliciting.attach(&permissions);
        }
        let gate = {
            let agents = agents.clone();
            Gate::new(permissions.clone(), move |agent| {
                agents.rules(agent.as_str())
            })
        };
        let jobs = match self.background_jobs {
            false => None,
            true => {
                // Every start, input, kill and end, under the identity of its call.
                let log = Arc::new(tackle_store::SqliteJobLog::beside(&journal));
                let sink: bash::jobs::JobEventSink = Arc::new(move |event| {
                    log.append(&tackle_store::JobLogRow {
                        session: event.session.clone(),
                        message: event.message.clone(),
                        call: event.call.clone(),
                        job: event.job.clone(),
                        event: event.kind.name().to_owned(),
                        detail: event.kind.detail(),
                    });
                });
                Some(bash::jobs::Jobs::with_events(config.max_jobs(), sink))
            }
        };
        // Real paths, as the tools resolve theirs.
        let real_output_dir =
            std::fs::canonicalize(&output_dir).unwrap_or_else(|_| output_dir.clone());
        let real_spool_dir =
            std::fs::canonicalize(&spool_dir).unwrap_or_else(|_| spool_dir.clone());
        let search_index = (self.search_index && config.search_index()).then(|| {
            tackle_builtins::index::SearchIndex::start(
                &root,
                tackle_builtins::index::IndexOptions {
                    max_memory_bytes: config.index_max_memory_bytes(),
                    store_dir: Some(index_dir(&data_dir)),
                },
            )
        });
        let mut env = ToolEnv::new(fs);
        if let Some(index) = &search_index {
            env = env.with_index(Arc::new(index.clone()));
        }
        let env = env
            .with_sandboxes(sandboxes.clone())
            .with_gate(gate.clone())
            .with_session_state(session_state.clone())
            .with_review(code.review.clone())
            .with_session_outputs(tackle_builtins::tools::SessionOutputs {
                managed: real_output_dir.clone(),
                spool: real_spool_dir.clone(),
            });

        let location = Location::new(
            root.clone(),
            &ToolRegistry::new(),
            SettlementConfig::new(Arc::new(store), Arc::new(journal))
                .with_limits(config.output_limits()),
        );
        let sets = ToolSets::register(
            &location,
            &env,
            &config,
            &toolsets::Options {
                home: self.home.as_deref(),
                spool_dir: &spool_dir,
                question: self.question,
                lsp: code.lsp.clone(),
                jobs: jobs.clone(),
            },
            &mut warnings,
        )?;
        let snapshot_store = SnapshotStore {
            root: root.clone(),
            dir: data_dir.join("snapshots"),
            data_dir: data_dir.clone(),
            opened: OnceLock::new(),
        };
        let snapshotting = config.snapshot().unwrap_or(self.snapshots);
        if snapshotting {
            let snapshots = snapshot_store.get()?;
            // Files the default agent may not read without asking (`.env`) are never kept.
            let rules = agents.rules(&self.default_agent);
            snapshots.set_secret_filter(Arc::new(move |path| {
                rules.evaluate(
                    tackle_core::names::Permission::READ.as_str(),
                    &path.display(),
                ) != tackle_permission::Action::Allow
            }));
            // Once per host that takes snapshots, in the background (not on every one-shot
            // `tackle call`): the first full snapshot, so no call waits for it, then contents
            // past the retention that nothing needs.
            let snapshots = snapshots.clone();
            std::thread::spawn(move || {
                snapshots.build();
                if let Err(error) = snapshots.sweep(DEFAULT_RETENTION) {
                    tracing::warn!(%error, "sweeping old snapshots failed");
                }
            });
        }
        let snapshot_layer = snapshot_store.opened().map(|snapshots| {
            Arc::new(policy::snapshot::SnapshotLayer::new(
                snapshots.clone(),
                jobs.as_ref(),
                feed.clone(),
            ))
        });
        let hooks = Hooks::new();
        let layers = policy::layers(
            gate.clone(),
            session_state.clone(),
            hooks.clone(),
            snapshot_layer.clone(),
            feed.clone(),
        );
        // The configuration's command hooks come first, before any plugin's. Inside a hook they
        // are off: the hook's own `tackle` would run the hook again.
        let in_hook = std::env::var_os(policy::command::IN_HOOK_ENV).is_some();
        if in_hook && !config.hooks().is_empty() {
            warnings.push(format!(
                "command hooks are off: this tackle runs inside a hook ({} is set)",
                policy::command::IN_HOOK_ENV
            ));
        }
        // Hooks run sandboxed like the agent's commands, with tackle's data directory writable
        // (a hook may call `tackle`).
        let hook_sandboxes = config.sandbox_hooks().then(|| {
            Arc::new(
                config.sandboxes_writing(data_dir.join("tmp"), std::slice::from_ref(&data_dir)),
            )
        });
        let command_hooks = config
            .hooks()
            .iter()
            .filter(|_| !in_hook)
            .map(|hook| {
                hooks.register(
                    policy::command::CommandHookRunner::name(hook),
                    policy::command::CommandHookRunner::new(
                        hook.clone(),
                        root.clone(),
                        hook_sandboxes.clone(),
                    ),
                )
            })
            .collect();

        let mut plugins = Installed::new(sets.skills.clone());
        for plugin in self.plugins {
            let installed = install(&*plugin, &location, &env, &hooks)?;
            plugins.add(installed, &location, &env)?;
        }

        let mcp_servers = {
            let (startable, skipped) = crate::nesting::startable(&config.mcp, location.root());
            warnings.extend(skipped);
            startable
                .into_iter()
                .map(crate::mcp::server_config)
                .collect()
        };
        for warning in &warnings {
            feed.host(warning.clone());
        }
        let saved = crate::resources::SavedOutputs::new(
            real_output_dir,
            real_spool_dir,
            session_state.clone(),
        );
        let mcp_sandbox = config
            .sandbox_mcp_servers()
            .then(|| servers_sandbox.clone());
        Ok(Host {
            location,
            config,
            agents,
            permissions,
            gate,
            env,
            layers,
            hooks,
            _command_hooks: command_hooks,
            sets,
            plugins: Mutex::new(plugins),
            mcp: crate::mcp::Mcp::new(mcp_servers, mcp_sandbox, feed.clone()),
            spool_dir,
            default_agent: self.default_agent,
            default_model: self.default_model,
            warnings: Mutex::new(warnings),
            saved,
            feed,
            lsp: code.lsp,
            jobs,
            snapshots: snapshot_store,
            snapshot_layer,
            search_index,
            session_state,
            telemetry,
        })
    }
}

/// The host's telemetry, when the environment or the configuration names a collector; a
/// setting that cannot be used leaves it off, with a warning.
fn start_telemetry(
    config: &Config,
    warnings: &mut Vec<String>,
) -> Option<Arc<crate::telemetry::Telemetry>> {
    let env = |name: &str| std::env::var(name).ok();
    let settings =
        match crate::telemetry::TelemetrySettings::resolve(config.telemetry.as_ref(), env) {
            Ok(settings) => settings?,
            Err(error) => {
                warnings.push(error.to_string());
                return None;
            }
        };
    match crate::telemetry::Telemetry::start(&settings) {
        Ok(telemetry) => Some(telemetry),
        Err(error) => {
            warnings.push(error.to_string());
            None
        }
    }
}

/// What a turn is for: an agent, a model, and the provider dialect it is exported in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnSpec {
    /// The agent whose rules decide which tools it sees (default: the host's default agent).
    pub agent: Option<String>,
    /// The model the turn is for; it picks the model's tool set and provider (default: the
    /// host's default model).
    pub model: Option<Model>,
    /// The provider API the tools are exported in; calls are read as it sends them (default:
    /// canonical JSON Schema).
    pub dialect: Option<Provider>,
}

impl TurnSpec {
    /// A turn for `agent`.
    pub fn agent(agent: impl Into<String>) -> Self {
        Self {
            agent: Some(agent.into()),
            ..Self::default()
        }
    }

    /// The same turn, for `model`.
    pub fn with_model(mut self, model: Option<Model>) -> Self {
        self.model = model;
        self
    }

    /// The same turn, exported in `dialect`.
    pub fn with_dialect(mut self, dialect: Option<Provider>) -> Self {
        self.dialect = dialect;
        self
    }
}

/// One opened Location with its tools and policy.
///
/// Dropping it unregisters everything it registered, stops its MCP servers and kills their
/// process groups.
pub struct Host {
    location: Location,
    config: Arc<Config>,
    agents: Arc<Agents>,
    permissions: Arc<PermissionService>,
    gate: Gate,
    env: ToolEnv,
    layers: Layers,
    hooks: Hooks,
    /// Keeps the configuration's command hooks registered for the host's life.
    _command_hooks: Vec<policy::HookGuard>,
    sets: ToolSets,
    plugins: Mutex<Installed>,
    mcp: crate::mcp::Mcp,
    spool_dir: PathBuf,
    default_agent: String,
    default_model: Option<Model>,
    warnings: Mutex<Vec<String>>,
    /// Each session's saved outputs and spool files, for [`Host::saved_outputs`].
    saved: crate::resources::SavedOutputs,
    /// Every warning, for [`Host::warnings`].
    feed: crate::warnings::Warnings,
    /// The language servers; dropping the host kills them.
    lsp: Option<Arc<tackle_lsp::LspManager>>,
    /// The background jobs; dropping the host kills them.
    jobs: Option<bash::jobs::Jobs>,
    /// The Location's snapshots and change log.
    pub(crate) snapshots: SnapshotStore,
    /// The snapshot layer, when calls are snapshotted.
    pub(crate) snapshot_layer: Option<Arc<policy::snapshot::SnapshotLayer>>,
    /// Per-session state, shared with the tools and layers.
    session_state: Arc<SqliteSessionState>,
    /// Spans and metrics of every call, when a collector is configured.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// The live index grep answers from, when the host keeps one.
    search_index: Option<tackle_builtins::index::SearchIndex>,
}

impl Drop for Host {
    fn drop(&mut self) {
        // Whatever else still holds the database (a task that outlives the host), what this
        // host queued is committed when it goes.
        self.flush_stores();
        if let Some(telemetry) = &self.telemetry {
            telemetry.shutdown(crate::telemetry::FLUSH_WITHIN);
        }
    }
}

/// How long background jobs and language servers get at shutdown to stop on their own before
/// their process groups are killed: short, so a host that gives its server 500 ms to exit after
/// SIGINT (Claude Code) never has to kill it.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(40);

impl Host {
    /// Stops the background jobs and the language servers, all at once, within about `grace`
    /// (see [`SHUTDOWN_GRACE`]): SIGTERM to each job's process group, `shutdown` and `exit` to
    /// each server, then whatever is still there is killed with its process group. Then the
    /// configured MCP servers are dropped (their process groups killed). Dropping the host kills
    /// them all at once instead.
    pub async fn shutdown(&self, grace: Duration) {
        let jobs = async {
            if let Some(jobs) = &self.jobs {
                jobs.shutdown(grace).await;
            }
        };
        let lsp = async {
            if let Some(lsp) = &self.lsp {
                lsp.shutdown(grace).await;
            }
        };
        futures_util::future::join(jobs, lsp).await;
        self.mcp.stop();
    }

    /// Writes what is kept only in memory or queued and is worth keeping for the next process
    /// (the journal's and session state's queued rows, the snapshot stat cache), for a process
    /// about to exit without dropping the host. The change log is committed as it goes.
    pub fn persist(&self) {
        self.flush_stores();
        if let Some(snapshots) = self.snapshots.opened() {
            snapshots.persist();
        }
        // Last: the spans and metrics still queued, waiting at most `FLUSH_WITHIN`.
        if let Some(telemetry) = &self.telemetry {
            telemetry.shutdown(crate::telemetry::FLUSH_WITHIN);
        }
    }

    /// Commits the journal's and session state's queued rows (one writer serves both).
    fn flush_stores(&self) {
        if let Err(error) = self.session_state.flush() {
            tracing::error!(%error, "the journal or session state lost writes");
        }
    }

    /// A builder for a host of the Location at `root`.
    pub fn builder(root: impl Into<PathBuf>) -> HostBuilder {
        HostBuilder::new(root)
    }

    /// Materializes a turn: every registered tool the agent's rules do not wholly deny, minus
    /// the disabled ones, those for another provider than the model's and those the model's
    /// tool set hides; in the spec's dialect, with the host's policy around every call.
    pub fn turn(&self, spec: &TurnSpec) -> Result<Turn, HostError> {
        let agent = self
            .agents
            .get(spec.agent.as_deref().unwrap_or(&self.default_agent))?;
        let model = spec.model.as_ref().or(self.default_model.as_ref());
        let offer = toolsets::offer_filter(agent.rules.clone(), model, &self.config);
        let filter = move |name: &str, definition: &ToolDefinition| offer(name, definition);
        let turn = match spec.dialect {
            Some(dialect) => self.location.materialize_for(dialect, filter),
            None => self.location.materialize(filter),
        };
        let layers = match &self.telemetry {
            // First, so it sees every call before another layer can stop it.
            Some(telemetry) => std::iter::once(telemetry.layer(model))
                .chain(self.layers.iter().cloned())
                .collect(),
            None => self.layers.clone(),
        };
        Ok(turn.with_layers(layers))
    }

    /// Settles one call of `turn` for `cx`: host policy (name repair, argument aliases, the
    /// doom-loop check, hooks), then settlement. The same as `turn.settle`, for a turn this host
    /// made.
    pub async fn settle(&self, turn: &Turn, cx: Context, call: ToolCall) -> Settlement {
        turn.settle(cx, call).await
    }

    /// The Location the tools are registered in.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The merged configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The permission service: pending questions, replies, saved approvals.
    pub fn permissions(&self) -> &Arc<PermissionService> {
        &self.permissions
    }

    /// The gate the built-ins ask through, for tools a host builds itself.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The environment the built-ins share, for tools a host builds itself.
    pub fn env(&self) -> &ToolEnv {
        &self.env
    }

    /// The hooks around every call; register more with [`Hooks::register`].
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// What the host skipped or could not use while it was built or since (a custom tool that
    /// clashes, an MCP server that would start itself, a server that failed), drained.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn warn(&self, warnings: impl IntoIterator<Item = String>) {
        let mut list = self.warnings.lock().unwrap_or_else(PoisonError::into_inner);
        for warning in warnings {
            self.feed.host(warning.clone());
            list.push(warning);
        }
    }

    /// What the live search index is doing, when the host keeps one.
    pub fn search_index_status(&self) -> Option<tackle_builtins::index::IndexStatus> {
        self.search_index.as_ref().map(|index| index.status())
    }

    /// Each session's saved outputs (the full text behind its truncated results) and spool
    /// files, as resources a session may list and read (`tackle serve` offers them over MCP).
    pub fn saved_outputs(&self) -> crate::SavedOutputs {
        self.saved.clone()
    }

    /// The skills `skill` offers `agent` (those on disk and the plugins'), less those its
    /// configured rules deny, as prompts a person may start.
    pub fn skill_prompts(&self, agent: &str) -> crate::SkillPrompts {
        let rules = self.agents.rules(agent);
        let skill = tackle_core::names::Permission::SKILL.as_str();
        let skills = self
            .plugins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .skills()
            .into_iter()
            .filter(|s| {
                tackle_permission::configured_denial(&rules, skill, std::slice::from_ref(&s.name))
                    .is_none()
            })
            .collect();
        crate::SkillPrompts::new(self.location.root().to_path_buf(), skills)
    }

    /// The host's warnings: the recent ones (its start: an MCP server skipped, settings
    /// ignored), then each one as it happens (an MCP server that disconnects, a snapshot that
    /// failed for a session's call, the trust notice a session was given), each with the
    /// session it concerns, if any. `tackle serve` sends them to its clients as MCP log
    /// messages. The stream ends when the host is dropped.
    pub fn warnings(
        &self,
    ) -> impl futures_util::Stream<Item = crate::HostWarning> + Send + 'static {
        self.feed.follow()
    }

    /// Installs `plugin` now, in a scope of its own; its tools join the next turn.
    pub fn install(&self, plugin: impl Plugin) -> Result<(), HostError> {
        let installed = install(&plugin, &self.location, &self.env, &self.hooks)?;
        self.plugins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(installed, &self.location, &self.env)
    }

    /// Uninstalls the plugin `name`: its tools, hooks and skills leave at once. Turns made before
    /// call its tools as stale; calls already running finish. False when no such plugin is
    /// installed.
    pub fn uninstall(&self, name: &str) -> bool {
        self.plugins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name, &self.location, &self.env)
    }

    /// The names of the installed plugins, in install order.
    pub fn plugins(&self) -> Vec<String> {
        self.plugins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .names()
    }

    /// Connects the configured MCP servers once, all at once, and registers their tools. A
    /// server that fails is reported in [`Host::take_warnings`] and left out.
    pub async fn connect_mcp(&self) {
        let warnings = self.mcp.connect(&self.location, &self.gate).await;
        self.warn(warnings);
    }

    /// Keeps the configured MCP servers connected in the background, reconnecting with backoff;
    /// for a long-running server. The first attempt of each is awaited (within its startup
    /// timeout), so the first listing has the tools of the servers that start.
    pub async fn supervise_mcp(&self) {
        let warnings = self.mcp.supervise(&self.location, &self.gate).await;
        self.warn(warnings);
    }

    /// Ends `session`: its pending permission questions are withdrawn and its spooled command
    /// output and sandbox temp directory are removed.
    pub fn end_session(&self, session: &str) {
        self.permissions.cancel_session(session);
        bash::end_session_spools(&self.spool_dir, session);
        if let Some(sandboxes) = self.env.sandboxes() {
            sandboxes.end_session(session);
        }
    }

    /// The sandbox every command of this host runs under.
    pub fn sandboxes(&self) -> Option<&Arc<tackle_sandbox::Sandboxes>> {
        self.env.sandboxes()
    }

    /// [`Host::end_session`] as a function a server can keep.
    pub fn session_end(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let permissions = self.permissions.clone();
        let spool_dir = self.spool_dir.clone();
        let jobs = self.jobs.clone();
        let sandboxes = self.env.sandboxes().cloned();
        move |session: &str| {
            permissions.cancel_session(session);
            if let Some(sandboxes) = &sandboxes {
                sandboxes.end_session(session);
            }
            // The session's background jobs end with it, before their spool files go.
            if let Some(jobs) = &jobs {
                jobs.end_session(session);
            }
            bash::end_session_spools(&spool_dir, session);
        }
    }

    /// The notice a session's first result carries while the project's configuration waits
    /// for trust: which of its settings were ignored and that only the user can trust it.
    /// `Some` once per session (across processes of one session) and per configuration
    /// content, logged each time it is given; `None` otherwise.
    pub fn trust_notice(&self, session: &str) -> Option<String> {
        let trust = self.config.trust().filter(|trust| trust.needs_trust())?;
        let key = format!("trust-notice:{}", trust.hash.as_str());
        if matches!(self.session_state.get(session, &key), Ok(Some(_))) {
            return None;
        }
        if let Err(error) = self.session_state.put(session, &key, Some("shown")) {
            tracing::warn!(%error, "cannot record that the trust notice was shown");
        }
        let notice = trust.notice();
        self.feed.session(session, notice.clone());
        Some(notice)
    }

    /// Whether a tool may reach an open world (the network, other programs): every tool but the
    /// closed built-ins (files, search, todos, skills). For MCP's `openWorldHint`.
    pub fn open_world(&self) -> impl Fn(&str, &ToolDefinition) -> bool + Send + Sync + 'static {
        let closed = self.sets.closed_world();
        move |name: &str, _: &ToolDefinition| !closed.iter().any(|c| c == name)
    }

    /// Asks the gate, under the calling agent's rules, as a built-in would: for a host's own
    /// checks around tools it did not build.
    pub async fn ask(&self, cx: &Context, ask: Ask) -> Result<(), tackle_core::ToolFailure> {
        self.gate.ask(cx, ask).await
    }
}

/// Runs `plugin`'s install in a fresh scope; nothing stays registered when it fails.
fn install(
    plugin: &dyn Plugin,
    location: &Location,
    env: &ToolEnv,
    hooks: &Hooks,
) -> Result<crate::plugin::InstalledPlugin, HostError> {
    let mut scope = PluginScope::new(location, env, hooks);
    plugin
        .install(&mut scope)
        .map_err(|message| HostError::Plugin {
            plugin: plugin.name().to_owned(),
            message,
        })?;
    scope.finish(plugin.name())
}

/// `$TACKLE_DATA_DIR`, else the platform data directory joined with `tackle`.
pub fn default_data_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TACKLE_DATA_DIR").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    dirs::data_dir().map(|dir| dir.join("tackle"))
}

/// Where the bash tool spools output that outgrows memory: `spool` in the data directory.
pub fn spool_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("spool")
}

/// `path` canonicalized when possible, as a string.
fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// The Location's snapshots and change log, opened on first use: a host that takes no snapshots
/// (a one-shot `tackle call`) opens them only if it is asked for history or an undo.
pub(crate) struct SnapshotStore {
    root: PathBuf,
    dir: PathBuf,
    /// tackle's data directory, never snapshotted even when it is inside the Location.
    data_dir: PathBuf,
    opened: OnceLock<Result<Arc<tackle_store::Snapshots>, Arc<tackle_store::SnapshotError>>>,
}

impl SnapshotStore {
    /// The snapshots, opened now if this is their first use.
    pub(crate) fn get(&self) -> Result<&Arc<tackle_store::Snapshots>, HostError> {
        self.opened
            .get_or_init(|| {
                tackle_store::Snapshots::open_excluding(&self.root, &self.dir, Some(&self.data_dir))
                    .map(Arc::new)
                    .map_err(Arc::new)
            })
            .as_ref()
            .map_err(|error| HostError::store("snapshots")(error.clone()))
    }

    /// The snapshots, when something opened them already.
    pub(crate) fn opened(&self) -> Option<&Arc<tackle_store::Snapshots>> {
        self.opened.get().and_then(|opened| opened.as_ref().ok())
    }
}

/// Where the live search index of the Location at `root` is kept under `data_dir`.
fn index_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("index")
}

/// `tackle config check`'s line about the live search index: whether `serve` and embedders
/// keep one, its memory cap, and the size of the one saved for `root` under `data_dir`.
pub fn index_summary(
    config: &Config,
    data_dir: Option<&Path>,
    root: &Path,
) -> (String, serde_json::Value) {
    let saved =
        data_dir.and_then(|dir| tackle_builtins::index::SearchIndex::saved(&index_dir(dir), root));
    let cap_mib = config.index_max_memory_bytes() / (1024 * 1024);
    let line = if !config.search_index() {
        "index: off (`index.enabled` is false): grep and glob scan on every call".to_owned()
    } else {
        let mut line = format!(
            "index: kept by `serve` and embedders, at most {} MiB of memory (`index.maxMemoryMb`)",
            tackle_core::thousands(cap_mib)
        );
        match &saved {
            Some((path, bytes)) => line.push_str(&format!(
                "; saved: {} ({} KiB on disk)",
                path.display(),
                tackle_core::thousands(bytes / 1024)
            )),
            None => line.push_str("; none saved yet for this Location"),
        }
        line
    };
    let json = serde_json::json!({
        "enabled": config.search_index(),
        "maxMemoryMb": cap_mib,
        "saved": saved.map(|(path, bytes)| serde_json::json!({
            "path": path.display().to_string(),
            "bytes": bytes,
        })),
    });
    (line, json)
}
