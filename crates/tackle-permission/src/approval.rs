//! The approval flow: permission requests, the user's replies, saved approvals, and the
//! model-facing refusals.
//!
//! A tool asks [`PermissionService::ask`] with a [`PermissionRequest`] and the ruleset that
//! applies to its session. The service decides at once when it can:
//!
//! 1. Each pattern is checked against the *configured* rules alone. A deny there fails the call
//!    with [`PermissionError::Denied`], naming the rule. Saved approvals are not consulted yet, so
//!    an "always" the user once gave can never lift a deny written in the configuration.
//! 2. Each pattern is then checked against the configured rules followed by the saved approvals
//!    (last match wins). When every pattern is allowed the call goes ahead.
//! 3. Otherwise the request becomes pending, the host's [`Approver`] is told, and `ask` waits
//!    until the host calls [`PermissionService::reply`] (or the call is cancelled).
//!
//! Replies follow the OpenCode state machine: `once` settles one request; `always` also saves an
//! allow for each of the request's `always` patterns and settles the same session's other
//! pending requests that are now allowed; `reject` fails the request and every other pending
//! request of its session.
//!
//! Invariants:
//! - A pending request leaves the pending list exactly once: by a reply, by a cascade, by a
//!   cancellation, or because its `ask` future was dropped.
//! - The approver is never called while the service's lock is held, so it may reply from
//!   inside [`Approver::ask`].
//! - Request ids of pending requests are unique.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::rule::{Action, Rule, RuleSource, Ruleset};

/// Identifies a permission request, so the host can reply to it.
///
/// Hosts may supply their own; an empty id asks the service to generate one (`per_1`,
/// `per_2`, … from a counter).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(String);

impl RequestId {
    /// Wraps a host-supplied id.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the empty id, which the service replaces with a generated one.
    pub fn is_unassigned(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for RequestId {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

/// The tool call a request was made for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCallRef {
    /// The assistant message that holds the call.
    pub message: String,
    /// The tool call id.
    pub call: String,
}

/// A question for the user: may `permission` be used on these `patterns`?
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// The id the host replies to. Empty means "generate one".
    pub id: RequestId,
    /// The session the call belongs to; replies cascade within it.
    pub session: String,
    /// The permission name, such as `bash`, `edit` or `external_directory`.
    pub permission: String,
    /// The resources involved (commands, paths). Every one must be allowed. An empty list is
    /// decided as the single resource `*`.
    pub patterns: Vec<String>,
    /// The patterns saved as allows when the user answers "always". They are often broader than
    /// `patterns` (for example `git status *` for `git status --short`).
    pub always: Vec<String>,
    /// Tool-specific details for the host's prompt (a diff, a file path, …).
    pub metadata: serde_json::Value,
    /// The tool call that asked, when there is one.
    pub tool_call: Option<ToolCallRef>,
}

impl PermissionRequest {
    /// A request with no id yet, whose `always` patterns are the `patterns` themselves, no
    /// metadata and no tool call.
    pub fn new<P: Into<String>>(
        session: impl Into<String>,
        permission: impl Into<String>,
        patterns: impl IntoIterator<Item = P>,
    ) -> Self {
        let patterns: Vec<String> = patterns.into_iter().map(Into::into).collect();
        Self {
            id: RequestId::default(),
            session: session.into(),
            permission: permission.into(),
            always: patterns.clone(),
            patterns,
            metadata: serde_json::Value::Null,
            tool_call: None,
        }
    }

    /// Sets the id.
    pub fn with_id(mut self, id: impl Into<RequestId>) -> Self {
        self.id = id.into();
        self
    }

