//! One running server: the process, its connection, the documents it has open and the
//! diagnostics it published.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use lsp_types::{Diagnostic, PublishDiagnosticsParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::ServerConfig;
use crate::position::{path_to_uri, uri_to_path};
use crate::rpc::{Connection, Handler, RpcError};

/// The pull-diagnostics request.
const PULL: &str = "textDocument/diagnostic";
/// `ServerCancelled`: the server asks to be asked again.
const SERVER_CANCELLED: i64 = -32802;
/// `ContentModified`: the document changed while the server worked.
const CONTENT_MODIFIED: i64 = -32801;

/// Diagnostics a server published for one file.
#[derive(Clone, Debug)]
pub(crate) struct Published {
    /// The document version they are for, when the server said.
    pub(crate) version: Option<i32>,
    /// The order of arrival across all files of this server.
    pub(crate) seq: u64,
    pub(crate) diagnostics: Vec<Diagnostic>,
}

/// What the server sends on its own, kept for waiters.
struct Inbox {
    published: Mutex<HashMap<PathBuf, Published>>,
    seq: watch::Sender<u64>,
    /// The server answers `textDocument/diagnostic` (said at initialize or registered later).
    pull: std::sync::atomic::AtomicBool,
    initialization: Option<Value>,
    root: PathBuf,
}

impl Handler for Inbox {
    fn notification(&self, method: &str, params: Value) {
        match method {
            "textDocument/publishDiagnostics" => {
                let Ok(params) = serde_json::from_value::<PublishDiagnosticsParams>(params) else {
                    return;
                };
                let Some(path) = uri_to_path(params.uri.as_str()) else {
                    return;
                };
                let mut published = self.published.lock();
                let seq = *self.seq.borrow() + 1;
                published.insert(
                    path,
                    Published {
                        version: params.version,
                        seq,
                        diagnostics: params.diagnostics,
                    },
                );
                drop(published);
                self.seq.send_replace(seq);
            }
            "window/logMessage" | "window/showMessage" => {
                let message = params.get("message").and_then(Value::as_str).unwrap_or("");
                tracing::debug!(target: "tackle_lsp::server", "{message}");
            }
            _ => {}
        }
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)> {
        match method {
            "workspace/configuration" => {
                // One answer per item: the section of the initialization options, or null.
                let items = params
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let answers = items
                    .iter()
                    .map(|item| {
                        let section = item.get("section").and_then(Value::as_str);
                        match (&self.initialization, section) {
                            (Some(options), Some(section)) => section
                                .split('.')
                                .try_fold(options, |value, key| value.get(key))
                                .cloned()
                                .unwrap_or(Value::Null),
                            (Some(options), None) => options.clone(),
                            (None, _) => Value::Null,
                        }
                    })
                    .collect();
                Ok(Value::Array(answers))
            }
            "workspace/workspaceFolders" => Ok(json!([{
                "uri": path_to_uri(&self.root),
                "name": self.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            }])),
            "client/registerCapability" => {
                let pull = params
                    .get("registrations")
                    .and_then(Value::as_array)
                    .is_some_and(|all| {
                        all.iter()
                            .any(|r| r.get("method").and_then(Value::as_str) == Some(PULL))
                    });
                if pull {
                    self.pull.store(true, std::sync::atomic::Ordering::SeqCst);
                    // Wakes waiters, which then pull instead of waiting for a push.
                    self.seq.send_modify(|n| *n += 1);
                }
                Ok(Value::Null)
            }
            "client/unregisterCapability"
            | "window/workDoneProgress/create"
            | "window/showMessageRequest"
            | "workspace/diagnostic/refresh"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/codeLens/refresh" => Ok(Value::Null),
            _ => Err((-32601, format!("tackle does not handle {method}"))),
        }
    }
}

/// A document the server has open.
struct Document {
    version: i32,
    /// Whether a change already waited for the server's first report on it.
    awaited: bool,
}

