//! Provider schema export: one canonical JSON Schema per tool, lowered into the dialect each model
//! provider accepts (OpenAI strict functions, Anthropic tools, Gemini function declarations, MCP).
//!
//! Every lowering is a pure function over [`serde_json::Value`]. The passes are:
//!
//! - **All providers**: local `$ref`s into `$defs`/`definitions` are inlined (a recursive type is
//!   an error, never a stack overflow), and `$schema`, `$id`, `$comment`, `title`, `$defs` and
//!   `definitions` are dropped at the top.
//! - **OpenAI (strict)**: every object gets `additionalProperties: false`; every property becomes
//!   required, and the ones that were optional become nullable (`type: [T, "null"]` for a plain
//!   scalar, `anyOf: [schema, {"type": "null"}]` for objects, arrays, enums and combinators); `oneOf` becomes `anyOf` and a
//!   one-element `allOf` is merged. The keywords in [`OPENAI_DROPPED`] are dropped: each only
//!   constrains or annotates, and the codec still validates arguments against the original schema,
//!   so dropping one moves the check to tackle without accepting anything the tool would not.
//!   Free-form maps, tuples (`prefixItems`) and `patternProperties` cannot be expressed.
//! - **Anthropic**: the schema must be an object at the top (no top-level `anyOf`/`oneOf`/`allOf`).
//! - **Gemini** (OpenAPI subset): `const` becomes a one-value `enum`; type arrays and `anyOf`
//!   branches of `null` become `nullable: true`; a `oneOf` of string constants becomes one string
//!   `enum`; non-string enums are dropped; keywords outside [`GEMINI_KEYWORDS`] are dropped
//!   (among them `additionalProperties`, `default`, `examples`: dropping
//!   `additionalProperties: false` loosens the advertised schema, which is acceptable because the
//!   codec rejects unknown fields where the type does). A `oneOf` of objects, tuples
//!   (`prefixItems`) and `patternProperties` cannot be expressed. A tool whose parameters have no
//!   properties is declared without `parameters`.
//! - **MCP**: JSON Schema as is, with refs inlined when they can be (a recursive schema is kept
//!   with its `$defs`), and the output schema is advertised when the output is an object.
//!
//! A schema a provider cannot express is a [`SchemaCompatError`] naming the tool and the JSON
//! pointer of the construct; [`export_tools`] still exports every other tool.

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value, json};

use crate::codec::Arguments;
use crate::tool::ToolDefinition;

/// A model provider whose tool-definition dialect tackle can export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI function tools in strict mode.
    OpenAi,
    /// Anthropic Messages API tools.
    Anthropic,
    /// Gemini function declarations (an OpenAPI schema subset).
    Gemini,
    /// Model Context Protocol `tools/list` entries.
    Mcp,
}

impl Provider {
    /// Every provider, in the order they are documented.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The provider's lowercase name: `openai`, `anthropic`, `gemini` or `mcp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is none of `openai`, `anthropic`, `gemini` or `mcp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseProviderError(pub String);

impl fmt::Display for ParseProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown provider `{}`; choose one of: openai, anthropic, gemini, mcp",
            self.0
        )
    }
}

impl std::error::Error for ParseProviderError {}

impl FromStr for Provider {
    type Err = ParseProviderError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|provider| provider.as_str().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| ParseProviderError(name.to_owned()))
    }
}

/// A tool schema that a provider's dialect cannot express.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaCompatError {
    /// The tool's name.
    pub tool: String,
    /// The provider whose dialect rejected the schema.
    pub provider: Provider,
    /// JSON pointer of the offending construct in the input schema, with refs inlined (`""` is
    /// the whole schema).
    pub path: String,
    /// What cannot be expressed, for a person.
    pub reason: String,
}

impl fmt::Display for SchemaCompatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        write!(
            f,
            "tool `{}`: schema path {}: {} (provider {})",
            self.tool, path, self.reason, self.provider
        )
    }
}

impl std::error::Error for SchemaCompatError {}

/// Keywords dropped in OpenAI strict mode. Each only constrains or annotates a value.
pub const OPENAI_DROPPED: &[&str] = &[
    "format",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "default",
    "examples",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedItems",
    "unevaluatedProperties",
    "readOnly",
    "writeOnly",
    "deprecated",
    "$comment",
    "$id",
    "$anchor",
];

