//! Containment at the edges, through a real host: a directory swapped for a symlink while writes
//! run, symlinks that lead out of the Location under every walker, FIFOs and devices, 255-byte
//! names, left-over temporary files, absurd paths, symlinks deleted and moved by a patch, and
//! the directories outside the root that need no question.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tackle_core::{CallIdentity, CancellationToken, Context, Outcome, Settlement, ToolCall};
use tackle_host::{Approvals, Host, HostBuilder, TurnSpec};
use tackle_registry::Turn;
use tempfile::TempDir;

/// A Location `<tmp>/root`, a fake home `<tmp>/home`, an outside directory `<tmp>/outside`.
struct Place {
    tmp: TempDir,
    host: Host,
    turn: Turn,
}

impl Place {
    fn new(approvals: Approvals) -> Self {
        Self::with(approvals, |_| {})
    }

    /// A place whose root `prepare` fills before the host opens (skills are found at open).
    fn with(approvals: Approvals, prepare: impl FnOnce(&Path)) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        for dir in ["root", "home", "outside", "data"] {
            std::fs::create_dir(tmp.path().join(dir)).unwrap();
        }
        let tmp_path = std::fs::canonicalize(tmp.path()).unwrap();
        prepare(&tmp_path);
        let host = HostBuilder::new(tmp_path.join("root"))
            .data_dir(tmp_path.join("data"))
            .home(Some(tmp_path.join("home")))
            .approvals(approvals)
            .build()
            .unwrap();
        let turn = host.turn(&TurnSpec::default()).unwrap();
        Self { tmp, host, turn }
    }

    fn dir(&self, name: &str) -> PathBuf {
        std::fs::canonicalize(self.tmp.path()).unwrap().join(name)
    }

    fn root(&self) -> PathBuf {
        self.dir("root")
    }

    async fn call(&self, tool: &str, args: Value) -> Settlement {
        let cx = Context::new(
            CallIdentity::new("s", "build", "m", format!("{tool}-call")),
            CancellationToken::new(),
        );
        let settle = self.host.settle(&self.turn, cx, ToolCall::new(tool, args));
        tokio::time::timeout(Duration::from_secs(10), settle)
            .await
            .unwrap_or_else(|_| panic!("`{tool}` did not answer within 10 s"))
    }
}

