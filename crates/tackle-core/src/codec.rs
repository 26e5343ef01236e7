//! The codec boundary: schemas derived once per type, input decoding with coercion and field
//! paths, and output encoding checked against the output schema.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::standard::{Role, standard_schema};

mod draft;

/// Raw arguments of a provider tool call, exactly as the provider sent them.
///
/// Some providers send arguments as JSON text, others as an already parsed object; both decode
/// through the same codec.
#[derive(Clone, Debug, PartialEq)]
pub enum Arguments {
    /// JSON text, possibly malformed. Empty or blank text means "no arguments" (`{}`).
    Text(String),
    /// An already parsed JSON value.
    Json(Value),
}

impl From<&str> for Arguments {
    fn from(value: &str) -> Self {
        Arguments::Text(value.to_owned())
    }
}

impl From<String> for Arguments {
    fn from(value: String) -> Self {
        Arguments::Text(value)
    }
}

impl From<Value> for Arguments {
    fn from(value: Value) -> Self {
        Arguments::Json(value)
    }
}

/// Why a call's arguments could not be decoded. The tool was not invoked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InvalidInput {
    /// The arguments are not well-formed JSON.
    Syntax {
        /// The parser's description of the problem.
        message: String,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// 0-based byte offset of the problem.
        offset: usize,
    },
    /// The arguments are JSON but do not match the input schema.
    Fields {
        /// Every failing field, in document order.
        errors: Vec<FieldError>,
    },
}

/// One failing field of an argument object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// The field path, such as `edits[2].oldString`; `(root)` for the whole argument object.
    pub path: String,
    /// What is wrong with it, such as `missing field`.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidInput::Syntax {
                message,
                line,
                column,
                offset,
            } => write!(
                f,
                "the arguments are not valid JSON: {message} (line {line}, column {column}, byte {offset})"
            ),
            InvalidInput::Fields { errors } => {
                for (i, error) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    write!(f, "- {error}")?;
                }
                Ok(())
            }
        }
    }
}

/// Why an input schema given at run time was refused when its tool was built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("invalid input schema: {message}")]
pub struct SchemaError {
    /// What is wrong, with the location in the schema when the problem has one (such as
    /// `at /properties/count/type: 7 is not valid under any of the schemas listed in the 'anyOf'
    /// keyword`).
    pub message: String,
}

impl SchemaError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// A type's JSON schema with its compiled validator and a one-line summary.
///
/// A derived schema is generated on first read, not when its tool is built: a process that
/// settles one call generates the schemas of the tool it calls, not those of every tool it
/// registers (generating them all was the largest part of `tackle call`'s start-up).
pub(crate) struct SchemaInfo {
    /// Which side of the codec the schema describes.
    role: Role,
    /// Generates the schema; `None` when it was given at run time and generated at once.
    generate: Option<fn(Role) -> Generated>,
    /// The schema and what is derived from it, generated on first read.
    generated: OnceLock<Generated>,
    /// Validates against the schema as derived, which also accepts `null` for an optional field.
    /// Compiled on first use: a process that settles one call compiles one tool's validator,
    /// not every registered tool's (compiling them all was most of `tackle call`'s start-up).
    validator: OnceLock<jsonschema::Validator>,
}

/// A schema and what is derived from it once.
pub(crate) struct Generated {
    /// The advertised schema: standard keywords only (see `standard.rs`).
    pub(crate) schema: Arc<Value>,
    /// The schema as derived, which the validator is compiled from.
    pub(crate) derived: Value,
    /// True when the schema states constraints that serde does not enforce (ranges, lengths,
    /// patterns...), so a successful serde decode must still be validated.
    pub(crate) has_schema_only_constraints: bool,
    /// `path: string (required), limit: integer`, used in decode errors.
    pub(crate) summary: Arc<str>,
}

impl fmt::Debug for SchemaInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaInfo")
            .field("role", &self.role)
            .field("schema", &self.generated.get().map(|g| &g.schema))
            .finish_non_exhaustive()
    }
}

/// Returns the cached schema information for `T` as a tool's input, generating it on first use.
pub(crate) fn schema_info<T: JsonSchema + 'static>() -> Arc<SchemaInfo> {
    cached::<T>(Role::Input)
}

