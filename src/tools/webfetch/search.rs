//! `websearch` through a SearXNG instance's JSON API (`GET /search?q=…&format=json`).
//!
//! SearXNG is the common self-hosted meta search engine, and its JSON output needs no key. The
//! endpoint is the operator's own configuration (`[websearch] searxng_url`), usually on a private
//! network, so it is trusted as configured and not put through the fetch guard; the result URLs it
//! returns are only text until an agent fetches them with `webfetch`, which is guarded.

use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::time::Duration;

use super::super::{opt_usize, str_arg, ToolError, ToolOutput};

/// Results returned when neither the call nor the config says.
pub const DEFAULT_RESULTS: usize = 8;

pub struct Searxng {
    base: reqwest::Url,
    max_results: usize,
    client: reqwest::Client,
}

#[derive(Debug, Deserialize)]
struct Response {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Debug, Deserialize)]
struct Hit {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
}

/// The error a call gets when no endpoint is configured (the tool is not offered then, but a
/// model may still name it).
pub fn not_configured() -> ToolError {
    ToolError::Failed {
        tool: "websearch".into(),
        message: "no search provider is configured; set [websearch] searxng_url in \
                  switchboard.toml (see docs/webfetch.md)"
            .into(),
    }
}

impl Searxng {
    pub fn new(
        url: &str,
        max_results: Option<usize>,
        timeout: Duration,
    ) -> Result<Self, super::SetupError> {
        let base = reqwest::Url::parse(url).map_err(|e| {
            super::SetupError(format!("[websearch] searxng_url `{url}` is not a URL: {e}"))
        })?;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .no_proxy()
            .build()
            .map_err(|e| super::SetupError(e.to_string()))?;
        Ok(Searxng {
            base,
            max_results: max_results.unwrap_or(DEFAULT_RESULTS).max(1),
            client,
        })
    }

    pub async fn run(&self, args: &Value) -> Result<ToolOutput, ToolError> {
        let failed = |message: String| ToolError::Failed {
            tool: "websearch".into(),
            message,
        };
        let query = str_arg("websearch", args, "query")?.trim();
        if query.is_empty() {
            return Err(ToolError::BadArguments {
                tool: "websearch".into(),
                message: "`query` is empty".into(),
            });
        }
        let limit = opt_usize("websearch", args, "max_results")?
            .unwrap_or(self.max_results)
            .min(self.max_results.max(1) * 2);
        let mut url = self
            .base
            .join("search")
            .map_err(|e| failed(e.to_string()))?;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        let response = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| failed(format!("the search endpoint did not answer: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(failed(format!(
                "the search endpoint answered HTTP {status}; is its JSON format enabled \
                 (search.formats in SearXNG's settings.yml)?"
            )));
        }
        let body: Response = response
            .json()
            .await
            .map_err(|e| failed(format!("the search endpoint sent no JSON results: {e}")))?;
        let mut out = String::new();
        for (i, hit) in body.results.iter().take(limit).enumerate() {
            let _ = writeln!(out, "{}. {}\n   {}", i + 1, hit.title.trim(), hit.url);
            let content = hit.content.trim();
            if !content.is_empty() {
                let _ = writeln!(out, "   {content}");
            }
        }
        if out.is_empty() {
            out = format!("no results for `{query}`");
        }
        Ok(ToolOutput::text(out))
    }
}

/// The JSON schema the model sees for `websearch`.
pub fn spec_parameters() -> Value {
    serde_json::json!({"type": "object", "properties": {
        "query": {"type": "string", "description": "what to search for"},
        "max_results": {"type": "integer", "minimum": 1}},
        "required": ["query"]})
}
