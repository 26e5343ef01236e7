//! The websearch tool: a web search through an Exa-compatible MCP server over HTTP.
//!
//! The tool sends one JSON-RPC `tools/call` for the provider's `web_search_exa` tool and renders
//! the text content of the result. The server may answer with plain JSON or with a
//! `text/event-stream` whose `data:` lines carry the JSON-RPC response. The API key travels only
//! in the `x-api-key` header and is redacted from anything the model or the host sees.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tackle_core::names::Permission;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure};

use super::ToolEnv;
use super::webfetch::{client_builder, error_chain};
use crate::gate::Ask;

#[cfg(test)]
mod tests;

/// The environment variable naming the search endpoint.
pub(crate) const URL_VAR: &str = "TACKLE_WEBSEARCH_URL";
/// The environment variable holding the search API key.
pub(crate) const KEY_VAR: &str = "TACKLE_WEBSEARCH_KEY";

/// The variable naming the providers websearch is offered to, comma-separated.
pub(crate) const PROVIDERS_VAR: &str = "TACKLE_WEBSEARCH_PROVIDERS";

/// `a, b,,c` as `[a, b, c]`.
fn parse_providers(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The name of the provider's search tool.
const SEARCH_TOOL: &str = "web_search_exa";
/// Results when the call asks for no number.
const DEFAULT_RESULTS: u32 = 8;
/// The most results a call may ask for.
const MAX_RESULTS: u32 = 20;
/// What the model reads when the provider found nothing.
const NO_RESULTS: &str = "No search results found. Please try a different query.";
/// How long one search may take.
const TIMEOUT: Duration = Duration::from_secs(25);
/// The largest response read from the provider, in bytes.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

const DESCRIPTION: &str = "Search the web and return the top results with their content.\n\
- query is what to search for; write it as you would type it into a search engine.\n\
- numResults is how many results to return: 8 by default, at most 20.\n\
- type is `auto` (default), `fast` (quicker, shallower) or `deep` (slower, more thorough).\n\
- Use it for current information: recent releases, documentation, news, error messages.\n\
- Fetch a result's URL with webfetch when you need the whole page.";

/// Where websearch sends its queries.
#[derive(Clone, PartialEq, Eq)]
pub struct WebSearchConfig {
    /// The URL of the Exa-compatible MCP endpoint, such as `https://mcp.exa.ai/mcp`.
    pub endpoint: String,
    /// The API key, sent as the `x-api-key` header when set.
    pub api_key: Option<String>,
    /// The model providers the tool is offered to (its provider needs, see
    /// `Tool::with_providers`); `None` offers it to every model. A host whose search account
    /// belongs to one provider's plan, say, restricts it here.
    pub providers: Option<Vec<String>>,
}

impl fmt::Debug for WebSearchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSearchConfig")
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("providers", &self.providers)
            .finish()
    }
}

impl WebSearchConfig {
    /// A configuration for `endpoint`, without a key.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            api_key: None,
            providers: None,
        }
    }

    /// Offers the tool only to models of these providers.
    pub fn with_providers<S: Into<String>>(
        mut self,
        providers: impl IntoIterator<Item = S>,
    ) -> Self {
        self.providers = Some(providers.into_iter().map(Into::into).collect());
        self
    }

    /// Sends `key` as the `x-api-key` header.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The configuration from `TACKLE_WEBSEARCH_URL`, `TACKLE_WEBSEARCH_KEY` and
    /// `TACKLE_WEBSEARCH_PROVIDERS` (comma-separated provider names); `None` when no endpoint is
    /// set. A blank key or provider list counts as none.
    pub fn from_env() -> Option<Self> {
        let endpoint = std::env::var(URL_VAR).ok()?;
        let endpoint = endpoint.trim();
        if endpoint.is_empty() {
            return None;
        }
        let api_key = std::env::var(KEY_VAR)
            .ok()
            .map(|key| key.trim().to_owned())
            .filter(|key| !key.is_empty());
        let providers = std::env::var(PROVIDERS_VAR)
            .ok()
            .map(|list| parse_providers(&list))
            .filter(|list| !list.is_empty());
        Some(Self {
            endpoint: endpoint.to_owned(),
            api_key,
            providers,
        })
    }

    /// `text` with the API key replaced by `[redacted]`.
    pub(super) fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) if !key.is_empty() => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_owned(),
        }
    }
}

