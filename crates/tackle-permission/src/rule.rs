//! Rules and rulesets: ordered `{permission, pattern, action}` triples, last match wins.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

use crate::wildcard::{Pattern, Subject};

#[cfg(test)]
mod tests;

/// What a rule decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run without asking.
    Allow,
    /// Ask the user through the host's approver.
    Ask,
    /// Refuse.
    Deny,
}

impl Action {
    /// The config spelling: `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a rule came from, for `explain` and for model-facing messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RuleSource {
    /// Built into tackle's defaults.
    Default,
    /// An agent preset, by agent name.
    Agent {
        /// The agent.
        name: String,
    },
    /// The user's configuration, with the config key path (for example `permission.bash`).
    Config {
        /// The key path inside the configuration.
        key: String,
    },
    /// A project's own configuration file (it came with the repository), with the key path.
    /// Such a rule decides only where the rules before it do not deny, and it never allows a
    /// trust permission (see [`Ruleset::explain`]).
    Project {
        /// The key path inside the project's file.
        key: String,
    },
    /// An approval the user saved with "always".
    Saved,
    /// Derived for a subagent from its parent session.
    Inherited,
    /// The answer when no rule matches.
    Fallback,
}

impl RuleSource {
    /// True for a rule from a project's own configuration.
    pub fn is_project(&self) -> bool {
        matches!(self, RuleSource::Project { .. })
    }
}

/// True for a permission that trusts code a project ships (`custom_tool_trust`, `hook_trust`,
/// and any later `*_trust`): no project rule can allow one.
pub fn is_trust(permission: &str) -> bool {
    permission.ends_with("_trust")
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleSource::Default => f.write_str("tackle's defaults"),
            RuleSource::Agent { name } => write!(f, "the `{name}` agent preset"),
            RuleSource::Config { key } => write!(f, "your configuration (`{key}`)"),
            RuleSource::Project { key } => write!(f, "the project's configuration (`{key}`)"),
            RuleSource::Saved => f.write_str("an approval saved with \"always\""),
            RuleSource::Inherited => f.write_str("the parent session"),
            RuleSource::Fallback => f.write_str("no matching rule (the default is ask)"),
        }
    }
}

/// One rule: when a request's permission matches `permission` and its resource matches
/// `pattern`, decide `action`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// Which permissions it covers (`bash`, `edit`, `mcp_*`, `*`).
    pub permission: Pattern,
    /// Which resources it covers (`git status *`, `src/**`, `*`).
    pub pattern: Pattern,
    /// The decision.
    pub action: Action,
    /// Where it came from.
    pub source: RuleSource,
}

impl Rule {
    /// A rule from its three parts and its source.
    pub fn new(permission: &str, pattern: &str, action: Action, source: RuleSource) -> Self {
        Self {
            permission: Pattern::new(permission),
            pattern: Pattern::new(pattern),
            action,
            source,
        }
    }

    /// True when the rule covers `permission` on `resource`.
    pub fn matches(&self, permission: &str, resource: &str) -> bool {
        self.matches_subjects(&Subject::new(permission), &Subject::new(resource))
    }

    #[inline]
    fn matches_subjects(&self, permission: &Subject<'_>, resource: &Subject<'_>) -> bool {
        self.permission.matches_subject(permission) && self.pattern.matches_subject(resource)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} `{}` on `{}` (from {})",
            self.action,
            self.permission.as_str(),
            self.pattern.as_str(),
            self.source
        )
    }
}

/// The deciding rule of an evaluation, or the fallback when none matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision<'a> {
    /// The decision.
    pub action: Action,
    /// The last matching rule, or `None` when the fallback (ask) decided.
    pub rule: Option<&'a Rule>,
}

impl Decision<'_> {
    /// Where the decision came from.
    pub fn source(&self) -> RuleSource {
        self.rule
            .map(|rule| rule.source.clone())
            .unwrap_or(RuleSource::Fallback)
    }
}

/// Reads as the deciding rule, for example ``deny `bash` on `rm *` (from your configuration
/// (`permission.bash."rm *"`))``, or as `ask: no matching rule (the default is ask)`.
impl fmt::Display for Decision<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rule {
            Some(rule) => fmt::Display::fmt(rule, f),
            None => write!(f, "{}: {}", self.action, RuleSource::Fallback),
        }
    }
}

/// An ordered list of rules. Order is precedence: the last matching rule wins.
///
/// Evaluation scans from the last rule backwards and stops at the first match. Rules are indexed
/// by literal permission name, so only the rules that can cover the asked permission are visited.
#[derive(Clone, Default)]
pub struct Ruleset {
    rules: Vec<Rule>,
    index: PermissionIndex,
}

/// Positions of rules, ascending, by the permission they cover. Derived from `rules`.
#[derive(Clone, Default)]
struct PermissionIndex {
    /// Rules whose permission pattern is a plain name, by that name.
    named: HashMap<Box<str>, Vec<usize>, BuildHasherDefault<Fnv>>,
    /// Rules whose permission pattern has a wildcard (`*`, `mcp_*`).
    globbed: Vec<usize>,
}

