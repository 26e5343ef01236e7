//! The codesearch tool: code examples and documentation through the websearch provider.
//!
//! It calls the provider's `get_code_context_exa` tool on the same MCP-over-HTTP endpoint as
//! websearch, with the same configuration, provider filter, key handling and answer parsing
//! (plain JSON or server-sent events).

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tackle_core::names::Permission;
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure};

use super::ToolEnv;
use super::websearch::{Search, WebSearchConfig, call_provider, offered_to, render};
use crate::gate::Ask;

#[cfg(test)]
mod tests;

/// The name of the provider's code-context tool.
const CODE_TOOL: &str = "get_code_context_exa";
/// Tokens returned when the call asks for no number.
pub(crate) const DEFAULT_TOKENS: u32 = 5_000;
/// The fewest tokens a call may ask for.
pub(crate) const MIN_TOKENS: u32 = 1_000;
/// The most tokens a call may ask for.
pub(crate) const MAX_TOKENS: u32 = 50_000;
/// How long one search may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// What the model reads when the provider found nothing.
const NOTHING_FOUND: &str = "No code snippets or documentation found. Try a different query, be \
more specific about the library or programming concept, or check the spelling of framework names.";

const DESCRIPTION: &str = "Search code examples and documentation of libraries, SDKs and APIs, \
and return the relevant snippets.\n\
- query is what you need, such as `React useState hook examples` or `Rust tokio select! with \
timeout`; name the library and the concept.\n\
- tokensNum is how much text to return: 5,000 tokens by default, from 1,000 to 50,000. Ask for \
fewer for a focused answer, more for a broad one.\n\
- Use it for how to use an API or library; use websearch for news and other web content, and \
grep for this project's own code.";

/// Arguments of the codesearch tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeSearchInput {
    /// What to search for: the library, API or concept, such as `Express.js middleware`.
    pub query: String,
    /// How many tokens of snippets to return: 5,000 by default, from 1,000 to 50,000.
    #[serde(default)]
    #[schemars(range(min = 1000, max = 50000))]
    pub tokens_num: Option<u32>,
}

/// The result of the codesearch tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeSearchOutput {
    /// The snippets as the provider rendered them, for the model to read.
    pub output: String,
    /// The query searched for.
    pub query: String,
    /// The number of tokens asked for.
    pub tokens_num: u32,
}

pub(crate) fn tool(env: &ToolEnv, config: WebSearchConfig) -> AnyTool {
    let providers = config.providers.clone();
    let state = Arc::new(Search::new(env, config));
    let tool = Tool::with_state(DESCRIPTION, state, search_until_cancelled)
        .with_projection(super::project_output);
    offered_to(tool, providers)
}

async fn search_until_cancelled(
    State(search): State<Arc<Search>>,
    input: CodeSearchInput,
    cx: Context,
) -> Result<CodeSearchOutput, ToolFailure> {
    let cancelled = cx.cancellation().clone();
    tokio::select! {
        result = codesearch(&search, &cx, input) => result,
        () = cancelled.cancelled() => {
            Err(ToolFailure::new("The code search was interrupted and stopped."))
        }
    }
}

async fn codesearch(
    search: &Search,
    cx: &Context,
    input: CodeSearchInput,
) -> Result<CodeSearchOutput, ToolFailure> {
    let query = input.query.trim().to_owned();
    if query.is_empty() {
        return Err(
            ToolFailure::new("`query` is empty, so nothing was searched.")
                .with_hint("Name the library, API or concept to search for."),
        );
    }
    let tokens_num = input.tokens_num.unwrap_or(DEFAULT_TOKENS);
    // The schema states the range too; this holds when a host skips the schema.
    if !(MIN_TOKENS..=MAX_TOKENS).contains(&tokens_num) {
        return Err(ToolFailure::new(format!(
            "`tokensNum` is {}, outside 1,000 to 50,000, so nothing was searched.",
            tackle_core::thousands(tokens_num)
        ))
        .with_hint("Ask for 1,000 to 50,000 tokens, or leave `tokensNum` out for 5,000."));
    }
    search
        .env
        .gate
        .ask(
            cx,
            Ask::new(Permission::CODESEARCH.as_str(), [query.clone()]).with_metadata(json!({
                "query": query,
                "tokensNum": tokens_num,
            })),
        )
        .await?;
    cx.set_title(format!("Code search \"{query}\""));

    let config = &search.config;
    let body = call_provider(
        search.client.clone(),
        config,
        CODE_TOOL,
        json!({"query": query, "tokensNum": tokens_num}),
        TIMEOUT,
        "Retry once, or with a smaller `tokensNum`.",
    )
    .await?;
    let output = render(&body, NOTHING_FOUND).map_err(|message| {
        ToolFailure::new(config.redact(&message))
            .with_hint("Retry once; if it fails again, answer without code search.")
    })?;
    Ok(CodeSearchOutput {
        output: config.redact(&output),
        query,
        tokens_num,
    })
}
