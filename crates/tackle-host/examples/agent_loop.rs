//! A real agent loop over a `Host`, driven by a scripted model: each turn the host materializes
//! the tools, the "model" answers with tool calls exactly as a provider would send them, and the
//! loop settles them and prints what the model sees next.
//!
//! The script exercises the host's policy: a mis-cased tool name, arguments named the way other
//! tool sets name them, the same call three times in a row (the doom-loop check asks, and nobody
//! is there to answer: a read runs and says it repeated itself, a change is refused), and a call
//! from an outdated turn after a plugin left.
//!
//! Run it: `cargo run -p tackle-host --example agent_loop`. It exits non-zero if the host does
//! not behave as the script expects, so CI runs it as a check.

use serde_json::{Value, json};
use tackle_core::{CallIdentity, CancellationToken, Context, Outcome, Tool, ToolCall};
use tackle_host::{Approvals, HostBuilder, Plugin, PluginScope, TurnSpec};
use tackle_registry::Turn;

/// One call as a provider sends it: a name and the arguments' JSON text.
struct ScriptedCall {
    name: &'static str,
    arguments: Value,
    /// The outcome the host must settle it with.
    expect: &'static str,
}

/// A plugin with one tool, uninstalled mid-conversation.
struct Clock;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoInput {}

impl Plugin for Clock {
    fn name(&self) -> &str {
        "clock"
    }

    fn install(&self, scope: &mut PluginScope<'_>) -> Result<(), String> {
        let now = Tool::new(
            "The time, in whole seconds.",
            |_: NoInput, _cx: Context| async {
                Ok::<_, tackle_core::ToolFailure>("12:00:00".to_owned())
            },
        );
        scope.tool("now", now.erase());
        Ok(())
    }
}

fn call(name: &'static str, arguments: Value, expect: &'static str) -> ScriptedCall {
    ScriptedCall {
        name,
        arguments,
        expect,
    }
}

/// Settles one turn's calls in order and prints what the model would read.
async fn run_turn(host: &tackle_host::Host, turn: &Turn, number: usize, calls: Vec<ScriptedCall>) {
    println!("── turn {number}: {} tools offered", turn.tools().len());
    for (index, scripted) in calls.into_iter().enumerate() {
        let identity = CallIdentity::new(
            "session-1",
            "build",
            format!("msg-{number}"),
            format!("call-{number}-{index}"),
        );
        let cx = Context::new(identity, CancellationToken::new());
        let settlement = host
            .settle(
                turn,
                cx,
                ToolCall::new(scripted.name, scripted.arguments.to_string()),
            )
            .await;
        let kind = settlement.outcome.kind().as_str();
        println!("model → {}({})", scripted.name, scripted.arguments);
        for adjustment in &settlement.adjustments {
            println!("  host: {adjustment}");
        }
        let seen = match settlement.model_result() {
            Some(result) => result
                .content
                .iter()
                .filter_map(|c| c.as_text())
                .collect::<Vec<_>>()
                .join("\n"),
            None => format!("(nothing: {:?})", settlement.outcome),
        };
        for line in seen.lines().take(4) {
            println!("  model sees: {line}");
        }
        println!("  outcome: {kind}");
        if kind != scripted.expect {
            eprintln!("expected `{}`, got `{kind}`", scripted.expect);
            std::process::exit(1);
        }
        if let Outcome::Defect(defect) = &settlement.outcome {
            eprintln!("defect: {defect}");
            std::process::exit(1);
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let data = tempfile::tempdir()?;
    std::fs::write(root.path().join("notes.txt"), "todo: write the loop\n")?;
    let host = HostBuilder::new(root.path())
        .data_dir(data.path())
        .home(None)
        .approvals(Approvals::NoOneToAsk {
            reason: "this example runs unattended".to_owned(),
            remedy: None,
        })
        .plugin(Clock)
        .build()?;

    let spec = TurnSpec::agent("build");
    let turn = host.turn(&spec)?;
    run_turn(
        &host,
        &turn,
        1,
        vec![
            // A model trained on another tool set: `Read` and `file_path`.
            call("Read", json!({"file_path": "notes.txt"}), "success"),
            call(
                "edit",
                json!({"file_path": "notes.txt", "old_string": "todo", "new_string": "done"}),
                "success",
            ),
            call("now", json!({}), "success"),
        ],
    )
    .await;

    // The clock plugin leaves; the model still holds turn 1's tools.
    host.uninstall("clock");
    run_turn(&host, &turn, 2, vec![call("now", json!({}), "stale")]).await;

    let turn = host.turn(&spec)?;
    run_turn(
        &host,
        &turn,
        3,
        vec![
            call("grep", json!({"pattern": "done"}), "success"),
            call("grep", json!({"pattern": "done"}), "success"),
            // The third identical call in a row asks `doom_loop`; nobody can answer here, and
            // `grep` only reads, so it runs and the model is told it repeated itself.
            call("grep", json!({"pattern": "done"}), "success"),
            call(
                "todowrite",
                json!({"todos": [{"content": "ship", "status": "pending", "priority": "low"}]}),
                "success",
            ),
            call(
                "todowrite",
                json!({"todos": [{"content": "ship", "status": "pending", "priority": "low"}]}),
                "success",
            ),
            // A repeated call that changes something is refused instead.
            call(
                "todowrite",
                json!({"todos": [{"content": "ship", "status": "pending", "priority": "low"}]}),
                "refused",
            ),
            call("read", json!({"filePath": "notes.txt"}), "success"),
        ],
    )
    .await;
    Ok(())
}
