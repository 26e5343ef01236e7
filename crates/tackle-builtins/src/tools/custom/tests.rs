//! Tests of custom command tools: real manifests, real shells, a recording permission service.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tackle_core::{
    AnyTool, CallIdentity, CancellationToken, Content, Context, InvalidInput, InvocationOutcome,
};
use tackle_permission::{
    Approver, MemorySavedApprovals, PermissionRequest, PermissionService, Reply, Ruleset,
};

use super::*;
use crate::fs::LocationFs;
use crate::gate::Gate;
use crate::tools::ToolEnv;

/// An approver that records every request and replies `Once`.
struct Recorder {
    requests: Mutex<Vec<PermissionRequest>>,
    service: OnceLock<Weak<PermissionService>>,
}

impl Approver for Recorder {
    fn ask(&self, request: &PermissionRequest) {
        self.requests.lock().unwrap().push(request.clone());
        if let Some(service) = self.service.get().and_then(Weak::upgrade) {
            service.reply(&request.id, Reply::Once).unwrap();
        }
    }
}

impl Recorder {
    /// The patterns of the requests for `permission`, in order.
    fn asked(&self, permission: &str) -> Vec<Vec<String>> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.permission == permission)
            .map(|r| r.patterns.clone())
            .collect()
    }
}

/// A gate asking everything (no rules) of a recorder replying `Once`.
fn recording_gate() -> (Gate, Arc<Recorder>) {
    let recorder = Arc::new(Recorder {
        requests: Mutex::new(Vec::new()),
        service: OnceLock::new(),
    });
    let service = Arc::new(
        PermissionService::new("p", recorder.clone(), Arc::new(MemorySavedApprovals::new()))
            .unwrap(),
    );
    recorder
        .service
        .set(Arc::downgrade(&service))
        .unwrap_or_else(|_| unreachable!());
    (Gate::new(service, |_| Ruleset::new()), recorder)
}

/// A Location root and a home directory.
struct Dirs {
    root: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    /// Writes a project manifest `<file>.json` and returns its path.
    fn project(&self, file: &str, text: &str) -> std::path::PathBuf {
        write(&self.root().join(".tackle/tools"), file, text)
    }

    /// Writes a user manifest `<file>.json` and returns its path.
    fn user(&self, file: &str, text: &str) -> std::path::PathBuf {
        write(&self.home.path().join(".config/tackle/tools"), file, text)
    }

    fn discover(&self) -> CustomCatalog {
        discover_custom_tools(self.root(), Some(self.home.path()))
    }

    /// The tool named `name`, discovered now, under `gate`.
    fn tool(&self, name: &str, gate: Gate) -> AnyTool {
        let catalog = self.discover();
        assert!(catalog.warnings.is_empty(), "{:?}", catalog.warnings);
        let manifest = catalog
            .tools
            .into_iter()
            .find(|t| t.name == name)
            .expect("the manifest was discovered");
        let env = ToolEnv::new(LocationFs::new(self.root()).unwrap()).with_gate(gate);
        tool(&env, manifest, TrustMode::AskForProject)
    }
}

fn write(dir: &Path, file: &str, text: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{file}.json"));
    std::fs::write(&path, text).unwrap();
    path
}

fn manifest(name: &str, command: Value, extra: Value) -> String {
    let mut manifest = json!({
        "name": name,
        "description": format!("The {name} tool."),
        "input": {
            "type": "object",
            "properties": {"target": {"type": "string"}, "count": {"type": "integer"}},
        },
        "command": command,
    });
    if let Value::Object(extra) = extra {
        manifest.as_object_mut().unwrap().extend(extra);
    }
    serde_json::to_string_pretty(&manifest).unwrap()
}

fn cx() -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    )
}

/// Runs the tool: `Ok((structured, content))` or `Err(failure text)`.
async fn call(tool: &AnyTool, args: Value) -> Result<(Value, Vec<Content>), String> {
    match tool.invoke(args.into(), cx()).await.outcome {
        InvocationOutcome::Completed(output) => Ok((output.structured, output.content)),
        InvocationOutcome::Failed(failure) => Err(failure.to_string()),
        other => panic!("unexpected outcome {other:?}"),
    }
}

fn text(content: &[Content]) -> String {
    match content {
        [Content::Text { text }] => text.clone(),
        other => panic!("expected one text part, got {other:?}"),
    }
}

