//! Conversions between tackle's settlement types and MCP wire types.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, ResourceContents, Tool, ToolAnnotations,
};
use serde_json::Value;
use tackle_core::{Concurrency, Content};
use tackle_registry::{AdvertisedTool, Outcome, Settlement};

/// The MCP listing of one advertised tool, with its annotations (see [`annotations`]). The
/// output schema is included only when it describes an object, as MCP requires.
pub(crate) fn tool(advertised: &AdvertisedTool, open_world: bool) -> Tool {
    let definition = advertised.definition();
    let input = match definition.input_schema.as_ref() {
        Value::Object(schema) => schema.clone(),
        _ => {
            let mut schema = JsonObject::new();
            schema.insert("type".to_owned(), Value::from("object"));
            schema
        }
    };
    // No `outputSchema`: MCP requires `structuredContent` on every success of a tool that
    // declares one, and settlement leaves the structured value out when it does not fit the
    // output bound (LAW-BOUNDED-OUTPUT). Clients such as the Python SDK then reject the result.
    // `structuredContent` is still sent whenever it fits.
    Tool::new(
        advertised.name().to_owned(),
        definition.description.to_string(),
        Arc::new(input),
    )
    .with_annotations(annotations(&definition.concurrency, open_world))
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
/// interruptions and defects.
pub(crate) fn call_result(settlement: &Settlement) -> Result<CallToolResult, ErrorData> {
    match &settlement.outcome {
        Outcome::Success(output) => {
            let mut content = blocks(&output.content);
            let structured = output
                .structured
                .is_object()
                .then(|| output.structured.clone());
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