/// Returns the cached schema information for `T` as a tool's output: derived for serialization,
/// so it describes what serde writes.
pub(crate) fn output_schema_info<T: JsonSchema + 'static>() -> Arc<SchemaInfo> {
    cached::<T>(Role::Output)
}

fn cached<T: JsonSchema + 'static>(role: Role) -> Arc<SchemaInfo> {
    type Cache = Mutex<HashMap<(TypeId, bool), Arc<SchemaInfo>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (TypeId::of::<T>(), role == Role::Output);
    if let Some(info) = cache.lock().expect("schema cache poisoned").get(&key) {
        return info.clone();
    }
    let info = Arc::new(SchemaInfo {
        role,
        generate: Some(SchemaInfo::generate::<T>),
        generated: OnceLock::new(),
        validator: OnceLock::new(),
    });
    cache
        .lock()
        .expect("schema cache poisoned")
        .entry(key)
        .or_insert(info)
        .clone()
}

impl SchemaInfo {
    /// Generates the schema of `T` for `role` now.
    pub(crate) fn generate<T: JsonSchema>(role: Role) -> Generated {
        let started = std::time::Instant::now();
        let settings = schemars::generate::SchemaSettings::default();
        let settings = match role {
            Role::Input => settings.for_deserialize(),
            Role::Output => settings.for_serialize(),
        };
        let derived = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>())
            .expect("a schemars schema always serializes");
        let has_schema_only_constraints = has_schema_only_constraints(&derived);
        let schema = standard_schema(&derived, role);
        let summary = summarize(&schema).into();
        tracing::debug!(
            target: "tackle::schema",
            r#type = std::any::type_name::<T>(),
            elapsed_us = started.elapsed().as_micros() as u64,
            "generated schema"
        );
        Generated {
            schema: Arc::new(schema),
            derived,
            has_schema_only_constraints,
            summary,
        }
    }

    /// The schema and what is derived from it, generated now if this is the first read.
    pub(crate) fn generated(&self) -> &Generated {
        self.generated.get_or_init(|| {
            let generate = self
                .generate
                .expect("a schema given at run time is generated when it is given");
            generate(self.role)
        })
    }

    /// The advertised schema: standard keywords only (see `standard.rs`).
    pub(crate) fn schema(&self) -> &Arc<Value> {
        &self.generated().schema
    }

    /// The top-level fields in one line (`path: string (required), limit: integer`).
    pub(crate) fn summary(&self) -> &Arc<str> {
        &self.generated().summary
    }

    /// Schema information for an input schema given at run time (custom and MCP tools).
    ///
    /// The schema must be a JSON object describing an object (a `type`, when present, must allow
    /// `object`) and must compile. Arguments of such a tool always take the validating path, since
    /// serde accepts any JSON as a `Value`.
    pub(crate) fn dynamic(schema: Value) -> Result<Self, SchemaError> {
        let Some(map) = schema.as_object() else {
            return Err(SchemaError::new(format!(
                "the schema must be a JSON object, got {}",
                describe(&schema)
            )));
        };
        let allows_object = match map.get("type") {
            None => true,
            Some(Value::String(kind)) => kind == "object",
            Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "object"),
            Some(_) => false,
        };
        if !allows_object {
            return Err(SchemaError::new(format!(
                "at /type: tool arguments are a JSON object, so `type` must be \"object\", got {}",
                map["type"]
            )));
        }
        let validator = jsonschema::options().build(&schema).map_err(|error| {
            let location = error.instance_path().to_string();
            let location = if location.is_empty() {
                "/".to_owned()
            } else {
                location
            };
            SchemaError::new(format!("at {location}: {error}"))
        })?;
        let standard = standard_schema(&schema, Role::Input);
        let summary = summarize(&standard).into();
        Ok(Self {
            role: Role::Input,
            generate: None,
            generated: OnceLock::from(Generated {
                schema: Arc::new(standard),
                derived: schema,
                has_schema_only_constraints: true,
                summary,
            }),
            validator: OnceLock::from(validator),
        })
    }

    /// Decodes provider arguments into `T`.
    ///
    /// The fast path lets serde decode the text directly. Only when that fails does the slow path
    /// run: parse, coerce stringified scalars, validate to collect every failing path, decode again.
    pub(crate) fn decode<T: DeserializeOwned>(
        &self,
        arguments: &Arguments,
    ) -> Result<T, InvalidInput> {
        if !self.generated().has_schema_only_constraints {
            let fast = match arguments {
                Arguments::Text(text) => serde_json::from_str::<T>(text).ok(),
                Arguments::Json(value) => T::deserialize(value).ok(),
            };
            if let Some(decoded) = fast {
                return Ok(decoded);
            }
        }
        let mut value = match arguments {
            Arguments::Text(text) if text.trim().is_empty() => Value::Object(Default::default()),
            Arguments::Text(text) => {
                serde_json::from_str::<Value>(text).map_err(|e| syntax_error(text, &e))?
            }
            Arguments::Json(value) => value.clone(),
        };
        let schema = self.schema();
        coerce_scalars(&mut value, schema, schema, 0);
        let errors = self.field_errors(&value);
        if !errors.is_empty() {
            return Err(InvalidInput::Fields { errors });
        }
        serde_path_to_error::deserialize::<_, T>(&value).map_err(|e| InvalidInput::Fields {
            errors: vec![FieldError {
                path: serde_path(e.path()),
                message: e.inner().to_string(),
            }],
        })
    }

    /// Generates `input`'s schema, then `output`'s schema and validator, on a thread of its own,
    /// each when not done yet: in the order a call needs them (host policy reads the input
    /// schema before the call runs; the check follows it). Without the thread (one that could
    /// not start), the call does the work when it gets there, as it would anyway.
    pub(crate) fn prepare_ahead(input: &Arc<Self>, output: &Arc<Self>) {
        let (input, output) = (input.clone(), output.clone());
        drop(
            std::thread::Builder::new()
                .name("tackle-schemas".to_owned())
                .spawn(move || {
                    input.schema();
                    output.validator();
                }),
        );
    }

    /// The compiled validator, compiled now if this is its first use.
    fn validator(&self) -> &jsonschema::Validator {
        self.validator
            .get_or_init(|| draft::validator_for(&self.generated().derived))
    }

    /// Every schema violation of `value`, as field paths and messages. Empty when valid.
    pub(crate) fn field_errors(&self, value: &Value) -> Vec<FieldError> {
        if self.validator().is_valid(value) {
            return Vec::new();
        }
        let mut errors = self
            .validator()
            .iter_errors(value)
            .map(|error| {
                let mut path: Vec<PathSegment> = error
                    .instance_path()
                    .segments()
                    .map(|segment| match segment {
                        LocationSegment::Property(name) => PathSegment::Field(name.into_owned()),
                        LocationSegment::Index(index) => PathSegment::Index(index),
                    })
                    .collect();
                let message = match error.kind() {
                    ValidationErrorKind::Required { property } => {
                        path.push(PathSegment::Field(
                            property.as_str().unwrap_or_default().to_owned(),
                        ));
                        "missing field".to_owned()
                    }
                    ValidationErrorKind::AdditionalProperties { unexpected } => format!(
                        "unknown field{} {}; remove {}",
                        if unexpected.len() == 1 { "" } else { "s" },
                        quote_list(unexpected),
                        if unexpected.len() == 1 { "it" } else { "them" },
                    ),
                    ValidationErrorKind::Type { .. } => {
                        format!(
                            "{}, got {}",
                            expected_of(&error.to_string()),
                            describe(error.instance())
                        )
                    }
                    _ => error.to_string(),
                };
                (path, message)
            })
            .collect::<Vec<_>>();
        // Sort by path (indices numerically) so messages are stable whatever the validator's
        // traversal order.
        errors.sort();
        errors.dedup();
        errors
            .into_iter()
            .map(|(path, message)| FieldError {
                path: render_path(&path),
                message,
            })
            .collect()
    }

    /// Checks an encoded output against this schema.
    pub(crate) fn check_output(&self, value: &Value) -> Result<(), String> {
        if !self.generated().has_schema_only_constraints && self.validator().is_valid(value) {
            return Ok(());
        }
        let errors = self.field_errors(value);
        if errors.is_empty() {
            return Ok(());
        }
        Err(errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum PathSegment {
    Field(String),
    Index(usize),
}

fn render_path(path: &[PathSegment]) -> String {
    if path.is_empty() {
        return "(root)".to_owned();
    }
    let mut out = String::new();
    for segment in path {
        match segment {
            PathSegment::Field(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            PathSegment::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    out
}

fn serde_path(path: &serde_path_to_error::Path) -> String {
    let segments: Vec<PathSegment> = path
        .iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Seq { index } => Some(PathSegment::Index(*index)),
            serde_path_to_error::Segment::Map { key } => Some(PathSegment::Field(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => {
                Some(PathSegment::Field(variant.clone()))
            }
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect();
    render_path(&segments)
}

fn quote_list(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Turns jsonschema's `42 is not of type "string"` into `expected string`, and
/// `is not of types "null", "integer"` into `expected null or integer`.
fn expected_of(message: &str) -> String {
    match message.rsplit_once(" is not of type") {
        Some((_, types)) => {
            let types = types.strip_prefix('s').unwrap_or(types);
            let names: Vec<&str> = types
                .split(',')
                .map(|t| t.trim().trim_matches('"'))
                .collect();
            format!("expected {}", names.join(" or "))
        }
        None => message.to_owned(),
    }
}

/// A short description of a JSON value for error messages: its type, and small scalars verbatim.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.chars().count() <= 40 => format!("string {s:?}"),
        Value::String(_) => "a long string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn syntax_error(text: &str, error: &serde_json::Error) -> InvalidInput {
    let (line, column) = (error.line(), error.column());
    // At end of input the parser points at the last byte it read; the problem is after it.
    let at_end = error.classify() == serde_json::error::Category::Eof;
    let offset = if at_end {
        text.len()
    } else {
        text.split_inclusive('\n')
            .take(line.saturating_sub(1))
            .map(str::len)
            .sum::<usize>()
            + column.saturating_sub(1)
    };
    let message = error.to_string();
    let message = match message.rsplit_once(" at line ") {
        Some((head, _)) => head.to_owned(),
        None => message,
    };
    InvalidInput::Syntax {
        message,
        line,
        column,
        offset: offset.min(text.len()),
    }
}

/// Keywords serde never enforces. A schema carrying any of them needs a validator pass even when
/// serde decodes the input successfully.
const SCHEMA_ONLY_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "contains",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "not",
];

fn has_schema_only_constraints(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            // schemars states integer widths as ranges (`format: uint8`, `minimum: 0`), which
            // serde enforces itself. Only a bound equal to the width's own needs no validator;
            // a user's `#[schemars(range(..))]` lands on the same node and must be checked.
            let width = map
                .get("format")
                .and_then(Value::as_str)
                .and_then(integer_width);
            let own = map.iter().any(|(key, bound)| {
                let natural = match (width, key.as_str()) {
                    (Some((min, _)), "minimum") => bound.as_f64() == Some(min),
                    (Some((_, max)), "maximum") => bound.as_f64() == Some(max),
                    _ => false,
                };
                SCHEMA_ONLY_KEYWORDS.contains(&key.as_str()) && !natural
            });
            own || map.values().any(has_schema_only_constraints)
        }
        Value::Array(items) => items.iter().any(has_schema_only_constraints),
        _ => false,
    }
}

/// The range an integer `format` implies, as schemars writes it.
fn integer_width(format: &str) -> Option<(f64, f64)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN as f64, i64::MAX as f64),
        "int128" => (i128::MIN as f64, i128::MAX as f64),
        "uint8" => (0.0, u8::MAX.into()),
        "uint16" => (0.0, u16::MAX.into()),
        "uint32" => (0.0, u32::MAX.into()),
        "uint64" | "uint" => (0.0, u64::MAX as f64),
        "uint128" => (0.0, u128::MAX as f64),
        _ => return None,
    })
}

