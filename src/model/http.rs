//! What the HTTP providers share: settings from the project config and the environment, the
//! secret wrapper for API keys, the retry loop with backoff, timeouts, the SSE parser, and the
//! attempt that reads a streamed answer into a provider's [`StreamAccumulator`].
//!
//! A provider builds one JSON body per completion and hands [`HttpClient`] a closure that does
//! one attempt; the client retries transient failures (connect errors, timeouts, 408, 409, 429,
//! 5xx, a stream cut mid-way) with exponential backoff and jitter, honouring `Retry-After`, and
//! reports every attempt to an optional observer so the runtime can log it. Everything else
//! fails at once with a message saying what the server answered and what to check.
//!
//! API keys live in [`ApiKey`], whose `Debug` and `Display` print `***`; every message built from
//! a server's answer goes through [`HttpClient::redact`] in case the server echoes the key back.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{ModelError, ModelResponse};

/// An API key. Prints as `***` so it never reaches logs, events or error messages by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps `key`; `None` for an empty or blank string (local servers need no key).
    pub fn new(key: impl Into<String>) -> Option<Self> {
        let key = key.into().trim().to_string();
        (!key.is_empty()).then_some(ApiKey(key))
    }

    /// The key itself, for the one place that needs it: the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How transient failures are retried: `max_retries` more attempts after the first, waiting
/// `base * 2^(n-1)` (capped at `max_delay`) plus up to `jitter` of that at random, or what the
/// server's `Retry-After` asked for (capped at `max_delay` too, so a server cannot park us).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
    pub max_delay: Duration,
    /// Fraction of the delay added at random, 0.0 to 1.0.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            jitter: 0.1,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based) when the server named no delay.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        let delay = self.base.saturating_mul(factor).min(self.max_delay);
        let jitter = self.jitter.clamp(0.0, 1.0);
        if jitter == 0.0 {
            return delay;
        }
        delay + delay.mul_f64(jitter * unit_random())
    }

    /// The wait before retry number `retry`, honouring the server's `Retry-After`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(after) => after.min(self.max_delay),
            None => self.backoff(retry),
        }
    }
}

/// A number in [0, 1) that is different each call; jitter needs no better randomness.
fn unit_random() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    let mut x = COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ nanos;
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// The limits that keep a request from hanging.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeouts {
    /// Opening the TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request to the response headers; for a non-streamed answer, to the end
    /// of the body.
    pub request: Duration,
    /// Longest silence between two pieces of a streamed answer.
    pub stream_idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(300),
            stream_idle: Duration::from_secs(60),
        }
    }
}

