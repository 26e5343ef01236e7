//! Provider dialects: a turn knows the dialect it was exported for, leaves out what the dialect
//! cannot express and undoes the dialect's changes to arguments; and every built-in's schemas,
//! in every export, use keywords the dialect's clients accept.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tackle::{Harness, cx};
use tackle_builtins::tools::{CustomCommand, CustomSource, Skill};
use tackle_builtins::{
    Answer, AskFuture, CustomCatalog, CustomManifest, LocationFs, Question, QuestionAsker,
    RunFuture, SkillCatalog, SubagentReport, SubagentRequest, SubagentRunner, SubagentStatus,
    ToolEnv, TrustMode, WebSearchConfig, agent_tools, custom_tools, file_tools, search_tools,
    shell_tools, skill_tools, task_tools, web_tools,
};
use tackle_core::{
    CancellationToken, GEMINI_KEYWORDS, OPENAI_DROPPED, Provider, Tool, ToolDefinition, ToolFailure,
};
use tackle_permission::{PresetContext, preset, presets};
use tackle_registry::{
    AllTools, BatchOptions, ModelErrorKind, Outcome, Registration, ToolCall, ToolSet, Turn,
    batch_tool,
};

/// Arguments with an optional field that does not decode from `null`.
#[derive(Debug, Deserialize, JsonSchema)]
struct Page {
    /// The file.
    path: String,
    /// How many lines; absent means all.
    #[serde(default)]
    limit: u32,
    /// Where to start.
    offset: Option<u32>,
}

/// Arguments OpenAI strict mode cannot express: a map with free-form keys.
#[derive(Debug, Deserialize, JsonSchema)]
struct Env {
    vars: HashMap<String, String>,
}

#[tokio::test]
async fn an_openai_turn_reads_null_for_an_optional_field_as_absent() {
    let h = Harness::new();
    let location = h.location("/ws");
    let page = Tool::new("Reads a page.", |input: Page, _cx| async move {
        Ok::<_, ToolFailure>(format!("{} {} {:?}", input.path, input.limit, input.offset))
    });
    let _registration = location
        .register(ToolSet::new().with("page", page))
        .unwrap();

    let openai = location.materialize_for(Provider::OpenAi, AllTools);
    assert_eq!(openai.dialect(), Some(Provider::OpenAi));
    // What the model is told: every field required, the optional ones nullable.
    let exported = openai.export();
    let parameters = &exported[0]["function"]["parameters"];
    assert_eq!(parameters["required"], json!(["limit", "offset", "path"]));
    assert_eq!(
        parameters["properties"]["limit"]["type"],
        json!(["integer", "null"])
    );
    // What the model then sends is read back as the tool expects it.
    let arguments = r#"{"path": "a.rs", "limit": null, "offset": null}"#;
    let s = openai
        .settle(cx("c1"), ToolCall::new("page", arguments))
        .await;
    let Outcome::Success(output) = &s.outcome else {
        panic!("{:?}", s.outcome);
    };
    assert_eq!(output.content[0].as_text(), Some("a.rs 0 None"));

    // Without the dialect, `null` is not a `u32`: the model is told how to fix the call.
    let plain = location.materialize(AllTools);
    let s = plain
        .settle(cx("c2"), ToolCall::new("page", arguments))
        .await;
    let Outcome::Error(error) = &s.outcome else {
        panic!("{:?}", s.outcome);
    };
    assert_eq!(error.kind, ModelErrorKind::Invalid);
    assert!(
        error.text().contains("limit: expected integer, got null"),
        "{}",
        error.text()
    );
}

#[tokio::test]
async fn a_tool_the_dialect_cannot_express_is_left_out_of_the_turn() {
    let h = Harness::new();
    let location = h.location("/ws");
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let env = Tool::new("Sets variables.", move |input: Env, _cx| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolFailure>(input.vars.len().to_string()) }
    });
    let _registration = location.register(ToolSet::new().with("env", env)).unwrap();

    let turn = location.materialize_for(Provider::OpenAi, AllTools);
    assert!(turn.get("env").is_none());
    assert!(turn.export().is_empty());
    let [error] = turn.incompatible() else {
        panic!("{:?}", turn.incompatible());
    };
    assert_eq!(
        (error.tool.as_str(), error.provider),
        ("env", Provider::OpenAi)
    );
    assert_eq!(error.path, "/properties/vars/additionalProperties");
    assert!(error.reason.contains("free-form keys"), "{}", error.reason);
    // A call to it is a call to a tool the turn did not offer: nothing runs.
    let s = turn
        .settle(
            cx("c1"),
            ToolCall::new("env", r#"{"vars": {"A": "1"}, "_": null}"#),
        )
        .await;
    assert_eq!(s.outcome.kind(), tackle_core::OutcomeKind::Unknown);
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // Dialects that can express it keep it.
    for provider in [Provider::Anthropic, Provider::Gemini, Provider::Mcp] {
        let turn = location.materialize_for(provider, AllTools);
        assert!(turn.get("env").is_some(), "{provider}");
        assert!(turn.incompatible().is_empty(), "{provider}");
    }
}

