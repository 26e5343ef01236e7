//! Tests of provider schema export, over tools built from derived types.

#![allow(dead_code)]

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::*;
use crate::failure::ToolFailure;
use crate::tool::Tool;

/// A postal address.
#[derive(Deserialize, JsonSchema)]
struct Address {
    /// The street and number.
    street: String,
    /// The postal code, when known.
    zip: Option<String>,
}

/// How to proceed.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Careful,
}

/// A documented unit enum: schemars lists its variants as a `oneOf` of string constants.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Level {
    /// Only errors.
    Quiet,
    /// Everything.
    Loud,
}

/// One edit, tagged by `op`.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Edit {
    /// Inserts a line.
    Insert { line: u32, text: String },
    /// Deletes a line.
    Delete { line: u32 },
}

/// Nested structs, optional fields, string enums and a list of structs.
#[derive(Deserialize, JsonSchema)]
struct Profile {
    /// Who.
    name: String,
    /// How old, if known.
    age: Option<u32>,
    mode: Mode,
    /// An optional enum.
    fallback: Option<Mode>,
    level: Level,
    /// Where they live.
    home: Address,
    /// A second address.
    other: Option<Address>,
    previous: Vec<Address>,
    /// A defaulted, non-optional field.
    #[serde(default)]
    limit: u32,
}

/// Edits under a tagged enum (`oneOf` of objects).
#[derive(Deserialize, JsonSchema)]
struct Batch {
    path: String,
    edits: Vec<Edit>,
}

/// A recursive type at the top.
#[derive(Deserialize, JsonSchema)]
struct Tree {
    name: String,
    children: Vec<Tree>,
}

/// A recursive type below the top.
#[derive(Deserialize, JsonSchema)]
struct Forest {
    tree: Tree,
}

/// No arguments at all.
#[derive(Deserialize, JsonSchema)]
struct Empty {}

/// An object output.
#[derive(Default, Serialize, JsonSchema)]
struct Summary {
    count: u32,
    note: Option<String>,
}

fn definition<I, O>(description: &str) -> ToolDefinition
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + JsonSchema + Default + Send + 'static,
{
    let tool: Tool<I, O> = Tool::new(description.to_owned(), |_input: I, _cx| async {
        Ok::<O, ToolFailure>(O::default())
    });
    (**tool.definition()).clone()
}

fn profile() -> ToolDefinition {
    definition::<Profile, Summary>("Stores a profile.")
}

fn batch() -> ToolDefinition {
    definition::<Batch, String>("Applies edits.")
}

fn tree() -> ToolDefinition {
    definition::<Tree, String>("Plants a tree.")
}

fn forest() -> ToolDefinition {
    definition::<Forest, String>("Plants a forest.")
}

fn all_tools() -> Vec<(&'static str, ToolDefinition)> {
    vec![
        ("profile", profile()),
        ("batch", batch()),
        ("tree", tree()),
        ("forest", forest()),
        ("top_enum", definition::<Mode, String>("Takes a mode.")),
        ("top_tagged", definition::<Edit, String>("Takes one edit.")),
        ("empty", definition::<Empty, Summary>("Does nothing.")),
    ]
}

/// Every object in `value`, wherever it is, with its JSON pointer.
fn walk<'a>(value: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    out.push((path.clone(), value));
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                walk(child, format!("{path}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                walk(child, format!("{path}/{index}"), out);
            }
        }
        _ => {}
    }
}

fn export(provider: Provider, name: &str, definition: &ToolDefinition) -> Value {
    export_tool(provider, name, definition)
        .unwrap_or_else(|error| panic!("{name} should export to {provider}: {error}"))
}

// --- Provider names -------------------------------------------------------------------------

#[test]
fn provider_names_round_trip() {
    for provider in Provider::ALL {
        assert_eq!(provider.to_string().parse::<Provider>(), Ok(provider));
    }
    assert_eq!("OpenAI".parse::<Provider>(), Ok(Provider::OpenAi));
    let error = "claude".parse::<Provider>().unwrap_err();
    assert!(error.to_string().contains("unknown provider `claude`"));
}