#[tokio::test]
async fn json_output_is_the_structured_result() {
    let dirs = Dirs::new();
    dirs.user("echo", &manifest("echo", json!("cat"), json!({})));
    let tool = dirs.tool("echo", Gate::allow_all());
    assert_eq!(&*tool.definition().description, "The echo tool.");
    assert_eq!(
        tool.definition().input_schema()["properties"]["count"]["type"],
        "integer"
    );
    let args = json!({"target": "a \"quoted\" ✓", "count": 3});
    let (structured, content) = call(&tool, args.clone()).await.unwrap();
    assert_eq!(structured, args);
    assert_eq!(text(&content), serde_json::to_string_pretty(&args).unwrap());
}

#[tokio::test]
async fn text_output_is_returned_as_text() {
    let dirs = Dirs::new();
    dirs.user(
        "hello",
        &manifest("hello", json!("echo hello world"), json!({})),
    );
    dirs.user(
        "argv",
        &manifest("argv", json!(["printf", "%s|", "it's", "$HOME"]), json!({})),
    );
    let (structured, content) = call(&dirs.tool("hello", Gate::allow_all()), json!({}))
        .await
        .unwrap();
    assert_eq!(structured, json!("hello world\n"));
    assert_eq!(text(&content), "hello world\n");
    // An argv command runs without shell expansion.
    let (structured, _) = call(&dirs.tool("argv", Gate::allow_all()), json!({}))
        .await
        .unwrap();
    assert_eq!(structured, json!("it's|$HOME|"));
}

#[tokio::test]
async fn cwd_is_relative_to_the_root() {
    let dirs = Dirs::new();
    std::fs::create_dir(dirs.root().join("sub")).unwrap();
    dirs.user(
        "where",
        &manifest("where", json!("pwd"), json!({"cwd": "sub"})),
    );
    let (structured, _) = call(&dirs.tool("where", Gate::allow_all()), json!({}))
        .await
        .unwrap();
    let expected = dirs.root().join("sub").canonicalize().unwrap();
    assert_eq!(
        Path::new(structured.as_str().unwrap().trim())
            .canonicalize()
            .unwrap(),
        expected
    );
}

