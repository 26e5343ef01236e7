//! Tests of the approval flow: immediate decisions, the ask/reply state machine, saved
//! approvals, cancellation and the model-facing messages.

use std::future::Future;
use std::pin::Pin;

use futures_util::FutureExt;

use super::*;

/// Records what the service told the host.
#[derive(Default)]
struct Recorder {
    asked: Mutex<Vec<PermissionRequest>>,
    settled: Mutex<Vec<RequestId>>,
}

impl Recorder {
    fn asked(&self) -> Vec<PermissionRequest> {
        self.asked.lock().unwrap().clone()
    }

    fn settled(&self) -> Vec<RequestId> {
        self.settled.lock().unwrap().clone()
    }
}

impl Approver for Recorder {
    fn ask(&self, request: &PermissionRequest) {
        self.asked.lock().unwrap().push(request.clone());
    }

    fn settled(&self, id: &RequestId) {
        self.settled.lock().unwrap().push(id.clone());
    }
}

struct Fixture {
    service: PermissionService,
    approver: Arc<Recorder>,
    saved: Arc<MemorySavedApprovals>,
}

fn fixture() -> Fixture {
    fixture_with(Arc::new(MemorySavedApprovals::new()), "proj")
}

fn fixture_with(saved: Arc<MemorySavedApprovals>, project: &str) -> Fixture {
    let approver = Arc::new(Recorder::default());
    let service = PermissionService::new(project, approver.clone(), saved.clone()).unwrap();
    Fixture {
        service,
        approver,
        saved,
    }
}

/// A configured ruleset from `(permission, pattern, action)` triples, lowest precedence first.
fn rules(triples: &[(&str, &str, Action)]) -> Ruleset {
    triples
        .iter()
        .map(|&(permission, pattern, action)| {
            Rule::new(
                permission,
                pattern,
                action,
                RuleSource::Config {
                    key: format!("permission.{permission}"),
                },
            )
        })
        .collect()
}

fn ask_all() -> Ruleset {
    rules(&[("*", "*", Action::Ask)])
}

fn request(id: &str, session: &str, permission: &str, patterns: &[&str]) -> PermissionRequest {
    PermissionRequest::new(session, permission, patterns.iter().copied()).with_id(id)
}

type Asking<'a> = Pin<Box<dyn Future<Output = Result<(), PermissionError>> + Send + 'a>>;

/// Starts an ask and checks that it waits for a reply.
fn start<'a>(
    service: &'a PermissionService,
    request: PermissionRequest,
    ruleset: &'a Ruleset,
) -> Asking<'a> {
    let mut asking: Asking<'a> = Box::pin(service.ask(request, ruleset));
    assert!(
        asking.as_mut().now_or_never().is_none(),
        "the ask should be pending"
    );
    asking
}

/// The outcome of an ask if it has one yet.
fn poll(asking: &mut Asking<'_>) -> Option<Result<(), PermissionError>> {
    asking.as_mut().now_or_never()
}

/// Decides a request that must not need the user.
fn decide_now(
    service: &PermissionService,
    request: PermissionRequest,
    ruleset: &Ruleset,
) -> Result<(), PermissionError> {
    service
        .ask(request, ruleset)
        .now_or_never()
        .expect("the rules should decide without asking")
}

fn ids(requests: &[PermissionRequest]) -> Vec<&str> {
    requests.iter().map(|r| r.id.as_str()).collect()
}

