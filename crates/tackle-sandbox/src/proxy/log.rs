//! The block log: the proxy's refusals, numbered, in a bounded ring.

use std::collections::VecDeque;
use std::fmt;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

/// How many refusals the log keeps; older ones are dropped first.
pub(crate) const LOG_CAPACITY: usize = 1_000;

/// One refused connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// Its number: 0 for the proxy's first refusal, then one more for each.
    pub seq: u64,
    /// The host as the client named it (lower case, IPv6 without brackets).
    pub host: String,
    pub port: u16,
    pub reason: BlockReason,
}

/// Why the proxy refused a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockReason {
    /// No allow pattern matches the host and port.
    NotAllowed,
    /// A deny pattern matches (deny wins over allow).
    Denied { pattern: String },
    /// The host resolved to a local or private address, and no allow pattern names it exactly.
    PrivateAddress { address: IpAddr },
}

impl Blocked {
    /// `host:port`, with brackets around an IPv6 address.
    pub fn target(&self) -> String {
        host_port(&self.host, self.port)
    }
}

/// `host:port`, with brackets around an IPv6 address.
pub(crate) fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The one-line message a model reads (the body of the proxy's 403 answer).
impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.target();
        match &self.reason {
            BlockReason::NotAllowed => write!(
                f,
                "tackle sandbox: {target} is not in the network allow-list; add it to \
                 sandbox.network.allow in the configuration, or ask to run with sandbox \"off\"."
            ),
            BlockReason::Denied { pattern } => write!(
                f,
                "tackle sandbox: {target} is refused by the pattern `{pattern}` in \
                 sandbox.network.deny, which wins over the allow-list; only the user can change \
                 that in the configuration, so do not retry it."
            ),
            BlockReason::PrivateAddress { address } => write!(
                f,
                "tackle sandbox: {target} resolves to {address}, a local or private address, \
                 which is refused unless sandbox.network.allow names this host exactly (not \
                 through `*.`); add `{target}` to it in the configuration, or ask to run with \
                 sandbox \"off\"."
            ),
        }
    }
}

/// The ring of refusals.
#[derive(Debug, Default)]
pub(crate) struct BlockLog {
    inner: Mutex<Ring>,
}

#[derive(Debug, Default)]
struct Ring {
    next_seq: u64,
    entries: VecDeque<Blocked>,
}

impl BlockLog {
    pub(crate) fn record(&self, host: String, port: u16, reason: BlockReason) -> Blocked {
        let mut ring = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let blocked = Blocked {
            seq: ring.next_seq,
            host,
            port,
            reason,
        };
        ring.next_seq += 1;
        if ring.entries.len() == LOG_CAPACITY {
            ring.entries.pop_front();
        }
        ring.entries.push_back(blocked.clone());
        blocked
    }

    /// The sequence number the next refusal will get.
    pub(crate) fn position(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next_seq
    }

    /// The kept refusals numbered `position` or later, oldest first.
    pub(crate) fn since(&self, position: u64) -> Vec<Blocked> {
        let ring = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let first = ring.entries.front().map_or(0, |b| b.seq);
        let skip = usize::try_from(position.saturating_sub(first)).unwrap_or(usize::MAX);
        ring.entries.iter().skip(skip).cloned().collect()
    }
}