/// What happened on one attempt, for the runtime's event log (`model.attempt`, `model.retry`).
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptEvent {
    pub provider: String,
    pub model: String,
    /// 1-based.
    pub attempt: u32,
    /// The most attempts this request may take (`max_retries + 1`).
    pub max_attempts: u32,
    pub outcome: AttemptOutcome,
    /// How long the attempt took.
    pub elapsed: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AttemptOutcome {
    Succeeded,
    /// A transient failure; the next attempt starts after `delay`.
    Retrying {
        error: String,
        delay: Duration,
    },
    /// The request failed for good: a fatal answer, or the last attempt failed too.
    Failed {
        error: String,
    },
}

/// Receives every attempt; set by the runtime to turn attempts into events.
pub type AttemptObserver = Arc<dyn Fn(&AttemptEvent) + Send + Sync>;

tokio::task_local! {
    static CALL_OBSERVER: AttemptObserver;
}

/// Runs `call` (a `Model::complete` future) with `observer` seeing its attempts, on top of the
/// observer the provider was built with. This is how the runtime ties attempts to the hop and
/// step that made them, though one provider instance serves every hop.
pub async fn observe<F: std::future::Future>(observer: AttemptObserver, call: F) -> F::Output {
    CALL_OBSERVER.scope(observer, call).await
}

/// `[providers.NAME]` in `switchboard.toml`. Every key is optional; the environment fills in
/// the rest for the built-in `openai` and `anthropic` names.
///
/// ```toml
/// [providers.ollama]
/// protocol = "openai"                     # wire protocol: "openai" or "anthropic"
/// base_url = "http://localhost:11434/v1"
/// api_key_env = "OLLAMA_API_KEY"          # name of the variable holding the key, never the key
/// stream = true
/// request_timeout_secs = 300
/// stream_idle_timeout_secs = 60
/// connect_timeout_secs = 10
/// max_retries = 3
/// retry_base_ms = 1000
/// retry_max_delay_ms = 60000
/// retry_jitter = 0.1
/// max_tokens = 8192                       # required by Anthropic, optional for OpenAI
/// tools = true                            # false: the model writes task() calls as text
///
/// [providers.ollama.models."llama3.1"]
/// tools = false
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    pub protocol: Option<Protocol>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub stream: Option<bool>,
    pub connect_timeout_secs: Option<f64>,
    pub request_timeout_secs: Option<f64>,
    pub stream_idle_timeout_secs: Option<f64>,
    pub max_retries: Option<u32>,
    pub retry_base_ms: Option<u64>,
    pub retry_max_delay_ms: Option<u64>,
    pub retry_jitter: Option<f64>,
    pub max_tokens: Option<u32>,
    pub tools: Option<bool>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelSettings>,
}

/// `[providers.NAME.models."MODEL"]`: settings for one model of a provider.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// `false` for models that cannot call tools: delegations are parsed from their text.
    pub tools: Option<bool>,
    pub max_tokens: Option<u32>,
}

/// The two wire protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Chat Completions (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio, ...).
    Openai,
    /// The Messages API.
    Anthropic,
}

impl Protocol {
    pub fn default_base_url(self) -> &'static str {
        match self {
            Protocol::Openai => "https://api.openai.com/v1",
            Protocol::Anthropic => "https://api.anthropic.com",
        }
    }

    pub fn key_env(self) -> &'static str {
        match self {
            Protocol::Openai => "OPENAI_API_KEY",
            Protocol::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    pub fn base_url_env(self) -> &'static str {
        match self {
            Protocol::Openai => "OPENAI_BASE_URL",
            Protocol::Anthropic => "ANTHROPIC_BASE_URL",
        }
    }

    /// The protocol a provider name implies when its settings name none.
    pub fn for_provider(name: &str, settings: Option<&ProviderSettings>) -> Option<Protocol> {
        if let Some(p) = settings.and_then(|s| s.protocol) {
            return Some(p);
        }
        match name {
            "openai" => Some(Protocol::Openai),
            "anthropic" => Some(Protocol::Anthropic),
            _ => None,
        }
    }
}

/// Everything one HTTP provider instance needs, resolved from settings and environment.
#[derive(Clone)]
pub struct HttpConfig {
    /// The provider's name as written in `--model NAME/MODEL`.
    pub provider: String,
    pub protocol: Protocol,
    /// Without a trailing slash.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// Where the key came from (a variable name), for hints in error messages.
    pub key_source: String,
    pub stream: bool,
    pub retry: RetryPolicy,
    pub timeouts: Timeouts,
    pub max_tokens: Option<u32>,
    pub observer: Option<AttemptObserver>,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("provider", &self.provider)
            .field("protocol", &self.protocol)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("key_source", &self.key_source)
            .field("stream", &self.stream)
            .field("retry", &self.retry)
            .field("timeouts", &self.timeouts)
            .field("max_tokens", &self.max_tokens)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// Run-wide choices the CLI makes (`--no-stream`) and the runtime's observer.
#[derive(Clone, Default)]
pub struct BuildOptions {
    /// `Some(false)` for `--no-stream`; overrides the settings.
    pub stream: Option<bool>,
    pub observer: Option<AttemptObserver>,
}

fn secs(value: Option<f64>, default: Duration) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(v) => Duration::try_from_secs_f64(v)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("a timeout must be a positive number of seconds, not {v}")),
    }
}