#[test]
fn immediate_decisions_table() {
    use Action::{Allow, Ask, Deny};
    // (configured rules, permission, patterns, expected: None = pending, Some(Ok), Some(Err(deny pattern)))
    type Case<'a> = (
        &'a [(&'a str, &'a str, Action)],
        &'a str,
        &'a [&'a str],
        Option<Result<(), &'a str>>,
    );
    let cases: &[Case<'_>] = &[
        (&[("*", "*", Allow)], "bash", &["ls"], Some(Ok(()))),
        (
            &[("bash", "git *", Allow)],
            "bash",
            &["git status", "git log"],
            Some(Ok(())),
        ),
        (
            &[("bash", "git *", Allow)],
            "bash",
            &["git status", "ls"],
            None,
        ),
        (&[], "bash", &["ls"], None),
        (
            &[("bash", "rm *", Deny)],
            "bash",
            &["rm -rf /"],
            Some(Err("rm *")),
        ),
        // A deny on the second pattern wins over an ask on the first.
        (
            &[("bash", "*", Ask), ("bash", "rm *", Deny)],
            "bash",
            &["ls", "rm x"],
            Some(Err("rm *")),
        ),
        // A deny on the second pattern wins over an allow on the first.
        (
            &[("bash", "ls *", Allow), ("bash", "rm *", Deny)],
            "bash",
            &["ls", "rm x"],
            Some(Err("rm *")),
        ),
        // Last match wins: a later allow overrides an earlier deny.
        (
            &[("bash", "*", Deny), ("bash", "git *", Allow)],
            "bash",
            &["git status"],
            Some(Ok(())),
        ),
        (
            &[("bash", "*", Allow), ("*", "*", Deny)],
            "bash",
            &["ls"],
            Some(Err("*")),
        ),
        // An empty pattern list is decided as `*`.
        (&[("todowrite", "*", Allow)], "todowrite", &[], Some(Ok(()))),
        (&[("todowrite", "x", Allow)], "todowrite", &[], None),
    ];
    for (i, (triples, permission, patterns, expected)) in cases.iter().enumerate() {
        let f = fixture();
        let ruleset = rules(triples);
        let mut asking: Asking<'_> = Box::pin(
            f.service
                .ask(request("", "s1", permission, patterns), &ruleset),
        );
        let outcome = poll(&mut asking);
        match (expected, outcome) {
            (None, None) => {
                assert_eq!(f.service.pending().len(), 1, "case {i}");
                assert_eq!(f.approver.asked().len(), 1, "case {i}");
            }
            (Some(Ok(())), Some(Ok(()))) => {
                assert!(f.approver.asked().is_empty(), "case {i}: asked anyway");
            }
            (Some(Err(rule_pattern)), Some(Err(PermissionError::Denied { rule, .. }))) => {
                assert_eq!(rule.pattern.as_str(), *rule_pattern, "case {i}");
                assert_eq!(rule.action, Action::Deny, "case {i}");
                assert!(f.approver.asked().is_empty(), "case {i}: asked anyway");
            }
            (expected, outcome) => panic!("case {i}: expected {expected:?}, got {outcome:?}"),
        }
        // Nothing is left pending once the ask is over.
        if expected.is_some() {
            assert!(f.service.pending().is_empty(), "case {i}");
        }
    }
}

#[test]
fn deny_names_the_resource_and_rule() {
    let f = fixture();
    let ruleset = rules(&[("bash", "*", Action::Allow), ("bash", "rm *", Action::Deny)]);
    let error = decide_now(
        &f.service,
        request("", "s1", "bash", &["rm -rf /"]),
        &ruleset,
    )
    .unwrap_err();
    assert_eq!(
        error,
        PermissionError::Denied {
            permission: "bash".into(),
            resource: "rm -rf /".into(),
            rule: Box::new(ruleset.rules()[1].clone()),
        }
    );
    assert!(!error.stops_loop());
}

#[test]
fn first_deny_stops() {
    let f = fixture();
    let ruleset = rules(&[
        ("bash", "rm *", Action::Deny),
        ("bash", "dd *", Action::Deny),
    ]);
    let error = decide_now(
        &f.service,
        request("", "s1", "bash", &["ls", "dd if=x", "rm y"]),
        &ruleset,
    )
    .unwrap_err();
    let PermissionError::Denied { resource, .. } = error else {
        panic!("expected a deny, got {error:?}");
    };
    assert_eq!(resource, "dd if=x");
    assert!(f.service.pending().is_empty());
}

#[test]
fn ask_creates_a_pending_request_and_notifies_the_approver() {
    let f = fixture();
    let ruleset = ask_all();
    let req = PermissionRequest::new("s1", "edit", ["src/a.rs"])
        .with_always(["*"])
        .with_metadata(serde_json::json!({"diff": "+x"}))
        .with_tool_call("msg_1", "call_1");
    let _asking = start(&f.service, req.clone(), &ruleset);
    let pending = f.service.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id.as_str(), "per_1", "an empty id is generated");
    assert_eq!(
        PermissionRequest {
            id: RequestId::default(),
            ..pending[0].clone()
        },
        req
    );
    assert_eq!(
        f.approver.asked(),
        pending,
        "the approver sees the pending request"
    );
}

