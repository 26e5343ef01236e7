//! Unit tests for the codec: coercion, field paths, syntax positions.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::*;

// ---------------------------------------------------------------------------------------------
// Input types
// ---------------------------------------------------------------------------------------------

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct ReadCall {
    path: String,
    limit: Option<u32>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct OptionalOnly {
    path: Option<String>,
    limit: Option<u32>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Edit {
    #[serde(rename = "oldString")]
    old_string: String,
    #[serde(rename = "newString")]
    new_string: String,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct EditCall {
    path: String,
    edits: Vec<Edit>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Strict {
    limit: u32,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Closed {
    path: String,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
enum Level {
    #[serde(rename = "1")]
    One,
    #[serde(rename = "2")]
    Two,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Scalars {
    offset: u64,
    verbose: bool,
    ratio: f64,
    count: Option<u32>,
    code: String,
    level: Level,
    ids: Vec<u32>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Inner {
    n: u32,
    on: bool,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Outer {
    first: Inner,
    maybe: Option<Inner>,
    many: Vec<Inner>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Ranged {
    #[schemars(range(min = 1, max = 10))]
    n: u32,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct NonEmpty {
    #[schemars(length(min = 1))]
    name: String,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Plain {
    count: u32,
    name: String,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Widths {
    small: u8,
    signed: i8,
    wide: i32,
}

fn fields(errors: &[(&str, &str)]) -> InvalidInput {
    InvalidInput::Fields {
        errors: errors
            .iter()
            .map(|(path, message)| FieldError {
                path: (*path).to_owned(),
                message: (*message).to_owned(),
            })
            .collect(),
    }
}

fn decode_text<T: JsonSchema + DeserializeOwned + 'static>(text: &str) -> Result<T, InvalidInput> {
    schema_info::<T>().decode::<T>(&Arguments::Text(text.to_owned()))
}

fn decode_json<T: JsonSchema + DeserializeOwned + 'static>(
    value: Value,
) -> Result<T, InvalidInput> {
    schema_info::<T>().decode::<T>(&Arguments::Json(value))
}

// ---------------------------------------------------------------------------------------------
// Well-formed input and the schema cache
// ---------------------------------------------------------------------------------------------

#[test]
fn well_formed_input_decodes_from_text_and_json() {
    let expected = ReadCall {
        path: "src/main.rs".to_owned(),
        limit: Some(20),
    };
    assert_eq!(
        decode_text::<ReadCall>(r#"{"path":"src/main.rs","limit":20}"#),
        Ok(expected)
    );
    assert_eq!(
        decode_json::<ReadCall>(json!({"path": "src/main.rs", "limit": 20})),
        Ok(ReadCall {
            path: "src/main.rs".to_owned(),
            limit: Some(20),
        })
    );
    assert_eq!(
        decode_json::<ReadCall>(json!({"path": "a"})),
        Ok(ReadCall {
            path: "a".to_owned(),
            limit: None,
        })
    );
}

#[test]
fn schema_info_is_generated_once_per_type() {
    let first = schema_info::<ReadCall>();
    let second = schema_info::<ReadCall>();
    assert!(Arc::ptr_eq(&first, &second));
    let other = schema_info::<EditCall>();
    assert!(!Arc::ptr_eq(&first, &other));
    assert_ne!(first.schema(), other.schema());
    assert!(first.schema()["properties"].get("path").is_some());
}

// ---------------------------------------------------------------------------------------------
// Syntax errors
// ---------------------------------------------------------------------------------------------

#[test]
fn truncated_json_is_a_syntax_error_at_the_end() {
    let text = r#"{"path":"a","limit":"#;
    let error = decode_text::<ReadCall>(text).unwrap_err();
    // The problem is after the last byte: the offset is the end of the text.
    assert_eq!(
        error,
        InvalidInput::Syntax {
            message: "EOF while parsing a value".to_owned(),
            line: 1,
            column: 20,
            offset: 20,
        }
    );
    assert_eq!(text.len(), 20);
    assert_eq!(
        error.to_string(),
        "the arguments are not valid JSON: EOF while parsing a value (line 1, column 20, byte 20)"
    );
}

#[test]
fn truncated_json_is_never_decoded_as_an_empty_object() {
    // Every field is optional, so `{}` would decode: the truncated text must still be rejected.
    let text = r#"{"path":"a","limit":"#;
    let error = decode_text::<OptionalOnly>(text).unwrap_err();
    assert!(
        matches!(
            error,
            InvalidInput::Syntax {
                line: 1,
                column: 20,
                offset: 20,
                ..
            }
        ),
        "{error:?}"
    );
    let error = decode_text::<OptionalOnly>("{").unwrap_err();
    assert!(
        matches!(
            error,
            InvalidInput::Syntax {
                line: 1,
                offset: 1,
                ..
            }
        ),
        "{error:?}"
    );
    let error = decode_json::<OptionalOnly>(json!("{}")).unwrap_err();
    assert!(matches!(error, InvalidInput::Fields { .. }), "{error:?}");
}

#[test]
fn truncated_multiline_json_reports_the_last_line() {
    let text = "{\n  \"path\": \"a\",\n  \"limit\": 5,";
    let error = decode_text::<ReadCall>(text).unwrap_err();
    let InvalidInput::Syntax { line, offset, .. } = error else {
        panic!("expected a syntax error, got {error:?}");
    };
    assert_eq!(line, 3);
    assert_eq!(offset, text.len());
}

#[test]
fn syntax_error_on_a_later_line_reports_that_line_and_its_byte() {
    let text = "{\n  \"path\": \"a\",\n  \"limit\": }";
    let error = decode_text::<ReadCall>(text).unwrap_err();
    assert_eq!(
        error,
        InvalidInput::Syntax {
            message: "expected value".to_owned(),
            line: 3,
            column: 12,
            offset: 28,
        }
    );
    assert_eq!(text.as_bytes()[28], b'}');
}

#[test]
fn syntax_offset_counts_bytes_of_multibyte_lines() {
    // Two 3-byte characters on the first line: the byte offset is not the character offset.
    let text = "{\"path\": \"日本\",\n\"limit\": ]}";
    let error = decode_text::<ReadCall>(text).unwrap_err();
    let InvalidInput::Syntax { line, offset, .. } = error else {
        panic!("expected a syntax error, got {error:?}");
    };
    assert_eq!(line, 2);
    assert_eq!(text.as_bytes()[offset], b']');
}

// ---------------------------------------------------------------------------------------------
// Empty arguments
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_or_blank_text_decodes_as_an_empty_object() {
    for text in ["", "   ", "\n\t  \n"] {
        assert_eq!(
            decode_text::<OptionalOnly>(text),
            Ok(OptionalOnly {
                path: None,
                limit: None,
            }),
            "{text:?}"
        );
        assert_eq!(
            decode_text::<ReadCall>(text),
            Err(fields(&[("path", "missing field")])),
            "{text:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Field errors
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_nested_field_reports_its_full_path() {
    let input = json!({
        "path": "a.rs",
        "edits": [
            {"oldString": "a", "newString": "b"},
            {"oldString": "c", "newString": "d"},
            {"newString": "f"},
        ],
    });
    assert_eq!(
        decode_json::<EditCall>(input.clone()),
        Err(fields(&[("edits[2].oldString", "missing field")]))
    );
    assert_eq!(
        decode_text::<EditCall>(&input.to_string()),
        Err(fields(&[("edits[2].oldString", "missing field")]))
    );
}

#[test]
fn every_failing_field_is_reported_in_a_stable_order() {
    let text = r#"{"path":5,"edits":[{"oldString":"a"},{"oldString":"a","newString":"b"},{"newString":"b"}]}"#;
    let expected = fields(&[
        ("edits[0].newString", "missing field"),
        ("edits[2].oldString", "missing field"),
        ("path", "expected string, got number 5"),
    ]);
    assert_eq!(decode_text::<EditCall>(text), Err(expected.clone()));
    // Same input, same order, every time and through both argument forms.
    assert_eq!(decode_text::<EditCall>(text), Err(expected.clone()));
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(decode_json::<EditCall>(value), Err(expected.clone()));
    assert_eq!(
        expected.to_string(),
        "- edits[0].newString: missing field\n\
         - edits[2].oldString: missing field\n\
         - path: expected string, got number 5"
    );
}

#[test]
fn field_errors_sort_indices_numerically() {
    let mut edits: Vec<Value> = (0..12)
        .map(|_| json!({"oldString": "a", "newString": "b"}))
        .collect();
    edits[10] = json!({"newString": "b"});
    edits[2] = json!({"oldString": "a"});
    assert_eq!(
        decode_json::<EditCall>(json!({"edits": edits})),
        Err(fields(&[
            ("edits[2].newString", "missing field"),
            ("edits[10].oldString", "missing field"),
            ("path", "missing field"),
        ]))
    );
}

#[test]
fn wrong_type_names_the_expected_type_and_the_value() {
    assert_eq!(
        decode_text::<Strict>(r#"{"limit":"ten"}"#),
        Err(fields(&[(
            "limit",
            r#"expected integer, got string "ten""#
        )]))
    );
    assert_eq!(
        decode_json::<Strict>(json!({"limit": true})),
        Err(fields(&[("limit", "expected integer, got boolean true")]))
    );
    assert_eq!(
        decode_json::<Strict>(json!({"limit": null})),
        Err(fields(&[("limit", "expected integer, got null")]))
    );
    assert_eq!(
        decode_json::<Strict>(json!({"limit": [1]})),
        Err(fields(&[("limit", "expected integer, got an array")]))
    );
    assert_eq!(
        decode_json::<Strict>(json!({"limit": {"a": 1}})),
        Err(fields(&[("limit", "expected integer, got an object")]))
    );
    assert_eq!(
        decode_json::<Strict>(json!({"limit": "x".repeat(41)})),
        Err(fields(&[("limit", "expected integer, got a long string")]))
    );
}

#[test]
fn wrong_type_message_survives_a_value_that_quotes_the_validator() {
    // The value's own text must not be mistaken for the validator's "is not of type" phrase.
    assert_eq!(
        decode_json::<Strict>(json!({"limit": "x is not of type y"})),
        Err(fields(&[(
            "limit",
            r#"expected integer, got string "x is not of type y""#
        )]))
    );
}

#[test]
fn wrong_type_for_an_optional_field_lists_the_accepted_types() {
    // `Option<u32>` accepts `["integer", "null"]`; the validator words that in the plural.
    let error = decode_text::<ReadCall>(r#"{"path":"a","limit":"ten"}"#).unwrap_err();
    let InvalidInput::Fields { errors } = &error else {
        panic!("expected field errors, got {error:?}");
    };
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path, "limit");
    let message = &errors[0].message;
    let types = message
        .strip_prefix("expected ")
        .and_then(|rest| rest.strip_suffix(r#", got string "ten""#))
        .unwrap_or_else(|| panic!("unexpected message {message:?}"));
    let mut names: Vec<&str> = types
        .split(", ")
        .flat_map(|part| part.split(" or "))
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["integer", "null"], "message {message:?}");
}

#[test]
fn unknown_field_is_named_with_a_fix() {
    assert_eq!(
        decode_text::<Closed>(r#"{"path":"a","foo":1}"#),
        Err(fields(&[("(root)", "unknown field `foo`; remove it")]))
    );
    assert_eq!(
        decode_json::<Closed>(json!({"path": "a", "foo": 1, "bar": 2})),
        Err(fields(&[(
            "(root)",
            "unknown fields `bar`, `foo`; remove them"
        )]))
    );
}

#[test]
fn serde_only_failure_is_reported_with_its_path() {
    // The schema states `format: int32` without a range, so only serde rejects the overflow.
    assert_eq!(
        decode_json::<Widths>(json!({"small": 1, "signed": -1, "wide": 5_000_000_000_u64})),
        Err(fields(&[(
            "wide",
            "invalid value: integer `5000000000`, expected i32"
        )]))
    );
}

// ---------------------------------------------------------------------------------------------
// Coercion
// ---------------------------------------------------------------------------------------------

#[test]
fn stringified_scalars_are_coerced_where_only_that_scalar_fits() {
    let text = r#"{
        "offset": "500",
        "verbose": "true",
        "ratio": "2.5",
        "count": "7",
        "code": "020",
        "level": "1",
        "ids": ["1", "2"]
    }"#;
    let expected = Scalars {
        offset: 500,
        verbose: true,
        ratio: 2.5,
        count: Some(7),
        code: "020".to_owned(),
        level: Level::One,
        ids: vec![1, 2],
    };
    assert_eq!(decode_text::<Scalars>(text), Ok(expected));
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        decode_json::<Scalars>(value),
        Ok(Scalars {
            offset: 500,
            verbose: true,
            ratio: 2.5,
            count: Some(7),
            code: "020".to_owned(),
            level: Level::One,
            ids: vec![1, 2],
        })
    );
}

#[test]
fn false_and_negative_strings_are_coerced_too() {
    let mut value = json!({"verbose": "false", "ratio": "-0.25", "offset": "18446744073709551615"});
    let schema = schema_info::<Scalars>().schema().clone();
    coerce_scalars(&mut value, &schema, &schema, 0);
    assert_eq!(
        value,
        json!({"verbose": false, "ratio": -0.25, "offset": 18_446_744_073_709_551_615_u64})
    );
}

#[test]
fn strings_are_left_alone_where_a_string_is_acceptable() {
    let schema = schema_info::<Scalars>().schema().clone();
    let mut value = json!({"code": "020", "level": "2", "verbose": "yes", "offset": "5x"});
    coerce_scalars(&mut value, &schema, &schema, 0);
    // `code` is a string, `level` an enum of strings; `yes` and `5x` are not scalars of their kind.
    assert_eq!(
        value,
        json!({"code": "020", "level": "2", "verbose": "yes", "offset": "5x"})
    );

    // An enum or const without a type is never coerced either.
    let schema = json!({"properties": {"a": {"enum": ["1", 1]}, "b": {"const": "2"}}});
    let mut value = json!({"a": "1", "b": "2"});
    coerce_scalars(&mut value, &schema, &schema, 0);
    assert_eq!(value, json!({"a": "1", "b": "2"}));
}

#[test]
fn coercion_follows_refs_into_nested_structs() {
    let text = r#"{
        "first": {"n": "1", "on": "true"},
        "maybe": {"n": "2", "on": "false"},
        "many": [{"n": "3", "on": "true"}, {"n": 4, "on": false}]
    }"#;
    // The advertised schema has its refs inlined; coercion also follows refs where a recursive
    // schema keeps them (see `coercion_follows_refs_in_recursive_schemas`).
    assert!(schema_info::<Outer>().schema().get("$defs").is_none());
    assert_eq!(
        decode_text::<Outer>(text),
        Ok(Outer {
            first: Inner { n: 1, on: true },
            maybe: Some(Inner { n: 2, on: false }),
            many: vec![Inner { n: 3, on: true }, Inner { n: 4, on: false }],
        })
    );
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Node {
    count: u32,
    #[serde(default)]
    children: Vec<Node>,
}

#[test]
fn coercion_follows_refs_in_recursive_schemas() {
    // A recursive type cannot be inlined: its advertised schema keeps its `$ref`s.
    assert!(
        schema_info::<Node>()
            .schema()
            .to_string()
            .contains("\"$ref\"")
    );
    assert_eq!(
        decode_text::<Node>(r#"{"count": "1", "children": [{"count": "2"}]}"#),
        Ok(Node {
            count: 1,
            children: vec![Node {
                count: 2,
                children: Vec::new()
            }],
        })
    );
}

#[test]
fn non_numeric_string_for_an_integer_is_a_field_error() {
    assert_eq!(
        decode_text::<Outer>(r#"{"first":{"n":"ten","on":true},"many":[{"n":"1.5","on":true}]}"#),
        Err(fields(&[
            ("first.n", r#"expected integer, got string "ten""#),
            ("many[0].n", r#"expected integer, got string "1.5""#),
        ]))
    );
    assert_eq!(
        decode_text::<Strict>(r#"{"limit":"99999999999999999999999"}"#),
        Err(fields(&[(
            "limit",
            r#"expected integer, got string "99999999999999999999999""#
        )]))
    );
}

// ---------------------------------------------------------------------------------------------
// Schema-only constraints
// ---------------------------------------------------------------------------------------------

#[test]
fn plain_struct_has_no_schema_only_constraints() {
    assert!(
        !schema_info::<Plain>()
            .generated()
            .has_schema_only_constraints
    );
    // Integer widths are stated as ranges, but serde enforces those itself.
    assert!(
        !schema_info::<Widths>()
            .generated()
            .has_schema_only_constraints
    );
    assert!(
        !schema_info::<ReadCall>()
            .generated()
            .has_schema_only_constraints
    );
    assert!(
        !schema_info::<EditCall>()
            .generated()
            .has_schema_only_constraints
    );
}

#[test]
fn length_constraint_is_enforced_although_serde_accepts_it() {
    assert!(
        schema_info::<NonEmpty>()
            .generated()
            .has_schema_only_constraints
    );
    let error = decode_text::<NonEmpty>(r#"{"name":""}"#).unwrap_err();
    let InvalidInput::Fields { errors } = &error else {
        panic!("expected field errors, got {error:?}");
    };
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path, "name");
    assert_eq!(
        decode_text::<NonEmpty>(r#"{"name":"x"}"#),
        Ok(NonEmpty {
            name: "x".to_owned()
        })
    );
}

#[test]
fn range_on_an_integer_is_a_schema_only_constraint() {
    // `format: uint32` must not exempt a range narrower than the integer's own width.
    assert!(
        schema_info::<Ranged>()
            .generated()
            .has_schema_only_constraints
    );
    assert!(has_schema_only_constraints(
        &json!({"type": "integer", "format": "int32", "minimum": 5})
    ));
    assert!(has_schema_only_constraints(
        &json!({"type": "integer", "format": "uint8", "minimum": 0, "maximum": 100})
    ));
    assert!(!has_schema_only_constraints(
        &json!({"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255})
    ));
    assert!(!has_schema_only_constraints(
        &json!({"type": "integer", "format": "int8", "minimum": -128, "maximum": 127})
    ));
}

#[test]
fn range_on_an_integer_is_enforced_although_serde_accepts_it() {
    for n in [0, 11] {
        let error = decode_text::<Ranged>(&format!(r#"{{"n":{n}}}"#)).unwrap_err();
        let InvalidInput::Fields { errors } = &error else {
            panic!("expected field errors for {n}, got {error:?}");
        };
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path, "n");
    }
    for n in [1, 10] {
        assert_eq!(
            decode_text::<Ranged>(&format!(r#"{{"n":{n}}}"#)),
            Ok(Ranged { n })
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Output checking
// ---------------------------------------------------------------------------------------------

#[test]
fn check_output_accepts_a_matching_value() {
    let info = schema_info::<Plain>();
    assert_eq!(info.check_output(&json!({"count": 3, "name": "x"})), Ok(()));
    let info = schema_info::<Ranged>();
    assert_eq!(info.check_output(&json!({"n": 10})), Ok(()));
}

#[test]
fn check_output_rejects_a_mismatching_value_with_every_error() {
    let info = schema_info::<Plain>();
    assert_eq!(
        info.check_output(&json!({"count": "3"})),
        Err(r#"count: expected integer, got string "3"; name: missing field"#.to_owned())
    );
    let info = schema_info::<Ranged>();
    let error = info.check_output(&json!({"n": 11})).unwrap_err();
    assert!(error.starts_with("n: "), "{error}");
}

// ---------------------------------------------------------------------------------------------
// Summary and paths
// ---------------------------------------------------------------------------------------------

#[test]
fn summary_lists_top_level_fields_with_kind_and_requiredness() {
    assert_eq!(
        &**schema_info::<ReadCall>().summary(),
        "limit: integer, path: string (required)"
    );
    assert_eq!(
        &**schema_info::<EditCall>().summary(),
        "edits: array (required), path: string (required)"
    );
    assert_eq!(
        summarize(
            &json!({"properties": {"mode": {"enum": ["a", "b"]}, "any": {}}, "required": ["mode"]})
        ),
        "any: value, mode: enum (required)"
    );
    assert_eq!(summarize(&json!({"type": "string"})), "");
}

#[test]
fn render_path_formats_fields_and_indices() {
    use PathSegment::{Field, Index};
    assert_eq!(render_path(&[]), "(root)");
    assert_eq!(render_path(&[Index(0), Field("a".into())]), "[0].a");
    assert_eq!(
        render_path(&[Field("a".into()), Index(1), Index(2), Field("b".into())]),
        "a[1][2].b"
    );
    assert_eq!(render_path(&[Field("a".into()), Field("b".into())]), "a.b");
}
