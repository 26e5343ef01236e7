//! Which configured MCP servers this tackle starts: never itself serving the same root, and
//! none at all when it was itself started as an MCP server.
//!
//! A project's `opencode.json` that plugs tackle into OpenCode names `tackle --root . serve` as
//! an MCP server. Read by tackle, that entry would make every command start a tackle that
//! starts another. So a stdio server whose program is this executable (found on `PATH` like
//! the shell would, compared by file identity) and that serves this root is skipped with a
//! warning; one behind a wrapper (`sh -c`, `npx`) is caught by the nesting marker instead:
//! tackle-mcp starts no servers from a process that is itself a child server.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::config::{McpServer, McpTransport};

/// The servers of `servers` this process may start, with one warning per server left out.
pub(crate) fn startable<'a>(
    servers: &'a [McpServer],
    root: &Path,
) -> (Vec<&'a McpServer>, Vec<String>) {
    let depth = tackle_mcp::nesting_depth();
    let nested = !tackle_mcp::may_start_servers(depth);
    let this = std::env::current_exe().ok();
    let cwd = std::env::current_dir().ok();
    let mut kept = Vec::new();
    let mut warnings = Vec::new();
    let mut refused = Vec::new();
    for server in servers {
        let McpTransport::Stdio { command, args, env } = &server.transport else {
            kept.push(server);
            continue;
        };
        if nested {
            refused.push(format!("`{}`", server.name));
            continue;
        }
        let path = env
            .iter()
            .rev()
            .find(|(key, _)| key == "PATH")
            .map(|(_, value)| value.clone().into())
            .or_else(|| std::env::var_os("PATH"));
        let is_this = this
            .as_deref()
            .zip(resolve_program(command, path.as_deref(), cwd.as_deref()))
            .is_some_and(|(this, program)| same_file(this, &program));
        if is_this && serves_root(args, cwd.as_deref(), root) {
            warnings.push(format!(
                "skipped MCP server `{}` (from {}): it starts this tackle serving the same root \
                 ({}), which would serve tackle's own tools back to it and start itself again",
                server.name,
                server.file.display(),
                root.display()
            ));
            continue;
        }
        kept.push(server);
    }
    if !refused.is_empty() {
        warnings.push(format!(
            "not starting MCP server{} {}: this tackle was started as an MCP server by another \
             ({}={depth}), and nested MCP servers are not started",
            if refused.len() == 1 { "" } else { "s" },
            refused.join(", "),
            tackle_mcp::DEPTH_ENV,
        ));
    }
    (kept, warnings)
}

/// `command` as the file it runs: itself when it has a `/` (relative to `cwd`), else the first
/// executable match on `path`.
fn resolve_program(command: &str, path: Option<&OsStr>, cwd: Option<&Path>) -> Option<PathBuf> {
    let command = Path::new(command);
    if command.components().count() > 1 {
        let full = match cwd {
            Some(cwd) => cwd.join(command),
            None => command.to_path_buf(),
        };
        return full.is_file().then_some(full);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(command))
        .find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
        })
}

/// True when both paths name one file: the same device and inode, after symlinks.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// True when a tackle run with `args` from `cwd` would serve `root`: its subcommand is `serve`
/// and its `--root` (default: the working directory) is `root`.
fn serves_root(args: &[String], cwd: Option<&Path>, root: &Path) -> bool {
    let mut served = None;
    let mut serve = false;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--root" {
            served = words.next().map(PathBuf::from);
        } else if let Some(value) = word.strip_prefix("--root=") {
            served = Some(PathBuf::from(value));
        } else if word == "serve" {
            serve = true;
        }
    }
    if !serve {
        return false;
    }
    let served = match (served, cwd) {
        (Some(dir), Some(cwd)) => cwd.join(dir),
        (Some(dir), None) => dir,
        (None, Some(cwd)) => cwd.to_path_buf(),
        (None, None) => return false,
    };
    match (std::fs::canonicalize(served), std::fs::canonicalize(root)) {
        (Ok(served), Ok(root)) => served == root,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_served_root_is_the_root_flag_or_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        let other = tempfile::tempdir().unwrap();
        assert!(serves_root(&words("--root . serve"), Some(root), root));
        assert!(serves_root(&words("serve --root=."), Some(root), root));
        assert!(serves_root(&words("serve"), Some(root), root));
        assert!(serves_root(&words("--root sub/.. serve"), Some(root), root));
        assert!(!serves_root(&words("--root sub serve"), Some(root), root));
        assert!(!serves_root(&words("serve"), Some(other.path()), root));
        assert!(!serves_root(&words("--root . tools"), Some(root), root));
    }

    #[test]
    fn programs_resolve_through_path_and_symlinks_to_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let this = std::env::current_exe().unwrap();
        std::os::unix::fs::symlink(&this, bin.join("tackle")).unwrap();
        let found = resolve_program("tackle", Some(bin.as_os_str()), None).unwrap();
        assert!(same_file(&found, &this));
        assert!(resolve_program("tackle", Some(dir.path().as_os_str()), None).is_none());
        assert!(!same_file(Path::new("/bin/sh"), &this));
    }
}