    /// Sets the patterns saved by an "always" reply.
    pub fn with_always<P: Into<String>>(mut self, always: impl IntoIterator<Item = P>) -> Self {
        self.always = always.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the metadata shown by the host.
    pub fn with_metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// Sets the tool call that asked.
    pub fn with_tool_call(mut self, message: impl Into<String>, call: impl Into<String>) -> Self {
        self.tool_call = Some(ToolCallRef {
            message: message.into(),
            call: call.into(),
        });
        self
    }
}

/// The user's answer to a pending request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// Allow this request only.
    Once,
    /// Allow this request, and save its `always` patterns as allows for the project.
    Always,
    /// Refuse. With a message, the refusal is feedback the model reads and the loop goes on;
    /// a blank message counts as none.
    Reject {
        /// What the user wants done instead.
        message: Option<String>,
    },
    /// Nobody could be asked: the host has no person to put the question to (a non-interactive
    /// run, a client that cannot show prompts). Not a person's decision, so it refuses only this
    /// request and does not cascade to the session's other questions.
    NoOneToAsk {
        /// Why, in a clause the message completes: "this run is non-interactive".
        reason: String,
        /// How the user can allow it without being asked, such as "re-run with --yes"; the
        /// message always adds the permission rule that would allow it.
        remedy: Option<String>,
    },
}

/// Why a permission request did not go ahead. Its `Display` is the text the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PermissionError {
    /// A configured rule denies it.
    Denied {
        /// The permission asked for.
        permission: String,
        /// The resource the rule denied.
        resource: String,
        /// The deciding rule (boxed: it is much larger than the other variants).
        rule: Box<Rule>,
    },
    /// The user rejected it without comment, or rejected another request of the same session.
    Rejected {
        /// The permission asked for.
        permission: String,
        /// The resources asked for.
        patterns: Vec<String>,
    },
    /// The user rejected it and said what to do instead.
    Corrected {
        /// The permission asked for.
        permission: String,
        /// The resources asked for.
        patterns: Vec<String>,
        /// The user's words.
        feedback: String,
    },
    /// Nobody could be asked: no person decided anything.
    Unanswered {
        /// The permission asked for.
        permission: String,
        /// The resources asked for.
        patterns: Vec<String>,
        /// Why nobody could be asked.
        reason: String,
        /// How the user can allow it without being asked, beyond a permission rule.
        remedy: Option<String>,
    },
    /// The call or session was cancelled while the request was pending.
    Cancelled {
        /// The permission asked for.
        permission: String,
        /// The resources asked for.
        patterns: Vec<String>,
    },
}

impl PermissionError {
    /// True when the agent loop should stop and hand control back to the user: a plain
    /// rejection. A configured deny and a rejection with feedback let the model go on.
    pub fn stops_loop(&self) -> bool {
        matches!(self, PermissionError::Rejected { .. })
    }
}

impl fmt::Display for PermissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PermissionError::Denied {
                permission,
                resource,
                rule,
            } => write!(
                f,
                "Permission denied: `{permission}` on `{resource}` is denied by {}: {} `{}` on \
                 `{}`. Do not retry this call; choose another approach or ask the user.",
                rule.source,
                rule.action,
                rule.permission.as_str(),
                rule.pattern.as_str(),
            ),
            PermissionError::Rejected {
                permission,
                patterns,
            } => write!(
                f,
                "The user rejected permission to run `{permission}` on {}. Do not retry it; ask \
                 the user how to proceed.",
                Listed(patterns),
            ),
            PermissionError::Corrected {
                permission,
                patterns,
                feedback,
            } => write!(
                f,
                "The user rejected permission to run `{permission}` on {} and said: {feedback}",
                Listed(patterns),
            ),
            PermissionError::Unanswered {
                permission,
                patterns,
                reason,
                remedy,
            } => {
                write!(
                    f,
                    "Nobody could be asked for permission to run `{permission}` on {} \
                     ({reason}), so the call was not run. No person refused it, and calling \
                     again will get the same answer. The user can allow it with the permission \
                     rule `\"{permission}\": {{\"{}\": \"allow\"}}`",
                    Listed(patterns),
                    patterns.first().map_or("*", String::as_str),
                )?;
                match remedy {
                    Some(remedy) => write!(f, ", or {remedy}."),
                    None => f.write_str("."),
                }?;
                f.write_str(" Choose another approach, or tell the user what you need.")
            }
            PermissionError::Cancelled {
                permission,
                patterns,
            } => write!(
                f,
                "The request for permission to run `{permission}` on {} was cancelled before \
                 the user answered. Do not retry it unless the user asks.",
                Listed(patterns),
            ),
        }
    }
}

impl std::error::Error for PermissionError {}

/// Patterns as "`a`, `b`".
struct Listed<'a>(&'a [String]);

impl fmt::Display for Listed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, pattern) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "`{pattern}`")?;
        }
        Ok(())
    }
}

