//! Property test for `LAW-TOLERANT-MATCH`: a quote that drifts from the file is either refused
//! or changes only the lines the model changed, keeping every other line's bytes, and keeps the
//! file's trailing `;`/`,` and quotation marks on the text of a changed line the model kept.
//!
//! Each case generates a file of statements (some with typographic quotes and a trailing `,`),
//! closing braces and blank lines, quotes a run of its lines with one drift (a changed token,
//! whitespace, a dropped `;` or `,`, ASCII quotes for typographic ones, an indentation change, a
//! line too few or too many), and edits one quoted line. Drifts the law forbids must be refused;
//! the others must succeed without touching any line the edit did not change.
//!
//! Run deeper with `TACKLE_DEEP=1`. Failing cases are persisted to
//! `proptest-regressions/laws_edit.txt`, relative to the package root.

use crate::support::{cases, law_config};
use proptest::prelude::*;
use tackle_edit::replace::{EditError, replace};

/// The engine is pure and fast, so this law runs eight times the usual case count.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases() * 8,
        ..law_config("proptest-regressions/laws_edit.txt")
    }
}

/// One generated file line: a statement unique to its index (one kind with typographic quotes
/// and a trailing `,`), a closing brace, or a blank.
fn file_line(index: usize, kind: u8, depth: usize) -> String {
    let indent = "    ".repeat(depth);
    match kind % 5 {
        0 | 1 => format!("{indent}let v{index} = f{index}(a, b);"),
        2 => format!(
            "{indent}let v{index} = f{index}(\u{201C}it\u{2019}s\u{201D}, \u{2018}{index}\u{2019}),"
        ),
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
    /// A statement's trailing `;` or `,` is missing from the quote.
    Mark,
    /// The quote has ASCII quotes where the file has typographic ones.
    Quotes,
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
    /// A statement's callee renamed (`f3` to `h3`), the rest of its line as quoted.
    Edit,
    /// The same, and a line inserted after it.
    Split,
}

fn drift() -> impl Strategy<Value = Drift> {
    prop_oneof![
        Just(Drift::None),
        Just(Drift::Token),
        Just(Drift::Whitespace),
        Just(Drift::Mark),
        Just(Drift::Quotes),
        Just(Drift::Indent),
        Just(Drift::DropLine),
        any::<bool>().prop_map(|blank| Drift::ExtraLine { blank }),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::Rewrite),
        Just(Change::Insert),
        Just(Change::Delete),
        Just(Change::Edit),
        Just(Change::Split),
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
        Drift::Quotes => {
            if !quote.iter().any(|(l, _)| *l != ascii(l)) {
                return None;
            }
            for line in &mut quote {
                line.0 = ascii(&line.0);
            }
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

/// A line trimmed, with ASCII quotes and without its trailing `;` or `,`: what the rungs
/// ignore.
fn shape(line: &str) -> String {
    ascii(line.trim()).trim_end_matches([';', ',']).to_owned()
}

/// A line with ASCII quotes for typographic ones.
fn ascii(line: &str) -> String {
    line.replace(['\u{201C}', '\u{201D}'], "\"")
        .replace(['\u{2018}', '\u{2019}'], "'")
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

        // The model's edit: which quoted lines it keeps, and the lines it writes (trimmed).
        let k = change_at % quote.len();
        let mut new: Vec<(String, Option<usize>)> =
            quote.iter().enumerate().map(|(qi, (l, _))| (l.clone(), Some(qi))).collect();
        // A callee rename keeps the rest of the line as quoted; where the quote differs from the
        // file only in its ending or its quotes, the file's line with the rename is what must
        // be written, byte for byte.
        let renamed = |line: &str| line.replacen(" f", " h", 1);
        let mut exact: Option<String> = None;
        let written: Vec<String> = match change {
            Change::Rewrite => {
                new[k] = (format!("    changed_{k}();"), None);
                vec![format!("changed_{k}();")]
            }
            Change::Insert => {
                new.insert(k, ("    inserted();".to_owned(), None));
                vec!["inserted();".to_owned()]
            }
            Change::Delete => {
                new.remove(k);
                Vec::new()
            }
            Change::Edit | Change::Split => {
                let (line, Some(fi)) = &quote[k] else { return Ok(()) };
                if !is_statement(line) || renamed(line) == *line {
                    return Ok(());
                }
                if shape(line) == shape(&file[*fi]) {
                    exact = Some(renamed(&file[*fi]));
                }
                new[k] = (renamed(line), None);
                let mut written = vec![renamed(line).trim().to_owned()];
                if matches!(change, Change::Split) {
                    new.insert(k + 1, ("    inserted();".to_owned(), None));
                    written.push("inserted();".to_owned());
                }
                written
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
            // A changed line split in two may leave no clear place for the file's ending.
            (_, Err(EditError::UnclearMark { .. })) if matches!(change, Change::Split) => {
                return Ok(());
            }
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
            let wrote = written.iter().any(|w| shape(w) == shape(line));
            prop_assert!(own || wrote || line.trim().is_empty(), "unexpected line {:?} in {:?}", line, middle);
        }
        for text in &written {
            prop_assert!(middle.iter().any(|m| shape(m) == shape(text)), "{:?} missing from {:?}", text, middle);
        }
        // The file's ending and quotation marks survive on the text the model kept.
        if let Some(line) = &exact {
            prop_assert!(middle.contains(&line.as_str()), "{:?} missing from {:?}", line, middle);
        }
    }
}
