//! The report a model reads after a change, in OpenCode's wording: the errors the change
//! introduced in each changed file, then in up to five other files.

use std::collections::HashMap;
use std::fmt::Write as _;

use tackle_lsp::{FileDiagnostic, Severity};

/// Errors listed per file, as OpenCode does.
pub const MAX_PER_FILE: usize = 20;
/// Other files listed, as OpenCode does.
pub const MAX_OTHER_FILES: usize = 5;

/// One file's errors, split into those the change introduced and the count it found there.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileErrors {
    /// How the model names the file.
    pub display: String,
    /// The errors the change introduced, in line order.
    pub introduced: Vec<FileDiagnostic>,
    /// Errors that were there before the change and are not listed.
    pub preexisting: usize,
}

/// The errors of `after` that `before` did not have. `before` unknown means all are new.
/// Errors match by message and the text of their line (trimmed), as a multiset, so an old error
/// whose line moved is still old, and a second copy of it is new. Returns the new errors and how
/// many old ones were found.
pub fn introduced(
    before: Option<&[FileDiagnostic]>,
    after: &[FileDiagnostic],
) -> (Vec<FileDiagnostic>, usize) {
    let errors = after.iter().filter(|d| d.severity == Severity::Error);
    let Some(before) = before else {
        return (errors.cloned().collect(), 0);
    };
    let mut old: HashMap<(&str, &str), usize> = HashMap::new();
    for d in before.iter().filter(|d| d.severity == Severity::Error) {
        *old.entry((d.message.as_str(), d.line_text.as_str()))
            .or_default() += 1;
    }
    let mut new = Vec::new();
    let mut kept = 0;
    for d in errors {
        match old.get_mut(&(d.message.as_str(), d.line_text.as_str())) {
            Some(n) if *n > 0 => {
                *n -= 1;
                kept += 1;
            }
            _ => new.push(d.clone()),
        }
    }
    (new, kept)
}

/// One `<diagnostics>` block.
fn block(out: &mut String, file: &FileErrors) {
    let _ = write!(out, "<diagnostics file=\"{}\">", file.display);
    for d in file.introduced.iter().take(MAX_PER_FILE) {
        let _ = write!(
            out,
            "\n{} [{}:{}] {}",
            d.severity.label(),
            d.line,
            d.column,
            d.message
        );
    }
    if file.introduced.len() > MAX_PER_FILE {
        let _ = write!(
            out,
            "\n... and {} more",
            file.introduced.len() - MAX_PER_FILE
        );
    }
    out.push_str("\n</diagnostics>");
}

/// The count sentence for the errors a changed file already had; it names the file when the
/// call changed several.
fn preexisting_note(file: &FileErrors, single: bool) -> String {
    let count = file.preexisting;
    let place = if single {
        "there".to_owned()
    } else {
        format!("in {}", file.display)
    };
    if count == 1 {
        format!("(1 error that was {place} before this change is not listed.)")
    } else {
        format!("({count} errors that were {place} before this change are not listed.)")
    }
}

