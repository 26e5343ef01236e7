//! tackle's built-in tools, and the Location filesystem service every file tool goes through.
//!
//! Built-ins are ordinary `tackle_core::Tool` values: they depend on core, the permission engine
//! and the edit engine, never on the registry. A host registers them like any other tool.
//!
//! The key decision of this crate is that *every file tool shares one filesystem service*
//! ([`fs::LocationFs`]) instead of touching `std::fs` itself. The service resolves paths
//! against the Location root, catches escapes both lexically and through symlinks, serializes
//! writers per canonical path, and commits with compare-and-swap: a write lands only if the file
//! still holds the bytes the tool planned against, through a temporary file renamed into place.
//! Bytes the call did not ask to change survive: the file mode, symlinks (written through, never
//! replaced), the byte-order mark, the line-ending style and the final newline. The [`text`]
//! module holds the pure half of that promise: detecting and restoring encodings, line endings
//! and binary content, and formatting what the read tool shows.
//!
//! A session's read tracking lives here too: a write to an existing file is refused unless the
//! session has read the file and it has not changed since, compared by content hash rather than
//! by timestamp, so there are no false alarms.
//!
//! The tools are split by cargo feature along their dependencies, all on by default: `fs`
//! (read, write, edit, multiedit, notebook_edit, apply_patch, list), `pdf` (read's PDF text:
//! pdf-extract), `search` (grep, glob: ripgrep's crates),
//! `shell` (bash and custom command tools: tree-sitter), `web` (webfetch, websearch: the HTTP
//! client, TLS, the HTML converter), `agent` (todo, task, question, skill) and `lsp` (the `lsp`
//! tool: tackle's language-server client). A host that offers only the file tools compiles none
//! of the network, parser or LSP stacks; what follows their changes (formatting, diagnostics)
//! reaches them through core's `ChangeReview` port.

#![deny(missing_docs)]

pub mod fs;
pub mod gate;
#[cfg(feature = "index")]
pub mod index;
pub mod text;
pub mod tools;

pub use fs::{FsError, LocationFs, PathGuard, ReadTracker, Resolved, StaleRead, WriteReport};
pub use gate::{Ask, Gate, refusal};
#[cfg(feature = "fs")]
pub use tools::file_tools;
#[cfg(feature = "lsp")]
pub use tools::lsp_tools;
#[cfg(feature = "search")]
pub use tools::search_tools;
#[cfg(feature = "agent")]
pub use tools::{
    Answer, AskFuture, Question, QuestionAsker, QuestionOption, RunFuture, SkillCatalog,
    SubagentReport, SubagentRequest, SubagentRunner, SubagentStatus, agent_tools, discover_skills,
    skill_tools, task_tools,
};
#[cfg(feature = "shell")]
pub use tools::{
    CustomCatalog, CustomManifest, CustomSource, CustomWarning, TrustMode, custom_tools,
    discover_custom_tools, shell_tools,
};
pub use tools::{FileIndex, FileToolOptions, IndexedFile, IndexedFiles, ToolEnv};
#[cfg(feature = "web")]
pub use tools::{WebSearchConfig, web_tools};
