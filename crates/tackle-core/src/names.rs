//! The catalog of names: the built-in tools, the edit family, and the permissions they are
//! gated by. Every crate spells a built-in's or a permission's name through this module, so a
//! rename happens once and a typo does not compile.
//!
//! The names live in core, below every crate that spells one: the built-ins register under
//! [`ToolName`]s, the permission engine matches rules against [`Permission`]s (the edit family
//! shares one, and presets name permissions no tool carries, such as `external_directory`),
//! settlement's truncation hint points at `read` and `grep`, and hosts assemble tool sets.

use std::fmt;

/// The name of a built-in tool, as the model calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolName(&'static str);

impl ToolName {
    /// `read`: a file, a directory listing or media.
    pub const READ: Self = Self("read");
    /// `write`: a whole file.
    pub const WRITE: Self = Self("write");
    /// `edit`: one string replacement.
    pub const EDIT: Self = Self("edit");
    /// `multiedit`: several replacements in one file, all or nothing.
    pub const MULTIEDIT: Self = Self("multiedit");
    /// `apply_patch`: a patch over several files.
    pub const APPLY_PATCH: Self = Self("apply_patch");
    /// `notebook_edit`: one cell of a Jupyter notebook.
    pub const NOTEBOOK_EDIT: Self = Self("notebook_edit");
    /// `list`: a directory tree.
    pub const LIST: Self = Self("list");
    /// `grep`: a content search.
    pub const GREP: Self = Self("grep");
    /// `glob`: a file-name search.
    pub const GLOB: Self = Self("glob");
    /// `bash`: a shell command.
    pub const BASH: Self = Self("bash");
    /// `webfetch`: one URL.
    pub const WEBFETCH: Self = Self("webfetch");
    /// `websearch`: a web search.
    pub const WEBSEARCH: Self = Self("websearch");
    /// `codesearch`: code examples and documentation from the web search provider.
    pub const CODESEARCH: Self = Self("codesearch");
    /// `todowrite`: the session's todo list, replaced.
    pub const TODOWRITE: Self = Self("todowrite");
    /// `todoread`: the session's todo list, read.
    pub const TODOREAD: Self = Self("todoread");
    /// `task`: a subagent.
    pub const TASK: Self = Self("task");
    /// `question`: questions to the user.
    pub const QUESTION: Self = Self("question");
    /// `skill`: a skill's instructions.
    pub const SKILL: Self = Self("skill");
    /// `batch`: several calls at once.
    pub const BATCH: Self = Self("batch");
    /// Asks the project's language servers (definitions, references, hover, symbols, calls).
    pub const LSP: Self = Self("lsp");
    /// The new output of a background job.
    pub const BASH_OUTPUT: Self = Self("bash_output");
    /// Writes to a background job's stdin.
    pub const BASH_INPUT: Self = Self("bash_input");
    /// Stops a background job.
    pub const BASH_KILL: Self = Self("bash_kill");

    /// The tools that change files and share the [`Permission::EDIT`] permission.
    pub const EDIT_FAMILY: [Self; 5] = [
        Self::EDIT,
        Self::WRITE,
        Self::MULTIEDIT,
        Self::APPLY_PATCH,
        Self::NOTEBOOK_EDIT,
    ];

    /// Built-ins that reach outside the Location and this machine's state.
    pub const OPEN_WORLD: [Self; 4] = [
        Self::BASH,
        Self::WEBFETCH,
        Self::WEBSEARCH,
        Self::CODESEARCH,
    ];

    /// The name as the model calls it.
    pub const fn as_str(self) -> &'static str {
        self.0
    }

    /// True when `name` is in the edit family.
    pub fn is_edit_family(name: &str) -> bool {
        Self::EDIT_FAMILY.iter().any(|tool| tool.0 == name)
    }

    /// The permission this tool is gated by: the edit family's is `edit`, every other tool's is
    /// its own name.
    pub fn permission(self) -> Permission {
        if Self::is_edit_family(self.0) {
            Permission::EDIT
        } else {
            Permission(self.0)
        }
    }
}

/// The name of a permission, as rules in the configuration spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Permission(&'static str);

impl Permission {
    /// Reading a file.
    pub const READ: Self = Self("read");
    /// Changing a file: the whole edit family.
    pub const EDIT: Self = Self("edit");
    /// Listing a directory.
    pub const LIST: Self = Self("list");
    /// Searching contents.
    pub const GREP: Self = Self("grep");
    /// Searching file names.
    pub const GLOB: Self = Self("glob");
    /// Running a shell command.
    pub const BASH: Self = Self("bash");
    /// Fetching a URL.
    pub const WEBFETCH: Self = Self("webfetch");
    /// Searching the web.
    pub const WEBSEARCH: Self = Self("websearch");
    /// Searching code examples and documentation on the web.
    pub const CODESEARCH: Self = Self("codesearch");
    /// Starting a subagent; the pattern is the subagent's name.
    pub const TASK: Self = Self("task");
    /// Asking the user questions.
    pub const QUESTION: Self = Self("question");
    /// Writing the todo list.
    pub const TODOWRITE: Self = Self("todowrite");
    /// Entering plan mode.
    pub const PLAN_ENTER: Self = Self("plan_enter");
    /// Leaving plan mode.
    pub const PLAN_EXIT: Self = Self("plan_exit");
    /// Loading a skill; the pattern is the skill's name.
    pub const SKILL: Self = Self("skill");
    /// Asking the language servers; the pattern is the file.
    pub const LSP: Self = Self("lsp");
    /// A path outside the Location.
    pub const EXTERNAL_DIRECTORY: Self = Self("external_directory");
    /// The third identical call in a row.
    pub const DOOM_LOOP: Self = Self("doom_loop");
    /// The first use of a project's custom tool manifest.
    pub const CUSTOM_TOOL_TRUST: Self = Self("custom_tool_trust");
    /// The first run of a command hook from the project's configuration.
    pub const HOOK_TRUST: Self = Self("hook_trust");
    /// A fetch of a private or loopback address.
    pub const WEBFETCH_PRIVATE: Self = Self("webfetch_private");
    /// Running one command without the sandbox; the pattern is the command line.
    pub const BASH_UNSANDBOXED: Self = Self("bash_unsandboxed");

    /// Permissions no tool carries, that presets ask for on their own: trust in project code,
    /// repeated calls, private addresses, commands outside the sandbox.
    pub const GUARDS: [Self; 5] = [
        Self::DOOM_LOOP,
        Self::CUSTOM_TOOL_TRUST,
        Self::HOOK_TRUST,
        Self::WEBFETCH_PRIVATE,
        Self::BASH_UNSANDBOXED,
    ];

    /// The name as rules spell it.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

macro_rules! name_traits {
    ($type:ty) => {
        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }

        impl AsRef<str> for $type {
            fn as_ref(&self) -> &str {
                self.0
            }
        }

        impl From<$type> for String {
            fn from(name: $type) -> String {
                name.0.to_owned()
            }
        }

        impl PartialEq<str> for $type {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $type {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<$type> for &str {
            fn eq(&self, other: &$type) -> bool {
                *self == other.0
            }
        }
    };
}

name_traits!(ToolName);
name_traits!(Permission);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edit_family_shares_the_edit_permission() {
        for tool in ToolName::EDIT_FAMILY {
            assert_eq!(tool.permission(), Permission::EDIT);
        }
        assert_eq!(ToolName::READ.permission(), Permission::READ);
        assert_eq!(ToolName::BASH.permission().as_str(), "bash");
        assert!(!ToolName::is_edit_family("read"));
    }
}