/// The text appended to a tool's result; empty when there is nothing to say.
///
/// `changed` are the files the call changed (one for write and edit), `others` the other files
/// whose errors changed, and `notes` what the model should know about servers that did not
/// answer.
pub fn render(changed: &[FileErrors], others: &[FileErrors], notes: &[String]) -> String {
    let mut out = String::new();
    let single = changed.len() == 1;
    for file in changed {
        if file.introduced.is_empty() {
            // Old errors are counted even when the change added none.
            if file.preexisting > 0 {
                let _ = write!(out, "\n\n{}", preexisting_note(file, single));
            }
            continue;
        }
        if single {
            out.push_str("\n\nLSP errors detected in this file, please fix:\n");
        } else {
            let _ = write!(
                out,
                "\n\nLSP errors detected in {}, please fix:\n",
                file.display
            );
        }
        block(&mut out, file);
        if file.preexisting > 0 {
            out.push('\n');
            out.push_str(&preexisting_note(file, single));
        }
    }
    let with_errors: Vec<&FileErrors> =
        others.iter().filter(|f| !f.introduced.is_empty()).collect();
    if !with_errors.is_empty() {
        out.push_str("\n\nLSP errors detected in other files:");
        for file in with_errors.iter().take(MAX_OTHER_FILES) {
            out.push('\n');
            block(&mut out, file);
        }
        let rest = with_errors.len().saturating_sub(MAX_OTHER_FILES);
        if rest > 0 {
            let _ = write!(
                out,
                "\n({rest} more file{} with new errors {} not listed.)",
                if rest == 1 { "" } else { "s" },
                if rest == 1 { "is" } else { "are" }
            );
        }
    }
    for note in notes {
        out.push_str("\n\n");
        out.push_str(note);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(line: u32, message: &str, text: &str) -> FileDiagnostic {
        FileDiagnostic {
            line,
            column: 5,
            severity: Severity::Error,
            message: message.to_owned(),
            source: None,
            code: None,
            line_text: text.to_owned(),
        }
    }

    #[test]
    fn an_old_error_on_a_moved_line_is_counted_not_listed() {
        let before = [error(3, "bad", "x = f()")];
        let after = [error(4, "bad", "x = f()"), error(9, "worse", "y = g()")];
        let (new, kept) = introduced(Some(&before), &after);
        assert_eq!(new, vec![after[1].clone()]);
        assert_eq!(kept, 1);
        // Unknown before: everything is new.
        assert_eq!(introduced(None, &after).0.len(), 2);
        // A second copy of an old error is new.
        let doubled = [error(3, "bad", "x = f()"), error(4, "bad", "x = f()")];
        assert_eq!(
            introduced(Some(&before), &doubled),
            (vec![doubled[1].clone()], 1)
        );
    }

    #[test]
    fn warnings_are_never_listed() {
        let mut warning = error(1, "unused", "import os");
        warning.severity = Severity::Warning;
        assert!(introduced(None, &[warning]).0.is_empty());
    }

    #[test]
    fn the_block_follows_opencode_and_caps_each_file_at_twenty() {
        let many: Vec<_> = (1..=23).map(|i| error(i, "bad", "x")).collect();
        let file = FileErrors {
            display: "a.py".into(),
            introduced: many,
            preexisting: 2,
        };
        let text = render(&[file], &[], &[]);
        assert!(text.starts_with(
            "\n\nLSP errors detected in this file, please fix:\n<diagnostics file=\"a.py\">\nERROR [1:5] bad\n"
        ));
        assert!(text.contains("ERROR [20:5] bad\n... and 3 more\n</diagnostics>"));
        assert!(!text.contains("[21:5]"));
        assert!(text.ends_with("(2 errors that were there before this change are not listed.)"));
    }

    #[test]
    fn old_errors_are_counted_when_the_change_added_none() {
        let file = FileErrors {
            display: "a.py".into(),
            introduced: Vec::new(),
            preexisting: 3,
        };
        assert_eq!(
            render(std::slice::from_ref(&file), &[], &[]),
            "\n\n(3 errors that were there before this change are not listed.)"
        );
        let other = FileErrors {
            display: "b.py".into(),
            ..Default::default()
        };
        assert_eq!(
            render(&[file, other], &[], &[]),
            "\n\n(3 errors that were in a.py before this change are not listed.)"
        );
    }

    #[test]
    fn other_files_stop_at_five_and_say_how_many_more() {
        let others: Vec<_> = (0..7)
            .map(|i| FileErrors {
                display: format!("f{i}.py"),
                introduced: vec![error(1, "bad", "x")],
                preexisting: 0,
            })
            .collect();
        let clean = FileErrors {
            display: "a.py".into(),
            ..Default::default()
        };
        let text = render(&[clean], &others, &["(note)".into()]);
        assert!(
            text.starts_with(
                "\n\nLSP errors detected in other files:\n<diagnostics file=\"f0.py\">"
            )
        );
        assert!(text.contains("f4.py") && !text.contains("f5.py"));
        assert!(text.contains("(2 more files with new errors are not listed.)"));
        assert!(text.ends_with("\n\n(note)"));
        assert!(!text.contains("this file"));
        assert_eq!(render(&[FileErrors::default()], &[], &[]), "");
    }
}
