//! The file tools (read, write, edit, multiedit, notebook_edit, apply_patch, list), the search
//! tools (grep, glob) and the environment they share.
//!
//! Every tool is an ordinary [`Tool`](tackle_core::Tool) built from a [`ToolEnv`]: the Location
//! filesystem service, the session read ledger, the permission [`Gate`] and the options. The host
//! gets them as `(name, tool)` pairs from [`file_tools`] and registers them like any other tool.
//!
//! Each tool follows one order, so the same rules hold everywhere:
//!
//! 1. Reject degenerate arguments (an edit that changes nothing) before touching anything.
//! 2. Resolve the path; outside the Location, ask `external_directory` first.
//! 3. Refuse at once if a configured rule denies the tool's own permission, so a denied call
//!    learns nothing about the file.
//! 4. Lock the canonical path, read, check read freshness, plan the change in memory.
//! 5. Ask the tool's permission with the diff as metadata.
//! 6. Commit with compare-and-swap, then record the new content as read by the session.

// Shared helpers serve several features; a build with only some of them leaves some unused.
#![cfg_attr(
    not(all(
        feature = "fs",
        feature = "search",
        feature = "shell",
        feature = "web",
        feature = "agent"
    )),
    allow(unused_imports)
)]

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use tackle_core::names::{Permission, ToolName};
use tackle_core::{AnyTool, ChangeReview, Context, FileChange, SessionState, ToolFailure};
#[cfg(feature = "agent")]
use tackle_permission::{Agent, Ruleset};

use crate::fs::{FsError, LocationFs, PathGuard, ReadTracker, Resolved};
use crate::gate::Gate;

#[cfg(feature = "fs")]
mod apply_patch;
#[cfg(feature = "shell")]
pub mod bash;
#[cfg(feature = "web")]
mod codesearch;
#[cfg(feature = "shell")]
mod custom;
#[cfg(feature = "fs")]
mod edit;
#[cfg(feature = "search")]
mod glob;
#[cfg(feature = "search")]
mod grep;
mod instructions;
#[cfg(feature = "fs")]
mod list;
#[cfg(feature = "lsp")]
mod lsp;
#[cfg(feature = "fs")]
mod notebook;
#[cfg(feature = "fs")]
mod notebook_edit;
#[cfg(feature = "pdf")]
mod pdf;
#[cfg(feature = "agent")]
mod question;
#[cfg(feature = "fs")]
mod read;
#[cfg(any(feature = "fs", feature = "search", feature = "lsp"))]
mod readable;
#[cfg(feature = "agent")]
mod skill;
#[cfg(feature = "agent")]
mod task;
#[cfg(feature = "agent")]
mod todo;
#[cfg(any(feature = "search", feature = "agent"))]
pub(crate) mod walk;
#[cfg(feature = "web")]
mod webfetch;
#[cfg(feature = "web")]
mod websearch;
#[cfg(feature = "fs")]
mod write;

#[cfg(all(
    test,
    feature = "fs",
    feature = "search",
    feature = "shell",
    feature = "web",
    feature = "agent"
))]
mod tests;

