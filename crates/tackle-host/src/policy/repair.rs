//! Tool-name repair: a call to `Read` or `READ` settles as `read` when that is the only name of
//! the turn it matches without regard to case, as OpenCode repairs them.

use futures_util::future::BoxFuture;
use tackle_core::{Context, ToolFailure};
use tackle_registry::{CallDraft, Layer, Turn};

/// Repairs the case of a tool name the turn does not advertise.
pub(crate) struct NameRepair;

impl Layer for NameRepair {
    fn before<'a>(
        &'a self,
        turn: &'a Turn,
        _cx: &'a Context,
        call: &'a mut CallDraft,
    ) -> BoxFuture<'a, Result<(), ToolFailure>> {
        Box::pin(async move {
            if let Some(name) = repaired(turn, call.name()) {
                let why = format!("repaired the tool name `{}` to `{name}`", call.name());
                call.rename(name, why);
            }
            Ok(())
        })
    }
}

/// The one advertised name equal to `name` but for case, when `name` itself is not advertised.
fn repaired(turn: &Turn, name: &str) -> Option<String> {
    if turn.get(name).is_some() {
        return None;
    }
    let mut matches = turn
        .tools()
        .iter()
        .filter(|tool| tool.name().eq_ignore_ascii_case(name));
    let first = matches.next()?;
    matches.next().is_none().then(|| first.name().to_owned())
}