impl HttpConfig {
    /// Resolves a provider's settings. For the built-in names `openai` and `anthropic`,
    /// `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` override the configured `base_url`; the key comes
    /// from `api_key_env` if set, else from `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` (for any
    /// provider of that protocol). `env` looks variables up (`std::env::var` in production).
    pub fn resolve(
        provider: &str,
        protocol: Protocol,
        settings: &ProviderSettings,
        options: &BuildOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<HttpConfig, String> {
        let builtin = matches!(provider, "openai" | "anthropic");
        let env_base = builtin
            .then(|| env(protocol.base_url_env()))
            .flatten()
            .filter(|s| !s.trim().is_empty());
        let base_url = env_base
            .or_else(|| settings.base_url.clone())
            .unwrap_or_else(|| protocol.default_base_url().to_string());
        let mut base_url = base_url.trim().trim_end_matches('/').to_string();
        // The Messages path already has /v1; a base URL copied with it would double it.
        if protocol == Protocol::Anthropic {
            if let Some(stripped) = base_url.strip_suffix("/v1") {
                base_url = stripped.to_string();
            }
        }
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(format!(
                "provider `{provider}`: base URL `{base_url}` must start with http:// or https://"
            ));
        }
        let key_source = settings
            .api_key_env
            .clone()
            .unwrap_or_else(|| protocol.key_env().to_string());
        let api_key = env(&key_source).and_then(ApiKey::new);
        let defaults = RetryPolicy::default();
        let retry = RetryPolicy {
            max_retries: settings.max_retries.unwrap_or(defaults.max_retries),
            base: settings
                .retry_base_ms
                .map(Duration::from_millis)
                .unwrap_or(defaults.base),
            max_delay: settings
                .retry_max_delay_ms
                .map(Duration::from_millis)
                .unwrap_or(defaults.max_delay),
            jitter: settings.retry_jitter.unwrap_or(defaults.jitter),
        };
        let t = Timeouts::default();
        let timeouts = Timeouts {
            connect: secs(settings.connect_timeout_secs, t.connect)?,
            request: secs(settings.request_timeout_secs, t.request)?,
            stream_idle: secs(settings.stream_idle_timeout_secs, t.stream_idle)?,
        };
        Ok(HttpConfig {
            provider: provider.to_string(),
            protocol,
            base_url,
            api_key,
            key_source,
            stream: options.stream.or(settings.stream).unwrap_or(true),
            retry,
            timeouts,
            max_tokens: settings.max_tokens,
            observer: options.observer.clone(),
        })
    }

    /// A config for tests and benches: no key, fast retries.
    pub fn local(provider: &str, protocol: Protocol, base_url: &str) -> HttpConfig {
        HttpConfig {
            provider: provider.to_string(),
            protocol,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: None,
            key_source: protocol.key_env().to_string(),
            stream: true,
            retry: RetryPolicy {
                max_retries: 3,
                base: Duration::from_millis(5),
                max_delay: Duration::from_millis(200),
                jitter: 0.0,
            },
            timeouts: Timeouts {
                connect: Duration::from_secs(2),
                request: Duration::from_secs(5),
                stream_idle: Duration::from_secs(5),
            },
            max_tokens: None,
            observer: None,
        }
    }
}

/// Whether `model` of a provider calls tools natively (default yes).
pub fn model_uses_tools(settings: &ProviderSettings, model: &str) -> bool {
    settings
        .models
        .get(model)
        .and_then(|m| m.tools)
        .or(settings.tools)
        .unwrap_or(true)
}

