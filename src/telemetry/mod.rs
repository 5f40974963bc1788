//! OpenTelemetry traces of sessions, built from the runtime's events (docs/telemetry.md).
//!
//! The runtime knows nothing of this module: the CLI passes [`Telemetry::observer`] in as (part
//! of) the session's `Observer`. Each event goes through the one [`spans::SpanAssembler`]; the spans
//! it finishes are queued for a background exporter, so a hop never waits on a collector, and a
//! collector that is down costs one warning. `trace --otlp` replays an old log through the same
//! path ([`Telemetry::replay`]).

pub mod export;
pub mod spans;

use std::sync::{Arc, Mutex};

use crate::runtime::{Event, Observer};
pub use export::Warn;
use spans::SpanAssembler;

/// The endpoint used by `--otel` when neither the flag nor `[telemetry]` names one (an OTLP/HTTP
/// collector on this machine, such as Jaeger's or the OpenTelemetry Collector's default).
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:4318";

/// Why tracing could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error(
        "bad OTLP endpoint `{endpoint}`: {reason}; give an http(s) URL such as {DEFAULT_ENDPOINT}"
    )]
    Endpoint { endpoint: String, reason: String },
    #[error("cannot set up the OTLP exporter: {0}")]
    Setup(String),
}

/// One session's (or one replay's) trace export.
pub struct Telemetry {
    assembler: Mutex<SpanAssembler>,
    pipeline: export::Pipeline,
}

impl Telemetry {
    /// Starts the background exporter for `endpoint`; `warn` hears about the first failed export.
    pub fn start(endpoint: &str, warn: Warn) -> Result<Arc<Self>, TelemetryError> {
        Ok(Arc::new(Telemetry {
            assembler: Mutex::new(SpanAssembler::new()),
            pipeline: export::Pipeline::start(endpoint, warn)?,
        }))
    }

    /// Feeds one event: spans it finishes are queued, nothing waits on the network.
    pub fn record(&self, event: &Event) {
        let spans = match self.assembler.lock() {
            Ok(mut a) => a.push(event),
            Err(_) => return,
        };
        for s in spans {
            self.pipeline.send(s);
        }
    }

    /// An `Observer` for `RunOptions` that records every event.
    pub fn observer(self: &Arc<Self>) -> Observer {
        let me = self.clone();
        Arc::new(move |e: &Event| me.record(e))
    }

    /// Feeds a finished session's whole log (for `trace --otlp`).
    pub fn replay(&self, events: &[Event]) {
        for e in events {
            self.record(e);
        }
    }

    /// Exports what is queued now (waiting for it); a replay calls it between sessions.
    pub fn flush(&self) {
        self.pipeline.flush();
    }

    /// Ends spans left open, sends the last batch (waiting at most a few seconds) and stops the
    /// exporter. Returns the number of exports that failed.
    pub fn shutdown(&self) -> usize {
        let rest = match self.assembler.lock() {
            Ok(mut a) => a.finish(),
            Err(_) => Vec::new(),
        };
        for s in rest {
            self.pipeline.send(s);
        }
        self.pipeline.shutdown();
        self.pipeline.failures().count()
    }
}
