//! `tackle serve` asks the person whether to trust the project's configuration: before a
//! session's first call, through a client that can show a form (MCP elicitation), with what
//! trusting enables (the text `tackle trust` prints) and the configuration's hash.
//!
//! A yes is recorded as `tackle trust` records it, and the server's host is rebuilt with the
//! trusted configuration and swapped in ([`LiveHost`]): calls in flight finish on the old host,
//! that first call and every later listing use the new one, and every client is told to list
//! the tools again. Session state lives in the data directory's SQLite files, which both hosts
//! share. A no, an unanswered form, or a client that cannot be asked keeps the untrusted parts
//! ignored, which the session's first result and the log say (`Host::trust_notice`); the same
//! configuration is not asked about again while the server runs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context as _, bail};
use arc_swap::ArcSwap;
use tackle_host::config;
use tackle_host::{Approvals, Host, ProjectTrust, TrustStore, TurnSpec};
use tackle_mcp::{ClientCalls, Confirmation, FirstCall, Prepared, TackleServer};
use tokio::task::JoinHandle;

/// The choice that trusts the configuration.
const TRUST: &str = "trust";
/// The choice that keeps its untrusted parts ignored.
const IGNORE: &str = "ignore";

/// What a host of this server is built from, to build it again once the person trusted the
/// project's configuration.
pub(crate) struct Reopen {
    pub(crate) root: PathBuf,
    pub(crate) data_dir: PathBuf,
    /// The command line's `--config`.
    pub(crate) config_file: Option<PathBuf>,
    pub(crate) approvals: Approvals,
    pub(crate) calls: ClientCalls,
    /// The turn the server lists, checked on the new host before it is swapped in.
    pub(crate) spec: TurnSpec,
}

/// The host a server settles through, replaced once when the person trusts the project.
pub(crate) struct LiveHost {
    current: ArcSwap<Host>,
    /// Hosts replaced while calls may still run on them; shut down with the server.
    retired: Mutex<Vec<Arc<Host>>>,
    reopen: Reopen,
    /// The configuration hashes the person was asked about. Held while asking, so the first
    /// calls of other sessions wait for the answer instead of asking again.
    asked: tokio::sync::Mutex<HashSet<String>>,
    /// True once a host was swapped in: a listing may come from the old one.
    swapped: AtomicBool,
    /// A handle on the server that tells every client to list again (not a connection's).
    notifier: Mutex<Option<TackleServer>>,
    /// Watchers of the swapped-in hosts' registrations.
    watchers: Mutex<Vec<JoinHandle<()>>>,
}

impl LiveHost {
    /// Serves `host`; `reopen` builds its trusted replacement.
    pub(crate) fn new(host: Host, reopen: Reopen) -> Arc<Self> {
        Arc::new(Self {
            current: ArcSwap::from_pointee(host),
            retired: Mutex::new(Vec::new()),
            reopen,
            asked: tokio::sync::Mutex::new(HashSet::new()),
            swapped: AtomicBool::new(false),
            notifier: Mutex::new(None),
            watchers: Mutex::new(Vec::new()),
        })
    }

    /// The host new calls and listings use.
    pub(crate) fn current(&self) -> Arc<Host> {
        self.current.load_full()
    }

    /// Every host of this server, the current one first.
    pub(crate) fn all(&self) -> Vec<Arc<Host>> {
        let retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
        std::iter::once(self.current())
            .chain(retired.iter().cloned())
            .collect()
    }

    /// A server over the current host's turns for the spec, with the hosts' session end, the
    /// trust notice, the open-world hints and the trust question before each connection's
    /// first call. Call [`LiveHost::notify_through`] once it is configured.
    pub(crate) fn server(self: &Arc<Self>) -> TackleServer {
        let turns = self.clone();
        let ended = self.clone();
        let notices = self.clone();
        let open = self.clone();
        let asks = self.clone();
        TackleServer::from_turns(move || {
            turns
                .current()
                .turn(&turns.reopen.spec)
                .expect("the agent was checked when each host was built")
        })
        .with_session_end(move |session| {
            for host in ended.all() {
                (host.session_end())(session);
            }
        })
        .with_notice(move |session| notices.current().trust_notice(session))
        .with_open_world(move |name, definition| (open.current().open_world())(name, definition))
        .with_before_first_call(move |call| asks.clone().before_first_call(call))
        // Every host of this server shares the data directory, so the first one's view of the
        // saved outputs is every host's.
        .with_resources(self.current().saved_outputs())
        .with_prompts(LivePrompts(self.clone()))
    }

    /// Sends the warnings of `host` to `server`'s clients that asked for log messages.
    pub(crate) fn log_warnings(server: &TackleServer, host: &Host) -> JoinHandle<()> {
        use futures_util::StreamExt as _;
        server.log_on(host.warnings().map(|warning| {
            let message = tackle_mcp::LogMessage::warning(warning.message);
            match warning.session {
                Some(session) => message.for_session(session),
                None => message,
            }
        }))
    }

