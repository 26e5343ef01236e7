//! Answers permission questions from the command line: a prompt on the terminal, or an honest
//! "nobody could be asked" when there is no terminal and no `--yes`.

use std::io::{BufRead, Write};
use std::sync::Arc;

use tackle_host::{Answer, Approvals, Asker};
use tackle_permission::{PermissionRequest, Reply};

/// Nobody can be asked, for `reason`; `--yes` or a permission rule allows it.
pub(crate) fn no_one_to_ask(reason: &str) -> Approvals {
    no_one_to_ask_unless(reason, "re-run with --yes")
}

/// Nobody can be asked, for `reason`; a permission rule or `remedy` (what the user can do)
/// allows it.
pub(crate) fn no_one_to_ask_unless(reason: &str, remedy: &str) -> Approvals {
    Approvals::NoOneToAsk {
        reason: reason.to_owned(),
        remedy: Some(remedy.to_owned()),
    }
}

/// Questions asked on the terminal.
pub(crate) fn terminal() -> Approvals {
    Approvals::Ask(Arc::new(TerminalAsker))
}

/// Asks on stderr and reads the answer from stdin.
struct TerminalAsker;

impl Asker for TerminalAsker {
    fn ask(&self, request: &PermissionRequest, answer: Answer) {
        if let Err(error) = answer.reply(prompt(request)) {
            eprintln!("tackle: {error}");
        }
    }
}

/// Asks on stderr; `y` allows once, `a` always, anything else refuses.
fn prompt(request: &PermissionRequest) -> Reply {
    let mut stderr = std::io::stderr().lock();
    if let Some(diff) = request.metadata.get("diff").and_then(|d| d.as_str()) {
        let _ = writeln!(stderr, "{diff}");
    }
    let patterns = request
        .patterns
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = write!(
        stderr,
        "Allow `{}` on {patterns}? [y]es / [a]lways / [N]o ",
        request.permission,
    );
    let _ = stderr.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return Reply::NoOneToAsk {
            reason: "the terminal could not be read".to_owned(),
            remedy: Some("re-run with --yes".to_owned()),
        };
    }
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Reply::Once,
        "a" | "always" => Reply::Always,
        _ => Reply::Reject { message: None },
    }
}
