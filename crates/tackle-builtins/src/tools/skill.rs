//! The skill tool: loads the instructions of a named skill, discovered from `SKILL.md` files.
//!
//! A skill is a directory holding a `SKILL.md` whose frontmatter names and describes it:
//!
//! ```text
//! ---
//! name: pdf-forms
//! description: Fill in PDF forms with the scripts in this skill.
//! ---
//! The instructions the model reads when it loads the skill.
//! ```
//!
//! [`discover_skills`] looks in `<root>/.tackle/skills/*/`, then `<home>/.config/tackle/skills/*/`,
//! then, for compatibility, `<root>/.opencode/skill/*/`, `<root>/.opencode/skills/*/` and
//! `<root>/.claude/skills/*/`. The first skill of a name wins; later ones, and files whose
//! frontmatter is broken, become warnings for the host.

use std::fmt;
use std::path::{Path, PathBuf};
use tackle_core::names::Permission;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tackle_core::{AnyTool, Context, State, Tool, ToolFailure};

use super::ToolEnv;
use crate::gate::Ask;

#[cfg(test)]
mod tests;

/// The file that defines a skill in its directory.
const SKILL_FILE: &str = "SKILL.md";

/// The most files the output lists from a skill's directory.
const FILE_SAMPLE: usize = 20;

/// The most files looked at when sampling a skill's directory.
const MAX_FILES_SCANNED: usize = 10_000;

/// The longest skill name.
const MAX_NAME_CHARS: usize = 64;

const DESCRIPTION_HEAD: &str = "Load a skill: instructions and resources for a specialized task.\n\
- Call it with the name of a skill when the task matches its description, before starting the task.\n\
- The output holds the skill's instructions, its base directory and a sample of its files. Paths \
in the instructions are relative to that base directory; open them with the file tools.";

/// A skill found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// The name the model calls it by, from the frontmatter.
    pub name: String,
    /// When to use it, from the frontmatter.
    pub description: String,
    /// The directory holding its `SKILL.md`.
    pub dir: PathBuf,
    /// The instructions after the frontmatter.
    pub body: String,
}

/// A `SKILL.md` that was skipped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillWarning {
    /// The `SKILL.md` file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for SkillWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

/// The skills found by [`discover_skills`], in precedence order, and the files skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillCatalog {
    /// The skills, at most one per name, in discovery order.
    pub skills: Vec<Skill>,
    /// Files that were skipped: broken frontmatter or a name already taken.
    pub warnings: Vec<SkillWarning>,
}

impl SkillCatalog {
    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }

    /// The names of the skills, in discovery order.
    pub fn names(&self) -> Vec<&str> {
        self.skills
            .iter()
            .map(|skill| skill.name.as_str())
            .collect()
    }

    /// Adds `skill` unless its name is taken, in which case it becomes a warning.
    fn add(&mut self, path: PathBuf, skill: Skill) {
        if let Some(first) = self.get(&skill.name) {
            let problem = format!(
                "skill `{}` is ignored because {} already defines it.",
                skill.name,
                first.dir.join(SKILL_FILE).display()
            );
            self.warnings.push(SkillWarning { path, problem });
        } else {
            self.skills.push(skill);
        }
    }
}