#[cfg(feature = "fs")]
pub use apply_patch::{ApplyPatchInput, ApplyPatchOutput, PatchedFile};
#[cfg(feature = "shell")]
pub use bash::{BashInput, BashOutput};
#[cfg(feature = "web")]
pub use codesearch::{CodeSearchInput, CodeSearchOutput};
#[cfg(feature = "shell")]
pub use custom::{
    CustomCatalog, CustomCommand, CustomManifest, CustomSource, CustomWarning,
    DEFAULT_TIMEOUT as CUSTOM_DEFAULT_TIMEOUT, MAX_TIMEOUT as CUSTOM_MAX_TIMEOUT, TRUST_PERMISSION,
    TrustMode, custom_tools, discover_custom_tools,
};
#[cfg(feature = "fs")]
pub use edit::{EditInput, EditOutput, MultiEditInput, MultiEditOutput, OneEdit};
#[cfg(feature = "search")]
pub use glob::{GlobInput, GlobOutput};
#[cfg(feature = "search")]
pub use grep::{GrepInput, GrepOutput};
#[cfg(feature = "fs")]
pub use list::{ListInput, ListOutput};
#[cfg(feature = "lsp")]
pub use lsp::{LspInput, LspOperation, LspOutput};
#[cfg(feature = "fs")]
pub use notebook_edit::{
    NotebookCellType, NotebookEditInput, NotebookEditMode, NotebookEditOutput,
};
#[cfg(feature = "agent")]
pub use question::{
    Answer, AskFuture, MAX_HEADER_CHARS, Question, QuestionAnswer, QuestionAsker, QuestionInput,
    QuestionOption, QuestionOutput,
};
#[cfg(feature = "fs")]
pub use read::{ReadInput, ReadKind, ReadMedia, ReadOutput};
#[cfg(feature = "agent")]
pub use skill::{
    Skill, SkillCatalog, SkillInput, SkillOutput, SkillWarning, discover_skills, skill_text,
};
#[cfg(feature = "agent")]
pub use task::{
    RunFuture, SubagentReport, SubagentRequest, SubagentRunner, SubagentStatus, TaskInput,
    TaskOutput,
};
#[cfg(feature = "agent")]
pub use todo::{
    Todo, TodoItem, TodoOutput, TodoPriority, TodoReadInput, TodoStatus, TodoWriteInput,
};
#[cfg(feature = "web")]
pub use webfetch::{WebFetchFormat, WebFetchInput, WebFetchOutput};
#[cfg(feature = "web")]
pub use websearch::{SearchType, WebSearchConfig, WebSearchInput, WebSearchOutput};
#[cfg(feature = "fs")]
pub use write::{WriteInput, WriteOutput};

/// Options of the file tools. `Default` gives the documented behaviour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileToolOptions {
    /// Instruction files looked for by read, nearest first, in this order within a directory.
    pub instruction_files: Vec<String>,
    /// Whether writes to existing files need a fresh read by the session.
    pub read_before_write: bool,
    /// The most entries list shows.
    pub list_limit: usize,
    /// The largest image or PDF read returns, in bytes.
    pub max_media_bytes: u64,
}

impl Default for FileToolOptions {
    fn default() -> Self {
        Self {
            instruction_files: vec!["AGENTS.md".to_owned(), "CLAUDE.md".to_owned()],
            read_before_write: true,
            list_limit: 100,
            max_media_bytes: 20 * 1024 * 1024,
        }
    }
}

/// What the file tools share: the Location, the read ledger, the permission gate and options.
/// Cheap to clone.
#[derive(Clone)]
pub struct ToolEnv {
    pub(crate) fs: LocationFs,
    pub(crate) reads: ReadTracker,
    pub(crate) gate: Gate,
    pub(crate) options: Arc<FileToolOptions>,
    pub(crate) instructions: instructions::Shown,
    /// Where session facts persist, when the host provides a store.
    pub(crate) state: Option<Arc<dyn SessionState>>,
    /// What follows a change (formatting, diagnostics), when the host wires it.
    pub(crate) review: Option<Arc<dyn ChangeReview>>,
    /// tackle's own directories whose files each belong to one session.
    pub(crate) outputs: Option<Arc<SessionOutputs>>,
    /// The sandbox every command a tool starts runs under; `None` runs them unsandboxed.
    pub(crate) sandboxes: Option<Arc<tackle_sandbox::Sandboxes>>,
    /// The live index grep and glob answer from when they can; `None` scans.
    pub(crate) index: Option<Arc<dyn FileIndex>>,
}

/// A live index of the Location's files, the port grep and glob answer from instead of walking (see
/// `tackle_builtins::index::SearchIndex`). An answer must equal what a walk would find at the
/// moment of the call; an index that cannot be sure says `None` and the call scans.
pub trait FileIndex: Send + Sync + std::fmt::Debug {
    /// The files a grep walk of the directory `dir` (absolute) would search, in any order, each
    /// marked with whether it must be searched for `pattern`; `None` to scan instead.
    fn grep_files(&self, dir: &std::path::Path, pattern: &str) -> Option<IndexedFiles>;

