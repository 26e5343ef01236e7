//! The host's sandbox service: each agent's policy, resolved for one call into a [`Prepared`]
//! that every spawner applies to its command.

use std::collections::HashMap;
use std::ffi::{CString, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::SandboxError;
use crate::policy::{Mode, Network, Policy, Unavailable, expand};
use crate::proxy::{AllowList, Blocked, NetworkProxy, proxy_env};
use crate::support::Support;

/// How long a session temp directory may stay unchanged before a host's start-up sweep removes
/// it.
pub const TEMP_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 60 * 60);

/// The cache directories created when missing, so a first `npm install` or `cargo build` can
/// fill them.
const CREATED_IF_MISSING: [&str; 4] = [
    "~/.npm",
    "~/.cache",
    "$CARGO_HOME/registry",
    "$CARGO_HOME/git",
];

/// An allow-list and its deny-list, naming one proxy.
type ListKey = (Vec<String>, Vec<String>);

/// A call context whose sandbox is kept: agent, session, Location root.
type CacheKey = (String, String, PathBuf);

/// A file's identity and type: a rule made for one file does not hold for its replacement.
type FileId = (u64, u64, u32);

/// A prepared sandbox and the identities of the files it was built on.
type Kept = (Vec<Option<FileId>>, Prepared);

/// How many prepared sandboxes are kept; the cache starts over past it.
const MAX_CACHED: usize = 64;

/// The identity of each path (or `None` where nothing is).
fn fingerprint<'p>(paths: impl Iterator<Item = &'p PathBuf>) -> Vec<Option<FileId>> {
    use std::os::unix::fs::MetadataExt as _;
    paths
        .map(|path| {
            std::fs::metadata(path)
                .ok()
                .map(|m| (m.dev(), m.ino(), m.mode() & libc::S_IFMT))
        })
        .collect()
}

/// Every agent's sandbox policy, and the per-session temp directories.
#[derive(Debug)]
pub struct Sandboxes {
    default: Policy,
    agents: HashMap<String, Policy>,
    temp_root: PathBuf,
    /// Probed on first use: the user-namespace probe forks, and a host that runs no command
    /// need not pay for it.
    support: std::sync::OnceLock<Support>,
    /// The allow-list proxies started so far, one per list.
    proxies: std::sync::Mutex<HashMap<ListKey, Arc<NetworkProxy>>>,
    /// Sandboxes prepared before, with the identities of the files they were built on.
    prepared: std::sync::Mutex<HashMap<CacheKey, Kept>>,
}

/// One call's request for a sandbox.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The agent making the call.
    pub agent: &'a str,
    /// The session, whose temp directory the command gets.
    pub session: &'a str,
    /// The Location's root, writable under `workspace-write`.
    pub root: &'a Path,
    /// True when a person allowed this call to run without the sandbox.
    pub unsandboxed: bool,
}

impl Sandboxes {
    /// The service for `default` and the agents' own policies; session temp directories go
    /// under `temp_root`.
    pub fn new(default: Policy, agents: HashMap<String, Policy>, temp_root: PathBuf) -> Self {
        Self {
            default,
            agents,
            temp_root,
            support: std::sync::OnceLock::new(),
            proxies: std::sync::Mutex::default(),
            prepared: std::sync::Mutex::default(),
        }
    }

    /// [`Sandboxes::new`] with the platform's support given rather than probed.
    pub fn with_support(
        default: Policy,
        agents: HashMap<String, Policy>,
        temp_root: PathBuf,
        support: Support,
    ) -> Self {
        let sandboxes = Self::new(default, agents, temp_root);
        let _ = sandboxes.support.set(support);
        sandboxes
    }

    /// What the platform offers.
    pub fn support(&self) -> &Support {
        self.support.get_or_init(|| Support::get().clone())
    }

    /// The policy of `agent`.
    pub fn policy(&self, agent: &str) -> &Policy {
        self.agents.get(agent).unwrap_or(&self.default)
    }

    /// The session's temp directory (exported as `TMPDIR`), created when missing.
    pub fn session_temp(&self, session: &str) -> std::io::Result<PathBuf> {
        self.session_dir(session)?.canonicalize()
    }

