//! Provider turns: what was advertised, with which registration identities.

use crate::layer::Layers;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use tackle_core::{
    Provider, Recovery, RegistrationId, SchemaCompatError, ToolDefinition, export_tool,
};

use crate::location::LocationInner;
use crate::placement::ToolRegistry;

/// Decides which effective tools a turn advertises. The permission engine uses it to hide tools
/// an agent may not call.
pub trait TurnFilter {
    /// True to advertise `name` in this turn.
    fn advertise(&self, name: &str, definition: &ToolDefinition) -> bool;
}

impl<F: Fn(&str, &ToolDefinition) -> bool> TurnFilter for F {
    fn advertise(&self, name: &str, definition: &ToolDefinition) -> bool {
        self(name, definition)
    }
}

/// A filter that advertises every effective tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllTools;

impl TurnFilter for AllTools {
    fn advertise(&self, _: &str, _: &ToolDefinition) -> bool {
        true
    }
}

/// One tool as a turn advertised it.
#[derive(Clone, Debug)]
pub struct AdvertisedTool {
    name: Arc<str>,
    definition: Arc<ToolDefinition>,
    registration: RegistrationId,
}

impl AdvertisedTool {
    /// The model-facing name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Description and schemas. The same `Arc` is handed out every turn while the registration
    /// is unchanged, so hosts can cache provider-specific renderings by pointer.
    pub fn definition(&self) -> &Arc<ToolDefinition> {
        &self.definition
    }

    /// The registration the turn advertised.
    pub fn registration(&self) -> RegistrationId {
        self.registration
    }
}

#[derive(Clone)]
pub(crate) struct TurnInner {
    pub(crate) location: Arc<LocationInner>,
    tools: Vec<AdvertisedTool>,
    index: HashMap<Arc<str>, usize>,
    pub(crate) recovery: Recovery,
    pub(crate) dialect: Option<Provider>,
    /// The advertised tools in the dialect's shape, in the order of `tools`.
    exported: Vec<Value>,
    /// The tools left out because the dialect cannot express them.
    incompatible: Vec<SchemaCompatError>,
    /// Host policy around every call of the turn, sub-calls included.
    pub(crate) layers: Layers,
}

impl TurnInner {
    /// The advertised tools, sorted by name.
    pub(crate) fn tools(&self) -> &[AdvertisedTool] {
        &self.tools
    }

    /// The advertised tool called `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<&AdvertisedTool> {
        self.index.get(name).map(|&i| &self.tools[i])
    }
}

/// What one provider turn advertised, and the only way to settle that turn's calls.
///
/// Cloning is cheap. A turn stays valid as long as the host keeps it: calls from an old turn are
/// settled against what that turn advertised, and are rejected as stale when the registration
/// they name has changed since.
#[derive(Clone)]
pub struct Turn {
    pub(crate) inner: Arc<TurnInner>,
}

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.inner.tools.iter().map(|t| (&*t.name, t.registration)))
            .finish()
    }
}

impl Turn {
    pub(crate) fn materialize(
        location: Arc<LocationInner>,
        process: &ToolRegistry,
        local: &ToolRegistry,
        filter: impl TurnFilter,
        dialect: Option<Provider>,
    ) -> Self {
        let process = process.placement().load();
        let local = local.placement().load();
        let mut effective: HashMap<&Arc<str>, _> = process.effective_all().collect();
        effective.extend(local.effective_all());
        let mut tools: Vec<AdvertisedTool> = effective
            .into_iter()
            .filter(|(name, entry)| filter.advertise(name, entry.tool.definition()))
            .map(|(name, entry)| AdvertisedTool {
                name: name.clone(),
                definition: entry.tool.definition().clone(),
                registration: entry.identity,
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut exported = Vec::new();
        let mut incompatible = Vec::new();
        if let Some(dialect) = dialect {
            tools.retain(
                |tool| match export_tool(dialect, &tool.name, &tool.definition) {
                    Ok(definition) => {
                        exported.push(definition);
                        true
                    }
                    Err(error) => {
                        incompatible.push(error);
                        false
                    }
                },
            );
        }
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, tool)| (tool.name.clone(), i))
            .collect::<HashMap<_, _>>();
        let recovery = location.config.recovery(|name| index.contains_key(name));
        Turn {
            inner: Arc::new(TurnInner {
                location,
                tools,
                index,
                recovery,
                dialect,
                exported,
                incompatible,
                layers: Arc::new([]),
            }),
        }
    }

    /// This turn with `layers` of host policy around every call settled through it, sub-calls
    /// (a `batch`'s) included. The advertised tools and their identities are the same; the
    /// layers replace any the turn had.
    pub fn with_layers(&self, layers: Layers) -> Turn {
        Turn {
            inner: Arc::new(TurnInner {
                layers,
                ..(*self.inner).clone()
            }),
        }
    }

    /// The provider dialect this turn was materialized for, or `None` for canonical JSON Schema.
    pub fn dialect(&self) -> Option<Provider> {
        self.inner.dialect
    }

    /// The advertised tools as the request to the provider lists them: in the turn's dialect, or
    /// as MCP `tools/list` entries for a turn without one. A tool MCP cannot express is left out
    /// of that listing (and reported by [`tackle_core::export_tools`]).
    pub fn export(&self) -> Vec<Value> {
        if self.inner.dialect.is_some() {
            return self.inner.exported.clone();
        }
        tackle_core::export_tools(
            Provider::Mcp,
            self.tools()
                .iter()
                .map(|tool| (tool.name(), &**tool.definition())),
        )
        .0
    }

    /// The tools the filter kept but the turn's dialect cannot express, so the turn left them
    /// out, each with the schema path and the reason. A host reports them when it prepares the
    /// request; a call to one settles as `unknown`.
    pub fn incompatible(&self) -> &[SchemaCompatError] {
        &self.inner.incompatible
    }

    /// The advertised tools, sorted by name.
    pub fn tools(&self) -> &[AdvertisedTool] {
        self.inner.tools()
    }

    /// The advertised tool called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&AdvertisedTool> {
        self.inner.get(name)
    }
}
