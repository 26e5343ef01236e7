//! Plugins with scoped lifetimes: two plugins install tools, hooks and skills; uninstalling one
//! while a call of its tool is in flight lets that call finish, makes old turns stale for its
//! names, removes its hook and skill, and leaves the other plugin whole.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tackle_core::{CallIdentity, CancellationToken, Context, Outcome, Settlement, Tool, ToolCall};
use tackle_host::{Approvals, Hook, HostBuilder, Plugin, PluginScope, TurnSpec};
use tackle_registry::ModelErrorKind;
use tokio::sync::Notify;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

/// Plugin `slow`: a tool that waits for a signal, a hook that notes every call, a skill.
struct Slow {
    release: Arc<Notify>,
    started: Arc<Notify>,
}

/// Notes the tool of every settled call.
struct Noting(&'static str);

impl Hook for Noting {
    fn after<'a>(
        &'a self,
        _cx: &'a Context,
        settlement: &'a Settlement,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move { Some(format!("{} saw {}", self.0, settlement.tool)) })
    }
}

/// Upper-cases every `text` argument of `shout`.
struct Upper;

impl Hook for Upper {
    fn before<'a>(
        &'a self,
        _cx: &'a Context,
        tool: &'a str,
        arguments: &'a mut Map<String, Value>,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if tool == "shout"
                && let Some(Value::String(text)) = arguments.get_mut("text")
            {
                *text = text.to_uppercase();
            }
            Ok(())
        })
    }
}

impl Plugin for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn install(&self, scope: &mut PluginScope<'_>) -> Result<(), String> {
        let (release, started) = (self.release.clone(), self.started.clone());
        let tool = Tool::new("Waits, then answers.", move |input: Text, _cx: Context| {
            let (release, started) = (release.clone(), started.clone());
            async move {
                started.notify_one();
                release.notified().await;
                Ok::<_, tackle_core::ToolFailure>(format!("slow: {}", input.text))
            }
        });
        scope
            .tool("slow_echo", tool.erase())
            .hook("slow-notes", Noting("slow"))
            .skill("slow-skill", "How to wait well.", "Wait.", "/nonexistent");
        Ok(())
    }
}

/// Plugin `loud`: a tool and a hook that rewrites its argument.
struct Loud;

impl Plugin for Loud {
    fn name(&self) -> &str {
        "loud"
    }

    fn install(&self, scope: &mut PluginScope<'_>) -> Result<(), String> {
        let tool = Tool::new("Says it.", |input: Text, _cx: Context| async move {
            Ok::<_, tackle_core::ToolFailure>(input.text)
        });
        scope.tool("shout", tool.erase()).hook("upper", Upper);
        Ok(())
    }
}

fn cx(call: &str) -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m", call),
        CancellationToken::new(),
    )
}

fn success_text(settlement: &Settlement) -> String {
    let Outcome::Success(output) = &settlement.outcome else {
        panic!("{}: {:?}", settlement.tool, settlement.outcome);
    };
    output
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn uninstalling_a_plugin_mid_call_removes_exactly_its_tools_hooks_and_skills() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let release = Arc::new(Notify::new());
    let started = Arc::new(Notify::new());
    let host = HostBuilder::new(root.path())
        .data_dir(data.path())
        .home(None)
        .approvals(Approvals::AllowOnce)
        .plugin(Slow {
            release: release.clone(),
            started: started.clone(),
        })
        .plugin(Loud)
        .build()
        .unwrap();
    assert_eq!(host.plugins(), ["slow", "loud"]);
    let host = Arc::new(host);
    let turn = host.turn(&TurnSpec::default()).unwrap();
    for name in ["slow_echo", "shout", "skill", "read"] {
        assert!(turn.get(name).is_some(), "{name} is offered");
    }
    assert!(
        turn.get("skill")
            .unwrap()
            .definition()
            .description
            .contains("slow-skill")
    );

    // Both plugins' hooks run, in install order; `upper` rewrites and is journaled.
    let shout = host
        .settle(
            &turn,
            cx("c1"),
            ToolCall::new("shout", json!({"text": "hi"})),
        )
        .await;
    assert_eq!(success_text(&shout), "HI");
    assert_eq!(shout.adjustments, ["hook `upper` rewrote the arguments"]);
    assert_eq!(shout.annotations, ["slow-notes: slow saw shout"]);

    // A call of the slow plugin's tool is running when the plugin leaves.
    let running = {
        let (host, turn) = (host.clone(), turn.clone());
        tokio::spawn(async move {
            host.settle(
                &turn,
                cx("c2"),
                ToolCall::new("slow_echo", json!({"text": "x"})),
            )
            .await
        })
    };
    started.notified().await;
    assert!(host.uninstall("slow"));
    assert!(!host.uninstall("slow"));
    assert_eq!(host.plugins(), ["loud"]);
    release.notify_one();
    let finished = running.await.unwrap();
    assert_eq!(success_text(&finished), "slow: x");

    // The old turn's calls of the plugin's names are stale; nothing runs.
    for name in ["slow_echo", "skill"] {
        let stale = host
            .settle(
                &turn,
                cx("c3"),
                ToolCall::new(name, json!({"text": "x", "name": "slow-skill"})),
            )
            .await;
        let Outcome::Error(error) = &stale.outcome else {
            panic!("{name}: {:?}", stale.outcome);
        };
        assert_eq!(error.kind, ModelErrorKind::Stale, "{name}");
    }
    // A new turn has the other plugin and the built-ins, and no trace of the first.
    let fresh = host.turn(&TurnSpec::default()).unwrap();
    assert!(fresh.get("slow_echo").is_none());
    assert!(fresh.get("skill").is_none(), "no skills are left to offer");
    assert!(fresh.get("shout").is_some() && fresh.get("read").is_some());
    let shout = host
        .settle(
            &fresh,
            cx("c4"),
            ToolCall::new("shout", json!({"text": "again"})),
        )
        .await;
    assert_eq!(success_text(&shout), "AGAIN");
    assert!(
        shout.annotations.is_empty(),
        "the slow plugin's hook left with it"
    );
}

#[tokio::test]
async fn a_plugin_that_fails_to_install_leaves_nothing_behind() {
    struct Broken;
    impl Plugin for Broken {
        fn name(&self) -> &str {
            "broken"
        }
        fn install(&self, scope: &mut PluginScope<'_>) -> Result<(), String> {
            scope.hook("never", Upper);
            Err("its configuration is missing".to_owned())
        }
    }
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let host = HostBuilder::new(root.path())
        .data_dir(data.path())
        .home(None)
        .build()
        .unwrap();
    let error = host.install(Broken).unwrap_err();
    assert_eq!(
        error.to_string(),
        "plugin `broken` failed to install: its configuration is missing"
    );
    assert!(host.hooks().names().is_empty());
    assert!(host.plugins().is_empty());
    host.install(Loud).unwrap();
    assert!(matches!(
        host.install(Loud),
        Err(tackle_host::HostError::Plugin { .. })
    ));
}
