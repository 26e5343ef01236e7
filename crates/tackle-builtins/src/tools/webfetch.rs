//! The webfetch tool: one HTTP(S) page as Markdown, text or raw HTML, or an image as media.
//!
//! The fetch is guarded against server-side request forgery: the tool resolves every host
//! itself, asks `webfetch_private` (on `host:port`) before talking to a loopback, private,
//! link-local, unique-local or unspecified address, and pins the client to the addresses it
//! checked, so the address approved is the address used. Redirects are followed by hand (at most 10), each hop
//! checked the same way, and a hop to another origin asks `webfetch` again. The body is read as
//! a stream and abandoned at the 5 MiB cap.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::Duration;
use tackle_core::names::Permission;

use base64::Engine as _;
use reqwest::Url;
use reqwest::header::{
    ACCEPT, ACCEPT_LANGUAGE, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, USER_AGENT,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure, thousands};
use tokio::time::Instant;

use super::ToolEnv;
use super::human;
use crate::gate::Ask;

mod dom;
mod html;
#[cfg(test)]
pub(crate) mod test_server;
#[cfg(test)]
pub(crate) mod tests;

/// The largest body webfetch reads, in bytes.
pub(crate) const MAX_RESPONSE_BYTES: u64 = 5 * 1024 * 1024;
/// The timeout when the call gives none, in seconds.
const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// The largest timeout a call may ask for, in seconds.
const MAX_TIMEOUT_SECS: u64 = 120;
/// The most redirects followed for one call.
const MAX_REDIRECTS: usize = 10;

const BROWSER_USER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like \
Gecko) Chrome/143.0.0.0 Safari/537.36";

const DESCRIPTION: &str = "Fetch a URL and return its content.\n\
- url must be a full http:// or https:// URL.\n\
- format is `markdown` (default: HTML converted to Markdown), `text` (the visible text only) or \
`html` (the raw page). Non-HTML text (JSON, plain text, XML) comes back as it is.\n\
- Images (PNG, JPEG, GIF, WebP) come back as media; other binary content is refused.\n\
- timeout is in seconds: 30 by default, at most 120.\n\
- Responses over 5 MiB are refused. Redirects are followed (at most 10); a redirect to another \
host asks permission again.\n\
- Addresses on the local machine or a private network need extra permission.\n\
- The tool is read-only. Prefer a specific page over a site's front page.";

/// How webfetch returns a page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WebFetchFormat {
    /// HTML converted to Markdown; other text as it is.
    #[default]
    Markdown,
    /// The visible text of HTML (scripts, styles and embedded frames dropped); other text as it
    /// is.
    Text,
    /// The body as the server sent it.
    Html,
}

impl WebFetchFormat {
    fn as_str(self) -> &'static str {
        match self {
            Self::Markdown => "markdown",
            Self::Text => "text",
            Self::Html => "html",
        }
    }

    fn accept(self) -> &'static str {
        match self {
            Self::Markdown => {
                "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, text/html;q=0.7, \
                 */*;q=0.1"
            }
            Self::Text => "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
            Self::Html => {
                "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, \
                 text/markdown;q=0.7, */*;q=0.1"
            }
        }
    }
}

/// Arguments of the webfetch tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebFetchInput {
    /// The URL to fetch; must start with `http://` or `https://`.
    pub url: String,
    /// How to return the page: `markdown` (default), `text` or `html`.
    #[serde(default)]
    pub format: WebFetchFormat,
    /// The most seconds the fetch may take (waiting for permission not counted): 30 by
    /// default, at most 120.
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// The result of the webfetch tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebFetchOutput {
    /// What the model reads: the converted page, or a line describing an image.
    pub output: String,
    /// The URL finally fetched, after redirects.
    pub url: String,
    /// The HTTP status of the final response.
    pub status: u16,
    /// The `Content-Type` the server sent; empty when it sent none.
    pub content_type: String,
    /// The size of the body, in bytes.
    pub bytes: u64,
    /// The media type of an image.
    pub mime_type: Option<String>,
    /// The bytes of an image, base64-encoded.
    pub data_base64: Option<String>,
}

pub(crate) fn tool(env: &ToolEnv) -> AnyTool {
    Tool::with_state(DESCRIPTION, env.clone(), webfetch)
        .with_projection(super::project_output)
        .erase()
}