    /// [`Sandboxes::session_temp`], not canonicalized.
    fn session_dir(&self, session: &str) -> std::io::Result<PathBuf> {
        let hash = session_hash(session);
        let dir = self.temp_root.join(format!("s-{hash}"));
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&self.temp_root, std::fs::Permissions::from_mode(0o700))?;
            }
        }
        Ok(dir)
    }

    /// Removes the session temp directories (`s-<hash>` under the temp root) in which nothing
    /// changed for `max_age`, except those of sessions this process prepared a sandbox for:
    /// sessions that never said they ended leave no temp files forever. Nothing else under the
    /// root is touched, and a symlink named like one is left alone.
    pub fn sweep(&self, max_age: std::time::Duration) {
        let Ok(entries) = std::fs::read_dir(&self.temp_root) else {
            return;
        };
        let live: Vec<String> = self
            .prepared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .map(|(_, session, _)| format!("s-{}", session_hash(session)))
            .collect();
        let now = std::time::SystemTime::now();
        let changed = |path: &Path| {
            std::fs::symlink_metadata(path)
                .and_then(|m| m.modified())
                .ok()
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_session = name.len() == 18
                && name.starts_with("s-")
                && name[2..].bytes().all(|b| b.is_ascii_hexdigit());
            if !is_session || live.contains(&name) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let dir = entry.path();
            let newest = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|child| changed(&child.path()))
                .chain(changed(&dir))
                .max();
            if newest.is_some_and(|t| now.duration_since(t).is_ok_and(|age| age > max_age)) {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }

    /// Removes the session's temp directory.
    pub fn end_session(&self, session: &str) {
        let dir = self.temp_root.join(format!("s-{}", session_hash(session)));
        let _ = std::fs::remove_dir_all(dir);
    }

    /// What a command of this call runs under: the refusal when the sandbox cannot be applied
    /// and the policy says to refuse.
    pub fn prepare(&self, request: &Request<'_>) -> Result<Prepared, SandboxError> {
        let policy = self.policy(request.agent);
        if policy.mode == Mode::Off || request.unsandboxed {
            return Ok(Prepared::unsandboxed(Status::Off {
                by_person: request.unsandboxed && policy.mode != Mode::Off,
            }));
        }
        if let Some(reason) = policy.unavailable_on(self.support()) {
            return match policy.when_unavailable {
                Unavailable::Refuse => Err(SandboxError::Unavailable { reason }),
                Unavailable::Run => Ok(Prepared::unsandboxed(Status::Unavailable { reason })),
            };
        }
        self.build(policy, request)
    }

    #[cfg(target_os = "linux")]
    fn build(&self, policy: &Policy, request: &Request<'_>) -> Result<Prepared, SandboxError> {
        use crate::child::{ChildPlan, Namespaces};
        use crate::rules::{FsRules, Sockets};

        let temp = self
            .session_dir(request.session)
            .map_err(|e| SandboxError::TempDir(e.to_string()))?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let cargo_home = std::env::var_os("CARGO_HOME").map(PathBuf::from);
        let resolve = |p: &Path| expand(p, home.as_deref(), cargo_home.as_deref(), request.root);
        let root = request.root.to_path_buf();
        let mut writable = vec![temp.clone()];
        // Bound onto themselves in order: `.git` (writable, but a mount point cannot be moved
        // aside and replaced), then what git runs or obeys, read-only.
        let mut binds: Vec<(PathBuf, bool)> = Vec::new();
        if policy.mode == Mode::WorkspaceWrite {
            writable.push(root.clone());
            let dot_git = root.join(".git");
            let linked = git_dirs(&root);
            if dot_git.is_dir() {
                binds.push((dot_git.clone(), false));
            } else if dot_git.is_file() {
                // A linked worktree's pointer to its git directory.
                binds.push((dot_git.clone(), true));
            }
            writable.extend(linked.iter().cloned());
            for dir in std::iter::once(dot_git).chain(linked) {
                binds.push((dir.join("hooks"), true));
                binds.push((dir.join("config"), true));
            }
            binds.push((root.join(".tackle"), true));
            writable.extend(policy.writable_roots.iter().map(|p| resolve(p)));
            let created: Vec<PathBuf> = CREATED_IF_MISSING
                .iter()
                .map(|c| resolve(Path::new(c)))
                .collect();
            for cache in &policy.caches {
                let path = resolve(cache);
                if created.contains(&path)
                    && !path.exists()
                    && path.parent().is_some_and(Path::exists)
                {
                    let _ = std::fs::create_dir(&path);
                }
                writable.push(path);
            }
        }
        let deny_read: Vec<PathBuf> = policy.deny_read.iter().map(|p| resolve(p)).collect();
        // The same call context over the same files gives the same sandbox: reuse it.
        let key = (
            request.agent.to_owned(),
            request.session.to_owned(),
            root.clone(),
        );
        let fingerprint = fingerprint(
            writable
                .iter()
                .chain(binds.iter().map(|(path, _)| path))
                .chain(&deny_read),
        );
        if let Some(prepared) = self.cached(&key, &fingerprint) {
            return Ok(prepared);
        }
        let temp = temp
            .canonicalize()
            .map_err(|e| SandboxError::TempDir(e.to_string()))?;
        let writable: Vec<PathBuf> = writable
            .into_iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        let mut proxy_mark = None;
        let mut env: Vec<(OsString, OsString)> = vec![
            ("TMPDIR".into(), temp.clone().into_os_string()),
            ("TACKLE_SANDBOX".into(), policy.mode.as_str().into()),
        ];
        let (tcp_connect, sockets): (Option<Vec<u16>>, Option<Sockets>) = match &policy.network {
            Network::On => (None, None),
            Network::Off => {
                env.push(("TACKLE_SANDBOX_NETWORK".into(), "off".into()));
                (Some(Vec::new()), Some(Sockets::UnixOnly))
            }
            Network::Allow { allow, deny } => {
                let proxy = self.proxy(allow, deny)?;
                for (key, value) in proxy_env(proxy.addr()) {
                    env.push((key.into(), value.into()));
                }
                env.push(("TACKLE_SANDBOX_NETWORK".into(), "allow-list".into()));
                let port = proxy.port();
                proxy_mark = Some((proxy.position(), proxy));
                (Some(vec![port]), Some(Sockets::UnixAndTcp))
            }
        };
        let ruleset = crate::rules::ruleset(&FsRules {
            abi: self.support().landlock_abi,
            writable: &writable,
            deny_read: &deny_read,
            tcp_connect: tcp_connect.as_deref(),
        })?;
        let filter = sockets.map(crate::rules::filter).transpose()?;
        let contained = policy.namespaces && self.support().user_namespaces;
        let namespaces = contained.then(|| {
            Namespaces::of_current_user(
                binds
                    .iter()
                    .filter(|_| self.support().read_only_binds)
                    .filter(|(path, _)| path.exists())
                    .filter_map(|(path, read_only)| bind(path, *read_only))
                    .collect(),
            )
        });
        let plan = ChildPlan {
            namespaces,
            ruleset: Some(ruleset),
            filter,
        };
        let mut notes = Vec::new();
        let wrapper = match (policy.backend, &policy.network) {
            (crate::policy::Backend::Landlock, _) => None,
            (crate::policy::Backend::Bubblewrap, Network::Allow { .. }) => {
                notes.push(
                    "the network allow-list needs the Landlock backend, so bubblewrap is not used"
                        .to_owned(),
                );
                None
            }
            (crate::policy::Backend::Bubblewrap, network) => match crate::bwrap::find() {
                Ok(found) => Some(Arc::new((
                    found.program.clone(),
                    crate::bwrap::arguments(
                        found,
                        &crate::bwrap::Layout {
                            writable: &writable,
                            binds: &binds,
                            deny_read: &deny_read,
                            network_off: *network == Network::Off,
                        },
                    ),
                ))),
                Err(reason) => {
                    notes.push(format!(
                        "bubblewrap is configured but {reason}; Landlock is used"
                    ));
                    None
                }
            },
        };
        let wrapped = wrapper.is_some();
        let prepared = Prepared {
            env,
            notes,
            wrapper,
            plan: Some(Arc::new(plan)),
            status: Status::Sandboxed {
                mode: policy.mode,
                network: policy.network.describe(),
                contained: contained || wrapped,
            },
            writable,
            read_only: binds
                .iter()
                .filter(|(path, read_only)| *read_only && path.exists())
                .filter_map(|(path, _)| path.canonicalize().ok())
                .collect(),
            proxy: proxy_mark,
        };
        let mut cache = self
            .prepared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, (fingerprint, prepared.clone()));
        Ok(prepared)
    }

    /// The sandbox prepared before for `key`, if the files it was built on are the same ones;
    /// its proxy log position is moved to now.
    fn cached(&self, key: &CacheKey, fingerprint: &[Option<FileId>]) -> Option<Prepared> {
        let cache = self
            .prepared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (seen, prepared) = cache.get(key)?;
        if seen.as_slice() != fingerprint {
            return None;
        }
        let mut prepared = prepared.clone();
        if let Some((position, proxy)) = &mut prepared.proxy {
            *position = proxy.position();
        }
        Some(prepared)
    }

    /// The running proxy of this allow-list, started on first use (on the current tokio
    /// runtime).
    fn proxy(&self, allow: &[String], deny: &[String]) -> Result<Arc<NetworkProxy>, SandboxError> {
        let key = (allow.to_vec(), deny.to_vec());
        let mut proxies = self
            .proxies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(proxy) = proxies.get(&key) {
            return Ok(proxy.clone());
        }
        let list = AllowList::parse(allow, deny).map_err(|error| SandboxError::Unavailable {
            reason: format!("the network allow-list is invalid: {error}"),
        })?;
        let proxy =
            Arc::new(
                NetworkProxy::start(list).map_err(|error| SandboxError::Unavailable {
                    reason: format!("the network proxy could not start: {error}"),
                })?,
            );
        proxies.insert(key, proxy.clone());
        Ok(proxy)
    }

    #[cfg(not(target_os = "linux"))]
    fn build(&self, _policy: &Policy, _request: &Request<'_>) -> Result<Prepared, SandboxError> {
        Err(SandboxError::Unavailable {
            reason: "the sandbox needs Linux".to_owned(),
        })
    }
}

