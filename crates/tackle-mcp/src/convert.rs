//! Conversions between tackle's settlement types and MCP wire types.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, ResourceContents, Tool, ToolAnnotations,
};
use serde_json::Value;
use tackle_core::{Concurrency, Content};
use tackle_registry::{AdvertisedTool, Outcome, Settlement};

/// The key of the object sent as `structuredContent` in place of a value that did not fit the
/// output bound, when the tool declares an output schema.
pub(crate) const OMITTED_KEY: &str = "structuredContentOmitted";

/// Which results carry `structuredContent`, and which listings declare `outputSchema`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StructuredContent {
    /// Only results without content (structured-only output, as custom and MCP tools may
    /// return), beside their text rendering; no `outputSchema` is declared. Hosts that prefer
    /// `structuredContent` (Claude Code, codex) then show the model tackle's own text.
    #[default]
    WithoutText,
    /// Every tool whose output is an object declares it as `outputSchema`, and each of its
    /// successes carries the structured value, or, when that did not fit the output bound, an
    /// object whose one key is `structuredContentOmitted` (the declared schema allows it).
    Declared,
}

/// The MCP listing of one advertised tool, with its annotations (see [`annotations`]). With
/// [`StructuredContent::Declared`], a tool whose output is an object declares `outputSchema`.
pub(crate) fn tool(
    advertised: &AdvertisedTool,
    open_world: bool,
    structured: StructuredContent,
) -> Tool {
    let definition = advertised.definition();
    let input = match definition.input_schema().as_ref() {
        Value::Object(schema) => schema.clone(),
        _ => {
            let mut schema = JsonObject::new();
            schema.insert("type".to_owned(), Value::from("object"));
            schema
        }
    };
    let listed = Tool::new(
        advertised.name().to_owned(),
        definition.description.to_string(),
        Arc::new(input),
    )
    .with_annotations(annotations(&definition.concurrency, open_world));
    match declared_output_schema(advertised, structured) {
        Some(schema) => listed.with_raw_output_schema(Arc::new(schema)),
        None => listed,
    }
}

/// The `outputSchema` a tool declares: none unless structured content is
/// [`StructuredContent::Declared`] and the tool's output is an object (MCP requires an object
/// schema). It admits the tool's output and the stand-in for a value the output bound left out,
/// since MCP requires `structuredContent` on every success of a tool that declares one.
fn declared_output_schema(
    advertised: &AdvertisedTool,
    structured: StructuredContent,
) -> Option<JsonObject> {
    let schema = advertised.definition().output_schema().as_ref();
    if structured != StructuredContent::Declared
        || schema.get("type").and_then(Value::as_str) != Some("object")
    {
        return None;
    }
    let omitted = serde_json::json!({
        "type": "object",
        "description": "Sent instead of the output when it did not fit the output bound; the \
            content carries the bounded text.",
        "properties": { OMITTED_KEY: { "type": "string" } },
        "required": [OMITTED_KEY],
        "additionalProperties": false,
    });
    let mut declared = JsonObject::new();
    declared.insert("type".to_owned(), Value::from("object"));
    declared.insert(
        "anyOf".to_owned(),
        Value::Array(vec![schema.clone(), omitted]),
    );
    Some(declared)
}

/// The hints of a tool from its concurrency class: a read-only tool does not change its
/// environment and may be repeated; a tool that writes paths, or runs alone, may change or
/// destroy anything (MCP's defaults, stated). `open_world` is the host's call.
pub(crate) fn annotations(concurrency: &Concurrency, open_world: bool) -> ToolAnnotations {
    let read_only = matches!(concurrency, Concurrency::ReadOnly);
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(!read_only)
        .idempotent(read_only)
        .open_world(open_world)
}

/// The MCP answer to a settled call: a result for model-facing outcomes, a protocol error for
/// interruptions and defects. `called` is the listing of the tool the client called, when it
/// has one: with [`StructuredContent::Declared`], its `outputSchema` decides whether every
/// success carries `structuredContent`.
pub(crate) fn call_result(
    settlement: &Settlement,
    called: Option<&AdvertisedTool>,
    structured: StructuredContent,
) -> Result<CallToolResult, ErrorData> {
    match &settlement.outcome {
        Outcome::Success(output) => {
            let mut content = blocks(&output.content);
            let value = output.structured.is_object();
            let declared =
                called.is_some_and(|tool| declared_output_schema(tool, structured).is_some());
            let structured = match structured {
                // Text the model reads is never doubled by a value a host would show instead.
                StructuredContent::WithoutText => {
                    (value && content.is_empty()).then(|| output.structured.clone())
                }
                StructuredContent::Declared if value => Some(output.structured.clone()),
                StructuredContent::Declared if declared => Some(omitted(settlement)),
                StructuredContent::Declared => None,
            };
            if content.is_empty() {
                // Structured-only output: clients that read only `content` still see it.
                content.push(ContentBlock::text(render_json(&output.structured)));
            }
            let mut result = CallToolResult::success(content);
            result.structured_content = structured;
            Ok(result)
        }
        Outcome::Error(error) => {
            let mut content = blocks(&error.content);
            if content.is_empty() {
                content.push(ContentBlock::text(error.text()));
            }
            Ok(CallToolResult::error(content))
        }
        Outcome::Interrupted(_) => Err(ErrorData::internal_error(
            format!("the call to `{}` was interrupted", settlement.tool),
            None,
        )),
        Outcome::Defect(defect) => {
            // The defect (a panic payload, say) goes to the log only, never to the client.
            tracing::error!(
                tool = %settlement.tool,
                "the call to `{}` failed with a defect: {defect}",
                settlement.tool
            );
            Err(ErrorData::internal_error(
                format!(
                    "the call to `{}` failed with an internal error in the server; the server's \
                     log has the details",
                    settlement.tool
                ),
                None,
            ))
        }
    }
}

/// The stand-in for a structured value the output bound left out, naming where it was kept.
fn omitted(settlement: &Settlement) -> Value {
    // The value is retained last when it does not fit (after any text and media).
    let kept = match settlement.managed.last() {
        Some(reference) => format!(
            " The complete value is saved at {}.",
            reference.path.display()
        ),
        None => String::new(),
    };
    serde_json::json!({
        OMITTED_KEY: format!(
            "The structured output of `{}` did not fit the output bound, so it was left out; the \
             content carries the bounded text.{kept}",
            settlement.tool
        )
    })
}

/// Content parts as MCP content blocks: text as text, images and audio natively, other media as
/// an embedded blob resource.
fn blocks(content: &[Content]) -> Vec<ContentBlock> {
    content
        .iter()
        .enumerate()
        .map(|(index, part)| match part {
            Content::Text { text } => ContentBlock::text(text.clone()),
            Content::Media {
                mime_type,
                data_base64,
                name,
            } => {
                if mime_type.starts_with("image/") {
                    ContentBlock::image(data_base64.clone(), mime_type.clone())
                } else if mime_type.starts_with("audio/") {
                    ContentBlock::audio(data_base64.clone(), mime_type.clone())
                } else {
                    let uri = match name {
                        Some(name) => format!("tackle://media/{name}"),
                        None => format!("tackle://media/{index}"),
                    };
                    ContentBlock::resource(
                        ResourceContents::blob(data_base64.clone(), uri)
                            .with_mime_type(mime_type.clone()),
                    )
                }
            }
        })
        .collect()
}

/// Pretty JSON for the text rendering of structured output.
fn render_json(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}
