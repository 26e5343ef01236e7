//! What a session may read besides its tools' results, and what a person may start: the full
//! output behind each truncated result and the session's spooled command output, as
//! `tackle://` resources ([`SavedOutputs`]), and the skills `skill` offers, as prompts
//! ([`SkillPrompts`]). `tackle serve` offers them over MCP.
//!
//! URIs: `tackle://output/<id>` for a saved output (its content hash, as in the truncation
//! marker's path) and `tackle://spool/<file>` for a file of the session's spool directory.
//! A session lists and reads only its own: a saved output its results named, a spool file in
//! its own directory; anything else reads as not found.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tackle_builtins::tools::{Skill, managed_output_key, session_dir_name, skill_text};
use tackle_core::SessionState;
use tackle_mcp::{PromptEntry, PromptSource, ResourceBytes, SessionResource, SessionResources};

use crate::policy::outputs::indexed_outputs;

/// The scheme and authority of a saved output's URI.
const OUTPUT_URI: &str = "tackle://output/";
/// The scheme and authority of a spool file's URI.
const SPOOL_URI: &str = "tackle://spool/";

/// Each session's saved outputs and spool files, as MCP resources. Cheap to clone.
#[derive(Clone)]
pub struct SavedOutputs {
    /// The managed output directory (files named by content hash).
    managed: PathBuf,
    /// The spool directory (a directory per session).
    spool: PathBuf,
    state: Arc<dyn SessionState>,
}

impl SavedOutputs {
    pub(crate) fn new(managed: PathBuf, spool: PathBuf, state: Arc<dyn SessionState>) -> Self {
        Self {
            managed,
            spool,
            state,
        }
    }

    /// The session's saved outputs, newest first.
    fn outputs(&self, session: &str) -> impl Iterator<Item = SessionResource> {
        let listed = indexed_outputs(&*self.state, session);
        listed.into_iter().rev().map(|output| SessionResource {
            uri: format!("{OUTPUT_URI}{}", output.id),
            name: format!("{} output of {}", output.tool, output.call),
            description: Some(format!(
                "The full output of call `{}` (`{}`), whose result the model read truncated.",
                output.call, output.tool
            )),
            mime_type: None,
            size: Some(output.bytes),
        })
    }

    /// The session's spool files, by name.
    fn spool_files(&self, session: &str) -> Vec<SessionResource> {
        let dir = self.spool.join(session_dir_name(session));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut files: Vec<SessionResource> = entries
            .flatten()
            .filter_map(|entry| {
                let meta = entry.metadata().ok().filter(|m| m.is_file())?;
                let name = entry.file_name().into_string().ok()?;
                Some(SessionResource {
                    uri: format!("{SPOOL_URI}{name}"),
                    name: format!("spooled output {name}"),
                    description: Some(
                        "The whole output of a long command or background job of this session, \
                         spooled to disk."
                            .to_owned(),
                    ),
                    mime_type: None,
                    size: Some(meta.len()),
                })
            })
            .collect();
        files.sort_by(|a, b| a.uri.cmp(&b.uri));
        files
    }

    /// The file behind `uri` when `session` owns it.
    fn owned_file(&self, session: &str, uri: &str) -> Option<PathBuf> {
        if let Some(id) = uri.strip_prefix(OUTPUT_URI) {
            let hash = !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit());
            let owned = matches!(
                self.state.get(session, &managed_output_key(id)),
                Ok(Some(_))
            );
            return (hash && owned).then(|| self.managed.join(id));
        }
        let name = uri.strip_prefix(SPOOL_URI)?;
        let plain = !name.is_empty() && !name.contains('/') && name != "." && name != "..";
        plain.then(|| self.spool.join(session_dir_name(session)).join(name))
    }
}

impl SessionResources for SavedOutputs {
    fn list(&self, session: &str) -> Vec<SessionResource> {
        self.outputs(session)
            .chain(self.spool_files(session))
            .collect()
    }

    fn read(&self, session: &str, uri: &str, max_bytes: u64) -> Option<ResourceBytes> {
        read_bounded(&self.owned_file(session, uri)?, max_bytes)
    }
}

/// The first `max_bytes` of the regular file at `path` (never through a symlink) and its size.
fn read_bounded(path: &Path, max_bytes: u64) -> Option<ResourceBytes> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok().filter(|m| m.is_file())?;
    let mut bytes = Vec::new();
    file.take(max_bytes).read_to_end(&mut bytes).ok()?;
    Some(ResourceBytes {
        total: meta.len().max(bytes.len() as u64),
        bytes,
        mime_type: None,
    })
}

/// The skills an agent is offered, as prompts: each skill's name and description, and as its
/// message the text `skill` gives the model when it loads it.
pub struct SkillPrompts {
    root: PathBuf,
    skills: Vec<Skill>,
}

impl SkillPrompts {
    pub(crate) fn new(root: PathBuf, skills: Vec<Skill>) -> Self {
        Self { root, skills }
    }
}

impl PromptSource for SkillPrompts {
    fn list(&self) -> Vec<PromptEntry> {
        self.skills
            .iter()
            .map(|skill| PromptEntry {
                name: skill.name.clone(),
                description: skill.description.clone(),
            })
            .collect()
    }

    fn get(&self, name: &str) -> Option<String> {
        let skill = self.skills.iter().find(|skill| skill.name == name)?;
        Some(skill_text(&self.root, skill))
    }
}
