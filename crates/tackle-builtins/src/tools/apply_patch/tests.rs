//! Tests of the apply_patch tool, through `AnyTool::invoke` on a real filesystem.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tackle_core::{
    AnyTool, Arguments, CallIdentity, CancellationToken, Context, InvocationOutcome, SessionId,
};
use tempfile::TempDir;

use super::*;
use crate::fs::LocationFs;

const SESSION: &str = "s1";

struct Setup {
    _dir: TempDir,
    env: ToolEnv,
    tool: AnyTool,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap());
    let tool = tool(&env);
    Setup {
        _dir: dir,
        env,
        tool,
    }
}

fn cx() -> Context {
    Context::new(
        CallIdentity::new(SESSION, "build", "m1", "c1"),
        CancellationToken::new(),
    )
}

fn patch(body: &str) -> String {
    format!("*** Begin Patch\n{body}\n*** End Patch")
}

impl Setup {
    fn root(&self) -> &Path {
        self.env.fs().root()
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// Writes a file without recording a read.
    fn put(&self, relative: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn get(&self, relative: &str) -> Vec<u8> {
        std::fs::read(self.path(relative)).unwrap()
    }

    fn text(&self, relative: &str) -> String {
        String::from_utf8(self.get(relative)).unwrap()
    }

    /// Records the file's current bytes as read by the session.
    async fn mark_read(&self, relative: &str) {
        let target = self.env.fs().resolve(relative).await.unwrap();
        let bytes = self.get(relative);
        self.env
            .read_tracker()
            .record_read(&SessionId::new(SESSION), &target, &bytes);
    }

    /// Writes a file and records it as read.
    async fn put_read(&self, relative: &str, bytes: impl AsRef<[u8]>) {
        self.put(relative, bytes);
        self.mark_read(relative).await;
    }

    /// Runs the tool: the projected text and the structured output, or the failure text.
    async fn run(&self, patch_text: &str) -> Result<(String, Value), String> {
        let arguments = Arguments::from(json!({ "patchText": patch_text }));
        match self.tool.invoke(arguments, cx()).await.outcome {
            InvocationOutcome::Completed(output) => {
                let text = output
                    .content
                    .iter()
                    .filter_map(|part| part.as_text())
                    .collect::<Vec<_>>()
                    .join("");
                Ok((text, output.structured))
            }
            InvocationOutcome::Failed(failure) => Err(failure.to_string()),
            other => panic!("unexpected outcome {other:?}"),
        }
    }

    async fn ok(&self, patch_text: &str) -> (String, Value) {
        match self.run(patch_text).await {
            Ok(done) => done,
            Err(e) => panic!("patch failed: {e}"),
        }
    }

    async fn fails(&self, patch_text: &str) -> String {
        match self.run(patch_text).await {
            Ok((text, _)) => panic!("patch succeeded: {text}"),
            Err(e) => e,
        }
    }
}

#[tokio::test]
async fn add_update_and_delete_in_one_patch() {
    let s = setup();
    s.put_read("keep.txt", "one\ntwo\nthree\n").await;
    s.put_read("gone.txt", "bye\n").await;
    let (text, out) = s
        .ok(&patch(
            "*** Add File: new.txt\n+hello\n+world\n\
             *** Update File: keep.txt\n@@\n one\n-two\n+TWO\n three\n\
             *** Delete File: gone.txt",
        ))
        .await;
    assert_eq!(s.text("new.txt"), "hello\nworld\n");
    assert_eq!(s.text("keep.txt"), "one\nTWO\nthree\n");
    assert!(!s.path("gone.txt").exists());
    assert_eq!(
        text,
        "Success. Updated the following files:\nA new.txt\nM keep.txt\nD gone.txt"
    );
    let files: Vec<PatchedFile> = serde_json::from_value(out["files"].clone()).unwrap();
    let ops: Vec<(&str, &str, usize, usize)> = files
        .iter()
        .map(|f| {
            (
                f.path.as_str(),
                f.operation.as_str(),
                f.additions,
                f.deletions,
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            ("new.txt", "add", 2, 0),
            ("keep.txt", "update", 1, 1),
            ("gone.txt", "delete", 0, 1)
        ]
    );
    assert_eq!(files[1].fuzz, ["exact"]);
    let diff = out["diff"].as_str().unwrap();
    assert!(diff.contains("+hello"), "{diff}");
    assert!(diff.contains("-two\n+TWO"), "{diff}");
    assert!(diff.contains("-bye"), "{diff}");
}

#[tokio::test]
async fn written_files_count_as_read_afterwards() {
    let s = setup();
    s.ok(&patch("*** Add File: a.txt\n+x")).await;
    s.ok(&patch("*** Update File: a.txt\n@@\n-x\n+y")).await;
    assert_eq!(s.text("a.txt"), "y\n");
    s.ok(&patch("*** Delete File: a.txt")).await;
    assert!(!s.path("a.txt").exists());
}

#[tokio::test]
async fn multiple_hunks_in_one_file() {
    let s = setup();
    let original: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    s.put_read("f.txt", &original).await;
    s.ok(&patch(
        "*** Update File: f.txt\n@@\n line 2\n-line 3\n+LINE 3\n line 4\n\
         @@\n line 17\n-line 18\n+LINE 18\n line 19",
    ))
    .await;
    let expected = original
        .replace("line 3\n", "LINE 3\n")
        .replace("line 18\n", "LINE 18\n");
    assert_eq!(s.text("f.txt"), expected);
}

#[tokio::test]
async fn crlf_file_keeps_crlf() {
    let s = setup();
    s.put_read("win.txt", "a\r\nb\r\nc\r\n").await;
    s.ok(&patch("*** Update File: win.txt\n@@\n a\n-b\n+B\n+B2\n c"))
        .await;
    assert_eq!(s.text("win.txt"), "a\r\nB\r\nB2\r\nc\r\n");
}

#[tokio::test]
async fn crlf_patch_text_is_accepted() {
    let s = setup();
    s.put_read("f.txt", "a\nb\n").await;
    s.ok("*** Begin Patch\r\n*** Update File: f.txt\r\n@@\r\n a\r\n-b\r\n+c\r\n*** End Patch\r\n")
        .await;
    assert_eq!(s.text("f.txt"), "a\nc\n");
}

#[tokio::test]
async fn bom_is_kept_and_not_invented() {
    let s = setup();
    s.put_read("bom.txt", b"\xEF\xBB\xBFfirst\nsecond\n").await;
    s.put_read("plain.txt", "first\nsecond\n").await;
    s.ok(&patch(
        "*** Update File: bom.txt\n@@\n-first\n+FIRST\n second\n\
         *** Update File: plain.txt\n@@\n-first\n+FIRST\n second\n\
         *** Add File: added.txt\n+new",
    ))
    .await;
    assert_eq!(s.get("bom.txt"), b"\xEF\xBB\xBFFIRST\nsecond\n");
    assert_eq!(s.get("plain.txt"), b"FIRST\nsecond\n");
    assert_eq!(s.get("added.txt"), b"new\n");
}

#[tokio::test]
async fn insert_only_hunk_lands_after_its_context_line() {
    let s = setup();
    s.put_read(
        "m.py",
        "def foo():\n    return 1\n\ndef bar():\n    return 2\n",
    )
    .await;
    s.ok(&patch(
        "*** Update File: m.py\n@@ def foo():\n+    \"\"\"Doc.\"\"\"",
    ))
    .await;
    assert_eq!(
        s.text("m.py"),
        "def foo():\n    \"\"\"Doc.\"\"\"\n    return 1\n\ndef bar():\n    return 2\n"
    );
}

#[tokio::test]
async fn final_newline_is_kept_or_left_out_as_before() {
    let s = setup();
    s.put_read("with.txt", "a\nb\n").await;
    s.put_read("without.txt", "a\nb").await;
    s.ok(&patch(
        "*** Update File: with.txt\n@@\n-b\n+c\n\
         *** Update File: without.txt\n@@\n-b\n+c",
    ))
    .await;
    assert_eq!(s.text("with.txt"), "a\nc\n");
    assert_eq!(s.text("without.txt"), "a\nc");
}

#[tokio::test]
async fn move_to_a_new_directory_with_changes() {
    let s = setup();
    s.put_read("old.txt", "x\ny\n").await;
    let (text, out) = s
        .ok(&patch(
            "*** Update File: old.txt\n*** Move to: deep/dir/new.txt\n@@\n x\n-y\n+z",
        ))
        .await;
    assert!(!s.path("old.txt").exists());
    assert_eq!(s.text("deep/dir/new.txt"), "x\nz\n");
    assert_eq!(
        text,
        "Success. Updated the following files:\nR old.txt -> deep/dir/new.txt"
    );
    assert_eq!(out["files"][0]["operation"], "move");
    assert_eq!(out["files"][0]["moveTo"], "deep/dir/new.txt");
    let diff = out["diff"].as_str().unwrap();
    assert!(
        diff.contains("--- a/old.txt\n+++ b/deep/dir/new.txt"),
        "{diff}"
    );
    // The moved file counts as read at its new place.
    s.ok(&patch("*** Update File: deep/dir/new.txt\n@@\n-z\n+w"))
        .await;
    assert_eq!(s.text("deep/dir/new.txt"), "x\nw\n");
}

#[cfg(unix)]
#[tokio::test]
async fn pure_rename_keeps_the_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let s = setup();
    s.put_read("run.sh", "echo hi\n").await;
    std::fs::set_permissions(s.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    s.ok(&patch("*** Update File: run.sh\n*** Move to: bin/run.sh"))
        .await;
    let mode = std::fs::metadata(s.path("bin/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(s.text("bin/run.sh"), "echo hi\n");
}

#[tokio::test]
async fn move_onto_itself_is_refused() {
    let s = setup();
    s.put_read("a.txt", "x\n").await;
    let error = s
        .fails(&patch(
            "*** Update File: a.txt\n*** Move to: ./a.txt\n@@\n-x\n+y",
        ))
        .await;
    assert!(
        error.contains("'*** Move to' names the same file"),
        "{error}"
    );
    assert!(error.contains("no file was changed"), "{error}");
    assert_eq!(s.text("a.txt"), "x\n");
}

#[tokio::test]
async fn one_file_under_two_names_is_a_duplicate() {
    let s = setup();
    s.put_read("a.txt", "x\n").await;
    let error = s
        .fails(&patch(
            "*** Update File: a.txt\n@@\n-x\n+y\n*** Delete File: ./a.txt",
        ))
        .await;
    assert!(
        error.contains("a.txt appears in more than one operation"),
        "{error}"
    );
    assert_eq!(s.text("a.txt"), "x\n");
}

#[tokio::test]
async fn add_onto_an_existing_file_is_refused() {
    let s = setup();
    s.put("a.txt", "keep me\n");
    let error = s.fails(&patch("*** Add File: a.txt\n+other")).await;
    assert!(
        error.contains("Add File a.txt: the file already exists"),
        "{error}"
    );
    assert_eq!(s.text("a.txt"), "keep me\n");
}

#[tokio::test]
async fn move_onto_an_existing_file_is_refused() {
    let s = setup();
    s.put_read("a.txt", "a\n").await;
    s.put("b.txt", "b\n");
    let error = s
        .fails(&patch("*** Update File: a.txt\n*** Move to: b.txt"))
        .await;
    assert!(error.contains("cannot move to b.txt"), "{error}");
    assert_eq!(s.text("a.txt"), "a\n");
    assert_eq!(s.text("b.txt"), "b\n");
}

#[tokio::test]
async fn missing_update_target_is_refused() {
    let s = setup();
    let error = s
        .fails(&patch("*** Update File: nope.txt\n@@\n-x\n+y"))
        .await;
    assert!(
        error.contains("Update of nope.txt: the file does not exist"),
        "{error}"
    );
    assert!(!s.path("nope.txt").exists());
}

#[tokio::test]
async fn delete_of_a_directory_is_refused() {
    let s = setup();
    s.put("dir/inside.txt", "x\n");
    let error = s.fails(&patch("*** Delete File: dir")).await;
    assert!(error.contains("`dir` is a directory"), "{error}");
    assert_eq!(s.text("dir/inside.txt"), "x\n");
}

#[tokio::test]
async fn missing_context_names_the_chunk_and_changes_nothing() {
    let s = setup();
    s.put_read("a.txt", "alpha\nbeta\n").await;
    s.put_read("b.txt", "one\ntwo\nthree\n").await;
    let error = s
        .fails(&patch(
            "*** Add File: c.txt\n+new\n\
             *** Update File: a.txt\n@@\n-alpha\n+ALPHA\n\
             *** Update File: b.txt\n@@\n one\n-two\n+TWO\n@@\n-nowhere\n+x",
        ))
        .await;
    assert!(
        error.contains("Update of b.txt: chunk 2 did not match"),
        "{error}"
    );
    assert!(error.contains("no file was changed"), "{error}");
    assert_eq!(s.text("a.txt"), "alpha\nbeta\n");
    assert_eq!(s.text("b.txt"), "one\ntwo\nthree\n");
    assert!(!s.path("c.txt").exists());
}

#[tokio::test]
async fn third_file_failing_leaves_the_first_two_unchanged() {
    let s = setup();
    s.put_read("one.txt", "1\n").await;
    s.put_read("two.txt", "2\n").await;
    s.put_read("three.txt", "3\n").await;
    let before: Vec<Vec<u8>> = ["one.txt", "two.txt", "three.txt"]
        .iter()
        .map(|p| s.get(p))
        .collect();
    let error = s
        .fails(&patch(
            "*** Update File: one.txt\n@@\n-1\n+one\n\
             *** Update File: two.txt\n@@\n-2\n+two\n\
             *** Update File: three.txt\n@@\n-33\n+three",
        ))
        .await;
    assert!(error.contains("Update of three.txt: chunk 1"), "{error}");
    let after: Vec<Vec<u8>> = ["one.txt", "two.txt", "three.txt"]
        .iter()
        .map(|p| s.get(p))
        .collect();
    assert_eq!(before, after);
}

#[tokio::test]
async fn stale_read_is_refused() {
    let s = setup();
    s.put_read("a.txt", "x\n").await;
    s.put("a.txt", "changed\n");
    let error = s
        .fails(&patch("*** Update File: a.txt\n@@\n-changed\n+y"))
        .await;
    assert!(
        error.contains("a.txt changed since you last read it. Read it again"),
        "{error}"
    );
    assert_eq!(s.text("a.txt"), "changed\n");
}

#[tokio::test]
async fn never_read_files_are_all_listed() {
    let s = setup();
    s.put("a.txt", "x\n");
    s.put("b.txt", "y\n");
    let error = s
        .fails(&patch(
            "*** Update File: a.txt\n@@\n-x\n+X\n*** Delete File: b.txt",
        ))
        .await;
    assert!(
        error.contains("- You have not read a.txt in this session"),
        "{error}"
    );
    assert!(
        error.contains("- You have not read b.txt in this session"),
        "{error}"
    );
    assert_eq!(s.text("a.txt"), "x\n");
    assert_eq!(s.text("b.txt"), "y\n");
}

#[tokio::test]
async fn file_read_through_the_read_tool_can_be_patched() {
    let s = setup();
    s.put("a.txt", "x\n");
    let read = crate::tools::file_tools(&s.env)
        .into_iter()
        .find(|(name, _)| *name == "read")
        .unwrap()
        .1;
    let outcome = read
        .invoke(Arguments::from(json!({ "filePath": "a.txt" })), cx())
        .await
        .outcome;
    assert!(
        matches!(outcome, InvocationOutcome::Completed(_)),
        "{outcome:?}"
    );
    s.ok(&patch("*** Update File: a.txt\n@@\n-x\n+y")).await;
    assert_eq!(s.text("a.txt"), "y\n");
}

#[tokio::test]
async fn binary_file_is_refused_by_name() {
    let s = setup();
    s.put_read("blob.bin", b"\xFF\xFE\x00\xD8garbage\xC3").await;
    let error = s
        .fails(&patch("*** Update File: blob.bin\n@@\n-x\n+y"))
        .await;
    assert!(error.contains("`blob.bin` is not UTF-8"), "{error}");
}

#[tokio::test]
async fn heredoc_wrapper_is_accepted() {
    let s = setup();
    s.put_read("a.txt", "x\n").await;
    s.ok(&format!(
        "cat <<'EOF'\n{}\nEOF\n",
        patch("*** Update File: a.txt\n@@\n-x\n+y")
    ))
    .await;
    assert_eq!(s.text("a.txt"), "y\n");
}

#[tokio::test]
async fn empty_and_json_patch_text_are_refused_precisely() {
    let s = setup();
    let error = s.fails("  \n").await;
    assert!(error.starts_with("patchText is empty"), "{error}");
    let error = s
        .fails(r#"{"command": ["apply_patch", "*** Begin Patch\n*** End Patch"]}"#)
        .await;
    assert!(
        error.contains("Pass the patch text itself as patchText"),
        "{error}"
    );
    let error = s
        .fails("*** Begin Patch\n*** Frobnicate: a\n*** End Patch")
        .await;
    assert!(error.contains("could not be parsed"), "{error}");
    assert!(error.contains("patchText line 2"), "{error}");
}

#[tokio::test]
async fn tolerant_match_is_reported() {
    let s = setup();
    s.put_read("a.txt", "keep\nold   \n").await;
    let (text, out) = s
        .ok(&patch("*** Update File: a.txt\n@@\n keep\n-old\n+new"))
        .await;
    assert_eq!(s.text("a.txt"), "keep\nnew\n");
    assert!(
        text.contains("Chunk 1 of a.txt matched only when ignoring trailing whitespace"),
        "{text}"
    );
    assert!(text.contains("+new"), "{text}");
    assert_eq!(out["files"][0]["fuzz"], json!(["trailing_whitespace"]));
}

#[tokio::test]
async fn partial_commit_is_reported_truthfully() {
    let s = setup();
    s.put_read("a.txt", "x\n").await;
    s.put_read("c.txt", "c\n").await;
    // The Add's write fails after every precondition was checked.
    s.env.fs().fail_writes_named("b.txt");
    let error = s
        .fails(&patch(
            "*** Update File: a.txt\n@@\n-x\n+y\n\
             *** Add File: b.txt\n+z\n\
             *** Delete File: c.txt",
        ))
        .await;
    assert!(
        error.starts_with("Patch partially applied before failing at b.txt: could not write"),
        "{error}"
    );
    assert!(
        error.contains("Applied: M a.txt. Not applied: A b.txt, D c.txt."),
        "{error}"
    );
    assert!(!error.contains("Success"), "{error}");
    assert_eq!(s.text("a.txt"), "y\n");
    assert_eq!(s.text("c.txt"), "c\n");
    assert!(!s.path("b.txt").exists());
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(s.path("."))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".tackle-")),
        "{names:?}"
    );
    // What was applied is recorded as read, so the rest can follow in a new patch.
    s.ok(&patch("*** Update File: a.txt\n@@\n-y\n+w")).await;
    assert_eq!(s.text("a.txt"), "w\n");
}

#[test]
fn partial_report_lists_applied_and_not_applied() {
    let failure = partial_report(
        "b.txt",
        "could not write `b.txt`: disk full",
        &["A a.txt".to_owned(), "M m.txt".to_owned()],
        &["D b.txt".to_owned(), "R c.txt -> d.txt".to_owned()],
    );
    assert_eq!(
        failure.message(),
        "Patch partially applied before failing at b.txt: could not write `b.txt`: disk full. \
         Applied: A a.txt, M m.txt. Not applied: D b.txt, R c.txt -> d.txt."
    );
    let failure = partial_report("a.txt", "boom", &[], &["A a.txt".to_owned()]);
    assert!(failure.message().contains("Applied: nothing."));
}
