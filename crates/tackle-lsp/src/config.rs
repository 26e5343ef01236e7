//! Which servers exist: the built-in defaults, what the configuration changes, and which are found.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One language server: how to start it and which files it serves.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// Its name (`pyright`, or the configuration's key).
    pub name: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// File extensions it serves, with their dot (`.py`).
    pub extensions: Vec<String>,
    /// Files whose directory is a project root for it, nearest first wins.
    pub root_markers: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// `initializationOptions`, also the answer to `workspace/configuration`.
    pub initialization: Option<Value>,
    /// Named by the configuration. A built-in found on `PATH` that cannot start (a rustup proxy
    /// without its component, say) is only logged; a configured one is reported to the model.
    pub configured: bool,
}

impl ServerConfig {
    /// Whether it serves `path`, by extension.
    pub fn serves(&self, path: &Path) -> bool {
        let Some(name) = path.file_name().and_then(OsStr::to_str) else {
            return false;
        };
        self.extensions
            .iter()
            .any(|ext| name.len() > ext.len() && name.ends_with(ext.as_str()))
    }
}

fn builtin(name: &str, command: &[&str], extensions: &[&str], markers: &[&str]) -> ServerConfig {
    let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
    ServerConfig {
        name: name.to_owned(),
        command: owned(command),
        extensions: owned(extensions),
        root_markers: owned(markers),
        env: Vec::new(),
        initialization: None,
        configured: false,
    }
}

/// The servers tackle knows without configuration. Each runs only when its program is found.
pub fn builtin_servers() -> Vec<ServerConfig> {
    const PYTHON: &[&str] = &[".py", ".pyi"];
    const PYTHON_ROOTS: &[&str] = &[
        "pyproject.toml",
        "pyrightconfig.json",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
    ];
    vec![
        builtin(
            "rust-analyzer",
            &["rust-analyzer"],
            &[".rs"],
            &["Cargo.toml"],
        ),
        builtin(
            "typescript",
            &["typescript-language-server", "--stdio"],
            &[".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"],
            &["tsconfig.json", "jsconfig.json", "package.json"],
        ),
        builtin(
            "pyright",
            &["pyright-langserver", "--stdio"],
            PYTHON,
            PYTHON_ROOTS,
        ),
        builtin(
            "basedpyright",
            &["basedpyright-langserver", "--stdio"],
            PYTHON,
            PYTHON_ROOTS,
        ),
        builtin(
            "clangd",
            &["clangd"],
            &[".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx"],
            &["compile_commands.json", "compile_flags.txt", ".clangd"],
        ),
        builtin("gopls", &["gopls"], &[".go"], &["go.work", "go.mod"]),
    ]
}

/// A server entry from a configuration file (OpenCode's `lsp` shape). Fields left `None` keep
/// the built-in's value when the name is a built-in's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfiguredServer {
    /// Its name.
    pub name: String,
    /// The command, when given.
    pub command: Option<Vec<String>>,
    /// The extensions, when given.
    pub extensions: Option<Vec<String>>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// `initializationOptions`.
    pub initialization: Option<Value>,
    /// Turned off.
    pub disabled: bool,
}

/// Where a server's definition came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Built in, unchanged.
    Builtin,
    /// Built in, changed by the configuration.
    Configured,
    /// Defined by the configuration alone.
    Custom,
}

/// One server as `tackle config check` reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerStatus {
    /// The definition.
    pub config: ServerConfig,
    /// Where it came from.
    pub origin: Origin,
    /// Turned off by the configuration.
    pub disabled: bool,
    /// Where its program was found, if it was.
    pub found: Option<PathBuf>,
    /// Why it does not run, when it does not.
    pub inactive_reason: Option<String>,
}

impl ServerStatus {
    /// Whether it will be started for its files.
    pub fn active(&self) -> bool {
        self.inactive_reason.is_none()
    }
}

