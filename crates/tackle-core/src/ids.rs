//! Host-supplied identities (session, agent, assistant message and tool call), the position of a
//! sub-call inside its parent, and the identity of one registration.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// The value is opaque to tackle: it is stored and echoed exactly as the host supplied it.
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a host-supplied identifier.
            pub fn new(value: impl Into<Arc<str>>) -> Self {
                Self(value.into())
            }

            /// The identifier exactly as the host supplied it.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::new(value)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }
    };
}

define_id!(
    /// The session a call belongs to.
    SessionId
);
define_id!(
    /// The agent (persona and permission set) that made a call.
    AgentId
);
define_id!(
    /// The durable ID of the assistant message that contains a call.
    MessageId
);
define_id!(
    /// The provider's ID for one tool call.
    CallId
);

/// The complete identity of one invocation, supplied by the host.
///
/// The registry never invents or rewrites any of these: the journal records them verbatim
/// (`LAW-DURABLE-IDENTITY`). A call that another call settles on its behalf (a `batch` sub-call)
/// keeps its parent's four IDs and adds its position, `sub_call`: its identity is the host's, plus
/// an index, never a made-up call ID.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallIdentity {
    /// The session the call belongs to.
    pub session: SessionId,
    /// The agent that made the call.
    pub agent: AgentId,
    /// The assistant message that contains the call.
    pub assistant_message: MessageId,
    /// The provider's call ID. For a sub-call, its parent's.
    pub call: CallId,
    /// For a sub-call, its 1-based position among its parent's sub-calls; `None` for a call the
    /// host settled itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_call: Option<u32>,
}

impl CallIdentity {
    /// Builds the identity of a call the host settles itself, from the four host-supplied IDs.
    pub fn new(
        session: impl Into<SessionId>,
        agent: impl Into<AgentId>,
        assistant_message: impl Into<MessageId>,
        call: impl Into<CallId>,
    ) -> Self {
        Self {
            session: session.into(),
            agent: agent.into(),
            assistant_message: assistant_message.into(),
            call: call.into(),
            sub_call: None,
        }
    }

    /// The identity of sub-call `index` (1-based) of this call: the same four IDs, plus the index.
    pub fn sub_call(&self, index: u32) -> Self {
        Self {
            sub_call: Some(index),
            ..self.clone()
        }
    }
}

/// The identity of one registration: one name in one registered record.
///
/// Every registration gets a fresh one, unique in the process, so a turn can tell whether the
/// registration it advertised is still the effective one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegistrationId(u64);

impl RegistrationId {
    /// A new identity, never handed out before in this process. Placements mint one per
    /// registered name.
    pub fn mint() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The raw number, as the journal stores it.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for RegistrationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}