    /// Calls `visit` with each file a glob walk of the directory `dir` (absolute) would find,
    /// in any order: its path below `dir` and its modification time. False, having called
    /// nothing, to scan instead.
    fn glob_files(
        &self,
        dir: &std::path::Path,
        visit: &mut dyn FnMut(&std::path::Path, std::time::SystemTime),
    ) -> bool;
}

/// A [`FileIndex`] answer for grep: the files, with paths shared with the index, so that an
/// answer costs no allocation per file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedFiles {
    /// The directory the paths are below (absolute).
    pub base: std::path::PathBuf,
    /// Paths below `base`; `files` picks out those of this answer.
    pub paths: Arc<[std::path::PathBuf]>,
    /// The files of this answer.
    pub files: Vec<IndexedFile>,
}

impl IndexedFiles {
    /// The path of `file` below [`base`](Self::base).
    pub fn path(&self, file: &IndexedFile) -> &std::path::Path {
        &self.paths[file.at as usize]
    }
}

/// One file of a [`FileIndex`] answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexedFile {
    /// The file's position in [`IndexedFiles::paths`].
    pub at: u32,
    /// False when the file cannot hold a match: it is counted but not opened.
    pub search: bool,
    /// True when the file holds binary data (a NUL byte).
    pub binary: bool,
}

/// Whether the ignore rules of the directories above `dir` ignore its contents, so a grep walk
/// of `dir` leaves out the ignore rules of its parents.
#[cfg(feature = "index")]
pub(crate) fn grep_ignored_by_parents(dir: &std::path::Path) -> bool {
    grep::ignored_by_parents(dir)
}

/// tackle's own directories outside the Location whose files belong to one session each: the
/// managed outputs (the full text behind a truncated result) and the bash spool. The permission
/// preset lets every session read them without a question; this says whose each file is, so a
/// session never reads another's.
#[derive(Clone, Debug)]
pub struct SessionOutputs {
    /// The managed output directory (files named by content hash), canonical.
    pub managed: std::path::PathBuf,
    /// The spool directory (one subdirectory per session), canonical.
    pub spool: std::path::PathBuf,
}

/// The session-state key that records that a session's result named the managed output `id`.
pub fn managed_output_key(id: &str) -> String {
    format!("managed-output:{id}")
}

/// The name of a session's own directory under the spool directory.
pub fn session_dir_name(session: &str) -> String {
    let hash = blake3::hash(session.as_bytes()).to_hex();
    format!("s-{}", &hash[..16])
}

impl ToolEnv {
    /// Whether the real (canonical) path `real` is one of tackle's own output files that belongs to another
    /// session than `cx`'s: a managed output no result of this session named, or a spool file
    /// in another session's directory.
    #[cfg(any(feature = "fs", feature = "search", feature = "lsp"))]
    pub(crate) fn foreign_output(&self, cx: &tackle_core::Context, real: &Path) -> bool {
        let Some(outputs) = &self.outputs else {
            return false;
        };
        // A canonical path below a canonical directory starts with its bytes: most paths are
        // cleared by that alone, without splitting either into components.
        let bytes = real.as_os_str().as_encoded_bytes();
        let may_be_below = |dir: &Path| bytes.starts_with(dir.as_os_str().as_encoded_bytes());
        if !may_be_below(&outputs.managed) && !may_be_below(&outputs.spool) {
            return false;
        }
        let session = cx.identity().session.as_str();
        if let Ok(rest) = real.strip_prefix(&outputs.managed) {
            let Some(state) = &self.state else {
                return false;
            };
            let id = rest.to_string_lossy();
            return !matches!(state.get(session, &managed_output_key(&id)), Ok(Some(_)));
        }
        if let Ok(rest) = real.strip_prefix(&outputs.spool) {
            let own = session_dir_name(session);
            return rest
                .components()
                .next()
                .is_some_and(|first| first.as_os_str() != own.as_str());
        }
        false
    }
}

impl fmt::Debug for ToolEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEnv")
            .field("root", &self.fs.root())
            .field("reads", &self.reads)
            .field("gate", &self.gate)
            .field("options", &self.options)
            .finish()
    }
}