#[test]
fn compat_error_display_names_tool_path_and_provider() {
    let error = SchemaCompatError {
        tool: "x".to_owned(),
        provider: Provider::Gemini,
        path: "/properties/a".to_owned(),
        reason: "no".to_owned(),
    };
    assert_eq!(
        error.to_string(),
        "tool `x`: schema path /properties/a: no (provider gemini)"
    );
}

// --- Pure passes ----------------------------------------------------------------------------

#[test]
fn inline_refs_inlines_defs_and_drops_top_metadata() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "T",
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/A", "description": "field doc"},
            "b": {"$ref": "#/definitions/B"},
            "definitions": {"type": "string"}
        },
        "$defs": {"A": {"type": "integer", "description": "type doc"}},
        "definitions": {"B": {"type": "boolean"}}
    });
    let out = inline_refs(&schema).unwrap();
    assert_eq!(
        out,
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "field doc"},
                "b": {"type": "boolean"},
                "definitions": {"type": "string"}
            }
        })
    );
}

#[test]
fn inline_refs_reports_recursion_with_its_path() {
    let schema = json!({
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}
    });
    let error = inline_refs(&schema).unwrap_err();
    assert_eq!(error.path, "/properties/node/properties/next");
    assert!(error.reason.contains("recursive"), "{}", error.reason);

    let root = json!({"type": "object", "properties": {"me": {"$ref": "#"}}});
    assert_eq!(inline_refs(&root).unwrap_err().path, "/properties/me");
}

/// `$defs` where `d0` is an object of two `d1`s, `d1` of two `d2`s, and so on to `d{levels}`.
fn doubling_defs(levels: usize) -> serde_json::Value {
    let mut defs = serde_json::Map::new();
    for level in 0..levels {
        let next = format!("#/$defs/d{}", level + 1);
        defs.insert(
            format!("d{level}"),
            json!({"type": "object", "properties": {"a": {"$ref": next}, "b": {"$ref": next}}}),
        );
    }
    defs.insert(format!("d{levels}"), json!({"type": "string"}));
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs})
}

#[test]
fn inline_refs_refuses_a_schema_that_doubles_per_reference() {
    // 2^40 copies would never finish; 2^5 inline at once.
    assert!(inline_refs(&doubling_defs(5)).is_ok());
    let error = inline_refs(&doubling_defs(40)).unwrap_err();
    assert!(
        error.reason.contains("more than 10000 `$ref`s"),
        "{}",
        error.reason
    );
}

#[test]
fn inline_refs_refuses_a_chain_of_references_nested_past_the_depth_limit() {
    // Each definition nests 100 levels and refers to the next: 50 defs inline to 5,000 levels
    // (more defs, more levels: each stays within serde_json's 128).
    let mut defs = serde_json::Map::new();
    for level in 0..50 {
        let mut inner = json!({"$ref": format!("#/$defs/d{}", level + 1)});
        for _ in 0..100 {
            inner = json!({"type": "array", "items": inner});
        }
        defs.insert(format!("d{level}"), inner);
    }
    defs.insert("d50".to_owned(), json!({"type": "string"}));
    let schema =
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs});
    let error = inline_refs(&schema).unwrap_err();
    assert!(
        error.reason.contains("more than 256 levels"),
        "{}",
        error.reason
    );
}

#[test]
fn inline_refs_ignores_unused_recursive_defs() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "$defs": {"N": {"properties": {"next": {"$ref": "#/$defs/N"}}}}
    });
    assert!(inline_refs(&schema).is_ok());
}

