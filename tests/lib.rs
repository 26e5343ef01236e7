//! Test support for the integration tests: a harness wiring a process registry, Locations, an
//! in-memory store and journal, plus a few small tools with observable behaviour.
//!
//! The root package exists to own `tests/` and the README doctest; it ships nothing.

/// The README's embedding example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
pub mod readme {}

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{CallIdentity, CancellationToken, Context, Tool, ToolFailure};
use tackle_registry::{Location, SettlementConfig, ToolRegistry};
use tackle_store::{MemoryJournal, MemoryOutputStore};

/// A process registry, the in-memory ports, and helpers to open Locations over them.
pub struct Harness {
    /// The process placement shared by every Location of this harness.
    pub process: ToolRegistry,
    /// Where oversized outputs are retained.
    pub store: Arc<MemoryOutputStore>,
    /// Where settlements are recorded.
    pub journal: Arc<MemoryJournal>,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// A harness with empty registries and ports.
    pub fn new() -> Self {
        Self {
            process: ToolRegistry::new(),
            store: Arc::new(MemoryOutputStore::new()),
            journal: Arc::new(MemoryJournal::new()),
        }
    }

    /// The settlement configuration every Location of this harness uses.
    pub fn config(&self) -> SettlementConfig {
        SettlementConfig::new(self.store.clone(), self.journal.clone())
    }

    /// Opens a Location at `root` over the harness's process registry.
    pub fn location(&self, root: &str) -> Location {
        Location::new(root, &self.process, self.config())
    }
}

/// A context for call `call` with fixed session, agent and message IDs.
pub fn cx(call: &str) -> Context {
    Context::new(
        CallIdentity::new("session-1", "build", "message-1", call),
        CancellationToken::new(),
    )
}

/// Input of the test tools.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct EchoInput {
    /// Echoed back.
    pub text: String,
    /// How many times.
    #[serde(default = "one")]
    pub repeat: u32,
}

fn one() -> u32 {
    1
}

/// Output of the tagged tool: which tool instance answered, and the echoed text.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct Tagged {
    /// The instance tag given at construction.
    pub tag: String,
    /// The input text repeated.
    pub text: String,
}

/// A tool that answers with its own `tag`, so tests can tell which registration ran, and counts
/// its invocations.
pub fn tagged(tag: &str) -> (Tool<EchoInput, Tagged>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let tag = tag.to_owned();
    let tool = Tool::new(
        format!("Echo, answered by {tag}."),
        move |input: EchoInput, _cx| {
            counter.fetch_add(1, Ordering::SeqCst);
            let tag = tag.clone();
            async move {
                Ok::<_, ToolFailure>(Tagged {
                    tag,
                    text: input.text.repeat(input.repeat as usize),
                })
            }
        },
    );
    (tool, calls)
}
