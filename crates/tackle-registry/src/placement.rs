//! One registration placement: a stack of scoped contributions per name, read lock-free.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwap;
use tackle_core::{AnyTool, RegistrationId};
use tokio::sync::watch;

use crate::name::{NAME_GRAMMAR, check_name};

static NEXT_CONTRIBUTION: AtomicU64 = AtomicU64::new(1);

/// A fresh contribution number, unique in the process.
fn next_contribution() -> u64 {
    NEXT_CONTRIBUTION.fetch_add(1, Ordering::Relaxed)
}

/// A registration record: model-facing names mapped to tools.
///
/// The record is captured when it is registered; changing or dropping it afterwards has no effect
/// on the registry.
#[derive(Clone, Debug, Default)]
pub struct ToolSet {
    tools: Vec<(String, AnyTool)>,
}

impl ToolSet {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// The record with `tool` added under `name`.
    pub fn with(mut self, name: impl Into<String>, tool: impl Into<AnyTool>) -> Self {
        self.insert(name, tool);
        self
    }

    /// Adds `tool` under `name`.
    pub fn insert(&mut self, name: impl Into<String>, tool: impl Into<AnyTool>) {
        self.tools.push((name.into(), tool.into()));
    }

    /// The names in the record, in insertion order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|(name, _)| name.as_str())
    }
}

impl<N: Into<String>, T: Into<AnyTool>> FromIterator<(N, T)> for ToolSet {
    fn from_iter<It: IntoIterator<Item = (N, T)>>(iter: It) -> Self {
        Self {
            tools: iter
                .into_iter()
                .map(|(name, tool)| (name.into(), tool.into()))
                .collect(),
        }
    }
}

/// Why a record was rejected. Nothing from a rejected record is registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// A name breaks the grammar.
    #[error("invalid tool name {name:?}: {reason}; names must match {NAME_GRAMMAR}")]
    InvalidName {
        /// The offending name.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// The same name appears twice in one record.
    #[error("tool name {0:?} appears more than once in one registration record")]
    DuplicateName(String),
}

/// One active contribution to a name.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) identity: RegistrationId,
    contribution: u64,
    pub(crate) tool: AnyTool,
}

/// An immutable view of a placement: for each name, its contributions, latest last.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    stacks: HashMap<Arc<str>, Vec<Entry>>,
}

impl Snapshot {
    /// The effective (latest active) registration of `name`.
    pub(crate) fn effective(&self, name: &str) -> Option<&Entry> {
        self.stacks.get(name).and_then(|stack| stack.last())
    }

    /// Every name with its effective registration.
    pub(crate) fn effective_all(&self) -> impl Iterator<Item = (&Arc<str>, &Entry)> {
        self.stacks
            .iter()
            .filter_map(|(name, stack)| stack.last().map(|entry| (name, entry)))
    }
}

#[derive(Debug)]
pub(crate) struct Placement {
    snapshot: ArcSwap<Snapshot>,
    /// Serializes writers; readers never take it.
    write: Mutex<()>,
    /// Counts changes; watchers wake on each one.
    changes: watch::Sender<u64>,
}

impl Default for Placement {
    fn default() -> Self {
        Self {
            snapshot: ArcSwap::default(),
            write: Mutex::default(),
            changes: watch::Sender::new(0),
        }
    }
}

impl Placement {
    pub(crate) fn load(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    fn update(&self, change: impl FnOnce(&mut HashMap<Arc<str>, Vec<Entry>>)) {
        let _writer = self
            .write
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut stacks = self.snapshot.load().stacks.clone();
        change(&mut stacks);
        self.snapshot.store(Arc::new(Snapshot { stacks }));
        self.changes.send_modify(|count| *count += 1);
    }
}

/// A registry placement: where tools are registered, with scoped lifetimes.
///
/// There is one process placement, shared by every [`Location`](crate::Location), and one per
/// Location. Both have this same API; the Location's outranks the process one at lookup.
///
/// Within one placement:
/// - the latest active registration of a name wins;
/// - dropping a [`Registration`] removes exactly its own contributions;
/// - removing the winner reveals the next-latest active contribution.
///
/// Lookups read an immutable snapshot through `arc-swap`: registering and dropping never block a
/// settlement, and a settlement never blocks a registration. Cloning the registry is cheap and
/// yields a handle to the same placement.
#[derive(Clone, Debug, Default)]
pub struct ToolRegistry {
    inner: Arc<Placement>,
}

impl ToolRegistry {
    /// An empty placement.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn placement(&self) -> &Arc<Placement> {
        &self.inner
    }