// ---------------------------------------------------------------------------------------------
// Every built-in, every export

/// The formats ajv-formats defines; a client validating with ajv warns about any other.
const AJV_FORMATS: &[&str] = &[
    "date",
    "time",
    "date-time",
    "iso-time",
    "iso-date-time",
    "duration",
    "uri",
    "uri-reference",
    "uri-template",
    "url",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "regex",
    "uuid",
    "json-pointer",
    "json-pointer-uri-fragment",
    "relative-json-pointer",
    "byte",
    "int32",
    "int64",
    "float",
    "double",
    "password",
    "binary",
];

struct NoAnswers;

impl QuestionAsker for NoAnswers {
    fn ask<'a>(&'a self, _: &'a str, _: &'a [Question]) -> AskFuture<'a> {
        Box::pin(async { Answer::Dismissed })
    }
}

struct NoSubagents;

impl SubagentRunner for NoSubagents {
    fn run<'a>(&'a self, request: SubagentRequest, _: CancellationToken) -> RunFuture<'a> {
        Box::pin(async move {
            SubagentReport {
                task_id: request.parent_call,
                status: SubagentStatus::Completed,
                text: String::new(),
                detail: None,
            }
        })
    }
}

/// Every built-in the runtime offers, registered as the CLI registers them, plus the optional
/// ones a host may add (question, task, skill, websearch, codesearch, a custom tool) and `batch`.
fn builtins(h: &Harness, root: &std::path::Path) -> (tackle_registry::Location, Registration) {
    let env = ToolEnv::new(LocationFs::new(root).unwrap());
    let context = PresetContext::default();
    let skills = SkillCatalog {
        skills: vec![Skill {
            name: "review".to_owned(),
            description: "Reviews a change.".to_owned(),
            dir: root.join("skills/review"),
            body: "Read the diff.".to_owned(),
        }],
        warnings: Vec::new(),
    };
    let custom = CustomCatalog {
        tools: vec![CustomManifest {
            name: "deploy".to_owned(),
            description: "Deploys.".to_owned(),
            input: json!({
                "type": "object",
                "properties": {
                    "env": {"type": ["string", "null"], "default": null, "format": "uint"},
                    "count": {"type": "integer", "format": "uint16", "minimum": 0}
                },
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "Deploy"
            }),
            command: CustomCommand::Argv(vec!["true".to_owned()]),
            timeout: Duration::from_secs(5),
            cwd: None,
            providers: None,
            path: PathBuf::from("/ws/.tackle/tools/deploy.json"),
            source: CustomSource::User,
            hash: "0".repeat(64),
        }],
        warnings: Vec::new(),
    };
    let mut tools: Vec<(String, tackle_core::AnyTool)> = file_tools(&env)
        .into_iter()
        .chain(search_tools(&env))
        .chain(shell_tools(&env))
        .chain(agent_tools(&env, Some(Arc::new(NoAnswers))))
        .chain(web_tools(
            &env,
            Some(WebSearchConfig::new("http://127.0.0.1:9/search")),
        ))
        .chain(skill_tools(&env, skills))
        .chain(task_tools(
            &env,
            Arc::new(NoSubagents),
            presets(&context),
            preset("build", &context).unwrap().rules,
        ))
        .map(|(name, tool)| (name.to_owned(), tool))
        .collect();
    tools.extend(custom_tools(&env, &custom, TrustMode::TrustAll));
    tools.push(("batch".to_owned(), batch_tool(BatchOptions::default())));
    let location = h.location(root.to_str().unwrap());
    let registration = location
        .register(tools.into_iter().collect::<ToolSet>())
        .unwrap();
    (location, registration)
}

