//! The MCP client side: one session's connections to the configured servers.
//!
//! Servers are started when the session starts (only those some agent's grants name), each with a
//! time limit; one that fails to start or hangs costs a warning event and its tools, never the
//! session. A call that finds its server gone restarts it once per session; the call is sent again
//! only when it provably never left (a call in flight when the server died may have had its
//! effect, so it becomes a tool error instead). After that, failures are tool errors the model
//! reads.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceExt};

use super::names;
use crate::agent::Agent;
use crate::config::McpServerSection;
use crate::model::ToolSpec;

/// Default limit for starting a server and listing its tools.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default limit for one tool call.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Restarts a server gets per session.
pub const MAX_RESTARTS: u32 = 1;

type Client = RunningService<RoleClient, ()>;

/// How starting one server went (the `mcp.server` event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServerReport {
    pub server: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// Names of the tools it lists.
    pub tools: Vec<String>,
    /// Why it has no tools this session; `None` when it started.
    pub error: Option<String>,
    pub elapsed_us: u64,
}

/// One MCP tool call (the `mcp.call` event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CallRecord {
    pub server: String,
    pub tool: String,
    pub is_error: bool,
    /// Whether the server was restarted for this call.
    pub restarted: bool,
    pub elapsed_us: u64,
}

/// One configured server, started.
struct Server {
    name: String,
    section: McpServerSection,
    /// Values substituted into the section (`${VAR}`), scrubbed from every error text.
    secrets: Vec<String>,
    root: PathBuf,
    tools: Vec<Tool>,
    client: tokio::sync::Mutex<Option<Client>>,
    restarts: AtomicU32,
}

/// The MCP tools of one session.
#[derive(Default)]
pub struct McpTools {
    servers: Vec<Arc<Server>>,
    /// Servers that were wanted but did not start, with why: a call of one of their tools gets
    /// that reason as its tool error instead of "unknown tool".
    unavailable: BTreeMap<String, String>,
}

/// Why a server could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("set exactly one of `command` (stdio) and `url` (streamable HTTP) in [mcp.{0}]")]
    Shape(String),
    #[error("cannot start `{command}`: {error}")]
    Spawn { command: String, error: String },
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    #[error("listing tools failed: {0}")]
    List(String),
    #[error("no answer within {0} s")]
    Timeout(f64),
    #[error("`{field}` uses ${{{var}}}, which is not set in the environment")]
    MissingEnv { var: String, field: String },
    #[error(
        "it is declared with the legacy SSE transport (`\"type\": \"sse\"`{0}), which \
         switchboard's MCP client does not speak; it speaks stdio (`command`) and streamable \
         HTTP (`url`): declare the server's streamable HTTP endpoint instead"
    )]
    Sse(String),
    #[error("header `{0}` is not a valid HTTP header name or value")]
    Header(String),
}

/// `section` ready to start: placeholders expanded, plus the values substituted.
fn prepare(section: &McpServerSection) -> Result<(McpServerSection, Vec<String>), ConnectError> {
    if section.sse {
        let from = section
            .source
            .as_deref()
            .map_or(String::new(), |f| format!(" in {f}"));
        return Err(ConnectError::Sse(from));
    }
    super::env::resolve(section, &|var| std::env::var(var).ok()).map_err(|m| {
        ConnectError::MissingEnv {
            var: m.var,
            field: m.field,
        }
    })
}

fn secs(value: Option<f64>, default: Duration) -> Duration {
    value
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(default, Duration::from_secs_f64)
}

