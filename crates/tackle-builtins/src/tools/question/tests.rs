//! Tests of the question tool with a scripted asker.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tackle_core::{AnyTool, CallIdentity, CancellationToken, Context, InvocationOutcome};

use super::{Answer, AskFuture, Question, QuestionAsker};
use crate::fs::LocationFs;
use crate::tools::{ToolEnv, agent_tools};

/// Answers every call with a fixed reply, or never when there is none.
struct Scripted {
    reply: Option<Answer>,
    calls: AtomicUsize,
    seen: Mutex<Vec<(String, Vec<Question>)>>,
}

impl Scripted {
    fn new(reply: Option<Answer>) -> Arc<Self> {
        Arc::new(Self {
            reply,
            calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl QuestionAsker for Scripted {
    fn ask<'a>(&'a self, session: &'a str, questions: &'a [Question]) -> AskFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen
            .lock()
            .unwrap()
            .push((session.to_owned(), questions.to_vec()));
        Box::pin(async move {
            match &self.reply {
                Some(reply) => reply.clone(),
                None => std::future::pending().await,
            }
        })
    }
}

fn question_tool(dir: &tempfile::TempDir, asker: Arc<Scripted>) -> AnyTool {
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap());
    let tools = agent_tools(&env, Some(asker));
    tools.into_iter().find(|(n, _)| *n == "question").unwrap().1
}

fn cx(token: CancellationToken) -> Context {
    Context::new(CallIdentity::new("s", "build", "m", "c"), token)
}

fn questions() -> Value {
    json!({"questions": [
        {
            "header": "Database",
            "question": "Which database should the cache use?",
            "options": [
                {"label": "SQLite", "description": "Recommended: one file, no server."},
                {"label": "Postgres", "description": "Shared with the main service."},
            ],
        },
        {
            "header": "Features",
            "question": "Which features should ship first?",
            "options": [
                {"label": "Search", "description": "Full-text search."},
                {"label": "Export", "description": "CSV export."},
                {"label": "Sharing", "description": "Share links."},
            ],
            "multiple": true,
        },
    ]})
}

async fn run(tool: &AnyTool, args: Value) -> InvocationOutcome {
    tool.invoke(args.into(), cx(CancellationToken::new()))
        .await
        .outcome
}

fn completed(outcome: InvocationOutcome) -> (String, Value) {
    match outcome {
        InvocationOutcome::Completed(output) => (
            output.content[0].as_text().unwrap().to_owned(),
            output.structured,
        ),
        other => panic!("expected success, got {other:?}"),
    }
}

#[tokio::test]
async fn answers_are_rendered_one_line_per_question() {
    let dir = tempfile::tempdir().unwrap();
    let asker = Scripted::new(Some(Answer::Answered(vec![
        vec!["SQLite".to_owned()],
        vec!["Search".to_owned(), "Export".to_owned()],
    ])));
    let tool = question_tool(&dir, asker.clone());
    let (text, structured) = completed(run(&tool, questions()).await);
    assert_eq!(
        text,
        "The user answered:\n\
         Database: SQLite\n\
         Features: Search, Export\n\
         Continue with these answers in mind."
    );
    assert_eq!(structured["dismissed"], false);
    assert_eq!(
        structured["answers"][1]["labels"],
        json!(["Search", "Export"])
    );
    let seen = asker.seen.lock().unwrap();
    assert_eq!(seen[0].0, "s");
    assert_eq!(seen[0].1.len(), 2);
    assert!(seen[0].1[1].multiple);
    assert!(!seen[0].1[0].multiple);
}

#[tokio::test]
async fn missing_answers_are_shown_as_unanswered() {
    let dir = tempfile::tempdir().unwrap();
    let asker = Scripted::new(Some(Answer::Answered(vec![vec![]])));
    let tool = question_tool(&dir, asker);
    let (text, structured) = completed(run(&tool, questions()).await);
    assert!(
        text.contains("Database: (no answer)\nFeatures: (no answer)\n"),
        "{text}"
    );
    assert_eq!(structured["answers"][1]["labels"], json!([]));
}

#[tokio::test]
async fn dismissal_is_a_result_that_tells_the_model_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let tool = question_tool(&dir, Scripted::new(Some(Answer::Dismissed)));
    let (text, structured) = completed(run(&tool, questions()).await);
    assert!(
        text.starts_with("The user dismissed the questions without answering."),
        "{text}"
    );
    assert!(text.contains("Continue without an answer, or ask differently"));
    assert_eq!(structured["dismissed"], true);
    assert_eq!(structured["answers"], json!([]));
}

