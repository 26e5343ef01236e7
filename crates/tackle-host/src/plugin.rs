//! Plugins with scoped lifetimes: a plugin installs tools and hooks into one scope of its own in
//! the host's Location, after the built-ins; uninstalling drops the scope and everything in it.
//!
//! A plugin receives only a [`PluginScope`]: the narrow registration capability and the
//! services the built-ins share, never the registry itself. Its tools sit above the built-ins
//! in the Location (the latest registration of a name wins), so a plugin can shadow a built-in
//! for as long as it is installed, and the built-in comes back when it leaves. Turns made while
//! it was installed call its tools as stale afterwards; calls already running finish.

use tackle_builtins::ToolEnv;
use tackle_core::AnyTool;
use tackle_registry::{Location, Registration, ToolSet};

use crate::error::HostError;
use crate::policy::{Hook, HookGuard, Hooks};

/// Something that extends a host: tools, hooks, or both.
///
/// Be careful when:
/// - capturing services. Take what the tools need from [`PluginScope::env`] during `install`;
///   the scope itself does not outlive it.
/// - failing. Return `Err` before anything was registered is not required: nothing of a failed
///   install is kept.
pub trait Plugin: Send + Sync + 'static {
    /// The plugin's name, unique in a host: how it is uninstalled and named in warnings.
    fn name(&self) -> &str;

    /// Registers the plugin's tools and hooks into `scope`. An `Err` message says why it could
    /// not install; nothing of it stays registered.
    fn install(&self, scope: &mut PluginScope<'_>) -> Result<(), String>;
}

/// What a plugin may register into while it installs.
pub struct PluginScope<'h> {
    location: &'h Location,
    env: &'h ToolEnv,
    hooks: &'h Hooks,
    tools: ToolSet,
    guards: Vec<HookGuard>,
}

impl<'h> PluginScope<'h> {
    pub(crate) fn new(location: &'h Location, env: &'h ToolEnv, hooks: &'h Hooks) -> Self {
        Self {
            location,
            env,
            hooks,
            tools: ToolSet::new(),
            guards: Vec::new(),
        }
    }

    /// The services the built-ins share: the Location's filesystem, the permission gate, the
    /// session state.
    pub fn env(&self) -> &ToolEnv {
        self.env
    }

    /// Registers `tool` under `name`, the name the model calls it by.
    pub fn tool(&mut self, name: impl Into<String>, tool: AnyTool) -> &mut Self {
        let set = std::mem::take(&mut self.tools);
        self.tools = set.with(name, tool);
        self
    }

    /// Registers `hook` under `name` around every call.
    pub fn hook(&mut self, name: impl Into<String>, hook: impl Hook) -> &mut Self {
        self.guards.push(self.hooks.register(name, hook));
        self
    }

    /// Registers the tools as one record in the plugin's own scope.
    pub(crate) fn finish(self, plugin: &str) -> Result<InstalledPlugin, HostError> {
        let registration =
            self.location
                .register(self.tools)
                .map_err(|source| HostError::Registration {
                    what: format!("the tools of plugin `{plugin}`"),
                    source,
                })?;
        Ok(InstalledPlugin {
            name: plugin.to_owned(),
            _registration: registration,
            _hooks: self.guards,
        })
    }
}

/// An installed plugin: dropping it uninstalls it.
pub(crate) struct InstalledPlugin {
    name: String,
    _registration: Registration,
    _hooks: Vec<HookGuard>,
}

impl InstalledPlugin {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}