    /// Registers every tool of `record` under its name, until the returned guard is dropped.
    ///
    /// The whole record is checked first: one invalid or duplicated name rejects it all, and
    /// nothing is registered.
    pub fn register(&self, record: ToolSet) -> Result<Registration, RegistrationError> {
        let mut seen = std::collections::HashSet::new();
        for (name, _) in &record.tools {
            check_name(name).map_err(|reason| RegistrationError::InvalidName {
                name: name.clone(),
                reason,
            })?;
            if !seen.insert(name.as_str()) {
                return Err(RegistrationError::DuplicateName(name.clone()));
            }
        }
        let contribution = next_contribution();
        let mut names = Vec::with_capacity(record.tools.len());
        let mut identities = Vec::with_capacity(record.tools.len());
        self.inner.update(|stacks| {
            for (name, tool) in record.tools {
                let name: Arc<str> = name.into();
                let identity = RegistrationId::mint();
                stacks.entry(name.clone()).or_default().push(Entry {
                    identity,
                    contribution,
                    tool,
                });
                names.push(name);
                identities.push(identity);
            }
        });
        Ok(Registration {
            placement: Arc::downgrade(&self.inner),
            contribution,
            names,
            identities,
        })
    }

    /// A watcher that wakes after every registration and every dropped registration here.
    ///
    /// It sees a change, not what changed: materialize a new turn to find out. Changes that
    /// happen while nobody awaits are folded into one wake-up.
    pub fn changes(&self) -> RegistryChanges {
        RegistryChanges {
            receivers: vec![self.inner.changes.subscribe()],
        }
    }

    /// The names that currently have an active registration here, sorted.
    pub fn names(&self) -> Vec<String> {
        let snapshot = self.inner.load();
        let mut names: Vec<String> = snapshot
            .effective_all()
            .map(|(name, _)| name.to_string())
            .collect();
        names.sort();
        names
    }
}

/// The guard of one registration record. Dropping it removes exactly that record's contributions.
///
/// Be careful when:
/// - binding it. `let _ = registry.register(..)?` drops the guard at once and unregisters the
///   tools; bind it to a named variable (or store it) for as long as the tools should exist.
#[must_use = "dropping a Registration unregisters its tools"]
#[derive(Debug)]
pub struct Registration {
    placement: Weak<Placement>,
    contribution: u64,
    names: Vec<Arc<str>>,
    identities: Vec<RegistrationId>,
}

impl Registration {
    /// The identity minted for `name` by this registration, if the record had that name.
    pub fn identity(&self, name: &str) -> Option<RegistrationId> {
        self.names
            .iter()
            .position(|n| &**n == name)
            .map(|i| self.identities[i])
    }

    /// Removes this registration's contributions now. Same as dropping it.
    pub fn close(self) {}
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(placement) = self.placement.upgrade() else {
            return;
        };
        let contribution = self.contribution;
        placement.update(|stacks| {
            for name in &self.names {
                if let Some(stack) = stacks.get_mut(name) {
                    stack.retain(|entry| entry.contribution != contribution);
                    if stack.is_empty() {
                        stacks.remove(name);
                    }
                }
            }
        });
    }
}

/// Wakes when the registrations of one or more placements change; see
/// [`ToolRegistry::changes`] and [`Location::changes`](crate::Location::changes).
#[derive(Clone, Debug)]
pub struct RegistryChanges {
    receivers: Vec<watch::Receiver<u64>>,
}

impl RegistryChanges {
    /// Waits for the next change after the last one this watcher saw (or after its creation).
    /// Returns false once every watched placement is gone, so no change can come.
    pub async fn changed(&mut self) -> bool {
        loop {
            let live: Vec<_> = self
                .receivers
                .iter_mut()
                .filter(|receiver| receiver.has_changed().is_ok())
                .collect();
            if live.is_empty() {
                return false;
            }
            let waits = live
                .into_iter()
                .map(|receiver| Box::pin(receiver.changed()));
            let (result, _, _) = futures_util::future::select_all(waits).await;
            if result.is_ok() {
                return true;
            }
        }
    }

    /// Counts every change so far as seen, so the next [`RegistryChanges::changed`] waits for a
    /// new one. A host that debounces bursts calls it after its pause.
    pub fn mark_seen(&mut self) {
        for receiver in &mut self.receivers {
            receiver.mark_unchanged();
        }
    }

    /// Both watchers' placements, in one.
    pub(crate) fn join(mut self, other: RegistryChanges) -> Self {
        self.receivers.extend(other.receivers);
        self
    }
}