/// Why [`PermissionService::reply`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyError {
    /// No pending request has this id: it was never asked, was already answered, or was
    /// cancelled.
    UnknownRequest {
        /// The id replied to.
        id: RequestId,
    },
    /// The reply took effect for this service, but saving an approval failed, so it will not
    /// outlive the process.
    NotSaved {
        /// The store's errors, one per pattern that failed.
        message: String,
    },
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::UnknownRequest { id } => write!(
                f,
                "no pending permission request has the id `{id}`; it may already be answered or \
                 cancelled"
            ),
            ReplyError::NotSaved { message } => write!(
                f,
                "the approval applies to this run but could not be saved: {message}"
            ),
        }
    }
}

impl std::error::Error for ReplyError {}

/// Loading the project's saved approvals failed when the service was built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The project whose approvals were loaded.
    pub project: String,
    /// The store's error.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot load the saved approvals of project `{}`: {}",
            self.project, self.message
        )
    }
}

impl std::error::Error for LoadError {}

/// The host's side of a question: told when a request needs the user.
///
/// The host shows the request and later calls [`PermissionService::reply`] with its id. It may
/// reply from inside `ask`.
pub trait Approver: Send + Sync {
    /// A request is pending and waits for a reply.
    fn ask(&self, request: &PermissionRequest);

    /// The request left the pending list without this host's reply to it (an "always" or
    /// reject cascade, a cancellation, a dropped call) or with it. Hosts that show prompts
    /// dismiss the prompt here. Does nothing by default.
    fn settled(&self, _id: &RequestId) {}
}

/// Why saved approvals could not be read or written; the text names the store and the cause.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SavedApprovalsError(pub String);

/// Where approvals saved with "always" persist, per project.
pub trait SavedApprovals: Send + Sync {
    /// The `(permission, pattern)` pairs saved for `project`, oldest first.
    fn load(&self, project: &str) -> Result<Vec<(String, String)>, SavedApprovalsError>;

    /// Saves an allow of `permission` on `pattern` for `project`. Saving a pair that is already
    /// saved succeeds and changes nothing.
    fn save(
        &self,
        project: &str,
        permission: &str,
        pattern: &str,
    ) -> Result<(), SavedApprovalsError>;
}

/// Saved approvals kept in memory, for tests and hosts that persist nothing.
#[derive(Debug, Default)]
pub struct MemorySavedApprovals {
    /// `(project, permission, pattern)`, oldest first, without duplicates.
    entries: Mutex<Vec<(String, String, String)>>,
}

impl MemorySavedApprovals {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl SavedApprovals for MemorySavedApprovals {
    fn load(&self, project: &str) -> Result<Vec<(String, String)>, SavedApprovalsError> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(entries
            .iter()
            .filter(|(p, _, _)| p == project)
            .map(|(_, permission, pattern)| (permission.clone(), pattern.clone()))
            .collect())
    }

    fn save(
        &self,
        project: &str,
        permission: &str,
        pattern: &str,
    ) -> Result<(), SavedApprovalsError> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = (
            project.to_owned(),
            permission.to_owned(),
            pattern.to_owned(),
        );
        if !entries.contains(&entry) {
            entries.push(entry);
        }
        Ok(())
    }
}

/// Decides permission requests, holds the pending ones, and applies the user's replies.
///
/// Share it with an `Arc`; every method takes `&self`. One service serves one project: its
/// saved approvals are loaded for that project when it is built and apply to every session.
///
/// Be careful when:
/// - replying "always": the save goes through the [`SavedApprovals`] port synchronously, inside
///   [`reply`](Self::reply).
pub struct PermissionService {
    project: String,
    approver: Arc<dyn Approver>,
    saved: Arc<dyn SavedApprovals>,
    state: Mutex<State>,
}

struct State {
    /// The last generated request number.
    next_id: u64,
    /// The last pending-entry ticket; tickets are never reused, unlike host-supplied ids.
    next_ticket: u64,
    /// Pending requests, oldest first.
    pending: Vec<Pending>,
    /// Saved approvals: allow rules with [`RuleSource::Saved`], appended after configured rules.
    approved: Ruleset,
}

struct Pending {
    ticket: u64,
    request: PermissionRequest,
    /// The configured ruleset the request was asked with, for cascades.
    ruleset: Ruleset,
    done: oneshot::Sender<Result<(), PermissionError>>,
}