/// How thoroughly to search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchType {
    /// The provider picks.
    #[default]
    Auto,
    /// Quicker and shallower.
    Fast,
    /// Slower and more thorough.
    Deep,
}

/// Arguments of the websearch tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchInput {
    /// What to search for.
    pub query: String,
    /// How many results to return: 8 by default, at most 20.
    #[serde(default)]
    pub num_results: Option<u32>,
    /// How thoroughly to search: `auto` (default), `fast` or `deep`.
    #[serde(default, rename = "type")]
    pub search_type: SearchType,
}

/// The result of the websearch tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchOutput {
    /// The results as the provider rendered them, for the model to read.
    pub output: String,
    /// The query searched for.
    pub query: String,
    /// The number of results asked for.
    pub num_results: u32,
}

pub(crate) fn tool(env: &ToolEnv, config: WebSearchConfig) -> AnyTool {
    let providers = config.providers.clone();
    let state = Arc::new(Search::new(env, config));
    let tool = Tool::with_state(DESCRIPTION, state, search_until_cancelled)
        .with_projection(super::project_output);
    offered_to(tool, providers)
}

/// `tool` offered to the models of `providers`, or to every model.
pub(super) fn offered_to<I, O>(tool: Tool<I, O>, providers: Option<Vec<String>>) -> AnyTool
where
    I: DeserializeOwned + JsonSchema + Send + Sync + 'static,
    O: Serialize + JsonSchema + Send + Sync + 'static,
{
    match providers {
        Some(providers) => tool.with_providers(providers).erase(),
        None => tool.erase(),
    }
}

/// What every call to the search provider shares: one HTTP client (building one loads the TLS
/// roots).
pub(super) struct Search {
    pub(super) env: ToolEnv,
    pub(super) config: WebSearchConfig,
    pub(super) client: Result<reqwest::Client, String>,
}

impl Search {
    pub(super) fn new(env: &ToolEnv, config: WebSearchConfig) -> Self {
        let client = client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("Could not set up the HTTP client: {e}."));
        Self {
            env: env.clone(),
            config,
            client,
        }
    }
}

async fn search_until_cancelled(
    State(search): State<Arc<Search>>,
    input: WebSearchInput,
    cx: Context,
) -> Result<WebSearchOutput, ToolFailure> {
    let cancelled = cx.cancellation().clone();
    let client = search.client.clone();
    tokio::select! {
        result = websearch(&search.env, &search.config, client, &cx, input) => result,
        () = cancelled.cancelled() => {
            Err(ToolFailure::new("The search was interrupted and stopped."))
        }
    }
}

async fn websearch(
    env: &ToolEnv,
    config: &WebSearchConfig,
    client: Result<reqwest::Client, String>,
    cx: &Context,
    input: WebSearchInput,
) -> Result<WebSearchOutput, ToolFailure> {
    let query = input.query.trim().to_owned();
    if query.is_empty() {
        return Err(
            ToolFailure::new("`query` is empty, so nothing was searched.")
                .with_hint("Give the words to search for."),
        );
    }
    let num_results = match input.num_results {
        Some(0) => {
            return Err(
                ToolFailure::new("`numResults` is 0, so nothing was searched.")
                    .with_hint("Ask for 1 to 20 results, or leave it out for 8."),
            );
        }
        Some(n) => n.min(MAX_RESULTS),
        None => DEFAULT_RESULTS,
    };
    let search_type = match input.search_type {
        SearchType::Auto => "auto",
        SearchType::Fast => "fast",
        SearchType::Deep => "deep",
    };
    env.gate
        .ask(
            cx,
            Ask::new(Permission::WEBSEARCH.as_str(), [query.clone()]).with_metadata(json!({
                "query": query,
                "numResults": num_results,
                "type": search_type,
            })),
        )
        .await?;
    cx.set_title(format!("Web search \"{query}\""));

    let body = call_provider(
        client,
        config,
        SEARCH_TOOL,
        json!({"query": query, "numResults": num_results, "type": search_type}),
        TIMEOUT,
        "Retry once, or with type `fast`.",
    )
    .await?;
    let output = render(&body, NO_RESULTS).map_err(|message| {
        ToolFailure::new(config.redact(&message))
            .with_hint("Retry once; if it fails again, answer without web search.")
    })?;
    Ok(WebSearchOutput {
        output: config.redact(&output),
        query,
        num_results,
    })
}