#[test]
fn generated_ids_count_up_and_supplied_ids_are_kept_unless_taken() {
    let f = fixture();
    let ruleset = ask_all();
    let _a = start(&f.service, request("", "s1", "bash", &["a"]), &ruleset);
    let _b = start(&f.service, request("mine", "s1", "bash", &["b"]), &ruleset);
    let _c = start(&f.service, request("", "s1", "bash", &["c"]), &ruleset);
    // A supplied id that is already pending is replaced, and the approver sees the new one.
    let _d = start(&f.service, request("mine", "s1", "bash", &["d"]), &ruleset);
    assert_eq!(
        ids(&f.service.pending()),
        ["per_1", "mine", "per_2", "per_3"]
    );
    assert_eq!(
        ids(&f.approver.asked()),
        ["per_1", "mine", "per_2", "per_3"]
    );
}

#[test]
fn once_resolves_only_that_request() {
    let f = fixture();
    let ruleset = ask_all();
    let mut a = start(&f.service, request("a", "s1", "bash", &["ls"]), &ruleset);
    let mut b = start(&f.service, request("b", "s1", "bash", &["ls"]), &ruleset);
    f.service.reply(&"a".into(), Reply::Once).unwrap();
    assert_eq!(poll(&mut a), Some(Ok(())));
    assert_eq!(poll(&mut b), None, "once does not cascade");
    assert_eq!(ids(&f.service.pending()), ["b"]);
    assert!(
        f.service.approvals().rules().is_empty(),
        "once saves nothing"
    );
    assert!(f.saved.load("proj").unwrap().is_empty());
    assert_eq!(f.approver.settled(), [RequestId::from("a")]);
    // Asking again still asks.
    let _c = start(&f.service, request("c", "s1", "bash", &["ls"]), &ruleset);
}

#[test]
fn always_persists_and_cascades_within_the_session_only() {
    let f = fixture();
    let ruleset = ask_all();
    let mut a = start(
        &f.service,
        request("a", "s1", "bash", &["git status --short"]).with_always(["git status *"]),
        &ruleset,
    );
    let mut same = start(
        &f.service,
        request("b", "s1", "bash", &["git status"]),
        &ruleset,
    );
    let mut still_asks = start(
        &f.service,
        request("c", "s1", "bash", &["git push"]),
        &ruleset,
    );
    let mut partly = start(
        &f.service,
        request("d", "s1", "bash", &["git status", "rm x"]),
        &ruleset,
    );
    let mut other_permission = start(
        &f.service,
        request("e", "s1", "edit", &["git status"]),
        &ruleset,
    );
    let mut other_session = start(
        &f.service,
        request("f", "s2", "bash", &["git status"]),
        &ruleset,
    );

    f.service.reply(&"a".into(), Reply::Always).unwrap();

    assert_eq!(poll(&mut a), Some(Ok(())));
    assert_eq!(poll(&mut same), Some(Ok(())), "same session, now allowed");
    assert_eq!(poll(&mut still_asks), None);
    assert_eq!(poll(&mut partly), None, "every pattern must be allowed");
    assert_eq!(poll(&mut other_permission), None);
    assert_eq!(
        poll(&mut other_session),
        None,
        "other sessions stay pending"
    );
    assert_eq!(ids(&f.service.pending()), ["c", "d", "e", "f"]);
    assert_eq!(f.approver.settled(), [RequestId::from("a"), "b".into()]);
    assert_eq!(
        f.saved.load("proj").unwrap(),
        [("bash".to_owned(), "git status *".to_owned())]
    );
    assert_eq!(
        f.service.approvals().rules(),
        [Rule::new(
            "bash",
            "git status *",
            Action::Allow,
            RuleSource::Saved
        )]
    );

    // The approval now decides new asks from any session without asking.
    assert_eq!(
        decide_now(
            &f.service,
            request("", "s3", "bash", &["git status -v"]),
            &ruleset
        ),
        Ok(())
    );
}

