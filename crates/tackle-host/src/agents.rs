//! The agents of a host: each one's rules, from its preset or configuration with the
//! configuration's rules on top, computed once and shared by the gate and every turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tackle_permission::{Action, Agent, PresetContext, Rule, RuleSource, Ruleset};

use crate::config::Config;
use crate::error::HostError;

/// Every agent's rules, computed on first use.
pub(crate) struct Agents {
    config: Arc<Config>,
    context: PresetContext,
    known: Mutex<HashMap<String, Arc<Agent>>>,
}

impl Agents {
    pub(crate) fn new(config: Arc<Config>, context: PresetContext) -> Self {
        Self {
            config,
            context,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// The agent `name`: a preset or a configured agent. Unknown names are an error that lists
    /// the known ones.
    pub(crate) fn get(&self, name: &str) -> Result<Arc<Agent>, HostError> {
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(agent) = known.get(name) {
            return Ok(agent.clone());
        }
        let agent = Arc::new(self.config.agent(name, &self.context)?);
        known.insert(name.to_owned(), agent.clone());
        Ok(agent)
    }

    /// The rules a call of agent `name` is judged by. A call naming an agent the host does not
    /// know is denied everything: no turn offered it tools.
    pub(crate) fn rules(&self, name: &str) -> Ruleset {
        match self.get(name) {
            Ok(agent) => agent.rules.clone(),
            Err(_) => Ruleset::from_iter([Rule::new(
                "*",
                "*",
                Action::Deny,
                RuleSource::Agent {
                    name: name.to_owned(),
                },
            )]),
        }
    }
}
