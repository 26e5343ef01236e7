//! Where the paths a command line names really lead: a path inside the root can reach outside
//! through a symlink the repository ships, dangling ones included (a write through a dangling
//! link creates its target).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use tackle_permission::{TargetKind, external_directory_pattern, is_within};

use super::scan::NamedPath;

/// The most symlinks followed for one path, as the kernel's own limit.
const MAX_LINKS: usize = 40;

/// The `external_directory` patterns of the `paths` whose real location is outside `root`.
pub(super) fn escapes(root: &Path, paths: &[NamedPath]) -> Vec<String> {
    let root = root.to_string_lossy();
    let mut patterns: Vec<String> = Vec::new();
    for named in paths {
        let real = real_path(Path::new(&named.path));
        let real = real.to_string_lossy();
        if is_within(&root, &real) {
            continue;
        }
        let kind = if named.kind == TargetKind::Directory || Path::new(&*real).is_dir() {
            TargetKind::Directory
        } else {
            TargetKind::File
        };
        let pattern = external_directory_pattern(&real, kind);
        if !patterns.contains(&pattern) {
            patterns.push(pattern);
        }
    }
    patterns
}

/// `path` (absolute) with every symlink on the way followed, the missing part kept as given,
/// like `realpath -m`. After [`MAX_LINKS`] links the rest is taken literally.
fn real_path(path: &Path) -> PathBuf {
    let mut done = PathBuf::from("/");
    let mut pending: VecDeque<OsString> = names(path).collect();
    let mut followed = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            done.pop();
            continue;
        }
        let next = done.join(&name);
        let is_link = next
            .symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_symlink());
        match std::fs::read_link(&next) {
            Ok(target) if is_link && followed < MAX_LINKS => {
                followed += 1;
                if target.is_absolute() {
                    done = PathBuf::from("/");
                }
                for part in names(&target).collect::<Vec<_>>().into_iter().rev() {
                    pending.push_front(part);
                }
            }
            _ => done = next,
        }
    }
    done
}

/// The names of `path`'s components: `..` kept, `.` and the root dropped.
fn names(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|component| match component {
        Component::Normal(name) => Some(name.to_owned()),
        Component::ParentDir => Some(OsString::from("..")),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(path: &Path, kind: TargetKind) -> NamedPath {
        NamedPath {
            path: path.to_string_lossy().into_owned(),
            kind,
        }
    }

    #[test]
    fn links_that_lead_out_of_the_root_are_external() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root_path = std::fs::canonicalize(root.path()).unwrap();
        let outside_path = std::fs::canonicalize(outside.path()).unwrap();
        std::fs::create_dir(root_path.join("src")).unwrap();
        std::os::unix::fs::symlink(&outside_path, root_path.join("out")).unwrap();
        std::os::unix::fs::symlink("../out/deeper", root_path.join("src/rel")).unwrap();
        std::os::unix::fs::symlink(outside_path.join("gone"), root_path.join("dangling")).unwrap();
        std::os::unix::fs::symlink("src", root_path.join("inside")).unwrap();
        std::os::unix::fs::symlink("loop", root_path.join("loop")).unwrap();
        let outside_str = outside_path.to_string_lossy();
        let cases: &[(&str, TargetKind, &[String])] = &[
            ("out/x", TargetKind::File, &[format!("{outside_str}/*")]),
            ("out", TargetKind::Directory, &[format!("{outside_str}/*")]),
            (
                "src/rel/y",
                TargetKind::File,
                &[format!("{outside_str}/deeper/*")],
            ),
            ("dangling", TargetKind::File, &[format!("{outside_str}/*")]),
            ("inside/a", TargetKind::File, &[]),
            ("src/a", TargetKind::File, &[]),
            ("loop", TargetKind::File, &[]),
        ];
        for (path, kind, want) in cases {
            let got = escapes(&root_path, &[named(&root_path.join(path), *kind)]);
            assert_eq!(&got, want, "{path}");
        }
    }
}