#[test]
fn always_saves_each_pattern_once() {
    let f = fixture();
    let ruleset = ask_all();
    let _a = start(
        &f.service,
        request("a", "s1", "edit", &["a.rs", "b.rs"]),
        &ruleset,
    );
    f.service.reply(&"a".into(), Reply::Always).unwrap();
    let _b = start(
        &f.service,
        request("b", "s1", "edit", &["a.rs", "c.rs"]),
        &ruleset,
    );
    f.service.reply(&"b".into(), Reply::Always).unwrap();
    let saved: Vec<String> = f
        .saved
        .load("proj")
        .unwrap()
        .into_iter()
        .map(|(_, pattern)| pattern)
        .collect();
    assert_eq!(saved, ["a.rs", "b.rs", "c.rs"]);
    assert_eq!(f.service.approvals().rules().len(), 3);
}

#[test]
fn reject_fails_it_and_the_sessions_other_requests() {
    let f = fixture();
    let ruleset = ask_all();
    let mut a = start(&f.service, request("a", "s1", "bash", &["ls"]), &ruleset);
    let mut b = start(
        &f.service,
        request("b", "s1", "edit", &["x.rs", "y.rs"]),
        &ruleset,
    );
    let mut other = start(&f.service, request("c", "s2", "bash", &["ls"]), &ruleset);
    f.service
        .reply(&"a".into(), Reply::Reject { message: None })
        .unwrap();
    let rejected = |permission: &str, patterns: &[&str]| PermissionError::Rejected {
        permission: permission.into(),
        patterns: patterns.iter().map(|p| p.to_string()).collect(),
    };
    let error = poll(&mut a).unwrap().unwrap_err();
    assert_eq!(error, rejected("bash", &["ls"]));
    assert!(error.stops_loop());
    assert_eq!(poll(&mut b), Some(Err(rejected("edit", &["x.rs", "y.rs"]))));
    assert_eq!(poll(&mut other), None);
    assert_eq!(ids(&f.service.pending()), ["c"]);
    assert_eq!(f.approver.settled(), [RequestId::from("a"), "b".into()]);
}

#[test]
fn reject_with_message_is_feedback_and_still_rejects_the_session() {
    let f = fixture();
    let ruleset = ask_all();
    let mut a = start(
        &f.service,
        request("a", "s1", "bash", &["npm test"]),
        &ruleset,
    );
    let mut b = start(&f.service, request("b", "s1", "bash", &["ls"]), &ruleset);
    f.service
        .reply(
            &"a".into(),
            Reply::Reject {
                message: Some("use cargo test instead".into()),
            },
        )
        .unwrap();
    let error = poll(&mut a).unwrap().unwrap_err();
    assert_eq!(
        error,
        PermissionError::Corrected {
            permission: "bash".into(),
            patterns: vec!["npm test".into()],
            feedback: "use cargo test instead".into(),
        }
    );
    assert!(!error.stops_loop(), "feedback lets the loop go on");
    assert!(matches!(
        poll(&mut b),
        Some(Err(PermissionError::Rejected { .. }))
    ));
}

#[test]
fn blank_reject_message_is_a_plain_rejection() {
    for message in [Some(""), Some("  \n"), None] {
        let f = fixture();
        let ruleset = ask_all();
        let mut a = start(&f.service, request("a", "s1", "bash", &["ls"]), &ruleset);
        f.service
            .reply(
                &"a".into(),
                Reply::Reject {
                    message: message.map(str::to_owned),
                },
            )
            .unwrap();
        assert!(
            matches!(poll(&mut a), Some(Err(PermissionError::Rejected { .. }))),
            "{message:?}"
        );
    }
}

#[test]
fn unknown_and_repeated_replies_fail() {
    let f = fixture();
    let ruleset = ask_all();
    assert_eq!(
        f.service.reply(&"nope".into(), Reply::Once),
        Err(ReplyError::UnknownRequest { id: "nope".into() })
    );
    let _a = start(&f.service, request("a", "s1", "bash", &["ls"]), &ruleset);
    f.service.reply(&"a".into(), Reply::Once).unwrap();
    for reply in [Reply::Once, Reply::Always, Reply::Reject { message: None }] {
        assert_eq!(
            f.service.reply(&"a".into(), reply),
            Err(ReplyError::UnknownRequest { id: "a".into() })
        );
    }
}

