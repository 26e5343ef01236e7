//! The read rules hold in every tool that shows file content: random trees (with symlinks) and
//! random `read` rules, driven through `read` and `grep` in every way a file can be named.

use std::path::Path;
use std::sync::{Arc, OnceLock, Weak};

use proptest::prelude::*;
use serde_json::json;
use tackle_core::{CallIdentity, CancellationToken, Context, InvocationOutcome};
use tackle_permission::{
    Action, Approver, MemorySavedApprovals, PermissionRequest, PermissionService, Reply, Rule,
    RuleSource, Ruleset,
};

use crate::fs::LocationFs;
use crate::gate::Gate;
use crate::tools::{ToolEnv, file_tools, search_tools};

/// Files a tree may hold: hidden ones, `.env` files, nested directories.
const NAMES: &[&str] = &[
    "a.txt",
    ".env",
    "prod.env",
    "src/main.rs",
    "src/.env",
    "src/deep/x.env",
    "docs/notes.md",
    ".hidden/key.txt",
];

/// Patterns a rule may use.
const PATTERNS: &[&str] = &[
    "*",
    "*.env",
    ".env",
    "src/*",
    "src/**",
    "*.txt",
    "docs/*",
    ".hidden/*",
    "a.txt",
    "*/.env",
];

/// A person who refuses every question at once.
struct Refuser(OnceLock<Weak<PermissionService>>);

impl Approver for Refuser {
    fn ask(&self, request: &PermissionRequest) {
        if let Some(service) = self.0.get().and_then(Weak::upgrade) {
            let _ = service.reply(&request.id, Reply::Reject { message: None });
        }
    }
}

fn env(root: &Path, rules: &Ruleset) -> ToolEnv {
    let refuser = Arc::new(Refuser(OnceLock::new()));
    let service = Arc::new(
        PermissionService::new("p", refuser.clone(), Arc::new(MemorySavedApprovals::new()))
            .unwrap(),
    );
    let _ = refuser.0.set(Arc::downgrade(&service));
    let rules = rules.clone();
    ToolEnv::new(LocationFs::new(root).unwrap())
        .with_gate(Gate::new(service, move |_| rules.clone()))
}

/// Runs `name` with `args`: the text the model reads, success or failure.
async fn run(env: &ToolEnv, name: &str, args: serde_json::Value) -> String {
    let tool = file_tools(env)
        .into_iter()
        .chain(search_tools(env))
        .find(|(n, _)| *n == name)
        .map(|(_, tool)| tool)
        .unwrap();
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    );
    match tool.invoke(args.to_string().into(), cx).await.outcome {
        InvocationOutcome::Completed(output) => output
            .content
            .iter()
            .filter_map(|part| part.as_text())
            .collect::<Vec<_>>()
            .join("\n"),
        InvocationOutcome::Failed(failure) => failure.to_string(),
        other => panic!("unexpected outcome {other:?}"),
    }
}

/// The secret each file holds: unique, and found by the pattern `SECRET-`.
fn secret(index: usize) -> String {
    format!("SECRET-{index}-END")
}

fn cases() -> u32 {
    if std::env::var_os("TACKLE_DEEP").is_some() {
        256
    } else {
        16
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn no_tool_shows_content_whose_read_is_not_allowed(
        files in prop::sample::subsequence(NAMES, 1..=NAMES.len()),
        links in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        dir_link in any::<bool>(),
        rules in prop::collection::vec(
            (prop::sample::select(PATTERNS), prop::sample::select(&[Action::Allow, Action::Ask, Action::Deny][..])),
            0..5,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (index, name) in files.iter().enumerate() {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("{}\n", secret(index))).unwrap();
        }
        // Links at the root to some of the files: `link0` → `src/.env`.
        let mut link_names = Vec::new();
        for (number, index) in links.iter().enumerate() {
            let target = index.index(files.len());
            std::os::unix::fs::symlink(root.join(files[target]), root.join(format!("link{number}"))).unwrap();
            link_names.push(format!("link{number}"));
        }
        // A link to a directory: the files below it are not links, their directory is.
        if dir_link && root.join("src").is_dir() {
            std::os::unix::fs::symlink(root.join("src"), root.join("linkdir")).unwrap();
            link_names.push("linkdir".to_owned());
        }
        let mut ruleset = Ruleset::new();
        ruleset.push(Rule::new("*", "*", Action::Allow, RuleSource::Default));
        for (pattern, action) in &rules {
            ruleset.push(Rule::new("read", pattern, *action, RuleSource::Default));
        }
        // The model: a file may be shown when `read` on its real name is allowed outright.
        let shown: Vec<bool> = files
            .iter()
            .map(|name| ruleset.evaluate("read", name) == Action::Allow)
            .collect();
        let env = env(root, &ruleset);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let check = |text: &str, what: &str| -> Result<(), TestCaseError> {
            for (index, allowed) in shown.iter().enumerate() {
                if !allowed {
                    prop_assert!(!text.contains(&secret(index)), "{what} showed {}: {text}", files[index]);
                }
            }
            Ok(())
        };

        // The whole tree, each directory, each file and each link, by grep and by read.
        let mut paths: Vec<String> = vec![".".to_owned(), "src".to_owned(), "docs".to_owned()];
        paths.extend(files.iter().map(|name| (*name).to_owned()));
        paths.extend(link_names.iter().cloned());
        paths.push(root.join(files[0]).to_string_lossy().into_owned());
        for path in &paths {
            let grep = runtime.block_on(run(&env, "grep", json!({"pattern": "SECRET-", "path": path})));
            check(&grep, &format!("grep {path}"))?;
            let read = runtime.block_on(run(&env, "read", json!({"filePath": path})));
            check(&read, &format!("read {path}"))?;
        }
        // What may be shown is shown: a search of the whole tree finds every allowed file.
        let all = runtime.block_on(run(&env, "grep", json!({"pattern": "SECRET-"})));
        for (index, allowed) in shown.iter().enumerate() {
            if *allowed {
                prop_assert!(all.contains(&secret(index)), "grep hid {}: {all}", files[index]);
            }
        }
    }
}
