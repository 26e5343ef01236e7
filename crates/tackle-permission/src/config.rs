//! The user's `permission` configuration, in OpenCode's format, read into an ordered [`Ruleset`].
//!
//! Three shapes are accepted:
//!
//! - `"allow"` (or `"ask"`, `"deny"`): shorthand for `{"*": "allow"}`;
//! - `{"bash": "ask"}`: a permission name or glob mapped to an action, which covers every
//!   resource (pattern `*`);
//! - `{"bash": {"git *": "allow", "rm *": "deny"}}`: a permission mapped to resource patterns.
//!
//! Key order is precedence: later keys outrank earlier ones, exactly as written, never re-sorted
//! by specificity. `serde_json::Value` sorts object keys, so the text is read into a
//! [`ConfigValue`], whose objects keep document order. A host reading a larger configuration
//! file should deserialize the `permission` field straight into a [`ConfigValue`] (it implements
//! `Deserialize`), not through `serde_json::Value`.
//!
//! A resource pattern that starts with `~` or `$HOME` (exactly, or followed by a separator) is
//! expanded with [`ConfigContext::home`]; the crate never reads the environment itself.
//!
//! Every produced rule carries [`RuleSource::Config`] with its key path, for example
//! `permission.bash."git *"`, and every error names the path and what was expected there.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use thiserror::Error;

use crate::rule::{Action, Rule, RuleSource, Ruleset};
use crate::wildcard::Pattern;

#[cfg(test)]
mod tests;

/// What a configuration value must be when it holds an action.
const EXPECTED_ACTION: &str = r#""allow", "ask" or "deny""#;
/// What the whole `permission` value must be.
const EXPECTED_ROOT: &str = r#""allow", "ask", "deny" or an object of permissions"#;
/// What the value of a permission key must be.
const EXPECTED_PERMISSION: &str = r#""allow", "ask", "deny" or an object of patterns"#;

/// A JSON value whose objects keep their keys in document order (and keep duplicates, which
/// [`ruleset_from_config`] rejects).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<ConfigValue>),
    /// An object, as `(key, value)` pairs in document order.
    Object(Vec<(String, ConfigValue)>),
}

impl ConfigValue {
    /// Parses JSON text, keeping object keys in document order.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// How an error message shows the value: short literals as written, containers by kind.
    fn describe(&self) -> String {
        match self {
            ConfigValue::Null => "null".to_owned(),
            ConfigValue::Bool(value) => value.to_string(),
            ConfigValue::Number(value) => value.to_string(),
            ConfigValue::String(value) => quote(value),
            ConfigValue::Array(_) => "an array".to_owned(),
            ConfigValue::Object(_) => "an object".to_owned(),
        }
    }
}

impl<'de> Deserialize<'de> for ConfigValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

