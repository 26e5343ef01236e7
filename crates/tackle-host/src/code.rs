//! Code intelligence from the configuration: the language servers, the formatters, and the
//! diagnostics the file tools report after a change.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tackle_diagnostics::Diagnoser;
use tackle_diagnostics::format::{FormatterSpec, Formatters, builtin_formatters};
use tackle_lsp::{ConfiguredServer, LspManager, ManagerOptions, ServerStatus};

use crate::config::Config;

/// How long a formatter may run.
const FORMAT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a host runs after changes, and the servers the `lsp` tool asks.
pub(crate) struct Code {
    /// The language servers, when any is configured and found.
    pub(crate) lsp: Option<Arc<LspManager>>,
    /// The file tools' change review.
    pub(crate) review: Arc<Diagnoser>,
}

/// The configuration's `lsp` entries in the client's terms.
fn configured_servers(config: &Config) -> Vec<ConfiguredServer> {
    config
        .lsp_servers()
        .into_iter()
        .map(|server| ConfiguredServer {
            name: server.name,
            command: (!server.command.is_empty()).then_some(server.command),
            extensions: (!server.extensions.is_empty()).then_some(server.extensions),
            env: server.env,
            initialization: server.initialization,
            disabled: server.disabled,
        })
        .collect()
}

/// Every language server tackle knows or was configured with, and whether it runs.
pub fn server_statuses(config: &Config, path_var: &OsStr) -> Vec<ServerStatus> {
    tackle_lsp::server_statuses(&configured_servers(config), path_var)
}

/// A formatter as `tackle config check` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatterStatus {
    /// Its definition.
    pub spec: FormatterSpec,
    /// Why it does not run, when it does not.
    pub inactive_reason: Option<String>,
}

/// The formatters the configuration names, each with whether it runs. Built-in formatters run
/// only when named; `formatter: false` turns every one off.
pub fn formatter_statuses(config: &Config, path_var: &OsStr) -> Vec<FormatterStatus> {
    let Some(configured) = config.formatters() else {
        return Vec::new();
    };
    let builtins = builtin_formatters();
    configured
        .into_iter()
        .map(|entry| {
            let builtin = builtins.iter().find(|b| b.name == entry.name);
            let spec = FormatterSpec {
                name: entry.name.clone(),
                command: if entry.command.is_empty() {
                    builtin.map(|b| b.command.clone()).unwrap_or_default()
                } else {
                    entry.command.clone()
                },
                extensions: if entry.extensions.is_empty() {
                    builtin.map(|b| b.extensions.clone()).unwrap_or_default()
                } else {
                    entry.extensions.clone()
                },
                environment: entry.environment.clone(),
            };
            let inactive_reason = if entry.disabled {
                Some("disabled by the configuration".to_owned())
            } else if spec.command.is_empty() {
                Some("no command is configured".to_owned())
            } else if spec.extensions.is_empty() {
                Some("no extensions are configured".to_owned())
            } else if tackle_lsp::find_program(&spec.command[0], path_var).is_none() {
                Some(format!("`{}` is not on PATH", spec.command[0]))
            } else {
                None
            };
            FormatterStatus {
                spec,
                inactive_reason,
            }
        })
        .collect()
}

/// Builds the code intelligence of the Location at `root` (its real path).
pub(crate) fn build(
    root: PathBuf,
    config: &Config,
    warn: tackle_lsp::Warn,
    sandbox: tackle_sandbox::Confine,
) -> Code {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let servers = tackle_lsp::active_servers(&configured_servers(config), &path_var);
    let lsp = (!servers.is_empty()).then(|| {
        let manager = LspManager::new(
            root.clone(),
            servers,
            ManagerOptions {
                start_timeout: config.lsp_start_timeout(),
                diagnostics_wait: config.diagnostics_wait(),
                ..ManagerOptions::default()
            },
        );
        manager.set_warn(warn.clone());
        if config.sandbox_language_servers() {
            manager.set_sandbox(sandbox.clone());
        }
        Arc::new(manager)
    });
    let formatters: Vec<FormatterSpec> = formatter_statuses(config, &path_var)
        .into_iter()
        .filter(|status| status.inactive_reason.is_none())
        .map(|status| status.spec)
        .collect();
    let formatters = (!formatters.is_empty())
        .then(|| Formatters::new(formatters, FORMAT_TIMEOUT).with_sandbox(sandbox));
    Code {
        review: Arc::new(Diagnoser::new(root, lsp.clone(), formatters).with_warn(warn)),
        lsp,
    }
}

/// What `tackle config check --json` says about the language servers: each one known or
/// configured, whether it was found, and whether it runs.
pub fn servers_json(config: &Config, path_var: &OsStr) -> serde_json::Value {
    let statuses = server_statuses(config, path_var);
    serde_json::Value::Array(
        statuses
            .iter()
            .map(|status| {
                serde_json::json!({
                    "name": status.config.name,
                    "origin": match status.origin {
                        tackle_lsp::Origin::Builtin => "builtin",
                        tackle_lsp::Origin::Configured => "configured",
                        tackle_lsp::Origin::Custom => "custom",
                    },
                    "command": status.config.command,
                    "extensions": status.config.extensions,
                    "disabled": status.disabled,
                    "found": status.found.as_ref().map(|p| p.display().to_string()),
                    "active": status.active(),
                    "reason": status.inactive_reason,
                })
            })
            .collect(),
    )
}

/// What `tackle config check --json` says about the formatters.
pub fn formatters_json(config: &Config, path_var: &OsStr) -> serde_json::Value {
    serde_json::Value::Array(
        formatter_statuses(config, path_var)
            .iter()
            .map(|status| {
                serde_json::json!({
                    "name": status.spec.name,
                    "command": status.spec.command,
                    "extensions": status.spec.extensions,
                    "active": status.inactive_reason.is_none(),
                    "reason": status.inactive_reason,
                })
            })
            .collect(),
    )
}

/// One line per kind for `tackle config check`: which servers and formatters run, and which
/// configured ones do not and why.
pub fn code_summary(config: &Config, path_var: &OsStr) -> Vec<String> {
    let statuses = server_statuses(config, path_var);
    let running: Vec<&str> = statuses
        .iter()
        .filter(|s| s.active())
        .map(|s| s.config.name.as_str())
        .collect();
    let mut lines = vec![if running.is_empty() {
        "language servers: none found (the file tools report syntax errors only)".to_owned()
    } else {
        format!("language servers: {}", running.join(", "))
    }];
    for status in statuses
        .iter()
        .filter(|s| !s.active() && s.origin != tackle_lsp::Origin::Builtin)
    {
        lines.push(format!(
            "  {} does not run: {}",
            status.config.name,
            status.inactive_reason.as_deref().unwrap_or("")
        ));
    }
    let formatters = formatter_statuses(config, path_var);
    let active: Vec<&str> = formatters
        .iter()
        .filter(|f| f.inactive_reason.is_none())
        .map(|f| f.spec.name.as_str())
        .collect();
    lines.push(if active.is_empty() {
        "formatters: none".to_owned()
    } else {
        format!("formatters: {}", active.join(", "))
    });
    for status in formatters.iter().filter(|f| f.inactive_reason.is_some()) {
        lines.push(format!(
            "  {} does not run: {}",
            status.spec.name,
            status.inactive_reason.as_deref().unwrap_or("")
        ));
    }
    lines
}
