//! A plugin host: loads plugins into a `Host`, each in a scope of its own, and unloads one.
//!
//! Two plugins: `wordcount` adds a tool and a skill; `audit` adds a hook that notes every call
//! for the host. After `audit` is unloaded, calls carry no notes; after `wordcount` is unloaded,
//! the next turn no longer offers its tool or skill.
//!
//! Run it: `cargo run -p tackle-host --example plugin_host`.

use futures_util::future::BoxFuture;
use serde_json::json;
use tackle_core::{CallIdentity, CancellationToken, Context, Settlement, Tool, ToolCall};
use tackle_host::{Approvals, Hook, HostBuilder, Plugin, PluginScope, TurnSpec};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Words {
    /// The text to count words in.
    text: String,
}

struct WordCount;

impl Plugin for WordCount {
    fn name(&self) -> &str {
        "wordcount"
    }

    fn install(&self, scope: &mut PluginScope<'_>) -> Result<(), String> {
        let count = Tool::new(
            "Count the words of a text.",
            |input: Words, _cx: Context| async move {
                Ok::<_, tackle_core::ToolFailure>(input.text.split_whitespace().count())
            },
        );
        scope.tool("wordcount", count.erase()).skill(
            "concise-writing",
            "Use when a text must stay under a word budget.",
            "Count with `wordcount`, then cut the longest sentence first.",
            std::env::temp_dir(),
        );
        Ok(())
    }
}

struct Audit;

struct Note;

impl Hook for Note {
    fn after<'a>(
        &'a self,
        cx: &'a Context,
        settlement: &'a Settlement,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            Some(format!(
                "{} called `{}`: {}",
                cx.agent(),
                settlement.tool,
                settlement.outcome.kind().as_str()
            ))
        })
    }
}

impl Plugin for Audit {
    fn name(&self) -> &str {
        "audit"
    }

    fn install(&self, scope: &mut PluginScope<'_>) -> Result<(), String> {
        scope.hook("audit", Note);
        Ok(())
    }
}

fn cx(call: &str) -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m", call),
        CancellationToken::new(),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let data = tempfile::tempdir()?;
    let host = HostBuilder::new(root.path())
        .data_dir(data.path())
        .home(None)
        .approvals(Approvals::AllowOnce)
        .plugin(WordCount)
        .plugin(Audit)
        .build()?;
    println!("installed: {:?}", host.plugins());

    let turn = host.turn(&TurnSpec::default())?;
    let counted = host
        .settle(
            &turn,
            cx("c1"),
            ToolCall::new("wordcount", json!({"text": "three small words"})),
        )
        .await;
    println!(
        "wordcount → {:?}, notes {:?}",
        counted.model_result().map(|r| r.structured),
        counted.annotations
    );
    assert_eq!(
        counted.annotations,
        ["audit: build called `wordcount`: success"]
    );
    assert!(
        turn.get("skill")
            .is_some_and(|s| s.definition().description.contains("concise-writing"))
    );

    host.uninstall("audit");
    let quiet = host
        .settle(
            &turn,
            cx("c2"),
            ToolCall::new("wordcount", json!({"text": "two words"})),
        )
        .await;
    println!("after unloading audit, notes {:?}", quiet.annotations);
    assert!(quiet.annotations.is_empty());

    host.uninstall("wordcount");
    let next = host.turn(&TurnSpec::default())?;
    println!(
        "after unloading wordcount: wordcount offered: {}, skill offered: {}",
        next.get("wordcount").is_some(),
        next.get("skill").is_some()
    );
    assert!(next.get("wordcount").is_none() && next.get("skill").is_none());
    Ok(())
}