/// The built-ins with the configuration applied, each with whether it runs. `path_var` is the
/// `PATH` to look programs up in. When both pyright and basedpyright are found, only pyright
/// runs (they serve the same files).
pub fn server_statuses(configured: &[ConfiguredServer], path_var: &OsStr) -> Vec<ServerStatus> {
    let mut statuses: Vec<ServerStatus> = builtin_servers()
        .into_iter()
        .map(|config| ServerStatus {
            config,
            origin: Origin::Builtin,
            disabled: false,
            found: None,
            inactive_reason: None,
        })
        .collect();
    for entry in configured {
        let existing = statuses.iter_mut().find(|s| s.config.name == entry.name);
        let status = match existing {
            Some(status) => {
                status.origin = Origin::Configured;
                status.config.configured = true;
                status
            }
            None => {
                statuses.push(ServerStatus {
                    config: ServerConfig {
                        name: entry.name.clone(),
                        command: Vec::new(),
                        extensions: Vec::new(),
                        root_markers: Vec::new(),
                        env: Vec::new(),
                        initialization: None,
                        configured: true,
                    },
                    origin: Origin::Custom,
                    disabled: false,
                    found: None,
                    inactive_reason: None,
                });
                let last = statuses.len() - 1;
                &mut statuses[last]
            }
        };
        if let Some(command) = &entry.command {
            status.config.command = command.clone();
        }
        if let Some(extensions) = &entry.extensions {
            status.config.extensions = extensions
                .iter()
                .map(|e| {
                    if e.starts_with('.') {
                        e.clone()
                    } else {
                        format!(".{e}")
                    }
                })
                .collect();
        }
        status.config.env.extend(entry.env.iter().cloned());
        if entry.initialization.is_some() {
            status.config.initialization = entry.initialization.clone();
        }
        status.disabled = entry.disabled;
    }
    for status in &mut statuses {
        status.found = status
            .config
            .command
            .first()
            .and_then(|program| find_program(program, path_var));
        status.inactive_reason = if status.disabled {
            Some("disabled by the configuration".to_owned())
        } else if status.config.command.is_empty() {
            Some("no command is configured".to_owned())
        } else if status.config.extensions.is_empty() {
            Some("no extensions are configured".to_owned())
        } else if status.found.is_none() {
            Some(format!("`{}` is not on PATH", status.config.command[0]))
        } else {
            None
        };
    }
    let pyright_runs = statuses
        .iter()
        .any(|s| s.config.name == "pyright" && s.active());
    if pyright_runs
        && let Some(based) = statuses
            .iter_mut()
            .find(|s| s.config.name == "basedpyright" && s.origin == Origin::Builtin)
        && based.active()
    {
        based.inactive_reason = Some("pyright serves the same files".to_owned());
    }
    statuses
}

/// The servers that will run, from [`server_statuses`].
pub fn active_servers(configured: &[ConfiguredServer], path_var: &OsStr) -> Vec<ServerConfig> {
    server_statuses(configured, path_var)
        .into_iter()
        .filter(ServerStatus::active)
        .map(|mut status| {
            if let Some(found) = &status.found {
                status.config.command[0] = found.to_string_lossy().into_owned();
            }
            status.config
        })
        .collect()
}

/// Where `program` is: itself when it names a path, else the first executable file of that
/// name in `path_var`.
pub fn find_program(program: &str, path_var: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    // A relative entry (`.`, or the empty one, which means the current directory) would let a
    // repository's own binary stand in for a built-in server: only absolute directories count.
    std::env::split_paths(path_var)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}

