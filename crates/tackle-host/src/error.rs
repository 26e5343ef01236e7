//! What can go wrong while assembling a host, typed so an embedder can match on it.

use std::path::PathBuf;

use crate::config::Problems;

/// Why a host could not be built, or a turn not made.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The Location root does not exist or cannot be opened.
    #[error("cannot open the root {path}: {source}")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The data directory cannot be created.
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No data directory was given and none is known for this platform.
    #[error("no data directory is known; pass one or set TACKLE_DATA_DIR")]
    NoDataDir,
    /// A store (managed outputs, the journal, session state, saved approvals) cannot be opened.
    #[error("cannot open the {store}: {source}")]
    Store {
        /// Which store.
        store: &'static str,
        /// The store's own typed error (`tackle_store::OpenError`, `SavedApprovalsError`, …),
        /// to downcast when a host needs to match on it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The configuration files are invalid; every problem is listed.
    #[error("invalid configuration:\n{0}")]
    Config(#[from] Problems),
    /// A turn or a call named an agent that is neither a preset nor configured.
    #[error("unknown agent `{name}`; choose one of: {known}")]
    UnknownAgent {
        /// The name asked for.
        name: String,
        /// The known agents, comma-separated.
        known: String,
    },
    /// Registering tools failed (a clash or an invalid name).
    #[error("cannot register {what}: {source}")]
    Registration {
        /// What was being registered.
        what: String,
        /// Why.
        source: tackle_registry::RegistrationError,
    },
    /// A plugin's install failed; nothing of it was registered.
    #[error("plugin `{plugin}` failed to install: {message}")]
    Plugin {
        /// The plugin's name.
        plugin: String,
        /// Why.
        message: String,
    },
    /// A snapshot, the change log or an undo failed, or there was nothing to undo.
    #[error("{0}")]
    Snapshot(String),
}

impl HostError {
    /// A `map_err` adapter: the store named `store` failed to open with `error`.
    pub(crate) fn store<E>(store: &'static str) -> impl FnOnce(E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        move |error| HostError::Store {
            store,
            source: Box::new(error),
        }
    }
}
