//! The configuration file's shape, as serde and schemars types: what each key holds, decoded
//! section by section (so every bad section is reported, not only the first), and the JSON
//! Schema `tackle config schema` prints.

use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use tackle_permission::ConfigValue;

/// tackle's configuration file: `~/.config/tackle/config.json`, `<root>/.tackle/config.json`,
/// or the `--config` file. JSON with comments and trailing commas; unknown keys are errors.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "tackle configuration")]
pub(crate) struct TackleFile {
    /// The JSON Schema this file follows, for editors: the output of `tackle config schema`.
    #[serde(rename = "$schema")]
    pub(crate) schema: Option<String>,
    /// Permission rules in OpenCode's format: a permission (or `*`) mapped to an action, or to
    /// an object of patterns mapped to actions. Key order is precedence: the last matching rule
    /// wins, and later files' rules outrank earlier files'.
    pub(crate) permission: Option<PermissionValue>,
    /// Agents by name: presets to adjust or custom agents to define.
    pub(crate) agents: Option<BTreeMap<String, AgentSection>>,
    /// MCP servers by name, whose tools are registered as `<server>_<tool>`.
    pub(crate) mcp: Option<BTreeMap<String, McpSection>>,
    /// The bound on what the model sees of one result.
    pub(crate) limits: Option<LimitsSection>,
    /// The `bash` tool's shell and timeouts.
    pub(crate) shell: Option<ShellSection>,
    /// Tool names (`*` globs) never registered or offered.
    pub(crate) disabled_tools: Option<Vec<String>>,
    /// OpenCode's form of `disabledTools`: `false` disables a tool, `true` undoes an earlier
    /// file's `false`.
    pub(crate) tools: Option<BTreeMap<String, bool>>,
    /// Tool sets per model glob (`PROVIDER/MODEL`, `*` allowed); the last matching entry wins
    /// per tool.
    pub(crate) models: Option<BTreeMap<String, ModelSection>>,
    /// Built-in tools that a custom tool of the same name replaces.
    pub(crate) overrides: Option<Vec<String>>,
    /// Language servers by name (OpenCode's `lsp` shape).
    pub(crate) lsp: Option<BTreeMap<String, LspSection>>,
    /// Formatters by name (OpenCode's `formatter` shape), or `false` for none.
    pub(crate) formatter: Option<FormatterSetting>,
    /// How long the file tools wait for language servers.
    pub(crate) diagnostics: Option<DiagnosticsSection>,
    /// Snapshots around calls that may change files, so they can be undone (default: on for
    /// `serve` and embedders, off for `tackle call`).
    pub(crate) snapshot: Option<bool>,
    /// The live search index grep and glob answer from in `serve` and embedders.
    pub(crate) index: Option<IndexSection>,
    /// Commands run around tool calls: `before` may rewrite or refuse a call, `after` observes.
    pub(crate) hooks: Option<HooksSection>,
    /// How `tackle serve` answers MCP clients.
    pub(crate) serve: Option<ServeSection>,
    /// The OS sandbox every command runs under.
    pub(crate) sandbox: Option<SandboxSection>,
    /// Spans and metrics of every call, sent to an OpenTelemetry collector (OTLP over HTTP).
    pub(crate) telemetry: Option<TelemetrySection>,
}

/// The keys of a tackle configuration file, in the order they are documented.
pub(crate) const TACKLE_KEYS: &[&str] = &[
    "$schema",
    "permission",
    "agents",
    "mcp",
    "limits",
    "shell",
    "disabledTools",
    "tools",
    "models",
    "overrides",
    "lsp",
    "formatter",
    "diagnostics",
    "snapshot",
    "index",
    "hooks",
    "serve",
    "sandbox",
    "telemetry",
];

