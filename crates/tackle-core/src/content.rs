//! Model-facing content: the parts a projection produces and the bound step measures.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One part of what the model sees for a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text. Text parts are what the settlement bound measures.
    Text {
        /// The text itself.
        text: String,
    },
    /// Native media, such as an image, passed to the provider as it is.
    Media {
        /// The MIME type, such as `image/png`.
        mime_type: String,
        /// The bytes, base64-encoded as providers expect them.
        data_base64: String,
        /// An optional file name to show alongside the media.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// A media part from already base64-encoded data.
    pub fn media(mime_type: impl Into<String>, data_base64: impl Into<String>) -> Self {
        Content::Media {
            mime_type: mime_type.into(),
            data_base64: data_base64.into(),
            name: None,
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            Content::Media { .. } => None,
        }
    }

    /// The decoded size in bytes of a media part (an estimate from the base64 length).
    pub fn media_bytes(&self) -> Option<usize> {
        match self {
            Content::Media { data_base64, .. } => {
                let trimmed = data_base64.trim_end_matches('=');
                Some(trimmed.len() * 3 / 4)
            }
            Content::Text { .. } => None,
        }
    }
}

/// The model-facing result of a successful call, after projection.
///
/// `structured` is the tool's encoded domain output and is never altered by bounding
/// (`LAW-STORAGE-ENCAPSULATION`). `content` is what the model reads: when it is empty, the host
/// shows the model `structured` instead, and the bound measures that.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The projected parts the model reads.
    pub content: Vec<Content>,
    /// The encoded domain output.
    pub structured: Value,
}

impl ToolOutput {
    /// True when the model reads `content` rather than `structured`.
    pub fn has_content(&self) -> bool {
        !self.content.is_empty()
    }
}
