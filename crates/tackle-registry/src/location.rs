//! A Location: an opened workspace root with its own placement layered over the process one,
//! and the settlement configuration its turns use.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tackle_core::{AgentId, Journal, LimitsOverride, OutputLimits, OutputStore};

use crate::placement::{
    Entry, Registration, RegistrationError, RegistryChanges, ToolRegistry, ToolSet,
};
use crate::turn::{Turn, TurnFilter};

/// How a Location's turns bound and record their settlements.
///
/// There is no `Default`: a host must choose where complete outputs and the journal live.
#[derive(Clone)]
pub struct SettlementConfig {
    pub(crate) store: Arc<dyn OutputStore>,
    pub(crate) journal: Arc<dyn Journal>,
    pub(crate) limits: OutputLimits,
    pub(crate) agent_limits: HashMap<AgentId, LimitsOverride>,
    pub(crate) read_tool: String,
    pub(crate) grep_tool: String,
}

impl fmt::Debug for SettlementConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SettlementConfig")
            .field("limits", &self.limits)
            .field("agent_limits", &self.agent_limits)
            .field("read_tool", &self.read_tool)
            .field("grep_tool", &self.grep_tool)
            .finish_non_exhaustive()
    }
}

impl SettlementConfig {
    /// Settlement with default limits (2000 lines, 50 KiB, head+tail), retaining oversized
    /// output in `store` and recording every settlement in `journal`.
    pub fn new(store: Arc<dyn OutputStore>, journal: Arc<dyn Journal>) -> Self {
        Self {
            store,
            journal,
            limits: OutputLimits::default(),
            agent_limits: HashMap::new(),
            read_tool: "read".to_owned(),
            grep_tool: "grep".to_owned(),
        }
    }

    /// Replaces the registry-wide output limits.
    pub fn with_limits(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Overrides the limits for one agent. A tool's own preference sits below this; a per-call
    /// override sits above it.
    pub fn with_agent_limits(mut self, agent: impl Into<AgentId>, limits: LimitsOverride) -> Self {
        self.agent_limits.insert(agent.into(), limits);
        self
    }

    /// The names of the tools the truncation hint may point to (defaults: `read`, `grep`). The
    /// hint names one only when the turn advertises it.
    pub fn with_recovery_tools(mut self, read: impl Into<String>, grep: impl Into<String>) -> Self {
        self.read_tool = read.into();
        self.grep_tool = grep.into();
        self
    }
}

pub(crate) struct LocationInner {
    root: PathBuf,
    process: ToolRegistry,
    local: ToolRegistry,
    pub(crate) config: SettlementConfig,
}

impl LocationInner {
    /// The effective registration of `name`: the Location's latest, else the process's latest.
    pub(crate) fn effective(&self, name: &str) -> Option<Entry> {
        if let Some(entry) = self.local.placement().load().effective(name) {
            return Some(entry.clone());
        }
        self.process.placement().load().effective(name).cloned()
    }
}

/// An opened workspace root: its own tool placement over the shared process placement, and the
/// owner of turns and settlement.
///
/// Location registrations outrank process registrations of the same name. Cloning is cheap and
/// yields a handle to the same Location.
#[derive(Clone)]
pub struct Location {
    pub(crate) inner: Arc<LocationInner>,
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Location")
            .field("root", &self.inner.root)
            .finish_non_exhaustive()
    }
}

impl Location {
    /// Opens a Location at `root`, layered over the `process` placement.
    pub fn new(root: impl Into<PathBuf>, process: &ToolRegistry, config: SettlementConfig) -> Self {
        Self {
            inner: Arc::new(LocationInner {
                root: root.into(),
                process: process.clone(),
                local: ToolRegistry::new(),
                config,
            }),
        }
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// This Location's own placement: the narrow capability to hand to Location plugins.
    pub fn tools(&self) -> &ToolRegistry {
        &self.inner.local
    }

    /// Registers `record` in this Location's placement. Same as `self.tools().register(record)`.
    pub fn register(&self, record: ToolSet) -> Result<Registration, RegistrationError> {
        self.inner.local.register(record)
    }

    /// A watcher that wakes when the tools this Location could advertise change: a
    /// registration or a dropped registration in its own placement or in the process placement.
    /// A host serving turns (an MCP server, say) waits on it to tell its client to list again.
    pub fn changes(&self) -> RegistryChanges {
        self.inner
            .local
            .changes()
            .join(self.inner.process.changes())
    }

    /// Captures what a provider turn advertises: for each effective name that `filter` keeps, its
    /// definition and registration identity. Handlers are not captured; settlement looks them
    /// up again and rejects the call if the registration changed.
    pub fn materialize(&self, filter: impl TurnFilter) -> Turn {
        Turn::materialize(
            self.inner.clone(),
            &self.inner.process,
            &self.inner.local,
            filter,
        )
    }
}