/// The keywords Gemini's schema subset accepts; every other keyword is dropped.
pub const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "items",
    "minimum",
    "maximum",
];

/// Exports one tool in `provider`'s tool-definition shape.
///
/// - OpenAI: `{"type": "function", "function": {"name", "description", "parameters", "strict": true}}`
/// - Anthropic: `{"name", "description", "input_schema"}`
/// - Gemini: `{"name", "description", "parameters"}` (a function declaration)
/// - MCP: `{"name", "description", "inputSchema", "outputSchema"}`, the last only for an object
///   output
pub fn export_tool(
    provider: Provider,
    name: &str,
    definition: &ToolDefinition,
) -> Result<Value, SchemaCompatError> {
    let description = &*definition.description;
    let error = |incompat: Incompat| SchemaCompatError {
        tool: name.to_owned(),
        provider,
        path: incompat.path,
        reason: incompat.reason,
    };
    let mut input = lower_schema(provider, definition.input_schema()).map_err(error)?;
    if provider == Provider::Mcp {
        mcp_top(&mut input).map_err(error)?;
    }
    Ok(match provider {
        Provider::OpenAi => json!({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": input,
                "strict": true,
            }
        }),
        Provider::Anthropic => json!({
            "name": name,
            "description": description,
            "input_schema": input,
        }),
        Provider::Gemini => {
            let empty = input
                .get("properties")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty);
            if empty {
                json!({"name": name, "description": description})
            } else {
                json!({"name": name, "description": description, "parameters": input})
            }
        }
        Provider::Mcp => {
            let mut tool = json!({
                "name": name,
                "description": description,
                "inputSchema": input,
            });
            let output = lower_schema(Provider::Mcp, definition.output_schema())
                .unwrap_or_else(|_| (**definition.output_schema()).clone());
            if is_object_schema(&output) {
                tool["outputSchema"] = output;
            }
            tool
        }
    })
}

/// Exports every tool in `provider`'s shape, in order. A tool the provider cannot express is
/// reported in the second list and left out; the others still export.
pub fn export_tools<'a>(
    provider: Provider,
    tools: impl IntoIterator<Item = (&'a str, &'a ToolDefinition)>,
) -> (Vec<Value>, Vec<SchemaCompatError>) {
    let mut exported = Vec::new();
    let mut errors = Vec::new();
    for (name, definition) in tools {
        match export_tool(provider, name, definition) {
            Ok(tool) => exported.push(tool),
            Err(error) => errors.push(error),
        }
    }
    (exported, errors)
}

/// Undoes the nullable lowering on arguments a model sent: removes every `null` field that the
/// original `input_schema` declares optional and not nullable, at any depth.
///
/// OpenAI strict mode makes every property required and the optional ones nullable, so a model
/// says "absent" with `null`. The codec decodes against the original schema, where such a field
/// must be absent (a `#[serde(default)] limit: u32` does not decode from `null`). Other `null`s
/// are kept, so the codec still reports them.
pub(crate) fn restore_absent_fields(input_schema: &Value, arguments: &mut Value) {
    restore(input_schema, input_schema, arguments, 0);
}

/// Undoes what exporting in `dialect` did to the arguments a model sends, before they are decoded:
/// for OpenAI strict mode, a `null` for an optional field becomes an absent field again. Arguments
/// that are not JSON are returned as they are, for the codec to report.
pub(crate) fn restore_arguments(
    dialect: Provider,
    input_schema: &Value,
    arguments: Arguments,
) -> Arguments {
    if dialect != Provider::OpenAi {
        return arguments;
    }
    let mut value = match arguments {
        Arguments::Json(value) => value,
        Arguments::Text(text) => match serde_json::from_str::<Value>(&text) {
            Ok(value) => value,
            Err(_) => return Arguments::Text(text),
        },
    };
    restore_absent_fields(input_schema, &mut value);
    Arguments::Json(value)
}

/// How deep [`restore_absent_fields`] follows arguments; deeper values are left as they are.
const RESTORE_DEPTH: usize = 64;

/// `schema` with its `$ref` chain followed (a bounded number of times).
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            break;
        };
        match reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

