//! Who answers permission questions: a person through the host's [`Asker`], nobody (each
//! question refused as unanswerable, saying so), or an approval of everything once.
//!
//! The permission service's `Approver` port is fire-and-forget: it hands a question over and
//! expects a `reply` on the service later. An [`Asker`] gets an [`Answer`] with each question
//! instead, so a host never holds a back-reference to the service it is wired into.

use std::sync::{Arc, OnceLock, Weak};

use tackle_permission::{
    Approver, PermissionRequest, PermissionService, Reply, ReplyError, RequestId,
};

/// A host's way of putting a question to a person: a terminal prompt, a UI dialog, an MCP
/// elicitation.
///
/// Be careful when:
/// - answering later. Keep the [`Answer`]; replying after the question was settled elsewhere (a
///   cascade, a cancelled call) fails harmlessly with `ReplyError::UnknownRequest`.
/// - blocking. `ask` runs on the settling task; a blocking prompt is fine for a one-shot
///   command, but a server must hand the question off and return.
pub trait Asker: Send + Sync {
    /// A question is pending; answer it through `answer`, now or later.
    fn ask(&self, request: &PermissionRequest, answer: Answer);

    /// The question left the pending list (answered, cascaded or withdrawn): dismiss any prompt
    /// still showing it. Does nothing by default.
    fn settled(&self, _id: &RequestId) {}
}

/// The reply channel for one question.
#[derive(Clone, Debug)]
pub struct Answer {
    service: Weak<PermissionService>,
    id: RequestId,
}

impl Answer {
    /// Replies to the question. Fails when it is no longer pending or the host is gone.
    pub fn reply(self, reply: Reply) -> Result<(), ReplyError> {
        match self.service.upgrade() {
            Some(service) => service.reply(&self.id, reply),
            None => Err(ReplyError::UnknownRequest { id: self.id }),
        }
    }
}

/// How a host answers permission questions.
#[derive(Clone)]
pub enum Approvals {
    /// Allow every question once (`--yes`).
    AllowOnce,
    /// Nobody can be asked: refuse each question as unanswered, saying why and how the user can
    /// allow it without being asked. No person decided anything, so nothing cascades.
    NoOneToAsk {
        /// Why, as a clause: "this run is non-interactive".
        reason: String,
        /// How the user can allow it, beyond a permission rule: "re-run with --yes".
        remedy: Option<String>,
    },
    /// Ask a person through the host's asker.
    Ask(Arc<dyn Asker>),
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Approvals::AllowOnce => f.write_str("AllowOnce"),
            Approvals::NoOneToAsk { reason, .. } => write!(f, "NoOneToAsk({reason})"),
            Approvals::Ask(_) => f.write_str("Ask(..)"),
        }
    }
}

impl Default for Approvals {
    /// Nobody to ask: an embedded host that never said how refuses rather than allows.
    fn default() -> Self {
        Approvals::NoOneToAsk {
            reason: "the host has no one to ask".to_owned(),
            remedy: None,
        }
    }
}

/// The permission service's approver for [`Approvals`]: replies through a back-reference set
/// once the service exists.
pub(crate) struct HostApprover {
    approvals: Approvals,
    service: OnceLock<Weak<PermissionService>>,
}

impl HostApprover {
    pub(crate) fn new(approvals: Approvals) -> Self {
        Self {
            approvals,
            service: OnceLock::new(),
        }
    }

    /// Connects the approver to the service whose questions it answers.
    pub(crate) fn attach(&self, service: &Arc<PermissionService>) {
        let _ = self.service.set(Arc::downgrade(service));
    }
}

impl Approver for HostApprover {
    fn ask(&self, request: &PermissionRequest) {
        let Some(service) = self.service.get().cloned() else {
            return;
        };
        let answer = Answer {
            service,
            id: request.id.clone(),
        };
        let result = match &self.approvals {
            Approvals::AllowOnce => answer.reply(Reply::Once),
            Approvals::NoOneToAsk { reason, remedy } => answer.reply(Reply::NoOneToAsk {
                reason: reason.clone(),
                remedy: remedy.clone(),
            }),
            Approvals::Ask(asker) => {
                asker.ask(request, answer);
                Ok(())
            }
        };
        if let Err(error) = result {
            tracing::warn!("a permission reply was not taken: {error}");
        }
    }

    fn settled(&self, id: &RequestId) {
        if let Approvals::Ask(asker) = &self.approvals {
            asker.settled(id);
        }
    }
}
