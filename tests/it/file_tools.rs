//! The built-in file tools (read, write, edit, multiedit) settled through the registry, with the
//! bytes on disk checked exactly: line endings, BOMs, modes, symlinks, read freshness, races,
//! and paths that escape the Location.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde_json::{Value, json};
use tackle::{Harness, cx};
use tackle_builtins::{Gate, LocationFs, ToolEnv, file_tools};
use tackle_core::{CallIdentity, CancellationToken, Content, Context};
use tackle_permission::{
    Action, Approver, MemorySavedApprovals, PermissionRequest, PermissionService, PresetContext,
    Reply, Rule, RuleSource, Ruleset, preset,
};
use tackle_registry::{AllTools, Registration, ToolCall, ToolSet, Turn};
use tempfile::TempDir;

/// A temporary Location with the file tools registered and one turn materialized.
///
/// The Location root is `<tmp>/root`, so tests can put files outside it in `<tmp>`.
struct Fixture {
    dir: TempDir,
    root: PathBuf,
    _harness: Harness,
    _registration: Registration,
    turn: Turn,
}

impl Fixture {
    fn new() -> Self {
        Self::with(|env| env)
    }

    fn with(configure: impl FnOnce(ToolEnv) -> ToolEnv) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        let env = configure(ToolEnv::new(LocationFs::new(&root).unwrap()));
        let harness = Harness::new();
        let location = harness.location(root.to_str().unwrap());
        let registration = location
            .register(file_tools(&env).into_iter().collect::<ToolSet>())
            .unwrap();
        let turn = location.materialize(AllTools);
        Self {
            dir,
            root,
            _harness: harness,
            _registration: registration,
            turn,
        }
    }

    /// `<tmp>`, the parent of the Location root.
    fn outside(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn put(&self, name: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    }

    fn bytes(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap()
    }

    /// Settles `tool` with `args` in session `session-1`.
    async fn call(&self, tool: &str, args: Value) -> Res {
        self.call_in(cx("call"), tool, args).await
    }

    async fn call_in(&self, cx: Context, tool: &str, args: Value) -> Res {
        let settled = self
            .turn
            .settle(cx, ToolCall::new(tool, args.to_string()))
            .await;
        let result = settled
            .model_result()
            .unwrap_or_else(|| panic!("no model result: {settled:?}"));
        let text = result
            .content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n");
        Res {
            is_error: result.is_error,
            text,
            content: result.content,
        }
    }

    async fn read(&self, name: &str) -> Res {
        self.call("read", json!({ "filePath": name })).await
    }

    async fn edit(&self, name: &str, old: &str, new: &str) -> Res {
        self.call(
            "edit",
            json!({ "filePath": name, "oldString": old, "newString": new }),
        )
        .await
    }

    async fn write(&self, name: &str, content: &str) -> Res {
        self.call("write", json!({ "filePath": name, "content": content }))
            .await
    }
}

/// What the model received for one call.
#[derive(Debug)]
struct Res {
    is_error: bool,
    text: String,
    content: Vec<Content>,
}

impl Res {
    #[track_caller]
    fn ok(&self) -> &str {
        assert!(!self.is_error, "expected success, got error: {}", self.text);
        &self.text
    }

    #[track_caller]
    fn err(&self) -> &str {
        assert!(
            self.is_error,
            "expected an error, got success: {}",
            self.text
        );
        &self.text
    }
}

fn session_cx(session: &str, call: &str) -> Context {
    Context::new(
        CallIdentity::new(session, "build", "message-1", call),
        CancellationToken::new(),
    )
}

/// Standard base64 with padding, to check media payloads without another dependency.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn utf16le(text: &str) -> Vec<u8> {
    let mut out = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        out.extend_from_slice(&unit.to_le_bytes());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Line endings
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn edit_keeps_the_file_line_endings_for_all_eight_lf_crlf_combinations() {
    for file_crlf in [false, true] {
        for old_crlf in [false, true] {
            for new_crlf in [false, true] {
                let f = Fixture::new();
                let nl = |crlf: bool| if crlf { "\r\n" } else { "\n" };
                let file = format!("a{0}b{0}c{0}", nl(file_crlf));
                f.put("f.txt", &file);
                f.read("f.txt").await.ok();
                let old = format!("a{}b", nl(old_crlf));
                let new = format!("x{}y", nl(new_crlf));
                let res = f.edit("f.txt", &old, &new).await;
                let case = format!("file crlf={file_crlf} old crlf={old_crlf} new crlf={new_crlf}");
                assert!(!res.is_error, "{case}: {}", res.text);
                let expected = format!("x{0}y{0}c{0}", nl(file_crlf));
                assert_eq!(
                    String::from_utf8(f.bytes("f.txt")).unwrap(),
                    expected,
                    "{case}"
                );
            }
        }
    }
}