/// A started, initialized server.
pub(crate) struct Client {
    connection: Connection,
    inbox: Arc<Inbox>,
    documents: Mutex<HashMap<PathBuf, Document>>,
    /// One change-and-wait at a time per server, so waits see their own versions.
    pub(crate) sync: tokio::sync::Mutex<()>,
    process_group: Option<i32>,
    child: Mutex<Option<tokio::process::Child>>,
}

/// Why a server could not start.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StartError {
    /// The program could not be run.
    #[error("`{program}` could not be started: {reason}")]
    Spawn {
        /// The program.
        program: String,
        /// The operating system's reason.
        reason: String,
    },
    /// `initialize` failed or took too long.
    #[error("it did not initialize: {0}")]
    Initialize(RpcError),
}

impl Client {
    /// Starts `config` for the project at `root` and initializes it within `wait`.
    pub(crate) async fn start(
        config: &ServerConfig,
        root: &Path,
        wait: Duration,
        sandbox: Option<&tackle_sandbox::Confine>,
    ) -> Result<Arc<Self>, StartError> {
        let program = config.command.first().cloned().unwrap_or_default();
        let mut command = tokio::process::Command::new(&program);
        command
            .args(config.command.iter().skip(1))
            .envs(config.env.iter().map(|(k, v)| (k, v)))
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(sandbox) = sandbox {
            sandbox
                .apply(command.as_std_mut())
                .map_err(|e| StartError::Spawn {
                    program: program.clone(),
                    reason: e.to_string(),
                })?;
        }
        let mut child = command.spawn().map_err(|e| StartError::Spawn {
            program: program.clone(),
            reason: e.to_string(),
        })?;
        let spawned = || StartError::Spawn {
            program: program.clone(),
            reason: "its standard streams were not available".to_owned(),
        };
        let stdin = child.stdin.take().ok_or_else(spawned)?;
        let stdout = child.stdout.take().ok_or_else(spawned)?;
        if let Some(stderr) = child.stderr.take() {
            let name = config.name.clone();
            // The server's stderr goes to the log, never to stdout.
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let line: String = line.chars().take(2_000).collect();
                    tracing::debug!(target: "tackle_lsp::stderr", server = %name, "{line}");
                }
            });
        }
        let process_group = child.id().and_then(|id| i32::try_from(id).ok());
        let (seq, _) = watch::channel(0);
        let inbox = Arc::new(Inbox {
            published: Mutex::default(),
            seq,
            pull: Default::default(),
            initialization: config.initialization.clone(),
            root: root.to_path_buf(),
        });
        let connection = Connection::start(BufReader::new(stdout), stdin, inbox.clone());
        let client = Arc::new(Self {
            connection,
            inbox,
            documents: Mutex::default(),
            sync: tokio::sync::Mutex::new(()),
            process_group,
            child: Mutex::new(Some(child)),
        });
        let params = initialize_params(root, config.initialization.as_ref());
        let initialized = client
            .connection
            .request("initialize", params, wait)
            .await
            .map_err(StartError::Initialize)?;
        if initialized
            .pointer("/capabilities/diagnosticProvider")
            .is_some_and(|provider| !provider.is_null())
        {
            client
                .inbox
                .pull
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        client.connection.notify("initialized", json!({}));
        if let Some(settings) = &config.initialization {
            client.connection.notify(
                "workspace/didChangeConfiguration",
                json!({ "settings": settings }),
            );
        }
        Ok(client)
    }

    /// True while the server's streams are open.
    pub(crate) fn alive(&self) -> bool {
        !self.connection.is_closed()
    }

    /// Whether `path` is open in the server.
    pub(crate) fn is_open(&self, path: &Path) -> bool {
        self.documents.lock().contains_key(path)
    }

    /// The open documents.
    pub(crate) fn open_documents(&self) -> Vec<PathBuf> {
        self.documents.lock().keys().cloned().collect()
    }

    /// The current publish sequence number.
    pub(crate) fn seq(&self) -> u64 {
        *self.inbox.seq.borrow()
    }

    /// What the server last published for `path`.
    pub(crate) fn published(&self, path: &Path) -> Option<Published> {
        self.inbox.published.lock().get(path).cloned()
    }

    /// Every file with diagnostics published after `seq`.
    pub(crate) fn published_since(&self, seq: u64) -> Vec<(PathBuf, Published)> {
        let mut out: Vec<_> = self
            .inbox
            .published
            .lock()
            .iter()
            .filter(|(_, p)| p.seq > seq)
            .map(|(path, p)| (path.clone(), p.clone()))
            .collect();
        out.sort_by_key(|(_, p)| p.seq);
        out
    }

    /// Sends `text` as the content of `path` (open, or a full change), then a save. Returns the
    /// version sent.
    pub(crate) fn sync_document(&self, path: &Path, text: &str) -> i32 {
        let uri = path_to_uri(path);
        let mut documents = self.documents.lock();
        let version = match documents.get_mut(path) {
            Some(document) => {
                document.version += 1;
                self.connection.notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": {"uri": uri, "version": document.version},
                        "contentChanges": [{"text": text}],
                    }),
                );
                document.version
            }
            None => {
                documents.insert(
                    path.to_path_buf(),
                    Document {
                        version: 1,
                        awaited: false,
                    },
                );
                self.connection.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {
                        "uri": uri, "languageId": language_id(path), "version": 1, "text": text,
                    }}),
                );
                1
            }
        };
        drop(documents);
        self.connection.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": path_to_uri(path)}}),
        );
        version
    }

    /// Up to `limit` open documents the server has not reported on and that no change waited
    /// for yet, with their versions; each is marked as waited for, so it is waited for once.
    pub(crate) fn take_unreported(&self, limit: usize) -> Vec<(PathBuf, i32)> {
        let mut documents = self.documents.lock();
        let published = self.inbox.published.lock();
        let mut out = Vec::new();
        for (path, document) in documents.iter_mut() {
            if out.len() == limit {
                break;
            }
            if !document.awaited && !published.contains_key(path) {
                document.awaited = true;
                out.push((path.clone(), document.version));
            }
        }
        out
    }

    /// Closes `path` (it was deleted).
    pub(crate) fn close_document(&self, path: &Path) {
        if self.documents.lock().remove(path).is_some() {
            self.connection.notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": path_to_uri(path)}}),
            );
            self.inbox.published.lock().remove(path);
        }
    }

    /// Waits until the server published diagnostics for `path` at `version` (or, from a server
    /// that sends no versions, any publish after `since`), or `deadline`.
    pub(crate) async fn wait_for(
        &self,
        path: &Path,
        version: i32,
        since: u64,
        deadline: Instant,
    ) -> Option<Published> {
        let mut changes = self.inbox.seq.subscribe();
        loop {
            if let Some(published) = self.published(path) {
                let current = match published.version {
                    Some(v) => v >= version,
                    None => published.seq > since,
                };
                if current {
                    return Some(published);
                }
            }
            if !self.alive() || self.supports_pull() {
                return None;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return None,
            }
        }
    }

    /// Whether the server answers `textDocument/diagnostic`.
    pub(crate) fn supports_pull(&self) -> bool {
        self.inbox.pull.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Asks for `path`'s diagnostics (pull), waiting until `deadline`; stores them as the
    /// file's latest at `version`. A server that cancels the request (it was not ready) is
    /// asked again while time remains.
    pub(crate) async fn pull(
        &self,
        path: &Path,
        version: Option<i32>,
        deadline: Instant,
    ) -> Option<Vec<Diagnostic>> {
        let params = json!({"textDocument": {"uri": path_to_uri(path)}});
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            match self.connection.request(PULL, params.clone(), left).await {
                Ok(report) => {
                    let items = report.get("items").cloned().unwrap_or(Value::Null);
                    let diagnostics: Vec<Diagnostic> =
                        match report.get("kind").and_then(Value::as_str) {
                            // Nothing sent as previous result: an unchanged report keeps what we had.
                            Some("unchanged") => self.published(path)?.diagnostics,
                            _ => serde_json::from_value(items).unwrap_or_default(),
                        };
                    let mut published = self.inbox.published.lock();
                    let seq = *self.inbox.seq.borrow() + 1;
                    published.insert(
                        path.to_path_buf(),
                        Published {
                            version,
                            seq,
                            diagnostics: diagnostics.clone(),
                        },
                    );
                    drop(published);
                    self.inbox.seq.send_replace(seq);
                    return Some(diagnostics);
                }
                Err(RpcError::Server { code, .. })
                    if code == SERVER_CANCELLED || code == CONTENT_MODIFIED =>
                {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                Err(_) => return None,
            }
        }
    }

    /// The version sent last for `path`.
    pub(crate) fn version(&self, path: &Path) -> Option<i32> {
        self.documents.lock().get(path).map(|d| d.version)
    }

    /// Waits until no diagnostics arrived for `quiet`, or `deadline`.
    pub(crate) async fn settle(&self, quiet: Duration, deadline: Instant) {
        let mut changes = self.inbox.seq.subscribe();
        loop {
            let until = (Instant::now() + quiet).min(deadline);
            match tokio::time::timeout_at(until, changes.changed()).await {
                Ok(Ok(())) if Instant::now() < deadline => {}
                _ => return,
            }
        }
    }

    /// A request, waiting at most `wait`.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        wait: Duration,
    ) -> Result<Value, RpcError> {
        self.connection.request(method, params, wait).await
    }

    /// `shutdown`, `exit`, then the process group is killed if it is still there at `deadline`.
    pub(crate) async fn shutdown(&self, deadline: tokio::time::Instant) {
        if self.alive() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let _ = self.connection.request("shutdown", Value::Null, left).await;
            self.connection.notify("exit", Value::Null);
        }
        let child = self.child.lock().take();
        if let Some(mut child) = child {
            if tokio::time::timeout_at(deadline, child.wait())
                .await
                .is_err()
            {
                self.kill();
                let _ = child.kill().await;
            } else {
                // The server is gone; what it started may not be.
                self.kill();
            }
        }
    }

    /// Kills the whole process group at once.
    pub(crate) fn kill(&self) {
        if let Some(pgid) = self.process_group {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The `languageId` of a path, by extension.
fn language_id(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "rs" => "rust",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => "cpp",
        "json" => "json",
        "sh" | "bash" => "shellscript",
        // Servers for other languages know their files by extension.
        _ => "plaintext",
    }
}

fn initialize_params(root: &Path, initialization: Option<&Value>) -> Value {
    let uri = path_to_uri(root);
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut params = json!({
        // Servers that watch this process exit when it dies.
        "processId": std::process::id(),
        "clientInfo": {"name": "tackle", "version": env!("CARGO_PKG_VERSION")},
        "rootUri": uri,
        "workspaceFolders": [{"uri": uri, "name": name}],
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": true},
            "workspace": {
                "configuration": true,
                "workspaceFolders": true,
                "symbol": {"dynamicRegistration": false},
            },
            "textDocument": {
                "synchronization": {"dynamicRegistration": false, "didSave": true},
                "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
                "diagnostic": {"dynamicRegistration": true, "relatedDocumentSupport": false},
                "hover": {"contentFormat": ["plaintext", "markdown"]},
                "definition": {"linkSupport": false},
                "implementation": {"linkSupport": false},
                "references": {},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                "callHierarchy": {},
            },
        },
    });
    if let Some(options) = initialization {
        params["initializationOptions"] = options.clone();
    }
    params
}
