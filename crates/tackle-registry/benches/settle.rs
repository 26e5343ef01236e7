//! Settlement overhead: the same echo tool called directly and through materialize-once,
//! settle-many; plus materializing a turn of 50 tools.
//!
//! Run: `cargo bench -p tackle-registry --bench settle`. Compare `settle/echo` with
//! `direct/echo_value` in the same run: the target is at most 2× (issue 28). `direct/echo_value`
//! encodes to a JSON value instead of text, as settlement must; `direct/echo` is shown too.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use tackle_core::{CallIdentity, CancellationToken, Context, Tool};
use tackle_registry::{AllTools, Location, SettlementConfig, ToolCall, ToolRegistry, ToolSet};
use tackle_store::MemoryOutputStore;

mod support;
use support::{ARGUMENTS, DiscardJournal, Echo, echo};

fn context() -> Context {
    Context::new(
        CallIdentity::new("session-1", "build", "message-1", "call-1"),
        CancellationToken::new(),
    )
}

fn open_location(process: &ToolRegistry) -> Location {
    let config =
        SettlementConfig::new(Arc::new(MemoryOutputStore::new()), Arc::new(DiscardJournal));
    Location::new("/workspace", process, config)
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");

    c.bench_function("direct/echo", |b| {
        b.to_async(&runtime).iter(|| async {
            let input: Echo = serde_json::from_str(std::hint::black_box(ARGUMENTS)).unwrap();
            let output = echo(input).await.unwrap();
            serde_json::to_string(&output).unwrap()
        })
    });

    // The same, encoding to a JSON value as settlement must (the projection takes one), for
    // reading the ratio.
    c.bench_function("direct/echo_value", |b| {
        b.to_async(&runtime).iter(|| async {
            let input: Echo = serde_json::from_str(std::hint::black_box(ARGUMENTS)).unwrap();
            let output = echo(input).await.unwrap();
            serde_json::to_value(&output).unwrap()
        })
    });

    let process = ToolRegistry::new();
    let location = open_location(&process);
    let _registration = location
        .register(ToolSet::new().with(
            "echo",
            Tool::new("Echo the input back.", |input, _cx| echo(input)),
        ))
        .expect("valid name");
    let turn = location.materialize(AllTools);
    let cx = context();
    c.bench_function("settle/echo", |b| {
        b.to_async(&runtime).iter(|| {
            let call = ToolCall::new("echo", std::hint::black_box(ARGUMENTS));
            turn.settle(cx.clone(), call)
        })
    });

    let process = ToolRegistry::new();
    let many = open_location(&process);
    let tools: ToolSet = (0..50)
        .map(|i| {
            (
                format!("tool_{i}"),
                Tool::new(format!("Tool number {i}."), |input, _cx| echo(input)),
            )
        })
        .collect();
    let _many_registration = many.register(tools).expect("valid names");
    c.bench_function("materialize/50_tools", |b| {
        b.iter(|| many.materialize(AllTools))
    });
}

criterion_group!(settle, benches);
criterion_main!(settle);
