//! Permission questions as `input_required` results, for clients on MCP 2026-07-28.
//!
//! That revision forbids a server's own requests to the client while a call runs. Instead, a
//! `tools/call` may answer with an `input_required` result that carries the questions and an
//! opaque `requestState`; the client asks its user, then sends the same call again with the
//! answers and that state.
//!
//! tackle's settlement cannot be restarted halfway (a `bash` command may already be running
//! when a second question comes), so the call is never replayed. Its settlement runs on a task
//! of its own ([`InFlight`]). When it asks a question, the request that is driving it answers
//! `input_required` and the call waits in [`WaitingCalls`] under a fresh random state. The
//! retry finds it there, hands each answer to the question's asker, and drives it on to its
//! result or its next question. The table is shared by every connection of the server, so a
//! retry works over stateless HTTP too, where every request is a connection of its own.
//!
//! Be careful when:
//! - changing the state: it is the only thing that names a waiting call, so it must stay
//!   unguessable (128 random bits) and single-use (taken out of the table on retry).
//! - bounding: a call waits at most [`INPUT_REQUIRED_TIMEOUT`] for its retry, and at most
//!   [`MAX_WAITING`] calls wait at once; past either, the call is cancelled and the journal
//!   records it as interrupted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, InputRequest, InputRequests,
    InputRequiredResult, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use tackle_core::Progress;
use tackle_registry::{Settlement, Turn};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{TackleServer, forward_progress};
use crate::elicit::{Question, RunningCall};

/// How long a call waits for the retry that answers its question.
pub const INPUT_REQUIRED_TIMEOUT: Duration = super::QUESTION_TIMEOUT;

/// The most calls that may wait for answers at once.
pub const MAX_WAITING: usize = 256;

/// Calls waiting for the retry that answers their questions, by request state.
#[derive(Default)]
pub(crate) struct WaitingCalls {
    table: Mutex<HashMap<String, InFlight>>,
}

impl WaitingCalls {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, InFlight>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Parks `call` under `state` until its retry or its timeout. When [`MAX_WAITING`] calls
    /// wait already, the call is dropped (which cancels it) and the answer is false.
    fn park(self: &Arc<Self>, state: String, call: InFlight) -> bool {
        let mut table = self.table();
        if table.len() >= MAX_WAITING {
            drop(table);
            drop(call);
            return false;
        }
        table.insert(state.clone(), call);
        drop(table);
        let waiting = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(INPUT_REQUIRED_TIMEOUT).await;
            if let Some(waiting) = waiting.upgrade() {
                // Dropping it cancels the call.
                let expired = waiting.table().remove(&state);
                drop(expired);
            }
        });
        true
    }

    fn take(&self, state: &str) -> Option<InFlight> {
        self.table().remove(state)
    }
}

/// A call whose settlement runs on its own task, so that it outlives the request that started
/// it. Dropping it cancels the call.
pub(super) struct InFlight {
    /// The tool's advertised name, which the retry must repeat.
    pub(super) tool: String,
    /// The settlement, with the turn it settled against.
    pub(super) settlement: JoinHandle<(Turn, Settlement)>,
    /// Questions from the call's asker ([`crate::elicit::Asker::InputRequired`]).
    pub(super) questions: mpsc::UnboundedReceiver<Question>,
    /// The questions sent to the client, by their key in `inputRequests`.
    pub(super) asked: Vec<(String, oneshot::Sender<Value>)>,
    pub(super) cancel: CancellationToken,
    pub(super) progress: mpsc::Receiver<Progress>,
    /// Keeps the call's asker reachable while it runs.
    pub(super) _registered: RunningCall,
    /// Keeps the call's session open while it runs: over stateless HTTP the connection that
    /// started it is gone once the first `input_required` result is sent, and its end would
    /// withdraw the question.
    pub(super) _connection: Arc<super::Connection>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// What ended one request's drive of a call.
enum Event {
    Settled(Result<(Turn, Settlement), tokio::task::JoinError>),
    Asked(Question),
    ProgressEnded,
    Cancelled,
}

/// True when the request's client is asked with `input_required` results: it negotiated
/// 2026-07-28 or later and declared form elicitation.
pub(super) fn asks_inline(context: &RequestContext<RoleServer>) -> bool {
    let modern = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    let form = context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        // A capability that names no mode means form, as in the revisions that had no modes.
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
    modern && form
}

/// 128 random bits as hex; the request state of one waiting call.
fn fresh_state() -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).map_err(
        |error| {
            ErrorData::internal_error(format!("no randomness for a request state: {error}"), None)
        },
    )?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A result the model reads, marked as an error.