#[test]
fn a_saved_approval_never_overrides_a_configured_deny() {
    let saved = Arc::new(MemorySavedApprovals::new());
    saved.save("proj", "bash", "*").unwrap();
    saved.save("proj", "read", ".env").unwrap();
    let f = fixture_with(saved, "proj");
    let ruleset = rules(&[
        ("bash", "*", Action::Ask),
        ("bash", "rm *", Action::Deny),
        ("read", "*.env", Action::Deny),
    ]);
    let error = decide_now(
        &f.service,
        request("", "s1", "bash", &["rm -rf x"]),
        &ruleset,
    )
    .unwrap_err();
    assert!(matches!(error, PermissionError::Denied { .. }), "{error:?}");
    let error = decide_now(&f.service, request("", "s1", "read", &[".env"]), &ruleset).unwrap_err();
    assert!(matches!(error, PermissionError::Denied { .. }), "{error:?}");
    // The saved approval does lift the configured ask.
    assert_eq!(
        decide_now(&f.service, request("", "s1", "bash", &["ls"]), &ruleset),
        Ok(())
    );
}

#[test]
fn saved_approvals_outrank_more_specific_configured_asks() {
    // Saved approvals come after the configured rules, so last-match-wins lets them decide.
    let saved = Arc::new(MemorySavedApprovals::new());
    saved.save("proj", "read", "*").unwrap();
    let f = fixture_with(saved, "proj");
    let ruleset = rules(&[("read", "*", Action::Allow), ("read", "*.env", Action::Ask)]);
    assert_eq!(
        decide_now(
            &f.service,
            request("", "s1", "read", &["prod.env"]),
            &ruleset
        ),
        Ok(())
    );
}

#[test]
fn saved_approvals_load_on_construction_for_the_project() {
    let saved = Arc::new(MemorySavedApprovals::new());
    let ruleset = ask_all();
    {
        let f = fixture_with(saved.clone(), "proj");
        let _a = start(
            &f.service,
            request("a", "s1", "webfetch", &["https://x"]),
            &ruleset,
        );
        f.service.reply(&"a".into(), Reply::Always).unwrap();
    }
    let again = fixture_with(saved.clone(), "proj");
    assert_eq!(again.service.project(), "proj");
    assert_eq!(
        decide_now(
            &again.service,
            request("", "s9", "webfetch", &["https://x"]),
            &ruleset
        ),
        Ok(())
    );
    assert!(again.approver.asked().is_empty());

    let elsewhere = fixture_with(saved, "other");
    let _b = start(
        &elsewhere.service,
        request("b", "s9", "webfetch", &["https://x"]),
        &ruleset,
    );
}

#[test]
fn dropping_the_ask_withdraws_the_request() {
    let f = fixture();
    let ruleset = ask_all();
    let a = start(&f.service, request("a", "s1", "bash", &["ls"]), &ruleset);
    let _b = start(&f.service, request("b", "s1", "bash", &["ls"]), &ruleset);
    drop(a);
    assert_eq!(ids(&f.service.pending()), ["b"]);
    assert_eq!(f.approver.settled(), [RequestId::from("a")]);
    assert_eq!(
        f.service.reply(&"a".into(), Reply::Once),
        Err(ReplyError::UnknownRequest { id: "a".into() })
    );
    // The withdrawn id is free again and a new request under it is independent.
    let mut again = start(&f.service, request("a", "s1", "bash", &["ls"]), &ruleset);
    f.service.reply(&"a".into(), Reply::Once).unwrap();
    assert_eq!(poll(&mut again), Some(Ok(())));
}

#[test]
fn a_finished_ask_does_not_withdraw_a_later_request_with_its_id() {
    let f = fixture();
    let ruleset = ask_all();
    let mut first = start(&f.service, request("a", "s1", "bash", &["ls"]), &ruleset);
    f.service.reply(&"a".into(), Reply::Once).unwrap();
    // The first future is answered but not yet polled; a new request reuses the id.
    let _second = start(&f.service, request("a", "s1", "bash", &["pwd"]), &ruleset);
    assert_eq!(poll(&mut first), Some(Ok(())));
    drop(first);
    assert_eq!(ids(&f.service.pending()), ["a"]);
    assert_eq!(f.service.pending()[0].patterns, ["pwd"]);
}

