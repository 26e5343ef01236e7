//! What this machine can enforce, probed once: the Landlock ABI, seccomp, and unprivileged user
//! namespaces.

use std::sync::OnceLock;

/// The sandbox features the kernel offers to this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version; 0 when Landlock is missing or disabled.
    pub landlock_abi: u32,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether an unprivileged process can create user, PID and mount namespaces.
    pub user_namespaces: bool,
    /// Whether paths can be bound read-only in those namespaces (protecting `.git/hooks`).
    pub read_only_binds: bool,
    /// Why a feature is missing, for `tackle config check`.
    pub notes: Vec<String>,
}

/// The variable that makes the probe report nothing available, to test the fallback.
pub const SIMULATE_NONE_ENV: &str = "TACKLE_SANDBOX_SIMULATE_NONE";

impl Support {
    /// The probe's result, computed on first use.
    pub fn get() -> &'static Support {
        static SUPPORT: OnceLock<Support> = OnceLock::new();
        SUPPORT.get_or_init(|| {
            if std::env::var_os(SIMULATE_NONE_ENV).is_some_and(|v| !v.is_empty()) {
                return Support::none(format!("{SIMULATE_NONE_ENV} is set"));
            }
            probe()
        })
    }

    /// What the kernel offers without forking a probe: Landlock and seccomp, with user
    /// namespaces left unknown (false). Cheap enough for every start-up.
    pub fn kernel() -> &'static Support {
        static KERNEL: OnceLock<Support> = OnceLock::new();
        KERNEL.get_or_init(|| {
            if std::env::var_os(SIMULATE_NONE_ENV).is_some_and(|v| !v.is_empty()) {
                return Support::none(format!("{SIMULATE_NONE_ENV} is set"));
            }
            kernel_probe()
        })
    }

    /// Nothing available, for the reason given.
    pub fn none(reason: String) -> Support {
        Support {
            landlock_abi: 0,
            seccomp: false,
            user_namespaces: false,
            read_only_binds: false,
            notes: vec![reason],
        }
    }

    /// Whether filesystem rules can be enforced (Landlock, with seccomp for the network).
    pub fn filesystem(&self) -> bool {
        self.landlock_abi >= 1 && self.seccomp
    }

    /// Whether TCP connections can be limited to one port (Landlock ABI 4).
    pub fn tcp_rules(&self) -> bool {
        self.landlock_abi >= 4
    }

    /// One line naming the active backends, such as `landlock (ABI 7) + seccomp + namespaces`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.landlock_abi > 0 {
            parts.push(format!("landlock (ABI {})", self.landlock_abi));
        }
        if self.seccomp {
            parts.push("seccomp".to_owned());
        }
        if self.user_namespaces {
            parts.push("user+PID+mount namespaces".to_owned());
        }
        if parts.is_empty() {
            "none".to_owned()
        } else {
            parts.join(" + ")
        }
    }
}

#[cfg(target_os = "linux")]
fn probe() -> Support {
    let mut support = kernel_probe();
    // A directory of our own, bound read-only onto itself in the probe's namespace.
    let dir = std::env::temp_dir().join(format!("tackle-probe-{}", std::process::id()));
    let bind = std::fs::create_dir_all(&dir)
        .ok()
        .and_then(|()| crate::sandboxes::bind(&dir, true));
    let with_binds = match bind {
        Some(bind) => crate::child::probe_namespaces(vec![bind]),
        None => Err(std::io::Error::other("no directory to bind")),
    };
    let _ = std::fs::remove_dir(&dir);
    match with_binds {
        Ok(()) => {
            support.user_namespaces = true;
            support.read_only_binds = true;
        }
        Err(bind_error) => match crate::child::probe_namespaces(Vec::new()) {
            Ok(()) => {
                support.user_namespaces = true;
                support.notes.push(format!(
                    "read-only binds are refused ({bind_error}); `.git/hooks`, `.git/config` \
                     and `.tackle/` stay writable"
                ));
            }
            Err(error) => support.notes.push(format!(
                "unprivileged user namespaces are refused ({error}); a call's processes are \
                 then found by an environment marker"
            )),
        },
    }
    support
}

#[cfg(target_os = "linux")]
fn kernel_probe() -> Support {
    let mut notes = Vec::new();
    let landlock_abi = crate::child::landlock_abi();
    if landlock_abi == 0 {
        notes.push(
            "Landlock is not enabled in this kernel (Linux 5.13 or later with `lsm=landlock`)"
                .to_owned(),
        );
    }
    let seccomp = crate::child::seccomp_available();
    if !seccomp {
        notes.push("seccomp filters cannot be installed".to_owned());
    }
    Support {
        landlock_abi,
        seccomp,
        user_namespaces: false,
        read_only_binds: false,
        notes,
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Support {
    kernel_probe()
}

#[cfg(not(target_os = "linux"))]
fn kernel_probe() -> Support {
    Support::none("the sandbox needs Linux (Landlock and seccomp)".to_owned())
}