async fn webfetch(
    State(env): State<ToolEnv>,
    input: WebFetchInput,
    cx: Context,
) -> Result<WebFetchOutput, ToolFailure> {
    let (env, cx) = (&env, &cx);
    let url = parse_url(&input.url)?;
    let secs = match input.timeout {
        Some(0) => {
            return Err(
                ToolFailure::new("`timeout` is 0 seconds, so nothing was fetched.")
                    .with_hint("Give a timeout from 1 to 120 seconds, or leave it out for 30."),
            );
        }
        Some(secs) => secs.min(MAX_TIMEOUT_SECS),
        None => DEFAULT_TIMEOUT_SECS,
    };
    env.gate
        .ask(cx, fetch_ask(&url, input.format, secs))
        .await?;

    let fetch = Fetch {
        env,
        cx,
        format: input.format,
        secs,
        deadline: Mutex::new(Instant::now() + Duration::from_secs(secs)),
    };
    let cancelled = cx.cancellation().clone();
    tokio::select! {
        result = fetch.run(url.clone()) => result,
        () = cancelled.cancelled() => {
            Err(ToolFailure::new(format!("Fetching `{url}` was interrupted and stopped.")))
        }
    }
}

/// Parses and checks the URL the model gave.
fn parse_url(raw: &str) -> Result<Url, ToolFailure> {
    let trimmed = raw.trim();
    let lower = trimmed.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(ToolFailure::new(format!(
            "URL must start with http:// or https://, but `url` is `{trimmed}`."
        ))
        .with_hint("Give the full URL, for example `https://example.com/page`."));
    }
    let url = Url::parse(trimmed)
        .map_err(|e| ToolFailure::new(format!("`{trimmed}` is not a valid URL: {e}.")))?;
    check_url(&url)?;
    Ok(url)
}

/// Checks a URL given by the model or by a redirect.
fn check_url(url: &Url) -> Result<(), ToolFailure> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolFailure::new(format!(
            "`{url}` uses the `{}` scheme; webfetch fetches only http:// and https:// URLs.",
            url.scheme()
        )));
    }
    if url.host().is_none() {
        return Err(ToolFailure::new(format!("`{url}` has no host.")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ToolFailure::new(format!(
            "`{}` carries credentials; webfetch does not send credentials in URLs.",
            redact_credentials(url)
        ))
        .with_hint("Remove the `user:password@` part of the URL."));
    }
    Ok(())
}

/// The URL with any user name and password replaced by `***`.
fn redact_credentials(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("***");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// What an "always" reply to a webfetch question saves: the URL's origin, such as
/// `https://example.com/*`.
fn host_pattern(url: &Url) -> String {
    format!("{}/*", url.origin().ascii_serialization())
}

fn fetch_ask(url: &Url, format: WebFetchFormat, secs: u64) -> Ask {
    Ask::new(Permission::WEBFETCH.as_str(), [url.to_string()])
        .with_always([host_pattern(url)])
        .with_metadata(json!({
            "url": url.to_string(),
            "format": format.as_str(),
            "timeout": secs,
        }))
}

/// One call's fetch: the hops, the checks and the body.
struct Fetch<'a> {
    env: &'a ToolEnv,
    cx: &'a Context,
    format: WebFetchFormat,
    secs: u64,
    /// When the network work must be done. Time spent waiting for a permission reply moves it
    /// later: the timeout measures the server, not the user.
    deadline: Mutex<Instant>,
}