impl ToolEnv {
    /// The environment of the Location served by `fs`: read tracking on and kept in memory, a
    /// gate that allows everything, default options.
    pub fn new(fs: LocationFs) -> Self {
        Self {
            fs,
            reads: ReadTracker::new(),
            gate: Gate::allow_all(),
            options: Arc::new(FileToolOptions::default()),
            instructions: instructions::Shown::default(),
            state: None,
            review: None,
            outputs: None,
            sandboxes: None,
            index: None,
        }
    }

    /// Lets grep and glob answer from `index` when they can.
    pub fn with_index(mut self, index: Arc<dyn FileIndex>) -> Self {
        self.index = Some(index);
        self
    }

    /// Runs every command a tool starts (bash and its jobs, custom tools) under `sandboxes`.
    pub fn with_sandboxes(mut self, sandboxes: Arc<tackle_sandbox::Sandboxes>) -> Self {
        self.sandboxes = Some(sandboxes);
        self
    }

    /// The sandbox for a command of the call `cx`; unsandboxed when a person allowed it for
    /// this call (`unsandboxed`) or the host set none. Fails when the platform cannot apply the
    /// policy and the policy says to refuse.
    #[cfg(feature = "shell")]
    pub(crate) fn sandbox(
        &self,
        cx: &tackle_core::Context,
        unsandboxed: bool,
    ) -> Result<tackle_sandbox::Prepared, ToolFailure> {
        let Some(sandboxes) = &self.sandboxes else {
            return Ok(tackle_sandbox::Prepared::unsandboxed(
                tackle_sandbox::Status::Off { by_person: false },
            ));
        };
        let identity = cx.identity();
        sandboxes
            .prepare(&tackle_sandbox::Request {
                agent: identity.agent.as_str(),
                session: identity.session.as_str(),
                root: self.fs.root(),
                unsandboxed,
            })
            .map_err(|error| {
                ToolFailure::new(format!("{error}, so nothing was run."))
                    .with_hint("Ask the user to fix the sandbox or set `sandbox.whenUnavailable` to \"run\" in the configuration.")
            })
    }

    /// The host's sandbox service, when it set one.
    pub fn sandboxes(&self) -> Option<&Arc<tackle_sandbox::Sandboxes>> {
        self.sandboxes.as_ref()
    }

    /// Says which of tackle's own output files belong to which session, so that `read`, `grep`
    /// and the `lsp` tool never show one session another's.
    pub fn with_session_outputs(mut self, outputs: SessionOutputs) -> Self {
        self.outputs = Some(Arc::new(outputs));
        self
    }

    /// Asks permissions through `gate`.
    pub fn with_gate(mut self, gate: Gate) -> Self {
        self.gate = gate;
        self
    }

    /// Keeps session facts (reads, instruction files shown) in `state` as well as in memory, so
    /// a session spans processes.
    pub fn with_session_state(mut self, state: Arc<dyn SessionState>) -> Self {
        if self.options.read_before_write {
            self.reads = ReadTracker::persistent(state.clone());
        }
        self.instructions = instructions::Shown::persistent(state.clone());
        self.state = Some(state);
        self
    }

    /// Sets the options. Turning `read_before_write` off disables read tracking.
    pub fn with_options(mut self, options: FileToolOptions) -> Self {
        if !options.read_before_write {
            self.reads = ReadTracker::disabled();
        }
        self.options = Arc::new(options);
        self
    }

    /// Runs `review` after every change the file tools make: its formatter, then its report,
    /// which the model reads with the result; and tells it what `read` read.
    pub fn with_review(mut self, review: Arc<dyn ChangeReview>) -> Self {
        self.review = Some(review);
        self
    }

    /// The Location filesystem service.
    pub fn fs(&self) -> &LocationFs {
        &self.fs
    }

    /// The session read ledger.
    pub fn read_tracker(&self) -> &ReadTracker {
        &self.reads
    }

    #[cfg(any(feature = "fs", feature = "search", feature = "shell", feature = "lsp"))]
    /// Resolves `path` and asks `external_directory` when it lies outside the Location.
    pub(crate) async fn resolve(&self, cx: &Context, path: &str) -> Result<Resolved, ToolFailure> {
        let target = self.fs.resolve(path).await.map_err(failure)?;
        self.gate.external_directory(cx, &target).await?;
        Ok(target)
    }