/// The sandbox of processes that serve no single call (formatters, MCP and language servers):
/// one agent's policy, prepared anew for each start.
#[derive(Clone, Debug)]
pub struct Confine {
    sandboxes: Arc<Sandboxes>,
    agent: String,
    session: String,
    root: PathBuf,
}

impl Confine {
    /// Processes run under `agent`'s policy in the Location at `root`, with the temp directory
    /// of `session`.
    pub fn new(
        sandboxes: Arc<Sandboxes>,
        agent: impl Into<String>,
        session: impl Into<String>,
        root: PathBuf,
    ) -> Self {
        Self {
            sandboxes,
            agent: agent.into(),
            session: session.into(),
            root,
        }
    }

    /// Installs the sandbox in `command` (see [`Prepared::apply`]).
    pub fn apply(&self, command: &mut std::process::Command) -> Result<Prepared, SandboxError> {
        let prepared = self.sandboxes.prepare(&Request {
            agent: &self.agent,
            session: &self.session,
            root: &self.root,
            unsandboxed: false,
        })?;
        prepared.apply(command);
        Ok(prepared)
    }
}

/// A short, stable name for a session's directory.
fn session_hash(session: &str) -> String {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    session.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// The git directories of a linked worktree (its `.git` file's `gitdir:` and that directory's
/// common directory), which live outside the Location.
fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(root.join(".git")) else {
        return Vec::new();
    };
    let Some(gitdir) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
        return Vec::new();
    };
    let gitdir = root.join(gitdir.trim());
    let mut dirs = vec![gitdir.clone()];
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        dirs.push(gitdir.join(common.trim()));
    }
    dirs.into_iter()
        .filter_map(|d| d.canonicalize().ok())
        .collect()
}

