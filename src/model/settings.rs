//! Provider settings: `[providers.NAME]` tables from `switchboard.toml`, resolved with the
//! environment into the [`HttpConfig`] one provider instance runs with.
//!
//! Config stays plain data (`config` keeps provider tables as free TOML); this module gives them
//! their shape, so the config module never needs to know about models.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use super::retry::{AttemptObserver, RetryPolicy};
use super::secrets::ApiKey;

/// Settings that cannot work, found while resolving a provider.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    #[error("a timeout must be a positive number of seconds, not {0}")]
    BadTimeout(f64),
    #[error("provider `{provider}`: base URL `{base_url}` must start with http:// or https://")]
    BadBaseUrl { provider: String, base_url: String },
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
/// max_tokens = 8192                       # longest answer per turn (default: see below)
/// context_tokens = 8192                   # the server's context size; default max_tokens is a quarter
/// tools = true                            # false: the model writes task() calls as text
/// tool_choice = true                      # false: never send tool_choice (llama.cpp's server)
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
    /// The context window of the provider's models, when known (e.g. llama.cpp's `--ctx-size`).
    pub context_tokens: Option<u32>,
    pub tools: Option<bool>,
    /// `false`: never send `tool_choice` (the runtime still holds an agent with
    /// `tool_choice: required` to it). For servers that accept the field and then run the
    /// answer to `max_tokens`, as llama.cpp's server did here (ggml-org/llama.cpp#27217).
    pub tool_choice: Option<bool>,
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
    pub context_tokens: Option<u32>,
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

    /// The output limit sent when nothing else names one.
    pub fn default_max_tokens(self) -> u32 {
        match self {
            Protocol::Openai => DEFAULT_MAX_TOKENS,
            Protocol::Anthropic => ANTHROPIC_DEFAULT_MAX_TOKENS,
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
    /// Whether requests may carry `tool_choice` (`[providers.NAME] tool_choice`, default true).
    pub tool_choice: bool,
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
            .field("tool_choice", &self.tool_choice)
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

fn secs(value: Option<f64>, default: Duration) -> Result<Duration, SettingsError> {
    match value {
        None => Ok(default),
        Some(v) => Duration::try_from_secs_f64(v)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or(SettingsError::BadTimeout(v)),
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
    ) -> Result<HttpConfig, SettingsError> {
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
            return Err(SettingsError::BadBaseUrl {
                provider: provider.to_string(),
                base_url,
            });
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
            tool_choice: settings.tool_choice.unwrap_or(true),
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
            tool_choice: true,
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

/// The output limit when nothing names one and no context size is known. Without any limit a
/// small local model once wrote 7,223 tokens in one turn and the next request overflowed.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// Anthropic's API requires `max_tokens`; this is sent when nothing else names one.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 8192;
/// The least a limit derived from a small context size goes down to.
const MIN_DERIVED_MAX_TOKENS: u32 = 256;

/// The `max_tokens` sent for `model` when the agent names none: the model's own setting, else
/// the provider's, else a quarter of the configured context size (so the prompt keeps three
/// quarters), at most the protocol's default; else the protocol's default (4096 for
/// OpenAI-compatible servers, 8192 for Anthropic, whose API requires one).
pub fn model_max_tokens(settings: &ProviderSettings, model: &str, protocol: Protocol) -> u32 {
    let own = settings.models.get(model);
    let default = protocol.default_max_tokens();
    if let Some(n) = own.and_then(|m| m.max_tokens).or(settings.max_tokens) {
        return n;
    }
    match own
        .and_then(|m| m.context_tokens)
        .or(settings.context_tokens)
    {
        Some(context) => (context / 4).clamp(MIN_DERIVED_MAX_TOKENS, default),
        None => default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_tokens_model_over_provider_over_context_over_default() {
        let mut s = ProviderSettings::default();
        assert_eq!(model_max_tokens(&s, "m", Protocol::Openai), 4096);
        assert_eq!(model_max_tokens(&s, "m", Protocol::Anthropic), 8192);
        s.context_tokens = Some(2048);
        assert_eq!(model_max_tokens(&s, "m", Protocol::Openai), 512);
        s.context_tokens = Some(512);
        assert_eq!(model_max_tokens(&s, "m", Protocol::Openai), 256);
        s.context_tokens = Some(1_000_000);
        assert_eq!(model_max_tokens(&s, "m", Protocol::Openai), 4096);
        s.max_tokens = Some(700);
        assert_eq!(model_max_tokens(&s, "m", Protocol::Openai), 700);
        s.models.insert(
            "m".into(),
            ModelSettings {
                max_tokens: Some(900),
                ..ModelSettings::default()
            },
        );
        assert_eq!(model_max_tokens(&s, "m", Protocol::Openai), 900);
        assert_eq!(model_max_tokens(&s, "other", Protocol::Openai), 700);
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