#[test]
fn make_nullable_uses_type_arrays_or_any_of() {
    let mut simple = json!({"type": "integer"});
    make_nullable(&mut simple);
    assert_eq!(simple, json!({"type": ["integer", "null"]}));

    let mut already = json!({"type": ["string", "null"]});
    make_nullable(&mut already);
    assert_eq!(already, json!({"type": ["string", "null"]}));

    let mut enumerated = json!({"type": "string", "enum": ["a"], "description": "d"});
    make_nullable(&mut enumerated);
    assert_eq!(
        enumerated,
        json!({"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}], "description": "d"})
    );
}

#[test]
fn openai_pass_requires_everything_and_closes_objects() {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "minLength": 1, "format": "uri"},
            "b": {"type": "integer", "minimum": 0, "default": 3},
            "c": {"type": "object", "properties": {"d": {"type": "boolean"}}}
        },
        "required": ["a"]
    });
    openai_strict(&mut schema).unwrap();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": ["integer", "null"]},
                "c": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {"d": {"type": ["boolean", "null"]}},
                            "required": ["d"],
                            "additionalProperties": false
                        },
                        {"type": "null"}
                    ]
                }
            },
            "required": ["a", "b", "c"],
            "additionalProperties": false
        })
    );
}

#[test]
fn openai_pass_rejects_maps_and_top_level_combinators() {
    let mut map = json!({
        "type": "object",
        "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}},
        "required": ["env"]
    });
    let error = openai_strict(&mut map).unwrap_err();
    assert_eq!(error.path, "/properties/env/additionalProperties");

    let mut top = json!({"oneOf": [{"type": "object"}]});
    assert_eq!(openai_strict(&mut top).unwrap_err().path, "/oneOf");
}

#[test]
fn anthropic_pass_requires_an_object_at_the_top() {
    let mut fine = json!({"properties": {}});
    anthropic_top(&mut fine).unwrap();
    assert_eq!(fine["type"], "object");

    let mut any_of = json!({"anyOf": [{"type": "object"}, {"type": "null"}]});
    assert_eq!(anthropic_top(&mut any_of).unwrap_err().path, "/anyOf");

    let mut string = json!({"type": "string"});
    assert_eq!(anthropic_top(&mut string).unwrap_err().path, "");
}

#[test]
fn gemini_pass_lowers_nullables_consts_and_keywords() {
    let mut schema = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "a": {"type": ["string", "null"], "format": "uri", "examples": ["x"]},
            "b": {"const": "fixed"},
            "c": {"anyOf": [{"type": "object", "properties": {"d": {"type": "integer", "format": "uint32", "minimum": 0}}}, {"type": "null"}], "description": "c doc"},
            "e": {"type": "integer", "enum": [1, 2]},
            "f": {"enum": ["x", null]},
            "g": {"type": ["string", "integer"]}
        },
        "required": ["b"]
    });
    gemini(&mut schema).unwrap();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "nullable": true},
                "b": {"type": "string", "enum": ["fixed"]},
                "c": {
                    "type": "object",
                    "description": "c doc",
                    "nullable": true,
                    "properties": {"d": {"type": "integer", "minimum": 0}}
                },
                "e": {"type": "integer"},
                "f": {"type": "string", "enum": ["x"], "nullable": true},
                "g": {"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true}
            },
            "required": ["b"]
        })
    );
}

