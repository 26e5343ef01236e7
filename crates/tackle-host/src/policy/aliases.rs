//! Argument aliases for models trained on other tool sets: `file_path` for `filePath`,
//! `old_string` for `oldString`, `session_id` for `task`'s `task_id`.
//!
//! An alias applies only when the tool's schema has the canonical name and the call lacks it; a
//! call that gives both is refused, since either could be the one meant.

use futures_util::future::BoxFuture;
use serde_json::Value;
use tackle_core::names::ToolName;
use tackle_core::{Context, ToolFailure};
use tackle_registry::{CallDraft, Layer, Turn};

/// Aliases that are not a snake_case spelling of the canonical name: (tool, alias, canonical).
const NAMED_ALIASES: &[(ToolName, &str, &str)] = &[(ToolName::TASK, "session_id", "task_id")];

/// Renames aliased arguments to the tool's own names.
pub(crate) struct ArgumentAliases;

impl Layer for ArgumentAliases {
    fn before<'a>(
        &'a self,
        turn: &'a Turn,
        _cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            let Some(tool) = turn.get(call.name()) else {
                return Ok(());
            };
            let properties: Vec<String> = match tool.definition().input_schema().get("properties") {
                Some(Value::Object(properties)) => properties.keys().cloned().collect(),
                _ => return Ok(()),
            };
            let name = call.name().to_owned();
            let Some(arguments) = call.arguments_mut() else {
                return Ok(());
            };
            let mut renamed = Vec::new();
            let keys: Vec<String> = arguments.keys().cloned().collect();
            for key in keys {
                if properties.contains(&key) {
                    continue;
                }
                let Some(canonical) = canonical(&name, &key, &properties) else {
                    continue;
                };
                if arguments.contains_key(&canonical) {
                    return Err(ToolFailure::new(format!(
                        "Invalid arguments for tool `{name}`: `{key}` and `{canonical}` are the \
                         same argument, given twice. Nothing was run. Give only `{canonical}`."
                    )));
                }
                if let Some(value) = arguments.remove(&key) {
                    arguments.insert(canonical.clone(), value);
                    renamed.push((key, canonical));
                }
            }
            for (alias, canonical) in renamed {
                call.note(format!("renamed the argument `{alias}` to `{canonical}`"));
            }
            Ok(())
        })
    }
}

/// The tool's own name for argument `key`, if `key` is an alias of one of its `properties`.
fn canonical(tool: &str, key: &str, properties: &[String]) -> Option<String> {
    if let Some((_, _, canonical)) = NAMED_ALIASES.iter().find(|(t, alias, canonical)| {
        *t == tool && *alias == key && properties.iter().any(|p| p == canonical)
    }) {
        return Some((*canonical).to_owned());
    }
    let camel = camel_case(key)?;
    properties.contains(&camel).then_some(camel)
}

/// `snake_case` as `camelCase`; `None` for a key with no underscore to remove.
fn camel_case(key: &str) -> Option<String> {
    if !key.contains('_') {
        return None;
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        match c {
            '_' if !out.is_empty() => upper = true,
            '_' => {}
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_maps_to_the_schema_s_camel_case_only() {
        let props = [
            "filePath".to_owned(),
            "oldString".to_owned(),
            "replaceAll".to_owned(),
        ];
        assert_eq!(
            canonical("edit", "file_path", &props).as_deref(),
            Some("filePath")
        );
        assert_eq!(
            canonical("edit", "replace_all", &props).as_deref(),
            Some("replaceAll")
        );
        assert_eq!(canonical("edit", "new_thing", &props), None);
        assert_eq!(canonical("edit", "filepath", &props), None);
        let task = ["task_id".to_owned(), "prompt".to_owned()];
        assert_eq!(
            canonical("task", "session_id", &task).as_deref(),
            Some("task_id")
        );
        assert_eq!(canonical("edit", "session_id", &task), None);
    }
}
