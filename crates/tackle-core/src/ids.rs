//! Host-supplied identities: session, agent, assistant message and tool call.

use std::fmt;
use std::sync::Arc;

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
/// (`LAW-DURABLE-IDENTITY`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallIdentity {
    /// The session the call belongs to.
    pub session: SessionId,
    /// The agent that made the call.
    pub agent: AgentId,
    /// The assistant message that contains the call.
    pub assistant_message: MessageId,
    /// The provider's call ID.
    pub call: CallId,
}

impl CallIdentity {
    /// Builds an identity from the four host-supplied IDs.
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
        }
    }
}
