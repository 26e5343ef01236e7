//! The stdio server's line transport: one JSON-RPC message per line, read with a bound, with
//! the protocol errors rmcp's own line reader leaves unanswered.
//!
//! - A line longer than [`MAX_LINE_BYTES`] is not read whole. When its start names a request
//!   (a top-level `"method"` and `"id"` before the cut), that request gets an Invalid Request
//!   error and the line is skipped. Otherwise nothing can be answered, and a client waiting
//!   for an answer would wait forever, so the connection is closed.
//! - A message of the right JSON shape but not a valid MCP message (a `tools/call` whose
//!   `params` is a number, say) gets an error for its own id: Invalid Params for a known
//!   method, Invalid Request otherwise. Lines that are not JSON at all are ignored, as the
//!   official SDKs do, since there is no id to answer.
//! - A request that reuses the id of a request still running is refused with Invalid Request;
//!   the first one runs on. An id is free again once its response is sent or the client
//!   cancels it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tackle_core::thousands;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line read: 16 MiB, as rmcp's own stdio reader and its HTTP client allow.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The MCP methods a client sends; a request for one of them that rmcp could not read had
/// invalid params rather than an unknown method.
const CLIENT_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
];

/// True when `method` is an MCP method a client may call.
pub(crate) fn is_client_method(method: &str) -> bool {
    CLIENT_METHODS.contains(&method)
}

/// The error for a request whose method is known but whose params could not be read.
pub(crate) fn invalid_params(method: &str) -> ErrorData {
    let shape = match method {
        "tools/call" => {
            " `tools/call` needs `params` as an object with the tool's `name` and its \
             `arguments` object."
        }
        _ => "",
    };
    ErrorData::invalid_params(
        format!("The params of `{method}` are missing or malformed.{shape}"),
        None,
    )
}

/// A server transport over a reader and a writer carrying one JSON-RPC message per line.
pub(crate) struct LineTransport<R, W> {
    reader: BufReader<R>,
    /// The line being read; a read cancelled mid-line resumes into it.
    line: Vec<u8>,
    /// True while skipping the rest of an oversized line that was answered.
    skipping: bool,
    max_line: usize,
    writer: Arc<tokio::sync::Mutex<Option<W>>>,
    /// Ids of the client's requests that have not been answered yet.
    running: Arc<Mutex<HashSet<RequestId>>>,
}

/// What one bounded line read found.
enum Read {
    /// A whole line is in `line`.
    Line,
    /// The line is longer than the limit; `line` holds its first bytes.
    Oversized,
    /// The reader is at its end, or failed.
    End,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(crate) fn new(reader: R, writer: W) -> Self {
        Self::with_max_line(reader, writer, MAX_LINE_BYTES)
    }

    pub(crate) fn with_max_line(reader: R, writer: W, max_line: usize) -> Self {
        Self {
            reader: BufReader::new(reader),
            line: Vec::new(),
            skipping: false,
            max_line,
            writer: Arc::new(tokio::sync::Mutex::new(Some(writer))),
            running: Arc::default(),
        }
    }

