//! What the host warns about while it runs (an MCP server skipped or disconnected, a snapshot
//! that failed, configuration ignored), for its log and for whoever follows the host: `tackle
//! serve` sends each to its clients as an MCP log message ([`Host::warnings`]).
//!
//! [`Host::warnings`]: crate::Host::warnings

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::Stream;
use tokio::sync::broadcast;

/// How many past warnings a new follower gets first: the host's start happens before anyone
/// follows it.
const RECENT: usize = 64;

/// How many warnings may wait for a slow follower before it misses some (it is told how many).
const WAITING: usize = 256;

/// One warning of the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostWarning {
    /// The session it concerns, or `None` for the host as a whole.
    pub session: Option<String>,
    /// What happened and what it means, in a sentence or two.
    pub message: String,
}

/// The host's warnings: the recent ones, and a channel for the ones to come. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Warnings {
    inner: Arc<Inner>,
}

struct Inner {
    recent: Mutex<VecDeque<HostWarning>>,
    live: broadcast::Sender<HostWarning>,
}

impl Default for Warnings {
    fn default() -> Self {
        Self {
            inner: Arc::new(Inner {
                recent: Mutex::new(VecDeque::new()),
                live: broadcast::channel(WAITING).0,
            }),
        }
    }
}

impl Warnings {
    /// Logs a warning about the host as a whole and tells the followers.
    pub(crate) fn host(&self, message: impl Into<String>) {
        self.publish(HostWarning {
            session: None,
            message: message.into(),
        });
    }

    /// Logs a warning about `session` and tells the followers.
    pub(crate) fn session(&self, session: &str, message: impl Into<String>) {
        self.publish(HostWarning {
            session: Some(session.to_owned()),
            message: message.into(),
        });
    }

    fn publish(&self, warning: HostWarning) {
        match &warning.session {
            Some(session) => tracing::warn!(session, "{}", warning.message),
            None => tracing::warn!("{}", warning.message),
        }
        let mut recent = self
            .inner
            .recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if recent.len() == RECENT {
            recent.pop_front();
        }
        recent.push_back(warning.clone());
        // Sent under the lock, so a new follower never gets one twice or misses one.
        let _ = self.inner.live.send(warning);
    }

    /// The recent warnings, then every later one, as they come. A follower that falls more
    /// than 256 behind gets one warning saying how many it missed.
    pub(crate) fn follow(&self) -> impl Stream<Item = HostWarning> + Send + 'static {
        let (recent, live) = {
            let recent = self
                .inner
                .recent
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            (
                recent.iter().cloned().collect::<Vec<_>>(),
                self.inner.live.subscribe(),
            )
        };
        let live = futures_util::stream::unfold(live, |mut live| async move {
            let warning = match live.recv().await {
                Ok(warning) => warning,
                Err(broadcast::error::RecvError::Lagged(missed)) => HostWarning {
                    session: None,
                    message: format!("{missed} warnings were missed (see the log)"),
                },
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((warning, live))
        });
        futures_util::StreamExt::chain(futures_util::stream::iter(recent), live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt as _;

    #[tokio::test]
    async fn a_follower_gets_the_recent_warnings_then_the_later_ones_in_order() {
        let warnings = Warnings::default();
        warnings.host("an MCP server was skipped");
        let mut follower = Box::pin(warnings.follow());
        warnings.session("s1", "a snapshot failed");
        let first = follower.next().await.unwrap();
        assert_eq!(first.message, "an MCP server was skipped");
        assert_eq!(first.session, None);
        let second = follower.next().await.unwrap();
        assert_eq!(second.session.as_deref(), Some("s1"));
    }
}
