//! Prints the average duration of each settlement phase for the echo tool of the `settle`
//! benchmark. Run: `cargo run --release -p tackle-registry --example settle_breakdown`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tackle_core::{CallIdentity, CancellationToken, Context, Tool};
use tackle_registry::{AllTools, Location, SettlementConfig, ToolCall, ToolRegistry, ToolSet};
use tackle_store::MemoryOutputStore;

#[path = "../benches/support/mod.rs"]
mod support;
use support::{ARGUMENTS, DiscardJournal, echo};

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let process = ToolRegistry::new();
    let config =
        SettlementConfig::new(Arc::new(MemoryOutputStore::new()), Arc::new(DiscardJournal));
    let location = Location::new("/ws", &process, config);
    let tool = Tool::new("Echo.", |input, _cx| echo(input));
    let _reg = location
        .register(ToolSet::new().with("echo", tool))
        .unwrap();
    let turn = location.materialize(AllTools);
    let cx = Context::new(
        CallIdentity::new("s", "a", "m", "c"),
        CancellationToken::new(),
    );
    let n = 200_000u32;
    runtime.block_on(async {
        let mut sum = [Duration::ZERO; 6];
        let started = Instant::now();
        for _ in 0..n {
            let s = turn
                .settle(cx.clone(), ToolCall::new("echo", ARGUMENTS))
                .await;
            let t = s.timings;
            for (slot, d) in sum
                .iter_mut()
                .zip([t.resolve, t.decode, t.execute, t.encode, t.project, t.bound])
            {
                *slot += d;
            }
        }
        let total = started.elapsed() / n;
        let names = ["resolve", "decode", "execute", "encode", "project", "bound"];
        for (name, d) in names.iter().zip(sum) {
            println!("{name:>8}: {:>6} ns", (d / n).as_nanos());
        }
        println!("   total: {:>6} ns per settle", total.as_nanos());
    });
}
