//! A language-server client for tackle's file tools and its `lsp` tool.
//!
//! A coding agent that changes a file should hear at once what the change broke, the way an
//! editor shows it. This crate runs the project's language servers for that: an [`LspManager`]
//! per Location starts a server the first time a file of its language is touched, with the
//! nearest project root (the directory holding `Cargo.toml`, `pyproject.toml`…), shares it with
//! every session of the Location, starts it again (with backoff) after a crash, and shuts it
//! down with the host: `shutdown`, `exit`, then a kill of its process group.
//!
//! The key decision is that nothing here may hang or fail an edit. Every wait has a deadline
//! ([`ManagerOptions`]): a server that is missing, slow or dead yields an answer that says so
//! ([`WaitStatus`]), and the tool's result goes out without its diagnostics. Documents are sent
//! whole on every change (servers accept full-text changes whatever sync they prefer), and a
//! change waits for the diagnostics of its own document version, so a report is never about an
//! older text.
//!
//! The wire is ours: a small JSON-RPC loop over tokio ([`framing`], `rpc`), with `lsp-types`
//! for the messages. This crate is the only one that knows LSP wire types; its callers get
//! [`FileDiagnostic`]s with 1-based lines and character columns, and [`query`] results with
//! Location-relative paths and line texts.

mod client;
pub mod config;
pub mod framing;
mod manager;
pub mod position;
pub mod query;
mod rpc;

use std::path::PathBuf;

pub use client::StartError;
pub use config::{
    ConfiguredServer, Origin, ServerConfig, ServerStatus, active_servers, builtin_servers,
    find_program, server_statuses,
};
pub use manager::{
    FileDiagnostic, LspManager, ManagerOptions, OtherFile, Severity, Touched, WaitStatus, Warn,
};
pub use rpc::RpcError;

/// Why a query could not be answered.
#[derive(Clone, Debug, thiserror::Error)]
pub enum LspError {
    /// No server serves the file.
    #[error("no language server is configured for {}", path.display())]
    NoServer {
        /// The file.
        path: PathBuf,
    },
    /// The server could not be started.
    #[error("the {server} language server is not available: {reason}")]
    Unavailable {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The file could not be read to open it in the server.
    #[error("{} could not be read", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
    },
    /// The request failed.
    #[error("the {server} language server failed: {error}")]
    Request {
        /// The server.
        server: String,
        /// What happened.
        error: RpcError,
    },
}
