//! Answers permission questions: approve once, prompt on the terminal, or refuse.

use std::io::{BufRead, Write};
use std::sync::{Arc, OnceLock, Weak};

use tackle_permission::{Approver, PermissionRequest, PermissionService, Reply};

/// How the command answers a permission question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AskMode {
    /// Approve every question once (`--yes`).
    Yes,
    /// Ask the user on stderr and read the answer from stdin.
    Prompt,
    /// Nobody can be asked: refuse with a message saying how to allow it.
    Refuse,
}

/// The command's approver. It replies from inside `ask`, through a back-reference to the
/// service it serves.
pub(crate) struct CliApprover {
    mode: AskMode,
    service: OnceLock<Weak<PermissionService>>,
}

impl CliApprover {
    pub(crate) fn new(mode: AskMode) -> Self {
        Self {
            mode,
            service: OnceLock::new(),
        }
    }

    /// Connects the approver to the service whose questions it answers.
    pub(crate) fn attach(&self, service: &Arc<PermissionService>) {
        let _ = self.service.set(Arc::downgrade(service));
    }
}

impl Approver for CliApprover {
    fn ask(&self, request: &PermissionRequest) {
        let Some(service) = self.service.get().and_then(Weak::upgrade) else {
            return;
        };
        let reply = match self.mode {
            AskMode::Yes => Reply::Once,
            AskMode::Refuse => Reply::Reject {
                message: Some(format!(
                    "This run is non-interactive, so the user could not be asked to allow `{}` \
                     on {}. Re-run with --yes, or allow it in the permission config.",
                    request.permission,
                    listed(&request.patterns),
                )),
            },
            AskMode::Prompt => prompt(request),
        };
        if let Err(error) = service.reply(&request.id, reply) {
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
    let _ = write!(
        stderr,
        "Allow `{}` on {}? [y]es / [a]lways / [N]o ",
        request.permission,
        listed(&request.patterns)
    );
    let _ = stderr.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return Reply::Reject { message: None };
    }
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Reply::Once,
        "a" | "always" => Reply::Always,
        _ => Reply::Reject { message: None },
    }
}

/// Patterns as "`a`, `b`".
fn listed(patterns: &[String]) -> String {
    patterns
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