impl Fetch<'_> {
    /// Runs `work` for `url` within the deadline.
    async fn within<T>(
        &self,
        url: &Url,
        work: impl Future<Output = Result<T, ToolFailure>>,
    ) -> Result<T, ToolFailure> {
        let deadline = *self.deadline.lock().unwrap_or_else(|e| e.into_inner());
        let secs = self.secs;
        tokio::time::timeout_at(deadline, work)
            .await
            .unwrap_or_else(|_| {
                Err(ToolFailure::new(format!(
                    "Fetching `{url}` timed out after {secs} second{}.",
                    if secs == 1 { "" } else { "s" }
                ))
                .with_hint(format!(
                    "Retry with a larger timeout (at most {MAX_TIMEOUT_SECS} seconds) if the site \
                     is slow, or try another URL."
                )))
            })
    }

    /// Asks the gate, not counting the wait against the timeout.
    async fn ask(&self, ask: Ask) -> Result<(), ToolFailure> {
        let started = Instant::now();
        let result = self.env.gate.ask(self.cx, ask).await;
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) += started.elapsed();
        result
    }

    async fn run(&self, start: Url) -> Result<WebFetchOutput, ToolFailure> {
        let mut url = start.clone();
        let mut private_allowed: HashSet<String> = HashSet::new();
        let mut redirects = 0;
        loop {
            let addrs = self.checked_addresses(&url, &mut private_allowed).await?;
            let response = self.within(&url, self.send(&url, &addrs)).await?;
            let status = response.status();
            if status.is_redirection()
                && let Some(location) = response.headers().get(LOCATION)
            {
                let location = location.to_str().map_err(|_| {
                    ToolFailure::new(format!(
                        "`{url}` redirected (HTTP {}) to a location that is not valid text.",
                        status.as_u16()
                    ))
                })?;
                let next = url.join(location).map_err(|e| {
                    ToolFailure::new(format!(
                        "`{url}` redirected to `{location}`, which is not a valid URL: {e}."
                    ))
                })?;
                redirects += 1;
                if redirects > MAX_REDIRECTS {
                    return Err(ToolFailure::new(format!(
                        "Fetching `{start}` was redirected more than {MAX_REDIRECTS} times; the \
                         last redirect pointed to `{next}`."
                    ))
                    .with_hint("Fetch the final page's URL directly, if you know it."));
                }
                check_url(&next).map_err(|e| {
                    ToolFailure::new(format!(
                        "`{url}` redirected to a URL webfetch refuses: {}",
                        e.message()
                    ))
                })?;
                if next.origin() != url.origin() {
                    self.ask(fetch_ask(&next, self.format, self.secs)).await?;
                }
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(status_failure(&url, status));
            }
            let body_url = url.clone();
            return self.within(&body_url, self.read(url, response)).await;
        }
    }

    /// Resolves the URL's host and asks `webfetch_private` on `host:port` when any address is not
    /// public.
    async fn checked_addresses(
        &self,
        url: &Url,
        private_allowed: &mut HashSet<String>,
    ) -> Result<Vec<SocketAddr>, ToolFailure> {
        let port = url.port_or_known_default().unwrap_or(80);
        let host = url.host_str().unwrap_or_default().to_owned();
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = match literal.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => {
                let lookup = async {
                    tokio::net::lookup_host((host.as_str(), port))
                        .await
                        .map(Iterator::collect)
                        .map_err(|e| {
                            ToolFailure::new(format!(
                                "Could not resolve the host `{host}` of `{url}`: {e}."
                            ))
                            .with_hint("Check the spelling of the host name.")
                        })
                };
                self.within(url, lookup).await?
            }
        };
        if addrs.is_empty() {
            return Err(ToolFailure::new(format!(
                "The host `{host}` of `{url}` resolved to no address."
            )));
        }
        let private: Vec<String> = addrs
            .iter()
            .filter(|a| !is_public(a.ip()))
            .map(|a| a.ip().to_string())
            .collect();
        // Approved per host and port: allowing a local web server allows no other service there.
        let host_port = format!("{host}:{port}");
        if !private.is_empty() && !private_allowed.contains(&host_port) {
            let ask = Ask::new(Permission::WEBFETCH_PRIVATE.as_str(), [host_port.clone()])
                .with_always([host_port.clone()])
                .with_metadata(json!({
                    "url": url.to_string(),
                    "host": host,
                    "port": port,
                    "addresses": private,
                }));
            self.ask(ask).await.map_err(|refused| {
                ToolFailure::new(format!(
                    "`{url}` resolves to a loopback, private or link-local address ({}), which \
                     needs the `webfetch_private` permission: {}",
                    private.join(", "),
                    refused.message()
                ))
            })?;
            private_allowed.insert(host_port);
        }
        Ok(addrs)
    }

    /// Sends one GET to `url`, connecting only to `addrs`.
    async fn send(
        &self,
        url: &Url,
        addrs: &[SocketAddr],
    ) -> Result<reqwest::Response, ToolFailure> {
        let mut builder = client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if let Some(host) = url.host_str()
            && host.parse::<IpAddr>().is_err()
            && !host.starts_with('[')
        {
            builder = builder.resolve_to_addrs(host, addrs);
        }
        let client = builder
            .build()
            .map_err(|e| ToolFailure::new(format!("Could not set up the HTTP client: {e}.")))?;
        client
            .get(url.clone())
            .header(USER_AGENT, BROWSER_USER_AGENT)
            .header(ACCEPT, self.format.accept())
            .header(ACCEPT_LANGUAGE, "en-US,en;q=0.9")
            .send()
            .await
            .map_err(|e| ToolFailure::new(format!("Could not fetch `{url}`: {}.", error_chain(&e))))
    }

    /// Reads the body within the size cap and turns it into the output.
    async fn read(
        &self,
        url: Url,
        mut response: reqwest::Response,
    ) -> Result<WebFetchOutput, ToolFailure> {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(length) = declared
            && length > MAX_RESPONSE_BYTES
        {
            return Err(too_large(
                &url,
                &format!("declares {}, so it was not read", human(length)),
            ));
        }
        let mut body: Vec<u8> = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            ToolFailure::new(format!(
                "Reading the response from `{url}` failed: {}.",
                error_chain(&e)
            ))
        })? {
            if body.len() as u64 + chunk.len() as u64 > MAX_RESPONSE_BYTES {
                return Err(too_large(
                    &url,
                    &format!(
                        "sent more; reading stopped after {}",
                        human(body.len() as u64)
                    ),
                ));
            }
            body.extend_from_slice(&chunk);
        }
        let bytes = body.len() as u64;
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        self.cx.set_title(format!(
            "{url} ({})",
            if content_type.is_empty() {
                "no content type"
            } else {
                &content_type
            }
        ));
        let mut output = WebFetchOutput {
            output: String::new(),
            url: url.to_string(),
            status,
            content_type,
            bytes,
            mime_type: None,
            data_base64: None,
        };
        if is_image(&mime) {
            output.output = format!(
                "Image fetched successfully: {url} ({mime}, {}).",
                human(bytes)
            );
            output.data_base64 = Some(base64::engine::general_purpose::STANDARD.encode(&body));
            output.mime_type = Some(mime);
            return Ok(output);
        }
        let html = is_html(&mime) || (mime.is_empty() && looks_like_html(&body));
        let textual = is_textual(&mime) || (mime.is_empty() && std::str::from_utf8(&body).is_ok());
        if !html && !textual {
            return Err(ToolFailure::new(format!(
                "`{url}` returned `{}` content ({}), which webfetch cannot show as text or an \
                 image.",
                if mime.is_empty() { "unknown" } else { &mime },
                human(bytes)
            ))
            .with_hint("Fetch an HTML, text or image URL instead."));
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let target = match self.format {
            WebFetchFormat::Markdown => Some(html::Target::Markdown),
            WebFetchFormat::Text => Some(html::Target::Text),
            WebFetchFormat::Html => None,
        };
        output.output = match target.filter(|_| html) {
            Some(target) => html::convert(text, target)
                .await
                .map_err(|error| conversion_failure(&url, self.format, &error))?,
            None => text,
        };
        Ok(output)
    }
}

