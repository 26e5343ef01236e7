//! Telemetry through OpenTelemetry: a span per settlement and call metrics, exported over
//! OTLP/HTTP to the collector the `OTEL_*` variables or the `telemetry` section name.
//!
//! Off unless an endpoint is set: then nothing here is built and no exporter thread runs. On,
//! a host builds one [`Telemetry`]: a tracer and a meter whose exporters run on threads of
//! their own (the SDK's batch span processor and periodic metric reader) behind a bounded
//! queue, so a call only hands its span over and never waits on the collector.
//!
//! The span follows the OpenTelemetry GenAI semantic conventions v0.1.0 (the
//! `semantic-conventions-genai` release that followed semantic conventions v1.41.0): the
//! `execute_tool` span and the `gen_ai.execute_tool.duration` metric. See `layer.rs`.

mod export;
mod layer;
pub(crate) mod settings;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider};
use opentelemetry::trace::TracerProvider;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracer, SdkTracerProvider};
use tackle_registry::Layer;

use crate::config::Model;
use crate::config::file::OtlpProtocol;
use export::{CollectorHealth, ReportingMetrics, ReportingSpans};
pub(crate) use settings::TelemetrySettings;

/// The schema of the semantic conventions the spans and metrics follow.
const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";

/// How long a host waits, when it persists or is dropped, for what is queued to reach the
/// collector. A collector that is down is seen at once; one that hangs costs this much at exit.
pub(crate) const FLUSH_WITHIN: Duration = Duration::from_secs(1);

/// The bucket boundaries the GenAI conventions advise for durations, in seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// Why telemetry could not be started; the host runs without it and says so.
#[derive(Debug, thiserror::Error)]
#[error("telemetry is off: its exporter could not be built: {0}")]
pub(crate) struct StartError(#[from] opentelemetry_otlp::ExporterBuildError);

/// A host's telemetry: where spans and metrics go, and the instruments calls record.
pub(crate) struct Telemetry {
    tracer: SdkTracer,
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
    duration: Histogram<f64>,
    calls: Counter<u64>,
    content: bool,
}

impl Telemetry {
    /// Builds the exporters and starts their threads.
    pub(crate) fn start(settings: &TelemetrySettings) -> Result<Arc<Self>, StartError> {
        let protocol = match settings.protocol {
            OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
            OtlpProtocol::HttpJson => Protocol::HttpJson,
        };
        let headers: HashMap<String, String> = settings.headers.clone().into_iter().collect();
        // The exporters' reqwest is built without a TLS provider of its own (as tackle's other
        // clients): ring is installed for the process unless one already is.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let health = CollectorHealth::new(&settings.traces_endpoint);
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(&settings.traces_endpoint)
            .with_protocol(protocol)
            .with_headers(headers.clone())
            .build()?;
        let metric_exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_endpoint(&settings.metrics_endpoint)
            .with_protocol(protocol)
            .with_headers(headers)
            .with_temporality(Temporality::Cumulative)
            .build()?;
        let resource = Resource::builder_empty()
            .with_attributes(
                settings
                    .resource
                    .iter()
                    .map(|(key, value)| KeyValue::new(key.clone(), value.clone())),
            )
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .with_service_name(settings.service_name.clone())
            .build();
        // The SDK's batch processor: its own thread, a bounded queue (2,048 spans unless
        // OTEL_BSP_MAX_QUEUE_SIZE says otherwise), spans past it dropped, never waited for.
        let processor = BatchSpanProcessor::builder(ReportingSpans {
            inner: spans,
            health: health.clone(),
        })
        .build();
        let traces = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.clone())
            .build();
        let reader = PeriodicReader::builder(ReportingMetrics {
            inner: metric_exporter,
            health,
        })
        .build();
        let metrics = SdkMeterProvider::builder()
            .with_reader(reader)
            .with_resource(resource)
            .build();
        let scope = InstrumentationScope::builder("tackle")
            .with_version(env!("CARGO_PKG_VERSION"))
            .with_schema_url(SCHEMA_URL)
            .build();
        let tracer = traces.tracer_with_scope(scope.clone());
        let meter = metrics.meter_with_scope(scope);
        let duration = meter
            .f64_histogram("gen_ai.execute_tool.duration")
            .with_unit("s")
            .with_description(
                "Duration of tool executions, from the call's arrival to its settlement.",
            )
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build();
        let calls = meter
            .u64_counter("tackle.tool.calls")
            .with_unit("{call}")
            .with_description("Tool calls settled, by tool and outcome.")
            .build();
        tracing::info!(
            traces = %settings.traces_endpoint,
            metrics = %settings.metrics_endpoint,
            "telemetry: exporting spans and metrics"
        );
        Ok(Arc::new(Self {
            tracer,
            traces,
            metrics,
            duration,
            calls,
            content: settings.content,
        }))
    }

    /// The layer that opens and ends the span of every call of a turn for `model`.
    pub(crate) fn layer(self: &Arc<Self>, model: Option<&Model>) -> Arc<dyn Layer> {
        Arc::new(layer::TelemetryLayer::new(self.clone(), model))
    }

    /// Exports what is queued and stops the exporters, waiting at most `within`: a collector
    /// that hangs is left behind, not waited for.
    pub(crate) fn shutdown(&self, within: Duration) {
        let (done, finished) = std::sync::mpsc::channel();
        let traces = self.traces.clone();
        let metrics = self.metrics.clone();
        let spawned = std::thread::Builder::new()
            .name("tackle-telemetry-flush".into())
            .spawn(move || {
                // A second shutdown (persisted, then dropped) only says it already happened.
                let _ = traces.shutdown_with_timeout(within);
                let _ = metrics.shutdown_with_timeout(within);
                let _ = done.send(());
            });
        if spawned.is_ok() && finished.recv_timeout(within).is_err() {
            tracing::warn!(
                "telemetry: the collector did not take the last spans and metrics within {} ms; \
                 they are dropped",
                within.as_millis()
            );
        }
    }
}
