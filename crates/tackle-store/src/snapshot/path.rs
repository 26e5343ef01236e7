//! Paths relative to a Location's root, as bytes: a name that is not UTF-8 is a name like any
//! other, never skipped.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// A path relative to the Location's root, `/`-separated bytes, never empty, never `.` or `..`.
///
/// Ordered component by component (as if `/` sorted before every other byte), so a directory
/// comes right before everything under it, and a subtree is one contiguous range.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RelPath(Vec<u8>);

impl RelPath {
    /// The path from its bytes; `None` for an empty path, a leading or doubled `/`, or a `.`
    /// or `..` component.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Option<Self> {
        let bytes = bytes.into();
        let valid = !bytes.is_empty()
            && !bytes.contains(&0)
            && bytes
                .split(|b| *b == b'/')
                .all(|part| !part.is_empty() && part != b"." && part != b"..");
        valid.then_some(Self(bytes))
    }

    /// `self/name`.
    pub fn join(&self, name: &[u8]) -> Self {
        let mut bytes = Vec::with_capacity(self.0.len() + 1 + name.len());
        bytes.extend_from_slice(&self.0);
        bytes.push(b'/');
        bytes.extend_from_slice(name);
        Self(bytes)
    }

    /// A top-level name as a path.
    pub(crate) fn top(name: &[u8]) -> Self {
        Self(name.to_vec())
    }

    /// The bytes, `/`-separated.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The path as a relative `Path`.
    pub fn as_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.0))
    }

    /// The path under `root`.
    pub fn under_root(&self, root: &Path) -> PathBuf {
        root.join(self.as_path())
    }

    /// The parent directory, `None` at the top level.
    pub fn parent(&self) -> Option<RelPath> {
        let at = self.0.iter().rposition(|b| *b == b'/')?;
        Some(Self(self.0[..at].to_vec()))
    }

    /// The last component.
    pub fn name(&self) -> &[u8] {
        match self.0.iter().rposition(|b| *b == b'/') {
            Some(at) => &self.0[at + 1..],
            None => &self.0,
        }
    }

    /// Every proper ancestor, nearest first.
    pub fn ancestors(&self) -> impl Iterator<Item = RelPath> + '_ {
        self.0
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, b)| **b == b'/')
            .map(|(at, _)| Self(self.0[..at].to_vec()))
    }

    /// Whether `self` lies strictly under `dir`.
    pub fn is_under(&self, dir: &RelPath) -> bool {
        self.0.len() > dir.0.len() && self.0.starts_with(&dir.0) && self.0[dir.0.len()] == b'/'
    }

    /// How many components deep (1 for a top-level name).
    pub fn depth(&self) -> usize {
        1 + self.0.iter().filter(|b| **b == b'/').count()
    }

    /// The path for a person or a model: UTF-8 as is, other bytes as `\xNN`.
    pub fn display(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for chunk in self.0.utf8_chunks() {
            out.push_str(chunk.valid());
            for byte in chunk.invalid() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        }
        out
    }
}

impl Ord for RelPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let key = |b: &u8| if *b == b'/' { 0 } else { *b };
        self.0.iter().map(key).cmp(other.0.iter().map(key))
    }
}

impl PartialOrd for RelPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.display())
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[u8]) -> RelPath {
        RelPath::new(s).unwrap()
    }

    #[test]
    fn a_directory_sorts_right_before_its_subtree() {
        let mut paths = [
            p(b"a.txt"),
            p(b"a/b"),
            p(b"a"),
            p(b"a/b/c"),
            p(b"a-b"),
            p(b"b"),
        ];
        paths.sort();
        let shown: Vec<String> = paths.iter().map(RelPath::display).collect();
        assert_eq!(shown, ["a", "a/b", "a/b/c", "a-b", "a.txt", "b"]);
    }

    #[test]
    fn invalid_paths_are_refused_and_bytes_are_kept() {
        for bad in [&b""[..], b"/a", b"a//b", b"a/", b"./a", b"a/../b", b"a\0b"] {
            assert!(RelPath::new(bad).is_none(), "{bad:?}");
        }
        let odd = p(b"dir/caf\xe9");
        assert_eq!(odd.display(), "dir/caf\\xe9");
        assert_eq!(odd.name(), b"caf\xe9");
        assert_eq!(odd.parent(), Some(p(b"dir")));
        let ancestors: Vec<RelPath> = p(b"a/b/c").ancestors().collect();
        assert_eq!(ancestors, [p(b"a/b"), p(b"a")]);
        assert!(p(b"a/b").is_under(&p(b"a")) && !p(b"ab").is_under(&p(b"a")));
    }
}
