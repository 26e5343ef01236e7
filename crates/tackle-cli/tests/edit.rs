//! End-to-end tests of `tackle call edit` and `tackle call apply_patch` for the edit-safety
//! classes: a tolerant match must never change a line the model did not quote, `replaceAll` on
//! a large file must be correct, and indented patch markers must be read as markers. Each test
//! runs the real binary on a fresh Location after a `call read`, as a model's turn would.
//!
//! `codex_apply_patch_scenarios` runs codex's own apply-patch fixtures when
//! `../shared/conformance/codex-apply-patch/scenarios` exists next to the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};
use tempfile::TempDir;

/// A Location root and a private data directory and home.
struct Location {
    root: TempDir,
    data: TempDir,
    home: TempDir,
}

/// What one `tackle call` printed and its exit status.
struct Called {
    code: Option<i32>,
    stdout: String,
}

impl Location {
    fn new() -> Self {
        Location {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn put(&self, name: &str, text: &str) {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn text(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap()
    }

    /// `tackle call NAME -` with the arguments on stdin, in session `s`.
    fn call(&self, name: &str, args: Value) -> Called {
        let output = Command::cargo_bin("tackle")
            .unwrap()
            .args(["--root"])
            .arg(self.root.path())
            .args(["--session", "s", "call", name, "-", "--yes"])
            .env("HOME", self.home.path())
            .env("TACKLE_DATA_DIR", self.data.path())
            .write_stdin(args.to_string())
            .output()
            .unwrap();
        Called {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
        }
    }

    fn read(&self, name: &str) {
        let read = self.call("read", json!({ "filePath": name }));
        assert_eq!(read.code, Some(0), "{}", read.stdout);
    }

    fn edit(&self, name: &str, old: &str, new: &str, replace_all: bool) -> Called {
        self.call(
            "edit",
            json!({ "filePath": name, "oldString": old, "newString": new, "replaceAll": replace_all }),
        )
    }
}

/// Asserts the edit was refused with a message showing the closest region, and the file kept.
fn assert_refused(location: &Location, called: &Called, name: &str, original: &str) {
    assert_eq!(called.code, Some(1), "{}", called.stdout);
    assert!(
        called.stdout.contains("oldString was not found"),
        "{}",
        called.stdout
    );
    assert_eq!(location.text(name), original);
}

#[test]
fn tolerant_block_with_a_misremembered_middle_line_is_refused() {
    let l = Location::new();
    let original =
        "fn launch(pad: u8) {\n    check_weather();\n    count_down(10);\n    ignite(pad);\n}\n";
    l.put("launch.rs", original);
    l.read("launch.rs");
    // The model remembers `check_fuel` where the file says `check_weather`, and changes only the
    // last statement. The old ladder rewrote the real middle line with the imagined one.
    let called = l.edit(
        "launch.rs",
        "fn launch(pad: u8) {\n    check_fuel();\n    count_down(10);\n    ignite(pad);\n}",
        "fn launch(pad: u8) {\n    check_fuel();\n    count_down(10);\n    ignite(pad + 1);\n}",
        false,
    );
    assert_refused(&l, &called, "launch.rs", original);
    assert!(called.stdout.contains("check_weather"), "{}", called.stdout);

    // A middle line that is merely similar is refused too.
    let called = l.edit(
        "launch.rs",
        "fn launch(pad: u8) {\n    check_weathers();\n    count_down(10);\n    ignite(pad);\n}",
        "fn launch(pad: u8) {}",
        false,
    );
    assert_refused(&l, &called, "launch.rs", original);
}

#[test]
fn tolerant_block_never_deletes_a_line_the_model_did_not_quote() {
    let l = Location::new();
    let original = "fn total(xs: &[u32]) -> u32 {\n    let mut sum = 0;\n    audit(xs);\n    for x in xs { sum += x; }\n    sum\n}\n";
    l.put("total.rs", original);
    l.read("total.rs");
    // The quote lacks the `audit(xs);` line; replacing the block would delete it unseen.
    let called = l.edit(
        "total.rs",
        "fn total(xs: &[u32]) -> u32 {\n    let mut sum = 0;\n    for x in xs { sum += x; }\n    sum\n}",
        "fn total(xs: &[u32]) -> u32 {\n    xs.iter().sum()\n}",
        false,
    );
    assert_refused(&l, &called, "total.rs", original);
}

#[test]
fn tolerant_whitespace_match_never_lands_inside_an_identifier() {
    let l = Location::new();
    let original = "let vmax  = 50;\nlet limit = 5;\n";
    l.put("limits.rs", original);
    l.read("limits.rs");
    let called = l.edit("limits.rs", "max = 5", "max = 6", false);
    assert_eq!(called.code, Some(1), "{}", called.stdout);
    assert_eq!(l.text("limits.rs"), original);
}

#[test]
fn tolerant_escape_match_unescapes_new_string_too() {
    let l = Location::new();
    l.put("steps.py", "prepare()\nrun()\n");
    l.read("steps.py");
    // The model double-escaped both strings: `\n` arrives as a backslash and an `n`.
    let called = l.edit(
        "steps.py",
        "prepare()\\nrun()",
        "prepare()\\nrun(fast=True)",
        false,
    );
    assert_eq!(called.code, Some(0), "{}", called.stdout);
    assert_eq!(l.text("steps.py"), "prepare()\nrun(fast=True)\n");
    assert!(
        called.stdout.contains("escape_normalized"),
        "{}",
        called.stdout
    );
}

/// Issue 26, case 7: the comma the quote left out stays, or Python joins two strings silently.
#[test]
fn a_trailing_comma_left_out_of_the_quote_survives_the_edit() {
    let l = Location::new();
    l.put(
        "names.py",
        "NAMES = [\n    'alpha',\n    'beta',\n    'delta',\n]\n",
    );
    l.read("names.py");
    let called = l.edit("names.py", "    'beta'\n", "    'gamma'\n", false);
    assert_eq!(called.code, Some(0), "{}", called.stdout);
    assert_eq!(
        l.text("names.py"),
        "NAMES = [\n    'alpha',\n    'gamma',\n    'delta',\n]\n"
    );
    // Where no new line clearly stands for the quoted one, nothing is written.
    let before = l.text("names.py");
    let called = l.edit("names.py", "    'gamma'\n", "    'g1'\n    'g2'\n", false);
    assert_eq!(called.code, Some(1), "{}", called.stdout);
    assert!(
        called
            .stdout
            .contains("the file has `'gamma',` where oldString has `'gamma'`"),
        "{}",
        called.stdout
    );
    assert_eq!(l.text("names.py"), before);
}

/// Issue 26, case 7: ASCII quotes in the quote match the file's typographic ones, which stay.
#[test]
fn typographic_quotes_match_ascii_ones_and_stay_in_the_file() {
    let l = Location::new();
    l.put(
        "notes.md",
        "Please don\u{2019}t stop the \u{201C}main\u{201D} loop.\n",
    );
    l.read("notes.md");
    let called = l.edit(
        "notes.md",
        "don't stop the \"main\" loop",
        "don't pause the \"main\" loop",
        false,
    );
    assert_eq!(called.code, Some(0), "{}", called.stdout);
    assert_eq!(
        l.text("notes.md"),
        "Please don\u{2019}t pause the \u{201C}main\u{201D} loop.\n"
    );
    assert!(
        called.stdout.contains("quote_normalized"),
        "{}",
        called.stdout
    );
}

#[test]
fn tolerant_match_keeps_the_bytes_of_lines_the_model_left_alone() {
    let l = Location::new();
    let original = "fn f() {\n\tlet  a = 1;\n\tlet b = 2;\n}\n";
    l.put("f.rs", original);
    l.read("f.rs");
    // Spaces instead of tabs, a collapsed double space and no semicolons in the quote.
    let called = l.edit(
        "f.rs",
        "fn f() {\n    let a = 1\n    let b = 2\n}",
        "fn f() {\n    let a = 1\n    let b = 3;\n}",
        false,
    );
    assert_eq!(called.code, Some(0), "{}", called.stdout);
    assert_eq!(l.text("f.rs"), "fn f() {\n\tlet  a = 1;\n\tlet b = 3;\n}\n");
    assert!(
        called.stdout.contains("-\tlet b = 2;\n+\tlet b = 3;"),
        "{}",
        called.stdout
    );
}

#[test]
fn replace_all_on_every_line_of_a_twenty_thousand_line_file() {
    let l = Location::new();
    let original: String = (0..20_000)
        .map(|i| format!("old_name_{i} = {i};\n"))
        .collect();
    l.put("big.txt", &original);
    l.read("big.txt");
    let called = l.edit("big.txt", "old_name", "new_name", true);
    assert_eq!(called.code, Some(0), "{}", called.stdout);
    assert!(
        called
            .stdout
            .contains("Edited big.txt (+20,000 -20,000 lines)"),
        "{}",
        &called.stdout[..called.stdout.len().min(400)]
    );
    assert_eq!(l.text("big.txt"), original.replace("old_name", "new_name"));
}

#[test]
fn apply_patch_reads_indented_markers_as_markers() {
    let l = Location::new();
    l.put("notes.txt", "draft\n");
    l.read("notes.txt");
    let patch =
        "*** Begin Patch\n  *** Update File: notes.txt\n@@\n-draft\n+final\n *** End Patch\n";
    let called = l.call("apply_patch", json!({ "patchText": patch }));
    assert_eq!(called.code, Some(0), "{}", called.stdout);
    assert_eq!(l.text("notes.txt"), "final\n");
}

/// Every file under `dir`, by relative path.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !dir.is_dir() {
        return out;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        let path = to.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

#[test]
fn codex_apply_patch_scenarios() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/codex-apply-patch/scenarios");
    if !scenarios.is_dir() {
        eprintln!("skipped: {} is absent", scenarios.display());
        return;
    }
    // tackle refuses these by design (Move and Add never overwrite; a patch is all or
    // nothing), where codex changes files: each must be refused with nothing written.
    let refused_by_design = ["010_", "011_", "015_"];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&scenarios)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("patch.txt").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 23, "only {} scenarios", dirs.len());
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let l = Location::new();
        copy_tree(&dir.join("input"), l.root.path());
        let before = tree(l.root.path());
        for rel in before.keys() {
            l.read(rel);
        }
        let patch = std::fs::read_to_string(dir.join("patch.txt")).unwrap();
        let called = l.call("apply_patch", json!({ "patchText": patch }));
        let after = tree(l.root.path());
        let by_design = refused_by_design.iter().any(|p| name.starts_with(p));
        let expected = if by_design {
            before
        } else {
            tree(&dir.join("expected"))
        };
        if after != expected || (by_design && called.code != Some(1)) {
            failures.push(format!(
                "{name}: exit {:?}, files {:?}, expected {:?}: {}",
                called.code,
                after.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                called.stdout.lines().next().unwrap_or("")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
