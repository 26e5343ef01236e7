//! Where telemetry goes, resolved once from the standard `OTEL_*` environment variables and the
//! configuration's `telemetry` section (the environment outranks the file, key by key).

use std::collections::BTreeMap;

use crate::config::file::{OtlpProtocol, TelemetrySection};

/// The service name spans carry when neither `OTEL_SERVICE_NAME` nor `serviceName` is set.
pub(crate) const DEFAULT_SERVICE_NAME: &str = "tackle";

/// Resolved telemetry settings: present only when something is to be sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TelemetrySettings {
    /// Where spans go (`…/v1/traces`).
    pub(crate) traces_endpoint: String,
    /// Where metrics go (`…/v1/metrics`).
    pub(crate) metrics_endpoint: String,
    /// The OTLP encoding.
    pub(crate) protocol: OtlpProtocol,
    /// `service.name`.
    pub(crate) service_name: String,
    /// Further resource attributes, the environment's over the file's.
    pub(crate) resource: BTreeMap<String, String>,
    /// Headers from the file; `OTEL_EXPORTER_OTLP_HEADERS` is added by the exporter.
    pub(crate) headers: BTreeMap<String, String>,
    /// Whether arguments and results go on the spans.
    pub(crate) content: bool,
}

/// Why the telemetry settings could not be used; telemetry stays off and the host says so.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SettingsError {
    /// A protocol tackle does not speak.
    #[error(
        "telemetry is off: {setting} is `{value}`, and tackle exports over HTTP only; set it to \
         `http/protobuf` or `http/json`"
    )]
    Protocol {
        /// The variable or key that named it.
        setting: &'static str,
        /// The value given.
        value: String,
    },
    /// An endpoint that is not an http(s) URL.
    #[error(
        "telemetry is off: {setting} is `{value}`, which is not an http:// or https:// URL; give \
         the collector's OTLP/HTTP address, such as `http://localhost:4318`"
    )]
    Endpoint {
        /// The variable or key that named it.
        setting: &'static str,
        /// The value given.
        value: String,
    },
}

impl TelemetrySettings {
    /// The settings `section` and the environment `env` give, or `None` when telemetry is
    /// off: disabled by either, or no endpoint in either.
    pub(crate) fn resolve(
        section: Option<&TelemetrySection>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, SettingsError> {
        let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        let file = section.cloned().unwrap_or_default();
        let disabled = match env("OTEL_SDK_DISABLED") {
            Some(value) => value.trim().eq_ignore_ascii_case("true"),
            None => file.disabled.unwrap_or(false),
        };
        if disabled {
            return Ok(None);
        }
        let base = match env("OTEL_EXPORTER_OTLP_ENDPOINT") {
            Some(value) => Some(("OTEL_EXPORTER_OTLP_ENDPOINT", value)),
            None => file.endpoint.map(|e| ("telemetry.endpoint", e.0)),
        };
        let traces = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let metrics = env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
        if base.is_none() && traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        for (setting, value) in [
            base.as_ref().map(|(setting, value)| (*setting, value)),
            traces
                .as_ref()
                .map(|value| ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value)),
            metrics
                .as_ref()
                .map(|value| ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", value)),
        ]
        .into_iter()
        .flatten()
        {
            if !(value.starts_with("http://") || value.starts_with("https://")) {
                return Err(SettingsError::Endpoint {
                    setting,
                    value: value.clone(),
                });
            }
        }
        // A signal's own endpoint is used as given; the base gets the signal's path.
        let under = |path: &str| {
            let base = base.as_ref().map_or("http://localhost:4318", |(_, v)| v);
            format!("{}/{path}", base.trim_end_matches('/'))
        };
        let protocol = match env("OTEL_EXPORTER_OTLP_PROTOCOL") {
            Some(value) => match value.trim() {
                "http/protobuf" => OtlpProtocol::HttpProtobuf,
                "http/json" => OtlpProtocol::HttpJson,
                _ => {
                    return Err(SettingsError::Protocol {
                        setting: "OTEL_EXPORTER_OTLP_PROTOCOL",
                        value,
                    });
                }
            },
            None => file.protocol.unwrap_or(OtlpProtocol::HttpProtobuf),
        };
        let mut resource = file.resource_attributes.unwrap_or_default();
        if let Some(list) = env("OTEL_RESOURCE_ATTRIBUTES") {
            resource.extend(parse_resource_attributes(&list));
        }
        // The service name outranks a `service.name` among the attributes, as the spec says.
        let named = resource.remove("service.name");
        let service_name = env("OTEL_SERVICE_NAME")
            .or(file.service_name.map(|name| name.0))
            .or(named)
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        Ok(Some(Self {
            traces_endpoint: traces.unwrap_or_else(|| under("v1/traces")),
            metrics_endpoint: metrics.unwrap_or_else(|| under("v1/metrics")),
            protocol,
            service_name,
            resource,
            headers: file.headers.unwrap_or_default(),
            content: file.content.unwrap_or(false),
        }))
    }
}

/// `OTEL_RESOURCE_ATTRIBUTES`: `key=value` pairs separated by commas, values percent-encoded.
/// A pair without `=` or with an empty key is skipped, as the specification allows.
fn parse_resource_attributes(list: &str) -> Vec<(String, String)> {
    list.split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| (key.to_owned(), percent_decode(value.trim())))
        })
        .collect()
}

