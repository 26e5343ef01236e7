//! Permission questions asked of the MCP client through elicitation.
//!
//! A tool that needs approval asks the host's [`PermissionService`], which hands the request to
//! an [`Approver`]. When tackle is an MCP server, the person to ask sits behind the client that
//! made the call. [`ElicitingApprover`] finds that client through [`ClientCalls`] (the server
//! records which client each running call came from) and sends it `elicitation/create` with a
//! form: allow once, always allow, or reject with optional feedback for the model. A client
//! that does not support form elicitation, or a call that did not come through MCP, goes to the
//! fallback approver instead (the CLI's: approve with `--yes`, else refuse with a message).
//!
//! Protocol revisions from 2026-07-28 forbid server-to-client requests. A client on such a
//! revision that declares form elicitation is asked through the call itself instead: the
//! server answers the `tools/call` with an `input_required` result carrying the same form, and
//! the client's retry brings the answer ([`crate::server`]'s `input_required` module). Any
//! other client of those revisions gets the fallback.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tackle_permission::{Approver, PermissionRequest, PermissionService, Reply, RequestId};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

/// How the person behind a running call is asked a question.
#[derive(Clone)]
pub(crate) enum Asker {
    /// With an `elicitation/create` request to the client (revisions before 2026-07-28).
    Request(Peer<RoleServer>),
    /// Through the call's own `input_required` result: the server's call driver receives the
    /// question and sends the client's answer back.
    InputRequired(mpsc::UnboundedSender<Question>),
}

/// Why an [`Asker`] got no answer it could use.
pub(crate) enum AskFailure {
    /// The client failed the `elicitation/create` request (its error).
    Failed(String),
    /// Nobody answered: the call ended, or the time ran out (which).
    Unanswered(&'static str),
    /// The answer was not an `ElicitResult` (why).
    Unreadable(String),
}

impl Asker {
    /// True when a person can be asked with a form: the client declared form elicitation (the
    /// server chose [`Asker::InputRequired`] only for such a client).
    pub(crate) fn can_ask(&self) -> bool {
        match self {
            Asker::Request(peer) => peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form),
            Asker::InputRequired(_) => true,
        }
    }

    /// Asks the form `params` and waits for the answer, at most `timeout` when given.
    pub(crate) async fn ask(
        &self,
        params: ElicitRequestParams,
        timeout: Option<std::time::Duration>,
    ) -> Result<ElicitResult, AskFailure> {
        match self {
            Asker::Request(peer) => peer
                .create_elicitation_with_timeout(params, timeout)
                .await
                .map_err(|error| AskFailure::Failed(error.to_string())),
            // MCP 2026-07-28: the question leaves in the call's `input_required` result.
            Asker::InputRequired(questions) => {
                let (answer, answered) = oneshot::channel();
                if questions.send(Question { params, answer }).is_err() {
                    return Err(AskFailure::Unanswered("the call ended"));
                }
                let value = match timeout {
                    Some(limit) => tokio::time::timeout(limit, answered)
                        .await
                        .map_err(|_| AskFailure::Unanswered("the time to answer ran out"))?,
                    None => answered.await,
                }
                .map_err(|_| AskFailure::Unanswered("the client did not answer"))?;
                serde_json::from_value(value).map_err(|e| AskFailure::Unreadable(e.to_string()))
            }
        }
    }
}

/// A permission question for the call driver to put in an `input_required` result.
pub(crate) struct Question {
    /// The form to show, as `elicitation/create` would carry it.
    pub(crate) params: ElicitRequestParams,
    /// Where the client's `ElicitResult` goes; dropped when nobody will answer.
    pub(crate) answer: oneshot::Sender<Value>,
}

/// Which MCP client each running call came from. Cheap to clone: clones share one table.
///
/// Give the same value to [`TackleServer::with_client_calls`](crate::TackleServer) and to an
/// [`ElicitingApprover`].
#[derive(Clone, Default)]
pub struct ClientCalls {
    inner: Arc<Mutex<HashMap<String, Asker>>>,
}

impl fmt::Debug for ClientCalls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCalls")
            .field("running", &self.table().len())
            .finish()
    }
}

impl ClientCalls {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Asker>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records how to ask about `call` until the returned guard drops.
    pub(crate) fn enter(&self, call: String, asker: Asker) -> RunningCall {
        self.table().insert(call.clone(), asker);
        RunningCall {
            calls: self.clone(),
            call,
        }
    }

    /// True when no call is running.
    pub fn is_idle(&self) -> bool {
        self.table().is_empty()
    }

    /// How to ask about the running call `call`.
    fn asker_of(&self, call: &str) -> Option<Asker> {
        self.table().get(call).cloned()
    }
}

/// Removes a call from [`ClientCalls`] when it ends.
pub(crate) struct RunningCall {
    calls: ClientCalls,
    call: String,
}

impl Drop for RunningCall {
    fn drop(&mut self) {
        self.calls.table().remove(&self.call);
    }
}

/// An [`Approver`] that asks the calling MCP client through elicitation, and hands every other
/// question to a fallback.
///
/// Like any approver it replies through the service, so [`ElicitingApprover::attach`] it to the
/// [`PermissionService`] it serves.
pub struct ElicitingApprover {
    calls: ClientCalls,
    fallback: Arc<dyn Approver>,
    service: OnceLock<Weak<PermissionService>>,
    /// Elicitations in flight, by permission request, so a request settled elsewhere (an
    /// "always" cascade, a cancelled call) stops waiting for the client.
    asking: Mutex<HashMap<RequestId, AbortHandle>>,
}