fn text(settlement: &Settlement) -> String {
    settlement
        .model_result()
        .map(|result| {
            result
                .content
                .iter()
                .filter_map(|c| c.as_text())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_else(|| format!("{:?}", settlement.outcome))
}

fn succeeded(settlement: &Settlement) -> bool {
    matches!(settlement.outcome, Outcome::Success(_))
}

#[tokio::test]
async fn a_directory_swapped_for_a_symlink_never_redirects_a_write() {
    // Nobody can approve an outside path, so every write is inside or refused.
    let place = Place::new(Approvals::default());
    let root = place.root();
    let outside = place.dir("outside");
    std::fs::create_dir(root.join("sub")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (root, outside, stop) = (root.clone(), outside.clone(), stop.clone());
        std::thread::spawn(move || {
            let (sub, real) = (root.join("sub"), root.join("sub-real"));
            while !stop.load(Ordering::Relaxed) {
                // Swap `sub` for a link to the outside directory, then back.
                if std::fs::rename(&sub, &real).is_ok() {
                    let _ = symlink(&outside, &sub);
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(&sub);
                    let _ = std::fs::rename(&real, &sub);
                }
                // Leave the real directory in place for a moment, so that on a loaded machine
                // some writes still find it and the check below is not vacuous.
                std::thread::sleep(Duration::from_micros(100));
            }
        })
    };
    // At least 100 attempts, and more until 10 have succeeded (at most 1,000).
    let mut written = 0;
    let mut attempts = 0;
    while attempts < 100 || (written < 10 && attempts < 1_000) {
        let i = attempts;
        attempts += 1;
        let call = place
            .call(
                "write",
                json!({"filePath": format!("sub/f{i}.txt"), "content": "x\n"}),
            )
            .await;
        written += usize::from(succeeded(&call));
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let leaked: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        leaked.is_empty(),
        "writes landed outside the root: {leaked:?}"
    );
    assert!(written > 0, "no write succeeded at all");
    // Every reported write is inside, under `sub` or where `sub` was parked at that moment.
    let inside = |i: usize| {
        root.join(format!("sub/f{i}.txt")).is_file()
            || root.join(format!("sub-real/f{i}.txt")).is_file()
    };
    assert_eq!((0..attempts).filter(|i| inside(*i)).count(), written);
}

/// Links from the root to a file and a directory outside, to the home and to `/etc`.
fn outward_links(place: &Place) {
    let (root, outside) = (place.root(), place.dir("outside"));
    std::fs::write(outside.join("secret.txt"), "needle outside\n").unwrap();
    std::fs::create_dir(outside.join("dir")).unwrap();
    std::fs::write(outside.join("dir/deep.txt"), "needle deep\n").unwrap();
    std::fs::write(place.dir("home").join(".profile"), "needle home\n").unwrap();
    std::fs::write(root.join("inside.txt"), "needle inside\n").unwrap();
    symlink(outside.join("secret.txt"), root.join("file-link")).unwrap();
    symlink(outside.join("dir"), root.join("dir-link")).unwrap();
    symlink(place.dir("home"), root.join("home-link")).unwrap();
    symlink("/etc", root.join("etc-link")).unwrap();
    // A link that stays inside is followed.
    std::fs::create_dir(root.join("real")).unwrap();
    std::fs::write(root.join("real/kept.txt"), "needle kept\n").unwrap();
    symlink(root.join("real"), root.join("alias")).unwrap();
}

#[tokio::test]
async fn no_walker_follows_a_symlink_out_of_the_location() {
    let place = Place::new(Approvals::AllowOnce);
    outward_links(&place);
    let glob = text(&place.call("glob", json!({"pattern": "**/*"})).await);
    let grep = text(&place.call("grep", json!({"pattern": "needle"})).await);
    let list = text(&place.call("list", json!({})).await);
    for (tool, out) in [("glob", &glob), ("grep", &grep)] {
        for leak in ["secret", "deep.txt", ".profile", "passwd", "hostname"] {
            assert!(
                !out.contains(leak),
                "{tool} followed a link out: {leak} in\n{out}"
            );
        }
        assert!(
            out.contains("inside.txt") && out.contains("kept.txt"),
            "{tool}:\n{out}"
        );
    }
    // list shows the links themselves and never descends into them.
    assert!(
        list.contains("etc-link") && !list.contains("passwd"),
        "{list}"
    );
}

#[tokio::test]
async fn skills_behind_a_link_out_of_the_location_are_not_loaded() {
    let place = Place::with(Approvals::AllowOnce, |tmp| {
        let (root, outside) = (tmp.join("root"), tmp.join("outside"));
        let skill = |dir: &Path, name: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(
                dir.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: Use {name}.\n---\nBody.\n"),
            )
            .unwrap();
        };
        skill(&outside.join("stolen"), "stolen");
        skill(&root.join(".tackle/skills/local"), "local");
        symlink(outside.join("stolen"), root.join(".tackle/skills/stolen")).unwrap();
    });
    let skill = place.turn.get("skill").expect("the local skill is offered");
    let description = &skill.definition().description;
    assert!(description.contains("local"), "{description}");
    assert!(!description.contains("stolen"), "{description}");
}

#[tokio::test]
async fn fifos_and_devices_are_refused_at_once() {
    let place = Place::new(Approvals::AllowOnce);
    let root = place.root();
    nix::unistd::mkfifo(
        &root.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    for (tool, args) in [
        ("read", json!({"filePath": "pipe"})),
        ("write", json!({"filePath": "pipe", "content": "x"})),
        (
            "edit",
            json!({"filePath": "pipe", "oldString": "a", "newString": "b"}),
        ),
    ] {
        let call = place.call(tool, args).await;
        assert!(
            text(&call).contains("is a named pipe (FIFO), not a regular file"),
            "{tool}: {}",
            text(&call)
        );
    }
    // A link to /dev/zero, approved: still refused, without reading a byte.
    symlink("/dev/zero", root.join("zeros")).unwrap();
    let call = place.call("read", json!({"filePath": "zeros"})).await;
    assert!(
        text(&call).contains("is a character device"),
        "{}",
        text(&call)
    );
    // A device node in the root itself (needs root privileges to make).
    let dev = root.join("null-dev");
    let made = nix::sys::stat::mknod(
        &dev,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 5),
    );
    if made.is_ok() {
        let call = place.call("read", json!({"filePath": "null-dev"})).await;
        assert!(
            text(&call).contains("is a character device"),
            "{}",
            text(&call)
        );
    }
}

#[tokio::test]
async fn names_of_255_bytes_can_be_written_edited_and_patched() {
    let place = Place::new(Approvals::AllowOnce);
    let name = format!("{}.txt", "n".repeat(251));
    assert_eq!(name.len(), 255);
    let write = place
        .call("write", json!({"filePath": name, "content": "one\n"}))
        .await;
    assert!(succeeded(&write), "{}", text(&write));
    let edit = place
        .call(
            "edit",
            json!({"filePath": name, "oldString": "one", "newString": "two"}),
        )
        .await;
    assert!(succeeded(&edit), "{}", text(&edit));
    let patch =
        format!("*** Begin Patch\n*** Update File: {name}\n@@\n-two\n+three\n*** End Patch\n");
    let patched = place.call("apply_patch", json!({"patchText": patch})).await;
    assert!(succeeded(&patched), "{}", text(&patched));
    assert_eq!(
        std::fs::read_to_string(place.root().join(&name)).unwrap(),
        "three\n"
    );
    // One byte more is refused before anything touches the disk.
    let long = format!("{}.txt", "n".repeat(252));
    let refused = place
        .call("write", json!({"filePath": long, "content": "x"}))
        .await;
    assert!(
        text(&refused).contains("a name is at most 255 bytes"),
        "{}",
        text(&refused)
    );
}

#[tokio::test]
async fn a_ten_megabyte_path_is_refused_before_anything_else() {
    let place = Place::new(Approvals::AllowOnce);
    let path = "p".repeat(10 * 1024 * 1024);
    let call = place.call("read", json!({ "filePath": path })).await;
    let message = text(&call);
    assert!(
        message.contains("paths are at most 4096 bytes"),
        "{}",
        &message[..200.min(message.len())]
    );
    assert!(
        message.len() < 1_000,
        "the refusal is short: {} bytes",
        message.len()
    );
}

#[tokio::test]
async fn left_over_temporary_files_are_hidden_and_swept() {
    let place = Place::new(Approvals::AllowOnce);
    let root = place.root();
    let stale = root.join(".tackle-abcdefghijkl.tmp");
    let fresh = root.join(".tackle-mnopqrstuvwx.tmp");
    std::fs::write(&stale, "left by a crash").unwrap();
    std::fs::write(&fresh, "being written").unwrap();
    let two_days_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(two_days_ago)
        .unwrap();
    for (tool, args) in [
        ("glob", json!({"pattern": "**/*"})),
        ("list", json!({})),
        ("grep", json!({"pattern": "crash|written"})),
    ] {
        let out = text(&place.call(tool, args).await);
        assert!(
            !out.contains(".tackle-"),
            "{tool} shows a temporary file:\n{out}"
        );
    }
    let write = place
        .call("write", json!({"filePath": "new.txt", "content": "x\n"}))
        .await;
    assert!(succeeded(&write), "{}", text(&write));
    assert!(!stale.exists(), "the stale temporary file was swept");
    assert!(fresh.exists(), "a recent temporary file is left alone");
}

#[tokio::test]
async fn a_patch_deletes_and_moves_symlinks_not_what_they_point_to() {
    let place = Place::new(Approvals::AllowOnce);
    let (root, outside) = (place.root(), place.dir("outside"));
    std::fs::write(outside.join("target.txt"), "keep me\n").unwrap();
    std::fs::write(outside.join("other.txt"), "keep me too\n").unwrap();
    symlink(outside.join("target.txt"), root.join("gone-link")).unwrap();
    symlink(outside.join("other.txt"), root.join("moved-link")).unwrap();
    let patch = "*** Begin Patch\n*** Delete File: gone-link\n*** Update File: moved-link\n\
                 *** Move to: sub/moved-link\n*** End Patch\n";
    let call = place.call("apply_patch", json!({"patchText": patch})).await;
    assert!(succeeded(&call), "{}", text(&call));
    assert!(text(&call).contains("D gone-link (a symlink; what it points to was kept)"));
    assert!(root.join("gone-link").symlink_metadata().is_err());
    assert!(
        root.join("sub/moved-link")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("target.txt")).unwrap(),
        "keep me\n"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("other.txt")).unwrap(),
        "keep me too\n"
    );
}