    /// Reads up to the next newline without holding more than `max_line` bytes. Cancel-safe:
    /// bytes are consumed only once copied into `line` (or skipped).
    async fn read_line(&mut self) -> Read {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok([]) => return Read::End,
                Ok(available) => available,
                Err(error) => {
                    tracing::warn!("cannot read from the MCP client: {error}");
                    return Read::End;
                }
            };
            let newline = memchr::memchr(b'\n', available);
            let take = newline.map_or(available.len(), |at| at + 1);
            if self.skipping {
                self.reader.consume(take);
                if newline.is_some() {
                    self.skipping = false;
                }
                continue;
            }
            let room = self.max_line.saturating_sub(self.line.len());
            if take > room {
                // Keep what fits: the start of the line is where its id would be.
                self.line.extend_from_slice(&available[..room]);
                self.reader.consume(room);
                return Read::Oversized;
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if newline.is_some() {
                return Read::Line;
            }
        }
    }

    /// Writes `message` as one line in the background, so `receive` never waits on the client.
    fn answer(&self, message: TxJsonRpcMessage<RoleServer>) {
        let writer = self.writer.clone();
        tokio::spawn(async move {
            if let Err(error) = write_line(&writer, &message).await {
                tracing::debug!("cannot answer the MCP client: {error}");
            }
        });
    }

    /// The message of a whole line, or `None` when the line was answered here or ignored.
    fn message(&self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
            Ok(message) => self.admit(message),
            Err(error) if is_too_deep(&error) => {
                self.refuse_too_deep(line);
                None
            }
            Err(error) if error.is_syntax() || error.is_eof() => {
                tracing::debug!("ignoring a line that is not JSON: {error}");
                None
            }
            Err(error) => {
                self.refuse_malformed(line, &error);
                None
            }
        }
    }

    /// Lets `message` through unless it reuses a running request's id; tracks ids.
    fn admit(&self, message: RxJsonRpcMessage<RoleServer>) -> Option<RxJsonRpcMessage<RoleServer>> {
        match &message {
            JsonRpcMessage::Request(request) => {
                let fresh = self.running().insert(request.id.clone());
                if !fresh {
                    let id = request.id.clone();
                    self.answer(JsonRpcMessage::error(
                        ErrorData::invalid_request(
                            format!(
                                "The request id {id} is already in use by a request that is \
                                 still running, so this request was not run. Use a new id for \
                                 each request."
                            ),
                            None,
                        ),
                        Some(id),
                    ));
                    return None;
                }
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    // rmcp drops the answer of a cancelled request, so its id is free now.
                    self.running().remove(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        Some(message)
    }

    /// Answers a request nested deeper than JSON is read, for the id at its start; a message
    /// without one (a notification, or an id after the nesting) is dropped, as nobody waits.
    fn refuse_too_deep(&self, line: &[u8]) {
        let head = scan_head(line);
        let (Some(_), Some(id)) = (head.method, head.id) else {
            tracing::warn!("ignoring a message nested deeper than {MAX_JSON_DEPTH} levels");
            return;
        };
        tracing::warn!("refusing request {id}: nested deeper than {MAX_JSON_DEPTH} levels");
        self.answer(JsonRpcMessage::error(
            ErrorData::invalid_request(
                format!(
                    "The message nests arrays or objects more than {MAX_JSON_DEPTH} levels \
                     deep, the most tackle reads, so it was not run. Send flatter arguments."
                ),
                None,
            ),
            Some(id),
        ));
    }

    /// Answers a JSON message that is not a valid MCP message, for its id when it has one.
    fn refuse_malformed(&self, line: &[u8], error: &serde_json::Error) {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let method = value.get("method").and_then(Value::as_str);
        let id = value
            .get("id")
            .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
        if method.is_none() && id.is_some() {
            // A response of the client's that rmcp cannot read: there is nobody to answer.
            tracing::warn!("ignoring a malformed response from the MCP client: {error}");
            return;
        }
        if method.is_some() && id.is_none() && value.get("id").is_none() {
            // A notification: nothing to answer.
            tracing::debug!("ignoring a malformed notification: {error}");
            return;
        }
        let data = match method {
            Some(method) if is_client_method(method) => invalid_params(method),
            _ => ErrorData::invalid_request(
                format!("The message is not a valid MCP request: {error}."),
                None,
            ),
        };
        self.answer(JsonRpcMessage::error(data, id));
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            _ => None,
        };
        // Freed before the answer is written: a client may reuse the id as soon as it reads it.
        if let Some(id) = answered {
            self.running().remove(&id);
        }
        let writer = self.writer.clone();
        async move { write_line(&writer, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Read::End => return None,
                Read::Oversized => {
                    let head = scan_head(&self.line);
                    self.line.clear();
                    let (Some(_), Some(id)) = (head.method, head.id) else {
                        tracing::error!(
                            "a message longer than {} bytes names no request id in its first \
                             bytes, so it cannot be answered; closing the connection",
                            thousands(self.max_line as u64)
                        );
                        return None;
                    };
                    tracing::warn!(
                        "refusing request {id}: longer than {} bytes",
                        thousands(self.max_line as u64)
                    );
                    self.skipping = true;
                    self.answer(JsonRpcMessage::error(
                        ErrorData::new(
                            ErrorCode::INVALID_REQUEST,
                            format!(
                                "The message is longer than {} bytes, the most one message may \
                                 have, so it was not read. Send smaller arguments.",
                                thousands(self.max_line as u64)
                            ),
                            None,
                        ),
                        Some(id),
                    ));
                }
                Read::Line => {
                    let line = std::mem::take(&mut self.line);
                    let trimmed = trim_line_end(&line);
                    let message = if trimmed.iter().all(u8::is_ascii_whitespace) {
                        None
                    } else {
                        self.message(trimmed)
                    };
                    // Keep the buffer's capacity for the next line.
                    self.line = line;
                    self.line.clear();
                    if let Some(message) = message {
                        return Some(message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let writer = self.writer.lock().await.take();
        if let Some(mut writer) = writer {
            writer.shutdown().await?;
        }
        Ok(())
    }
}

/// Serializes `message` and writes it as one line, then flushes.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<Option<W>>,
    message: &TxJsonRpcMessage<RoleServer>,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let mut writer = writer.lock().await;
    let Some(writer) = writer.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the MCP connection is closed",
        ));
    };
    writer.write_all(&bytes).await?;
    writer.flush().await
}

/// How deep serde_json reads nested arrays and objects; deeper input is an error, never a
/// deeper stack.
const MAX_JSON_DEPTH: usize = 128;

/// Whether `error` is serde_json refusing input nested past [`MAX_JSON_DEPTH`].
fn is_too_deep(error: &serde_json::Error) -> bool {
    error.is_syntax() && error.to_string().starts_with("recursion limit exceeded")
}

/// `line` without its `\n` or `\r\n`.
fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// What the start of a message says about it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Head {
    /// The top-level `"method"`, when it comes before the cut.
    pub(crate) method: Option<String>,
    /// The top-level `"id"` (a number or a string), when it comes before the cut.
    pub(crate) id: Option<RequestId>,
}

/// Reads the top-level `"method"` and `"id"` of a JSON object from the start of a message that
/// may be cut anywhere. Stops at the first thing it cannot read; never panics; linear time.
pub(crate) fn scan_head(bytes: &[u8]) -> Head {
    let mut head = Head::default();
    let mut scanner = Scanner { bytes, at: 0 };
    scanner.whitespace();
    if !scanner.eat(b'{') {
        return head;
    }
    loop {
        scanner.whitespace();
        let Some(key) = scanner.string() else {
            return head;
        };
        scanner.whitespace();
        if !scanner.eat(b':') {
            return head;
        }
        scanner.whitespace();
        let start = scanner.at;
        if !scanner.skip_value() {
            return head;
        }
        let value = &bytes[start..scanner.at];
        match serde_json::from_slice::<String>(key).ok().as_deref() {
            Some("method") => head.method = serde_json::from_slice::<String>(value).ok(),
            Some("id") => head.id = serde_json::from_slice::<RequestId>(value).ok(),
            _ => {}
        }
        if head.method.is_some() && head.id.is_some() {
            return head;
        }
        scanner.whitespace();
        if !scanner.eat(b',') {
            return head;
        }
    }
}

/// A cursor over the bytes of a possibly cut JSON text.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn whitespace(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// A whole string token, quotes included, or `None` when there is none or it is cut.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        if !self.eat(b'"') {
            return None;
        }
        while let Some(&byte) = self.bytes.get(self.at) {
            self.at += 1;
            match byte {
                b'"' => return Some(&self.bytes[start..self.at]),
                b'\\' => self.at += 1,
                _ => {}
            }
        }
        None
    }

    /// Moves past one whole value; false when it is cut or malformed.
    fn skip_value(&mut self) -> bool {
        match self.bytes.get(self.at) {
            None => false,
            Some(b'"') => self.string().is_some(),
            Some(b'{' | b'[') => self.skip_nested(),
            Some(_) => {
                // A number or a literal: up to the next delimiter, which must be there.
                let start = self.at;
                while self.bytes.get(self.at).is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
                }) {
                    self.at += 1;
                }
                self.at > start && self.at < self.bytes.len()
            }
        }
    }

    /// Moves past an object or array, strings inside included.
    fn skip_nested(&mut self) -> bool {
        let mut depth = 0usize;
        while let Some(&byte) = self.bytes.get(self.at) {
            match byte {
                b'"' => {
                    if self.string().is_none() {
                        return false;
                    }
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.at += 1;
                        return true;
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        false
    }
}

#[cfg(test)]
mod tests;
