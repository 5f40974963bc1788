//! `webfetch` (and `websearch`): the only tools that leave the machine.
//!
//! Unlike the file tools they are asynchronous, bounded on every axis (time, bytes, redirects)
//! and guarded against server-side request forgery by [`guard`]: an answer or a prompt must not be
//! able to aim the runtime at the cloud metadata service or a database on the loopback interface.
//! One [`Web`] lives for a session: it holds the HTTP client (with the guarded resolver), the
//! session's fetch cache (the same URL twice is fetched once) and the search endpoint, if any.

pub mod convert;
pub mod guard;
pub mod search;

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{opt_str, opt_usize, str_arg, ToolContext, ToolError, ToolOutput};
use crate::agent::{Action, Agent};
use crate::config::{WebfetchSection, WebsearchSection};
use convert::Format;
use guard::{Guard, GuardedResolver, Refused};

/// Defaults when `[webfetch]` says nothing.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_MAX_BYTES: usize = 5 * 1024 * 1024;
pub const DEFAULT_MAX_REDIRECTS: usize = 5;

/// What one fetch did, for the event log: enough to audit where a session went on the web.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct FetchRecord {
    pub url: String,
    /// Where the redirects ended; absent when the fetch never got an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default)]
    pub bytes: usize,
    #[serde(default)]
    pub ms: u64,
    /// The body was longer than the byte cap and was cut.
    #[serde(default)]
    pub cut: bool,
    /// Served from this session's cache, no request made.
    #[serde(default)]
    pub cached: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A response as received: the raw body (up to the cap) and what the server said it is.
#[derive(Debug, Clone)]
struct Fetched {
    /// Every URL requested on the way, the first and the last included: a cached response is
    /// handed to another agent only if that agent's permission admits each of them.
    hops: Vec<reqwest::Url>,
    final_url: String,
    status: u16,
    content_type: String,
    body: Vec<u8>,
    cut: bool,
}

/// A session's web access.
pub struct Web {
    client: reqwest::Client,
    guard: Arc<Guard>,
    max_redirects: usize,
    max_bytes: usize,
    cache: Mutex<HashMap<String, Arc<Fetched>>>,
    search: Option<search::Searxng>,
}

impl std::fmt::Debug for Web {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Web")
            .field("max_bytes", &self.max_bytes)
            .field("search", &self.search.is_some())
            .finish_non_exhaustive()
    }
}

/// The web tools could not be set up (a bad TLS setup, mostly); the session says so and runs
/// without them.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the web tools: {0}")]
pub struct SetupError(pub(crate) String);

