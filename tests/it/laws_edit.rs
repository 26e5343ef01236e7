//! Property test for `LAW-TOLERANT-MATCH`: a quote that drifts from the file is either refused
//! or changes only the lines the model changed, keeping every other line's bytes.
//!
//! Each case generates a file of statements, closing braces and blank lines, quotes a run of its
//! lines with one drift (a changed token, whitespace, a dropped `;`, an indentation change, a
//! line too few or too many), and edits one quoted line. Drifts the law forbids must be refused;
//! the others must succeed without touching any line the edit did not change.
//!
//! Run deeper with `TACKLE_DEEP=1`. Failing cases are persisted to
//! `proptest-regressions/laws_edit.txt`, relative to the package root.

use crate::support::{cases, law_config};
use proptest::prelude::*;
use tackle_edit::replace::replace;

/// The engine is pure and fast, so this law runs eight times the usual case count.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases() * 8,
        ..law_config("proptest-regressions/laws_edit.txt")
    }
}

/// One generated file line: a statement unique to its index, a closing brace, or a blank.
fn file_line(index: usize, kind: u8, depth: usize) -> String {
    let indent = "    ".repeat(depth);
    match kind % 5 {
        0..=2 => format!("{indent}let v{index} = f{index}(a, b);"),
        3 => format!("{indent}}}"),
        _ => String::new(),
    }
}

fn is_statement(line: &str) -> bool {
    line.trim_start().starts_with("let v")
}

/// How the quote differs from the file.
#[derive(Debug, Clone, Copy)]
enum Drift {
    /// The quote is exact.
    None,
    /// A statement's callee is misremembered (`f3` quoted as `g3`): must be refused.
    Token,
    /// A statement's spacing differs (`v3  =  f3`).
    Whitespace,
    /// A statement's trailing `;` is missing from the quote.
    Mark,
    /// One quoted line is indented two more spaces.
    Indent,
    /// One interior file line is missing from the quote: refused unless it is blank.
    DropLine,
    /// The quote has a line the file lacks: refused unless it is blank.
    ExtraLine { blank: bool },
}

/// What the model's `newString` does to its quote.
#[derive(Debug, Clone, Copy)]
enum Change {
    Rewrite,
    Insert,
    Delete,
}

fn drift() -> impl Strategy<Value = Drift> {
    prop_oneof![
        Just(Drift::None),
        Just(Drift::Token),
        Just(Drift::Whitespace),
        Just(Drift::Mark),
        Just(Drift::Indent),
        Just(Drift::DropLine),
        any::<bool>().prop_map(|blank| Drift::ExtraLine { blank }),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::Rewrite),
        Just(Change::Insert),
        Just(Change::Delete)
    ]
}

/// A quoted line and the file line it stands for (`None` for a line the file does not have).
type Quoted = (String, Option<usize>);

/// What the law says of a drifted quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Only a refusal is right: no reading of the quote fits the file.
    Refuse,
    /// The quote fits the file under some rung's normalisation: it must be applied.
    Apply,
    /// Either may be right: the quote skipped a statement of the file, and what is left may
    /// fit another span. If applied, the skipped statement must survive.
    Either,
}

/// Applies the drift at quote position `at`; `None` when it does not apply to this quote.
fn drifted(mut quote: Vec<Quoted>, drift: Drift, at: usize) -> Option<(Vec<Quoted>, Verdict)> {
    let statements: Vec<usize> = (0..quote.len())
        .filter(|&i| is_statement(&quote[i].0))
        .collect();
    let pick_statement = || statements.get(at % statements.len().max(1)).copied();
    let verdict = match drift {
        Drift::None => Verdict::Apply,
        Drift::Token => {
            let i = pick_statement()?;
            quote[i].0 = quote[i].0.replacen("= f", "= g", 1);
            Verdict::Refuse
        }
        Drift::Whitespace => {
            let i = pick_statement()?;
            quote[i].0 = quote[i].0.replacen(" = ", "  =  ", 1);
            Verdict::Apply
        }
        Drift::Mark => {
            let i = pick_statement()?;
            quote[i].0.pop();
            Verdict::Apply
        }
        Drift::Indent => {
            let i = at % quote.len();
            if quote[i].0.is_empty() {
                return None;
            }
            quote[i].0.insert_str(0, "  ");
            Verdict::Apply
        }
        Drift::DropLine => {
            if quote.len() < 3 {
                return None;
            }
            let i = 1 + at % (quote.len() - 2);
            if quote[i].0.trim().is_empty() {
                quote.remove(i);
                Verdict::Apply
            } else if is_statement(&quote[i].0) {
                quote.remove(i);
                Verdict::Either
            } else {
                // A skipped brace may leave a quote of another brace's span: no clear oracle.
                return None;
            }
        }
        Drift::ExtraLine { blank } => {
            if quote.len() < 2 {
                return None;
            }
            let i = 1 + at % (quote.len() - 1);
            let text = if blank { "" } else { "    let extra = 0;" };
            quote.insert(i, (text.to_owned(), None));
            if blank {
                Verdict::Apply
            } else {
                Verdict::Refuse
            }
        }
    };
    Some((quote, verdict))
}

