//! Repository hygiene: module docs on every source file, every law backed by a cited proptest,
//! no skipped or panic-expecting tests, and a real essay at the top of every crate.
//!
//! Paths are relative to the package root (`CARGO_MANIFEST_DIR`). Failures list the offending
//! files, so one run shows everything to fix.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, recursively, skipping `target` and hidden directories.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    pending.push(path);
                }
            } else if kind.is_file() && name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every `.rs` file under `crates/` and `tests/`.
fn all_sources() -> Vec<PathBuf> {
    let mut files = rust_files(&root().join("crates"));
    files.extend(rust_files(&root().join("tests")));
    assert!(files.len() > 10, "found only {files:?}");
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Fails with `what` and the list of offenders, if there are any.
fn assert_none(what: &str, offenders: &[String]) {
    assert!(
        offenders.is_empty(),
        "{what} ({}):\n  {}",
        offenders.len(),
        offenders.join("\n  ")
    );
}

/// The law ID (`LAW-[A-Z-]+`) at the start of `text`, if any.
fn law_id(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("LAW-")?;
    let len = rest
        .find(|c: char| !(c.is_ascii_uppercase() || c == '-'))
        .unwrap_or(rest.len());
    let id = &text[..4 + len];
    let id = id.trim_end_matches('-');
    (id.len() > 4).then_some(id)
}

/// Every law ID cited on a `// spec:` comment line: the line, trimmed, starts with the prefix.
fn citations(line: &str) -> Option<Vec<String>> {
    let rest = line.trim_start().strip_prefix("// spec:")?;
    let mut ids = Vec::new();
    let mut search = rest;
    while let Some(at) = search.find("LAW-") {
        match law_id(&search[at..]) {
            Some(id) => {
                ids.push(id.to_owned());
                search = &search[at + id.len()..];
            }
            None => {
                ids.push(search[at..].split_whitespace().next().unwrap().to_owned());
                search = &search[at + 4..];
            }
        }
    }
    Some(ids)
}

/// The laws `spec/laws.md` defines, as `## LAW-…` headings.
fn defined_laws() -> BTreeSet<String> {
    let spec = read(&root().join("spec/laws.md"));
    let laws: BTreeSet<String> = spec
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .filter_map(|heading| law_id(heading.trim()).map(str::to_owned))
        .collect();
    assert!(
        laws.len() >= 10 && laws.contains("LAW-BOUNDED-OUTPUT"),
        "spec/laws.md headings did not parse: {laws:?}"
    );
    laws
}

/// The laws cited by a `// spec:` comment that sits inside a `proptest!` block and directly
/// above a test function (only doc comments, other comments and attributes in between).
///
/// `proptest!` blocks are top-level items formatted by rustfmt: one opens on a line starting
/// with `proptest! {` and closes at the next line that is exactly `}`.
fn proptest_citations(source: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut laws = BTreeSet::new();
    let mut in_block = false;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("proptest! {") {
            in_block = true;
            continue;
        }
        if in_block && *line == "}" {
            in_block = false;
            continue;
        }
        if !in_block {
            continue;
        }
        let Some(ids) = citations(line) else {
            continue;
        };
        let above_a_test = lines[i + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !(l.starts_with("//") || l.starts_with("#[") || l.is_empty()))
            .is_some_and(|l| l.starts_with("fn ") || l.starts_with("async fn "));
        if above_a_test {
            laws.extend(ids);
        }
    }
    laws
}

#[test]
fn every_source_file_starts_with_a_module_doc() {
    let offenders: Vec<String> = all_sources()
        .iter()
        .filter(|path| !read(path).starts_with("//!"))
        .map(|path| relative(path))
        .collect();
    assert_none("files whose first line is not a `//!` doc", &offenders);
}