/// A `permission` value, its object keys in document order.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(transparent)]
pub(crate) struct PermissionValue(#[serde(with = "config_value")] pub(crate) ConfigValue);

mod config_value {
    use serde::{Deserialize, Deserializer, Serializer};
    use tackle_permission::ConfigValue;

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ConfigValue, D::Error> {
        ConfigValue::deserialize(d)
    }

    pub(super) fn serialize<S: Serializer>(_: &ConfigValue, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl JsonSchema for PermissionValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Permission".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An action for every permission, or permissions mapped to an action \
                or to patterns mapped to actions.",
            "oneOf": [
                {"$ref": "#/$defs/Action"},
                {
                    "type": "object",
                    "additionalProperties": {
                        "oneOf": [
                            {"$ref": "#/$defs/Action"},
                            {"type": "object", "additionalProperties": {"$ref": "#/$defs/Action"}}
                        ]
                    }
                }
            ]
        })
    }
}

/// One agent's settings.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(crate) struct AgentSection {
    /// What it is for, shown when offering subagents.
    pub(crate) description: Option<NonEmpty>,
    /// How it may be used.
    pub(crate) mode: Option<AgentModeName>,
    /// Its own permission rules, on top of the file's.
    pub(crate) permission: Option<PermissionValue>,
    /// Its own sandbox settings, on top of the file's `sandbox` (the `plan` agent's mode is
    /// `read-only` unless set here).
    pub(crate) sandbox: Option<SandboxSection>,
}

/// The OS sandbox of commands (bash and its jobs, custom tools, hooks, formatters; MCP and
/// language servers when turned on here).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "an object")]
pub(crate) struct SandboxSection {
    /// `workspace-write` (the default: writes to the project, the session's temp directory and
    /// the tool caches), `read-only`, or `off`.
    pub(crate) mode: Option<SandboxModeName>,
    /// `on` (the default), `off`, or `{"allow": [...], "deny": [...]}`: only these hosts, through
    /// tackle's proxy (`example.com`, `*.example.com`, `localhost:8080`; deny wins).
    pub(crate) network: Option<NetworkSetting>,
    /// More places commands may write (`~` is the home directory).
    pub(crate) writable_roots: Option<Strings>,
    /// The tool caches commands may write; replaces the default list (`~/.cargo/registry`,
    /// `~/.npm`, `~/.cache`, …).
    pub(crate) caches: Option<Strings>,
    /// Places commands may not read, such as `~/.ssh`.
    pub(crate) deny_read: Option<Strings>,
    /// When this machine cannot apply the sandbox: `run` unsandboxed and say so in every result
    /// (the default), or `refuse` to run commands.
    pub(crate) when_unavailable: Option<WhenUnavailable>,
    /// Run each command in its own user, PID and mount namespaces where the kernel allows it, so
    /// nothing it starts outlives the call (default `true`).
    pub(crate) namespaces: Option<bool>,
    /// Sandbox MCP servers started as child processes too (default `false`: they often need
    /// their caches in the home directory).
    pub(crate) mcp_servers: Option<bool>,
    /// Sandbox language servers too (default `false`).
    pub(crate) language_servers: Option<bool>,
    /// What confines shell commands: `landlock` (the default: Landlock and seccomp applied by
    /// tackle) or `bubblewrap` (the `bwrap` program, when installed; else Landlock, and the
    /// result says so).
    pub(crate) backend: Option<BackendName>,
    /// Run command hooks in the sandbox (default `true`; tackle's data directory is writable
    /// for them, so a hook can call `tackle`). `false` runs them unsandboxed.
    pub(crate) hooks: Option<bool>,
}

impl SandboxSection {
    /// This section with `later`'s keys on top.
    pub(crate) fn merged(self, later: SandboxSection) -> SandboxSection {
        SandboxSection {
            mode: later.mode.or(self.mode),
            network: later.network.or(self.network),
            writable_roots: later.writable_roots.or(self.writable_roots),
            caches: later.caches.or(self.caches),
            deny_read: later.deny_read.or(self.deny_read),
            when_unavailable: later.when_unavailable.or(self.when_unavailable),
            namespaces: later.namespaces.or(self.namespaces),
            mcp_servers: later.mcp_servers.or(self.mcp_servers),
            language_servers: later.language_servers.or(self.language_servers),
            hooks: later.hooks.or(self.hooks),
            backend: later.backend.or(self.backend),
        }
    }

