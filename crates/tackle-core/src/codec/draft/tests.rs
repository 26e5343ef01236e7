//! Tests of the draft choice: tool-like schemas compile under draft 7, and a draft-7 validator
//! answers every instance exactly as the 2020-12 one does (validity, error paths and messages).

use std::collections::BTreeMap;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{means_the_same_under_draft7, validator_for};
use crate::codec::SchemaInfo;
use crate::standard::Role;

/// The shapes tool inputs and outputs use: optional and ranged integers, nested lists of
/// structs, unit and internally tagged enums, untagged enums, maps, free JSON, flattening,
/// lengths and patterns, recursion.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ToolLike {
    file_path: String,
    offset: Option<u32>,
    #[schemars(range(min = 1, max = 2000))]
    limit: Option<u32>,
    edits: Vec<Edit>,
    mode: Mode,
    item: Item,
    either: Option<Either>,
    tags: BTreeMap<String, f64>,
    extra: Option<Value>,
    #[serde(default)]
    replace_all: bool,
    #[schemars(length(min = 1, max = 10))]
    name: String,
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    slug: Option<String>,
    small: Option<u8>,
    tree: Option<Tree>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Edit {
    old_string: String,
    new_string: String,
    #[serde(flatten)]
    place: Place,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Place {
    line: Option<i64>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    /// Quickly.
    Fast,
    Slow,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Item {
    File { path: String },
    Dir { depth: u8 },
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Either {
    Number(i64),
    Text(String),
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

fn derived_schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "input",
            SchemaInfo::generate::<ToolLike>(Role::Input).derived,
        ),
        (
            "output",
            SchemaInfo::generate::<ToolLike>(Role::Output).derived,
        ),
    ]
}

#[test]
fn tool_like_schemas_compile_under_draft_7() {
    for (role, schema) in derived_schemas() {
        assert!(
            means_the_same_under_draft7(&schema),
            "the {role} schema should take the draft-7 path: {schema:#}"
        );
    }
}

#[test]
fn keywords_read_differently_keep_2020_12() {
    let differing = [
        // Draft 7 ignores a `$ref`'s siblings.
        json!({"$ref": "#/$defs/A", "maxLength": 2, "$defs": {"A": {"type": "string"}}}),
        // A list under `items` is a tuple in draft 7.
        json!({"type": "array", "items": [{"type": "string"}]}),
        json!({"type": "array", "prefixItems": [{"type": "string"}]}),
        json!({"type": "object", "unevaluatedProperties": false}),
        json!({"dependentRequired": {"a": ["b"]}}),
        json!({"$ref": "https://example.com/schema"}),
        json!({"$id": "https://example.com/schema", "type": "object"}),
        json!({"properties": {"a": {"contentEncoding": "base64"}}}),
        json!({"anyOf": [{"type": "string"}, {"$dynamicRef": "#meta"}]}),
    ];
    for schema in differing {
        assert!(!means_the_same_under_draft7(&schema), "{schema}");
    }
    // The first is why: its `maxLength` holds only under 2020-12, which it keeps.
    let validator = validator_for(&differing_ref_sibling());
    assert!(!validator.is_valid(&json!("abc")));
    assert!(validator.is_valid(&json!("ab")));
}

fn differing_ref_sibling() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/$defs/A",
        "maxLength": 2,
        "$defs": {"A": {"type": "string"}}
    })
}

#[test]
fn nesting_deeper_than_the_walk_keeps_2020_12() {
    let mut schema = json!({"type": "string"});
    for _ in 0..100 {
        schema = json!({"type": "array", "items": schema});
    }
    assert!(!means_the_same_under_draft7(&schema));
}

/// A tiny deterministic generator, so one `u64` from proptest names a whole instance.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A value of no particular shape.
fn junk(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => [json!(-1), json!(0), json!(3), json!(2.5), json!(1e20)][rng.below(5)].clone(),
        3 => json!(["", "fast", "abc", "ABC", "a b"][rng.below(5)]),
        4 => json!({}),
        5 => Value::Array((0..rng.below(3)).map(|_| junk(rng, depth + 1)).collect()),
        _ => json!({ "path": junk(rng, depth + 1), "kind": "file" }),
    }
}

