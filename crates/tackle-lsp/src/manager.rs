//! `LspManager`: the servers of one Location, started lazily per project root, shared by every
//! session, restarted with backoff, and shut down with the host.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::client::{Client, Published};
use crate::config::{ServerConfig, project_root};
use crate::position::{line_of, utf16_to_column};

/// How long the manager waits, and for what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagerOptions {
    /// How long a server may take to start and initialize.
    pub start_timeout: Duration,
    /// How long an edit waits for a server's diagnostics of the changed file.
    pub diagnostics_wait: Duration,
    /// After those arrived, how long without any publish ends the wait for other files'.
    pub settle: Duration,
    /// How long a query (hover, references…) may take.
    pub request_timeout: Duration,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        Self {
            start_timeout: Duration::from_secs(15),
            diagnostics_wait: Duration::from_secs(2),
            settle: Duration::from_millis(150),
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// An error.
    Error,
    /// A warning.
    Warning,
    /// Information.
    Information,
    /// A hint.
    Hint,
}

impl Severity {
    /// The upper-case label OpenCode prints (`ERROR`).
    pub fn label(self) -> &'static str {
        match self {
            Severity::Error => "ERROR",
            Severity::Warning => "WARN",
            Severity::Information => "INFO",
            Severity::Hint => "HINT",
        }
    }
}

/// One diagnostic, with positions a model can use.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileDiagnostic {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
    /// How serious.
    pub severity: Severity,
    /// The message, on one line.
    pub message: String,
    /// Who reported it (`Pyright`), when the server said.
    pub source: Option<String>,
    /// Its code, when the server gave one.
    pub code: Option<String>,
    /// The text of its line, trimmed.
    pub line_text: String,
}

/// Diagnostics of another file the change affected.
#[derive(Clone, Debug, PartialEq)]
pub struct OtherFile {
    /// The file.
    pub path: PathBuf,
    /// What the server had published for it before the change, when anything.
    pub before: Option<Vec<FileDiagnostic>>,
    /// What it published during the wait.
    pub after: Vec<FileDiagnostic>,
}

/// How one server's wait ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitStatus {
    /// It published diagnostics for the change.
    Complete,
    /// It did not, within the wait.
    TimedOut,
    /// It is not running: the reason.
    Unavailable(String),
}

/// The servers' answer to a change of one file.
#[derive(Clone, Debug, PartialEq)]
pub struct Touched {
    /// Each server that serves the file, and how its wait ended.
    pub servers: Vec<(String, WaitStatus)>,
    /// The file's diagnostics before the change, when known.
    pub before: Option<Vec<FileDiagnostic>>,
    /// The file's diagnostics after the change.
    pub after: Vec<FileDiagnostic>,
    /// Other files whose diagnostics arrived during the wait.
    pub others: Vec<OtherFile>,
}

/// A server (its index) for one project root.
type SlotKey = (usize, PathBuf);

#[derive(Default)]
struct Slot {
    client: Option<Arc<Client>>,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
}

/// The language servers of one Location.
pub struct LspManager {
    boundary: PathBuf,
    servers: Vec<ServerConfig>,
    options: ManagerOptions,
    slots: Mutex<HashMap<SlotKey, Arc<tokio::sync::Mutex<Slot>>>>,
    /// Where warnings go besides the log, once the host says.
    warn: std::sync::OnceLock<Warn>,
    sandbox: std::sync::OnceLock<tackle_sandbox::Confine>,
}

/// Where a crate's warnings go besides the log: a host hands them to whoever follows it (an
/// MCP client's log messages).
pub type Warn = Arc<dyn Fn(String) + Send + Sync>;