#[tokio::test]
async fn timeout_stops_the_process_group() {
    let dirs = Dirs::new();
    dirs.user(
        "slow",
        &manifest(
            "slow",
            json!("echo $$ > pid; echo started; sleep 30"),
            json!({"timeout": 300}),
        ),
    );
    let tool = dirs.tool("slow", Gate::allow_all());
    let start = Instant::now();
    let failure = call(&tool, json!({})).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(
        failure.contains("timed out after 300 ms and was stopped"),
        "{failure}"
    );
    assert!(failure.contains("started"), "{failure}");
    let pgid: i32 = std::fs::read_to_string(dirs.root().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(run::group_gone(pgid), "process group {pgid} is still alive");
}

#[tokio::test]
async fn non_zero_exit_is_a_failure_with_the_output_tail() {
    let dirs = Dirs::new();
    dirs.user(
        "fails",
        &manifest(
            "fails",
            json!("echo first; echo 'it broke' >&2; exit 3"),
            json!({}),
        ),
    );
    let failure = call(&dirs.tool("fails", Gate::allow_all()), json!({}))
        .await
        .unwrap_err();
    assert!(
        failure.contains("Custom tool `fails` failed (exit: 3)"),
        "{failure}"
    );
    // stdout and stderr are two pipes: their relative order is only as good as arrival order.
    assert!(
        failure.contains("first") && failure.contains("it broke"),
        "{failure}"
    );
    assert!(failure.ends_with("exit: 3"), "{failure}");
}

#[tokio::test]
async fn invalid_arguments_never_run_the_command() {
    let dirs = Dirs::new();
    let text = serde_json::to_string(&json!({
        "name": "touchy",
        "description": "Creates a marker.",
        "input": {
            "type": "object",
            "properties": {"target": {"type": "string", "pattern": "^[a-z0-9-]+$"}},
            "required": ["target"],
        },
        "command": "touch marker",
    }))
    .unwrap();
    dirs.user("touchy", &text);
    let tool = dirs.tool("touchy", Gate::allow_all());
    for (args, path, message) in [
        (json!({}), "target", "missing field"),
        (json!({"target": "x;rm"}), "target", "does not match"),
        (
            json!({"target": 7}),
            "target",
            "expected string, got number 7",
        ),
    ] {
        match tool.invoke(args.clone().into(), cx()).await.outcome {
            InvocationOutcome::InvalidInput {
                reason: InvalidInput::Fields { errors },
                message: shown,
            } => {
                assert_eq!(errors.len(), 1, "{errors:?}");
                assert_eq!(errors[0].path, path);
                assert!(errors[0].message.contains(message), "{errors:?}");
                assert!(shown.contains("target: string (required)"), "{shown}");
            }
            other => panic!("unexpected outcome for {args}: {other:?}"),
        }
    }
    assert!(!dirs.root().join("marker").exists());
    call(&tool, json!({"target": "ok-1"})).await.unwrap();
    assert!(dirs.root().join("marker").exists());
}

#[test]
fn bad_manifests_are_reported_precisely_and_skipped() {
    let dirs = Dirs::new();
    let bad_json = dirs.project(
        "bad_json",
        "{\n  \"name\": \"x\",\n  \"description\" \"y\"\n}",
    );
    let no_command = dirs.project(
        "no_command",
        "{\n  \"name\": \"x\",\n  \"description\": \"y\",\n  \"input\": {}\n}",
    );
    let bad_name = dirs.project("bad_name", &manifest("1st tool", json!("true"), json!({})));
    let bad_schema = dirs.project(
        "bad_schema",
        &serde_json::to_string(&json!({
            "name": "schema",
            "description": "y",
            "input": {"type": "object", "properties": {"n": {"type": "integr"}}},
            "command": "true",
        }))
        .unwrap(),
    );
    let bad_command = dirs.project("bad_command", &manifest("cmd", json!([]), json!({})));
    let bad_cwd = dirs.project(
        "bad_cwd",
        &manifest("cwd", json!("true"), json!({"cwd": "../x"})),
    );
    let unknown = dirs.project(
        "unknown",
        &manifest("unk", json!("true"), json!({"timout": 5})),
    );
    dirs.project("good", &manifest("good", json!("true"), json!({})));
    std::fs::write(
        dirs.root().join(".tackle/tools/notes.txt"),
        "not a manifest",
    )
    .unwrap();

    let catalog = dirs.discover();
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    let problem = |path: &Path| {
        catalog
            .warnings
            .iter()
            .find(|w| w.path == path)
            .map(|w| w.problem.clone())
            .unwrap_or_else(|| panic!("no warning for {}", path.display()))
    };
    assert_eq!(
        problem(&bad_json),
        "not valid JSON: expected `:` (line 3, column 17)"
    );
    assert_eq!(
        problem(&no_command),
        "missing field `command` (line 5, column 1)"
    );
    assert!(
        problem(&bad_name)
            .starts_with("invalid `name` \"1st tool\": a tool name starts with a letter"),
        "{}",
        problem(&bad_name)
    );
    let schema = problem(&bad_schema);
    assert!(
        schema.starts_with("invalid `input`: invalid input schema: at /properties/n/type"),
        "{schema}"
    );
    assert!(problem(&bad_command).starts_with("invalid `command`"));
    assert!(problem(&bad_cwd).starts_with("invalid `cwd` \"../x\""));
    assert!(
        problem(&unknown).starts_with("unknown field `timout`"),
        "{}",
        problem(&unknown)
    );
    assert_eq!(catalog.warnings.len(), 7, "{:?}", catalog.warnings);
    let shown = catalog.warnings[0].to_string();
    assert!(shown.starts_with(&catalog.warnings[0].path.display().to_string()));
}

#[test]
fn project_manifests_shadow_user_manifests() {
    let dirs = Dirs::new();
    dirs.user("a", &manifest("same", json!("echo user"), json!({})));
    let project = dirs.project("b", &manifest("same", json!("echo project"), json!({})));
    dirs.project("c", &manifest("same", json!("echo again"), json!({})));
    let catalog = dirs.discover();
    assert_eq!(catalog.tools.len(), 1);
    assert_eq!(catalog.tools[0].path, project);
    assert_eq!(catalog.tools[0].source, CustomSource::Project);
    // Only the repeated project name is reported; the shadowed user manifest is not.
    assert_eq!(catalog.warnings.len(), 1, "{:?}", catalog.warnings);
    assert!(catalog.warnings[0].problem.contains("already used by"));
}

#[tokio::test]
async fn project_manifests_ask_trust_once_per_manifest_hash() {
    let dirs = Dirs::new();
    let path = dirs.project("trusty", &manifest("trusty", json!("echo ok"), json!({})));
    let (gate, recorder) = recording_gate();
    let tool = dirs.tool("trusty", gate.clone());
    let hash = blake3::hash(&std::fs::read(&path).unwrap())
        .to_hex()
        .to_string();
    let pattern = format!("{}@{hash}", path.display());

    call(&tool, json!({})).await.unwrap();
    call(&tool, json!({})).await.unwrap();
    assert_eq!(recorder.asked(TRUST_PERMISSION), [vec![pattern.clone()]]);
    let request = recorder
        .requests
        .lock()
        .unwrap()
        .iter()
        .find(|r| r.permission == TRUST_PERMISSION)
        .cloned()
        .unwrap();
    assert_eq!(request.always, std::slice::from_ref(&pattern));
    // Every call asks the tool's own permission on `*`.
    assert_eq!(
        recorder.asked("trusty"),
        [vec!["*".to_owned()], vec!["*".to_owned()]]
    );

    // An edited manifest has a new hash and is asked about again.
    dirs.project(
        "trusty",
        &manifest("trusty", json!("echo changed"), json!({})),
    );
    let tool = dirs.tool("trusty", gate);
    let (structured, _) = call(&tool, json!({})).await.unwrap();
    assert_eq!(structured, json!("changed\n"));
    let asked = recorder.asked(TRUST_PERMISSION);
    assert_eq!(asked.len(), 2);
    assert_ne!(asked[1], [pattern]);
    assert!(asked[1][0].starts_with(&format!("{}@", path.display())));
}

#[tokio::test]
async fn user_manifests_are_not_asked_for_trust() {
    let dirs = Dirs::new();
    dirs.user("mine", &manifest("mine", json!("echo ok"), json!({})));
    let (gate, recorder) = recording_gate();
    call(&dirs.tool("mine", gate), json!({})).await.unwrap();
    assert!(recorder.asked(TRUST_PERMISSION).is_empty());
    assert_eq!(recorder.asked("mine"), [vec!["*".to_owned()]]);
}

#[tokio::test]
async fn trust_all_skips_the_trust_question() {
    let dirs = Dirs::new();
    dirs.project("proj", &manifest("proj", json!("echo ok"), json!({})));
    let (gate, recorder) = recording_gate();
    let env = ToolEnv::new(LocationFs::new(dirs.root()).unwrap()).with_gate(gate);
    let tools = custom_tools(&env, &dirs.discover(), TrustMode::TrustAll);
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].0, "proj");
    call(&tools[0].1, json!({})).await.unwrap();
    assert!(recorder.asked(TRUST_PERMISSION).is_empty());
}