    #[cfg(feature = "fs")]
    /// The prologue of a one-file mutating tool: resolve (asking `external_directory`), refuse a
    /// configured `edit` deny before reading anything, refuse a directory, then lock the file.
    /// Returns the target, its display name and the held lock.
    pub(crate) async fn open_for_edit(
        &self,
        cx: &Context,
        path: &str,
    ) -> Result<(Resolved, String, PathGuard), ToolFailure> {
        let target = self.resolve(cx, path).await?;
        let name = target.display_name();
        self.gate
            .refuse_if_denied(cx, Permission::EDIT.as_str(), std::slice::from_ref(&name))?;
        if target.path.is_dir() {
            return Err(failure(FsError::IsADirectory { path: name }));
        }
        let guard = self.fs.lock(&target).await;
        Ok((target, name, guard))
    }
}

/// A file as written and then formatted.
#[cfg(feature = "fs")]
pub(crate) struct Formatted {
    /// The bytes now in the file.
    pub(crate) bytes: Vec<u8>,
    /// Their text.
    pub(crate) raw: String,
}

#[cfg(feature = "fs")]
impl ToolEnv {
    /// After a write of `bytes` (the text `raw`) landed: the project's formatter, if one applies,
    /// and its result written back with compare-and-swap under the lock the tool still holds.
    /// `None` when nothing was formatted (no formatter, no change, or the file changed meanwhile).
    pub(crate) async fn format_written(
        &self,
        guard: &PathGuard,
        path: &std::path::Path,
        bytes: &[u8],
        raw: &str,
        encoding: &crate::text::Encoding,
    ) -> Option<Formatted> {
        let review = self.review.as_ref()?;
        let formatted = review.format(path, raw).await?;
        let new = crate::text::encode(&formatted, encoding);
        match guard.write_if_unchanged(Some(bytes), &new).await {
            Ok(_) => Some(Formatted {
                bytes: new,
                raw: formatted,
            }),
            // Changed meanwhile: what the tool wrote stays, unformatted.
            Err(_) => None,
        }
    }

    /// The review's report on `changes`, as text to append to the result (empty for none).
    pub(crate) async fn diagnose(&self, changes: &[FileChange]) -> String {
        match &self.review {
            Some(review) => review.diagnose(changes).await.unwrap_or_default(),
            None => String::new(),
        }
    }

    /// Tells the review that `path` was read as `text`.
    pub(crate) fn opened(&self, path: &std::path::Path, text: &str) {
        if let Some(review) = &self.review {
            review.opened(path, text);
        }
    }
}

/// The note a result carries when the formatter changed the file.
#[cfg(feature = "fs")]
pub(crate) const FORMATTED_NOTE: &str =
    "The project's formatter then reformatted the file; the diff shows its final content.";

/// The `lsp` tool over `manager`, named as the model calls it. A host offers it only when a
/// server is configured for some language of the Location.
#[cfg(feature = "lsp")]
pub fn lsp_tools(
    env: &ToolEnv,
    manager: Arc<tackle_lsp::LspManager>,
) -> Vec<(&'static str, AnyTool)> {
    vec![(ToolName::LSP.as_str(), lsp::tool(env, manager))]
}

/// The file tools, named as the model calls them: `read`, `write`, `edit`, `multiedit`,
/// `notebook_edit`, `apply_patch` and `list`.
#[cfg(feature = "fs")]
pub fn file_tools(env: &ToolEnv) -> Vec<(&'static str, AnyTool)> {
    vec![
        (ToolName::READ.as_str(), read::tool(env)),
        (ToolName::WRITE.as_str(), write::tool(env)),
        (ToolName::EDIT.as_str(), edit::edit_tool(env)),
        (ToolName::MULTIEDIT.as_str(), edit::multiedit_tool(env)),
        (ToolName::NOTEBOOK_EDIT.as_str(), notebook_edit::tool(env)),
        (ToolName::APPLY_PATCH.as_str(), apply_patch::tool(env)),
        (ToolName::LIST.as_str(), list::tool(env)),
    ]
}

