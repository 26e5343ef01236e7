//! How built-in tools ask for permission: the host's permission service plus each agent's rules.
//!
//! A tool formulates its own requests (which permission, which resources, what to save on
//! "always"), because only the tool knows what a call touches. The [`Gate`] turns a request into
//! a [`PermissionService::ask`] under the rules of the calling agent and turns a refusal into a
//! [`ToolFailure`] the model can act on. A request withdrawn before the user answered is not a
//! refusal: it becomes [`ToolFailure::interruption`], which settles as interrupted, for the host
//! only. Paths outside the Location are always asked for with `external_directory` first, before
//! the tool's own permission.

use std::fmt;
use std::sync::Arc;
use tackle_core::names::Permission;

use serde_json::Value;
use tackle_core::{AgentId, Context, ToolFailure};
use tackle_permission::{
    Judgment, PermissionError, PermissionJudgment, PermissionRequest, PermissionService, Ruleset,
    Standing, configured_denial,
};

use crate::fs::Resolved;

/// The rules of an agent, looked up by the agent id of each call.
pub type AgentRules = dyn Fn(&AgentId) -> Ruleset + Send + Sync;

/// The permission gate shared by the built-in tools. Cheap to clone.
#[derive(Clone)]
pub struct Gate {
    inner: Option<Arc<GateInner>>,
}

struct GateInner {
    service: Arc<PermissionService>,
    rules: Arc<AgentRules>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            None => f.write_str("Gate(allow all)"),
            Some(inner) => f
                .debug_struct("Gate")
                .field("project", &inner.service.project())
                .finish_non_exhaustive(),
        }
    }
}

/// One permission question a tool asks.
#[derive(Clone, Debug, PartialEq)]
pub struct Ask {
    /// The permission, such as `read`, `edit` or `external_directory`.
    pub permission: String,
    /// The resources the call touches; every one must be allowed.
    pub patterns: Vec<String>,
    /// What an "always" reply saves.
    pub always: Vec<String>,
    /// Details for the host's prompt (a diff, a path).
    pub metadata: Value,
}

impl Ask {
    /// Asks `permission` on `patterns`, saving `*` on "always" as OpenCode's file tools do.
    pub fn new<P: Into<String>>(
        permission: impl Into<String>,
        patterns: impl IntoIterator<Item = P>,
    ) -> Self {
        Self {
            permission: permission.into(),
            patterns: patterns.into_iter().map(Into::into).collect(),
            always: vec!["*".to_owned()],
            metadata: Value::Null,
        }
    }

    /// Sets the patterns an "always" reply saves.
    pub fn with_always<P: Into<String>>(mut self, always: impl IntoIterator<Item = P>) -> Self {
        self.always = always.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the metadata shown by the host.
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = metadata;
        self
    }
}

impl Gate {
    /// A gate that allows everything, for hosts that do their own gating and for tests.
    pub fn allow_all() -> Self {
        Self { inner: None }
    }