#[tokio::test]
async fn a_long_header_is_refused_before_asking() {
    let dir = tempfile::tempdir().unwrap();
    let asker = Scripted::new(Some(Answer::Dismissed));
    let tool = question_tool(&dir, asker.clone());
    let mut args = questions();
    args["questions"][1]["header"] = json!("A header that is far too long to show");
    match run(&tool, args).await {
        InvocationOutcome::InvalidInput { message, .. } => {
            assert!(message.contains("questions[1].header"), "{message}");
        }
        other => panic!("expected invalid input, got {other:?}"),
    }
    assert_eq!(asker.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn validation_names_every_bad_field_with_the_header_length() {
    let long = Question {
        header: "x".repeat(31),
        question: " ".to_owned(),
        options: Vec::new(),
        multiple: false,
    };
    let error = super::validate(&[long]).unwrap_err().to_string();
    assert!(
        error.contains("`questions[0].header`: `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx` is 31 characters, over the limit of 30"),
        "{error}"
    );
    assert!(error.contains("`questions[0].question`: must not be empty"));
    // Thirty characters, counted as characters rather than bytes, are fine.
    let ok = Question {
        header: "é".repeat(30),
        question: "Why?".to_owned(),
        options: Vec::new(),
        multiple: false,
    };
    assert!(super::validate(&[ok]).is_ok());
}

#[tokio::test]
async fn cancelling_while_the_user_thinks_returns_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let asker = Scripted::new(None);
    let tool = question_tool(&dir, asker.clone());
    let token = CancellationToken::new();
    let call = tokio::spawn(tool.invoke(questions().into(), cx(token.clone())));
    // Wait until the asker is waiting, then cancel.
    while asker.calls.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    token.cancel();
    let invocation = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call hung after cancellation")
        .unwrap();
    assert!(
        matches!(
            invocation.outcome,
            InvocationOutcome::Interrupted(_) | InvocationOutcome::Failed(_)
        ),
        "{:?}",
        invocation.outcome
    );
}

#[tokio::test]
async fn the_question_tool_is_offered_only_with_an_asker() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap());
    let names =
        |tools: Vec<(&'static str, AnyTool)>| tools.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
    assert_eq!(names(agent_tools(&env, None)), ["todowrite", "todoread"]);
    let asker: Arc<dyn QuestionAsker> = Scripted::new(None);
    assert_eq!(
        names(agent_tools(&env, Some(asker))),
        ["todowrite", "todoread", "question"]
    );
}

#[tokio::test]
async fn the_tool_itself_stops_waiting_when_cancelled() {
    // Calls the executor directly, without the registry's own race against the token.
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap());
    let asker = Scripted::new(None);
    let input: super::QuestionInput = serde_json::from_value(questions()).unwrap();
    let token = CancellationToken::new();
    let context = cx(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    let result = tokio::time::timeout(
        Duration::from_secs(5),
        super::ask(
            tackle_core::State((env.clone(), asker.clone() as Arc<dyn QuestionAsker>)),
            input,
            context.clone(),
        ),
    )
    .await
    .expect("the executor hung after cancellation");
    canceller.await.unwrap();
    let failure = result.unwrap_err();
    assert_eq!(
        failure.message(),
        "The call was interrupted before the user answered."
    );
    assert_eq!(asker.calls.load(Ordering::SeqCst), 1);
}

struct NeverAsked;

impl tackle_permission::Approver for NeverAsked {
    fn ask(&self, request: &tackle_permission::PermissionRequest) {
        panic!("nothing should be asked: {request:?}");
    }
}

#[tokio::test]
async fn a_denied_question_permission_never_reaches_the_user() {
    use tackle_permission::{
        Action, MemorySavedApprovals, PermissionService, Rule, RuleSource, Ruleset,
    };
    let dir = tempfile::tempdir().unwrap();
    let service = PermissionService::new(
        "p",
        Arc::new(NeverAsked),
        Arc::new(MemorySavedApprovals::new()),
    )
    .unwrap();
    let rules: Ruleset = [
        Rule::new("*", "*", Action::Allow, RuleSource::Default),
        Rule::new("question", "*", Action::Deny, RuleSource::Default),
    ]
    .into_iter()
    .collect();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap())
        .with_gate(crate::gate::Gate::new(Arc::new(service), move |_| {
            rules.clone()
        }));
    let asker = Scripted::new(Some(Answer::Dismissed));
    let tool = agent_tools(&env, Some(asker.clone()))
        .into_iter()
        .find(|(n, _)| *n == "question")
        .unwrap()
        .1;
    match run(&tool, questions()).await {
        InvocationOutcome::Failed(failure) => {
            assert!(
                failure
                    .message()
                    .starts_with("Permission denied: `question`"),
                "{failure}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(asker.calls.load(Ordering::SeqCst), 0);
}
