//! The MCP server side: `switchboard mcp` serves agents as MCP tools.
//!
//! A module of its own, beside `mcp` (the client side, which the runtime uses): serving runs
//! sessions, so it sits above `runtime`, while `mcp` sits below it.
//!
//! Each tool is one agent; a call runs it as the root hop of a new session (subagents too, see
//! [`Session::for_agent`]) on its configured model, with its contract enforced by the runtime's
//! gate, and answers with the agent's answer plus the session id and conformance status, so the
//! calling tool can `switchboard trace` the session.

use serde_json::{json, Map, Value};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;

use crate::agent::AgentSet;
use crate::config::Config;
use crate::model::Registry;
use crate::project::Project;
use crate::runtime::{RunOptions, Session, SessionStatus};

pub mod input;

/// The agents one `switchboard mcp` process serves.
pub struct AgentServer {
    project: Project,
    agents: Arc<AgentSet>,
    config: Config,
    models: Arc<Registry>,
    options: RunOptions,
    /// Agent names served, in order.
    served: Vec<String>,
}

/// A name `--agent` asked for that the project does not define: the name, and why (see
/// [`AgentSet::why_missing`]).
#[derive(Debug, thiserror::Error)]
#[error("{1}")]
pub struct UnknownAgent(pub String, pub String);

/// The MCP tool name of an agent: MCP names allow letters, digits, `_`, `-` and `.`, so the `/`
/// of nested agents (`team/lead`) becomes `.`.
pub fn tool_name(agent: &str) -> String {
    agent
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '.'
            }
        })
        .collect()
}

impl AgentServer {
    /// Serves `only` (every agent when empty).
    pub fn new(
        project: Project,
        agents: Arc<AgentSet>,
        config: Config,
        models: Arc<Registry>,
        options: RunOptions,
        only: &[String],
    ) -> Result<Self, UnknownAgent> {
        let served = if only.is_empty() {
            agents.iter().map(|a| a.name.clone()).collect()
        } else {
            for name in only {
                if agents.get(name).is_none() {
                    return Err(UnknownAgent(name.clone(), agents.why_missing(name)));
                }
            }
            only.to_vec()
        };
        Ok(AgentServer {
            project,
            agents,
            config,
            models,
            options,
            served,
        })
    }

    /// The tools this server lists.
    pub fn tools(&self) -> Vec<Tool> {
        let schema = json!({
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "the task for the agent"}},
            "required": ["prompt"]
        });
        let Value::Object(schema) = schema else {
            return Vec::new();
        };
        let schema = Arc::new(schema);
        self.served
            .iter()
            .filter_map(|name| self.agents.get(name))
            .map(|a| {
                let mut description = a.description.clone();
                if let Some(c) = &a.contract {
                    description.push_str(&format!(
                        " (answers are checked against the `{}` contract)",
                        c.name
                    ));
                }
                Tool::new(tool_name(&a.name), description, schema.clone())
            })
            .collect()
    }

    /// Runs the agent behind tool `tool` on `prompt`; the result's structured content carries
    /// `session_id`, `status`, `conformant`, `error` and `answer`.
    pub async fn run_tool(&self, tool: &str, prompt: &str) -> Result<CallToolResult, McpError> {
        let Some(agent) = self.served.iter().find(|a| tool_name(a) == tool) else {
            return Err(McpError::invalid_params(
                format!("unknown tool `{tool}`"),
                None,
            ));
        };
        let has_contract = self.agents.get(agent).is_some_and(|a| a.contract.is_some());
        let session = Session::for_agent(
            self.project.clone(),
            self.agents.clone(),
            self.config.clone(),
            self.models.clone(),
            self.options.clone(),
            agent,
            prompt,
        )
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let outcome = session.run().await;
        let conformant = match outcome.status {
            SessionStatus::NonConformant => Some(false),
            SessionStatus::Completed if has_contract => Some(true),
            _ => None,
        };
        let summary = json!({
            "session_id": outcome.session_id,
            "correlation_id": outcome.correlation_id,
            "agent": agent,
            "status": outcome.status.as_str(),
            "conformant": conformant,
            "error": outcome.error,
            "answer": outcome.answer,
        });
        let header = format!(
            "session {} · {} · {}",
            outcome.session_id,
            outcome.status.as_str(),
            match conformant {
                Some(true) => "conformant",
                Some(false) => "non-conformant",
                None => "no contract checked",
            }
        );
        let mut text = format!("{header}\n\n{}", outcome.answer);
        if let Some(e) = &outcome.error {
            text.push_str(&format!("\n\nerror: {e}"));
        }
        let mut result = if matches!(
            outcome.status,
            SessionStatus::Failed | SessionStatus::Interrupted | SessionStatus::Blocked
        ) {
            CallToolResult::error(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(summary);
        Ok(result)
    }
}

impl rmcp::ServerHandler for AgentServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::from_build_env();
        info.name = "switchboard".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(
                "Each tool runs one switchboard agent on `prompt`; the answer says the session id \
                 and whether it conformed to the agent's contract.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args: Map<String, Value> = request.arguments.unwrap_or_default();
        let Some(prompt) = args.get("prompt").and_then(Value::as_str) else {
            return Err(McpError::invalid_params(
                "missing string argument `prompt`",
                None,
            ));
        };
        self.run_tool(&request.name, prompt).await.map(Into::into)
    }
}

/// The MCP connection on stdin/stdout failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("could not start serving on stdio: {0}")]
    Start(String),
    #[error("the connection ended with an error: {0}")]
    Ended(String),
}

/// Serves `server` on stdin/stdout until the client closes the stream. Every line from the
/// client is judged first ([`input`]): bad lines are answered here with a JSON-RPC error, good
/// ones go on to the MCP service; one task writes stdout, so replies never interleave.
pub async fn serve_stdio(server: AgentServer) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let (ours, service_io) = tokio::io::duplex(1 << 20);
    let (service_read, service_write) = tokio::io::split(service_io);
    let (from_service, mut into_service) = tokio::io::split(ours);
    let (out_tx, mut out_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            stdout.write_all(&line).await?;
            stdout.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let service_tx = out_tx.clone();
    let pump_out = tokio::spawn(async move {
        let mut reader = BufReader::new(from_service);
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line).await? == 0 {
                break;
            }
            if service_tx.send(line).await.is_err() {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    });
    let pump_in = tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
        while let Some(line) = input::next_line(&mut stdin).await? {
            match line {
                input::Line::Pass(mut bytes) => {
                    bytes.push(b'\n');
                    into_service.write_all(&bytes).await?;
                }
                input::Line::Reply(Some(text)) => {
                    let mut bytes = text.into_bytes();
                    bytes.push(b'\n');
                    if out_tx.send(bytes).await.is_err() {
                        break;
                    }
                }
                input::Line::Reply(None) => {}
            }
        }
        into_service.shutdown().await?;
        Ok::<_, std::io::Error>(())
    });
    let running = server
        .serve((service_read, service_write))
        .await
        .map_err(|e| ServeError::Start(e.to_string()))?;
    let ended = running
        .waiting()
        .await
        .map_err(|e| ServeError::Ended(e.to_string()));
    pump_in.abort();
    // What the service wrote last still reaches the client (bounded: exiting never hangs).
    let grace = std::time::Duration::from_secs(2);
    let _ = tokio::time::timeout(grace, pump_out).await;
    let _ = tokio::time::timeout(grace, writer).await;
    ended?;
    Ok(())
}