/// Finds the skills of the Location at `root` and of the user whose home is `home`.
///
/// Directories that do not exist are skipped silently; unreadable files and broken frontmatter
/// are reported in [`SkillCatalog::warnings`].
pub fn discover_skills(root: &Path, home: Option<&Path>) -> SkillCatalog {
    // Each place, and the boundary its symlinks must stay in: the Location for a project's
    // skills, the user's skills directory for theirs (the shared walker rule).
    let mut places = vec![(root.join(".tackle/skills"), root.to_path_buf())];
    if let Some(home) = home {
        let user = home.join(".config/tackle/skills");
        let inside = std::fs::canonicalize(&user).unwrap_or_else(|_| user.clone());
        places.push((user, inside));
    }
    for project in [".opencode/skill", ".opencode/skills", ".claude/skills"] {
        places.push((root.join(project), root.to_path_buf()));
    }

    let mut catalog = SkillCatalog::default();
    for (place, inside) in places {
        let boundary = super::walk::Boundary::new(std::fs::canonicalize(&inside).unwrap_or(inside));
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .filter(|path| !path.is_symlink() || boundary.allows_link(path))
            .collect();
        dirs.sort();
        for dir in dirs {
            let path = dir.join(SKILL_FILE);
            if !path.is_file() {
                continue;
            }
            match load(&dir, &path, &boundary) {
                Ok(skill) => catalog.add(path, skill),
                Err(problem) => catalog.warnings.push(SkillWarning { path, problem }),
            }
        }
    }
    catalog
}

/// Reads and parses the `SKILL.md` at `path` in `dir`.
fn load(dir: &Path, path: &Path, boundary: &super::walk::Boundary) -> Result<Skill, String> {
    let bytes = read_bounded(path, boundary).map_err(|e| format!("could not be read: {e}."))?;
    let text = String::from_utf8(bytes).map_err(|_| "is not UTF-8 text.".to_owned())?;
    let parsed = parse_skill_file(&text)?;
    Ok(Skill {
        name: parsed.name,
        description: parsed.description,
        dir: dir.to_path_buf(),
        body: parsed.body,
    })
}

/// The parts of a `SKILL.md`.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    name: String,
    description: String,
    body: String,
}

/// Parses a `SKILL.md`: a `---` line, `key: value` lines, a `---` line, then the body. Values
/// may be quoted, or be `|`/`>` block scalars on the indented lines that follow. Unknown keys and
/// nested (indented) entries are ignored.
fn parse_skill_file(text: &str) -> Result<Parsed, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let opening = lines.next().unwrap_or_default();
    if opening.trim_end() != "---" {
        return Err(
            "has no frontmatter: the first line must be `---`, followed by `name: ...` and \
             `description: ...` lines and a closing `---`."
                .to_owned(),
        );
    }
    let mut header: Vec<&str> = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        header.push(line.trim_end_matches(['\r', '\n']));
    }
    if !closed {
        return Err("has no closing `---` line after its frontmatter.".to_owned());
    }
    let body = lines.collect::<String>().trim().to_owned();

    let fields = parse_fields(&header)?;
    let field = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let mut missing = Vec::new();
    let name = field("name");
    if name.is_none() {
        missing.push("`name`");
    }
    let description = field("description");
    if description.is_none() {
        missing.push("`description`");
    }
    let (Some(name), Some(description)) = (name, description) else {
        return Err(format!(
            "the frontmatter has no {}.",
            missing.join(" and no ")
        ));
    };
    if !valid_name(&name) {
        return Err(format!(
            "the name `{name}` is invalid: use 1 to {MAX_NAME_CHARS} lowercase letters, digits \
             and hyphens, starting with a letter or digit."
        ));
    }
    Ok(Parsed {
        name,
        description,
        body,
    })
}

/// The top-level `key: value` pairs of the frontmatter lines.
fn parse_fields(header: &[&str]) -> Result<Vec<(String, String)>, String> {
    let mut fields = Vec::new();
    let mut i = 0;
    while i < header.len() {
        let line = header[i];
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || line.starts_with([' ', '\t']) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!(
                "frontmatter line {} (`{trimmed}`) is not `key: value`.",
                i + 1
            ));
        };
        let key = key.trim().to_owned();
        let value = value.trim();
        let value = if let Some(style) = value.chars().next().filter(|c| matches!(c, '|' | '>')) {
            let mut block = Vec::new();
            while i < header.len()
                && (header[i].trim().is_empty() || header[i].starts_with([' ', '\t']))
            {
                block.push(header[i].trim());
                i += 1;
            }
            let separator = if style == '|' { "\n" } else { " " };
            block
                .into_iter()
                .filter(|l| style == '|' || !l.is_empty())
                .collect::<Vec<_>>()
                .join(separator)
        } else {
            unquote(value)
                .map_err(|problem| format!("frontmatter line {} (`{trimmed}`): {problem}", i + 1))?
        };
        fields.push((key, value));
    }
    Ok(fields)
}