impl Web {
    /// Builds the client from `[webfetch]` and `[websearch]`.
    pub fn new(fetch: &WebfetchSection, search: &WebsearchSection) -> Result<Web, SetupError> {
        crate::model::client::install_crypto_provider();
        let guard = Arc::new(Guard::new(&fetch.allow_hosts, fetch.allow_networks.clone()));
        let timeout = fetch
            .timeout_secs
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver {
                guard: guard.clone(),
            }))
            // A proxy would resolve and connect on our behalf, past the guard.
            .no_proxy()
            // Redirects are followed by [`Web::get`], one hop at a time: each hop must pass the
            // address guard *and* the calling agent's `permission.webfetch`, and the client is
            // shared by every agent of the session, so a policy built here could not know whose
            // permission applies.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("switchboard-webfetch/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| SetupError(e.to_string()))?;
        let searcher = search
            .searxng_url
            .as_deref()
            .map(|url| search::Searxng::new(url, search.max_results, timeout))
            .transpose()?;
        Ok(Web {
            client,
            guard,
            max_redirects: fetch.max_redirects.unwrap_or(DEFAULT_MAX_REDIRECTS),
            max_bytes: fetch.max_bytes.unwrap_or(DEFAULT_MAX_BYTES),
            cache: Mutex::new(HashMap::new()),
            search: searcher,
        })
    }

    /// Whether `websearch` has an endpoint; without one it is not offered.
    pub fn has_search(&self) -> bool {
        self.search.is_some()
    }

    /// Runs `webfetch` or `websearch` after the grant check. The record (when a fetch was tried)
    /// goes to the event log whatever the outcome.
    pub async fn invoke(
        &self,
        ctx: ToolContext<'_>,
        tool: &str,
        args: &Value,
    ) -> (Result<ToolOutput, ToolError>, Option<FetchRecord>) {
        if let Err(e) = super::check_grant(ctx.agent, tool) {
            return (Err(e), None);
        }
        match tool {
            "webfetch" => self.fetch_tool(ctx, args).await,
            "websearch" => match &self.search {
                Some(s) => (s.run(args).await, None),
                None => (Err(search::not_configured()), None),
            },
            other => (Err(ToolError::Unknown(other.to_string())), None),
        }
    }

    async fn fetch_tool(
        &self,
        ctx: ToolContext<'_>,
        args: &Value,
    ) -> (Result<ToolOutput, ToolError>, Option<FetchRecord>) {
        let parsed = (|| {
            let url = str_arg("webfetch", args, "url")?;
            let format = Format::parse(opt_str(args, "format"))?;
            let cap = opt_usize("webfetch", args, "max_bytes")?
                .map_or(self.max_bytes, |n| n.min(self.max_bytes));
            Ok::<_, ToolError>((url.trim().to_string(), format, cap))
        })();
        let (url, format, cap) = match parsed {
            Ok(p) => p,
            Err(e) => return (Err(e), None),
        };
        let refuse = |reason: String| ToolError::Refused {
            tool: "webfetch".into(),
            path: url.clone(),
            reason,
        };
        let parsed_url = match reqwest::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            Ok(u) => {
                let reason = format!(
                    "only http and https URLs are fetched, not `{}:`",
                    u.scheme()
                );
                return (Err(refuse(reason)), None);
            }
            Err(e) => return (Err(refuse(format!("not a URL: {e}"))), None),
        };
        if let Err(reason) = permitted(ctx.agent, &parsed_url) {
            return (Err(refuse(reason)), None);
        }
        let mut record = FetchRecord {
            url: url.clone(),
            final_url: None,
            status: None,
            bytes: 0,
            ms: 0,
            cut: false,
            cached: false,
            error: None,
        };
        let started = Instant::now();
        let cached = self.cache_get(parsed_url.as_str(), cap);
        let fetched = match cached {
            // Another agent may have fetched it through redirects this one may not follow.
            Some(f) => match f.hops.iter().find_map(|hop| {
                permitted(ctx.agent, hop)
                    .err()
                    .map(|reason| redirect_refused(&parsed_url, hop, &reason))
            }) {
                Some(e) => Err(e),
                None => {
                    record.cached = true;
                    Ok(f)
                }
            },
            None => self.get(ctx.agent, &parsed_url, cap).await.map(|f| {
                let f = Arc::new(f);
                self.cache_put(parsed_url.as_str(), f.clone());
                f
            }),
        };
        record.ms = started.elapsed().as_millis() as u64;
        let fetched = match fetched {
            Ok(f) => f,
            Err(e) => {
                record.error = Some(e.to_string());
                return (Err(e), Some(record));
            }
        };
        record.final_url = Some(fetched.final_url.clone());
        record.status = Some(fetched.status);
        record.bytes = fetched.body.len();
        record.cut = fetched.cut;
        let result = render(&url, &fetched, format);
        if let Err(e) = &result {
            record.error = Some(e.to_string());
        }
        (result, Some(record))
    }

    /// A cached response for `url`, unless it was cut shorter than this call may read.
    fn cache_get(&self, url: &str, cap: usize) -> Option<Arc<Fetched>> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .get(url)
            .filter(|f| !f.cut || f.body.len() >= cap)
            .cloned()
    }

    fn cache_put(&self, url: &str, fetched: Arc<Fetched>) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.insert(url.to_string(), fetched);
    }

    /// One GET with the guard, the timeout and the byte cap, following at most `max_redirects`
    /// redirects; every hop is checked against the address guard and `agent`'s
    /// `permission.webfetch` before it is requested, so a refused page is never fetched.
    async fn get(
        &self,
        agent: &Agent,
        url: &reqwest::Url,
        cap: usize,
    ) -> Result<Fetched, ToolError> {
        let failed = |message: String| ToolError::Failed {
            tool: "webfetch".into(),
            message,
        };
        let refused = |r: &Refused| ToolError::Refused {
            tool: "webfetch".into(),
            path: url.to_string(),
            reason: r.to_string(),
        };
        let mut hops = vec![url.clone()];
        let mut response = loop {
            let current = hops.last().cloned().unwrap_or_else(|| url.clone());
            self.guard.check_url(&current).map_err(|r| refused(&r))?;
            let response = self
                .client
                .get(current.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.1",
                )
                .send()
                .await
                .map_err(|e| match find_refusal(&e) {
                    Some(r) => refused(r),
                    None => failed(describe(&e)),
                })?;
            let Some(to) = redirect_target(&response) else {
                break response;
            };
            let next = current.join(to).map_err(|e| {
                failed(format!(
                    "`{current}` redirects to `{to}`, which is not a URL ({e})"
                ))
            })?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(failed(format!(
                    "`{current}` redirects to `{next}`, a `{}:` URL, which webfetch does not \
                     follow (only http and https)",
                    next.scheme()
                )));
            }
            if hops.len() > self.max_redirects {
                return Err(failed(format!(
                    "`{url}` took more than {} redirects (the [webfetch] max_redirects limit)",
                    self.max_redirects
                )));
            }
            if let Err(reason) = permitted(agent, &next) {
                return Err(redirect_refused(url, &next, &reason));
            }
            hops.push(next);
        };
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        // Refuse binaries before reading them: a 50 MB PDF is not downloaded to be rejected.
        if !content_type.is_empty() {
            convert::Kind::of(&content_type).map_err(|e| failed(e.0))?;
        }
        let status = response.status().as_u16();
        let final_url = response.url().to_string();
        let mut body = Vec::new();
        let mut cut = false;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = cap.saturating_sub(body.len());
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        cut = true;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(failed(format!("reading the body: {}", describe(&e)))),
            }
        }
        Ok(Fetched {
            hops,
            final_url,
            status,
            content_type,
            body,
            cut,
        })
    }
}

