//! Tests of the todo tools: persistence, isolation, replacement, validation and store failures.

use std::sync::Arc;

use serde_json::{Value, json};
use tackle_core::{
    AnyTool, CallIdentity, CancellationToken, Context, InvocationOutcome, SessionState,
    SessionStateError,
};
use tackle_store::{MemorySessionState, SqliteSessionState};
use tokio::sync::mpsc;

use super::TODO_KEY;
use crate::fs::LocationFs;
use crate::tools::{ToolEnv, agent_tools};

fn cx(session: &str) -> Context {
    Context::new(
        CallIdentity::new(session, "build", "m", "c"),
        CancellationToken::new(),
    )
}

fn env(dir: &tempfile::TempDir, state: Option<Arc<dyn SessionState>>) -> ToolEnv {
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap());
    match state {
        Some(state) => env.with_session_state(state),
        None => env,
    }
}

/// The todowrite and todoread tools of one `agent_tools` call.
struct Todos {
    write: AnyTool,
    read: AnyTool,
}

impl Todos {
    fn new(env: &ToolEnv) -> Self {
        let tools = agent_tools(env, None);
        assert_eq!(
            tools.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            ["todowrite", "todoread"]
        );
        let find = |name: &str| tools.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        Self {
            write: find("todowrite"),
            read: find("todoread"),
        }
    }

    async fn write(&self, session: &str, todos: Value) -> Outcome {
        outcome(&self.write, cx(session), json!({ "todos": todos })).await
    }

    async fn read(&self, session: &str) -> Outcome {
        outcome(&self.read, cx(session), json!({})).await
    }
}

#[derive(Debug)]
enum Outcome {
    Ok(String, Value),
    Failed(String),
    Invalid(String),
}

impl Outcome {
    fn text(&self) -> &str {
        match self {
            Outcome::Ok(text, _) | Outcome::Failed(text) | Outcome::Invalid(text) => text,
        }
    }

    fn structured(&self) -> &Value {
        match self {
            Outcome::Ok(_, value) => value,
            other => panic!("expected success, got {other:?}"),
        }
    }
}

async fn outcome(tool: &AnyTool, cx: Context, args: Value) -> Outcome {
    match tool.invoke(args.into(), cx).await.outcome {
        InvocationOutcome::Completed(output) => Outcome::Ok(
            output.content[0].as_text().unwrap_or_default().to_owned(),
            output.structured.clone(),
        ),
        InvocationOutcome::Failed(failure) => Outcome::Failed(failure.to_string()),
        InvocationOutcome::InvalidInput { message, .. } => Outcome::Invalid(message),
        other => panic!("unexpected outcome {other:?}"),
    }
}

fn three() -> Value {
    json!([
        {"content": "Read the spec", "status": "completed", "priority": "high"},
        {"content": "Write the parser", "status": "in_progress", "priority": "high"},
        {"content": "Add tests", "status": "pending", "priority": "medium"},
    ])
}

