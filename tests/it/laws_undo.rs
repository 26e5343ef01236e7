//! LAW-UNDO (spec/laws.md) through the host: random sequences of `bash` calls through a host, then one undo of
//! them all, leave every path as it was before them, except paths that were ignored (present
//! under the ignore rules of that moment, or under an ignored directory) at any point, which the
//! undo never touches, and the directories that still hold such paths, which it keeps. A redo
//! (undoing the undo) then leaves the tree exactly as it was after the calls. When the undo
//! would have to replace a directory that holds an ignored path, it is refused whole and
//! changes nothing.
//!
//! The sequences create, rewrite (also same-size rewrites with the mtime put back), delete and
//! chmod files, replace files by directories and symlinks and back, leave empty directories,
//! use a name that is not UTF-8 and edit `.gitignore`. Trees are compared by kind, mode, bytes
//! and link target. 256 cases; 2,048 with TACKLE_DEEP=1.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use proptest::prelude::*;
use serde_json::json;
use tackle_core::{CallIdentity, CancellationToken, Context, ToolCall};
use tackle_host::{Approvals, HostBuilder, TurnSpec, UndoOutcome, UndoTarget};

/// The paths the commands work on (bytes: one name is not UTF-8).
const NAMES: [&[u8]; 11] = [
    b"a", b"b", b"d", b"d/e", b"d/f.log", b"d/g/h", b"build", b"build/o", b"secret", b"n\xff",
    b"d/x.log",
];

const LINK_TARGETS: [&str; 3] = ["a", "d", "missing"];

const RULES: [&str; 4] = ["", "*.log\n", "build/\nsecret\n", "*.log\nbuild/\nsecret\n"];

#[derive(Clone, Debug)]
enum Op {
    Write(usize, u16),
    SameSize(usize, u16),
    Remove(usize),
    Mkdir(usize),
    Chmod(usize, u32),
    Symlink(usize, usize),
    Rules(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0..NAMES.len();
    prop_oneof![
        4 => (name.clone(), 0..1000u16).prop_map(|(i, v)| Op::Write(i, v)),
        1 => (name.clone(), 0..1000u16).prop_map(|(i, v)| Op::SameSize(i, v)),
        2 => name.clone().prop_map(Op::Remove),
        2 => name.clone().prop_map(Op::Mkdir),
        1 => (name.clone(), prop_oneof![Just(0o644u32), Just(0o755), Just(0o700), Just(0o600)])
            .prop_map(|(i, m)| Op::Chmod(i, m)),
        1 => (name, 0..LINK_TARGETS.len()).prop_map(|(i, t)| Op::Symlink(i, t)),
        1 => (0..RULES.len()).prop_map(Op::Rules),
    ]
}

/// `bytes` as one shell word: `$'...'` with every byte outside `[A-Za-z0-9._/-]` escaped.
fn quote(bytes: &[u8]) -> String {
    let mut out = String::from("$'");
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"._/-".contains(b) {
            out.push(*b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('\'');
    out
}

fn command(op: &Op) -> String {
    let path = |i: usize| quote(NAMES[i]);
    let parent = |i: usize| {
        let name = NAMES[i];
        match name.iter().rposition(|b| *b == b'/') {
            Some(at) => format!("mkdir -p {} 2>/dev/null; ", quote(&name[..at])),
            None => String::new(),
        }
    };
    match op {
        Op::Write(i, v) => format!("{}printf 'c{v:03}' > {} 2>/dev/null", parent(*i), path(*i)),
        Op::SameSize(i, v) => format!(
            "[ -f {p} ] && [ ! -L {p} ] && {{ m=$(stat -c %y {p}); printf 'c{v:03}' > {p}; \
             touch -d \"$m\" {p}; }}",
            p = path(*i)
        ),
        Op::Remove(i) => format!("rm -rf {}", path(*i)),
        Op::Mkdir(i) => format!("rm -rf {p}; mkdir -p {p} 2>/dev/null", p = path(*i)),
        Op::Chmod(i, mode) => format!("[ -L {p} ] || chmod {mode:o} {p} 2>/dev/null", p = path(*i)),
        Op::Symlink(i, t) => format!(
            "rm -rf {p}; {}ln -s {} {p} 2>/dev/null",
            parent(*i),
            LINK_TARGETS[*t],
            p = path(*i)
        ),
        Op::Rules(k) => match RULES[*k] {
            "" => "rm -f .gitignore".to_owned(),
            rules => format!("printf '{}' > .gitignore", rules.replace('\n', "\\n")),
        },
    }
}

fn script(ops: &[Op]) -> String {
    let mut out: Vec<String> = ops.iter().map(command).collect();
    out.push("true".into());
    out.join("; ")
}

/// A path's state: kind, mode and bytes (a link's target).
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    kind: char,
    mode: u32,
    bytes: Vec<u8>,
}

type Tree = BTreeMap<Vec<u8>, State>;

fn capture(root: &Path) -> Tree {
    let mut tree = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            let mode = meta.mode() & 0o7777;
            let state = if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                State {
                    kind: 'l',
                    mode: 0,
                    bytes: target.as_os_str().as_bytes().to_vec(),
                }
            } else if meta.is_dir() {
                stack.push(path);
                State {
                    kind: 'd',
                    mode,
                    bytes: Vec::new(),
                }
            } else {
                State {
                    kind: 'f',
                    mode,
                    bytes: std::fs::read(&path).unwrap(),
                }
            };
            tree.insert(rel, state);
        }
    }
    tree
}

fn ancestors_or_self(path: &[u8]) -> Vec<&[u8]> {
    let mut out = vec![path];
    for (at, b) in path.iter().enumerate().rev() {
        if *b == b'/' {
            out.push(&path[..at]);
        }
    }
    out
}

