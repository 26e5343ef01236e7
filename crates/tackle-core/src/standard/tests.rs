//! Tests of the advertised schema: standard keywords only, plainly optional fields, and
//! `properties` on every input object.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::codec::{output_schema_info, schema_info};

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Inner {
    /// A name.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Mode {
    Fast,
    Slow,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Arguments {
    /// The path.
    path: String,
    /// How many lines.
    #[serde(default)]
    limit: Option<u32>,
    /// Where to start.
    #[serde(default)]
    offset: usize,
    big: u64,
    small: u16,
    signed: i64,
    ratio: f64,
    inner: Option<Inner>,
    mode: Option<Mode>,
    list: Vec<Option<u8>>,
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

#[derive(Serialize, JsonSchema)]
struct Output {
    total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    always: Option<String>,
}

/// Every `format` anywhere in `schema`.
fn formats(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format") {
                out.push(format.clone());
            }
            map.values().for_each(|value| formats(value, out));
        }
        Value::Array(items) => items.iter().for_each(|item| formats(item, out)),
        _ => {}
    }
}

#[test]
fn integer_formats_become_a_minimum_and_optional_fields_are_plainly_optional() {
    let info = schema_info::<Arguments>();
    let schema = info.schema();
    let mut found = Vec::new();
    formats(schema, &mut found);
    assert!(found.is_empty(), "formats left: {found:?}");
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    assert!(schema.get("$defs").is_none(), "refs are inlined: {schema}");
    let properties = &schema["properties"];
    assert_eq!(
        properties["limit"],
        json!({"type": "integer", "minimum": 0, "description": "How many lines."})
    );
    assert_eq!(properties["offset"]["minimum"], json!(0));
    assert_eq!(properties["offset"]["default"], json!(0));
    assert_eq!(properties["big"], json!({"type": "integer", "minimum": 0}));
    assert_eq!(properties["small"]["maximum"], json!(65535));
    assert_eq!(properties["signed"], json!({"type": "integer"}));
    assert_eq!(properties["ratio"], json!({"type": "number"}));
    assert_eq!(properties["inner"]["type"], json!("object"));
    assert!(properties["inner"].get("anyOf").is_none());
    assert_eq!(properties["mode"]["enum"], json!(["Fast", "Slow"]));
    // Only optional *properties* lose `null`: an item may still be null.
    assert_eq!(
        properties["list"]["items"]["type"],
        json!(["integer", "null"])
    );
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    assert!(!required.contains(&"limit") && required.contains(&"path"));
}

#[test]
fn null_for_an_optional_field_still_decodes_as_absent() {
    let info = schema_info::<Arguments>();
    let arguments = json!({
        "path": "a", "limit": null, "big": 1, "small": 2, "signed": -3, "ratio": 0.5,
        "inner": null, "mode": null, "list": [null, 1]
    });
    let decoded: Arguments = info.decode(&arguments.into()).unwrap();
    assert_eq!(decoded.limit, None);
}

#[test]
fn an_empty_input_object_has_properties() {
    let info = schema_info::<Empty>();
    assert_eq!(info.schema()["type"], json!("object"));
    assert_eq!(info.schema()["properties"], json!({}));
}

#[test]
fn output_schemas_keep_null_where_serde_writes_it() {
    let info = output_schema_info::<Output>();
    let properties = &info.schema()["properties"];
    assert_eq!(properties["note"], json!({"type": "string"}));
    assert_eq!(properties["always"]["type"], json!(["string", "null"]));
    assert_eq!(info.schema()["required"], json!(["total", "always"]));
    let encoded = json!({"total": 1, "always": null});
    assert!(info.check_output(&encoded).is_ok());
}

#[test]
fn wrapped_doc_lines_join_and_paragraphs_and_lists_stay() {
    assert_eq!(
        super::unwrap_doc("Absent means the\nworking directory.\n\n- one\n- two\n1. three"),
        "Absent means the working directory.\n\n- one\n- two\n1. three"
    );
}