/// Decodes `%XX` escapes; a malformed escape is kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escape {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::NonEmpty;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn nothing_set_means_telemetry_off() {
        assert_eq!(TelemetrySettings::resolve(None, env(&[])), Ok(None));
        let named_only = [("OTEL_SERVICE_NAME", "agents")];
        assert_eq!(TelemetrySettings::resolve(None, env(&named_only)), Ok(None));
    }

    #[test]
    fn the_environment_outranks_the_file_key_by_key() {
        let section = TelemetrySection {
            endpoint: Some(NonEmpty("http://file:4318".into())),
            service_name: Some(NonEmpty("from-file".into())),
            protocol: Some(OtlpProtocol::HttpJson),
            resource_attributes: Some(BTreeMap::from([
                ("team".to_owned(), "file".to_owned()),
                ("region".to_owned(), "eu".to_owned()),
            ])),
            ..TelemetrySection::default()
        };
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/"),
            ("OTEL_RESOURCE_ATTRIBUTES", "team=env%20ops,bad,=x"),
        ];
        let settings = TelemetrySettings::resolve(Some(&section), env(&vars))
            .unwrap()
            .unwrap();
        assert_eq!(settings.traces_endpoint, "http://127.0.0.1:9/v1/traces");
        assert_eq!(settings.metrics_endpoint, "http://127.0.0.1:9/v1/metrics");
        assert_eq!(settings.protocol, OtlpProtocol::HttpJson);
        assert_eq!(settings.service_name, "from-file");
        assert_eq!(settings.resource["team"], "env ops");
        assert_eq!(settings.resource["region"], "eu");
        assert_eq!(settings.resource.len(), 2);
        assert!(!settings.content);
    }

    #[test]
    fn disabled_wins_over_an_endpoint() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ];
        assert_eq!(TelemetrySettings::resolve(None, env(&vars)), Ok(None));
        let section = TelemetrySection {
            disabled: Some(true),
            ..TelemetrySection::default()
        };
        let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")];
        assert_eq!(
            TelemetrySettings::resolve(Some(&section), env(&vars)),
            Ok(None)
        );
    }

    #[test]
    fn grpc_and_bad_endpoints_are_refused_with_the_fix() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        let error = TelemetrySettings::resolve(None, env(&vars)).unwrap_err();
        assert!(
            error.to_string().contains("`http/protobuf` or `http/json`"),
            "{error}"
        );
        let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318")];
        let error = TelemetrySettings::resolve(None, env(&vars)).unwrap_err();
        assert!(
            error.to_string().contains("http://localhost:4318"),
            "{error}"
        );
    }

    #[test]
    fn a_signal_endpoint_is_used_as_given() {
        let vars = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom")];
        let settings = TelemetrySettings::resolve(None, env(&vars))
            .unwrap()
            .unwrap();
        assert_eq!(settings.traces_endpoint, "http://t:1/custom");
        assert_eq!(
            settings.metrics_endpoint,
            "http://localhost:4318/v1/metrics"
        );
    }
}
