//! Tests of tools built with an input schema given at run time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::*;
use crate::codec::FieldError;
use crate::ids::CallIdentity;
use tokio_util::sync::CancellationToken;

fn cx() -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    )
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "count": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["name"],
        "additionalProperties": false
    })
}

/// A tool echoing its input, counting its runs.
fn echo(calls: Arc<AtomicUsize>) -> AnyTool {
    Tool::with_schema("Echoes its input.", schema(), move |input: Value, _cx| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"echo": input}))
        }
    })
    .unwrap()
    .erase()
}

#[tokio::test]
async fn dynamic_schema_is_advertised_and_valid_arguments_run() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = echo(calls.clone());
    assert_eq!(**tool.definition().input_schema(), schema());
    assert_eq!(
        &**tool.definition().input_summary(),
        "count: integer, name: string (required), tags: array"
    );
    let invocation = tool
        .invoke(r#"{"name": "a", "count": "3"}"#.into(), cx())
        .await;
    match invocation.outcome {
        InvocationOutcome::Completed(output) => {
            // The stringified integer was coerced before the executor saw it.
            assert_eq!(
                output.structured,
                json!({"echo": {"name": "a", "count": 3}})
            );
        }
        other => panic!("unexpected outcome {other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn invalid_arguments_give_field_paths_and_never_invoke() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = echo(calls.clone());
    let invocation = tool
        .invoke(
            json!({"count": 0, "tags": ["a", 7], "extra": true}).into(),
            cx(),
        )
        .await;
    match invocation.outcome {
        InvocationOutcome::InvalidInput { reason, message } => {
            let InvalidInput::Fields { errors } = &reason else {
                panic!("expected field errors, got {reason:?}");
            };
            let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
            assert_eq!(paths, ["(root)", "count", "name", "tags[1]"], "{errors:?}");
            assert!(errors.contains(&FieldError {
                path: "name".to_owned(),
                message: "missing field".to_owned(),
            }));
            assert!(errors.contains(&FieldError {
                path: "tags[1]".to_owned(),
                message: "expected string, got number 7".to_owned(),
            }));
            assert!(message.contains("Expected fields: count: integer, name: string (required)"));
        }
        other => panic!("unexpected outcome {other:?}"),
    }
    // Well-formed JSON that serde would take as a `Value` must still be validated.
    let invocation = tool.invoke(json!({"name": ""}).into(), cx()).await;
    assert!(matches!(
        invocation.outcome,
        InvocationOutcome::InvalidInput { .. }
    ));
    let invocation = tool.invoke(r#"{"name": "a""#.into(), cx()).await;
    assert!(matches!(
        invocation.outcome,
        InvocationOutcome::InvalidInput {
            reason: InvalidInput::Syntax { .. },
            ..
        }
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

fn refused(schema: Value) -> String {
    let built = Tool::with_schema("x", schema, |input: Value, _cx| async move { Ok(input) });
    match built {
        Ok(_) => panic!("the schema was accepted"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn bad_schema_is_refused_when_the_tool_is_built() {
    let message = refused(json!({"type": "object", "properties": {"n": {"type": "integr"}}}));
    assert!(
        message.starts_with("invalid input schema: at /properties/n/type"),
        "{message}"
    );
    let message = refused(json!({"type": "object", "properties": {"n": {"pattern": "(["}}}));
    assert!(message.contains("/properties/n/pattern"), "{message}");
    let message = refused(json!("object"));
    assert_eq!(
        message,
        "invalid input schema: the schema must be a JSON object, got string \"object\""
    );
    let message = refused(json!({"type": "string"}));
    assert!(message.contains("`type` must be \"object\""), "{message}");
}

#[test]
fn typed_tools_keep_their_generated_schemas() {
    let tool = Tool::new("x", |input: String, _cx| async move { Ok(input) });
    assert_eq!(tool.definition().input_schema()["type"], "string");
}

#[test]
fn provider_needs_limit_the_providers_a_tool_serves() {
    let any = Tool::new("x", |input: String, _cx| async move { Ok(input) });
    assert_eq!(any.definition().providers, None);
    assert!(any.definition().serves_provider(None));
    assert!(any.definition().serves_provider(Some("openai")));

    let needy = any.clone().with_providers(["opencode", "anthropic"]);
    assert!(needy.definition().serves_provider(None));
    assert!(needy.definition().serves_provider(Some("opencode")));
    assert!(needy.definition().serves_provider(Some("anthropic")));
    assert!(!needy.definition().serves_provider(Some("openai")));
    assert!(!needy.definition().serves_provider(Some("OpenCode")));
    // The builder edits a copy: the original still serves every provider.
    assert!(any.definition().serves_provider(Some("openai")));
    // The erased tool keeps the needs, and they are never advertised.
    let erased = needy.erase();
    assert!(!erased.definition().serves_provider(Some("openai")));
    let advertised = serde_json::to_value(&**erased.definition()).unwrap();
    assert!(advertised.get("providers").is_none(), "{advertised}");
    // An empty list serves no provider once one is chosen.
    let none = any.with_providers(Vec::<String>::new());
    assert!(!none.definition().serves_provider(Some("openai")));
    assert!(none.definition().serves_provider(None));
}

/// How many times [`Counted`]'s schema was generated.
static COUNTED_SCHEMAS: AtomicUsize = AtomicUsize::new(0);

/// An input type that counts the generations of its schema.
#[derive(serde::Deserialize)]
struct Counted {
    #[allow(dead_code)]
    name: String,
}

impl schemars::JsonSchema for Counted {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Counted".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        COUNTED_SCHEMAS.fetch_add(1, Ordering::SeqCst);
        schemars::json_schema!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        })
    }
}

#[test]
fn a_built_tool_generates_its_input_schema_on_first_read_and_once() {
    let tool = Tool::new("Counts.", |_input: Counted, _cx| async { Ok(()) });
    assert_eq!(
        COUNTED_SCHEMAS.load(Ordering::SeqCst),
        0,
        "building a tool must not generate its schema"
    );
    let definition = tool.definition().clone();
    assert_eq!(definition.input_schema()["required"], json!(["name"]));
    assert_eq!(&**definition.input_summary(), "name: string (required)");
    let again = Tool::new("Counts again.", |_input: Counted, _cx| async { Ok(()) });
    assert_eq!(again.definition().input_schema()["type"], "object");
    assert_eq!(COUNTED_SCHEMAS.load(Ordering::SeqCst), 1);
}

/// Generations of [`AheadInput`]'s and [`AheadOutput`]'s schemas.
static AHEAD_INPUT_SCHEMAS: AtomicUsize = AtomicUsize::new(0);
static AHEAD_OUTPUT_SCHEMAS: AtomicUsize = AtomicUsize::new(0);

#[derive(serde::Deserialize)]
struct AheadInput {
    #[allow(dead_code)]
    name: String,
}

impl schemars::JsonSchema for AheadInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AheadInput".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        AHEAD_INPUT_SCHEMAS.fetch_add(1, Ordering::SeqCst);
        schemars::json_schema!({"type": "object", "properties": {"name": {"type": "string"}}})
    }
}

#[derive(serde::Serialize)]
struct AheadOutput {
    done: bool,
}

impl schemars::JsonSchema for AheadOutput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AheadOutput".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        AHEAD_OUTPUT_SCHEMAS.fetch_add(1, Ordering::SeqCst);
        schemars::json_schema!({"type": "object", "properties": {"done": {"type": "boolean"}}})
    }
}

#[test]
fn prepare_for_call_generates_both_schemas_on_another_thread_once() {
    let tool = Tool::new("Ahead.", |_input: AheadInput, _cx| async {
        Ok(AheadOutput { done: true })
    });
    let definition = tool.definition().clone();
    definition.prepare_for_call();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while AHEAD_INPUT_SCHEMAS.load(Ordering::SeqCst) == 0
        || AHEAD_OUTPUT_SCHEMAS.load(Ordering::SeqCst) == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the schemas were not generated ahead"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // Read afterwards, they are the ones made ahead.
    assert_eq!(
        definition.input_schema()["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(
        definition.output_schema()["properties"]["done"]["type"],
        "boolean"
    );
    assert_eq!(AHEAD_INPUT_SCHEMAS.load(Ordering::SeqCst), 1);
    assert_eq!(AHEAD_OUTPUT_SCHEMAS.load(Ordering::SeqCst), 1);
}