impl PermissionIndex {
    fn add(&mut self, position: usize, rule: &Rule) {
        match rule.permission.literal() {
            Some(name) => self.named.entry(name.into()).or_default().push(position),
            None => self.globbed.push(position),
        }
    }

    /// The last rule covering `permission` (which holds no backslash) on `resource`: a
    /// backwards merge of the rules named `permission` and the globbed ones.
    fn find_last<'r>(
        &self,
        rules: &'r [Rule],
        permission: &Subject<'_>,
        resource: &Subject<'_>,
    ) -> Option<&'r Rule> {
        let named = self
            .named
            .get(permission.text())
            .map_or(&[][..], Vec::as_slice);
        let (mut named, mut globbed) = (
            named.iter().rev().peekable(),
            self.globbed.iter().rev().peekable(),
        );
        loop {
            let take_named = match (named.peek(), globbed.peek()) {
                (Some(n), Some(g)) => n > g,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => return None,
            };
            if take_named {
                let rule = &rules[*named.next()?];
                // The name already matched.
                if rule.pattern.matches_subject(resource) {
                    return Some(rule);
                }
            } else {
                let rule = &rules[*globbed.next()?];
                if rule.matches_subjects(permission, resource) {
                    return Some(rule);
                }
            }
        }
    }
}

/// FNV-1a: permission names are short, and the keys come from the user's own configuration.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl PartialEq for Ruleset {
    fn eq(&self, other: &Self) -> bool {
        // The index is derived from the rules.
        self.rules == other.rules
    }
}

impl Eq for Ruleset {}

impl fmt::Debug for Ruleset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ruleset")
            .field("rules", &self.rules)
            .finish()
    }
}

impl Ruleset {
    /// An empty ruleset: everything asks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a rule; it outranks every rule before it.
    pub fn push(&mut self, rule: Rule) {
        self.index.add(self.rules.len(), &rule);
        self.rules.push(rule);
    }

    /// The ruleset with `other`'s rules appended after its own (they outrank these).
    pub fn merged(mut self, other: &Ruleset) -> Self {
        self.extend(other.rules.iter().cloned());
        self
    }

    /// The rules, lowest precedence first.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// True when there are no rules (everything asks).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules that can cover `permission`, in order: for `permission` it decides exactly
    /// as the whole ruleset does, with fewer rules to try. Deciding one permission on many
    /// resources starts with this.
    pub fn covering(&self, permission: &str) -> Ruleset {
        let permission = Subject::new(permission);
        self.rules
            .iter()
            .filter(|rule| rule.permission.matches_subject(&permission))
            .cloned()
            .collect()
    }

    /// Decides `permission` on `resource`: the last matching rule's action, or ask.
    pub fn evaluate(&self, permission: &str, resource: &str) -> Action {
        self.explain(permission, resource).action
    }

    /// Like [`Ruleset::evaluate`], and says which rule decided.
    ///
    /// A rule from a project's own configuration ([`RuleSource::Project`]) can narrow but never
    /// overrule a deny: when it is the last match, the last match among the other rules still
    /// decides if that one denies. Nor can it allow a trust permission (`*_trust`): there the
    /// other rules decide. A repository must not grant itself what the user refused.
    pub fn explain(&self, permission: &str, resource: &str) -> Decision<'_> {
        // Scan each input for `\` once, not once per rule.
        let (permission, resource) = (Subject::new(permission), Subject::new(resource));
        let found = if permission.has_backslash() {
            // The index is keyed by names with `/`; such a permission is rare enough to scan.
            self.rules
                .iter()
                .rev()
                .find(|rule| rule.matches_subjects(&permission, &resource))
        } else {
            self.index.find_last(&self.rules, &permission, &resource)
        };
        let found = match found {
            Some(rule) if rule.source.is_project() => {
                let base = self
                    .rules
                    .iter()
                    .rev()
                    .filter(|other| !other.source.is_project())
                    .find(|other| other.matches_subjects(&permission, &resource));
                let base_action = base.map_or(Action::Ask, |other| other.action);
                let grants_trust = rule.action == Action::Allow && is_trust(permission.text());
                if base_action == Action::Deny || grants_trust {
                    base
                } else {
                    Some(rule)
                }
            }
            other => other,
        };
        match found {
            Some(rule) => Decision {
                action: rule.action,
                rule: Some(rule),
            },
            None => Decision {
                action: Action::Ask,
                rule: None,
            },
        }
    }
}

impl FromIterator<Rule> for Ruleset {
    fn from_iter<T: IntoIterator<Item = Rule>>(iter: T) -> Self {
        let mut rules = Self::new();
        rules.extend(iter);
        rules
    }
}

impl<'a> IntoIterator for &'a Ruleset {
    type Item = &'a Rule;
    type IntoIter = std::slice::Iter<'a, Rule>;

    fn into_iter(self) -> Self::IntoIter {
        self.rules.iter()
    }
}

impl Extend<Rule> for Ruleset {
    fn extend<T: IntoIterator<Item = Rule>>(&mut self, iter: T) {
        for rule in iter {
            self.push(rule);
        }
    }
}
