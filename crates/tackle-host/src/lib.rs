//! The one way to assemble a working tackle tool layer.
//!
//! The other crates are parts: typed tools and settlement (`tackle-core`, `tackle-registry`),
//! permissions, stores, the built-in tools, MCP. A host needs all of them wired the same way
//! every time: the stores opened in the data directory, a permission service whose questions
//! reach a person (or say honestly that nobody could be asked), the built-ins registered with
//! the configuration's shell, limits and disabled tools, `batch` over the built-ins, custom and
//! MCP tools, per-model tool sets, and policy around every call. This crate is that wiring, so
//! the `tackle` command, `tackle serve` and an embedding agent runtime get the same tool layer:
//!
//! ```no_run
//! use tackle_host::{Approvals, HostBuilder, TurnSpec};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let host = HostBuilder::new("/path/to/repo")
//!     .approvals(Approvals::AllowOnce)
//!     .build()?;
//! let turn = host.turn(&TurnSpec::agent("build"))?; // send turn.export() to the provider
//! # Ok(()) }
//! ```
//!
//! The key decision is that **host policy is layers around settlement, carried by the turn**.
//! Name repair, argument aliases, the doom-loop check and the hooks of plugins are each one
//! [`tackle_registry::Layer`], and [`Host::turn`] attaches them to every turn it makes. A turn
//! settles its sub-calls (a `batch`'s) through the same layers, so no front end and no wrapper
//! can settle a call that skips policy, and every change a layer makes is journaled with the
//! call. See [`policy`] for the order.
//!
//! Plugins ([`Plugin`]) install into a scope of their own after the built-ins; dropping it
//! removes exactly what they registered.

#![deny(missing_docs)]

mod agents;
mod approvals;
mod code;
pub mod config;
mod error;
mod host;
mod mcp;
mod nesting;
mod plugin;
pub mod policy;
mod resources;
pub mod sandbox;
mod sweeps;
mod telemetry;
mod toolsets;
pub mod trust;
mod undo;
mod warnings;

pub use approvals::{Answer, Approvals, Asker};
pub use code::{
    FormatterStatus, code_summary, formatter_statuses, formatters_json, server_statuses,
    servers_json,
};
pub use config::{Config, Model};
pub use error::HostError;
pub use host::{
    Host, HostBuilder, JournalOpening, SHUTDOWN_GRACE, TurnSpec, default_data_dir, index_summary,
    spool_dir,
};
pub use plugin::{Plugin, PluginScope};
pub use policy::{Hook, HookGuard, Hooks};
pub use resources::{SavedOutputs, SkillPrompts};
pub use tackle_permission::names;
pub use trust::{ProjectTrust, TrustStore};
pub use undo::{HistoryEntry, UndoOutcome, UndoReport, UndoTarget};
pub use warnings::HostWarning;