    /// The keys of this section that loosen the sandbox (a project's need trust).
    pub(crate) fn loosening_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if matches!(
            self.mode,
            Some(SandboxModeName::Off | SandboxModeName::WorkspaceWrite)
        ) {
            keys.push("mode");
        }
        if matches!(
            self.network,
            Some(NetworkSetting::Switch(NetworkSwitch::On) | NetworkSetting::Lists(_))
        ) {
            keys.push("network");
        }
        if self.writable_roots.is_some() {
            keys.push("writableRoots");
        }
        if self.caches.is_some() {
            keys.push("caches");
        }
        if self.deny_read.is_some() {
            keys.push("denyRead");
        }
        if self.when_unavailable == Some(WhenUnavailable::Run) {
            keys.push("whenUnavailable");
        }
        if self.namespaces == Some(false) {
            keys.push("namespaces");
        }
        if self.mcp_servers == Some(false) {
            keys.push("mcpServers");
        }
        if self.language_servers == Some(false) {
            keys.push("languageServers");
        }
        if self.hooks == Some(false) {
            keys.push("hooks");
        }
        keys
    }

    /// The policy this section gives, with defaults for what it leaves out.
    pub(crate) fn policy(&self) -> tackle_sandbox::Policy {
        use tackle_sandbox::{Mode, Network, Policy, Unavailable};
        let defaults = Policy::default();
        let paths = |list: &Option<Strings>| -> Option<Vec<std::path::PathBuf>> {
            list.as_ref()
                .map(|l| l.0.iter().map(std::path::PathBuf::from).collect())
        };
        Policy {
            mode: match self.mode {
                Some(SandboxModeName::ReadOnly) => Mode::ReadOnly,
                Some(SandboxModeName::Off) => Mode::Off,
                Some(SandboxModeName::WorkspaceWrite) | None => Mode::WorkspaceWrite,
            },
            network: match &self.network {
                None | Some(NetworkSetting::Switch(NetworkSwitch::On)) => Network::On,
                Some(NetworkSetting::Switch(NetworkSwitch::Off)) => Network::Off,
                Some(NetworkSetting::Lists(lists)) => Network::Allow {
                    allow: lists.allow.0.clone(),
                    deny: lists.deny.0.clone(),
                },
            },
            writable_roots: paths(&self.writable_roots).unwrap_or_default(),
            caches: paths(&self.caches).unwrap_or(defaults.caches),
            deny_read: paths(&self.deny_read).unwrap_or_default(),
            when_unavailable: match self.when_unavailable {
                Some(WhenUnavailable::Refuse) => Unavailable::Refuse,
                _ => Unavailable::Run,
            },
            namespaces: self.namespaces.unwrap_or(true),
            backend: match self.backend {
                Some(BackendName::Bubblewrap) => tackle_sandbox::Backend::Bubblewrap,
                _ => tackle_sandbox::Backend::Landlock,
            },
        }
    }
}

/// A sandbox backend.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BackendName {
    /// Landlock and seccomp, applied by tackle.
    Landlock,
    /// The `bwrap` program.
    Bubblewrap,
}

/// A sandbox mode.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SandboxModeName {
    /// Writes only to the session's temp directory.
    ReadOnly,
    /// Writes to the project, the session's temp directory and the tool caches.
    WorkspaceWrite,
    /// No sandbox.
    Off,
}

/// What to do when the sandbox cannot be applied.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WhenUnavailable {
    /// Run unsandboxed and say so.
    Run,
    /// Refuse to run commands.
    Refuse,
}

/// The sandbox's network.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(
    untagged,
    expecting = "\"on\", \"off\" or an object with `allow` (and `deny`)"
)]
pub(crate) enum NetworkSetting {
    /// `on` or `off`.
    Switch(NetworkSwitch),
    /// Only these hosts, through tackle's proxy.
    Lists(NetworkLists),
}

/// `on` or `off`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum NetworkSwitch {
    /// Everything.
    On,
    /// Unix sockets only.
    Off,
}