/// Starts (or restarts) the server `name` and completes the handshake. `s` is already
/// [`prepare`]d; error texts are scrubbed of `secrets`.
async fn connect(
    name: &str,
    s: &McpServerSection,
    secrets: &[String],
    root: &Path,
) -> Result<Client, ConnectError> {
    let scrub = |e: String| super::env::redact(&e, secrets);
    match (&s.command, &s.url) {
        (Some(command), None) => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&s.args).envs(&s.env).current_dir(root);
            let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| ConnectError::Spawn {
                    command: scrub(command.clone()),
                    error: scrub(e.to_string()),
                })?;
            ().serve(transport)
                .await
                .map_err(|e| ConnectError::Handshake(scrub(e.to_string())))
        }
        (None, Some(url)) => {
            use reqwest::header::{HeaderName, HeaderValue};
            crate::model::client::install_crypto_provider();
            let mut headers = std::collections::HashMap::new();
            for (k, v) in &s.headers {
                let name = HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| ConnectError::Header(k.clone()))?;
                let mut value =
                    HeaderValue::from_str(v).map_err(|_| ConnectError::Header(k.clone()))?;
                value.set_sensitive(true);
                headers.insert(name, value);
            }
            let config =
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                )
                .custom_headers(headers);
            let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
            ().serve(transport)
                .await
                .map_err(|e| ConnectError::Handshake(scrub(e.to_string())))
        }
        _ => Err(ConnectError::Shape(name.to_string())),
    }
}

/// Connects and lists the tools, within the server's startup limit.
async fn start_one(
    name: &str,
    s: &McpServerSection,
    secrets: &[String],
    root: &Path,
) -> Result<(Client, Vec<Tool>), ConnectError> {
    let limit = secs(s.startup_timeout_secs, STARTUP_TIMEOUT);
    let work = async {
        let client = connect(name, s, secrets, root).await?;
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| ConnectError::List(super::env::redact(&e.to_string(), secrets)))?;
        Ok((client, tools))
    };
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or(Err(ConnectError::Timeout(limit.as_secs_f64())))
}

impl McpTools {
    /// Starts, concurrently, the configured servers that `wanted` accepts; reports each one.
    pub async fn start(
        config: &BTreeMap<String, McpServerSection>,
        root: &Path,
        wanted: impl Fn(&str) -> bool,
    ) -> (Self, Vec<ServerReport>) {
        let mut set = tokio::task::JoinSet::new();
        let started = config.iter().filter(|(n, s)| s.is_enabled() && wanted(n));
        for (index, (name, declared)) in started.enumerate() {
            let (name, declared, root) = (name.clone(), declared.clone(), root.to_path_buf());
            set.spawn(async move {
                let clock = Instant::now();
                let result = match prepare(&declared) {
                    Ok((section, secrets)) => start_one(&name, &section, &secrets, &root)
                        .await
                        .map(|started| (started, section, secrets)),
                    Err(e) => Err(e),
                };
                (index, name, declared, result, clock.elapsed())
            });
        }
        let mut done = set.join_all().await;
        done.sort_by_key(|d| d.0);
        let mut tools = McpTools::default();
        let mut reports = Vec::new();
        for (_, name, section, result, elapsed) in done {
            let transport = if section.url.is_some() {
                "http"
            } else {
                "stdio"
            };
            let mut report = ServerReport {
                server: name.clone(),
                transport: transport.into(),
                tools: Vec::new(),
                error: None,
                elapsed_us: elapsed.as_micros() as u64,
            };
            match result {
                Ok(((client, listed), section, secrets)) => {
                    report.tools = listed.iter().map(|t| t.name.to_string()).collect();
                    tools.servers.push(Arc::new(Server {
                        name: name.clone(),
                        section,
                        secrets,
                        root: root.to_path_buf(),
                        tools: listed,
                        client: tokio::sync::Mutex::new(Some(client)),
                        restarts: AtomicU32::new(0),
                    }));
                }
                Err(e) => {
                    tools.unavailable.insert(name.clone(), e.to_string());
                    report.error = Some(e.to_string());
                }
            }
            reports.push(report);
        }
        (tools, reports)
    }

    /// Starts the servers any agent of `agents` grants tools of.
    pub async fn start_for(
        config: &BTreeMap<String, McpServerSection>,
        root: &Path,
        agents: &crate::agent::AgentSet,
    ) -> (Self, Vec<ServerReport>) {
        let wanted = |server: &str| {
            agents.iter().any(|a| {
                a.tools
                    .rules
                    .iter()
                    .any(|r| r.allow && names::mentions(&r.pattern, server))
            })
        };
        Self::start(config, root, wanted).await
    }