/// Calls `visit(path, schema)` on `schema` and every subschema in it, by keyword position (a
/// property *named* `title` is not the `title` keyword).
fn walk(schema: &Value, path: &str, visit: &mut dyn FnMut(&str, &Map<String, Value>)) {
    let Value::Object(map) = schema else {
        return;
    };
    visit(path, map);
    for (keyword, value) in map {
        let here = format!("{path}/{keyword}");
        match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                for (name, child) in value.as_object().into_iter().flatten() {
                    walk(child, &format!("{here}/{name}"), visit);
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                for (i, child) in value.as_array().into_iter().flatten().enumerate() {
                    walk(child, &format!("{here}/{i}"), visit);
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties" => walk(value, &here, visit),
            _ => {}
        }
    }
}

fn required(map: &Map<String, Value>) -> BTreeSet<String> {
    map.get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect()
}

fn is_null_only(schema: &Value) -> bool {
    schema.get("type") == Some(&json!("null")) || schema.get("const") == Some(&Value::Null)
}

/// The standard-keywords rules every schema follows in every export: known formats only, no
/// `$schema` or `title`, and optional properties that are plainly optional unless `nullable`
/// is the dialect's own form (OpenAI strict).
fn standard_problems(schema: &Value, optional_may_be_null: bool) -> Vec<String> {
    let mut problems = Vec::new();
    walk(schema, "", &mut |path, map| {
        if let Some(format) = map.get("format") {
            let known = format.as_str().is_some_and(|f| AJV_FORMATS.contains(&f));
            if !known {
                problems.push(format!("{path}: unknown format {format}"));
            }
        }
        for keyword in ["$schema", "title", "$id", "$comment"] {
            if map.contains_key(keyword) {
                problems.push(format!("{path}: `{keyword}`"));
            }
        }
        if optional_may_be_null {
            return;
        }
        let required = required(map);
        for (name, property) in map
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if required.contains(name) {
                continue;
            }
            let nullable_type = property
                .get("type")
                .and_then(Value::as_array)
                .is_some_and(|kinds| kinds.contains(&json!("null")));
            let null_branch = ["anyOf", "oneOf"].iter().any(|keyword| {
                property
                    .get(*keyword)
                    .and_then(Value::as_array)
                    .is_some_and(|branches| branches.iter().any(is_null_only))
            });
            let null_default = property.get("default") == Some(&Value::Null);
            let nullable = property.get("nullable") == Some(&Value::Bool(true));
            if nullable_type || null_branch || null_default || nullable {
                problems.push(format!(
                    "{path}/properties/{name}: optional but nullable: {property}"
                ));
            }
        }
    });
    problems
}

/// MCP: an input schema is an object with `properties`.
fn mcp_problems(input: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if input.get("type") != Some(&json!("object")) {
        problems.push(format!("inputSchema is not `type: object`: {input}"));
    }
    if !input.get("properties").is_some_and(Value::is_object) {
        problems.push("inputSchema has no `properties`".to_owned());
    }
    problems
}

/// OpenAI strict mode: an object at the top; every object closed with every property required;
/// none of the keywords strict mode rejects.
fn openai_problems(function: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if function["strict"] != json!(true) {
        problems.push("not strict".to_owned());
    }
    let parameters = &function["parameters"];
    if parameters.get("type") != Some(&json!("object")) {
        problems.push("parameters are not an object".to_owned());
    }
    walk(parameters, "", &mut |path, map| {
        for keyword in OPENAI_DROPPED.iter().chain(&[
            "oneOf",
            "allOf",
            "prefixItems",
            "patternProperties",
            "$ref",
        ]) {
            if map.contains_key(*keyword) {
                problems.push(format!("{path}: `{keyword}`"));
            }
        }
        let object = map.get("type") == Some(&json!("object"))
            || map
                .get("type")
                .and_then(Value::as_array)
                .is_some_and(|kinds| kinds.contains(&json!("object")));
        if object {
            if map.get("additionalProperties") != Some(&Value::Bool(false)) {
                problems.push(format!(
                    "{path}: object without additionalProperties: false"
                ));
            }
            let properties: BTreeSet<String> = map
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            if map.get("properties").is_none() || required(map) != properties {
                problems.push(format!("{path}: not every property is required"));
            }
        }
    });
    problems.extend(standard_problems(parameters, true));
    problems
}