#[test]
fn custom_manifest_providers_reach_the_tool_definition() {
    let dirs = Dirs::new();
    dirs.user(
        "picky",
        &manifest("picky", json!("true"), json!({"providers": ["anthropic"]})),
    );
    dirs.user("open", &manifest("open", json!("true"), json!({})));
    let picky = dirs.tool("picky", recording_gate().0);
    assert!(picky.definition().serves_provider(Some("anthropic")));
    assert!(!picky.definition().serves_provider(Some("openai")));
    assert!(picky.definition().serves_provider(None));
    let open = dirs.tool("open", recording_gate().0);
    assert_eq!(open.definition().providers, None);
    assert!(open.definition().serves_provider(Some("openai")));
}

#[test]
fn bad_custom_manifest_providers_are_reported_precisely() {
    let dirs = Dirs::new();
    let not_array = dirs.project(
        "a",
        &manifest("a", json!("true"), json!({"providers": "openai"})),
    );
    let empty = dirs.project("b", &manifest("b", json!("true"), json!({"providers": []})));
    let not_string = dirs.project(
        "c",
        &manifest("c", json!("true"), json!({"providers": ["openai", 7]})),
    );
    let catalog = dirs.discover();
    assert!(catalog.tools.is_empty(), "{:?}", catalog.tools);
    let problem = |path: &Path| {
        catalog
            .warnings
            .iter()
            .find(|w| w.path == path)
            .map(|w| w.problem.clone())
            .unwrap_or_else(|| panic!("no warning for {}", path.display()))
    };
    assert_eq!(
        problem(&not_array),
        "invalid `providers`: expected a non-empty array of provider names such as \
         [\"openai\"], got \"openai\""
    );
    assert!(
        problem(&empty).ends_with("got []; leave it out to serve every provider"),
        "{}",
        problem(&empty)
    );
    assert_eq!(
        problem(&not_string),
        "invalid `providers[1]`: expected a non-empty provider name, got 7"
    );
}