/// The failure for a page the HTML converter refused or could not convert.
fn conversion_failure(
    url: &Url,
    format: WebFetchFormat,
    error: &html::ConvertError,
) -> ToolFailure {
    let what = match error {
        html::ConvertError::TooDeep => format!(
            "`{url}` nests HTML elements more than {} levels deep, deeper than webfetch \
             converts to {}; nothing was returned.",
            thousands(html::MAX_DEPTH),
            format.as_str()
        ),
        html::ConvertError::NoThread => format!(
            "`{url}` was fetched but not converted to {}: the converter could not start; \
             nothing was returned.",
            format.as_str()
        ),
    };
    ToolFailure::new(what).with_hint(
        "Fetch it again with `format` set to `html` to get the page as the server sent it, or \
         try another URL.",
    )
}

fn status_failure(url: &Url, status: reqwest::StatusCode) -> ToolFailure {
    let reason = status.canonical_reason().unwrap_or("Unknown status");
    let failure = ToolFailure::new(format!(
        "`{url}` answered HTTP {} {reason}; nothing was fetched.",
        status.as_u16()
    ));
    match status.as_u16() {
        401 | 403 => failure.with_hint("The page needs a login or blocks automated requests."),
        404 | 410 => failure.with_hint("Check the URL, or search for the page's current address."),
        429 => failure.with_hint("The site is rate-limiting; wait before retrying."),
        500..=599 => failure.with_hint("The server failed; retry later or try another source."),
        _ => failure,
    }
}

/// The size limit as the model reads it.
const LIMIT_TEXT: &str = "5 MiB (5,242,880-byte)";

fn too_large(url: &Url, what: &str) -> ToolFailure {
    ToolFailure::new(format!(
        "The response from `{url}` {what}, over the {LIMIT_TEXT} size limit of webfetch; nothing \
         was returned."
    ))
    .with_hint("Fetch a smaller page, or a more specific URL.")
}

/// A reqwest client builder with ring installed as the process's TLS crypto provider, which
/// reqwest's `rustls-no-provider` build needs before any client is built.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    // An error means a provider is installed already, which is all reqwest needs.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// The error and its sources, joined, so "error sending request" says why. The URL reqwest
/// appends is left out: the caller names it already.
pub(crate) fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text
            .replace(&format!(" for url ({url})"), "")
            .replace(&format!(" ({url})"), "");
    }
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    text
}

fn is_image(mime: &str) -> bool {
    mime.starts_with("image/") && mime != "image/svg+xml" && mime != "image/vnd.fastbidsheet"
}

fn is_html(mime: &str) -> bool {
    mime == "text/html" || mime == "application/xhtml+xml"
}

fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/x-sh"
                | "application/toml"
                | "application/yaml"
                | "application/x-yaml"
                | "image/svg+xml"
        )
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// Whether `ip` is an address on the public internet, rather than loopback, private,
/// link-local, unique-local, unspecified or otherwise special: the sandbox proxy's rule.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    !tackle_sandbox::proxy::is_local_or_private(ip)
}
