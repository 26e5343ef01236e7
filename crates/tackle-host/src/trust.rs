//! Workspace trust: what a project's own configuration may do before the person trusts it.
//!
//! Everything read from the Location (`.tackle/config.json`, `opencode.json`, the custom tool
//! manifests in `.tackle/tools/`) came with the repository. What in it only narrows (deny and
//! ask rules, disabled tools, limits, agents' restrictions) applies at once. What runs a
//! command (hooks, custom tools, MCP servers, language server and formatter commands,
//! `shell.path`) or widens permissions (allow rules, re-enabled tools, `overrides`, MCP tools)
//! is [`Held`]: it applies only once the person trusts this project's configuration, by its
//! [`ContentHash`], so any change to it asks again. A trust decision is kept in the user's data
//! directory ([`TrustStore`]), never in the repository. Some things are never granted, trusted
//! or not: a project rule cannot allow a `*_trust` permission, nor overrule a deny of the user's
//! (that part is evaluated by `tackle_permission::Ruleset::explain`).
//!
//! The classification itself is done where each key is read (`config/read.rs`), through
//! [`Reader::hold`](crate::config) calls, so every key has one place that says what it is.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The blake3 hash of a project's configuration: its config file and its custom tool
/// manifests, each by path and content.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContentHash(String);

impl ContentHash {
    /// The hash of `files`, each a path and the hex hash of its bytes, in the order given.
    fn of(files: &[HashedFile]) -> Self {
        let mut hasher = blake3::Hasher::new();
        for file in files {
            hasher.update(file.path.to_string_lossy().as_bytes());
            hasher.update(b"\0");
            hasher.update(file.hash.as_bytes());
            hasher.update(b"\n");
        }
        Self(hasher.finalize().to_hex().to_string())
    }

    /// The hash in hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Short enough to read, long enough to tell two versions apart.
        f.write_str(&self.0[..16.min(self.0.len())])
    }
}

/// One file of a project's configuration and the blake3 hash of the bytes that were read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashedFile {
    /// The file.
    pub path: PathBuf,
    /// The hex blake3 hash of its bytes.
    pub hash: String,
}

impl HashedFile {
    pub(crate) fn new(path: PathBuf, bytes: &[u8]) -> Self {
        Self {
            path,
            hash: blake3::hash(bytes).to_hex().to_string(),
        }
    }
}

/// Why a setting of the project's configuration waits for trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldReason {
    /// It runs a command: a hook, a custom tool, an MCP server, a language server or formatter
    /// command, a shell.
    RunsCommand,
    /// It widens what may run without a question: an allow rule, a re-enabled tool, a built-in
    /// replaced, an MCP server's tools.
    WidensPermissions,
    /// A project rule may never do it, trusted or not: allow a `*_trust` permission.
    NeverGranted,
    /// It sends what tackle does off this machine: a telemetry collector.
    SendsData,
}

impl HeldReason {
    /// Why, as `config check` and `tackle trust` say it.
    pub fn explain(self) -> &'static str {
        match self {
            HeldReason::RunsCommand => "runs a command",
            HeldReason::WidensPermissions => "widens permissions",
            HeldReason::NeverGranted => "a project rule can never grant a trust permission",
            HeldReason::SendsData => "sends telemetry off this machine",
        }
    }

    fn name(self) -> &'static str {
        match self {
            HeldReason::RunsCommand => "runs_command",
            HeldReason::WidensPermissions => "widens_permissions",
            HeldReason::NeverGranted => "never_granted",
            HeldReason::SendsData => "sends_data",
        }
    }
}

/// One setting of the project's configuration that waits for trust (or is never granted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The file it is in.
    pub file: PathBuf,
    /// Its key path, such as `hooks.before[0]` or `permission.read`; empty for a whole file.
    pub key: String,
    /// What it would do, such as `runs sh -c id`.
    pub what: String,
    /// Why it waits.
    pub reason: HeldReason,
}

impl fmt::Display for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {} ({})", self.what, self.reason.explain())
    }
}

impl Held {
    /// The entry as `config check --json` lists it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.file.display().to_string(),
            "key": self.key,
            "what": self.what,
            "reason": self.reason.name(),
            "why": self.reason.explain(),
        })
    }
}

/// The trust state of one project's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectTrust {
    /// The Location's real path, the key of the trust record.
    pub root: PathBuf,
    /// The files hashed.
    pub files: Vec<HashedFile>,
    /// Their hash.
    pub hash: ContentHash,
    /// True when the person trusted exactly this content.
    pub trusted: bool,
    /// Every setting that waits for trust, or that is never granted.
    pub held: Vec<Held>,
}

impl ProjectTrust {
    pub(crate) fn new(root: PathBuf, mut files: Vec<HashedFile>, store: &TrustStore) -> Self {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let hash = ContentHash::of(&files);
        let trusted = store.is_trusted(&root, &hash);
        Self {
            root,
            files,
            hash,
            trusted,
            held: Vec::new(),
        }
    }