/// The `max_tokens` for `model`: its own setting, else the provider's.
pub fn model_max_tokens(settings: &ProviderSettings, model: &str) -> Option<u32> {
    settings
        .models
        .get(model)
        .and_then(|m| m.max_tokens)
        .or(settings.max_tokens)
}

/// Builds the provider for `NAME/MODEL` when `NAME` speaks an HTTP protocol: `openai`,
/// `anthropic`, or any `[providers.NAME]` with a `protocol` key. `None` for other names (the
/// registry's own providers). A model configured with `tools = false` comes wrapped in
/// [`TextualTools`](super::textual::TextualTools).
pub fn build(
    provider: &str,
    model: &str,
    settings: Option<&ProviderSettings>,
    options: &BuildOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Result<Arc<dyn super::Model>, String>> {
    let protocol = Protocol::for_provider(provider, settings)?;
    let defaults = ProviderSettings::default();
    let settings = settings.unwrap_or(&defaults);
    Some((|| {
        let mut config = HttpConfig::resolve(provider, protocol, settings, options, env)?;
        config.max_tokens = model_max_tokens(settings, model);
        let inner: Arc<dyn super::Model> = match protocol {
            Protocol::Openai => Arc::new(super::openai::OpenAi::new(config)?),
            Protocol::Anthropic => Arc::new(super::anthropic::Anthropic::new(config)?),
        };
        Ok(if model_uses_tools(settings, model) {
            inner
        } else {
            Arc::new(super::textual::TextualTools::new(inner)) as Arc<dyn super::Model>
        })
    })())
}

/// `std::env::var`, as [`build`] wants it.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A shared `reqwest` client plus the retry loop.
#[derive(Clone)]
pub struct HttpClient {
    pub config: HttpConfig,
    client: reqwest::Client,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("config", &self.config)
            .finish()
    }
}

/// Installs the ring crypto provider for rustls once per process (reqwest is built without a
/// default one to keep the C build small).
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Another thread may have won the race; either provider is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The most of an error body kept for messages.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// The most of an error body shown in a message.
const ERROR_SNIPPET: usize = 600;