#[test]
fn every_law_has_a_cited_proptest() {
    let laws = defined_laws();
    let dir = root().join("tests/it");
    let law_files: Vec<PathBuf> = rust_files(&dir)
        .into_iter()
        .filter(|path| {
            path.parent() == Some(dir.as_path())
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("laws") && n.ends_with(".rs"))
        })
        .collect();
    assert!(
        law_files.iter().any(|p| p.ends_with("laws.rs")),
        "{law_files:?}"
    );
    let mut covered = BTreeSet::new();
    for path in &law_files {
        covered.extend(proptest_citations(&read(path)));
    }
    let missing: Vec<String> = laws
        .difference(&covered)
        .map(|law| {
            format!(
                "{law}: no `// spec: {law}` above a proptest in {}",
                law_files
                    .iter()
                    .map(|p| relative(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    assert_none("laws without a cited proptest", &missing);
}

#[test]
fn every_spec_citation_names_a_defined_law() {
    let laws = defined_laws();
    let mut unknown: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cited = 0;
    for path in all_sources() {
        for (n, line) in read(&path).lines().enumerate() {
            for id in citations(line).into_iter().flatten() {
                cited += 1;
                if !laws.contains(&id) {
                    unknown
                        .entry(id)
                        .or_default()
                        .push(format!("{}:{}", relative(&path), n + 1));
                }
            }
        }
    }
    assert!(cited >= laws.len(), "only {cited} citations found");
    let offenders: Vec<String> = unknown
        .into_iter()
        .map(|(id, at)| format!("{id} cited at {}", at.join(", ")))
        .collect();
    assert_none("citations of laws spec/laws.md does not define", &offenders);
}

#[test]
fn no_test_is_skipped_or_expects_a_panic() {
    // Built from pieces so this file does not match itself.
    let banned = [concat!("#[", "ignore"), concat!("#[", "should_panic")];
    let mut offenders = Vec::new();
    for path in all_sources() {
        for (n, line) in read(&path).lines().enumerate() {
            let compact: String = line.split_whitespace().collect();
            for needle in banned {
                if compact.contains(needle) {
                    offenders.push(format!("{}:{}: {}", relative(&path), n + 1, line.trim()));
                }
            }
        }
    }
    assert_none("skipped or panic-expecting tests", &offenders);
}

#[test]
fn unsafe_code_is_allowed_only_in_the_pre_exec_hooks() {
    // The workspace denies unsafe code. The pre-exec hooks that set the parent-death signal
    // (the bash runner's, and the MCP client's for child servers) and the sandbox's child code
    // (namespaces, Landlock, seccomp between fork and exec) are the exceptions, with core's phase
    // clock (one `RDTSC`) and one test's counting allocator; anything else needs a decision
    // written in ARCHITECTURE.md.
    let needle = concat!("allow(", "unsafe_code)");
    let allowed = [
        "crates/tackle-builtins/src/tools/bash/run.rs",
        "crates/tackle-builtins/tests/index_allocations.rs",
        "crates/tackle-core/src/clock.rs",
        "crates/tackle-mcp/src/client/child.rs",
        "crates/tackle-sandbox/src/child.rs",
        "crates/tackle-sandbox/src/sandboxes.rs",
    ];
    let mut offenders = Vec::new();
    for path in all_sources() {
        let name = relative(&path);
        if !allowed.contains(&name.as_str()) && read(&path).contains(needle) {
            offenders.push(name);
        }
    }
    assert_none("files that allow unsafe code", &offenders);
}

#[test]
fn no_dependency_clock_calibrates_at_start_up() {
    // These clocks measure the TSC against the OS clock on first use: milliseconds of CPU in a
    // process that settles one call. Phase timings use core's `clock.rs`, which calibrates lazily.
    let lock = read(&root().join("Cargo.lock"));
    let offenders: Vec<String> = ["quanta", "minstant", "fastant"]
        .into_iter()
        .filter(|name| lock.contains(&format!("name = \"{name}\"\n")))
        .map(str::to_owned)
        .collect();
    assert_none("clock crates that calibrate at start-up", &offenders);
}

/// Every `Cargo.toml` of the workspace: the root's and each crate's.
fn manifests() -> Vec<PathBuf> {
    let mut manifests = vec![root().join("Cargo.toml")];
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        if manifest.is_file() {
            manifests.push(manifest);
        }
    }
    manifests.sort();
    manifests
}

#[test]
fn a_tool_runs_outside_settlement_only_in_unit_tests() {
    // LAW-SINGLE-EXECUTOR: `AnyTool::invoke` skips resolution, the bound and the journal. It is
    // public only with core's `test-invoke` feature, which only dev-dependencies may enable.
    let tool = read(&root().join("crates/tackle-core/src/tool.rs"));
    let lines: Vec<&str> = tool.lines().collect();
    let public: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with("pub fn invoke("))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(public.len(), 1, "one public `invoke`, behind the feature");
    assert_eq!(
        lines[public[0] - 1].trim(),
        r#"#[cfg(any(test, feature = "test-invoke"))]"#
    );
    let mut offenders = Vec::new();
    for manifest in manifests() {
        let mut section = String::new();
        for (n, line) in read(&manifest).lines().enumerate() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line.to_owned();
            } else if line.contains("test-invoke")
                && !line.starts_with('#')
                && section != "[dev-dependencies]"
                && !(section == "[features]" && line.starts_with("test-invoke ="))
            {
                offenders.push(format!("{}:{} in {section}", relative(&manifest), n + 1));
            }
        }
    }
    assert_none("`test-invoke` enabled outside dev-dependencies", &offenders);
}

/// The tests `spec/laws.md` names (`` `module::test_name` ``), as (module, test) pairs.
fn named_tests(spec: &str) -> BTreeSet<(String, String)> {
    let mut named = BTreeSet::new();
    for quoted in spec.split('`').skip(1).step_by(2) {
        let Some((module, test)) = quoted.split_once("::") else {
            continue;
        };
        let plain = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        };
        if plain(module) && plain(test) {
            named.insert((module.to_owned(), test.to_owned()));
        }
    }
    named
}