/// The project root for `file`: the nearest directory from the file's up to `boundary` holding
/// one of `markers`, else `boundary`.
pub fn project_root(file: &Path, boundary: &Path, markers: &[String]) -> PathBuf {
    let mut dir = file.parent();
    while let Some(current) = dir {
        if !current.starts_with(boundary) {
            break;
        }
        if markers.iter().any(|m| current.join(m).exists()) {
            return current.to_path_buf();
        }
        if current == boundary {
            break;
        }
        dir = current.parent();
    }
    boundary.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_path_entries_never_find_a_program() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("fake-langserver");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let absolute = dir.path().as_os_str().to_owned();
        assert_eq!(find_program("fake-langserver", &absolute), Some(program));
        // The same directory named relative to where tackle runs, and the empty entry.
        let relative = pathdiff(dir.path());
        for path_var in [
            relative.as_os_str(),
            std::ffi::OsStr::new(""),
            std::ffi::OsStr::new("."),
        ] {
            assert_eq!(
                find_program("fake-langserver", path_var),
                None,
                "{path_var:?}"
            );
        }
    }

    /// `path` relative to the current directory (through `..` up to `/`).
    fn pathdiff(path: &Path) -> PathBuf {
        let cwd = std::env::current_dir().unwrap();
        let mut relative = PathBuf::new();
        for _ in cwd.components().skip(1) {
            relative.push("..");
        }
        relative.join(path.strip_prefix("/").unwrap())
    }

    fn fake_bin(dir: &Path, name: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn only_servers_found_on_path_run_and_pyright_wins_over_basedpyright() {
        let bin = tempfile::tempdir().unwrap();
        fake_bin(bin.path(), "pyright-langserver");
        fake_bin(bin.path(), "basedpyright-langserver");
        fake_bin(bin.path(), "clangd");
        let statuses = server_statuses(&[], bin.path().as_os_str());
        let active: Vec<_> = statuses
            .iter()
            .filter(|s| s.active())
            .map(|s| s.config.name.as_str())
            .collect();
        assert_eq!(active, ["pyright", "clangd"]);
        let gopls = statuses.iter().find(|s| s.config.name == "gopls").unwrap();
        assert_eq!(
            gopls.inactive_reason.as_deref(),
            Some("`gopls` is not on PATH")
        );
        let servers = active_servers(&[], bin.path().as_os_str());
        assert_eq!(
            servers[0].command[0],
            bin.path().join("pyright-langserver").to_string_lossy()
        );
    }

    #[test]
    fn configuration_disables_overrides_and_adds_servers() {
        let bin = tempfile::tempdir().unwrap();
        fake_bin(bin.path(), "clangd");
        fake_bin(bin.path(), "my-ls");
        fake_bin(bin.path(), "pyright-langserver");
        let configured = [
            ConfiguredServer {
                name: "clangd".into(),
                disabled: true,
                ..Default::default()
            },
            ConfiguredServer {
                name: "pyright".into(),
                extensions: Some(vec!["py".into()]),
                ..Default::default()
            },
            ConfiguredServer {
                name: "mine".into(),
                command: Some(vec!["my-ls".into(), "--stdio".into()]),
                extensions: Some(vec![".zz".into()]),
                ..Default::default()
            },
            ConfiguredServer {
                name: "broken".into(),
                command: Some(vec!["nothing-here".into()]),
                ..Default::default()
            },
        ];
        let statuses = server_statuses(&configured, bin.path().as_os_str());
        let find = |name: &str| statuses.iter().find(|s| s.config.name == name).unwrap();
        assert!(!find("clangd").active());
        assert_eq!(find("pyright").config.extensions, [".py"]);
        assert_eq!(find("pyright").origin, Origin::Configured);
        assert!(find("mine").active());
        assert_eq!(find("mine").origin, Origin::Custom);
        assert_eq!(
            find("broken").inactive_reason.as_deref(),
            Some("no extensions are configured")
        );
    }

    #[test]
    fn the_nearest_marked_directory_inside_the_boundary_is_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/pyproject.toml"), "").unwrap();
        let markers = vec!["pyproject.toml".to_owned()];
        assert_eq!(
            project_root(&root.join("a/b/c/x.py"), root, &markers),
            root.join("a")
        );
        assert_eq!(project_root(&root.join("x.py"), root, &markers), root);
        // A marker above the boundary is not used.
        assert_eq!(
            project_root(&root.join("a/b/c/x.py"), &root.join("a/b"), &markers),
            root.join("a/b")
        );
    }
}