/// Builds a [`ConfigValue`] from whatever the deserializer reports, maps entry by entry.
struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = ConfigValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<ConfigValue, E> {
        serde_json::Number::from_f64(value)
            .map(ConfigValue::Number)
            .ok_or_else(|| E::custom("a number must be finite"))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<ConfigValue, E> {
        Ok(ConfigValue::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<ConfigValue, E> {
        Ok(ConfigValue::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<ConfigValue, D::Error> {
        ConfigValue::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ConfigValue, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(ConfigValue::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ConfigValue, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(entry) = map.next_entry::<String, ConfigValue>()? {
            entries.push(entry);
        }
        Ok(ConfigValue::Object(entries))
    }
}

/// What the host knows that the configuration may refer to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigContext {
    /// The home directory for `~` and `$HOME`. Without one, a pattern that needs it is an error.
    pub home: Option<String>,
    /// The key path of the configuration value, used in rule sources and error messages:
    /// `permission` by default, or for example `agent.plan.permission`.
    pub root: String,
}

impl Default for ConfigContext {
    fn default() -> Self {
        Self {
            home: None,
            root: "permission".to_owned(),
        }
    }
}

impl ConfigContext {
    /// A context with this home directory, at the default root `permission`.
    pub fn new(home: Option<&str>) -> Self {
        Self {
            home: home.map(str::to_owned),
            ..Self::default()
        }
    }

    /// The same context for a value found at `root`.
    pub fn with_root(mut self, root: impl Into<String>) -> Self {
        self.root = root.into();
        self
    }
}

/// A problem in a `permission` configuration, naming where it is.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// The text is not JSON.
    #[error("{path}: not valid JSON: {message}")]
    Syntax {
        /// The configuration root.
        path: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A value has the wrong type or is not an action.
    #[error("{path}: expected {expected}, got {got}")]
    Invalid {
        /// The key path of the value.
        path: String,
        /// What may appear there.
        expected: &'static str,
        /// The value found, shown briefly.
        got: String,
    },
    /// The same key appears twice in one object, which would make precedence ambiguous.
    #[error("{path}: the key appears more than once (write each key once, in precedence order)")]
    DuplicateKey {
        /// The key path of the repeated key.
        path: String,
    },
    /// A pattern starts with `~` or `$HOME`, and no home directory was given.
    #[error("{path}: `~` and `$HOME` need a home directory, and none is known")]
    NoHome {
        /// The key path of the pattern.
        path: String,
    },
}

impl ConfigError {
    /// The key path the error is about.
    pub fn path(&self) -> &str {
        match self {
            ConfigError::Syntax { path, .. }
            | ConfigError::Invalid { path, .. }
            | ConfigError::DuplicateKey { path }
            | ConfigError::NoHome { path } => path,
        }
    }
}

/// Parses the JSON text of a `permission` value into a ruleset, keeping key order.
pub fn parse_permission_config(
    json: &str,
    context: &ConfigContext,
) -> Result<Ruleset, ConfigError> {
    let value = ConfigValue::from_json(json).map_err(|error| ConfigError::Syntax {
        path: context.root.clone(),
        message: error.to_string(),
    })?;
    ruleset_from_config(&value, context)
}

/// Reads an already-parsed `permission` value into a ruleset, keeping key order.
pub fn ruleset_from_config(
    value: &ConfigValue,
    context: &ConfigContext,
) -> Result<Ruleset, ConfigError> {
    let root = context.root.as_str();
    match value {
        ConfigValue::String(action) => Ok(Ruleset::from_iter([Rule::new(
            "*",
            "*",
            parse_action(action, root)?,
            RuleSource::Config {
                key: root.to_owned(),
            },
        )])),
        ConfigValue::Object(entries) => {
            reject_duplicates(entries, root)?;
            let mut rules = Ruleset::new();
            for (permission, value) in entries {
                let path = key_path(root, permission);
                match value {
                    ConfigValue::String(action) => rules.push(Rule::new(
                        permission,
                        "*",
                        parse_action(action, &path)?,
                        RuleSource::Config { key: path },
                    )),
                    ConfigValue::Object(patterns) => {
                        reject_duplicates(patterns, &path)?;
                        for (pattern, value) in patterns {
                            rules.push(pattern_rule(permission, pattern, value, &path, context)?);
                        }
                    }
                    other => return Err(invalid(path, EXPECTED_PERMISSION, other)),
                }
            }
            Ok(rules)
        }
        other => Err(invalid(root.to_owned(), EXPECTED_ROOT, other)),
    }
}

/// One `{pattern: action}` entry under `permission`.
fn pattern_rule(
    permission: &str,
    pattern: &str,
    value: &ConfigValue,
    parent: &str,
    context: &ConfigContext,
) -> Result<Rule, ConfigError> {
    let path = key_path(parent, pattern);
    let action = match value {
        ConfigValue::String(action) => parse_action(action, &path)?,
        other => return Err(invalid(path, EXPECTED_ACTION, other)),
    };
    if Pattern::needs_home(pattern) && context.home.is_none() {
        return Err(ConfigError::NoHome { path });
    }
    Ok(Rule {
        permission: Pattern::new(permission),
        pattern: Pattern::with_home(pattern, context.home.as_deref()),
        action,
        source: RuleSource::Config { key: path },
    })
}

fn parse_action(text: &str, path: &str) -> Result<Action, ConfigError> {
    match text {
        "allow" => Ok(Action::Allow),
        "ask" => Ok(Action::Ask),
        "deny" => Ok(Action::Deny),
        _ => Err(ConfigError::Invalid {
            path: path.to_owned(),
            expected: EXPECTED_ACTION,
            got: quote(text),
        }),
    }
}

fn invalid(path: String, expected: &'static str, got: &ConfigValue) -> ConfigError {
    ConfigError::Invalid {
        path,
        expected,
        got: got.describe(),
    }
}

fn reject_duplicates(entries: &[(String, ConfigValue)], parent: &str) -> Result<(), ConfigError> {
    let mut seen = HashSet::with_capacity(entries.len());
    match entries.iter().find(|(key, _)| !seen.insert(key.as_str())) {
        Some((key, _)) => Err(ConfigError::DuplicateKey {
            path: key_path(parent, key),
        }),
        None => Ok(()),
    }
}

/// `parent.key`, with the key quoted unless it is a plain word (`permission.bash`,
/// `permission.bash."git *"`).
fn key_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}.{}", quote(key))
    }
}

/// `text` as a JSON string literal.
fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}