impl std::fmt::Debug for LspManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspManager")
            .field("boundary", &self.boundary)
            .field(
                "servers",
                &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The longest wait before a crashed server is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long a server that cannot be spawned is left alone.
const SPAWN_RETRY: Duration = Duration::from_secs(60);

impl LspManager {
    /// The servers for the Location at `boundary` (its real root). Nothing starts until a file
    /// of a server's language is touched.
    pub fn new(boundary: PathBuf, servers: Vec<ServerConfig>, options: ManagerOptions) -> Self {
        Self {
            boundary,
            servers,
            options,
            slots: Mutex::default(),
            warn: std::sync::OnceLock::new(),
            sandbox: std::sync::OnceLock::new(),
        }
    }

    /// Starts the servers under `sandbox` from now on. Only the first call counts.
    pub fn set_sandbox(&self, sandbox: tackle_sandbox::Confine) {
        let _ = self.sandbox.set(sandbox);
    }

    /// Sends the manager's warnings (a server that stopped) to `warn` too, from now on. Only
    /// the first call counts.
    pub fn set_warn(&self, warn: Warn) {
        let _ = self.warn.set(warn);
    }

    /// The options.
    pub fn options(&self) -> &ManagerOptions {
        &self.options
    }

    /// The names of the servers that serve `path`.
    pub fn servers_for(&self, path: &Path) -> Vec<&str> {
        self.servers
            .iter()
            .filter(|s| s.serves(path))
            .map(|s| s.name.as_str())
            .collect()
    }

    /// Whether the model hears that `server` could not start: true for servers the
    /// configuration names, false for built-ins merely found on `PATH`.
    pub fn announces_failures(&self, server: &str) -> bool {
        self.servers
            .iter()
            .any(|s| s.name == server && s.configured)
    }

    /// The running client of server `index` for `path`'s project, started or restarted when
    /// needed and allowed.
    async fn client(&self, index: usize, path: &Path) -> Result<Arc<Client>, String> {
        let config = &self.servers[index];
        let root = project_root(path, &self.boundary, &config.root_markers);
        let slot = self
            .slots
            .lock()
            .entry((index, root.clone()))
            .or_default()
            .clone();
        let mut slot = slot.lock().await;
        if let Some(client) = &slot.client {
            if client.alive() {
                return Ok(client.clone());
            }
            tracing::warn!(server = %config.name, "language server stopped; it will be restarted");
            if let Some(warn) = self.warn.get() {
                warn(format!(
                    "The {} language server stopped; it is restarted on the next change.",
                    config.name
                ));
            }
            client.kill();
            slot.client = None;
            slot.failures += 1;
            let backoff = backoff(slot.failures);
            slot.retry_at = Some(Instant::now() + backoff);
            slot.last_error = Some("it stopped unexpectedly".to_owned());
        }
        if let Some(at) = slot.retry_at
            && Instant::now() < at
        {
            let reason = slot.last_error.clone().unwrap_or_default();
            return Err(format!(
                "{reason}; tackle tries again in {}s",
                (at - Instant::now()).as_secs().max(1)
            ));
        }
        match Client::start(
            config,
            &root,
            self.options.start_timeout,
            self.sandbox.get(),
        )
        .await
        {
            Ok(client) => {
                slot.client = Some(client.clone());
                slot.retry_at = None;
                Ok(client)
            }
            Err(error) => {
                slot.failures += 1;
                let wait = match error {
                    crate::client::StartError::Spawn { .. } => SPAWN_RETRY,
                    crate::client::StartError::Initialize(_) => backoff(slot.failures),
                };
                slot.retry_at = Some(Instant::now() + wait);
                let message = error.to_string();
                slot.last_error = Some(message.clone());
                Err(message)
            }
        }
    }

    /// A read: opens `path` with `text` in its servers, in the background, so the next change
    /// is compared against known diagnostics. Returns at once.
    pub fn touch(self: &Arc<Self>, path: &Path, text: &str) {
        if self.servers_for(path).is_empty() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let (manager, path, text) = (self.clone(), path.to_path_buf(), text.to_owned());
        tokio::spawn(async move {
            for index in manager.indices_for(&path) {
                if let Ok(client) = manager.client(index, &path).await {
                    let _sync = client.sync.lock().await;
                    if !client.is_open(&path) {
                        let version = client.sync_document(&path, &text);
                        // A pull server reports only when asked: ask now, so the file's state
                        // before a change (its own or another file's) is known.
                        if client.supports_pull() {
                            let deadline = Instant::now() + manager.options.diagnostics_wait;
                            client.pull(&path, Some(version), deadline).await;
                        }
                    }
                }
            }
        });
    }

    fn indices_for(&self, path: &Path) -> Vec<usize> {
        (0..self.servers.len())
            .filter(|&i| self.servers[i].serves(path))
            .collect()
    }

    /// Sends the change of `path` (from `before`, `None` when it was created, to `after`, `None`
    /// when it was deleted) to its servers and waits, bounded, for their diagnostics. Never
    /// fails: a server that is missing or slow is reported in `servers`.
    pub async fn touch_and_wait(
        &self,
        path: &Path,
        before: Option<&str>,
        after: Option<&str>,
    ) -> Touched {
        let mut touched = Touched {
            servers: Vec::new(),
            before: None,
            after: Vec::new(),
            others: Vec::new(),
        };
        for index in self.indices_for(path) {
            let name = self.servers[index].name.clone();
            let client = match self.client(index, path).await {
                Ok(client) => client,
                Err(reason) => {
                    touched
                        .servers
                        .push((name, WaitStatus::Unavailable(reason)));
                    continue;
                }
            };
            let _sync = client.sync.lock().await;
            let Some(after) = after else {
                client.close_document(path);
                touched.servers.push((name, WaitStatus::Complete));
                continue;
            };
            let wait = self.options.diagnostics_wait;
            // Baselines: a file opened by a read has one once the server first reports on it.
            // One it has not reported on yet (read while it started) is waited for once,
            // bounded, before the change.
            let deadline = Instant::now() + wait;
            for (open, version) in client.take_unreported(MAX_OTHER_PULLS) {
                diagnostics_of(&client, &open, version, 0, deadline).await;
            }
            // The state before: what the server says of the file as it was.
            let known = client
                .is_open(path)
                .then(|| client.published(path))
                .flatten();
            let before_diagnostics = match (known, before) {
                (Some(published), _) => Some(published.diagnostics),
                (None, Some(before)) => {
                    let since = client.seq();
                    let version = client.sync_document(path, before);
                    diagnostics_of(&client, path, version, since, Instant::now() + wait).await
                }
                (None, None) => None,
            };
            if let (Some(diagnostics), Some(before)) = (&before_diagnostics, before) {
                let converted = convert_all(diagnostics, before);
                touched
                    .before
                    .get_or_insert_with(Vec::new)
                    .extend(converted);
            }
            let others_before: HashMap<PathBuf, Published> = client
                .open_documents()
                .into_iter()
                .filter(|p| p != path)
                .filter_map(|p| client.published(&p).map(|d| (p, d)))
                .collect();
            let since = client.seq();
            let version = client.sync_document(path, after);
            let deadline = Instant::now() + wait;
            match diagnostics_of(&client, path, version, since, deadline).await {
                Some(diagnostics) => {
                    touched.after.extend(convert_all(&diagnostics, after));
                    touched.servers.push((name, WaitStatus::Complete));
                }
                None if !client.alive() => {
                    touched.servers.push((
                        name,
                        WaitStatus::Unavailable("it stopped while checking the change".into()),
                    ));
                }
                None => touched.servers.push((name, WaitStatus::TimedOut)),
            }
            // Other files: pulled again when the server answers pulls (the most recently
            // published first, at most MAX_OTHER_PULLS), else what it pushed during a quiet spell.
            let others: Vec<(PathBuf, Vec<Diagnostic>)> = if client.supports_pull() {
                let mut open: Vec<PathBuf> = client
                    .open_documents()
                    .into_iter()
                    .filter(|p| p != path)
                    .collect();
                let recency = |p: &PathBuf| others_before.get(p).map_or(0, |known| known.seq);
                open.sort_by_key(|p| std::cmp::Reverse(recency(p)));
                let mut pulled = Vec::new();
                for other in open.iter().take(MAX_OTHER_PULLS) {
                    let version = client.version(other);
                    if let Some(diagnostics) = client.pull(other, version, deadline).await {
                        pulled.push((other.clone(), diagnostics));
                    }
                }
                pulled
            } else {
                client.settle(self.options.settle, deadline).await;
                client
                    .published_since(since)
                    .into_iter()
                    .filter(|(other, _)| other != path)
                    .map(|(other, p)| (other, p.diagnostics))
                    .collect()
            };
            for (other, diagnostics) in others {
                let known = others_before.get(&other);
                // An open file the server had not reported on has no baseline: its first report
                // may hold errors older than this change, so it is not compared.
                if known.is_none() && client.is_open(&other) {
                    continue;
                }
                let text = read_bounded(&other).unwrap_or_default();
                let before = known.map(|p| convert_all(&p.diagnostics, &text));
                touched.others.push(OtherFile {
                    after: convert_all(&diagnostics, &text),
                    before,
                    path: other,
                });
            }
        }
        touched
    }

    /// Sends `method` about `path` to its first server, opening the file first if needed.
    pub async fn request(
        &self,
        path: &Path,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, crate::LspError> {
        let Some(&index) = self.indices_for(path).first() else {
            return Err(crate::LspError::NoServer {
                path: path.to_path_buf(),
            });
        };
        let client =
            self.client(index, path)
                .await
                .map_err(|reason| crate::LspError::Unavailable {
                    server: self.servers[index].name.clone(),
                    reason,
                })?;
        {
            let _sync = client.sync.lock().await;
            if !client.is_open(path) {
                let text = read_bounded(path).ok_or_else(|| crate::LspError::Unreadable {
                    path: path.to_path_buf(),
                })?;
                client.sync_document(path, &text);
            }
        }
        client
            .request(method, params, self.options.request_timeout)
            .await
            .map_err(|error| crate::LspError::Request {
                server: self.servers[index].name.clone(),
                error,
            })
    }

    /// Shuts every server down at once: `shutdown` and `exit`, and the process group is killed
    /// once the server exited or `grace` passed.
    pub async fn shutdown(&self, grace: Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        let slots: Vec<_> = self.slots.lock().drain().map(|(_, slot)| slot).collect();
        futures_util::future::join_all(slots.into_iter().map(|slot| async move {
            let client = slot.lock().await.client.take();
            if let Some(client) = client {
                client.shutdown(deadline).await;
            }
        }))
        .await;
    }
}

/// The most other open files pulled again after a change.
const MAX_OTHER_PULLS: usize = 16;

/// The diagnostics of `path` at `version`: pulled when the server answers pulls, else the
/// publish for that version (or, when the server says mid-wait that it answers pulls, pulled).
async fn diagnostics_of(
    client: &Client,
    path: &Path,
    version: i32,
    since: u64,
    deadline: Instant,
) -> Option<Vec<Diagnostic>> {
    if !client.supports_pull()
        && let Some(published) = client.wait_for(path, version, since, deadline).await
    {
        return Some(published.diagnostics);
    }
    if client.supports_pull() {
        return client.pull(path, Some(version), deadline).await;
    }
    None
}

fn backoff(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => (Duration::from_millis(500) * 2u32.saturating_pow(n - 2)).min(MAX_BACKOFF),
    }
}

/// Reads a file for line texts; `None` past 8 MiB or when unreadable.
fn read_bounded(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 8 * 1024 * 1024 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

fn convert_all(diagnostics: &[Diagnostic], text: &str) -> Vec<FileDiagnostic> {
    diagnostics.iter().map(|d| convert(d, text)).collect()
}

fn convert(diagnostic: &Diagnostic, text: &str) -> FileDiagnostic {
    let line = line_of(text, diagnostic.range.start.line);
    FileDiagnostic {
        line: diagnostic.range.start.line + 1,
        column: utf16_to_column(line, diagnostic.range.start.character),
        severity: match diagnostic.severity {
            Some(DiagnosticSeverity::WARNING) => Severity::Warning,
            Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
            Some(DiagnosticSeverity::HINT) => Severity::Hint,
            // The protocol says a missing severity is the client's call: an error.
            _ => Severity::Error,
        },
        message: diagnostic
            .message
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        source: diagnostic.source.clone(),
        code: diagnostic.code.as_ref().map(|code| match code {
            NumberOrString::Number(n) => n.to_string(),
            NumberOrString::String(s) => s.clone(),
        }),
        line_text: line.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_restarts_the_first_crash_at_once_then_doubles_to_a_cap() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(40), MAX_BACKOFF);
    }
}
