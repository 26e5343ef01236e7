//! Which JSON Schema draft compiles a derived schema: draft 7 when the schema means the same
//! under it, else the draft the schema names (2020-12 for schemars).
//!
//! Every validator is checked against its draft's meta-schema when it is built. jsonschema's
//! `macros` feature makes those checks generated code; without it, the first check in a process
//! compiled the meta-schema at run time, about 5 ms of CPU for 2020-12 (with its vocabularies
//! and dynamic references) and about 1 ms for draft 7, on the path of a `tackle call`. Draft 7
//! was chosen for that, and is kept: its validators are the ones every test and benchmark has
//! measured.
//!
//! The derived schemas of tool types use a small set of keywords, and for those the two drafts
//! agree: `$ref` resolves a JSON pointer (`#/$defs/Name`) in either, and formats are
//! annotations in both once format checks are off, as they are under 2020-12 by default. A
//! schema is compiled under draft 7 only when every keyword it uses is in that set and no `$ref`
//! has an asserting sibling (draft 7 ignores a `$ref`'s siblings; 2020-12 applies them).
//! Anything else, including keywords this list does not know, compiles under 2020-12 as before.

use serde_json::Value;

/// Keywords besides the [`ANNOTATIONS`] whose meaning is the same under draft 7 and 2020-12
/// (with format checks off). Keyword-specific rules (`items` as one schema, `$ref` siblings)
/// are in [`agrees`].
const SHARED_KEYWORDS: &[&str] = &[
    "$schema",
    "$ref",
    "$defs",
    "definitions",
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords that only annotate, so they may stand beside a `$ref` under either draft.
const ANNOTATIONS: &[&str] = &[
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Keywords whose value is one subschema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "propertyNames",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is a list of subschemas.
const SCHEMA_LIST: &[&str] = &["anyOf", "oneOf", "allOf"];

/// Keywords whose value maps names to subschemas.
const SCHEMA_MAP: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];

/// Nesting deeper than this is not walked; such a schema compiles under 2020-12.
const MAX_DEPTH: usize = 64;

/// Builds the validator for a schema derived from a Rust type: under draft 7 when the schema
/// means the same there, else under the draft the schema names (2020-12 for schemars).
pub(crate) fn validator_for(derived: &Value) -> jsonschema::Validator {
    let options = if means_the_same_under_draft7(derived) {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft7)
            .should_validate_formats(false)
    } else {
        jsonschema::options()
    };
    options
        .build(derived)
        .expect("schemars produces valid JSON Schema")
}

/// True when `schema` uses only keywords that draft 7 and 2020-12 read the same way.
pub(crate) fn means_the_same_under_draft7(schema: &Value) -> bool {
    agrees(schema, 0)
}

fn agrees(schema: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let map = match schema {
        Value::Bool(_) => return true,
        Value::Object(map) => map,
        _ => return false,
    };
    if map.contains_key("$ref")
        && !map
            .keys()
            .all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()))
    {
        return false;
    }
    map.iter()
        .all(|(keyword, value)| keyword_agrees(keyword, value, depth))
}

fn keyword_agrees(keyword: &str, value: &Value, depth: usize) -> bool {
    if !SHARED_KEYWORDS.contains(&keyword) && !ANNOTATIONS.contains(&keyword) {
        return false;
    }
    if ONE_SCHEMA.contains(&keyword) {
        // `items` as a list is a tuple in draft 7 and invalid in 2020-12.
        return agrees(value, depth + 1);
    }
    if SCHEMA_LIST.contains(&keyword) {
        return value
            .as_array()
            .is_some_and(|list| list.iter().all(|s| agrees(s, depth + 1)));
    }
    if SCHEMA_MAP.contains(&keyword) {
        return value
            .as_object()
            .is_some_and(|map| map.values().all(|s| agrees(s, depth + 1)));
    }
    match keyword {
        // Draft 4's boolean form is read differently by later drafts; both read numbers alike.
        "exclusiveMinimum" | "exclusiveMaximum" => value.is_number(),
        // `$schema` only names the draft, which the caller sets; `$ref` must be local.
        "$ref" => value.as_str().is_some_and(|r| r.starts_with("#/")),
        _ => true,
    }
}

#[cfg(test)]
mod tests;