    /// Names offered to `agent` (granted and not denied by `permission`), in server order.
    pub fn offered(&self, agent: &Agent) -> Vec<String> {
        self.granted(agent)
            .map(|(s, t)| names::offered_name(&s.name, &t.name))
            .collect()
    }

    /// The specs `agent` is offered.
    pub fn specs_for(&self, agent: &Agent) -> Vec<ToolSpec> {
        self.granted(agent)
            .map(|(s, t)| ToolSpec {
                name: names::offered_name(&s.name, &t.name),
                description: t.description.as_deref().unwrap_or("").to_string(),
                parameters: Value::Object((*t.input_schema).clone()),
            })
            .collect()
    }

    fn granted<'a>(&'a self, agent: &'a Agent) -> impl Iterator<Item = (&'a Server, &'a Tool)> {
        self.servers.iter().flat_map(move |s| {
            s.tools
                .iter()
                .filter(move |t| granted(agent, &s.name, &t.name))
                .map(move |t| (s.as_ref(), t))
        })
    }

    /// The (server, tool) a called name means, if it is one of this session's MCP tools or
    /// names a server that did not start (whose [`Self::call`] then says why).
    pub fn resolve(&self, name: &str) -> Option<(String, String)> {
        let down: Vec<String> = self.unavailable.keys().cloned().collect();
        if let Some((server, tool)) = names::split(name, &down) {
            return Some((server, tool.to_string()));
        }
        let servers: Vec<String> = self.servers.iter().map(|s| s.name.clone()).collect();
        let (server, tool) = names::split(name, &servers)?;
        let s = self.servers.iter().find(|s| s.name == server)?;
        s.tools
            .iter()
            .any(|t| t.name == tool)
            .then(|| (server, tool.to_string()))
    }

    /// Calls `tool` of `server` for `agent`: the grant is checked, a dead server is restarted
    /// once per session. `Err` is the text of a tool error for the model.
    pub async fn call(
        &self,
        agent: &Agent,
        server: &str,
        tool: &str,
        args: &Value,
    ) -> (Result<String, CallError>, CallRecord) {
        let clock = Instant::now();
        let mut record = CallRecord {
            server: server.to_string(),
            tool: tool.to_string(),
            is_error: true,
            restarted: false,
            elapsed_us: 0,
        };
        let result = match self.servers.iter().find(|s| s.name == server) {
            None => Err(CallError(match self.unavailable.get(server) {
                Some(why) => format!(
                    "MCP server `{server}` could not be started this session, so its tools are \
                     not available: {why}"
                ),
                None => format!("MCP server `{server}` is not running in this session"),
            })),
            Some(_) if !granted(agent, server, tool) => Err(CallError(format!(
                "tool `{}` is not granted to agent `{}`",
                names::offered_name(server, tool),
                agent.name
            ))),
            Some(s) => s
                .call(tool, args, &mut record.restarted)
                .await
                .map_err(|e| CallError(super::env::redact(&e.0, &s.secrets))),
        };
        record.is_error = result.is_err();
        record.elapsed_us = clock.elapsed().as_micros() as u64;
        (result, record)
    }

    /// Closes every connection (stdio servers are stopped).
    pub async fn shutdown(&self) {
        for s in &self.servers {
            if let Some(client) = s.client.lock().await.take() {
                let _ = client.cancel().await;
            }
        }
    }
}

/// Why an MCP tool call gave no result; its text is the tool error the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallError(pub String);