fn contents(outcome: &Outcome) -> Vec<(String, String)> {
    outcome.structured()["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["content"].as_str().unwrap().to_owned(),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Writes todos through `first`, drops every handle on it (as a process does when it exits),
/// and reads them back through the store `reopen` returns.
async fn survives_reopen(
    first: Arc<dyn SessionState>,
    reopen: impl FnOnce() -> Arc<dyn SessionState>,
) {
    let dir = tempfile::tempdir().unwrap();
    let before = Todos::new(&env(&dir, Some(first)));
    let written = before.write("s", three()).await;
    assert!(matches!(written, Outcome::Ok(..)), "{written:?}");
    drop(before);

    // A new environment (a new process, or after compaction) sharing only the store.
    let after = Todos::new(&env(&dir, Some(reopen())));
    let read = after.read("s").await;
    assert_eq!(contents(&read), contents(&written));
    assert_eq!(read.structured()["open"], 2);
    assert_eq!(
        read.text(),
        "3 todos (2 open):\n\
         [x] Read the spec (high, id 1)\n\
         [>] Write the parser (high, id 2)\n\
         [ ] Add tests (medium, id 3)\n\
         ([ ] pending, [>] in_progress, [x] completed, [-] cancelled)"
    );
}

#[tokio::test]
async fn todos_survive_a_reopen_over_memory_session_state() {
    let state: Arc<dyn SessionState> = Arc::new(MemorySessionState::new());
    survives_reopen(state.clone(), move || state).await;
}

/// Pins that a queued write reaches the file when the last handle closes: the second store is
/// opened only after the first is gone, as in two consecutive `tackle call` processes.
#[tokio::test]
async fn todos_survive_a_reopen_over_sqlite_session_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let first: Arc<dyn SessionState> = Arc::new(SqliteSessionState::open(&path).unwrap());
    survives_reopen(first, || Arc::new(SqliteSessionState::open(&path).unwrap())).await;
}

#[tokio::test]
async fn todos_are_stored_as_json_under_the_todo_key() {
    let dir = tempfile::tempdir().unwrap();
    let state = Arc::new(MemorySessionState::new());
    let todos = Todos::new(&env(&dir, Some(state.clone())));
    todos.write("s", three()).await;
    let stored: Value = serde_json::from_str(&state.get("s", TODO_KEY).unwrap().unwrap()).unwrap();
    assert_eq!(stored[1]["status"], "in_progress");
    assert_eq!(stored[1]["id"], "2");

    // An empty list clears the key.
    let cleared = todos.write("s", json!([])).await;
    assert_eq!(cleared.text(), "Cleared the todo list.");
    assert_eq!(state.get("s", TODO_KEY).unwrap(), None);
}

#[tokio::test]
async fn sessions_have_separate_lists_with_and_without_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let stored: Arc<dyn SessionState> = Arc::new(MemorySessionState::new());
    for env in [env(&dir, Some(stored)), env(&dir, None)] {
        let todos = Todos::new(&env);
        todos.write("a", three()).await;
        let other = todos.read("b").await;
        assert!(
            other.text().starts_with("The todo list is empty."),
            "{other:?}"
        );
        assert!(contents(&other).is_empty());
        // Without a store, the two tools still share one list per session.
        assert_eq!(contents(&todos.read("a").await).len(), 3);
    }
}

