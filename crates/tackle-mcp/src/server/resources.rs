//! MCP resources: what a host offers each session to read besides its tools (tackle: the full
//! text behind every truncated result, and spooled command output), listed per session and
//! read by URI, with a bound on what one read sends.
//!
//! The host implements [`SessionResources`]; this module pages the listing, bounds the read and
//! turns both into MCP's shapes. A URI the session does not own is answered exactly like one
//! that does not exist, so a client learns nothing about other sessions.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    ListResourcesResult, PaginatedRequestParams, ReadResourceResult, Resource, ResourceContents,
};

/// How many resources one `resources/list` page holds; `nextCursor` leads to the next.
pub const RESOURCES_PAGE: usize = 100;

/// The most bytes of one resource that `resources/read` sends (8 MiB). A longer text is cut
/// at a character boundary and ends with a line saying how much was left out; a longer binary
/// resource is refused with its size.
pub const MAX_RESOURCE_BYTES: u64 = 8 * 1024 * 1024;

/// One resource a session may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionResource {
    /// Its URI (tackle's are `tackle://…`).
    pub uri: String,
    /// A short name for a list.
    pub name: String,
    /// What it holds.
    pub description: Option<String>,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// Its size in bytes.
    pub size: Option<u64>,
}

/// The bytes of a resource, read with a bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceBytes {
    /// The first bytes, at most the bound asked for.
    pub bytes: Vec<u8>,
    /// The resource's whole size.
    pub total: u64,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
}

/// What a host offers each session as resources. Both methods may do blocking IO: the server
/// calls them on a blocking thread.
pub trait SessionResources: Send + Sync + 'static {
    /// The resources `session` may read, in a stable order (the listing is paged by position).
    fn list(&self, session: &str) -> Vec<SessionResource>;

    /// The first `max_bytes` of the resource `uri`, or `None` when it does not exist or belongs
    /// to another session.
    fn read(&self, session: &str, uri: &str, max_bytes: u64) -> Option<ResourceBytes>;
}

/// The `resources/list` page the cursor names.
pub(crate) async fn list(
    resources: Arc<dyn SessionResources>,
    session: String,
    request: Option<PaginatedRequestParams>,
) -> Result<ListResourcesResult, ErrorData> {
    let start = match request.and_then(|r| r.cursor) {
        None => 0,
        Some(cursor) => cursor.parse::<usize>().map_err(|_| {
            ErrorData::invalid_params(
                format!("`{cursor}` is not a cursor this server gave; list again without one"),
                None,
            )
        })?,
    };
    let all = blocking(move || resources.list(&session)).await?;
    let page: Vec<Resource> = all
        .iter()
        .skip(start)
        .take(RESOURCES_PAGE)
        .map(wire_resource)
        .collect();
    let mut result = ListResourcesResult::with_all_items(page);
    if start + RESOURCES_PAGE < all.len() {
        result.next_cursor = Some((start + RESOURCES_PAGE).to_string());
    }
    Ok(result)
}

/// `resources/read` of `uri` for `session`, bounded by [`MAX_RESOURCE_BYTES`].
pub(crate) async fn read(
    resources: Arc<dyn SessionResources>,
    session: String,
    uri: String,
) -> Result<ReadResourceResult, ErrorData> {
    let asked = uri.clone();
    let found = blocking(move || resources.read(&session, &asked, MAX_RESOURCE_BYTES)).await?;
    let Some(found) = found else {
        return Err(ErrorData::resource_not_found(
            format!("Resource not found: {uri}"),
            Some(serde_json::json!({ "uri": uri })),
        ));
    };
    Ok(ReadResourceResult::new(vec![contents(uri, found)?]))
}

fn wire_resource(resource: &SessionResource) -> Resource {
    let mut wire = Resource::new(&resource.uri, &resource.name);
    if let Some(description) = &resource.description {
        wire = wire.with_description(description);
    }
    if let Some(mime) = &resource.mime_type {
        wire = wire.with_mime_type(mime);
    }
    if let Some(size) = resource.size {
        wire = wire.with_size(size);
    }
    wire
}

/// Text when the bytes are UTF-8 (cut at the bound with a closing line), else a blob.
fn contents(uri: String, found: ResourceBytes) -> Result<ResourceContents, ErrorData> {
    let ResourceBytes {
        bytes,
        total,
        mime_type,
    } = found;
    let cut = (bytes.len() as u64) < total;
    let text = match String::from_utf8(bytes) {
        Ok(text) => Some(text),
        // A cut may split the last character: a text is valid up to there.
        Err(error) if cut && error.utf8_error().error_len().is_none() => {
            let valid = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).ok()
        }
        Err(error) => {
            if cut {
                return Err(ErrorData::invalid_request(
                    format!(
                        "{uri} is {total} bytes of binary data, over the {MAX_RESOURCE_BYTES}-byte \
                         limit of one read"
                    ),
                    None,
                ));
            }
            use base64::Engine as _;
            let blob = base64::engine::general_purpose::STANDARD.encode(error.into_bytes());
            return Ok(ResourceContents::BlobResourceContents {
                uri,
                mime_type: Some(mime_type.unwrap_or_else(|| "application/octet-stream".into())),
                blob,
                meta: None,
            });
        }
    };
    let mut text = text.unwrap_or_default();
    if cut {
        let left_out = total - text.len() as u64;
        text.push_str(&format!(
            "\n[... {} of {} bytes left out: one read sends at most {} bytes ...]\n",
            tackle_core::thousands(left_out),
            tackle_core::thousands(total),
            tackle_core::thousands(MAX_RESOURCE_BYTES),
        ));
    }
    Ok(ResourceContents::TextResourceContents {
        uri,
        mime_type: Some(mime_type.unwrap_or_else(|| "text/plain".into())),
        text,
        meta: None,
    })
}

/// Runs the host's `work` on a blocking thread; a panic in it is an internal error.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ErrorData> {
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        tracing::error!("the host's resources or prompts failed: {error}");
        ErrorData::internal_error("internal error", None)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(contents: ResourceContents) -> String {
        match contents {
            ResourceContents::TextResourceContents { text, .. } => text,
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn a_text_cut_by_the_bound_ends_at_a_character_and_says_what_was_left_out() {
        // "é" is two bytes: a bound after its first byte must not split it.
        let found = ResourceBytes {
            bytes: "abé".as_bytes()[..3].to_vec(),
            total: 10,
            mime_type: None,
        };
        let text = text_of(contents("tackle://x".into(), found).unwrap());
        assert!(
            text.starts_with("ab\n[... 8 of 10 bytes left out"),
            "{text}"
        );
    }

    #[test]
    fn binary_is_a_blob_and_too_large_binary_is_refused_with_its_size() {
        let whole = ResourceBytes {
            bytes: vec![0xff, 0x00, 0xfe],
            total: 3,
            mime_type: Some("image/png".into()),
        };
        match contents("tackle://b".into(), whole).unwrap() {
            ResourceContents::BlobResourceContents {
                blob, mime_type, ..
            } => {
                assert_eq!(blob, "/wD+");
                assert_eq!(mime_type.as_deref(), Some("image/png"));
            }
            other => panic!("not a blob: {other:?}"),
        }
        let cut = ResourceBytes {
            bytes: vec![0xff; 4],
            total: 100,
            mime_type: None,
        };
        let error = contents("tackle://b".into(), cut).unwrap_err();
        assert!(
            error.message.contains("100 bytes of binary data"),
            "{error:?}"
        );
    }
}