impl Pending {
    fn settle(self, outcome: Result<(), PermissionError>) -> RequestId {
        // The asker may be gone already; its guard then finds nothing to remove.
        let _ = self.done.send(outcome);
        self.request.id
    }

    fn rejected(&self) -> PermissionError {
        PermissionError::Rejected {
            permission: self.request.permission.clone(),
            patterns: self.request.patterns.clone(),
        }
    }

    fn cancelled(&self) -> PermissionError {
        PermissionError::Cancelled {
            permission: self.request.permission.clone(),
            patterns: self.request.patterns.clone(),
        }
    }
}

/// What the rules say about a whole request.
enum Verdict {
    Allow,
    Ask,
    Deny(PermissionError),
}

/// The refusal when a rule of `ruleset` denies `permission` on any of `resources`, without
/// asking anyone. [`PermissionService::ask`] starts with this check; tools also run it before
/// reading content, so a denied call learns nothing about the resource.
pub fn configured_denial(
    ruleset: &Ruleset,
    permission: &str,
    resources: &[String],
) -> Option<PermissionError> {
    resources.iter().find_map(|resource| {
        let decision = ruleset.explain(permission, resource);
        match (decision.action, decision.rule) {
            (Action::Deny, Some(rule)) => Some(PermissionError::Denied {
                permission: permission.to_owned(),
                resource: resource.clone(),
                rule: Box::new(rule.clone()),
            }),
            _ => None,
        }
    })
}

/// Configured denies first, then configured rules followed by saved approvals.
fn decide(configured: &Ruleset, approved: &Ruleset, request: &PermissionRequest) -> Verdict {
    decide_on(configured, approved, &request.permission, &request.patterns)
}

/// [`decide`] for `permission` on `patterns`.
fn decide_on(
    configured: &Ruleset,
    approved: &Ruleset,
    permission: &str,
    patterns: &[String],
) -> Verdict {
    if let Some(denied) = configured_denial(configured, permission, patterns) {
        return Verdict::Deny(denied);
    }
    let all_allowed = patterns.iter().all(|resource| {
        // Saved approvals come last, so any that matches decides; else the configured rules do.
        let saved = approved.explain(permission, resource);
        let action = match saved.rule {
            Some(_) => saved.action,
            None => configured.evaluate(permission, resource),
        };
        action == Action::Allow
    });
    if all_allowed {
        Verdict::Allow
    } else {
        Verdict::Ask
    }
}

/// What a request would get without anyone being asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// The rules or a saved approval allow it; it would run at once.
    Allowed,
    /// It would ask a person.
    WouldAsk,
    /// A configured rule denies it.
    Denied,
}

/// The rules of one agent and the approvals saved when it was taken, to decide many requests
/// without asking (a search that leaves out what `read` would not show at once). It decides
/// exactly as [`PermissionService::ask`] does before it asks.
#[derive(Clone, Debug)]
pub struct Judgment {
    configured: Ruleset,
    approved: Ruleset,
}

impl Judgment {
    /// What asking `permission` on `resource` would get now, without asking anyone.
    pub fn standing(&self, permission: &str, resource: &str) -> Standing {
        standing_under(&self.configured, &self.approved, permission, resource)
    }

    /// This judgment for `permission` alone, to decide it on many resources: the rules that
    /// cannot cover it are dropped once, and each decision allocates nothing.
    pub fn of_permission(&self, permission: &str) -> PermissionJudgment {
        PermissionJudgment {
            permission: permission.to_owned(),
            configured: self.configured.covering(permission),
            approved: self.approved.covering(permission),
        }
    }
}

/// A [`Judgment`] narrowed to one permission (see [`Judgment::of_permission`]). It decides
/// exactly as the judgment does, and as [`PermissionService::ask`] does before it asks.
#[derive(Clone, Debug)]
pub struct PermissionJudgment {
    permission: String,
    configured: Ruleset,
    approved: Ruleset,
}

impl PermissionJudgment {
    /// What asking this permission on `resource` would get now, without asking anyone.
    pub fn standing(&self, resource: &str) -> Standing {
        standing_under(&self.configured, &self.approved, &self.permission, resource)
    }
}