/// An instance shaped by `schema` most of the time, with wrong types, missing and unknown
/// fields and out-of-range values mixed in.
fn instance(schema: &Value, root: &Value, rng: &mut Rng, depth: usize) -> Value {
    if depth > 6 || rng.chance(2) {
        return junk(rng, depth);
    }
    let Some(map) = schema.as_object() else {
        return junk(rng, depth);
    };
    if let Some(Value::String(reference)) = map.get("$ref") {
        let target = root
            .pointer(reference.trim_start_matches('#'))
            .unwrap_or(&Value::Null);
        return instance(target, root, rng, depth + 1);
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = map.get(keyword) {
            let branch = &branches[rng.below(branches.len())];
            return instance(branch, root, rng, depth + 1);
        }
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values[rng.below(values.len())].clone();
    }
    if let Some(value) = map.get("const") {
        return value.clone();
    }
    let kind = match map.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds[rng.below(kinds.len())].as_str().unwrap_or("null"),
        None if map.contains_key("properties") => "object",
        None => return junk(rng, depth),
        Some(_) => "null",
    };
    match kind {
        "object" => {
            let mut object = serde_json::Map::new();
            let required = |name: &str| {
                map.get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|names| names.iter().any(|n| n == name))
            };
            if let Some(Value::Object(properties)) = map.get("properties") {
                for (name, property) in properties {
                    if rng.chance(if required(name) { 99 } else { 60 }) {
                        object.insert(name.clone(), instance(property, root, rng, depth + 1));
                    }
                }
            }
            if let Some(additional @ Value::Object(_)) = map.get("additionalProperties") {
                for key in ["x", "y"].into_iter().take(rng.below(3)) {
                    object.insert(key.into(), instance(additional, root, rng, depth + 1));
                }
            } else if rng.chance(3) {
                object.insert("unknown".into(), junk(rng, depth + 1));
            }
            Value::Object(object)
        }
        "array" => {
            let items = map.get("items").cloned().unwrap_or(Value::Bool(true));
            Value::Array(
                (0..rng.below(4))
                    .map(|_| instance(&items, root, rng, depth + 1))
                    .collect(),
            )
        }
        "string" => json!(["", "abc", "ABC", "src/main.rs", "a-b", "abcdefghijkl"][rng.below(6)]),
        "integer" => [-1i64, 0, 1, 7, 255, 256, 2000, 2001, 4_294_967_296][rng.below(9)].into(),
        "number" => json!([0.5, -3.25, 1e300, 42.0][rng.below(4)]),
        "boolean" => json!(rng.chance(50)),
        _ => Value::Null,
    }
}

/// Every error as (instance path, message), sorted.
fn errors(validator: &jsonschema::Validator, value: &Value) -> Vec<(String, String)> {
    let mut errors: Vec<_> = validator
        .iter_errors(value)
        .map(|e| (e.instance_path().to_string(), e.to_string()))
        .collect();
    errors.sort();
    errors
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        if std::env::var_os("TACKLE_DEEP").is_some() { 20_000 } else { 500 }
    ))]

    /// A draft-7 validator of a tool-like schema accepts and rejects exactly what the 2020-12
    /// validator does, with the same errors at the same paths.
    #[test]
    fn a_draft_7_validator_answers_like_2020_12(seed in 1u64.., which in 0usize..2) {
        let (_, schema) = derived_schemas().swap_remove(which);
        let fast = validator_for(&schema);
        let reference = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .unwrap();
        let mut rng = Rng(seed);
        for _ in 0..8 {
            let value = instance(&schema, &schema, &mut rng, 0);
            prop_assert_eq!(fast.is_valid(&value), reference.is_valid(&value), "{}", value);
            prop_assert_eq!(errors(&fast, &value), errors(&reference, &value), "{}", value);
        }
    }
}

#[test]
fn the_generator_makes_valid_and_invalid_instances() {
    // Without both kinds, the property above would compare little.
    let (_, schema) = derived_schemas().swap_remove(0);
    let reference = jsonschema::options().build(&schema).unwrap();
    let mut rng = Rng(7);
    let verdicts: Vec<bool> = (0..400)
        .map(|_| reference.is_valid(&instance(&schema, &schema, &mut rng, 0)))
        .collect();
    let valid = verdicts.iter().filter(|v| **v).count();
    assert!((10..=390).contains(&valid), "{valid} of 400 valid");
}