impl HttpClient {
    pub fn new(config: HttpConfig) -> Result<HttpClient, String> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect)
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                format!(
                    "provider `{}`: cannot build HTTP client: {e}",
                    config.provider
                )
            })?;
        Ok(HttpClient { config, client })
    }

    /// `text` with the API key replaced by `***`, wherever a server might have echoed it.
    pub fn redact(&self, text: &str) -> String {
        match &self.config.api_key {
            Some(key) if text.contains(key.expose()) => text.replace(key.expose(), "***"),
            _ => text.to_string(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.config.base_url, path)
    }

    /// Runs `attempt` until it succeeds, fails fatally, or the retries run out; every attempt is
    /// reported to the observer. After the last retry the error becomes fatal, so the caller
    /// does not retry on top.
    pub async fn with_retries<F, Fut>(
        &self,
        model: &str,
        mut attempt: F,
    ) -> Result<ModelResponse, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<ModelResponse, ModelError>>,
    {
        let policy = &self.config.retry;
        let max_attempts = policy.max_retries.saturating_add(1);
        let mut n = 0u32;
        loop {
            n += 1;
            let started = Instant::now();
            let result = attempt().await;
            let elapsed = started.elapsed();
            let emit = |outcome: AttemptOutcome| {
                let event = AttemptEvent {
                    provider: self.config.provider.clone(),
                    model: model.to_string(),
                    attempt: n,
                    max_attempts,
                    outcome,
                    elapsed,
                };
                if let Some(observer) = &self.config.observer {
                    observer(&event);
                }
                let _ = CALL_OBSERVER.try_with(|observer| observer(&event));
            };
            match result {
                Ok(response) => {
                    emit(AttemptOutcome::Succeeded);
                    return Ok(response);
                }
                Err(ModelError::Transient {
                    message,
                    retry_after,
                }) if n < max_attempts => {
                    let delay = policy.delay(n, retry_after);
                    emit(AttemptOutcome::Retrying {
                        error: message,
                        delay,
                    });
                    tokio::time::sleep(delay).await;
                }
                Err(ModelError::Transient { message, .. }) => {
                    let error = format!(
                        "{message} (gave up after {n} attempt{}; retries are set by max_retries in [providers.{}])",
                        if n == 1 { "" } else { "s" },
                        self.config.provider
                    );
                    emit(AttemptOutcome::Failed {
                        error: error.clone(),
                    });
                    return Err(ModelError::Fatal(error));
                }
                Err(ModelError::Fatal(error)) => {
                    emit(AttemptOutcome::Failed {
                        error: error.clone(),
                    });
                    return Err(ModelError::Fatal(error));
                }
            }
        }
    }

    /// POSTs `body` to `path` and waits (at most the request timeout) for the response headers.
    /// A non-success status becomes a transient or fatal error with the server's words in it.
    pub async fn post(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<reqwest::Response, ModelError> {
        let url = self.url(path);
        let mut request = self
            .client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response =
            match tokio::time::timeout(self.config.timeouts.request, request.send()).await {
                Err(_) => {
                    return Err(ModelError::Transient {
                        message: format!(
                            "{}: POST {url}: no answer within {:?} (request_timeout_secs)",
                            self.config.provider, self.config.timeouts.request
                        ),
                        retry_after: None,
                    })
                }
                Ok(Err(e)) => return Err(self.transport_error(&url, &e)),
                Ok(Ok(r)) => r,
            };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = self.read_error_body(response).await;
        let snippet = snippet(&self.redact(&body));
        let code = status.as_u16();
        let message = format!(
            "{}: POST {url} answered {status}{}{}. {}",
            self.config.provider,
            if snippet.is_empty() { "" } else { ": " },
            snippet,
            self.status_hint(code)
        );
        if is_transient_status(code) {
            Err(ModelError::Transient {
                message,
                retry_after,
            })
        } else {
            Err(ModelError::Fatal(message))
        }
    }

    async fn read_error_body(&self, mut response: reqwest::Response) -> String {
        let mut body = Vec::new();
        let deadline = self.config.timeouts.stream_idle;
        while body.len() < ERROR_BODY_LIMIT {
            match tokio::time::timeout(deadline, response.chunk()).await {
                Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
                _ => break,
            }
        }
        String::from_utf8_lossy(&body).into_owned()
    }

    /// The whole body of a non-streamed answer, within the request timeout.
    pub async fn read_body(
        &self,
        mut response: reqwest::Response,
        started: Instant,
    ) -> Result<Vec<u8>, ModelError> {
        let mut body = Vec::new();
        loop {
            let left = self
                .config
                .timeouts
                .request
                .checked_sub(started.elapsed())
                .unwrap_or_default();
            match tokio::time::timeout(left, response.chunk()).await {
                Err(_) => {
                    return Err(ModelError::Transient {
                        message: format!(
                            "{}: the answer did not finish within {:?} (request_timeout_secs)",
                            self.config.provider, self.config.timeouts.request
                        ),
                        retry_after: None,
                    })
                }
                Ok(Err(e)) => return Err(self.cut_error(&e)),
                Ok(Ok(None)) => return Ok(body),
                Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            }
        }
    }

    /// The next piece of a streamed answer, or `None` at its end; silence longer than the idle
    /// timeout is a transient failure.
    pub async fn next_chunk(
        &self,
        response: &mut reqwest::Response,
    ) -> Result<Option<bytes::Bytes>, ModelError> {
        match tokio::time::timeout(self.config.timeouts.stream_idle, response.chunk()).await {
            Err(_) => Err(ModelError::Transient {
                message: format!(
                    "{}: the stream went silent for {:?} (stream_idle_timeout_secs)",
                    self.config.provider, self.config.timeouts.stream_idle
                ),
                retry_after: None,
            }),
            Ok(Err(e)) => Err(self.cut_error(&e)),
            Ok(Ok(chunk)) => Ok(chunk),
        }
    }

    fn transport_error(&self, url: &str, e: &reqwest::Error) -> ModelError {
        let what = if e.is_connect() {
            "cannot connect"
        } else if e.is_timeout() {
            "timed out"
        } else {
            "request failed"
        };
        ModelError::Transient {
            message: self.redact(&format!(
                "{}: POST {url}: {what}: {}; check that the server runs and {} is right",
                self.config.provider,
                error_chain(e),
                match self.config.provider.as_str() {
                    "openai" | "anthropic" => self.config.protocol.base_url_env().to_string(),
                    name => format!("base_url in [providers.{name}]"),
                }
            )),
            retry_after: None,
        }
    }

    /// A body that broke off: transient, the stream was cut.
    pub fn cut_error(&self, e: &reqwest::Error) -> ModelError {
        ModelError::Transient {
            message: self.redact(&format!(
                "{}: the answer was cut mid-way: {}",
                self.config.provider,
                error_chain(e)
            )),
            retry_after: None,
        }
    }

    /// One attempt: POSTs `body` to `path` and reads the answer. With streaming on and an SSE
    /// answer, the events go through `A` until its end marker; otherwise the one body goes to
    /// `parse_body` (some servers ignore `stream: true` and answer with one body; take that too).
    pub async fn exchange<A: StreamAccumulator>(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        parse_body: impl FnOnce(&[u8]) -> Result<ModelResponse, ModelError>,
    ) -> Result<ModelResponse, ModelError> {
        let started = Instant::now();
        let mut headers = headers.to_vec();
        if self.config.stream {
            headers.push(("accept", "text/event-stream"));
        }
        let mut response = self.post(path, &headers, body.to_vec()).await?;
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"));
        if !(self.config.stream && is_sse) {
            let bytes = self.read_body(response, started).await?;
            return parse_body(&bytes);
        }
        let mut parser = SseParser::new();
        let mut acc = A::default();
        let mut events = Vec::new();
        while let Some(chunk) = self.next_chunk(&mut response).await? {
            parser.push(&chunk, &mut events);
            for event in events.drain(..) {
                acc.event(&event, self)?;
            }
            if acc.stopped() {
                break;
            }
        }
        if !acc.stopped() {
            if let Some(event) = parser.finish() {
                acc.event(&event, self)?;
            }
        }
        self.finish_stream(acc)
    }

    /// Parses a whole SSE stream held in memory through `A` (tests and benches; the client
    /// streams).
    pub fn parse_sse<A: StreamAccumulator>(
        &self,
        bytes: &[u8],
    ) -> Result<ModelResponse, ModelError> {
        let mut parser = SseParser::new();
        let mut acc = A::default();
        let mut events = Vec::new();
        parser.push(bytes, &mut events);
        events.extend(parser.finish());
        for event in &events {
            acc.event(event, self)?;
        }
        self.finish_stream(acc)
    }

    /// The answer of a stream that has ended, or an error if it ended before it was complete.
    fn finish_stream<A: StreamAccumulator>(&self, acc: A) -> Result<ModelResponse, ModelError> {
        if !acc.complete() {
            return Err(self.stream_ended_early());
        }
        acc.into_response(self)
    }

    /// A stream that ended before its end marker.
    pub fn stream_ended_early(&self) -> ModelError {
        ModelError::Transient {
            message: format!(
                "{}: the stream ended before the answer was complete (cut mid-way)",
                self.config.provider
            ),
            retry_after: None,
        }
    }

    /// A 2xx body that is not the protocol: fatal, with what came and what to check.
    pub fn not_protocol(&self, what: &str, detail: &str, body: &[u8]) -> ModelError {
        let shown = snippet(&self.redact(&String::from_utf8_lossy(body)));
        ModelError::Fatal(format!(
            "{}: the server at {} answered with something that is not {what} ({detail}); it began: {shown:?}. Check that the base URL points at {}",
            self.config.provider,
            self.config.base_url,
            match self.config.protocol {
                Protocol::Openai => "an OpenAI-compatible endpoint (usually ending in /v1)",
                Protocol::Anthropic => "an Anthropic Messages API endpoint (without /v1)",
            }
        ))
    }

    /// The usual hint for a status, naming the variables or config keys to check.
    pub fn status_hint(&self, code: u16) -> String {
        let key_hint = match &self.config.api_key {
            Some(_) => format!("check that {} holds a valid key", self.config.key_source),
            None => format!("{} is not set", self.config.key_source),
        };
        match code {
            401 | 403 => format!("The server refused the credentials: {key_hint}"),
            404 => "Check the model name and the base URL".to_string(),
            400 | 422 => {
                "The server rejected the request: check the model name, and whether the model supports tools (set tools = false for it otherwise)".to_string()
            }
            408 | 409 | 429 => "The server asked to slow down or try again".to_string(),
            c if c >= 500 => "The server failed; retrying".to_string(),
            _ => "Check the base URL and the model name".to_string(),
        }
    }
}

/// The chain of causes, which is where reqwest keeps the useful part ("connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// 408, 409, 429 and 5xx are worth another try.
pub fn is_transient_status(code: u16) -> bool {
    matches!(code, 408 | 409 | 429) || (500..600).contains(&code)
}

/// `Retry-After` as seconds (integer or decimal) or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs.max(0.0)).ok();
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let now = chrono::Utc::now();
    let delta = when.with_timezone(&chrono::Utc) - now;
    Some(delta.to_std().unwrap_or_default())
}

