//! Permission policy for tackle: rules, evaluation, agent presets and the approval flow.
//!
//! Tools formulate their own permission requests (a permission name such as `bash` or `edit`,
//! and the resources involved: command patterns, paths). This crate decides them. It never
//! sees a tool, a registry or a UI: the registry injects nothing, and the host answers
//! questions through the [`Approver`] port.
//!
//! The key decision is OpenCode-compatible *ordered* policy: a [`Ruleset`] is a list, and the
//! last rule that matches both the permission and the resource decides. With no match the answer
//! is ask. Order carries precedence everywhere: defaults come first, then the agent preset, then
//! the user's configuration, then saved approvals, so a later, more specific rule overrides an
//! earlier, broader one, and a user who writes `"*": "deny"` last means it. Every decision can be
//! explained: [`Ruleset::explain`] returns the deciding rule with its [`RuleSource`], and every
//! model-facing refusal names that rule.
//!
//! The wildcard grammar is deliberately small: `*`, `?`, and an optional trailing ` *` for
//! command prefixes. Paths compare with `/` separators.
//!
//! This crate is pure: no filesystem, no clock, no network. Persistence of saved approvals is a
//! port that the host wires to storage.

#![deny(missing_docs)]

/// The catalog of tool and permission names (defined in core, re-exported where rules use it).
pub use tackle_core::names;

mod approval;
mod config;
mod doom;
mod paths;
mod presets;
mod rule;
mod visibility;
mod wildcard;

pub use approval::{
    Approver, Judgment, LoadError, MemorySavedApprovals, PermissionError, PermissionJudgment,
    PermissionRequest, PermissionService, Reply, ReplyError, RequestId, SavedApprovals,
    SavedApprovalsError, Standing, ToolCallRef, configured_denial,
};
pub use config::{
    ConfigContext, ConfigError, ConfigValue, parse_permission_config, ruleset_from_config,
};
pub use doom::{DEFAULT_DOOM_LOOP_THRESHOLD, DoomLoop, Streak, canonical_json, fingerprint};
pub use paths::{
    ResolvedPath, TargetKind, external_directory_pattern, is_absolute_path, is_within,
    normalize_path, permission_resource, resolve_in_location,
};
pub use presets::{
    Agent, AgentMode, PRESET_NAMES, PresetContext, agent_with_user_rules, custom_agent,
    default_rules, derive_subagent_rules, preset, presets,
};
pub use rule::{Action, Decision, Rule, RuleSource, Ruleset, is_trust};
pub use visibility::{is_hidden, subagent_offered, tool_permission, visible_filter};
pub use wildcard::Pattern;
