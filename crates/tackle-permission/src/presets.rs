//! Agent presets: the built-in agents and their default rulesets, custom agents from
//! configuration, and the rules a subagent session derives from its parent.
//!
//! Every agent's rules are the shared defaults, then the agent's own rules, then the user's
//! configuration for it: later rules outrank earlier ones, so the user always has the last word
//! over a preset.

use serde::{Deserialize, Serialize};

use crate::names::Permission as P;
use crate::paths::{TargetKind, external_directory_pattern};
use crate::rule::{Action, Rule, RuleSource, Ruleset};

/// The names of the built-in agents, primary ones first.
pub const PRESET_NAMES: [&str; 7] = [
    "build",
    "plan",
    "general",
    "explore",
    "compaction",
    "title",
    "summary",
];

/// Host-supplied inputs the presets depend on. Directories should be absolute, and canonical when
/// the host can canonicalize them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PresetContext {
    /// Where managed tool output is stored; agents may read it without asking.
    pub managed_output_dir: Option<String>,
    /// The temporary directory; agents may use it without asking.
    pub temp_dir: Option<String>,
    /// Further directories outside the Location that need no `external_directory` approval
    /// (skill directories, configured reference directories).
    pub extra_allowed_dirs: Vec<String>,
    /// Where the plan agent keeps plans outside the Location; it may write `*.md` there.
    pub plans_dir: Option<String>,
}

impl PresetContext {
    /// The whitelisted directories, in order: managed output, temp, then the extras.
    fn allowed_dirs(&self) -> impl Iterator<Item = &str> {
        self.managed_output_dir
            .iter()
            .chain(self.temp_dir.iter())
            .chain(self.extra_allowed_dirs.iter())
            .map(String::as_str)
            .filter(|dir| !dir.is_empty())
    }
}

/// How an agent may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentMode {
    /// Drives a session the user talks to.
    Primary,
    /// Runs in a child session started by the `task` tool.
    Subagent,
    /// Internal (compaction, titles, summaries): never offered to the user or the model.
    Hidden,
}

/// An agent: a name, a description for the task tool, a mode, and its ruleset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    /// The agent's name (`build`, `plan`, …).
    pub name: String,
    /// What it is for, as shown to the model when offering subagents.
    pub description: String,
    /// How it may be used.
    pub mode: AgentMode,
    /// Its rules, lowest precedence first.
    pub rules: Ruleset,
}

/// The rules every agent starts from (source: [`RuleSource::Default`]).
///
/// Everything is allowed, except: repeated identical calls ask (`doom_loop`); paths outside the
/// Location ask (`external_directory`), apart from the context's whitelisted directories, and
/// changing a file in the managed-output directory asks (`edit`: it is there to be read); the
/// `question`, `plan_enter` and `plan_exit` tools are denied; fetching from loopback, private and
/// link-local addresses asks (`webfetch_private`), as does trusting a project's custom tool
/// manifest (`custom_tool_trust`) or a project's command hook (`hook_trust`), or running a
/// command without the sandbox (`bash_unsandboxed`); and reading `.env` files asks, while
/// `.env.example` stays readable.
pub fn default_rules(ctx: &PresetContext) -> Ruleset {
    let source = RuleSource::Default;
    let mut rules = Ruleset::new();
    rules.push(Rule::new("*", "*", Action::Allow, source.clone()));
    rules.push(Rule::new(
        P::DOOM_LOOP.as_str(),
        "*",
        Action::Ask,
        source.clone(),
    ));
    // Fetching from private addresses, running a project's own tool manifests and running a
    // command outside the sandbox need a person.
    for permission in [
        P::WEBFETCH_PRIVATE,
        P::CUSTOM_TOOL_TRUST,
        P::HOOK_TRUST,
        P::BASH_UNSANDBOXED,
    ] {
        rules.push(Rule::new(
            permission.as_str(),
            "*",
            Action::Ask,
            source.clone(),
        ));
    }
    rules.extend(external_directory_rules(ctx, &source));
    for permission in [P::QUESTION, P::PLAN_ENTER, P::PLAN_EXIT] {
        rules.push(Rule::new(
            permission.as_str(),
            "*",
            Action::Deny,
            source.clone(),
        ));
    }
    rules.push(Rule::new(
        P::READ.as_str(),
        "*",
        Action::Allow,
        source.clone(),
    ));
    rules.extend(env_file_rules(&source));
    // Managed outputs are for reading: changing one asks.
    if let Some(dir) = &ctx.managed_output_dir {
        let pattern = external_directory_pattern(dir, TargetKind::Directory);
        rules.push(Rule::new(
            P::EDIT.as_str(),
            &pattern,
            Action::Ask,
            source.clone(),
        ));
    }
    rules
}