/// The search tools, named as the model calls them: `grep` and `glob`.
#[cfg(feature = "search")]
pub fn search_tools(env: &ToolEnv) -> Vec<(&'static str, AnyTool)> {
    vec![
        (ToolName::GREP.as_str(), grep::tool(env)),
        (ToolName::GLOB.as_str(), glob::tool(env)),
    ]
}

/// The shell tool, named as the model calls it: `bash`.
#[cfg(feature = "shell")]
pub fn shell_tools(env: &ToolEnv) -> Vec<(&'static str, AnyTool)> {
    vec![(ToolName::BASH.as_str(), bash::tool(env))]
}

/// The agent tools, named as the model calls them: `todowrite` and `todoread`, and `question`
/// when the host can put questions to the user through `asker`.
///
/// The todo list persists in the environment's session state; without one, the two todo tools
/// returned by one call share an in-memory list per session.
#[cfg(feature = "agent")]
pub fn agent_tools(
    env: &ToolEnv,
    asker: Option<Arc<dyn QuestionAsker>>,
) -> Vec<(&'static str, AnyTool)> {
    let (todowrite, todoread) = todo::tools(env);
    let mut tools = vec![
        (ToolName::TODOWRITE.as_str(), todowrite),
        (ToolName::TODOREAD.as_str(), todoread),
    ];
    if let Some(asker) = asker {
        tools.push((ToolName::QUESTION.as_str(), question::tool(env, asker)));
    }
    tools
}

/// The skill tool, named as the model calls it: `skill`, over the skills in `catalog` (found
/// with [`discover_skills`]). Its description lists them.
#[cfg(feature = "agent")]
pub fn skill_tools(env: &ToolEnv, catalog: SkillCatalog) -> Vec<(&'static str, AnyTool)> {
    vec![(ToolName::SKILL.as_str(), skill::tool(env, catalog))]
}

/// The web tools, named as the model calls them: `webfetch`, and `websearch` and `codesearch`
/// when `search` configures a provider (see [`WebSearchConfig::from_env`]); both are offered to
/// the same model providers.
#[cfg(feature = "web")]
pub fn web_tools(env: &ToolEnv, search: Option<WebSearchConfig>) -> Vec<(&'static str, AnyTool)> {
    let mut tools = vec![(ToolName::WEBFETCH.as_str(), webfetch::tool(env))];
    if let Some(config) = search {
        tools.push((
            ToolName::CODESEARCH.as_str(),
            codesearch::tool(env, config.clone()),
        ));
        tools.push((ToolName::WEBSEARCH.as_str(), websearch::tool(env, config)));
    }
    tools
}

/// The task tool, named as the model calls it: `task`. It runs the subagents in `subagents` that
/// a caller under `caller_rules` may start (mode `Subagent`, `task` not denied) through `runner`;
/// its description lists them. A host without a runner does not call this, so `task` is not
/// advertised.
#[cfg(feature = "agent")]
pub fn task_tools(
    env: &ToolEnv,
    runner: Arc<dyn SubagentRunner>,
    subagents: Vec<Agent>,
    caller_rules: Ruleset,
) -> Vec<(&'static str, AnyTool)> {
    vec![(
        ToolName::TASK.as_str(),
        task::tool(env, runner, subagents, caller_rules),
    )]
}

/// The projection every built-in uses: the model reads its output's `output` field, and the
/// `mimeType`/`dataBase64` media when the output carries one (read, webfetch).
pub(crate) fn project_output<I>(
    _input: &I,
    output: &serde_json::Value,
) -> Vec<tackle_core::Content> {
    let mut content = vec![tackle_core::Content::text(
        output["output"].as_str().unwrap_or_default().to_owned(),
    )];
    if let (Some(mime), Some(data)) = (output["mimeType"].as_str(), output["dataBase64"].as_str()) {
        content.push(tackle_core::Content::media(mime, data));
    }
    content
}

#[cfg(any(feature = "fs", feature = "web"))]
/// A byte count for people: `512 B`, `3.2 KiB`, `20.0 MiB`.
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(any(feature = "fs", feature = "search", feature = "shell", feature = "lsp"))]
/// A model-facing failure from any displayable error.
pub(crate) fn failure(error: impl fmt::Display) -> ToolFailure {
    ToolFailure::new(error.to_string())
}