#[test]
fn cancel_session_fails_its_pending_requests() {
    let f = fixture();
    let ruleset = ask_all();
    let mut a = start(&f.service, request("a", "s1", "bash", &["ls"]), &ruleset);
    let mut b = start(&f.service, request("b", "s1", "edit", &["x"]), &ruleset);
    let mut c = start(&f.service, request("c", "s2", "bash", &["ls"]), &ruleset);
    assert_eq!(f.service.cancel_session("s1"), 2);
    assert_eq!(
        poll(&mut a),
        Some(Err(PermissionError::Cancelled {
            permission: "bash".into(),
            patterns: vec!["ls".into()],
        }))
    );
    assert!(matches!(
        poll(&mut b),
        Some(Err(PermissionError::Cancelled { .. }))
    ));
    assert_eq!(poll(&mut c), None);
    assert_eq!(f.service.cancel_session("s1"), 0);
    assert_eq!(f.approver.settled(), [RequestId::from("a"), "b".into()]);
}

#[test]
fn cancel_call_withdraws_only_that_calls_requests() {
    let f = fixture();
    let ruleset = ask_all();
    let mut a = start(
        &f.service,
        request("a", "s1", "external_directory", &["/tmp/*"]).with_tool_call("m1", "call_1"),
        &ruleset,
    );
    let mut b = start(
        &f.service,
        request("b", "s1", "bash", &["ls"]).with_tool_call("m1", "call_2"),
        &ruleset,
    );
    let mut c = start(&f.service, request("c", "s1", "bash", &["ls"]), &ruleset);
    assert_eq!(f.service.cancel_call("call_1"), 1);
    assert!(matches!(
        poll(&mut a),
        Some(Err(PermissionError::Cancelled { .. }))
    ));
    assert_eq!(poll(&mut b), None);
    assert_eq!(poll(&mut c), None);
    assert_eq!(ids(&f.service.pending()), ["b", "c"]);
}

/// Replies from inside `Approver::ask`, as a host with an automatic policy might.
struct AutoReply {
    service: Mutex<Option<Arc<PermissionService>>>,
    reply: Reply,
}

impl Approver for AutoReply {
    fn ask(&self, request: &PermissionRequest) {
        let service = self.service.lock().unwrap().clone().unwrap();
        service.reply(&request.id, self.reply.clone()).unwrap();
    }
}

#[test]
fn the_approver_may_reply_from_inside_ask() {
    for (reply, expected_ok) in [
        (Reply::Once, true),
        (Reply::Reject { message: None }, false),
    ] {
        let approver = Arc::new(AutoReply {
            service: Mutex::new(None),
            reply,
        });
        let service = Arc::new(
            PermissionService::new(
                "proj",
                approver.clone(),
                Arc::new(MemorySavedApprovals::new()),
            )
            .unwrap(),
        );
        *approver.service.lock().unwrap() = Some(service.clone());
        let outcome = decide_now(&service, request("", "s1", "bash", &["ls"]), &ask_all());
        assert_eq!(outcome.is_ok(), expected_ok);
        assert!(service.pending().is_empty());
        // Break the reference cycle.
        approver.service.lock().unwrap().take();
    }
}

/// A store that fails every call.
struct Broken;

impl SavedApprovals for Broken {
    fn load(&self, _project: &str) -> Result<Vec<(String, String)>, SavedApprovalsError> {
        Err(SavedApprovalsError("disk on fire".into()))
    }

    fn save(
        &self,
        _project: &str,
        _permission: &str,
        _pattern: &str,
    ) -> Result<(), SavedApprovalsError> {
        Err(SavedApprovalsError("disk full".into()))
    }
}

/// Loads nothing, fails every save.
struct ReadOnly;

impl SavedApprovals for ReadOnly {
    fn load(&self, _project: &str) -> Result<Vec<(String, String)>, SavedApprovalsError> {
        Ok(Vec::new())
    }

    fn save(
        &self,
        project: &str,
        permission: &str,
        pattern: &str,
    ) -> Result<(), SavedApprovalsError> {
        Broken.save(project, permission, pattern)
    }
}

