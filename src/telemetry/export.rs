//! Sending spans out: [`SpanRecord`]s become the SDK's `SpanData`, a `BatchSpanProcessor` queues
//! them and exports OTLP/HTTP protobuf through `opentelemetry-otlp` from its own thread.
//!
//! Nothing here waits on the network in the caller's thread: `on_end` only queues (and drops
//! spans if the queue is full). The HTTP client is our reqwest, run on a small current-thread
//! tokio runtime owned by the exporter, because the processor's thread drives export futures with
//! a plain executor and reqwest needs a tokio reactor. A failed export is reported once through the
//! `Warn` callback the caller gave; later failures are only counted.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SpanData, SpanEvents, SpanExporter, SpanLinks,
    SpanProcessor,
};
use opentelemetry_sdk::Resource;

use super::spans::{AttrValue, Kind, SpanRecord};
use super::TelemetryError;

/// Where a warning goes (the CLI prints it to stderr; the library never prints).
pub type Warn = Arc<dyn Fn(&str) + Send + Sync>;

/// How long one export may take before it counts as failed.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the end of a session waits for the last batch.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Export failures, shared between the exporter thread and the owner.
#[derive(Default)]
pub struct Failures {
    warned: AtomicBool,
    count: AtomicUsize,
}

impl Failures {
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

/// The batching OTLP pipeline.
pub struct Pipeline {
    processor: BatchSpanProcessor,
    failures: Arc<Failures>,
    scope: InstrumentationScope,
}

impl Pipeline {
    /// Builds the exporter for `endpoint` (`http://host:4318`; `/v1/traces` is added when the URL
    /// has no path) and starts the processor's thread.
    pub fn start(endpoint: &str, warn: Warn) -> Result<Self, TelemetryError> {
        let url = traces_url(endpoint)?;
        crate::model::client::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .connect_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Setup(e.to_string()))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TelemetryError::Setup(e.to_string()))?;
        let http = ReqwestOtlp {
            client,
            rt: Arc::new(rt),
        };
        let otlp = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(http)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Setup(e.to_string()))?;
        let failures = Arc::new(Failures::default());
        let mut exporter = Watched {
            inner: otlp,
            failures: failures.clone(),
            warn,
            url,
        };
        let resource = Resource::builder_empty()
            .with_service_name("switchboard")
            .with_attributes([KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))])
            .build();
        exporter.set_resource(&resource);
        let config = BatchConfigBuilder::default()
            .with_max_queue_size(8192)
            .with_max_export_batch_size(512)
            .with_scheduled_delay(Duration::from_millis(500))
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(config)
            .build();
        let scope = InstrumentationScope::builder("switchboard")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Ok(Pipeline {
            processor,
            failures,
            scope,
        })
    }

    /// Queues one span; never waits on the network.
    pub fn send(&self, span: SpanRecord) {
        self.processor.on_end(to_span_data(span, &self.scope));
    }

    pub fn failures(&self) -> &Failures {
        &self.failures
    }

    /// Exports what is queued, waiting for it.
    pub fn flush(&self) {
        let _ = self.processor.force_flush();
    }

    /// Exports what is queued and stops the thread, waiting at most [`SHUTDOWN_TIMEOUT`].
    pub fn shutdown(&self) {
        let _ = self.processor.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
    }
}

/// `http://host:4318` → `http://host:4318/v1/traces`; a URL with a path is used as given.
pub fn traces_url(endpoint: &str) -> Result<String, TelemetryError> {
    let bad = |why: &str| TelemetryError::Endpoint {
        endpoint: endpoint.to_string(),
        reason: why.to_string(),
    };
    let url = reqwest::Url::parse(endpoint).map_err(|e| bad(&e.to_string()))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(bad("the scheme must be http or https"));
    }
    if url.host_str().is_none() {
        return Err(bad("it names no host"));
    }
    if url.path() == "/" || url.path().is_empty() {
        Ok(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
    } else {
        Ok(endpoint.to_string())
    }
}