    /// Keeps a handle on the configured `server`, to tell its clients when the host changed.
    pub(crate) fn notify_through(&self, server: &TackleServer) {
        *self.notifier.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(server.for_connection());
    }

    /// Stops the watchers and shuts every host down (language servers, background jobs).
    pub(crate) async fn shutdown(&self, grace: std::time::Duration) {
        for watcher in self
            .watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            watcher.abort();
        }
        // The handle's closures hold this host: dropping it ends the cycle.
        drop(
            self.notifier
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        for host in self.all() {
            host.shutdown(grace).await;
        }
    }

    /// Asks the person behind the client whether to trust the configuration, once per
    /// configuration while the server runs, and swaps in a trusted host on a yes.
    async fn before_first_call(self: Arc<Self>, call: FirstCall) -> Prepared {
        let unchanged = || match self.swapped.load(Ordering::SeqCst) {
            true => Prepared::ToolsChanged,
            false => Prepared::Unchanged,
        };
        if !call.client.can_ask() {
            return unchanged();
        }
        let mut asked = self.asked.lock().await;
        let host = self.current();
        let Some(trust) = host.config().trust().filter(|trust| trust.needs_trust()) else {
            return unchanged();
        };
        if asked.contains(trust.hash.as_str()) {
            return unchanged();
        }
        let answer = call.client.confirm(question(trust), TRUST, IGNORE).await;
        asked.insert(trust.hash.as_str().to_owned());
        match answer {
            Confirmation::Yes => {}
            Confirmation::No => {
                tracing::info!(
                    session = call.session,
                    "the person chose not to trust the project's configuration {}",
                    trust.hash
                );
                return unchanged();
            }
            Confirmation::Unanswered(reason) => {
                tracing::warn!(
                    session = call.session,
                    "the trust question went unanswered: {reason}"
                );
                return unchanged();
            }
        }
        match self.trust(trust).await {
            Ok(()) => Prepared::ToolsChanged,
            Err(error) => {
                tracing::warn!("trusting the project's configuration failed: {error:#}");
                unchanged()
            }
        }
    }

    /// Records the trust, builds the trusted host, swaps it in and tells the clients.
    async fn trust(&self, trust: &ProjectTrust) -> anyhow::Result<()> {
        let reopen = &self.reopen;
        let store = TrustStore::in_data_dir(&reopen.data_dir);
        crate::trust::record(&store, trust)?;
        let config = config::load(&reopen.root, reopen.config_file.as_deref(), &store)
            .map_err(|problems| anyhow::Error::new(problems).context("invalid configuration"))?;
        if !config.trust().is_some_and(|now| now.trusted) {
            bail!("the configuration changed while the person was asked; it stays untrusted");
        }
        let host = crate::open_host(
            reopen.root.clone(),
            reopen.data_dir.clone(),
            config,
            reopen.approvals.clone(),
            Some(reopen.calls.clone()),
            true,
            None,
        )?;
        host.supervise_mcp().await;
        crate::print_warnings(&host);
        host.turn(&reopen.spec)
            .context("the trusted configuration has no such agent")?;
        let changes = host.location().changes();
        let old = self.current.swap(Arc::new(host));
        self.retired
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(old);
        self.swapped.store(true, Ordering::SeqCst);
        tracing::info!(
            "the person trusted the project's configuration {} at {}",
            trust.hash,
            trust.root.display()
        );
        let notifier = self
            .notifier
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(notifier) = notifier {
            self.watchers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(notifier.notify_on(changes));
            self.watchers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Self::log_warnings(&notifier, &self.current()));
            notifier.notify_tools_changed().await;
        }
        Ok(())
    }
}

/// The skills the current host's `skill` offers the served agent, as MCP prompts; none when
/// the served turn does not offer `skill` (disabled, or no skills).
struct LivePrompts(Arc<LiveHost>);

impl LivePrompts {
    fn current(&self) -> Option<tackle_host::SkillPrompts> {
        let host = self.0.current();
        let spec = &self.0.reopen.spec;
        let turn = host.turn(spec).ok()?;
        turn.get(tackle_host::names::ToolName::SKILL.as_str())?;
        let agent = spec.agent.as_deref().unwrap_or("build");
        Some(host.skill_prompts(agent))
    }
}

impl tackle_mcp::PromptSource for LivePrompts {
    fn list(&self) -> Vec<tackle_mcp::PromptEntry> {
        self.current().map(|p| p.list()).unwrap_or_default()
    }

    fn get(&self, name: &str) -> Option<String> {
        self.current()?.get(name)
    }
}

/// The question: the configuration and its hash, what trusting enables, and the two choices.
fn question(trust: &ProjectTrust) -> String {
    let mut lines = vec![format!(
        "The project configuration of {} (configuration {}) is not trusted.",
        trust.root.display(),
        trust.hash
    )];
    lines.extend(crate::trust::what_trust_enables(trust));
    lines.push(format!(
        "Choose \"{TRUST}\" to apply them now (recorded, as `tackle trust` does, until the \
         configuration changes) or \"{IGNORE}\" to keep them ignored while this server runs."
    ));
    lines.join("\n")
}
