//! The OTLP exporters, wrapped so a collector that is down, slow or refusing is reported once
//! in the log (and once more when it takes data again), never per batch.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// Whether the collector is failing, shared by the span and metric exporters of one host.
pub(crate) struct CollectorHealth {
    endpoint: String,
    failing: AtomicBool,
}

impl CollectorHealth {
    pub(crate) fn new(endpoint: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            endpoint: endpoint.into(),
            failing: AtomicBool::new(false),
        })
    }

    /// Logs a change between taking data and failing: once each way.
    fn note(&self, what: &str, result: &OTelSdkResult) {
        match result {
            Err(error) => {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        endpoint = %self.endpoint,
                        %error,
                        "telemetry: the collector did not take {what}; calls go on, and what \
                         does not fit the export queue is dropped (reported once until it \
                         recovers)"
                    );
                }
            }
            Ok(()) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(endpoint = %self.endpoint, "telemetry: the collector takes {what} again");
                }
            }
        }
    }
}

/// A span exporter that reports the collector's failures through [`CollectorHealth`].
pub(crate) struct ReportingSpans<E> {
    pub(crate) inner: E,
    pub(crate) health: Arc<CollectorHealth>,
}

impl<E> fmt::Debug for ReportingSpans<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReportingSpans")
            .field("endpoint", &self.health.endpoint)
            .finish_non_exhaustive()
    }
}

impl<E: SpanExporter> SpanExporter for ReportingSpans<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.health.note("spans", &result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// A metric exporter that reports the collector's failures through [`CollectorHealth`].
pub(crate) struct ReportingMetrics<E> {
    pub(crate) inner: E,
    pub(crate) health: Arc<CollectorHealth>,
}

impl<E: PushMetricExporter> PushMetricExporter for ReportingMetrics<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.health.note("metrics", &result);
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