/// Anthropic: `input_schema` is `type: object` with no combinator at the top.
fn anthropic_problems(tool: &Value) -> Vec<String> {
    let input = &tool["input_schema"];
    let mut problems = Vec::new();
    if input.get("type") != Some(&json!("object")) {
        problems.push("input_schema is not `type: object`".to_owned());
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if input.get(keyword).is_some() {
            problems.push(format!("`{keyword}` at the top"));
        }
    }
    problems.extend(standard_problems(input, false));
    problems
}

/// Gemini: only the OpenAPI subset's keywords, single types, and its own formats.
fn gemini_problems(tool: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(parameters) = tool.get("parameters") else {
        return problems;
    };
    walk(parameters, "", &mut |path, map| {
        for keyword in map.keys() {
            if !GEMINI_KEYWORDS.contains(&keyword.as_str()) {
                problems.push(format!("{path}: `{keyword}`"));
            }
        }
        if map.get("type").is_some_and(|kind| !kind.is_string()) {
            problems.push(format!("{path}: a type array"));
        }
        if let Some(format) = map.get("format").and_then(Value::as_str)
            && !["date-time", "enum", "int32", "int64", "float", "double"].contains(&format)
        {
            problems.push(format!("{path}: format {format}"));
        }
    });
    problems.extend(standard_problems(parameters, true));
    problems
}

/// Which (tool, dialect) pairs the dialect cannot express, and the schema path of each.
fn incompatible(turns: &[(Provider, Turn)]) -> BTreeSet<(String, String, String)> {
    turns
        .iter()
        .flat_map(|(provider, turn)| {
            turn.incompatible().iter().map(move |error| {
                assert!(!error.reason.is_empty());
                (error.tool.clone(), provider.to_string(), error.path.clone())
            })
        })
        .collect()
}

#[test]
fn every_builtin_schema_is_accepted_in_every_export() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::new();
    let (location, _registration) = builtins(&h, dir.path());
    let canonical = location.materialize(AllTools);
    let names: Vec<&str> = canonical.tools().iter().map(|tool| tool.name()).collect();
    assert_eq!(names.len(), 20, "{names:?}");
    let mut problems: Vec<String> = Vec::new();
    let mut report = |tool: &str, export: &str, found: Vec<String>| {
        problems.extend(found.into_iter().map(|p| format!("{tool} ({export}): {p}")));
    };

    // What `tackle serve` lists and `tackle tools --json` prints: the definitions themselves.
    for advertised in canonical.tools() {
        let definition: &ToolDefinition = advertised.definition();
        let name = advertised.name();
        report(name, "inputSchema", mcp_problems(definition.input_schema()));
        report(
            name,
            "inputSchema",
            standard_problems(definition.input_schema(), false),
        );
        report(
            name,
            "outputSchema",
            standard_problems(definition.output_schema(), false),
        );
    }
    for listed in canonical.export() {
        let name = listed["name"].as_str().unwrap().to_owned();
        report(&name, "mcp", mcp_problems(&listed["inputSchema"]));
        report(
            &name,
            "mcp",
            standard_problems(&listed["inputSchema"], false),
        );
        if let Some(output) = listed.get("outputSchema") {
            report(&name, "mcp output", standard_problems(output, false));
        }
    }

    let turns: Vec<(Provider, Turn)> = [Provider::OpenAi, Provider::Anthropic, Provider::Gemini]
        .into_iter()
        .map(|provider| (provider, location.materialize_for(provider, AllTools)))
        .collect();
    for (provider, turn) in &turns {
        let exported = turn.export();
        assert_eq!(exported.len(), turn.tools().len());
        for tool in &exported {
            let (name, found) = match provider {
                Provider::OpenAi => (
                    &tool["function"]["name"],
                    openai_problems(&tool["function"]),
                ),
                Provider::Anthropic => (&tool["name"], anthropic_problems(tool)),
                Provider::Gemini => (&tool["name"], gemini_problems(tool)),
                Provider::Mcp => unreachable!(),
            };
            report(name.as_str().unwrap(), provider.as_str(), found);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // Only `batch`'s free-form parameters are beyond OpenAI strict mode; everything else
    // exports everywhere.
    assert_eq!(
        incompatible(&turns),
        BTreeSet::from([(
            "batch".to_owned(),
            "openai".to_owned(),
            "/properties/tool_calls/items/properties/parameters/additionalProperties".to_owned(),
        )])
    );
}