/// `external_directory`: ask, except inside the whitelisted directories.
fn external_directory_rules(ctx: &PresetContext, source: &RuleSource) -> Vec<Rule> {
    let mut rules = vec![Rule::new(
        P::EXTERNAL_DIRECTORY.as_str(),
        "*",
        Action::Ask,
        source.clone(),
    )];
    rules.extend(ctx.allowed_dirs().map(|dir| {
        Rule::new(
            P::EXTERNAL_DIRECTORY.as_str(),
            &external_directory_pattern(dir, TargetKind::Directory),
            Action::Allow,
            source.clone(),
        )
    }));
    rules
}

/// Reading `.env` files asks; templates named `.env.example` do not. `*` crosses `/`, so these
/// cover `src/.env` and absolute paths as well.
fn env_file_rules(source: &RuleSource) -> [Rule; 3] {
    [
        Rule::new(P::READ.as_str(), "*.env", Action::Ask, source.clone()),
        Rule::new(P::READ.as_str(), "*.env.*", Action::Ask, source.clone()),
        Rule::new(
            P::READ.as_str(),
            "*.env.example",
            Action::Allow,
            source.clone(),
        ),
    ]
}

/// The built-in agent `name`, or `None` when there is no such preset.
pub fn preset(name: &str, ctx: &PresetContext) -> Option<Agent> {
    let source = RuleSource::Agent {
        name: name.to_owned(),
    };
    let rule = |permission: &str, pattern: &str, action| {
        Rule::new(permission, pattern, action, source.clone())
    };
    let (description, mode, own): (&str, AgentMode, Vec<Rule>) = match name {
        "build" => (
            "The default agent: reads, edits and runs commands as the project allows.",
            AgentMode::Primary,
            vec![
                rule(P::QUESTION.as_str(), "*", Action::Allow),
                rule(P::PLAN_ENTER.as_str(), "*", Action::Allow),
            ],
        ),
        "plan" => (
            "Plans without changing the project: edits are denied except plan files.",
            AgentMode::Primary,
            vec![
                rule(P::QUESTION.as_str(), "*", Action::Allow),
                rule(P::PLAN_EXIT.as_str(), "*", Action::Allow),
                rule(P::TASK.as_str(), "general", Action::Deny),
                rule(P::EDIT.as_str(), "*", Action::Deny),
                rule(P::EDIT.as_str(), ".opencode/plans/*.md", Action::Allow),
                // Its commands run read-only; no one lifts that from inside a plan.
                rule(P::BASH_UNSANDBOXED.as_str(), "*", Action::Deny),
            ]
            .into_iter()
            .chain(
                ctx.plans_dir
                    .iter()
                    .filter(|d| !d.is_empty())
                    .flat_map(|dir| {
                        let dir = dir.trim_end_matches('/');
                        [
                            rule(
                                P::EXTERNAL_DIRECTORY.as_str(),
                                &format!("{dir}/*"),
                                Action::Allow,
                            ),
                            rule(P::EDIT.as_str(), &format!("{dir}/*.md"), Action::Allow),
                        ]
                    }),
            )
            .collect(),
        ),
        "general" => (
            "A general-purpose subagent for multi-step research and changes.",
            AgentMode::Subagent,
            vec![rule(P::TODOWRITE.as_str(), "*", Action::Deny)],
        ),
        "explore" => {
            let mut own = vec![rule("*", "*", Action::Deny)];
            for permission in [
                P::GREP,
                P::GLOB,
                P::LIST,
                P::BASH,
                P::WEBFETCH,
                P::WEBSEARCH,
                P::CODESEARCH,
                P::READ,
            ] {
                own.push(rule(permission.as_str(), "*", Action::Allow));
            }
            // The blanket deny above would drop these defaults; restate them. `doom_loop` stays
            // denied: a read-only explorer stuck repeating a call is refused rather than asking.
            own.extend(env_file_rules(&source));
            own.extend(external_directory_rules(ctx, &source));
            (
                "A read-only subagent for finding files and answering questions about code.",
                AgentMode::Subagent,
                own,
            )
        }
        "compaction" => (
            "Compacts a long conversation.",
            AgentMode::Hidden,
            vec![rule("*", "*", Action::Deny)],
        ),
        "title" => (
            "Titles a session.",
            AgentMode::Hidden,
            vec![rule("*", "*", Action::Deny)],
        ),
        "summary" => (
            "Summarizes a session.",
            AgentMode::Hidden,
            vec![rule("*", "*", Action::Deny)],
        ),
        _ => return None,
    };
    let mut rules = default_rules(ctx);
    rules.extend(own);
    Some(Agent {
        name: name.to_owned(),
        description: description.to_owned(),
        mode,
        rules,
    })
}

