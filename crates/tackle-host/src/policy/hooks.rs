//! Before and after hooks, OpenCode's `tool.execute.before` and `tool.execute.after`: a hook may
//! rewrite a call's arguments or refuse it with a message the model reads, and may observe each
//! settlement and leave a note for the host.
//!
//! Hooks are registered like tools, with a guard: dropping the [`HookGuard`] (or uninstalling
//! the plugin that registered it) removes the hook from every later call. A call already past
//! the hooks is not affected.

use std::sync::{Arc, Weak};

use arc_swap::ArcSwap;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tackle_core::{Context, Settlement, ToolFailure};
use tackle_registry::{CallDraft, Layer, Turn};

/// One hook around calls.
///
/// Be careful when:
/// - rewriting arguments. The rewrite is journaled as an adjustment, and the tool's codec still
///   validates the result: a rewrite cannot smuggle in what the schema forbids.
/// - refusing. The message is what the model reads; say what to do instead (STYLE.md).
pub trait Hook: Send + Sync + 'static {
    /// Before the call of `tool` runs, with its arguments as a JSON object. `Err` refuses the
    /// call with that message; nothing runs.
    fn before<'a>(
        &'a self,
        _cx: &'a Context,
        _tool: &'a str,
        _arguments: &'a mut Map<String, Value>,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    /// After the call settled. A returned note is added to the settlement's annotations, for
    /// the host only.
    fn after<'a>(
        &'a self,
        _cx: &'a Context,
        _settlement: &'a Settlement,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }
}

/// One registered hook and its name.
struct Entry {
    id: u64,
    name: String,
    hook: Arc<dyn Hook>,
}

struct HookList {
    entries: ArcSwap<Vec<Arc<Entry>>>,
    next: std::sync::atomic::AtomicU64,
    write: std::sync::Mutex<()>,
}

/// The hooks of a host, in registration order. Cheap to clone.
#[derive(Clone)]
pub struct Hooks {
    list: Arc<HookList>,
}

impl Default for Hooks {
    fn default() -> Self {
        Self::new()
    }
}

/// Keeps a hook registered; dropping it removes the hook.
#[must_use = "dropping the guard removes the hook"]
pub struct HookGuard {
    list: Weak<HookList>,
    id: u64,
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        if let Some(list) = self.list.upgrade() {
            let _write = list
                .write
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut entries: Vec<Arc<Entry>> = (**list.entries.load()).clone();
            entries.retain(|entry| entry.id != self.id);
            list.entries.store(Arc::new(entries));
        }
    }
}

impl Hooks {
    /// No hooks.
    pub fn new() -> Self {
        Self {
            list: Arc::new(HookList {
                entries: ArcSwap::from_pointee(Vec::new()),
                next: std::sync::atomic::AtomicU64::new(1),
                write: std::sync::Mutex::new(()),
            }),
        }
    }

    /// Registers `hook` under `name` (named in the journal when it changes a call), after the
    /// hooks already registered.
    pub fn register(&self, name: impl Into<String>, hook: impl Hook) -> HookGuard {
        let id = self
            .list
            .next
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _write = self
            .list
            .write
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut entries: Vec<Arc<Entry>> = (**self.list.entries.load()).clone();
        entries.push(Arc::new(Entry {
            id,
            name: name.into(),
            hook: Arc::new(hook),
        }));
        self.list.entries.store(Arc::new(entries));
        HookGuard {
            list: Arc::downgrade(&self.list),
            id,
        }
    }

    /// The names of the registered hooks, in order.
    pub fn names(&self) -> Vec<String> {
        self.list
            .entries
            .load()
            .iter()
            .map(|entry| entry.name.clone())
            .collect()
    }
}

impl Layer for Hooks {
    fn before<'a>(
        &'a self,
        _turn: &'a Turn,
        cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            let entries = self.list.entries.load_full();
            if entries.is_empty() {
                return Ok(());
            }
            let tool = call.name().to_owned();
            let Some(arguments) = call.arguments_mut() else {
                return Ok(());
            };
            let mut changed_by = Vec::new();
            for entry in entries.iter() {
                let before = arguments.clone();
                entry
                    .hook
                    .before(cx, &tool, arguments)
                    .await
                    .map_err(ToolFailure::new)?;
                if *arguments != before {
                    changed_by.push(entry.name.clone());
                }
            }
            for name in changed_by {
                call.note(format!("hook `{name}` rewrote the arguments"));
            }
            Ok(())
        })
    }

    fn after<'a>(
        &'a self,
        _turn: &'a Turn,
        cx: &'a Context,
        settlement: &'a mut Settlement,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let entries = self.list.entries.load_full();
            for entry in entries.iter() {
                if let Some(note) = entry.hook.after(cx, settlement).await {
                    settlement
                        .annotations
                        .push(format!("{}: {note}", entry.name));
                }
            }
        })
    }
}