#[test]
fn store_failures_are_reported() {
    let error = PermissionService::new("proj", Arc::new(Recorder::default()), Arc::new(Broken))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot load the saved approvals of project `proj`: disk on fire"
    );

    let service =
        PermissionService::new("proj", Arc::new(Recorder::default()), Arc::new(ReadOnly)).unwrap();
    let ruleset = ask_all();
    let mut a = start(&service, request("a", "s1", "bash", &["ls"]), &ruleset);
    let error = service.reply(&"a".into(), Reply::Always).unwrap_err();
    assert_eq!(
        error,
        ReplyError::NotSaved {
            message: "`bash` on `ls`: disk full".into()
        }
    );
    // Everything but the persistence happened.
    assert_eq!(poll(&mut a), Some(Ok(())));
    assert_eq!(
        decide_now(&service, request("", "s2", "bash", &["ls"]), &ruleset),
        Ok(())
    );
}

#[test]
fn model_facing_messages() {
    let deny = Rule::new(
        "bash",
        "rm *",
        Action::Deny,
        RuleSource::Config {
            key: "permission.bash".into(),
        },
    );
    let patterns = vec!["git push".to_owned(), "git push --force".to_owned()];
    let cases = [
        (
            PermissionError::Denied {
                permission: "bash".into(),
                resource: "rm -rf /".into(),
                rule: Box::new(deny),
            },
            "Permission denied: `bash` on `rm -rf /` is denied by your configuration \
             (`permission.bash`): deny `bash` on `rm *`. Do not retry this call; choose another \
             approach or ask the user.",
        ),
        (
            PermissionError::Denied {
                permission: "edit".into(),
                resource: "src/a.rs".into(),
                rule: Box::new(Rule::new(
                    "edit",
                    "*",
                    Action::Deny,
                    RuleSource::Agent {
                        name: "plan".into(),
                    },
                )),
            },
            "Permission denied: `edit` on `src/a.rs` is denied by the `plan` agent preset: deny \
             `edit` on `*`. Do not retry this call; choose another approach or ask the user.",
        ),
        (
            PermissionError::Rejected {
                permission: "bash".into(),
                patterns: patterns.clone(),
            },
            "The user rejected permission to run `bash` on `git push`, `git push --force`. Do \
             not retry it; ask the user how to proceed.",
        ),
        (
            PermissionError::Corrected {
                permission: "bash".into(),
                patterns: vec!["git push".into()],
                feedback: "push to a branch, not main".into(),
            },
            "The user rejected permission to run `bash` on `git push` and said: push to a \
             branch, not main",
        ),
        (
            PermissionError::Cancelled {
                permission: "bash".into(),
                patterns,
            },
            "The request for permission to run `bash` on `git push`, `git push --force` was \
             cancelled before the user answered. Do not retry it unless the user asks.",
        ),
    ];
    for (error, expected) in cases {
        assert_eq!(error.to_string(), expected);
    }
    assert_eq!(
        ReplyError::UnknownRequest { id: "per_9".into() }.to_string(),
        "no pending permission request has the id `per_9`; it may already be answered or \
         cancelled"
    );
}

#[test]
fn requests_and_replies_serialize_for_hosts() {
    let req = request("per_1", "s1", "bash", &["ls"]).with_tool_call("m", "c");
    let json = serde_json::to_value(&req).unwrap();
    assert_eq!(json["id"], "per_1");
    assert_eq!(json["tool_call"]["call"], "c");
    assert_eq!(
        serde_json::from_value::<PermissionRequest>(json).unwrap(),
        req
    );
    for (reply, json) in [
        (Reply::Once, serde_json::json!({"reply": "once"})),
        (Reply::Always, serde_json::json!({"reply": "always"})),
        (
            Reply::Reject {
                message: Some("no".into()),
            },
            serde_json::json!({"reply": "reject", "message": "no"}),
        ),
    ] {
        assert_eq!(serde_json::to_value(&reply).unwrap(), json);
        assert_eq!(serde_json::from_value::<Reply>(json).unwrap(), reply);
    }
}

#[test]
fn the_service_is_shareable_and_its_futures_are_send() {
    fn shareable<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    shareable::<PermissionService>();
    shareable::<MemorySavedApprovals>();
    let f = fixture();
    let ruleset = ask_all();
    send(&f.service.ask(request("", "s1", "bash", &["ls"]), &ruleset));
}