fn restore(root: &Value, schema: &Value, arguments: &mut Value, depth: usize) {
    if depth > RESTORE_DEPTH {
        return;
    }
    let schema = resolve(root, schema);
    let Some(map) = schema.as_object() else {
        return;
    };
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = map.get(keyword) {
            for branch in branches {
                restore(root, branch, arguments, depth + 1);
            }
        }
    }
    match arguments {
        Value::Object(fields) => {
            let Some(Value::Object(properties)) = map.get("properties") else {
                return;
            };
            let required = map.get("required").and_then(Value::as_array);
            let is_required =
                |name: &str| required.is_some_and(|names| names.iter().any(|n| n == name));
            fields.retain(|name, value| {
                let Some(property) = properties.get(name) else {
                    return true;
                };
                !(value.is_null() && !is_required(name) && !accepts_null(resolve(root, property)))
            });
            for (name, value) in fields.iter_mut() {
                if let Some(property) = properties.get(name) {
                    restore(root, property, value, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = map.get("items").filter(|item| item.is_object()) {
                for value in items {
                    restore(root, item, value, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// A construct a dialect cannot express, before it is attributed to a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Incompat {
    path: String,
    reason: String,
}

pub(crate) type Lower<T = ()> = Result<T, Incompat>;

/// A JSON pointer path being walked.
pub(crate) type Path = Vec<String>;

fn incompat(path: &[String], reason: impl Into<String>) -> Incompat {
    Incompat {
        path: pointer(path),
        reason: reason.into(),
    }
}

/// `path` as a JSON pointer (RFC 6901).
fn pointer(path: &[String]) -> String {
    path.iter()
        .map(|token| format!("/{}", token.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Lowers one schema into `provider`'s dialect.
fn lower_schema(provider: Provider, schema: &Value) -> Lower<Value> {
    match provider {
        Provider::Mcp => Ok(inline_refs(schema).unwrap_or_else(|_| {
            let mut schema = schema.clone();
            if let Value::Object(map) = &mut schema {
                map.remove("$schema");
                map.remove("title");
            }
            schema
        })),
        Provider::OpenAi => {
            let mut schema = inline_refs(schema)?;
            openai_strict(&mut schema)?;
            Ok(schema)
        }
        Provider::Anthropic => {
            let mut schema = inline_refs(schema)?;
            anthropic_top(&mut schema)?;
            Ok(schema)
        }
        Provider::Gemini => {
            let mut schema = inline_refs(schema)?;
            gemini(&mut schema)?;
            Ok(schema)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Walking subschemas.

/// Keywords whose value is one subschema.
const SCHEMA_KEYWORDS: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
];
/// Keywords whose value is an object of subschemas.
const SCHEMA_MAP_KEYWORDS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// Calls `visit` on every direct subschema of `map`, with `path` extended to it.
pub(crate) fn visit_subschemas(
    map: &mut Map<String, Value>,
    path: &mut Path,
    visit: &mut dyn FnMut(&mut Value, &mut Path) -> Lower,
) -> Lower {
    for (keyword, value) in map.iter_mut() {
        let keyword = keyword.as_str();
        path.push(keyword.to_owned());
        let result = if SCHEMA_KEYWORDS.contains(&keyword) {
            match value {
                // The draft-4 tuple form of `items`.
                Value::Array(items) => each_indexed(items, path, visit),
                value => visit(value, path),
            }
        } else if SCHEMA_MAP_KEYWORDS.contains(&keyword) {
            match value {
                Value::Object(children) => children.iter_mut().try_for_each(|(key, child)| {
                    path.push(key.clone());
                    let result = visit(child, path);
                    path.pop();
                    result
                }),
                _ => Ok(()),
            }
        } else if SCHEMA_ARRAY_KEYWORDS.contains(&keyword) {
            match value {
                Value::Array(children) => each_indexed(children, path, visit),
                _ => Ok(()),
            }
        } else {
            Ok(())
        };
        path.pop();
        result?;
    }
    Ok(())
}

fn each_indexed(
    items: &mut [Value],
    path: &mut Path,
    visit: &mut dyn FnMut(&mut Value, &mut Path) -> Lower,
) -> Lower {
    for (index, item) in items.iter_mut().enumerate() {
        path.push(index.to_string());
        let result = visit(item, path);
        path.pop();
        result?;
    }
    Ok(())
}

/// Does `schema` describe objects?
pub(crate) fn is_object_schema(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    match map.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        _ => map.contains_key("properties"),
    }
}

// ---------------------------------------------------------------------------------------------
// All providers: inlining.

/// How deep an inlined schema may nest, in keywords and indices.
const MAX_INLINED_DEPTH: usize = 256;

/// How many `$ref`s one schema may inline: references that each use another twice double the
/// schema per level.
const MAX_INLINED_REFS: usize = 10_000;

/// The references being inlined, innermost last, and how many were inlined so far.
struct Refs {
    stack: Vec<String>,
    inlined: usize,
}

/// `schema` with every local `$ref` inlined and the top-level metadata (`$schema`, `$id`,
/// `$comment`, `title`, `$defs`, `definitions`) dropped. A recursive reference is an error, and
/// so is a result nested deeper than [`MAX_INLINED_DEPTH`] or needing more than
/// [`MAX_INLINED_REFS`] references: a schema from an MCP server is untrusted input.
pub(crate) fn inline_refs(schema: &Value) -> Lower<Value> {
    let mut out = schema.clone();
    let mut refs = Refs {
        stack: vec!["#".to_owned()],
        inlined: 0,
    };
    inline(schema, &mut out, &mut refs, &mut Vec::new())?;
    if let Value::Object(map) = &mut out {
        for keyword in ["$schema", "$id", "$comment", "title"] {
            map.remove(keyword);
        }
    }
    Ok(out)
}

fn inline(root: &Value, node: &mut Value, refs: &mut Refs, path: &mut Path) -> Lower {
    let Value::Object(map) = node else {
        return Ok(());
    };
    if path.len() > MAX_INLINED_DEPTH {
        return Err(incompat(
            path,
            format!("the schema nests more than {MAX_INLINED_DEPTH} levels deep"),
        ));
    }
    map.remove("$defs");
    map.remove("definitions");
    let Some(reference) = map.remove("$ref") else {
        return visit_subschemas(map, path, &mut |child, path| {
            inline(root, child, refs, path)
        });
    };
    let Some(reference) = reference.as_str().map(str::to_owned) else {
        return Err(incompat(path, "`$ref` is not a string"));
    };
    refs.inlined += 1;
    if refs.inlined > MAX_INLINED_REFS {
        return Err(incompat(
            path,
            format!("the schema needs more than {MAX_INLINED_REFS} `$ref`s inlined"),
        ));
    }
    if refs.stack.contains(&reference) {
        return Err(incompat(
            path,
            format!("recursive type: `{reference}` refers to itself and cannot be inlined"),
        ));
    }
    let target = reference
        .strip_prefix('#')
        .and_then(|pointer| root.pointer(pointer))
        .ok_or_else(|| incompat(path, format!("cannot resolve `$ref` `{reference}`")))?;
    let mut target = target.clone();
    refs.stack.push(reference);
    let inlined = inline(root, &mut target, refs, path);
    refs.stack.pop();
    inlined?;
    visit_subschemas(map, path, &mut |child, path| {
        inline(root, child, refs, path)
    })?;
    let siblings = std::mem::take(map);
    *node = match target {
        Value::Object(mut target) => {
            // Keywords next to the `$ref` (a field's description) win over the target's.
            target.extend(siblings);
            Value::Object(target)
        }
        Value::Bool(true) => Value::Object(siblings),
        other => other,
    };
    Ok(())
}

/// Merges the only element of `allOf` into `map`; more than one element is an error.
fn merge_single_all_of(map: &mut Map<String, Value>, path: &[String], provider: &str) -> Lower {
    let Some(all_of) = map.remove("allOf") else {
        return Ok(());
    };
    match all_of {
        Value::Array(mut parts) if parts.len() == 1 => {
            if let Value::Object(part) = parts.remove(0) {
                for (key, value) in part {
                    map.entry(key).or_insert(value);
                }
            }
            Ok(())
        }
        _ => Err(incompat(
            &[path, &["allOf".to_owned()]].concat(),
            format!("{provider} does not support `allOf` with more than one schema"),
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI strict mode.

/// Lowers an inlined schema into OpenAI's strict-mode subset, in place.
fn openai_strict(schema: &mut Value) -> Lower {
    let top = schema.as_object();
    let combinator = top.and_then(|map| {
        ["anyOf", "oneOf", "allOf"]
            .into_iter()
            .find(|keyword| map.contains_key(*keyword))
    });
    if let Some(keyword) = combinator {
        return Err(incompat(
            &[keyword.to_owned()],
            format!("OpenAI requires an object at the top of the parameters, not `{keyword}`"),
        ));
    }
    if !is_object_schema(schema) {
        return Err(incompat(
            &[],
            "OpenAI requires the parameters to be an object schema",
        ));
    }
    openai_node(schema, &mut Vec::new())
}

fn openai_node(node: &mut Value, path: &mut Path) -> Lower {
    let map = match node {
        Value::Bool(true) => {
            *node = json!({});
            return Ok(());
        }
        Value::Bool(false) => {
            return Err(incompat(path, "a `false` schema accepts no value"));
        }
        Value::Object(map) => map,
        _ => return Ok(()),
    };
    merge_single_all_of(map, path, "OpenAI strict mode")?;
    for keyword in ["prefixItems", "patternProperties"] {
        if map.contains_key(keyword) {
            path.push(keyword.to_owned());
            let error = incompat(
                path,
                format!("OpenAI strict mode does not support `{keyword}`"),
            );
            return Err(error);
        }
    }
    if let Some(Value::Array(_)) = map.get("items") {
        path.push("items".to_owned());
        return Err(incompat(path, "OpenAI strict mode does not support tuples"));
    }
    if let Some(one_of) = map.remove("oneOf") {
        if map.contains_key("anyOf") {
            path.push("oneOf".to_owned());
            return Err(incompat(path, "both `oneOf` and `anyOf` on one schema"));
        }
        // `anyOf` is looser than `oneOf`; the codec still checks the original on the way back.
        map.insert("anyOf".to_owned(), one_of);
    }
    for keyword in OPENAI_DROPPED {
        map.remove(*keyword);
    }
    visit_subschemas(map, path, &mut openai_node)?;
    if !is_object_schema(node) {
        return Ok(());
    }
    let Value::Object(map) = node else {
        return Ok(());
    };
    match map.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(_) => {
            path.push("additionalProperties".to_owned());
            return Err(incompat(
                path,
                "OpenAI strict mode does not support objects with free-form keys (maps)",
            ));
        }
    }
    map.insert("additionalProperties".to_owned(), Value::Bool(false));
    let required = required_names(map);
    let properties = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let mut all = Vec::new();
    if let Value::Object(properties) = properties {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                make_nullable(property);
            }
            all.push(Value::String(name.clone()));
        }
    }
    map.insert("required".to_owned(), Value::Array(all));
    Ok(())
}

/// The names an object schema lists in `required`.
pub(crate) fn required_names(map: &Map<String, Value>) -> Vec<String> {
    map.get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|name| name.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Does `schema` accept `null`?
pub(crate) fn accepts_null(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return schema == &Value::Bool(true);
    };
    let typed = match map.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        Some(_) => false,
        None => !["enum", "const", "anyOf", "oneOf", "allOf"]
            .iter()
            .any(|keyword| map.contains_key(*keyword)),
    };
    let enumerated = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().any(Value::is_null),
        (_, Some(value)) => value.is_null(),
        _ => true,
    };
    let branches = ["anyOf", "oneOf"].iter().any(|keyword| {
        map.get(*keyword)
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(accepts_null))
    });
    (typed && enumerated) || branches
}

/// Makes `schema` accept `null` as well: `type: [T, "null"]` for a plain typed schema, an
/// `anyOf` with a `null` branch otherwise.
fn make_nullable(schema: &mut Value) {
    if accepts_null(schema) {
        return;
    }
    let Value::Object(map) = schema else {
        return;
    };
    // Objects and arrays get an `anyOf` wrapper, scalars a type array.
    let scalar = |kind: &Value| {
        ["string", "integer", "number", "boolean"]
            .iter()
            .any(|scalar| kind == *scalar)
    };
    let simple = !["enum", "const", "anyOf", "oneOf", "allOf"]
        .iter()
        .any(|keyword| map.contains_key(*keyword))
        && match map.get("type") {
            Some(Value::Array(kinds)) => kinds.iter().all(scalar),
            Some(kind) => scalar(kind),
            None => false,
        };
    match map.get_mut("type") {
        Some(Value::String(kind)) if simple => {
            let kind = std::mem::take(kind);
            map.insert("type".to_owned(), json!([kind, "null"]));
        }
        Some(Value::Array(kinds)) if simple => kinds.push(json!("null")),
        _ => {
            let description = map.remove("description");
            let inner = std::mem::take(map);
            map.insert(
                "anyOf".to_owned(),
                json!([Value::Object(inner), {"type": "null"}]),
            );
            if let Some(description) = description {
                map.insert("description".to_owned(), description);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Anthropic.

/// Checks that an inlined schema is an object at the top, as Anthropic requires.
fn anthropic_top(schema: &mut Value) -> Lower {
    let Value::Object(map) = schema else {
        return Err(incompat(
            &[],
            "Anthropic requires `input_schema` to be an object schema",
        ));
    };
    if let Some(keyword) = ["anyOf", "oneOf", "allOf"]
        .into_iter()
        .find(|keyword| map.contains_key(*keyword))
    {
        return Err(incompat(
            &[keyword.to_owned()],
            format!(
                "Anthropic does not support `{keyword}` at the top of `input_schema`; it must be `type: object`"
            ),
        ));
    }
    match map.get("type") {
        Some(kind) if kind == "object" => Ok(()),
        None if map.contains_key("properties") => {
            map.insert("type".to_owned(), json!("object"));
            Ok(())
        }
        _ => Err(incompat(
            &[],
            "Anthropic requires `input_schema` to be `type: object`",
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// MCP.

/// Checks that an MCP `inputSchema` is `type: object`, adding the type to a schema whose
/// `oneOf`/`anyOf` branches are all objects (the same set of values).
fn mcp_top(schema: &mut Value) -> Lower {
    if is_object_schema(schema) {
        return Ok(());
    }
    if let Value::Object(map) = schema
        && !map.contains_key("type")
    {
        let branches = ["oneOf", "anyOf"]
            .iter()
            .find_map(|keyword| map.get(*keyword).and_then(Value::as_array));
        if branches
            .is_some_and(|branches| !branches.is_empty() && branches.iter().all(is_object_schema))
        {
            map.insert("type".to_owned(), json!("object"));
            return Ok(());
        }
    }
    Err(incompat(
        &[],
        "MCP requires `inputSchema` to be `type: object`",
    ))
}

// ---------------------------------------------------------------------------------------------
// Gemini.

/// Lowers an inlined schema into Gemini's OpenAPI subset, in place.
fn gemini(schema: &mut Value) -> Lower {
    let mut path = Vec::new();
    gemini_node(schema, &mut path)?;
    if !is_object_schema(schema) {
        return Err(incompat(
            &[],
            "Gemini requires the parameters to be an object schema",
        ));
    }
    Ok(())
}

/// Is `schema` a `null`-only schema, such as the `null` branch of an `Option`?
fn is_null_only(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    match (map.get("type"), map.get("const"), map.get("enum")) {
        (Some(Value::String(kind)), _, _) => kind == "null",
        (Some(Value::Array(kinds)), _, _) => kinds.iter().all(|kind| kind == "null"),
        (None, Some(Value::Null), _) => true,
        (None, None, Some(Value::Array(values))) => values.iter().all(Value::is_null),
        _ => false,
    }
}

/// The string value of a `oneOf` branch that is one string constant (a documented unit variant).
fn string_constant(branch: &Value) -> Option<Vec<Value>> {
    let map = branch.as_object()?;
    if map.get("type").is_some_and(|kind| kind != "string") || map.contains_key("properties") {
        return None;
    }
    match (map.get("const"), map.get("enum")) {
        (Some(Value::String(value)), _) => Some(vec![json!(value)]),
        (None, Some(Value::Array(values))) if values.iter().all(Value::is_string) => {
            Some(values.clone())
        }
        _ => None,
    }
}

fn gemini_node(node: &mut Value, path: &mut Path) -> Lower {
    let map = match node {
        Value::Bool(true) => {
            *node = json!({});
            return Ok(());
        }
        Value::Bool(false) => {
            return Err(incompat(path, "a `false` schema accepts no value"));
        }
        Value::Object(map) => map,
        _ => return Ok(()),
    };
    merge_single_all_of(map, path, "Gemini")?;
    for keyword in ["prefixItems", "patternProperties"] {
        if map.contains_key(keyword) {
            path.push(keyword.to_owned());
            return Err(incompat(
                path,
                format!("Gemini does not support `{keyword}`"),
            ));
        }
    }
    if let Some(Value::Array(_)) = map.get("items") {
        path.push("items".to_owned());
        return Err(incompat(path, "Gemini does not support tuples"));
    }
    if let Some(one_of) = map.remove("oneOf") {
        let branches = one_of.as_array().cloned().unwrap_or_default();
        let mut values = Vec::new();
        let mut nullable = false;
        for (index, branch) in branches.iter().enumerate() {
            if is_null_only(branch) {
                nullable = true;
            } else if let Some(more) = string_constant(branch) {
                values.extend(more);
            } else {
                path.extend(["oneOf".to_owned(), index.to_string()]);
                return Err(incompat(
                    path,
                    "Gemini does not support `oneOf` of objects or mixed schemas (such as a tagged enum)",
                ));
            }
        }
        map.insert("type".to_owned(), json!("string"));
        map.insert("enum".to_owned(), Value::Array(values));
        if nullable {
            map.insert("nullable".to_owned(), Value::Bool(true));
        }
    }
    if let Some(value) = map.remove("const") {
        match value {
            Value::String(_) => {
                map.insert("enum".to_owned(), json!([value]));
                map.entry("type").or_insert_with(|| json!("string"));
            }
            Value::Null => {
                path.push("const".to_owned());
                return Err(incompat(
                    path,
                    "Gemini cannot express a schema of only `null`",
                ));
            }
            // A non-string constant cannot be an enum in Gemini; dropping it only loosens.
            _ => {}
        }
    }
    let mut nullable = false;
    if let Some(kind) = map.remove("type") {
        match kind {
            Value::String(kind) if kind == "null" => {
                path.push("type".to_owned());
                return Err(incompat(
                    path,
                    "Gemini cannot express a schema of only `null`",
                ));
            }
            Value::Array(kinds) => {
                let mut kinds: Vec<Value> =
                    kinds.into_iter().filter(|kind| kind != "null").collect();
                nullable = true;
                match kinds.len() {
                    0 => {
                        path.push("type".to_owned());
                        return Err(incompat(
                            path,
                            "Gemini cannot express a schema of only `null`",
                        ));
                    }
                    1 => {
                        map.insert("type".to_owned(), kinds.remove(0));
                    }
                    _ => {
                        if map.contains_key("anyOf") {
                            path.push("type".to_owned());
                            return Err(incompat(
                                path,
                                "Gemini cannot express a union of types next to `anyOf`",
                            ));
                        }
                        let branches = kinds.into_iter().map(|kind| json!({"type": kind}));
                        map.insert("anyOf".to_owned(), Value::Array(branches.collect()));
                    }
                }
            }
            kind => {
                map.insert("type".to_owned(), kind);
            }
        }
    }
    if let Some(Value::Array(values)) = map.remove("enum") {
        if values.iter().any(Value::is_null) {
            nullable = true;
        }
        let values: Vec<Value> = values
            .into_iter()
            .filter(|value| !value.is_null())
            .collect();
        // Gemini enums are strings only; dropping another enum only loosens the schema.
        if values.iter().all(Value::is_string) && !values.is_empty() {
            map.insert("enum".to_owned(), Value::Array(values));
            map.entry("type").or_insert_with(|| json!("string"));
        }
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        let before = branches.len();
        branches.retain(|branch| !is_null_only(branch));
        nullable |= branches.len() != before;
        if branches.is_empty() {
            path.push("anyOf".to_owned());
            return Err(incompat(
                path,
                "Gemini cannot express a schema of only `null`",
            ));
        }
    }
    map.retain(|keyword, _| GEMINI_KEYWORDS.contains(&keyword.as_str()));
    if let Some(Value::String(format)) = map.get("format") {
        let kind = map.get("type").and_then(Value::as_str).unwrap_or("");
        let supported = match kind {
            "string" => ["date-time", "enum"].contains(&format.as_str()),
            "integer" => ["int32", "int64"].contains(&format.as_str()),
            "number" => ["float", "double"].contains(&format.as_str()),
            _ => false,
        };
        if !supported {
            map.remove("format");
        }
    }
    visit_subschemas(map, path, &mut gemini_node)?;
    let single = match map.get_mut("anyOf") {
        Some(Value::Array(branches)) if branches.len() == 1 => branches.pop(),
        _ => None,
    };
    if let Some(branch) = single {
        map.remove("anyOf");
        if let Value::Object(branch) = branch {
            for (keyword, value) in branch {
                if keyword == "nullable" {
                    nullable |= value == Value::Bool(true);
                } else {
                    // The field's own keywords (its description) win over the branch's.
                    map.entry(keyword).or_insert(value);
                }
            }
        }
    }
    if nullable || map.get("nullable") == Some(&Value::Bool(true)) {
        map.insert("nullable".to_owned(), Value::Bool(true));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
