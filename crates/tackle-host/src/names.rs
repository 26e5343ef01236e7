//! The tool names the host refers to. The built-ins register under these names; the host needs
//! them to assemble tool sets and classify tools.

/// The batch tool.
pub const BATCH: &str = "batch";
/// The shell tool.
pub const BASH: &str = "bash";
/// Built-ins that reach outside the Location and this machine's state: the shell and the web.
pub const OPEN_WORLD_BUILTINS: &[&str] = &[BASH, "webfetch", "websearch"];
