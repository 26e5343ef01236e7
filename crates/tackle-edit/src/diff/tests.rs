//! Tests for line diffs from splices, splice composition and the unified rendering.

use proptest::prelude::*;

use super::{LineDiff, LineOp, Splice, compose};

/// Applies `splices` (old ranges of `old`) with the given replacement texts.
fn apply(old: &str, edits: &[(std::ops::Range<usize>, String)]) -> (String, Vec<Splice>) {
    let mut out = String::new();
    let mut splices = Vec::new();
    let mut cursor = 0;
    for (range, text) in edits {
        out.push_str(&old[cursor..range.start]);
        let at = out.len();
        out.push_str(text);
        splices.push(Splice {
            old: range.clone(),
            new: at..out.len(),
        });
        cursor = range.end;
    }
    out.push_str(&old[cursor..]);
    (out, splices)
}

/// Checks that the ops cover both texts in order and that equal ops are really equal.
fn assert_valid(diff: &LineDiff<'_>) {
    let (mut o, mut n) = (0, 0);
    for op in diff.ops() {
        match op {
            LineOp::Equal { old, new, len } => {
                assert_eq!((*old, *new), (o, n), "{:?}", diff.ops());
                assert_eq!(
                    diff.old_lines()[*old..old + len],
                    diff.new_lines()[*new..new + len]
                );
                o += len;
                n += len;
            }
            LineOp::Change { old, new } => {
                assert_eq!((old.start, new.start), (o, n), "{:?}", diff.ops());
                o = old.end;
                n = new.end;
            }
        }
    }
    assert_eq!((o, n), (diff.old_lines().len(), diff.new_lines().len()));
}

/// Sorted, disjoint edits of `text` on character boundaries, from raw picks.
fn edits_of(text: &str, picks: &[(usize, usize, String)]) -> Vec<(std::ops::Range<usize>, String)> {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let mut cuts: Vec<(usize, usize, String)> = picks
        .iter()
        .map(|(a, len, s)| {
            let start = bounds[a % bounds.len()];
            let end = bounds[(a % bounds.len() + len).min(bounds.len() - 1)];
            (start, end, s.clone())
        })
        .collect();
    cuts.sort_by_key(|c| (c.0, c.1));
    let mut out: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (start, end, s) in cuts {
        if out
            .last()
            .is_some_and(|(r, _)| start < r.end || start == r.start)
        {
            continue;
        }
        out.push((start..end, s));
    }
    out
}

#[test]
fn a_one_line_change_is_one_hunk_with_context() {
    let old = "a\nb\nc\nd\ne\nf\ng\n";
    let (new, splices) = apply(old, &[(6..7, "D".to_owned())]);
    let diff = LineDiff::from_splices(old, &new, &splices);
    assert_eq!((diff.additions(), diff.deletions()), (1, 1));
    assert_eq!(
        diff.unified("f.txt", 3),
        "--- a/f.txt\n+++ b/f.txt\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n"
    );
}

#[test]
fn a_multi_line_replacement_refines_to_the_lines_that_differ() {
    let old = "one\ntwo\nthree\n";
    let (new, splices) = apply(old, &[(0..14, "one\n2\nthree\n".to_owned())]);
    let diff = LineDiff::from_splices(old, &new, &splices);
    assert_eq!((diff.additions(), diff.deletions()), (1, 1));
    assert_valid(&diff);
}

#[test]
fn a_missing_final_newline_is_marked() {
    let diff = LineDiff::compute("a\nb", "a\nc");
    assert_eq!(
        diff.unified("x", 3),
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    );
}

#[test]
fn creating_and_emptying_a_file() {
    let created = LineDiff::compute("", "x\ny\n");
    assert_eq!(
        created.unified("n", 3),
        "--- a/n\n+++ b/n\n@@ -0,0 +1,2 @@\n+x\n+y\n"
    );
    let emptied = LineDiff::compute("x\n", "");
    assert_eq!(
        emptied.unified("n", 3),
        "--- a/n\n+++ b/n\n@@ -1 +0,0 @@\n-x\n"
    );
    assert_eq!(LineDiff::compute("same\n", "same\n").unified("n", 3), "");
}