    /// A gate asking `service`, under the rules `rules` returns for the calling agent.
    pub fn new(
        service: Arc<PermissionService>,
        rules: impl Fn(&AgentId) -> Ruleset + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Some(Arc::new(GateInner {
                service,
                rules: Arc::new(rules),
            })),
        }
    }

    /// Asks the question for the call in `cx`; `Ok` when the call may go on.
    pub async fn ask(&self, cx: &Context, ask: Ask) -> Result<(), ToolFailure> {
        self.request(cx, ask).await.map_err(refusal)
    }

    /// Like [`Gate::ask`], with the permission service's own answer, for a caller that treats
    /// some refusals differently (nobody could be asked, say).
    pub async fn request(&self, cx: &Context, ask: Ask) -> Result<(), PermissionError> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        let rules = (inner.rules)(cx.agent());
        // The question, for the call's span: the permission and patterns, never the metadata.
        let asked = cx
            .span()
            .map(|_| (ask.permission.clone(), ask.patterns.join(", ")));
        let request = PermissionRequest::new(cx.session().as_str(), ask.permission, ask.patterns)
            .with_always(ask.always)
            .with_metadata(ask.metadata)
            .with_tool_call(cx.assistant_message().as_str(), cx.call().as_str());
        let answer = inner.service.ask(request, &rules).await;
        if let Some((permission, patterns)) = asked {
            cx.span_event("tackle.permission", || {
                vec![
                    ("tackle.permission.name", permission),
                    ("tackle.permission.patterns", patterns),
                    ("tackle.permission.answer", answer_name(&answer).to_owned()),
                ]
            });
        }
        answer
    }

    /// Asks `external_directory` for `target` when it lies outside the Location.
    pub async fn external_directory(
        &self,
        cx: &Context,
        target: &Resolved,
    ) -> Result<(), ToolFailure> {
        let Some(scope) = &target.external_directory else {
            return Ok(());
        };
        let ask = Ask::new(Permission::EXTERNAL_DIRECTORY.as_str(), [scope.clone()])
            .with_always([scope.clone()])
            .with_metadata(serde_json::json!({
                "filepath": target.path.to_string_lossy(),
                "parentDir": scope.trim_end_matches("/*"),
            }));
        self.ask(cx, ask).await
    }

    /// Refuses at once when a configured rule denies `permission` on any of `patterns`, without
    /// asking anyone. Tools call it before looking at content, so a denied call discloses
    /// nothing (not even whether a string matched), then ask with the full details later.
    pub fn refuse_if_denied(
        &self,
        cx: &Context,
        permission: &str,
        patterns: &[String],
    ) -> Result<(), ToolFailure> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        let rules = (inner.rules)(cx.agent());
        match configured_denial(&rules, permission, patterns) {
            Some(denied) => {
                cx.span_event("tackle.permission", || {
                    vec![
                        ("tackle.permission.name", permission.to_owned()),
                        ("tackle.permission.patterns", patterns.join(", ")),
                        ("tackle.permission.answer", "denied_by_rule".to_owned()),
                    ]
                });
                Err(refusal(denied))
            }
            None => Ok(()),
        }
    }
}

/// What the gate would answer without asking, for the rules of one call; see [`Gate::judgment`].
#[derive(Clone, Debug)]
pub struct GateJudgment(Option<Judgment>);

impl GateJudgment {
    /// This judgment for `permission` alone, to decide it cheaply on many resources.
    pub fn of_permission(&self, permission: &str) -> GatePermissionJudgment {
        GatePermissionJudgment(
            self.0
                .as_ref()
                .map(|judgment| judgment.of_permission(permission)),
        )
    }
}

/// What the gate would answer without asking for one permission, for the rules of one call;
/// see [`GateJudgment::of_permission`].
#[derive(Clone, Debug)]
pub struct GatePermissionJudgment(Option<PermissionJudgment>);

impl GatePermissionJudgment {
    /// Whether asking the permission on `resource` would be allowed at once: no rule denies it
    /// and nobody would be asked. Allocates nothing.
    pub fn allows(&self, resource: &str) -> bool {
        self.0
            .as_ref()
            .is_none_or(|judgment| judgment.standing(resource) == Standing::Allowed)
    }
}

impl Gate {
    /// The rules of the call in `cx` and the approvals saved so far, to decide many questions
    /// the way [`Gate::ask`] would, without asking anyone. Tools that show the content of many
    /// files leave out those whose `read` would not be allowed at once.
    pub fn judgment(&self, cx: &Context) -> GateJudgment {
        GateJudgment(
            self.inner
                .as_ref()
                .map(|inner| inner.service.judgment(&(inner.rules)(cx.agent()))),
        )
    }
}

/// How a permission question was answered, as the call's span records it.
fn answer_name(answer: &Result<(), PermissionError>) -> &'static str {
    match answer {
        Ok(()) => "allowed",
        Err(PermissionError::Denied { .. }) => "denied_by_rule",
        Err(PermissionError::Rejected { .. } | PermissionError::Corrected { .. }) => {
            "rejected_by_user"
        }
        Err(PermissionError::Unanswered { .. }) => "no_one_to_ask",
        Err(PermissionError::Cancelled { .. }) => "cancelled",
    }
}

/// The model-facing failure for a refused permission, or the interruption for a withdrawn request.
/// The failure a tool returns for a refused permission: an interruption when the request was
/// withdrawn, else the refusal's text for the model.
pub fn refusal(error: PermissionError) -> ToolFailure {
    match error {
        PermissionError::Cancelled { .. } => ToolFailure::interruption(error.to_string()),
        error => ToolFailure::new(error.to_string()),
    }
}