#[test]
fn gemini_pass_rejects_tuples_pattern_properties_and_object_one_of() {
    let mut tuple = json!({"type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}]}}});
    assert_eq!(
        gemini(&mut tuple).unwrap_err().path,
        "/properties/t/prefixItems"
    );

    let mut pattern = json!({"type": "object", "properties": {"p": {"type": "object", "patternProperties": {"^x": {}}}}});
    assert_eq!(
        gemini(&mut pattern).unwrap_err().path,
        "/properties/p/patternProperties"
    );

    let mut one_of = json!({"type": "object", "properties": {"o": {"oneOf": [{"const": "a"}, {"type": "object", "properties": {}}]}}});
    assert_eq!(
        gemini(&mut one_of).unwrap_err().path,
        "/properties/o/oneOf/1"
    );
}

// --- Real tools -----------------------------------------------------------------------------

#[test]
fn openai_export_requires_all_properties_and_makes_optionals_nullable() {
    let tool = export(Provider::OpenAi, "profile", &profile());
    assert_eq!(tool["type"], "function");
    let function = &tool["function"];
    assert_eq!(function["name"], "profile");
    assert_eq!(function["description"], "Stores a profile.");
    assert_eq!(function["strict"], true);
    let parameters = &function["parameters"];
    assert_eq!(parameters["additionalProperties"], false);
    assert!(parameters.get("$schema").is_none());
    assert!(parameters.get("$defs").is_none());
    assert!(parameters.get("title").is_none());
    let properties = parameters["properties"].as_object().unwrap();
    let required: Vec<&str> = parameters["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
    names.sort_unstable();
    let mut sorted = required.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "every property is required");

    // Optional fields accept null; required ones do not.
    assert!(accepts_null(&properties["age"]), "{}", properties["age"]);
    assert!(accepts_null(&properties["fallback"]));
    assert!(accepts_null(&properties["other"]));
    assert!(accepts_null(&properties["limit"]));
    assert!(!accepts_null(&properties["name"]));
    assert!(!accepts_null(&properties["mode"]));
    assert!(!accepts_null(&properties["home"]));
    assert!(properties["age"].get("format").is_none());
    assert!(properties["age"].get("minimum").is_none());

    // Nested objects are inlined and closed, with their own fields all required.
    let home = &properties["home"];
    assert_eq!(home["type"], "object");
    assert_eq!(home["additionalProperties"], false);
    assert_eq!(home["required"], json!(["street", "zip"]));
    assert!(accepts_null(&home["properties"]["zip"]));
    let item = &properties["previous"]["items"];
    assert_eq!(item["additionalProperties"], false);
    assert_eq!(item["properties"]["street"]["type"], "string");
}

#[test]
fn openai_export_turns_tagged_enums_into_closed_any_of_branches() {
    let tool = export(Provider::OpenAi, "batch", &batch());
    let items = &tool["function"]["parameters"]["properties"]["edits"]["items"];
    assert!(items.get("oneOf").is_none());
    let branches = items["anyOf"].as_array().unwrap();
    assert_eq!(branches.len(), 2);
    for branch in branches {
        assert_eq!(branch["additionalProperties"], false);
        assert!(
            branch["required"]
                .as_array()
                .unwrap()
                .contains(&json!("op"))
        );
    }
}

#[test]
fn no_exported_openai_schema_has_a_ref_anywhere() {
    let tools = all_tools();
    let (exported, _errors) = export_tools(
        Provider::OpenAi,
        tools.iter().map(|(name, definition)| (*name, definition)),
    );
    assert!(exported.len() >= 3, "{exported:#?}");
    for tool in &exported {
        let mut nodes = Vec::new();
        walk(tool, String::new(), &mut nodes);
        for (path, node) in nodes {
            if let Value::Object(map) = node {
                assert!(!map.contains_key("$ref"), "`$ref` at {path}");
                assert!(!map.contains_key("$defs"), "`$defs` at {path}");
                let object = match map.get("type") {
                    Some(Value::String(kind)) => kind == "object",
                    Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
                    _ => false,
                };
                if object {
                    assert_eq!(map["additionalProperties"], false, "at {path}");
                }
            }
        }
    }
}

#[test]
fn anthropic_export_has_an_object_at_the_top() {
    let tool = export(Provider::Anthropic, "profile", &profile());
    assert_eq!(tool["name"], "profile");
    assert_eq!(tool["description"], "Stores a profile.");
    let schema = &tool["input_schema"];
    assert_eq!(schema["type"], "object");
    assert!(schema.get("$defs").is_none());
    assert_eq!(schema["properties"]["home"]["type"], "object");
    // Anthropic keeps optional fields optional.
    let required = schema["required"].as_array().unwrap();
    assert!(!required.contains(&json!("age")));
}

#[test]
fn anthropic_export_rejects_top_level_enums() {
    let error = export_tool(
        Provider::Anthropic,
        "top_enum",
        &definition::<Mode, String>("Takes a mode."),
    )
    .unwrap_err();
    assert_eq!(error.tool, "top_enum");
    assert_eq!(error.provider, Provider::Anthropic);
    assert_eq!(error.path, "");

    let error = export_tool(
        Provider::Anthropic,
        "top_tagged",
        &definition::<Edit, String>("Takes one edit."),
    )
    .unwrap_err();
    assert_eq!(error.path, "/oneOf");
    assert!(error.to_string().contains("(provider anthropic)"));
}

#[test]
fn gemini_export_lowers_nullables_and_enums() {
    let tool = export(Provider::Gemini, "profile", &profile());
    assert_eq!(tool["name"], "profile");
    let parameters = &tool["parameters"];
    assert_eq!(parameters["type"], "object");
    let properties = &parameters["properties"];
    // Optional fields are plainly optional in the advertised schema, so not nullable here.
    assert_eq!(properties["age"]["type"], "integer");
    assert!(properties["age"].get("nullable").is_none());
    assert!(
        properties["age"].get("format").is_none(),
        "uint32 is not a Gemini format"
    );
    assert_eq!(properties["other"]["type"], "object");
    assert!(properties["other"].get("nullable").is_none());
    assert_eq!(properties["other"]["description"], "A second address.");
    assert_eq!(properties["fallback"]["enum"], json!(["fast", "careful"]));
    assert!(properties["fallback"].get("nullable").is_none());
    assert_eq!(properties["level"]["type"], "string");
    assert_eq!(properties["level"]["enum"], json!(["quiet", "loud"]));
    assert!(
        properties["home"]["properties"]["zip"]
            .get("nullable")
            .is_none()
    );
    let required = parameters["required"].as_array().unwrap();
    assert!(!required.contains(&json!("age")) && required.contains(&json!("name")));
    let mut nodes = Vec::new();
    walk(parameters, String::new(), &mut nodes);
    for (path, node) in nodes {
        if let Value::Object(map) = node {
            for keyword in ["$ref", "const", "oneOf", "additionalProperties", "default"] {
                if !path.contains("/properties") || !path.ends_with("/properties") {
                    assert!(!map.contains_key(keyword), "`{keyword}` at {path}");
                }
            }
            if let Some(kind) = map.get("type") {
                assert!(kind.is_string(), "type array at {path}");
            }
        }
    }
}

#[test]
fn gemini_export_rejects_one_of_objects_and_still_exports_the_rest() {
    let tools = all_tools();
    let (exported, errors) = export_tools(
        Provider::Gemini,
        tools.iter().map(|(name, definition)| (*name, definition)),
    );
    let names: Vec<&str> = exported
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["profile", "empty"]);
    let batch = errors.iter().find(|error| error.tool == "batch").unwrap();
    assert_eq!(batch.path, "/properties/edits/items/oneOf/0");
    assert_eq!(batch.provider, Provider::Gemini);
    assert!(
        batch
            .to_string()
            .starts_with("tool `batch`: schema path /properties/edits/items/oneOf/0: "),
        "{batch}"
    );
    let failed: Vec<&str> = errors.iter().map(|error| error.tool.as_str()).collect();
    assert_eq!(
        failed,
        ["batch", "tree", "forest", "top_enum", "top_tagged"]
    );
    // A tool without arguments is declared without parameters.
    assert!(exported[1].get("parameters").is_none());
}

#[test]
fn recursive_types_are_errors_not_stack_overflows() {
    for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        for (name, definition) in [("tree", tree()), ("forest", forest())] {
            let error = export_tool(provider, name, &definition).unwrap_err();
            assert!(error.reason.contains("recursive"), "{error}");
        }
    }
    let error = export_tool(Provider::OpenAi, "forest", &forest()).unwrap_err();
    assert_eq!(error.path, "/properties/tree/properties/children/items");
}

