//! Embeddings from an OpenAI-compatible provider (`POST {base_url}/embeddings`, the OpenAI API
//! shape), for the knowledge store's near-duplicate check (docs/knowledge.md, "Reinforcement").
//!
//! The provider is named by `[knowledge] embeddings = "PROVIDER/MODEL"` and configured like any
//! other (`openai`, or `[providers.NAME]` with `protocol = "openai"`): same base URL, key,
//! timeouts and retry policy ([`super::retry`]), through the same [`HttpClient`]. Only the
//! OpenAI protocol is accepted; the Messages API has no embeddings endpoint.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Deserialize;

use super::client::{encode, HttpClient};
use super::registry::parse_spec;
use super::settings::{BuildOptions, HttpConfig, Protocol, ProviderSettings};
use super::ModelError;

/// Texts sent in one request. OpenAI accepts up to 2,048 inputs; smaller batches keep one
/// request's body and time modest on local servers.
const BATCH: usize = 128;

/// Why no vectors came back. Messages name the setting or the server's answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbeddingsError {
    #[error("[knowledge] embeddings = \"{spec}\" in switchboard.toml: {reason}")]
    Config { spec: String, reason: String },
    #[error("embeddings from `{spec}` failed: {error}")]
    Request {
        spec: String,
        #[source]
        error: ModelError,
    },
}

/// One provider's embeddings endpoint and the model asked for.
#[derive(Debug, Clone)]
pub struct Embedder {
    http: HttpClient,
    model: String,
    spec: String,
}

#[derive(Deserialize)]
struct EmbeddingsBody {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl Embedder {
    /// The embedder `spec` (`PROVIDER/MODEL`) names, from the `[providers.*]` tables and the
    /// environment (`env` looks variables up; [`super::registry::process_env`] in production).
    pub fn resolve(
        spec: &str,
        providers: &BTreeMap<String, toml::Table>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Embedder, EmbeddingsError> {
        let config_error = |reason: String| EmbeddingsError::Config {
            spec: spec.to_string(),
            reason,
        };
        let (provider, model) = parse_spec(spec).map_err(|e| config_error(e.to_string()))?;
        let settings: Option<ProviderSettings> = providers
            .get(provider)
            .map(|t| t.clone().try_into())
            .transpose()
            .map_err(|e: toml::de::Error| {
                config_error(format!("[providers.{provider}]: {}", e.message()))
            })?;
        match Protocol::for_provider(provider, settings.as_ref()) {
            Some(Protocol::Openai) => {}
            _ => {
                return Err(config_error(format!(
                    "`{provider}` is not an OpenAI-compatible provider; name `openai` or a \
                     [providers.{provider}] with protocol = \"openai\" (the Anthropic API has \
                     no embeddings endpoint)"
                )))
            }
        }
        let settings = settings.unwrap_or_default();
        let config = HttpConfig::resolve(
            provider,
            Protocol::Openai,
            &settings,
            &BuildOptions::default(),
            env,
        )
        .map_err(|e| config_error(e.to_string()))?;
        Embedder::new(config, model).map_err(|e| config_error(e.to_string()))
    }

    /// An embedder over a resolved provider config (tests build one on a mock server).
    pub fn new(config: HttpConfig, model: &str) -> Result<Embedder, super::client::ClientError> {
        let spec = format!("{}/{model}", config.provider);
        Ok(Embedder {
            http: HttpClient::new(config)?,
            model: model.to_string(),
            spec,
        })
    }

    /// `PROVIDER/MODEL`: stored beside each vector, so vectors of different models are never
    /// compared.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// One vector per text, in order. Each batch is one request under the provider's retry
    /// policy; an answer with the wrong number of vectors, or vectors of differing lengths, is
    /// an error rather than a guess.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbeddingsError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let body = encode(&serde_json::json!({"model": self.model, "input": batch}))
                .map_err(|error| self.failed(error))?;
            let vectors = self
                .http
                .with_retries(&self.model, || self.attempt(&body, batch.len()))
                .await
                .map_err(|error| self.failed(error))?;
            out.extend(vectors);
        }
        if let Some(first) = out.first() {
            let dims = first.len();
            if dims == 0 || out.iter().any(|v| v.len() != dims) {
                return Err(self.failed(ModelError::Fatal(
                    "the server answered vectors of differing or zero length".into(),
                )));
            }
        }
        Ok(out)
    }

    fn failed(&self, error: ModelError) -> EmbeddingsError {
        EmbeddingsError::Request {
            spec: self.spec.clone(),
            error,
        }
    }

    async fn attempt(&self, body: &[u8], expected: usize) -> Result<Vec<Vec<f32>>, ModelError> {
        let started = Instant::now();
        let auth = self.http.bearer();
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let response = self
            .http
            .post("/embeddings", &headers, body.to_vec())
            .await?;
        let bytes = self.http.read_body(response, started).await?;
        let parsed: EmbeddingsBody = serde_json::from_slice(&bytes).map_err(|e| {
            self.http
                .not_protocol("an embeddings response", &e.to_string(), &bytes)
        })?;
        if parsed.data.len() != expected {
            return Err(self.http.not_protocol(
                "an embeddings response",
                &format!("{} vectors for {expected} inputs", parsed.data.len()),
                &bytes,
            ));
        }
        let mut data = parsed.data;
        // The API returns `index` per item; order by it when every item has one.
        if data.iter().all(|d| d.index.is_some()) {
            data.sort_by_key(|d| d.index);
        }
        Ok(data.into_iter().map(|d| d.embedding).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn providers(text: &str) -> BTreeMap<String, toml::Table> {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn only_openai_compatible_providers_are_accepted() {
        let env = |_: &str| None;
        let ok = Embedder::resolve(
            "local/nomic",
            &providers("[local]\nprotocol = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"),
            &env,
        )
        .unwrap();
        assert_eq!(ok.spec(), "local/nomic");
        let e = Embedder::resolve("anthropic/claude", &BTreeMap::new(), &env).unwrap_err();
        assert!(
            e.to_string().contains("not an OpenAI-compatible provider"),
            "{e}"
        );
        let e = Embedder::resolve("nomic", &BTreeMap::new(), &env).unwrap_err();
        assert!(e.to_string().contains("provider/model"), "{e}");
        let e = Embedder::resolve("mystery/x", &BTreeMap::new(), &env).unwrap_err();
        assert!(e.to_string().contains("[providers.mystery]"), "{e}");
    }
}