#[test]
fn concurrent_asks_on_a_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    let service = Arc::new(fixture().service);
    let ruleset = Arc::new(ask_all());
    runtime.block_on(async {
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let service = service.clone();
                let ruleset = ruleset.clone();
                tokio::spawn(async move {
                    let session = format!("s{}", i % 4);
                    let req = request(&format!("r{i}"), &session, "bash", &["ls"]);
                    (session, service.ask(req, &ruleset).await)
                })
            })
            .collect();
        while service.pending().len() < 32 {
            tokio::task::yield_now().await;
        }
        // One rejection settles all of session s0; the rest are answered one by one.
        service
            .reply(&"r0".into(), Reply::Reject { message: None })
            .unwrap();
        for req in service.pending() {
            assert_ne!(req.session, "s0");
            service.reply(&req.id, Reply::Once).unwrap();
        }
        for task in tasks {
            let (session, outcome) = task.await.unwrap();
            if session == "s0" {
                assert!(matches!(outcome, Err(PermissionError::Rejected { .. })));
            } else {
                assert_eq!(outcome, Ok(()));
            }
        }
    });
    assert!(service.pending().is_empty());
}

fn judgment_cases() -> u32 {
    if std::env::var("TACKLE_DEEP").as_deref() == Ok("1") {
        4096
    } else {
        256
    }
}

/// A rule pattern a user could write for files: globs with `*` and `**`, `*.env`, a home `~`,
/// absolute and relative paths.
fn file_pattern() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    const PIECES: &[&str] = &[
        "*", "**", "*.env", ".env", "src", "/", "a", "b.rs", "?", ".", "..", "~", "/home/u", "é",
        "\\",
    ];
    prop::collection::vec(prop::sample::select(PIECES), 0..6).prop_map(|parts| {
        let joined = parts.concat();
        crate::Pattern::expand_home(&joined, Some("/home/u")).into_owned()
    })
}

/// A path a tool could ask about: Location-relative, absolute or under the home.
fn asked_path() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    const PIECES: &[&str] = &[
        "src",
        "a",
        "b.rs",
        ".env",
        "x.env",
        ".env.example",
        "/",
        "/home/u/",
        "..",
        ".",
        "é",
        "\\",
        " ",
    ];
    prop::collection::vec(prop::sample::select(PIECES), 0..7).prop_map(|parts| parts.concat())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(judgment_cases()))]

    /// The judgment of one permission, decided per resource without allocating, gives the
    /// verdict `ask` reaches before it asks, for random rule sets (allow, ask and deny, the
    /// user's, a preset's and a project's), random saved approvals and random paths.
    #[test]
    fn a_judgment_of_one_permission_decides_as_ask_does(
        configured in proptest::collection::vec(
            (0usize..4, file_pattern(), 0usize..3, 0usize..3), 0..10),
        saved in proptest::collection::vec((0usize..4, file_pattern()), 0..4),
        asked in proptest::collection::vec((0usize..3, asked_path()), 1..12),
    ) {
        const PERMISSIONS: [&str; 4] = ["read", "*", "re*", "edit"];
        const ACTIONS: [Action; 3] = [Action::Allow, Action::Ask, Action::Deny];
        let configured: Ruleset = configured
            .iter()
            .map(|(permission, pattern, action, source)| {
                let source = match source {
                    0 => RuleSource::Default,
                    1 => RuleSource::Config { key: "permission.read".to_owned() },
                    _ => RuleSource::Project { key: "permission.read".to_owned() },
                };
                Rule::new(PERMISSIONS[*permission], pattern, ACTIONS[*action], source)
            })
            .collect();
        let approved: Ruleset = saved
            .iter()
            .map(|(permission, pattern)| saved_rule(PERMISSIONS[*permission], pattern))
            .collect();
        let judgment = Judgment { configured: configured.clone(), approved: approved.clone() };
        for (permission, path) in &asked {
            let permission = ["read", "edit", "reads"][*permission];
            let expected = match decide_on(&configured, &approved, permission, std::slice::from_ref(path)) {
                Verdict::Allow => Standing::Allowed,
                Verdict::Ask => Standing::WouldAsk,
                Verdict::Deny(_) => Standing::Denied,
            };
            proptest::prop_assert_eq!(judgment.standing(permission, path), expected);
            proptest::prop_assert_eq!(
                judgment.of_permission(permission).standing(path),
                expected,
                "{} on {:?}", permission, path
            );
        }
    }
}