/// Where a redirect response points, if it is one webfetch follows (301, 302, 303, 307, 308 with
/// a readable `Location`); any other answer, a 304 included, is the final one.
fn redirect_target(response: &reqwest::Response) -> Option<&str> {
    use reqwest::StatusCode as S;
    let status = response.status();
    if !matches!(
        status,
        S::MOVED_PERMANENTLY
            | S::FOUND
            | S::SEE_OTHER
            | S::TEMPORARY_REDIRECT
            | S::PERMANENT_REDIRECT
    ) {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
}

/// `agent`'s `permission.webfetch` verdict on `url`: `Err` holds the reason, naming the rule.
fn permitted(agent: &Agent, url: &reqwest::Url) -> Result<(), String> {
    let (verdict, rule) = agent.permission.decide("webfetch", url.as_str());
    if verdict == Action::Allow {
        return Ok(());
    }
    let rule = match rule {
        Some(pattern) => format!("rule `\"{pattern}\": {}`", action_word(verdict)),
        None => format!("rule `webfetch: {}`", action_word(verdict)),
    };
    Err(format!(
        "`{}`'s permission.webfetch {} `{url}` ({rule}); fetch a URL the agent's permission \
         allows, or add an allow pattern for this one to its permission.webfetch",
        agent.name,
        if verdict == Action::Ask {
            "requires approval (ask), which an unattended run cannot give, for"
        } else {
            "denies"
        }
    ))
}

fn action_word(action: Action) -> &'static str {
    match action {
        Action::Allow => "allow",
        Action::Ask => "ask",
        Action::Deny => "deny",
    }
}

/// A redirect (live or in a cached chain) to a URL the agent may not fetch: the page it points
/// to is not requested and not returned.
fn redirect_refused(url: &reqwest::Url, to: &reqwest::Url, reason: &str) -> ToolError {
    ToolError::Refused {
        tool: "webfetch".into(),
        path: url.to_string(),
        reason: format!("it redirects to `{to}`, which is not followed: {reason}"),
    }
}

/// The tool's text: a short header the model can cite, then the converted body.
fn render(url: &str, fetched: &Fetched, format: Format) -> Result<ToolOutput, ToolError> {
    let failed = |message: String| ToolError::Failed {
        tool: "webfetch".into(),
        message,
    };
    let kind =
        convert::Kind::sniff(&fetched.content_type, &fetched.body).map_err(|e| failed(e.0))?;
    let text = convert::convert(kind, format, &fetched.body);
    if fetched.status >= 400 {
        return Err(failed(format!(
            "`{url}` answered HTTP {}: {}",
            fetched.status,
            crate::model::client::snippet(&text)
        )));
    }
    let mut out = format!("URL: {}\n", fetched.final_url);
    if fetched.final_url != url {
        out.push_str(&format!("Requested: {url}\n"));
    }
    out.push_str(&format!(
        "Status: {}\nContent-Type: {}\n",
        fetched.status,
        if fetched.content_type.is_empty() {
            "(none given)"
        } else {
            &fetched.content_type
        }
    ));
    if fetched.cut {
        out.push_str(&format!(
            "Note: the body was cut at {} bytes (max_bytes); what follows is its beginning.\n",
            fetched.body.len()
        ));
    }
    out.push('\n');
    out.push_str(&text);
    Ok(ToolOutput::text(out))
}

/// The guard's refusal, if that is what stopped the request (it sits deep in reqwest's chain).
fn find_refusal(e: &reqwest::Error) -> Option<&Refused> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(r) = err.downcast_ref::<Refused>() {
            return Some(r);
        }
        source = err.source();
    }
    None
}

/// A reqwest error with its causes, which is where the useful words are.
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out (the [webfetch] timeout_secs limit)".into();
    }
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        let s = err.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        source = err.source();
    }
    out
}

/// The JSON schema the model sees for `webfetch`.
pub fn spec_parameters() -> Value {
    json!({"type": "object", "properties": {
        "url": {"type": "string", "description": "an http or https URL"},
        "format": {"type": "string", "enum": ["markdown", "text", "raw"],
            "description": "how HTML comes back: markdown (default), plain text, or the raw HTML"},
        "max_bytes": {"type": "integer", "minimum": 1,
            "description": "read at most this many bytes of the body (capped by the configuration)"}},
        "required": ["url"]})
}