/// The first few hundred characters of `text` on one line.
pub fn snippet(text: &str) -> String {
    let flat: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= ERROR_SNIPPET {
        flat
    } else {
        let cut: String = flat.chars().take(ERROR_SNIPPET).collect();
        format!("{cut}…")
    }
}

/// The JSON encoding of a request body; failing to encode is fatal.
pub fn encode(body: &serde_json::Value) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(body)
        .map_err(|e| ModelError::Fatal(format!("cannot encode the request: {e}")))
}

/// Builds one answer from a provider's stream events (see [`HttpClient::exchange`]).
pub trait StreamAccumulator: Default {
    /// Takes one event; an error event or a malformed one fails the attempt.
    fn event(&mut self, event: &SseEvent, http: &HttpClient) -> Result<(), ModelError>;
    /// Whether the end marker has come, so no more events need reading.
    fn stopped(&self) -> bool;
    /// Whether what has come makes a whole answer once the stream has ended.
    fn complete(&self) -> bool;
    fn into_response(self, http: &HttpClient) -> Result<ModelResponse, ModelError>;
}

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when the server sent none (the spec's "message").
    pub event: String,
    pub data: String,
}

/// Incremental parser for `text/event-stream`: feed it chunks as they come, in any split.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `chunk`, appending every event it completes to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        if self.buf.is_empty() {
            // The common case: no partial line pending, so read the chunk in place.
            let used = self.lines(chunk, out);
            self.buf.extend_from_slice(&chunk[used..]);
        } else {
            let mut buf = std::mem::take(&mut self.buf);
            buf.extend_from_slice(chunk);
            let used = self.lines(&buf, out);
            buf.drain(..used);
            self.buf = buf;
        }
    }

    /// Handles every complete line in `bytes`; returns how many bytes that used.
    fn lines(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> usize {
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', bytes) {
            let line = &bytes[start..nl];
            self.line(line.strip_suffix(b"\r").unwrap_or(line), out);
            start = nl + 1;
        }
        start
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.has_data = false;
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(0) => return, // a comment
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                match std::str::from_utf8(value) {
                    Ok(v) => self.data.push_str(v),
                    Err(_) => self.data.push_str(&String::from_utf8_lossy(value)),
                }
                self.has_data = true;
            }
            _ => {}
        }
    }

    /// At the end of the stream: an event whose blank line never came (some servers omit the
    /// last one). A partial line is dropped, as the SSE spec says.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.buf.clear();
        if self.has_data {
            self.has_data = false;
            Some(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            })
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_survive_any_split() {
        let text =
            b"event: a\ndata: one\r\n\r\n: comment\ndata: two\ndata: lines\n\ndata:[DONE]\n\n";
        for split in 0..text.len() {
            let mut parser = SseParser::new();
            let mut out = Vec::new();
            parser.push(&text[..split], &mut out);
            parser.push(&text[split..], &mut out);
            assert_eq!(
                out,
                vec![
                    SseEvent {
                        event: "a".into(),
                        data: "one".into()
                    },
                    SseEvent {
                        event: String::new(),
                        data: "two\nlines".into()
                    },
                    SseEvent {
                        event: String::new(),
                        data: "[DONE]".into()
                    },
                ],
                "split at {split}"
            );
            assert_eq!(parser.finish(), None);
        }
    }

    #[test]
    fn sse_finish_keeps_event_without_blank_line_and_drops_partial_line() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(b"data: whole\ndata: part", &mut out);
        assert!(out.is_empty());
        assert_eq!(parser.finish().map(|e| e.data), Some("whole".to_string()));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy {
            max_retries: 5,
            base: Duration::from_secs(1),
            max_delay: Duration::from_secs(3),
            jitter: 0.0,
        };
        assert_eq!(p.backoff(1), Duration::from_secs(1));
        assert_eq!(p.backoff(2), Duration::from_secs(2));
        assert_eq!(p.backoff(3), Duration::from_secs(3));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(100))),
            Duration::from_secs(3)
        );
        let j = RetryPolicy {
            jitter: 0.5,
            ..p.clone()
        };
        for _ in 0..100 {
            let d = j.backoff(1);
            assert!(d >= Duration::from_secs(1) && d <= Duration::from_millis(1500));
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn transient_statuses() {
        for c in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_transient_status(c), "{c}");
        }
        for c in [400, 401, 403, 404, 422] {
            assert!(!is_transient_status(c), "{c}");
        }
    }

    #[test]
    fn api_key_never_prints() {
        let key = ApiKey::new("sk-secret-123").expect("key");
        assert_eq!(format!("{key}"), "***");
        assert!(!format!("{key:?}").contains("sk-secret"));
        assert_eq!(ApiKey::new("  "), None);
    }

    #[test]
    fn resolve_reads_env_for_builtin_names_only() {
        let env = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1/".to_string()),
            "OPENAI_API_KEY" => Some("sk-x".to_string()),
            _ => None,
        };
        let s = ProviderSettings {
            base_url: Some("http://config/v1".into()),
            request_timeout_secs: Some(2.5),
            ..Default::default()
        };
        let c = HttpConfig::resolve(
            "openai",
            Protocol::Openai,
            &s,
            &BuildOptions::default(),
            &env,
        )
        .expect("config");
        assert_eq!(c.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(c.timeouts.request, Duration::from_millis(2500));
        assert!(c.stream);
        assert!(!format!("{c:?}").contains("sk-x"));
        let c = HttpConfig::resolve(
            "ollama",
            Protocol::Openai,
            &s,
            &BuildOptions {
                stream: Some(false),
                observer: None,
            },
            &env,
        )
        .expect("config");
        assert_eq!(c.base_url, "http://config/v1");
        assert!(!c.stream);
        let bad = ProviderSettings {
            base_url: Some("localhost:11434".into()),
            ..Default::default()
        };
        assert!(
            HttpConfig::resolve("x", Protocol::Openai, &bad, &BuildOptions::default(), &env)
                .is_err()
        );
    }
}
