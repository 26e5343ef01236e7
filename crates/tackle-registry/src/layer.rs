//! Host policy as layers around settlement: each layer sees a call before its name is resolved,
//! may change it or stop it, and sees the settlement afterwards.
//!
//! A turn carries its layers ([`Turn::with_layers`]), so they apply to every call settled
//! through it: direct calls, and the sub-calls a tool such as `batch` settles on the call's
//! behalf. Layers run in order before the call and in reverse order after it, like middleware.
//!
//! What a layer changes is recorded: each change is a line in [`CallDraft::note`], which the
//! journal and the settlement keep as `adjustments`. A layer that stops a call returns a
//! [`ToolFailure`]: a failure becomes a `refused` error the model reads; an interruption
//! ([`ToolFailure::interruption`]) is the host's, never the model's.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tackle_core::{Arguments, Context, LimitsOverride, Settlement, ToolCall, ToolFailure};

use crate::turn::Turn;

/// A call on its way into settlement, as host policy sees and may change it.
#[derive(Clone, Debug)]
pub struct CallDraft {
    name: String,
    arguments: Arguments,
    limits: LimitsOverride,
    adjustments: Vec<String>,
    notices: Vec<String>,
}

impl CallDraft {
    pub(crate) fn new(call: ToolCall) -> Self {
        let (name, arguments, limits) = call.into_parts();
        Self {
            name,
            arguments,
            limits,
            adjustments: Vec::new(),
            notices: Vec::new(),
        }
    }

    /// The name the call names now.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Renames the call, noting why.
    pub fn rename(&mut self, name: impl Into<String>, why: impl Into<String>) {
        self.name = name.into();
        self.note(why);
    }

    /// The arguments as a JSON object to read or change, parsing them once from text. `None`
    /// when they are not a JSON object: decoding will report that to the model.
    pub fn arguments_mut(&mut self) -> Option<&mut Map<String, Value>> {
        if let Arguments::Text(text) = &self.arguments {
            let parsed = if text.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str(text).ok()?
            };
            self.arguments = Arguments::Json(parsed);
        }
        match &mut self.arguments {
            Arguments::Json(Value::Object(map)) => Some(map),
            _ => None,
        }
    }

    /// Records a change this layer made, one line for the journal.
    pub fn note(&mut self, adjustment: impl Into<String>) {
        self.adjustments.push(adjustment.into());
    }

    /// The changes noted so far.
    pub fn adjustments(&self) -> &[String] {
        &self.adjustments
    }

    /// Tells the model `notice` before the call's text, when the call runs to success (a
    /// refusal says what it says instead). The notice counts toward the output's bound; an
    /// output of structured data alone does not get it.
    pub fn tell_model(&mut self, notice: impl Into<String>) {
        self.notices.push(notice.into());
    }

    pub(crate) fn into_parts(self) -> (ToolCall, Vec<String>, Vec<String>) {
        let call = ToolCall::new(self.name, self.arguments).with_limits(self.limits);
        (call, self.adjustments, self.notices)
    }
}

/// One concern of host policy around settlement.
///
/// Be careful when:
/// - changing a call. Note every change with [`CallDraft::note`]; a change the journal does not
///   show cannot be audited.
/// - stopping a call. Return a failure only for a refusal the model should read and act on;
///   return an interruption (the call was cancelled while a question was pending) so the model
///   reads nothing.
/// - holding state. A layer is shared by every turn and every session: key state by
///   [`Context::session`].
pub trait Layer: Send + Sync + 'static {
    /// Runs before the call's name is resolved. `turn` is the turn the call was made in.
    fn before<'a>(
        &'a self,
        turn: &'a Turn,
        cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>>;

    /// Runs after the call settled (also after a refusal), in reverse layer order. It may only
    /// observe, and add notes for the host with [`Settlement::annotations`]; what the model reads
    /// and the journal keeps are final by now.
    fn after<'a>(
        &'a self,
        _turn: &'a Turn,
        _cx: &'a Context,
        _settlement: &'a mut Settlement,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// The layers of a turn, in the order they run before a call.
pub type Layers = Arc<[Arc<dyn Layer>]>;
