//! A Location: an opened workspace root with its own placement layered over the process one,
//! and the settlement configuration its turns use.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tackle_core::{Provider, SettlementConfig};

use crate::placement::{
    Entry, Registration, RegistrationError, RegistryChanges, ToolRegistry, ToolSet,
};
use crate::turn::{Turn, TurnFilter};

pub(crate) struct LocationInner {
    root: PathBuf,
    process: ToolRegistry,
    local: ToolRegistry,
    pub(crate) config: SettlementConfig,
}

impl LocationInner {
    /// The workspace root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

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
    ///
    /// The turn speaks canonical JSON Schema (what MCP lists). For a model provider's own
    /// dialect, use [`Location::materialize_for`].
    pub fn materialize(&self, filter: impl TurnFilter) -> Turn {
        Turn::materialize(
            self.inner.clone(),
            &self.inner.process,
            &self.inner.local,
            filter,
            None,
        )
    }

    /// Like [`Location::materialize`], for a request to `dialect`'s API.
    ///
    /// A tool whose schema the dialect cannot express is left out of the turn, so a call to it is
    /// `unknown`; [`Turn::incompatible`] says which and why, for the host to report when it
    /// prepares the request. [`Turn::export`] gives the tool definitions to send, and settlement
    /// undoes the dialect's changes to the arguments before decoding them (OpenAI strict mode's
    /// `null` for an optional field becomes an absent field again).
    pub fn materialize_for(&self, dialect: Provider, filter: impl TurnFilter) -> Turn {
        Turn::materialize(
            self.inner.clone(),
            &self.inner.process,
            &self.inner.local,
            filter,
            Some(dialect),
        )
    }
}