#[tokio::test]
async fn only_tackle_s_own_directories_outside_the_root_need_no_question() {
    let place = Place::new(Approvals::default());
    // Another program's temp folder: asking is required, and nobody can answer here.
    let theirs = tempfile::tempdir().unwrap();
    std::fs::write(theirs.path().join("notes.txt"), "theirs\n").unwrap();
    let path = theirs.path().join("notes.txt");
    let read = place.call("read", json!({"filePath": path})).await;
    assert!(
        text(&read).contains("Nobody could be asked for permission to run `external_directory`"),
        "{}",
        text(&read)
    );
    // A managed output this session's result named is readable without a question, but
    // changing it asks.
    let printing = json!({"tool": "bash", "parameters": {"command": "seq 1 9000"}});
    let batch = place
        .call("batch", json!({"tool_calls": [printing.clone(), printing]}))
        .await;
    let kept = text(&batch)
        .split_whitespace()
        .find(|w| w.contains("/tool-output/"))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| panic!("no managed output named: {}", text(&batch)));
    let read = place.call("read", json!({"filePath": kept})).await;
    assert!(succeeded(&read), "{}", text(&read));
    let retained = std::fs::read_to_string(&kept).unwrap();
    // One this session's results never named is another session's: not shown, no question.
    let theirs = kept.with_file_name("f".repeat(64));
    std::fs::write(&theirs, "someone else's output\n").unwrap();
    let read = place.call("read", json!({"filePath": theirs})).await;
    assert!(
        text(&read).contains("is a saved output of another session"),
        "{}",
        text(&read)
    );
    let edit = place
        .call(
            "edit",
            json!({"filePath": kept, "oldString": "9000", "newString": "changed"}),
        )
        .await;
    assert!(
        text(&edit).contains("Nobody could be asked for permission to run `edit`"),
        "{}",
        text(&edit)
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), retained);
}