/// The scalar kinds a schema node accepts, looking through `$ref`, `anyOf` and `oneOf`.
#[derive(Default, Debug)]
struct Accepts {
    string: bool,
    integer: bool,
    number: bool,
    boolean: bool,
    /// An `enum` or `const` that could accept a string as it is.
    literal: bool,
}

const MAX_SCHEMA_DEPTH: usize = 32;

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..MAX_SCHEMA_DEPTH {
        match current.get("$ref").and_then(Value::as_str) {
            Some(reference) => match reference.strip_prefix('#') {
                Some(pointer) => match root.pointer(pointer) {
                    Some(target) => current = target,
                    None => return current,
                },
                None => return current,
            },
            None => return current,
        }
    }
    current
}

fn accepts(schema: &Value, root: &Value, depth: usize, out: &mut Accepts) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let schema = resolve(schema, root);
    if let Some(Value::Bool(true)) = Some(schema) {
        out.string = true;
        return;
    }
    let Some(map) = schema.as_object() else {
        return;
    };
    if map.contains_key("enum") || map.contains_key("const") {
        out.literal = true;
    }
    let mut mark = |kind: &str| match kind {
        "string" => out.string = true,
        "integer" => out.integer = true,
        "number" => out.number = true,
        "boolean" => out.boolean = true,
        _ => {}
    };
    match map.get("type") {
        Some(Value::String(kind)) => mark(kind),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).for_each(mark),
        _ => {}
    }
    let has_branches = ["anyOf", "oneOf", "allOf"]
        .iter()
        .any(|k| map.contains_key(*k));
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            for branch in branches {
                accepts(branch, root, depth + 1, out);
            }
        }
    }
    // A schema with no type and no branches accepts anything, strings included.
    if !map.contains_key("type") && !has_branches && !out.literal {
        out.string = true;
    }
}

