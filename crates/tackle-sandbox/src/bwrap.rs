//! The bubblewrap backend: the argument list that makes `bwrap` run a shell command under a
//! policy, and the probe that says whether `bwrap` works here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What `bwrap` needs to know of one call's sandbox.
pub(crate) struct Layout<'a> {
    /// Places bound writable.
    pub(crate) writable: &'a [PathBuf],
    /// Places bound onto themselves after those: read-only when true.
    pub(crate) binds: &'a [(PathBuf, bool)],
    /// Places hidden.
    pub(crate) deny_read: &'a [PathBuf],
    /// Whether the command gets a network namespace of its own (no network).
    pub(crate) network_off: bool,
}

/// Where `bwrap` is and whether it can mount a fresh `/proc` here, probed once.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub(crate) program: PathBuf,
    pub(crate) proc_mount: bool,
}

/// `bwrap` on `PATH`, when it runs a command here; `Err` says why not.
pub(crate) fn find() -> Result<&'static Found, &'static str> {
    static FOUND: OnceLock<Result<Found, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let program = std::env::split_paths(&path)
                .map(|dir| dir.join("bwrap"))
                .find(|candidate| candidate.is_file())
                .ok_or_else(|| "`bwrap` is not installed".to_owned())?;
            let runs = |proc_mount: bool| {
                let mut command = std::process::Command::new(&program);
                command.args(["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid"]);
                if proc_mount {
                    command.args(["--proc", "/proc"]);
                }
                command
                    .args(["--", "/bin/true"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if runs(true) {
                Ok(Found {
                    program,
                    proc_mount: true,
                })
            } else if runs(false) {
                Ok(Found {
                    program,
                    proc_mount: false,
                })
            } else {
                Err("`bwrap` cannot create its namespaces here".to_owned())
            }
        })
        .as_ref()
        .map_err(String::as_str)
}

/// The arguments before the shell: `bwrap <these> -- <shell> -c <command>`.
pub(crate) fn arguments(found: &Found, layout: &Layout<'_>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |parts: &[&std::ffi::OsStr]| args.extend(parts.iter().map(|p| p.to_os_string()));
    push(&[
        "--die-with-parent".as_ref(),
        "--unshare-pid".as_ref(),
        "--ro-bind".as_ref(),
        "/".as_ref(),
        "/".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
    ]);
    if found.proc_mount {
        push(&["--proc".as_ref(), "/proc".as_ref()]);
    }
    if layout.network_off {
        push(&["--unshare-net".as_ref()]);
    }
    for path in layout.writable {
        push(&["--bind".as_ref(), path.as_os_str(), path.as_os_str()]);
    }
    for (path, read_only) in layout.binds.iter().filter(|(p, _)| p.exists()) {
        let how: &std::ffi::OsStr = if *read_only {
            "--ro-bind".as_ref()
        } else {
            "--bind".as_ref()
        };
        push(&[how, path.as_os_str(), path.as_os_str()]);
    }
    for path in layout.deny_read.iter().filter(|p| p.exists()) {
        if path.is_dir() {
            push(&["--tmpfs".as_ref(), path.as_os_str()]);
        } else {
            push(&[
                "--ro-bind".as_ref(),
                Path::new("/dev/null").as_os_str(),
                path.as_os_str(),
            ]);
        }
    }
    args.push("--".into());
    args
}
