//! Plugins with scoped lifetimes: a plugin installs tools, hooks and skills into one scope of its
//! own in the host's Location, after the built-ins; uninstalling drops the scope and everything
//! in it.
//!
//! A plugin receives only a [`PluginScope`]: the narrow registration capability and the
//! services the built-ins share, never the registry itself. Its tools sit above the built-ins
//! in the Location (the latest registration of a name wins), so a plugin can shadow a built-in
//! for as long as it is installed, and the built-in comes back when it leaves. Turns made while
//! it was installed call its tools as stale afterwards; calls already running finish.

use std::path::PathBuf;

use tackle_builtins::ToolEnv;
use tackle_builtins::tools::Skill;
use tackle_core::AnyTool;
use tackle_registry::{Location, Registration, ToolSet};

use crate::error::HostError;
use crate::policy::{Hook, HookGuard, Hooks};

/// Something that extends a host: tools, hooks, or both.
///
/// Be careful when:
/// - capturing services. Take what the tools need from [`PluginScope::env`] during `install`;
///   the scope itself does not outlive it.
/// - failing. An `Err` may come after some tools or hooks were added to the scope: nothing of
///   a failed install is kept.
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
    skills: Vec<Skill>,
}

impl<'h> PluginScope<'h> {
    pub(crate) fn new(location: &'h Location, env: &'h ToolEnv, hooks: &'h Hooks) -> Self {
        Self {
            location,
            env,
            hooks,
            tools: ToolSet::new(),
            guards: Vec::new(),
            skills: Vec::new(),
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

    /// Adds a skill the `skill` tool offers while the plugin is installed: its `name`, when to
    /// use it (`description`), its instructions (`body`) and the directory its paths are
    /// relative to.
    pub fn skill(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        body: impl Into<String>,
        dir: impl Into<PathBuf>,
    ) -> &mut Self {
        self.skills.push(Skill {
            name: name.into(),
            description: description.into(),
            body: body.into(),
            dir: dir.into(),
        });
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
            skills: self.skills,
        })
    }
}

/// An installed plugin: dropping it uninstalls it.
pub(crate) struct InstalledPlugin {
    name: String,
    _registration: Registration,
    _hooks: Vec<HookGuard>,
    skills: Vec<Skill>,
}

/// The installed plugins, and the `skill` tool over the skills on disk plus theirs.
pub(crate) struct Installed {
    plugins: Vec<InstalledPlugin>,
    /// The skills found on disk.
    base: Vec<Skill>,
    /// A `skill` registration above the built-in one while a plugin adds skills.
    skill_overlay: Option<Registration>,
}

impl Installed {
    pub(crate) fn new(base: Vec<Skill>) -> Self {
        Self {
            plugins: Vec::new(),
            base,
            skill_overlay: None,
        }
    }

    /// Adds a plugin; a name already installed is refused.
    pub(crate) fn add(
        &mut self,
        plugin: InstalledPlugin,
        location: &Location,
        env: &ToolEnv,
    ) -> Result<(), HostError> {
        if self.plugins.iter().any(|p| p.name == plugin.name) {
            return Err(HostError::Plugin {
                plugin: plugin.name.clone(),
                message: "a plugin of that name is already installed".to_owned(),
            });
        }
        let adds_skills = !plugin.skills.is_empty();
        self.plugins.push(plugin);
        if adds_skills {
            self.refresh_skills(location, env)?;
        }
        Ok(())
    }

    /// Removes the plugin `name`; false when none is installed.
    pub(crate) fn remove(&mut self, name: &str, location: &Location, env: &ToolEnv) -> bool {
        let Some(index) = self.plugins.iter().position(|p| p.name == name) else {
            return false;
        };
        let removed = self.plugins.remove(index);
        if !removed.skills.is_empty()
            && let Err(error) = self.refresh_skills(location, env)
        {
            tracing::warn!("the skill tool could not be rebuilt: {error}");
        }
        drop(removed);
        true
    }

    /// The skills `skill` offers: those on disk, then every installed plugin's (a plugin's
    /// skill of a name already offered replaces it).
    pub(crate) fn skills(&self) -> Vec<Skill> {
        let mut skills = self.base.clone();
        for skill in self.plugins.iter().flat_map(|p| p.skills.iter()) {
            skills.retain(|s| s.name != skill.name);
            skills.push(skill.clone());
        }
        skills
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.plugins.iter().map(|p| p.name.clone()).collect()
    }

    /// Re-registers `skill` over the skills on disk and every installed plugin's: the new
    /// record first, then the old one goes, so no turn sees no `skill` in between. With no
    /// plugin skills, the built-in `skill` shows again.
    fn refresh_skills(&mut self, location: &Location, env: &ToolEnv) -> Result<(), HostError> {
        if self.plugins.iter().all(|p| p.skills.is_empty()) {
            self.skill_overlay = None;
            return Ok(());
        }
        let skills = self.skills();
        let catalog = tackle_builtins::SkillCatalog {
            skills,
            warnings: Vec::new(),
        };
        let set: ToolSet = tackle_builtins::skill_tools(env, catalog)
            .into_iter()
            .collect();
        let registration = location
            .register(set)
            .map_err(|source| HostError::Registration {
                what: "the skill tool with the plugins' skills".to_owned(),
                source,
            })?;
        self.skill_overlay = Some(registration);
        Ok(())
    }
}
