//! MCP logging: each connection's `logging/setLevel`, and the host's messages (a skipped MCP
//! server, a failed snapshot) sent to the clients that asked for them as `notifications/message`.
//!
//! The host says what happened ([`LogMessage`], with the session it concerns, if any); this
//! module decides who hears it. A connection hears nothing until its client sets a level; it
//! then gets the recent messages it missed ([`BACKLOG`]) and every later one at or above its
//! level, for its session or for no session in particular.

// MCP 2026-07-28 deprecates logging (SEP-2577); clients of 2025-11-25 still use it.
#![allow(deprecated)]

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::{Peer, RoleServer};

/// How many recent messages are kept for a client that sets its level later: the warnings of
/// the server's start (a skipped MCP server) happen before any client connects.
pub const BACKLOG: usize = 64;

/// The longest message text sent; longer text is cut with an ellipsis.
const MAX_MESSAGE_CHARS: usize = 4000;

/// How severe a [`LogMessage`] is, in MCP's (syslog's) order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something was skipped or degraded; the session goes on.
    Warning,
    /// Something failed.
    Error,
}

impl LogLevel {
    fn wire(self) -> LoggingLevel {
        match self {
            Self::Debug => LoggingLevel::Debug,
            Self::Info => LoggingLevel::Info,
            Self::Notice => LoggingLevel::Notice,
            Self::Warning => LoggingLevel::Warning,
            Self::Error => LoggingLevel::Error,
        }
    }
}

/// The rank of a wire level, comparable with [`LogLevel`]'s order (MCP's levels above `error`
/// rank above every [`LogLevel`]).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Something the host tells the clients that asked to hear it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogMessage {
    /// How severe it is.
    pub level: LogLevel,
    /// The session it concerns (only that session's connections hear it), or `None` for every
    /// connection.
    pub session: Option<String>,
    /// What happened, in a sentence or two.
    pub text: String,
}

impl LogMessage {
    /// A warning about no session in particular.
    pub fn warning(text: impl Into<String>) -> Self {
        Self {
            level: LogLevel::Warning,
            session: None,
            text: text.into(),
        }
    }

    /// The same message, about `session` only.
    pub fn for_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }
}

/// A connection that set its level.
struct Listener {
    connection: String,
    session: String,
    level: LoggingLevel,
    peer: Peer<RoleServer>,
}

/// The listening connections and the recent messages, shared by a server's connections.
#[derive(Default)]
pub(crate) struct Logging {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    listeners: Vec<Listener>,
    backlog: VecDeque<LogMessage>,
}

impl Logging {
    /// Records `level` for `connection`; a connection's first level also gets the backlog it
    /// would hear.
    pub(crate) async fn set_level(
        &self,
        connection: &str,
        session: &str,
        level: LoggingLevel,
        peer: Peer<RoleServer>,
    ) {
        let missed: Vec<LogMessage> = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.listeners.retain(|l| !l.peer.is_transport_closed());
            if let Some(listener) = state
                .listeners
                .iter_mut()
                .find(|l| l.connection == connection)
            {
                listener.level = level;
                return;
            }
            state.listeners.push(Listener {
                connection: connection.to_owned(),
                session: session.to_owned(),
                level,
                peer: peer.clone(),
            });
            state
                .backlog
                .iter()
                .filter(|m| hears(level, session, m))
                .cloned()
                .collect()
        };
        for message in missed {
            send(&peer, &message).await;
        }
    }

    /// Has `peer` hear the messages at or above `level` while the returned guard lives, without
    /// the backlog: an MCP 2026-07-28 request that opts in with `_meta`'s `logLevel` hears what
    /// happens while it runs.
    pub(crate) fn during<'a>(
        &'a self,
        request: String,
        session: &str,
        level: LoggingLevel,
        peer: Peer<RoleServer>,
    ) -> During<'a> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.listeners.push(Listener {
            connection: request.clone(),
            session: session.to_owned(),
            level,
            peer,
        });
        During {
            logging: self,
            request,
        }
    }

    /// Sends `message` to every connection that hears it, and keeps it for later ones.
    pub(crate) async fn log(&self, message: LogMessage) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.backlog.len() == BACKLOG {
                state.backlog.pop_front();
            }
            state.backlog.push_back(message.clone());
            state.listeners.retain(|l| !l.peer.is_transport_closed());
            state
                .listeners
                .iter()
                .filter(|l| hears(l.level, &l.session, &message))
                .map(|l| l.peer.clone())
                .collect()
        };
        for peer in peers {
            send(&peer, &message).await;
        }
    }
}

/// A request's listening, ended when dropped.
pub(crate) struct During<'a> {
    logging: &'a Logging,
    request: String,
}

impl Drop for During<'_> {
    fn drop(&mut self) {
        let mut state = self
            .logging
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.listeners.retain(|l| l.connection != self.request);
    }
}

/// Whether a connection of `session` at `level` hears `message`.
fn hears(level: LoggingLevel, session: &str, message: &LogMessage) -> bool {
    rank(message.level.wire()) >= rank(level)
        && message.session.as_deref().is_none_or(|s| s == session)
}

async fn send(peer: &Peer<RoleServer>, message: &LogMessage) {
    let mut chars = message.text.chars();
    let mut text: String = chars.by_ref().take(MAX_MESSAGE_CHARS).collect();
    if chars.next().is_some() {
        text.push('…');
    }
    let param = LoggingMessageNotificationParam::new(message.level.wire(), text.into())
        .with_logger("tackle");
    if let Err(error) = peer.notify_logging_message(param).await {
        tracing::debug!("cannot send notifications/message: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_hears_messages_at_or_above_its_level_for_its_session_or_none() {
        let warning = LogMessage::warning("a server was skipped");
        assert!(hears(LoggingLevel::Warning, "s1", &warning));
        assert!(hears(LoggingLevel::Debug, "s1", &warning));
        assert!(!hears(LoggingLevel::Error, "s1", &warning));
        let own = warning.clone().for_session("s1");
        assert!(hears(LoggingLevel::Info, "s1", &own));
        assert!(!hears(LoggingLevel::Info, "s2", &own));
        let error = LogMessage {
            level: LogLevel::Error,
            ..warning
        };
        assert!(hears(LoggingLevel::Error, "s1", &error));
        assert!(!hears(LoggingLevel::Critical, "s1", &error));
    }
}
