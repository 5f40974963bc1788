//! The HTTP client the providers share: one `reqwest` client per provider, the attempt that
//! POSTs a body and reads the answer (streamed through a provider's [`StreamAccumulator`] or
//! whole), timeouts, and error messages that say what the server answered and what to check.
//!
//! Retrying is not done here but in [`super::retry`]; this module only says, for each failure,
//! whether it is transient (via [`super::retry::classify`]). Every message built from a server's
//! answer goes through [`HttpClient::redact`] in case the server echoes the key back.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::retry::{self, parse_retry_after, Verdict};
use super::secrets;
use super::settings::{HttpConfig, Protocol};
use super::sse::{SseEvent, SseParser};
use super::{ModelError, ModelResponse};

/// The reqwest client could not be built (TLS setup failed).
#[derive(Debug, thiserror::Error)]
#[error("provider `{provider}`: cannot build HTTP client: {source}")]
pub struct ClientError {
    pub provider: String,
    #[source]
    pub source: reqwest::Error,
}

/// A provider's `reqwest` client and the config it was built with.
///
/// For a plain-http base URL (a local server) the client is built with an empty root store, so
/// the platform's root certificates are never loaded (that took ~14 ms before the first
/// request); for an https base URL the client, with the platform's roots, is built on the first
/// request instead of when the provider is.
#[derive(Clone)]
pub struct HttpClient {
    pub config: HttpConfig,
    client: Arc<OnceLock<Result<reqwest::Client, ModelError>>>,
}

/// How many clients with the platform's root certificates this process has built.
static TLS_CONFIGS: AtomicUsize = AtomicUsize::new(0);

/// How many clients with the platform's root certificates this process has built (tests check
/// that plain-http providers build none).
pub fn tls_configs_built() -> usize {
    TLS_CONFIGS.load(Ordering::Relaxed)
}

/// The common part of both clients.
fn builder(config: &HttpConfig) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(config.timeouts.connect)
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
}

/// A client for a plain-http server: no root certificates, and a redirect to https is refused
/// with a message (the root store it would need was never loaded).
fn plain_client(config: &HttpConfig) -> Result<reqwest::Client, reqwest::Error> {
    builder(config)
        .tls_certs_only(Vec::<reqwest::Certificate>::new())
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.url().scheme() == "https" {
                let to = attempt.url().to_string();
                attempt.error(format!(
                    "the server redirected to {to}; set base_url to the https address"
                ))
            } else if attempt.previous().len() >= 10 {
                attempt.error("too many redirects")
            } else {
                attempt.follow()
            }
        }))
        .build()
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
    /// The `authorization: Bearer KEY` value OpenAI-compatible APIs take, when the provider has
    /// a key. The value holds the secret: it goes into a request header and nowhere else.
    pub(crate) fn bearer(&self) -> Option<String> {
        self.config
            .api_key
            .as_ref()
            .map(|k| format!("Bearer {}", k.expose()))
    }

    pub fn new(config: HttpConfig) -> Result<HttpClient, ClientError> {
        install_crypto_provider();
        let client = Arc::new(OnceLock::new());
        if config.base_url.starts_with("http://") {
            let plain = plain_client(&config).map_err(|source| ClientError {
                provider: config.provider.clone(),
                source,
            })?;
            let _ = client.set(Ok(plain));
        }
        Ok(HttpClient { config, client })
    }

    /// The client; for https, built (with the platform's roots) on first use.
    fn client(&self) -> Result<&reqwest::Client, ModelError> {
        let built = self.client.get_or_init(|| {
            TLS_CONFIGS.fetch_add(1, Ordering::Relaxed);
            builder(&self.config).build().map_err(|source| {
                ModelError::Fatal(
                    ClientError {
                        provider: self.config.provider.clone(),
                        source,
                    }
                    .to_string(),
                )
            })
        });
        built.as_ref().map_err(Clone::clone)
    }

    /// Asks an OpenAI-compatible server whether its chat template supports tools: llama.cpp's
    /// `GET /props` (at the server root, beside `/v1`) has `chat_template_caps.supports_tools`
    /// in newer builds. `None` when the server does not say (no such endpoint, an older build,
    /// another server, an error): only a clear `false` changes anything.
    pub async fn server_supports_tools(&self) -> Option<bool> {
        let root = self.config.base_url.trim_end_matches("/v1");
        let url = format!("{root}/props");
        let mut request = self.client().ok()?.get(&url);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = tokio::time::timeout(self.config.timeouts.connect, request.send())
            .await
            .ok()?
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = tokio::time::timeout(self.config.timeouts.connect, response.bytes())
            .await
            .ok()?
            .ok()?;
        let props: serde_json::Value = serde_json::from_slice(&body).ok()?;
        props
            .pointer("/chat_template_caps/supports_tools")
            .or_else(|| props.get("supports_tools"))
            .and_then(serde_json::Value::as_bool)
    }

    /// `text` with the API key replaced by `***`, wherever a server might have echoed it.
    pub fn redact(&self, text: &str) -> String {
        secrets::redact(text, self.config.api_key.as_ref())
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.config.base_url, path)
    }

    /// Runs `attempt` under the provider's retry policy, reporting every attempt.
    pub async fn with_retries<T, F, Fut>(&self, model: &str, attempt: F) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ModelError>>,
    {
        self.config
            .retry
            .run(
                &self.config.provider,
                model,
                self.config.observer.as_ref(),
                attempt,
            )
            .await
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
            .client()?
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
                // A refused redirect (to https from a plain-http server) fails the same way again.
                Ok(Err(e)) if e.is_redirect() => {
                    return Err(ModelError::Fatal(self.redact(&format!(
                        "{}: POST {url}: {}",
                        self.config.provider,
                        error_chain(&e)
                    ))))
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
        let verdict = retry::classify(Some(code), &body);
        // A context overflow carries its own advice (see ModelError); the status hint would
        // send the user to the model name instead.
        let hint = match verdict {
            Verdict::ContextOverflow => String::new(),
            Verdict::Permanent if code >= 500 => format!(
                " The server could not produce an answer in the requested format; another attempt fails the same way{}",
                if self.config.protocol == Protocol::Openai {
                    " (for a model without tool support, set tools = false)"
                } else {
                    ""
                }
            ),
            _ => format!(" {}", self.status_hint(code)),
        };
        let message = format!(
            "{}: POST {url} answered {status}{}{}.{hint}",
            self.config.provider,
            if snippet.is_empty() { "" } else { ": " },
            snippet,
        );
        Err(retry::error_for(verdict, message, retry_after))
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