fn refusal(text: &str) -> CallToolResponse {
    CallToolResponse::from(CallToolResult::error(vec![ContentBlock::text(text)]))
}

impl TackleServer {
    /// Drives `call` for this request: to its result, or to its next questions, which are
    /// returned as an `input_required` result while the call waits.
    pub(super) async fn drive(
        &self,
        mut call: InFlight,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = context.meta.get_progress_token();
        let mut forwarding = token.is_some();
        let heartbeat = self.inner.progress_heartbeat;
        loop {
            let progress = async {
                match &token {
                    Some(token) => {
                        forward_progress(&context.peer, token, &mut call.progress, heartbeat).await
                    }
                    None => std::future::pending().await,
                }
            };
            let event = tokio::select! {
                joined = &mut call.settlement => Event::Settled(joined),
                Some(question) = call.questions.recv() => Event::Asked(question),
                () = progress, if forwarding => Event::ProgressEnded,
                () = context.ct.cancelled() => Event::Cancelled,
            };
            let joined = match event {
                Event::Settled(joined) => joined,
                // The settlement ends as interrupted; wait so the journal has it.
                Event::Cancelled => {
                    call.cancel.cancel();
                    (&mut call.settlement).await
                }
                Event::Asked(question) => {
                    let mut questions = vec![question];
                    while let Ok(more) = call.questions.try_recv() {
                        questions.push(more);
                    }
                    // A question settled elsewhere meanwhile (an "always" answer) needs no answer.
                    questions.retain(|question| !question.answer.is_closed());
                    if !questions.is_empty() {
                        return self.suspend(call, questions);
                    }
                    continue;
                }
                Event::ProgressEnded => {
                    forwarding = false;
                    continue;
                }
            };
            let (turn, settlement) = joined.map_err(|error| {
                ErrorData::internal_error(format!("the call's task failed: {error}"), None)
            })?;
            return self
                .finish(&settlement, &turn, &call.tool)
                .map(CallToolResponse::from);
        }
    }

    /// Parks `call` with its questions sent to the client, and returns the `input_required`
    /// result that carries them.
    fn suspend(
        &self,
        mut call: InFlight,
        questions: Vec<Question>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut requests = InputRequests::new();
        call.asked.clear();
        for (index, question) in questions.into_iter().enumerate() {
            let key = format!("permission-{}", index + 1);
            requests.insert(
                key.clone(),
                InputRequest::Elicitation(ElicitRequest::new(question.params)),
            );
            call.asked.push((key, question.answer));
        }
        let state = fresh_state()?;
        if !self.inner.waiting.park(state.clone(), call) {
            return Ok(refusal(&format!(
                "The call was cancelled: {MAX_WAITING} calls are already waiting for a \
                 permission answer. Answer or cancel those, then call the tool again."
            )));
        }
        Ok(CallToolResponse::from(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    /// The retry of a call that waits under `state`: its answers go to the call's asker, and
    /// the call is driven on.
    pub(super) async fn resume(
        &self,
        state: &str,
        tool: &str,
        responses: HashMap<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(mut call) = self.inner.waiting.take(state) else {
            return Ok(refusal(&format!(
                "This call's permission question is no longer open: it was answered already, \
                 or went unanswered for {} minutes. Call `{tool}` again.",
                INPUT_REQUIRED_TIMEOUT.as_secs() / 60
            )));
        };
        if call.tool != tool {
            let expected = call.tool.clone();
            // A wrong retry must not cancel the call a right one can still answer.
            self.inner.waiting.park(state.to_owned(), call);
            return Err(ErrorData::invalid_params(
                format!(
                    "The `requestState` belongs to a call of `{expected}`, not `{tool}`: retry \
                     it with the name it was called with."
                ),
                None,
            ));
        }
        for (key, answer) in call.asked.drain(..) {
            // A question the client left out counts as declined.
            let value = responses
                .get(&key)
                .cloned()
                .unwrap_or_else(|| json!({ "action": "decline" }));
            let _ = answer.send(value);
        }
        self.drive(call, context).await
    }
}