#[test]
fn distant_changes_get_separate_hunks_and_near_ones_share() {
    let old: String = (0..30).map(|i| format!("{i}\n")).collect();
    let new = old
        .replace("\n5\n", "\nfive\n")
        .replace("\n9\n", "\nnine\n")
        .replace("\n25\n", "\nX\n");
    let diff = LineDiff::compute(&old, &new);
    let text = diff.unified("f", 3);
    assert_eq!(text.matches("@@ -").count(), 2, "{text}");
    assert!(text.contains("@@ -3,11 +3,11 @@"), "{text}");
    assert!(text.contains("@@ -23,7 +23,7 @@"), "{text}");
}

#[test]
fn replacing_every_line_stays_one_change_per_line() {
    let old: String = (0..20_000).map(|i| format!("token_{i} = 1;\n")).collect();
    let new = old.replace("token_", "renamed_");
    let splices: Vec<Splice> = {
        let mut out = Vec::new();
        let mut shift = 0isize;
        for (at, _) in old.match_indices("token_") {
            let start = (at as isize + shift) as usize;
            out.push(Splice {
                old: at..at + 6,
                new: start..start + 8,
            });
            shift += 2;
        }
        out
    };
    let diff = LineDiff::from_splices(&old, &new, &splices);
    assert_eq!((diff.additions(), diff.deletions()), (20_000, 20_000));
    assert_eq!(
        diff.ops(),
        [LineOp::Change {
            old: 0..20_000,
            new: 0..20_000
        }]
    );
}

#[test]
fn an_unrelated_rewrite_is_one_change() {
    let old: String = (0..20_000).map(|i| format!("old line {i}\n")).collect();
    let new: String = (0..50_000).map(|i| format!("new line {i}\n")).collect();
    let diff = LineDiff::compute(&old, &new);
    assert_eq!((diff.additions(), diff.deletions()), (50_000, 20_000));
    assert_valid(&diff);
}

proptest! {
    #[test]
    fn splice_diffs_are_valid_and_reconstruct_the_new_text(
        old in "[ab\n]{0,40}",
        picks in prop::collection::vec((0usize..50, 0usize..6, "[abc\n]{0,5}"), 0..5),
    ) {
        let edits = edits_of(&old, &picks);
        let (new, splices) = apply(&old, &edits);
        let diff = LineDiff::from_splices(&old, &new, &splices);
        assert_valid(&diff);
        let computed = LineDiff::compute(&old, &new);
        assert_valid(&computed);
        // Both diffs tell the same story line for line.
        let rebuilt: String = diff.ops().iter().map(|op| match op {
            LineOp::Equal { new, len, .. } => diff.new_lines()[*new..new + len].concat(),
            LineOp::Change { new, .. } => diff.new_lines()[new.clone()].concat(),
        }).collect();
        prop_assert_eq!(rebuilt, new.clone());
        prop_assert_eq!(diff.additions() == 0 && diff.deletions() == 0, old == new);
    }

    #[test]
    fn composed_splices_turn_the_first_text_into_the_last(
        a in "[ab\n]{0,30}",
        first in prop::collection::vec((0usize..40, 0usize..5, "[xy\n]{0,4}"), 0..4),
        second in prop::collection::vec((0usize..40, 0usize..5, "[zw\n]{0,4}"), 0..4),
    ) {
        let (b, s1) = apply(&a, &edits_of(&a, &first));
        let (c, s2) = apply(&b, &edits_of(&b, &second));
        let composed = compose(&s1, &s2);
        // Outside the composed splices, A and C are the same text.
        let mut rebuilt = String::new();
        let mut cursor = 0;
        for s in &composed {
            prop_assert!(s.old.start >= cursor, "{:?}", composed);
            rebuilt.push_str(&a[cursor..s.old.start]);
            rebuilt.push_str(&c[s.new.clone()]);
            cursor = s.old.end;
        }
        rebuilt.push_str(&a[cursor..]);
        prop_assert_eq!(rebuilt, c.clone());
        let diff = LineDiff::from_splices(&a, &c, &composed);
        assert_valid(&diff);
    }
}
