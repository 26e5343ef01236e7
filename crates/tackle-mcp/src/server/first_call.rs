//! A host's step before a connection's first `tools/call`: it may ask the person behind the
//! client one yes/no question (whether to trust the project's configuration) by form
//! elicitation, change its tools, and have that first call settle against the new ones.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::TackleServer;
use crate::elicit::{AskFailure, Asker};

/// The host's step, given the connection's first call.
pub(super) type BeforeFirstCall =
    Arc<dyn Fn(FirstCall) -> Pin<Box<dyn Future<Output = Prepared> + Send>> + Send + Sync>;

/// How long a person has to answer a question before it counts as unanswered.
pub const QUESTION_TIMEOUT: Duration = Duration::from_secs(600);

/// A connection's first `tools/call`, as the host's step sees it.
pub struct FirstCall {
    /// The session of the connection.
    pub session: String,
    /// The client that made the call.
    pub client: Client,
}

impl fmt::Debug for FirstCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FirstCall")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// What the host's step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepared {
    /// Nothing that changes the tools: the call settles against the connection's listing.
    Unchanged,
    /// The host's tools changed (now or earlier): the call settles against a fresh listing,
    /// which becomes the connection's.
    ToolsChanged,
}

/// The client that made a call, for one question to the person behind it.
pub struct Client {
    asker: Asker,
}

/// The person's answer to a yes/no question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirmation {
    /// The person chose yes.
    Yes,
    /// The person chose no, declined or cancelled the form.
    No,
    /// Nobody answered: the client failed, or the time ran out. Says why.
    Unanswered(String),
}

impl Client {
    /// True when the client declared form elicitation, so a person can be asked.
    pub fn can_ask(&self) -> bool {
        self.asker.can_ask()
    }

    /// Asks `message` as a form with one required choice between `yes` and `no` (the labels
    /// the person picks from), within [`QUESTION_TIMEOUT`].
    pub async fn confirm(&self, message: String, yes: &str, no: &str) -> Confirmation {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: choice(yes, no),
        };
        match self.asker.ask(params, Some(QUESTION_TIMEOUT)).await {
            Ok(result) => confirmation_of(result.action, result.content.as_ref(), yes),
            Err(AskFailure::Failed(error)) => Confirmation::Unanswered(error),
            Err(AskFailure::Unanswered(why)) => Confirmation::Unanswered(why.to_owned()),
            Err(AskFailure::Unreadable(error)) => {
                Confirmation::Unanswered(format!("unreadable answer: {error}"))
            }
        }
    }
}

/// The form: one required choice.
fn choice(yes: &str, no: &str) -> ElicitationSchema {
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {"type": "string", "title": "Decision", "enum": [yes, no]},
        },
        "required": ["decision"],
    });
    serde_json::from_value(schema).expect("a one-choice form is a valid elicitation schema")
}

/// Yes only for an accepted form whose decision is `yes`; anything else is no.
fn confirmation_of(action: ElicitationAction, content: Option<&Value>, yes: &str) -> Confirmation {
    let decision = content
        .and_then(|c| c.get("decision"))
        .and_then(Value::as_str);
    match action {
        ElicitationAction::Accept if decision == Some(yes) => Confirmation::Yes,
        _ => Confirmation::No,
    }
}

impl TackleServer {
    /// Runs `step` once per connection, before its first `tools/call` settles (calls that
    /// arrive meanwhile wait for it). A host uses it to ask the person something by elicitation
    /// and change its tools; [`Prepared::ToolsChanged`] makes the call settle against a fresh
    /// listing. A call cancelled meanwhile stops waiting, and the next call runs the step again.
    pub fn with_before_first_call<F, Fut>(self, step: F) -> Self
    where
        F: Fn(FirstCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Prepared> + Send + 'static,
    {
        let step: BeforeFirstCall = Arc::new(move |call| Box::pin(step(call)));
        self.reconfigure(|inner| inner.before_first_call = Some(step))
    }

    /// Runs the host's step when this is the connection's first call; a changed host drops
    /// the connection's listing so the call lists afresh.
    pub(super) async fn before_first_call(&self, asker: Asker, cancelled: &CancellationToken) {
        let Some(step) = self.inner.before_first_call.clone() else {
            return;
        };
        let prepare = self.connection.first_call.get_or_init(|| async {
            let call = FirstCall {
                session: self.session().to_owned(),
                client: Client { asker },
            };
            if step(call).await == Prepared::ToolsChanged {
                *self
                    .connection
                    .listed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = None;
            }
        });
        tokio::select! {
            _ = prepare => {}
            () = cancelled.cancelled() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_accepted_yes_is_yes() {
        let answer = |action, content: Value| confirmation_of(action, Some(&content), "trust");
        let trust = json!({"decision": "trust"});
        assert_eq!(
            answer(ElicitationAction::Accept, trust.clone()),
            Confirmation::Yes
        );
        assert_eq!(
            answer(ElicitationAction::Accept, json!({"decision": "ignore"})),
            Confirmation::No
        );
        assert_eq!(answer(ElicitationAction::Decline, trust), Confirmation::No);
        assert_eq!(
            confirmation_of(ElicitationAction::Cancel, None, "trust"),
            Confirmation::No
        );
        assert_eq!(
            confirmation_of(ElicitationAction::Accept, None, "trust"),
            Confirmation::No
        );
    }

    #[test]
    fn the_form_requires_one_of_the_two_choices() {
        let schema = serde_json::to_value(choice("trust", "ignore")).unwrap();
        assert_eq!(
            schema["properties"]["decision"]["enum"],
            json!(["trust", "ignore"])
        );
        assert_eq!(schema["required"], json!(["decision"]));
    }
}