/// The hosts allowed and denied.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, expecting = "an object with `allow` and `deny`")]
pub(crate) struct NetworkLists {
    /// Hosts allowed: `example.com`, `*.example.com` (subdomains), `host:PORT`.
    pub(crate) allow: Strings,
    /// Hosts refused even when allowed.
    #[serde(default)]
    pub(crate) deny: Strings,
}

/// OpenCode's agent settings: the keys tackle reads; the rest are OpenCode's.
#[derive(Debug, Deserialize)]
#[serde(expecting = "an object")]
pub(crate) struct OpenCodeAgent {
    pub(crate) description: Option<NonEmpty>,
    pub(crate) mode: Option<AgentModeName>,
    pub(crate) permission: Option<PermissionValue>,
}

/// An agent's mode.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AgentModeName {
    /// Chosen by the user.
    Primary,
    /// Started by another agent through `task`.
    Subagent,
    /// Used only by tackle itself.
    Hidden,
    /// OpenCode's "both": a primary agent here.
    All,
}

/// An MCP server: a program speaking MCP on stdin and stdout, or a streamable HTTP endpoint.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an object with `command` or `url`")]
pub(crate) struct McpSection {
    /// The program to start (found on `PATH`).
    pub(crate) command: Option<NonEmpty>,
    /// Its arguments.
    pub(crate) args: Option<Strings>,
    /// Extra environment variables.
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// The endpoint, `http://` or `https://`.
    pub(crate) url: Option<NonEmpty>,
    /// Headers sent with every request (`Authorization: Bearer …` included).
    pub(crate) headers: Option<BTreeMap<String, String>>,
}

/// OpenCode's MCP server shape.
#[derive(Debug, Deserialize)]
#[serde(expecting = "an object with `type` \"local\" or \"remote\"")]
pub(crate) struct OpenCodeMcp {
    #[serde(rename = "type")]
    pub(crate) kind: Option<NonEmpty>,
    pub(crate) command: Option<Strings>,
    pub(crate) environment: Option<BTreeMap<String, String>>,
    pub(crate) url: Option<NonEmpty>,
    pub(crate) headers: Option<BTreeMap<String, String>>,
    pub(crate) enabled: Option<bool>,
}

/// The bound on what the model sees of one result.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "an object")]
pub(crate) struct LimitsSection {
    /// The most lines.
    pub(crate) max_lines: Option<Positive>,
    /// The most bytes.
    pub(crate) max_bytes: Option<Positive>,
    /// Which part to keep: `head`, `tail` or `head_tail`.
    pub(crate) direction: Option<DirectionName>,
}

/// Which part of a long result is kept.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DirectionName {
    /// The start.
    Head,
    /// The end.
    Tail,
    /// The start and the end.
    HeadTail,
}

/// The `bash` tool's shell and timeouts.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "an object")]
pub(crate) struct ShellSection {
    /// The shell (a POSIX shell: not fish or nu).
    pub(crate) path: Option<NonEmpty>,
    /// The timeout when a call gives none, in milliseconds.
    pub(crate) default_timeout_ms: Option<Positive>,
    /// The largest timeout a call may ask for, in milliseconds.
    pub(crate) max_timeout_ms: Option<Positive>,
    /// The most background jobs one session may run at once (default 8).
    pub(crate) max_jobs: Option<Positive>,
}

/// One `models` entry.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(crate) struct ModelSection {
    /// Tool names, each `true` (offer) or `false` (hide).
    pub(crate) tools: Option<OrderedBools>,
}

/// A language server (OpenCode's shape).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(expecting = "an object")]
pub(crate) struct LspSection {
    /// The command and its arguments.
    pub(crate) command: Option<CommandLine>,
    /// File extensions it serves, such as `.py`.
    pub(crate) extensions: Option<Strings>,
    /// Extra environment variables.
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// `initializationOptions` sent to the server.
    pub(crate) initialization: Option<serde_json::Value>,
    /// `true` turns a server (built in or configured earlier) off.
    pub(crate) disabled: Option<bool>,
}

