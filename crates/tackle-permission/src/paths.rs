//! Pure path helpers for tools: lexical normalization, Location containment, and the resources
//! of `external_directory` and path-based permission requests.
//!
//! Everything here is lexical. Resolving symlinks needs the filesystem, so it is the caller's
//! job: when a tool can canonicalize a path (or the nearest existing ancestor of a missing one),
//! it should pass the canonical form, and the Location root in canonical form too. Otherwise a
//! symlink inside the Location that points outside it is judged by where it sits, not by where it
//! leads.
//!
//! Paths are compared with `/` separators: a `\` is read as `/`, and a Windows drive letter is
//! upper-cased (`c:\a` becomes `C:/a`). Comparison is otherwise case-sensitive.

/// Whether a target is a file or a directory, for [`external_directory_pattern`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// A file (or anything that is not a directory): its parent directory is the scope.
    File,
    /// A directory: the directory itself is the scope.
    Directory,
}

/// A path resolved against a Location root.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResolvedPath {
    /// The normalized absolute path.
    pub absolute: String,
    /// The path relative to the root (`.` for the root itself), or `None` when it lies outside.
    pub relative_to_root: Option<String>,
}

impl ResolvedPath {
    /// True when the path lies inside the Location root.
    pub fn is_internal(&self) -> bool {
        self.relative_to_root.is_some()
    }

    /// The `external_directory` resource to ask for, or `None` when the path is internal and
    /// needs no such check.
    pub fn external_directory_pattern(&self, kind: TargetKind) -> Option<String> {
        match self.relative_to_root {
            Some(_) => None,
            None => Some(external_directory_pattern(&self.absolute, kind)),
        }
    }
}

/// Lexically normalizes `path`: `\` becomes `/`, duplicate and trailing slashes go, `.` segments
/// go, and `..` removes the previous segment.
///
/// An absolute path never climbs above its root (`/../a` is `/a`); a relative one keeps leading
/// `..` segments (`../a`). An empty relative result is `.`. A drive-qualified path (`C:`, `c:\`)
/// is treated as absolute on that drive.
pub fn normalize_path(path: &str) -> String {
    let unified = path.replace('\\', "/");
    let (prefix, rest) = split_root(&unified);
    let mut parts: Vec<&str> = Vec::new();
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                // Relative paths keep the climb; absolute ones stop at the root.
                _ if prefix.is_empty() => parts.push(".."),
                _ => {}
            },
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if prefix.is_empty() && joined.is_empty() {
        ".".to_owned()
    } else {
        format!("{prefix}{joined}")
    }
}

/// True when `path` is absolute: it starts with a separator or a drive letter.
pub fn is_absolute_path(path: &str) -> bool {
    let unified = path.replace('\\', "/");
    !split_root(&unified).0.is_empty()
}

/// True when `path` is `root` or lies below it, comparing normalized forms.
pub fn is_within(root: &str, path: &str) -> bool {
    relative_within(&normalize_path(root), &normalize_path(path)).is_some()
}

/// Resolves `path` against the Location `root`: relative paths are joined onto the root, then the
/// result is normalized and checked for containment.
///
/// `root` should be absolute (and canonical when the caller can canonicalize it). An empty `path`
/// names the root itself.
pub fn resolve_in_location(root: &str, path: &str) -> ResolvedPath {
    let root = normalize_path(root);
    let absolute = if is_absolute_path(path) {
        normalize_path(path)
    } else {
        normalize_path(&format!("{root}/{path}"))
    };
    let relative_to_root = relative_within(&root, &absolute);
    ResolvedPath {
        absolute,
        relative_to_root,
    }
}

/// The `external_directory` resource for `target`: `<dir>/*`, where `dir` is the target itself
/// for a directory and its parent for a file. A root gives `/*` (or `C:/*`).
///
/// The target is normalized first, so Windows spellings of one path give one pattern. Pass an
/// absolute target; a relative one is scoped relative to an unknown directory.
pub fn external_directory_pattern(target: &str, kind: TargetKind) -> String {
    let target = normalize_path(target);
    let dir = match kind {
        TargetKind::Directory => target,
        TargetKind::File => parent(&target),
    };
    if dir.ends_with('/') {
        // A root: `/` or `C:/`.
        format!("{dir}*")
    } else {
        format!("{dir}/*")
    }
}

/// The resource a path-based permission request names: Location-relative for internal paths
/// (so rules like `src/*` and `*.env` apply), absolute for external ones.
pub fn permission_resource(resolved: &ResolvedPath) -> String {
    resolved
        .relative_to_root
        .clone()
        .unwrap_or_else(|| resolved.absolute.clone())
}

/// Splits a `/`-separated path into its root (`""`, `"/"` or `"C:/"`) and the rest.
fn split_root(path: &str) -> (String, &str) {
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        let drive = (bytes[0] as char).to_ascii_uppercase();
        let rest = &path[2..];
        return (format!("{drive}:/"), rest.strip_prefix('/').unwrap_or(rest));
    }
    match path.strip_prefix('/') {
        Some(rest) => ("/".to_owned(), rest),
        None => (String::new(), path),
    }
}

/// The parent of a normalized path; a root is its own parent, a lone relative segment has `.`.
fn parent(path: &str) -> String {
    let (prefix, rest) = split_root(path);
    match rest.rfind('/') {
        Some(index) => format!("{prefix}{}", &rest[..index]),
        None if prefix.is_empty() => ".".to_owned(),
        None => prefix,
    }
}

/// `path` relative to `root`, both normalized; `.` when they are equal.
fn relative_within(root: &str, path: &str) -> Option<String> {
    if path == root {
        return Some(".".to_owned());
    }
    let rest = if root.ends_with('/') {
        path.strip_prefix(root)
    } else {
        path.strip_prefix(root)
            .and_then(|rest| rest.strip_prefix('/'))
    }?;
    (!rest.is_empty()).then(|| rest.to_owned())
}

#[cfg(test)]
mod tests;
