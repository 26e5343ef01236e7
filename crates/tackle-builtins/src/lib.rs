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

#![deny(missing_docs)]

pub mod fs;
pub mod gate;
pub mod text;
pub mod tools;

pub use fs::{FsError, LocationFs, PathGuard, ReadTracker, Resolved, StaleRead, WriteReport};
pub use gate::{Ask, Gate};
pub use tools::{
    Answer, AskFuture, CustomCatalog, CustomManifest, CustomWarning, FileToolOptions, Question,
    QuestionAsker, QuestionOption, RunFuture, SkillCatalog, SubagentReport, SubagentRequest,
    SubagentRunner, SubagentStatus, ToolEnv, TrustMode, WebSearchConfig, agent_tools, custom_tools,
    discover_custom_tools, discover_skills, file_tools, search_tools, shell_tools, skill_tools,
    task_tools, web_tools,
};
