//! What tackle's file tools report after a change: the errors it introduced, and formatting.
//!
//! A model that broke the build with an edit should hear it in the edit's own result, not ten
//! calls later from the compiler; and it should hear only what it broke. [`Diagnoser`] is the
//! host's implementation of core's [`ChangeReview`] port, which `write`, `edit`, `multiedit`
//! and `apply_patch` call after their write landed:
//!
//! - the project's formatter ([`format`]) runs on a copy of the file, and the tool writes the
//!   result back with compare-and-swap;
//! - the language servers ([`tackle_lsp`]) get the change and are waited for, bounded;
//! - a tree-sitter parse ([`syntax`]) finds syntax errors with no server installed.
//!
//! The key decision is to report only errors the change introduced. Where the state before the
//! change is known (the file was open in its server, or is opened with its old text first),
//! errors that were already there are counted in one sentence instead of listed ([`report`]),
//! so a model does not chase errors it did not make. The wording is OpenCode's (`LSP errors
//! detected in this file, please fix:`), which models already act on.
//!
//! This crate is separate from the built-ins so that a host that wants no diagnostics links no
//! grammar and no LSP code: the `fs` tools know only the port.

pub mod format;
pub mod report;
pub mod syntax;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tackle_core::{ChangeReview, FileChange};
use tackle_lsp::{FileDiagnostic, LspManager, Severity, WaitStatus};

use crate::format::Formatters;
use crate::report::{FileErrors, introduced, render};

/// The most changed files of one call sent to language servers; the rest get the syntax check.
pub const MAX_SERVER_FILES: usize = 10;

/// The [`ChangeReview`] a host wires into the file tools.
#[derive(Clone)]
pub struct Diagnoser {
    root: PathBuf,
    lsp: Option<Arc<LspManager>>,
    formatters: Option<Arc<Formatters>>,
    warn: Option<tackle_lsp::Warn>,
}

impl std::fmt::Debug for Diagnoser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Diagnoser")
            .field("root", &self.root)
            .field("lsp", &self.lsp)
            .field(
                "formatters",
                &self.formatters.as_ref().map(|f| f.specs().len()),
            )
            .finish()
    }
}

impl Diagnoser {
    /// Sends the review's warnings (a server that did not start or report, a formatter that
    /// failed) to `warn` too, besides the log.
    pub fn with_warn(mut self, warn: tackle_lsp::Warn) -> Self {
        self.warn = Some(warn);
        self
    }

    fn warn(&self, message: String) {
        if let Some(warn) = &self.warn {
            warn(message);
        }
    }

    /// Diagnostics for the Location at `root` (its real path): the syntax check always, the
    /// language servers of `lsp` when given, and `formatters` when given.
    pub fn new(
        root: PathBuf,
        lsp: Option<Arc<LspManager>>,
        formatters: Option<Formatters>,
    ) -> Self {
        Self {
            root,
            lsp,
            formatters: formatters.map(Arc::new),
            warn: None,
        }
    }

    fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// The report on `changes`; see [`ChangeReview::diagnose`].
    pub async fn report(&self, changes: &[FileChange]) -> String {
        let mut changed = Vec::new();
        let mut others: Vec<(PathBuf, FileErrors)> = Vec::new();
        let mut notes = Vec::new();
        let mut given_up: HashSet<String> = HashSet::new();
        let changed_paths: HashSet<&Path> = changes.iter().map(|c| c.path.as_path()).collect();
        for (index, change) in changes.iter().enumerate() {
            let Some(after) = &change.after else {
                if let Some(lsp) = &self.lsp {
                    lsp.touch_and_wait(&change.path, change.before.as_deref(), None)
                        .await;
                }
                continue;
            };
            let mut errors = FileErrors {
                display: change.display.clone(),
                ..Default::default()
            };
            let mut flagged_lines = HashSet::new();
            let servers = self.lsp.as_ref().filter(|lsp| {
                let names = lsp.servers_for(&change.path);
                index < MAX_SERVER_FILES
                    && !names.is_empty()
                    && names.iter().all(|s| !given_up.contains(*s))
            });
            if let Some(lsp) = servers {
                let touched = lsp
                    .touch_and_wait(&change.path, change.before.as_deref(), Some(after))
                    .await;
                let (new, kept) = introduced(touched.before.as_deref(), &touched.after);
                flagged_lines.extend(touched.after.iter().map(|d| d.line));
                errors.introduced = new;
                errors.preexisting = kept;
                for (server, status) in &touched.servers {
                    match status {
                        WaitStatus::Complete => {}
                        WaitStatus::TimedOut => {
                            given_up.insert(server.clone());
                            self.warn(format!(
                                "The {server} language server did not report on {} within {}.",
                                change.display,
                                seconds(lsp.options().diagnostics_wait),
                            ));
                            notes.push(format!(
                                "(The {server} language server did not report on {} within {}; \
                                 its errors, if any, are not listed.)",
                                change.display,
                                seconds(lsp.options().diagnostics_wait),
                            ));
                        }
                        WaitStatus::Unavailable(reason) if !lsp.announces_failures(server) => {
                            given_up.insert(server.clone());
                            tracing::warn!(%server, %reason, "a built-in language server did not start");
                            self.warn(format!(
                                "The built-in {server} language server did not start: {reason}."
                            ));
                        }
                        WaitStatus::Unavailable(reason) => {
                            given_up.insert(server.clone());
                            notes.push(format!(
                                "(The {server} language server is not available: {reason}. Only \
                                 the syntax check ran.)"
                            ));
                        }
                    }
                }
                for other in touched.others {
                    if changed_paths.contains(other.path.as_path()) {
                        continue;
                    }
                    let (new, kept) = introduced(other.before.as_deref(), &other.after);
                    let entry = FileErrors {
                        display: self.display(&other.path),
                        introduced: new,
                        preexisting: kept,
                    };
                    others.retain(|(p, _)| *p != other.path);
                    others.push((other.path, entry));
                }
            }
            let path = change.path.clone();
            let (before, after_text) = (change.before.clone(), after.clone());
            let syntax = tokio::task::spawn_blocking(move || {
                syntax::introduced_syntax_errors(&path, before.as_deref(), &after_text)
            })
            .await
            .unwrap_or_default();
            for error in syntax {
                if flagged_lines.contains(&error.line) {
                    continue;
                }
                errors.introduced.push(FileDiagnostic {
                    line: error.line,
                    column: error.column,
                    severity: Severity::Error,
                    message: error.message,
                    source: Some("tree-sitter".to_owned()),
                    code: None,
                    line_text: String::new(),
                });
            }
            errors.introduced.sort_by_key(|d| (d.line, d.column));
            changed.push(errors);
        }
        let others: Vec<FileErrors> = others.into_iter().map(|(_, e)| e).collect();
        notes.dedup();
        render(&changed, &others, &notes)
    }
}

fn seconds(duration: std::time::Duration) -> String {
    let ms = duration.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

impl ChangeReview for Diagnoser {
    fn format<'a>(&'a self, path: &'a Path, text: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let formatters = self.formatters.as_ref()?;
            match formatters.format(path, text).await {
                Ok(formatted) => formatted,
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "the formatter failed");
                    self.warn(format!(
                        "The formatter failed on {}: {error}. The file was left as written.",
                        path.display()
                    ));
                    None
                }
            }
        })
    }

    fn opened(&self, path: &Path, text: &str) {
        if let Some(lsp) = &self.lsp {
            lsp.touch(path, text);
        }
    }

    fn diagnose<'a>(&'a self, changes: &'a [FileChange]) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let text = self.report(changes).await;
            (!text.is_empty()).then_some(text)
        })
    }
}
