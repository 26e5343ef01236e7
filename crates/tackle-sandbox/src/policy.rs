//! What a sandbox allows: the mode, the network, and the places a command may write.

use std::path::{Path, PathBuf};

/// How much of the machine a sandboxed command may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Reads everywhere (except denied paths); writes only to the session's temp directory.
    ReadOnly,
    /// Reads everywhere (except denied paths); writes to the Location, the extra writable roots,
    /// the session's temp directory and the tool caches.
    WorkspaceWrite,
    /// No sandbox.
    Off,
}

impl Mode {
    /// The mode's name in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::WorkspaceWrite => "workspace-write",
            Mode::Off => "off",
        }
    }
}

/// What a sandboxed command may reach on the network.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Network {
    /// Everything.
    On,
    /// Nothing but Unix sockets.
    Off,
    /// Only the hosts of the allow-list, through tackle's proxy.
    Allow {
        /// Host patterns allowed (`example.com`, `*.example.com`, `host:PORT`).
        allow: Vec<String>,
        /// Host patterns refused even when allowed.
        deny: Vec<String>,
    },
}

impl Network {
    /// The network setting's name in messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Network::On => "on",
            Network::Off => "off",
            Network::Allow { .. } => "allow-list",
        }
    }
}

/// What to do when the platform cannot apply the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unavailable {
    /// Run unsandboxed, and say so in every result.
    Run,
    /// Refuse to run commands.
    Refuse,
}

/// One agent's sandbox policy, with the paths it names still unresolved (`~` expanded when the
/// policy is applied).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Policy {
    /// The mode.
    pub mode: Mode,
    /// The network.
    pub network: Network,
    /// Extra places a `workspace-write` command may write.
    pub writable_roots: Vec<PathBuf>,
    /// Tool caches a `workspace-write` command may write (`~/.cargo/registry`, `~/.npm`).
    pub caches: Vec<PathBuf>,
    /// Places no sandboxed command may read.
    pub deny_read: Vec<PathBuf>,
    /// What happens when the sandbox cannot be applied.
    pub when_unavailable: Unavailable,
    /// Whether commands run in their own user, PID and mount namespaces where the platform
    /// allows it (so nothing a call starts outlives it, and protected paths are read-only).
    pub namespaces: bool,
    /// Which backend confines shell commands.
    pub backend: Backend,
}

/// What confines a shell command (bash, its jobs, custom tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// Landlock and seccomp, applied in tackle's own child, with tackle's namespaces.
    #[default]
    Landlock,
    /// The `bwrap` program (bubblewrap) when it is installed and works here: a read-only root
    /// with the writable places bound in, its own PID (and, with the network off, network)
    /// namespace. Other processes (hooks, formatters, servers) keep the Landlock backend.
    Bubblewrap,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            mode: Mode::WorkspaceWrite,
            network: Network::On,
            writable_roots: Vec::new(),
            caches: default_caches(),
            deny_read: Vec::new(),
            when_unavailable: Unavailable::Run,
            namespaces: true,
            backend: Backend::Landlock,
        }
    }
}

impl Policy {
    /// Why this policy cannot be enforced on a machine with `support`; `None` when it can (or
    /// asks for no sandbox).
    pub fn unavailable_on(&self, support: &crate::Support) -> Option<String> {
        if self.mode == Mode::Off {
            return None;
        }
        if !support.filesystem() {
            return Some(format!(
                "this machine has no usable Landlock and seccomp ({})",
                support.notes.join("; ")
            ));
        }
        if matches!(self.network, Network::Allow { .. }) && !support.tcp_rules() {
            return Some(format!(
                "the network allow-list needs Landlock ABI 4 (Linux 6.7); this kernel has ABI {}",
                support.landlock_abi
            ));
        }
        None
    }
}

/// The tool caches writable by default, as the configuration would name them.
pub fn default_caches() -> Vec<PathBuf> {
    [
        "$CARGO_HOME/registry",
        "$CARGO_HOME/git",
        "$CARGO_HOME/.package-cache",
        "$CARGO_HOME/.package-cache-mutate",
        "$CARGO_HOME/.global-cache",
        "~/.npm",
        "~/.cache",
        "~/.yarn",
        "~/.m2",
        "~/.gradle",
        "~/go/pkg/mod",
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// `path` with a leading `~` replaced by `home` and `$CARGO_HOME` by the cargo home (the
/// variable, else `~/.cargo`); relative paths are taken against `base`.
pub fn expand(path: &Path, home: Option<&Path>, cargo_home: Option<&Path>, base: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    let cargo_default = home.map(|h| h.join(".cargo"));
    let cargo = cargo_home.map(Path::to_path_buf).or(cargo_default);
    let expanded = if let Some(rest) = text.strip_prefix("$CARGO_HOME") {
        match cargo {
            Some(cargo) => cargo.join(rest.trim_start_matches('/')),
            None => return base.join(path),
        }
    } else if text == "~" {
        match home {
            Some(home) => home.to_path_buf(),
            None => return base.join(path),
        }
    } else if let Some(rest) = text.strip_prefix("~/") {
        match home {
            Some(home) => home.join(rest),
            None => return base.join(path),
        }
    } else {
        path.to_path_buf()
    };
    if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_replaces_home_and_cargo_home_and_anchors_relative_paths() {
        let home = Path::new("/home/u");
        let base = Path::new("/work");
        assert_eq!(
            expand(Path::new("~/.npm"), Some(home), None, base),
            Path::new("/home/u/.npm")
        );
        assert_eq!(
            expand(Path::new("$CARGO_HOME/registry"), Some(home), None, base),
            Path::new("/home/u/.cargo/registry")
        );
        assert_eq!(
            expand(
                Path::new("$CARGO_HOME/git"),
                Some(home),
                Some(Path::new("/opt/cargo")),
                base
            ),
            Path::new("/opt/cargo/git")
        );
        assert_eq!(
            expand(Path::new("scratch"), Some(home), None, base),
            Path::new("/work/scratch")
        );
        assert_eq!(
            expand(Path::new("/abs"), None, None, base),
            Path::new("/abs")
        );
    }
}
