//! Host policy as layers around settlement, each one concern in its own module, run in this
//! order for every call a host's turn settles (sub-calls included):
//!
//! 1. [`repair`]: a tool name in the wrong case settles as the one name it matches.
//! 2. [`aliases`]: argument names from other tool sets (`file_path`) become the tool's own
//!    (`filePath`).
//! 3. [`doom`]: the third identical call in a row asks `doom_loop` before it runs.
//! 4. [`hooks`]: the configuration's command hooks ([`command`]), then the host's and plugins'
//!    before and after hooks, in registration order.
//! 5. [`outputs`]: after a call, the managed outputs its result named are recorded as its
//!    session's.
//!
//! The provider-dialect restore (OpenAI strict mode's `null` for absent fields) runs inside
//! settlement, because the turn knows its dialect. Every change a layer makes is journaled as an
//! adjustment of the call.

pub(crate) mod aliases;
pub(crate) mod command;
pub(crate) mod doom;
pub(crate) mod hooks;
pub(crate) mod outputs;
pub(crate) mod repair;
pub(crate) mod snapshot;

use std::sync::Arc;

use tackle_builtins::Gate;
use tackle_core::SessionState;
use tackle_registry::{Layer, Layers};

use crate::warnings::Warnings;

pub use hooks::{Hook, HookGuard, Hooks};

/// The host's layers, in order.
pub(crate) fn layers(
    gate: Gate,
    state: Arc<dyn SessionState>,
    hooks: Hooks,
    snapshot: Option<Arc<snapshot::SnapshotLayer>>,
    warnings: Warnings,
) -> Layers {
    let mut layers: Vec<Arc<dyn Layer>> = vec![
        Arc::new(repair::NameRepair),
        Arc::new(aliases::ArgumentAliases),
        Arc::new(doom::DoomLoopCheck::new(
            gate,
            state.clone(),
            warnings.clone(),
        )),
        Arc::new(hooks),
        Arc::new(outputs::OutputOwnership::new(state, warnings)),
    ];
    // Last before the call: the name is the tool's, and a refused call takes no snapshot.
    if let Some(snapshot) = snapshot {
        layers.push(snapshot);
    }
    layers.into()
}
