//! What the sandbox does on this machine, for `tackle config check` and the start-up warning.

use serde_json::{Value, json};
use tackle_sandbox::{Mode, Network, Policy, Support, Unavailable};

use crate::config::Config;

/// The agents whose policy differs from the default's, then the default, by name.
fn policies(config: &Config) -> Vec<(String, Policy)> {
    let default = config.sandbox_policy("");
    let mut out = vec![("default".to_owned(), default.clone())];
    for name in tackle_permission::PRESET_NAMES {
        let policy = config.sandbox_policy(name);
        if policy != default {
            out.push((format!("agent {name}"), policy));
        }
    }
    out
}

fn describe(policy: &Policy) -> String {
    let network = match &policy.network {
        Network::On => "network on".to_owned(),
        Network::Off => "network off".to_owned(),
        Network::Allow { allow, deny } => {
            let mut text = format!("network only to {}", allow.join(", "));
            if !deny.is_empty() {
                text.push_str(&format!(" (never {})", deny.join(", ")));
            }
            text
        }
    };
    let backend = match policy.backend {
        tackle_sandbox::Backend::Landlock => String::new(),
        tackle_sandbox::Backend::Bubblewrap => match tackle_sandbox::bubblewrap() {
            Ok(bwrap) => format!(", shell commands through {}", bwrap.display()),
            Err(reason) => format!(", bubblewrap configured but {reason}: Landlock is used"),
        },
    };
    match policy.mode {
        Mode::Off => "off".to_owned(),
        mode => format!("{}, {network}{backend}", mode.as_str()),
    }
}

/// `config check`'s lines about the sandbox.
pub fn summary_lines(config: &Config) -> Vec<String> {
    let support = Support::get();
    let mut lines = vec![format!("sandbox backend: {}", support.describe())];
    lines.extend(
        support
            .notes
            .iter()
            .map(|note| format!("sandbox note: {note}")),
    );
    for (who, policy) in policies(config) {
        let mut line = format!("sandbox ({who}): {}", describe(&policy));
        if let Some(reason) = policy.unavailable_on(support) {
            line.push_str(&match policy.when_unavailable {
                Unavailable::Run => {
                    format!(" — UNAVAILABLE here ({reason}): commands run unsandboxed")
                }
                Unavailable::Refuse => {
                    format!(" — UNAVAILABLE here ({reason}): commands are refused")
                }
            });
        } else if policy.mode != Mode::Off && !(policy.namespaces && support.user_namespaces) {
            line.push_str(" — without namespaces: a call's processes are found by a marker");
        }
        lines.push(line);
    }
    lines
}

/// `config check --json`'s `sandbox` value.
pub fn summary_json(config: &Config) -> Value {
    let support = Support::get();
    json!({
        "backend": support.describe(),
        "landlockAbi": support.landlock_abi,
        "seccomp": support.seccomp,
        "userNamespaces": support.user_namespaces,
        "readOnlyBinds": support.read_only_binds,
        "notes": support.notes,
        "policies": policies(config).iter().map(|(who, policy)| json!({
            "for": who,
            "mode": policy.mode.as_str(),
            "network": policy.network.describe(),
            "unavailable": policy.unavailable_on(support),
        })).collect::<Vec<_>>(),
    })
}

/// The warning a host gives at start-up when its default policy cannot be applied here.
pub(crate) fn unavailable_warning(config: &Config) -> Option<String> {
    let policy = config.sandbox_policy("");
    let reason = policy.unavailable_on(Support::kernel())?;
    Some(match policy.when_unavailable {
        Unavailable::Run => format!(
            "the sandbox cannot be applied here ({reason}); commands run unsandboxed and every \
             bash result says so"
        ),
        Unavailable::Refuse => format!(
            "the sandbox cannot be applied here ({reason}); commands are refused \
             (sandbox.whenUnavailable is \"refuse\")"
        ),
    })
}
