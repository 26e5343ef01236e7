//! Tests of lexical normalization, Location resolution and external-directory patterns.

use super::*;

#[test]
fn normalizes_lexically() {
    let cases = [
        ("/a/b/c", "/a/b/c"),
        ("/a//b///c", "/a/b/c"),
        ("/a/./b/.", "/a/b"),
        ("/a/b/../c", "/a/c"),
        ("/a/b/", "/a/b"),
        ("/../a", "/a"),
        ("/", "/"),
        ("//", "/"),
        ("a/b/../..", "."),
        ("", "."),
        ("./a", "a"),
        ("../a/../../b", "../../b"),
        ("a\\b\\..\\c", "a/c"),
        ("C:\\Users\\me\\..\\you", "C:/Users/you"),
        ("c:/x", "C:/x"),
        ("C:", "C:/"),
        ("C:\\..", "C:/"),
    ];
    for (input, expected) in cases {
        assert_eq!(normalize_path(input), expected, "normalize {input:?}");
    }
}

#[test]
fn detects_absolute_paths() {
    let cases = [
        ("/etc", true),
        ("\\etc", true),
        ("C:\\x", true),
        ("d:/x", true),
        ("etc", false),
        ("./etc", false),
        ("../etc", false),
        ("", false),
    ];
    for (input, expected) in cases {
        assert_eq!(is_absolute_path(input), expected, "absolute {input:?}");
    }
}

#[test]
fn resolves_against_the_location() {
    // (root, path, absolute, relative)
    let cases: [(&str, &str, &str, Option<&str>); 12] = [
        (
            "/work/app",
            "src/main.rs",
            "/work/app/src/main.rs",
            Some("src/main.rs"),
        ),
        (
            "/work/app",
            "./src//lib.rs",
            "/work/app/src/lib.rs",
            Some("src/lib.rs"),
        ),
        (
            "/work/app",
            "/work/app/README.md",
            "/work/app/README.md",
            Some("README.md"),
        ),
        ("/work/app/", "/work/app/a/../b", "/work/app/b", Some("b")),
        ("/work/app", "", "/work/app", Some(".")),
        ("/work/app", "/work/app", "/work/app", Some(".")),
        ("/work/app", "../other/x", "/work/other/x", None),
        ("/work/app", "src/../../app2/x", "/work/app2/x", None),
        (
            "/work/app",
            "/work/application/x",
            "/work/application/x",
            None,
        ),
        ("/work/app", "/etc/passwd", "/etc/passwd", None),
        ("/", "etc/hosts", "/etc/hosts", Some("etc/hosts")),
        (
            "C:\\proj",
            "src\\a.rs",
            "C:/proj/src/a.rs",
            Some("src/a.rs"),
        ),
    ];
    for (root, path, absolute, relative) in cases {
        let resolved = resolve_in_location(root, path);
        assert_eq!(
            resolved.absolute, absolute,
            "absolute of {path:?} in {root:?}"
        );
        assert_eq!(
            resolved.relative_to_root.as_deref(),
            relative,
            "relative of {path:?} in {root:?}"
        );
        assert_eq!(resolved.is_internal(), relative.is_some());
    }
}

#[test]
fn external_directory_patterns() {
    let cases = [
        ("/etc/passwd", TargetKind::File, "/etc/*"),
        ("/etc", TargetKind::Directory, "/etc/*"),
        ("/etc/", TargetKind::Directory, "/etc/*"),
        ("/etc//ssh///", TargetKind::Directory, "/etc/ssh/*"),
        ("/passwd", TargetKind::File, "/*"),
        ("/", TargetKind::Directory, "/*"),
        ("/a/b/../c/file.txt", TargetKind::File, "/a/c/*"),
        (
            "C:\\Users\\me\\notes.txt",
            TargetKind::File,
            "C:/Users/me/*",
        ),
        ("c:/Users/me/notes.txt", TargetKind::File, "C:/Users/me/*"),
        ("C:\\boot.ini", TargetKind::File, "C:/*"),
        ("C:\\Users\\", TargetKind::Directory, "C:/Users/*"),
    ];
    for (target, kind, expected) in cases {
        assert_eq!(
            external_directory_pattern(target, kind),
            expected,
            "pattern of {target:?} as {kind:?}"
        );
    }
}

#[test]
fn windows_variants_give_one_pattern() {
    let variants = [
        "C:\\Users\\me\\a.txt",
        "c:\\Users\\me\\a.txt",
        "C:/Users/me/a.txt",
        "C:\\Users\\\\me\\.\\a.txt",
    ];
    for variant in variants {
        assert_eq!(
            external_directory_pattern(variant, TargetKind::File),
            "C:/Users/me/*",
            "{variant:?}"
        );
    }
}

#[test]
fn permission_resource_is_relative_inside_and_absolute_outside() {
    let cases = [
        ("/w", "src/.env", "src/.env", None),
        ("/w", "/w/a/b.rs", "a/b.rs", None),
        ("/w", "../x/y.txt", "/x/y.txt", Some("/x/*")),
        ("/w", "/tmp/out/log", "/tmp/out/log", Some("/tmp/out/*")),
        ("/w", "/top.txt", "/top.txt", Some("/*")),
    ];
    for (root, path, resource, external) in cases {
        let resolved = resolve_in_location(root, path);
        assert_eq!(permission_resource(&resolved), resource, "{path:?}");
        assert_eq!(
            resolved
                .external_directory_pattern(TargetKind::File)
                .as_deref(),
            external,
            "{path:?}"
        );
    }
}

#[test]
fn containment() {
    let cases = [
        ("/w", "/w", true),
        ("/w", "/w/x", true),
        ("/w/", "/w/x/", true),
        ("/w", "/wx", false),
        ("/w", "/w/../x", false),
        ("/", "/anything", true),
        ("C:\\w", "c:/w/x", true),
    ];
    for (root, path, expected) in cases {
        assert_eq!(is_within(root, path), expected, "{path:?} within {root:?}");
    }
}