#[test]
fn every_test_the_laws_name_exists() {
    let spec = read(&root().join("spec/laws.md"));
    let named = named_tests(&spec);
    assert!(named.len() >= 30, "{named:?}");
    // A module is a file of `tests/it/`, a crate's integration test (`crates/*/tests/serve.rs`)
    // or the `tests.rs` of a crate module (`batch/tests.rs`).
    let sources = all_sources();
    let missing: Vec<String> = named
        .iter()
        .filter(|(module, test)| {
            let defines = format!("fn {test}(");
            !sources.iter().any(|path| {
                let name = relative(path);
                let here = name == format!("tests/it/{module}.rs")
                    || (name.starts_with("crates/")
                        && name.ends_with(&format!("/tests/{module}.rs")))
                    || name.ends_with(&format!("/{module}/tests.rs"));
                here && read(path).contains(&defines)
            })
        })
        .map(|(module, test)| format!("{module}::{test}"))
        .collect();
    assert_none("tests spec/laws.md names that do not exist", &missing);
}

#[test]
fn every_crate_opens_with_an_essay() {
    let crates = std::fs::read_dir(root().join("crates")).unwrap();
    let mut libs: Vec<PathBuf> = crates
        .map(|entry| entry.unwrap().path().join("src/lib.rs"))
        .filter(|lib| lib.is_file())
        .collect();
    libs.sort();
    assert!(libs.len() >= 3, "{libs:?}");
    let offenders: Vec<String> = libs
        .iter()
        .filter_map(|lib| {
            let source = read(lib);
            let doc = source
                .lines()
                .take_while(|line| line.starts_with("//!"))
                .count();
            (doc < 10).then(|| format!("{}: {doc} `//!` lines, want at least 10", relative(lib)))
        })
        .collect();
    assert_none("crates without a module essay", &offenders);
}

#[test]
fn citation_parser_reads_ids_and_only_spec_comments() {
    assert_eq!(
        citations("    // spec: LAW-BOUNDED-OUTPUT"),
        Some(vec!["LAW-BOUNDED-OUTPUT".to_owned()])
    );
    assert_eq!(
        citations("// spec: LAW-A-B, LAW-C."),
        Some(vec!["LAW-A-B".to_owned(), "LAW-C".to_owned()])
    );
    assert_eq!(citations("/// LAW-A-B: text"), None);
    assert_eq!(citations("let x = 1; // spec: LAW-A"), None);
    assert_eq!(citations("// spec: LAW-"), Some(vec!["LAW-".to_owned()]));
    let source = "proptest! {\n    // spec: LAW-X\n    /// Doc.\n    #[test]\n    fn law_x(a in 0..1) {}\n\n    // spec: LAW-Y\n}\n// spec: LAW-Z\nfn z() {}\n";
    assert_eq!(
        proptest_citations(source),
        BTreeSet::from(["LAW-X".to_owned()])
    );
}

/// The dependency tree of `tackle-builtins` with only `features` on, as `cargo tree` prints it.
fn builtins_tree(features: &str) -> String {
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(root())
        .args([
            "tree",
            "--offline",
            "-p",
            "tackle-builtins",
            "--no-default-features",
            "--features",
            features,
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn each_builtin_feature_compiles_only_its_own_stacks() {
    let crates = |tree: &str, names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter(|name| {
                tree.lines()
                    .any(|line| line.starts_with(&format!("{name} v")))
            })
            .map(|name| (*name).to_owned())
            .collect()
    };
    let web = ["reqwest", "rustls", "htmd", "markup5ever_rcdom"];
    let shell = ["tree-sitter", "tree-sitter-bash"];
    // globset comes with `ignore`, which every walker uses; ripgrep's searcher does not.
    let search = ["grep"];
    // The live index's file watcher comes only with `index`.
    let index = ["notify"];
    // The language-server client; diagnostics and their grammars never enter the built-ins.
    let lsp = [
        "tackle-lsp",
        "lsp-types",
        "tackle-diagnostics",
        "tree-sitter-python",
    ];
    for (features, absent) in [
        ("fs", [&web[..], &shell, &search, &lsp, &index].concat()),
        ("search", [&web[..], &shell, &lsp, &index].concat()),
        ("shell", [&web[..], &search, &lsp, &index].concat()),
        ("agent", [&web[..], &shell, &search, &lsp, &index].concat()),
        ("lsp", [&web[..], &shell, &search, &index].concat()),
    ] {
        let tree = builtins_tree(features);
        assert_none(
            &format!("crates compiled with only the `{features}` feature"),
            &crates(&tree, &absent),
        );
    }
    // The check can see them: the full set has every stack.
    let all = builtins_tree("fs,search,index,shell,web,agent,lsp");
    assert_eq!(crates(&all, &index).len(), index.len(), "{all}");
    assert_eq!(crates(&all, &web).len(), web.len(), "{all}");
    assert_eq!(crates(&all, &shell).len(), shell.len());
    assert_eq!(crates(&all, &lsp[..2]).len(), 2, "{all}");
}