/// [`decide_on`] for one resource, without building its refusal: a configured deny decides,
/// then a matching saved approval, then the configured rules.
fn standing_under(
    configured: &Ruleset,
    approved: &Ruleset,
    permission: &str,
    resource: &str,
) -> Standing {
    let decided = configured.explain(permission, resource);
    if decided.action == Action::Deny {
        return Standing::Denied;
    }
    let saved = approved.explain(permission, resource);
    let action = match saved.rule {
        Some(_) => saved.action,
        None => decided.action,
    };
    if action == Action::Allow {
        Standing::Allowed
    } else {
        Standing::WouldAsk
    }
}

impl PermissionService {
    /// A [`Judgment`] under `ruleset` (the configured rules of the asking agent) and the
    /// approvals saved so far.
    pub fn judgment(&self, ruleset: &Ruleset) -> Judgment {
        Judgment {
            configured: ruleset.clone(),
            approved: self.lock().approved.clone(),
        }
    }

    /// A service for `project`, loading the approvals saved for it.
    pub fn new(
        project: impl Into<String>,
        approver: Arc<dyn Approver>,
        saved: Arc<dyn SavedApprovals>,
    ) -> Result<Self, LoadError> {
        let project = project.into();
        let approved = saved
            .load(&project)
            .map_err(|error| LoadError {
                project: project.clone(),
                message: error.0,
            })?
            .into_iter()
            .map(|(permission, pattern)| saved_rule(&permission, &pattern))
            .collect();
        Ok(Self {
            project,
            approver,
            saved,
            state: Mutex::new(State {
                next_id: 0,
                next_ticket: 0,
                pending: Vec::new(),
                approved,
            }),
        })
    }

    /// The project whose approvals this service loads and saves.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// Decides `request` under `ruleset` (the configured rules of the asking agent and session),
    /// asking the user when the rules do not settle it.
    ///
    /// Resolves `Ok` when the call may run. Dropping the future while it waits withdraws the
    /// request from the pending list.
    pub async fn ask(
        &self,
        mut request: PermissionRequest,
        ruleset: &Ruleset,
    ) -> Result<(), PermissionError> {
        if request.patterns.is_empty() {
            request.patterns.push("*".to_owned());
        }
        let (ticket, done) = {
            let mut state = self.lock();
            match decide(ruleset, &state.approved, &request) {
                Verdict::Allow => return Ok(()),
                Verdict::Deny(error) => return Err(error),
                Verdict::Ask => {}
            }
            if request.id.is_unassigned() || state.is_pending(&request.id) {
                request.id = state.generate_id();
            }
            state.next_ticket += 1;
            let ticket = state.next_ticket;
            let (sender, done) = oneshot::channel();
            state.pending.push(Pending {
                ticket,
                request: request.clone(),
                ruleset: ruleset.clone(),
                done: sender,
            });
            (ticket, done)
        };
        let _guard = Withdraw {
            service: self,
            ticket,
        };
        self.approver.ask(&request);
        // A dropped sender means the entry was discarded without an answer: treat as cancelled.
        done.await.unwrap_or_else(|_| {
            Err(PermissionError::Cancelled {
                permission: request.permission.clone(),
                patterns: request.patterns.clone(),
            })
        })
    }