/// The bind of `path` onto itself, with the mount flags a read-only remount must keep (a user
/// namespace may not drop the flags of the mount it copies).
#[cfg(target_os = "linux")]
pub(crate) fn bind(path: &Path, read_only: bool) -> Option<crate::child::Bind> {
    use std::os::unix::ffi::OsStrExt as _;
    let c_path = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct from a valid C string.
    #[allow(unsafe_code)]
    let flags = unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut stat) != 0 {
            return None;
        }
        stat.f_flag as libc::c_ulong
    };
    const KEPT: [(libc::c_ulong, libc::c_ulong); 6] = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    let keep = KEPT
        .iter()
        .filter(|(st, _)| flags & st != 0)
        .fold(0, |acc, (_, ms)| acc | ms);
    Some(crate::child::Bind {
        path: c_path,
        keep,
        read_only,
    })
}

/// How a call's commands run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Under the sandbox.
    Sandboxed {
        /// The mode.
        mode: Mode,
        /// The network setting's name.
        network: &'static str,
        /// Whether the processes run in their own namespaces.
        contained: bool,
    },
    /// Without it: the policy is `off`, or a person allowed this call to run unsandboxed.
    Off {
        /// True when a person allowed it for this call.
        by_person: bool,
    },
    /// Without it, because the platform cannot apply it.
    Unavailable {
        /// Why.
        reason: String,
    },
}

/// One call's sandbox, ready to apply to its commands.
#[derive(Clone, Debug)]
pub struct Prepared {
    env: Vec<(OsString, OsString)>,
    #[cfg(target_os = "linux")]
    plan: Option<Arc<crate::child::ChildPlan>>,
    #[cfg(not(target_os = "linux"))]
    plan: Option<Arc<()>>,
    status: Status,
    /// What the commands should know about how the sandbox is applied (a configured backend
    /// that is not used), for the footer.
    notes: Vec<String>,
    /// `bwrap` and its arguments, when shell commands run through bubblewrap.
    wrapper: Option<Arc<(PathBuf, Vec<OsString>)>>,
    writable: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    /// The allow-list proxy and its log position when the call's sandbox was prepared.
    proxy: Option<(u64, Arc<NetworkProxy>)>,
}

