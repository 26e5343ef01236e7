//! grep answered from the live index allocates nothing per file in scope, read rules included:
//! alone in its own test binary, because it counts the allocations of the whole process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tackle_builtins::index::{IndexOptions, SearchIndex};
use tackle_builtins::{Gate, LocationFs, ToolEnv, search_tools};
use tackle_core::{CallIdentity, CancellationToken, Context, InvocationOutcome};
use tackle_permission::{
    Action, Approver, MemorySavedApprovals, PermissionRequest, PermissionService, Rule, RuleSource,
    Ruleset,
};

/// The system allocator, counting every allocation on every thread.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// A test-only wrapper that forwards every call to the system allocator unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator, with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` through this allocator, with this layout.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Nobody answers; the rules below decide every question grep asks.
struct NoOne;

impl Approver for NoOne {
    fn ask(&self, _request: &PermissionRequest) {}
}

/// A tree of `files` files in nested directories, none holding the needle, and a `.env` file
/// that the read rules withhold.
fn tree(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("d{}/e{}", i % 7, i % 3));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("file{i}.txt")), format!("line {i}\n")).unwrap();
    }
    std::fs::write(root.join("prod.env"), "KEY=1\n").unwrap();
}

/// The tools of `root` under read rules that allow everything but `.env` files, answering
/// from `index`.
fn env(root: &Path, index: &SearchIndex) -> ToolEnv {
    let service = Arc::new(
        PermissionService::new("p", Arc::new(NoOne), Arc::new(MemorySavedApprovals::new()))
            .unwrap(),
    );
    let rules: Ruleset = [
        Rule::new("*", "*", Action::Allow, RuleSource::Default),
        Rule::new("read", "*.env", Action::Ask, RuleSource::Default),
        Rule::new("read", "*.env.*", Action::Ask, RuleSource::Default),
    ]
    .into_iter()
    .collect();
    ToolEnv::new(LocationFs::new(root).unwrap())
        .with_gate(Gate::new(service, move |_| rules.clone()))
        .with_index(Arc::new(index.clone()))
}

/// The allocations of one grep call that matches nothing, after two to warm up, and its text.
async fn allocations_of_a_call(files: usize) -> (usize, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    tree(&root, files);
    let index = SearchIndex::start(&root, IndexOptions::default());
    assert!(index.wait_built(Duration::from_secs(60)));
    let env = env(&root, &index);
    let grep = search_tools(&env)
        .into_iter()
        .find(|(name, _)| *name == "grep")
        .unwrap()
        .1;
    let mut counted = (0, String::new());
    for _ in 0..3 {
        let cx = Context::new(
            CallIdentity::new("s", "build", "m", "c"),
            CancellationToken::new(),
        );
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let outcome = grep
            .invoke(json!({"pattern": "absent_needle"}).to_string().into(), cx)
            .await
            .outcome;
        let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        let InvocationOutcome::Completed(output) = outcome else {
            panic!("grep failed: {outcome:?}");
        };
        counted = (allocations, output.structured.to_string());
    }
    counted
}

#[tokio::test]
async fn grep_from_the_index_allocates_nothing_per_file_in_scope() {
    let (fewer, text) = allocations_of_a_call(500).await;
    assert!(text.contains("No matches found"), "{text}");
    // The read rules were applied to every file: the `.env` file is withheld and counted.
    assert!(text.contains("1 file was not searched"), "{text}");
    let (more, _) = allocations_of_a_call(3_000).await;
    // 2,500 more files may cost a few allocations (larger bit sets), never one per file.
    assert!(
        more < fewer + 250,
        "{fewer} allocations for 500 files, {more} for 3,000"
    );
}
