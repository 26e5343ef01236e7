//! Catalog visibility: which tools a turn advertises at all.
//!
//! A tool is hidden from the model only when its permission is *wholly* denied: the last rule
//! whose permission pattern covers the tool's permission has resource pattern exactly `*` and
//! action deny. Anything narrower (a partial deny, an ask, a wildcard deny followed by a specific
//! allow) keeps the tool visible, and the per-call evaluation decides.
//!
//! The host turns [`visible_filter`] into a registry turn filter, for example
//! `move |name: &str, _: &ToolDefinition| visible(name)`; this crate knows no registry types.

use crate::names::{Permission, ToolName};
use crate::rule::{Action, Ruleset};

/// The permission a tool is gated by: the edit family maps to `edit`, every other tool (a
/// custom or MCP tool too) to its own name.
pub fn tool_permission(tool_name: &str) -> &str {
    if ToolName::is_edit_family(tool_name) {
        Permission::EDIT.as_str()
    } else {
        tool_name
    }
}

/// True when `tool_name` should not be advertised under `ruleset`.
///
/// The deciding rule is the last one whose *permission* pattern matches the tool's permission,
/// whatever its resource pattern; the tool is hidden when that rule denies the resource `*`.
pub fn is_hidden(ruleset: &Ruleset, tool_name: &str) -> bool {
    let permission = tool_permission(tool_name);
    ruleset
        .rules()
        .iter()
        .rev()
        .find(|rule| rule.permission.matches(permission))
        .is_some_and(|rule| rule.action == Action::Deny && rule.pattern.as_str() == "*")
}

/// A predicate over tool names that is true for the tools to advertise under `ruleset`.
///
/// It owns the ruleset, so it can live as long as a turn filter needs it.
pub fn visible_filter(ruleset: Ruleset) -> impl Fn(&str) -> bool + Send + Sync + Clone + 'static {
    move |tool_name: &str| !is_hidden(&ruleset, tool_name)
}

/// True when the `task` tool may offer subagent `agent_name`: the `task` permission for that
/// name is not denied. Hosts use it to filter the subagent list in the task tool's description.
pub fn subagent_offered(ruleset: &Ruleset, agent_name: &str) -> bool {
    ruleset.evaluate(Permission::TASK.as_str(), agent_name) != Action::Deny
}

#[cfg(test)]
mod tests;
