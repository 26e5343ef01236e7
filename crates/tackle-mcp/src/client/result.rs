//! Conversions from an MCP server's `tools/call` answers to a tackle tool's output.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value, json};
use tackle_core::{Content, ToolFailure};

/// The key of the model-facing parts in an MCP tool's output.
pub(crate) const CONTENT: &str = "content";
/// The key of the server's `structuredContent` in an MCP tool's output.
pub(crate) const STRUCTURED: &str = "structuredContent";

/// The output of an MCP tool: `{"content": [parts...], "structuredContent": {...}}`, the second
/// only when the server sent one. `isError` results become a [`ToolFailure`] with their text.
pub(crate) fn output(result: CallToolResult) -> Result<Value, ToolFailure> {
    let content: Vec<Content> = result.content.into_iter().map(part).collect();
    if result.is_error == Some(true) {
        let text = content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n");
        return Err(ToolFailure::new(if text.is_empty() {
            "the tool reported an error without a message".to_owned()
        } else {
            text
        }));
    }
    let mut output = Map::new();
    output.insert(CONTENT.to_owned(), json!(content));
    if let Some(structured) = result.structured_content {
        output.insert(STRUCTURED.to_owned(), structured);
    }
    Ok(Value::Object(output))
}

/// What the model reads for an output built by [`output`]: its parts, or the structured
/// content rendered as JSON when the server sent no parts.
pub(crate) fn project(output: &Value) -> Vec<Content> {
    let parts: Vec<Content> = output
        .get(CONTENT)
        .cloned()
        .and_then(|parts| serde_json::from_value(parts).ok())
        .unwrap_or_default();
    if !parts.is_empty() {
        return parts;
    }
    match output.get(STRUCTURED) {
        Some(structured) => vec![Content::text(
            serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string()),
        )],
        None => vec![Content::text("(no output)")],
    }
}

/// One MCP content block as a tackle content part.
fn part(block: ContentBlock) -> Content {
    match block {
        ContentBlock::Text(text) => Content::text(text.text),
        ContentBlock::Image(image) => Content::media(image.mime_type, image.data),
        ContentBlock::Audio(audio) => Content::media(audio.mime_type, audio.data),
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => Content::text(text),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Content::Media {
                mime_type: mime_type.unwrap_or_else(|| "application/octet-stream".to_owned()),
                data_base64: blob,
                name: Some(uri),
            },
            other => Content::text(format!("[unsupported resource: {other:?}]")),
        },
        ContentBlock::ResourceLink(link) => {
            Content::text(format!("[resource {}: {}]", link.name, link.uri))
        }
        other => Content::text(format!("[unsupported content: {other:?}]")),
    }
}