#[tokio::test]
async fn todowrite_replaces_the_whole_list_and_keeps_given_ids() {
    let dir = tempfile::tempdir().unwrap();
    let todos = Todos::new(&env(&dir, None));
    todos.write("s", three()).await;
    let replaced = todos
        .write(
            "s",
            json!([
                {"content": "Ship it", "status": "pending", "priority": "low"},
                {"content": "Review", "status": "cancelled", "priority": "medium", "id": "1"},
            ]),
        )
        .await;
    let list = todos.read("s").await;
    assert_eq!(
        contents(&list),
        [
            ("Ship it".to_owned(), "pending".to_owned()),
            ("Review".to_owned(), "cancelled".to_owned()),
        ]
    );
    // The given id is kept; the other item gets the smallest free number.
    let ids: Vec<&str> = list.structured()["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["2", "1"]);
    assert!(
        replaced.text().starts_with("Saved 2 todos (1 open):\n"),
        "{replaced:?}"
    );
    assert!(replaced.text().contains("[-] Review (medium, id 1)"));
}

#[tokio::test]
async fn invalid_status_and_empty_content_are_field_errors() {
    let dir = tempfile::tempdir().unwrap();
    let todos = Todos::new(&env(&dir, None));
    let bad = todos
        .write(
            "s",
            json!([{"content": "x", "status": "done", "priority": "high"}]),
        )
        .await;
    assert!(matches!(bad, Outcome::Invalid(_)), "{bad:?}");
    assert!(bad.text().contains("todos[0].status"), "{}", bad.text());

    let empty = todos
        .write(
            "s",
            json!([{"content": "", "status": "pending", "priority": "high"}]),
        )
        .await;
    assert!(matches!(empty, Outcome::Invalid(_)), "{empty:?}");
    assert!(
        empty.text().contains("todos[0].content"),
        "{}",
        empty.text()
    );

    // Blank content passes the schema but is refused by the tool, naming the field.
    let blank = todos
        .write(
            "s",
            json!([
                {"content": "ok", "status": "pending", "priority": "high", "id": "a"},
                {"content": "  ", "status": "pending", "priority": "high", "id": "a"},
            ]),
        )
        .await;
    assert!(matches!(blank, Outcome::Failed(_)), "{blank:?}");
    assert!(
        blank
            .text()
            .contains("`todos[1].content`: must not be empty")
    );
    assert!(
        blank
            .text()
            .contains("`todos[1].id`: `a` is used by an earlier item")
    );
    // Nothing was saved.
    assert!(contents(&todos.read("s").await).is_empty());
}

#[tokio::test]
async fn the_title_counts_open_items() {
    let dir = tempfile::tempdir().unwrap();
    let todos = Todos::new(&env(&dir, None));
    let (sender, mut receiver) = mpsc::channel(8);
    let args = json!({"todos": [
        {"content": "a", "status": "pending", "priority": "high"},
        {"content": "b", "status": "in_progress", "priority": "high"},
        {"content": "c", "status": "completed", "priority": "low"},
        {"content": "d", "status": "cancelled", "priority": "low"},
        {"content": "e", "status": "pending", "priority": "low"},
    ]});
    let done = outcome(&todos.write, cx("s").with_progress(sender.clone()), args).await;
    assert_eq!(done.structured()["open"], 3);
    assert_eq!(
        receiver.recv().await.unwrap().title.as_deref(),
        Some("3 open todos")
    );
    outcome(&todos.read, cx("s").with_progress(sender), json!({})).await;
    assert_eq!(
        receiver.recv().await.unwrap().title.as_deref(),
        Some("3 open todos")
    );
}

#[tokio::test]
async fn several_items_in_progress_are_saved_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let todos = Todos::new(&env(&dir, None));
    let saved = todos
        .write(
            "s",
            json!([
                {"content": "a", "status": "in_progress", "priority": "high"},
                {"content": "b", "status": "in_progress", "priority": "high"},
            ]),
        )
        .await;
    assert!(matches!(saved, Outcome::Ok(..)), "{saved:?}");
    assert!(
        saved
            .text()
            .contains("Note: 2 items are in_progress. Keep one item in_progress at a time"),
        "{}",
        saved.text()
    );
}

/// A store whose every call fails.
struct Broken;

impl SessionState for Broken {
    fn get(&self, _: &str, _: &str) -> Result<Option<String>, SessionStateError> {
        Err(SessionStateError("database is locked".to_owned()))
    }

    fn put(&self, _: &str, _: &str, _: Option<&str>) -> Result<(), SessionStateError> {
        Err(SessionStateError("database is locked".to_owned()))
    }
}

#[tokio::test]
async fn a_failing_store_is_reported_and_nothing_claims_to_be_saved() {
    let dir = tempfile::tempdir().unwrap();
    let todos = Todos::new(&env(&dir, Some(Arc::new(Broken))));
    let write = todos.write("s", three()).await;
    assert!(matches!(write, Outcome::Failed(_)), "{write:?}");
    assert!(
        write.text().starts_with(
            "The todo list was not saved: session state is unavailable: database is locked."
        ),
        "{}",
        write.text()
    );
    let read = todos.read("s").await;
    assert!(matches!(read, Outcome::Failed(_)), "{read:?}");
    assert!(read.text().starts_with("The todo list could not be read"));
}

#[tokio::test]
async fn a_damaged_stored_list_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let state = Arc::new(MemorySessionState::new());
    state.put("s", TODO_KEY, Some("not json")).unwrap();
    let todos = Todos::new(&env(&dir, Some(state)));
    let read = todos.read("s").await;
    assert!(matches!(read, Outcome::Failed(_)), "{read:?}");
    assert!(read.text().contains("damaged"));
}