#[tokio::test]
async fn edit_replace_all_on_a_crlf_file_keeps_crlf() {
    let f = Fixture::new();
    f.put("f.txt", "foo\r\nbar\r\nfoo\r\n");
    f.read("f.txt").await.ok();
    let res = f
        .call(
            "edit",
            json!({"filePath": "f.txt", "oldString": "foo", "newString": "baz", "replaceAll": true}),
        )
        .await;
    res.ok();
    assert_eq!(f.bytes("f.txt"), b"baz\r\nbar\r\nbaz\r\n");
}

#[tokio::test]
async fn edit_of_a_mixed_ending_file_keeps_the_endings_of_untouched_lines() {
    let f = Fixture::new();
    // Three CRLF lines and one LF line: CRLF dominates.
    f.put("f.txt", "a\r\nb\r\nc\nd\r\n");
    f.read("f.txt").await.ok();
    f.edit("f.txt", "b", "B").await.ok();
    assert_eq!(f.bytes("f.txt"), b"a\r\nB\r\nc\nd\r\n");
}

#[tokio::test]
async fn edit_of_the_last_line_of_a_mixed_file_changes_only_that_line() {
    // The example of user-needs B3.
    let f = Fixture::new();
    f.put("f.txt", "a\r\nb\nc");
    f.read("f.txt").await.ok();
    f.edit("f.txt", "c", "C").await.ok();
    assert_eq!(f.bytes("f.txt"), b"a\r\nb\nC");
}

#[tokio::test]
async fn edit_within_a_minority_ending_line_keeps_that_line_ending() {
    // Only the matched span changes: `c` is replaced, its `\n` is not part of the match.
    let f = Fixture::new();
    f.put("f.txt", "a\r\nb\r\nc\nd\r\n");
    f.read("f.txt").await.ok();
    f.edit("f.txt", "c", "C").await.ok();
    assert_eq!(f.bytes("f.txt"), b"a\r\nb\r\nC\nd\r\n");
}

#[tokio::test]
async fn edit_preserves_presence_and_absence_of_the_final_newline() {
    let f = Fixture::new();
    f.put("without.txt", "a\nb");
    f.put("with.txt", "a\nb\n");
    f.put("crlf_without.txt", "a\r\nb");
    for name in ["without.txt", "with.txt", "crlf_without.txt"] {
        f.read(name).await.ok();
        f.edit(name, "b", "c").await.ok();
    }
    assert_eq!(f.bytes("without.txt"), b"a\nc");
    assert_eq!(f.bytes("with.txt"), b"a\nc\n");
    assert_eq!(f.bytes("crlf_without.txt"), b"a\r\nc");
}

#[tokio::test]
async fn write_of_lf_content_over_a_crlf_file_keeps_crlf() {
    let f = Fixture::new();
    f.put("f.txt", "a\r\nb\r\n");
    f.read("f.txt").await.ok();
    f.write("f.txt", "a\nc\nd\n").await.ok();
    assert_eq!(f.bytes("f.txt"), b"a\r\nc\r\nd\r\n");
}

// ---------------------------------------------------------------------------------------------
// Encodings
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn edit_of_a_utf8_bom_file_keeps_the_bom_and_writes_utf8() {
    let f = Fixture::new();
    f.put("bom.txt", b"\xEF\xBB\xBFname = x\n");
    f.read("bom.txt").await.ok();
    f.edit("bom.txt", "x", "é").await.ok();
    assert_eq!(f.bytes("bom.txt"), b"\xEF\xBB\xBFname = \xC3\xA9\n");
}

#[tokio::test]
async fn edit_elsewhere_in_a_bom_file_keeps_bom_and_accents_and_typographic_quotes() {
    let f = Fixture::new();
    f.put("cafe.txt", b"\xEF\xBB\xBFcaf\xC3\xA9\nx\n");
    f.read("cafe.txt").await.ok();
    f.edit("cafe.txt", "x", "it\u{2019}s").await.ok();
    assert_eq!(
        f.bytes("cafe.txt"),
        b"\xEF\xBB\xBFcaf\xC3\xA9\nit\xE2\x80\x99s\n"
    );
}

#[tokio::test]
async fn edit_of_a_non_utf8_file_is_refused_and_leaves_it_intact() {
    let f = Fixture::new();
    f.put("gbk.txt", b"\xC4\xE3\xBA\xC3\nx\n");
    let res = f.edit("gbk.txt", "x", "y").await;
    assert!(
        res.err().contains("is not UTF-8 or UTF-16 text"),
        "{}",
        res.text
    );
    assert_eq!(f.bytes("gbk.txt"), b"\xC4\xE3\xBA\xC3\nx\n");
}