impl fmt::Debug for ElicitingApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElicitingApprover")
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl ElicitingApprover {
    /// Asks the clients recorded in `calls`; `fallback` answers what no client can.
    pub fn new(calls: ClientCalls, fallback: Arc<dyn Approver>) -> Self {
        Self {
            calls,
            fallback,
            service: OnceLock::new(),
            asking: Mutex::new(HashMap::new()),
        }
    }

    /// Connects the approver to the service whose questions it answers.
    pub fn attach(&self, service: &Arc<PermissionService>) {
        let _ = self.service.set(Arc::downgrade(service));
    }

    fn asking(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, AbortHandle>> {
        self.asking.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How to ask about `request`, when its client can be asked with a form.
    fn asker_for(&self, request: &PermissionRequest) -> Option<Asker> {
        let call = request.tool_call.as_ref()?;
        self.calls
            .asker_of(&call.call)
            .filter(|asker| asker.can_ask())
    }
}

impl Approver for ElicitingApprover {
    fn ask(&self, request: &PermissionRequest) {
        let (Some(asker), Some(service), Ok(runtime)) = (
            self.asker_for(request),
            self.service.get().cloned(),
            tokio::runtime::Handle::try_current(),
        ) else {
            self.fallback.ask(request);
            return;
        };
        let id = request.id.clone();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question(request),
            requested_schema: form(),
        };
        let task = runtime.spawn(async move {
            let remedy = Some("restart the server with --yes".to_owned());
            let reply = match asker.ask(params, None).await {
                Ok(result) => reply_of(result.action, result.content.as_ref()),
                Err(AskFailure::Failed(error)) => Reply::NoOneToAsk {
                    reason: format!("the MCP client could not show the question: {error}"),
                    remedy,
                },
                Err(AskFailure::Unanswered(_)) => Reply::NoOneToAsk {
                    reason: "the MCP client did not answer the permission question".to_owned(),
                    remedy,
                },
                Err(AskFailure::Unreadable(_)) => Reply::Reject { message: None },
            };
            if let Some(service) = service.upgrade()
                && let Err(error) = service.reply(&id, reply)
            {
                tracing::debug!("permission reply not taken: {error}");
            }
        });
        self.asking()
            .insert(request.id.clone(), task.abort_handle());
    }

    fn settled(&self, id: &RequestId) {
        if let Some(task) = self.asking().remove(id) {
            task.abort();
        }
        self.fallback.settled(id);
    }
}

/// The text the client shows: what is asked, on what, and the tool's details when they help.
fn question(request: &PermissionRequest) -> String {
    let mut text = format!(
        "Allow `{}` on {}?",
        request.permission,
        listed(&request.patterns)
    );
    if let Some(diff) = request.metadata.get("diff").and_then(Value::as_str) {
        text.push_str("\n\n");
        text.push_str(diff);
    }
    if request.always != request.patterns && !request.always.is_empty() {
        text.push_str(&format!(
            "\n\n\"Always allow\" saves: {}",
            listed(&request.always)
        ));
    }
    text
}

/// Patterns as "`a`, `b`".
fn listed(patterns: &[String]) -> String {
    patterns
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The form: a decision, and feedback the model reads when the user rejects.
fn form() -> ElicitationSchema {
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["once", "always", "reject"],
            },
            "feedback": {
                "type": "string",
                "title": "What to do instead (sent to the model when you reject)",
            },
        },
        "required": ["decision"],
    });
    serde_json::from_value(schema).expect("the permission form is a valid elicitation schema")
}

/// The permission reply for the client's answer.
fn reply_of(action: ElicitationAction, content: Option<&Value>) -> Reply {
    let field = |name: &str| {
        content
            .and_then(|c| c.get(name))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    match action {
        ElicitationAction::Accept => match field("decision").as_deref() {
            Some("once") => Reply::Once,
            Some("always") => Reply::Always,
            _ => Reply::Reject {
                message: field("feedback"),
            },
        },
        // Decline, cancel, and any action a later protocol adds.
        _ => Reply::Reject { message: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_offers_the_three_decisions_and_requires_one() {
        let schema = serde_json::to_value(form()).unwrap();
        assert_eq!(
            schema["properties"]["decision"]["enum"],
            json!(["once", "always", "reject"])
        );
        assert_eq!(schema["required"], json!(["decision"]));
    }

    #[test]
    fn answers_map_to_replies_and_anything_unclear_rejects() {
        let accept = |content: Value| reply_of(ElicitationAction::Accept, Some(&content));
        assert_eq!(accept(json!({"decision": "once"})), Reply::Once);
        assert_eq!(accept(json!({"decision": "always"})), Reply::Always);
        assert_eq!(
            accept(json!({"decision": "reject", "feedback": " use git mv "})),
            Reply::Reject {
                message: Some("use git mv".to_owned())
            }
        );
        assert_eq!(
            accept(json!({"decision": "maybe"})),
            Reply::Reject { message: None }
        );
        assert_eq!(
            reply_of(ElicitationAction::Accept, None),
            Reply::Reject { message: None }
        );
        assert_eq!(
            reply_of(
                ElicitationAction::Decline,
                Some(&json!({"decision": "once"}))
            ),
            Reply::Reject { message: None }
        );
        assert_eq!(
            reply_of(ElicitationAction::Cancel, None),
            Reply::Reject { message: None }
        );
    }

    #[test]
    fn the_question_names_the_permission_patterns_diff_and_what_always_saves() {
        let request = PermissionRequest::new("s", "bash", ["git status --short"])
            .with_always(["git status *"])
            .with_metadata(json!({"diff": "--- a\n+++ b"}));
        let text = question(&request);
        assert!(
            text.starts_with("Allow `bash` on `git status --short`?"),
            "{text}"
        );
        assert!(text.contains("--- a\n+++ b"), "{text}");
        assert!(text.contains("saves: `git status *`"), "{text}");
    }
}