/// Every built-in agent, in [`PRESET_NAMES`] order.
pub fn presets(ctx: &PresetContext) -> Vec<Agent> {
    PRESET_NAMES
        .iter()
        .filter_map(|name| preset(name, ctx))
        .collect()
}

/// `base` with the user's rules for it appended, so they outrank the preset.
pub fn agent_with_user_rules(base: Agent, user: &Ruleset) -> Agent {
    Agent {
        rules: base.rules.merged(user),
        ..base
    }
}

/// An agent defined only in configuration: the defaults, then the user's rules. Its description
/// is empty; set it from the configuration.
pub fn custom_agent(name: &str, mode: AgentMode, ctx: &PresetContext, user: &Ruleset) -> Agent {
    Agent {
        name: name.to_owned(),
        description: String::new(),
        mode,
        rules: default_rules(ctx).merged(user),
    }
}

/// The ruleset of a child session that runs `child` on behalf of a parent session whose
/// effective rules are `parent_session_rules`.
///
/// In order, lowest precedence first:
/// 1. the child agent's own rules;
/// 2. the parent's `external_directory` rules and deny rules, in the parent's order, with source
///    [`RuleSource::Inherited`];
/// 3. `todowrite: deny` and `task: deny` (also inherited), each unless the child has a rule whose
///    permission is exactly that name.
///
/// Putting the parent's rules last is the point: a subagent must never gain what its parent was
/// refused, so a parent deny beats any child allow, however specific, and the parent's
/// directory scope replaces the child's. The cost is that a parent deny which the parent itself
/// narrowed with a later allow (`bash: {"*": deny, "git *": allow}`) reaches the child without
/// the carve-out, so the child may be stricter than the parent. A flat ruleset cannot express
/// "denied by the parent" exactly, and erring strict is the safe side. One exact refinement is
/// applied: a parent deny that a later non-deny parent rule fully covers never decides anything
/// for the parent, so it is not inherited (the defaults' `question: deny` under build's
/// `question: allow`, for instance).
pub fn derive_subagent_rules(parent_session_rules: &Ruleset, child: &Agent) -> Ruleset {
    let mut rules = child.rules.clone();
    let parent = parent_session_rules.rules();
    for (index, rule) in parent.iter().enumerate() {
        let inherited = if rule.permission.as_str() == "external_directory" {
            true
        } else {
            rule.action == Action::Deny && !shadowed(rule, &parent[index + 1..])
        };
        if inherited {
            rules.push(Rule {
                source: RuleSource::Inherited,
                ..rule.clone()
            });
        }
    }
    for permission in ["todowrite", "task"] {
        let declared = child
            .rules
            .rules()
            .iter()
            .any(|rule| rule.permission.as_str() == permission);
        if !declared {
            rules.push(Rule::new(
                permission,
                "*",
                Action::Deny,
                RuleSource::Inherited,
            ));
        }
    }
    rules
}

/// True when a later non-deny rule covers everything `deny` covers, so `deny` never decides.
fn shadowed(deny: &Rule, later: &[Rule]) -> bool {
    later.iter().any(|rule| {
        rule.action != Action::Deny
            && covers(rule.permission.as_str(), deny.permission.as_str())
            && covers(rule.pattern.as_str(), deny.pattern.as_str())
    })
}

/// A conservative "pattern `outer` matches every input `inner` matches": `outer` is `*`, the two
/// are spelled the same, or `inner` has no wildcard and `outer` matches it.
fn covers(outer: &str, inner: &str) -> bool {
    outer == "*"
        || outer == inner
        || (!inner.contains(['*', '?']) && crate::wildcard::Pattern::new(outer).matches(inner))
}

#[cfg(test)]
mod tests;
