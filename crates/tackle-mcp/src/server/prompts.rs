//! MCP prompts: what a host offers a person to start (tackle: the skills `skill` offers), as
//! `prompts/list` and `prompts/get`. A prompt is one user message with the host's text, and
//! takes one optional argument, [`REQUEST_ARGUMENT`], appended after it.

use std::sync::Arc;

use rmcp::ErrorData;

use super::resources::blocking;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage, Role,
};

/// The optional argument of every prompt: what the person wants done, appended to the message.
pub const REQUEST_ARGUMENT: &str = "request";

/// One prompt a host offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptEntry {
    /// Its name (a skill's name).
    pub name: String,
    /// When to use it.
    pub description: String,
}

/// What a host offers as prompts. Both methods may do blocking IO: the server calls them on a
/// blocking thread.
pub trait PromptSource: Send + Sync + 'static {
    /// The prompts offered now.
    fn list(&self) -> Vec<PromptEntry>;

    /// The text of the prompt `name` (the message a person starts with), or `None` when no
    /// such prompt is offered.
    fn get(&self, name: &str) -> Option<String>;
}

/// `prompts/list`: every prompt, with the optional [`REQUEST_ARGUMENT`].
pub(crate) async fn list(prompts: Arc<dyn PromptSource>) -> Result<ListPromptsResult, ErrorData> {
    let entries = blocking(move || prompts.list()).await?;
    let listed = entries
        .into_iter()
        .map(|entry| {
            let argument = PromptArgument::new(REQUEST_ARGUMENT)
                .with_description("What you want done with it; appended after its instructions.")
                .with_required(false);
            Prompt::new(entry.name, Some(entry.description), Some(vec![argument]))
        })
        .collect();
    Ok(ListPromptsResult::with_all_items(listed))
}

/// `prompts/get`: the prompt's text as one user message, the request appended when given.
pub(crate) async fn get(
    prompts: Arc<dyn PromptSource>,
    request: GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    let name = request.name.clone();
    let (found, offered) = blocking(move || {
        let found = prompts.get(&name);
        let offered = match found {
            Some(_) => Vec::new(),
            None => prompts.list().into_iter().map(|p| p.name).collect(),
        };
        (found, offered)
    })
    .await?;
    let Some(mut text) = found else {
        let offered = match offered.is_empty() {
            true => "none".to_owned(),
            false => offered.join(", "),
        };
        return Err(ErrorData::invalid_params(
            format!(
                "no prompt named `{}`; the prompts offered are: {offered}",
                request.name
            ),
            None,
        ));
    };
    let arguments = request.arguments.unwrap_or_default();
    if let Some(unknown) = arguments.keys().find(|key| *key != REQUEST_ARGUMENT) {
        return Err(ErrorData::invalid_params(
            format!(
                "prompt `{}` takes only the argument `{REQUEST_ARGUMENT}`, not `{unknown}`",
                request.name
            ),
            None,
        ));
    }
    match arguments.get(REQUEST_ARGUMENT) {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(asked)) if asked.trim().is_empty() => {}
        Some(serde_json::Value::String(asked)) => {
            text.push_str("\n\n");
            text.push_str(asked.trim());
        }
        Some(_) => {
            return Err(ErrorData::invalid_params(
                format!("the argument `{REQUEST_ARGUMENT}` is text"),
                None,
            ));
        }
    }
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text,
    )]))
}