/// How the file tools wait for language servers.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "an object")]
pub(crate) struct DiagnosticsSection {
    /// How long an edit waits for a server's diagnostics, in milliseconds (default 2000).
    pub(crate) wait_ms: Option<Positive>,
    /// How long a server may take to start, in milliseconds (default 10000).
    pub(crate) start_timeout_ms: Option<Positive>,
}

/// The live search index of `serve` and embedders.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "an object")]
pub(crate) struct IndexSection {
    /// Keep an index (default `true`); `false` makes grep and glob scan on every call.
    pub(crate) enabled: Option<bool>,
    /// The most memory the index may hold, in MiB (default 1024); a Location whose index would
    /// be larger is scanned.
    pub(crate) max_memory_mb: Option<Positive>,
}

/// How `tackle serve` answers MCP clients.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "an object")]
pub(crate) struct ServeSection {
    /// Send each result's structured value as `structuredContent`, and declare each tool's
    /// output as `outputSchema` (default `false`: the model reads tackle's text, even in hosts
    /// that prefer `structuredContent`).
    pub(crate) structured_content: Option<bool>,
}

/// Telemetry through OpenTelemetry. The standard `OTEL_*` environment variables outrank these
/// keys; with no endpoint in either, nothing is sent.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "an object")]
pub(crate) struct TelemetrySection {
    /// The collector's OTLP/HTTP base URL, such as `http://localhost:4318`: spans go to
    /// `/v1/traces` and metrics to `/v1/metrics` under it (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub(crate) endpoint: Option<NonEmpty>,
    /// The OTLP encoding: `http/protobuf` (default) or `http/json`
    /// (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub(crate) protocol: Option<OtlpProtocol>,
    /// The `service.name` of the spans (default `tackle`; `OTEL_SERVICE_NAME`).
    pub(crate) service_name: Option<NonEmpty>,
    /// More resource attributes, such as `{"deployment.environment": "ci"}`
    /// (`OTEL_RESOURCE_ATTRIBUTES`).
    pub(crate) resource_attributes: Option<BTreeMap<String, String>>,
    /// Headers sent with every export, such as a backend's API key
    /// (`OTEL_EXPORTER_OTLP_HEADERS`).
    pub(crate) headers: Option<BTreeMap<String, String>>,
    /// `true` sends nothing, whatever else is set (`OTEL_SDK_DISABLED`).
    pub(crate) disabled: Option<bool>,
    /// Put each call's arguments and result on its span (default `false`: they may hold
    /// secrets).
    pub(crate) content: Option<bool>,
}

impl TelemetrySection {
    /// This section with `later`'s keys on top, key by key.
    pub(crate) fn merged(self, later: TelemetrySection) -> TelemetrySection {
        TelemetrySection {
            endpoint: later.endpoint.or(self.endpoint),
            protocol: later.protocol.or(self.protocol),
            service_name: later.service_name.or(self.service_name),
            resource_attributes: later.resource_attributes.or(self.resource_attributes),
            headers: later.headers.or(self.headers),
            disabled: later.disabled.or(self.disabled),
            content: later.content.or(self.content),
        }
    }
}

/// An OTLP encoding over HTTP.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub(crate) enum OtlpProtocol {
    /// Protocol buffers, OTLP's default.
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// JSON.
    #[serde(rename = "http/json")]
    HttpJson,
}

/// Formatters by name, or `false` for none.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(untagged, expecting = "`false` or an object of formatters")]
pub(crate) enum FormatterSetting {
    /// `false`: no formatter runs.
    Off(bool),
    /// Formatters by name.
    Named(BTreeMap<String, FormatterSection>),
}

/// A formatter (OpenCode's shape).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(expecting = "an object")]
pub(crate) struct FormatterSection {
    /// The command and its arguments; `$FILE` stands for the changed file.
    pub(crate) command: Option<CommandLine>,
    /// File extensions it formats.
    pub(crate) extensions: Option<Strings>,
    /// Extra environment variables.
    pub(crate) environment: Option<BTreeMap<String, String>>,
    /// `true` turns it off.
    pub(crate) disabled: Option<bool>,
}