/// A value without its quotes; `'` doubles itself and `"` allows `\"` and `\\` inside.
fn unquote(value: &str) -> Result<String, String> {
    let Some(quote) = value.chars().next().filter(|c| matches!(c, '"' | '\'')) else {
        return Ok(value.to_owned());
    };
    if value.len() < 2 || !value.ends_with(quote) {
        return Err(format!(
            "the value opens a {quote} quote that is not closed."
        ));
    }
    let inner = &value[1..value.len() - 1];
    Ok(if quote == '\'' {
        inner.replace("''", "'")
    } else {
        inner.replace("\\\"", "\"").replace("\\\\", "\\")
    })
}

/// Whether `name` matches `^[a-z0-9][a-z0-9-]{0,63}$`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.len() <= MAX_NAME_CHARS
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Arguments of the skill tool.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillInput {
    /// The name of the skill to load, as listed in the tool's description.
    pub name: String,
}

/// The result of the skill tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillOutput {
    /// What the model reads: the instructions, the base directory and the file sample.
    pub output: String,
    /// The skill loaded.
    pub name: String,
    /// The skill's base directory, relative to the working directory when inside it.
    pub dir: String,
    /// Up to 20 files of the skill's directory, relative to it, sorted, without `SKILL.md`.
    pub files: Vec<String>,
}

/// The skill tool over `catalog`; its description lists the skills.
pub(crate) fn tool(env: &ToolEnv, catalog: SkillCatalog) -> AnyTool {
    let description = describe(&catalog);
    let state = (env.clone(), std::sync::Arc::new(catalog));
    Tool::with_state(description, state, load_skill)
        .with_projection(super::project_output)
        .with_concurrency(tackle_core::Concurrency::ReadOnly)
        .erase()
}

/// The tool description: what it does, then `- name: description` for every skill.
fn describe(catalog: &SkillCatalog) -> String {
    let mut description = DESCRIPTION_HEAD.to_owned();
    if catalog.skills.is_empty() {
        description.push_str("\n\nNo skills are available.");
    } else {
        description.push_str("\n\nAvailable skills:");
        for skill in &catalog.skills {
            let summary = skill.description.split_whitespace().collect::<Vec<_>>();
            description.push_str(&format!("\n- {}: {}", skill.name, summary.join(" ")));
        }
    }
    description
}

async fn load_skill(
    State((env, catalog)): State<(ToolEnv, std::sync::Arc<SkillCatalog>)>,
    input: SkillInput,
    cx: Context,
) -> Result<SkillOutput, ToolFailure> {
    let (env, catalog, cx) = (&env, &*catalog, &cx);
    let Some(skill) = catalog.get(&input.name) else {
        let message = if catalog.skills.is_empty() {
            format!("Skill `{}` not found. No skills are available.", input.name)
        } else {
            let names: Vec<String> = catalog.names().iter().map(|n| format!("`{n}`")).collect();
            format!(
                "Skill `{}` not found. Available skills: {}.",
                input.name,
                names.join(", ")
            )
        };
        return Err(ToolFailure::new(message)
            .with_hint("Call `skill` again with one of the available names, spelled exactly."));
    };
    env.gate
        .ask(
            cx,
            Ask::new(Permission::SKILL.as_str(), [skill.name.clone()])
                .with_always([skill.name.clone()]),
        )
        .await?;

    let root = env.fs().root().to_path_buf();
    let loaded = skill.clone();
    let (output, dir, files) = tokio::task::spawn_blocking(move || render(&root, &loaded))
        .await
        .unwrap_or_else(|_| (String::new(), String::new(), Vec::new()));
    Ok(SkillOutput {
        output,
        name: skill.name.clone(),
        dir,
        files,
    })
}