/// Calls the provider's tool `name` with `arguments` and returns the answer's body, redacting
/// any failure; a timeout carries `timeout_hint`.
pub(super) async fn call_provider(
    client: Result<reqwest::Client, String>,
    config: &WebSearchConfig,
    name: &str,
    arguments: Value,
    timeout: Duration,
    timeout_hint: &str,
) -> Result<String, ToolFailure> {
    let request = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    });
    match tokio::time::timeout(timeout, post(client, config, &request)).await {
        Ok(result) => result.map_err(|message| ToolFailure::new(config.redact(&message))),
        Err(_) => Err(ToolFailure::new(format!(
            "The search provider did not answer within {} seconds; nothing was found.",
            timeout.as_secs()
        ))
        .with_hint(timeout_hint)),
    }
}

/// Posts the request and returns the body as text; the error is a message still to redact.
async fn post(
    client: Result<reqwest::Client, String>,
    config: &WebSearchConfig,
    request: &Value,
) -> Result<String, String> {
    let mut builder = client?
        .post(&config.endpoint)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .body(request.to_string());
    if let Some(key) = &config.api_key {
        builder = builder.header("x-api-key", key);
    }
    let mut response = builder
        .send()
        .await
        .map_err(|e| format!("Could not reach the search provider: {}.", error_chain(&e)))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        format!(
            "Reading the search provider's answer failed: {}.",
            error_chain(&e)
        )
    })? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(format!(
                "The search provider's answer is over the {} KiB limit.",
                MAX_RESPONSE_BYTES / 1024
            ));
        }
        body.extend_from_slice(&chunk);
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    if !status.is_success() {
        let reason = status.canonical_reason().unwrap_or("Unknown status");
        let detail: String = text.trim().chars().take(300).collect();
        return Err(format!(
            "The search provider answered HTTP {} {reason}{}",
            status.as_u16(),
            if detail.is_empty() {
                ".".to_owned()
            } else {
                format!(": {detail}")
            }
        ));
    }
    Ok(text)
}

/// The JSON-RPC response in `body`, plain JSON or server-sent events, rendered as text; `empty`
/// when the provider found nothing.
pub(crate) fn render(body: &str, empty: &str) -> Result<String, String> {
    let response = parse_response(body)?;
    if let Some(error) = response.get("error") {
        let message = error["message"].as_str().unwrap_or("unknown error");
        return Err(format!("The search provider refused the search: {message}"));
    }
    let Some(result) = response.get("result") else {
        return Err("The search provider's answer has no result.".to_owned());
    };
    let text = result["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|part| part["type"] == "text")
                .filter_map(|part| part["text"].as_str())
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .unwrap_or_default();
    if result["isError"] == true {
        return Err(format!(
            "The search provider reported an error: {}",
            if text.is_empty() { "no details" } else { &text }
        ));
    }
    if text.is_empty() {
        return Ok(empty.to_owned());
    }
    Ok(text)
}

/// The JSON-RPC response: the whole body as JSON, or the first `data:` event holding a result
/// or an error.
fn parse_response(body: &str) -> Result<Value, String> {
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str(trimmed)
            .map_err(|e| format!("The search provider's answer is not valid JSON: {e}."));
    }
    // Server-sent events: an event's `data:` lines joined by newlines; events end at a blank
    // line.
    let mut data = String::new();
    let mut events = Vec::new();
    for line in body.lines() {
        if line.is_empty() {
            if !data.is_empty() {
                events.push(std::mem::take(&mut data));
            }
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    if !data.is_empty() {
        events.push(data);
    }
    events
        .iter()
        .filter_map(|event| serde_json::from_str::<Value>(event).ok())
        .find(|value| value.get("result").is_some() || value.get("error").is_some())
        .ok_or_else(|| "The search provider's answer holds no JSON-RPC result.".to_owned())
}