#[test]
fn mcp_export_includes_an_object_output_schema() {
    let tool = export(Provider::Mcp, "profile", &profile());
    assert_eq!(tool["name"], "profile");
    assert_eq!(tool["inputSchema"]["type"], "object");
    assert!(tool["inputSchema"].get("$defs").is_none());
    assert!(tool["inputSchema"].get("$schema").is_none());
    // MCP keeps the schema as JSON Schema: optional fields stay optional.
    assert!(
        !tool["inputSchema"]["required"]
            .as_array()
            .unwrap()
            .contains(&json!("age"))
    );
    let output = &tool["outputSchema"];
    assert_eq!(output["type"], "object");
    assert_eq!(output["properties"]["count"]["type"], "integer");

    let text_output = export(Provider::Mcp, "batch", &batch());
    assert!(text_output.get("outputSchema").is_none());
}

#[test]
fn mcp_export_keeps_recursive_schemas_with_their_defs() {
    let tool = export(Provider::Mcp, "forest", &forest());
    assert!(tool["inputSchema"].get("$defs").is_some());
    assert!(tool["inputSchema"].get("$schema").is_none());
}

#[test]
fn restore_absent_fields_drops_nulls_of_optional_non_nullable_fields() {
    let definition = profile();
    let mut arguments = json!({
        "name": "ada",
        "age": null,
        "mode": "fast",
        "fallback": null,
        "level": "quiet",
        "home": {"street": "Main", "zip": null},
        "other": null,
        "previous": [{"street": "Old", "zip": null}],
        "limit": null
    });
    restore_absent_fields(definition.input_schema(), &mut arguments);
    // `limit` is `#[serde(default)] u32`: its null means absent. The `Option`s accept null.
    assert!(arguments.get("limit").is_none(), "{arguments}");
    assert_eq!(arguments["age"], Value::Null);
    assert_eq!(arguments["other"], Value::Null);
    assert_eq!(arguments["home"]["zip"], Value::Null);

    // A null in a required field stays for the codec to report.
    let mut required = json!({"name": null});
    restore_absent_fields(definition.input_schema(), &mut required);
    assert_eq!(required, json!({"name": null}));

    // Recursive schemas are followed only as deep as the arguments go.
    let tree = tree();
    let mut nested = json!({"name": "a", "children": [{"name": "b", "children": []}]});
    let before = nested.clone();
    restore_absent_fields(tree.input_schema(), &mut nested);
    assert_eq!(nested, before);
}

#[test]
fn openai_round_trip_decodes_with_the_original_codec() {
    // What an OpenAI strict model sends for the profile: every field, absent ones as null.
    let mut arguments = json!({
        "name": "ada", "age": null, "mode": "careful", "fallback": null, "level": "loud",
        "home": {"street": "Main", "zip": null}, "other": null, "previous": [], "limit": null
    });
    restore_absent_fields(profile().input_schema(), &mut arguments);
    let profile: Profile = serde_json::from_value(arguments).unwrap();
    assert_eq!(profile.limit, 0);
}

#[test]
fn mcp_export_requires_an_object_input() {
    let error = export_tool(
        Provider::Mcp,
        "top_enum",
        &definition::<Mode, String>("Takes a mode."),
    )
    .unwrap_err();
    assert_eq!(error.path, "");
    assert_eq!(error.provider, Provider::Mcp);

    // A tagged enum of objects is an object: it gets `type: object` next to its `oneOf`.
    let tagged = export(
        Provider::Mcp,
        "top_tagged",
        &definition::<Edit, String>("Takes one edit."),
    );
    assert_eq!(tagged["inputSchema"]["type"], "object");
    assert_eq!(tagged["inputSchema"]["oneOf"].as_array().unwrap().len(), 2);
}