    /// What trusting would enable: the held settings a trust decision applies.
    pub fn enables(&self) -> impl Iterator<Item = &Held> {
        self.held
            .iter()
            .filter(|held| held.reason != HeldReason::NeverGranted)
    }

    /// True when settings wait for the person's trust: the content is not trusted and trusting
    /// it would change something.
    pub fn needs_trust(&self) -> bool {
        !self.trusted && self.enables().next().is_some()
    }

    /// What is ignored now, and why: everything held while untrusted, and what is never granted.
    pub fn ignored(&self) -> impl Iterator<Item = &Held> {
        self.held
            .iter()
            .filter(|held| !self.trusted || held.reason == HeldReason::NeverGranted)
    }

    /// True when the project manifest at `path` with content `hash` may run: the configuration
    /// is trusted and the manifest is the one that was hashed.
    pub fn allows_manifest(&self, path: &Path, hash: &str) -> bool {
        self.trusted
            && self
                .files
                .iter()
                .any(|file| file.path == path && file.hash == hash)
    }

    /// The sentence the model and the log read when untrusted settings were ignored: what
    /// happened, and what only the user can do about it.
    pub fn notice(&self) -> String {
        let count = self.enables().count();
        let mut keys: Vec<String> = self
            .enables()
            .take(5)
            .map(|held| match held.key.as_str() {
                "" => file_name(&held.file),
                key => format!("`{key}`"),
            })
            .collect();
        if count > keys.len() {
            keys.push(format!("and {} more", count - keys.len()));
        }
        format!(
            "Note: this project's configuration is not trusted, so its settings that run \
             commands or widen permissions were ignored: {}. Its deny and ask rules still \
             apply. Only the user can trust it, by running `tackle trust --root {}`; tell them \
             if a tool you need is missing.",
            keys.join(", "),
            self.root.display()
        )
    }

    /// What trusting enables, one line each, for `tackle trust` and the interactive prompt.
    pub fn describe(&self) -> Vec<String> {
        self.enables().map(|held| format!("  {held}")).collect()
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Where trust decisions are kept: `trusted-projects.json` in the user's data directory, a map
/// from a Location's real path to the hash of the configuration the person trusted.
#[derive(Clone, Debug)]
pub struct TrustStore {
    file: Option<PathBuf>,
}

/// The file name of the trust record in the data directory.
const TRUST_FILE: &str = "trusted-projects.json";

/// The largest trust record read; a larger one is treated as trusting nothing.
const MAX_TRUST_FILE: u64 = 4 * 1024 * 1024;

impl TrustStore {
    /// The record in `data_dir`.
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self {
            file: Some(data_dir.join(TRUST_FILE)),
        }
    }

    /// A store that trusts nothing and records nothing.
    pub fn nothing() -> Self {
        Self { file: None }
    }

    fn read(&self) -> BTreeMap<String, String> {
        let Some(file) = &self.file else {
            return BTreeMap::new();
        };
        let too_big = std::fs::metadata(file).is_ok_and(|m| m.len() > MAX_TRUST_FILE);
        if too_big {
            return BTreeMap::new();
        }
        std::fs::read(file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// True when the person trusted exactly `hash` for the Location at `root`.
    pub fn is_trusted(&self, root: &Path, hash: &ContentHash) -> bool {
        self.read()
            .get(&root.to_string_lossy().into_owned())
            .is_some_and(|trusted| trusted == hash.as_str())
    }

    /// Records that the person trusts `hash` for `root` (replacing an earlier decision for it).
    pub fn record(&self, root: &Path, hash: &ContentHash) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Err(std::io::Error::other("this host keeps no trust record"));
        };
        let mut record = self.read();
        record.insert(
            root.to_string_lossy().into_owned(),
            hash.as_str().to_owned(),
        );
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_vec_pretty(&record).map_err(std::io::Error::other)?;
        // A temp file renamed into place: a crash never leaves half a record.
        let temp = file.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temp, text)?;
        std::fs::rename(&temp, file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_not_trusted_any_more() {
        let data = tempfile::tempdir().unwrap();
        let store = TrustStore::in_data_dir(data.path());
        let root = PathBuf::from("/ws");
        let first = vec![HashedFile::new(root.join("a.json"), b"{}")];
        let trust = ProjectTrust::new(root.clone(), first.clone(), &store);
        assert!(!trust.trusted);
        store.record(&root, &trust.hash).unwrap();
        assert!(ProjectTrust::new(root.clone(), first, &store).trusted);
        let changed = vec![HashedFile::new(root.join("a.json"), b"{ }")];
        assert!(!ProjectTrust::new(root.clone(), changed, &store).trusted);
        // Another Location with the same content is not trusted either.
        let other = vec![HashedFile::new(root.join("a.json"), b"{}")];
        assert!(!ProjectTrust::new(PathBuf::from("/other"), other, &store).trusted);
    }
}
