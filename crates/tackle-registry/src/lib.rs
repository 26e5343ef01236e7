//! Scoped tool registrations, provider turns, and the settlement engine.
//!
//! tackle registers tools in *placements*. There is one process placement, and one per
//! [`Location`] (an opened workspace root). Both expose the same [`ToolRegistry::register`],
//! which takes a record of names to tools and returns a [`Registration`] guard. The guard is the
//! scope: dropping it removes exactly that record's contributions, and if it held the winning
//! registration of a name, the next-latest active one wins again. A Location's registrations
//! outrank the process's.
//!
//! The key decision of this crate is that *a turn captures identities, not handlers*.
//! [`Location::materialize`] records, for each advertised name, the definition and the
//! [`RegistrationId`] that was effective when the provider saw it. [`Turn::settle`] looks the
//! name up again and runs the tool only if the same registration is still effective; otherwise
//! the call is stale and nothing runs. That one comparison gives the stale-rejection law its
//! teeth, and because the handler is captured only after it, a registration dropped mid-call
//! cannot disturb the call already running.
//!
//! Reads are lock-free: each placement publishes an immutable snapshot through `arc-swap`, so
//! registration churn never blocks settlement. Writers copy the small name map and swap it in.
//!
//! Settlement is one pipeline: the registry resolves the name against the turn, then core's
//! kernel (`tackle_core::Settle`) decodes, executes, encodes, projects, bounds the model-facing
//! output once and records the settlement in the journal. The registry cannot run an executor
//! any other way. It does no IO of its own: the output store and the journal are ports handed in
//! through [`SettlementConfig`].
//!
//! ```text
//!             ToolRegistry (process)          ToolRegistry (Location)
//!                     \                        /
//!                      Location::materialize(filter) -> Turn
//!                                                        |
//!                      Turn::settle(cx, call) -> Settlement
//! ```

#![deny(missing_docs)]

mod batch;
mod layer;
mod location;
mod name;
mod placement;
mod settle;
mod suggest;
mod turn;

pub use batch::{BatchCallResult, BatchOptions, BatchOutput, MAX_BATCH_CALLS, batch_tool};
pub use layer::{CallDraft, Layer, Layers};
pub use location::Location;
pub use placement::{Registration, RegistrationError, RegistryChanges, ToolRegistry, ToolSet};
pub use turn::{AdvertisedTool, AllTools, Turn, TurnFilter};

// Settlement's vocabulary lives in core, next to the kernel that produces it; re-exported so a
// host needs only this crate to settle.
pub use tackle_core::{
    Defect, Interruption, ModelError, ModelErrorKind, ModelResult, Outcome, RegistrationId,
    Settlement, SettlementConfig, SubCallReport, ToolCall,
};