#[tokio::test]
async fn write_over_a_bom_file_keeps_the_bom() {
    let f = Fixture::new();
    f.put("bom.txt", b"\xEF\xBB\xBFold\n");
    f.read("bom.txt").await.ok();
    f.write("bom.txt", "new\n").await.ok();
    assert_eq!(f.bytes("bom.txt"), b"\xEF\xBB\xBFnew\n");
}

#[tokio::test]
async fn write_of_a_new_file_adds_no_bom() {
    let f = Fixture::new();
    f.write("new.txt", "café\n").await.ok();
    assert_eq!(f.bytes("new.txt"), "café\n".as_bytes());
}

#[tokio::test]
async fn edit_of_a_utf16le_file_round_trips_in_utf16le() {
    let f = Fixture::new();
    f.put("wide.txt", utf16le("hello\r\nworld\r\n"));
    let read = f.read("wide.txt").await;
    assert!(read.ok().contains("     2\tworld"), "{}", read.text);
    f.edit("wide.txt", "world", "earth").await.ok();
    assert_eq!(f.bytes("wide.txt"), utf16le("hello\r\nearth\r\n"));
}

// ---------------------------------------------------------------------------------------------
// Mode and symlinks
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn edit_and_write_preserve_mode_0755() {
    let f = Fixture::new();
    for name in ["edited.sh", "written.sh"] {
        f.put(name, "#!/bin/sh\necho a\n");
        std::fs::set_permissions(f.path(name), std::fs::Permissions::from_mode(0o755)).unwrap();
        f.read(name).await.ok();
    }
    f.edit("edited.sh", "echo a", "echo b").await.ok();
    f.write("written.sh", "#!/bin/sh\necho c\n").await.ok();
    for (name, body) in [("edited.sh", "echo b"), ("written.sh", "echo c")] {
        let mode = std::fs::metadata(f.path(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(mode, 0o755, "{name}");
        assert_eq!(
            f.bytes(name),
            format!("#!/bin/sh\n{body}\n").as_bytes(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn edit_through_a_symlink_keeps_the_link_and_changes_the_target() {
    let f = Fixture::new();
    f.put("real.md", "# Title\nold\n");
    std::os::unix::fs::symlink("real.md", f.path("link.md")).unwrap();
    f.read("link.md").await.ok();
    f.edit("link.md", "old", "new").await.ok();
    let meta = std::fs::symlink_metadata(f.path("link.md")).unwrap();
    assert!(meta.file_type().is_symlink(), "link.md was replaced");
    assert_eq!(
        std::fs::read_link(f.path("link.md")).unwrap(),
        Path::new("real.md")
    );
    assert_eq!(f.bytes("real.md"), b"# Title\nnew\n");
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_edits_of_one_file_lose_no_update() {
    let f = Fixture::new();
    let original: String = (0..64).map(|i| format!("L{i}\n")).collect();
    f.put("race.txt", &original);
    f.read("race.txt").await.ok();
    let calls = (0..64).map(|i| {
        let args = json!({
            "filePath": "race.txt",
            "oldString": format!("L{i}\n"),
            "newString": format!("X{i}\n"),
        });
        f.call_in(cx(&format!("call-{i}")), "edit", args)
    });
    let results = futures_util::future::join_all(calls).await;
    let after = String::from_utf8(f.bytes("race.txt")).unwrap();
    let lines: Vec<&str> = after.lines().collect();
    let mut succeeded = 0;
    for (i, res) in results.iter().enumerate() {
        if res.is_error {
            // The only acceptable failure is a stale read; the line must then be untouched.
            assert!(
                res.text.contains("changed since") || res.text.contains("after you planned"),
                "call {i} failed for another reason: {}",
                res.text
            );
            assert!(lines.contains(&format!("L{i}").as_str()), "call {i}");
        } else {
            succeeded += 1;
            assert!(lines.contains(&format!("X{i}").as_str()), "lost X{i}");
            assert!(!lines.contains(&format!("L{i}").as_str()), "L{i} survived");
        }
    }
    assert_eq!(lines.len(), 64, "{after}");
    assert_eq!(
        succeeded, 64,
        "the session's own writes must keep its read fresh"
    );
    let expected: String = (0..64).map(|i| format!("X{i}\n")).collect();
    assert_eq!(after, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_from_two_sessions_apply_one_and_report_the_other_stale() {
    let f = Fixture::new();
    f.put("f.txt", "a\nb\n");
    for session in ["s1", "s2"] {
        f.call_in(
            session_cx(session, "r"),
            "read",
            json!({"filePath": "f.txt"}),
        )
        .await
        .ok();
    }
    let (one, two) = futures_util::future::join(
        f.call_in(
            session_cx("s1", "e"),
            "edit",
            json!({"filePath": "f.txt", "oldString": "a", "newString": "A"}),
        ),
        f.call_in(
            session_cx("s2", "e"),
            "edit",
            json!({"filePath": "f.txt", "oldString": "b", "newString": "B"}),
        ),
    )
    .await;
    assert_ne!(one.is_error, two.is_error, "{one:?} {two:?}");
    let (loser, expected): (&Res, &[u8]) = if one.is_error {
        (&one, b"a\nB\n")
    } else {
        (&two, b"A\nb\n")
    };
    assert!(loser.text.contains("changed since"), "{}", loser.text);
    assert_eq!(f.bytes("f.txt"), expected);
}

// ---------------------------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn new_string_dollar_patterns_are_inserted_verbatim() {
    let f = Fixture::new();
    f.put("f.txt", "price = X\n");
    f.read("f.txt").await.ok();
    f.edit("f.txt", "X", "$$ and $& and $1").await.ok();
    assert_eq!(f.bytes("f.txt"), b"price = $$ and $& and $1\n");
}

#[tokio::test]
async fn block_anchor_candidate_with_an_unrelated_middle_is_refused() {
    let f = Fixture::new();
    let original = "fn start() {\n    alpha();\n    beta();\n}\n";
    f.put("f.rs", original);
    f.read("f.rs").await.ok();
    let res = f
        .edit(
            "f.rs",
            "fn start() {\n    completely_unrelated_stuff_here(42);\n    zzz_other_words_qqq();\n}",
            "fn start() {}",
        )
        .await;
    assert!(
        res.err().contains("oldString was not found"),
        "{}",
        res.text
    );
    assert_eq!(f.bytes("f.rs"), original.as_bytes());
}

#[tokio::test]
async fn ambiguous_old_string_lists_the_line_numbers() {
    let f = Fixture::new();
    let original = "x = 1\ny\nx = 1\n";
    f.put("f.txt", original);
    f.read("f.txt").await.ok();
    let res = f.edit("f.txt", "x = 1", "x = 2").await;
    assert!(
        res.err()
            .contains("oldString matches 2 places (lines 1, 3)"),
        "{}",
        res.text
    );
    assert_eq!(f.bytes("f.txt"), original.as_bytes());
}

#[tokio::test]
async fn not_found_shows_the_closest_region_with_its_line_number() {
    let f = Fixture::new();
    let original = "let alpha = 1;\nlet beta = 2;\nlet gamma = 3;\n";
    f.put("f.rs", original);
    f.read("f.rs").await.ok();
    let res = f.edit("f.rs", "let betta = 2;", "let beta = 4;").await;
    let text = res.err();
    assert!(text.contains("oldString was not found"), "{text}");
    assert!(text.contains("The closest region is line 2"), "{text}");
    assert!(text.contains("let beta = 2;"), "{text}");
    assert_eq!(f.bytes("f.rs"), original.as_bytes());
}

#[tokio::test]
async fn read_prefixed_old_string_is_accepted() {
    let f = Fixture::new();
    f.put("f.txt", "a\nreturn 1\nc\n");
    f.read("f.txt").await.ok();
    f.edit("f.txt", "     2\treturn 1", "return 2").await.ok();
    assert_eq!(f.bytes("f.txt"), b"a\nreturn 2\nc\n");
}

#[tokio::test]
async fn empty_old_string_on_an_existing_file_is_refused() {
    let f = Fixture::new();
    f.put("f.txt", "keep\n");
    f.read("f.txt").await.ok();
    let res = f.edit("f.txt", "", "replacement\n").await;
    assert!(res.err().contains("oldString is empty"), "{}", res.text);
    assert_eq!(f.bytes("f.txt"), b"keep\n");
}

#[tokio::test]
async fn empty_old_string_on_a_missing_path_creates_the_file() {
    let f = Fixture::new();
    let res = f.edit("sub/new.txt", "", "fresh\n").await;
    assert!(res.ok().contains("Created sub/new.txt"), "{}", res.text);
    assert_eq!(f.bytes("sub/new.txt"), b"fresh\n");
}

#[tokio::test]
async fn identical_old_and_new_strings_are_refused() {
    let f = Fixture::new();
    f.put("f.txt", "same\n");
    f.read("f.txt").await.ok();
    let res = f.edit("f.txt", "same", "same").await;
    assert!(
        res.err().contains("oldString and newString are identical"),
        "{}",
        res.text
    );
    assert_eq!(f.bytes("f.txt"), b"same\n");
}

// ---------------------------------------------------------------------------------------------
// Read before write
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn write_to_an_existing_never_read_file_is_refused_then_succeeds_after_a_read() {
    let f = Fixture::new();
    f.put("f.txt", "original\n");
    let res = f.write("f.txt", "clobbered\n").await;
    assert!(
        res.err().contains("You have not read f.txt"),
        "{}",
        res.text
    );
    assert_eq!(f.bytes("f.txt"), b"original\n");
    f.read("f.txt").await.ok();
    f.write("f.txt", "replaced\n").await.ok();
    assert_eq!(f.bytes("f.txt"), b"replaced\n");
}

#[tokio::test]
async fn edit_of_a_never_read_file_is_refused() {
    let f = Fixture::new();
    f.put("f.txt", "a\n");
    let res = f.edit("f.txt", "a", "b").await;
    assert!(res.err().contains("You have not read"), "{}", res.text);
    assert_eq!(f.bytes("f.txt"), b"a\n");
}

#[tokio::test]
async fn a_read_by_another_session_does_not_count() {
    let f = Fixture::new();
    f.put("f.txt", "a\n");
    f.call_in(
        session_cx("session-2", "c1"),
        "read",
        json!({"filePath": "f.txt"}),
    )
    .await
    .ok();
    let res = f.edit("f.txt", "a", "b").await;
    assert!(res.err().contains("You have not read"), "{}", res.text);
    assert_eq!(f.bytes("f.txt"), b"a\n");
}

#[tokio::test]
async fn external_modification_after_read_is_refused_then_a_fresh_read_allows_the_edit() {
    let f = Fixture::new();
    f.put("f.txt", "one\ntwo\n");
    f.read("f.txt").await.ok();
    f.put("f.txt", "one\ntwo\nthree (formatter)\n");
    let res = f.edit("f.txt", "two", "TWO").await;
    assert!(res.err().contains("changed since"), "{}", res.text);
    assert_eq!(f.bytes("f.txt"), b"one\ntwo\nthree (formatter)\n");
    // Retrying without reading stays refused.
    f.edit("f.txt", "two", "TWO").await.err();
    f.read("f.txt").await.ok();
    f.edit("f.txt", "two", "TWO").await.ok();
    assert_eq!(f.bytes("f.txt"), b"one\nTWO\nthree (formatter)\n");
}

#[tokio::test]
async fn touching_a_file_without_changing_it_keeps_the_read_fresh() {
    let f = Fixture::new();
    f.put("f.txt", "one\n");
    f.read("f.txt").await.ok();
    let file = std::fs::File::options()
        .write(true)
        .open(f.path("f.txt"))
        .unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(3600))
        .unwrap();
    drop(file);
    f.edit("f.txt", "one", "uno").await.ok();
    assert_eq!(f.bytes("f.txt"), b"uno\n");
}

#[tokio::test]
async fn write_to_a_new_path_needs_no_read() {
    let f = Fixture::new();
    let res = f.write("dir/new.txt", "hello\n").await;
    assert!(res.ok().contains("Created dir/new.txt"), "{}", res.text);
    assert_eq!(f.bytes("dir/new.txt"), b"hello\n");
}

#[tokio::test]
async fn the_session_own_edit_keeps_its_read_fresh_for_the_next_edit() {
    let f = Fixture::new();
    f.put("f.txt", "a\nb\n");
    f.read("f.txt").await.ok();
    f.edit("f.txt", "a", "x").await.ok();
    f.edit("f.txt", "b", "y").await.ok();
    f.write("f.txt", "z\n").await.ok();
    assert_eq!(f.bytes("f.txt"), b"z\n");
}

// ---------------------------------------------------------------------------------------------
// Multiedit
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn multiedit_failing_edit_is_named_and_the_file_is_unchanged() {
    let f = Fixture::new();
    f.put("f.txt", "a\nb\nc");
    f.read("f.txt").await.ok();
    let res = f
        .call(
            "multiedit",
            json!({"filePath": "f.txt", "edits": [
                {"oldString": "a", "newString": "x"},
                {"oldString": "x", "newString": "y"},
                {"oldString": "zzz", "newString": "q"},
            ]}),
        )
        .await;
    let text = res.err();
    assert!(text.starts_with("edits[2]: "), "{text}");
    assert!(text.contains("the file is unchanged"), "{text}");
    assert_eq!(f.bytes("f.txt"), b"a\nb\nc");
}

#[tokio::test]
async fn multiedit_applies_edits_cumulatively() {
    let f = Fixture::new();
    f.put("f.txt", "a\nb\nc");
    f.read("f.txt").await.ok();
    f.call(
        "multiedit",
        json!({"filePath": "f.txt", "edits": [
            {"oldString": "a", "newString": "x"},
            {"oldString": "x", "newString": "y"},
        ]}),
    )
    .await
    .ok();
    assert_eq!(f.bytes("f.txt"), b"y\nb\nc");
}

#[tokio::test]
async fn multiedit_can_create_a_file_with_an_empty_first_old_string() {
    let f = Fixture::new();
    let res = f
        .call(
            "multiedit",
            json!({"filePath": "new.txt", "edits": [
                {"oldString": "", "newString": "a\nb\n"},
                {"oldString": "b", "newString": "c"},
            ]}),
        )
        .await;
    assert!(res.ok().contains("Created new.txt"), "{}", res.text);
    assert_eq!(f.bytes("new.txt"), b"a\nc\n");
}

// ---------------------------------------------------------------------------------------------
// Read
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn read_shows_numbered_lines_and_an_end_of_file_footer() {
    let f = Fixture::new();
    f.put("f.txt", "alpha\nbeta\n");
    let res = f.read("f.txt").await;
    assert_eq!(
        res.ok(),
        "     1\talpha\n     2\tbeta\n\n(End of file: 2 lines total.)"
    );
}

#[tokio::test]
async fn read_pages_with_offset_and_limit() {
    let f = Fixture::new();
    let content: String = (1..=10).map(|i| format!("l{i}\n")).collect();
    f.put("f.txt", &content);
    let res = f
        .call(
            "read",
            json!({"filePath": "f.txt", "offset": 3, "limit": 2}),
        )
        .await;
    assert_eq!(
        res.ok(),
        "     3\tl3\n     4\tl4\n\n(Showing lines 3-4 of 10. Use offset=5 to continue.)"
    );
    let res = f
        .call("read", json!({"filePath": "f.txt", "offset": 9}))
        .await;
    assert_eq!(
        res.ok(),
        "     9\tl9\n    10\tl10\n\n(End of file: 10 lines total.)"
    );
}

#[tokio::test]
async fn read_offset_past_the_end_is_an_error() {
    let f = Fixture::new();
    let content: String = (1..=10).map(|i| format!("l{i}\n")).collect();
    f.put("f.txt", &content);
    let res = f
        .call("read", json!({"filePath": "f.txt", "offset": 20}))
        .await;
    assert!(
        res.err()
            .contains("offset 20 is past the end of the file (10 lines)"),
        "{}",
        res.text
    );
}

#[tokio::test]
async fn read_of_an_empty_file_says_it_is_empty() {
    let f = Fixture::new();
    f.put("empty.txt", "");
    assert_eq!(f.read("empty.txt").await.ok(), "The file is empty.");
}

#[tokio::test]
async fn read_of_a_directory_lists_sorted_entries_with_trailing_slashes() {
    let f = Fixture::new();
    f.put("dir/c.md", "c");
    f.put("dir/b.txt", "b");
    f.put("dir/a/inner.txt", "x");
    assert_eq!(
        f.read("dir").await.ok(),
        "dir/\na/\nb.txt\nc.md\n\n(3 entries)"
    );
}

#[tokio::test]
async fn read_of_a_missing_file_suggests_similar_names() {
    let f = Fixture::new();
    f.put("config.toml", "x = 1\n");
    let res = f.read("config.tml").await;
    assert_eq!(
        res.err(),
        "File not found: `config.tml`.\n\nDid you mean one of these?\nconfig.toml"
    );
}

#[tokio::test]
async fn read_refuses_a_binary_file_with_a_nul_byte() {
    let f = Fixture::new();
    f.put("data.dat", b"abc\0def");
    let res = f.read("data.dat").await;
    let text = res.err();
    assert!(
        text.contains("Cannot read binary file `data.dat`"),
        "{text}"
    );
    assert!(!text.contains("abc"), "{text}");
}

#[tokio::test]
async fn read_of_a_png_returns_media_content() {
    let f = Fixture::new();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRsome-bytes";
    f.put("pic.png", png);
    let res = f.read("pic.png").await;
    assert!(
        res.ok()
            .contains("Image read successfully: pic.png (image/png")
    );
    let media = res
        .content
        .iter()
        .find_map(|c| match c {
            Content::Media {
                mime_type,
                data_base64,
                ..
            } => Some((mime_type.clone(), data_base64.clone())),
            Content::Text { .. } => None,
        })
        .expect("a media part");
    assert_eq!(media.0, "image/png");
    assert_eq!(media.1, base64(png));
}

#[tokio::test]
async fn read_of_non_utf8_text_is_reported_not_shown() {
    let f = Fixture::new();
    // "你好" in GBK.
    f.put("gbk.txt", b"\xC4\xE3\xBA\xC3\n");
    let res = f.read("gbk.txt").await;
    let text = res.err();
    assert!(
        text.contains("`gbk.txt` is not UTF-8 or UTF-16 text"),
        "{text}"
    );
    assert!(!text.contains('\u{FFFD}'), "{text}");
}

#[tokio::test]
async fn read_cuts_a_long_line() {
    let f = Fixture::new();
    f.put("long.txt", format!("{}\nshort\n", "x".repeat(3000)));
    let res = f.read("long.txt").await;
    let text = res.ok();
    assert!(
        text.contains(&format!(
            "     1\t{}... (line truncated to 2000 of 3000 characters)\n",
            "x".repeat(2000)
        )),
        "{text}"
    );
    assert!(text.contains("     2\tshort\n"), "{text}");
}

#[tokio::test]
async fn read_adds_a_parent_agents_md_once_per_session() {
    let f = Fixture::new();
    f.put("AGENTS.md", "root instructions\n");
    f.put("sub/AGENTS.md", "Use tabs.\n");
    f.put("sub/one.txt", "one\n");
    f.put("sub/two.txt", "two\n");
    let reminder =
        "<system-reminder>\nInstructions from: sub/AGENTS.md\nUse tabs.\n</system-reminder>";
    let first = f.read("sub/one.txt").await;
    assert!(first.ok().ends_with(reminder), "{}", first.text);
    assert!(!first.text.contains("root instructions"), "{}", first.text);
    let second = f.read("sub/two.txt").await;
    assert!(!second.ok().contains("system-reminder"), "{}", second.text);
    let again = f.read("sub/one.txt").await;
    assert!(!again.ok().contains("system-reminder"), "{}", again.text);
    // Another session gets it once too.
    let other = f
        .call_in(
            session_cx("session-2", "c1"),
            "read",
            json!({"filePath": "sub/two.txt"}),
        )
        .await;
    assert!(other.ok().ends_with(reminder), "{}", other.text);
}

// ---------------------------------------------------------------------------------------------
// Permissions
// ---------------------------------------------------------------------------------------------

/// An approver that records every request and answers it with a fixed reply.
struct Recorder {
    reply: Reply,
    requests: Mutex<Vec<PermissionRequest>>,
    service: OnceLock<Weak<PermissionService>>,
}

impl Approver for Recorder {
    fn ask(&self, request: &PermissionRequest) {
        self.requests.lock().unwrap().push(request.clone());
        if let Some(service) = self.service.get().and_then(Weak::upgrade) {
            service.reply(&request.id, self.reply.clone()).unwrap();
        }
    }
}

impl Recorder {
    fn permissions(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.permission.clone())
            .collect()
    }
}

fn build_rules() -> Ruleset {
    preset("build", &PresetContext::default()).unwrap().rules
}

/// A fixture whose gate asks `recorder`'s service under `rules`.
fn gated(reply: Reply, rules: Ruleset) -> (Fixture, Arc<Recorder>) {
    let recorder = Arc::new(Recorder {
        reply,
        requests: Mutex::new(Vec::new()),
        service: OnceLock::new(),
    });
    let service = Arc::new(
        PermissionService::new(
            "project",
            recorder.clone(),
            Arc::new(MemorySavedApprovals::new()),
        )
        .unwrap(),
    );
    recorder
        .service
        .set(Arc::downgrade(&service))
        .unwrap_or_else(|_| unreachable!());
    let f =
        Fixture::with(move |env| env.with_gate(Gate::new(service, move |_agent| rules.clone())));
    (f, recorder)
}

#[derive(Clone, Copy, Debug)]
enum Escape {
    Relative,
    Absolute,
    Symlink,
}

/// Puts `<tmp>/outside.txt` and returns the path the model gives to reach it.
fn escape_path(f: &Fixture, how: Escape) -> String {
    let outside = f.outside().join("outside.txt");
    std::fs::write(&outside, "secret outside\n").unwrap();
    match how {
        Escape::Relative => "../outside.txt".to_owned(),
        Escape::Absolute => outside.to_string_lossy().into_owned(),
        Escape::Symlink => {
            std::os::unix::fs::symlink(&outside, f.path("escape.txt")).unwrap();
            "escape.txt".to_owned()
        }
    }
}

const ESCAPES: [Escape; 3] = [Escape::Relative, Escape::Absolute, Escape::Symlink];

#[tokio::test]
async fn escaping_paths_rejected_by_the_user_read_and_write_nothing() {
    for how in ESCAPES {
        let (f, recorder) = gated(Reply::Reject { message: None }, build_rules());
        let path = escape_path(&f, how);
        let outside = f.outside().join("outside.txt");

        let res = f.read(&path).await;
        let text = res.err();
        assert!(
            text.contains("The user rejected permission to run `external_directory`"),
            "{how:?}: {text}"
        );
        assert!(!text.contains("secret"), "{how:?}: {text}");

        let res = f.write(&path, "overwritten\n").await;
        assert!(
            res.err()
                .contains("The user rejected permission to run `external_directory`"),
            "{how:?}: {}",
            res.text
        );
        let res = f.edit(&path, "secret", "public").await;
        assert!(
            res.err()
                .contains("The user rejected permission to run `external_directory`"),
            "{how:?}: {}",
            res.text
        );
        assert_eq!(
            std::fs::read(&outside).unwrap(),
            b"secret outside\n",
            "{how:?}"
        );
        assert_eq!(
            recorder.permissions(),
            vec!["external_directory"; 3],
            "{how:?}"
        );
        let requests = recorder.requests.lock().unwrap();
        let scope = format!("{}/*", f.outside().to_string_lossy());
        assert_eq!(requests[0].patterns, vec![scope], "{how:?}");
    }
}

#[tokio::test]
async fn escaping_paths_approved_once_are_read_and_edited() {
    for how in ESCAPES {
        let (f, recorder) = gated(Reply::Once, build_rules());
        let path = escape_path(&f, how);
        let outside = f.outside().join("outside.txt");

        let res = f.read(&path).await;
        assert!(
            res.ok().contains("     1\tsecret outside"),
            "{how:?}: {}",
            res.text
        );
        f.edit(&path, "secret", "public").await.ok();
        assert_eq!(
            std::fs::read(&outside).unwrap(),
            b"public outside\n",
            "{how:?}"
        );
        let permissions = recorder.permissions();
        assert_eq!(
            permissions.first().map(String::as_str),
            Some("external_directory"),
            "{how:?}: {permissions:?}"
        );
        assert_eq!(
            permissions
                .iter()
                .filter(|p| *p == "external_directory")
                .count(),
            2,
            "one question per call: {how:?}: {permissions:?}"
        );
        if matches!(how, Escape::Symlink) {
            let meta = std::fs::symlink_metadata(f.path("escape.txt")).unwrap();
            assert!(meta.file_type().is_symlink());
        }
    }
}

#[tokio::test]
async fn new_file_through_a_symlinked_directory_outside_needs_permission() {
    let (f, recorder) = gated(Reply::Reject { message: None }, build_rules());
    let outside_dir = f.outside().join("elsewhere");
    std::fs::create_dir(&outside_dir).unwrap();
    std::os::unix::fs::symlink(&outside_dir, f.path("linkdir")).unwrap();
    let res = f.write("linkdir/new.txt", "x\n").await;
    assert!(
        res.err()
            .contains("The user rejected permission to run `external_directory`"),
        "{}",
        res.text
    );
    assert!(!outside_dir.join("new.txt").exists());
    let res = f.edit("linkdir/made.txt", "", "x\n").await;
    res.err();
    assert!(!outside_dir.join("made.txt").exists());
    assert_eq!(
        recorder.permissions(),
        vec!["external_directory"; 2],
        "{:?}",
        recorder.requests.lock().unwrap()
    );
}

fn deny_edit_rules() -> Ruleset {
    let mut rules = build_rules();
    rules.push(Rule::new(
        "edit",
        "*",
        Action::Deny,
        RuleSource::Config {
            key: "permission.edit".to_owned(),
        },
    ));
    rules
}

#[tokio::test]
async fn denied_edit_discloses_nothing_about_the_file() {
    let (f, recorder) = gated(Reply::Once, deny_edit_rules());
    f.put("f.txt", "content\n");
    f.read("f.txt").await.ok();
    let denial = "Permission denied: `edit` on `f.txt` is denied by your configuration \
                  (`permission.edit`): deny `edit` on `*`.";
    // Whether oldString matches, does not match, or the file is missing, the answer is the same.
    for (path, old) in [
        ("f.txt", "content"),
        ("f.txt", "no such text"),
        ("missing.txt", "x"),
    ] {
        let res = f.edit(path, old, "new").await;
        let text = res.err();
        let expected = denial.replace("f.txt", path);
        assert!(text.starts_with(&expected), "{path} {old:?}: {text}");
        assert!(!text.contains("not found"), "{text}");
        assert!(!text.contains("does not exist"), "{text}");
    }
    let res = f.write("f.txt", "x\n").await;
    assert!(res.err().starts_with(denial), "{}", res.text);
    let res = f
        .call(
            "multiedit",
            json!({"filePath": "f.txt", "edits": [{"oldString": "nope", "newString": "x"}]}),
        )
        .await;
    assert!(res.err().starts_with(denial), "{}", res.text);
    assert_eq!(f.bytes("f.txt"), b"content\n");
    assert!(!f.path("missing.txt").exists());
    assert!(recorder.permissions().is_empty(), "a deny asks no one");
}