/// Commands run around tool calls.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, expecting = "an object")]
pub(crate) struct HooksSection {
    /// Run before a call; may rewrite its arguments or refuse it.
    pub(crate) before: Option<Vec<HookSection>>,
    /// Run after a call settled; what it prints is noted for the host.
    pub(crate) after: Option<Vec<HookSection>>,
}

/// One command hook.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", expecting = "an object")]
pub(crate) struct HookSection {
    /// The tools it runs for (`*` globs); all when absent.
    pub(crate) tools: Option<Strings>,
    /// The command and its arguments. It reads the call as JSON on stdin.
    pub(crate) command: CommandLine,
    /// How long it may run, in milliseconds (default 10000).
    pub(crate) timeout_ms: Option<Positive>,
}

/// A string that is not empty.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq, Eq)]
#[schemars(transparent)]
pub(crate) struct NonEmpty(#[schemars(length(min = 1))] pub(crate) String);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NonEmpty;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-empty string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<NonEmpty, E> {
                if s.is_empty() {
                    Err(E::invalid_value(de::Unexpected::Str(s), &self))
                } else {
                    Ok(NonEmpty(s.to_owned()))
                }
            }
        }
        d.deserialize_str(V)
    }
}

/// A positive integer.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema, PartialEq, Eq)]
#[schemars(transparent)]
pub(crate) struct Positive(#[schemars(range(min = 1))] pub(crate) u64);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Positive;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a positive integer")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Positive, E> {
                if n == 0 {
                    Err(E::invalid_value(de::Unexpected::Unsigned(n), &self))
                } else {
                    Ok(Positive(n))
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Positive, E> {
                Err(E::invalid_value(de::Unexpected::Signed(n), &self))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Positive, E> {
                Err(E::invalid_value(de::Unexpected::Float(n), &self))
            }
        }
        d.deserialize_u64(V)
    }
}

/// An array of non-empty strings.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq, Eq, Default)]
#[schemars(transparent)]
pub(crate) struct Strings(#[schemars(with = "Vec<NonEmpty>")] pub(crate) Vec<String>);

/// A command and its arguments: a non-empty array of non-empty strings.
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq, Eq, Default)]
#[schemars(transparent)]
pub(crate) struct CommandLine(
    #[schemars(with = "Vec<NonEmpty>", length(min = 1))] pub(crate) Vec<String>,
);

impl<'de> Deserialize<'de> for CommandLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Strings(words) = Strings::deserialize(d)?;
        if words.is_empty() {
            return Err(de::Error::custom(
                "an empty command; give the program and its arguments, such as [\"./check.sh\"]",
            ));
        }
        Ok(CommandLine(words))
    }
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Strings;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of strings")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strings, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<NonEmpty>()? {
                    out.push(item.0);
                }
                Ok(Strings(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// An object of booleans, in document order (the last matching choice wins).
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq, Eq, Default)]
#[schemars(transparent)]
pub(crate) struct OrderedBools(
    #[schemars(with = "BTreeMap<String, bool>")] pub(crate) Vec<(String, bool)>,
);

impl<'de> Deserialize<'de> for OrderedBools {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedBools;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedBools, A::Error> {
                let mut out: Vec<(String, bool)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, bool>()? {
                    out.retain(|(k, _)| *k != key);
                    out.push((key, value));
                }
                Ok(OrderedBools(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The JSON Schema of tackle's configuration file.
pub fn schema() -> serde_json::Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut root = generator.root_schema_for::<TackleFile>();
    // Actions shared by the permission schema.
    let defs = root
        .ensure_object()
        .entry("$defs")
        .or_insert_with(|| serde_json::json!({}));
    if let Some(defs) = defs.as_object_mut() {
        defs.insert(
            "Action".to_owned(),
            serde_json::json!({"type": "string", "enum": ["allow", "ask", "deny"]}),
        );
    }
    root.to_value()
}