    /// Applies the user's reply to the pending request `id`.
    ///
    /// For [`Reply::Always`], an error of [`ReplyError::NotSaved`] means everything else
    /// happened: the request and any cascade resolved and the approval holds for this service.
    pub fn reply(&self, id: &RequestId, reply: Reply) -> Result<(), ReplyError> {
        let mut settled = Vec::new();
        let mut to_save = Vec::new();
        {
            let mut state = self.lock();
            let index = state
                .pending
                .iter()
                .position(|p| &p.request.id == id)
                .ok_or_else(|| ReplyError::UnknownRequest { id: id.clone() })?;
            let pending = state.pending.remove(index);
            let session = pending.request.session.clone();
            match reply {
                Reply::Once => settled.push(pending.settle(Ok(()))),
                Reply::Always => {
                    let permission = pending.request.permission.clone();
                    for pattern in &pending.request.always {
                        let rule = saved_rule(&permission, pattern);
                        if !state.approved.rules().contains(&rule) {
                            state.approved.push(rule);
                        }
                        to_save.push((permission.clone(), pattern.clone()));
                    }
                    settled.push(pending.settle(Ok(())));
                    let approved = state.approved.clone();
                    let now_allowed = state.take(|p| {
                        p.request.session == session
                            && matches!(decide(&p.ruleset, &approved, &p.request), Verdict::Allow)
                    });
                    settled.extend(now_allowed.into_iter().map(|p| p.settle(Ok(()))));
                }
                Reply::NoOneToAsk { reason, remedy } => {
                    let error = PermissionError::Unanswered {
                        permission: pending.request.permission.clone(),
                        patterns: pending.request.patterns.clone(),
                        reason,
                        remedy,
                    };
                    settled.push(pending.settle(Err(error)));
                }
                Reply::Reject { message } => {
                    let error = match message.filter(|m| !m.trim().is_empty()) {
                        Some(feedback) => PermissionError::Corrected {
                            permission: pending.request.permission.clone(),
                            patterns: pending.request.patterns.clone(),
                            feedback,
                        },
                        None => pending.rejected(),
                    };
                    settled.push(pending.settle(Err(error)));
                    let others = state.take(|p| p.request.session == session);
                    settled.extend(others.into_iter().map(|p| {
                        let error = p.rejected();
                        p.settle(Err(error))
                    }));
                }
            }
        }
        self.notify_settled(&settled);
        let failures: Vec<String> = to_save
            .iter()
            .filter_map(|(permission, pattern)| {
                self.saved
                    .save(&self.project, permission, pattern)
                    .err()
                    .map(|e| format!("`{permission}` on `{pattern}`: {e}"))
            })
            .collect();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(ReplyError::NotSaved {
                message: failures.join("; "),
            })
        }
    }

    /// Withdraws the pending requests of tool call `call`; their `ask` fails with
    /// [`PermissionError::Cancelled`]. Returns how many there were.
    pub fn cancel_call(&self, call: &str) -> usize {
        self.cancel(|p| p.request.tool_call.as_ref().is_some_and(|t| t.call == call))
    }

    /// Withdraws every pending request of `session`; their `ask` fails with
    /// [`PermissionError::Cancelled`]. Returns how many there were.
    pub fn cancel_session(&self, session: &str) -> usize {
        self.cancel(|p| p.request.session == session)
    }

    /// The pending requests, oldest first.
    pub fn pending(&self) -> Vec<PermissionRequest> {
        self.lock()
            .pending
            .iter()
            .map(|p| p.request.clone())
            .collect()
    }

    /// The approvals saved with "always" (loaded and new), as allow rules, oldest first.
    pub fn approvals(&self) -> Ruleset {
        self.lock().approved.clone()
    }

    fn cancel(&self, select: impl Fn(&Pending) -> bool) -> usize {
        let taken = self.lock().take(select);
        let settled: Vec<RequestId> = taken
            .into_iter()
            .map(|p| {
                let error = p.cancelled();
                p.settle(Err(error))
            })
            .collect();
        self.notify_settled(&settled);
        settled.len()
    }

    fn notify_settled(&self, ids: &[RequestId]) {
        for id in ids {
            self.approver.settled(id);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for PermissionService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermissionService")
            .field("project", &self.project)
            .field("pending", &self.lock().pending.len())
            .finish_non_exhaustive()
    }
}

impl State {
    fn is_pending(&self, id: &RequestId) -> bool {
        self.pending.iter().any(|p| &p.request.id == id)
    }

    fn generate_id(&mut self) -> RequestId {
        loop {
            self.next_id += 1;
            let id = RequestId(format!("per_{}", self.next_id));
            if !self.is_pending(&id) {
                return id;
            }
        }
    }

    /// Removes and returns the pending entries `select` picks, keeping the rest in order.
    fn take(&mut self, select: impl Fn(&Pending) -> bool) -> Vec<Pending> {
        let (taken, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| select(p));
        self.pending = kept;
        taken
    }
}

fn saved_rule(permission: &str, pattern: &str) -> Rule {
    Rule::new(permission, pattern, Action::Allow, RuleSource::Saved)
}

/// Removes a pending entry when its `ask` future ends, answered or dropped.
struct Withdraw<'a> {
    service: &'a PermissionService,
    ticket: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let taken = self.service.lock().take(|p| p.ticket == self.ticket);
        // Dropping the entry's sender is enough: nobody listens any more.
        let ids: Vec<RequestId> = taken.into_iter().map(|p| p.request.id).collect();
        self.service.notify_settled(&ids);
    }
}

#[cfg(test)]
mod tests;