fn to_span_data(s: SpanRecord, scope: &InstrumentationScope) -> SpanData {
    let context = SpanContext::new(
        TraceId::from_bytes(s.trace_id),
        SpanId::from_bytes(s.span_id),
        TraceFlags::SAMPLED,
        false,
        TraceState::default(),
    );
    let status = match s.error {
        Some(e) => Status::Error {
            description: Cow::Owned(e),
        },
        None => Status::Ok,
    };
    SpanData {
        span_context: context,
        parent_span_id: s.parent_span_id.map_or(SpanId::INVALID, SpanId::from_bytes),
        parent_span_is_remote: false,
        span_kind: match s.kind {
            Kind::Internal => SpanKind::Internal,
            Kind::Client => SpanKind::Client,
        },
        name: Cow::Owned(s.name),
        start_time: s.start,
        end_time: s.end,
        attributes: s
            .attributes
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, value(v)))
            .collect(),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status,
        instrumentation_scope: scope.clone(),
    }
}

fn value(v: AttrValue) -> Value {
    match v {
        AttrValue::Str(s) => Value::from(s),
        AttrValue::Int(i) => Value::I64(i),
        AttrValue::Bool(b) => Value::Bool(b),
    }
}

/// The OTLP exporter, counting failures and warning about the first.
struct Watched<E> {
    inner: E,
    failures: Arc<Failures>,
    warn: Warn,
    url: String,
}

impl<E: std::fmt::Debug> std::fmt::Debug for Watched<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("inner", &self.inner)
            .field("url", &self.url)
            .finish()
    }
}

impl std::fmt::Debug for Failures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Failures")
            .field("count", &self.count())
            .finish()
    }
}

impl<E: SpanExporter> SpanExporter for Watched<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            self.failures.count.fetch_add(1, Ordering::Relaxed);
            if !self.failures.warned.swap(true, Ordering::Relaxed) {
                let why = match e {
                    OTelSdkError::InternalFailure(m) => m.clone(),
                    other => other.to_string(),
                };
                (self.warn)(&format!(
                    "cannot export traces to {}: {why}; the session goes on without them \
                     (further failures are not reported)",
                    self.url
                ));
            }
        }
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// reqwest 0.13 behind the OTLP exporter's client trait.
struct ReqwestOtlp {
    client: reqwest::Client,
    rt: Arc<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for ReqwestOtlp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReqwestOtlp")
    }
}

type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'a>>;

impl HttpClient for ReqwestOtlp {
    fn send_bytes<'life0, 'async_trait>(
        &'life0 self,
        request: Request<Bytes>,
    ) -> SendFuture<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let client = self.client.clone();
            // The exporter thread polls this future with a plain executor; reqwest needs tokio,
            // so the request runs to completion on the exporter's own runtime.
            self.rt.block_on(async move {
                let (parts, body) = request.into_parts();
                let url = parts.uri.to_string();
                let mut req = client.request(parts.method, url).body(body);
                for (name, value) in parts.headers.iter() {
                    req = req.header(name, value);
                }
                let resp = req.send().await.map_err(SendError::from)?;
                let mut out = Response::builder().status(resp.status());
                for (name, value) in resp.headers() {
                    out = out.header(name, value);
                }
                let body = resp.bytes().await.map_err(SendError::from)?;
                Ok(out.body(body)?)
            })
        })
    }
}

/// A failed request, shown as its chain of causes in plain words (the exporter prints errors
/// with `{:?}`, which for reqwest's error is a struct dump).
struct SendError(String);

impl From<reqwest::Error> for SendError {
    fn from(e: reqwest::Error) -> Self {
        let mut text = if e.is_timeout() {
            "timed out".to_string()
        } else if e.is_connect() {
            "cannot connect".to_string()
        } else {
            "request failed".to_string()
        };
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            let part = s.to_string();
            if !text.contains(&part) {
                text.push_str(": ");
                text.push_str(&part);
            }
            source = s.source();
        }
        SendError(text)
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SendError {}
