//! Which files a tool may show the content of: those whose `read` would be allowed at once.
//!
//! `read` asks the `read` permission on a file's real name ([`read_ask`]). A tool that shows
//! content it found itself (grep's matching lines, the lsp tool's lines) asks nobody per file:
//! it leaves out every file whose `read` a rule denies or would ask about, and says how many.
//! The decision is the gate's, the same one `read` gets, so the two can never disagree.

use std::path::Path;

use tackle_core::Context;
use tackle_core::names::Permission;

use super::ToolEnv;
use crate::gate::Ask;
#[cfg(any(feature = "search", feature = "lsp"))]
use crate::gate::GatePermissionJudgment;

/// The question `read` asks before showing the file named `name` (its display name).
#[cfg(any(feature = "fs", feature = "lsp"))]
pub(crate) fn read_ask(name: &str) -> Ask {
    Ask::new(Permission::READ.as_str(), [name])
}

/// Decides, for one call, which files may be shown without asking.
#[cfg(any(feature = "search", feature = "lsp"))]
#[derive(Clone, Debug)]
pub(crate) struct Readable {
    /// The `read` permission's rules, picked out once for the call.
    judgment: GatePermissionJudgment,
    env: ToolEnv,
    cx: Context,
}

#[cfg(any(feature = "search", feature = "lsp"))]
impl Readable {
    /// The decision for the call in `cx`, under its agent's rules and the approvals saved now.
    pub(crate) fn new(env: &ToolEnv, cx: &Context) -> Self {
        Self {
            judgment: env
                .gate
                .judgment(cx)
                .of_permission(Permission::READ.as_str()),
            env: env.clone(),
            cx: cx.clone(),
        }
    }

    /// Whether the content of the existing file `path` may be shown: its `read` would be
    /// allowed at once. A path that cannot be resolved is not shown. Blocking.
    /// Another session's saved output is never shown.
    #[cfg(feature = "lsp")]
    pub(crate) fn shows(&self, path: &Path) -> bool {
        std::fs::canonicalize(path).is_ok_and(|real| self.shows_real(&real))
    }

    /// Like [`shows`](Self::shows), for a file a walk found: one that is not itself a symlink is
    /// resolved through its directory's real path, which `dirs` keeps, so the files of one
    /// directory cost one path lookup between them.
    #[cfg(feature = "search")]
    pub(crate) fn shows_found(&self, dirs: &mut RealDirs, path: &Path, is_link: bool) -> bool {
        let real = if is_link {
            std::fs::canonicalize(path).ok()
        } else {
            dirs.real(path)
        };
        real.is_some_and(|real| self.shows_real(&real))
    }

    /// Like [`shows_found`](Self::shows_found), for a file whose path is already real (an
    /// index lists only trees without symlinks, below the canonical root): nothing to resolve.
    #[cfg(feature = "search")]
    pub(crate) fn shows_real_path(&self, real: &Path) -> bool {
        self.shows_real(real)
    }

    /// Like [`shows_real_path`](Self::shows_real_path), for the file at `real` that an index
    /// lists at `relative` below the Location root (the caller checked
    /// [`LocationFs::names_below`](crate::fs::LocationFs::names_below) for the index's base):
    /// its name is `relative` itself, with no path to take apart.
    #[cfg(feature = "search")]
    pub(crate) fn shows_listed(&self, real: &Path, relative: &Path) -> bool {
        match crate::fs::LocationFs::listed_name(relative) {
            Some(name) => !self.env.foreign_output(&self.cx, real) && self.judgment.allows(name),
            None => self.shows_real(real),
        }
    }

    /// Whether the names of files an index lists below `base` are their paths below it.
    #[cfg(feature = "search")]
    pub(crate) fn names_below(&self, base: &Path) -> bool {
        self.env.fs.names_below(base)
    }

    /// The question is [`read_ask`]'s, decided without building it: one name, no allocation
    /// for a name in normal form.
    fn shows_real(&self, real: &Path) -> bool {
        !self.env.foreign_output(&self.cx, real)
            && self
                .env
                .fs
                .with_name_of_real(real, |name| self.judgment.allows(name))
    }
}

/// The real path of the directory a walker thread saw last.
#[cfg(feature = "search")]
#[derive(Debug, Default)]
pub(crate) struct RealDirs {
    last: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

#[cfg(feature = "search")]
impl RealDirs {
    /// The real path of `path`, a file that is not a symlink: its directory's real path and its
    /// name. None when the directory cannot be resolved.
    fn real(&mut self, path: &Path) -> Option<std::path::PathBuf> {
        let (dir, name) = (path.parent()?, path.file_name()?);
        if self.last.as_ref().is_none_or(|(seen, _)| seen != dir) {
            let real = std::fs::canonicalize(dir).ok()?;
            self.last = Some((dir.to_path_buf(), real));
        }
        self.last.as_ref().map(|(_, real)| real.join(name))
    }
}

#[cfg(test)]
mod tests;