impl Prepared {
    /// No sandbox, for the reason in `status`.
    pub fn unsandboxed(status: Status) -> Self {
        Self {
            env: Vec::new(),
            notes: Vec::new(),
            wrapper: None,
            plan: None,
            status,
            writable: Vec::new(),
            read_only: Vec::new(),
            proxy: None,
        }
    }

    /// What the allow-list proxy refused since this sandbox was prepared (another call's
    /// refusals in the same time included).
    pub fn blocked(&self) -> Vec<Blocked> {
        self.proxy
            .as_ref()
            .map(|(since, proxy)| proxy.blocked_since(*since))
            .unwrap_or_default()
    }

    /// How the commands run.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The places the commands may write (canonical), empty without a sandbox.
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// What the sandbox refused a command that ran under it in `cwd`, read from its output and
    /// end (see [`crate::denial`]); empty without a sandbox.
    pub fn denials(
        &self,
        cwd: &Path,
        output: &str,
        exit_code: Option<i32>,
        signal: Option<i32>,
    ) -> Vec<crate::denial::Denial> {
        use crate::denial::{Evidence, NetworkRule, Rules, diagnose};
        let Status::Sandboxed { network, .. } = &self.status else {
            return Vec::new();
        };
        let blocked = self.blocked();
        let rules = Rules {
            writable: &self.writable,
            read_only: &self.read_only,
            network: match *network {
                "off" => NetworkRule::Off,
                "allow-list" => NetworkRule::AllowList,
                _ => NetworkRule::On,
            },
            cwd,
        };
        diagnose(
            &rules,
            &Evidence {
                output,
                exit_code,
                signal,
                blocked: &blocked,
            },
        )
    }

    /// The places inside the writable ones that are read-only (canonical).
    pub fn read_only(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// Whether every process a command starts ends with it (its own PID namespace).
    pub fn contains_processes(&self) -> bool {
        matches!(
            self.status,
            Status::Sandboxed {
                contained: true,
                ..
            }
        )
    }

    /// The variables the commands get on top of their environment (`TMPDIR`, the proxy's).
    pub fn env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// The line a result ends with when the command ran without the sandbox it should have had.
    pub fn footer(&self) -> Option<String> {
        if !self.notes.is_empty() {
            return Some(format!("sandbox: {}", self.notes.join("; ")));
        }
        match &self.status {
            Status::Unavailable { reason } => Some(format!(
                "sandbox: unavailable, this command ran unsandboxed ({reason})"
            )),
            Status::Off { by_person: true } => {
                Some("sandbox: off for this command, as allowed".to_owned())
            }
            _ => None,
        }
    }

    /// The command that runs the shell `program`: through `bwrap` under the bubblewrap
    /// backend, else `program` itself. Apply the sandbox to it with [`Prepared::apply_shell`].
    pub fn shell_command(&self, program: &Path) -> std::process::Command {
        match &self.wrapper {
            Some(wrapper) => {
                let (bwrap, args) = &**wrapper;
                let mut command = std::process::Command::new(bwrap);
                command.args(args).arg(program);
                command
            }
            None => std::process::Command::new(program),
        }
    }

    /// [`Prepared::apply`] for a command made by [`Prepared::shell_command`]: under bubblewrap
    /// only the environment (bwrap does the rest, and Landlock would forbid its mounts).
    pub fn apply_shell(&self, command: &mut std::process::Command) {
        if self.wrapper.is_some() {
            for (key, value) in &self.env {
                command.env(key, value);
            }
        } else {
            self.apply(command);
        }
    }

    /// Sets the environment and installs the sandbox in `command`, applied in the child
    /// before `exec`. Call it after every other `pre_exec` hook that must run outside it.
    pub fn apply(&self, command: &mut std::process::Command) {
        for (key, value) in &self.env {
            command.env(key, value);
        }
        #[cfg(target_os = "linux")]
        if let Some(plan) = &self.plan
            && !plan.is_empty()
        {
            use std::os::unix::process::CommandExt as _;
            let plan = plan.clone();
            // SAFETY: the hook only makes system calls on memory the plan owns (see `child`).
            #[allow(unsafe_code)]
            unsafe {
                command.pre_exec(move || plan.apply());
            }
        }
    }
}
