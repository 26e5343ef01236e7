//! The advertised schema: what schemars derives, reduced to standard JSON Schema keywords that
//! every client and provider accepts.
//!
//! - Local `$ref`s are inlined (a recursive schema keeps its `$defs`), and `$schema`, `$id`,
//!   `$comment` and `title` are dropped.
//! - `format` is kept only for the formats JSON Schema defines ([`STANDARD_FORMATS`]). schemars'
//!   integer formats (`uint`, `uint16`, `int64`, …) are dropped; an unsigned one keeps
//!   `minimum: 0`.
//! - An optional property is plainly optional: absent from `required`, with no `null` in its type,
//!   no `null` branch and no `default: null`. (Its type still decodes `null` as absent: the codec
//!   validates against the schema schemars derived.)
//! - An input schema for an object always has `properties`, `{}` when there are none.
//!
//! Output schemas are derived for serialization, so a property absent from `required` is one
//! serde may leave out, never one it writes as `null`: the same reduction stays true of every
//! output.

use serde_json::{Map, Value, json};

use crate::provider::{
    accepts_null, inline_refs, is_object_schema, required_names, visit_subschemas,
};

/// The values of `format` that JSON Schema (draft 2020-12) defines. Any other is dropped.
pub(crate) const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Which schema of a tool is being reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The arguments: an object schema also gets `properties`.
    Input,
    /// The encoded output.
    Output,
}

/// `schema` reduced to standard keywords (see the module documentation).
pub(crate) fn standard_schema(schema: &Value, role: Role) -> Value {
    let mut out = inline_refs(schema).unwrap_or_else(|_| schema.clone());
    if let Value::Object(map) = &mut out {
        for keyword in ["$schema", "$id", "$comment"] {
            map.remove(keyword);
        }
    }
    reduce(&mut out);
    if let Value::Object(defs) = out.get_mut("$defs").unwrap_or(&mut Value::Null) {
        defs.values_mut().for_each(reduce);
    }
    if role == Role::Input
        && is_object_schema(&out)
        && let Value::Object(map) = &mut out
    {
        map.entry("properties").or_insert_with(|| json!({}));
    }
    out
}

/// Reduces one schema node and, through them, all its subschemas.
fn reduce(node: &mut Value) {
    let Value::Object(map) = node else {
        return;
    };
    map.remove("title");
    if let Some(Value::String(description)) = map.get_mut("description") {
        *description = unwrap_doc(description);
    }
    if let Some(Value::String(format)) = map.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        let unsigned = format.starts_with("uint");
        map.remove("format");
        let negative_allowed = map
            .get("minimum")
            .and_then(Value::as_f64)
            .is_none_or(|minimum| minimum < 0.0);
        if unsigned && negative_allowed {
            map.insert("minimum".to_owned(), json!(0));
        }
    }
    let required = required_names(map);
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                plainly_optional(property);
            }
        }
    }
    let _ = visit_subschemas(map, &mut Vec::new(), &mut |child, _| {
        reduce(child);
        Ok(())
    });
}

/// A doc comment's text as one paragraph per paragraph: a line break that only wrapped the
/// source is a space; blank lines and list items (`- `, `* `, `1. `) keep theirs.
fn unwrap_doc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            let previous_blank = lines[i - 1].trim().is_empty();
            let trimmed = line.trim_start();
            let list_item = trimmed.starts_with("- ")
                || trimmed.starts_with("* ")
                || trimmed
                    .split_once(". ")
                    .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            if previous_blank || trimmed.is_empty() || list_item {
                out.push('\n');
            } else {
                out.push(' ');
            }
        }
        out.push_str(line);
    }
    out
}

/// Takes `null` out of an optional property's schema: it is said by leaving the field out.
fn plainly_optional(property: &mut Value) {
    let Value::Object(map) = property else {
        return;
    };
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    if !accepts_null(property) {
        return;
    }
    let Value::Object(map) = property else {
        return;
    };
    if let Some(Value::Array(kinds)) = map.get_mut("type") {
        kinds.retain(|kind| kind != "null");
        if kinds.len() == 1 {
            let kind = kinds.remove(0);
            map.insert("type".to_owned(), kind);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    for keyword in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = map.get_mut(keyword) else {
            continue;
        };
        branches.retain(|branch| !is_null_only(branch));
        if branches.len() == 1
            && let Some(Value::Object(branch)) = branches.pop()
        {
            map.remove(keyword);
            merge_under(map, branch);
        }
    }
}

/// Adds `branch`'s keywords to `map`; the property's own keywords (its description) win.
fn merge_under(map: &mut Map<String, Value>, branch: Map<String, Value>) {
    for (keyword, value) in branch {
        map.entry(keyword).or_insert(value);
    }
}

/// Is `schema` the `null` branch of an `Option` (`{"type": "null"}` or `{"const": null}`)?
fn is_null_only(schema: &Value) -> bool {
    match schema.as_object() {
        Some(map) => {
            map.get("type") == Some(&json!("null"))
                || (map.get("const") == Some(&Value::Null) && !map.contains_key("type"))
        }
        None => false,
    }
}

#[cfg(test)]
mod tests;