/// Whether `path` (present, of `kind`) is ignored by the rules in `rules` (the test's patterns
/// only: `*.log`, `build/`, `secret`, at any depth).
fn matches(rules: &str, path: &[u8], is_dir: bool) -> bool {
    let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
    rules.lines().any(|rule| match rule {
        "*.log" => name.ends_with(b".log"),
        "build/" => is_dir && name == b"build",
        "secret" => name == b"secret",
        _ => false,
    })
}

/// Every path ignored-and-present in `tree` (the paths under such a directory are covered by
/// their ancestor).
fn ignored_present(tree: &Tree) -> Vec<Vec<u8>> {
    let rules = tree
        .get(&b".gitignore"[..])
        .filter(|s| s.kind == 'f')
        .map(|s| String::from_utf8_lossy(&s.bytes).into_owned())
        .unwrap_or_default();
    tree.iter()
        .filter(|(path, state)| matches(&rules, path, state.kind == 'd'))
        .map(|(path, _)| path.clone())
        .collect()
}

fn cx(call: &str) -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m", call),
        CancellationToken::new(),
    )
}

fn run_case(setup: &[Op], calls: &[Vec<Op>]) -> Result<(), TestCaseError> {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(script(setup))
        .current_dir(&root_path)
        .status()
        .unwrap();
    prop_assert!(status.success());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let host = HostBuilder::new(&root_path)
            .data_dir(data.path())
            .home(None)
            .approvals(Approvals::AllowOnce)
            .background_jobs(false)
            .build()
            .unwrap();
        let turn = host.turn(&TurnSpec::default()).unwrap();
        let before = capture(&root_path);
        let mut covered: Vec<Vec<u8>> = ignored_present(&before);
        for (n, ops) in calls.iter().enumerate() {
            let call = ToolCall::new("bash", json!({"command": script(ops)}));
            let settled = host.settle(&turn, cx(&format!("c{n}")), call).await;
            prop_assert!(settled.model_result().is_some(), "{:?}", settled.outcome);
            prop_assert!(
                settled
                    .adjustments
                    .iter()
                    .all(|a| !a.starts_with("snapshot:")),
                "{:?}",
                settled.adjustments
            );
            covered.extend(ignored_present(&capture(&root_path)));
        }
        let after = capture(&root_path);
        let is_covered = |path: &[u8]| {
            ancestors_or_self(path)
                .iter()
                .any(|a| covered.iter().any(|c| c.as_slice() == *a))
        };
        let recorded = host.history("s").unwrap().len();
        if recorded == 0 {
            // Only ignored paths changed.
            for path in before.keys().chain(after.keys()) {
                if before.get(path) != after.get(path) {
                    prop_assert!(is_covered(path), "{:?} changed unrecorded", path);
                }
            }
            return Ok(());
        }
        // The model: covered paths as after the calls, the rest as before them, and the
        // directories that hold a covered path kept.
        let mut expected = Tree::new();
        for (path, state) in &before {
            if !is_covered(path) {
                expected.insert(path.clone(), state.clone());
            }
        }
        let mut kept_only_kind = Vec::new();
        let mut refused = false;
        for (path, state) in &after {
            if !is_covered(path) {
                continue;
            }
            expected.insert(path.clone(), state.clone());
            for ancestor in ancestors_or_self(path).into_iter().skip(1) {
                if is_covered(ancestor) {
                    continue;
                }
                match expected.get(ancestor) {
                    None => {
                        expected.insert(ancestor.to_vec(), after[ancestor].clone());
                        kept_only_kind.push(ancestor.to_vec());
                    }
                    Some(state) if state.kind != 'd' => refused = true,
                    Some(_) => {}
                }
            }
        }
        let report = host
            .undo(Some("s"), UndoTarget::Last(recorded), false, false)
            .await
            .unwrap();
        let undone = capture(&root_path);
        if refused {
            prop_assert_eq!(
                &report.outcome,
                &UndoOutcome::Refused,
                "{}",
                report.render()
            );
            prop_assert_eq!(&undone, &after);
            return Ok(());
        }
        prop_assert!(
            matches!(
                report.outcome,
                UndoOutcome::Applied(_) | UndoOutcome::NothingToDo
            ),
            "{}",
            report.render()
        );
        let mut compared = undone.clone();
        for path in &kept_only_kind {
            if let (Some(have), Some(want)) = (compared.get_mut(path), expected.get(path)) {
                prop_assert_eq!(have.kind, 'd');
                have.mode = want.mode;
            }
        }
        prop_assert_eq!(&compared, &expected, "{}", report.render());
        if !report.applied() {
            return Ok(());
        }
        // Redo: undoing the undo.
        let redo = host
            .undo(Some("s"), UndoTarget::Last(1), false, false)
            .await
            .unwrap();
        prop_assert!(
            redo.applied() || redo.outcome == UndoOutcome::NothingToDo,
            "{}",
            redo.render()
        );
        prop_assert_eq!(&capture(&root_path), &after, "{}", redo.render());
        Ok(())
    })
}

fn cases() -> u32 {
    if std::env::var_os("TACKLE_DEEP").is_some() {
        2048
    } else {
        256
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    // spec: LAW-UNDO
    /// Random bash calls through a host, undone at once, then redone.
    #[test]
    fn undo_restores_the_tree_and_redo_restores_the_calls(
        setup in proptest::collection::vec(op(), 0..8),
        calls in proptest::collection::vec(proptest::collection::vec(op(), 1..4), 1..5),
    ) {
        run_case(&setup, &calls)?;
    }
}