impl Server {
    async fn call(
        &self,
        tool: &str,
        args: &Value,
        restarted: &mut bool,
    ) -> Result<String, CallError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match args {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            other => {
                return Err(CallError(format!(
                    "arguments must be a JSON object, got {other}"
                )))
            }
        };
        let limit = secs(self.section.call_timeout_secs, CALL_TIMEOUT);
        loop {
            let peer = {
                let guard = self.client.lock().await;
                guard
                    .as_ref()
                    .filter(|c| !c.is_transport_closed())
                    .map(|c| c.peer().clone())
            };
            // `left`: whether the request may have reached the server. Only a request that
            // provably never left is sent again after a restart; one that did may have had its
            // effect, and sending it twice could do it twice.
            let (outcome, left) = match peer {
                Some(peer) => {
                    match tokio::time::timeout(limit, peer.call_tool(params.clone())).await {
                        Ok(Ok(result)) => return render(result),
                        // Only a lost connection is a dead server; an error answer is the tool's.
                        // A failed send never reached the server; a connection closed while
                        // waiting for the answer came after the request was written.
                        Ok(Err(e @ rmcp::ServiceError::TransportSend(_))) => (e.to_string(), false),
                        Ok(Err(e @ rmcp::ServiceError::TransportClosed)) => (e.to_string(), true),
                        Ok(Err(e)) => {
                            return Err(CallError(format!("MCP server `{}`: {e}", self.name)))
                        }
                        Err(_) => {
                            return Err(CallError(format!(
                                "MCP server `{}` did not answer `{tool}` within {} s",
                                self.name,
                                limit.as_secs_f64()
                            )))
                        }
                    }
                }
                None => ("the server is not running".to_string(), false),
            };
            // The call failed at the transport: restart the server once per session.
            if self.restarts.fetch_add(1, Ordering::SeqCst) >= MAX_RESTARTS {
                return Err(CallError(format!(
                    "MCP server `{}` failed: {outcome} (already restarted once this session)",
                    self.name
                )));
            }
            *restarted = true;
            let fresh = tokio::time::timeout(
                secs(self.section.startup_timeout_secs, STARTUP_TIMEOUT),
                connect(&self.name, &self.section, &self.secrets, &self.root),
            )
            .await;
            let mut guard = self.client.lock().await;
            match fresh {
                Ok(Ok(client)) => {
                    *guard = Some(client);
                    if left {
                        return Err(CallError(format!(
                            "MCP server `{}` died during the call of `{tool}` ({outcome}); it \
                             was restarted for later calls, but this call was not sent again: \
                             it may or may not have taken effect. Check before calling it again.",
                            self.name
                        )));
                    }
                }
                Ok(Err(e)) => {
                    *guard = None;
                    return Err(CallError(format!(
                        "MCP server `{}` failed ({outcome}) and could not be restarted: {e}",
                        self.name
                    )));
                }
                Err(_) => {
                    *guard = None;
                    return Err(CallError(format!(
                        "MCP server `{}` failed ({outcome}) and did not restart in time",
                        self.name
                    )));
                }
            }
        }
    }
}

/// Whether `agent` may call `tool` of `server`: its `tools:` name the tool (see
/// [`crate::agent::ToolGrants::allows_mcp`]) and `permission:` does not deny either spelling.
pub fn granted(agent: &Agent, server: &str, tool: &str) -> bool {
    let denied = [
        names::offered_name(server, tool),
        format!("mcp__{server}__{tool}"),
        server.to_string(),
        format!("mcp__{server}"),
    ]
    .iter()
    .any(|n| agent.permission.refuses_tool(n));
    !denied && agent.tools.allows_mcp(server, tool)
}

/// A tool result as text for the model: text blocks joined, other content named; a result the
/// server marks as an error is a tool error.
fn render(result: CallToolResult) -> Result<String, CallError> {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => {
                format!("[image {}, {} base64 bytes]", i.mime_type, i.data.len())
            }
            ContentBlock::Audio(a) => {
                format!("[audio {}, {} base64 bytes]", a.mime_type, a.data.len())
            }
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect();
    if parts.is_empty() {
        if let Some(v) = &result.structured_content {
            parts.push(v.to_string());
        }
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        Err(CallError(text))
    } else {
        Ok(text)
    }
}