fn joined(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-TOLERANT-MATCH
    #[test]
    fn law_tolerant_match_changes_only_quoted_lines(
        kinds in prop::collection::vec((0u8..5, 0usize..3), 4..30),
        start in 0usize..30,
        len in 2usize..8,
        drift in drift(),
        drift_at in 0usize..8,
        change in change(),
        change_at in 0usize..8,
    ) {
        let file: Vec<String> = kinds
            .iter()
            .enumerate()
            .map(|(i, (kind, depth))| file_line(i, *kind, *depth))
            .collect();
        let start = start % file.len();
        let end = (start + len).min(file.len());
        let quote: Vec<Quoted> = (start..end).map(|i| (file[i].clone(), Some(i))).collect();
        let Some((quote, verdict)) = drifted(quote, drift, drift_at) else {
            return Ok(());
        };
        // The quote must be pinned by a statement it quotes exactly, or it may match elsewhere.
        let pinned = quote
            .iter()
            .any(|(l, from)| from.is_some_and(|f| file[f] == *l) && is_statement(l));
        if !pinned {
            return Ok(());
        }

        // The model's edit: which quoted lines it keeps, and the lines it writes.
        let k = change_at % quote.len();
        let mut new: Vec<(String, Option<usize>)> =
            quote.iter().enumerate().map(|(qi, (l, _))| (l.clone(), Some(qi))).collect();
        let written = match change {
            Change::Rewrite => {
                new[k] = (format!("    changed_{k}();"), None);
                Some(format!("changed_{k}();"))
            }
            Change::Insert => {
                new.insert(k, ("    inserted();".to_owned(), None));
                Some("inserted();".to_owned())
            }
            Change::Delete => {
                new.remove(k);
                None
            }
        };
        let quote_text = joined(&quote.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>());
        let new_text = joined(&new.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>());
        if quote_text == new_text {
            return Ok(());
        }
        let content = joined(&file);

        let result = replace(&content, &quote_text, &new_text, false);
        if content.contains(&quote_text) {
            // The drifted quote is still literal text of the file: the exact rung owns it.
            if let Ok(r) = &result {
                prop_assert!(r.strategy.is_exact());
                prop_assert_eq!(&r.content, &content.replacen(&quote_text, &new_text, 1));
            }
            return Ok(());
        }
        let replaced = match (verdict, result) {
            (Verdict::Refuse, Err(_)) | (Verdict::Either, Err(_)) => return Ok(()),
            (Verdict::Refuse, Ok(r)) => {
                return Err(TestCaseError::fail(format!("a forbidden drift was accepted: {r:?}")));
            }
            (Verdict::Apply, Err(e)) => {
                return Err(TestCaseError::fail(format!("an allowed drift was refused: {e}")));
            }
            (_, Ok(r)) => r,
        };

        // Every line outside the quoted span is byte-identical.
        let prefix = joined(&file[..start]);
        let suffix = joined(&file[end..]);
        prop_assert!(replaced.content.starts_with(&prefix), "{}", replaced.content);
        prop_assert!(replaced.content.ends_with(&suffix), "{}", replaced.content);
        prop_assert!(replaced.content.len() >= prefix.len() + suffix.len());
        let middle: Vec<&str> = replaced.content
            [prefix.len()..replaced.content.len() - suffix.len()]
            .lines()
            .collect();

        // A statement the quote skipped is never removed.
        if verdict == Verdict::Either {
            let skipped = (start..end)
                .filter(|fi| is_statement(&file[*fi]))
                .find(|fi| !quote.iter().any(|(_, from)| *from == Some(*fi)));
            if let Some(fi) = skipped {
                prop_assert!(middle.contains(&file[fi].as_str()), "{:?} lost {:?}", middle, file[fi]);
            }
            return Ok(());
        }
        // Every file line of the span is there with the file's bytes, in order, unless the model
        // removed or rewrote the quoted line that stands for it. A file line the quote skipped
        // is never removed.
        let kept_quoted: Vec<usize> = new.iter().filter_map(|(_, qi)| *qi).collect();
        let removed: Vec<usize> = (0..quote.len())
            .filter(|qi| !kept_quoted.contains(qi))
            .filter_map(|qi| quote[qi].1)
            .collect();
        let kept: Vec<&str> = (start..end)
            .filter(|fi| !removed.contains(fi))
            .map(|fi| file[fi].as_str())
            .filter(|l| !l.trim().is_empty())
            .collect();
        let mut rest = middle.iter();
        for line in &kept {
            prop_assert!(
                rest.any(|m| m == line),
                "kept line {:?} is missing or out of order in {:?}",
                line,
                middle
            );
        }
        // Nothing else appears: only the span's own lines and what the model wrote.
        for line in &middle {
            let own = file[start..end].iter().any(|f| f == line);
            let wrote = written.as_deref() == Some(line.trim());
            prop_assert!(own || wrote || line.trim().is_empty(), "unexpected line {:?} in {:?}", line, middle);
        }
        if let Some(text) = &written {
            prop_assert!(middle.iter().any(|m| m.trim() == text), "{:?}", middle);
        }
    }
}