/// Subschemas that describe `key` of an object matched by `schema`.
fn property_schemas<'a>(
    schema: &'a Value,
    root: &'a Value,
    key: &str,
    depth: usize,
    out: &mut Vec<&'a Value>,
) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let schema = resolve(schema, root);
    let Some(map) = schema.as_object() else {
        return;
    };
    if let Some(property) = map.get("properties").and_then(|p| p.get(key)) {
        out.push(property);
    } else if let Some(additional @ Value::Object(_)) = map.get("additionalProperties") {
        out.push(additional);
    }
    for branch_key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(branch_key) {
            for branch in branches {
                property_schemas(branch, root, key, depth + 1, out);
            }
        }
    }
}

fn item_schemas<'a>(schema: &'a Value, root: &'a Value, depth: usize, out: &mut Vec<&'a Value>) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let schema = resolve(schema, root);
    let Some(map) = schema.as_object() else {
        return;
    };
    if let Some(items @ Value::Object(_)) = map.get("items") {
        out.push(items);
    }
    for branch_key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(branch_key) {
            for branch in branches {
                item_schemas(branch, root, depth + 1, out);
            }
        }
    }
}

/// Converts strings to numbers or booleans where the schema accepts only that scalar kind.
///
/// This is the documented coercion for models that stringify scalars (`"limit": "50"`). It never
/// fires where a string is acceptable as it is: a string type, an `enum` or a `const`.
pub(crate) fn coerce_scalars(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    match value {
        Value::String(text) => {
            let mut accepted = Accepts::default();
            accepts(schema, root, 0, &mut accepted);
            if accepted.string || accepted.literal {
                return;
            }
            if accepted.integer {
                if let Ok(n) = text.parse::<i64>() {
                    *value = Value::from(n);
                    return;
                }
                if let Ok(n) = text.parse::<u64>() {
                    *value = Value::from(n);
                    return;
                }
            }
            if accepted.number
                && let Some(n) = text
                    .parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .and_then(serde_json::Number::from_f64)
            {
                *value = Value::Number(n);
                return;
            }
            if accepted.boolean {
                match text.as_str() {
                    "true" => *value = Value::Bool(true),
                    "false" => *value = Value::Bool(false),
                    _ => {}
                }
            }
        }
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                let mut schemas = Vec::new();
                property_schemas(schema, root, key, 0, &mut schemas);
                if let [only] = schemas.as_slice() {
                    coerce_scalars(field, only, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let mut schemas = Vec::new();
            item_schemas(schema, root, 0, &mut schemas);
            if let [only] = schemas.as_slice() {
                for item in items {
                    coerce_scalars(item, only, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// `path: string (required), limit: integer`: the top-level fields of an object schema.
fn summarize(schema: &Value) -> String {
    let root = resolve(schema, schema);
    let Some(properties) = root.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = root
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let property = resolve(property, schema);
            let kind = match property.get("type") {
                Some(Value::String(kind)) => kind.clone(),
                Some(Value::Array(kinds)) => kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|k| *k != "null")
                    .collect::<Vec<_>>()
                    .join("|"),
                _ if property.get("enum").is_some() => "enum".to_owned(),
                _ => "value".to_owned(),
            };
            if required.contains(&name.as_str()) {
                format!("{name}: {kind} (required)")
            } else {
                format!("{name}: {kind}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