/// What loading `skill` gives the model (its instructions, its base directory and a sample of
/// its files), for a Location at `root`. It lists the skill's directory, so call it where
/// blocking is fine. Hosts offer the same text elsewhere (`tackle serve`'s MCP prompts).
pub fn skill_text(root: &Path, skill: &Skill) -> String {
    render(root, skill).0
}

/// The skill's text, its displayed directory and its sampled files.
fn render(root: &Path, skill: &Skill) -> (String, String, Vec<String>) {
    let dir = display_dir(root, &skill.dir);
    let (files, total) = sample_files(&skill.dir);

    let mut output = format!(
        "<skill name=\"{}\" dir=\"{dir}\">\n{}\n</skill>\n\
         Paths in this skill are relative to its base directory, {dir}.\n",
        skill.name, skill.body
    );
    if files.is_empty() {
        output.push_str(&format!("No other files in {dir}."));
    } else {
        if total >= MAX_FILES_SCANNED {
            output.push_str(&format!(
                "Files in {dir} (a sample of {}; it holds over 10,000 files):",
                files.len()
            ));
        } else if files.len() < total {
            output.push_str(&format!(
                "Files in {dir} (the first {} of {total}, sorted):",
                files.len()
            ));
        } else {
            output.push_str(&format!("Files in {dir}:"));
        }
        for file in &files {
            output.push_str("\n- ");
            output.push_str(file);
        }
    }
    (output, dir, files)
}

/// `dir` relative to the Location `root` when inside it, otherwise whole.
fn display_dir(root: &Path, dir: &Path) -> String {
    match dir.strip_prefix(root) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.to_string_lossy().into_owned(),
        _ => dir.to_string_lossy().into_owned(),
    }
}

/// The first [`FILE_SAMPLE`] files under `dir` (relative, `/`-separated, sorted, without the
/// top-level `SKILL.md`) and how many files were seen in all, up to [`MAX_FILES_SCANNED`].
fn sample_files(dir: &Path) -> (Vec<String>, usize) {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                let parts: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let relative = parts.join("/");
                if relative != SKILL_FILE {
                    files.push(relative);
                }
            }
            if files.len() >= MAX_FILES_SCANNED {
                break;
            }
        }
        if files.len() >= MAX_FILES_SCANNED {
            break;
        }
    }
    let total = files.len();
    files.sort();
    files.truncate(FILE_SAMPLE);
    (files, total)
}

/// The most bytes of a `SKILL.md` read: a skill is instructions, not data.
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// Reads a regular file of at most [`MAX_SKILL_BYTES`], without blocking on a FIFO or a device;
/// a symlinked `SKILL.md` is read only when its real file is inside `boundary`.
fn read_bounded(path: &Path, boundary: &super::walk::Boundary) -> std::io::Result<Vec<u8>> {
    if path.is_symlink() && !boundary.allows_link(path) {
        return Err(std::io::Error::other("it is a symlink to a file outside"));
    }
    let real = std::fs::canonicalize(path)?;
    let (Some(dir), Some(name)) = (real.parent(), real.file_name()) else {
        return Err(std::io::Error::other("it has no name"));
    };
    let opened = crate::fs::handle::Dir::open(dir).map_err(handle_io)?;
    match opened.read(name, MAX_SKILL_BYTES) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(std::io::ErrorKind::NotFound.into()),
        Err(error) => Err(handle_io(error)),
    }
}

fn handle_io(error: crate::fs::handle::HandleError) -> std::io::Error {
    use crate::fs::handle::HandleError;
    match error {
        HandleError::Io(error) => error,
        HandleError::Special(kind) => std::io::Error::other(format!("it is {}", kind.describe())),
        HandleError::TooLarge { limit } => {
            std::io::Error::other(format!("it is larger than {limit} bytes"))
        }
        HandleError::IsDirectory => std::io::Error::other("it is a directory"),
        HandleError::Relinked => std::io::Error::other("it is a symlink"),
    }
}
