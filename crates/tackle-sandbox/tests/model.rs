//! The sandbox's write rule against a model: a write lands exactly when its real target lies
//! inside a writable place (the Location or the session's temp directory), whatever the path
//! spelling (`..`, symlinks in and out, long and odd names) and whatever the writer.

#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use tackle_sandbox::{Policy, Prepared, Request, Sandboxes, Support};

/// Where a write is aimed, relative to the fixture.
#[derive(Clone, Copy, Debug)]
enum Place {
    Root,
    RootSub,
    ThroughLinkIn,
    ThroughLinkOut,
    DotDotOut,
    Outside,
    Temp,
}

/// How the write is made.
#[derive(Clone, Copy, Debug)]
enum Writer {
    Redirect,
    Python,
    Touch,
    Mkdir,
    Symlink,
    MoveIn,
    Copy,
}

struct Fixture {
    _dirs: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    temp: PathBuf,
    prepared: Prepared,
}

fn fixture() -> Fixture {
    let dirs = tempfile::tempdir().unwrap();
    let root = dirs.path().join("work");
    let outside = dirs.path().join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(root.join("sub"), root.join("link_in")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link_out")).unwrap();
    std::fs::write(root.join("source.txt"), "s").unwrap();
    let root = root.canonicalize().unwrap();
    let sandboxes = Sandboxes::new(
        Policy {
            caches: Vec::new(),
            ..Policy::default()
        },
        HashMap::new(),
        dirs.path().join("tmp"),
    );
    let prepared = sandboxes
        .prepare(&Request {
            agent: "build",
            session: "model",
            root: &root,
            unsandboxed: false,
        })
        .unwrap();
    let temp = sandboxes.session_temp("model").unwrap();
    Fixture {
        root,
        outside: outside.canonicalize().unwrap(),
        temp,
        prepared,
        _dirs: dirs,
    }
}

impl Fixture {
    /// The path as the command spells it, and where it really leads.
    fn target(&self, place: Place, name: &str) -> (String, PathBuf) {
        let root = self.root.display();
        match place {
            Place::Root => (format!("{root}/{name}"), self.root.join(name)),
            Place::RootSub => (
                format!("{root}/sub/{name}"),
                self.root.join("sub").join(name),
            ),
            Place::ThroughLinkIn => (
                format!("{root}/link_in/{name}"),
                self.root.join("sub").join(name),
            ),
            Place::ThroughLinkOut => (format!("{root}/link_out/{name}"), self.outside.join(name)),
            Place::DotDotOut => (format!("{root}/../outside/{name}"), self.outside.join(name)),
            Place::Outside => (
                format!("{}/{name}", self.outside.display()),
                self.outside.join(name),
            ),
            Place::Temp => (
                format!("{}/{name}", self.temp.display()),
                self.temp.join(name),
            ),
        }
    }

    /// The model: a write lands when its real target is inside the Location or the temp
    /// directory.
    fn allowed(&self, real: &Path) -> bool {
        real.starts_with(&self.root) || real.starts_with(&self.temp)
    }

    fn run(&self, script: &str) {
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(script).current_dir(&self.root);
        self.prepared.apply(&mut command);
        let _ = command.output().unwrap();
    }
}

/// Single-quotes `text` for sh.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn script(writer: Writer, target: &str, root: &Path) -> String {
    let t = quote(target);
    match writer {
        Writer::Redirect => format!("echo x > {t}"),
        Writer::Python => {
            format!("python3 -c 'import sys; open(sys.argv[1], \"w\").write(\"x\")' {t}")
        }
        Writer::Touch => format!("touch {t}"),
        Writer::Mkdir => format!("mkdir {t}"),
        Writer::Symlink => format!("ln -s /etc/hostname {t}"),
        Writer::MoveIn => format!(
            "cp {src} {src}.m && mv {src}.m {t}",
            src = quote(&root.join("source.txt").display().to_string())
        ),
        Writer::Copy => format!(
            "cp {} {t}",
            quote(&root.join("source.txt").display().to_string())
        ),
    }
}

fn place() -> impl Strategy<Value = Place> {
    prop_oneof![
        Just(Place::Root),
        Just(Place::RootSub),
        Just(Place::ThroughLinkIn),
        Just(Place::ThroughLinkOut),
        Just(Place::DotDotOut),
        Just(Place::Outside),
        Just(Place::Temp),
    ]
}

fn writer() -> impl Strategy<Value = Writer> {
    prop_oneof![
        Just(Writer::Redirect),
        Just(Writer::Python),
        Just(Writer::Touch),
        Just(Writer::Mkdir),
        Just(Writer::Symlink),
        Just(Writer::MoveIn),
        Just(Writer::Copy),
    ]
}

/// Names with spaces, quotes, leading dashes avoided (they are options), and the longest a
/// file system allows.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,8}",
        "[a-z]{1,4} [a-z' ]{1,4}",
        Just("x".repeat(255)),
        Just(".hidden".to_owned()),
    ]
}

fn cases() -> u32 {
    if std::env::var_os("TACKLE_DEEP").is_some() {
        512
    } else {
        24
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn a_write_lands_exactly_when_its_real_target_is_writable(
        ops in prop::collection::vec((place(), writer(), name()), 1..5)
    ) {
        if !Support::get().filesystem() {
            eprintln!("skipped: no Landlock here");
            return Ok(());
        }
        let f = fixture();
        for (i, (place, writer, name)) in ops.iter().enumerate() {
            // A fresh name per op, so an earlier op's file does not decide this one.
            let name = format!("{i}{name}");
            let name = &name[..name.len().min(255)];
            let (spelled, real) = f.target(*place, name);
            f.run(&script(*writer, &spelled, &f.root));
            let landed = std::fs::symlink_metadata(&real).is_ok();
            prop_assert_eq!(
                landed,
                f.allowed(&real),
                "{:?} by {:?} to {} (really {})",
                place,
                writer,
                spelled,
                real.display()
            );
        }
    }
}
