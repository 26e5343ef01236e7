//! Unit tests of the notebook_edit tool and of `read` on notebooks, through the tools themselves.

use serde_json::{Value, json};
use tackle_core::{CallIdentity, CancellationToken, Content, Context, InvocationOutcome};

use crate::fs::LocationFs;
use crate::tools::{ToolEnv, file_tools};

fn cx() -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m1", "c1"),
        CancellationToken::new(),
    )
}

/// Runs `name` and returns (is_error, content).
async fn call(env: &ToolEnv, name: &str, args: Value) -> (bool, Vec<Content>) {
    let tool = file_tools(env)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t)
        .unwrap();
    match tool.invoke(args.to_string().into(), cx()).await.outcome {
        InvocationOutcome::Completed(output) => (false, output.content),
        InvocationOutcome::Failed(failure) => (true, vec![Content::text(failure.to_string())]),
        other => panic!("unexpected outcome {other:?}"),
    }
}

fn text(content: &[Content]) -> String {
    content[0].as_text().unwrap_or_default().to_owned()
}

const NOTEBOOK: &str = "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 4,\n   \"id\": \"a1\",\n   \"metadata\": {},\n   \"outputs\": [\n    {\n     \"data\": {\n      \"image/png\": \"iVBORw0KGgo=\",\n      \"text/plain\": [\n       \"<Figure>\"\n      ]\n     },\n     \"metadata\": {},\n     \"output_type\": \"display_data\"\n    }\n   ],\n   \"source\": [\n    \"plot()\"\n   ]\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";

fn setup() -> (tempfile::TempDir, ToolEnv) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("nb.ipynb"), NOTEBOOK).unwrap();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap());
    (dir, env)
}

#[tokio::test]
async fn read_shows_cells_and_attaches_image_outputs() {
    let (_dir, env) = setup();
    let (err, content) = call(&env, "read", json!({"filePath": "nb.ipynb"})).await;
    assert!(!err, "{}", text(&content));
    assert!(text(&content).contains(
        "Cell 0 · code · id a1 · execution_count 4\n     1\tplot()\nOutput 0 · display_data \
         image/png · attached as media part 1\n<Figure>\n"
    ));
    assert!(
        matches!(&content[1], Content::Media { mime_type, data_base64, .. }
            if mime_type == "image/png" && data_base64 == "iVBORw0KGgo="),
        "{content:?}"
    );
}

#[tokio::test]
async fn a_malformed_notebook_is_read_as_text_with_a_note() {
    let (dir, env) = setup();
    std::fs::write(dir.path().join("bad.ipynb"), "{\"cells\": [\n").unwrap();
    let (err, content) = call(&env, "read", json!({"filePath": "bad.ipynb"})).await;
    assert!(!err);
    let shown = text(&content);
    assert!(
        shown.starts_with(
            "`bad.ipynb` could not be shown as a notebook: it is not valid JSON (EOF while \
             parsing"
        ),
        "{shown}"
    );
    assert!(shown.contains("     1\t{\"cells\": [\n"), "{shown}");
}

#[tokio::test]
async fn an_unread_notebook_is_not_edited() {
    let (dir, env) = setup();
    let replace = json!({"notebookPath": "nb.ipynb", "cellId": "a1", "newSource": "x = 1"});
    let (err, content) = call(&env, "notebook_edit", replace.clone()).await;
    assert!(err);
    assert!(
        text(&content).contains("have not read"),
        "{}",
        text(&content)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("nb.ipynb")).unwrap(),
        NOTEBOOK
    );

    call(&env, "read", json!({"filePath": "nb.ipynb"})).await;
    std::fs::write(
        dir.path().join("nb.ipynb"),
        NOTEBOOK.replace("plot()", "plot(1)"),
    )
    .unwrap();
    let (err, content) = call(&env, "notebook_edit", replace.clone()).await;
    assert!(err, "changed since it was read");
    assert!(
        text(&content).contains("changed since"),
        "{}",
        text(&content)
    );

    call(&env, "read", json!({"filePath": "nb.ipynb"})).await;
    let (err, content) = call(&env, "notebook_edit", replace).await;
    assert!(!err, "{}", text(&content));
    assert_eq!(
        text(&content),
        "Replaced cell 0 (code, id a1) of nb.ipynb. Its outputs and execution count were \
         cleared; run it again to get new ones."
    );
    let written = std::fs::read_to_string(dir.path().join("nb.ipynb")).unwrap();
    assert!(
        written.contains("\"source\": [\n    \"x = 1\"\n   ]\n"),
        "{written}"
    );
    assert!(written.contains("\"outputs\": [],\n") && written.ends_with("}\n"));

    // The write counts as a read: a second edit needs no new read.
    let (err, content) = call(
        &env,
        "notebook_edit",
        json!({"notebookPath": "nb.ipynb", "cellIndex": 1, "editMode": "insert", "cellType": "markdown", "newSource": "Done."}),
    )
    .await;
    assert!(!err, "{}", text(&content));
    assert!(text(&content).starts_with("Inserted a markdown cell at index 1, id "));
}

#[tokio::test]
async fn bad_arguments_are_all_listed_and_nothing_runs() {
    let (_dir, env) = setup();
    let (err, content) = call(
        &env,
        "notebook_edit",
        json!({"notebookPath": "nb.ipynb", "editMode": "insert"}),
    )
    .await;
    assert!(err);
    assert_eq!(
        text(&content),
        "The call was not run:\n- Name the cell with cellId or cellIndex (0-based).\n- newSource \
         is required for `replace` and `insert`.\n- cellType is required for `insert`: give \
         `code`, `markdown` or `raw`."
    );
}

#[tokio::test]
async fn notebook_edit_asks_the_edit_permission() {
    use std::sync::Arc;
    use tackle_permission::{
        Action, MemorySavedApprovals, PermissionService, Rule, RuleSource, Ruleset,
    };
    struct NeverAsked;
    impl tackle_permission::Approver for NeverAsked {
        fn ask(&self, request: &tackle_permission::PermissionRequest) {
            panic!("nothing should be asked: {request:?}");
        }
    }
    let (dir, env) = setup();
    let service = PermissionService::new(
        "p",
        Arc::new(NeverAsked),
        Arc::new(MemorySavedApprovals::new()),
    )
    .unwrap();
    let rules: Ruleset = [
        Rule::new("*", "*", Action::Allow, RuleSource::Default),
        Rule::new("edit", "*.ipynb", Action::Deny, RuleSource::Default),
    ]
    .into_iter()
    .collect();
    let env = env.with_gate(crate::gate::Gate::new(Arc::new(service), move |_| {
        rules.clone()
    }));
    call(&env, "read", json!({"filePath": "nb.ipynb"})).await;
    let (err, content) = call(
        &env,
        "notebook_edit",
        json!({"notebookPath": "nb.ipynb", "cellIndex": 0, "editMode": "delete"}),
    )
    .await;
    assert!(err);
    assert!(
        text(&content).starts_with("Permission denied: `edit` on `nb.ipynb`"),
        "{}",
        text(&content)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("nb.ipynb")).unwrap(),
        NOTEBOOK
    );
}
